"""Loader differential for PyTorch zips: whatever torch.load would run, wscan must have inspected.

Each case takes a real `torch.save` checkpoint, swaps data.pkl for a pickle that creates a marker folder
(os.mkdir, harmless) and damages the zip one way. The real loader runs in a sandboxed subprocess (fresh
interpreter, stripped environment, temporary cwd, timeout); if the marker appears, wscan must report a
critical pickle finding for the file, and if torch refuses the file wscan must still report something.
"""

from __future__ import annotations

import bz2
import json
import pickle
import struct
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import pytest
import torch

from tests.helpers.sandbox import Outcome, load_each
from tests.helpers.scanning import rule_ids, scan
from wscan.model import Severity

ARCHIVE = "archive"
CRITICAL_PICKLE = {"WS-PKL-001", "WS-PKL-002", "WS-PKL-004", "WS-PKL-005", "WS-PKL-006", "WS-PKL-012"}
LOAD_TIMEOUT = 120.0

# --- hostile payload and a hand-written zip writer ---------------------------------------------------------


def marker_pickle(marker: Path) -> bytes:
    """Protocol 2 pickle calling os.mkdir(marker): proof of execution that harms nothing."""
    path = str(marker).encode()
    return b"\x80\x02cos\nmkdir\nX" + struct.pack("<I", len(path)) + path + b"\x85R."


BENIGN_PICKLE = b"\x80\x02}q\x00."  # an empty dict


@cache
def saved_members() -> tuple[tuple[str, bytes], ...]:
    """The members of a real torch.save checkpoint, in the order torch wrote them."""
    import io

    buffer = io.BytesIO()
    torch.save({"w": torch.arange(4, dtype=torch.float32)}, buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as archive:
        return tuple((info.filename, archive.read(info)) for info in archive.infolist())


@dataclass(frozen=True)
class Entry:
    """One zip member, with every field a damage kind may falsify."""

    name: str
    data: bytes
    method: int = zipfile.ZIP_STORED
    flags: int = 0
    local_flags: int | None = None
    local_name: str | None = None
    crc_local: int | None = None
    crc_central: int | None = None
    descriptor: bool = False  # bit 3: zero CRC and sizes in the local header, real ones after the data
    zip64: bool = False  # sizes and offset moved to a zip64 extra field in the central directory
    in_central: bool = True


def _packed(entry: Entry) -> bytes:
    if entry.method == zipfile.ZIP_DEFLATED:
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
        return compressor.compress(entry.data) + compressor.flush()
    if entry.method == zipfile.ZIP_BZIP2:
        return bz2.compress(entry.data)
    return entry.data


def write_local(entry: Entry) -> bytes:
    """Local header, data and optional data descriptor."""
    packed = _packed(entry)
    crc = zlib.crc32(entry.data)
    name = (entry.local_name if entry.local_name is not None else entry.name).encode()
    flags = entry.flags if entry.local_flags is None else entry.local_flags
    local_crc = entry.crc_local if entry.crc_local is not None else crc
    sizes = (len(packed), len(entry.data))
    if entry.descriptor:
        flags |= 0x8
        local_crc, sizes = 0, (0, 0)
    header = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, flags, entry.method, 0, 0x21, local_crc, *sizes, len(name), 0)
    tail = struct.pack("<4s3I", b"PK\x07\x08", crc, len(packed), len(entry.data)) if entry.descriptor else b""
    return header + name + packed + tail


def write_central(entry: Entry, offset: int) -> bytes:
    """Central directory record for `entry`, whose local header is at `offset`."""
    packed = _packed(entry)
    crc = entry.crc_central if entry.crc_central is not None else zlib.crc32(entry.data)
    name = entry.name.encode()
    flags = entry.flags | (0x8 if entry.descriptor else 0)
    sizes_offset = (len(packed), len(entry.data), offset)
    extra = b""
    if entry.zip64:
        extra = struct.pack("<2H3Q", 1, 24, len(entry.data), len(packed), offset)
        sizes_offset = (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
    size, real_size, local_offset = sizes_offset
    return (
        struct.pack(
            "<4s6H3I5H2I",
            b"PK\x01\x02",
            45 if entry.zip64 else 20,
            20,
            flags,
            entry.method,
            0,
            0x21,
            crc,
            size,
            real_size,
            len(name),
            len(extra),
            0,
            0,
            0,
            0,
            local_offset,
        )
        + name
        + extra
    )


def eocd(count: int, cd_size: int, cd_offset: int, comment: bytes = b"") -> bytes:
    return struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, count, count, cd_size, cd_offset, len(comment)) + comment


def build_zip(
    entries: list[Entry], prefix: bytes = b"", adjust: bool = True, comment: bytes = b"", count_delta: int = 0
) -> bytes:
    """A zip of `entries` after `prefix`; `adjust` says whether offsets count the prefix, as zip -A does;
    `count_delta` falsifies the entry count in the end record (miniz trusts it, Python's zipfile does not)."""
    body = bytearray(prefix)
    base = 0 if adjust else len(prefix)
    central = bytearray()
    count = 0
    for entry in entries:
        offset = len(body) - base
        body += write_local(entry)
        if entry.in_central:
            central += write_central(entry, offset)
            count += 1
    cd_offset = len(body) - base
    return bytes(body + central + eocd(count + count_delta, len(central), cd_offset, comment))


def checkpoint_entries(pickle_bytes: bytes) -> list[Entry]:
    """The real checkpoint's members with data.pkl replaced."""
    return [Entry(name, pickle_bytes if name == f"{ARCHIVE}/data.pkl" else data) for name, data in saved_members()]


def with_pkl(entries: list[Entry], **changes: object) -> list[Entry]:
    """Apply field changes to the data.pkl entry only."""
    return [replace(e, **changes) if e.name == f"{ARCHIVE}/data.pkl" else e for e in entries]  # type: ignore[arg-type]


# --- the damage kinds ---------------------------------------------------------------------------------------


def _pkl_index(entries: list[Entry]) -> int:
    return next(i for i, e in enumerate(entries) if e.name == f"{ARCHIVE}/data.pkl")


def duplicate(hostile: bytes, hostile_first: bool) -> bytes:
    """Two data.pkl entries, one benign and one hostile, in the given order."""
    entries = checkpoint_entries(hostile)
    i = _pkl_index(entries)
    benign = replace(entries[i], data=BENIGN_PICKLE)
    pair = [entries[i], benign] if hostile_first else [benign, entries[i]]
    return build_zip(entries[:i] + pair + entries[i + 1 :])


def local_only_shadow(hostile: bytes, central_hostile: bool) -> bytes:
    """A second, unlisted local data.pkl header: the central directory points at one of the two."""
    entries = checkpoint_entries(hostile)
    i = _pkl_index(entries)
    benign = replace(entries[i], data=BENIGN_PICKLE)
    listed, shadow = (entries[i], benign) if central_hostile else (benign, entries[i])
    return build_zip([replace(shadow, in_central=False), *entries[:i], listed, *entries[i + 1 :]])


def two_central_directories(hostile: bytes) -> bytes:
    """Two central directories of equal size: the EOCD offset names the first (hostile data.pkl), while
    a reader that locates the directory from the EOCD position and adjusts offsets (Python's zipfile)
    reads the second (benign data.pkl)."""
    entries = checkpoint_entries(hostile)
    i = _pkl_index(entries)
    benign = replace(entries[i], data=BENIGN_PICKLE)
    pad = Entry(f"{ARCHIVE}/padding", b"\0" * 2048, in_central=False)
    body = bytearray()
    offsets: dict[int, int] = {}
    for key, entry in [(-1, entries[i]), (-3, pad), *enumerate(entries), (-2, benign)]:
        if key == i:
            continue
        offsets[key] = len(body)
        body += write_local(entry)
    cd_a = b"".join(write_central(e, offsets[-1] if k == i else offsets[k]) for k, e in enumerate(entries))
    concat = len(cd_a)
    cd_b = b"".join(write_central(e, (offsets[-2] if k == i else offsets[k]) - concat) for k, e in enumerate(entries))
    assert len(cd_a) == len(cd_b)
    return bytes(body + cd_a + cd_b + eocd(len(entries), len(cd_b), len(body)))


def crc_case(local: bool, central: bool) -> Callable[[bytes], bytes]:
    def make(hostile: bytes) -> bytes:
        bad = zlib.crc32(hostile) ^ 0xDEADBEEF
        changes: dict[str, object] = {}
        if local:
            changes["crc_local"] = bad
        if central:
            changes["crc_central"] = bad
        return build_zip(with_pkl(checkpoint_entries(hostile), **changes))

    return make


def pkl_case(**changes: object) -> Callable[[bytes], bytes]:
    return lambda hostile: build_zip(with_pkl(checkpoint_entries(hostile), **changes))


def prefix_case(prefix: bytes | None, adjust: bool) -> Callable[[bytes], bytes]:
    """Bytes before the zip; None means a benign pickle as the prefix (a pickle/zip polyglot)."""
    return lambda hostile: build_zip(checkpoint_entries(hostile), prefix or BENIGN_PICKLE, adjust)


def hostile_prefix(adjust: bool) -> Callable[[bytes], bytes]:
    """The payload pickle before a benign checkpoint: torch's legacy (non-zip) path unpickles the start."""
    return lambda hostile: build_zip(checkpoint_entries(BENIGN_PICKLE), hostile, adjust)


def comment_case(hostile: bytes) -> bytes:
    return build_zip(checkpoint_entries(hostile), comment=b"trailing comment " * 4)


def trailing_case(hostile: bytes) -> bytes:
    return build_zip(checkpoint_entries(hostile)) + b"\0" * 64


def renamed_case(name: str) -> Callable[[bytes], bytes]:
    """data.pkl stored under another spelling (miniz compares names case-insensitively)."""
    return lambda hostile: build_zip(
        [replace(e, name=name) if e.name == f"{ARCHIVE}/data.pkl" else e for e in checkpoint_entries(hostile)]
    )


def count_short_case(hostile: bytes) -> bytes:
    """The end record counts one entry less: a benign data.pkl listed last is invisible to miniz."""
    entries = checkpoint_entries(hostile)
    benign = replace(entries[_pkl_index(entries)], data=BENIGN_PICKLE)
    return build_zip([*entries, benign], count_delta=-1)


def case_variant_case(hostile: bytes) -> bytes:
    """A benign archive/data.pkl and a hostile archive/DATA.PKL: names differ for Python, not for miniz."""
    entries = checkpoint_entries(BENIGN_PICKLE)
    return build_zip([*entries, Entry(f"{ARCHIVE}/DATA.PKL", hostile)])


def other_member_case(hostile: bytes) -> bytes:
    """The payload in a member torch never unpickles: wscan may report it, torch must not run it."""
    entries = checkpoint_entries(BENIGN_PICKLE)
    return build_zip([*entries, Entry(f"{ARCHIVE}/extra.pkl", hostile)])


CASES: dict[str, Callable[[bytes], bytes]] = {
    "control": pkl_case(),
    "crc-local": crc_case(local=True, central=False),
    "crc-central": crc_case(local=False, central=True),
    "crc-both": crc_case(local=True, central=True),
    "name-mismatch-local": pkl_case(local_name=f"{ARCHIVE}/data.pkx"),
    "name-mismatch-local-empty": pkl_case(local_name=""),
    "flag-encrypted": pkl_case(flags=0x1),
    "flag-encrypted-local-only": pkl_case(local_flags=0x1),
    "flag-descriptor-without-descriptor": pkl_case(flags=0x8),
    "flag-odd-bits": pkl_case(flags=0x2010),
    "flag-odd-bits-local-only": pkl_case(local_flags=0x4000),
    "data-descriptor": pkl_case(descriptor=True),
    "data-descriptor-deflated": pkl_case(descriptor=True, method=zipfile.ZIP_DEFLATED),
    "deflated": pkl_case(method=zipfile.ZIP_DEFLATED),
    "zip64-extra": pkl_case(zip64=True),
    "duplicate-hostile-first": lambda h: duplicate(h, hostile_first=True),
    "duplicate-hostile-last": lambda h: duplicate(h, hostile_first=False),
    "prepended-junk-unadjusted": prefix_case(b"JUNK" * 16, adjust=False),
    "prepended-junk-adjusted": prefix_case(b"JUNK" * 16, adjust=True),
    "prepended-pickle-unadjusted": prefix_case(None, adjust=False),
    "prepended-local-header-adjusted": prefix_case(b"PK\x03\x04" + b"\0" * 60, adjust=True),
    "prepended-local-header-unadjusted": prefix_case(b"PK\x03\x04" + b"\0" * 60, adjust=False),
    "hostile-prefix-adjusted": hostile_prefix(adjust=True),
    "hostile-prefix-unadjusted": hostile_prefix(adjust=False),
    "comment": comment_case,
    "trailing-bytes": trailing_case,
    "shadow-local-header-central-hostile": lambda h: local_only_shadow(h, central_hostile=True),
    "shadow-local-header-central-benign": lambda h: local_only_shadow(h, central_hostile=False),
    "two-central-directories": two_central_directories,
    "case-insensitive-name": renamed_case(f"{ARCHIVE}/DATA.PKL"),
    "case-variant-duplicate": case_variant_case,
    "eocd-count-short": count_short_case,
    "method-bzip2": pkl_case(method=zipfile.ZIP_BZIP2),
    "method-unknown": pkl_case(method=99),
    "payload-in-other-member": other_member_case,
}

# --- the real loader, sandboxed -----------------------------------------------------------------------------

# Forks once per load from an interpreter that imported torch once, so 60 loads cost one torch import.
# Each job notes whether its marker exists right after the load; weights_only=True jobs run first.
TORCH_LOAD = "import torch\ndef load(path, weights_only):\n    torch.load(path, weights_only=weights_only)\n"


def run_torch(jobs: list[tuple[str, Path, bool, Path]], workdir: Path) -> dict[str, Outcome]:
    """torch.load each file (weights_only as the job says) in a sandboxed child: see tests/helpers/sandbox.py."""
    return load_each(TORCH_LOAD, jobs, workdir, LOAD_TIMEOUT)


@dataclass(frozen=True)
class Differential:
    files: dict[str, Path]
    unsafe: dict[str, Outcome]
    safe: dict[str, Outcome]


@pytest.fixture(scope="module")
def differential(tmp_path_factory: pytest.TempPathFactory) -> Differential:
    """Build every case and load it with weights_only True, then False, each case with its own marker."""
    root = tmp_path_factory.mktemp("loader")
    for folder in ("files", "markers", "cwd"):
        (root / folder).mkdir()
    files: dict[str, Path] = {}
    safe_jobs: list[tuple[str, Path, bool, Path]] = []
    unsafe_jobs: list[tuple[str, Path, bool, Path]] = []
    for name, make in CASES.items():
        marker = root / "markers" / name
        files[name] = root / "files" / f"{name}.pt"
        files[name].write_bytes(make(marker_pickle(marker)))
        safe_jobs.append((f"safe:{name}", files[name], True, marker))
        unsafe_jobs.append((f"unsafe:{name}", files[name], False, marker))
    outcomes = run_torch(safe_jobs + unsafe_jobs, root / "cwd")
    return Differential(
        files,
        unsafe={name: outcomes[f"unsafe:{name}"] for name in CASES},
        safe={name: outcomes[f"safe:{name}"] for name in CASES},
    )


# What torch 2.x does with each case (documentation and a tripwire: a change in the loader shows up here
# as a failed expectation, while the safety assertion itself never depends on this table).
EXPECTED_EXECUTES = {
    "control",
    "crc-local",
    "crc-central",
    "crc-both",
    "name-mismatch-local",
    "name-mismatch-local-empty",
    "flag-encrypted-local-only",
    "flag-descriptor-without-descriptor",
    "flag-odd-bits-local-only",
    "data-descriptor",
    "data-descriptor-deflated",
    "deflated",
    "zip64-extra",
    "duplicate-hostile-last",
    "prepended-local-header-adjusted",
    "hostile-prefix-adjusted",
    "hostile-prefix-unadjusted",
    "comment",
    "trailing-bytes",
    "shadow-local-header-central-hostile",
    "two-central-directories",
    "case-insensitive-name",
    "case-variant-duplicate",
    "eocd-count-short",
}


@pytest.mark.parametrize("case", list(CASES))
def test_wscan_inspects_what_torch_runs(differential: Differential, case: str) -> None:
    """The safety property: torch.load ran the payload => a critical pickle finding; torch refused the file =>
    a HIGH finding (fail closed); torch loaded it without running the payload => still not clean, since a
    payload sits in the file for other readers."""
    outcome = differential.unsafe[case]
    report = scan(differential.files[case])
    ids = rule_ids(report)
    worst = max((f.severity for f in report.findings), default=Severity.INFO)
    if outcome.executed:
        assert ids & CRITICAL_PICKLE, f"bypass: torch ran the payload of {case}, wscan reported {sorted(ids)}"
    elif not outcome.loaded:
        assert worst >= Severity.HIGH, f"{case}: torch refused it ({outcome.result}), wscan says {sorted(ids)}"
    else:
        assert worst >= Severity.MEDIUM, f"{case}: the file hides a payload, wscan says {sorted(ids)}"


@pytest.mark.parametrize("case", list(CASES))
def test_weights_only_never_runs_payload(differential: Differential, case: str) -> None:
    """weights_only=True never runs os.mkdir, and refuses every file whose payload the full unpickler ran."""
    outcome = differential.safe[case]
    assert not outcome.executed
    if differential.unsafe[case].executed:
        assert not outcome.loaded, outcome.result


def test_torch_behaviour_matches_expectations(differential: Differential) -> None:
    """Which damage kinds torch tolerates: a loader upgrade that changes this should be looked at."""
    executed = {name for name, outcome in differential.unsafe.items() if outcome.executed}
    summary = {name: differential.unsafe[name].result for name in CASES}
    assert executed == EXPECTED_EXECUTES, json.dumps(summary, indent=1)


# --- legacy (non-zip) torch.save: persistent ids that stand for classes --------------------------------------


def _legacy_header() -> bytes:
    """The three pickles torch's legacy loader reads before the object: magic number, protocol, system info."""
    import pickle

    info = {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}
    return b"".join(pickle.dumps(value, protocol=2) for value in (0x1950A86A20F9469CFC6C, 1001, info))


def test_legacy_module_persistent_id_is_the_class_torch_calls(tmp_path: Path) -> None:
    """Legacy torch.load returns `cls` for a persistent id ('module', cls, file, source): a pickle calling that
    id calls `cls`. Proved with the real loader and a marker, then wscan must name the callable, critical."""
    marker = tmp_path / "marker"
    path = str(marker).encode()
    pid = b"(X\x06\x00\x00\x00modulecos\nmkdir\nX\x00\x00\x00\x00X\x00\x00\x00\x00tQ"
    main = b"\x80\x02" + pid + b"X" + struct.pack("<I", len(path)) + path + b"\x85R."
    checkpoint = tmp_path / "legacy.pt"
    checkpoint.write_bytes(_legacy_header() + main)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    outcome = run_torch([("unsafe", checkpoint, False, marker)], workdir)["unsafe"]
    assert outcome.executed, outcome.result
    report = scan(checkpoint)
    critical = {f.message for f in report.findings if f.severity >= Severity.CRITICAL}
    assert any("os.mkdir" in message for message in critical), critical


def test_legacy_whole_model_save_is_judged_like_the_zip_one(tmp_path: Path) -> None:
    """torch.save of a whole module refers to each nn.Module class through such an id in the legacy format and
    through GLOBAL in the zip format: wscan judges the same classes the same way in both. torch.nn's own layers
    pass; a class of the program's own is high (not on the allowlist)."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), _ProgramLayer())
    legacy, current = tmp_path / "legacy.pt", tmp_path / "current.pt"
    torch.save(model, legacy, _use_new_zipfile_serialization=False)
    torch.save(model, current)
    judged = []
    for path in (legacy, current):
        findings = scan(path).findings
        assert max(f.severity for f in findings) == Severity.HIGH, [f.message for f in findings]
        judged.append({(f.rule_id, f.message.split(" (")[0]) for f in findings})
    assert judged[0] == judged[1]
    assert judged[0] == {
        ("WS-PKL-003", f"Loading imports {__name__}._ProgramLayer, which is not on the allowlist")
    }


class _ProgramLayer(torch.nn.Module):
    """A layer class of the saving program's own, which a whole-model save names."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


# --- torch.save's tar format (before 0.4), which torch.load still reads ------------------------------------------


def _tar_checkpoint(storages: bytes, tensors: bytes, main: bytes) -> bytes:
    import io
    import tarfile

    info = pickle.dumps({"protocol_version": 1001, "little_endian": True, "type_sizes": {}}, protocol=2)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (("sys_info", info), ("storages", storages), ("tensors", tensors), ("pickle", main)):
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def _tar_cases(hostile: bytes) -> dict[str, bytes]:
    """The payload in each pickle torch's tar reader loads, behind the raw records it steps over."""

    def dump(value: object) -> bytes:
        return pickle.dumps(value, protocol=2)

    storage = dump(("0", "cpu", torch.FloatStorage)) + struct.pack("<q", 4) + b"\0" * 16
    tensor = dump(("t0", "0", torch.FloatTensor)) + struct.pack("<i", 1) + b"\0" * 4 + struct.pack("<3q", 4, 1, 0)
    storages, tensors, main = dump(1) + storage + dump([]), dump(1) + tensor, dump({"w": "ok"})
    return {
        "tar-pickle": _tar_checkpoint(storages, tensors, hostile),
        "tar-storage-views": _tar_checkpoint(dump(1) + storage + hostile, tensors, main),
        "tar-storage-record": _tar_checkpoint(dump(2) + storage + hostile, tensors, main),
        "tar-tensor-record": _tar_checkpoint(storages, dump(2) + tensor + hostile, main),
    }


def test_tar_checkpoints_torch_runs_are_flagged(tmp_path: Path) -> None:
    """Every pickle of the tar format is found behind the storage and tensor records (a bypass hunt found the
    storage views pickle hidden behind one storage's raw bytes)."""
    _torch_runs_and_wscan_flags(tmp_path, list(_tar_cases(b"")), lambda name, hostile: _tar_cases(hostile)[name])
    benign = tmp_path / "benign.pt"
    benign.write_bytes(_tar_cases(pickle.dumps({"weights": [1.0, 2.0]}, protocol=2))["tar-pickle"])
    assert not {f.rule_id for f in scan(benign).findings if f.severity >= Severity.HIGH}


# --- zip64: miniz follows the zip64 locator wherever it points; Python's zipfile reads the record before it ------


def _z_local(name: str, data: bytes) -> bytes:
    n = name.encode()
    return (
        struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0x21, zlib.crc32(data), len(data), len(data), len(n), 0)
        + n
        + data
    )


def _z_central(name: str, data: bytes, offset: int) -> bytes:
    n = name.encode()
    return struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 45, 45, 0, 0, 0, 0x21, zlib.crc32(data), len(data), len(data),
                       len(n), 0, 0, 0, 0, 0, offset) + n  # fmt: skip


def _z64_end(count: int, size: int, offset: int, extensible: bytes = b"") -> bytes:
    return (
        struct.pack("<4sQ2H2I4Q", b"PK\x06\x06", 44 + len(extensible), 45, 45, 0, 0, count, count, size, offset)
        + extensible
    )


def _z64_locator(offset: int) -> bytes:
    return struct.pack("<4sIQI", b"PK\x06\x07", 0, offset, 1)


def _end(count: int, size: int, offset: int) -> bytes:
    return struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, count, count, size, offset, 0)


_END_FFFF = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)


def _zip64_case(layout: str) -> Callable[[bytes], bytes]:
    """A checkpoint with a hostile central directory A that miniz reads and a benign one B that zipfile reads."""

    def make(hostile: bytes) -> bytes:
        members = [(name, hostile if name.endswith("/data.pkl") else data) for name, data in saved_members()]
        if layout == "one-directory-two-shifts":
            return _one_directory_two_shifts(members, hostile)
        body = bytearray()
        offsets = []
        for name, data in members:
            offsets.append(len(body))
            body += _z_local(name, data)
            if len(offsets) == 1:  # room to shift offsets back by a directory's size
                body += _z_local("archive/padding", bytes(4096))
        benign_at = len(body)
        body += _z_local(members[0][0], BENIGN_PICKLE)
        assert members[0][0].endswith("/data.pkl")
        cd_a = b"".join(_z_central(n, d, o) for (n, d), o in zip(members, offsets, strict=True))
        count = len(members)

        def cd_b(shift: int = 0) -> bytes:
            entries = [
                (members[0][0], BENIGN_PICKLE, benign_at),
                *[(n, d, o) for (n, d), o in zip(members[1:], offsets[1:], strict=True)],
            ]
            return b"".join(_z_central(n, d, o - shift) for n, d, o in entries)

        a_at = len(body)
        body += cd_a
        if layout in ("locator-names-other-record", "locator-names-other-record-plain-end"):
            record_a = len(body)
            body += _z64_end(count, len(cd_a), a_at)
            b = cd_b()
            b_at = len(body)
            body += b + _z64_end(count, len(b), b_at) + _z64_locator(record_a)
            body += _END_FFFF if layout == "locator-names-other-record" else _end(count, len(b), b_at)
        elif layout in ("shifted-directory", "shifted-directory-ffff"):
            b = cd_b(shift=len(cd_a))  # zipfile shifts offsets by the distance to the directory it finds
            b_at = len(body)
            body += b
            record = len(body)
            body += _z64_end(count, len(cd_a), a_at) + _z64_locator(record)
            body += _END_FFFF if layout == "shifted-directory-ffff" else _end(count, len(b), b_at)
        elif layout == "directory-in-extensible-data":
            record = len(body)
            b = cd_b()
            inner = b + _z64_end(count, len(b), record + 56)
            body += _z64_end(count, len(cd_a), a_at, extensible=inner) + _z64_locator(record) + _END_FFFF
        elif layout == "data-pkl-only-in-miniz-view":
            record_a = len(body)
            body += _z64_end(count, len(cd_a), a_at)
            b = b"".join(_z_central(n, d, o) for (n, d), o in zip(members[1:], offsets[1:], strict=True))
            b_at = len(body)
            body += b + _z64_end(count - 1, len(b), b_at) + _z64_locator(record_a) + _END_FFFF
        return bytes(body)

    return make


def _one_directory_two_shifts(members: list[tuple[str, bytes]], hostile: bytes) -> bytes:
    """One central directory that both readers take, but zipfile's record (right before the locator) states it
    `shift` bytes earlier than miniz's (the one the locator names): zipfile moves every member by `shift`, onto a
    benign twin, and miniz reads the members as recorded (review 4; both directories start at the same byte)."""
    body, offsets = bytearray(), []
    for name, data in members:
        offsets.append(len(body))
        body += _z_local(name, data)
    shift = len(body) + 64
    body += bytes(shift - len(body))
    pad = len(hostile) - 8  # PROTO 2, BINUNICODE and its length, the padding, STOP: as long as the payload
    twin = b"\x80\x02X" + pad.to_bytes(4, "little") + b"x" * pad + b"."
    for name, data in members:
        body += _z_local(name, twin if name.endswith("/data.pkl") else data)
    directory = b"".join(_z_central(n, d, o) for (n, d), o in zip(members, offsets, strict=True))
    record, count = len(body), len(members)
    at = record + 56
    body += _z64_end(count, len(directory), at) + directory + _z64_end(count, len(directory), at - shift)
    return bytes(body + _z64_locator(record) + _END_FFFF)


ZIP64_LAYOUTS = [
    "locator-names-other-record", "locator-names-other-record-plain-end", "shifted-directory", "shifted-directory-ffff",
    "directory-in-extensible-data", "data-pkl-only-in-miniz-view", "one-directory-two-shifts",
]  # fmt: skip


def test_zip64_directories_miniz_reads_are_scanned(tmp_path: Path) -> None:
    """miniz takes the zip64 record the locator names, wherever it is, and its values over the classic record's;
    zipfile reads the record right before the locator, or the classic one. Whatever torch runs is critical (a
    review found wscan scanned only zipfile's view of these)."""
    _torch_runs_and_wscan_flags(tmp_path, ZIP64_LAYOUTS, lambda layout, hostile: _zip64_case(layout)(hostile))


def _torch_runs_and_wscan_flags(tmp_path: Path, names: list[str], build: Callable[[str, bytes], bytes]) -> None:
    """Each named file, built around a payload making its own marker: torch.load (weights_only off) runs every
    one, and wscan calls every one critical."""
    files, jobs = {}, []
    for name in names:
        marker = tmp_path / f"marker-{name}"
        files[name] = tmp_path / f"{name}.pt"
        files[name].write_bytes(build(name, marker_pickle(marker)))
        jobs.append((name, files[name], False, marker))
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    outcomes = run_torch(jobs, workdir)
    assert all(outcome.executed for outcome in outcomes.values()), outcomes
    for name, path in files.items():
        assert rule_ids(scan(path)) & CRITICAL_PICKLE, name


# --- torch.distributed.checkpoint: a .distcp file is torch.save after torch.save ---------------------------------

_DCP = """
import os, sys, warnings
import torch
import torch.distributed.checkpoint as dcp

warnings.simplefilter("ignore")  # saving without a process group warns


class Payload:
    def __reduce__(self):
        return (os.mkdir, (sys.argv[3],))


folder, action = sys.argv[1], sys.argv[2]
item = Payload() if sys.argv[3] else "benign"
if action == "save":
    dcp.save({"a": item, "b": {"x": 1}, "c": "text", "t": torch.zeros(3)}, checkpoint_id=folder)
else:
    dcp.load({"a": None, "b": {"x": None}, "c": None, "t": torch.empty(3)}, checkpoint_id=folder)
"""


def _dcp(folder: Path, action: str, marker: Path | None) -> None:
    subprocess.run(
        [sys.executable, "-c", _DCP, str(folder), action, str(marker or "")],
        cwd=folder.parent, check=True, capture_output=True, timeout=300,
    )  # fmt: skip


def test_distributed_checkpoint_items_are_scanned(tmp_path: Path) -> None:
    """dcp.load unpickles each non-tensor item of a .distcp with torch.load(weights_only=False), reading it from
    the offset the metadata records; zip readers see only the file's last zip. A payload in the first item ran
    while wscan saw nothing; now every item is scanned, and a real checkpoint has no finding at all."""
    marker = tmp_path / "marker"
    hostile, benign = tmp_path / "hostile", tmp_path / "benign"
    _dcp(hostile, "save", marker)
    _dcp(benign, "save", None)
    assert not marker.exists()
    _dcp(hostile, "load", None)
    assert marker.exists(), "dcp.load did not run the payload"
    report = scan(hostile)
    critical = [f for f in report.findings if f.rule_id in CRITICAL_PICKLE]
    # found twice: walking the .distcp, and at the offset .metadata names
    assert {f.location.path.rsplit("/", 1)[-1] for f in critical} == {"__0_0.distcp", ".metadata"}, critical
    assert scan(benign).findings == []


# --- torch.package: PackageImporter resolves a pickle's names to the archive's own modules first ----------------


def test_torch_package_records_are_not_pickles(tmp_path: Path) -> None:
    """A package of tensors: its storages (raw bytes that may open like a pickle: 0x80 0x17) and its
    extern_modules list ("collections\\n...", a protocol-0 GLOBAL to a pickle reader) were a failed scan and a
    high finding. They are what PackageImporter reads them as, raw bytes and text."""
    from torch.package import PackageExporter

    tensor = torch.frombuffer(bytearray(b"\x80\x17" + bytes(range(30))), dtype=torch.uint8)
    path = tmp_path / "package.pt"
    with PackageExporter(str(path)) as exporter:
        exporter.extern(["collections", "torch.**"])
        exporter.save_pickle("res", "state.pkl", {"t": tensor, "order": __import__("collections").OrderedDict(a=1)})
    assert scan(path).findings == []


def test_torch_package_modules_run_even_behind_allowed_names(tmp_path: Path) -> None:
    """The archive's collections.py shadows the standard module: a pickle naming collections.OrderedDict (on the
    allowlist) runs it when PackageImporter loads the pickle (proved with a marker). Every module in a package
    is high (WS-ARC-020)."""
    from torch.package import PackageExporter

    marker = tmp_path / "marker"
    plain = tmp_path / "plain.pt"
    with PackageExporter(str(plain)) as exporter:
        exporter.extern(["collections"])
        exporter.save_pickle("model", "model.pkl", __import__("collections").OrderedDict(a=1))
    shadowing = tmp_path / "shadowing.pt"
    source = zipfile.ZipFile(plain)
    with zipfile.ZipFile(shadowing, "w") as out:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename.endswith("/.data/extern_modules"):
                data = b"os\n"  # what the shadowing module imports from outside
            out.writestr(info, data)
        top = source.namelist()[0].split("/")[0]
        out.writestr(f"{top}/collections.py", f"import os\nos.mkdir({str(marker)!r})\nOrderedDict = dict\n")
    load = "import sys, torch.package as p; p.PackageImporter(sys.argv[1]).load_pickle('model', 'model.pkl')"
    ran = subprocess.run([sys.executable, "-c", load, str(shadowing)], capture_output=True, text=True, timeout=300)
    assert marker.is_dir(), ran.stderr[-2000:]
    found = scan(shadowing).findings
    assert [f.rule_id for f in found if f.severity >= Severity.HIGH] == ["WS-ARC-020"], found


_DCP_POINTED = """
import pickle, sys, warnings
import torch
import torch.distributed.checkpoint as dcp

warnings.simplefilter("ignore")
folder, payload, action = sys.argv[1], sys.argv[2].encode("latin-1"), sys.argv[3]
blob = b"\\0" * 64 + payload + b"\\0" * 64
if action == "save":
    dcp.save({"w": torch.frombuffer(bytearray(blob), dtype=torch.uint8).clone(), "extra": {"step": 3}},
             checkpoint_id=folder)
    at = open(folder + "/__0_0.distcp", "rb").read().index(payload)
    metadata = pickle.load(open(folder + "/.metadata", "rb"))  # this test's own file, written a moment ago
    for index, info in metadata.storage_data.items():
        if index.fqn == "extra.step":
            info.offset, info.length = at, len(payload)
            info.relative_path = sys.argv[4] if len(sys.argv) > 4 else info.relative_path
    pickle.dump(metadata, open(folder + "/.metadata", "wb"))
else:
    dcp.load({"w": torch.zeros(len(blob), dtype=torch.uint8), "extra": {"step": 0}}, checkpoint_id=folder)
"""


def test_distributed_checkpoint_items_are_read_where_the_metadata_says(tmp_path: Path) -> None:
    """dcp.load reads an item from whatever offset `.metadata` records: a review pointed the `step` item into a
    tensor's bytes, where a pickle sat (dcp.load ran it; wscan passed the folder). Every slice the metadata names
    is now scanned; a file name that leaves the folder is high."""
    marker = tmp_path / "marker"
    payload = b"cos\nmkdir\n(S'" + str(marker).encode() + b"'\ntR."
    folder = tmp_path / "pointed"
    run = [sys.executable, "-c", _DCP_POINTED, str(folder), payload.decode("latin-1")]
    subprocess.run([*run, "save"], check=True, capture_output=True, timeout=300)
    subprocess.run([*run, "load"], capture_output=True, timeout=300)
    assert marker.is_dir(), "dcp.load did not run the pickle the metadata pointed at"
    assert rule_ids(scan(folder)) & CRITICAL_PICKLE

    outside = tmp_path / "outside"
    named = [sys.executable, "-c", _DCP_POINTED, str(outside), "plain bytes", "save", "../elsewhere.distcp"]
    subprocess.run(named, check=True, capture_output=True, timeout=300)
    assert "WS-PKL-019" in rule_ids(scan(outside))
