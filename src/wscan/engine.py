"""One pass: discover files, run every scanner that recognises each blob (recursively), judge, report."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator
from functools import partial
from pathlib import Path

from wscan import __version__
from wscan.config import Config
from wscan.discover import FOLDER_KINDS, FileEntry, discover
from wscan.limits import Budget, BudgetExceeded, machine_memory, open_counted
from wscan.model import AttrValue, Finding, Location, Observation, bounded
from wscan.module_shadowing import shadowed_module
from wscan.report import FILE_FAILED, FILE_SCANNED, FILE_SKIPPED, FileResult, Report
from wscan.rules import RuleSet
from wscan.scanners import all_scanners, fallback_scanners
from wscan.scanners.base import (
    CLAIM_KIND,
    HEAD_BYTES,
    NOT_MINE_KIND,
    TAIL_BYTES,
    Artifact,
    Head,
    ScanContext,
    Scanner,
)
from wscan.settled import Settled, decode, encode
from wscan.sniff import classify_unscanned
from wscan.summary import FACT_KINDS, summarize

Outcome = tuple[list[Observation], list[str]]  # a file's observations, and the formats that read it

# The last part of an observation kind that means "this could not be read in full".
FAILURE_SUFFIXES = ("error", "limit", "malformed", "truncated", "corrupt", "invalid", "unreadable")
# Skips that say a file could not even be opened count as failures, not skips.
Progress = Callable[[int, int, str], None]
DEFAULT_MAX_JOBS = 8  # one worker per core up to this; each holds its own parsers (about 50 MiB)
# Files whose scanners load a large library on first use (onnx 0.3 s, Jinja 0.1 s, h5py). A family goes to one
# worker, first, so no worker loads a library another already paid for while the small files go on beside it.
# Only the name is looked at, and only to plan: a wrong guess costs time, never a check.
LIBRARY_FAMILIES = {
    ".onnx": "onnx", ".gguf": "jinja", ".jinja": "jinja", "tokenizer_config.json": "jinja", ".keras": "hdf5",
    ".h5": "hdf5", ".hdf5": "hdf5", ".7z": "7z",
}  # fmt: skip
FAMILY_BATCH = 8  # a larger family is split across workers: the library's cost is then spread thin anyway
SMALL_FILE = 1024 * 1024  # files below this go out in batches, to save a round trip each
SMALL_BATCH = 32
CLOCK_EVERY = 1024  # observations between two looks at the file's deadline
ATTR_TYPES = (str, int, bool)  # what observation attributes hold (see `_plain`)
MAX_UNREAD = 100  # observations kept of a file no scanner read (it has one or two), in case another file claims it
MAX_FINDINGS_PER_RULE = 1000  # per file; the rest are counted in one WS-FILE-017 note (GitHub takes 5,000 a rule)


def is_failure(kind: str) -> bool:
    """Whether an observation kind means the blob could not be parsed completely (fail closed)."""
    return kind.rsplit(".", 1)[-1].split("_")[-1] in FAILURE_SUFFIXES


def read_head(artifact: Artifact) -> Head:
    """The first 64 KiB and, when cheap, the last 64 KiB of a blob."""
    raw_data = artifact.context.get("raw_data", False)  # tensor bytes: never read to their end
    with artifact.opener() as handle:
        head = handle.read(HEAD_BYTES)
        tail = head
        if artifact.size > len(head) and artifact.context.get("cheap_seek", True) and not raw_data:
            handle.seek(max(artifact.size - TAIL_BYTES, len(head)))
            tail = handle.read(TAIL_BYTES)
    container = str(artifact.context.get("container", ""))
    return Head(head, tail, artifact.size, artifact.name, bool(raw_data), container)


class Engine:
    """Runs scanners over files with the limits and rules of one configuration."""

    def __init__(self, config: Config, scanners: list[Scanner] | None = None) -> None:
        self.config = config
        self.limits = config.limits  # as a scan runs: each worker's memory cap cut to its share of the machine
        self.scanners = scanners if scanners is not None else all_scanners()
        self.fallbacks = fallback_scanners() if scanners is None else []
        self.rules = RuleSet.load(config)

    def scan(self, paths: list[Path], progress: Progress | None = None) -> Report:
        """Scan files and folders; never raises for what a file contains.

        Warnings are off meanwhile (workers inherit that): a parser's warning may quote a hostile name or
        string straight to stderr, where a terminal or a CI log would act on it; everything worth saying
        about a file is an observation."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._scan_paths(paths, progress)

    def _scan_paths(self, paths: list[Path], progress: Progress | None) -> Report:
        started = time.monotonic()
        items = list(discover(paths))
        entries = [item for item in items if isinstance(item, FileEntry)]
        # Each worker's memory cap is its share of the machine at most, shared by the workers this scan forks; the
        # report states the cap they ran with.
        workers = min(worker_count(self.config), len(entries))
        self.limits = self.config.limits.within_machine(workers, machine_memory())
        report = Report(
            tool_version=__version__,
            rules_digest=self.rules.digest,
            fail_on=self.config.fail_on,
            limits=self.limits.as_dict(),
            config=str(self.config.source or ""),
        )
        settled = iter(self._scan_files(entries, progress))
        # Each file as discover reported it (never opened), or as judged after its scan.
        arrivals = [(item.location.path, 0, item) if isinstance(item, Observation)
                    else (item.display, item.size, next(settled)) for item in items]
        # Files another file says it reads (an ONNX model's external data): raw bytes, not an unknown format.
        claimed = {str(o.attrs["file"]): str(o.attrs.get("format", "data")) for _, _, arrived in arrivals
                   if isinstance(arrived, Settled) for o in arrived.kept if o.kind == CLAIM_KIND}
        facts: dict[str, list[Observation]] = {}
        named: dict[str, list[Finding]] = {}  # findings about a file's name: counted in its result when it comes
        for path, size, arrived in arrivals:
            if isinstance(arrived, Observation) and arrived.kind in FOLDER_KINDS:  # about names: the files are scanned
                named.setdefault(path, []).extend(self.rules.judge([arrived]))
                report.findings.extend(named[path])
                continue
            if isinstance(arrived, Observation):  # an LFS pointer, a special file, ...: never opened
                status = FILE_FAILED if is_failure(arrived.kind) else FILE_SKIPPED
                arrived = Settled([], [], status, arrived.kind.split(".", 1)[1], self.rules.judge([arrived]), None)
            else:
                if path in claimed and arrived.unread is not None:  # no scanner read it, but another file does
                    found = [o for o in arrived.unread if o.kind != "file.unknown_format"]
                    arrived = self._settle(path, found, [claimed[path]])
                facts[path] = [obs for obs in arrived.kept if obs.kind in FACT_KINDS]
            report.findings.extend(arrived.findings)
            worst = max((f.severity for f in [*arrived.findings, *named.pop(path, [])]), default=None)
            report.files.append(FileResult(path, size, tuple(arrived.formats), arrived.status, arrived.reason, worst))
        report.findings.sort(key=lambda f: f.sort_key())
        report.rules = self.rules.info()
        report.models = summarize(report.files, facts, self.config.fail_on)
        report.duration_seconds = round(time.monotonic() - started, 3)
        return report

    def _settle(self, path: str, observations: Iterable[Observation], formats: list[str]) -> Settled:
        """What the report keeps of a file: its status, findings, and the observations read across files.

        The observations are judged as they come, in the worker that scans the file, and only findings (at most
        MAX_FINDINGS_PER_RULE per rule) are kept: a file's observations are never held all at once (200,000 are
        allowed). `formats` fills in while they are read."""
        kept: list[Observation] = []
        unread: list[Observation] | None = []
        failure = found_kind = ""

        def watched() -> Iterator[Observation]:
            nonlocal unread, failure, found_kind
            for obs in observations:
                if not all(type(value) in ATTR_TYPES and bounded(value) is value for value in obs.attrs.values()):
                    obs = Observation(obs.kind, obs.location, {k: bounded(_plain(v)) for k, v in obs.attrs.items()})
                if not failure and is_failure(obs.kind):
                    failure = obs.kind
                if not found_kind and obs.kind.startswith("file."):
                    found_kind = obs.kind
                if obs.kind == CLAIM_KIND or obs.kind in FACT_KINDS:
                    kept.append(obs)
                if unread is not None and len(unread) < MAX_UNREAD:
                    unread.append(obs)
                else:
                    unread = None
                yield obs

        findings = self._judge(path, watched())
        if failure:
            status, reason = FILE_FAILED, failure
        elif not formats:
            status, reason = FILE_SKIPPED, found_kind
        else:
            status, reason = FILE_SCANNED, ""
        return Settled(kept, formats, status, reason, findings, None if formats else unread)

    def _judge(self, path: str, found: Iterable[Observation]) -> list[Finding]:
        """The file's findings, the first MAX_FINDINGS_PER_RULE of each rule, then one note of how many more."""
        findings, counts = self.rules.judge_listing(found, MAX_FINDINGS_PER_RULE)
        notes = [Observation("report.findings_omitted", Location(path),
                             {"rule": rule_id, "count": count - MAX_FINDINGS_PER_RULE, "listed": MAX_FINDINGS_PER_RULE})
                 for rule_id, count in sorted(counts.items()) if count > MAX_FINDINGS_PER_RULE]
        return findings + self.rules.judge(notes)

    def _scan_files(self, entries: list[FileEntry], progress: Progress | None) -> list[Settled]:
        """Every file settled, in order, by forked workers: on all cores when there are several files.

        Even one file goes to a worker: a parser that hangs in native code, or crashes it, then costs that file a
        finding rather than the whole scan, and the worker may load a library's parts without the rest of it
        (`scanners.onnx_lib`). Without fork, or with `jobs` 0, files are scanned in turn in this process.
        """
        total = len(entries)
        jobs = min(worker_count(self.config), total)
        if not jobs:
            settled = []
            for done, entry in enumerate(entries):
                if progress is not None:
                    progress(done, total, entry.display)
                settled.append(self.settle_file(entry))
        else:
            from wscan.parallel import scan_in_workers

            by_index: dict[int, Settled] = {}
            seconds = self.limits.max_seconds_per_file
            displays = [entry.display for entry in entries]
            batches = plan_batches(entries, jobs)

            def scan_one(index: int) -> bytes:  # in a worker
                return encode(self.settle_file(entries[index]))

            memory = self.limits.max_memory_bytes
            for index, answer in scan_in_workers(displays, batches, scan_one, jobs, seconds, memory):
                by_index[index] = self._received(displays[index], answer)
                if progress is not None:
                    progress(len(by_index), total, displays[index])
            settled = [by_index[index] for index in range(total)]
        if progress is not None:
            progress(total, total, "")
        return settled

    def _received(self, path: str, answer: bytes | Observation) -> Settled:
        """A worker's answer for a file, or the failure that ended it (its worker died or hung)."""
        if isinstance(answer, Observation):
            return self._settle(path, [answer], [])
        try:
            return decode(answer)
        except (ValueError, KeyError, TypeError) as exc:  # never seen: the worker is wscan's own code
            return self._failed(path, "worker process", f"unreadable answer: {exc}")

    def _failed(self, path: str, scanner: str, reason: str) -> Settled:
        """A file that wscan itself failed on, past its scanners (which report their own errors)."""
        return self._settle(path, [Observation("scan.error", Location(path), {"scanner": scanner,
                                                                              "reason": reason[:300]})], [])

    def scan_file(self, entry: FileEntry) -> Outcome:
        """All observations of one top-level file, and the formats that read it (a scan settles each file as its
        observations come instead: `settle_file`)."""
        formats: list[str] = []
        return list(self._observe(entry, formats)), formats

    def settle_file(self, entry: FileEntry) -> Settled:
        """One top-level file scanned and judged; a bug in judging fails that file, never the scan."""
        formats: list[str] = []
        try:
            return self._settle(entry.display, self._observe(entry, formats), formats)
        except Exception as exc:  # scanners' own exceptions are observations already (`_run`)
            return self._failed(entry.display, "engine", f"judging failed: {type(exc).__name__}: {exc}")

    def _observe(self, entry: FileEntry, formats: list[str]) -> Iterator[Observation]:
        budget = Budget(self.limits)
        ctx = ScanContext(self.limits, budget)
        path = entry.real_path
        artifact = Artifact(
            Location(entry.display), entry.size, partial(open_counted, path, budget), name=path.name, real_path=path
        )
        limit = self.limits.max_observations
        for count, observation in enumerate(self._scan(artifact, ctx, formats), 1):
            if count > limit:  # returning drops the scan's generators, which closes them
                detail = f"more than {limit:,} observations; the scan of this file stopped there"
                yield artifact.observe("scan.limit", limit="max-observations", detail=detail)
                return
            yield observation
            if not count % CLOCK_EVERY:  # the time spent judging them counts too
                try:
                    budget.check_time()
                except BudgetExceeded as exc:
                    yield artifact.observe("scan.limit", limit=exc.limit, detail=exc.detail)
                    return

    def _scan(self, artifact: Artifact, ctx: ScanContext, formats: list[str]) -> Iterator[Observation]:
        try:
            head = read_head(artifact)
        except (OSError, BudgetExceeded, EOFError, ValueError, RuntimeError) as exc:
            yield artifact.observe("scan.error", reason=f"cannot read: {type(exc).__name__}: {exc}"[:300])
            return
        read_by = yield from self._read(self.scanners, artifact, head, ctx, formats)
        if not read_by:
            read_by = yield from self._read(self.fallbacks, artifact, head, ctx, formats)
        if not read_by:
            fallback = classify_unscanned(head)
            if fallback is not None:
                kind, attrs = fallback
                if kind == "file.native_code":  # an extension module Python may import from the model folder
                    shadows = shadowed_module(artifact.real_path) if artifact.real_path is not None else ""
                    attrs = {**attrs, "shadows": shadows}
                yield Observation(kind, artifact.location, attrs)

    def _read(
        self, scanners: list[Scanner], artifact: Artifact, head: Head, ctx: ScanContext, formats: list[str]
    ) -> Generator[Observation, None, int]:
        """Run every scanner that accepts the blob; return how many read it (a scanner may decline after a look)."""
        read_by = 0
        for scanner in (s for s in scanners if _accepts(s, head)):
            added = scanner.name not in formats
            if added:
                formats.append(scanner.name)
            declined = False
            for item in self._run(scanner, artifact, ctx, formats):
                if item.kind == NOT_MINE_KIND and item.location == artifact.location:
                    declined = True
                else:
                    yield item
            if declined and added:
                formats.remove(scanner.name)
            read_by += not declined
        return read_by

    def _run(
        self, scanner: Scanner, artifact: Artifact, ctx: ScanContext, formats: list[str]
    ) -> Iterator[Observation]:
        out_of_memory = False
        try:
            for item in scanner.scan(artifact, ctx):
                if isinstance(item, Observation):
                    yield item
                elif item.depth > ctx.limits.max_depth:
                    yield item.observe(
                        "scan.limit", limit="max-depth", detail=f"nested deeper than {ctx.limits.max_depth}"
                    )
                else:
                    ctx.budget.check_time()
                    yield from self._scan(item, ctx, formats)
        except BudgetExceeded as exc:
            yield artifact.observe("scan.limit", limit=exc.limit, detail=exc.detail, scanner=scanner.name)
        except MemoryError:  # the worker's cap (`parallel.cap_memory`)
            out_of_memory = True
        except Exception as exc:
            yield artifact.observe(
                "scan.error", scanner=scanner.name, reason=f"{type(exc).__name__}: {exc}"[:300]
            )
        if out_of_memory:  # past the except block, whose traceback held what the parser had built
            detail = f"the scan needed more than {ctx.limits.max_memory_bytes} bytes of memory"
            yield artifact.observe("scan.limit", limit="max-memory-bytes", detail=detail, scanner=scanner.name)


def worker_count(config: Config) -> int:
    """Workers a scan of many files forks: one per core (at most DEFAULT_MAX_JOBS) unless told; 0 where files are
    scanned in this process (`jobs` 0, or no fork)."""
    if config.jobs == 0 or not hasattr(os, "fork"):
        return 0
    return config.jobs if config.jobs is not None else min(os.cpu_count() or 1, DEFAULT_MAX_JOBS)


def plan_batches(entries: list[FileEntry], jobs: int) -> list[list[int]]:
    """The order files go to workers: library families first, then the rest largest first (the big ones
    should not be left for last), small files a few at a time."""
    families: dict[str, list[int]] = {}
    rest: list[int] = []
    for index, entry in enumerate(entries):
        name = entry.real_path.name.lower()
        family = LIBRARY_FAMILIES.get(name) or LIBRARY_FAMILIES.get(os.path.splitext(name)[1])
        if family is None:
            rest.append(index)
        else:
            families.setdefault(family, []).append(index)
    batches: list[list[int]] = []
    for members in sorted(families.values(), key=len, reverse=True):
        size = len(members) if len(members) <= FAMILY_BATCH else -(-len(members) // jobs)
        batches.extend(members[start : start + size] for start in range(0, len(members), size))
    rest.sort(key=lambda index: entries[index].size, reverse=True)
    batch: list[int] = []
    for index in rest:
        if entries[index].size >= SMALL_FILE:
            batches.append([index])
            continue
        batch.append(index)
        if len(batch) == SMALL_BATCH:
            batches.append(batch)
            batch = []
    if batch:
        batches.append(batch)
    return batches


def _plain(value: object) -> AttrValue:
    """An attribute as rules read it: a plugin's scanner may break the str, int or bool contract (a list, or an
    object whose str() raises), and judging must not fail on it. Anything else is judged as its text."""
    if type(value) in ATTR_TYPES:
        return value  # type: ignore[return-value]
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _accepts(scanner: Scanner, head: Head) -> bool:
    try:
        return scanner.accepts(head)
    except Exception:
        return False
