"""Record tests/data/legacy_sklearn/hostile: gradient boosting models of scikit-learn 1.3 and older whose legacy loss
object sizes the initial predictions narrower than estimators_ (helper 229's two ways and helper 230's third; their
full-size files, 200,000 and 100,000 columns, crashed predict under scikit-learn 1.1.3 and 1.3.2). Small versions, 64
columns, written by the real release, which aborts on each: `python tools/record_legacy_gb_variants.py OUTDIR` in the
scikit-learn 1.3.2 environment tools/record_legacy_skops_files.py lists.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

COLUMNS = 64


def _widened(model: GradientBoostingClassifier) -> GradientBoostingClassifier:
    estimators = np.empty((1, COLUMNS), dtype=object)
    for column in range(COLUMNS):
        estimators[0, column] = model.estimators_[0, 0]
    model.estimators_ = estimators
    return model


def main() -> None:
    out = Path(sys.argv[1])
    x, y = np.random.RandomState(0).rand(30, 2), np.arange(30) % 3
    # zero initial predictions K wide, K set to 1 in the loss object
    zero = _widened(GradientBoostingClassifier(n_estimators=1, init="zero", max_depth=1).fit(x, y))
    zero._loss.K = 1
    (out / "gb-multinomial-k1-64-columns.pkl").write_bytes(pickle.dumps(zero, protocol=2))
    # a regression loss (one column of initial predictions) under a classifier init as wide as estimators_
    wide_y = np.arange(COLUMNS * 2) % COLUMNS
    wide = GradientBoostingClassifier(n_estimators=1, max_depth=1, init=DummyClassifier()).fit(
        np.random.RandomState(1).rand(COLUMNS * 2, 2), wide_y
    )
    from sklearn.ensemble._gb_losses import LeastSquaresError

    wide._loss = LeastSquaresError()
    (out / "gb-least-squares-under-64-classes.pkl").write_bytes(pickle.dumps(wide, protocol=2))
    # helper 230: any object with a K as the loss (predict reads `_loss.K` whatever it is) under zero initial values
    dummy = _widened(GradientBoostingRegressor(n_estimators=1, init="zero", max_depth=1).fit(x, x[:, 0]))
    dummy._loss = DummyRegressor()
    dummy._loss.K = 1
    (out / "gb-dummy-loss-k1-64-columns.pkl").write_bytes(pickle.dumps(dummy, protocol=2))


if __name__ == "__main__":
    main()
