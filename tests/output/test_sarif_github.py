"""SARIF for code scanning dashboards, on real scans: archives, odd names, size and tag limits, help links,
and every SARIF writer in wscan (CLI, render(), the action) checked against the schema and GitHub's rules."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import string
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import wscan
from tests.helpers.github_sarif import check_github_requirements
from wscan.model import Finding, Location, Severity
from wscan.output import render
from wscan.output.sarif import MAX_GZIP_BYTES, MAX_TAGS_PER_RULE, render_sarif, to_sarif
from wscan.report import Report, RuleInfo

SCHEMA = Path(__file__).resolve().parents[1] / "data" / "schemas" / "sarif-schema-2.1.0.json"
HOSTILE_PICKLE = b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03."


def check(log: dict[str, Any]) -> dict[str, Any]:
    validator = jsonschema.Draft4Validator(json.loads(SCHEMA.read_text()), format_checker=jsonschema.FormatChecker())
    assert [e.message for e in validator.iter_errors(log)] == []
    assert check_github_requirements(log) == []
    return log


def scan_sarif(root: Path, *paths: str) -> dict[str, Any]:
    report = wscan.scan([root / p for p in paths] if paths else [root])
    return check(json.loads(render_sarif(report, srcroot=root)))


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_results_inside_archives_point_at_the_archive(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "bundle.zip", "w") as archive:
        archive.writestr("inner/data.pkl", HOSTILE_PICKLE)
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w:gz") as tar:
        info = tarfile.TarInfo("weights/model.pkl")
        info.size = len(HOSTILE_PICKLE)
        tar.addfile(info, io.BytesIO(HOSTILE_PICKLE))
    (tmp_path / "model.tar.gz").write_bytes(payload.getvalue())
    log = scan_sarif(tmp_path)
    gadgets = [r for r in log["runs"][0]["results"] if r["ruleId"] == "WS-PKL-001"]
    by_uri = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r for r in gadgets}
    assert set(by_uri) == {"bundle.zip", "model.tar.gz"}
    zipped = by_uri["bundle.zip"]
    assert zipped["properties"]["member"] == "inner/data.pkl"
    assert "in member inner/data.pkl" in zipped["message"]["text"]
    assert zipped["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    tarred = by_uri["model.tar.gz"]
    assert tarred["properties"]["member"].endswith("weights/model.pkl")
    assert f"in member {tarred['properties']['member']}" in tarred["message"]["text"]


def test_names_that_are_not_utf8_keep_their_bytes(tmp_path: Path) -> None:
    if sys.platform == "darwin":
        pytest.skip("macOS file systems refuse names that are not UTF-8")
    name = os.fsdecode(b"evil\xff[x].pkl")
    (tmp_path / name).write_bytes(HOSTILE_PICKLE)
    log = scan_sarif(tmp_path)
    (result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "WS-PKL-001"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "evil%FF%5Bx%5D.pkl"
    text = render_sarif(wscan.scan([tmp_path]), srcroot=tmp_path)
    text.encode("utf-8")  # no lone surrogates in what is written
    assert "\\udcff" not in result["message"]["text"]


def test_results_are_cut_to_the_gzip_size_budget_worst_first() -> None:
    rng = random.Random(7)
    findings = [
        Finding(
            "WS-X-001" if i % 10 else "WS-X-002",
            Severity.CRITICAL if i % 10 == 0 else Severity.LOW,
            "noise",
            Location(f"f{i:05}.pkl"),
            {"blob": "".join(rng.choices(string.ascii_letters, k=400))},
        )
        for i in range(400)
    ]
    report = Report("0.1.0", "", Severity.HIGH, findings=findings)
    budget = 60_000
    log = to_sarif(report, max_gzip_bytes=budget)
    check(dict(log))
    text = render_sarif(report, max_gzip_bytes=budget)
    assert len(gzip.compress(text.encode("ascii"))) <= budget
    run = log["runs"][0]
    kept = run["results"]
    assert 0 < len(kept) < 400
    assert sum(r["ruleId"] == "WS-X-002" for r in kept) == 40  # every critical result survives the cut
    properties = run.get("properties", {})
    assert properties["truncated"] is True and properties["omittedResults"] == 400 - len(kept)
    assert properties["limits"] == {"maxResultsPerRule": 5000, "maxResultsPerRun": 25000, "maxGzipBytes": budget}
    assert f"{budget} bytes gzipped" in properties["note"]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes[-1]["message"]["text"] == properties["note"]
    assert MAX_GZIP_BYTES < 10 * 1024 * 1024


def test_rule_tags_stay_within_what_github_shows() -> None:
    rule = RuleInfo(
        "WS-T-001", "many-tags", Severity.HIGH, "s", "d", "h",
        cwe=tuple(f"CWE-{n}" for n in range(1, 9)), tags=tuple(f"t{n}" for n in range(8)),
    )
    finding = Finding("WS-T-001", Severity.HIGH, "m", Location("a.pkl"), {})
    report = Report("0.1.0", "", Severity.HIGH, findings=[finding], rules={"WS-T-001": rule})
    (descriptor,) = check(json.loads(render_sarif(report)))["runs"][0]["tool"]["driver"]["rules"]
    tags = descriptor["properties"]["tags"]
    assert len(tags) == MAX_TAGS_PER_RULE and tags[0] == "security"


def test_help_uri_only_when_given() -> None:
    finding = Finding("WS-PKL-001", Severity.CRITICAL, "m", Location("a.pkl"), {})
    report = Report("0.1.0", "", Severity.HIGH, findings=[finding])
    plain = check(json.loads(render_sarif(report)))["runs"][0]["tool"]["driver"]["rules"][0]
    assert "helpUri" not in plain
    url = "https://github.com/acme/wscan/blob/0123abc/rules/pickle.yaml#L12"
    linked = check(json.loads(render_sarif(report, help_uris={"WS-PKL-001": url})))
    assert linked["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"] == url


def test_rule_metadata_for_dashboards(tmp_path: Path) -> None:
    (tmp_path / "evil.pkl").write_bytes(HOSTILE_PICKLE)
    log = scan_sarif(tmp_path)
    run = log["runs"][0]
    assert run["automationDetails"]["id"] == "wscan/"
    for rule in run["tool"]["driver"]["rules"]:
        assert set(rule["properties"]) == {"security-severity", "tags", "precision"}
        assert rule["properties"]["precision"] in {"very-high", "high", "medium", "low"}
        assert rule["help"]["markdown"] and rule["help"]["text"]
        assert rule["defaultConfiguration"]["level"] in {"error", "warning", "note"}


def test_every_sarif_writer_is_valid_and_stable(tmp_path: Path) -> None:
    """The CLI's --format sarif, render(), to_sarif(): same log, valid, identical fingerprints twice."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "evil.bin").write_bytes(HOSTILE_PICKLE)
    with zipfile.ZipFile(models / "nested.zip", "w") as archive:
        archive.writestr("archive/data.pkl", HOSTILE_PICKLE)
    (models / "notes.md").write_text("# notes\n")
    outputs = []
    for n in range(2):
        target = tmp_path / f"cli-{n}.sarif"
        done = subprocess.run(
            [sys.executable, "-m", "wscan", "scan", "--format", "sarif", "-o", str(target), "models"],
            cwd=tmp_path, capture_output=True, text=True,
        )
        assert done.returncode == 1, done.stderr
        outputs.append(check(json.loads(target.read_text())))
    via_render = check(json.loads(render(wscan.scan([models]), "sarif")))
    via_dict = check(json.loads(json.dumps(to_sarif(wscan.scan([models])))))

    def prints(log: dict[str, Any]) -> list[str]:
        return [r["partialFingerprints"]["primaryLocationLineHash"] for r in log["runs"][0]["results"]]

    assert prints(outputs[0]) == prints(outputs[1]) == prints(via_render) == prints(via_dict)
    assert len(prints(via_render)) >= 2


def test_names_that_are_not_utf8_come_out_as_valid_unicode(tmp_path: Path) -> None:
    """A tar member name read with surrogateescape reached SARIF's member and evidence as a lone surrogate,
    which UTF-8 consumers reject or merge with other names; failed-file notifications were not escaped."""
    from wscan.report import FileResult, Report

    finding = Finding(
        "WS-PKL-001", Severity.CRITICAL, "imports os.system", Location("m/a\udcff.tar", "x\udcfe.pkl", 3),
        {"module": "os\udcfd", "count": 1},
    )
    failed = FileResult("m/b\udcfc[x](https://evil).bin", 4, (), "failed", "pickle.truncated")
    report = Report("0.1.0", "", Severity.HIGH, files=[failed], findings=[finding])
    text = render_sarif(report, srcroot=tmp_path)

    def strings(value: Any) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return [s for item in value.values() for s in strings(item)]
        if isinstance(value, list):
            return [s for item in value for s in strings(item)]
        return []

    log = json.loads(text)
    for value in strings(log):
        value.encode("utf-8")  # a lone surrogate would raise here
    result = log["runs"][0]["results"][0]
    assert result["properties"]["member"] == "x\\udcfe.pkl"
    assert result["properties"]["evidence"]["module"] == "os\\udcfd"
    (note,) = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert "\\[x\\]" in note["message"]["text"] and "\\\\udcfc" in note["message"]["text"]
