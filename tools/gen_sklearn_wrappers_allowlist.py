"""Regenerate rules/allow-sklearn-wrappers.yaml: the names MAPIE's conformal predictors and skforecast's forecasters
import, two libraries that wrap scikit-learn estimators and are saved with them (joblib or pickle).

Neither is a test dependency (skforecast pins pandas below 3, which the test extra's pandas checks need), so
tests/data/sklearn_wrappers keeps real files they wrote: run this where they are installed beside scikit-learn,
pandas and PyYAML (`pip install mapie skforecast`), then `python tools/gen_sklearn_wrappers_allowlist.py [--keep
DIR]`. Empirical, as the other recorded lists (`gen_stats_allowlist`, whose recording this shares): each model of the
catalogue below is fitted on a little data and saved the ways the libraries document (joblib, which skforecast's
`save_forecaster` calls, and pickle), with every pickle protocol from 2; the names those pickles import are recorded
by a find_class that refuses nothing, and every class is screened as scikit-learn's ecosystem is: one with a load
hook of its own stops the generator until it is reviewed. The estimators they wrap are judged by the other packs.
skforecast's ForecasterStats and ForecasterSarimax are left out: they keep statsmodels' state-space models, whose
Cython filters stay high (WS-PKL-014).
"""

from __future__ import annotations

import warnings
from pathlib import Path

from gen_allowlists import catalogue_arguments
from gen_stats_allowlist import screened_recording
from pack_file import write_pack

LIBRARIES = ("mapie.", "skforecast.")


def mapie_models(folder: Path) -> None:
    import numpy as np
    import pandas as pd
    from mapie.classification import CrossConformalClassifier, SplitConformalClassifier
    from mapie.regression import (
        ConformalizedQuantileRegressor,
        CrossConformalRegressor,
        JackknifeAfterBootstrapRegressor,
        SplitConformalRegressor,
        TimeSeriesRegressor,
    )
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import LinearRegression, LogisticRegression

    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 3))
    y = x @ [1.0, 2.0, 3.0] + rng.normal(size=240)
    labels = np.digitize(y, [-2.0, 2.0])  # three classes
    fit, rest = slice(0, 120), slice(120, 240)
    models: dict[str, object] = {}
    for score in ("absolute", "gamma", "residual_normalized"):
        target = np.abs(y) + 1 if score == "gamma" else y
        model = SplitConformalRegressor(LinearRegression(), confidence_level=0.9, conformity_score=score, prefit=False)
        models[f"split_{score}"] = model.fit(x[fit], target[fit]).conformalize(x[rest], target[rest])
    models["cross"] = CrossConformalRegressor(LinearRegression(), confidence_level=0.9, cv=3).fit_conformalize(x, y)
    models["jackknife"] = JackknifeAfterBootstrapRegressor(
        RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0), confidence_level=0.9, resampling=5
    ).fit_conformalize(x, y)
    quantiles = ConformalizedQuantileRegressor(
        GradientBoostingRegressor(loss="quantile", n_estimators=5), confidence_level=0.9, prefit=False
    )
    models["quantile"] = quantiles.fit(x[fit], y[fit]).conformalize(x[rest], y[rest])
    for score in ("lac", "aps", "raps", "top_k"):
        model = SplitConformalClassifier(
            LogisticRegression(), confidence_level=0.9, conformity_score=score, prefit=False
        )
        models[f"classifier_{score}"] = model.fit(x[fit], labels[fit]).conformalize(x[rest], labels[rest])
    models["classifier_cross"] = CrossConformalClassifier(
        LogisticRegression(), confidence_level=0.9, cv=3
    ).fit_conformalize(x, labels)
    series = pd.Series(np.cumsum(rng.normal(size=240)), name="y")
    lagged = pd.concat({f"lag{k}": series.shift(k) for k in (1, 2, 3)}, axis=1).iloc[3:]
    models["time_series"] = TimeSeriesRegressor(LinearRegression(), method="enbpi", cv=_blocks()).fit(
        lagged, series.iloc[3:]
    )
    for name, model in models.items():
        _pickle(folder / f"mapie_{name}.pkl", model)


def _blocks() -> object:
    from mapie.subsample import BlockBootstrap

    return BlockBootstrap(n_resamplings=5, length=10, overlapping=True, random_state=0)


def skforecast_models(folder: Path) -> None:
    import numpy as np
    import pandas as pd
    from skforecast.direct import ForecasterDirect, ForecasterDirectMultiVariate
    from skforecast.preprocessing import RollingFeatures
    from skforecast.recursive import (
        ForecasterEquivalentDate,
        ForecasterRecursive,
        ForecasterRecursiveClassifier,
        ForecasterRecursiveMultiSeries,
    )
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    index = pd.date_range("2020-01-01", periods=120, freq="D")
    y = pd.Series(np.cumsum(rng.normal(size=120)) + 20, index=index, name="y")
    exog = pd.DataFrame({"temperature": rng.normal(size=120)}, index=index)
    series = pd.DataFrame({"a": y.to_numpy(), "b": y.to_numpy()[::-1] + 5}, index=index)
    rolling = RollingFeatures(stats=["mean", "std", "min", "max"], window_sizes=4)
    forecasters: dict[str, tuple[object, dict[str, object]]] = {
        "recursive": (ForecasterRecursive(Ridge(), lags=5), {"y": y}),
        "recursive_features": (
            ForecasterRecursive(
                Ridge(), lags=3, window_features=rolling, transformer_y=StandardScaler(), differentiation=1
            ),
            {"y": y, "exog": exog},
        ),
        "direct": (
            ForecasterDirect(RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0), lags=3, steps=2),
            {"y": y},
        ),
        "multiseries": (ForecasterRecursiveMultiSeries(Ridge(), lags=4, encoding="onehot"), {"series": series}),
        "multivariate": (ForecasterDirectMultiVariate(Ridge(), level="a", lags=3, steps=2), {"series": series}),
        "equivalent_date": (ForecasterEquivalentDate(offset=7, n_offsets=2), {"y": y}),
        "classifier": (
            ForecasterRecursiveClassifier(LogisticRegression(), lags=3),
            {"y": pd.Series(np.where(y.diff().fillna(0) > 0, "up", "down"), index=index)},
        ),
    }
    for name, (forecaster, data) in forecasters.items():
        forecaster.fit(**data)  # type: ignore[attr-defined]
        _pickle(folder / f"skforecast_{name}.pkl", forecaster)


def _pickle(path: Path, obj: object) -> None:
    import pickle

    with path.open("wb") as stream:
        pickle.dump(obj, stream)


def save_models(folder: Path) -> None:
    mapie_models(folder)
    skforecast_models(folder)


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], {}, {})
    warnings.simplefilter("ignore")
    lists = screened_recording(save_models, LIBRARIES, args.keep)
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("mapie", "skforecast", "scikit-learn", "pandas"))
    write_pack(
        "allow-sklearn-wrappers",
        f"Generated by tools/gen_sklearn_wrappers_allowlist.py ({versions}): what MAPIE's conformal predictors and "
        "skforecast's forecasters import, recorded from real saves, never a package wildcard: classes restored "
        "from state only, each screened for the hooks loading runs; the functions they keep as values; their "
        "method names and the classes that cannot be called. The estimators they wrap are judged by the other "
        "packs.\n",
        lists,
    )


if __name__ == "__main__":
    main()
