"""A pickled DataFrame whose blocks name columns outside the frame makes pandas write out of bounds (WS-PKL-059).

pandas rebuilds a position -> block table from its blocks' placements in compiled code without bounds checks. A frame
pickled as pandas 1 wrote it (the manager's "0.14.1" state) is rebuilt while `pickle.load` runs; one pickled as pandas
2 and 3 write it (the manager called with blocks and axes) at its first column lookup. Both crash the real pandas here,
in a sandboxed child, with a placement far outside the table; the same streams with the right placements load.
"""

from __future__ import annotations

import copyreg
import io
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pandas.core.internals.managers import BlockManager

from tests.helpers.sandbox import load_each
from tests.helpers.scanning import scan_bytes
from wscan.model import Severity

RULE = "WS-PKL-059"
FAR = 1_000_000_000


def _frame() -> pd.DataFrame:
    """Two float columns, named by an object array as pandas 1 named them (pandas 3's own Arrow-backed names are an
    axis wscan cannot measure, which a pandas 1 state is reported for)."""
    frame = pd.DataFrame({"a": np.arange(4.0), "b": np.arange(4.0) * 2})
    frame.columns = pd.Index(["a", "b"], dtype=object)
    return frame


def _pickled(frame: pd.DataFrame | pd.Series, manager: Callable[[Any], tuple[Any, ...]], protocol: int = 4) -> bytes:
    """The frame (or Series) as pandas pickles it, with its manager pickled as `manager` says."""

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            return manager(obj) if obj is frame._mgr else NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=protocol).dump(frame)
    return buffer.getvalue()


def _called(placement: object) -> Callable[[BlockManager], tuple[Any, ...]]:
    """pandas 2 and 3: BlockManager(blocks, axes), its one block given `placement`."""

    class Block:
        def __init__(self, block: Any) -> None:
            self.block = block

        def __reduce__(self) -> tuple[Any, ...]:
            func, args = self.block.__reduce__()
            return func, (args[0], placement, *args[2:])

    return lambda mgr: (BlockManager, (tuple(Block(b) for b in mgr.blocks), mgr.axes))


def _legacy(placement: object) -> Callable[[BlockManager], tuple[Any, ...]]:
    """pandas 1: BlockManager.__new__, then the state its __setstate__ reads."""

    def reduce(mgr: BlockManager) -> tuple[Any, ...]:
        axes = list(mgr.axes)
        blocks = [{"values": mgr.blocks[0].values, "mgr_locs": placement}]
        state = (axes, [mgr.blocks[0].values], [axes[0]], {"0.14.1": {"axes": axes, "blocks": blocks}})
        return copyreg.__newobj__, (BlockManager,), state  # type: ignore[attr-defined]

    return reduce


def _new(placement: object) -> Callable[[BlockManager], tuple[Any, ...]]:
    """copyreg.__newobj__(BlockManager, blocks, axes): the compiled manager's __new__ takes them, unchecked."""
    called = _called(placement)
    return lambda mgr: (copyreg.__newobj__, (BlockManager, *called(mgr)[1]))  # type: ignore[attr-defined]


def _rows(rows: int, how: str) -> Callable[[BlockManager], tuple[Any, ...]]:
    """The frame's own blocks with a rows axis of `rows`: in pandas 1's state, or called with verify_integrity off."""

    def reduce(mgr: BlockManager) -> tuple[Any, ...]:
        axes = [mgr.axes[0], pd.RangeIndex(0, rows)]
        if how == "called":
            return BlockManager, (tuple(mgr.blocks), axes, False)
        blocks = [{"values": b.values, "mgr_locs": b.mgr_locs.indexer} for b in mgr.blocks]
        state = (axes, [b.values for b in mgr.blocks], [axes[0]], {"0.14.1": {"axes": axes, "blocks": blocks}})
        return copyreg.__newobj__, (BlockManager,), state  # type: ignore[attr-defined]

    return reduce


def _series_rows(rows: int) -> Callable[[Any], tuple[Any, ...]]:
    """A Series' manager in the state pandas writes for it, its index `rows` long."""

    def reduce(mgr: Any) -> tuple[Any, ...]:
        axes = [pd.RangeIndex(0, rows)]
        values = mgr.blocks[0].values
        state = {"0.14.1": {"axes": axes, "blocks": [{"values": values, "mgr_locs": slice(0, len(values), 1)}]}}
        return copyreg.__newobj__, (type(mgr),), (axes, [values], axes, state)  # type: ignore[attr-defined]

    return reduce


CASES = {
    "called-array-far": (_called(np.array([0, FAR], dtype=np.intp)), _called(np.array([0, 1], dtype=np.intp))),
    "new-array-far": (_new(np.array([0, FAR], dtype=np.intp)), _new(np.array([0, 1], dtype=np.intp))),
    "legacy-rows-far": (_rows(FAR, "legacy"), _rows(4, "legacy")),
    "called-unverified-rows-far": (_rows(FAR, "called"), _rows(4, "called")),
    "called-slice-far": (_called(slice(0, 2 * FAR, FAR)), _called(slice(0, 2, 1))),
    "legacy-array-far": (_legacy(np.array([0, FAR], dtype=np.intp)), _legacy(np.array([0, 1], dtype=np.intp))),
    "legacy-slice-far": (_legacy(slice(0, 2 * FAR, FAR)), _legacy(slice(0, 2, 1))),
}
SETUP = """
import pickle
def load(path, option):
    with open(path, "rb") as f:
        frame = pickle.load(f)
    if option == "series":
        repr(frame)
    else:
        frame["a"]
        repr(frame)
"""


def _high(folder: Path, blob: bytes) -> list[str]:
    report = scan_bytes(folder, blob, "frame.pkl")
    return [f"{f.rule_id}: {f.message}" for f in report.findings if f.severity >= Severity.HIGH]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("pandas-blocks")
    jobs = []
    for case, (hostile, control) in CASES.items():
        for label, manager in ((case, hostile), (f"{case}/control", control)):
            path = root / f"{label.replace('/', '-')}.pkl"
            path.write_bytes(_pickled(_frame(), manager))
            jobs.append((label, path, "", root / "never-made"))
    for label, rows in (("series-rows-far", FAR), ("series-rows-far/control", 3)):
        path = root / f"{label.replace('/', '-')}.pkl"
        series = pd.Series(np.arange(3.0))
        path.write_bytes(_pickled(series, _series_rows(rows)))
        jobs.append((label, path, "series", root / "never-made"))
    return {key: outcome.result for key, outcome in load_each(SETUP, jobs, root, timeout=120).items()}


@pytest.mark.parametrize("case", [*CASES, "series-rows-far"])
def test_pandas_writes_outside_its_table(case: str, loaded: dict[str, str]) -> None:
    assert loaded[case] == "crashed: wait status 11"
    assert loaded[f"{case}/control"] == "loaded"


@pytest.mark.parametrize("case", CASES)
def test_a_placement_outside_the_frame_is_high(tmp_path: Path, case: str) -> None:
    hostile, control = CASES[case]
    found = _high(tmp_path, _pickled(_frame(), hostile))
    assert any(f.startswith(RULE) and "BlockManager" in f for f in found), found
    assert _high(tmp_path, _pickled(_frame(), control)) == []


def test_a_series_longer_than_its_values_is_high(tmp_path: Path) -> None:
    """A Series' manager checks nothing: an index of 10^9 over three values made repr() read past them (a crash);
    one of 200,000 printed the heap (helper 224)."""
    for rows in (FAR, 200_000):
        found = _high(tmp_path, _pickled(pd.Series(np.arange(3.0)), _series_rows(rows)))
        assert any(f.startswith(RULE) and f"3 rows where the index has {rows}" in f for f in found), found
    assert _high(tmp_path, _pickled(pd.Series(np.arange(3.0)), _series_rows(3))) == []


@pytest.mark.parametrize(
    ("placement", "detail"),
    [
        (np.array([-5, 0], dtype=np.intp), "position -5"),
        (np.array([0, 0], dtype=np.intp), "held by two blocks"),
        (np.array([0, 2], dtype=np.intp), "position 2, outside 0 to 1"),
        (slice(-1, 1, 1), "negative positions"),
        (slice(0, None, 1), "unbounded slice"),
        (np.array([0.0, 1.0]), "not integers"),
    ],
)
def test_what_each_placement_is_judged_by(tmp_path: Path, placement: object, detail: str) -> None:
    for manager in (_called(placement), _legacy(placement)):
        found = _high(tmp_path, _pickled(_frame(), manager))
        assert any(f.startswith(RULE) and detail in f for f in found), found


def test_a_legacy_state_is_judged_against_its_axis(tmp_path: Path) -> None:
    """pandas 1's state is rebuilt without the check pandas 2 makes: blocks naming three columns of a two-column axis
    write past it."""
    frame = _frame()

    def reduce(mgr: BlockManager) -> tuple[Any, ...]:
        values = np.zeros((3, 4))
        axes = list(mgr.axes)
        state = (axes, [values], [axes[0]], {"0.14.1": {"axes": axes, "blocks": [{"values": values,
                                                                                   "mgr_locs": slice(0, 3, 1)}]}})
        return copyreg.__newobj__, (BlockManager,), state  # type: ignore[attr-defined]

    found = _high(tmp_path, _pickled(frame, reduce))
    assert any(f.startswith(RULE) and "outside 0 to 1" in f for f in found), found


def test_a_legacy_state_is_measured_by_arrow_labels_too(tmp_path: Path) -> None:
    """pandas 3 names columns with an Arrow-backed array, whose length its pickled data tuple gives."""
    frame = pd.DataFrame({"a": np.arange(4.0), "b": np.arange(4.0) * 2})
    assert _high(tmp_path, _pickled(frame, _legacy(slice(0, 2, 1)))) == []
    found = _high(tmp_path, _pickled(frame, _legacy(slice(0, 3, 1))))
    assert any(f.startswith(RULE) and "outside 0 to 1" in f for f in found), found


def _frames() -> dict[str, pd.DataFrame]:
    """Frames of every block kind pandas makes, in the layouts real files have."""
    mixed = pd.DataFrame({
        "f": np.arange(5.0), "i": np.arange(5), "s": list("abcde"), "f2": np.ones(5), "b": [True] * 5,
        "c": pd.Categorical(list("xyxyx")), "t": pd.date_range("2024-01-01", periods=5, tz="UTC"),
        "n": pd.array([1, None, 3, 4, 5], dtype="Int64"), "i2": np.arange(5) * 2,
    })  # fmt: skip
    multi = pd.DataFrame(np.arange(12.0).reshape(3, 4), columns=pd.MultiIndex.from_product([["a", "b"], [1, 2]]))
    reordered = mixed[["i2", "f", "s", "i", "f2"]]
    return {
        "mixed": mixed, "multi-columns": multi, "reordered": reordered, "transposed": multi.T,
        "empty": pd.DataFrame(), "no-rows": mixed.iloc[:0], "range-columns": pd.DataFrame(np.eye(3)),
        "inserted": mixed.assign(z=1.5).drop(columns=["i"]),
    }  # fmt: skip


@pytest.mark.parametrize("name", list(_frames()))
def test_frames_pandas_writes_pass(tmp_path: Path, name: str) -> None:
    frame = _frames()[name]
    assert _high(tmp_path, pickle.dumps(frame, protocol=4)) == []
    assert _high(tmp_path, pickle.dumps({"frame": frame, "series": frame.iloc[:, :1]}, protocol=2)) == []


def _categorical(codes: np.ndarray) -> bytes:
    """A Categorical of two categories (held in an object array: pandas 3's Arrow-backed ones check a take's bounds),
    pickled as pandas does, given `codes`."""
    categorical = pd.Categorical(list("xyx"), categories=pd.Index(["x", "y"], dtype=object))

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if obj is not categorical:
                return NotImplemented
            func, args, state = obj.__reduce_ex__(4)[:3]
            return func, args, (state[0], codes)

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump(categorical)
    return buffer.getvalue()


def test_categorical_codes_past_the_categories_crash_pandas_and_are_high(tmp_path: Path) -> None:
    """cat.tolist() takes categories by code in compiled code without bounds checks (helper 224)."""
    jobs = []
    for label, codes in (("far", [0, FAR]), ("negative", [0, -FAR]), ("control", [0, 1])):
        path = tmp_path / f"{label}.pkl"
        path.write_bytes(_categorical(np.array(codes, dtype=np.int64)))
        jobs.append((label, path, "", tmp_path / "never-made"))
    setup = "import pickle\ndef load(path, option):\n    with open(path, 'rb') as f:\n        pickle.load(f).tolist()\n"
    outcomes = {key: outcome.result for key, outcome in load_each(setup, jobs, tmp_path, timeout=120).items()}
    assert outcomes == {"far": "crashed: wait status 11", "negative": "crashed: wait status 11", "control": "loaded"}
    for codes, detail in (([0, FAR], f"from 0 to {FAR}"), ([0, -FAR], f"from -{FAR} to 0"), ([0, 2], "0 to 2")):
        found = _high(tmp_path, _categorical(np.array(codes, dtype=np.int64)))
        assert any(f.startswith(RULE) and detail in f and "categories of 2 labels" in f for f in found), found
    assert _high(tmp_path, _categorical(np.array([0, -1, 1], dtype=np.int8))) == []  # -1: a missing value


def test_multi_index_codes_past_their_level_are_high(tmp_path: Path) -> None:
    index = pd.MultiIndex.from_product([["a", "b"], [1, 2]])

    def pickled(first: np.ndarray) -> bytes:
        class Pickler(pickle.Pickler):
            def reducer_override(self, obj: Any) -> Any:
                if obj is not index:
                    return NotImplemented
                func, (cls, fields) = obj.__reduce__()[:2]
                return func, (cls, {**fields, "codes": [first, fields["codes"][1]]})

        buffer = io.BytesIO()
        Pickler(buffer, protocol=4).dump(index)
        return buffer.getvalue()

    found = _high(tmp_path, pickled(np.array([0, 0, 1, 100], dtype=np.int8)))
    assert any(f.startswith(RULE) and "a level of 2 labels" in f for f in found), found
    assert _high(tmp_path, pickled(np.array([0, 0, 1, 1], dtype=np.int8))) == []


def test_real_categoricals_and_multi_indexes_pass(tmp_path: Path) -> None:
    objects = {
        "categories-str": pd.Categorical(list("xyzx"), categories=list("zyx")),
        "categories-int": pd.Categorical([3, 1, None, 3]),
        "categories-dates": pd.Categorical(pd.date_range("2024-01-01", periods=3)),
        "categories-many": pd.Categorical(np.arange(1000) % 300),
        "series": pd.Series(pd.Categorical(list("ab") * 3)),
        "index": pd.CategoricalIndex(list("abca")),
        "multi": pd.MultiIndex.from_product([["a", "b"], [1, 2], pd.date_range("2024-01-01", periods=2)]),
        "multi-missing": pd.MultiIndex.from_arrays([["a", None, "b"], [1, 2, None]]),
        "multi-frame": pd.DataFrame(np.eye(4), index=pd.MultiIndex.from_product([["a", "b"], [1, 2]])),
    }
    for name, obj in objects.items():
        for protocol in (2, 4, 5):
            assert _high(tmp_path, pickle.dumps(obj, protocol=protocol)) == [], (name, protocol)


def _categorical_state(state: Callable[[Any, np.ndarray], object], codes: list[int]) -> bytes:
    """A Categorical of two object categories whose state is `state(dtype, codes)`."""
    categorical = pd.Categorical(list("xyx"), categories=pd.Index(["x", "y"], dtype=object))

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if obj is not categorical:
                return NotImplemented
            func, args = obj.__reduce_ex__(4)[:2]
            return func, args, state(obj.dtype, np.array(codes, dtype=np.int64))

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump(categorical)
    return buffer.getvalue()


STATES: dict[str, Callable[[Any, np.ndarray], object]] = {
    # what NDArrayBacked.__setstate__ reads besides (dtype, codes, {}): the codes first (it swaps an ndarray dtype
    # back), a 1-tuple of a dict, a dict's `_data`, and pandas 1's dict, whose dtype pandas builds from `_categories`
    "swapped": lambda dtype, codes: (codes, dtype, {}),
    "one-dict": lambda dtype, codes: ({"_dtype": dtype, "_ndarray": codes},),
    "data-key": lambda dtype, codes: {"_dtype": dtype, "_data": codes},
    "pandas-1": lambda dtype, codes: {"_categories": dtype.categories, "_ordered": False, "_codes": codes},
}


@pytest.mark.parametrize("form", STATES)
def test_categorical_codes_are_read_in_every_state_pandas_reads(tmp_path: Path, form: str) -> None:
    """Helper 225 got codes past the categories through each of these; `tolist()` then crashed pandas."""
    found = _high(tmp_path, _categorical_state(STATES[form], [0, 1, FAR]))
    assert any(f.startswith(RULE) and "categories of 2 labels" in f for f in found), found
    assert _high(tmp_path, _categorical_state(STATES[form], [0, 1, 0])) == []


def test_swapped_categorical_codes_crash_pandas(tmp_path: Path) -> None:
    jobs = []
    for label, codes in (("far", [0, 1, FAR]), ("control", [0, 1, 0])):
        path = tmp_path / f"{label}.pkl"
        path.write_bytes(_categorical_state(STATES["swapped"], codes))
        jobs.append((label, path, "", tmp_path / "never-made"))
    setup = "import pickle\ndef load(path, option):\n    with open(path, 'rb') as f:\n        pickle.load(f).tolist()\n"
    outcomes = {key: outcome.result for key, outcome in load_each(setup, jobs, tmp_path, timeout=120).items()}
    assert outcomes == {"far": "crashed: wait status 11", "control": "loaded"}


def test_multi_index_codes_in_a_state_are_high(tmp_path: Path) -> None:
    """A MultiIndex made by copyreg's reconstructor and given its levels and codes by a BUILD (helper 225)."""
    index = pd.MultiIndex.from_product([["a", "b"], [1, 2]])

    def pickled(first: list[int]) -> bytes:
        class Pickler(pickle.Pickler):
            def reducer_override(self, obj: Any) -> Any:
                if obj is not index:
                    return NotImplemented
                codes = [np.array(first, dtype=np.int8), obj.codes[1]]
                state = {"_levels": list(obj.levels), "_codes": codes, "_names": [None, None], "sortorder": None}
                return copyreg._reconstructor, (pd.MultiIndex, object, None), state  # type: ignore[attr-defined]

        buffer = io.BytesIO()
        Pickler(buffer, protocol=4).dump(index)
        return buffer.getvalue()

    found = _high(tmp_path, pickled([0, 0, 1, 100]))
    assert any(f.startswith(RULE) and "a level of 2 labels" in f for f in found), found
    assert not any(f.startswith(RULE) for f in _high(tmp_path, pickled([0, 0, 1, 1])))


def _made_by_ndarray() -> None:
    """Stands for numpy.ndarray in a pickle: its name is replaced by NumPy's after pickling."""


def test_rows_of_arrays_made_by_calling_ndarray_are_checked(tmp_path: Path) -> None:
    """numpy.ndarray(shape) then a BUILD of the array's state makes the same values as _reconstruct (helper 225: a
    Series of three such values over an index of 10^9 crashed repr())."""

    class Values:
        def __init__(self, values: np.ndarray) -> None:
            self.values = values

        def __reduce__(self) -> tuple[Any, ...]:
            return _made_by_ndarray, (self.values.shape,), self.values.__reduce__()[2]

    def pickled(rows: int) -> bytes:
        series = pd.Series(np.arange(3.0))

        def reduce(mgr: Any) -> tuple[Any, ...]:
            values, axes = Values(np.arange(3.0)), [pd.RangeIndex(0, rows)]
            state = {"0.14.1": {"axes": axes, "blocks": [{"values": values, "mgr_locs": slice(0, 3, 1)}]}}
            return copyreg.__newobj__, (type(mgr),), (axes, [values], axes, state)  # type: ignore[attr-defined]

        blob = _pickled(series, reduce, protocol=2)  # GLOBAL names the function in one line
        return blob.replace(f"c{__name__}\n_made_by_ndarray\n".encode(), b"cnumpy\nndarray\n")

    found = _high(tmp_path, pickled(FAR))
    assert any(f.startswith(RULE) and "3 rows where the index has 1000000000" in f for f in found), found
    assert _high(tmp_path, pickled(3)) == []


class _Called:
    """Pickled as a call of `func` on `args`: an index made by calling its class, which pandas never writes."""

    def __init__(self, func: Any, *args: Any) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[Any, ...]:
        return self.func, self.args


def _series_axis(axis: Any) -> bytes:
    """Three values whose Series' manager, in the state pandas writes, is given `axis` as its index."""
    series = pd.Series(np.arange(3.0))

    def reduce(mgr: Any) -> tuple[Any, ...]:
        values = mgr.blocks[0].values
        state = {"0.14.1": {"axes": [axis], "blocks": [{"values": values, "mgr_locs": slice(0, 3, 1)}]}}
        return copyreg.__newobj__, (type(mgr),), ([axis], [values], [axis], state)  # type: ignore[attr-defined]

    return _pickled(series, reduce)


def _frame_rows(rows: Any) -> bytes:
    """Two columns of four rows restored from pandas 1's state, given `rows` as the rows axis."""
    frame = _frame()

    def reduce(mgr: BlockManager) -> tuple[Any, ...]:
        axes = [mgr.axes[0], rows]
        blocks = [{"values": b.values, "mgr_locs": b.mgr_locs.indexer} for b in mgr.blocks]
        state = (axes, [b.values for b in mgr.blocks], [axes[0]], {"0.14.1": {"axes": axes, "blocks": blocks}})
        return copyreg.__newobj__, (BlockManager,), state  # type: ignore[attr-defined]

    return _pickled(frame, reduce)


def _masked(size: int, mask: int) -> bytes:
    """An Int8 array of `size` values whose mask has `mask` entries."""
    array = pd.array([1, None], dtype="Int8")
    object.__setattr__(array, "_data", (np.arange(size) % 100).astype(np.int8))
    object.__setattr__(array, "_mask", np.zeros(mask, dtype=bool))
    return pickle.dumps(array, protocol=4)


def _categories_called() -> bytes:
    """A Categorical of two categories, made by calling Index (pandas writes _new_Index), given a code of 10^9."""
    categorical = pd.Categorical(list("xy"), categories=pd.Index(["x", "y"], dtype=object))

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if obj is categorical:
                func, args, state = obj.__reduce_ex__(4)[:3]
                return func, args, (state[0], np.array([0, FAR], dtype=np.int64))
            if obj is categorical.dtype.categories:
                return pd.Index, (np.array(["x", "y"], dtype=object), "object")
            return NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump(categorical)
    return buffer.getvalue()


HELPER_232 = {  # each crashed pandas 3.1 at repr (the mask: at unique) and passed the scan
    "categories-called": (_categories_called, "repr", "axis not pickled"),
    "series-index-called": (lambda: _series_axis(_Called(pd.RangeIndex, 0, FAR)), "repr", "axis not pickled"),
    "frame-rows-called": (lambda: _frame_rows(_Called(pd.RangeIndex, 0, FAR)), "repr", "axis not pickled"),
    "frame-rows-dates": (lambda: _frame_rows(pd.date_range("2000-01-01", periods=200_000, freq="s")), "repr",
                         "4 rows where the index has 200000"),
    "mask-shorter": (lambda: _masked(20_000_000, 0), "unique", "a mask of shape (0,) over values of shape (20000000,)"),
}  # fmt: skip
CONTROLS = {
    "series-index-dates": lambda: _series_axis(pd.date_range("2000-01-01", periods=3, freq="D")),
    "frame-rows-dates": lambda: _frame_rows(pd.date_range("2000-01-01", periods=4, freq="s")),
    "frame-rows-periods": lambda: _frame_rows(pd.period_range("2000-01", periods=4, freq="M")),
    "frame-rows-timedeltas": lambda: _frame_rows(pd.timedelta_range(0, periods=4)),
    "frame-rows-intervals": lambda: _frame_rows(pd.interval_range(0, 4)),
    "frame-rows-nullable": lambda: _frame_rows(pd.Index(pd.array([1, 2, None, 4], dtype="Int64"))),
    "frame-rows-sparse": lambda: _frame_rows(pd.Index(pd.arrays.SparseArray([0, 0, 1, 0]))),
    "frame-rows-categories": lambda: _frame_rows(pd.CategoricalIndex(list("abab"))),
    "mask-equal": lambda: _masked(1000, 1000),
}


def _loaded(tmp_path: Path, setup: str, files: dict[str, tuple[bytes, str]], timeout: float) -> dict[str, str]:
    """What `setup`'s load(path, option) did with each file (its bytes and option), each in a sandboxed child."""
    jobs = []
    for label, (blob, use) in files.items():
        path = tmp_path / f"{label}.pkl"
        path.write_bytes(blob)
        jobs.append((label, path, use, tmp_path / "never-made"))
    return {key: outcome.result for key, outcome in load_each(setup, jobs, tmp_path, timeout=timeout).items()}


def test_helper_232_unmeasured_axes_and_masks_crash_pandas(tmp_path: Path) -> None:
    """The frame of 4 rows under 200,000 dates makes repr read 1.6 MB past its block: a crash when that lands on
    unmapped memory, else garbage rows (9 runs of 14 on a fresh clone on 2026-12-07, failing CI once), so a repr that
    returns is reported as the read past it is."""
    setup = ("import pickle\ndef load(path, option):\n    with open(path, 'rb') as f:\n        value = pickle.load(f)\n"
             "    repr(value) if option == 'repr' else value.unique()\n"
             "    if 'frame-rows-dates' in path:\n        raise RuntimeError('read past the block')\n")  # fmt: skip
    files = {label: (make(), use) for label, (make, use, _) in HELPER_232.items()}
    outcomes = _loaded(tmp_path, setup, files, 120)
    crashed = "crashed: wait status 11"
    assert outcomes == {**dict.fromkeys(HELPER_232, crashed), "frame-rows-dates": outcomes["frame-rows-dates"]}
    assert outcomes["frame-rows-dates"] in (crashed, "error: RuntimeError: read past the block")


@pytest.mark.parametrize("case", list(HELPER_232))
def test_helper_232_cases_are_high(tmp_path: Path, case: str) -> None:
    """An index wscan cannot measure fails closed, an index pandas writes is measured, a mask is checked against its
    values (each was passed over before)."""
    make, _, detail = HELPER_232[case]
    found = _high(tmp_path, make())
    assert any(f.startswith(RULE) and detail in f for f in found), found


@pytest.mark.parametrize("case", list(CONTROLS))
def test_every_index_kind_pandas_writes_is_measured(tmp_path: Path, case: str) -> None:
    assert _high(tmp_path, CONTROLS[case]()) == []


# Helper 233's second round: values pandas turns into NumPy arrays, states with decoy keys, joblib's arrays, and
# dicts changed after pandas took them. Each passed the scan and crashed pandas 3.1 (or printed the heap).
def _series_values(values: Any, rows: int = FAR) -> bytes:
    """A Series whose manager, in pandas 1's state, holds `values` as its block over a range of `rows`."""
    series = pd.Series([1.0, 2.0, 3.0])
    axes = [pd.RangeIndex(rows)]

    def reduce(mgr: Any) -> tuple[Any, ...]:
        state = {"0.14.1": {"axes": axes, "blocks": [{"values": values, "mgr_locs": slice(0, 3, 1)}]}}
        return copyreg.__newobj__, (type(mgr),), (axes, [values], axes, state)  # type: ignore[attr-defined]

    return _pickled(series, reduce)


def _two_dimensional_extension_block() -> bytes:
    """A frame whose one block is a NumPy-backed extension array over a 2 x 3 array, under a range of 10^9 rows."""
    frame = _frame().iloc[:3]
    extension = pd.arrays.NumpyExtensionArray(np.arange(2.0))

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if obj is frame._mgr:
                axes = [obj.axes[0], pd.RangeIndex(FAR)]
                blocks = [{"values": extension, "mgr_locs": slice(0, 2, 1)}]
                state = (axes, [extension], [axes[0]], {"0.14.1": {"axes": axes, "blocks": blocks}})
                return copyreg.__newobj__, (type(obj),), state  # type: ignore[attr-defined]
            if obj is extension:
                func, args, state = obj.__reduce_ex__(4)[:3]
                return func, args, (state[0], np.arange(6.0).reshape(2, 3), {})
            return NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump(frame)
    return buffer.getvalue()


def _decoy_categories() -> bytes:
    """A Categorical whose one category is held by a NumPy-backed array whose state also names a sparse index of
    10^9 (a stray attribute to pandas, which takes `_ndarray`), given a code of 10^9."""
    from pandas._libs.sparse import IntIndex

    extension = pd.arrays.NumpyExtensionArray(np.array(["x"], dtype=object))
    categories = pd.Index(extension)
    categorical = pd.Categorical(["x", "x"], categories=pd.Index(["x"], dtype=object))

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if obj is categorical:
                func, args, _ = obj.__reduce_ex__(4)[:3]
                return func, args, (pd.CategoricalDtype(categories), np.array([0, FAR], dtype=np.int32), {})
            if obj is categories:
                return pd.core.indexes.base._new_Index, (pd.Index, {"data": extension, "name": None})
            if obj is extension:
                func, args, _ = obj.__reduce_ex__(4)[:3]
                decoy = IntIndex(FAR, np.array([], dtype=np.int32))
                return func, args, {"_ndarray": np.array(["x"], dtype=object), "_dtype": obj.dtype,
                                    "_sparse_index": decoy}  # fmt: skip
            return NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump(categorical)
    return buffer.getvalue()


def _joblib_codes(tmp_path: Path) -> bytes:
    """joblib's dump of a Categorical of one category given a code of 10^9 (joblib writes its arrays as wrappers)."""
    import joblib
    from joblib import numpy_pickle

    categorical = pd.Categorical(["x", "x"], categories=pd.Index(["x"], dtype=object))

    class Pickler(numpy_pickle.NumpyPickler):
        def reducer_override(self, obj: Any) -> Any:
            if obj is categorical:
                func, args, state = obj.__reduce_ex__(4)[:3]
                return func, args, (state[0], np.array([0, FAR], dtype=np.int32), {})
            return NotImplemented

    original = numpy_pickle.NumpyPickler
    numpy_pickle.NumpyPickler = Pickler  # type: ignore[misc]
    try:
        joblib.dump(categorical, tmp_path / "codes.joblib")
    finally:
        numpy_pickle.NumpyPickler = original  # type: ignore[misc]
    return (tmp_path / "codes.joblib").read_bytes()


def _changed_after(blob: bytes, after: str, key: str, value: Any) -> bytes:
    """`blob` with one more item set, at its end, on the first dict made after the global `after`: the dict the
    loader took as a state or argument before (helper 233)."""
    import pickletools
    import struct

    ops = list(pickletools.genops(blob))
    start = next(k for k, (op, arg, _) in enumerate(ops) if after in str(arg))
    found = next(k for k in range(start, len(ops)) if ops[k][0].name == "EMPTY_DICT")
    assert ops[found + 1][0].name in ("BINPUT", "LONG_BINPUT")
    slot = ops[found + 1][1]
    assert isinstance(slot, int)
    buffer = io.BytesIO()
    pickler = pickle._Pickler(buffer, protocol=3)  # type: ignore[attr-defined]
    pickler.fast = True
    pickler.dump((key, value))
    body = buffer.getvalue()
    get = b"h" + bytes([slot]) if slot < 256 else b"j" + struct.pack("<I", slot)
    return blob[:-1] + get + body[2:-2] + b"s0."


def _mask_changed() -> bytes:
    array = pd.array([1, None], dtype="Int8")
    object.__setattr__(array, "_data", (np.arange(20_000_000) % 100).astype(np.int8))
    object.__setattr__(array, "_mask", np.zeros(0, dtype=bool))  # what pandas takes; then the values go empty
    return _changed_after(pickle.dumps(array, protocol=3), "IntegerArray", "_data", np.zeros(0, dtype=np.int8))


def _categories_changed() -> bytes:
    categorical = pd.Categorical(["x", "x"], categories=pd.Index(["x"], dtype=object))

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if obj is categorical:
                func, args, state = obj.__reduce_ex__(3)[:3]
                return func, args, (state[0], np.array([0, FAR], dtype=np.int32), {})
            return NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=3).dump(categorical)
    return _changed_after(buffer.getvalue(), "CategoricalDtype", "categories", pd.RangeIndex(FAR))


HELPER_233: dict[str, tuple[Callable[[Path], bytes], str, str]] = {
    "values-an-index": (lambda _: _series_values(pd.Index(np.array([1.0, 2.0, 3.0]))), "repr",
                        f"a block of 3 rows where the index has {FAR}"),
    "values-numpy-backed": (lambda _: _series_values(pd.arrays.NumpyExtensionArray(np.array([1.0, 2.0, 3.0]))),
                            "repr", f"a block of 3 rows where the index has {FAR}"),
    "values-two-dimensional": (lambda _: _two_dimensional_extension_block(), "repr",
                               f"a block of 3 rows where the index has {FAR}"),
    "decoy-sparse-index": (lambda _: _decoy_categories(), "repr", "categories of 1 labels"),
    "joblib-codes": (_joblib_codes, "joblib-repr", "categories of 1 labels"),
    "mask-changed": (lambda _: _mask_changed(), "unique", "WS-PKL-018"),
    "categories-changed": (lambda _: _categories_changed(), "repr", "WS-PKL-018"),
}  # fmt: skip


def test_helper_233_cases_crash_pandas(tmp_path: Path) -> None:
    setup = ("import pickle, joblib\ndef load(path, option):\n"
             "    value = joblib.load(path) if option.startswith('joblib') else pickle.load(open(path, 'rb'))\n"
             "    value.unique() if option == 'unique' else repr(value)\n")  # fmt: skip
    outcomes = _loaded(tmp_path, setup, {label: (make(tmp_path), use) for label, (make, use, _) in HELPER_233.items()},
                       180)
    assert outcomes == dict.fromkeys(HELPER_233, "crashed: wait status 11")


@pytest.mark.parametrize("case", list(HELPER_233))
def test_helper_233_cases_are_high(tmp_path: Path, case: str) -> None:
    make, _, detail = HELPER_233[case]
    found = _high(tmp_path, make(tmp_path))
    assert any(detail in f for f in found), found


# Helper 235's third round: a Categorical's state given to pandas' unpickler itself, a MultiIndex's cached levels,
# SingleBlockManager's ignored check flag, and a frame state behind a computed key.
class _Reduced:
    def __init__(self, func: Any, args: tuple[Any, ...], state: Any = None) -> None:
        self.reduced = (func, args) if state is None else (func, args, state)

    def __reduce__(self) -> tuple[Any, ...]:
        return self.reduced


def _categorical_state_in_call() -> bytes:
    import pandas._libs.arrays as backed

    categorical = pd.Categorical(["a", "b"], categories=pd.Index(["a", "b"], dtype=object))
    checksum = categorical.__reduce_ex__(2)[1][1]
    codes = np.array([0, 1, FAR // 8], dtype=np.int64)
    unpickle = getattr(backed, "__pyx_unpickle_NDArrayBacked")
    return pickle.dumps(_Reduced(unpickle, (pd.Categorical, checksum, (categorical.dtype, codes))), protocol=2)


def _multi_index_cached_levels() -> bytes:
    levels = [pd.Index(np.arange(40, dtype=np.float64) + 0.5), pd.Index(np.arange(40, dtype=np.int64))]
    state = {"_levels": levels, "_codes": [np.arange(40, dtype=np.int8)] * 2, "_names": [None, None],
             "sortorder": None, "_cache": {"levels": [pd.Index(np.array([0.5])), levels[1]]}, "_id": None,
             "_references": None}  # fmt: skip
    return pickle.dumps(_Reduced(copyreg._reconstructor, (pd.MultiIndex, object, None), state), protocol=2)


def _single_manager_flagged_checked() -> bytes:
    from pandas._libs.internals import _unpickle_block
    from pandas.core.internals.managers import SingleBlockManager

    block = _Reduced(_unpickle_block, (np.array([1.0, 2.0, 3.0]), slice(0, 3, 1), 1))
    manager = _Reduced(SingleBlockManager, (block, pd.RangeIndex(FAR), True))
    state = {"_mgr": manager, "_typ": "series", "_metadata": ["_name"], "attrs": {},
             "_flags": {"allows_duplicate_labels": True}, "_name": None}  # fmt: skip
    return pickle.dumps(_Reduced(copyreg._reconstructor, (pd.Series, object, None), state), protocol=2)


def _computed_state_key() -> bytes:
    frame = _frame()

    def reduce(mgr: BlockManager) -> tuple[Any, ...]:
        axes = [mgr.axes[0], pd.RangeIndex(FAR)]
        blocks = [{"values": b.values, "mgr_locs": b.mgr_locs.indexer} for b in mgr.blocks]
        extra = {_Reduced(str, ("0.14.1",)): {"axes": axes, "blocks": blocks}}
        return copyreg.__newobj__, (BlockManager,), (axes, [b.values for b in mgr.blocks], [axes[0]], extra)  # type: ignore[attr-defined]

    return _pickled(frame, reduce)


# What each load shows: a crash, or (the cached level, too small to crash with) labels no level holds.
HELPER_235_SHOWS = {"multi-index-cached-levels": "error: RuntimeError: read past the level"}
HELPER_235: dict[str, tuple[Callable[[], bytes], str]] = {
    "categorical-state-in-call": (_categorical_state_in_call, f"a code from 0 to {FAR // 8}"),
    "multi-index-cached-levels": (_multi_index_cached_levels, "a MultiIndex restored with a filled cache"),
    "single-manager-flag": (_single_manager_flagged_checked, f"a block of 3 rows where the index has {FAR}"),
    "computed-state-key": (_computed_state_key, "a state whose keys the stream computes"),
}


def test_helper_235_cases_crash_pandas(tmp_path: Path) -> None:
    setup = ("import pickle\ndef load(path, option):\n    value = pickle.load(open(path, 'rb'))\n"
             "    if 'multi' in path and {first for first, _ in value.tolist()} - {i + 0.5 for i in range(40)}:\n"
             "        raise RuntimeError('read past the level')\n"
             "    repr(value)\n")  # fmt: skip
    outcomes = _loaded(tmp_path, setup, {label: (make(), "") for label, (make, _) in HELPER_235.items()}, 180)
    assert outcomes == {key: HELPER_235_SHOWS.get(key, "crashed: wait status 11") for key in HELPER_235}


@pytest.mark.parametrize("case", list(HELPER_235))
def test_helper_235_cases_are_high(tmp_path: Path, case: str) -> None:
    make, detail = HELPER_235[case]
    found = _high(tmp_path, make())
    assert any(f.startswith(RULE) and detail in f for f in found), found


# Helper 236's fourth round: copyreg's __newobj_ex__ called by REDUCE and pandas' date and time-delta helpers make
# any class (none was recorded), a Series block of two dimensions, a frame block with fewer rows than its placement.
def _categorical_made_by(helper: Any, args: tuple[Any, ...]) -> bytes:
    categorical = pd.Categorical(["x", "x"], categories=pd.Index(["x"], dtype=object))
    state = {"_ndarray": np.array([0, FAR - 1], dtype=np.int64), "_dtype": categorical.dtype}
    return pickle.dumps(_Reduced(helper, args, state), protocol=2)


def _stand_in(*args: Any) -> Any:
    """Pickled by name, then renamed copyreg.__newobj_ex__ in the bytes (pickle will not name that helper itself)."""
    raise AssertionError("never called")


def _newobj_ex_by_reduce() -> bytes:
    blob = _categorical_made_by(_stand_in, (pd.Categorical, (), {}))
    name = f"c{__name__}\n_stand_in\n".encode()
    assert blob.count(name) == 1
    return blob.replace(name, b"ccopyreg\n__newobj_ex__\n")


def _series_two_dimensional(rows: int = 200_000) -> bytes:
    values = np.arange(2.0 * rows).reshape(2, rows)
    return _series_values(values, rows)  # the Series' manager, its one block (2, rows)


def _frame_placement_past_rows() -> bytes:
    frame = pd.DataFrame({"a": np.arange(4.0)})
    columns = pd.Index([f"c{i}" for i in range(200_000)], dtype=object)
    values = np.arange(4.0).reshape(1, 4)

    def reduce(mgr: BlockManager) -> tuple[Any, ...]:
        axes = [columns, mgr.axes[1]]
        blocks = [{"values": values, "mgr_locs": slice(0, 200_000, 1)}]
        state = (axes, [values], [columns], {"0.14.1": {"axes": axes, "blocks": blocks}})
        return copyreg.__newobj__, (BlockManager,), state  # type: ignore[attr-defined]

    return _pickled(frame, reduce)


def _helper_236_cases() -> dict[str, tuple[Callable[[], bytes], str]]:
    from pandas.core.indexes.datetimes import _new_DatetimeIndex
    from pandas.core.indexes.timedeltas import _new_TimedeltaIndex

    return {
        "date-helper-makes-categorical": (lambda: _categorical_made_by(_new_DatetimeIndex, (pd.Categorical, {})),
                                          f"a code from 0 to {FAR - 1}"),
        "time-delta-helper-makes-categorical": (lambda: _categorical_made_by(_new_TimedeltaIndex,
                                                                            (pd.Categorical, {})),
                                                f"a code from 0 to {FAR - 1}"),
        "newobj-ex-by-reduce": (_newobj_ex_by_reduce, f"a code from 0 to {FAR - 1}"),
        "series-two-dimensional": (_series_two_dimensional, "a Series block of shape (2, 200000)"),
        "frame-placement-past-rows": (_frame_placement_past_rows, "a block of shape (1, 4) placed at 200000 columns"),
    }  # fmt: skip


def test_helper_236_cases_crash_pandas(tmp_path: Path) -> None:
    """The frame whose placement runs past its rows is left out: pandas reads past the block (helper 236 printed heap
    values through iloc, and crashed at repr once), but where that lands is not the same from run to run."""
    cases = {key: value for key, value in _helper_236_cases().items() if key != "frame-placement-past-rows"}
    setup = "import pickle\ndef load(path, option):\n    repr(pickle.load(open(path, 'rb')))\n"
    outcomes = _loaded(tmp_path, setup, {label: (make(), "") for label, (make, _) in cases.items()}, 180)
    assert outcomes == dict.fromkeys(cases, "crashed: wait status 11")


@pytest.mark.parametrize("case", ["date-helper-makes-categorical", "time-delta-helper-makes-categorical",
                                  "newobj-ex-by-reduce", "series-two-dimensional", "frame-placement-past-rows"])
def test_helper_236_cases_are_high(tmp_path: Path, case: str) -> None:
    make, detail = _helper_236_cases()[case]
    found = _high(tmp_path, make())
    assert any(f.startswith(RULE) and detail in f for f in found), found


# Helper 237's fifth round: a zone given transition data by a state, sparse values fewer than their index's points,
# and a date array's ndarray of another type. Each crashed pandas 1.5, 2.2 and 3.1 (here 3.1) and passed the scan.
def _zone_with_transitions(times: int, offsets: int) -> bytes:
    """A Series in a dateutil zone whose rebuilt zone a BUILD then gives pytz's transition attributes: pandas takes any
    zone with them for pytz's, and indexes the offsets by positions among the times."""
    import datetime

    from dateutil import tz as dateutil_tz

    series = pd.Series(pd.date_range("2020-01-01", periods=3, tz=dateutil_tz.gettz("Europe/Berlin"), unit="ns"))
    years = [datetime.datetime(1900 + k, 1, 1) for k in range(100)]  # shared: a hundred memo entries
    moments = [datetime.datetime(1, 1, 1)] + [years[i * 100 // max(times - 1, 1)] for i in range(times - 1)]
    info = [(datetime.timedelta(hours=1), datetime.timedelta(0), "CET")] * offsets

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, dateutil_tz.tzfile):
                func, args = obj.__reduce__()[:2]
                return func, args, {"_utc_transition_times": moments, "_transition_info": info}
            return NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump(series)
    return buffer.getvalue()


def _sparse_short(length: int) -> bytes:
    """Two sparse columns whose BlockIndex covers `length` rows but which store the one value they were made with:
    pandas' sparse arithmetic reads a stored value for each point of the index."""
    from pandas._libs.sparse import BlockIndex

    def column(split: int) -> pd.arrays.SparseArray:
        array = pd.arrays.SparseArray(np.array([1.0, 0.0]), fill_value=0.0, kind="block")
        array._sparse_index = BlockIndex(length, np.array([0, split + 1], dtype=np.int32),
                                         np.array([split, length - split - 1], dtype=np.int32))  # fmt: skip
        return array

    return pickle.dumps(pd.DataFrame({"a": column(length // 2), "b": column(length // 4)}), protocol=4)


def _dates_as(kind: str) -> bytes:
    """A Series of dates whose DatetimeArray's ndarray holds the same values as `kind` (int64) instead of
    datetime64[ns]."""
    series = pd.Series(pd.date_range("2020-01-01", periods=4))
    array = series.array

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if obj is array:
                func, args, state = obj.__reduce_ex__(4)[:3]
                return func, args, (state[0], np.asarray(state[1]).view("i8").astype(kind), *state[2:])
            return NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump(series)
    return buffer.getvalue()


HELPER_237: dict[str, tuple[Callable[[], bytes], str, str, str]] = {
    "zone-transitions": (lambda: _zone_with_transitions(2_000_000, 1), "repr", "WS-PKL-064",
                         "_transition_info, _utc_transition_times"),
    "sparse-values-short": (lambda: _sparse_short(20_000_000), "add", "WS-PKL-059",
                            "(1,) stored values under a sparse index of 19999999 points"),
    "dates-as-int64": (lambda: _dates_as("i8"), "repr", "WS-PKL-059", "a dtype 'i8', not a time"),
}  # fmt: skip


def test_helper_237_cases_crash_pandas(tmp_path: Path) -> None:
    setup = ("import pickle\ndef load(path, option):\n    value = pickle.load(open(path, 'rb'))\n"
             "    repr(value['a'] + value['b']) if option == 'add' else repr(value)\n")  # fmt: skip
    outcomes = _loaded(tmp_path, setup, {label: (make(), use) for label, (make, use, _, _) in HELPER_237.items()}, 180)
    assert outcomes == dict.fromkeys(HELPER_237, "crashed: wait status 11")


@pytest.mark.parametrize("case", list(HELPER_237))
def test_helper_237_cases_are_high(tmp_path: Path, case: str) -> None:
    make, _, rule, detail = HELPER_237[case]
    found = _high(tmp_path, make() if case != "zone-transitions" else _zone_with_transitions(50, 1))
    assert any(f.startswith(rule) and detail in f for f in found), found


@pytest.mark.parametrize("make", [
    lambda: pickle.dumps(pd.Series(pd.date_range("2020", periods=3, tz="Europe/Berlin", unit="s"))),
    lambda: pickle.dumps(pd.Series(pd.timedelta_range("1D", periods=3, unit="ms"))),
    lambda: pickle.dumps(pd.Series(pd.period_range("2020-01", periods=3, freq="M"))),
    lambda: pickle.dumps(pd.DataFrame({"a": pd.arrays.SparseArray([0.0, 1.0, 0.0, 2.0], kind="block"),
                                       "b": pd.arrays.SparseArray([0, 3, 0, 0], kind="integer")})),
    lambda: pickle.dumps(pd.Series(pd.date_range("2020", periods=3, tz="dateutil/Europe/Berlin"))),
], ids=["dates-seconds", "deltas-milliseconds", "periods", "sparse-both-kinds", "dateutil-zone"])  # fmt: skip
def test_real_time_and_sparse_arrays_pass(tmp_path: Path, make: Callable[[], bytes]) -> None:
    assert _high(tmp_path, make()) == []


def _period_code(code: int) -> bytes:
    """A Series of daily periods whose PeriodDtype is made from a DateOffset given `_period_dtype_code` by its state
    (helper 240): PeriodDtype takes the code unchecked, and period code indexes a conversion table with it."""
    offset = pd.DateOffset()
    offset.__dict__["_period_dtype_code"] = code

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            return (pd.PeriodDtype, (offset,)) if isinstance(obj, pd.PeriodDtype) else NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump(pd.Series(pd.period_range("2000-01-01", periods=1000, freq="D")))
    return buffer.getvalue()


def test_a_frequency_code_set_by_a_state_reads_past_pandas_table_and_is_high(tmp_path: Path) -> None:
    """The read lands megabytes past pandas' conversion table: years come out as garbage (a crash when it lands on
    unmapped memory, one load in five to twenty), so the proof is the year, read in a sandboxed child."""
    path = tmp_path / "periods.pkl"
    path.write_bytes(_period_code(1_053_169_000))
    setup = ("import pickle\ndef load(path, option):\n    year = int(pickle.load(open(path, 'rb')).dt.year.iloc[0])\n"
             "    assert year != 2000, year\n")  # fmt: skip
    outcome = load_each(setup, [("code", path, "", tmp_path / "never-made")], tmp_path, timeout=120)["code"].result
    assert outcome in ("loaded", "crashed: wait status 11")  # loaded: the assertion held, the year was garbage
    found = _high(tmp_path, path.read_bytes())
    assert any(f.startswith("WS-PKL-064") and "_period_dtype_code" in f for f in found), found
    assert _high(tmp_path, pickle.dumps(pd.Series(pd.period_range("2000-01-01", periods=3, freq="D")))) == []


# Helper 242's seventh round: a state given, at the stream's end, to what pandas' helpers made whole (an index from
# `_new_Index`, a block from `_unpickle_block`), after pandas checked the frame against them. Each crashed pandas.
def _late_build(obj: Any, target: Any, state: Any) -> bytes:
    """`obj` pickled as pandas writes it (protocol 2), then a BUILD of `state` on `target`, an object in it, before
    STOP: a memo lookup of the target, the state, BUILD, POP (helper 242's streams)."""
    buffer = io.BytesIO()
    pickler = pickle._Pickler(buffer, 2)  # type: ignore[attr-defined]  # the Python pickler: its memo is readable
    pickler.dump(obj)
    memo_id = pickler.memo[id(target)][0]
    tail = io.BytesIO()
    state_pickler = pickle._Pickler(tail, 2)  # type: ignore[attr-defined]
    state_pickler.memo = dict(pickler.memo)  # what the stream holds stays a reference to it
    state_pickler.dump(state)
    get = b"j" + memo_id.to_bytes(4, "little")  # LONG_BINGET
    return buffer.getvalue()[:-1] + get + tail.getvalue()[2:-1] + b"b0."


def test_states_given_to_what_pandas_made_whole_are_high(tmp_path: Path) -> None:
    """A RangeIndex given `_range` of 10**9 over three values crashed pandas 3.1 at repr; the others read past."""
    series = pd.Series([1.0, 2.0, 3.0])
    blob = _late_build(series, series.index, {"_range": range(0, 10**9)})
    path = tmp_path / "late.pkl"
    path.write_bytes(blob)
    setup = "import pickle\ndef load(path, option):\n    repr(pickle.load(open(path, 'rb')))\n"
    outcome = load_each(setup, [("late", path, "", tmp_path / "never-made")], tmp_path, timeout=120)["late"].result
    assert outcome == "crashed: wait status 11"
    found = _high(tmp_path, blob)
    assert any(f.startswith("WS-PKL-018") and "_new_Index" in f for f in found), found
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    found = _high(tmp_path, _late_build(frame, frame.index, {"_cache": {"_data": np.arange(10**3)}}))
    assert any(f.startswith("WS-PKL-018") for f in found), found
    block = frame._mgr.blocks[0]
    found = _high(tmp_path, _late_build(frame, block, (block.mgr_locs.as_array, np.zeros((2, 1)), 2)))
    assert any(f.startswith("WS-PKL-018") and "_unpickle_block" in f for f in found), found
    assert _high(tmp_path, pickle.dumps(frame, protocol=2)) == []


@pytest.mark.parametrize("maker", [("pytz", "_p"), ("dateutil.tz._tzfile", "_unpickle"), ("dateutil.tz.tz", "tzutc")])
def test_a_state_on_a_zone_its_maker_returns_whole_is_high(tmp_path: Path, maker: tuple[str, str]) -> None:
    """pytz's and zoneinfo's zones are shared by the whole process and dateutil's are rebuilt from their data: no
    writer sets a state on one, here a harmless-looking attribute."""
    module, name = maker
    stream = (b"\x80\x02c" + module.encode() + b"\n" + name.encode() + b"\n(X\x0d\x00\x00\x00Europe/BerlintR"
              + b"}X\x04\x00\x00\x00zoneX\x01\x00\x00\x00xsb.")  # fmt: skip
    assert any(f.startswith("WS-PKL-018") for f in _high(tmp_path, stream))


# Helper 243's eighth round: a sparse block of negative length (the lengths still add up to the values stored), a
# fiscal year offset whose starting month indexes past the calendar's tables, and a MultiIndex whose levels' codes
# differ in length. The first two crashed pandas 1.5, 2.2 and 3.1 (here 3.1); the third reads past the short level's
# codes (valgrind) without a crash.
def _sparse_negative_block() -> bytes:
    from pandas._libs.sparse import BlockIndex

    half = 10_000_000
    index = BlockIndex(2 * half, np.array([0, half + 1], dtype=np.int32), np.array([half, 2 - half], dtype=np.int32))
    values = pd.arrays.SparseArray._simple_new(np.array([1.0, 2.0]), index, pd.SparseDtype(np.float64, 0.0))
    return pickle.dumps(pd.Series(values), protocol=4)


def _ragged_multi_index() -> bytes:
    index = pd.MultiIndex(levels=[["a"], [0, 1]], codes=[np.zeros(1000, dtype=np.int8), np.zeros(1, dtype=np.int8)],
                          verify_integrity=False)  # fmt: skip
    series = pd.Series(np.arange(1000, dtype=np.float64))
    series._mgr.axes[0] = index
    return pickle.dumps(series, protocol=4)


HELPER_243: dict[str, tuple[Callable[[], bytes], str, str]] = {
    "sparse-negative-block": (_sparse_negative_block, "sparse-add", "a sparse block that is empty, negative"),
    "fiscal-month": (lambda: pickle.dumps(pd.offsets.FY5253(weekday=1, startingMonth=100_000_000, variation="nearest")),
                     "rollforward", "startingMonth of 100000000, outside 1 to 12"),
    "fiscal-quarter-month": (lambda: pickle.dumps(pd.offsets.FY5253Quarter(
        weekday=1, startingMonth=-100_000_000, qtr_with_extra_week=1, variation="nearest")), "rollforward",
        "startingMonth of -100000000"),
    "ragged-multi-index": (_ragged_multi_index, "monotonic", "levels whose codes are 1 to 1000 long"),
}  # fmt: skip
HELPER_243_LOAD = """
import pickle
import numpy as np
import pandas as pd
def load(path, option):
    value = pickle.load(open(path, 'rb'))
    if option == 'sparse-add':
        dense = np.zeros(len(value)); dense[-5_000_000:] = 1.0
        repr(value.array + pd.arrays.SparseArray(dense, fill_value=0.0, kind='block'))
    elif option == 'rollforward':
        value.rollforward(pd.Timestamp('2020-01-01'))
    else:
        value.index.is_monotonic_increasing
"""


def test_helper_243_cases_crash_pandas_or_load(tmp_path: Path) -> None:
    files = {label: (make(), use) for label, (make, use, _) in HELPER_243.items()}
    outcomes = _loaded(tmp_path, HELPER_243_LOAD, files, 180)
    crashed = "crashed: wait status 11"
    assert outcomes == {"sparse-negative-block": crashed, "fiscal-month": crashed, "fiscal-quarter-month": crashed,
                        "ragged-multi-index": "loaded"}  # fmt: skip


@pytest.mark.parametrize("case", list(HELPER_243))
def test_helper_243_cases_are_high(tmp_path: Path, case: str) -> None:
    make, _, detail = HELPER_243[case]
    found = _high(tmp_path, make())
    assert any(f.startswith("WS-PKL-059") and detail in f for f in found), found


@pytest.mark.parametrize("make", [
    lambda: pickle.dumps(pd.Series(pd.arrays.SparseArray([0, 1, 2, 0, 0, 3, 4, 0, 5], kind="block"))),
    lambda: pickle.dumps(pd.Series(pd.arrays.SparseArray([1, 2, 3], kind="block"))),
    lambda: pickle.dumps(pd.Series(pd.arrays.SparseArray([0, 0, 0], kind="block"))),
    lambda: pickle.dumps([pd.offsets.FY5253(weekday=d, startingMonth=m, variation=v) for d in range(7)
                          for m in range(1, 13) for v in ("nearest", "last")]),
    lambda: pickle.dumps([pd.offsets.FY5253Quarter(weekday=4, startingMonth=12, qtr_with_extra_week=q)
                          for q in range(1, 5)]),
    lambda: pickle.dumps(pd.Series(range(5), index=pd.date_range("2000", periods=5, freq=pd.offsets.FY5253(
        weekday=2, startingMonth=6, variation="nearest")))),
    lambda: pickle.dumps(pd.Series(range(24), index=pd.MultiIndex.from_product([["a", "b"], [1, 2, 3], [4, 5, 6, 7]]))),
    lambda: pickle.dumps(pd.MultiIndex.from_arrays([["a", None, "b"], [1, 2, None]])),
], ids=["sparse-blocks", "sparse-full", "sparse-empty", "fiscal-years", "fiscal-quarters", "fiscal-index",
        "multi-index", "multi-index-missing"])  # fmt: skip
def test_real_sparse_fiscal_and_multi_index_objects_pass(tmp_path: Path, make: Callable[[], bytes]) -> None:
    assert _high(tmp_path, make()) == []


# Helper 245's ninth round: an index restored by copyreg's reconstructor and a BUILD (pandas writes `_new_Index`)
# whose state fills the cache pandas reads before its data. A RangeIndex caching 3 values over a range of 10^7
# crashed `astype("string")` in pandas 2.2 and 3.1; an IntervalIndex caching 2,000,000 ends over 5 intervals
# crashed `reindex` in 1.5 to 3.1 (and leaked heap values as rows).
class _Restored:
    """Pickles as copyreg._reconstructor(cls, object, None) with `state`."""

    def __init__(self, cls: type, state: dict[str, Any]) -> None:
        self.cls, self.state = cls, state

    def __reduce_ex__(self, protocol: object) -> tuple[Any, ...]:
        import copyreg

        return copyreg._reconstructor, (self.cls, object, None), self.state  # type: ignore[attr-defined]


def _range_caching(length: int, cached: int) -> bytes:
    state = {"_range": range(length), "_name": None, "_cache": {"_data": np.arange(cached)}, "_id": None}
    return pickle.dumps(_Restored(pd.RangeIndex, state), protocol=4)


def test_an_index_restored_with_a_filled_cache_crashes_pandas_and_is_high(tmp_path: Path) -> None:
    path = tmp_path / "range.pkl"
    path.write_bytes(_range_caching(10**7, 3))
    setup = "import pickle\ndef load(path, option):\n    pickle.load(open(path, 'rb')).astype('string')\n"
    outcome = load_each(setup, [("range", path, "", tmp_path / "never-made")], tmp_path, timeout=120)["range"].result
    assert outcome == "crashed: wait status 11"
    found = _high(tmp_path, path.read_bytes())
    assert any(f.startswith("WS-PKL-059") and "filled cache" in f for f in found), found
    intervals = pd.interval_range(0, 5)
    ends = pd.Index(np.arange(10.0))
    state = {"_data": intervals.array, "_name": None, "_cache": {"left": ends, "right": ends + 1}}
    frame = pd.DataFrame({"a": np.arange(5.0)})
    frame.index = intervals

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            return _Restored(pd.IntervalIndex, state).__reduce_ex__(4) if obj is frame.index else NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump(frame)
    found = _high(tmp_path, buffer.getvalue())
    assert any(f.startswith("WS-PKL-059") and "filled cache" in f for f in found), found
    assert _high(tmp_path, pickle.dumps(_Restored(pd.RangeIndex, {"_range": range(3), "_name": None}))) == []
