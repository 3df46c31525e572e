"""CompressedScanner: every codec, broken and hostile streams, and the limits."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import zlib
from pathlib import Path
from typing import Any

import joblib
import lz4.frame
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joblib.numpy_pickle_compat import write_zfile

from wscan.limits import Budget, BudgetExceeded, Limits
from wscan.model import Location, Observation
from wscan.scanners import compressed as compressed_mod
from wscan.scanners.base import Artifact, Head, ScanContext
from wscan.scanners.compressed import CompressedScanner, sniff

PICKLE = b"\x80\x04\x95\x1a\x00\x00\x00\x00\x00\x00\x00\x8c\x05posix\x8c\x06system\x93\x8c\x02id\x85R."

CODECS = {
    "gzip": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "lzma": lambda data: lzma.compress(data, format=lzma.FORMAT_ALONE),
    "zlib": zlib.compress,
}
if compressed_mod._zstd() is not None:
    CODECS["zstd"] = compressed_mod._zstd().compress


def _zfile(data: bytes) -> bytes:
    """joblib's pre-0.10 Z-file, written by joblib's own writer."""
    buffer = io.BytesIO()
    write_zfile(buffer, data)
    return buffer.getvalue()


CODECS["lz4"] = lz4.frame.compress
CODECS["joblib-zfile"] = _zfile


def run(data: bytes, limits: Limits | None = None, name: str = "model.pkl.gz") -> tuple[list[Observation], Any]:
    """Scan and return (observations, (child name, child size, child bytes) or None)."""
    limits = limits or Limits()
    artifact = Artifact(Location(name), len(data), lambda: io.BytesIO(data), name=name)
    ctx = ScanContext(limits=limits, budget=Budget(limits))
    observations, child = [], None
    for item in CompressedScanner().scan(artifact, ctx):
        if isinstance(item, Observation):
            observations.append(item)
        else:
            with item.opener() as first, item.opener() as second:  # two independent opens
                content = first.read()
                assert second.read(3) == content[:3]
            child = (item.name, item.size, content)
    return observations, child


def kinds(observations: list[Observation]) -> list[str]:
    return [o.kind for o in observations]


def accepts(data: bytes, raw_data: bool = False) -> bool:
    return CompressedScanner().accepts(Head(data[:65536], data[-65558:], len(data), "x", raw_data))


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_each_codec_round_trips(codec: str) -> None:
    data = CODECS[codec](PICKLE * 100)
    assert accepts(data)
    observations, child = run(data)
    assert [(o.kind, dict(o.attrs)) for o in observations] == [("compressed.layout", {"codec": codec})]
    assert child[1:] == (len(PICKLE) * 100, PICKLE * 100)


def test_joblib_compressed_dump_is_zlib(tmp_path: Path) -> None:
    path = tmp_path / "model.joblib"
    joblib.dump({"a": np.arange(5)}, path, compress=3)
    data = path.read_bytes()
    assert sniff(data) == "zlib"
    observations, child = run(data, name="model.joblib")
    assert kinds(observations) == ["compressed.layout"]
    assert child[2].startswith(b"\x80")  # the pickle inside


def test_random_and_raw_bytes_are_not_accepted() -> None:
    rng = np.random.default_rng(0)
    assert not accepts(rng.bytes(65536))
    assert not accepts(b"\x78\x9c" + rng.bytes(4096))  # a zlib-looking header on noise
    assert not accepts(zlib.compress(PICKLE), raw_data=True)  # weak magic: not for raw tensor bytes
    assert accepts(gzip.compress(PICKLE), raw_data=True)


def test_truncated_stream_is_corrupt_but_prefix_is_yielded() -> None:
    data = gzip.compress(PICKLE * 2000)
    observations, child = run(data[: len(data) // 2])
    corrupt = [dict(o.attrs) for o in observations if o.kind == "compressed.corrupt"]
    assert corrupt and corrupt[0]["codec"] == "gzip"
    assert child[2] and (PICKLE * 2000).startswith(child[2])


def test_truncated_zlib_is_corrupt() -> None:
    data = zlib.compress(PICKLE * 100)[:-6]
    observations, child = run(data, name="m.joblib")
    assert "compressed.corrupt" in kinds(observations)
    assert (PICKLE * 100).startswith(child[2])


def test_multi_member_gzip_is_concatenated() -> None:
    observations, child = run(gzip.compress(b"first ") + gzip.compress(b"second"))
    assert kinds(observations) == ["compressed.layout"]
    assert child[2] == b"first second"


def test_trailing_zeros_pass_and_trailing_garbage_is_corrupt() -> None:
    observations, child = run(gzip.compress(PICKLE) + b"\x00" * 64)
    assert kinds(observations) == ["compressed.layout"] and child[2] == PICKLE
    observations, child = run(gzip.compress(PICKLE) + b"garbage!")
    assert "compressed.corrupt" in kinds(observations) and child[2] == PICKLE


def test_bomb_stops_and_keeps_the_prefix() -> None:
    data = gzip.compress(PICKLE + b"\x00" * 5_000_000)
    limits = Limits(ratio_floor_bytes=1_000_000, max_compression_ratio=50)
    observations, child = run(data, limits)
    [bomb] = [dict(o.attrs) for o in observations if o.kind == "archive.bomb"]
    assert bomb["ratio"] > 50 and bomb["size"] < 5_000_000
    assert child[2].startswith(PICKLE)


def test_member_limit() -> None:
    data = bz2.compress(bytes(range(256)) * 20_000)
    observations, child = run(data, Limits(max_member_bytes=1_000_000))
    assert next(dict(o.attrs) for o in observations if o.kind == "archive.member_limit")["limit"] == 1_000_000
    assert child[1] <= 1_000_000 + compressed_mod.CHUNK


@pytest.mark.parametrize("codec", ["lz4", "joblib-zfile"])
def test_bomb_in_joblib_codecs(codec: str) -> None:
    data = CODECS[codec](PICKLE + b"\x00" * 5_000_000)
    observations, child = run(data, Limits(ratio_floor_bytes=1_000_000, max_compression_ratio=50), "m.joblib")
    assert any(o.kind == "archive.bomb" for o in observations)
    assert child[2].startswith(PICKLE)


def test_zfile_header_as_joblib_reads_it() -> None:
    """The space joblib <= 0.8.4 wrote after the length is skipped; a length joblib cannot parse is no Z-file."""
    data = _zfile(PICKLE)
    observations, child = run(data[:21] + b" " + data[21:], name="m.pkl")
    assert kinds(observations) == ["compressed.layout"] and child[2] == PICKLE
    assert sniff(b"ZF" + b"not hex".ljust(19) + data[21:]) is None
    assert sniff(b"ZF" + b" +0X1_0".ljust(19) + data[21:]) == "joblib-zfile"  # int(field, 16) accepts it


def test_budget_is_charged() -> None:
    with pytest.raises(BudgetExceeded):
        run(lzma.compress(b"\x00" * 3_000_000), Limits(max_decompressed_bytes=1_000_000))


@pytest.mark.parametrize(("name", "member"), [("a.pkl.gz", "a.pkl"), ("x.tgz", "x.tar"), ("blob", "blob.gzip-decoded")])
def test_child_names(name: str, member: str) -> None:
    assert run(gzip.compress(b"x"), name=name)[1][0] == member


@settings(max_examples=200, deadline=None)
@given(
    codec=st.sampled_from(sorted(CODECS)),
    cut=st.integers(min_value=1, max_value=10_000),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(1, 255)), max_size=5),
)
def test_truncated_or_bit_flipped_streams_never_raise(codec: str, cut: int, flips: list[tuple[int, int]]) -> None:
    data = bytearray(CODECS[codec](PICKLE * 50))
    for where, mask in flips:
        data[where % len(data)] ^= mask
    data = data[: min(cut, len(data))]
    with contextlib.suppress(BudgetExceeded):
        run(bytes(data), Limits(max_decompressed_bytes=50_000_000))
