"""The .npy header: numpy's own spelling is read without the literal parser, and always as the parser reads it."""

from __future__ import annotations

import ast
import io

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wscan.scanners.numpy import _plain_header, read_header

DTYPES = ["<f4", ">f8", "<f2", "|b1", "|i1", "<i8", ">u2", "<c16", "<U10", "|S3", "|O", "<M8[ns]", "|V16",
          [("a", "<i4"), ("b", "|S2")]]  # fmt: skip


def _header_text(array: np.ndarray) -> str:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    data = buffer.getvalue()
    length = int.from_bytes(data[8:10], "little")
    return data[10 : 10 + length].decode("latin-1")


@settings(max_examples=200, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(0, 3), max_size=4).map(tuple),
    fortran=st.booleans(),
)
def test_headers_numpy_writes_read_the_same_both_ways(dtype: object, shape: tuple[int, ...], fortran: bool) -> None:
    text = _header_text(np.zeros(shape, dtype=dtype, order="F" if fortran else "C"))
    fast = _plain_header(text)
    assert fast is None or fast == ast.literal_eval(text)
    if isinstance(dtype, str) and "[" not in dtype:
        assert fast is not None  # numpy's plain headers take the fast path


@settings(max_examples=500, deadline=None)
@given(
    base=st.sampled_from(["<f4", "|O", "<i8"]).map(lambda d: _header_text(np.zeros((2, 3), d))),
    at=st.integers(0, 80),
    insert=st.sampled_from(["", " ", ",", "0", "'", '"', "(", ")", "1,", "\n", "\\", "#", "True", "0x1", "_"]),
    drop=st.integers(0, 3),
)
def test_any_other_spelling_is_left_to_the_parser_or_read_alike(base: str, at: int, insert: str, drop: int) -> None:
    text = base[:at] + insert + base[at + drop :]
    fast = _plain_header(text)
    if fast is not None:
        assert fast == ast.literal_eval(text)


def test_a_file_header_reads_the_same_as_numpy_reads_it() -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(12, dtype="<i4").reshape(3, 4))
    header = read_header(io.BytesIO(buffer.getvalue()), 1 << 16)
    assert not isinstance(header[0], str)
    buffer.seek(0)
    version = np.lib.format.read_magic(buffer)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read(buffer)
    assert header[0] == {"descr": dtype.str, "fortran_order": fortran, "shape": shape}
    assert header[1] == buffer.tell()


def test_python2_long_suffixes_are_read_as_numpy_reads_them() -> None:
    """Python 2 wrote `(3L, 4L)` in headers (numpy ships such a file, win64python2.npy); numpy drops the `L` after a
    number in a version 1 or 2 header that is no literal, and reads the array. An `L` anywhere else stays invalid,
    for both."""
    buffer = io.BytesIO()
    np.save(buffer, np.arange(12, dtype="<i8").reshape(3, 4))
    data = buffer.getvalue()
    length = int.from_bytes(data[8:10], "little")
    text = data[10 : 10 + length].decode("latin-1")
    for shape, valid in (("(3L, 4L)", True), ("(3, 4L)", True), ("(L, 4)", False), ("(3 L, 4)", True)):
        edited = text.replace("(3, 4)", shape).rstrip("\n ")
        edited += " " * (length - len(edited) - 1) + "\n"  # the same length, so the data stays where it was
        blob = data[:10] + edited.encode("latin-1") + data[10 + length :]
        header, _ = read_header(io.BytesIO(blob), 1 << 16)
        try:
            loaded = np.load(io.BytesIO(blob))
        except ValueError:
            loaded = None
        assert (loaded is not None) == valid == (not isinstance(header, str)), shape
        if loaded is not None and not isinstance(header, str):
            assert header["shape"] == loaded.shape == (3, 4)


def test_a_shape_with_more_digits_than_int_takes_is_invalid_not_an_error() -> None:
    """The fast path once called int() on a 5,000-digit dimension, which raises past Python's 4,300-digit limit
    (an eighteenth review); numpy refuses such a header too."""
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + "9" * 5000 + ",), }"
    header += " " * (63 - (12 + len(header)) % 64) + "\n"
    blob = b"\x93NUMPY\x02\x00" + len(header).to_bytes(4, "little") + header.encode()
    reason, data_start = read_header(io.BytesIO(blob), 1 << 20)
    assert isinstance(reason, str) and data_start == len(blob)
