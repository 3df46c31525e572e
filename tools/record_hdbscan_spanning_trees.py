"""Keep real hdbscan clusterers fitted with `gen_min_span_tree=True` as test data, with what branch detection did.

Why: wscan checks the spanning tree such a clusterer keeps for what hdbscan's branch detection needs of it
(`pickle_native_hdbscan_branches`), and must pass every tree a real fit writes: many shapes of data, each algorithm,
the metrics branch detection measures by, a single cluster with epsilon, points that are not finite. Each file is
loaded in a fresh process and given branch detection in both its methods; the outcomes go to the folder's README.

Run where hdbscan is installed, in a virtualenv of its own, from the project root:
    python tools/record_hdbscan_spanning_trees.py tests/data/outliers/spanning-tree
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

from record_hdbscan_variants import outcome, three_blobs  # type: ignore[import-not-found]

CALL = "m.generate_branch_detection_data(); hdbscan.branches.detect_branches_in_clusters(m, branch_detection_method={})"


def fits() -> dict[str, Any]:
    """Each name's fitted clusterer: blobs of points, one setting changed from the defaults at a time."""
    import hdbscan
    import numpy as np

    def blobs(seed: int, count: int, width: int) -> Any:
        rng = np.random.RandomState(seed)
        return np.vstack([rng.randn(count // 3, width) + 6.0 * blob for blob in range(3)])

    def grouped_chains(count: int, group: int, seed: int) -> Any:
        """Two chains of points, in groups a step of 1e11 apart, the groups one step apart whose length rounds badly
        (helper 219): scikit-learn's neighbour tree, comparing squares, leaves that step out of the "full" graph."""
        steps = [(1e11, 0.0) if index % group else (516179210714.0, 615010664235.0) for index in range(1, count)]
        chain = np.vstack([[0.0, 0.0], np.cumsum(steps, axis=0)])
        both = np.vstack([chain, chain + np.array([0.0, 1e15])])
        return both[np.random.default_rng(seed).permutation(len(both))]

    single = np.random.RandomState(9).randn(200, 2)
    bridged = np.vstack([np.random.RandomState(20).randn(50, 2) * 0.1 + [step, 0.0] for step in range(6)])
    not_finite = blobs(12, 300, 2)
    not_finite[5], not_finite[77] = np.nan, np.inf
    cases: dict[str, tuple[Any, dict[str, Any]]] = {
        "default": (blobs(0, 300, 2), {}),
        "min-samples-1": (blobs(1, 300, 2), {"min_samples": 1}),
        "twenty-features": (blobs(4, 300, 20), {}),
        "generic": (blobs(7, 300, 3), {"algorithm": "generic"}),
        "prims-balltree": (blobs(7, 300, 3), {"algorithm": "prims_balltree"}),
        "manhattan": (blobs(8, 300, 4), {"metric": "manhattan"}),
        "l1": (blobs(8, 300, 4), {"metric": "l1"}),
        "chebyshev": (blobs(8, 300, 4), {"metric": "chebyshev"}),
        "infinity": (blobs(8, 300, 4), {"metric": "infinity"}),
        "cosine": (blobs(8, 300, 4), {"metric": "cosine", "algorithm": "generic"}),
        "minkowski": (blobs(8, 300, 4), {"metric": "minkowski", "p": 2}),
        "single-cluster": (single, {"allow_single_cluster": True}),
        "single-cluster-epsilon": (single, {"allow_single_cluster": True, "cluster_selection_epsilon": 0.5}),
        "epsilon": (blobs(10, 300, 2), {"cluster_selection_epsilon": 1.0}),
        "leaf": (blobs(11, 300, 2), {"cluster_selection_method": "leaf"}),
        "not-finite": (not_finite, {}),
        "duplicates": (np.round(blobs(13, 300, 2)), {}),
        "integers": (np.round(blobs(14, 300, 3) * 10).astype(np.int64), {}),
        "float32": (blobs(15, 300, 3).astype(np.float32), {}),
        "alpha-2": (blobs(16, 300, 2), {"alpha": 2.0}),
        "alpha-0.5": (blobs(17, 300, 2), {"alpha": 0.5}),
        "scale-1e12": (blobs(18, 300, 2) * 1e12, {}),
        "scale-1e-12": (blobs(19, 300, 2) * 1e-12, {}),
        "bridged": (bridged, {"min_samples": 1, "min_cluster_size": 20}),
        # helper 219: the generic algorithm's dot-product distances make a tree edge a rounding error longer than its
        # weight, which the "full" graph leaves out; another pair across it joins the cluster all the same
        "generic-seed-0": (three_blobs(0), {"algorithm": "generic", "min_cluster_size": 5}),
        "generic-seed-2": (three_blobs(2), {"algorithm": "generic", "min_cluster_size": 5}),
        "generic-l2-seed-0": (three_blobs(0), {"algorithm": "generic", "metric": "l2", "min_cluster_size": 5}),
        # ... and fits whose "full" graph falls apart in hdbscan itself (wscan reports them)
        "generic-min-samples-1": (three_blobs(0), {"algorithm": "generic", "min_samples": 1, "min_cluster_size": 5}),
        "scale-1e10-min-samples-1": (three_blobs(0) * 1e10, {"min_samples": 1, "min_cluster_size": 5}),
        "grouped-chains": (grouped_chains(40, 4, 1), {"min_samples": 1, "min_cluster_size": 5}),
    }
    return {name: hdbscan.HDBSCAN(**{"min_cluster_size": 10, **settings}, gen_min_span_tree=True).fit(points)
            for name, (points, settings) in cases.items()}  # fmt: skip


def main(folder: Path) -> None:
    from importlib.metadata import version

    import joblib

    warnings.simplefilter("ignore")
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, model in fits().items():
        path = folder / f"{name}.joblib"
        joblib.dump(model, path)
        ends = [outcome(path, CALL.format(repr(method))) for method in ("full", "core")]
        rows.append(f"| `{name}.joblib` | {ends[0]} | {ends[1]} |")
    (folder / "README.md").write_text(
        "# hdbscan clusterers that keep a minimum spanning tree\n\nWritten by `tools/record_hdbscan_spanning_trees.py` "
        f"(hdbscan {version('hdbscan')}): real fits with `gen_min_span_tree=True`, one setting changed from the "
        "defaults at a time (`min_cluster_size=10`), saved with joblib. Each was loaded in a fresh process and given "
        "`m.generate_branch_detection_data()` then `hdbscan.branches.detect_branches_in_clusters(m)` with each "
        "branch detection method:\n\n"
        "| file | \"full\" (the default) | \"core\" |\n|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "`cosine`: branch detection makes no data for that metric, so it refuses to run. The last three are fits "
        "whose \"full\" graph falls apart in hdbscan itself (a tree edge the neighbour tree's rounding leaves out, "
        "with no other pair across it): wscan reports them (helper 219).\n"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
