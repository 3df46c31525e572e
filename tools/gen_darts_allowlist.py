"""Regenerate rules/allow-darts.yaml: the names darts' saved forecasting models and time series import.

darts is not a test dependency (tests/data/darts keeps real files it wrote), so run this where it is installed beside
the test extra with PyTorch Lightning (`pip install darts`, never another torch), then
`python tools/gen_darts_allowlist.py [--keep DIR]`. Empirical, as the other recorded lists (`gen_stats_allowlist`,
`gen_fastai_allowlist`): each model of the catalogue below is fitted on a little data and saved the ways darts
documents: `model.save(path)`, a pickle of a local or regression model, and for a torch model a torch.save of the model
without its network and trainer (`.pt`, also with `clean=True`) beside the Lightning checkpoint of its network
(`.pt.ckpt`); and `TimeSeries.to_pickle`. The names those files import are recorded by a find_class that refuses
nothing (pickles also as written with every protocol from 2), and classes are screened as scikit-learn's ecosystem is,
each hook the screen raised read in darts' source and reviewed below. Only what these files import is listed, never
the package. Theta and FourTheta are left out: darts 0.41 passes SimpleExpSmoothing an initialization_method the
installed statsmodels (0.15) refuses. Where torchvision's wheel does not match torch (helper 266's venv), importing
darts fails in torchvision's meta-kernel registrations: the generator puts an empty module there first (it registers
nothing this recording uses).

Models saved with `save_checkpoints=True` keep Lightning's ModelCheckpoint among their trainer arguments, which holds
the module's `log` as a bound method (pickled as getattr): those stay flagged, and are not in the catalogue.
"""

from __future__ import annotations

import pickle
import sys
import types
import warnings
from pathlib import Path

from gen_allowlists import catalogue_arguments, screened_catalogue
from gen_fastai_allowlist import recorded_catalogue
from gen_stats_allowlist import screened_lists
from pack_file import write_pack

# nfoursid: the state-space model and Kalman filter darts' KalmanForecaster keeps (a dependency darts installs)
LIBRARIES = ("darts.", "nfoursid.")
# Load hooks of darts' own, read in the installed source (darts 0.41.0).
DARTS_OWNER_HOOKS = {
    # TorchForecastingModel.__getstate__ drops the network and the trainer (TFM_ATTRS_NO_PICKLE); __setstate__ sets
    # the instance's dict to the state, then model and trainer back to None
    "__setstate__ of darts.models.forecasting.torch_forecasting_model.TorchForecastingModel":
        "__dict__ = state, then model and trainer None",
    # TimeSeries compares type, shape, time index, values, components and static covariates; unhashable
    "__eq__ of darts.timeseries.TimeSeries": "compares shape, time index, values and metadata",
    "__hash__ of darts.timeseries.TimeSeries": "None: __eq__ is defined",
    # pickle's APPEND (and APPENDS, TimeSeries having no extend) calls append(item): it checks the other series' index
    # type, frequency, widths and start, then returns a new series of both, which pickle discards; self is unchanged
    # (and before BUILD it has no index: AttributeError)
    "append of darts.timeseries.TimeSeries": "returns a new series, which pickle discards; self unchanged",
    # Enum.__new__ itself (enum copies it into each class's dict): looks a member up by value; plain Enums of strings
    "__new__ of darts.utils.likelihood_models.base.LikelihoodType": "Enum.__new__",
    "__new__ of darts.utils.utils.ModelMode": "Enum.__new__",
    "__new__ of darts.utils.utils.SeasonalityMode": "Enum.__new__",
    # a likelihood compares the dicts of two likelihoods of the same class, but the attributes it ignores
    "__eq__ of darts.utils.likelihood_models.base.Likelihood": "compares the dicts of the same class",
    "__hash__ of darts.utils.likelihood_models.base.Likelihood": "None: __eq__ is defined",
    # SeriesType (an Enum of ints): raises for another class, else Enum's comparison
    "__eq__ of darts.utils.ts_utils.SeriesType": "raises for another class, else Enum's",
    "__hash__ of darts.utils.ts_utils.SeriesType": "None: __eq__ is defined",
}
# Metaclasses whose hooks run when a class is called (pickle restores these classes with __new__ and BUILD; a call is
# WS-PKL-014).
DARTS_METACLASSES = {
    "darts.models.forecasting.forecasting_model.ModelMeta": "ABCMeta whose __call__ records the constructor's "
    "arguments as model_params, then calls __init__: only when the class is called",
}
# Bound methods real files keep, pickled as getattr(model, name) on the model the stream restored: an FFT keeps the
# trend function of its fit as trend_function (with no trend, `_null_trend`, which returns 0; with an exponential
# one, `_exp_trend`, exp of a line through its coefficients). Nothing calls them while the file loads.
INSTANCE_METHODS = ["darts.models.forecasting.fft.FFT._exp_trend", "darts.models.forecasting.fft.FFT._null_trend"]


def save_models(folder: Path) -> None:
    import logging
    import os

    import numpy as np
    import pandas as pd
    import torch

    os.environ["PL_DISABLE_FORK"] = "1"
    for name in ("pytorch_lightning", "lightning", "lightning.pytorch", "darts"):
        logging.getLogger(name).setLevel(logging.ERROR)
    from darts import TimeSeries
    from darts.dataprocessing import Pipeline
    from darts.dataprocessing.transformers import MissingValuesFiller, Scaler
    from darts.models import (
        ARIMA,
        FFT,
        DLinearModel,
        ExponentialSmoothing,
        KalmanForecaster,
        LinearRegressionModel,
        NaiveDrift,
        NaiveMean,
        NaiveSeasonal,
        NBEATSModel,
        NLinearModel,
        RandomForestModel,
        RNNModel,
        TCNModel,
        TFTModel,
        TiDEModel,
    )

    torch.manual_seed(0)
    index = pd.date_range("2000-01-01", periods=72, freq="MS")
    steps = np.arange(72)
    values = 100 + 2 * steps + 20 * np.sin(steps * 2 * np.pi / 12)
    series = TimeSeries.from_series(pd.Series(values, index=index, name="y"))
    covariate = TimeSeries.from_series(pd.Series(np.cos(steps / 3), index=index, name="x"))
    series.to_pickle(str(folder / "darts_timeseries.pkl"))
    pipeline = Pipeline([MissingValuesFiller(), Scaler()])
    scaled = pipeline.fit_transform(series).astype(np.float32)  # the networks train in single precision
    with (folder / "darts_pipeline.pkl").open("wb") as stream:  # darts' transformers have no save of their own
        pickle.dump(pipeline, stream)

    local = {
        "exponential_smoothing": ExponentialSmoothing(),
        "naive_seasonal": NaiveSeasonal(K=12),
        "naive_drift": NaiveDrift(),
        "naive_mean": NaiveMean(),
        "arima": ARIMA(p=1, d=1, q=1),
        "fft": FFT(),
        "fft_exp": FFT(trend="exp"),
        "kalman": KalmanForecaster(dim_x=2),
        "linear_regression": LinearRegressionModel(lags=12),
        "linear_regression_covariates": LinearRegressionModel(lags=6, lags_past_covariates=3, output_chunk_length=2),
        "random_forest": RandomForestModel(lags=12, n_estimators=3, max_depth=3),
    }
    for name, model in local.items():
        if name == "linear_regression_covariates":
            model.fit(series, past_covariates=covariate)
        else:
            model.fit(series)
        model.save(str(folder / f"darts_{name}.pkl"))

    trainer = {"accelerator": "cpu", "enable_progress_bar": False, "enable_model_summary": False, "logger": False}
    common = {"n_epochs": 1, "batch_size": 16, "random_state": 0, "pl_trainer_kwargs": trainer}
    networks = {
        "nbeats": NBEATSModel(input_chunk_length=12, output_chunk_length=6, num_stacks=2, num_blocks=1, num_layers=1,
                              layer_widths=8, **common),
        "dlinear": DLinearModel(input_chunk_length=12, output_chunk_length=6, **common),
        "nlinear": NLinearModel(input_chunk_length=12, output_chunk_length=6, **common),
        "tcn": TCNModel(input_chunk_length=12, output_chunk_length=6, num_filters=2, **common),
        "rnn": RNNModel(model="LSTM", input_chunk_length=12, training_length=18, hidden_dim=4, **common),
        "tft": TFTModel(input_chunk_length=12, output_chunk_length=6, hidden_size=4, lstm_layers=1,
                        num_attention_heads=1, add_relative_index=True, **common),
        "tide": TiDEModel(input_chunk_length=12, output_chunk_length=6, hidden_size=4, **common),
        # a learning-rate scheduler and optimizer given as classes (kept in the model's parameters)
        "nbeats_scheduler": NBEATSModel(input_chunk_length=12, output_chunk_length=6, num_stacks=1, num_blocks=1,
                                        num_layers=1, layer_widths=4, optimizer_cls=torch.optim.Adam,
                                        lr_scheduler_cls=torch.optim.lr_scheduler.StepLR,
                                        lr_scheduler_kwargs={"step_size": 1}, **common),
    }
    for name, model in networks.items():
        model.fit(scaled)
        model.save(str(folder / f"darts_{name}.pt"))  # and darts_{name}.pt.ckpt, the network's checkpoint
    networks["dlinear"].save(str(folder / "darts_dlinear_clean.pt"), clean=True)


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], {}, DARTS_OWNER_HOOKS, DARTS_METACLASSES)
    warnings.simplefilter("ignore")
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    names, members, bound = recorded_catalogue(save_models, LIBRARIES, args.keep, lambda path: path.suffix == ".pkl")
    unknown = sorted(bound - set(INSTANCE_METHODS))
    if unknown:
        raise SystemExit(f"bound methods to review for INSTANCE_METHODS: {', '.join(unknown)}")
    allowed, state_only, functions = screened_catalogue(names, LIBRARIES)
    lists = screened_lists(allowed, state_only, functions, members)
    others = sorted(n for n in names if not n.startswith(LIBRARIES))
    print(f"recorded outside darts (judged by the other packs): {', '.join(others)}", file=sys.stderr)
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("darts", "nfoursid", "pytorch-lightning", "torch"))
    write_pack(
        "allow-darts",
        f"Generated by tools/gen_darts_allowlist.py ({versions}): what darts' saved forecasting models (model.save: "
        "local, regression and torch models, the last with their Lightning checkpoints), data transformer pipelines "
        "and TimeSeries.to_pickle import (and nfoursid's Kalman filter, which KalmanForecaster keeps), recorded from "
        "real saves, never a package wildcard: classes restored from state only, each screened for the hooks loading "
        "runs; enums; the bound trend functions an FFT keeps; their method names and the classes that cannot be "
        "called. Models saved with save_checkpoints=True keep a bound method (getattr) and stay flagged.\n",
        {
            **lists,
            "instance-methods": INSTANCE_METHODS,
            "inert-values": sorted(lists["inert-values"] + [f"name:{method}" for method in INSTANCE_METHODS]),
        },
    )


if __name__ == "__main__":
    main()
