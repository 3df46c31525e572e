"""SARIF 2.1.0 log shaped for GitHub code scanning (DESIGN.md section 6).

Built as plain typed dicts, not sarif-om: sarif-om's classes need a separate serializer to turn
their attribute names into SARIF's JSON names, while TypedDicts give mypy checks for free and
serialise with the standard json module.

Model files have no lines, so every result points at line 1 and carries the member and byte
offset in its message and properties; fingerprints are computed here so alerts stay stable.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import quote

from wscan.model import Finding, Severity
from wscan.output.json import json_safe, model_document, ordered_findings, sorted_evidence, valid_utf8
from wscan.report import FILE_FAILED, Report, RuleInfo

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TOOL_NAME = "wscan"
INFORMATION_URI = "https://wscan.dev"
AUTOMATION_ID = "wscan/"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "primaryLocationLineHash"
FINGERPRINT_VERSION = "wscan-fingerprint-v1"

# GitHub code scanning limits ("SARIF results exceed limits", "SARIF file is too large"): it rejects runs
# above 25,000 results and files above 10 MB gzipped, shows at most 5,000 results, and keeps only 10 tags
# per rule (more than 20 is rejected). A per-rule cap keeps one noisy rule from crowding out the others;
# the size budget leaves a margin under the 10 MB for the upload's own envelope.
MAX_RESULTS_PER_RULE = 5_000
MAX_RESULTS_PER_RUN = 25_000
MAX_GZIP_BYTES = 9_500_000
MAX_TAGS_PER_RULE = 10

LEVEL = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
    Severity.INFO: "note",
}
SECURITY_SEVERITY = {
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MEDIUM: "5.5",
    Severity.LOW: "3.0",
    Severity.INFO: "0.0",
}


class Message(TypedDict):
    text: str


class MultiformatMessage(TypedDict):
    text: str
    markdown: str


class ReportingConfiguration(TypedDict):
    level: str


RuleProperties = TypedDict("RuleProperties", {"security-severity": str, "tags": list[str], "precision": str})


class _ReportingDescriptorBase(TypedDict):
    id: str
    name: str
    shortDescription: Message
    fullDescription: Message
    help: MultiformatMessage
    defaultConfiguration: ReportingConfiguration
    properties: RuleProperties


class ReportingDescriptor(_ReportingDescriptorBase, total=False):
    helpUri: str


class ToolComponent(TypedDict):
    name: str
    version: str
    semanticVersion: str
    informationUri: str
    rules: list[ReportingDescriptor]


class Tool(TypedDict):
    driver: ToolComponent


class _ArtifactLocationBase(TypedDict):
    uri: str


class ArtifactLocation(_ArtifactLocationBase, total=False):
    uriBaseId: str


class Region(TypedDict):
    startLine: int


class PhysicalLocation(TypedDict):
    artifactLocation: ArtifactLocation
    region: Region


class Location(TypedDict):
    physicalLocation: PhysicalLocation


class Result(TypedDict):
    ruleId: str
    ruleIndex: int
    level: str
    message: Message
    locations: list[Location]
    partialFingerprints: dict[str, str]
    properties: dict[str, Any]


class Notification(TypedDict):
    level: str
    message: Message


class Invocation(TypedDict):
    executionSuccessful: bool
    toolExecutionNotifications: list[Notification]


class AutomationDetails(TypedDict):
    id: str


class _RunBase(TypedDict):
    tool: Tool
    automationDetails: AutomationDetails
    originalUriBaseIds: dict[str, ArtifactLocation]
    columnKind: str
    invocations: list[Invocation]
    results: list[Result]


class Run(_RunBase, total=False):
    properties: dict[str, Any]


SarifLog = TypedDict("SarifLog", {"$schema": str, "version": str, "runs": list[Run]})


def render_sarif(
    report: Report,
    srcroot: Path | None = None,
    *,
    max_per_rule: int = MAX_RESULTS_PER_RULE,
    max_results: int = MAX_RESULTS_PER_RUN,
    max_gzip_bytes: int = MAX_GZIP_BYTES,
    help_uris: Mapping[str, str] | None = None,
) -> str:
    """Serialise the log; srcroot (default: the working directory) anchors the relative URIs."""
    log = to_sarif(
        report,
        srcroot,
        max_per_rule=max_per_rule,
        max_results=max_results,
        max_gzip_bytes=max_gzip_bytes,
        help_uris=help_uris,
    )
    return _dump(log)


def to_sarif(
    report: Report,
    srcroot: Path | None = None,
    *,
    max_per_rule: int = MAX_RESULTS_PER_RULE,
    max_results: int = MAX_RESULTS_PER_RUN,
    max_gzip_bytes: int = MAX_GZIP_BYTES,
    help_uris: Mapping[str, str] | None = None,
) -> SarifLog:
    """The SARIF log as typed dicts, within GitHub's count and size limits (worst results kept).

    help_uris maps rule IDs to a page documenting the rule (the GitHub Action links the rule pack
    at the revision that ran); rules without one get no helpUri.
    """
    root = _absolute(srcroot if srcroot is not None else Path.cwd())
    findings = ordered_findings(report.findings)
    kept = _cap(findings, max_per_rule, max_results)
    cut = _Cut(len(findings), len(findings) - len(kept), max_per_rule, max_results, max_gzip_bytes)
    log = _log(report, root, kept, cut, help_uris or {})
    size = _gzip_size(log)
    if size > max_gzip_bytes:
        # The per-model data (facts a config file states, any length) gives way before a single result does.
        models = len(report.models)
        report = replace(report, models=[])
        cut = replace(cut, models_omitted=models)
        log = _log(report, root, kept, cut, help_uris or {})
        size = _gzip_size(log)
    while size > max_gzip_bytes and kept:
        # Results dominate the size: keep a proportional share of them, worst first, and measure again.
        keep = min(len(kept) - 1, int(len(kept) * max_gzip_bytes / size * 0.95))
        kept = kept[: max(keep, 0)]
        cut = replace(cut, omitted=len(findings) - len(kept), by_size=True)
        log = _log(report, root, kept, cut, help_uris or {})
        size = _gzip_size(log)
    return log


@dataclass(frozen=True, slots=True)
class _Cut:
    """How many results were left out and which limits did it, for the notification and run properties."""

    total: int
    omitted: int
    per_rule: int
    per_run: int
    gzip_bytes: int
    by_size: bool = False
    models_omitted: int = 0  # the models' summaries, left out before any result

    def note(self) -> str:
        limits = f"{self.per_rule} per rule, {self.per_run} per run"
        if self.by_size:
            limits += f", {self.gzip_bytes} bytes gzipped"
        if not self.omitted:
            return (f"The summaries of {self.models_omitted} models were left out to stay within GitHub code scanning "
                    f"limits ({self.gzip_bytes} bytes gzipped); the JSON report has them.")  # fmt: skip
        return (
            f"{self.omitted} of {self.total} results were left out, least severe first, to stay within "
            f"GitHub code scanning limits ({limits}); the JSON report has every finding."
        )

    def properties(self) -> dict[str, Any]:
        return {
            "truncated": True,
            "omittedResults": self.omitted,
            "omittedModels": self.models_omitted,
            "totalResults": self.total,
            "note": self.note(),
            "limits": {
                "maxResultsPerRule": self.per_rule,
                "maxResultsPerRun": self.per_run,
                "maxGzipBytes": self.gzip_bytes,
            },
        }


def _log(report: Report, root: Path, kept: list[Finding], cut: _Cut, help_uris: Mapping[str, str]) -> SarifLog:
    rules = _rules(report, kept, help_uris)
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    notifications = _failed_files(report)
    if cut.omitted or cut.models_omitted:
        notifications.append(_notification("warning", cut.note()))
    run: Run = {
        "tool": {"driver": _driver(report, rules)},
        "automationDetails": {"id": AUTOMATION_ID},
        "originalUriBaseIds": {SRCROOT: {"uri": _directory_uri(root)}},
        "columnKind": "unicodeCodePoints",
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications}],
        "results": [_result(f, index[f.rule_id], root) for f in kept],
    }
    properties: dict[str, Any] = {"models": [model_document(m) for m in sorted(report.models, key=lambda m: m.path)]}
    properties["scanLimits"] = dict(report.limits)  # "limits" names GitHub's upload caps when results are cut
    if cut.omitted or cut.models_omitted:
        properties.update(cut.properties())
    run["properties"] = properties
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def _dump(log: SarifLog) -> str:
    return json.dumps(json_safe(log), indent=2, ensure_ascii=True) + "\n"  # SARIF consumers read UTF-8


def _gzip_size(log: SarifLog) -> int:
    return len(gzip.compress(_dump(log).encode("ascii"), compresslevel=6))


def fingerprint(finding: Finding, stable_path: str) -> str:
    """sha256 of (rule, path, member, evidence): no offsets, absolute roots, times or durations."""
    payload = [
        FINGERPRINT_VERSION,
        finding.rule_id,
        stable_path,
        finding.location.member or "",
        sorted_evidence(finding.evidence),
    ]
    data = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def artifact_location(path: str, root: Path) -> tuple[ArtifactLocation, str]:
    """URI for a report path, and the machine-independent path used in fingerprints.

    Inside root: a percent-encoded relative URI on %SRCROOT%. Outside: an absolute file URI,
    which GitHub cannot map to the repository, and the path as the report gave it.
    """
    absolute = _absolute(Path(path))
    try:
        relative = absolute.relative_to(root).as_posix()
    except ValueError:
        return {"uri": absolute.as_uri()}, path
    # Names that are not UTF-8 reach Python as surrogate escapes: percent-encode their original bytes.
    return {"uri": quote(relative, safe="/", errors="surrogateescape"), "uriBaseId": SRCROOT}, relative


def _driver(report: Report, rules: list[ReportingDescriptor]) -> ToolComponent:
    return {
        "name": TOOL_NAME,
        "version": report.tool_version,
        "semanticVersion": report.tool_version,
        "informationUri": INFORMATION_URI,
        "rules": rules,
    }


def _failed_files(report: Report) -> list[Notification]:
    """Files that could not be read are not clean: say so where GitHub shows tool problems."""
    return [
        _notification("error", _escape_brackets(valid_utf8(f"Could not scan {f.path}: {f.reason or 'unknown error'}")))
        for f in sorted(report.files, key=lambda f: f.path)
        if f.status == FILE_FAILED
    ]


def _cap(findings: Iterable[Finding], max_per_rule: int, max_results: int) -> list[Finding]:
    """Keep the first results (worst first) within the per-rule and per-run budgets."""
    kept: list[Finding] = []
    per_rule: dict[str, int] = {}
    for finding in findings:
        if len(kept) >= max_results:
            break
        count = per_rule.get(finding.rule_id, 0)
        if count < max_per_rule:
            per_rule[finding.rule_id] = count + 1
            kept.append(finding)
    return kept


def _rules(report: Report, findings: list[Finding], help_uris: Mapping[str, str]) -> list[ReportingDescriptor]:
    """Descriptors for the referenced rules, sorted by id; unknown ids get a minimal one."""
    infos: dict[str, RuleInfo] = {}
    for finding in findings:
        if finding.rule_id not in infos:
            infos[finding.rule_id] = report.rules.get(finding.rule_id) or _unknown_rule(finding)
    descriptors = []
    for rule_id in sorted(infos):
        descriptor = _descriptor(infos[rule_id])
        if help_uris.get(rule_id):
            descriptor["helpUri"] = help_uris[rule_id]
        descriptors.append(descriptor)
    return descriptors


def _unknown_rule(finding: Finding) -> RuleInfo:
    text = f"Finding reported by wscan rule {finding.rule_id}."
    return RuleInfo(finding.rule_id, finding.rule_id, finding.severity, text, text, text)


def _descriptor(rule: RuleInfo) -> ReportingDescriptor:
    cwe_tags = [f"external/cwe/{c.strip().lower()}" for c in rule.cwe]
    tags = list(dict.fromkeys(["security", *rule.tags, *cwe_tags]))[:MAX_TAGS_PER_RULE]
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.description or rule.summary},
        "help": {"text": rule.help or rule.description or rule.summary, "markdown": _help_markdown(rule)},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {
            "security-severity": SECURITY_SEVERITY[rule.severity],
            "tags": tags,
            "precision": rule.precision,
        },
    }


def _help_markdown(rule: RuleInfo) -> str:
    parts = [_md(rule.description or rule.summary)]
    if rule.help:
        parts.append(f"**What to do:** {_md(rule.help)}")
    parts.append(f"**Severity:** {rule.severity.label}")
    links = [_cwe_link(c) for c in rule.cwe]
    if links:
        parts.append("**References:** " + ", ".join(links))
    return "\n\n".join(parts)


def _cwe_link(cwe: str) -> str:
    name = cwe.strip().upper()
    number = name.removeprefix("CWE-")
    if number.isdigit():
        return f"[{name}](https://cwe.mitre.org/data/definitions/{number}.html)"
    return _md(name)


def _result(finding: Finding, rule_index: int, root: Path) -> Result:
    loc = finding.location
    artifact, stable_path = artifact_location(loc.path, root)
    properties: dict[str, Any] = {"severity": finding.severity.label}
    if loc.member:
        properties["member"] = valid_utf8(loc.member)
    if loc.offset is not None:
        properties["offset"] = loc.offset
    properties["evidence"] = {
        key: valid_utf8(value) if isinstance(value, str) else value
        for key, value in sorted_evidence(finding.evidence).items()
    }
    return {
        "ruleId": finding.rule_id,
        "ruleIndex": rule_index,
        "level": LEVEL[finding.severity],
        "message": {"text": _message(finding)},
        "locations": [{"physicalLocation": {"artifactLocation": artifact, "region": {"startLine": 1}}}],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(finding, stable_path)},
        "properties": properties,
    }


def _message(finding: Finding) -> str:
    """Message naming the member and byte offset, since the region can only say line 1."""
    where = []
    if finding.location.member:
        where.append(f"in member {finding.location.member}")
    if finding.location.offset is not None:
        where.append(f"at byte offset {finding.location.offset}")
    text = finding.message + (f" ({' '.join(where)})" if where else "")
    return _escape_brackets(valid_utf8(text))


def _escape_brackets(text: str) -> str:
    """SARIF plain-text messages treat [text](target) as a link; hostile names must not make one."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _md(text: str) -> str:
    """Escape Markdown punctuation so names like __reduce__ or <script> render literally."""
    return "".join("\\" + ch if ch in "\\`*_[]<>|#" else ch for ch in text)


def _notification(level: str, text: str) -> Notification:
    return {"level": level, "message": {"text": text}}


def _absolute(path: Path) -> Path:
    """Absolute and normalised, without resolving symlinks (the user's view of the tree)."""
    return Path(os.path.abspath(path))


def _directory_uri(root: Path) -> str:
    uri = root.as_uri()  # pathlib percent-encodes the original bytes of names that are not UTF-8
    return uri if uri.endswith("/") else uri + "/"
