"""Keras model configs as data: every object, function and lambda a loader would resolve, named, never imported.

A Keras model is rebuilt from JSON: `config.json` in a `.keras` archive, the `model_config` and
`training_config` attributes of a legacy HDF5 file, or a `model.to_json()` file. Each serialized object is
`{"module", "class_name", "config", "registered_name"}` and the loader imports `module` and calls
`class_name.from_config` (Keras before 3.9 imported any module: CVE-2025-1550); `"class_name": "function"`
fetches a function by name, and a Lambda layer can carry marshalled Python bytecode that runs on load
(CVE-2024-3660; ignored `safe_mode` on HDF5, CVE-2025-9905). Such objects are rebuilt wherever they sit:
deserialize_keras_object walks into lists and into dicts without `class_name`/`config`, so a config whose top
is a list still runs its Lambdas. A TorchModuleWrapper carries a torch.save file that torch.load unpickles.
This module walks the parsed JSON with a node budget and returns what it found as issues, and the embedded
files as bytes; judging the names is left to the rules (an allowlist generated from Keras' own export
registry, and a list of gadgets), and the files to the scanners of their formats.
"""

from __future__ import annotations

import binascii
import builtins
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from wscan.model import AttrValue, Issue

# Serialized values Keras rebuilds as data (tensors, bytes, slices), not by importing anything.
DATA_CLASSES = frozenset(
    {"__keras_tensor__", "__tensor__", "__numpy__", "__bytes__", "__ellipsis__", "__slice__"}
)
# ...and what tf_keras' legacy JSON encoder writes for values (json_utils): rebuilt as data when, as there, the
# object names no module (with a module, Keras 3 would import it).
LEGACY_DATA_CLASSES = frozenset({"__tuple__", "TensorShape", "TypeSpec", "CompositeTensor"})
LAMBDA_CLASS = "__lambda__"
# tf.keras 2 wrapped TensorFlow API calls in these layers; `function` is a tf API symbol name.
TF_OP_LAYERS = frozenset({"TFOpLambda", "SlicingOpLambda"})
# ...a class method of a tf API class (`cls_symbol`, `method_name`), and any attribute of its input tensor.
TF_CLASS_METHOD_LAYER = "ClassMethod"
TF_ATTRIBUTE_LAYERS = frozenset({"InstanceProperty", "InstanceMethod"})
# The reference types of what those layers call, which the rules tell apart from objects a config imports.
TF_FUNCTION, TF_METHOD, TF_ATTRIBUTE = "tf-function", "tf-method", "tf-attribute"
_BUILTIN_NAMES = frozenset(dir(builtins))
# Layers whose config may name a file the loader reads (CVE-2025-12058) or a SavedModel it loads
# (TFSMLayer, CVE-2026-1462).
PATH_FIELDS = {
    "StringLookup": "vocabulary",
    "IntegerLookup": "vocabulary",
    "IndexLookup": "vocabulary",
    "TextVectorization": "vocabulary",
    "TFSMLayer": "filepath",
}
# KerasHub's (and KerasNLP's) tokenizers read a vocabulary, merges or SentencePiece model from a path given
# as a string; a preset stores them as assets and writes null there.
HUB_PACKAGES = ("keras_hub.", "keras_nlp.")
HUB_REGISTERED = ("keras_hub>", "keras_nlp>")
# ...and Whisper's tokenizer opens its special and language token tables the same way.
HUB_PATH_FIELDS = ("vocabulary", "merges", "proto", "special_tokens", "language_tokens")
# Keras' TorchModuleWrapper keeps its torch module as base64 of a torch.save file, which from_config hands to
# torch.load(weights_only=False) under safe_mode=False: a pickle, scanned as one.
TORCH_WRAPPER = "TorchModuleWrapper"
MAX_EMBEDDED = 64  # embedded torch modules handed on per config (real models hold a few)
MAX_ISSUES = 200  # per kind: beyond this a model is hostile anyway and the count is reported
MAX_OBJECTS = 10_000  # distinct classes and functions one config names (real models name a few hundred)
_TICK = 1 << 14  # nodes between two deadline checks
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_.]+")
_KEEP = 200


@dataclass(frozen=True, slots=True)
class Embedded:
    """Bytes a config carries that the loader reads as a file of their own (a TorchModuleWrapper's module)."""

    field: str
    data: bytes


@dataclass(slots=True)
class Walked:
    """What one walk of a config found: the issues, the embedded files, and whether any value has the shape of a
    serialized Keras object (which decides, for a JSON file of any name, that a Keras loader would rebuild it)."""

    issues: list[Issue]
    embedded: list[Embedded]
    keras: bool


@dataclass(slots=True)
class _Found:
    """Issues in the order found; objects once per distinct reference, with a count."""

    issues: list[Issue] = field(default_factory=list)
    objects: dict[tuple[str, str, str], dict[str, AttrValue]] = field(default_factory=dict)
    per_kind: dict[str, int] = field(default_factory=dict)
    embedded: list[Embedded] = field(default_factory=list)
    keras: bool = False

    def add(self, kind: str, **attrs: AttrValue) -> None:
        count = self.per_kind[kind] = self.per_kind.get(kind, 0) + 1
        if count <= MAX_ISSUES:
            self.issues.append(Issue(kind, attrs))

    def reference(self, callable_: str, type_: str, registered: str, **attrs: AttrValue) -> None:
        key = (callable_, type_, registered)
        seen = self.objects.get(key)
        if seen is not None:
            seen["count"] = int(seen["count"]) + 1
        elif len(self.objects) < MAX_OBJECTS:
            self.objects[key] = {"callable": callable_, "type": type_, "registered": registered, "count": 1, **attrs}
        else:  # past this a config is built to drown the report; what is left is not judged, and that fails
            self.add("keras.object_limit", limit=MAX_OBJECTS)


def is_keras_object(value: Any) -> bool:
    """A serialized Keras object, by its shape: Keras' deserialize_keras_object rebuilds a dict with both
    `class_name` and `config` as an object, and walks into any other dict or list looking for one, so such a
    dict is rebuilt wherever it sits (a list at the top, a plain dict around it). Its config is an object, a list
    (an old Sequential), null (rebuilt from no arguments) or, for a function, its name; a number or a string
    anywhere else is some other JSON's data, not a config a class could be rebuilt from."""
    if not isinstance(value, dict) or not isinstance(value.get("class_name"), str) or "config" not in value:
        return False
    inner = value["config"]
    named_function = value["class_name"] == "function" and isinstance(inner, str)
    return inner is None or isinstance(inner, dict | list) or named_function


def check_config(top: Any, max_nodes: int, tick: Callable[[], None] | None = None) -> list[Issue]:
    """Everything in a parsed config that a Keras loader would import, call or read."""
    return walk_config(top, max_nodes, tick).issues


def walk_config(top: Any, max_nodes: int, tick: Callable[[], None] | None = None) -> Walked:
    """check_config's issues, with the embedded files and whether the config holds any Keras object at all."""
    found = _Found()
    for walked, (value, path, layer) in enumerate(_walk(top), 1):
        if walked > max_nodes:
            found.add("keras.walk_limit", limit=max_nodes)
            break
        if tick is not None and walked % _TICK == 0:
            tick()
        if isinstance(value, dict):
            found.keras = found.keras or is_keras_object(value)
            _check_object(value, path, layer, found)
    issues = list(found.issues)
    issues.extend(Issue("keras.object", attrs) for attrs in found.objects.values())
    for kind, count in found.per_kind.items():
        if count > MAX_ISSUES:
            issues.append(Issue("keras.more", {"of": kind, "count": count - MAX_ISSUES}))
    return Walked(issues, found.embedded, found.keras)


_Frame = tuple[Iterator[tuple[str, Any, bool, bool]], str, str]  # (key, value, is a layer, by index), path, layer


def _walk(top: Any) -> Iterator[tuple[Any, str, str]]:
    """Every value with its JSON path and the name of the innermost layer around it (the model's own name
    at the top, then each entry of a `layers` list, however deeply models nest, or the first object met inside
    a list or plain dict at the top). Depth first, in document order,
    holding one iterator per open container: memory follows the nesting, not the width (a list of twenty million
    empty objects stays small)."""
    layer = _name(top) if isinstance(top, dict) else ""
    yield top, "", layer
    stack: list[_Frame] = []
    _push(stack, top, "", layer, True)
    while stack:
        children, path, layer = stack[-1]
        step = next(children, None)
        if step is None:
            stack.pop()
            continue
        key, value, is_layer, indexed = step
        child_path = f"{path}[{key}]" if indexed else _join(path, key)
        named = is_layer or (not layer and is_keras_object(value))  # or an object outside any layer
        child_layer = (_name(value) or layer) if named and isinstance(value, dict) else layer
        yield value, child_path, child_layer
        _push(stack, value, child_path, child_layer, is_layer)


def _push(stack: list[_Frame], value: Any, path: str, layer: str, is_layer: bool) -> None:
    """A dict's items (the items of its `layers` list are layers), or a list's items, which are layers when the
    list is."""
    if isinstance(value, dict):
        items = ((str(k), v, k == "layers" and isinstance(v, list), False) for k, v in value.items())
        stack.append((items, path, layer))
    elif isinstance(value, list):
        stack.append((((str(i), v, is_layer, True) for i, v in enumerate(value)), path, layer))


def _name(obj: dict[str, Any]) -> str:
    inner = obj.get("config")
    name = inner.get("name") if isinstance(inner, dict) else obj.get("name")
    return name[:_KEEP] if isinstance(name, str) else ""


def _join(path: str, key: str) -> str:
    if len(path) > _KEEP:
        return path
    return f"{path}.{key[:64]}" if path else key[:64]


def _check_object(obj: dict[str, Any], path: str, layer: str, found: _Found) -> None:
    """The checks that apply to one JSON object."""
    class_name = obj.get("class_name")
    _legacy_functions(obj, path, layer, found)
    if not isinstance(class_name, str):
        return
    if class_name == LAMBDA_CLASS:
        inner = obj.get("config")
        code = inner.get("code", inner.get("value")) if isinstance(inner, dict) else None
        _lambda(code, "keras3", path, layer, found)
        return
    if class_name in DATA_CLASSES or (class_name in LEGACY_DATA_CLASSES and "module" not in obj):
        return
    _reference(obj, class_name, path, layer, found)
    inner = obj.get("config")
    if not isinstance(inner, dict):
        return
    _tf_op(class_name, inner, path, layer, found)
    if TORCH_WRAPPER in {_bare(name) for name in _registered(obj)}:
        _torch_module(inner, path, layer, found)
    keys = HUB_PATH_FIELDS if _from_hub(obj) else ()
    for key in (*keys, PATH_FIELDS.get(class_name)):
        if key is not None and isinstance(inner.get(key), str) and inner[key]:
            found.add("keras.external_path", layer=layer, class_name=class_name, field=_join(path, f"config.{key}"),
                      path=inner[key][:_KEEP])  # fmt: skip
    where = inner.get("config_file")
    if isinstance(where, str) and any(mark in where for mark in ("/", "\\", ":")):
        # KerasHub joins it under assets/ with os.path.join, which an absolute path replaces
        found.add("keras.external_path", layer=layer, class_name=class_name, field=_join(path, "config.config_file"),
                  path=where[:_KEEP])  # fmt: skip


def _bare(registered: Any) -> str:
    """A registered name without its package (`package>Name`), as custom objects and fallbacks resolve it."""
    return registered.rsplit(">", 1)[-1] if isinstance(registered, str) else ""


def _torch_module(inner: dict[str, Any], path: str, layer: str, found: _Found) -> None:
    """A TorchModuleWrapper's `module`: base64 decoded as Keras decodes it (base64.b64decode, which skips what is
    not base64), handed on to be scanned as the torch.save file it is. Text Keras cannot decode loads nothing."""
    text = inner.get("module")
    if not isinstance(text, str):
        return
    try:
        data = binascii.a2b_base64(text.encode("ascii"))
    except (UnicodeEncodeError, binascii.Error, ValueError):
        return
    where = _join(path, "config.module")
    if len(found.embedded) < MAX_EMBEDDED:
        found.embedded.append(Embedded(where, data))
    else:  # not scanned, so not passed
        found.add("keras.embedded_limit", layer=layer, field=where, limit=MAX_EMBEDDED)


def _registered(obj: dict[str, Any]) -> list[str]:
    """The names Keras may look up among registered objects: `registered_name` (`class_name` when the config has
    none: helper 256's `{"class_name": "keras_hub>WhisperTokenizer"}` built KerasHub's tokenizer), and `class_name`
    itself, which the legacy path a config without `module` takes looks up whatever `registered_name` says (helper
    260 hid the tokenizer behind `registered_name: "Dense"` so)."""
    names = [obj.get("registered_name"), obj.get("class_name")]
    return [name for name in names if isinstance(name, str)]


def _from_hub(obj: dict[str, Any]) -> bool:
    """A KerasHub (or KerasNLP) object: by its module, or by a registered name Keras may resolve."""
    module = obj.get("module")
    return (isinstance(module, str) and module.startswith(HUB_PACKAGES)) or any(
        name.startswith(HUB_REGISTERED) for name in _registered(obj)
    )


def _tf_op(class_name: str, inner: dict[str, Any], path: str, layer: str, found: _Found) -> None:
    """The TensorFlow function, class method or tensor attribute a tf.keras 2 op layer calls when it runs."""
    if class_name in TF_OP_LAYERS:
        name, key, type_ = inner.get("function"), "function", TF_FUNCTION
    elif class_name == TF_CLASS_METHOD_LAYER:
        cls, method = inner.get("cls_symbol"), inner.get("method_name")
        name = f"{cls}.{method}" if isinstance(cls, str) and isinstance(method, str) else None
        key, type_ = "cls_symbol", TF_METHOD
    elif class_name in TF_ATTRIBUTE_LAYERS:
        attr = inner.get("attr_name")
        name = f"<tensor>.{attr}" if isinstance(attr, str) else None
        key, type_ = "attr_name", TF_ATTRIBUTE
    else:
        return
    if isinstance(name, str):
        found.reference(f"tensorflow.{name}"[:_KEEP], type_, "", module="tensorflow", name=name[:_KEEP],
                        layer=layer, field=_join(path, f"config.{key}"))  # fmt: skip


def _reference(obj: dict[str, Any], class_name: str, path: str, layer: str, found: _Found) -> None:
    """The callable a serialized object resolves to: module + class, function name or TypeSpec name."""
    module = obj["module"] if isinstance(obj.get("module"), str) else ""
    if class_name == "function":
        name, type_ = obj.get("config"), "function"
    elif class_name == "__typespec__":
        name, type_ = obj.get("spec_name"), "typespec"
    else:
        name, type_ = class_name, "class"
    if not isinstance(name, str):
        name = f"<{type(name).__name__}>"
    registered = obj.get("registered_name")
    custom = registered if isinstance(registered, str) and ">" in registered else ""
    # A registered name (package>name) is no module attribute: only custom objects resolve it, as a bare name.
    owner = "" if ">" in name else module
    callable_ = f"{owner}.{name}" if owner else name
    found.reference(callable_[:_KEEP], type_, custom[:_KEEP], module=owner[:_KEEP], name=name[:_KEEP],
                    layer=layer, field=path)  # fmt: skip
    if isinstance(registered, str) and _falls_back(module, registered, name):
        # When the module has no attribute `name`, Keras (3 and tf_keras) takes the module's attribute called
        # `registered_name` instead: {"module": "tensorflow", "config": "a.b.c", "registered_name": "print"}.
        found.reference(f"{module}.{registered}"[:_KEEP], type_, "", module=module[:_KEEP],
                        name=registered[:_KEEP], layer=layer, field=_join(path, "registered_name"))  # fmt: skip


def _falls_back(module: str, registered: str, name: str) -> bool:
    """Whether `module.registered_name` is something else Keras may resolve. Keras writes the name itself, a
    package>name, or for a function `"function"` (the class of a function object), which no module used in a
    config defines as a callable worth the name; builtins' own names are known."""
    if not module or registered in ("", name, "function") or ">" in registered:
        return False
    return module != "builtins" or registered in _BUILTIN_NAMES


def _legacy_functions(obj: dict[str, Any], path: str, layer: str, found: _Found) -> None:
    """tf.keras 2 Lambda layers: `function` with `function_type` lambda (bytecode) or function (a name)."""
    for key, kind in obj.items():
        if not key.endswith("_type") or kind not in ("lambda", "function"):
            continue
        base = key[: -len("_type")]
        if base not in obj:
            continue
        if kind == "lambda":
            _lambda(obj[base], "keras2", _join(path, base), layer, found)
        elif isinstance(obj[base], str):
            module_key = "module" if base == "function" else f"{base}_module"
            module = obj.get(module_key) if isinstance(obj.get(module_key), str) else ""
            name = obj[base]
            callable_ = f"{module}.{name}" if module else name
            found.reference(callable_[:_KEEP], "function", "", module=str(module)[:_KEEP], name=name[:_KEEP],
                            layer=layer, field=_join(path, base))  # fmt: skip


def _lambda(code: Any, form: str, path: str, layer: str, found: _Found) -> None:
    """Marshalled bytecode: its size and the identifiers and strings it holds, for the reviewer."""
    if isinstance(code, dict) and code.get("class_name") == "__tuple__":
        code = code.get("items")  # the same tuple as tf_keras' legacy JSON encoder writes it
    if isinstance(code, list | tuple) and code:
        code = code[0]  # python_utils.func_dump's (code, defaults, closure)
    raw = _decode(code) if isinstance(code, str) else b""
    found.add("keras.lambda", layer=layer, field=path, format=form, size=len(raw), names=bytecode_names(raw))


def _decode(code: str) -> bytes:
    """Base64 as Keras' func_load reads it, falling back to the raw text as it does."""
    try:
        return binascii.a2b_base64(code.encode("ascii"))
    except (UnicodeEncodeError, binascii.Error, ValueError):
        return code.encode("utf-8", "replace")


def bytecode_names(raw: bytes) -> str:
    """Identifier-like runs in marshalled code (names, attribute names, string constants), in order."""
    seen: dict[str, None] = {}
    for match in _IDENTIFIER.finditer(raw):
        seen.setdefault(match.group().decode("ascii"), None)
        if len(seen) >= 40:
            break
    return ", ".join(seen)[:_KEEP]
