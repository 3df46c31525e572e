"""A bounded pickle opcode decoder.

`pickletools` supplies the opcode table, but its `genops` reads every argument whole into memory (a
hostile BINBYTES8 length becomes one huge allocation) and cannot skip. This decoder reads arguments with
explicit caps: large byte arguments are skipped and only a prefix is kept.
"""

from __future__ import annotations

import codecs
import pickletools
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

KEEP_BYTES = 4096  # prefix kept of long bytes/str arguments
MAX_LONG_BYTES = 1024  # bytes of a LONG4 turned into a number; past them only a sign extension is followed
HUGE_LONG = 1 << (8 * MAX_LONG_BYTES + 8)  # what a longer number stands for: past every size and offset
TEXT_CHUNK = 1 << 20  # long text is read through in chunks of this size, never held
INTERPOLATION_SPAN = 128  # bytes kept from each `${` found in long text
MAX_INTERPOLATIONS = 16
MAX_LINE = 64 * 1024  # newline-terminated arguments (protocol 0)

OPCODES: dict[int, pickletools.OpcodeInfo] = {
    ord(op.code.encode("latin-1")): op for op in pickletools.opcodes
}


class PickleSyntaxError(Exception):
    """The stream is not a valid opcode sequence at `offset`; what came before still ran on load."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"{reason} at byte {offset}")
        self.offset = offset
        self.reason = reason


class Truncated(PickleSyntaxError):
    """The stream ended inside an opcode."""


class FrameOverrun(PickleSyntaxError):
    """An opcode's argument runs past the end of its frame, which unpicklers read in different ways."""


class Unfollowed(PickleSyntaxError):
    """An argument CPython may read but the machine does not follow (a name longer than 64 KiB): never harmless."""


class OverLimit(Truncated):
    """The stream goes on past the pickle size limit: what lies beyond was not read, so it is never harmless."""


@dataclass(frozen=True, slots=True)
class LongBytes:
    """A byte or text argument too long to keep: its length and first bytes."""

    length: int
    prefix: bytes
    # For text: every `${` in the part not kept, with what follows it (see `_text_arg`).
    interpolations: tuple[str, ...] = ()
    start: int = -1  # where the whole argument sits in the blob
    text: bool = False  # text (a unicode opcode's argument), not bytes: UTF-8, or as `escaped` says
    escaped: bool = False  # a protocol 0 UNICODE line: raw-unicode-escape, not UTF-8


@dataclass(frozen=True, slots=True)
class LongLine:
    """A newline-terminated argument longer than MAX_LINE: its first bytes, its last byte, its length, and its
    core (the line without surrounding whitespace) when that is short, as a number's must be."""

    length: int
    prefix: bytes
    last: bytes
    core: bytes | None  # None: longer than KEEP_CORE
    core_is_number: bool  # the core (kept or not) holds only characters of a numeric literal
    interpolations: tuple[str, ...]
    start: int  # where the line sits in the blob


KEEP_CORE = 8192


class _LineReader:
    """Reads a long line in pieces, keeping only what LongLine holds."""

    def __init__(self) -> None:
        self.length = 0
        self.prefix = b""
        self.last = b""
        self.core = bytearray()
        self.core_long = False
        self.core_is_number = True
        self.core_ended = False  # a NUL came: what follows is no part of a number
        self.found: list[str] = []
        self.carry = b""

    def feed(self, piece: bytes) -> None:
        if not piece:
            return
        if len(self.prefix) < KEEP_BYTES:
            self.prefix += piece[: KEEP_BYTES - len(self.prefix)]
        self.length += len(piece)
        self.last = piece[-1:]
        body = b"" if self.core_ended else piece if self.core else piece.lstrip()
        if b"\0" in body:  # a number ends there for CPython's readers (C strings); the rest is never read
            body = body[: body.index(b"\0")]
            self.core_ended = True
        if body and not self.core_long:
            self.core += body
            if len(self.core.rstrip()) > KEEP_CORE:
                self.core_long = True
                self.core_is_number = self.core_is_number and _NUMBERISH.fullmatch(bytes(self.core)) is not None
                self.core = bytearray(b"x")  # non-empty: what follows is not leading whitespace
        elif body and self.core_is_number:
            self.core_is_number = _NUMBERISH.fullmatch(body.rstrip()) is not None
        window = self.carry + piece
        at = window.find(b"${")
        while at != -1 and len(self.found) < MAX_INTERPOLATIONS:
            self.found.append(window[at : at + INTERPOLATION_SPAN].decode("utf-8", "replace"))
            at = window.find(b"${", at + 2)
        self.carry = window[-INTERPOLATION_SPAN:]

    def result(self, start: int) -> LongLine:
        core = None if self.core_long else bytes(self.core).rstrip()
        is_number = self.core_is_number and (core is None or _NUMBERISH.fullmatch(core) is not None)
        found = tuple(dict.fromkeys(self.found))
        return LongLine(self.length, self.prefix, self.last, core, is_number, found, start)


# The characters of an int or float literal (hex, octal, binary, underscores, exponent, LONG's L)
_NUMBERISH = re.compile(rb"[+-]?[0-9a-fA-FxXoObBL_.eE+-]*\s*")

Arg = int | float | str | bytes | bool | None | tuple[str, str] | LongBytes


class Stream:
    """Position-tracking reader over a binary file that may be read forward only.

    Small reads come out of one buffer with a single bounds check against `_cap`: the buffer index at which
    the size limit would be passed (limit + skipped bytes - buffer start). The VM reads an opcode or a few
    argument bytes millions of times, so this path stays short.
    """

    __slots__ = ("_buf", "_cap", "_i", "_pos", "_raw", "_skipped", "base", "limit", "op_at", "size")

    def __init__(self, raw: BinaryIO, limit: int, base: int = 0, size: int | None = None) -> None:
        self._raw = raw
        self._buf = b""
        self._pos = 0  # offset of _buf[0] relative to the stream start
        self._i = 0  # index into _buf
        self.base = base  # offset of the stream start inside the artifact
        self.limit = limit  # opcode and argument bytes that may be read (skipped payload is not counted)
        self.size = size  # bytes available from the stream start, when known: lets skip() seek
        self._skipped = 0
        self._cap = limit
        self.op_at = 0  # offset of the last opcode byte read by opcode()

    @property
    def offset(self) -> int:
        return self._pos + self._i

    def _moved(self) -> None:
        self._cap = self.limit + self._skipped - self._pos

    def _fill(self, need: int) -> bool:
        """Make `need` bytes available at _i; False at end of data."""
        while len(self._buf) - self._i < need:
            chunk = self._raw.read(max(65536, need - (len(self._buf) - self._i)))
            if not chunk:
                return False
            self._pos += self._i
            self._buf = self._buf[self._i :] + chunk
            self._i = 0
            self._moved()
        return True

    def at_end(self) -> bool:
        return self._i >= len(self._buf) and not self._fill(1)

    def opcode(self) -> int:
        """The next byte as an opcode; -1 at end of data."""
        i = self._i
        if i >= len(self._buf):
            if not self._fill(1):
                return -1
            i = self._i
        at = self._pos + i
        if i >= self._cap:
            raise OverLimit(self.base + at, "argument of 1 bytes exceeds the pickle size limit")
        self.op_at = at
        self._i = i + 1
        return self._buf[i]

    def read_byte(self) -> int:
        """One argument byte (uint1 lengths, memo keys and small ints: the most common argument)."""
        i = self._i
        if i >= self._cap:
            raise OverLimit(self.base + self._pos + i, "argument of 1 bytes exceeds the pickle size limit")
        if i >= len(self._buf):
            if not self._fill(1):
                raise Truncated(self.base + self._pos + i, "stream ends inside a 1-byte read")
            i = self._i
        self._i = i + 1
        return self._buf[i]

    def take_run(self, run: re.Pattern[bytes]) -> bytes:
        """The bytes `run` matches at the current position, consumed; only what the buffer already holds and the
        size limit allows (the next opcode is read the usual way, with its refill and its errors)."""
        match = run.match(self._buf, self._i, min(len(self._buf), self._cap))
        if match is None:
            return b""
        self._i = match.end()
        return match.group()

    def rewind(self, n: int) -> None:
        """Give back the last `n` bytes taken from the buffer (by take_run)."""
        self._i -= n

    def peek(self, n: int) -> bytes:
        self._fill(n)
        return self._buf[self._i : self._i + n]

    def read(self, n: int) -> bytes:
        i = self._i
        j = i + n
        if j > self._cap:
            raise OverLimit(self.base + self._pos + i, f"argument of {n} bytes exceeds the pickle size limit")
        if j > len(self._buf):
            start = self._pos + i  # before the refill, which moves _pos even when it then runs out
            if not self._fill(n):
                raise Truncated(self.base + start, f"stream ends inside a {n}-byte read")
            i = self._i
            j = i + n
        self._i = j
        return self._buf[i:j]

    def skip(self, n: int) -> None:
        """Advance without keeping the bytes (tensor payloads): seek when possible, never hold them."""
        start = self.offset
        self._skipped += n
        self._moved()
        buffered = len(self._buf) - self._i
        if self.size is not None and n > buffered and self._raw.seekable():
            if start + n > self.size:
                raise Truncated(self.base + start, f"stream ends inside a {n}-byte argument")
            self._raw.seek(self.base + start + n)
            self._pos, self._buf, self._i = start + n, b"", 0
            self._moved()
            return
        remaining = n
        while remaining:
            if not self._fill(1):
                raise Truncated(self.base + start, f"stream ends inside a {n}-byte argument")
            take = min(remaining, len(self._buf) - self._i)
            self._i += take
            remaining -= take

    def readline(self) -> bytes | LongLine:
        """A newline-terminated argument; one longer than MAX_LINE is read through (CPython reads lines of any
        length) and comes back as a LongLine, which keeps what the argument's readers need."""
        start = self.offset
        while True:
            end = self._buf.find(b"\n", self._i)
            if end >= 0:
                line = self._buf[self._i : end]
                self._i = end + 1
                return line
            if len(self._buf) - self._i > MAX_LINE:
                return self._long_line(start)
            if not self._fill(len(self._buf) - self._i + 1):
                raise Truncated(self.base + start, "stream ends inside a line argument")

    def _long_line(self, start: int) -> LongLine:
        line = _LineReader()
        while True:
            end = self._buf.find(b"\n", self._i)
            stop = end if end >= 0 else len(self._buf)
            line.feed(bytes(self._buf[self._i : stop]))
            self._i = stop
            if end >= 0:
                self._i = end + 1
                return line.result(self.base + start)
            if self._i >= self._cap or not self._fill(1):
                raise Truncated(self.base + start, "stream ends inside a line argument")


def _bytes_arg(stream: Stream, n: int) -> bytes | LongBytes:
    if n < 0:
        raise PickleSyntaxError(stream.base + stream.offset, "negative length")
    if n <= KEEP_BYTES:
        return stream.read(n)
    start = stream.base + stream.offset
    prefix = stream.read(KEEP_BYTES)
    stream.skip(n - KEEP_BYTES)
    return LongBytes(n, prefix, start=start)


def _text_arg(stream: Stream, n: int) -> str | LongBytes:
    if n > KEEP_BYTES:
        return _long_text(stream, n)
    data = _bytes_arg(stream, n)
    return data.decode("utf-8", "surrogatepass") if isinstance(data, bytes) else data


def _long_text(stream: Stream, n: int) -> LongBytes:
    """A text argument too long to keep, read through rather than skipped: a config interpolation
    (`${eval:...}`) further in would run when OmegaConf resolves the value, so its starts are kept."""
    at = stream.base + stream.offset
    prefix = stream.read(KEEP_BYTES)
    found: list[str] = []
    carry = prefix[-INTERPOLATION_SPAN:]
    remaining = n - KEEP_BYTES
    while remaining:
        chunk = stream.read(min(remaining, TEXT_CHUNK))
        remaining -= len(chunk)
        window = carry + chunk
        start = window.find(b"${")
        while start != -1 and len(found) < MAX_INTERPOLATIONS:
            found.append(window[start : start + INTERPOLATION_SPAN].decode("utf-8", "replace"))
            start = window.find(b"${", start + 2)
        carry = window[-INTERPOLATION_SPAN:]
    return LongBytes(n, prefix, tuple(dict.fromkeys(found)), start=at, text=True)


def _unquote(line: bytes, offset: int) -> bytes:
    """STRING's argument is a Python repr with quotes; decode escapes the way pickle does."""
    if len(line) >= 2 and line[0] == line[-1] and line[:1] in (b"'", b'"'):
        return codecs.escape_decode(line[1:-1])[0]
    raise PickleSyntaxError(offset, "STRING argument is not quoted")


_U2 = struct.Struct("<H").unpack
_I4 = struct.Struct("<i").unpack
_U4 = struct.Struct("<I").unpack
_U8 = struct.Struct("<Q").unpack
_F8 = struct.Struct(">d").unpack


def _at(stream: Stream) -> int:
    return stream.base + stream.offset


def _long4(stream: Stream) -> int:
    start = _at(stream)
    n = int(_I4(stream.read(4))[0])
    if n < 0:
        raise PickleSyntaxError(start, "LONG4 with negative length")
    if n <= MAX_LONG_BYTES:
        return int.from_bytes(stream.read(n), "little", signed=True)
    # Longer: the value is what its first bytes say when the rest only extends the sign (review 49 wrote 1 in 1,025
    # bytes, which this read as 0, to give pyarrow an array length wscan never saw); else a number past any size.
    head = stream.read(MAX_LONG_BYTES)
    filler: int | None = None  # the one byte the rest repeats, if it does
    uniform, last, remaining = True, 0, n - MAX_LONG_BYTES
    while remaining:
        chunk = stream.read(min(remaining, TEXT_CHUNK))
        remaining -= len(chunk)
        if filler is None:
            filler = chunk[0]
        uniform = uniform and not chunk.strip(bytes([filler]))
        last = chunk[-1]
    if uniform and filler in (0, 0xFF):
        return int.from_bytes(head + bytes([filler]), "little", signed=True)
    return -HUGE_LONG if last >= 0x80 else HUGE_LONG


def _long1(stream: Stream) -> int:
    return int.from_bytes(stream.read(stream.read_byte()), "little", signed=True)


def _short_line(stream: Stream, what: str) -> bytes:
    """A line argument that must be short: a module or class name, a persistent id."""
    start = _at(stream)
    line = stream.readline()
    if isinstance(line, LongLine):
        raise Unfollowed(start, f"{what} longer than 64 KiB")
    return line


def _stringnl(stream: Stream) -> bytes | LongBytes:
    start = _at(stream)
    line = stream.readline()
    if isinstance(line, LongLine):
        if line.prefix[:1] in (b"'", b'"') and line.last == line.prefix[:1]:
            return LongBytes(line.length, line.prefix[1:], line.interpolations)
        raise PickleSyntaxError(start, "STRING argument is not quoted")
    return _unquote(line, start)


def _unicodenl(stream: Stream) -> str | LongBytes:
    line = stream.readline()
    if isinstance(line, LongLine):  # pyarrow's buffers at protocol 0, for one: read back and decoded when checked
        return LongBytes(line.length, line.prefix, line.interpolations, start=line.start, text=True, escaped=True)
    return line.decode("raw-unicode-escape")


def decode_text(raw: bytes, source: LongBytes) -> str:
    """A long text argument's bytes, read back from the blob, as the unpickler decodes them (UnicodeDecodeError
    where it fails)."""
    if source.escaped:
        return raw.decode("raw-unicode-escape")
    return raw.decode("utf-8", "surrogatepass")


def _pair(stream: Stream) -> tuple[str, str]:
    module = _short_line(stream, "module name").decode("utf-8", "replace")
    qualname = _short_line(stream, "name").decode("utf-8", "replace")
    return (module, qualname)


def _number_text(line: bytes | LongLine, start: int) -> bytes:
    """The text of a numeric line argument, up to a NUL: CPython reads numbers from the line as a C string
    (strtol, strtod, PyLong_FromString), so `1.0\0anything` is 1.0. A long one is mostly whitespace, which int()
    and float() skip (LongLine's core already ends at a NUL)."""
    if not isinstance(line, LongLine):
        return line.split(b"\0", 1)[0]
    if line.core is not None:
        return line.core
    if line.core_is_number:
        # A literal longer than 8 KiB: CPython reads a float's digits and a power-of-two base's without limit
        # (review 15: 300 KB of them hid torch's next pickle). Its value is only data.
        return b"0"
    raise PickleSyntaxError(start, "numeric argument longer than 8 KiB is not a number")


def _decimal_short(stream: Stream) -> int | bool:
    """INT: CPython reads it with strtol(..., 0), else int(..., 0): hex, octal and underscores are numbers. A line
    that starts with NUL is 0 (strtol converts nothing and stops at the end of the C string); a line of two
    characters whose value is 0 or 1 is a bool (`00`, `01`, `+1`, `0\0`)."""
    start = _at(stream)
    line = stream.readline()
    text = _number_text(line, start)
    head = line.prefix if isinstance(line, LongLine) else line
    value = 0 if head[:1] == b"\0" else _parse_int(text, start, 0)
    if isinstance(line, bytes) and len(line) == 2 and value in (0, 1) and b"_" not in text:
        return bool(value)
    return value


def _memo_index(stream: Stream) -> int:
    """GET and PUT: a base-10 index (CPython: PyLong_FromString(s, NULL, 10))."""
    start = _at(stream)
    return _parse_int(_number_text(stream.readline(), start), start, 10)


def _decimal_long(stream: Stream) -> int:
    start = _at(stream)
    text = _number_text(stream.readline(), start)
    return _parse_int(text[:-1] if text.endswith(b"L") else text, start, 0)


def _floatnl(stream: Stream) -> float:
    start = _at(stream)
    text = _number_text(stream.readline(), start)
    try:
        return float(text)
    except ValueError:
        raise PickleSyntaxError(start, "FLOAT argument is not a number") from None


Reader = Callable[[Stream], Arg]

# How to read each argument type pickletools names; every type it defines is here.
_READ_BY_TYPE: dict[str, Reader] = {
    "uint1": Stream.read_byte,
    "uint2": lambda s: int(_U2(s.read(2))[0]),
    "int4": lambda s: int(_I4(s.read(4))[0]),
    "uint4": lambda s: int(_U4(s.read(4))[0]),
    "uint8": lambda s: int(_U8(s.read(8))[0]),
    "float8": lambda s: float(_F8(s.read(8))[0]),
    "long1": _long1,
    "long4": _long4,
    "string1": lambda s: _bytes_arg(s, s.read_byte()),
    "bytes1": lambda s: _bytes_arg(s, s.read_byte()),
    "string4": lambda s: _bytes_arg(s, int(_I4(s.read(4))[0])),
    "bytes4": lambda s: _bytes_arg(s, int(_U4(s.read(4))[0])),
    "bytes8": lambda s: _bytes_arg(s, int(_U8(s.read(8))[0])),
    "bytearray8": lambda s: _bytes_arg(s, int(_U8(s.read(8))[0])),
    "unicodestring1": lambda s: _text_arg(s, s.read_byte()),
    "unicodestring4": lambda s: _text_arg(s, int(_U4(s.read(4))[0])),
    "unicodestring8": lambda s: _text_arg(s, int(_U8(s.read(8))[0])),
    "stringnl": _stringnl,
    "stringnl_noescape": lambda s: _short_line(s, "line argument").decode("utf-8", "replace"),
    "stringnl_noescape_pair": _pair,
    "unicodestringnl": _unicodenl,
    "decimalnl_short": _decimal_short,
    "decimalnl_long": _decimal_long,
    "floatnl": _floatnl,
}

# The argument reader of every opcode byte (None: no argument), looked up once per opcode by the VM.
READERS: dict[int, Reader | None] = {
    code: (_READ_BY_TYPE[op.arg.name] if op.arg is not None else None) for code, op in OPCODES.items()
}
READERS[ord("g")] = READERS[ord("p")] = _memo_index  # pickletools shares INT's argument type with them


_OCTAL = re.compile(rb"\s*([+-]?)0([0-7]+)\s*")


def _parse_int(text: bytes, offset: int, base: int) -> int:
    """As CPython reads it: int() (whitespace and underscores allowed, at most 4300 decimal digits), and for base
    0 also strtol's C octal ("010" is 8)."""
    try:
        return int(text, base)
    except ValueError:
        pass
    octal = _OCTAL.fullmatch(text) if base == 0 else None
    if octal is not None:
        return int(octal.group(1) + octal.group(2), 8)
    raise PickleSyntaxError(offset, "INT/LONG argument is not an integer")
