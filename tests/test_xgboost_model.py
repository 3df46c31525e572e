"""XGBoost models whose trees lead XGBoost's compiled predictor out of bounds (WS-PKL-060).

Models are fitted with xgboost at test time and saved the ways users save them. Hostile ones are made the way a
writer of a hostile file would: the model's JSON changed, loaded back by XGBoost (which checks none of it) and
pickled by XGBoost itself, so the pickle holds XGBoost's own UBJSON of the changed trees; or the changed JSON
snapshot itself, as XGBoost before 2 pickled it. The loader runs show the changes are real: predict() dies by a signal.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.scanning import scan_bytes
from tests.helpers.sklearn_native import SAVES, save
from wscan.model import Severity
from wscan.scanners import xgboost_model
from wscan.scanners.lightgbm_model import Malformed

xgb = pytest.importorskip("xgboost")
np = pytest.importorskip("numpy")

RULE = "WS-PKL-060"


def _models() -> dict[str, Any]:
    import pandas as pd

    rng = np.random.default_rng(8)
    x = rng.normal(size=(300, 5))
    y = x[:, 0] + 0.5 * x[:, 1]
    frame = pd.DataFrame(x, columns=list("abcde"))
    frame["colour"] = pd.Categorical(rng.integers(0, 12, 300))
    small = {"n_estimators": 4, "max_depth": 3}
    return {
        "regression": xgb.XGBRegressor(**small).fit(x, y),
        "binary": xgb.XGBClassifier(**small).fit(x, y > 0),
        "multiclass": xgb.XGBClassifier(**small).fit(x, np.digitize(y, [-0.5, 0.5])),
        "categorical": xgb.XGBRegressor(enable_categorical=True, tree_method="hist", **small).fit(
            frame, y + frame["colour"].cat.codes % 3
        ),
        "dart": xgb.XGBRegressor(booster="dart", **small).fit(x, y),
        "linear": xgb.XGBRegressor(booster="gblinear", n_estimators=4).fit(x, y),
        "random-forest": xgb.XGBRFRegressor(n_estimators=4, max_depth=3).fit(x, y),
        "ranker": xgb.XGBRanker(**small).fit(x, np.digitize(y, [-1, 0, 1]), qid=np.repeat([0, 1, 2], 100)),
        "pruned": xgb.XGBRegressor(gamma=5.0, tree_method="exact", **small).fit(x, y),
        "booster": xgb.train({"max_depth": 2}, xgb.DMatrix(x, y), num_boost_round=3),
        "unfitted": xgb.XGBClassifier(),
    }


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    return _models()


def _booster(model: Any) -> Any:
    return model if isinstance(model, xgb.Booster) else model.get_booster()


def _snapshot(model: Any) -> dict[str, Any]:
    """The model's pickled snapshot ({"Config", "Model"}), as JSON values."""
    blob = bytes(_booster(model).__getstate__()["handle"])
    found = xgboost_model._Ubjson(blob).document()
    assert isinstance(found, dict)
    return found


@contextmanager
def _written_as(blob: bytes) -> Iterator[None]:
    """Pickling a Booster writes `blob` as its model buffer."""
    original = xgb.Booster.__getstate__

    def hostile_state(self: Any) -> dict[str, Any]:
        state = dict(original(self))
        state["handle"] = bytearray(blob)
        return state

    xgb.Booster.__getstate__ = hostile_state
    try:
        yield
    finally:
        xgb.Booster.__getstate__ = original


def _first_tree(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def on_model(snapshot: dict[str, Any]) -> None:
        change(snapshot["Model"]["learner"]["gradient_booster"]["model"]["trees"][0])

    return on_model


def _set(key: str, index: int, value: int) -> Callable[[dict[str, Any]], None]:
    return _first_tree(lambda tree: tree[key].__setitem__(index, value))


def _model(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda snapshot: change(snapshot["Model"]["learner"]["gradient_booster"]["model"])


def _category_far(tree: dict[str, Any]) -> None:
    assert tree["categories_sizes"], "no categorical split in the first tree"
    tree["categories_sizes"][0] = 10_000


# Each: (the model it changes, the change, what the finding says).
HOSTILE: dict[str, tuple[str, Callable[[dict[str, Any]], None], str]] = {
    "left-child-far": ("regression", _set("left_children", 0, 2_000_000), "child 2000000 of"),
    "right-child-negative": ("binary", _set("right_children", 0, -5), "child -5 of"),
    "split-feature-far": ("regression", _set("split_indices", 0, 100_000_000), "feature 100000000 of"),
    "child-cycle": ("regression", _set("left_children", 1, 0), "reached twice"),
    "parent-elsewhere": ("regression", _set("parents", 1, 5), "parent 5"),
    "tree-output-far": ("multiclass", _model(lambda m: m["tree_info"].__setitem__(0, 70)), "output 70 of 3"),
    "iterations-past-the-trees": (
        "regression", _model(lambda m: m["iteration_indptr"].__setitem__(-1, 400)), "iteration_indptr"
    ),
    "category-segment-far": ("categorical", _first_tree(_category_far), "categories"),
}  # fmt: skip
# Changes XGBoost's own loader refuses (so it will not pickle them): checked in a JSON snapshot only.
REFUSED = frozenset({"iterations-past-the-trees", "category-segment-far"})


def _changed_snapshot(models: dict[str, Any], name: str) -> dict[str, Any]:
    model, change, _ = HOSTILE[name]
    snapshot = _snapshot(models[model])
    change(snapshot)
    return snapshot


def _hostile_file(models: dict[str, Any], name: str, how: str, as_json: bool = False) -> bytes:
    """The changed model pickled: as XGBoost's own UBJSON of it (loaded back by XGBoost), or as the JSON."""
    text = json.dumps(_changed_snapshot(models, name)).encode()
    if as_json:
        blob = text
    else:
        reloaded = xgb.Booster()
        model = json.dumps(_changed_snapshot(models, name)["Model"]).encode()
        reloaded.load_model(bytearray(model))  # XGBoost reads the changed model, unchecked
        blob = bytes(reloaded.__getstate__()["handle"])
    with _written_as(blob):
        return save(models[HOSTILE[name][0]], how)


def _findings(tmp_path: Path, blob: bytes, name: str) -> dict[str, tuple[Severity, str]]:
    return {f.rule_id: (f.severity, f.message) for f in scan_bytes(tmp_path, blob, name).findings}


BENIGN = ["regression", "binary", "multiclass", "categorical", "dart", "linear", "random-forest", "ranker", "pruned",
          "booster", "unfitted"]  # fmt: skip


def test_every_model_is_listed(models: dict[str, Any]) -> None:
    assert sorted(BENIGN) == sorted(models)


@pytest.mark.parametrize("how", SAVES)
@pytest.mark.parametrize("name", BENIGN)
def test_models_as_xgboost_writes_them_pass(tmp_path: Path, models: dict[str, Any], name: str, how: str) -> None:
    found = _findings(tmp_path, save(models[name], how), f"{name}.pkl")
    assert RULE not in found, found[RULE]


@pytest.mark.parametrize("how", SAVES)
@pytest.mark.parametrize("name", sorted(set(HOSTILE) - REFUSED))
def test_an_index_out_of_bounds_is_flagged(tmp_path: Path, models: dict[str, Any], name: str, how: str) -> None:
    found = _findings(tmp_path, _hostile_file(models, name, how), f"{name}.pkl")
    assert RULE in found, sorted(found)
    assert found[RULE][0] == Severity.HIGH
    assert "xgboost.core.Booster" in found[RULE][1]
    assert HOSTILE[name][2] in found[RULE][1], found[RULE][1]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_json_snapshot_is_read_too(tmp_path: Path, models: dict[str, Any], name: str) -> None:
    """XGBoost before 2 pickled a JSON snapshot (3.2 refuses one); its trees are checked the same way."""
    found = _findings(tmp_path, _hostile_file(models, name, "pickle4", as_json=True), f"{name}.pkl")
    assert HOSTILE[name][2] in found[RULE][1], found[RULE][1]


def test_layouts_wscan_does_not_read_are_unverified(models: dict[str, Any]) -> None:
    """XGBoost 1's binary snapshot, a cut UBJSON document and counts past the bytes are never passed."""
    blob = bytes(_booster(models["regression"]).__getstate__()["handle"])
    xgboost_model.check(blob)
    for bad in (b"CONFIG-offset:" + blob, blob[: len(blob) // 2], b"{L\x00\x00\x00\x00\x00\x00\x00\x05Model[$l#L\x7f"):
        with pytest.raises(Malformed):
            xgboost_model.check(bad)


PREDICT = """
import pickle, sys
import numpy as np
model = pickle.load(open(sys.argv[1], "rb"))
print("loaded", flush=True)
x = np.random.default_rng(1).normal(size=(2000, 5))
for _ in range(3):
    model.predict(x)
print("survived")
"""


@pytest.mark.parametrize("name", ["left-child-far", "right-child-negative", "split-feature-far", "child-cycle"])
def test_xgboost_goes_out_of_bounds(tmp_path: Path, models: dict[str, Any], name: str) -> None:
    """What the rule is for: xgboost's own predict() on the file is killed by a signal."""
    path = tmp_path / f"{name}.pkl"
    path.write_bytes(_hostile_file(models, name, "pickle4"))
    run = subprocess.run([sys.executable, "-c", PREDICT, str(path)], capture_output=True, text=True, timeout=300)
    assert run.returncode < 0, (run.returncode, run.stdout, run.stderr[-500:])
