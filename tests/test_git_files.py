"""Git's files in a scanned folder (scanners/git_files.py): a `.git/config` setting that runs a command, and a
hook, each run by the real git here; a clone's own settings and Git LFS's filter and hooks pass."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.scanning import scan
from wscan.model import Severity
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
    folder.mkdir()
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
    ("[core] pager = less; touch x\n", [("core.pager", "less; touch x")]),
    ('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\tsmudge = sh -c evil\n', [("filter.lfs.smudge", "sh -c evil")]),
    ('[diff "x"]\n\ttextconv = evil\n[alias]\n\tst = status\n\tp = !evil\n', [("diff.x.textconv", "evil"),
                                                                              ("alias.p", "!evil")]),
    ("[core.]\n[include]\n\tpath = ../../elsewhere\n", [("include.path", "../../elsewhere")]),
    ("[core]\n\tfsmonitor = \\\n  touch x\n", [("core.fsmonitor", "touch x")]),
    ("[remote \"origin\"]\n\turl = https://huggingface.co/x\n\tuploadpack = evil\n", [("remote.origin.uploadpack",
                                                                                      "evil")]),
])  # fmt: skip
def test_settings_that_run_commands_are_read_as_git_writes_them(text: str, expected: list[tuple[str, str]]) -> None:
    assert command_settings(text) == expected
