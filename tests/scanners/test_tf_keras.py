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
EXTRA = ("tfops-checkpoint", "discretization-savedmodel")  # judged by their own tests below
BENIGN = sorted(p for p in (DATA / "benign").rglob("*") if p.is_file() and p.parent.name not in EXTRA)
HOSTILE = {
    "read-file.h5": "WS-KERAS-003",
    "read-file.json": "WS-KERAS-003",
    "read-file.keras": "WS-KERAS-003",
    "lambda-savedmodel": "WS-KERAS-001",  # keras_metadata.pb
    "lambda-legacy-savedmodel": "WS-KERAS-001",  # saved_model.pb's object graph, no keras_metadata.pb
}


# Proved with tf_keras by a review, then fixed (reviewed/README.md says how each one works).
REVIEWED = {
    "sampler.json": "WS-KERAS-003",
    "print-dynamic.json": "WS-KERAS-003",
    "print-dynamic.keras": "WS-KERAS-003",
    "lambda-polyglot": "WS-KERAS-001",
    "read-file-padded.json": "WS-KERAS-003",
    "no-version-keys.json": "WS-KERAS-003",
    "sequential-list-config.json": "WS-KERAS-003",
    "print-model.txt": "WS-KERAS-003",
    "userblock-64k.h5": "WS-KERAS-003",
}
# ...and found high, not critical: external storage and a graph reading a file at a fixed path.
REVIEWED_HIGH = {"external-weights-userblock.keras": "WS-KERAS-013", "readfile-savedmodel": "WS-TF-012"}


def _allowed() -> set[str]:
    return set(load_pack(builtin_rules_dir() / "allow-tf-keras.yaml")["lists"]["allowed-keras-objects"])


def test_the_kept_files_are_there() -> None:
    suffixes = {p.suffix for p in BENIGN}
    assert {".h5", ".keras", ".json", ".pb"} <= suffixes and len(BENIGN) == 12
    assert all((DATA / "benign" / name).is_dir() for name in EXTRA)


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


@pytest.mark.parametrize(("name", "rule"), sorted(REVIEWED.items()))
def test_reviewed_bypasses_are_critical(name: str, rule: str) -> None:
    report = scan(DATA / "reviewed" / name)
    assert rule in {f.rule_id for f in report.findings if f.severity == Severity.CRITICAL}, report.findings


def test_keras_metadata_that_is_also_hdf5_is_read_as_both() -> None:
    path = DATA / "reviewed" / "lambda-polyglot" / "keras_metadata.pb"
    assert path.read_bytes()[8192:8200] == b"\x89HDF\r\n\x1a\n"  # an HDF5 file after an 8 KiB user block
    report = scan(path)
    assert report.files[0].formats == ("keras",) and "WS-KERAS-001" in rule_ids(report)


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


def test_a_registered_name_is_judged_where_keras_falls_back_to_it(tmp_path: Path) -> None:
    function = {"module": "tensorflow", "class_name": "function", "config": "a.b.c", "registered_name": "print"}
    layer = {"class_name": "Lambda", "config": {"name": "op", "function": function, "function_type": "function"}}
    # tensorflow.a.b.c does not exist (high), and what Keras then takes, tensorflow.print, is a gadget
    assert rule_ids(scan_bytes(tmp_path, _op_model(layer), "model.json")) == {"WS-KERAS-003", "WS-KERAS-004"}
    same = {**function, "config": "relu", "registered_name": "relu", "module": "keras.activations"}
    layer["config"]["function"] = same  # Keras writes a function's own name there: one reference, allowed
    assert rule_ids(scan_bytes(tmp_path, _op_model(layer), "model.json")) == set()


def _padded(tmp_path: Path, key: str, size: int) -> Path:
    config = json.loads((DATA / "hostile" / "read-file.json").read_text())
    text = json.dumps({"_": " " * size, **config})
    path = tmp_path / "model.json"
    path.write_text(text.replace('"class_name"', key))
    return path


@pytest.mark.parametrize("key", ['"class_name"', '"class\\u005fname"', '"\\u0063lass_name"'])
def test_a_model_json_is_found_whatever_comes_first_and_however_keys_are_escaped(tmp_path: Path, key: str) -> None:
    path = _padded(tmp_path, key, 70_000)
    assert json.loads(path.read_text())["class_name"] == "Functional"  # what model_from_json reads
    assert "WS-KERAS-003" in rule_ids(scan(path))


def test_a_model_json_over_the_json_limit_is_not_passed(tmp_path: Path) -> None:
    from wscan.config import Config
    from wscan.limits import Limits

    path = _padded(tmp_path, '"class_name"', 70_000)
    assert rule_ids(scan(path, Config(limits=Limits(max_json_bytes=4096)))) == {"WS-KERAS-009"}


def test_large_json_that_names_no_class_is_not_called_keras(tmp_path: Path) -> None:
    """A tokenizer.json-sized file is searched, then handed back: no finding, and not reported as Keras."""
    path = tmp_path / "vocab.json"
    path.write_text(json.dumps({f"tok{i}\u00e9": i for i in range(20_000)}))
    report = scan(path)
    assert report.findings == [] and "keras" not in report.files[0].formats
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"data": "x" * 5000}) * 1)
    from wscan.config import Config
    from wscan.limits import Limits

    report = scan(big, Config(limits=Limits(max_json_bytes=1000)))
    assert report.findings == [] and report.files[0].status == "skipped"


def test_a_save_weights_checkpoint_is_read_as_one() -> None:
    """`<prefix>.index` (a TensorBundle table) and its data shard are known files, not unknown formats."""
    report = scan(DATA / "benign" / "tfops-checkpoint")
    assert report.findings == []
    formats = {Path(f.path).name: (f.formats, f.status) for f in report.files}
    assert formats["tfops.index"] == (("tf-checkpoint",), "scanned")
    assert formats["tfops.data-00000-of-00001"] == (("tf-checkpoint",), "scanned")
    assert formats["checkpoint"][1] == "skipped"  # the text file naming the latest checkpoint


def test_an_index_without_the_table_magic_is_still_unknown(tmp_path: Path) -> None:
    data = (DATA / "benign" / "tfops-checkpoint" / "tfops.index").read_bytes()
    assert rule_ids(scan_bytes(tmp_path, data[:-1] + b"\x00", "tfops.index")) == {"WS-FILE-006"}


def test_adapted_discretization_keeps_a_pyfunc_that_is_only_medium() -> None:
    report = scan(DATA / "benign" / "discretization-savedmodel")
    assert [(f.rule_id, f.severity) for f in report.findings] == [("WS-TF-011", Severity.MEDIUM)]


def test_application_layers_pass_and_application_builders_stay_gadgets(tmp_path: Path) -> None:
    scale = {"module": "keras.src.applications.convnext", "class_name": "LayerScale",
             "config": {"name": "op", "init_values": 1e-6, "projection_dim": 4}, "registered_name": "LayerScale"}
    assert rule_ids(scan_bytes(tmp_path, _op_model(scale), "model.json")) == set()
    builder = {"module": "keras.src.applications.resnet", "class_name": "ResNet50", "config": {"name": "op"}}
    assert rule_ids(scan_bytes(tmp_path, _op_model(builder), "model.json")) == {"WS-KERAS-003"}


@pytest.mark.parametrize("function", ["io.decode_csv", "convert_to_tensor", "dynamic_stitch"])
def test_pure_tensorflow_functions_in_io_and_framework_pass(tmp_path: Path, function: str) -> None:
    layer = {"class_name": "TFOpLambda", "config": {"name": "op", "function": function}}
    assert rule_ids(scan_bytes(tmp_path, _op_model(layer), "model.json")) == set()


def test_a_registered_custom_function_is_custom_code_not_an_import(tmp_path: Path) -> None:
    """tf_keras writes a registered activation as {"module": "builtins", "config": "MyPkg>my_act",
    "registered_name": "function"}: only the custom-object registry resolves it (medium), and builtins has no
    attribute "function" for Keras to fall back to."""
    function = {"module": "builtins", "class_name": "function", "config": "MyPkg>my_act",
                "registered_name": "function"}
    layer = {"class_name": "Dense", "config": {"name": "op", "units": 1, "activation": function}}
    report = scan_bytes(tmp_path, _op_model(layer), "model.json")
    assert [(f.rule_id, f.evidence["callable"]) for f in report.findings] == [("WS-KERAS-005", "MyPkg>my_act")]


def test_a_gap_between_the_key_and_its_colon_does_not_hide_an_oversized_model(tmp_path: Path) -> None:
    from wscan.config import Config
    from wscan.limits import Limits

    path = tmp_path / "model.json"
    path.write_text('{"class_name"' + " " * (1 << 20) + ': "Functional", "config": {"layers": []}}')
    assert json.loads(path.read_text())["class_name"] == "Functional"
    assert rule_ids(scan(path, Config(limits=Limits(max_json_bytes=4096)))) == {"WS-KERAS-009"}


def test_text_that_only_opens_with_a_brace_is_handed_back(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, b'{ "class_name": not json at all', "notes.txt")
    assert report.findings == [] and report.files[0].status == "skipped"
    report = scan_bytes(tmp_path, b'{ "class_name": not json at all', "model.json")  # named JSON: fails closed
    assert rule_ids(report) == {"WS-KERAS-020"}


@pytest.mark.parametrize(("name", "rule"), sorted(REVIEWED_HIGH.items()))
def test_reviewed_reads_of_outside_files_are_high(name: str, rule: str) -> None:
    report = scan(DATA / "reviewed" / name)
    assert rule in {f.rule_id for f in report.findings if f.severity == Severity.HIGH}, report.findings


@pytest.mark.parametrize("block", [1 << 16, 1 << 20])
def test_hdf5_behind_a_user_block_of_any_size_is_read(tmp_path: Path, block: int) -> None:
    """h5py (libhdf5) finds the superblock at any power of two; so must wscan, past its 64 KiB head."""
    import h5py

    path = tmp_path / "model.h5"
    with h5py.File(DATA / "hostile" / "read-file.h5", "r") as src, h5py.File(path, "w", userblock_size=block) as dst:
        for key, value in src.attrs.items():
            dst.attrs[key] = value
        for name in src:
            src.copy(src[name], dst, name=name)
    assert path.read_bytes()[block : block + 8] == b"\x89HDF\r\n\x1a\n"
    report = scan(path)
    assert "WS-KERAS-003" in rule_ids(report) and report.files[0].formats == ("keras",)


def test_a_large_file_without_a_late_signature_is_handed_back(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, b"\x00" * (1 << 18), "blob.bin")
    assert "keras" not in report.files[0].formats


# --- bounds (a robustness review of this work found each of these unbounded) ------------------------------


def _saved_metadata(configs: list[dict[str, object]]) -> bytes:
    from wscan.scanners.tf_graph import message_class

    metadata = message_class("KerasSavedMetadata")()
    for config in configs:
        metadata.nodes.add(metadata=json.dumps(config).encode())
    return bytes(metadata.SerializeToString())


def test_many_saved_objects_are_one_walk_with_one_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wscan.scanners import keras as keras_scanner
    from wscan.scanners import keras_config

    monkeypatch.setattr(keras_config, "MAX_OBJECTS", 50)
    configs = [{"class_name": f"C{i}", "config": {}} for i in range(80)]
    report = scan_bytes(tmp_path, _saved_metadata(configs), "keras_metadata.pb")
    assert "WS-KERAS-022" in rule_ids(report)
    assert len([f for f in report.findings if f.rule_id == "WS-KERAS-005"]) == 50  # not one per object
    monkeypatch.setattr(keras_scanner, "MAX_SAVED_CONFIGS", 10)
    assert "WS-KERAS-010" in rule_ids(scan_bytes(tmp_path, _saved_metadata(configs), "keras_metadata.pb"))


def test_the_walk_holds_the_nesting_not_the_width() -> None:
    import tracemalloc

    from wscan.scanners.keras_config import check_config

    top = {"class_name": "Sequential", "config": [{} for _ in range(300_000)]}
    tracemalloc.start()
    check_config(top, 10**7)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 * 2**20, peak  # a stack entry per element took hundreds of bytes each


def test_a_folder_of_checkpoint_indexes_is_listed_once(tmp_path: Path) -> None:
    from tests.helpers.scanning import default_engine  # noqa: F401  (the engine module loads the scanners)
    from wscan.limits import Budget, Limits
    from wscan.model import Location
    from wscan.scanners.base import Artifact, ScanContext
    from wscan.scanners.tf_checkpoint import TABLE_MAGIC, TfCheckpointScanner
    from wscan.scanners.tf_graph import _names_in

    for index in range(200):
        (tmp_path / f"m{index}.index").write_bytes(bytes(40) + TABLE_MAGIC)
        (tmp_path / f"m{index}.data-00000-of-00001").write_bytes(b"\0" * 8)
    _names_in.cache_clear()
    ctx = ScanContext(Limits(), Budget(Limits()))
    claims = 0
    for index in range(200):
        path = tmp_path / f"m{index}.index"
        artifact = Artifact(Location(str(path)), path.stat().st_size, path.open, name=path.name, real_path=path)
        claims += len(list(TfCheckpointScanner().scan(artifact, ctx)))
    assert claims == 400 and _names_in.cache_info().misses == 1


def test_a_large_binary_that_only_looks_like_utf32_json_is_handed_back(tmp_path: Path) -> None:
    from wscan.config import Config
    from wscan.limits import Limits

    report = scan_bytes(tmp_path, b"{\0\0\0" + bytes(8000), "blob.bin", Config(limits=Limits(max_json_bytes=1000)))
    assert rule_ids(report) == {"WS-FILE-006"}  # an unknown format (low), as before; it was a failed Keras config
    assert "keras" not in report.files[0].formats


def test_hdf5_behind_a_user_block_in_a_deflated_member_is_found(tmp_path: Path) -> None:
    import zipfile

    import h5py

    h5 = tmp_path / "weights.h5"
    with h5py.File(DATA / "hostile" / "read-file.h5", "r") as src, h5py.File(h5, "w", userblock_size=1 << 16) as dst:
        for key, value in src.attrs.items():
            dst.attrs[key] = value
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        out.write(h5, "model.weights.h5")
    assert "WS-KERAS-003" in rule_ids(scan(archive))
