"""pandas objects in a pickle, checked before pandas' compiled code indexes by their numbers.

Why: pandas builds tables from pickled numbers in Cython without bounds checks. A DataFrame keeps its columns in
blocks, each with the column positions it holds (its placement), and rebuilds a position -> block table from them: a
placement past the columns, or negative, writes outside the table (while the pickle loads for the state pandas 1
wrote, at the first column lookup for the BlockManager(blocks, axes) call pandas 2 and 3 write). A block shorter than
its index, a Categorical's code past its categories and a MultiIndex's code past its level are read past (helper 224),
and so is a nullable array's mask shorter than its values (helper 232). Each crashed the process
(tests/test_pandas_blocks.py, five red-team rounds). How long an index or values are: `pickle_native_pandas_lengths`.
"""

from __future__ import annotations

import re

import numpy as np

from wscan.scanners.pickle_arrays import ArrayReader, Unread, const_shape, dtype_code, numpy_dtype
from wscan.scanners.pickle_native import (
    CATEGORICALS,
    FISCAL_OFFSETS,
    MASKED_ARRAYS,
    MULTI_INDEXES,
    NEWOBJ_HELPERS,
    PANDAS_INDEX,
    SINGLE_BLOCK_MANAGER,
    SPARSE_ARRAYS,
    TIME_ARRAYS,
    native_class_of,
    pandas_class,
)
from wscan.scanners.pickle_native_common import Invalid
from wscan.scanners.pickle_native_pandas_lengths import (
    axis_length,
    backed_array,
    get,
    given_state,
    is_array,
    values_shape,
)
from wscan.scanners.pickle_values import Const, Dict, Global, Obj, Seq, Sym

UNPICKLE_BLOCK = "pandas._libs.internals._unpickle_block"
MAX_COLUMNS = 10_000_000  # columns checked one by one; a frame with more is unread


def check_object(target: Obj, arrays: ArrayReader) -> None:
    """A recorded pandas object's check, by its class (`pickle_native.PANDAS_CHECKED`)."""
    cls = pandas_class(target)
    if cls in CATEGORICALS:
        _categorical(target, arrays)
    elif cls in MASKED_ARRAYS:
        _masked(target, arrays)
    elif cls in MULTI_INDEXES:
        _multi_index(target, arrays)
    elif cls in SPARSE_ARRAYS:
        _sparse(target, arrays)
    elif cls in TIME_ARRAYS:
        _time_array(target, arrays)
    elif cls in FISCAL_OFFSETS:
        _fiscal_offset(target)
    elif PANDAS_INDEX.fullmatch(cls):
        _index_cache(target)
    else:
        block_manager(target, arrays)


def _categorical(target: Obj, arrays: ArrayReader) -> None:
    """Codes from -1 (missing) to one less than the categories, in every state pandas reads (helper 225 found five it
    read and wscan did not): a 3-tuple whose ndarray is the codes, in either order (`NDArrayBacked.__setstate__`
    swaps them); a 1-tuple of a dict; a dict whose `_data`, `_ndarray` or `_codes` holds codes and whose `_dtype`,
    or pandas 1's `_categories`, the categories. Every candidate for codes is checked against every candidate for
    categories. A state given to pandas' unpickler as its third argument, with no BUILD, is Cython's own, set as
    (dtype, codes) (helper 235)."""
    state = given_state(target)
    candidates: list[tuple[Sym | None, Sym | None]]
    if isinstance(state, Seq) and len(state.items) == 1 and isinstance(state.items[0], Dict):
        state = state.items[0]
    if isinstance(state, Seq):
        parts = state.items[:2]
        candidates = [(part, _categories(other)) for part, other in zip(parts, parts[::-1], strict=False)]
    elif isinstance(state, Dict):
        categories = _categories(get(state, "_dtype"))
        if categories is None:
            categories = get(state, "_categories")
        candidates = [(get(state, key), categories) for key in ("_data", "_ndarray", "_codes")]
    else:
        return  # no codes given: pandas has none to take by
    for codes, categories in candidates:
        if codes is not None and categories is not None and is_array(codes, arrays):
            _codes(codes, categories, "categories", arrays)


def _masked(target: Obj, arrays: ArrayReader) -> None:
    """A nullable array's mask has its values' shape: pandas' compiled hashing (unique, value_counts, factorize) reads
    mask[i] for every value without bounds checks (helper 232: an empty mask under 20 million values crashed it)."""
    state = target.state
    if not isinstance(state, Dict):
        return  # made by its constructor, which checks, or given nothing
    values, mask = get(state, "_data"), get(state, "_mask")
    if values is None or mask is None:
        return  # no values or no mask: pandas raises at the first use
    values_shape, mask_shape = arrays.shape(values), arrays.shape(mask)  # NumPy's or joblib's arrays
    if values_shape != mask_shape:
        raise Invalid(f"a mask of shape {mask_shape} over values of shape {values_shape}")


def _categories(dtype: Sym | None) -> Sym | None:
    """The categories a pickled CategoricalDtype holds: its state's, or the first argument it was called with."""
    if not isinstance(dtype, Obj):
        return None
    if isinstance(dtype.state, Dict):
        return get(dtype.state, "categories")
    if isinstance(dtype.args, Seq) and dtype.args.items and not dtype.instance:
        return dtype.args.items[0]
    return None


def _multi_index(target: Obj, arrays: ArrayReader) -> None:
    """Each level's codes from -1 (missing) to one less than the level: as _new_Index's fields give them, or a state's
    `_levels` and `_codes` (helper 225 made one with copyreg's reconstructor and a BUILD)."""
    fields = target.args.items[1] if isinstance(target.args, Seq) and len(target.args.items) > 1 else None
    sources = []
    if isinstance(fields, Dict):
        sources.append((get(fields, "levels"), get(fields, "codes")))
    if isinstance(target.state, Dict):
        cache = get(target.state, "_cache")
        if (isinstance(cache, Dict) and (cache.items or cache.dropped)) or not isinstance(cache, Dict | None):
            # pandas never writes a MultiIndex's caches, and it reads its levels from the cache first (helper 235
            # cached a one-label level under codes checked against the real one)
            raise Invalid("a MultiIndex restored with a filled cache, which pandas never writes")
        sources.append((get(target.state, "_levels"), get(target.state, "_codes")))
    for levels_sym, codes_sym in sources:
        if levels_sym is None and codes_sym is None:
            continue
        levels, codes = _listed(levels_sym), _listed(codes_sym)
        if levels is None or codes is None:
            raise Unread("levels or codes the stream computes")
        for level, level_codes in zip(levels, codes, strict=False):
            _codes(level_codes, level, "level", arrays)
        # one code per row at every level: pandas' lexsort check walks every level as long as the first (helper
        # 243 read past a one-row level's codes so)
        lengths = {arrays.values(level_codes).size for level_codes in codes}
        if len(lengths) > 1:
            raise Invalid(f"levels whose codes are {min(lengths)} to {max(lengths)} long")


def _index_cache(target: Obj) -> None:
    """An index's state (a dict, or a dict and the attributes set one by one) caches nothing: pandas never writes its
    cache, and reads what is cached (data, ends, engine) before what it would compute it from."""
    state = target.state
    parts = list(state.items) if isinstance(state, Seq) and state.type == "tuple" and len(state.items) == 2 else [state]
    for part in parts:
        cache = get(part, "_cache") if isinstance(part, Dict) else None
        if cache is not None and not (isinstance(cache, Dict) and not cache.items and not cache.dropped):
            raise Invalid("an index restored with a filled cache, which pandas never writes")


# What each fiscal year offset takes, in the order pandas pickles them (its __reduce__ gives the constructor's
# arguments), and the values its calendar code can index by.
FISCAL_ARGUMENTS = {
    "FY5253": ("n", "normalize", "weekday", "startingMonth", "variation"),
    "FY5253Quarter": ("n", "normalize", "weekday", "startingMonth", "qtr_with_extra_week", "variation"),
}
FISCAL_RANGES = {"weekday": range(7), "startingMonth": range(1, 13), "qtr_with_extra_week": range(1, 5)}


def _fiscal_offset(target: Obj) -> None:
    """An FY5253 or FY5253Quarter's weekday, starting month and extra-week quarter within what a calendar has, as
    its arguments or a state (pandas before 1.1) give them; a value the stream computes is unread."""
    names = FISCAL_ARGUMENTS[pandas_class(target).rsplit(".", 1)[-1]]
    given: list[tuple[str, Sym]] = []
    if isinstance(target.func, Global) and target.func.dotted in FISCAL_OFFSETS:
        if not isinstance(target.args, Seq) or target.args.dropped or len(target.args.items) > len(names):
            raise Unread("fiscal year offset arguments wscan cannot read")
        given += zip(names, target.args.items, strict=False)
    if target.state is not None:
        if not isinstance(target.state, Dict) or target.state.dropped:
            raise Unread("a fiscal year offset state wscan cannot read")
        given += [(str(key.value), value) for key, value in target.state.items
                  if isinstance(key, Const) and key.value in FISCAL_RANGES]  # fmt: skip
    for name, value in given:
        allowed = FISCAL_RANGES.get(name)
        if allowed is None:
            continue
        number = value.value if isinstance(value, Const) else None
        if not isinstance(number, int) or isinstance(number, bool):
            raise Unread(f"a fiscal year offset's {name} the stream computes")
        if number not in allowed:
            raise Invalid(f"a fiscal year offset's {name} of {number}, outside {allowed.start} to {allowed.stop - 1}")


def _listed(value: Sym | None) -> list[Sym] | None:
    """A list or tuple's items, or a FrozenList's (pandas pickles one as a call given the list)."""
    if isinstance(value, Obj) and isinstance(value.args, Seq) and len(value.args.items) == 1:
        value = value.args.items[0]
    if isinstance(value, Seq) and not value.dropped:
        return value.items
    return None


def _codes(codes: Sym | None, labels: Sym | None, what: str, arrays: ArrayReader) -> None:
    """Integer codes that index `labels` (or -1), when wscan can measure the labels."""
    if codes is None or labels is None:
        return
    count = axis_length(labels, arrays)
    values = arrays.values(codes)
    if values.dtype.kind not in "iu":
        raise Invalid(f"codes of {values.dtype}, not integers")
    if values.size and (int(values.min()) < -1 or int(values.max()) >= count):
        raise Invalid(f"a code from {int(values.min())} to {int(values.max())} for a {what} of {count} labels")


Block = tuple[Sym, Sym]  # a block's values and placement


def block_manager(target: Obj, arrays: ArrayReader) -> None:
    """Raise Invalid if the manager's blocks would make pandas index outside them, Unread if wscan cannot tell.

    Called (pandas 2 and 3), a frame's manager checks that its blocks hold as many columns as its first axis has and
    as many rows as its second, unless told not to; a Series' manager checks nothing unless told to. Made by NEWOBJ
    or copyreg's __newobj__, or restored from a state (pandas 1), neither checks anything (helper 224 crashed pandas
    through each), so their axes are read too."""
    single = native_class_of(target) == SINGLE_BLOCK_MANAGER
    if target.state is not None:
        legacy = _legacy_state(target.state)
        if legacy is not None:  # anything else makes pandas raise NotImplementedError
            axes, blocks = legacy
            pairs = [(_dict_get(block, "values"), _dict_get(block, "mgr_locs")) for block in blocks.items]
            _check(axes.items, pairs, single, False, arrays)
    called = _call(target, single)
    if called is not None:
        args, verified = called
        given = args[1] if len(args) > 1 else None
        if single:
            _check([given] if given is not None else [], [_block(args[0])], single, verified, arrays)
            return
        if not isinstance(args[0], Seq) or args[0].dropped:
            raise Unread("blocks the stream computes")
        listed = given.items if isinstance(given, Seq) and not given.dropped else []
        if not verified and not listed:
            raise Unread("axes the stream computes")
        _check(listed, [_block(block) for block in args[0].items], single, verified, arrays)


def _call(target: Obj, single: bool) -> tuple[list[Sym], bool] | None:
    """The arguments the manager was made with, and whether pandas checks them; None if nothing made it from any
    (a class made empty for a state)."""
    args = target.args.items if isinstance(target.args, Seq) else None
    func = target.func.dotted if isinstance(target.func, Global) else ""
    if args is None:
        raise Unread("arguments the stream computes")
    if func == "copyreg.__newobj_ex__":  # __newobj_ex__(cls, args, kwargs): cls.__new__ only
        given = args[1] if len(args) > 1 else None
        if not isinstance(given, Seq) or given.dropped:
            raise Unread("arguments the stream computes")
        args, new = given.items, True
    elif func in NEWOBJ_HELPERS:
        args = args[1:]  # __newobj__(cls, *args): cls.__new__ only
        new = True
    else:
        new = target.instance
    if not args:
        return None
    if new:  # a frame's manager is compiled and takes its blocks and axes in __new__; a Series' ignores them
        return None if single else (args, False)
    flag = args[2] if len(args) > 2 else None
    if single:  # SingleBlockManager(block, axis, verify_integrity): pandas 3 ignores the flag (helper 235)
        return args, False
    return args, not (isinstance(flag, Const) and not flag.value)


def _check(axes: list[Sym], blocks: list[Block], single: bool, verified: bool, arrays: ArrayReader) -> None:
    """A frame's blocks must cover its columns once each; unverified, as the axes say, and each block's rows must be
    the rows axis'. A Series' one block must be as long as its index (pandas indexes it by the index's positions)."""
    if single:
        if not verified and blocks and axes:
            rows = axis_length(axes[0], arrays)
            shape = values_shape(blocks[0][0], arrays)
            if len(shape) != 1:  # a Series' values have one dimension (helper 236: (2, n) values read past)
                raise Invalid(f"a Series block of shape {shape} where the index has {rows}")
            _rows(blocks[0][0], rows, arrays)
        return
    columns = None if verified else axis_length(axes[0] if axes else None, arrays)
    _cover([placement for _, placement in blocks], columns, arrays)
    for values, placement in blocks:
        _block_columns(values, placement, verified, arrays)
    if not verified and len(axes) > 1:
        rows = axis_length(axes[1], arrays)
        for values, _ in blocks:
            _rows(values, rows, arrays)


def _block_columns(values: Sym, placement: Sym, verified: bool, arrays: ArrayReader) -> None:
    """A 2-D block has a row of values per column its placement names; a 1-D one (an extension array) one column.
    pandas' own check does not compare them (helper 236: a placement of 200,000 columns over one row of values read
    past it). Values wscan cannot measure fail closed, except in a manager pandas verifies, whose extension blocks
    pandas checks in Python."""
    try:
        shape = values_shape(values, arrays)
    except Unread:
        if verified:
            return
        raise
    count = len(_positions(placement, arrays))
    if (len(shape) == 2 and shape[0] != count) or (len(shape) == 1 and count != 1) or len(shape) > 2:
        raise Invalid(f"a block of shape {shape} placed at {count} columns")


def _rows(values: Sym, rows: int, arrays: ArrayReader) -> None:
    """A block's values, however pickled, have `rows` in their last dimension: pandas' unpickle_block turns an index
    or a NumPy-backed extension array into the NumPy array it holds (helper 233 gave a block as either, and as
    joblib's arrays, all unmeasured before: repr read past them)."""
    shape = values_shape(values, arrays)
    if not shape or shape[-1] != rows:
        raise Invalid(f"a block of {shape[-1] if shape else 0} rows where the index has {rows}")


def _legacy_state(state: Sym) -> tuple[Seq, Seq] | None:
    """(axes, blocks) of a pandas 1 state: a tuple whose fourth item maps "0.14.1" to them."""
    if not (isinstance(state, Seq) and state.type == "tuple" and len(state.items) >= 4):
        return None
    extra = state.items[3]
    if not isinstance(extra, Dict):
        raise Unread("a state the stream computes")
    inner = get(extra, "0.14.1")
    if inner is None:
        return None
    axes, blocks = _dict_get(inner, "axes"), _dict_get(inner, "blocks")
    if not (isinstance(axes, Seq) and isinstance(blocks, Seq)) or axes.dropped or blocks.dropped:
        raise Unread("axes or blocks the stream computes")
    return axes, blocks


def _dict_get(value: Sym | None, key: str) -> Sym:
    if not isinstance(value, Dict) or value.dropped:
        raise Unread(f"a block or state without a readable {key}")
    found = get(value, key)
    if found is None:
        raise Unread(f"no {key}")
    return found


def _block(block: Sym) -> Block:
    """A block's values and placement, as _unpickle_block(values, placement, ndim) is given them."""
    if isinstance(block, Obj) and isinstance(block.func, Global) and block.func.dotted == UNPICKLE_BLOCK:
        args = block.args
        if isinstance(args, Seq) and len(args.items) >= 2:
            return args.items[0], args.items[1]
    raise Unread("a block not made by _unpickle_block")


def _positions(placement: Sym, arrays: ArrayReader) -> range | np.ndarray:
    """The column positions a placement names: a slice as pandas reads one, an integer, a list or an array of them."""
    if isinstance(placement, Const) and isinstance(placement.value, int) and not isinstance(placement.value, bool):
        return range(placement.value, placement.value + 1)
    if isinstance(placement, Obj) and isinstance(placement.func, Global) and placement.func.dotted == "builtins.slice":
        parts = placement.args.items if isinstance(placement.args, Seq) else []
        bounds = [_bound(part) for part in parts]
        if len(bounds) == 1:
            bounds = [None, bounds[0], None]
        if len(bounds) != 3:
            raise Unread("a slice the stream computes")
        start, stop, step = bounds
        step = 1 if step is None else step
        if step == 0 or (step > 0 and stop is None) or (step < 0 and start is None):
            raise Invalid("an unbounded slice as a block's columns")
        start = 0 if start is None else start
        stop = -1 if stop is None else stop
        if start < 0 or stop < (0 if step > 0 else -1):
            raise Invalid(f"a block's columns at negative positions ({start}:{stop}:{step})")
        return range(start, stop, step)
    if isinstance(placement, Seq):
        if placement.dropped or not all(isinstance(item, Const) for item in placement.items):
            raise Unread("columns the stream computes")
        return np.asarray([item.value for item in placement.items if isinstance(item, Const)], dtype=object)
    values = arrays.values(placement)
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise Invalid(f"a block's columns as a {values.ndim}-D {values.dtype} array, not integers")
    return values


def _bound(part: Sym) -> int | None:
    """A slice's bound: an integer or None (a computed one is unread)."""
    if isinstance(part, Const) and (part.value is None or type(part.value) is int):
        return part.value
    raise Unread("a slice the stream computes")


def _cover(placements: list[Sym], length: int | None, arrays: ArrayReader) -> None:
    """The blocks' positions must be 0 to n-1, each once (n the axis length, or how many they name)."""
    found = [_positions(placement, arrays) for placement in placements]
    total = sum(len(positions) for positions in found)
    columns = total if length is None else length
    if columns > MAX_COLUMNS or total > MAX_COLUMNS:
        raise Unread(f"more than {MAX_COLUMNS:,} columns")
    seen = np.zeros(columns, dtype=bool)
    for positions in found:
        if isinstance(positions, range):
            taken = np.arange(positions.start, positions.stop, positions.step, dtype=np.int64)
        else:
            if any(not isinstance(value, int) or isinstance(value, bool) for value in positions.tolist()):
                raise Invalid("a block's column given as no integer")
            taken = positions.astype(np.int64)
        if taken.size and (int(taken.min()) < 0 or int(taken.max()) >= columns):
            outside = int(taken.min()) if int(taken.min()) < 0 else int(taken.max())
            raise Invalid(f"a block's column at position {outside}, outside 0 to {columns - 1}")
        if seen[taken].any() or np.unique(taken).size != taken.size:
            raise Invalid("a column held by two blocks")
        seen[taken] = True
    if not seen.all():
        raise Invalid(f"blocks that hold {int(seen.sum())} of the {columns} columns")


def _sparse(target: Obj, arrays: ArrayReader) -> None:
    """A SparseArray's stored values are as many as its sparse index's points: pandas' compiled sparse arithmetic
    reads values[i] for each point without bounds checks (helper 237: one value under a BlockIndex of twenty million
    points crashed `a + b`). Its IntIndex or BlockIndex is made by its constructor, which checks the points against
    the length, unless an IntIndex is told not to."""
    state = target.state
    if isinstance(state, Dict):
        index, values = get(state, "_sparse_index"), get(state, "_sparse_values")
        if index is None or values is None:
            return  # pandas has nothing to index
        stored = arrays.shape(values)
    elif isinstance(state, Seq) and len(state.items) == 2 and isinstance(state.items[1], Seq):
        # pandas before 0.24: (the values' ndarray state, (fill value, index))
        nd_state, given = state.items
        index = given.items[1] if isinstance(given, Seq) and len(given.items) == 2 else None
        shape = nd_state.items[1] if isinstance(nd_state, Seq) and len(nd_state.items) == 5 else None
        found = const_shape(shape)
        if found is None:
            raise Unread("sparse values whose shape the stream computes")
        stored = found
    else:
        return  # no state pandas reads values from
    points = _sparse_points(index, arrays)
    if stored != (points,):
        raise Invalid(f"{stored} stored values under a sparse index of {points} points")


def _sparse_points(index: Sym | None, arrays: ArrayReader) -> int:
    """How many points a pickled IntIndex or BlockIndex holds: an IntIndex its indices, a BlockIndex its block
    lengths together; made as pandas pickles them (an IntIndex's integrity check left on)."""
    if not (isinstance(index, Obj) and isinstance(index.func, Global) and isinstance(index.args, Seq)):
        raise Unread("a sparse index wscan cannot read")
    args = index.args.items
    if index.func.dotted.endswith(".IntIndex") and len(args) in (2, 3):
        if len(args) == 3 and not (isinstance(args[2], Const) and args[2].value is True):
            raise Invalid("an IntIndex made without its integrity check")
        shape = arrays.shape(args[1])
        if len(shape) != 1:
            raise Invalid(f"sparse indices of shape {shape}")
        return shape[0]
    if index.func.dotted.endswith(".BlockIndex") and len(args) == 3:
        return _block_points(args, arrays)
    raise Unread("a sparse index made otherwise than pandas makes one")


def _block_points(args: list[Sym], arrays: ArrayReader) -> int:
    """A BlockIndex(length, blocs, blengths)'s points, its blocks checked as its integrity check should: each at least
    one point long, in order, apart, and within the length. pandas' own check lets a negative length through (helper
    243: blocks of ten million and minus ten million points, two in all, crashed `to_numpy` and `a + b`)."""
    length = args[0].value if isinstance(args[0], Const) else None
    if not isinstance(length, int) or isinstance(length, bool) or length < 0:
        raise Unread("a sparse length wscan cannot read")
    starts, lengths = arrays.values(args[1]), arrays.values(args[2])
    for found in (starts, lengths):
        if found.ndim != 1 or found.dtype.kind not in "iu":
            raise Invalid(f"block starts or lengths of shape {found.shape} and type {found.dtype}")
    if starts.size != lengths.size:
        raise Invalid(f"{starts.size} block starts for {lengths.size} block lengths")
    starts, lengths = starts.astype(np.int64), lengths.astype(np.int64)
    if lengths.size:
        if int(lengths.min()) < 1 or int(starts.min()) < 0 or max(int(starts.max()), int(lengths.max())) > length:
            raise Invalid("a sparse block that is empty, negative or past the length")
        ends = starts + lengths  # each at most the length, so no int64 overflow
        if int(ends.max()) > length or bool((starts[1:] < ends[:-1]).any()):
            raise Invalid("sparse blocks that overlap, are out of order or end past the length")
    return int(lengths.sum())


# What the ndarray of pandas' date and time arrays must be: compiled code takes its unit from the array's datetime64
# or timedelta64 dtype (helper 237: an int64 one crashed pandas 1.5 to 3.1 at repr), a period array's ordinals are
# int64; pandas writes only these units.
TIME_ARRAY_KINDS = {"DatetimeArray": "M", "TimedeltaArray": "m", "PeriodArray": "i"}
TIME_UNITS = frozenset({"s", "ms", "us", "ns"})


def _time_array(target: Obj, arrays: ArrayReader) -> None:
    """A DatetimeArray's, TimedeltaArray's or PeriodArray's ndarray has the dtype pandas' compiled code assumes."""
    kind = TIME_ARRAY_KINDS[pandas_class(target).rsplit(".", 1)[-1]]
    held = backed_array(given_state(target), arrays)
    if held is None:
        return  # no array: pandas has nothing to read
    dtype = arrays.dtype_given(held)
    if kind == "i":
        if numpy_dtype(dtype) != np.dtype(np.int64):
            raise Invalid(f"period ordinals of type {numpy_dtype(dtype)}")
        return
    found, unit = time_dtype(dtype, arrays)
    if found != kind or unit not in TIME_UNITS:
        raise Invalid(f"{'dates' if kind == 'M' else 'time deltas'} held as {found}8[{unit}]")


_TIME_CODE = re.compile(r"([<=|]?)([Mm])8")


def time_dtype(dtype: Sym | None, arrays: ArrayReader) -> tuple[str, str]:
    """The kind (`M` datetime64, `m` timedelta64) and unit of a pickled NumPy time dtype, `numpy.dtype("M8")` with
    the unit in its state's metadata (`(None, (b"ns", 1, 1, 1))`, its bytes read as an array's are: given as they are,
    or made by `_codecs.encode` in protocol 2).
    A dtype of another kind, or of a unit counted otherwise than by one, is Invalid; one the stream computes, Unread."""
    dtype, code = dtype_code(dtype)
    found = _TIME_CODE.fullmatch(code) if isinstance(code, str) else None
    if found is None:
        raise Invalid(f"a dtype {str(code)[:20]!r}, not a time")
    items = dtype.state.items if isinstance(dtype.state, Seq) and not dtype.state.dropped else []
    if len(items) != 9 or not isinstance(items[1], Const) or items[1].value not in ("<", "=", "|"):
        raise Unread("a time dtype state NumPy does not write")
    meta = items[8]
    unit = meta.items[1] if isinstance(meta, Seq) and len(meta.items) == 2 else None
    parts = unit.items if isinstance(unit, Seq) and len(unit.items) == 4 else []
    if not parts or not all(isinstance(part, Const) and part.value == 1 for part in parts[1:]):
        raise Unread("a time dtype's unit the stream computes")
    name = arrays.data(parts[0])
    return found.group(2), name.decode("latin-1")
