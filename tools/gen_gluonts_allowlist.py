"""Regenerate rules/allow-gluonts.yaml: the class names GluonTS's encoder writes in real predictors' JSON.

`Predictor.deserialize(folder)` decodes predictor.json with `gluonts.core.serde`, which imports each object's `class`:
an object of `__kind__` "instance" calls it with its `args` and `kwargs`, "type" returns it, "stateful" makes it with
`__new__` and sets its `__dict__`. GluonTS before 0.17 called whatever was named; 0.17 still decodes classes its
encoder never writes for a predictor (`gluonts.dataset.artificial.recipe.Eval`, which evaluates Python, reached through
`gluonts.itertools.StarMap` in a `builtins.list`), so wscan (src/wscan/scanners/gluonts_serde.py, WS-CFG-023) judges
the names as the other recorded packs are judged: only those GluonTS's own encoder writes for real predictors.
GluonTS is not a test dependency (tests/data/gluonts_catalogue keeps real folders): run this where GluonTS 0.17 is
installed with torch and Lightning, `python tools/gen_gluonts_allowlist.py [--keep DIR]`. Recorded, never a module
wildcard: every gluonts.torch estimator that trains in seconds is trained one epoch of two batches on tiny random
data on the CPU (defaults, and a few distribution outputs, time features of several frequencies, static and dynamic
features), beside the model-free predictors; each is written with `predictor.serialize(folder)` and read back with
`Predictor.deserialize`, and every `class` its JSON files name (at any depth) is recorded under its `__kind__`:
`gluonts-serde-instances` (kind "instance", called) and `gluonts-serde-types` (kind "type", returned: dtypes, the
time-feature functions, SeasonalAggregatePredictor's numpy.nanmean). A kind other than those two, a name from
`gluonts.dataset.artificial`, `gluonts.itertools` or `gluonts.core.serde`, a gluonts name that is another package's
object (a stdlib function a gluonts module imported) or not the object's own name, a module, or a method encoded as
`builtins.getattr` stops the generator, as does any predictor of the catalogue that fails. Left out: Naive2Predictor
(needs statsmodels), the statsforecast predictors (ThetaPredictor and the rest: statsforecast), Prophet, R and
hierarchicalforecast predictors (not installed), Lag-Llama (not in GluonTS), the mxnet models (mxnet); the
distribution outputs GluonTS 0.17.0 cannot construct (TruncatedNormalOutput, GeneralizedParetoOutput and
BinnedUniformsOutput fail its own validation), or whose estimators cannot train them (ISQFOutput and
PiecewiseLinearOutput: SimpleFeedForward raises NotImplementedError, DeepAR's loss fails), and BetaOutput (needs
data in (0, 1)).
"""

from __future__ import annotations

import argparse
import inspect
import json
import shutil
import sys
import tempfile
import types
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from pydoc import locate
from typing import Any

from pack_file import write_pack

FORBIDDEN = ("gluonts.dataset.artificial", "gluonts.itertools", "gluonts.core.serde")
KINDS = {"instance": "gluonts-serde-instances", "type": "gluonts-serde-types"}
PREDICTION_LENGTH = 4
LENGTH = 60  # observations per series
KEPT = ("deepar_features_h", "tide_features_w", "patchtst_d", "mqf2_d", "sff_quantile_d", "seasonal_agg_d",
        "mean_estimator_d", "rotbaum_d")  # fmt: skip
MAX_KEPT = 300_000  # bytes a kept folder may hold
TRAINER = {"max_epochs": 1, "limit_train_batches": 2, "limit_val_batches": 0, "logger": False,
           "enable_progress_bar": False, "enable_model_summary": False,
           "accelerator": "cpu", "devices": 1}  # fmt: skip


def data(freq: str, features: bool = False, dim: int = 0, seed: int = 0) -> Any:
    """Four short random series of `freq` (positive counts); with `features`, one static category (cardinality 2),
    one static real, one dynamic real and one past dynamic real (as long as the target: training data); `dim` > 0:
    multivariate."""
    import numpy as np
    import pandas as pd
    from gluonts.dataset.common import ListDataset

    rng = np.random.default_rng(seed)
    entries = []
    for index in range(4):
        shape = (dim, LENGTH) if dim else (LENGTH,)
        entry = {"start": pd.Period("2021-01-04", freq=freq), "target": np.round(rng.gamma(2.0, 5.0, shape)),
                 "item_id": f"series{index}"}  # fmt: skip
        if features:
            entry["feat_static_cat"] = [index % 2]
            entry["feat_static_real"] = [float(index)]
            entry["feat_dynamic_real"] = rng.normal(size=(1, LENGTH))
            entry["past_feat_dynamic_real"] = rng.normal(size=(1, LENGTH))
        entries.append(entry)
    return ListDataset(entries, freq=freq, one_dim_target=not dim)


def trained(cls: type, dataset: Any, **kwargs: Any) -> Any:
    """`cls(**kwargs)` with this catalogue's small batches and one short CPU epoch, trained on `dataset`."""
    import lightning.pytorch as pl

    accepted = inspect.signature(cls.__init__).parameters
    small = {"batch_size": 4, "num_batches_per_epoch": 2, "trainer_kwargs": TRAINER, "epochs": 1}
    kwargs = {**{key: value for key, value in small.items() if key in accepted}, **kwargs}
    pl.seed_everything(0, workers=True)
    with tempfile.TemporaryDirectory() as root:  # GluonTS adds a ModelCheckpoint, which writes under it
        if "trainer_kwargs" in kwargs:
            kwargs["trainer_kwargs"] = {**kwargs["trainer_kwargs"], "default_root_dir": root}
        return cls(**kwargs).train(dataset)


def catalogue() -> Iterator[tuple[str, Callable[[], Any]]]:
    """(label, a function making the predictor), for every predictor in the catalogue."""
    from gluonts.ext.rotbaum import TreeEstimator
    from gluonts.model.npts import NPTSPredictor
    from gluonts.model.seasonal_agg import SeasonalAggregatePredictor
    from gluonts.model.seasonal_naive import SeasonalNaivePredictor
    from gluonts.model.trivial.constant import ConstantValuePredictor
    from gluonts.model.trivial.identity import IdentityPredictor
    from gluonts.model.trivial.mean import MeanEstimator, MeanPredictor, MovingAveragePredictor
    from gluonts.torch import (
        DeepAREstimator,
        DeepNPTSEstimator,
        DLinearEstimator,
        LagTSTEstimator,
        PatchTSTEstimator,
        SimpleFeedForwardEstimator,
        TemporalFusionTransformerEstimator,
        TiDEEstimator,
        WaveNetEstimator,
    )
    from gluonts.torch import distributions as d
    from gluonts.torch.model.i_transformer import ITransformerEstimator
    from gluonts.torch.model.mqf2 import MQF2MultiHorizonEstimator

    p = PREDICTION_LENGTH
    features = {"num_feat_dynamic_real": 1, "num_feat_static_cat": 1, "num_feat_static_real": 1, "cardinality": [2]}
    # DeepAR: its time features differ with the frequency, the distribution output with the data
    for freq in ("D", "h", "W", "M", "Q", "Y", "B", "min", "15min", "s"):
        yield f"deepar_{freq.lower()}", lambda f=freq: trained(DeepAREstimator, data(f), freq=f, prediction_length=p)
    yield "deepar_features_h", lambda: trained(DeepAREstimator, data("h", True), freq="h", prediction_length=p,
                                               distr_output=d.NegativeBinomialOutput(), **features)  # fmt: skip
    spliced = {"bins_lower_bound": 0.0, "bins_upper_bound": 100.0, "num_bins": 10, "tail_percentile_gen_pareto": 0.05}
    yield "deepar_spliced_d", lambda: trained(DeepAREstimator, data("D"), freq="D", prediction_length=p,
                                              distr_output=d.SplicedBinnedParetoOutput(**spliced))  # fmt: skip
    yield "deepar_normal_w", lambda: trained(DeepAREstimator, data("W"), freq="W", prediction_length=p,
                                             distr_output=d.NormalOutput())  # fmt: skip
    # SimpleFeedForward: each distribution output a univariate estimator takes
    outputs = {
        "normal": d.NormalOutput(), "negbin": d.NegativeBinomialOutput(), "poisson": d.PoissonOutput(),
        "laplace": d.LaplaceOutput(), "gamma": d.GammaOutput(), "quantile": d.QuantileOutput([0.1, 0.5, 0.9]),
        "iqn": d.ImplicitQuantileNetworkOutput(), "studentt": d.StudentTOutput(),
    }  # fmt: skip
    yield "sff_d", lambda: trained(SimpleFeedForwardEstimator, data("D"), prediction_length=p)
    for name, output in outputs.items():
        yield f"sff_{name}_d", lambda o=output: trained(SimpleFeedForwardEstimator, data("D"), prediction_length=p,
                                                        distr_output=o)  # fmt: skip
    tft = {"static_dims": [1], "dynamic_dims": [1], "past_dynamic_dims": [1], "static_cardinalities": [2]}
    yield "tft_d", lambda: trained(TemporalFusionTransformerEstimator, data("D"), freq="D", prediction_length=p)
    yield "tft_features_h", lambda: trained(TemporalFusionTransformerEstimator, data("h", True), freq="h",
                                            prediction_length=p, **tft)  # fmt: skip
    yield "patchtst_d", lambda: trained(PatchTSTEstimator, data("D"), prediction_length=p, patch_len=4)
    yield "patchtst_normal_d", lambda: trained(PatchTSTEstimator, data("D"), prediction_length=p, patch_len=4,
                                               distr_output=d.NormalOutput())  # fmt: skip
    yield "dlinear_d", lambda: trained(DLinearEstimator, data("D"), prediction_length=p)
    yield "dlinear_quantile_d", lambda: trained(DLinearEstimator, data("D"), prediction_length=p,
                                                distr_output=d.QuantileOutput([0.1, 0.5, 0.9]))  # fmt: skip
    yield "wavenet_h", lambda: trained(WaveNetEstimator, data("h"), freq="h", prediction_length=p)
    yield "wavenet_features_d", lambda: trained(WaveNetEstimator, data("D", True), freq="D", prediction_length=p,
                                                **features)  # fmt: skip
    yield "tide_m", lambda: trained(TiDEEstimator, data("M"), freq="M", prediction_length=p)
    yield "tide_features_w", lambda: trained(TiDEEstimator, data("W", True), freq="W", prediction_length=p,
                                             distr_output=d.NegativeBinomialOutput(), **features)  # fmt: skip
    yield "lagtst_d", lambda: trained(LagTSTEstimator, data("D"), freq="D", prediction_length=p)
    yield "mqf2_d", lambda: trained(MQF2MultiHorizonEstimator, data("D"), freq="D", prediction_length=p)
    yield "itransformer_d", lambda: trained(ITransformerEstimator, data("D", dim=3), prediction_length=p)
    yield "deepnpts_d", lambda: trained(DeepNPTSEstimator, data("D"), freq="D", prediction_length=p,
                                        context_length=2 * p)  # fmt: skip
    # model-free predictors
    yield "seasonal_naive_d", lambda: SeasonalNaivePredictor(prediction_length=p, season_length=7)
    yield "seasonal_agg_d", lambda: SeasonalAggregatePredictor(prediction_length=p, season_length=7, num_seasons=2)
    yield "npts_d", lambda: NPTSPredictor(prediction_length=p)
    yield "npts_uniform_h", lambda: NPTSPredictor(prediction_length=p, context_length=24, kernel_type="uniform",
                                                  use_seasonal_model=False, num_default_time_features=2)  # fmt: skip
    yield "constant_value_w", lambda: ConstantValuePredictor(prediction_length=p, value=1.0)
    yield "mean_d", lambda: MeanPredictor(prediction_length=p)
    yield "moving_average_d", lambda: MovingAveragePredictor(prediction_length=p, context_length=7)
    yield "identity_d", lambda: IdentityPredictor(prediction_length=p, num_samples=10)
    yield "mean_estimator_d", lambda: MeanEstimator(prediction_length=p, num_samples=10).train(data("D"))
    yield "rotbaum_d", lambda: TreeEstimator(freq="D", prediction_length=p, context_length=2 * p).train(data("D"))


def objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object holding `__kind__` in `value`, at any depth."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "__kind__" in item:
                yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def checked(names: dict[str, set[str]], config_types: set[str]) -> None:
    """Stop on a kind, a name or a module this pack must never hold (see the module's docstring)."""
    other = sorted(kind for kind in names if kind not in KINDS)
    if other:
        raise SystemExit(f"kinds besides instance and type: {other}: {[sorted(names[k]) for k in other]}")
    for kind, listed in names.items():
        for name in sorted(listed):
            if name.startswith(tuple(f"{prefix}." for prefix in FORBIDDEN)) or name in FORBIDDEN:
                raise SystemExit(f"{kind} {name}: from a module whose classes the pack must never allow")
            obj = locate(name)
            if obj is None or isinstance(obj, types.ModuleType):
                raise SystemExit(f"{kind} {name}: not a class or function")
            owner = getattr(obj, "__module__", "") or ""
            if name.startswith("gluonts.") and not owner.startswith("gluonts."):
                raise SystemExit(f"{kind} {name}: {owner}'s object reached through a gluonts module")
            if name.startswith("gluonts.") and name != f"{owner}.{getattr(obj, '__qualname__', '')}":
                raise SystemExit(f"{kind} {name}: not the name the encoder writes for it (fqname_for)")
    if "builtins.getattr" in names.get("instance", set()):
        raise SystemExit("a method encoded as builtins.getattr")
    if not config_types <= names.get("instance", set()):
        raise SystemExit(f"predictor classes never written as instances: {sorted(config_types - names['instance'])}")


def record(keep: Path | None) -> dict[str, list[str]]:
    """Make, serialize, deserialize and read every predictor of the catalogue; the names, by list."""
    from gluonts.model.predictor import Predictor

    names: dict[str, set[str]] = {}
    config_types: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for label, make in catalogue():
            folder = Path(tmp) / label
            folder.mkdir()
            predictor = make()
            predictor.serialize(folder)
            Predictor.deserialize(folder)  # GluonTS 0.17 decodes what it wrote
            found: set[tuple[str, str]] = set()
            for path in sorted(folder.rglob("*.json")):
                document = json.loads(path.read_text(encoding="utf-8"))
                if path.name == "gluonts-config.json":
                    config_types.add(document["type"])
                found.update((str(item["__kind__"]), str(item.get("class"))) for item in objects(document))
            for kind, name in found:
                names.setdefault(kind, set()).add(name)
            size = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
            print(f"{label}: {type(predictor).__name__}, {len(found)} names, {size} bytes", file=sys.stderr)
            if keep and label in KEPT:
                if size > MAX_KEPT:
                    raise SystemExit(f"{label}: {size} bytes, more than a kept folder may hold")
                shutil.rmtree(keep / label, ignore_errors=True)
                shutil.copytree(folder, keep / label)
    checked(names, config_types)
    return {KINDS[kind]: sorted(names.get(kind, set())) for kind in KINDS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help=f"also copy these predictors' folders here: {', '.join(KEPT)}")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    # torchvision's meta registrations fail to import beside some torch builds; GluonTS never needs them
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    import logging

    import torch

    logging.getLogger("lightning").setLevel(logging.ERROR)
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    lists = record(args.keep)
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("gluonts", "torch", "lightning", "pandas", "numpy"))
    write_pack(
        "allow-gluonts",
        f"Generated by tools/gen_gluonts_allowlist.py ({versions}): the `class` names GluonTS's serde encoder "
        "writes in real predictors' JSON (predictor.json and the files beside it), recorded from the folders "
        "`predictor.serialize` wrote for every gluonts.torch estimator trained briefly (defaults, several "
        "distribution outputs, time features of ten frequencies, static and dynamic features) and the model-free "
        "predictors, each read back by Predictor.deserialize; never a module wildcard. Instances are the classes "
        "written with __kind__ instance (called with their args and kwargs), types the names written with __kind__ "
        "type (returned: dtypes and time-feature functions). Nothing from gluonts.dataset.artificial, "
        "gluonts.itertools or gluonts.core.serde, and no other package's object reached through a gluonts module.\n",
        lists,
    )


if __name__ == "__main__":
    main()
