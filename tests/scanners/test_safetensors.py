"""Safetensors scanner: one hand-crafted file per check, real library files stay clean, and the parser agrees
with the reference loader on every benign file."""

from __future__ import annotations

import io
import json
import os
import pickle
import py_compile
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.numpy import save_file as np_save
from safetensors.torch import save_file as pt_save

import wscan
from tests.helpers.scanning import default_engine, rule_ids
from tests.helpers.scanning import scan_bytes as _scan_bytes
from wscan.config import Config
from wscan.limits import Budget, Limits
from wscan.model import Location, Observation, Severity
from wscan.report import Report
from wscan.scanners.base import Artifact, Head, ScanContext
from wscan.scanners.safetensors import SafetensorsScanner
from wscan.scanners.safetensors_header import DTYPE_BITS, ParsedHeader, parse_header

# --- helpers -----------------------------------------------------------------------------------------


def scan_bytes(tmp_path: Path, blob: bytes, config: Config | None = None) -> Report:
    return _scan_bytes(tmp_path, blob, "model.safetensors", config)


def tensor(dtype: str, shape: list[Any], begin: int, end: int) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def build(header: dict[str, Any] | bytes, data: bytes = b"", pad: bytes = b"") -> bytes:
    """A safetensors file from a header (dict or raw JSON bytes) and a data buffer."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    text += pad
    return struct.pack("<Q", len(text)) + text + data


def observe(blob: bytes, limits: Limits | None = None) -> list[Observation]:
    """Run the scanner alone on bytes; children are not followed."""
    limits = limits or Limits()
    artifact = Artifact(Location("t.safetensors"), len(blob), lambda: io.BytesIO(blob), name="t.safetensors")
    ctx = ScanContext(limits, Budget(limits))
    return [o for o in SafetensorsScanner().scan(artifact, ctx) if isinstance(o, Observation)]


def kinds(blob: bytes) -> set[str]:
    return {o.kind for o in observe(blob)} - {"safetensors.layout"}


def parse(blob: bytes, max_header: int = 100 * 1024 * 1024) -> ParsedHeader | list[Any]:
    return parse_header(io.BytesIO(blob), len(blob), max_header)


F32X2 = tensor("F32", [2], 0, 8)
GOOD = build({"a": F32X2}, b"\0" * 8)

# --- the happy path and sniffing ---------------------------------------------------------------------


def test_minimal_file_is_clean_and_summarised(tmp_path: Path) -> None:
    blob = build({"__metadata__": {"format": "pt"}, "a": F32X2, "b": tensor("I8", [0], 8, 8)}, b"\0" * 8)
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == set()
    assert report.files[0].formats == ("safetensors",) and report.files[0].status == "scanned"
    layout = observe(blob)
    assert [o.kind for o in layout] == ["safetensors.layout"]
    header_bytes = len(blob) - 16
    expected = {"tensors": 2, "dtypes": "F32,I8", "parameters": 2, "header_bytes": header_bytes, "format": "pt"}
    assert dict(layout[0].attrs) == expected


def test_empty_header_is_valid(tmp_path: Path) -> None:
    assert rule_ids(scan_bytes(tmp_path, build(b"{}"))) == set()


@pytest.mark.parametrize(
    ("blob", "accepted"),
    [
        (GOOD, True),
        (build(b"  {}"), True),  # leading whitespace: the reference loader accepts it
        (struct.pack("<Q", 2**40) + b'{"a": 1}', True),  # hostile length: still claimed, to be reported
        (b'{"abcd":{"x": 1}}' + b" " * 64, False),  # JSON whose 9th byte is "{": text, not a length
        (struct.pack("<Q", 1) + b"{}", False),
        (struct.pack("<Q", 4) + b"[1] ", False),
        (b"\x80\x04K\x01.", False),
        (struct.pack("<Q", 2**40) + b"{\x9c\x01", False),  # binary bytes after "{": no JSON object opens so
    ],
)
def test_accepts(blob: bytes, accepted: bool) -> None:
    head = Head(blob[:65536], blob[-65558:], len(blob), "x")
    assert SafetensorsScanner().accepts(head) is accepted
    raw = Head(blob[:65536], blob[-65558:], len(blob), "x", raw_data=True)
    assert SafetensorsScanner().accepts(raw) is False  # tensor bytes inside an archive are never a file


def test_a_pyc_whose_mtime_starts_a_json_object_is_not_safetensors(tmp_path: Path) -> None:
    """CPython's .pyc: a 2-byte magic number and CR LF, flags, then the source's mtime. A package installed with
    an mtime whose low byte is "{" had every .pyc of its __pycache__ reported as a safetensors header past the
    end of the file (high); it is an unknown format, as every other .pyc is."""
    source = tmp_path / "module.py"
    source.write_text("VALUE = 1\n")
    mtime = int.from_bytes(b'{"\x00\x66', "little")  # "{" and a quote: the start of a JSON object
    os.utime(source, (mtime, mtime))
    compiled = Path(py_compile.compile(str(source), cfile=str(tmp_path / "module.pyc")))
    blob = compiled.read_bytes()
    assert blob[2:4] == b"\r\n" and blob[8:10] == b'{"'
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-FILE-006"}
    assert report.files[0].formats == ()


# --- one hand-crafted file per check -----------------------------------------------------------------


@pytest.mark.parametrize(
    "blob",
    [
        struct.pack("<Q", 2**40) + b'{"a": 1}',
        struct.pack("<Q", 0xFFFFFFFFFFFFFFFF) + b"{}",
        build({"a": F32X2})[:-5],  # header cut short
    ],
)
def test_header_truncated(tmp_path: Path, blob: bytes) -> None:
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-ST-001"}
    assert report.files[0].status == "failed"
    assert report.findings[0].location.offset == 0


def test_header_over_scan_limit(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, GOOD, Config(limits=Limits(max_header_bytes=16)))
    assert rule_ids(report) == {"WS-ST-002"}
    assert report.findings[0].evidence["limit"] == 16


def test_header_over_library_limit() -> None:
    big = 100_000_001
    blob = build(b"{}" + b" " * (big - 2))
    problems = parse(blob, max_header=200_000_000)
    assert isinstance(problems, ParsedHeader)
    assert [(p.kind, p.attrs["limit"]) for p in problems.problems] == [("safetensors.header_over_limit", 100_000_000)]


@pytest.mark.parametrize(
    ("header", "reason", "offset"),
    [
        (b'{"a\xff": 1}', "not UTF-8", 11),
        (b'{"a": {"dtype": "F32",', "invalid JSON", None),
        (b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "a": {"dtype": "I32", "shape": [2], '
         b'"data_offsets": [0, 8]}}', "duplicate key 'a'", 9),
        (b'{"__metadata__": {"x": "1", "x": "2"}}', "duplicate key 'x'", None),
        (b'{"__metadata__": {"x": NaN}}', "NaN is not JSON", None),
        (b'{"__metadata__": {"x": -Infinity}}', "-Infinity is not JSON", None),
        (b'{"\\ud800": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}', "lone surrogate", None),
        (b'{"__metadata__": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply", None),
        (b'{"__metadata__": {"x": ' + b"9" * 5000 + b"}}", "digits", None),
        (b"{}x", "bytes after the JSON object", 10),
        (b"{}\x00\x00", "bytes after the JSON object", 10),
    ],
)  # fmt: skip
def test_header_invalid(tmp_path: Path, header: bytes, reason: str, offset: int | None) -> None:
    report = scan_bytes(tmp_path, build(header, b"\0" * 8 if b"data_offsets" in header else b""))
    assert rule_ids(report) == {"WS-ST-003"}
    assert reason in str(report.findings[0].evidence["reason"])
    assert report.files[0].status == "failed"
    if offset is not None:
        assert report.findings[0].location.offset == offset


def test_header_that_is_not_an_object() -> None:
    problems = parse(build(b"[1, 2]"))
    assert isinstance(problems, list)
    assert [(p.kind, p.attrs["reason"]) for p in problems] == [
        ("safetensors.header_invalid", "the header is not a JSON object")
    ]


@pytest.mark.parametrize("metadata", [{"a": 1}, ["a"], "format", {"a": {"b": "c"}}])
def test_metadata_invalid(tmp_path: Path, metadata: Any) -> None:
    report = scan_bytes(tmp_path, build({"__metadata__": metadata, "a": F32X2}, b"\0" * 8))
    assert rule_ids(report) == {"WS-ST-004"}
    assert report.findings[0].location.offset == 9  # the "__metadata__" key


def test_null_metadata_is_accepted_like_the_loader(tmp_path: Path) -> None:
    assert rule_ids(scan_bytes(tmp_path, build({"__metadata__": None, "a": F32X2}, b"\0" * 8))) == set()


def test_a_header_of_problems_stops_at_max_problems() -> None:
    """One problem was built for every key, and a key's offset found by indexing every key: 11,600,000 keys of
    nothing took 7 GB (memory audit, #2). Past MAX_PROBLEMS the entries are not checked, which is a limit finding;
    the problems before it keep their offsets."""
    from wscan.scanners.safetensors_header import MAX_PROBLEMS

    keys = {f"k{i}": 0 for i in range(MAX_PROBLEMS + 50)}
    blob = build({"a": F32X2, **keys}, b"\0" * 8)
    found = observe(blob)
    unknown = [o for o in found if o.kind == "safetensors.unknown_key"]
    assert len(unknown) == MAX_PROBLEMS + 1
    assert unknown[0].attrs["key"] == "k0" and unknown[0].location.offset == blob.index(b'"k0"')
    assert [o.attrs["limit"] for o in found if o.kind == "scan.limit"] == ["max-observations"]
    assert "safetensors.layout" not in {o.kind for o in found}


@pytest.mark.parametrize("entry", [5, "x", [1], {"dtype": "F32", "shape": [0]}, {}])
def test_unknown_key(tmp_path: Path, entry: Any) -> None:
    report = scan_bytes(tmp_path, build({"a": F32X2, "b": entry}, b"\0" * 8))
    assert rule_ids(report) == {"WS-ST-005"}
    assert report.findings[0].evidence["key"] == "b"


def test_extra_field(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build({"a": {**F32X2, "payload": "aW1wb3J0IG9z", "x": 1}}, b"\0" * 8))
    assert rule_ids(report) == {"WS-ST-015"}
    assert report.findings[0].evidence["fields"] == "payload,x"


@pytest.mark.parametrize("dtype", ["F128", "f32", "float32", 4, None, "Q4_0"])
def test_unknown_dtype(tmp_path: Path, dtype: Any) -> None:
    report = scan_bytes(tmp_path, build({"a": tensor(dtype, [2], 0, 8)}, b"\0" * 8))
    assert rule_ids(report) == {"WS-ST-006"}


@pytest.mark.parametrize(
    "shape",
    [[-1], [2.0], [True], "2", 2, [[2]], [2**64], [2**63, 4, 0], [2**62, 1], None],
)
def test_bad_shape(tmp_path: Path, shape: Any) -> None:
    report = scan_bytes(tmp_path, build({"a": tensor("F32", shape, 0, 8)}, b"\0" * 8))
    assert rule_ids(report) == {"WS-ST-007"}


def test_overflow_is_checked_left_to_right_like_the_loader(tmp_path: Path) -> None:
    # 0 first: the running product never overflows, so the loader accepts it.
    assert rule_ids(scan_bytes(tmp_path, build({"a": tensor("F32", [0, 2**63, 4], 0, 0)}))) == set()


@pytest.mark.parametrize("offsets", [[1, 0], [0], [0, 0, 0], ["0", "0"], [-1, 0], [0, 2**64], None, [False, False]])
def test_bad_offsets(tmp_path: Path, offsets: Any) -> None:
    report = scan_bytes(tmp_path, build({"a": {"dtype": "F32", "shape": [0], "data_offsets": offsets}}))
    assert rule_ids(report) == {"WS-ST-008"}


def test_out_of_bounds(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build({"a": F32X2}, b"\0" * 4))
    assert rule_ids(report) == {"WS-ST-009"}
    assert (report.findings[0].evidence["end"], report.findings[0].evidence["buffer"]) == (8, 4)


@pytest.mark.parametrize(
    ("entry", "data", "reason"),
    [
        (tensor("F32", [2], 0, 12), 12, "wrong length"),
        (tensor("F32", [2], 0, 4), 4, "wrong length"),
        (tensor("F4", [3], 0, 2), 2, "whole bytes"),
        (tensor("F6_E2M3", [3], 0, 3), 3, "whole bytes"),
    ],
)
def test_size_mismatch(tmp_path: Path, entry: dict[str, Any], data: int, reason: str) -> None:
    report = scan_bytes(tmp_path, build({"a": entry}, b"\0" * data))
    assert rule_ids(report) == {"WS-ST-010"}
    assert reason in str(report.findings[0].evidence["reason"])


def test_overlap(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build({"a": F32X2, "b": tensor("F32", [1], 4, 8)}, b"\0" * 8))
    assert rule_ids(report) == {"WS-ST-011"}
    assert (report.findings[0].evidence["tensor"], report.findings[0].evidence["other"]) == ("b", "a")


def test_empty_tensor_inside_another_overlaps_like_the_loader_says(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build({"a": F32X2, "b": tensor("F32", [0], 4, 4)}, b"\0" * 8))
    assert rule_ids(report) == {"WS-ST-011"}


def test_gap(tmp_path: Path) -> None:
    blob = build({"a": tensor("F32", [1], 0, 4), "b": tensor("F32", [1], 8, 12)}, b"\0" * 4 + b"note" + b"\0" * 4)
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-ST-012"}
    gap = report.findings[0]
    data_start = len(blob) - 12
    assert gap.location.offset == data_start + 4
    assert dict(gap.evidence) == {"length": 4, "after": "a", "before": "b"}


def test_gap_before_the_first_tensor(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build({"a": tensor("F32", [2], 4, 12)}, b"\0" * 12))
    # The hidden bytes are sniffed as their own blob: four zero bytes are an unknown format (low).
    assert rule_ids(report) == {"WS-ST-012", "WS-FILE-006"}


def test_trailing_data(tmp_path: Path) -> None:
    blob = build({"a": F32X2}, b"\0" * 8 + b"hello world")
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-ST-013"}
    assert report.findings[0].evidence["length"] == 11
    assert report.findings[0].location.offset == len(blob) - 11


def test_pickle_hidden_after_the_tensors_is_scanned_as_its_own_blob(tmp_path: Path) -> None:
    payload = b"cposix\nsystem\n(S'id'\ntR."  # protocol 0: os.system("id"), never loaded
    blob = build({"a": F32X2}, b"\0" * 8 + payload)
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-ST-013", "WS-PKL-001"}
    hidden = len(blob) - len(payload)
    critical = next(f for f in report.findings if f.rule_id == "WS-PKL-001")
    assert critical.location.member == f"@{hidden}"


def test_zip_hidden_in_a_gap_is_scanned_as_its_own_blob(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("evil.pkl", pickle.dumps(eval))  # a reference to builtins.eval, never called here
    hidden = buffer.getvalue()
    blob = build({"a": tensor("U8", [1], 0, 1), "b": tensor("U8", [1], 1 + len(hidden), 2 + len(hidden))},
                 b"\0" + hidden + b"\0")  # fmt: skip
    report = scan_bytes(tmp_path, blob)
    assert "WS-ST-012" in rule_ids(report)
    assert any(f.severity == Severity.CRITICAL and "evil.pkl" in (f.location.member or "") for f in report.findings)


@pytest.mark.parametrize(("pad", "offset_from_end"), [(b"\n", 1), (b"  \t ", 2), (b"\r\n", 2)])
def test_bad_padding(tmp_path: Path, pad: bytes, offset_from_end: int) -> None:
    blob = build({"a": F32X2}, b"\0" * 8, pad=pad)
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-ST-014"}
    assert report.findings[0].location.offset == len(blob) - 8 - offset_from_end


def test_whitespace_before_the_object_is_bad_padding(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build(b"\n" + json.dumps({"a": F32X2}).encode(), b"\0" * 8))
    assert rule_ids(report) == {"WS-ST-014"}


def test_space_padding_is_fine(tmp_path: Path) -> None:
    assert rule_ids(scan_bytes(tmp_path, build({"a": F32X2}, b"\0" * 8, pad=b"     "))) == set()


def test_problems_point_at_their_header_field() -> None:
    blob = build(b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "bad": {"dtype": "X"}}', b"\0" * 8)
    (found,) = [o for o in observe(blob) if o.kind == "safetensors.unknown_key"]
    assert found.location.offset == blob.index(b'"bad"')


# --- benign files from the real libraries ------------------------------------------------------------


def _numpy_files(folder: Path) -> list[Path]:
    arrays = {
        "bool": np.array([True, False, True]),
        "uint8": np.arange(7, dtype=np.uint8),
        "int8": np.arange(-3, 4, dtype=np.int8),
        "int16": np.arange(6, dtype=np.int16).reshape(2, 3),
        "uint16": np.arange(5, dtype=np.uint16),
        "int32": np.arange(9, dtype=np.int32).reshape(3, 3),
        "uint32": np.arange(3, dtype=np.uint32),
        "int64": np.arange(4, dtype=np.int64),
        "uint64": np.arange(4, dtype=np.uint64),
        "float16": np.ones((2, 2), dtype=np.float16),
        "float32": np.linspace(0, 1, 10, dtype=np.float32),
        "float64": np.ones(3, dtype=np.float64),
        "complex64": np.ones(2, dtype=np.complex64),
        "empty": np.zeros((0,), dtype=np.float32),
        "empty2d": np.zeros((2, 0), dtype=np.int64),
        "scalar": np.array(3.5, dtype=np.float32),
    }
    paths = []
    for name, array in arrays.items():
        path = folder / f"np_{name}.safetensors"
        np_save({name: array}, str(path))
        paths.append(path)
    path = folder / "np_all.safetensors"
    np_save(arrays, str(path), metadata={"format": "np", "note": "all dtypes"})
    return [*paths, path]


def _torch_files(folder: Path) -> list[Path]:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    tensors = {
        "bool": base > 5,
        "uint8": base.to(torch.uint8),
        "int8": base.to(torch.int8),
        "int16": base.to(torch.int16),
        "int32": base.to(torch.int32),
        "int64": base.to(torch.int64),
        "uint16": base.to(torch.uint16),
        "uint32": base.to(torch.uint32),
        "uint64": base.to(torch.uint64),
        "float16": base.half(),
        "bfloat16": base.bfloat16(),
        "float32": base,
        "float64": base.double(),
        "complex64": base.to(torch.complex64),
        "f8_e4m3fn": base.to(torch.float8_e4m3fn),
        "f8_e5m2": base.to(torch.float8_e5m2),
        "f8_e4m3fnuz": base.to(torch.float8_e4m3fnuz),
        "f8_e5m2fnuz": base.to(torch.float8_e5m2fnuz),
        "f8_e8m0": base.to(torch.float8_e8m0fnu),
        "f4_x2": torch.arange(6, dtype=torch.uint8).view(torch.float4_e2m1fn_x2).reshape(2, 3),
        "empty": torch.zeros(0),
        "empty2d": torch.zeros(2, 0, dtype=torch.bfloat16),
        "scalar": torch.tensor(1.5),
    }
    paths = []
    for name, value in tensors.items():
        path = folder / f"pt_{name}.safetensors"
        pt_save({name: value}, str(path))
        paths.append(path)
    path = folder / "pt_all.safetensors"
    pt_save(tensors, str(path), metadata={"format": "pt"})
    return [*paths, path]


def _every_dtype_by_hand(folder: Path) -> Path:
    """All 22 dtypes of the format, 8 elements each, laid out like the library does."""
    header: dict[str, Any] = {}
    offset = 0
    for dtype, bits in sorted(DTYPE_BITS.items()):
        size = 8 * bits // 8
        header[dtype] = tensor(dtype, [2, 4], offset, offset + size)
        offset += size
    path = folder / "every_dtype.safetensors"
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(offset))
    return path


@pytest.fixture(scope="module")
def benign(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("benign_safetensors")
    return [*_numpy_files(folder), *_torch_files(folder), _every_dtype_by_hand(folder)]


def test_real_files_have_no_findings(benign: list[Path]) -> None:
    report = wscan.scan([benign[0].parent])
    assert [(f.rule_id, f.location.describe(), f.message) for f in report.findings] == []
    assert {f.status for f in report.files} == {"scanned"}
    assert all(f.formats == ("safetensors",) for f in report.files)


def test_parser_agrees_with_the_reference_loader(benign: list[Path]) -> None:
    for path in benign:
        with path.open("rb") as raw:
            parsed = parse_header(raw, path.stat().st_size, 100 * 1024 * 1024)
        assert isinstance(parsed, ParsedHeader), path.name
        assert parsed.problems == [], path.name
        ours = {t.name: (t.dtype, list(t.shape)) for t in parsed.tensors}
        with safe_open(str(path), "pt") as f:
            theirs = {k: (f.get_slice(k).get_dtype(), list(f.get_slice(k).get_shape())) for k in f.keys()}  # noqa: SIM118
            assert parsed.metadata == f.metadata(), path.name
        assert ours == theirs, path.name


def test_every_dtype_is_covered(benign: list[Path]) -> None:
    with safe_open(str(benign[-1]), "pt") as f:
        assert sorted(f.keys()) == sorted(DTYPE_BITS)


@pytest.mark.parametrize(
    ("blob", "rejected"),
    [
        (build({"a": F32X2}, b"\0" * 9), True),  # trailing data
        (build({"a": tensor("F32", [2], 4, 12)}, b"\0" * 12), True),  # gap
        (build({"a": F32X2, "b": tensor("F32", [1], 4, 8)}, b"\0" * 8), True),  # overlap
        (build({"a": F32X2}, b"\0" * 4), True),  # out of bounds
        (build({"a": tensor("F32", [2], 0, 12)}, b"\0" * 12), True),  # size mismatch
        (build({"a": tensor("F4", [3], 0, 2)}, b"\0" * 2), True),  # sub-byte misaligned
        (build({"a": tensor("F32", [2**62, 1], 0, 8)}, b"\0" * 8), True),  # overflow
        (build({"__metadata__": {"a": 1}}), True),
        (build({"b": 5}), True),
        (build({"a": tensor("F128", [2], 0, 8)}, b"\0" * 8), True),
        (build(b"{}x"), True),
        (build({"a": F32X2}, b"\0" * 8, pad=b"\n"), False),  # bad padding: accepted, medium
        (build({"a": {**F32X2, "x": 1}}, b"\0" * 8), False),  # extra field: accepted, medium
    ],
)
def test_high_structural_findings_are_files_the_loader_refuses(tmp_path: Path, blob: bytes, rejected: bool) -> None:
    path = tmp_path / "m.safetensors"
    path.write_bytes(blob)
    try:
        with safe_open(str(path), "np") as f:
            list(f.keys())
    except Exception:
        refused = True
    else:
        refused = False
    assert refused is rejected
    severities = {f.severity for f in default_engine().scan([path]).findings}
    assert (Severity.HIGH in severities) is rejected and Severity.CRITICAL not in severities


# --- hostile input never raises ----------------------------------------------------------------------

_REAL = build(
    {"__metadata__": {"format": "pt"}, "w": tensor("F32", [2, 2], 0, 16), "b": tensor("BF16", [3], 16, 22)},
    bytes(range(22)),
    pad=b"   ",
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(st.tuples(st.integers(0, len(_REAL) - 1), st.integers(0, 255)), max_size=8),
    cut=st.integers(0, len(_REAL)),
    tail=st.binary(max_size=16),
)
def test_mutations_never_raise(edits: list[tuple[int, int]], cut: int, tail: bytes) -> None:
    blob = bytearray(_REAL)
    for position, value in edits:
        blob[position] = value
    mutated = bytes(blob[:cut]) + tail
    if len(mutated) >= 10:
        head = Head(mutated[:65536], mutated, len(mutated), "m")
        SafetensorsScanner().accepts(head)
    found = observe(mutated)  # the scanner itself, not the engine's safety net
    assert not any(o.kind == "scan.error" for o in found)
    parse(mutated)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_headers_never_raise(body: bytes) -> None:
    observe(struct.pack("<Q", len(body)) + body)


def test_header_over_the_cap_fails_the_file_closed(tmp_path: Path) -> None:
    path = tmp_path / "huge-header.safetensors"
    path.write_bytes(struct.pack("<Q", 1 << 40) + b'{"a":' + b" " * 64)
    report = wscan.scan([path])
    assert report.files[0].status == "failed"
    assert report.failed
