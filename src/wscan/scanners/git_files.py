"""Git's own files inside a scanned folder: configs whose settings run commands, and hooks.

Why: a model folder that arrives with a git folder (an archive of a clone, a copied checkout) runs code the moment
anything runs git there, and editors and shell prompts run `git status` on their own: `core.fsmonitor` names a
command git starts for it, a hook runs on checkout or commit, a filter on every checkout, an `ext::` remote on fetch.
A clone of a Hugging Face repository holds none of that, except Git LFS's own filter settings and hooks, which are
recognised. Git reads a config and hooks wherever it finds a git folder: `.git`, the submodules' folders under
`.git/modules`, a worktree's `config.worktree`, a folder `commondir` names, a bare repository laid out anywhere (a
folder with a `HEAD`). Nothing is run; the config is read as git reads it (`git_config`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath

from wscan.git_layout import GIT_FOLDER, is_git_folder
from wscan.model import Observation
from wscan.scanners.base import NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem
from wscan.scanners.git_config import GitConfigError, Setting, parse
from wscan.scanners.repo_files import read_bounded

CONFIGS = frozenset({"config", "config.worktree"})
HOOKS = frozenset({
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit", "prepare-commit-msg",
    "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push", "pre-receive", "update",
    "proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
    "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
    "p4-post-changelist", "p4-pre-submit", "post-index-change",
})  # fmt: skip
# Settings git (or Git LFS) runs as a command, or reads more settings or the working tree from; `*` is any
# subsection (Git LFS's keys have dots in theirs: `lfs.customtransfer.<name>.path`).
COMMAND_KEYS = frozenset({
    "core.fsmonitor", "core.hookspath", "core.sshcommand", "core.pager", "core.editor", "core.askpass",
    "core.gitproxy", "core.alternaterefscommand", "sequence.editor", "diff.external",
    "diff.*.command", "diff.*.textconv", "merge.*.driver", "filter.*.clean", "filter.*.smudge", "filter.*.process",
    "credential.helper", "credential.*.helper", "gpg.program", "gpg.*.program", "gpg.*.defaultkeycommand",
    "pager.*", "web.browser", "browser.*.cmd", "browser.*.path", "difftool.*.cmd", "difftool.*.path",
    "mergetool.*.cmd", "mergetool.*.path", "remote.*.uploadpack", "remote.*.receivepack", "remote.*.vcs",
    "uploadpack.packobjectshook", "include.path", "includeif.*.path", "sendemail.smtpserver", "sendemail.*.smtpserver",
    "sendemail.tocmd", "sendemail.*.tocmd", "sendemail.cccmd", "sendemail.*.cccmd", "sendemail.sendmailcmd",
    "sendemail.*.sendmailcmd", "ssh.variant", "alias.*", "interactive.difffilter", "trailer.*.command",
    "trailer.*.cmd", "imap.tunnel", "man.*.cmd", "man.*.path", "guitool.*.cmd", "lfs.customtransfer.*.path",
    "lfs.customtransfer.*.args", "lfs.extension.*.clean", "lfs.extension.*.smudge", "lfs.standalonetransferagent",
    "tar.*.command", "instaweb.httpd", "instaweb.browser",
})  # fmt: skip
# Values of those that run only what git or Hugging Face ship: a credential helper named bare runs git's own
# `git credential-<name>` (huggingface_hub's Repository sets `store`), and `huggingface-cli lfs-enable-largefiles`
# makes Hugging Face's CLI Git LFS's multipart transfer agent.
PROGRAM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
HF_TRANSFER = {"path": frozenset({"huggingface-cli", "hf"}), "args": frozenset({"lfs-multipart-upload"})}
# Settings that run a command for some values only: a transport git runs as a program (`ext::sh -c ...`, `fd::`),
# given as a remote's or submodule's address, as what `url.<base>.insteadOf` rewrites addresses to, or allowed by
# `protocol.<name>.allow`; a submodule updated by a `!command`.
URL_KEYS = frozenset({"remote.*.url", "remote.*.pushurl", "submodule.*.url"})
REWRITE_KEYS = frozenset({"url.*.insteadof", "url.*.pushinsteadof"})
COMMAND_TRANSPORTS = ("ext::", "fd::")


def _matcher(keys: frozenset[str]) -> Callable[[Setting], bool]:
    """Whether a setting is one of `keys` (`*`: any subsection), by its full name or by its section's and name alone
    (git reads `core.fsmonitor` only without a subsection; `[core "x"] fsmonitor` is judged as it anyway)."""
    pattern = re.compile("|".join(re.escape(key).replace(r"\*", ".+") for key in sorted(keys)))

    def matches(setting: Setting) -> bool:
        head = setting.section.partition(".")[0]
        return bool(pattern.fullmatch(setting.key.lower()) or pattern.fullmatch(f"{head}.{setting.name}"))

    return matches


_COMMAND_KEY = _matcher(COMMAND_KEYS)
_URL_KEY = _matcher(URL_KEYS)
_REWRITE_KEY = _matcher(REWRITE_KEYS)
# What Git LFS writes (`git lfs install --local`): its filter, as itself.
LFS_FILTER = {
    "filter.lfs.clean": ("git-lfs clean -- %f",),
    "filter.lfs.smudge": ("git-lfs smudge -- %f", "git-lfs smudge --skip -- %f"),
    "filter.lfs.process": ("git-lfs filter-process", "git-lfs filter-process --skip"),
}
# Files that send git to another folder for its settings: a `.git` file (`gitdir: <folder>`, a submodule's checkout
# or a linked worktree) and a git folder's `commondir`. Inside the scanned folder a `.git` file names a folder under
# another `.git` (whose config this scanner reads); `git worktree add` writes `commondir` as `../..` in
# `.git/worktrees/<name>`. Anything else sends git where the scan did not look (helper 238: `commondir` naming a
# folder whose config ran `core.fsmonitor`).
POINTERS = frozenset({GIT_FOLDER, "commondir"})
MAX_POINTER = 4096
FALSE_OR_TRUE = frozenset({"false", "no", "off", "0", "true", "yes", "on", "1", ""})  # fsmonitor: git's own daemon
# Git LFS's hooks: a check that git-lfs is installed, then `git lfs <hook> "$@"`. The message is plain text: no `$`,
# backquote or backslash, which the shell would expand in double quotes (helper 238 ran `$(touch ...)` there), but
# the `\n` git-lfs 3.3 writes around it for echo (helper 239).
LFS_HOOK = re.compile(
    r'#!/bin/sh\n'
    r'(?:command -v git-lfs >/dev/null 2>&1 \|\| \{ (?:printf >&2 "\\n%s\\n\\n"|echo >&2) '
    r'"(?:[^"\n$`\\]|\\n)*"; exit 2; \}\n)?'
    r'git lfs (pre-push|post-checkout|post-commit|post-merge) "\$@"\n?'
)


class GitFilesScanner:
    """Git configs and hooks in git folders a scan walks (or an archive holds)."""

    name = "git-files"

    def accepts(self, head: Head) -> bool:
        base = head.name.rsplit("/", 1)[-1]
        return not head.raw_data and (base in CONFIGS or base in HOOKS or base in POINTERS)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        real = artifact.real_path
        on_disk = real is not None
        where = PurePosixPath(real.absolute().as_posix() if real is not None else artifact.name)
        if where.name in CONFIGS:
            git_folder = is_git_folder(where.parent, on_disk)
            if not git_folder and on_disk:
                yield artifact.observe(NOT_MINE_KIND)  # a file named like git's where git reads none
                return
            data = read_bounded(artifact, ctx)
            if isinstance(data, Observation):
                yield data
                return
            try:
                settings = parse(data)
            except GitConfigError as error:
                # git stops at a config it cannot read, and runs nothing; in an archive, any file named config
                yield artifact.observe("repo.git_config_refused", reason=str(error)) if git_folder else \
                    artifact.observe(NOT_MINE_KIND)  # fmt: skip
                return
            for setting in settings:
                if runs(setting):
                    yield artifact.observe("repo.git_command", key=setting.key, value=_shown(setting.value))
        elif where.name in HOOKS and where.parent.name == "hooks" and is_git_folder(where.parent.parent, on_disk):
            data = read_bounded(artifact, ctx)
            if isinstance(data, Observation):
                yield data
                return
            if LFS_HOOK.fullmatch(data.decode("utf-8", "replace").replace("\r\n", "\n")) is None:
                yield artifact.observe("repo.git_hook", hook=where.name)
        elif where.name == GIT_FOLDER or (where.name == "commondir" and is_git_folder(where.parent, on_disk)):
            with artifact.opener() as raw:
                text = raw.read(MAX_POINTER).decode("utf-8", "replace")
            target = pointed_at(where.name, text, where.parent)
            if target is not None:
                yield artifact.observe("repo.git_elsewhere", file=where.name, target=target[:200])
        else:
            yield artifact.observe(NOT_MINE_KIND)  # a file named like git's, elsewhere


def pointed_at(name: str, text: str, folder: PurePosixPath) -> str | None:
    """Where a `.git` file or `commondir` in `folder` sends git, when that is somewhere the scan did not read as
    git's; None for what git writes in a repository kept whole: a submodule's or worktree's `.git` naming a folder
    under `.git/modules` or `.git/worktrees` of a folder above it (the repository it is part of), and a linked
    worktree's `commondir` of `../..`."""
    line = text.split("\n", 1)[0].rstrip("\r")
    if name == "commondir":
        standard = folder.parent.name == "worktrees" and GIT_FOLDER in folder.parts and line in ("../..", "../../")
        return None if standard else line or "(empty)"
    if not line.startswith("gitdir: "):
        return line or "(empty)"  # git refuses it as a repository; its content is shown
    target = line[len("gitdir: "):]
    parts = PurePosixPath(posixpath.normpath(posixpath.join(folder.as_posix(), target))).parts
    at = parts.index(GIT_FOLDER) if GIT_FOLDER in parts else -1
    above = at >= 0 and folder.parts[:at] == parts[:at] and len(parts) > at + 2
    return None if above and parts[at + 1] in ("modules", "worktrees") else target


def runs(setting: Setting) -> bool:
    """Whether git runs a command this setting names, Git LFS's and Hugging Face's own settings aside."""
    head, _, rest = setting.section.partition(".")
    value = setting.value or ""
    if _URL_KEY(setting):
        return value.lower().startswith(COMMAND_TRANSPORTS)
    if _REWRITE_KEY(setting):
        return rest.lower().startswith(COMMAND_TRANSPORTS)
    if head == "protocol" and setting.name == "allow":  # `user` lets a `vcs = ext` remote run its address
        return value.lower() != "never" and (not rest or rest.lower() in {"ext", "fd"})
    if head == "submodule" and setting.name == "update":
        return value.startswith("!")
    if not _COMMAND_KEY(setting):
        return False
    if setting.key in LFS_FILTER:
        return value not in LFS_FILTER[setting.key]
    if setting.key.lower() == "core.fsmonitor":
        return value.lower() not in FALSE_OR_TRUE
    if head == "credential" and setting.name == "helper":
        return PROGRAM_NAME.fullmatch(value) is None and value != ""
    if head == "lfs" and rest.lower().startswith("customtransfer.") and setting.name in HF_TRANSFER:
        return value not in HF_TRANSFER[setting.name]
    return True  # every alias too: without `!` it still passes options (`-c core.fsmonitor=...`, `--upload-pack=`),
    # and git runs `git remote-<scheme>`, `git lfs` and `git credential-<name>` as aliases when no program has the
    # name (helpers 239 and 241); a clone has none


def command_settings(data: bytes) -> list[tuple[str, str]]:
    """The settings of a git config that run a command, as `section.subsection.name` and value (for tests)."""
    return [(setting.key, setting.value or "") for setting in parse(data) if runs(setting)]


def _shown(value: str | None) -> str:
    """A value for the report: git's bytes (read as latin-1) shown as UTF-8, at most 200 characters."""
    return (value or "").encode("latin-1").decode("utf-8", "replace")[:200]
