"""The hdbscan package's clusterers in a pickle, checked for the node ids and sizes its compiled code trusts.

Why: hdbscan compiles its tree, prediction and distance code with bounds checks off, and a loaded clusterer hands its
pickled arrays to that code as they are. A condensed tree naming a child past its points wrote out of bounds when
`outlier_scores_` was read, a single-linkage id did at `dbscan_clustering` (review 82); a negative child made
`compute_stability` (the `flat` functions) write a chosen double before its buffer, a cycle recursed in C until the
stack overflowed (`condensed_tree_.get_plot_data()`), prediction data wider than its exemplars read past them, and a
metric state without its arrays wrote at NULL (`membership_vector`; helpers 209 and 210, each reproduced). Each array
is checked against the shape every fit writes: a tree, not only ids in range, so that no walk of it can go wrong. The
settings a refit takes from the file are checked too, where hdbscan's own checks let its compiled code fail.

Branch detection's compiled linkage trusts that each cluster's graph, built from the spanning tree
(`gen_min_span_tree=True`), connects it: that is `pickle_native_hdbscan_branches`. Branch detection data kept in the
file and branch detection's own classes are not checked: the first is reported as unverified, the second stay off the
allowlist.
"""

from __future__ import annotations

import numpy as np

from wscan.scanners import pickle_native_hdbscan_branches as branches
from wscan.scanners.pickle_arrays import ArrayReader, Unread
from wscan.scanners.pickle_native import BINARY_TREES, ROBUST_SINGLE_LINKAGE, dict_state, native_class_of
from wscan.scanners.pickle_native_common import Invalid, int_values, outside, scalar_number
from wscan.scanners.pickle_native_scipy import matrix_shape
from wscan.scanners.pickle_values import Const, Dict, Obj, Seq, Sym, _is_none

PREDICTION_DATA = "hdbscan.prediction.PredictionData"
# The metrics prediction data of an allowed fit holds (rules/allow-outliers.yaml): they read the points only, never the
# weights or matrix of their state (`vec`, `mat`), which the weighted, standardised and Mahalanobis metrics index by
# the data's width.
METRICS = frozenset(f"hdbscan.dist_metrics.{name}" for name in ("EuclideanDistance", "ManhattanDistance",
                                                                 "ChebyshevDistance"))
CONDENSED = np.dtype([("parent", np.intp), ("child", np.intp), ("lambda_val", np.float64), ("child_size", np.intp)])
PLAIN = (str, int, float, bool, type(None))  # metric keyword values passed; arrays reach compiled metrics by size
# Levels of clusters below the root: the compiled leaf walk recurses in C once a level, with no limit of its own (a
# 120,000-level chain overflowed the stack, 40,000 did not: helper 211); fits nest far fewer.
MAX_CLUSTER_DEPTH = 1000
# The settings a refit (`fit`, `flat.HDBSCAN_flat(X, clusterer=...)`) takes from the file, where hdbscan checks less
# than its compiled code needs (helper 212): alpha 1e-307 made distances infinite and Prim's tree repeat an edge, whose
# self-merge the compiled condensing wrote past its buffers with (glibc abort); alpha NaN or a Minkowski p of 0 made
# every distance one and hung, doubling a list per level.
MIN_ALPHA = 1e-6
ALGORITHMS = frozenset({"best", "generic", "prims_kdtree", "prims_balltree", "boruvka_kdtree", "boruvka_balltree"})
MAX_JOBS = 4096  # core_dist_n_jobs: joblib workers a Borůvka fit starts


def clusterer(cls: str, state: Dict, arrays: ArrayReader) -> None:
    """An HDBSCAN's settings, trees and prediction data, or a RobustSingleLinkage's settings and hierarchy."""
    _settings(state, arrays)
    if cls == ROBUST_SINGLE_LINKAGE:
        if _held(state, "_cluster_hierarchy"):
            linkage(arrays.values(state.get("_cluster_hierarchy")), "_cluster_hierarchy")
        return
    if _held(state, "_branch_detection_data"):
        raise Unread("branch detection data, which compiled branch detection trusts to connect each cluster")
    _metric_arguments(state.get("_metric_kwargs"))
    if not _held(state, "labels_"):
        if any(_held(state, key) for key in ("_condensed_tree", "_single_linkage_tree", "_prediction_data")):
            raise Unread("trees without the labels that say how many points they join")
        return  # not fitted
    points = int_values(arrays, state.get("labels_"), "labels_")
    if points.ndim != 1 or not len(points):
        raise Invalid(f"labels_ of shape {points.shape}")
    count = len(points)
    raw = matrix_shape(arrays, state.get("_raw_data")) if _held(state, "_raw_data") else None
    if raw is not None and raw[:1] != (count,):
        raise Invalid(f"_raw_data of shape {raw} for {count} points")
    tree: np.ndarray | None = None
    if _held(state, "_condensed_tree"):
        tree = arrays.values(state.get("_condensed_tree"))
        condensed(tree, count, "_condensed_tree")
    if _held(state, "_single_linkage_tree"):
        single = arrays.values(state.get("_single_linkage_tree"))
        linkage(single, "_single_linkage_tree")
        if len(single) + 1 != count:
            raise Invalid(f"_single_linkage_tree of {len(single)} merges for {count} points")
    if _held(state, "_min_spanning_tree"):
        if tree is None:
            raise Unread("a spanning tree without the condensed tree branch detection reads its labels with")
        branches.check(state, arrays, points, tree)
    if _held(state, "_prediction_data"):
        if tree is None:
            raise Unread("prediction data without the condensed tree it is read with")
        _prediction(state.get("_prediction_data"), tree, count, arrays)


def condensed(tree: np.ndarray, count: int, what: str) -> None:
    """A condensed tree as fits write it: the root is node `count` (the points' count), points 0..count-1 are each
    one row's child of size 1, and clusters count+1.. are each one row's child, after their parent (so no walk cycles),
    two to a parent that splits; every cluster is a parent. The compiled code sizes its buffers by the least and the
    largest parent and indexes them by child, through raw pointers."""
    if tree.dtype != CONDENSED or tree.ndim != 1 or not len(tree):
        raise Invalid(f"{what} of dtype {tree.dtype} and shape {tree.shape}, not as hdbscan writes it")
    parent, child, size = tree["parent"], tree["child"], tree["child_size"]
    top = int(parent.max())
    if int(parent.min()) != count or top >= count + len(tree):  # a cluster per row at most, besides the root
        raise Invalid(f"{what} with parents {int(parent.min())} to {top}, for {count} points in {len(tree)} rows")
    points = child < count
    _each_once(child[points], 0, count, f"{what}'s points")
    if bool(np.any(size[points] != 1)):
        raise Invalid(f"{what} with a point of size other than 1")
    clusters, owners = child[~points], parent[~points]
    _each_once(clusters, count + 1, top + 1, f"{what}'s clusters")
    if bool(np.any(clusters <= owners)) or bool(np.any(size[~points] < 2)):
        raise Invalid(f"{what} with a cluster before its parent, or of fewer than two points")
    splits = np.bincount(owners - count, minlength=top - count + 1)
    if bool(np.any((splits != 0) & (splits != 2))):
        raise Invalid(f"{what} with a cluster splitting into other than two")
    if len(np.unique(parent)) != top - count + 1:
        raise Invalid(f"{what} with a cluster that holds nothing")
    lambdas = tree["lambda_val"]
    if bool(np.any(np.isnan(lambdas) | (lambdas < 0))):
        raise Invalid(f"{what} with a negative or NaN lambda")
    depth = _depth(owners - count, clusters - count, top - count + 1)
    if depth > MAX_CLUSTER_DEPTH:
        raise Invalid(f"{what} {depth} clusters deep, past the {MAX_CLUSTER_DEPTH} wscan lets a C recursion walk")


def _depth(parents: np.ndarray, children: np.ndarray, nodes: int) -> int:
    """How many levels of clusters lie below the root (node 0 here), by pointer jumping: each round adds the distance
    to the node each points at and points twice as far up, so a chain of any length takes a few dozen rounds."""
    up = np.full(nodes, -1, dtype=np.int64)
    up[children] = parents
    levels = (up >= 0).astype(np.int64)
    while bool(np.any(up >= 0)):
        has = np.flatnonzero(up >= 0)
        levels[has] += levels[up[has]]
        up[has] = up[up[has]]
    return int(levels.max())


def linkage(rows: np.ndarray, what: str) -> None:
    """A single-linkage tree as fits write it, (n - 1, 4) float64: merge i joins two of the points 0..n-1 and merges
    before it (ids below n + i, each id but the root's once, which the compiled union-find indexes by), its size the
    sum of theirs, at a distance that is no NaN."""
    if rows.dtype != np.float64 or rows.ndim != 2 or rows.shape[1] != 4 or not len(rows):
        raise Invalid(f"{what} of dtype {rows.dtype} and shape {rows.shape}, not as hdbscan writes it")
    merges = len(rows)
    count = merges + 1
    ids = rows[:, :2]
    limit = np.arange(merges)[:, None] + count
    if not bool(np.all((ids >= 0) & (ids < limit))) or bool(np.any(ids != np.floor(ids))):  # NaN fails the first
        raise Invalid(f"{what} joining a node not made before it, or no whole number, for {count} points")
    nodes = ids.astype(np.int64)
    _each_once(nodes.ravel(), 0, 2 * count - 2, f"{what}'s nodes")
    sizes = np.concatenate([np.ones(count), rows[:, 3]])
    if bool(np.any(rows[:, 3] != sizes[nodes[:, 0]] + sizes[nodes[:, 1]])):
        raise Invalid(f"{what} with a merge whose size is not its parts'")
    if bool(np.any(np.isnan(rows[:, 2]) | (rows[:, 2] < 0))):
        raise Invalid(f"{what} with a negative or NaN distance")


def _each_once(values: np.ndarray, low: int, high: int, what: str) -> None:
    """Every id in [low, high) exactly once among `values`, and nothing else."""
    bad = outside(values, low, high)
    if bad is not None:
        raise Invalid(f"{what}: {bad} outside {low} to {high - 1}")
    if len(values) != high - low or len(np.unique(values)) != len(values):
        raise Invalid(f"{what}: {len(values)} ids, repeated or missing, for {high - low}")


def _prediction(value: Sym | None, tree: np.ndarray, count: int, arrays: ArrayReader) -> None:
    """PredictionData (`approximate_predict`, `membership_vector`): its points are the clusterer's, its neighbour tree
    is over them, its cluster tree is the condensed tree's clusters, each exemplar array is as wide as the points
    (the distance code reads a point's width from each, unchecked), and its metric one that reads the points only."""
    state = dict_state(value.state) if isinstance(value, Obj) and native_class_of(value) == PREDICTION_DATA else None
    if state is None or state.dropped:
        raise Invalid(f"prediction data made by {native_class_of(value)}")
    shape = arrays.shape(state.get("raw_data"))
    if len(shape) != 2 or shape[0] != count or not shape[1]:
        raise Invalid(f"prediction raw_data of shape {shape} for {count} points")
    width = shape[1]
    near = state.get("tree")
    near_state = near.state if isinstance(near, Obj) and native_class_of(near) in BINARY_TREES else None
    if not isinstance(near_state, Seq) or not near_state.items or arrays.shape(near_state.items[0]) != shape:
        raise Invalid(f"a prediction neighbour tree made by {native_class_of(near)}, not over the raw data")
    if arrays.shape(state.get("core_distances")) != (count,):
        raise Invalid(f"core_distances of shape {arrays.shape(state.get('core_distances'))} for {count} points")
    clusters = arrays.values(state.get("cluster_tree"))
    if clusters.dtype != CONDENSED or not np.array_equal(clusters, tree[tree["child_size"] > 1]):
        raise Invalid("a prediction cluster tree that is not the condensed tree's clusters")
    _cluster_ids(state.get("reverse_cluster_map"), clusters, count, arrays)
    exemplars = state.get("exemplars")
    if not isinstance(exemplars, Seq) or exemplars.type != "list" or exemplars.dropped:
        raise Unread("exemplars that are no list wscan keeps whole")
    for index, exemplar in enumerate(exemplars.items):
        found = arrays.shape(exemplar)
        if len(found) != 2 or found[1] != width:
            raise Invalid(f"exemplar {index} of shape {found} for points of {width} features")
    _metric(state.get("dist_metric"), arrays)


def _cluster_ids(mapping: Sym | None, clusters: np.ndarray, count: int, arrays: ArrayReader) -> None:
    """The clusters `reverse_cluster_map` names, which the flat functions hand the compiled merge height: it climbs from
    each to the root through the cluster tree and never ends from an id the tree does not hold (helper 211)."""
    if not isinstance(mapping, Dict) or mapping.dropped:
        raise Unread("a reverse_cluster_map that is no dict wscan keeps whole")
    nodes = {count, *clusters["child"].tolist()}
    for _, value in mapping.items:
        found = _integer(value, arrays)
        if found not in nodes:
            raise Invalid(f"reverse_cluster_map naming cluster {found}, not in the condensed tree")


def _integer(value: Sym, arrays: ArrayReader) -> int:
    """An int, or a NumPy integer scalar, as prediction data keeps cluster ids."""
    found = _number(value, arrays)
    if type(found) is not int:
        raise Invalid(f"a cluster id {found}, no integer")
    return found


def _number(value: Sym, arrays: ArrayReader) -> int | float:
    """A setting or id as a number (`scalar_number`); one given a BUILD state of its own is not read."""
    found = None if isinstance(value, Obj) and value.state is not None else scalar_number(value, arrays)
    if found is None:
        raise Unread(f"a number made by {native_class_of(value)}")
    return found


def _metric(metric: Sym | None, arrays: ArrayReader) -> None:
    """hdbscan's DistanceMetric, restored as newObj(cls) with the state (p, vec, mat): one that reads the points only,
    with both arrays there (its __setstate__ takes None as a NULL pointer)."""
    cls = native_class_of(metric)
    if cls not in METRICS or not isinstance(metric, Obj):
        raise Invalid(f"a prediction distance metric made by {cls}")
    items = metric.state.items if isinstance(metric.state, Seq) and not metric.state.dropped else []
    if len(items) != 3 or not isinstance(items[0], Const) or type(items[0].value) is not float:
        raise Unread(f"{cls}'s state")
    for part in items[1:]:
        if not all(arrays.shape(part)):
            raise Invalid(f"{cls} with an empty weight array")


def _metric_arguments(value: Sym | None) -> None:
    """The keyword arguments an HDBSCAN passes its metric (weighted medoids, prediction data it generates): plain
    values, as fits keep them. Arrays (weights, matrices) reach compiled metrics that read them by the data's width."""
    if value is None or _is_none(value):
        return
    if not isinstance(value, Dict) or value.dropped:
        raise Unread("metric arguments that are no dict wscan keeps whole")
    for key, item in value.items:
        if not (isinstance(key, Const) and isinstance(item, Const) and isinstance(item.value, PLAIN)):
            raise Invalid(f"metric argument {native_class_of(key)}, not a plain value")


def _settings(state: Dict, arrays: ArrayReader) -> None:
    """What a refit takes from the state: alpha finite and at least MIN_ALPHA, a Minkowski power (its own `p`, or the
    metric arguments') finite and at least 1, a known algorithm, a bounded number of jobs. Absent ones are defaults."""
    if state.dropped:
        raise Unread("settings among more items than wscan keeps")
    alpha = state.get("alpha")
    if alpha is not None and not MIN_ALPHA <= _number(alpha, arrays) < float("inf"):
        raise Invalid(f"alpha {_number(alpha, arrays)}, which makes a refit's distances infinite or NaN")
    powers = [state.get("p")]
    kwargs = state.get("_metric_kwargs")
    if isinstance(kwargs, Dict):
        powers += [item for key, item in kwargs.items if isinstance(key, Const) and key.value == "p"]
    for power in powers:
        if power is not None and not _is_none(power) and not 1 <= _number(power, arrays) < float("inf"):
            raise Invalid(f"Minkowski power {_number(power, arrays)}, below 1 or not finite")
    algorithm = state.get("algorithm")
    if algorithm is not None and not (isinstance(algorithm, Const) and algorithm.value in ALGORITHMS):
        raise Invalid(f"algorithm {native_class_of(algorithm)}, not one hdbscan names")
    jobs = state.get("core_dist_n_jobs")
    if jobs is not None and not -MAX_JOBS <= _number(jobs, arrays) <= MAX_JOBS:
        raise Invalid(f"core_dist_n_jobs {_number(jobs, arrays)}")


def _held(state: Dict, key: str) -> bool:
    value = state.get(key)
    return value is not None and not _is_none(value)

