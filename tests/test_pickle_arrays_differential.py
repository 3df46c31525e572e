"""What wscan reads from a pickled NumPy array is what NumPy reads (`scanners/pickle_arrays.py`).

The native checks (WS-PKL-059) judge models by their arrays' values, so a value read differently is a check done on
the wrong numbers. Hypothesis draws arrays (integers, floats, booleans, records of them; C or Fortran order; any
shape) and each is pickled at every protocol and by joblib (plain and compressed); the values wscan reads, without
unpickling, must equal the array, dtype and all. A big-endian dtype is never read (review 85: a dtype's state can
come after a model took its bytes as native), whatever its values."""

from __future__ import annotations

import io
import pickle
from typing import Any

import joblib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from wscan.limits import Limits
from wscan.scanners.pickle import _JoblibArrays
from wscan.scanners.pickle_arrays import ArrayReader, Unread
from wscan.scanners.pickle_ops import LongBytes, Stream
from wscan.scanners.pickle_values import Dict
from wscan.scanners.pickle_vm import Machine

SAVES = ("pickle0", "pickle1", "pickle2", "pickle3", "pickle4", "pickle5", "joblib", "joblib-z")


def saved(value: Any, how: str) -> bytes:
    if how.startswith("pickle"):
        return pickle.dumps(value, protocol=int(how.removeprefix("pickle")))
    buffer = io.BytesIO()
    joblib.dump(value, buffer, compress=3 if how == "joblib-z" else 0)
    blob = buffer.getvalue()
    if how == "joblib-z":
        import zlib

        blob = zlib.decompress(blob)  # the scanner reads the decompressed stream; offsets are into it
    return blob


def read_back(blob: bytes) -> np.ndarray:
    """The array under key "a" of the pickled dict, as wscan reads it."""
    nested: list[Any] = []
    hook = _JoblibArrays(nested)
    result = Machine(Stream(io.BytesIO(blob), limit=len(blob)), Limits(), on_build=hook).run().result
    assert isinstance(result, Dict)
    array = result.get("a")
    assert array is not None

    def read(source: LongBytes) -> bytes:
        return blob[source.start : source.start + source.length]

    return ArrayReader(read, hook.data, hook.objects, Limits().max_member_bytes).values(array)


plain = st.sampled_from(["<i1", "<i2", "<i4", "<i8", "<u1", "<u2", "<u4", "<u8", "<f4", "<f8", "|b1", "|u1"])
names = st.sampled_from(["a", "b", "c", "d"])
records = st.lists(st.tuples(names, plain), min_size=1, max_size=4, unique_by=lambda field: field[0])
dtypes = st.one_of(plain.map(np.dtype), records.map(np.dtype))


@settings(max_examples=60, deadline=None)
@given(
    array=dtypes.flatmap(lambda dtype: hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, max_side=5))),
    fortran=st.booleans(),
    how=st.sampled_from(SAVES),
)
def test_wscan_reads_the_array_numpy_reads(array: np.ndarray, fortran: bool, how: str) -> None:
    if fortran:
        array = np.asfortranarray(array)
    found = read_back(saved({"a": array}, how))
    assert found.dtype == array.dtype
    assert found.shape == array.shape
    assert found.tobytes(order="C") == array.tobytes(order="C")  # every value's bytes, NaN payloads too


@pytest.mark.parametrize("how", SAVES)
def test_long_arrays_are_read_back_from_the_file(how: str) -> None:
    """Past the 4 KiB the pickle machine keeps of a constant, the bytes are read from the file."""
    array = np.arange(100_000, dtype=np.int64) * 7 - 3
    assert np.array_equal(read_back(saved({"a": array}, how)), array)


@pytest.mark.parametrize("how", SAVES)
def test_a_big_endian_array_is_not_read(how: str) -> None:
    with pytest.raises(Unread, match="big-endian"):
        read_back(saved({"a": np.arange(5, dtype=">i8")}, how))


def test_a_big_endian_code_given_a_little_endian_state_is_not_read() -> None:
    """Review 86: `numpy.dtype('>i8')` with no state while a model takes its bytes, given the state '<' at the end
    of the stream. The dtype reads little-endian once the stream ends; the loader read it big-endian."""
    from wscan.scanners.pickle_arrays import numpy_dtype
    from wscan.scanners.pickle_values import Const, Global, Obj, Seq

    made = Obj(Global("numpy", "dtype"), Seq("tuple", [Const(">i8"), Const(False), Const(True)]))
    made.state = Seq("tuple", [Const(v) for v in (3, "<", None, None, None, -1, -1, 0)])
    with pytest.raises(Unread, match="big-endian"):
        numpy_dtype(made)
    made.args = Seq("tuple", [Const("<i8"), Const(False), Const(True)])
    assert numpy_dtype(made) == np.dtype("<i8")
