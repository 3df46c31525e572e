"""NumPy dtype states that make NumPy misread an array's bytes.

NumPy 2 takes a pickled descriptor's state as given (`arraydescr_setstate`, state versions 3 and 4): its flags, and
the offsets of a record's fields. Whether the items are Python objects follows the flags, not the kind. An object
dtype (`O8`) whose state says it holds no objects takes raw bytes as its data and reads each 8 of them as an object
pointer (review 46: every pickle loader crashed, and with a known address the array held `os.system`, which the file
never named); a float dtype that says it holds objects stores pointers where floats are read back (an address
leak); a record whose number field lies over its object field, or whose fields lie past its end, does the same
(review 47). NumPy writes the flags its own descriptor has (63 for `O`, the object bits for a record with an object
field, none otherwise), fields inside the record with objects overlapping nothing, and the kind as a short code
(`'O8'`, `'<f8'`, `'V16'`): a kind spelled any other way (`'object'`, `numpy.object_`) is not read here, so it is
reported.
"""

from __future__ import annotations

import itertools
import math
import re

from wscan.scanners.pickle_values import (
    _RESTORED_POSITIONS,
    Const,
    Dict,
    Global,
    Obj,
    Seq,
    Sym,
    _const,
    _const_int,
    _is_none,
    restored_class,
)

HOLDS_OBJECTS = 0x01  # NPY_ITEM_HASOBJECT (NPY_ITEM_REFCOUNT)
LIST_PICKLE = 0x02  # NPY_LIST_PICKLE: the array pickles as a list of its items
IS_POINTER = 0x04  # NPY_ITEM_IS_POINTER
OBJECT_FLAGS = 0x3F  # NPY_OBJECT_DTYPE_FLAGS, what an `O` descriptor has
_CODE = re.compile(r"[<>|=]?([biufcOSUVmM?])(\d*)")  # what NumPy's dtype.__reduce__ writes
_FIXED = {"b": 1, "?": 1, "O": 8, "m": 8, "M": 8}  # sizes when the code gives none
MAX_FIELDS_WALKED = 10_000

Layout = tuple[int, bool]  # a dtype's size in bytes, and whether it holds objects
# ml_dtypes' scalar types (bfloat16, the float8s, int4, ...: JAX, TensorFlow and ONNX arrays hold them) by name: the
# item size and alignment of NumPy's descriptor for each. NumPy pickles one as dtype(<the type>, False, True) with the
# state (3, '<', None, None, None, size, alignment, 64): USE_SETITEM, no objects. tools/gen_allowlists.py checks the
# table against ml_dtypes itself.
ML_DTYPES: dict[str, tuple[int, int]] = {
    "bfloat16": (2, 2), "complex32": (4, 2), "bcomplex32": (4, 2),
    **dict.fromkeys((
        "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
        "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e5m3fnu", "float8_e8m0fnu",
        "int1", "int2", "int4", "uint1", "uint2", "uint4",
    ), (1, 1)),
}  # fmt: skip
ML_DTYPE_FLAGS = 0x40  # NPY_USE_SETITEM


def forged_dtype_flags(target: Obj, state: Sym) -> str | None:
    """Why the BUILD state of numpy.dtype(...) makes NumPy misread the items, or None (also when the state is not one
    that carries flags: NumPy keeps or computes them then)."""
    if not _is_dtype(target):
        return _made_otherwise(target)
    if _ml_dtype(target) is not None:  # any state: the descriptor may be the one the process shares (review 54)
        return None if ml_dtype_size(target, state) is not None else f"{_shown(target)} with a state NumPy never writes"
    code = _code(target)
    if code is None:  # any state: 'bfloat16' by its name is ml_dtypes' shared descriptor too (review 56)
        return f"a kind given as {_shown(target)}, which NumPy never pickles"
    if not isinstance(state, Seq) or len(state.items) not in (8, 9):
        return None
    kind = code[0]
    version, flags = _const_int(state.items[0]), _const_int(state.items[7])
    if flags is None or version is None:
        return "flags or version computed while loading"
    parts = _parts(state.items[2], state.items[4])
    if parts is None:
        return "fields or sub-array built while loading, or of a kind NumPy never pickles"
    holds = kind == "O" or any(objects for _, (_, objects) in parts)
    spread = _misplaced(parts, _const_int(state.items[5]))
    if spread is not None:
        return spread
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


def _made_otherwise(target: Obj) -> str | None:
    """A descriptor made through copyreg's helpers, which hand back the one the process shares for a type (review 54
    rewrote bfloat16's for every later array so: NumPy protects only its built-in ones). NumPy never pickles one so."""
    if not (isinstance(target.func, Global) and target.func.dotted in _RESTORED_POSITIONS):
        return None
    made = restored_class(target)  # the class the helper makes
    module, _, name = made.rpartition(".")
    if module.split(".")[0] == "numpy" and (name == "dtype" or name.endswith("DType")):
        return f"a dtype made by {target.func.dotted}, a descriptor the process may share"
    return None


def _parts(subarray: Sym, fields: Sym) -> list[tuple[int | None, Layout]] | None:
    """(offset, layout) of a state's sub-array (offset None: it fills the item) and fields; None when they are not
    plain tuples and dicts of dtypes and constants, as NumPy writes them."""
    found: list[tuple[int | None, Layout]] = []
    if isinstance(subarray, Seq) and len(subarray.items) == 2:
        base, shape = _layout(subarray.items[0]), _const_shape(subarray.items[1])
        if base is None or shape is None:
            return None
        found.append((None, (base[0] * shape, base[1])))
    elif not _is_none(subarray):
        return None
    if isinstance(fields, Dict):
        if len(fields.items) > MAX_FIELDS_WALKED:
            return None
        for _, value in fields.items:
            if not (isinstance(value, Seq) and len(value.items) in (2, 3)):
                return None
            layout, offset = _layout(value.items[0]), _const_int(value.items[1])
            if layout is None or offset is None:
                return None
            found.append((offset, layout))
    elif not _is_none(fields):
        return None
    return found


def _misplaced(parts: list[tuple[int | None, Layout]], size: int | None) -> str | None:
    """A sub-array or field past the item's size, or an object field another field overlaps."""
    if not parts:
        return None
    if size is None or size < 0:
        return "a record or sub-array whose size is computed"
    spans = []
    for offset, (length, objects) in parts:
        start = 0 if offset is None else offset
        if start < 0 or start + length > size:
            return f"a field or sub-array at bytes {start} to {start + length} of a {size}-byte item"
        spans.append((start, start + length, objects))
    spans = sorted(set(spans))  # a title is a second key for its field: the same span, the same kind
    for (_, end, objects), (next_start, _, next_objects) in itertools.pairwise(spans):
        if next_start < end and (objects or next_objects):
            return f"fields overlapping an object field at bytes {next_start} to {end}"
    return None


def ml_dtype_size(dtype: Obj, state: Sym | None) -> int | None:
    """The item size of an ml_dtypes descriptor made and given its state exactly as NumPy writes it; None for anything
    else. Another state (flags that claim objects, another size) is NumPy's to misread; a copy never given one copies
    the shared descriptor, whatever the stream did to it before (review 54), so its size is unknown."""
    args = dtype.args.items if isinstance(dtype.args, Seq) and not dtype.args.dropped else []
    name = _ml_dtype(dtype)
    if name not in ML_DTYPES or len(args) != 3:
        return None
    copy, align = args[1], args[2]
    if not (isinstance(copy, Const) and copy.value is False and isinstance(align, Const) and align.value is True):
        return None
    size, alignment = ML_DTYPES[name]
    if not isinstance(state, Seq) or state.dropped or len(state.items) != 8:
        return None
    version, order, subarray, names, fields, elsize, given_alignment, flags = state.items
    plain = all(_is_none(item) for item in (subarray, names, fields))
    written = [_const_int(version), _const(order), _const_int(elsize), _const_int(given_alignment), _const_int(flags)]
    return size if plain and written == [3, "<", size, alignment, ML_DTYPE_FLAGS] else None


def _ml_dtype(dtype: Obj) -> str | None:
    """The name of the ml_dtypes type numpy.dtype(...) is made from, if it is one."""
    args = dtype.args
    first = args.items[0] if isinstance(args, Seq) and args.items and not args.dropped else None
    return first.name if isinstance(first, Global) and first.module == "ml_dtypes" else None


def _layout(dtype: Sym) -> Layout | None:
    """Size and whether it holds objects, of a dtype inside a state: by its code, or by its own state's size and
    flags (a record's); None when it is spelled otherwise."""
    if not (isinstance(dtype, Obj) and _is_dtype(dtype)):
        return None
    ml_size = ml_dtype_size(dtype, dtype.state)
    if ml_size is not None:
        return ml_size, False
    code = _code(dtype)
    if code is None:
        return None
    kind, digits = code[0], code[1:]
    objects = kind == "O"
    size = int(digits) * (4 if kind == "U" else 1) if digits else _FIXED.get(kind)
    if isinstance(dtype.state, Seq) and len(dtype.state.items) in (8, 9):
        flags, given = _const_int(dtype.state.items[7]), _const_int(dtype.state.items[5])
        objects = objects or (flags is not None and bool(flags & HOLDS_OBJECTS))
        if kind in "SUV" and given is not None and given >= 0:
            size = given  # a flexible dtype's size is its state's
    return None if size is None else (size, objects)


def _const_shape(shape: Sym) -> int | None:
    """The number of items a sub-array's shape holds."""
    value = _const_int(shape)
    if value is not None:
        return value if value >= 0 else None
    if not isinstance(shape, Seq) or len(shape.items) > 64:
        return None
    sizes = [_const_int(item) for item in shape.items]
    counts = [n for n in sizes if n is not None and n >= 0]
    return math.prod(counts) if len(counts) == len(sizes) else None


def _code(dtype: Obj) -> str | None:
    """The kind and size NumPy pickles a dtype as ('<f8': 'f8'; a record array's numpy.record class: 'V', sized by
    its state), or None for any other spelling."""
    first = dtype.args.items[0] if isinstance(dtype.args, Seq) and dtype.args.items else None
    if isinstance(first, Global) and first.name == "record" and first.module.split(".")[0] == "numpy":
        return "V"
    code = _const(first)
    match = _CODE.fullmatch(code) if isinstance(code, str) else None
    return None if match is None else match.group(1) + match.group(2)


def _shown(dtype: Obj) -> str:
    first = dtype.args.items[0] if isinstance(dtype.args, Seq) and dtype.args.items else None
    if isinstance(first, Global):
        return first.dotted
    value = _const(first)
    return repr(value)[:40] if value is not None else "a computed value"


def _is_dtype(value: Obj) -> bool:
    """numpy.dtype(...), by whichever of NumPy's modules names it."""
    func = value.func
    return isinstance(func, Global) and func.name == "dtype" and func.module.split(".")[0] == "numpy"
