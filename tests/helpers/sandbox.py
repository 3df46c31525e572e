"""Real loaders on hostile files: each load in a forked child of one fresh, isolated interpreter.

The loader library is imported once; every file then gets a child of its own, so a payload that runs, hangs the
library's state or kills the process touches no other case. The children report what the load did, and the
parent whether the case's marker (the payload's only effect) appeared.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

_FORK_EACH = r"""
results = {}
for key, path, option, marker in json.loads(sys.stdin.read()):
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            load(path, option)
            message = "loaded"
        except BaseException as exc:
            message = f"error: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:160]}"
        os.write(write_fd, message.encode())
        os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 4096):
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode(errors="replace") or f"crashed: wait status {status}"
    results[key] = [text, os.path.exists(marker)]
print(json.dumps(results))
"""


# A `setup` prelude for loads of a model folder with a sibling `outside` folder: `watch_outside(folder, *events)`
# leaves the sibling MARKER when the load opens a file in `outside` (or raises one of `events`, audit event names).
WATCH_OUTSIDE = """
import os, sys

def watch_outside(folder, *events):
    base = os.path.dirname(folder)
    outside, marker = os.path.join(base, "outside"), os.path.join(base, "MARKER")

    def hook(event, args):
        opened = event == "open" and isinstance(args[0], str) and os.path.abspath(args[0]).startswith(outside + os.sep)
        if (opened or event in events) and not os.path.exists(marker):
            open(marker, "w").close()

    sys.addaudithook(hook)
"""


@dataclass(frozen=True)
class Outcome:
    """What the loader did with one file ("loaded", "error: ...", "crashed: ..."), and whether the payload ran."""

    result: str
    executed: bool

    @property
    def loaded(self) -> bool:
        return self.result == "loaded"


Job = tuple[str, Path | str, object, Path | str]  # key, file, option handed to load(), marker


def load_each(
    setup: str, jobs: Iterable[Job], workdir: Path, timeout: float, env: Mapping[str, str] | None = None
) -> dict[str, Outcome]:
    """`setup` imports the library and defines `load(path, option)`; each job's file is loaded in its own child.
    The interpreter has no inherited environment beyond `env`, and runs in `workdir`, which is also its HOME."""
    driver = "import json, os, sys, warnings\nwarnings.simplefilter('ignore')\n" + setup + _FORK_EACH
    payload = json.dumps([(key, str(path), option, str(marker)) for key, path, option, marker in jobs])
    proc = subprocess.run(
        [sys.executable, "-I", "-c", driver],
        input=payload,
        capture_output=True,
        text=True,
        cwd=workdir,
        env={"PATH": "/usr/bin:/bin", "HOME": str(workdir), "OMP_NUM_THREADS": "1", **(env or {})},
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    raw: dict[str, list[str | bool]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return {key: Outcome(str(result), bool(executed)) for key, (result, executed) in raw.items()}


@dataclass(frozen=True)
class Case:
    """A hostile file: the loader that reads it (an option for `load`), how to make it with a marker, its suffix."""

    loader: str
    make: Callable[[Path], bytes]
    suffix: str


def write_and_load(
    setup: str, cases: Mapping[str, Case], root: Path, timeout: float
) -> dict[str, tuple[Path, Outcome]]:
    """Every case written under `root/files` with its own marker under `root/markers`, then loaded by `setup`'s
    `load(path, case.loader)` (see `load_each`); the file and what the load did, per case."""
    for folder in ("files", "markers", "cwd"):
        (root / folder).mkdir()
    files: dict[str, Path] = {}
    jobs: list[Job] = []
    for name, case in cases.items():
        marker = root / "markers" / name
        files[name] = root / "files" / f"{name}{case.suffix}"
        files[name].write_bytes(case.make(marker))
        jobs.append((name, files[name], case.loader, marker))
    outcomes = load_each(setup, jobs, root / "cwd", timeout)
    return {name: (files[name], outcomes[name]) for name in cases}
