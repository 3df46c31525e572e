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
from wscan.scanners.loader_keys import INTERNAL_KERNEL_KEYS, LABEL_MAPS, join_field, json_items, loader_keys
from wscan.scanners.pickle_values import (
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
MAX_VALUES = 200_000  # values read per file, whatever the number of configs; past it the rest reads as unread
MAX_FIELDS_LISTED = 5  # unread places named in a config's one WS-PKL-042 finding; the rest are counted
# Configs whose __getattribute__ returns what their text_config's dict holds for any name but four: the parent's
# `auto_map` or attention implementation is the part's, whatever object the file made the part (review 34 gave it an
# argparse.Namespace holding a hub kernel).
FORWARDING_CONFIGS = frozenset({
    "transformers.models.qwen2_vl.configuration_qwen2_vl.Qwen2VLConfig",
    "transformers.models.qwen2_5_vl.configuration_qwen2_5_vl.Qwen2_5_VLConfig",
})  # fmt: skip
FORWARDED_FROM = "text_config"
# A quantization config (GPTQConfig, ...) pickled on its own is what a model config's quantization_config holds once a
# quantizer set it: judged as that key's value (a `format` naming a module, WS-REPO-028).
QUANTIZATION_MODULE = "transformers.utils.quantization_config."
QUANTIZATION_KEY = "quantization_config"
NOT_FORWARDED = frozenset({"_name_or_path", "model_type", "dtype", "_attn_implementation_internal"})


UNREAD_KEY = "<unread>"  # a key the machine cannot read: it may be any key
DROPPED_KEY = "<items past what is kept>"  # a dict's items past MAX_ITEMS (a 21,843-label id2label has them)


class _Unread:
    """Stands for a value the machine cannot read."""

    def __repr__(self) -> str:
        return "<unread>"


UNREAD = _Unread()


def config_observations(artifact: Artifact, res: PickleResult) -> Iterator[Observation]:
    """What each state a BUILD gave a transformers config holds, as config.json's checks find it, at the BUILD; each
    distinct observation once (review 33 gave 1,000 configs one shared dict). A pickle has no folder of its own: the
    code a local auto_map names is fetched from the config's `_name_or_path`, which the file chooses (review 33), so
    every reference counts as from another repository."""
    reader = _Reader()
    seen: set[tuple[str, tuple[tuple[str, object], ...]]] = set()
    if res.config_states_more:
        yield artifact.observe("pickle.config_unread", callable="<more configs>",
                               field=f"{res.config_states_more} config states past the {len(res.config_states)} read")
    walked = 0
    for at, restored, state in res.config_states:
        views = reader.views(state, restored)
        if restored.startswith(QUANTIZATION_MODULE):
            views = [{QUANTIZATION_KEY: view} for view in views]
        walked += sum(reader.size(view) for view in views)
        if walked > MAX_VALUES or reader.budget < 0:  # the checks walk every config's values, shared ones each time,
            # and the reader reads at most MAX_VALUES (a dict setting one key 60 times counts each): bounded per file
            yield artifact.observe("pickle.config_unread", at, callable=restored,
                                   field=f"values past the first {MAX_VALUES:,}")  # fmt: skip
            return
        found: list[Observation] = []
        unread = list(dict.fromkeys(field for top in views for field in _unread_fields(top)))
        if unread:
            found.append(artifact.observe("pickle.config_unread", at, callable=restored, field=_summary(unread)))
        for top in views:
            for obs in (*custom_code(artifact, top, CONFIG_ROLE, b""), *loader_keys(artifact, top, CONFIG_ROLE)):
                if isinstance(obs, Observation):
                    extra = {"remote": True} if obs.kind == "repo.custom_code" else {}
                    attrs = {**obs.attrs, **extra, "callable": restored}
                    found.append(Observation(obs.kind, artifact.location.at(at), attrs))
        for obs in found:
            key = (obs.kind, tuple(sorted(obs.attrs.items())))
            if key not in seen:
                seen.add(key)
                yield obs


class _Reader:
    """Config states as plain Python values, as far as the machine reads them: a name is its dotted text, a nested
    config is its state, a transformers enum its value, anything else unread. Each container is read once per file,
    within one budget of values for the file."""

    def __init__(self) -> None:
        self.budget = MAX_VALUES
        self.read: dict[int, tuple[int, Any]] = {}  # a container's reading and the depth it was read at, by id
        self.sizes: dict[int, tuple[Any, int]] = {}

    def size(self, plain: Any) -> int:
        """How many values the config checks walk in `plain` (a shared container counts each time it is reached)."""
        if not isinstance(plain, dict | list):
            return 1
        if id(plain) not in self.sizes:  # kept alive with its size: a view made for one config is dropped after it
            items = plain.values() if isinstance(plain, dict) else plain
            self.sizes[id(plain)] = (plain, 1 + sum(self.size(item) for item in items))
        return self.sizes[id(plain)][1]

    def views(self, state: Dict, restored: str) -> list[dict[str, Any]]:
        """What a config answers for its names, each way the library may read them: through the attention property
        (`config`), and as the state stores them (a class without that property, GenerationConfig or a quantization
        config, returns a decoy `_attn_implementation` as it is: review 35). A forwarding config answers a name its
        text_config's dict holds with the part's value, each way too; a part that is no config the reader reads, or
        one that forwards again, may hold any name (`text_config` unread, WS-PKL-042)."""
        own = self.config(state, 0, restored)
        stored = self.value(state, 0)
        if not isinstance(stored, dict):
            return [own]
        views = [own, {key: value for key, value in stored.items() if key not in INTERNAL_KERNEL_KEYS}]
        if restored not in FORWARDING_CONFIGS or (FORWARDED_FROM not in stored and not _cut(stored)):
            return views
        part = state.get(FORWARDED_FROM) if not _cut(stored) else None
        part_state = part.state if isinstance(part, Obj) and isinstance(part.state, Dict) else None
        part_class = restored_class(part) if isinstance(part, Obj) else ""
        part_stored = self.value(part_state, 1) if part_state is not None else None
        if (part_state is None or not is_config_class(part_class) or part_class in FORWARDING_CONFIGS
                or not isinstance(part_stored, dict) or _cut(part_stored)):  # fmt: skip
            own[FORWARDED_FROM] = UNREAD  # unread: it may answer for any name (WS-PKL-042)
            return views
        forwarded = [key for key in part_stored if key not in NOT_FORWARDED]
        through_property = self.config(part_state, 1, part_class)
        views.append({key: part_stored[key] for key in forwarded})
        views.append({key: through_property[key] for key in forwarded if key in through_property})
        return views

    def config(self, state: Dict, depth: int, restored: str) -> dict[str, Any]:
        """A config's dict: the attention implementation the loading program chose, kept in `*_internal` keys, is
        judged as the public key it stands for, whatever else the state puts under that name (the property returns the
        internal one: review 33 hid a hub kernel behind a decoy `_attn_implementation`)."""
        plain = self.value(state, depth)
        if not isinstance(plain, dict):
            return {UNREAD_KEY: UNREAD}  # past the budget or the depth
        top = {key: value for key, value in plain.items() if key not in INTERNAL_KERNEL_KEYS}
        for key in INTERNAL_KERNEL_KEYS & plain.keys():
            top[key.removesuffix("_internal")] = plain[key]
        return top

    def value(self, value: Sym, depth: int) -> Any:
        self.budget -= 1
        if self.budget < 0 or depth > MAX_DEPTH:
            return UNREAD
        if isinstance(value, Const):
            return value.value if isinstance(value.value, str | int | float | bool) or value.value is None else UNREAD
        if isinstance(value, Global):
            return value.dotted  # a dtype (torch.float32), a class: a name, nothing the config checks import
        if isinstance(value, Seq | Dict):
            # read once, unless reached nearer the top than before: a reading cut short by the depth is not reused
            # where the loader reads deeper (review 36 shared a dict at depth 8 and at depth 1)
            cached = self.read.get(id(value))
            if cached is None or cached[0] > depth:
                cached = self.read[id(value)] = (depth, self._container(value, depth))
            return cached[1]
        if isinstance(value, Obj) and isinstance(value.state, Dict) and is_config_class(restored_class(value)):
            # a sub-config (CLIP's text_config), restored from state; judged both ways as a config state of its own
            return self.config(value.state, depth + 1, restored_class(value))
        if (isinstance(value, Obj) and value.state is None and isinstance(value.func, Global)
                and value.func.module.startswith("transformers.") and isinstance(value.args, Seq)
                and len(value.args.items) == 1 and isinstance(value.args.items[0], Const)):  # fmt: skip
            return self.value(value.args.items[0], depth + 1)  # QuantizationMethod("gptq"): an enum is its value
        return UNREAD

    def _container(self, value: Seq | Dict, depth: int) -> Any:
        if isinstance(value, Seq):
            items = [self.value(item, depth + 1) for item in value.items]
            return [*items, UNREAD] if value.dropped else items
        plain: dict[Any, Any] = {DROPPED_KEY: UNREAD} if value.dropped else {}
        for key, item in value.items:
            if isinstance(key, Const) and isinstance(key.value, str | int | float):
                plain[key.value] = self.value(item, depth + 1)
            else:  # a key the machine cannot read may be any key: its value is unread wherever it goes
                plain[UNREAD_KEY] = UNREAD
        return plain


def _unread_fields(top: dict[str, Any]) -> list[str]:
    """Where a config holds what the machine cannot read, at any depth. A value (an OrderedDict, a dict() call) may
    be a part under whatever name its class converts (RagConfig's question_encoder, Musicgen's text_encoder: review
    38), and a sub-config kept as a dict becomes a config, with that `attn_implementation`, once the config is
    rebuilt from its dict (review 36); a computed key may be any key (review 37); a dict's items past what the
    machine keeps may hold any key, but in a label map (an ImageNet-22k head has 21,843 labels)."""
    fields: list[str] = []
    for item in json_items(top, MAX_VALUES):
        if item is None:
            return [*fields, "<values past the reading>"]
        path, holder, key, value, _ = item
        if key == DROPPED_KEY:
            if holder not in LABEL_MAPS:
                fields.append(join_field(path, key))
        elif key == UNREAD_KEY or value is UNREAD:
            fields.append(join_field(path, key))
    return fields


def _summary(fields: list[str]) -> str:
    """The first few places a config is unread, and how many more: one finding per config, not one per value (a
    config of a hundred OrderedDicts is one thing to fix)."""
    shown = ", ".join(fields[:MAX_FIELDS_LISTED])
    more = len(fields) - MAX_FIELDS_LISTED
    return f"{shown} and {more:,} more" if more > 0 else shown


def _cut(plain: dict[Any, Any]) -> bool:
    """Whether a dict's reading may lack keys: one the machine cannot read, or items past what it keeps."""
    return UNREAD_KEY in plain or DROPPED_KEY in plain
