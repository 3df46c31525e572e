"""Scanning never runs what it scans.

Every hostile sample of corpus/build.py is rebuilt in a temporary folder with payloads that would leave
evidence if they ran: shell commands and Python code create marker files, and the container payloads call
into `wscan_canary_mod`, a module on sys.path whose import creates a marker too. After scanning (in this
process and through the CLI in a fresh one) no marker may exist, the canary may not be imported, and an
audit hook must have seen no unpickling, process start, dynamic library load or network connection.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
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
_seen: list[tuple[str, str]] = []
_armed = False
_hooked = False


def _is_hdf5_reader(event: str, args: tuple[object, ...]) -> bool:
    """wscan's own HDF5 fork server: this Python, isolated, running wscan's hdf5_probe.py (never a scanned file)."""
    argv = args[1] if event == "subprocess.Popen" and len(args) > 1 else None
    return (
        isinstance(argv, list)
        and argv[:2] == [sys.executable, "-I"]
        and argv[-2:] == [hdf5_probe.__file__, "--serve"]
    )


def _audit(event: str, args: tuple[object, ...]) -> None:
    if not _armed or _is_hdf5_reader(event, args):
        return
    if event in FORBIDDEN_EVENTS or (event == "import" and args and args[0] == CANARY):
        _seen.append((event, repr(args)[:200]))


@pytest.fixture
def audited() -> Iterator[list[tuple[str, str]]]:
    """Record forbidden audit events while the test body runs (a hook cannot be removed, only disarmed)."""
    global _armed, _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    _seen.clear()
    _armed = True
    try:
        yield _seen
    finally:
        _armed = False


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


def test_scanning_runs_nothing(trap: dict[str, Path], audited: list[tuple[str, str]]) -> None:
    assert CANARY not in sys.modules
    # One process, so the audit hook sees every parser at work (workers are forked, out of its sight).
    report = Engine(Config(jobs=1)).scan([trap["root"] / "os-system", trap["root"] / "canary"])
    assert not list(trap["markers"].iterdir()), "a payload ran"
    assert CANARY not in sys.modules, "the canary module was imported"
    assert not audited, f"forbidden audit events: {audited}"
    # The scan really read every sample: each one is flagged (configuration findings can be medium).
    flagged = {f.location.path for f in report.findings if f.severity >= Severity.MEDIUM}
    unflagged = [
        f"{variant}/{sample}"
        for variant in ("os-system", "canary")
        for sample in _samples(trap["root"] / variant)
        if display_path(trap["root"] / variant / sample) not in flagged
    ]
    assert not unflagged


def test_scanning_on_workers_runs_nothing(trap: dict[str, Path], audited: list[tuple[str, str]]) -> None:
    report = Engine(Config(jobs=2)).scan([trap["root"] / "os-system", trap["root"] / "canary"])
    assert not list(trap["markers"].iterdir()), "a payload ran"  # markers are files: workers cannot hide them
    assert CANARY not in sys.modules
    assert {event for event, _ in audited} == {"os.fork"}  # the workers themselves, and nothing else
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
