"""Markdown for a GitHub job summary: the verdict, then the findings grouped by model folder.

Every name and message can come from a hostile file, so all of it is escaped: Markdown punctuation,
HTML, `$` (GitHub renders math), and control characters. Nothing from a scanned file ever becomes a
link, an image or a heading. GitHub drops a step summary above 1 MiB, so the renderer keeps a budget
and says what it left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from wscan.model import Finding, Severity
from wscan.output.json import ordered_findings, severity_counts, valid_utf8
from wscan.output.text import clean
from wscan.report import FILE_FAILED, FILE_SCANNED, FILE_SKIPPED, FileResult, ModelSummary, Report, RuleInfo
from wscan.summary import model_root

MAX_ROWS = 200             # findings shown in tables; the SARIF and JSON reports have all of them
MAX_BYTES = 900_000        # GitHub rejects a step summary above 1 MiB; leave room for other steps' text
MAX_NOT_SCANNED = 50
MAX_CELL_CHARS = 300       # a name or message longer than this is cut in the middle (the reports keep it whole)
# Files no scanner read because they are text or media: not model files, so not worth a line.
NOT_MODEL_REASONS = frozenset({"file.text", "text", "file.media", "media"})
MARKDOWN_SPECIAL = set("\\`*_{}[]()<>#!|~&:@$.")  # '.' and ':' break autolinks (www.x, https:)
ICON = {"fail": ":x:", "pass": ":white_check_mark:"}


def md(text: str) -> str:
    """Escape text from a scanned file so it renders literally on one line (no links, HTML or math).

    Control characters (a newline in a file name included) stay visible as escapes. Long text is cut in the
    middle, keeping both ends: a name can be 4 KiB, and escaping can grow it sevenfold.
    """
    if len(text) > MAX_CELL_CHARS:
        text = f"{text[: MAX_CELL_CHARS * 2 // 3]}…{text[-(MAX_CELL_CHARS // 3) :]}"
    flat = valid_utf8(clean(text))
    return "".join("\\" + ch if ch in MARKDOWN_SPECIAL else ch for ch in flat)


def prose(text: str) -> str:
    """Rule help and descriptions: line breaks from YAML folded into spaces, then escaped."""
    return md(" ".join(text.split()))


def is_model_file(result: FileResult) -> bool:
    """False for files no scanner read because they are plain text, source or media."""
    return not (result.status == FILE_SKIPPED and not result.formats and result.reason in NOT_MODEL_REASONS)


def render_markdown(
    report: Report,
    *,
    intro: str = "",
    rule_links: Mapping[str, str] | None = None,
    verdict: str | None = None,
    max_rows: int = MAX_ROWS,
    max_bytes: int = MAX_BYTES,
) -> str:
    """The job summary; `intro` is trusted Markdown from the caller (what was scanned and why).

    `verdict` overrides the report's when the caller fails for another reason (unfetched LFS files).
    """
    links = rule_links or {}
    findings = ordered_findings(report.findings)
    head = _header(report, intro, verdict or report.verdict())
    tail = _rules_section(report, findings, links) + _not_scanned(report.files, max_bytes // 4)
    budget = max_bytes - len(_encode(head + tail)) - 400
    body, shown = _folders(report, findings, links, max_rows, budget)
    if shown < len(findings):
        body.append(
            f"_{len(findings) - shown} more findings are not shown here (least severe first were left out); "
            "the SARIF report and `wscan scan --format json` list every one._\n"
        )
    return "\n".join([*head, *body, *tail]).rstrip("\n") + "\n"


def _encode(lines: list[str]) -> bytes:
    return "\n".join(lines).encode("utf-8")


def _header(report: Report, intro: str, verdict: str) -> list[str]:
    counts = severity_counts(report)
    lines = [
        f"## {ICON[verdict]} wscan: {verdict} (fails on {report.fail_on.label} and above)",
        "",
    ]
    if intro:
        lines += [intro, ""]
    model_files = [f for f in report.files if is_model_file(f)]
    ignored = len(report.files) - len(model_files)
    scanned = sum(1 for f in model_files if f.status == FILE_SCANNED)
    skipped = sum(1 for f in model_files if f.status == FILE_SKIPPED)
    failed = sum(1 for f in model_files if f.status == FILE_FAILED)
    lines += [
        "| critical | high | medium | low | info | files scanned | not scanned | failed | text or media |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {' | '.join(str(counts[s.label]) for s in sorted(Severity, reverse=True))} "
        f"| {scanned} | {skipped} | {failed} | {ignored} |",
        "",
    ]
    return lines


def _folders(
    report: Report, findings: list[Finding], links: Mapping[str, str], max_rows: int, budget: int
) -> tuple[list[str], int]:
    """One section per model folder, worst first, until the row or byte budget runs out."""
    pipelines = {m.path for m in report.models}
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(model_root(finding.location.path, pipelines), []).append(finding)
    models = {m.path: m for m in report.models}
    for path in models:
        groups.setdefault(path, [])
    order = sorted(groups, key=lambda p: (-max((int(f.severity) for f in groups[p]), default=-1), p))
    lines: list[str] = []
    shown = used = 0
    for folder in order:
        section = _folder_heading(folder, models.get(folder), groups[folder], report.fail_on)
        rows: list[str] = []
        full = False
        for finding in groups[folder]:
            row = _row(finding, folder, links)
            if shown >= max_rows or used + len(_encode([*section, *_table([*rows, row])])) > budget:
                full = True
                break
            rows.append(row)
            shown += 1
        if rows or not groups[folder]:
            block = [*section, *(_table(rows) if rows else ["No findings."]), ""]
            lines += block
            used += len(_encode(block))
        if full:
            break
    return lines, shown


def _folder_heading(folder: str, model: ModelSummary | None, findings: list[Finding], fail_on: Severity) -> list[str]:
    worst = max((f.severity for f in findings), default=None)
    verdict = "fail" if worst is not None and worst >= fail_on else "pass"
    name = md(folder if folder not in ("", ".") else "(repository root)")
    lines = [f"### {ICON[verdict]} {name}", ""]
    if model is not None:
        lines += [_describe(model), ""]
    return lines


def _describe(model: ModelSummary) -> str:
    what = [plural(model.files, "file"), _size(model.size)]
    if model.shards:
        what.append(plural(model.shards, "shard"))
    if model.parameters is not None:
        what.append(f"{model.parameters:,} parameters")
    if model.dtypes:
        what.append("/".join(model.dtypes))
    if model.formats:
        what.append("formats: " + ", ".join(model.formats))
    if model.architecture:
        what.append("architecture " + model.architecture)
    if model.kind == "adapter":
        what.append("adapter of " + (model.base_model or "an unknown base model"))
    what.append(f"licence {model.license}" if model.license else "no licence")
    return prose("; ".join(what))


def _table(rows: list[str]) -> list[str]:
    return ["| severity | rule | file | where | finding |", "|---|---|---|---|---|", *rows]


def _row(finding: Finding, folder: str, links: Mapping[str, str]) -> str:
    loc = finding.location
    name = loc.path
    if folder not in ("", ".") and name.startswith(folder + "/"):
        name = name[len(folder) + 1 :]
    where = []
    if loc.member:
        where.append("member " + loc.member)
    if loc.offset is not None:
        where.append(f"byte {loc.offset}")
    return (
        f"| {finding.severity.label} | {_rule_ref(finding.rule_id, links)} | {md(name)} "
        f"| {md(', '.join(where))} | {md(finding.message)} |"
    )


def _rule_ref(rule_id: str, links: Mapping[str, str]) -> str:
    url = links.get(rule_id, "")
    # Rule IDs and URLs come from rule packs and the action, never from a scanned file.
    if url.startswith("https://") and not set(url) & set(" ()<>\"'\\"):
        return f"[{md(rule_id)}]({url})"
    return md(rule_id)


def _rules_section(report: Report, findings: Iterable[Finding], links: Mapping[str, str]) -> list[str]:
    ids = sorted({f.rule_id for f in findings})
    if not ids:
        return []
    lines = ["### Rules", ""]
    for rule_id in ids:
        rule = report.rules.get(rule_id)
        lines.append(_rule_line(rule_id, rule, links))
    return [*lines, ""]


def _rule_line(rule_id: str, rule: RuleInfo | None, links: Mapping[str, str]) -> str:
    if rule is None:
        return f"- {_rule_ref(rule_id, links)}"
    text = f"- {_rule_ref(rule_id, links)} {prose(rule.name)} ({rule.severity.label}): {prose(rule.summary)}"
    if rule.help:
        text += f". **What to do:** {prose(rule.help)}"
    return text


def _not_scanned(files: Iterable[FileResult], budget: int) -> list[str]:
    """Files not read in full, up to a count and a byte budget, so the findings above always have room."""
    missed = sorted(
        (f for f in files if f.status != FILE_SCANNED and is_model_file(f)), key=lambda f: (f.status, f.path)
    )
    if not missed:
        return []
    lines = ["### Not scanned", ""]
    used = 0
    for result in missed[:MAX_NOT_SCANNED]:
        reason = f": {md(result.reason)}" if result.reason else ""
        line = f"- {result.status} {md(result.path)}{reason}"
        used += len(line.encode("utf-8")) + 1
        if used > budget:
            break
        lines.append(line)
    if len(lines) - 2 < len(missed):
        lines.append(f"- and {len(missed) - (len(lines) - 2)} more")
    return [*lines, ""]


def plural(n: int, word: str) -> str:
    """`1 file`, `2 files`."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _size(n: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
