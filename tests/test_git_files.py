"""Git's files in a scanned folder (scanners/git_files.py): a `.git/config` setting that runs a command, and a
hook, each run by the real git here; a clone's own settings and Git LFS's filter and hooks pass."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.scanning import scan
from wscan.model import Severity
from wscan.scanners.git_config import GitConfigError, parse
from wscan.scanners.git_files import command_settings

# Git LFS's hooks and filter as `git lfs install --local` writes them (git-lfs 3.x), copied here as data.
LFS_HOOK = ('#!/bin/sh\ncommand -v git-lfs >/dev/null 2>&1 || {{ printf >&2 "\\n%s\\n\\n" "This repository is '
            "configured for Git LFS but 'git-lfs' was not found on your path. If you no longer wish to use Git LFS, "
            "remove this hook by deleting the '.git/hooks/{hook}' file.\"; exit 2; }}\n"
            'git lfs {hook} "$@"\n')  # fmt: skip


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip


def _clone_like(tmp_path: Path) -> Path:
    """A folder as `git clone` of a Hugging Face model leaves it: weights, a config, and git's own settings."""
    folder = tmp_path / "model"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "bert"}')
    _git(folder, "init", "-q", "-b", "main")
    _git(folder, "remote", "add", "origin", "https://huggingface.co/org/model")
    _git(folder, "config", "branch.main.remote", "origin")
    return folder


def _high(folder: Path) -> set[str]:
    return {f.rule_id for f in scan(folder).findings if f.severity >= Severity.HIGH}


def test_an_fsmonitor_command_runs_at_git_status_and_is_high(tmp_path: Path) -> None:
    folder = _clone_like(tmp_path)
    marker = tmp_path / "MARKER"
    _git(folder, "config", "core.fsmonitor", f"touch {marker}; false")
    _git(folder, "status")
    assert marker.exists()  # git ran it
    assert "WS-REPO-036" in _high(folder)


def test_a_hook_runs_at_commit_and_is_high(tmp_path: Path) -> None:
    folder = _clone_like(tmp_path)
    marker = tmp_path / "MARKER"
    hook = folder / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    _git(folder, "add", "config.json")
    _git(folder, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "x")
    assert marker.exists()
    assert "WS-REPO-037" in _high(folder)


def test_a_clone_with_git_lfs_set_up_passes(tmp_path: Path) -> None:
    folder = _clone_like(tmp_path)
    _git(folder, "config", "filter.lfs.clean", "git-lfs clean -- %f")
    _git(folder, "config", "filter.lfs.smudge", "git-lfs smudge -- %f")
    _git(folder, "config", "filter.lfs.process", "git-lfs filter-process")
    _git(folder, "config", "filter.lfs.required", "true")
    _git(folder, "config", "core.fsmonitor", "false")
    for hook in ("pre-push", "post-checkout", "post-commit", "post-merge"):
        (folder / ".git" / "hooks" / hook).write_text(LFS_HOOK.format(hook=hook))
    assert _high(folder) == set()
    other = tmp_path / "elsewhere"  # a file named config outside .git is not git's
    other.mkdir()
    (other / "config").write_text("[core]\n\tfsmonitor = touch x\n")
    (other / "post-checkout").write_text("#!/bin/sh\ntouch x\n")
    assert _high(other) == set()


@pytest.mark.parametrize(("text", "expected"), [
    ('[core]\n\tfsMonitor = "run me"\n', [("core.fsmonitor", "run me")]),
    ("[core] pager = less; touch x\n", [("core.pager", "less")]),  # `;` starts a comment, as git reads it
    ('[core] pager = "less; touch x"\n', [("core.pager", "less; touch x")]),
    ('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\tsmudge = sh -c evil\n', [("filter.lfs.smudge", "sh -c evil")]),
    ('[diff "x"]\n\ttextconv = evil\n[alias]\n\tp = !evil\n', [("diff.x.textconv", "evil"), ("alias.p", "!evil")]),
    ("[core.]\n[include]\n\tpath = ../../elsewhere\n", [("include.path", "../../elsewhere")]),
    ("[core]\n\tfsmonitor = \\\n  touch x\n", [("core.fsmonitor", "touch x")]),
    ("[remote \"origin\"]\n\turl = https://huggingface.co/x\n\tuploadpack = evil\n", [("remote.origin.uploadpack",
                                                                                      "evil")]),
    # helper 239: Git LFS's custom transfer agent (its subsection has a dot), a remote run by `vcs = ext` once
    # protocol.allow lets it, and an alias passing -c without `!`
    ('[lfs "customtransfer.multipart"]\n\tpath = sh\n\targs = -c id\n',
     [("lfs.customtransfer.multipart.path", "sh"), ("lfs.customtransfer.multipart.args", "-c id")]),
    ('[protocol]\n\tallow = user\n[remote "o"]\n\tvcs = ext\n', [("protocol.allow", "user"), ("remote.o.vcs", "ext")]),
    # ... and every alias (helper 241: `remote-<scheme>`, `lfs` and `credential-<name>` aliases run for git's own
    # helpers, and options such as --upload-pack run programs without `!`)
    ("[alias]\n\tremote-hf = ls-remote --upload-pack=evil .\n",
     [("alias.remote-hf", "ls-remote --upload-pack=evil .")]),
    ('[tar "tar.gz"]\n\tcommand = evil\n', [("tar.tar.gz.command", "evil")]),
    # ... and what Hugging Face's tools write, which passes: huggingface_hub's Repository sets git's own `store`
    # credential helper, `huggingface-cli lfs-enable-largefiles` its multipart agent
    ('[credential]\n\thelper = store\n[lfs "customtransfer.multipart"]\n\tpath = huggingface-cli\n'
     "\targs = lfs-multipart-upload\n", []),
    ("[credential]\n\thelper = !evil\n", [("credential.helper", "!evil")]),
])  # fmt: skip
def test_settings_that_run_commands_are_read_as_git_writes_them(text: str, expected: list[tuple[str, str]]) -> None:
    assert command_settings(text.encode()) == expected


# Pieces git's config parser treats specially (helper 238 hid settings with several): line ends of every kind, form
# feeds (text to git), BOMs, comments ending in a backslash, escapes, quotes, legacy and quoted subsections.
PIECES = ["[core]", "[Core]", '[remote "Or\\\\ig\\"in"]', "[a.B]", "[ core ]", '[x "s" ]', "[", "]", "\n", "\r\n",
          "\r", "\t", " ", "fsmonitor", "FsMonitor", "=", " = ", "x", '"', "\\", "\\\n", "\\\\", "\\t", "\\n", "\\q",
          "#", ";", "# c \\", "a b", "\x0c", "\x0b", "\ufeff", "é", "-", "1", 'v"q;#"w', "[s]k",
          "[s] k = v"]  # fmt: skip


def _git_list(config: Path) -> list[tuple[str, str | None]] | None:
    """What the real git reads from a config file: its settings in order (None for a name alone), or None when git
    refuses the file."""
    run = subprocess.run(["git", "config", "--file", str(config), "--list", "-z"], capture_output=True, timeout=60,
                         check=False)  # fmt: skip
    if run.returncode != 0:
        return None
    found: list[tuple[str, str | None]] = []
    for item in run.stdout.split(b"\0")[:-1]:
        key, newline, value = item.partition(b"\n")
        found.append((key.decode("latin-1"), value.decode("latin-1") if newline else None))
    return found


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=14), st.booleans())
def test_the_config_reads_as_the_real_git_reads_it(tmp_path_factory: pytest.TempPathFactory, pieces: list[str],
                                                   in_core: bool) -> None:  # fmt: skip
    data = (("[core]\n" if in_core else "") + "".join(pieces)).encode()
    config = tmp_path_factory.mktemp("config") / "config"
    config.write_bytes(data)
    try:
        mine: list[tuple[str, str | None]] | None = [(s.key, s.value) for s in parse(data)]
    except GitConfigError:
        mine = None
    assert mine == _git_list(config)


def _marker_run(folder: Path, marker: Path, *command: str) -> None:
    """Run git in `folder` as a user would and check it ran the folder's command (it made `marker`)."""
    _git(folder, *command)
    assert marker.exists(), f"git {' '.join(command)} did not run it"


FSMONITOR_HIDDEN = {
    # helper 238: a comment ending in a backslash (git ends comments at the newline)
    "comment-backslash": b"[core]\n\t# see docs \\\n\tfsmonitor = touch {marker}\n",
    # ... a form feed (text to git, a line break to Python), and a lone CR (space to git)
    "form-feed": b"[core]\n\tx = y\x0c[foo]\n\tfsmonitor = touch {marker}\n",
    "lone-cr": b"[core]\n\tx = y\r[foo]\n\tfsmonitor = touch {marker}\n",
    # ... a UTF-8 BOM before the first header
    "bom": b"\xef\xbb\xbf[core]\n\tfsmonitor = touch {marker}\n",
    # ... an escaped backslash ending a value (no continuation)
    "escaped-backslash": b'[core]\n\tx = a\\\\\n\tfsmonitor = "touch {marker} #"\n',
}


@pytest.mark.parametrize("config", FSMONITOR_HIDDEN.values(), ids=FSMONITOR_HIDDEN.keys())
def test_a_setting_hidden_from_a_line_reading_runs_and_is_high(tmp_path: Path, config: bytes) -> None:
    folder = _clone_like(tmp_path)
    marker = tmp_path / "MARKER"
    (folder / ".git" / "config").write_bytes(config.replace(b"{marker}", str(marker).encode()))
    _marker_run(folder, marker, "status")
    assert "WS-REPO-036" in _high(folder)


def _append(config: Path, settings: str) -> None:
    with config.open("a") as stream:
        stream.write(settings)


def test_commands_in_settings_for_some_values_run_and_are_high(tmp_path: Path) -> None:
    """helper 238: an ext:: remote, an insteadOf rewriting a harmless address to one, a submodule's `!update`, an
    alternate refs command, and an SSH signing key command: git ran each, on fetch, pull, commit or update."""
    cases = {
        "ext-remote": ('[protocol "ext"]\n\tallow = always\n[remote "origin"]\n\tpushurl = x\n', ("fetch", "origin")),
        "insteadof": ('[protocol "ext"]\n\tallow = always\n[url "ext::sh -c touch% {marker}% #"]\n'
                      "\tinsteadOf = https://huggingface.co/\n", ("fetch", "origin")),
        "signing-key": ('[commit]\n\tgpgSign = true\n[gpg]\n\tformat = ssh\n[gpg "ssh"]\n'
                        "\tdefaultKeyCommand = touch {marker}\n", ("-c", "user.name=a", "-c", "user.email=a@b",
                                                                   "commit", "-q", "--allow-empty", "-m", "x")),
    }  # fmt: skip
    for name, (lines, command) in cases.items():
        folder = _clone_like(tmp_path / name)
        marker = tmp_path / name / "MARKER"
        _append(folder / ".git" / "config", lines.format(marker=marker))
        if name == "ext-remote":  # the remote's address itself
            _git(folder, "remote", "set-url", "origin", f"ext::sh -c touch% {marker}")
        _git(folder, *command)
        assert list(marker.parent.glob("MARKER*")), name  # ssh's key command runs without a shell: `MARKER` as is
        assert "WS-REPO-036" in _high(folder), name


def _committed(tmp_path: Path) -> Path:
    folder = _clone_like(tmp_path)
    (folder / "model.pkl").write_bytes(b"\x80\x04K\x01.")
    _git(folder, "add", "-A")
    _git(folder, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "weights")
    return folder


def test_configs_git_reads_beyond_dot_git_config_run_and_are_high(tmp_path: Path) -> None:
    """helper 238: a worktree config, a submodule's config (git status in the top folder checks submodules), a bare
    repository laid out in the folder, and a `.git` that is a link: git ran each config's command."""
    worktree = _committed(tmp_path / "worktree-config")
    marker = tmp_path / "worktree-config" / "MARKER"
    _git(worktree, "config", "core.repositoryformatversion", "1")
    _git(worktree, "config", "extensions.worktreeConfig", "true")
    (worktree / ".git" / "config.worktree").write_text(f"[core]\n\tfsmonitor = touch {marker}\n")
    _marker_run(worktree, marker, "status")
    assert "WS-REPO-036" in _high(worktree)

    top = _committed(tmp_path / "submodule")
    marker = tmp_path / "submodule" / "MARKER"
    sub = _committed(tmp_path / "submodule-source")
    _git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    _append(top / ".git" / "modules" / "sub" / "config", f'[core]\n\tfsmonitor = "touch {marker} #"\n')
    assert (top / "sub" / ".git").read_text().startswith("gitdir: ../.git/modules/sub")
    _marker_run(top, marker, "status")
    assert _high(top) == {"WS-REPO-036"}  # the submodule's own .git file is what git writes, and passes

    bare = tmp_path / "bare"
    marker = tmp_path / "MARKER-bare"
    _git(tmp_path, "init", "-q", "--bare", "bare")
    (bare / "model.pkl").write_bytes(b"\x80\x04K\x01.")
    hook = bare / "hooks" / "reference-transaction"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    _git(bare, "--work-tree", str(tmp_path / "submodule-source" / "model"), "add", "-A")
    _git(bare, "--work-tree", str(tmp_path / "submodule-source" / "model"), "-c", "user.name=a", "-c",
         "user.email=a@b", "commit", "-q", "-m", "x")  # fmt: skip
    assert marker.exists()
    assert "WS-REPO-037" in _high(bare)

    linked = _committed(tmp_path / "linked")
    marker = tmp_path / "linked" / "MARKER"
    (linked / ".git").rename(linked / "gitdata")
    (linked / ".git").symlink_to("gitdata")
    _append(linked / "gitdata" / "config", f"[core]\n\tfsmonitor = touch {marker}\n")
    _marker_run(linked, marker, "status")
    assert "WS-REPO-039" in _high(linked)


def test_git_sent_to_settings_elsewhere_is_high(tmp_path: Path) -> None:
    """helper 238: `commondir` naming a folder whose config ran at git status; a `.git` file naming a git folder
    outside the repository is the same."""
    folder = _committed(tmp_path / "commondir")
    marker = tmp_path / "commondir" / "MARKER"
    git = folder / ".git"
    (folder / "gitdata").mkdir()
    for part in ("config", "objects", "refs", "description", "info"):
        (git / part).rename(folder / "gitdata" / part)
    (git / "commondir").write_text("../gitdata\n")
    _append(folder / "gitdata" / "config", f'[core]\n\tfsmonitor = "touch {marker} #"\n')
    _marker_run(folder, marker, "status")
    assert "WS-REPO-040" in _high(folder)

    elsewhere = _committed(tmp_path / "gitdir")
    outside = tmp_path / "gitdir" / "outside.git"
    (elsewhere / ".git").rename(outside)
    (elsewhere / ".git").write_text(f"gitdir: {outside}\n")
    assert _git(elsewhere, "status").returncode == 0  # git uses the folder outside
    assert "WS-REPO-040" in _high(elsewhere)


def test_a_real_submodule_and_linked_worktree_pass(tmp_path: Path) -> None:
    top = _committed(tmp_path / "top")
    sub = _committed(tmp_path / "sub")
    _git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    _git(top, "worktree", "add", "-q", "wt")
    assert (top / "wt" / ".git").is_file() and (top / ".git" / "worktrees" / "wt" / "commondir").is_file()
    assert _high(top) == set()


def test_an_lfs_hook_whose_message_runs_a_command_is_high(tmp_path: Path) -> None:
    """helper 238: `$(...)` in the message of Git LFS's install check ran at checkout (git-lfs is not installed here,
    so the check prints it); the hook looked like Git LFS's own."""
    folder = _committed(tmp_path)
    marker = tmp_path / "MARKER"
    hook = folder / ".git" / "hooks" / "post-checkout"
    hook.write_text('#!/bin/sh\ncommand -v git-lfs >/dev/null 2>&1 || { echo >&2 "$(touch ' + str(marker)
                    + ")This repository is configured for Git LFS but 'git-lfs' was not found on your path.\"; "
                    'exit 2; }\ngit lfs post-checkout "$@"\n')  # fmt: skip
    hook.chmod(0o755)
    _marker_run(folder, marker, "checkout", "-q", "-b", "feature")
    assert "WS-REPO-037" in _high(folder)


def test_a_config_git_refuses_is_reported(tmp_path: Path) -> None:
    folder = _clone_like(tmp_path)
    _append(folder / ".git" / "config", "[core]\n\tfsmonitor = \"touch x\n")  # an unterminated quote
    assert _git(folder, "status").returncode != 0  # git stops, running nothing
    found = {f.rule_id: f.severity for f in scan(folder).findings}
    assert found.get("WS-REPO-038") == Severity.MEDIUM


def test_git_objects_are_read_as_what_a_checkout_writes(tmp_path: Path) -> None:
    """A loose object is zlib of `blob <size>\\0` and the file: read from after that header, a 22-byte config.json is
    JSON (its header was taken for a safetensors length, WS-ST-001, in any clone with a commit of its own), and a
    pickle deleted from the folder but kept in its history is still judged (a checkout writes it back)."""
    folder = _committed(tmp_path)
    assert len((folder / "config.json").read_bytes()) == 22
    assert _high(folder) == set()
    (folder / "model.pkl").write_bytes(b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00idR.")
    _git(folder, "add", "-A")
    _git(folder, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "weights")
    _git(folder, "rm", "-q", "model.pkl")
    assert not (folder / "model.pkl").exists()
    found = [f for f in scan(folder).findings if f.rule_id == "WS-PKL-001"]
    assert found and all("/.git/objects/" in f.location.path for f in found)


def test_git_lfs_3_3_hooks_pass_and_a_dangling_head_link_is_a_git_folder(tmp_path: Path) -> None:
    """helper 239: git-lfs 3.3 (Debian 12's) writes `echo >&2 "\\nThis repository ...\\n"` in its hooks, which the
    first version took for someone else's; and git takes a folder whose HEAD is a link to `refs/...`, even a
    dangling one, for a repository (a bare layout with a dangling HEAD ran core.fsmonitor at git status)."""
    folder = _clone_like(tmp_path / "lfs")
    message = ("\\nThis repository is configured for Git LFS but 'git-lfs' was not found on your path. If you no "
               "longer wish to use Git LFS, remove this hook by deleting the '.git/hooks/{hook}' file.\\n")
    for hook in ("pre-push", "post-checkout", "post-commit", "post-merge"):
        text = ('#!/bin/sh\ncommand -v git-lfs >/dev/null 2>&1 || { echo >&2 "' + message.format(hook=hook)
                + '"; exit 2; }\ngit lfs ' + hook + ' "$@"\n')  # fmt: skip
        (folder / ".git" / "hooks" / hook).write_text(text)
    assert _high(folder) == set()

    bare = tmp_path / "bare"
    marker = tmp_path / "MARKER"
    (bare / "objects").mkdir(parents=True)
    (bare / "refs" / "heads").mkdir(parents=True)
    (bare / "HEAD").symlink_to("refs/heads/main")  # dangling: no commit yet
    (bare / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
                                 f'\tfsmonitor = "touch {marker} #"\n')  # fmt: skip
    (bare / "model.pkl").write_bytes(b"\x80\x04K\x01.")
    _marker_run(bare, marker, "status")
    assert "WS-REPO-036" in _high(bare)


def test_hooks_git_runs_that_the_first_versions_passed_are_high(tmp_path: Path) -> None:
    """helper 241: `.git/hooks` as a link to a folder of the model (its hooks were never read: the folder is not
    named hooks), and a hook whose first line is a Git LFS pointer's (the scan skipped it as a pointer; git, given no
    `#!`, ran it with /bin/sh, whose first line failed and whose second ran)."""
    linked = _committed(tmp_path / "linked")
    marker = tmp_path / "linked" / "MARKER"
    (linked / "tools").mkdir()
    hook = linked / "tools" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    shutil.rmtree(linked / ".git" / "hooks")
    (linked / ".git" / "hooks").symlink_to("../tools")
    _marker_run(linked, marker, "checkout", "-q", "-b", "x")
    assert "WS-REPO-039" in _high(linked)

    pointer = _committed(tmp_path / "pointer")
    marker = tmp_path / "pointer" / "MARKER"
    hook = pointer / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"version https://git-lfs.github.com/spec/v1\ntouch {marker}\n")
    hook.chmod(0o755)
    _marker_run(pointer, marker, "checkout", "-q", "-b", "x")
    assert "WS-REPO-037" in _high(pointer)
