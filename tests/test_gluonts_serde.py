"""GluonTS's serialized predictors: every class its decoder imports and calls is judged as a config target.

GluonTS 0.14.4's `Predictor.deserialize` ran `os.system` named in predictor.json (tests/data/gluonts/README.md: the
loader proof was made by hand; GluonTS is not a test dependency). The real folders are GluonTS 0.17.0's own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.scanning import rule_ids, scan
from wscan.model import Severity

GLUONTS = Path(__file__).parent / "data" / "gluonts"
PAYLOAD = {"__kind__": "instance", "class": "os.system", "args": ["touch /tmp/wscan-gluonts-marker"]}


@pytest.mark.parametrize("name", ["deepar", "sff", "npts", "seasonalnaive"])
def test_real_gluonts_predictors_pass(name: str) -> None:
    found = scan(GLUONTS / name).findings
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


def test_a_gluonts_object_naming_another_library_is_reported(tmp_path: Path) -> None:
    folder = _edited(tmp_path, "predictor.json", _npts({"__kind__": "instance", "class": "somelib.Thing"}))
    assert "WS-CFG-002" in rule_ids(scan(folder))
