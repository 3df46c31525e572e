"""A window onto part of another file, so bytes hidden inside a file can be scanned as their own blob."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import BinaryIO


class _Slice(io.RawIOBase):
    """Read-only, seekable view of `length` bytes starting at `start` of `inner`."""

    def __init__(self, inner: BinaryIO, start: int, length: int) -> None:
        super().__init__()
        self._inner = inner
        self._start = start
        self._length = length
        self._pos = 0
        inner.seek(start)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        want = min(len(buffer), self._length - self._pos)
        if want <= 0:
            return 0
        self._inner.seek(self._start + self._pos)
        data = self._inner.read(want)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._length}[whence]
        self._pos = max(0, min(base + offset, self._length))
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()


def open_slice(opener: Callable[[], BinaryIO], start: int, length: int) -> BinaryIO:
    """Open the parent afresh and return a buffered view of [start, start+length)."""
    return io.BufferedReader(_Slice(opener(), start, length))
