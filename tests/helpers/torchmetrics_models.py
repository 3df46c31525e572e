"""torchmetrics metrics as their users keep them: the catalogue tests/test_benign_real.py scans and
tools/gen_allowlists.py records the torchmetrics names of (the allowlist is what these pickles import, not every
class torchmetrics defines: some of its metrics wrap networks they download or read from a path).

A metric is a torch module whose state is tensors, lists of tensors and the reduction functions `compute` calls;
it is pickled whole when a model that holds it is saved with torch.save (a LightningModule keeps its metrics as
attributes), or on its own with pickle to carry an accumulated state between processes."""

from __future__ import annotations

import importlib
import inspect
import pickle
import warnings
from pathlib import Path
from typing import Any

SEED = 7
MODULES = ("classification", "regression", "aggregation", "clustering", "nominal", "retrieval")
PARAMETERS = {"num_classes": 3, "num_labels": 3, "num_outputs": 2, "p": 2.0, "threshold": 0.5, "k": 2}


def _build(cls: type) -> Any:
    """`cls` with the parameters its constructor requires, or None when it needs more than a number."""
    wanted = {}
    for name, parameter in inspect.signature(cls).parameters.items():
        required = parameter.default is inspect.Parameter.empty and parameter.kind is parameter.POSITIONAL_OR_KEYWORD
        if name in PARAMETERS and (required or parameter.default is None):  # num_classes=None is a required one
            wanted[name] = PARAMETERS[name]
        elif required:
            return None
    try:
        return cls(**wanted)
    except Exception:  # an optional dependency missing, or a parameter out of its range
        return None


def _update(metric: Any, name: str) -> None:
    """Feed the metric one batch shaped for its task, if one fits; a metric that takes none is saved as made."""
    import torch

    generator = torch.Generator().manual_seed(SEED)
    if name.startswith("Multilabel"):
        preds, target = torch.rand(12, 3, generator=generator), torch.randint(0, 2, (12, 3), generator=generator)
    elif name.startswith("Multiclass"):
        preds = torch.rand(12, 3, generator=generator).softmax(-1)
        target = torch.randint(0, 3, (12,), generator=generator)
    elif name.startswith("Binary"):
        preds, target = torch.rand(12, generator=generator), torch.randint(0, 2, (12,), generator=generator)
    else:
        preds, target = torch.rand(12, generator=generator) + 0.1, torch.rand(12, generator=generator) + 0.1
    attempts: tuple[tuple[Any, ...], ...] = ((preds, target), (preds,))
    if name.startswith("Retrieval"):
        attempts = ((preds, target.round().long(), torch.arange(12) % 3),)
    for arguments in attempts:
        try:
            metric.update(*arguments)
            return
        except Exception:
            metric.reset()


def metrics() -> dict[str, Any]:
    """Every metric class of the common modules that a number configures, one batch in; the aggregations; the
    wrappers and a collection."""
    import torch
    import torchmetrics
    from torchmetrics import MetricCollection, wrappers
    from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

    torch.manual_seed(SEED)
    found: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module_name in MODULES:
            module = importlib.import_module(f"torchmetrics.{module_name}")
            for name, cls in sorted(vars(module).items()):
                if not (isinstance(cls, type) and issubclass(cls, torchmetrics.Metric)) or name.startswith("_"):
                    continue
                metric = _build(cls)
                if metric is not None:
                    _update(metric, name)
                    found[f"{module_name}-{name}"] = metric
        found["collection"] = MetricCollection({"acc": MulticlassAccuracy(3), "f1": MulticlassF1Score(3)},
                                               prefix="val_")  # fmt: skip
        found["classwise"] = wrappers.ClasswiseWrapper(MulticlassAccuracy(3, average=None), labels=["a", "b", "c"])
        found["tracker"] = wrappers.MetricTracker(MulticlassAccuracy(3))
        found["tracker"].increment()
        found["bootstrap"] = wrappers.BootStrapper(MulticlassAccuracy(3), num_bootstraps=3)
        found["minmax"] = wrappers.MinMaxMetric(MulticlassAccuracy(3))
        found["running"] = wrappers.Running(torchmetrics.aggregation.SumMetric(), window=3)
        found["multioutput"] = wrappers.MultioutputWrapper(torchmetrics.regression.MeanSquaredError(), 2)
    return found


def save_models(out: Path) -> None:
    """Each metric pickled (protocol 2 and the default), a model holding a collection saved with torch.save, and
    the metrics' state_dict (tensors only)."""
    import torch
    from torchmetrics import MetricCollection
    from torchmetrics.classification import MulticlassAccuracy, MulticlassConfusionMatrix

    found = metrics()
    for name, metric in found.items():
        (out / f"{name}.pkl").write_bytes(pickle.dumps(metric, protocol=2))
    (out / "all-metrics.pkl").write_bytes(pickle.dumps(found))

    class Classifier(torch.nn.Module):
        """A model with its metrics as attributes, the way a LightningModule keeps them."""

        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 3)
            self.train_metrics = MetricCollection({"acc": MulticlassAccuracy(3)}, prefix="train_")
            self.val_confusion = MulticlassConfusionMatrix(3)

    Classifier.__module__ = "classifier"  # as if defined in the user's own module, not this helper's
    model = Classifier()
    model.val_confusion.update(torch.randint(0, 3, (8,)), torch.randint(0, 3, (8,)))
    torch.save(model.train_metrics, out / "collection.pt")
    torch.save({"metrics": model.val_confusion, "epoch": 3}, out / "checkpoint.pt")
    torch.save(model.state_dict(), out / "state_dict.pt")
