"""NumPy dtype states that make NumPy misread an array's bytes.

NumPy 2 takes a pickled descriptor's flags as given (`arraydescr_setstate`, state versions 3 and 4), and whether
the items are Python objects follows those flags, not the kind. An object dtype (`O8`) whose state says it holds no
objects takes raw bytes as its data and reads each 8 of them as an object pointer (review 46: every pickle loader
crashed, and with a known address the array held `os.system`, which the file never named); a float dtype that says
it holds objects stores pointers where floats are read back (an address leak). NumPy writes the flags its own
descriptor has: 63 for `O`, the object bits for a record with an object field, and none otherwise.
"""

from __future__ import annotations

import re

from wscan.scanners.pickle_values import Const, Dict, Global, Obj, Seq, Sym, _const

HOLDS_OBJECTS = 0x01  # NPY_ITEM_HASOBJECT (NPY_ITEM_REFCOUNT)
LIST_PICKLE = 0x02  # NPY_LIST_PICKLE: the array pickles as a list of its items
IS_POINTER = 0x04  # NPY_ITEM_IS_POINTER
OBJECT_FLAGS = 0x3F  # NPY_OBJECT_DTYPE_FLAGS, what an `O` descriptor has
_KIND = re.compile(r"[<>|=]?([a-zA-Z?])")
MAX_FIELDS_WALKED = 10_000


def forged_dtype_flags(target: Obj, state: Sym) -> str | None:
    """Why the BUILD state of numpy.dtype(...) gives flags its kind and fields contradict, or None (also when the
    state is not one that carries flags: NumPy keeps or computes them then)."""
    if not _is_dtype(target) or not isinstance(state, Seq) or len(state.items) not in (8, 9):
        return None
    kind = _kind(target)
    if kind is None:
        return None
    code = _const(target.args.items[0]) if isinstance(target.args, Seq) else None
    version, flags = _const(state.items[0]), _const(state.items[7])
    if not isinstance(flags, int) or isinstance(flags, bool) or not isinstance(version, int):
        return "flags or version computed while loading"
    inner = _fields_hold_objects([state.items[2], state.items[4]])
    if inner is None:
        return "fields or sub-array built while loading"
    holds = kind == "O" or inner
    if version < 3:  # NumPy recomputes: any flag, or an object inside, makes every item an object
        claimed = flags != 0 or holds
        return None if claimed == holds else f"version {version} with flags {flags} on a {code!r} without objects"
    if kind == "O" and flags & OBJECT_FLAGS != OBJECT_FLAGS:
        return f"an object dtype with flags {flags} (NumPy writes {OBJECT_FLAGS})"
    if holds and flags & (HOLDS_OBJECTS | LIST_PICKLE) != HOLDS_OBJECTS | LIST_PICKLE:
        return f"a record with object fields and flags {flags}"
    if not holds and flags & (HOLDS_OBJECTS | LIST_PICKLE | IS_POINTER):
        return f"flags {flags} claim objects in a {code!r} without any"
    return None


def _fields_hold_objects(values: list[Sym]) -> bool | None:
    """Whether the sub-array and field dtypes of a state hold objects (by their kind or their own flags); None when
    they are built some other way than NumPy writes them (plain tuples and dicts of dtypes and constants)."""
    found = False
    pending = list(values)
    walked = 0
    while pending:
        value = pending.pop()
        walked += 1
        if walked > MAX_FIELDS_WALKED:
            return None
        if isinstance(value, Obj):
            if not _is_dtype(value):
                return None
            found = found or _kind(value) == "O"
            if isinstance(value.state, Seq) and len(value.state.items) in (8, 9):
                flags = _const(value.state.items[7])
                found = found or (isinstance(flags, int) and bool(flags & HOLDS_OBJECTS))
                pending.extend([value.state.items[2], value.state.items[4]])
        elif isinstance(value, Seq):
            pending.extend(value.items)
        elif isinstance(value, Dict):
            pending.extend(v for _, v in value.items)
        elif not isinstance(value, Const):  # None, a number or text: offsets, titles, names, a shape
            return None
    return found


def _kind(dtype: Obj) -> str | None:
    """The kind letter of the text numpy.dtype was called with ('<f8': 'f')."""
    code = _const(dtype.args.items[0]) if isinstance(dtype.args, Seq) and dtype.args.items else None
    match = _KIND.match(code) if isinstance(code, str) else None
    return match.group(1) if match is not None else None


def _is_dtype(value: Obj) -> bool:
    """numpy.dtype(...), by whichever of NumPy's modules names it."""
    func = value.func
    return isinstance(func, Global) and func.name == "dtype" and func.module.split(".")[0] == "numpy"
