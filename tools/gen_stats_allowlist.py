"""Regenerate rules/allow-stats.yaml: the names statsmodels, sktime and river pickles import.

These three libraries are not test dependencies (the test suite reads the real files they wrote, kept in
tests/data/statsmodels, tests/data/sktime and tests/data/river), so run this in an environment that has them beside
the test extra: `pip install statsmodels sktime river`, then `python tools/gen_stats_allowlist.py [--keep DIR]`.
Like gensim's and the tabular lists, the list is empirical: each model of the catalogue below is fitted on a little
data, saved the ways the libraries document (statsmodels' `results.save`, sktime's `estimator.save`, pickle and
joblib for river), and pickled with protocols 2 to 5; the names those pickles import are recorded by a find_class that
refuses nothing. Classes are screened as scikit-learn's ecosystem is (`gen_allowlists.screened_names`): one with a load
hook of its own is left out unless REVIEWED_HOOKS says why the hook is harmless. Every class is state-only: real
files restore them with cls.__new__ and their state, so a pickle that calls one is WS-PKL-014. The catalogue leaves
out formula models (`smf.ols("y ~ x", df)`): their data object evaluates the formula on load (WS-PKL-051), so they are
critical whatever this list says.
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import pickle
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gen_allowlists import (
    REVIEWED_HOOKS,
    REVIEWED_METACLASSES,
    REVIEWED_OWNER_HOOKS,
    _resolve,
    callable_instances,
    method_names,
    reachable,
    screened_catalogue,
    screened_names,
)
from pack_file import record_imports, write_pack

LIBRARIES = ("statsmodels.", "sktime.", "river.")
# Lists recorded with older versions of the libraries (`--record`), whose names differ: river before 0.23 kept its
# vectors in Cython, sktime before 1.0 its detrenders under transformations.series.
OLD_VERSIONS = Path(__file__).resolve().parents[1] / "tests" / "data" / "old_stats"
# Load hooks of the libraries' own, read in the installed source (statsmodels 0.15, sktime 1.2, river 0.26), where
# they are defined (for every class that inherits them). pickle's APPEND and APPENDS call `append` and `extend` on an
# object, SETITEMS its `__setitem__`: real files never do that to these classes, and what those do is listed here.
STATS_OWNER_HOOKS = {
    "__setstate__ of statsmodels.base.wrapper.ResultsWrapper": "__dict__.update",
    "__getattribute__ of statsmodels.base.wrapper.ResultsWrapper": "reads a name its results hold, wrapped as data",
    "__setstate__ of statsmodels.discrete.discrete_model.NegativeBinomial": "__dict__, then picks its own methods",
    "__setitem__ of statsmodels.tsa.statespace.mlemodel.MLEModel": "its state space's __setitem__",
    "__setitem__ of statsmodels.tsa.statespace.representation.Representation": "sets a matrix it names",
    "__setitem__ of statsmodels.tsa.statespace.initialization.Initialization": "sets an initialization type",
    # a new results object (or state space) for observations added to the model's own: numbers, never a refit
    "extend of statsmodels.tsa.statespace.representation.Representation": "new observations",
    "extend of statsmodels.tsa.statespace.mlemodel.MLEResults": "new observations",
    "extend of statsmodels.tsa.statespace.sarimax.SARIMAXResults": "new observations",
    "extend of statsmodels.tsa.statespace.varmax.VARMAXResults": "new observations",
    "append of statsmodels.tsa.statespace.mlemodel.MLEResults": "new observations",
    "append of statsmodels.tsa.arima.model.ARIMAResults": "new observations",
    "append of statsmodels.tsa.ar_model.AutoRegResults": "new observations",
    "__hash__ of statsmodels.tsa.deterministic.DeterministicTerm": "hashes its parameters",
    "__eq__ of statsmodels.tsa.deterministic.DeterministicTerm": "compares its parameters",
    "__hash__ of sktime.base._base.BaseObject": "None: __eq__ is defined",
    "__eq__ of sktime.base._base.BaseObject": "compares get_params",
    "__new__ of sktime.forecasting.base._fh.ForecastingHorizon": "sets its index delegators on the class",
    "__eq__ of sktime.forecasting.base._fh.ForecastingHorizon": "its index's",
    "__setstate__ of river.preprocessing.scale.StandardScaler": "a default, then __dict__.update",
    "__setstate__ of river.preprocessing.scale.MinMaxScaler": "a default, then __dict__.update",
    "append of river.neighbors.ann.swinn.SWINN": "adds a point to its search graph",
    "__hash__ of river.neighbors.ann.nn_vertex.Vertex": "None: __eq__ is defined",
    "__eq__ of river.neighbors.ann.nn_vertex.Vertex": "compares ids",
    # river's ensembles and metric lists: the list methods of the standard library's UserList, on self.data
    **{f"{hook} of collections.UserList": "self.data" for hook in ("extend", "append", "__setitem__", "__eq__")},
}
# statsmodels' Cython state-space classes, one per number type (single, double, complex, double complex)
STATE_SPACE = [
    f"statsmodels.tsa.statespace._{module}.{prefix}{name}"
    for module, name in (("kalman_filter", "KalmanFilter"), ("kalman_smoother", "KalmanSmoother"),
                         ("simulation_smoother", "SimulationSmoother"), ("representation", "Statespace"),
                         ("initialization", "Initialization"))
    for prefix in "sdcz"
]
STATS_CLASS_HOOKS = {
    # __setstate__ evaluates the formula when the state holds one: WS-PKL-051 judges that, not this list
    "statsmodels.base.data.ModelData": "formula: WS-PKL-051",
    "statsmodels.base.data.PandasData": "formula: WS-PKL-051",
    # Cython state-space classes: __reduce__ gives the constructor its model and settings, __setstate__ sets typed
    # fields (numbers and arrays) from the state's dict
    **dict.fromkeys(STATE_SPACE, "Cython: typed fields"),
    # river before 0.23: Cython's auto-pickling (__setstate__ is __setstate_cython__: the typed fields from the state's
    # tuple, behind the class's checksum); VectorDict's dict operators work on its data
    **dict.fromkeys(["river.drift.adwin_c.AdaptiveWindowing", "river.drift.adwin_c.Bucket",
                     "river.utils.vectordict.VectorDict"], "Cython: typed fields"),
    # Rust (pyo3) types: VectorDict is made from a dict of numbers; ADWIN's state is its numbers, bincode-encoded
    "river._river_rust.vectordict.VectorDict": "a dict of numbers",
    "river._river_rust.drift.AdaptiveWindowing": "numbers from bytes",
}
STATS_METACLASSES = {"river.base.estimator.EstimatorMeta": "ABCMeta with an __instancecheck__ that reads pipelines"}
# Names outside the three libraries that their models keep: SciPy's L-BFGS inverse Hessian (an L-BFGS fit's result,
# a LinearOperator over two arrays whose constructor and products only compute), the RNG river models keep
# (random.Random: __setstate__ takes its tuple of numbers), operator.itemgetter (river's BagOfWords picks its text
# field with itemgetter(on): it only subscripts), and copy.deepcopy, the defaultdict factory feature_extraction.Agg
# keeps (a value: nothing calls it while the file loads).
OTHER_CLASSES = ["scipy.optimize._lbfgsb_py.LbfgsInvHessProduct", "random.Random"]
OTHER_HOOKS = {
    "scipy.optimize._lbfgsb_py.LbfgsInvHessProduct": "LinearOperator.__new__ only picks the class",
    "random.Random": "__setstate__ takes the generator's numbers",
}
OTHER_FUNCTIONS = ["operator.itemgetter"]
# Functions river's models keep in a partial (BagOfWords' tokenizer and accent stripper) or as a defaultdict's factory
# (GaussianNB's): a partial's function and a factory count as called. The first two take text only, the factory
# nothing.
PARTIAL_FUNCTIONS = ["river.feature_extraction.vectorize.tokenize_using_regex_pattern",
                     "river.feature_extraction.vectorize.strip_accents_unicode",
                     "river.naive_bayes.gaussian.GaussianNB._make_gaussian"]
REFERENCED = ["copy.deepcopy"]
# Classes real files call (REDUCE, or a defaultdict's factory), so not state-only: their constructors take numbers.
CALLED = {
    "random.Random": "an RNG seeded from its argument",
    "river._river_rust.vectordict.VectorDict": "a dict of numbers",
    "river.stats.maximum.Max": "a defaultdict's factory: no arguments",
    "river.stats.minimum.Min": "a defaultdict's factory: no arguments",
    "river.proba.gaussian.Gaussian": "GaussianNB's defaultdict factory before river 0.23: a seed at most",
}
# The Cython state-space classes real files call (their __reduce__ gives the constructor the model and its settings),
# d and z (float64 and complex128) only: their constructors and __setstate__ trust the sizes they are given in native
# code, so each call and state is checked as the constructor would size it (`pickle_native_statsmodels`, helper 252),
# and is not WS-PKL-014. The others (single precision, and the simulation smoothers, which no results keep and whose
# __reduce__ statsmodels 0.15 cannot run: review 67 gave one nobs=10**7, SIGSEGV in pickle.load) stay state-only, and
# the check reports any of them made.
CHECKED_CALLS = [
    f"statsmodels.tsa.statespace._{module}.{prefix}{name}"
    for module, name in (("kalman_filter", "KalmanFilter"), ("kalman_smoother", "KalmanSmoother"),
                         ("representation", "Statespace"), ("initialization", "Initialization"))
    for prefix in "dz"
]
# Methods real files look up on an instance the stream restored (getattr(obj, "name"), bound to it), never called
# while the file loads: river's KMeans keeps partial(rng.gauss, 0, 1) as its centres' defaultdict factory, its
# passive-aggressive models the step-size rule of their mode, statsmodels' ETS results the model's loglike.
INSTANCE_METHODS = [
    "random.Random.gauss",
    *(f"river.linear_model.pa.{model}._calc_tau_{mode}" for model in ("PAClassifier", "PARegressor")
      for mode in (0, 1, 2)),
    "statsmodels.tsa.exponential_smoothing.ets.ETSModel.loglike",
]
# Classes whose attributes a state may set with setattr (BUILD's slot state): statsmodels' Bunch is a dict that is its
# own __dict__ (pickle gives it itself as its state), with no setters; river's search-graph vertices and splitter
# nodes keep their attributes in __slots__ (Vertex's one setter sets its flags).
SLOT_CLASSES = ["statsmodels.tools.tools.Bunch"]

def statsmodels_models(folder: Path) -> None:
    import numpy as np
    import pandas as pd
    import statsmodels.api as sm
    from statsmodels.tsa.api import VAR, AutoReg, ETSModel, UnobservedComponents
    from statsmodels.tsa.arima.model import ARIMA
    from statsmodels.tsa.holtwinters import ExponentialSmoothing, Holt, SimpleExpSmoothing
    from statsmodels.tsa.statespace.dynamic_factor import DynamicFactor
    from statsmodels.tsa.statespace.exponential_smoothing import ExponentialSmoothing as StateSpaceSmoothing
    from statsmodels.tsa.statespace.sarimax import SARIMAX
    from statsmodels.tsa.statespace.varmax import VARMAX

    rng = np.random.default_rng(0)
    n = 120
    x = sm.add_constant(rng.normal(size=(n, 2)))
    y = x @ [1, 2, -1] + rng.normal(size=n)
    counts = rng.integers(0, 4, n)
    series = pd.Series(np.cumsum(rng.normal(size=n)) + 10 + np.sin(np.arange(n) / 2),
                       index=pd.date_range("2020-01-01", periods=n, freq="MS"))
    pair = pd.DataFrame({"a": series.values, "b": series.values[::-1]}, index=series.index)
    fits: dict[str, Any] = {
        "ols": sm.OLS(y, x).fit(),
        "ols_robust": sm.OLS(y, x).fit(cov_type="HC3"),
        "wls": sm.WLS(y, x, weights=np.ones(n)).fit(),
        "gls": sm.GLS(y, x).fit(),
        "glm_binomial": sm.GLM((y > 0).astype(float), x, family=sm.families.Binomial()).fit(),
        "glm_gamma": sm.GLM(np.abs(y) + 0.1, x, family=sm.families.Gamma(sm.families.links.Log())).fit(),
        "glm_poisson": sm.GLM(counts, x, family=sm.families.Poisson()).fit(),
        "glm_tweedie": sm.GLM(np.abs(y), x, family=sm.families.Tweedie(var_power=1.5)).fit(),
        "logit": sm.Logit((y > 0).astype(float), x).fit(disp=0),
        "probit": sm.Probit((y > 0).astype(float), x).fit(disp=0),
        "mnlogit": sm.MNLogit(counts, x).fit(disp=0),
        "poisson": sm.Poisson(counts, x).fit(disp=0),
        "negbin": sm.NegativeBinomial(counts, x).fit(disp=0),
        "rlm": sm.RLM(y, x, M=sm.robust.norms.HuberT()).fit(),
        "quantreg": sm.QuantReg(y, x).fit(q=0.5),
        "mixedlm": sm.MixedLM(y, x, groups=counts).fit(),
        "arima": ARIMA(series, order=(1, 1, 1)).fit(),
        "sarimax": SARIMAX(series, order=(1, 0, 0), seasonal_order=(1, 0, 0, 12)).fit(disp=False),
        "holt_winters": ExponentialSmoothing(series, trend="add", seasonal="add", seasonal_periods=12).fit(),
        "holt": Holt(series, initialization_method="estimated").fit(),
        "simple_smoothing": SimpleExpSmoothing(series, initialization_method="estimated").fit(),
        "ets": ETSModel(series, error="add", trend="add").fit(disp=False),
        "autoreg": AutoReg(series, lags=2).fit(),
        "unobserved": UnobservedComponents(series, level="local level").fit(disp=False),
        "var": VAR(pair).fit(2),
        # the state-space models besides SARIMAX and UnobservedComponents (their Cython objects are checked by
        # `pickle_native_statsmodels`, since 2026-12-07)
        "state_space_smoothing": StateSpaceSmoothing(series, trend=True).fit(disp=False),
        "dynamic_factor": DynamicFactor(pair.diff().dropna(), k_factors=1, factor_order=1).fit(disp=False, maxiter=20),
        "varmax": VARMAX(pair.diff().dropna(), order=(1, 0)).fit(disp=False, maxiter=20),
    }
    for name, fit in fits.items():
        fit.save(folder / f"statsmodels_{name}.pickle")
        # a smaller save, without the data the model was fitted on (statsmodels 0.15's fails on MixedLM results)
        if hasattr(fit, "remove_data") and name != "mixedlm":
            fit.save(folder / f"statsmodels_{name}_removed.pickle", remove_data=True)
    _dump(folder / "statsmodels_model_ols.pkl", sm.OLS(y, x))
    _dump(folder / "statsmodels_model_sarimax.pkl", SARIMAX(series, order=(1, 0, 0)))


def sktime_models(folder: Path) -> None:
    import numpy as np
    import pandas as pd
    from sklearn.linear_model import LinearRegression
    from sktime.forecasting.compose import EnsembleForecaster, TransformedTargetForecaster, make_reduction
    from sktime.forecasting.exp_smoothing import ExponentialSmoothing
    from sktime.forecasting.naive import NaiveForecaster
    from sktime.forecasting.theta import ThetaForecaster
    from sktime.forecasting.trend import PolynomialTrendForecaster
    from sktime.transformations.series.detrend import Deseasonalizer, Detrender

    y = pd.Series(10 + np.sin(np.arange(60) / 3) + np.arange(60) * 0.1,
                  index=pd.period_range("2020-01", periods=60, freq="M"))
    forecasters = {
        "naive": NaiveForecaster(strategy="last", sp=12),
        "theta": ThetaForecaster(sp=12),
        "trend": PolynomialTrendForecaster(degree=2),
        "reduction": make_reduction(LinearRegression(), window_length=6),
        "pipeline": TransformedTargetForecaster([("deseason", Deseasonalizer(sp=12)),
                                                 ("detrend", Detrender()), ("naive", NaiveForecaster())]),
        "ensemble": EnsembleForecaster([("naive", NaiveForecaster()), ("trend", PolynomialTrendForecaster())]),
        "holt_winters": ExponentialSmoothing(trend="add", seasonal="add", sp=12),
    }
    for name, forecaster in forecasters.items():
        forecaster.fit(y, fh=[1, 2, 3])
        forecaster.save(folder / f"sktime_{name}")  # a zip of pickles: `{name}.zip`
        _dump(folder / f"sktime_{name}.pkl", forecaster)


def river_models(folder: Path) -> None:
    import numpy as np
    from river import (
        anomaly,
        cluster,
        compose,
        ensemble,
        feature_extraction,
        forest,
        linear_model,
        metrics,
        naive_bayes,
        neighbors,
        optim,
        preprocessing,
        stats,
        tree,
    )

    rng = np.random.default_rng(0)
    stream = [({"a": float(rng.normal()), "b": float(rng.normal()), "c": str(rng.choice(["x", "y"]))},
               bool(rng.integers(2))) for _ in range(150)]
    numeric = [({k: v for k, v in x.items() if k != "c"}, y) for x, y in stream]
    texts = [({"text": "good model" if y else "bad weights"}, y) for _, y in stream]
    models: dict[str, tuple[Any, list[tuple[dict[str, Any], Any]], str]] = {
        "logreg_pipeline": (compose.Select("a", "b") | preprocessing.StandardScaler()
                            | linear_model.LogisticRegression(optimizer=optim.SGD(0.1)), stream, "xy"),
        "linreg_adam": (preprocessing.StandardScaler() | linear_model.LinearRegression(optimizer=optim.Adam()),
                        numeric, "x float"),
        "pa_regressor": (linear_model.PARegressor(), numeric, "x float"),
        "hoeffding": (tree.HoeffdingTreeClassifier(), numeric, "xy"),
        "hoeffding_regressor": (tree.HoeffdingTreeRegressor(), numeric, "x float"),
        "hoeffding_adaptive": (tree.HoeffdingAdaptiveTreeClassifier(seed=1), numeric, "xy"),
        "gaussian_nb": (naive_bayes.GaussianNB(), numeric, "xy"),
        "text_nb": (feature_extraction.BagOfWords(on="text") | naive_bayes.MultinomialNB(), texts, "xy"),
        "arf": (forest.ARFClassifier(n_models=3, seed=1), numeric, "xy"),
        "kmeans": (cluster.KMeans(n_clusters=2), numeric, "x"),
        "half_space_trees": (preprocessing.MinMaxScaler() | anomaly.HalfSpaceTrees(seed=1), numeric, "x"),
        "one_hot_union": ((compose.Select("c") | preprocessing.OneHotEncoder()) + compose.Select("a", "b")
                          | linear_model.LogisticRegression(), stream, "xy"),
        "knn": (neighbors.KNNClassifier(), numeric, "xy"),
        "bagging": (ensemble.BaggingClassifier(linear_model.LogisticRegression(), n_models=2, seed=1), numeric, "xy"),
        "agg": (feature_extraction.Agg(on="a", by="c", how=stats.Mean()), stream, "x"),
    }
    for name, (model, data, learns) in models.items():
        for x, y in data:
            if learns == "x":
                model.learn_one(x)
            else:
                model.learn_one(x, float(y) if learns == "x float" else y)
        _dump(folder / f"river_{name}.pkl", model)
    metric = metrics.Accuracy() + metrics.F1()
    for _, y in numeric:
        metric.update(y, True)
    _dump(folder / "river_metrics.pkl", metric)


def _dump(path: Path, obj: object) -> None:
    with path.open("wb") as stream:
        pickle.dump(obj, stream)


CATALOGUE: list[Callable[[Path], None]] = [statsmodels_models, sktime_models, river_models]


def recorded(folder: Path, members: set[str], libraries: tuple[str, ...] = LIBRARIES) -> set[str]:
    """The names the catalogue's files import, as written and with every pickle protocol from 2; and, into `members`,
    `Class.attribute` for each callable attribute an object of the libraries' classes holds (loss functions,
    variance functions, bound methods) under a name its class has no method by (a GLM family's class keeps a default
    variance function where its instances keep theirs)."""
    import zipfile

    names: set[str] = set()
    for path in sorted(folder.iterdir()):
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                blobs = [archive.read(member) for member in archive.namelist()]
        else:
            blobs = [path.read_bytes()]
        for blob in blobs:
            if not blob.startswith(b"\x80"):
                continue  # sktime's zip also holds a text metadata file
            record_imports(io.BytesIO(blob), names)
            obj = pickle.loads(blob)  # this tool's own file, written a moment ago
            _callable_attributes(obj, members, libraries)
            for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
                record_imports(io.BytesIO(pickle.dumps(obj, protocol=protocol)), names)
    return names


def recorded_catalogue(save: Callable[[Path], None], libraries: tuple[str, ...], keep: Path | None
                       ) -> tuple[set[str], set[str]]:
    """(names, callable members) of a catalogue `save` writes into a temporary folder (copied to `keep` if given),
    recorded as `recorded` does."""
    members: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        save(Path(folder))
        names = recorded(Path(folder), members, libraries)
        if keep:
            shutil.copytree(folder, keep, dirs_exist_ok=True)
    return names, members


def screened_recording(save: Callable[[Path], None], libraries: tuple[str, ...], keep: Path | None
                       ) -> dict[str, list[str]]:
    """The lists a pack of `libraries` holds (`screened_lists`), from a catalogue `save` writes, recorded and screened;
    the kept files (`keep`) also as joblib.dump writes them. Names of other libraries are printed, for the other
    packs to judge."""
    names, members = recorded_catalogue(save, libraries, keep)
    if keep:
        joblib_copies(keep)
    allowed, state_only, functions = screened_catalogue(names, libraries)
    others = sorted(n for n in names if not n.startswith(libraries))
    print(f"recorded outside {', '.join(libraries)} (judged by the other packs): {', '.join(others)}")
    return screened_lists(allowed, state_only, functions, members)


def joblib_copies(folder: Path) -> None:
    """Beside each kept pickle, the same model as joblib.dump writes it: the names are the same, and the arrays sit
    outside the pickle stream."""
    import joblib

    for path in sorted(folder.glob("*.pkl")):
        with path.open("rb") as stream:
            joblib.dump(pickle.load(stream), path.with_suffix(".joblib"))  # this tool's own file


def _callable_attributes(obj: object, members: set[str], libraries: tuple[str, ...] = LIBRARIES) -> None:
    for found in reachable(obj, 30):
        klass = type(found)
        name = f"{klass.__module__}.{klass.__qualname__}"
        if isinstance(found, dict | list | tuple | set | frozenset) or not name.startswith(libraries):
            continue
        for attr, value in vars(found).items() if hasattr(found, "__dict__") else ():
            own = inspect.getattr_static(klass, attr, None)
            method = inspect.isroutine(own) or isinstance(own, classmethod | staticmethod)
            if callable(value) and not isinstance(value, type) and not method:  # a value, or a class's value
                members.add(f"{name}.{attr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="also copy the catalogue's files here (for tests/data)")
    parser.add_argument("--record", type=Path, help="older library versions: write the catalogue's files and the "
                        "lists (names.json) here instead of the pack, for the pack to add (tests/data/old_stats)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    REVIEWED_HOOKS.update(STATS_CLASS_HOOKS | OTHER_HOOKS)
    REVIEWED_OWNER_HOOKS.update(STATS_OWNER_HOOKS)
    REVIEWED_METACLASSES.update(STATS_METACLASSES)
    if args.record:
        args.record.mkdir(parents=True, exist_ok=True)
        record = {"versions": _versions(), "lists": lists_here(args.record)}
        (args.record / "names.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        return
    with tempfile.TemporaryDirectory() as folder:
        lists = lists_here(Path(folder))
        if args.keep:
            shutil.copytree(folder, args.keep, dirs_exist_ok=True)
    for method in INSTANCE_METHODS:  # each must be a method of the class named
        owner, _, attr = method.rpartition(".")
        if not callable(getattr(_resolve(owner), attr, None)):
            raise SystemExit(f"{method} is not a method")
    versions = [_versions()]
    for older in sorted(OLD_VERSIONS.glob("*/names.json")):
        record = json.loads(older.read_text(encoding="utf-8"))
        versions.append(record["versions"])
        for name, values in record["lists"].items():
            lists[name] = sorted(set(lists[name]) | set(values))
    lists["state-only-classes"] = [name for name in lists["state-only-classes"] if name not in CHECKED_CALLS]
    write_pack(
        "allow-stats",
        f"Generated by tools/gen_stats_allowlist.py ({'; '.join(versions)}, the older ones recorded in "
        "tests/data/old_stats): what statsmodels results and models, sktime forecasters and river's online models "
        "import, recorded from real saves, never a package wildcard; classes restored from state only (but the few "
        "real files call), each screened for the hooks loading runs, whose constructors only store parameters or "
        "compute from numbers, so they may be kept as values; the functions and bound methods their models keep, as "
        "values or called through a partial; their methods' names and the classes that cannot be called, for "
        "WS-PKL-026 and WS-PKL-027. Formula models are WS-PKL-051 whatever this pack says.\n",
        lists,
    )


def _versions() -> str:
    return ", ".join(f"{lib} {__import__(lib).__version__}" for lib in ("statsmodels", "sktime", "river"))


def lists_here(folder: Path) -> dict[str, list[str]]:
    """The pack's lists for the library versions installed here, from the catalogue's files written into `folder`."""
    for save in CATALOGUE:
        save(folder)
    members: set[str] = set()
    names = recorded(folder, members)
    own = sorted(n for n in names if n.startswith(LIBRARIES))
    classes = [n for n in own if isinstance(_resolve(n), type)] + OTHER_CLASSES
    functions = [n for n in own if not isinstance(_resolve(n), type)]
    allowed, screened = screened_names(sorted(set(classes)))
    state_only = [name for name in screened if name not in CALLED]
    slots = SLOT_CLASSES + [n for n in allowed if any(vars(b).get("__slots__") for b in _resolve(n).__mro__)]  # type: ignore[attr-defined]
    others = sorted(n for n in names if not n.startswith(LIBRARIES) and n not in OTHER_CLASSES + OTHER_FUNCTIONS)
    print(f"recorded outside the three libraries (judged by the other packs): {', '.join(others)}", file=sys.stderr)
    return {
        # the functions kept as values, only as values (review 67: ETS's Cython smoothing function, called with
        # arrays of the file's choosing, wrote past its output in pickle.load), but the few a partial wraps
        "allowed-callables": allowed + [n for n in functions if n in PARTIAL_FUNCTIONS or _reduce_helper(n)]
        + OTHER_FUNCTIONS + REFERENCED,
        "state-only-classes": state_only,
        "value-classes": state_only,
        "referenced-callables": functions + REFERENCED,
        "instance-methods": INSTANCE_METHODS,
        "slot-classes": sorted(slots),
        "method-names": methods(allowed),
        # and the bound methods above: each harmless to call
        "inert-values": [n for n in allowed if not callable_instances(_resolve(n))]  # type: ignore[arg-type]
        + [f"name:{method}" for method in INSTANCE_METHODS],
        "callable-members": sorted(members),
    }


def _reduce_helper(name: str) -> bool:
    """Cython's `__pyx_unpickle_<Class>(type, checksum, state)`, which pickle calls to restore a Cython class (river
    before 0.23): it only makes the class with __new__, behind the checksum, and sets its typed fields."""
    return name.rpartition(".")[2].startswith("__pyx_unpickle_")


def screened_lists(allowed: list[str], state_only: list[str], functions: list[str], members: set[str]
                   ) -> dict[str, list[str]]:
    """The lists every recorded catalogue's pack holds: its screened classes (allowed; restored from state only,
    which may also be kept as values), the functions its files keep, its classes' method names, the classes that
    cannot be called, and the callable attributes its objects keep."""
    return {
        "allowed-callables": allowed,
        "state-only-classes": state_only,
        "value-classes": state_only,
        "referenced-callables": functions,
        "method-names": methods(allowed),
        "inert-values": [n for n in allowed if not callable_instances(_resolve(n))],  # type: ignore[arg-type]
        "callable-members": sorted(members),
    }


def methods(classes: list[str]) -> list[str]:
    """The names of the methods of these classes that an instance's dict can hide (`gen_allowlists.method_names`):
    WS-PKL-026 judges a state that sets one."""
    return sorted({attr for name in classes for attr in method_names(_resolve(name))})  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
