"""Review 28: what a hostile file's strings and numbers can do to wscan's reports. Every report must still come
out whole and readable: a 400-digit storage size, a name that is not UTF-8, a console that cannot show every
character, a name that is log markup, a line separator, a config value of megabytes."""

from __future__ import annotations

import json
import os
import random
import string
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import wscan
from wscan.model import Finding, Location, Severity
from wscan.output import render
from wscan.output.sarif import to_sarif
from wscan.output.text import clean, render_text
from wscan.report import ModelSummary, Report

HOSTILE_PICKLE = b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03."


def _text(value: str) -> bytes:
    data = value.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def _strict(text: str) -> object:
    """json.loads, refusing what strict readers refuse: lone surrogates and integers past 64 bits."""

    def check(value: object) -> object:
        if isinstance(value, str):
            value.encode("utf-8")  # a lone surrogate raises
        if isinstance(value, int) and not isinstance(value, bool):
            assert abs(value) < 2**64, value
        return value

    def hook(pairs: list[tuple[str, object]]) -> dict[str, object]:
        return {check(k): check(v) for k, v in pairs}  # type: ignore[misc]

    return json.loads(text, object_pairs_hook=hook, parse_int=lambda s: check(int(s)))


def test_a_storage_of_400_digit_size_leaves_every_report_whole(tmp_path: Path) -> None:
    size = 10**400 - 1
    raw = size.to_bytes((size.bit_length() + 8) // 8, "little", signed=True)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "pytorch_model.bin").write_bytes(
        b"\x80\x02(" + _text("storage") + b"ctorch\nFloatStorage\n" + _text("0") + _text("cpu")
        + b"\x8b" + struct.pack("<i", len(raw)) + raw + b"tQ."
    )
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "model.pkl").write_bytes(HOSTILE_PICKLE)
    report = wscan.scan([tmp_path])
    assert "WS-PKL-001" in render_text(report)
    for fmt in ("json", "sarif"):
        assert "WS-PKL-001" in json.dumps(_strict(render(report, fmt, srcroot=tmp_path)))


def test_a_name_that_is_not_utf8_leaves_the_json_report_strict(tmp_path: Path) -> None:
    (tmp_path / os.fsdecode(b"model-\xff.pkl")).write_bytes(HOSTILE_PICKLE)
    document = _strict(render(wscan.scan([tmp_path]), "json"))
    assert isinstance(document, dict) and document["findings"][0]["rule_id"] == "WS-PKL-001"
    assert "\\udcff" in document["findings"][0]["location"]["path"]  # shown as text, not as a broken character


def test_a_console_that_cannot_show_a_name_gets_escapes_not_a_traceback(tmp_path: Path) -> None:
    folder = tmp_path / "clean-模型"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    env = {**os.environ, "PYTHONIOENCODING": "cp1252"}
    done = subprocess.run([sys.executable, "-m", "wscan", "scan", "--no-progress", str(folder)], capture_output=True,
                          env=env, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode("cp1252", "replace")[-800:]
    assert b"clean-\\u6a21\\u578b" in done.stdout


def test_a_file_named_like_log_markup_does_not_start_a_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "##[group]wscan PASS").write_bytes(HOSTILE_PICKLE)
    (tmp_path / "::error::x").write_bytes(HOSTILE_PICKLE)
    monkeypatch.chdir(tmp_path)  # paths relative to the working folder, as the action scans a checkout
    text = render_text(wscan.scan([Path(".")]))
    assert not [line for line in text.splitlines() if line.startswith(("#", ":"))]
    assert "./##[group]wscan PASS" in text


def test_line_and_paragraph_separators_are_escaped() -> None:
    assert clean("a\u2028b\u2029c") == "a\\u2028b\\u2029c"


def test_a_config_value_of_megabytes_stays_out_of_the_summaries(tmp_path: Path) -> None:
    bits = ["x" * 64] * 20_000
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "gptq", "bits": bits}}))
    (tmp_path / "model.pkl").write_bytes(HOSTILE_PICKLE)
    report = wscan.scan([tmp_path])
    assert all(len(model.quantization) <= 300 for model in report.models)
    assert len(render(report, "sarif", srcroot=tmp_path)) < 100_000


def test_sarif_drops_model_summaries_before_any_result() -> None:
    noise = "".join(random.Random(3).choices(string.ascii_letters, k=20_000))  # does not compress away
    model = ModelSummary("m", 1, 1, 0, ("pickle",), (), None, noise, "full", "", "", False, "", None, "pass")
    finding = Finding("WS-X-001", Severity.CRITICAL, "payload", Location("m/model.pkl"), {})
    report = Report("0.1.0", "", Severity.HIGH, findings=[finding], models=[model])
    run = to_sarif(report, max_gzip_bytes=3_000)["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["WS-X-001"]
    properties = run.get("properties", {})
    assert properties["models"] == [] and properties["omittedModels"] == 1 and properties["omittedResults"] == 0
    assert "summaries of 1 models" in properties["note"]
