"""XGBoost models whose trees lead XGBoost's compiled predictor out of bounds (WS-PKL-060).

Models are fitted with xgboost at test time and saved the ways users save them. Hostile ones are made the way a
writer of a hostile file would: the model's JSON changed, loaded back by XGBoost (which checks none of it) and
pickled by XGBoost itself, so the pickle holds XGBoost's own UBJSON of the changed trees; or the changed JSON
snapshot itself, as XGBoost before 2 pickled it. The loader runs show the changes are real: predict() dies by a signal.
"""

from __future__ import annotations

import json
import struct
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
from wscan.scanners.booster_common import Malformed
from wscan.scanners.xgboost_model import Ubjson

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
    named = frame.copy()
    named["colour"] = pd.Categorical(np.array(["red", "green", "blue", "cyan"])[rng.integers(0, 4, 300)])
    small = {"n_estimators": 4, "max_depth": 3}
    return {
        "regression": xgb.XGBRegressor(**small).fit(x, y),
        "binary": xgb.XGBClassifier(**small).fit(x, y > 0),
        "multiclass": xgb.XGBClassifier(**small).fit(x, np.digitize(y, [-0.5, 0.5])),
        "categorical": xgb.XGBRegressor(enable_categorical=True, tree_method="hist", **small).fit(
            frame, y + frame["colour"].cat.codes % 3
        ),
        "categorical-names": xgb.XGBRegressor(enable_categorical=True, tree_method="hist", **small).fit(
            named, y + named["colour"].cat.codes % 3
        ),
        "dart": xgb.XGBRegressor(booster="dart", **small).fit(x, y),
        "linear": xgb.XGBRegressor(booster="gblinear", n_estimators=4).fit(x, y),
        "random-forest": xgb.XGBRFRegressor(n_estimators=4, max_depth=3).fit(x, y),
        "ranker": xgb.XGBRanker(**small).fit(x, np.digitize(y, [-1, 0, 1]), qid=np.repeat([0, 1, 2], 100)),
        "pruned": xgb.XGBRegressor(gamma=5.0, tree_method="exact", **small).fit(x, y),
        "booster": xgb.train({"max_depth": 2}, xgb.DMatrix(x, y), num_boost_round=3),
        "multi-target": xgb.XGBRegressor(multi_strategy="multi_output_tree", tree_method="hist", **small).fit(
            x, np.column_stack([y, x[:, 2], -x[:, 3]])
        ),
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
    found = xgboost_model.Ubjson(blob).document()
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


def _params(key: str, value: str) -> Callable[[dict[str, Any]], None]:
    return lambda snapshot: snapshot["Model"]["learner"]["learner_model_param"].__setitem__(key, value)


def _objective_classes(value: str) -> Callable[[dict[str, Any]], None]:
    def change(snapshot: dict[str, Any]) -> None:
        snapshot["Model"]["learner"]["objective"]["softmax_multiclass_param"]["num_class"] = value

    return change


def _chain(tree: dict[str, Any]) -> None:
    """The tree rebuilt as a chain 3,000 deep: node i splits off a leaf to the left and goes on to the right."""
    depth = 3000
    nodes = 2 * depth + 1
    inner = range(0, nodes - 1, 2)
    tree["left_children"] = [i + 1 if i in inner else -1 for i in range(nodes)]
    tree["right_children"] = [i + 2 if i in inner else -1 for i in range(nodes)]
    tree["parents"] = [2147483647] + [i - 1 if i % 2 else i - 2 for i in range(1, nodes)]
    for key in ("split_indices", "default_left", "split_type"):
        tree[key] = [0] * nodes
    for key in ("split_conditions", "base_weights", "loss_changes", "sum_hessian"):
        tree[key] = [0.5] * nodes
    tree["tree_param"]["num_nodes"] = str(nodes)


def _offsets_far(model: dict[str, Any]) -> None:
    table = next(t for t in model["cats"]["enc"] if t.get("offsets"))
    table["offsets"][-1] += 4096


def _self_parent(snapshot: dict[str, Any]) -> None:
    tree = next(t for t in snapshot["Model"]["learner"]["gradient_booster"]["model"]["trees"]
                if int(t["tree_param"]["num_deleted"]))  # fmt: skip
    last = len(tree["parents"]) - 1
    tree["parents"][last] = last


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
    # Review 89: a chain of a tree, a string category table past its bytes, a category of 2**30 (a bitset of
    # 128 MB at load), a deleted node that is its own parent.
    "deep-chain": ("regression", _first_tree(_chain), "deeper than 2,048"),
    "category-names-past-their-bytes": ("categorical-names", _model(_offsets_far), "category offsets"),
    "category-far-too-big": ("categorical", _first_tree(lambda tree: tree["categories"].__setitem__(0, 2**30)),
                             "one past 16,777,216"),
    "deleted-node-its-own-parent": ("pruned", _self_parent, "parents loop"),
    # Review 90: counts XGBoost reads unsigned and sizes buffers by at load (it took 6 GB and never returned).
    "outputs-minus-one": ("regression", _params("num_target", "-1"), "num_target -1"),
    "classes-two-billion": ("multiclass", _params("num_class", "2000000000"), "num_class 2000000000"),
    "objective-of-other-classes": ("multiclass", _objective_classes("7"), "an objective of 7 classes"),
}  # fmt: skip
# Changes XGBoost's own loader refuses (so it will not pickle them), or that are not worth loading in the test's
# process: checked in a JSON snapshot only.
REFUSED = frozenset({
    "iterations-past-the-trees", "category-segment-far", "deep-chain", "category-names-past-their-bytes",
    "category-far-too-big", "deleted-node-its-own-parent", "outputs-minus-one", "classes-two-billion",
    "objective-of-other-classes",
})  # fmt: skip


FORMS = {b"i": ">b", b"U": ">B", b"I": ">h", b"l": ">i", b"L": ">q", b"d": ">f", b"D": ">d"}


def _key(name: str) -> bytes:
    """A key as XGBoost's UBJSON writes it: its length as an int64, then its bytes."""
    return b"L" + struct.pack(">q", len(name)) + name.encode()


def _patch(key: str, value: int, index: int = 0, occurrence: int = 0) -> Callable[[bytes], bytes]:
    """Set item `index` of the `occurrence`-th array (or the number) named `key` in XGBoost's own UBJSON, in place:
    the bytes keep their size, so the rest is XGBoost's untouched. (XGBoost's loader crashes on some of these, so
    they cannot be made by loading a changed model back.)"""

    def change(blob: bytes) -> bytes:
        at = -1
        for _ in range(occurrence + 1):
            at = blob.index(_key(key), at + 1)
        at += len(_key(key))
        if blob[at : at + 2] == b"[$":
            kind = blob[at + 2 : at + 3]
            assert blob[at + 3 : at + 5] == b"#L"
            count = struct.unpack(">q", blob[at + 5 : at + 13])[0]
            start = at + 13 + (index % count) * struct.calcsize(FORMS[kind])
        else:
            kind, start = blob[at : at + 1], at + 1
        size = struct.calcsize(FORMS[kind])
        return blob[:start] + struct.pack(FORMS[kind], value) + blob[start + size :]

    return change


def _best_iteration(value: str) -> Callable[[bytes], bytes]:
    def change(blob: bytes) -> bytes:
        empty = _key("attributes") + b"{}"
        assert empty in blob
        text = b"SL" + struct.pack(">q", len(value)) + value.encode()
        return blob.replace(empty, _key("attributes") + b"{" + _key("best_iteration") + text + b"}", 1)

    return change


def _trees_of(blob: bytes) -> list[dict[str, Any]]:
    """The trees of a pickled snapshot ({"Config", "Model"}) or of a saved model file (the model alone)."""
    document = Ubjson(blob).document()
    assert isinstance(document, dict)
    model = document.get("Model", document)
    trees: list[dict[str, Any]] = model["learner"]["gradient_booster"]["model"]["trees"]
    return trees


def _first_deleted_tree_parent(blob: bytes) -> bytes:
    """The last node of the first tree pruning left nodes in (deleted, unreachable) given a parent far away."""
    trees = _trees_of(blob)
    number = next(n for n, tree in enumerate(trees) if int(tree["tree_param"]["num_deleted"]))
    return _patch("parents", 100_000_000, index=-1, occurrence=number)(blob)


def _numeric_node_marked_categorical(blob: bytes) -> bytes:
    tree = _trees_of(blob)[0]
    node = next(n for n, left in enumerate(tree["left_children"]) if left != -1 and tree["split_type"][n] == 0)
    return _patch("split_type", 1, index=node)(blob)


# Review 88's ways past the first version of the check, as changes of XGBoost's own bytes: (the model, the
# change, what the finding says).
HOSTILE_BYTES: dict[str, tuple[str, Callable[[bytes], bytes], str]] = {
    "tree-id-repeated": ("regression", _patch("id", 0, occurrence=1), "an id of 0"),
    "unreachable-node-parent-far": ("pruned", _first_deleted_tree_parent, "parent 100000000"),
    "negative-category": ("categorical", _patch("categories", -1), "negative category"),
    "categorical-split-without-categories": ("categorical", _numeric_node_marked_categorical, "without its"),
    "category-position-far": ("categorical", _patch("sorted_idx", 100_000_000), "category position 100000000"),
    "best-iteration-past-the-rounds": ("regression", _best_iteration("2147483647"), "best_iteration 2147483647"),
    "best-iteration-before-none": ("regression", _best_iteration("-2"), "best_iteration -2"),
    "multi-target-leaf-row-far": ("multi-target", _patch("right_children", 1_000_000, index=-1), "row 1000000"),
}


def _hostile_bytes_file(models: dict[str, Any], name: str, how: str) -> bytes:
    model, change, _ = HOSTILE_BYTES[name]
    blob = bytes(_booster(models[model]).__getstate__()["handle"])
    changed = change(blob)
    assert changed != blob
    with _written_as(changed):
        return save(models[model], how)


@pytest.mark.parametrize("how", SAVES)
@pytest.mark.parametrize("name", sorted(HOSTILE_BYTES))
def test_a_change_of_xgboosts_own_bytes_is_flagged(tmp_path: Path, models: dict[str, Any], name: str, how: str) -> None:
    found = _findings(tmp_path, _hostile_bytes_file(models, name, how), f"{name}.pkl")
    assert RULE in found, sorted(found)
    assert HOSTILE_BYTES[name][2] in found[RULE][1], found[RULE][1]


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


BENIGN = ["regression", "binary", "multiclass", "categorical", "categorical-names", "dart", "linear", "random-forest",
          "ranker", "pruned", "booster", "multi-target", "unfitted"]  # fmt: skip


def test_every_model_is_listed(models: dict[str, Any]) -> None:
    assert sorted(BENIGN) == sorted(models)


@pytest.mark.parametrize("how", SAVES)
@pytest.mark.parametrize("name", BENIGN)
def test_models_as_xgboost_writes_them_pass(tmp_path: Path, models: dict[str, Any], name: str, how: str) -> None:
    found = _findings(tmp_path, save(models[name], how), f"{name}.pkl")
    assert RULE not in found, found[RULE]


@pytest.mark.parametrize("how", SAVES)
def test_a_best_iteration_of_minus_one_passes(tmp_path: Path, models: dict[str, Any], how: str) -> None:
    """-1 (what XGBoost 1 wrote for a booster of no rounds) makes the wrapper ask for rounds up to 0, which XGBoost
    reads as every round: it predicts what the whole model does (checked with XGBoost below)."""
    blob = _best_iteration("-1")(bytes(_booster(models["regression"]).__getstate__()["handle"]))
    with _written_as(blob):
        found = _findings(tmp_path, save(models["regression"], how), "minus-one.pkl")
    assert RULE not in found, found[RULE]
    booster = _booster(models["regression"]).copy()
    booster.set_attr(best_iteration="-1")
    rows = xgb.DMatrix(np.random.default_rng(0).normal(size=(20, booster.num_features())).astype(np.float32))
    assert booster.best_iteration == -1
    assert np.array_equal(booster.predict(rows, iteration_range=(0, booster.best_iteration + 1)), booster.predict(rows))


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


def test_a_key_given_twice_is_refused(models: dict[str, Any]) -> None:
    """XGBoost keeps the first of a repeated key, a dict the last (review 88 put a bad copy first): refused."""
    first = b"{L\x00\x00\x00\x00\x00\x00\x00\x01aSL\x00\x00\x00\x00\x00\x00\x00\x011"
    twice = first + b"L\x00\x00\x00\x00\x00\x00\x00\x01aSL\x00\x00\x00\x00\x00\x00\x00\x012}"
    assert xgboost_model.Ubjson(first + b"}").document() == {"a": "1"}
    with pytest.raises(Malformed, match="given twice"):
        xgboost_model.Ubjson(twice).document()
    text = json.dumps(_snapshot(models["regression"])).encode()
    doubled = text.replace(b'"num_feature": "5"', b'"num_feature": "100", "num_feature": "5"', 1)
    assert doubled != text
    with pytest.raises(Malformed, match="given twice"):
        xgboost_model.check(doubled)


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


@pytest.mark.parametrize("name", [
    "left-child-far", "right-child-negative", "split-feature-far", "child-cycle", "unreachable-node-parent-far",
    "tree-id-repeated", "best-iteration-past-the-rounds", "multi-target-leaf-row-far",
])  # fmt: skip
def test_xgboost_goes_out_of_bounds(tmp_path: Path, models: dict[str, Any], name: str) -> None:
    """What the rule is for: xgboost's own load or predict() of the file is killed by a signal."""
    path = tmp_path / f"{name}.pkl"
    path.write_bytes(_hostile_bytes_file(models, name, "pickle4") if name in HOSTILE_BYTES
                     else _hostile_file(models, name, "pickle4"))  # fmt: skip
    run = subprocess.run([sys.executable, "-c", PREDICT, str(path)], capture_output=True, text=True, timeout=300)
    assert run.returncode < 0, (run.returncode, run.stdout, run.stderr[-500:])
