"""Calls of allowed callables whose arguments make the loader allocate or iterate far more than the file holds.

`bytearray(6 * 10**9)` is 60 bytes of pickle and 6 GB of zeroed memory in every loader, torch's weights_only one
included; `list(ipaddress.IPv6Network("::/0"))` iterates 2^128 addresses and `list(range(10**12))` makes a trillion
integers (review 51); copyreg's helpers make the same calls, numpy.ndarray called with a shape zero-fills it or
views one byte 10**12 times, and Fraction('1e999999999') computes 10**999999999 (review 52). No writer pickles these
shapes: a bytearray is pickled from its bytes, a range or a network as itself, never handed to another call, an
array by _reconstruct and its state, a number as its plain text. So a number given to bytearray or bytes, an
iterable of more than MAX_ITERATED items given to any call, an array class called with a larger shape and an exact
number with an exponent past MAX_EXPONENT are reported (`pickle.amplified_call`).
"""

from __future__ import annotations

import math
import re

from wscan.scanners.pickle_jax import RECONSTRUCT_ARRAY
from wscan.scanners.pickle_ops import LongBytes
from wscan.scanners.pickle_values import (
    _ARRAY_REBUILDERS,
    Const,
    Global,
    Obj,
    Seq,
    Sym,
    _const_int,
    _is_latin1,
    const_ints,
    describe,
    restored_class,
)

ZERO_FILLED = frozenset({"builtins.bytearray", "builtins.bytes"})
BYTES_MAKERS = ZERO_FILLED | {"__builtin__.bytearray", "__builtin__.bytes"}  # the same, by Python 2's name too
# What these take besides bytes, as pickle writes them: protocol 2 spells bytes as _codecs.encode(text, "latin1").
ENCODED = "_codecs.encode"
NETWORKS = frozenset({"ipaddress.IPv4Network", "ipaddress.IPv6Network"})
RANGE = "builtins.range"
MAX_ITERATED = 1_000_000  # items one argument may make a call iterate


def amplified_call(func: Global, args: Sym) -> str | None:
    """Why calling `func` with `args` makes far more than the stream holds, or None."""
    if not isinstance(args, Seq) or not args.items:
        return None
    func, args = _through_helpers(func, args)
    if not args.items:
        return None
    first = args.items[0]
    shape_at = ARRAY_MAKERS.get(func.dotted)
    if shape_at is not None and shape_at < len(args.items):
        elements = _elements(args.items[shape_at])
        if elements is None or elements > MAX_ITERATED:
            amount = "a shape wscan cannot read" if elements is None else _amount(elements)
            return f"an array of {amount} made from a shape alone, which no writer pickles"
    exponent = _exact_exponent(func.dotted, first)
    if abs(exponent) > MAX_EXPONENT:
        return f"a number with an exponent of {exponent:,}, whose exact value is computed digit by digit"
    if func.dotted in ZERO_FILLED:
        size = _const_int(first)
        if size is not None:
            return f"{func.name}({size:,}): zeroed bytes from a number, which no writer pickles"
        if isinstance(first, Obj) and not (isinstance(first.func, Global) and first.func.dotted == ENCODED):
            return f"{func.name} of what {describe(first)[:60]} returns, which no writer pickles"
    for item in args.items:
        count = _items(item)
        if count is not None and count > MAX_ITERATED:
            return f"{describe(item)[:60]} handed to it, which iterates {_amount(count)}"
    return None


# Makers that iterate what they are given into items of their own: a pointer (8 bytes) per item of bytes or text.
ITERATING_MAKERS = frozenset({
    "builtins.list", "builtins.tuple", "builtins.set", "builtins.frozenset", "__builtin__.list", "__builtin__.tuple",
    "__builtin__.set", "__builtin__.frozenset", "collections.deque",
})  # fmt: skip


def iterated_bytes(func: Global, args: Sym) -> int:
    """The memory a call makes by iterating its arguments, 8 bytes an item: a range or network handed to any call,
    bytes or text handed to list, tuple or set. One memoised range listed 100 times took 3.75 GiB from 656 bytes
    (review 66): each call stays under MAX_ITERATED, so these count towards the file's array data (`Tally`)."""
    if not isinstance(args, Seq) or args.dropped:
        return 0
    total = 0
    for item in args.items:
        count = _items(item)
        if count is not None and count < UNKNOWN:
            total += 8 * count
        elif func.dotted in ITERATING_MAKERS:
            total += 8 * _data_length(item)
    return total


def _items(value: Sym) -> int | None:
    """How many items iterating `value` makes, for a range or an address network; None for anything else."""
    if not isinstance(value, Obj) or not isinstance(value.args, Seq) or value.args.dropped:
        return None
    made = restored_class(value)
    if made == RANGE:
        numbers = const_ints(value.args)
        if numbers is None or not 1 <= len(numbers) <= 3:
            return UNKNOWN
        start, stop, step = ([0] if len(numbers) == 1 else []) + numbers + ([1] if len(numbers) < 3 else [])
        if step > 0:
            return max(0, (stop - start + step - 1) // step)
        return max(0, (start - stop - step - 1) // -step) if step else None  # range() refuses a step of 0
    if made in NETWORKS:
        text = value.args.items[0] if len(value.args.items) == 1 else None
        if not (isinstance(text, Const) and isinstance(text.value, str)):
            return UNKNOWN  # a computed address, or (address, prefix): as large as any network
        return _addresses(text.value, 32 if made == "ipaddress.IPv4Network" else 128)
    return None


def _addresses(text: str, bits: int) -> int:
    """How many addresses a network's text spans, read from its prefix (`::/0`, `10.0.0.0/8`, an IPv4 netmask
    `10.0.0.0/255.0.0.0`), never by making the network; a prefix wscan cannot read spans the whole space."""
    _, slash, prefix = text.partition("/")
    if not slash:
        return 1
    prefix = prefix.strip()
    if prefix.isdigit() and len(prefix) <= 3:
        return 1 << max(bits - int(prefix), 0)
    octets = prefix.split(".")
    if bits == 32 and len(octets) == 4 and all(o.isdigit() and len(o) <= 3 for o in octets):
        mask = int.from_bytes(bytes(int(o) & 0xFF for o in octets), "big")
        return 1 << (32 - bin(mask).count("1"))
    return 1 << bits


UNKNOWN = 2**128  # an argument whose size wscan cannot read counts as the largest
# Where each array maker takes its shape. numpy.ndarray(shape, dtype, buffer, offset, strides) zero-fills an object
# array of that shape, or views a one-byte buffer with stride 0 as 10**12 items (review 52); _mareconstruct fills an
# object array too (review 53). Writers pass these (0,) and BUILD the array from its data.
ARRAY_MAKERS = {
    "numpy.ndarray": 0, "numpy.matrix": 0, "numpy.matrixlib.defmatrix.matrix": 0, "numpy.recarray": 0,
    "numpy._core.records.recarray": 0, "numpy.core.records.recarray": 0, "numpy.rec.recarray": 0,
    "numpy._core.multiarray._reconstruct": 1, "numpy.core.multiarray._reconstruct": 1,
    "numpy.core._internal._reconstruct": 1, "numpy.ma.core._mareconstruct": 2,
}  # fmt: skip
# Fraction('1e999999999') computes 10**999999999, and so do Fraction(d) and int(d) of such a Decimal (review 52); a
# Decimal alone keeps its exponent and costs nothing (review 53: Decimal(2)**20000 is an ordinary value). A Fraction
# pickles as its plain text, so no real one carries an exponent past the digits Python converts to int.
FRACTION = "fractions.Fraction"
DECIMALS = frozenset({"decimal.Decimal", "_pydecimal.Decimal"})
INTEGER = "builtins.int"
MAX_EXPONENT = 4300  # sys.int_info.default_max_str_digits
_EXPONENT = re.compile(r"[eE]\s*([-+]?)\s*([\d_]+)")  # underscores too: Fraction('1e999_999_99') (review 53)
COPYREG_RECONSTRUCTOR = "copyreg._reconstructor"
COPYREG_NEWOBJ = ("copyreg.__newobj__", "copyreg.__newobj_ex__")


def _through_helpers(func: Global, args: Seq) -> tuple[Global, Seq]:
    """The call a helper makes: _reconstructor(cls, base, state) runs base.__init__(obj, state), so
    _reconstructor(bytearray, bytearray, N) fills N bytes (review 52); __newobj__(cls, *args) runs cls.__new__;
    JAX's _reconstruct_array(fun, args, ...) runs fun(*args)."""
    items = args.items
    if func.dotted == COPYREG_RECONSTRUCTOR and len(items) == 3 and isinstance(items[1], Global):
        return items[1], Seq("tuple", [items[2]])
    if func.dotted in COPYREG_NEWOBJ and items and isinstance(items[0], Global):
        rest = items[1:]
        if func.dotted == "copyreg.__newobj_ex__":
            rest = rest[0].items if rest and isinstance(rest[0], Seq) else []
        return items[0], Seq("tuple", list(rest))
    if func.dotted == RECONSTRUCT_ARRAY and len(items) > 1:
        fun, inner = items[0], items[1]
        if isinstance(fun, Global) and isinstance(inner, Seq):
            return fun, inner  # a JAX array: fun(*args) (review 56 gave NumPy's _reconstruct 4e9 items so)
    return func, args


def _elements(shape: Sym) -> int | None:
    """How many items an array of this shape holds (an int or a tuple of ints); None when computed."""
    single = _const_int(shape)
    sizes = [single] if single is not None else const_ints(shape)
    return None if sizes is None else math.prod(max(size, 0) for size in sizes)


def _exact_exponent(func: str, value: Sym) -> int:
    """The exponent an exact conversion computes 10 to: Fraction of a text or a Decimal (either sign: the numerator
    or the denominator), int of a Decimal (a positive one); else 0."""
    if func == FRACTION:
        return _exponent(value) or _decimal_exponent(value)
    if func == INTEGER:
        return max(_decimal_exponent(value), 0)
    return 0


def _decimal_exponent(value: Sym) -> int:
    made = value.func.dotted if isinstance(value, Obj) and isinstance(value.func, Global) else ""
    if made not in DECIMALS or not isinstance(value, Obj) or not isinstance(value.args, Seq) or not value.args.items:
        return 0
    return _exponent(value.args.items[0])


def _exponent(value: Sym) -> int:
    """The exponent of largest magnitude written in a constant text (`1e999999999`, `1e-5000`), else 0."""
    text = value.value if isinstance(value, Const) else None
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    if not isinstance(text, str):
        return 0
    found = [int((match.group(1) + match.group(2).replace("_", ""))[:14] or "0")
             for match in _EXPONENT.finditer(text[:4096]) if match.group(2).strip("_")]  # fmt: skip
    return max(found, key=abs, default=0)


def _amount(count: int) -> str:
    return f"{count:,} items" if count < 10**15 else f"about 2^{count.bit_length() - 1} items"


# Bytes of array data a stream may hand its arrays beyond its own length: each buffer the file holds backs one array
# in what writers make (pickle memoizes an array, never its state); a state reused for many arrays is copied by each
# when NumPy byte-swaps it or JAX converts it (review 59: 16 MiB given to 600 arrays, 9.4 GiB as the file loaded).
ARRAY_DATA_SLACK = 64 * 1024 * 1024
# The same for what null Arrow scalars fill, which real files do make (a column's scalars, most of them null): only a
# fill far past anything such a list needs is judged.
NULL_FILL_SLACK = 1024 * 1024 * 1024


# Where an array's BUILD state holds its data (and a masked array's mask), by the state's length: ndarray's
# __setstate__ takes (version, shape, dtype, fortran, data) or, without the version, 4 items (review 63), and
# MaskedArray's (version, shape, dtype, fortran, data, mask, fill value).
ARRAY_STATE_DATA = {4: (3,), 5: (4,), 7: (4, 5)}
# What makes an object that takes such a state: NumPy's rebuilders, and the array classes copyreg's __newobj__ or
# numpy.ma's rebuilder hands BUILD (review 63 gave one state to many of each).
ARRAY_MAKERS_BUILT = _ARRAY_REBUILDERS | {"numpy.ndarray", "numpy.ma.core._mareconstruct", "numpy.ma.core.MaskedArray",
                                          "numpy.ma.MaskedArray"}  # fmt: skip


def array_data_length(state: Sym) -> int:
    """The bytes of data in an array's state, as NumPy's BUILD takes it (ARRAY_STATE_DATA)."""
    places = ARRAY_STATE_DATA.get(len(state.items), ()) if isinstance(state, Seq) and not state.dropped else ()
    return sum(_data_length(state.items[place]) for place in places) if isinstance(state, Seq) else 0


# Makers that copy the bytes they are given (review 64 gave one 8 MiB bytes object to 400 calls of each: 3.2 GiB): what
# they are handed counts as array data too, against what the file holds.
COPYING_MAKERS = frozenset({
    "builtins.bytearray", "builtins.bytes", "__builtin__.bytearray", "__builtin__.bytes", "numpy.bytes_", "numpy.void",
    "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar", "array.array", "array._array_reconstructor",
})  # fmt: skip


def copied_length(args: Sym) -> int:
    """The bytes a COPYING_MAKERS call copies from its arguments."""
    return sum(_data_length(arg) for arg in args.items) if isinstance(args, Seq) and not args.dropped else 0


def _data_length(data: Sym | None) -> int:
    """Bytes, or at protocols 0 to 2 `_codecs.encode(text, 'latin1')` (review 60), counted by the text's length (a
    long one by its UTF-8 length in the file, never less than the bytes it encodes); `bytes(b)` or `bytearray(b)`
    by b's (review 64)."""
    if isinstance(data, Obj) and isinstance(data.func, Global) and data.func.dotted in BYTES_MAKERS:
        args = data.args.items if isinstance(data.args, Seq) and len(data.args.items) == 1 else None
        data = args[0] if args is not None else None
    if isinstance(data, Obj) and isinstance(data.func, Global) and data.func.dotted == ENCODED:
        args = data.args.items if isinstance(data.args, Seq) and len(data.args.items) == 2 else None
        data = args[0] if args is not None and _is_latin1(args[1]) else None
    value = data.value if isinstance(data, Const) else None
    if isinstance(value, bytes | bytearray | str):
        return len(value)
    return value.length if isinstance(value, LongBytes) else 0


class Tally:
    """Bytes a file's objects are handed beyond what it holds, over every pickle in the file, judged once: past
    `slack` more than the stream has read, `add` says why (WS-PKL-048), then never again."""

    def __init__(self, slack: int, what: tuple[str, str]) -> None:
        self.slack, self.what = slack, what
        self.total = 0
        self.reported = False

    def add(self, nbytes: int, read: int) -> str | None:
        self.total += nbytes
        if self.reported or self.total <= read + self.slack:
            return None
        self.reported = True
        kind, why = self.what
        return f"{self.total:,} bytes of {kind} from a stream of {read:,} bytes: {why}"


# What the machine tallies per file: array data (one buffer handed to many arrays, copied or iterated by many calls),
# and what null Arrow scalars fill, which real files do make (a column's scalars, most of them null: review 65).
ARRAY_DATA = ("array data", "data the file does not hold (one buffer given to many arrays), which no writer pickles")
NULL_FILL = ("fill for null Arrow scalars", "fixed-size types pyarrow fills in full for each null")
