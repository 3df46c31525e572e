"""Reports of a real scan (the bundled corpus): SARIF passes the official schema and GitHub's checks,
JSON passes its own schema, and two runs give identical fingerprints."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import wscan
from tests.helpers.github_sarif import check_github_requirements
from wscan.output import render_json, render_sarif, report_schema
from wscan.report import Report

ROOT = Path(__file__).resolve().parents[2]
SARIF_SCHEMA = ROOT / "tests" / "data" / "schemas" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def corpus_report() -> Report:
    return wscan.scan([ROOT / "corpus"])


def test_corpus_sarif_is_valid_for_github(corpus_report: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    sarif = json.loads(render_sarif(corpus_report, srcroot=ROOT))
    validator = jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text()))
    errors = [e.message for e in validator.iter_errors(sarif)]
    assert errors == []
    assert check_github_requirements(sarif) == []
    assert len(sarif["runs"][0]["results"]) == len(corpus_report.findings)


def test_corpus_json_is_valid(corpus_report: Report) -> None:
    doc = json.loads(render_json(corpus_report))
    jsonschema.Draft202012Validator(report_schema()).validate(doc)
    assert doc["summary"]["verdict"] == "fail"


def test_fingerprints_stable_across_runs(corpus_report: Report) -> None:
    again = wscan.scan([ROOT / "corpus"])

    def prints(report: Report) -> list[str]:
        sarif = json.loads(render_sarif(report, srcroot=ROOT))
        return sorted(r["partialFingerprints"]["primaryLocationLineHash"] for r in sarif["runs"][0]["results"])

    assert prints(corpus_report) == prints(again)
