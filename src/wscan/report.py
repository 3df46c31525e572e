"""The result of a scan as plain data; every output format is a pure function of it."""

from __future__ import annotations

from dataclasses import dataclass, field

from wscan.model import Finding, Severity

FILE_SCANNED = "scanned"
FILE_SKIPPED = "skipped"
FILE_FAILED = "failed"


@dataclass(frozen=True, slots=True)
class FileResult:
    """One top-level file: what it is, whether it could be read, and its worst finding."""

    path: str
    size: int
    formats: tuple[str, ...]        # scanner names that read it, outermost first, inner ones after
    status: str                     # scanned | skipped | failed
    reason: str = ""                # why skipped or failed
    worst: Severity | None = None   # highest finding severity, None when clean


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """What the report needs to document a rule (SARIF tool.driver.rules, text help)."""

    id: str
    name: str
    severity: Severity
    summary: str
    description: str
    help: str
    cwe: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    precision: str = "high"


@dataclass(frozen=True, slots=True)
class ModelSummary:
    """What one model folder is, as the scanners saw it."""

    path: str
    files: int
    size: int
    shards: int
    formats: tuple[str, ...]
    dtypes: tuple[str, ...]
    parameters: int | None
    quantization: str
    kind: str                 # "full" or "adapter"
    base_model: str
    architecture: str
    model_card: bool
    license: str
    worst: Severity | None
    verdict: str              # pass | fail, against the scan's threshold


@dataclass(slots=True)
class Report:
    """Findings, per-file results and the settings the scan ran with."""

    tool_version: str
    rules_digest: str
    fail_on: Severity
    files: list[FileResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    rules: dict[str, RuleInfo] = field(default_factory=dict)
    limits: dict[str, int | float] = field(default_factory=dict)
    duration_seconds: float = 0.0
    models: list[ModelSummary] = field(default_factory=list)
    config: str = ""  # the config file the scan ran with, if any

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    def by_severity(self) -> dict[str, int]:
        counts = {s.label: 0 for s in Severity}
        for finding in self.findings:
            counts[finding.severity.label] += 1
        return counts

    @property
    def failed(self) -> bool:
        """True when a finding reaches the failure threshold (the exit code is then 1)."""
        return any(f.severity >= self.fail_on for f in self.findings)

    def verdict(self) -> str:
        return "fail" if self.failed else "pass"
