"""Scan many files on every core, and survive a parser that hangs or dies.

Each worker is a forked process that scans one file at a time, with a cap on the memory it may allocate. A
worker still busy past the file's hard deadline is killed, and one that dies (a crash in a native library) is
replaced;
either way that file gets an observation and the scan goes on. What a worker sends for a file is the
caller's business (wscan sends JSON, never a pickle: it holds strings taken from hostile files).
"""

from __future__ import annotations

import gc
import json
import math
import multiprocessing
import select
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from wscan.model import Location, Observation

ScanOne = Callable[[int], bytes]  # a file's index in, the worker's answer for it out
Answer = bytes | Observation  # what scan_one returned, or why there is no answer: the worker died or hung
GRACE_SECONDS = 2.0  # plus a tenth of max-seconds-per-file: the parser's own check should fire first
# True in a worker: a process that runs only wscan's scanners and exits after the scan, so a scanner may load a
# library's parts without the rest of it (see `scanners.onnx_lib`).
IN_WORKER = False


def scan_in_workers(
    paths: Sequence[str], batches: Sequence[Sequence[int]], scan_one: ScanOne, jobs: int, seconds: float,
    memory: int | None = None,
) -> Iterator[tuple[int, Answer]]:
    """(index, answer) for every file in `paths` as workers finish them, in no particular order.

    `batches` (every index once) go out in the order given; a worker scans a batch in order and answers file
    by file, so the hard deadline is per file. When a worker dies or is killed, that file fails and the rest
    of its batch goes back to the front of the queue. `memory`: the bytes a worker may allocate past what it
    holds when it starts (None: no cap).
    """
    context = multiprocessing.get_context("fork")
    pending = deque(list(batch) for batch in batches if batch)
    hard = seconds * 1.1 + GRACE_SECONDS
    # Frozen, the parent's objects are never traversed by the workers' collector, nor copied for it. A host
    # program that froze its own heap is left as it was.
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    try:
        workers = [_Worker.start(context, scan_one, memory) for _ in range(min(jobs, len(pending)))]
    finally:
        if freeze:
            gc.unfreeze()
    poller = select.poll()  # kept for the whole scan: a wake-up costs one system call, for every answer
    owners: dict[int, int] = {}  # file descriptor -> worker index
    for index, worker in enumerate(workers):
        _watch(poller, owners, index, worker)

    def replace(index: int) -> _Worker:
        _unwatch(poller, owners, workers[index])
        workers[index].close()
        workers[index] = _Worker.start(context, scan_one, memory)
        _watch(poller, owners, index, workers[index])
        return workers[index]

    try:
        while pending or any(w.queue for w in workers):
            for index, worker in enumerate(workers):
                if not worker.queue and pending:
                    batch = pending.popleft()
                    try:
                        if not worker.process.is_alive():
                            raise BrokenPipeError
                        worker.assign(batch, hard)
                    except OSError:  # died between batches, so nothing of it to report: a new one takes the batch
                        replace(index).assign(batch, hard)
            next_deadline = min(w.deadline for w in workers if w.queue)
            events = poller.poll(max(0, math.ceil((next_deadline - time.monotonic()) * 1000)))
            woken = {owners[fd] for fd, _ in events}
            now = time.monotonic()
            for index, worker in enumerate(workers):
                if not worker.queue:
                    if index in woken and not worker.process.is_alive():
                        replace(index)  # died idle, so nothing lost; its sentinel would wake this loop forever
                    continue
                if index not in woken and now <= worker.deadline:
                    continue  # nothing new from this one
                done, unstarted, ended = worker.collect(paths, seconds, hard)
                yield from done
                if unstarted:
                    pending.appendleft(unstarted)
                if ended:
                    replace(index)
    finally:
        for worker in workers:
            worker.close()


def _watch(poller: select.poll, owners: dict[int, int], index: int, worker: _Worker) -> None:
    """Wake up for the worker's answers and for its end (its sentinel becomes readable when it exits)."""
    for fd in (worker.conn.fileno(), worker.process.sentinel):
        poller.register(fd, select.POLLIN)
        owners[fd] = index


def _unwatch(poller: select.poll, owners: dict[int, int], worker: _Worker) -> None:
    for fd in (worker.conn.fileno(), worker.process.sentinel):
        poller.unregister(fd)
        owners.pop(fd, None)


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    queue: deque[int] = field(default_factory=deque)  # the batch's files not answered yet, in scan order
    deadline: float = 0.0  # for the file at the front of the queue
    # Whether an answer (or the end of the pipe) is waiting: Connection.poll builds a selector on every call.
    answers: select.poll = field(default_factory=select.poll)

    def __post_init__(self) -> None:
        self.answers.register(self.conn.fileno(), select.POLLIN)

    @classmethod
    def start(cls, context: Any, scan_one: ScanOne, memory: int | None) -> _Worker:
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(child, scan_one, memory), daemon=True)
        process.start()
        child.close()
        return cls(process, parent)

    def assign(self, batch: list[int], hard: float) -> None:
        self.queue = deque(batch)
        self.deadline = time.monotonic() + hard
        self.conn.send_bytes(json.dumps(batch).encode())

    def collect(
        self, paths: Sequence[str], seconds: float, hard: float
    ) -> tuple[list[tuple[int, Answer]], list[int], bool]:
        """Answers so far; after a death or a timeout also that file's failure and the unstarted rest,
        and True: the worker is gone and needs replacing."""
        done: list[tuple[int, Answer]] = []
        dead = not self.process.is_alive()  # checked first: whatever it sent before dying is in the pipe
        while self.queue and self.answers.poll(0):  # answers, or the end of the pipe when the worker died
            try:
                answer = self.conn.recv_bytes()
            except (EOFError, OSError):
                dead = True
                self.process.join(timeout=5)  # hung up without an answer: let it finish dying, to learn why
                break
            done.append((self.queue.popleft(), answer))
            self.deadline = time.monotonic() + hard
        if not self.queue:
            return done, [], False  # a worker that died after its last answer is replaced when next handed work
        if dead:
            self.process.kill()
            self.process.join()
            reason = f"the worker scanning this file died ({_exit_text(self.process.exitcode)})"
            failed = Observation("scan.error", Location(paths[self.queue[0]]), {"scanner": "worker process",
                                                                               "reason": reason})
        elif time.monotonic() > self.deadline:
            self.process.kill()
            self.process.join()
            detail = f"scan took longer than {seconds} s and did not stop; its worker was killed"
            failed = Observation("scan.limit", Location(paths[self.queue[0]]), {
                "limit": "max-seconds-per-file", "detail": detail, "scanner": "worker process"})
        else:
            return done, [], False
        done.append((self.queue.popleft(), failed))
        unstarted = list(self.queue)
        self.queue.clear()
        return done, unstarted, True

    def close(self) -> None:
        """Kill the worker without waiting for it: the kernel takes as long to tear down a large forked process
        (a program that embeds wscan, a test run with torch loaded: 13 ms) as to fork it. multiprocessing reaps
        it when the next worker starts, or at exit."""
        if self.process.is_alive():
            self.process.kill()
        self.conn.close()


def _serve(conn: Connection, scan_one: ScanOne, memory: int | None) -> None:
    """Worker loop: a batch of indices in, each file's answer out, until the parent hangs up."""
    global IN_WORKER
    IN_WORKER = True
    gc.enable()  # off in the wscan command's own process (`cli.console`), never here: scanned files make garbage
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _no_core_dumps()
    if memory is not None:
        cap_memory(memory)
    while True:
        try:
            batch = json.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        for task in batch:
            conn.send_bytes(scan_one(int(task)))


def _no_core_dumps() -> None:
    """A native parser that crashes (one that cannot allocate past the cap segfaults) costs its file a finding, not
    a core file of gigabytes."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ImportError, OSError, ValueError):
        return


def cap_memory(extra: int) -> bool:
    """Let this process allocate at most `extra` bytes more than it holds now: past that, an allocation fails with
    MemoryError (a parser's memory, Python's or a native library's), which the scan reports as a limit. Linux only
    (RLIMIT_DATA counts the heap and private mappings, not the files mapped for reading); False where it is not
    set. A hard limit already lower is kept."""
    try:
        import resource

        with open("/proc/self/status", encoding="ascii") as status:
            held = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmData:"))
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        want = held + extra if hard == resource.RLIM_INFINITY else min(held + extra, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (want, hard))
        return True
    except (ImportError, OSError, ValueError, OverflowError, StopIteration):  # a cap past what the system takes: none
        return False


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
