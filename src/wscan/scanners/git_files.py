"""Git's own files inside a scanned folder: a `.git/config` whose settings run commands, and hooks.

Why: a model folder that arrives with a `.git` folder (an archive of a clone, a copied checkout) runs code the
moment anything runs git there, and editors and shell prompts run `git status` on their own: `core.fsmonitor`
names a command git starts for it, a hook runs on checkout or commit, a filter on every checkout. A clone of a
Hugging Face repository holds none of that, except Git LFS's own filter settings and hooks, which are recognised.
Nothing is run or parsed by git; the config is read line by line as git's format is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from wscan.model import Observation
from wscan.scanners.base import NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem
from wscan.scanners.repo_files import read_bounded

GIT_FOLDER = ".git"
HOOKS = frozenset({
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit", "prepare-commit-msg",
    "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push", "pre-receive", "update",
    "proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
    "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
    "p4-post-changelist", "p4-pre-submit", "post-index-change",
})  # fmt: skip
# Settings git runs as a command (or reads more settings from), by section and name; `*` is any subsection.
COMMAND_KEYS = frozenset({
    "core.fsmonitor", "core.hookspath", "core.sshcommand", "core.pager", "core.editor", "core.askpass",
    "core.gitproxy", "sequence.editor", "diff.external", "diff.*.command", "diff.*.textconv", "merge.*.driver",
    "filter.*.clean", "filter.*.smudge", "filter.*.process", "credential.helper", "credential.*.helper",
    "gpg.program", "gpg.*.program", "pager.*", "web.browser", "browser.*.cmd", "browser.*.path", "difftool.*.cmd",
    "mergetool.*.cmd", "remote.*.uploadpack", "remote.*.receivepack", "uploadpack.packobjectshook",
    "include.path", "includeif.*.path", "sendemail.smtpserver", "sendemail.tocmd", "sendemail.cccmd",
    "ssh.variant", "alias.*",
})  # fmt: skip
# What Git LFS writes (`git lfs install --local`): its filter, as itself.
LFS_FILTER = {
    "filter.lfs.clean": ("git-lfs clean -- %f",),
    "filter.lfs.smudge": ("git-lfs smudge -- %f", "git-lfs smudge --skip -- %f"),
    "filter.lfs.process": ("git-lfs filter-process", "git-lfs filter-process --skip"),
}
FALSE_OR_TRUE = frozenset({"false", "no", "off", "0", "true", "yes", "on", "1", ""})  # fsmonitor: git's own daemon
# Git LFS's hooks: a check that git-lfs is installed, then `git lfs <hook> "$@"`.
LFS_HOOK = re.compile(
    r'#!/bin/sh\n'
    r'(?:command -v git-lfs >/dev/null 2>&1 \|\| \{ (?:printf >&2 "\\n%s\\n\\n"|echo >&2) '
    r'"[^"\n]*"; exit 2; \}\n)?'
    r'git lfs (pre-push|post-checkout|post-commit|post-merge) "\$@"\n?'
)
SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')


class GitFilesScanner:
    """`.git/config` and `.git/hooks/*` of a folder a scan walks (or an archive holds)."""

    name = "git-files"

    def accepts(self, head: Head) -> bool:
        base = head.name.rsplit("/", 1)[-1]
        return not head.raw_data and (base == "config" or base in HOOKS)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        where = PurePosixPath(artifact.real_path.as_posix() if artifact.real_path is not None else artifact.name)
        if where.name == "config" and where.parent.name == GIT_FOLDER:
            data = read_bounded(artifact, ctx)
            if isinstance(data, Observation):
                yield data
                return
            for key, value in command_settings(data.decode("utf-8", "replace")):
                yield artifact.observe("repo.git_command", key=key, value=value[:200])
        elif where.name in HOOKS and where.parent.name == "hooks" and where.parent.parent.name == GIT_FOLDER:
            data = read_bounded(artifact, ctx)
            if isinstance(data, Observation):
                yield data
                return
            if LFS_HOOK.fullmatch(data.decode("utf-8", "replace").replace("\r\n", "\n")) is None:
                yield artifact.observe("repo.git_hook", hook=where.name)
        else:
            yield artifact.observe(NOT_MINE_KIND)  # a file named like git's, elsewhere


def command_settings(text: str) -> list[tuple[str, str]]:
    """The settings of a git config that run a command, as `section.subsection.name` and value, Git LFS's own
    filter aside. Read as git reads the format: a section header, then `name = value` lines, `#` and `;` comments,
    a value continued with a trailing backslash; names and sections in any case."""
    found: list[tuple[str, str]] = []
    section = ""
    pending = ""
    for raw in text.splitlines():
        line = pending + raw
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        pending = ""
        stripped = line.strip()
        while stripped.startswith("["):
            header = SECTION.match(stripped)
            if header is None:
                break
            name, sub = header.group(1).lower(), header.group(2)
            if sub is None and "." in name:  # the old [section.subsection] spelling
                name, _, sub = name.partition(".")
            section = name + (f".{sub}" if sub is not None else "")
            stripped = stripped[header.end():].strip()
        if not stripped or stripped[0] in "#;[":  # a comment, or a header git would refuse
            continue
        key, _, value = stripped.partition("=")
        key, value = key.strip().lower(), value.strip().strip('"')
        full = f"{section}.{key}"
        if _runs(section, key, full, value):
            found.append((full, value))
    return found


def _runs(section: str, key: str, full: str, value: str) -> bool:
    head, _, rest = section.partition(".")
    shapes = {f"{head}.{key}", f"{head}.*", *([f"{head}.*.{key}"] if rest else [])}
    if not shapes & COMMAND_KEYS:
        return False
    if full in LFS_FILTER:
        return value not in LFS_FILTER[full]
    if full == "core.fsmonitor":
        return value.lower() not in FALSE_OR_TRUE
    if head == "alias":
        return value.startswith("!")
    return True
