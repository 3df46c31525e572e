"""Scan many files on every core, and survive a parser that hangs or dies.

Each worker is a forked process that scans one file at a time. A worker still busy past the file's hard
deadline is killed, and one that dies (a crash in a native library, the kernel's OOM killer) is replaced;
either way that file gets an observation and the scan goes on. Results come back as JSON, never as a
pickle: they hold strings taken from hostile files, and wscan unpickles nothing.
"""

from __future__ import annotations

import json
import multiprocessing
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from wscan.model import Location, Observation

Outcome = tuple[list[Observation], list[str]]  # a file's observations, and the formats that read it
ScanOne = Callable[[int], Outcome]
GRACE_SECONDS = 2.0  # plus a tenth of max-seconds-per-file: the parser's own check should fire first


def can_fork() -> bool:
    """Workers are forked so they share the loaded rules; where fork is missing, files are scanned in turn."""
    return "fork" in multiprocessing.get_all_start_methods()


def scan_in_workers(
    paths: Sequence[str], scan_one: ScanOne, jobs: int, seconds: float
) -> Iterator[tuple[int, Outcome]]:
    """(index, outcome) for every file in `paths` as workers finish them, in no particular order."""
    context = multiprocessing.get_context("fork")
    pending = deque(range(len(paths)))
    workers = [_Worker.start(context, scan_one) for _ in range(min(jobs, len(paths)))]
    try:
        while pending or any(w.task is not None for w in workers):
            for worker in workers:
                if worker.task is None and pending:
                    worker.assign(pending.popleft(), seconds * 1.1 + GRACE_SECONDS)
            busy = [w for w in workers if w.task is not None]
            next_deadline = min(w.deadline for w in busy)
            wait([w.conn for w in busy] + [w.process.sentinel for w in busy],
                 timeout=max(0.0, next_deadline - time.monotonic()))  # fmt: skip
            for index, worker in enumerate(workers):
                outcome = worker.collect(paths, seconds)
                if outcome is None:
                    continue
                yield outcome
                if not worker.process.is_alive():
                    worker.close()
                    workers[index] = _Worker.start(context, scan_one)
    finally:
        for worker in workers:
            worker.close()


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    task: int | None = None
    deadline: float = 0.0

    @classmethod
    def start(cls, context: Any, scan_one: ScanOne) -> _Worker:
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(child, scan_one), daemon=True)
        process.start()
        child.close()
        return cls(process, parent)

    def assign(self, task: int, seconds: float) -> None:
        self.task = task
        self.deadline = time.monotonic() + seconds
        self.conn.send_bytes(str(task).encode())

    def collect(self, paths: Sequence[str], seconds: float) -> tuple[int, Outcome] | None:
        """The finished task's outcome, or a failure once the worker died or ran out of time; None if busy."""
        task = self.task
        if task is None:
            return None
        dead = not self.process.is_alive()
        if self.conn.poll():  # an answer, or the end of the pipe when the worker died
            try:
                outcome = _decode(self.conn.recv_bytes())
                self.task = None
                return task, outcome
            except (EOFError, OSError, ValueError):
                dead = True
                self.process.join(timeout=5)  # hung up without an answer: let it finish dying, to learn why
        if dead:
            self.process.kill()
            self.process.join()
            self.task = None
            reason = f"the worker scanning this file died ({_exit_text(self.process.exitcode)})"
            return task, _failure(paths[task], "scan.error", scanner="worker process", reason=reason)
        if time.monotonic() > self.deadline:
            self.process.kill()
            self.process.join()
            self.task = None
            detail = f"scan took longer than {seconds} s and did not stop; its worker was killed"
            return task, _failure(paths[task], "scan.limit", limit="max-seconds-per-file", detail=detail,
                                  scanner="worker process")
        return None

    def close(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()


def _serve(conn: Connection, scan_one: ScanOne) -> None:
    """Worker loop: an index in, that file's outcome out as JSON, until the parent hangs up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    while True:
        try:
            task = int(conn.recv_bytes())
        except (EOFError, OSError):
            return
        conn.send_bytes(_encode(scan_one(task)))


def _encode(outcome: Outcome) -> bytes:
    found, formats = outcome
    rows = [[o.kind, o.location.path, o.location.member, o.location.offset, dict(o.attrs)] for o in found]
    return json.dumps({"found": rows, "formats": formats}).encode()


def _decode(data: bytes) -> Outcome:
    doc = json.loads(data)
    found = [
        Observation(kind, Location(path, member, offset), attrs) for kind, path, member, offset, attrs in doc["found"]
    ]
    return found, [str(name) for name in doc["formats"]]


def _failure(path: str, kind: str, **attrs: str) -> Outcome:
    return [Observation(kind, Location(path), attrs)], []


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
