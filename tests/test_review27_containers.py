"""Review 27: how a pickle reaches the unpickler. Each file is loaded for real in a fresh interpreter (pandas, torch,
joblib), its payload creating a marker folder, and wscan must fail it. Before the fixes each passed: a zip whose
end record wscan called implausible, a tar member of unknown type, a scan limit hit in a later pickle of a legacy
torch file, a joblib array whose dtype state NumPy reads as holding objects. (The NUL-ended numbers are in
test_pickle_semantics_differential.)"""

from __future__ import annotations

import io
import pickle
import struct
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.scanning import scan
from wscan.config import Config
from wscan.limits import Limits
from wscan.model import Severity


def _payload(marker: Path) -> bytes:
    """posix.mkdir(marker), protocol 2."""
    arg = str(marker).encode()
    return b"\x80\x02cposix\nmkdir\nX" + struct.pack("<I", len(arg)) + arg + b"\x85R."


def _run(code: str, path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-800:]


def _worst(path: Path, config: Config | None = None) -> Severity | None:
    return max((f.severity for f in scan(path, config).findings), default=None)


def _zip_behind_text(pickled: bytes, patch: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("model.pkl", pickled)
    data = bytearray(buffer.getvalue())
    end = data.rfind(b"PK\x05\x06")
    if patch == "disk":
        struct.pack_into("<HH", data, end + 4, 1, 1)  # this disk 1, directory on disk 1: zipfile ignores both
    else:
        struct.pack_into("<H", data, end + 20, 0xFFFF)  # a comment of 65,535 bytes that is not there
    return b"# model card: see README\n" + bytes(data)


@pytest.mark.parametrize("patch", ["disk", "comment"])
def test_a_zip_behind_text_with_an_odd_end_record_is_scanned(tmp_path: Path, patch: str) -> None:
    marker = tmp_path / "MARKER"
    path = tmp_path / "frame.pkl.zip"
    path.write_bytes(_zip_behind_text(_payload(marker), patch))
    _run("import pandas, sys; pandas.read_pickle(sys.argv[1])", path)
    assert marker.exists(), "pandas did not run it: the case proves nothing"
    report = scan(path)
    assert {"WS-ARC-021", "WS-PKL-001"} <= {f.rule_id for f in report.findings}


def test_text_with_a_stray_end_signature_stays_text(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    odd_end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 1, 1, 5, 5, 100, 0, 0)  # a directory that is not there
    path.write_bytes(b"notes " * 100 + odd_end + b" more notes")
    report = scan(path)
    assert not [f for f in report.findings if f.severity >= Severity.MEDIUM]
    assert report.files[0].formats == ()


def _tar(members: dict[str, bytes], unknown: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            if name == unknown:
                info.type = b"Z"  # no type tarfile knows: it reads, extracts and loads it as a file
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_tar_member_of_unknown_type_is_read_like_a_file(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    path = tmp_path / "frame.pkl.tar"
    path.write_bytes(_tar({"frame.pkl": _payload(marker)}, "frame.pkl"))
    _run("import pandas, sys; pandas.read_pickle(sys.argv[1])", path)
    assert marker.exists(), "pandas did not run it: the case proves nothing"
    assert _worst(path) == Severity.CRITICAL


def test_torch_tar_format_with_an_unknown_type_pickle_member(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    members = {
        "storages": pickle.dumps(0, protocol=2) + pickle.dumps([], protocol=2),
        "tensors": pickle.dumps(0, protocol=2),
        "pickle": _payload(marker),
    }
    path = tmp_path / "old.pt"
    path.write_bytes(_tar(members, "pickle"))
    _run("import torch, sys; torch.load(sys.argv[1], weights_only=False)", path)
    assert marker.exists(), "torch did not run it: the case proves nothing"
    assert _worst(path) == Severity.CRITICAL


def test_a_scan_limit_hit_in_a_later_legacy_pickle_is_never_trailing_data(tmp_path: Path) -> None:
    """torch reads the sys_info pickle whatever its length and runs the main pickle after it; wscan, stopped by
    its pickle size limit (lowered here to 1 MiB, 512 MiB by default) must not call the rest harmless."""
    marker = tmp_path / "MARKER"
    magic = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19."
    sys_info = b"\x80\x03" + (b"C\xff" + b"A" * 255 + b"0") * 8_000 + b"N."  # 2 MB of bytes pushed and popped
    path = tmp_path / "legacy.pt"
    path.write_bytes(magic + b"\x80\x02M\xe9\x03." + sys_info + _payload(marker) + b"\x80\x02].")
    _run("import torch, sys; torch.load(sys.argv[1], weights_only=False)", path)
    assert marker.exists(), "torch did not run it: the case proves nothing"
    small = Config(limits=replace(Limits(), max_pickle_bytes=1 << 20))
    findings = scan(path, small).findings
    assert "WS-PKL-009" not in {f.rule_id for f in findings}
    assert max(f.severity for f in findings) >= Severity.HIGH
    assert _worst(path) == Severity.CRITICAL  # under the default limit the payload itself is read


def _x(text: str) -> bytes:
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def test_a_joblib_dtype_state_older_than_3_with_flags_holds_objects(tmp_path: Path) -> None:
    """NumPy recomputes the flags of a dtype state older than version 3: flags 16 (bit 0 clear) make the array
    hold objects, so joblib reads a nested pickle where wscan skipped 8 array bytes."""
    marker = tmp_path / "MARKER"
    f8 = (b"cnumpy\ndtype\n" + _x("f8") + b"\x89\x88\x87R" + b"(K\x03" + _x("<")
          + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb")  # fmt: skip
    v8 = (b"cnumpy\ndtype\n" + _x("V8") + b"\x89\x88\x87R" + b"(K\x02" + _x("|") + b"N" + _x("a") + b"\x85" + b"}"
          + _x("a") + f8 + b"K\x00\x86s" + b"K\x08K\x01K\x10tb")  # fmt: skip
    outer = (b"\x80\x02cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81}(" + _x("subclass") + b"cnumpy\nndarray\n"
             + _x("shape") + b"K\x01\x85" + _x("order") + _x("C") + _x("dtype") + v8 + _x("allow_mmap") + b"\x89ub")
    hidden = b"0" + _payload(marker)[2:-1] + b"0cnumpy\nzeros\n(K\x01tR."
    nested = b"N0N0N0" + b"C\x05" + b"B" + struct.pack("<I", len(hidden)) + hidden  # 8 bytes, then BINBYTES
    path = tmp_path / "array.joblib"
    path.write_bytes(outer + nested + b".")
    _run("import joblib, sys; joblib.load(sys.argv[1])", path)
    assert marker.exists(), "joblib did not run it: the case proves nothing"
    assert _worst(path) == Severity.CRITICAL
