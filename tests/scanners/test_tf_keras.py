"""tf.keras 2 (tf_keras) models: what tf_keras 2.21 writes passes; what it would run or read is caught.

The files in tests/data/tf_keras were written by tf_keras itself (`make.py` there); each hostile one was proved
with tf_keras to write a marker file or return a file's content when loaded and run. TensorFlow is not a test
dependency, so these tests read the kept files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.scanning import rule_ids, scan, scan_bytes
from wscan.model import Severity
from wscan.rules import builtin_rules_dir
from wscan.rules.loader import load_pack
from wscan.scanners.keras_config import check_config

DATA = Path(__file__).resolve().parents[1] / "data" / "tf_keras"
BENIGN = sorted(p for p in (DATA / "benign").rglob("*") if p.is_file())
HOSTILE = {
    "read-file.h5": "WS-KERAS-003",
    "read-file.json": "WS-KERAS-003",
    "read-file.keras": "WS-KERAS-003",
    "lambda-savedmodel": "WS-KERAS-001",  # keras_metadata.pb
    "lambda-legacy-savedmodel": "WS-KERAS-001",  # saved_model.pb's object graph, no keras_metadata.pb
}


def _allowed() -> set[str]:
    return set(load_pack(builtin_rules_dir() / "allow-tf-keras.yaml")["lists"]["allowed-keras-objects"])


def test_the_kept_files_are_there() -> None:
    suffixes = {p.suffix for p in BENIGN}
    assert {".h5", ".keras", ".json", ".pb"} <= suffixes and len(BENIGN) == 12


@pytest.mark.parametrize("path", BENIGN, ids=lambda p: str(p.relative_to(DATA / "benign")))
def test_what_tf_keras_writes_has_no_findings(path: Path) -> None:
    report = scan(path)
    assert [(f.rule_id, f.message) for f in report.findings] == []
    assert "keras" in report.files[0].formats and report.files[0].status == "scanned"


def test_tf_op_layers_of_real_configs_are_each_on_the_allowlist() -> None:
    """Not just "no finding": every TensorFlow function, class and tensor attribute tf_keras wrote is listed."""
    config = json.loads((DATA / "benign" / "tfops.json").read_text())
    objects = {str(i.attrs["callable"]) for i in check_config(config, 10**6) if i.kind == "keras.object"}
    functions = {name for name in objects if name.startswith("tensorflow.")}
    assert {"tensorflow.math.add", "tensorflow.__operators__.getitem", "tensorflow.compat.v1.gather"} <= functions
    assert objects <= _allowed() | set(
        load_pack(builtin_rules_dir() / "allow-keras.yaml")["lists"]["allowed-keras-objects"]
    )


@pytest.mark.parametrize(("name", "rule"), sorted(HOSTILE.items()))
def test_proved_hostile_files_are_critical(name: str, rule: str) -> None:
    report = scan(DATA / "hostile" / name)
    assert rule in {f.rule_id for f in report.findings if f.severity == Severity.CRITICAL}, report.findings


def test_the_lambda_is_found_in_the_legacy_object_graph_not_only_in_keras_metadata(tmp_path: Path) -> None:
    folder = shutil.copytree(DATA / "hostile" / "lambda-legacy-savedmodel", tmp_path / "m")
    assert not (folder / "keras_metadata.pb").exists()
    found = [f for f in scan(folder).findings if f.rule_id == "WS-KERAS-001"]
    assert found and all(f.location.path.endswith("saved_model.pb") for f in found)
    assert "open" in found[0].message and "write" in found[0].message  # names read from the bytecode


def test_allowlist_lists_no_gadget_and_no_raw_or_file_op() -> None:
    gadgets = tuple(load_pack(builtin_rules_dir() / "keras.yaml")["lists"]["keras-gadgets"])
    allowed = _allowed()
    assert not [n for n in allowed if any(n == g or n.startswith(g + ".") for g in gadgets)]
    for name in ("tensorflow.io.read_file", "tensorflow.io.write_file", "tensorflow.print", "tensorflow.py_function",
                 "tensorflow.numpy_function", "tensorflow.compat.v1.py_func", "tensorflow.raw_ops.WriteFile",
                 "tensorflow.load_op_library", "tensorflow.io.gfile.GFile", "tensorflow.strings.format.__call__"):
        assert name not in allowed
    for name in ("tensorflow.math.add", "tensorflow.compat.v1.gather", "Custom>Adam", "TFOpLambda",
                 "tf_keras.src.engine.functional.Functional", "tensorflow.RaggedTensor.from_row_splits",
                 "tensorflow.<tensor>.with_values", "keras.optimizers.experimental.AdamW"):
        assert name in allowed


def _op_model(layer: dict[str, object]) -> bytes:
    """A tf_keras Functional model JSON with one op layer, as `model.to_json()` lays it out."""
    return json.dumps({
        "class_name": "Functional", "keras_version": "2.21.0", "backend": "tensorflow",
        "config": {"name": "model", "layers": [
            {"class_name": "InputLayer", "config": {"name": "a", "batch_input_shape": [None, 2]}, "name": "a",
             "inbound_nodes": []},
            {**layer, "name": "op", "inbound_nodes": [["a", 0, 0, {}]]},
        ]},
    }).encode()


@pytest.mark.parametrize(("layer", "expected"), [
    ({"class_name": "TFOpLambda", "config": {"name": "op", "function": "math.add"}}, set()),
    ({"class_name": "TFOpLambda", "config": {"name": "op", "function": "raw_ops.WriteFile"}}, {"WS-KERAS-003"}),
    ({"class_name": "SlicingOpLambda", "config": {"name": "op", "function": "compat.v1.Print"}}, {"WS-KERAS-003"}),
    ({"class_name": "TFOpLambda", "config": {"name": "op", "function": "experimental.numpy.load"}},
     {"WS-KERAS-004"}),
    ({"class_name": "ClassMethod", "config": {"name": "op", "cls_symbol": "RaggedTensor",
                                              "method_name": "from_row_splits"}}, set()),
    ({"class_name": "ClassMethod", "config": {"name": "op", "cls_symbol": "RaggedTensor",
                                              "method_name": "__init_subclass__"}}, {"WS-KERAS-004"}),
    ({"class_name": "ClassMethod", "config": {"name": "op", "cls_symbol": "io.gfile.GFile",
                                              "method_name": "write"}}, {"WS-KERAS-003"}),
    ({"class_name": "InstanceMethod", "config": {"name": "op", "attr_name": "with_values"}}, set()),
    ({"class_name": "InstanceMethod", "config": {"name": "op", "attr_name": "__reduce_ex__"}}, {"WS-KERAS-004"}),
    ({"class_name": "InstanceProperty", "config": {"name": "op", "attr_name": "graph"}}, {"WS-KERAS-004"}),
    # tf_keras' legacy JSON value encodings are data only without a module; with one, Keras 3 imports it.
    ({"class_name": "Dense", "config": {"name": "op", "units": {"class_name": "__tuple__", "items": [1]}}}, set()),
    ({"class_name": "Dense", "config": {"name": "op", "units": {"module": "os", "class_name": "TensorShape"}}},
     {"WS-KERAS-002"}),
])
def test_tf_op_layers_are_judged_by_what_they_call(tmp_path: Path, layer: dict[str, object],
                                                   expected: set[str]) -> None:
    report = scan_bytes(tmp_path, _op_model(layer), "model.json")
    assert rule_ids(report) == expected, [f.message for f in report.findings]


def test_keras_metadata_that_is_not_the_protobuf_fails(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, b"\x0a\xff\xff\xff\xff\x0f", "keras_metadata.pb")
    assert rule_ids(report) == {"WS-KERAS-020"}


def test_keras_metadata_over_the_json_limit_is_not_read(tmp_path: Path) -> None:
    from wscan.config import Config
    from wscan.limits import Limits

    data = (DATA / "benign" / "rnn-savedmodel" / "keras_metadata.pb").read_bytes()
    report = scan_bytes(tmp_path, data, "keras_metadata.pb", Config(limits=Limits(max_json_bytes=1000)))
    assert rule_ids(report) == {"WS-KERAS-009"}
