"""Flax msgpack checkpoints (`flax_model.msgpack`, written by `flax.serialization.to_bytes` and by transformers'
Flax models): the structure is walked, tensor bytes are never read.

Thousands of model repositories still carry one beside their PyTorch weights, and an unread file is a finding: so
wscan reads it. Every check lives in `flax_msgpack_tree`; this module turns its problems into observations, and
the byte strings and bytes the state dict holds outside its arrays into blobs of their own, so a pickle kept there
gets its own finding.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from wscan.scanners.base import NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem
from wscan.scanners.problems import Problem

if TYPE_CHECKING:
    from wscan.scanners.flax_msgpack_tree import ParsedMsgpack

# A Flax state dict is a msgpack map whose first key is a string: a fixmap (0x81-0x8f) or map16/map32 header,
# then a str header. 0x80, an empty map, opens every pickle of protocol 2 and later; no pickle opcode pairs with a
# str header the way a map of string keys does (0x8c 0xa6 would be a pickle string of 166 bytes: still read as a
# pickle, by the pickle scanner, as every scanner that accepts a file reads it).
_MAP_HEADERS = {**{byte: 1 for byte in range(0x81, 0x90)}, 0xDE: 3, 0xDF: 5}


def _is_str_header(byte: int) -> bool:
    return 0xA0 <= byte <= 0xBF or byte in (0xD9, 0xDA, 0xDB)


def looks_like_flax(head: bytes) -> bool:
    """A map whose first key is a string, as `msgpack.packb` writes a state dict."""
    key_at = _MAP_HEADERS.get(head[0]) if head else None
    return key_at is not None and len(head) > key_at and _is_str_header(head[key_at])


# What else Flax's own API writes: `msgpack_serialize` of a list or of a dict with other keys, `to_bytes` of an
# array (an extension value) or of bytes. Those first bytes open many other files too (0x80 every pickle, 0x93
# every .npy), so such a file is taken only if it reads to its end as one msgpack object (`_weak`).
_OTHER_STARTS = frozenset(range(0x80, 0xA0)) | frozenset(range(0xC4, 0xCA)) | frozenset(range(0xD4, 0xD9)) | {
    0xDC, 0xDD, 0xDE, 0xDF}


def might_be_msgpack(head: bytes) -> bool:
    return bool(head) and head[0] in _OTHER_STARTS


class FlaxMsgpackScanner:
    """Flax msgpack state dicts, whatever their name."""

    name = "flax-msgpack"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and might_be_msgpack(head.head)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        from wscan.scanners.flax_msgpack_tree import MAX_PROBLEMS, Caps, walk

        with artifact.opener() as raw:
            caps = Caps(ctx.limits.max_header_bytes, ctx.budget.check_time, max_blobs=ctx.limits.max_members)
            parsed = walk(raw, artifact.size, caps)
            raw.seek(0)
            strong = looks_like_flax(raw.read(8))
        if not strong and not _weak(parsed):
            yield artifact.observe(NOT_MINE_KIND)
            return
        for problem in parsed.problems:
            problem = _as_limit(problem)
            yield artifact.observe(problem.kind, problem.offset, **problem.attrs)
            if problem.hidden is not None:
                raw_data = problem.kind in ("flax.bad_array", "flax.unknown_dtype")
                yield _blob(artifact, *problem.hidden, raw_data=raw_data)
        for start, length in parsed.blobs:
            yield _blob(artifact, start, length, raw_data=True)
        if parsed.blobs_over:
            detail = f"{parsed.blobs_over:,} more byte strings and texts than {len(parsed.blobs):,} were not scanned"
            yield artifact.observe("scan.limit", limit="max-members", detail=detail)
        if parsed.over_budget is not None:
            raise parsed.over_budget
        if parsed.stopped:
            detail = f"more than {MAX_PROBLEMS:,} problems; the values after them were not checked"
            yield artifact.observe("scan.limit", limit="max-observations", detail=detail)
        elif parsed.complete:
            dtypes = ",".join(sorted(parsed.dtypes))
            yield artifact.observe("fact.flax", 0, arrays=parsed.arrays, parameters=parsed.parameters, dtypes=dtypes)


def _weak(parsed: ParsedMsgpack) -> bool:
    """Whether a file that does not open as a state dict still reads as one msgpack object and nothing more."""
    refused = {"flax.malformed", "flax.trailing_data", "flax.over_limit"}
    return parsed.over_budget is None and parsed.complete and not any(p.kind in refused for p in parsed.problems)


def _blob(artifact: Artifact, start: int, length: int, raw_data: bool) -> Artifact:
    """Bytes the state dict holds as data, scanned as their own blob. An array's payload or a byte string is any
    bytes at all, sniffed as tensor bytes are (a pickle counts only where it imports, nothing is called an unknown
    format); bytes after the object or in an unknown extension, already findings, are sniffed as files are."""
    blob = artifact.hidden(start, length)
    if raw_data:
        blob.context = {"raw_data": True}
    return blob


def _as_limit(problem: Problem) -> Problem:
    """The structure outgrew `max-header-bytes`: a scan limit, reported as every limit is."""
    if problem.kind != "flax.over_limit":
        return problem
    limit = problem.attrs.get("limit")
    detail = f"more than {limit} bytes of keys, headers and strings; the rest of the file was not checked"
    return Problem("scan.limit", problem.offset, {"limit": "max-header-bytes", "detail": detail})
