"""Regenerate rules/allow-lifelines.yaml: the names lifelines' fitted survival models import.

lifelines is not a test dependency (tests/data/lifelines keeps real files it wrote): run this where it is installed
beside PyYAML and joblib (`pip install lifelines`), then `python tools/gen_lifelines_allowlist.py [--keep DIR]`.
lifelines documents saving a fitted model with pickle (or dill, or joblib). Empirical, as the other recorded lists
(`gen_stats_allowlist`, whose recording this shares): each fitter of the catalogue below is fitted on a little data
and saved with pickle (the kept files also with joblib), and the names those pickles import, with every pickle
protocol from 2, are recorded by a find_class that refuses nothing; every class is screened as scikit-learn's
ecosystem is (a load hook of its own stops the generator until it is reviewed).

Fitters keep some of their own methods bound to themselves: the parametric regression fitters their objective,
`partial(self._create_neg_likelihood_with_penalty_function, likelihood=self._log_likelihood_right_censoring,
penalty=self._add_penalty)`, Nelson-Aalen its smoothing functions and `plot_cumulative_hazard = self.plot`. pickle
writes each as getattr(<the fitter>, "method"), which loading only wraps or keeps. They are recorded from the live
models (`bound_methods`) and allowed bound to a restored fitter of their class only (WS-PKL-017, WS-PKL-026), as the
stats pack does statsmodels' loglike. Fitters given a formula keep formulaic's ModelSpec, whose factors formulaic
evaluates as Python when the model predicts: formulaic is not recorded here, so those files stay high (WS-PKL-003);
so do the AFT fitters and the Cox fitters with a spline or piecewise baseline, which build a formula of their own.
"""

from __future__ import annotations

import functools
import inspect
import pickle
import warnings
from pathlib import Path

from gen_allowlists import catalogue_arguments, reachable
from gen_stats_allowlist import screened_recording
from pack_file import write_pack

LIBRARIES = ("lifelines.",)
# CoxPHFitter wraps the fitter of its baseline method and hands it every attribute it lacks; before its state sets
# `_model`, the lookup raises AttributeError (so pickle finds no __setstate__). A second state is WS-PKL-018.
LIFELINES_OWNER_HOOKS = {
    "__getattr__ of lifelines.fitters.coxph_fitter.CoxPHFitter": "its _model's attribute; raises until state sets it",
    "__new__ of lifelines.utils.CensoringType": "Enum",
}
BOUND_METHODS: set[str] = set()  # `Fitter.method` for each bound method the saved models keep, filled as they are saved


def save_models(folder: Path) -> None:
    import numpy as np
    import pandas as pd
    from lifelines import (
        AalenAdditiveFitter,
        AalenJohansenFitter,
        BreslowFlemingHarringtonFitter,
        CoxPHFitter,
        CoxTimeVaryingFitter,
        ExponentialFitter,
        GeneralizedGammaFitter,
        KaplanMeierFitter,
        LogLogisticAFTFitter,
        LogLogisticFitter,
        LogNormalAFTFitter,
        LogNormalFitter,
        MixtureCureFitter,
        NelsonAalenFitter,
        PiecewiseExponentialFitter,
        PiecewiseExponentialRegressionFitter,
        SplineFitter,
        WeibullAFTFitter,
        WeibullFitter,
    )

    rng = np.random.default_rng(0)
    n = 200
    data = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n), "group": rng.integers(0, 2, size=n)})
    data["T"] = rng.exponential(5, size=n) + 0.1
    data["E"] = rng.integers(0, 2, size=n)
    plain = data[["x1", "x2", "T", "E"]]
    durations, events = data["T"], data["E"]
    upper = durations + rng.exponential(1, size=n)
    univariate = {
        "kaplan_meier": KaplanMeierFitter().fit(durations, events),
        "kaplan_meier_left": KaplanMeierFitter().fit_left_censoring(durations, events),
        "nelson_aalen": NelsonAalenFitter().fit(durations, events),
        "breslow_fleming_harrington": BreslowFlemingHarringtonFitter().fit(durations, events),
        "weibull": WeibullFitter().fit(durations, events),
        "weibull_left": WeibullFitter().fit_left_censoring(durations, events),
        "weibull_interval": WeibullFitter().fit_interval_censoring(durations, upper),
        "exponential": ExponentialFitter().fit(durations, events),
        "log_normal": LogNormalFitter().fit(durations, events),
        "log_logistic": LogLogisticFitter().fit(durations, events),
        "piecewise_exponential": PiecewiseExponentialFitter(breakpoints=[2, 5]).fit(durations, events),
        "generalized_gamma": GeneralizedGammaFitter().fit(durations, events),
        "spline": SplineFitter(np.percentile(durations, [5, 50, 95])).fit(durations, events),
        "mixture_cure": MixtureCureFitter(base_fitter=ExponentialFitter()).fit(durations, events),
        "aalen_johansen": AalenJohansenFitter(calculate_variance=False).fit(
            durations, rng.integers(0, 3, size=n), event_of_interest=1
        ),
    }
    regression = {
        "cox_ph": CoxPHFitter().fit(plain, "T", "E"),
        "cox_ph_penalized": CoxPHFitter(penalizer=0.1, l1_ratio=0.5).fit(plain, "T", "E"),
        "cox_ph_strata": CoxPHFitter().fit(data, "T", "E", strata=["group"]),
        "cox_ph_spline": CoxPHFitter(baseline_estimation_method="spline", n_baseline_knots=3).fit(plain, "T", "E"),
        "cox_ph_piecewise": CoxPHFitter(baseline_estimation_method="piecewise", breakpoints=[3]).fit(plain, "T", "E"),
        "weibull_aft": WeibullAFTFitter().fit(plain, "T", "E"),
        "weibull_aft_interval": WeibullAFTFitter().fit_interval_censoring(
            data.assign(upper=upper)[["x1", "x2", "T", "upper"]], "T", "upper"
        ),
        "log_normal_aft": LogNormalAFTFitter().fit(plain, "T", "E"),
        "log_logistic_aft": LogLogisticAFTFitter().fit(plain, "T", "E"),
        "piecewise_regression": PiecewiseExponentialRegressionFitter(breakpoints=[3]).fit(plain, "T", "E"),
        "aalen_additive": AalenAdditiveFitter(coef_penalizer=0.1).fit(plain, "T", "E"),
    }
    long = pd.DataFrame({
        "id": np.repeat(np.arange(50), 2), "start": np.tile([0.0, 2.0], 50), "stop": np.tile([2.0, 4.0], 50),
        "z": rng.normal(size=100), "event": np.tile([0, 1], 50) * rng.integers(0, 2, size=100),
    })  # fmt: skip
    regression["cox_time_varying"] = CoxTimeVaryingFitter(penalizer=0.1).fit(
        long, id_col="id", event_col="event", start_col="start", stop_col="stop"
    )
    for name, model in {**univariate, **regression}.items():
        BOUND_METHODS.update(bound_methods(model))
        with (folder / f"{name}.pkl").open("wb") as stream:
            pickle.dump(model, stream)


def bound_methods(model: object) -> set[str]:
    """`Class.method` for every method of a lifelines object that the model keeps bound to it, as an attribute or
    in a partial: pickle writes each as getattr(<the object>, "method")."""
    found: set[str] = set()
    for obj in reachable(model, 30):
        parts = [obj.func, *obj.args, *obj.keywords.values()] if isinstance(obj, functools.partial) else [obj]
        for part in parts:
            if inspect.ismethod(part):
                klass = type(part.__self__)
                owner = f"{klass.__module__}.{klass.__qualname__}"
                if owner.startswith(LIBRARIES):
                    found.add(f"{owner}.{part.__func__.__name__}")
    return found


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], {}, LIFELINES_OWNER_HOOKS)
    warnings.simplefilter("ignore")
    lists = screened_recording(save_models, LIBRARIES, args.keep)
    methods = sorted(BOUND_METHODS)
    lists["instance-methods"] = methods
    lists["inert-values"] = sorted({*lists["inert-values"], *(f"name:{method}" for method in methods)})
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("lifelines", "pandas", "numpy"))
    write_pack(
        "allow-lifelines",
        f"Generated by tools/gen_lifelines_allowlist.py ({versions}): what lifelines' fitted survival models "
        "import (univariate, Cox, AFT, piecewise, spline, Aalen and time-varying fitters; pickle and joblib), "
        "recorded from real saves, never a package wildcard: classes restored from state only, each screened for "
        "the hooks loading runs; the objective's bound methods the parametric fitters keep in a partial; their "
        "method names and the classes that cannot be called. Models fitted with a formula keep formulaic's "
        "ModelSpec, which is not listed, and stay high.\n",
        lists,
    )


if __name__ == "__main__":
    main()
