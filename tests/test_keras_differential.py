"""Loader differential for Keras: whatever `keras.saving.load_model(path, safe_mode=False)` would run, wscan must
have inspected.

A builder subprocess saves real models with Keras (functional, Sequential, nested, TimeDistributed, compiled, and
a legacy HDF5 file when h5py is importable); each case swaps the bytecode of their `__lambda__` objects for a plain
function that creates a marker folder (os.mkdir, harmless) and returns its input, and damages the zip, the
config.json text, the config's structure or the file name one way. The real loader runs in a forked child of a
fresh, isolated interpreter (KERAS_BACKEND=torch, stripped environment, temporary cwd, timeout); if the marker
appears, wscan must report a critical Keras finding for the file, and if Keras refuses the file wscan must still
report it at high or above.

Bypasses this found, all fixed: Keras reads config.json with json.loads(bytes), which decodes UTF-8 with a BOM,
UTF-16 and UTF-32 and skips any amount of leading whitespace, while wscan took a member for a config only if its
first 64 KiB, stripped, started with "{" (config-bom, config-utf16*, config-utf32, config-whitespace-64k); outside
the archive layout it also wanted unescaped "class_name" and "module" keys in those 64 KiB
(config-escaped-keys-config-only, config-inner-whitespace-64k-config-only); zipfile cuts a member name at its first
NUL, so "config.json\x00.txt" is config.json to Keras and was not to wscan (member-name-nul-suffix). Configs Keras
refuses and wscan reported below high: one nested past json's recursion limit (now WS-KERAS-020, high), a BOM
before a legacy model_config attribute or a folder's config.json (now read as json.loads reads bytes). Review 23:
a config.json whose top level is a list or a plain dict (deserialize_keras_object rebuilds the objects inside
before load_model fails on the result) was not walked (top-*, folder-top-list), and the pickle a
TorchModuleWrapper's `module` carries for torch.load was never read (torch-module-pickle: now scanned as a
pickle, so its finding is WS-PKL-, not WS-KERAS-).
"""

from __future__ import annotations

import base64
import io
import json
import marshal
import subprocess
import sys
import types
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.sandbox import Outcome, load_each
from tests.helpers.scanning import rule_ids, scan
from tests.test_loader_differential import Entry, build_zip
from wscan.model import Severity

try:
    import h5py
except ImportError:  # the legacy HDF5 cases need h5py to rewrite the model_config attribute
    h5py = None

LOAD_TIMEOUT = 180.0
CONFIG = "config.json"

# --- the payload ------------------------------------------------------------------------------------------

# Keras writes bytecode only for a Python lambda (a named function is saved as a reference to its module), but
# it rebuilds any marshalled code object it finds under `__lambda__`: a plain function's code serves as well.
PAYLOAD_SOURCE = """
def payload(x):
    import os
    if not os.path.isdir({marker!r}):
        os.mkdir({marker!r})
    return x
"""


def payload_code(marker: Path) -> str:
    """Base64 marshalled code of `payload`, taken from the compiled module's constants (nothing is run here)."""
    module = compile(PAYLOAD_SOURCE.format(marker=str(marker)), "<payload>", "exec")
    code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    return base64.b64encode(marshal.dumps(code)).decode()


# --- the real models, saved by Keras ------------------------------------------------------------------------

BUILDER = r"""
import os, sys, warnings
warnings.simplefilter("ignore")
import keras
from keras import layers

def functional():
    x = keras.Input(shape=(4,), name="x")
    return keras.Model(x, layers.Dense(2, name="dense")(layers.Lambda(lambda t: t, name="payload")(x)), name="model")

def benign():
    x = keras.Input(shape=(4,), name="x")
    return keras.Model(x, layers.Dense(2, name="dense")(x), name="model")

def sequential():
    return keras.Sequential(
        [keras.Input(shape=(4,)), layers.Lambda(lambda t: t, name="payload"), layers.Dense(2, name="dense")],
        name="model")

def nested_functional():
    x = keras.Input(shape=(4,), name="x")
    inner = functional()
    return keras.Model(x, layers.Dense(2, name="head")(inner(x)), name="outer")

def nested_sequential():
    x = keras.Input(shape=(4,), name="x")
    inner = keras.Sequential([layers.Lambda(lambda t: t, name="payload"), layers.Dense(2, name="dense")], name="inner")
    return keras.Model(x, inner(x), name="outer")

def time_distributed():
    x = keras.Input(shape=(3, 4), name="x")
    wrapped = layers.TimeDistributed(layers.Lambda(lambda t: t, name="payload"), name="td")(x)
    return keras.Model(x, layers.Dense(2, name="dense")(wrapped), name="model")

def output_shape():
    x = keras.Input(shape=(4,), name="x")
    shaped = layers.Lambda(lambda t: t, output_shape=lambda s: s, name="payload")(x)
    return keras.Model(x, layers.Dense(2, name="dense")(shaped), name="model")

def compile_loss():
    model = benign()
    model.compile(optimizer="adam", loss=lambda y, p: (y - p) ** 2)
    return model

def compile_learning_rate():
    model = benign()
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=lambda: 0.001), loss="mse")
    return model

def torch_wrapper():
    import torch
    return keras.Sequential(
        [keras.Input(shape=(2,)), layers.TorchModuleWrapper(torch.nn.Linear(2, 2), name="tw")], name="model")

out = sys.argv[1]
for build in (functional, benign, sequential, nested_functional, nested_sequential, time_distributed,
              output_shape, compile_loss, compile_learning_rate, torch_wrapper):
    build().save(os.path.join(out, build.__name__ + ".keras"))
try:
    import h5py
except ImportError:
    pass
else:
    functional().save(os.path.join(out, "functional.h5"))
"""


@dataclass(frozen=True)
class Templates:
    """Members of each model Keras saved, in Keras' order, and the legacy HDF5 file (None without h5py)."""

    models: dict[str, list[tuple[str, bytes]]]
    h5: bytes | None


ISOLATED_ENV = {"PATH": "/usr/bin:/bin", "KERAS_BACKEND": "torch", "OMP_NUM_THREADS": "1"}


def run_isolated(name: str, script: str, workdir: Path, args: tuple[str, ...] = (), stdin: str = "") -> str:
    """`script` in a fresh interpreter: no inherited environment, cwd and HOME a temp dir. It runs from a file,
    since saving a model reads the source of its lambdas."""
    path = workdir / f"{name}.py"
    path.write_text(script)
    proc = subprocess.run(
        [sys.executable, "-I", str(path), *args], input=stdin, capture_output=True, text=True, cwd=workdir,
        env={**ISOLATED_ENV, "HOME": str(workdir)}, timeout=LOAD_TIMEOUT, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def build_templates(folder: Path, workdir: Path) -> Templates:
    run_isolated("build_models", BUILDER, workdir, (str(folder),))
    models = {}
    for path in sorted(folder.glob("*.keras")):
        with zipfile.ZipFile(path) as archive:
            models[path.stem] = [(info.filename, archive.read(info)) for info in archive.infolist()]
    h5 = folder / "functional.h5"
    return Templates(models, h5.read_bytes() if h5.exists() and h5py is not None else None)


# --- configs: the payload in, and the text spelled one way or another --------------------------------------

JsonDict = dict[str, Any]
Edit = Callable[[JsonDict, str], None]  # changes a parsed config in place; gets the payload code


def template_config(t: Templates, model: str) -> JsonDict:
    config: JsonDict = json.loads(dict(t.models[model])[CONFIG])
    return config


def lambdas(value: Any, key: str = "") -> list[tuple[str, JsonDict]]:
    """Every `__lambda__` object in a config, with the key that holds it."""
    found: list[tuple[str, JsonDict]] = []
    if isinstance(value, dict):
        if value.get("class_name") == "__lambda__":
            found.append((key, value))
        for k, v in value.items():
            found.extend(lambdas(v, k))
    elif isinstance(value, list):
        for v in value:
            found.extend(lambdas(v, key))
    return found


def arm(config: JsonDict, code: str, keys: tuple[str, ...] | None = None) -> JsonDict:
    """Put the payload into every `__lambda__` (or those held by `keys`), in the form Keras wrote there."""
    for key, obj in lambdas(config):
        if keys is not None and key not in keys:
            continue
        inner = obj["config"]
        if "code" in inner:
            inner["code"] = code
        else:  # serialize_keras_object's form: value = [code, defaults, closure]
            inner["value"] = [code, *inner["value"][1:]]
    return config


def lambda_layer(config: JsonDict) -> JsonDict:
    layer: JsonDict = next(x for x in config["config"]["layers"] if x["class_name"] == "Lambda")
    return layer


BENIGN_FUNCTION = {"module": "keras.activations", "class_name": "function", "config": "linear", "registered_name": None}


def hostile(t: Templates, marker: Path, model: str = "functional", edit: Edit | None = None, **arming: Any) -> JsonDict:
    code = payload_code(marker)
    config = arm(template_config(t, model), code, **arming)
    if edit is not None:
        edit(config, code)
    return config


def text(config: JsonDict) -> bytes:
    """A config as Keras writes it (json.dumps, default separators)."""
    return json.dumps(config).encode()


def escaped_keys(raw: bytes) -> bytes:
    """The keys a reader could sniff for, written with a JSON escape: the same object for any JSON parser."""
    for key, spelled in ((b"class_name", b"class\\u005fname"), (b"module", b"\\u006dodule"),
                         (b"registered_name", b"registered\\u005fname")):  # fmt: skip
        raw = raw.replace(b'"%s":' % key, b'"%s":' % spelled)
    return raw


def reordered(value: Any) -> Any:
    """Every object's keys in reverse order."""
    if isinstance(value, dict):
        return {k: reordered(v) for k, v in reversed(value.items())}
    if isinstance(value, list):
        return [reordered(v) for v in value]
    return value


def duplicate_function_key(config: JsonDict, hostile_last: bool) -> bytes:
    """The Lambda's `function` key twice: the payload and keras.activations.linear (Python's json keeps the last)."""
    layer = lambda_layer(config)
    payload = layer["config"]["function"]
    layer["config"]["function"] = "@@function@@"
    pair = [json.dumps(BENIGN_FUNCTION), json.dumps(payload)]
    first, last = pair if hostile_last else pair[::-1]
    return text(config).replace(b'"function": "@@function@@"', f'"function": {first}, "function": {last}'.encode())


def nested_deeply(config: JsonDict, depth: int = 3000) -> bytes:
    """The Lambda's `arguments` nested deeper than Python's json recursion limit."""
    lambda_layer(config)["config"]["arguments"] = "@@deep@@"
    return text(config).replace(b'"@@deep@@"', b"[" * depth + b"]" * depth)


# --- zips ---------------------------------------------------------------------------------------------------


def entries(t: Templates, config: bytes, model: str = "functional", **changes: Any) -> list[Entry]:
    """The saved model's members with config.json replaced by `config` and changed by `changes` (Entry fields)."""
    return [Entry(name, config, **changes) if name == CONFIG else Entry(name, data) for name, data in t.models[model]]


Make = Callable[[Templates, Path], bytes | dict[str, bytes]]


def keras_zip(
    model: str = "functional",
    edit: Edit | None = None,
    spell: Callable[[bytes], bytes] = lambda raw: raw,
    keys: tuple[str, ...] | None = None,
    **changes: Any,
) -> Make:
    """The saved model, armed, its config edited and spelled, config.json changed by `changes`."""

    def make(t: Templates, marker: Path) -> bytes:
        config = spell(text(hostile(t, marker, model, edit, keys=keys)))
        return build_zip(entries(t, config, model, **changes))

    return make


def config_text(spelled: Callable[[JsonDict], bytes], model: str = "functional", only: bool = False) -> Make:
    """config.json as `spelled` writes the armed config; `only`: the zip holds config.json alone."""

    def make(t: Templates, marker: Path) -> bytes:
        config = spelled(hostile(t, marker, model))
        return build_zip([Entry(CONFIG, config)] if only else entries(t, config, model))

    return make


def duplicate_member(hostile_first: bool) -> Make:
    """Two config.json members, the armed one and the benign model's (zipfile.open takes the last listed)."""

    def make(t: Templates, marker: Path) -> bytes:
        members = entries(t, text(hostile(t, marker)))
        i = next(i for i, e in enumerate(members) if e.name == CONFIG)
        benign = replace(members[i], data=dict(t.models["benign"])[CONFIG])
        pair = [members[i], benign] if hostile_first else [benign, members[i]]
        return build_zip(members[:i] + pair + members[i + 1 :])

    return make


def torch_module(t: Templates, marker: Path) -> bytes:
    """The TorchModuleWrapper's module (base64 of a torch.save file, for torch.load(weights_only=False)) replaced by
    a plain pickle that calls os.mkdir: torch.load's legacy reader unpickles it first thing."""
    config = template_config(t, "torch_wrapper")
    wrapper = next(x for x in config["config"]["layers"] if x["class_name"] == "TorchModuleWrapper")
    pickled = b"cos\nmkdir\n(V" + str(marker).encode() + b"\ntR."
    wrapper["config"]["module"] = base64.b64encode(pickled).decode()
    return build_zip(entries(t, text(config), "torch_wrapper"))


def crc(local: bool, central: bool) -> Make:
    def make(t: Templates, marker: Path) -> bytes:
        config = text(hostile(t, marker))
        changes = {"crc_local": 1} if local else {}
        changes |= {"crc_central": 1} if central else {}
        return build_zip(entries(t, config, **changes))

    return make


def wrapped(make: Make, prefix: bytes = b"", adjust: bool = True, suffix: bytes = b"", comment: bytes = b"") -> Make:
    """Bytes before (offsets counting them or not), after, or as the end record's comment."""

    def remake(t: Templates, marker: Path) -> bytes:
        blob = make(t, marker)
        assert isinstance(blob, bytes)
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            members = [Entry(info.filename, archive.read(info)) for info in archive.infolist()]
        return build_zip(members, prefix, adjust, comment) + suffix

    return remake


def renamed(name: str) -> Make:
    """config.json stored under another name (central and local header agree)."""

    def make(t: Templates, marker: Path) -> bytes:
        return build_zip(
            [replace(e, name=name) if e.name == CONFIG else e for e in entries(t, text(hostile(t, marker)))]
        )

    return make


def folder(spell: Callable[[bytes], bytes] = lambda raw: raw) -> Make:
    """The model as a directory (Keras loads a folder holding config.json), config.json spelled by `spell`."""

    def make(t: Templates, marker: Path) -> dict[str, bytes]:
        members = dict(t.models["functional"])
        members[CONFIG] = spell(text(hostile(t, marker)))
        return members

    return make


# --- config edits -------------------------------------------------------------------------------------------


DROP = object()


def set_lambda(**fields: Any) -> Edit:
    """Set fields of the Lambda layer's object (DROP deletes one)."""

    def edit(config: JsonDict, code: str) -> None:
        layer = lambda_layer(config)
        for key, value in fields.items():
            if value is DROP:
                layer.pop(key, None)
            else:
                layer[key] = value

    return edit


def function_as(form: str) -> Edit:
    """The Lambda's function written in another form Keras' func_load may read."""

    def edit(config: JsonDict, code: str) -> None:
        function = lambda_layer(config)["config"]["function"]
        if form == "value":  # serialize_keras_object's spelling, not Lambda.from_config's
            function["config"] = {"value": [code, None, None]}
        elif form == "code-list":  # python_utils.func_dump's (code, defaults, closure) as the code
            function["config"]["code"] = [code, None, None]
        elif form == "raw":  # marshal bytes as text: func_load falls back to raw_unicode_escape
            function["config"]["code"] = base64.b64decode(code).decode("latin-1")

    return edit


def in_activation(config: JsonDict, code: str) -> None:
    """The benign model's Dense activation as a `__lambda__`: activations.get rebuilds it, but Dense infers its
    output shape without calling it, so it first runs on a real prediction, after load_model returned."""
    dense = next(x for x in config["config"]["layers"] if x["class_name"] == "Dense")
    dense["config"]["activation"] = {"class_name": "__lambda__", "config": {"value": [code, None, None]}}


def in_build_config(config: JsonDict, code: str) -> None:
    """A `__lambda__` among the benign Dense layer's build_config (Keras passes only input_shape to build)."""
    dense = next(x for x in config["config"]["layers"] if x["class_name"] == "Dense")
    dense["build_config"]["payload"] = {"class_name": "__lambda__", "config": {"value": [code, None, None]}}


def learning_rate_default(config: JsonDict, code: str) -> None:
    """The learning rate callable is called with no argument: give the payload's x a default."""
    learning_rate = config["compile_config"]["optimizer"]["config"]["learning_rate"]
    learning_rate["config"]["value"] = [code, [0.001], None]


# --- legacy HDF5 --------------------------------------------------------------------------------------------


def legacy_h5(prefix: bytes = b"", spell: Callable[[str], str] = lambda raw: raw) -> Make:
    """Keras' own legacy .h5 save with the payload in its model_config attribute."""

    def make(t: Templates, marker: Path) -> bytes:
        assert t.h5 is not None and h5py is not None
        buffer = io.BytesIO(t.h5)
        with h5py.File(buffer, "r+") as handle:
            config = arm(json.loads(handle.attrs["model_config"]), payload_code(marker))
            handle.attrs["model_config"] = spell(json.dumps(config))
        return prefix + buffer.getvalue()

    return make


# --- the cases ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    make: Make
    suffix: str = ".keras"
    rules: str = "WS-KERAS-"  # the critical finding a run payload must have: its Lambda, or a pickle it carries


def utf(codec: str) -> Callable[[JsonDict], bytes]:
    return lambda config: json.dumps(config).encode(codec)


CASES: dict[str, Case] = {
    "control": Case(keras_zip()),
    # zip damage (the damaged member is config.json)
    "crc-local": Case(crc(local=True, central=False)),
    "crc-central": Case(crc(local=False, central=True)),
    "crc-both": Case(crc(local=True, central=True)),
    "name-mismatch-local": Case(keras_zip(local_name="config.jsox")),
    "duplicate-config-hostile-last": Case(duplicate_member(hostile_first=False)),
    "duplicate-config-hostile-first": Case(duplicate_member(hostile_first=True)),
    "data-descriptor": Case(keras_zip(descriptor=True)),
    "data-descriptor-deflated": Case(keras_zip(descriptor=True, method=zipfile.ZIP_DEFLATED)),
    "deflated": Case(keras_zip(method=zipfile.ZIP_DEFLATED)),
    "bzip2": Case(keras_zip(method=zipfile.ZIP_BZIP2)),
    "zip64-extra": Case(keras_zip(zip64=True)),
    "flag-encrypted": Case(keras_zip(flags=0x1)),
    "flag-encrypted-local-only": Case(keras_zip(local_flags=0x1)),
    "prepended-junk-adjusted": Case(wrapped(keras_zip(), prefix=b"JUNK" * 16, adjust=True)),
    "prepended-junk-unadjusted": Case(wrapped(keras_zip(), prefix=b"JUNK" * 16, adjust=False)),
    "trailing-bytes": Case(wrapped(keras_zip(), suffix=b"\0" * 64)),
    "comment": Case(wrapped(keras_zip(), comment=b"trailing comment " * 4)),
    "member-name-nul-suffix": Case(renamed("config.json\x00.txt")),
    "member-name-dot-slash": Case(renamed("./config.json")),
    "config-only": Case(config_text(text, only=True)),
    # file names: load_model picks the reader by suffix, then checks the content
    "suffix-zip": Case(keras_zip(), ".zip"),
    "suffix-h5": Case(keras_zip(), ".h5"),
    "suffix-none": Case(keras_zip(), ""),
    "suffix-upper": Case(keras_zip(), ".KERAS"),
    "folder": Case(folder(), ""),
    "folder-named-keras": Case(folder(), ".keras"),
    "folder-config-bom": Case(folder(lambda raw: b"\xef\xbb\xbf" + raw), ""),
    # config.json text: json.loads(bytes) detects UTF-8 with BOM, UTF-16 and UTF-32 by itself
    "config-whitespace": Case(keras_zip(spell=lambda raw: b" \r\n\t" + raw + b"\n\n")),
    "config-whitespace-64k": Case(keras_zip(spell=lambda raw: b" " * 70_000 + raw)),
    "config-inner-whitespace-64k-config-only": Case(
        config_text(lambda c: b"{" + b" " * 70_000 + text(c)[1:], only=True)
    ),
    "config-bom": Case(keras_zip(spell=lambda raw: b"\xef\xbb\xbf" + raw)),
    "config-utf16": Case(config_text(utf("utf-16"))),
    "config-utf16-le": Case(config_text(utf("utf-16-le"))),
    "config-utf32": Case(config_text(utf("utf-32"))),
    "config-not-utf8": Case(keras_zip(spell=lambda raw: raw.replace(b'"name": "model"', b'"name": "mod\xffel"'))),
    "config-escaped-keys": Case(keras_zip(spell=escaped_keys)),
    "config-escaped-keys-config-only": Case(config_text(lambda c: escaped_keys(text(c)), only=True)),
    "config-keys-reordered": Case(config_text(lambda c: text(reordered(c)))),
    "config-duplicate-key-hostile-last": Case(config_text(lambda c: duplicate_function_key(c, hostile_last=True))),
    "config-duplicate-key-hostile-first": Case(config_text(lambda c: duplicate_function_key(c, hostile_last=False))),
    "config-nested-too-deep": Case(config_text(nested_deeply)),
    # the top level is no Keras object: deserialize_keras_object rebuilds the objects in a list or plain dict first
    "top-list": Case(config_text(lambda c: json.dumps([c]).encode())),
    "top-plain-dict": Case(config_text(lambda c: json.dumps({"model": c}).encode())),
    "top-list-config-only": Case(config_text(lambda c: json.dumps([c]).encode(), only=True)),
    "top-plain-dict-config-only": Case(config_text(lambda c: json.dumps({"model": [c]}).encode(), only=True)),
    "folder-top-list": Case(folder(lambda raw: b"[" + raw + b"]"), ""),
    # what a layer carries: TorchModuleWrapper's module goes to torch.load(weights_only=False)
    "torch-module-pickle": Case(torch_module, rules="WS-PKL-"),
    # where the payload sits in the model
    "sequential": Case(keras_zip("sequential")),
    "nested-functional": Case(keras_zip("nested_functional")),
    "nested-sequential": Case(keras_zip("nested_sequential")),
    "time-distributed": Case(keras_zip("time_distributed")),
    "lambda-output-shape": Case(keras_zip("output_shape", keys=("output_shape",))),
    "dense-activation": Case(keras_zip("benign", edit=in_activation)),
    "build-config": Case(keras_zip("benign", edit=in_build_config)),
    "compile-config-loss": Case(keras_zip("compile_loss")),
    "compile-config-learning-rate": Case(keras_zip("compile_learning_rate", edit=learning_rate_default)),
    # how the Lambda layer and its function are spelled
    "module-keras-src-path": Case(keras_zip(edit=set_lambda(module="keras.src.layers.core.lambda_layer"))),
    "module-keras-src-layers": Case(keras_zip(edit=set_lambda(module="keras.src.layers"))),
    "module-keras": Case(keras_zip(edit=set_lambda(module="keras"))),
    "module-tf-keras": Case(keras_zip(edit=set_lambda(module="tensorflow.keras.layers"))),
    "module-missing": Case(keras_zip(edit=set_lambda(module=DROP, registered_name=DROP))),
    "registered-name-same": Case(keras_zip(edit=set_lambda(registered_name="Lambda"))),
    "registered-name-custom": Case(keras_zip(edit=set_lambda(registered_name="custom>Lambda"))),
    "class-name-lowercase": Case(keras_zip(edit=set_lambda(class_name="lambda"))),
    "function-value-form": Case(keras_zip(edit=function_as("value"))),
    "function-code-list": Case(keras_zip(edit=function_as("code-list"))),
    "function-code-raw-bytes": Case(keras_zip(edit=function_as("raw"))),
}

if h5py is not None:
    CASES |= {
        "h5": Case(legacy_h5(), ".h5"),
        "h5-suffix-hdf5": Case(legacy_h5(), ".hdf5"),
        "h5-suffix-keras": Case(legacy_h5(), ".keras"),
        "h5-suffix-none": Case(legacy_h5(), ""),
        "h5-userblock-512": Case(legacy_h5(prefix=b"\0" * 512), ".h5"),
        "h5-config-bom": Case(legacy_h5(spell=lambda raw: "\ufeff" + raw), ".h5"),
    }

# What Keras 3.15 does with each case (a tripwire for loader upgrades; the safety assertion never depends on it).
# Not run: zipfile checks the CRC in the central directory (not the local one), the local header's name and the
# central encryption bit, and looks members up by exact name; load_model takes a zip only when the name ends in
# ".keras" (case-sensitive) and refuses a folder so named; a folder's config.json is read as text, whose BOM json
# refuses, as it does in a legacy model_config attribute; a lambda activation, loss or learning rate and anything
# in build_config is not called while loading; and Keras refuses modules it cannot resolve to the Lambda class, a
# foreign registered name and the `value` spelling inside a Lambda layer.
EXPECTED_EXECUTES = set(CASES) - {
    "crc-central", "crc-both", "name-mismatch-local", "duplicate-config-hostile-first", "flag-encrypted",
    "member-name-dot-slash", "suffix-zip", "suffix-h5", "suffix-none", "suffix-upper", "folder-named-keras",
    "folder-config-bom", "config-not-utf8", "config-duplicate-key-hostile-first", "config-nested-too-deep",
    "dense-activation", "build-config", "compile-config-loss", "compile-config-learning-rate", "module-keras",
    "module-tf-keras", "registered-name-custom", "class-name-lowercase", "function-value-form", "h5-suffix-keras",
    "h5-suffix-none", "h5-config-bom",
}  # fmt: skip

# --- the real loader, sandboxed -----------------------------------------------------------------------------

KERAS_LOAD = "import keras\ndef load(path, _):\n    keras.saving.load_model(path, safe_mode=False)\n"


def write_case(path: Path, made: bytes | dict[str, bytes]) -> None:
    if isinstance(made, bytes):
        path.write_bytes(made)
        return
    path.mkdir()
    for name, data in made.items():
        (path / name).write_bytes(data)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Outcome]]:
    """Every case written to a file (or folder) and loaded by Keras, each with its own marker."""
    root = tmp_path_factory.mktemp("keras")
    for name in ("templates", "files", "markers", "cwd"):
        (root / name).mkdir()
    templates = build_templates(root / "templates", root / "cwd")
    files, jobs = {}, []
    for name, case in CASES.items():
        marker = root / "markers" / name
        files[name] = root / "files" / f"{name}{case.suffix}"
        write_case(files[name], case.make(templates, marker))
        jobs.append((name, files[name], None, marker))
    outcomes = load_each(KERAS_LOAD, jobs, root / "cwd", LOAD_TIMEOUT, env={"KERAS_BACKEND": "torch"})
    return {name: (files[name], outcomes[name]) for name in CASES}


@pytest.mark.parametrize("case", list(CASES))
def test_wscan_inspects_what_keras_runs(loaded: dict[str, tuple[Path, Outcome]], case: str) -> None:
    """load_model ran the payload => a critical Keras finding; Keras refused the file => a HIGH finding (fail
    closed); Keras loaded it without running the payload => still not clean, since a payload sits in the file."""
    path, outcome = loaded[case]
    report = scan(path)
    ids = rule_ids(report)
    worst = max((f.severity for f in report.findings), default=Severity.INFO)
    critical = {f.rule_id for f in report.findings if f.severity >= Severity.CRITICAL}
    if outcome.executed:
        rules = CASES[case].rules
        assert any(i.startswith(rules) for i in critical), f"bypass: Keras ran {case}; wscan: {sorted(ids)}"
    elif not outcome.loaded:
        assert worst >= Severity.HIGH, f"{case}: Keras refused it ({outcome.result}); wscan: {sorted(ids)}"
    else:
        assert worst >= Severity.MEDIUM, f"{case}: the file hides a payload; wscan: {sorted(ids)}"


def test_keras_behaviour_matches_expectations(loaded: dict[str, tuple[Path, Outcome]]) -> None:
    """Which cases Keras runs: a loader upgrade that changes this should be looked at."""
    executed = {name for name, (_, outcome) in loaded.items() if outcome.executed}
    summary = "\n".join(f"{name}: {int(o.executed)} {o.result[:100]}" for name, (_, o) in loaded.items())
    assert executed == EXPECTED_EXECUTES, summary
