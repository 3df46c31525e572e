"""Read HDF5 metadata with h5py in a child process that can be killed.

libhdf5 is C code reading attacker-chosen structures: a one-bit change to a Keras `.h5` file makes it
loop forever while reading an attribute (found by the property tests), and the library has a long CVE
history of crashes. Python cannot interrupt C code, so every file is read in a fresh child process: forked
from a small fork server (this file run as a script, started once, with h5py imported: a few milliseconds a
file), or started afresh where there is no fork (Windows). A child that outlives its time is killed; one
that dies is reported. Children answer with JSON, never a pickle, so even a child subverted by the file
cannot reach the scanner's process. (multiprocessing is not used: its forkserver and spawn children
re-import the caller's main module, which would rerun any script that calls wscan without a main guard.)

Only metadata is read: the root attributes Keras stores its model in, and every link and dataset header
(external links, external storage, virtual datasets and declared sizes are how an HDF5 file makes a loader
read other files or allocate memory, CVE-2026-1669). No dataset is ever read, so no filter plugin runs;
plugin loading is disabled all the same.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

ROOT_ATTRS = ("model_config", "training_config", "keras_version", "backend")
MAX_LISTED = 10  # external files or virtual sources named per dataset
OVERSIZED_BYTES = 1 << 30  # a dataset declaring this much in memory ...
OVERSIZED_RATIO = 1000  # ... and this many times what it stores on disk is a memory bomb for a loader
CHILD_MEMORY = 4 << 30  # address space a child may map, above what the fork server already holds


@dataclass(frozen=True, slots=True)
class ProbeFailure:
    """The child did not answer: `kind` is time_limit (killed) or unreadable (crashed, no answer)."""

    kind: str
    reason: str


def probe(path: str, max_attr_bytes: int, max_items: int) -> dict[str, Any]:
    """The root attributes Keras uses and every link or dataset that reaches outside the file (child side)."""
    import h5py

    _no_plugins(h5py)
    result: dict[str, Any] = {"attrs": {}, "links": [], "datasets": [], "objects": 0, "truncated": False}
    try:
        handle = h5py.File(path, "r", locking=False)
    except Exception as exc:
        result["error"] = _reason(exc)
        return result
    with handle:
        result["attrs"] = {name: _attr(handle, name, max_attr_bytes) for name in ROOT_ATTRS if _has(handle, name)}
        _links(handle, result, max_items)
    return result


def _no_plugins(h5py: Any) -> None:
    """Empty libhdf5's filter-plugin search path: nothing from the file's choice of filters gets loaded."""
    try:
        while h5py.h5pl.size():
            h5py.h5pl.remove(0)
    except Exception:
        return


def _has(handle: Any, name: str) -> bool:
    try:
        return name in handle.attrs
    except Exception:
        return False


def _attr(handle: Any, name: str, max_bytes: int) -> dict[str, Any]:
    """A string attribute's text, or why it has none (not a string, not UTF-8, too long, unreadable)."""
    try:
        value = handle.attrs[name]
    except Exception as exc:
        return {"error": _reason(exc)}
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogatepass")
    elif hasattr(value, "tobytes") and getattr(getattr(value, "dtype", None), "kind", "") == "S":
        value = value.tobytes()
    if not isinstance(value, bytes):
        return {"error": f"not a string but {type(value).__name__}"}
    if len(value) > max_bytes:
        return {"size": len(value)}
    try:
        return {"text": value.decode("utf-8")}
    except UnicodeDecodeError as exc:
        return {"error": f"not UTF-8 at byte {exc.start}"}


def _links(handle: Any, result: dict[str, Any], max_items: int) -> None:
    """Every link, breadth first as libhdf5 visits them, up to max_items."""
    import h5py

    def visit(name: str, link: Any) -> bool | None:
        result["objects"] += 1
        if result["objects"] > max_items:
            result["truncated"] = True
            return True
        if isinstance(link, h5py.ExternalLink):
            result["links"].append({"path": name, "type": "external", "file": str(link.filename), "target": link.path})
        elif isinstance(link, h5py.SoftLink):
            result["links"].append({"path": name, "type": "soft", "file": "", "target": str(link.path)})
        else:
            _dataset(handle, name, result)
        return None

    try:
        handle.visititems_links(visit)
    except Exception as exc:
        result["error"] = _reason(exc)


def _dataset(handle: Any, name: str, result: dict[str, Any]) -> None:
    """External storage, virtual sources and declared-versus-stored size of one dataset header."""
    import h5py

    try:
        obj = handle.get(name)
        if not isinstance(obj, h5py.Dataset):
            return
        plist = obj.id.get_create_plist()
        count = min(plist.get_external_count(), MAX_LISTED)
        external = [plist.get_external(i)[0].decode("utf-8", "replace") for i in range(count)]
        virtual = [str(s.file_name) for s in obj.virtual_sources()[:MAX_LISTED]] if obj.is_virtual else []
        declared = int(obj.size) * _item_size(obj)
        stored = int(obj.id.get_storage_size())
    except Exception as exc:
        result["datasets"].append({"path": name, "error": _reason(exc)})
        return
    oversized = declared > OVERSIZED_BYTES and declared > OVERSIZED_RATIO * max(stored, 1)
    if external or virtual or oversized:
        result["datasets"].append(
            {"path": name, "external": external, "virtual": virtual, "declared": declared, "stored": stored,
             "oversized": oversized}
        )


def _item_size(dataset: Any) -> int:
    """Bytes per element as NumPy sees it, or as libhdf5 stores it for a type NumPy has no equivalent of
    (PyTables' time types, quadruple precision floats)."""
    try:
        return int(dataset.dtype.itemsize)
    except (TypeError, ValueError):
        return int(dataset.id.get_type().get_size())


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


def _answer(request: dict[str, Any]) -> bytes:
    """Probe one file in this process (a forked child, or a one-shot process): JSON bytes, never raises."""
    _limit_resources()
    try:
        answer = probe(str(request["path"]), int(request["max_attr"]), int(request["max_items"]))
    except BaseException as exc:  # MemoryError and anything else h5py raises: the scanner fails closed
        answer = {"fatal": _reason(exc)}
    return json.dumps(answer).encode("utf-8")


def _limit_resources() -> None:
    """No core dumps, and a cap on the address space the child may add (a crafted file can ask for a lot)."""
    try:
        import resource
    except ImportError:  # Windows
        return
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with open("/proc/self/statm", encoding="ascii") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        want = mapped + CHILD_MEMORY
        if hard == resource.RLIM_INFINITY or want < hard:
            resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (OSError, ValueError):
        return


# --- fork server (its own process: runs this file as a script, never imports wscan) -----------------------


def _serve() -> None:
    """Read one JSON request a line; fork a child per request; answer one JSON line (result or failure)."""
    import h5py  # noqa: F401 - imported once here so every forked child starts with it loaded

    for line in sys.stdin.buffer:
        request = json.loads(line)
        reply = _fork_one(request, float(request["timeout"]))
        sys.stdout.buffer.write(reply + b"\n")
        sys.stdout.buffer.flush()


def _fork_one(request: dict[str, Any], timeout: float) -> bytes:
    """One probe in a forked child, killed after `timeout` seconds."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: probe, write, leave without running any cleanup of the server's
        os.close(read_end)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)  # the server's stdout carries the replies: nothing else may write there
        data = _answer(request)
        with os.fdopen(write_end, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(write_end)
    data, finished = _read_until(read_end, time.monotonic() + timeout)
    os.close(read_end)
    if not finished:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not finished:
        return _failure("time_limit", f"HDF5 metadata not read within {timeout:.0f} s")
    if not data:
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit code {os.WEXITSTATUS(status)}"
        return _failure("unreadable", f"HDF5 reader died ({how})")
    return data


def _read_until(fd: int, deadline: float) -> tuple[bytes, bool]:
    """Everything the child writes until it closes the pipe, or what came before the deadline."""
    import select

    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return b"", False
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)


def _failure(kind: str, reason: str) -> bytes:
    return json.dumps({"failure": kind, "reason": reason}).encode("utf-8")


# --- the scanner's side ------------------------------------------------------------------------------------


# Isolated mode (-I) ignores PYTHON* variables and keeps this file's folder off sys.path (it holds modules
# named numpy.py and pickle.py); the child gets the scanner's own sys.path instead, so it finds h5py where
# the scanner does, user site or not.
_BOOT = (
    "import json, runpy, sys; sys.path[:] = json.loads(sys.argv[1]); sys.argv = sys.argv[2:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _command(mode: str) -> list[str]:
    return [sys.executable, "-I", "-c", _BOOT, json.dumps([p for p in sys.path if p]), __file__, mode]


class _Server:
    """The fork server process, started on first use and restarted if it dies."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def ask(self, request: dict[str, Any], timeout: float) -> bytes | None:
        with self.lock:
            for _ in range(2):  # a dead server is restarted once
                process = self._running()
                try:
                    assert process.stdin is not None and process.stdout is not None
                    process.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
                    process.stdin.flush()
                    line = _read_line(process.stdout, time.monotonic() + timeout + _SERVER_GRACE)
                except OSError:
                    line = None
                if line:
                    return line
                self._stop()
            return None

    def _running(self) -> subprocess.Popen[bytes]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                _command("--serve"),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            atexit.register(self.close)
        return self.process

    def close(self) -> None:
        """End the server: closing its input ends its loop; kill it if it does not go."""
        with self.lock:
            process, self.process = self.process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(2)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def _stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None:
                    pipe.close()
            self.process = None

    def forget(self) -> None:
        """In a forked child: drop the parent's server (its pipes are shared) and start one's own when needed."""
        process, self.process = self.process, None
        self.lock = threading.Lock()
        if process is not None:
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()  # this process's copies only; the parent keeps talking to its server


def _read_line(stream: IO[bytes], deadline: float) -> bytes | None:
    """One reply line from the server, or None if it does not come before the deadline."""
    import select

    fd = stream.fileno()
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)


_SERVER = _Server()
os.register_at_fork(after_in_child=_SERVER.forget)  # two workers writing to one server would swap answers
_SERVER_GRACE = 10.0  # seconds the server may take besides the child's own time


def _one_shot(request: dict[str, Any], timeout: float) -> bytes | None:
    """Where there is no fork (Windows): one fresh process per file, killed after `timeout`."""
    try:
        done = subprocess.run(
            _command("--once"), input=json.dumps(request).encode("utf-8"),
            capture_output=True, timeout=timeout, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return _failure("time_limit", f"HDF5 metadata not read within {timeout:.0f} s")
    return done.stdout or _failure("unreadable", f"HDF5 reader died (exit code {done.returncode})")


def run_probe(path: str, max_attr_bytes: int, max_items: int, timeout: float) -> dict[str, Any] | ProbeFailure:
    """The HDF5 metadata of `path`, read in a child process that is killed after `timeout` seconds."""
    request = {"path": path, "max_attr": max_attr_bytes, "max_items": max_items, "timeout": timeout}
    reply = _SERVER.ask(request, timeout) if hasattr(os, "fork") else _one_shot(request, timeout)
    if reply is None:
        return ProbeFailure("unreadable", "the HDF5 reader process did not answer")
    try:
        answer = json.loads(reply)
    except ValueError:
        return ProbeFailure("unreadable", "the HDF5 reader's answer is not JSON")
    if not isinstance(answer, dict):
        return ProbeFailure("unreadable", "the HDF5 reader's answer is not an object")
    if "failure" in answer:
        return ProbeFailure(str(answer["failure"]), str(answer.get("reason", ""))[:200])
    if "fatal" in answer:
        return ProbeFailure("unreadable", str(answer["fatal"])[:200])
    return answer


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        _serve()
    elif sys.argv[1:] == ["--once"]:
        sys.stdout.buffer.write(_answer(json.loads(sys.stdin.buffer.read())))
    else:  # manual use: python src/wscan/scanners/hdf5_probe.py FILE
        json.dump(probe(sys.argv[1], 64 << 20, 100_000), sys.stdout, indent=1)
