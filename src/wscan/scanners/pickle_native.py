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

Each BUILD of such a class is recorded with its state as it was then (`record`): scikit-learn's own `__setstate__`
or the instance dict copies it then, so what the stream does afterwards changes nothing the model uses. Once the
stream ends (`check`), each state's arrays are read (`pickle_arrays`) and checked against the invariants every file
scikit-learn writes keeps; a tree's feature indices against the number of features of the estimators that hold it
(`n_features_in_`, up through ensembles' `estimators_`), which is what X is checked against before the tree reads it.
An array that cannot be read, a state of another shape or a limit passed is reported as unverified, never passed.
"""

from __future__ import annotations

import numpy as np

from wscan.scanners.pickle_arrays import ArrayReader, Unread
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
    _const_int,
    _is_none,
)

MAX_RECORDED = MAX_NATIVE_RECORDED
MAX_OWNER_DEPTH = 8  # ensembles of ensembles followed down to their trees
MAX_DEPTH = 4096  # levels of a tree walked; a deeper one is reported unverified

_NEIGHBORS = ("sklearn.neighbors._kd_tree", "sklearn.neighbors._ball_tree", "sklearn.neighbors.kd_tree",
              "sklearn.neighbors.ball_tree")  # fmt: skip
BINARY_TREES = {
    f"{module}.{name}{suffix}": name
    for module in _NEIGHBORS for name in ("KDTree", "BallTree") for suffix in ("", "64", "32")
}  # fmt: skip
TREE = "sklearn.tree._tree.Tree"
PREDICTOR = "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"
NATIVE_CLASSES = frozenset({*BINARY_TREES, TREE, PREDICTOR})
FEATURE_COUNTS = ("n_features_in_", "n_features_")  # what an estimator checks X's columns against
HOLDERS = ("tree_", "_predictors", "estimators_")  # where an estimator keeps its trees, or its estimators
_INTEGERS = "iu"
KIND = "pickle.native_index"
METRICS = "sklearn.metrics._dist_metrics"


def native_class(target: Obj) -> str | None:
    """The native class `target` is, by what made it (the neighbors' `newObj(cls)` helper, or the class)."""
    name = native_class_of(target)
    return name if name in NATIVE_CLASSES else None


def record(native: NativeStates, target: Obj, state: Sym, at: int) -> None:
    """Keep a BUILD's state if it is a native class's, or an estimator's that holds trees."""
    cls = native_class(target)
    if cls is None:
        state_dict = _dict_state(state)
        if state_dict is not None and any(state_dict.get(key) is not None for key in HOLDERS):
            if len(native.owners) < MAX_RECORDED:
                native.owners.append((target, Dict(list(state_dict.items))))
            else:
                native.dropped += 1
        return
    if len(native.restored) >= MAX_RECORDED:
        native.dropped += 1
        return
    frozen: Sym = state
    if isinstance(state, Seq):
        frozen = Seq(state.type, list(state.items), state.dropped)
    elif isinstance(state, Dict):
        frozen = Dict(list(state.items), state.dropped)
    native.restored.append(Restored(at, cls, target, frozen))


def _dict_state(state: Sym | None) -> Dict | None:
    """The dict part of a BUILD state: the dict, or the first of (dict, slots)."""
    if isinstance(state, Seq) and state.type == "tuple" and len(state.items) == 2:
        state = state.items[0]
    return state if isinstance(state, Dict) else None


class Invalid(Exception):
    """The model's compiled code would read or write out of bounds with these values."""


def check(native: NativeStates, arrays: ArrayReader) -> list[tuple[str, int, dict[str, str]]]:
    """Each recorded native state found out of bounds or unverified: (kind, offset, attributes) events."""
    events: list[tuple[str, int, dict[str, str]]] = []
    if native.dropped:
        offset = native.restored[-1].offset if native.restored else 0
        events.append((KIND, offset, {"callable": "scikit-learn models",
                                      "detail": f"more than {MAX_RECORDED:,} of them, the rest unverified"}))
    bounds = _feature_bounds(native.owners)
    for item in native.restored:
        try:
            state = _Arrays(arrays, item)
            if item.cls in BINARY_TREES:
                _binary_tree(state, ball=BINARY_TREES[item.cls] == "BallTree")
            elif item.cls == TREE:
                _tree(state, item.target, bounds.get(id(item.target)))
            else:
                _predictor(state, bounds.get(id(item.target)))
        except Invalid as exc:
            events.append((KIND, item.offset, {"callable": item.cls, "detail": str(exc)}))
        except Unread as exc:
            detail = f"index arrays wscan cannot check ({exc})"
            events.append((KIND, item.offset, {"callable": item.cls, "detail": detail}))
    return events


class _Arrays:
    """A recorded state's parts, and its arrays' values as they were at its BUILD."""

    def __init__(self, reader: ArrayReader, item: Restored) -> None:
        self.reader = reader
        self.item = item

    def items(self, sizes: tuple[int, ...]) -> list[Sym]:
        state = self.item.state
        if not (isinstance(state, Seq) and state.type == "tuple" and not state.dropped and len(state.items) in sizes):
            raise Unread("a state scikit-learn does not write")
        return state.items

    def get(self, key: str) -> Sym | None:
        state = _dict_state(self.item.state)
        if state is None or state.dropped:
            raise Unread("a state scikit-learn does not write")
        return state.get(key)

    def array(self, value: Sym | None, what: str) -> np.ndarray:
        if value is None:
            raise Unread(f"no {what}")
        try:
            return self.reader.values(value)
        except Unread as exc:
            raise Unread(f"{what}: {exc}") from None


def _integers(array: np.ndarray, what: str, fields: tuple[str, ...] = ()) -> None:
    names = array.dtype.names or ()
    kinds = [array.dtype[name].kind if name in names else "" for name in fields]
    if (not fields and array.dtype.kind not in _INTEGERS) or any(not kind or kind not in _INTEGERS for kind in kinds):
        raise Unread(f"{what} of dtype {array.dtype}")


def _outside(values: np.ndarray, low: int, high: int) -> int | None:
    """The first value outside [low, high), or None."""
    if not values.size:
        return None
    bad = np.flatnonzero((values < low) | (values >= high))
    return int(values.flat[bad[0]]) if bad.size else None


def _binary_tree(state: _Arrays, ball: bool) -> None:
    """KDTree/BallTree state: (data, idx_array, node_data, node_bounds, leaf_size, n_levels, n_nodes, n_trims,
    n_leaves, n_splits, n_calls, dist_metric[, sample_weight])."""
    items = state.items((12, 13))
    data = state.array(items[0], "data")
    idx = state.array(items[1], "idx_array")
    nodes = state.array(items[2], "node_data")
    bounds = state.array(items[3], "node_bounds")
    if data.ndim != 2 or idx.ndim != 1 or nodes.ndim != 1 or bounds.ndim != 3:
        raise Invalid(f"arrays of {data.ndim}, {idx.ndim}, {nodes.ndim} and {bounds.ndim} dimensions")
    samples, features = data.shape
    _integers(idx, "idx_array")
    _integers(nodes, "node_data", ("idx_start", "idx_end", "is_leaf"))
    bad = _outside(idx, 0, samples)
    if bad is not None:
        raise Invalid(f"idx_array value {bad} outside the data's {samples} rows")
    count = len(nodes)
    n_nodes = _const_int(items[6])
    if n_nodes != count or not count:
        raise Invalid(f"n_nodes {n_nodes} for {count} nodes")
    starts, ends = nodes["idx_start"], nodes["idx_end"]
    bad = _outside(starts, 0, len(idx) + 1)
    if bad is None:
        bad = _outside(ends, 0, len(idx) + 1)
    if bad is not None or bool(np.any(starts > ends)):
        raise Invalid(f"a node range outside idx_array's {len(idx)} items")
    inner = np.flatnonzero(nodes["is_leaf"] == 0)
    if inner.size and 2 * int(inner[-1]) + 2 >= count:
        raise Invalid(f"node {int(inner[-1])} not a leaf, with children past the {count} nodes")
    expected = (1 if ball else 2, count, features)
    if bounds.shape != expected:
        raise Invalid(f"node_bounds of shape {bounds.shape}, not {expected}")
    leaf_size = _const_int(items[4])
    if leaf_size is None or leaf_size < 1:
        raise Invalid(f"leaf_size {leaf_size}")
    _metric(state, items[11], features)
    if len(items) == 13 and not _is_none(items[12]):
        weights = state.array(items[12], "sample_weight")
        if weights.shape != (samples,):
            raise Invalid(f"sample_weight of shape {weights.shape} for {samples} rows")


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
    vec = state.array(items[1], f"{name}'s weights")
    mat = state.array(items[2], f"{name}'s matrix")
    weights = {"SEuclideanDistance": (features,), "WMinkowskiDistance": (features,), "MinkowskiDistance": (0, features)}
    if base in weights and (vec.ndim != 1 or len(vec) not in weights[base]):
        raise Invalid(f"{name} with {vec.shape} weights for {features} features")
    if base == "MahalanobisDistance" and mat.shape != (features, features):
        raise Invalid(f"{name} with a {mat.shape} matrix for {features} features")
    if base == "HaversineDistance" and features != 2:
        raise Invalid(f"{name} over {features} features (it reads two)")


def native_class_of(value: Sym | None) -> str:
    """The class a value was made of, by its maker (scikit-learn's `newObj(cls)` helpers, copyreg's), for reports."""
    if not isinstance(value, Obj) or not isinstance(value.func, Global):
        return type(value).__name__ if value is not None else "nothing"
    func = value.func
    if func.name == "newObj" or func.dotted in ("copyreg._reconstructor", "copyreg.__newobj__"):
        first = value.args.items[0] if isinstance(value.args, Seq) and value.args.items else None
        return first.dotted if isinstance(first, Global) else "a computed class"
    return func.dotted


def _tree(state: _Arrays, target: Obj, bound: int | None) -> None:
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
    _integers(classes, "n_classes")
    if n_outputs < 1 or classes.shape != (n_outputs,) or _outside(classes, 1, 2**31) is not None:
        raise Invalid(f"n_classes {classes.tolist()[:4]} for {n_outputs} outputs")
    nodes = state.array(state.get("nodes"), "nodes")
    node_count = _const_int(state.get("node_count") or Const(None))
    max_depth = _const_int(state.get("max_depth") or Const(None))
    if nodes.ndim != 1:
        raise Invalid(f"nodes of {nodes.ndim} dimensions")
    _integers(nodes, "nodes", ("left_child", "right_child", "feature"))
    if node_count is None or not 0 < node_count <= len(nodes):
        raise Invalid(f"node_count {node_count} for {len(nodes)} nodes")
    used = nodes[:node_count]
    inner = used["left_child"] != -1
    _children(used["left_child"], used["right_child"], inner, node_count, leaf=-1)
    depth = _depth(used["left_child"], used["right_child"], inner)
    if max_depth is None or depth > max_depth:
        raise Invalid(f"max_depth {max_depth} for a tree {depth} deep")
    limit = n_features if bound is None else min(n_features, bound)
    bad = _outside(used["feature"][inner], 0, limit)
    if bad is not None:
        raise Invalid(f"feature {bad} of a split, for {limit} features")


def _depth(left: np.ndarray, right: np.ndarray, inner: np.ndarray) -> int:
    """How deep the tree under node 0 is, once each node is known to have one parent at most."""
    children = np.concatenate([left[inner], right[inner]])
    if children.size and int(np.bincount(children).max()) > 1:
        at = int(np.flatnonzero(np.bincount(children) > 1)[0])
        raise Invalid(f"node {at} the child of two nodes")
    frontier, depth = np.array([0]), 0
    while True:
        frontier = frontier[inner[frontier]]
        if not frontier.size:
            return depth
        depth += 1
        if depth > MAX_DEPTH:
            raise Unread(f"a tree deeper than {MAX_DEPTH:,} levels")
        frontier = np.concatenate([left[frontier], right[frontier]])


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


def _predictor(state: _Arrays, bound: int | None) -> None:
    """TreePredictor's `nodes` records: an inner node's children after it, its feature below the estimator's
    feature count, a categorical split's bitset within `raw_left_cat_bitsets`."""
    nodes = state.array(state.get("nodes"), "nodes")
    if nodes.ndim != 1 or not len(nodes):
        raise Invalid(f"nodes of shape {nodes.shape}")
    _integers(nodes, "nodes", ("left", "right", "feature_idx", "is_leaf", "is_categorical", "bitset_idx"))
    inner = nodes["is_leaf"] == 0
    _children(nodes["left"], nodes["right"], inner, len(nodes), leaf=0)
    if bound is None:
        raise Unread("not held by an estimator that says how many features X has")
    bad = _outside(nodes["feature_idx"][inner], 0, bound)
    if bad is not None:
        raise Invalid(f"feature {bad} of a split, for {bound} features")
    categorical = inner & (nodes["is_categorical"] != 0)
    if bool(np.any(categorical)):
        bitsets = state.array(state.get("raw_left_cat_bitsets"), "raw_left_cat_bitsets")
        bad = _outside(nodes["bitset_idx"][categorical], 0, len(bitsets) if bitsets.ndim == 2 else 0)
        if bad is not None:
            raise Invalid(f"bitset {bad} of a categorical split, for {len(bitsets)} bitsets")


def _feature_bounds(owners: list[tuple[Obj, Dict]]) -> dict[int, int]:
    """The fewest features X can have where each tree is used, by the tree's id: the least `n_features_in_` of the
    estimators that hold it, through ensembles' `estimators_` (the ensemble checks X, its members do not)."""
    own: dict[int, int] = {}
    held: dict[int, list[Sym]] = {}
    trees: dict[int, list[Sym]] = {}
    for owner, state in owners:
        counts = [_const_int(given) for key in FEATURE_COUNTS if (given := state.get(key)) is not None]
        known = [count for count in counts if count is not None]
        if known:
            own[id(owner)] = min([own.get(id(owner), min(known)), *known])
        held.setdefault(id(owner), []).extend(_members(state.get("estimators_")))
        trees.setdefault(id(owner), []).extend(_members(state.get("tree_")) + _members(state.get("_predictors")))
    bound: dict[int, int] = dict(own)
    for _ in range(MAX_OWNER_DEPTH):  # down through ensembles: a member is used with the ensemble's X
        changed = False
        for owner_id, members in held.items():
            if owner_id not in bound:
                continue
            for member in members:
                least = min(bound[owner_id], bound.get(id(member), bound[owner_id]))
                if bound.get(id(member)) != least:
                    bound[id(member)] = least
                    changed = True
        if not changed:
            break
    found: dict[int, int] = {}
    for owner_id, owned in trees.items():
        if owner_id in bound:
            for tree in owned:
                found[id(tree)] = min(found.get(id(tree), bound[owner_id]), bound[owner_id])
    return found


def _members(value: Sym | None, depth: int = 0) -> list[Sym]:
    """The objects in a holder: itself, the items of lists and tuples of them, or an object array's items."""
    array = isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted in _ARRAY_REBUILDERS
    if array and isinstance(value, Obj) and isinstance(value.state, Seq) and depth < 3:
        items = value.state.items
        if len(items) == 5 and isinstance(items[4], Seq):  # an object array: its items are a list
            return _members(items[4], depth + 1)
    if isinstance(value, Obj):
        return [value]
    if isinstance(value, Seq) and depth < 3:
        return [member for item in value.items for member in _members(item, depth + 1)]
    return []

