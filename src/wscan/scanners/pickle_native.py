"""scikit-learn's compiled models in a pickle, recorded as the stream builds them for `pickle_native_checks`.

Why: scikit-learn restores some models' native state (neighbor trees, decision trees, histogram boosting) from
pickled arrays and then indexes memory with their values unchecked; `pickle_native_checks` reads those arrays once
the stream ends. Recording happens at each BUILD, with the state as it was then (a dict's items copied: the model
keeps what it was given, whatever the stream does to the dict afterwards). This module holds no NumPy: every scan
imports it, and NumPy is imported only when a stream restored one of these models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wscan.scanners.pickle_values import (
    _ARRAY_REBUILDERS,
    MAX_NATIVE_RECORDED,
    Const,
    Dict,
    Global,
    NativeStates,
    Obj,
    Restored,
    Seq,
    Sym,
)

_NEIGHBORS = ("sklearn.neighbors._kd_tree", "sklearn.neighbors._ball_tree", "sklearn.neighbors.kd_tree",
              "sklearn.neighbors.ball_tree")  # fmt: skip
# The tree classes of each neighbors module, by whether the module's tree is a ball tree: their base class
# BinaryTree is the same compiled code as KDTree or BallTree there (review 84 restored a KNN's tree as
# `_kd_tree.BinaryTree64`, which KNeighborsClassifier queried as it would its KDTree).
BINARY_TREES = {
    f"{module}.{name}{suffix}": "ball" in module
    for module in _NEIGHBORS for name in ("KDTree", "BallTree", "BinaryTree") for suffix in ("", "64", "32")
}  # fmt: skip
TREE = "sklearn.tree._tree.Tree"
PREDICTOR = "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"
NATIVE_CLASSES = frozenset({*BINARY_TREES, TREE, PREDICTOR})
HOLDERS = ("tree_", "_predictors", "estimators_")  # where an estimator keeps its trees, or its estimators
# Estimators and matrices whose own dict state compiled code indexes by: libsvm's models, SciPy's sparse matrices
# (their index arrays are never checked on load; SciPy's and scikit-learn's compiled products follow them).
SVMS = frozenset({
    f"sklearn.svm.{module}.{name}"
    for module in ("_classes", "classes") for name in ("SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM")
})  # fmt: skip
# SciPy's sparse matrices by the format their class stores, whatever the class's spelling: the matrix, the array,
# and their base class, which is the same code (review 85 restored a CSR matrix as `_csr_base`). The other classes of
# scipy.sparse (the abstract bases) are no matrix any writer pickles.
SPARSE_FORMATS = ("csr", "csc", "coo", "bsr", "dia", "lil", "dok")
SPARSE = {
    f"scipy.sparse.{prefix}{kind}.{name}": kind
    for prefix in ("_", "") for kind in SPARSE_FORMATS for name in (f"{kind}_matrix", f"{kind}_array", f"_{kind}_base")
}  # fmt: skip
SPARSE_ABSTRACT = frozenset({
    "scipy.sparse._base._spbase", "scipy.sparse._base.sparray", "scipy.sparse._matrix.spmatrix",
    "scipy.sparse._compressed._cs_matrix", "scipy.sparse._data._data_matrix", "scipy.sparse._data._minmax_mixin",
    "scipy.sparse._index.IndexMixin",
})  # fmt: skip
FITPACK_SPLINES = frozenset({
    f"scipy.interpolate._fitpack2.{name}"
    for name in ("UnivariateSpline", "InterpolatedUnivariateSpline", "LSQUnivariateSpline")
})  # fmt: skip
# SciPy objects whose compiled evaluation trusts the sizes of their arrays, which only their __init__ checks.
SCIPY_OBJECTS = frozenset({
    "scipy.interpolate._bsplines.BSpline", "scipy.interpolate._rgi.RegularGridInterpolator",
    "scipy.stats._kde.gaussian_kde", *FITPACK_SPLINES,
})  # fmt: skip
# Estimators whose arrays compiled code reads by the sizes of others: k-means' centers (their columns), HDBSCAN's
# single-linkage tree (its node ids), PyOD's HBOS histograms (their bins, read by numba).
KMEANS = frozenset({"sklearn.cluster._kmeans.KMeans", "sklearn.cluster._kmeans.MiniBatchKMeans",
                    "sklearn.cluster._bisect_k_means.BisectingKMeans"})  # fmt: skip
HDBSCAN = "sklearn.cluster._hdbscan.hdbscan.HDBSCAN"
# The hdbscan package's clusterers: their condensed and single-linkage trees and prediction data
# (`pickle_native_hdbscan`).
PACKAGE_HDBSCAN = "hdbscan.hdbscan_.HDBSCAN"
ROBUST_SINGLE_LINKAGE = "hdbscan.robust_single_linkage_.RobustSingleLinkage"
HDBSCAN_CLUSTERERS = frozenset({PACKAGE_HDBSCAN, ROBUST_SINGLE_LINKAGE})
HBOS = "pyod.models.hbos.HBOS"
NEIGHBOR_CLASSIFIERS = frozenset({"sklearn.neighbors._classification.KNeighborsClassifier",
                                  "sklearn.neighbors._classification.RadiusNeighborsClassifier"})  # fmt: skip
# Every estimator that keeps its training data as `_fit_X` and queries it with compiled brute-force reductions.
NEIGHBORS = NEIGHBOR_CLASSIFIERS | {
    "sklearn.neighbors._regression.KNeighborsRegressor", "sklearn.neighbors._regression.RadiusNeighborsRegressor",
    "sklearn.neighbors._unsupervised.NearestNeighbors", "sklearn.neighbors._lof.LocalOutlierFactor",
    "sklearn.neighbors._graph.KNeighborsTransformer", "sklearn.neighbors._graph.RadiusNeighborsTransformer",
}  # fmt: skip
# Gradient-boosting libraries' boosters: their state holds the model, which their compiled loader reads on unpickling.
LIGHTGBM_BOOSTER = "lightgbm.basic.Booster"
XGBOOST_BOOSTER = "xgboost.core.Booster"
# What a LightGBM Booster trained on from another model (`init_model`) keeps of it: its `__del__` frees the C
# Booster its state's handle names, and its `__init__` queries it, so it is state-only, and its state is checked.
LIGHTGBM_PREDICTOR = "lightgbm.basic._InnerPredictor"
# LightGBM's scikit-learn wrappers: their predict passes the thread count their state asks for to OpenMP as it is.
LIGHTGBM_ESTIMATORS = frozenset(
    f"lightgbm.sklearn.{name}" for name in ("LGBMModel", "LGBMClassifier", "LGBMRegressor", "LGBMRanker")
)
# CatBoost's models: `__setstate__` hands the state's `__model` bytes to CatBoost's loader.
CATBOOST_MODELS = frozenset(
    f"catboost.core.{name}" for name in ("CatBoost", "CatBoostClassifier", "CatBoostRegressor", "CatBoostRanker")
)
BOOSTERS = frozenset({LIGHTGBM_BOOSTER, XGBOOST_BOOSTER, LIGHTGBM_PREDICTOR, *LIGHTGBM_ESTIMATORS, *CATBOOST_MODELS})
# NumPy's random states and bit generators, by what makes them in a pickle (NumPy 2's and 1's helpers, the classes):
# their state setters take the MT19937 key position and Philox's buffer position unchecked, and drawing a number then
# indexes by them (helper 226: a RandomState whose pos is 2^31 - 1 crashed predict)
RANDOM_STATES = frozenset({
    "numpy.random._pickle.__randomstate_ctor", "numpy.random.__RandomState_ctor", "numpy.random.mtrand.RandomState",
    "numpy.random._pickle.__bit_generator_ctor", "numpy.random.__bit_generator_ctor",
    "numpy.random._mt19937.MT19937", "numpy.random._philox.Philox",
})
CHECKED = (SVMS | set(SPARSE) | SPARSE_ABSTRACT | SCIPY_OBJECTS | KMEANS | BOOSTERS | HDBSCAN_CLUSTERERS
           | RANDOM_STATES | {HDBSCAN, HBOS, *NEIGHBORS})


# pandas' block managers (a DataFrame's, a Series'): their blocks' placements and lengths are what compiled code
# indexes by (`pickle_native_pandas`) ...
SINGLE_BLOCK_MANAGER = "pandas.core.internals.managers.SingleBlockManager"
BLOCK_MANAGERS = frozenset({"pandas.core.internals.managers.BlockManager", SINGLE_BLOCK_MANAGER})
# ... and the objects whose codes it takes labels by, recorded alike: Categoricals (given their codes by a BUILD),
# MultiIndexes (by _new_Index's fields, or a BUILD).
CATEGORICALS = frozenset({"pandas.Categorical", "pandas.core.arrays.categorical.Categorical"})
MULTI_INDEXES = frozenset({"pandas.MultiIndex", "pandas.core.indexes.multi.MultiIndex"})
# ... and nullable arrays, whose mask compiled code reads beside their values (given both by a BUILD).
MASKED_ARRAYS = frozenset({
    "pandas.arrays.IntegerArray", "pandas.core.arrays.integer.IntegerArray",
    "pandas.arrays.FloatingArray", "pandas.core.arrays.floating.FloatingArray",
    "pandas.arrays.BooleanArray", "pandas.core.arrays.boolean.BooleanArray",
})  # fmt: skip
# ... sparse arrays, whose stored values compiled arithmetic reads one per point of their index, and date, time-delta
# and period arrays, whose ndarray's dtype compiled code takes a unit from (helper 237).
SPARSE_ARRAYS = frozenset({"pandas.arrays.SparseArray", "pandas.core.arrays.sparse.array.SparseArray",
                           "pandas.core.arrays.sparse.SparseArray"})  # fmt: skip
TIME_ARRAYS = frozenset({
    "pandas.arrays.DatetimeArray", "pandas.core.arrays.datetimes.DatetimeArray",
    "pandas.arrays.TimedeltaArray", "pandas.core.arrays.timedeltas.TimedeltaArray",
    "pandas.arrays.PeriodArray", "pandas.core.arrays.period.PeriodArray",
})  # fmt: skip
# ... and the 52-53-week fiscal year offsets, whose month and weekday compiled calendar code takes table entries by
# (helper 243: a startingMonth of 100,000,000, which their constructor takes, crashed pandas 1.5 to 3.1 at
# rollforward, date_range and asfreq).
FISCAL_OFFSETS = frozenset({
    "pandas._libs.tslibs.offsets.FY5253", "pandas._libs.tslibs.offsets.FY5253Quarter",
    "pandas.tseries.offsets.FY5253", "pandas.tseries.offsets.FY5253Quarter",
})  # fmt: skip
# ... and any index given a state (copyreg's reconstructor and a BUILD, which pandas never writes): what it caches is
# read before its data (helper 245: a RangeIndex caching 3 values over a range of 10^7 crashed `astype(str)`, an
# IntervalIndex caching 2,000,000 ends over 5 intervals `reindex`), and pandas never writes a cache.
PANDAS_INDEX = re.compile(r"pandas\.(?:core\.indexes\.[a-z_]+\.)?[A-Za-z0-9]*Index")
PANDAS_CHECKED = (BLOCK_MANAGERS | CATEGORICALS | MULTI_INDEXES | MASKED_ARRAYS | SPARSE_ARRAYS | TIME_ARRAYS
                  | FISCAL_OFFSETS)  # fmt: skip
NEWOBJ_HELPERS = frozenset({"copyreg.__newobj__", "copyreg.__newobj_ex__"})  # cls.__new__(cls, *args)
NDARRAY_BACKED = "pandas._libs.arrays.__pyx_unpickle_NDArrayBacked"  # how pandas pickles a Categorical
NEW_INDEX = "pandas.core.indexes.base._new_Index"  # ... and any index
# pandas' index helpers, each given the class to make first (any class: helper 236 made a Categorical and a
# MultiIndex with the date and time-delta ones)
INDEX_HELPERS = frozenset({
    NEW_INDEX, "pandas.core.indexes.datetimes._new_DatetimeIndex", "pandas.core.indexes.timedeltas._new_TimedeltaIndex",
    "pandas.core.indexes.period._new_PeriodIndex", "pandas.core.indexes.interval._new_IntervalIndex",
})  # fmt: skip
INTERVAL_MIXIN = "pandas._libs.interval.__pyx_unpickle_IntervalMixin"  # ... and an IntervalArray
CLASS_FIRST = INDEX_HELPERS | {NDARRAY_BACKED, INTERVAL_MIXIN}  # helpers given the class to make first
# What calls make them: the classes, copyreg's helpers (a manager's __new__ takes its blocks), pandas' helpers.
PANDAS_MAKERS = BLOCK_MANAGERS | FISCAL_OFFSETS | NEWOBJ_HELPERS | CLASS_FIRST
# statsmodels' Cython state-space modules: every object of their classes a stream makes, however, is checked for the
# sizes their compiled code trusts (`pickle_native_statsmodels`), and the Python Initialization, whose blocks index
# their arrays.
STATESPACE_MODULES = tuple(f"statsmodels.tsa.statespace._{module}." for module in (
    "representation", "initialization", "kalman_filter", "kalman_smoother", "simulation_smoother",
    "cfa_simulation_smoother"))  # fmt: skip
PY_INITIALIZATION = "statsmodels.tsa.statespace.initialization.Initialization"
FROMBUFFER_MAKERS = frozenset({"numpy.core.numeric._frombuffer", "numpy._core.numeric._frombuffer"})


def pandas_class(made: Obj) -> str:
    """The pandas class an object is, seen through the helpers pandas pickles it with."""
    if isinstance(made.func, Global) and made.func.dotted in CLASS_FIRST:
        first = made.args.items[0] if isinstance(made.args, Seq) and made.args.items else None
        return first.dotted if isinstance(first, Global) else ""
    return native_class_of(made)


def record_pandas(native: NativeStates, target: Obj, at: int) -> None:
    """Keep a pandas object (PANDAS_CHECKED), made by a call or given a state, for the check at the stream's end."""
    if len(native.pandas) < MAX_NATIVE_RECORDED:
        native.pandas.append((at, target))
    else:
        native.dropped += 1


def record_statespace(native: NativeStates, made: Obj, at: int) -> None:
    """Keep an object of statsmodels' state-space classes, made by a call or copyreg, for the check at the end."""
    if native_class_of(made).startswith(STATESPACE_MODULES):
        if len(native.statespace) < MAX_NATIVE_RECORDED:
            native.statespace.append((at, made))
        else:
            native.dropped += 1


def record_buffer(native: NativeStates, data: Sym, array: Sym) -> None:
    """An array backed by `data` (its `_reconstruct` state's bytes, or `_frombuffer`'s buffer): the bytes first, to
    keep them alive, then up to two arrays."""
    arrays = native.buffers.setdefault(id(data), [data])
    if len(arrays) <= 2:
        arrays.append(array)


def shared_buffer(native: NativeStates, data: object) -> bool:
    """Whether two arrays of the stream are built on these bytes (`record_buffer`)."""
    return len(native.buffers.get(id(data), ())) > 2


def native_class(target: Obj) -> str | None:
    """The native class `target` is, by what made it (the neighbors' `newObj(cls)` helper, or the class)."""
    name = native_class_of(target)
    return name if name in NATIVE_CLASSES else None


def record(native: NativeStates, target: Obj, state: Sym, at: int) -> None:
    """Keep a BUILD's state if it is a native class's, an estimator's that holds trees, or a checked object's."""
    made_as = native_class_of(target)
    if made_as in _ARRAY_REBUILDERS and isinstance(state, Seq) and len(state.items) == 5:
        record_buffer(native, state.items[4], target)
    if made_as.startswith(STATESPACE_MODULES) or made_as == PY_INITIALIZATION:  # __setstate__ takes the items then
        if made_as == PY_INITIALIZATION and id(target) not in native.statespace_states:
            native.statespace.append((at, target))  # made with copyreg or NEWOBJ, as plain classes pickle
        frozen_state = Dict(list(state.items), state.dropped) if isinstance(state, Dict) else state
        native.statespace_states.setdefault(id(target), []).append(frozen_state)
        return
    made = pandas_class(target)
    if made in PANDAS_CHECKED or PANDAS_INDEX.fullmatch(made):
        record_pandas(native, target, at)
        return
    cls = native_class(target)
    if cls is None:
        made = native_class_of(target)
        state_dict = (
            attributes(state) if made == LIGHTGBM_PREDICTOR
            else random_state_dict(state) if made in RANDOM_STATES
            else dict_state(state)
        )
        held = state_dict is not None and any(state_dict.get(key) is not None for key in HOLDERS)
        if state_dict is not None and (held or native_class_of(target) in CHECKED):
            if len(native.owners) < MAX_NATIVE_RECORDED:
                native.owners.append((at, target, Dict(list(state_dict.items))))
            else:
                native.dropped += 1
        return
    if len(native.restored) >= MAX_NATIVE_RECORDED:
        native.dropped += 1
        return
    frozen: Sym = state
    if isinstance(state, Seq):
        frozen = Seq(state.type, list(state.items), state.dropped)
    elif isinstance(state, Dict):
        frozen = Dict(list(state.items), state.dropped)
    native.restored.append(Restored(at, cls, target, frozen))


def random_state_dict(state: Sym) -> Dict | None:
    """A random state as the dict NumPy's setters read: the dict NumPy 1.17 and later write, or the tuple older ones
    wrote, ('MT19937', key, pos, has_gauss, gauss), which RandomState.set_state still takes, as the same dict."""
    if isinstance(state, Seq) and state.type == "tuple" and len(state.items) >= 3:
        return Dict([(Const("state"), Dict([(Const("key"), state.items[1]), (Const("pos"), state.items[2])]))])
    return dict_state(state)


def dict_state(state: Sym | None) -> Dict | None:
    """The dict part of a BUILD state: the dict, or the first of (dict, slots)."""
    if isinstance(state, Seq) and state.type == "tuple" and len(state.items) == 2:
        state = state.items[0]
    return state if isinstance(state, Dict) else None




def attributes(state: Sym) -> Dict:
    """Every attribute a BUILD sets on an object without `__setstate__`: its dict's and its slots' (both are set
    on the object), as one dict; a part that is neither a dict nor None leaves the result marked incomplete."""
    parts = state.items if isinstance(state, Seq) and state.type == "tuple" and len(state.items) == 2 else [state]
    merged = Dict()
    for part in parts:
        if isinstance(part, Dict):
            merged.items += part.items
            merged.dropped += part.dropped
        elif not (isinstance(part, Const) and part.value is None):
            merged.dropped += 1
    return merged


RECONSTRUCTORS = ("copyreg._reconstructor", "copyreg.__newobj__", "copyreg.__newobj_ex__")  # each given the class first


def native_class_of(value: Sym | None) -> str:
    """The class a value was made of, by its maker (scikit-learn's `newObj(cls)` helpers, copyreg's), for reports."""
    if isinstance(value, Const):
        return repr(value.value)[:40]
    if isinstance(value, Global):
        return value.dotted
    if not isinstance(value, Obj) or not isinstance(value.func, Global):
        return type(value).__name__ if value is not None else "nothing"
    func = value.func
    if func.name == "newObj" or func.dotted in RECONSTRUCTORS:
        first = value.args.items[0] if isinstance(value.args, Seq) and value.args.items else None
        return first.dotted if isinstance(first, Global) else "a computed class"
    return func.dotted


@dataclass(frozen=True, slots=True)
class JoblibData:
    """Where joblib reads a wrapper's array from: its attributes at its BUILD, and the raw bytes after it."""

    wrapper: Obj  # kept alive, so its id is never another's
    shape: Sym | None
    dtype: Sym | None
    order: Sym | None
    start: int
    length: int


@dataclass(frozen=True, slots=True)
class JoblibObjects:
    """An object array joblib pickles in a nested pickle after its wrapper: its shape, and what that pickle made."""

    wrapper: Obj
    shape: Sym | None
    made: Sym | None
