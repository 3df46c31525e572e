"""Zip, tar and 7z scanners against hand-built hostile archives: one test per technique."""

from __future__ import annotations

import contextlib
import gzip
import io
import stat
import struct
import tarfile
import warnings
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import py7zr
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.scanning import rule_ids, scan_bytes
from wscan.config import Config
from wscan.limits import Budget, BudgetExceeded, Limits, open_counted
from wscan.model import Location, Observation
from wscan.scanners import archive as archive_mod
from wscan.scanners.archive import SevenZipScanner, TarScanner, ZipScanner
from wscan.scanners.base import Artifact, Head, ScanContext

# --- harness -----------------------------------------------------------------------------------------


@dataclass
class Result:
    observations: list[Observation] = field(default_factory=list)
    children: dict[str, bytes] = field(default_factory=dict)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def kinds(self) -> list[str]:
        return [o.kind for o in self.observations]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [dict(o.attrs) for o in self.observations if o.kind == kind]


def run(scanner: Any, data: bytes, limits: Limits | None = None, read: int = -1) -> Result:
    """Drive a scanner like the engine: read each child while the scanner is suspended."""
    limits = limits or Limits()
    artifact = Artifact(Location("t.bin"), len(data), lambda: io.BytesIO(data), name="t.bin")
    ctx = ScanContext(limits=limits, budget=Budget(limits))
    result = Result()
    for item in scanner.scan(artifact, ctx):
        if isinstance(item, Observation):
            result.observations.append(item)
        else:
            with item.opener() as stream:
                content = stream.read(read)
                if read < 0 and stream.seekable():  # the engine reads a tail when seeking is cheap
                    stream.seek(max(0, len(content) - 7))
                    assert stream.read() == content[-7:]
                    stream.seek(0)
                    assert stream.read(5) == content[:5]
            key = item.name if item.name not in result.children else item.name + "#2"
            result.children[key] = content
            result.contexts[key] = dict(item.context)
    return result


def head_of(data: bytes) -> Head:
    return Head(data[: 64 * 1024], data[-(64 * 1024 + 22) :], len(data), "t.bin")


def make_zip(members: list[tuple[str | zipfile.ZipInfo, bytes]], method: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", method) as zf:
        warnings.simplefilter("ignore")  # duplicate names on purpose
        for name, content in members:
            zf.writestr(name, content)
    return buffer.getvalue()


def central_offsets(data: bytes) -> list[int]:
    return [i for i in range(len(data)) if data.startswith(b"PK\x01\x02", i)]


def patch_flags(data: bytes, add: int) -> bytes:
    """Set flag bits in every local and central header."""
    raw = bytearray(data)
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        pos = raw.find(sig)
        while pos >= 0:
            (flags,) = struct.unpack_from("<H", raw, pos + at)
            struct.pack_into("<H", raw, pos + at, flags | add)
            pos = raw.find(sig, pos + 4)
    return bytes(raw)


def symlink_info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


# --- zip: acceptance and layouts ---------------------------------------------------------------------


def test_zip_accepts_plain_and_prepended_and_rejects_other_bytes() -> None:
    plain = make_zip([("a.txt", b"hello")])
    assert ZipScanner().accepts(head_of(plain))
    assert ZipScanner().accepts(head_of(b"#!/bin/sh\n" * 10 + plain))
    assert not ZipScanner().accepts(head_of(b"\x80\x04K\x01." + b"\x00" * 100))
    assert not ZipScanner().accepts(head_of(b"\x00" * 1000 + b"PK\x05\x06" + b"\x01" * 18))  # stray magic


def test_torch_save_is_pytorch_with_raw_storages() -> None:
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(6, dtype=torch.float32), "b": torch.ones(2)}, buffer)
    result = run(ZipScanner(), buffer.getvalue())
    assert result.of("archive.layout") == [{"format": "zip", "layout": "pytorch"}]
    storages = [n for n in result.children if "/data/" in n]
    assert storages and all(result.contexts[n] == {"container": "pytorch", "raw_data": True} for n in storages)
    pickle_name = next(n for n in result.children if n.endswith("/data.pkl"))
    assert result.contexts[pickle_name] == {"container": "pytorch"}
    assert result.children[pickle_name].startswith(b"\x80")
    assert set(result.kinds()) == {"archive.layout"}


def test_torch_jit_save_is_torchscript() -> None:
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), buffer)
    result = run(ZipScanner(), buffer.getvalue())
    assert result.of("archive.layout") == [{"format": "zip", "layout": "torchscript"}]
    assert any(ctx.get("raw_data") for ctx in result.contexts.values())
    assert any(n.endswith("constants.pkl") for n in result.children)


def test_np_savez_is_npz() -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, a=np.arange(10), b=np.zeros(3))
    result = run(ZipScanner(), buffer.getvalue())
    assert result.of("archive.layout") == [{"format": "zip", "layout": "npz"}]
    assert set(result.children) == {"a.npy", "b.npy"}
    assert result.children["a.npy"].startswith(b"\x93NUMPY")
    assert result.contexts["a.npy"] == {"container": "npz", "cheap_seek": False}  # deflated


def test_keras_and_generic_layouts() -> None:
    keras = make_zip([("config.json", b"{}"), ("metadata.json", b"{}"), ("model.weights.h5", b"\x89HDF")])
    assert run(ZipScanner(), keras).of("archive.layout")[0]["layout"] == "keras"
    assert run(ZipScanner(), make_zip([("x.txt", b"x")])).of("archive.layout")[0]["layout"] == "generic"


# --- zip: hostile structure --------------------------------------------------------------------------


def test_zip_local_name_mismatch_is_reported_and_member_still_read() -> None:
    data = make_zip([("archive/data.pkl", b"\x80\x02N."), ("archive/version", b"3")])
    local = data.index(b"archive/data.pkl")  # the first occurrence is in the local header
    data = data[:local] + b"archive/evil.pkl" + data[local + 16 :]
    result = run(ZipScanner(), data)
    assert result.of("archive.name_mismatch") == [{"member": "archive/data.pkl", "local_name": "archive/evil.pkl"}]
    assert result.children["archive/data.pkl"] == b"\x80\x02N."  # zipfile.open would refuse this one


def test_zip_odd_flag_bits() -> None:
    data = patch_flags(make_zip([("a.pkl", b"\x80\x02N.")]), 0x2000)  # bit 13: masked local headers
    result = run(ZipScanner(), data)
    assert result.of("archive.odd_flags") == [{"member": "a.pkl", "flags": 0x2000}]
    assert result.children["a.pkl"] == b"\x80\x02N."


def test_zip_normal_flags_are_quiet() -> None:
    data = patch_flags(make_zip([("a.pkl", b"x")]), 0x0808)  # data descriptor + UTF-8
    assert "archive.odd_flags" not in run(ZipScanner(), data).kinds()


def test_zip_encrypted_member_is_reported_not_yielded() -> None:
    data = patch_flags(make_zip([("a.pkl", b"\x80\x02N.")]), 0x0001)
    result = run(ZipScanner(), data)
    assert result.of("archive.encrypted") == [{"member": "a.pkl"}]
    assert "archive.odd_flags" not in result.kinds()
    assert result.children == {}


def test_zip_entry_hidden_inside_another_members_data() -> None:
    hidden = make_zip([("b.pkl", b"B" * 100)])[: 30 + 5 + 100]  # a complete local header + data
    data = bytearray(make_zip([("a.pkl", hidden), ("b.pkl", b"B" * 100)]))
    struct.pack_into("<I", data, central_offsets(bytes(data))[1] + 42, 30 + 5)  # b.pkl -> inside a.pkl
    result = run(ZipScanner(), bytes(data))
    assert result.of("archive.overlap") == [{"member": "b.pkl", "other": "a.pkl"}]
    assert result.children == {"a.pkl": hidden, "b.pkl": b"B" * 100}


def test_zip_quine_style_shared_local_header() -> None:
    data = bytearray(make_zip([("a.pkl", b"A" * 100), ("b.pkl", b"A" * 100)]))
    second = central_offsets(bytes(data))[1]
    struct.pack_into("<I", data, second + 42, 0)  # both entries share one local header and data
    result = run(ZipScanner(), bytes(data))
    assert result.of("archive.overlap") == [{"member": "b.pkl", "other": "a.pkl"}]
    assert result.children["a.pkl"] == result.children["b.pkl"] == b"A" * 100


def test_zip_duplicate_names_both_yielded() -> None:
    data = make_zip([("data.pkl", b"first"), ("data.pkl", b"second")])
    result = run(ZipScanner(), data)
    assert result.of("archive.duplicate_name") == [{"member": "data.pkl"}]
    assert result.children == {"data.pkl": b"first", "data.pkl#2": b"second"}


def test_zip_prepended_bytes() -> None:
    data = b"\x80\x02N." + b"padding!" + make_zip([("a.pkl", b"x")])
    result = run(ZipScanner(), data)
    assert result.of("archive.prepended_bytes") == [{"length": 12}]
    assert result.children == {"a.pkl": b"x"}


def _torch_zip(value: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)  # with zip64 end records, as torch always writes them
    return buffer.getvalue()


def test_zips_written_one_after_another_are_each_a_blob() -> None:
    """A torch.distributed.checkpoint `.distcp` is torch.save after torch.save; its loader reads each from its
    offset. Every earlier zip is handed on as a blob of its own; nothing is left over to report."""
    # (sizes differ: miniz would take the last zip's directory offset as absolute, and find the first zip's there)
    parts = [make_zip([("a.pkl", b"the first")]), _torch_zip({"b": 1}), make_zip([("c.pkl", b"third")])]
    data = b"".join(parts)
    result = run(ZipScanner(), data)
    starts = [0, len(parts[0])]
    hidden = {f"@{start}": data[start : start + len(parts[i])] for i, start in enumerate(starts)}
    assert result.children == {"c.pkl": b"third"} | hidden
    assert "archive.prepended_bytes" not in result.kinds()


def test_leading_bytes_with_unlisted_entries_are_high_and_reported() -> None:
    """A zip behind junk is no longer 'written right before': the walk stops there, the leading bytes are reported,
    and entry headers in them are entries no directory lists (a reader given their offset opens them)."""
    hidden = make_zip([("data.pkl", b"payload")])
    last = make_zip([("c.pkl", b"x")])
    result = run(ZipScanner(), hidden + b"\0" * 100 + last)
    assert result.of("archive.prepended_bytes") == [{"length": len(hidden) + 100}]
    assert result.of("archive.unlisted_entries") == [{"length": len(hidden) + 100}]
    assert result.children == {"c.pkl": b"x"}
    plain = run(ZipScanner(), b"\x80\x02N." + b"\0" * 100 + last)
    assert "archive.unlisted_entries" not in plain.kinds()


def test_zips_before_stop_at_the_member_limit() -> None:
    parts = [make_zip([(f"{i}.pkl", b"x")]) for i in range(5)]
    result = run(ZipScanner(), b"".join(parts), Limits(max_members=2))
    assert sorted(n for n in result.children if n.startswith("@")) == [f"@{len(parts[0]) * i}" for i in (2, 3)]
    assert result.of("archive.too_many_members") == [{"count": 2, "limit": 2}]
    assert result.of("archive.prepended_bytes") == [{"length": len(parts[0]) * 2}]


def _tar_ending_in_zip(last: bytes) -> bytes:
    """A tar (as a `.nemo` is) whose last member is a zip: its end record sits in the tar's tail."""
    return make_tar([("model_config.yaml", b"target: nemo.X\n", None), ("model_weights.ckpt", last, None)])


def test_a_zip_that_is_a_tars_last_member_has_no_hidden_head() -> None:
    data = _tar_ending_in_zip(make_zip([("archive/data.pkl", b"x")]))
    assert TarScanner().accepts(Head(data[:65536], data[-65536:], len(data), "a.nemo"))
    result = run(ZipScanner(), data)
    assert result.of("archive.prepended_bytes") == []
    assert result.children == {"archive/data.pkl": b"x"}  # still read both ways


def _nemo_with_big_weights(encoding: str, claimed_extra: int = 0) -> bytes:
    """A .nemo laid out as a weights member of 8 GiB or more is: Python's tarfile (pax format) writes 0 in the
    octal size field and the size in a pax record before the header; GNU tar writes it in base-256. The member
    here is small; its header is written the big way (the size as Python's tarfile computes it)."""
    weights = make_zip([("archive/data.pkl", b"x")])
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        config = tarfile.TarInfo("model_config.yaml")
        config.size = 15
        tar.addfile(config, io.BytesIO(b"target: nemo.X\n"))
        info = tarfile.TarInfo("model_weights.ckpt")
        info.size = len(weights)
        if encoding == "pax":
            info.pax_headers = {"size": str(len(weights) + claimed_extra)}
        tar.addfile(info, io.BytesIO(weights))
    data = bytearray(buffer.getvalue())
    header_at = data.index(b"model_weights.ckpt", 1024) // 512 * 512  # the ustar header, after any pax record
    field = bytes(12) if encoding == "pax" else b"\x80" + (len(weights) + claimed_extra).to_bytes(11, "big")
    data[header_at + 124 : header_at + 136] = field
    data[header_at + 148 : header_at + 156] = b" " * 8
    data[header_at + 148 : header_at + 156] = b"%06o\x00 " % sum(data[header_at : header_at + 512])
    return bytes(data)


@pytest.mark.parametrize("encoding", ["pax", "base-256"])
def test_a_tars_last_member_of_8_gib_or_more_is_no_hidden_head(encoding: str) -> None:
    data = _nemo_with_big_weights(encoding)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:  # the layout is what tarfile reads
        member = tar.getmember("model_weights.ckpt")
        assert zipfile.is_zipfile(io.BytesIO(data[member.offset_data : member.offset_data + member.size]))
    result = run(ZipScanner(), data)
    assert result.of("archive.prepended_bytes") == []
    assert result.children == {"archive/data.pkl": b"x"}


@pytest.mark.parametrize("encoding", ["pax", "base-256"])
def test_a_big_size_that_does_not_end_the_tar_is_still_reported(encoding: str) -> None:
    data = _nemo_with_big_weights(encoding, claimed_extra=1 << 33)
    assert run(ZipScanner(), data).of("archive.prepended_bytes") != []


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"\x80\x02N." + b"\x00" * 508 + data[512:],  # the first block is not a tar header
        lambda data: data + b"tail" + b"\x00" * 508,  # something follows the member besides the tar's zeros
    ],
    ids=["no-tar-at-the-start", "bytes-after-the-member"],
)
def test_a_zip_behind_other_bytes_that_only_look_like_a_tar_is_still_reported(damage: Callable[[bytes], bytes]) -> None:
    data = damage(_tar_ending_in_zip(make_zip([("a.pkl", b"x")])))
    assert run(ZipScanner(), data).of("archive.prepended_bytes") != []


@pytest.mark.parametrize(
    ("name", "why"),
    [("../evil.pkl", "parent"), ("/etc/cron.d/x", "absolute"), ("a\\b.pkl", "backslash"), ("C:/x.pkl", "drive")],
)
def test_zip_path_traversal(name: str, why: str) -> None:
    result = run(ZipScanner(), make_zip([(name, b"payload")]))
    assert result.of("archive.path_traversal") == [{"member": name, "reason": why}]
    assert list(result.children.values()) == [b"payload"]


def test_zip_symlink_escape() -> None:
    data = make_zip([(symlink_info("model/link"), b"../../../etc/passwd"), (symlink_info("ok"), b"model/x")])
    result = run(ZipScanner(), data)
    assert result.of("archive.link_escape") == [
        {"member": "model/link", "target": "../../../etc/passwd", "hard": False}
    ]


def test_zip_write_through_symlink() -> None:
    data = make_zip([(symlink_info("cfg"), b"/home/user/.ssh"), ("cfg/authorized_keys", b"ssh-rsa AAAA")])
    result = run(ZipScanner(), data)
    assert "archive.link_escape" in result.kinds()
    assert result.of("archive.write_through_link") == [{"member": "cfg/authorized_keys", "link": "cfg"}]
    assert result.children["cfg/authorized_keys"] == b"ssh-rsa AAAA"


def test_zip_declared_compression_ratio_bomb() -> None:
    data = make_zip([("zeros.bin", b"\x00" * 2_000_000)], zipfile.ZIP_DEFLATED)
    limits = Limits(ratio_floor_bytes=1_000_000, max_compression_ratio=50)
    result = run(ZipScanner(), data, limits, read=1024)
    [bomb] = result.of("archive.bomb")
    assert bomb["member"] == "zeros.bin" and bomb["ratio"] > 50 and bomb["size"] == 2_000_000
    assert result.children["zeros.bin"] == b"\x00" * 1024  # still yielded; read lazily


def test_zip_too_many_members() -> None:
    data = make_zip([(f"m{i}", b"x") for i in range(5)])
    result = run(ZipScanner(), data, Limits(max_members=3))
    assert result.of("archive.too_many_members") == [{"count": 5, "limit": 3}]


def _wide_zip(
    count: int,
    first: bytes,
    zip64: bool,
    prefix: bytes = b"",
    name_bytes: int = 7,
    recorded: int | None = None,
    past: int = 0,
    reverse: bool = False,
) -> bytes:
    """`count` stored entries, the first holding `first` and the rest empty, behind `prefix` (offsets are not
    shifted for it). A classic end record says one entry: zipfile goes by the directory's size, not its count.
    `recorded`: the directory's offset as the end record states it, or `past` bytes after where it is; each
    entry's offset is then written so that zipfile's shift (start - recorded) lands on it, in a zip64 extra field
    when it needs 64 bits."""
    local, directory = bytearray(prefix), bytearray()
    where = sum(30 + name_bytes + 4 + len(first if i == 0 else b"") for i in range(count))
    recorded = where + past if recorded is None and past else recorded
    shift = len(prefix) if recorded is None else len(prefix) + where - recorded
    for index in range(count):
        name, data = (b"%07d" % index).ljust(name_bytes, b"n") + b".pkl", first if index == 0 else b""
        stored, crc = len(local) - shift, zlib.crc32(data)
        local += struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data), len(data), len(name), 0)
        local += name + data
        extra = struct.pack("<HHQ", 1, 8, stored) if stored >= 0xFFFFFFFF else b""
        entry = struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 45, 45, 0, 0, 0, 0, crc, len(data), len(data),
                            len(name), len(extra), 0, 0, 0, 0, min(stored, 0xFFFFFFFF)) + name + extra
        directory[0 if reverse else len(directory) :] = entry + (directory if reverse else b"")
    assert len(local) == len(prefix) + where
    stated = where if recorded is None else recorded
    if zip64:
        end64 = struct.pack("<4sQ2H2I4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, len(directory), stated)
        locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, where + len(directory), 1)
        end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
        return bytes(local + directory) + end64 + locator + end
    return bytes(local + directory) + struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, len(directory), stated, 0)


PAYLOAD = b"\x80\x02cposix\nsystem\nq\x00(S'touch x'\ntR."
WIDE_ZIPS = {  # name: (entries, arguments of _wide_zip after them)
    "zip64": (25_000, {"zip64": True}),
    "classic": (25_000, {"zip64": False}),
    "zip64-prepended": (25_000, {"zip64": True, "prefix": b"#!/bin/sh\n" * 100}),
    "classic-prepended": (25_000, {"zip64": False, "prefix": b"#!/bin/sh\n" * 100}),
    # The thousandth entry's name runs across the walk's second 1 MiB read (review 4 found the cut short there).
    "long-names": (1500, {"zip64": True, "name_bytes": 1049}),
    # A stated offset near 2**64: zipfile's shift is then huge and negative (review 4: it overflowed the cut).
    "offset-near-2**64": (25_000, {"zip64": True, "recorded": (1 << 64) - 1}),
    # Offsets recorded 100 bytes past where they are (a zip with its front cut off): a negative shift, which a zip64
    # locator cannot state to newer zipfiles (review 6).
    "classic-front-cut": (25_000, {"zip64": False, "past": 100}),
}


def _open_zip(data: bytes, limits: Limits) -> archive_mod.PythonZip:
    return archive_mod.open_zip(io.BytesIO(data), len(data), ScanContext(limits, Budget(limits)))


def _zipfile_modules() -> list[Any]:
    """Python's zipfile, and a newer one where installed: backports.zstd (a py7zr requirement) carries CPython
    3.14's, which checks the zip64 locator against the record it names (CVE-2025-8291, also in 3.10.19, 3.11.14,
    3.12.12 and 3.13.9). A cut that only the older one opened was a bypass there (review 5)."""
    try:
        import backports.zstd.zipfile as newer  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return [zipfile]
    return [zipfile, newer]


@pytest.mark.parametrize("module", _zipfile_modules(), ids=lambda m: m.__name__)
@pytest.mark.parametrize("layout", list(WIDE_ZIPS))
def test_a_directory_past_max_members_is_cut_before_zipfile_reads_it(
    layout: str, module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zipfile builds half a kilobyte for every entry listed (a zip64 of 2,000,000 empty entries took 1 GB and
    23 s). It is handed the first max-members entries alone, with their offsets as it would have read them."""
    count, arguments = WIDE_ZIPS[layout]
    data = _wide_zip(count, PAYLOAD, **arguments)  # type: ignore[arg-type]
    limits = Limits(max_members=1000)
    monkeypatch.setattr(archive_mod, "zipfile", module)
    try:
        whole = module.ZipFile(io.BytesIO(data))
    except module.BadZipFile:  # this zipfile refuses the file itself: so does the cut
        with pytest.raises(module.BadZipFile):
            _open_zip(data, limits)
        return
    python = _open_zip(data, limits)
    assert python.cut == "max-members" and python.start_dir == whole.start_dir
    assert [(i.filename, i.header_offset) for i in python.archive.infolist()] == [
        (i.filename, i.header_offset) for i in whole.infolist()[:1000]]
    assert python.archive.read(whole.infolist()[0]) == PAYLOAD
    result = run(ZipScanner(), data, limits)
    assert result.of("archive.too_many_members") == [{"limit": 1000}]
    assert len([n for n in result.children if not n.startswith("@")]) == 1000
    assert result.children[whole.infolist()[0].filename] == PAYLOAD
    assert "archive.corrupt" not in result.kinds() and "archive.overlap" not in result.kinds()


@pytest.mark.parametrize("disguised", [False, True], ids=["zip", "disguised"])
def test_a_payload_among_the_first_entries_of_a_cut_directory_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, disguised: bool
) -> None:
    """Through the engine: the cut archive's members are scanned, and zipfile never builds more entries than
    that. Disguised: behind other bytes, with a disk field set in its classic end record (zipfile ignores it);
    the lenient scanner first asks zipfile whether it finds a directory there."""
    data = bytearray(_wide_zip(25_000, PAYLOAD, True, b"MZ" * 300))
    if disguised:
        struct.pack_into("<H", data, len(data) - 18, 1)
    built = []

    class CountedInfo(zipfile.ZipInfo):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            built.append(1)

    monkeypatch.setattr(zipfile, "ZipInfo", CountedInfo)
    report = scan_bytes(tmp_path, bytes(data), "model.bin", Config(jobs=0, limits=Limits(max_members=1000)))
    expected = {"WS-PKL-001", "WS-ARC-015"} | ({"WS-ARC-021"} if disguised else set())
    assert expected <= rule_ids(report), rule_ids(report)
    assert 1000 <= len(built) <= 2000


def test_a_wide_directory_only_miniz_reads_is_cut_and_scanned(tmp_path: Path) -> None:
    """The zip64 locator names a record for a wide directory (torch's miniz reads it); zipfile reads the record
    right before the locator, a decoy's. Before, miniz's directory listing more than max-members was refused
    unread (high, not critical): its first max-members entries are now scanned."""
    wide = _wide_zip(25_000, PAYLOAD, zip64=True)
    record_at = wide.index(b"PK\x06\x06")
    body = bytearray(wide[: record_at + 56])  # locals, the wide directory and its zip64 record
    decoy_at = len(body)
    body += struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, zlib.crc32(b"N."), 2, 2, 5, 0) + b"d.pkl" + b"N."
    decoy = struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, zlib.crc32(b"N."), 2, 2, 5, 0, 0, 0, 0, 0,
                        decoy_at) + b"d.pkl"
    directory_at = len(body)
    body += decoy + struct.pack("<4sQ2H2I4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 1, 1, len(decoy), directory_at)
    body += struct.pack("<4sIQI", b"PK\x06\x07", 0, record_at, 1)
    body += struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    assert zipfile.ZipFile(io.BytesIO(bytes(body))).namelist() == ["d.pkl"]
    report = scan_bytes(tmp_path, bytes(body), "model.bin", Config(jobs=0, limits=Limits(max_members=1000)))
    assert {"WS-PKL-001", "WS-ARC-015"} <= rule_ids(report), rule_ids(report)


def test_a_cut_directory_still_finds_the_zip_written_before_it() -> None:
    """A `.distcp` is torch.save after torch.save; the zips before the last are found from where its first member
    lies. Listed last, past the cut, that member was left out of the reckoning, and the earlier zip with it
    (review 4)."""
    hidden = make_zip([("data.pkl", PAYLOAD)])
    data = _wide_zip(25_000, b"x", zip64=True, prefix=hidden, reverse=True)
    assert zipfile.ZipFile(io.BytesIO(data)).infolist()[-1].header_offset == len(hidden)
    result = run(ZipScanner(), data, Limits(max_members=1000))
    assert result.children["@0"] == hidden and "archive.prepended_bytes" not in result.kinds()


def test_a_wide_directory_within_max_members_is_read_whole() -> None:
    data = _wide_zip(25_000, b"x", zip64=True)
    python = _open_zip(data, Limits(max_members=25_000))
    assert not python.cut and len(python.archive.infolist()) == 25_000
    python = _open_zip(data, Limits(max_members=24_999))
    assert python.cut == "max-members" and len(python.archive.infolist()) == 24_999


def test_a_directory_past_max_header_bytes_is_cut_there(tmp_path: Path) -> None:
    """A directory may hold few entries and still be huge (64 KiB comments each): it is cut before the first entry
    that ends past max-header-bytes, and what came before is scanned (review 4: it was refused unread)."""
    data = _wide_zip(25_000, PAYLOAD, zip64=True)
    limits = Limits(max_members=100_000, max_header_bytes=100_000)
    python = _open_zip(data, limits)
    assert python.cut == "max-header-bytes" and len(python.archive.infolist()) == 100_000 // 57
    report = scan_bytes(tmp_path, data, "model.bin", Config(jobs=0, limits=limits))
    assert {"WS-PKL-001", "WS-FILE-002"} <= rule_ids(report), rule_ids(report)


def test_a_directory_that_breaks_early_is_not_read_to_its_stated_end(tmp_path: Path) -> None:
    """zipfile reads a directory whole before it parses any of it: one entry, then 50 MB of nothing (a sparse
    file, 8 KB on disk, took 1.5 GB). The walk stops at the first thing that is not an entry, as zipfile would."""
    entry = _wide_zip(1, PAYLOAD, zip64=True)
    directory_at = entry.index(b"PK\x01\x02")
    stated = 50_000_000
    path = tmp_path / "sparse.zip"
    with path.open("wb") as handle:
        handle.write(entry[: entry.index(b"PK\x06\x06")])
        handle.seek(directory_at + stated)
        handle.write(struct.pack("<4sQ2H2I4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 2, 2, stated, directory_at))
        handle.write(struct.pack("<4sIQI", b"PK\x06\x07", 0, directory_at + stated, 1))
        handle.write(struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))
    limits = Limits()
    budget = Budget(limits)
    with open_counted(path, budget) as fh, pytest.raises(zipfile.BadZipFile, match="Bad magic number"):
        archive_mod.open_zip(fh, path.stat().st_size, ScanContext(limits, budget))
    assert budget.read < 4 * 1024 * 1024


def test_zip_unsupported_method() -> None:
    data = bytearray(make_zip([("a.pkl", b"x"), ("b.pkl", b"y")]))
    struct.pack_into("<H", data, 8, 9)  # deflate64 in a.pkl's local header
    struct.pack_into("<H", data, central_offsets(bytes(data))[0] + 10, 9)
    result = run(ZipScanner(), bytes(data))
    assert result.of("archive.unsupported_method") == [{"member": "a.pkl", "method": 9}]
    assert result.children == {"b.pkl": b"y"}


def test_zip_bad_crc_is_reported_and_member_still_yielded() -> None:
    data = bytearray(make_zip([("a.pkl", b"\x80\x02cos\nsystem\n.")]))
    data[data.index(b"system")] = ord("S")
    result = run(ZipScanner(), bytes(data))
    assert [o["member"] for o in result.of("archive.bad_crc")] == ["a.pkl"]
    assert result.children["a.pkl"] == b"\x80\x02cos\nSystem\n."


def test_zip_broken_deflate_stream() -> None:
    payload = bytes(range(256)) * 64
    data = bytearray(make_zip([("a.bin", payload)], zipfile.ZIP_DEFLATED))
    start = 30 + len("a.bin")
    data[start : start + 40] = b"\xff" * 40
    result = run(ZipScanner(), bytes(data))
    assert "archive.member_unreadable" in result.kinds()
    assert "a.bin" in result.children  # the readable prefix (maybe empty) is still handed on


def test_zip_large_members_are_not_read_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive_mod, "FULL_READ_BYTES", 8)
    data = bytearray(make_zip([("weights.bin", b"0123456789" * 10)]))
    data[data.index(b"0123")] = ord("X")
    result = run(ZipScanner(), bytes(data), read=4)
    assert "archive.bad_crc" not in result.kinds()
    assert result.children["weights.bin"] == b"X123"


def test_zip_tensor_storages_are_never_read_in_full() -> None:
    data = bytearray(make_zip([("archive/data.pkl", b"\x80\x02N."), ("archive/data/0", b"0123456789" * 10)]))
    data[data.index(b"0123")] = ord("X")  # bad CRC, but only a full read would notice
    result = run(ZipScanner(), bytes(data), read=4)
    assert "archive.bad_crc" not in result.kinds()
    assert result.children["archive/data/0"] == b"X123"


def test_zip_without_central_directory_is_corrupt() -> None:
    data = make_zip([("a", b"x")])
    result = run(ZipScanner(), data[: data.index(b"PK\x01\x02")])
    assert result.kinds() == ["archive.corrupt"]


# --- tar ---------------------------------------------------------------------------------------------


def make_tar(entries: list[tuple[str, bytes | None, Callable[[tarfile.TarInfo], None] | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, content, tweak in entries:
            info = tarfile.TarInfo(name)
            info.size = len(content or b"")
            if tweak:
                tweak(info)
            tar.addfile(info, io.BytesIO(content) if content else None)
    return buffer.getvalue()


def symlink_to(target: str) -> Callable[[tarfile.TarInfo], None]:
    def tweak(info: tarfile.TarInfo) -> None:
        info.type, info.linkname = tarfile.SYMTYPE, target

    return tweak


def test_tar_members_and_pytorch_layout() -> None:
    data = make_tar(
        [("archive/data.pkl", b"\x80\x02N.", None), ("archive/data/0", b"\x00" * 8, None), ("archive/d", None, None)]
    )
    assert TarScanner().accepts(head_of(data))
    result = run(TarScanner(), data)
    assert result.of("archive.layout") == [{"format": "tar", "layout": "pytorch"}]
    assert result.children["archive/data.pkl"] == b"\x80\x02N."
    assert result.contexts["archive/data/0"]["raw_data"] is True
    assert set(result.kinds()) == {"archive.layout"}


def test_tar_accepts_v7_header_by_checksum() -> None:
    block = bytearray(make_tar([("a.pkl", b"x", None)])[:512])
    block[257:265] = b"\x00" * 8
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\x00 " % sum(block)
    assert TarScanner().accepts(head_of(bytes(block)))
    assert not TarScanner().accepts(head_of(b"\x01" * 512))


def test_tar_path_traversal() -> None:
    result = run(TarScanner(), make_tar([("../../evil.pkl", b"x", None), ("/abs.pkl", b"y", None)]))
    assert [o["reason"] for o in result.of("archive.path_traversal")] == ["parent", "absolute"]
    assert len(result.children) == 2


def test_tar_symlink_and_hardlink_escape() -> None:
    def hardlink(info: tarfile.TarInfo) -> None:
        info.type, info.linkname = tarfile.LNKTYPE, "../outside"

    data = make_tar([("a/link", None, symlink_to("../../etc/passwd")), ("hl", None, hardlink)])
    result = run(TarScanner(), data)
    assert result.of("archive.link_escape") == [
        {"member": "a/link", "target": "../../etc/passwd", "hard": False},
        {"member": "hl", "target": "../outside", "hard": True},
    ]


def test_tar_inner_symlink_is_fine() -> None:
    data = make_tar([("a/b/link", None, symlink_to("../c")), ("a/c", b"x", None)])
    assert "archive.link_escape" not in run(TarScanner(), data).kinds()


def test_tar_write_through_symlink() -> None:
    data = make_tar([("lnk", None, symlink_to("/etc")), ("lnk/cron.d/job", b"* * * * * sh", None)])
    result = run(TarScanner(), data)
    assert result.of("archive.write_through_link") == [{"member": "lnk/cron.d/job", "link": "lnk"}]
    assert result.children["lnk/cron.d/job"] == b"* * * * * sh"


def test_tar_device_and_fifo_members() -> None:
    def device(kind: bytes) -> Callable[[tarfile.TarInfo], None]:
        def tweak(info: tarfile.TarInfo) -> None:
            info.type = kind

        return tweak

    data = make_tar([("dev", None, device(tarfile.CHRTYPE)), ("pipe", None, device(tarfile.FIFOTYPE))])
    result = run(TarScanner(), data)
    assert result.of("archive.special_file") == [
        {"member": "dev", "type": "char"},
        {"member": "pipe", "type": "fifo"},
    ]
    assert result.children == {}


def test_tar_too_many_members() -> None:
    data = make_tar([(f"m{i}", b"x", None) for i in range(5)])
    result = run(TarScanner(), data, Limits(max_members=3))
    assert result.of("archive.too_many_members") == [{"limit": 3}]
    assert len(result.children) == 3
    assert "archive.too_many_members" not in run(TarScanner(), data, Limits(max_members=5)).kinds()  # just as many


def test_tar_truncated_keeps_earlier_members() -> None:
    data = make_tar([("a.pkl", b"A" * 600, None), ("b.pkl", b"B" * 600, None)])
    result = run(TarScanner(), data[: data.rindex(b"B" * 600) + 100])
    assert result.children["a.pkl"] == b"A" * 600
    assert "archive.member_unreadable" in result.kinds() or "archive.corrupt" in result.kinds()


def test_tar_member_hidden_after_the_end_marker_is_still_scanned() -> None:
    clean = make_tar([("a.pkl", b"x", None)])
    assert "archive.hidden_member" not in run(TarScanner(), clean).kinds()
    result = run(TarScanner(), clean + make_tar([("hidden.pkl", b"\x80\x02N.", None)]))
    [hidden] = result.of("archive.hidden_member")
    assert hidden["member"] == "hidden.pkl" and hidden["gap"] > 0  # Python's tarfile stops at the zeros
    assert result.children["hidden.pkl"] == b"\x80\x02N."


def test_tar_member_behind_a_broken_header_is_still_scanned() -> None:
    data = bytearray(make_tar([("a.pkl", b"A", None), ("b.pkl", b"B", None), ("c.pkl", b"C", None)]))
    second = data.index(b"b.pkl")
    data[second + 148 : second + 156] = b"0000000\x00"  # wrong checksum: b.pkl's header is unreadable
    result = run(TarScanner(), bytes(data))
    assert result.children == {"a.pkl": b"A", "c.pkl": b"C"}
    assert [h["member"] for h in result.of("archive.hidden_member")] == ["c.pkl"]


def test_tar_oversized_extended_header_is_refused() -> None:
    data = make_tar([("a" * 2000, b"x", None)])  # long name -> pax header first
    result = run(TarScanner(), data, Limits(max_header_bytes=10, max_members=1))  # 10 bytes and 1 KiB a member
    assert result.of("archive.corrupt") == [{"reason": "oversized extended header"}]


def test_tar_global_pax_headers_count_once() -> None:
    """tarfile shares a global pax header's values among the members after it: read once, counted once (review
    5: counted per member, a tar written by tarfile with a large global comment was cut short)."""
    buffer = io.BytesIO()
    shared = {"comment": "c" * 300_000}
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT, pax_headers=shared) as tar:
        for index in range(12):
            info = tarfile.TarInfo(f"m{index}.pkl")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    result = run(TarScanner(), buffer.getvalue(), Limits(max_header_bytes=1_000_000, max_members=20))
    assert len(result.children) == 12 and "archive.corrupt" not in result.kinds()


@pytest.mark.parametrize("size", [b"-1000", b"3777777777\0X"], ids=["negative", "digits-then-nul"])
def test_tar_extended_header_sizes_are_read_as_tarfile_reads_them(size: bytes) -> None:
    """A negative size (tarfile reads to the end; review 5 made wscan's own walk loop until the time limit) and
    digits cut by a NUL (tarfile reads 512 MiB; the walk took it for unreadable and let it through)."""
    data = bytearray(make_tar([("a.pkl", b"A", None), ("b" * 200, b"B", None)]))
    second = data.index(b"././@PaxHeader", 1024)  # the pax header of the long name, after a.pkl's two blocks
    data[second + 124 : second + 136] = size.ljust(12, b" ")[:12]
    tarfile_header = data[second : second + 512]
    tarfile_header[148:156] = b" " * 8
    data[second + 148 : second + 156] = b"%06o\0 " % sum(tarfile_header)
    result = run(TarScanner(), bytes(data), Limits(max_seconds_per_file=5))
    assert result.children == {"a.pkl": b"A"}
    assert [o["reason"] for o in result.of("archive.corrupt")] == ["oversized extended header"]


def test_tar_pax_text_is_charged_as_tarfile_keeps_it() -> None:
    """Newlines inside a value are not records (review 6: a comment of newlines was charged 101 bytes each, and a
    tar with a torch payload refused). A keyword runs to the next '=' wherever that is: '2 ' 20,000 times, then
    '=', is 20,000 records with keywords of up to 40 KB each in Python 3.11.7's tarfile (394 MB)."""
    newlines = {"comment": "\n" * 300_000}
    data = make_tar([(f"m{i}.pkl", b"x", lambda info: info.pax_headers.update(newlines)) for i in range(3)])
    assert len(run(TarScanner(), data, Limits(max_header_bytes=1_000_000, max_members=100)).children) == 3
    body = b"2 " * 20_000 + b"=x\n"
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, len(body)
    data = make_tar([("a.pkl", b"A", None)])[:1024] + header.tobuf(format=tarfile.USTAR_FORMAT)
    data += body + bytes(-len(body) % 512) + make_tar([("b.pkl", b"B", None)])
    result = run(TarScanner(), data)
    assert result.children == {"a.pkl": b"A"}
    assert [o["reason"] for o in result.of("archive.corrupt")] == ["oversized extended header"]


def test_tar_members_may_each_have_a_pax_header_beside_max_header_bytes() -> None:
    """GNU tar's posix format writes a pax header for every file (three times: 825 bytes charged); max-header-bytes
    alone (100 MiB over 100,000 members) cut such a tar short (review 6)."""
    data = make_tar([(f"{'d' * 120}/m{i}.pkl", b"x", None) for i in range(150)])
    result = run(TarScanner(), data, Limits(max_header_bytes=10_000, max_members=200))
    assert len(result.children) == 150 and "archive.corrupt" not in result.kinds()


def test_tar_global_pax_header_is_no_hidden_gap() -> None:
    """tarfile reads a global header with the member after it, whose offset is its own: `git archive` writes one
    first, and every such tar had a high 'hidden member' finding."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "abc"}) as tar:
        info = tarfile.TarInfo("a.pkl")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    result = run(TarScanner(), buffer.getvalue())
    assert result.children == {"a.pkl": b"x"} and not result.of("archive.hidden_member")


def test_tar_pax_records_cost_more_than_their_text() -> None:
    """tarfile spends about 100 bytes on each pax record beside its text: 50 MB of tiny records took 500 MB."""
    tiny = {f"k{i:06d}": "" for i in range(20_000)}  # 240 KB of text
    data = make_tar([("a.pkl", b"A", None), ("b.pkl", b"B", lambda info: info.pax_headers.update(tiny))])
    result = run(TarScanner(), data, Limits(max_header_bytes=1_000_000, max_members=10))
    assert result.children == {"a.pkl": b"A"} and result.of("archive.corrupt")
    assert len(run(TarScanner(), data, Limits(max_header_bytes=3_000_000, max_members=10)).children) == 2


def test_tar_extended_headers_count_together() -> None:
    """tarfile keeps every member's pax headers: twelve of 99 MB each, every one under max-header-bytes, took
    1.4 GB (review 4). Together they stay within it; the members before are still read."""
    def with_comment(size: int) -> Callable[[tarfile.TarInfo], None]:
        return lambda info: info.pax_headers.update({"comment": "c" * size})

    def with_keyword(size: int) -> Callable[[tarfile.TarInfo], None]:
        return lambda info: info.pax_headers.update({"k" * size: "v"})

    for tweak in (with_comment, with_keyword):  # review 5: keywords were not counted
        data = make_tar([(f"m{i}.pkl", b"x", tweak(300_000)) for i in range(12)])
        result = run(TarScanner(), data, Limits(max_header_bytes=1_000_000, max_members=20))
        assert sorted(result.children) == ["m0.pkl", "m1.pkl", "m2.pkl"]
        assert [o["reason"] for o in result.of("archive.corrupt")] == ["oversized extended header"]
        assert len(run(TarScanner(), data, Limits(max_header_bytes=4_000_000, max_members=20)).children) == 12


SPARSE_TARS = Path(__file__).parents[1] / "data" / "tar_sparse"


@pytest.mark.parametrize("name", ["gnu", "posix-0.0", "posix-0.1", "posix-1.0"])
def test_tar_gnu_sparse_members_read_with_their_holes(name: str) -> None:
    """GNU tar 1.34 `-S` in each sparse format: old GNU (a map past four regions goes on in extension blocks), pax
    0.0 and 0.1 (the map in pax records), and 1.0 (the map at the start of the member's data). Each is scanned
    as the file it stands for, holes and all, like the loader that extracts it."""
    data = gzip.decompress((SPARSE_TARS / f"{name}.tar.gz").read_bytes())
    result = run(TarScanner(), data)
    assert "archive.corrupt" not in result.kinds()
    content = result.children["holes.pkl"]
    assert len(content) == 1_000_000 and content.startswith(b"cos\nsystem\n(S'id'\ntR.\0")
    assert content[700_000:700_008] == b"region 7" and not any(content[700_008:])


def sparse_10(regions: int, name: str = "big.bin") -> tuple[bytes, Callable[[tarfile.TarInfo], None]]:
    """A GNU 1.0 sparse member's data, its map first (tarfile reads that while listing), and its pax headers."""
    text = b"%d\n" % regions + b"0\n1\n" * regions
    headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": name, "GNU.sparse.realsize": "1"}
    return text + bytes(-len(text) % 512), lambda info: info.pax_headers.update(headers)


def old_gnu_sparse(blocks: int) -> bytes:
    """An old GNU sparse header whose map goes on in `blocks` extension blocks of 21 regions each."""
    info = tarfile.TarInfo("big.bin")
    header = bytearray(info.tobuf(format=tarfile.GNU_FORMAT))
    header[156:157], header[482] = b"S", 1  # isextended
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    extension = bytearray(b"%011o\0%011o\0" % (1, 1) * 21 + bytes(8))
    extension[504] = 1
    last = bytearray(extension)
    last[504] = 0
    return bytes(header) + bytes(extension) * (blocks - 1) + bytes(last)


def sparse_00(regions: int, trailer: int) -> bytes:
    """A pax header with GNU 0.0 sparse records, then `trailer` more after a record that does not parse: Python
    3.12.1's tarfile and older search the whole body for them."""
    def record(text: bytes) -> bytes:  # its length counts its own digits
        size = len(text) + 2 + len(str(len(text) + 2))
        size += len(str(size)) - len(str(len(text) + 2))
        return b"%d %s\n" % (size, text)

    body = record(b"GNU.sparse.size=1") + record(b"GNU.sparse.name=big.bin")
    body += b"".join(record(b"GNU.sparse.offset=0") + record(b"GNU.sparse.numbytes=1") for _ in range(regions))
    body += b"x\n" + (record(b"GNU.sparse.offset=0") + record(b"GNU.sparse.numbytes=1")) * trailer
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, len(body)
    member = tarfile.TarInfo("big.bin")
    member.size = 1
    return header.tobuf(format=tarfile.USTAR_FORMAT) + body + bytes(-len(body) % 512) + member.tobuf(
        format=tarfile.USTAR_FORMAT) + b"x" + bytes(511)


def test_tar_sparse_maps_are_charged_as_tarfile_parses_them() -> None:
    """tarfile keeps a sparse member's regions as a list, read while listing: a 30 MB 1.0 map took 2 GB to scan, none
    of it charged (review 6). Each number of a map now counts SPARSE_NUMBER_COST against max-header-bytes as
    tarfile parses it, wherever it is; the member before is still read."""
    limits = Limits(max_header_bytes=100_000, max_members=10)  # 110,240 bytes: 551 numbers
    before = make_tar([("a.pkl", b"A", None)])[:1024]
    end = bytes(1024)

    def in_pax(regions: int) -> bytes:
        headers = {"GNU.sparse.map": ",".join(["0,1"] * regions), "GNU.sparse.name": "big.bin"}
        return make_tar([("a.pkl", b"A", None), ("big", b"", lambda i: i.pax_headers.update(headers))])

    maps = {  # a map within them, then one of 2,000 regions
        "1.0 in the member's data": [make_tar([("a.pkl", b"A", None), ("GNUSparseFile.0/big.bin", *sparse_10(n))])
                                     for n in (250, 2_000)],
        "old GNU extension blocks": [before + old_gnu_sparse(blocks) + end for blocks in (11, 100)],
        "0.1 in a pax value": [in_pax(250), in_pax(2_000)],
        "0.0 in pax records": [before + sparse_00(100, 0) + end, before + sparse_00(10, 2_000) + end],
    }
    for kind, (small, large) in maps.items():
        result = run(TarScanner(), small, limits)
        assert len(result.children) == 2 and "archive.corrupt" not in result.kinds(), kind
        result = run(TarScanner(), large, limits)
        assert result.children == {"a.pkl": b"A"}, kind
        assert [o["reason"] for o in result.of("archive.corrupt")] == ["oversized sparse map"], kind
        assert "archive.corrupt" not in run(TarScanner(), large).kinds()  # within the default limits


def test_tar_many_sparse_members_fit_in_their_allowance() -> None:
    """A map is charged by its numbers, not the blocks tarfile reads it in: at 64 bytes a byte read, every 1.0
    member cost 32 KiB and 7,000 files with a hole each were refused (review 7)."""
    data = make_tar([(f"GNUSparseFile.0/m{i}.bin", *sparse_10(1, f"m{i}.bin")) for i in range(100)])
    result = run(TarScanner(), data, Limits(max_header_bytes=100_000, max_members=100))
    assert len(result.children) == 100 and "archive.corrupt" not in result.kinds()


def test_tar_global_sparse_map_is_charged_for_each_member() -> None:
    """A global pax header's GNU.sparse.map is parsed again for every member with a pax header of its own, each
    keeping its own list: read once and charged once, it took memory for every member."""
    buffer = io.BytesIO()
    shared = {"GNU.sparse.map": ",".join(["0,1"] * 50)}  # 100 numbers: 20,000 bytes each time tarfile parses it
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT, pax_headers=shared) as tar:
        for index in range(10):
            info = tarfile.TarInfo(f"m{index}.pkl")
            info.size, info.pax_headers = 1, {"comment": "own"}
            tar.addfile(info, io.BytesIO(b"x"))
    result = run(TarScanner(), buffer.getvalue(), Limits(max_header_bytes=100_000, max_members=10))
    assert sorted(result.children) == ["m0.pkl", "m1.pkl", "m2.pkl", "m3.pkl"]  # m0 twice: also for the global one
    assert [o["reason"] for o in result.of("archive.corrupt")] == ["oversized sparse map"]


def test_tar_pax_body_is_charged_at_least_its_length() -> None:
    """tarfile keeps every body of a chain of pax headers until the chain ends; a body with no records was charged
    nothing, and a 1 GiB chain passed (review 7)."""
    junk = tarfile.TarInfo("././@PaxHeader")
    junk.type, junk.size = tarfile.XHDTYPE, 20_000
    chain = (junk.tobuf(format=tarfile.USTAR_FORMAT) + b"x" * 20_000 + bytes(-20_000 % 512)) * 10
    data = make_tar([("a.pkl", b"A", None)])[:1024] + chain + make_tar([("b.pkl", b"B", None)])
    result = run(TarScanner(), data, Limits(max_header_bytes=100_000, max_members=10))
    assert result.children == {"a.pkl": b"A"}
    assert [o["reason"] for o in result.of("archive.corrupt")] == ["oversized extended header"]
    assert "b.pkl" in run(TarScanner(), data).children


# --- 7z ----------------------------------------------------------------------------------------------


def make_7z(members: list[tuple[str, bytes]], password: str | None = None, header: bool = False) -> bytes:
    buffer = io.BytesIO()
    with py7zr.SevenZipFile(buffer, "w", password=password, header_encryption=header) as archive:
        for name, content in members:
            archive.writestr(content, name)
    return buffer.getvalue()


def test_7z_members_and_pytorch_layout() -> None:
    data = make_7z([("archive/data.pkl", b"\x80\x02N."), ("archive/data/0", b"\x01" * 16), ("archive/version", b"3")])
    assert SevenZipScanner().accepts(head_of(data))
    result = run(SevenZipScanner(), data)
    assert result.of("archive.layout") == [{"format": "7z", "layout": "pytorch"}]
    assert result.children["archive/data.pkl"] == b"\x80\x02N."
    assert result.contexts["archive/data/0"] == {"container": "pytorch", "raw_data": True}
    assert result.children["archive/data/0"] == b"\x01" * 16


def test_7z_duplicate_names_both_yielded() -> None:
    result = run(SevenZipScanner(), make_7z([("a.pkl", b"one"), ("a.pkl", b"two")]))
    assert result.of("archive.duplicate_name") == [{"member": "a.pkl"}]
    assert sorted(result.children.values()) == [b"one", b"two"]


def test_7z_too_many_members() -> None:
    """py7zr is told to refuse the header before it builds an entry for each (2 KB apiece: 100,000 empty members
    in a 185 KB file took 240 MB); its own cap is 8,388,608. The cap is its own again afterwards."""
    data = make_7z([(f"m{i}", b"x") for i in range(5)])
    before = py7zr.archiveinfo.MAX_NUMFILES
    result = run(SevenZipScanner(), data, Limits(max_members=3))
    assert result.of("archive.too_many_members") == [{"limit": 3}]
    assert not result.children and "archive.corrupt" not in result.kinds()
    assert before == py7zr.archiveinfo.MAX_NUMFILES
    assert len(run(SevenZipScanner(), data, Limits(max_members=5)).children) == 5


def test_7z_header_past_max_header_bytes_is_a_limit() -> None:
    """Names drive a 7z header's size: 20,000 names of 6,000 characters in 117 KB took 870 MB (review 4). py7zr's
    own cap on a decoded header (256 MiB) is lowered to max-header-bytes."""
    data = make_7z([("n" * 200 + f"{i}", b"") for i in range(500)])
    before = py7zr.archiveinfo.MAX_HEADER_SIZE
    result = run(SevenZipScanner(), data, Limits(max_header_bytes=50_000))
    assert [o["limit"] for o in result.of("scan.limit")] == ["max-header-bytes"] and not result.children
    assert before == py7zr.archiveinfo.MAX_HEADER_SIZE
    assert len(run(SevenZipScanner(), data).children) == 500


def test_7z_encrypted_content_and_header() -> None:
    content = run(SevenZipScanner(), make_7z([("a.pkl", b"x")], password="pw"))
    assert content.of("archive.encrypted") == [{"reason": "encrypted content"}]
    header = run(SevenZipScanner(), make_7z([("a.pkl", b"x")], password="pw", header=True))
    assert header.of("archive.encrypted") == [{"reason": "encrypted header"}]
    assert content.children == header.children == {}


def test_7z_declared_size_is_charged_before_extraction() -> None:
    data = make_7z([("zeros", b"\x00" * 3_000_000)])
    with pytest.raises(BudgetExceeded):
        run(SevenZipScanner(), data, Limits(max_decompressed_bytes=1_000_000))


def test_7z_ratio_bomb_and_member_limit() -> None:
    data = make_7z([("zeros", b"\x00" * 3_000_000), ("small", b"ok")])
    bomb = run(SevenZipScanner(), data, Limits(ratio_floor_bytes=1_000_000, max_compression_ratio=50))
    assert bomb.of("archive.bomb")[0]["size"] == 3_000_002
    assert bomb.children["zeros"] == b"\x00" * 3_000_000
    large = run(SevenZipScanner(), data, Limits(max_member_bytes=1_000_000))
    assert large.of("archive.member_limit") == [{"member": "zeros", "size": 3_000_000, "limit": 1_000_000}]
    assert large.children == {"small": b"ok"}


def fix_7z_header(raw: bytearray) -> bytes:
    """Recompute the next-header and start-header CRCs after editing a plain (unencoded) header."""
    offset, size = struct.unpack_from("<QQ", raw, 12)
    struct.pack_into("<I", raw, 28, zlib.crc32(raw[32 + offset : 32 + offset + size]))
    struct.pack_into("<I", raw, 8, zlib.crc32(raw[12:32]))
    return bytes(raw)


def make_plain_header_7z(members: list[tuple[str, bytes]]) -> bytearray:
    buffer = io.BytesIO()
    with py7zr.SevenZipFile(buffer, "w") as archive:
        archive.set_encoded_header_mode(False)
        for name, content in members:
            archive.writestr(content, name)
    return bytearray(buffer.getvalue())


def test_7z_path_traversal_names() -> None:
    raw = make_plain_header_7z([("xx/evil.pkl", b"evil"), ("good.pkl", b"good")])
    name = "xx/evil.pkl".encode("utf-16-le")
    pos = raw.rindex(name)
    raw[pos : pos + len(name)] = "../evil.pkl".encode("utf-16-le")
    result = run(SevenZipScanner(), fix_7z_header(raw))
    assert result.of("archive.path_traversal") == [{"member": "../evil.pkl", "reason": "parent"}]
    assert {"member": "../evil.pkl", "reason": "py7zr refuses the name"} in result.of("archive.member_unreadable")
    assert result.children == {"good.pkl": b"good"}


def test_7z_symlink_escape(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b" / "model"
    folder.mkdir(parents=True)
    (tmp_path / "secret").write_bytes(b"s")
    (folder / "link").symlink_to("../../../secret")  # py7zr only stores links whose target exists
    (folder / "w.bin").write_bytes(b"w")
    buffer = io.BytesIO()
    with py7zr.SevenZipFile(buffer, "w") as archive:
        archive.writeall(folder, "model")
    result = run(SevenZipScanner(), buffer.getvalue())
    assert result.of("archive.link_escape") == [{"member": "model/link", "target": "../../../secret", "hard": False}]
    assert result.children["model/w.bin"] == b"w"


def test_7z_bad_crc_and_corrupt() -> None:
    raw = make_plain_header_7z([("a.pkl", b"\x80\x02N." * 50)])
    raw[40] ^= 0xFF  # inside the packed stream
    result = run(SevenZipScanner(), bytes(raw))
    assert {"archive.bad_crc", "archive.member_unreadable"} & set(result.kinds())
    truncated = run(SevenZipScanner(), make_7z([("a.pkl", b"x")])[:40])
    assert truncated.kinds() == ["archive.corrupt"]


# --- nothing hostile makes a scanner raise ----------------------------------------------------------


def _samples() -> dict[str, tuple[Any, bytes]]:
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(4)}, buffer)
    deflated = make_zip([("a.pkl", b"\x80\x02cos\nsystem\n." * 20), ("b/c.npy", b"\x93NUMPY" * 30)], 8)
    tar = make_tar([("archive/data.pkl", b"\x80\x02N." * 40, None), ("l", None, symlink_to("../x"))])
    seven = make_7z([("archive/data.pkl", b"\x80\x02N." * 40), ("archive/data/0", b"\x00" * 64)])
    return {
        "torch": (ZipScanner(), buffer.getvalue()),
        "deflate": (ZipScanner(), deflated),
        "tar": (TarScanner(), tar),
        "7z": (SevenZipScanner(), seven),
    }


SAMPLES = _samples()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.sampled_from(sorted(SAMPLES)),
    cut=st.floats(min_value=0.0, max_value=1.0),
    flips=st.lists(st.tuples(st.floats(min_value=0.0, max_value=0.999), st.integers(1, 255)), max_size=6),
)
def test_truncated_or_bit_flipped_archives_never_raise(which: str, cut: float, flips: list[tuple[float, int]]) -> None:
    scanner, original = SAMPLES[which]
    data = bytearray(original)
    for where, mask in flips:
        data[int(where * len(data))] ^= mask
    data = data[: max(1, int(cut * len(data)))] if cut < 0.97 else data
    with contextlib.suppress(BudgetExceeded):
        run(scanner, bytes(data), Limits(max_decompressed_bytes=50_000_000))


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_bzip2_and_lzma_members_are_decompressed_a_piece_at_a_time(tmp_path: Path, method: int) -> None:
    """zipfile gives these two decompressors no output cap: one read of a small member returned the whole
    member as one buffer (a 3 KB bzip2 member, 4 GiB). Members stream in bounded pieces now, and read right."""
    import tracemalloc

    from tests.helpers.scanning import scan

    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", method) as archive:
        archive.writestr("model.weights.h5", bytes(48 << 20))
        archive.writestr("payload.pkl", b"cos\nsystem\n(S'echo x'\ntR.")
    tracemalloc.start()
    report = scan(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 40 << 20, peak  # was about three times the member
    assert "WS-PKL-001" in {f.rule_id for f in report.findings}  # what follows is still read, and read right


@settings(max_examples=60, deadline=None)
@given(
    payload=st.binary(max_size=5000)
    | st.builds(lambda n, b: b * n, st.integers(0, 300_000), st.binary(min_size=1, max_size=3)),
    method=st.sampled_from([zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]),
    piece=st.integers(1, 70_000),
)
def test_capped_members_read_what_zipfile_reads(payload: bytes, method: int, piece: int) -> None:
    """Differential: the bounded bzip2/LZMA reader gives the bytes zipfile gives, in any read sizes."""
    from wscan.scanners.archive import _CappedZipExtFile

    blob = io.BytesIO()
    with zipfile.ZipFile(blob, "w", method) as archive:
        archive.writestr("m.bin", payload)
    with zipfile.ZipFile(blob) as archive:
        info = archive.infolist()[0]
        expected = archive.read(info)
        blob.seek(info.header_offset)
        header = blob.read(30)
        name_length, extra_length = int.from_bytes(header[26:28], "little"), int.from_bytes(header[28:30], "little")
        start = info.header_offset + 30 + name_length + extra_length
    blob.seek(start)
    member = _CappedZipExtFile(blob, "r", info, None, True)
    got = b"".join(iter(lambda: member.read(piece), b""))
    assert got == expected == payload


def test_an_lzma_member_that_ends_inside_its_header_ends(tmp_path: Path) -> None:
    """Its decompressor is never created; the stream must still reach its end (it looped for ever), as zipfile's
    own reader does."""
    from wscan.scanners.archive import _CappedZipExtFile

    blob = io.BytesIO()
    with zipfile.ZipFile(blob, "w", zipfile.ZIP_LZMA) as archive:
        archive.writestr("m.bin", b"hello" * 100)
    with zipfile.ZipFile(blob) as archive:
        info = archive.infolist()[0]
    data = bytearray(blob.getvalue())
    info.compress_size = 3  # the member says it holds 3 compressed bytes: less than the LZMA header
    blob.seek(info.header_offset + 30 + len(info.filename))
    assert _CappedZipExtFile(blob, "r", info, None, True).read() == b""
    path = tmp_path / "cut.zip"
    data[info.header_offset + 18 : info.header_offset + 22] = (3).to_bytes(4, "little")  # local header too
    path.write_bytes(bytes(data))
    from tests.helpers.scanning import scan

    assert scan(path).files[0].status in ("scanned", "failed")  # answered, not hung
