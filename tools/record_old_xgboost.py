"""Keep real files of older XGBoost as test data, and the names their pickles import, for rules/allow-tabular.yaml.

Why: XGBoost before 1.6 pickled an XGBClassifier with its own label encoder (`xgboost.compat.XGBoostLabelEncoder`,
gone since), and a booster trained for no rounds carries `best_iteration` -1 (1.x). The test extra installs one
XGBoost, so the older ones' files are made once, here, and committed: tools/gen_tabular_allowlist.py adds the
names in each folder's names.txt, and test_benign_real scans the files.

Run with the older XGBoost, from the project root, in a virtualenv of its own (never the test extra's):
    python tools/record_old_xgboost.py tests/data/old_xgboost/xgboost-1.5.2
The pickles are this tool's own, made a moment before; loading them to record is safe.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

from pack_file import record_folder

os.environ.setdefault("OMP_NUM_THREADS", "1")


def main(folder: Path) -> None:
    import numpy as np
    import sklearn
    import xgboost as xgb

    warnings.simplefilter("ignore")
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    features = rng.normal(size=(60, 3)).astype(np.float32)
    labels = (features[:, 0] > 0).astype(int) + (features[:, 1] > 0.5).astype(int)  # three classes
    small = {"n_estimators": 3, "max_depth": 2, "n_jobs": 1}
    models: dict[str, object] = {
        "classifier": xgb.XGBClassifier(**small).fit(features, labels),  # 1.5: with its label encoder
        "classifier-binary": xgb.XGBClassifier(**small).fit(features, labels > 0),
        "regressor": xgb.XGBRegressor(**small).fit(features, features[:, 2]),
    }
    data = xgb.DMatrix(features, label=labels > 0)
    models["booster-no-rounds"] = xgb.train({"nthread": 1}, data, num_boost_round=0)  # best_iteration -1
    models["booster-no-rounds"].save_model(str(folder / "booster-no-rounds.json"))
    header = f"imported by pickles of XGBoost {xgb.__version__} with scikit-learn {sklearn.__version__}"
    record_folder(folder, models, 4, header)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
