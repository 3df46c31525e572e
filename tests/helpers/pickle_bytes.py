"""Hand-written pickle opcodes for hostile streams, as several test files write them."""

from __future__ import annotations

import struct


def global_op(module: str, name: str) -> bytes:
    """GLOBAL: protocol 0's import of `module.name`."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def binunicode(text: str) -> bytes:
    """BINUNICODE: a text with its 4-byte little-endian length."""
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw
