"""mmengine's training checkpoints: their message hub's HistoryBuffer objects pass; what a state could smuggle does not.

Every checkpoint mmengine's Runner saves keeps HistoryBuffer objects (the logged scalars), each pickling its class's
table of statistics methods as getattr(HistoryBuffer, "min") and so on; its __setstate__ merges that table into the
class's own with dict.update, and mmengine calls `table[name](buffer, ...)` at every log line. tests/data/openmmlab
keeps real checkpoints (tools/gen_mmengine_allowlist.py, tools/record_openmmlab_files.py); the hostile states are
built here byte by byte, as no test installs mmengine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pickle_bytes import binunicode as _s
from tests.helpers.scanning import scan, scan_bytes
from wscan.model import Severity

DATA = Path(__file__).parent / "data" / "openmmlab"
REAL = [*sorted((DATA / "runner").glob("*.pth")), DATA / "mmengine-epoch_1.pth"]
BUFFER = b"cmmengine.logging.history_buffer\nHistoryBuffer\n"
STATISTICS = ("min", "max", "current", "mean")


def _lookup(name: str) -> bytes:
    """getattr(HistoryBuffer, name), as pickle writes a method of a class."""
    return b"c__builtin__\ngetattr\n" + BUFFER + _s(name) + b"\x86R"


def _callable_object() -> bytes:
    """A scikit-learn scorer restored from state: an allowed class whose instances call what their state names (reviews
    chained scorers into DataFrame.eval and ndarray.tofile), never kept in a table a library calls."""
    return b"csklearn.metrics._scorer\n_Scorer\n)\x81}b"


def _table(**values: bytes) -> bytes:
    return b"}(" + b"".join(_s(name) + value for name, value in values.items()) + b"u"


def _buffer(*items: tuple[str, bytes]) -> bytes:
    """A HistoryBuffer as mmengine pickles it (NEWOBJ, then BUILD of its dict), with these state items after
    max_length."""
    state = b"}(" + _s("max_length") + b"J\x40\x42\x0f\x00" + b"".join(_s(k) + v for k, v in items) + b"u"
    return b"\x80\x02" + BUFFER + b")\x81" + state + b"b."


def _high(tmp_path: Path, blob: bytes) -> set[str]:
    return {f.rule_id for f in scan_bytes(tmp_path, blob, "model.pkl").findings if f.severity >= Severity.HIGH}


REAL_TABLE = _table(**{name: _lookup(name) for name in STATISTICS})


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_runner_checkpoints_have_no_findings(path: Path) -> None:
    assert scan(path).findings == []


def test_a_buffer_written_as_mmengine_writes_it_passes(tmp_path: Path) -> None:
    """The stream the hostile cases below change: the four statistics, looked up and kept, never called."""
    assert _high(tmp_path, _buffer(("statistics_methods", REAL_TABLE))) == set()


@pytest.mark.parametrize(
    ("table", "rules"),
    [
        # any other attribute of the class: register_statistics adds to the table, update appends to the logs
        (_table(mean=_lookup("update")), {"WS-PKL-017"}),
        (_table(mean=_lookup("register_statistics")), {"WS-PKL-017"}),
        # an object that can be called, in a dict, a list of pairs, a tuple of pairs, or a set that update() may read
        # either way round
        (_table(mean=_callable_object()), {"WS-PKL-063"}),
        (b"](" + _s("mean") + _callable_object() + b"\x86e", {"WS-PKL-063"}),
        (b"(" + _s("mean") + _callable_object() + b"\x86t", {"WS-PKL-063"}),
        (b"]((" + _callable_object() + _s("mean") + b"\x91e", {"WS-PKL-063"}),
        # ... or an OrderedDict filled item by item
        (b"ccollections\nOrderedDict\n)R(" + _s("mean") + _callable_object() + b"u", {"WS-PKL-063"}),
        # pairs the machine cannot read: a computed pair
        (b"](c__builtin__\ntuple\n](" + _s("mean") + _callable_object() + b"e\x85Re", {"WS-PKL-063"}),
        # one of the four under another's name (every buffer's mean is then its max), or a function any allowlist
        # allows (numpy.copy made helper 222's mean a copy of memory the file chose)
        (_table(mean=_lookup("max")), {"WS-PKL-063"}),
        (_table(mean=b"cnumpy\ncopy\n"), {"WS-PKL-063"}),
    ],
    ids=["update", "register", "object", "pairs-list", "pairs-tuple", "pairs-set", "ordered-dict", "computed-pair",
         "swapped", "allowed-function"],
)
def test_what_a_state_merges_into_the_statistics_table_is_judged(
    tmp_path: Path, table: bytes, rules: set[str]
) -> None:
    assert rules <= _high(tmp_path, _buffer(("statistics_methods", table)))


def test_a_table_of_the_buffers_own_is_judged_as_the_shared_one(tmp_path: Path) -> None:
    """`statistics()` reads `self._statistics_methods`, which an instance's dict answers before the class: real states
    never hold one, so whatever it holds is reported, mmengine's own four included."""
    assert _high(tmp_path, _buffer(("_statistics_methods", REAL_TABLE))) == {"WS-PKL-063"}


def test_a_statistics_method_called_while_loading_is_critical(tmp_path: Path) -> None:
    """The four are values only: called while the file loads (here HistoryBuffer.mean(None)), they are reported."""
    called = _buffer(("_log_history", _lookup("mean") + b"N\x85R"), ("statistics_methods", REAL_TABLE))
    assert "WS-PKL-017" in _high(tmp_path, called)


def test_a_state_that_replaces_a_method_of_the_buffer_is_high(tmp_path: Path) -> None:
    """An attribute named like a method (statistics, which mmengine's LogProcessor calls) comes before the class's."""
    state = _buffer(("statistics", _callable_object()), ("statistics_methods", REAL_TABLE))
    assert "WS-PKL-026" in _high(tmp_path, state)


def _namespace_with_interface(address: int) -> bytes:
    """A SimpleNamespace whose state gives it an array interface: one byte array at `address`."""
    interface = b"}(" + _s("shape") + b"K\x10\x85" + _s("typestr") + _s("|u1") + _s("data")
    interface += b"\x8a\x08" + address.to_bytes(8, "little") + b"\x89\x86" + _s("version") + b"K\x03u"
    return b"ctypes\nSimpleNamespace\n)R}(" + _s("__array_interface__") + interface + b"ub"


def test_a_state_that_gives_an_array_interface_is_high(tmp_path: Path) -> None:
    """Helper 222: numpy.poly1d called on such a namespace while the file loads copies from the address (torch.load
    crashed, or returned the process's memory as the coefficients); as a buffer's `_log_history`, mmengine's next
    update() does."""
    at_load = b"\x80\x02cnumpy\npoly1d\n" + _namespace_with_interface(0x4141414141) + b"\x85R."
    assert "WS-PKL-062" in _high(tmp_path, at_load)
    in_buffer = _buffer(("_log_history", _namespace_with_interface(0x4141414141)), ("statistics_methods", REAL_TABLE))
    assert _high(tmp_path, in_buffer) == {"WS-PKL-062"}


@pytest.mark.parametrize("name", ["__array_interface__", "__array_struct__", "__cuda_array_interface__"])
@pytest.mark.parametrize("how", ["state", "items", "argument", "module-buffer"])
def test_every_array_interface_is_judged_however_it_is_set(tmp_path: Path, name: str, how: str) -> None:
    """In a state, in the items of an EasyDict (its attributes too, whether SETITEMS or its constructor fills them),
    and in a torch module's buffers, which Module.__getattr__ hands out under any name the class lacks."""
    interface = _s(name) + b"}"
    blob = {
        "state": b"ceasydict\nEasyDict\n)\x81}(" + interface + b"ub",
        "items": b"ceasydict\nEasyDict\n)\x81(" + interface + b"u",
        "argument": b"ceasydict\nEasyDict\n}(" + interface + b"u\x85R",
        "module-buffer": b"ctorch.nn.modules.linear\nIdentity\n)\x81}(" + _s("_buffers")
        + b"ccollections\nOrderedDict\n)R(" + interface + b"uub",
    }[how]
    assert "WS-PKL-062" in _high(tmp_path, b"\x80\x02" + blob + b".")
