"""pyarrow arrays in a pickle, checked the way Arrow's own validation would check them.

`pyarrow.lib._restore_array` (how pandas' Arrow-backed columns and pyarrow arrays and tables pickle) rebuilds an array
from its pickled `(type, length, null_count, offset, buffers, children, dictionary)` with MakeArray and never validates
it (review 46): a string array whose offsets point past its data buffer made `pickle.load`, `pd.read_pickle` and
`joblib.load` read out of bounds (a segfault, or bytes of the process's memory in a string), and fewer buffers than
the type has are read past the end of the list. Each call's layout is checked here against the buffers the stream
gives it: their number, their sizes, the offsets of strings, binaries and lists, and a dictionary's indices (read back
from the file when they are longer than the pickle machine keeps), through lists, structs, maps and dictionaries,
each child against the type its parent declares. Each call is judged with its arguments as they were when it ran
(`frozen`). Shapes pyarrow never writes (computed lengths, types, buffers or arguments, a followed type spelled
otherwise, a call through another function, a buffer changed in place) and anything past a limit are invalid, so a
limit fails closed; types whose layout this module does not follow (views, unions, run-end encoded, extension types)
and buffers the loader could not decode are reported as unverified instead. Long buffers are read back at every
protocol (a protocol 0 line decoded as raw-unicode-escape).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wscan.scanners.pickle_ops import LongBytes, decode_text
from wscan.scanners.pickle_values import (
    CHANGED,
    Const,
    Dict,
    Global,
    Obj,
    OutOfBand,
    Seq,
    Sym,
    Unknown,
    _const,
    _is_latin1,
    _is_none,
)

RESTORE_ARRAY = "pyarrow.lib._restore_array"
SCALAR = "pyarrow.lib.scalar"  # how pyarrow pickles a scalar: scalar(value, type); a null one is made by the type
MAX_FILL_NODES = 1_000_000  # items of one scalar's value walked for nulls
MAX_ARRAYS = 1_000_000  # calls checked per stream (the opcode limit bounds them anyway); past it, flagged
MAX_ARROW_BYTES = 1024 * 1024 * 1024  # distinct bytes read back from the file per stream; past it, flagged
BYTEARRAY = frozenset({"builtins.bytearray", "__builtin__.bytearray"})
# Calls whose arguments pyarrow copies when they are made: their arguments are kept as they are then (`frozen`), so a
# list the stream grows afterwards (review 48 added a data buffer after the call) changes nothing here either.
ARROW_CALLS = frozenset({
    RESTORE_ARRAY, SCALAR, "pyarrow.lib.py_buffer", "pyarrow.lib.type_for_alias", "pyarrow.lib.field",
    "pyarrow.lib.list_", "pyarrow.lib.large_list", "pyarrow.lib.struct", "pyarrow.lib.map_", "pyarrow.lib.dictionary",
    "pyarrow.lib.timestamp", "pyarrow.lib.decimal128", "pyarrow.lib.decimal256", "pyarrow.lib.binary", "_codecs.encode",
    *BYTEARRAY,
})  # fmt: skip
INDIRECT = Const("called through another function")  # a call of _restore_array no pyarrow writes

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
# Type makers whose arguments `_type` follows, as pyarrow writes them; any other spelling of them is invalid.
FOLLOWED_MAKERS = frozenset({
    "pyarrow.lib.field", "pyarrow.lib.list_", "pyarrow.lib.large_list", "pyarrow.lib.struct", "pyarrow.lib.map_",
    "pyarrow.lib.dictionary", "pyarrow.lib.binary",
})  # fmt: skip
# The type id of an alias: the alias up to any `[unit]`, spelled as Arrow names the id.
ALIAS_IDS = {
    "boolean": "bool", "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16", "f2": "halffloat",
    "float16": "halffloat", "i4": "int32", "u4": "uint32", "f4": "float", "float32": "float", "i8": "int64",
    "u8": "uint64", "f8": "double", "float64": "double", "str": "string", "utf8": "string",
    "large_str": "large_string", "large_utf8": "large_string",
}  # fmt: skip
OFFSET_BYTES = {  # strings and binaries: offsets of this size into a data buffer
    **dict.fromkeys(("string", "str", "utf8", "binary"), 4),
    **dict.fromkeys(("large_string", "large_str", "large_utf8", "large_binary"), 8),
}

Read = Callable[[LongBytes], bytes | None]  # the bytes of a long argument, read back from the file (None: unreadable)
Event = tuple[str, int, str]  # (kind, offset, detail)


class Unverified(Exception):
    """The layout cannot be followed here (a type, a computed buffer): reported as unverified, not as invalid."""


class Invalid(Exception):
    """Arrow's validation refuses the array: MakeArray would build it anyway."""


def check_arrays(calls: list[tuple[int, Sym]], read: Read) -> list[Event]:
    """What each `_restore_array(data)` call (offset, arguments, as the stream makes it) is found to be: the invalid
    arrays (`pickle.arrow_invalid`), then those not checked (`pickle.arrow_unverified`)."""
    invalid: list[Event] = []
    unverified: list[Event] = []
    budget = _Budget(read)
    for index, (offset, args) in enumerate(calls):
        if index >= MAX_ARRAYS:  # a limit, so it fails closed: arrays after harmless ones are not left unchecked
            invalid.append(("pickle.arrow_invalid", offset, f"more than {MAX_ARRAYS:,} arrays, the rest not checked"))
            break
        try:
            if args is INDIRECT:
                raise Invalid("a call through another function (an allowlisted helper), which pyarrow never writes")
            data = args.items[0] if isinstance(args, Seq) and len(args.items) == 1 and not args.dropped else None
            if data is None:  # `_restore_array(*tuple([state]))` (review 51): pyarrow writes a tuple of one
                raise Invalid("arguments the stream computes, which pyarrow never writes")
            _check(data, budget, 0)
        except Invalid as exc:
            invalid.append(("pickle.arrow_invalid", offset, str(exc)))
        except Unverified as exc:
            unverified.append(("pickle.arrow_unverified", offset, str(exc)))
    return invalid + unverified


@dataclass(frozen=True)
class ArrowType:
    """A type's physical layout, which is all bounds depend on: 'null'; 'fixed' (size: bits); 'binary' and 'list'
    (size: bytes per offset); 'fixed_list' (size: items per list); 'struct'; 'dictionary' (children: indices,
    values). `ident` is Arrow's type id, which it compares a child's type by and aborts the process on a mismatch
    (review 54: a list of decimal256 over a fixed-size binary child of the same width). `alias` names an integer
    index type; it plays no part in comparing types."""

    kind: str
    size: int = 0
    children: tuple[ArrowType, ...] = ()
    ident: str = ""
    alias: str | None = field(default=None, compare=False)


INDEX_TYPES = {  # dictionary index aliases and how to read them
    **dict.fromkeys(("i1", "int8"), "<i1"), **dict.fromkeys(("i2", "int16"), "<i2"),
    **dict.fromkeys(("i4", "int32"), "<i4"), **dict.fromkeys(("i8", "int64"), "<i8"),
    **dict.fromkeys(("u1", "uint8"), "<u1"), **dict.fromkeys(("u2", "uint16"), "<u2"),
    **dict.fromkeys(("u4", "uint32"), "<u4"), **dict.fromkeys(("u8", "uint64"), "<u8"),
}  # fmt: skip
MAX_DEPTH = 32  # nested types followed
MAX_FROZEN_DEPTH = 4 * MAX_DEPTH + 8  # containers copied: each array level nests its children list and data tuple


def _check(data: Sym, budget: _Budget, depth: int, declared: ArrowType | None = None, entries: bool = False) -> int:
    """Check one array's data (and its children and dictionary) against its type; return its length. `entries`: the
    child of a map, which (and whose keys) may hold no null: Arrow aborts the process on one (review 60)."""
    if depth > MAX_DEPTH:  # a limit, so it fails closed
        raise Invalid(f"arrays nested deeper than {MAX_DEPTH}, not checked")
    if not isinstance(data, Seq) or data.dropped or len(data.items) != 7:
        raise Invalid("array data the stream computes or gives otherwise than pyarrow writes")
    dtype, length_sym, nulls_sym, offset_sym, buffers_sym, children_sym, dictionary = data.items
    length, nulls, offset = _number(length_sym), _number(nulls_sym), _number(offset_sym)
    if length is None or nulls is None or offset is None:
        raise Invalid("a length, null count or offset the stream computes, which pyarrow never writes")
    if length < 0 or offset < 0 or length + offset >= 2**63 or not -1 <= nulls <= length:
        raise Invalid(f"length {length}, offset {offset} and null count {nulls} that Arrow refuses")
    if not isinstance(buffers_sym, Seq) or buffers_sym.dropped:
        raise Invalid("buffers the stream computes, which pyarrow never writes")
    if not isinstance(children_sym, Seq) or children_sym.dropped:
        raise Invalid("children the stream computes, which pyarrow never writes")
    kind = _type(dtype, 0)
    if declared is not None and kind != declared:
        raise Invalid("a child or dictionary whose type differs from the one its parent's type declares")
    expected = {"null": 1, "binary": 3, "fixed": 2, "list": 2, "dictionary": 2}.get(kind.kind, 1)
    children = children_sym.items
    wanted = 0 if kind.kind in ("null", "fixed", "binary", "dictionary") else len(kind.children)
    if len(buffers_sym.items) != expected or len(children) != wanted:
        raise Invalid(f"{len(buffers_sym.items)} buffers and {len(children)} children for a {kind.kind} array, which"
                      f" has {expected} and {wanted} (read past the list)")  # fmt: skip
    if (kind.kind == "dictionary") == _is_none(dictionary):
        raise Invalid(f"a dictionary {'missing from' if _is_none(dictionary) else 'on'} a {kind.kind} array")
    if kind.kind == "null":
        return length
    end = offset + length
    # Only offsets, indices and a dictionary array's bitmap are read; the other buffers are only measured, so data
    # past what the machine keeps is not read back (nor counted against MAX_ARROW_BYTES).
    read = {0} if kind.kind == "dictionary" or entries else set()
    read |= {1} if kind.kind in ("binary", "list", "dictionary") else set()
    buffers = [_buffer(item, budget, index in read) for index, item in enumerate(buffers_sym.items)]
    validity = buffers[0]
    if validity is None and nulls > 0:
        raise Invalid(f"{nulls} nulls and no validity bitmap")
    if validity is not None and len(validity) < -(-end // 8):
        raise Invalid(f"a validity bitmap of {len(validity)} bytes for {end:,} items")
    if entries and (nulls > 0 or (nulls < 0 and validity is not None and _has_null(_whole(validity), offset, end))):
        raise Invalid("a map whose entries or keys hold a null, which Arrow aborts the process on")
    if kind.kind in ("fixed", "dictionary"):
        bits = kind.size if kind.kind == "fixed" else kind.children[0].size
        _sized(buffers[1], -(-end * bits // 8), end)
    if kind.kind == "dictionary":
        words = _check(dictionary, budget, depth + 1, kind.children[1])
        # a null count of 0 drops the bitmap (Arrow's AdjustNonNullable): every index is read then (review 57)
        mask = None if validity is None or nulls == 0 else _whole(validity)
        _check_indices(_whole(buffers[1]), mask, kind.children[0], offset, end, words)
    elif kind.kind in ("binary", "list") and (length or offset or buffers[1] is not None):
        # An empty array too: Arrow reads offsets[offset] (review 60's empty list at offset 2^40 segfaulted on use).
        if buffers[1] is None or len(buffers[1]) < (end + 1) * kind.size:
            shown = 0 if buffers[1] is None else len(buffers[1])
            raise Invalid(f"an offsets buffer of {shown:,} bytes for {length:,} items from item {offset:,}")
        if kind.kind == "binary":
            limit, what = (0 if buffers[2] is None else len(buffers[2])), "bytes in the data buffer"
        else:
            limit = _check(children[0], budget, depth + 1, kind.children[0], entries=kind.ident == "map")
            what = "items in the child array"
        _check_offsets(_whole(buffers[1]), kind.size, offset, end, limit, what)
    elif kind.kind in ("list", "binary"):  # empty, at offset 0, without offsets: its children are checked all the same
        for child, child_type in zip(children, kind.children, strict=True):
            _check(child, budget, depth + 1, child_type, entries=kind.ident == "map")
    elif kind.kind in ("fixed_list", "struct"):
        per_item = kind.size if kind.kind == "fixed_list" else 1
        for index, (child, child_type) in enumerate(zip(children, kind.children, strict=True)):
            items = _check(child, budget, depth + 1, child_type, entries=entries and index == 0)  # a map's keys
            if items < end * per_item:
                raise Invalid(f"a child of {items:,} items under a {kind.kind} of {end:,} items")
    return length


def null_scalar_bytes(args: Sym) -> int:
    """The bytes pyarrow fills for the nulls of `scalar(value, type)`, what it pickles a scalar as: each null, the
    value itself or one inside it (review 65: `scalar([None] * 8, list_(list_(int64, 2^20)))`), is an array item of
    its type whose fixed-size lists and binaries are allocated in full (review 60: list_(int64, 2^26) took 0.5 GiB
    per call from 9 bytes of pickle). Each null is counted at the largest fill any part of the type makes; 0 for a
    type wscan does not follow."""
    items = args.items if isinstance(args, Seq) and not args.dropped else []
    if len(items) != 2:
        return 0
    try:
        worst = _worst_fill(_type(items[1], 0))
    except (Invalid, Unverified):
        return 0
    return worst * _nulls(items[0])


def _worst_fill(kind: ArrowType) -> int:
    """The most one null anywhere in a value of this type fills: its own item, or one of a child's."""
    return max([_footprint(kind), *(_worst_fill(child) for child in kind.children)])


def _nulls(value: Sym) -> int:
    """How many Nones a scalar's value holds, in its lists, tuples and dicts (each read once however the memo shares
    it: a shared list's Nones are counted where each reference is, up to MAX_FILL_NODES containers)."""
    count, stack, seen = 0, [value], 0
    while stack and seen < MAX_FILL_NODES:
        item = stack.pop()
        seen += 1
        if _is_none(item):
            count += 1
        elif isinstance(item, Seq):
            stack.extend(item.items)
        elif isinstance(item, Dict):
            stack.extend(part for _, part in item.items)
    return count + len(stack)  # past the limit, whatever is left counts as null (fails closed)


def _footprint(kind: ArrowType) -> int:
    """The bytes one item of a type holds in its buffers, at least one (its validity bit, rounded up: review 63 filled
    lists of empty structs): a fixed-size list's items in full, an offset or an index for the rest."""
    if kind.kind == "fixed":
        return max(1, -(-kind.size // 8))
    if kind.kind == "fixed_list":
        return max(1, kind.size * _footprint(kind.children[0]))
    if kind.kind == "struct":
        return max(1, sum(_footprint(child) for child in kind.children))
    return 8


def _number(value: Sym) -> int | None:
    """An integer constant as pyarrow's int64 arguments take it: a bool is 0 or 1 (review 49 gave a length as True)."""
    number = _const(value)
    return int(number) if isinstance(number, int) else None


def _sized(buffer: bytes | Measured | None, needed: int, end: int) -> None:
    if (buffer is None and needed) or (buffer is not None and len(buffer) < needed):
        shown = 0 if buffer is None else len(buffer)
        raise Invalid(f"a data buffer of {shown:,} bytes for {end:,} items (needs {needed:,})")


def _check_offsets(offsets: bytes, size: int, first: int, end: int, limit: int, what: str) -> None:
    """Offsets first..end of a string, binary or list array: from 0 up, never down, within what they index."""
    import numpy as np  # a dependency of gguf, onnx and h5py; loaded only for files that hold Arrow arrays

    values = np.frombuffer(offsets, dtype="<i4" if size == 4 else "<i8", count=end + 1)[first:]
    low, high = int(values[0]), int(values[-1])
    if low < 0 or bool((np.diff(values) < 0).any()):
        raise Invalid("offsets that go below zero or backwards")
    if high > limit:
        raise Invalid(f"offsets up to {high:,} over {limit:,} {what} (an out-of-bounds read)")


def _valid(validity: bytes, first: int, end: int) -> Any:
    """Items first..end of a validity bitmap, as booleans (a NumPy array): True where the item is not null."""
    import numpy as np

    return np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[first:end].astype(bool)


def _has_null(validity: bytes, first: int, end: int) -> bool:
    bits = _valid(validity, first, end)
    return bool(bits.size) and not bool(bits.all())


def _check_indices(indices: bytes, validity: bytes | None, index: ArrowType, first: int, end: int, words: int) -> None:
    """A dictionary array's indices, where not null: each names an entry of the dictionary."""
    import numpy as np

    if index.alias not in INDEX_TYPES:
        raise Unverified("dictionary indices of a type wscan does not read")
    values = np.frombuffer(indices, dtype=INDEX_TYPES[index.alias], count=end)[first:]
    if validity is not None:
        values = values[_valid(validity, first, end)]
    if values.size and (int(values.min()) < 0 or int(values.max()) >= words):
        raise Invalid(f"dictionary indices from {int(values.min()):,} to {int(values.max()):,} into {words:,} entries"
                      " (an out-of-bounds read)")  # fmt: skip


def _type(dtype: Sym, depth: int) -> ArrowType:
    """The layout of a pickled pyarrow type (or field), as pyarrow pickles it: its maker and arguments."""
    if depth > MAX_DEPTH:  # a limit, so it fails closed
        raise Invalid(f"types nested deeper than {MAX_DEPTH}, not checked")
    if not (isinstance(dtype, Obj) and isinstance(dtype.func, Global)) or dtype.instance:
        raise Invalid("an Arrow type the stream computes, which pyarrow never writes")
    maker = dtype.func.dotted
    args = dtype.args.items if isinstance(dtype.args, Seq) and not dtype.args.dropped else None
    if maker in MAKER_BITS:
        return ArrowType("fixed", MAKER_BITS[maker], ident=maker.rsplit(".", 1)[1])
    if maker == "pyarrow.lib.type_for_alias" and args is not None and len(args) == 1:
        alias = _const(args[0])
        if isinstance(alias, str):
            alias = alias.lower()
            if alias == "null":
                return ArrowType("null", ident="null")
            if alias in FIXED_BITS:
                return ArrowType("fixed", FIXED_BITS[alias], ident=_alias_id(alias), alias=alias)
            if alias in OFFSET_BYTES:
                return ArrowType("binary", OFFSET_BYTES[alias], ident=_alias_id(alias))
            # Any other alias (string_view, binary_view) is a type whose maker stays off the allowlist: named through
            # the allowed type_for_alias, a view pointing 2 GB past its buffer crashed pandas at repr (helper 232).
            raise Invalid(f"an Arrow type named {alias!r}, whose layout wscan does not follow (its own maker is not"
                          " allowed)")  # fmt: skip
    if maker == "pyarrow.lib.binary" and args is not None and len(args) == 1:
        width = _number(args[0])  # fixed-size binary (`pa.binary(4)`); a variable-size one pickles by its alias
        if width is not None and 0 <= width < 2**31:
            return ArrowType("fixed", 8 * width, ident="fixed_size_binary")
    if maker == "pyarrow.lib.field" and args is not None and len(args) >= 2:
        return _type(args[1], depth + 1)
    if maker in ("pyarrow.lib.list_", "pyarrow.lib.large_list") and args is not None and 1 <= len(args) <= 2:
        value = _type(args[0], depth + 1)
        size = _number(args[1]) if len(args) == 2 else -1
        if size is not None and maker == "pyarrow.lib.list_" and size >= 0:
            return ArrowType("fixed_list", size, (value,), "fixed_size_list")
        if size == -1:
            if maker == "pyarrow.lib.list_":
                return ArrowType("list", 4, (value,), "list")
            return ArrowType("list", 8, (value,), "large_list")
    if maker == "pyarrow.lib.struct" and args is not None and len(args) == 1 and isinstance(args[0], Seq) and (
        not args[0].dropped
    ):
        return ArrowType("struct", 0, tuple(_type(item, depth + 1) for item in args[0].items), "struct")
    if maker == "pyarrow.lib.map_" and args is not None and 2 <= len(args) <= 3:
        entries = ArrowType("struct", 0, (_type(args[0], depth + 1), _type(args[1], depth + 1)), "struct")
        return ArrowType("list", 4, (entries,), "map")
    if maker == "pyarrow.lib.dictionary" and args is not None and 2 <= len(args) <= 3:
        index = _type(args[0], depth + 1)
        if index.alias not in INDEX_TYPES:
            raise Unverified("dictionary indices of a type wscan does not read")
        return ArrowType("dictionary", 0, (index, _type(args[1], depth + 1)), "dictionary")
    if maker in FOLLOWED_MAKERS or (maker == "pyarrow.lib.type_for_alias" and not (args and isinstance(
        _const(args[0]), str
    ))):
        # A type wscan follows, spelled otherwise than pyarrow writes it (a struct of a dict, review 51): its children
        # would go unchecked.
        raise Invalid(f"an Arrow type made by {maker} from arguments pyarrow never writes")
    raise Unverified(f"an Arrow type made by {maker}, whose layout wscan does not follow")


def _alias_id(alias: str) -> str:
    base = alias.split("[", 1)[0]
    return ALIAS_IDS.get(base, base)


class Measured:
    """A buffer's size, when its bytes need not be read."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length


def _whole(buffer: bytes | Measured | None) -> bytes:
    return buffer if isinstance(buffer, bytes) else b""  # a measured one is never passed here: see `read` in _check


def _buffer(value: Sym, budget: _Budget, whole: bool = True) -> bytes | Measured | None:
    """A buffer's bytes: None for an absent one; py_buffer(bytes), py_buffer(bytearray(bytes)) or, at protocol 2,
    py_buffer(bytearray(_codecs.encode(text, 'latin1'))), as pyarrow writes them."""
    if _is_none(value):
        return None
    if not (isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted == "pyarrow.lib.py_buffer"):
        raise Invalid("a buffer the stream makes otherwise than pyarrow writes")
    inner = _single(value)
    if isinstance(inner, Obj) and isinstance(inner.func, Global) and inner.func.dotted in BYTEARRAY:
        if inner.instance:  # NEWOBJ runs bytearray.__new__ only, which ignores what it is given: empty (review 49)
            raise Invalid("a buffer made by bytearray.__new__, empty whatever it is given; pyarrow never writes it")
        if inner.state is not None:  # `_mutation`: items set or appended on the bytearray, as no writer does
            raise Invalid("a buffer the stream changes in place, which pyarrow never writes")
        if isinstance(inner.args, Seq) and not inner.args.items and not inner.args.dropped:
            return b""  # an empty buffer, as protocol 2 writes it: bytearray()
        inner = _single(inner)
    if isinstance(inner, OutOfBand):  # review 52: real arrays pickled with buffer_callback; plain loaders refuse them
        raise Unverified("a buffer passed out of band, whose bytes the file does not hold")
    if isinstance(inner, Const) and inner.value is CHANGED:
        raise Invalid("a buffer the stream changes in place, which pyarrow never writes")
    if isinstance(inner, Const) and isinstance(inner.value, bytes | bytearray):
        return bytes(inner.value)
    if isinstance(inner, Const) and isinstance(inner.value, LongBytes) and not inner.value.text:
        return budget.read(inner.value) if whole else Measured(inner.value.length)
    if isinstance(inner, Obj) and isinstance(inner.func, Global) and inner.func.dotted == "_codecs.encode":
        args = inner.args.items if isinstance(inner.args, Seq) and not inner.args.dropped else []
        if len(args) == 2 and _is_latin1(args[1]) and isinstance(args[0], Const):
            text = args[0].value
            if isinstance(text, LongBytes) and text.text:
                try:
                    text = decode_text(budget.read(text), text)
                except UnicodeDecodeError:
                    raise Unverified("a buffer the loader cannot decode (it fails there)") from None
            if isinstance(text, str):
                try:
                    return text.encode("latin-1")
                except UnicodeEncodeError:
                    raise Unverified("a buffer the loader cannot encode (it fails there)") from None
    raise Invalid("a buffer the stream computes (from a NumPy array, say), which pyarrow never writes")  # review 51


def _single(value: Obj) -> Sym | None:
    args = value.args
    return args.items[0] if isinstance(args, Seq) and len(args.items) == 1 and not args.dropped else None


class _Budget:
    """Long buffers read back from the file, each once however often the memo hands it out, up to MAX_ARROW_BYTES."""

    def __init__(self, read: Read) -> None:
        self._read = read
        self.left = MAX_ARROW_BYTES
        self.cache: dict[tuple[int, int], bytes] = {}

    def read(self, source: LongBytes) -> bytes:
        key = (source.start, source.length)
        if key in self.cache:
            return self.cache[key]
        if source.start < 0:
            raise Unverified("a buffer that could not be read back")
        if source.length > self.left:  # a limit, so it fails closed
            raise Invalid(f"buffers past the {MAX_ARROW_BYTES // 2**20:,} MiB wscan reads back per stream, not checked")
        self.left -= source.length
        data = self._read(source)
        if data is None or len(data) != source.length:
            raise Unverified("a buffer that could not be read back")
        self.cache[key] = data
        return data


def frozen(args: Sym, depth: int = 0) -> Sym:
    """The arguments of a call as they are when it is made: lists and tuples copied (items a later opcode appends or
    sets are not seen), objects kept (each pyarrow object froze its own arguments when it was made)."""
    if not isinstance(args, Seq | Dict):
        return args
    if depth > MAX_FROZEN_DEPTH:
        return Unknown()  # deeper than any array the check follows (it fails closed there)
    if isinstance(args, Dict):
        return Dict([(key, frozen(value, depth + 1)) for key, value in args.items], dropped=args.dropped)
    return Seq(args.type, [frozen(item, depth + 1) for item in args.items], dropped=args.dropped)
