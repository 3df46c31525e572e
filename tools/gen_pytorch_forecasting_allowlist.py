"""Regenerate rules/allow-pytorch-forecasting.yaml: the names pytorch-forecasting's datasets and checkpoints import.

pytorch-forecasting is not a test dependency (tests/data/pytorch_forecasting keeps real files it wrote), so run this
where it is installed beside the test extra with Lightning (`pip install pytorch-forecasting`, never another torch),
then `python tools/gen_pytorch_forecasting_allowlist.py [--keep DIR]`. Empirical, as the other recorded lists
(`gen_darts_allowlist`, `gen_stats_allowlist`): the catalogue below builds TimeSeriesDataSets on a little data with
several target normalizers (GroupNormalizer with and without transformations, EncoderNormalizer, TorchNormalizer,
MultiNormalizer, a NaNLabelEncoder for a categorical target) and categorical encoders, saves them with
`TimeSeriesDataSet.save` (a torch.save of the whole dataset), and trains each model one epoch (CPU, no logger) with
its default loss or another of pytorch-forecasting's metrics, keeping the Lightning checkpoints the documented ways
(`trainer.save_checkpoint` and ModelCheckpoint's). The checkpoints' hyperparameters hold the loss, the logging
metrics and the target normalizer (`output_transformer`) as objects, and `dataset_parameters` the dataset's
normalizers, scalers and encoders. The names those files import (also pickled again with every protocol from 2) are
recorded by a find_class that refuses nothing, and classes are screened as scikit-learn's ecosystem is, each hook the
screen raised read in pytorch-forecasting's source and reviewed below. Only what these files import is listed, never
the package. Where torchvision's wheel does not match torch, importing pytorch-forecasting fails in torchvision's
meta-kernel registrations: the generator puts an empty module there first (it registers nothing this recording uses).

The normalizers' `transformation` may be a dict of functions instead of a name (TransformMixIn.get_transform returns
it as given and calls its `forward`, `reverse` and `inverse` on the data): real files keep a name, and a dict's values
are judged as any value of a state is, by the other packs' lists.
"""

from __future__ import annotations

import sys
import types
import warnings
from pathlib import Path

from gen_allowlists import catalogue_arguments, screened_catalogue
from gen_fastai_allowlist import recorded_catalogue, table_members
from gen_stats_allowlist import screened_lists
from pack_file import write_pack

LIBRARIES = ("pytorch_forecasting.",)
# Load hooks of pytorch-forecasting's own, read in the installed source (pytorch-forecasting 1.8.0). Its normalizers
# and encoders are scikit-learn estimators (BaseEstimator.__setstate__, reviewed with scikit-learn), its metrics
# torchmetrics metrics (Metric.__setstate__, allow-torchmetrics), its models Lightning modules (their checkpoints keep
# only the weights, hyperparameters and the dataset's parameters).
PTF_OWNER_HOOKS = {
    # MultiNormalizer and MultiLoss hand out a name they lack from each of their parts (`normalizers`, `metrics`): a
    # list of the parts' values, or a function calling each part's method. pickle finds __setstate__ on the class
    # (BaseEstimator's, Metric's), so only APPEND(S) looks a name up here: before BUILD the parts are missing and the
    # lookup recurses until RecursionError; after it, APPENDS on the object is WS-PKL-018.
    "__getattr__ of pytorch_forecasting.data.encoders.MultiNormalizer": "a name all its normalizers have, as a "
    "list or a function over them; recurses before BUILD",
    "__getattr__ of pytorch_forecasting.metrics.base_metrics._base_metrics.MultiLoss": "Module's, else a name all "
    "its metrics have, as a list or a function over them; recurses before BUILD",
}
# The bound methods the loaded objects hold but the files do not: torchmetrics' Metric.__setstate__ wraps a metric's
# update and compute in closures that keep them (a file pickles neither: Metric.__getstate__ drops both).
TORCHMETRICS_WRAPPED = ("update", "compute")


def save_models(folder: Path) -> None:
    import logging
    import os

    import numpy as np
    import pandas as pd
    import torch

    os.environ["PL_DISABLE_FORK"] = "1"
    for name in ("pytorch_lightning", "lightning", "lightning.pytorch", "lightning.fabric", "pytorch_forecasting"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import lightning.pytorch as pl
    from pytorch_forecasting import (
        DecoderMLP,
        DeepAR,
        NBeats,
        NBeatsKAN,
        NHiTS,
        RecurrentNetwork,
        TemporalFusionTransformer,
        TiDEModel,
        TimeSeriesDataSet,
    )
    from pytorch_forecasting.data import (
        EncoderNormalizer,
        GroupNormalizer,
        MultiNormalizer,
        NaNLabelEncoder,
        TorchNormalizer,
    )
    from pytorch_forecasting.metrics import (
        MAE,
        MAPE,
        RMSE,
        SMAPE,
        BetaDistributionLoss,
        CrossEntropy,
        ImplicitQuantileNetworkDistributionLoss,
        LogNormalDistributionLoss,
        MultiLoss,
        NegativeBinomialDistributionLoss,
        NormalDistributionLoss,
        PoissonLoss,
        QuantileLoss,
        TweedieLoss,
    )
    from pytorch_forecasting.models import TimeXer, xLSTMTime

    torch.manual_seed(0)
    pl.seed_everything(0, verbose=False)
    rng = np.random.RandomState(0)
    n = 40
    frame = pd.DataFrame({
        "time_idx": np.tile(np.arange(n), 3),
        "group": np.repeat(["a", "b", "c"], n),
        "value": (rng.rand(3 * n) + 1 + np.tile(np.sin(np.arange(n) / 4), 3)).astype("float32"),
        "other": rng.rand(3 * n).astype("float32"),
        "price": rng.rand(3 * n).astype("float32"),
        "kind": np.repeat(["x", "y", "z"], n),
        "weekday": np.tile([str(i % 7) for i in range(n)], 3),
        "count": rng.poisson(3, 3 * n).astype("float32"),
        "share": rng.uniform(0.05, 0.95, 3 * n).astype("float32"),
        "label": rng.choice(["low", "high"], 3 * n),
    })
    common = {"time_idx": "time_idx", "group_ids": ["group"], "max_encoder_length": 8, "max_prediction_length": 3}
    datasets = {
        "group_normalizer": TimeSeriesDataSet(
            frame, target="value", static_categoricals=["kind"], time_varying_known_categoricals=["weekday"],
            time_varying_known_reals=["price"], time_varying_unknown_reals=["value"], add_relative_time_idx=True,
            add_target_scales=True, add_encoder_length=True,
            target_normalizer=GroupNormalizer(groups=["group"], transformation="softplus"), **common),
        "encoder_normalizer": TimeSeriesDataSet(
            frame, target="value", time_varying_known_categoricals=["weekday"], time_varying_known_reals=["price"],
            time_varying_unknown_reals=["value"], target_normalizer=EncoderNormalizer(transformation="log1p"),
            categorical_encoders={"weekday": NaNLabelEncoder(add_nan=True)}, **common),
        "torch_normalizer": TimeSeriesDataSet(
            frame, target="value", time_varying_unknown_reals=["value"],
            target_normalizer=TorchNormalizer(method="robust"), **common),
        "multi_normalizer": TimeSeriesDataSet(
            frame, target=["value", "other"], time_varying_known_reals=["price"],
            time_varying_unknown_reals=["value", "other"],
            target_normalizer=MultiNormalizer([GroupNormalizer(groups=["group"]), TorchNormalizer()]), **common),
        "nbeats": TimeSeriesDataSet(frame, target="value", time_varying_unknown_reals=["value"], **common),
        "counts": TimeSeriesDataSet(
            frame, target="count", time_varying_known_reals=["price"], time_varying_unknown_reals=["count"],
            target_normalizer=GroupNormalizer(groups=["group"], center=False), **common),
        "log1p": TimeSeriesDataSet(
            frame, target="value", time_varying_known_reals=["price"], time_varying_unknown_reals=["value"],
            target_normalizer=GroupNormalizer(groups=["group"], transformation="log1p"), **common),
        "logit": TimeSeriesDataSet(
            frame, target="share", time_varying_known_reals=["price"], time_varying_unknown_reals=["share"],
            target_normalizer=GroupNormalizer(groups=["group"], transformation="logit"), **common),
        "label": TimeSeriesDataSet(
            frame, target="label", time_varying_known_reals=["price"], time_varying_unknown_categoricals=["label"],
            target_normalizer=NaNLabelEncoder(), **common),
    }
    for name, dataset in datasets.items():
        dataset.save(str(folder / f"ptf_dataset_{name}.pt"))
    grouped = datasets["group_normalizer"]
    models = {
        "tft": TemporalFusionTransformer.from_dataset(datasets["log1p"], hidden_size=4, attention_head_size=1,
                                                      hidden_continuous_size=2, loss=QuantileLoss()),
        "nbeats": NBeats.from_dataset(datasets["nbeats"], num_blocks=[1, 1], num_block_layers=[1, 1], widths=[8, 8]),
        "nhits": NHiTS.from_dataset(datasets["nbeats"], hidden_size=8, n_blocks=[1, 1, 1]),
        "deepar": DeepAR.from_dataset(grouped, hidden_size=4, rnn_layers=1, loss=NormalDistributionLoss()),
        "rnn": RecurrentNetwork.from_dataset(grouped, hidden_size=4, rnn_layers=1),
        "rnn_smape": RecurrentNetwork.from_dataset(datasets["torch_normalizer"], hidden_size=4, rnn_layers=1,
                                                   cell_type="GRU", loss=SMAPE()),
        "mlp": DecoderMLP.from_dataset(grouped, hidden_size=4, n_hidden_layers=1),
        "mlp_multi": DecoderMLP.from_dataset(datasets["multi_normalizer"], hidden_size=4, n_hidden_layers=1,
                                             loss=MultiLoss([MAE(), RMSE()])),
        "tide": TiDEModel.from_dataset(datasets["encoder_normalizer"], hidden_size=4),
        "mlp_mape": DecoderMLP.from_dataset(datasets["encoder_normalizer"], hidden_size=4, n_hidden_layers=1,
                                            loss=MAPE()),
        "deepar_negative_binomial": DeepAR.from_dataset(datasets["counts"], hidden_size=4, rnn_layers=1,
                                                        loss=NegativeBinomialDistributionLoss()),
        "deepar_lognormal": DeepAR.from_dataset(datasets["log1p"], hidden_size=4, rnn_layers=1,
                                                loss=LogNormalDistributionLoss()),
        "deepar_beta": DeepAR.from_dataset(datasets["logit"], hidden_size=4, rnn_layers=1, loss=BetaDistributionLoss()),
        "deepar_iqn": DeepAR.from_dataset(grouped, hidden_size=4, rnn_layers=1,
                                          loss=ImplicitQuantileNetworkDistributionLoss(hidden_size=4)),
        "rnn_poisson": RecurrentNetwork.from_dataset(datasets["counts"], hidden_size=4, rnn_layers=1,
                                                     loss=PoissonLoss()),
        "rnn_tweedie": RecurrentNetwork.from_dataset(datasets["counts"], hidden_size=4, rnn_layers=1,
                                                     loss=TweedieLoss()),
        "mlp_classifier": DecoderMLP.from_dataset(datasets["label"], hidden_size=4, n_hidden_layers=1,
                                                  loss=CrossEntropy()),
        "nbeats_kan": NBeatsKAN.from_dataset(datasets["nbeats"], num_blocks=[1, 1], num_block_layers=[1, 1],
                                             widths=[8, 8]),
        "timexer": TimeXer.from_dataset(datasets["encoder_normalizer"], hidden_size=4, n_heads=1, e_layers=1,
                                        d_ff=4, patch_length=4),
        "xlstm": xLSTMTime.from_dataset(datasets["nbeats"], input_size=1, output_size=1, hidden_size=4, num_layers=1),
    }
    trainer = {"max_epochs": 1, "limit_train_batches": 2, "accelerator": "cpu", "logger": False,
               "enable_progress_bar": False, "enable_model_summary": False, "deterministic": True}
    for name, model in models.items():
        dataset = model.dataset_parameters
        data = TimeSeriesDataSet.from_parameters(dataset, frame)
        checkpoints = pl.callbacks.ModelCheckpoint(dirpath=folder / "checkpoints", filename=f"ptf_{name}_{{epoch}}")
        fit = pl.Trainer(callbacks=[checkpoints], default_root_dir=folder / "root", **trainer)
        fit.fit(model, train_dataloaders=data.to_dataloader(train=True, batch_size=8, num_workers=0))
        fit.save_checkpoint(folder / f"ptf_{name}.ckpt")


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], {}, PTF_OWNER_HOOKS)
    warnings.simplefilter("ignore")
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    names, members, bound = recorded_catalogue(save_models, LIBRARIES, args.keep)
    if "builtins.getattr" in names:
        raise SystemExit("a file of the catalogue keeps a bound method (getattr): review it")
    unknown = sorted(n for n in bound if n.rpartition(".")[2] not in TORCHMETRICS_WRAPPED)
    if unknown:
        raise SystemExit(f"bound methods to review: {', '.join(unknown)}")
    allowed, state_only, functions = screened_catalogue(names, LIBRARIES)
    lists = screened_lists(allowed, state_only, functions, members)
    others = sorted(n for n in names if not n.startswith(LIBRARIES))
    print(f"recorded outside pytorch_forecasting (judged by the other packs): {', '.join(others)}", file=sys.stderr)
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("pytorch-forecasting", "lightning", "torch"))
    write_pack(
        "allow-pytorch-forecasting",
        f"Generated by tools/gen_pytorch_forecasting_allowlist.py ({versions}): what pytorch-forecasting's "
        "TimeSeriesDataSet.save (with its target normalizers and categorical encoders) and the Lightning checkpoints "
        "of its models (trainer.save_checkpoint and ModelCheckpoint: hyperparameters with losses, metrics and "
        "normalizers, and the dataset's parameters) import, recorded from real saves, never a package wildcard: "
        "classes restored from state only, each screened for the hooks loading runs; their method names and the "
        "classes that cannot be called.\n",
        # losses and metrics are torch modules a ModuleList keeps (logging_metrics, MultiLoss's metrics): WS-PKL-029
        {**lists, "table-members": table_members(allowed)},
    )


if __name__ == "__main__":
    main()
