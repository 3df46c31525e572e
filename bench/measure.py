"""What every bench script shares: bytes this process has read, and multi-gigabyte files of real zero bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHUNK = 64 << 20


def rchar() -> int:
    """Bytes this process has been handed by read(2) so far (/proc/self/io), page cache or disk alike."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise RuntimeError("no rchar in /proc/self/io")


def write_zeros(handle: Any, total: int) -> None:
    """`total` zero bytes, written (not a hole), 64 MiB at a time."""
    block = bytes(CHUNK)
    left = total
    while left:
        n = min(left, CHUNK)
        handle.write(block[:n])
        left -= n
