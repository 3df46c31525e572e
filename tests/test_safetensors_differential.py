"""Safetensors differential: the `safetensors` library and wscan must agree on which files are valid.

A file the library loads (deserialize and safe_open, every tensor read) must have no finding at or above
HIGH; a file the library refuses must have one, or not be recognised as safetensors at all (UNRECOGNISED).
Mutations start from real `save_file` outputs. Where wscan is deliberately stricter, the case is named in
STRICTER (HIGH) or NOTED (below HIGH) with its reason and asserted both ways, never silently skipped.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import deserialize, safe_open
from safetensors.numpy import save as np_save
from safetensors.torch import save as torch_save

from tests.helpers.scanning import scan
from wscan.model import Severity
from wscan.report import Report

# --- oracle and verdicts ------------------------------------------------------------------------------------


def library_error(path: Path) -> str | None:
    """Why the reference loader refuses the file, or None when it reads the header and every tensor.

    `deserialize` is the library's own reader, free of any framework's dtype or shape limits; safe_open is
    the path users take, checked too so the two entry points cannot disagree unnoticed.
    """
    blob = path.read_bytes()
    try:
        tensors = deserialize(blob)  # type: ignore[no-untyped-call]
        for _, tensor in tensors:
            assert isinstance(tensor["data"], bytes | bytearray)
        with safe_open(str(path), framework="np") as handle:
            handle.metadata()
            for key in handle.keys():  # noqa: SIM118 - safe_open is not a mapping
                handle.get_slice(key)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:200]
    return None


def high_rules(report: Report, prefix: str) -> set[str]:
    """Rules at HIGH or above whose ID starts with `prefix`."""
    return {f.rule_id for f in report.findings if f.severity >= Severity.HIGH and f.rule_id.startswith(prefix)}


@dataclass(frozen=True)
class Verdicts:
    library: str | None  # None: loaded
    wscan: set[str]  # safetensors rules at HIGH or above
    other: set[str]  # any other rule at HIGH or above
    reasons: list[str]
    recognised: bool  # read by the safetensors scanner, not skipped as an unknown format
    header_length: int
    noted: set[str]  # rules at LOW or MEDIUM

    @property
    def flagged(self) -> bool:
        """wscan calls the file bad: a HIGH finding, or not a safetensors file at all (WS-FILE-006)."""
        return bool(self.wscan or self.other) or not self.recognised


def judge(folder: Path, blob: bytes, name: str = "m.safetensors") -> Verdicts:
    path = folder / name
    path.write_bytes(blob)
    report = scan(path)
    reasons = [str(f.evidence.get("reason", "")) for f in report.findings if f.severity >= Severity.HIGH]
    recognised = any("safetensors" in result.formats for result in report.files)
    if not recognised:  # the only finding then is the unknown-format one
        assert {f.rule_id for f in report.findings} == {"WS-FILE-006"}, report.findings
    st_rules = high_rules(report, "WS-ST-")
    length = struct.unpack("<Q", blob[:8])[0] if len(blob) >= 8 else -1
    return Verdicts(
        library_error(path),
        st_rules,
        high_rules(report, "WS-") - st_rules,
        reasons,
        recognised,
        length,
        {f.rule_id for f in report.findings if Severity.INFO < f.severity < Severity.HIGH},
    )


# Cases where wscan refuses what the library loads, each with the rule that says so and why.
STRICTER: dict[str, tuple[str, str]] = {
    "duplicate-tensor-key": (
        "WS-ST-003",
        "serde_json keeps the last of two equal keys; other JSON readers keep the first, so a scanner and a "
        "loader can see different tensors",
    ),
}


def is_stricter_case(verdicts: Verdicts) -> str | None:
    """Name the documented exception a library-accepted, wscan-flagged file falls under, if any."""
    if verdicts.wscan == {"WS-ST-003"} and not verdicts.other and all("duplicate key" in r for r in verdicts.reasons):
        return "duplicate-tensor-key"
    return None


# Files the library refuses that wscan does not even recognise as safetensors: the first bytes are not a
# plausible length followed by "{", so discovery (by content, never by name) skips them with WS-FILE-006, an
# unknown-format finding of LOW severity. Nothing in them can be loaded, but a .safetensors name that is
# not safetensors is only reported at LOW.
UNRECOGNISED = {
    "length-zero": "length 0: no header at all",
    "bom": "a UTF-8 byte order mark before the JSON object (serde_json refuses it)",
    "header-array": "the header is a JSON array, not an object",
    "header-string": "the header is a JSON string, not an object",
}


# Files the library loads that wscan reports below HIGH: the header is valid but not what the library writes.
NOTED: dict[str, tuple[str, str]] = {
    "pad-tab-newline": ("WS-ST-014", "padding other than spaces: valid JSON whitespace, never written by the library"),
    "pad-leading-space": ("WS-ST-014", "whitespace before the object: valid, never written by the library"),
    "extra-field": ("WS-ST-015", "serde ignores unknown tensor fields, so they can carry data no tool shows"),
}


# --- building files -----------------------------------------------------------------------------------------


def split(blob: bytes) -> tuple[dict[str, Any], bytes]:
    (length,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8 : 8 + length]), blob[8 + length :]


def assemble(header: dict[str, Any] | str | bytes, data: bytes, length: int | None = None, pad: bytes = b"") -> bytes:
    """A safetensors file from a header (object, JSON text or raw bytes) and a data buffer."""
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    raw = (header.encode() if isinstance(header, str) else header) + pad
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def base_numpy() -> bytes:
    tensors: dict[str, np.ndarray[Any, Any]] = {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.arange(4, dtype=np.int64),
        "c": np.zeros((0, 3), dtype=np.uint8),
        "d": np.ones(3, dtype=np.float16),
    }
    return np_save(tensors, metadata={"format": "np"})


def base_torch() -> bytes:
    tensors = {"w": torch.randn(3, 2), "bias": torch.zeros(2, dtype=torch.bfloat16), "i": torch.tensor([1, 2])}
    return torch_save(tensors, metadata={"format": "pt"})


BASE = base_numpy()
HEADER, DATA = split(BASE)


def edit(change: Callable[[dict[str, Any]], None], data: bytes = DATA) -> bytes:
    header = json.loads(json.dumps(HEADER))
    change(header)
    return assemble(header, data)


def set_field(tensor: str, field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(header: dict[str, Any]) -> None:
        header[tensor][field] = value

    return change


def text_header() -> str:
    return json.dumps(HEADER, separators=(",", ":"))


def offsets(name: str) -> list[int]:
    return list(HEADER[name]["data_offsets"])


def shifted(after: int, by: int) -> dict[str, Any]:
    """HEADER with every tensor starting at or after `after` moved by `by` bytes."""
    header: dict[str, Any] = json.loads(json.dumps(HEADER))
    for key, entry in header.items():
        if key != "__metadata__" and entry["data_offsets"][0] >= after:
            entry["data_offsets"] = [entry["data_offsets"][0] + by, entry["data_offsets"][1] + by]
    return header


def first_tensor() -> str:
    return min((k for k in HEADER if k != "__metadata__"), key=lambda k: (offsets(k)[0], offsets(k)[1]))


def with_gap(name: str, size: int) -> bytes:
    """`size` bytes inserted before tensor `name`, later offsets shifted: a gap no tensor owns."""
    begin = offsets(name)[0]
    return assemble(shifted(begin, size), DATA[:begin] + b"\xcc" * size + DATA[begin:])


def duplicate_key(key: str) -> bytes:
    """The same top-level key twice in the JSON text; both entries are valid on their own."""
    text = text_header()
    body = json.dumps({key: HEADER[key]}, separators=(",", ":"))[1:-1]
    return assemble(text[:-1] + "," + body + "}", DATA)


def header_length(length: int) -> bytes:
    """A real save_file output whose header is `length` bytes: the tensor's name is grown until it is. Its first
    bytes are then pickle opcodes (640 is 80 02: PROTO 2), and wscan reads every file that could be a pickle both
    ways; the unpickler refuses the next byte, so the file is no pickle and must not be judged as one."""
    for size in range(1, length):
        blob = np_save({"x" * size: np.zeros(2, dtype=np.float32)})
        if struct.unpack("<Q", blob[:8])[0] == length:
            return blob
    raise AssertionError(f"no header of {length} bytes")


def unpadded_ext1() -> bytes:
    """A valid file whose header is exactly 0x82 bytes long, so its first byte is the pickle opcode EXT1."""
    header = {"t0": {"dtype": "BF16", "shape": [], "data_offsets": [0, 2]}}
    text = json.dumps(header, separators=(",", ":")).encode()
    return assemble(text, b"\0\0", pad=b" " * (0x82 - len(text)))


def overlap() -> bytes:
    a_begin = offsets("a")[0]
    return edit(set_field("d", "data_offsets", [a_begin, a_begin + 6]))


def cases() -> dict[str, bytes]:
    """Systematic mutations of real save_file outputs, one per kind."""
    text = text_header()
    raw = text.encode()
    a_begin, a_end = offsets("a")
    return {
        "numpy-save": BASE,
        "torch-save": base_torch(),
        "no-metadata": edit(lambda h: h.pop("__metadata__")),
        "metadata-null": edit(lambda h: h.__setitem__("__metadata__", None)),
        "metadata-int-value": edit(lambda h: h.__setitem__("__metadata__", {"format": 1})),
        "metadata-nested": edit(lambda h: h.__setitem__("__metadata__", {"format": {"x": "y"}})),
        "metadata-list": edit(lambda h: h.__setitem__("__metadata__", ["np"])),
        "metadata-bool": edit(lambda h: h.__setitem__("__metadata__", {"ok": True})),
        "metadata-empty": edit(lambda h: h.__setitem__("__metadata__", {})),
        "length-plus-one": assemble(raw, DATA, length=len(raw) + 1),
        "length-minus-one": assemble(raw, DATA, length=len(raw) - 1),
        "length-zero": assemble(raw, DATA, length=0),
        "length-past-eof": assemble(raw, DATA, length=len(raw) + len(DATA) + 1),
        "length-huge": assemble(raw, DATA, length=2**63),
        "length-over-100mb": assemble(raw, DATA, length=100_000_001),
        "pad-spaces": assemble(raw, DATA, pad=b" " * 13),
        "pad-tab-newline": assemble(raw, DATA, pad=b"\t\n\r "),
        "pad-leading-space": assemble(b"   " + raw, DATA),
        "pad-nul": assemble(raw, DATA, pad=b"\0" * 4),
        "pad-non-utf8": assemble(raw, DATA, pad=b"\xff"),
        "junk-after-object": assemble(raw, DATA, pad=b"x"),
        "second-object": assemble(raw, DATA, pad=b"{}"),
        "bom": assemble(b"\xef\xbb\xbf" + raw, DATA),
        "non-utf8-key": assemble(raw.replace(b'"a"', b'"\xe9"'), DATA),
        "unicode-escape-key": assemble(text.replace('"a"', '"\\u00e9"'), DATA),
        "lone-surrogate-key": assemble(text.replace('"a"', '"\\ud800"'), DATA),
        "nan-in-metadata": assemble(text.replace('{"format":"np"}', '{"format":NaN}'), DATA),
        "header-array": assemble("[]", b""),
        "header-string": assemble('"x"', b""),
        "empty-header-no-data": assemble("{}", b""),
        "empty-header-with-data": assemble("{}", b"\0" * 8),
        "only-metadata": assemble({"__metadata__": {"a": "b"}}, b""),
        "duplicate-tensor-key": duplicate_key("a"),
        "duplicate-metadata-key": duplicate_key("__metadata__"),
        "unpadded-length-read-as-pickle": unpadded_ext1(),
        **{f"header-length-{n}-read-as-pickle": header_length(n) for n in (640, 896, 1152, 1408)},
        "overlap": overlap(),
        "gap-between": with_gap("b", 4),
        "gap-before-first": with_gap(first_tensor(), 8),
        "trailing-bytes": assemble(raw, DATA + b"\0" * 8),
        "trailing-pickle": assemble(raw, DATA + b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00id\x85R."),
        "truncated-data": assemble(raw, DATA[:-1]),
        "out-of-bounds": edit(set_field("a", "data_offsets", [a_begin, len(DATA) + 24])),
        "begin-after-end": edit(set_field("a", "data_offsets", [a_end, a_begin])),
        "offsets-negative": edit(set_field("a", "data_offsets", [-1, a_end])),
        "offsets-float": edit(set_field("a", "data_offsets", [float(a_begin), float(a_end)])),
        "offsets-string": edit(set_field("a", "data_offsets", [str(a_begin), str(a_end)])),
        "offsets-three": edit(set_field("a", "data_offsets", [a_begin, a_end, a_end])),
        "offsets-over-u64": edit(set_field("a", "data_offsets", [a_begin, 2**64])),
        "dtype-same-size": edit(set_field("a", "dtype", "I32")),
        "dtype-wrong-size": edit(set_field("a", "dtype", "F64")),
        "dtype-unknown": edit(set_field("a", "dtype", "F128")),
        "dtype-lowercase": edit(set_field("a", "dtype", "f32")),
        "dtype-int": edit(set_field("a", "dtype", 4)),
        "shape-transposed": edit(set_field("a", "shape", [3, 2])),
        "shape-flat": edit(set_field("a", "shape", [6])),
        "shape-wrong-count": edit(set_field("a", "shape", [3, 3])),
        "shape-negative": edit(set_field("a", "shape", [-2, -3])),
        "shape-float": edit(set_field("a", "shape", [2.0, 3])),
        "shape-not-list": edit(set_field("a", "shape", 6)),
        "shape-overflow": edit(set_field("c", "shape", [2**32, 2**32, 2])),
        "shape-zero-times-huge": edit(set_field("c", "shape", [0, 2**63])),
        "shape-bits-overflow": edit(set_field("c", "shape", [2**62])),
        "scalar-without-bytes": edit(lambda h: h["b"].update(shape=[], data_offsets=[h["b"]["data_offsets"][0]] * 2)),
        "empty-tensor-moved-inside-another": edit(set_field("c", "data_offsets", [a_begin + 4, a_begin + 4])),
        "extra-field": edit(set_field("a", "note", "hi")),
        "missing-field": edit(lambda h: h["a"].pop("shape")),
        "entry-not-object": edit(lambda h: h.__setitem__("x", "y")),
        "entry-empty-object": edit(lambda h: h.__setitem__("x", {})),
        "empty-tensor-name": edit(lambda h: h.__setitem__("", h.pop("c"))),
        "keys-reordered": assemble(dict(reversed(list(HEADER.items()))), DATA),
        "deep-nesting-in-metadata": assemble(text.replace('"np"', "[" * 200 + "]" * 200), DATA),
    }


CASES = cases()


@pytest.mark.parametrize("case", list(CASES))
def test_wscan_and_library_agree(tmp_path: Path, case: str) -> None:
    """Loads <=> no HIGH finding, except the documented STRICTER cases, which are asserted as such."""
    verdicts = judge(tmp_path, CASES[case])
    loads = verdicts.library is None
    if case in STRICTER:
        rule, _ = STRICTER[case]
        assert loads, f"{case}: the library now refuses it ({verdicts.library}); drop it from STRICTER"
        assert rule in verdicts.wscan | verdicts.other, verdicts
        assert is_stricter_case(verdicts) == case, verdicts
    elif loads:
        assert verdicts.recognised and not verdicts.wscan and not verdicts.other, f"{case}: loads, wscan: {verdicts}"
        assert verdicts.noted == ({NOTED[case][0]} if case in NOTED else set()), verdicts.noted
    else:
        assert verdicts.flagged, f"{case}: the library refuses it ({verdicts.library}), wscan is silent"
        assert verdicts.recognised == (case not in UNRECOGNISED), verdicts


# --- generated variations -----------------------------------------------------------------------------------

DTYPES = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U8": 1, "BOOL": 1, "F64": 8, "I8": 1, "I16": 2}


@st.composite
def layouts(draw: st.DrawFn) -> bytes:
    """Tensors laid out by a writer, then nudged: size slips, gaps, overlaps, lost or extra bytes."""
    count = draw(st.integers(0, 4))
    header: dict[str, Any] = {}
    if draw(st.booleans()):
        header["__metadata__"] = draw(
            st.dictionaries(st.text(max_size=4), st.one_of(st.text(max_size=4), st.integers(), st.none()), max_size=2)
        )
    cursor = 0
    for index in range(count):
        dtype = draw(st.sampled_from(sorted(DTYPES)))
        shape = draw(st.lists(st.integers(0, 4), max_size=3))
        size = int(np.prod(shape, dtype=np.int64)) * DTYPES[dtype]
        begin = max(0, cursor + draw(st.sampled_from([0, 0, 0, 0, 1, -1, 2])))
        end = begin + size + draw(st.sampled_from([0, 0, 0, 0, 1, -1]))
        header[f"t{index}"] = {"dtype": dtype, "shape": shape, "data_offsets": [begin, max(end, 0)]}
        cursor = max(cursor, end)
    items = list(header.items())
    order = draw(st.permutations(range(len(items))))
    header = {items[i][0]: items[i][1] for i in order}
    data_size = max(0, cursor + draw(st.sampled_from([0, 0, 0, 1, -1, 8])))
    data = bytes(draw(st.integers(0, 255)) for _ in range(1)) * data_size
    pad = draw(st.sampled_from([b"", b" ", b"       ", b"\n", b"\t "]))
    return assemble(header, data, pad=pad)


def check_agreement(folder: Path, blob: bytes) -> None:
    verdicts = judge(folder, blob)
    if verdicts.library is None:
        assert verdicts.recognised, "the library loads it, wscan does not recognise it"
        if verdicts.wscan or verdicts.other:
            assert is_stricter_case(verdicts) in STRICTER, f"the library loads it, wscan says {verdicts}"
    else:
        assert verdicts.flagged, f"the library refuses it ({verdicts.library}), wscan is silent"


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(blob=layouts())
def test_generated_layouts_agree(tmp_path: Path, blob: bytes) -> None:
    """Structured variations: offsets, sizes, dtypes, shapes, metadata values, padding, buffer size."""
    check_agreement(tmp_path, blob)


@SETTINGS
@given(
    source=st.sampled_from([BASE, base_torch()]),
    edits=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=3),
    cut=st.integers(0, 16),
    tail=st.binary(max_size=8),
)
def test_mutated_bytes_agree(
    tmp_path: Path, source: bytes, edits: list[tuple[int, int]], cut: int, tail: bytes
) -> None:
    """Byte-level damage to real files: flipped length or header bytes, truncation, appended bytes."""
    blob = bytearray(source)
    for position, value in edits:
        blob[position % len(blob)] = value
    mutated = bytes(blob[: len(blob) - cut]) + tail
    check_agreement(tmp_path, mutated)
