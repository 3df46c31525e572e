"""pre-commit users get wscan from .pre-commit-hooks.yaml.

`pre-commit try-repo` builds the hook the way a user's pre-commit does: it clones the hook repository,
creates a virtualenv and pip-installs wscan from it (with its dependencies, from the package index),
then runs the hook on staged files. The hook repository is a commit of this working tree as it is:
try-repo on the checkout itself would leave out untracked files (its "uncommitted changes" mode adds
only staged and tracked-modified files), so a new hook file would be "not a file" until committed.
try-repo installs into a fresh store every time (it ignores PRE_COMMIT_HOME), and one install takes
about a minute here, so try-repo runs once, on the hostile file. The other cases run the same hook
definitions through `pre-commit run` as local `language: system` hooks (wscan from this test's
environment): pre-commit's own file selection and the same entry, without another install.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pre_commit  # noqa: F401 - in the test extra; a missing one must fail here, not skip
import pytest
import yaml
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parents[1]
HOSTILE_PICKLE = b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03."
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree (tracked and untracked files, minus ignored ones) as one commit."""
    repo = tmp_path_factory.mktemp("hook") / "wscan"
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            target = repo / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hook repository")
    return repo


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A user's repository with a hostile pickle under an innocent name, and benign models, all staged."""
    repo = tmp_path / "work"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "notes.txt").write_bytes(HOSTILE_PICKLE)
    save_file({"w": np.ones((2, 2), dtype=np.float32)}, str(repo / "model.safetensors"))
    np.save(repo / "stats.npy", np.arange(3, dtype=np.float32))
    (repo / "README.md").write_text("# models\n")
    git(repo, "add", "-A")
    return repo


def try_repo(hook_repo: Path, work: Path, hook: str, *files: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PRE_COMMIT_HOME=str(work.parent / "pre-commit-home"))
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--color", "never", "--files", *files],
        cwd=work, env=env, capture_output=True, text=True, timeout=600,
    )


def test_hook_definitions() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"wscan", "wscan-models"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["entry"].startswith("wscan scan")
        assert hook["types_or"] == ["file", "symlink"] and hook["types"] == []
    pattern = re.compile(hooks["wscan-models"]["files"])
    for name in ("model.safetensors", "a/pytorch_model.bin", "x.GGUF", "tokenizer_config.json", "config.json",
                 "model.safetensors.index.json", "chat_template.jinja", "modeling_custom.py", "w.npz", "m.onnx"):
        assert pattern.search(name), name
    for name in ("README.md", "src/app.py", "notes.txt", "data.csv"):
        assert not pattern.search(name), name


def test_hook_fails_on_a_hostile_file_whatever_its_name(hook_repo: Path, work: Path) -> None:
    """A pickle named notes.txt: pre-commit's identify calls it text; wscan reads its bytes."""
    run = try_repo(hook_repo, work, "wscan", "notes.txt", "README.md")
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    assert "Failed" in output and "- exit code: 1" in output, output  # whole output: pip errors end it
    assert "WS-PKL-001" in output and "notes.txt" in output and "os.system" in output, output


def local_config(work: Path) -> Path:
    """Both hooks of .pre-commit-hooks.yaml as local hooks that run the wscan already installed here."""
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    local = [{**hook, "language": "system"} for hook in hooks]
    for hook in local:
        hook.pop("minimum_pre_commit_version", None)
    config = work.parent / "pre-commit-config.yaml"
    config.write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": local}]}))
    return config


def run_hook(work: Path, hook: str, *files: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PRE_COMMIT_HOME=str(work.parent / "pre-commit-home"))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    command = [sys.executable, "-m", "pre_commit", "run", "--config", str(local_config(work)), hook]
    return subprocess.run(
        [*command, "--color", "never", "--files", *files],
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )


def test_hook_passes_benign_files(work: Path) -> None:
    run = run_hook(work, "wscan", "model.safetensors", "stats.npy", "README.md")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "wscan (every file, formats from content)" in run.stdout and "Passed" in run.stdout


def test_name_only_hook_misses_a_renamed_pickle(work: Path) -> None:
    """The trade-off the two hooks document: by name is faster, by content catches renamed files."""
    (work / "model.pkl").write_bytes(HOSTILE_PICKLE)
    git(work, "add", "model.pkl")
    by_name = run_hook(work, "wscan-models", "model.pkl", "notes.txt", "README.md")
    assert by_name.returncode == 1 and "WS-PKL-001" in by_name.stdout
    assert "model.pkl" in by_name.stdout and "notes.txt" not in by_name.stdout
    renamed = run_hook(work, "wscan-models", "notes.txt")
    assert renamed.returncode == 0 and "(no files to check)Skipped" in renamed.stdout
    by_content = run_hook(work, "wscan", "notes.txt")
    assert by_content.returncode == 1 and "WS-PKL-001" in by_content.stdout
