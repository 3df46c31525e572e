"""Items that become an object's attributes, however the pickle hands them over, are judged as attributes (WS-PKL-026).

EasyDict, scikit-learn's Bunch and their kin answer attribute lookups from their items, and EasyDict makes every dict
among its values an EasyDict too. Helper 223 found four ways to set such items that wscan did not read (it used them
for an array interface, which WS-PKL-062 now catches by its name): pairs given to EasyDict's constructor or to a
Bunch's copyreg reconstructor, a dict nested in an EasyDict's value, and torch's _rebuild_from_type_v2 calling
itself. Here each carries a `__deepcopy__` item holding a scikit-learn scorer: the real libraries load it, and
copy.deepcopy of what they made calls the scorer (reviews chained scorers into DataFrame.eval and ndarray.tofile).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.pickle_bytes import binunicode as _s
from tests.helpers.pickle_bytes import global_op as _g
from tests.helpers.sandbox import load_each
from tests.helpers.scanning import scan, scan_bytes
from wscan.model import Severity

SCORER = _g("sklearn.metrics._scorer", "_Scorer") + b")\x81}b"  # an allowed object with __call__
EASYDICT = _g("easydict", "EasyDict")
NAMESPACE = _g("types", "SimpleNamespace")
REBUILD = _g("torch._tensor", "_rebuild_from_type_v2")
# Each case: the stream of the object, given the item's key and value; and where in it the item lands.
CASES = {
    "easydict-pairs": (lambda k, v: EASYDICT + b"](" + k + v + b"\x86e\x85R", ""),
    "bunch-reconstructor-pairs": (
        lambda k, v: _g("copyreg", "_reconstructor") + _g("sklearn.utils._bunch", "Bunch") + _g("builtins", "dict")
        + b"](" + k + v + b"\x86e\x87R",
        "",
    ),
    "easydict-nested-dict": (lambda k, v: EASYDICT + b"}" + _s("cfg") + b"}" + k + v + b"ss\x85R", "cfg"),
    "easydict-dict-in-list": (lambda k, v: EASYDICT + b"}" + _s("cfg") + b"]}" + k + v + b"sas\x85R", "cfg.0"),
    "easydict-nested-setitems": (
        lambda k, v: _g("copyreg", "__newobj__") + EASYDICT + b"\x85R" + _s("cfg") + b"}" + k + v + b"ss",
        "cfg",
    ),
    "rebuild-from-type-nested": (
        lambda k, v: REBUILD + b"(" + REBUILD + NAMESPACE + b"(" + NAMESPACE + NAMESPACE + b")}(" + k + v + b"ut}tR",
        "",
    ),
}
DEEPCOPY = """
import copy, pickle
def load(path, option):
    with open(path, "rb") as f:
        target = pickle.load(f)
    for step in filter(None, option.split(".")):
        target = target[int(step)] if step.isdigit() else getattr(target, step)
    copy.deepcopy(target)
"""


def _stream(case: str, key: str) -> bytes:
    return b"\x80\x02" + CASES[case][0](_s(key), SCORER) + b"."


@pytest.fixture(scope="module")
def deep_copied(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What copy.deepcopy did with each case's object after pickle.load, and with its control (`<case>/control`,
    the item under a name nothing looks up)."""
    root = tmp_path_factory.mktemp("attribute-items")
    jobs = []
    for case, (_, where) in CASES.items():
        for label, key in ((case, "__deepcopy__"), (f"{case}/control", "deepcopy_me")):
            path = root / f"{label.replace('/', '-')}.pkl"
            path.write_bytes(_stream(case, key))
            jobs.append((label, path, where, root / "never-made"))
    return {key: outcome.result for key, outcome in load_each(DEEPCOPY, jobs, root, timeout=120).items()}


@pytest.mark.parametrize("case", CASES)
def test_the_item_is_an_attribute_the_library_calls(case: str, deep_copied: dict[str, str]) -> None:
    assert "__call__() missing" in deep_copied[case]  # deepcopy called the scorer with its memo
    assert deep_copied[f"{case}/control"] == "loaded"


@pytest.mark.parametrize("case", CASES)
def test_the_item_is_judged_as_an_attribute(tmp_path: Path, case: str) -> None:
    def high(key: str) -> set[str]:
        report = scan_bytes(tmp_path, _stream(case, key), "model.pkl")
        return {f.rule_id for f in report.findings if f.severity >= Severity.HIGH}

    assert "WS-PKL-026" in high("__deepcopy__")
    assert "WS-PKL-026" not in high("deepcopy_me")


def test_easydicts_nested_past_what_is_read_are_reported(tmp_path: Path) -> None:
    nested = b"".join(_s("c") + b"}" for _ in range(40))
    blob = b"\x80\x02" + EASYDICT + b"}" + nested + _s("x") + b"K\x01" + b"s" * 41 + b"\x85R."
    found = scan_bytes(tmp_path, blob, "model.pkl").findings
    assert any(f.rule_id == "WS-PKL-025" and "nested past 32 levels" in f.message for f in found)


class _Call:
    """Pickles as a call of `func` with `args`: how the stream below is written."""

    def __init__(self, func: object, args: tuple[object, ...]) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return self.func, self.args


def test_what_rebuild_from_type_calls_as_subclass_on_is_a_tensor(tmp_path: Path) -> None:
    """Helper 255: torch's _rebuild_from_type_v2(F, type, args, state) calls `F(*args).as_subclass(type)`; with F
    copy.deepcopy of a pandas Series indexed `as_subclass`, the Series answered the lookup with a SciPy distribution
    class, whose new instance took the state (a Series too) and ran its `_parse_arg_template`: code on
    pickle.load, torch.load, joblib.load and np.load. Only torch's rebuild functions make what it may call that on."""
    import copy

    import pandas as pd
    import torch
    from scipy import stats

    marker = tmp_path / "ran"
    holder = pd.Series([type(stats.norm)], index=["as_subclass"], dtype=object)
    state = pd.Series([f"open({str(marker)!r}, 'w').close()"], index=["_parse_arg_template"], dtype=object)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(_Call(torch._tensor._rebuild_from_type_v2, (copy.deepcopy, 1, (holder,), state))))
    load = f"import pickle\ntry:\n    pickle.load(open({str(path)!r}, 'rb'))\nexcept Exception:\n    pass\n"
    subprocess.run([sys.executable, "-c", load], cwd=tmp_path, capture_output=True, timeout=120, check=False)
    assert marker.exists()  # the real loader ran the file's code
    assert "WS-PKL-005" in {f.rule_id for f in scan(path).findings}
    jagged = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)], layout=torch.jagged)
    real = pickle.dumps(jagged)  # torch's own _rebuild_from_type_v2, of its _rebuild_njt
    assert b"_rebuild_from_type_v2" in real
    assert not [f for f in scan_bytes(tmp_path, real, "jagged.pkl").findings if f.severity >= Severity.HIGH]
