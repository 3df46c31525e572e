"""The bundled corpus: every hostile sample gets the rule IDs its manifest entry names, at the member
it names, and no benign sample gets a finding at HIGH or above."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import wscan
from wscan.discover import display_path
from wscan.model import Finding, Severity
from wscan.report import Report

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
MANIFEST: dict[str, Any] = json.loads((CORPUS / "MANIFEST.json").read_text(encoding="utf-8"))
SAMPLES: list[dict[str, Any]] = MANIFEST["samples"]
HOSTILE = [s for s in SAMPLES if s["label"] == "hostile"]
BENIGN = [s for s in SAMPLES if s["label"] == "benign"]
MAX_CORPUS_BYTES = 3 * 1024 * 1024

@pytest.fixture(scope="module")
def findings() -> dict[str, list[Finding]]:
    """One scan of the whole corpus; findings by manifest path."""
    report: Report = wscan.scan([CORPUS / "benign", CORPUS / "hostile"])
    by_display: dict[str, list[Finding]] = defaultdict(list)
    for finding in report.findings:
        by_display[finding.location.path].append(finding)
    return {s["path"]: by_display.get(display_path(CORPUS / s["path"]), []) for s in SAMPLES}


def _describe(found: list[Finding]) -> str:
    return "\n".join(f"  {f.rule_id} {f.severity.label} {f.location.describe()}: {f.message}" for f in found)


def test_manifest_lists_every_file() -> None:
    on_disk = {
        p.relative_to(CORPUS).as_posix()
        for folder in ("benign", "hostile")
        for p in (CORPUS / folder).rglob("*")
        if p.is_file()
    }
    listed = {s["path"] for s in SAMPLES}
    assert on_disk == listed
    assert all(s["rules"] or s.get("part_of") in listed for s in HOSTILE)


def test_corpus_is_small() -> None:
    total = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    assert total < MAX_CORPUS_BYTES


@pytest.mark.parametrize("sample", HOSTILE, ids=[s["path"] for s in HOSTILE])
def test_hostile_sample_gets_its_rules(sample: dict[str, Any], findings: dict[str, list[Finding]]) -> None:
    found = findings[sample["path"]]
    missing = [
        expected
        for expected in sample["rules"]
        if not any(
            f.rule_id == expected["id"] and (expected["member"] is None or f.location.member == expected["member"])
            for f in found
        )
    ]
    assert not missing, f"{sample['technique']}: missing {missing}; got:\n{_describe(found)}"


@pytest.mark.parametrize("sample", BENIGN, ids=[s["path"] for s in BENIGN])
def test_benign_sample_has_no_high_finding(sample: dict[str, Any], findings: dict[str, list[Finding]]) -> None:
    high = [f for f in findings[sample["path"]] if f.severity >= Severity.HIGH]
    assert not high, f"{sample['technique']}:\n{_describe(high)}"


def _load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wscan_corpus_build", CORPUS / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_hostile_samples_are_reproducible(tmp_path: Path) -> None:
    """build.py regenerates the committed hostile samples byte for byte (benign ones take longer)."""
    build = _load_build()
    build.build(tmp_path, benign=False)
    for sample in HOSTILE:
        fresh = (tmp_path / sample["path"]).read_bytes()
        assert fresh == (CORPUS / sample["path"]).read_bytes(), sample["path"]
    fresh_manifest = json.loads((tmp_path / "MANIFEST.json").read_text(encoding="utf-8"))
    assert fresh_manifest["samples"] == HOSTILE
