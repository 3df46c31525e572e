"""What the native checks share: the verdict for an invalid model, integers read out of arrays, numbers a state
keeps."""

from __future__ import annotations

import numpy as np

from wscan.scanners.pickle_arrays import ArrayReader, Unread, numpy_dtype
from wscan.scanners.pickle_values import _NUMPY_SCALARS, Const, Global, Obj, Seq, Sym

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


def scalar_number(value: Sym | None, arrays: ArrayReader) -> int | float | None:
    """The number a state keeps: a Python int or float (not a bool), or a NumPy scalar of one, `scalar(dtype, bytes)`
    (a tree's n_classes_ is an np.intp, hdbscan's cluster ids np.int64); None for anything else."""
    if isinstance(value, Const):
        number = value.value
        return number if isinstance(number, int | float) and not isinstance(number, bool) else None
    if isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted in _NUMPY_SCALARS:
        args = value.args.items if isinstance(value.args, Seq) else []
        if len(args) == 2:
            dtype, data = numpy_dtype(args[0]), arrays.data(args[1])
            if dtype.kind in "iuf" and dtype.itemsize == len(data):
                found = np.frombuffer(data, dtype=dtype)[0].item()
                return found if isinstance(found, int | float) else None
    return None
