"""Regenerate rules/allow-fastai.yaml: the names fastai's tabular, collaborative-filtering and generic learners save.

fastai is not a test dependency (tests/data/fastai keeps real files it wrote), so run this where it is installed beside
the test extra (`pip install fastai`, never another torch), then `python tools/gen_fastai_allowlist.py [--keep DIR]`.
Empirical, as the other recorded lists: each learner of the catalogue below trains one epoch on a little data and is
saved the ways fastai documents (`learn.export()`, a torch.save with cloudpickle of the whole learner, which
`load_learner` unpickles; `learn.save()`, the model's weights and the optimizer's state), and the names those pickles
import are recorded by a find_class that refuses nothing; classes are screened as scikit-learn's ecosystem is, each hook
the screen raised read in fastai's source and reviewed below. Text learners are left out: they keep a spaCy pipeline,
whose tokenizer pickles compiled patterns' bound methods (getattr on a pattern), which wscan does not clear.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import pickle
import shutil
import tempfile
import types
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gen_allowlists import _resolve, callable_instances, catalogue_arguments, reachable, screened_catalogue
from gen_sb3_allowlist import torch_optimizers
from gen_stats_allowlist import _callable_attributes, methods
from pack_file import record_imports, write_pack

LIBRARIES = ("fastai.", "fastcore.", "fasttransform.")
# Load hooks of fastai's own, read in the installed source (fastai 2.8, fastcore 2.2, fasttransform 0.0.2).
FASTAI_OWNER_HOOKS = {
    # GetAttr passes a name it does not have to the object its state names as `default` (or `_default`), but for
    # dunder names: pickle looks up __setstate__ (GetAttr's own: __dict__.update) and, for APPENDS and ADDITEMS,
    # append, extend and add, which before BUILD find no such object (AttributeError) and after it change a restored
    # object (WS-PKL-018).
    "__getattr__ of fastcore.basics.GetAttr": "a name its state's default has; never a dunder",
    "__setstate__ of fastcore.basics.GetAttr": "__dict__.update",
    # __dict__.update, then self._init_state(): an _init_state the state sets is a method replaced (WS-PKL-026)
    "__setstate__ of fastcore.basics.Stateful": "__dict__.update, then its _init_state",
    "__setstate__ of fastai.learner.Learner": "__dict__.update and a new threading.Lock",
    "__setstate__ of fasttransform.transform.Pipeline": "__dict__.update",
    # Datasets and Pipeline gather a name from their lists (tls, fs), raising for names that start with "_" and
    # before BUILD (no list)
    "__getattr__ of fastai.data.core.Datasets": "the name from its lists; never a dunder",
    "__getattr__ of fasttransform.transform.Pipeline": "the name from its transforms; never a dunder",
    # pickle's ADDITEMS calls add: each item's setup(None), then the pipeline's own fs, which it has no list for before
    # BUILD (AttributeError); after it, WS-PKL-018
    "add of fasttransform.transform.Pipeline": "setup(None) on each item, then fails before BUILD",
    # only for BUILD's slot state, which WS-PKL-023 judges
    "__setattr__ of fastai.callback.core.Callback": "warns if the learner has the name, then sets it",
    # L and CategoryMap compare their items; L is unhashable (__hash__ None); SETITEMS sets an item of their items
    # list, which they have no list for before BUILD (GetAttr raises for `items`), and after it is WS-PKL-018
    "__hash__ of fastcore.foundation.L": "None: unhashable",
    "__eq__ of fastcore.foundation.L": "compares items",
    "__setitem__ of fastcore.foundation.L": "sets items of its list",
    "__setitem__ of fastcore.foundation.CollBase": "sets an item of its list",
    "__hash__ of fastai.data.transforms.CategoryMap": "None: __eq__ is defined",
    "__eq__ of fastai.data.transforms.CategoryMap": "compares items",
    # a torch container's own hooks: setting or adding a module (allow-torch lists Sequential)
    **{f"{hook} of torch.nn.modules.container.Sequential": "sets or adds a module"
       for hook in ("__setitem__", "extend", "append")},
}
# A tensor subclass (a Normalize's mean and std): torch restores it with _rebuild_from_type_v2, which makes a plain
# tensor an instance with as_subclass, never calling TensorBase.__new__ (which runs only when the class is called, a
# WS-PKL-014), then sets its attribute state; the other hooks are torch.Tensor's own.
FASTAI_CLASS_HOOKS = {"fastai.torch_core.TensorBase": "torch's tensor-subclass restore"}
# Metaclasses whose hooks run when a class is called (pickle restores these classes with __new__ and BUILD; a call is
# WS-PKL-014) or created (at import).
FASTAI_METACLASSES = {
    "fastcore.meta.PrePostInitMeta": "__pre_init__, __init__ and __post_init__ when the class is called",
    "fasttransform.transform._TfmMeta": "registers a method when the class is called with a function; merges its "
    "methods when the class is made",
    "fastcore.foundation._L_Meta": "returns an L given one when the class is called",
}
# Bound methods real exports keep (a TabularPandas keeps its own dataloaders, wrapped by delegates), as cloudpickle
# writes them: MethodType(getattr(Class, "dataloaders"), obj). Nothing calls them while the file loads; the user's code
# may, to make data loaders from the object's own datasets.
INSTANCE_METHODS = ["fastai.data.core.FilteredBase.dataloaders", "fastai.tabular.core.TabularPandas.dataloaders"]
# Objects a pipeline keeps under an attribute the library calls (`normalize`): the transform it normalises with, which
# computes (x - mean) / std from its state.
CALLED_OBJECTS = ["fastai.data.transforms.Normalize"]


def save_models(folder: Path) -> None:
    import numpy as np
    import pandas as pd
    import torch
    from fastai.collab import CollabDataLoaders, collab_learner
    from fastai.data.block import RegressionBlock
    from fastai.data.core import Datasets
    from fastai.data.transforms import ItemGetter, Normalize, RandomSplitter
    from fastai.layers import AdaptiveConcatPool2d, ConvLayer, Flatten
    from fastai.learner import Learner
    from fastai.losses import CrossEntropyLossFlat
    from fastai.metrics import accuracy, rmse
    from fastai.tabular.core import Categorify, FillMissing, TabularPandas, range_of
    from fastai.tabular.data import TabularDataLoaders
    from fastai.tabular.learner import tabular_learner
    from fastcore.xtras import save_pickle

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    n = 200
    frame = pd.DataFrame({"age": rng.integers(18, 80, n).astype(float), "weight": rng.random(n) * 1e5,
                          "work": rng.choice(["private", "self", "gov"], n),
                          "education": rng.choice(["school", "bachelor", "master"], n),
                          "salary": rng.choice(["low", "high"], n), "y": rng.random(n)})
    frame.loc[::7, "age"] = np.nan
    tabular = {"cat_names": ["work", "education"], "cont_names": ["age", "weight"]}
    procs = [Categorify, FillMissing, Normalize]
    learners: dict[str, Any] = {
        "tabular": tabular_learner(TabularDataLoaders.from_df(frame, path=folder, procs=procs, y_names="salary",
                                                              bs=32, **tabular), layers=[20, 10], metrics=accuracy),
        "tabular_regression": tabular_learner(TabularDataLoaders.from_df(
            frame, path=folder, procs=procs, y_names="y", y_block=RegressionBlock(), bs=32, **tabular),
            layers=[8], metrics=rmse),
    }
    ratings = pd.DataFrame({"user": rng.integers(0, 20, 300), "item": rng.integers(0, 30, 300),
                            "rating": rng.random(300) * 5})
    collab = CollabDataLoaders.from_df(ratings, bs=64, path=folder)
    learners["collab"] = collab_learner(collab, n_factors=5, y_range=(0, 5.5))
    learners["collab_nn"] = collab_learner(collab, use_nn=True, emb_szs={"user": 4, "item": 4}, layers=[8],
                                           y_range=(0, 5.5))
    images = torch.randn(64, 3, 16, 16)
    labels = torch.randint(0, 2, (64,))
    datasets = Datasets([(images[i], labels[i]) for i in range(64)], tfms=[[ItemGetter(0)], [ItemGetter(1)]],
                        splits=[list(range(48)), list(range(48, 64))])
    model = torch.nn.Sequential(ConvLayer(3, 8, stride=2), ConvLayer(8, 16, stride=2), AdaptiveConcatPool2d(1),
                                Flatten(), torch.nn.Linear(32, 2))
    learners["generic"] = Learner(datasets.dataloaders(bs=8), model, loss_func=CrossEntropyLossFlat(),
                                  metrics=accuracy, path=folder)
    for name, learner in learners.items():
        with contextlib.redirect_stdout(io.StringIO()):  # fastprogress's bars
            learner.fit(1)
        learner.export(folder / f"fastai_{name}_export.pkl")
        learner.save(f"fastai_{name}_saved")  # folder/models/, with the optimizer's state
    pandas = TabularPandas(frame, procs=procs, y_names="salary", splits=RandomSplitter()(range_of(frame)), **tabular)
    save_pickle(folder / "fastai_tabular_pandas.pkl", pandas)  # as fastai's tabular tutorial saves one


class _Recording:
    """A pickle module for torch.load whose unpickler notes every global it imports."""

    def __init__(self, names: set[str]) -> None:
        import pickle

        recorded = names

        class Unpickler(pickle.Unpickler):
            def find_class(self, module: str, name: str) -> Any:
                recorded.add(f"{module}.{name}")
                return super().find_class(module, name)

        self.__name__ = "wscan_recording"  # torch.load asks whether it is dill
        self.Unpickler = Unpickler
        self.load = pickle.load


def loaded(path: Path, names: set[str]) -> object:
    """The object in one of this tool's own files, made a moment before (loading runs it), noting what it imports."""
    import torch

    if zipfile.is_zipfile(path):
        return torch.load(path, weights_only=False, pickle_module=_Recording(names))  # type: ignore[arg-type]
    recording = _Recording(names)
    with path.open("rb") as stream:
        return recording.Unpickler(stream).load()


def recorded_folder(folder: Path, libraries: tuple[str, ...], members: set[str], bound: set[str],
                    repickled: Callable[[Path], bool] = lambda path: True) -> set[str]:  # fmt: skip
    """The names the files in `folder` (this tool's own, written a moment ago) import, and the names their objects
    import pickled again with every protocol from 2 (those `repickled` picks); into `members` the callable attributes
    the objects of `libraries` keep under names their classes have no method by, into `bound` their bound methods.
    Shared by the generators that record a catalogue of saves (darts, pytorch-forecasting, PyTorch Geometric)."""
    names: set[str] = set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        obj = loaded(path, names)
        _callable_attributes(obj, members, libraries)
        bound_methods(obj, bound)
        if repickled(path):
            for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
                record_imports(io.BytesIO(pickle.dumps(obj, protocol=protocol)), names)
    return names


def recorded_catalogue(save: Callable[[Path], None], libraries: tuple[str, ...], keep: Path | None,
                       repickled: Callable[[Path], bool] = lambda path: True) -> tuple[set[str], set[str], set[str]]:
    """(names, callable members, bound methods) of a catalogue `save` writes into a temporary folder (see
    `recorded_folder`), copied to `keep` when one is given."""
    members: set[str] = set()
    bound: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        save(Path(folder))
        names = recorded_folder(Path(folder), libraries, members, bound, repickled)
        if keep:
            shutil.copytree(folder, keep, dirs_exist_ok=True)
    return names, members, bound


def bound_methods(root: object, found: set[str]) -> None:
    """The functions of the bound methods the libraries' objects keep, by the names cloudpickle writes for them."""
    for obj in reachable(root, 40):
        if isinstance(obj, types.MethodType):
            found.add(f"{obj.__func__.__module__}.{obj.__func__.__qualname__}")


def shadowed_methods(root: object, members: set[str], values: set[str], libraries: tuple[str, ...] = LIBRARIES) -> None:
    """`Class.attr` for each method of a library class that its objects replace with a callable object of their own
    (a data loader's `after_batch` pipeline, a dataset's bound `dataloaders`), and the classes of those objects."""
    for obj in reachable(root, 40):
        klass = type(obj)
        name = f"{klass.__module__}.{klass.__qualname__}"
        if inspect.isclass(obj) or not name.startswith(libraries) or not hasattr(obj, "__dict__"):
            continue
        for attr, value in vars(obj).items():
            method = inspect.isroutine(inspect.getattr_static(klass, attr, None))
            if callable(value) and not isinstance(value, type) and method:
                members.add(f"{name}.{attr}")
                kind = type(value)
                values.add(f"{kind.__module__}.{kind.__qualname__}".replace("builtins.method", "types.MethodType"))


def table_members(allowed: list[str]) -> list[str]:
    """The allowed torch modules, as entries of a module's `_modules` (WS-PKL-029: a container calls each)."""
    import torch

    return [f"_modules={name}" for name in allowed
            if isinstance(_resolve(name), type) and issubclass(_resolve(name), torch.nn.Module)]  # type: ignore[arg-type]


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], FASTAI_CLASS_HOOKS, FASTAI_OWNER_HOOKS, FASTAI_METACLASSES)
    names: set[str] = set()
    members: set[str] = set()
    bound: set[str] = set()
    shadowing: set[str] = set()
    shadows: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        save_models(Path(folder))
        for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
            obj = loaded(path, names)
            _callable_attributes(obj, members, LIBRARIES)
            bound_methods(obj, bound)
            shadowed_methods(obj, shadowing, shadows)
        if args.keep:
            shutil.copytree(folder, args.keep, dirs_exist_ok=True)
    unknown = sorted(n for n in bound if n.startswith(LIBRARIES) and n not in INSTANCE_METHODS)
    if unknown:
        raise SystemExit(f"bound methods to review for INSTANCE_METHODS: {', '.join(unknown)}")
    allowed, state_only, functions = screened_catalogue(names, LIBRARIES)
    import fastai

    write_pack(
        "allow-fastai",
        f"Generated by tools/gen_fastai_allowlist.py (fastai {fastai.__version__}): what its tabular, "
        "collaborative-filtering and generic learners' exports (load_learner) and saves import, recorded from real "
        "saves: classes restored from state only, each screened for the hooks loading runs; the functions they keep "
        "(metrics, splitters, the optimizer's maker) as values; the bound methods they keep, as cloudpickle writes "
        "them; their method names and the classes that cannot be called. Text learners are not covered.\n",
        {
            "allowed-callables": allowed,
            "state-only-classes": state_only,
            "value-classes": state_only + torch_optimizers(),
            "referenced-callables": functions,
            "instance-methods": INSTANCE_METHODS,
            "method-names": methods(allowed),
            "inert-values": [n for n in allowed if not callable_instances(_resolve(n))],  # type: ignore[arg-type]
            # a method replaced by an object of the library's (data loaders keep pipelines as after_batch): the
            # library calls it, so only objects of the classes found there may replace it (WS-PKL-027)
            "called-attributes": sorted({member.rpartition(".")[2] for member in shadowing}),
            "called-attribute-objects": sorted(set(CALLED_OBJECTS) | shadows),
            "callable-members": sorted(members | shadowing),
            "table-members": table_members(allowed),
        },
    )


if __name__ == "__main__":
    main()
