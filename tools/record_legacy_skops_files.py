"""Record tests/data/legacy_sklearn/skops: ordinary models fitted and dumped by older skops releases.

Written for helper 227's sweep (2026-12-07). Run it under each environment below (a Python 3.10 venv per skops
release), then copy the files tests/test_legacy_names.py keeps (named <model>-skops-<version>.skops):
  skops 0.4.0, 0.5.0: scikit-learn 1.1.3, numpy<1.24, scipy<1.11    skops 0.6.0, 0.7.post0: scikit-learn 1.2.2
  skops 0.8.0, 0.9.0: scikit-learn 1.3.2, numpy<2                    skops 0.10.0: scikit-learn 1.4.2, numpy<2
  skops 0.11.0: scikit-learn 1.5.2, numpy<2
usage: python tools/record_legacy_skops_files.py OUTDIR
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
import skops.io as sio
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_iris, make_regression
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from sklearn.svm import SVC

warnings.filterwarnings("ignore")
X, Y = load_iris(return_X_y=True)
XR, YR = make_regression(n_samples=100, n_features=5, random_state=0)
FRAME = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": ["x", "y", "z"] * 50})

MODELS: dict[str, Callable[[], Any]] = {
    "gbr": lambda: GradientBoostingRegressor(n_estimators=5).fit(XR, YR),
    "hgbr": lambda: HistGradientBoostingRegressor(max_iter=5).fit(XR, YR),
    "svc_sparse": lambda: SVC().fit(sp.csr_matrix(X), Y),
    "knn_kdtree": lambda: KNeighborsClassifier(algorithm="kd_tree").fit(X, Y),
    "pipe_scaler_log1p": lambda: make_pipeline(
        FunctionTransformer(np.log1p), StandardScaler(), LogisticRegression(max_iter=500)
    ).fit(X, Y),
    "pipe_coltrans_df": lambda: Pipeline([
        ("ct", ColumnTransformer([("num", StandardScaler(), ["a", "b"]),
                                  ("cat", OneHotEncoder(handle_unknown="ignore"), ["c"])])),
        ("clf", LogisticRegression(max_iter=500)),
    ]).fit(FRAME, Y),
    "sgd_rs": lambda: SGDClassifier(random_state=np.random.RandomState(0)).fit(X, Y),
    "gridsearch": lambda: GridSearchCV(LogisticRegression(max_iter=500), {"C": [0.1, 1.0]}, cv=3).fit(X, Y),
    "plain_dict": lambda: {"arr": np.arange(10), "farr": np.ones((2, 3), dtype=np.float32),
                           "nested": [[1, 2], [3, [4, 5]]], "intkeys": {1: "a", 2: [1.5, None]},
                           "s": "hello", "t": (1, 2), "b": True, "f": 1.5},
    "plain_generator": lambda: {"gen": np.random.default_rng(0)},
}  # fmt: skip


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, make in MODELS.items():
        try:
            sio.dump(make(), out / f"{name}.skops")
        except Exception as exc:  # a model this release cannot write: reported, the rest still written
            print(f"{name}: {exc!r}"[:300], file=sys.stderr)


if __name__ == "__main__":
    main()
