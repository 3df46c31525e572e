"""TensorFlow Lite models: what the converter writes passes, every model TensorFlow Lite's interpreter ran to write a
file (or crashed on, or refused) is flagged. The files and what tensorflow-cpu 2.15.1 did with each are in
tests/data/tflite (tools/record_tflite_files.py); the `tflite` package (the schema's generated readers) is the oracle
for which field is which."""

from __future__ import annotations

from pathlib import Path

import pytest
import tflite
from flatbuffers.number_types import Int32Flags
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.mutations import damaged
from tests.helpers.scanning import rule_ids, scan, scan_bytes
from wscan.config import Config
from wscan.limits import Budget, Limits, open_counted
from wscan.scanners import tflite as reader
from wscan.scanners.base import Head
from wscan.scanners.flatbuffer import FlatBufferError, Pages, root

DATA = Path(__file__).resolve().parents[1] / "data" / "tflite"
BENIGN = sorted(DATA.glob("*.tflite"))
HOSTILE = {  # file: the rules it must raise (what the interpreter did is in the folder's README)
    "associated-pickle.tflite": {"WS-PKL-001"},  # a pickle among the associated files the metadata writer zips
    "flex-read-write.tflite": {"WS-TF-002", "WS-TFL-004"},  # ran: read /etc/hostname, wrote the marker
    "flex-print-to-file.tflite": {"WS-TF-002"},  # ran: tf.print to file:// wrote the marker
    "flex-disguised-as-add.tflite": {"WS-TF-002", "WS-TFL-004"},  # op code FlexAdd, options WriteFile: wrote it
    "flex-custom-in-deprecated-code.tflite": {"WS-TF-002", "WS-TFL-004"},  # CUSTOM in the old byte only: wrote it
    "flex-without-options.tflite": {"WS-TFL-002"},  # crashed the interpreter (SIGSEGV)
    "schema-version-2.tflite": {"WS-TFL-001"},  # refused
    "opcode-index-past-list.tflite": {"WS-TFL-001"},  # refused
    "buffer-offset-past-end.tflite": {"WS-TFL-001"},  # refused
}


def test_every_recorded_hostile_file_is_listed() -> None:
    assert {path.name for path in (DATA / "hostile").glob("*.tflite")} == set(HOSTILE)
    assert len(BENIGN) == 6


@pytest.mark.parametrize("path", BENIGN, ids=lambda path: path.name)
def test_what_the_converter_writes_passes(path: Path) -> None:
    report = scan(path)
    assert [(f.rule_id, f.message) for f in report.findings] == []
    assert "tflite" in report.files[0].formats  # and zip, for the associated files the metadata writer appends


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_models_the_interpreter_ran_crashed_on_or_refused_are_flagged(name: str) -> None:
    report = scan(DATA / "hostile" / name)
    assert rule_ids(report) == HOSTILE[name]
    assert all(f.severity.label in ("high", "critical") for f in report.findings)


RED_TEAM = {  # helpers 216 and 218's models (tests/data/tflite/red-team/README.md: what TF 2.15 did with each)
    "customcode-length-zero.tflite": {"WS-TF-002"},
    "save-v1-computed-path.tflite": {"WS-TFL-004"},
    "mergev2-via-identity-deletes.tflite": {"WS-TFL-004"},
    "restorev2-const.tflite": {"WS-TFL-004"},
    "readfile-computed-path.tflite": {"WS-TFL-004"},
    "readfile-path-buffer-offset.tflite": {"WS-TFL-004"},
    "savev2-path-buffer-offset.tflite": {"WS-TFL-004"},
    "dumptensor-writes-file.tflite": {"WS-TF-002"},
    "sleepop-hang.tflite": {"WS-TFL-005"},
    "queue-dequeue-hang.tflite": {"WS-TFL-005"},
    "queue-enqueue-full.tflite": {"WS-TFL-005"},
    "accumulator-take-gradient.tflite": {"WS-TFL-005"},
    "stage-full.tflite": {"WS-TFL-005"},
    "map-stage-full.tflite": {"WS-TFL-005"},
    "batch-long-timeout.tflite": {"WS-TFL-005"},
}


def test_every_red_team_model_is_listed() -> None:
    assert {path.name for path in (DATA / "red-team").glob("*.tflite")} == set(RED_TEAM)


@pytest.mark.parametrize("name", sorted(RED_TEAM))
def test_what_the_red_team_ran_through_the_flex_delegate_is_high(name: str) -> None:
    report = scan(DATA / "red-team" / name)
    assert rule_ids(report) == RED_TEAM[name]
    assert all(f.severity.label == "high" for f in report.findings)


def test_an_op_name_is_read_to_its_nul_as_the_interpreter_reads_it() -> None:
    """The op code's string says length 0; the interpreter reads `FlexWriteFile` up to the NUL after it."""
    finding = scan(DATA / "red-team" / "customcode-length-zero.tflite").findings[0]
    assert finding.evidence["op"] == "WriteFile"


def test_a_path_kept_past_the_flatbuffer_is_read() -> None:
    """A constant in the layout of models over 2 GB (a buffer's offset and size): its path is evidence as inline."""
    finding = scan(DATA / "red-team" / "readfile-path-buffer-offset.tflite").findings[0]
    assert finding.evidence["path"] and finding.evidence["path"] != "not a constant"
    assert finding.evidence["fixed"] is True


def test_a_flex_op_is_judged_by_the_op_the_delegate_runs_and_reports_its_path() -> None:
    report = scan(DATA / "hostile" / "flex-disguised-as-add.tflite")
    written = next(f for f in report.findings if f.rule_id == "WS-TF-002")
    assert written.evidence["op"] == "WriteFile"  # the op code says FlexAdd
    assert written.evidence["path"] == "/tmp/wscan-tflite-marker.txt"
    assert written.evidence["format"] == "tflite"
    read = next(f for f in report.findings if f.rule_id == "WS-TFL-004")
    assert read.evidence["path"] == "/etc/hostname"


def test_a_subgraph_name_cannot_pass_for_a_keras_adapt_step() -> None:
    """WS-TF-001 lets tf_keras' adapt functions call Python by their function name; a subgraph's name is the file's
    to choose, so it is never the whole of `function`."""
    report = scan(DATA / "hostile" / "flex-read-write.tflite")
    assert all(f.evidence["function"].startswith("subgraph 0") for f in report.findings)


@pytest.mark.parametrize("path", [*BENIGN, *(DATA / "hostile" / name for name in HOSTILE)], ids=lambda p: p.name)
def test_fields_are_read_as_the_schema_numbers_them(path: Path) -> None:
    """The reader's slots against the schema's generated code: op codes (custom names, built-in codes), operators'
    op code indexes and inputs, tensors' buffers and types, buffers' offsets."""
    data = path.read_bytes()
    model = tflite.Model.GetRootAsModel(data, 0)
    with path.open("rb") as raw:
        mine = root(Pages(raw, len(data)))
        assert mine.uint(reader.MODEL_VERSION) == model.Version()
        codes = list(mine.tables(reader.MODEL_OPCODES))
        assert len(codes) == model.OperatorCodesLength()
        for index, code in enumerate(codes):
            theirs = model.OperatorCodes(index)
            stored = theirs._tab.Offset(10)  # BuiltinCode() is the package's own mix of the two fields
            assert code.int32(reader.CODE_BUILTIN) == (theirs._tab.Get(Int32Flags, stored + theirs._tab.Pos)
                                                       if stored else 0)
            assert code.int8(reader.CODE_DEPRECATED) == theirs.DeprecatedBuiltinCode()
            assert code.string(reader.CODE_CUSTOM, 1000) == theirs.CustomCode()
        for graph_index, graph in enumerate(mine.tables(reader.MODEL_SUBGRAPHS)):
            theirs_graph = model.Subgraphs(graph_index)
            assert graph.string(reader.GRAPH_NAME, 1000) == theirs_graph.Name()
            for op_index, operator in enumerate(graph.tables(reader.GRAPH_OPERATORS)):
                theirs_op = theirs_graph.Operators(op_index)
                assert operator.uint(reader.OP_OPCODE) == theirs_op.OpcodeIndex()
                assert list(operator.ints(reader.OP_INPUTS)) == list(theirs_op.InputsAsNumpy())
                options = operator.bytes(reader.OP_CUSTOM_OPTIONS, 1 << 20)
                assert (options or b"") == (theirs_op.CustomOptionsAsNumpy().tobytes()
                                            if theirs_op.CustomOptionsLength() else b"")
            for tensor_index, tensor in enumerate(graph.tables(reader.GRAPH_TENSORS)):
                theirs_tensor = theirs_graph.Tensors(tensor_index)
                assert tensor.uint(reader.TENSOR_BUFFER) == theirs_tensor.Buffer()
                assert tensor.int8(reader.TENSOR_TYPE) == theirs_tensor.Type()
        for index, buffer in enumerate(mine.tables(reader.MODEL_BUFFERS)):
            theirs_buffer = model.Buffers(index)
            assert buffer.uint64(reader.BUFFER_OFFSET) == theirs_buffer.Offset()
            assert buffer.uint64(reader.BUFFER_SIZE) == theirs_buffer.Size()
            assert buffer.vector(reader.BUFFER_DATA, 1)[1] == theirs_buffer.DataLength()


def test_a_file_named_tflite_without_the_identifier_is_refused(tmp_path: Path) -> None:
    data = bytearray((DATA / "dense.tflite").read_bytes())
    data[4:8] = b"\0\0\0\0"
    assert rule_ids(scan_bytes(tmp_path, bytes(data), "model.tflite")) == {"WS-TFL-001"}


def test_the_identifier_is_sniffed_whatever_the_name(tmp_path: Path) -> None:
    data = (DATA / "hostile" / "flex-read-write.tflite").read_bytes()
    assert reader.looks_like_tflite(data[:64])
    assert reader.TfliteScanner().accepts(Head(data, data, len(data), "weights.bin"))
    assert {"WS-TF-002", "WS-TFL-004"} <= rule_ids(scan_bytes(tmp_path, data, "weights.bin"))


def test_weights_are_not_read(tmp_path: Path) -> None:
    """A model's structure is read a page at a time: 40 MB of weights kept past the FlatBuffer (as models over 2 GB
    are written) are never read."""
    data = (DATA / "dense-buffer-offsets.tflite").read_bytes() + bytes(40_000_000)
    path = tmp_path / "big.tflite"
    path.write_bytes(data)
    limits = Limits()
    budget = Budget(limits)
    with open_counted(path, budget) as raw:
        table = root(Pages(raw, len(data)))
        assert table.count(reader.MODEL_BUFFERS) == 7
    assert budget.read <= 2 * 65536
    assert scan(path).findings == []


def test_operators_past_max_members_are_a_limit(tmp_path: Path) -> None:
    """Every entry of an operators vector may point at one table (13 million in 52 MB outran the time limit): past
    max-members operators the model is a limit finding (high), not read on."""
    data = (DATA / "hostile" / "flex-read-write.tflite").read_bytes()
    report = scan_bytes(tmp_path, data, "model.tflite", Config(limits=Limits(max_members=1)))
    assert rule_ids(report) == {"WS-FILE-002", "WS-TFL-004"}  # the ReadFile before the limit is still judged
    assert "max-members" in next(f.message for f in report.findings if f.rule_id == "WS-FILE-002")
    assert rule_ids(scan_bytes(tmp_path, data, "model.tflite", Config(limits=Limits(max_members=3)))) == {
        "WS-TF-002", "WS-TFL-004"}


def test_pages_refuse_reads_outside_the_file(tmp_path: Path) -> None:
    path = tmp_path / "small.bin"
    path.write_bytes(bytes(range(256)) * 1000)
    with path.open("rb") as raw:
        pages = Pages(raw, 256_000)
        assert pages.read(65530, 12) == (bytes(range(256)) * 1000)[65530:65542]  # across a page boundary
        for offset, length in ((-1, 4), (255_999, 2), (0, 256_001)):
            with pytest.raises(FlatBufferError):
                pages.read(offset, length)


def test_huge_vector_counts_fail_at_once(tmp_path: Path) -> None:
    """A count of 2**32 - 1 subgraphs in a 1 KB file is refused before any is read, not walked."""
    data = bytearray((DATA / "dense.tflite").read_bytes())
    with (DATA / "dense.tflite").open("rb") as raw:
        start, count = root(Pages(raw, len(data))).vector(reader.MODEL_SUBGRAPHS, 4)
    assert count == 1
    data[start - 4 : start] = b"\xff\xff\xff\xff"
    assert rule_ids(scan_bytes(tmp_path, bytes(data), "model.tflite")) == {"WS-TFL-001"}


SEEDS = [path.read_bytes() for path in [*BENIGN, *(DATA / "hostile").glob("flex-*.tflite")]]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(range(len(SEEDS))), where=st.floats(0, 1), how=st.sampled_from(["cut", "set", "insert"]),
       byte=st.integers(0, 255))
def test_damaged_models_never_break_the_scan(tmp_path: Path, seed: int, where: float, how: str, byte: int) -> None:
    """One byte changed anywhere: the file is read, or refused (WS-TFL-001/002; an appended zip's own findings), never
    an error of wscan's own."""
    report = scan_bytes(tmp_path, damaged(SEEDS[seed], where, how, byte), "model.tflite")
    assert not {f.rule_id for f in report.findings} & {"WS-FILE-001", "WS-FILE-002"}
    assert all(f.rule_id.startswith(("WS-TFL-", "WS-TF-", "WS-ARC-")) for f in report.findings), report.findings
