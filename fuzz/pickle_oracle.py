"""A differential oracle for the pickle scanner: which globals CPython's unpicklers resolve, without running any.

`resolved(data, loader)` loads `data` with a subclass of CPython's C `pickle.Unpickler` ("c", "c-buffered") or of the
pure-Python `pickle._Unpickler` ("python", which joblib and pandas' fallback use) whose `find_class` records the
(module, name) it is asked for and returns `Stub`, a class whose instances accept any call, state, item, append,
extend or add; `persistent_load` returns a `Stub` too. So the load calls nothing real: every callable the stream can
reach is a stub, and the stream's own values are built-in containers and constants.

Guards: the stream is cut before the first opcode whose declared length runs past the data (the C unpickler
allocates BINBYTES8's length before it reads) or whose memo index is huge (the C unpickler's memo is an array sized
by the index): the real unpickler fails at the first, so names before it are the same, and past the second the oracle
only sees fewer names. Each load runs under a low recursion limit. Concatenated pickles are loaded one after the
other, each by a fresh unpickler, while each one ends with STOP (at most `MAX_LOADS`; five for a legacy torch.save
file, whose sixth part is raw storage bytes).

`missing(data, observations)` is the property: every name a loader resolved appears among wscan's `pickle.import`
observations of the same bytes, after the Python 2 name mapping find_class applies below protocol 3. Names that are
not dotted identifiers (`os` / `syst\\em`) are left out: no import or getattr finds them.
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
import struct
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from wscan.model import Observation
from wscan.parallel import cap_memory

LOADERS = ("c", "c-buffered", "python")
MAX_LOADS = 64
MAX_MEMO_INDEX = 1 << 20
LEGACY_TORCH_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19."
RECURSION_HEADROOM = 300
MEMORY_HEADROOM = 512 << 20  # bytes the loads of one input may allocate (`_memory_capped`)
IMPORT_OPS = frozenset(b"ci\x93\x82\x83\x84")  # GLOBAL, INST, STACK_GLOBAL, EXT1/2/4
_LENGTHS = {-2: "<B", -3: "<i", -4: "<I", -5: "<Q"}  # pickletools' TAKEN_FROM_ARGUMENT1/4/4U/8U


class Stub:
    """What every resolved name becomes: callable, and its instances take whatever the unpickler gives them."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Stub:
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Stub:
        return Stub()

    def __setstate__(self, state: Any) -> None:
        pass

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def append(self, value: Any) -> None:
        pass

    def extend(self, values: Any) -> None:
        pass

    def add(self, value: Any) -> None:
        pass


@dataclass(frozen=True)
class Resolved:
    """One find_class call: the names as the stream wrote them, and as find_class maps them (None: unknown)."""

    loader: str
    module: str
    name: str
    protocol: int | None  # the protocol in force when it was resolved; None when the oracle cannot tell

    @property
    def resolvable(self) -> bool:
        """Whether the lookup can find anything: a module and an attribute path that are (dotted) identifiers. Other
        text fails in the import or in getattr (no module defines `syst\\em`), so wscan need not report it."""
        return all(part.isidentifier() for part in (*self.module.split("."), *self.name.split(".")))

    @property
    def raw(self) -> str:
        return f"{self.module}.{self.name}"

    def candidates(self) -> set[str]:
        """The dotted names find_class looks up: mapped below protocol 3 (fix_imports), as written from 3 on."""
        mapped = "{}.{}".format(*map_py2(self.module, self.name))
        if self.protocol is None:
            return {self.raw, mapped}
        return {mapped if self.protocol < 3 else self.raw}


def map_py2(module: str, name: str) -> tuple[str, str]:
    """pickle's fix_imports mapping of Python 2 names (find_class, protocols 0-2)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        found: tuple[str, str] = _compat_pickle.NAME_MAPPING[(module, name)]
        return found
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


@dataclass
class Walk:
    """What a plain walk over the opcodes tells before any load: where to cut, and the protocol at each import."""

    cut: int
    import_protocols: list[int]
    stop_inside_frame: bool = False  # a STOP with bytes of its frame after it: where the next load starts varies


def walk(data: bytes, skip_frame_rest: bool = True) -> Walk:
    """Step over every opcode as the unpickler parses it (through STOP, for the pickles after it), without building
    anything: the offset of the first opcode a load must not reach, and the protocol at each import opcode. After a
    STOP inside a frame the next load starts at the frame's end (`skip_frame_rest`: the pure-Python unpickler, the C
    one on a file without `peek`), or right after the STOP (the C one on a buffered file, for a small frame)."""
    codes = pickle_codes()
    at, proto, protocols, frame_end, inside = 0, 0, [], -1, False
    end = len(data)
    while at < end:
        code = data[at]
        op = codes.get(code)
        if op is None:
            return Walk(at, protocols, inside)  # the unpickler refuses it; nothing after it runs
        start, at = at, at + 1
        if code in IMPORT_OPS:
            protocols.append(proto)
        arg = op.arg
        if arg is None:
            if code == 0x2E:  # STOP: the next pickle starts afresh at protocol 0, after the frame (see `resolved`)
                proto = 0
                if frame_end > at:
                    inside = True
                    at = frame_end if skip_frame_rest else at
                frame_end = -1
            continue
        if arg.n >= 0:
            if at + arg.n > end:
                return Walk(start, protocols, inside)
            value = data[at : at + arg.n]
            at += arg.n
            if code == 0x80:
                proto = value[0]
            elif code == 0x72 and struct.unpack("<I", value)[0] > MAX_MEMO_INDEX:  # LONG_BINPUT
                return Walk(start, protocols, inside)
            elif code == 0x95:  # FRAME
                length = struct.unpack("<Q", value)[0]
                if length > end - at:
                    return Walk(start, protocols, inside)
                frame_end = max(frame_end, at + length)
            continue
        if arg.n == -1:  # one line (two for GLOBAL and INST)
            lines = 2 if code in (0x63, 0x69) else 1
            for _ in range(lines):
                newline = data.find(b"\n", at)
                if newline < 0:
                    return Walk(start, protocols, inside)
                line, at = data[at:newline], newline + 1
            if code == 0x70 and _memo_index(line) is None:  # PUT
                return Walk(start, protocols, inside)
            continue
        fmt = _LENGTHS[arg.n]
        width = struct.calcsize(fmt)
        if at + width > end:
            return Walk(start, protocols, inside)
        (length,) = struct.unpack(fmt, data[at : at + width])
        at += width
        if length < 0 or length > end - at:
            return Walk(start, protocols, inside)
        at += length
    return Walk(end, protocols, inside)


def _memo_index(line: bytes) -> int | None:
    """PUT's index as the unpickler reads it, when it is small enough to load safely."""
    text = line.split(b"\x00", 1)[0]
    try:
        index = int(text)
    except ValueError:
        return 0  # the unpickler refuses it: nothing to guard
    return index if index <= MAX_MEMO_INDEX else None


_CODES: dict[int, Any] = {}


def pickle_codes() -> dict[int, Any]:
    if not _CODES:
        import pickletools

        _CODES.update({op.code.encode("latin-1")[0]: op for op in pickletools.opcodes})
    return _CODES


def _recording(base: type[Any], loader: str, found: list[Resolved], protocols: list[int] | None) -> Any:
    class Recording(base):  # type: ignore[misc, valid-type]
        def find_class(self, module: str, name: str) -> type[Stub]:
            if loader == "python":
                protocol: int | None = self.proto
            else:  # the C unpickler does not show its protocol: the walk's, for the k-th import opcode
                k = len(found)
                protocol = protocols[k] if protocols is not None and k < len(protocols) else None
            found.append(Resolved(loader, module, name, protocol))
            return Stub

        def persistent_load(self, pid: Any) -> Stub:
            return Stub()

    return Recording


def _depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    return depth


@contextmanager
def _memory_capped() -> Iterator[None]:
    """Loads allocate at most MEMORY_HEADROOM past what this process holds (the scan workers' cap, `cap_memory`):
    CPython builds what a stream says, and a 606-byte input made the three loads take 17 GB (the CI fuzz run of stop
    32). Past it a load fails with MemoryError, like any other error; the limit before is restored after."""
    try:
        import resource
    except ImportError:
        yield
        return
    before = resource.getrlimit(resource.RLIMIT_DATA)
    capped = cap_memory(MEMORY_HEADROOM)
    try:
        yield
    finally:
        if capped:
            resource.setrlimit(resource.RLIMIT_DATA, before)


def resolved(data: bytes, loader: str) -> list[Resolved]:
    """Every find_class call of `loader` on `data`, in order, until a load fails or the data ends. Each pickle is
    loaded by a fresh unpickler, as `pickle.load(f)` called again on the same file does (torch's legacy reader):
    "c" is `pickle.load` on a BytesIO, "c-buffered" on a file opened for reading (which has `peek`), "python"
    `pickle._Unpickler(f).load()`."""
    plan = walk(data, skip_frame_rest=loader != "c-buffered")
    protocols: list[int] | None = plan.import_protocols
    if loader == "c-buffered" and plan.stop_inside_frame:
        protocols = None  # where the next load starts depends on the frame's size
    found: list[Resolved] = []
    base = pickle._Unpickler if loader == "python" else pickle.Unpickler  # type: ignore[attr-defined]
    memory = io.BytesIO(data[: plan.cut])
    file: io.BytesIO | io.BufferedReader = io.BufferedReader(memory) if loader == "c-buffered" else memory
    recording = _recording(base, loader, found, protocols)
    loads = 5 if data.startswith(LEGACY_TORCH_MAGIC) else MAX_LOADS
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(_depth() + RECURSION_HEADROOM)
    try:
        with _memory_capped():
            for _ in range(loads):
                if file.tell() >= plan.cut:
                    break
                try:
                    recording(file).load()
                except Exception:  # an error, the end of the data, memory: what was resolved so far stands
                    break
    finally:
        sys.setrecursionlimit(old)
    return found


def reported(observations: Iterable[Observation]) -> set[str]:
    """The dotted names wscan reports as resolved: each pickle.import's (mapped) name and its name as written."""
    names: set[str] = set()
    for obs in observations:
        if obs.kind == "pickle.import":
            names.add(f"{obs.attrs.get('module')}.{obs.attrs.get('name')}")
        elif obs.kind == "pickle.nested_torch_load":  # the loader's calls, reported by what each call loads
            names.add(str(obs.attrs.get("callable")))
    return names


def missing(data: bytes, observations: Iterable[Observation], loaders: Iterable[str] = LOADERS) -> list[Resolved]:
    """The names a loader resolved that wscan does not report (empty: the property holds for these names)."""
    names = reported(observations)
    gaps: list[Resolved] = []
    for loader in loaders:
        for item in resolved(data, loader):
            if item.resolvable and not item.candidates() & names and item not in gaps:
                gaps.append(item)
    return gaps
