"""scikit-learn models whose compiled code trusts pickled index arrays (`pickle_native`, WS-PKL-059).

A KDTree, a decision tree or a histogram-boosting predictor with one index changed imports nothing but scikit-learn
and NumPy, and its predict() reads or writes outside its arrays. Each such change to a real fitted model is flagged
in every way the model is saved; the same models as scikit-learn writes them are not; the loader really does go out
of bounds on a few of them (a child process killed by a signal)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.scanning import scan, scan_bytes
from tests.helpers.sklearn_native import SAVES, benign_models, hostile_models, save
from wscan.model import Severity

pytest.importorskip("sklearn")

RULE = "WS-PKL-059"


@pytest.fixture(scope="module")
def benign() -> dict[str, Any]:
    return benign_models()


@pytest.fixture(scope="module")
def hostile() -> dict[str, Any]:
    return hostile_models()


def findings(tmp_path: Path, blob: bytes, name: str) -> dict[str, tuple[Severity, str]]:
    report = scan_bytes(tmp_path, blob, name)
    return {f.rule_id: (f.severity, f.message) for f in report.findings}


HOSTILE = [
    "tree-shared-with-a-counted-decoy", "hgb-nodes-forming-a-graph", "kmeans-threads-far", "bisecting-kmeans-node-wide",
    "fitpack-spline-degree-30", "knn-training-data-narrow", "knn-labels-fewer-than-rows",
    "csr-as-its-base-class", "lil-column-far", "dia-offsets-past-data", "knn-brute-label-far",
    "spline-knots-past-coefficients", "grid-interpolator-values-small", "kde-weights-short", "kd-index-big-endian",
    "kd-as-its-base-class", "tree-without-a-feature-count", "gradient-boosting-member-none-tree",
    "isolation-forest-member-wider-than-its-columns", "gradient-boosting-uniform-init-narrow",
    "kmeans-wide-without-a-feature-count", "svc-sparse-precomputed", "tree-fields-reordered", "kd-node-fields-renamed",
    "kmeans-centers-narrow", "hdbscan-linkage-far", "hbos-edges-narrow", "hbos-bins-far",
    "svc-n-support-negative", "svc-n-support-over", "svc-precomputed-support-far", "svc-sparse-n-support",
    "svc-dual-coef-narrow", "svc-intercept-short", "svc-platt-short", "svr-n-support-far",
    "svc-sparse-vectors-index-far", "knn-sparse-data-indptr-far", "logistic-sparse-coef-index-far",
    "coo-coordinate-far",
    "gradient-boosting-wider-than-its-predictions", "gradient-boosting-member-without-a-tree",
    "gradient-boosting-members-wider-than-the-model", "hgb-categorical-split-on-a-number-feature",
    "kd-ranges-overlapping",
    "kd-index-past-the-rows", "kd-node-range-past-the-index", "kd-no-leaves", "kd-bounds-for-one-node",
    "kd-more-nodes-claimed", "kd-leaf-size-zero", "kd-fewer-rows", "ball-index-negative",
    "ball-mahalanobis-small-matrix", "kde-short-weights", "tree-left-child-far", "tree-right-child-negative",
    "tree-feature-far", "tree-cycle", "tree-max-depth-zero", "tree-more-nodes-counted", "tree-one-feature",
    "tree-no-classes", "forest-members-wider-than-the-forest", "hgb-left-child-far", "hgb-feature-far",
    "hgb-categorical-bitset-far", "gradient-boosting-init-logistic-narrow", "gradient-boosting-init-logistic-one-row",
    "gradient-boosting-init-naive-bayes-narrow", "gradient-boosting-init-forest-narrow",
    "gradient-boosting-init-tree-narrow", "gradient-boosting-init-pipeline-narrow",
]  # fmt: skip


def test_every_hostile_case_is_listed(hostile: dict[str, Any]) -> None:
    assert sorted(hostile) == sorted(HOSTILE)


@pytest.mark.parametrize("how", SAVES)
@pytest.mark.parametrize("name", HOSTILE)
def test_an_index_out_of_bounds_is_flagged(tmp_path: Path, hostile: dict[str, Any], name: str, how: str) -> None:
    found = findings(tmp_path, save(hostile[name], how), f"{name}.{how}")
    assert found.get(RULE, (None, ""))[0] == Severity.HIGH, found
    if name not in UNCOUNTED:
        assert "cannot check" not in found[RULE][1], found[RULE]  # read and found wrong, not unread


# Nothing to bound them by, or a byte order the loader may have read either way: reported as unread.
UNCOUNTED = {"tree-without-a-feature-count", "kmeans-wide-without-a-feature-count", "kd-index-big-endian",
             "tree-shared-with-a-counted-decoy"}


BENIGN = [
    "knn-kd", "knn-ball", "knn-ball-mahalanobis", "knn-ball-seuclidean", "knn-kd-minkowski-p3",
    "knn-ball-weighted-minkowski", "neighbors-haversine", "lof", "kde-weighted", "tree", "tree-unbounded",
    "tree-multi-output", "forest", "extra-trees", "gradient-boosting-3", "gradient-boosting-2", "isolation-forest",
    "bagging-half-features", "adaboost", "stacking-passthrough", "pipeline-forest", "hist-gradient-boosting",
    "hist-gradient-boosting-categorical", "svc-3-probability", "svc-2", "nu-svc", "svr", "nu-svr", "one-class-svm",
    "svc-precomputed", "svc-sparse", "svr-sparse", "logistic-sparsified", "knn-on-sparse-data", "sparse-matrices",
    "kmeans", "minibatch-kmeans", "bisecting-kmeans", "hdbscan", "hbos-shaped", "svc-unfitted", "grid-search-svc",
    "bagging-svc", "classifier-chain-trees", "classifier-chain-hgb", "regressor-chain-trees",
    "isolation-forest-one-feature", "knn-brute-manhattan", "spline-transformer", "grid-interpolator", "gaussian-kde",
    "fitpack-splines", "sgd-sparsified", "bisecting-kmeans-sparse", "gradient-boosting-init-logistic",
    "gradient-boosting-init-naive-bayes", "gradient-boosting-init-forest", "gradient-boosting-init-tree",
    "gradient-boosting-init-pipeline",
]  # fmt: skip


def test_every_benign_case_is_listed(benign: dict[str, Any]) -> None:
    assert sorted(benign) == sorted(BENIGN)


@pytest.mark.parametrize("how", SAVES)
@pytest.mark.parametrize("name", BENIGN)
def test_models_as_scikit_learn_writes_them_pass(tmp_path: Path, benign: dict[str, Any], name: str, how: str) -> None:
    found = findings(tmp_path, save(benign[name], how), f"{name}.{how}")
    assert RULE not in found, found[RULE]
    if name != "hbos-shaped":  # a stand-in for PyOD's class, which is off the allowlist without PyOD's own modules
        assert not {rule for rule, (severity, _) in found.items() if severity >= Severity.HIGH}, found


def test_real_pyod_and_hdbscan_files_pass() -> None:
    """PyOD's HBOS, KNN, LOF and OCSVM and the hdbscan package's prediction data (a KDTree) as those libraries
    wrote them (tests/data/outliers)."""
    folder = Path(__file__).parent / "data" / "outliers"
    names = ["pyod_hbos.pkl", "pyod_knn.pkl", "pyod_lof.pkl", "pyod_ocsvm.pkl", "hdbscan_manhattan.pkl"]
    for name in names:
        assert RULE not in {f.rule_id for f in scan(folder / name).findings}, name


PREDICT = """
import pickle, sys
import numpy as np
model = pickle.load(open(sys.argv[1], "rb"))
x = np.random.default_rng(1).normal(size=(64, 3))
for _ in range(20):
    if hasattr(model, "kneighbors"):
        model.kneighbors(x)
    model.predict(x)
    if hasattr(model, "decision_path"):
        model.decision_path(x)
print("survived")
"""


@pytest.mark.parametrize("name", [
    "kd-index-past-the-rows", "tree-left-child-far", "hgb-left-child-far", "svc-n-support-negative",
    "kd-node-fields-renamed", "tree-fields-reordered", "gradient-boosting-member-none-tree", "knn-brute-label-far",
])  # fmt: skip
def test_the_loader_goes_out_of_bounds(tmp_path: Path, hostile: dict[str, Any], name: str) -> None:
    """What the rule is for: scikit-learn's own predict() on the file is killed by a signal (SIGSEGV)."""
    path = tmp_path / f"{name}.pkl"
    path.write_bytes(save(hostile[name], "pickle4"))
    run = subprocess.run([sys.executable, "-c", PREDICT, str(path)], capture_output=True, text=True, timeout=300)
    assert run.returncode < 0, (run.returncode, run.stdout, run.stderr[-500:])
    assert findings(tmp_path, path.read_bytes(), path.name)[RULE][0] == Severity.HIGH


def test_arrays_the_file_does_not_hold_are_reported(tmp_path: Path, benign: dict[str, Any]) -> None:
    """Protocol 5 with the arrays out of band (the loader's caller passes them): nothing to check, so reported."""
    blob = pickle.dumps(benign["knn-kd"], protocol=5, buffer_callback=lambda buffer: None)
    severity, message = findings(tmp_path, blob, "out-of-band.pkl")[RULE]
    assert severity == Severity.HIGH and "cannot check" in message, message


def test_a_member_past_the_kept_items_of_a_forest_is_bounded_by_the_forest(tmp_path: Path) -> None:
    """The pickle machine keeps 4,096 items of a list: tree 4,150 of a 4,200-tree forest is not seen held by the
    forest, so it is bounded by the forest's feature count anyway (before: its own forged count of 40 let a split on
    feature 39 pass, which predict reads from a row of 3). The same forest as scikit-learn writes it passes."""
    from sklearn.ensemble import ExtraTreesClassifier

    from tests.helpers.sklearn_native import _set, _tree_state, data

    x, y = data()
    forest = ExtraTreesClassifier(n_estimators=4200, max_depth=1, random_state=0, n_jobs=2).fit(x, y)
    assert RULE not in findings(tmp_path, save(forest, "pickle4"), "forest.pkl")
    member = forest.estimators_[4150]
    member.n_features_in_ = 40
    forest.estimators_[4150] = _tree_state(member, lambda s: _set(s["nodes"], "feature", 0, 39), n_features=40)
    severity, message = findings(tmp_path, save(forest, "pickle4"), "forest-bad.pkl")[RULE]
    assert severity == Severity.HIGH and "feature 39 of a split, for 3 features" in message, message


def test_an_array_past_max_member_bytes_is_unverified_and_the_limit_named(tmp_path: Path) -> None:
    """An array is read back whole to be checked, so its size is bounded by `max-member-bytes`, which the user can
    raise (it was a fixed 256 MiB: a real tree of over 4 million nodes was unverified whatever the limits). Arrays of
    up to 4 KiB are held in the pickle's stream and not read back; a KD-tree of 2,000 rows holds larger ones."""
    from dataclasses import replace

    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier

    from wscan.config import Config
    from wscan.limits import Limits

    rows = np.random.RandomState(0).rand(2000, 3)
    model = KNeighborsClassifier(algorithm="kd_tree").fit(rows, np.arange(2000) % 3)
    index = model._tree.get_arrays()[1].nbytes  # idx_array, the largest array the checks read (16,000 bytes)
    blob = save(model, "pickle4")
    assert RULE not in findings(tmp_path, blob, "at-default.pkl")
    for limit in (4097, index - 1):
        config = Config(jobs=0, limits=replace(Limits(), max_member_bytes=limit))
        found = [f for f in scan_bytes(tmp_path, blob, f"under-{limit}.pkl", config).findings if f.rule_id == RULE]
        assert found and all(f.severity == Severity.HIGH for f in found), found
        assert f"idx_array: an array of {index:,} bytes, over max-member-bytes ({limit:,})" in found[0].message, found
    config = Config(jobs=0, limits=replace(Limits(), max_member_bytes=index))
    assert RULE not in {f.rule_id for f in scan_bytes(tmp_path, blob, "at-the-limit.pkl", config).findings}
