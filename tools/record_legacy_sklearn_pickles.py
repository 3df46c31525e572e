"""Record tests/data/legacy_sklearn/pickles: plain pickles of ordinary models from older scikit-learn and NumPy 1.

Run under scikit-learn 1.1.3 (numpy 1.23), 1.3.2 and 1.5.2 (numpy 1.26), the environments
tools/record_legacy_skops_files.py lists: `python tools/record_legacy_sklearn_pickles.py OUTDIR`. The names these
write that today's releases renamed or removed are what rules/allow-legacy-names.yaml allows
(tools/gen_legacy_allowlist.py).
"""

from __future__ import annotations

import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from sklearn import compose, ensemble, model_selection, neighbors, pipeline, preprocessing, tree

warnings.filterwarnings("ignore")


def main() -> None:
    out = Path(sys.argv[1])
    x, y = np.random.default_rng(0).random((60, 4)), np.arange(60) % 3
    frame = pd.DataFrame(x, columns=list("abcd"))
    models = {
        "gbc": ensemble.GradientBoostingClassifier(n_estimators=3).fit(x, y),
        "gbr": ensemble.GradientBoostingRegressor(n_estimators=3).fit(x, x[:, 0]),
        "knn": neighbors.KNeighborsClassifier(algorithm="kd_tree").fit(x, y),
        "grid": model_selection.GridSearchCV(tree.DecisionTreeClassifier(), {"max_depth": [2, 3]}, cv=3).fit(x, y),
        "hgbc": ensemble.HistGradientBoostingClassifier(max_iter=3).fit(x, y),
        "ft": pipeline.make_pipeline(preprocessing.FunctionTransformer(np.log1p), tree.DecisionTreeClassifier())
        .fit(x, y),
        "coltx": compose.ColumnTransformer([("s", preprocessing.StandardScaler(), ["a"])], remainder="passthrough")
        .fit(frame),
    }
    for name, model in models.items():
        (out / f"{name}-skl{sklearn.__version__}.pkl").write_bytes(pickle.dumps(model))


if __name__ == "__main__":
    main()
