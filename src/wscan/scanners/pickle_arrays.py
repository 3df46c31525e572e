"""A pickled NumPy array's values, read from the stream without loading it.

Why: some checks need an array's numbers, not only its shape (`pickle_native` checks scikit-learn's index arrays).
NumPy and joblib write an array in three ways, each read here as NumPy would read it, and nothing else:

- `_reconstruct(ndarray, (0,), b'b')` with BUILD state `(version, shape, dtype, is_fortran, data)` (pickle protocols 0
  to 4; protocol 2 gives the data as `_codecs.encode(text, 'latin1')`);
- `_frombuffer(data, dtype, shape, order)` (protocol 5, the buffer in band);
- joblib's `NumpyArrayWrapper`, whose bytes follow its BUILD in the stream (`pickle._JoblibArrays` says where).

The dtype is rebuilt from its pickled code and state as plain numbers (`[<>|=]` order, kinds b, i, u, f and records of
them): an array of any other kind, a shape or dtype the stream computes, data the file does not hold, or more bytes
than `max-member-bytes` (what must be materialised to be checked) is `Unread`, which callers report (fail closed).
Long data is read back from the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeGuard

import numpy as np

from wscan.scanners.pickle_native import FROMBUFFER_MAKERS, JoblibData, JoblibObjects
from wscan.scanners.pickle_ops import LongBytes, decode_text
from wscan.scanners.pickle_values import (
    _ARRAY_REBUILDERS,
    Const,
    Dict,
    Global,
    Obj,
    Seq,
    Sym,
    _const_int,
    _is_latin1,
    _is_none,
    const_ints,
)

EMPTY_BYTES = frozenset({"builtins.bytes", "__builtin__.bytes"})
ENCODE = frozenset({"_codecs.encode"})
MAX_CACHED_BYTES = 64 * 1024 * 1024  # values kept for arrays read again
MAX_DIMS = 32  # NumPy's own limit is 64; no model array comes near
MAX_FIELDS = 64  # fields of a record dtype read here
_CODE = re.compile(r"([<>|=]?)([biufc?V])(\d*)")
_ORDERS = frozenset("<>|=")

Read = Callable[[LongBytes], bytes | None]  # a long argument's bytes, read back from the file (None: unreadable)


class Unread(Exception):
    """The array's values cannot be known here: why, for the report."""


class ArrayReader:
    """Reads arrays for one stream: `Read` for long bytes, joblib's raw and object arrays by the wrapper's id."""

    def __init__(
        self, read: Read, joblib: dict[int, JoblibData], objects: dict[int, JoblibObjects], max_bytes: int
    ) -> None:
        self.read = read
        self.max_bytes = max_bytes  # one array's bytes read back to check (`max-member-bytes`); a larger one is unread
        self.joblib = joblib
        self.objects = objects
        self.cache: dict[int, tuple[Sym | None, np.ndarray]] = {}  # values read, by the array's id (kept alive)
        self.derived: dict[tuple[object, ...], object] = {}  # what checks computed from arrays, by their own keys
        self.cached_bytes = 0

    def object_shape(self, array: Sym | None) -> tuple[tuple[int, ...], Sym | None]:
        """An object array's shape, and what holds its items (the list its state gives, or joblib's nested pickle's
        result, itself an array)."""
        joblib = self.objects.get(id(array))
        if joblib is not None:
            return _shape(joblib.shape), joblib.made
        if not _called(array, _ARRAY_REBUILDERS) or not isinstance(array.state, Seq) or len(array.state.items) != 5:
            raise Unread("an object array the stream computes")
        return _shape(array.state.items[1]), array.state.items[4]

    def shape(self, array: Sym | None) -> tuple[int, ...]:
        """The shape the array has once loaded, without reading its data (NumPy refuses data of another size); a
        joblib object array's, as its wrapper gives it."""
        objects = self.objects.get(id(array))
        if objects is not None:
            return _shape(objects.shape)
        return _shape(_layout(array, self.joblib).shape)

    def backing(self, array: Sym | None) -> Sym | LongBytes:
        """What holds an array's bytes: its `_reconstruct` state's data, `_frombuffer`'s buffer, joblib's raw bytes."""
        return _layout(array, self.joblib).data

    def dtype_given(self, array: Sym | None) -> Sym | None:
        """The dtype an array is pickled with (its `_reconstruct` state's, `_frombuffer`'s, joblib's wrapper's), as
        the stream gives it."""
        return _layout(array, self.joblib).dtype

    def values(self, array: Sym | None) -> np.ndarray:
        """The array `array` is once the stream ends. An array is built before the model that holds it, or the
        model's load fails (scikit-learn refuses the empty array `_reconstruct` makes); building it again is
        reported on its own (WS-PKL-018)."""
        cached = self.cache.get(id(array))
        if cached is not None:
            return cached[1]
        layout = _layout(array, self.joblib)
        raw = self._read_back(layout.data) if isinstance(layout.data, LongBytes) else self.data(layout.data)
        found = self._shaped(raw, layout.dtype, layout.shape, layout.fortran)
        if self.cached_bytes + found.nbytes <= MAX_CACHED_BYTES:  # one array many models share is read once
            self.cache[id(array)] = (array, found)
            self.cached_bytes += found.nbytes
        return found

    def text(self, value: Sym | None) -> str:
        """A text value as loading leaves it: a constant, or a long one read back from the file."""
        if isinstance(value, Const) and isinstance(value.value, str):
            return value.value
        if isinstance(value, Const) and isinstance(value.value, LongBytes) and value.value.text:
            try:
                return decode_text(self._read_back(value.value), value.value)
            except UnicodeDecodeError:
                raise Unread("text the loader cannot decode") from None
        raise Unread("text the stream computes, or no text")

    def data(self, data: Sym) -> bytes:
        """Bytes as loading leaves them (an array's data, a Booster's model): a constant, long bytes in the file, or
        protocol 2's `_codecs.encode(text, 'latin1')`."""
        if isinstance(data, Const) and isinstance(data.value, bytes | bytearray):
            return bytes(data.value)
        if isinstance(data, Const) and isinstance(data.value, LongBytes) and not data.value.text:
            return self._read_back(data.value)
        if _called(data, EMPTY_BYTES) and isinstance(data.args, Seq) and not data.args.items and data.state is None:
            return b""  # protocol 2's empty bytes: bytes()
        if _called(data, ENCODE):
            args = data.args.items if isinstance(data.args, Seq) else []
            if len(args) == 2 and _is_latin1(args[1]) and isinstance(args[0], Const):
                text = args[0].value
                if isinstance(text, LongBytes) and text.text:
                    text = decode_text(self._read_back(text), text)
                if isinstance(text, str):
                    try:
                        return text.encode("latin-1")
                    except UnicodeError:
                        raise Unread("array data the loader cannot encode") from None
        raise Unread("array data the file does not hold as bytes")

    def _read_back(self, source: LongBytes) -> bytes:
        if source.length > self.max_bytes or source.start < 0:
            raise Unread(f"an array of {source.length:,} bytes, over max-member-bytes ({self.max_bytes:,})")
        raw = self.read(source)
        if raw is None or len(raw) != source.length:
            raise Unread("array data cut short")
        return raw

    def _shaped(self, raw: bytes, dtype: Sym | None, shape: Sym | None, fortran: bool) -> np.ndarray:
        kind = numpy_dtype(dtype)
        dims = _shape(shape)
        count = 1
        for dim in dims:
            count *= dim
        if count * kind.itemsize != len(raw):
            raise Unread(f"{len(raw):,} bytes of data for {count:,} items of {kind.itemsize} bytes")
        try:
            return np.frombuffer(raw, dtype=kind).reshape(dims, order="F" if fortran else "C")
        except ValueError as exc:  # a zero-sized item, say: NumPy's refusal is the loader's too
            raise Unread(f"an array NumPy refuses: {exc}"[:120]) from None


@dataclass(frozen=True, slots=True)
class _Layout:
    shape: Sym | None
    dtype: Sym | None
    fortran: bool
    data: Sym | LongBytes


def _layout(array: Sym | None, joblib: dict[int, JoblibData]) -> _Layout:
    """Where an array's shape, dtype, order and data are: its `_reconstruct` state, its `_frombuffer` arguments, or
    joblib's wrapper and the raw bytes after it."""
    if not isinstance(array, Obj):
        raise Unread(f"an array the stream gives as {type(array).__name__.lower()}")
    found = joblib.get(id(array))
    if found is not None:
        data = LongBytes(found.length, b"", start=found.start)
        return _Layout(found.shape, found.dtype, _fortran_order(found.order), data)
    func = array.func.dotted if isinstance(array.func, Global) else ""
    state = array.state
    if func in _ARRAY_REBUILDERS:
        items = state.items if isinstance(state, Seq) and state.type == "tuple" and not state.dropped else None
        if items is None or len(items) != 5 or _const_int(items[0]) != 1:
            raise Unread("an array state NumPy does not write")
        fortran = items[3].value if isinstance(items[3], Const) else None
        if not isinstance(fortran, bool | int):
            raise Unread("an array order the stream computes")
        return _Layout(items[1], items[2], bool(fortran), items[4])
    if func in FROMBUFFER_MAKERS and state is None:
        args = array.args.items if isinstance(array.args, Seq) and not array.args.dropped else []
        if len(args) != 4:
            raise Unread("a _frombuffer call NumPy does not write")
        return _Layout(args[2], args[1], _fortran_order(args[3]), args[0])
    raise Unread(f"an array made by {func or 'a computed call'}")


def _called(value: Sym | None, names: frozenset[str]) -> TypeGuard[Obj]:
    return isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted in names


def _fortran_order(order: Sym | None) -> bool:
    value = order.value if isinstance(order, Const) else None
    if value not in ("C", "F"):
        raise Unread("an array order the stream computes")
    return value == "F"


def const_shape(value: Sym | None) -> tuple[int, ...] | None:
    """A tuple of constant non-negative integers, as a state holds a shape."""
    numbers = const_ints(value) if value is not None else None
    return tuple(numbers) if numbers is not None and all(n >= 0 for n in numbers) else None


def _shape(shape: Sym | None) -> tuple[int, ...]:
    dims = const_shape(shape)
    if dims is None or len(dims) > MAX_DIMS:
        raise Unread("an array shape the stream computes")
    return dims


def dtype_code(dtype: Sym | None) -> tuple[Obj, object]:
    """A pickled `numpy.dtype(code, align, copy)`, and the code it is made from (None unless the stream gives a
    constant); Unread for a dtype made otherwise."""
    if not (isinstance(dtype, Obj) and isinstance(dtype.func, Global) and dtype.func.dotted in NUMPY_DTYPE):
        raise Unread("a dtype the stream computes")
    args = dtype.args.items if isinstance(dtype.args, Seq) else []
    return dtype, args[0].value if args and isinstance(args[0], Const) else None


def numpy_dtype(dtype: Sym | None, depth: int = 0) -> np.dtype:
    """The NumPy dtype a pickled `numpy.dtype(code, align, copy)` with its BUILD state is, for plain numbers and records
    of them: built from the parsed code, order, names and offsets, never from anything the file could make run."""
    dtype, code = dtype_code(dtype)
    match = _CODE.fullmatch(code) if isinstance(code, str) else None
    if match is None:
        raise Unread(f"a dtype of kind {str(code)[:20]!r}, not read here")
    order, kind, digits = match.groups()
    written = order  # the order the code gives: the dtype's until its state (if any) is given
    state = dtype.state
    names: Sym | None = None
    fields: Sym | None = None
    size = int(digits) if digits else 1
    if state is not None:
        items = state.items if isinstance(state, Seq) and not state.dropped else []
        if len(items) not in (8, 9) or _const_int(items[0]) not in (3, 4) or not _is_none(items[2]):
            raise Unread("a dtype state NumPy does not write")
        given = items[1].value if isinstance(items[1], Const) else None
        if given not in _ORDERS:
            raise Unread("a dtype byte order the stream computes")
        order, names, fields = str(given), items[3], items[4]
        if kind == "V":
            size = _const_int(items[5]) or 0
    try:
        if kind != "V":
            if not (names is None or _is_none(names)) or not (fields is None or _is_none(fields)):
                raise Unread("a number dtype with fields")
            found = np.dtype(f"{'=' if order in ('', '|') else order}{kind}{digits}")
        else:
            found = _record(names, fields, size, depth)
    except (TypeError, ValueError) as exc:
        raise Unread(f"a dtype NumPy refuses: {exc}"[:120]) from None
    if ">" in (written, order) and kind != "V" and found.itemsize > 1:
        # NumPy lets a dtype be given its state after an array used it, and a model's compiled __setstate__ (or
        # joblib, at its wrapper's BUILD) took the bytes in the order the dtype had then: a big-endian code or state
        # may have been read either way (reviews 85 and 86 flipped one each way). No little-endian writer pickles one.
        raise Unread("a big-endian dtype, which the loader may have read in another order")
    return found


NUMPY_DTYPE = frozenset({"numpy.dtype", "numpy.core.multiarray.dtype", "numpy._core.multiarray.dtype"})


def _record(names: Sym | None, fields: Sym | None, size: int, depth: int) -> np.dtype:
    """A record dtype from its state's names and fields (name -> (dtype, offset)), one level deep."""
    if depth or not isinstance(names, Seq) or not isinstance(fields, Dict) or len(names.items) > MAX_FIELDS:
        raise Unread("a record dtype not read here")
    by_name = {}
    for key, value in fields.items:
        if isinstance(key, Const) and isinstance(key.value, str):
            by_name[key.value] = value
    listed, formats, offsets = [], [], []
    for name in names.items:
        text = name.value if isinstance(name, Const) else None
        entry = by_name.get(text) if isinstance(text, str) else None
        parts = entry.items if isinstance(entry, Seq) and not entry.dropped else []
        offset = _const_int(parts[1]) if len(parts) == 2 else None
        if offset is None or offset < 0:
            raise Unread("a record dtype's fields the stream computes")
        listed.append(str(text))
        formats.append(numpy_dtype(parts[0], depth + 1))
        offsets.append(offset)
    return np.dtype({"names": listed, "formats": formats, "offsets": offsets, "itemsize": size})
