"""TensorFlow graph scanner: SavedModel and GraphDef protobufs built with the scanner's own message types
(TensorFlow is not installed, ever): benign graphs, including the checkpoint ops every SavedModel has, are
clean; one hand-crafted graph per rule trips exactly that rule; damaged protobufs never raise."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.scanning import default_engine, rule_ids, scan
from tests.helpers.scanning import scan_bytes as _scan_bytes
from wscan.config import Config
from wscan.engine import Engine
from wscan.limits import Budget, Limits
from wscan.model import Location, Observation, Severity
from wscan.report import Report
from wscan.rules import builtin_rules_dir
from wscan.rules.loader import load_pack
from wscan.scanners import tf_graph
from wscan.scanners.base import Artifact, Head, ScanContext
from wscan.scanners.tf_graph import TfGraphScanner, message_class, sniff

# --- builders: copy these to make corpus samples --------------------------------------------------------------


def scan_bytes(folder: Path, blob: bytes, name: str = "graph.pb", limits: Limits | None = None) -> Report:
    return _scan_bytes(folder, blob, name, Config(limits=limits) if limits else None)


def add_node(graph: Any, name: str, op: str, inputs: tuple[str, ...] = (), **attrs: str | bytes) -> Any:
    """Append a NodeDef to a GraphDef (or a FunctionDef's node_def list). A bytes attribute becomes a string
    tensor (a Const's value); a str attribute becomes a string attribute (s)."""
    node = graph.node.add() if hasattr(graph, "node") else graph.node_def.add()
    node.name, node.op = name.encode(), op.encode()
    node.input.extend(i.encode() for i in inputs)
    for key, value in attrs.items():
        entry = node.attr.add(key=key.encode())
        if isinstance(value, bytes):
            entry.value.tensor.MergeFromString(b"\x08\x07")  # dtype DT_STRING: a field the scanner leaves out
            entry.value.tensor.string_val.append(value)
        else:
            entry.value.s = value.encode()
    return node


def add_function(graph: Any, name: str) -> Any:
    function = graph.library.function.add()
    function.signature.name = name.encode()
    return function


def benign_graph_def() -> bytes:
    """A frozen GraphDef: two constants and their sum."""
    graph = message_class("GraphDef")()
    add_node(graph, "a", "Const")
    add_node(graph, "b", "Const")
    add_node(graph, "sum", "AddV2", ("a", "b"))
    return bytes(graph.SerializeToString())


def _checkpoint_ops(graph: Any) -> None:
    """What tf.compat.v1 Saver and tf.saved_model put in every SavedModel: save and restore ops fed the
    variables path through save/Const (the saver_def's filename tensor), and a TF2 save function."""
    add_node(graph, "save/Const", "Const", value=b"model")
    add_node(graph, "save/StringJoin", "StringJoin", ("save/Const", "save/part"))
    add_node(graph, "save/ShardedFilename", "ShardedFilename", ("save/StringJoin", "save/num", "save/shards"))
    add_node(graph, "save/SaveV2", "SaveV2", ("save/ShardedFilename", "save/names", "save/slices", "w"))
    add_node(graph, "save/MergeV2Checkpoints", "MergeV2Checkpoints", ("save/Pack", "save/Const"))
    add_node(graph, "save/RestoreV2", "RestoreV2", ("save/Const", "save/names", "save/slices"))
    add_node(graph, "saver_filename", "Placeholder")
    add_node(graph, "StatefulPartitionedCall", "StatefulPartitionedCall", ("saver_filename",))
    traced = add_function(graph, "__inference__traced_save_42")
    add_node(traced, "StringJoin", "StringJoin", ("file_prefix", "Const:output:0"))
    add_node(traced, "SaveV2", "SaveV2", ("StringJoin:output:0", "names", "slices", "w"))
    add_node(traced, "MergeV2Checkpoints", "MergeV2Checkpoints", ("Pack:output:0", "file_prefix"))
    restore = add_function(graph, "__inference__traced_restore_43")
    add_node(restore, "RestoreV2", "RestoreV2", ("file_prefix", "names", "slices"))


def saved_model(build: Callable[[Any], None], saver: str = "save/Const:0") -> bytes:
    """A SavedModel (schema version 1, one meta graph with a saver) whose graph `build` fills."""
    model = message_class("SavedModel")(saved_model_schema_version=1)
    meta = model.meta_graphs.add()
    meta.saver_def.filename_tensor_name = saver.encode()
    build(meta.graph_def)
    return bytes(model.SerializeToString())


def benign_saved_model() -> bytes:
    def build(graph: Any) -> None:
        add_node(graph, "x", "Placeholder")
        add_node(graph, "w", "VarHandleOp")
        add_node(graph, "read", "ReadVariableOp", ("w",))
        add_node(graph, "y", "MatMul", ("x", "read"))
        _checkpoint_ops(graph)

    return saved_model(build)


def hostile_graph_def() -> bytes:
    """A frozen GraphDef that reads /etc/passwd, writes ~/.bashrc and calls a registered Python function."""
    graph = message_class("GraphDef")()
    add_node(graph, "path", "Const", value=b"/etc/passwd")
    add_node(graph, "read", "ReadFile", ("path",))
    add_node(graph, "target", "Const", value=b"/root/.bashrc")
    add_node(graph, "write", "WriteFile", ("target", "read"))
    add_node(graph, "callback", "PyFunc", ("read",), token="pyfunc_0")
    return bytes(graph.SerializeToString())


def hostile_saved_model() -> bytes:
    """A SavedModel whose serving function writes a file and whose graph reads one."""

    def build(graph: Any) -> None:
        _checkpoint_ops(graph)
        add_node(graph, "path", "Const", value=b"/etc/shadow")
        add_node(graph, "id", "Identity", ("path",))
        add_node(graph, "read", "ReadFile", ("id:0",))
        serve = add_function(graph, "__inference_serve_7")
        add_node(serve, "target", "Const", value=b"/root/.ssh/authorized_keys")
        add_node(serve, "write", "WriteFile", ("target:output:0", "key"))
        add_node(serve, "py", "EagerPyFunc", ("x",), token="pyfunc_3")

    return saved_model(build)


# --- helpers ----------------------------------------------------------------------------------------------


def observe(blob: bytes, name: str = "graph.pb") -> list[Observation]:
    artifact = Artifact(Location(name), len(blob), lambda: io.BytesIO(blob), name=name)
    limits = Limits()
    scanned = TfGraphScanner().scan(artifact, ScanContext(limits, Budget(limits)))
    return [o for o in scanned if isinstance(o, Observation)]


def graph_with(*nodes: tuple[str, str, tuple[str, ...], dict[str, str | bytes]]) -> bytes:
    graph = message_class("GraphDef")()
    for name, op, inputs, attrs in nodes:
        add_node(graph, name, op, inputs, **attrs)
    return bytes(graph.SerializeToString())


# --- benign -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("blob", "name"),
    [
        (benign_graph_def(), "frozen_graph.pb"),
        (benign_graph_def(), "model.bin"),
        (benign_saved_model(), "saved_model.pb"),
        (benign_saved_model(), "export.pb"),
    ],
)
def test_benign_graphs_have_no_findings(tmp_path: Path, blob: bytes, name: str) -> None:
    report = scan_bytes(tmp_path, blob, name)
    assert report.findings == []
    assert report.files[0].status == "scanned" and "tf-graph" in report.files[0].formats


def test_a_pb_is_read_one_message_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A `.pb` is read as each of the three messages; each reading is walked before the next is parsed, so one
    parsed copy of the graph is alive at a time (a 700 MB frozen graph took 2.9 GB, three readings at once)."""
    events: list[str] = []
    parse, ops = tf_graph._parse, tf_graph._ops

    def parsing(data: bytes, kind: str, *rest: Any, **options: Any) -> Any:
        events.append(f"parse {kind}")
        return parse(data, kind, *rest, **options)

    def walking(artifact: Artifact, ctx: ScanContext, message: Any, kind: str) -> Any:
        events.append(f"walk {kind}")
        return ops(artifact, ctx, message, kind)

    monkeypatch.setattr(tf_graph, "_parse", parsing)
    monkeypatch.setattr(tf_graph, "_ops", walking)
    findings = {o.kind for o in observe(hostile_graph_def())}
    assert findings and "tf.malformed" not in findings
    walked = [e.split()[1] for e in events if e.startswith("walk")]
    assert "graph_def" in walked
    for kind in walked:  # walked right after it was parsed
        assert events[events.index(f"walk {kind}") - 1] == f"parse {kind}"


def test_keras_and_fingerprint_side_files_are_not_graphs() -> None:
    scanner = TfGraphScanner()
    for name in ("keras_metadata.pb", "fingerprint.pb"):
        assert not scanner.accepts(Head(benign_graph_def(), b"", 10, f"m/{name}"))


# --- hostile: one rule each ----------------------------------------------------------------------------------


def _saved_model_without_graph() -> bytes:
    return bytes(message_class("SavedModel")(saved_model_schema_version=1).SerializeToString())


HOSTILE: dict[str, tuple[bytes, str, Limits | None]] = {
    "WS-TF-001": (graph_with(("py", "PyFunc", ("x",), {"token": "pyfunc_0"})), "g.pb", None),
    "WS-TF-002": (graph_with(("p", "Const", (), {"value": b"/root/.bashrc"}), ("w", "WriteFile", ("p", "c"), {})),
                  "g.pb", None),
    "WS-TF-003": (graph_with(("r", "ReadFile", ("fed_path",), {})), "g.pb", None),  # a path fed in at run time
    "WS-TF-012": (graph_with(("p", "Const", (), {"value": b"/etc/passwd"}), ("r", "ReadFile", ("p",), {})),
                  "g.pb", None),
    "WS-TF-004": (saved_model(lambda g: (add_node(g, "p", "Const", value=b"/tmp/x"),
                                         add_node(g, "s", "SaveV2", ("p", "n", "s", "t")))), "saved_model.pb", None),
    "WS-TF-005": (saved_model(lambda g: (add_node(g, "p", "Const", value=b"/srv/other/ckpt"),
                                         add_node(g, "r", "RestoreV2", ("p", "n", "s")))), "saved_model.pb", None),
    "WS-TF-006": (graph_with(("d", "DataServiceDatasetV4", ("id", "proto", "addr"), {})), "g.pb", None),
    "WS-TF-007": (b"\x12\x05ab", "saved_model.pb", None),  # a meta graph of 5 bytes with 2 left
    "WS-TF-008": (_saved_model_without_graph(), "saved_model.pb", None),
    "WS-TF-009": (benign_graph_def(), "g.pb", Limits(max_member_bytes=8)),
    # tf_keras' adapted Discretization layer, saved as a SavedModel by tf_keras 2.21 (tests/data/tf_keras)
    "WS-TF-011": ((Path(__file__).resolve().parents[1] / "data" / "tf_keras" / "benign" / "discretization-savedmodel"
                   / "saved_model.pb").read_bytes(), "saved_model.pb", None),
}  # fmt: skip


def _saved_model_with_asset(filename: bytes) -> bytes:
    """A benign SavedModel whose one asset, fed to a Const the graph reads, is named `filename`."""
    model = message_class("SavedModel").FromString(benign_saved_model())
    meta = model.meta_graphs[0]
    add_node(meta.graph_def, "asset_path", "Const", value=b"vocab.txt")
    meta.asset_file_def.add(filename=filename).tensor_info.name = b"asset_path:0"
    return bytes(model.SerializeToString())


HOSTILE["WS-TF-013"] = (graph_with(("d", "DatasetFromGraph", ("serialized",), {})), "g.pb", None)
HOSTILE["WS-TF-014"] = (_saved_model_with_asset(b"../../../etc/passwd"), "saved_model.pb", None)


def test_a_fed_asset_path_is_not_a_path_written_into_the_graph(tmp_path: Path) -> None:
    """A TF1 SavedModel's vocabulary table reads a Const the loader feeds with the asset's path (asset_file_def):
    not WS-TF-012. The same Const not named as an asset is."""
    def table(graph: Any) -> None:
        add_node(graph, "table", "HashTableV2")
        add_node(graph, "init", "InitializeTableFromTextFileV2", ("table", "asset_path"))

    model = message_class("SavedModel").FromString(saved_model(table))
    meta = model.meta_graphs[0]
    add_node(meta.graph_def, "asset_path", "Const", value=b"/export/dir/assets/vocab.txt")
    unfed = bytes(model.SerializeToString())
    meta.asset_file_def.add(filename=b"vocab.txt").tensor_info.name = b"asset_path:0"
    fed = bytes(model.SerializeToString())
    assert "WS-TF-012" in rule_ids(scan_bytes(tmp_path / "unfed", unfed, "saved_model.pb"))
    assert "WS-TF-012" not in rule_ids(scan_bytes(tmp_path / "fed", fed, "saved_model.pb"))


def test_every_rule_has_a_fixture() -> None:
    rules = {rule["id"] for rule in load_pack(builtin_rules_dir() / "tensorflow.yaml")["rules"]}
    assert rules == set(HOSTILE) | {"WS-TF-010"}


@pytest.mark.parametrize("rule", sorted(HOSTILE))
def test_each_hostile_graph_trips_exactly_its_rule(tmp_path: Path, rule: str) -> None:
    blob, name, limits = HOSTILE[rule]
    report = scan_bytes(tmp_path, blob, name, limits)
    assert rule_ids(report) == {rule}, [f.message for f in report.findings]


def test_hostile_graph_def_names_nodes_and_paths(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, hostile_graph_def(), "frozen.pb")
    found = {(f.rule_id, f.evidence["node"], f.evidence["target"]) for f in report.findings}
    assert found == {
        ("WS-TF-012", "read", "/etc/passwd"),
        ("WS-TF-002", "write", "/root/.bashrc"),
        ("WS-TF-001", "callback", "token=pyfunc_0"),
    }


def test_hostile_saved_model_ops_inside_functions_and_through_identity(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path / "model", hostile_saved_model(), "saved_model.pb")
    found = {(f.rule_id, f.evidence["function"], f.evidence["node"], f.evidence["path"]) for f in report.findings}
    assert found == {
        ("WS-TF-012", "<graph>", "read", "/etc/shadow"),
        ("WS-TF-002", "__inference_serve_7", "write", "/root/.ssh/authorized_keys"),
        ("WS-TF-001", "__inference_serve_7", "py", ""),
    }


@pytest.mark.parametrize(
    ("op", "attr", "value", "rule"),
    [
        ("PrintV2", "output_stream", "file:///home/u/.profile", "WS-TF-002"),
        ("PrintV2", "output_stream", "stderr", None),
        ("DecodeProtoV2", "descriptor_source", "/etc/descriptors.bin", "WS-TF-012"),
        ("DecodeProtoV2", "descriptor_source", "local://", None),
        ("DebugIdentity", "debug_urls", "grpc://attacker:6064", "WS-TF-006"),
        ("DebugIdentity", "debug_urls", "file:///tmp/dump", "WS-TF-002"),
        ("ImmutableConst", "memory_region_name", "/dev/mem", "WS-TF-012"),
    ],
)
def test_ops_judged_by_their_attributes(tmp_path: Path, op: str, attr: str, value: str, rule: str | None) -> None:
    report = scan_bytes(tmp_path, graph_with(("n", op, ("x",), {attr: value})))
    assert rule_ids(report) == ({rule} if rule else set())
    if rule:
        assert value in report.findings[0].message


def test_restore_from_the_fed_filename_is_normal_but_not_from_another_constant(tmp_path: Path) -> None:
    def build(graph: Any) -> None:
        add_node(graph, "save/Const", "Const", value=b"model")
        add_node(graph, "save/RestoreV2", "RestoreV2", ("save/Const",))

    assert rule_ids(scan_bytes(tmp_path, saved_model(build), "saved_model.pb")) == set()
    assert rule_ids(scan_bytes(tmp_path, saved_model(build, saver="other:0"), "saved_model.pb")) == {"WS-TF-005"}


def test_more_flagged_ops_than_listed_are_counted() -> None:
    nodes = [(f"r{i}", "ReadFile", ("x",), {}) for i in range(tf_graph.MAX_REPORTED + 3)]
    found = observe(graph_with(*nodes))
    assert len([o for o in found if o.kind == "tf.op"]) == tf_graph.MAX_REPORTED
    (more,) = [o for o in found if o.kind == "tf.more_ops"]
    assert more.attrs["count"] == 3
    (finding,) = default_engine().rules.judge([more])
    assert finding.rule_id == "WS-TF-010" and finding.severity == Severity.INFO


def test_flagged_ops_of_one_kind_never_hide_another() -> None:
    """A thousand RestoreV2 nodes reading a fed path (flagged ops no rule judges) once filled the list, and a
    WriteFile after them was only counted, as info (helper 208). The list is capped per kind the rules tell apart."""
    restores = [(f"r{i}", "RestoreV2", ("p", "p", "p"), {}) for i in range(tf_graph.MAX_REPORTED)]
    found = observe(graph_with(*restores, ("w", "WriteFile", ("p", "p"), {})))
    assert [o.attrs["op"] for o in found if o.kind == "tf.op" and o.attrs["category"] == "file-write"] == ["WriteFile"]
    assert "WS-TF-002" in {f.rule_id for f in default_engine().rules.judge(found)}


def test_names_that_are_not_utf8_neither_fail_the_parse_nor_vanish() -> None:
    graph = message_class("GraphDef")()
    add_node(graph, "x", "ReadFile").name = b"\xffread"
    (op,) = observe(bytes(graph.SerializeToString()))
    assert op.attrs["op"] == "ReadFile" and op.attrs["node"] == "\\xffread"


# --- sniffing -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("blob", "expected"),
    [
        (benign_graph_def(), "graph_def"),
        (benign_saved_model(), "saved_model"),
        (benign_saved_model()[:40], "saved_model"),  # a head cut inside the first meta graph
        (b"\x08\x07\x12\x07pytorch\x1a\x032.1", None),  # an ONNX ModelProto: ir_version 7, producer name
        (b"\x08\x01\x12\x07pytorch", None),  # ir_version 1: "pytorch" is no MetaGraphDef
        (b"\x80\x04\x95\x10\x00", None),  # a pickle
        (b"PK\x03\x04", None),
        (b"hello world, this is text", None),
        (b"\x0a\x04name\x12\x07not op!", None),  # an op name is an identifier
        (b"", None),
    ],
)
def test_sniff(blob: bytes, expected: str | None) -> None:
    assert sniff(blob) == expected


def test_saved_model_pb_is_taken_on_its_name_whatever_its_bytes(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, b"garbage that is not a protobuf \xff\xff", "saved_model.pb")
    assert rule_ids(report) == {"WS-TF-007"} and report.files[0].status == "failed"


# --- hostile input never raises -------------------------------------------------------------------------------


def _mutate(data: st.DataObject, sample: bytes) -> bytes:
    blob = bytearray(sample)
    for _ in range(data.draw(st.integers(0, 8))):
        position = data.draw(st.integers(0, len(blob) - 1))
        blob[position] ^= 1 << data.draw(st.integers(0, 7))
    cut = data.draw(st.integers(0, len(blob))) if data.draw(st.booleans()) else len(blob)  # half are whole
    return bytes(blob[:cut])


@pytest.mark.parametrize("sample", ["graph_def", "saved_model", "hostile"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutations_never_raise(sample: str, data: st.DataObject) -> None:
    blob = {"graph_def": benign_graph_def, "saved_model": benign_saved_model, "hostile": hostile_saved_model}[sample]()
    found = observe(_mutate(data, blob), "saved_model.pb")
    assert not any(o.kind == "scan.error" for o in found)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tf_graph")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_always_returns_scanned_or_failed(work: Path, data: st.DataObject) -> None:
    path = work / "m.pb"
    path.write_bytes(_mutate(data, benign_saved_model()))
    report = default_engine().scan([path])
    assert report.files[0].status in {"scanned", "failed", "skipped"}
    assert not any(f.rule_id == "WS-FILE-001" for f in report.findings)


def test_a_large_saved_model_is_not_taken_for_onnx(tmp_path: Path) -> None:
    """Real SavedModels run past the 64 KiB head: the schema version field reads as ONNX ir_version 1."""

    def build(graph: Any) -> None:
        for i in range(3000):
            add_node(graph, f"dense_{i}/MatMul", "MatMul", ("x", f"w{i}"))
        _checkpoint_ops(graph)

    report = scan_bytes(tmp_path / "big", saved_model(build), "saved_model.pb")
    assert report.files[0].formats == ("tf-graph",) and report.findings == []


def test_saved_model_folder_with_its_variables_is_clean(tmp_path: Path) -> None:
    """The checkpoint beside saved_model.pb is the graph's data: claimed, so no unknown-format finding."""
    folder = tmp_path / "export"
    (folder / "variables").mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(benign_saved_model())
    (folder / "variables" / "variables.index").write_bytes(b"\x00\x01table" + bytes(40))
    (folder / "variables" / "variables.data-00000-of-00001").write_bytes(bytes(range(256)) * 4)
    report = Engine(Config()).scan([folder])
    assert [(f.rule_id, f.location.path) for f in report.findings] == []
    formats = {Path(f.path).name: f.formats for f in report.files}
    assert formats["variables.index"] == ("tf-variables",)
    # Claimed files are still sniffed: a pickle in the shards is found.
    (folder / "variables" / "variables.data-00000-of-00001").write_bytes(b"cposix\nsystem\n(S'id'\ntR.")
    assert "WS-PKL-001" in {f.rule_id for f in Engine(Config()).scan([folder]).findings}


# --- text format, TF1 meta graphs, and files TensorFlow itself wrote --------------------------------------------

TF_DATA = Path(__file__).resolve().parents[1] / "data" / "tensorflow"  # written by make.py there, with TensorFlow


def as_text(blob: bytes, kind: str) -> bytes:
    """A binary graph of this module's builders, printed as protobuf text (as TensorFlow prints it)."""
    from google.protobuf import text_format

    message = message_class(tf_graph.MESSAGE_OF[kind])()
    message.ParseFromString(blob)
    return text_format.MessageToString(message).encode()


@pytest.mark.parametrize("text", ["", "a", "a\n", "\n\nb\n", "x\ny\r\nz\u2028w", "\n" * 20_000])
def test_text_lines_are_what_text_format_merge_splits(text: str) -> None:
    ticks: list[int] = []
    assert list(tf_graph._lines(text, lambda: ticks.append(1))) == text.split("\n")
    assert len(ticks) == (text.count("\n") + 1) // tf_graph._TICK


def test_a_slow_text_graph_stops_at_the_time_limit(tmp_path: Path) -> None:
    """Python's text parser reads about 1 MB/s: a large text graph is stopped by the per-file time budget."""
    text = b"".join(b'node {\n  name: "n%d"\n  op: "Const"\n}\n' % i for i in range(100_000))
    report = scan_bytes(tmp_path, text, "graph.pbtxt", Limits(max_seconds_per_file=0.2))
    assert [(f.rule_id, f.evidence.get("limit")) for f in report.findings] == [("WS-FILE-002", "max-seconds-per-file")]


def meta_graph(build: Callable[[Any], None], saver: str | None = "save/Const:0") -> bytes:
    """A TF1 `.meta`: meta info (tags), a graph that `build` fills and, unless None, a saver."""
    meta = message_class("MetaGraphDef")()
    meta.MergeFromString(b"\x0a\x07\x22\x05serve")  # meta_info_def { tags: "serve" }, a field left out here
    if saver is not None:
        meta.saver_def.filename_tensor_name = saver.encode()
    build(meta.graph_def)
    return bytes(meta.SerializeToString())


def test_files_tensorflow_wrote_are_read_and_clean() -> None:
    """TF1 SavedModelBuilder(as_text=True), Saver.save, write_graph and export_meta_graph(as_text=True), each
    with the save and restore ops a Saver adds (two Savers in the SavedModel: the loader's and the user's)."""
    report = Engine(Config()).scan([TF_DATA / "benign"])
    assert report.findings == []
    formats = {Path(f.path).relative_to(TF_DATA.relative_to(Path.cwd()) / "benign").as_posix(): f.formats
               for f in report.files}  # fmt: skip
    assert formats == {
        "graph.pbtxt": ("tf-graph",),
        "model-text.meta": ("tf-graph",),
        "saved-model-text/saved_model.pbtxt": ("tf-graph",),
        "saved-model-text/variables/variables.data-00000-of-00001": ("tf-variables",),
        "saved-model-text/variables/variables.index": ("tf-variables",),
        "tf1-checkpoint/model.ckpt.meta": ("tf-graph",),
        "tf1-checkpoint/model.ckpt.index": ("tf-checkpoint",),
        "tf1-checkpoint/model.ckpt.data-00000-of-00001": ("tf-checkpoint",),
    }


@pytest.mark.parametrize(("folder", "file"), [("saved-model-text", "saved_model.pbtxt"),
                                              ("tf1-checkpoint", "model.ckpt.meta")])  # fmt: skip
def test_files_tensorflow_runs_a_write_from_are_flagged(folder: str, file: str) -> None:
    """make.py proved it: loading the text SavedModel runs its main_op, restoring the checkpoint through its
    `.meta` runs the restore op, and each writes the marker file."""
    report = Engine(Config()).scan([TF_DATA / "hostile" / folder])
    found = {(Path(f.location.path).name, f.rule_id, f.evidence["op"], f.evidence["target"]) for f in report.findings}
    assert found == {(file, "WS-TF-002", "WriteFile", "wscan-tf-marker.txt")}
    assert report.failed


@pytest.mark.parametrize("kind", ["graph_def", "saved_model"])
def test_text_graphs_are_judged_as_their_binary_form(tmp_path: Path, kind: str) -> None:
    blob = hostile_graph_def() if kind == "graph_def" else hostile_saved_model()
    name = "saved_model.pb" if kind == "saved_model" else "frozen.pb"
    binary = scan_bytes(tmp_path / "binary", blob, name)
    text = scan_bytes(tmp_path / "text", as_text(blob, kind), name + "txt")
    assert len(binary.findings) == 3
    assert [(f.rule_id, f.evidence) for f in text.findings] == [(f.rule_id, f.evidence) for f in binary.findings]


def test_meta_graph_ops_are_judged_and_its_saver_is_fed(tmp_path: Path) -> None:
    def build(graph: Any) -> None:
        _checkpoint_ops(graph)
        add_node(graph, "p", "Const", value=b"/root/.bashrc")
        add_node(graph, "w", "WriteFile", ("p", "c"))

    blob = meta_graph(build)
    assert sniff(blob) == "meta_graph"
    found = {(f.rule_id, f.evidence["node"]) for f in scan_bytes(tmp_path, blob, "model.ckpt-100.meta").findings}
    assert found == {("WS-TF-002", "w")}
    # Without the saver_def the checkpoint path is a graph constant like any other: save/Const, the restore's
    # input and MergeV2Checkpoints' destination.
    no_saver = scan_bytes(tmp_path / "other", meta_graph(build, saver=None), "model.ckpt-100.meta")
    assert rule_ids(no_saver) == {"WS-TF-002", "WS-TF-004", "WS-TF-005"}


def _tf1_saver(graph: Any, default: bytes, scope: str = "save") -> None:
    """What `tf.compat.v1.train.Saver()` adds: a filename placeholder with a default, fed by save and restore."""
    add_node(graph, f"{scope}/filename/input", "Const", value=default)
    add_node(graph, f"{scope}/filename", "PlaceholderWithDefault", (f"{scope}/filename/input",))
    add_node(graph, f"{scope}/Const", "PlaceholderWithDefault", (f"{scope}/filename",))
    add_node(graph, f"{scope}/SaveV2", "SaveV2", (f"{scope}/Const", "names", "slices", "w"))
    add_node(graph, f"{scope}/RestoreV2", "RestoreV2", (f"{scope}/Const", "names", "slices"))


@pytest.mark.parametrize(
    ("default", "scope", "expected"),
    [
        (b"model", "save", set()),  # the Saver's own default: a file name save and restore replace
        (b"model", "save_1", set()),  # a second Saver in the same graph
        (b"ckpt", "outer/save", set()),
        (b"/etc/cron.d/job", "save", {"WS-TF-004", "WS-TF-005"}),  # a default the graph chose, with a folder
        (b"C:\\Users\\x", "save", {"WS-TF-004", "WS-TF-005"}),
        (b"gs://bucket/x", "save", {"WS-TF-004", "WS-TF-005"}),
    ],
)
def test_a_tf1_saver_in_a_bare_graph_is_fed(tmp_path: Path, default: bytes, scope: str, expected: set[str]) -> None:
    graph = message_class("GraphDef")()
    _tf1_saver(graph, default, scope)
    assert rule_ids(scan_bytes(tmp_path, bytes(graph.SerializeToString()), "graph.pb")) == expected


def test_only_the_savers_own_shape_is_fed(tmp_path: Path) -> None:
    """A constant named like the Saver's input, or a placeholder over another node, is not the Saver's."""
    graph = message_class("GraphDef")()
    add_node(graph, "save/Const", "Const", value=b"model")
    add_node(graph, "save/SaveV2", "SaveV2", ("save/Const", "names", "slices", "w"))
    add_node(graph, "x/filename/input", "Const", value=b"model")
    add_node(graph, "x/other", "PlaceholderWithDefault", ("x/filename/input",))
    add_node(graph, "x/Const", "PlaceholderWithDefault", ("x/other",))
    add_node(graph, "x/SaveV2", "SaveV2", ("x/Const", "names", "slices", "w"))
    found = {f.evidence["node"] for f in scan_bytes(tmp_path, bytes(graph.SerializeToString())).findings}
    assert found == {"save/SaveV2", "x/SaveV2"}


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'node {\n  name: "a"\n  op: "Const"\n}\n', "graph_def"),
        (b"# written by hand\n\n  node < name: 'a' op: 'Const' >", "graph_def"),
        (b"library {\n  function {\n", "graph_def"),
        (b"saved_model_schema_version: 1\nmeta_graphs {\n", "saved_model"),
        (b"meta_graphs {\n  graph_def {\n", "saved_model"),
        (b"meta_info_def {\n  stripped_op_list {\n", "meta_graph"),
        (b"graph_def {\n  node {\n", "meta_graph"),
        (b"node {\n  stage('Build') {\n    sh 'make'\n  }\n}\n", None),  # a scripted Jenkinsfile
        (b"name: my-model\nlibrary: transformers\n", None),
        (b"{\"node\": {\"name\": 1}}", None),
        (b"", None),
    ],
)
def test_sniff_text(head: bytes, expected: str | None) -> None:
    assert tf_graph.sniff_text(head) == expected


@pytest.mark.parametrize(
    "blob",
    [
        b"\n\n2024 results\nsee the tables below, which run long enough\n",  # a blank line, then text
        b"\n\x05<unk>\x15\x00\x00\x00\x00\x18\x02\n\x03<s>",  # a SentencePiece model's first pieces
        b"\n\x14VGG_ILSVRC_16_layers\x12\x04data",  # a Caffe model's name
    ],
)
def test_other_length_delimited_starts_are_not_meta_graphs(blob: bytes) -> None:
    assert sniff(blob) is None


def test_tensorflows_own_meta_graph_and_text_are_sniffed() -> None:
    assert sniff((TF_DATA / "benign" / "tf1-checkpoint" / "model.ckpt.meta").read_bytes()) == "meta_graph"
    assert tf_graph.sniff_text((TF_DATA / "benign" / "graph.pbtxt").read_bytes()[:4096]) == "graph_def"
    text_model = (TF_DATA / "benign" / "saved-model-text" / "saved_model.pbtxt").read_bytes()
    assert tf_graph.sniff_text(text_model[:4096]) == "saved_model"


@pytest.mark.parametrize(
    ("blob", "name", "rule"),
    [
        (b'node {\n  name: "a"\n  op: "Const"\n  attr { key: "value" value { s: "x" }', "graph.pbtxt", "WS-TF-007"),
        (b'node {\n  name: "a"\n  op: "Const" ( }\n', "graph.pbtxt", "WS-TF-007"),
        (b'node {\n  name: "\xff\xfe"\n}\n', "graph.pbtxt", "WS-TF-007"),  # not UTF-8: TensorFlow refuses it too
        (b"saved_model_schema_version: 1\n", "saved_model.pbtxt", "WS-TF-008"),
        (b"\n\n", "saved_model.pbtxt", "WS-TF-008"),  # taken on its name, like saved_model.pb
        (b"this is not protobuf text at all", "saved_model.pbtxt", "WS-TF-007"),
    ],
)
def test_broken_text_graphs_fail_closed(tmp_path: Path, blob: bytes, name: str, rule: str) -> None:
    report = scan_bytes(tmp_path, blob, name)
    assert rule_ids(report) == {rule} and report.files[0].status == "failed"


def test_text_fields_this_scanner_leaves_out_are_skipped_not_refused(tmp_path: Path) -> None:
    """Enum values by name, Any expansions and unknown nested messages, as TensorFlow prints them."""
    text = b"""saved_model_schema_version: 1
meta_graphs {
  meta_info_def { tags: "serve" any_info { [type.googleapis.com/tensorflow.Foo] { x: 1 } } }
  graph_def {
    node { name: "p" op: "Const" attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { }
      string_val: "/root/.bashrc" } } } }
    node { name: "w" op: "WriteFile" input: "p" input: "c" device: "/cpu:0" }
    versions { producer: 1395 }
  }
  signature_def { key: "serving_default" value { method_name: "tensorflow/serving/predict" } }
}
"""
    found = {(f.rule_id, f.evidence["target"]) for f in scan_bytes(tmp_path, text, "saved_model.pbtxt").findings}
    assert found == {("WS-TF-002", "/root/.bashrc")}


@pytest.mark.parametrize("sample", ["graph_def", "saved_model", "hostile"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_text_mutations_never_raise(sample: str, data: st.DataObject) -> None:
    blob = {"graph_def": benign_graph_def, "saved_model": benign_saved_model, "hostile": hostile_saved_model}[sample]()
    text = as_text(blob, "graph_def" if sample == "graph_def" else "saved_model")
    found = observe(_mutate(data, text), "saved_model.pbtxt")
    assert not any(o.kind == "scan.error" for o in found)


# --- evasions found in review, each run by TensorFlow (tests/data/tensorflow/evasions/README.md) ---------------

EVASIONS = TF_DATA / "evasions"


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("saverfirst-text.meta", "WS-TF-002"),
        ("longcomment-text.meta", "WS-TF-002"),
        ("saverfirst-bin.meta", "WS-TF-002"),
        ("infoextra-bin.meta", "WS-TF-002"),
        ("opfirst-graph.pbtxt", "WS-TF-002"),
        ("versionsfirst-graph.pbtxt", "WS-TF-002"),
        ("list-graph.pbtxt", "WS-TF-002"),
        ("polyglot/saved_model.pbtxt", "WS-TF-002"),
        ("long.pb", "WS-TF-004"),
        ("content.pb", "WS-TF-004"),
        ("oneof.pb", "WS-TF-004"),
        ("saverdef-const.meta", "WS-TF-004"),
    ],
)
def test_graphs_tensorflow_runs_are_read_whatever_their_layout(name: str, rule: str) -> None:
    report = scan(EVASIONS / name)
    assert rule in rule_ids(report), [f.message for f in report.findings]


def test_the_name_decides_the_encoding_of_a_saved_model(tmp_path: Path) -> None:
    """saved_model.pbtxt is text to TensorFlow even when its bytes also parse as a binary graph, and
    saved_model.pb is binary even when it reads as text."""
    text = as_text(hostile_saved_model(), "saved_model")
    hidden = b"#" + benign_graph_def().replace(b"\n", b"") + b"\n" + text
    assert sniff(hidden[:4096]) is not None or True  # whatever the sniff says, the name wins
    assert rule_ids(scan_bytes(tmp_path / "a", hidden, "saved_model.pbtxt")) >= {"WS-TF-002"}
    assert rule_ids(scan_bytes(tmp_path / "b", text, "saved_model.pb")) == {"WS-TF-007"}


def test_a_meta_is_binary_if_it_parses_so_else_text(tmp_path: Path) -> None:
    def build(graph: Any) -> None:
        add_node(graph, "p", "Const", value=b"/root/.bashrc")
        add_node(graph, "w", "WriteFile", ("p", "c"))

    binary = meta_graph(build)
    assert rule_ids(scan_bytes(tmp_path / "a", binary, "x.meta")) == {"WS-TF-002"}
    assert rule_ids(scan_bytes(tmp_path / "b", as_text(binary, "meta_graph"), "x.meta")) == {"WS-TF-002"}
    assert rule_ids(scan_bytes(tmp_path / "c", b"meta_info_def { tags: ", "x.meta")) == {"WS-TF-007"}
    # Unity keeps YAML in .meta files beside every asset (ML-Agents models too): no graph, so no TF finding.
    unity = b"fileFormatVersion: 2\nguid: 4b3e2d1f0a9c8b7e6d5c4b3a29181716\nScriptedImporter:\n  userData: \n"
    assert rule_ids(scan_bytes(tmp_path / "d", unity, "Pyramids.onnx.meta")) == {"WS-FILE-006"}


@pytest.mark.parametrize(
    ("default", "expected"),
    [
        (b"a" * 300 + b"/../../tmp/x", {"WS-TF-004", "WS-TF-005"}),  # the whole default counts, not 200 characters
        (b"model", set()),
    ],
)
def test_the_savers_default_is_judged_whole(tmp_path: Path, default: bytes, expected: set[str]) -> None:
    graph = message_class("GraphDef")()
    _tf1_saver(graph, default)
    assert rule_ids(scan_bytes(tmp_path, bytes(graph.SerializeToString()), "graph.pb")) == expected


def test_the_last_member_of_an_attr_value_is_its_value() -> None:
    value = message_class("AttrValue")()
    value.MergeFromString(b"\x12\x05model")  # s
    value.MergeFromString(b"\x42\x0b\x42\x09/tmp/evil")  # then tensor { string_val }
    assert value.WhichOneof("value") == "tensor" and tf_graph._attr_value(value) == b"/tmp/evil"
    value.MergeFromString(b"\x12\x05model")  # s again
    assert tf_graph._attr_value(value) == b"model"


def test_a_one_line_text_graph_stops_at_the_time_limit(tmp_path: Path) -> None:
    text = b" ".join(b'node { name: "n%d" op: "Const" }' % i for i in range(200_000))  # 6 MB on one line
    report = scan_bytes(tmp_path, text, "graph.pbtxt", Limits(max_seconds_per_file=0.5))
    assert [(f.rule_id, f.evidence.get("limit")) for f in report.findings] == [("WS-FILE-002", "max-seconds-per-file")]


@pytest.mark.parametrize("line", ['node { name: "a b" op: \'Const\' } ' * 5000, 'x: "' + "y " * 50_000 + '"'])
def test_long_lines_are_cut_only_where_text_format_allows(line: str) -> None:
    pieces = list(tf_graph._pieces(line))
    assert all(len(piece) <= 2 * tf_graph._PIECE for piece in pieces[:-1]) or len(pieces) == 1
    assert " ".join(pieces).split() == line.split()  # no token cut, none joined
    for piece in pieces:
        assert piece.count('"') % 2 == 0 or len(pieces) == 1  # never inside a string


def test_text_larger_than_the_text_limit_is_not_parsed(tmp_path: Path) -> None:
    text = as_text(hostile_graph_def(), "graph_def")
    report = scan_bytes(tmp_path, text, "graph.pbtxt", Limits(max_json_bytes=100))
    assert rule_ids(report) == {"WS-TF-009"}


# --- a path passed to a function: followed to what its callers pass ----------------------------------------------


def call(graph: Any, name: str, function: str, inputs: tuple[str, ...], op: str = "PartitionedCall") -> Any:
    """A node that calls `function` (named in its `f` attribute, as TensorFlow writes PartitionedCall)."""
    node = add_node(graph, name, op, inputs)
    node.attr.add(key=b"f").value.func.name = function.encode()
    return node


def reader(graph: Any, name: str, arguments: tuple[str, ...], path: str) -> Any:
    """A library function of these arguments that reads `path` (one of them, or a node it joins from one)."""
    function = add_function(graph, name)
    function.signature.input_arg.extend(message_class("ArgDef")(name=a.encode()) for a in arguments)
    add_node(function, "ReadFile", "ReadFile", (path,))
    return function


def _functions_rules(tmp_path: Path, build: Callable[[Any], None]) -> set[str]:
    graph = message_class("GraphDef")()
    build(graph)
    return rule_ids(scan_bytes(tmp_path, bytes(graph.SerializeToString())))


def test_a_constant_passed_down_a_chain_of_calls_is_written_into_the_graph(tmp_path: Path) -> None:
    def chain_of(depth: int) -> Callable[[Any], None]:
        def build(graph: Any) -> None:
            add_node(graph, "path", "Const", value=b"/etc/passwd")
            call(graph, "call", "f0", ("path",))
            for level in range(depth - 1):
                passer = add_function(graph, f"f{level}")
                passer.signature.input_arg.add(name=b"p")
                call(passer, "call", f"f{level + 1}", ("p",), op="StatefulPartitionedCall")
            reader(graph, f"f{depth - 1}", ("p",), "p")

        return build

    assert _functions_rules(tmp_path / "deep", chain_of(tf_graph.MAX_CALL_DEPTH)) == {"WS-TF-012"}
    # Deeper than the trace follows: never taken for a fed path (fail closed; no exporter nests a path so deep).
    assert _functions_rules(tmp_path / "deeper", chain_of(tf_graph.MAX_CALL_DEPTH + 1)) == {"WS-TF-012"}


def test_a_function_that_calls_itself_is_followed_only_so_far(tmp_path: Path) -> None:
    def build(graph: Any) -> None:
        add_node(graph, "fed", "Placeholder")
        call(graph, "call", "f", ("fed",))
        function = reader(graph, "f", ("p",), "p")
        call(function, "again", "f", ("p",))

    assert _functions_rules(tmp_path, build) == {"WS-TF-003"}


def test_one_caller_passing_a_constant_is_enough_and_all_arguments_come_from_the_same_call(tmp_path: Path) -> None:
    def build(calls: list[tuple[str, str]]) -> Callable[[Any], None]:
        def fill(graph: Any) -> None:
            add_node(graph, "fed", "Placeholder")
            add_node(graph, "folder", "Const", value=b"/etc")
            add_node(graph, "file", "Const", value=b"/passwd")
            for i, inputs in enumerate(calls):
                call(graph, f"call{i}", "f", inputs)
            function = reader(graph, "f", ("a", "b"), "join")
            add_node(function, "join", "StringJoin", ("a", "b"))

        return fill

    assert _functions_rules(tmp_path / "one", build([("fed", "fed"), ("folder", "file")])) == {"WS-TF-012"}
    assert _functions_rules(tmp_path / "mixed", build([("folder", "fed"), ("fed", "file")])) == {"WS-TF-003"}
    # Padding with fed callers never hides the one that passes constants: it is tried, or the trace runs out of
    # budget and gives up high (fail closed) rather than taking the path for a fed one.
    late = [("fed", "fed")] * 16 + [("folder", "file")]
    assert _functions_rules(tmp_path / "late", build(late)) == {"WS-TF-012"}
    padded = [("fed", "fed")] * 100 + [("folder", "file")]
    assert _functions_rules(tmp_path / "padded", build(padded)) == {"WS-TF-012"}
    assert _functions_rules(tmp_path / "fed", build([("fed", "fed")] * 3)) == {"WS-TF-003"}


@pytest.mark.parametrize(
    ("op", "trailing", "argument", "rule"),
    [
        ("ParallelMapDatasetV2", ("threads",), "captured", "WS-TF-012"),  # other_arguments: the constant
        ("ParallelMapDatasetV2", ("threads",), "element", "WS-TF-003"),  # the fed dataset's element
        ("InterleaveDataset", ("cycle", "block"), "captured", "WS-TF-012"),
        ("MapDataset", (), "element", "WS-TF-003"),
        ("ReduceDataset", (), "element", "WS-TF-003"),  # arguments from every input together, one is fed
    ],
)
def test_a_dataset_function_gets_the_element_then_the_captured_inputs(
    tmp_path: Path, op: str, trailing: tuple[str, ...], argument: str, rule: str
) -> None:
    def build(graph: Any) -> None:
        add_node(graph, "fed", "Placeholder")
        add_node(graph, "files", "TensorSliceDataset", ("fed",))
        add_node(graph, "path", "Const", value=b"/etc/passwd")
        for name in trailing:
            add_node(graph, name, "Const")
        call(graph, "map", "f", ("files", "path", *trailing), op=op)
        reader(graph, "f", ("element", "captured"), argument)

    assert _functions_rules(tmp_path, build) == {rule}


def test_a_call_named_in_text_is_followed(tmp_path: Path) -> None:
    text = b"""node { name: "p" op: "Const" attr { key: "value" value { tensor { string_val: "/etc/passwd" } } } }
node { name: "c" op: "StatefulPartitionedCall" input: "p"
  attr { key: "f" value { func { name: "f" attr { key: "_noinline" value { b: true } } } } } }
library { function { signature { name: "f" input_arg { name: "p" type: DT_STRING } }
  node_def { name: "r" op: "ReadFile" input: "p" } } }
"""
    found = {(f.rule_id, f.evidence["target"]) for f in scan_bytes(tmp_path, text, "graph.pbtxt").findings}
    assert found == {("WS-TF-012", "/etc/passwd")}


# --- what the loader runs unfed, and what it feeds -------------------------------------------------------------


def _with_main_op(graph: Any) -> None:
    """A TF1 graph with a second Saver (`save_1`) whose save op the main op runs: nothing is fed to it then."""
    _checkpoint_ops(graph)
    add_node(graph, "save_1/filename/input", "Const", value=b"model")
    add_node(graph, "save_1/filename", "PlaceholderWithDefault", ("save_1/filename/input",))
    add_node(graph, "save_1/Const", "PlaceholderWithDefault", ("save_1/filename",))
    add_node(graph, "save_1/SaveV2", "SaveV2", ("save_1/Const", "names", "slices", "w"))
    add_node(graph, "save_1/control_dependency", "Identity", ("save_1/Const", "^save_1/SaveV2"))
    add_node(graph, "group_deps", "NoOp", ("^save_1/control_dependency",))


@pytest.mark.parametrize(("key", "expected"), [(b"saved_model_main_op", {"WS-TF-004"}), (b"train_op", set())])
def test_a_savers_default_is_where_the_main_op_writes(tmp_path: Path, key: bytes, expected: set[str]) -> None:
    model = message_class("SavedModel").FromString(saved_model(_with_main_op))
    collection = model.meta_graphs[0].collection_def.add(key=key)
    collection.value.node_list.value.append(b"group_deps")
    report = scan_bytes(tmp_path, bytes(model.SerializeToString()), "saved_model.pb")
    assert rule_ids(report) == expected
    assert [f.evidence["path"] for f in report.findings] == ["model"] * len(expected)


@pytest.mark.parametrize(
    ("type_url", "filename", "expected"),
    [
        (b"type.googleapis.com/tensorflow.AssetFileDef", b"vocab.txt", {"WS-TF-003"}),  # fed by the loader
        (b"type.googleapis.com/tensorflow.AssetFileDef", b"../../etc/passwd", {"WS-TF-003", "WS-TF-014"}),
        (b"type.googleapis.com/tensorflow.Other", b"vocab.txt", {"WS-TF-012"}),  # Any.Unpack refuses it
    ],
)
def test_assets_in_the_tf1_collection_are_fed(
    tmp_path: Path, type_url: bytes, filename: bytes, expected: set[str]
) -> None:
    def table(graph: Any) -> None:
        add_node(graph, "asset_path", "Const", value=b"/export/dir/vocab.txt")
        add_node(graph, "init", "InitializeTableFromTextFileV2", ("table", "asset_path"))

    model = message_class("SavedModel").FromString(saved_model(table))
    asset = message_class("AssetFileDef")(filename=filename)
    asset.tensor_info.name = b"asset_path:0"
    collection = model.meta_graphs[0].collection_def.add(key=b"saved_model_assets")
    collection.value.any_list.value.add(type_url=type_url, value=asset.SerializeToString())
    assert rule_ids(scan_bytes(tmp_path, bytes(model.SerializeToString()), "saved_model.pb")) == expected


@pytest.mark.parametrize(
    ("op", "inputs", "path"),
    [
        ("DatasetToTFRecord", ("dataset", "p"), "/tmp/out.tfrecord"),  # the dataset first, then the file
        ("MergeV2Checkpoints", ("fed", "p"), "/tmp/out.tfrecord"),  # a fed checkpoint merged to a constant
        ("SnapshotDatasetV2", ("dataset", "p"), "/tmp/out.tfrecord"),
    ],
)
def test_the_path_input_is_the_one_the_op_writes(tmp_path: Path, op: str, inputs: tuple[str, ...], path: str) -> None:
    graph = graph_with(("dataset", "RangeDataset", ("a", "b", "c"), {}), ("a", "Const", (), {"value": b"x"}),
                       ("p", "Const", (), {"value": path.encode()}), ("n", op, inputs, {}))  # fmt: skip
    (finding,) = scan_bytes(tmp_path, graph).findings
    assert finding.evidence["path"] == path


@pytest.mark.parametrize(
    ("op", "output", "rule"),
    [
        ("PartitionedCall", "call:output:1", "WS-TF-012"),  # a call's outputs are one list, `output`
        ("make", "call:path:0", "WS-TF-012"),  # a function called as an op names its own outputs
        ("make", "call:other:0", "WS-TF-003"),  # no such output: its inputs (none) make it
        ("PartitionedCall", "call:output:0", "WS-TF-003"),  # the function's first output is its argument, fed
    ],
)
def test_a_path_a_function_returns_is_followed_into_it(tmp_path: Path, op: str, output: str, rule: str) -> None:
    def build(graph: Any) -> None:
        make = add_function(graph, "make")
        make.signature.input_arg.add(name=b"fed")
        make.signature.output_arg.extend(message_class("ArgDef")(name=name) for name in (b"echo", b"path"))
        add_node(make, "c", "Const", value=b"/etc/passwd")
        make.ret.add(key=b"echo", value=b"fed")
        make.ret.add(key=b"path", value=b"c:output:0")
        user = add_function(graph, "user")
        user.signature.input_arg.add(name=b"x")
        if op == "PartitionedCall":
            call(user, "call", "make", ("x",))
        else:
            add_node(user, "call", op, ("x",))
        add_node(user, "read", "ReadFile", (output,))

    assert _functions_rules(tmp_path, build) == {rule}


def test_a_node_of_many_inputs_is_read_once_for_every_trace(tmp_path: Path) -> None:
    """A StringJoin of 200,000 inputs read by 1,000 ReadFile ops took a minute, each trace decoding every input;
    the same constant repeated is still one constant."""
    graph = message_class("GraphDef")()
    add_node(graph, "c", "Const", value=b"/etc/passwd")
    add_node(graph, "wide", "StringJoin", ("c",) * 20_000)
    for i in range(300):
        add_node(graph, f"r{i}", "ReadFile", ("wide",))
    report = scan_bytes(tmp_path, bytes(graph.SerializeToString()))
    assert {(f.rule_id, f.evidence["path"]) for f in report.findings} == {("WS-TF-012", "/etc/passwd")}


@pytest.mark.parametrize(("returned", "rule"), [(b"c:output:0", "WS-TF-012"), (b"element", "WS-TF-003")])
def test_a_dataset_maps_element_is_what_its_function_returns(tmp_path: Path, returned: bytes, rule: str) -> None:
    def build(graph: Any) -> None:
        for name in ("start", "stop", "step"):
            add_node(graph, name, "Const")
        add_node(graph, "range", "RangeDataset", ("start", "stop", "step"))
        call(graph, "map", "make", ("range",), op="MapDataset")
        call(graph, "files", "read", ("map",), op="FlatMapDataset")
        make = add_function(graph, "make")
        make.signature.input_arg.add(name=b"element")
        make.signature.output_arg.add(name=b"path")
        add_node(make, "c", "Const", value=b"/etc/passwd")
        make.ret.add(key=b"path", value=returned)
        reader(graph, "read", ("element",), "element")

    assert _functions_rules(tmp_path, build) == {rule}


TRITON_CONFIG = b"""name: "f5_tts"
backend: "python"
max_batch_size: 4
dynamic_batching { max_queue_delay_microseconds: 100 }
input [
  { name: "reference_wav" data_type: TYPE_FP32 dims: [-1] },
  { name: "target_text" data_type: TYPE_STRING dims: [1] }
]
output [ { name: "waveform" data_type: TYPE_FP32 dims: [-1] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""


def test_text_naming_no_graph_field_is_not_tensorflow(tmp_path: Path) -> None:
    """Review 19: a Triton model repository's config.pbtxt (every one has it) was tried as each TensorFlow message,
    found none, and was WS-TF-007 high. Text that names none of any message's graph fields holds no graph however
    a program reads it: it is text. A .pbtxt that names a graph field and fails to parse is still malformed."""
    report = scan_bytes(tmp_path / "triton", TRITON_CONFIG, "config.pbtxt")
    assert rule_ids(report) == set() and report.files[0].status == "skipped"
    broken = scan_bytes(tmp_path / "broken", b'node { name: "a" op: "Const" attr { key: ', "graph.pbtxt")
    assert rule_ids(broken) == {"WS-TF-007"}
