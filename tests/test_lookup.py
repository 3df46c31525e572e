"""Paths that scanned files name or link to are resolved without a lookup on a network automount share."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import wscan
from wscan import lookup
from wscan.lookup import resolve

SHARE = "/net/attacker.example/share"  # under /net: an automounter mounts attacker.example's export on a lookup


def rule_ids(path: Path) -> set[str]:
    return {finding.rule_id for finding in wscan.scan([path]).findings}


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every path looked up through os (stat, lstat, readlink, listing, open): os.path and pathlib go through
    these too."""
    seen: list[str] = []
    for name in ("stat", "lstat", "readlink", "scandir", "listdir", "open"):
        real = getattr(os, name)

        def record(path: object = ".", *args: object, _real: object = real, **kwargs: object) -> object:
            seen.append(os.fsdecode(path) if isinstance(path, str | bytes | os.PathLike) else repr(path))
            return _real(path, *args, **kwargs)  # type: ignore[operator]

        monkeypatch.setattr(os, name, record)
    yield seen


def _tree(root: Path) -> None:
    """Folders, relative and absolute links, chains, a link through `..`, a dangling link and a loop."""
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "file").write_text("x")
    (root / "rel").symlink_to("a/b")
    (root / "abs").symlink_to(root / "a")
    (root / "chain").symlink_to("rel")
    (root / "a" / "up").symlink_to("../a/b/..")
    (root / "dangling").symlink_to("nowhere/else")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")


@pytest.mark.parametrize("relative", [
    "a/b/file", "rel/file", "abs/b/file", "chain/../a", "rel/..", "a/up/b/file", "dangling", "dangling/../x",
    "loop1", "loop1/x", "missing/../a", "abs/../rel/./file", ".", "..", "a//b/", "rel/file/..",
])  # fmt: skip
def test_resolve_agrees_with_realpath_off_the_network(tmp_path: Path, relative: str) -> None:
    _tree(tmp_path)
    assert resolve(tmp_path / relative, tmp_path) == os.path.realpath(tmp_path / relative)


@settings(max_examples=60, deadline=None)
@given(links=st.lists(st.sampled_from(["a", "a/b", "..", "../..", "x", "/", "a/../b", "l1", "l2/x", "b/.."]),
                      min_size=3, max_size=3),
       path=st.lists(st.sampled_from(["a", "b", "l0", "l1", "l2", "..", ".", "x"]), min_size=1, max_size=6))
def test_resolve_agrees_with_realpath_on_generated_trees(tmp_path_factory: pytest.TempPathFactory, links: list[str],
                                                         path: list[str]) -> None:  # fmt: skip
    root = tmp_path_factory.mktemp("tree")
    (root / "a" / "b").mkdir(parents=True)
    for number, target in enumerate(links):
        (root / "a" / f"l{number}").symlink_to(target)
        (root / f"l{number}").symlink_to(f"a/l{number}")
    candidate = root.joinpath("a", *path)
    assert resolve(candidate, root) == os.path.realpath(candidate)


def test_a_link_onto_a_share_is_not_followed(tmp_path: Path, lookups: list[str]) -> None:
    (tmp_path / "hop").symlink_to(SHARE + "/models")
    (tmp_path / "second").symlink_to("hop/x")
    (tmp_path / "dots").symlink_to("../" * 40 + "net/attacker.example")
    for name in ("hop", "second", "second/y", "dots/z"):
        assert resolve(tmp_path / name, tmp_path) is None, name
    assert resolve("/nowhere/../net/attacker.example/x", tmp_path) is None  # normalizing loaders go there
    assert not [path for path in lookups if "attacker" in path], lookups


def test_a_scan_on_a_share_looks_up_that_share_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan the user starts on /net/host may look things up on host; another host is still off limits."""
    net = tmp_path / "net"
    (net / "host" / "model").mkdir(parents=True)
    (net / "other").mkdir()
    (net / "host" / "model" / "near").symlink_to("../shared")
    (net / "host" / "model" / "far").symlink_to(net / "other" / "x")
    monkeypatch.setattr(lookup, "automount_roots", lambda: (str(net),))
    lookup._home_share.cache_clear()
    try:
        home = net / "host" / "model"
        assert resolve(home / "near", home) == str(net / "host" / "shared")
        assert resolve(home / "far", home) is None
        assert resolve(home / "near", tmp_path) is None
    finally:
        lookup._home_share.cache_clear()


def _onnx_with_external_data(folder: Path, location: str) -> None:
    tensor = helper.make_tensor("w", TensorProto.FLOAT, [1], [0.0])
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "4")):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [tensor])  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(folder / "model.onnx"))


def test_a_scan_never_looks_up_a_share_that_a_model_folder_links_to(tmp_path: Path, lookups: list[str]) -> None:
    """Every way a folder leads onto a share: a linked weights file, folder, code file, a shard, external data, a
    config path through a link. Each is reported (high), and nothing under /net is looked up."""
    cases = {
        "weights": ("model.safetensors", "WS-FILE-016"),
        "folder": ("custom_generate", "WS-FILE-016"),
        "code": ("modeling_x.py", "WS-FILE-016"),
    }
    for case, (name, rule) in cases.items():
        model = tmp_path / case
        model.mkdir()
        (model / name).symlink_to(f"{SHARE}/{name}")
        assert rule in rule_ids(model), case
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "part").symlink_to(SHARE)
    (shards / "model.safetensors.index.json").write_text(json.dumps({
        "metadata": {}, "weight_map": {"w": "part/model-00001-of-00001.safetensors"}}))  # fmt: skip
    assert "WS-SHD-002" in rule_ids(shards)
    external = tmp_path / "external"
    external.mkdir()
    (external / "data").symlink_to(SHARE)
    _onnx_with_external_data(external, "data/weights.bin")
    assert "WS-ONNX-004" in rule_ids(external)
    config = tmp_path / "config"
    config.mkdir()
    (config / "elsewhere").symlink_to(SHARE)
    spec = ["diffusers", "AutoencoderKL", {"pretrained_model_name_or_path": str(config / "elsewhere" / "vae")}]
    (config / "modular_model_index.json").write_text(json.dumps({"_class_name": "X", "vae": spec}))
    assert "WS-REPO-013" in rule_ids(config)
    assert not [path for path in lookups if "attacker" in path], [path for path in lookups if "attacker" in path]
