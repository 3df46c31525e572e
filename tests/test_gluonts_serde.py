"""GluonTS's serialized predictors: every class its decoder imports and calls is judged as a config target.

GluonTS 0.14.4's `Predictor.deserialize` ran `os.system` named in predictor.json, and helper 273's objects below
(tests/data/gluonts/README.md: the loader proofs were made by hand; GluonTS is not a test dependency). The real folders
are GluonTS 0.17.0's own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.scanning import scan
from wscan.model import Severity

GLUONTS = Path(__file__).parent / "data" / "gluonts"
PAYLOAD = {"__kind__": "instance", "class": "os.system", "args": ["touch /tmp/wscan-gluonts-marker"]}


CATALOGUE = Path(__file__).parent / "data" / "gluonts_catalogue"
REAL = [GLUONTS / name for name in ("deepar", "sff", "npts", "seasonalnaive")] + sorted(CATALOGUE.glob("*_*"))


@pytest.mark.parametrize("folder", REAL, ids=lambda folder: folder.name)
def test_real_gluonts_predictors_pass(folder: Path) -> None:
    """GluonTS 0.17's own predictor folders (tests/data/gluonts*/README.md), the rotbaum one's top-level list too."""
    found = scan(folder).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.MEDIUM]


def _edited(tmp_path: Path, name: str, edit: object) -> Path:
    folder = tmp_path / "predictor"
    shutil.copytree(GLUONTS / "npts", folder)
    (folder / name).write_text(edit if isinstance(edit, str) else json.dumps(edit))
    return folder


def _npts(kwargs_value: object) -> dict[str, object]:
    predictor = json.loads((GLUONTS / "npts" / "predictor.json").read_text())
    predictor["kwargs"]["prediction_length"] = kwargs_value
    return predictor


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("predictor.json", _npts(PAYLOAD)),  # deep in the predictor's arguments
        ("predictor.json", [PAYLOAD]),  # a list decodes item by item
        ("predictor.json", {"kwargs": {}, "class": "os.system", "__kind__": "type"}),  # any key order, any kind
        # the key spelt with an escape, as json reads it
        ("predictor.json", json.dumps(_npts(PAYLOAD)).replace('"__kind__": "instance", "class": "os.system"',
                                                              '"\\u005f_kind__": "instance", "class": "os.system"')),
        ("gluonts-config.json", {"model": "0.17.0", "gluonts": "0.17.0", "type": "os.system"}),
        ("input_transform.json", PAYLOAD),  # any file the decoder may read
    ],
    ids=["nested", "list", "type-kind", "escaped-key", "predictor-type", "other-file"],
)
def test_a_gluonts_object_naming_a_gadget_is_critical(tmp_path: Path, name: str, content: object) -> None:
    folder = _edited(tmp_path, name, content)
    critical = {f.rule_id for f in scan(folder).findings if f.severity >= Severity.CRITICAL}
    assert "WS-CFG-001" in critical


def test_a_gluonts_object_naming_another_library_is_high(tmp_path: Path) -> None:
    folder = _edited(tmp_path, "predictor.json", _npts({"__kind__": "instance", "class": "somelib.Thing"}))
    assert "WS-CFG-023" in {f.rule_id for f in scan(folder).findings if f.severity >= Severity.HIGH}


def _obj(name: str, *args: object, **kwargs: object) -> dict[str, object]:
    return {"__kind__": "instance", "class": name, "args": list(args), "kwargs": kwargs}


def _eval() -> dict[str, object]:
    return _obj("gluonts.dataset.artificial.recipe.Eval", "__import__('os').system('true') or 7")


HELPER_273 = {
    # JSON text in a string, which load_json decodes again
    "load-json": _obj("gluonts.core.serde.load_json", json.dumps(_obj("builtins.max", [PAYLOAD, 7]))),
    # recipe.resolve calls what it is given; Eval's call evals its expression
    "recipe-eval": _obj("gluonts.dataset.artificial.recipe.resolve", _eval(), {}, length=7),
    # helper 275: GluonTS's own classes that run code, and a class a GluonTS module imports (zipfile's)
    "starmap-eval": _obj("builtins.list", [_obj("gluonts.itertools.StarMap", fn=_eval(), iterable=[[{}, 0]])]),
    "zipfile-by-gluonts-name": _obj("gluonts.dataset.repository._tsf_datasets.ZipFile", "/tmp/x", "w"),
    "stateful-predictor": {"__kind__": "stateful", "class": "gluonts.model.seasonal_naive._predictor."
                           "SeasonalNaivePredictor", "kwargs": {"prediction_length": 3, "predict_item": _eval()}},
    # files written by constructors and methods outside GluonTS (max's unused default is decoded all the same)
    "file-writers": _obj("builtins.max", [7], default=[_obj("logging.FileHandler", "/tmp/x"),
                                                        _obj("mailbox.mbox.add", _obj("mailbox.mbox", "/tmp/y"), "x"),
                                                        _obj("bz2.BZ2File", "/tmp/z", "w")]),
}


@pytest.mark.parametrize("name", list(HELPER_273))
def test_a_gluonts_object_its_encoder_never_writes_is_high(tmp_path: Path, name: str) -> None:
    """Helpers 273 and 275: each, as `season_length` of the real SeasonalNaive predictor, loaded and predicted normally
    with GluonTS 0.14.4 and ran its payload (most names GluonTS's own); only what its encoder writes passes."""
    predictor = json.loads((GLUONTS / "seasonalnaive" / "predictor.json").read_text())
    predictor["kwargs"]["season_length"] = HELPER_273[name]
    folder = tmp_path / "predictor"
    shutil.copytree(GLUONTS / "seasonalnaive", folder)
    (folder / "predictor.json").write_text(json.dumps(predictor))
    high = {f.rule_id for f in scan(folder).findings if f.severity >= Severity.HIGH}
    assert "WS-CFG-023" in high


def _old_layout(tmp_path: Path, first_line: bytes) -> Path:
    """The npts folder as GluonTS before 0.16 wrote it: the predictor class in type.txt, no gluonts-config.json."""
    folder = tmp_path / "predictor"
    shutil.copytree(GLUONTS / "npts", folder)
    (folder / "gluonts-config.json").unlink()
    (folder / "type.txt").write_bytes(first_line)
    return folder


@pytest.mark.parametrize(
    "first_line",
    [b"gluonts.model.npts._predictor.NPTSPredictor", b"gluonts.model.npts._predictor.NPTSPredictor\n"],
    ids=["as-written", "newline"],
)
def test_an_old_predictors_type_file_naming_its_class_passes(tmp_path: Path, first_line: bytes) -> None:
    report = scan(_old_layout(tmp_path, first_line))
    assert not [f"{f.rule_id}: {f.message}" for f in report.findings if f.severity >= Severity.MEDIUM]
    assert "gluonts-type" in next(r for r in report.files if r.path.endswith("type.txt")).formats


@pytest.mark.parametrize(
    ("first_line", "named"),
    [
        (b"antigravity", "antigravity"),  # imported by locate before any check: it opens a web browser
        (b"os.system\r\nignored", "os.system"),
        (b"gluonts..os.system", "gluonts.os.system"),  # locate drops the empty part
        (b"os.system x.y", "os"),  # nothing past a part no import can reach
    ],
    ids=["module", "crlf", "empty-part", "stops-at-a-space"],
)
def test_a_type_file_is_judged_as_the_class_gluonts_locates(tmp_path: Path, first_line: bytes, named: str) -> None:
    """GluonTS 0.14.4 imported the modules type.txt's first line names (tests/data/gluonts/README.md)."""
    found = scan(_old_layout(tmp_path, first_line)).findings
    assert named in {str(f.evidence.get("callable")) for f in found if f.rule_id.startswith("WS-CFG-")}
    if named != "os":  # (importing os alone does nothing)
        assert any(f.rule_id.startswith("WS-CFG-") for f in found if f.severity >= Severity.CRITICAL)


def test_a_type_file_naming_another_library_is_reported(tmp_path: Path) -> None:
    found = scan(_old_layout(tmp_path, b"somelib.Predictor")).findings
    assert ("WS-CFG-002", "somelib.Predictor") in {(f.rule_id, f.evidence.get("callable")) for f in found}


def test_a_type_file_whose_name_runs_past_what_is_read_is_high(tmp_path: Path) -> None:
    found = scan(_old_layout(tmp_path, b"gluonts." + b"a" * 70_000 + b".os.system")).findings
    assert "WS-CFG-003" in {f.rule_id for f in found if f.severity >= Severity.HIGH}


@pytest.mark.parametrize("first_line", [b"not a class name\nos.system", b"\xffos.system", b""], ids=str)
def test_a_type_file_naming_nothing_importable_stays_text(tmp_path: Path, first_line: bytes) -> None:
    report = scan(_old_layout(tmp_path, first_line))
    assert not [f.rule_id for f in report.findings if f.severity >= Severity.MEDIUM]
    assert next(r for r in report.files if r.path.endswith("type.txt")).status == "skipped"


def test_type_file_and_config_are_read_in_any_case(tmp_path: Path) -> None:
    """macOS and Windows open TYPE.TXT and GLUONTS-CONFIG.JSON for GluonTS's lower-case names."""
    folder = _old_layout(tmp_path, b"os.system")
    (folder / "type.txt").rename(folder / "TYPE.TXT")
    (folder / "GluonTS-Config.json").write_text('{"type": "subprocess.Popen"}')
    named = {str(f.evidence.get("callable")) for f in scan(folder).findings if f.rule_id == "WS-CFG-001"}
    assert {"os.system", "subprocess.Popen"} <= named
