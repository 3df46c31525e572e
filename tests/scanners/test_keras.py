"""Keras scanner: models written by real Keras 3 (torch backend) are clean, one hand-crafted file per rule trips
exactly that rule, libhdf5 hangs and crashes end in findings, and damaged files never raise or hang.

Keras is a test-only dependency and is required: these tests fail, rather than skip, without it. Nothing
here calls a payload: the bytecode payload is a function that is defined, marshalled and never called.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import marshal
import os
import re
import shutil
import struct
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "torch")

import h5py
import keras
import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.scanning import default_engine, rule_ids, scan
from wscan.config import Config
from wscan.limits import Budget, Limits
from wscan.model import Location, Observation, Severity
from wscan.rules import builtin_rules_dir
from wscan.rules.loader import load_pack
from wscan.scanners import hdf5_probe
from wscan.scanners import keras as keras_scanner
from wscan.scanners.base import NOT_MINE_KIND, Artifact, Head, ScanContext
from wscan.scanners.hdf5_probe import ProbeFailure
from wscan.scanners.keras import KerasScanner, hdf5_offset
from wscan.scanners.keras_config import MAX_ISSUES, bytecode_names, check_config

# --- builders (real Keras for benign files; hostile ones are a real file with its config edited) -----------


def _functional(compiled: bool) -> Any:
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 3, kernel_regularizer=keras.regularizers.L2(1e-4))(inputs)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dropout(0.1)(x)
    a = keras.layers.Dense(8, activation="relu", kernel_constraint=keras.constraints.MaxNorm(2.0))(x)
    b = keras.layers.Dense(8, activation=keras.activations.gelu)(x)
    x = keras.layers.Concatenate()([a, b])
    x = keras.layers.LayerNormalization()(x)
    outputs = keras.layers.Dense(2, activation="softmax")(x)
    model = keras.Model(inputs, outputs)
    if compiled:
        schedule = keras.optimizers.schedules.ExponentialDecay(1e-3, 100, 0.9)
        model.compile(optimizer=keras.optimizers.Adam(schedule), loss=keras.losses.CategoricalCrossentropy(),
                      metrics=["accuracy", keras.metrics.AUC()])  # fmt: skip
    return model


def _sequential(compiled: bool) -> Any:
    model = keras.Sequential([
        keras.Input((12,), dtype="int32"),
        keras.layers.Embedding(50, 8),
        keras.layers.LSTM(8, return_sequences=True),
        keras.layers.GRU(4),
        keras.layers.Dense(3, activation="tanh"),
        keras.layers.Dense(1),
    ])  # fmt: skip
    if compiled:
        model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    return model


def _attention() -> Any:
    inputs = keras.Input((5, 8))
    x = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(inputs, inputs)
    x = keras.layers.Add()([x, inputs])
    x = keras.layers.GlobalAveragePooling1D()(x)
    model = keras.Model(inputs, keras.layers.Dense(2)(x))
    model.compile(optimizer=keras.optimizers.AdamW(), loss=keras.losses.MeanSquaredError())
    return model


def benign_keras_file(path: Path, kind: str = "functional", compiled: bool = True) -> Path:
    """A .keras archive saved by real Keras 3: functional (Conv2D, BatchNormalization, Dropout, Dense, ...),
    sequential (Embedding, LSTM, GRU, Dense) or attention (MultiHeadAttention, Add, pooling)."""
    model = {"functional": lambda: _functional(compiled), "sequential": lambda: _sequential(compiled),
             "attention": _attention}[kind]()  # fmt: skip
    model.save(path)
    return path


def benign_h5_file(path: Path, kind: str = "functional", compiled: bool = True) -> Path:
    """A legacy HDF5 model saved by real Keras 3 (model_config and training_config root attributes)."""
    return benign_keras_file(path.with_suffix(".h5"), kind, compiled)


def _payload(x: Any) -> Any:
    """Never called: only its code object is marshalled, as Keras' func_dump does for a Lambda layer."""
    return __import__("os").system("id")


def payload_bytecode() -> str:
    # A fixed file name and line: marshalled code records where it was compiled, which moves between checkouts
    # and edits of this file.
    code = _payload.__code__.replace(co_filename="wscan-payload.py", co_firstlineno=1)
    return base64.b64encode(marshal.dumps(code)).decode("ascii")


def _lambda_layer(name: str = "pwn") -> dict[str, Any]:
    """A Keras 3 Lambda layer whose function is marshalled bytecode (CVE-2024-3660 shape)."""
    return {
        "module": "keras.layers", "class_name": "Lambda", "registered_name": None,
        "config": {"name": name, "trainable": True, "arguments": {},
                   "function": {"class_name": "__lambda__",
                                "config": {"code": payload_bytecode(), "defaults": None, "closure": None}}},
        "build_config": {"input_shape": [None, 4]},
    }  # fmt: skip


def _function_layer(module: str, function: str, name: str = "call") -> dict[str, Any]:
    """A Lambda layer whose function is a reference by module and name (CVE-2025-8747/9906 shape)."""
    return {
        "module": "keras.layers", "class_name": "Lambda", "registered_name": None,
        "config": {"name": name, "arguments": {"safe_mode": False},
                   "function": {"module": module, "class_name": "function", "config": function,
                                "registered_name": "function"}},
    }  # fmt: skip


def cve_2025_1550_layer() -> dict[str, Any]:
    """A model "layer" that is os.system itself, called with the inbound node's arguments (CVE-2025-1550)."""
    return {"module": "os", "class_name": "function", "config": "system", "registered_name": None,
            "name": "pwn", "inbound_nodes": [{"args": ["id"], "kwargs": {}}]}  # fmt: skip


@cache
def _sequential_archive() -> tuple[dict[str, Any], bytes, bytes]:
    """config.json, metadata.json and model.weights.h5 of a small Sequential model saved by Keras."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1)])
    with tempfile.TemporaryDirectory() as folder:
        model.save(Path(folder) / "base.keras")
        with zipfile.ZipFile(Path(folder) / "base.keras") as archive:
            return (json.loads(archive.read("config.json")), archive.read("metadata.json"),
                    archive.read("model.weights.h5"))  # fmt: skip


Edit = Callable[[dict[str, Any]], None]


def keras_with_layers(path: Path, *layers: dict[str, Any], edit: Edit | None = None) -> Path:
    """A .keras archive of a real Sequential model with `layers` appended to its config.json."""
    config, metadata, weights = _sequential_archive()
    config = copy.deepcopy(config)
    config["config"]["layers"].extend(layers)
    if edit is not None:
        edit(config)
    return write_keras(path, config, metadata, weights)


def write_keras(path: Path, config: dict[str, Any], metadata: bytes | str, weights: bytes) -> Path:
    """A .keras archive of these three members, as Keras writes them."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("metadata.json", metadata)
        archive.writestr("config.json", json.dumps(config))
        archive.writestr("model.weights.h5", weights)
    return path


def lambda_keras_file(path: Path) -> Path:
    """Hostile .keras: a Lambda layer carrying bytecode."""
    return keras_with_layers(path, _lambda_layer())


def cve_2025_1550_keras_file(path: Path) -> Path:
    """Hostile .keras: config.json names os.system as a layer (CVE-2025-1550)."""
    return keras_with_layers(path, cve_2025_1550_layer())


def h5_with_config(path: Path, edit: Edit) -> Path:
    """A legacy .h5 saved by real Keras with its model_config attribute edited."""
    benign_h5_file(path, "sequential", compiled=False)
    with h5py.File(path, "r+") as handle:
        # Fixed weights: LSTM and GRU draw theirs through a QR decomposition, whose last bits vary with the CPU, and
        # the corpus rebuilds this file byte for byte (tests/test_corpus.py).
        handle.visititems(_fill_fixed)
        config = json.loads(handle.attrs["model_config"])
        edit(config)
        handle.attrs["model_config"] = json.dumps(config)
    return path


def _fill_fixed(_name: str, item: object) -> None:
    if isinstance(item, h5py.Dataset) and item.dtype.kind == "f":
        item[...] = (numpy.arange(item.size, dtype=item.dtype).reshape(item.shape) % 13 - 6) / 10


def lambda_h5_file(path: Path) -> Path:
    """Hostile .h5: a Keras 2 style Lambda layer ([code, defaults, closure], function_type lambda)."""

    def add(config: dict[str, Any]) -> None:
        config["config"]["layers"].append({"class_name": "Lambda", "config": {
            "name": "pwn", "function": [payload_bytecode(), None, None], "function_type": "lambda",
            "module": "__main__", "output_shape": None, "output_shape_type": "raw", "arguments": {}}})  # fmt: skip

    return h5_with_config(path, add)


def h5_file(path: Path, fill: Callable[[Any], None]) -> Path:
    """A small HDF5 file written by h5py with one weight dataset, then `fill`."""
    with h5py.File(path, "w") as handle:
        handle.create_dataset("layers/dense/vars/0", data=[1.0, 2.0, 3.0, 4.0], dtype="f4")
        fill(handle)
    return path


# --- helpers ---------------------------------------------------------------------------------------------


def observe_json(blob: bytes, name: str = "model.json", container: str = "") -> list[Observation]:
    """The Keras scanner alone on a JSON blob."""
    context = {"container": container} if container else {}
    artifact = Artifact(Location(name), len(blob), lambda: io.BytesIO(blob), name=name, context=context)
    limits = Limits()
    return [o for o in KerasScanner().scan(artifact, ScanContext(limits, Budget(limits))) if isinstance(o, Observation)]


def head(blob: bytes, name: str, container: str = "") -> Head:
    return Head(blob[:65536], blob[-65558:], len(blob), name, container=container)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("keras")


@pytest.fixture(scope="module")
def benign(work: Path) -> list[Path]:
    files = []
    for kind in ("functional", "sequential", "attention"):
        for compiled in (True, False):
            if kind == "attention" and not compiled:
                continue
            files.append(benign_keras_file(work / f"{kind}-{compiled}.keras", kind, compiled))
            files.append(benign_h5_file(work / f"{kind}-{compiled}.h5", kind, compiled))
    return files


# --- benign files from real Keras ------------------------------------------------------------------------


def test_keras_is_the_version_the_allowlist_was_generated_from() -> None:
    text = (builtin_rules_dir() / "allow-keras.yaml").read_text(encoding="utf-8")
    assert f"Keras {keras.__version__}'s" in text


def test_real_files_have_no_findings(benign: list[Path]) -> None:
    report = default_engine().scan(benign)
    assert [(f.rule_id, f.location.describe(), f.message) for f in report.findings] == []
    assert {f.status for f in report.files} == {"scanned"}
    assert all("keras" in f.formats for f in report.files)


def test_every_object_in_real_configs_is_on_the_allowlist(benign: list[Path]) -> None:
    """Not just "no finding": every reference Keras wrote resolves to an allowlisted name."""
    allowed = set(load_pack(builtin_rules_dir() / "allow-keras.yaml")["lists"]["allowed-keras-objects"])
    for path in benign:
        if path.suffix == ".keras":
            with zipfile.ZipFile(path) as archive:
                configs = [json.loads(archive.read("config.json"))]
        else:
            with h5py.File(path) as handle:
                keys = [k for k in ("model_config", "training_config") if k in handle.attrs]
                configs = [json.loads(handle.attrs[k]) for k in keys]
        for config in configs:
            objects = [i.attrs for i in check_config(config, 10**6) if i.kind == "keras.object"]
            assert objects and {str(o["callable"]) for o in objects} <= allowed, path


def test_non_modeling_apis_of_keras_are_all_gadgets() -> None:
    from keras.src.saving.serialization_lib import NON_MODELING_APIS

    gadgets = load_pack(builtin_rules_dir() / "keras.yaml")["lists"]["keras-gadgets"]
    for name in NON_MODELING_APIS:
        parts = name.split(".")
        assert any(".".join(parts[:i]) in gadgets for i in range(1, len(parts) + 1)), name


# --- one hostile file per rule -----------------------------------------------------------------------------


def _duplicate_key(path: Path) -> Path:
    config, _, _ = _sequential_archive()
    text = json.dumps(config)
    path.write_text(text[:-1] + ', "class_name": "Sequential"}', encoding="utf-8")
    return path


def _nested_too_deep(path: Path) -> Path:
    """A config Python's json cannot read (RecursionError): nothing in it can be checked."""
    config, _, _ = _sequential_archive()
    text = json.dumps(config)
    path.write_text(text[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    return path


def _json_file(path: Path, top: dict[str, Any]) -> Path:
    path.write_text(json.dumps(top), encoding="utf-8")
    return path


def _dense_registered(config: dict[str, Any]) -> None:
    config["config"]["layers"][1]["registered_name"] = "evil>Dense"


def _dense_registered_as_gadget(config: dict[str, Any]) -> None:
    config["config"]["layers"][1]["registered_name"] = "keras_hub>upload_preset"


def _bare_custom(config: dict[str, Any]) -> None:
    config["config"]["layers"].append({"class_name": "MyAttention", "config": {"name": "att"}})


def _many_lambdas(path: Path) -> Path:
    return keras_with_layers(path, *[_lambda_layer(f"l{i}") for i in range(MAX_ISSUES + 5)])


def _virtual(path: Path) -> Path:
    source = path.with_name("source.h5")
    with h5py.File(source, "w") as handle:
        handle["data"] = [1.0, 2.0, 3.0, 4.0]
    layout = h5py.VirtualLayout(shape=(4,), dtype="f8")
    layout[:] = h5py.VirtualSource(str(source), "data", shape=(4,))
    return h5_file(path, lambda h: h.create_virtual_dataset("virtual", layout))


def _not_hdf5_inside(path: Path) -> Path:
    path.write_bytes(keras_scanner.HDF5_MAGIC + b"\xff" * 4096)
    return path


def _probe_fails(kind: str) -> Callable[..., ProbeFailure]:
    return lambda *args, **kwargs: ProbeFailure(kind, "stopped by the test")


# rule -> (builder of the file, file name, limits); the file must trip exactly that rule.
HOSTILE: dict[str, tuple[Callable[[Path], Path], str, Limits]] = {
    "WS-KERAS-001": (lambda_keras_file, "lambda.keras", Limits()),
    "WS-KERAS-002": (cve_2025_1550_keras_file, "cve-2025-1550.keras", Limits()),
    "WS-KERAS-003": (lambda p: keras_with_layers(p, _function_layer("keras.models", "load_model")), "9906.keras",
                     Limits()),
    "WS-KERAS-004": (lambda p: keras_with_layers(p, {"module": "mypkg.layers", "class_name": "Custom",
                                                     "config": {"name": "c"}, "registered_name": "mypkg>Custom"}),
                     "custom.keras", Limits()),
    "WS-KERAS-005": (lambda p: h5_with_config(p, _bare_custom), "custom.h5", Limits()),
    "WS-KERAS-006": (lambda p: keras_with_layers(p, edit=_dense_registered), "registered.keras", Limits()),
    "WS-KERAS-021": (lambda p: keras_with_layers(p, edit=_dense_registered_as_gadget), "registered-gadget.keras",
                     Limits()),
    "WS-KERAS-007": (lambda p: keras_with_layers(p, {"module": "keras.layers", "class_name": "StringLookup",
                                                     "config": {"name": "lookup", "vocabulary": "/etc/passwd"},
                                                     "registered_name": None}), "vocabulary.keras", Limits()),
    "WS-KERAS-008": (_duplicate_key, "model.json", Limits()),
    "WS-KERAS-009": (lambda p: _json_file(p, _sequential_archive()[0]), "model.json", Limits(max_json_bytes=100)),
    "WS-KERAS-012": (lambda p: h5_file(p, lambda h: h.__setitem__("ext", h5py.ExternalLink("/etc/passwd", "/x"))),
                     "external-link.h5", Limits()),
    "WS-KERAS-013": (lambda p: h5_file(p, lambda h: h.create_dataset("w", shape=(4,), dtype="f4",
                                                                     external=[("/etc/hostname", 0, 16)])),
                     "external-storage.h5", Limits()),
    "WS-KERAS-014": (_virtual, "virtual.h5", Limits()),
    "WS-KERAS-015": (lambda p: h5_file(p, lambda h: h.__setitem__("alias", h5py.SoftLink("/layers"))),
                     "soft-link.h5", Limits()),
    "WS-KERAS-016": (lambda p: h5_file(p, lambda h: h.create_dataset("big", shape=(2**31,), dtype="f4",
                                                                     chunks=(1024,))), "oversized.h5", Limits()),
    "WS-KERAS-017": (_not_hdf5_inside, "broken.h5", Limits()),
    "WS-KERAS-020": (_nested_too_deep, "model.json", Limits()),
    "WS-KERAS-019": (lambda p: benign_keras_file(p, "sequential"), "member-limit.keras",
                     Limits(max_member_bytes=2048)),
    "WS-KERAS-023": (lambda p: _many_torch_modules(p), "many-modules.keras", Limits()),
}  # fmt: skip


def _ids_of_rules() -> set[str]:
    return {rule["id"] for rule in load_pack(builtin_rules_dir() / "keras.yaml")["rules"]}


def test_every_rule_has_a_hostile_fixture() -> None:
    covered = set(HOSTILE) | {"WS-KERAS-010", "WS-KERAS-011", "WS-KERAS-018", "WS-KERAS-022"}  # tested below
    # (WS-KERAS-022, the cap on distinct objects, in test_tf_keras.py)
    assert covered == _ids_of_rules()


@pytest.mark.parametrize("rule", sorted(HOSTILE))
def test_each_hostile_file_trips_exactly_its_rule(work: Path, rule: str) -> None:
    build, name, limits = HOSTILE[rule]
    folder = work / rule
    folder.mkdir(exist_ok=True)
    path = build(folder / name)
    report = scan(path, Config(limits=limits))
    assert rule_ids(report) == {rule}, [f.message for f in report.findings]


def test_lambda_finding_names_what_the_bytecode_names(work: Path) -> None:
    report = scan(lambda_keras_file(work / "named.keras"))
    (finding,) = report.findings
    assert finding.severity == Severity.CRITICAL
    assert finding.location.member == "config.json"
    assert {"system", "__import__", "os"} <= set(str(finding.evidence["names"]).split(", "))
    assert finding.evidence["layer"] == "pwn" and finding.evidence["format"] == "keras3"


def test_lambda_in_legacy_h5_keras2_form(work: Path) -> None:
    report = scan(lambda_h5_file(work / "lambda.h5"))
    assert rule_ids(report) == {"WS-KERAS-001"}
    assert report.findings[0].evidence["format"] == "keras2" and report.findings[0].evidence["source"] == "model_config"


@pytest.mark.parametrize(
    ("layer", "callable_"),
    [
        (_function_layer("keras.utils", "get_file"), "keras.utils.get_file"),  # CVE-2025-8747
        (_function_layer("keras.config", "enable_unsafe_deserialization"),
         "keras.config.enable_unsafe_deserialization"),
        (_function_layer("keras.src.backend.common.global_state", "set_global_attribute"),
         "keras.src.backend.common.global_state.set_global_attribute"),  # CVE-2025-9906, step 1
        ({"module": "keras.layers", "class_name": "TFSMLayer", "config": {"name": "t", "filepath": "/srv/evil"}},
         "keras.layers.TFSMLayer"),  # CVE-2026-1462
    ],
)  # fmt: skip
def test_keras_gadgets_are_critical(work: Path, layer: dict[str, Any], callable_: str) -> None:
    report = scan(keras_with_layers(work / "gadget.keras", layer))
    gadget = [f for f in report.findings if f.rule_id == "WS-KERAS-003"]
    assert gadget and gadget[0].evidence["callable"] == callable_ and gadget[0].severity == Severity.CRITICAL
    assert rule_ids(report) <= {"WS-KERAS-003", "WS-KERAS-007"}


@pytest.mark.parametrize(
    ("function", "arguments"),
    [("plot_image_gallery", {}), ("plot_bounding_box_gallery", {"bounding_box_format": "xyxy"})],
)
def test_keras_visualization_writes_a_file_in_safe_mode(work: Path, function: str, arguments: dict[str, Any]) -> None:
    """Review 44: Keras 3.15 deserializes keras.visualization's functions in safe mode (they are not in its
    NON_MODELING_APIS), and the gallery plots save an image wherever `path` says while the model is rebuilt."""
    marker = work / "written.png"
    layer = {"module": "keras.layers", "class_name": "Lambda", "config": {"name": "g", "arguments": {
        **arguments, "path": str(marker)}, "function": {"module": "keras.visualization", "class_name": "function",
                                                        "config": function, "registered_name": function}}}
    image = {"module": "keras.layers", "class_name": "InputLayer",
             "config": {"batch_shape": [None, 4, 4, 3], "dtype": "float32", "name": "in"}}
    config = {"module": "keras", "class_name": "Sequential", "registered_name": None,
              "config": {"name": "s", "layers": [image, layer]}}  # fmt: skip
    _, metadata, weights = _sequential_archive()
    path = write_keras(work / "gallery.keras", config, metadata, weights)
    keras.saving.load_model(path)  # safe_mode=True, the default
    assert marker.exists()
    gadget = [f for f in scan(path).findings if f.rule_id == "WS-KERAS-003"]
    assert gadget and gadget[0].evidence["callable"] == f"keras.visualization.{function}"


@pytest.mark.parametrize(
    "obj",
    [
        {"module": "builtins", "class_name": "function", "config": "exec", "registered_name": "function"},
        {"module": "subprocess", "class_name": "Popen", "config": {"args": "id"}},
        {"module": "builtins", "class_name": "__typespec__", "spec_name": "eval", "config": []},
    ],
)
def test_python_gadgets_in_any_position_are_critical(work: Path, obj: dict[str, Any]) -> None:
    def nest(config: dict[str, Any]) -> None:
        config["config"]["layers"][1]["config"]["kernel_initializer"] = obj

    assert rule_ids(scan(keras_with_layers(work / "nested.keras", edit=nest))) == {"WS-KERAS-002"}


def test_tf_op_lambda_functions_are_tensorflow_references() -> None:
    layer = {"class_name": "TFOpLambda", "config": {"name": "tf.io.write_file", "function": "io.write_file"}}
    config = {"class_name": "Functional", "keras_version": "2.15", "config": {"layers": [layer]}}
    objects = {str(i.attrs["callable"]) for i in check_config(config, 1000) if i.kind == "keras.object"}
    assert "tensorflow.io.write_file" in objects
    found = default_engine().rules.judge(observe_json(json.dumps(config).encode()))
    # TFOpLambda is tf_keras' own layer (allow-tf-keras); writing a file is a gadget whatever calls it
    assert {f.rule_id for f in found} == {"WS-KERAS-003"}


def test_walk_limit(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keras_scanner, "MAX_CONFIG_NODES", 50)
    assert rule_ids(scan(keras_with_layers(work / "walk.keras"))) == {"WS-KERAS-010"}


def test_more_issues_than_listed_are_counted(work: Path) -> None:
    report = scan(_many_lambdas(work / "many.keras"))
    assert rule_ids(report) == {"WS-KERAS-001"}
    assert len([f for f in report.findings if f.rule_id == "WS-KERAS-001"]) == MAX_ISSUES
    (more,) = [f for f in report.findings if f.rule_id == "WS-KERAS-011"]
    assert more.evidence["count"] == 5 and more.severity == Severity.INFO


@pytest.mark.parametrize(("kind", "rule"), [("time_limit", "WS-KERAS-018"), ("unreadable", "WS-KERAS-017")])
def test_probe_failures_fail_the_file(work: Path, monkeypatch: pytest.MonkeyPatch, kind: str, rule: str) -> None:
    monkeypatch.setattr(hdf5_probe, "run_probe", _probe_fails(kind))
    report = scan(benign_h5_file(work / "probe.h5", "sequential"))
    assert rule_ids(report) == {rule} and report.files[0].status == "failed"


def test_object_limit(work: Path) -> None:
    path = benign_h5_file(work / "objects.h5", "sequential")
    assert rule_ids(scan(path, Config(limits=Limits(max_members=3)))) == {"WS-KERAS-019"}


# --- libhdf5 on hostile bytes: killed when it hangs ---------------------------------------------------------


def grow_last_heap_object(blob: bytes, extra: int = 32) -> bytes:
    """The file with the last object of its first global heap collection claiming `extra` more bytes, so it
    overlaps the collection's free space: libhdf5 then loops forever reading it (found by the property tests)."""
    data = bytearray(blob)
    start = data.find(b"GCOL")
    (size,) = struct.unpack_from("<Q", data, start + 8)
    position, last = start + 16, None
    while position + 16 <= start + size:
        index, _, _, length = struct.unpack_from("<HHIQ", data, position)
        if index == 0:  # the free-space object ends the collection
            break
        last = position
        position += 16 + (length + 7) // 8 * 8
    assert last is not None
    struct.pack_into("<Q", data, last + 8, struct.unpack_from("<Q", data, last + 8)[0] + extra)
    return bytes(data)


def test_a_libhdf5_infinite_loop_is_killed_and_reported(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = benign_h5_file(work / "loop.h5", "functional")
    path.write_bytes(grow_last_heap_object(path.read_bytes()))
    monkeypatch.setattr(keras_scanner, "HDF5_SECONDS", 2.0)
    report = scan(path)
    assert rule_ids(report) == {"WS-KERAS-018"} and report.files[0].status == "failed"


def test_a_file_that_never_opens_times_out(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.h5"
    os.mkfifo(fifo)  # opening a FIFO without a writer blocks forever
    answer = hdf5_probe.run_probe(str(fifo), 1024, 100, 1.0)
    assert answer == ProbeFailure("time_limit", "HDF5 metadata not read within 1 s")
    assert hdf5_probe.run_probe(str(tmp_path / "missing.h5"), 1024, 100, 5.0)["error"].startswith("FileNotFoundError")


def test_one_process_per_file_where_there_is_no_fork(work: Path) -> None:
    path = benign_h5_file(work / "once.h5", "sequential")
    request = {"path": str(path), "max_attr": 1 << 20, "max_items": 1000, "timeout": 60}
    answer = json.loads(hdf5_probe._one_shot(request, 60.0) or b"null")
    assert "model_config" in answer["attrs"] and answer["objects"] > 0


def test_the_probe_answers_after_a_child_was_killed(work: Path) -> None:
    path = benign_h5_file(work / "after.h5", "sequential")
    answer = hdf5_probe.run_probe(str(path), 1 << 20, 1000, 10.0)
    assert isinstance(answer, dict) and "model_config" in answer["attrs"]


# --- sniffing ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("blob", "name", "container", "accepted"),
    [
        (b'{"module": "keras", "class_name": "Sequential", "config": {}}', "model.json", "", True),
        (b'{"class_name": "Sequential", "config": {}, "keras_version": "2.15"}', "net.json", "", True),
        (b'{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}', "config.json", "", False),
        (b'{"_class_name": "UNet2DConditionModel", "module": "x"}', "config.json", "", False),
        (b'{"anything": 1}', "config.json", "keras", True),
        (b'{"keras_version": "3.15.1"}', "metadata.json", "keras", False),
        (b'{"module": "keras", "class_name": "Sequential"}', "model.txt", "", True),  # model_from_json reads any text
        (b'{"module": "keras", "kind": "Sequential"}', "model.txt", "", False),
        (keras_scanner.HDF5_MAGIC + bytes(100), "weights.bin", "", True),
        (bytes(512) + keras_scanner.HDF5_MAGIC + bytes(100), "userblock.h5", "", True),
        (bytes(700) + keras_scanner.HDF5_MAGIC, "nothing.h5", "", False),
    ],
)
def test_accepts(blob: bytes, name: str, container: str, accepted: bool) -> None:
    assert KerasScanner().accepts(head(blob, name, container)) is accepted


def test_hdf5_offsets() -> None:
    assert hdf5_offset(keras_scanner.HDF5_MAGIC) == 0
    assert hdf5_offset(bytes(2048) + keras_scanner.HDF5_MAGIC) == 2048
    assert hdf5_offset(bytes(1000) + keras_scanner.HDF5_MAGIC) is None


def test_hdf5_is_no_longer_unchecked(work: Path) -> None:
    path = h5_file(work / "plain.h5", lambda h: None)
    report = scan(path)
    assert rule_ids(report) == set() and report.files[0].formats == ("keras",)


def test_hdf5_of_types_numpy_cannot_hold_is_read(work: Path) -> None:
    """PyTables' test data (shipped on PyPI) has quadruple precision floats and HDF5 time types, which h5py cannot
    map to a NumPy dtype: libhdf5 still knows their size, so the file is read, not failed (a sweep found three)."""

    def quad(handle: Any) -> None:
        space = h5py.h5s.create_simple((3,))
        h5py.h5d.create(handle.id, b"quad", h5py.h5t.IEEE_F128LE.copy(), space)

    path = h5_file(work / "quad.h5", quad)
    with h5py.File(path) as handle, pytest.raises(ValueError, match="Insufficient precision"):
        handle["quad"].dtype  # noqa: B018  (what the probe asked before)
    report = scan(path)
    assert rule_ids(report) == set() and report.files[0].status == "scanned"


def test_other_json_is_left_alone() -> None:
    blob = b'{"class_name": "Thing", "module": "x", "config": 3}'
    # config is not an object: not a Keras model, and the scanner hands the file back
    assert [o.kind for o in observe_json(blob)] == [NOT_MINE_KIND]


def test_bytecode_names_are_bounded() -> None:
    assert bytecode_names(b"\x00abc\x00os.system\x00abc") == "abc, os.system"
    assert len(bytecode_names(b" ".join(b"name%d" % i for i in range(1000)))) <= 200


# --- hostile input never raises, never hangs -------------------------------------------------------------


@cache
def _samples() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        keras_file = benign_keras_file(folder / "m.keras", "sequential")
        with zipfile.ZipFile(keras_file) as archive:
            config = archive.read("config.json")
        return {
            "keras": keras_file.read_bytes(),
            "h5": benign_h5_file(folder / "m.h5", "functional").read_bytes(),
            "json": config,
        }


def _mutate(data: st.DataObject, sample: bytes, start: int = 0) -> bytes:
    blob = bytearray(sample)
    for _ in range(data.draw(st.integers(0, 8))):
        position = data.draw(st.integers(start, len(blob) - 1))
        blob[position] ^= 1 << data.draw(st.integers(0, 7))
    cut = data.draw(st.integers(start, len(blob))) if data.draw(st.booleans()) else len(blob)  # half are whole
    return bytes(blob[:cut])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_configs_never_raise(data: st.DataObject) -> None:
    found = observe_json(_mutate(data, _samples()["json"]), "config.json", "keras")
    assert not any(o.kind == "scan.error" for o in found)


@pytest.mark.parametrize("sample", ["keras", "h5"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data())
def test_engine_always_returns_scanned_or_failed(work: Path, sample: str, data: st.DataObject) -> None:
    blob = _mutate(data, _samples()[sample], start=8)  # keep the magic: the file stays what it was
    path = work / f"mutated.{sample}"
    path.write_bytes(blob)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(keras_scanner, "HDF5_SECONDS", 3.0)
        report = default_engine().scan([path])
    assert report.files[0].status in {"scanned", "failed"}
    assert not any(f.rule_id == "WS-FILE-001" and "(keras)" in f.message for f in report.findings)


def _iter_kinds() -> Iterator[str]:
    for module in ("keras.py", "keras_config.py"):
        source = (Path(keras_scanner.__file__).parent / module).read_text(encoding="utf-8")
        yield from re.findall(r'"((?:keras|hdf5)\.[a-z_]+)"', source)


def test_every_kind_the_scanner_emits_has_a_rule() -> None:
    matched: set[str] = set()
    for rule in load_pack(builtin_rules_dir() / "keras.yaml")["rules"]:
        kinds = rule["match"]["kind"]
        matched.update([kinds] if isinstance(kinds, str) else kinds)
    emitted = set(_iter_kinds()) | {"hdf5.time_limit", "hdf5.unreadable"}
    assert emitted == matched


def test_a_truncated_stand_alone_keras_json_fails_closed() -> None:
    blob = b'{"module": "keras", "class_name": "Sequential", "config": {"layers": [{"class_na'
    assert [o.kind for o in observe_json(blob)] == ["keras.config_unreadable"]


# --- objects Keras rebuilds wherever they sit, and what they carry (review 23) --------------------------------


def _armed_config() -> dict[str, Any]:
    """The real Sequential model's config with a bytecode Lambda appended."""
    config = copy.deepcopy(_sequential_archive()[0])
    config["config"]["layers"].append(_lambda_layer())
    return config


# deserialize_keras_object rebuilds every object inside a list or a dict without class_name/config, then
# load_model fails on what it got: the Lambda has run by then (safe_mode=False).
HIDING_TOPS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "list": lambda config: [config],
    "plain-dict": lambda config: {"model": config},
    "list-in-dict": lambda config: {"models": [{"first": config}]},
}


def _keras_archive(path: Path, config_text: str, layout: str) -> Path:
    """config.json in Keras' own layout (metadata.json, model.weights.h5), alone with other weights, or a
    folder Keras loads as a model."""
    _, metadata, weights = _sequential_archive()
    members = {"config.json": config_text.encode()}
    if layout == "npz":
        members["model.weights.npz"] = b""
    else:
        members |= {"metadata.json": metadata, "model.weights.h5": weights}
    if layout == "folder":
        path.mkdir()
        for name, data in members.items():
            (path / name).write_bytes(data)
        return path
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("layout", ["keras", "npz", "folder"])
@pytest.mark.parametrize("top", sorted(HIDING_TOPS))
def test_a_lambda_below_a_list_or_plain_dict_is_found(work: Path, top: str, layout: str) -> None:
    text = json.dumps(HIDING_TOPS[top](_armed_config()))
    path = _keras_archive(work / f"hidden-{top}-{layout}.keras", text, layout)
    report = scan(path)
    lambdas = [f for f in report.findings if f.rule_id == "WS-KERAS-001"]
    assert len(lambdas) == 1 and lambdas[0].severity == Severity.CRITICAL
    assert lambdas[0].evidence["layer"] == "pwn"


def test_a_vocabulary_path_below_a_plain_dict_is_found(work: Path) -> None:
    lookup = {"module": "keras.layers", "class_name": "StringLookup", "registered_name": None,
              "config": {"name": "sl", "vocabulary": "/etc/passwd"}}  # fmt: skip
    path = _keras_archive(work / "hidden-lookup", json.dumps({"tokenizer": lookup}), "folder")
    (finding,) = [f for f in scan(path).findings if f.rule_id == "WS-KERAS-007"]
    assert finding.evidence["path"] == "/etc/passwd" and finding.evidence["layer"] == "sl"
    assert finding.evidence["field"] == "tokenizer.config.vocabulary"


def test_a_list_of_stand_alone_objects_is_read_whatever_its_name() -> None:
    blob = json.dumps([{"note": 1}, _lambda_layer()]).encode()
    assert "keras.lambda" in [o.kind for o in observe_json(blob, "weights.txt")]


@pytest.mark.parametrize(
    "blob",
    [
        b'[{"class_name": "Thing"}, {"config": {}}]',  # class_name and config never in one object
        b'{"layers": [{"class_name": "Thing", "module": "x", "config": 3}]}',  # no config a class is built from
        b'{"entries": [{"class_name": "x", "config": "text"}]}',  # a string config is a function's name only
        b'{"_class_name": "UNet2DConditionModel", "config": {}}',  # diffusers
        b'{"config": "{\\"a\\": 1}", "class_name": 1}',  # a config string that holds no Keras object
        b'{"config": "not json at all \\"class_name\\""}',
    ],
)
def test_json_without_a_keras_object_is_handed_back(blob: bytes) -> None:
    assert [o.kind for o in observe_json(blob, "config.json")] == [NOT_MINE_KIND]


@pytest.mark.parametrize(
    "make",
    ["BertConfig", "CLIPConfig", "T5Config", "LlavaConfig", "WhisperConfig", "BlipConfig", "EncoderDecoderConfig"],
)
def test_transformers_configs_are_not_keras(work: Path, make: str) -> None:
    """Real Hugging Face config.json files (nested sub-configs and all) are handed back, never walked as Keras."""
    import transformers

    cls = getattr(transformers, make)
    if make == "EncoderDecoderConfig":
        bert = transformers.BertConfig()
        config = cls.from_encoder_decoder_configs(bert, bert)
    else:
        config = cls()
    folder = work / f"hf-{make}"
    folder.mkdir(exist_ok=True)
    config.save_pretrained(folder)
    blob = (folder / "config.json").read_bytes()
    assert [o.kind for o in observe_json(blob, "config.json")] == [NOT_MINE_KIND]
    assert not [f for f in scan(folder).findings if f.rule_id.startswith("WS-KERAS-")]


# TorchModuleWrapper.from_config hands base64.b64decode(config["module"]) to torch.load(weights_only=False).


def _torch_save(obj: Any) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


class _Reduces:
    """Pickled as a call of os.system: torch.save asks for __reduce__ and writes the answer, nothing is called."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, ("id",))


@cache
def _wrapper_archive() -> tuple[dict[str, Any], bytes, bytes]:
    """config.json, metadata.json and model.weights.h5 of a Sequential with a TorchModuleWrapper(nn.Linear), saved
    by Keras (torch backend)."""
    import torch

    model = keras.Sequential([keras.Input((2,)), keras.layers.TorchModuleWrapper(torch.nn.Linear(2, 2), name="tw")])
    with tempfile.TemporaryDirectory() as folder:
        model.save(Path(folder) / "wrapper.keras")
        with zipfile.ZipFile(Path(folder) / "wrapper.keras") as archive:
            return (json.loads(archive.read("config.json")), archive.read("metadata.json"),
                    archive.read("model.weights.h5"))  # fmt: skip


def _wrapper_file(path: Path, module: str | None = None, count: int = 1) -> Path:
    """The saved wrapper model, its module replaced by `module` (base64 text) and its layer repeated `count` times."""
    config, metadata, weights = _wrapper_archive()
    config = copy.deepcopy(config)
    layers = config["config"]["layers"]
    wrapper = next(layer for layer in layers if layer["class_name"] == "TorchModuleWrapper")
    if module is not None:
        wrapper["config"]["module"] = module
    layers.extend(copy.deepcopy(wrapper) for _ in range(count - 1))
    return write_keras(path, config, metadata, weights)


def _many_torch_modules(path: Path) -> Path:
    from wscan.scanners.keras_config import MAX_EMBEDDED

    return _wrapper_file(path, count=MAX_EMBEDDED + 1)


def test_an_honest_torch_module_wrapper_gets_what_its_module_gets(work: Path) -> None:
    import torch

    path = _wrapper_file(work / "honest-wrapper.keras")
    saved = work / "linear.pt"
    saved.write_bytes(_torch_save(torch.nn.Linear(2, 2)))
    wrapped, alone = scan(path), scan(saved)
    assert rule_ids(wrapped) == rule_ids(alone) == set()
    assert "pickle" in wrapped.files[0].formats  # the module was read, not skipped


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("zip", lambda: base64.b64encode(_torch_save(_Reduces())).decode()),
        # torch.load's legacy reader unpickles a plain pickle first thing
        ("raw-pickle", lambda: base64.b64encode(b"cos\nsystem\n(Vid\ntR.").decode()),
        # base64.b64decode skips what is not base64: line breaks, spaces, stray characters
        ("spread", lambda: "\n ".join(base64.b64encode(_torch_save(_Reduces())).decode()) + "*!"),
    ],
    ids=["zip", "raw-pickle", "spread"],
)
def test_a_pickle_in_a_torch_module_wrapper_is_critical(work: Path, name: str, module: Callable[[], str]) -> None:
    report = scan(_wrapper_file(work / f"wrapper-{name}.keras", module()))
    critical = [f for f in report.findings if f.severity == Severity.CRITICAL]
    assert critical and all(f.rule_id.startswith("WS-PKL-") for f in critical), [f.message for f in report.findings]
    assert critical[0].location.describe().count("config.layers[1].config.module") == 1


def test_a_module_keras_cannot_decode_is_not_scanned() -> None:
    config = copy.deepcopy(_wrapper_archive()[0])
    config["config"]["layers"][1]["config"]["module"] = "caf\u00e9"  # str.encode("ascii") fails in Keras too
    artifact = Artifact(Location("config.json"), 0, io.BytesIO, name="config.json", context={"container": "keras"})
    limits = Limits()
    items = list(keras_scanner.check_json(artifact, ScanContext(limits, Budget(limits)), json.dumps(config).encode(),
                                          "config.json"))  # fmt: skip
    assert not [i for i in items if isinstance(i, Artifact)]


# keras.callbacks.OrbaxCheckpoint: <dir>/<step>/model_config/_strings.json holds {"config": "<config JSON>"}, which
# keras.saving.load_model(dir) rebuilds. The checkpoint in tests/data was written by Keras and Orbax (make.py there).

ORBAX = Path(__file__).resolve().parents[1] / "data" / "keras_orbax" / "checkpoint"
ORBAX_STRINGS = Path("0") / "model_config" / "_strings.json"


def _orbax_copy(tmp_path: Path, spell: Callable[[dict[str, Any]], str]) -> Path:
    """The real checkpoint with its model config armed with a Lambda and written back by `spell`."""
    folder = Path(shutil.copytree(ORBAX, tmp_path / "checkpoint"))
    strings = json.loads((folder / ORBAX_STRINGS).read_text())
    config = json.loads(strings["config"])
    config["config"]["layers"].append(_lambda_layer())
    (folder / ORBAX_STRINGS).write_text(spell(config))
    return folder


def test_an_honest_orbax_checkpoint_config_is_read_and_clean() -> None:
    blob = (ORBAX / ORBAX_STRINGS).read_bytes()
    kinds = [o.kind for o in observe_json(blob, "_strings.json")]
    assert kinds and set(kinds) == {"keras.object"}  # read as a Keras config: every object judged
    assert not [f for f in scan(ORBAX).findings if f.rule_id.startswith("WS-KERAS-")]


@pytest.mark.parametrize(
    "spell",
    [
        lambda config: json.dumps({"config": json.dumps(config)}),
        # the inner quotes spelled as JSON escapes, and padding that pushes the key past the head
        lambda config: json.dumps({"config": json.dumps(config)}).replace('\\"', "\\u0022"),
        lambda config: json.dumps({"pad": " " * 70_000, "config": json.dumps(config)}),
        # every key's first letter escaped inside the string, that escape's backslash escaped outside it
        lambda config: json.dumps(
            {"config": json.dumps(config).replace('"class_name"', '"\\u0063lass_name"')}
        ).replace("\\\\", "\\u005c"),
    ],
    ids=["plain", "escaped-quotes", "padded", "escaped-backslash"],
)
def test_a_lambda_in_an_orbax_checkpoint_config_is_critical(tmp_path: Path, spell: Callable[[Any], str]) -> None:
    report = scan(_orbax_copy(tmp_path, spell))
    (finding,) = [f for f in report.findings if f.rule_id == "WS-KERAS-001"]
    assert finding.severity == Severity.CRITICAL and finding.location.describe().endswith("_strings.json")
    assert finding.evidence["layer"] == "pwn"


def test_an_orbax_checkpoint_is_named_through_and_through() -> None:
    """Its OCDBT manifests and data files are array data TensorStore reads: named, not left as unknown formats."""
    report = scan(ORBAX)
    assert [(f.rule_id, f.message) for f in report.findings] == []
    ocdbt = [f for f in report.files if "ocdbt" in f.formats]
    assert len(ocdbt) == 4 and {f.status for f in ocdbt} == {"scanned"}


@pytest.mark.parametrize(
    "damage",
    [
        lambda blob: blob[:4] + struct.pack("<Q", len(blob) + 1) + blob[12:],  # longer than the file
        lambda blob: blob[:12] + b"\x01" + blob[13:],  # a version tensorstore never wrote
        lambda blob: blob[:13] + b"\x07" + blob[14:],  # no such compression
        lambda blob: b"\x0c\xdb\x3a\x2b" + blob[4:],  # another magic
    ],
    ids=["length", "version", "compression", "magic"],
)
def test_a_file_that_only_looks_like_ocdbt_stays_unknown(tmp_path: Path, damage: Callable[[bytes], bytes]) -> None:
    blob = (ORBAX / "0" / "pytree" / "manifest.ocdbt").read_bytes()
    path = tmp_path / "manifest.ocdbt"
    path.write_bytes(damage(blob))
    assert rule_ids(scan(path)) == {"WS-FILE-006"}
