"""GGUF scanner: files written by the real `gguf` package stay clean and agree with its reader, one hand-crafted
file per check trips exactly that check, hostile lengths cost no memory, and only the header is ever read."""

from __future__ import annotations

import io
import re
import struct
import tempfile
import tracemalloc
import zipfile
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

import gguf
import numpy as np
import pytest
from gguf.constants import GGUF_MAGIC, GGMLQuantizationType, GGUFEndian, GGUFValueType
from gguf.gguf_reader import GGUFReader
from gguf.gguf_writer import GGUFWriter
from gguf.quants import quantize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import wscan
from tests.helpers.gguf_files import write_gguf
from tests.helpers.scanning import default_engine, rule_ids
from tests.helpers.scanning import scan_bytes as _scan_bytes
from wscan.config import Config
from wscan.engine import Engine
from wscan.limits import Budget, Limits
from wscan.model import Location, Observation, Severity
from wscan.report import Report
from wscan.rules import builtin_rules_dir
from wscan.rules.loader import load_pack
from wscan.scanners import gguf_header, gguf_prompt, gguf_vocab
from wscan.scanners.base import Artifact, Head, ScanContext
from wscan.scanners.gguf import MAGIC, GgufScanner
from wscan.scanners.gguf_header import ParsedGguf, parse_gguf

T = GGUFValueType
Q = GGMLQuantizationType

# --- helpers -----------------------------------------------------------------------------------------


def scan_bytes(tmp_path: Path, blob: bytes, config: Config | None = None) -> Report:
    return _scan_bytes(tmp_path, blob, "model.gguf", config)


def observe(blob: bytes, limits: Limits | None = None) -> list[Observation]:
    """Run the scanner alone on bytes; children are not followed."""
    limits = limits or Limits()
    artifact = Artifact(Location("t.gguf"), len(blob), lambda: io.BytesIO(blob), name="t.gguf")
    ctx = ScanContext(limits, Budget(limits))
    return [o for o in GgufScanner().scan(artifact, ctx) if isinstance(o, Observation)]


def kinds(blob: bytes) -> set[str]:
    return {o.kind for o in observe(blob)} - {"fact.gguf"}


def parse(blob: bytes, max_header: int = 100 * 1024 * 1024) -> ParsedGguf:
    return parse_gguf(io.BytesIO(blob), len(blob), gguf_header.Caps(max_header, 100_000, 4 * 1024 * 1024))


def u32(value: int) -> bytes:
    return struct.pack("<I", value)


def u64(value: int) -> bytes:
    return struct.pack("<Q", value)


def gstr(text: str | bytes, length: int | None = None) -> bytes:
    """A GGUF string: u64 length and bytes (`length` overrides the declared length)."""
    data = text.encode() if isinstance(text, str) else text
    return u64(len(data) if length is None else length) + data


def kv(key: str | bytes, vtype: int, payload: bytes) -> bytes:
    return gstr(key) + u32(vtype) + payload


def kv_str(key: str, value: str | bytes) -> bytes:
    return kv(key, T.STRING, gstr(value))


def kv_u32(key: str, value: int) -> bytes:
    return kv(key, T.UINT32, u32(value))


def array(item: int, items: Sequence[bytes], count: int | None = None) -> bytes:
    return u32(item) + u64(len(items) if count is None else count) + b"".join(items)


def info(name: str | bytes, dims: Sequence[int], dtype: int = Q.F32, offset: int = 0) -> bytes:
    return gstr(name) + u32(len(dims)) + b"".join(u64(d) for d in dims) + u32(dtype) + u64(offset)


ARCH = kv_str("general.architecture", "llama")


def build(
    kvs: Sequence[bytes] = (ARCH,),
    infos: Sequence[bytes] = (),
    data: bytes = b"",
    *,
    version: int = 3,
    n_tensors: int | None = None,
    n_kv: int | None = None,
    alignment: int = 32,
) -> bytes:
    """A GGUF file: header, KVs, tensor infos, zero padding to `alignment`, then the data section."""
    head = b"GGUF" + u32(version) + u64(len(infos) if n_tensors is None else n_tensors)
    head += u64(len(kvs) if n_kv is None else n_kv) + b"".join(kvs) + b"".join(infos)
    return head + bytes(-len(head) % alignment) + data


GOOD = build(infos=[info("a", [2])], data=bytes(8))

LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' "
    "+ message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
CHATML_TOOLS_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- for tool in tools %}{{- tool | tojson }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}{%- endif %}{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' "
    "+ message.content + '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
HOSTILE_TEMPLATE = "{{ ''.__class__.__mro__[1].__subclasses__() }}"


def _full(writer: GGUFWriter) -> None:
    """Every value type, a vocabulary that spans many read chunks, nested arrays and many tensor types."""
    writer.add_name("tiny-test")
    writer.add_description("d" * 10_000)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    writer.add_context_length(4096)
    writer.add_chat_template([
        {"name": "default", "template": LLAMA3_TEMPLATE},
        {"name": "tool_use", "template": CHATML_TOOLS_TEMPLATE},
    ])
    tokens = [f"tok{i}" + "x" * (i % 37) for i in range(20_000)] + ["y" * 100_000]
    writer.add_token_list(tokens)
    writer.add_token_scores([float(i) for i in range(len(tokens))])
    writer.add_token_types([1] * len(tokens))
    writer.add_uint8("t.u8", 1)
    writer.add_int8("t.i8", -1)
    writer.add_uint16("t.u16", 2)
    writer.add_int16("t.i16", -2)
    writer.add_uint32("t.u32", 3)
    writer.add_int32("t.i32", -3)
    writer.add_float32("t.f32", 0.5)
    writer.add_uint64("t.u64", 2**40)
    writer.add_int64("t.i64", -(2**40))
    writer.add_float64("t.f64", 0.25)
    writer.add_bool("t.bool", True)
    writer.add_array("t.nested", [[1, 2], [3]])
    writer.add_array("t.nested_strings", [["a", "b"], ["c"]])
    writer.add_array("t.deep", [[[1.5]], [[2.5, 3.5]]])
    base = np.linspace(-1, 1, 2 * 64, dtype=np.float32).reshape(2, 64)
    writer.add_tensor("f32", np.ones((3, 5), dtype=np.float32))
    writer.add_tensor("f16", np.ones((7,), dtype=np.float16))
    writer.add_tensor("f64", np.ones((2, 3), dtype=np.float64))
    for dtype in (np.int8, np.int16, np.int32, np.int64):
        writer.add_tensor(np.dtype(dtype).name, np.arange(5, dtype=dtype))
    writer.add_tensor("empty", np.zeros((0,), dtype=np.float32))
    for qtype in (Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q5_1):
        data = quantize(base, qtype)
        writer.add_tensor(qtype.name.lower(), data, raw_shape=data.shape, raw_dtype=qtype)


def _aligned(writer: GGUFWriter) -> None:
    writer.add_custom_alignment(64)
    writer.add_tensor("a", np.ones((3,), dtype=np.float32))
    writer.add_tensor("b", np.ones((5,), dtype=np.float16))


def _metadata_only(writer: GGUFWriter) -> None:
    writer.add_chat_template(LLAMA3_TEMPLATE)


@pytest.fixture(scope="module")
def benign(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("benign_gguf")
    return [
        write_gguf(folder / "full.gguf", _full),
        write_gguf(folder / "aligned64.gguf", _aligned),
        write_gguf(folder / "metadata_only.gguf", _metadata_only),
    ]


# --- the happy path and sniffing ---------------------------------------------------------------------


def test_magic_is_the_gguf_package_constant() -> None:
    assert struct.pack("<I", GGUF_MAGIC) == MAGIC == gguf_header.MAGIC


def test_real_files_have_no_findings(benign: list[Path]) -> None:
    report = wscan.scan([benign[0].parent])
    assert [(f.rule_id, f.location.describe(), f.message) for f in report.findings] == []
    assert {f.status for f in report.files} == {"scanned"}
    assert all(f.formats == ("gguf",) for f in report.files)


def test_parser_agrees_with_the_gguf_reader(benign: list[Path]) -> None:
    for path in benign:
        with path.open("rb") as raw:
            parsed = parse_gguf(raw, path.stat().st_size, gguf_header.Caps(100 << 20, 100_000, 4 << 20))
        assert parsed.complete and parsed.problems == [], path.name
        ours = [(t.name, list(t.dims or ()), t.dtype, parsed.data_start + t.offset, t.nbytes) for t in parsed.tensors]
        reader = GGUFReader(path)
        theirs = [(t.name, [int(d) for d in t.shape], int(t.tensor_type), t.data_offset, t.n_bytes)
                  for t in reader.tensors]  # fmt: skip
        assert ours == theirs, path.name


def test_summary_fact(benign: list[Path]) -> None:
    found = observe(benign[0].read_bytes())
    assert [o.kind for o in found] == ["fact.gguf"]
    fact = dict(found[0].attrs)
    assert fact == {
        "tensors": 12,
        "parameters": 15 + 7 + 6 + 4 * 5 + 0 + 4 * 128,
        "dtypes": "BF16,F16,F32,F64,I16,I32,I64,I8,Q4_0,Q5_1,Q8_0",
        "quantization": "Q4_0,Q5_1,Q8_0",
        "version": 3,
        "architecture": "llama",
        "name": "tiny-test",
        "file_type": 7,
        "file_type_name": "MOSTLY_Q8_0",
    }


def test_version_2_is_read_like_version_3(tmp_path: Path) -> None:
    assert rule_ids(scan_bytes(tmp_path, build(infos=[info("a", [2])], data=bytes(8), version=2))) == set()


@pytest.mark.parametrize(
    ("blob", "accepted"),
    [(GOOD, True), (b"GGUF", True), (b"GGU", False), (b"\x80\x04K\x01.", False), (b"PK\x03\x04", False)],
)
def test_accepts(blob: bytes, accepted: bool) -> None:
    assert GgufScanner().accepts(Head(blob, blob, len(blob), "x")) is accepted
    assert GgufScanner().accepts(Head(blob, blob, len(blob), "x", raw_data=True)) is False


def test_gguf_inside_a_deflated_zip_is_read_forward_only(tmp_path: Path, benign: list[Path]) -> None:
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(benign[0], "model.gguf")
        zf.writestr("evil.gguf", build(infos=[info("a", [2])], data=bytes(32) + b"cposix\nsystem\n(S'id'\ntR."))
    report = default_engine().scan([path])
    assert rule_ids(report) == {"WS-GGUF-027", "WS-PKL-001"}
    assert {f.location.member.split("!")[0] for f in report.findings if f.location.member} == {"evil.gguf"}
    assert "gguf" in report.files[0].formats


# --- one hand-crafted file per check -----------------------------------------------------------------


@pytest.mark.parametrize(
    "blob",
    [
        b"GGUF" + u32(3) + u64(0),  # no KV count
        b"GGUF" + u32(3),
        b"GGUF",
        b"GGUF" + u32(3) + u64(0) + u64(2) + ARCH + gstr("x") + u32(T.UINT32) + b"\1\0",  # inside a value
        b"GGUF" + u32(3) + u64(0) + u64(2) + ARCH + gstr("x") + u32(T.UINT32)[:2],  # inside a value type
        b"GGUF" + u32(3) + u64(2) + u64(1) + ARCH + info("a", [2]) + info("b", [2])[:-3],  # inside a tensor info
    ],
)
def test_truncated(tmp_path: Path, blob: bytes) -> None:
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-GGUF-001"}
    assert report.files[0].status == "failed"


def test_truncated_fixed_field_names_the_field(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, b"GGUF" + u32(3) + u64(0) + b"\0\0")
    assert rule_ids(report) == {"WS-GGUF-001"}
    assert report.findings[0].evidence["field"] == "KV count"
    assert report.findings[0].location.offset == 16


def test_header_invalid_when_called_on_something_else() -> None:
    assert [p.kind for p in parse(b"GGUX" + GOOD[4:]).problems] == ["gguf.header_invalid"]


@pytest.mark.parametrize("version", [0, 4, 0xFFFFFFFF, 0x00040000])
def test_version_invalid(tmp_path: Path, version: int) -> None:
    report = scan_bytes(tmp_path, build(version=version))
    assert rule_ids(report) == {"WS-GGUF-003"}
    assert report.files[0].status == "failed"
    assert report.findings[0].location.offset == 4


def test_version_1_is_read_with_32_bit_lengths_and_reported(tmp_path: Path) -> None:
    def s32(text: str) -> bytes:
        return u32(len(text)) + text.encode()

    kvs = s32("general.architecture") + u32(T.STRING) + s32("llama")
    kvs += s32("tokens") + u32(T.ARRAY) + u32(T.STRING) + u32(2) + s32("a") + s32("bc")
    tensor = s32("a") + u32(2) + u32(2) + u32(3) + u32(Q.F32) + u64(0)
    head = b"GGUF" + u32(1) + u32(1) + u32(2) + kvs + tensor
    blob = head + bytes(-len(head) % 32) + bytes(24)
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-GGUF-004"}
    assert report.files[0].status == "scanned"
    fact = next(o for o in observe(blob) if o.kind == "fact.gguf")
    assert (fact.attrs["tensors"], fact.attrs["parameters"], fact.attrs["version"]) == (1, 6, 1)


def test_big_endian_file_from_the_writer(tmp_path: Path) -> None:
    def fill(writer: GGUFWriter) -> None:
        writer.add_chat_template(LLAMA3_TEMPLATE)
        writer.add_tensor("a", np.ones((2, 3), dtype=np.float32))
        writer.add_tensor("b", np.ones((5,), dtype=np.float16))

    path = write_gguf(tmp_path / "be.gguf", fill, endianess=GGUFEndian.BIG)
    report = default_engine().scan([path])
    assert rule_ids(report) == {"WS-GGUF-005"}
    assert report.findings[0].severity == Severity.LOW
    fact = next(o for o in observe(path.read_bytes()) if o.kind == "fact.gguf")
    assert (fact.attrs["tensors"], fact.attrs["parameters"]) == (2, 11)


@pytest.mark.parametrize(
    ("n_tensors", "n_kv"), [(0, 2**40), (2**63, 1), (2**64 - 1, 2**64 - 1), (1000, 1)]
)
def test_count_invalid(tmp_path: Path, n_tensors: int, n_kv: int) -> None:
    report = scan_bytes(tmp_path, build(n_tensors=n_tensors, n_kv=n_kv))
    assert rule_ids(report) == {"WS-GGUF-006"}
    assert report.files[0].status == "failed"
    assert report.findings[0].location.offset == 8


def test_header_over_the_byte_limit(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, GOOD, Config(limits=Limits(max_header_bytes=64)))
    assert rule_ids(report) == {"WS-GGUF-007"}
    assert report.findings[0].evidence["limit"] == "max-header-bytes"
    assert report.files[0].status == "failed"


def test_header_over_the_entry_limit(tmp_path: Path) -> None:
    blob = build(infos=[info("a", [2]), info("b", [2], offset=32)], data=bytes(40))
    report = scan_bytes(tmp_path, blob, Config(limits=Limits(max_members=1)))
    assert rule_ids(report) == {"WS-GGUF-007"}
    assert report.findings[0].evidence["limit"] == "max-members"


@pytest.mark.parametrize(
    "kvs",
    [
        [gstr("general.architecture", length=2**63)],  # the key
        [kv("general.name", T.STRING, gstr("x", length=2**63))],  # the value
        [kv("tokens", T.ARRAY, array(T.STRING, [gstr("a"), gstr("b", length=2**64 - 1)]))],  # an array item
    ],
)
def test_string_truncated(tmp_path: Path, kvs: list[bytes]) -> None:
    report = scan_bytes(tmp_path, build(kvs))
    assert rule_ids(report) == {"WS-GGUF-008"}
    assert report.files[0].status == "failed"


def test_tensor_name_truncated() -> None:
    assert kinds(build(infos=[gstr("a", length=2**63)])) == {"gguf.string_truncated"}


@pytest.mark.parametrize(
    "payload",
    [
        array(T.UINT8, [], count=2**62),
        array(T.STRING, [gstr("a")], count=2**62),
        array(T.ARRAY, [array(T.UINT8, [b"\1"])], count=2**62),
        array(T.ARRAY, [array(T.FLOAT64, [], count=2**61)], count=1),  # the inner array
        array(T.UINT32, [u32(1)], count=100),  # more than the padding after it
    ],
)
def test_array_truncated(tmp_path: Path, payload: bytes) -> None:
    report = scan_bytes(tmp_path, build([ARCH, kv("x.values", T.ARRAY, payload)]))
    assert rule_ids(report) == {"WS-GGUF-009"}
    assert report.findings[0].evidence["key"] == "x.values"


@pytest.mark.parametrize(
    "entry",
    [kv("x.value", 13, u32(0)), kv("x.value", 2**32 - 1, b""), kv("x.value", T.ARRAY, array(99, [], count=0))],
)
def test_value_type_invalid(tmp_path: Path, entry: bytes) -> None:
    report = scan_bytes(tmp_path, build([ARCH, entry]))
    assert rule_ids(report) == {"WS-GGUF-010"}
    assert report.files[0].status == "failed"


def test_nesting_limit(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build([ARCH, kv("x.deep", T.ARRAY, _nested(gguf_header.MAX_ARRAY_DEPTH + 1))]))
    assert rule_ids(report) == {"WS-GGUF-011"}
    assert report.files[0].status == "failed"


def test_too_many_nested_arrays(tmp_path: Path) -> None:
    inner = array(T.UINT8, [], count=0)
    count = gguf_header.MAX_NESTED_ARRAYS + 1
    report = scan_bytes(tmp_path, build([ARCH, kv("x.many", T.ARRAY, array(T.ARRAY, [inner] * count))]))
    assert rule_ids(report) == {"WS-GGUF-011"}
    assert "arrays inside arrays" in report.findings[0].message


def test_nesting_at_the_limit_is_fine(tmp_path: Path) -> None:
    blob = build([ARCH, kv("x.deep", T.ARRAY, _nested(gguf_header.MAX_ARRAY_DEPTH))])
    assert rule_ids(scan_bytes(tmp_path, blob)) == set()


def test_empty_key(tmp_path: Path) -> None:
    assert rule_ids(scan_bytes(tmp_path, build([ARCH, kv_u32("", 1)]))) == {"WS-GGUF-012"}


def test_duplicate_key(tmp_path: Path) -> None:
    blob = build([ARCH, kv_str("general.name", "a"), kv_str("general.name", "b")])
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-GGUF-013"}
    finding = report.findings[0]
    assert finding.evidence["key"] == "general.name"
    assert finding.evidence["first"] == blob.index(gstr("general.name"))
    assert finding.location.offset == blob.rindex(gstr("general.name"))


@pytest.mark.parametrize(
    "entry",
    [
        kv_u32("general.alignment", 0),
        kv_u32("general.alignment", 48),
        kv("general.alignment", T.UINT64, u64(32)),
        kv_str("general.alignment", "32"),
        kv("general.alignment", T.ARRAY, array(T.UINT32, [u32(32)])),
    ],
)
def test_bad_alignment(tmp_path: Path, entry: bytes) -> None:
    report = scan_bytes(tmp_path, build([ARCH, entry], [info("a", [8])], bytes(32)))
    assert rule_ids(report) == {"WS-GGUF-014"}


def test_unusual_alignment(tmp_path: Path) -> None:
    def fill(writer: GGUFWriter) -> None:
        writer.add_custom_alignment(1 << 17)
        writer.add_tensor("a", np.ones((3,), dtype=np.float32))
        writer.add_tensor("b", np.ones((3,), dtype=np.float32))

    report = default_engine().scan([write_gguf(tmp_path / "wide.gguf", fill)])
    assert rule_ids(report) == {"WS-GGUF-015"}


@pytest.mark.parametrize(
    ("entry", "limit"),
    [
        (kv_str("general.description", "d" * (64 * 1024 + 1)), 64 * 1024),
        (kv_str("x.blob", "b" * (1024 * 1024 + 1)), 1024 * 1024),
        (kv("tokenizer.ggml.tokens", T.ARRAY, array(T.STRING, [gstr("a"), gstr("t" * (1024 * 1024 + 1))])),
         1024 * 1024),
        (kv_u32("k" * (1024 * 1024 + 1), 1), 1024 * 1024),
    ],
)  # fmt: skip
def test_oversized_string(tmp_path: Path, entry: bytes, limit: int) -> None:
    report = scan_bytes(tmp_path, build([ARCH, entry]))
    assert rule_ids(report) == {"WS-GGUF-016"}
    assert report.findings[0].evidence["limit"] == limit
    assert report.files[0].status == "scanned"


def test_general_strings_under_64_kib_and_others_under_1_mib_are_fine(tmp_path: Path) -> None:
    blob = build([ARCH, kv_str("general.license", "l" * 64 * 1024), kv_str("x.blob", "b" * 1024 * 1024)])
    assert rule_ids(scan_bytes(tmp_path, blob)) == set()


def test_tensor_name_too_long(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build(infos=[info("n" * 64, [2])], data=bytes(8)))
    assert rule_ids(report) == {"WS-GGUF-017"}
    assert rule_ids(scan_bytes(tmp_path, build(infos=[info("n" * 63, [2])], data=bytes(8)))) == set()


@pytest.mark.parametrize("second", [b"a", b"a\0hidden"])
def test_duplicate_tensor(tmp_path: Path, second: bytes) -> None:
    blob = build(infos=[info("a", [2]), info(second, [2], offset=32)], data=bytes(40))
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-GGUF-018"}


def test_too_many_dims(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build(infos=[info("a", [1, 1, 1, 1, 2])], data=bytes(8)))
    assert rule_ids(report) == {"WS-GGUF-019"}
    assert report.findings[0].evidence["n_dims"] == 5


def test_absurd_dim_count_is_stepped_over_only_if_it_fits() -> None:
    blob = build(infos=[gstr("a") + u32(2**32 - 1)])
    assert kinds(blob) == {"gguf.too_many_dims", "gguf.truncated"}


@pytest.mark.parametrize(
    ("dims", "reason"),
    [
        ([2**63], "negative"),
        ([2, 2**64 - 1], "negative"),
        ([2**32, 2**32], "overflows"),
        ([2**62, 2], "overflows"),
    ],
)
def test_bad_shape(tmp_path: Path, dims: list[int], reason: str) -> None:
    report = scan_bytes(tmp_path, build(infos=[info("a", dims)]))
    assert rule_ids(report) == {"WS-GGUF-020"}
    assert reason in str(report.findings[0].evidence["reason"])


@pytest.mark.parametrize("dims", [[4, 0], [2, 0, 4], [2, 3, 0, 5]])
def test_zero_size_tensors_are_medium_not_a_bad_shape(tmp_path: Path, dims: list[int]) -> None:
    # review 29: the gguf package writes them and current llama.cpp loads them; older ggml divided by the 0
    report = scan_bytes(tmp_path, build(infos=[info("a", dims)]))
    assert {(f.rule_id, f.severity) for f in report.findings} == {("WS-GGUF-035", Severity.MEDIUM)}


def test_an_empty_first_dimension_is_no_finding(tmp_path: Path) -> None:
    assert scan_bytes(tmp_path, build(infos=[info("a", [0, 2, 4])])).findings == []


def test_byte_size_overflow_is_a_bad_shape() -> None:
    # 2^62 elements are representable, their bytes as F64 are not
    assert kinds(build(infos=[info("a", [2**62], Q.F64)])) == {"gguf.bad_shape"}


@pytest.mark.parametrize("dtype", [4, 5, 31, 99, 2**32 - 1])
def test_unknown_dtype(tmp_path: Path, dtype: int) -> None:
    report = scan_bytes(tmp_path, build(infos=[info("a", [2], dtype)], data=bytes(8)))
    assert rule_ids(report) == {"WS-GGUF-021"}
    assert report.findings[0].evidence["dtype"] == dtype


def test_block_size_mismatch(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build(infos=[info("a", [33, 2], Q.Q8_0)], data=bytes(68)))
    assert rule_ids(report) == {"WS-GGUF-022"}
    assert (report.findings[0].evidence["row"], report.findings[0].evidence["block"]) == (33, 32)


def test_misaligned_offset(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build(infos=[info("a", [1]), info("b", [1], offset=4)], data=bytes(8)))
    assert rule_ids(report) == {"WS-GGUF-023"}
    assert report.findings[0].evidence["tensor"] == "b"


@pytest.mark.parametrize(("dims", "offset", "data"), [([16], 0, 8), ([2], 2**63, 8), ([2], 0, 0)])
def test_out_of_bounds(tmp_path: Path, dims: list[int], offset: int, data: int) -> None:
    report = scan_bytes(tmp_path, build(infos=[info("a", dims, offset=offset)], data=bytes(data)))
    assert "WS-GGUF-024" in rule_ids(report)
    # The bytes before a tensor that starts past the end are a gap, sniffed as an unknown blob (low).
    assert rule_ids(report) <= {"WS-GGUF-024", "WS-GGUF-026", "WS-FILE-006"}


def test_out_of_bounds_exactly(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build(infos=[info("a", [16])], data=bytes(8)))
    assert rule_ids(report) == {"WS-GGUF-024"}


def test_overlap(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, build(infos=[info("a", [8]), info("b", [2])], data=bytes(32)))
    assert rule_ids(report) == {"WS-GGUF-025"}
    assert {report.findings[0].evidence["tensor"], report.findings[0].evidence["other"]} == {"a", "b"}


def test_gap(tmp_path: Path) -> None:
    blob = build(infos=[info("a", [1]), info("b", [1], offset=64)], data=bytes(32) + b"\0" * 32 + bytes(4))
    report = scan_bytes(tmp_path, blob)
    # The hidden bytes are sniffed as their own blob: zero bytes are an unknown format (low).
    assert rule_ids(report) == {"WS-GGUF-026", "WS-FILE-006"}
    gap = next(f for f in report.findings if f.rule_id == "WS-GGUF-026")
    assert gap.location.offset == len(blob) - 68 + 32
    assert dict(gap.evidence) == {"length": 32, "after": "a", "before": "b"}


def test_pickle_hidden_in_a_gap_is_scanned_as_its_own_blob(tmp_path: Path) -> None:
    payload = b"cposix\nsystem\n(S'echo hello'\ntR."  # protocol 0, fills the 32-byte gap; never loaded
    blob = build(infos=[info("a", [1]), info("b", [1], offset=64)], data=bytes(32) + payload + bytes(4))
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-GGUF-026", "WS-PKL-001"}
    critical = next(f for f in report.findings if f.rule_id == "WS-PKL-001")
    assert critical.location.member == f"@{len(blob) - 68 + 32}"


def test_trailing_data(tmp_path: Path) -> None:
    blob = build(infos=[info("a", [2])], data=bytes(32) + b"hello world")
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-GGUF-027"}
    assert report.findings[0].evidence["length"] == 11
    assert report.findings[0].location.offset == len(blob) - 11


def test_padding_after_the_last_tensor_is_not_trailing_data(tmp_path: Path) -> None:
    for data in (bytes(8), bytes(32)):
        assert rule_ids(scan_bytes(tmp_path, build(infos=[info("a", [2])], data=data))) == set()


def test_pickle_after_the_last_tensor_is_scanned_as_its_own_blob(tmp_path: Path) -> None:
    payload = b"cposix\nsystem\n(S'id'\ntR."
    blob = build(infos=[info("a", [2])], data=bytes(32) + payload)
    report = scan_bytes(tmp_path, blob)
    assert rule_ids(report) == {"WS-GGUF-027", "WS-PKL-001"}
    critical = next(f for f in report.findings if f.rule_id == "WS-PKL-001")
    assert critical.location.member == f"@{len(blob) - len(payload)}"


def test_data_in_a_file_without_tensors_is_trailing(tmp_path: Path) -> None:
    assert rule_ids(scan_bytes(tmp_path, build(data=b"surprise"))) == {"WS-GGUF-027"}


def _tokens(*tokens: str) -> bytes:
    return kv("tokenizer.ggml.tokens", T.ARRAY, array(T.STRING, [gstr(t) for t in tokens]))


def _nested(depth: int) -> bytes:
    """An array of uint8 inside depth - 1 arrays of arrays."""
    payload = array(T.UINT8, [b"\1"])
    for _ in range(depth - 1):
        payload = array(T.ARRAY, [payload])
    return payload


def _v1(kvs: bytes = b"", tensors: bytes = b"", n_tensors: int = 0, n_kv: int = 0) -> bytes:
    head = b"GGUF" + u32(1) + u32(n_tensors) + u32(n_kv) + kvs + tensors
    return head + bytes(-len(head) % 32)


# One hostile blob (and the limits to scan it with) per observation kind the parser can emit.
HOSTILE: dict[str, tuple[bytes, Limits]] = {
    "gguf.truncated": (b"GGUF" + u32(3), Limits()),
    "gguf.header_invalid": (b"GGUX" + GOOD[4:], Limits()),
    "gguf.version_invalid": (build(version=4), Limits()),
    "gguf.version_unsupported": (_v1(), Limits()),
    "gguf.big_endian": (b"GGUF" + struct.pack(">IQQ", 3, 0, 0) + bytes(8), Limits()),
    "gguf.count_invalid": (build(n_kv=2**40), Limits()),
    "gguf.header_limit": (GOOD, Limits(max_header_bytes=64)),
    "gguf.string_truncated": (build([kv_str("general.name", b"")[:-8] + u64(2**63)]), Limits()),
    "gguf.array_truncated": (build([kv("x", T.ARRAY, array(T.UINT8, [], count=2**62))]), Limits()),
    "gguf.value_type_invalid": (build([kv("x", 13, b"")]), Limits()),
    "gguf.nesting_limit": (build([kv("x", T.ARRAY, _nested(gguf_header.MAX_ARRAY_DEPTH + 1))]), Limits()),
    "gguf.empty_key": (build([kv_u32("", 1)]), Limits()),
    "gguf.duplicate_key": (build([ARCH, ARCH]), Limits()),
    "gguf.bad_alignment": (build([kv_u32("general.alignment", 3)]), Limits()),
    "gguf.alignment_unusual": (build([kv_u32("general.alignment", 1 << 20)], alignment=1 << 20), Limits()),
    "gguf.oversized_string": (build([kv_str("general.name", "n" * 70_000)]), Limits()),
    "gguf.tensor_name_too_long": (build(infos=[info("n" * 70, [2])], data=bytes(8)), Limits()),
    "gguf.duplicate_tensor": (build(infos=[info("a", [2]), info("a", [2], offset=32)], data=bytes(40)), Limits()),
    "gguf.too_many_dims": (build(infos=[info("a", [1] * 5)], data=bytes(4)), Limits()),
    "gguf.bad_shape": (build(infos=[info("a", [2**63])]), Limits()),
    "gguf.unknown_dtype": (build(infos=[info("a", [2], 99)]), Limits()),
    "gguf.block_size_mismatch": (build(infos=[info("a", [3], Q.Q4_0)]), Limits()),
    "gguf.misaligned_offset": (build(infos=[info("a", [1]), info("b", [1], offset=4)], data=bytes(8)), Limits()),
    "gguf.out_of_bounds": (build(infos=[info("a", [16])], data=bytes(8)), Limits()),
    "gguf.overlap": (build(infos=[info("a", [8]), info("b", [2])], data=bytes(32)), Limits()),
    "gguf.gap": (build(infos=[info("a", [1]), info("b", [1], offset=64)], data=bytes(68)), Limits()),
    "gguf.trailing_data": (build(data=b"surprise"), Limits()),
    "gguf.zero_size_tensor": (build(infos=[info("a", [4, 0])]), Limits()),
    "gguf.duplicate_token": (build([ARCH, kv_str("tokenizer.ggml.model", "gpt2"), _tokens("a", "b", "a")]), Limits()),
    "gguf.vocab_array": (
        build([ARCH, kv_str("tokenizer.ggml.model", "gpt2"), _tokens("a", "b"),
               kv("tokenizer.ggml.token_type", T.ARRAY, array(T.INT32, [u32(1)]))]),
        Limits(),
    ),
    "gguf.vocab_allocation": (
        build([ARCH, kv_str("tokenizer.ggml.model", "none"), kv_u32("llama.vocab_size", 50_000_000)]), Limits()
    ),
    "gguf.hparam_abort": (build([ARCH, kv_u32("llama.block_count", 0)]), Limits()),
    "gguf.tokenizer_hang": (build([ARCH, kv_str("tokenizer.ggml.model", "rwkv"), _tokens("a", "\\n\\n")]), Limits()),
    "gguf.tokenizer_cost": (build([ARCH, kv_str("tokenizer.ggml.model", "plamo2"), _tokens("a" * 2500)]), Limits()),
    "gguf.byte_token_abort": (
        build([ARCH, kv_str("tokenizer.ggml.model", "bert"), _tokens("a", "b"),
               kv("tokenizer.ggml.token_type", T.ARRAY, array(T.INT32, [u32(1), u32(6)]))]),
        Limits(),
    ),
    "gguf.prompt_abort": (build([ARCH, kv_str("tokenizer.ggml.model", "llama"), _tokens("a")]), Limits()),
    "gguf.missing_byte_tokens": (build([ARCH, kv_str("tokenizer.ggml.model", "llama"), _tokens("a", "b")]), Limits()),
    "gguf.template_not_string": (
        build([kv("tokenizer.chat_template", T.ARRAY, array(T.STRING, [gstr(HOSTILE_TEMPLATE)]))]), Limits()
    ),
}


def _gguf_rules() -> dict[str, dict[str, Any]]:
    pack = load_pack(builtin_rules_dir() / "gguf.yaml")
    return {rule["match"]["kind"]: rule for rule in pack["rules"]}


def test_every_kind_has_a_rule_and_a_fixture() -> None:
    source = "".join(Path(module.__file__).read_text("utf-8") for module in (gguf_header, gguf_vocab, gguf_prompt))
    emitted = {f"gguf.{kind}" for kind in re.findall(r'problem\("([a-z_]+)"', source)} | {"gguf.oversized_string"}
    assert emitted == set(_gguf_rules()) == set(HOSTILE)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_each_fixture_trips_its_kind_and_the_message_has_every_fact(kind: str) -> None:
    blob, limits = HOSTILE[kind]
    found = [o for o in observe(blob, limits) if o.kind == kind]
    assert found, kind
    rule = _gguf_rules()[kind]
    placeholders = set(re.findall(r"\{([a-z_][a-z0-9_]*)\}", rule["message"]))
    assert placeholders <= set(found[0].attrs) | {"path", "member", "offset"}, rule["id"]
    (finding,) = default_engine().rules.judge(found[:1])
    assert finding.rule_id == rule["id"]


# --- chat templates ----------------------------------------------------------------------------------


def test_template_issues_are_reported_at_the_string(tmp_path: Path) -> None:
    entry = kv_str("tokenizer.chat_template", HOSTILE_TEMPLATE)
    blob = build([ARCH, entry])
    found = [o for o in observe(blob) if o.kind.startswith("template.")]
    assert found
    assert {o.attrs["field"] for o in found} == {"tokenizer.chat_template"}
    assert {o.location.offset for o in found} == {blob.index(HOSTILE_TEMPLATE.encode())}
    assert "template.dunder_access" in {o.kind for o in found}
    report = scan_bytes(tmp_path, blob)
    assert any(f.severity >= Severity.HIGH and f.rule_id.startswith("WS-TPL-") for f in report.findings)


def test_named_template_variants_are_checked_too() -> None:
    blob = build([ARCH, kv_str("tokenizer.chat_template", LLAMA3_TEMPLATE),
                  kv_str("tokenizer.chat_template.tool_use", HOSTILE_TEMPLATE)])  # fmt: skip
    found = [o for o in observe(blob) if o.kind.startswith("template.")]
    assert found and {o.attrs["field"] for o in found} == {"tokenizer.chat_template.tool_use"}


def test_a_template_key_with_a_nul_is_still_the_template_to_llama_cpp() -> None:
    blob = build([ARCH, kv_str("tokenizer.chat_template\0.note", HOSTILE_TEMPLATE)])
    found = [o for o in observe(blob) if o.kind.startswith("template.")]
    assert found and str(found[0].attrs["field"]).startswith("tokenizer.chat_template (NUL) ")


def test_keys_equal_as_c_strings_are_duplicates(tmp_path: Path) -> None:
    blob = build([ARCH, kv_str("tokenizer.chat_template", LLAMA3_TEMPLATE),
                  kv_str("tokenizer.chat_template\0shadow", LLAMA3_TEMPLATE)])  # fmt: skip
    assert rule_ids(scan_bytes(tmp_path, blob)) == {"WS-GGUF-013"}


def test_template_too_long_to_read_is_a_size_limit() -> None:
    from wscan import chat_template
    text = "a" * (4 * chat_template.MAX_TEMPLATE_CHARS + 1)
    found = {o.kind: o for o in observe(build([ARCH, kv_str("tokenizer.chat_template", text)]))}
    assert set(found) == {"gguf.oversized_string", "template.size_limit", "fact.gguf"}
    assert found["template.size_limit"].attrs["field"] == "tokenizer.chat_template"


# --- hostile lengths cost nothing, only the header is read -------------------------------------------


@pytest.mark.parametrize(
    "blob",
    [
        build([kv("general.name", T.STRING, gstr("x", length=2**63))]),
        build([ARCH, kv("x.values", T.ARRAY, array(T.STRING, [], count=2**62))]),
        build([ARCH, kv("x.values", T.ARRAY, array(T.UINT64, [], count=2**62))]),
        build(n_tensors=2**62, n_kv=2**62),
        build(infos=[gstr("a") + u32(2**32 - 1)]),
    ],
)
def test_hostile_lengths_cost_no_memory(blob: bytes) -> None:
    tracemalloc.start()
    try:
        found = observe(blob)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found and any(o.kind.startswith("gguf.") for o in found)
    assert peak < 1024 * 1024


class CountingFile(io.FileIO):
    """A file that counts the bytes read from it, however they are read."""

    total = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        CountingFile.total += len(data or b"")
        return data

    def readinto(self, buffer: Any) -> int:
        count = super().readinto(buffer) or 0
        CountingFile.total += count
        return count


def _counting_open(path: Path) -> BinaryIO:
    return io.BufferedReader(CountingFile(path))


def test_only_the_header_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = array(T.STRING, [gstr(f"token{i}") for i in range(5000)])
    elements = 50 * 1024 * 1024  # 200 MiB of F32
    blob = build([ARCH, kv("tokenizer.ggml.tokens", T.ARRAY, tokens)], [info("w", [elements])])
    path = tmp_path / "big.gguf"
    with path.open("wb") as f:
        f.write(blob)
        f.truncate(len(blob) + 4 * elements)  # sparse: the tensor region costs no disk
    monkeypatch.setattr("wscan.engine.open_counted", lambda path, budget: _counting_open(path))
    CountingFile.total = 0
    report = Engine(Config()).scan([path])
    assert rule_ids(report) == set() and report.files[0].status == "scanned"
    assert CountingFile.total < 1024 * 1024
    # The scanner on its own reads the header and at most one read-ahead chunk.
    CountingFile.total = 0
    artifact = Artifact(Location("big.gguf"), path.stat().st_size, lambda: _counting_open(path))
    found = [o for o in GgufScanner().scan(artifact, ScanContext(Limits(), Budget(Limits())))
             if isinstance(o, Observation)]  # fmt: skip
    assert [o.kind for o in found] == ["fact.gguf"] and found[0].attrs["parameters"] == elements
    assert CountingFile.total < len(blob) + 64 * 1024


# --- hostile input never raises, never hangs ---------------------------------------------------------


@cache
def _sample() -> bytes:
    """A small benign file from the real writer: template, vocabulary, nested arrays, three tensor types."""
    with tempfile.TemporaryDirectory() as folder:
        return write_gguf(Path(folder) / "sample.gguf", _fill_sample).read_bytes()


def _fill_sample(writer: GGUFWriter) -> None:
    writer.add_name("s")
    writer.add_chat_template(LLAMA3_TEMPLATE)
    writer.add_token_list(["a", "bb", "ccc"])
    writer.add_array("t.nested", [[1, 2], [3]])
    writer.add_tensor("f32", np.ones((2, 2), dtype=np.float32))
    writer.add_tensor("f16", np.ones((3,), dtype=np.float16))
    data = quantize(np.ones((1, 32), dtype=np.float32), Q.Q8_0)
    writer.add_tensor("q8", data, raw_shape=data.shape, raw_dtype=Q.Q8_0)


def test_the_sample_is_clean() -> None:
    assert kinds(_sample()) == set()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutations_never_raise(data: st.DataObject) -> None:
    sample = _sample()
    blob = bytearray(sample)
    for _ in range(data.draw(st.integers(0, 8))):
        position = data.draw(st.integers(0, len(blob) - 1))
        blob[position] ^= 1 << data.draw(st.integers(0, 7))
    mutated = bytes(blob[: data.draw(st.integers(0, len(blob)))])
    found = observe(mutated)  # the scanner itself, not the engine's safety net
    assert not any(o.kind == "scan.error" for o in found)


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gguf_work")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.integers(0, 10_000), flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 7)), max_size=6))
def test_engine_always_returns_scanned_or_failed(work_dir: Path, cut: int, flips: list[tuple[int, int]]) -> None:
    sample = bytearray(_sample())
    for position, bit in flips:
        sample[4 + position % (len(sample) - 4)] ^= 1 << bit  # keep the magic: the file stays a GGUF
    path = work_dir / "m.gguf"
    path.write_bytes(bytes(sample[: max(4, cut % (len(sample) + 1))]))
    report = default_engine().scan([path])
    assert report.files[0].status in {"scanned", "failed"}


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    strings=st.lists(st.text(max_size=300), min_size=1, max_size=40),
    numbers=st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=40),
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=4),
)
def test_anything_the_writer_writes_is_clean(
    work_dir: Path, strings: list[str], numbers: list[int], shape: list[int]
) -> None:
    def fill(writer: GGUFWriter) -> None:
        writer.add_array("x.strings", strings)
        writer.add_array("x.numbers", numbers)
        writer.add_array("x.nested", [strings, strings[:1]])
        writer.add_tensor("t", np.zeros(shape, dtype=np.float32))

    assert kinds(write_gguf(work_dir / "w.gguf", fill).read_bytes()) == set()


def test_gguf_constants_load_without_numpy() -> None:
    # The gguf package's __init__ imports NumPy (a fifth of a second); wscan needs only its constants module.
    import subprocess
    import sys

    code = "import sys, wscan.scanners.gguf_header as h; print(h.GGUFValueType.UINT8, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(int(GGUFValueType.UINT8)), "False"]


def test_a_template_transformers_rewrites_with_the_architecture_name_is_judged_rewritten() -> None:
    """transformers replaces the architecture name in every metadata string (qwen3moe -> qwen3_moe): a name that
    holds a comment opener turns the stored comment into code (found by a review, rendered with plain Jinja)."""
    template = "{{ messages[0]['content'] }}qwen3moe{# {{ ''.__class__.__mro__ }} #}"
    blob = build([kv_str("general.architecture", "qwen3moe{#"), kv_str("tokenizer.chat_template", template)])
    found = [o for o in observe(blob) if o.kind == "template.dunder_access"]
    assert found and all("(as rewritten)" in str(o.attrs["field"]) for o in found)


def test_a_template_read_before_the_time_limit_is_judged(tmp_path: Path) -> None:
    """The parser looks at the clock every 32,768 array items: a limit hit in a long vocabulary after the template
    reported only WS-FILE-002, so the template's injection never showed."""

    def fill(writer: GGUFWriter) -> None:
        writer.add_chat_template("{{ cycler.__init__.__globals__.os.popen('id').read() }}")
        writer.add_token_list([f"t{i}" for i in range(100_000)])
        writer.add_tensor("a", np.ones((2, 3), dtype=np.float32))

    path = write_gguf(tmp_path / "slow.gguf", fill)
    judged = rule_ids(default_engine().scan([path]))
    assert "WS-FILE-002" not in judged and "WS-TPL-001" in judged
    limits = replace(Limits(), max_seconds_per_file=1e-6)
    found = rule_ids(Engine(Config(jobs=0, limits=limits)).scan([path]))
    assert found == {rule for rule in judged if rule.startswith("WS-TPL")} | {"WS-FILE-002"}


def test_a_frame_walk_without_underscores_in_a_gguf_template_is_critical(tmp_path: Path) -> None:
    """Review 45: `gi_frame` and `f_globals` reached through `|attr` ran a command in llama-cpp-python's unsandboxed
    renderer (CVE-2024-34359) and wscan reported nothing: no name starts with an underscore."""
    template = ("{% for message in messages %}{{ message.content }}{% endfor %}"
                "{{ ((messages|map(attribute='role'))|attr('gi_frame')|attr('f_globals'))['t']['sys']['modules']"
                "['os']['getcwd']() }}")  # fmt: skip

    def fill(writer: GGUFWriter) -> None:
        writer.add_chat_template(template)
        writer.add_tensor("a", np.ones((2, 3), dtype=np.float32))

    path = write_gguf(tmp_path / "model.gguf", fill)
    field = GGUFReader(path).fields["tokenizer.chat_template"]
    stored = bytes(field.parts[field.data[0]]).decode()
    from jinja2 import BaseLoader, Environment

    env = Environment(loader=BaseLoader(), trim_blocks=True, lstrip_blocks=True)  # llama-cpp-python 0.2.71's
    import os

    assert env.from_string(stored).render(messages=[{"role": "user", "content": "hi"}]) == "hi" + os.getcwd()
    report = default_engine().scan([path])
    assert any(f.rule_id == "WS-TPL-001" and f.severity == Severity.CRITICAL for f in report.findings)
