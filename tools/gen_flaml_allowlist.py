"""Regenerate rules/allow-flaml.yaml: what FLAML's saved AutoML objects and estimators import.

FLAML's AutoML is saved as users save scikit-learn models: `pickle.dump(automl)` (or joblib.dump), FLAML's own
`automl.pickle(path)` (read back by `AutoML.load_pickle`), or only the best model, `automl.model` (FLAML's wrapper
around the LightGBM, XGBoost or scikit-learn estimator, which is `automl.model.estimator`). Helper 280 found every
AutoML file critical (its searchers keep `getattr(<estimator class>, "size")`) and every wrapper high (no pack held
FLAML). FLAML is not a test dependency (tests/data/flaml keeps real files): run this where it is installed beside
PyYAML (`pip install "flaml[automl]" pyyaml`), then `python tools/gen_flaml_allowlist.py [--keep DIR]`. Recorded, as
the PyCaret pack is: each classification and regression search below (every estimator FLAML trains with
flaml[automl] alone, then the default lists, fixed iteration counts and seeds) is saved those three ways; each file
is loaded back and pickled with every protocol from 2, and the names those pickles import are recorded by a
find_class that refuses nothing. Only what these files import is listed, never the package, and a class is allowed
to be restored from state only where a saved object is one (an instance reached from a file): the estimator classes
FLAML keeps as values only (its `learner_classes` table names every estimator it knows, Spark's, CatBoost's and
TransformersEstimator too) are values and nothing else (`referenced-callables`), so a file that makes one is
flagged. TransformersEstimator is why: AutoML.__del__ calls `_trained_estimator.cleanup()` when
`preserve_checkpoint` is False, and TransformersEstimator.cleanup deletes (shutil.rmtree) every folder its
`_ckpt_remains` names. The searchers keep each trained estimator class's `size` classmethod (a memory estimate,
arithmetic on a config) as a bound method, which pickle writes as getattr(<class>, "size"): only those exact
(class, `size`) pairs are listed, as values never called. AutoML.load_pickle imports the module and class an
estimator's `_flaml_spark_model_meta` names and calls its load() with the path it names: WS-PKL-038 judges that
state (scanners/pickle_states.py); non-Spark saves keep none.
"""

from __future__ import annotations

import inspect
import pickle
import types
import warnings
from pathlib import Path

from gen_allowlists import REVIEWED_HOOKS, _resolve, catalogue_arguments, own_hooks, reachable
from gen_stats_allowlist import joblib_copies, recorded_catalogue, screened_lists
from pack_file import write_pack

LIBRARIES = ("flaml.",)
# FLAML 2.8.0's load hooks, read in its source, where they are defined (for every class that inherits them).
OWNER_HOOKS = {
    # flaml/automl/automl.py 477-496: __dict__.update(state); then, only if `mlflow_integration` is not None (no
    # file saved without mlflow has one, and its class is not in this pack), four attributes set on it and
    # mlflow.tracking.MlflowClient() made with no argument (mlflow is not part of flaml[automl]).
    "__setstate__ of flaml.automl.automl.AutoML": "__dict__.update; mlflow client only for an mlflow_integration",
    # flaml/automl/automl.py 3534-3542: `_trained_estimator.cleanup()` when preserve_checkpoint is False (FLAML's
    # default is True). BaseEstimator.cleanup drops the model (`self._model = None`); TransformersEstimator.cleanup
    # rmtree's its `_ckpt_remains`, so that class is a value only here (never restored). Any other `cleanup` an
    # object's state sets is a method name replaced (WS-PKL-026).
    "__del__ of flaml.automl.automl.AutoML": "cleanup() of the trained estimator: BaseEstimator's drops its model",
    # flaml/tune/sample.py 58-82 (without ray): a name the instance lacks is looked up on its `_rng` (NumPy's
    # Generator or RandomState, or numpy.random while the class's `_rng = None` stands): during BUILD that is
    # numpy.random, which has no __setstate__.
    "__getattr__ of flaml.tune.sample._BackwardsCompatibleNumpyRng": "NumPy's generator's attribute",
    # flaml/automl/task/task.py 326-328: compares the task's name with a text.
    "__eq__ of flaml.automl.task.task.Task": "self.name == other",
}
# The function FLAML's search keeps in a partial (flaml/automl/automl.py 3039-3043), and where: each SearchState's
# training_function. fit() starts from new search states (automl.py 2480) and AutoML.pickle drops the attribute.
KEPT_PARTIALS = {
    "flaml.automl.state.AutoMLState._compute_with_config_base": "flaml.automl.state.SearchState.training_function",
}
SEED = {"verbose": 0, "seed": 0, "n_jobs": 1}
CLASSIFIERS = ("lgbm", "rf", "xgboost", "extra_tree", "xgb_limitdepth", "lrl1", "lrl2", "kneighbor", "sgd", "histgb",
               "svc")  # fmt: skip
REGRESSORS = ("lgbm", "rf", "xgboost", "extra_tree", "xgb_limitdepth", "kneighbor", "sgd", "histgb", "enet",
              "lassolars")  # fmt: skip


def _save(automl: object, folder: Path, name: str) -> None:
    """The three ways users keep a search: the AutoML object pickled, FLAML's own AutoML.pickle (which leaves the
    searches' training functions out), and the best model alone."""
    with (folder / f"flaml_{name}_automl.pkl").open("wb") as stream:
        pickle.dump(automl, stream)
    automl.pickle(str(folder / f"flaml_{name}_automl_pickle.pkl"))  # type: ignore[attr-defined]
    with (folder / f"flaml_{name}_model.pkl").open("wb") as stream:
        pickle.dump(automl.model, stream)  # type: ignore[attr-defined]


def save_models(folder: Path) -> None:
    from flaml import AutoML
    from sklearn.datasets import load_diabetes, load_iris

    iris, species = load_iris(return_X_y=True, as_frame=True)
    diabetes, progression = load_diabetes(return_X_y=True, as_frame=True)
    searches: list[tuple[str, object, object, dict[str, object]]] = []
    for task, short, data, target, names in (("classification", "clf", iris, species, CLASSIFIERS),
                                             ("regression", "reg", diabetes, progression, REGRESSORS)):  # fmt: skip
        searches += [(f"{short}_{name}", data, target, {"task": task, "estimator_list": [name], "max_iter": 2})
                     for name in names]  # fmt: skip
        searches.append((f"{short}_default", data, target, {"task": task, "max_iter": 10}))
    searches.append(("clf_ensemble", iris, species, {"task": "classification", "max_iter": 6, "ensemble": True,
                                                     "estimator_list": ["lgbm", "rf", "lrl1"]}))  # fmt: skip
    for name, data, target, settings in searches:
        automl = AutoML()
        automl.fit(data, target, **settings, **SEED)
        _save(automl, folder, name)


def instances_and_methods(folder: Path) -> tuple[set[str], set[str]]:
    """(classes of the libraries' objects, `Class.method` of the classmethods bound to them) reachable from the files
    in `folder` (this tool's own, written a moment ago: loading runs them). A classmethod bound to its class pickles
    as getattr(<class>, "<name>"), which wscan names after the class it is looked up on, not where it is defined."""
    classes: set[str] = set()
    bound: set[str] = set()
    for path in sorted(folder.glob("*.pkl")):
        with path.open("rb") as stream:
            root = pickle.load(stream)  # this tool's own file
        for obj in reachable(root, 60):
            kind = type(obj)
            if isinstance(obj, types.MethodType) and inspect.isclass(obj.__self__):
                owner = obj.__self__
                bound.add(f"{owner.__module__}.{owner.__qualname__}.{obj.__func__.__name__}")
            elif f"{kind.__module__}.".startswith(LIBRARIES):
                classes.add(f"{kind.__module__}.{kind.__qualname__}")
    return classes, bound


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], {}, OWNER_HOOKS)
    warnings.simplefilter("ignore")
    found: dict[str, set[str]] = {}

    def save(folder: Path) -> None:
        save_models(folder)
        found["instances"], found["bound"] = instances_and_methods(folder)

    names, members = recorded_catalogue(save, LIBRARIES, args.keep)
    if args.keep:
        joblib_copies(args.keep)
    own = sorted(n for n in names if n.startswith(LIBRARIES))
    classes = [n for n in own if inspect.isclass(_resolve(n))]
    restored = [n for n in classes if n in found["instances"]]
    hooked = {name: own_hooks(_resolve(name)) for name in restored}  # type: ignore[arg-type]
    left_out = [f"{name} ({', '.join(hooks)})" for name, hooks in hooked.items()
                if hooks and name not in REVIEWED_HOOKS]  # fmt: skip
    if left_out:
        raise SystemExit(f"classes with hooks to review: {'; '.join(left_out)}")
    allowed = state_only = restored  # no enum: each is restored with cls.__new__ and its state
    missing = found["instances"] - set(restored)
    if missing:
        raise SystemExit(f"objects of classes no pickle imported: {', '.join(sorted(missing))}")
    bound = sorted(n for n in found["bound"] if n.startswith(LIBRARIES))
    for method in bound:  # a classmethod of the class named, looked up on it
        owner, _, attr = method.rpartition(".")
        if not isinstance(inspect.getattr_static(_resolve(owner), attr), classmethod):
            raise SystemExit(f"{method} is not a classmethod")
    values = [n for n in own if n not in restored]  # functions and the classes kept as values only
    others = sorted(n for n in names if not n.startswith(LIBRARIES))
    print(f"recorded outside {', '.join(LIBRARIES)} (judged by the other packs): {', '.join(others)}")
    # not the training function: kept as a plain value in an attribute a library calls (FunctionTransformer's func,
    # with kw_args naming a state) it would run, so it passes only inside the partial WS-PKL-069 places
    referenced = [n for n in values if n not in KEPT_PARTIALS]
    lists = screened_lists(allowed, state_only, sorted(referenced + bound), members)
    # the search's training function: a partial in each SearchState's training_function, which fit() never reuses
    # (it makes new search states); called, it fits what its state names (WS-PKL-069 judges where it sits)
    lists["kept-partial-functions"] = [n for n in values if n in KEPT_PARTIALS]
    lists["kept-partial-members"] = sorted(KEPT_PARTIALS[n] for n in lists["kept-partial-functions"])
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("flaml", "scikit-learn", "lightgbm", "xgboost", "numpy"))
    write_pack(
        "allow-flaml",
        f"Generated by tools/gen_flaml_allowlist.py ({versions}): what FLAML's saved AutoML objects (pickle.dump, "
        "joblib.dump, AutoML.pickle) and best models (`automl.model`) import, classification and regression, "
        "recorded from real saves, never a package wildcard: the classes of the objects those files hold, restored "
        "from state only, each screened for the hooks loading runs; the estimator classes FLAML keeps as values only "
        "(its table of learners: TransformersEstimator, whose cleanup() at AutoML.__del__ deletes the folders its "
        "state names, Spark's and CatBoost's among them) and the searches' training function, as values never "
        "called; the exact (estimator class, `size`) classmethods its searchers keep; their method names and the "
        "classes that cannot be called. An estimator's `_flaml_spark_model_meta` names a class AutoML.load_pickle "
        "imports and loads a path with: WS-PKL-038 judges that.\n",
        lists,
    )


if __name__ == "__main__":
    main()
