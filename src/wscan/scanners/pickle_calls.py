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

import ipaddress
import math
import re

from wscan.scanners.pickle_values import Const, Global, Obj, Seq, Sym, _const_int, describe, restored_class

ZERO_FILLED = frozenset({"builtins.bytearray", "builtins.bytes"})
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
    if func.dotted in ARRAY_CLASSES:
        elements = _elements(first)
        if elements is None or elements > MAX_ITERATED:
            amount = "a shape wscan cannot read" if elements is None else _amount(elements)
            return f"{func.name}({amount}) made by calling the class, which no writer pickles"
    if func.dotted in EXACT_NUMBERS:
        exponent = _exponent(first)
        if exponent > MAX_EXPONENT:
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


def _items(value: Sym) -> int | None:
    """How many items iterating `value` makes, for a range or an address network; None for anything else."""
    if not isinstance(value, Obj) or not isinstance(value.args, Seq) or value.args.dropped:
        return None
    made = restored_class(value)
    if made == RANGE:
        bounds = [_const_int(item) for item in value.args.items]
        numbers = [bound for bound in bounds if bound is not None]
        if not 1 <= len(bounds) <= 3 or len(numbers) != len(bounds):
            return UNKNOWN
        start, stop, step = ([0] if len(numbers) == 1 else []) + numbers + ([1] if len(numbers) < 3 else [])
        if step > 0:
            return max(0, (stop - start + step - 1) // step)
        return max(0, (start - stop - step - 1) // -step) if step else None  # range() refuses a step of 0
    if made in NETWORKS:
        text = value.args.items[0] if len(value.args.items) == 1 else None
        if not (isinstance(text, Const) and isinstance(text.value, str)):
            return UNKNOWN  # a computed address, or (address, prefix): as large as any network
        network = ipaddress.IPv4Network if made == "ipaddress.IPv4Network" else ipaddress.IPv6Network
        try:
            return network(text.value).num_addresses  # the standard library's parser, on the stream's text
        except ValueError:
            return None  # the class refuses it too: the load fails there
    return None


UNKNOWN = 2**128  # an argument whose size wscan cannot read counts as the largest
# numpy.ndarray(shape, dtype, buffer, offset, strides) zero-fills an object array of that shape, or views a one-byte
# buffer with stride 0 as 10**12 items (review 52); writers restore arrays with _reconstruct and a state instead.
ARRAY_CLASSES = frozenset({"numpy.ndarray", "numpy.matrix", "numpy.matrixlib.defmatrix.matrix"})
# Fraction('1e999999999'), and Fraction or int of such a Decimal, compute 10**999999999 (review 52): a Decimal or
# Fraction pickles as its text, and no real one carries an exponent past the digits Python converts to int.
EXACT_NUMBERS = frozenset({"fractions.Fraction", "decimal.Decimal", "_pydecimal.Decimal"})
MAX_EXPONENT = 4300  # sys.int_info.default_max_str_digits
_EXPONENT = re.compile(r"[eE]\s*([-+]?)\s*0*(\d+)")
COPYREG_RECONSTRUCTOR = "copyreg._reconstructor"
COPYREG_NEWOBJ = ("copyreg.__newobj__", "copyreg.__newobj_ex__")


def _through_helpers(func: Global, args: Seq) -> tuple[Global, Seq]:
    """The call a copyreg helper makes: _reconstructor(cls, base, state) runs base.__init__(obj, state), so
    _reconstructor(bytearray, bytearray, N) fills N bytes (review 52); __newobj__(cls, *args) runs cls.__new__."""
    items = args.items
    if func.dotted == COPYREG_RECONSTRUCTOR and len(items) == 3 and isinstance(items[1], Global):
        return items[1], Seq("tuple", [items[2]])
    if func.dotted in COPYREG_NEWOBJ and items and isinstance(items[0], Global):
        rest = items[1:]
        if func.dotted == "copyreg.__newobj_ex__":
            rest = rest[0].items if rest and isinstance(rest[0], Seq) else []
        return items[0], Seq("tuple", list(rest))
    return func, args


def _elements(shape: Sym) -> int | None:
    """How many items an array of this shape holds (an int or a tuple of ints); None when computed."""
    if isinstance(shape, Seq) and not shape.dropped:
        sizes = [_const_int(item) for item in shape.items]
        known = [size for size in sizes if size is not None]
        return math.prod(max(size, 0) for size in known) if len(known) == len(sizes) else None
    size = _const_int(shape)
    return None if size is None else max(size, 0)


def _exponent(value: Sym) -> int:
    """The largest exponent written in a constant text (`1e999999999`), else 0."""
    text = value.value if isinstance(value, Const) else None
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    if not isinstance(text, str):
        return 0
    return max((int(match.group(2)[:12] or "0") for match in _EXPONENT.finditer(text[:4096])), default=0)


def _amount(count: int) -> str:
    return f"{count:,} items" if count < 10**15 else f"about 2^{count.bit_length() - 1} items"
