"""An ONNX model without its weights, read straight from the file.

Parsing a whole ModelProto holds every initializer in memory, twice (the file's bytes and the parsed
copy): 600 MiB for a 280 MB model. The checks only need each tensor's shape, type and data length, so the
protobuf wire format is walked here, message by message, and rewritten with every large `raw_data` left
out: skipped with a seek, never read. Its length is kept in a field number onnx does not use, which
`stripped_length` reads back. Large typed data (`float_data`, `int64_data`, ...: what `onnx.helper` writes
from Python lists) is left out too; only its value count is kept (`stripped_counts`), counted in chunks for
varint fields. Memory is the size of the graph, not of the weights.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple

from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

# Message kinds, and which of their fields hold which nested message (field numbers from onnx.proto3; the
# tests check this table against the installed onnx's descriptors).
MODEL, GRAPH, NODE, ATTRIBUTE, FUNCTION, TRAINING, SPARSE, TENSOR, SPARSE_PART = range(9)
NESTED: dict[int, dict[int, int]] = {
    MODEL: {7: GRAPH, 20: TRAINING, 25: FUNCTION},
    TRAINING: {1: GRAPH, 2: GRAPH},
    FUNCTION: {7: NODE, 11: ATTRIBUTE},
    GRAPH: {1: NODE, 5: TENSOR, 15: SPARSE},
    NODE: {5: ATTRIBUTE},
    ATTRIBUTE: {5: TENSOR, 6: GRAPH, 10: TENSOR, 11: GRAPH, 22: SPARSE, 23: SPARSE},
    SPARSE: {1: SPARSE_PART, 2: SPARSE_PART},  # values and indices: the checker compares them, kept whole
    TENSOR: {},
    SPARSE_PART: {},
}
RAW_DATA = 9
STRIPPED_FIELD = (1 << 29) - 1  # the largest field number protobuf allows; onnx.proto stops far below
STRIPPED_COUNT_FIELD = STRIPPED_FIELD - 1  # one per typed field left out: its field number, its value count
KEEP_BYTES = 4096  # raw_data (or a typed field's encoding) up to this size stays: not worth a seek
# TensorProto's typed data fields: field number -> (name, wire type of one value, bytes per packed value or 0
# for varints). string_data is one length-delimited field per string, never packed.
TYPED_DATA = {
    4: ("float_data", 5, 4), 5: ("int32_data", 0, 0), 6: ("string_data", 2, -1), 7: ("int64_data", 0, 0),
    10: ("double_data", 1, 8), 11: ("uint64_data", 0, 0),
}  # fmt: skip
_CHUNK = 1 << 20  # packed varints are counted a chunk at a time
_HIGH = bytes(range(0x80, 0x100))  # bytes that continue a varint
_LOW = bytes(range(0x40))  # the bytes of a one-byte varint below 64
_LONG_VARINT = re.compile(rb"[\x80-\xff]{10}")  # protobuf refuses a varint of more than ten bytes
MAX_DEPTH = 100  # protobuf's own recursion limit
_WINDOW = 8 << 10  # small: a window that reached into the next tensor's data would read the bytes skipped


class SlimError(Exception):
    """The wire format is broken (cut off, a bad varint, an unmatched group): protobuf would refuse the file too."""


def stripped_length(tensor: Message) -> int | None:
    """The length of the raw_data left out of this tensor, or None if its data is all there."""
    for item in UnknownFieldSet(tensor):
        if item.field_number == STRIPPED_FIELD and item.wire_type == 0:
            return int(item.data)
    return None


class Stripped(NamedTuple):
    """A typed data field left out of a tensor: how many values it held, and whether any of them was outside
    0..63 (onnx.checker holds FLOAT6 values to six bits; only varint fields can say so)."""

    values: int
    wide: bool


def stripped_counts(tensor: Message) -> dict[str, Stripped]:
    """Typed data fields left out of this tensor, by name."""
    found: dict[str, Stripped] = {}
    for item in UnknownFieldSet(tensor):
        if item.field_number == STRIPPED_COUNT_FIELD and item.wire_type == 2:
            number, pos = _read_varint(item.data, 0)
            count, pos = _read_varint(item.data, pos)
            wide, _ = _read_varint(item.data, pos)
            if number in TYPED_DATA and count:
                name = TYPED_DATA[number][0]
                before = found.get(name, Stripped(0, False))
                found[name] = Stripped(before.values + count, before.wide or bool(wide))
    return found


@dataclass(slots=True)
class _Typed:
    """One typed data field of a tensor, gathered over all its occurrences (protobuf concatenates them)."""

    encoded: int = 0  # bytes of all its occurrences, tags included
    count: int = 0  # values
    wide: bool = False  # a value outside 0..63 (varint fields)
    kept: list[bytes] = field(default_factory=list)  # the occurrences, while `encoded` is within KEEP_BYTES


def slim_model(raw: BinaryIO, size: int, check_time: Callable[[], None]) -> bytes:
    """The serialized ModelProto in `raw` with large raw_data fields left out (see the module docstring)."""
    return _Slimmer(raw, size, check_time).message(0, size, MODEL, 0)


def top_level_fields(raw: BinaryIO, size: int, check_time: Callable[[], None]) -> set[int]:
    """The field numbers of a message's top-level length-delimited fields, walked with seeks over their bodies
    (nothing is read but tags and lengths); SlimError where the wire format breaks."""
    slimmer, found, pos = _Slimmer(raw, size, check_time), set(), 0
    while pos < size:
        slimmer.tick()
        tag, body = slimmer.varint(pos, size)
        if tag & 7 == 2:
            found.add(tag >> 3)
        pos = slimmer.field_end(pos, tag, body, size, 0)
    return found


class _Slimmer:
    def __init__(self, raw: BinaryIO, size: int, check_time: Callable[[], None]) -> None:
        self.raw, self.size, self.check_time = raw, size, check_time
        self.window, self.window_start = b"", 0
        self.fields = 0

    def read(self, pos: int, count: int) -> bytes:
        """`count` bytes at `pos` (fewer at the end of the file), through an 8 KiB window."""
        offset = pos - self.window_start
        if offset >= 0 and offset + count <= len(self.window):
            return self.window[offset : offset + count]
        self.raw.seek(pos)
        if count >= _WINDOW:
            return self.raw.read(count)
        self.window, self.window_start = self.raw.read(_WINDOW), pos
        return self.window[:count]

    def varint(self, pos: int, end: int) -> tuple[int, int]:
        offset = pos - self.window_start
        if 0 <= offset < len(self.window) and pos < end and self.window[offset] < 0x80:
            return self.window[offset], pos + 1  # one byte: most tags and lengths, so no slicing
        data = self.read(pos, min(10, end - pos))
        value = 0
        for index, byte in enumerate(data):
            value |= (byte & 0x7F) << (7 * index)
            if byte < 0x80:
                return value, pos + index + 1
        raise SlimError(f"bad or cut-off varint at byte {pos}")

    def message(self, start: int, end: int, kind: int, depth: int) -> bytes:
        if depth > MAX_DEPTH:
            raise SlimError(f"messages nested past the depth limit of {MAX_DEPTH} (protobuf's own)")
        nested = NESTED[kind]
        out = bytearray()
        typed: dict[int, _Typed] = {}
        pos = start
        while pos < end:
            self.tick()
            tag, body = self.varint(pos, end)
            number, wire = tag >> 3, tag & 7
            after = self.field_end(pos, tag, body, end, depth)
            if wire == 2:
                body = self.varint(body, end)[1]
            if kind == TENSOR and number in (STRIPPED_FIELD, STRIPPED_COUNT_FIELD):
                pass  # only what this module writes may be read back as a stripped length or count
            elif wire == 2 and number in nested:
                inner = self.message(body, after, nested[number], depth + 1)
                out += _varint(tag) + _varint(len(inner)) + inner
            elif kind == TENSOR and number == RAW_DATA and after - body > KEEP_BYTES:
                out += _varint(tag) + b"\x00" + _varint(STRIPPED_FIELD << 3) + _varint(after - body)
            elif kind == TENSOR and number in TYPED_DATA and wire in (2, TYPED_DATA[number][1]):
                gathered = typed.setdefault(number, _Typed())
                gathered.encoded += after - pos
                count, wide = self.values(number, wire, pos, body, after)
                gathered.count += count
                gathered.wide = gathered.wide or wide
                if gathered.encoded <= KEEP_BYTES:
                    gathered.kept.append(self.read(pos, after - pos))
                else:
                    gathered.kept.clear()
            else:
                out += self.read(pos, after - pos)
            pos = after
        for number, gathered in typed.items():
            if gathered.encoded <= KEEP_BYTES:
                out += b"".join(gathered.kept)
            elif gathered.count:  # empty occurrences only: protobuf holds no values, so no field either
                record = _varint(number) + _varint(gathered.count) + _varint(int(gathered.wide))
                out += _varint(STRIPPED_COUNT_FIELD << 3 | 2) + _varint(len(record)) + record
        return bytes(out)

    def tick(self) -> None:
        self.fields += 1
        if self.fields % 10_000 == 0:
            self.check_time()

    def field_end(self, pos: int, tag: int, body: int, end: int, depth: int) -> int:
        """Where the field whose tag ends at `body` ends. A group (deprecated, but protobuf still reads one as an
        unknown field, so a model can hide behind one) ends at its matching end-group tag."""
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise SlimError(f"field number 0 at byte {pos}")
        if wire == 0:
            after = self.varint(body, end)[1]
        elif wire in (1, 5):
            after = body + (8 if wire == 1 else 4)
        elif wire == 2:
            length, body = self.varint(body, end)
            after = body + length
        elif wire == 3:
            after = self.group_end(body, number, end, depth + 1)
        else:
            raise SlimError(f"wire type {wire} at byte {pos}")
        if after > end:
            raise SlimError(f"field {number} at byte {pos} runs past its message")
        return after

    def group_end(self, pos: int, number: int, end: int, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise SlimError(f"groups nested past the depth limit of {MAX_DEPTH} (protobuf's own)")
        while pos < end:
            self.tick()
            tag, body = self.varint(pos, end)
            if tag & 7 == 4:
                if tag >> 3 != number:
                    raise SlimError(f"end of group {tag >> 3} at byte {pos} inside group {number}")
                return body
            pos = self.field_end(pos, tag, body, end, depth)
        raise SlimError(f"group {number} is not closed")

    def values(self, number: int, wire: int, pos: int, body: int, after: int) -> tuple[int, bool]:
        """How many values one occurrence of a typed data field holds, and whether one is outside 0..63."""
        _, one, width = TYPED_DATA[number]
        if wire == one:
            if width:
                return 1, False
            return 1, any(byte >= 0x40 for byte in self.read(body, after - body)) if wire == 0 else False
        if width:
            if (after - body) % width:
                raise SlimError(f"packed field {number} at byte {pos} is not a whole number of values")
            return (after - body) // width, False
        count, wide, carry = 0, False, b""
        for chunk_start in range(body, after, _CHUNK):
            chunk = self.read(chunk_start, min(_CHUNK, after - chunk_start))
            if _LONG_VARINT.search(carry + chunk):
                raise SlimError(f"a varint of more than ten bytes in packed field {number} at byte {pos}")
            count += len(chunk.translate(None, _HIGH))  # every varint ends in the one byte below 0x80
            wide = wide or len(chunk.translate(None, _LOW)) > 0  # a value of 64 or more has a byte of 0x40 or more
            carry = chunk[-9:]
            self.check_time()
        if carry and carry[-1] >= 0x80:
            raise SlimError(f"packed field {number} at byte {pos} ends inside a varint")
        return count, wide


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
    return value, pos


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
