"""Configs inside pickled checkpoints: the hyperparameters Lightning and NeMo keep in a `.ckpt` are instantiated when
the model loads, as a YAML config's are. NeMo's models build every Hydra `_target_` of their config in __init__
(the CVE-2025-23304 path, here through `torch.load` instead of a `.nemo` YAML), and Lightning before 2.6.6 imported
and called whatever `_instantiator` the hyperparameters named (Lightning #21822)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from tests.helpers.scanning import rule_ids, scan

NEMO_LIKE = {
    "preprocessor": {"_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor", "features": 80},
    "encoder": {"_target_": "nemo.collections.asr.modules.ConformerEncoder", "feat_in": 80, "n_layers": 2},
    "optim": {"name": "adamw", "lr": 0.001, "sched": {"name": "NoamAnnealing", "warmup_steps": "${trainer.steps}"}},
    "trainer": {"steps": 1000, "devices": [0, 1]},
    "head": {"_target_": "torch.nn.Linear", "in_features": 4, "out_features": 2},
}


def checkpoint(path: Path, hyper_parameters: object) -> Path:
    """A Lightning-style checkpoint, written by torch.save as Lightning's Trainer writes one."""
    torch.save({"state_dict": {"w": torch.zeros(2)}, "hyper_parameters": hyper_parameters,
                "pytorch-lightning_version": "2.5.0"}, path)  # fmt: skip
    return path


def _instantiate_encoder(path: Path) -> None:
    """What NeMo's model does with its config, in a subprocess: torch.load, then Hydra on `cfg.encoder`."""
    code = ("import sys, torch; from hydra.utils import instantiate\n"
            "instantiate(torch.load(sys.argv[1], weights_only=False)['hyper_parameters']['cfg']['encoder'])")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=120, capture_output=True)


@pytest.mark.parametrize(("as_omegaconf", "expected"), [(False, set()), (True, {"WS-PKL-003"})])
def test_hydra_trained_checkpoints_name_only_what_they_build(
    tmp_path: Path, as_omegaconf: bool, expected: set[str]
) -> None:
    """A NeMo-like config with NeMo and PyTorch targets: as plain dicts, clean. As a DictConfig it stays high for
    OmegaConf's classes alone (comparing two of them resolves interpolations while the pickle loads, so they are
    off the allowlist: tests/test_library_gadgets.py); its targets add nothing."""
    config = OmegaConf.create(NEMO_LIKE) if as_omegaconf else NEMO_LIKE
    report = scan(checkpoint(tmp_path / "model.ckpt", {"cfg": config}))
    assert rule_ids(report) == expected, [f.message for f in report.findings]


@pytest.mark.parametrize("as_omegaconf", [True, False])
def test_a_gadget_target_in_a_checkpoint_is_critical_and_runs(tmp_path: Path, as_omegaconf: bool) -> None:
    """`_target_: os.makedirs` in the hyperparameters: instantiating the loaded config, as NeMo's ModelPT does with
    each module's config, makes the folder. wscan judges it as it judges the YAML (WS-CFG-001)."""
    marker = tmp_path / "instantiated-marker"
    hostile = {**NEMO_LIKE, "encoder": {"_target_": "os.makedirs", "name": str(marker)}}
    config = OmegaConf.create(hostile) if as_omegaconf else hostile
    path = checkpoint(tmp_path / "model.ckpt", {"cfg": config})
    findings = {(f.rule_id, f.evidence.get("callable")) for f in scan(path).findings}
    assert ("WS-CFG-001", "os.makedirs") in findings

    code = ("import sys, torch; from hydra.utils import instantiate\n"
            "ckpt = torch.load(sys.argv[1], weights_only=False)\n"
            "instantiate(ckpt['hyper_parameters']['cfg']['encoder'])")  # fmt: skip
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=120, capture_output=True)
    assert marker.is_dir()


@pytest.mark.parametrize(
    ("instantiator", "expected"),
    [
        ("lightning.pytorch.cli.instantiate_module", set()),  # what LightningCLI writes
        ("pytorch_lightning.cli.instantiate_module", set()),
        ("mypackage.build", {"WS-CFG-022"}),
        ("os.system", {"WS-CFG-022", "WS-CFG-001"}),
    ],
)
def test_a_checkpoint_naming_its_own_instantiator_is_high(
    tmp_path: Path, instantiator: str, expected: set[str]
) -> None:
    """Lightning before 2.6.6 (`_load_state` in lightning/pytorch/core/saving.py) pops `_instantiator` from the
    hyperparameters, imports it and calls it with the model class; 2.6.6 takes only its own instantiate_module."""
    hparams = {"_instantiator": instantiator, "_class_path": "mypackage.models.Net", "lr": 0.1}
    assert rule_ids(scan(checkpoint(tmp_path / "model.ckpt", hparams))) == expected


def test_an_instantiator_without_a_dot_is_data(tmp_path: Path) -> None:
    """Lightning splits `_instantiator` at its last dot to import it, and the load fails on a name without one: a
    vocabulary that maps each word to itself (its own tokens among them) is data (review 29)."""
    words = ["_instantiator", "_target_x", "hello"]
    path = tmp_path / "vocab.pkl"
    path.write_bytes(pickle.dumps({"vocab": {word: word for word in words}}, protocol=2))
    token = words[0]
    with pytest.raises(ValueError):
        _module_path, _name = token.rsplit(".", 1)  # what _load_state does with it
    assert not rule_ids(scan(path))
    path.write_bytes(pickle.dumps({"vocab": {"_instantiator": "mypackage.build"}}, protocol=2))
    assert rule_ids(scan(path)) == {"WS-CFG-022"}  # a dotted name is still judged, wherever it is
    # An OmegaConf interpolation resolves to another key's text when Lightning converts the hyperparameters (review
    # 32 had Lightning import unittest.__main__ so): computed at load time.
    path.write_bytes(pickle.dumps({"hyper_parameters": {"_instantiator": "${x}", "x": "mypackage.build"}}, protocol=2))
    assert "WS-CFG-003" in rule_ids(scan(path))


def _node_renamed_after_build() -> bytes:
    """An OmegaConf node BUILT with `_val` os.system, whose state dict a later SETITEM sets to torch.nn.Linear, put
    under `_target_`: the node keeps what BUILD copied (Node.__setstate__ updates its __dict__ from the dict)."""
    return (b"\x80\x02comegaconf.nodes\nAnyNode\nq\x00)\x81q\x01}q\x02X\x04\x00\x00\x00_val"
            b"X\t\x00\x00\x00os.systemsb0h\x02X\x04\x00\x00\x00_valX\x0f\x00\x00\x00torch.nn.Linears0"
            b"}X\x08\x00\x00\x00_target_h\x01s.")  # fmt: skip


def test_a_node_state_changed_after_its_build_is_judged_as_built(tmp_path: Path) -> None:
    data = _node_renamed_after_build()
    assert pickle.loads(data)["_target_"]._val == "os.system"  # the real unpickler, with OmegaConf's own class
    path = tmp_path / "hparams.pkl"
    path.write_bytes(data)
    findings = {(f.rule_id, f.evidence.get("callable")) for f in scan(path).findings}
    assert ("WS-CFG-001", "os.system") in findings


def test_a_target_the_pickle_builds_is_read_or_dynamic(tmp_path: Path) -> None:
    """A `_target_` made by str(text) is that text; one no string the machine can read (str of bytes, a call's
    result) may name anything: a dynamic target."""
    read = b"\x80\x02}X\x08\x00\x00\x00_target_cbuiltins\nstr\nX\t\x00\x00\x00os.system\x85Rs."
    unread = b"\x80\x03}X\x08\x00\x00\x00_target_cbuiltins\nstr\nC\tos.system\x85Rs."
    assert pickle.loads(read) == {"_target_": "os.system"}
    assert pickle.loads(unread) == {"_target_": "b'os.system'"}
    (tmp_path / "read.pkl").write_bytes(read)
    (tmp_path / "unread.pkl").write_bytes(unread)
    assert "WS-CFG-001" in rule_ids(scan(tmp_path / "read.pkl"))
    assert "WS-CFG-003" in rule_ids(scan(tmp_path / "unread.pkl"))


def test_an_instantiator_in_a_lightning_hparams_file_is_high(tmp_path: Path) -> None:
    """Lightning's loggers write the hyperparameters to hparams.yaml too, and load_from_checkpoint(hparams_file=...)
    reads them from there: the same key is judged the same way."""
    (tmp_path / "hparams.yaml").write_text("_instantiator: mypackage.build\nlr: 0.1\n")
    assert rule_ids(scan(tmp_path / "hparams.yaml")) == {"WS-CFG-022"}
    (tmp_path / "hparams.yaml").write_text("_instantiator: lightning.pytorch.cli.instantiate_module\nlr: 0.1\n")
    assert rule_ids(scan(tmp_path / "hparams.yaml")) == set()


def pyannote_checkpoint(path: Path, module: str, name: str) -> Path:
    """What pyannote.audio's Model.on_save_checkpoint adds to a Lightning checkpoint (pyannote.audio 4.0.7)."""
    torch.save({"state_dict": {"w": torch.zeros(2)}, "pytorch-lightning_version": "2.5.0",
                "pyannote.audio": {"versions": {"pyannote.audio": "4.0.7"},
                                   "architecture": {"module": module, "class": name}}}, path)  # fmt: skip
    return path


@pytest.mark.parametrize(
    ("module", "name", "expected"),
    [
        ("pyannote.audio.models.segmentation.PyanNet", "PyanNet", set()),  # what pyannote writes
        ("mypackage.models", "Net", {"WS-CFG-002"}),
        ("os", "system", {"WS-CFG-001"}),
    ],
)
def test_pyannote_imports_the_module_its_checkpoint_names(
    tmp_path: Path, module: str, name: str, expected: set[str]
) -> None:
    """pyannote.audio's Model.from_pretrained loads the checkpoint, imports `architecture.module` and calls
    `load_from_checkpoint` on its `class` (review 19 noticed it): the name is judged as a config target."""
    report = scan(pyannote_checkpoint(tmp_path / "pytorch_model.bin", module, name))
    assert rule_ids(report) == expected, [f.message for f in report.findings]


def _text(value: str) -> bytes:
    return b"X" + len(value).to_bytes(4, "little") + value.encode()


def test_an_architecture_changed_after_it_is_stored_is_read_as_the_loader_reads_it(tmp_path: Path) -> None:
    """The dict is stored under `architecture` naming pyannote's class, then changed in place to os.system: the loader
    reads the dict as the stream leaves it."""
    data = (b"\x80\x02}q\x00" + _text("architecture") + b"}q\x01" + _text("module")
            + _text("pyannote.audio.models.segmentation.PyanNet") + b"s" + _text("class") + _text("PyanNet") + b"ss"
            + b"h\x01" + _text("module") + _text("os") + b"s" + _text("class") + _text("system") + b"s0.")  # fmt: skip
    assert pickle.loads(data) == {"architecture": {"module": "os", "class": "system"}}
    path = tmp_path / "checkpoint.pkl"
    path.write_bytes(data)
    assert ("WS-CFG-001", "os.system") in {(f.rule_id, f.evidence.get("callable")) for f in scan(path).findings}


class _Built:
    """Pickles as `callable(*args)`: how a review built the dicts below (dict(pairs), OrderedDict(pairs), ...)."""

    def __init__(self, func: object, *args: object) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return self.func, self.args


def test_dicts_built_from_pairs_or_with_computed_keys_are_read(tmp_path: Path) -> None:
    """Review 23: a config dict made by dict(pairs), OrderedDict(pairs) or copyreg._reconstructor(dict, dict, pairs),
    or keyed by numpy.str_('_target_') (a str subclass, equal to the key Hydra looks up), built os.makedirs with
    Hydra while wscan saw no `_target_` item; review 24 then used a frozenset of pairs, dicts of two keys as pairs,
    and a numpy.str_ value. Proved for dict(pairs) and the numpy key and value."""
    import collections
    import copyreg

    import numpy

    made = {name: tmp_path / f"made-{name}" for name in ("pairs", "numpy")}
    variants = {
        "pairs": _Built(dict, [("_target_", "os.makedirs"), ("name", str(made["pairs"]))]),
        "ordered": _Built(collections.OrderedDict, [("_target_", "os.makedirs"), ("name", "x")]),
        "reconstructor": _Built(copyreg._reconstructor, dict, dict, [("_target_", "os.makedirs"), ("name", "x")]),
        "numpy": {numpy.str_("_target_"): numpy.str_("os.makedirs"), "name": str(made["numpy"])},
        # Review 24: any iterable of twos is pairs to dict(): a frozenset of pairs, a dict of two keys
        "frozenset": _Built(dict, frozenset({("_target_", "os.makedirs"), ("name", "x")})),
        "two-keys": _Built(dict, [{"_target_": "torch.nn.Identity", "os.makedirs": 0}, {"name": 0, "x": 0}]),
    }
    for name, config in variants.items():
        path = checkpoint(tmp_path / f"{name}.ckpt", {"cfg": {"encoder": config}})
        findings = {(f.rule_id, f.evidence.get("callable")) for f in scan(path).findings}
        assert ("WS-CFG-001", "os.makedirs") in findings, name
        if name in made:
            _instantiate_encoder(path)
            assert made[name].is_dir(), name


def test_more_distinct_targets_than_judged_is_high_and_repeats_are_judged_once(tmp_path: Path) -> None:
    """Review 23 put 1,000 harmless targets before os.makedirs, past the cap of names judged: a name met again is
    judged once now, and distinct names past the cap are WS-CFG-006 (high)."""
    gadget = {"_target_": "os.makedirs", "name": "x"}
    same = [{"_target_": "torch.nn.Linear"}] * 1000 + [gadget]
    assert "WS-CFG-001" in rule_ids(scan(checkpoint(tmp_path / "same.ckpt", {"layers": same})))
    distinct = [{"_target_": f"torch.nn.Layer{i}"} for i in range(1000)] + [gadget]
    assert "WS-CFG-006" in rule_ids(scan(checkpoint(tmp_path / "distinct.ckpt", {"layers": distinct})))


def test_a_target_too_long_to_judge_is_high(tmp_path: Path) -> None:
    """Review 23: Hydra walks a dotted name attribute by attribute; a name of 69 parts ended on torch.os.makedirs
    past the 64 parts judged. Longer than that, it is an unjudged (dynamic) target."""
    name = "torch.nn.functional." * 22 + "torch.os.makedirs"
    assert "WS-CFG-003" in rule_ids(scan(checkpoint(tmp_path / "long.ckpt", {"cfg": {"_target_": name}})))
    (tmp_path / "long.yaml").write_text(f"model:\n  _target_: {name}\n")
    assert "WS-CFG-003" in rule_ids(scan(tmp_path / "long.yaml"))


def test_an_instantiator_or_architecture_in_an_ordered_dict_is_read(tmp_path: Path) -> None:
    """Review 23: Lightning's hyperparameters and pyannote's architecture as OrderedDicts made from pairs."""
    import collections

    hparams = _Built(collections.OrderedDict, [("_instantiator", "mypackage.build"), ("lr", 0.1)])
    assert "WS-CFG-022" in rule_ids(scan(checkpoint(tmp_path / "lightning.ckpt", hparams)))
    architecture = _Built(collections.OrderedDict, [("module", "os"), ("class", "system")])
    torch.save({"pyannote.audio": {"architecture": architecture}}, tmp_path / "pyannote.bin")
    assert "WS-CFG-001" in rule_ids(scan(tmp_path / "pyannote.bin"))


def test_numbers_mapped_to_dotted_text_are_data(tmp_path: Path) -> None:
    """Review 24's false-positive check: an index of numpy integers to host names (`www.x.com`) names nothing a
    loader builds; only a key that is `_target_` (or reads as it) makes its value a target."""
    import numpy

    table = {numpy.int64(i): f"host{i}.example.com" for i in range(1200)}
    assert rule_ids(scan(checkpoint(tmp_path / "hosts.ckpt", {"hosts": table}))) == set()


def test_text_and_pairs_built_other_ways_are_read(tmp_path: Path) -> None:
    """Review 25: `_target_` keys made by allowed calls (copyreg._reconstructor, numpy.str_ and torch's
    TorchVersion called on the text; copyreg.__newobj__ and __newobj_ex__ through REDUCE too, which pickle will not
    write), pairs the machine could not all read (one pair of another kind, 4,098 pairs, rows of a numpy array) and
    a numpy.str_ value whose BUILD state carries a decoy `_val`. Hydra built os.makedirs from each; proved here for
    TorchVersion and the decoy."""
    import collections
    import copyreg

    import numpy
    from torch.torch_version import TorchVersion

    made = {name: tmp_path / f"made-{name}" for name in ("torchversion", "decoy")}

    def keyed(key: object, name: str = "x") -> dict[object, object]:
        return {key: "os.makedirs", "name": name}

    decoy = _Decoy("os.makedirs")
    variants: dict[str, object] = {
        "reconstructor": keyed(_Built(copyreg._reconstructor, str, str, "_target_")),
        "numpy-call": keyed(_Built(numpy.str_, "_target_")),
        "torchversion": keyed(_Built(TorchVersion, "_target_"), str(made["torchversion"])),
        "one-unread-pair": _Built(dict, [("_target_", "os.makedirs"), ("name", "x"), collections.deque(["a", 1])]),
        "many-pairs": _Built(dict, [("exist_ok", True)] * 4096 + [("_target_", "os.makedirs"), ("name", "x")]),
        "numpy-rows": _Built(dict, numpy.array([["_target_", "os.makedirs"], ["name", "x"]])),
        "decoy": {"_target_": decoy, "name": str(made["decoy"])},
    }
    for name, config in variants.items():
        path = checkpoint(tmp_path / f"{name}.ckpt", {"cfg": {"encoder": config}})
        found = rule_ids(scan(path))
        assert found & {"WS-CFG-001", "WS-CFG-003"}, (name, found)
        if name in made:
            _instantiate_encoder(path)
            assert made[name].is_dir(), name


class _Decoy:
    """Pickles as numpy.str_(text) given a BUILD state {'_val': 'torch.nn.Linear'}: the str is the text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __reduce__(self) -> tuple[object, ...]:
        import numpy

        return numpy.str_, (self.text,), {"_val": "torch.nn.Linear"}


def _keyed_raw(key: bytes) -> bytes:
    """Protocol 3 `{<key>: 'os.makedirs', 'name': 'x'}`, the key as the opcodes given build it."""
    return b"\x80\x03}(" + key + b"X\x0b\x00\x00\x00os.makedirsX\x04\x00\x00\x00nameX\x01\x00\x00\x00xu."


class _Scalar:
    """Pickles as numpy's scalar rebuild from a dtype and raw bytes, as numpy.str_ pickles."""

    def __init__(self, dtype: object, data: bytes) -> None:
        self.dtype, self.data = dtype, data

    def __reduce__(self) -> tuple[object, ...]:
        from numpy._core.multiarray import scalar

        return scalar, (self.dtype, self.data)


class _Dtype:
    """Pickles as numpy.dtype(text) with no BUILD state: the byte order is the text's."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __reduce__(self) -> tuple[object, ...]:
        import numpy

        return numpy.dtype, (self.text, False, True)


def test_keys_decoded_from_bytes_or_big_endian_text_are_read(tmp_path: Path) -> None:
    """Review 26: `_target_` keys the loader decodes, which wscan read as no text: a numpy.str_ whose dtype is
    '>U8' with no BUILD state, or whose data is longer than its item (NumPy cuts it), and str(b'_target_', codec)
    made by copyreg.__newobj__, __newobj_ex__ or NEWOBJ. The real unpickler gives each key as `_target_`; Hydra
    built os.makedirs from the first (proved here)."""
    made = tmp_path / "made-big-endian"
    numpy_keys = {
        "big-endian": _Scalar(_Dtype(">U8"), "_target_".encode("utf-32-be")),
        "longer-data": _Scalar(_Dtype("<U8"), "_target_zzzz".encode("utf-32-le")),
    }
    for name, key in numpy_keys.items():
        config = {key: "os.makedirs", "name": str(made) if name == "big-endian" else "x"}
        path = checkpoint(tmp_path / f"{name}.ckpt", {"cfg": {"encoder": config}})
        assert "_target_" in torch.load(path, weights_only=False)["hyper_parameters"]["cfg"]["encoder"], name
        assert ("WS-CFG-001", "os.makedirs") in {(f.rule_id, f.evidence.get("callable")) for f in scan(path).findings}
    _instantiate_encoder(tmp_path / "big-endian.ckpt")
    assert made.is_dir()

    decoded = {
        "newobj-reduce": b"ccopyreg\n__newobj__\n(cbuiltins\nstr\nC\x08_target_X\x05\x00\x00\x00asciitR",
        "newobj-ex-reduce": b"ccopyreg\n__newobj_ex__\n(cbuiltins\nstr\n(C\x08_target_X\x05\x00\x00\x00asciit}tR",
        "newobj": b"cbuiltins\nstr\n(C\x08_target_X\x05\x00\x00\x00asciit\x81",
        "utf-16": b"cbuiltins\nstr\n(C\x10" + "_target_".encode("utf-16-le") + b"X\x08\x00\x00\x00utf-16let\x81",
        "keyword": b"cbuiltins\nstr\n)}(X\x06\x00\x00\x00objectC\x08_target_X\x08\x00\x00\x00encodingX\x04"
                   b"\x00\x00\x00utf8u\x92",
    }  # fmt: skip
    for name, key in decoded.items():
        data = _keyed_raw(key)
        assert pickle.loads(data) == {"_target_": "os.makedirs", "name": "x"}, name
        (tmp_path / f"{name}.pkl").write_bytes(data)
        findings = {(f.rule_id, f.evidence.get("callable")) for f in scan(tmp_path / f"{name}.pkl").findings}
        assert ("WS-CFG-001", "os.makedirs") in findings, name


def test_a_text_key_the_machine_cannot_read_with_a_text_value_is_an_unread_target(tmp_path: Path) -> None:
    """A key made by a str class from bytes in a codec wscan does not look up (cp1252: a lookup imports a codec
    module) is unread: high, and its value is judged as a target too. A numpy integer key stays data."""
    unread = _keyed_raw(b"cbuiltins\nstr\n(C\x08_target_X\x06\x00\x00\x00cp1252tR")
    assert pickle.loads(unread) == {"_target_": "os.makedirs", "name": "x"}
    (tmp_path / "unread.pkl").write_bytes(unread)
    findings = {(f.rule_id, f.evidence.get("callable")) for f in scan(tmp_path / "unread.pkl").findings}
    assert {"WS-CFG-003", "WS-CFG-001"} <= {rule for rule, _ in findings}
    number = _keyed_raw(b"cnumpy.core.multiarray\nscalar\ncnumpy\ndtype\nX\x02\x00\x00\x00i8\x89\x88\x87R"
                        b"C\x08\x01\x00\x00\x00\x00\x00\x00\x00\x86R")  # fmt: skip
    (tmp_path / "number.pkl").write_bytes(number)
    assert rule_ids(scan(tmp_path / "number.pkl")) == set()


def _attribute_dict(monkeypatch: pytest.MonkeyPatch) -> type[dict[str, object]]:
    """A dict subclass named as Lightning's AttributeDict, which pickles by that name (Lightning is not installed)."""
    import types

    class AttributeDict(dict[str, object]):
        pass

    AttributeDict.__module__ = "lightning.fabric.utilities.data"
    AttributeDict.__qualname__ = "AttributeDict"
    for name in ("lightning", "lightning.fabric", "lightning.fabric.utilities", AttributeDict.__module__):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setattr(sys.modules[AttributeDict.__module__], "AttributeDict", AttributeDict, raising=False)
    return AttributeDict


@pytest.mark.parametrize("key", ["hparams", "module_arguments"])
def test_lightning_hyperparameters_given_as_rows_are_read_or_unread(
    tmp_path: Path, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 26: Lightning's `_load_state` merges the 0.7-era keys `hparams` and `module_arguments` with
    dict.update, which takes any iterable of pairs: rows of a numpy array (object or unicode, any order) or a list of
    pairs carrying `_instantiator`, which it imports and calls (review 27 proved it with Lightning 2.5.6). A list of
    pairs is read pair by pair; an array is an unread target (high). AttributeDict(rows) and EasyDict(rows) build a
    dict as dict(rows) does."""
    import easydict
    import numpy

    rows = [["_instantiator", "os.system"], ["lr", "0.1"]]
    variants: dict[str, object] = {
        "list": rows,
        "object-array": numpy.array(rows, dtype=object),
        "unicode-array": numpy.array(rows),
        "fortran-array": numpy.asfortranarray(numpy.array(rows, dtype=object)),
    }
    for name, value in variants.items():
        path = tmp_path / f"{name}.ckpt"
        torch.save({"state_dict": {}, key: value, "hyper_parameters": {"lr": 0.1}}, path)
        merged: dict[object, object] = {}
        merged.update(torch.load(path, weights_only=False)[key])  # as _load_state does
        assert merged["_instantiator"] == "os.system", name
        expected = {"WS-CFG-022", "WS-CFG-001"} if name == "list" else {"WS-CFG-003"}
        assert expected <= rule_ids(scan(path)), name

    for builder in (_attribute_dict(monkeypatch), easydict.EasyDict):
        built = _Built(builder, numpy.array(rows, dtype=object))
        assert pickle.loads(pickle.dumps(built))["_instantiator"] == "os.system"
        assert "WS-CFG-003" in rule_ids(scan(checkpoint(tmp_path / "built.ckpt", built))), builder
    plain = _attribute_dict(monkeypatch)(lr=0.1, _instantiator="lightning.pytorch.cli.instantiate_module")
    assert rule_ids(scan(checkpoint(tmp_path / "plain.ckpt", plain))) == set()


def test_hyperparameters_no_update_takes_pairs_from_are_data(tmp_path: Path) -> None:
    """Review 27's false positives: under `hparams` dict.update raises on a list of numbers, a tuple of text, a
    namespace, a float array, dicts of one key, so the load fails before any `_instantiator`; and Lightning updates
    `hyper_parameters` with the caller's arguments first, which fails on anything but a mapping."""
    import types

    import numpy

    values: list[object] = [[0.001, 64, "adam"], ("lr", 0.1), types.SimpleNamespace(lr=0.1),
                            numpy.array([0.1, 0.2, 0.3]), [{"lr": 0.1}, {"lr": 0.01}]]  # fmt: skip
    for index, value in enumerate(values):
        for key in ("hparams", "hyper_parameters"):
            path = tmp_path / f"{key}-{index}.ckpt"
            torch.save({"state_dict": {}, key: value}, path)
            with pytest.raises((TypeError, ValueError, AttributeError)):
                {}.update(torch.load(path, weights_only=False)[key])
            assert rule_ids(scan(path)) == set(), (key, value)
    rows = [["_instantiator", "os.system"]]
    for index, value in enumerate([rows, numpy.array(rows, dtype=object)]):
        path = tmp_path / f"unreachable-{index}.ckpt"
        torch.save({"state_dict": {}, "hyper_parameters": value}, path)
        with pytest.raises(AttributeError):
            torch.load(path, weights_only=False)["hyper_parameters"].update({})  # what load_from_checkpoint does first
        assert rule_ids(scan(path)) == set(), index


def _text_raw(value: str) -> bytes:
    encoded = value.encode()
    return b"X" + len(encoded).to_bytes(4, "little") + encoded


class _NamedDtype:
    """Pickles as numpy.dtype(text) with a BUILD state that sets the item size (and byte order)."""

    def __init__(self, text: str, state: tuple[object, ...]) -> None:
        self.text, self.state = text, state

    def __reduce__(self) -> tuple[object, ...]:
        import numpy

        return numpy.dtype, (self.text, False, True), self.state


def test_keys_and_pairs_review_27_built_are_read_or_unread(tmp_path: Path) -> None:
    """Review 27: a numpy.str_ key whose dtype is spelled 'str', 'str_' or 'unicode' (the size in its BUILD state),
    which Hydra instantiated; a pair list turned into a `_target_` pair by SETITEMS after it was appended (Hydra made
    the folder, real Lightning imported os.system); EasyDict(rows) as a Hydra config."""
    import easydict
    import numpy

    made = tmp_path / "made-dtype"
    for kind in ("str", "str_", "unicode"):
        key = _Scalar(_NamedDtype(kind, (3, "<", None, None, None, 32, 4, 8)), "_target_".encode("utf-32-le"))
        path = checkpoint(tmp_path / f"{kind}.ckpt", {"cfg": {"encoder": {key: "os.makedirs", "name": str(made)}}})
        assert "_target_" in torch.load(path, weights_only=False)["hyper_parameters"]["cfg"]["encoder"]
        assert ("WS-CFG-001", "os.makedirs") in {(f.rule_id, f.evidence.get("callable")) for f in scan(path).findings}
    _instantiate_encoder(tmp_path / "str.ckpt")
    assert made.is_dir()

    changed = (b"\x80\x02cbuiltins\ndict\n]q\x01]q\x02(" + _text_raw("a") + _text_raw("b") + b"ea("
               + _text_raw("name") + _text_raw("x") + b"lah\x02(K\x00" + _text_raw("_target_") + b"K\x01"
               + _text_raw("os.makedirs") + b"u0\x85R.")  # fmt: skip
    assert pickle.loads(changed) == {"_target_": "os.makedirs", "name": "x"}
    (tmp_path / "changed.pkl").write_bytes(changed)
    assert "WS-CFG-003" in rule_ids(scan(tmp_path / "changed.pkl"))

    rows = numpy.array([["_target_", "os.makedirs"], ["name", "x"]], dtype=object)
    path = checkpoint(tmp_path / "easydict.ckpt", {"cfg": {"encoder": _Built(easydict.EasyDict, rows)}})
    assert "WS-CFG-003" in rule_ids(scan(path))


def test_pyannote_architectures_review_27_hid_are_read_or_unread(tmp_path: Path) -> None:
    """Review 27: pyannote's `architecture` with numpy.str_ keys, with `module` and `class` past the 4,096 items a
    dict keeps (torch.save of a plain dict), and as ChainMap(OrderedDict(pairs)) or EasyDict(rows). pyannote reads
    `architecture['module']` and `['class']` from each, all of which resolve to os.system."""
    import collections

    import easydict
    import numpy

    architectures: dict[str, object] = {
        "numpy-keys": {numpy.str_("module"): "os", numpy.str_("class"): "system"},
        "many": {f"k{i}": 0 for i in range(4096)} | {"module": "os", "class": "system"},
        "chainmap": _Built(collections.ChainMap, _Built(collections.OrderedDict, [("module", "os"),
                                                                                   ("class", "system")])),
        "easydict": _Built(easydict.EasyDict, numpy.array([["module", "os"], ["class", "system"]], dtype=object)),
    }  # fmt: skip
    for name, architecture in architectures.items():
        path = tmp_path / f"{name}.bin"
        torch.save({"state_dict": {}, "pyannote.audio": {"architecture": architecture}}, path)
        loaded = torch.load(path, weights_only=False)["pyannote.audio"]["architecture"]
        assert (loaded["module"], loaded["class"]) == ("os", "system"), name
        assert rule_ids(scan(path)) & {"WS-CFG-001", "WS-CFG-003"}, name
    # A ChainMap answers from its first map, a dict's items from its last: every map's names are judged.
    benign = {"module": "pyannote.audio.models.segmentation", "class": "PyanNet"}
    chained = _Built(collections.ChainMap, {"module": "os", "class": "system"}, benign)
    torch.save({"state_dict": {}, "pyannote.audio": {"architecture": chained}}, tmp_path / "first.bin")
    assert torch.load(tmp_path / "first.bin", weights_only=False)["pyannote.audio"]["architecture"]["module"] == "os"
    assert "WS-CFG-001" in rule_ids(scan(tmp_path / "first.bin"))


def test_python2_ordered_dicts_of_many_items_are_read_in_full(tmp_path: Path) -> None:
    """A Python 2 OrderedDict pickles as OrderedDict([[key, value], ...]); past the 4,096 items the machine keeps
    per list, the pairs are still read: 5,000 plain ones pass (they were an unread target), a `_target_` pair past
    them is judged, and an item that is no pair the machine can read is an unread target."""
    import collections

    many = [[f"k{i}", i] for i in range(5000)]
    plain = _Built(collections.OrderedDict, many)
    assert rule_ids(scan(checkpoint(tmp_path / "plain.ckpt", {"cfg": plain}))) == set()
    target = _Built(collections.OrderedDict, [*many, ["_target_", "os.makedirs"]])
    path = checkpoint(tmp_path / "target.ckpt", {"cfg": {"encoder": target}})
    assert ("WS-CFG-001", "os.makedirs") in {(f.rule_id, f.evidence.get("callable")) for f in scan(path).findings}
    other = _Built(collections.OrderedDict, [*many, collections.deque(["_target_", "os.makedirs"])])
    assert "WS-CFG-003" in rule_ids(scan(checkpoint(tmp_path / "other.ckpt", {"cfg": {"encoder": other}})))


def _bytes_raw(value: bytes) -> bytes:
    return b"C" + bytes([len(value)]) + value


def _int_raw(value: int) -> bytes:
    return b"J" + value.to_bytes(4, "little", signed=True)


def _wrapped(encoder: bytes) -> bytes:
    """Protocol 3 {'state_dict': {}, 'hyper_parameters': {'cfg': {'encoder': <encoder>}}}."""
    return (b"\x80\x03}(" + _text_raw("state_dict") + b"}" + _text_raw("hyper_parameters") + b"}(" + _text_raw("cfg")
            + b"}(" + _text_raw("encoder") + encoder + b"uuu.")  # fmt: skip


def _unread_text_raw(text: str) -> bytes:
    """str(bytes, 'cp1252') through copyreg.__newobj__: text wscan does not decode (cp1252 is not looked up)."""
    return (b"ccopyreg\n__newobj__\n(cbuiltins\nstr\n" + _bytes_raw(text.encode("cp1252")) + _text_raw("cp1252")
            + b"tR")  # fmt: skip


def test_numpy_text_whose_dtype_state_may_disagree_is_unread(tmp_path: Path) -> None:
    """Review 27 (second red team): a dtype whose BUILD state comes after the scalar is made (NumPy read 'U8', wscan
    read the later size) and a size given as numpy.int64(32) (NumPy takes any integer, wscan fell back to the text's
    12): Hydra instantiated both. A dtype's text and state must now agree, as NumPy writes them, or the key is
    unread (high), its value judged too."""
    dtype = b"cnumpy\ndtype\n" + _text_raw("U8") + b"\x89\x88\x87Rq\x01"
    later = (dtype + b"0cnumpy.core.multiarray\nscalar\nh\x01" + _bytes_raw("_target_".encode("utf-32-le")) + b"\x86R"
             + b"h\x01(K\x03" + _text_raw("<") + b"NNN" + _int_raw(4) + _int_raw(4) + _int_raw(8) + b"tb0")
    scalar = b"cnumpy.core.multiarray\nscalar\n"
    int64 = (scalar + b"cnumpy\ndtype\n" + _text_raw("i8") + b"\x89\x88\x87R(K\x03" + _text_raw("<") + b"NNN"
             + _int_raw(-1) + _int_raw(8) + _int_raw(0) + b"tb" + _bytes_raw((32).to_bytes(8, "little")) + b"\x86R")
    sized = (scalar + b"cnumpy\ndtype\n" + _text_raw("U12") + b"\x89\x88\x87R(K\x03" + _text_raw("<") + b"NNN" + int64
             + _int_raw(4) + _int_raw(8) + b"tb" + _bytes_raw("_target_zzzz".encode("utf-32-le")) + b"\x86R")
    for name, key in {"state-after": later, "numpy-size": sized}.items():
        data = _wrapped(b"}(" + key + _text_raw("os.makedirs") + _text_raw("name") + _text_raw("x") + b"u")
        assert "_target_" in pickle.loads(data)["hyper_parameters"]["cfg"]["encoder"], name
        (tmp_path / f"{name}.pkl").write_bytes(data)
        assert {"WS-CFG-003", "WS-CFG-001"} <= rule_ids(scan(tmp_path / f"{name}.pkl")), name


def test_unread_keys_holding_pairs_or_an_architecture_are_read(tmp_path: Path) -> None:
    """Review 27 (second red team): a key wscan cannot read may be `hparams` (real Lightning 2.5.6 imported and
    called os.system from the list of pairs under it) or pyannote's `architecture`: the value is read as both."""
    hparams = (b"\x80\x03}(" + _text_raw("state_dict") + b"}" + _text_raw("hyper_parameters") + b"}"
               + _unread_text_raw("hparams") + b"]((" + _text_raw("_instantiator") + _text_raw("os.system") + b"l("
               + _text_raw("lr") + b"G?\xb9\x99\x99\x99\x99\x99\x9aleu.")  # fmt: skip
    architecture = (b"\x80\x03}(" + _text_raw("pyannote.audio") + b"}(" + _unread_text_raw("architecture") + b"}("
                    + _text_raw("module") + _text_raw("os") + _text_raw("class") + _text_raw("system") + b"uuu.")
    loaded = pickle.loads(hparams)
    assert dict(loaded["hparams"])["_instantiator"] == "os.system"
    assert pickle.loads(architecture)["pyannote.audio"]["architecture"]["module"] == "os"
    for name, data in {"hparams": hparams, "architecture": architecture}.items():
        (tmp_path / f"{name}.pkl").write_bytes(data)
        findings = {(f.rule_id, f.evidence.get("callable")) for f in scan(tmp_path / f"{name}.pkl").findings}
        assert ("WS-CFG-001", "os.system") in findings, name


def test_a_vocabulary_with_a_target_token_is_data(tmp_path: Path) -> None:
    """Review 27 (second red team): scikit-learn's CountVectorizer fitted on text holding `_target_` maps the token to
    a numpy integer, and a vocabulary dict maps it to an int: no loader takes a number for a name (Hydra and
    Lightning fail on one), so neither is a target."""
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer().fit(["_target_ _instantiator hparams architecture module class", "hello world"])
    assert "_target_" in vectorizer.vocabulary_
    (tmp_path / "vectorizer.pkl").write_bytes(pickle.dumps(vectorizer))
    assert rule_ids(scan(tmp_path / "vectorizer.pkl")) == set()
    vocabulary = {"_target_": 7, "_instantiator": 8.0, "hello": 9}
    assert rule_ids(scan(checkpoint(tmp_path / "vocabulary.ckpt", {"vocab": vocabulary}))) == set()


def test_keys_made_by_calls_that_return_text_are_read(tmp_path: Path) -> None:
    """Review 28: numpy.object_(x) returns x, so numpy.object_(str('_target_')) is the key; and
    torch's _rebuild_from_type_v2(str, str, ('_target_',), None) returns str('_target_'). Hydra built os.makedirs
    from both (proved here for the first); a call given one unread text is unread itself."""
    import numpy
    from torch._tensor import _rebuild_from_type_v2

    made = tmp_path / "made-object"
    keys = {
        "object": _Built(numpy.object_, _Built(str, "_target_")),
        "rebuild": _Built(_rebuild_from_type_v2, str, str, ("_target_",), None),
    }
    for name, key in keys.items():
        path = checkpoint(tmp_path / f"{name}.ckpt", {"cfg": {"encoder": {key: "os.makedirs", "name": str(made)}}})
        assert "_target_" in torch.load(path, weights_only=False)["hyper_parameters"]["cfg"]["encoder"], name
        assert ("WS-CFG-001", "os.makedirs") in {(f.rule_id, f.evidence.get("callable")) for f in scan(path).findings}
    _instantiate_encoder(tmp_path / "object.ckpt")
    assert made.is_dir()
    unread = _keyed_raw(b"cnumpy\nobject_\n" + _unread_text_raw("_target_") + b"\x85R")
    assert pickle.loads(unread)["_target_"] == "os.makedirs"
    (tmp_path / "unread.pkl").write_bytes(unread)
    assert {"WS-CFG-003", "WS-CFG-001"} <= rule_ids(scan(tmp_path / "unread.pkl"))


def test_a_list_changed_in_place_makes_unread_pairs(tmp_path: Path) -> None:
    """Review 28: a pair changed in place (P[0:2] = ['_target_', 'os.makedirs']) inside a list a dict() call had
    read before, or past the 4,096 items a list keeps, reached Hydra while wscan reused or had dropped its reading.
    No writer sets items on a list: any such change makes the pairs unread (high)."""
    pair = b"](" + _text_raw("k") + _text_raw("v") + b"eq\x01"
    change = (b"h\x01cbuiltins\nslice\n" + _int_raw(0) + _int_raw(2) + b"\x86R](" + _text_raw("_target_")
              + _text_raw("os.makedirs") + b"es0")  # fmt: skip
    filler = b"](" + _text_raw("exist_ok") + b"\x88e"
    read_before = (pair + b"0]q\x02(h\x01" + filler * 69 + b"e0cbuiltins\ndict\nh\x02\x85R0" + change
                   + b"cbuiltins\ndict\nh\x02\x85R")  # fmt: skip
    past_limit = b"]q\x02(" + filler * 5000 + pair + b"e0" + change + b"cbuiltins\ndict\nh\x02\x85R"
    for name, encoder in {"read-before": read_before, "past-limit": past_limit}.items():
        data = _wrapped(encoder)
        assert pickle.loads(data)["hyper_parameters"]["cfg"]["encoder"]["_target_"] == "os.makedirs", name
        (tmp_path / f"{name}.pkl").write_bytes(data)
        assert "WS-CFG-003" in rule_ids(scan(tmp_path / f"{name}.pkl")), name


def test_vocabularies_of_numbers_or_lists_are_data(tmp_path: Path) -> None:
    """Review 28's false positives: a token-to-numpy.int64 vocabulary holding the tokens `hparams` and
    `hyper_parameters` (Lightning reads those keys of the checkpoint itself, not of a dict inside it), and a
    token-to-list one holding `_target_` (a list is no name)."""
    import numpy

    tokens = ["hparams", "hyper_parameters", "module_arguments", "_target_", "_instantiator", "architecture"]
    numbers = {token: numpy.int64(index) for index, token in enumerate(tokens)}
    lists = {token: [index] for index, token in enumerate(tokens)}
    for name, vocabulary in {"numbers": numbers, "lists": lists}.items():
        torch.save({"state_dict": {}, "vocab": vocabulary}, tmp_path / f"{name}.pt")
        assert rule_ids(scan(tmp_path / f"{name}.pt")) == set(), name


def test_review_29_hyperparameter_types_records_and_series_are_unread(tmp_path: Path) -> None:
    """Review 29: Lightning's `_load_state` calls the checkpoint's `hparams_type` on the merged hyperparameters
    (builtins.list turned a tuple key ('_instantiator', 'os.system') into a pair real Lightning 2.5.6 called); pyannote
    reads `architecture['module']` from a numpy record or a pandas Series; dict.update takes pairs from a record's
    fields. Each is unread (high); Lightning's own types (OmegaConf's containers, or a name) are data."""
    import numpy
    import pandas

    def saved(name: str, extra: dict[str, object]) -> Path:
        torch.save({"state_dict": {}, "hyper_parameters": {"lr": 0.1}, **extra}, tmp_path / f"{name}.ckpt")
        return tmp_path / f"{name}.ckpt"

    typed = saved("typed", {"hyper_parameters": {("_instantiator", "os.system"): 0}, "hparams_type": list})
    loaded = torch.load(typed, weights_only=False)
    assert dict(loaded["hparams_type"](loaded["hyper_parameters"]))["_instantiator"] == "os.system"
    record_type = numpy.dtype([("module", "U2"), ("class", "U6")])
    record = numpy.array([("os", "system")], dtype=record_type)[0]
    fields = numpy.array([(numpy.array(["_instantiator", "os.system"]),)], dtype=[("f0", "U13", (2,))])[0]
    files = {
        "typed": typed,
        "record": saved("record", {"pyannote.audio": {"architecture": record}}),
        "series": saved("series", {"pyannote.audio": {"architecture": pandas.Series({"module": "os",
                                                                                     "class": "system"})}}),
        "fields": saved("fields", {"hparams": fields}),
    }  # fmt: skip
    assert dict(torch.load(files["fields"], weights_only=False)["hparams"])["_instantiator"] == "os.system"
    for name, path in files.items():
        assert "WS-CFG-003" in rule_ids(scan(path)), name
    from omegaconf import DictConfig

    assert rule_ids(scan(saved("named-type", {"hparams_type": "Namespace"}))) == set()  # an older Lightning's
    # OmegaConf's classes are high by themselves (WS-PKL-003, by design), not as a hyperparameter type
    assert "WS-CFG-003" not in rule_ids(scan(saved("dictconfig-type", {"hparams_type": DictConfig})))


def test_text_and_flat_text_arrays_under_hparams_are_data(tmp_path: Path) -> None:
    """Review 29's false positives: text under `hparams` (a str's items are characters, one each) and a 1-D or
    3-column unicode array (no row of two) make dict.update raise: data. A (n, 2) one is rows of pairs."""
    import numpy

    for index, value in enumerate([numpy.str_("hparams"), numpy.array(["a", "b", "c"]), numpy.array([["a"] * 3])]):
        torch.save({"state_dict": {}, "hparams": value}, tmp_path / f"{index}.ckpt")
        with pytest.raises((TypeError, ValueError)):
            {}.update(torch.load(tmp_path / f"{index}.ckpt", weights_only=False)["hparams"])
        assert rule_ids(scan(tmp_path / f"{index}.ckpt")) == set(), index
