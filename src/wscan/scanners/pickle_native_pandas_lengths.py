"""How long pandas' pickled indexes and arrays are, read as pandas reads their states (`pickle_native_pandas`).

Why: the checks compare lengths (a block's rows with its index, codes with their categories), and pandas pickles an
index's or array's values in many forms: NumPy's and joblib's arrays, NDArrayBacked states beside a dtype, nullable
arrays' `_data`, Arrow arrays, sparse indexes, interval ends. Each is read as pandas' own `__setstate__` or helper
reads it (the key it takes first, not a decoy beside it); a form read no other way is unread, so the check fails
closed (helpers 232 to 236 crashed pandas through every form this module once passed over).
"""

from __future__ import annotations

from wscan.scanners.pickle_arrays import ArrayReader, Unread, const_shape
from wscan.scanners.pickle_arrow import RESTORE_ARRAY
from wscan.scanners.pickle_native import INDEX_HELPERS, NDARRAY_BACKED, native_class_of, pandas_class
from wscan.scanners.pickle_native_common import Invalid
from wscan.scanners.pickle_values import Const, Dict, Global, Obj, Seq, Sym

NDARRAY_CLASSES = frozenset({"numpy.ndarray", "numpy.core.multiarray.ndarray", "numpy._core.multiarray.ndarray"})
CHUNKED_ARROW = "pyarrow.lib.chunked_array"
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


def given_state(target: Obj) -> Sym | None:
    """An object's state: its BUILD's, or else, for an object made by pandas' NDArrayBacked unpickler, the state that
    call was given (Cython's generated unpickler sets it when it is not None)."""
    if target.state is not None:
        return target.state
    if isinstance(target.func, Global) and target.func.dotted == NDARRAY_BACKED and isinstance(target.args, Seq):
        args = target.args.items
        if len(args) > 2 and not (isinstance(args[2], Const) and args[2].value is None):
            return args[2]
    return None


def values_shape(values: Sym, arrays: ArrayReader, depth: int = 0) -> tuple[int, ...]:
    """The shape of what pandas takes as values: a NumPy array (from NumPy's or joblib's pickles, or made by calling
    ndarray), an index (its data), or an extension array (the array its state holds its values in, read as pandas
    reads that state). Anything else is unread."""
    found = shape_of(values, arrays)
    if found is not None:
        return found
    if not isinstance(values, Obj):
        raise Unread(f"values given as {type(values).__name__.lower()}")
    if made_ndarray(values):  # numpy.ndarray(shape) given a BUILD state: the state's shape is the array's
        state = values.state
        given = state.items[1] if isinstance(state, Seq) and len(state.items) > 1 else None
        if given is None and isinstance(values.args, Seq) and values.args.items:
            given = values.args.items[0]
        shape = const_shape(given) if not isinstance(given, Const) else const_shape(Seq("tuple", [given]))
        if shape is None:
            raise Unread("an array whose shape the stream computes")
        return shape
    if isinstance(values.func, Global) and values.func.dotted in INDEX_HELPERS and depth < MAX_INDEX_DEPTH:
        return (axis_length(values, arrays, depth + 1),)
    made = pandas_class(values)
    kind = EXTENSION_KINDS.get(made.rsplit(".", 1)[-1]) if made.startswith("pandas.") else None
    state = given_state(values)
    if kind == "arrow":
        held = dict_first(state, "_data", "_pa_array")  # ArrowExtensionArray.__setstate__ takes _data first
        length = _arrow_length(held)
        if length is None:
            raise Unread("an Arrow-backed array wscan cannot measure")
        return (length,)
    if kind == "sparse":
        if isinstance(state, Seq) and len(state.items) == 2 and isinstance(state.items[1], Seq):
            index = state.items[1].items[1] if len(state.items[1].items) == 2 else None  # (array state, (fill, index))
        else:
            index = dict_first(state, "_sparse_index")
        return (_sparse_length(index),)
    if kind == "masked":
        held = dict_first(state, "_data")
    elif kind == "interval":  # its left ends (pandas checks its right ends against them)
        held = dict_first(state, "_left")
    elif kind == "backed":
        held = backed_array(state, arrays)
    else:
        raise Unread(f"values made by {made or 'a computed call'}")
    if held is None or depth >= MAX_INDEX_DEPTH:
        raise Unread("an extension array without the array it holds")
    return values_shape(held, arrays, depth + 1)


def backed_array(state: Sym | None, arrays: ArrayReader) -> Sym | None:
    """The array an NDArrayBacked state gives (pandas' DatetimeArray, Categorical, NumpyExtensionArray...), as its
    __setstate__ takes it: from a dict, `_data` else `_ndarray` (its other keys are stray attributes, which helper
    233 used as decoys); from a tuple, the second of its first two items if that is an array, else the first; a
    1-tuple of a dict as that dict."""
    if isinstance(state, Seq) and len(state.items) == 1 and isinstance(state.items[0], Dict):
        state = state.items[0]
    if isinstance(state, Dict):
        return dict_first(state, "_data", "_ndarray")
    if isinstance(state, Seq) and not state.dropped and 2 <= len(state.items) <= 3:
        first, second = state.items[:2]
        return second if is_array(second, arrays) else first
    return None


def is_array(value: Sym, arrays: ArrayReader) -> bool:
    """Whether a state's item is an array (NumPy's or joblib's, or made by calling ndarray), not a dtype."""
    return made_ndarray(value) or shape_of(value, arrays) is not None


def get(state: Dict, key: str) -> Sym | None:
    """A dict's value for `key`, as pandas reads it."""
    return plain(state).get(key)


def plain(state: Dict) -> Dict:
    """The dict, if every key is one the stream gives as it is: pandas finds a computed "0.14.1" or "_codes" by
    equality and wscan cannot, so such a dict is unread (helper 235 hid a frame's state behind a computed key)."""
    if any(not isinstance(name, Const) for name, _ in state.items):
        raise Unread("a state whose keys the stream computes")
    return state


def dict_first(state: Sym | None, *keys: str) -> Sym | None:
    """The value of the first of `keys` a dict state sets (or the one dict of a tuple state: Cython's auto-pickling
    gives an IntervalArray its attributes so)."""
    if isinstance(state, Seq) and not state.dropped:
        dicts = [item for item in state.items if isinstance(item, Dict)]
        state = dicts[0] if len(dicts) == 1 else None
    if not isinstance(state, Dict) or state.dropped:
        return None
    known = plain(state)
    return next((known.get(key) for key in keys if known.has(key)), None)


def made_ndarray(value: Sym) -> bool:
    """An array made by calling NumPy's array class (or its __new__ through copyreg), not by _reconstruct."""
    return isinstance(value, Obj) and native_class_of(value) in NDARRAY_CLASSES


def axis_length(index: Sym | None, arrays: ArrayReader, depth: int = 0) -> int:
    """How many labels an index pickled by pandas has: its data's, a range's, an interval index's left ends', or a
    MultiIndex's codes'; or a list's or tuple's, which pandas makes an index of. Anything else is unread, so the
    check fails closed: an index made by calling its class (`RangeIndex(0, 10**9)`), which pandas never writes,
    hid a Series ten thousand times longer than its values, and a DatetimeIndex, which wscan could not measure,
    hid a frame's short blocks (helper 232: both crashed pandas at repr)."""
    if isinstance(index, Seq) and index.type in ("list", "tuple"):
        return len(index.items) + index.dropped
    if not (isinstance(index, Obj) and isinstance(index.func, Global) and index.func.dotted in INDEX_HELPERS):
        raise Unread("an axis not pickled as pandas pickles an index")
    args = index.args.items if isinstance(index.args, Seq) else []
    fields = args[1] if len(args) > 1 else None
    if not isinstance(fields, Dict) or fields.dropped:
        raise Unread("an axis whose fields the stream computes")
    data = get(fields, "data")
    if data is not None:
        return _data_length(data, arrays, depth)
    left = get(fields, "left")
    if left is not None and depth < MAX_INDEX_DEPTH:  # an IntervalIndex: pandas checks right against left
        return axis_length(left, arrays, depth + 1)
    ends = [get(fields, name) for name in ("start", "stop", "step")]
    numbers = [end.value for end in ends if isinstance(end, Const) and type(end.value) is int]
    if len(numbers) == 3:
        start, stop, step = (int(number) for number in numbers)
        if step == 0:
            raise Invalid("a range axis of step 0")
        return len(range(start, stop, step))
    codes = get(fields, "codes")
    if isinstance(codes, Seq) and codes.items and not codes.dropped:
        shape = arrays.shape(codes.items[0])
        if len(shape) == 1:
            return shape[0]
    raise Unread("an axis wscan cannot measure")


def _data_length(data: Sym, arrays: ArrayReader, depth: int = 0) -> int:
    """How long an index's data is, read as `_values_shape` reads values; an index's data has one dimension."""
    shape = values_shape(data, arrays, depth)
    if len(shape) != 1:
        raise Invalid(f"an axis of {len(shape)} dimensions")
    return shape[0]


def shape_of(value: Sym, arrays: ArrayReader) -> tuple[int, ...] | None:
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
