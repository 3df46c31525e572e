"""FunASR's config.yaml, as AutoModel acts on it: code it imports or installs, and files it opens outside the folder.

FunASR 1.4.16's AutoModel (funasr/download/download_model_from_hub.py) merges a model folder's config.yaml (one with a
top-level `model`) into its keyword arguments, the file's keys standing unless the caller sets them. Then:
- if `trust_remote_code` is truthy as Python sees it (`model.py` and "false" are), it pip-installs the folder's
  requirements.txt and imports `remote_code` (`model` by default), downloading it first when it is a URL;
- `remote_code` is imported from its folder, as given (utils/dynamic_import.py);
- it keeps `init_param` when something is at that path, else takes the folder's model.pt, and torch.loads it
  (train_utils/load_pretrained_model.py; a component's `*_conf.init_param_path` too: models/llm_asr, fun_asr_nano);
- it opens data files as given (absolute, or from the working folder): a token list, a segmentation dictionary,
  a BPE model, CMVN statistics, a jieba dictionary, each replaced by the folder's own file when it has one.
When the folder has a ModelScope configuration.json, download_model reads config.yaml through it instead, and a key
is replaced only by the file its `file_path_metas` names there, when that file exists.
FunASR's trainer writes every argument into the config.yaml it saves (utils/misc.py prepare_model_dir), so real
files carry the writer's absolute paths: one that names nothing here opens nothing here (FunASR falls back to the
folder's file, or fails), and is not reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from wscan.lookup import is_file
from wscan.scanners.base import Artifact, ScanItem
from wscan.scanners.loader_keys import AS_GIVEN, outside
from wscan.scanners.python_code import OUTSIDE_PATH
from wscan.strict_json import loads_lenient

ROLE = "funasr-config"
REMOTE_CODE = "remote_code"  # the file to import once trust_remote_code is set (a URL is downloaded)
OPT_IN = "trust_remote_code"
REQUIREMENTS = "requirements.txt"
# Keys whose bytes make a YAML worth reading as FunASR's (`remote_code` is in `trust_remote_code` too).
SIGNALS = (b"remote_code", b"init_param", b"token_list", b"seg_dict", b"bpemodel", b"cmvn_file", b"jieba_usr_dict")
CHECKPOINT = "init_param"  # top level
COMPONENT_CHECKPOINT = "init_param_path"  # in a component's `<name>_conf`
# Data files, by (holder, key) ("" for the top), and the folder's files download_model puts in their place.
DATA_FILES: dict[tuple[str, str], tuple[str, ...]] = {
    ("tokenizer_conf", "token_list"): ("tokens.txt", "tokens.json"),
    ("tokenizer_conf", "seg_dict"): ("seg_dict",),
    ("tokenizer_conf", "bpemodel"): ("bpe.model",),
    ("frontend_conf", "cmvn_file"): ("am.mvn",),
    ("", "jieba_usr_dict"): ("jieba_usr_dict",),
}
MODELSCOPE_CONFIG = "configuration.json"
MAX_MODELSCOPE_BYTES = 1024 * 1024  # a real one is a few hundred bytes
MAX_SHOWN = 300


def funasr_config(artifact: Artifact, data: bytes) -> Iterator[ScanItem]:
    """What AutoModel does with a FunASR config.yaml that the user did not ask for (see the module's notes)."""
    if not any(signal in data for signal in SIGNALS):
        return
    from wscan.scanners.framework_code import load_yaml_document  # only YAML naming FunASR's keys is built

    document = load_yaml_document(data)
    if not isinstance(document, dict) or "model" not in document:
        return
    remote = document.get(REMOTE_CODE)
    if isinstance(remote, str) and remote.startswith("http"):  # FunASR's own test for a URL
        yield artifact.observe("repo.custom_code", role=ROLE, field=REMOTE_CODE, references=remote[:MAX_SHOWN],
                               remote=True, missing="")  # fmt: skip
    if document.get(OPT_IN):
        yield artifact.observe("repo.remote_code_opt_in", role=ROLE, field=OPT_IN)
        if artifact.real_path is not None and is_file(artifact.real_path.parent / REQUIREMENTS):
            yield artifact.observe("repo.pip_requirements", role=ROLE, field=OPT_IN, file=REQUIREMENTS)
    yield from _paths(artifact, document)


def _paths(artifact: Artifact, document: dict[Any, Any]) -> Iterator[ScanItem]:
    """Code, checkpoints (torch.load) and data files that leave the folder: absolute, a home folder, or `..`, and
    that FunASR does not replace with a file of the folder's. A relative name is opened from the working folder,
    where a model's own files are not: FunASR then takes the folder's."""
    remote = document.get(REMOTE_CODE)
    loaded = [("", CHECKPOINT)] + [
        (holder, COMPONENT_CHECKPOINT)
        for holder, conf in document.items()
        if isinstance(holder, str) and holder.endswith("_conf") and isinstance(conf, dict)
    ] + ([("", REMOTE_CODE)] if isinstance(remote, str) and not remote.startswith("http") else [])
    folder = artifact.real_path.parent if artifact.real_path is not None else None
    metas = _file_path_metas(folder) if folder is not None else None
    for holder, key in [*loaded, *DATA_FILES]:
        if folder is not None and _replaced(folder, metas, holder, key):
            continue
        for field, value in _values(document, holder, key):
            if isinstance(value, str) and OUTSIDE_PATH.search(value):
                yield from outside(artifact, ROLE, field, value, AS_GIVEN, data=(holder, key) in DATA_FILES,
                                   leftovers=False)  # fmt: skip


def _values(document: dict[Any, Any], holder: str, key: str) -> Iterator[tuple[str, Any]]:
    """The key's values with where they sit: at the top, in the holder, or in each of a list of them (FunASR
    takes a list of tokenizer configs, one per tokenizer)."""
    if not holder:
        yield key, document.get(key)
        return
    conf = document.get(holder)
    confs = list(enumerate(conf)) if isinstance(conf, list) else [(None, conf)]
    for index, item in confs:
        if isinstance(item, dict) and key in item:
            yield (f"{holder}.{key}" if index is None else f"{holder}[{index}].{key}"), item[key]


def _replaced(folder: Path, metas: dict[str, Any] | None, holder: str, key: str) -> bool:
    """Whether download_model puts a file of the folder in the key's place: the one configuration.json's
    `file_path_metas` names for it, when there is a configuration.json (`metas` not None), else the folder's own
    file of a data key's names. Each only when that file exists."""
    if metas is not None:
        named = metas.get(holder) if holder else metas
        named = named.get(key) if isinstance(named, dict) else None
        return isinstance(named, str) and is_file(folder / named)
    return any(is_file(folder / name) for name in DATA_FILES.get((holder, key), ()))


def _file_path_metas(folder: Path) -> dict[str, Any] | None:
    """configuration.json's `file_path_metas` ({} without one), or None when the folder has no configuration.json
    that Python's json reads."""
    path = folder / MODELSCOPE_CONFIG
    if not is_file(path):
        return None
    try:
        with path.open("rb") as raw:
            data = raw.read(MAX_MODELSCOPE_BYTES + 1)
    except OSError:
        return None
    top = loads_lenient(data) if len(data) <= MAX_MODELSCOPE_BYTES else None
    if not isinstance(top, dict):
        return None
    metas = top.get("file_path_metas")
    return metas if isinstance(metas, dict) else {}
