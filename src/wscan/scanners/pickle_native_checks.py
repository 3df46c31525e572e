"""scikit-learn's compiled models, checked for index arrays their compiled code would follow out of bounds.

Why: scikit-learn restores some models' native state from pickled arrays and then indexes memory with their values
unchecked (`boundscheck(False)`). A file that imports nothing but scikit-learn and NumPy, with one index changed,
crashes `predict()` or reads and writes outside the arrays (memory corruption, not only a crash):

- neighbors' KDTree and BallTree (KNeighbors*, RadiusNeighbors*, LocalOutlierFactor, KernelDensity, PyOD's KNN and
  LOF): `idx_array` values index the data's rows; each node's `idx_start:idx_end` indexes `idx_array`; a node not
  marked a leaf has children at 2i+1 and 2i+2; `node_bounds` holds a row per node.
- trees' `Tree` (decision trees, forests, gradient boosting, isolation forests): a node's children index the node
  array, its feature indexes a row of X.
- histogram gradient boosting's `TreePredictor`: the same for its own node records.
- libsvm's models (support indices, class counts, coefficient sizes), k-means' centers, HDBSCAN's single-linkage tree,
  neighbors classifiers' encoded labels, PyOD's HBOS histograms; SciPy's objects are `pickle_native_scipy`'s.

Each BUILD of such a class is recorded with its state as it was then (`pickle_native.record`). Once the stream ends
(`check`), each state's arrays are read (`pickle_arrays`) and checked against the invariants every file
scikit-learn writes keeps; a tree's feature indices against the number of features of the estimators that hold it
(`n_features_in_`, up through ensembles' `estimators_`), which is what X is checked against before the tree reads it.
An array that cannot be read, a state of another shape or a limit passed is reported as unverified, never passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import numpy as np

from wscan.limits import BudgetExceeded
from wscan.scanners import catboost_model, lightgbm_model, pickle_native_hdbscan, pickle_native_scipy, xgboost_model
from wscan.scanners.booster_common import Malformed
from wscan.scanners.pickle_arrays import ArrayReader, Unread, const_shape
from wscan.scanners.pickle_arrow import BYTEARRAY
from wscan.scanners.pickle_native import (
    BINARY_TREES,
    BOOSTERS,
    CATBOOST_MODELS,
    HBOS,
    HDBSCAN,
    HDBSCAN_CLUSTERERS,
    KMEANS,
    LIGHTGBM_BOOSTER,
    LIGHTGBM_ESTIMATORS,
    LIGHTGBM_PREDICTOR,
    NEIGHBOR_CLASSIFIERS,
    NEIGHBORS,
    RANDOM_STATES,
    SCIPY_OBJECTS,
    SPARSE,
    SPARSE_ABSTRACT,
    SVMS,
    TREE,
    XGBOOST_BOOSTER,
    dict_state,
    native_class_of,
    pandas_class,
)
from wscan.scanners.pickle_native_common import Invalid, int_values, integers, outside, scalar_number
from wscan.scanners.pickle_native_pandas import check_object
from wscan.scanners.pickle_native_statsmodels import StatespaceChecks
from wscan.scanners.pickle_ops import LongBytes
from wscan.scanners.pickle_values import (
    MAX_NATIVE_RECORDED,
    Const,
    Dict,
    Global,
    NativeStates,
    Obj,
    Restored,
    Seq,
    Sym,
    _const_int,
    _is_none,
)

MAX_OWNER_DEPTH = 8  # ensembles of ensembles followed down to their trees
FEATURE_COUNTS = ("n_features_in_", "n_features_")  # what an estimator checks X's columns against
MAX_THREADS = 4096  # OpenMP threads a k-means model may ask for
MAX_BISECTING_NODES = 100_000  # nodes of a bisecting k-means tree walked
BITSET_WORDS = 8  # a categorical split's bitset: 256 bits in uint32 words
KIND = "pickle.native_index"
BOOSTER_KIND = "pickle.booster_model"  # a boosting library's model text or bytes (`lightgbm_model`, `xgboost_model`)
METRICS = "sklearn.metrics._dist_metrics"


T = TypeVar("T")
Found = tuple[int, str, int, dict[str, str]]  # (which stream, kind, offset, attributes)


@dataclass(frozen=True, slots=True)
class Holder:
    """Where a tree is used: the fewest features X has there, and the state of the estimator that holds it (None:
    one of several, past what the machine kept of their lists)."""

    features: int
    state: Dict | None
    direct: bool = True  # the estimator holding it says how many features X has (its own constant count)


def check(
    streams: list[NativeStates], arrays: ArrayReader, check_time: Callable[[], None] | None = None
) -> list[Found]:
    """Each recorded native state or estimator found out of bounds or unverified, as events of the stream (by index)
    that restored it. The streams are read together: joblib pickles an object array (a forest's trees) in a nested
    stream of its own."""
    found: list[Found] = []
    for index, native in enumerate(streams):
        if native.dropped:
            detail = f"more than {MAX_NATIVE_RECORDED:,} of them, the rest unverified"
            found.append((index, KIND, 0, {"callable": "scikit-learn models", "detail": detail}))
    owners = [(index, *owner) for index, native in enumerate(streams) for owner in native.owners]
    holders, spare = _holders([(owner, state) for _, _, owner, state in owners], arrays)
    tick = check_time or (lambda: None)  # the file's deadline: checks of many models can take long
    for index, offset, owner, state in owners:
        tick()
        cls = native_class_of(owner)
        kind = BOOSTER_KIND if cls in BOOSTERS else KIND
        _report(found, index, offset, cls, partial(_estimator, cls, state, arrays, tick), kind)
    for index, native in enumerate(streams):
        checked: set[int] = set()  # an object a call made and a BUILD then gave a state is recorded twice
        for offset, made in native.pandas:
            if id(made) not in checked:
                checked.add(id(made))
                tick()
                _report(found, index, offset, pandas_class(made), partial(check_object, made, arrays))
    for index, native in enumerate(streams):
        statespace = StatespaceChecks(arrays, native)
        for offset, made in sorted(native.statespace, key=lambda item: item[0]):
            tick()
            cls = native_class_of(made)
            _report(found, index, offset, cls, partial(statespace.run, cls, made))
    outcomes: Outcomes = {}
    for index, native in enumerate(streams):
        for item in native.restored:
            tick()
            parts = _Arrays(arrays, item)
            holder = holders.get(id(item.target), spare)
            if item.cls in BINARY_TREES:
                run = partial(_binary_tree, parts, BINARY_TREES[item.cls])
            elif item.cls == TREE:
                run = partial(_tree, parts, item.target, holder)
            else:
                run = partial(_predictor, parts, holder)
            reach = None if holder is None else (holder.features, holder.direct, id(holder.state))
            key = (item.cls, _identity(item.state), _identity(item.target.args), reach)
            _report(found, index, item.offset, item.cls, partial(_once, outcomes, key, run))
    return found


Outcomes = dict[tuple[object, ...], Exception | None]


def _once(outcomes: Outcomes, key: tuple[object, ...], run: Callable[[], None]) -> None:
    """Run a check once per distinct state: review 86 gave 60,000 Trees one deep node array, each checked anew
    (330 s)."""
    if key not in outcomes:
        try:
            run()
            outcomes[key] = None
        except (Invalid, Unread) as exc:
            outcomes[key] = exc
    outcome = outcomes[key]
    if outcome is not None:
        raise outcome


def _identity(value: Sym | None) -> object:
    """What a state is made of, for `_once`: constants by value, other parts by identity (they are kept alive by the
    recorded states, so an identity is never reused)."""
    if isinstance(value, Const):
        return ("=", value.value) if isinstance(value.value, int | float | str | bool | None) else ("@", id(value))
    if isinstance(value, Seq) and len(value.items) <= 64:
        return (value.type, value.dropped, *(_identity(item) for item in value.items))
    if isinstance(value, Dict) and len(value.items) <= 64:
        return ("dict", value.dropped, *((_identity(k), _identity(v)) for k, v in value.items))
    return ("@", id(value))


def _report(
    found: list[Found], index: int, offset: int, cls: str, run: Callable[[], None], kind: str = KIND
) -> None:
    """Run one check: what it finds, or that it could not finish, is the object's finding (fail closed)."""
    try:
        run()
    except (Invalid, Malformed) as exc:
        found.append((index, kind, offset, {"callable": cls, "detail": str(exc)}))
    except Unread as exc:
        found.append((index, kind, offset, {"callable": cls, "detail": f"arrays wscan cannot check ({exc})"}))
    except BudgetExceeded:
        raise  # the file's limit: the scan reports it
    except (ArithmeticError, LookupError, TypeError, ValueError, MemoryError) as exc:
        detail = f"arrays wscan cannot check ({type(exc).__name__} reading them)"
        found.append((index, kind, offset, {"callable": cls, "detail": detail}))


class _Arrays:
    """A recorded state's parts as BUILD gave them, and its arrays' values (an array is built before a model takes
    it, or the load fails; building or changing it afterwards is reported on its own, WS-PKL-018 and WS-PKL-035)."""

    def __init__(self, reader: ArrayReader, item: Restored) -> None:
        self.reader = reader
        self.item = item

    def items(self, sizes: tuple[int, ...]) -> list[Sym]:
        state = self.item.state
        if not (isinstance(state, Seq) and state.type == "tuple" and not state.dropped and len(state.items) in sizes):
            raise Unread("a state scikit-learn does not write")
        return state.items

    def get(self, key: str) -> Sym | None:
        state = dict_state(self.item.state)
        if state is None or state.dropped:
            raise Unread("a state scikit-learn does not write")
        return state.get(key)

    def shape(self, value: Sym | None, what: str) -> tuple[int, ...]:
        return _named(self.reader.shape, value, what)

    def array(self, value: Sym | None, what: str) -> np.ndarray:
        return _named(self.reader.values, value, what)


def _named(read: Callable[[Sym], T], value: Sym | None, what: str) -> T:
    """What `read` makes of a state's part, an unread part named in the report."""
    if value is None:
        raise Unread(f"no {what}")
    try:
        return read(value)
    except Unread as exc:
        raise Unread(f"{what}: {exc}") from None


# Record layouts as scikit-learn writes them: (name, offset) per field, in order. Its compiled code reads a record
# by position, never by name: Cython's typed memoryviews by offset (neighbor trees' NodeData, HDBSCAN's linkage),
# and `astype` to the expected dtype by field order (a Tree's nodes, TreePredictor's). wscan reads by name, so the
# names must be those, in that order (review 84 swapped two names: wscan read a leaf, the query walked a billion
# rows), and for the memoryviews at those offsets.
NODE_DATA = (("idx_start", 0), ("idx_end", 8), ("is_leaf", 16), ("radius", 24))
HIERARCHY = (("left_node", 0), ("right_node", 8), ("value", 16), ("cluster_size", 24))
_TREE_FIELDS = ("left_child", "right_child", "feature", "threshold", "impurity", "n_node_samples",
                "weighted_n_node_samples")  # fmt: skip
TREE_NODES = (  # scikit-learn 1.3 and later; before it, without missing_go_to_left
    tuple((name, 8 * index) for index, name in enumerate((*_TREE_FIELDS, "missing_go_to_left"))),
    tuple((name, 8 * index) for index, name in enumerate(_TREE_FIELDS)),
)
PREDICTOR_NODES = tuple(zip(
    ("value", "count", "feature_idx", "num_threshold", "missing_go_to_left", "left", "right", "gain", "depth",
     "is_leaf", "bin_threshold", "is_categorical", "bitset_idx"),
    (0, 8, 12, 20, 28, 29, 33, 37, 45, 49, 50, 51, 52), strict=True,
))  # fmt: skip


def _layout(
    array: np.ndarray, what: str, layouts: tuple[tuple[tuple[str, int], ...], ...], by_offset: bool = False
) -> None:
    """The record's fields are one of `layouts`' names in order (and at their offsets, where the compiled code
    reads by offset), so that what wscan reads by name is what scikit-learn reads by position."""
    names = array.dtype.names or ()
    fields = array.dtype.fields
    offsets = tuple(int(fields[name][1]) for name in names) if fields is not None else ()
    for layout in layouts:
        if names == tuple(name for name, _ in layout) and (not by_offset or offsets == tuple(o for _, o in layout)):
            return
    raise Invalid(f"{what} records laid out as {list(zip(names, offsets, strict=True))[:6]}, not as scikit-learn "
                  "writes them (its compiled code reads fields by position)")


def _binary_tree(state: _Arrays, ball: bool) -> None:
    """KDTree/BallTree state: (data, idx_array, node_data, node_bounds, leaf_size, n_levels, n_nodes, n_trims,
    n_leaves, n_splits, n_calls, dist_metric[, sample_weight])."""
    items = state.items((12, 13))
    data = state.shape(items[0], "data")
    idx = state.array(items[1], "idx_array")
    nodes = state.array(items[2], "node_data")
    bounds = state.shape(items[3], "node_bounds")
    if len(data) != 2 or idx.ndim != 1 or nodes.ndim != 1:
        raise Invalid(f"data of {len(data)}, idx_array of {idx.ndim} and node_data of {nodes.ndim} dimensions")
    samples, features = data
    integers(idx, "idx_array")
    _layout(nodes, "node_data", (NODE_DATA,), by_offset=True)
    integers(nodes, "node_data", ("idx_start", "idx_end", "is_leaf"))
    bad = outside(idx, 0, samples)
    if bad is not None:
        raise Invalid(f"idx_array value {bad} outside the data's {samples} rows")
    if len(idx) != samples:
        raise Invalid(f"idx_array of {len(idx)} items for {samples} rows")
    count = len(nodes)
    n_nodes = _const_int(items[6])
    if n_nodes != count or not count:
        raise Invalid(f"n_nodes {n_nodes} for {count} nodes")
    _node_ranges(nodes, samples)
    expected = (1 if ball else 2, count, features)
    if bounds != expected:
        raise Invalid(f"node_bounds of shape {bounds}, not {expected}")
    leaf_size = _const_int(items[4])
    if leaf_size is None or leaf_size < 1:
        raise Invalid(f"leaf_size {leaf_size}")
    _metric(state, items[11], features)
    if len(items) == 13 and not _is_none(items[12]):
        weights = state.shape(items[12], "sample_weight")
        if weights != (samples,):
            raise Invalid(f"sample_weight of shape {weights} for {samples} rows")


def _node_ranges(nodes: np.ndarray, samples: int) -> None:
    """Node 0 holds every row; an inner node's children are 2i+1 and 2i+2 and split its range in half, as
    scikit-learn builds them (query_radius copies whole ranges into a buffer of one slot per row: ranges that
    overlap write past it). Nodes no walk from node 0 reaches are never read."""
    starts, ends, count = nodes["idx_start"], nodes["idx_end"], len(nodes)
    if (int(starts[0]), int(ends[0])) != (0, samples):
        raise Invalid(f"node 0 holding rows {int(starts[0])} to {int(ends[0])} of {samples}")
    frontier = np.array([0])
    while frontier.size:
        inner = frontier[nodes["is_leaf"][frontier] == 0]
        if not inner.size:
            return
        if 2 * int(inner.max()) + 2 >= count:
            raise Invalid(f"node {int(inner.max())} not a leaf, with children past the {count} nodes")
        middle = starts[inner] + (ends[inner] - starts[inner]) // 2
        left, right = 2 * inner + 1, 2 * inner + 2
        split = (starts[left] == starts[inner]) & (ends[left] == middle)
        split &= (starts[right] == middle) & (ends[right] == ends[inner])
        if not bool(split.all()):
            at = int(inner[np.flatnonzero(~split)[0]])
            raise Invalid(f"node {at}'s children not splitting its rows in half")
        frontier = np.concatenate([left, right])


def _metric(state: _Arrays, metric: Sym, features: int) -> None:
    """The tree's DistanceMetric: one of scikit-learn's (None crashes the query), its weights and matrix as long as
    the rows it measures (each metric's rdist reads them by the data's column, unchecked)."""
    cls = native_class_of(metric)
    module, _, name = cls.rpartition(".")
    if module != METRICS or not isinstance(metric, Obj):
        raise Invalid(f"a distance metric made by {cls}")
    base = name.removesuffix("64").removesuffix("32")
    if base == "PyFuncDistance":
        return  # the function it calls is judged as a call; it reads no weights
    items = metric.state.items if isinstance(metric.state, Seq) and not metric.state.dropped else []
    if len(items) != 3:
        raise Unread(f"{name}'s state")
    vec = state.shape(items[1], f"{name}'s weights")
    mat = state.shape(items[2], f"{name}'s matrix")
    weights = {"SEuclideanDistance": (features,), "WMinkowskiDistance": (features,), "MinkowskiDistance": (0, features)}
    if base in weights and (len(vec) != 1 or vec[0] not in weights[base]):
        raise Invalid(f"{name} with {vec} weights for {features} features")
    if base == "MahalanobisDistance" and mat != (features, features):
        raise Invalid(f"{name} with a {mat} matrix for {features} features")
    if base == "HaversineDistance" and features != 2:
        raise Invalid(f"{name} over {features} features (it reads two)")


def _tree(state: _Arrays, target: Obj, holder: Holder | None) -> None:
    """Tree(n_features, n_classes, n_outputs) with state {max_depth, node_count, nodes, values}: node i's children
    lie after it and before node_count, each with one parent (so every walk ends), the tree no deeper than max_depth
    (decision_path's buffer), a split's feature below the features X has and the tree's own feature count
    (feature_importances_' buffer), a class count of at least one per output (the values' stride)."""
    args = target.args.items if isinstance(target.args, Seq) and not target.args.dropped else []
    n_features = _const_int(args[0]) if len(args) == 3 else None
    n_outputs = _const_int(args[2]) if len(args) == 3 else None
    if n_features is None or n_outputs is None:
        raise Unread("a feature or output count the stream computes")
    classes = state.array(args[1], "n_classes")
    integers(classes, "n_classes")
    if n_outputs < 1 or classes.shape != (n_outputs,) or outside(classes, 1, 2**31) is not None:
        raise Invalid(f"n_classes {classes.tolist()[:4]} for {n_outputs} outputs")
    nodes = state.array(state.get("nodes"), "nodes")
    node_count = _const_int(state.get("node_count") or Const(None))
    max_depth = _const_int(state.get("max_depth") or Const(None))
    if nodes.ndim != 1:
        raise Invalid(f"nodes of {nodes.ndim} dimensions")
    _layout(nodes, "nodes", TREE_NODES)
    integers(nodes, "nodes", ("left_child", "right_child", "feature"))
    if node_count is None or not 0 < node_count <= len(nodes):
        raise Invalid(f"node_count {node_count} for {len(nodes)} nodes")
    used = nodes[:node_count]
    inner = used["left_child"] != -1
    key = ("tree depth", id(state.get("nodes")), node_count)
    depth = state.reader.derived.get(key)
    if not isinstance(depth, int):  # many trees may share one node array (review 86): its shape is checked once
        _children(used["left_child"], used["right_child"], inner, node_count, leaf=-1)
        depth = state.reader.derived[key] = _depth(used["left_child"], used["right_child"], inner)
    if max_depth is None or depth > max_depth:
        raise Invalid(f"max_depth {max_depth} for a tree {depth} deep")
    if holder is None or not holder.direct:
        # A decision tree's predict checks X against its n_features_in_ only when it has one; the Tree itself
        # never does (review 84 deleted the count and split on feature 10**9).
        raise Unread("not held by an estimator that says how many features X has")
    limit = min(n_features, holder.features)
    bad = outside(used["feature"][inner], 0, limit)
    if bad is not None:
        raise Invalid(f"feature {bad} of a split, for {limit} features")


def _one_parent(left: np.ndarray, right: np.ndarray, inner: np.ndarray) -> None:
    """Each node is the child of one inner node at most: a tree, not a graph whose paths multiply."""
    children = np.concatenate([left[inner], right[inner]]).astype(np.int64)
    counts = np.bincount(children) if children.size else children
    if children.size and int(counts.max()) > 1:
        raise Invalid(f"node {int(np.flatnonzero(counts > 1)[0])} the child of two nodes")


def _depth(left: np.ndarray, right: np.ndarray, inner: np.ndarray) -> int:
    """How deep the tree is, once each node is known to have one parent at most, children after it: by pointer
    jumping, each node's distance to its root doubling its reach per round, so a tree a few thousand deep takes a
    dozen vectorised rounds, not one per level (review 86 shared a 4,000-deep node array among 20,000 trees)."""
    _one_parent(left, right, inner)
    index = np.flatnonzero(inner)
    parent = np.full(len(left), -1, dtype=np.int64)
    parent[left[index]] = index
    parent[right[index]] = index
    distance = (parent >= 0).astype(np.int64)
    for _ in range(64):
        live = np.flatnonzero(parent >= 0)
        if not live.size:
            return int(distance.max()) if len(distance) else 0
        ahead = parent[live]
        distance[live] += distance[ahead]  # both sides read before either is written: one synchronous round
        parent[live] = parent[ahead]
    raise Unread("a tree deeper than 2**64 levels")


def _children(left: np.ndarray, right: np.ndarray, inner: np.ndarray, count: int, leaf: int) -> None:
    """Each inner node's children come after it and before `count`; a leaf's are `leaf` on both sides."""
    index = np.arange(len(left))
    for side, name in ((left, "left"), (right, "right")):
        wrong = inner & ((side <= index) | (side >= count))
        if bool(np.any(wrong)):
            at = int(np.flatnonzero(wrong)[0])
            raise Invalid(f"node {at}'s {name} child {int(side[at])}, for {count} nodes")
    if leaf >= 0:
        return
    odd = ~inner & (right != leaf)
    if bool(np.any(odd)):
        at = int(np.flatnonzero(odd)[0])
        raise Invalid(f"leaf {at} with a right child {int(right[at])}")


def _predictor(state: _Arrays, holder: Holder | None) -> None:
    """TreePredictor's `nodes` records: an inner node's children after it, its feature below the estimator's
    feature count, a categorical split on a feature the estimator's bin mapper has as categorical (its row of
    known categories is found through that) and with its bitset within `raw_left_cat_bitsets`."""
    nodes = state.array(state.get("nodes"), "nodes")
    if nodes.ndim != 1 or not len(nodes):
        raise Invalid(f"nodes of shape {nodes.shape}")
    _layout(nodes, "nodes", (PREDICTOR_NODES,))
    integers(nodes, "nodes", ("left", "right", "feature_idx", "is_leaf", "is_categorical", "bitset_idx"))
    inner = nodes["is_leaf"] == 0
    _children(nodes["left"], nodes["right"], inner, len(nodes), leaf=0)
    _one_parent(nodes["left"], nodes["right"], inner)  # a DAG made partial dependence walk 2**60 paths (review 86)
    if holder is None or not holder.direct:
        raise Unread("not held by an estimator that says how many features X has")
    bad = outside(nodes["feature_idx"][inner], 0, holder.features)
    if bad is not None:
        raise Invalid(f"feature {bad} of a split, for {holder.features} features")
    categorical = inner & (nodes["is_categorical"] != 0)
    if not bool(np.any(categorical)):
        return
    bitsets = state.shape(state.get("raw_left_cat_bitsets"), "raw_left_cat_bitsets")
    rows = bitsets[0] if len(bitsets) == 2 and bitsets[1] == BITSET_WORDS else 0
    bad = outside(nodes["bitset_idx"][categorical], 0, rows)
    if bad is not None:
        raise Invalid(f"bitset {bad} of a categorical split, for bitsets of shape {bitsets}")
    if holder.state is None:
        raise Unread("a categorical split in one of several models, past what wscan keeps of their lists")
    mapper = holder.state.get("_bin_mapper")
    mapper_state = dict_state(mapper.state) if isinstance(mapper, Obj) else None
    flags = mapper_state.get("is_categorical_") if mapper_state is not None else None
    if flags is None or _is_none(flags):
        raise Invalid("a categorical split in a model whose bin mapper has no categorical features")
    known = state.array(flags, "is_categorical_")
    features = nodes["feature_idx"][categorical]
    if known.ndim != 1 or outside(features, 0, len(known)) is not None or not bool(np.all(known[features] != 0)):
        raise Invalid("a categorical split on a feature the bin mapper does not have as categorical")


def _holders(owners: list[tuple[Obj, Dict]], arrays: ArrayReader) -> tuple[dict[int, Holder], Holder | None]:
    """Where each tree is used, by the tree's id: the least `n_features_in_` of the estimators that hold it,
    through ensembles' `estimators_` (the ensemble checks X, its members are given it unchecked), and the
    estimator that holds it directly. Past what the machine keeps of a list (4,096 items: a forest of more
    trees), the members and trees not seen held take the least count of the estimators whose lists were cut
    (the second value), so a cut list never lifts a bound."""
    own: dict[int, int] = {}
    members: dict[int, list[Sym]] = {}
    cut: set[int] = set()
    subsets: dict[int, int] = {}  # bagging's and isolation forests' members: the columns of X each is given
    for owner, state in owners:
        counts = [_const_int(given) for key in FEATURE_COUNTS if (given := state.get(key)) is not None]
        known = [count for count in counts if count is not None]
        if known:
            own[id(owner)] = min([own.get(id(owner), min(known)), *known])
        held, whole = _members(state.get("estimators_"), arrays)
        if native_class_of(owner) in CHAINS:
            held, whole = [], True  # member k is given X and the first k predictions: its own count is its bound
        members.setdefault(id(owner), []).extend(held)
        if not whole:
            cut.add(id(owner))
        _subset_widths(state.get("estimators_features_"), held, whole, arrays, subsets)
    bound = dict(own)
    for _ in range(MAX_OWNER_DEPTH):  # down through ensembles of ensembles
        changed = False
        for owner_id, held in members.items():
            for member in held if owner_id in bound else ():
                least = min(bound[owner_id], bound.get(id(member), bound[owner_id]), subsets.get(id(member), 2**63))
                if bound.get(id(member)) != least:
                    bound[id(member)] = least
                    changed = True
        if not changed:
            break
    linked = {id(member) for held in members.values() for member in held}
    ensembles_cut = [bound[owner_id] for owner_id in cut if owner_id in bound]
    for owner, _ in owners if ensembles_cut else ():
        if id(owner) not in linked and id(owner) not in cut:
            bound[id(owner)] = min(bound.get(id(owner), min(ensembles_cut)), min(ensembles_cut))
    found: dict[int, Holder] = {}
    spare: list[Holder] = []
    uncounted: set[int] = set()  # trees an estimator without its own count holds: its predict checks X against nothing
    for owner, state in owners:
        trees, whole_trees = _members(state.get("tree_"), arrays)
        predictors, whole_predictors = _members(state.get("_predictors"), arrays)
        if id(owner) not in own:
            # review 86 shared one Tree between a decoy with a count and a tree without one
            uncounted.update(id(tree) for tree in trees + predictors)
        if id(owner) not in bound:
            continue
        for tree in trees + predictors:
            previous = found.get(id(tree))
            features = bound[id(owner)] if previous is None else min(previous.features, bound[id(owner)])
            found[id(tree)] = Holder(features, state, previous is None or previous.direct)
        if not (whole_trees and whole_predictors):
            spare.append(Holder(bound[id(owner)], state))
    for tree_id in uncounted & found.keys():
        found[tree_id] = Holder(found[tree_id].features, found[tree_id].state, direct=False)
    if not spare:
        return found, None
    return found, Holder(min(h.features for h in spare), spare[0].state if len(spare) == 1 else None)


def _subset_widths(
    features: Sym | None, members: list[Sym], whole: bool, arrays: ArrayReader, widths: dict[int, int]
) -> None:
    """Bagging and isolation forests give member i the columns `estimators_features_[i]` of X (an isolation
    forest without checking them against the member's count): each member's width is at most that many, the
    fewest of them where the two lists cannot be paired."""
    if features is None:
        return
    listed, complete = _features_lists(features)
    try:
        counts = [arrays.shape(item)[0] for item in listed]
    except (Unread, IndexError):
        counts = [0]  # unreadable: no column is known to be given
    if not counts:
        return
    paired = whole and complete and len(counts) == len(members)
    for index, member in enumerate(members):
        width = counts[index] if paired else min(counts)
        widths[id(member)] = min(widths.get(id(member), width), width)


def _features_lists(value: Sym) -> tuple[list[Sym], bool]:
    if isinstance(value, Seq):
        return list(value.items), not value.dropped
    return [value], False


def _members(value: Sym | None, arrays: ArrayReader, depth: int = 0) -> tuple[list[Sym], bool]:
    """The objects in a holder (itself, the items of lists and tuples of them, or an object array's items), and
    whether that is all of them."""
    if value is None:
        return [], True
    if depth > 3:
        return [], False
    if isinstance(value, Obj):
        try:
            _, items = arrays.object_shape(value)
        except Unread:
            return [value], True
        return _members(items, arrays, depth + 1)
    if isinstance(value, Seq):
        found: list[Sym] = []
        whole = not value.dropped
        for item in value.items:
            held, complete = _members(item, arrays, depth + 1)
            found.extend(held)
            whole = whole and complete
        return found, whole
    return [], True


CHAINS = frozenset({"sklearn.multioutput.ClassifierChain", "sklearn.multioutput.RegressorChain"})
GRADIENT_BOOSTING = frozenset({
    f"sklearn.ensemble.{module}.GradientBoosting{kind}"
    for module in ("_gb", "gradient_boosting") for kind in ("Classifier", "Regressor")
})  # fmt: skip
DECISION_TREES = "sklearn.tree._classes."
GB_MEMBER = "sklearn.tree._classes.DecisionTreeRegressor"
DUMMY = "sklearn.dummy.DummyClassifier"


def _estimator(cls: str, state: Dict, arrays: ArrayReader, tick: Callable[[], None]) -> None:
    """The checks of an estimator's or matrix's own dict state."""
    if cls in BOOSTERS and state.dropped:  # the key the library reads may be among the items not kept
        raise Unread(f"a state of more than {len(state.items):,} items")
    if cls == LIGHTGBM_BOOSTER:
        _lightgbm(state, arrays, tick)
    elif cls in LIGHTGBM_ESTIMATORS:
        _lightgbm_threads(state)
    elif cls == LIGHTGBM_PREDICTOR:
        _lightgbm_predictor(state)
    elif cls == XGBOOST_BOOSTER:
        _xgboost(state, arrays, tick)
    elif cls in CATBOOST_MODELS:
        _catboost(state, arrays, tick)
    elif cls in SVMS:
        _svm(cls, state, arrays)
    elif cls in SPARSE or cls in SPARSE_ABSTRACT:
        pickle_native_scipy.sparse(cls, state, arrays)
    elif cls in SCIPY_OBJECTS:
        pickle_native_scipy.scipy_object(cls, state, arrays)
    elif cls in NEIGHBORS:
        _neighbors(cls, state, arrays)
    elif cls in KMEANS:
        _kmeans(state, arrays)
    elif cls == HDBSCAN:
        _linkage(state, arrays)
    elif cls in HDBSCAN_CLUSTERERS:
        pickle_native_hdbscan.clusterer(cls, state, arrays)
    elif cls == HBOS:
        _histograms(state, arrays)
    elif cls in RANDOM_STATES:
        _random_state(state)
    else:
        _tree_holder(cls, state, arrays)


MT19937_WORDS = 624  # the key's length; pos == 624 means "regenerate before the next draw"
PHILOX_BUFFER = 4  # Philox's buffer of 64-bit outputs; buffer_pos == 4 means "refill before the next draw"


def _random_state(state: Dict) -> None:
    """NumPy's setters store the MT19937 key position and Philox's buffer position as given, and the next draw
    reads the key or the buffer at that index: each must lie within it (the end meaning "refill first")."""
    inner = state.get("state")
    if isinstance(inner, Dict) and inner.get("pos") is not None:
        _position(inner.get("pos"), MT19937_WORDS, "MT19937 key position")
    if state.get("buffer_pos") is not None:
        _position(state.get("buffer_pos"), PHILOX_BUFFER, "Philox buffer position")


def _position(value: Sym | None, end: int, what: str) -> None:
    number = _const_int(value) if value is not None else None
    if number is None:
        raise Unread(f"a {what} the stream computes")
    if not 0 <= number <= end:
        raise Invalid(f"{what} {number} outside 0..{end}: the next draw reads outside the generator's state")


def _lightgbm(state: Dict, arrays: ArrayReader, tick: Callable[[], None]) -> None:
    """A LightGBM Booster's model, the text its `__setstate__` hands the C library (`_handle`, else `handle`; no
    model when it is None)."""
    model = state.get("_handle") if state.has("_handle") else state.get("handle")
    if model is None or _is_none(model):
        return
    lightgbm_model.check(arrays.text(model).encode("utf-8", "surrogatepass"), tick)


# The attributes an _InnerPredictor's `__del__` frees a C Booster through: `_handle` (LightGBM 4), `handle` (3).
PREDICTOR_HANDLES = ("_handle", "handle")


def _lightgbm_predictor(state: Dict) -> None:
    """A LightGBM _InnerPredictor's attributes (dict and slots, `attributes`): its pickles never hold a handle (its
    `__getstate__` drops both names), so one in the stream is a pointer of the stream's choosing, which `__del__`
    hands `LGBM_BoosterFree` when the state also asks it to manage the handle (measured: a crash at load)."""
    for key, _ in state.items:
        if not (isinstance(key, Const) and isinstance(key.value, str)):
            raise Unread(f"an attribute named by {native_class_of(key)[:20]}")
        if key.value in PREDICTOR_HANDLES:
            raise Invalid(f"a {key.value} attribute, which its pickles never hold and its __del__ frees")


# The names LightGBM's wrapper takes a thread count by (`num_threads` and its aliases), besides `n_jobs`.
THREAD_PARAMETERS = ("num_threads", "num_thread", "nthread", "nthreads", "n_jobs")


def _lightgbm_threads(state: Dict) -> None:
    """The thread count a LightGBM wrapper's predict hands OpenMP: `n_jobs`, or an alias in its other parameters
    (negative counts back from the cores; None is the cores). n_jobs=100000 crashed predict (review 89)."""
    asked = [state.get("n_jobs")]
    others = state.get("_other_params")
    if isinstance(others, Dict) and not others.dropped:
        asked += [value for key, value in others.items if isinstance(key, Const) and key.value in THREAD_PARAMETERS]
    elif others is not None and not _is_none(others):
        raise Unread("parameters the stream computes")
    for value in asked:
        if value is None or _is_none(value):
            continue
        threads = _const_int(value)
        if threads is None or threads > MAX_THREADS:
            raise Invalid(f"a thread count of {native_class_of(value)[:20]}, past {MAX_THREADS:,}")


def _xgboost(state: Dict, arrays: ArrayReader, tick: Callable[[], None]) -> None:
    """An XGBoost Booster's model, the buffer its `__setstate__` hands the C library: `handle`, a bytearray (any
    other writable buffer is read too, so it is unverified; None is no model)."""
    model = state.get("handle")
    if model is None or _is_none(model):
        return
    if isinstance(model, Const) and isinstance(model.value, bytes | bytearray | LongBytes):  # BYTEARRAY8
        blob = arrays.data(model)  # (bytes, which the loader refuses, are read as well)
    elif (isinstance(model, Obj) and isinstance(model.func, Global) and model.func.dotted in BYTEARRAY
          and isinstance(model.args, Seq) and len(model.args.items) == 1 and model.state is None):  # fmt: skip
        blob = arrays.data(model.args.items[0])
    else:
        raise Unread(f"a model buffer made by {native_class_of(model)}")
    xgboost_model.check(blob, tick)


def _catboost(state: Dict, arrays: ArrayReader, tick: Callable[[], None]) -> None:
    """A CatBoost model's bytes, which its `__setstate__` hands CatBoost's loader: `__model` (none when the model
    was never fitted; None fails its `_deserialize_model`, which takes bytes only)."""
    model = state.get("__model")
    if model is not None and not _is_none(model):
        catboost_model.check(arrays.data(model), tick)
    for key, value in state.items:  # the rest: test evaluations `_set_test_evals` converts, and parameters
        if not (isinstance(key, Const) and key.value == "__model"):
            _unfolded(value, str(key.value if isinstance(key, Const) else "a computed name")[:40])


# What a CatBoost state's values may unfold to, in characters of their text (about 268 million): `__setstate__`
# converts every test evaluation value and predict takes `str()` of a parameter, so a value built of shared
# references (a 137 KB pickle of 10**12 numbers; a 1 MB one of 10**12 characters) hung or took gigabytes (review 94).
MAX_UNFOLDED = 2**28


def _unfolded(value: Sym, name: str) -> None:
    """Raise Invalid when `value` unfolds, shared containers counted at each use, past MAX_UNFOLDED characters."""
    sizes: dict[int, int] = {}
    open_now: set[int] = set()

    def size(item: Sym, depth: int) -> int:
        if isinstance(item, Const):
            held = item.value
            if isinstance(held, str | bytes | bytearray):
                return len(held) + 2
            return held.length if isinstance(held, LongBytes) else 24
        if not isinstance(item, Seq | Dict):
            return 16  # an object: what it holds is judged by the other checks
        if id(item) in sizes:
            return sizes[id(item)]
        if id(item) in open_now or depth > MAX_OWNER_DEPTH * 8:
            raise Invalid(f"a {name} state value that contains itself or nests past {MAX_OWNER_DEPTH * 8} levels")
        if (isinstance(item, Seq) and item.heavy_past) or (isinstance(item, Dict) and item.dropped):
            raise Unread(f"a {name} state value of more than {len(item.items):,} items, not all of them numbers")
        open_now.add(id(item))
        parts = [item for pair in item.items for item in pair] if isinstance(item, Dict) else item.items
        total = 2 + sum(size(part, depth + 1) for part in parts) + 24 * (item.dropped if isinstance(item, Seq) else 0)
        open_now.discard(id(item))
        if total > MAX_UNFOLDED:
            raise Invalid(f"a {name} state value that unfolds to over {MAX_UNFOLDED:,} characters (shared references)")
        sizes[id(item)] = total
        return total

    size(value, 0)


def _tree_holder(cls: str, state: Dict, arrays: ArrayReader) -> None:
    """An estimator's own hold on its trees: a decision tree's `tree_` is a Tree (gradient boosting's compiled
    predict takes None for one, and reads through it); gradient boosting's `estimators_` has as many columns as
    the predictions it writes into (`n_trees_per_iteration_`, or the initial estimator's classes)."""
    tree = state.get("tree_")
    if tree is not None and (_is_none(tree) or cls.startswith(DECISION_TREES)) and native_class_of(tree) != TREE:
        # gradient boosting's compiled predict reads any member's tree_ as a Tree, and None crashes it (review 84
        # made one member a DummyRegressor holding None)
        raise Invalid(f"a tree_ made by {native_class_of(tree)}")
    if cls not in GRADIENT_BOOSTING or state.get("estimators_") is None:
        return
    held, _ = _members(state.get("estimators_"), arrays)
    for member in held:
        if native_class_of(member) != GB_MEMBER:
            raise Invalid(f"a member made by {native_class_of(member)}, where predict reads a decision tree's Tree")
    shape, _ = arrays.object_shape(state.get("estimators_"))
    if len(shape) != 2:
        raise Invalid(f"estimators_ of shape {shape}")
    columns = shape[1]
    per_iteration = state.get("n_trees_per_iteration_")
    if per_iteration is not None and _const_int(per_iteration) != columns:
        raise Invalid(f"estimators_ of {columns} columns for {_const_int(per_iteration)} trees per iteration")
    init = state.get("init_")
    zero = isinstance(init, Const) and init.value == "zero"
    legacy = _legacy_losses(state)
    for loss in legacy:
        width = _legacy_width(loss, zero, init, arrays)
        if columns > width:
            raise Invalid(f"estimators_ of {columns} columns over initial predictions {width} wide")
    if legacy:
        return
    if columns == 1 or zero:
        return
    width = _init_width(init, arrays)
    if width != columns:
        raise Invalid(f"estimators_ of {columns} columns over initial predictions {width} wide")


# scikit-learn 1.3 and older: gradient boosting's loss object (`_loss`, `loss_` before 1.1) sizes the initial
# predictions: K columns when they start at zero, else one column for these losses (a regression's prediction, a
# binary log-odds) and the initial estimator's classes for MultinomialDeviance.
GB_LOSSES = "sklearn.ensemble._gb_losses."
ONE_COLUMN_LOSSES = frozenset(f"{GB_LOSSES}{name}" for name in (
    "LeastSquaresError", "LeastAbsoluteError", "HuberLossFunction", "QuantileLossFunction", "BinomialDeviance",
    "ExponentialLoss",
))  # fmt: skip


def _legacy_losses(state: Dict) -> list[Obj]:
    """The loss objects a release before 1.4 sizes predictions by: under `_loss` (1.1 to 1.3) and `loss_` (1.0),
    each a legacy loss class or any object whose state has a K (helper 230 gave a DummyRegressor K=1: 1.3 reads
    `_loss.K` whatever it is). A file may hold both, and n_trees_per_iteration_ too: each is checked."""
    found = []
    for key in ("_loss", "loss_"):
        value = state.get(key)
        if not isinstance(value, Obj):
            continue
        loss_state = dict_state(value.state)
        if native_class_of(value).startswith(GB_LOSSES) or (loss_state is not None and loss_state.get("K") is not None):
            found.append(value)
    return found


def _legacy_width(loss: Obj, zero: bool, init: Sym | None, arrays: ArrayReader) -> int:
    """How wide scikit-learn 1.3's `_raw_predict_init` makes the predictions predict_stages then writes a column of
    per column of estimators_ (helper 229: a MultinomialDeviance of K=1 under 200,000 columns, and a
    LeastSquaresError under a classifier's 100,000, each crashed predict)."""
    cls = native_class_of(loss)
    if zero:
        loss_state = dict_state(loss.state)
        k = loss_state.get("K") if loss_state is not None else None
        count = _const_int(k) if k is not None else None
        if count is None:
            raise Unread(f"the class count K of a {cls}")
        return count
    if cls in ONE_COLUMN_LOSSES:
        return 1
    if cls == f"{GB_LOSSES}MultinomialDeviance":
        return _init_width(init, arrays)
    raise Unread(f"initial predictions of a {cls}")


# Initial estimators whose predict_proba width is worked out (`_init_width`); any other is unread.
LOGISTIC = "sklearn.linear_model._logistic.LogisticRegression"
GAUSSIAN_NB = "sklearn.naive_bayes.GaussianNB"
FOREST_CLASSIFIERS = frozenset({"sklearn.ensemble._forest.RandomForestClassifier",
                                "sklearn.ensemble._forest.ExtraTreesClassifier"})  # fmt: skip
TREE_CLASSIFIERS = frozenset({"sklearn.tree._classes.DecisionTreeClassifier",
                              "sklearn.tree._classes.ExtraTreeClassifier"})  # fmt: skip
PIPELINE = "sklearn.pipeline.Pipeline"


def _init_width(init: Sym | None, arrays: ArrayReader, depth: int = 0) -> int:
    """How many columns the initial estimator's predict_proba gives: multiclass gradient boosting takes the log of
    them as its starting predictions, and its compiled predict then writes one column per column of estimators_,
    unchecked (review 84: a DummyClassifier one wide under three columns wrote past them). Worked out as
    scikit-learn's own predict_proba shapes it, from the arrays and counts it reads, for the default DummyClassifier
    and the estimators people pass as `init` (helper 206 found each flagged): LogisticRegression, GaussianNB, a
    forest or a tree, a Pipeline ending in one. Any other is unread."""
    cls = native_class_of(init)
    state = dict_state(init.state) if isinstance(init, Obj) else None
    if state is None:
        raise Unread(f"an initial estimator, {cls}, whose predictions wscan does not size")
    if cls == DUMMY:
        return _dummy_width(state, arrays)
    if cls == LOGISTIC:
        return _logistic_width(state, arrays)
    if cls == GAUSSIAN_NB:  # one column per item of classes_ (np.size), each from that class's row of theta_
        return int(np.prod(arrays.shape(state.get("classes_"))))
    if cls in FOREST_CLASSIFIERS:  # a zero array of n_classes_ columns each tree's probabilities are added to
        return _count(state.get("n_classes_"), arrays, "n_classes_")
    if cls in TREE_CLASSIFIERS:  # the tree's values, max_n_classes wide, cut to n_classes_ columns
        tree = state.get("tree_")
        args = tree.args.items if isinstance(tree, Obj) and isinstance(tree.args, Seq) else []
        if native_class_of(tree) != TREE or len(args) != 3:
            raise Unread(f"an initial tree's tree_ made by {native_class_of(tree)}")
        classes = int_values(arrays, args[1], "the initial tree's class counts")
        if classes.ndim != 1 or not classes.size:
            raise Invalid(f"an initial tree's class counts of shape {classes.shape}")
        return min(_count(state.get("n_classes_"), arrays, "n_classes_"), int(classes.max()))
    if cls == PIPELINE and depth < 4:  # the last step's predict_proba, on what the steps before it give
        steps = state.get("steps")
        last = steps.items[-1] if isinstance(steps, Seq) and steps.items and not steps.dropped else None
        if not (isinstance(last, Seq) and len(last.items) == 2):
            raise Unread("a Pipeline's last step the stream computes")
        return _init_width(last.items[1], arrays, depth + 1)
    raise Unread(f"an initial estimator, {cls}, whose predictions wscan does not size")


def _logistic_width(state: Dict, arrays: ArrayReader) -> int:
    """LogisticRegression's predict_proba: X @ coef_.T + intercept_, as NumPy broadcasts them (a single column
    becomes two: the other class's probability beside it)."""
    coef, intercept = arrays.shape(state.get("coef_")), arrays.shape(state.get("intercept_"))
    widths = {coef[0], intercept[0]} - {1} if len(coef) == 2 and len(intercept) == 1 else None
    if widths is None or len(widths) > 1:  # not the shapes scikit-learn writes, or shapes NumPy cannot broadcast
        raise Invalid(f"an initial LogisticRegression's coef_ of shape {coef} and intercept_ of shape {intercept}")
    width = widths.pop() if widths else 1
    return 2 if width == 1 else width


def _count(value: Sym | None, arrays: ArrayReader, what: str) -> int:
    """A count an estimator keeps: a Python int, or a NumPy integer scalar (a tree's n_classes_ is an np.intp)."""
    number = scalar_number(value, arrays)
    if isinstance(number, int):
        return number
    raise Unread(f"an initial estimator's {what} the stream computes")


def _dummy_width(state: Dict, arrays: ArrayReader) -> int:
    """How many columns a DummyClassifier's predict_proba gives (gradient boosting's default initial estimator):
    its class prior's length for the prior and stratified strategies, `n_classes_` for the others (review 84: a
    uniform one with one class under a 60-wide prior overflowed the predictions)."""
    strategy = state.get("_strategy") or state.get("strategy")
    name = strategy.value if isinstance(strategy, Const) else None
    if name in ("prior", "stratified"):
        shape = arrays.shape(state.get("class_prior_"))
        if len(shape) != 1:
            raise Invalid(f"a class prior of shape {shape}")
        return shape[0]
    if name in ("most_frequent", "uniform", "constant"):
        count = _const_int(state.get("n_classes_") or Const(None))
        if count is None:
            raise Unread("an initial estimator's class count the stream computes")
        return count
    raise Unread(f"an initial estimator's strategy {str(name)[:30]!r}")


SVM_KERNELS = frozenset({"linear", "poly", "rbf", "sigmoid", "precomputed"})
SVM_CLASSIFIERS = frozenset({"SVC", "NuSVC"})
SVM_FITTED = ("support_", "support_vectors_", "_n_support", "n_support_", "_dual_coef_", "dual_coef_", "_intercept_",
              "intercept_", "shape_fit_")  # fmt: skip


def _svm(cls: str, state: Dict, arrays: ArrayReader) -> None:
    """libsvm's model as scikit-learn hands it over at predict (dense or sparse): `support_` indexes the training
    rows (a precomputed kernel's columns), `_n_support` splits the support vectors by class (libsvm walks them by
    these counts: scikit-learn compares only their sum, and only for dense models), and the coefficients, intercepts
    and Platt parameters have the sizes libsvm reads for that many classes."""
    name = cls.rpartition(".")[2]
    if all(state.get(key) is None for key in SVM_FITTED):
        return  # not fitted (GridSearchCV's template, say): predict refuses before libsvm is called
    support = int_values(arrays, state.get("support_"), "support_")
    n_sv = len(support)
    fit = const_shape(state.get("shape_fit_"))
    if fit is None or len(fit) != 2:
        raise Unread("shape_fit_ the stream computes")
    if support.ndim != 1 or outside(support, 0, fit[0]) is not None:
        raise Invalid(f"support_ index {outside(support, 0, fit[0])} for {fit[0]} training rows")
    counts_key = "_n_support" if state.get("_n_support") is not None else "n_support_"
    counts = int_values(arrays, state.get(counts_key), counts_key)
    if counts.ndim != 1 or outside(counts, 0, n_sv + 1) is not None:
        raise Invalid(f"{counts_key} {counts.tolist()[:4]} for {n_sv} support vectors")
    classifier = name in SVM_CLASSIFIERS
    classes = len(counts)
    if (classifier and (classes < 2 or int(counts.sum()) != n_sv)) or (not classifier and classes != 2):
        raise Invalid(f"{counts_key} {counts.tolist()[:4]} for {n_sv} support vectors")
    kernel = state.get("kernel")
    sparse = state.get("_sparse")
    if isinstance(sparse, Const) and sparse.value and not (isinstance(kernel, Const) and kernel.value in SVM_KERNELS
                                                           and kernel.value != "precomputed"):
        # sparse libsvm reads a precomputed kernel's column from each support vector's value (review 84: a value of
        # 1e9 crashed predict); fit never writes a sparse model with a precomputed or callable kernel
        raise Invalid(f"a sparse model with the kernel {native_class_of(kernel)}, which fit never writes")
    vectors = pickle_native_scipy.matrix_shape(arrays, state.get("support_vectors_"))
    # A precomputed or callable kernel: libsvm reads the kernel's columns through support_, not the vectors.
    vectors_read = isinstance(kernel, Const) and kernel.value != "precomputed"
    given = state.get("n_features_in_")
    features = (_const_int(given) if given is not None else None) or fit[1]
    if vectors_read and vectors != (n_sv, features):
        raise Invalid(f"support_vectors_ of shape {vectors} for {n_sv} support vectors of {features} features")
    rows = classes - 1 if classifier else 1
    pairs = classes * (classes - 1) // 2 if classifier else 1
    dual = pickle_native_scipy.matrix_shape(arrays, state.get("_dual_coef_"))
    if dual != (rows, n_sv):
        raise Invalid(f"_dual_coef_ of shape {dual}, not {(rows, n_sv)}")
    intercept = arrays.shape(state.get("_intercept_"))
    if intercept != (pairs,):
        raise Invalid(f"_intercept_ of shape {intercept}, not {(pairs,)}")
    for key in ("_probA", "_probB"):
        if state.get(key) is not None and arrays.shape(state.get(key)) not in ((0,), (pairs,)):
            raise Invalid(f"{key} of shape {arrays.shape(state.get(key))} for {pairs} class pairs")


def _neighbors(cls: str, state: Dict, arrays: ArrayReader) -> None:
    """A neighbors estimator's training data `_fit_X`, which its compiled brute-force reductions walk by X's width
    (checked against n_features_in_: review 86 narrowed `_fit_X` and read past it), with one label per row for a
    classifier (the reduction reads `_y[j]` for every row j)."""
    data = state.get("_fit_X")
    if data is None or _is_none(data):
        return  # not fitted
    shape = pickle_native_scipy.matrix_shape(arrays, data)
    features = state.get("n_features_in_")
    count = _const_int(features) if features is not None else None
    if count is None:
        raise Unread("training data without a feature count X is checked against")
    metric = state.get("effective_metric_")
    precomputed = isinstance(metric, Const) and metric.value == "precomputed"
    if len(shape) != 2 or (shape[1] != count and not precomputed):
        raise Invalid(f"_fit_X of shape {shape} for {count} features")
    samples = state.get("n_samples_fit_")
    if samples is not None and _const_int(samples) != shape[0]:
        raise Invalid(f"n_samples_fit_ {_const_int(samples)} for _fit_X of {shape[0]} rows")
    if cls in NEIGHBOR_CLASSIFIERS:
        labels = state.get("_y")
        if labels is not None and arrays.shape(labels)[:1] != (shape[0],):
            raise Invalid(f"_y of shape {arrays.shape(labels)} for {shape[0]} training rows")
        _neighbor_labels(state, arrays)


def _neighbor_labels(state: Dict, arrays: ArrayReader) -> None:
    """A neighbors classifier's encoded labels `_y`, which its compiled brute-force predict adds votes at
    (`class_scores[i, _y[j]]`, unchecked: review 85 wrote out of bounds with `_y = 3` for two classes): each within
    its output's classes."""
    labels = state.get("_y")
    classes = state.get("classes_")
    if labels is None or classes is None:
        return  # not fitted: predict refuses
    per_output = [arrays.shape(item) for item in classes.items] if isinstance(classes, Seq) else [arrays.shape(classes)]
    if isinstance(classes, Seq) and classes.dropped:
        raise Unread("more outputs than wscan keeps")
    values = int_values(arrays, labels, "_y")
    columns = values.reshape(len(values), -1) if values.ndim in (1, 2) and len(values) else values.reshape(0, 0)
    if values.ndim not in (1, 2) or (columns.shape[1] != len(per_output) and len(values)):
        raise Invalid(f"_y of shape {values.shape} for {len(per_output)} outputs")
    for index, shape in enumerate(per_output):
        bad = outside(columns[:, index], 0, shape[0] if len(shape) == 1 else 0) if len(values) else None
        if bad is not None:
            raise Invalid(f"label {bad} of output {index}, for classes of shape {shape}")


def _kmeans(state: Dict, arrays: ArrayReader) -> None:
    """k-means' compiled assignment reads a row of X over as many columns as the centers have: centers wider than
    X read past it. X is checked against n_features_in_ only when the model has one (review 84 deleted it and
    widened the centers), so the centers must be as wide as a constant n_features_in_."""
    centers = state.get("cluster_centers_")
    if centers is None:
        return  # not fitted: predict refuses
    features = state.get("n_features_in_")
    if features is None or _const_int(features) is None:
        raise Unread("centers without a feature count X is checked against")
    shape = arrays.shape(centers)
    if len(shape) != 2 or shape[1] != _const_int(features):
        raise Invalid(f"cluster_centers_ of shape {shape} for {_const_int(features)} features")
    mean = state.get("_X_mean")
    if mean is not None and arrays.shape(mean) != (shape[1],):
        raise Invalid(f"_X_mean of shape {arrays.shape(mean)} for {shape[1]} features")
    threads = state.get("_n_threads")
    if threads is not None and not 1 <= (_const_int(threads) or 0) <= MAX_THREADS:
        # handed to OpenMP as written: 100,000 crashed predict, -1 made it allocate 927 GB (review 86)
        raise Invalid(f"_n_threads {_const_int(threads)}")
    tree = state.get("_bisecting_tree")
    if tree is not None:
        _bisecting_centers(tree, shape[1], arrays)


def _bisecting_centers(root: Sym, features: int, arrays: ArrayReader) -> None:
    """BisectingKMeans predicts through its bisecting tree: every node's center (and the data mean) as wide as X
    (review 86 widened the node centers, which the compiled assignment read X by)."""
    pending, seen = [root], 0
    while pending:
        node = pending.pop()
        if node is None or _is_none(node):
            continue
        state = dict_state(node.state) if isinstance(node, Obj) else None
        seen += 1
        if state is None or seen > MAX_BISECTING_NODES:
            raise Unread("a bisecting tree wscan cannot walk")
        center = state.get("center")
        if center is not None and arrays.shape(center) not in ((features,), (1, features)):  # a row, fit on sparse X
            raise Invalid(f"a bisecting node's center of shape {arrays.shape(center)} for {features} features")
        pending.extend(child for key in ("left", "right") if (child := state.get(key)) is not None)


def _linkage(state: Dict, arrays: ArrayReader) -> None:
    """HDBSCAN's single-linkage tree, which dbscan_clustering() unions in a compiled union-find of one slot per
    point and merge: merge k joins points or earlier merges (ids below n + k, n the points)."""
    linkage = state.get("_single_linkage_tree_")
    if linkage is None or _is_none(linkage):
        return
    rows = arrays.values(linkage)
    _layout(rows, "_single_linkage_tree_", (HIERARCHY,), by_offset=True)
    integers(rows, "_single_linkage_tree_", ("left_node", "right_node"))
    if rows.ndim != 1:
        raise Invalid(f"_single_linkage_tree_ of {rows.ndim} dimensions")
    limit = np.arange(len(rows)) + len(rows) + 1
    for side in ("left_node", "right_node"):
        wrong = (rows[side] < 0) | (rows[side] >= limit)
        if bool(np.any(wrong)):
            at = int(np.flatnonzero(wrong)[0])
            raise Invalid(f"merge {at}'s {side} {int(rows[side][at])}, for {len(rows) + 1} points")


def _histograms(state: Dict, arrays: ArrayReader) -> None:
    """HBOS's histograms, which its numba code reads by bin with no bounds checks: with n_bins a number, hist_ is
    (n_bins, features) and bin_edges_ (n_bins + 1, features); with "auto", a pair of arrays per feature, the edges
    one longer."""
    hist, edges = state.get("hist_"), state.get("bin_edges_")
    if hist is None or edges is None:
        return  # not fitted
    bins = state.get("n_bins")
    if isinstance(hist, Seq) and isinstance(edges, Seq):  # n_bins="auto"
        if len(hist.items) != len(edges.items) or hist.dropped or edges.dropped:
            raise Invalid(f"{len(hist.items)} histograms for {len(edges.items)} bin edges")
        for index, (counts, bounds) in enumerate(zip(hist.items, edges.items, strict=True)):
            one, two = arrays.shape(counts), arrays.shape(bounds)
            if len(one) != 1 or two != (one[0] + 1,):
                raise Invalid(f"feature {index}'s histogram of {one} bins with edges {two}")
        return
    number = _const_int(bins) if bins is not None else None
    one, two = arrays.shape(hist), arrays.shape(edges)
    if number is None or len(one) != 2 or one[0] != number or two != (number + 1, one[1]):
        raise Invalid(f"hist_ of shape {one} and bin_edges_ of shape {two} for {number} bins")
