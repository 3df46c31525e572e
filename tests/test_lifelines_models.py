"""lifelines' fitted survival models: real saves pass, and what real saves never do stays flagged. Helper 231's sweep
found every lifelines file high (WS-PKL-003) and the parametric regression fitters critical (WS-PKL-017 for the
bound methods their objective keeps). The files are lifelines' own (tests/data/lifelines/README.md); the classes and
bound methods are in rules/allow-lifelines.yaml, recorded and screened by tools/gen_lifelines_allowlist.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pickle_bytes import binunicode as _s
from tests.helpers.pickle_bytes import global_op as _g
from tests.helpers.scanning import scan, scan_bytes
from wscan.model import Severity

LIFELINES = Path(__file__).parent / "data" / "lifelines"
# Fitted with a formula of their own (AFT regressors, a spline or piecewise Cox baseline): formulaic's ModelSpec,
# whose factors formulaic evaluates as Python when the model predicts, is on no list.
FORMULA_MODELS = {"weibull_aft", "weibull_aft_interval", "log_normal_aft", "log_logistic_aft", "cox_ph_spline",
                  "cox_ph_piecewise"}  # fmt: skip
SAVES = sorted(LIFELINES.glob("*.*[bl]"))


def _high(path: Path) -> list[str]:
    return [f"{f.rule_id}: {f.message}" for f in scan(path).findings if f.severity >= Severity.HIGH]


@pytest.mark.parametrize("path", [p for p in SAVES if p.stem not in FORMULA_MODELS], ids=lambda path: path.name)
def test_real_lifelines_saves_pass(path: Path) -> None:
    assert _high(path) == []


@pytest.mark.parametrize("path", [p for p in SAVES if p.stem in FORMULA_MODELS], ids=lambda path: path.name)
def test_formula_models_stay_high_for_formulaic_alone(path: Path) -> None:
    """Their fitters, objectives and bound methods pass; formulaic's classes do not."""
    found = _high(path)
    assert found
    assert all(line.startswith("WS-PKL-003: Loading imports formulaic.") for line in found), found


def test_the_catalogue_is_kept_both_ways() -> None:
    pickles = {path.stem for path in LIFELINES.glob("*.pkl")}
    assert pickles == {path.stem for path in LIFELINES.glob("*.joblib")}
    assert len(pickles) == 27
    assert pickles >= FORMULA_MODELS


NELSON_AALEN = _g("lifelines.fitters.nelson_aalen_fitter", "NelsonAalenFitter")
KAPLAN_MEIER = _g("lifelines.fitters.kaplan_meier_fitter", "KaplanMeierFitter")
GETATTR = _g("builtins", "getattr")


def _fitter_keeping(value: bytes, key: str = "_variance_f", fitter: bytes = NELSON_AALEN) -> bytes:
    """A fitter made as copyreg does (memo 0), whose state sets `key` to `value`."""
    return fitter + b")\x81q\x00}(" + _s(key) + value + b"ub"


def _bound(method: str) -> bytes:
    """getattr(<the fitter at memo 0>, method): how pickle writes a bound method."""
    return GETATTR + b"h\x00" + _s(method) + b"\x86R"


@pytest.mark.parametrize(
    "body",
    [_fitter_keeping(_bound("_variance_f_smooth")), _fitter_keeping(_bound("plot"), "plot_cumulative_hazard")],
    ids=["smoothing-function", "plot-alias"],
)
def test_a_fitters_recorded_bound_methods_pass(tmp_path: Path, body: bytes) -> None:
    """What Nelson-Aalen keeps, as its real save writes it (the controls for the cases below)."""
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    assert [f.rule_id for f in found if f.severity >= Severity.HIGH] == []


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        # a method no real save keeps bound
        (_fitter_keeping(_bound("fit")), "WS-PKL-017"),
        # a recorded method looked up on the class: the function would take the file's first argument
        (_fitter_keeping(GETATTR + NELSON_AALEN + _s("_variance_f_smooth") + b"\x86R"), "WS-PKL-017"),
        # ... called while the file loads
        (_fitter_keeping(_bound("_variance_f_smooth") + b"(K\x01K\x02tR"), "WS-PKL-017"),
        # ... bound to a fitter of another class (Kaplan-Meier has no such method recorded)
        (_fitter_keeping(_bound("_variance_f_smooth"), fitter=KAPLAN_MEIER), "WS-PKL-017"),
        # a method's name set to a function of the file's
        (_fitter_keeping(_g("builtins", "exec"), "plot_cumulative_hazard"), "WS-PKL-001"),
        (_fitter_keeping(_g("builtins", "print"), "plot_cumulative_hazard"), "WS-PKL-026"),
        # a fitter called with arguments: real saves restore every one from state
        (_g("lifelines.fitters.coxph_fitter", "CoxPHFitter") + b"(K\x01tR", "WS-PKL-014"),
    ],
    ids=["other-method", "on-class", "called", "other-fitter", "exec", "print", "constructor"],
)
def test_lifelines_classes_stay_judged_outside_what_real_saves_do(tmp_path: Path, body: bytes, rule: str) -> None:
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}, [f.rule_id for f in found]
