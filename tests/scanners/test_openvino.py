"""OpenVINO IR models: what `ov.save_model` writes passes with its weights file claimed, and every model OpenVINO's
`read_model` refused is flagged. The files and what OpenVINO 2026.4 did with each are in tests/data/openvino
(tools/record_openvino_files.py)."""

from __future__ import annotations

import io
import shutil
import time
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.mutations import damaged
from tests.helpers.scanning import rule_ids, scan, scan_bytes
from wscan.model import Severity
from wscan.scanners.base import Head
from wscan.scanners.openvino import OpenVinoScanner, looks_like_ir

DATA = Path(__file__).resolve().parents[1] / "data" / "openvino"
BENIGN = sorted(DATA.glob("*.xml"))
HOSTILE = {  # model: the rules it must raise, and what read_model did (the folder's README)
    "const-past-end.xml": {"WS-OV-002"},  # Incorrect weights in bin file!
    "const-size-not-shape.xml": {"WS-OV-002"},  # Attribute and shape size are inconsistent
    "const-offset-not-a-number.xml": {"WS-OV-002"},  # not an unsigned 64 bit integer
    "unknown-element-type.xml": {"WS-OV-003"},  # "f99" is not a member of enum element::Type_t
    "doctype.xml": {"WS-OV-001"},  # loaded: pugixml skips the declaration; no writer emits one
    "cut-short.xml": {"WS-OV-001"},  # Start-end tags mismatch
    "weights-missing.xml": {"WS-OV-004"},  # bin file cannot be found
}


def test_every_recorded_model_is_listed() -> None:
    assert {path.name for path in (DATA / "hostile").glob("*.xml")} == set(HOSTILE)
    assert [path.name for path in BENIGN] == ["dense-fp16.xml", "dense.xml", "packed.xml"]


@pytest.mark.parametrize("path", BENIGN, ids=lambda path: path.name)
def test_what_save_model_writes_passes_and_its_weights_are_claimed(path: Path, tmp_path: Path) -> None:
    shutil.copyfile(path, tmp_path / path.name)
    shutil.copyfile(path.with_suffix(".bin"), tmp_path / path.with_suffix(".bin").name)
    report = scan(tmp_path)
    assert [(f.rule_id, f.message) for f in report.findings] == []
    formats = {Path(result.path).suffix: result.formats for result in report.files}
    assert formats == {".xml": ("openvino",), ".bin": ("openvino-weights",)}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_models_read_model_refused_are_flagged(name: str) -> None:
    report = scan(DATA / "hostile" / name)
    assert rule_ids(report) == HOSTILE[name]
    assert "WS-FILE-006" not in {f.rule_id for f in scan(DATA / "hostile").findings}  # every .bin claimed


def test_the_constant_is_named_with_what_is_wrong() -> None:
    finding = scan(DATA / "hostile" / "const-past-end.xml").findings[0]
    assert finding.severity == Severity.HIGH
    assert finding.evidence["layer"] == "Constant_3"
    assert "8192 bytes at offset 4096 run past the 8256-byte weights file" in finding.message


def test_entities_are_never_expanded(tmp_path: Path) -> None:
    """A billion-laughs IR is refused before any XML parser sees it."""
    levels = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    bomb = f'<?xml version="1.0"?><!DOCTYPE net [<!ENTITY l0 "lol">{levels}]><net name="&l9;"><layers/></net>'
    started = time.monotonic()
    assert rule_ids(scan_bytes(tmp_path, bomb.encode(), "openvino_model.xml")) == {"WS-OV-001"}
    assert time.monotonic() - started < 10


def test_only_an_ir_is_taken(tmp_path: Path) -> None:
    assert looks_like_ir((DATA / "dense.xml").read_bytes())
    for other in (b'<?xml version="1.0"?>\n<project><net/></project>', b"<network/>", b"net"):
        assert not looks_like_ir(other)
        assert not OpenVinoScanner().accepts(Head(other, other, len(other), "x.bin"))
        assert "openvino" not in scan_bytes(tmp_path, other, "x.xml").files[0].formats


DENSE = (DATA / "dense.xml").read_text()
LEAK = DENSE.replace('offset="0" size="8192"', 'value="A"', 1)  # 1 byte for 2,048 floats: read past on the heap


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("plain", LEAK),
        ("namespace-on-net", LEAK.replace('<net name="dense"', '<net xmlns="urn:x" name="dense"', 1)),
        ("namespace-on-layers", LEAK.replace("<layers>", '<layers xmlns="urn:x">', 1)),
        ("upper-case-root", LEAK.replace("<net ", "<NET ", 1).replace("</net>", "</NET>")),
        ("instruction-first", LEAK.replace("?>", "?>\n<?foo bar?>", 1)),
        ("long-comment-first", LEAK.replace("?>", "?>\n<!--" + "x" * 5000 + "-->", 1)),
        ("spaces-first", LEAK.replace("?>", "?>" + " " * 5000, 1)),
        ("prolog-past-the-head", LEAK.replace("?>", "?>" + "<!-- padding -->\n" * 5000, 1)),
    ],
)
def test_a_constant_written_in_the_xml_is_flagged_however_the_ir_is_laid_out(tmp_path: Path, name: str,
                                                                            text: str) -> None:
    """Helper 217: OpenVINO copies a Const's `value=` text whatever its shape (heap bytes came back in the output;
    64 MiB crashed compile), and loaded the IR with a namespace, an upper-case root, a processing instruction, a
    long comment or 5,000 spaces before <net>, each of which hid it from wscan."""
    (tmp_path / f"{name}.bin").write_bytes((DATA / "dense.bin").read_bytes())
    (tmp_path / f"{name}.xml").write_text(text)
    assert "WS-OV-002" in rule_ids(scan(tmp_path / f"{name}.xml"))


def test_a_utf16_ir_is_read(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes((DATA / "dense.bin").read_bytes())
    (tmp_path / "model.xml").write_bytes(LEAK.replace('version="1.0"?>', 'version="1.0" encoding="UTF-16"?>', 1)
                                         .encode("utf-16"))
    assert "WS-OV-002" in rule_ids(scan(tmp_path / "model.xml"))
    assert looks_like_ir((tmp_path / "model.xml").read_bytes())


def test_many_comments_do_not_stall_the_sniff(tmp_path: Path) -> None:
    """The sniff's regular expression backtracked: 28 comments took 42 s (helper 217). Every file's head is
    sniffed."""
    head = b"<!-- a -- b -->" * 2000 + b"<html/>"
    started = time.monotonic()
    assert not looks_like_ir(head)
    assert looks_like_ir(head.replace(b"<html/>", b"<net/>"))
    assert time.monotonic() - started < 2


def test_a_shape_of_huge_numbers_is_a_finding(tmp_path: Path) -> None:
    shape = ", ".join(["999999999999999999"] * 300)
    text = DENSE.replace('shape="64, 32" offset="0"', f'shape="{shape}" offset="0"', 1)
    found = rule_ids(scan_bytes(tmp_path, text.encode(), "openvino_model.xml"))
    assert "WS-OV-002" in found and "WS-FILE-001" not in found


def test_weights_linked_out_of_the_folder_are_high(tmp_path: Path) -> None:
    """OpenVINO follows the .bin: linked to /etc/passwd, the model's output was that file (helper 217)."""
    outside = tmp_path / "outside.bin"
    outside.write_bytes((DATA / "dense.bin").read_bytes())
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "openvino_model.xml").write_text(DENSE)
    (tmp_path / "model" / "openvino_model.bin").symlink_to(outside)
    assert rule_ids(scan(tmp_path / "model" / "openvino_model.xml")) == {"WS-OV-005"}


def test_a_hugging_face_cache_snapshot_reads_its_weights_through_the_blobs(tmp_path: Path) -> None:
    repo = tmp_path / "models--org--ov-model"
    (repo / "blobs").mkdir(parents=True)
    snapshot = repo / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    for name, source in (("openvino_model.xml", "dense.xml"), ("openvino_model.bin", "dense.bin")):
        blob = repo / "blobs" / f"{name}-blob"
        blob.write_bytes((DATA / source).read_bytes())
        (snapshot / name).symlink_to(Path("../../blobs") / blob.name)
    report = scan(tmp_path)
    assert [(f.rule_id, f.message) for f in report.findings] == []


def test_what_openvino_writes_for_empty_and_grouped_constants_passes(tmp_path: Path) -> None:
    """ov.save_model writes one byte for an empty constant and three for a scalar u3 or u6 (helper 217): OpenVINO
    refuses only fewer bytes than the shape takes."""
    empty = DENSE.replace('shape="64, 32" offset="0" size="8192"', 'shape="0, 4" offset="0" size="1"', 1)
    grouped = DENSE.replace('element_type="f32" shape="64, 32" offset="0" size="8192"',
                            'element_type="u3" shape="" offset="0" size="3"', 1)
    for name, text in (("empty", empty), ("grouped", grouped)):
        (tmp_path / f"{name}.xml").write_text(text)
        (tmp_path / f"{name}.bin").write_bytes((DATA / "dense.bin").read_bytes())
    assert scan(tmp_path).findings == []


def test_in_an_archive_sizes_are_checked_without_the_weights(tmp_path: Path) -> None:
    """Inside a zip the .bin beside the XML is not known: no missing-weights finding, and a constant whose size is
    not its shape's is still one."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("model/openvino_model.xml", (DATA / "dense.xml").read_bytes())
        archive.writestr("bad/openvino_model.xml", (DATA / "hostile" / "const-size-not-shape.xml").read_bytes())
    report = scan_bytes(tmp_path, buffer.getvalue(), "ir.zip")
    assert [(f.rule_id, f.location.member) for f in report.findings] == [("WS-OV-002", "bad/openvino_model.xml")]


SEEDS = [path.read_bytes() for path in [*BENIGN, *(DATA / "hostile" / name for name in HOSTILE)]]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(range(len(SEEDS))), where=st.floats(0, 1), how=st.sampled_from(["cut", "set", "insert"]),
       byte=st.integers(0, 255))
def test_damaged_models_never_break_the_scan(tmp_path: Path, seed: int, where: float, how: str, byte: int) -> None:
    report = scan_bytes(tmp_path, damaged(SEEDS[seed], where, how, byte), "openvino_model.xml")
    assert not {f.rule_id for f in report.findings} & {"WS-FILE-001", "WS-FILE-002"}, report.findings
