"""FlatBuffers tables read straight from a file, every offset checked against its size.

Why not the `flatbuffers` package's tables: they index a buffer that holds the whole file (a TensorFlow Lite model
keeps its weights inline: gigabytes for a language model), and they check no offset, so a crafted one reads
another part of the file, or past it, silently. Here reads go through `Pages` (a few 64 KiB pages kept) and any
offset outside the blob raises `FlatBufferError`, which a scanner reports as a file its loader's verifier refuses.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Iterator
from typing import BinaryIO

PAGE = 1 << 16
KEPT_PAGES = 64  # 4 MiB: a model's tables are read in file order, so a few pages serve them all
_I8, _U16, _I32, _U32, _U64 = (struct.Struct(f) for f in ("<b", "<H", "<i", "<I", "<Q"))


class FlatBufferError(ValueError):
    """An offset, length or table layout that does not fit in the blob."""


class Pages:
    """Random reads of a blob through its file handle, a page at a time, the last KEPT_PAGES kept."""

    def __init__(self, raw: BinaryIO, size: int) -> None:
        self.raw, self.size = raw, size
        self._kept: OrderedDict[int, bytes] = OrderedDict()

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise FlatBufferError(f"{length} bytes at {offset} are outside the {self.size}-byte file")
        first, last = offset // PAGE, (offset + length - 1) // PAGE if length else offset // PAGE
        if first == last:
            page = self._page(first)
            start = offset - first * PAGE
            return page[start : start + length]
        data = b"".join(self._page(index) for index in range(first, last + 1))
        start = offset - first * PAGE
        return data[start : start + length]

    def _page(self, index: int) -> bytes:
        page = self._kept.get(index)
        if page is not None:
            self._kept.move_to_end(index)
            return page
        self.raw.seek(index * PAGE)
        page = self.raw.read(min(PAGE, self.size - index * PAGE))
        if len(page) != min(PAGE, self.size - index * PAGE):
            raise FlatBufferError(f"the file ended at page {index} (it was {self.size} bytes when listed)")
        self._kept[index] = page
        if len(self._kept) > KEPT_PAGES:
            self._kept.popitem(last=False)
        return page

    def unpack(self, fmt: struct.Struct, offset: int) -> int:
        value: int = fmt.unpack(self.read(offset, fmt.size))[0]
        return value


class Table:
    """One FlatBuffers table: its fields by slot (0 for the first field of the schema), absent ones default."""

    def __init__(self, pages: Pages, position: int) -> None:
        self.pages, self.position = pages, position
        vtable = position - pages.unpack(_I32, position)
        self.vtable = vtable
        self.vtable_size = pages.unpack(_U16, vtable)
        inline = pages.unpack(_U16, vtable + 2)
        if self.vtable_size < 4 or self.vtable_size % 2:
            raise FlatBufferError(f"the table at {position} has a vtable of {self.vtable_size} bytes")
        pages.read(vtable, self.vtable_size)
        pages.read(position, max(inline, 4))

    def _field(self, slot: int) -> int:
        """The absolute position of a field's inline value, 0 when the table does not have it."""
        entry = 4 + 2 * slot
        if entry + 2 > self.vtable_size:
            return 0
        relative = self.pages.unpack(_U16, self.vtable + entry)
        # FlatBuffers' verifier checks a field against the buffer, not the table's inline size: so does this.
        return self.position + relative if relative else 0

    def uint(self, slot: int, default: int = 0) -> int:
        return self._scalar(slot, _U32, default)

    def int32(self, slot: int, default: int = 0) -> int:
        return self._scalar(slot, _I32, default)

    def int8(self, slot: int, default: int = 0) -> int:
        return self._scalar(slot, _I8, default)

    def uint64(self, slot: int, default: int = 0) -> int:
        return self._scalar(slot, _U64, default)

    def _scalar(self, slot: int, fmt: struct.Struct, default: int) -> int:
        position = self._field(slot)
        return self.pages.unpack(fmt, position) if position else default

    def _target(self, slot: int) -> int:
        """Where a field's offset (a vector or string) points, 0 when absent."""
        position = self._field(slot)
        if not position:
            return 0
        target = position + self.pages.unpack(_U32, position)
        if target + 4 > self.pages.size:
            raise FlatBufferError(f"field {slot} of the table at {self.position} points past the file")
        return target

    def vector(self, slot: int, width: int) -> tuple[int, int]:
        """(position of the first element, element count) of a vector field; (0, 0) when absent."""
        target = self._target(slot)
        if not target:
            return 0, 0
        count = self.pages.unpack(_U32, target)
        if count * width > self.pages.size - target - 4:
            raise FlatBufferError(f"a vector of {count} at {target} runs past the file")
        return target + 4, count

    def string(self, slot: int, limit: int) -> bytes | None:
        """A string field's first `limit` bytes; None when absent."""
        start, length = self.vector(slot, 1)
        if not start:
            return None
        return self.pages.read(start, min(length, limit))

    def c_string(self, slot: int, limit: int) -> bytes | None:
        """A string field as C++ reads it through `c_str()`: from its first byte to the first NUL, whatever its
        length field says (TensorFlow Lite's interpreter reads op names so, and does not verify the buffer), at
        most `limit` bytes; None when absent."""
        start, _ = self.vector(slot, 1)
        if not start:
            return None
        return self.pages.read(start, min(limit, self.pages.size - start)).split(b"\0", 1)[0]

    def bytes(self, slot: int, limit: int) -> bytes | None:
        """A [ubyte] field whole, None when absent; over `limit` bytes is an error the caller reports."""
        start, length = self.vector(slot, 1)
        if not start:
            return None
        if length > limit:
            raise FlatBufferError(f"a byte vector of {length} bytes is over the {limit} read")
        return self.pages.read(start, length)

    def ints(self, slot: int) -> Iterator[int]:
        start, count = self.vector(slot, 4)
        for index in range(count):
            yield self.pages.unpack(_I32, start + 4 * index)

    def tables(self, slot: int) -> Iterator[Table]:
        start, count = self.vector(slot, 4)
        for index in range(count):
            position = start + 4 * index
            yield Table(self.pages, position + self.pages.unpack(_U32, position))

    def count(self, slot: int) -> int:
        return self.vector(slot, 4)[1]

    def table_at(self, slot: int, index: int) -> Table:
        start, count = self.vector(slot, 4)
        if not 0 <= index < count:
            raise FlatBufferError(f"index {index} is outside a vector of {count}")
        position = start + 4 * index
        return Table(self.pages, position + self.pages.unpack(_U32, position))


def root(pages: Pages) -> Table:
    """The buffer's root table (its offset is the first four bytes)."""
    return Table(pages, pages.unpack(_U32, 0))
