"""kmodes, pygam, mlxtend and pmdarima models: real saves pass, and what real saves never do stays flagged. Helper
250's sweep found every such file high (WS-PKL-003; pmdarima's also for statsmodels' state-space objects,
WS-PKL-014). The files are the libraries' own (tests/data/sklearn_compatible/README.md); the names are in
rules/allow-sklearn-compatible.yaml, recorded and screened by tools/gen_sklearn_compatible_allowlist.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pickle_bytes import binunicode as _s
from tests.helpers.pickle_bytes import global_op as _g
from tests.helpers.scanning import scan, scan_bytes
from wscan.model import Severity

SAVES = Path(__file__).parent / "data" / "sklearn_compatible"
KMODES = _g("kmodes.kmodes", "KModes")
GAM = _g("pygam.pygam", "LinearGAM")
STACKING = _g("mlxtend.classifier.stacking_classification", "StackingClassifier")


@pytest.mark.parametrize("path", sorted(SAVES.glob("*.*[bl]")), ids=lambda path: path.name)
def test_real_saves_pass(path: Path) -> None:
    assert [f"{f.rule_id}: {f.message}" for f in scan(path).findings if f.severity >= Severity.HIGH] == []


def test_the_catalogue_is_kept_both_ways() -> None:
    """Every model pickled and saved with joblib, but pmdarima's (large: two of its eight are kept both ways)."""
    pickles = {path.stem for path in SAVES.glob("*.pkl")}
    both = {stem for stem in pickles if not stem.startswith("pmdarima")} | {
        "pmdarima_auto_arima", "pmdarima_pipeline_boxcox_fourier"}  # fmt: skip
    assert both == {path.stem for path in SAVES.glob("*.joblib")}
    assert len(pickles) == 29


def _keeping(value: bytes, key: str = "cat_dissim", cls: bytes = KMODES) -> bytes:
    """An object made as copyreg does (memo 0), whose state sets `key` to `value`."""
    return cls + b")\x81q\x00}(" + _s(key) + value + b"ub"


def _high(tmp_path: Path, body: bytes) -> set[str]:
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    return {f.rule_id for f in found if f.severity >= Severity.HIGH}


def test_a_dissimilarity_function_as_kmodes_keeps_it_passes(tmp_path: Path) -> None:
    """The control for the cases below: KModes keeping kmodes' matching_dissim, as its real save writes it."""
    assert _high(tmp_path, _keeping(_g("kmodes.util.dissim", "matching_dissim"))) == set()


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        # the function kmodes calls at predict() set to one of the file's
        (_keeping(_g("builtins", "exec")), "WS-PKL-001"),
        (_keeping(_g("numpy", "save")), "WS-PKL-003"),
        # ... to an object, whose call runs what its own state holds: real files keep a named function there
        (_keeping(_g("sklearn.metrics._scorer", "_Scorer") + b")\x81", "num_dissim",
                  _g("kmodes.kprototypes", "KPrototypes")), "WS-PKL-027"),
        # a dissimilarity function called while the file loads
        (_g("kmodes.util.dissim", "matching_dissim") + b"(K\x01K\x02tR", "WS-PKL-003"),
        # a model called with arguments: real saves restore every one from state
        (GAM + b"(K\x01tR", "WS-PKL-014"),
        # a method replaced by the state
        (_keeping(_g("builtins", "print"), "predict", STACKING), "WS-PKL-026"),
        (_keeping(_g("builtins", "print"), "link", GAM), "WS-PKL-026"),
    ],
    ids=["exec", "numpy-save", "object", "called", "constructor", "predict", "gam-link"],
)
def test_these_classes_stay_judged_outside_what_real_saves_do(tmp_path: Path, body: bytes, rule: str) -> None:
    assert rule in _high(tmp_path, body)
