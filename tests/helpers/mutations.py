"""One byte changed in a file, the way the property tests damage real files: cut there, overwritten, or inserted."""

from __future__ import annotations


def damaged(data: bytes, where: float, how: str, byte: int) -> bytes:
    """`data` cut at `where` (a fraction of its length), or with `byte` written over or inserted there."""
    at = int(where * (len(data) - 1))
    if how == "cut":
        return data[:at]
    if how == "set":
        return data[:at] + bytes([byte]) + data[at + 1 :]
    return data[:at] + bytes([byte]) + data[at:]
