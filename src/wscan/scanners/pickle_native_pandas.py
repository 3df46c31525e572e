"""pandas objects in a pickle, checked before pandas' compiled code indexes by their numbers.

Why: pandas builds tables from pickled numbers in Cython without bounds checks. A DataFrame keeps its columns in
blocks, each with the column positions it holds (its placement), and rebuilds a position -> block table from them: a
placement past the columns, or negative, writes outside the table (while the pickle loads for the state pandas 1
wrote, at the first column lookup for the BlockManager(blocks, axes) call pandas 2 and 3 write). A block shorter than
its index, a Categorical's code past its categories and a MultiIndex's code past its level are read past (helper 224).
Each crashed the process (tests/test_pandas_blocks.py).
"""

from __future__ import annotations

import numpy as np

from wscan.scanners.pickle_arrays import ArrayReader, Unread, const_shape
from wscan.scanners.pickle_arrow import RESTORE_ARRAY
from wscan.scanners.pickle_native import (
    CATEGORICALS,
    INDEX_HELPERS,
    MASKED_ARRAYS,
    MULTI_INDEXES,
    NDARRAY_BACKED,
    NEWOBJ_HELPERS,
    SINGLE_BLOCK_MANAGER,
    native_class_of,
    pandas_class,
)
from wscan.scanners.pickle_native_common import Invalid
from wscan.scanners.pickle_values import _ARRAY_REBUILDERS, Const, Dict, Global, Obj, Seq, Sym

UNPICKLE_BLOCK = "pandas._libs.internals._unpickle_block"
MAX_COLUMNS = 10_000_000  # columns checked one by one; a frame with more is unread
NDARRAY_CLASSES = frozenset({"numpy.ndarray", "numpy.core.multiarray.ndarray", "numpy._core.multiarray.ndarray"})
CHUNKED_ARROW = "pyarrow.lib.chunked_array"
INDEX_REBUILDERS = INDEX_HELPERS  # the helpers pandas pickles its indexes with, pandas 1 to 3
SPARSE_INDEXES = frozenset({"pandas._libs.sparse.IntIndex", "pandas._libs.sparse.BlockIndex"})
MAX_INDEX_DEPTH = 8  # an interval index's left ends are an index: nested no deeper than this
# pandas' extension arrays by class name, by how their state holds their values: NDArrayBacked ones beside their
# dtype, nullable ones as `_data` (their mask beside), Arrow-backed ones as an Arrow array, sparse ones by an index,
# interval ones as their left and right ends.
EXTENSION_KINDS = {
    **dict.fromkeys(["DatetimeArray", "TimedeltaArray", "PeriodArray", "NumpyExtensionArray", "PandasArray",
                     "StringArray", "Categorical"], "backed"),
    **dict.fromkeys(["IntegerArray", "FloatingArray", "BooleanArray"], "masked"),
    **dict.fromkeys(["ArrowExtensionArray", "ArrowStringArray", "ArrowStringArrayNumpySemantics"], "arrow"),
    "SparseArray": "sparse",
    "IntervalArray": "interval",
}  # fmt: skip


def check_object(target: Obj, arrays: ArrayReader) -> None:
    """A recorded pandas object's check, by its class (`pickle_native.PANDAS_CHECKED`)."""
    cls = pandas_class(target)
    if cls in CATEGORICALS:
        _categorical(target, arrays)
    elif cls in MASKED_ARRAYS:
        _masked(target, arrays)
    elif cls in MULTI_INDEXES:
        _multi_index(target, arrays)
    else:
        block_manager(target, arrays)


def _categorical(target: Obj, arrays: ArrayReader) -> None:
    """Codes from -1 (missing) to one less than the categories, in every state pandas reads (helper 225 found five it
    read and wscan did not): a 3-tuple whose ndarray is the codes, in either order (`NDArrayBacked.__setstate__`
    swaps them); a 1-tuple of a dict; a dict whose `_data`, `_ndarray` or `_codes` holds codes and whose `_dtype`,
    or pandas 1's `_categories`, the categories. Every candidate for codes is checked against every candidate for
    categories. A state given to pandas' unpickler as its third argument, with no BUILD, is Cython's own, set as
    (dtype, codes) (helper 235)."""
    state = _given_state(target)
    candidates: list[tuple[Sym | None, Sym | None]]
    if isinstance(state, Seq) and len(state.items) == 1 and isinstance(state.items[0], Dict):
        state = state.items[0]
    if isinstance(state, Seq):
        parts = state.items[:2]
        candidates = [(part, _categories(other)) for part, other in zip(parts, parts[::-1], strict=False)]
    elif isinstance(state, Dict):
        categories = _categories(_get(state, "_dtype"))
        if categories is None:
            categories = _get(state, "_categories")
        candidates = [(_get(state, key), categories) for key in ("_data", "_ndarray", "_codes")]
    else:
        return  # no codes given: pandas has none to take by
    for codes, categories in candidates:
        if codes is not None and categories is not None and _is_array(codes, arrays):
            _codes(codes, categories, "categories", arrays)


def _given_state(target: Obj) -> Sym | None:
    """An object's state: its BUILD's, or else, for an object made by pandas' NDArrayBacked unpickler, the state that
    call was given (Cython's generated unpickler sets it when it is not None)."""
    if target.state is not None:
        return target.state
    if isinstance(target.func, Global) and target.func.dotted == NDARRAY_BACKED and isinstance(target.args, Seq):
        args = target.args.items
        if len(args) > 2 and not (isinstance(args[2], Const) and args[2].value is None):
            return args[2]
    return None


def _masked(target: Obj, arrays: ArrayReader) -> None:
    """A nullable array's mask has its values' shape: pandas' compiled hashing (unique, value_counts, factorize) reads
    mask[i] for every value without bounds checks (helper 232: an empty mask under 20 million values crashed it)."""
    state = target.state
    if not isinstance(state, Dict):
        return  # made by its constructor, which checks, or given nothing
    values, mask = _get(state, "_data"), _get(state, "_mask")
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
        return _get(dtype.state, "categories")
    if isinstance(dtype.args, Seq) and dtype.args.items and not dtype.instance:
        return dtype.args.items[0]
    return None


def _multi_index(target: Obj, arrays: ArrayReader) -> None:
    """Each level's codes from -1 (missing) to one less than the level: as _new_Index's fields give them, or a state's
    `_levels` and `_codes` (helper 225 made one with copyreg's reconstructor and a BUILD)."""
    fields = target.args.items[1] if isinstance(target.args, Seq) and len(target.args.items) > 1 else None
    sources = []
    if isinstance(fields, Dict):
        sources.append((_get(fields, "levels"), _get(fields, "codes")))
    if isinstance(target.state, Dict):
        cache = _get(target.state, "_cache")
        if (isinstance(cache, Dict) and (cache.items or cache.dropped)) or not isinstance(cache, Dict | None):
            # pandas never writes a MultiIndex's caches, and it reads its levels from the cache first (helper 235
            # cached a one-label level under codes checked against the real one)
            raise Invalid("a MultiIndex restored with a filled cache, which pandas never writes")
        sources.append((_get(target.state, "_levels"), _get(target.state, "_codes")))
    for levels_sym, codes_sym in sources:
        if levels_sym is None and codes_sym is None:
            continue
        levels, codes = _listed(levels_sym), _listed(codes_sym)
        if levels is None or codes is None:
            raise Unread("levels or codes the stream computes")
        for level, level_codes in zip(levels, codes, strict=False):
            _codes(level_codes, level, "level", arrays)


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
    count = _axis_length(labels, arrays)
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
            rows = _axis_length(axes[0], arrays)
            shape = _values_shape(blocks[0][0], arrays)
            if len(shape) != 1:  # a Series' values have one dimension (helper 236: (2, n) values read past)
                raise Invalid(f"a Series block of shape {shape} where the index has {rows}")
            _rows(blocks[0][0], rows, arrays)
        return
    columns = None if verified else _axis_length(axes[0] if axes else None, arrays)
    _cover([placement for _, placement in blocks], columns, arrays)
    for values, placement in blocks:
        _block_columns(values, placement, verified, arrays)
    if not verified and len(axes) > 1:
        rows = _axis_length(axes[1], arrays)
        for values, _ in blocks:
            _rows(values, rows, arrays)


def _block_columns(values: Sym, placement: Sym, verified: bool, arrays: ArrayReader) -> None:
    """A 2-D block has a row of values per column its placement names; a 1-D one (an extension array) one column.
    pandas' own check does not compare them (helper 236: a placement of 200,000 columns over one row of values read
    past it). Values wscan cannot measure fail closed, except in a manager pandas verifies, whose extension blocks
    pandas checks in Python."""
    try:
        shape = _values_shape(values, arrays)
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
    shape = _values_shape(values, arrays)
    if not shape or shape[-1] != rows:
        raise Invalid(f"a block of {shape[-1] if shape else 0} rows where the index has {rows}")


def _values_shape(values: Sym, arrays: ArrayReader, depth: int = 0) -> tuple[int, ...]:
    """The shape of what pandas takes as values: a NumPy array (from NumPy's or joblib's pickles, or made by calling
    ndarray), an index (its data), or an extension array (the array its state holds its values in, read as pandas
    reads that state). Anything else is unread."""
    found = _shape(values, arrays)
    if found is not None:
        return found
    if not isinstance(values, Obj):
        raise Unread(f"values given as {type(values).__name__.lower()}")
    if _made_ndarray(values):  # numpy.ndarray(shape) given a BUILD state: the state's shape is the array's
        state = values.state
        given = state.items[1] if isinstance(state, Seq) and len(state.items) > 1 else None
        if given is None and isinstance(values.args, Seq) and values.args.items:
            given = values.args.items[0]
        shape = const_shape(given) if not isinstance(given, Const) else const_shape(Seq("tuple", [given]))
        if shape is None:
            raise Unread("an array whose shape the stream computes")
        return shape
    if isinstance(values.func, Global) and values.func.dotted in INDEX_REBUILDERS and depth < MAX_INDEX_DEPTH:
        return (_axis_length(values, arrays, depth + 1),)
    made = pandas_class(values)
    kind = EXTENSION_KINDS.get(made.rsplit(".", 1)[-1]) if made.startswith("pandas.") else None
    state = _given_state(values)
    if kind == "arrow":
        held = _dict_first(state, "_data", "_pa_array")  # ArrowExtensionArray.__setstate__ takes _data first
        length = _arrow_length(held)
        if length is None:
            raise Unread("an Arrow-backed array wscan cannot measure")
        return (length,)
    if kind == "sparse":
        if isinstance(state, Seq) and len(state.items) == 2 and isinstance(state.items[1], Seq):
            index = state.items[1].items[1] if len(state.items[1].items) == 2 else None  # (array state, (fill, index))
        else:
            index = _dict_first(state, "_sparse_index")
        return (_sparse_length(index),)
    if kind == "masked":
        held = _dict_first(state, "_data")
    elif kind == "interval":  # its left ends (pandas checks its right ends against them)
        held = _dict_first(state, "_left")
    elif kind == "backed":
        held = _backed_array(state, arrays)
    else:
        raise Unread(f"values made by {made or 'a computed call'}")
    if held is None or depth >= MAX_INDEX_DEPTH:
        raise Unread("an extension array without the array it holds")
    return _values_shape(held, arrays, depth + 1)


def _backed_array(state: Sym | None, arrays: ArrayReader) -> Sym | None:
    """The array an NDArrayBacked state gives (pandas' DatetimeArray, Categorical, NumpyExtensionArray...), as its
    __setstate__ takes it: from a dict, `_data` else `_ndarray` (its other keys are stray attributes, which helper
    233 used as decoys); from a tuple, the second of its first two items if that is an array, else the first; a
    1-tuple of a dict as that dict."""
    if isinstance(state, Seq) and len(state.items) == 1 and isinstance(state.items[0], Dict):
        state = state.items[0]
    if isinstance(state, Dict):
        return _dict_first(state, "_data", "_ndarray")
    if isinstance(state, Seq) and not state.dropped and 2 <= len(state.items) <= 3:
        first, second = state.items[:2]
        return second if _is_array(second, arrays) else first
    return None


def _is_array(value: Sym, arrays: ArrayReader) -> bool:
    """Whether a state's item is an array (NumPy's or joblib's, or made by calling ndarray), not a dtype."""
    return _made_ndarray(value) or _shape(value, arrays) is not None


def _get(state: Dict, key: str) -> Sym | None:
    """A dict's value for `key`, as pandas reads it."""
    return _plain(state).get(key)


def _plain(state: Dict) -> Dict:
    """The dict, if every key is one the stream gives as it is: pandas finds a computed "0.14.1" or "_codes" by
    equality and wscan cannot, so such a dict is unread (helper 235 hid a frame's state behind a computed key)."""
    if any(not isinstance(name, Const) for name, _ in state.items):
        raise Unread("a state whose keys the stream computes")
    return state


def _dict_first(state: Sym | None, *keys: str) -> Sym | None:
    """The value of the first of `keys` a dict state sets (or the one dict of a tuple state: Cython's auto-pickling
    gives an IntervalArray its attributes so)."""
    if isinstance(state, Seq) and not state.dropped:
        dicts = [item for item in state.items if isinstance(item, Dict)]
        state = dicts[0] if len(dicts) == 1 else None
    if not isinstance(state, Dict) or state.dropped:
        return None
    for key in keys:
        if _plain(state).has(key):
            return _get(state, key)
    return None


def _numpy_array(value: Sym) -> bool:
    return isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted in _ARRAY_REBUILDERS


def _made_ndarray(value: Sym) -> bool:
    """An array made by calling NumPy's array class (or its __new__ through copyreg), not by _reconstruct."""
    return isinstance(value, Obj) and native_class_of(value) in NDARRAY_CLASSES


def _legacy_state(state: Sym) -> tuple[Seq, Seq] | None:
    """(axes, blocks) of a pandas 1 state: a tuple whose fourth item maps "0.14.1" to them."""
    if not (isinstance(state, Seq) and state.type == "tuple" and len(state.items) >= 4):
        return None
    extra = state.items[3]
    if not isinstance(extra, Dict):
        raise Unread("a state the stream computes")
    inner = _get(extra, "0.14.1")
    if inner is None:
        return None
    axes, blocks = _dict_get(inner, "axes"), _dict_get(inner, "blocks")
    if not (isinstance(axes, Seq) and isinstance(blocks, Seq)) or axes.dropped or blocks.dropped:
        raise Unread("axes or blocks the stream computes")
    return axes, blocks


def _dict_get(value: Sym | None, key: str) -> Sym:
    if not isinstance(value, Dict) or value.dropped:
        raise Unread(f"a block or state without a readable {key}")
    found = _get(value, key)
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


def _axis_length(index: Sym | None, arrays: ArrayReader, depth: int = 0) -> int:
    """How many labels an index pickled by pandas has: its data's, a range's, an interval index's left ends', or a
    MultiIndex's codes'; or a list's or tuple's, which pandas makes an index of. Anything else is unread, so the
    check fails closed: an index made by calling its class (`RangeIndex(0, 10**9)`), which pandas never writes,
    hid a Series ten thousand times longer than its values, and a DatetimeIndex, which wscan could not measure,
    hid a frame's short blocks (helper 232: both crashed pandas at repr)."""
    if isinstance(index, Seq) and index.type in ("list", "tuple"):
        return len(index.items) + index.dropped
    if not (isinstance(index, Obj) and isinstance(index.func, Global) and index.func.dotted in INDEX_REBUILDERS):
        raise Unread("an axis not pickled as pandas pickles an index")
    args = index.args.items if isinstance(index.args, Seq) else []
    fields = args[1] if len(args) > 1 else None
    if not isinstance(fields, Dict) or fields.dropped:
        raise Unread("an axis whose fields the stream computes")
    data = _get(fields, "data")
    if data is not None:
        return _data_length(data, arrays, depth)
    left = _get(fields, "left")
    if left is not None and depth < MAX_INDEX_DEPTH:  # an IntervalIndex: pandas checks right against left
        return _axis_length(left, arrays, depth + 1)
    ends = [_get(fields, name) for name in ("start", "stop", "step")]
    numbers = [end.value for end in ends if isinstance(end, Const) and type(end.value) is int]
    if len(numbers) == 3:
        start, stop, step = (int(number) for number in numbers)
        if step == 0:
            raise Invalid("a range axis of step 0")
        return len(range(start, stop, step))
    codes = _get(fields, "codes")
    if isinstance(codes, Seq) and codes.items and not codes.dropped:
        shape = arrays.shape(codes.items[0])
        if len(shape) == 1:
            return shape[0]
    raise Unread("an axis wscan cannot measure")


def _data_length(data: Sym, arrays: ArrayReader, depth: int = 0) -> int:
    """How long an index's data is, read as `_values_shape` reads values; an index's data has one dimension."""
    shape = _values_shape(data, arrays, depth)
    if len(shape) != 1:
        raise Invalid(f"an axis of {len(shape)} dimensions")
    return shape[0]


def _shape(value: Sym, arrays: ArrayReader) -> tuple[int, ...] | None:
    """An array's shape (NumPy's, joblib's), None for anything else."""
    try:
        return arrays.shape(value)
    except Unread:
        return None


def _sparse_length(index: Sym | None) -> int:
    """A SparseArray's length: the first argument its IntIndex or BlockIndex is made with (they check the rest)."""
    if (isinstance(index, Obj) and isinstance(index.func, Global) and index.func.dotted in SPARSE_INDEXES
            and isinstance(index.args, Seq) and index.args.items):
        length = index.args.items[0]
        if isinstance(length, Const) and type(length.value) is int:
            return length.value
    raise Unread("a sparse index wscan cannot measure")


def _arrow_length(array: Sym | None) -> int | None:
    """How many items a pickled Arrow array holds: the length its data tuple gives, or its chunks' together."""
    if not (isinstance(array, Obj) and isinstance(array.func, Global) and isinstance(array.args, Seq)):
        return None
    args = array.args.items
    if array.func.dotted == RESTORE_ARRAY and args and isinstance(args[0], Seq) and len(args[0].items) > 1:
        length = args[0].items[1]
        return length.value if isinstance(length, Const) and type(length.value) is int else None
    if array.func.dotted == CHUNKED_ARROW and args and isinstance(args[0], Seq) and not args[0].dropped:
        lengths = [_arrow_length(chunk) for chunk in args[0].items]
        return None if None in lengths else sum(length for length in lengths if length is not None)
    return None
