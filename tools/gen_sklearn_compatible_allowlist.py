"""Regenerate rules/allow-sklearn-compatible.yaml: what kmodes, pygam, mlxtend and pmdarima models import.

These are scikit-learn-style estimators from outside scikit-learn, saved the way their users save scikit-learn's:
pickle and joblib. None is a test dependency (tests/data/sklearn_compatible keeps real files they wrote): run this
where they are installed beside PyYAML and joblib (`pip install kmodes pygam mlxtend pmdarima`), then
`python tools/gen_sklearn_compatible_allowlist.py [--keep DIR]`. Empirical, as the other recorded lists
(`gen_stats_allowlist`, whose recording this shares): each model of the catalogue below is fitted on a little data
and pickled, and the names those pickles import, with every pickle protocol from 2, are recorded by a find_class
that refuses nothing; every class is screened as scikit-learn's ecosystem is (a load hook of its own stops the
generator until it is reviewed here). kmodes keeps its dissimilarity functions as values, which predict() calls:
they are recorded as referenced callables, allowed only while nothing calls them as the file loads. pmdarima's
models keep statsmodels' SARIMAX results, whose names the stats pack judges (and whose state-space objects
`pickle_native_statsmodels` checks).
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

from gen_allowlists import catalogue_arguments
from gen_stats_allowlist import screened_recording
from pack_file import write_pack

LIBRARIES = ("kmodes.", "pygam.", "mlxtend.", "pmdarima.")
# pygam's terms answer attribute lookups from their sub-terms, and split a "plural" parameter over them when it is
# set; both only once `_terms` holds terms (`_has_terms`), so on the empty instance pickle makes, the lookup of
# __setstate__ raises AttributeError and BUILD updates the instance's dict (terms.py 425-492, pygam 0.12).
OWNER_HOOKS = {
    "__getattr__ of pygam.terms.MetaTermMixin": "a sub-term's attribute; raises until state sets the terms",
    "__setattr__ of pygam.terms.MetaTermMixin": "splits a plural parameter over the terms state set",
    "__eq__ of pygam.terms.Term": "compares the terms' parameters",
    "__eq__ of pygam.terms.TermList": "compares its terms",
    "__hash__ of pygam.terms.Term": "None: __eq__ is defined",
    "__hash__ of pygam.terms.TermList": "None: __eq__ is defined",
    # `self.__dict__ = state`, then a warning when the state's pkg_version_ is not pmdarima's (arima.py 835-873)
    "__setstate__ of pmdarima.arima.arima.ARIMA": "takes the state as its dict, then warns of another version",
}

# kmodes calls its dissimilarity functions at predict() (`self.cat_dissim(centroids, X)`): real files keep a named
# function there, so an object is WS-PKL-027.
CALLED_ATTRIBUTES = ["cat_dissim", "num_dissim"]


def save_models(folder: Path) -> None:
    import numpy as np
    from kmodes.kmodes import KModes
    from kmodes.kprototypes import KPrototypes
    from mlxtend.classifier import (
        Adaline,
        EnsembleVoteClassifier,
        LogisticRegression,
        MultiLayerPerceptron,
        Perceptron,
        SoftmaxRegression,
        StackingClassifier,
        StackingCVClassifier,
    )
    from mlxtend.feature_selection import SequentialFeatureSelector
    from mlxtend.regressor import LinearRegression, StackingCVRegressor, StackingRegressor
    from pygam import ExpectileGAM, GammaGAM, LinearGAM, LogisticGAM, PoissonGAM, f, l, s, te
    from sklearn.linear_model import LogisticRegression as ScikitLogistic
    from sklearn.linear_model import Ridge
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

    rng = np.random.default_rng(0)
    categories = rng.integers(0, 3, size=(40, 3))
    mixed = np.column_stack([rng.normal(size=40), categories]).astype(object)
    x = np.column_stack([rng.normal(size=80), rng.normal(size=80), rng.integers(0, 3, 80)])
    y = np.sin(x[:, 0]) + x[:, 1] + rng.normal(size=80) * 0.1
    positive = np.exp(y / 4)
    labels = (x[:, 0] + x[:, 1] > 0).astype(int)
    classifiers = [KNeighborsClassifier(3), GaussianNB(), ScikitLogistic()]
    regressors = [KNeighborsRegressor(3), Ridge()]
    models = {
        "kmodes": KModes(n_clusters=2, n_init=2, random_state=0).fit(categories),
        "kprototypes": KPrototypes(n_clusters=2, n_init=2, random_state=0).fit(mixed, categorical=[1, 2, 3]),
        "linear_gam": LinearGAM(s(0) + l(1) + f(2)).fit(x, y),
        "linear_gam_gridsearch": LinearGAM(n_splines=5).gridsearch(x, y, progress=False),
        "linear_gam_tensor": LinearGAM(te(0, 1) + s(2, n_splines=4)).fit(x, y),
        "logistic_gam": LogisticGAM(s(0) + s(1)).fit(x[:, :2], labels),
        "poisson_gam": PoissonGAM(s(0) + l(1)).fit(x[:, :2], rng.poisson(positive)),
        "gamma_gam": GammaGAM(s(0)).fit(x[:, :1], positive),
        "expectile_gam": ExpectileGAM(s(0), expectile=0.9).fit(x[:, :1], y),
        "stacking": StackingClassifier(classifiers=classifiers, meta_classifier=ScikitLogistic()).fit(x, labels),
        "stacking_cv": StackingCVClassifier(
            classifiers=classifiers, meta_classifier=ScikitLogistic(), random_state=0
        ).fit(x, labels),
        "ensemble_vote": EnsembleVoteClassifier(clfs=classifiers, voting="soft").fit(x, labels),
        "mlxtend_logistic": LogisticRegression(epochs=5, random_seed=0).fit(x, labels),
        "softmax": SoftmaxRegression(epochs=5, random_seed=0).fit(x, labels),
        "adaline": Adaline(epochs=5, random_seed=0).fit(x, labels),
        "perceptron": Perceptron(epochs=5, random_seed=0).fit(x, labels),
        "mlp": MultiLayerPerceptron(epochs=5, hidden_layers=[4], random_seed=0).fit(x, labels),
        "mlxtend_linear": LinearRegression().fit(x, y),
        "stacking_regressor": StackingRegressor(regressors=regressors, meta_regressor=Ridge()).fit(x, y),
        "stacking_cv_regressor": StackingCVRegressor(regressors=regressors, meta_regressor=Ridge()).fit(x, y),
        "sequential_selector": SequentialFeatureSelector(ScikitLogistic(), k_features=2, cv=0).fit(x, labels),
    }
    models.update(pmdarima_models())
    for name, model in models.items():
        with (folder / f"{name}.pkl").open("wb") as stream:
            pickle.dump(model, stream)


def pmdarima_models() -> dict[str, object]:
    """pmdarima's ARIMA (chosen by auto_arima, seasonal too, or given; with exogenous columns; updated with new
    points) and its pipelines of endogenous and exogenous transformers, as its docs save them."""
    import numpy as np
    import pandas as pd
    import pmdarima
    from pmdarima.pipeline import Pipeline
    from pmdarima.preprocessing import BoxCoxEndogTransformer, DateFeaturizer, FourierFeaturizer, LogEndogTransformer

    rng = np.random.default_rng(0)
    n = 80
    y = np.abs(30 + np.cumsum(rng.normal(size=n)) + 3 * np.sin(np.arange(n) * 2 * np.pi / 12)) + 1
    columns = rng.normal(size=(n, 2))
    dates = pd.DataFrame({"date": pd.date_range("2020-01-01", periods=n, freq="D")})
    quiet = {"suppress_warnings": True, "error_action": "ignore", "maxiter": 10}
    updated = pmdarima.ARIMA(order=(1, 1, 0)).fit(y[:60])
    updated.update(y[60:])
    boxcox = Pipeline([
        ("boxcox", BoxCoxEndogTransformer(lmbda2=1e-6)), ("fourier", FourierFeaturizer(m=12, k=2)),
        ("arima", pmdarima.AutoARIMA(seasonal=False, suppress_warnings=True, maxiter=10)),
    ])  # fmt: skip
    logged = Pipeline([("log", LogEndogTransformer()), ("arima", pmdarima.ARIMA(order=(1, 0, 0)))])
    dated = Pipeline([("date", DateFeaturizer(column_name="date", with_day_of_month=False)),
                      ("arima", pmdarima.ARIMA(order=(1, 0, 0)))])  # fmt: skip
    seasonal = {"start_p": 0, "start_q": 0, "max_p": 1, "max_q": 1, "start_P": 0, "start_Q": 0, "max_P": 1, "max_Q": 1}
    return {
        "pmdarima_auto_arima": pmdarima.auto_arima(y, seasonal=False, **quiet),
        "pmdarima_auto_arima_seasonal": pmdarima.auto_arima(y, seasonal=True, m=4, **seasonal, **quiet),
        "pmdarima_arima": pmdarima.ARIMA(order=(1, 1, 1)).fit(y),
        "pmdarima_arima_exog": pmdarima.ARIMA(order=(1, 0, 0)).fit(y, X=columns),
        "pmdarima_arima_updated": updated,
        "pmdarima_pipeline_boxcox_fourier": boxcox.fit(y),
        "pmdarima_pipeline_log": logged.fit(y),
        "pmdarima_pipeline_date": dated.fit(y, dates),
    }


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], {}, OWNER_HOOKS)
    warnings.simplefilter("ignore")
    lists = screened_recording(save_models, LIBRARIES, args.keep)
    lists["called-attributes"] = CALLED_ATTRIBUTES
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("kmodes", "pygam", "mlxtend", "pmdarima", "statsmodels",
                                                              "scikit-learn", "numpy"))
    write_pack(
        "allow-sklearn-compatible",
        f"Generated by tools/gen_sklearn_compatible_allowlist.py ({versions}): what scikit-learn-style models from "
        "outside scikit-learn import (kmodes' clusterers, pygam's GAMs and their terms, mlxtend's classifiers, "
        "regressors and feature selector, pmdarima's ARIMA models and pipelines; pickle and joblib), recorded from "
        "real saves, never a package wildcard: "
        "classes restored from state only, each screened for the hooks loading runs; kmodes' dissimilarity "
        "functions as values; their method names and the classes that cannot be called.\n",
        lists,
    )


if __name__ == "__main__":
    main()
