"""Safetensors files: the header is checked byte for byte, tensor bytes are never read.

The format cannot run code, so the risks are elsewhere: bytes no tensor claims (a pickle or an archive
hidden in a gap or after the last tensor, scanned here as its own blob) and headers that different parsers
read differently. Every check lives in `safetensors_header`; this module turns its problems into
observations.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem
from wscan.scanners.problems import problem_items
from wscan.scanners.safetensors_header import JSON_WS, MAX_PROBLEMS, ParsedHeader, parse_header

_PRINTABLE = frozenset(range(0x20, 0x7F)) | frozenset(b"\t\n\r")


def looks_like_safetensors(head: bytes, size: int) -> bool:
    """A plausible length followed by a JSON object; an absurd length only when it is not text."""
    if len(head) < 10:
        return False
    (length,) = struct.unpack("<Q", head[:8])
    if length < 2:
        return False
    if 8 + length <= size:
        return head[8:].lstrip(JSON_WS.encode()).startswith(b"{")
    # A hostile length is still reported, but eight text bytes before "{" are a JSON or text file, and a length
    # whose bytes 2 and 3 are CR LF is a CPython .pyc's magic number (its byte 8 is the source's mtime, "{" in
    # 1 of 256 installs: every .pyc of one was flagged). A JSON object opens with a key or closes at once.
    if set(head[:8]) <= _PRINTABLE or head[2:4] == b"\r\n":
        return False
    return head[8:9] == b"{" and head[9:].lstrip(JSON_WS.encode())[:1] in (b'"', b"}")


class SafetensorsScanner:
    """`.safetensors` files, whatever their name."""

    name = "safetensors"

    def accepts(self, head: Head) -> bool:
        # Raw tensor bytes (an int64 storage starting with a small count, then 123) are never a file.
        return not head.raw_data and looks_like_safetensors(head.head, head.size)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as raw:
            parsed = parse_header(raw, artifact.size, ctx.limits.max_header_bytes)
        yield from problem_items(artifact, parsed.problems if isinstance(parsed, ParsedHeader) else parsed)
        if isinstance(parsed, ParsedHeader) and parsed.stopped:
            detail = f"more than {MAX_PROBLEMS:,} problems in the header; the entries after them were not checked"
            yield artifact.observe("scan.limit", 0, limit="max-observations", detail=detail)
        elif isinstance(parsed, ParsedHeader):
            yield artifact.observe("safetensors.layout", 0, **layout_attrs(parsed))


def layout_attrs(parsed: ParsedHeader) -> dict[str, str | int | bool]:
    """The INFO summary: what the file holds, for reports and inventories."""
    attrs: dict[str, str | int | bool] = {
        "tensors": len(parsed.tensors),
        "dtypes": ",".join(sorted({t.dtype for t in parsed.tensors})),
        "parameters": sum(t.numel for t in parsed.tensors),
        "header_bytes": parsed.length,
    }
    if parsed.metadata is not None and "format" in parsed.metadata:
        attrs["format"] = parsed.metadata["format"][:64]
    return attrs
