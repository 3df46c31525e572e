"""Sharded checkpoints: one hand-made folder per index check, real `save_pretrained` output stays clean."""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from tests.helpers.scanning import rule_ids, scan
from wscan.config import Config
from wscan.engine import Engine
from wscan.limits import Budget, Limits
from wscan.model import Location, Observation
from wscan.scanners.base import Artifact, Head, ScanContext
from wscan.scanners.shards import ShardIndexScanner, read_index

INDEX = "model.safetensors.index.json"
S1, S2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"


def make_model(
    folder: Path,
    shards: dict[str, dict[str, int]] | None = None,
    weight_map: dict[str, str] | None = None,
    total_size: int | None = None,
) -> Path:
    """Shards of float32 vectors ({file: {tensor: length}}) and an index; by default a consistent pair."""
    folder.mkdir(parents=True, exist_ok=True)
    shards = shards if shards is not None else {S1: {"a": 2}, S2: {"b": 3, "c": 1}}
    for name, tensors in shards.items():
        save_file({t: np.arange(n, dtype=np.float32) for t, n in tensors.items()}, str(folder / name))
    if weight_map is None:
        weight_map = {t: name for name, tensors in shards.items() for t in tensors}
    if total_size is None:
        total_size = 4 * sum(n for tensors in shards.values() for n in tensors.values())
    index = {"metadata": {"total_size": total_size}, "weight_map": weight_map}
    (folder / INDEX).write_text(json.dumps(index, indent=2))
    return folder


# --- consistent checkpoints --------------------------------------------------------------------------


def test_consistent_checkpoint_is_clean(tmp_path: Path) -> None:
    report = scan(make_model(tmp_path / "m"))
    assert rule_ids(report) == set()
    index = next(f for f in report.files if f.path.endswith(INDEX))
    assert index.formats == ("shards",) and index.status == "scanned"


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16
    )
    model = BertModel(config)
    root = tmp_path_factory.mktemp("pretrained")
    model.save_pretrained(root / "safetensors", max_shard_size="1KB", safe_serialization=True)
    model.save_pretrained(root / "bin", max_shard_size="1KB", safe_serialization=False)
    return root


def test_transformers_sharded_safetensors_is_clean(pretrained: Path) -> None:
    folder = pretrained / "safetensors"
    assert len(list(folder.glob("model-*-of-*.safetensors"))) > 1
    report = scan(folder)
    assert [(f.rule_id, f.location.describe(), f.message) for f in report.findings] == []
    assert {f.status for f in report.files if f.path.endswith(".safetensors")} == {"scanned"}


def test_transformers_sharded_pytorch_bin_is_clean(pretrained: Path) -> None:
    report = scan(pretrained / "bin")
    assert [(f.rule_id, f.location.describe(), f.message) for f in report.findings] == []
    assert any(f.path.endswith("pytorch_model.bin.index.json") and f.formats == ("shards",) for f in report.files)


def test_every_safetensors_shard_is_read(pretrained: Path) -> None:
    found = observe(pretrained / "safetensors" / INDEX)
    (layout,) = [o for o in found if o.kind == "shards.layout"]
    shards = len(list((pretrained / "safetensors").glob("*.safetensors")))
    assert (layout.attrs["shards"], layout.attrs["checked"]) == (shards, shards)


def test_hugging_face_cache_snapshot_links_are_not_escapes(tmp_path: Path) -> None:
    source = make_model(tmp_path / "src")
    repo = tmp_path / "hub" / "models--org--name"
    snapshot = repo / "snapshots" / "abc123"
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for i, name in enumerate([S1, S2, INDEX]):
        blob = repo / "blobs" / f"blob{i}"
        shutil.copy(source / name, blob)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / name)
    assert rule_ids(scan(snapshot)) == set()


def test_index_inside_an_archive_is_only_summarised(tmp_path: Path) -> None:
    """Inside a container there is no folder to resolve shard names against: nothing is judged."""
    index = json.dumps({"metadata": {}, "weight_map": {"a": "../../etc/passwd"}}).encode()
    with zipfile.ZipFile(tmp_path / "bundle.zip", "w") as zf:
        zf.writestr(INDEX, index)
    report = scan(tmp_path / "bundle.zip")
    assert report.findings == [] and report.files[0].formats == ("zip", "shards")
    found = run(index, real_path=None)
    assert [(o.kind, dict(o.attrs)) for o in found] == [("shards.layout", {"shards": 1, "checked": False})]


# --- one hand-made folder per check ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        b'{"weight_map": {"a": ',
        b'{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}',
        b'{"weight_map": ["x.safetensors"]}',
        b'{"weight_map": {"a": 1}}',
        b'{"metadata": [], "weight_map": {}}',
        b'{"metadata": {"total_size": "20"}, "weight_map": {}}',
        b'{"metadata": {"total_size": NaN}, "weight_map": {}}',
        b'{"weight_map": {"\xff": "x"}}',
    ],
)
def test_invalid_index(tmp_path: Path, text: bytes) -> None:
    (tmp_path / INDEX).write_bytes(text)
    report = scan(tmp_path)
    assert rule_ids(report) == {"WS-SHD-001"}
    assert report.files[0].status == "failed"


def test_json_that_only_mentions_weight_map_is_not_an_index(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"notes": {"weight_map": {"a": "../x"}}}))
    assert scan(tmp_path).findings == []


def test_missing_shard(tmp_path: Path) -> None:
    folder = make_model(tmp_path / "m")
    (folder / S2).unlink()
    report = scan(folder)
    assert rule_ids(report) == {"WS-SHD-003"}
    assert dict(report.findings[0].evidence) == {"shard": S2, "tensors": 2}


@pytest.mark.parametrize("name", ["../" + S2, "sub/../../" + S2, "..\\" + S2])
def test_shard_name_leaves_the_folder(tmp_path: Path, name: str) -> None:
    folder = make_model(tmp_path / "m", weight_map={"a": S1, "b": name, "c": name})
    shutil.move(folder / S2, tmp_path / S2)  # the file the loader would reach
    report = scan(folder)
    assert rule_ids(report) == {"WS-SHD-002"}
    assert report.findings[0].evidence["reason"] == "parent-folder component"


def test_absolute_shard_name(tmp_path: Path) -> None:
    outside = tmp_path / S2
    folder = make_model(tmp_path / "m", weight_map={"a": S1, "b": str(outside), "c": str(outside)})
    shutil.move(folder / S2, outside)
    report = scan(folder)
    assert rule_ids(report) == {"WS-SHD-002"}
    assert report.findings[0].evidence["reason"] == "absolute path"


@pytest.mark.parametrize(
    "spell",
    [
        lambda text: text.replace('"weight_map"', '"weight\\u005fmap"'),  # json.loads reads the escape
        lambda text: text.replace("{", "{" + " " * 70_000, 1),  # the key past the 64 KiB head
        lambda text: " " * 70_000 + text,  # nothing but whitespace in the head
    ],
    ids=["escaped-key", "key-past-the-head", "whitespace-head"],
)
def test_an_index_is_known_by_its_name(tmp_path: Path, spell: Callable[[str], str]) -> None:
    """transformers finds the index by its name and reads it with json.loads: a review read a file outside the
    folder through indexes whose `weight_map` key wscan's sniffing did not see (they were skipped as text)."""
    outside = tmp_path / S2
    folder = make_model(tmp_path / "m", weight_map={"a": S1, "b": str(outside), "c": str(outside)})
    shutil.move(folder / S2, outside)
    (folder / INDEX).write_text(spell((folder / INDEX).read_text()))
    assert "WS-SHD-002" in rule_ids(scan(folder))


def test_shard_symlink_leaving_the_folder(tmp_path: Path) -> None:
    folder = make_model(tmp_path / "m")
    shutil.move(folder / S2, tmp_path / "elsewhere.safetensors")
    os.symlink("../elsewhere.safetensors", folder / S2)
    report = scan(folder)
    # Discovery also reports the link itself (a weights file: high) and does not follow it.
    assert rule_ids(report) == {"WS-SHD-002", "WS-FILE-014"}
    (escape,) = [f for f in report.findings if f.rule_id == "WS-SHD-002"]
    assert escape.evidence["reason"] == "symbolic link leaves the folder"


def test_unreadable_shard_header(tmp_path: Path) -> None:
    folder = make_model(tmp_path / "m")
    blob = (folder / S2).read_bytes()
    (folder / S2).write_bytes(blob[:8] + b"{" + b"x" * (len(blob) - 9))  # same length, header not JSON
    report = scan(folder)
    assert rule_ids(report) == {"WS-SHD-004", "WS-ST-003"}


def test_tensor_not_in_its_shard(tmp_path: Path) -> None:
    folder = make_model(tmp_path / "m", weight_map={"a": S1, "b": S1, "c": S2})
    report = scan(folder)
    assert rule_ids(report) == {"WS-SHD-005"}
    assert dict(report.findings[0].evidence) == {"tensor": "b", "shard": S1, "found_in": S2}


def test_tensor_stored_twice(tmp_path: Path) -> None:
    shards = {S1: {"a": 2}, S2: {"a": 2, "b": 3}}
    folder = make_model(tmp_path / "m", shards, weight_map={"a": S1, "b": S2})
    report = scan(folder)
    assert rule_ids(report) == {"WS-SHD-006"}
    assert report.findings[0].evidence["shards"] == f"{S1},{S2}"


def test_one_shard_named_several_ways_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`m`, `./m`, `././m`: one file, read once, its header shared (eight spellings of a 9 MB shard held eight
    parsed headers, 4 GB; up to max-members of them). What the index says of it is judged as before."""
    from wscan.scanners import shards as shards_mod

    folder = make_model(tmp_path / "m", {S1: {"a": 2, "b": 3}}, weight_map={"a": S1, "b": f"./{S1}"})
    reads: list[str] = []
    read = shards_mod._read_shard
    monkeypatch.setattr(shards_mod, "_read_shard", lambda artifact, shard, ctx: reads.append(shard.name) or read(
        artifact, shard, ctx))
    report = Engine(Config(jobs=0)).scan([folder])
    assert reads == [S1]
    # a and b held by two shards, twice the bytes the index says, shard 2 of 2 missing: as when it was read twice
    assert rule_ids(report) == {"WS-SHD-006", "WS-SHD-008", "WS-SHD-009"}


def test_unlisted_tensor_stored_twice_is_one_duplicate(tmp_path: Path) -> None:
    shards = {S1: {"a": 2, "x": 1}, S2: {"b": 3, "x": 1}}
    folder = make_model(tmp_path / "m", shards, weight_map={"a": S1, "b": S2})
    assert rule_ids(scan(folder)) == {"WS-SHD-006"}


def test_unlisted_tensor(tmp_path: Path) -> None:
    folder = make_model(tmp_path / "m", weight_map={"a": S1, "b": S2})
    report = scan(folder)
    assert rule_ids(report) == {"WS-SHD-007"}
    assert dict(report.findings[0].evidence) == {"tensor": "c", "shard": S2}


def test_total_size_mismatch(tmp_path: Path) -> None:
    report = scan(make_model(tmp_path / "m", total_size=999))
    assert rule_ids(report) == {"WS-SHD-008"}
    assert dict(report.findings[0].evidence) == {"declared": 999, "actual": 24}


@pytest.mark.parametrize(
    ("names", "reason"),
    [
        (["model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors"], "shard 3 of 3"),
        (["model-00001-of-00002.safetensors", "weights.safetensors"], "does not follow"),
        (["model-00001-of-00002.safetensors", "model-00002-of-00003.safetensors"], "disagree"),
        (["model-00001-of-00002.safetensors", "other-00002-of-00002.safetensors"], "disagree"),
        (["model-00000-of-00001.safetensors", "model-00001-of-00001.safetensors"], "outside 1..1"),
    ],
)
def test_shard_naming(tmp_path: Path, names: list[str], reason: str) -> None:
    folder = make_model(tmp_path / "m", {names[0]: {"a": 2}, names[1]: {"b": 3}})
    report = scan(folder)
    assert rule_ids(report) == {"WS-SHD-009"}
    assert any(reason in str(f.evidence["reason"]) for f in report.findings)


def test_orphan_shard(tmp_path: Path) -> None:
    folder = make_model(tmp_path / "m")
    save_file({"z": np.zeros(1, dtype=np.float32)}, str(folder / "model-00001-of-00003.safetensors"))
    (folder / "pytorch_model-00001-of-00002.bin").write_bytes(b"\x80\x04N.")  # another format: not an orphan
    report = scan(folder)
    assert rule_ids(report) == {"WS-SHD-010"}
    assert dict(report.findings[0].evidence) == {"shard": "model-00001-of-00003.safetensors"}


def test_too_many_shards_is_a_limit(tmp_path: Path) -> None:
    weight_map = {f"t{i}": f"model-{i:05d}-of-00009.safetensors" for i in range(1, 10)}
    (tmp_path / INDEX).write_text(json.dumps({"weight_map": weight_map}))
    report = Engine(Config(limits=Limits(max_members=3))).scan([tmp_path])
    assert rule_ids(report) == {"WS-FILE-002"}


# --- hostile input never raises ----------------------------------------------------------------------


def run(blob: bytes, real_path: Path | None, limits: Limits | None = None) -> list[Observation]:
    limits = limits or Limits()
    artifact = Artifact(Location(INDEX), len(blob), lambda: io.BytesIO(blob), name=INDEX, real_path=real_path)
    items = ShardIndexScanner().scan(artifact, ScanContext(limits, Budget(limits)))
    return [o for o in items if isinstance(o, Observation)]


def observe(path: Path) -> list[Observation]:
    return run(path.read_bytes(), path)


def test_accepts() -> None:
    def accepts(data: bytes) -> bool:
        return ShardIndexScanner().accepts(Head(data, data, len(data), "x"))

    assert accepts(b'\n {"metadata": {}, "weight_map" : {}}')
    assert not accepts(b'["weight_map"]')
    assert not accepts(b'{"weights": {}}')


_INDEX_TEXT = json.dumps(
    {"metadata": {"total_size": 24}, "weight_map": {"a": S1, "b": S2, "c": S2}}, indent=2
).encode()


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_model(tmp_path_factory.mktemp("fuzz") / "m")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(st.tuples(st.integers(0, len(_INDEX_TEXT) - 1), st.integers(0, 255)), max_size=6),
    cut=st.integers(0, len(_INDEX_TEXT)),
)
def test_index_mutations_never_raise(model_folder: Path, edits: list[tuple[int, int]], cut: int) -> None:
    blob = bytearray(_INDEX_TEXT)
    for position, value in edits:
        blob[position] = value
    data = bytes(blob[:cut])
    read_index(data)
    found = run(data, model_folder / INDEX)
    assert not any(o.kind == "scan.error" for o in found)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.one_of(st.text(max_size=30), st.text(min_size=250, max_size=5000)), min_size=1, max_size=5))
def test_arbitrary_shard_names_never_raise(model_folder: Path, names: list[str]) -> None:
    index: dict[str, Any] = {"weight_map": {f"t{i}": name for i, name in enumerate(names)}}
    data = json.dumps(index).encode()
    found = run(data, model_folder / INDEX)
    escapes = {str(o.attrs["shard"]) for o in found if o.kind == "shards.path_escape"}
    assert all(n in escapes for n in names if ".." in n.replace("\\", "/").split("/") or n.startswith("/"))
