"""Pickle oracle differential: every global CPython's unpicklers resolve, wscan reports (or fails the file).

Opcode streams are generated from a grammar of real opcodes (imports by GLOBAL, STACK_GLOBAL and INST, calls by
REDUCE, OBJ, INST, NEWOBJ and NEWOBJ_EX, BUILD, extension codes, the memo, framing, concatenated pickles, joblib
arrays whose bytes are opcodes) and loaded
by fuzz/pickle_oracle.py: C `pickle.Unpickler` on a BytesIO and on a buffered file, and the pure-Python
`pickle._Unpickler`, each with a `find_class` that records the name and returns a harmless stub (nothing real runs).
Every resolved name must be among wscan's `pickle.import` observations of the same bytes as `model.pkl`, unless wscan
reports the file at high or critical anyway. The atheris target `fuzz/targets/fuzz_pickle_oracle.py` checks the same
property on mutated corpus pickles.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))

import harness
import pickle_oracle

from tests.helpers.scanning import scan
from wscan.model import Severity
from wscan.scanners.pickle import PickleScanner

SCANNERS = [PickleScanner()]

# Names as streams write them: plain, Python 2 names find_class maps below protocol 3, dotted (protocol 4 walks
# them), allowlisted forwarders and the nested-load helper, and one that maps to a dangerous name.
NAMES = [
    ("posix", "system"), ("os", "system"), ("builtins", "getattr"), ("builtins", "eval"), ("__builtin__", "eval"),
    ("__builtin__", "getattr"), ("copy_reg", "_reconstructor"), ("copyreg", "_reconstructor"),
    ("collections", "OrderedDict"), ("functools", "partial"), ("torch._utils", "_rebuild_tensor_v2"),
    ("torch.storage", "_load_from_bytes"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
    ("joblib.numpy_pickle", "NumpyArrayWrapper"), ("os.path", "join"), ("uuid", "platform.os.system"),
    ("subprocess", "Popen"), ("UserDict", "UserDict"), ("exceptions", "OSError"), ("commands", "getoutput"),
    ("builtins", "getattr.__call__"), ("posix", "mkdir"), ("_codecs", "encode"),
]  # fmt: skip
TEXTS = ["posix", "system", "os", "builtins", "getattr", "eval", "__builtin__", "mkdir", "x", "", "a.b"]


def _short_text(text: str) -> bytes:
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data


def _text(draw: st.DrawFn) -> bytes:
    text = draw(st.sampled_from(TEXTS))
    form = draw(st.integers(0, 3))
    data = text.encode()
    if form == 0:
        return _short_text(text)
    if form == 1:
        return b"X" + struct.pack("<I", len(data)) + data
    if form == 2:
        return b"V" + data + b"\n"
    return b"U" + bytes([len(data)]) + data  # SHORT_BINSTRING: str under protocol 0-2 semantics


@st.composite
def _import(draw: st.DrawFn) -> bytes:
    module, name = draw(st.sampled_from(NAMES))
    how = draw(st.integers(0, 2))
    if how == 0:
        return b"c" + module.encode() + b"\n" + name.encode() + b"\n"
    if how == 1:
        return _short_text(module) + _short_text(name) + b"\x93"
    return b"(" + _text(draw) + b"i" + module.encode() + b"\n" + name.encode() + b"\n"  # INST: a call


@st.composite
def _phrase(draw: st.DrawFn) -> bytes:
    """One grammar unit: mostly stack-balanced phrases (push a value), with raw opcodes mixed in."""
    kind = draw(st.integers(0, 17))
    if kind <= 3:
        return draw(_import())
    if kind == 4:  # REDUCE: callable, argument tuple
        return draw(_import()) + b"(" + _text(draw) + b"tR"
    if kind == 5:  # OBJ
        return b"(" + draw(_import()) + _text(draw) + b"o"
    if kind == 6:  # NEWOBJ / NEWOBJ_EX
        return draw(_import()) + draw(st.sampled_from([b")\x81", b")}\x92", b"(" + _text(draw) + b"t\x81"]))
    if kind == 7:  # BUILD with a dict state or a (state, slotstate) pair
        return draw(st.sampled_from([b"}", b"N}", b"(" + _text(draw) + _text(draw) + b"d"])) + draw(
            st.sampled_from([b"b", b"\x86b"])
        )
    if kind == 8:  # extension codes
        return draw(st.sampled_from([b"\x82\x01", b"\x83\x01\x02", b"\x84\x01\x00\x00\x00"]))
    if kind == 9:  # memo
        index = draw(st.integers(0, 3))
        return draw(
            st.sampled_from(
                [b"\x94", b"q" + bytes([index]), b"h" + bytes([index]), b"p%d\n" % index, b"g%d\n" % index,
                 b"r" + struct.pack("<I", index), b"j" + struct.pack("<I", index)]
            )
        )  # fmt: skip
    if kind == 10:
        return _text(draw)
    if kind == 11:  # containers
        return draw(st.sampled_from([b"]", b")", b"}", b"\x8f", b"(", b"t", b"l", b"d", b"a", b"e", b"s", b"u",
                                     b"\x90", b"\x91", b"\x85", b"\x86", b"\x87"]))  # fmt: skip
    if kind == 12:  # stack
        return draw(st.sampled_from([b"0", b"2", b"1", b"N", b"\x88", b"K\x01", b"R"]))
    if kind == 13:  # persistent ids
        return draw(st.sampled_from([b"Pid\n", _short_text("id") + b"Q"]))
    if kind == 14:  # protocol changes mid-stream
        return b"\x80" + bytes([draw(st.integers(0, 5))])
    if kind == 15:  # the end of one pickle (another may follow)
        return b"."
    if kind == 16:  # a joblib array wrapper: joblib reads the call after it as a uint8 array, pickle.load runs it
        raw = draw(_import()) + b"(" + _text(draw) + b"tR0"
        return (
            b"cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81}(U\x05shapeK" + bytes([len(raw)]) + b"\x85U\x05order"
            b"U\x01CU\x05dtypecnumpy\ndtype\nU\x02u1\x89\x88\x87RU\nallow_mmap\x89ub" + raw
        )
    return draw(st.sampled_from([b"I1\n", b"L1L\n", b"F1.0\n", b"S'x'\n", b"J\x01\x00\x00\x00"]))


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """A stream: PROTO, phrases (some in a FRAME, correctly sized or not), STOP, maybe more after it."""
    head = draw(st.sampled_from([b"", b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05"]))
    body = b"".join(draw(st.lists(_phrase(), min_size=1, max_size=12)))
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(body)))
        length = cut + draw(st.sampled_from([0, 0, 0, 1, -1])) if cut else cut
        body = b"\x95" + struct.pack("<Q", max(length, 0)) + body
    tail = draw(st.sampled_from([b".", b"N.", b"", b".N.", b"."]))
    more = b"".join(draw(st.lists(_phrase(), max_size=4))) if draw(st.booleans()) else b""
    return head + body + tail + more


def check(data: bytes) -> None:
    found = harness.drive(SCANNERS, data, "model.pkl")
    gaps = pickle_oracle.missing(data, found)
    if not gaps:
        return
    worst = max((f.severity for f in harness.rules().judge(found)), default=Severity.INFO)
    assert worst >= Severity.HIGH, (data, [(g.loader, g.raw, g.protocol) for g in gaps], worst.name)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_every_resolved_name_is_reported(data: bytes) -> None:
    check(data)


def test_oracle_stub_runs_nothing(tmp_path: Path) -> None:
    """The oracle resolves names without importing or calling them: posix.mkdir is recorded, no folder appears."""
    marker = tmp_path / "marker"
    data = b"cposix\nmkdir\n(S'" + str(marker).encode() + b"'\ntR."
    for loader in pickle_oracle.LOADERS:
        assert [r.raw for r in pickle_oracle.resolved(data, loader)] == ["posix.mkdir"]
    assert not marker.exists()


def test_oracle_maps_python2_names_below_protocol_3() -> None:
    for loader in pickle_oracle.LOADERS:
        (low,) = pickle_oracle.resolved(b"\x80\x02c__builtin__\neval\n.", loader)
        (high,) = pickle_oracle.resolved(b"\x80\x03c__builtin__\neval\n.", loader)
        assert low.candidates() == {"builtins.eval"} and high.candidates() == {"__builtin__.eval"}, loader


def test_oracle_refuses_lengths_past_the_data() -> None:
    """BINBYTES8 claiming 2**62 bytes: the C unpickler would allocate them; the oracle cuts the stream before it."""
    data = b"cposix\nmkdir\n\x8e" + struct.pack("<Q", 1 << 62) + b"x."
    assert pickle_oracle.walk(data).cut == len(b"cposix\nmkdir\n")
    for loader in pickle_oracle.LOADERS:
        assert [r.raw for r in pickle_oracle.resolved(data, loader)] == ["posix.mkdir"]


def test_seeds_hold_the_property() -> None:
    """The corpus pickles the fuzz targets start from."""
    import seeds

    for item in seeds._pickles():
        data = item.read_bytes() if isinstance(item, Path) else item
        if len(data) <= seeds.MAX_SEED_BYTES:
            check(data)


def test_the_plain_reading_does_not_repeat_what_joblibs_reading_reported() -> None:
    """An object array's nested pickle is read by both readings; its payload is one finding, not two."""
    path = Path(__file__).resolve().parents[1] / "corpus" / "hostile" / "joblib-object-array-payload.joblib"
    findings = [f for f in scan(path).findings if f.rule_id == "WS-PKL-001"]
    assert len(findings) == 1 and "posix.system" in findings[0].message
