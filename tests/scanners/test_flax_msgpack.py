"""Flax msgpack checkpoints: files Flax and transformers wrote pass with their parameters counted, each hostile
variant (tests/data/flax/README.md, with what Flax's loader did) gets its finding, and the walker agrees with
`msgpack` and with Flax's array decoding (re-done here with NumPy) on generated and damaged files."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.mutations import damaged
from tests.helpers.scanning import rule_ids, scan, scan_bytes
from wscan.limits import Budget, Limits
from wscan.model import Location
from wscan.scanners.base import Artifact, Head, ScanContext
from wscan.scanners.flax_msgpack import FlaxMsgpackScanner, looks_like_flax
from wscan.scanners.flax_msgpack_tree import DTYPE_SIZES, MSGPACK_MAX_DEPTH, Caps, ParsedMsgpack, walk

DATA = Path(__file__).resolve().parents[1] / "data" / "flax"
BENIGN = sorted(p for p in DATA.rglob("*.msgpack") if "hostile" not in p.parts)
HOSTILE = {
    "truncated.msgpack": {"WS-FLAX-001"},
    "pickle-after.msgpack": {"WS-FLAX-002", "WS-PKL-001"},
    "shape-larger.msgpack": {"WS-FLAX-003"},
    "shape-inferred.msgpack": {"WS-FLAX-003"},
    "dtype-big-endian.msgpack": {"WS-FLAX-004"},
    "array-extra-field.msgpack": {"WS-FLAX-003"},
    "array-pickle-payload.msgpack": {"WS-FLAX-003", "WS-PKL-001"},
    "extension-pickle.msgpack": {"WS-FLAX-006", "WS-PKL-001"},
    "bytes-pickle.msgpack": {"WS-PKL-001"},
    "timestamp.msgpack": {"WS-FLAX-006"},
    "duplicate-key.msgpack": {"WS-FLAX-007"},
    "deep-nesting.msgpack": {"WS-FLAX-001"},
    "key-not-utf8.msgpack": {"WS-FLAX-001"},
    "reserved-byte.msgpack": {"WS-FLAX-001"},
    "chunked-chunk-missing.msgpack": {"WS-FLAX-005"},
    "chunked-shape-larger.msgpack": {"WS-FLAX-005"},
}
HIGH_FLAX = ("flax.malformed", "flax.trailing_data", "flax.bad_array", "flax.bad_chunks")


def walked(data: bytes, cap: int = 1 << 30) -> ParsedMsgpack:
    return walk(io.BytesIO(data), len(data), Caps(cap))


def kinds(parsed: ParsedMsgpack) -> set[str]:
    return {problem.kind for problem in parsed.problems}


# --- Flax's side, re-done with NumPy: what flax.serialization writes and what msgpack_restore does -------------


def flax_bytes(tree: Any) -> bytes:
    """`flax.serialization.msgpack_serialize` for a tree of dicts, scalars and NumPy arrays (no chunking)."""

    def ext(value: Any) -> Any:
        if isinstance(value, np.ndarray | np.generic):
            array = np.asarray(value)
            code = 1 if isinstance(value, np.ndarray) else 3
            payload = msgpack.packb((array.shape, array.dtype.name, array.tobytes()), use_bin_type=True)
            return msgpack.ExtType(code, payload)
        if isinstance(value, complex):
            return msgpack.ExtType(2, msgpack.packb((value.real, value.imag)))
        return value

    return msgpack.packb(tree, default=ext, strict_types=True)


def _dtype(name: bytes) -> np.dtype[Any]:
    """np.dtype as JAX leaves it: ml_dtypes' names (bfloat16, int4, ...) registered, each read here as raw bytes
    of its size (ml_dtypes is not a test dependency)."""
    text = name.decode("latin-1")
    if text in DTYPE_SIZES and not hasattr(np, text):
        return np.dtype(f"V{DTYPE_SIZES[text]}")
    return np.dtype(name)


def _ext_hook(code: int, data: bytes) -> Any:
    if code in (1, 3):  # flax.serialization._ndarray_from_bytes
        shape, name, buffer = msgpack.unpackb(data, raw=True)
        array = np.frombuffer(buffer, dtype=_dtype(name), count=-1, offset=0).reshape(shape, order="C")
        return array if code == 1 else array[()]
    if code == 2:
        parts = msgpack.unpackb(data)
        return complex(parts[0], parts[1])
    return msgpack.ExtType(code, data)


def _unchunk(tree: Any) -> Any:
    """flax.serialization._unchunk_array_leaves_in_place."""

    def join(chunked: dict[str, Any]) -> Any:
        shape = tuple(chunked["shape"][str(i)] for i in range(len(chunked["shape"])))
        chunks = tuple(chunked["chunks"][str(i)] for i in range(len(chunked["chunks"])))
        return np.concatenate(chunks).reshape(shape)

    if isinstance(tree, dict):
        if "__msgpack_chunked_array__" in tree:
            return join(tree)
        for key, value in tree.items():
            if isinstance(value, dict) and "__msgpack_chunked_array__" in value:
                tree[key] = join(value)
            elif isinstance(value, dict):
                _unchunk(value)
    return tree


def flax_restore(data: bytes) -> Any:
    """flax.serialization.msgpack_restore, with the NumPy `_dtype` above."""
    return _unchunk(msgpack.unpackb(data, ext_hook=_ext_hook, raw=False, strict_map_key=False))


def msgpack_reads(data: bytes) -> bool:
    """Whether msgpack alone reads the file (extension values left undecoded)."""
    try:
        msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception:
        return False
    return True


def parameters(data: bytes) -> int:
    counted = 0

    def hook(code: int, payload: bytes) -> None:
        nonlocal counted
        if code in (1, 3):
            counted += math.prod(msgpack.unpackb(payload, raw=True)[0])

    msgpack.unpackb(data, ext_hook=hook, raw=False, strict_map_key=False)
    return counted


# --- files Flax and transformers wrote -------------------------------------------------------------------------


def test_the_real_files_are_all_there() -> None:
    names = {p.relative_to(DATA).as_posix() for p in BENIGN}
    assert {"linen-params.msgpack", "train-state.msgpack", "chunked.msgpack", "mixed-values.msgpack",
            "bert-tiny-flax/flax_model.msgpack", "bert-tiny-flax-sharded/flax_model-00001-of-00002.msgpack"} <= names
    assert {p.name for p in (DATA / "hostile").glob("*.msgpack")} == set(HOSTILE)


@pytest.mark.parametrize("path", BENIGN, ids=lambda p: p.relative_to(DATA).as_posix())
def test_files_flax_wrote_pass_with_their_parameters(path: Path) -> None:
    report = scan(path)
    assert not report.findings, [f.message for f in report.findings]
    (result,) = report.files
    assert result.status == "scanned" and "flax-msgpack" in result.formats
    data = path.read_bytes()
    parsed = walked(data)
    assert parsed.complete and not parsed.problems
    assert parsed.parameters == parameters(data) > 0
    flax_restore(data)  # and the reference loader reads it (it would raise otherwise)


def test_model_folders_transformers_wrote_pass() -> None:
    for folder in ("bert-tiny-flax", "bert-tiny-flax-sharded"):
        report = scan(DATA / folder)
        assert not report.findings, [f.message for f in report.findings]
        (model,) = report.models
        assert model.architecture == "BertModel" and model.parameters and model.parameters > 6000
        assert "flax-msgpack" in model.formats


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_variants_get_their_findings(name: str) -> None:
    assert rule_ids(scan(DATA / "hostile" / name)) == HOSTILE[name]


def test_every_file_flax_refused_is_flagged_high() -> None:
    """The README records what msgpack_restore did with each file: every one it refused is flagged high or worse."""
    rows = re.findall(r"\| `hostile/([^`]+)` \| [^|]+ \| (refused|loaded)", (DATA / "README.md").read_text())
    assert len(rows) == len(HOSTILE)
    for name, outcome in rows:
        report = scan(DATA / "hostile" / name)
        worst = max(f.severity for f in report.findings)
        assert outcome == "loaded" or worst.name in ("HIGH", "CRITICAL"), name


# --- the walker against msgpack and Flax, on hand-made and generated files ----------------------------------------


def test_nesting_stops_where_msgpack_does() -> None:
    inside = b"\x81\xa1a" + b"\x91" * (MSGPACK_MAX_DEPTH - 2) + b"\x90"
    assert msgpack_reads(inside) and not walked(inside).problems
    deeper = b"\x81\xa1a" + b"\x91" * (MSGPACK_MAX_DEPTH - 1) + b"\x90"
    assert not msgpack_reads(deeper) and kinds(walked(deeper)) == {"flax.malformed"}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\x81\xa1a\x91\x01", set()),  # nothing wrong
        (b"\x81\x91\x01\xc0", {"flax.malformed"}),  # an array as a key: msgpack cannot hash it
        (b"\x82\xa1a\x01\xa1a\x02", {"flax.duplicate_key"}),
        (b"\x82\x01\x01\xc3\x02", {"flax.duplicate_key"}),  # 1 and True are one dict key
        (b"\x82\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\x01\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\x02", set()),  # two NaNs
        (b"\x81\xa1a\xd6\xff\x00\x00\x00\x01", {"flax.unknown_extension"}),  # a timestamp
        (b"\x81\xa1a\xc7\x03\xff\x00\x00\x01", {"flax.malformed"}),  # a timestamp msgpack cannot read
        (b"\x81\xa1a\xd7\xff" + b"\xff" * 8, {"flax.malformed"}),  # nanoseconds past a second
        (b"\x81\xd4\x05\x00\xc0", {"flax.bad_array"}),  # an extension as a key
        (b"\x81\xa1a\xc4\x03abc", set()),  # a byte string (scanned as a blob, not a finding)
        (b"\x81\xa1a\xc0\x00", {"flax.trailing_data"}),
    ],
)
def test_hand_made_structures(data: bytes, expected: set[str]) -> None:
    assert kinds(walked(data)) == expected
    assert msgpack_reads(data) == ("flax.malformed" not in expected and "flax.trailing_data" not in expected)


def test_a_string_past_the_kept_length_is_still_checked_as_utf8() -> None:
    long_key = "k" * 10_000
    good = msgpack.packb({long_key: 1, "b": 2})
    assert not walked(good).problems
    bad = good.replace(b"k" * 10, b"k" * 9 + b"\xff", 1)
    assert kinds(walked(bad)) == {"flax.malformed"} and not msgpack_reads(bad)
    twice = b"\x82" + msgpack.packb(long_key) + b"\x01" + msgpack.packb(long_key) + b"\x02"
    assert kinds(walked(twice)) == {"flax.duplicate_key"}


def test_tensor_bytes_are_skipped_not_read() -> None:
    tree = {"params": {f"w{i}": np.zeros((256, 256), np.float32) for i in range(8)}}
    data = flax_bytes(tree)
    reads: list[int] = []

    class Counting(io.BytesIO):
        def read(self, n: int | None = -1) -> bytes:
            chunk = super().read(n)
            reads.append(len(chunk))
            return chunk

    parsed = walk(Counting(data), len(data), Caps(1 << 30))
    assert parsed.complete and parsed.arrays == 8 and not parsed.problems
    assert sum(reads) < len(data) // 4  # 2 MiB of zeros, a few 64 KiB buffers of structure


def test_the_structure_cap_is_a_scan_limit(tmp_path: Path) -> None:
    data = msgpack.packb({"names": ["x" * 100] * 2000})
    parsed = walked(data, cap=10_000)
    assert kinds(parsed) == {"flax.over_limit"}
    limits = Limits(max_header_bytes=10_000)
    artifact = Artifact(Location("t.msgpack"), len(data), lambda: io.BytesIO(data), name="t.msgpack")
    found = list(FlaxMsgpackScanner().scan(artifact, ScanContext(limits, Budget(limits))))
    assert [getattr(o, "kind", "") for o in found] == ["scan.limit"]


def test_what_it_accepts() -> None:
    def head(data: bytes) -> Head:
        return Head(data, data, len(data), "x")

    assert FlaxMsgpackScanner().accepts(head(flax_bytes({"params": {}})))
    assert looks_like_flax(b"\xde\x00\x20\xa6params")
    for other in (b"\x80\x04\x95", b"\x80\x02}q\x00.", b"\x81\x01\xc0", b"PK\x03\x04", b"\x89PNG\r\n", b""):
        assert not looks_like_flax(other), other


_KEYS = st.text(min_size=0, max_size=8)
_ARRAYS = st.builds(
    lambda name, shape, seed: np.random.default_rng(seed).integers(0, 255, size=shape).astype(name),
    st.sampled_from(["float32", "float16", "int8", "uint8", "int32", "bool", "float64", "complex64"]),
    st.lists(st.integers(0, 3), max_size=3).map(tuple),
    st.integers(0, 1000),
)
_LEAVES = st.one_of(
    _ARRAYS,
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=10),
    st.booleans(),
    st.none(),
    st.builds(np.float32, st.floats(-1e6, 1e6, width=32)),
    st.complex_numbers(allow_nan=False, allow_infinity=False),
)
_TREES = st.dictionaries(_KEYS, st.recursive(_LEAVES, lambda inner: st.dictionaries(_KEYS, inner, max_size=4),
                                             max_leaves=12), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_TREES)
def test_generated_state_dicts_pass(tree: dict[str, Any]) -> None:
    data = flax_bytes(tree)
    parsed = walked(data)
    assert parsed.complete and not parsed.problems, parsed.problems
    assert parsed.parameters == parameters(data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_TREES, where=st.floats(0, 1), how=st.sampled_from(["cut", "set", "insert"]), byte=st.integers(0, 255))
def test_damaged_state_dicts_agree_with_msgpack_and_flax(
    tree: dict[str, Any], where: float, how: str, byte: int
) -> None:
    data = damaged(flax_bytes(tree), where, how, byte)
    found = kinds(walked(data))
    # The msgpack layer exactly: malformed or trailing bytes where msgpack refuses the file, and only there.
    assert msgpack_reads(data) == (not found & {"flax.malformed", "flax.trailing_data"}), found
    try:
        flax_restore(data)
    except Exception:
        assert found, "Flax refuses the file but wscan found nothing"
    else:
        assert not found & {"flax.malformed", "flax.trailing_data"}


# --- sharded Flax checkpoints: the index against the leaves transformers merges ----------------------------------


def _sharded_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "sharded"
    folder.mkdir()
    for path in (DATA / "bert-tiny-flax-sharded").iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    return folder


def test_flax_shards_are_compared_with_their_index(tmp_path: Path) -> None:
    """The index transformers wrote lists exactly the leaves of each shard, and their bytes add up to total_size."""
    from wscan.scanners.flax_msgpack_tree import Caps as TreeCaps

    folder = _sharded_copy(tmp_path)
    index = json.loads((folder / "flax_model.msgpack.index.json").read_text())
    for shard in sorted(set(index["weight_map"].values())):
        data = (folder / shard).read_bytes()
        parsed = walk(io.BytesIO(data), len(data), TreeCaps(1 << 30, leaf_names=True))
        assert set(parsed.leaves) == {k for k, v in index["weight_map"].items() if v == shard}
    data_sizes = sum(walked((folder / s).read_bytes()).nbytes for s in set(index["weight_map"].values()))
    assert data_sizes == index["metadata"]["total_size"]
    assert not scan(folder).findings


def test_a_tensor_in_two_flax_shards_is_found(tmp_path: Path) -> None:
    """transformers merges the shards' flattened leaves in order: a second copy silently replaces the first."""
    folder = _sharded_copy(tmp_path)
    first, second = "flax_model-00001-of-00002.msgpack", "flax_model-00002-of-00002.msgpack"
    tree = msgpack.unpackb((folder / second).read_bytes(), raw=False)
    first_tree = msgpack.unpackb((folder / first).read_bytes(), raw=False)
    tree["embeddings"] = first_tree["embeddings"]  # the embeddings again, in the last shard
    (folder / second).write_bytes(msgpack.packb(tree))
    assert {"WS-SHD-006", "WS-SHD-008"} <= rule_ids(scan(folder))


def test_flax_shard_size_and_missing_tensors(tmp_path: Path) -> None:
    folder = _sharded_copy(tmp_path)
    index_path = folder / "flax_model.msgpack.index.json"
    index = json.loads(index_path.read_text())
    index["metadata"]["total_size"] += 4
    index["weight_map"]["pooler/dense/extra"] = "flax_model-00002-of-00002.msgpack"
    index_path.write_text(json.dumps(index))
    assert {"WS-SHD-005", "WS-SHD-008"} <= rule_ids(scan(folder))


def test_a_flax_shard_msgpack_cannot_read_is_invalid(tmp_path: Path) -> None:
    folder = _sharded_copy(tmp_path)
    shard = folder / "flax_model-00002-of-00002.msgpack"
    shard.write_bytes(shard.read_bytes()[:-10])
    assert {"WS-SHD-004", "WS-FLAX-001"} <= rule_ids(scan(folder))


# --- review: helper 213's red team (payloads in texts, keys and other layouts Flax writes; arrays NumPy refuses) ---

TEXT_PICKLE = b"cos\nsystem\n(S'echo flax'\ntR."  # protocol 0: plain UTF-8 text (never loaded here)
BINARY_PICKLE = b"\x80\x02cposix\nsystem\nq\x00X\x09\x00\x00\x00echo flaxq\x01\x85q\x02Rq\x03."


def _state(**extra: Any) -> dict[Any, Any]:
    tree: dict[Any, Any] = {"params": {"dense": {"kernel": np.ones((2, 2), np.float32)}}}
    tree.update(extra)
    return tree


@pytest.mark.parametrize(
    "data",
    [
        flax_bytes(_state(note=TEXT_PICKLE.decode())),  # a text value
        flax_bytes({"params": {TEXT_PICKLE.decode(): np.ones(2, np.float32)}}),  # a text key
        flax_bytes({"params": {"w": np.ones(2, np.float32)}, "x": {BINARY_PICKLE: 0}}),  # a byte-string key
        flax_bytes({0: _state(), 1: BINARY_PICKLE}),  # msgpack_serialize({0: ..., 1: ...}): int keys
        flax_bytes([_state(), BINARY_PICKLE]),  # msgpack_serialize([...]): a list at the top
    ],
    ids=["text-value", "text-key", "bytes-key", "int-keys", "top-list"],
)
def test_a_pickle_anywhere_flax_keeps_data_is_found(tmp_path: Path, data: bytes) -> None:
    assert msgpack_reads(data)
    report = scan_bytes(tmp_path, data, "flax_model.msgpack")
    assert "WS-PKL-001" in rule_ids(report) and "flax-msgpack" in report.files[0].formats


def test_names_are_not_scanned_as_blobs() -> None:
    for path in BENIGN:
        assert not walked(path.read_bytes()).blobs, path


def test_files_that_only_open_like_msgpack_are_left_to_their_own_format(tmp_path: Path) -> None:
    """0x80 opens every pickle, 0x93 every .npy: those are not msgpack read to their end, and are not taken."""
    np.save(tmp_path / "a.npy", np.arange(4))
    for data in (BINARY_PICKLE, (tmp_path / "a.npy").read_bytes(), b"\x92\x01"):
        report = scan_bytes(tmp_path, data, "x.bin")
        assert "flax-msgpack" not in report.files[0].formats


def test_an_array_of_a_dtype_flax_does_not_write_has_its_bytes_scanned(tmp_path: Path) -> None:
    payload = msgpack.packb(([1], "S" + str(len(BINARY_PICKLE)), BINARY_PICKLE), use_bin_type=True)
    data = msgpack.packb({"params": {"blob": msgpack.ExtType(1, payload)}})
    flax_restore(data)  # Flax loads it: the pickle is in the loaded state as bytes
    assert rule_ids(scan_bytes(tmp_path, data, "flax_model.msgpack")) == {"WS-FLAX-004", "WS-PKL-001"}


@pytest.mark.parametrize("shape", [(0, 2**40, 2**40), (0, 2**64 - 1)])
def test_an_empty_array_numpy_cannot_shape_is_flagged(shape: tuple[int, ...]) -> None:
    payload = msgpack.packb((shape, "float32", b""), use_bin_type=True)
    data = msgpack.packb({"w": msgpack.ExtType(1, payload)})
    with pytest.raises(ValueError):
        flax_restore(data)
    assert kinds(walked(data)) == {"flax.bad_array"}
    chunk = msgpack.ExtType(1, msgpack.packb(((0,), "float32", b""), use_bin_type=True))
    chunked = msgpack.packb({"w": {"__msgpack_chunked_array__": True, "shape": {str(i): d for i, d in enumerate(shape)},
                                   "chunks": {"0": chunk}}})
    with pytest.raises(ValueError):
        flax_restore(chunked)
    assert kinds(walked(chunked)) == {"flax.bad_chunks"}


def test_more_chunks_than_are_kept_is_flagged() -> None:
    chunk = msgpack.ExtType(1, msgpack.packb(((1,), "float32", bytes(4)), use_bin_type=True))
    count = 65_537
    data = msgpack.packb({"w": {"__msgpack_chunked_array__": True, "shape": {"0": count},
                                "chunks": {str(i): chunk for i in range(count)}}})
    flax_restore(data)  # a valid chunked array, of a size Flax never chunks
    assert kinds(walked(data)) == {"flax.bad_chunks"}


def test_maps_nested_past_what_flax_recurses_into_are_flagged() -> None:
    data = b"\x81\xa1a" * 1000 + b"\xc0"
    assert msgpack_reads(data)
    with pytest.raises(RecursionError):
        flax_restore(data)
    assert kinds(walked(data)) == {"flax.too_deep"}
    assert not walked(b"\x81\xa1a" * 200 + b"\xc0").problems


def test_dtypes_numpy_names_that_flax_writes_pass() -> None:
    tree = {"long": np.ones(2, np.longdouble), "day": np.array(["2024-01-01"], "datetime64[D]"),
            "gap": np.array([5], "timedelta64[s]")}
    data = flax_bytes(tree)
    flax_restore(data)
    assert not walked(data).problems


def test_byte_strings_past_the_cap_are_one_limit() -> None:
    data = msgpack.packb({"params": {}, "many": [BINARY_PICKLE] * 30}, use_bin_type=True)
    limits = Limits(max_members=10)
    artifact = Artifact(Location("t.msgpack"), len(data), lambda: io.BytesIO(data), name="t.msgpack")
    found = list(FlaxMsgpackScanner().scan(artifact, ScanContext(limits, Budget(limits))))
    assert sum(isinstance(item, Artifact) for item in found) == 10
    assert [o.kind for o in found if not isinstance(o, Artifact)] == ["scan.limit", "fact.flax"]
