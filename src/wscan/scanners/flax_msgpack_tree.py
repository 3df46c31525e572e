"""Walk a Flax msgpack checkpoint (`flax_model.msgpack`) the way `flax.serialization.msgpack_restore` reads it.

Flax writes a state dict with `msgpack.packb`: maps of string keys, each array an extension value (code 1: a
nested msgpack `[shape, dtype name, bytes]`; code 3 the same for a NumPy scalar; code 2 a complex number), and an
array above 1 GiB as a map of chunks (`__msgpack_chunked_array__`). Loading it runs no code, so what can go wrong
is what a loader does with lengths, shapes and bytes it trusts: msgpack refuses a malformed or over-nested file,
NumPy refuses an array whose bytes do not fill its shape, and an extension Flax does not define, a byte string or
bytes after the object reach the loaded tree, or the disk, as data nobody reviewed.

The `msgpack` package is not used to read the file: it builds every object whole, tensor bytes included (a
checkpoint of gigabytes in memory). This walker reads only the structure (keys, headers, shapes and dtype names)
and skips over tensor bytes, under the header limit and the file's clock. tests/scanners/test_flax_msgpack.py checks
it against `msgpack` and Flax's own array decoding on real and generated files.
"""

from __future__ import annotations

import codecs
import hashlib
import math
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from wscan.limits import BudgetExceeded
from wscan.model import AttrValue
from wscan.scanners.problems import Problem

MSGPACK_MAX_DEPTH = 1024  # msgpack's C unpacker: a 1,025th open array or map is a StackError
NUMPY_MAX_DIMS = 64  # ndarray.reshape refuses more
CHUNKED_MARKER = "__msgpack_chunked_array__"
ARRAY_CODE, COMPLEX_CODE, SCALAR_CODE, TIMESTAMP_CODE = 1, 2, 3, -1
MAX_PROBLEMS = 1000  # then the walk stops and says so: a file of 200,000 bad values is judged on its first ones
MAX_COLLECTED = 1 << 16  # entries kept of a chunked array's `shape` or `chunks` map; more are not judged
FLAX_MAX_MAP_DEPTH = 256  # Flax's `_unchunk_array_leaves_in_place` recurses per map: Python's limit (1,000) stops it
MIN_BLOB = 12  # bytes of the shortest pickle that imports (`cos\nsystem\n.`): shorter values are not scanned
_PLAIN_TEXT = frozenset(range(0x20, 0x7F))  # a key or value of only these is a name, not something a loader reads
KEPT_KEY_BYTES = 4096  # a longer key is told apart by its SHA-256
_CHUNK = 64 * 1024
_TICK_EVERY = 4096  # values between two looks at the clock
# Item sizes of the dtype names Flax writes (`ndarray.dtype.name`) that `np.dtype` reads back: NumPy's numeric
# types, and those ml_dtypes (which JAX imports) registers under its names, 0.7.0; all of them one byte per value.
DTYPE_SIZES: dict[str, int] = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
    "float16": 2, "float32": 4, "float64": 8, "complex64": 8, "complex128": 16,
    "bfloat16": 2, "complex32": 4, "bcomplex32": 4, "float128": 16, "complex256": 32,
    **{name: 1 for name in (
        "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
        "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e5m3fnu", "float8_e8m0fnu",
        "int1", "int2", "int4", "uint1", "uint2", "uint4")},
}  # fmt: skip

_TIME_DTYPE = re.compile(r"(?:datetime64|timedelta64)\[\d*(?:Y|M|W|D|h|m|s|ms|us|ns|ps|fs|as)\]")
INTP_MAX = 2**63 - 1  # NumPy's largest dimension and array size in bytes, on 64-bit platforms


def dtype_size(name: str) -> int | None:
    """The item size of a dtype name Flax writes (`ndarray.dtype.name`), or None for one it does not."""
    size = DTYPE_SIZES.get(name)
    if size is None and _TIME_DTYPE.fullmatch(name):
        return 8  # datetime64 and timedelta64, whatever their unit
    return size


_INT_FORMATS = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}
_FIXEXT_SIZES = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}


@dataclass(frozen=True, slots=True)
class Caps:
    """The caps the walk runs under, and a callback that raises when the file's time is up."""

    max_structure_bytes: int  # bytes read that are not tensor data: keys, headers, strings
    check_time: Callable[[], None] | None = None
    max_blobs: int = 100_000  # values scanned as blobs of their own; past this, the rest are counted
    leaf_names: bool = False  # list every leaf as transformers flattens it (`shards` compares them with an index)


@dataclass(frozen=True, slots=True)
class ArrayInfo:
    """An array extension as Flax would decode it."""

    dtype: str
    shape: tuple[int, ...]


@dataclass(slots=True)
class ParsedMsgpack:
    """What the walk found; `complete` once the whole object was read and nothing follows it unread."""

    problems: list[Problem] = field(default_factory=list)
    blobs: list[tuple[int, int]] = field(default_factory=list)  # (start, length) of byte strings and texts to scan
    blobs_over: int = 0  # blobs past Caps.max_blobs, not scanned
    arrays: int = 0
    parameters: int = 0
    nbytes: int = 0  # of every array's data, as transformers counts an index's total_size
    leaves: list[str] = field(default_factory=list)  # "a/b/c" per value that is not a map (with Caps.leaf_names)
    dtypes: set[str] = field(default_factory=set)
    complete: bool = False
    stopped: bool = False  # MAX_PROBLEMS reached
    over_budget: BudgetExceeded | None = None


class _Stop(Exception):
    """The walk cannot go on: msgpack itself would stop here, or a cap was reached."""

    def __init__(self, problem: Problem | None = None) -> None:
        super().__init__(problem.kind if problem else "stopped")
        self.problem = problem


def _problem(kind: str, offset: int, hidden: tuple[int, int] | None = None, **attrs: AttrValue) -> Problem:
    return Problem(f"flax.{kind}", offset, attrs, hidden)


def _malformed(offset: int, reason: str) -> _Stop:
    return _Stop(_problem("malformed", offset, reason=reason))


class _Stream:
    """Reads forward through a buffer; skipped bytes (tensor data) are never read, structure bytes are counted."""

    def __init__(self, raw: BinaryIO, size: int, caps: Caps) -> None:
        self._raw = raw
        self.size = size
        self._cap = caps.max_structure_bytes
        self.pos = 0
        self.read_bytes = 0
        self._buf = b""
        self._buf_at = 0
        self._raw_at = 0

    def take(self, n: int, end: int) -> bytes:
        """`n` bytes at `pos`, which must end by `end` (the file's end, or an extension's)."""
        if self.pos + n > end:
            raise _malformed(self.pos, f"truncated: {n} bytes needed, {max(0, end - self.pos)} left")
        self.read_bytes += n
        if self.read_bytes > self._cap:
            raise _Stop(_problem("over_limit", self.pos, limit=self._cap))
        start = self.pos - self._buf_at
        if start < 0 or start + n > len(self._buf):
            self._refill(n)
            start = 0
        self.pos += n
        return self._buf[start : start + n]

    def _refill(self, n: int) -> None:
        start = self.pos - self._buf_at
        kept = self._buf[start:] if 0 <= start < len(self._buf) else b""
        if not kept and self._raw_at != self.pos:
            self._raw.seek(self.pos)
            self._raw_at = self.pos
        want = min(max(n, _CHUNK), self.size - self.pos) - len(kept)
        data = self._raw.read(want) if want > 0 else b""
        self._raw_at += len(data)
        self._buf, self._buf_at = kept + data, self.pos
        if len(self._buf) < n:
            raise _malformed(self.pos, f"the file ends {len(self._buf)} bytes into a {n}-byte field")

    def skip(self, n: int, end: int) -> None:
        if self.pos + n > end:
            raise _malformed(self.pos, f"truncated: {n} bytes needed, {max(0, end - self.pos)} left")
        self.pos += n

    def unpack(self, fmt: str, end: int) -> int:
        value: int = struct.unpack(fmt, self.take(struct.calcsize(fmt), end))[0]
        return value


# What one msgpack value header says: its kind and, by kind, its value, element count or byte length.
_Header = tuple[str, object]


def _header(stream: _Stream, end: int) -> _Header:
    """Read one value's header: scalars whole, containers' counts, strings' and binaries' lengths, an extension's
    (code, length). The payloads of str, bin and ext are left to the caller."""
    at = stream.pos
    first = stream.take(1, end)[0]
    if first <= 0x7F or first >= 0xE0:
        return "int", first if first <= 0x7F else first - 0x100
    if 0x80 <= first <= 0x8F:
        return "map", first & 0x0F
    if 0x90 <= first <= 0x9F:
        return "array", first & 0x0F
    if 0xA0 <= first <= 0xBF:
        return "str", first & 0x1F
    if first == 0xC0:
        return "nil", None
    if first in (0xC2, 0xC3):
        return "bool", first == 0xC3
    if first in _INT_FORMATS:
        return "int", stream.unpack(_INT_FORMATS[first], end)
    if first == 0xCA:
        return "float", struct.unpack(">f", stream.take(4, end))[0]
    if first == 0xCB:
        return "float", struct.unpack(">d", stream.take(8, end))[0]
    if first in (0xC4, 0xC5, 0xC6):
        return "bin", stream.unpack((">B", ">H", ">I")[first - 0xC4], end)
    if first in (0xD9, 0xDA, 0xDB):
        return "str", stream.unpack((">B", ">H", ">I")[first - 0xD9], end)
    if first in (0xDC, 0xDD):
        return "array", stream.unpack(">H" if first == 0xDC else ">I", end)
    if first in (0xDE, 0xDF):
        return "map", stream.unpack(">H" if first == 0xDE else ">I", end)
    if first in _FIXEXT_SIZES:
        return "ext", (stream.unpack(">b", end), _FIXEXT_SIZES[first])
    if first in (0xC7, 0xC8, 0xC9):
        length = stream.unpack((">B", ">H", ">I")[first - 0xC7], end)
        return "ext", (stream.unpack(">b", end), length)
    raise _malformed(at, f"byte 0x{first:02x} is not a msgpack type (msgpack refuses it)")


def _text(stream: _Stream, length: int, end: int, keep: int) -> tuple[str | tuple[str, bytes], bool]:
    """A str value checked as msgpack decodes it (strict UTF-8), read a chunk at a time: the text up to `keep`
    bytes, or for a longer one its SHA-256 (enough to tell keys apart); and whether it is worth scanning as a blob
    (a protocol-0 pickle is UTF-8 text: anything but a short printable name)."""
    at = stream.pos
    if length <= keep:
        data = stream.take(length, end)
        try:
            return data.decode("utf-8"), length >= MIN_BLOB and not set(data) <= _PLAIN_TEXT
        except UnicodeDecodeError:
            raise _malformed(at, "a string that is not UTF-8 (msgpack refuses it)") from None
    decoder = codecs.getincrementaldecoder("utf-8")()
    digest = hashlib.sha256()
    left = length
    try:
        while left:
            part = stream.take(min(left, _CHUNK), end)
            decoder.decode(part, final=left == len(part))
            digest.update(part)
            left -= len(part)
    except UnicodeDecodeError:
        raise _malformed(at, "a string that is not UTF-8 (msgpack refuses it)") from None
    return ("str", digest.digest()), True


@dataclass(slots=True)
class _Frame:
    """An open array or map; for a map, its keys so far and, for a chunked array, the parts `_unchunk` reads."""

    is_map: bool
    left: int  # items still to read (a map's keys and values counted separately)
    path: str
    keys: set[object] = field(default_factory=set)
    key: object = None
    collect: bool = False  # this map is a `shape` or `chunks` map: keep what its values are
    collected: dict[object, object] = field(default_factory=dict)
    shape: dict[object, object] | None = None
    chunks: dict[object, object] | None = None
    at: int = 0


_NOT_COLLECTED = object()  # a value of a kind `_unchunk` cannot use (or one not kept)
_OVER = object()  # key of a collected map that held more than MAX_COLLECTED entries


class _Walker:
    def __init__(self, stream: _Stream, caps: Caps, result: ParsedMsgpack) -> None:
        self.stream = stream
        self.caps = caps
        self.result = result
        self.values = 0
        self.too_deep = False

    def problem(self, kind: str, offset: int, hidden: tuple[int, int] | None = None, **attrs: AttrValue) -> None:
        if attrs.get("name") == "":
            attrs["name"] = "(top level)"
        self.result.problems.append(_problem(kind, offset, hidden, **attrs))
        if len(self.result.problems) >= MAX_PROBLEMS:
            self.result.stopped = True
            raise _Stop()

    def run(self) -> None:
        stream, end = self.stream, self.stream.size
        stack: list[_Frame] = []
        while True:
            self.values += 1
            if self.caps.check_time is not None and not self.values % _TICK_EVERY:
                self.caps.check_time()
            at = stream.pos
            parent = stack[-1] if stack else None
            as_key = parent is not None and parent.is_map and parent.left % 2 == 0
            kept = parent is not None and parent.is_map and not as_key and parent.key in ("shape", "chunks")
            path = parent.path if as_key and parent is not None else _child_path(parent)
            kind, info = _header(stream, end)
            value: object = _NOT_COLLECTED
            if kind in ("map", "array"):
                if as_key:  # msgpack builds the key, then cannot hash it
                    raise _malformed(at, f"a map key that is {'a map' if kind == 'map' else 'an array'} (msgpack "
                                         "refuses an unhashable key)")
                if len(stack) >= MSGPACK_MAX_DEPTH:
                    raise _malformed(at, f"nested deeper than {MSGPACK_MAX_DEPTH} arrays and maps (msgpack refuses)")
                if kind == "map" and not self.too_deep and sum(f.is_map for f in stack) >= FLAX_MAX_MAP_DEPTH:
                    self.too_deep = True
                    self.problem("too_deep", at, name=path[:300], depth=FLAX_MAX_MAP_DEPTH)
                count = _count(info)
                if count:
                    stack.append(_Frame(kind == "map", count * 2 if kind == "map" else count, path, collect=kept,
                                        at=at))
                    continue
                if kind == "map" and kept:
                    value = {}
            elif kind == "str":
                start = stream.pos
                value, worth = _text(stream, _count(info), end, KEPT_KEY_BYTES)
                if worth:
                    self._blob(start, stream.pos - start)
            elif kind == "bin":
                length = _count(info)
                start = stream.pos
                if as_key:
                    data = stream.take(length, end)
                    value = data if length <= KEPT_KEY_BYTES else ("bin", hashlib.sha256(data).digest())
                else:
                    stream.skip(length, end)
                if length >= MIN_BLOB:
                    self._blob(start, length)
            elif kind == "ext":
                code, length = _ext_header(info)
                if as_key:  # msgpack hashes an ExtType; Flax's hook makes an array of it, which it cannot hash
                    if stream.pos + length > end:
                        raise _malformed(at, f"an extension of {length} bytes past the end of the file")
                    hidden = (stream.pos, length) if length else None
                    _check_code(code, stream, length, end, at)
                    self.problem("bad_array", at, hidden, name=path[:300],
                                 reason=f"a map key that is an extension value (type {code}), which Flax never writes")
                    value = object()
                else:
                    value = self._extension(code, length, at, path)
            else:
                value = info
            if not self._deliver(stack, value, at, kind != "map"):
                break
        if stream.pos < stream.size:
            left = stream.size - stream.pos
            self.problem("trailing_data", stream.pos, (stream.pos, left), length=left)
        self.result.complete = True

    def _deliver(self, stack: list[_Frame], value: object, at: int, leaf: bool) -> bool:
        """Hand a complete value to its parent, closing every container it completes; False once the top-level
        object is complete. `leaf`: the value is not a map (flatten_dict stops at it), or a chunked array."""
        while stack:
            frame = stack[-1]
            if frame.is_map and frame.left % 2 == 0:  # `value` is a key
                self._key(frame, value, at)
                frame.left -= 1
                return True
            if frame.is_map:
                self._value(frame, value, leaf)
            frame.left -= 1
            if frame.left:
                return True
            stack.pop()
            value, leaf = _NOT_COLLECTED, not frame.is_map
            if frame.is_map:
                if CHUNKED_MARKER in frame.keys:
                    self._chunked(frame)
                    leaf = True
                if frame.collect:
                    value = frame.collected
        return False

    def _blob(self, start: int, length: int) -> None:
        """Bytes a loaded state holds as data (a byte string, a text that is more than a name): scanned as a blob."""
        if len(self.result.blobs) < self.caps.max_blobs:
            self.result.blobs.append((start, length))
        else:
            self.result.blobs_over += 1

    def _key(self, frame: _Frame, key: object, at: int) -> None:
        if isinstance(key, float) and math.isnan(key):
            key = object()  # NaN keys never equal each other, in a dict as here
        if key in frame.keys:
            self.problem("duplicate_key", at, key=_shown(key), name=frame.path[:300])
        frame.keys.add(key)
        frame.key = key

    def _value(self, frame: _Frame, value: object, leaf: bool) -> None:
        if leaf and self.caps.leaf_names:
            self.result.leaves.append(_child_path(frame))
        if frame.collect:
            if len(frame.collected) < MAX_COLLECTED:
                frame.collected[frame.key] = value
            else:
                frame.collected[_OVER] = True
        if frame.key == "shape":
            frame.shape = value if isinstance(value, dict) else None
        elif frame.key == "chunks":
            frame.chunks = value if isinstance(value, dict) else None

    def _chunked(self, frame: _Frame) -> None:
        """`flax.serialization._unchunk`: the shape's and chunks' items by key "0", "1", ...; the chunks put end to end
        (np.concatenate) must fill the shape."""
        reason = ""
        if (frame.shape and _OVER in frame.shape) or (frame.chunks and _OVER in frame.chunks):
            self.problem("bad_chunks", frame.at, name=frame.path[:300],
                         reason=f"more than {MAX_COLLECTED:,} sizes or chunks, which Flax never writes (not checked)")
            return
        sizes = _tuple(frame.shape)
        chunks = _tuple(frame.chunks)
        shape = [dim for dim in sizes or () if type(dim) is int and dim >= 0]
        if sizes is None or len(shape) != len(sizes):
            reason = "its shape is not a map of sizes keyed 0, 1, ..."
        elif chunks is None or not chunks or not all(isinstance(chunk, ArrayInfo) for chunk in chunks):
            reason = "its chunks are not a map of arrays keyed 0, 1, ..."
        elif len(shape) > NUMPY_MAX_DIMS:
            reason = f"{len(shape)} dimensions (NumPy takes {NUMPY_MAX_DIMS})"
        elif math.prod(dim for dim in shape if dim) * max(_item_size(chunk) for chunk in chunks) > INTP_MAX:
            reason = f"a shape of {tuple(shape)}, too big for NumPy even with no values"
        else:
            infos = [chunk for chunk in chunks if isinstance(chunk, ArrayInfo)]
            if len({info.dtype for info in infos}) != 1 or any(len(info.shape) != 1 for info in infos):
                reason = "chunks of different dtypes or not flat, which Flax never writes"
            elif sum(info.shape[0] for info in infos) != math.prod(shape):
                total = sum(info.shape[0] for info in infos)
                reason = f"{total} values in its chunks for a shape of {math.prod(shape)}"
        if reason:
            self.problem("bad_chunks", frame.at, name=frame.path[:300], reason=reason)

    def _extension(self, code: int, length: int, at: int, path: str) -> object:
        stream = self.stream
        start = stream.pos
        end = start + length
        if end > stream.size:
            raise _malformed(at, f"an extension of {length} bytes past the end of the file")
        if code in (ARRAY_CODE, SCALAR_CODE):
            try:
                return self._array(end, path)
            except _Payload as exc:
                self.problem("bad_array", at, (start, length) if length else None, name=path[:300],
                             reason=str(exc))
                return _NOT_COLLECTED
            finally:
                stream.pos = end
        if code == COMPLEX_CODE:
            try:
                self._complex(end)
            except _Payload as exc:
                self.problem("bad_array", at, None, name=path[:300], reason=f"a complex number: {exc}")
            finally:
                stream.pos = end
            return _NOT_COLLECTED
        _check_code(code, stream, length, end, at)
        hidden = (start, length) if length and code != TIMESTAMP_CODE else None
        self.problem("unknown_extension", at, hidden, code=code, length=length, name=path[:300])
        return _NOT_COLLECTED

    def _array(self, end: int, path: str) -> ArrayInfo:
        """`_ndarray_from_bytes`: `msgpack.unpackb(data, raw=True)` must give exactly [shape, dtype name, bytes],
        and `np.frombuffer(bytes, dtype).reshape(shape)` must take every byte."""
        stream = self.stream
        kind, count = _inner(stream, end)
        if kind != "array" or count != 3:
            raise _Payload(f"holds a {kind} of {count} items, not [shape, dtype, bytes]" if kind in ("array", "map")
                           else f"holds a {kind}, not [shape, dtype, bytes]")
        kind, dims = _inner(stream, end)
        if kind != "array":
            raise _Payload(f"its shape is a {kind}, not an array of sizes")
        if _count(dims) > NUMPY_MAX_DIMS:
            raise _Payload(f"{dims} dimensions (NumPy takes {NUMPY_MAX_DIMS})")
        shape: list[int] = []
        for _ in range(_count(dims)):
            kind, size = _inner(stream, end)
            if kind != "int" or not isinstance(size, int) or size < 0:
                raise _Payload("its shape holds something other than sizes (Flax writes non-negative integers)")
            if size > INTP_MAX:
                raise _Payload(f"a dimension of {size}, past what NumPy holds")
            shape.append(size)
        kind, length = _inner(stream, end)
        if kind not in ("str", "bin") or _count(length) > 64:
            raise _Payload("no dtype name where Flax writes one")
        name = _payload_bytes(stream, _count(length), end).decode("latin-1")
        kind, info = _inner(stream, end)
        if kind not in ("str", "bin"):
            raise _Payload(f"its data is a {kind}, not bytes")
        nbytes = _count(info)
        data_at = stream.pos
        if stream.pos + nbytes > end:
            raise _Payload(f"{nbytes} bytes of data in a payload of {end - stream.pos} more")
        stream.pos += nbytes
        if stream.pos != end:
            raise _Payload(f"{end - stream.pos} bytes after [shape, dtype, bytes] (msgpack refuses them)")
        itemsize = dtype_size(name)
        if math.prod(size for size in shape if size) * (itemsize or 1) > INTP_MAX:  # NumPy counts the empty ones too
            raise _Payload(f"a shape of {tuple(shape)}, too big for NumPy even with no values")
        if itemsize is None:  # its bytes may be anything: strings, records: scanned as a blob
            hidden = (data_at, nbytes) if nbytes >= MIN_BLOB else None
            self.problem("unknown_dtype", end, hidden, name=path[:300], dtype=name[:64])
            return ArrayInfo(name, tuple(shape))
        expected = math.prod(shape) * itemsize
        if expected != nbytes:
            raise _Payload(f"{nbytes} bytes of {name} for a shape of {tuple(shape)} ({expected} bytes)")
        self.result.arrays += 1
        self.result.parameters += math.prod(shape)
        self.result.nbytes += expected
        self.result.dtypes.add(name)
        return ArrayInfo(name, tuple(shape))

    def _complex(self, end: int) -> None:
        """`complex(*msgpack.unpackb(data)[:2])`, as Flax writes it: exactly [real, imaginary]."""
        kind, count = _inner(self.stream, end)
        if kind != "array" or count != 2:
            raise _Payload("not [real, imaginary]")
        for _ in range(2):
            kind, _value = _inner(self.stream, end)
            if kind not in ("int", "float"):
                raise _Payload(f"a part that is a {kind}")
        if self.stream.pos != end:
            raise _Payload("bytes after [real, imaginary] (msgpack refuses them)")


class _Payload(Exception):
    """An extension's payload is not what Flax writes or can decode."""


def _inner(stream: _Stream, end: int) -> _Header:
    """One header inside an extension's payload: past the payload's end is the payload's fault, not the file's."""
    try:
        return _header(stream, end)
    except _Stop as exc:
        reason = exc.problem.attrs.get("reason", "") if exc.problem else ""
        if exc.problem is not None and exc.problem.kind == "flax.over_limit":
            raise
        raise _Payload(str(reason) or "cut short") from None


def _item_size(chunk: object) -> int:
    return (dtype_size(chunk.dtype) or 1) if isinstance(chunk, ArrayInfo) else 1


def _payload_bytes(stream: _Stream, n: int, end: int) -> bytes:
    if stream.pos + n > end:
        raise _Payload(f"a field of {n} bytes past the payload's end")
    return stream.take(n, end)


def _count(info: object) -> int:
    """A header's count or length (an int for the kinds that have one)."""
    assert isinstance(info, int)
    return info


def _ext_header(info: object) -> tuple[int, int]:
    assert isinstance(info, tuple)
    code, length = info
    return int(code), int(length)


def _check_code(code: int, stream: _Stream, length: int, end: int, at: int) -> None:
    """Step over an extension Flax does not define, where msgpack reads it: types 0 to 127 (Flax's hook returns
    msgpack.ExtType(code, data), which refuses others) and -1, a timestamp msgpack decodes itself."""
    if code < TIMESTAMP_CODE:
        raise _malformed(at, f"an extension of type {code}: msgpack takes types 0 to 127 (and -1, a timestamp)")
    if code == TIMESTAMP_CODE:
        if not _valid_timestamp(stream.take(length, end)):
            raise _malformed(at, f"a timestamp extension of {length} bytes msgpack cannot read")
    else:
        stream.skip(length, end)


def _valid_timestamp(data: bytes) -> bool:
    """What msgpack's Timestamp accepts: 4, 8 or 12 bytes, nanoseconds below a second."""
    if len(data) == 4:
        return True
    if len(data) == 8:
        nanoseconds: int = struct.unpack(">Q", data)[0] >> 34
        return nanoseconds <= 999_999_999
    if len(data) == 12:
        nanoseconds = struct.unpack(">I", data[:4])[0]
        return nanoseconds <= 999_999_999
    return False


def _tuple(items: dict[object, object] | None) -> list[object] | None:
    """`_dict_to_tuple`: the values under "0", "1", ... up to the map's size; None where one is missing."""
    if items is None:
        return None
    found = []
    for index in range(len(items)):
        if str(index) not in items:
            return None
        found.append(items[str(index)])
    return found


def _child_path(parent: _Frame | None) -> str:
    if parent is None:
        return ""
    if parent.is_map:
        return f"{parent.path}/{_shown(parent.key)}" if parent.path else _shown(parent.key)
    return parent.path


def _shown(key: object) -> str:
    if isinstance(key, tuple):
        return "<long key>"
    return str(key)[:100] if isinstance(key, str) else repr(key)[:100]


def walk(raw: BinaryIO, size: int, caps: Caps) -> ParsedMsgpack:
    """Every problem of the file, in order; msgpack's own refusals stop the walk where msgpack would stop."""
    result = ParsedMsgpack()
    try:
        _Walker(_Stream(raw, size, caps), caps, result).run()
    except _Stop as exc:
        if exc.problem is not None:
            result.problems.append(exc.problem)
    except BudgetExceeded as exc:
        result.over_budget = exc
    return result
