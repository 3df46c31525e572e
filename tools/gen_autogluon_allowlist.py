"""Regenerate rules/allow-autogluon.yaml: what AutoGluon's tabular predictor folders import.

A TabularPredictor keeps its fit in a folder: predictor.pkl, learner.pkl, models/trainer.pkl, a model.pkl for each
model (and for each child of a bagged one), utils/ with the data and the cached validation predictions, all
pickle.dump'ed (autogluon.common's save_pkl); TabularPredictor.load(path) unpickles them. AutoGluon is not a test
dependency (tests/data/autogluon keeps real folders): run this where autogluon.tabular is installed with its
lightgbm, catboost and xgboost extras beside PyYAML (never another torch), then
`python tools/gen_autogluon_allowlist.py [--keep DIR]`. Recorded, as the other catalogues are: each fit below runs
on a little data without a time limit (so the same models train each time), is saved as AutoGluon saves
(fit() itself, predictor.save(), clone_for_deployment(), refit_full()), and every pickle in the folders is recorded
as written and as pickled again with every protocol from 2 by a find_class that refuses nothing; the sorted union is
the pack. Every class is screened for the hooks loading runs. The neural networks (NN_TORCH, FASTAI) are left out:
they need torch and fastai, whose files this pack does not cover.

Trainers and bagged models load their models lazily at predict() from paths their state holds (the model graph's
`path` lists, a bagged model's child names), joined to the folder they were loaded from: a path that leaves the
folder loads a pickle nobody scanned (helper 281 proved both with a marker). WS-PKL-070 (rules/pickle.yaml) judges
those. A stacker's `base_model_paths_dict` is not judged: AutoGluon's own bagged saves keep paths there relative to
the folder the fit ran from (`../../../../<cwd>/LightGBM_BAG_L1`), and neither load, predict, predict_proba,
leaderboard nor evaluate read them (the trainer hands the stacker its base models' predictions; measured with every
entry pointing at a marker pickle under /tmp).
"""

from __future__ import annotations

import io
import pickle
import shutil
import tempfile
import warnings
from pathlib import Path

from gen_allowlists import catalogue_arguments, restored_only, screened_catalogue
from gen_stats_allowlist import _callable_attributes, screened_lists
from pack_file import record_imports, write_pack

# networkx's DiGraph is the trainer's model graph (and the in-edge view it caches once asked): named whole, the rest
# of networkx is allow-science's.
LIBRARIES = ("autogluon.", "networkx.classes.digraph.DiGraph", "networkx.classes.reportviews.InEdgeView")
# Hooks of AutoGluon's own the screen raised, read in the installed source (autogluon 1.6.3).
OWNER_HOOKS = {
    # a model's feature metadata compares its type maps with another's; defining __eq__ leaves it unhashable
    "__hash__ of autogluon.common.features.feature_metadata.FeatureMetadata": "None: __eq__ is defined",
    "__eq__ of autogluon.common.features.feature_metadata.FeatureMetadata": "compares its type maps",
    # a model's params and params_aux: dicts whose mutations warn (DeprecationWarning) before they change the dict;
    # their __reduce__ rebuilds them by calling the class with a plain dict (dict's own __init__, no hook of theirs)
    "__setitem__ of autogluon.core.models.abstract._mutation_deprecated_dict.MutationDeprecatedDict":
        "a DeprecationWarning, then dict.__setitem__",
    # the trainer's model graph: object.__new__, through networkx's dispatcher (which picks among installed
    # backends, never a file's), as allow-science reviewed it
    "__new__ of networkx.classes.digraph.DiGraph": "object.__new__",
    # the graph's cached in_edges view takes its graph and adjacency from the state, and its adjacency's items
    # method, not called (as allow-science reviewed OutEdgeView's); it compares as a set
    "__setstate__ of networkx.classes.reportviews.InEdgeView": "its graph and adjacency from the state",
    "__eq__ of collections.abc.Set": "compares members",
}
CLASS_HOOKS: dict[str, str] = {}
# The scorers AutoGluon keeps as a model's or an ensemble selection's `metric` (and eval_metric): __call__ calls its
# `_score_func` (a named function, judged by the allowlist; WS-PKL-027 judges an object there) with `_kwargs`.
SCORERS = ("autogluon.core.metrics._ClassScorer", "autogluon.core.metrics._PredictScorer",
           "autogluon.core.metrics._ProbaScorer", "autogluon.core.metrics._ThresholdScorer")  # fmt: skip
SMALL = {"GBM": {"num_boost_round": 20}, "CAT": {"iterations": 20}, "XGB": {"n_estimators": 20},
         "RF": {"n_estimators": 10}, "XT": {"n_estimators": 10}, "KNN": {}, "LR": {}}  # fmt: skip


def _frames() -> dict[str, tuple[object, str]]:
    import numpy as np
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris

    cancer = load_breast_cancer(as_frame=True).frame.sample(200, random_state=0).reset_index(drop=True)
    iris = load_iris(as_frame=True).frame
    rng = np.random.default_rng(0)
    iris["colour"] = rng.choice(["red", "green", "blue"], len(iris))
    iris["note"] = rng.choice(["a b", "c d e", "f"], len(iris))
    iris.loc[::17, "sepal width (cm)"] = np.nan
    iris["target"] = iris["target"].map({0: "setosa", 1: "versicolor", 2: "virginica"})
    diabetes = load_diabetes(as_frame=True).frame.iloc[:200]
    diabetes = diabetes.assign(sex=diabetes["sex"].gt(0).map({True: "f", False: "m"}))
    return {"binary": (cancer, "target"), "multiclass": (iris, "target"), "regression": (diabetes, "target")}


def _default_without_networks() -> dict[str, object]:
    from autogluon.tabular.configs.hyperparameter_configs import get_hyperparameter_config

    config = dict(get_hyperparameter_config("default"))
    for network in ("NN_TORCH", "FASTAI"):
        config.pop(network, None)
    return config


def save_predictors(folder: Path) -> None:
    from autogluon.tabular import TabularPredictor

    frames = _frames()
    for kind, (frame, label) in frames.items():
        predictor = TabularPredictor(label=label, path=str(folder / f"{kind}_small"), verbosity=0)
        predictor.fit(frame, hyperparameters=SMALL)  # fit() saves the folder
        predictor.save()
    frame, label = frames["regression"]
    TabularPredictor(label=label, path=str(folder / "regression_default"), verbosity=0).fit(
        frame, hyperparameters=_default_without_networks())
    frame, label = frames["binary"]
    bagged = TabularPredictor(label=label, path=str(folder / "binary_bagged"), verbosity=0)
    bagged.fit(frame, hyperparameters={"GBM": {"num_boost_round": 20}, "RF": {"n_estimators": 10}, "KNN": {}},
               num_bag_folds=2, num_stack_levels=1)  # fmt: skip
    bagged.refit_full()
    bagged.clone_for_deployment(str(folder / "binary_bagged_deploy"))
    frame, label = frames["multiclass"]
    metric = TabularPredictor(label=label, path=str(folder / "multiclass_logloss"), eval_metric="log_loss",
                              verbosity=0)  # fmt: skip
    metric.fit(frame, hyperparameters={"GBM": {"num_boost_round": 20}, "LR": {}})


def recorded(folder: Path, members: set[str]) -> set[str]:
    """The names every pickle under `folder` (this tool's own, written a moment ago) imports, as written and with
    every protocol from 2; into `members` the callable attributes AutoGluon's objects keep."""
    names: set[str] = set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        blob = path.read_bytes()
        if not blob.startswith(b"\x80"):
            continue  # version.txt, metadata.json, XGBoost's xgb.ubj
        record_imports(io.BytesIO(blob), names)
        obj = pickle.loads(blob)  # this tool's own file
        _callable_attributes(obj, members, LIBRARIES)
        for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
            record_imports(io.BytesIO(pickle.dumps(obj, protocol=protocol)), names)
    return names


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], CLASS_HOOKS, OWNER_HOOKS)
    warnings.simplefilter("ignore")
    members: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        save_predictors(Path(folder))
        names = recorded(Path(folder), members)
        if args.keep:
            shutil.copytree(folder, args.keep, dirs_exist_ok=True)
    allowed, state_only, functions = screened_catalogue(names, LIBRARIES)
    others = sorted(n for n in names if not n.startswith(LIBRARIES))
    print(f"recorded outside {', '.join(LIBRARIES)} (judged by the other packs): {', '.join(others)}")
    lists = screened_lists(allowed, state_only, functions, members)
    # a model's params and params_aux pickle as ParamsDict({...}) (MutationDeprecatedDict.__reduce__): the class is
    # called with a plain dict, which dict's own __init__ copies
    lists["state-only-classes"] = restored_only(state_only)
    lists["called-attribute-objects"] = sorted(n for n in SCORERS if n in allowed)
    import importlib

    versions = ", ".join(f"{lib} {importlib.import_module(lib).__version__}" for lib in (
        "autogluon.tabular", "lightgbm", "catboost", "xgboost", "sklearn", "networkx"))  # fmt: skip
    write_pack(
        "allow-autogluon",
        f"Generated by tools/gen_autogluon_allowlist.py ({versions}): what AutoGluon's TabularPredictor folders "
        "import (predictor, learner, trainer, the LightGBM, CatBoost, XGBoost, random forest, extra trees, k-nearest "
        "neighbours, linear, weighted and bagged ensemble models, feature generators, label cleaners, scorers; "
        "binary, multiclass and regression; fit, save, refit_full and clone_for_deployment), recorded from real "
        "saves, never a package wildcard: classes restored from state only (but a model's two params dicts, which "
        "pickle rebuilds by calling them with a plain dict), each screened for the hooks loading runs; the "
        "functions they keep as values; their method names and the classes that cannot be called; "
        "AutoGluon's scorers as an ensemble selection's metric. The neural networks are not covered. Lazy loads "
        "from state paths: WS-PKL-070.\n",
        lists,
    )


if __name__ == "__main__":
    main()
