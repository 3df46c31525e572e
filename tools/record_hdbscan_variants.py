"""Keep hostile variants of real hdbscan clusterers as test data, each with what it did to hdbscan itself.

Why: hdbscan is not a test dependency, and its compiled code trusts the arrays a clusterer keeps
(`pickle_native_hdbscan`). Each variant here is a real fit with one array changed, saved with joblib; each is then
loaded in a fresh process and given the call that reads the changed array, and how that process ended is written to
the folder's README (a crash is memory corruption; a clean exit may still have read or written out of bounds).

Run where hdbscan is installed, in a virtualenv of its own, from the project root:
    python tools/record_hdbscan_variants.py tests/data/outliers/hostile
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

BRANCHES = "m.generate_branch_detection_data(); hdbscan.branches.detect_branches_in_clusters(m)"
# Each variant: (what it changes, the call that reads it).
CALLS = {
    "condensed-child-far": "m.outlier_scores_",
    "condensed-child-negative": "hdbscan.flat.membership_vector_flat(m, X[:3], n_clusters=2)",
    "condensed-cycle": "m.condensed_tree_.get_plot_data()",
    "linkage-far": "m.dbscan_clustering(0.5)",
    "rsl-hierarchy-negative": "m.cluster_hierarchy_.get_clusters(0.5, 5)",
    "prediction-wider-than-exemplars": "hdbscan.all_points_membership_vectors(m)",
    "prediction-cluster-tree-other": "hdbscan.all_points_membership_vectors(m)",
    "prediction-exemplars-narrow": "hdbscan.all_points_membership_vectors(m)",
    "prediction-reverse-map-far": "hdbscan.flat.membership_vector_flat(m, X)",
    "condensed-chain-deep": "m.condensed_tree_.get_plot_data()",
    # settings a refit takes from the file (helper 212): the fitted points and one far away
    "setting-alpha-tiny": "m.fit(P)",
    "setting-alpha-nan": "m.fit(P)",
    "setting-minkowski-p-zero": "m.fit(P)",
    # the spanning tree branch detection builds each cluster's graph from (a fit with gen_min_span_tree=True)
    "spanning-tree-cluster-split": BRANCHES,
    "spanning-tree-weights-short": BRANCHES,
    "spanning-tree-point-far": BRANCHES,
    "spanning-tree-id-far": BRANCHES,
}
CHAIN_LEVELS = 1100  # past wscan's cap of 1,000; helper 211's 120,000 overflowed hdbscan's C stack (a 15 MB file)
RUN = """
import sys, joblib, numpy as np, hdbscan, hdbscan.branches, hdbscan.flat
m = joblib.load(sys.argv[1])
X = np.random.default_rng(1).normal(size=(8, 2))
rng = np.random.RandomState(0)
P = np.vstack([rng.randn(40, 2), rng.randn(40, 2) + 6, rng.randn(20, 2) - 6, [[1000.0, 1000.0]]])
{call}
print("returned")
"""


def three_blobs(seed: int) -> Any:
    """100 points in three blobs (40, 40, 20), what every clusterer here is fitted on."""
    import numpy as np

    rng = np.random.RandomState(seed)
    return np.vstack([rng.randn(40, 2), rng.randn(40, 2) + 6, rng.randn(20, 2) - 6])


def variants() -> dict[str, Any]:
    import hdbscan
    import numpy as np

    points = three_blobs(0)
    fitted = hdbscan.HDBSCAN(min_cluster_size=5, prediction_data=True).fit(points)
    robust = hdbscan.RobustSingleLinkage(cut=0.5).fit(points)
    spanning = hdbscan.HDBSCAN(min_cluster_size=5, gen_min_span_tree=True).fit(points)

    def changed(model: Any, change: Callable[[Any], None]) -> Any:
        copied = copy.deepcopy(model)
        change(copied)
        return copied

    def point_row(model: Any) -> int:
        return int(np.flatnonzero(model._condensed_tree["child_size"] == 1)[0])

    def cluster_row(model: Any) -> int:
        return int(np.flatnonzero(model._condensed_tree["child_size"] > 1)[0])

    def far(m: Any) -> None:
        m._condensed_tree["child"][point_row(m)] = 1 << 36

    def negative(m: Any) -> None:
        m._condensed_tree["child"][point_row(m)] = -(1 << 40)

    def cycle(m: Any) -> None:
        row = cluster_row(m)
        m._condensed_tree["child"][row] = m._condensed_tree["parent"][row]

    def linkage(m: Any) -> None:
        m._single_linkage_tree[0, 0] = 1e9

    def hierarchy(m: Any) -> None:
        m._cluster_hierarchy[int(np.argmin(m._cluster_hierarchy[:, 2])), 1] = -1e12  # a merge below any cut

    def wider(m: Any) -> None:
        m._prediction_data.raw_data = np.zeros((len(m.labels_), 256))

    def narrow(m: Any) -> None:
        m._prediction_data.exemplars[0] = m._prediction_data.exemplars[0][:, :1].copy()

    def reverse_map(m: Any) -> None:
        m._prediction_data.reverse_cluster_map[0] = 10**9

    def chain(m: Any) -> None:
        """A tree every other check accepts, one cluster per level: cluster i splits into i + 1 and a one-point
        cluster beside it."""
        count = CHAIN_LEVELS + 2
        root = count
        rows = []
        for level in range(1, CHAIN_LEVELS + 1):
            parent = root if level == 1 else root + 2 * level - 3
            rows += [(parent, root + 2 * level - 1, 0.01 * level, 2), (parent, root + 2 * level, 0.01 * level, 2)]
            rows.append((root + 2 * level, level - 1, 0.01 * level + 0.005, 1))
        rows += [(root + 2 * CHAIN_LEVELS - 1, CHAIN_LEVELS, 1.0, 1), (root + 1, CHAIN_LEVELS + 1, 0.015, 1)]
        m._condensed_tree = np.array(rows, dtype=m._condensed_tree.dtype)
        m.labels_ = np.zeros(count, dtype=np.intp)
        m.probabilities_ = np.ones(count)
        m._raw_data = np.zeros((count, 2))
        m._single_linkage_tree = m._prediction_data = m._outlier_scores = None

    def alpha_tiny(m: Any) -> None:
        m.alpha, m.algorithm = 1e-307, "prims_kdtree"

    def alpha_nan(m: Any) -> None:
        m.alpha, m.algorithm = float("nan"), "generic"

    def p_zero(m: Any) -> None:
        m.metric, m.p, m.algorithm = "minkowski", 0.0, "generic"

    def other_tree(m: Any) -> None:
        m._prediction_data.cluster_tree = m._prediction_data.cluster_tree[:-1].copy()

    def cluster_edges(m: Any) -> np.ndarray:
        """Rows of the spanning tree joining two points of cluster 0."""
        tree, labels = m._min_spanning_tree, m.labels_
        return np.flatnonzero((labels[tree[:, 0].astype(np.intp)] == 0) & (labels[tree[:, 1].astype(np.intp)] == 0))

    def split(m: Any) -> None:  # all but five of cluster 0's edges point into cluster 1
        m._min_spanning_tree[cluster_edges(m)[5:], 1] = np.flatnonzero(m.labels_ == 1)[0]

    def short(m: Any) -> None:  # the "full" graph joins pairs no farther apart than the heaviest edge
        m._min_spanning_tree[cluster_edges(m), 2] *= 0.3

    def point_far(m: Any) -> None:
        m._raw_data = m._raw_data.copy()
        m._raw_data[np.flatnonzero(m.labels_ == 0)[3]] = np.nan

    def id_far(m: Any) -> None:
        m._min_spanning_tree[0, 0] = 1e6

    return {
        "original": fitted,
        "original-spanning-tree": spanning,
        "original-rsl": robust,
        "condensed-child-far": changed(fitted, far),
        "condensed-child-negative": changed(fitted, negative),
        "condensed-cycle": changed(fitted, cycle),
        "linkage-far": changed(fitted, linkage),
        "rsl-hierarchy-negative": changed(robust, hierarchy),
        "prediction-wider-than-exemplars": changed(fitted, wider),
        "prediction-cluster-tree-other": changed(fitted, other_tree),
        "prediction-exemplars-narrow": changed(fitted, narrow),
        "prediction-reverse-map-far": changed(fitted, reverse_map),
        "condensed-chain-deep": changed(fitted, chain),
        "setting-alpha-tiny": changed(fitted, alpha_tiny),
        "setting-alpha-nan": changed(fitted, alpha_nan),
        "setting-minkowski-p-zero": changed(fitted, p_zero),
        "spanning-tree-cluster-split": changed(spanning, split),
        "spanning-tree-weights-short": changed(spanning, short),
        "spanning-tree-point-far": changed(spanning, point_far),
        "spanning-tree-id-far": changed(spanning, id_far),
    }


def outcome(path: Path, call: str) -> str:
    """How a fresh process that loads the file and makes the call ends."""
    # A session of its own: branch detection runs in joblib's worker processes, which a hang leaves spinning.
    process = subprocess.Popen([sys.executable, "-c", RUN.format(call=call), str(path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        _, stderr = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return "hung (killed after 20 s)"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    if process.returncode < 0:
        return f"killed by signal {-process.returncode}"
    workers = re.search(r"exit codes of the workers are \{([^}]*)\}", stderr)
    if workers:  # branch detection's joblib workers died: loky names their exit codes
        return f"a worker process killed ({workers[1]})"
    if process.returncode:
        last = (stderr.strip().splitlines() or ["?"])[-1]
        return f"exit {process.returncode}: {last[:80]}"
    return "returned"


def main(folder: Path) -> None:
    from importlib.metadata import version

    import joblib

    warnings.simplefilter("ignore")
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, model in variants().items():
        path = folder / f"{name}.joblib"
        joblib.dump(model, path)
        if name in CALLS:
            rows.append(f"| `{name}.joblib` | `{CALLS[name]}` | {outcome(path, CALLS[name])} |")
    (folder / "README.md").write_text(
        "# Hostile hdbscan clusterers\n\nWritten by `tools/record_hdbscan_variants.py` "
        f"(hdbscan {version('hdbscan')}): "
        "a real HDBSCAN (100 points in three blobs, `min_cluster_size=5, prediction_data=True`), another with "
        "`gen_min_span_tree=True` instead, and a real RobustSingleLinkage (`cut=0.5`), saved with joblib as "
        "`original*.joblib`, and copies of them with one array "
        "changed (or a setting a refit takes). Each copy was loaded in a fresh process and given the call that "
        "reads it:\n\n"
        "| file | call | how the process ended |\n|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "A crash is memory corruption; a call that returned may still have read or written out of bounds. The deep "
        f"chain ({CHAIN_LEVELS:,} levels) is within hdbscan's stack here: it is past wscan's cap, which stops one "
        "that is not (120,000 levels overflowed the C stack).\n"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
