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


def test_ignore_and_severity_override(folder: Path, tmp_path: Path) -> None:
    config = tmp_path / "mine.yaml"
    config.write_text("ignore:\n  - rule: WS-PKL-001\n    paths: ['*evil.pkl']\n")
    assert main(["--config", str(config), str(folder)]) == 0
    config.write_text("severity: {WS-FILE-006: high}\n")
    (folder / "odd.bin").write_bytes(b"\x00\x01binary")
    assert main(["--config", str(config), str(folder / "odd.bin")]) == 1


def test_a_config_is_read_only_when_named(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model folder's own .wscan.yaml comes with the model: read from the scanned folder (or from the working
    directory, when the user ran wscan inside the download) it set the verdict, a gadget at info."""
    (folder / ".wscan.yaml").write_text("severity: {WS-PKL-001: info}\nignore:\n  - rule: '*'\n    paths: ['*']\n")
    assert main(["--format", "json", str(folder)]) == 1
    assert "config" not in json.loads(capsys.readouterr().out)["settings"]
    monkeypatch.chdir(folder)
    assert main(["--format", "json", "."]) == 1
    assert main(["--format", "json", "evil.pkl"]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("./.wscan.yaml was not read") == 2
    # Named, it is used, and the report says which config the scan ran with.
    assert main(["--format", "json", "--config", ".wscan.yaml", "."]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["config"] == ".wscan.yaml"
    assert main(["--config", ".wscan.yaml", "evil.pkl"]) == 0
    assert "Config: .wscan.yaml" in capsys.readouterr().out


def test_terminal_output_shows_escape_sequences_instead_of_obeying_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rule id in a config, or a file name in the progress bar, could clear the screen or fake a verdict."""
    (tmp_path / "c.yaml").write_text('severity: {"X\\e]0;owned\\a\\e[2J\\e[HVerdict: PASS": info}\n')
    (tmp_path / "m.pkl").write_bytes(pickle.dumps({"a": 1}))
    assert main(["--config", str(tmp_path / "c.yaml"), str(tmp_path / "m.pkl")]) == 2
    error = capsys.readouterr().err
    assert "\x1b" not in error and "\x07" not in error and "\\x1b]0;owned" in error
    from wscan.cli import _progress_bar

    class Tty:
        text = ""

        def write(self, chunk: str) -> None:
            self.text += chunk

        def flush(self) -> None:
            pass

    stream = Tty()
    _progress_bar(stream)(1, 2, "m/\x1b]52;c;Y3VybA==\x07\x1b[8m.pkl")  # type: ignore[arg-type]
    assert "\x1b]52" not in stream.text and "\x07" not in stream.text and "\x1b[8m" not in stream.text


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


def test_the_command_leaves_after_a_scan_with_its_whole_report(tmp_path: Path) -> None:
    """`wscan` exits without tearing the interpreter down after a scan (`cli.console`): the report must still reach
    a pipe whole (here 300 files, far past a pipe's 64 KiB buffer), with the scan's exit code."""
    for index in range(300):
        (tmp_path / f"config-{index:03}.json").write_text('{"model_type": "bert"}')
    proc = subprocess.run([sys.executable, "-m", "wscan", "--format", "json", str(tmp_path)], capture_output=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout) > 65536
    assert json.loads(proc.stdout)["summary"]["files"]["total"] == 300


def _npy(shape: str) -> bytes:
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(16)


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_integers_too_long_to_print_are_reported_as_huge(tmp_path: Path, fmt: str) -> None:
    """Two dimensions of 4,001 digits multiply to a size Python refuses to print (past 4,300 digits): the scan
    failed with a ValueError of its own ("judging failed"). The size is now "more than 10^30" in every format,
    through a worker as a scan runs."""
    big = "1" + "0" * 4000
    (tmp_path / "big.npy").write_bytes(_npy(f"({big}, {big})"))
    out = tmp_path / f"report.{fmt}"
    assert main(["scan", "--format", fmt, "-o", str(out), str(tmp_path / "big.npy")]) == 1
    text = out.read_text()
    assert "WS-NPY-002" in text and "more than 10^30" in text
    assert "WS-FILE-001" not in text and "ValueError" not in text
