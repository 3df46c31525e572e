"""An HDBSCAN's minimum spanning tree, checked for what hdbscan's branch detection needs of it to stay in bounds.

Why: `gen_min_span_tree=True` keeps the tree, and `generate_branch_detection_data()` then `detect_branches_in_clusters`
(or `BranchDetector().fit`) build, for each cluster, a graph of its points from it, and hand that graph's spanning
tree to a compiled union-find (`_hdbscan_linkage.label`, bounds checks off) sized by its edges, not by its points. A
graph in pieces has too few edges: the union-find is indexed past its arrays (a cluster's tree edges pointed
elsewhere spun the default "full" method forever; helper 209 saw writes out of bounds). Which pieces the graph has
follows from the tree's edges and weights, the labels and the points, so wscan builds what hdbscan builds from them:

- "core": the cluster's tree edges, plus its points' nearest neighbours: connected when the tree edges connect it;
- "full" (the default): every pair of the cluster's points at most the cluster's heaviest tree weight apart, as the
  neighbour tree finds them (for euclidean, its squared distance against the squared radius) and hdbscan keeps them:
  connected when the tree edges it surely holds connect it, with another pair across each gap rounding leaves
  (helper 219: the generic algorithm's weights are a rounding error short; at 1e10 a bridge fell out of the graph
  and hdbscan aborted).

Everything else on that path is NumPy (which checks its indices) or is built fresh from the points. Branch detection
data kept in the file (`branch_detection_data=True`) is not checked here, and stays unverified.
"""

from __future__ import annotations

import numpy as np

from wscan.scanners.pickle_arrays import ArrayReader, Unread
from wscan.scanners.pickle_native_common import Invalid
from wscan.scanners.pickle_values import Const, Dict, _is_none

# The metrics generate_branch_detection_data makes a neighbour tree with (scikit-learn's KDTree and BallTree); for any
# other it makes no branch data, and branch detection refuses to run.
TREE_METRICS = frozenset({
    "euclidean", "l2", "minkowski", "p", "manhattan", "cityblock", "l1", "chebyshev", "infinity", "braycurtis",
    "canberra", "dice", "hamming", "haversine", "jaccard", "mahalanobis", "rogerstanimoto", "russellrao", "seuclidean",
    "sokalmichener", "sokalsneath",
})  # fmt: skip
# Those whose distances wscan computes as scikit-learn's trees do, in the same order of operations, so that a
# comparison with the tree's weights comes out as theirs does.
MEASURED = {"euclidean": "euclidean", "l2": "euclidean", "manhattan": "manhattan", "cityblock": "manhattan",
            "l1": "manhattan", "chebyshev": "chebyshev", "infinity": "chebyshev"}
# A point's coordinates at most this large keep every distance and centrality finite and above zero (a centrality of
# zero is an edge scipy's spanning tree drops).
MAX_COORDINATE = 1e100
MAX_ROUNDS = 64  # of hooking in `_components`: a million points on a shuffled path join in 14
CHUNK = 1 << 16  # tree edges (or pairs of points) measured at a time
MAX_GAPS = 10_000  # tree edges too long, each a search for another pair across it
MAX_PAIRS = 50_000_000  # pairs of points measured in those searches, in all


def check(state: Dict, arrays: ArrayReader, labels: np.ndarray, condensed: np.ndarray) -> None:
    """Raise Invalid when branch detection on this clusterer would build a graph in pieces, Unread when wscan cannot
    tell. `labels` and `condensed` are the clusterer's, already checked (`pickle_native_hdbscan.clusterer`)."""
    metric = state.get("metric")
    name = metric.value if isinstance(metric, Const) and isinstance(metric.value, str) else None
    if name is None:
        raise Unread("a spanning tree kept with a metric that is no name")
    if name not in TREE_METRICS:
        return  # no branch detection data can be made for it: nothing compiled reads the tree
    kwargs = state.get("_metric_kwargs")
    plain = kwargs is None or _is_none(kwargs) or (isinstance(kwargs, Dict) and not kwargs.items and not kwargs.dropped)
    if name not in MEASURED or not plain:
        raise Unread(f"a spanning tree over {name} distances, which wscan does not measure")
    points = _points(state, arrays, len(labels))
    count = _count(state, arrays)
    clusters, probabilities = _cluster_labels(state, arrays, labels, condensed, count)
    last_outlier = int(np.searchsorted(condensed["lambda_val"], 0.0, side="right"))
    if last_outlier:  # points at lambda 0 (not finite) are left out, and the tree's ids count the others
        finite = np.setdiff1d(np.arange(len(labels)), condensed["child"][:last_outlier])
        clusters, probabilities, points = clusters[finite], probabilities[finite], points[finite]
    tree = arrays.values(state.get("_min_spanning_tree"))
    if tree.dtype != np.float64 or tree.ndim != 2 or tree.shape[1] != 3:
        raise Invalid(f"_min_spanning_tree of dtype {tree.dtype} and shape {tree.shape}, not as hdbscan writes it")
    ends = tree[:, :2]
    if not bool(np.all((ends >= 0) & (ends < len(points)))) or bool(np.any(ends != np.floor(ends))):
        raise Invalid(f"_min_spanning_tree joining a point outside 0 to {len(points) - 1}, or no whole number")
    _cluster_graphs(clusters, probabilities, points, ends.astype(np.intp), tree[:, 2], count, MEASURED[name])


def _points(state: Dict, arrays: ArrayReader, count: int) -> np.ndarray:
    """The points branch detection measures: `_raw_data` as float64, one row a label."""
    raw = state.get("_raw_data")
    if raw is None or _is_none(raw):
        raise Unread("a spanning tree without the points it spans")
    points = arrays.values(raw)
    if points.ndim != 2 or len(points) != count or not points.shape[1] or points.dtype.kind not in "iuf":
        raise Invalid(f"_raw_data of dtype {points.dtype} and shape {points.shape} for {count} points")
    return points.astype(np.float64)


def _count(state: Dict, arrays: ArrayReader) -> int:
    """How many clusters branch detection walks: one per `cluster_persistence_` entry."""
    persistence = state.get("cluster_persistence_")
    if persistence is None or _is_none(persistence):
        raise Unread("a spanning tree without cluster_persistence_")
    shape = arrays.shape(persistence)
    return shape[0] if shape else 0


def _cluster_labels(
    state: Dict, arrays: ArrayReader, labels: np.ndarray, condensed: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """The labels and probabilities branch detection uses (`update_single_cluster_labels`): the clusterer's, or, when
    it allows a single cluster and found one, every point in it but those that left it before epsilon."""
    probabilities = arrays.values(state.get("probabilities_"))
    if probabilities.shape != labels.shape or probabilities.dtype.kind != "f":
        raise Invalid(f"probabilities_ of dtype {probabilities.dtype} and shape {probabilities.shape}")
    single = state.get("allow_single_cluster")
    if isinstance(single, Const) and single.value is True and count == 1:
        labels, probabilities = np.zeros_like(labels), np.ones_like(probabilities)
        epsilon = state.get("cluster_selection_epsilon")
        value = epsilon.value if isinstance(epsilon, Const) else None
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise Unread("a cluster_selection_epsilon that is no number")
        if value > 0.0:
            noise = condensed["child"][(condensed["lambda_val"] < 1 / value) & (condensed["child_size"] == 1)]
            labels[noise], probabilities[noise] = -1, 0.0
    elif not (isinstance(single, Const) and isinstance(single.value, bool)):
        raise Unread("an allow_single_cluster that is no bool")
    return labels, probabilities


def _cluster_graphs(
    clusters: np.ndarray, probabilities: np.ndarray, points: np.ndarray, ends: np.ndarray, weights: np.ndarray,
    count: int, metric: str,
) -> None:
    """Each cluster 0..count-1 connected by its tree edges ("core") and in the "full" graph (`_full_graphs`), its
    points bounded and weighted by probabilities in [0, 1] (its centroid, and every centrality from it, finite and
    above zero)."""
    member = (clusters >= 0) & (clusters < count)
    if not bool(np.all(np.abs(points[member]) <= MAX_COORDINATE)):  # NaN fails too
        raise Invalid(f"a clustered point with a coordinate not finite or beyond {MAX_COORDINATE:g}")
    weight = probabilities[member]
    if not bool(np.all((weight >= 0) & (weight <= 1))):
        raise Invalid("a clustered point's probability outside 0 to 1")
    first, second = clusters[ends[:, 0]], clusters[ends[:, 1]]
    inside = (first == second) & (first >= 0) & (first < count)
    edges = ends[inside]
    roots = _components(len(clusters), edges)
    pairs = np.unique(np.stack([clusters[member], roots[member]]), axis=1)
    pieces = np.bincount(pairs[0], minlength=count) if pairs.size else np.zeros(count, dtype=np.intp)
    if bool(np.any(pieces > 1)):
        label = int(np.flatnonzero(pieces > 1)[0])
        raise Invalid(f"_min_spanning_tree leaving cluster {label} in {int(pieces[label])} pieces")
    owner = first[inside]
    heaviest = np.full(count, -np.inf)
    np.maximum.at(heaviest, owner, weights[inside])
    _full_graphs(edges, owner, heaviest, clusters, points, metric)


def _full_graphs(
    edges: np.ndarray, owner: np.ndarray, heaviest: np.ndarray, clusters: np.ndarray, points: np.ndarray, metric: str
) -> None:
    """Each cluster connected in the "full" graph: by its tree edges that graph surely holds (`_reaches`) and, where
    one falls short, by another pair of its points across the gap. A tree edge a rounding error longer than its
    weight is common in real fits (the generic algorithm's dot-product distances): a pair nearby then joins the sides
    (helper 219)."""
    reaches = np.ones(len(edges), dtype=bool)
    for start in range(0, len(edges), CHUNK):
        chunk = edges[start:start + CHUNK]
        limit = heaviest[owner[start:start + CHUNK]]
        reaches[start:start + CHUNK] = _reaches(points[chunk[:, 0]], points[chunk[:, 1]], limit, metric)
    short = np.flatnonzero(~reaches)
    if not len(short):
        return
    if len(short) > MAX_GAPS:
        raise Unread(f"{len(short):,} spanning tree edges longer than their cluster's heaviest weight")
    roots = _components(len(clusters), edges[reaches])
    pairs_left = MAX_PAIRS
    for index in short.tolist():
        left, right = roots[edges[index, 0]], roots[edges[index, 1]]
        if left == right:
            continue
        sides = np.flatnonzero(roots == left), np.flatnonzero(roots == right)
        pairs_left -= len(sides[0]) * len(sides[1])
        if pairs_left < 0:
            raise Unread("spanning tree edges too long, whose clusters' other pairs are too many to measure")
        label = int(owner[index])
        if not _joined(points, *sides, heaviest[label], metric):
            raise Invalid(f"_min_spanning_tree with an edge of cluster {label} longer than its heaviest weight, and "
                          "no other pair as near across it")  # fmt: skip
        roots[sides[1]] = left


def _reaches(left: np.ndarray, right: np.ndarray, limit: np.ndarray | float, metric: str) -> np.ndarray:
    """Whether branch detection's "full" graph joins each pair: scikit-learn's `query_radius(r=limit + 1e-8)` finds
    it (for euclidean, by the squared distance against the squared radius), and hdbscan keeps the distance it returns
    if it is at most the limit. NaN limits join nothing."""
    total = _distances(left, right, metric, squared=True)
    within: np.ndarray = total <= limit if metric != "euclidean" else np.sqrt(total) <= limit
    if metric == "euclidean":
        radius = limit + 1e-8
        within &= total <= radius * radius
    return within


def _joined(points: np.ndarray, first: np.ndarray, second: np.ndarray, limit: float, metric: str) -> bool:
    """Whether some point of `first` and some of `second` are joined in the "full" graph."""
    rows = max(1, CHUNK // max(1, len(second)))
    for start in range(0, len(first), rows):
        block = first[start:start + rows]
        left = np.repeat(points[block], len(second), axis=0)
        right = np.tile(points[second], (len(block), 1))
        if bool(np.any(_reaches(left, right, limit, metric))):
            return True
    return False


def _components(size: int, edges: np.ndarray) -> np.ndarray:
    """Each node's component (its least member) over the edges: every round each root hooks to the least root it
    shares an edge with, then every node points at its root."""
    parent = np.arange(size)
    for _ in range(MAX_ROUNDS):
        low, high = parent[edges[:, 0]], parent[edges[:, 1]]
        if bool(np.all(low == high)):
            return parent
        np.minimum.at(parent, np.maximum(low, high), np.minimum(low, high))
        while True:
            up = parent[parent]
            if bool(np.all(up == parent)):
                break
            parent = up
    raise Unread(f"a spanning tree whose components take more than {MAX_ROUNDS} rounds to join")


def _distances(left: np.ndarray, right: np.ndarray, metric: str, squared: bool = False) -> np.ndarray:
    """Row-wise distances, summed feature by feature in order as scikit-learn's compiled metrics sum them; for
    euclidean, `squared` leaves out the root (scikit-learn's reduced distance)."""
    total = np.zeros(len(left))
    for feature in range(left.shape[1]):
        step = np.abs(left[:, feature] - right[:, feature])
        if metric == "euclidean":
            total += step * step
        elif metric == "manhattan":
            total += step
        else:
            total = np.maximum(total, step)
    return np.sqrt(total) if metric == "euclidean" and not squared else total
