"""Compiled Python in a model folder: listed for review, and an unchecked __pycache__ entry that runs in place of
the source beside it is high. Files written by py_compile; the shadowing proved with Python's own import."""

from __future__ import annotations

import json
import py_compile
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.helpers.scanning import default_engine, rule_ids
from wscan.model import Severity

TAG = sys.implementation.cache_tag


def _model(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (folder / "helper.py").write_text("VALUE = 1\n")
    return folder


def _compile(source: str, target: Path, mode: py_compile.PycInvalidationMode, folder: Path) -> None:
    """Bytecode of `source` written at `target` (made from a file outside the model folder)."""
    origin = folder.parent / f"{folder.name}-source" / "helper.py"
    origin.parent.mkdir(exist_ok=True)
    origin.write_text(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    py_compile.compile(str(origin), cfile=str(target), invalidation_mode=mode, doraise=True)


def _findings(path: Path) -> dict[str, dict[str, Severity]]:
    report = default_engine().scan([path])
    found: dict[str, dict[str, Severity]] = {}
    for finding in report.findings:
        found.setdefault(Path(finding.location.path).name, {})[finding.rule_id] = finding.severity
    return found


def test_an_unchecked_cache_entry_runs_instead_of_its_source_and_is_high(tmp_path: Path) -> None:
    folder = _model(tmp_path / "model")
    marker = tmp_path / "ran"
    cached = folder / "__pycache__" / f"helper.{TAG}.pyc"
    payload = f"open({str(marker)!r}, 'w').close()\nVALUE = 1\n"
    _compile(payload, cached, py_compile.PycInvalidationMode.UNCHECKED_HASH, folder)

    imported = subprocess.run([sys.executable, "-c", "import helper"], cwd=folder, capture_output=True, timeout=60)
    assert imported.returncode == 0 and marker.exists(), "Python checks unchecked .pyc files now: revisit WS-CODE-014"

    found = _findings(folder)
    assert found[f"helper.{TAG}.pyc"] == {"WS-CODE-013": Severity.MEDIUM, "WS-CODE-014": Severity.HIGH}
    assert found["helper.py"] == {"WS-CODE-001": Severity.MEDIUM}  # the source read is harmless: not what runs


def test_ordinary_cache_entries_are_listed_not_high(tmp_path: Path) -> None:
    """What Python, pip and compileall write (timestamps, or checked hashes with SOURCE_DATE_EPOCH): Python compares
    them with the source, so they are listed for review (medium) and nothing more."""
    folder = _model(tmp_path / "model")
    for mode in (py_compile.PycInvalidationMode.TIMESTAMP, py_compile.PycInvalidationMode.CHECKED_HASH):
        py_compile.compile(str(folder / "helper.py"), invalidation_mode=mode, doraise=True)
        report = default_engine().scan([folder])
        assert rule_ids(report) == {"WS-CODE-001", "WS-CODE-013"}, mode
        shown = [f.message for f in report.findings if f.rule_id == "WS-CODE-013"]
        assert shown and mode.name.lower().replace("_", "-") in shown[0]


def test_a_legacy_pyc_without_source_is_listed(tmp_path: Path) -> None:
    """`import helper` runs a helper.pyc that has no helper.py beside it: medium, its source named as missing."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    _compile("VALUE = 2\n", folder / "helper.pyc", py_compile.PycInvalidationMode.TIMESTAMP, folder)
    report = default_engine().scan([folder])
    assert rule_ids(report) == {"WS-CODE-013"}
    assert "legacy, source none" in report.findings[0].message


def test_bytecode_in_an_archive_and_a_fake_pyc(tmp_path: Path) -> None:
    """In an archive nothing is imported from, the source cannot be looked for ("unknown"): listed. A file named
    .pyc that is no bytecode is an unknown format, as before."""
    folder = _model(tmp_path / "model")
    _compile("VALUE = 3\n", tmp_path / "built.pyc", py_compile.PycInvalidationMode.UNCHECKED_HASH, folder)
    with zipfile.ZipFile(folder / "code.zip", "w") as archive:
        archive.write(tmp_path / "built.pyc", "pkg/__pycache__/helper.cpython-311.pyc")
    (folder / "fake.pyc").write_bytes(bytes(range(0xA0, 0xC8)))  # binary, and no CR LF after a magic
    found = _findings(folder)
    assert found["code.zip"] == {"WS-CODE-013": Severity.MEDIUM}
    assert found["fake.pyc"] == {"WS-FILE-006": Severity.LOW}


def test_bytecode_outside_a_model_folder_is_not_reported(tmp_path: Path) -> None:
    """As for .py files: a package's own __pycache__ with no model beside it is not a model's code."""
    source = tmp_path / "pkg" / "helper.py"
    source.parent.mkdir()
    source.write_text("VALUE = 1\n")
    py_compile.compile(str(source), doraise=True)
    assert not default_engine().scan([tmp_path / "pkg"]).findings
