"""Shared code of the fuzz targets: drive scanners on bytes the way the engine does, minus its safety net.

The engine turns any exception a scanner raises into a `scan.error` observation (an internal error). Here
the same loop runs without that catch-all, so a traceback on damaged input reaches the fuzzer as a crash.
What the engine documents as normal stays normal: `BudgetExceeded` (a `scan.limit` observation) and the
read errors `read_head` reports as "cannot read". On top of that the harness checks what the engine
trusts: `accepts` never raises (the engine would silently skip the file), observations carry only
str/int/bool attributes, the rule engine can judge them, and a small input never needs the whole time
budget (a slow path that a real-size file would turn into a hang).

Importable without atheris, so regression tests and reproductions can use it too.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import io
import os
import pkgutil
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path

import wscan.scanners
from wscan.config import Config
from wscan.engine import read_head
from wscan.limits import MIB, Budget, BudgetExceeded, Limits
from wscan.model import AttrValue, Location, Observation
from wscan.rules import RuleSet
from wscan.scanners import builtin_scanners
from wscan.scanners.base import Artifact, Head, ScanContext, Scanner
from wscan.scanners.keras import KerasScanner, hdf5_offset

# Scanners import their parsers lazily (onnx_checks, gguf_header, keras_config, ...). atheris instruments only
# what is imported inside `instrument_imports()`, which is where the targets import this module: so import
# every scanner module now, or the heart of those parsers would run without coverage feedback.
for _module in pkgutil.iter_modules(wscan.scanners.__path__, "wscan.scanners."):
    importlib.import_module(_module.name)

# Small limits: a hang or a blow-up shows up in seconds, on inputs of at most a few hundred KiB.
LIMITS = Limits(
    max_depth=4,
    max_members=2_000,
    max_decompressed_bytes=64 * MIB,
    ratio_floor_bytes=1 * MIB,
    max_member_bytes=16 * MIB,
    max_pickle_bytes=8 * MIB,
    max_pickle_opcodes=500_000,
    max_memo_entries=100_000,
    max_stack_depth=100_000,
    max_header_bytes=4 * MIB,
    max_json_bytes=4 * MIB,
    max_seconds_per_file=5.0,
)
# What engine._scan catches around read_head: reported as "cannot read", by design.
READ_ERRORS = (OSError, BudgetExceeded, EOFError, ValueError, RuntimeError)
ATTR_TYPES = (str, int, bool)


class FuzzBug(AssertionError):
    """A property the engine relies on does not hold (not a traceback from the scanner itself)."""


class NoHdf5Keras(KerasScanner):
    """Keras without the HDF5 probe: it forks a child process per file, far too slow to fuzz in-process."""

    def accepts(self, head: Head) -> bool:
        return hdf5_offset(head.head) is None and super().accepts(head)


@cache
def child_scanners() -> tuple[Scanner, ...]:
    """Every built-in scanner (HDF5 excluded), for the members a container yields."""
    return tuple(NoHdf5Keras() if isinstance(s, KerasScanner) else s for s in builtin_scanners())


@cache
def rules() -> RuleSet:
    """The built-in rule set, loaded once per process."""
    return RuleSet.load(Config())


def artifact_of(
    data: bytes,
    name: str,
    context: Mapping[str, AttrValue] | None = None,
    real_path: Path | None = None,
) -> Artifact:
    """A blob in memory, as the engine would present a file (or, with context, a container member)."""
    return Artifact(
        Location(name), len(data), lambda: io.BytesIO(data), name=name, context=dict(context or {}),
        real_path=real_path,
    )


def accepts(scanner: Scanner, head: Head) -> bool:
    """`accepts` must answer, not raise: the engine treats an exception as "not my format" (a silent pass)."""
    try:
        return scanner.accepts(head)
    except Exception as exc:
        raise FuzzBug(f"{scanner.name}.accepts raised {type(exc).__name__}: {exc}") from exc


def check(obs: Observation) -> Observation:
    """An observation the rules and renderers can use."""
    if not isinstance(obs, Observation) or not isinstance(obs.kind, str) or not obs.kind:
        raise FuzzBug(f"not an observation: {obs!r}"[:300])
    for key, value in obs.attrs.items():
        if not isinstance(key, str) or not isinstance(value, ATTR_TYPES):
            raise FuzzBug(f"{obs.kind}: attribute {key!r} is a {type(value).__name__}")
    if not isinstance(obs.location.path, str):
        raise FuzzBug(f"{obs.kind}: location path is a {type(obs.location.path).__name__}")
    return obs


def run_scanner(scanner: Scanner, artifact: Artifact, ctx: ScanContext) -> Iterator[Observation]:
    """engine._run without its `except Exception`: a scanner's traceback escapes to the fuzzer."""
    try:
        for item in scanner.scan(artifact, ctx):
            if isinstance(item, Observation):
                yield check(item)
            elif not isinstance(item, Artifact):
                raise FuzzBug(f"{scanner.name} yielded a {type(item).__name__}")
            elif item.depth > ctx.limits.max_depth:
                yield item.observe("scan.limit", limit="max-depth", detail="nested too deep")
            else:
                ctx.budget.check_time()
                yield from scan_blob(item, ctx, child_scanners())
    except BudgetExceeded as exc:
        yield artifact.observe("scan.limit", limit=exc.limit, detail=exc.detail, scanner=scanner.name)


def scan_blob(artifact: Artifact, ctx: ScanContext, scanners: Sequence[Scanner]) -> Iterator[Observation]:
    """engine._scan: sniff the head, run every scanner that accepts it (children through all scanners)."""
    try:
        head = read_head(artifact)
    except READ_ERRORS as exc:
        yield artifact.observe("scan.error", reason=f"cannot read: {type(exc).__name__}")
        return
    for scanner in scanners:
        if accepts(scanner, head):
            yield from run_scanner(scanner, artifact, ctx)


def drive(
    scanners: Sequence[Scanner],
    data: bytes,
    name: str,
    context: Mapping[str, AttrValue] | None = None,
    real_path: Path | None = None,
    limits: Limits = LIMITS,
) -> list[Observation]:
    """Scan `data` as a top-level file (or member, with `context`) and judge it; raise on any bug."""
    ctx = ScanContext(limits, Budget(limits))
    found = list(scan_blob(artifact_of(data, name, context, real_path), ctx, scanners))
    judge(found, len(data))
    return found


def judge(found: list[Observation], size: int) -> None:
    """The rules accept every observation, and a small input did not need the whole time budget."""
    rules().judge(found)
    for obs in found:
        if obs.kind == "scan.limit" and obs.attrs.get("limit") == "max-seconds-per-file":
            raise FuzzBug(f"{size}-byte input used the whole time budget ({obs.attrs.get('scanner', '')})")


def scratch_dir() -> Path:
    """A per-process folder for targets that must put files on disk (tmpfs when there is one)."""
    base = os.environ.get("WSCAN_FUZZ_SCRATCH")  # run.py sets it and removes the folder after the target
    if base is None and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        base = "/dev/shm"
    folder = Path(tempfile.mkdtemp(prefix="wscan-fuzz-", dir=base))
    atexit.register(shutil.rmtree, folder, True)  # not reached when libFuzzer ends the process with _exit
    return folder


def split(data: bytes, parts: int, marker: bytes = b"\n--8<--\n") -> list[bytes]:
    """Cut one input into a fixed number of fields (missing fields are empty)."""
    pieces = data.split(marker, parts - 1)
    return pieces + [b""] * (parts - len(pieces))


def expect(errors: tuple[type[BaseException], ...], call: Callable[[], object]) -> None:
    """Run `call`; the documented error types are fine, anything else propagates as a crash."""
    with contextlib.suppress(*errors):
        call()
