"""Helper 264's files (README.md here): run with statsmodels, patsy, NLTK and PyOD installed; each marker below is
what the file's formula touches when a loaded object is used."""

import pickle
import warnings

import numpy as np
import pandas as pd
import statsmodels.api as sm
from nltk.classify.scikitlearn import SklearnClassifier
from pyod.models.cblof import CBLOF
from pyod.models.lscp import LSCP
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.multioutput import MultiOutputRegressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

warnings.filterwarnings("ignore")
X = np.random.RandomState(0).randn(200, 3)


def results(marker: str) -> object:
    """A real OLS fitted from arrays, whose model is a Series labelled like a formula model's attributes."""
    fitted = sm.OLS(np.array([1.0, 2.0, 3.0, 4.0]), np.array([[1.0, 0], [1, 1], [1, 2], [1, 3]])).fit()._results
    spec = f"I(__import__('os').system('touch {marker}'))"
    fitted.model = pd.Series({"formula": "y ~ x", "model_spec": spec}, dtype=object)
    return fitted


def clustering(marker: str) -> Pipeline:
    """A Pipeline handing the results a DataFrame (patsy evaluates the formula over a frame, not an array)."""
    regressor = MultiOutputRegressor(LinearRegression()).fit(X, np.c_[X[:, 0], X[:, 1]])
    regressor.estimators_ = [results(marker)]
    return Pipeline([("frame", FunctionTransformer(func=pd.DataFrame).fit(X)), ("model", regressor)])


def dump(value: object, name: str) -> None:
    with open(name, "wb") as file:
        pickle.dump(value, file, protocol=4)


features = [({"w": "a", "x": 1}, "pos"), ({"w": "b", "x": 0}, "neg")] * 3
classifier = SklearnClassifier(LogisticRegression()).train(features)
classifier._vectorizer = FunctionTransformer(func=pd.DataFrame).fit([{"w": "a"}])
classifier._clf = results("/tmp/h264/MARKER_patsy")
dump(classifier, "sklearnclf_patsy.pkl")
cblof = CBLOF(random_state=0).fit(X)
cblof.clustering_estimator_ = clustering("/tmp/h264/MARKER_cblof")
dump(cblof, "pyod_cblof_patsy.pkl")
lscp = LSCP([CBLOF(random_state=0), CBLOF(random_state=1)], random_state=0).fit(X)
lscp.detector_list[1].clustering_estimator_ = clustering("/tmp/h264/MARKER_lscp")
dump(lscp, "pyod_lscp_patsy.pkl")
