"""joblib 0.9's pickles keep each array in a file beside them, which joblib.load reads (with allow_pickle) when it
meets the array's NDArrayWrapper: real ones pass and the file beside them is scanned as part of them; a wrapper
naming a file elsewhere is critical, and a hostile file beside a real-looking wrapper is caught through it."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import joblib
import numpy as np
import pytest

from tests.helpers.scanning import scan
from wscan.model import Severity

OLD = Path(__file__).resolve().parent / "data" / "old_joblib"


def _high(path: Path) -> list[str]:
    return [f"{f.rule_id} {f.location}" for f in scan(path).findings if f.severity >= Severity.HIGH]


def test_real_joblib_09_pickles_pass_and_load(tmp_path: Path) -> None:
    for name in ("joblib_0.9.2_pickle_py35_np19.pkl", "joblib_0.9.4.dev0_compressed_cache_size_pickle_py35_np19.gz"):
        assert isinstance(joblib.load(OLD / name), list)  # what the library wrote, and still loads
    assert not _high(OLD)


def _wrapped(tmp_path: Path, filename: str) -> Path:
    from joblib.numpy_pickle_compat import NDArrayWrapper

    sample = tmp_path / "model.pkl"
    sample.write_bytes(pickle.dumps([NDArrayWrapper(filename, np.ndarray)], protocol=2))
    return sample


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def test_a_hostile_array_beside_the_pickle_is_scanned_through_it(tmp_path: Path) -> None:
    """joblib.load unpickles the object array the wrapper names; scanning the pickle alone finds it."""
    marker = tmp_path / "ran"
    sample = _wrapped(tmp_path, "model.pkl_01.npy")
    np.save(tmp_path / "model.pkl_01.npy", np.array([_Payload(marker)], dtype=object), allow_pickle=True)
    load = "import joblib, sys; joblib.load(sys.argv[1])"
    subprocess.run([sys.executable, "-c", load, str(sample)], cwd=tmp_path, capture_output=True, timeout=120)
    assert marker.exists(), "joblib no longer reads the file beside a 0.9 pickle: revisit joblib_legacy"
    marker.unlink()
    found = [f for f in scan(sample).findings if f.severity >= Severity.CRITICAL]
    assert any(f.location.member == "model.pkl_01.npy" for f in found), found


@pytest.mark.parametrize("filename", ["/etc/hostname", "../outside.npy", "sub/../../outside.npy", "C:x.npy"])
def test_a_wrapper_naming_a_file_elsewhere_is_critical(tmp_path: Path, filename: str) -> None:
    (tmp_path / "inner").mkdir()
    sample = _wrapped(tmp_path / "inner", filename)
    assert any(f.startswith("WS-PKL-034") for f in _high(sample)), _high(sample)


def test_a_wrapper_whose_name_is_computed(tmp_path: Path) -> None:
    """The name joblib reads is the one the state holds at the wrapper's BUILD; one a call makes is unknown."""
    sample = _wrapped(tmp_path, "model.pkl_01.npy")
    (tmp_path / "model.pkl_01.npy").write_bytes((OLD / "joblib_0.9.2_pickle_py35_np19.pkl_01.npy").read_bytes())
    assert not _high(sample)
    computed = sample.read_bytes().replace(
        b"X\x10\x00\x00\x00model.pkl_01.npy", b"c__builtin__\nstr\nX\x10\x00\x00\x00model.pkl_01.npy\x85R", 1
    )
    assert computed != sample.read_bytes()
    sample.write_bytes(computed)
    assert any(f.startswith("WS-PKL-034") for f in _high(sample)), _high(sample)
