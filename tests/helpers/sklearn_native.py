"""scikit-learn models with compiled state (neighbor trees, decision trees, histogram boosting), fitted for real, and
the ways a hostile writer changes one index so that predict() goes out of bounds (`pickle_native`).

Each model is fitted on small seeded data; each tamper returns a changed deep copy. Models are saved every way
scikit-learn users save them: pickle at protocols 0, 2, 4 and 5, joblib, joblib compressed."""

from __future__ import annotations

import copy
import io
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

SEED = 11
SAVES = ("pickle0", "pickle2", "pickle4", "pickle5", "joblib", "joblib-z")


def data(features: int = 3, rows: int = 120) -> tuple[Any, Any]:
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(rows, features))
    return x, (x[:, 0] + 0.3 * x[:, 1] > 0).astype(int)


def save(model: Any, how: str) -> bytes:
    """The bytes `how` writes for `model`."""
    import joblib

    if how.startswith("pickle"):
        return pickle.dumps(model, protocol=int(how.removeprefix("pickle")))
    buffer = io.BytesIO()
    joblib.dump(model, buffer, compress=3 if how == "joblib-z" else 0)
    return buffer.getvalue()


def benign_models() -> dict[str, Any]:
    """Fitted models whose compiled state `pickle_native` checks, one of each way scikit-learn builds it."""
    from sklearn.ensemble import (
        AdaBoostClassifier,
        BaggingClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        HistGradientBoostingClassifier,
        IsolationForest,
        RandomForestClassifier,
        StackingClassifier,
    )
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KernelDensity, KNeighborsClassifier, LocalOutlierFactor, NearestNeighbors
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    x, y = data()
    y3 = np.digitize(x[:, 0], [-0.5, 0.5])
    cov = np.cov(x.T)
    models: dict[str, Any] = {
        "knn-kd": KNeighborsClassifier(3, algorithm="kd_tree", leaf_size=5).fit(x, y),
        "knn-ball": KNeighborsClassifier(3, algorithm="ball_tree", leaf_size=5).fit(x, y),
        "knn-ball-mahalanobis": KNeighborsClassifier(
            3, algorithm="ball_tree", metric="mahalanobis", metric_params={"VI": np.linalg.inv(cov)}
        ).fit(x, y),
        "knn-ball-seuclidean": KNeighborsClassifier(
            3, algorithm="ball_tree", metric="seuclidean", metric_params={"V": x.var(axis=0)}
        ).fit(x, y),
        "knn-kd-minkowski-p3": KNeighborsClassifier(3, algorithm="kd_tree", p=3).fit(x, y),
        "knn-ball-weighted-minkowski": KNeighborsClassifier(
            3, algorithm="ball_tree", metric="minkowski", metric_params={"w": np.array([1.0, 2.0, 0.5])}
        ).fit(x, y),
        "neighbors-haversine": NearestNeighbors(algorithm="ball_tree", metric="haversine").fit(x[:, :2] / 4),
        "lof": LocalOutlierFactor(n_neighbors=5, novelty=True, algorithm="kd_tree").fit(x),
        "kde-weighted": KernelDensity(bandwidth=0.5).fit(x, sample_weight=np.linspace(0.5, 1.5, len(x))),
        "tree": DecisionTreeClassifier(max_depth=4, random_state=SEED).fit(x, y),
        "tree-unbounded": DecisionTreeClassifier(random_state=SEED).fit(x, y3),
        "tree-multi-output": DecisionTreeRegressor(max_depth=3).fit(x, np.column_stack([x[:, 0], x[:, 1]])),
        "forest": RandomForestClassifier(n_estimators=3, max_depth=3, random_state=SEED).fit(x, y),
        "extra-trees": ExtraTreesRegressor(n_estimators=2, max_depth=3, random_state=SEED).fit(x, x[:, 0]),
        "gradient-boosting-3": GradientBoostingClassifier(n_estimators=2, max_depth=2, random_state=SEED).fit(x, y3),
        "gradient-boosting-2": GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=SEED).fit(x, y),
        "isolation-forest": IsolationForest(n_estimators=3, random_state=SEED).fit(x),
        "bagging-half-features": BaggingClassifier(
            DecisionTreeClassifier(max_depth=2), n_estimators=3, max_features=0.5, random_state=SEED
        ).fit(x, y),
        "adaboost": AdaBoostClassifier(n_estimators=3, random_state=SEED).fit(x, y),
        "stacking-passthrough": StackingClassifier(
            [("lr", LogisticRegression()), ("tree", DecisionTreeClassifier(max_depth=2))],
            final_estimator=DecisionTreeClassifier(max_depth=3, random_state=SEED), passthrough=True, cv=2,
        ).fit(x, y),
        "pipeline-forest": make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=2, max_depth=2)).fit(
            x, y
        ),
        "hist-gradient-boosting": HistGradientBoostingClassifier(max_iter=3, random_state=SEED).fit(x, y),
    }
    models.update(_svms_and_matrices(x, y, y3))
    models.update(_clusterings(x))
    models.update(_containers(x, y))
    models.update(_boosting_inits(x, y3))
    codes = np.column_stack([np.digitize(x[:, 0], [-1, 0, 1]), x[:, 1:]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models["hist-gradient-boosting-categorical"] = HistGradientBoostingClassifier(
            max_iter=3, categorical_features=[0], random_state=SEED
        ).fit(codes, y)
    return models


def _svms_and_matrices(x: Any, y: Any, y3: Any) -> dict[str, Any]:
    """libsvm's models (dense, sparse, precomputed) and SciPy's sparse matrices, in models and on their own."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM

    sparse_x = sparse.csr_matrix(np.where(np.abs(x) > 0.5, x, 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SVC(probability=True) is deprecated in 1.9
        probability = SVC(probability=True, random_state=SEED).fit(x, y3)
    return {
        "svc-3-probability": probability,
        "svc-2": SVC().fit(x, y),
        "nu-svc": NuSVC().fit(x, y3),
        "svr": SVR().fit(x, x[:, 0]),
        "nu-svr": NuSVR().fit(x, x[:, 0]),
        "one-class-svm": OneClassSVM().fit(x),
        "svc-precomputed": SVC(kernel="precomputed").fit(x @ x.T, y3),
        "svc-sparse": SVC().fit(sparse_x, y3),
        "svr-sparse": SVR().fit(sparse_x, x[:, 0]),
        "logistic-sparsified": LogisticRegression().fit(x, y3).sparsify(),
        "knn-on-sparse-data": KNeighborsClassifier(3).fit(sparse_x, y),
        "sparse-matrices": {
            "csc": sparse.csc_matrix(sparse_x), "coo": sparse.coo_matrix(sparse_x),
            "coo-array": sparse.coo_array(sparse_x),
            "bsr": sparse.bsr_matrix(np.kron(np.eye(3), np.ones((2, 2))), blocksize=(2, 2)),
            "csr-array": sparse.csr_array(sparse_x), "empty": sparse.csr_matrix((4, 5)),
            "lil": sparse.lil_matrix(sparse_x), "dia": sparse.dia_matrix(np.eye(4) + np.eye(4, k=1)),
            "dok": sparse.dok_matrix(sparse_x),
        },
        "knn-brute-manhattan": KNeighborsClassifier(3, algorithm="brute", metric="manhattan").fit(x, y),
        **_scipy_objects(x),
    }  # fmt: skip


def _boosting_inits(x: Any, y3: Any) -> dict[str, Any]:
    """Multiclass gradient boosting started from the estimators people pass as `init` (each flagged until helper 206
    found them): its compiled predict writes as many columns as the initial predictions must have."""
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    inits = {
        "logistic": LogisticRegression(),
        "naive-bayes": GaussianNB(),
        "forest": RandomForestClassifier(n_estimators=2, max_depth=2, random_state=SEED),
        "tree": DecisionTreeClassifier(max_depth=2, random_state=SEED),
        "pipeline": make_pipeline(StandardScaler(), LogisticRegression()),
    }
    return {
        f"gradient-boosting-init-{name}": GradientBoostingClassifier(
            n_estimators=2, max_depth=2, init=init, random_state=SEED
        ).fit(x, y3)
        for name, init in inits.items()
    }


def _narrow_inits(models: dict[str, Any]) -> dict[str, Any]:
    """Those models with the initial estimator changed to predict two columns, where the model writes three."""
    changed = {name: copy.deepcopy(models[f"gradient-boosting-init-{name}"]) for name in
               ("logistic", "naive-bayes", "forest", "tree", "pipeline")}  # fmt: skip
    logistic, pipeline_step = changed["logistic"].init_, changed["pipeline"].init_.steps[-1][1]
    for estimator in (logistic, pipeline_step):
        estimator.coef_, estimator.intercept_ = estimator.coef_[:2].copy(), estimator.intercept_[:2].copy()
    one_row = copy.deepcopy(models["gradient-boosting-init-logistic"])
    one_row.init_.coef_, one_row.init_.intercept_ = one_row.init_.coef_[:1].copy(), one_row.init_.intercept_[:1].copy()
    changed["naive-bayes"].init_.classes_ = changed["naive-bayes"].init_.classes_[:2].copy()
    changed["forest"].init_.n_classes_ = 2
    changed["tree"].init_.n_classes_ = np.intp(2)  # what scikit-learn keeps there: a NumPy integer
    found = {f"gradient-boosting-init-{name}-narrow": model for name, model in changed.items()}
    return {**found, "gradient-boosting-init-logistic-one-row": one_row}


def _containers(x: Any, y: Any) -> dict[str, Any]:
    """Meta-estimators review 84 found flagged: an unfitted SVC (GridSearchCV's template), chains (member k is
    given X and k predictions), an isolation forest (each member a column subset)."""
    from sklearn.ensemble import BaggingClassifier, HistGradientBoostingClassifier, IsolationForest
    from sklearn.model_selection import GridSearchCV
    from sklearn.multioutput import ClassifierChain, RegressorChain
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    labels = np.column_stack([y, 1 - y, (x[:, 1] > 0).astype(int)])
    return {
        "svc-unfitted": SVC(),
        "grid-search-svc": GridSearchCV(SVC(), {"C": [0.5, 1.0]}, cv=2).fit(x, y),
        "bagging-svc": BaggingClassifier(SVC(), n_estimators=2, random_state=SEED).fit(x, y),
        "classifier-chain-trees": ClassifierChain(DecisionTreeClassifier(max_depth=3), order=[2, 0, 1]).fit(x, labels),
        "classifier-chain-hgb": ClassifierChain(HistGradientBoostingClassifier(max_iter=3)).fit(x, labels),
        "regressor-chain-trees": RegressorChain(DecisionTreeRegressor(max_depth=3)).fit(x, labels.astype(float)),
        "isolation-forest-one-feature": IsolationForest(n_estimators=3, max_features=1, random_state=SEED).fit(x),
    }


def _clusterings(x: Any) -> dict[str, Any]:
    from scipy import sparse
    from sklearn.cluster import HDBSCAN, BisectingKMeans, KMeans, MiniBatchKMeans

    return {
        "kmeans": KMeans(3, n_init=1, random_state=SEED).fit(x),
        "minibatch-kmeans": MiniBatchKMeans(3, n_init=1, random_state=SEED).fit(x),
        "bisecting-kmeans": BisectingKMeans(3, random_state=SEED).fit(x),
        "bisecting-kmeans-sparse": BisectingKMeans(3, random_state=SEED).fit(sparse.csr_matrix(x)),
        "hdbscan": HDBSCAN(min_cluster_size=5, copy=True).fit(x),
        "hbos-shaped": hbos(np.zeros((10, 3)), np.zeros((11, 3)), 10),
    }


def hbos(hist: Any, edges: Any, bins: Any) -> Any:
    """An object that pickles as PyOD's HBOS with these histograms (PyOD is not a test dependency; the check reads
    the class's name and its state, nothing else)."""
    import sys
    import types

    for name in ("pyod", "pyod.models", "pyod.models.hbos"):
        sys.modules.setdefault(name, types.ModuleType(name))
    module = sys.modules["pyod.models.hbos"]
    if not hasattr(module, "HBOS"):
        module.HBOS = type("HBOS", (), {"__module__": "pyod.models.hbos"})  # type: ignore[attr-defined]
    made = module.HBOS()
    made.__dict__.update(n_bins=bins, hist_=hist, bin_edges_=edges, alpha=0.1, tol=0.5, contamination=0.1)
    return made


def _scipy_objects(x: Any) -> dict[str, Any]:
    """SciPy objects whose evaluation trusts their arrays' sizes: splines (SplineTransformer keeps them), a grid
    interpolator, a Gaussian KDE."""
    from scipy.interpolate import (
        InterpolatedUnivariateSpline,
        LSQUnivariateSpline,
        RegularGridInterpolator,
        UnivariateSpline,
    )
    from scipy.stats import gaussian_kde
    from sklearn.linear_model import SGDRegressor
    from sklearn.preprocessing import SplineTransformer

    grid = RegularGridInterpolator((np.arange(3.0), np.arange(4.0)), np.arange(12.0).reshape(3, 4))
    points = np.linspace(0, 1, 20)
    return {
        "fitpack-splines": [
            InterpolatedUnivariateSpline(points, points**2), UnivariateSpline(points, np.sin(points)),
            LSQUnivariateSpline(points, points**3, [0.25, 0.5, 0.75]),
        ],
        "sgd-sparsified": SGDRegressor(random_state=SEED).fit(x, x[:, 0]).sparsify(),
        "spline-transformer": SplineTransformer(n_knots=4, degree=3).fit(x),
        "grid-interpolator": grid,
        "gaussian-kde": gaussian_kde(x[:, :2].T, weights=np.linspace(1, 2, len(x))),
    }


def _svm_change(model: Any, **changes: Any) -> Any:
    model = copy.deepcopy(model)
    for name, change in changes.items():
        setattr(model, name, change(getattr(model, name)))
    return model


def _sparse_change(matrix: Any, name: str, index: int, value: int) -> Any:
    matrix = copy.deepcopy(matrix)
    array = getattr(matrix, name).copy()
    array[index] = value
    setattr(matrix, name, array)
    return matrix


class _Forged:
    """Pickles as `func(*args)` with `state`: compiled state as a writer changed it. The change is never given to a
    live object: scikit-learn would go out of bounds in this process already, pickling it."""

    def __init__(self, func: Any, args: tuple[Any, ...], state: Any) -> None:
        self.func, self.args, self.state = func, args, state

    def __reduce__(self) -> tuple[Any, ...]:
        return self.func, self.args, self.state


def _binary_tree(model: Any, change: Callable[[list[Any]], None]) -> Any:
    model = copy.deepcopy(model)
    attribute = "_tree" if "_tree" in model.__dict__ else "tree_"
    func, args, state = model.__dict__[attribute].__reduce__()
    state = list(state)
    change(state)
    model.__dict__[attribute] = _Forged(func, args, tuple(state))
    return model


def _node_field(state: list[Any], name: str, index: int, value: int) -> None:
    nodes = state[2].copy()
    nodes[name][index] = value
    state[2] = nodes


def _tree_state(model: Any, change: Callable[[dict[str, Any]], None], **given: Any) -> Any:
    """`model` with its Tree's state changed by `change`, and its constructor arguments by `given`."""
    model = copy.deepcopy(model)
    cls, args, state = model.tree_.__reduce__()
    state = dict(state, nodes=state["nodes"].copy())
    change(state)
    args = (given.get("n_features", args[0]), given.get("n_classes", args[1]), args[2])
    model.__dict__["tree_"] = _Forged(cls, args, state)
    return model


def _tree_args(model: Any, **given: Any) -> Any:
    return _tree_state(model, lambda state: None, **given)


def _set(nodes: Any, name: str, index: int, value: int) -> None:
    nodes[name][index] = value


def _predictor(model: Any, change: Callable[[Any, Any], None]) -> Any:
    model = copy.deepcopy(model)
    predictor = model._predictors[0][0]
    predictor.nodes = predictor.nodes.copy()
    change(predictor.nodes, predictor)
    return model


def _inner(nodes: Any) -> int:
    return int(np.flatnonzero(nodes["is_leaf"] == 0)[0])


def hostile_models() -> dict[str, Any]:
    """Each real model with one value a writer changed so that its compiled code goes out of bounds."""
    models = benign_models()
    knn, tree, hgb = models["knn-kd"], models["tree"], models["hist-gradient-boosting"]
    forest = copy.deepcopy(models["forest"])
    for index, member in enumerate(forest.estimators_):  # the members take 40 features; the forest checks X for 3
        member.n_features_in_ = 40
        split = (lambda s: _set(s["nodes"], "feature", 0, 39)) if index == 0 else (lambda s: None)
        forest.estimators_[index] = _tree_state(member, split, n_features=40)
    categorical = copy.deepcopy(models["hist-gradient-boosting-categorical"])
    predictor = categorical._predictors[0][0]
    predictor.nodes = predictor.nodes.copy()
    split = int(np.flatnonzero((predictor.nodes["is_leaf"] == 0) & (predictor.nodes["is_categorical"] == 1))[0])
    predictor.nodes["bitset_idx"][split] = 50
    boosting = copy.deepcopy(models["gradient-boosting-3"])
    boosting.estimators_ = np.concatenate([boosting.estimators_, boosting.estimators_[:, :1]], axis=1)
    no_tree = copy.deepcopy(models["gradient-boosting-3"])
    no_tree.estimators_[1, 2].tree_ = None
    wide_members = copy.deepcopy(models["gradient-boosting-2"])
    for index, member in enumerate(wide_members.estimators_[:, 0]):
        member.n_features_in_ = 40
        split = (lambda s: _set(s["nodes"], "feature", 0, 39)) if index == 0 else (lambda s: None)
        wide_members.estimators_[index, 0] = _tree_state(member, split, n_features=40)
    unmapped = copy.deepcopy(models["hist-gradient-boosting-categorical"])
    unmapped._bin_mapper.is_categorical_ = np.zeros_like(unmapped._bin_mapper.is_categorical_)
    three = models["svc-3-probability"]
    knn_sparse = copy.deepcopy(models["knn-on-sparse-data"])
    knn_sparse._fit_X = _sparse_change(knn_sparse._fit_X, "indptr", -1, 10**8)
    logistic = copy.deepcopy(models["logistic-sparsified"])
    logistic.coef_ = _sparse_change(logistic.coef_, "indices", 0, 10**8)
    coo = models["sparse-matrices"]["coo"]
    kmeans = copy.deepcopy(models["kmeans"])
    kmeans.cluster_centers_ = kmeans.cluster_centers_[:, :1].copy()
    linkage = copy.deepcopy(models["hdbscan"])
    linkage._single_linkage_tree_ = linkage._single_linkage_tree_.copy()
    linkage._single_linkage_tree_["left_node"][0] = 10**9
    return {
        **_review_84(models),
        **_review_85(models),
        **_review_86(models),
        "kmeans-centers-narrow": kmeans,
        "hdbscan-linkage-far": linkage,
        "hbos-edges-narrow": hbos(np.zeros((10, 3)), np.zeros((11, 1)), 10),
        "hbos-bins-far": hbos(np.zeros((1, 3)), np.zeros((2, 3)), 10**9),
        "svc-n-support-negative": _svm_change(three, _n_support=lambda c: np.array(
            [-(10**9), 10**9, int(c.sum())], dtype=c.dtype)),
        "svc-n-support-over": _svm_change(models["svc-2"], _n_support=lambda c: c * 1000),
        "svc-precomputed-support-far": _svm_change(
            models["svc-precomputed"], support_=lambda s: np.where(s == s[0], 10**8, s).astype(s.dtype)),
        "svc-sparse-n-support": _svm_change(models["svc-sparse"], _n_support=lambda c: c[::-1] * 2),
        "svc-dual-coef-narrow": _svm_change(three, _dual_coef_=lambda d: d[:, :1].copy()),
        "svc-intercept-short": _svm_change(three, _intercept_=lambda i: i[:1].copy()),
        "svc-platt-short": _svm_change(three, _probA=lambda a: a[:1].copy()),
        "svr-n-support-far": _svm_change(models["svr"], _n_support=lambda c: c + 10**6),
        "svc-sparse-vectors-index-far": _svm_change(
            models["svc-sparse"], support_vectors_=lambda v: _sparse_change(v, "indices", 0, 10**8)),
        "knn-sparse-data-indptr-far": knn_sparse,
        "logistic-sparse-coef-index-far": logistic,
        "coo-coordinate-far": {"coo": _coo_row(coo, 10**6)},
        "gradient-boosting-wider-than-its-predictions": boosting,
        "gradient-boosting-member-without-a-tree": no_tree,
        "gradient-boosting-members-wider-than-the-model": wide_members,
        "hgb-categorical-split-on-a-number-feature": unmapped,
        "kd-ranges-overlapping": _binary_tree(knn, lambda s: _node_field(s, "idx_end", 1, int(s[2]["idx_end"][2]))),
        "kd-index-past-the-rows": _binary_tree(knn, lambda s: s.__setitem__(1, np.full_like(s[1], 2**40))),
        "kd-node-range-past-the-index": _binary_tree(knn, lambda s: _node_field(s, "idx_end", -1, 10**9)),
        "kd-no-leaves": _binary_tree(knn, lambda s: _node_field(s, "is_leaf", -1, 0)),
        "kd-bounds-for-one-node": _binary_tree(knn, lambda s: s.__setitem__(3, s[3][:, :1, :].copy())),
        "kd-more-nodes-claimed": _binary_tree(knn, lambda s: s.__setitem__(6, 10**6)),
        "kd-leaf-size-zero": _binary_tree(knn, lambda s: s.__setitem__(4, 0)),
        "kd-fewer-rows": _binary_tree(knn, lambda s: s.__setitem__(0, s[0][:10].copy())),
        "ball-index-negative": _binary_tree(
            models["knn-ball"], lambda s: s.__setitem__(1, np.where(s[1] == 0, -7, s[1]))
        ),
        "ball-mahalanobis-small-matrix": _mahalanobis(models["knn-ball-mahalanobis"]),
        "kde-short-weights": _binary_tree(models["kde-weighted"], lambda s: s.__setitem__(12, s[12][:1].copy())),
        "tree-left-child-far": _tree_state(tree, lambda s: _set(s["nodes"], "left_child", 0, 10**9)),
        "tree-right-child-negative": _tree_state(tree, lambda s: _set(s["nodes"], "right_child", 0, -5)),
        "tree-feature-far": _tree_state(tree, lambda s: _set(s["nodes"], "feature", 0, 10**9)),
        "tree-cycle": _tree_state(tree, lambda s: _set(s["nodes"], "left_child", 0, 0)),
        "tree-max-depth-zero": _tree_state(tree, lambda s: s.__setitem__("max_depth", 0)),
        "tree-more-nodes-counted": _tree_state(tree, lambda s: s.__setitem__("node_count", 10**6)),
        "tree-one-feature": _tree_args(tree, n_features=1),
        "tree-no-classes": _tree_args(tree, n_classes=np.zeros(1, dtype=np.intp)),
        "forest-members-wider-than-the-forest": forest,
        "hgb-left-child-far": _predictor(hgb, lambda n, p: _set(n, "left", _inner(n), 4_000_000_000)),
        "hgb-feature-far": _predictor(hgb, lambda n, p: _set(n, "feature_idx", _inner(n), 10**9)),
        "hgb-categorical-bitset-far": categorical,
    }


def _coo_row(matrix: Any, value: int) -> Any:
    matrix = copy.deepcopy(matrix)
    rows = matrix.coords[0].copy()
    rows[0] = value
    matrix.coords = (rows, matrix.coords[1])
    return matrix


def _mahalanobis(model: Any) -> Any:
    def shrink(state: list[Any]) -> None:
        func, args, (p, vec, mat) = state[11].__reduce__()
        state[11] = _Forged(func, args, (p, vec, mat[:1, :1].copy()))

    return _binary_tree(model, shrink)


def _review_84(models: dict[str, Any]) -> dict[str, Any]:
    """Review 84's ways past the first checks, each of which crashed predict or read out of bounds."""
    from sklearn.dummy import DummyRegressor
    from sklearn.neighbors._kd_tree import BinaryTree64

    knn = models["knn-kd"]
    as_base = copy.deepcopy(knn)
    func, _, state = as_base._tree.__reduce__()
    state = list(state)
    state[1] = np.full_like(state[1], 2**40)
    as_base.__dict__["_tree"] = _Forged(func, (BinaryTree64,), tuple(state))
    uncounted = _tree_state(models["tree"], lambda s: _set(s["nodes"], "feature", 0, 10**9), n_features=2**31)
    del uncounted.n_features_in_
    boosting = copy.deepcopy(models["gradient-boosting-2"])
    dummy = DummyRegressor().fit(np.zeros((2, 3)), np.zeros(2))
    dummy.tree_ = None
    boosting.estimators_[1, 0] = dummy
    subset = copy.deepcopy(models["isolation-forest-one-feature"])
    member = subset.estimators_[0]
    member.n_features_in_ = 3
    subset.estimators_[0] = _tree_state(member, lambda s: _set(s["nodes"], "feature", 0, 2), n_features=3)
    uniform = copy.deepcopy(models["gradient-boosting-3"])
    uniform.init_._strategy = "uniform"
    uniform.init_.n_classes_ = 1
    centers = copy.deepcopy(models["kmeans"])
    centers.cluster_centers_ = np.ones((3, 4096))
    del centers.n_features_in_
    sparse_kernel = copy.deepcopy(models["svc-sparse"])
    sparse_kernel.kernel = "precomputed"
    return {
        "kd-as-its-base-class": as_base,
        "tree-without-a-feature-count": uncounted,
        "gradient-boosting-member-none-tree": boosting,
        "isolation-forest-member-wider-than-its-columns": subset,
        "gradient-boosting-uniform-init-narrow": uniform,
        **_narrow_inits(models),
        "kmeans-wide-without-a-feature-count": centers,
        "svc-sparse-precomputed": sparse_kernel,
        "tree-fields-reordered": _tree_state(models["tree"], _reorder_fields),
        "kd-node-fields-renamed": _binary_tree(knn, _rename_node_fields),
    }


def _reorder_fields(state: dict[str, Any]) -> None:
    """The Tree's nodes with `feature` and `n_node_samples` trading places: scikit-learn casts by position."""
    nodes = state["nodes"]
    names = list(nodes.dtype.names)
    swapped = {"feature": "n_node_samples", "n_node_samples": "feature"}
    dtype = np.dtype({"names": [swapped.get(n, n) for n in names],
                      "formats": [nodes.dtype.fields[n][0] for n in names],
                      "offsets": [nodes.dtype.fields[n][1] for n in names], "itemsize": nodes.dtype.itemsize})
    moved = np.zeros(len(nodes), dtype=dtype)
    for name in names:
        moved[name] = nodes[name]
    moved["n_node_samples"][0] = 10**9  # what the loader takes for node 0's feature
    state["nodes"] = moved


def _rename_node_fields(state: list[Any]) -> None:
    """node_data with `idx_end` and `is_leaf` named the other way round: the compiled code reads by offset."""
    nodes = state[2]
    dtype = np.dtype({"names": ["idx_start", "is_leaf", "idx_end", "radius"], "formats": ["<i8"] * 3 + ["<f8"],
                      "offsets": [0, 8, 16, 24], "itemsize": 32})
    renamed = np.zeros(len(nodes), dtype=dtype)
    # By name every node is a leaf over its real rows; by offset node 0 is a leaf over a billion rows.
    renamed["idx_start"], renamed["is_leaf"], renamed["idx_end"] = nodes["idx_start"], 10**9, nodes["idx_end"]
    renamed["radius"] = nodes["radius"]
    state[2] = renamed


def _review_85(models: dict[str, Any]) -> dict[str, Any]:
    """Review 85's ways past the checks: SciPy's classes under other names or unchecked, neighbor labels, splines,
    interpolators, and a big-endian dtype (which a dtype given its state late makes ambiguous)."""
    from scipy import sparse

    logistic = copy.deepcopy(models["logistic-sparsified"])
    coef = logistic.coef_
    indices = coef.indices.copy()
    indices[0] = 10**8
    base = sparse._csr._csr_base.__new__(sparse._csr._csr_base)  # the same code as csr_matrix, allowlisted
    base.__dict__.update(coef.__dict__, indices=indices)
    logistic.coef_ = base
    lil = copy.deepcopy(models["logistic-sparsified"])
    lil.coef_ = sparse.lil_matrix(lil.coef_)
    lil.coef_.rows[0] = [10**8]
    lil.coef_.data[0] = [1.0]
    dia = sparse.dia_matrix(np.eye(4))
    dia.offsets = np.arange(8, dtype=dia.offsets.dtype)
    labels = copy.deepcopy(models["knn-brute-manhattan"])
    labels._y = np.full_like(labels._y, 10**9)  # every neighbor's vote lands far past the class scores
    spline = copy.deepcopy(models["spline-transformer"])
    spline.bsplines_[0]._t = np.arange(100_000.0)
    grid = copy.deepcopy(models["grid-interpolator"])
    grid._grid = (np.arange(300.0), np.arange(400.0))
    kde = copy.deepcopy(models["gaussian-kde"])
    kde._weights = kde._weights[:5].copy()
    swapped = copy.deepcopy(models["knn-kd"])
    func, args, state = swapped._tree.__reduce__()
    swapped.__dict__["_tree"] = _Forged(func, args, (state[0], state[1].astype(">i8"), *state[2:]))
    return {
        "csr-as-its-base-class": logistic,
        "lil-column-far": lil,
        "dia-offsets-past-data": {"dia": dia},
        "knn-brute-label-far": labels,
        "spline-knots-past-coefficients": spline,
        "grid-interpolator-values-small": grid,
        "kde-weights-short": kde,
        "kd-index-big-endian": swapped,
    }


def _review_86(models: dict[str, Any]) -> dict[str, Any]:
    """Review 86's ways past the checks: a Tree shared with a decoy that has a count, a boosting predictor whose
    nodes form a graph, k-means' thread count and bisecting tree, FITPACK's spline degree, a KNN's training data
    narrower than X and labels fewer than its rows."""
    from scipy.interpolate import InterpolatedUnivariateSpline

    decoy = _tree_state(models["tree"], lambda s: _set(s["nodes"], "feature", 0, 10**8), n_features=2**31)
    decoy.n_features_in_ = 10**9
    victim = copy.deepcopy(models["tree"])
    del victim.n_features_in_
    victim.__dict__["tree_"] = decoy.tree_  # one object: pickled once, held by both
    hgb = _predictor(models["hist-gradient-boosting"], _graph_nodes)
    threads = copy.deepcopy(models["kmeans"])
    threads._n_threads = 100_000
    bisecting = copy.deepcopy(models["bisecting-kmeans"])
    bisecting._bisecting_tree.left.center = np.ones(4096)
    points = np.linspace(0, 1, 20)
    spline = InterpolatedUnivariateSpline(points, points**2)
    knots = np.linspace(0, 1, 80)
    spline._eval_args = (knots, np.zeros(len(knots)), 30)  # FITPACK's splev keeps 20 basis values on its stack
    narrow = copy.deepcopy(models["knn-brute-manhattan"])
    narrow._fit_X = narrow._fit_X[:, :1].copy()
    short = copy.deepcopy(models["knn-brute-manhattan"])
    short._y = short._y[:1].copy()
    return {
        "tree-shared-with-a-counted-decoy": [decoy, victim],
        "hgb-nodes-forming-a-graph": hgb,
        "kmeans-threads-far": threads,
        "bisecting-kmeans-node-wide": bisecting,
        "fitpack-spline-degree-30": {"spline": spline},
        "knn-training-data-narrow": narrow,
        "knn-labels-fewer-than-rows": short,
    }


def _graph_nodes(nodes: Any, predictor: Any) -> None:
    """Node 0's right child is its left child: one node with two parents."""
    first = _inner(nodes)
    nodes["right"][first] = nodes["left"][first]
