"""Files written by the real libraries must not be flagged at HIGH or above (the default threshold).

Each kind is written into its own folder once per module, everything is scanned once, and each kind is
its own test so a false positive names the library and the call that produced it. A real file that trips
a rule is fixed by naming its exact callables in tools/gen_allowlists.py, never by weakening a rule.
"""

from __future__ import annotations

import collections
import gzip
import io
import pickle
import random
import shutil
import tarfile
import traceback
import warnings
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import wscan
from wscan.discover import display_path
from wscan.model import Finding, Severity

SEED = 7
Builder = Callable[[Path], None]
BUILDERS: dict[str, Builder] = {}

# Kinds a known scanner limitation still flags; strict, so a fix shows up as XPASS.
def kind(name: str) -> Callable[[Builder], Builder]:
    """Register a builder that writes one kind of file into the folder it is given."""

    def register(func: Builder) -> Builder:
        BUILDERS[name] = func
        return func

    return register


def _seed() -> None:
    import numpy as np
    import torch

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)


def _data() -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(40, 3))
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(int)
    return x, y


# --- torch ----------------------------------------------------------------------------------------


@kind("torch-zip-dtypes")
def _torch_dtypes(out: Path) -> None:
    import torch

    _seed()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized tensor creation is deprecated, still written by real code
        quantized = torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.quint8)
    state = {
        "fp32": torch.randn(3, 3),
        "fp16": torch.randn(3).half(),
        "bf16": torch.randn(3).bfloat16(),
        "int8": torch.randint(-100, 100, (6,), dtype=torch.int8),
        "bool": torch.tensor([True, False]),
        "quantized": quantized,
        "param": torch.nn.Parameter(torch.randn(2)),
        "view": torch.arange(10.0)[2:5],
    }
    torch.save(state, out / "state.pt")


def _trained_model() -> tuple[Any, Any, Any]:
    import torch

    _seed()
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5)
    model(torch.randn(4, 4)).sum().backward()
    optimizer.step()
    scheduler.step()
    return model, optimizer, scheduler


@kind("torch-zip-training-state")
def _torch_training(out: Path) -> None:
    import torch

    model, optimizer, scheduler = _trained_model()
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "epoch": 3,
        "best": {"loss": 0.1},
    }
    torch.save(checkpoint, out / "checkpoint.pt")


@kind("torch-zip-storages-opening-with-every-byte")
def _torch_storage_bytes(out: Path) -> None:
    """Tensor storages are raw bytes that no loader unpickles, and random floats open with anything: an EXT
    opcode (0x82-0x84, about one storage in 85), "N.", a PROTO. 256 storages, one per first byte, and a few
    that decode as short pickles."""
    import torch

    rng = random.Random(SEED)
    blobs = [bytes([first]) + rng.randbytes(7) for first in range(256)]
    blobs += [b"N." + rng.randbytes(6), b"\x80\x02N.\x00\x00\x00\x00", b"\x80\x05" + rng.randbytes(6)]
    tensors = {f"t{i}": torch.frombuffer(bytearray(blob), dtype=torch.float32) for i, blob in enumerate(blobs)}
    torch.save(tensors, out / "pytorch_model.bin")
    torch.save(tensors, out / "legacy.bin", _use_new_zipfile_serialization=False)


@kind("torch-whole-model")
def _torch_whole_model(out: Path) -> None:
    """torch.save(model): every layer by its class, restored from state. Layers of each family, weight and
    spectral norm hooks, a Transformer (which keeps F.relu as a value), a DataParallel wrapper, in the zip and
    legacy formats and every pickle protocol."""
    import torch
    from torch import nn
    from torch.nn.utils import spectral_norm, weight_norm

    _seed()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # weight_norm is deprecated in favour of parametrizations
        model = nn.Sequential(
            nn.Conv1d(2, 4, 3), weight_norm(nn.Conv1d(4, 4, 3)), spectral_norm(nn.Linear(4, 4)),
            nn.BatchNorm1d(4), nn.LayerNorm(4), nn.GroupNorm(2, 4), nn.Dropout(0.1), nn.GELU(), nn.Softmax(-1),
            nn.Embedding(10, 4), nn.LSTM(4, 4, 2, batch_first=True), nn.GRU(4, 4),
            nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8),
            nn.TransformerEncoderLayer(8, 2, 8, activation="gelu"), nn.MultiheadAttention(8, 2),
            nn.ModuleList([nn.Identity()]), nn.ModuleDict({"a": nn.ReLU()}),
            nn.ParameterList([nn.Parameter(torch.zeros(1))]), nn.Upsample(scale_factor=2),
            nn.ConvTranspose2d(2, 2, 2), nn.PixelShuffle(2), nn.CrossEntropyLoss(), nn.PReLU(),
        )  # fmt: skip
    torch.save(model, out / "model.pt")
    torch.save(model, out / "model-legacy.pt", _use_new_zipfile_serialization=False)
    torch.save({"model": model, "epoch": 3}, out / "checkpoint.pt")
    torch.save(nn.DataParallel(nn.Linear(2, 2)), out / "data-parallel.pt")
    for protocol in range(6):
        torch.save(nn.Linear(2, 2), out / f"linear-protocol{protocol}.pt", pickle_protocol=protocol)


@kind("torch-quantized")
def _torch_quantized(out: Path) -> None:
    """Quantized models (review 50): dynamic (linear, LSTM, GRU; int8 and float16) and eager static (a fused
    conv-bn-relu and a linear), each as a state_dict and saved whole. Their packed weights pickle as TorchScript
    objects (torch.ScriptObject and the packed-parameter class's name); the conv's state is a positional tuple."""
    import torch
    from torch import nn
    from torch.ao import quantization as tq

    _seed()
    engine = "fbgemm" if "fbgemm" in torch.backends.quantized.supported_engines else "qnnpack"
    torch.backends.quantized.engine = engine
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized tensors are deprecated
        recurrent = nn.Sequential(nn.Linear(8, 8), nn.LSTM(8, 8, 2), nn.GRU(8, 8))
        for dtype in (torch.qint8, torch.float16):
            dynamic = tq.quantize_dynamic(recurrent, {nn.Linear, nn.LSTM, nn.GRU}, dtype=dtype)
            torch.save(dynamic, out / f"dynamic-{dtype}.pt")
            torch.save(dynamic.state_dict(), out / f"dynamic-{dtype}-state.pt")
        model = nn.Sequential(tq.QuantStub(), nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                              nn.Linear(4 * 6 * 6, 5), tq.DeQuantStub()).eval()  # fmt: skip
        model.qconfig = tq.get_default_qconfig(engine)
        prepared = tq.prepare(tq.fuse_modules(model, [["1", "2", "3"]]))
        prepared(torch.randn(2, 3, 8, 8))
        static = tq.convert(prepared)
    torch.save(static, out / "static.pt")
    torch.save(static.state_dict(), out / "static-state.pt")


@kind("torch-data-and-returned-values")
def _torch_data_values(out: Path) -> None:
    """Datasets, packed sequences and the named tuples torch's functions return, saved as they are (review 50)."""
    import torch
    from torch.nn.utils.rnn import pack_padded_sequence
    from torch.utils.data import ConcatDataset, StackDataset, TensorDataset, random_split

    _seed()
    data = TensorDataset(torch.randn(10, 3), torch.arange(10))
    train, test = random_split(data, [8, 2])
    torch.save({"data": data, "train": train, "test": test}, out / "datasets.pt")
    torch.save(ConcatDataset([data, data]), out / "concat.pt")
    torch.save(StackDataset(data, data), out / "stack.pt")
    packed = pack_padded_sequence(torch.randn(3, 4, 2), torch.tensor([4, 3, 1]), batch_first=True)
    torch.save(packed, out / "packed.pt")
    values = torch.randn(4, 4)
    returned = {"topk": values.topk(2), "max": values.max(0), "sort": values.sort(), "svd": torch.linalg.svd(values),
                "eigh": torch.linalg.eigh(values @ values.T), "qr": torch.linalg.qr(values), "kth": values.kthvalue(2)}
    torch.save(returned, out / "returned.pt")


@kind("numpy-scalar-types-as-values")
def _numpy_scalar_types(out: Path) -> None:
    """NumPy's scalar types kept as values: every concrete and abstract one, and scikit-learn's uses of them
    (make_column_selector(dtype_include=np.number), OneHotEncoder(dtype=np.bool_); review 50)."""
    import joblib
    import numpy as np
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    own = {t for t in np.sctypeDict.values() if t.__module__ == "numpy"}  # ml_dtypes, once imported, adds its own
    kinds = sorted(own | {np.generic, np.number, np.integer, np.signedinteger,
                   np.unsignedinteger, np.inexact, np.floating, np.complexfloating, np.flexible, np.character},
                   key=lambda t: t.__name__)  # fmt: skip
    joblib.dump(kinds, out / "scalar-types.joblib")
    columns = ColumnTransformer([
        ("numbers", StandardScaler(), make_column_selector(dtype_include=np.number)),
        ("floats", "passthrough", make_column_selector(dtype_include=np.floating)),
        ("codes", OneHotEncoder(dtype=np.bool_), make_column_selector(dtype_exclude=np.number)),
    ])  # fmt: skip
    joblib.dump(columns, out / "column-selector.joblib")


@kind("sklearn-scipy-distance-metrics")
def _sklearn_scipy_metrics(out: Path) -> None:
    """Neighbour models fitted with SciPy's distance functions as their metric (review 50), kept as values."""
    import joblib
    from scipy.spatial import distance
    from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors

    x, y = _data()
    for metric in (distance.cosine, distance.braycurtis, distance.canberra, distance.chebyshev):
        model = KNeighborsClassifier(n_neighbors=3, metric=metric).fit(x, y)
        joblib.dump(model, out / f"knn-{metric.__name__}.joblib")
    joblib.dump(NearestNeighbors(metric=distance.jensenshannon).fit(abs(x)), out / "neighbours.joblib")


@kind("torch-distributions-and-generators")
def _torch_distributions(out: Path) -> None:
    """What policies and probabilistic models keep: distributions (mixtures, transformed, multivariate) and a seeded
    generator, in torch.save and in plain pickles."""
    from torch import distributions as d

    _seed()
    loc, scale = torch.zeros(3), torch.ones(3)
    objects = {
        "normal": d.Normal(loc, scale), "categorical": d.Categorical(logits=torch.randn(4)),
        "beta": d.Beta(torch.tensor(2.0), torch.tensor(3.0)), "dirichlet": d.Dirichlet(torch.ones(3)),
        "mvn": d.MultivariateNormal(loc, torch.eye(3)), "independent": d.Independent(d.Normal(loc, scale), 1),
        "mixture": d.MixtureSameFamily(d.Categorical(torch.ones(2)), d.Normal(torch.zeros(2), torch.ones(2))),
        "transformed": d.TransformedDistribution(d.Normal(loc, scale), [d.transforms.ExpTransform(),
                                                 d.transforms.AffineTransform(1.0, 2.0)]),
        "squashed": d.TransformedDistribution(d.Normal(loc, scale), [d.transforms.TanhTransform(cache_size=1)]),
        "generator": torch.Generator().manual_seed(SEED),
    }  # fmt: skip
    torch.save(objects, out / "policy.pt")
    torch.save(objects, out / "policy-legacy.pt", _use_new_zipfile_serialization=False)
    (out / "policy.pkl").write_bytes(pickle.dumps(objects, protocol=2))


@kind("easydict-config-in-checkpoint")
def _easydict_config(out: Path) -> None:
    """A research checkpoint: the weights and the EasyDict config the run was made with (nested, with lists)."""
    import torch
    from easydict import EasyDict

    cfg = EasyDict({"lr": 0.1, "model": {"depth": 3, "widths": [8, 16]}, "data": {"root": "/data", "aug": ["flip"]}})
    torch.save({"cfg": cfg, "state": torch.nn.Linear(2, 2).state_dict()}, out / "checkpoint.pth")
    (out / "cfg.pkl").write_bytes(pickle.dumps(cfg))


def _stepped_optimizers(model: Any, inputs: Any) -> Iterator[tuple[str, Any]]:
    """Every optimizer torch.optim exports (but SparseAdam), each made for `model` and stepped once."""
    import torch

    for name in sorted(n for n in dir(torch.optim) if n[0].isupper() and n != "Optimizer"):
        cls = getattr(torch.optim, name)
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)) or name == "SparseAdam":
            continue
        matrices = [param for param in model.parameters() if param.ndim == 2]  # Muon takes nothing else
        optimizer = cls(matrices if name == "Muon" else model.parameters(), lr=0.01)
        model.zero_grad()
        model(inputs).sum().backward()
        optimizer.step(lambda: model(inputs).sum())
        yield name, optimizer


@kind("torch-optimizers-and-schedulers")
def _torch_optimizers(out: Path) -> None:
    """The state_dict of every optimizer and LR scheduler torch ships, after a step (as Trainer and Lightning
    save them)."""
    import torch

    _seed()
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    inputs = torch.randn(8, 4)
    for name, optimizer in _stepped_optimizers(model, inputs):
        torch.save(optimizer.state_dict(), out / f"optimizer-{name}.pt")
    sched = torch.optim.lr_scheduler
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    schedulers = {
        "StepLR": lambda: sched.StepLR(optimizer, 10),
        "MultiStepLR": lambda: sched.MultiStepLR(optimizer, [3, 6]),
        "ExponentialLR": lambda: sched.ExponentialLR(optimizer, 0.9),
        "CosineAnnealingLR": lambda: sched.CosineAnnealingLR(optimizer, 10),
        "CosineAnnealingWarmRestarts": lambda: sched.CosineAnnealingWarmRestarts(optimizer, 5),
        "OneCycleLR": lambda: sched.OneCycleLR(optimizer, max_lr=0.1, total_steps=100),
        "CyclicLR": lambda: sched.CyclicLR(optimizer, 0.001, 0.1),
        "ReduceLROnPlateau": lambda: sched.ReduceLROnPlateau(optimizer),
        "PolynomialLR": lambda: sched.PolynomialLR(optimizer),
        "LinearLR": lambda: sched.LinearLR(optimizer),
        "LambdaLR": lambda: sched.LambdaLR(optimizer, lambda epoch: 0.9**epoch),
        "SequentialLR": lambda: sched.SequentialLR(
            optimizer, [sched.LinearLR(optimizer), sched.ExponentialLR(optimizer, 0.9)], milestones=[2]
        ),
    }
    for name, make in schedulers.items():
        torch.save(make().state_dict(), out / f"scheduler-{name}.pt")
    torch.save(torch.amp.GradScaler("cpu").state_dict(), out / "scaler.pt")


@kind("torch-whole-training-objects")
def _torch_training_objects(out: Path) -> None:
    """torch.save of the objects themselves, not their state_dicts: every optimizer torch exports after a step, the
    learning-rate schedulers that keep no function of a user's (SequentialLR and ChainedScheduler with theirs inside,
    CyclicLR and SWALR with torch's own schedule functions), a GradScaler, an averaged (SWA/EMA) model, and a
    checkpoint dict of them, in the zip and legacy formats."""
    import torch

    _seed()
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    inputs = torch.randn(8, 4)
    for name, optimizer in _stepped_optimizers(model, inputs):
        torch.save(optimizer, out / f"optimizer-{name}.pt")
    sched = torch.optim.lr_scheduler
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    schedulers = {
        "StepLR": lambda: sched.StepLR(optimizer, 10),
        "MultiStepLR": lambda: sched.MultiStepLR(optimizer, [3, 6]),
        "ExponentialLR": lambda: sched.ExponentialLR(optimizer, 0.9),
        "CosineAnnealingLR": lambda: sched.CosineAnnealingLR(optimizer, 10),
        "CosineAnnealingWarmRestarts": lambda: sched.CosineAnnealingWarmRestarts(optimizer, 5),
        "OneCycleLR": lambda: sched.OneCycleLR(optimizer, max_lr=0.1, total_steps=100),
        "ReduceLROnPlateau": lambda: sched.ReduceLROnPlateau(optimizer),
        "PolynomialLR": lambda: sched.PolynomialLR(optimizer),
        "LinearLR": lambda: sched.LinearLR(optimizer),
        "ConstantLR": lambda: sched.ConstantLR(optimizer),
        "SequentialLR": lambda: sched.SequentialLR(
            optimizer, [sched.LinearLR(optimizer), sched.ExponentialLR(optimizer, 0.9)], milestones=[2]
        ),
        "ChainedScheduler": lambda: sched.ChainedScheduler(
            [sched.ConstantLR(optimizer), sched.ExponentialLR(optimizer, 0.9)]
        ),
        "CyclicLR": lambda: sched.CyclicLR(optimizer, 0.001, 0.01),
        "CyclicLR-triangular2": lambda: sched.CyclicLR(optimizer, 0.001, 0.01, mode="triangular2"),
        "CyclicLR-exp-range": lambda: sched.CyclicLR(optimizer, 0.001, 0.01, mode="exp_range", gamma=0.99),
        "SWALR": lambda: torch.optim.swa_utils.SWALR(optimizer, 0.05),
        "SWALR-linear": lambda: torch.optim.swa_utils.SWALR(optimizer, 0.05, anneal_strategy="linear"),
    }
    for name, make in schedulers.items():
        scheduler = make()
        optimizer.step()
        scheduler.step(*([1.0] if name == "ReduceLROnPlateau" else []))
        torch.save(scheduler, out / f"scheduler-{name}.pt")
    scaler = torch.amp.GradScaler("cpu")
    averaged = torch.optim.swa_utils.AveragedModel(model)
    averaged.update_parameters(model)
    torch.save(scaler, out / "scaler.pt")
    torch.save(averaged, out / "swa-model.pt")
    checkpoint = {"optimizer": optimizer, "scheduler": sched.StepLR(optimizer, 10), "scaler": scaler,
                  "ema": averaged, "epoch": 3}  # fmt: skip
    torch.save(checkpoint, out / "checkpoint.pt")
    torch.save(checkpoint, out / "checkpoint-legacy.pt", _use_new_zipfile_serialization=False)


NESTED_AND_DISTRIBUTED = """
import os, sys, torch, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
dist.init_process_group("gloo", init_method="file://" + sys.argv[2], rank=0, world_size=1)
mesh = init_device_mesh("cpu", (1,))
weights = {"w": distribute_tensor(torch.randn(4, 4), mesh, [Shard(0)]),
           "b": distribute_tensor(torch.randn(4), mesh, [Replicate()])}
torch.save(weights, os.path.join(sys.argv[1], "dtensor.pt"))
dist.destroy_process_group()
"""


@kind("torch-nested-and-distributed-tensors")
def _torch_nested_and_distributed(out: Path) -> None:
    """Tensor kinds torch's own modules declare safe for torch.load(weights_only=True): nested jagged tensors (with
    the dynamic dimension a marked one keeps) and strided nested tensors, and DTensors (written in a child, which
    starts a one-process group)."""
    import subprocess
    import sys

    import torch

    _seed()
    jagged = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)], layout=torch.jagged)
    strided = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)])
    torch.save({"jagged": jagged, "strided": strided}, out / "nested.pt")
    store = out.parent / f"{out.name}-store"
    subprocess.run([sys.executable, "-c", NESTED_AND_DISTRIBUTED, str(out), str(store)], check=True, timeout=300,
                   capture_output=True)  # fmt: skip
    store.unlink(missing_ok=True)


@kind("torch-checkpoint-with-arguments-and-config")
def _torch_checkpoint_extras(out: Path) -> None:
    """What training scripts put beside the weights: parsed arguments (argparse), paths, RNG states, and small
    values of every common type. (A pickled OmegaConf config is HIGH: see tests/test_library_gadgets.py.)"""
    import argparse
    import datetime
    import pathlib

    import numpy as np
    import torch

    model, _, _ = _trained_model()
    torch.save(
        {
            "state_dict": model.state_dict(),
            "args": argparse.Namespace(lr=0.1, layers=[1, 2], name="run"),
            "hyper_parameters": {"lr": 0.1, "model": {"layers": [2, 3], "lr": "${lr}"}, "run": "${now:%Y}"},
            "output_dir": pathlib.Path("/tmp/run"),
            "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "cpu": torch.get_rng_state()},
            "saved_at": datetime.datetime(2026, 1, 1),
            "shape": torch.Size([2, 3]),
            "dtype": torch.float16,
            "device": torch.device("cpu"),
            "counts": OrderedDict(a=1),
            "torch_version": torch.__version__,  # a TorchVersion, a str subclass (fp hunt, 2026-12-03)
        },
        out / "last.ckpt",
    )


@kind("torch-legacy")
def _torch_legacy(out: Path) -> None:
    import torch

    model, optimizer, _ = _trained_model()
    torch.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict()},
        out / "legacy.pt",
        _use_new_zipfile_serialization=False,
    )


class _Scripted(torch.nn.Module):
    """Submodules named like methods and like attributes libraries call (`norm`, `activation`, `kernel`, `func`),
    as real networks name them (silero-vad's TorchScript model has `activation` and `stft`)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(2, 3))
        self.activation = torch.nn.ReLU()
        self.norm = torch.nn.LayerNorm(2)
        self.kernel = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh())
        self.func = torch.nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.func(self.kernel(self.norm(self.activation(x @ self.weight.t()))))


@kind("torchscript")
def _torchscript(out: Path) -> None:
    _seed()
    torch.jit.save(torch.jit.script(_Scripted()), out / "scripted.pt")
    torch.jit.save(torch.jit.trace(_Scripted(), torch.zeros(1, 3)), out / "traced.pt")


# --- numpy and joblib -----------------------------------------------------------------------------


@kind("numpy-npy")
def _npy(out: Path) -> None:
    import numpy as np

    np.save(out / "array.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
    record = np.zeros(3, dtype=[("id", "<i4"), ("score", "<f8"), ("tag", "S4")])
    np.save(out / "structured.npy", record)


@kind("numpy-savez")
def _savez(out: Path) -> None:
    import numpy as np

    np.savez(out / "arrays.npz", a=np.arange(5), b=np.ones((2, 2), dtype=np.float16))


@kind("numpy-savez-compressed")
def _savez_compressed(out: Path) -> None:
    import numpy as np

    np.savez_compressed(out / "arrays.npz", a=np.arange(5), b=np.ones((2, 2)))


@kind("numpy-pickled-subclasses")
def _numpy_subclasses(out: Path) -> None:
    """NumPy objects pickled as they are: record and char arrays, a record, polynomials of each basis, poly1d, a
    StringDType array, and an attribute bag (statsmodels' ARIMA keeps one)."""
    import types

    import numpy as np

    records = np.rec.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")])
    poly = np.polynomial
    objects = {
        "records": records, "record": records[0], "chars": np.char.array(["ab", "c"]), "poly1d": np.poly1d([1, 2]),
        "bases": [cls([1.0, 2.0]) for cls in (poly.Polynomial, poly.Chebyshev, poly.Legendre, poly.Laguerre,
                                                poly.Hermite, poly.HermiteE)],
        "strings": np.array(["a", "bc"], dtype=np.dtypes.StringDType()), "bag": types.SimpleNamespace(k=1),
    }  # fmt: skip
    # An array loaded memory-mapped pickles as a memmap restored by _reconstruct, no file opened; and Python's own
    # constants and ChainMap (fp hunt, 2026-12-03)
    np.save(out / "mapped.npy", np.arange(6.0))
    objects["memmap"] = np.load(out / "mapped.npy", mmap_mode="r")
    objects["python"] = [Ellipsis, NotImplemented, collections.ChainMap({"a": 1}, {"b": 2})]
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        (out / f"numpy-p{protocol}.pkl").write_bytes(pickle.dumps(objects, protocol=protocol))


@kind("python-stdlib-objects")
def _stdlib_objects(out: Path) -> None:
    """Standard-library values scripts keep beside a model, as pickle and joblib write them (fp hunt, 2026-12-05):
    arrays, addresses and networks, a compiled pattern, a function's signature, HTTP enums, and NumPy 2 string
    arrays (which joblib pickles after its wrapper)."""
    import array
    import http
    import inspect
    import ipaddress
    import re

    import joblib
    import numpy as np

    def train(data: Any, epochs: int = 3, *, lr: float = 0.1) -> None:
        """A function whose signature is kept."""

    objects = {
        "buffer": array.array("d", [1.0, 2.0]), "codes": array.array("b", b"ab"),
        "hosts": [ipaddress.ip_address("10.0.0.1"), ipaddress.ip_address("::1"), ipaddress.ip_network("10.0.0.0/8"),
                  ipaddress.ip_network("fe80::/64"), ipaddress.ip_interface("10.0.0.1/24"),
                  ipaddress.ip_interface("::1/128")],
        "pattern": re.compile(r"\w+", re.IGNORECASE), "signature": inspect.signature(train),
        "status": [http.HTTPStatus.OK, http.HTTPMethod.GET],
        "labels": np.array(["cat", "dog"], dtype=np.dtypes.StringDType()),
        "maybe": np.array(["cat", None], dtype=np.dtypes.StringDType(na_object=None)),
    }  # fmt: skip
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        (out / f"stdlib-p{protocol}.pkl").write_bytes(pickle.dumps(objects, protocol=protocol))
    joblib.dump(objects, out / "stdlib.joblib")


for _suffix, _compress in [
    ("plain", 0),
    ("zlib3", 3),
    ("gzip", ("gzip", 3)),
    ("bz2", ("bz2", 3)),
    ("xz", ("xz", 3)),
    ("lzma", ("lzma", 3)),
]:

    def _joblib(out: Path, compress: Any = _compress) -> None:
        import joblib
        import numpy as np

        data = {"w": np.linspace(0, 1, 16).reshape(4, 4), "ids": np.arange(6), "lr": 0.1, "tags": ["a"]}
        joblib.dump(data, out / "data.joblib", compress=compress)

    kind(f"joblib-numpy-{_suffix}")(_joblib)


@kind("joblib-memory-mapped-arrays")
def _joblib_memmap(out: Path) -> None:
    """joblib.dump of memory-mapped arrays: one made with np.memmap, and one joblib itself loaded with mmap_mode and
    saved again (its wrapper records numpy.memmap as the array's class), alone, in a dict, compressed."""
    import joblib
    import numpy as np

    mapped = np.memmap(out.parent / f"{out.name}.dat", dtype="float32", mode="w+", shape=(64,))
    mapped[:] = np.arange(64)
    joblib.dump(mapped, out / "memmap.joblib")
    joblib.dump({"features": mapped, "rows": 64}, out / "dict.joblib", compress=3)
    joblib.dump(np.arange(32.0), out.parent / f"{out.name}-array.joblib")
    reloaded = joblib.load(out.parent / f"{out.name}-array.joblib", mmap_mode="r")
    joblib.dump([reloaded], out / "reloaded.joblib")


@kind("joblib-object-arrays")
def _joblib_object_arrays(out: Path) -> None:
    """Object arrays, whose nested pickles a plain unpickler runs with the outer stream's memo: of fitted pipelines and
    of a memmap, in every protocol joblib takes and compressed (review 16 saw a check of that reading flag them)."""
    import joblib
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    x = np.random.default_rng(0).normal(size=(20, 3))
    fitted = Pipeline([("s", StandardScaler()), ("m", LogisticRegression())]).fit(x, np.arange(20) % 2)
    mapped = np.memmap(out.parent / f"{out.name}-objects.dat", dtype="float32", mode="w+", shape=(8,))
    for name, value in {"estimators": np.array([fitted, fitted], dtype=object),
                        "memmaps": np.array([mapped, None], dtype=object)}.items():
        for protocol in (2, 3, 4, 5):
            joblib.dump(value, out / f"{name}-p{protocol}.joblib", protocol=protocol)
        joblib.dump(value, out / f"{name}-xz.joblib", compress=("xz", 3))


# --- scikit-learn ---------------------------------------------------------------------------------


def _estimators() -> dict[str, Callable[[], Any]]:
    from sklearn.cluster import KMeans
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import PCA
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    def column_pipeline() -> Any:
        columns = ColumnTransformer(
            [("num", StandardScaler(), [0, 1]), ("cat", OneHotEncoder(handle_unknown="ignore"), [2])]
        )
        return Pipeline([("columns", columns), ("clf", LogisticRegression())])

    return {
        "linear-logistic": lambda: LogisticRegression(),
        "linear-ridge": lambda: Ridge(alpha=0.5),
        "tree": lambda: DecisionTreeClassifier(max_depth=3, random_state=SEED),
        "forest": lambda: RandomForestClassifier(n_estimators=3, max_depth=3, random_state=SEED),
        "gradient-boosting": lambda: GradientBoostingClassifier(n_estimators=3, random_state=SEED),
        "hist-gradient-boosting": lambda: HistGradientBoostingClassifier(max_iter=3, random_state=SEED),
        "svc": lambda: SVC(),
        "knn": lambda: KNeighborsClassifier(n_neighbors=3),
        "pipeline-column-transformer": column_pipeline,
        "pca": lambda: PCA(n_components=2),
        "kmeans": lambda: KMeans(n_clusters=2, n_init=1, random_state=SEED),
        "mlp": lambda: MLPClassifier(hidden_layer_sizes=(4,), max_iter=20, random_state=SEED),
    }


SKLEARN = [
    "linear-logistic",
    "linear-ridge",
    "tree",
    "forest",
    "gradient-boosting",
    "hist-gradient-boosting",
    "svc",
    "knn",
    "pipeline-column-transformer",
    "pca",
    "kmeans",
    "mlp",
]

for _name in SKLEARN:
    for _how in ("pickle", "joblib"):

        def _sklearn(out: Path, name: str = _name, how: str = _how) -> None:
            import joblib
            import numpy as np

            x, y = _data()
            if name == "pipeline-column-transformer":
                x = np.column_stack([x[:, :2], (x[:, 2] > 0).astype(int)])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence warnings on tiny data
                model = _estimators()[name]()
                model = model.fit(x) if name in ("pca", "kmeans") else model.fit(x, y)
            if how == "pickle":
                (out / "model.pkl").write_bytes(pickle.dumps(model, protocol=pickle.DEFAULT_PROTOCOL))
            else:
                joblib.dump(model, out / "model.joblib")

        kind(f"sklearn-{_name}-{_how}")(_sklearn)


def _sklearn_in_use() -> dict[str, Callable[[], tuple[Any, Any, Any]]]:
    """Estimators as tutorials and real projects configure them: scorers, score functions, NumPy functions as
    parameters, searches, categorical features. Each returns (estimator, X, y or None)."""
    import math

    import numpy as np
    import pandas as pd
    from scipy import special, stats
    from sklearn import (
        cluster,
        compose,
        ensemble,
        feature_selection,
        linear_model,
        metrics,
        model_selection,
        pipeline,
        preprocessing,
        svm,
    )

    x, y = _data()
    x = np.abs(x) + 0.1  # chi2 and log need positive features
    yr = x[:, 0] * 2 + x[:, 2]
    ridge, logistic = linear_model.Ridge, linear_model.LogisticRegression
    return {
        "grid-search-accuracy": lambda: (
            model_selection.GridSearchCV(logistic(), {"C": [0.1, 1]}, scoring="accuracy", cv=3), x, y),
        "grid-search-several-scorers": lambda: (
            model_selection.GridSearchCV(svm.SVC(), {"C": [1]}, scoring=["f1_macro", "roc_auc", "recall"],
                                         refit="f1_macro", cv=3), x, y),
        "grid-search-make-scorer": lambda: (
            model_selection.GridSearchCV(logistic(), {"C": [1]}, cv=3,
                                         scoring=metrics.make_scorer(metrics.fbeta_score, beta=2)), x, y),
        "grid-search-regression": lambda: (
            model_selection.GridSearchCV(ridge(), {"alpha": [1]}, scoring="neg_mean_squared_error", cv=3), x, yr),
        "function-transformer-log1p": lambda: (
            preprocessing.FunctionTransformer(np.log1p, inverse_func=np.expm1), x, None),
        # Functions people hand FunctionTransformer beyond the ufuncs (fp hunt, 2026-12-03)
        "function-transformer-array-functions": lambda: (pipeline.make_union(
            preprocessing.FunctionTransformer(np.nan_to_num), preprocessing.FunctionTransformer(np.column_stack),
            preprocessing.FunctionTransformer(np.hstack), preprocessing.FunctionTransformer(np.linalg.norm),
            preprocessing.FunctionTransformer(special.expit, inverse_func=special.logit),
            preprocessing.FunctionTransformer(stats.zscore)), x, None),
        "transformed-target": lambda: (
            compose.TransformedTargetRegressor(regressor=ridge(), func=np.log, inverse_func=np.exp), x, yr),
        "select-k-best-chi2": lambda: (feature_selection.SelectKBest(feature_selection.chi2, k=2), x, y),
        "select-k-best-mutual-info": lambda: (
            feature_selection.SelectKBest(feature_selection.mutual_info_regression, k=2), x, yr),
        "feature-agglomeration-median": lambda: (
            cluster.FeatureAgglomeration(n_clusters=2, pooling_func=np.median), x, None),
        "bisecting-kmeans": lambda: (cluster.BisectingKMeans(n_clusters=2, random_state=SEED), x, None),
        "spline-transformer": lambda: (preprocessing.SplineTransformer(), x, None),
        "hist-gradient-boosting-categorical": lambda: (
            ensemble.HistGradientBoostingClassifier(max_iter=3, categorical_features=[0], random_state=SEED),
            np.column_stack([np.round(x[:, 0]), x[:, 1:]]), y),
        "tuned-threshold": lambda: (model_selection.TunedThresholdClassifierCV(logistic(), scoring="f1", cv=3), x, y),
        # library functions kept as FunctionTransformer's func (review 55)
        "function-transformer-library-functions": lambda: (pipeline.make_union(*[
            preprocessing.FunctionTransformer(func) for func in (
                pd.to_numeric, pd.to_datetime, pd.get_dummies, pd.isna, pd.cut, preprocessing.normalize,
                preprocessing.scale, preprocessing.minmax_scale, preprocessing.binarize, math.log, math.sqrt, abs, len,
                np.char.lower)]), x, None),
        # early stopping with a scorer leaves the estimator's own bound _raw_predict in its dict (review 55: critical)
        "hist-gradient-boosting-early-stopping-scorer": lambda: (
            ensemble.HistGradientBoostingClassifier(max_iter=5, early_stopping=True, scoring="roc_auc",
                                                    random_state=SEED), x, y),
        "hist-gradient-boosting-regressor-early-stopping-scorer": lambda: (
            ensemble.HistGradientBoostingRegressor(max_iter=5, early_stopping=True, scoring="r2", random_state=SEED),
            x, yr),
    }  # fmt: skip


for _name in (
    "grid-search-accuracy", "grid-search-several-scorers", "grid-search-make-scorer", "grid-search-regression",
    "function-transformer-log1p", "function-transformer-array-functions", "transformed-target", "select-k-best-chi2",
    "select-k-best-mutual-info",
    "feature-agglomeration-median", "bisecting-kmeans", "spline-transformer", "hist-gradient-boosting-categorical",
    "tuned-threshold", "hist-gradient-boosting-early-stopping-scorer", "function-transformer-library-functions",
    "hist-gradient-boosting-regressor-early-stopping-scorer",
):  # fmt: skip
    for _how in ("pickle", "joblib"):

        def _sklearn_use(out: Path, name: str = _name, how: str = _how) -> None:
            import joblib

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model, x, y = _sklearn_in_use()[name]()
                model.fit(x) if y is None else model.fit(x, y)
            if how == "pickle":
                (out / "model.pkl").write_bytes(pickle.dumps(model, protocol=pickle.DEFAULT_PROTOCOL))
            else:
                joblib.dump(model, out / "model.joblib", compress=3)

        kind(f"sklearn-in-use-{_name}-{_how}")(_sklearn_use)


@kind("sklearn-every-estimator")
def _sklearn_every_estimator(out: Path) -> None:
    """Every estimator scikit-learn lists, with its default parameters (a base estimator for the meta ones),
    fitted on tiny data and pickled: one file each."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.utils import all_estimators

    x, y = _data()
    x = np.abs(x) + 0.1
    written = 0
    for name, cls in all_estimators():
        base = Ridge() if "Regress" in name else LogisticRegression()
        for args in ((), (base,), ([("a", base)],)):  # defaults, else a base estimator, else a list of them
            try:
                model = cls(*args)
                break
            except Exception:
                continue
        else:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for args in ((x, y), (x, x[:, 0] * 2), (x,)):
                try:
                    model.fit(*args)
                    break
                except Exception:
                    continue
            else:
                continue
        (out / f"{name}.pkl").write_bytes(pickle.dumps(model, protocol=pickle.DEFAULT_PROTOCOL))
        written += 1
    assert written > 150, f"only {written} estimators could be fitted: the sweep no longer covers scikit-learn"


@kind("sklearn-ecosystem-every-estimator")
def _sklearn_ecosystem(out: Path) -> None:
    """Every sampler and ensemble imbalanced-learn exports (fitted, alone and in its Pipeline) and every
    category_encoders encoder (fitted on a frame with text categories), pickled and joblib-dumped."""
    import category_encoders
    import imblearn.combine
    import imblearn.ensemble
    import imblearn.over_sampling
    import imblearn.under_sampling
    import joblib
    import numpy as np
    import pandas as pd
    from imblearn.pipeline import make_pipeline
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(120, 3))
    y = (rng.random(120) < 0.25).astype(int)
    written = 0

    def dump(name: str, obj: object) -> None:
        nonlocal written
        (out / f"{name}.pkl").write_bytes(pickle.dumps(obj, protocol=2))
        joblib.dump(obj, out / f"{name}.joblib")
        written += 1

    modules = (imblearn.over_sampling, imblearn.under_sampling, imblearn.combine, imblearn.ensemble)
    special: dict[str, dict[str, Any]] = {"SMOTENC": {"categorical_features": [0]},
                                          "KMeansSMOTE": {"cluster_balance_threshold": 0.0}}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module in modules:
            for name in module.__all__:
                model = getattr(module, name)(**special.get(name, {}))
                if hasattr(model, "fit_resample"):
                    model.fit_resample(np.round(x) if name in ("SMOTEN", "SMOTENC") else x, y)
                    dump(f"{name}-pipeline", make_pipeline(model, LogisticRegression()).fit(x, y))
                else:
                    model.fit(x, y)
                dump(name, model)
        frame = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], 120), "size": rng.normal(size=120),
                              "shape": rng.choice(["round", "square"], 120)})  # fmt: skip
        for name in category_encoders.__all__:
            if name == "GLMMEncoder":  # needs statsmodels, whose model data re-evaluates formulas (WS-PKL-013)
                continue
            dump(name, getattr(category_encoders, name)().fit(frame, y))
    assert written > 40, f"only {written} objects written: the sweep no longer covers these libraries"


@kind("gensim-models")
def _gensim_models(out: Path) -> None:
    """gensim's own save of its word-vector, document, topic, phrase and similarity models (the catalogue
    tools/gen_allowlists.py records), and the word2vec formats."""
    from tests.helpers.gensim_models import save_models

    save_models(out)


@kind("torchmetrics-metrics")
def _torchmetrics_metrics(out: Path) -> None:
    """Every classification, regression, aggregation, clustering, nominal and retrieval metric a number configures,
    after one batch, pickled; wrappers, a collection, and torch.save of metrics in a checkpoint (the catalogue
    tools/gen_allowlists.py records)."""
    from tests.helpers.torchmetrics_models import save_models

    save_models(out)
    assert len(list(out.glob("*.pkl"))) > 100, "the catalogue no longer covers torchmetrics' metric modules"


@kind("scipy-models")
def _scipy_models(out: Path) -> None:
    """Fitted SciPy interpolators and splines, a kernel density estimate, optimizer results, linear systems and an
    FFT plan, pickled and in one joblib dump (the catalogue tools/gen_allowlists.py records)."""
    from tests.helpers.scipy_models import save_models

    save_models(out)
    assert len(list(out.glob("*.pkl"))) > 25, "the catalogue no longer covers SciPy's interpolators"


@kind("optuna-studies")
def _optuna_studies(out: Path) -> None:
    """joblib.dump(study), optuna's documented way to keep an in-memory study, after a few trials with each
    sampler (but CMA-ES, see test_library_gadgets) and pruner; the samplers, trials and best parameters alone."""
    import joblib
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def objective(trial: Any) -> float:
        x = trial.suggest_float("x", -10, 10)
        trial.suggest_categorical("c", ["a", "b"])
        n = trial.suggest_int("n", 1, 5, log=True)
        trial.set_user_attr("note", "tuned")
        trial.report(x * x, step=1)
        return float((x - 2) ** 2 + n)

    samplers = {
        "tpe": optuna.samplers.TPESampler(seed=SEED), "random": optuna.samplers.RandomSampler(seed=SEED),
        "qmc": optuna.samplers.QMCSampler(seed=SEED),
        "grid": optuna.samplers.GridSampler({"x": [0.0, 1.0], "c": ["a"], "n": [1, 2]}),
        "nsga2": optuna.samplers.NSGAIISampler(seed=SEED), "gp": optuna.samplers.GPSampler(seed=SEED),
        "brute": optuna.samplers.BruteForceSampler(seed=SEED),
    }  # fmt: skip
    pruners = [optuna.pruners.MedianPruner(), optuna.pruners.HyperbandPruner(), optuna.pruners.PercentilePruner(25.0),
               optuna.pruners.SuccessiveHalvingPruner(), optuna.pruners.ThresholdPruner(upper=100.0)]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index, (name, sampler) in enumerate(samplers.items()):
            if name == "brute":
                study = optuna.create_study(sampler=sampler)
                study.optimize(lambda t: t.suggest_int("k", 0, 3), n_trials=4)
            else:
                study = optuna.create_study(sampler=sampler, pruner=pruners[index % len(pruners)])
                study.optimize(objective, n_trials=4 if name == "grid" else 6)
            joblib.dump(study, out / f"study-{name}.pkl")
            (out / f"sampler-{name}.pkl").write_bytes(pickle.dumps(sampler, protocol=2))
        (out / "trials.pkl").write_bytes(pickle.dumps(study.trials))
        joblib.dump(study.best_params, out / "best.joblib")
        (out / "pruners.pkl").write_bytes(pickle.dumps(pruners))


# --- plain pickles --------------------------------------------------------------------------------

PLAIN = {
    "dict": {"a": 1, "b": [1.5, None, True]},
    "list": [1, "two", 3.0, b"four"],
    "tuple": (1, (2, (3,))),
    "set": {1, 2, 3},
    "frozenset": frozenset({4, 5}),
    "str": "unicode é ✓",
    "bytes": b"\x00\xff" * 4,
    "bytearray": bytearray(b"abc"),
    "float": 3.14159,
    "int": 2**100,
    "ordereddict": OrderedDict([("x", 1), ("y", [2])]),
}

for _proto in range(6):

    def _plain(out: Path, proto: int = _proto) -> None:
        for name, value in PLAIN.items():
            (out / f"{name}.pkl").write_bytes(pickle.dumps(value, protocol=proto))
        (out / "everything.pkl").write_bytes(pickle.dumps(PLAIN, protocol=proto))

    kind(f"pickle-protocol-{_proto}")(_plain)


# --- transformers ---------------------------------------------------------------------------------


def _tiny_bert() -> Any:
    from transformers import BertConfig, BertModel

    _seed()
    config = BertConfig(
        vocab_size=50,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
    )
    return BertModel(config)


@kind("transformers-save-pretrained-bin")
def _hf_bin(out: Path) -> None:
    _tiny_bert().save_pretrained(out, safe_serialization=False)


@kind("transformers-sharded-bin")
def _hf_sharded(out: Path) -> None:
    _tiny_bert().save_pretrained(out, safe_serialization=False, max_shard_size="1KB")
    assert (out / "pytorch_model.bin.index.json").is_file()


@kind("transformers-config-in-checkpoint")
def _config_in_checkpoint(out: Path) -> None:
    """A training script's torch.save of the weights with the model's config object beside them (whole-object
    save, weights_only off): configs of several families, a composite one holding its parts' configs, and
    a generation config."""
    from transformers import (
        CLIPConfig,
        FineGrainedFP8Config,
        GenerationConfig,
        GPT2Config,
        GPTQConfig,
        LlamaConfig,
        Qwen2_5_VLConfig,
        T5Config,
        T5GemmaConfig,
        WhisperConfig,
    )

    model = _tiny_bert()
    configs = [model.config, GPT2Config(n_embd=64), LlamaConfig(), T5Config(), CLIPConfig(), WhisperConfig()]
    configs += [Qwen2_5_VLConfig(), T5GemmaConfig()]  # multimodal configs that forward names to their parts
    torch.save({"config": model.config, "state_dict": model.state_dict()}, out / "checkpoint.pt")
    torch.save({"configs": configs, "generation": GenerationConfig(max_new_tokens=8)}, out / "configs.pt")
    # A quantized model's config: its quantizer sets quantization_config to the config object it was given.
    for name, quantization in (("gptq", GPTQConfig(bits=4)), ("fp8", FineGrainedFP8Config())):
        config = LlamaConfig(hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=2)
        config.quantization_config = quantization
        torch.save({"config": config}, out / f"quantized-{name}.pt")


def _trainer_checkpoint(out: Path) -> None:
    """What transformers.Trainer._save_checkpoint writes besides the model, made the same way."""
    import numpy as np
    import torch
    from transformers import TrainingArguments, get_linear_schedule_with_warmup

    model = _tiny_bert()
    args = TrainingArguments(output_dir=str(out / "run"), report_to=[], seed=SEED)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=10)
    model(input_ids=torch.tensor([[1, 2, 3]])).last_hidden_state.sum().backward()
    optimizer.step()
    scheduler.step()
    torch.save(args, out / "training_args.bin")
    torch.save(optimizer.state_dict(), out / "optimizer.pt")
    torch.save(scheduler.state_dict(), out / "scheduler.pt")
    rng = {"python": random.getstate(), "numpy": np.random.get_state(), "cpu": torch.random.get_rng_state()}
    torch.save(rng, out / "rng_state.pth")


@kind("torch-samplers")
def _torch_samplers(out: Path) -> None:
    """The samplers a DataLoader iterates, saved whole with torch.save (helper 266 found each high)."""
    from torch.utils import data

    dataset = data.TensorDataset(torch.arange(10.0))
    generator = torch.Generator().manual_seed(SEED)
    torch.save(data.RandomSampler(dataset, generator=generator), out / "random.pt")
    torch.save(data.WeightedRandomSampler([0.1] * 10, 5), out / "weighted.pt")
    torch.save(data.SubsetRandomSampler([1, 2, 3]), out / "subset.pt")
    torch.save(data.BatchSampler(data.SequentialSampler(dataset), 2, drop_last=False), out / "batch.pt")
    torch.save(data.distributed.DistributedSampler(dataset, num_replicas=2, rank=0), out / "distributed.pt")


@kind("sentence-transformers-training-args")
def _sentence_transformers_training_args(out: Path) -> None:
    """What sentence-transformers' trainers (and setfit's) pickle into a checkpoint's training_args.bin: their own
    TrainingArguments subclasses, holding its batch sampler enums (helper 266 found every one high)."""
    import torch
    from sentence_transformers.cross_encoder.training_args import CrossEncoderTrainingArguments
    from sentence_transformers.sparse_encoder.training_args import SparseEncoderTrainingArguments
    from sentence_transformers.training_args import BatchSamplers, SentenceTransformerTrainingArguments

    for cls in (SentenceTransformerTrainingArguments, CrossEncoderTrainingArguments, SparseEncoderTrainingArguments):
        args = cls(output_dir=str(out / "run"), report_to=[], seed=SEED, batch_sampler=BatchSamplers.NO_DUPLICATES)
        (out / cls.__name__).mkdir()
        torch.save(args, out / cls.__name__ / "training_args.bin")


TRAINER_FILES = ["training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth"]
for _file in TRAINER_FILES:

    def _trainer(out: Path, keep: str = _file) -> None:
        _trainer_checkpoint(out)
        for other in out.iterdir():
            if other.name != keep:
                shutil.rmtree(other) if other.is_dir() else other.unlink()

    kind(f"trainer-{_file}")(_trainer)


# --- benign files inside containers ---------------------------------------------------------------


@kind("zip-of-model-folder")
def _zip_folder(out: Path) -> None:
    import torch

    _seed()
    inner = io.BytesIO()
    torch.save({"w": torch.randn(2)}, inner)
    with zipfile.ZipFile(out / "model.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model/config.json", '{"hidden": 2}')
        archive.writestr("model/weights.pt", inner.getvalue())
        archive.writestr("model/README.md", "# tiny\n")


@kind("tar-gz-with-npz-and-pickle")
def _tar_gz(out: Path) -> None:
    import numpy as np

    npz = io.BytesIO()
    np.savez(npz, a=np.arange(3))
    with tarfile.open(out / "bundle.tar.gz", "w:gz") as archive:
        for name, data in [
            ("bundle/data.pkl", pickle.dumps({"a": [1, 2]}, protocol=4)),
            ("bundle/arrays.npz", npz.getvalue()),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


@kind("gzip-pickle")
def _gzip_pickle(out: Path) -> None:
    (out / "data.pkl.gz").write_bytes(gzip.compress(pickle.dumps([1.0, 2.0], protocol=5)))


@kind("sevenzip-torch-file")
def _sevenzip(out: Path) -> None:
    import py7zr
    import torch

    _seed()
    inner = io.BytesIO()
    torch.save({"w": torch.randn(3)}, inner)
    with py7zr.SevenZipFile(out / "model.7z", "w") as archive:
        archive.writestr(inner.getvalue(), "model/weights.pt")


def _tabular(objects: Callable[[], dict[str, Any]], name: str, how: str) -> Builder:
    def build(out: Path) -> None:
        import joblib

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = objects()[name]
        if how == "joblib":
            joblib.dump(obj, out / "data.joblib")
        else:
            for protocol in (2, pickle.HIGHEST_PROTOCOL):
                (out / f"data-p{protocol}.pkl").write_bytes(pickle.dumps(obj, protocol=protocol))
        if hasattr(obj, "to_pickle"):  # pandas' own writer, compressed as its users write it
            obj.to_pickle(out / "frame.pkl.gz")
        if how == "pickle" and type(obj).__module__.startswith("catboost"):  # CatBoost's own format (review 74)
            obj.save_model(str(out / "model.cbm"))

    return build


def _tabular_kinds() -> None:
    """pandas frames, indexes and scalars of every dtype; XGBoost and LightGBM models alone and in pipelines
    (tests/helpers/tabular.py, the catalogue tools/gen_tabular_allowlist.py records)."""
    from tests.helpers.tabular import arrow_objects, boosting_objects, pandas_objects

    names = {
        "pandas": (pandas_objects, ["frame", "frame-transposed", "series-datetime-index", "series-multi-index",
                                    "index-interval", "index-period", "scalars", "grouped-stats", "attrs", "offsets",
                                    "frequencies", "timedelta-frequencies", "masked-dtypes", "dateutil-zones",
                                    "classes-as-values"]),
        "arrow": (arrow_objects, ["default-strings", "arrow-dtypes", "string-storages", "arrow-table", "arrow-batch",
                                  "arrow-chunked"]),
        "boosting": (boosting_objects, ["xgb-classifier", "xgb-ranker", "xgb-booster", "xgb-categorical-frame",
                                        "xgb-in-pipeline", "xgb-with-callbacks", "lgb-classifier", "lgb-ranker",
                                        "lgb-booster", "lgb-categorical-frame", "lgb-in-pipeline", "cb-classifier",
                                        "cb-ranker", "cb-categorical-frame", "cb-with-eval-set", "cb-in-pipeline",
                                        "cb-booster"]),
    }  # fmt: skip
    for family, (objects, chosen) in names.items():
        for name in chosen:
            for how in ("pickle", "joblib"):
                kind(f"{family}-{name}-{how}")(_tabular(objects, name, how))


_tabular_kinds()


@kind("pandas-2-pickles")
def _old_pandas(out: Path) -> None:
    """Frames, indexes, scalars and Arrow-backed columns pickled by pandas 2.2.3 with NumPy 1 and 2: pandas 2 names
    `pandas.core.frame.DataFrame` where pandas 3 names `pandas.DataFrame` (tools/record_old_pandas.py wrote them)."""
    shutil.copytree(Path(__file__).parent / "data" / "old_pandas", out / "old_pandas")


@kind("xgboost-1-models")
def _old_xgboost(out: Path) -> None:
    """Classifiers, a regressor and a booster of no rounds pickled and saved by XGBoost 1.5.2 and 1.7.6: 1.5's
    classifier keeps its own label encoder (`xgboost.compat.XGBoostLabelEncoder`), and a booster of no rounds has
    `best_iteration` -1 (tools/record_old_xgboost.py wrote them)."""
    shutil.copytree(Path(__file__).parent / "data" / "old_xgboost", out / "old_xgboost")


@kind("gensim-3-models")
def _old_gensim(out: Path) -> None:
    """Word vectors, phrasers and a SMART TfidfModel saved by gensim 0.x to 3.8 (from gensim's own test data): the
    names gensim 4 keeps so they still load (Word2VecKeyedVectors, Vocab, Phraser, ...)."""
    shutil.copytree(Path(__file__).parent / "data" / "old_gensim", out / "old_gensim")


@kind("sklearn-text-str-methods")
def _sklearn_text(out: Path) -> None:
    """Text vectorizers keep str methods as values; pickle writes them as getattr(str, "lower")."""
    import joblib
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    docs = ["a model file", "another model file", "weights and more weights"]
    for name, model in {"count": CountVectorizer(preprocessor=str.lower), "tfidf": TfidfVectorizer(tokenizer=str.split,
                        token_pattern=None)}.items():  # fmt: skip
        model.fit(docs)
        joblib.dump(model, out / f"{name}.joblib")
        (out / f"{name}.pkl").write_bytes(pickle.dumps(model, protocol=2))
KINDS = sorted(BUILDERS)


# --- the tests ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[Finding], str]]:
    """Build every kind into its own folder, scan the lot once; findings (or a build error) per kind."""
    root = tmp_path_factory.mktemp("benign-real")
    errors: dict[str, str] = {}
    for name in KINDS:
        folder = root / name
        folder.mkdir()
        try:
            BUILDERS[name](folder)
        except Exception:  # reported by that kind's test
            errors[name] = traceback.format_exc()
    report = wscan.scan([root])
    result: dict[str, tuple[list[Finding], str]] = {}
    for name in KINDS:
        prefix = display_path(root / name) + "/"
        found = [f for f in report.findings if f.location.path.startswith(prefix)]
        result[name] = (found, errors.get(name, ""))
    return result


CATBOOST = Path(__file__).parent / "data" / "catboost"


@pytest.mark.parametrize("path", sorted(CATBOOST.glob("*.cbm")), ids=lambda path: path.name)
def test_catboost_models_whose_bytes_read_as_an_unsupported_protocol_are_no_pickle(path: Path) -> None:
    """Review 74's sweep: a CatBoost model opens with "CBM1", which pickle reads as 66 bytes of data, and these
    three then hold 0x80 0x11, PROTO 17, which both unpicklers refuse before doing anything: the scan failed them
    as broken pickles (WS-PKL-008, WS-PKL-010). They are no pickle: CatBoost models, read as CatBoost's loader reads
    them (catboost_model; until 2026-12-06 an unknown format, low), with nothing to report
    (tests/data/catboost/README.md)."""
    report = wscan.scan([path])
    assert [(f.status, f.formats) for f in report.files] == [("scanned", ("booster-model",))]
    assert [f.rule_id for f in report.findings] == []


@pytest.mark.parametrize("name", KINDS)
def test_real_file_has_no_high_finding(name: str, scanned: dict[str, tuple[list[Finding], str]]) -> None:
    found, error = scanned[name]
    assert not error, f"could not build {name}:\n{error}"
    high = [f for f in found if f.severity >= Severity.HIGH]
    assert not high, "\n".join(f"{f.rule_id} {f.location.describe()}: {f.message}" for f in high)


ST_TRAINING_ARGS = sorted((Path(__file__).parent / "data" / "st_training_args").glob("*.bin"))


@pytest.mark.parametrize("path", ST_TRAINING_ARGS, ids=lambda path: path.name)
def test_sentence_transformers_training_args_of_later_releases_pass(path: Path) -> None:
    """sentence-transformers 5.7 and 6.3 (and setfit on them) define their TrainingArguments and batch samplers under
    other modules than the 5.1 the kind above makes (tests/data/st_training_args/README.md)."""
    found = wscan.scan([path]).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]
