"""One test per pickle technique: every way to name and call a callable, hand-written as opcodes."""

from __future__ import annotations

import gzip
import io
import pickle
import pickletools
import struct
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wscan
from wscan.config import Config
from wscan.limits import Limits
from wscan.model import Severity
from wscan.report import Report
from wscan.scanners.base import HEAD_BYTES
from wscan.scanners.pickle import probe


def scan_bytes(tmp_path: Path, data: bytes, name: str = "sample.bin", config: Config | None = None) -> Report:
    path = tmp_path / name
    path.write_bytes(data)
    return wscan.scan([path], config)


def rule_ids(report: Report) -> set[str]:
    return {f.rule_id for f in report.findings}


def evidence(report: Report, rule_id: str) -> list[dict[str, object]]:
    return [dict(f.evidence) for f in report.findings if f.rule_id == rule_id]


def sbu(text: str) -> bytes:
    """SHORT_BINUNICODE."""
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


PROTO4 = b"\x80\x04"


def test_global_reduce_protocol0(tmp_path: Path) -> None:
    data = b"cos\nsystem\n(S'echo hi'\ntR."
    report = scan_bytes(tmp_path, data)
    (ev,) = evidence(report, "WS-PKL-001")
    assert ev["callable"] == "os.system" and ev["called"] is True and "REDUCE" in str(ev["invoked"])
    assert report.failed


def test_stack_global_protocol4(tmp_path: Path) -> None:
    data = PROTO4 + sbu("subprocess") + sbu("check_output") + b"\x93" + sbu("id") + b"\x85R."
    (ev,) = evidence(scan_bytes(tmp_path, data), "WS-PKL-001")
    assert ev["callable"] == "subprocess.check_output" and ev["opcode"] == "STACK_GLOBAL"


def test_inst(tmp_path: Path) -> None:
    data = b"(S'echo hi'\nios\nsystem\n."
    (ev,) = evidence(scan_bytes(tmp_path, data), "WS-PKL-001")
    assert ev["callable"] == "os.system" and ev["invoked"] == "INST"


def test_obj(tmp_path: Path) -> None:
    data = b"(cos\nsystem\nS'echo hi'\no."
    (ev,) = evidence(scan_bytes(tmp_path, data), "WS-PKL-001")
    assert ev["invoked"] == "OBJ"


@pytest.mark.parametrize("opcode", [b"\x81", b"\x92"])
def test_newobj_and_newobj_ex(tmp_path: Path, opcode: bytes) -> None:
    args = b")" if opcode == b"\x81" else b")}"
    data = PROTO4 + sbu("subprocess") + sbu("Popen") + b"\x93" + args + opcode + b"."
    (ev,) = evidence(scan_bytes(tmp_path, data), "WS-PKL-001")
    assert ev["invoked"] == {b"\x81": "NEWOBJ", b"\x92": "NEWOBJ_EX"}[opcode]


@pytest.mark.parametrize("name", ["eval", "exec", "getattr", "__import__", "open", "compile", "setattr"])
def test_builtins_gadgets(tmp_path: Path, name: str) -> None:
    data = PROTO4 + sbu("builtins") + sbu(name) + b"\x93" + sbu("x") + b"\x85R."
    assert "WS-PKL-001" in rule_ids(scan_bytes(tmp_path, data))


def test_python2_names_are_mapped(tmp_path: Path) -> None:
    data = b"\x80\x02c__builtin__\neval\nX\x01\x00\x00\x001\x85R."
    (ev,) = evidence(scan_bytes(tmp_path, data), "WS-PKL-001")
    assert ev["callable"] == "builtins.eval" and ev["raw"] == "__builtin__.eval"


def test_posix_alias(tmp_path: Path) -> None:
    data = b"cposix\nsystem\n(S'id'\ntR."
    assert "WS-PKL-001" in rule_ids(scan_bytes(tmp_path, data))


def test_dotted_walk_through_module(tmp_path: Path) -> None:
    data = PROTO4 + sbu("tempfile") + sbu("_os.system") + b"\x93" + sbu("id") + b"\x85R."
    report = scan_bytes(tmp_path, data)
    (ev,) = evidence(report, "WS-PKL-001")  # tempfile itself is dangerous
    assert ev["walk"] == "os.system"


def test_dotted_walk_from_innocent_module(tmp_path: Path) -> None:
    data = PROTO4 + sbu("collections") + sbu("_os.system") + b"\x93" + sbu("id") + b"\x85R."
    report = scan_bytes(tmp_path, data)
    assert "WS-PKL-002" in rule_ids(report)
    assert "WS-PKL-003" not in rule_ids(report)  # superseded: one verdict per import


def test_dotted_walk_to_gadget_leaf(tmp_path: Path) -> None:
    data = PROTO4 + sbu("numpy") + sbu("testing_helpers.runner.system") + b"\x93."
    assert "WS-PKL-012" in rule_ids(scan_bytes(tmp_path, data))


def test_names_built_in_memo(tmp_path: Path) -> None:
    # Module and name strings are memoised first, then fetched with BINGET into STACK_GLOBAL.
    data = (
        PROTO4
        + sbu("os")
        + b"\x94"
        + sbu("system")
        + b"\x94"
        + b"0"
        + b"0"
        + b"h\x00h\x01\x93"
        + sbu("id")
        + b"\x85R."
    )
    (ev,) = evidence(scan_bytes(tmp_path, data), "WS-PKL-001")
    assert ev["callable"] == "os.system"


def test_extension_registered_in_stream(tmp_path: Path) -> None:
    register = b"ccopyreg\nadd_extension\n(S'os'\nS'system'\nK\x07tR0"
    data = b"\x80\x02" + register + b"\x82\x07(S'id'\ntR."
    report = scan_bytes(tmp_path, data)
    callables = {e["callable"] for e in evidence(report, "WS-PKL-001")}
    assert {"copyreg.add_extension", "os.system"} <= callables


def test_unregistered_extension(tmp_path: Path) -> None:
    data = b"\x80\x02\x82\x09(S'id'\ntR."
    assert "WS-PKL-007" in rule_ids(scan_bytes(tmp_path, data))


@pytest.mark.parametrize("first", [0x82, 0x83, 0x84])
def test_an_unregistered_extension_alone_is_not_a_pickle(tmp_path: Path, first: int) -> None:
    """A Flax msgpack map of two to four keys opens with 0x82-0x84 (EXT1, EXT2, EXT4): pickle refuses the code
    before doing anything, so the file is not a pickle, and not a high finding. The Flax scanner reads it."""
    extra = b"".join(bytes([0xA1, ord("a") + n]) + b"\x80" for n in range(first - 0x81))  # "a": {}, "b": {}, ...
    head = bytes([first]) + b"\xa6params\x81\xa6kernel\xc4\x04abcd" + extra
    assert not probe(head, strict=False) and not probe(head, strict=True)
    with pytest.raises(ValueError, match="unregistered extension code"):
        pickle.loads(head)
    report = scan_bytes(tmp_path, head, "flax_model.msgpack")
    assert report.files[0].formats == ("flax-msgpack",) and rule_ids(report) == set()


def test_a_tensor_storage_is_a_pickle_only_when_it_imports() -> None:
    for raw in (b"N." + bytes(6), b"\x80\x02N.", b"\x84\xc1M@\xce\xbfM@", b"(N)R."):
        assert not probe(raw, strict=True), raw
    assert probe(b"\x80\x02cos\nsystem\nq\x00.", strict=True)
    assert probe(PROTO4 + sbu("os") + sbu("system") + b"\x93.", strict=True)


def test_computed_import(tmp_path: Path) -> None:
    # STACK_GLOBAL whose module name is the result of calling builtins.str.
    data = PROTO4 + sbu("builtins") + sbu("str") + b"\x93" + sbu("os") + b"\x85R" + sbu("system") + b"\x93."
    report = scan_bytes(tmp_path, data)
    assert "WS-PKL-004" in rule_ids(report)


def test_call_of_call_result(tmp_path: Path) -> None:
    get = PROTO4 + sbu("builtins") + sbu("getattr") + b"\x93" + sbu("os") + sbu("getcwd") + b"\x93"
    data = get + sbu("system") + b"\x86R" + sbu("id") + b"\x85R."
    report = scan_bytes(tmp_path, data)
    callables = {e["callable"] for e in evidence(report, "WS-PKL-001")}
    assert "os.getcwd.system" in callables  # getattr only looked a name up: that name is what is judged


@pytest.mark.parametrize("helper", ["base._new_Index", "datetimes._new_DatetimeIndex",
                                    "timedeltas._new_TimedeltaIndex", "interval._new_IntervalIndex"])
def test_pandas_index_rebuilders_call_their_first_argument(tmp_path: Path, helper: str) -> None:
    """pandas' _new_*Index(cls, d) call cls.__new__, _simple_new or from_arrays: an object there (a Namespace
    holding a function) is a call of a computed value, not a class the allowlist knows."""
    module, name = f"pandas.core.indexes.{helper}".rsplit(".", 1)
    data = PROTO4 + sbu(module) + sbu(name) + b"\x93" + sbu("argparse") + sbu("Namespace") + b"\x93)R}\x86R."
    assert "WS-PKL-005" in rule_ids(scan_bytes(tmp_path, data))


def _getattr_lookup(target: bytes, attr: str) -> bytes:
    return sbu("builtins") + sbu("getattr") + b"\x93" + target + sbu(attr) + b"\x86R"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # A named time zone, as Python pickles ZoneInfo: an exact name the allowlist holds.
        (_getattr_lookup(sbu("zoneinfo") + sbu("ZoneInfo") + b"\x93", "_unpickle") + sbu("UTC") + b"K\x01\x86R",
         set()),
        # A str method kept as a value (a vectorizer's preprocessor) passes; called while loading, it does not.
        (_getattr_lookup(sbu("builtins") + sbu("str") + b"\x93", "lower") + b"\x85", set()),
        (_getattr_lookup(sbu("builtins") + sbu("str") + b"\x93", "lower") + sbu("X") + b"\x85R", {"WS-PKL-017"}),
        # The method of an allowed class: a lookup not on the allowlist is critical.
        (_getattr_lookup(sbu("collections") + sbu("OrderedDict") + b"\x93", "fromkeys") + b")R", {"WS-PKL-017"}),
        (_getattr_lookup(sbu("os") + sbu("path") + b"\x93", "os") + b")R", {"WS-PKL-001"}),  # os.path.os
        # getattr pushed and kept as data (memoized, then put in a list): not only a lookup, so getattr itself.
        (sbu("builtins") + sbu("getattr") + b"\x93\x94]\x94h\x00a" + _getattr_lookup(
            sbu("zoneinfo") + sbu("ZoneInfo") + b"\x93", "_unpickle") + b"\x86", {"WS-PKL-001"}),
        # getattr reused from the memo for a second lookup: both are lookups.
        (sbu("builtins") + sbu("getattr") + b"\x93\x94" + sbu("zoneinfo") + sbu("ZoneInfo") + b"\x93\x94"
         + sbu("_unpickle") + b"\x86R" + b"h\x00h\x01" + sbu("_unpickle") + b"\x86R\x86", set()),
        # getattr copied out of a tuple by an allowed identity helper (torch.jit's build_intlist), one copy making
        # an allowed lookup: the copies are uses the lookups do not account for (a review's bypass).
        (sbu("builtins") + sbu("getattr") + b"\x93\x85\x94" + b"0" + sbu("torch.jit._pickle") + sbu("build_intlist")
         + b"\x93\x94" + b"0" + b"h\x01h\x00R" + sbu("zoneinfo") + sbu("ZoneInfo") + b"\x93" + sbu("_unpickle")
         + b"\x86R", {"WS-PKL-001"}),
        # Arguments given as a list (joblib's and pandas' unpicklers call func(*args) with any iterable), and a list
        # rewritten by SETITEMS after it was built: a review turned the one allowed lookup into getattr(os, ...).
        (sbu("builtins") + sbu("getattr") + b"\x93]\x94(" + sbu("zoneinfo") + sbu("ZoneInfo") + b"\x93"
         + sbu("_unpickle") + b"eR", {"WS-PKL-001"}),
        # getattr with a default: a name the installed library lacks yields the default, whatever it is.
        (sbu("builtins") + sbu("getattr") + b"\x93" + sbu("zoneinfo") + sbu("ZoneInfo") + b"\x93" + sbu("_unpickle")
         + b"N\x87R", {"WS-PKL-001"}),
        # getattr on an object a call made from constants (random.Random() in river's models): the class's
        # function of that name, judged as a lookup (not on the allowlist, and called: critical).
        (_getattr_lookup(sbu("collections") + sbu("OrderedDict") + b"\x93)R", "update") + b")R", {"WS-PKL-017"}),
        # ... made from an object: a class's __new__ (or a function) may return anything, so the attribute cannot be
        # named.
        (_getattr_lookup(sbu("collections") + sbu("OrderedDict") + b"\x93}\x85R", "update") + b")R",
         {"WS-PKL-001", "WS-PKL-005"}),
    ],
    ids=["zoneinfo", "str-method-as-value", "str-method-called", "method-of-allowed-class", "dangerous-module",
         "getattr-as-data", "memo-reuse", "identity-copy", "list-arguments", "with-default", "on-object",
         "on-object-made-from-object"],
)  # fmt: skip
def test_getattr_is_judged_by_the_name_it_looks_up(tmp_path: Path, body: bytes, expected: set[str]) -> None:
    report = scan_bytes(tmp_path, PROTO4 + body + b".")
    assert {f.rule_id for f in report.findings if f.severity >= Severity.HIGH} == expected, report.findings


def test_build_on_module_sleepy_pickle(tmp_path: Path) -> None:
    # BUILD with (None, {"system": ...}) slot state sets attributes on the os module itself.
    data = b"\x80\x02cos\npath\nN}X\x04\x00\x00\x00evilK\x01s\x86b."
    report = scan_bytes(tmp_path, data)
    assert "WS-PKL-006" in rule_ids(report)


def test_build_on_allowed_class_is_still_tampering(tmp_path: Path) -> None:
    data = b"\x80\x02ccollections\nOrderedDict\nN}X\x07\x00\x00\x00__new__K\x01s\x86b."
    assert "WS-PKL-006" in rule_ids(scan_bytes(tmp_path, data))


def test_second_pickle_after_stop(tmp_path: Path) -> None:
    data = pickle.dumps({"a": 1}, protocol=4) + b"cos\nsystem\n(S'id'\ntR."
    report = scan_bytes(tmp_path, data)
    (finding,) = [f for f in report.findings if f.rule_id == "WS-PKL-001"]
    assert finding.location.offset == len(pickle.dumps({"a": 1}, protocol=4))


def test_payload_before_truncation(tmp_path: Path) -> None:
    data = b"cos\nsystem\n(S'id'\ntR" + b"(S'unfinished"
    report = scan_bytes(tmp_path, data)
    assert {"WS-PKL-001", "WS-PKL-008"} <= rule_ids(report)
    assert report.files[0].status == "failed"


def test_payload_before_invalid_opcode(tmp_path: Path) -> None:
    data = b"cos\nsystem\n(S'id'\ntR\xff\xfe."
    report = scan_bytes(tmp_path, data)
    assert {"WS-PKL-001", "WS-PKL-008"} <= rule_ids(report)


def test_unknown_import_is_high_and_allowable(tmp_path: Path) -> None:
    data = PROTO4 + sbu("mypackage.models") + sbu("Thing") + b"\x93)\x81."
    report = scan_bytes(tmp_path, data)
    (finding,) = report.findings
    assert finding.rule_id == "WS-PKL-003" and finding.severity.label == "high"
    (tmp_path / "mine.yaml").write_text("allow: [mypackage.models.Thing]\n")
    assert scan_bytes(tmp_path, data, config=Config.from_file(tmp_path / "mine.yaml")).findings == []


def test_config_cannot_allow_a_gadget(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text("allow: [os.system]\n")
    config = Config.from_file(tmp_path / "mine.yaml")
    assert "WS-PKL-001" in rule_ids(scan_bytes(tmp_path, b"cos\nsystem\n(S'id'\ntR.", config=config))


@pytest.mark.parametrize("protocol", range(6))
def test_plain_data_all_protocols_clean(tmp_path: Path, protocol: int) -> None:
    from collections import OrderedDict

    value = {"a": [1, 2.5, "x", b"y", None, True], "t": (1, 2), "s": {1, 2}, "o": OrderedDict(k=1), "c": 1j}
    report = scan_bytes(tmp_path, pickle.dumps(value, protocol=protocol))
    assert report.findings == [], [f.message for f in report.findings]


def test_large_bytes_argument_is_skipped_not_held(tmp_path: Path) -> None:
    big = b"\x00" * (8 << 20)
    data = PROTO4 + b"\x8e" + struct.pack("<Q", len(big)) + big + b"."
    report = scan_bytes(tmp_path, data)
    assert report.findings == []


def test_hostile_length_costs_nothing(tmp_path: Path) -> None:
    data = PROTO4 + b"\x8e" + struct.pack("<Q", 1 << 62) + b"xx"
    report = scan_bytes(tmp_path, data)
    assert "WS-PKL-008" in rule_ids(report)


def test_offsets_match_pickletools(tmp_path: Path) -> None:
    data = pickle.dumps([1, 2], protocol=2) + b"cos\nsystem\n(S'id'\ntR."
    report = scan_bytes(tmp_path, data)
    (finding,) = [f for f in report.findings if f.rule_id == "WS-PKL-001"]
    second = len(pickle.dumps([1, 2], protocol=2))
    ops = list(pickletools.genops(data[second:]))
    assert finding.location.offset == second + ops[0][2]


def test_dynamic_call(tmp_path: Path) -> None:
    # str("x") is allowed data, but calling its result is never something a checkpoint does.
    data = PROTO4 + sbu("builtins") + sbu("str") + b"\x93" + sbu("x") + b"\x85R" + b")R."
    report = scan_bytes(tmp_path, data)
    assert "WS-PKL-005" in rule_ids(report)


def test_attribute_that_is_a_dangerous_module(tmp_path: Path) -> None:
    # posixpath.os is the os module itself, reached as an attribute of an innocent one.
    report = scan_bytes(tmp_path, b"\x80\x02cposixpath\nos\n.")
    assert "WS-PKL-002" in rule_ids(report)


# --- a long string first: the payload lies beyond the 64 KiB every scanner sniffs ------------------------

LONG = 70_000


@pytest.mark.parametrize(
    "data",
    [
        b"(S'" + b"a" * LONG + b"'\ncos\nsystem\n(S'id'\ntRl.",  # protocol 0: text from end to end
        b"(V" + b"a" * LONG + b"\ncos\nsystem\n(S'id'\ntRl.",  # protocol 0 unicode
        b"(T" + struct.pack("<i", LONG) + b"a" * LONG + b"cos\nsystem\n(S'id'\ntRl.",  # protocol 1, no PROTO
    ],
    ids=["string", "unicode", "binstring"],
)
def test_payload_after_a_long_leading_string_is_found(tmp_path: Path, data: bytes) -> None:
    pickletools.dis(data, out=io.StringIO())  # really a pickle, never loaded
    assert "WS-PKL-001" in rule_ids(scan_bytes(tmp_path, data, "model.pkl"))


def test_long_text_is_not_taken_for_a_pickle(tmp_path: Path) -> None:
    text = b"The quick brown fox jumps over the lazy dog. " * 3000  # 'T' reads as BINSTRING of ~1.9 GB
    assert scan_bytes(tmp_path, text, "notes.txt").findings == []


def test_persistent_id_that_is_not_ascii_is_malformed(tmp_path: Path) -> None:
    # CPython refuses a protocol 0 persistent id that is not ASCII, whatever persistent_load the loader has.
    data = b"cos\nsystem\nP\xc3\xa9\n."
    assert {"WS-PKL-001", "WS-PKL-008"} <= rule_ids(scan_bytes(tmp_path, data))


def test_zip_whose_crc_reads_as_opcodes_is_not_a_pickle(tmp_path: Path) -> None:
    # "PK" is a persistent id to pickle; this CRC ends that line with "\n" and goes on with an EXT1 opcode.
    metadata = b'{"keras_version": "3.15.1", "date_saved": "2026-11-30@01:32:36"}'
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo("metadata.json", (2026, 11, 30, 12, 0, 0)), metadata)
    assert buffer.getvalue()[16:18] == b"\n\x82"
    assert not {r for r in rule_ids(scan_bytes(tmp_path, buffer.getvalue(), "model.zip")) if r.startswith("WS-PKL")}


@settings(max_examples=300, deadline=None)
@given(
    members=st.lists(st.tuples(st.text(min_size=1, max_size=12), st.binary(max_size=64)), min_size=1, max_size=3),
    compression=st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]),
)
def test_no_zip_is_taken_for_a_pickle(members: list[tuple[str, bytes]], compression: int) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for index, (name, data) in enumerate(members):
            archive.writestr(zipfile.ZipInfo(f"{index}{name}", (2026, 1, 1, 0, 0, 0)), data)
    assert not probe(buffer.getvalue()[:HEAD_BYTES], strict=False)


def test_truncation_offset_across_a_buffer_refill(tmp_path: Path) -> None:
    # The reader refills its buffer 64 KiB at a time; a pickle cut off inside an argument that straddles a refill
    # is reported where that argument starts, not past the end of the file.
    data = b"\x80\x02" + b"N0" * 32764 + b"N" + b"G" + b"\x00" * 6  # BINFLOAT needs 8 bytes, 6 remain
    path = tmp_path / "cut.pkl"
    path.write_bytes(data)
    report = wscan.scan([path])
    offsets = [f.location.offset for f in report.findings if f.evidence.get("reason", "").startswith("stream ends")]
    assert offsets == [len(data) - 6]


# --- runs of fixed-width numbers are decoded in bulk, with the very same outcome ------------------------

_NUMBER = st.one_of(
    st.floats(allow_nan=False).map(lambda v: b"G" + struct.pack(">d", v)),  # BINFLOAT
    st.integers(-(2**31), 2**31 - 1).map(lambda v: b"J" + struct.pack("<i", v)),  # BININT
    st.integers(0, 255).map(lambda v: b"K" + bytes([v])),  # BININT1
    st.integers(0, 65535).map(lambda v: b"M" + struct.pack("<H", v)),  # BININT2
)
_NUMBER_RUN = st.lists(_NUMBER, min_size=1, max_size=40).map(b"".join)
_GLUE = [b"(", b"]", b"e", b"t", b"l", b"\x94", b"q\x00", b"h\x00", b"0", b"N", b"\x85", b"}", b"s", b"u", b"."]


def _outcome(data: bytes, limits: Limits, size_limit: int | None) -> list[object]:
    """Everything a scan takes from running the machine over `data`, or the budget that stopped it."""
    from wscan.scanners.pickle_ops import Stream
    from wscan.scanners.pickle_values import describe
    from wscan.scanners.pickle_vm import Machine

    machine = Machine(Stream(io.BytesIO(data), limit=len(data) if size_limit is None else size_limit), limits)
    res = machine.run()
    if res.over_budget is not None:
        return ["budget", res.over_budget.limit, res.over_budget.detail]
    stack = describe(res.result) if res.result is not None else None
    return [res.start, res.end, res.opcodes, machine.opcodes_total, res.stopped, res.protocol, str(res.error),
            stack, sorted(res.imports), [(e.kind, e.offset, e.attrs) for e in res.events]]  # fmt: skip


def _same_with_and_without_runs(
    data: bytes, limits: Limits, monkeypatch: pytest.MonkeyPatch, size_limit: int | None = None
) -> None:
    from wscan.scanners import pickle_vm

    fast = _outcome(data, limits, size_limit)
    with monkeypatch.context() as patch:
        patch.setattr(pickle_vm, "_RUNS", {})
        slow = _outcome(data, limits, size_limit)
    assert fast == slow


@settings(max_examples=400, deadline=None)
@given(
    chunks=st.lists(st.one_of(_NUMBER_RUN, st.sampled_from(_GLUE)), max_size=30),
    cut=st.integers(0, 8),
    opcodes=st.integers(1, 60),
    depth=st.integers(1, 40),
    size=st.integers(1, 400),
)
def test_number_runs_give_the_same_outcome_as_one_opcode_at_a_time(
    chunks: list[bytes], cut: int, opcodes: int, depth: int, size: int
) -> None:
    """Budgets (opcodes, stack depth, pickle size) must stop a run at the very opcode they stop a slow one."""
    data = PROTO4 + b"]\x94(" + b"".join(chunks) + b"e."
    data = data[: len(data) - cut]
    tight = replace(Limits(), max_pickle_opcodes=opcodes, max_stack_depth=depth)
    with pytest.MonkeyPatch.context() as patch:
        for limits in (Limits(), tight):
            _same_with_and_without_runs(data, limits, patch)
        _same_with_and_without_runs(data, Limits(), patch, size_limit=size)


def test_number_runs_in_real_pickles_and_across_a_buffer_refill(monkeypatch: pytest.MonkeyPatch) -> None:
    values: list[object] = [[0.5 * i for i in range(20_000)], list(range(300)), list(range(70_000, 90_000))]
    for protocol in range(0, pickle.HIGHEST_PROTOCOL + 1):
        data = pickle.dumps(values, protocol=protocol)
        _same_with_and_without_runs(data, Limits(), monkeypatch)
        _same_with_and_without_runs(data[:-1000], Limits(), monkeypatch)  # cut inside a run, past a refill


@pytest.mark.parametrize("depth", range(1, 14))
def test_a_run_that_ends_the_data_stops_at_the_same_depth_limit(depth: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = PROTO4 + b"(" + b"K\x07" * 10  # nothing after the run: the limit is the only thing that can stop it
    _same_with_and_without_runs(data, replace(Limits(), max_stack_depth=depth), monkeypatch)
    _same_with_and_without_runs(data, replace(Limits(), max_pickle_opcodes=depth), monkeypatch)


@settings(max_examples=300, deadline=None)
@given(tail=st.binary(max_size=200), pick=st.integers(0, 1000))
def test_an_opcode_that_cannot_start_a_pickle_fails_before_anything_runs(tail: bytes, pick: int) -> None:
    """probe() says no at once to these first bytes: the machine agrees (an error at byte 0, nothing imported or
    called), and so does CPython's unpickler."""
    from wscan.scanners.pickle import CANNOT_START
    from wscan.scanners.pickle_ops import PickleSyntaxError, Stream
    from wscan.scanners.pickle_vm import Machine

    code = sorted(CANNOT_START)[pick % len(CANNOT_START)]
    head = bytes([code]) + tail
    res = Machine(Stream(io.BytesIO(head), limit=len(head)), Limits()).run()
    assert isinstance(res.error, PickleSyntaxError) and res.error.offset == 0
    assert not res.events and not res.imports and res.opcodes == 1
    assert not probe(head, strict=False) and not probe(head, strict=True)
    with pytest.raises(Exception) as refused:
        pickle.loads(head)
    assert isinstance(refused.value, pickle.UnpicklingError | EOFError | IndexError | ValueError)


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_a_long_list_keeps_its_first_items_and_counts_the_rest(protocol: int) -> None:
    from wscan.scanners.pickle_ops import Stream
    from wscan.scanners.pickle_values import MAX_ITEMS, Const, Seq
    from wscan.scanners.pickle_vm import Machine

    data = pickle.dumps([list(range(MAX_ITEMS + 904)), tuple(range(7))], protocol=protocol)
    res = Machine(Stream(io.BytesIO(data), limit=len(data)), Limits()).run()
    assert isinstance(res.result, Seq) and res.stopped
    long, short = res.result.items
    assert isinstance(long, Seq) and isinstance(short, Seq)
    assert [c.value for c in long.items if isinstance(c, Const)] == list(range(MAX_ITEMS))
    assert long.dropped == 904
    assert [c.value for c in short.items if isinstance(c, Const)] == list(range(7)) and short.dropped == 0


def test_python2_names_are_mapped_only_below_protocol_3(tmp_path: Path) -> None:
    """find_class applies the Python 2 name mapping only below protocol 3: `copy_reg._reconstructor` is copyreg's
    at protocol 2 (allowed) and a module that does not exist at protocol 4 (unknown, and the load fails there)."""
    body = b"ccopy_reg\n_reconstructor\n."
    assert rule_ids(scan_bytes(tmp_path, b"\x80\x02" + body)) == set()
    assert "WS-PKL-003" in rule_ids(scan_bytes(tmp_path, b"\x80\x04" + body))



def _instance_method_call(module: str, cls: str, method: str) -> bytes:
    """getattr(<cls instance made by NEWOBJ>, method)() in protocol 4."""
    def text(value: str) -> bytes:
        return pickle.SHORT_BINUNICODE + bytes([len(value)]) + value.encode()

    instance = text(module) + text(cls) + pickle.STACK_GLOBAL + pickle.EMPTY_TUPLE + pickle.NEWOBJ
    getattr_ = text("builtins") + text("getattr") + pickle.STACK_GLOBAL
    looked_up = getattr_ + instance + text(method) + pickle.TUPLE2 + pickle.REDUCE
    return pickle.PROTO + b"\x04" + looked_up + pickle.EMPTY_TUPLE + pickle.REDUCE + pickle.STOP


def test_method_of_a_restored_instance_is_judged_by_its_name(tmp_path: Path) -> None:
    """getattr(instance, "name") is the class's function of that name, judged by the allowlist: a DataFrame's
    to_pickle is not on it (critical). A SciPy discrete distribution's _entropy (what its pickled vecentropy wraps)
    passes as a value only (test_scipy_distributions_as_scipy_writes_them_pass): called while the file loads it
    calls self._get_support, which a state set before the call replaces (review 58: a segfault, factorial(10**8))."""
    hostile = scan_bytes(tmp_path, _instance_method_call("pandas.core.frame", "DataFrame", "to_pickle"))
    assert any(f.rule_id == "WS-PKL-017" and "DataFrame.to_pickle" in f.message for f in hostile.findings), (
        hostile.findings
    )
    scipy = scan_bytes(tmp_path, _instance_method_call("scipy.stats._discrete_distns", "poisson_gen", "_entropy"))
    assert any(f.rule_id == "WS-PKL-017" and "_entropy" in f.message for f in scipy.findings), scipy.findings
    dunder = scan_bytes(tmp_path, _instance_method_call("scipy.stats._discrete_distns", "poisson_gen", "__reduce__"))
    assert any(f.severity >= Severity.CRITICAL for f in dunder.findings), dunder.findings


def test_a_protocol_above_five_at_the_start_is_no_pickle(tmp_path: Path) -> None:
    """Review 19: both unpicklers refuse PROTO > 5 before anything runs, yet data starting 0x80 then a larger byte
    was read as a pickle and flagged high: a pymorphy dictionary's uint16 count 3456 (80 0d), slovnet's raw float
    arrays, 8-bit PCM silence (4,000 findings). Such bytes are an unknown format now."""
    for name, blob in {"counts.array": b"\x80\x0d" + bytes(range(200)), "silence.raw": b"\x80" * 8192}.items():
        with pytest.raises(ValueError, match="unsupported pickle protocol"):
            pickle.loads(blob)  # what every loader built on pickle does with it
        report = scan_bytes(tmp_path, blob, name)
        assert rule_ids(report) == {"WS-FILE-006"}, name


def test_a_word_list_that_reads_as_an_import_is_text(tmp_path: Path) -> None:
    """A word list opening with "cat" reads as GLOBAL at.dog, then fails: pickle.load imports the module (its
    import-time code runs, as the marker shows) and raises before anything is called. A text file, medium
    (WS-PKL-041), not a pickle; the same bytes named like a pickle, a dangerous name and a stream that calls what it
    imports are a pickle's findings."""
    import subprocess
    import sys

    words = b"cat\ndog\nbird\nfish\n"
    (tmp_path / "at.py").write_text("import pathlib\npathlib.Path('imported').write_text('yes')\ndog = 1\n")
    (tmp_path / "vocab.txt").write_bytes(words)
    load = "import pickle, sys; sys.path.insert(0, '.'); pickle.load(open('vocab.txt', 'rb'))"
    loaded = subprocess.run([sys.executable, "-I", "-c", load], cwd=tmp_path, capture_output=True, text=True, timeout=9)
    assert loaded.returncode != 0 and "UnpicklingError" in loaded.stderr
    assert (tmp_path / "imported").read_text() == "yes"

    report = scan_bytes(tmp_path, words, "vocab.txt")
    assert {(f.rule_id, f.severity) for f in report.findings} == {("WS-PKL-041", Severity.MEDIUM)}
    assert not report.failed
    named = rule_ids(scan_bytes(tmp_path, words, "words.pkl"))  # what loaders unpickle by its name
    assert "WS-PKL-003" in named and "WS-PKL-041" not in named
    assert "WS-PKL-001" in rule_ids(scan_bytes(tmp_path, b"cos\nsystem\nfoo\nbar\n", "names.txt"))
    called = rule_ids(scan_bytes(tmp_path, b"cat\ndog\n(tR\nfish\n", "called.txt"))
    assert "WS-PKL-003" in called and "WS-PKL-041" not in called
    binary = rule_ids(scan_bytes(tmp_path, b"cat\ndog\n\x00\x01\x02\x03", "binary.bin"))
    assert "WS-PKL-003" in binary and "WS-PKL-041" not in binary


def test_a_word_list_in_a_plain_zip_is_text_but_not_in_a_model_archive(tmp_path: Path) -> None:
    """TensorFlow Lite's metadata writer appends a model's labels as a zip: labels.txt there is a text file, as it
    is on disk (WS-PKL-041, medium). The same bytes under a pickle's name, in a PyTorch checkpoint's zip or
    decompressed from a stream stay a pickle's findings (review 32)."""
    words = b"cat\ndog\nbird\nfish\n"

    def zipped(members: dict[str, bytes]) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for member, data in members.items():
                archive.writestr(member, data)
        return buffer.getvalue()

    labels = scan_bytes(tmp_path, zipped({"labels.txt": words}), "labels.zip")
    assert {(f.rule_id, f.severity) for f in labels.findings} == {("WS-PKL-041", Severity.MEDIUM)}
    assert "WS-PKL-003" in rule_ids(scan_bytes(tmp_path, zipped({"labels.pkl": words}), "pickled.zip"))
    torch_like = zipped({"archive/data.pkl": PROTO4[:1] + b"\x02N.", "archive/notes.txt": words})
    assert "WS-PKL-003" in rule_ids(scan_bytes(tmp_path, torch_like, "model.pt"))
    assert "WS-PKL-003" in rule_ids(scan_bytes(tmp_path, gzip.compress(words, mtime=0), "labels.txt.gz"))


@pytest.mark.parametrize(
    ("name", "data"),
    [
        # review 32: importing unittest.__main__ runs every test*.py in the working folder, then exits
        ("model.th", b"cunittest.__main__\nmain\nb\n"),
        # ... from a file a loader decompresses (joblib.load of a gzip'd .pkl)
        ("model.pkl", gzip.compress(b"cat\ndog\nbird\n", mtime=0)),
        # SETITEMS with an odd count: the pure-Python unpickler sets the whole pairs, then fails
        ("plain_model.th", b"ctransformers.models.auto.configuration_auto\n__dict__\n(S'resolve_trust_remote_code'\n"
                           b"cunittest.mock\nMagicMock\nS'pad'\nu\n"),
        ("words.txt", b"cat\ndog\ncow\nbird\n"),  # two imports: BUILD acts on what the first one made
        ("words.txt", b"cat\ndog\nquail\n"),  # BINPUT goes on to the next opcode
        ("words.txt", b"c_at\ndog\nbird\n"),  # not a word
        ("words.txt", b"cantigravity\nx\nb\n"),  # the standard library's
    ],
)
def test_text_that_does_more_than_one_import_is_a_pickle(tmp_path: Path, name: str, data: bytes) -> None:
    found = {(f.rule_id, f.severity) for f in scan_bytes(tmp_path, data, name).findings}
    assert "WS-PKL-041" not in {rule for rule, _ in found}
    assert max(severity for _, severity in found) >= Severity.HIGH


def test_dict_states_past_what_wscan_keeps_are_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dict states are judged at the stream's end, up to MAX_STATES of them (a million): those past it went unjudged
    without a word (review 33). Shown with the limit lowered; the scan's workers fork from this process."""
    from wscan.scanners import pickle_states

    monkeypatch.setattr(pickle_states, "MAX_STATES", 10)
    one = b"h\x00)\x81}b0"  # BINGET 0 (the class), EMPTY_TUPLE, NEWOBJ, EMPTY_DICT, BUILD, POP
    data = PROTO4[:1] + b"\x02cargparse\nNamespace\nq\x00" + one * 11 + b"N."
    assert isinstance(pickle.loads(data), type(None))
    assert "WS-PKL-025" in rule_ids(scan_bytes(tmp_path, data))
    assert "WS-PKL-025" not in rule_ids(scan_bytes(tmp_path, data.replace(one * 11, one * 10), "ten.bin"))


def test_lazy_layers_saved_before_their_first_forward_are_clean(tmp_path: Path) -> None:
    """Review 46: a lazy layer keeps its own bound methods as hooks (pickled as getattr(<layer>, '_lazy_load_hook')),
    RemovableHandles, and UninitializedParameter weights, made by a call; wscan called the lookups critical."""
    import torch
    from torch import nn

    saved = {
        "linear.pt": nn.LazyLinear(4),
        "conv.pt": nn.Sequential(nn.LazyConv2d(4, 3), nn.ReLU()),
        "norm.pt": nn.LazyBatchNorm1d(),
        "state_dict.pt": nn.LazyLinear(4).state_dict(),
    }
    for name, value in saved.items():
        torch.save(value, tmp_path / name)
        torch.load(tmp_path / name, weights_only=False)
    report = wscan.scan([tmp_path])
    assert [f.rule_id for f in report.findings if f.severity >= Severity.HIGH] == []
    assert report.count("scanned") == len(saved)


def test_transformers_schedulers_and_adafactor_saved_whole_are_clean(tmp_path: Path) -> None:
    """Review 46: a LambdaLR from transformers' schedule helpers keeps a partial of a lambda in
    transformers.optimization (arithmetic on the step), and Adafactor is an optimizer like torch's; saved whole, wscan
    called them not allowed (high)."""
    import torch
    from torch import nn
    from transformers import optimization

    weight = nn.Parameter(torch.ones(2))
    adafactor = optimization.Adafactor([weight], lr=0.1, relative_step=False)
    adamw = torch.optim.AdamW([weight], lr=0.1)
    schedules = {
        "linear": optimization.get_linear_schedule_with_warmup(adamw, 2, 10),
        "cosine": optimization.get_cosine_schedule_with_warmup(adamw, 2, 10),
        "polynomial": optimization.get_polynomial_decay_schedule_with_warmup(adamw, 2, 10),
        "constant": optimization.get_constant_schedule_with_warmup(adamw, 2),
        "inverse-sqrt": optimization.get_inverse_sqrt_schedule(adamw, 2),
    }
    for name, schedule in schedules.items():
        torch.save({"optimizer": adamw, "scheduler": schedule}, tmp_path / f"{name}.pt")
    torch.save(adafactor, tmp_path / "adafactor.pt")
    for path in tmp_path.iterdir():
        torch.load(path, weights_only=False)
    report = wscan.scan([tmp_path])
    assert [(f.rule_id, f.message) for f in report.findings if f.severity >= Severity.HIGH] == []
    assert report.count("scanned") == len(schedules) + 1


def test_pruned_layers_saved_whole_are_clean(tmp_path: Path) -> None:
    """Review 46: torch.nn.utils.prune keeps its method objects as a layer's forward pre-hooks (a tensor name, an
    amount, a mask); saved whole, wscan called them not allowed (high) and hooks set by the state (high)."""
    import torch
    import torch.nn.utils.prune as prune
    from torch import nn

    linear = nn.Linear(4, 4)
    prune.l1_unstructured(linear, "weight", 0.5)
    conv = nn.Conv2d(2, 2, 3)
    prune.random_unstructured(conv, "weight", 0.3)
    prune.ln_structured(conv, "weight", 0.5, n=1, dim=0)  # a PruningContainer of two methods
    prune.random_structured(conv, "weight", 0.3, dim=1)
    masked = nn.Linear(3, 3)
    prune.identity(masked, "weight")
    prune.custom_from_mask(masked, "bias", torch.tensor([1.0, 0.0, 1.0]))
    both = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    prune.global_unstructured([(both[0], "weight"), (both[1], "weight")], pruning_method=prune.L1Unstructured,
                              amount=0.2)  # fmt: skip
    for name, module in {"linear": linear, "conv": conv, "masked": masked, "global": both}.items():
        torch.save(module, tmp_path / f"{name}.pt")
    restored = torch.load(tmp_path / "conv.pt", weights_only=False)
    assert restored(torch.ones(1, 2, 5, 5)).shape == (1, 2, 3, 3)  # the hooks ran: the weight is its mask's product
    report = wscan.scan([tmp_path])
    assert [(f.rule_id, f.message) for f in report.findings if f.severity >= Severity.HIGH] == []
    assert report.count("scanned") == 4


@pytest.mark.parametrize(
    "module, name",
    [
        ("inspect", "getsource"),
        ("inspect", "Signature.from_callable"),
        ("inspect", "Parameter.replace"),
        ("http.server", "HTTPServer"),
        ("http", "HTTPStatus.__init__"),
        ("http.client", "HTTPConnection"),
    ],
)
def test_excepted_stdlib_classes_leave_their_modules_dangerous(tmp_path: Path, module: str, name: str) -> None:
    """inspect.Signature, inspect.Parameter and http.HTTPStatus are excepted from their dangerous modules by exact
    name (real pickles hold them); their methods and the modules' other members stay critical."""
    data = PROTO4 + sbu(module) + sbu(name) + b"\x93" + sbu("x") + b"\x85R."
    found = [f for f in scan_bytes(tmp_path, data).findings if f.rule_id == "WS-PKL-001"]
    assert [f.evidence.get("callable") for f in found] == [f"{module}.{name}"]
