"""pyarrow arrays in pickles (review 46): `pyarrow.lib._restore_array` rebuilds an array without validating it, so
offsets past the data buffer make every pickle loader read out of bounds. Real pandas and pyarrow pickles pass;
forged layouts are WS-PKL-045 (high); layouts wscan does not follow (lists, structs, dictionaries) are WS-PKL-046
(medium), never high."""

from __future__ import annotations

import decimal
import io
import pickle
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import joblib
import pandas as pd
import pyarrow as pa
import pytest

from tests.helpers.scanning import scan_bytes
from wscan.model import Severity


class Call:
    """Pickles as func(*args): the stream a hostile writer makes by hand."""

    def __init__(self, func: Any, *args: Any) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return self.func, self.args


def forged(arrow_type: pa.DataType, offsets: list[int], data: bytes, protocol: int = 4, **change: Any) -> bytes:
    """A one-array pickle, materialised by list() as the file loads (the review's shape)."""
    fields: dict[str, Any] = {
        "type": arrow_type, "length": len(offsets) - 1, "nulls": 0, "offset": 0,
        "buffers": [None, pa.py_buffer(struct.pack(f"<{len(offsets)}i", *offsets)), pa.py_buffer(data)],
    }  # fmt: skip
    fields.update(change)
    state = (fields["type"], fields["length"], fields["nulls"], fields["offset"], fields["buffers"], [], None)
    return pickle.dumps(Call(list, Call(pa.lib._restore_array, state)), protocol=protocol)


LENGTH = "import pickle, sys; print(len(pickle.load(open(sys.argv[1], 'rb'))[0].as_py()))"


def rules(tmp_path: Path, blob: bytes, name: str = "frame.pkl") -> dict[str, Severity]:
    return {f.rule_id: f.severity for f in scan_bytes(tmp_path, blob, name).findings}


def test_offsets_past_the_data_crash_the_loader_and_are_flagged(tmp_path: Path) -> None:
    blob = forged(pa.string(), [0, 0x7FFFFF00], b"A")
    path = tmp_path / "oob.pkl"
    path.write_bytes(blob)
    loaded = subprocess.run([sys.executable, "-I", "-c", LENGTH, str(path)], capture_output=True, timeout=120)
    assert loaded.returncode < 0, loaded  # killed by a signal: the read went out of bounds
    assert rules(tmp_path, blob).get("WS-PKL-045") == Severity.HIGH


def test_a_leak_that_loads_cleanly_is_flagged(tmp_path: Path) -> None:
    """A binary array of 4,096 bytes over a one-byte buffer loads, and holds bytes of the process's memory."""
    blob = forged(pa.binary(), [0, 4096], b"A")
    path = tmp_path / "leak.pkl"
    path.write_bytes(blob)
    shown = subprocess.run(  # in a child: the read is out of bounds
        [sys.executable, "-I", "-c", LENGTH, str(path)], capture_output=True, text=True, timeout=120
    )
    assert shown.stdout.strip() == "4096", shown
    assert rules(tmp_path, blob).get("WS-PKL-045") == Severity.HIGH


@pytest.mark.parametrize("protocol", [0, 1, 2, 4, 5])
def test_long_offsets_are_read_back_from_the_file(tmp_path: Path, protocol: int) -> None:
    """Offsets past what the pickle machine keeps (4 KiB; at protocol 0, a line past 64 KiB): the last one,
    48,000 bytes in, is read back."""
    offsets = list(range(0, 12_001))
    good = forged(pa.string(), offsets, b"x" * 12_000, protocol)
    assert not rules(tmp_path, good, "good.pkl")
    bad = forged(pa.string(), [*offsets[:-1], 1_000_000], b"x" * 12_000, protocol)
    assert rules(tmp_path, bad, "bad.pkl").get("WS-PKL-045") == Severity.HIGH


def test_a_protocol_0_data_buffer_is_measured_as_the_loader_decodes_it(tmp_path: Path) -> None:
    """At protocol 0 a buffer is a raw-unicode-escape line, where each NUL takes six characters: 100,000 NULs are a
    600,000-byte line but a 100,000-byte buffer. Offsets to 150,000 load, and the last string holds 50,000 bytes of
    the process's memory; measured as the line, they were within the buffer and only unverified (medium)."""
    offsets = [index * 100 for index in range(1000)]
    good = forged(pa.binary(), [*offsets, 100_000], b"\0" * 100_000, protocol=0)
    assert not rules(tmp_path, good, "good.pkl")
    bad = forged(pa.binary(), [*offsets, 150_000], b"\0" * 100_000, protocol=0)
    path = tmp_path / "leak0.pkl"
    path.write_bytes(bad)
    last = "import pickle, sys; print(len(pickle.load(open(sys.argv[1], 'rb'))[-1].as_py()))"
    shown = subprocess.run([sys.executable, "-I", "-c", last, str(path)], capture_output=True, text=True, timeout=120)
    assert shown.stdout.strip() == "50100", shown  # 100 bytes of the buffer, 50,000 past it
    assert rules(tmp_path, bad, "bad.pkl").get("WS-PKL-045") == Severity.HIGH


@pytest.mark.parametrize(
    "change",
    [
        {"buffers": [None, pa.py_buffer(struct.pack("<2i", 0, 1))]},  # two buffers: MakeArray reads a third
        {"offset": 5},  # offsets past the offsets buffer
        {"length": -1},
        {"nulls": 1},  # nulls but no validity bitmap
        {"type": pa.int64()},  # one buffer too many for a number array
    ],
    ids=["missing-buffer", "offset-past-offsets", "negative-length", "nulls-without-bitmap", "extra-buffer"],
)
def test_layouts_arrow_refuses_are_flagged(tmp_path: Path, change: dict[str, Any]) -> None:
    blob = forged(pa.string(), [0, 1], b"A", **change)
    assert rules(tmp_path, blob).get("WS-PKL-045") == Severity.HIGH


def _frame(rows: int) -> pd.DataFrame:
    words = [f"word-{i}" if i % 7 else None for i in range(rows)]
    return pd.DataFrame({
        "text": pd.array(words, dtype="string[pyarrow]"),
        "large": pd.Series(words, dtype=pd.ArrowDtype(pa.large_string())),
        "blob": pd.Series([w.encode() if w else None for w in words], dtype=pd.ArrowDtype(pa.binary())),
        "count": pd.Series(range(rows), dtype="int64[pyarrow]"),
        "flag": pd.Series([i % 3 == 0 for i in range(rows)], dtype="bool[pyarrow]"),
        "ratio": pd.Series([i / 3 for i in range(rows)], dtype="float32[pyarrow]"),
        "when": pd.Series(pd.date_range("2024-01-01", periods=rows, freq="h", tz="UTC")).astype(
            pd.ArrowDtype(pa.timestamp("ns", tz="UTC"))),
        "day": pd.Series(pd.date_range("2024-01-01", periods=rows)).astype(pd.ArrowDtype(pa.date32())),
        "price": pd.Series([None] * rows, dtype=pd.ArrowDtype(pa.decimal128(10, 2))),
        "nothing": pd.Series([None] * rows, dtype=pd.ArrowDtype(pa.null())),
        # review 53: fixed-size binary and 256-bit decimals, common in real data, were WS-PKL-003
        "code": pd.Series([w[-2:].encode() if w else None for w in words], dtype=pd.ArrowDtype(pa.binary(2))),
        "amount": pd.Series([decimal.Decimal(i) / 4 for i in range(rows)], dtype=pd.ArrowDtype(pa.decimal256(40, 2))),
    })  # fmt: skip


@pytest.mark.parametrize("rows", [3, 5000])
def test_pandas_arrow_columns_as_pandas_pickles_them_pass(tmp_path: Path, rows: int) -> None:
    """Every flat Arrow type pandas keeps, short and past 4 KiB, sliced, and pickled every way pandas and joblib do."""
    frame = _frame(rows)
    blobs = {f"p{protocol}.pkl": pickle.dumps(frame, protocol=protocol) for protocol in (2, 4, 5)}
    blobs["sliced.pkl"] = pickle.dumps(frame.iloc[1:], protocol=5)
    buffer = io.BytesIO()
    frame.to_pickle(buffer)
    blobs["pandas.pkl"] = buffer.getvalue()
    buffer = io.BytesIO()
    joblib.dump(frame, buffer)
    blobs["frame.joblib"] = buffer.getvalue()
    buffer = io.BytesIO()
    pickle.dump(pa.Table.from_pandas(frame), buffer, protocol=5)
    blobs["table.pkl"] = buffer.getvalue()
    for name, blob in blobs.items():
        assert rules(tmp_path, blob, name) == {}, name


def _nested_frame() -> pd.DataFrame:
    tags = [["a", "b"], None, ["c"]]
    return pd.DataFrame({
        "tags": pd.Series(tags, dtype=pd.ArrowDtype(pa.list_(pa.string()))),
        "big_tags": pd.Series(tags, dtype=pd.ArrowDtype(pa.large_list(pa.string()))),
        "pair": pd.Series([[1, 2], [3, 4], None], dtype=pd.ArrowDtype(pa.list_(pa.int64(), 2))),
        "point": pd.Series([{"x": 1, "y": "a"}, None, {"x": 3, "y": None}],
                           dtype=pd.ArrowDtype(pa.struct([("x", pa.int64()), ("y", pa.string())]))),
        "attrs": pd.Series([[("k", 1)], [], None], dtype=pd.ArrowDtype(pa.map_(pa.string(), pa.int64()))),
        "kind": pd.Series(["x", None, "x"]).astype(pd.ArrowDtype(pa.dictionary(pa.int8(), pa.string()))),
    })  # fmt: skip


def test_nested_arrow_types_as_pandas_pickles_them_pass(tmp_path: Path) -> None:
    """Lists, large lists, fixed-size lists, structs, maps and dictionaries: each child is checked against the type
    its parent declares, and a dictionary's indices against its entries."""
    frame = _nested_frame()
    for protocol in (2, 5):
        assert rules(tmp_path, pickle.dumps(frame, protocol=protocol), f"p{protocol}.pkl") == {}
        assert rules(tmp_path, pickle.dumps(frame.iloc[1:], protocol=protocol), f"sliced{protocol}.pkl") == {}
    assert rules(tmp_path, pickle.dumps(pa.Table.from_pandas(frame), protocol=5), "table.pkl") == {}


def _array_state(array: pa.Array) -> tuple[Any, ...]:
    state = array.__reduce__()[1][0]
    return tuple(state)


def _materialised(state: tuple[Any, ...]) -> bytes:
    return pickle.dumps(Call(list, Call(pa.lib._restore_array, state)), protocol=5)


def test_dictionary_indices_past_the_dictionary_are_flagged(tmp_path: Path) -> None:
    """Indices a dictionary array looks up past its entries: its items are read out of bounds as the file loads."""
    real = _array_state(pa.array(["a", "b", "a"]).dictionary_encode())
    assert rules(tmp_path, _materialised(real), "real.pkl") == {}
    buffers = [None, pa.py_buffer(struct.pack("<3i", 0, 1, 1_000_000))]
    forged_state = (real[0], 3, 0, 0, buffers, [], real[6])
    assert rules(tmp_path, _materialised(forged_state), "forged.pkl").get("WS-PKL-045") == Severity.HIGH


def test_a_fixed_size_binary_data_buffer_shorter_than_its_items_is_flagged(tmp_path: Path) -> None:
    """`pa.binary(4096)` over a four-byte data buffer: the item loads, holding 4,092 bytes of the process's memory."""
    real = _array_state(pa.array([b"abcd"], pa.binary(4)))
    assert rules(tmp_path, _materialised(real), "real.pkl") == {}
    blob = _materialised((pa.binary(4096), 1, 0, 0, [None, pa.py_buffer(b"abcd")], [], None))
    path = tmp_path / "leak.pkl"
    path.write_bytes(blob)
    shown = subprocess.run(  # in a child: the read is out of bounds
        [sys.executable, "-I", "-c", LENGTH, str(path)], capture_output=True, text=True, timeout=120
    )
    assert shown.stdout.strip() == "4096", shown
    assert rules(tmp_path, blob, "leak.pkl").get("WS-PKL-045") == Severity.HIGH
    wide = _materialised((pa.decimal256(40, 2), 2, 0, 0, [None, pa.py_buffer(b"\0" * 32)], [], None))
    assert rules(tmp_path, wide, "wide.pkl").get("WS-PKL-045") == Severity.HIGH  # two 32-byte decimals in 32 bytes
    spelled = _materialised((Call(pa.lib.binary, -4), 1, 0, 0, [None, pa.py_buffer(b"abcd")], [], None))
    assert rules(tmp_path, spelled, "spelled.pkl").get("WS-PKL-045") == Severity.HIGH  # pyarrow never writes it


def test_list_offsets_past_the_child_are_flagged(tmp_path: Path) -> None:
    real = _array_state(pa.array([[1, 2], [3]]))
    offsets = pa.py_buffer(struct.pack("<3i", 0, 2, 50_000))
    forged_state = (real[0], 2, 0, 0, [None, offsets], real[5], None)
    assert rules(tmp_path, _materialised(forged_state), "list.pkl").get("WS-PKL-045") == Severity.HIGH


def test_a_struct_child_shorter_than_the_struct_is_flagged(tmp_path: Path) -> None:
    real = _array_state(pa.array([{"a": 1}, {"a": 2}]))
    forged_state = (real[0], 5, 0, 0, real[4], real[5], None)
    assert rules(tmp_path, _materialised(forged_state), "struct.pkl").get("WS-PKL-045") == Severity.HIGH


@pytest.mark.parametrize(
    ("declared", "child"), [(pa.decimal256(40, 2), pa.binary(32)), (pa.float64(), pa.int64())], ids=["fsb", "int64"]
)
def test_a_child_of_the_same_layout_but_another_type_aborts_the_loader_and_is_flagged(
    tmp_path: Path, declared: pa.DataType, child: pa.DataType
) -> None:
    """Review 54: Arrow checks a list child's type id, not only its layout, and aborts the process on a mismatch."""
    width = child.bit_width // 8
    state = (child, 1, 0, 0, [None, pa.py_buffer(b"\x01" * width)], [], None)
    offsets = pa.py_buffer(struct.pack("<2i", 0, 1))
    blob = _materialised((pa.list_(declared), 1, 0, 0, [None, offsets], [state], None))
    path = tmp_path / "abort.pkl"
    path.write_bytes(blob)
    loaded = subprocess.run([sys.executable, "-I", "-c", LENGTH, str(path)], capture_output=True, timeout=120)
    assert loaded.returncode < 0, loaded  # SIGABRT
    assert rules(tmp_path, blob).get("WS-PKL-045") == Severity.HIGH


def test_a_child_of_another_layout_than_declared_is_flagged(tmp_path: Path) -> None:
    """A list of int64 whose child array says it holds strings."""
    real = _array_state(pa.array([[1, 2], [3]]))
    strings = _array_state(pa.array(["a", "b", "c"]))
    forged_state = (real[0], real[1], real[2], real[3], real[4], [strings], None)
    assert rules(tmp_path, _materialised(forged_state), "child.pkl").get("WS-PKL-045") == Severity.HIGH


def test_arrow_types_named_by_an_alias_wscan_does_not_follow_are_high(tmp_path: Path) -> None:
    """Views pickle as type_for_alias("string_view"), an allowed maker: they were WS-PKL-046, medium, and helper 232's
    view 2 GB past its buffer crashed pandas at repr. Their own makers (pa.string_view) stay off the allowlist, so
    the alias is judged the same."""
    for views in (pa.array(["a", "b"], type=pa.string_view()), pa.array([b"a", b"b"], type=pa.binary_view())):
        assert rules(tmp_path, pickle.dumps(views, protocol=5)) == {"WS-PKL-045": Severity.HIGH}


# Review 48: ways around the first version of the check, each now WS-PKL-045.
BAD_STRINGS = (pa.string(), 1, 0, 0, [None, pa.py_buffer(struct.pack("<2i", 0, 0x7FFFFF00)), pa.py_buffer(b"A")], [],
               None)  # fmt: skip


def test_an_allowlisted_helper_calling_restore_array_is_flagged(tmp_path: Path) -> None:
    """numpy's __randomstate_ctor(data, _restore_array) calls _restore_array itself, then reads the array."""
    from numpy.random._pickle import __randomstate_ctor as randomstate

    blob = pickle.dumps(Call(randomstate, BAD_STRINGS, pa.lib._restore_array), protocol=4)
    assert rules(tmp_path, blob).get("WS-PKL-045") == Severity.HIGH


def _glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _bytes(data: bytes) -> bytes:
    return b"C" + bytes([len(data)]) + data if len(data) < 256 else b"B" + struct.pack("<I", len(data)) + data


def test_a_buffer_list_grown_after_the_call_is_judged_as_the_call_saw_it(tmp_path: Path) -> None:
    """pyarrow copies the buffers list when _restore_array runs: two buffers for a string array (no data buffer). The
    stream appends the data buffer to the same list afterwards; the check used to see three."""
    offsets = struct.pack("<2i", 0, 0x10000)
    stream = (b"\x80\x04" + _glob("builtins", "list") + _glob("pyarrow.lib", "_restore_array") + b"("
              + _glob("pyarrow.lib", "type_for_alias") + b"X\x06\x00\x00\x00string\x85R" + b"K\x01K\x00K\x00"
              + b"]q\x01(N" + _glob("pyarrow.lib", "py_buffer") + _bytes(offsets) + b"\x85Re" + b"]Nt\x85R\x85R"
              + b"h\x01" + _glob("pyarrow.lib", "py_buffer") + _bytes(b"A" * 0x10000) + b"\x85Ra0.")  # fmt: skip
    assert rules(tmp_path, stream).get("WS-PKL-045") == Severity.HIGH


def test_offsets_changed_in_place_are_flagged(tmp_path: Path) -> None:
    """bytearray(b'...') given to py_buffer, then an item of it set by the stream: pyarrow never writes that."""
    stream = (b"\x80\x04" + _glob("pyarrow.lib", "_restore_array") + b"("
              + _glob("pyarrow.lib", "type_for_alias") + b"X\x06\x00\x00\x00string\x85R" + b"K\x01K\x00K\x00"
              + b"](N" + _glob("pyarrow.lib", "py_buffer") + _glob("builtins", "bytearray")
              + _bytes(struct.pack("<2i", 0, 1)) + b"\x85Rq\x02\x85R" + _glob("pyarrow.lib", "py_buffer")
              + _bytes(b"A") + b"\x85Re]Nt\x85R" + b"h\x02K\x04K\xffs0.")  # fmt: skip
    assert rules(tmp_path, stream).get("WS-PKL-045") == Severity.HIGH


def test_a_bad_array_after_many_good_ones_is_flagged(tmp_path: Path) -> None:
    good = (pa.string(), 1, 0, 0, [None, pa.py_buffer(struct.pack("<2i", 0, 1)), pa.py_buffer(b"A")], [], None)
    bad = Call(list, Call(pa.lib._restore_array, BAD_STRINGS))
    blob = pickle.dumps([Call(pa.lib._restore_array, good)] * 3 + [bad])
    assert rules(tmp_path, blob).get("WS-PKL-045") == Severity.HIGH


def test_only_offsets_are_read_back_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Data buffers are measured, not read: a frame with more string data than the read-back limit passes, and one
    whose offsets alone pass the limit is flagged (the limit fails closed)."""
    from wscan.scanners import pickle_arrow

    words = pa.array(["x" * 50] * 2000)  # 8 KB of offsets, 100 KB of data
    blob = pickle.dumps(words, protocol=5)
    monkeypatch.setattr(pickle_arrow, "MAX_ARROW_BYTES", 20_000)
    assert rules(tmp_path, blob, "under.pkl") == {}
    monkeypatch.setattr(pickle_arrow, "MAX_ARROW_BYTES", 5_000)
    assert rules(tmp_path, blob, "over.pkl").get("WS-PKL-045") == Severity.HIGH


# Review 49: more ways around the check, each now WS-PKL-045.
def _raw_array(length: bytes, data: bytes) -> bytes:
    """list(_restore_array((string, <length>, 0, 0, [None, offsets 0..0x7fffff00, <data>], [], None))), by hand."""
    offsets = struct.pack("<2i", 0, 0x7FFFFF00)
    return (b"\x80\x04" + _glob("builtins", "list") + _glob("pyarrow.lib", "_restore_array") + b"("
            + _glob("pyarrow.lib", "type_for_alias") + b"X\x06\x00\x00\x00string\x85R" + length + b"K\x00K\x00"
            + b"](N" + _glob("pyarrow.lib", "py_buffer") + _bytes(offsets) + b"\x85R"
            + _glob("pyarrow.lib", "py_buffer") + data + b"\x85Re]Nt\x85R\x85R.")  # fmt: skip


@pytest.mark.parametrize(
    "length",
    [b"\x8b" + struct.pack("<i", 1025) + b"\x01" + b"\x00" * 1024, b"\x88", b"I01\n"],
    ids=["long4-of-1025-bytes", "newtrue", "protocol-0-true"],
)
def test_a_length_written_unusually_is_read_as_pyarrow_reads_it(tmp_path: Path, length: bytes) -> None:
    """A LONG4 of 1,025 bytes holding 1 was read as 0 (an empty array, nothing checked); True is 1 to pyarrow."""
    blob = _raw_array(length, _bytes(b"A"))
    assert rules(tmp_path, blob).get("WS-PKL-045") == Severity.HIGH


def test_a_bytearray_made_by_newobj_is_empty(tmp_path: Path) -> None:
    """NEWOBJ runs bytearray.__new__ only, which ignores its argument: the data buffer is empty, not 256 bytes."""
    newobj = _glob("builtins", "bytearray") + _bytes(b"A" * 256) + b"\x85\x81"
    blob = _raw_array(b"K\x01", newobj).replace(struct.pack("<2i", 0, 0x7FFFFF00), struct.pack("<2i", 0, 256))
    assert rules(tmp_path, blob).get("WS-PKL-045") == Severity.HIGH


def test_arrays_nested_past_the_depth_limit_fail_closed(tmp_path: Path) -> None:
    state: tuple[Any, ...] = _array_state(pa.array([1, 2]))
    for _ in range(40):
        state = (pa.struct([("x", state[0])]), 2, 0, 0, [None], [state], None)
    found = rules(tmp_path, pickle.dumps(Call(pa.lib._restore_array, state), protocol=4))
    assert found.get("WS-PKL-045") == Severity.HIGH


def test_shapes_pyarrow_never_writes_are_invalid_not_unverified(tmp_path: Path) -> None:
    """Review 51: a computed offsets buffer (a NumPy array), computed call arguments (`_restore_array(*tuple([s]))`)
    and a struct type given as a dict were medium, and their offsets went unchecked; wrapped in set(), each crashed
    pickle.load itself (shown for the first). pyarrow writes none of them: each is WS-PKL-045."""
    import numpy as np

    far = struct.pack("<2i", 0, 0x7FFFFF00)
    as_array = np.frombuffer(far, dtype=np.uint8).copy()
    state = (pa.string(), 1, 0, 0, [None, Call(pa.py_buffer, as_array), pa.py_buffer(b"A")], [], None)
    crash = pickle.dumps(Call(set, Call(pa.lib._restore_array, state)), protocol=4)
    path = tmp_path / "crash.pkl"
    path.write_bytes(crash)
    loaded = subprocess.run([sys.executable, "-I", "-c", "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))",
                             str(path)], capture_output=True, timeout=120)  # fmt: skip
    assert loaded.returncode < 0, loaded  # killed by a signal while loading
    child = (pa.string(), 1, 0, 0, [None, pa.py_buffer(far), pa.py_buffer(b"A")], [], None)
    body = pickle.dumps(child, protocol=2)[2:-1]  # the state alone: no PROTO, no STOP
    computed = (b"\x80\x02cbuiltins\nlist\ncpyarrow.lib\n_restore_array\ncbuiltins\ntuple\n]" + body
                + b"a\x85R" + b"R" + b"\x85R.")  # list(_restore_array(*tuple([state])))  # fmt: skip
    as_dict = (Call(pa.struct, {"a": pa.string()}), 1, 0, 0, [None], [Call(pa.lib._restore_array, child)], None)
    shapes = {
        "ndarray buffer": crash,
        "computed arguments": computed,
        "dict struct": pickle.dumps(Call(list, Call(pa.lib._restore_array, as_dict)), protocol=4),
    }
    for name, blob in shapes.items():
        assert rules(tmp_path, blob, f"{name}.pkl").get("WS-PKL-045") == Severity.HIGH, name


def test_buffers_passed_out_of_band_are_unverified_not_invalid(tmp_path: Path) -> None:
    """Protocol 5 with a buffer_callback leaves the buffers out of the file (the caller passes them back to
    pickle.loads): real arrays, tables and frames so written were WS-PKL-045 for a few hours (review 52)."""
    objects = {
        "array": pa.array(["a", "bc", None] * 100),
        "table": pa.table({"n": [1, 2, 3], "s": ["x", "y", "z"]}),
        "frame": pd.DataFrame({"s": pd.array(["a", "b"], dtype="string[pyarrow]"), "n": [1, 2]}),
    }
    for name, value in objects.items():
        buffers: list[pickle.PickleBuffer] = []
        blob = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
        assert buffers, name  # really out of band
        pickle.loads(blob, buffers=buffers)  # loads with its buffers
        found = rules(tmp_path, blob, f"{name}.pkl")
        assert "WS-PKL-045" not in found and found.get("WS-PKL-046") == Severity.MEDIUM, (name, found)


def test_dictionary_indices_under_a_bitmap_with_no_nulls_are_all_read(tmp_path: Path) -> None:
    """Review 57: with a null count of 0 Arrow drops the validity bitmap, so an index the bitmap marked null is read;
    a compute kernel segfaulted on 1,000,000 into two entries."""
    real = _array_state(pa.array(["a", "b", "a"]).dictionary_encode())
    indices = pa.py_buffer(struct.pack("<3i", 0, 1_000_000, 1))
    bitmap = pa.py_buffer(bytes([0b101]))
    hidden = (real[0], 3, 1, 0, [bitmap, indices], [], real[6])  # one null: the index under it is never read
    assert rules(tmp_path, _materialised(hidden), "hidden.pkl") == {}
    counted = (real[0], 3, 0, 0, [bitmap, indices], [], real[6])
    assert rules(tmp_path, _materialised(counted), "counted.pkl").get("WS-PKL-045") == Severity.HIGH


def _aborts(tmp_path: Path, blob: bytes, use: str = LENGTH) -> subprocess.CompletedProcess[bytes]:
    path = tmp_path / "loaded.pkl"
    path.write_bytes(blob)
    return subprocess.run([sys.executable, "-I", "-c", use, str(path)], capture_output=True, timeout=120)


@pytest.mark.parametrize("where", ["entries", "keys"])
def test_a_map_whose_entries_or_keys_hold_a_null_aborts_the_loader_and_is_flagged(tmp_path: Path, where: str) -> None:
    """Review 60: Arrow aborts the process (SIGABRT) on a map whose entries struct, or its keys, hold a null; nulls
    elsewhere in a map (its values, the map slots themselves) are real data."""
    real = pa.array([[(1, 2), (3, 4)], None, [(5, None)]], type=pa.map_(pa.int32(), pa.int32()))
    state = _array_state(real)
    assert rules(tmp_path, _materialised(state), "real.pkl") == {}
    entries = list(state[5][0])
    if where == "entries":
        entries[2], entries[4] = 1, [pa.py_buffer(bytes([0b11110]))]
    else:
        keys = list(entries[5][0])
        keys[2], keys[4] = 1, [pa.py_buffer(bytes([0b11110])), keys[4][1]]
        entries[5] = [tuple(keys), entries[5][1]]
    blob = _materialised((*state[:5], [tuple(entries)], None))
    assert _aborts(tmp_path, blob).returncode < 0  # SIGABRT as it loads
    assert rules(tmp_path, blob, "forged.pkl").get("WS-PKL-045") == Severity.HIGH
    unknown = list(state[5][0])
    unknown[2], unknown[4] = -1, [pa.py_buffer(bytes([0b11111]))]  # a null count Arrow computes: none
    assert rules(tmp_path, _materialised((*state[:5], [tuple(unknown)], None)), "unknown.pkl") == {}


def test_an_empty_list_past_its_offsets_crashes_on_use_and_is_flagged(tmp_path: Path) -> None:
    """Review 60: an empty list array at offset 2^40 over its real offsets loads, then segfaults on flatten()."""
    state = _array_state(pa.array([], pa.list_(pa.int32())))
    assert rules(tmp_path, _materialised(state), "real.pkl") == {}
    sliced = pa.array([[1], [2, 3]], pa.list_(pa.int32())).slice(2, 0)  # empty, at offset 2, as pyarrow pickles it
    assert rules(tmp_path, pickle.dumps(sliced, protocol=5), "sliced.pkl") == {}
    forged = pickle.dumps(Call(pa.lib._restore_array, (state[0], 0, 0, 2**40, state[4], state[5], None)), protocol=5)
    flatten = "import pickle, sys; pickle.load(open(sys.argv[1], 'rb')).flatten()"
    assert _aborts(tmp_path, forged, flatten).returncode < 0  # SIGSEGV
    assert rules(tmp_path, forged, "forged.pkl").get("WS-PKL-045") == Severity.HIGH


def test_null_scalars_are_counted_by_what_their_type_fills(tmp_path: Path) -> None:
    """Review 60: pyarrow pickles a scalar as scalar(value, type), and each null in it (the value, or one inside it:
    review 65) fills an item of its type: list_(int64, 2^24) takes 128 MiB from a 100-byte file. Real files make
    such fills too (review 65: a column's scalars, most of them null), so only past 1 GiB more than the stream holds is
    it WS-PKL-048."""
    ordinary = [pa.scalar(None, pa.list_(pa.int64(), 4)), pa.scalar(None, pa.string()), pa.scalar(3, pa.int8())]
    assert rules(tmp_path, pickle.dumps(ordinary, protocol=5), "ordinary.pkl") == {}
    embeddings = pa.array([None] * 30000 + [[1.0] * 768] * 10, type=pa.list_(pa.float32(), 768))
    assert rules(tmp_path, pickle.dumps(list(embeddings), protocol=4), "column.pkl") == {}  # 88 MiB filled
    fixed = pa.list_(pa.int64(), 2**24)
    blob = pickle.dumps(pa.scalar(None, fixed), protocol=5)
    assert len(blob) < 200
    peak = "import pickle, resource, sys; pickle.load(open(sys.argv[1], 'rb')); print(resource.getrusage(0).ru_maxrss)"
    loaded = _aborts(tmp_path, blob, peak)
    assert int(loaded.stdout) > 128 * 1024, loaded  # KiB: the null list was filled in full
    # The calls pyarrow writes for these, made without building them here (each would fill what it says):
    many = [Call(pa.lib.scalar, None, fixed) for _ in range(10)]  # 1.25 GiB
    assert rules(tmp_path, pickle.dumps(many, protocol=5), "many.pkl").get("WS-PKL-048") == Severity.HIGH
    nested = pa.list_(pa.list_(pa.int64(), 2**20))
    inner = [Call(pa.lib.scalar, [None] * 8, nested) for _ in range(20)]  # 20 x 64 MiB
    assert rules(tmp_path, pickle.dumps(inner, protocol=5), "inner.pkl").get("WS-PKL-048") == Severity.HIGH
    bits = pa.list_(pa.list_(pa.struct([]), 2**14), 2**14)  # review 63: no bytes per item, but a bit
    empty = [Call(pa.lib.scalar, None, bits) for _ in range(5)]
    assert rules(tmp_path, pickle.dumps(empty, protocol=5), "empty.pkl").get("WS-PKL-048") == Severity.HIGH
