"""Scanning never runs what it scans.

Every hostile sample of corpus/build.py is rebuilt in a temporary folder with payloads that would leave
evidence if they ran: shell commands and Python code create marker files, and the container payloads call
into `wscan_canary_mod`, a module on sys.path whose import creates a marker too. After scanning (in this
worker and through the CLI in a fresh process) no marker may exist, the canary may not be imported, and an
audit hook, inherited by the forked workers, must have seen no unpickling, process start, dynamic library load
or network connection in any of them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from wscan.config import Config
from wscan.discover import display_path
from wscan.engine import Engine
from wscan.model import Severity
from wscan.scanners import hdf5_probe

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CANARY = "wscan_canary_mod"

# Audit events (PEP 578) that scanning must never raise.
FORBIDDEN_EVENTS = {
    "pickle.find_class",
    "os.system",
    "os.exec",
    "os.spawn",
    "os.posix_spawn",
    "os.fork",
    "os.forkpty",
    "subprocess.Popen",
    "ctypes.dlopen",
    "socket.connect",
    "webbrowser.open",
    "urllib.Request",
    "code.__new__",
    "function.__new__",
}
_sink: int | None = None  # a file every process holding the hook appends its events to: workers are forked
_hooked = False
Event = tuple[int, str, str]  # process id, audit event, its arguments (shortened)


def _is_hdf5_reader(event: str, args: tuple[object, ...]) -> bool:
    """wscan's own HDF5 fork server: this Python, isolated, running wscan's hdf5_probe.py (never a scanned file)."""
    argv = args[1] if event == "subprocess.Popen" and len(args) > 1 else None
    return (
        isinstance(argv, list)
        and argv[:2] == [sys.executable, "-I"]
        and argv[-2:] == [hdf5_probe.__file__, "--serve"]
    )


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _sink is None or _is_hdf5_reader(event, args):
        return
    forbidden = event in FORBIDDEN_EVENTS or (event == "import" and args and args[0] == CANARY)
    sample = event == "open" and args and isinstance(args[0], str) and "never-executes" in args[0]
    if forbidden or sample:  # os.write raises no audit event of its own, and one line is one atomic append
        os.write(_sink, json.dumps([os.getpid(), event, repr(args)[:200]]).encode() + b"\n")


@pytest.fixture
def audited(tmp_path: Path) -> Iterator[Callable[[], list[Event]]]:
    """Record forbidden audit events, and opened samples, of this process and its workers while the test body
    runs (a hook cannot be removed, only disarmed)."""
    global _sink, _hooked
    log = tmp_path / "audit.jsonl"
    _sink = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    try:
        yield lambda: [(pid, event, args) for pid, event, args in map(json.loads, log.read_text().splitlines())]
    finally:
        os.close(_sink)
        _sink = None


def _forbidden(events: list[Event]) -> list[Event]:
    """Everything but opened samples and this process forking its workers."""
    return [e for e in events if e[1] != "open" and (e[0], e[1]) != (os.getpid(), "os.fork")]


def _load_build() -> ModuleType:
    name = "wscan_corpus_build"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, CORPUS / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Two hostile corpora (os.system payloads, canary payloads), the canary module and the marker folder."""
    root = tmp_path_factory.mktemp("never-executes")
    markers = root / "markers"
    markers.mkdir()
    canary_dir = root / "canary"
    canary_dir.mkdir()
    (canary_dir / f"{CANARY}.py").write_text(
        "from pathlib import Path\n"
        f"Path({str(markers / 'canary-imported')!r}).write_text('imported')\n"
        "def run(*args):\n"
        f"    Path({str(markers / 'canary-called')!r}).write_text(repr(args))\n",
        encoding="utf-8",
    )
    sys.path.insert(0, str(canary_dir))
    build = _load_build()
    common = {
        "cmd": f"touch {markers / 'shell-ran'}",
        "code": f"open({str(markers / 'python-ran')!r}, 'w').close()",
        "path": str(markers / "file-opened"),
        "module": CANARY,
    }
    build.build(root / "os-system", build.Payload(**common, target=("os", "system")), benign=False)
    build.build(root / "canary", build.Payload(**common, target=(CANARY, "run")), benign=False)
    try:
        yield {"root": root, "markers": markers, "canary": canary_dir}
    finally:
        sys.path.remove(str(canary_dir))


def _samples(folder: Path) -> list[str]:
    """Hostile samples that carry something to find (clean shards of a hostile index do not)."""
    manifest = json.loads((folder / "MANIFEST.json").read_text(encoding="utf-8"))
    return [s["path"] for s in manifest["samples"] if s.get("rules")]


def test_corpora_were_built(trap: dict[str, Path]) -> None:
    for variant in ("os-system", "canary"):
        samples = _samples(trap["root"] / variant)
        assert len(samples) > 60
        assert all((trap["root"] / variant / s).is_file() for s in samples)
    assert CANARY not in sys.modules, "building the samples imported the canary"


def test_scanning_runs_nothing(trap: dict[str, Path], audited: Callable[[], list[Event]]) -> None:
    assert CANARY not in sys.modules
    report = Engine(Config(jobs=1)).scan([trap["root"] / "os-system", trap["root"] / "canary"])
    assert not list(trap["markers"].iterdir()), "a payload ran"
    assert CANARY not in sys.modules, "the canary module was imported"
    events = audited()
    workers = {pid for pid, event, _ in events if event == "open"} - {os.getpid()}
    assert len(workers) == 1  # the hook saw the worker read the samples, so it saw all it did
    assert not _forbidden(events), f"forbidden audit events: {_forbidden(events)}"
    # The scan really read every sample: each one is flagged (configuration findings can be medium).
    flagged = {f.location.path for f in report.findings if f.severity >= Severity.MEDIUM}
    unflagged = [
        f"{variant}/{sample}"
        for variant in ("os-system", "canary")
        for sample in _samples(trap["root"] / variant)
        if display_path(trap["root"] / variant / sample) not in flagged
    ]
    assert not unflagged


def test_scanning_on_workers_runs_nothing(trap: dict[str, Path], audited: Callable[[], list[Event]]) -> None:
    report = Engine(Config(jobs=2)).scan([trap["root"] / "os-system", trap["root"] / "canary"])
    assert not list(trap["markers"].iterdir()), "a payload ran"  # markers are files: workers cannot hide them
    assert CANARY not in sys.modules
    events = audited()
    assert {pid for pid, event, _ in events if event == "open"} - {os.getpid()}  # the workers were watched
    assert not _forbidden(events), f"forbidden audit events: {_forbidden(events)}"
    assert sum(f.severity >= Severity.MEDIUM for f in report.findings) > 120


def test_cli_in_a_fresh_process_runs_nothing(trap: dict[str, Path]) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(trap["canary"]), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "wscan", "scan", "--format", "json", str(trap["root"] / "canary")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["findings"]
    assert not list(trap["markers"].iterdir()), "a payload ran"
