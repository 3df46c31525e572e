"""Keys of a model repository's JSON files that loaders open as paths, write to, or import by name.

transformers and sentence-transformers take some configuration values as paths and open them (a tokenizer's
`vocab_file` or `tokenizer_file`, a sentence-transformers module's `path`, a `backbone`, an audio tokenizer's
`audio_tokenizer_name_or_path`), pass others to accelerate as folders to write to (`offload_folder`), and import
some by dotted name and call them, with no opt-in (a Dense module's `activation_function`, a CrossEncoder's
`activation_fn`, a Router's `types`). A review read files anywhere on the machine, wrote offload files to any
folder, and ran the shell commands of torch.utils.collect_env.main through them. Paths that leave the model
folder, folders to write to and names to import become observations; the rules judge them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wscan.model import Observation
from wscan.scanners.base import Artifact
from wscan.scanners.python_code import OUTSIDE_PATH

# Keys whose string value the loaders open as a file, a folder or a model, where they read them: a tokenizer's
# `*_file` arguments at the top of tokenizer_config.json (the file's value wins over the folder's file), the keyword
# arguments sentence-transformers hands from_pretrained (`model_args`, `tokenizer_args`, `config_args`), a module's
# `path` in modules.json, a config's `backbone`, an audio tokenizer's path. Not the paths `save_pretrained` records
# and nothing reads back, nor a training script's paths in config.json, which no loader reads.
PATH_SUFFIXES = ("_file", "_folder", "_dir", "_directory")
ARGUMENT_PATHS = frozenset({"subfolder", "gguf_file", "pretrained_model_name_or_path"})
ANYWHERE_PATHS = frozenset({"backbone", "audio_tokenizer_name_or_path"})
NOT_PATHS = frozenset({"special_tokens_map_file", "added_tokens_file", "tokenizer_config_file", "chat_template_file"})
# Keyword arguments naming a folder the loader writes to: accelerate's disk offload, the hub's download cache.
WRITE_KEYS = frozenset({"offload_folder", "offload_dir", "cache_dir", "cache_folder"})
# Keys whose dotted value sentence-transformers imports and calls with no arguments (an activation) ...
CALLED_KEYS = frozenset({"activation_function", "activation_fn", "sbert_ce_default_activation_function"})
# ... or imports and calls `.load(folder)` on (a WordEmbeddings tokenizer; a Router's `types` values, whose keys are
# the module folders).
LOADED_KEYS = frozenset({"tokenizer_class", "types"})
MAX_VALUES = 1_000_000  # JSON values walked per file; tokenizer.json, the one large file, is not walked
MAX_SHOWN = 200


def loader_keys(artifact: Artifact, top: Any, role: str) -> Iterator[Observation]:
    """Observations for every key of `top` (a parsed JSON object or list) that a loader opens, writes or imports."""
    if role == "tokenizer":  # the tokenizers library reads tokenizer.json: vocabularies and merges, no paths
        return
    stack: list[tuple[str, str, Any]] = [("", "", top)]  # (where, the key holding it, a dict or list)
    seen = 0
    while stack:
        path, holder, container = stack.pop()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, value in items:
            seen += 1
            if seen > MAX_VALUES:
                yield artifact.observe("scan.limit", limit="max-json-values", detail=f"more than {MAX_VALUES} values")
                return
            field = join_field(path, key)
            if isinstance(key, str):
                yield from _judge(artifact, role, field, holder, key, value)
            if isinstance(value, dict | list):
                stack.append((field, key if isinstance(key, str) else holder, value))


def _judge(artifact: Artifact, role: str, field: str, holder: str, key: str, value: Any) -> Iterator[Observation]:
    """One key: `holder` is the key of the dict it sits in ("" at the top; a list's key for its items)."""
    arguments = holder.endswith("_args")  # keyword arguments of from_pretrained
    if arguments and key in WRITE_KEYS and isinstance(value, str) and value:
        yield artifact.observe("repo.write_folder", role=role, field=field[:MAX_SHOWN], value=value[:MAX_SHOWN])
    elif _read_as_path(role, field, arguments, key) and isinstance(value, str) and OUTSIDE_PATH.search(value):
        yield artifact.observe("repo.outside_path", role=role, field=field[:MAX_SHOWN], value=value[:MAX_SHOWN])
    if key in CALLED_KEYS or key in LOADED_KEYS:
        use = "called" if key in CALLED_KEYS else "loaded"
        for reference in _dotted(value):
            yield artifact.observe("repo.named_callable", role=role, field=field[:MAX_SHOWN], use=use,
                                   reference=reference[:MAX_SHOWN])  # fmt: skip
    if key == "types" and isinstance(value, dict):  # a Router loads each module from the folder its key names
        for folder in value:
            if isinstance(folder, str) and OUTSIDE_PATH.search(folder):
                yield artifact.observe("repo.outside_path", role=role, field=f"{field}.{folder}"[:MAX_SHOWN],
                                       value=folder[:MAX_SHOWN])  # fmt: skip
    if key == "trust_remote_code" and value is True and field != key:  # top-level ones are reported already
        yield artifact.observe("repo.trust_remote_code", role=role, field=field[:MAX_SHOWN])


def _read_as_path(role: str, field: str, arguments: bool, key: str) -> bool:
    """Whether a loader opens this key's value as a path (see PATH_SUFFIXES)."""
    if key in NOT_PATHS:
        return False
    if key in ANYWHERE_PATHS:
        return True
    if arguments:
        return key in ARGUMENT_PATHS or key.endswith(PATH_SUFFIXES)
    if role == "tokenizer-config" and field == key:
        return key.endswith(PATH_SUFFIXES)
    return role == "sentence-transformers-modules" and key == "path"


def _dotted(value: Any) -> list[str]:
    """The dotted names in a value: a string, or the strings of a list or of a dict's values (a Router's types).
    Names without a dot (`gelu_new`, `BertTokenizer`) are looked up by the library in its own tables."""
    if isinstance(value, str):
        candidates = [value]
    elif isinstance(value, list):
        candidates = [item for item in value if isinstance(item, str)]
    elif isinstance(value, dict):
        candidates = [item for item in value.values() if isinstance(item, str)]
    else:
        return []
    return [name for name in candidates if "." in name]


def join_field(path: str, key: object) -> str:
    """`a.b[3]`: where a value sits in the file, as the findings show it."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)
