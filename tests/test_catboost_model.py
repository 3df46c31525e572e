"""CatBoost models (`save_model`'s `.cbm`, a pickled model's `__model`), checked for the numbers CatBoost's loader
and predictor follow unchecked (WS-PKL-060 in a pickle, WS-FILE-018 in a file): real models of every kind pass,
saved six ways and as files, and each hostile change is flagged, one a crash of catboost's own load or predict
proves."""

from __future__ import annotations

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
from wscan.scanners import catboost_model

cb = pytest.importorskip("catboost")
np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

PICKLED = "WS-PKL-060"
FILE = "WS-FILE-018"
ROWS = 200
DATA = Path(__file__).parent / "data" / "catboost"


def _frame() -> Any:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(ROWS, 4))
    frame = pd.DataFrame(x, columns=list("abcd"))
    frame["kind"] = rng.choice(list("pqrstu"), ROWS)
    frame["shade"] = rng.choice(list("xyz"), ROWS)
    return frame


def _models() -> dict[str, Any]:
    """One model of each shape CatBoost writes: symmetric, depthwise and lossguide trees, several outputs,
    categorical features by counters (their tables after the core) and one-hot, ranking, never fitted."""
    frame = _frame()
    x = frame[list("abcd")].to_numpy()
    y = (x[:, 0] > 0).astype(int)
    classes = np.digitize(x[:, 0], [-0.5, 0.5])
    small = {"iterations": 4, "verbose": False, "allow_writing_files": False, "thread_count": 1}
    cats = {**small, "iterations": 8, "cat_features": ["kind", "shade"]}
    by_kind = frame["kind"].isin(["p", "q", "r"]).to_numpy().astype(int)  # targets the counters must explain
    kind_classes = frame["kind"].map({"p": 0, "q": 0, "r": 1, "s": 1, "t": 2, "u": 2}).to_numpy()
    return {
        "regression": cb.CatBoostRegressor(**small, depth=3).fit(x, x[:, 1]),
        "binary": cb.CatBoostClassifier(**small, depth=3).fit(x, y),
        "multiclass": cb.CatBoostClassifier(**small, depth=3, loss_function="MultiClass").fit(x, classes),
        "multi-target": cb.CatBoostRegressor(**small, depth=3, loss_function="MultiRMSE").fit(x, x[:, :2]),
        "counters": cb.CatBoostClassifier(**cats, depth=3).fit(frame, by_kind ^ y),
        "counters-multiclass": cb.CatBoostClassifier(**cats, depth=3, loss_function="MultiClass").fit(
            frame, kind_classes
        ),
        "counters-regression": cb.CatBoostRegressor(**cats, depth=3).fit(frame, by_kind + x[:, 1]),
        "one-hot": cb.CatBoostClassifier(**cats, depth=3, one_hot_max_size=10).fit(frame, by_kind),
        "depthwise": cb.CatBoostRegressor(**small, depth=4, grow_policy="Depthwise").fit(x, x[:, 1]),
        "depthwise-multiclass": cb.CatBoostClassifier(
            **small, depth=3, grow_policy="Depthwise", loss_function="MultiClass"
        ).fit(x, classes),
        "lossguide": cb.CatBoostRegressor(**small, grow_policy="Lossguide", max_leaves=8).fit(x, x[:, 1]),
        "lossguide-counters": cb.CatBoostClassifier(**cats, grow_policy="Lossguide").fit(frame, by_kind),
        "ranker": cb.CatBoostRanker(**small, depth=3).fit(x, x[:, 1], group_id=np.repeat(np.arange(20), 10)),
        "many-borders": cb.CatBoostRegressor(**small, depth=3, border_count=1024).fit(
            np.random.default_rng(4).normal(size=(3000, 2)), np.random.default_rng(5).normal(size=3000)
        ),
        "unfitted": cb.CatBoostClassifier(),
    }


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    return _models()


def _blob(model: Any) -> bytes:
    return bytes(model._serialize_model())


@contextmanager
def _written_as(blob: bytes) -> Iterator[None]:
    """Pickling a CatBoost model writes `blob` as its model, as a hostile writer would."""
    original = cb.CatBoost.__getstate__

    def hostile_state(self: Any) -> dict[str, Any]:
        state = original(self)
        state["__model"] = blob
        return dict(state)

    cb.CatBoost.__getstate__ = hostile_state
    try:
        yield
    finally:
        cb.CatBoost.__getstate__ = original


# Where the fields of the model's core are (TModelTrees' slots, as catboost/libs/model/flatbuffers names them).
SPLITS, SIZES, STARTS, CTRS, LEAVES, STEPS, LEAF_IDS = 1, 2, 3, 7, 8, 10, 11


def _trees(blob: bytes) -> tuple[Any, int]:
    """The model's TModelTrees table and where its core starts in the blob."""
    core = blob[8 : 8 + struct.unpack_from("<I", blob, 4)[0]]
    trees = catboost_model._root(core).table(1)
    assert trees is not None
    return trees, 8


def _element(blob: bytes, slot: int, index: int, width: int = 4) -> int:
    """Where element `index` of the vector in slot `slot` of the trees lies in the blob."""
    trees, base = _trees(blob)
    field = trees._field(slot)
    assert field is not None
    start = catboost_model._Table.offset(trees.buf, field)
    assert index < struct.unpack_from("<I", trees.buf, start)[0]
    return base + start + 4 + index * width


def _leaves_far(blob: bytes) -> bytes:
    """Every node of asymmetric trees that holds a leaf (a step of 0) given a leaf far past the leaf values."""
    trees, _ = _trees(blob)
    steps = np.frombuffer(trees.raw(STEPS, 4) or b"", dtype="<u2").reshape(-1, 2)
    for node in np.flatnonzero((steps == 0).any(axis=1)).tolist():
        blob = _set(LEAF_IDS, node, 0x7FFFFFF0, "<I")(blob)
    return blob


def _put(blob: bytes, at: int, form: str, value: int) -> bytes:
    changed = bytearray(blob)
    struct.pack_into(form, changed, at, value)
    return bytes(changed)


def _set(slot: int, index: int, value: int, form: str = "<i", width: int = 4) -> Callable[[bytes], bytes]:
    return lambda blob: _put(blob, _element(blob, slot, index, width), form, value)


def _count(slot: int, change: Callable[[int], int]) -> Callable[[bytes], bytes]:
    """The vector's element count changed (its elements left where they are)."""

    def apply(blob: bytes) -> bytes:
        at = _element(blob, slot, 0) - 4
        return _put(blob, at, "<I", change(struct.unpack_from("<I", blob, at)[0]))

    return apply


def _counter_tables(change: Callable[[bytes, int], bytes]) -> Callable[[bytes], bytes]:
    """A change of every counter table, given the blob and where that table's flatbuffer starts."""

    def apply(blob: bytes) -> bytes:
        at = 8 + struct.unpack_from("<I", blob, 4)[0]  # past the core: the table count, then each table's size
        for _ in range(struct.unpack_from("<I", blob, at)[0]):
            at += 4
            blob = change(blob, at + 4)
            at += struct.unpack_from("<I", blob, at)[0]
        return blob

    return apply


def _buckets(blob: bytes, start: int) -> range:
    """Where the 12-byte buckets (hash, index) of the counter table starting at `start` lie in the blob."""
    size = struct.unpack_from("<I", blob, start - 4)[0]
    table = catboost_model._root(blob[start : start + size])
    field = table._field(1)
    assert field is not None
    vector = catboost_model._Table.offset(table.buf, field)
    buckets = start + vector + 4
    return range(buckets, buckets + struct.unpack_from("<I", blob, start + vector)[0], 12)


def _buckets_far(blob: bytes, start: int) -> bytes:
    """Every used bucket of a counter table pointed far past the table's counts."""
    for at in _buckets(blob, start):
        if struct.unpack_from("<Q", blob, at)[0] != catboost_model.EMPTY_BUCKET:
            blob = _put(blob, at + 8, "<I", 0x7FFFFFF0)
    return blob


def _no_empty_bucket(blob: bytes, start: int) -> bytes:
    changed = bytearray(blob)
    for number, at in enumerate(_buckets(blob, start)):
        if struct.unpack_from("<Q", blob, at)[0] == catboost_model.EMPTY_BUCKET:
            struct.pack_into("<QI", changed, at, 0x5151515151515151 + number, 0)
    return bytes(changed)


def _counter_table_count(blob: bytes) -> bytes:
    """The count of counter tables made 2**32 - 1: catboost 1.2.10 reserved for them until it ran out of memory."""
    return _put(blob, 8 + struct.unpack_from("<I", blob, 4)[0], "<I", 0xFFFFFFFF)


def _last_column_far(blob: bytes) -> bytes:
    """The last float feature's column made 10**8: catboost 1.2.10 took 10 GB sizing each row by it."""
    trees, base = _trees(blob)
    feature = list(trees.tables(5))[-1]
    field = feature._field(2)
    assert field is not None
    return _put(blob, base + field, "<i", 10**8)


def _counter_classes_negative(blob: bytes) -> bytes:
    """Every counter's stored target class made -2**31+1 (review 91: predict read 8 GB before the counts)."""
    trees, base = _trees(blob)
    changed = 0
    for ctr_feature in trees.tables(CTRS):
        ctr = ctr_feature.table(0)
        field = ctr._field(1) if ctr is not None else None
        if field is not None:  # a class of 0, the default, is left out of the file
            blob = _put(blob, base + field, "<i", -0x7FFFFFFF)
            changed += 1
    assert changed
    return blob


def _without_parts(blob: bytes) -> bytes:
    """The core's list of model parts emptied: the counter tables are never loaded."""
    core = blob[8 : 8 + struct.unpack_from("<I", blob, 4)[0]]
    root = catboost_model._root(core)
    field = root._field(3)
    assert field is not None
    return _put(blob, 8 + catboost_model._Table.offset(core, field), "<I", 0)


# name: (model, change, what the finding says)
HOSTILE: dict[str, tuple[str, Callable[[bytes], bytes], str]] = {
    "split-far": ("regression", _set(SPLITS, 0, 32767), "a split on binary feature"),
    "split-negative": ("binary", _set(SPLITS, 0, -2147483648), "a split on binary feature"),
    "tree-deeper": ("regression", _set(SIZES, 0, 31), "symmetric tree of depth 31"),
    "tree-deeper-than-catboost-trains": ("regression", _set(SIZES, 0, 17), "symmetric tree of depth 17"),
    "tree-size-negative": ("regression", _set(SIZES, 0, -1), "symmetric tree of depth -1"),
    "start-offset-moved": ("multiclass", _set(STARTS, 1, 1000), "start offsets"),
    "leaf-values-cut": ("regression", _count(LEAVES, lambda n: n - 8), "leaf"),
    "no-leaf-values": ("counters", _count(LEAVES, lambda n: 0), "leaf"),
    "depthwise-step-far": ("depthwise", _set(STEPS, 0, 0xFFFF, "<H", 2), "outside its tree"),
    "depthwise-leaf-far": ("depthwise", _leaves_far, "past the"),
    "lossguide-split-far": ("lossguide", _set(SPLITS, 0, 4096), "a split on binary feature"),
    "counter-bucket-far": ("counters", _counter_tables(_buckets_far), "past the table's"),
    "counter-table-full": ("counters", _counter_tables(_no_empty_bucket), "without an empty bucket"),
    "counter-tables-left-out": ("counters", _without_parts, "without counter tables"),
    "counter-table-count-huge": ("counters", _counter_table_count, "counter tables in"),
    "counter-class-negative": ("counters-multiclass", _counter_classes_negative, "a counter of class -2147483647"),
    "column-far": ("counters", _last_column_far, "column 100000000"),
    "depthwise-root-made-a-leaf": ("depthwise", _set(STEPS, 0, 0, "<H", 2), "not each the child of one node"),
}


def _findings(tmp_path: Path, blob: bytes, name: str) -> dict[str, tuple[Severity, str]]:
    return {f.rule_id: (f.severity, f.message) for f in scan_bytes(tmp_path, blob, name).findings}


def _hostile(models: dict[str, Any], name: str) -> bytes:
    model, change, _ = HOSTILE[name]
    blob = _blob(models[model])
    changed = change(blob)
    assert changed != blob
    return changed


BENIGN = ["regression", "binary", "multiclass", "multi-target", "counters", "counters-multiclass",
          "counters-regression", "one-hot", "depthwise", "depthwise-multiclass", "lossguide", "lossguide-counters",
          "ranker", "many-borders", "unfitted"]  # fmt: skip


def test_every_model_is_listed(models: dict[str, Any]) -> None:
    assert sorted(BENIGN) == sorted(models)


@pytest.mark.parametrize("how", SAVES)
@pytest.mark.parametrize("name", BENIGN)
def test_models_as_catboost_pickles_them_pass(tmp_path: Path, models: dict[str, Any], name: str, how: str) -> None:
    found = _findings(tmp_path, save(models[name], how), f"{name}.pkl")
    assert not {rule: finding for rule, finding in found.items() if finding[0] >= Severity.MEDIUM}


@pytest.mark.parametrize("name", [name for name in BENIGN if name != "unfitted"])
def test_models_as_catboost_saves_them_pass(tmp_path: Path, models: dict[str, Any], name: str) -> None:
    path = tmp_path / f"{name}.cbm"
    models[name].save_model(str(path))
    found = _findings(tmp_path, path.read_bytes(), f"{name}.cbm")
    assert not found, found


@pytest.mark.parametrize("path", sorted(DATA.glob("*.cbm")), ids=lambda path: path.name)
def test_the_stored_models_pass(path: Path) -> None:
    catboost_model.check(path.read_bytes())


@pytest.mark.parametrize("how", ["pickle2", "pickle5", "joblib-z"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_pickled_model_out_of_bounds_is_flagged(tmp_path: Path, models: dict[str, Any], name: str, how: str) -> None:
    with _written_as(_hostile(models, name)):
        blob = save(models[HOSTILE[name][0]], how)
    found = _findings(tmp_path, blob, f"{name}.pkl")
    assert PICKLED in found, sorted(found)
    assert found[PICKLED][0] == Severity.HIGH
    assert "catboost.core.CatBoost" in found[PICKLED][1]
    assert HOSTILE[name][2] in found[PICKLED][1]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_model_file_out_of_bounds_is_flagged(tmp_path: Path, models: dict[str, Any], name: str) -> None:
    found = _findings(tmp_path, _hostile(models, name), f"{name}.cbm")
    assert FILE in found, sorted(found)
    assert found[FILE][0] == Severity.HIGH
    assert HOSTILE[name][2] in found[FILE][1]


def test_a_part_wscan_does_not_read_is_unverified(tmp_path: Path) -> None:
    """Text features' processing (dictionaries and estimators, another format) is not read: reported, not passed."""
    frame = pd.DataFrame({"a": np.arange(60.0), "words": ["good day", "bad day", "fine"] * 20})
    model = cb.CatBoostClassifier(iterations=2, verbose=False, allow_writing_files=False, thread_count=1,
                                  text_features=["words"]).fit(frame, np.arange(60) % 2)  # fmt: skip
    with pytest.raises(catboost_model.Malformed, match="text or embedding features, whose processing wscan does"):
        catboost_model.check(_blob(model))
    assert PICKLED in _findings(tmp_path, save(model, "pickle4"), "text.pkl")
    # Without its processing part (review 94: feature importances crashed catboost), the same.
    blob = _blob(model)
    core = blob[8 : 8 + struct.unpack_from("<I", blob, 4)[0]]
    field = catboost_model._root(core)._field(3)
    assert field is not None
    cut = _put(blob, 8 + catboost_model._Table.offset(core, field), "<I", 0)[: 8 + len(core)]
    with pytest.raises(catboost_model.Malformed, match="text or embedding features, whose processing wscan does"):
        catboost_model.check(cut)


def test_a_truncated_model_is_flagged() -> None:
    blob = (DATA / "m05_cat.cbm").read_bytes()
    for cut in (3, 7, 100, len(blob) - 100, len(blob) - 1):
        with pytest.raises(catboost_model.Malformed):
            catboost_model.check(blob[:cut])


LOAD_AND_PREDICT = """
import sys
import catboost, numpy as np, pandas as pd
model = catboost.CatBoost()
model.load_model(sys.argv[1])
print("loaded", flush=True)
rng = np.random.default_rng(1)
names = model.feature_names_
cats = set(model.get_cat_feature_indices())
frame = pd.DataFrame({name: rng.choice(list("pqrstuvwxyz"), 500).astype(object) if i in cats else rng.normal(size=500)
                      for i, name in enumerate(names)})
for _ in range(3):
    model.predict(frame)
print("survived")
"""


@pytest.mark.parametrize("name", [
    "split-far", "tree-deeper", "depthwise-leaf-far", "counter-bucket-far", "counter-tables-left-out",
    "counter-class-negative",
])  # fmt: skip
def test_catboost_goes_out_of_bounds(tmp_path: Path, models: dict[str, Any], name: str) -> None:
    """What the rule is for: catboost's own load or predict of the file is killed by a signal."""
    path = tmp_path / f"{name}.cbm"
    path.write_bytes(_hostile(models, name))
    run = subprocess.run([sys.executable, "-c", LOAD_AND_PREDICT, str(path)], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode < 0, (run.returncode, run.stdout, run.stderr[-500:])


def test_a_full_counter_table_never_returns_from_predict(tmp_path: Path, models: dict[str, Any]) -> None:
    path = tmp_path / "full.cbm"
    path.write_bytes(_hostile(models, "counter-table-full"))
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", LOAD_AND_PREDICT, str(path)], capture_output=True, timeout=8)


def test_a_model_trained_without_final_counters_is_flagged(tmp_path: Path) -> None:
    """`final_ctr_computation_mode='Skip'` writes counter features without their tables, and CatBoost's own predict
    crashes on the model it returns (fp sweep 92): flagged, and the crash shown."""
    frame = _frame()
    model = cb.CatBoostClassifier(iterations=8, cat_features=["kind", "shade"], final_ctr_computation_mode="Skip",
                                  thread_count=1, allow_writing_files=False, verbose=False)  # fmt: skip
    model.fit(frame, frame["kind"].isin(["p", "q", "r"]).to_numpy().astype(int))
    with pytest.raises(catboost_model.Malformed, match="final_ctr_computation_mode"):
        catboost_model.check(_blob(model))
    assert PICKLED in _findings(tmp_path, save(model, "pickle4"), "skip.pkl")
    path = tmp_path / "skip.cbm"
    model.save_model(str(path))
    run = subprocess.run([sys.executable, "-c", LOAD_AND_PREDICT, str(path)], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode < 0, (run.returncode, run.stdout, run.stderr[-500:])


def _with_metadata(model: Any, key: str, value: str) -> Any:
    changed = model.copy()  # a model of its own: its metadata is the copy's
    changed.get_metadata()[key] = value
    return changed


NESTED = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize("key", ["params", "class_params"])
def test_metadata_nested_too_deep_is_flagged(tmp_path: Path, models: dict[str, Any], key: str) -> None:
    """CatBoost parses its metadata's JSON with a reader that recurses per level (review 91: 200,000 levels crashed
    load or predict); wscan holds every JSON-like value to 256 levels."""
    model = _with_metadata(models["binary"], key, NESTED)
    with pytest.raises(catboost_model.Malformed, match="nested 200,000 levels"):
        catboost_model.check(_blob(model))
    path = tmp_path / "nested.cbm"
    model.save_model(str(path))
    assert FILE in _findings(tmp_path, path.read_bytes(), "nested.cbm")
    run = subprocess.run([sys.executable, "-c", LOAD_AND_PREDICT, str(path)], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode < 0, (run.returncode, run.stdout, run.stderr[-500:])
    real = catboost_model._root(_blob(models["binary"])[8:])  # CatBoost's own metadata: a few levels
    assert all(catboost_model._nesting(pair.string(1) or b"") < 10 for pair in real.tables(2))


def test_a_class_count_past_the_outputs_is_flagged(models: dict[str, Any]) -> None:
    """`classes_count` makes a class label each: 800,000,000 took over 5 GB at predict (review 91)."""
    params = '{"classes_count":800000000,"class_names":[],"class_to_label":[0,1],"class_label_type":"Integer"}'
    with pytest.raises(catboost_model.Malformed, match="a classes_count of 800000000"):
        catboost_model.check(_blob(_with_metadata(models["binary"], "class_params", params)))
    catboost_model.check(_blob(_with_metadata(models["binary"], "class_params", params.replace("800000000", "2"))))


def _chain(blob: bytes) -> bytes:
    """The depthwise model's nodes made one tree whose every node steps to the next on both sides, ending in one
    leaf: each step inside the tree, each leaf inside the values, but 2**(nodes-1) paths (review 93)."""
    trees, _ = _trees(blob)
    nodes = len(trees.array(SPLITS, "<i4"))
    blob = _count(SIZES, lambda n: 1)(_count(STARTS, lambda n: 1)(blob))
    blob = _set(SIZES, 0, nodes)(_set(STARTS, 0, 0)(blob))
    for node in range(nodes - 1):
        blob = _set(STEPS, node, 0x00010001, "<I")(blob)  # (left, right) = (1, 1)
    return _set(LEAF_IDS, nodes - 1, 0, "<I")(_set(STEPS, nodes - 1, 0, "<I")(blob))


def test_an_asymmetric_tree_must_be_a_tree(tmp_path: Path, models: dict[str, Any]) -> None:
    """A node reached from two parents: catboost's SHAP interaction values walked 2**55 paths and never returned
    (review 93; its save_model as JSON took over 5 GB)."""
    blob = _chain(_blob(models["depthwise"]))
    with pytest.raises(catboost_model.Malformed, match="not each the child of one node"):
        catboost_model.check(blob)
    path = tmp_path / "chain.cbm"
    path.write_bytes(blob)
    assert FILE in _findings(tmp_path, blob, "chain.cbm")
    walk = ("import catboost, sys; model = catboost.CatBoost(); model.load_model(sys.argv[1]); "
            "model.get_feature_importance(type='Interaction')")
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", walk, str(path)], capture_output=True, timeout=8)


def test_a_class_index_past_the_classes_is_flagged(tmp_path: Path, models: dict[str, Any]) -> None:
    """CatBoost writes `class_to_label` as 0, 1, 2, ... and indexes by it: 10**8 and 2**31-1 crashed every predict
    in review 93 and in the development environment, but not in a fresh CI environment (the read lands where memory
    happens to be mapped), so only the flag is asserted here."""
    params = ('{"class_label_type":"Integer","class_names":[0,1,2],"class_to_label":[0,1000000,2147483647],'
              '"classes_count":0}')  # fmt: skip
    model = _with_metadata(models["multiclass"], "class_params", params)
    with pytest.raises(catboost_model.Malformed, match="a class_to_label entry of 1000000 for 3 classes"):
        catboost_model.check(_blob(model))
    path = tmp_path / "labels.cbm"
    model.save_model(str(path))
    assert FILE in _findings(tmp_path, path.read_bytes(), "labels.cbm")
    catboost_model.check(_blob(_with_metadata(models["multiclass"], "class_params", params.replace(
        "[0,1000000,2147483647]", "[0,1,2]"))))  # fmt: skip


@contextmanager
def _state_with(**values: Any) -> Iterator[None]:
    """Pickling a CatBoost model writes `values` into its state besides the real ones, as a hostile writer would."""
    original = cb.CatBoost.__getstate__
    cb.CatBoost.__getstate__ = lambda self: {**original(self), **values}
    try:
        yield
    finally:
        cb.CatBoost.__getstate__ = original


def test_a_state_value_of_shared_references_is_flagged(tmp_path: Path, models: dict[str, Any]) -> None:
    """`__setstate__` converts every test evaluation value, and predict takes `str()` of `used_ram_limit`: lists of
    one list referenced again and again (pickle writes it once) made a 137 KB file of 10**12 numbers, which
    pickle.load converted for about an hour, and a 1 MB one of 10**12 characters (review 94)."""
    evals = [[[0.5] * 10_000] * 10_000] * 10_000
    with _state_with(_test_evals=evals):
        amplified = save(models["regression"], "pickle4")
    assert len(amplified) < 200_000
    found = _findings(tmp_path, amplified, "evals.pkl")
    assert "_test_evals state value" in found[PICKLED][1], found
    with _state_with(used_ram_limit=[["x" * 10**6] * 1000] * 1000):
        found = _findings(tmp_path, save(models["regression"], "pickle4"), "ram.pkl")
    assert "used_ram_limit state value that unfolds to over 268,435,456 characters" in found[PICKLED][1], found
    path = tmp_path / "evals.pkl"
    path.write_bytes(amplified)
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))", str(path)],
                       capture_output=True, timeout=8)  # fmt: skip


def test_test_evaluations_of_a_large_eval_set_pass(tmp_path: Path) -> None:
    """A real model fitted with an eval set keeps that set's predictions (`_test_evals`: sets, outputs, rows), far
    more than the 4,096 items a list keeps in the scan: numbers, whose size the count tells."""
    rng = np.random.default_rng(8)
    x = rng.normal(size=(12_000, 3))
    y = np.digitize(x[:, 0], [-0.5, 0.5])
    model = cb.CatBoostClassifier(iterations=3, loss_function="MultiClass", verbose=False, thread_count=1,
                                  allow_writing_files=False).fit(x[:2000], y[:2000], eval_set=(x[2000:], y[2000:]))
    assert len(model.__getstate__()["_test_evals"][0][0]) == 10_000
    for how in ("pickle2", "pickle5", "joblib"):
        found = _findings(tmp_path, save(model, how), f"evals-{how}.pkl")
        assert not [f for f in found.values() if f[0] >= Severity.MEDIUM], found


def test_counter_bases_match_as_catboost_compares_them() -> None:
    """CatBoost finds a counter's table by its base, comparing a combination's borders as floats: a table whose
    border is -0.0 serves a counter whose border is 0.0, so the table is checked against that counter's class."""
    import importlib.util

    builder = Path(__file__).parents[1] / "corpus" / "build.py"
    spec = importlib.util.spec_from_file_location("wscan_corpus_build", builder)
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = build  # dataclasses resolve their module by name
    spec.loader.exec_module(build)

    def base(border: float) -> bytes:
        combination = build.FlatTable({0: struct.pack("<i", 0), 1: struct.pack("<if", 1, border)}, {0: 4, 1: 8})
        return catboost_model._base(catboost_model._root(build.flatbuffer(build.FlatTable({0: combination, 1: 1}))))

    assert base(-0.0) == base(0.0)
    assert base(0.5) != base(0.0)
