"""The JSON and template files of a model repository: config.json, tokenizer files, chat templates, cards.

None of these run code themselves, but they decide what does: `auto_map` and `custom_pipelines` make
transformers import Python files from the repository (or from another one, `repo--module.Class`) when a user
passes `trust_remote_code=True`, sentence-transformers imports the class a `modules.json` entry names with no
opt-in at all, and chat templates are rendered by a Jinja sandbox that hostile templates try to escape. The
file's role comes from its name, as loaders pick it; its format is checked from its bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from wscan.discover import LOADER_FOLDERS, versioned_config
from wscan.lookup import is_file
from wscan.model import AttrValue, Observation
from wscan.scanners.base import CHUNK, NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem, read_capped
from wscan.scanners.gluonts_serde import serde_targets
from wscan.scanners.loader_keys import (
    ELSEWHERE,
    IN_REPOSITORY,
    MODELSCOPE,
    join_field,
    loader_keys,
    outside,
    placement,
)
from wscan.scanners.python_code import OUTSIDE_PATH
from wscan.scanners.yaml_parsers import yaml_loaders
from wscan.strict_json import TOO_DEEP, JsonRejected, loads_lenient, loads_strict

# The files sentence-transformers modules keep their settings in (older versions named the first after the model).
ST_MODULE_CONFIGS = [
    *(f"sentence_{name}_config.json" for name in ("bert", "roberta", "distilbert", "camembert", "albert", "xlm-roberta",
                                                  "xlnet")),
    "router_config.json",
    "wordembedding_config.json",
]
# File name -> role. These are the files transformers, tokenizers, diffusers and peft read by name.
GLUONTS_CONFIG = "gluonts-config"
JSON_ROLES = {
    "config.json": "config",
    "generation_config.json": "generation-config",
    "tokenizer_config.json": "tokenizer-config",
    "tokenizer.json": "tokenizer",
    "special_tokens_map.json": "special-tokens",
    "added_tokens.json": "added-tokens",
    "chat_template.json": "chat-template",
    "preprocessor_config.json": "preprocessor-config",
    "processor_config.json": "processor-config",
    "video_preprocessor_config.json": "preprocessor-config",
    "feature_extractor_config.json": "preprocessor-config",
    "image_processor_config.json": "preprocessor-config",
    "adapter_config.json": "adapter-config",
    "modules.json": "sentence-transformers-modules",
    "config_sentence_transformers.json": "sentence-transformers-config",
    # a sentence-transformers module's own file (its keyword arguments for from_pretrained, a Router's types)
    **dict.fromkeys(ST_MODULE_CONFIGS, "sentence-transformers-module-config"),
    "audio_tokenizer_config.json": "audio-tokenizer-config",
    "speaker_embeddings_path.json": "bark-speaker-embeddings",  # BarkProcessor's voice presets: paths to .npy files
    "open_clip_config.json": "open-clip-config",  # open_clip's model, preprocessing and tokenizer settings
    "byte_maps.json": "myt5-byte-maps",  # MyT5Tokenizer's byte rewriting rules
    # lerobot's DataProcessorPipeline (any `<name>.json` it saved is read the same way: see _pipeline_steps)
    "policy_preprocessor.json": "lerobot-pipeline",
    "policy_postprocessor.json": "lerobot-pipeline",
    "configuration.json": MODELSCOPE,  # ModelScope's model configuration (FunASR reads it too)
    "gluonts-config.json": GLUONTS_CONFIG,  # the GluonTS predictor class Predictor.deserialize imports
}
# Roles whose file is a JSON list, not an object (sentence-transformers' modules.json).
LIST_ROLES = frozenset({"sentence-transformers-modules"})
ST_PREFIX = "sentence_transformers."  # module classes sentence-transformers imports from itself
MAX_FIELD_CHARS = 1024 * 1024  # no real config string is this long; tokenizer vocabularies are many short ones
# How deep sub-configs are looked into for an `auto_map` (vision_config, text_config.encoder, a list of them).
MAX_SUBCONFIG_DEPTH = 8
# Roles whose nested keys are data, not settings: a vocabulary may hold the token "auto_map".
DATA_ROLES = frozenset({"tokenizer", "added-tokens"})
_SIGNAL = re.compile(rb'"(auto_map|chat_template|trust_remote_code|__kind__)"\s*:|"steps"\s*:\s*\[')
SIGNAL_KEYS = ("auto_map", "chat_template", "trust_remote_code", "steps", "__kind__")  # __kind__: GluonTS objects


def _spelt(key: str) -> bytes:
    r"""A regex for `key` as a JSON string may spell it: each character as itself or as a \u escape, its hex digits in
    either case (`"trust\u005Fremote_code"` is the key `trust_remote_code`)."""

    def one(c: str) -> str:
        digits = "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{ord(c):04x}")
        return f"(?:{re.escape(c)}|\\\\u{digits})"

    return ('"' + "".join(one(c) for c in key) + '"').encode()


# The same keys as JSON may spell them: read through a file too large to parse.
_SPELT_SIGNAL = re.compile(b"|".join(_spelt(key) for key in SIGNAL_KEYS))
SIGNAL_OVERLAP = 256  # bytes kept between chunks: the longest spelling of a key is 19 x 6
_PIP_LOCATION = re.compile(r"://|@|[/\\]|^\.")  # a pip requirement that names a URL, a VCS or a path, not a name
STEP_CLASS = "step class"  # the key a lerobot pipeline step's class is reported under (the config-target rules)
MAX_STEPS = 1000
# adapter_config.json values PEFT imports as modules: AutoPeftModel `auto_mapping.parent_library` (then calls its
# `base_model_class`'s from_pretrained), a LoRA layer with a `megatron_config` its `megatron_core`. Before peft#3085
# any name was imported; 0.21 takes only allowlisted libraries.
AUTO_MAPPING, MEGATRON_CORE = "auto_mapping", "megatron_core"
_MODULE_REF = re.compile(r"^(?:(?P<repo>[^\s]+)--)?(?P<module>[A-Za-z_][\w.]*)\.(?P<cls>[A-Za-z_]\w*)$")


def read_bounded(artifact: Artifact, ctx: ScanContext) -> bytes | Observation:
    """The whole file when it is within `max-json-bytes`, else the limit observation (nothing read)."""
    limit = ctx.limits.max_json_bytes
    if artifact.size > limit:
        return artifact.observe("repo.size_limit", size=artifact.size, limit=limit)
    with artifact.opener() as raw:
        return read_capped(raw, limit)


def json_role(name: str) -> str:
    """The role of a JSON file by its name: what reads it, or "json" for a file no loader opens by name."""
    base = name.rsplit("/", 1)[-1].lower()  # macOS and Windows open `CONFIG.JSON` for config.json
    # config.json's `configuration_files` makes from_pretrained load the whole config from a listed
    # `config.<version>.json` instead: config.json is then a decoy (review 40 hid a hub kernel in config.4.0.0.json)
    return JSON_ROLES.get(base) or ("config" if versioned_config(base) else "json")


def _spells_a_signal(artifact: Artifact, ctx: ScanContext) -> bool:
    """Whether any of the keys loaders act on is spelt anywhere in the file (helper 254 put a LightGlue opt-in after
    65 MiB of spaces in a .txt a config named): a file too large to parse that holds one is a size-limit finding."""
    kept = b""
    with artifact.opener() as raw:
        while chunk := raw.read(CHUNK):
            ctx.budget.check_time()
            if _SPELT_SIGNAL.search(kept + chunk):
                return True
            kept = chunk[-SIGNAL_OVERLAP:]
    return False


def _json_start(head: bytes) -> bool:
    return head.lstrip(b" \t\r\n").startswith(b"{")


class RepoJsonScanner:
    """Configuration JSON of a model repository, plus any JSON that carries `auto_map` or a chat template."""

    name = "model-config"

    def accepts(self, head: Head) -> bool:
        if head.raw_data:
            return False
        if json_role(head.name) != "json":
            return True  # the loaders read it by name, with whatever it starts with (json skips any whitespace)
        # Any other JSON object, of any name: a config or a sentence-transformers `config_args` may name it, and
        # AutoConfig reads it as a config (helper 251 put a LightGlue opt-in in a .txt). `scan` looks at all of it.
        if not head.head.strip(b" \t\r\n"):  # all whitespace so far: what follows decides
            return head.name.endswith(".json") or head.size > len(head.head)
        # a JSON list too, where the name says JSON: GluonTS decodes a list's objects one by one
        return _json_start(head.head) or (head.name.endswith(".json") and head.head.lstrip(b" \t\r\n")[:1] == b"[")

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        role = json_role(artifact.name)
        if role == "json" and artifact.size > ctx.limits.max_json_bytes and not _spells_a_signal(artifact, ctx):
            yield artifact.observe(NOT_MINE_KIND)  # too large to parse, and no key a loader acts on in it anywhere
            return
        data = read_bounded(artifact, ctx)
        if isinstance(data, Observation):
            yield data
            return
        if role == "json" and not _SIGNAL.search(data):  # no key anything acts on, unless one is spelt with escapes
            decoded = loads_lenient(data) if b"\\u" in data else None
            if decoded is None or not _SIGNAL.search(json.dumps(decoded).encode()):
                yield artifact.observe(NOT_MINE_KIND)
                return
        strict = True
        try:
            top = loads_strict(data)
        except JsonRejected as exc:
            strict = False
            yield artifact.observe("repo.json_invalid", role=role, reason=str(exc))
            if str(exc) == TOO_DEEP:  # the loader's json, called from a shallower stack, may read it all the same
                yield artifact.observe("repo.json_too_deep", role=role)
            # The loaders read it with Python's json all the same: what they would act on is judged too.
            top = loads_lenient(data)
            if top is None:
                return
        if role == GLUONTS_CONFIG or b"__kind__" in data or b"\\u" in data:  # (escapes spell any key)
            yield from serde_targets(artifact, top, ctx, predictor_config=role == GLUONTS_CONFIG)
        if role in LIST_ROLES and isinstance(top, list):
            yield from _st_modules(artifact, top, role, data)
            yield from loader_keys(artifact, top, role)
            return
        if not isinstance(top, dict):
            if strict and role != "json":  # a loader's file must be an object; a list of GluonTS objects may not
                # (a file already reported as not strict JSON is not reported twice)
                yield artifact.observe("repo.json_invalid", role=role, reason="the top level is not an object")
            return
        if len(data) > MAX_FIELD_CHARS:  # a string is never longer in characters than in bytes
            yield from _oversized(artifact, top, role)
        yield from custom_code(artifact, top, role, data)
        yield from _pipeline_steps(artifact, top, role)
        # A config.json with `pretrained_cfg` is a timm checkpoint's: AutoImageProcessor takes its processor keys.
        timm = role == "config" and isinstance(top.get("pretrained_cfg"), dict)
        yield from loader_keys(artifact, top, "timm-config" if timm else role)
        yield from _templates(artifact, top, role, data)
        if role == "config":
            yield from _config_facts(artifact, top)
        elif role == MODELSCOPE:
            yield from _modelscope(artifact, top, data)
        elif role == "adapter-config":
            base = top.get("base_model_name_or_path")
            yield artifact.observe(
                "fact.adapter", peft_type=str(top.get("peft_type", ""))[:64], base_model=str(base or "")[:200]
            )
            # AutoPeftModel loads the base model there; a path that names nothing here is the writer's leftover.
            if isinstance(base, str) and OUTSIDE_PATH.search(base) and placement(artifact, base) == ELSEWHERE:
                yield artifact.observe("repo.adapter_base_path", base_model=base[:200])
            yield from _adapter_imports(artifact, top)


def _oversized(artifact: Artifact, top: dict[str, Any], role: str) -> Iterator[ScanItem]:
    """Strings longer than any real configuration needs: payload stores, or loader memory attacks."""
    for path, _, container, kinds in _containers(top):
        if str not in kinds:
            continue
        for key, value in container.items() if isinstance(container, dict) else enumerate(container):
            if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
                yield artifact.observe("repo.oversized_field", role=role, field=join_field(path, key)[:200],
                                       length=len(value))  # fmt: skip


def _containers(
    top: dict[str, Any] | list[Any], max_depth: int = 2**31
) -> Iterator[tuple[str, int, Any, set[type]]]:
    """Every dict and list of a parsed JSON document, depth first, with where it sits (`a.b[3]`), its depth (0: the
    top) and the types of its values, none `max_depth` deep or deeper. It has no count of its own to stop at, so it
    cannot end silently: the document bounds it (`max-json-bytes`, at least two bytes a value)."""
    stack: list[tuple[str, int, Any]] = [("", 0, top)]
    while stack:
        path, depth, container = stack.pop()
        kinds = _kinds(container)
        yield path, depth, container, kinds
        if depth + 1 >= max_depth or (dict not in kinds and list not in kinds):
            continue
        for key, value in container.items() if isinstance(container, dict) else enumerate(container):
            if isinstance(value, dict | list):
                stack.append((join_field(path, key), depth + 1, value))


def _kinds(container: dict[str, Any] | list[Any]) -> set[type]:
    """The types of a container's values, found without a Python loop: a vocabulary of 30 million numbers is passed
    over at C speed instead of being stepped through (a list of 30 million: 0.53 s instead of 6.5 s, measured)."""
    return set(map(type, container.values() if isinstance(container, dict) else container))


def _references(auto_map: Any) -> list[str]:
    """Every `module.Class` an auto_map points at (tokenizers map to [slow, fast] pairs)."""
    if not isinstance(auto_map, dict):
        return [f"<malformed auto_map: {type(auto_map).__name__}>"]
    refs: list[str] = []
    for value in auto_map.values():
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                refs.append(str(item))
    return refs


def _pipeline_impls(pipelines: Any) -> list[str]:
    """Every `impl` of config.json `custom_pipelines` ({task: {"impl": "module.Class", ...}}): what
    transformers' pipeline() imports with trust_remote_code=True. Entries without one load nothing."""
    if not isinstance(pipelines, dict):
        return []
    return [str(task["impl"]) for task in pipelines.values() if isinstance(task, dict) and "impl" in task]


def _split_references(refs: list[str]) -> tuple[list[str], bool]:
    """The local modules the references name, and whether any comes from elsewhere (or has no loader form)."""
    modules: list[str] = []
    remote = False
    for ref in refs:
        match = _MODULE_REF.match(ref)
        if match is None:
            remote = True  # a reference no loader form explains: treat as the worst case
            continue
        remote = remote or match.group("repo") is not None
        if match.group("repo") is None:
            modules.append(match.group("module"))
    return modules, remote


def _nested_auto_maps(top: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every `auto_map` below the top (`vision_config.auto_map`), with where it sits. transformers reads only the
    top one, but vLLM resolved a sub-config's itself, with no opt-in (CVE-2025-66448 / GHSA-8fr4-5q9j-m8gm), or
    built it with trust_remote_code hard-coded (CVE-2026-4944 / GHSA-7972-pg2x-xr59). Bounded in depth."""
    for path, depth, container, _ in _containers(top, MAX_SUBCONFIG_DEPTH):
        if depth > 0 and isinstance(container, dict) and isinstance(container.get("auto_map"), dict | list):
            yield join_field(path, "auto_map"), container["auto_map"]


def custom_code(artifact: Artifact, top: dict[str, Any], role: str, data: bytes) -> Iterator[ScanItem]:
    fields: list[tuple[str, list[str]]] = []
    if "auto_map" in top:
        fields.append(("auto_map", _references(top["auto_map"])))
    if role not in DATA_ROLES:
        fields.extend((field, _references(value)) for field, value in _nested_auto_maps(top))
    impls = _pipeline_impls(top.get("custom_pipelines"))
    if impls:
        fields.append(("custom_pipelines", impls))
    for field, refs in fields:
        modules, remote = _split_references(refs)
        yield artifact.observe(
            "repo.custom_code",
            _offset(data, field),
            role=role,
            field=field,
            references=", ".join(refs)[:400],
            remote=remote,
            missing=", ".join(_missing_modules(artifact, modules))[:300],
        )
    if top.get("trust_remote_code"):  # transformers' own test: any value Python counts as true (review 42)
        yield artifact.observe("repo.trust_remote_code", _offset(data, "trust_remote_code"), role=role)


def _pipeline_steps(artifact: Artifact, top: dict[str, Any], role: str) -> Iterator[ScanItem]:
    """lerobot's processor pipeline (`{"steps": [{"registry_name" | "class": ..., "config": {...}}]}`, saved under
    any name): DataProcessorPipeline.from_pretrained imports a step's dotted `class` when it has no
    `registry_name`, and calls it with the step's `config`, with no opt-in (huggingface/lerobot#4219). Each is
    reported as a config target, for the same rules. A step's `state_file` is read from `folder / state_file`
    with safetensors (lerobot 0.4.4): one that climbs out or is absolute is a data file from elsewhere."""
    steps = top.get("steps")
    if not isinstance(steps, list):
        return
    if len(steps) > MAX_STEPS:  # counted, never passed: a step past them may import anything
        yield artifact.observe("config.more_targets", count=len(steps) - MAX_STEPS)
    for index, step in enumerate(steps[:MAX_STEPS]):
        if not isinstance(step, dict):
            continue
        name = step.get("class") if "registry_name" not in step else None
        if isinstance(name, str) and "." in name:  # lerobot splits module and class at the last dot
            yield artifact.observe("config.target", callable=name[:400], leaf=name.rsplit(".", 1)[1][:400],
                                   key=STEP_CLASS, path=f"steps[{index}]")  # fmt: skip
        state = step.get("state_file")
        if isinstance(state, str) and OUTSIDE_PATH.search(state):
            yield from outside(artifact, role, f"steps[{index}].state_file", state, IN_REPOSITORY, data=True)


def _adapter_imports(artifact: Artifact, top: dict[str, Any]) -> Iterator[ScanItem]:
    """The modules PEFT imports by the names adapter_config.json gives: `auto_mapping.parent_library` (read by
    AutoPeftModel only when there is no task_type) and `megatron_core` (only when `megatron_config` is set; every
    LoRA adapter records the default "megatron.core"). The rules judge the names against the libraries real adapters
    name."""
    mapping = top.get(AUTO_MAPPING)
    named: list[tuple[str, Any]] = []
    if isinstance(mapping, dict) and top.get("task_type") is None:
        named.append((f"{AUTO_MAPPING}.parent_library", mapping.get("parent_library")))
    if top.get("megatron_config"):
        named.append((MEGATRON_CORE, top.get(MEGATRON_CORE)))
    for field, module in named:
        if isinstance(module, str) and module:
            yield artifact.observe("repo.adapter_import", field=field, module=module[:200])


def _modelscope(artifact: Artifact, top: dict[str, Any], data: bytes) -> Iterator[ScanItem]:
    """ModelScope's configuration.json (modelscope#1405): a true `allow_remote` imports the folder's Python files
    when a model, pipeline or trainer is built from it, and `plugins` are pip-installed and imported. 1.40 asks
    for trust_remote_code first; older releases did not. A plugin given as a URL or path comes from elsewhere."""
    if top.get("allow_remote"):  # ModelScope's own test: any value Python counts as true
        yield artifact.observe("repo.custom_code", _offset(data, "allow_remote"), role=MODELSCOPE, field="allow_remote",
                               references="(the folder's Python files)", remote=False, missing="")  # fmt: skip
    plugins = top.get("plugins")
    names = [str(item) for item in plugins] if isinstance(plugins, list) else [str(plugins)] if plugins else []
    if names:
        remote = any(_PIP_LOCATION.search(name) for name in names)
        yield artifact.observe("repo.custom_code", _offset(data, "plugins"), role=MODELSCOPE, field="plugins",
                               references=", ".join(names)[:400], remote=remote, missing="")  # fmt: skip


def _st_modules(artifact: Artifact, modules: list[Any], role: str, data: bytes) -> Iterator[ScanItem]:
    """sentence-transformers' modules.json: SentenceTransformer(folder) imports each entry's `type` that is not
    one of its own classes from the folder (or from the repository it names), trust_remote_code or not."""
    refs = [entry["type"] for entry in modules if isinstance(entry, dict) and isinstance(entry.get("type"), str)]
    local: list[str] = []
    elsewhere: list[str] = []
    for ref in refs:
        if not ref.startswith(ST_PREFIX):
            match = _MODULE_REF.match(ref)
            (local if match is not None and match.group("repo") is None else elsewhere).append(ref)
    offset = _offset(data, "type")
    if local:
        modules_named, _ = _split_references(local)
        yield artifact.observe(
            "repo.module_class",
            offset,
            role=role,
            references=", ".join(local)[:400],
            missing=", ".join(_missing_modules(artifact, modules_named))[:300],
        )
    if elsewhere:
        yield artifact.observe(
            "repo.custom_code",
            offset,
            role=role,
            field="type",
            references=", ".join(elsewhere)[:400],
            remote=True,
            missing="",
        )


def _missing_modules(artifact: Artifact, modules: list[str]) -> list[str]:
    """Modules the auto_map names that are not beside the file (the loader would fetch them from the hub)."""
    if artifact.real_path is None:
        return []
    folder = artifact.real_path.parent
    missing = []
    for module in sorted(set(modules)):
        if not is_file((folder / Path(*module.split("."))).with_suffix(".py")):
            missing.append(f"{module}.py")
    return missing


def _templates(artifact: Artifact, top: dict[str, Any], role: str, data: bytes) -> Iterator[ScanItem]:
    """The chat templates a file holds: its own, and the one sentence-transformers hands the tokenizer through
    `tokenizer_args` (which overrides the tokenizer's)."""
    arguments = top.get("tokenizer_args")
    holders = [("", top)] + ([("tokenizer_args.", arguments)] if isinstance(arguments, dict) else [])
    for prefix, holder in holders:
        if "chat_template" in holder:
            yield from _template_value(artifact, holder["chat_template"], prefix, role, data)
        yield from _caller_names_set(artifact, holder, prefix, data)


def _caller_names_set(artifact: Artifact, holder: dict[str, Any], prefix: str, data: bytes) -> Iterator[ScanItem]:
    """transformers hands every `extra_special_tokens` entry to the chat template as a render variable. One named
    like what the caller passes (`date_string`, `documents`, ...) sets that name when the caller does not, and the
    template checker trusts those names as the caller's: review 20 looked up `messages[date_string]` with
    `date_string` set to `__class__` so. Real configs name their extra tokens `image_token`, `boi_token`, ..."""
    extra = holder.get("extra_special_tokens")
    if not isinstance(extra, dict):
        return
    from wscan.template_keys import CHAT_DATA  # with jinja2: only for a config that has extra tokens

    offset = _offset(data, "extra_special_tokens")
    for name in sorted(k for k in extra if isinstance(k, str) and k in CHAT_DATA):
        yield artifact.observe("template.caller_name_set", offset, field=f"{prefix}extra_special_tokens", name=name,
                               value=str(extra[name])[:200])  # fmt: skip


def _template_value(artifact: Artifact, value: Any, prefix: str, role: str, data: bytes) -> Iterator[ScanItem]:
    from wscan.chat_template import check_template  # jinja2 loads only when there is a template

    offset = _offset(data, "chat_template")
    named: list[tuple[str, Any]]
    if isinstance(value, list):  # [{"name": "default", "template": "..."}, {"name": "tool_use", ...}]
        named = [
            (f"{prefix}chat_template[{item.get('name', i)}]", item.get("template")) if isinstance(item, dict)
            else (f"{prefix}chat_template[{i}]", item)
            for i, item in enumerate(value)
        ]
    elif isinstance(value, dict):  # {"default": "...", "tool_use": "..."}: transformers picks one by name
        named = [(f"{prefix}chat_template[{name}]", source) for name, source in value.items()]
    else:
        named = [(f"{prefix}chat_template", value)]
    for field, source in named:
        if source is None and role != "chat-template":
            continue
        if not isinstance(source, str):
            yield artifact.observe(
                "template.malformed", offset, field=field, reason=f"not a string but {type(source).__name__}", line=0
            )
            continue
        for issue in check_template(source):
            yield artifact.observe(issue.kind, offset, field=field, **issue.attrs)


def _config_facts(artifact: Artifact, top: dict[str, Any]) -> Iterator[ScanItem]:
    """What config.json says about the model, for the summary; unknown architectures for the rules."""
    architectures = top.get("architectures")
    names = [a for a in architectures if isinstance(a, str)] if isinstance(architectures, list) else []
    for name in names:
        yield artifact.observe("repo.architecture", name=name[:120], custom="auto_map" in top)
    attrs: dict[str, AttrValue] = {
        "model_type": str(top.get("model_type", ""))[:64],
        "architectures": ",".join(names)[:200],
        "dtype": str(top.get("torch_dtype") or top.get("dtype") or "")[:32],
    }
    quant = top.get("quantization_config")
    if isinstance(quant, dict):
        method = str(quant.get("quant_method", "unknown"))[:32]
        bits = quant.get("bits") or ("4" if quant.get("load_in_4bit") else "8" if quant.get("load_in_8bit") else "")
        attrs["quantization"] = (f"{method} {str(bits)[:16]}-bit" if bits else method)[:64]  # bits: any JSON
    yield artifact.observe("fact.config", **attrs)


def _offset(data: bytes, key: str) -> int | None:
    position = data.find(f'"{key}"'.encode())
    return position if position >= 0 else None


# Where a loader reads a stand-alone chat template by its name: transformers' chat_template.jinja (a tokenizer's or a
# processor's) and every file of additional_chat_templates/ (discover.LOADER_FOLDERS). Servers (vLLM, llama.cpp)
# take one by any name, given by their user; such a template reads the chat or the tokens loaders pass.
CHAT_TEMPLATE_FILE = "chat_template.jinja"
# What chat loaders pass a template besides the caller's options (template_keys.CHAT_DATA): the tokenizer's tokens.
SPECIAL_TOKENS = frozenset({"bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"})
# Another program's template is still judged for what breaks out of an unsandboxed Environment (a dunder walk, a
# template global taken apart, `popen`-style attributes, names the template assembles itself: review 22 ran a
# command from `'%c'|format(95) * 2`) and for what a loader cannot survive rendering (a symlinked
# additional_chat_templates/ reaches a file by another name: review 22 hung transformers so). Private names,
# includes, keys from its program's data and names like `request` are how HTML templates (mne's, nilearn's
# reports) are written.
_ESCAPE_KINDS = frozenset({"template.global_internals", "template.dangerous_attribute", "template.size_limit",
                           "template.node_limit", "template.malformed", "template.render_cost",
                           "template.computed_attribute", "template.computed_call"})


def reads_as_chat_template(where: str, source: str) -> bool:
    """Whether a `.jinja` file is a chat template: by the name a loader reads, else by reading from its context
    anything a chat loader passes (`messages`, `tools`, a special token, ...), or by not parsing."""
    from wscan.chat_template import context_names  # jinja2 loads only when there is a template
    from wscan.template_keys import CHAT_DATA

    parts = where.replace("\\", "/").lower().split("/")
    if parts[-1] == CHAT_TEMPLATE_FILE or (len(parts) > 1 and parts[-2] in LOADER_FOLDERS):
        return True
    names = context_names(source)
    return names is None or bool(names & (CHAT_DATA | SPECIAL_TOKENS) - {"loop"})


def _escape(kind: str, name: str) -> bool:
    from wscan.chat_template import names_internals

    return kind in _ESCAPE_KINDS or (kind == "template.dunder_access" and ("__" in name or names_internals(name)))


class TemplateFileScanner:
    """Stand-alone chat templates (`chat_template.jinja`, `*.jinja`) as transformers 4.43+ stores them.

    Other programs' `.jinja` files (HTML reports, documentation themes) ship beside models too. One that is not
    at a chat template's name and reads nothing a chat loader passes is judged for escapes and render cost only
    (`_ESCAPE_KINDS`)."""

    name = "chat-template"

    def accepts(self, head: Head) -> bool:
        # A NUL is text to Jinja and to transformers (review 45 hid a template behind `{#\0#}`); the suffix in any
        # case, as a case-insensitive file system opens `chat_template.jinja` by another spelling.
        return not head.raw_data and head.name.lower().endswith(".jinja")

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        data = read_bounded(artifact, ctx)
        if isinstance(data, Observation):
            yield data
            return
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield artifact.observe("template.malformed", field="file", reason=f"not UTF-8 at byte {exc.start}", line=0)
            return
        from wscan.chat_template import check_template  # jinja2 loads only when there is a template

        chat = reads_as_chat_template(artifact.location.member or artifact.location.path, source)
        for issue in check_template(source, program_data=not chat):
            if chat or _escape(issue.kind, str(issue.attrs.get("name", ""))):
                yield artifact.observe(issue.kind, field="file", **issue.attrs)


MODEL_CARD_BYTES = 64 * 1024


class ModelCardScanner:
    """README.md: the model card. Only its YAML front matter is read (licence, base model) for the summary."""

    name = "model-card"

    def accepts(self, head: Head) -> bool:
        return head.name.rsplit("/", 1)[-1].lower() == "readme.md" and b"\x00" not in head.head[:4096]

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as raw:
            text = raw.read(MODEL_CARD_BYTES).decode("utf-8", "replace")
        card = _front_matter(text)
        license_name = card.get("license", "")
        base_model = card.get("base_model", "")
        yield artifact.observe(
            "fact.model_card",
            license=str(license_name)[:64] if isinstance(license_name, str) else "",
            base_model=(str(base_model) if isinstance(base_model, str) else ",".join(map(str, base_model)))[:200]
            if isinstance(base_model, str | list) else "",
        )


def _front_matter(text: str) -> dict[str, Any]:
    """The YAML between the leading `---` lines, read with the safe loader; {} when absent or broken."""
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    if end < 0:
        return {}
    import yaml  # only model cards with front matter need it

    for loader in yaml_loaders(text[3:end]):  # as the Hub's and huggingface_hub's readers parse it
        try:
            loaded = yaml.load(text[3:end], Loader=loader)
        except yaml.YAMLError:
            continue
        return loaded if isinstance(loaded, dict) else {}
    return {}
