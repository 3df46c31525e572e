"""Calls of allowed callables whose arguments make the loader allocate or iterate far more than the file holds.

`bytearray(6 * 10**9)` is 60 bytes of pickle and 6 GB of zeroed memory in every loader, torch's weights_only one
included; `list(ipaddress.IPv6Network("::/0"))` iterates 2^128 addresses and `list(range(10**12))` makes a trillion
integers (review 51). No writer pickles either shape: a bytearray is pickled from its bytes, a range or a network
as itself, never handed to another call. So a number given to bytearray or bytes, and an iterable of more than
MAX_ITERATED items given to any call, are reported (`pickle.amplified_call`).
"""

from __future__ import annotations

import ipaddress

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
    first = args.items[0]
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


def _amount(count: int) -> str:
    return f"{count:,} items" if count < 10**15 else f"about 2^{count.bit_length() - 1} items"
