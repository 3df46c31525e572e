"""Loader differential for the containers a pickle hides in: compressed streams, .npz members and torch's tar
format. Whatever the real loader would run, wscan must have inspected.

Every case was proved by a review (a loader made the marker folder, wscan passed the file):
- an lzma-alone stream followed by an xz stream, or the reverse: joblib and lzma.open read each concatenated
  stream in whichever format it is (FORMAT_AUTO); wscan's reader, fixed to one format, took the second for
  trailing garbage;
- a zlib stream whose first 64 KiB are empty stored blocks: joblib inflates anything starting with 0x78; wscan
  wanted output within the head before calling it zlib;
- an .npz member named like a folder (`weights/`) that holds data: np.load opens it by that name;
- torch's tar format with `storages` alone, `storages` a hard link, or `pickle` a symlink: torch reads
  `storages` by name first, whatever else is there (wscan wanted all three as regular members);
- a tar header whose checksum is spelled as tarfile reads it (base-256, octal cut at a NUL);
- zstd and LZ4 frames behind a skippable frame, which both libraries' readers step over.
"""

from __future__ import annotations

import io
import lzma
import pickle
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.sandbox import Case, Outcome, write_and_load
from tests.helpers.scanning import rule_ids, scan
from tests.test_loader_differential import CRITICAL_PICKLE


def payload(marker: Path) -> bytes:
    """A protocol-2 pickle calling os.mkdir(marker)."""
    name = str(marker).encode()
    return b"\x80\x02cos\nmkdir\nX" + struct.pack("<I", len(name)) + name + b"\x85R."


def lzma_mixed(first: int, second: int) -> Callable[[Path], bytes]:
    def make(marker: Path) -> bytes:
        return lzma.compress(b"", format=first) + lzma.compress(payload(marker), format=second)

    return make


def zlib_after_empty_blocks(marker: Path) -> bytes:
    data = payload(marker)
    deflate = zlib.compressobj(wbits=-15)
    body = deflate.compress(data) + deflate.flush()
    return b"\x78\x9c" + b"\x00\x00\x00\xff\xff" * 13_200 + body + struct.pack(">I", zlib.adler32(data))


def npz_folder_member(stored: bool) -> Callable[[Path], bytes]:
    def make(marker: Path) -> bytes:
        header = "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
        header += " " * (-(10 + len(header) + 1) % 64) + "\n"
        npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload(marker)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(zipfile.ZipInfo("weights/" if not stored else "x.npy/"), npy)
        return buffer.getvalue()

    return make


def storages_record(marker: Path) -> bytes:
    """torch's `storages` member: a count, one (key, location, type) pickle, an int64 size, the floats, then the
    storage views pickle (here the payload)."""
    return (
        pickle.dumps(1, protocol=2)
        + b"\x80\x02X\x01\x00\x00\x000X\x03\x00\x00\x00cpuctorch\nFloatStorage\n\x87."
        + struct.pack("<q", 2)
        + bytes(range(1, 9))
        + payload(marker)
    )


Entry = tuple[str, str, bytes | str]  # name, "reg" / "hard" / "sym", data or link target


def torch_tar(entries: Callable[[bytes], list[Entry]]) -> Callable[[Path], bytes]:
    def make(marker: Path) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name, kind, data in entries(storages_record(marker)):
                info = tarfile.TarInfo(name)
                if kind == "reg":
                    assert isinstance(data, bytes)
                    info.size = len(data)
                    archive.addfile(info, io.BytesIO(data))
                else:
                    assert isinstance(data, str)
                    info.type = tarfile.LNKTYPE if kind == "hard" else tarfile.SYMTYPE
                    info.linkname = data
                    archive.addfile(info)
        return buffer.getvalue()

    return make


ZERO = pickle.dumps(0, protocol=2)


def storages_hard_link(storages: bytes) -> list[Entry]:
    return [("blob", "reg", storages), ("storages", "hard", "blob"), ("tensors", "reg", ZERO), ("pickle", "reg", ZERO)]


def storages_hard_link_chain(storages: bytes) -> list[Entry]:
    """tarfile's extract follows a chain of hard links: storages -> mid -> blob."""
    return [("blob", "reg", storages), ("mid", "hard", "blob"), ("storages", "hard", "mid"), ("tensors", "reg", ZERO),
            ("pickle", "reg", ZERO)]  # fmt: skip


def tensors_hard_link_chain(marker: Path) -> bytes:
    """A harmless storages record, then `tensors` (through two hard links): a count, one tensor's pickle, its ndim,
    sizes, strides and offset, then the payload where torch reads the next pickle."""
    storage_args = b"\x80\x02X\x01\x00\x00\x000X\x03\x00\x00\x00cpuctorch\nFloatStorage\n\x87."
    views = pickle.dumps([], protocol=2)
    storages = pickle.dumps(1, protocol=2) + storage_args + struct.pack("<q", 2) + bytes(8) + views
    tensors = (pickle.dumps(2, protocol=2) + pickle.dumps(("t", "0", None), protocol=2) + struct.pack("<i", 1)
               + bytes(4) + struct.pack("<3q", 2, 1, 0) + payload(marker))  # fmt: skip
    entries: list[Entry] = [("storages", "reg", storages), ("blob", "reg", tensors), ("mid", "hard", "blob"),
                            ("tensors", "hard", "mid"), ("pickle", "reg", ZERO)]  # fmt: skip
    return torch_tar(lambda _: entries)(marker)


def storages_read_as_tensors(marker: Path) -> bytes:
    """A storages record whose bytes, read again with the tensors layout, reach the payload (helper 249). Read as
    storages: two ComplexDoubleStorage records, 72 and e2 elements, the payload inside the second's raw bytes.
    Read as tensors: the count 2, the same first pickle, 72 taken as ndim (then sizes and strides), a storage
    offset of 0x47 ('G' and seven zeros); the next pickle opens with `C` and a 48-byte string, which swallows what
    the storages reading takes for the second record's pickle and size, and stops at the raw bytes: the payload."""

    def text(value: str) -> bytes:
        return b"\x8c" + bytes([len(value)]) + value.encode()

    record = b"(" + text("cpu") + text("cpu") + b"ctorch\nComplexDoubleStorage\nt."
    code = payload(marker)
    elements = -(-len(code) // 16)
    second = b"(" + text("k2") + text("cpu") + b"ctorch\nComplexDoubleStorage\nt." + struct.pack("<q", elements)
    assert len(second) == 48
    return (pickle.dumps(2, protocol=2) + record + struct.pack("<q", 72) + struct.pack("<144q", *[1] * 144)
            + b"G" + bytes(7) + b"C0" + second + code.ljust(16 * elements, b"\x00")
            + pickle.dumps([], protocol=2))  # fmt: skip


def tensors_linked_before_storages(kind: str) -> Callable[[Path], bytes]:
    """`tensors` a link to `storages`, standing before it: torch extracts storages first, then links tensors to
    that file on disk and reads it with the tensors layout (tarfile's lookup in the archive finds nothing before)."""

    def make(marker: Path) -> bytes:
        entries: list[Entry] = [("tensors", kind, "storages"), ("storages", "reg", storages_read_as_tensors(marker)),
                                ("pickle", "reg", ZERO)]  # fmt: skip
        return torch_tar(lambda _: entries)(marker)

    return make


def storages_through_links(count: int) -> Callable[[bytes], list[Entry]]:
    """storages -> link count-1 -> ... -> link 0 -> blob: tarfile follows as many as Python's recursion allows."""

    def entries(storages: bytes) -> list[Entry]:
        chain: list[Entry] = [("blob", "reg", storages)]
        chain += [(f"link{i}", "hard", f"link{i - 1}" if i else "blob") for i in range(count)]
        return [*chain, ("storages", "hard", f"link{count - 1}"), ("tensors", "reg", ZERO), ("pickle", "reg", ZERO)]

    return entries


def lzma_alone_properties(lc: int, lp: int, pb: int) -> Callable[[Path], bytes]:
    """An .lzma stream whose properties byte is not the usual 0x5d: lzma.open reads any liblzma accepts."""

    def make(marker: Path) -> bytes:
        lzma1 = {"id": lzma.FILTER_LZMA1, "lc": lc, "lp": lp, "pb": pb, "dict_size": 1 << 16}
        return lzma.compress(payload(marker), format=lzma.FORMAT_ALONE, filters=[lzma1])

    return make


def pickle_symlink(storages: bytes) -> list[Entry]:
    return [("storages", "reg", storages), ("tensors", "reg", ZERO), ("p2", "reg", ZERO), ("pickle", "sym", "p2")]


def v7_tar_checksum(style: str) -> Callable[[Path], bytes]:
    """One member `storages` in a v7 header (no ustar magic) whose checksum is spelled as `style`."""

    def make(marker: Path) -> bytes:
        data = payload(marker)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
            info = tarfile.TarInfo("storages")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        raw = bytearray(buffer.getvalue())
        raw[257:265] = bytes(8)
        raw[148:156] = b" " * 8
        total = sum(raw[:512])
        field = b"\x80" + total.to_bytes(7, "big") if style == "base256" else (b"%o\0" % total).ljust(8, b"Z")
        raw[148:156] = field
        return bytes(raw)

    return make


def skippable(codec: str, frames: int = 1, size: int = 4) -> Callable[[Path], bytes]:
    """`frames` skippable frames of `size` bytes each, then a zstd or LZ4 frame of the payload."""

    def make(marker: Path) -> bytes:
        lead = (struct.pack("<II", 0x184D2A50, size) + bytes(size)) * frames
        if codec == "zstd":
            from backports import zstd

            return lead + bytes(zstd.compress(payload(marker)))
        import lz4.frame

        return lead + bytes(lz4.frame.compress(payload(marker)))

    return make


CASES: dict[str, Case] = {
    "lzma-alone-then-xz": Case("joblib", lzma_mixed(lzma.FORMAT_ALONE, lzma.FORMAT_XZ), ".pkl"),
    "xz-then-lzma-alone": Case("joblib", lzma_mixed(lzma.FORMAT_XZ, lzma.FORMAT_ALONE), ".pkl"),
    "lzma-open-mixed": Case("lzma.open", lzma_mixed(lzma.FORMAT_ALONE, lzma.FORMAT_XZ), ".pkl.xz"),
    "zlib-empty-stored-blocks": Case("joblib", zlib_after_empty_blocks, ".pkl"),
    "npz-folder-member-deflated": Case("np.load", npz_folder_member(stored=False), ".npz"),
    "npz-folder-member-stored": Case("np.load", npz_folder_member(stored=True), ".npz"),
    "torch-tar-storages-only": Case("torch.load", torch_tar(lambda s: [("storages", "reg", s)]), ".pt"),
    "torch-tar-storages-hard-link": Case("torch.load", torch_tar(storages_hard_link), ".pt"),
    "torch-tar-pickle-symlink": Case("torch.load", torch_tar(pickle_symlink), ".pt"),
    "tar-checksum-base256": Case("torch.load", v7_tar_checksum("base256"), ".pt"),
    "tar-checksum-nul-then-junk": Case("torch.load", v7_tar_checksum("nul"), ".pt"),
    "zstd-after-skippable-frame": Case("zstd.open", skippable("zstd"), ".pkl.zst"),
    "lz4-after-skippable-frame": Case("lz4.frame.open", skippable("lz4"), ".pkl.lz4"),
    # Found by a review of the fixes above: a cap of 64 frames, a frame running past the head (wscan guessed
    # zstd), chains of hard links, .lzma headers with other properties.
    "zstd-after-65-skippable-frames": Case("zstd.open", skippable("zstd", frames=65), ".pkl.zst"),
    "lz4-after-65-skippable-frames": Case("lz4.frame.open", skippable("lz4", frames=65), ".pkl.lz4"),
    "lz4-after-a-70k-skippable-frame": Case("lz4.frame.open", skippable("lz4", size=70_000), ".pkl.lz4"),
    "torch-tar-storages-hard-link-chain": Case("torch.load", torch_tar(storages_hard_link_chain), ".pt"),
    "torch-tar-tensors-hard-link-chain": Case("torch.load", tensors_hard_link_chain, ".pt"),
    # Helper 249: a link to storages standing before it; a chain of 64 links and more, where wscan stopped.
    "torch-tar-tensors-hard-link-before-storages": Case("torch.load", tensors_linked_before_storages("hard"), ".pt"),
    "torch-tar-tensors-symlink-before-storages": Case("torch.load", tensors_linked_before_storages("sym"), ".pt"),
    "torch-tar-storages-through-300-links": Case("torch.load", torch_tar(storages_through_links(300)), ".pt"),
    "lzma-alone-properties-00": Case("lzma.open", lzma_alone_properties(0, 0, 0), ".pkl.lzma"),
    "lzma-alone-properties-lc1-lp3-pb4": Case("lzma.open", lzma_alone_properties(1, 3, 4), ".pkl.lzma"),
}

LOAD = """
import pickle
def load(path, loader):
    if loader == "joblib":
        import joblib
        joblib.load(path)
    elif loader == "lzma.open":
        import lzma
        pickle.load(lzma.open(path))
    elif loader == "np.load":
        import numpy as np
        loaded = np.load(path, allow_pickle=True)
        for name in loaded.files:
            loaded[name]
    elif loader == "torch.load":
        import torch
        torch.load(path, weights_only=False)
    elif loader == "zstd.open":
        from backports import zstd
        pickle.load(zstd.open(path))
    else:
        import lz4.frame
        pickle.load(lz4.frame.open(path))
"""


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Outcome]]:
    """Every case written to a file and loaded by the real library, each with its own marker."""
    return write_and_load(LOAD, CASES, tmp_path_factory.mktemp("containers"), 300)


def test_every_case_runs_its_payload_in_the_real_loader(loaded: dict[str, tuple[Path, Outcome]]) -> None:
    """Each case is a real bypass shape: the loader ran the payload (a tripwire for loader upgrades)."""
    missed = {name: outcome.result for name, (_, outcome) in loaded.items() if not outcome.executed}
    assert missed == {}


@pytest.mark.parametrize("case", list(CASES))
def test_wscan_flags_what_the_loader_runs(loaded: dict[str, tuple[Path, Outcome]], case: str) -> None:
    path, outcome = loaded[case]
    ids = rule_ids(scan(path))
    if outcome.executed:
        assert ids & CRITICAL_PICKLE, (
            f"bypass: {CASES[case].loader} ran the payload of {case}; wscan said {sorted(ids)}"
        )


@pytest.mark.parametrize(
    "text",
    [b"x^2 + y^2 = z^2\n", b"x\x01 short", b"x\x9c" + b"\x00\x00\x00\xff\xff" * 10, b"\x50\x2a\x4d\x18 notes"],
)
def test_short_files_that_decode_to_nothing_are_not_claimed(tmp_path: Path, text: bytes) -> None:
    """A head that decodes to nothing counts as a stream only when it is the whole 64 KiB head: shorter ones hold
    nothing a loader could run, and text starting 'x^' must not become a corrupt-compression finding."""
    path = tmp_path / "notes.txt"
    path.write_bytes(text)
    report = scan(path)
    assert all(f.severity.label in ("info", "low") for f in report.findings), [f.rule_id for f in report.findings]


def test_ordinary_tar_and_lzma_files_stay_clean(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        data = b"hello\n"
        info = tarfile.TarInfo("docs/readme.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    (tmp_path / "docs.tar").write_bytes(buffer.getvalue())
    (tmp_path / "state.pkl.xz").write_bytes(lzma.compress(pickle.dumps({"a": [1, 2]})))
    (tmp_path / "state.pkl.lzma").write_bytes(lzma.compress(pickle.dumps({"a": [1, 2]}), format=lzma.FORMAT_ALONE))
    report = scan(tmp_path)
    assert report.findings == [] or all(f.severity.label in ("info", "low") for f in report.findings)
    assert {f.path for f in report.files if f.status == "scanned"} >= {
        str(tmp_path / "docs.tar"),
        str(tmp_path / "state.pkl.xz"),
        str(tmp_path / "state.pkl.lzma"),
    }


def test_tensor_bytes_that_start_like_a_skippable_frame_are_data(tmp_path: Path) -> None:
    """torch.save of a uint8 tensor whose first bytes are a skippable frame's magic: tensor storage is never sniffed
    for weak magics (the check ran before that rule, and guessed zstd past the head)."""
    import torch

    data = bytes([0x50, 0x2A, 0x4D, 0x18, 0, 0, 1, 0]) + bytes(70_000)
    path = tmp_path / "image.pt"
    torch.save({"image": torch.frombuffer(bytearray(data), dtype=torch.uint8)}, path)
    report = scan(path)
    assert not report.failed, [(f.rule_id, f.message) for f in report.findings]


def test_a_chain_longer_than_wscan_follows_is_an_unread_member(tmp_path: Path) -> None:
    """1,100 links: torch's extraction fails (RecursionError past about 500); wscan follows 1,000 and reports the
    member it could not reach as unread (high), never as nothing."""
    path = tmp_path / "chain.pt"
    path.write_bytes(torch_tar(storages_through_links(1100))(tmp_path / "unused"))
    found = {(f.rule_id, f.message.split(":", 1)[0]) for f in scan(path).findings}
    assert ("WS-ARC-017", "Member storages could not be read") in found


def test_many_links_into_one_chain_are_walked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each link's end is kept for every link of its chain: 3,000 `storages` links onto a chain of 900 take one
    step each past the first walk (without it, 2.7 million)."""
    from wscan.scanners import archive

    entries = storages_through_links(900)(ZERO)[:-3] + [("storages", "hard", "link899")] * 3000
    path = tmp_path / "links.pt"
    path.write_bytes(torch_tar(lambda _: entries)(tmp_path / "unused"))
    steps: list[int] = []
    real_bisect = archive.bisect.bisect_left

    def counted(found: list[int], limit: int) -> int:
        steps.append(limit)
        return real_bisect(found, limit)

    monkeypatch.setattr(archive.bisect, "bisect_left", counted)
    report = scan(path)
    assert 3000 < len(steps) < 5000 and report.files[0].status != "failed"


def test_many_links_in_a_torch_tar_are_resolved_without_tarfile_lookups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tarfile's own link lookup reads every remaining header and scans all members per link (40 s for 20,000
    links, and past the header limit); links are resolved against the members wscan already read."""

    def refuse(*_: object, **__: object) -> object:
        raise AssertionError("tarfile's whole-archive lookup was used")

    monkeypatch.setattr(tarfile.TarFile, "getmembers", refuse)
    entries: list[Entry] = [("blob", "reg", ZERO)]
    entries += [("storages", "hard", "blob") for _ in range(2000)]
    path = tmp_path / "links.pt"
    path.write_bytes(torch_tar(lambda _: entries)(tmp_path / "unused"))
    report = scan(path)
    assert report.files[0].status != "failed" or "scan.error" not in report.files[0].reason
    assert "WS-ARC-007" in rule_ids(report)  # duplicate names: torch reads the last
