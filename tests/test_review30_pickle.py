"""Review 30 (public advisories replayed): the pickle-side misses, each checked against torch itself.

CVE-2026-24747: torch.load before 2.10, weights_only=True included, trusted a storage's declared element count
over its record's size and let SETITEM write into a rebuilt tensor; together, a write out of bounds. torch 2.13
refuses both, so these tests show torch's own refusal next to wscan's finding; no writer makes either file.
The gadget names come from scanner advisories (picklescan, modelscan, fickling): they were high (not on the
allowlist) and are now critical (on the `dangerous` list).
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest
import torch

from tests.helpers.scanning import scan
from wscan.model import Finding, Severity

FLOAT_SETITEM = b"K\x00G" + struct.pack(">d", 7.0) + b"s"  # item 0 = 7.0, on whatever is on top of the stack


def findings_of(path: Path) -> list[Finding]:
    """Findings above information."""
    return [f for f in scan(path).findings if f.severity > Severity.INFO]


def _rewrite(source: Path, target: Path, change: dict[str, bytes]) -> Path:
    """A copy of a torch.save zip with some members' bytes replaced, stored as torch stores them."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as new:
        for info in old.infolist():
            new.writestr(info.filename, change.get(info.filename.split("/", 1)[1], old.read(info)))
    return target


def _saved(tmp_path: Path, value: object) -> Path:
    path = tmp_path / "model.pt"
    torch.save(value, path)
    return path


def _refused(path: Path) -> str:
    with pytest.raises(Exception) as caught:  # whatever torch raises, it must refuse the file
        torch.load(path, weights_only=True)
    return str(caught.value)


def test_a_real_checkpoint_matches_its_records(tmp_path: Path) -> None:
    path = _saved(tmp_path, {"w": torch.arange(10, dtype=torch.float32), "b": torch.zeros(3, dtype=torch.bfloat16),
                             "q": torch.quantize_per_tensor(torch.rand(4), 0.1, 10, torch.quint8)})  # fmt: skip
    assert findings_of(path) == []


@pytest.mark.parametrize("change", [b"\x00" * 16, b"\x00" * 44], ids=["shorter", "longer"])
def test_a_record_of_another_size_than_its_storage_is_high(tmp_path: Path, change: bytes) -> None:
    path = _rewrite(_saved(tmp_path, torch.zeros(10)), tmp_path / "odd.pt", {"data/0": change})
    assert "record size" in _refused(path)
    found = [(f.rule_id, f.severity.name) for f in findings_of(path)]
    assert found == [("WS-PKL-036", "HIGH")]


def test_setitem_on_a_rebuilt_tensor_is_high(tmp_path: Path) -> None:
    source = _saved(tmp_path, torch.zeros(4))
    with zipfile.ZipFile(source) as archive:
        data = archive.read(next(n for n in archive.namelist() if n.endswith("/data.pkl")))
    assert data.endswith(b".")
    path = _rewrite(source, tmp_path / "setitem.pt", {"data.pkl": data[:-1] + FLOAT_SETITEM + b"."})
    _refused(path)
    assert torch.load(path, weights_only=False).tolist() == [7.0, 0.0, 0.0, 0.0]  # the write happened
    assert [(f.rule_id, f.severity.name) for f in findings_of(path)] == [("WS-PKL-035", "HIGH")]


def test_setitems_into_state_dicts_stay_clean(tmp_path: Path) -> None:
    """What torch.save writes for state dicts (OrderedDicts filled by SETITEMS) and plain dicts."""
    state = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU()).state_dict()
    assert findings_of(_saved(tmp_path, {"model": state, "epoch": 3, "counts": {"a": torch.ones(2)}})) == []


GADGETS = [
    ("_interpreters", "create"), ("_xxsubinterpreters", "run_string"), ("mailcap", "findmatch"),
    ("platform", "popen"), ("idlelib.pyshell", "main"), ("lib2to3.main", "main"), ("_pyrepl.pager", "pipe_pager"),
    ("cgitb", "handler"), ("torch.utils.collect_env", "run"), ("torch.utils.bottleneck.__main__", "run_cprofile"),
    ("torch.testing._internal.common_utils", "shell"), ("joblib.externals.loky.backend.popen_loky_posix", "Popen"),
    ("test.support.script_helper", "assert_python_ok"),
]  # fmt: skip


@pytest.mark.parametrize(("module", "name"), GADGETS, ids=[f"{m}.{n}" for m, n in GADGETS])
def test_advisory_gadgets_are_critical(tmp_path: Path, module: str, name: str) -> None:
    stream = io.BytesIO()
    stream.write(b"\x80\x04")
    for text in (module, name):
        encoded = text.encode()
        stream.write(b"\x8c" + bytes([len(encoded)]) + encoded)
    stream.write(b"\x93\x8c\x04echo\x85R.")  # STACK_GLOBAL, ('echo',), REDUCE, STOP
    path = tmp_path / "gadget.pkl"
    path.write_bytes(stream.getvalue())
    severities = {f.severity.name for f in findings_of(path)}
    assert "CRITICAL" in severities
