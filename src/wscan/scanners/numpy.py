"""NumPy `.npy` arrays: the header is a Python literal, object arrays carry a pickle after it.

`np.load(allow_pickle=True)` unpickles object arrays, so their payload goes through the pickle analysis.
Numeric arrays are checked for size against their header; bytes hidden after the data are reported and
sniffed, never loaded.
"""

from __future__ import annotations

import re
import struct
import tokenize
from collections.abc import Callable, Iterator
from typing import BinaryIO

from wscan.pyliteral import NotALiteral, read_tokens, tokens_of
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem
from wscan.scanners.pickle import analyze

MAGIC = b"\x93NUMPY"
MAX_PY2_HEADER = 65_536  # a header re-read without Python 2's long suffixes (numpy writes a few hundred bytes)
# Headers read as literals at all: numpy writes a few hundred bytes (a few tens of KB for thousands of fields) and
# refuses more than 10,000 unless allow_pickle is on; the reader takes about 1 to 3 s per MB.
MAX_LITERAL_HEADER = 1024 * 1024
_SIMPLE = re.compile(r"[<>|=]?([bBiuUfcmMOSVa?])(\d*)(?:\[[a-zA-Z0-9]+\])?")
# The header exactly as numpy writes it for a plain dtype, read without the literal reader (which tokenizes the
# text first: most of a small array's scan time). Shapes are tuple reprs: (), (5,), (3, 4).
# Any other spelling goes to the parser; the tests check both readings agree on everything this matches.
_N = r"(?:0|[1-9][0-9]{0,18})"  # longer numbers go to the reader, which refuses more digits than int() takes
_PLAIN_HEADER = re.compile(
    rf"\{{'descr': '([<>|=]?[a-zA-Z?][0-9]*)', 'fortran_order': (True|False), "
    rf"'shape': \((|{_N},|{_N}(?:, {_N})+)\), \}} *\n?"
)


def _itemsize(descr: object, depth: int = 0) -> tuple[int, bool] | None:
    """(itemsize, holds objects) of an npy `descr`; None when it is not a dtype numpy would write."""
    if depth > 32:
        return None
    if isinstance(descr, str):
        match = _SIMPLE.fullmatch(descr)
        if match is None:
            return None
        kind, digits = match.group(1), match.group(2)
        if kind == "O":
            return (int(digits or 8), True)
        if not digits:
            return (1, False) if kind in "?bB" else None
        return int(digits) * (4 if kind == "U" else 1), False
    if isinstance(descr, list):
        total, has_object = 0, False
        for field in descr:
            if not isinstance(field, tuple) or len(field) not in (2, 3):
                return None
            inner = _itemsize(field[1], depth + 1)
            if inner is None:
                return None
            count = 1
            if len(field) == 3:
                shape = field[2] if isinstance(field[2], tuple) else (field[2],)
                for dim in shape:
                    if not isinstance(dim, int) or dim < 0:
                        return None
                    count *= dim
            total += inner[0] * count
            has_object = has_object or inner[1]
        return total, has_object
    return None


def read_header(
    raw: BinaryIO, max_header: int, check_time: Callable[[], None] | None = None
) -> tuple[dict[str, object] | str, int]:
    """The npy header, or the reason it is invalid, and where the data after it starts (0 when unknown)."""
    prefix = raw.read(len(MAGIC) + 2)
    if len(prefix) < len(MAGIC) + 2 or not prefix.startswith(MAGIC):
        return "not an npy file", 0
    major = prefix[len(MAGIC)]
    if major == 1:
        length_bytes, fmt = raw.read(2), "<H"
    elif major in (2, 3):
        length_bytes, fmt = raw.read(4), "<I"
    else:
        return f"unknown npy version {major}", 0
    if len(length_bytes) != struct.calcsize(fmt):
        return "truncated npy header length", 0
    (length,) = struct.unpack(fmt, length_bytes)
    data_start = len(prefix) + len(length_bytes) + length
    if length > min(max_header, MAX_LITERAL_HEADER):  # numpy with allow_pickle reads any: what follows is judged
        return f"npy header of {length} bytes is larger than wscan reads", data_start
    text = raw.read(length)
    if len(text) != length:
        return "truncated npy header", 0
    try:
        decoded = text.decode("utf-8" if major == 3 else "latin-1")
        plain = _plain_header(decoded)
        header = _literal(decoded, major < 3, check_time) if plain is None else plain
    except (NotALiteral, UnicodeDecodeError, RecursionError, MemoryError):
        return "npy header is not a literal wscan reads", data_start
    if not isinstance(header, dict) or not {"descr", "fortran_order", "shape"} <= set(header):
        return "npy header lacks descr/fortran_order/shape", data_start
    return header, data_start


def _literal(text: str, py2_longs: bool, check_time: Callable[[], None] | None) -> object:
    """The header as numpy's `ast.literal_eval` reads it, read by wscan's own literal reader (never evaluated).
    Like numpy, a version 1 or 2 header that is no literal is read again without the `L` Python 2 wrote after
    long integers (`(3L, 4L)`), when it is short enough for that second pass to be cheap."""
    try:
        return read_tokens(tokens_of(text, check_time))
    except NotALiteral:
        if not py2_longs or len(text) > MAX_PY2_HEADER:
            raise
    kept: list[tokenize.TokenInfo] = []
    after_number = False
    for token in tokens_of(text):
        if not (after_number and token.type == tokenize.NAME and token.string == "L"):
            kept.append(token)
        after_number = token.type == tokenize.NUMBER
    return read_tokens(kept)


def _plain_header(text: str) -> dict[str, object] | None:
    """The header numpy writes for a plain dtype, as `ast.literal_eval` would read it; None for any other text."""
    match = _PLAIN_HEADER.fullmatch(text)
    if match is None:
        return None
    descr, fortran, shape = match.groups()
    dims = tuple(int(dim) for dim in shape.split(",") if dim)
    return {"descr": descr, "fortran_order": fortran == "True", "shape": dims}


class NpyScanner:
    """`.npy` files, also as members of `.npz` archives."""

    name = "numpy"

    def accepts(self, head: Head) -> bool:
        return head.head.startswith(MAGIC)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as raw:
            header, data_start = read_header(raw, ctx.limits.max_header_bytes, ctx.budget.check_time)
            info = None if isinstance(header, str) else _itemsize(header["descr"])
            shape = None if isinstance(header, str) else header["shape"]
            if (
                isinstance(header, str)
                or info is None
                or not isinstance(shape, tuple)
                or not all(isinstance(d, int) and d >= 0 for d in shape)
            ):
                reason = header if isinstance(header, str) else f"unsupported descr/shape {header!r:.120}"
                yield artifact.observe("npy.invalid", 0, reason=reason)
                # NumPy reads headers and descrs wscan does not (a bytes title, 'f8,O', 'T', a shape of -1, a header
                # of any size) and then unpickles what follows, whatever it looks like: it is simulated as a pickle.
                if data_start and artifact.size > data_start:
                    raw.seek(data_start)
                    yield from analyze(artifact, raw, data_start, ctx)
                return
            itemsize, has_object = info
            yield artifact.observe("npy.layout", 0, descr=str(header["descr"])[:200], object=has_object)
            if has_object:
                # np.load(allow_pickle=True) unpickles everything after the header.
                yield from analyze(artifact, raw, data_start, ctx)
                return
        count = 1
        for dim in shape:
            count *= dim
        expected = count * itemsize
        actual = artifact.size - data_start
        if actual < expected:
            yield artifact.observe("npy.truncated", data_start, expected=expected, actual=actual)
        elif actual > expected:
            hidden = data_start + expected
            yield artifact.observe("npy.trailing_data", hidden, length=actual - expected)
            yield artifact.hidden(hidden, actual - expected)
