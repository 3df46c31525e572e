"""LightGBM models whose text leads LightGBM's compiled loader or predictor out of bounds (WS-PKL-060).

Models are fitted with lightgbm at test time and saved the ways users save them; hostile ones change one number of
the model text the pickle holds (the Booster's `_handle`), as a writer of a hostile file would. The loader runs
show that each kind of change is real: lightgbm's own load or predict dies by a signal or never returns.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.scanning import scan_bytes
from tests.helpers.sklearn_native import SAVES, save
from wscan.model import Severity
from wscan.scanners import lightgbm_model

lgb = pytest.importorskip("lightgbm")
np = pytest.importorskip("numpy")

RULE = "WS-PKL-060"
ROWS = 300


def _data(features: int = 6) -> tuple[Any, Any]:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(ROWS, features))
    return x, x[:, 0] + 0.5 * x[:, 1]


def _models() -> dict[str, Any]:
    """One model of each shape LightGBM writes: trees of one leaf, categorical splits, linear leaves, several
    trees per iteration, other boosting modes, the Booster alone and a model never fitted."""
    import pandas as pd

    x, y = _data()
    rng = np.random.default_rng(6)
    frame = pd.DataFrame(x, columns=list("abcdef"))
    frame["colour"] = pd.Categorical(rng.integers(0, 20, ROWS))
    linear_x = rng.normal(size=(2000, 4))
    linear_y = np.where(linear_x[:, 0] > 0, 3 * linear_x[:, 1], -2 * linear_x[:, 2])
    quiet = {"verbose": -1, "n_estimators": 4, "num_leaves": 6}
    return {
        "regression": lgb.LGBMRegressor(**quiet).fit(x, y),
        "binary": lgb.LGBMClassifier(**quiet).fit(x, y > 0),
        "multiclass": lgb.LGBMClassifier(**quiet).fit(x, np.digitize(y, [-0.5, 0.5])),
        "multiclass-ova": lgb.LGBMClassifier(objective="multiclassova", **quiet).fit(x, np.digitize(y, [-0.5, 0.5])),
        "categorical": lgb.LGBMRegressor(min_data_per_group=5, cat_smooth=1, **quiet).fit(
            frame, y + frame["colour"].cat.codes % 3
        ),
        "linear": lgb.LGBMRegressor(linear_tree=True, **quiet).fit(linear_x, linear_y),
        "one-leaf-trees": lgb.LGBMRegressor(min_child_samples=ROWS * 2, **quiet).fit(x, y),
        "dart": lgb.LGBMRegressor(boosting_type="dart", **quiet).fit(x, y),
        "random-forest": lgb.LGBMRegressor(boosting_type="rf", subsample=0.8, subsample_freq=1, **quiet).fit(x, y),
        "ranker": lgb.LGBMRanker(**quiet).fit(x, np.digitize(y, [-1, 0, 1]), group=[100, 100, 100]),
        "booster": lgb.train({"verbose": -1, "num_leaves": 5}, lgb.Dataset(x, y), num_boost_round=3),
        "no-trees": lgb.Booster({"verbose": -1}, lgb.Dataset(x, y)),  # `tree_sizes=` and no tree (review 87)
        "unfitted": lgb.LGBMClassifier(),
        **_continued(x, y),
    }


def _continued(x: Any, y: Any) -> dict[str, Any]:
    """Models trained on from another one (`init_model`): each keeps an _InnerPredictor of it, which owns the C
    Booster when the model came from a file."""
    first = lgb.train({"verbose": -1, "num_leaves": 5}, lgb.Dataset(x, y), num_boost_round=2)
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder) / "first.txt"
        first.save_model(saved)
        from_file = lgb.train({"verbose": -1}, lgb.Dataset(x, y), num_boost_round=2, init_model=saved)
    return {
        "continued": lgb.train({"verbose": -1}, lgb.Dataset(x, y), num_boost_round=2, init_model=first),
        "continued-from-file": from_file,
        "continued-wrapper": lgb.LGBMRegressor(verbose=-1, n_estimators=2).fit(x, y, init_model=first),
    }


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    return _models()


def _text(model: Any) -> str:
    booster = model if isinstance(model, lgb.Booster) else model.booster_
    return str(booster.model_to_string())


@contextmanager
def _written_as(text: str) -> Iterator[None]:
    """Pickling a Booster writes `text` as its model, as a hostile writer would."""
    original = lgb.Booster.__getstate__

    def hostile_state(self: Any) -> dict[str, Any]:
        state = original(self)
        state["_handle"] = text
        return dict(state)

    lgb.Booster.__getstate__ = hostile_state
    try:
        yield
    finally:
        lgb.Booster.__getstate__ = original


def _sub(pattern: str, replacement: str | Callable[[re.Match[str]], str], count: int = 1) -> Callable[[str], str]:
    def change(text: str) -> str:
        changed, made = re.subn(pattern, replacement, text, count=count, flags=re.MULTILINE)
        assert made, pattern
        return changed

    return change


# Each: (the model it changes, the change, what the finding says). tree_sizes are rewritten to fit the change, as
# a careful writer would, except where they are the change.
HOSTILE: dict[str, tuple[str, Callable[[str], str], str]] = {
    "left-child-far": ("regression", _sub(r"^left_child=\d+", "left_child=2000000"), "child 2000000 of"),
    "leaf-far": ("regression", _sub(r"^left_child=(\S+) (-?\d+)", r"left_child=\1 -2000000"), "leaf 1999999 of"),
    "right-child-negative-far": ("binary", _sub(r"^right_child=(-?\d+)", "right_child=-99"), "leaf 98 of"),
    "split-feature-far": ("regression", _sub(r"^split_feature=\d+", "split_feature=100000000"), "feature 100000000"),
    "split-feature-negative": ("binary", _sub(r"^split_feature=\d+", "split_feature=-1"), "feature -1 of"),
    "child-cycle": ("regression", _sub(r"^left_child=\d+", "left_child=0"), "node 0 reached twice"),
    "node-shared": ("regression", _sub(r"^right_child=(-?\d+) (-?\d+)", r"right_child=1 1"), "reached twice"),
    "tree-sizes-far": ("regression", _sub(r"^tree_sizes=\d+", "tree_sizes=99999999"), "tree_sizes"),
    "tree-sizes-inside-a-tree": (
        "regression", _sub(r"^tree_sizes=(\d+)", lambda m: f"tree_sizes={int(m[1]) - 9}"), "where no tree starts"
    ),
    "no-trees-per-iteration": (
        "multiclass", _sub(r"^num_tree_per_iteration=\d+", "num_tree_per_iteration=0"), "num_tree_per_iteration 0"
    ),
    "fewer-classes-than-trees-per-iteration": (
        "multiclass", _sub(r"^num_class=\d+", "num_class=1"), "num_class 1 below"
    ),
    "objective-converting-more-classes": (
        "multiclass", _sub(r"num_class:3", "num_class:3000000"), "converting 3000000 outputs"
    ),
    "category-boundaries-past-the-words": (
        "categorical", _sub(r"^cat_boundaries=0 (\d+)", r"cat_boundaries=0 900"), "cat_boundaries"
    ),
    "linear-leaf-feature-far": (
        "linear", _sub(r"^leaf_features=(\d+)", "leaf_features=4000000"), "feature 4000000"
    ),
    "linear-leaf-more-features-than-listed": (
        "linear", _sub(r"^num_features=(\d+)", lambda m: f"num_features={int(m[1]) + 5}"), "values of leaf_features"
    ),
    "tree-running-past-the-text": ("regression", lambda text: text[: text.index("end of trees")].rstrip("\n"),
                                   "end of the text"),
    "tree-line-without-equals": ("regression", _sub(r"^is_linear=0$", "is_linear"), "without '='"),
    # Review 87: numbers and keys LightGBM reads otherwise than Python would.
    "header-line-starting-with-equals": (
        "multiclass", _sub(r"^(num_tree_per_iteration=3)$", "\\1\n=num_tree_per_iteration=0"),
        "num_tree_per_iteration 0",
    ),
    "objective-token-starting-with-colon": (
        "multiclass", _sub(r"num_class:3", "num_class:3 :num_class:3000000"), "converting 3000000 outputs"
    ),
    "non-ascii-digit": (
        "multiclass", _sub(r"^num_tree_per_iteration=3", "num_tree_per_iteration=\u0663"), "no integer LightGBM writes"
    ),
    "form-feed-before-a-number": ("regression", _sub(r"^num_leaves=(\d+)", "num_leaves=\x0c\\1"), "no integer"),
    "integer-wrapping-to-zero": (
        "multiclass", _sub(r"^num_tree_per_iteration=3", "num_tree_per_iteration=4294967296"), "no integer"
    ),
    # Review 89: lists of another length (the parallel loader's stop is std::terminate), a linear stump without its
    # split lists, a chain of a tree.
    "threshold-short": ("regression", _sub(r"^threshold=(\S+) .*$", "threshold=\\1"), "values of threshold"),
    "leaf-weight-long": ("regression", _sub(r"^leaf_weight=(.*)$", "leaf_weight=\\1 1 1 1"), "values of leaf_weight"),
    "linear-stump-without-split-lists": ("one-leaf-trees", lambda text: _linear_stump(text), "no split_feature"),
    "deep-chain": ("regression", lambda text: _chain(text), "deeper than 2,048"),
    "categorical-bit-without-category-sets": (
        "regression", _sub(r"^decision_type=(\d+)", "decision_type=1"), "categorical split in a tree of no category"
    ),
}  # fmt: skip


def _linear_stump(text: str) -> str:
    """The first one-leaf tree made linear, its (empty) split lists left out: the loader then reads them."""
    tree = text.index("Tree=0")
    end = text.index("\n\n", tree)
    body = text[tree:end].replace("\nsplit_feature=", "\nx=", 1).replace("\nleaf_weight=\n", "\nleaf_weight=1\n")
    body = body.replace(
        "is_linear=0", "is_linear=1\nleaf_const=0\nnum_features=0\nleaf_features=\nleaf_coeff="
    )
    return text[:tree] + body + text[end:]


def _chain(text: str, depth: int = 3000) -> str:
    """Tree 0 rebuilt as a chain `depth` deep: node i sends one leaf left and goes on to node i + 1."""
    leaves = depth + 1
    right = [str(i + 1) for i in range(depth - 1)] + [str(~depth)]
    lines = [
        "Tree=0", f"num_leaves={leaves}", "num_cat=0", "split_feature=" + " ".join(["0"] * depth),
        "threshold=" + " ".join(["0.5"] * depth), "decision_type=" + " ".join(["2"] * depth),
        "left_child=" + " ".join(str(~i) for i in range(depth)), "right_child=" + " ".join(right),
        "leaf_value=" + " ".join(["0.1"] * leaves), "is_linear=0", "shrinkage=1",
    ]  # fmt: skip
    tree = text.index("Tree=0")
    end = text.index("\n\n", tree)
    return text[:tree] + "\n".join(lines) + text[end:]


def _resized(text: str) -> str:
    """tree_sizes as LightGBM writes them for this text: the bytes from each tree's line to the next tree's, the
    last to `end of trees`."""
    starts = [m.start() for m in re.finditer(r"^Tree=", text, flags=re.MULTILINE)]
    if "tree_sizes=" not in text or not starts:
        return text
    ends = [*starts[1:], text.find("end of trees") if "end of trees" in text else len(text)]
    sizes = " ".join(str(len(text[a:b].encode())) for a, b in zip(starts, ends, strict=True))
    return re.sub(r"^tree_sizes=.*$", f"tree_sizes={sizes}", text, count=1, flags=re.MULTILINE)


def _categorical_far(text: str) -> str:
    """A categorical split (decision_type with bit 0) given a bitset index past num_cat."""
    tree = text.index("Tree=0")
    kinds_at = text.index("decision_type=", tree)
    kinds = text[kinds_at : text.index("\n", kinds_at)].removeprefix("decision_type=").split(" ")
    node = next(i for i, kind in enumerate(kinds) if int(kind) & 1)
    at = text.index("threshold=", tree)
    end = text.index("\n", at)
    values = text[at:end].removeprefix("threshold=").split(" ")
    values[node] = "7000"
    return text[:at] + "threshold=" + " ".join(values) + text[end:]


HOSTILE["category-set-far"] = ("categorical", _categorical_far, "category set 7000")


def _hostile_text(models: dict[str, Any], name: str) -> str:
    model, change, _ = HOSTILE[name]
    text = _text(models[model])
    changed = change(text) if name.startswith("tree-sizes") else _resized(change(text))
    assert changed != text
    return changed


def _findings(tmp_path: Path, blob: bytes, name: str) -> dict[str, tuple[Severity, str]]:
    return {f.rule_id: (f.severity, f.message) for f in scan_bytes(tmp_path, blob, name).findings}


def _hostile_file(models: dict[str, Any], name: str, how: str) -> bytes:
    with _written_as(_hostile_text(models, name)):
        return save(models[HOSTILE[name][0]], how)


BENIGN = ["regression", "binary", "multiclass", "multiclass-ova", "categorical", "linear", "one-leaf-trees", "dart",
          "random-forest", "ranker", "booster", "no-trees", "unfitted", "continued", "continued-from-file",
          "continued-wrapper"]  # fmt: skip


def test_every_model_is_listed(models: dict[str, Any]) -> None:
    assert sorted(BENIGN) == sorted(models)


@pytest.mark.parametrize("how", SAVES)
@pytest.mark.parametrize("name", BENIGN)
def test_models_as_lightgbm_writes_them_pass(tmp_path: Path, models: dict[str, Any], name: str, how: str) -> None:
    found = _findings(tmp_path, save(models[name], how), f"{name}.pkl")
    assert RULE not in found, found[RULE]


@pytest.mark.parametrize("how", SAVES)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_number_out_of_bounds_is_flagged(tmp_path: Path, models: dict[str, Any], name: str, how: str) -> None:
    found = _findings(tmp_path, _hostile_file(models, name, how), f"{name}.pkl")
    assert RULE in found, sorted(found)
    assert found[RULE][0] == Severity.HIGH
    assert "lightgbm.basic.Booster" in found[RULE][1]
    assert HOSTILE[name][2] in found[RULE][1]


@pytest.mark.parametrize(("where", "value"), [("n_jobs", 100_000), ("num_threads", 100_000), ("n_jobs", 2.5)])
def test_a_wrapper_asking_for_too_many_threads_is_flagged(
    tmp_path: Path, models: dict[str, Any], where: str, value: object
) -> None:
    """LightGBM's wrapper hands OpenMP the thread count its state asks for: n_jobs=100000 crashed predict (review
    89). By the attribute or by an alias among its other parameters; a number that is no integer is unverified."""
    model = copy.deepcopy(models["regression"])
    if where == "n_jobs":
        model.n_jobs = value
    else:
        model.set_params(**{where: value})
    found = _findings(tmp_path, save(model, "pickle4"), "threads.pkl")
    assert "thread count" in found[RULE][1], found
    model.set_params(n_jobs=-1, **({} if where == "n_jobs" else {where: 4}))
    assert RULE not in _findings(tmp_path, save(model, "pickle4"), "threads-ok.pkl")


def test_the_checks_read_the_text_as_the_loader_does(models: dict[str, Any]) -> None:
    """Past a NUL the C library sees nothing; a model it cannot read is unverified, never passed."""
    text = _resized(_text(models["regression"])).encode()
    assert text == _text(models["regression"]).encode()  # the sizes as LightGBM writes them
    lightgbm_model.check(text)
    lightgbm_model.check(text + b"\0Tree=9\nnum_leaves=0\n")  # what the loader never sees
    with pytest.raises(lightgbm_model.Malformed, match="no max_feature_idx"):
        lightgbm_model.check(re.sub(rb"max_feature_idx=\d+\n", b"", text))
    with pytest.raises(lightgbm_model.Malformed, match="no integer"):
        lightgbm_model.check(_resized(re.sub(r"left_child=\d+", "left_child=1e3", text.decode(), count=1)).encode())
    with pytest.raises(lightgbm_model.Malformed, match="values of leaf_value"):
        lightgbm_model.check(_resized(re.sub(r"num_leaves=\d+", "num_leaves=4000", text.decode(), count=1)).encode())


def test_a_state_that_computes_its_model_is_unverified(tmp_path: Path, models: dict[str, Any]) -> None:
    """The model text made by a call (`str.join` on pieces) cannot be read: reported, not passed."""
    blob = save(models["regression"], "pickle2")  # no frames: bytes can be swapped in place
    text = _text(models["regression"]).encode()
    at = blob.index(text)
    assert blob[at - 5 : at - 4] == b"X"  # BINUNICODE and its length
    # The model text becomes the result of `builtins.str(<bytes>, 'utf-8')`, a call the stream computes.
    call = b"cbuiltins\nstr\n(B" + len(text).to_bytes(4, "little") + text + b"X\x05\x00\x00\x00utf-8tR"
    hostile = blob[: at - 5] + call + blob[at + len(text) :]
    found = _findings(tmp_path, hostile, "computed.pkl")
    assert RULE in found, sorted(found)
    assert "cannot check" in found[RULE][1]


LOAD_AND_PREDICT = """
import pickle, sys
import numpy as np
model = pickle.load(open(sys.argv[1], "rb"))
print("loaded", flush=True)
x = np.random.default_rng(1).normal(size=(2000, 6))
for _ in range(3):
    model.predict(x)
print("survived")
"""


@pytest.mark.parametrize("name", [
    "left-child-far", "split-feature-far", "tree-sizes-far", "no-trees-per-iteration",
    "fewer-classes-than-trees-per-iteration", "objective-converting-more-classes", "header-line-starting-with-equals",
    "non-ascii-digit", "objective-token-starting-with-colon",
])  # fmt: skip
def test_lightgbm_goes_out_of_bounds(tmp_path: Path, models: dict[str, Any], name: str) -> None:
    """What the rule is for: lightgbm's own load or predict() of the file is killed by a signal."""
    path = tmp_path / f"{name}.pkl"
    path.write_bytes(_hostile_file(models, name, "pickle4"))
    run = subprocess.run([sys.executable, "-c", LOAD_AND_PREDICT, str(path)], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode < 0, (run.returncode, run.stdout, run.stderr[-500:])


def test_a_cycle_never_returns_from_predict(tmp_path: Path, models: dict[str, Any]) -> None:
    path = tmp_path / "cycle.pkl"
    path.write_bytes(_hostile_file(models, "child-cycle", "pickle4"))
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", LOAD_AND_PREDICT, str(path)], capture_output=True, timeout=20)


@contextmanager
def _predictor_state(state: Callable[[dict[str, Any]], object]) -> Iterator[None]:
    """Pickling an _InnerPredictor writes `state` of its real one, as a hostile writer would."""
    predictor = lgb.basic._InnerPredictor
    original = predictor.__getstate__
    predictor.__getstate__ = lambda self: state(original(self))
    try:
        yield
    finally:
        predictor.__getstate__ = original


HANDLES = {  # what a writer makes the predictor's `__del__` free: a handle it never pickles, in its dict or slots
    "handle-in-dict": lambda state: {**state, "_InnerPredictor__is_manage_handle": True, "_handle": 0x12345678},
    "old-handle-in-dict": lambda state: {**state, "_InnerPredictor__is_manage_handle": True, "handle": 0x12345678},
    "handle-in-slots": lambda state: ({**state, "_InnerPredictor__is_manage_handle": True}, {"_handle": 0x12345678}),
}


@pytest.mark.parametrize("how", SAVES)
@pytest.mark.parametrize("name", sorted(HANDLES))
def test_a_predictor_given_a_handle_is_flagged(tmp_path: Path, models: dict[str, Any], name: str, how: str) -> None:
    with _predictor_state(HANDLES[name]):
        blob = save(models["continued-from-file"], how)
    found = _findings(tmp_path, blob, f"{name}.pkl")
    assert RULE in found, sorted(found)
    assert "lightgbm.basic._InnerPredictor" in found[RULE][1]
    assert "handle attribute" in found[RULE][1]


def test_a_predictor_given_a_handle_crashes_its_loader(tmp_path: Path, models: dict[str, Any]) -> None:
    """What the check is for: the predictor's `__del__` hands the number to `LGBM_BoosterFree`."""
    path = tmp_path / "handle.pkl"
    with _predictor_state(HANDLES["handle-in-dict"]):
        path.write_bytes(save(models["continued"], "pickle4"))
    run = subprocess.run([sys.executable, "-c", "import gc, pickle, sys; pickle.load(open(sys.argv[1], 'rb'));"
                          "gc.collect(); print('survived')", str(path)], capture_output=True, text=True, timeout=300)
    assert run.returncode < 0, (run.returncode, run.stdout, run.stderr[-500:])


def test_a_predictor_made_by_its_constructor_is_flagged(tmp_path: Path, models: dict[str, Any]) -> None:
    """Its `__init__` asks the C library about the handle it is given: state-only, like the Booster."""
    predictor = lgb.basic._InnerPredictor
    predictor.__reduce__ = lambda self: (predictor, (0x12345678, None, {}, True))  # type: ignore[method-assign]
    try:
        blob = save(models["continued"], "pickle4")
    finally:
        del predictor.__reduce__
    found = _findings(tmp_path, blob, "called.pkl")
    assert any("lightgbm.basic._InnerPredictor" in message for _, message in found.values()), found
    assert max(severity for severity, _ in found.values()) >= Severity.HIGH
