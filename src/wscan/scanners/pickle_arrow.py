"""pyarrow arrays in a pickle, checked the way Arrow's own validation would check them.

`pyarrow.lib._restore_array` (how pandas' Arrow-backed columns and pyarrow arrays and tables pickle) rebuilds an array
from its pickled `(type, length, null_count, offset, buffers, children, dictionary)` with MakeArray and never validates
it (review 46): a string array whose offsets point past its data buffer made `pickle.load`, `pd.read_pickle` and
`joblib.load` read out of bounds (a segfault, or bytes of the process's memory in a string), and fewer buffers than
the type has are read past the end of the list. Each call's layout is checked here against the buffers the stream
gives it: their number, their sizes, and for strings and binaries the offsets themselves (read back from the file
when they are longer than the pickle machine keeps). Types whose layout this module does not follow (lists,
structs, dictionaries, views, unions) and buffers the stream computes are reported as unverified instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from wscan.scanners.pickle_ops import LongBytes
from wscan.scanners.pickle_values import Const, Global, Obj, Seq, Sym, _const, _const_int, _is_latin1, _is_none

RESTORE_ARRAY = "pyarrow.lib._restore_array"
MAX_ARRAYS = 10_000  # calls checked per stream; more are unverified
MAX_ARROW_BYTES = 256 * 1024 * 1024  # bytes read back from the file per stream for offsets; past it, unverified
BYTEARRAY = frozenset({"builtins.bytearray", "__builtin__.bytearray"})

# pyarrow's type aliases (`type_for_alias`, which lowers the name first) by width in bits; timestamps and decimals
# pickle through their own makers.
FIXED_BITS = {
    **dict.fromkeys(("bool", "boolean"), 1),
    **dict.fromkeys(("i1", "int8", "u1", "uint8"), 8),
    **dict.fromkeys(("i2", "int16", "u2", "uint16", "f2", "halffloat", "float16"), 16),
    **dict.fromkeys(("i4", "int32", "u4", "uint32", "f4", "float", "float32", "date32", "date32[day]",
                     "time32[s]", "time32[ms]"), 32),
    **dict.fromkeys(("i8", "int64", "u8", "uint64", "f8", "double", "float64", "date64", "date64[ms]",
                     "time64[us]", "time64[ns]", "timestamp[s]", "timestamp[ms]", "timestamp[us]", "timestamp[ns]",
                     "duration[s]", "duration[ms]", "duration[us]", "duration[ns]"), 64),
    "month_day_nano_interval": 128,
}  # fmt: skip
MAKER_BITS = {"pyarrow.lib.timestamp": 64, "pyarrow.lib.decimal128": 128, "pyarrow.lib.decimal256": 256}
OFFSET_BYTES = {  # strings and binaries: offsets of this size into a data buffer
    **dict.fromkeys(("string", "str", "utf8", "binary"), 4),
    **dict.fromkeys(("large_string", "large_str", "large_utf8", "large_binary"), 8),
}

Read = Callable[[LongBytes], bytes | None]  # the bytes of a long argument, read back from the file (None: too many)


class Unverified(Exception):
    """The layout cannot be followed here (a type, a computed buffer): reported as unverified, not as invalid."""


class Invalid(Exception):
    """Arrow's validation refuses the array: MakeArray would build it anyway."""


@dataclass
class ArrowCheck:
    """The verdict on one stream's arrays: (offset, why) for the invalid and the unverified ones."""

    invalid: list[tuple[int, str]]
    unverified: list[tuple[int, str]]


def check_arrays(calls: list[tuple[int, Sym]], read: Read) -> ArrowCheck:
    """Each `_restore_array(data)` call, as the stream makes it (offset, arguments)."""
    result = ArrowCheck([], [])
    budget = [MAX_ARROW_BYTES]
    for index, (offset, args) in enumerate(calls):
        if index >= MAX_ARRAYS:
            result.unverified.append((offset, f"more than {MAX_ARRAYS:,} arrays in one stream"))
            break
        try:
            data = args.items[0] if isinstance(args, Seq) and len(args.items) == 1 and not args.dropped else None
            if data is None:
                raise Unverified("arguments the stream computes")
            _check(data, read, budget, 0)
        except Invalid as exc:
            result.invalid.append((offset, str(exc)))
        except Unverified as exc:
            result.unverified.append((offset, str(exc)))
    return result


def _check(data: Sym, read: Read, budget: list[int], depth: int) -> None:
    if not isinstance(data, Seq) or data.dropped or len(data.items) != 7:
        raise Unverified("array data the stream computes or gives otherwise than pyarrow writes")
    dtype, length_sym, nulls_sym, offset_sym, buffers_sym, children, dictionary = data.items
    length, nulls, offset = _const_int(length_sym), _const_int(nulls_sym), _const_int(offset_sym)
    if length is None or nulls is None or offset is None:
        raise Unverified("a length, null count or offset the stream computes")
    if length < 0 or offset < 0 or length + offset >= 2**63 or not -1 <= nulls <= length:
        raise Invalid(f"length {length}, offset {offset} and null count {nulls} that Arrow refuses")
    if not isinstance(buffers_sym, Seq) or buffers_sym.dropped:
        raise Unverified("buffers the stream computes")
    kind, size = _layout(dtype)
    if not (isinstance(children, Seq) and not children.items and not children.dropped and _is_none(dictionary)):
        raise Invalid(f"children or a dictionary on a {kind} array, which has none")
    expected = 1 if kind == "null" else 3 if kind == "binary" else 2
    buffers = buffers_sym.items
    if len(buffers) != expected:
        raise Invalid(f"{len(buffers)} buffers for a {kind} array, which has {expected} (read past the list)")
    if kind == "null":
        return
    end = offset + length
    validity = _buffer(buffers[0], read, budget)
    if validity is None and nulls > 0:
        raise Invalid(f"{nulls} nulls and no validity bitmap")
    if validity is not None and len(validity) < -(-end // 8):
        raise Invalid(f"a validity bitmap of {len(validity)} bytes for {end:,} items")
    if kind == "fixed":
        values = _buffer(buffers[1], read, budget)
        needed = -(-end * size // 8)
        if (values is None and end) or (values is not None and len(values) < needed):
            shown = 0 if values is None else len(values)
            raise Invalid(f"a data buffer of {shown:,} bytes for {end:,} items of {size} bits (needs {needed:,})")
        return
    offsets, values = _buffer(buffers[1], read, budget), _buffer(buffers[2], read, budget)
    if not length:
        return
    if offsets is None or len(offsets) < (end + 1) * size:
        shown = 0 if offsets is None else len(offsets)
        raise Invalid(f"an offsets buffer of {shown:,} bytes for {end:,} items")
    _check_offsets(offsets, size, offset, end, 0 if values is None else len(values))


def _check_offsets(offsets: bytes, size: int, first: int, end: int, data: int) -> None:
    """Offsets first..end of a string or binary array: from 0 up, never down, within the data buffer."""
    import numpy as np  # a dependency of gguf, onnx and h5py; loaded only for files that hold Arrow strings

    values = np.frombuffer(offsets, dtype="<i4" if size == 4 else "<i8", count=end + 1)[first:]
    low, high = int(values[0]), int(values[-1])
    if low < 0 or bool((np.diff(values) < 0).any()):
        raise Invalid("offsets that go below zero or backwards")
    if high > data:
        raise Invalid(f"offsets up to {high:,} into a data buffer of {data:,} bytes (an out-of-bounds read)")


def _layout(dtype: Sym) -> tuple[str, int]:
    """('fixed', bits), ('binary', offset size) or ('null', 0) for the types followed here."""
    if isinstance(dtype, Obj) and isinstance(dtype.func, Global):
        maker = dtype.func.dotted
        if maker in MAKER_BITS:
            return "fixed", MAKER_BITS[maker]
        if maker == "pyarrow.lib.type_for_alias" and isinstance(dtype.args, Seq) and len(dtype.args.items) == 1:
            alias = _const(dtype.args.items[0])
            if isinstance(alias, str):
                alias = alias.lower()
                if alias == "null":
                    return "null", 0
                if alias in FIXED_BITS:
                    return "fixed", FIXED_BITS[alias]
                if alias in OFFSET_BYTES:
                    return "binary", OFFSET_BYTES[alias]
        raise Unverified(f"an Arrow type made by {maker}, whose layout wscan does not follow")
    raise Unverified("an Arrow type the stream computes")


def _buffer(value: Sym, read: Read, budget: list[int]) -> bytes | None:
    """A buffer's bytes: None for an absent one; py_buffer(bytes), py_buffer(bytearray(bytes)) or, at protocol 2,
    py_buffer(bytearray(_codecs.encode(text, 'latin1'))), as pyarrow writes them."""
    if _is_none(value):
        return None
    if not (isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted == "pyarrow.lib.py_buffer"):
        raise Unverified("a buffer the stream makes otherwise than pyarrow writes")
    inner = _single(value)
    if isinstance(inner, Obj) and isinstance(inner.func, Global) and inner.func.dotted in BYTEARRAY:
        inner = _single(inner)
    if isinstance(inner, Const) and isinstance(inner.value, bytes | bytearray):
        return bytes(inner.value)
    if isinstance(inner, Const) and isinstance(inner.value, LongBytes) and not inner.value.text:
        return _read(inner.value, read, budget)
    if isinstance(inner, Obj) and isinstance(inner.func, Global) and inner.func.dotted == "_codecs.encode":
        args = inner.args.items if isinstance(inner.args, Seq) and not inner.args.dropped else []
        if len(args) == 2 and _is_latin1(args[1]) and isinstance(args[0], Const):
            text = args[0].value
            if isinstance(text, LongBytes) and text.text:
                raw = _read(text, read, budget)
                text = raw.decode("utf-8", "surrogatepass")
            if isinstance(text, str):
                try:
                    return text.encode("latin-1")
                except UnicodeEncodeError:
                    raise Unverified("a buffer the loader cannot encode (it fails there)") from None
    raise Unverified("a buffer the stream computes")


def _single(value: Obj) -> Sym | None:
    args = value.args
    return args.items[0] if isinstance(args, Seq) and len(args.items) == 1 and not args.dropped else None


def _read(source: LongBytes, read: Read, budget: list[int]) -> bytes:
    if source.start < 0 or source.length > budget[0]:
        raise Unverified(f"buffers past the {MAX_ARROW_BYTES // 2**20} MiB wscan reads back per stream")
    budget[0] -= source.length
    data = read(source)
    if data is None or len(data) != source.length:
        raise Unverified("a buffer that could not be read back")
    return data


def arrow_events(check: ArrowCheck) -> Iterator[tuple[str, int, str]]:
    """(kind, offset, detail) of each finding."""
    for offset, detail in check.invalid:
        yield "pickle.arrow_invalid", offset, detail
    for offset, detail in check.unverified:
        yield "pickle.arrow_unverified", offset, detail

