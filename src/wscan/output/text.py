"""Readable report for people at a terminal or in a CI log.

Names in findings come from hostile files, so every string is stripped of control and format
characters (ANSI escapes, bidi overrides) before it reaches the terminal.
"""

from __future__ import annotations

import io
import unicodedata
from collections.abc import Iterable

from wscan.model import Finding, Severity
from wscan.output.json import ordered_findings, severity_counts
from wscan.report import FILE_FAILED, FILE_SCANNED, FILE_SKIPPED, FileResult, ModelSummary, Report, RuleInfo

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
GREEN = "\x1b[1;32m"
SEVERITY_STYLE = {
    Severity.CRITICAL: "\x1b[1;31m",
    Severity.HIGH: "\x1b[31m",
    Severity.MEDIUM: "\x1b[33m",
    Severity.LOW: "\x1b[36m",
    Severity.INFO: "\x1b[2m",
}
LABEL_WIDTH = max(len(s.name) for s in Severity)
INDENT = " " * (2 + LABEL_WIDTH + 2)


def render_text(report: Report, color: bool = False) -> str:
    """The whole report as text; the caller decides colour from isatty and NO_COLOR."""
    paint = _Painter(color)
    findings = ordered_findings(report.findings)
    lines = [_header(report, len(findings)), ""]
    if findings:
        results = {f.path: f for f in report.files}
        for path, group in _by_file(findings):
            lines += _file_block(path, group, results.get(path), report, paint)
    else:
        lines += ["No findings.", ""]
    lines += _not_scanned(report.files)
    lines += _models(report.models, paint)
    lines += _summary(report, paint)
    return "\n".join(lines) + "\n"


def clean(text: str) -> str:
    """Escape control, format and unassigned characters, and line and paragraph separators, so output cannot
    drive the terminal or start a line of its own."""
    if text.isprintable():  # no character of category C nor a separator but space: nothing to escape
        return text
    return "".join(_escape(ch) if unicodedata.category(ch)[0] == "C" or ch in "\u2028\u2029" else ch for ch in text)


def tolerate_encoding(*streams: object) -> None:
    """A console or pipe whose encoding cannot show every character (cp1252 on Windows) gets escapes for the
    rest, never a crash: a folder named in Chinese must not turn a clean scan into a traceback."""
    for stream in streams:
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")


def lines_safe(text: str) -> str:
    """`clean` line by line, for messages that may quote a scanned file (a name, a config value) and may
    span lines: a name could otherwise clear the screen, retitle the window or hide the report."""
    return "\n".join(clean(line) for line in text.split("\n"))


class _Painter:
    """Wraps text in ANSI styles, or leaves it alone when colour is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, style: str) -> str:
        return f"{style}{text}{RESET}" if self.enabled else text


def _header(report: Report, n_findings: int) -> str:
    return (
        f"wscan {clean(report.tool_version)}: {_plural(len(report.files), 'file')}, "
        f"{_plural(n_findings, 'finding')}, fail on {report.fail_on.label}"
    )


def _by_file(findings: list[Finding]) -> list[tuple[str, list[Finding]]]:
    """Group findings per file, worst file first; findings keep their global order."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.location.path, []).append(finding)
    return sorted(groups.items(), key=lambda item: (-max(f.severity for f in item[1]), item[0]))


def _file_block(
    path: str, findings: list[Finding], result: FileResult | None, report: Report, paint: _Painter
) -> list[str]:
    shown = clean(path)
    if shown.startswith(("#", ":")):  # a name like `##[group]...` would be log markup at a line's start in CI
        shown = "./" + shown
    title = paint(shown, BOLD)
    if result is not None and result.formats:
        title += f"  ({clean(' > '.join(result.formats))})"
    lines = [title]
    for finding in findings:
        label = finding.severity.name.ljust(LABEL_WIDTH)
        lines.append(
            f"  {paint(label, SEVERITY_STYLE[finding.severity])}  {clean(finding.rule_id)}  "
            f"{clean(finding.message)}"
        )
        lines.append(f"{INDENT}at {clean(finding.location.describe())}")
        help_line = _help_line(report.rules.get(finding.rule_id))
        if help_line:
            lines.append(f"{INDENT}help: {help_line}")
    lines.append("")
    return lines


def _help_line(rule: RuleInfo | None) -> str:
    return clean(" ".join(rule.help.split())) if rule is not None else ""


def _not_scanned(files: Iterable[FileResult]) -> list[str]:
    missed = sorted((f for f in files if f.status != FILE_SCANNED), key=lambda f: (f.status, f.path))
    if not missed:
        return []
    width = max(len(f.status) for f in missed)
    lines = ["Not scanned:"]
    for result in missed:
        reason = f": {clean(result.reason)}" if result.reason else ""
        lines.append(f"  {result.status.ljust(width)}  {clean(result.path)}{reason}")
    return [*lines, ""]


def _models(models: list[ModelSummary], paint: _Painter) -> list[str]:
    """Two lines per model folder: what it is, then provenance and verdict."""
    if not models:
        return []
    lines = ["Models:"]
    for model in sorted(models, key=lambda m: m.path):
        verdict = paint("FAIL", SEVERITY_STYLE[Severity.CRITICAL]) if model.verdict == "fail" else paint("pass", GREEN)
        what = [model.kind if model.kind == "adapter" else "model", _size(model.size), _plural(model.files, "file")]
        if model.shards:
            what.append(_plural(model.shards, "shard"))
        if model.parameters is not None:
            what.append(f"{_count(model.parameters)} parameters")
        what.append("/".join(model.dtypes) or "no tensor types known")
        if model.quantization:
            what.append(f"quantized {model.quantization}")
        lines.append(f"  {paint(clean(model.path), BOLD)}  {verdict}")
        lines.append(f"    {clean(', '.join(what))}; formats: {clean(', '.join(model.formats))}")
        about = [f"architecture {model.architecture}" if model.architecture else "architecture unknown"]
        if model.base_model:
            about.append(f"base {model.base_model}")
        about.append("model card" if model.model_card else "no model card")
        about.append(f"licence {model.license}" if model.license else "no licence")
        lines.append(f"    {clean('; '.join(about))}")
    return [*lines, ""]


def _size(n: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _count(n: int) -> str:
    for unit, scale in (("B", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}" if n < 10**18 else f"{n // scale}{unit}"  # a float holds up to 1e308
    return str(n)


def _summary(report: Report, paint: _Painter) -> list[str]:
    counts = severity_counts(report)
    threshold = report.fail_on.label
    if report.failed:
        verdict = f"{paint('FAIL', SEVERITY_STYLE[Severity.CRITICAL])} (findings at or above {threshold})"
    else:
        verdict = f"{paint('PASS', GREEN)} (nothing at or above {threshold})"
    lines = [
        f"Files: {report.count(FILE_SCANNED)} scanned, {report.count(FILE_SKIPPED)} skipped, "
        f"{report.count(FILE_FAILED)} failed, {len(report.files)} total",
        "Findings: " + ", ".join(f"{n} {label}" for label, n in counts.items()),
    ]
    if report.config:
        lines.append(f"Config: {clean(report.config)}")
    if report.limits:
        lines.append("Limits: " + ", ".join(f"{name} {_amount(name, value)}" for name, value in report.limits.items()))
    return [*lines, f"Verdict: {verdict}"]


def _amount(name: str, value: float) -> str:
    """Byte limits in KiB/MiB/GiB when they divide evenly, so the line stays readable."""
    if name.endswith("-bytes") or name == "max-bytes-read":
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if value >= size and value % size == 0:
                return f"{int(value // size)} {unit}"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
