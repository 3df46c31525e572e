"""A bounded pickle opcode decoder.

`pickletools` supplies the opcode table, but its `genops` reads every argument whole into memory (a
hostile BINBYTES8 length becomes one huge allocation) and cannot skip. This decoder reads arguments with
explicit caps: large byte arguments are skipped and only a prefix is kept.
"""

from __future__ import annotations

import codecs
import pickletools
import struct
from dataclasses import dataclass
from typing import BinaryIO

KEEP_BYTES = 4096  # prefix kept of long bytes/str arguments
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


@dataclass(frozen=True, slots=True)
class LongBytes:
    """A byte or text argument too long to keep: its length and first bytes."""

    length: int
    prefix: bytes


Arg = int | float | str | bytes | bool | None | tuple[str, str] | LongBytes


class Stream:
    """Position-tracking reader over a binary file that may be read forward only."""

    def __init__(self, raw: BinaryIO, limit: int, base: int = 0, size: int | None = None) -> None:
        self._raw = raw
        self._buf = b""
        self._pos = 0  # offset of _buf[0] relative to the stream start
        self._i = 0  # index into _buf
        self.base = base  # offset of the stream start inside the artifact
        self.limit = limit  # opcode and argument bytes that may be read (skipped payload is not counted)
        self.size = size  # bytes available from the stream start, when known: lets skip() seek
        self._skipped = 0

    @property
    def offset(self) -> int:
        return self._pos + self._i

    def _fill(self, need: int) -> bool:
        """Make `need` bytes available at _i; False at end of data."""
        while len(self._buf) - self._i < need:
            chunk = self._raw.read(max(65536, need - (len(self._buf) - self._i)))
            if not chunk:
                return False
            self._pos += self._i
            self._buf = self._buf[self._i :] + chunk
            self._i = 0
        return True

    def at_end(self) -> bool:
        return not self._fill(1)

    def peek(self, n: int) -> bytes:
        self._fill(n)
        return self._buf[self._i : self._i + n]

    def read(self, n: int) -> bytes:
        start = self.offset
        if start - self._skipped + n > self.limit:
            raise Truncated(self.base + start, f"argument of {n} bytes exceeds the pickle size limit")
        if not self._fill(n):
            raise Truncated(self.base + start, f"stream ends inside a {n}-byte read")
        data = self._buf[self._i : self._i + n]
        self._i += n
        return data

    def skip(self, n: int) -> None:
        """Advance without keeping the bytes (tensor payloads): seek when possible, never hold them."""
        start = self.offset
        self._skipped += n
        buffered = len(self._buf) - self._i
        if self.size is not None and n > buffered and self._raw.seekable():
            if start + n > self.size:
                raise Truncated(self.base + start, f"stream ends inside a {n}-byte argument")
            self._raw.seek(self.base + start + n)
            self._pos, self._buf, self._i = start + n, b"", 0
            return
        remaining = n
        while remaining:
            if not self._fill(1):
                raise Truncated(self.base + start, f"stream ends inside a {n}-byte argument")
            take = min(remaining, len(self._buf) - self._i)
            self._i += take
            remaining -= take

    def readline(self) -> bytes:
        start = self.offset
        while True:
            end = self._buf.find(b"\n", self._i)
            if end >= 0:
                line = self._buf[self._i : end]
                self._i = end + 1
                return line
            if len(self._buf) - self._i > MAX_LINE:
                raise PickleSyntaxError(self.base + start, "line argument longer than 64 KiB")
            if not self._fill(len(self._buf) - self._i + 1):
                raise Truncated(self.base + start, "stream ends inside a line argument")


def _bytes_arg(stream: Stream, n: int) -> bytes | LongBytes:
    if n < 0:
        raise PickleSyntaxError(stream.base + stream.offset, "negative length")
    if n <= KEEP_BYTES:
        return stream.read(n)
    prefix = stream.read(KEEP_BYTES)
    stream.skip(n - KEEP_BYTES)
    return LongBytes(n, prefix)


def _text_arg(stream: Stream, n: int) -> str | LongBytes:
    data = _bytes_arg(stream, n)
    if isinstance(data, LongBytes):
        return data
    return data.decode("utf-8", "surrogatepass")


def _unquote(line: bytes, offset: int) -> bytes:
    """STRING's argument is a Python repr with quotes; decode escapes the way pickle does."""
    if len(line) >= 2 and line[0] == line[-1] and line[:1] in (b"'", b'"'):
        return codecs.escape_decode(line[1:-1])[0]
    raise PickleSyntaxError(offset, "STRING argument is not quoted")


def read_arg(stream: Stream, op: pickletools.OpcodeInfo) -> Arg:
    """Decode the argument of `op` from the stream, bounded."""
    arg = op.arg
    if arg is None:
        return None
    name = arg.name
    start = stream.base + stream.offset
    if name == "uint1":
        return stream.read(1)[0]
    if name == "uint2":
        return int(struct.unpack("<H", stream.read(2))[0])
    if name == "int4":
        return int(struct.unpack("<i", stream.read(4))[0])
    if name == "uint4":
        return int(struct.unpack("<I", stream.read(4))[0])
    if name == "uint8":
        return int(struct.unpack("<Q", stream.read(8))[0])
    if name == "float8":
        return float(struct.unpack(">d", stream.read(8))[0])
    if name == "long1":
        n = stream.read(1)[0]
        return int.from_bytes(stream.read(n), "little", signed=True)
    if name == "long4":
        n = int(struct.unpack("<i", stream.read(4))[0])
        if n < 0:
            raise PickleSyntaxError(start, "LONG4 with negative length")
        if n > 1024:
            stream.skip(n)
            return 0  # a number that large is only ever data
        return int.from_bytes(stream.read(n), "little", signed=True)
    if name in ("string1", "bytes1"):
        return _bytes_arg(stream, stream.read(1)[0])
    if name == "string4":
        return _bytes_arg(stream, int(struct.unpack("<i", stream.read(4))[0]))
    if name == "bytes4":
        return _bytes_arg(stream, int(struct.unpack("<I", stream.read(4))[0]))
    if name in ("bytes8", "bytearray8"):
        return _bytes_arg(stream, int(struct.unpack("<Q", stream.read(8))[0]))
    if name == "unicodestring1":
        return _text_arg(stream, stream.read(1)[0])
    if name == "unicodestring4":
        return _text_arg(stream, int(struct.unpack("<I", stream.read(4))[0]))
    if name == "unicodestring8":
        return _text_arg(stream, int(struct.unpack("<Q", stream.read(8))[0]))
    if name == "stringnl":
        return _unquote(stream.readline(), start)
    if name == "stringnl_noescape":
        return stream.readline().decode("utf-8", "replace")
    if name == "stringnl_noescape_pair":
        module = stream.readline().decode("utf-8", "replace")
        qualname = stream.readline().decode("utf-8", "replace")
        return (module, qualname)
    if name == "unicodestringnl":
        return stream.readline().decode("raw-unicode-escape")
    if name == "decimalnl_short":
        text = stream.readline()
        if text == b"00":
            return False
        if text == b"01":
            return True
        return _parse_int(text, start)
    if name == "decimalnl_long":
        text = stream.readline()
        return _parse_int(text[:-1] if text.endswith(b"L") else text, start)
    if name == "floatnl":
        text = stream.readline()
        try:
            return float(text)
        except ValueError:
            raise PickleSyntaxError(start, "FLOAT argument is not a number") from None
    raise PickleSyntaxError(start, f"unsupported argument type {name}")


def _parse_int(text: bytes, offset: int) -> int:
    if len(text) > 4300:
        raise PickleSyntaxError(offset, "integer literal too long")
    try:
        return int(text)
    except ValueError:
        raise PickleSyntaxError(offset, "INT/LONG argument is not an integer") from None
