"""Versioned JSON report for machines; its exact shape is pinned by report.schema.json beside this file.

Bump SCHEMA_VERSION (and the schema URI) when a field is removed or changes meaning; adding a field
is also a new version because the schema forbids unknown fields, so consumers can rely on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

from wscan.model import AttrValue, Finding, Severity, shown
from wscan.report import FILE_FAILED, FILE_SCANNED, FILE_SKIPPED, FileResult, ModelSummary, Report

SCHEMA_URI = "https://wscan.dev/schemas/report-2.json"
SCHEMA_VERSION = 2
TOOL_NAME = "wscan"

JsonObject = dict[str, Any]


def ordered_findings(findings: Iterable[Finding]) -> list[Finding]:
    """One total order shared by every renderer, so outputs do not depend on scan scheduling."""
    return sorted(findings, key=lambda f: (f.sort_key(), f.message, _canonical(f.evidence)))


def severity_counts(report: Report) -> dict[str, int]:
    """Counts per severity label, worst first, with every label present."""
    counts = report.by_severity()
    return {s.label: counts[s.label] for s in sorted(Severity, reverse=True)}


def report_schema() -> JsonObject:
    """The JSON Schema of this document, shipped inside the package for consumers and tests."""
    text = resources.files("wscan.output").joinpath("report.schema.json").read_text(encoding="utf-8")
    schema: JsonObject = json.loads(text)
    return schema


def to_document(report: Report) -> JsonObject:
    """The report as plain JSON data, keys in documented order."""
    return {
        "schema": SCHEMA_URI,
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": TOOL_NAME, "version": report.tool_version, "rules_digest": report.rules_digest},
        "settings": {
            "fail_on": report.fail_on.label,
            "limits": {key: report.limits[key] for key in sorted(report.limits)},
            **({"config": report.config} if report.config else {}),
        },
        "summary": {
            "files": {
                "scanned": report.count(FILE_SCANNED),
                "skipped": report.count(FILE_SKIPPED),
                "failed": report.count(FILE_FAILED),
                "total": len(report.files),
            },
            "findings": severity_counts(report),
            "verdict": report.verdict(),
            "duration_seconds": round(report.duration_seconds, 3),
        },
        "models": [model_document(m) for m in sorted(report.models, key=lambda m: m.path)],
        "files": [_file(f) for f in sorted(report.files, key=lambda f: f.path)],
        "findings": [_finding(f) for f in ordered_findings(report.findings)],
    }


def render_json(report: Report) -> str:
    """Serialise with ASCII escapes so hostile names cannot smuggle terminal controls."""
    return json.dumps(json_safe(to_document(report)), indent=2, ensure_ascii=True) + "\n"


def valid_utf8(text: str) -> str:
    """Surrogate escapes (names that are not UTF-8) as visible backslash escapes, so the text is valid UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


MAX_EXACT_INT = 2**64  # sizes and counts real files state fit; strict JSON readers refuse much larger numbers


def json_safe(value: Any) -> Any:
    """What every JSON reader takes: strings as valid Unicode (a name that is not UTF-8 reaches Python as surrogate
    escapes, shown as the text `\\udcff`; a lone `\\udcff` escape makes strict readers refuse the whole report),
    integers only a hostile file states (a 400-digit storage size) as text."""
    if isinstance(value, str):
        return valid_utf8(value)
    if isinstance(value, int) and not isinstance(value, bool) and not -MAX_EXACT_INT < value < MAX_EXACT_INT:
        return shown(value)
    if isinstance(value, dict):
        return {json_safe(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def model_document(model: ModelSummary) -> JsonObject:
    """One model summary as JSON (also the SARIF run's `models` property)."""
    return {
        "path": model.path,
        "files": model.files,
        "size": model.size,
        "shards": model.shards,
        "formats": list(model.formats),
        "dtypes": list(model.dtypes),
        "parameters": model.parameters,
        "quantization": model.quantization,
        "kind": model.kind,
        "base_model": model.base_model,
        "architecture": model.architecture,
        "model_card": model.model_card,
        "license": model.license,
        "worst": model.worst.label if model.worst is not None else None,
        "verdict": model.verdict,
    }


def _file(result: FileResult) -> JsonObject:
    return {
        "path": result.path,
        "size": result.size,
        "formats": list(result.formats),
        "status": result.status,
        "reason": result.reason,
        "worst": result.worst.label if result.worst is not None else None,
    }


def _finding(finding: Finding) -> JsonObject:
    loc = finding.location
    return {
        "rule_id": finding.rule_id,
        "severity": finding.severity.label,
        "message": finding.message,
        "location": {"path": loc.path, "member": loc.member, "offset": loc.offset},
        "evidence": sorted_evidence(finding.evidence),
    }


def sorted_evidence(evidence: Mapping[str, AttrValue]) -> dict[str, AttrValue]:
    """Evidence with keys sorted, so equal findings serialise identically."""
    return {key: evidence[key] for key in sorted(evidence)}


def _canonical(evidence: Mapping[str, AttrValue]) -> str:
    return json.dumps(sorted_evidence(evidence), sort_keys=True, separators=(",", ":"))
