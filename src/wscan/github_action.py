"""GitHub Action entry point: `python -m wscan.github_action`, run by the scan step of action.yml.

The action's inputs reach this module only as WSCAN_* environment variables that action.yml declares
(never as text spliced into a script). It picks the files to scan: the files a pull request adds or
changes, the given paths, or the whole repository; hands them to the engine, which decides what each
file is from its bytes; then writes SARIF, a Markdown job summary, annotations and step outputs.

Exit status: 0 pass; 1 findings at or above the threshold, or Git LFS files that were not fetched;
2 bad inputs or a checkout that cannot answer (missing commits, unreadable config).
"""

from __future__ import annotations

import glob
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any, TextIO
from urllib.parse import quote

from wscan.config import CONFIG_NAME, Config
from wscan.engine import Engine
from wscan.errors import UsageError
from wscan.model import Severity
from wscan.output.json import ordered_findings, severity_counts, valid_utf8
from wscan.output.markdown import md, plural, render_markdown
from wscan.output.sarif import render_sarif
from wscan.output.text import clean, render_text, tolerate_encoding
from wscan.report import FileResult, Report
from wscan.rules import RuleSet, builtin_rules_dir

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
SCOPES = ("auto", "changed", "all")
PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
NULL_SHA = re.compile(r"^0+$")
REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
# GitHub shows 10 error, 10 warning and 10 notice annotations per step; one notice is kept for "more".
ANNOTATIONS_PER_LEVEL = 10
LFS_REASONS = frozenset({"lfs_pointer", "file.lfs_pointer"})
DEFAULT_SARIF = "wscan.sarif"


@dataclass(frozen=True)
class Settings:
    """What the action was asked to do, read from WSCAN_* and GITHUB_* variables."""

    root: Path
    paths: tuple[str, ...] = ()
    scope: str = "auto"
    fail_on: Severity | None = None
    config: str = ""
    sarif: str = DEFAULT_SARIF
    event_name: str = ""
    event: Mapping[str, Any] = field(default_factory=dict)
    output: Path | None = None
    summary: Path | None = None
    repository: str = ""
    sha: str = ""
    server: str = "https://github.com"
    action_repository: str = ""
    action_ref: str = ""
    action_path: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Validate the inputs up front so a typo is a usage error, not a silently weaker scan."""
        scope = env.get("WSCAN_SCOPE", "").strip().lower() or "auto"
        if scope not in SCOPES:
            raise UsageError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        fail_on_text = env.get("WSCAN_FAIL_ON", "").strip()
        try:
            fail_on = Severity.parse(fail_on_text) if fail_on_text else None
        except ValueError as exc:
            raise UsageError(f"fail-on: {exc}") from None
        root = Path(env.get("GITHUB_WORKSPACE") or os.getcwd())
        return cls(
            root=root,
            paths=tuple(line.strip() for line in env.get("WSCAN_PATHS", "").splitlines() if line.strip()),
            scope=scope,
            fail_on=fail_on,
            config=env.get("WSCAN_CONFIG", "").strip(),
            sarif=env.get("WSCAN_SARIF", "").strip() or DEFAULT_SARIF,
            event_name=env.get("GITHUB_EVENT_NAME", ""),
            event=_read_event(env.get("GITHUB_EVENT_PATH", "")),
            output=Path(env["GITHUB_OUTPUT"]) if env.get("GITHUB_OUTPUT") else None,
            summary=Path(env["GITHUB_STEP_SUMMARY"]) if env.get("GITHUB_STEP_SUMMARY") else None,
            repository=env.get("GITHUB_REPOSITORY", ""),
            sha=env.get("GITHUB_SHA", ""),
            server=env.get("GITHUB_SERVER_URL", "").rstrip("/") or "https://github.com",
            action_repository=env.get("WSCAN_ACTION_REPOSITORY", ""),
            action_ref=env.get("WSCAN_ACTION_REF", ""),
            action_path=Path(env["WSCAN_ACTION_PATH"]) if env.get("WSCAN_ACTION_PATH") else None,
        )

    def revision(self) -> str:
        """The commit the scanned files come from (a pull request's head, not its merge commit)."""
        head = _dig(self.event, "pull_request", "head", "sha")
        return head if SHA.match(head) else self.sha


@dataclass(frozen=True)
class Selection:
    """The paths handed to the engine, and how they were chosen (for the summary)."""

    paths: list[Path]
    intro: str
    base: str | None = None                       # pull request base: the config is read from there
    changed: frozenset[str] = frozenset()         # files named by the diff
    notes: list[str] = field(default_factory=list)  # workflow commands to print


@dataclass(frozen=True)
class Origin:
    """Where the config and its rule packs were read from, to link user rules at that commit."""

    folder: Path
    commit: str


def main(env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """Run the action's scan; every problem with inputs or the checkout is one ::error and exit 2."""
    environ = os.environ if env is None else env
    stream = sys.stdout if out is None else out
    tolerate_encoding(stream, sys.stderr)
    try:
        settings = Settings.from_env(environ)
        os.chdir(settings.root)  # report paths are relative to the working directory: the repository
        with tempfile.TemporaryDirectory(prefix="wscan-config-") as tmp:
            return run(settings, stream, Path(tmp))
    except UsageError as exc:
        stream.write(command("error", str(exc), title="wscan"))
        return EXIT_USAGE


def run(settings: Settings, out: TextIO, tmp: Path) -> int:
    """Select, scan, report; returns the exit status."""
    selection = select(settings)
    for note in selection.notes:
        out.write(note)
    config, origin, notes = load_config(settings, selection, tmp)
    for note in notes:
        out.write(note)
    if settings.fail_on is not None:
        config = replace(config, fail_on=settings.fail_on)
    engine = Engine(config)
    report = _scan_with_commands_off(engine, selection.paths, out)
    links = rule_links(engine.rules, {f.rule_id for f in report.findings}, settings, origin)
    sarif_path = settings.root / settings.sarif
    _write(sarif_path, render_sarif(report, srcroot=settings.root, help_uris=links))
    lfs = [f for f in report.files if f.reason in LFS_REASONS]
    for line in lfs_errors(lfs):
        out.write(line)
    for line in finding_annotations(report):
        out.write(line)
    failed = report.failed or bool(lfs)
    if settings.summary is not None:
        summary = render_markdown(
            report, intro=_intro(selection, lfs), rule_links=links, verdict="fail" if failed else "pass"
        )
        _append(settings.summary, summary)
    if settings.output is not None:
        _append(settings.output, format_outputs(outputs(report, settings.sarif, failed)))
    return EXIT_FAIL if failed else EXIT_OK


# --- choosing files ----------------------------------------------------------------------------


def select(settings: Settings) -> Selection:
    """Changed files for pull requests (or when asked), otherwise the given paths or everything."""
    span = diff_range(settings)
    scope = settings.scope
    if scope == "auto":
        auto_diff = settings.event_name in (*PULL_REQUEST_EVENTS, "merge_group")
        scope = "changed" if span is not None and auto_diff else "all"
    if scope == "changed":
        if span is None:
            if settings.event_name == "push":
                return _everything(settings, "the push has no earlier commit to compare with, so ")
            raise UsageError(
                f"scope 'changed' needs a pull_request, merge_group or push event, not {settings.event_name!r}"
            )
        return _changed(settings, *span)
    return _everything(settings, "")


def diff_range(settings: Settings) -> tuple[str, str] | None:
    """(base, head) commits from the event file, validated as SHAs; None when the event has none."""
    event = settings.event
    if settings.event_name in PULL_REQUEST_EVENTS:
        pair = (_dig(event, "pull_request", "base", "sha"), _dig(event, "pull_request", "head", "sha"))
    elif settings.event_name == "merge_group":
        pair = (_dig(event, "merge_group", "base_sha"), _dig(event, "merge_group", "head_sha"))
    elif settings.event_name == "push":
        pair = (_dig(event, "before"), _dig(event, "after"))
    else:
        return None
    if not all(pair) or any(NULL_SHA.match(sha) for sha in pair):
        return None
    for sha in pair:
        if not SHA.match(sha):  # never pass event text to git unless it is a commit id
            raise UsageError(f"the event file names {sha!r} where a commit SHA belongs")
    return pair


def _changed(settings: Settings, base: str, head: str) -> Selection:
    names = changed_files(settings.root, base, head)
    kept = [n for n in names if not settings.paths or _under_any(n, settings.paths)]
    notes = []
    paths = []
    for name in kept:
        if os.path.isdir(settings.root / name) and not os.path.islink(settings.root / name):
            notes.append(command("notice", f"{name} is a folder (a submodule?): not scanned", title="wscan"))
        else:
            paths.append(Path(name))
    where = f" under {', '.join(md(p) for p in settings.paths)}" if settings.paths else ""
    span = f"`{base[:12]}...{head[:12]}`"
    if paths:
        intro = (
            f"Scanned the {plural(len(paths), 'file')}{where} that this change adds or modifies ({span}); "
            "each file's format is decided from its bytes, not its name."
        )
    else:
        intro = f"This change ({span}) adds or modifies no files{where}: nothing to scan."
    trusted_base = base if settings.event_name in (*PULL_REQUEST_EVENTS, "merge_group") else None
    return Selection(paths, intro, trusted_base, frozenset(names), notes)


def changed_files(root: Path, base: str, head: str) -> list[str]:
    """Files added, copied, modified, renamed or retyped between the merge base of base and head."""
    for sha, what in ((base, "base"), (head, "head")):
        if _git(root, "cat-file", "-e", f"{sha}^{{commit}}", check=False) is None:
            raise UsageError(
                f"the {what} commit {sha} is not in the checkout: check out with actions/checkout "
                "and fetch-depth: 0 so the change can be compared"
            )
    output = _git(root, "diff", "--name-only", "-z", "--no-color", "--diff-filter=ACMRT", f"{base}...{head}", "--")
    assert output is not None
    return sorted({os.fsdecode(name) for name in output.split(b"\0") if name})


def _everything(settings: Settings, why: str) -> Selection:
    patterns = settings.paths or (".",)
    paths = expand(settings.root, patterns)
    intro = (
        f"Scanned {', '.join(md(p) for p in patterns) if settings.paths else 'the whole repository'} ({why}every file, "
        "each one's format decided from its bytes, not its name)."
    )
    return Selection(paths, intro[0].upper() + intro[1:])


def expand(root: Path, patterns: Iterable[str]) -> list[Path]:
    """Paths and glob patterns relative to root; a folder holding `.git` is scanned without it."""
    found: dict[str, Path] = {}
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern, root_dir=root, recursive=True))
            matches = [m for m in matches if ".git" not in PurePosixPath(m).parts]
        else:
            if not os.path.lexists(root / pattern):
                raise UsageError(f"paths: {pattern} does not exist in the checkout")
            matches = [pattern]
        for match in matches:
            for path in _without_git(root, Path(match)):
                found.setdefault(os.path.normpath(path), path)
    return list(found.values())


def _without_git(root: Path, path: Path) -> list[Path]:
    full = root / path
    if full.is_dir() and not full.is_symlink() and (full / ".git").exists():
        return [path / child.name for child in sorted(full.iterdir()) if child.name != ".git"]
    return [path]


def _under_any(name: str, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        folder = os.path.normpath(pattern).replace(os.sep, "/")
        if folder == "." or name == folder or name.startswith(folder + "/") or fnmatchcase(name, pattern):
            return True
    return False


def _git(root: Path, *args: str, check: bool = True) -> bytes | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, check=False)
    except OSError as exc:
        raise UsageError(f"cannot run git: {exc}") from None
    if done.returncode != 0:
        if not check:
            return None
        detail = done.stderr.decode("utf-8", "replace").strip()
        raise UsageError(f"git {args[0]} failed: {detail}")
    return done.stdout


# --- configuration -----------------------------------------------------------------------------


def load_config(settings: Settings, selection: Selection, tmp: Path) -> tuple[Config, Origin, list[str]]:
    """The explicit config, else `.wscan.yaml` at the repository root, else the defaults.

    On a pull request both the config and its rule packs are read from the base commit: a pull request
    cannot switch off the checks that judge it (by adding an ignore, lowering a severity or replacing a
    rule). Configs inside scanned folders are never picked up, for the same reason.
    """
    name = settings.config or CONFIG_NAME
    origin = Origin(settings.root, settings.revision())
    if selection.base is None or os.path.isabs(name):
        path = settings.root / name
        if path.is_file():
            return Config.from_file(path), origin, []
        if settings.config:
            raise UsageError(f"config file not found: {settings.config}")
        return Config(), origin, []
    return _base_config(settings.root, _repo_path(name), selection, tmp)


def _base_config(root: Path, name: str, selection: Selection, tmp: Path) -> tuple[Config, Origin, list[str]]:
    base = selection.base
    assert base is not None
    notes = []
    text = _git(root, "show", f"{base}:{name}", check=False)
    if text is None:
        if (root / name).is_file():
            notes.append(command(
                "warning",
                f"{name} is new in this pull request: the scan used the default configuration; "
                "it takes effect once merged",
                title="wscan config",
            ))
        return Config(), Origin(tmp, base), notes
    copy = tmp / name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(text)
    config = Config.from_file(copy)
    touched = [name] if name in selection.changed else []
    for pack in config.rule_files:
        try:
            pack_name = pack.resolve().relative_to(tmp.resolve()).as_posix()
        except ValueError:
            continue  # outside the repository: not something the pull request can change
        content = _git(root, "show", f"{base}:{pack_name}", check=False)
        if content is None:
            raise UsageError(f"{name} at the base commit names rule pack {pack_name}, which is not there")
        (tmp / pack_name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / pack_name).write_bytes(content)
        touched += [pack_name] if pack_name in selection.changed else []
    if touched:
        notes.append(command(
            "warning",
            f"this pull request changes {', '.join(touched)}: it was judged with the base commit's version; "
            "the change takes effect once merged",
            title="wscan config",
        ))
    return config, Origin(tmp, base), notes


def _repo_path(name: str) -> str:
    normal = os.path.normpath(name).replace(os.sep, "/")
    if normal.startswith("../"):
        raise UsageError(f"config {name} is outside the repository")
    return normal


# --- links to rule definitions -----------------------------------------------------------------


def rule_links(rules: RuleSet, ids: Iterable[str], settings: Settings, origin: Origin) -> dict[str, str]:
    """Each rule's definition at the exact revision that judged: stable links, never a moving branch.

    Built-in rules link to the action's own repository at the ref the workflow pinned (a SHA pin makes
    the link immutable); rules from the scanned repository's config link to that repository at the
    commit the config was read from. Line anchors point at the rule's `id:`.
    """
    links: dict[str, str] = {}
    lines: dict[Path, list[str]] = {}
    for rule_id in sorted(ids):
        rule = rules.get(rule_id)
        if rule is None or not rule.source:
            continue
        source = Path(rule.source)
        url = _pack_url(source, settings, origin)
        if url is None:
            continue
        if source not in lines:
            try:
                lines[source] = source.read_text(encoding="utf-8").splitlines()
            except OSError:
                lines[source] = []
        line = _id_line(lines[source], rule_id)
        links[rule_id] = url + (f"#L{line}" if line else "")
    return links


def _pack_url(source: Path, settings: Settings, origin: Origin) -> str | None:
    builtin = _relative(source, builtin_rules_dir())
    if builtin is not None:
        if settings.action_repository and settings.action_ref and REPOSITORY.match(settings.action_repository):
            return _blob(settings.server, settings.action_repository, settings.action_ref, f"rules/{builtin}")
        local = _relative(settings.action_path, settings.root) if settings.action_path else None
        if local is not None and settings.repository and settings.revision():  # `uses: ./`: the action is here
            prefix = "" if local == "." else local + "/"
            return _blob(settings.server, settings.repository, settings.revision(), f"{prefix}rules/{builtin}")
        return None
    own = _relative(source, origin.folder)
    if own is not None and settings.repository and origin.commit:
        return _blob(settings.server, settings.repository, origin.commit, own)
    return None


def _relative(path: Path | None, folder: Path) -> str | None:
    if path is None:
        return None
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def _blob(server: str, repository: str, ref: str, path: str) -> str:
    return f"{server}/{repository}/blob/{quote(ref, safe='/')}/{quote(path, safe='/')}"


def _id_line(lines: list[str], rule_id: str) -> int | None:
    pattern = re.compile(r"^\s*(-\s*)?id:\s*[\"']?" + re.escape(rule_id) + r"[\"']?\s*(#.*)?$")
    return next((i for i, line in enumerate(lines, 1) if pattern.match(line)), None)


# --- workflow commands and files ---------------------------------------------------------------


def escape_data(text: str) -> str:
    """Workflow-command message: %, CR and LF would end or forge the command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Workflow-command property value: also ',' and ':', which separate properties and the message."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **properties: str) -> str:
    """One `::level prop=value,...::message` line with GitHub's escaping and no control characters."""
    props = ",".join(f"{key}={escape_property(_plain(value))}" for key, value in properties.items() if value)
    return f"::{level}{' ' + props if props else ''}::{escape_data(_plain(message))}\n"


def finding_annotations(report: Report) -> list[str]:
    """Error annotations for findings at or above the threshold, warnings and notices below it."""
    lines: list[str] = []
    counts = {"error": 0, "warning": 0, "notice": 0}
    left_out = 0
    for finding in ordered_findings(report.findings):
        level = _level(finding.severity, report.fail_on)
        if level is None:
            continue
        cap = ANNOTATIONS_PER_LEVEL - (1 if level == "notice" else 0)
        if counts[level] >= cap:
            left_out += 1
            continue
        counts[level] += 1
        where = [f"member {finding.location.member}"] if finding.location.member else []
        where += [f"byte {finding.location.offset}"] if finding.location.offset is not None else []
        message = finding.message + (f" ({', '.join(where)})" if where else "")
        title = f"{finding.rule_id} ({finding.severity.label})"
        lines.append(command(level, message, file=finding.location.path, title=title))
    if left_out:
        lines.append(command(
            "notice",
            f"{left_out} more findings are not annotated (GitHub shows {ANNOTATIONS_PER_LEVEL} annotations "
            "of each level per step): see the job summary and the SARIF report",
            title="wscan",
        ))
    return lines


def lfs_errors(files: list[FileResult]) -> list[str]:
    """One clear error per unfetched Git LFS file: the scan saw a pointer, not the model."""
    lines = [
        command(
            "error",
            f"{f.path} is a Git LFS pointer, not the file: the checkout did not fetch LFS objects, so it "
            "was not scanned. Check out with actions/checkout and `lfs: true`.",
            file=f.path,
            title="Git LFS file not fetched",
        )
        for f in files[:ANNOTATIONS_PER_LEVEL]
    ]
    if len(files) > ANNOTATIONS_PER_LEVEL:
        lines.append(command("error", f"{len(files)} Git LFS pointers in all; check out with `lfs: true`."))
    return lines


def outputs(report: Report, sarif: str, failed: bool) -> dict[str, str]:
    """Step outputs: SARIF path, counts per severity, verdict, and the model folders for sign/verify."""
    counts = severity_counts(report)
    result = {"sarif": sarif}
    result.update({label: str(counts[label]) for label in ("critical", "high", "medium", "low", "info")})
    result["findings"] = str(len(report.findings))
    result["verdict"] = "fail" if failed else "pass"
    result["model-dirs"] = "\n".join(model_dirs(report))
    return result


def model_dirs(report: Report) -> list[str]:
    """Model folders the scan found, for signing and verifying; names with control characters are left out."""
    return [m.path for m in sorted(report.models, key=lambda m: m.path) if _plain(m.path) == m.path]


def format_outputs(values: Mapping[str, str]) -> str:
    """GITHUB_OUTPUT entries in the heredoc form, with a random delimiter no value can contain."""
    chunks = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        chunks.append(f"{name}<<{delimiter}\n{_plain_lines(value)}\n{delimiter}\n")
    return "".join(chunks)


def _level(severity: Severity, fail_on: Severity) -> str | None:
    if severity >= fail_on:
        return "error"
    if severity >= Severity.MEDIUM:
        return "warning"
    return "notice" if severity >= Severity.LOW else None


def _scan_with_commands_off(engine: Engine, paths: list[Path], out: TextIO) -> Report:
    """Scan, then print the text report, with workflow commands off from before the first file is opened:
    whatever reaches the log meanwhile (the report, a parser's message on stderr) may quote a hostile name,
    and a file named `::error::x` must stay text. Annotations are written after, escaped."""
    token = secrets.token_hex(16)
    out.write(f"::stop-commands::{token}\n")
    out.flush()  # before anything the scan may write to stderr
    try:
        report = engine.scan(paths)
        out.write(valid_utf8(render_text(report, color=False)))
    finally:
        out.write(f"::{token}::\n")
        out.flush()
    return report


def _intro(selection: Selection, lfs: list[FileResult]) -> str:
    if not lfs:
        return selection.intro
    return (
        f"{selection.intro}\n\n**{len(lfs)} Git LFS pointers were not fetched, so those models were not "
        "scanned: check out with `lfs: true`.**"
    )


def _plain(text: str) -> str:
    """One line of printable text: control characters and undecodable names as visible escapes."""
    return valid_utf8(clean(text))


def _plain_lines(text: str) -> str:
    return "\n".join(_plain(line) for line in text.split("\n"))


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc}") from None


def _append(path: Path, text: str) -> None:
    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(valid_utf8(text))
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc}") from None


def _read_event(path: str) -> Mapping[str, Any]:
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the event file {path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def _dig(data: Mapping[str, Any], *keys: str) -> str:
    value: Any = data
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, str) else ""


if __name__ == "__main__":
    sys.exit(main())
