"""A transformers config restored in a pickle, judged as its config.json would be.

A config restored from state (cls.__new__, then BUILD fills its dict) is allowlisted, so what that dict holds is what
the library acts on: `auto_map` and `custom_pipelines` name code `trust_remote_code` imports (a hub form downloads
it), an attention implementation of the form `org/name` makes transformers 4.56 to 5.2 download and import a hub
kernel (review 32 had `AutoModel.from_config` reach it from a pickled BertConfig), a quantization `format` of the form
`module:name` is imported, a `backbone` is loaded as a model. The state is read into plain values and given to the
same checks as config.json (`repo_files`, `loader_keys`). A pickled config keeps the loading program's own choice in
`_attn_implementation_internal` (`sdpa`, which to_dict leaves out of config.json): it is judged as the public key it
stands for. A value the machine cannot read, under a key the library acts on, is a finding of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wscan.model import Observation
from wscan.scanners.base import Artifact
from wscan.scanners.loader_keys import INTERNAL_KERNEL_KEYS, KERNEL_KEYS, loader_keys
from wscan.scanners.pickle_vm import (
    Const,
    Dict,
    Global,
    Obj,
    PickleResult,
    Seq,
    Sym,
    is_config_class,
    restored_class,
)
from wscan.scanners.repo_files import custom_code

CONFIG_ROLE = "config"
MAX_DEPTH = 8
MAX_VALUES = 10_000  # per config state; past it the rest reads as unread
# Keys whose value the library imports, downloads or loads from: an unread value there may be any of those.
ACTED_ON = KERNEL_KEYS | {"auto_map", "custom_pipelines", "quantization_config", "backbone", "trust_remote_code"}


class _Unread:
    """Stands for a value the machine cannot read."""

    def __repr__(self) -> str:
        return "<unread>"


UNREAD = _Unread()


def config_observations(artifact: Artifact, res: PickleResult) -> Iterator[Observation]:
    """What each state a BUILD gave a transformers config holds, as config.json's checks find it, at the BUILD."""
    for at, restored, state in res.config_states:
        budget = [MAX_VALUES]
        top: dict[str, Any] = {}
        for key, value in state.items:
            if isinstance(key, Const) and isinstance(key.value, str):
                name = key.value.removesuffix("_internal") if key.value in INTERNAL_KERNEL_KEYS else key.value
                top[name] = _plain(value, 0, budget)
        for field in sorted(key for key in top if key in ACTED_ON and _holds_unread(top[key])):
            yield artifact.observe("pickle.config_unread", at, callable=restored, field=field)
        for obs in (*custom_code(artifact, top, CONFIG_ROLE, b""), *loader_keys(artifact, top, CONFIG_ROLE)):
            if isinstance(obs, Observation):
                yield Observation(obs.kind, artifact.location.at(at), {**obs.attrs, "callable": restored})


def _plain(value: Sym, depth: int, budget: list[int]) -> Any:
    """`value` as plain Python values, as far as the machine reads it: a name is its dotted text, a nested config is
    its state, anything else unread."""
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        return UNREAD
    if isinstance(value, Const):
        return value.value if isinstance(value.value, str | int | float | bool) or value.value is None else UNREAD
    if isinstance(value, Global):
        return value.dotted  # a dtype (torch.float32), a class: a name, nothing the config checks import
    if isinstance(value, Seq):
        items = [_plain(item, depth + 1, budget) for item in value.items]
        return [*items, UNREAD] if value.dropped else items
    if isinstance(value, Dict):
        plain: dict[Any, Any] = {"<unread>": UNREAD} if value.dropped else {}
        for key, item in value.items:
            if isinstance(key, Const) and isinstance(key.value, str | int | float):
                plain[key.value] = _plain(item, depth + 1, budget)
            else:  # a key the machine cannot read may be any key: its value is unread wherever it goes
                plain["<unread>"] = UNREAD
        return plain
    if isinstance(value, Obj) and isinstance(value.state, Dict) and is_config_class(restored_class(value)):
        return _plain(value.state, depth + 1, budget)  # a sub-config (CLIP's text_config), restored from state
    return UNREAD


def _holds_unread(value: Any) -> bool:
    if value is UNREAD:
        return True
    if isinstance(value, dict):
        return any(_holds_unread(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_unread(item) for item in value)
    return False
