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

import json
import os
import re
import shlex
from collections.abc import Iterator
from typing import Any

from wscan.lookup import is_file, resolve
from wscan.model import Observation
from wscan.scanners.base import Artifact
from wscan.scanners.python_code import OUTSIDE_PATH

# Keys whose value the loaders open as a path, and how they resolve it:
# - "as given": a tokenizer's file arguments (`vocab_file`, `tokenizer_file`, `fast_tokenizer_files`) at the top of
#   tokenizer_config.json or in sentence-transformers' `tokenizer_args`: the file's value wins over the folder's own
#   file and is opened as it is, absolute or relative to the working folder, so any value reads outside the model;
# - "in the repository": from_pretrained's keyword arguments (`model_args`, `config_args`: `subfolder`, `gguf_file`,
#   `variant`) and a modules.json `path`, joined to the model folder: a value that climbs out leaves it;
# - "a model": a `backbone`, an audio tokenizer's or a sentence-transformers tokenizer's path or hub id.
# peft's adapter_config.json: a multitask prompt-tuning adapter opens `prompt_tuning_init_state_dict_path` as given
# while the model is built (no inference-mode gate), a SHADOW adapter loads `shadow_model` (unless "mirror") as a
# model. diffusers' (modular_)model_index.json: a component's spec (`[library, class, {...}]`) loads its
# `pretrained_model_name_or_path` as a model, with `subfolder` and `variant` joined in. A review read files and whole
# models from anywhere on the machine through each.
# A seventeenth review, transformers 4.57.6 with no opt-in: tokenizer file arguments not named `*_file` (Marian's
# `vocab`, `source_spm`, `target_spm`), an image processor's `class_info_file`/`repo_path` (OneFormer), Sudachi's
# config (inline JSON whose plugin `class` is a shared library sudachi dlopens: native code ran), Tesseract options
# (`-c debug_file=...` wrote a file anywhere), and Bark's speaker_embeddings_path.json presets.
# A nineteenth review, open_clip: open_clip_config.json's text tower (`hf_model_name`, `hf_tokenizer_name`) loaded a
# whole model from elsewhere, a `timm_model_name` of "local-dir:<path>" read a config there, and `tokenizer_kwargs`
# (handed to AutoTokenizer or the built-in tokenizer as they are) read a `tokenizer_file` or `bpe_path` anywhere and,
# with `trust_remote_code: true`, opted in to the folder's code on the user's behalf: the code ran.
# A twenty-first review: special_tokens_map.json's file keys (copied into the tokenizer's arguments), a config.json with
# `pretrained_cfg` read as an image processor's settings (OneFormer's class_info_file), MyT5's byte_maps.json.
# Not the paths `save_pretrained` records and nothing reads back, nor a training script's paths in config.json.
FILE_SUFFIXES = ("_file", "_files")
# A tokenizer's `vocab_files_names` keys that do not end in `_file` (every key of transformers 4.57.6; the tests read
# the installed transformers' sources and fail when one is missing here).
TOKENIZER_FILE_KEYS = frozenset({"vocab", "source_spm", "target_spm", "sentencepiece_model_ckpt",
                                 "pretrained_vocab_file_torch"})  # fmt: skip
# tokenizer_config.json's `init_inputs`: from_pretrained hands them to the tokenizer as positional arguments, whose
# first is a file (`vocab_file`) opened as given where the class does not look that file up in the folder, so
# nothing collides with it (helper 265: BloomTokenizerFast read a vocabulary from anywhere). transformers 4.57 no
# longer writes them; older versions wrote the writer's own paths.
INIT_INPUTS = "init_inputs"
PROCESSOR_PATHS = frozenset({"repo_path"})  # OneFormer: os.path.join(repo_path, class_info_file), tried locally first
# timm-config: a config.json with `pretrained_cfg`, which AutoImageProcessor reads as the image processor's settings.
PROCESSOR_ROLES = frozenset({"preprocessor-config", "processor-config", "timm-config"})
# Files whose top-level keys become a tokenizer's arguments: tokenizer_config.json, and special_tokens_map.json
# (every key is copied in when the config has no `added_tokens_decoder`, after the folder's files were found).
TOKENIZER_ARGUMENT_ROLES = frozenset({"tokenizer-config", "special-tokens"})
BYTE_MAPS = frozenset({"decompose_map", "merge_map"})  # MyT5's byte_maps.json: a string is a rules file's path
SUDACHI_PATHS = frozenset({"sudachi_config_path", "sudachi_resource_dir"})  # in `sudachi_kwargs`, opened as given
SUDACHI_BUILTIN = "com.worksap.nlp.sudachi."  # plugin classes sudachi ships; any other `class` is dlopen'd
# Options handed to a program's command line: Tesseract's (pytesseract shlex-splits `tesseract_config`), MeCab's.
TOOL_OPTIONS = {"tesseract_config": "Tesseract", "mecab_option": "MeCab"}
# What OCR setups pass Tesseract: page segmentation, engine and resolution, and `-c` settings that only steer
# recognition. Any other option (`-c debug_file=...`, a config file, `--user-words`, a tessdata folder) is reported.
TESSERACT_NUMBERS = frozenset({"--psm", "--oem", "--dpi"})
TESSERACT_SETTINGS = frozenset({"preserve_interword_spaces", "tessedit_char_whitelist", "tessedit_char_blacklist",
                                "tessedit_do_invert", "load_system_dawg", "load_freq_dawg", "classify_bln_numeric_mode",
                                "textord_heavy_nr", "textord_min_linesize", "thresholding_method"})  # fmt: skip
# A path that names the same place from any folder. Network paths (UNC, `//host`) are never looked up: a lookup may
# reach the network. Others are: an absolute path inside the model folder is its own (a modular pipeline saves the
# folder's path), and one that names nothing on this machine is a leftover of the writer's, which the load here
# cannot open (reported apart, at a lower severity: real files carry them).
ABSOLUTE = re.compile(r"^(/|[A-Za-z]:[\\/])")
# Nor are paths on automount shares (/net/<host>/..., by name or through a link: wscan.lookup).
NETWORK = re.compile(r"^(\\\\|//)")
SPEAKER_EMBEDDINGS = "bark-speaker-embeddings"
OPEN_CLIP = "open-clip-config"
OPEN_CLIP_MODELS = frozenset({"hf_model_name", "hf_tokenizer_name"})
LOCAL_DIR = "local-dir:"  # open_clip and timm's prefix for a model folder, opened as given
# Where it is read: open_clip's tower, and a `backbone` DETR-family models hand timm.create_model (review 42).
LOCAL_DIR_KEYS = frozenset({"timm_model_name", "backbone"})
# timm's pretrained settings, which a DETR-family `backbone_kwargs` hands timm.create_model: `file` is a weights file
# it loads as given (review 42 put another file's weights in the backbone). `url` and `hf_hub_id` name elsewhere.
TIMM_PRETRAINED = frozenset({"pretrained_cfg_overlay", "pretrained_cfg"})
BACKBONE_KWARGS = "backbone_kwargs"
# Keyword arguments a library hands a loader as they are: from_pretrained's (`model_args`, `config_args`, a
# sentence-transformers module's `tokenizer_args`) and open_clip's `tokenizer_kwargs`.
ARGUMENT_HOLDERS = ("_args", "_kwargs")
TOKENIZER_HOLDERS = frozenset({"tokenizer_args", "tokenizer_kwargs"})
PATH_SUFFIXES = ("_file", "_files", "_folder", "_dir", "_directory")
ARGUMENT_PATHS = frozenset({"subfolder", "gguf_file", "variant", "pretrained_model_name_or_path"})
# timm.create_model's weights file: a timm_wrapper config's `model_args` go to it as they are, and it loads the file
# as given, from the working folder, with no opt-in (review 41 loaded a model's weights from outside its folder).
CHECKPOINT_PATH = "checkpoint_path"
MODEL_PATHS = frozenset({"backbone", "audio_tokenizer_name_or_path", "tokenizer_name_or_path"})
# Sub-configs whose `_name_or_path` the parent's __init__ loads with AutoConfig.from_pretrained (Xcodec's semantic
# model, LightGlue's keypoint detector, with the config's own trust_remote_code): a config from anywhere, whose model
# is built (review 40 loaded a hub kernel from one outside the folder). Elsewhere `_name_or_path` is a record nothing
# reads.
KEYPOINT_DETECTOR = "keypoint_detector_config"
LOADED_CONFIG_HOLDERS = frozenset({"semantic_model_config", KEYPOINT_DETECTOR})
NAME_OR_PATH = "_name_or_path"
ADAPTER_AS_GIVEN = frozenset({"prompt_tuning_init_state_dict_path"})
ADAPTER_MODELS = frozenset({"shadow_model"})
DIFFUSERS_INDEX = "diffusers-index"
# ModelScope's configuration.json; FunASR joins each `file_path_metas` value to the model folder and loads it (the
# weights with torch.load, `config` as the YAML whose keys become its arguments).
MODELSCOPE = "modelscope-config"
FILE_PATH_METAS = "file_path_metas."
NOT_PATHS = frozenset({"special_tokens_map_file", "added_tokens_file", "tokenizer_config_file", "chat_template_file"})
AS_GIVEN, IN_REPOSITORY, MODEL = "as given", "in the repository", "a model"
LOCAL_FOLDER = re.compile(r"^\.$|^\.[/\\]|\\|/.*/")  # a model path that is a folder of the working folder's, no hub id
# Links each process resolves to its own: /proc/self/cwd is the loader's working folder there, wscan's here (review 43).
PROCESS_LINKS = re.compile(r"^/(proc|dev/fd)(/|$)")
# Keyword arguments naming a folder the loader writes to: accelerate's disk offload, the hub's download cache.
WRITE_KEYS = frozenset({"offload_folder", "offload_dir", "cache_dir", "cache_folder"})
# Keys whose dotted value sentence-transformers imports and calls with no arguments (an activation) ...
CALLED_KEYS = frozenset({"activation_function", "activation_fn", "sbert_ce_default_activation_function"})
# ... or imports and calls `.load(folder)` on (a WordEmbeddings tokenizer; a Router's `types` values, whose keys are
# the module folders).
LOADED_KEYS = frozenset({"tokenizer_class", "types"})
# mlx-lm (<= 0.31) execs the file config.json's `model_file` names, joined to the model folder, on a plain load()
# (CVE-2026-5843 / GHSA-9m9w-53g9-47c4); importlib finds a loader only for these suffixes.
MLX_MODEL_FILE = "model_file"
IMPORTABLE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd")
# config.json keys naming the attention (or experts) implementation. A value `org/name[@rev][:kernel]` is a hub
# repository whose code the `kernels` package downloads and imports when the model loads. The `_internal` keys are
# never written (to_dict drops them); transformers 4.56-5.2 read them back all the same (CVE-2026-4372 /
# GHSA-29pf-2h5f-8g72); 5.24 skips them and limits hub kernels to kernels-community unless allow_all_kernels.
INTERNAL_KERNEL_KEYS = frozenset({"_attn_implementation_internal", "_experts_implementation_internal"})
KERNEL_KEYS = frozenset({"attn_implementation", "_attn_implementation", "experts_implementation",
                         "_experts_implementation"}) | INTERNAL_KERNEL_KEYS  # fmt: skip
CONFIG_ROLES = frozenset({"config", "timm-config"})
# A config's own `attribute_map`: PretrainedConfig.__init__ sets every key it does not know as an attribute, and its
# __getattribute__ and __setattr__ look names up in the instance's map before the class's, so a map in config.json (or
# in a part's dict) answers `_attn_implementation` or `auto_map` with whatever key it names (review 39 reached the
# kernel loader through `{"_attn_implementation": "_name_or_path"}`, the repository's own id). transformers never
# writes one: the classes' maps are class attributes, which to_dict leaves out.
ATTRIBUTE_MAP = "attribute_map"
# The maps of a classification head's labels: a label is any text (`attribute_map` too), and they are the one place
# real configs hold dicts longer than what the pickle machine keeps (an ImageNet-22k head has 21,843 labels).
LABEL_MAPS = frozenset({"id2label", "label2id"})
KERNELS_COMMUNITY = "kernels-community"
# compressed-tensors looks a quantization or sparsity `format` up in its registry, and a `module:name` there is
# imported instead (registry.get_from_registry; transformers PR #46303 had a `file.py:Class` run so).
QUANTIZATION_PREFIX = "quantization_config."
AUTO_ROUND_FORMAT = "packing_format"
# JSON values walked per file (tokenizer.json, the one large file, is not walked): 2.5 us each. A tokenizer_config.json
# lists every added token in seven values: 1,000,000 flagged a real one of 142,855 (a speech or image-token model's;
# scale sweep 205), and max-json-bytes lets one hold about 2.4 million. Past it, a limit finding (high).
MAX_VALUES = 5_000_000
MAX_SHOWN = 200


def loader_keys(artifact: Artifact, top: Any, role: str) -> Iterator[Observation]:
    """Observations for every key of `top` (a parsed JSON object or list) that a loader opens, writes or imports."""
    if role == SPEAKER_EMBEDDINGS and isinstance(top, dict):
        yield from _speaker_embeddings(artifact, top)
        return
    if role in PROCESSOR_ROLES and isinstance(top, dict) and "repo_path" in top and top["repo_path"] in (None, "", "."):
        info = top.get("class_info_file")  # OneFormer joins it to "" (or "."): opened from the working folder
        if isinstance(info, str) and info and not OUTSIDE_PATH.search(info):
            yield from outside(artifact, role, "class_info_file", info, AS_GIVEN)
    for field in _lightglue_opt_ins(top):
        yield artifact.observe("repo.remote_code_opt_in", role=role, field=field[:MAX_SHOWN])
    if role == "tokenizer":  # the tokenizers library reads tokenizer.json: vocabularies and merges, no paths
        return
    for item in json_items(top, MAX_VALUES):
        if item is None:
            yield artifact.observe("scan.limit", limit="max-json-values", detail=f"more than {MAX_VALUES} values")
            return
        path, holder, key, value, _ = item
        if isinstance(key, str):
            yield from _judge(artifact, role, join_field(path, key), holder, key, value)


JsonItem = tuple[str, str, object, Any, int]  # container's path, the key holding it, key or index, value, its depth


def json_items(top: Any, limit: int, max_depth: int = 2**31) -> Iterator[JsonItem | None]:
    """Every value below a parsed JSON document, depth first, with where its container sits (`a.b[3]`), the
    nearest key above it and the container's depth (0: the top); containers at `max_depth` are not entered.
    Past `limit` values, one None and the end: the caller says whether that is a finding."""
    stack: list[tuple[str, str, Any, int]] = [("", "", top, 0)]
    seen = 0
    while stack:
        path, holder, container, depth = stack.pop()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, value in items:
            seen += 1
            if seen > limit:
                yield None
                return
            yield path, holder, key, value, depth
            if isinstance(value, dict | list) and depth + 1 < max_depth:
                stack.append((join_field(path, key), key if isinstance(key, str) else holder, value, depth + 1))


def _judge(artifact: Artifact, role: str, field: str, holder: str, key: str, value: Any) -> Iterator[Observation]:
    """One key: `holder` is the key of the dict it sits in ("" at the top; a list's key for its items)."""
    arguments = holder.endswith(ARGUMENT_HOLDERS)  # keyword arguments of from_pretrained or of the tokenizer
    if arguments and key in WRITE_KEYS and isinstance(value, str) and value:
        yield artifact.observe("repo.write_folder", role=role, field=field[:MAX_SHOWN], value=value[:MAX_SHOWN])
    else:
        how = _read_as(role, field, holder, key) or ""
        if key in LOCAL_DIR_KEYS and isinstance(value, str) and value.startswith(LOCAL_DIR):
            how, value = AS_GIVEN, value[len(LOCAL_DIR) :]
        for path in _strings(value, unpacked=field == INIT_INPUTS) if how else []:
            if _leaves(how, key, path):
                yield from outside(artifact, role, field, path, how)
    if key in CALLED_KEYS or key in LOADED_KEYS:
        use = "called" if key in CALLED_KEYS else "loaded"
        for reference in _dotted(value):
            yield artifact.observe("repo.named_callable", role=role, field=field[:MAX_SHOWN], use=use,
                                   reference=reference[:MAX_SHOWN])  # fmt: skip
    if key == "types" and isinstance(value, dict):  # a Router loads each module from the folder its key names
        for folder in value:
            if isinstance(folder, str) and OUTSIDE_PATH.search(folder):
                yield artifact.observe("repo.outside_path", role=role, field=f"{field}.{folder}"[:MAX_SHOWN],
                                       value=folder[:MAX_SHOWN], how=IN_REPOSITORY)  # fmt: skip
    if key == "trust_remote_code" and value and _opts_in_for_the_user(role, holder):
        yield artifact.observe("repo.remote_code_opt_in", role=role, field=field[:MAX_SHOWN])
    elif key == "trust_remote_code" and value and field != key:  # top-level ones are reported already
        # transformers imports when the value is truthy, not only `true` (review 42: 1, "yes", "false")
        yield artifact.observe("repo.trust_remote_code", role=role, field=field[:MAX_SHOWN])
    if isinstance(value, str) and value.strip():
        yield from _tools(artifact, role, field, holder, key, value)
    if role in CONFIG_ROLES and key in KERNEL_KEYS:
        yield from _attention_kernels(artifact, role, field, key, value)
    if role in CONFIG_ROLES and key == ATTRIBUTE_MAP and holder not in LABEL_MAPS:
        yield artifact.observe("repo.attribute_map", role=role, field=field[:MAX_SHOWN],
                               value=json.dumps(value, default=str)[:MAX_SHOWN])  # fmt: skip
    if _registry_import(role, field, key, value):
        yield artifact.observe("repo.registry_import", role=role, field=field[:MAX_SHOWN], value=value[:MAX_SHOWN])
    if _mlx_module(role, field, value):  # joined to the folder: `..` or an absolute path leaves it
        if OUTSIDE_PATH.search(value):
            yield from outside(artifact, role, field, value, IN_REPOSITORY)
        else:
            yield _mlx_code(artifact, value)


def _lightglue_opt_ins(top: Any) -> Iterator[str]:
    """Where a LightGlue config that opts in sits (`trust_remote_code`, `vision_config.trust_remote_code`), at any
    depth of any file: AutoConfig reads a composite model's parts as configs of their own, and files of any name
    that a config or a sentence-transformers `config_args` names (helper 251 ran code through a Llava's
    vision_config, a .txt and an Xcodec's semantic_model_config). Only containers holding containers are entered
    (found at C speed), and lists only when they hold dicts, so a tokenizer's vocabulary and merges are passed over."""
    stack: list[tuple[str, Any]] = [("", top)]
    while stack:
        path, container = stack.pop()
        if isinstance(container, list):  # a list of configs (none known, but a list top-level is read too)
            if dict in set(map(type, container)):
                stack.extend((join_field(path, index), item) for index, item in enumerate(container))
            continue
        if not isinstance(container, dict):
            continue
        if _lightglue_opt_in(container):
            yield join_field(path, "trust_remote_code")
        kinds = set(map(type, container.values()))
        if dict in kinds or list in kinds:
            stack.extend((join_field(path, key), value) for key, value in container.items()
                         if isinstance(value, dict | list))  # fmt: skip


def _lightglue_opt_in(top: dict[str, Any]) -> bool:
    """A LightGlue config's own `trust_remote_code`, which its __init__ and model hand AutoConfig.from_pretrained and
    AutoModelForKeypointDetection.from_config for the keypoint detector: the code a detector config from anywhere
    names runs though the user never opted in. Real LightGlue configs keep the default, false; one is judged
    wherever it sits, in whatever file."""
    lightglue = top.get("model_type") == "lightglue" or isinstance(top.get(KEYPOINT_DETECTOR), dict)
    return lightglue and bool(top.get("trust_remote_code"))  # any value Python counts as true (review 42)


def _opts_in_for_the_user(role: str, holder: str) -> bool:
    """Where a file's `trust_remote_code` is handed to a loader as it is: open_clip's `tokenizer_kwargs`
    (AutoTokenizer.from_pretrained), and a config's `backbone_kwargs`, which load_backbone hands
    AutoBackbone.from_pretrained or AutoConfig.from_pretrained for the `backbone` it names (DPT, DepthAnything,
    UperNet, Mask2Former, ...: review 42 ran another repository's code so)."""
    return (role == OPEN_CLIP and holder == "tokenizer_kwargs") or (role in CONFIG_ROLES and holder == BACKBONE_KWARGS)


def _attention_kernels(artifact: Artifact, role: str, field: str, key: str, value: Any) -> Iterator[Observation]:
    """An `_internal` key with any value, and a hub repository named as the implementation. A dict maps sub-configs
    to theirs, and the setter hands each sub-config its own entry, which may be a dict again (review 39: a Llava
    part's `{"text_config": {"": kernel}}`), so every leaf counts. Plain values (`sdpa`, `flash_attention_2`,
    `paged|sdpa`) name transformers' own."""
    internal = key in INTERNAL_KERNEL_KEYS
    for name in _leaves_of(value, internal):
        if name is None or (not internal and not (isinstance(name, str) and "/" in name)):
            continue
        shown = str(name)
        community = shown.rsplit("|", 1)[-1].split("/", 1)[0] == KERNELS_COMMUNITY  # paged|<implementation>
        yield artifact.observe("repo.attention_kernel", role=role, field=field[:MAX_SHOWN], value=shown[:MAX_SHOWN],
                               internal=internal, community=community)  # fmt: skip


def _leaves_of(value: Any, internal: bool) -> Iterator[Any]:
    """What a dict of dicts holds at its ends (the value itself when it is no dict). A kernel key inside is judged
    on its own (json_items reaches it), so its value is left to it unless it is judged more leniently (a plain key
    under an `_internal` one): walking it here too made a chain of nested kernel keys cost depth x size."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(reversed([inner for key, inner in item.items() if not _judged_alone(key, internal)]))
        else:
            yield item


def _judged_alone(key: object, internal: bool) -> bool:
    """Whether a kernel key nested under another flags at least what the outer one would in its value."""
    return key in INTERNAL_KERNEL_KEYS or (key in KERNEL_KEYS and not internal)


def _registry_import(role: str, field: str, key: str, value: Any) -> bool:
    """A `*format` under quantization_config holding `module:name`, which compressed-tensors imports; real
    formats are registry names (`pack-quantized`, `sparse-24-bitmask`). auto-round's `packing_format`
    (`auto_round:gptq`) picks one of its own backends and compressed-tensors never reads it (review 36)."""
    return (role in CONFIG_ROLES and field.startswith(QUANTIZATION_PREFIX) and key.endswith("format")
            and key != AUTO_ROUND_FORMAT and isinstance(value, str) and ":" in value)  # fmt: skip


def _mlx_module(role: str, field: str, value: Any) -> bool:
    """config.json's top-level `model_file` naming a file importlib can load: mlx-lm runs it."""
    return role == "config" and field == MLX_MODEL_FILE and isinstance(value, str) and value.endswith(
        IMPORTABLE_SUFFIXES)  # fmt: skip


def _mlx_code(artifact: Artifact, value: str) -> Observation:
    """The file mlx-lm execs, and whether it is in the folder (in an archive that cannot be told: it counts)."""
    local = artifact.real_path is None or is_file(artifact.real_path.parent / value)
    return artifact.observe("repo.loader_code", loader="mlx-lm", field=MLX_MODEL_FILE, references=value[:MAX_SHOWN],
                            file=value[:MAX_SHOWN], local=local)  # fmt: skip


def _tools(artifact: Artifact, role: str, field: str, holder: str, key: str, value: str) -> Iterator[Observation]:
    """Options for an external program, and Sudachi configs whose plugins are shared libraries."""
    tool = TOOL_OPTIONS.get(key)
    if tool == "MeCab" and holder != "mecab_kwargs":
        tool = None
    if tool is not None and not (tool == "Tesseract" and _plain_tesseract(value)):
        yield artifact.observe("repo.tool_options", role=role, field=field[:MAX_SHOWN], tool=tool,
                               value=value[:MAX_SHOWN])  # fmt: skip
    if key == "ocr_lang" and ("/" in value or "\\" in value or ".." in value):  # Tesseract's -l: a traineddata path
        yield artifact.observe("repo.tool_options", role=role, field=field[:MAX_SHOWN], tool="Tesseract",
                               value=value[:MAX_SHOWN])  # fmt: skip
    if holder == "sudachi_kwargs" and key == "sudachi_config_path" and value.lstrip().startswith("{"):
        for library in _sudachi_plugins(value):
            yield artifact.observe("repo.native_plugin", role=role, field=field[:MAX_SHOWN], tool="Sudachi",
                                   library=library[:MAX_SHOWN])  # fmt: skip


def _plain_tesseract(options: str) -> bool:
    """Whether Tesseract options (split as pytesseract splits them, with shlex) only steer recognition."""
    try:
        words = shlex.split(options)
    except ValueError:
        return False
    while words:
        option = words.pop(0)
        argument = words.pop(0) if words else ""
        if option in TESSERACT_NUMBERS and argument.isdigit():
            continue
        if option == "-c" and argument.split("=", 1)[0] in TESSERACT_SETTINGS and "=" in argument:
            continue
        return False
    return True


def _sudachi_plugins(config: str) -> list[str]:
    """The plugin classes of an inline Sudachi config that are not Sudachi's own: sudachi dlopens each as a shared
    library. A config that does not parse is reported as one (Sudachi may read it otherwise)."""
    try:
        parsed = json.loads(config)
    except (ValueError, RecursionError):
        return ["(an inline config wscan cannot read)"]
    found: list[str] = []
    stack: list[Any] = [parsed]
    while stack and len(found) < MAX_SHOWN:
        item = stack.pop()
        if isinstance(item, dict):
            plugin = item.get("class")
            if isinstance(plugin, str) and not plugin.startswith(SUDACHI_BUILTIN):
                found.append(plugin)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _speaker_embeddings(artifact: Artifact, top: dict[str, Any]) -> Iterator[Observation]:
    """Bark's presets: each prompt's path is joined to `repo_or_path`, which BarkProcessor sets to the model folder
    when the key is there; without it the root is `/`, so every path is outside. An absolute path always is."""
    rooted = "repo_or_path" in top
    for preset, prompts in top.items():
        if not isinstance(prompts, dict):
            continue
        for prompt, path in prompts.items():
            if isinstance(path, str) and path and (not rooted or OUTSIDE_PATH.search(path)):
                how = MODEL if rooted else "from / (no repo_or_path)"
                yield from outside(artifact, SPEAKER_EMBEDDINGS, f"{preset}.{prompt}", path, how)


def _read_as(role: str, field: str, holder: str, key: str) -> str | None:
    """How a loader resolves this key's value as a path (see AS_GIVEN), None when it does not open it."""
    if key in NOT_PATHS:
        return None
    if role == "adapter-config" and field == key and key in ADAPTER_AS_GIVEN | ADAPTER_MODELS:
        return AS_GIVEN if key in ADAPTER_AS_GIVEN else MODEL
    if role == MODELSCOPE and field.startswith(FILE_PATH_METAS):
        return IN_REPOSITORY
    if role == DIFFUSERS_INDEX and key in ARGUMENT_PATHS:  # anywhere: specs sit in lists under component names
        return MODEL if key == "pretrained_model_name_or_path" else IN_REPOSITORY
    if (holder == "sp_model_kwargs" and key == "model_file") or (role == "myt5-byte-maps" and key in BYTE_MAPS):
        return AS_GIVEN  # SentencePieceProcessor(model_file=...) loads it before the tokenizer's own file
    if role == "tokenizer-config" and field == INIT_INPUTS:
        return AS_GIVEN
    if (role in TOKENIZER_ARGUMENT_ROLES and field == key) or holder in TOKENIZER_HOLDERS:
        if _tokenizer_file(holder, key):
            return AS_GIVEN
        if holder not in TOKENIZER_HOLDERS or key not in ARGUMENT_PATHS:
            return None  # a tokenizer's other arguments; from_pretrained's own (`subfolder`, ...) are judged below
    if holder == "sudachi_kwargs" and key in SUDACHI_PATHS:
        return AS_GIVEN
    if role in PROCESSOR_ROLES and (key.endswith(FILE_SUFFIXES) or key in PROCESSOR_PATHS):
        return MODEL
    if (holder.endswith(ARGUMENT_HOLDERS) and key == CHECKPOINT_PATH) or (holder in TIMM_PRETRAINED and key == "file"):
        return AS_GIVEN
    if holder.endswith(ARGUMENT_HOLDERS) and (key in ARGUMENT_PATHS or key.endswith(PATH_SUFFIXES)):
        return IN_REPOSITORY
    if role == "adapter-config" and key == "tokenizer_name_or_path":
        return None  # peft loads a prompt-tuning init tokenizer only to train; from_pretrained sets inference mode
    if key in MODEL_PATHS or (role == OPEN_CLIP and key in OPEN_CLIP_MODELS):
        return MODEL
    if role in CONFIG_ROLES and key == NAME_OR_PATH and holder in LOADED_CONFIG_HOLDERS:
        return MODEL
    return IN_REPOSITORY if role == "sentence-transformers-modules" and key == "path" else None


def outside(artifact: Artifact, role: str, field: str, path: str, how: str, *, data: bool = False,
            leftovers: bool = True) -> Iterator[Observation]:  # fmt: skip
    """A path that leaves the model folder (`repo.outside_path`; `repo.outside_data_path` when the loader only
    reads the file as data, never unpickles or imports it), or names nothing on this machine (`repo.leftover_path`,
    unless `leftovers` is False: the loader then uses the folder's own file); nothing for an absolute path to the
    folder itself or inside it."""
    where = placement(artifact, path)
    if where == INSIDE or (where == ABSENT and not leftovers):
        return
    kind = "repo.leftover_path" if where == ABSENT else "repo.outside_data_path" if data else "repo.outside_path"
    yield artifact.observe(kind, role=role, field=field[:MAX_SHOWN], value=path[:MAX_SHOWN], how=how)


INSIDE, ABSENT, ELSEWHERE = "inside", "absent", "elsewhere"


def placement(artifact: Artifact, path: str) -> str:
    """Where an absolute path leads from the file's folder: INSIDE it, ABSENT on this machine, or ELSEWHERE (also
    every path that is not absolute, every network path, and every path in an archive, which are not looked up)."""
    if artifact.real_path is None or not ABSOLUTE.match(path) or NETWORK.match(path):
        return ELSEWHERE
    if PROCESS_LINKS.match(os.path.normpath(path)):
        return ELSEWHERE
    try:
        folder = os.path.realpath(artifact.real_path.parent)
        target = resolve(path, folder)
        if target is None:
            return ELSEWHERE
        if target == folder or target.startswith(folder.rstrip(os.sep) + os.sep):
            return INSIDE
        return ELSEWHERE if os.path.lexists(path) else ABSENT
    except (OSError, ValueError):  # a NUL in the path, a name too long: nothing there to open either
        return ABSENT


def _tokenizer_file(holder: str, key: str) -> bool:
    """A tokenizer argument naming a file, which wins over the folder's own and is opened as given; open_clip's
    built-in tokenizer takes its vocabulary as `bpe_path`."""
    if key.endswith(FILE_SUFFIXES) or key in TOKENIZER_FILE_KEYS:
        return True
    return holder == "tokenizer_kwargs" and key.endswith("_path")


def _leaves(how: str, key: str, path: str) -> bool:
    """Whether the loader, resolving `path` `how`, opens something outside the model folder. A `variant` is put in
    a weights file name (model.<variant>.safetensors): a separator there walks into folders. A model is looked for in
    the working folder before the hub: `.`, `./x`, a backslash or more than one `/` can only be a folder there, never
    a hub id (`org/name`), which stays another repository's (review 43 loaded a backbone from `./elsewhere`)."""
    if how == AS_GIVEN or OUTSIDE_PATH.search(path):
        return True
    if how == MODEL and LOCAL_FOLDER.search(path):
        return True
    return key == "variant" and ("/" in path or "\\" in path)


def _strings(value: Any, unpacked: bool = False) -> list[str]:
    """A value's non-empty strings: itself, or the items of a list (`fast_tokenizer_files`); where the loader
    unpacks the value as arguments (`*init_inputs`), a dict's keys too (helper 267 handed a path over so)."""
    items = value if isinstance(value, list) or (unpacked and isinstance(value, dict)) else [value]
    return [item for item in items if isinstance(item, str) and item]


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
