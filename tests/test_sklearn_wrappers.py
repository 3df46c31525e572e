"""MAPIE's conformal predictors and skforecast's forecasters: real saves pass, and what real saves never do stays
flagged. Helper 231's sweep found every MAPIE and skforecast file high (WS-PKL-003: no allowlist held their classes).
The files are the libraries' own (tests/data/sklearn_wrappers/README.md); the classes are in
rules/allow-sklearn-wrappers.yaml, recorded and screened by tools/gen_sklearn_wrappers_allowlist.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pickle_bytes import binunicode as _s
from tests.helpers.pickle_bytes import global_op as _g
from tests.helpers.scanning import scan, scan_bytes
from wscan.model import Severity

WRAPPERS = Path(__file__).parent / "data" / "sklearn_wrappers"


@pytest.mark.parametrize("path", sorted(WRAPPERS.glob("*.*[bl]")), ids=lambda path: path.name)
def test_real_mapie_and_skforecast_saves_pass(path: Path) -> None:
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def test_the_catalogue_covers_both_libraries_both_ways() -> None:
    """Each model is kept as pickle.dump and joblib.dump (skforecast's save_forecaster) wrote it."""
    pickles = {path.stem for path in WRAPPERS.glob("*.pkl")}
    assert pickles == {path.stem for path in WRAPPERS.glob("*.joblib")}
    assert {stem.split("_")[0] for stem in pickles} == {"mapie", "skforecast"}
    assert len(pickles) == 19


def _state(klass: bytes, key: str, value: bytes) -> bytes:
    """An object of `klass` made as copyreg does (no constructor), with `key` set to `value` by BUILD."""
    return klass + b")\x81}(" + _s(key) + value + b"ub"


RECURSIVE = _g("skforecast.recursive._forecaster_recursive", "ForecasterRecursive")
EQUIVALENT_DATE = _g("skforecast.recursive._forecaster_equivalent_date", "ForecasterEquivalentDate")


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        # a forecaster called with arguments of the file's: real saves restore every one from state
        (RECURSIVE + b"(" + _g("sklearn.linear_model._ridge", "Ridge") + b")\x81tR", "WS-PKL-014"),
        # one of the pack's classes set where the forecaster's own method is looked up
        (_state(RECURSIVE, "predict", _g("mapie.subsample", "Subsample")), "WS-PKL-026"),
        # the functions a forecaster keeps (ForecasterEquivalentDate's agg_func is numpy.mean in real saves)
        (_state(EQUIVALENT_DATE, "agg_func", _g("builtins", "exec")), "WS-PKL-001"),
        (_state(EQUIVALENT_DATE, "agg_func", _g("builtins", "print")), "WS-PKL-052"),
        (_state(RECURSIVE, "weight_func", _g("os", "system")), "WS-PKL-001"),
    ],
    ids=["called", "method-replaced", "agg-exec", "agg-print", "weight-system"],
)
def test_wrapper_classes_stay_judged_outside_what_real_saves_do(tmp_path: Path, body: bytes, rule: str) -> None:
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "forecaster.pkl").findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}, [f.rule_id for f in found]
