"""JAX arrays, Flax parameters and Optax optimizer states, pickled (review 55 found every one WS-PKL-003).

The files in tests/data/jax are made by the real libraries (`tools/gen_jax_allowlist.py`; jaxlib is not in the test
extra). A jax.Array pickles as `_reconstruct_array(fun, args, arr_state, aval_state)`, which calls `fun(*args)`: `fun`
is judged as called, and anything but what JAX writes there is WS-PKL-050."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.scanning import scan_bytes
from wscan.model import Severity

DATA = Path(__file__).parent / "data" / "jax"
REAL = sorted(p for p in DATA.iterdir() if p.suffix in (".pkl", ".joblib"))


def test_the_real_pickles_are_present() -> None:
    names = {p.name.split(".")[0] for p in REAL}
    assert {"array-bfloat16", "flax-params-frozen", "optax-adam", "optax-masked-partly", "all"} <= names


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_jax_pickles_pass(tmp_path: Path, path: Path) -> None:
    report = scan_bytes(tmp_path, path.read_bytes(), path.name)
    assert not [f for f in report.findings if f.severity >= Severity.HIGH], report.findings


def _reconstruct(fun: bytes, aval: bytes = b"}S'weak_type'\n\x89s") -> bytes:
    """_reconstruct_array(fun, ('x',), 'y', aval) at protocol 2, `fun` a GLOBAL's text."""
    return b"\x80\x02cjax._src.array\n_reconstruct_array\n(c" + fun + b"(S'x'\ntS'y'\n" + aval + b"tR."


def _rules(tmp_path: Path, blob: bytes) -> dict[str, Severity]:
    return {f.rule_id: f.severity for f in scan_bytes(tmp_path, blob, "array.pkl").findings}


def test_what_reconstruct_array_calls_is_judged_as_called(tmp_path: Path) -> None:
    found = _rules(tmp_path, _reconstruct(b"os\nsystem\n"))
    assert found.get("WS-PKL-001") == Severity.CRITICAL, found


@pytest.mark.parametrize(
    ("fun", "aval"),
    [
        (b"collections\nOrderedDict\n", b"}S'weak_type'\n\x89s"),  # allowed, but its __setstate__ gets arr_state
        (b"numpy._core.multiarray\n_reconstruct\n", b"}S'shape'\n(I16\ntsS'weak_type'\n\x89s"),  # a shape too
        (b"numpy._core.multiarray\n_reconstruct\n", b"}"),  # no weak_type
    ],
    ids=["other-fun", "shape", "empty-aval"],
)
def test_arguments_jax_never_writes_are_high(tmp_path: Path, fun: bytes, aval: bytes) -> None:
    assert _rules(tmp_path, _reconstruct(fun, aval)).get("WS-PKL-050") == Severity.HIGH


def test_reconstruct_array_called_through_partial_is_high(tmp_path: Path) -> None:
    blob = (b"\x80\x02cfunctools\npartial\ncjax._src.array\n_reconstruct_array\n\x85R"
            b"(cnumpy._core.multiarray\n_reconstruct\n(S'x'\ntS'y'\n}S'weak_type'\n\x89stR.")  # fmt: skip
    assert _rules(tmp_path, blob).get("WS-PKL-050") == Severity.HIGH


def test_the_array_reconstruct_array_makes_is_sized_as_numpys(tmp_path: Path) -> None:
    """Review 56: NumPy's _reconstruct with a shape of 4e9 items is WS-PKL-048, through _reconstruct_array too."""
    blob = (b"\x80\x02cjax._src.array\n_reconstruct_array\n(cnumpy._core.multiarray\n_reconstruct\n"
            b"(cnumpy\nndarray\n(I4000000000\ntS'b'\ntS'y'\n}S'weak_type'\n\x89stR.")  # fmt: skip
    assert _rules(tmp_path, blob).get("WS-PKL-048") == Severity.HIGH


def _frozen_dict_of_levels(depth: int, shared: bool) -> bytes:
    """FrozenDict(d) as Flax pickles it (FrozenDict, (dict,)), where d nests `depth` levels of {'a': x, 'b': y}: x
    and y the same dict of the level below (the memo shares it) or two dicts of their own (a real tree)."""
    leaf = b"}(X\x01\x00\x00\x00wG\x00\x00\x00\x00\x00\x00\x00\x00u"

    def pair(a: bytes, b: bytes) -> bytes:
        return b"}(X\x01\x00\x00\x00a" + a + b"X\x01\x00\x00\x00b" + b + b"u"

    def tree(level: int) -> bytes:
        return leaf if level == 0 else pair(tree(level - 1), tree(level - 1))

    blob = b"\x80\x02cflax.core.frozen_dict\nFrozenDict\n"
    if not shared:
        return blob + b"(" + tree(depth) + b"tR."
    for level in range(depth):  # each level built and memoised, then dropped from the stack
        made = leaf if level == 0 else pair(b"h" + bytes([level - 1]), b"h" + bytes([level - 1]))
        blob += made + b"q" + bytes([level]) + b"0"
    return blob + b"(h" + bytes([depth - 1]) + b"tR."


def test_a_frozen_dict_of_shared_dicts_is_high(tmp_path: Path) -> None:
    """Review 60: Flax's FrozenDict copies every dict it reaches in its argument, once per path, so dicts the memo
    shares down D levels make 2^D copies (317 bytes took 3.2 GiB and 41 s in Flax 0.12.8). Real FrozenDicts hold a
    tree of dicts of their own."""
    assert _rules(tmp_path, _frozen_dict_of_levels(20, shared=True)).get("WS-PKL-048") == Severity.HIGH
    assert "WS-PKL-048" not in _rules(tmp_path, _frozen_dict_of_levels(6, shared=False))


def test_a_frozen_dict_of_shared_ordered_dicts_is_high(tmp_path: Path) -> None:
    """Review 63: Flax copies dict subclasses too; OrderedDict levels filled by SETITEMS, as pickle writes them."""
    blob = b"\x80\x02ccollections\nOrderedDict\n)Rq\x00(X\x01\x00\x00\x00wK\x00u0"
    for level in range(1, 20):
        below = b"h" + bytes([level - 1])
        blob += (b"ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00a" + below + b"X\x01\x00\x00\x00b" + below
                 + b"uq" + bytes([level]) + b"0")
    blob = b"\x80\x02cflax.core.frozen_dict\nFrozenDict\n" + blob[2:] + b"(h" + bytes([19]) + b"tR."
    assert _rules(tmp_path, blob).get("WS-PKL-048") == Severity.HIGH


def test_a_frozen_dict_of_shared_dict_subclasses_is_high(tmp_path: Path) -> None:
    """Review 64: any dict subclass filled by SETITEMS (SciPy's OptimizeResult, made by NEWOBJ) is copied too."""
    make = b"cscipy.optimize._optimize\nOptimizeResult\n)\x81"
    blob = b"" + make + b"(X\x01\x00\x00\x00wK\x00uq\x000"
    for level in range(1, 20):
        below = b"h" + bytes([level - 1])
        blob += make + b"(X\x01\x00\x00\x00a" + below + b"X\x01\x00\x00\x00b" + below + b"uq" + bytes([level]) + b"0"
    blob = b"\x80\x02cflax.core.frozen_dict\nFrozenDict\n" + blob + b"(h" + bytes([19]) + b"tR."
    assert _rules(tmp_path, blob).get("WS-PKL-048") == Severity.HIGH

