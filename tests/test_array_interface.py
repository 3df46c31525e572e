"""An array interface given to an object by a pickle makes NumPy read memory the file chooses (WS-PKL-062).

NumPy makes an array of any object with an `__array_interface__` attribute, whose `data` is a raw address. Helpers 222
and 223 set one through a SimpleNamespace's state and nine other ways (pairs handed to EasyDict or to a Bunch's
reconstructor, torch's _rebuild_from_type_v2 nested in itself, EasyDict's nested dicts); numpy.poly1d, an allowed
class, then copied from the address while `pickle.load` ran. Each case here is loaded by the real pickle module in a
sandboxed child, at an address nothing maps: the child crashes, and the same stream with the name misspelt loads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pickle_bytes import binunicode as _s
from tests.helpers.pickle_bytes import global_op as _g
from tests.helpers.sandbox import load_each
from tests.helpers.scanning import scan_bytes
from wscan.model import Severity

NAME = "__array_interface__"
UNMAPPED = 0x4141414141


def _interface() -> bytes:
    """{'shape': (64,), 'typestr': '|u1', 'data': (UNMAPPED, False), 'version': 3}"""
    data = b"\x8a\x08" + UNMAPPED.to_bytes(8, "little") + b"\x89\x86"
    return b"}(" + _s("shape") + b"K@\x85" + _s("typestr") + _s("|u1") + _s("data") + data + _s("version") + b"K\x03u"


def _pair(key: bytes) -> bytes:
    return key + _interface() + b"\x86"


NAMESPACE = _g("types", "SimpleNamespace")
EASYDICT = _g("easydict", "EasyDict")
BUNCH = _g("sklearn.utils._bunch", "Bunch")
REBUILD = _g("torch._tensor", "_rebuild_from_type_v2")
# What each case hands numpy.poly1d, given the pickled name of the attribute.
CASES = {
    # a state, as pickle writes any object's
    "namespace-state": lambda key: NAMESPACE + b")R}(" + key + _interface() + b"ub",
    # pairs EasyDict's constructor takes (its items are its attributes)
    "easydict-pairs": lambda key: EASYDICT + b"](" + _pair(key) + b"e\x85R",
    # pairs dict.__init__ takes when copyreg._reconstructor makes a Bunch (which answers attributes from its items)
    "bunch-reconstructor-pairs": lambda key: _g("copyreg", "_reconstructor") + BUNCH + _g("builtins", "dict")
    + b"](" + _pair(key) + b"e\x87R",
    # torch's _rebuild_from_type_v2 calling itself: the inner call's state, never a state of the outer one
    "rebuild-from-type-nested": lambda key: REBUILD + b"(" + REBUILD + NAMESPACE + b"(" + NAMESPACE + NAMESPACE
    + b")}(" + key + _interface() + b"ut}tR",
    # the name made by str(b"...", "ascii"): spelt as bytes
    "name-from-bytes": lambda key: NAMESPACE + b")R}(" + _g("builtins", "str") + b"C" + bytes([len(key) - 5])
    + key[5:] + _s("ascii") + b"\x86R" + _interface() + b"ub",
}


def _stream(case: str, name: str) -> bytes:
    return b"\x80\x02" + _g("numpy", "poly1d") + CASES[case](_s(name)) + b"\x85R."


def _high(folder: Path, blob: bytes) -> set[str]:
    return {f.rule_id for f in scan_bytes(folder, blob, "model.pkl").findings if f.severity >= Severity.HIGH}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What pickle.load did with each case, spelt right and misspelt (`<case>/control`)."""
    root = tmp_path_factory.mktemp("array-interface")
    jobs = []
    for case in CASES:
        for label, name in ((case, NAME), (f"{case}/control", "__array_interfacX__")):
            path = root / f"{label.replace('/', '-')}.pkl"
            path.write_bytes(_stream(case, name))
            jobs.append((label, path, "", root / "never-made"))
    setup = "import pickle\ndef load(path, option):\n    with open(path, 'rb') as f:\n        pickle.load(f)\n"
    return {key: outcome.result for key, outcome in load_each(setup, jobs, root, timeout=120).items()}


@pytest.mark.parametrize("case", CASES)
def test_numpy_reads_the_address_the_file_gives(case: str, loaded: dict[str, str]) -> None:
    assert loaded[case] == "crashed: wait status 11"  # SIGSEGV: the read of an unmapped address
    assert loaded[f"{case}/control"] == "loaded"


@pytest.mark.parametrize("case", CASES)
def test_every_way_of_setting_it_is_high(tmp_path: Path, case: str) -> None:
    assert "WS-PKL-062" in _high(tmp_path, _stream(case, NAME))
    assert "WS-PKL-062" not in _high(tmp_path, _stream(case, "__array_interfacX__"))


@pytest.mark.parametrize("name", ["__array_struct__", "__cuda_array_interface__"])
def test_the_other_array_interfaces_are_high_too(tmp_path: Path, name: str) -> None:
    assert "WS-PKL-062" in _high(tmp_path, _stream("namespace-state", name))


def test_a_nested_dict_of_an_easydict_is_read_too(tmp_path: Path) -> None:
    """EasyDict makes every nested dict an EasyDict, whose keys are attributes: np.asarray(o.cfg) reads the address."""
    blob = b"\x80\x02" + EASYDICT + b"}" + _s("cfg") + b"}" + _s(NAME) + _interface() + b"ss\x85R."
    assert "WS-PKL-062" in _high(tmp_path, blob)
