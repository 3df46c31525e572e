"""Classes of real libraries that act when unpickled, proved with the real libraries and flagged critical.

- SciPy: every distribution (rv_generic and subclasses) execs the `_parse_arg_template` string of its pickled
  state in __setstate__. A RandomizedSearchCV with `scipy.stats` parameters pickles such objects.
- scikit-learn: ScoringMonitor.__setstate__ opens a multiprocessing Client to the address in its state.

Each proof loads the corpus sample's bytes (rebuilt with a marker payload or a local address) with plain
`pickle.load` in a fresh interpreter, then checks that wscan calls the same bytes critical, and that an
`allow` entry in the config cannot change that.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.scanning import scan_bytes
from wscan.config import Config
from wscan.model import Severity

CORPUS_BUILD = Path(__file__).resolve().parents[1] / "corpus" / "build.py"
LOAD = "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))"


def _build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wscan_corpus_build_gadgets", CORPUS_BUILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def _load_in_child(path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Plain pickle.load in a fresh, isolated interpreter (the library raises after acting; that is fine)."""
    return subprocess.run(
        [sys.executable, "-I", "-c", LOAD, str(path)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _critical(folder: Path, blob: bytes, name: str, config: Config | None = None) -> set[str]:
    report = scan_bytes(folder, blob, name, config)
    return {f"{f.rule_id} {f.message}" for f in report.findings if f.severity >= Severity.CRITICAL}


def test_scipy_distribution_runs_its_pickled_template(tmp_path: Path) -> None:
    pytest.importorskip("scipy")
    marker = tmp_path / "scipy-template-ran"
    blob = _build().scipy_distribution_pickle(f"open({str(marker)!r}, 'w').close()")
    sample = tmp_path / "search.pkl"
    sample.write_bytes(blob)

    _load_in_child(sample, tmp_path)
    assert marker.exists(), "SciPy no longer execs the pickled template: revisit the rule"

    found = _critical(tmp_path / "scan", blob, "search.pkl")
    assert any(f.startswith("WS-PKL-013") and "norm_gen" in f for f in found), found
    allowed = Config(allow=frozenset({"scipy.stats._continuous_distns.norm_gen"}))
    assert any(f.startswith("WS-PKL-013") for f in _critical(tmp_path / "allowed", blob, "search.pkl", allowed))


def test_sklearn_scoring_monitor_connects_on_load(tmp_path: Path) -> None:
    pytest.importorskip("sklearn.callback")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(60)
        port = server.getsockname()[1]
        blob = _build().scoring_monitor_pickle("127.0.0.1", port)
        sample = tmp_path / "monitor.pkl"
        sample.write_bytes(blob)
        child = subprocess.Popen([sys.executable, "-I", "-c", LOAD, str(sample)], cwd=tmp_path,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            connection, _ = server.accept()  # the loader dials the address from the pickle
            connection.close()
        finally:
            child.wait(timeout=60)

    found = _critical(tmp_path / "scan", blob, "monitor.pkl")
    assert any(f.startswith("WS-PKL-013") and "ScoringMonitor" in f for f in found), found
    assert any(f.startswith("WS-PKL-001") and "ListenerHandle" in f for f in found), found


def test_functools_partial_is_judged_by_what_it_wraps(tmp_path: Path) -> None:
    """partial(check_array) is what scikit-learn writes; partial(os.system) is still critical, for os.system."""
    import functools
    import os
    import pickle

    from sklearn.utils.validation import check_array

    harmless = pickle.dumps(functools.partial(check_array, dtype="float64"), protocol=4)
    assert not scan_bytes(tmp_path / "a", harmless, "partial.pkl").findings
    hostile = pickle.dumps(functools.partial(os.system, "echo wscan"), protocol=4)
    found = _critical(tmp_path / "b", hostile, "partial.pkl")
    assert any(f.startswith("WS-PKL-001") and "system" in f for f in found), found
