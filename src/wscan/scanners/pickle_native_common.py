"""What the native checks share: the verdict for an invalid model, and integers read out of arrays."""

from __future__ import annotations

import numpy as np

from wscan.scanners.pickle_arrays import ArrayReader, Unread
from wscan.scanners.pickle_values import Sym

INTEGERS = "iu"


class Invalid(Exception):
    """The model's compiled code would read or write out of bounds with these values."""


def integers(array: np.ndarray, what: str, fields: tuple[str, ...] = ()) -> None:
    """The array (or these fields of its records) holds integers; anything else is not read as indices."""
    names = array.dtype.names or ()
    kinds = [array.dtype[name].kind if name in names else "" for name in fields]
    if (not fields and array.dtype.kind not in INTEGERS) or any(not kind or kind not in INTEGERS for kind in kinds):
        raise Unread(f"{what} of dtype {array.dtype}")


def outside(values: np.ndarray, low: int, high: int) -> int | None:
    """The first value outside [low, high), or None."""
    if not values.size:
        return None
    bad = np.flatnonzero((values < low) | (values >= high))
    return int(values.flat[bad[0]]) if bad.size else None


def int_values(arrays: ArrayReader, value: Sym | None, what: str) -> np.ndarray:
    """An integer array's values."""
    if value is None:
        raise Unread(f"no {what}")
    found = arrays.values(value)
    integers(found, what)
    return found
