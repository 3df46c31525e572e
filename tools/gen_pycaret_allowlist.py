"""Regenerate rules/allow-pycaret.yaml: what PyCaret's saved pipelines import.

PyCaret's `save_model(model, name)` joblib-dumps the experiment's pipeline: its own Pipeline (imbalanced-learn's
subclass) of TransformerWrapper steps around scikit-learn and category_encoders transformers, and the model last;
helper 270's sweep found every one high (no pack held them). PyCaret is not a test dependency (tests/data/pycaret
keeps real files): run this where it is installed beside PyYAML (`pip install pycaret`; it pins its own
scikit-learn), then `python tools/gen_pycaret_allowlist.py [--keep DIR]` from a scratch folder (PyCaret writes
logs.log where it runs). Recorded, as the sklearn-compatible pack is (`gen_stats_allowlist`'s recording): each
classification and regression setup below is run on a little data, a few models are made (and one finalized) and
saved with save_model; each file is loaded back with joblib and pickled, and the names those pickles import, with
every protocol from 2, are recorded by a find_class that refuses nothing; every class is screened for the hooks
loading runs. Only what these files import is listed, never the package. The Pipeline keeps three
joblib NotMemorizedFunc objects around its `_fit_one`, `_transform_one` and `_full_transform` (its `memory`
property's setter makes them): the class and the three functions, as values only. That setter also runs at load
(`self.memory = state["_memory"]` in __setstate__): a `_memory` that names a folder makes joblib create it and a
folder for each function while the file loads, and cache there at fit; save_model keeps None there, and WS-PKL-033
(`cache-folder-classes`, rules/pickle.yaml) judges anything else.
"""

from __future__ import annotations

import pickle
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

from gen_allowlists import catalogue_arguments
from gen_stats_allowlist import screened_recording
from pack_file import write_pack

# joblib's NotMemorizedFunc is named whole: the rest of joblib.memory (Memory, MemorizedFunc, which read and write
# the cache folder) is not in this pack.
LIBRARIES = ("pycaret.", "joblib.memory.NotMemorizedFunc")
# pycaret/internal/pipeline.py 131-167 (PyCaret 3.3.2). __getattr__ is only reached for a name neither the instance
# nor the class has; on the empty instance pickle makes, its `_final_estimator` reads `steps`, which is missing too,
# and the recursion raises. __setstate__ compares the state's `_pycaret_versions` with the installed packages'
# (importlib.metadata) and warns, updates the instance's dict (BaseEstimator's, then its own), and sets `memory`
# from `_memory` through the property: check_memory (a text is a joblib Memory at that folder, anything else must
# have `cache`), then memory.cache(_fit_one), (_transform_one), (_full_transform), which replace the three wrappers
# the state gave. WS-PKL-033 judges `_memory`.
OWNER_HOOKS = {
    "__getattr__ of pycaret.internal.pipeline.Pipeline": "the final step's attribute; raises until state sets steps",
    "__setstate__ of pycaret.internal.pipeline.Pipeline": "dict, a version warning, memory rebuilt from `_memory`",
}
SEED = {"session_id": 0, "verbose": False, "html": False, "n_jobs": 1, "system_log": False, "fold": 2}


def _save(model: object, save_model: Callable[..., object], folder: Path, name: str) -> None:
    """save_model's file (joblib.dump), loaded back and pickled: the recorder reads pickle streams, and joblib's
    arrays sit outside the stream."""
    import joblib

    with tempfile.TemporaryDirectory() as scratch:
        save_model(model, str(Path(scratch) / name), verbose=False)
        saved = joblib.load(Path(scratch) / f"{name}.pkl")  # this tool's own file, written a moment ago
    with (folder / f"pycaret_{name}.pkl").open("wb") as stream:
        pickle.dump(saved, stream)


def _classification_data() -> object:
    import numpy as np
    from sklearn.datasets import load_iris

    frame = load_iris(as_frame=True).frame
    rng = np.random.default_rng(0)
    frame["colour"] = rng.choice(["red", "green", "blue"], len(frame))
    frame["size"] = rng.choice(["small", "medium", "large"], len(frame))
    frame.loc[::17, "sepal width (cm)"] = np.nan
    frame.loc[::23, "colour"] = None
    return frame


def save_models(folder: Path) -> None:
    import pycaret.classification as clf
    import pycaret.regression as reg
    from sklearn.datasets import load_diabetes

    frame = _classification_data()
    clf.setup(frame, target="target", normalize=True, ordinal_features={"size": ["small", "medium", "large"]},
              **SEED)  # fmt: skip
    for name in ("lr", "dt", "knn", "nb"):
        _save(clf.create_model(name, cross_validation=False, verbose=False), clf.save_model, folder, f"clf_{name}")
    forest = clf.create_model("rf", n_estimators=5, cross_validation=False, verbose=False)
    _save(clf.finalize_model(forest), clf.save_model, folder, "clf_rf_final")
    binary = frame[frame["target"] > 0].reset_index(drop=True).iloc[:-30]  # imbalanced: 50 against 20
    clf.setup(binary, target="target", fix_imbalance=True, feature_selection=True, feature_selection_estimator="dt",
              n_features_to_select=3, numeric_imputation="median", categorical_imputation="mode", **SEED)  # fmt: skip
    _save(clf.create_model("lr", cross_validation=False, verbose=False), clf.save_model, folder, "clf_imbalance_lr")

    diabetes = load_diabetes(as_frame=True).frame.iloc[:200]
    reg.setup(diabetes, target="target", normalize=True, normalize_method="minmax", transform_target=True,
              **SEED)  # fmt: skip
    for name in ("ridge", "knn", "dt"):
        _save(reg.create_model(name, cross_validation=False, verbose=False), reg.save_model, folder, f"reg_{name}")
    mixed = diabetes.assign(sex=diabetes["sex"].gt(0).map({True: "f", False: "m"}))
    reg.setup(mixed, target="target", remove_multicollinearity=True, polynomial_features=False, **SEED)
    linear = reg.finalize_model(reg.create_model("lr", cross_validation=False, verbose=False))
    _save(linear, reg.save_model, folder, "reg_lr_final")


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], {}, OWNER_HOOKS)
    warnings.simplefilter("ignore")
    lists = screened_recording(save_models, LIBRARIES, args.keep)
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("pycaret", "scikit-learn", "joblib", "numpy"))
    write_pack(
        "allow-pycaret",
        f"Generated by tools/gen_pycaret_allowlist.py ({versions}): what PyCaret's save_model files import (its "
        "Pipeline, the TransformerWrapper steps around scikit-learn's and category_encoders' transformers, "
        "CleanColumnNames, FixImbalancer, RemoveMulticollinearity; classification and regression), recorded from "
        "real saves, never a package wildcard: classes restored from state only, each screened for the hooks "
        "loading runs; joblib's NotMemorizedFunc and the three pipeline functions it wraps, as values; their "
        "method names and the classes that cannot be called. The Pipeline rebuilds its joblib cache from "
        "`_memory` while it loads: WS-PKL-033 judges that.\n",
        lists,
    )


if __name__ == "__main__":
    main()
