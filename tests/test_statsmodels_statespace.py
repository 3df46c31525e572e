"""statsmodels' state-space results: the Cython objects their pickles call are checked for the sizes their compiled
code trusts (`pickle_native_statsmodels`). Every such result was high before (WS-PKL-014: the calls), since review
67 crashed pickle.load through one; helper 252 wrote the specification and the files (tests/data/statsmodels/
statespace/README.md): the real ones pass now, and each size a file lies about is high (WS-PKL-059)."""

from __future__ import annotations

import io
import pickle
import pickletools
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.pickle_bytes import binunicode
from tests.helpers.scanning import scan, scan_bytes
from wscan.model import Severity

DATA = Path(__file__).parent / "data" / "statsmodels" / "statespace"


def _high(path: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in scan(path).findings:
        if f.severity >= Severity.HIGH:
            found.setdefault(f.rule_id, []).append(f.message)
    return found


@pytest.mark.parametrize("path", sorted(DATA.glob("*.pkl")), ids=lambda path: path.name)
def test_real_state_space_results_pass(path: Path) -> None:
    assert _high(path) == {}


@pytest.mark.parametrize("path", sorted((DATA / "hostile").glob("*.pkl")), ids=lambda path: path.stem)
def test_each_size_a_result_lies_about_is_high(path: Path) -> None:
    found = _high(path)
    assert "WS-PKL-059" in found, found


@pytest.mark.parametrize(
    "body",
    [
        # cls.__new__(cls), then a state: no constructor sized anything (copyreg and NEWOBJ)
        b"cstatsmodels.tsa.statespace._representation\ndStatespace\n)\x81}b",
        b"ccopyreg\n__newobj__\ncstatsmodels.tsa.statespace._kalman_filter\ndKalmanFilter\n\x85R}b",
        # a filter given a number for its model
        b"cstatsmodels.tsa.statespace._kalman_filter\ndKalmanFilter\nK\x01\x85R",
        # the single-precision twin, which no results object keeps
        b"cstatsmodels.tsa.statespace._initialization\nsInitialization\nK\x01\x85R",
    ],
    ids=["newobj", "copyreg", "model-not-a-representation", "single-precision"],
)
def test_state_space_objects_no_results_object_keeps_are_high(tmp_path: Path, body: bytes) -> None:
    report = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl")
    assert "WS-PKL-059" in {f.rule_id for f in report.findings if f.severity >= Severity.HIGH}


def _fragment(value: object) -> bytes:
    """A value's protocol-2 opcodes without PROTO, STOP or memo writes, to splice into a stream."""
    return pickletools.optimize(pickle.dumps(value, protocol=2))[2:-1]


INITIALIZATION = b"cstatsmodels.tsa.statespace._initialization\ndInitialization\n"
ONE_BY_ONE = _fragment(np.zeros((1, 1)))
CALL = INITIALIZATION + b"(K\x01" + _fragment(np.zeros(1)) + _fragment(np.zeros((1, 1), order="F")) + b"tR"


def _state(size: int, memo: bool = False) -> bytes:
    temporary = _fragment(np.zeros((size, size), order="F"))
    return (b"}" + (b"q\x07" if memo else b"") + b"(" + binunicode("_tmp_transition") + temporary
            + binunicode("_tmp_selected_state_cov") + temporary + b"u")  # fmt: skip


@pytest.mark.parametrize(
    ("body", "high"),
    [
        (CALL + _state(1) + b"b", False),  # an Initialization of one state, as statsmodels writes it
        (CALL + _state(2) + b"b", True),  # ... its temporaries sized for another
        (CALL + _state(1) + b"b" + _state(1) + b"b", True),  # ... given a state twice
        # ... given temporaries of 5 x 5, its dict then changed to what fits: __setstate__ took the dict as it was
        (CALL + _state(5, memo=True) + b"b0h\x07" + binunicode("_tmp_transition") + ONE_BY_ONE + b"s"
         + binunicode("_tmp_selected_state_cov") + ONE_BY_ONE + b"s", True),
    ],
    ids=["real-shape", "other-size", "twice", "changed-after"],
)
def test_a_state_is_judged_as_its_build_gave_it(tmp_path: Path, body: bytes, high: bool) -> None:
    report = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl")
    assert ("WS-PKL-059" in {f.rule_id for f in report.findings}) == high, [f.message for f in report.findings]


class _SharedBytes(pickle.Pickler):
    """Writes every array as `_reconstruct` with one bytes object as its data: pickle then hands the bytes out again
    from its memo, and NumPy (over 1,000 bytes) builds each array on them in place (helper 253)."""

    def __init__(self, file: io.BytesIO, data: bytes) -> None:
        super().__init__(file, protocol=4)
        self.data = data

    def reducer_override(self, obj: object) -> object:
        if isinstance(obj, np.ndarray) and obj.ndim == 2:
            return np.ndarray.__reduce__(obj)[0], (np.ndarray, (0,), b"b"), (1, obj.shape, obj.dtype, True, self.data)
        return NotImplemented


def _initialization(monkeypatch: pytest.MonkeyPatch, first: np.ndarray, second: np.ndarray) -> type:
    """A stand-in class pickled under statsmodels' name, reducing as dInitialization does: (1, constant, covariance)
    and its two temporaries as the state."""
    name = "statsmodels.tsa.statespace._initialization"
    for depth in range(1, name.count(".") + 2):
        monkeypatch.setitem(sys.modules, name.rsplit(".", name.count(".") + 1 - depth)[0], types.ModuleType("stand-in"))

    class dInitialization:  # the name pickle writes
        def __reduce__(self) -> tuple[object, ...]:
            state = {"_tmp_transition": first, "_tmp_selected_state_cov": second}
            return dInitialization, (1, np.zeros(1), np.zeros((1, 1), order="F")), state

    dInitialization.__module__ = name
    dInitialization.__qualname__ = "dInitialization"
    monkeypatch.setattr(sys.modules[name], "dInitialization", dInitialization, raising=False)
    return dInitialization


def test_arrays_on_one_memory_are_high(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An Initialization's two temporaries as one array handed out twice, or as two arrays on the same bytes: what
    writes one writes the other (helper 253 had the model's step write a count into `nmissing` so, SIGSEGV). Two
    arrays of their own pass."""
    one = np.zeros((1, 1), order="F")
    cls = _initialization(monkeypatch, one, one)
    found = scan_bytes(tmp_path, pickle.dumps(cls(), protocol=4), "a.pkl").findings
    assert any(f.rule_id == "WS-PKL-059" and "shares" in f.message for f in found), [f.message for f in found]
    cls = _initialization(monkeypatch, np.zeros((1, 1), order="F"), np.zeros((1, 1), order="F"))
    assert not [f for f in scan_bytes(tmp_path, pickle.dumps(cls(), protocol=4), "b.pkl").findings
                if f.severity >= Severity.HIGH]  # fmt: skip
    buffer = io.BytesIO()
    _SharedBytes(buffer, bytes(8)).dump(cls())
    found = scan_bytes(tmp_path, buffer.getvalue(), "c.pkl").findings
    assert any(f.rule_id == "WS-PKL-059" and "shares" in f.message for f in found), [f.message for f in found]
