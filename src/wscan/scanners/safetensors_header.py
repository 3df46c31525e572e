"""Parse a safetensors header byte for byte, as strictly as the reference loader, without reading tensor data.

A file is a u64 little-endian length N, N bytes of UTF-8 JSON, then the data buffer. The reference loader
rejects anything but contiguous tensors that cover the buffer exactly; every deviation is reported here as a
`Problem`, because bytes no tensor claims are a place to hide a payload and parser disagreements (duplicate
keys, trailing junk) let a scanner and a loader see different files.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from typing import Any, BinaryIO

from wscan.model import AttrValue
from wscan.scanners.problems import Problem

LIBRARY_MAX_HEADER = 100_000_000  # the reference loader refuses longer headers
MAX_PROBLEMS = 10_000  # of one header, past which its entries are no longer checked (real files have none)
U64_MAX = 2**64 - 1
JSON_WS = " \t\n\r"

# Bits per element of every dtype the format defines (safetensors 0.8: 22 variants).
DTYPE_BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8,
    "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}  # fmt: skip
TENSOR_FIELDS = frozenset({"dtype", "shape", "data_offsets"})
_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:')


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """A well-formed tensor entry; begin/end are relative to the data buffer."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def numel(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count


@dataclass(slots=True)
class ParsedHeader:
    """A header that parsed as JSON; `problems` lists everything still wrong with it."""

    length: int
    data_size: int
    tensors: list[TensorInfo]
    names: list[str]  # every top-level key but __metadata__, well-formed or not
    metadata: dict[str, str] | None
    problems: list[Problem]
    stopped: bool = False  # more than MAX_PROBLEMS problems: the entries after them were not checked

    @property
    def data_start(self) -> int:
        return 8 + self.length


def _problem(kind: str, offset: int, hidden: tuple[int, int] | None = None, **attrs: AttrValue) -> Problem:
    return Problem(f"safetensors.{kind}", offset, attrs, hidden)


class _Reject(ValueError):
    """JSON the reference loader would read differently (duplicate keys, NaN, lone surrogates)."""

    def __init__(self, reason: str, key: str | None = None) -> None:
        super().__init__(reason)
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        key = _first_duplicate(pairs)
        raise _Reject(f"duplicate key {key[:80]!r} (loaders keep the last, scanners may read the first)", key)
    return result


def _first_duplicate(pairs: list[tuple[str, Any]]) -> str:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return ""


def _surrogates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Like `_pairs`, also refusing lone surrogate escapes (only used when the text has \\u escapes)."""
    for key, value in pairs:
        for text in (key, value) if isinstance(value, str) else (key,):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise _Reject(f"string with a lone surrogate escape: {text[:40]!r}") from None
    return _pairs(pairs)


def _constant(name: str) -> Any:
    raise _Reject(f"{name} is not JSON")


class _Locator:
    """Byte offsets of top-level keys (best effort), found in one pass that goes only as far as the keys asked for:
    problems come in the header's order, and a header of 11,600,000 keys is not indexed whole for a few of them."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._offsets: dict[str, int] = {}
        self._keys = _KEY.finditer(text)
        self._byte_pos, self._char_pos = 8, 0

    def __call__(self, key: str) -> int:
        while key not in self._offsets:
            match = next(self._keys, None)
            if match is None:
                return 8
            self._byte_pos += len(self._text[self._char_pos : match.start()].encode("utf-8", "surrogatepass"))
            self._char_pos = match.start()
            try:
                name = json.loads(f'"{match.group(1)}"')
            except ValueError:
                continue
            self._offsets.setdefault(name, self._byte_pos)
        return self._offsets[key]


def parse_header(raw: BinaryIO, size: int, max_header: int) -> ParsedHeader | list[Problem]:
    """Read only the length and the header of a safetensors blob at the start of `raw`; never tensor bytes.

    Returns the problems alone when the header cannot be parsed at all.
    """
    prefix = raw.read(8)
    if len(prefix) < 8:
        return [_problem("header_truncated", 0, length=0, available=size, reason="no length prefix")]
    (length,) = struct.unpack("<Q", prefix)
    if 8 + length > size:
        return [_problem("header_truncated", 0, length=length, available=size - 8, reason="past the end")]
    if length > max_header:
        return [_problem("header_over_limit", 0, length=length, limit=max_header, reason="over the scan limit")]
    blob = raw.read(length)
    if len(blob) < length:
        return [_problem("header_truncated", 0, length=length, available=len(blob), reason="short read")]
    problems: list[Problem] = []
    if length > LIBRARY_MAX_HEADER:
        problems.append(
            _problem("header_over_limit", 0, length=length, limit=LIBRARY_MAX_HEADER, reason="loaders refuse it")
        )
    decoded = _decode(blob)
    if isinstance(decoded, Problem):
        return [*problems, decoded]
    header, text, padding = decoded
    problems.extend(padding)
    result = ParsedHeader(length, size - 8 - length, [], [], None, problems)
    _check_entries(header, result, _Locator(text))
    return result


def _decode(blob: bytes) -> tuple[dict[str, Any], str, list[Problem]] | Problem:
    """Strict UTF-8, strict JSON, an object first, only spaces after it."""
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _problem("header_invalid", 8 + exc.start, reason=f"not UTF-8: {exc.reason}")
    padding: list[Problem] = []
    start = len(text) - len(text.lstrip(JSON_WS))
    if not text.startswith("{", start):
        return _problem("header_invalid", 8 + start, reason="the header is not a JSON object")
    if start:
        padding.append(_problem("bad_padding", 8, reason="whitespace before the JSON object"))
    hook = _surrogates if "\\u" in text else _pairs
    decoder = json.JSONDecoder(object_pairs_hook=hook, parse_constant=_constant)
    try:
        header, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        return _problem("header_invalid", 8 + len(text[: exc.pos].encode()), reason=f"invalid JSON: {exc.msg}")
    except RecursionError:
        return _problem("header_invalid", 8, reason="JSON nested too deeply")
    except _Reject as exc:
        where = _Locator(text)(exc.key) if exc.key is not None else 8
        return _problem("header_invalid", where, reason=str(exc))
    except ValueError as exc:  # an integer too long to convert
        return _problem("header_invalid", 8, reason=str(exc)[:200])
    end_byte = 8 + len(text[:end].encode())
    rest = text[end:]
    if rest.strip(JSON_WS):
        return _problem("header_invalid", end_byte, reason="bytes after the JSON object")
    if rest.strip(" "):
        where = end_byte + len(rest) - len(rest.lstrip(" "))
        padding.append(_problem("bad_padding", where, reason="padding other than spaces after the JSON object"))
    return header, text, padding


def _uint(value: object) -> bool:
    return type(value) is int and 0 <= value <= U64_MAX  # bool is a subclass of int, not the type


def _check_entries(header: dict[str, Any], result: ParsedHeader, where: _Locator) -> None:
    problems = result.problems
    metadata = header.get("__metadata__")
    if metadata is not None:  # null is accepted by the reference loader
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            reason = "not an object" if not isinstance(metadata, dict) else "a value is not a string"
            problems.append(_problem("metadata_invalid", where("__metadata__"), reason=reason))
        else:
            result.metadata = metadata
    spans: list[tuple[int, int, str]] = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if len(problems) > MAX_PROBLEMS:  # one each, 11,600,000 took 7 GB (memory audit, #2)
            result.stopped = True
            return
        result.names.append(name)
        if not isinstance(entry, dict) or not entry.keys() >= TENSOR_FIELDS:
            reason = "not an object" if not isinstance(entry, dict) else "lacks dtype, shape or data_offsets"
            problems.append(_problem("unknown_key", where(name), key=name, reason=reason))
            continue
        if len(entry) > len(TENSOR_FIELDS):
            extra = ",".join(sorted(entry.keys() - TENSOR_FIELDS))[:200]
            problems.append(_problem("extra_field", where(name), tensor=name, fields=extra))
        _check_tensor(name, entry, result, spans, where)
    _check_layout(result, spans, where)


def _check_tensor(
    name: str, entry: dict[str, Any], result: ParsedHeader, spans: list[tuple[int, int, str]], where: _Locator
) -> None:
    """Validate one entry; a tensor with valid offsets owns its bytes for the layout even if it is bad."""
    problems = result.problems
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    bits = DTYPE_BITS.get(dtype) if isinstance(dtype, str) else None
    if bits is None:
        problems.append(_problem("unknown_dtype", where(name), tensor=name, dtype=str(dtype)[:64]))
    numel = _numel(shape, bits or 8)
    if isinstance(numel, str):
        problems.append(_problem("bad_shape", where(name), tensor=name, reason=numel))
    if not (type(offsets) is list and len(offsets) == 2 and _uint(offsets[0]) and _uint(offsets[1])):
        reason = "data_offsets must be two unsigned 64-bit integers"
        problems.append(_problem("bad_offsets", where(name), tensor=name, reason=reason))
        return
    begin, end = offsets
    if begin > end:
        problems.append(_problem("bad_offsets", where(name), tensor=name, reason=f"begin {begin} is after end {end}"))
        return
    spans.append((begin, end, name))
    if end > result.data_size:
        problems.append(_problem("out_of_bounds", where(name), tensor=name, end=end, buffer=result.data_size))
    if bits is None or isinstance(numel, str):
        return
    expected, remainder = divmod(numel * bits, 8)
    if remainder or end - begin != expected:
        reason = "sub-byte elements do not fill whole bytes" if remainder else "wrong length for dtype and shape"
        size = end - begin
        problems.append(
            _problem("size_mismatch", where(name), tensor=name, expected=expected, actual=size, reason=reason)
        )
    result.tensors.append(TensorInfo(name, dtype, tuple(shape), begin, end))


def _numel(shape: object, bits: int) -> int | str:
    """Element count, or why the shape is invalid; overflow is checked left to right like the loader."""
    if type(shape) is not list:
        return "shape must be a list of unsigned 64-bit integers"
    count = 1
    for dim in shape:
        if not _uint(dim):
            return "shape must be a list of unsigned 64-bit integers"
        count *= dim
        if count > U64_MAX:
            return "element count overflows 64 bits"
    if count * bits > U64_MAX:
        return "size in bits overflows 64 bits"
    return count


def _check_layout(result: ParsedHeader, spans: list[tuple[int, int, str]], where: _Locator) -> None:
    """Tensors sorted by offset must tile the data buffer exactly: no overlap, no gap, nothing after."""
    base, size = result.data_start, result.data_size
    cursor, previous = 0, ""
    for span_begin, span_end, name in sorted(spans):
        begin, end = min(span_begin, size), min(span_end, size)
        if begin < cursor:
            result.problems.append(_problem("overlap", where(name), tensor=name, other=previous, start=base + begin))
        elif begin > cursor:
            hidden = (base + cursor, begin - cursor)
            result.problems.append(
                _problem("gap", base + cursor, hidden, length=begin - cursor, after=previous, before=name)
            )
        if end > cursor:
            cursor, previous = end, name
    if cursor < size:
        hidden = (base + cursor, size - cursor)
        result.problems.append(_problem("trailing_data", base + cursor, hidden, length=size - cursor, after=previous))
