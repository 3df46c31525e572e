"""LightGBM and XGBoost model files (`save_model`'s text, JSON and UBJSON), checked as their loaders read them
(WS-FILE-018): the models the pickle tests fit pass as their libraries save them, and the hostile changes of those
tests are flagged in a file too; the libraries' own loaders crash on them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.scanning import scan
from wscan.model import Severity

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

from tests import test_lightgbm_model as lightgbm_cases  # noqa: E402
from tests import test_xgboost_model as xgboost_cases  # noqa: E402

RULE = "WS-FILE-018"


@pytest.fixture(scope="module")
def lightgbm_models() -> dict[str, Any]:
    return lightgbm_cases._models()


@pytest.fixture(scope="module")
def xgboost_models() -> dict[str, Any]:
    return xgboost_cases._models()


def _found(path: Path, read: bool = True) -> dict[str, tuple[Severity, str]]:
    report = scan(path)
    assert not read or [f.path for f in report.files if f.status == "scanned"], "the file was not read"
    return {f.rule_id: (f.severity, f.message) for f in report.findings}


@pytest.mark.parametrize("name", [n for n in lightgbm_cases.BENIGN if n != "unfitted"])
def test_lightgbm_files_as_lightgbm_saves_them_pass(tmp_path: Path, lightgbm_models: dict[str, Any], name: str) -> None:
    model = lightgbm_models[name]
    path = tmp_path / "model.txt"
    (model if isinstance(model, lgb.Booster) else model.booster_).save_model(str(path))
    assert RULE not in _found(path, read=name != "no-trees")  # a model of no trees is no model to look into


@pytest.mark.parametrize("suffix", [".json", ".ubj"])
@pytest.mark.parametrize("name", [n for n in xgboost_cases.BENIGN if n != "unfitted"])
def test_xgboost_files_as_xgboost_saves_them_pass(
    tmp_path: Path, xgboost_models: dict[str, Any], name: str, suffix: str
) -> None:
    path = tmp_path / f"model{suffix}"
    xgboost_cases._booster(xgboost_models[name]).save_model(str(path))
    assert RULE not in _found(path)


@pytest.mark.parametrize("name", sorted(lightgbm_cases.HOSTILE))
def test_a_hostile_lightgbm_file_is_flagged(tmp_path: Path, lightgbm_models: dict[str, Any], name: str) -> None:
    path = tmp_path / "model.txt"
    path.write_bytes(lightgbm_cases._hostile_text(lightgbm_models, name).encode("utf-8", "surrogatepass"))
    found = _found(path)
    assert found[RULE][0] == Severity.HIGH
    assert lightgbm_cases.HOSTILE[name][2] in found[RULE][1]


def _xgboost_json(models: dict[str, Any], name: str) -> bytes:
    return json.dumps(xgboost_cases._changed_snapshot(models, name)["Model"]).encode()


@pytest.mark.parametrize("name", sorted(xgboost_cases.HOSTILE))
def test_a_hostile_xgboost_json_file_is_flagged(tmp_path: Path, xgboost_models: dict[str, Any], name: str) -> None:
    path = tmp_path / "model.json"
    path.write_bytes(_xgboost_json(xgboost_models, name))
    found = _found(path)
    assert xgboost_cases.HOSTILE[name][2] in found[RULE][1], found


@pytest.mark.parametrize("name", sorted(xgboost_cases.HOSTILE_BYTES))
def test_a_hostile_xgboost_ubj_file_is_flagged(tmp_path: Path, xgboost_models: dict[str, Any], name: str) -> None:
    """XGBoost's own UBJ file, changed in place as the pickle tests change its pickled bytes."""
    model, change, message = xgboost_cases.HOSTILE_BYTES[name]
    saved = tmp_path / "saved.ubj"
    xgboost_cases._booster(xgboost_models[model]).save_model(str(saved))
    path = tmp_path / "model.ubj"
    path.write_bytes(change(saved.read_bytes()))
    assert message in _found(path)[RULE][1]


LOAD = """
import sys
import numpy as np
if sys.argv[2] == "lightgbm":
    import lightgbm as lgb
    booster = lgb.Booster(model_file=sys.argv[1])
    x = np.random.default_rng(1).normal(size=(2000, booster.num_feature()))
    for _ in range(3):
        booster.predict(x)
else:
    import xgboost as xgb
    booster = xgb.Booster()
    booster.load_model(sys.argv[1])
    x = np.random.default_rng(1).normal(size=(2000, booster.num_features()))
    for _ in range(3):
        booster.predict(xgb.DMatrix(x))
print("survived")
"""


@pytest.mark.parametrize(("library", "name"), [
    ("lightgbm", "left-child-far"), ("lightgbm", "tree-sizes-far"), ("xgboost", "left-child-far"),
    ("xgboost", "split-feature-far"),
])  # fmt: skip
def test_the_loaders_crash_on_the_files(
    tmp_path: Path, lightgbm_models: dict[str, Any], xgboost_models: dict[str, Any], library: str, name: str
) -> None:
    path = tmp_path / ("model.txt" if library == "lightgbm" else "model.json")
    if library == "lightgbm":
        path.write_text(lightgbm_cases._hostile_text(lightgbm_models, name))
    else:
        path.write_bytes(_xgboost_json(xgboost_models, name))
    run = subprocess.run([sys.executable, "-c", LOAD, str(path), library], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode < 0, (run.returncode, run.stdout, run.stderr[-500:])
    assert RULE in _found(path)


def _lightgbm_hostile(models: dict[str, Any]) -> str:
    return lightgbm_cases._hostile_text(models, "left-child-far")


@pytest.mark.parametrize("layout", ["crlf", "cr-first-line"])
def test_a_lightgbm_file_in_any_layout_its_loader_reads_is_checked(
    tmp_path: Path, lightgbm_models: dict[str, Any], layout: str
) -> None:
    """LightGBM's file reader ends a line at `\r` or `\n`: review 90 hid a model behind a first line `tree\r`."""
    text = _lightgbm_hostile(lightgbm_models)
    laid_out = {
        "crlf": lightgbm_cases._resized(text.replace("\n", "\r\n")),
        "cr-first-line": text.replace("tree\n", "tree\r", 1),
    }[layout]
    path = tmp_path / "weights.bin"
    path.write_bytes(laid_out.encode())
    assert "child 2000000" in _found(path)[RULE][1]


REFUSES = """
import sys
import lightgbm as lgb
try:
    lgb.Booster(model_file=sys.argv[1])
except lgb.basic.LightGBMError as exc:
    print("refused:", exc)
else:
    print("loaded")
"""


@pytest.mark.parametrize("layout", ["byte-order-mark", "another-first-line", "blank-line-first"])
def test_a_file_lightgbm_refuses_is_no_lightgbm_model(
    tmp_path: Path, lightgbm_models: dict[str, Any], layout: str
) -> None:
    """LightGBM's file reader takes only a first line of exactly `tree` (review 90 found a byte-order mark or a
    blank line first refused): such a file is left to the other scanners, and LightGBM itself refuses it."""
    text = _lightgbm_hostile(lightgbm_models)
    laid_out = {
        "byte-order-mark": "\ufeff" + text,
        "another-first-line": text.replace("tree\n", "not a model\n", 1),
        "blank-line-first": "\n" + text,
    }[layout]
    path = tmp_path / "model.txt"
    path.write_bytes(laid_out.encode())
    run = subprocess.run([sys.executable, "-c", REFUSES, str(path)], capture_output=True, text=True, timeout=300)
    assert run.stdout.startswith("refused:"), (run.returncode, run.stdout, run.stderr[-300:])
    report = scan(path)
    assert all("booster-model" not in f.formats for f in report.files)


@pytest.mark.parametrize("layout", ["version-first", "escaped-key", "spaced", "padded-past-the-head"])
def test_an_xgboost_file_in_any_layout_its_loader_reads_is_checked(
    tmp_path: Path, xgboost_models: dict[str, Any], layout: str
) -> None:
    """XGBoost reads the `learner` key wherever the object puts it, however JSON spells it."""
    model = xgboost_cases._changed_snapshot(xgboost_models, "left-child-far")["Model"]
    version = {"version": model["version"]}
    blob = {
        "version-first": json.dumps({**version, **model}).encode(),
        "escaped-key": json.dumps(model).replace('"learner"', '"\\u006cearner"', 1).encode(),
        "spaced": b"  \n" + json.dumps(model, indent=4).encode(),
        "padded-past-the-head": json.dumps({"padding": "x" * 100_000, **model}).encode(),
    }[layout]
    path = tmp_path / "model.json"
    path.write_bytes(blob)
    assert "child 2000000" in _found(path)[RULE][1]


def test_text_and_json_that_hold_no_model_are_left_alone(tmp_path: Path) -> None:
    """Other text and JSON files are declined: the report does not name this scanner for them."""
    files = {
        "README.md": "# A model\nTree=0 is mentioned here, but no feature count.\n",
        "config.json": json.dumps({"architectures": ["BertModel"], "learner": "not a key at the top"}),
        "notes.txt": "max_feature_idx=3\nno trees\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    report = scan(tmp_path)
    assert all("booster-model" not in f.formats for f in report.files), report.files
    assert RULE not in {f.rule_id for f in report.findings}


@pytest.mark.parametrize("where", ["end", "before-the-trees"])
def test_a_nul_in_a_lightgbm_file_is_flagged(tmp_path: Path, lightgbm_models: dict[str, Any], where: str) -> None:
    """Given a file, LightGBM reads on past a NUL (its load never returned, review 90); a pickled model is a C
    string, cut there. A NUL in a model file is flagged, even one that hides the trees; one in the first 4 KiB makes
    the file binary, left to the other scanners (LightGBM's loader hung on it: no out-of-bounds access)."""
    text = lightgbm_cases._text(lightgbm_models["regression"])
    text = text.replace("version=v4\n", "version=v4\nnote=" + "a" * 5000 + "\n", 1)  # past the 4 KiB a text sniff reads
    at = len(text) if where == "end" else text.index("Tree=0")
    path = tmp_path / "model.txt"
    path.write_bytes((text[:at] + "\0\n" + text[at:]).encode())
    assert "NUL" in _found(path)[RULE][1]


def test_a_model_file_past_max_member_bytes_is_a_limit_and_the_user_can_raise_it(
    tmp_path: Path, lightgbm_models: dict[str, Any], xgboost_models: dict[str, Any]
) -> None:
    """A model file is read whole to be checked, so it is bounded by `max-member-bytes` (2 GiB, the user's to set).
    It was `max-header-bytes` (100 MiB), meant for headers: a real 4,000-tree LightGBM model of 255 leaves is 99 MiB,
    and a larger one was unverified unless the header limit went up for every format with it."""
    from dataclasses import replace

    from wscan.config import Config
    from wscan.limits import Limits

    lightgbm_models["binary"].booster_.save_model(str(tmp_path / "model.txt"))
    booster = xgboost_cases._booster(xgboost_models["multiclass"])
    booster.save_model(str(tmp_path / "model.json"))
    booster.save_model(str(tmp_path / "model.ubj"))
    cbm = Path(__file__).parent / "data" / "catboost" / "m05_cat.cbm"  # a real model (tests/data/catboost/README.md)
    for path in [tmp_path / "model.txt", tmp_path / "model.json", tmp_path / "model.ubj", cbm]:
        size = path.stat().st_size
        under = scan(path, Config(jobs=0, limits=replace(Limits(), max_member_bytes=size - 1)))
        found = {f.rule_id: f for f in under.findings}
        assert "WS-FILE-002" in found and found["WS-FILE-002"].severity == Severity.HIGH, (path.name, found)
        assert "max-member-bytes" in found["WS-FILE-002"].message and f"{size:,} bytes" in found["WS-FILE-002"].message
        at = scan(path, Config(jobs=0, limits=replace(Limits(), max_member_bytes=size)))
        assert not [f for f in at.findings if f.severity >= Severity.HIGH], (path.name, at.findings)
        assert [f.path for f in at.files if f.status == "scanned"], path.name
