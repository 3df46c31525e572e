"""Parse a GGUF header (metadata and tensor infos) from a file handle without trusting any length in it.

A GGUF file is magic, version, tensor and KV counts, the KVs, the tensor infos, padding to the alignment,
then tensor data. Every count and length in it (strings, arrays, dims) comes from whoever wrote the file, so
each is checked against the bytes left and the scan limits before anything is read: a string that claims
2^63 bytes costs nothing. Tensor data is never read; the layout is checked from the infos alone.

`gguf.GGUFReader` is not used: it maps the whole file and trusts those lengths. The constants and types of
the `gguf` package are, so new quantization types are known as soon as the package knows them. Every
deviation becomes a `Problem`; the scanner turns problems into observations.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, BinaryIO

from wscan.limits import BudgetExceeded
from wscan.model import AttrValue
from wscan.scanners.problems import Problem


def _gguf_constants() -> ModuleType:
    """`gguf.constants` alone: the gguf package's __init__ imports NumPy (0.2 s) for a reader and writer that
    wscan never uses, and constants.py imports only enum and typing."""
    loaded = sys.modules.get("gguf.constants")
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("gguf")  # finds the package without running its __init__
    if package is None or not package.submodule_search_locations:
        raise ImportError("the gguf package is not installed")
    path = f"{package.submodule_search_locations[0]}/constants.py"
    spec = importlib.util.spec_from_file_location("wscan._gguf_constants", path) if os.path.isfile(path) else None
    if spec is None or spec.loader is None:  # the package is laid out differently: import it the slow way
        return importlib.import_module("gguf.constants")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # enum and dataclass machinery look the module up by name
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from gguf.constants import (
        GGML_QUANT_SIZES,
        GGUF_DEFAULT_ALIGNMENT,
        GGUF_MAGIC,
        MODEL_ARCH_NAMES,
        GGMLQuantizationType,
        GGUFValueType,
        LlamaFileType,
    )
else:
    _constants = _gguf_constants()
    GGML_QUANT_SIZES = _constants.GGML_QUANT_SIZES
    GGUF_DEFAULT_ALIGNMENT = _constants.GGUF_DEFAULT_ALIGNMENT
    GGUF_MAGIC = _constants.GGUF_MAGIC
    GGMLQuantizationType = _constants.GGMLQuantizationType
    GGUFValueType = _constants.GGUFValueType
    LlamaFileType = _constants.LlamaFileType
    MODEL_ARCH_NAMES = _constants.MODEL_ARCH_NAMES

MAGIC = struct.pack("<I", GGUF_MAGIC)
ARCHITECTURES = frozenset(MODEL_ARCH_NAMES.values())  # general.architecture values llama.cpp knows
KNOWN_VERSIONS = (1, 2, 3)
GGML_MAX_DIMS = 4  # ggml.h: loaders refuse more
GGML_MAX_NAME = 64  # ggml.h: tensor names are NUL-terminated in 64 bytes, so 63 bytes at most
INT64_MAX = 2**63 - 1
MAX_ARRAY_DEPTH = 8  # arrays of arrays: writers nest one or two levels
MAX_NESTED_ARRAYS = 1 << 16  # arrays inside arrays, in the whole file: each costs a few microseconds
BIG_STRING = 1024 * 1024  # any metadata string longer than this is reported
BIG_GENERAL_STRING = 64 * 1024  # general.* strings are shown to people: names, licences, descriptions
UNUSUAL_ALIGNMENT = 64 * 1024  # writers align to 32; larger alignments make room between tensors
FACT_KEYS = frozenset({"general.architecture", "general.name", "general.file_type", "general.alignment"})
TEMPLATE_KEY = "tokenizer.chat_template"
TOKENS_KEY = "tokenizer.ggml.tokens"
TOKEN_TYPES_KEY = "tokenizer.ggml.token_type"
# What llama.cpp does with the vocabulary and hyperparameters (judged in `gguf_vocab`): the tokenizer model, the
# per-token arrays, and the per-architecture numbers its loader asserts on, kept with where they are.
KEPT_STRINGS = frozenset({"tokenizer.ggml.model", "tokenizer.ggml.pre"})
KEPT_ARRAYS = frozenset({TOKENS_KEY, "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"})
# The special token ids and flags llama.cpp's vocabulary loader reads (src/llama-arch.cpp names; "seperator" is
# its spelling): the ids as UINT32, the flags as BOOL, any other type refuses the file.
TOKENIZER_IDS = frozenset(
    f"tokenizer.ggml.{name}_token_id"
    for name in ("bos", "eos", "eot", "eom", "unknown", "seperator", "padding", "mask", "fim_pre", "fim_suf",
                 "fim_mid", "fim_pad", "fim_rep", "fim_sep", "prefix", "suffix", "middle")
)  # fmt: skip
TOKENIZER_FLAGS = frozenset(
    f"tokenizer.ggml.{name}"
    for name in ("add_bos_token", "add_eos_token", "add_sep_token", "add_space_prefix", "remove_extra_whitespaces",
                 "normalizer.lowercase", "normalizer.strip_accents")
)  # fmt: skip
KEPT_SUFFIXES = frozenset({
    "vocab_size", "block_count", "nextn_predict_layers", "expert_count", "expert_used_count", "expert_group_count",
    "expert_group_used_count",
})  # fmt: skip
_KEEP_KEY = 64 * 1024  # key bytes kept to tell keys apart; longer keys are reported as oversized
_KEEP_FACT = 256  # bytes of a fact string kept for the summary
_CHUNK = 64 * 1024  # bytes read from the file at a time
_TICK_EVERY = 1 << 15  # array elements between two deadline checks

_SCALARS = {
    GGUFValueType.UINT8: "B", GGUFValueType.INT8: "b", GGUFValueType.UINT16: "H", GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I", GGUFValueType.INT32: "i", GGUFValueType.FLOAT32: "f", GGUFValueType.BOOL: "B",
    GGUFValueType.UINT64: "Q", GGUFValueType.INT64: "q", GGUFValueType.FLOAT64: "d",
}  # fmt: skip
_VALUE_TYPES = {vtype.value: vtype for vtype in GGUFValueType}


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """One tensor info; `nbytes` is None when its type or shape make the size unknowable."""

    name: str
    at: int  # file offset of the info entry
    dims: tuple[int, ...] | None  # ggml order, ne[0] first; None when there were too many to read
    dtype: int
    offset: int  # relative to the data section
    numel: int | None
    nbytes: int | None

    @property
    def dtype_name(self) -> str:
        return _dtype_name(self.dtype)


@dataclass(frozen=True, slots=True)
class Template:
    """A chat template string; `text` is None when it was too long to read."""

    key: str
    offset: int  # first byte of the text
    length: int
    text: str | None


@dataclass(frozen=True, slots=True)
class Setting:
    """A kept metadata value: an int, a string or a bool, or for an array its element type and count."""

    at: int  # offset of the key/value pair
    value: int | str | None  # None for arrays, bools and values of another type
    vtype: GGUFValueType
    item: GGUFValueType | None = None  # arrays only
    count: int = 0  # arrays only
    flag: bool | None = None  # BOOL values only: apart from `value`, where a bool would pass for an int


@dataclass(slots=True)
class ParsedGguf:
    """What the header says; `complete` once every tensor info was read."""

    version: int = 0
    tensors: list[TensorInfo] = field(default_factory=list)
    values: dict[str, AttrValue] = field(default_factory=dict)  # the FACT_KEYS present, for the summary
    templates: list[Template] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    settings: dict[str, Setting] = field(default_factory=dict)  # the KEPT_* keys, TOKENIZER_IDS and _FLAGS
    tokens: list[bytes] = field(default_factory=list)  # tokenizer.ggml.tokens, each cut at BIG_STRING bytes
    token_types: bytes = b""  # tokenizer.ggml.token_type's INT32 values as stored, in `byte_order`
    byte_order: str = "<"
    long_tokens: dict[int, int] = field(default_factory=dict)  # index -> full length of the tokens cut
    complete: bool = False
    data_start: int = 0
    over_budget: BudgetExceeded | None = None  # the file's time ran out: what was read until then is reported


@dataclass(frozen=True, slots=True)
class Caps:
    """The caps the parser runs under, and a callback that raises when the file's time is up."""

    max_header_bytes: int
    max_entries: int
    max_template_bytes: int
    check_time: Callable[[], None] | None = None


@dataclass(frozen=True, slots=True)
class _Str:
    """A string field: where its length field is, how long it says it is, and the bytes kept of it."""

    at: int
    length: int
    data: bytes
    width: int

    @property
    def text_at(self) -> int:
        return self.at + self.width


class _Stop(Exception):
    """Parsing cannot go on; the problem says why and where."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.kind)
        self.problem = problem


def _problem(kind: str, offset: int, hidden: tuple[int, int] | None = None, **attrs: AttrValue) -> Problem:
    return Problem(f"gguf.{kind}", offset, attrs, hidden)


def _text(data: bytes, limit: int = 200) -> str:
    """Bytes from the file as printable text for a report (never used to compare)."""
    return data[:limit].decode("utf-8", "backslashreplace")


def _dtype_name(dtype: int) -> str:
    try:
        return GGMLQuantizationType(dtype).name
    except ValueError:
        return str(dtype)


def align_up(value: int, alignment: int) -> int:
    """The next multiple of `alignment` at or after `value`."""
    return -(-value // alignment) * alignment


class _Stream:
    """Reads fields in order; every length is checked against the bytes left and the header limit first.

    Reads go through a small buffer so that a vocabulary of 200,000 strings is not 400,000 file reads, and the
    handle only ever moves forward (a compressed member cannot seek back cheaply).
    """

    def __init__(self, raw: BinaryIO, size: int, caps: Caps) -> None:
        self._raw = raw
        self.size = size
        self._caps = caps
        self.pos = 0
        self._buf = b""
        self._buf_at = 0  # file offset of _buf[0]; the handle sits at _buf_at + len(_buf) or was sought ahead
        self._raw_at = 0
        self._ticks = 0
        self.width = 8  # bytes of a length or count: 4 in GGUFv1
        self.set_order("<")

    def set_order(self, order: str) -> None:
        self.order = order
        self._u32 = struct.Struct(order + "I")
        self._uint = struct.Struct(order + ("I" if self.width == 4 else "Q"))
        self._u64 = struct.Struct(order + "Q")
        self._scalars = {vtype: struct.Struct(order + fmt) for vtype, fmt in _SCALARS.items()}

    def set_width(self, width: int) -> None:
        self.width = width
        self.set_order(self.order)

    @property
    def left(self) -> int:
        return self.size - self.pos

    def ensure(self, n: int, what: str) -> None:
        """Refuse to go past the end of the file or past the header limit."""
        if n > self.left:
            raise _Stop(_problem("truncated", self.pos, field=what, needed=n, available=self.left))
        if self.pos + n > self._caps.max_header_bytes:
            limit = self._caps.max_header_bytes
            detail = f"the header continues past {limit} bytes ({what})"
            raise _Stop(_problem("header_limit", self.pos, limit="max-header-bytes", value=limit, detail=detail))

    def read(self, n: int, what: str) -> bytes:
        self.ensure(n, what)
        start = self.pos - self._buf_at
        if start < 0 or start + n > len(self._buf):
            self._refill(n, what)
            start = 0
        self.pos += n
        return self._buf[start : start + n]

    def _refill(self, n: int, what: str) -> None:
        """Make the buffer start at `pos` and hold at least `n` bytes, reading forward only."""
        start = self.pos - self._buf_at
        kept = self._buf[start:] if 0 <= start < len(self._buf) else b""
        if not kept and self._raw_at != self.pos:
            self._raw.seek(self.pos)
            self._raw_at = self.pos
        want = min(max(n, _CHUNK), self.left) - len(kept)
        data = self._raw.read(want) if want > 0 else b""
        self._raw_at += len(data)
        self._buf, self._buf_at = kept + data, self.pos
        if len(self._buf) < n:
            available = len(self._buf)
            raise _Stop(_problem("truncated", self.pos, field=what, needed=n, available=available))

    def skip(self, n: int, what: str) -> None:
        self.ensure(n, what)
        self.pos += n

    def u32(self, what: str) -> int:
        value: int = self._u32.unpack(self.read(4, what))[0]
        return value

    def u64(self, what: str) -> int:
        value: int = self._u64.unpack(self.read(8, what))[0]
        return value

    def uint(self, what: str) -> int:
        """A length or count: 64 bits, or 32 in GGUFv1."""
        value: int = self._uint.unpack(self.read(self.width, what))[0]
        return value

    def scalar(self, vtype: GGUFValueType) -> int | float:
        fmt = self._scalars[vtype]
        value: int | float = fmt.unpack(self.read(fmt.size, vtype.name))[0]
        return value

    def string(self, keep: int, what: str, key: str) -> _Str:
        """A length-prefixed string: check it fits, keep at most `keep` bytes of it, step over the rest."""
        at = self.pos
        length = self.uint(f"{what} length")
        if length > self.left:
            raise _Stop(_problem("string_truncated", at, key=key, field=what, length=length, available=self.left))
        kept = min(length, keep)
        data = self.read(kept, what) if kept else b""
        if length > kept:
            self.skip(length - kept, what)
        return _Str(at, length, data, self.width)

    def strings(self, count: int, key: str, big: int, keep: bool) -> tuple[list[bytes], list[tuple[int, int, int]]]:
        """An array of strings, straight from the buffer (vocabularies and merges hold 100,000s of them); with
        `keep`, the first `big` bytes of each are returned (the vocabulary, for `gguf_vocab`).

        Also returns (index, offset, length) of the strings longer than `big`. The inner loop takes the strings
        that lie wholly in the buffer and before the header's end; the one that does not is read by `string`,
        which refills the buffer, steps over a long one, or names the problem. Same checks as `string` throughout.
        """
        kept: list[bytes] = []
        found: list[tuple[int, int, int]] = []
        width, unpack = self.width, self._uint.unpack_from
        end_of_header = min(self.size, self._caps.max_header_bytes)
        index = 0
        while index < count:
            self.read(width, "array item length")  # refills the buffer when needed, checks the bounds
            self.pos -= width
            buf, buf_at = self._buf, self._buf_at
            start, limit = self.pos - buf_at, min(len(buf), end_of_header - buf_at)
            stop = min(count, index + _TICK_EVERY)
            while index < stop and start + width <= limit:
                (length,) = unpack(buf, start)
                end = start + width + length
                if end > limit or length > big:
                    break
                if keep:
                    kept.append(buf[start + width : end])
                start = end
                index += 1
            self.pos = buf_at + start
            if index < stop:  # this string crosses the buffer, the header's end, or is long
                item = self.string(big if keep else 0, "array item", key)
                if item.length > big:
                    found.append((index, item.at, item.length))
                if keep:
                    kept.append(item.data)
                index += 1
            if self._caps.check_time is not None:
                self._caps.check_time()
        return kept, found

    def tick(self) -> None:
        """Called once per array element: long arrays must still end within the file's time budget."""
        self._ticks += 1
        if self._ticks % _TICK_EVERY == 0 and self._caps.check_time is not None:
            self._caps.check_time()


def parse_gguf(raw: BinaryIO, size: int, caps: Caps) -> ParsedGguf:
    """Read the header of a GGUF blob at the start of `raw`, stopping at the first thing that cannot be read."""
    result = ParsedGguf()
    parser = _Parser(_Stream(raw, size, caps), result, caps)
    try:
        parser.run()
    except _Stop as stop:
        result.problems.append(stop.problem)
    except BudgetExceeded as exc:
        result.over_budget = exc
    return result


class _Parser:
    """One pass over the header, in file order."""

    def __init__(self, stream: _Stream, result: ParsedGguf, caps: Caps) -> None:
        self.s = stream
        self.result = result
        self.caps = caps
        self.keys: dict[tuple[bytes, int], int] = {}
        self.names: dict[bytes, str] = {}
        self.fact_types: dict[str, tuple[GGUFValueType, int]] = {}
        self.nested = 0  # arrays inside arrays so far
        self.alignment = GGUF_DEFAULT_ALIGNMENT

    def problem(self, kind: str, offset: int, hidden: tuple[int, int] | None = None, **attrs: AttrValue) -> None:
        self.result.problems.append(_problem(kind, offset, hidden, **attrs))

    def run(self) -> None:
        n_tensors, n_kv = self._header()
        for _ in range(n_kv):
            self._kv()
        self.alignment = self._alignment()
        for index in range(n_tensors):
            self._tensor_info(index)
        self.result.data_start = align_up(self.s.pos, self.alignment)
        self.result.complete = True
        _check_layout(self.result, self.s.size, self.alignment)

    # --- header ----------------------------------------------------------------------------------------

    def _header(self) -> tuple[int, int]:
        """Magic, version and the two counts, which must fit in the file before anything is read for them."""
        magic = self.s.read(4, "magic")
        if magic != MAGIC:
            raise _Stop(_problem("header_invalid", 0, reason=f"magic {magic.hex()} is not GGUF"))
        self.result.version = self._version()
        n_tensors = self.s.uint("tensor count")
        n_kv = self.s.uint("KV count")
        self._check_counts(n_tensors, n_kv)
        return n_tensors, n_kv

    def _version(self) -> int:
        """The version, switching to big-endian when it only makes sense byte-swapped (as GGUFReader does)."""
        (version,) = struct.unpack("<I", self.s.read(4, "version"))
        swapped: int = struct.unpack(">I", struct.pack("<I", version))[0]
        if version not in KNOWN_VERSIONS and swapped in KNOWN_VERSIONS:
            self.s.set_order(">")
            self.problem("big_endian", 4, version=swapped)
            version = swapped
        if version not in KNOWN_VERSIONS:
            raise _Stop(_problem("version_invalid", 4, version=version))
        if version == 1:
            self.s.set_width(4)
            self.problem("version_unsupported", 4, version=version)
        return int(version)

    def _check_counts(self, n_tensors: int, n_kv: int) -> None:
        """Each KV and tensor info takes a minimum number of bytes: counts the file cannot hold are lies."""
        width = self.s.width
        minimum = n_kv * (width + 4 + 1) + n_tensors * (width + 4 + 4 + 8)
        if minimum > self.s.left:
            raise _Stop(
                _problem("count_invalid", 8, tensors=n_tensors, kvs=n_kv, minimum=minimum, available=self.s.left)
            )
        limit = self.caps.max_entries
        if max(n_tensors, n_kv) > limit:
            detail = f"{n_tensors} tensors and {n_kv} KVs declared"
            raise _Stop(_problem("header_limit", 8, limit="max-members", value=limit, detail=detail))

    # --- key/value pairs -------------------------------------------------------------------------------

    def _kv(self) -> None:
        """One key/value pair. Keys are judged as C strings: llama.cpp looks them up with strcmp, so
        `tokenizer.chat_template\\0x` is the chat template to it, and a duplicate of that key."""
        at = self.s.pos
        key = self.s.string(_KEEP_KEY, "key", key="")
        c_key, nul, _ = key.data.partition(b"\0")
        name = _text(c_key) + (" (NUL) " + _text(key.data[len(c_key) + 1 :], 40) if nul else "")
        if key.length == 0:
            self.problem("empty_key", at)
        self._oversized(key, name, "key")
        ident = (c_key, -1 if nul or key.length == len(key.data) else key.length)
        first = self.keys.setdefault(ident, at)
        if first != at:
            self.problem("duplicate_key", at, key=name, first=first)
        type_at = self.s.pos
        vtype = self._value_type(self.s.u32("value type"), name, type_at)
        self._kv_value(_text(c_key), name, vtype, at)

    def _kv_value(self, c_key: str, name: str, vtype: GGUFValueType, at: int) -> None:
        """The value; the few keys the summary and the template checker need are kept, the rest stepped over."""
        if c_key in FACT_KEYS:
            self.fact_types[c_key] = (vtype, at)
        if vtype != GGUFValueType.STRING and (c_key == TEMPLATE_KEY or c_key.startswith(TEMPLATE_KEY + ".")):
            # transformers takes a one-string array as the string itself: a template wscan would not read.
            self.problem("template_not_string", at, key=name, type=vtype.name)
        kept = (
            c_key in KEPT_STRINGS or c_key in KEPT_ARRAYS or c_key in TOKENIZER_IDS or c_key in TOKENIZER_FLAGS
            or c_key.rpartition(".")[2] in KEPT_SUFFIXES
        )  # fmt: skip
        setting: Setting | None = None
        if vtype == GGUFValueType.STRING:
            text = self._string_value(c_key, name)
            setting = Setting(at, text, vtype)
        elif vtype == GGUFValueType.ARRAY:
            item, count = self._array(name, 1, keep=c_key in (TOKENS_KEY, TOKEN_TYPES_KEY))
            setting = Setting(at, None, vtype, item, count)
        else:
            value = self.s.scalar(vtype)
            if c_key in FACT_KEYS:
                self.result.values[c_key] = value if isinstance(value, int) else str(value)
            boolean = vtype == GGUFValueType.BOOL
            number = value if isinstance(value, int) and not boolean else None
            setting = Setting(at, number, vtype, flag=bool(value) if boolean else None)
        if kept:
            self.result.settings.setdefault(c_key, setting)  # llama.cpp refuses a repeated key; keep the first

    def _value_type(self, type_id: int, key: str, at: int) -> GGUFValueType:
        vtype = _VALUE_TYPES.get(type_id)
        if vtype is None:
            raise _Stop(_problem("value_type_invalid", at, key=key, type=type_id))
        return vtype

    def _string_value(self, c_key: str, name: str) -> str | None:
        """A string value; returns the part kept of it (up to its NUL, as llama.cpp reads values), if any."""
        template = c_key == TEMPLATE_KEY or c_key.startswith(TEMPLATE_KEY + ".")
        kept = c_key in FACT_KEYS or c_key in KEPT_STRINGS
        keep = self.caps.max_template_bytes if template else _KEEP_FACT if kept else 0
        value = self.s.string(keep, "value", key=name)
        self._oversized(value, name, "value")
        if template:
            text = value.data.decode("utf-8", "replace") if len(value.data) == value.length else None
            self.result.templates.append(Template(name, value.text_at, value.length, text))
        elif c_key in FACT_KEYS:
            self.result.values[c_key] = _text(value.data)
        return _text(value.data.partition(b"\0")[0]) if kept else None

    def _oversized(self, value: _Str, key: str, what: str, index: int | None = None) -> None:
        """Metadata strings far longer than any writer produces: hidden payloads, or a trap for viewers."""
        limit = BIG_GENERAL_STRING if what != "key" and key.startswith("general.") else BIG_STRING
        if value.length > limit:
            attrs: dict[str, AttrValue] = {"key": key, "field": what, "length": value.length, "limit": limit}
            if index is not None:
                attrs["index"] = index
            self.result.problems.append(Problem("gguf.oversized_string", value.at, attrs))

    def _array(self, key: str, depth: int, keep: bool = False) -> tuple[GGUFValueType, int]:
        """An array at nesting `depth` (1 for a KV's own value): its count is checked before any element.
        The vocabulary's strings and token types are kept (`keep`); every other array is stepped over."""
        at = self.s.pos
        item = self._value_type(self.s.u32("array type"), key, at)
        count = self.s.uint("array length")
        minimum = count * _min_item_size(item, self.s.width)
        if minimum > self.s.left:
            raise _Stop(
                _problem("array_truncated", at, key=key, count=count, item_type=item.name, minimum=minimum,
                         available=self.s.left)
            )  # fmt: skip
        if item == GGUFValueType.ARRAY:
            self._check_nesting(key, at, depth, count)
        if item == GGUFValueType.STRING:
            big = BIG_GENERAL_STRING if key.startswith("general.") else BIG_STRING
            strings, long = self.s.strings(count, key, big, keep)
            if keep:
                self.result.tokens, self.result.long_tokens = strings, {index: length for index, _, length in long}
            for index, offset, length in long:
                self._oversized(_Str(offset, length, b"", self.s.width), key, "value", index)
        elif item == GGUFValueType.ARRAY:
            for _ in range(count):
                self._array(key, depth + 1)
                self.s.tick()
        elif keep and item == GGUFValueType.INT32:  # a few bytes a token, bounded by the header limit
            self.result.token_types, self.result.byte_order = self.s.read(minimum, "array"), self.s.order
        else:
            self.s.skip(minimum, "array")
        return item, count

    def _check_nesting(self, key: str, at: int, depth: int, count: int) -> None:
        """Arrays of arrays: llama.cpp refuses them, writers nest a level or two; bound depth and number."""
        if depth >= MAX_ARRAY_DEPTH:
            reason = f"nested {depth + 1} levels deep"
            raise _Stop(_problem("nesting_limit", at, key=key, reason=reason, limit=MAX_ARRAY_DEPTH))
        self.nested += count
        if self.nested > MAX_NESTED_ARRAYS:
            reason = f"more than {MAX_NESTED_ARRAYS} arrays inside arrays"
            raise _Stop(_problem("nesting_limit", at, key=key, reason=reason, limit=MAX_NESTED_ARRAYS))

    def _alignment(self) -> int:
        """general.alignment as loaders take it: a UINT32, a power of two; else the default."""
        if "general.alignment" not in self.fact_types:
            return GGUF_DEFAULT_ALIGNMENT
        vtype, at = self.fact_types["general.alignment"]
        value = self.result.values.get("general.alignment")
        if vtype != GGUFValueType.UINT32 or not isinstance(value, int):
            self.problem("bad_alignment", at, value=str(value), reason=f"type {vtype.name}, not UINT32")
        elif value == 0 or value & (value - 1):
            self.problem("bad_alignment", at, value=str(value), reason="not a non-zero power of two")
        else:
            if value > UNUSUAL_ALIGNMENT:
                self.problem("alignment_unusual", at, alignment=value, limit=UNUSUAL_ALIGNMENT)
            return value
        return GGUF_DEFAULT_ALIGNMENT

    # --- tensor infos ----------------------------------------------------------------------------------

    def _tensor_info(self, index: int) -> None:
        """One tensor info: name, dims, type, offset; every check that needs only the entry itself."""
        at = self.s.pos
        raw_name = self.s.string(_KEEP_KEY, "tensor name", key=f"tensor #{index}")
        name = _text(raw_name.data)
        n_dims = self.s.u32("n_dims")
        dims: tuple[int, ...] | None = None
        if n_dims > GGML_MAX_DIMS:
            self.problem("too_many_dims", at, tensor=name, n_dims=n_dims, limit=GGML_MAX_DIMS)
            self.s.skip(n_dims * self.s.width, "dims")
        else:
            dims = tuple(self.s.uint("dim") for _ in range(n_dims))
        dtype = self.s.u32("tensor type")
        offset = self.s.u64("tensor offset")
        self._check_name(raw_name, name, at)
        numel, nbytes = self._size(name, at, dims, dtype)
        if offset % self.alignment:
            self.problem("misaligned_offset", at, tensor=name, data_offset=offset, alignment=self.alignment)
        self.result.tensors.append(TensorInfo(name, at, dims, dtype, offset, numel, nbytes))

    def _check_name(self, raw: _Str, name: str, at: int) -> None:
        """ggml keeps names as C strings of at most 63 bytes and refuses two tensors of the same name."""
        if raw.length >= GGML_MAX_NAME:
            self.problem("tensor_name_too_long", at, tensor=name, length=raw.length, limit=GGML_MAX_NAME - 1)
        c_name = raw.data.split(b"\0", 1)[0]  # what ggml compares
        if c_name in self.names:
            self.problem("duplicate_tensor", at, tensor=name, other=self.names[c_name])
        else:
            self.names[c_name] = name

    def _size(self, name: str, at: int, dims: tuple[int, ...] | None, dtype: int) -> tuple[int | None, int | None]:
        """Element count and byte size, as ggml computes and checks them; None where unknowable."""
        if dims is None:
            return None, None
        numel = _numel(dims)
        if isinstance(numel, str):
            self.problem("bad_shape", at, tensor=name, shape=_shape(dims), reason=numel)
        quant = _quant_size(dtype)
        if quant is None:
            self.problem("unknown_dtype", at, tensor=name, dtype=dtype)
            return None, None
        if isinstance(numel, str):
            return None, None
        block, type_size = quant
        if 0 in dims[1:]:  # review 29: GGUFWriter writes these and llama.cpp loads them; older ggml divided by 0
            self.problem("zero_size_tensor", at, tensor=name, shape=_shape(dims))
        row = dims[0] if dims else 1
        if row % block:
            self.problem("block_size_mismatch", at, tensor=name, dtype=_dtype_name(dtype), row=row, block=block)
            return numel, None
        nbytes = numel // block * type_size
        if nbytes > INT64_MAX:
            self.problem("bad_shape", at, tensor=name, shape=_shape(dims), reason="size in bytes overflows 64 bits")
            return numel, None
        return numel, nbytes


def _min_item_size(item: GGUFValueType, width: int) -> int:
    """Fewest bytes one array element of this type can take."""
    if item == GGUFValueType.STRING:
        return width
    if item == GGUFValueType.ARRAY:
        return 4 + width
    return struct.calcsize("<" + _SCALARS[item])


def _quant_size(dtype: int) -> tuple[int, int] | None:
    """(block size, bytes per block) of a tensor type, None for a type this gguf package does not define."""
    try:
        return GGML_QUANT_SIZES.get(GGMLQuantizationType(dtype))
    except ValueError:
        return None


def _numel(dims: tuple[int, ...]) -> int | str:
    """Element count, or why ggml refuses the shape (its checks, in its order)."""
    for index, dim in enumerate(dims):
        if dim > INT64_MAX:
            return f"dimension {index} is negative as a signed 64-bit integer"
    count = dims[0] if dims else 1
    for dim in dims[1:]:
        if dim > 1 and INT64_MAX // dim < count:  # ggml skips 0 and 1 here: they cannot overflow
            return "element count overflows 64 bits"
        count *= dim
    return count


def _shape(dims: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _check_layout(result: ParsedGguf, size: int, alignment: int) -> None:
    """Tensors must lie inside the file, apart, and leave no bytes but alignment padding unclaimed."""
    base = result.data_start
    data_size = max(0, size - base)
    sized = [t for t in result.tensors if t.nbytes is not None]
    for tensor in sized:
        end = tensor.offset + (tensor.nbytes or 0)
        if end > data_size:
            result.problems.append(
                _problem("out_of_bounds", tensor.at, tensor=tensor.name, end=base + end, size=size)
            )
    if len(sized) < len(result.tensors):
        return  # a tensor of unknown size may own any bytes: hidden-byte checks would only guess
    cursor, previous = 0, ""
    for tensor in sorted(sized, key=lambda t: (t.offset, t.nbytes or 0)):
        begin, end = min(tensor.offset, data_size), min(tensor.offset + (tensor.nbytes or 0), data_size)
        padded = align_up(cursor, alignment)
        if begin < cursor and end > begin:
            result.problems.append(
                _problem("overlap", tensor.at, tensor=tensor.name, other=previous, start=base + begin)
            )
        elif begin > padded:
            hidden = (base + padded, begin - padded)
            result.problems.append(
                _problem("gap", base + padded, hidden, length=begin - padded, after=previous, before=tensor.name)
            )
        if end > cursor:
            cursor, previous = end, tensor.name
    padded = align_up(cursor, alignment)
    if data_size > padded:
        hidden = (base + padded, data_size - padded)
        result.problems.append(_problem("trailing_data", base + padded, hidden, length=data_size - padded,
                                        after=previous))  # fmt: skip


def summary(result: ParsedGguf) -> dict[str, AttrValue]:
    """The facts a model inventory needs: sizes, types and what the file says it is."""
    tensors = result.tensors
    dtypes = sorted({t.dtype_name for t in tensors})
    quantized = sorted({t.dtype_name for t in tensors if (_quant_size(t.dtype) or (1, 0))[0] > 1})
    attrs: dict[str, AttrValue] = {
        "tensors": len(tensors),
        "parameters": sum(t.numel or 0 for t in tensors),
        "dtypes": ",".join(dtypes),
        "quantization": ",".join(quantized),
        "version": result.version,
    }
    for key, name in (("general.architecture", "architecture"), ("general.name", "name")):
        if isinstance(result.values.get(key), str):
            attrs[name] = result.values[key]
    file_type = result.values.get("general.file_type")
    if isinstance(file_type, int) and not isinstance(file_type, bool):
        attrs["file_type"] = file_type
        with contextlib.suppress(ValueError):
            attrs["file_type_name"] = LlamaFileType(file_type).name
    return attrs
