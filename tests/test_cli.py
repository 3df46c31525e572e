"""The command line: default verb, formats, thresholds, exit codes, rules documentation, config errors."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from wscan.cli import main

PAYLOAD = b"cos\nsystem\n(S'id'\ntR."


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "evil.pkl").write_bytes(PAYLOAD)
    (tmp_path / "ok.pkl").write_bytes(pickle.dumps({"a": 1}))
    return tmp_path


def test_default_verb_and_exit_codes(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(folder)]) == 1
    out = capsys.readouterr().out
    assert "WS-PKL-001" in out and "\x1b[" not in out
    assert main(["scan", str(folder / "ok.pkl")]) == 0


def test_fail_on_threshold(tmp_path: Path) -> None:
    (tmp_path / "odd.bin").write_bytes(b"\x00\x01\x02binary")
    assert main(["scan", "--fail-on", "high", str(tmp_path)]) == 0
    assert main(["scan", "--fail-on", "low", str(tmp_path)]) == 1


def test_json_and_sarif_to_file(folder: Path) -> None:
    out = folder / "report.json"
    assert main(["scan", "--format", "json", "-o", str(out), str(folder / "evil.pkl")]) == 1
    doc = json.loads(out.read_text())
    assert doc["summary"]["verdict"] == "fail"
    sarif = folder / "report.sarif"
    main(["scan", "--format", "sarif", "-o", str(sarif), str(folder / "evil.pkl")])
    assert json.loads(sarif.read_text())["version"] == "2.1.0"


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(tmp_path / "missing")]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("fail-on: high\nallow:\n  - not a name\n")
    assert main(["scan", "--config", str(bad), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml:3" in err


def test_bad_rule_pack_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack = tmp_path / "mine.yaml"
    pack.write_text(
        "pack: mine\nrules:\n  - id: MY-001\n    name: x\n    severity: severe\n    summary: s\n"
        "    message: m\n    match: {kind: pickle.import}\n    metadata: {help: h}\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text("rules: [mine.yaml]\n")
    assert main(["scan", "--config", str(config), str(tmp_path)]) == 2
    assert "mine.yaml:5" in capsys.readouterr().err


def test_user_rule_pack_adds_rules(tmp_path: Path) -> None:
    (tmp_path / "m.pkl").write_bytes(pickle.dumps({"a": 1}, protocol=4))
    pack = tmp_path / "mine.yaml"
    pack.write_text(
        "pack: mine\nrules:\n  - id: MY-001\n    name: many-opcodes\n    severity: medium\n"
        "    summary: s\n    message: '{opcodes} opcodes'\n"
        "    match: {kind: pickle.summary, where: {opcodes: {gte: 3}}}\n    metadata: {help: h}\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text("rules: [mine.yaml]\nfail-on: medium\n")
    assert main(["scan", "--config", str(config), str(tmp_path / "m.pkl")]) == 1


def test_ignore_and_severity_override(folder: Path) -> None:
    config = folder / ".wscan.yaml"
    config.write_text("ignore:\n  - rule: WS-PKL-001\n    paths: ['*evil.pkl']\n")
    assert main([str(folder)]) == 0
    config.write_text("severity: {WS-FILE-006: high}\n")
    (folder / "odd.bin").write_bytes(b"\x00\x01binary")
    assert main([str(folder / "odd.bin")]) == 1


def test_rules_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "list"]) == 0
    assert "WS-PKL-001" in capsys.readouterr().out
    assert main(["rules", "show", "WS-PKL-001"]) == 0
    out = capsys.readouterr().out
    assert "CWE-502" in out and "critical" in out
    assert main(["rules", "show", "NOPE-1"]) == 2


def test_python_dash_m(folder: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "wscan", "--format", "json", str(folder / "evil.pkl")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["findings"][0]["rule_id"] == "WS-PKL-001"
