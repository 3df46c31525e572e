"""Configs that make transformers read a value from somewhere the checks did not look (reviews 39 and 40, 0 findings
before), each proved with transformers 4.57: a config's own `attribute_map` (config.json, or a part's dict in a
pickled composite config), which answers `_attn_implementation` with another key's value; an attention
implementation given as a dict of dicts, which the setter hands down a sub-config at a time; a config.json whose
`configuration_files` sends from_pretrained to a `config.<version>.json`; a sub-config whose `_name_or_path` the
parent loads (Xcodec). The proofs stop where transformers has made the name its configuration's attention
implementation (what `from_config` hands `load_and_register_kernel`) or has read the other config."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.scanning import scan
from wscan.model import Finding, Severity

transformers = pytest.importorskip("transformers")
KERNEL = "attacker/evil-kernel"
TINY = {"hidden_size": 16, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
        "vocab_size": 50}  # fmt: skip


def _high(findings: list[Finding]) -> set[str]:
    return {f.rule_id for f in findings if f.severity >= Severity.HIGH}


def _bert_folder(folder: Path, extra: dict[str, object]) -> Path:
    folder.mkdir(parents=True)
    transformers.BertConfig(**TINY).save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **extra}))
    return folder


def _remote_code_folder(folder: Path, model_type: str, marker: Path) -> Path:
    """A model folder whose config names its own code (auto_map), which writes `marker` when imported."""
    folder.mkdir()
    (folder / "configuration_evil.py").write_text(
        "from pathlib import Path\nfrom transformers import PretrainedConfig\n"
        f"Path({str(marker)!r}).write_text('ran')\n"
        f"class EvilConfig(PretrainedConfig):\n    model_type = {model_type!r}\n")  # fmt: skip
    (folder / "config.json").write_text(json.dumps({
        "model_type": model_type, "auto_map": {"AutoConfig": "configuration_evil.EvilConfig"}}))  # fmt: skip
    return folder


def _run_loader(code: str, tmp_path: Path) -> None:
    """`code` in a fresh interpreter, offline, with its own cache of remote code modules."""
    env = {**os.environ, "HF_MODULES_CACHE": str(tmp_path / "modules"), "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120, check=False)


def test_a_config_json_with_its_own_attribute_map_is_high(tmp_path: Path) -> None:
    """The map sends `_attn_implementation` to `_name_or_path`, which from_pretrained fills with the repository's
    own id: no string in the file names a kernel, and the model's repository is fetched as one."""
    folder = _bert_folder(tmp_path / KERNEL, {"attribute_map": {"_attn_implementation": "_name_or_path"}})
    loaded = transformers.AutoConfig.from_pretrained(folder)
    assert loaded._attn_implementation == str(folder)  # the hub id, when the model comes from the hub
    findings = scan(folder).findings
    assert _high(findings) == {"WS-REPO-032"}, findings
    assert [f.evidence["field"] for f in findings if f.rule_id == "WS-REPO-032"] == ["attribute_map"]


def test_an_attribute_map_in_a_pickled_parts_dict_is_high(tmp_path: Path) -> None:
    """A RagConfig restored from state keeps its question_encoder as the dict the file gives; rebuilt from its dict,
    that part becomes a BertConfig whose own map answers `_attn_implementation` with the kernel."""
    part = {**transformers.BertConfig(**TINY).to_dict(), "attribute_map": {"_attn_implementation": "hint"},
            "hint": KERNEL}  # fmt: skip
    rag = transformers.RagConfig(question_encoder={"model_type": "bert"}, generator={"model_type": "bart"})
    rag.__dict__["question_encoder"] = part
    blob = pickle.dumps(rag, protocol=2)
    loaded = pickle.loads(blob)
    assert type(loaded).from_dict(loaded.to_dict()).question_encoder._attn_implementation == KERNEL
    (tmp_path / "model.pkl").write_bytes(blob)
    findings = scan(tmp_path / "model.pkl").findings
    assert _high(findings) == {"WS-REPO-032"}, findings
    assert [f.evidence["field"] for f in findings if f.rule_id == "WS-REPO-032"] == ["question_encoder.attribute_map"]


def test_an_attention_implementation_nested_two_dicts_deep_is_judged(tmp_path: Path) -> None:
    """A Llava part's `{"text_config": {"": kernel}}`: the setter gives text_config the inner dict, whose "" entry
    is the text config's own implementation."""
    llava = transformers.LlavaConfig(text_config={"model_type": "llama", **TINY}).to_dict()
    llava["attn_implementation"] = {"text_config": {"": KERNEL}}
    rag = transformers.RagConfig(question_encoder={"model_type": "bert"}, generator={"model_type": "bart"})
    rag.__dict__["question_encoder"] = llava
    blob = pickle.dumps(rag, protocol=2)
    loaded = pickle.loads(blob)
    rebuilt = type(loaded).from_dict(loaded.to_dict())
    assert rebuilt.question_encoder.text_config._attn_implementation == KERNEL
    (tmp_path / "model.pkl").write_bytes(blob)
    findings = scan(tmp_path / "model.pkl").findings
    assert _high(findings) == {"WS-REPO-026"}, findings
    folder = tmp_path / "saved"
    loaded.save_pretrained(folder)  # as config.json, the part as the pickle gave it
    assert json.loads((folder / "config.json").read_text())["question_encoder"]["attn_implementation"] == {
        "text_config": {"": KERNEL}}
    assert "WS-REPO-026" in _high(scan(folder).findings)


def test_nested_implementation_keys_are_each_walked_once(tmp_path: Path) -> None:
    """A chain of `attn_implementation` dicts, each holding the next: every kernel in it is reported, once. The
    outer key used to walk the inner ones' values again (20 levels of 5 kernels gave 825 findings; 90 levels of
    9,000 values, a 16 MB file, took 7 s), and an `_internal` key at the bottom still flags its plain value."""
    inner: dict[str, object] = {"_attn_implementation_internal": {"part": "plain"}}
    for level in range(20):
        inner = {**{f"part{level}_{i}": f"org{level}/kernel{i}" for i in range(5)}, "attn_implementation": inner}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "attn_implementation": inner}))
    findings = scan(tmp_path).findings
    kernels = [f.evidence["value"] for f in findings if f.rule_id == "WS-REPO-026"]
    assert sorted(kernels) == sorted(f"org{level}/kernel{i}" for level in range(20) for i in range(5))
    assert [f.evidence["value"] for f in findings if f.rule_id == "WS-REPO-025"] == ["plain"]


def test_no_transformers_config_writes_an_attribute_map() -> None:
    """What keeps WS-REPO-032 free of false positives: transformers keeps every map on its class (to_dict, what
    config.json and a pickled config's state hold, copies the instance's own attributes only), and no source file of
    it sets one on an instance. Configs with the largest class maps are checked whole."""
    package = Path(transformers.__file__).parent
    sources = list(package.rglob("*.py"))
    assert len(sources) > 1000
    setters = [str(path) for path in sources if "self.attribute_map" in path.read_text(encoding="utf-8")]
    assert setters == []
    for config in (transformers.GPT2Config(), transformers.T5Config(), transformers.BartConfig(),
                   transformers.LlavaConfig()):  # fmt: skip
        assert type(config).attribute_map
        assert "attribute_map" not in json.dumps(config.to_dict(), default=str), type(config).__name__


def test_a_versioned_config_file_is_judged_as_config_json(tmp_path: Path) -> None:
    """config.json lists `config.4.0.0.json`, which from_pretrained loads instead, whole: its internal attention key
    (WS-REPO-025) and an auto_map past the first 64 KiB (WS-REPO-002) are found as in config.json."""
    folder = _bert_folder(tmp_path / "versioned", {"configuration_files": ["config.4.0.0.json"]})
    decoy = json.loads((folder / "config.json").read_text())
    labels = {str(index): f"label {index}" for index in range(5000)}  # pushes what follows past the first 64 KiB
    versioned = {**decoy, "id2label": labels, "_attn_implementation_internal": KERNEL,
                 "auto_map": {"AutoConfig": "attacker/repo--configuration_evil.EvilConfig"}}  # fmt: skip
    (folder / "config.4.0.0.json").write_text(json.dumps(versioned))
    loaded = transformers.AutoConfig.from_pretrained(folder)
    assert loaded._attn_implementation == KERNEL and len(loaded.id2label) == 5000
    assert {"WS-REPO-025", "WS-REPO-002"} <= _high(scan(folder).findings)
    (folder / "config.4.0.0.json").write_text(json.dumps({**decoy, "id2label": labels}))
    assert not _high(scan(folder).findings)


def test_a_sub_config_loaded_by_its_name_or_path_stays_in_the_folder(tmp_path: Path) -> None:
    """Xcodec's __init__ loads `semantic_model_config._name_or_path` with AutoConfig.from_pretrained: outside the
    folder it is high (WS-REPO-013), as a `backbone` is; a hub id is another repository's to be scanned, as there."""
    other = tmp_path / "outside"
    other.mkdir()
    transformers.HubertConfig(hidden_size=24, num_hidden_layers=1, num_attention_heads=2).save_pretrained(other)
    folder = tmp_path / "model"
    folder.mkdir()
    transformers.XcodecConfig().save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    config["semantic_model_config"] = {"_name_or_path": "../outside", "model_type": "hubert"}
    (folder / "config.json").write_text(json.dumps(config))

    here = os.getcwd()
    os.chdir(folder)  # from_pretrained resolves the path from the working folder
    try:
        assert transformers.AutoConfig.from_pretrained(".").semantic_model_config.hidden_size == 24
    finally:
        os.chdir(here)
    assert "WS-REPO-013" in _high(scan(folder).findings)
    config["semantic_model_config"]["_name_or_path"] = "facebook/hubert-base-ls960"
    (folder / "config.json").write_text(json.dumps(config))
    assert not _high(scan(folder).findings)


def test_a_lightglue_config_that_trusts_remote_code_itself_is_high(tmp_path: Path) -> None:
    """LightGlue hands its config's own `trust_remote_code` to AutoConfig.from_pretrained for the keypoint detector:
    a detector config elsewhere that names its own code runs it, the user having opted in to nothing (WS-REPO-021).
    The real default config (false) passes; a hub id there is another repository's, as for a backbone."""
    marker = tmp_path / "ran"
    detector = _remote_code_folder(tmp_path / "detector", "evil_detector", marker)
    folder = tmp_path / "model"
    folder.mkdir()
    transformers.LightGlueConfig().save_pretrained(folder)
    real = json.loads((folder / "config.json").read_text())
    assert real["trust_remote_code"] is False
    assert not _high(scan(folder).findings)
    hostile = {**real, "trust_remote_code": True,
               "keypoint_detector_config": {"model_type": "evil_detector", "_name_or_path": str(detector)}}  # fmt: skip
    (folder / "config.json").write_text(json.dumps(hostile))
    _run_loader(f"from transformers import AutoConfig; AutoConfig.from_pretrained({str(folder)!r})", tmp_path)
    assert marker.read_text() == "ran"  # the detector's code ran on a plain from_pretrained
    assert {"WS-REPO-021", "WS-REPO-013"} <= _high(scan(folder).findings)
    hostile["keypoint_detector_config"]["_name_or_path"] = "attacker/detector"
    (folder / "config.json").write_text(json.dumps(hostile))
    assert _high(scan(folder).findings) == {"WS-REPO-021"}


def _lightglue_opt_in(detector: Path) -> dict[str, object]:
    return {"model_type": "lightglue", "trust_remote_code": True,
            "keypoint_detector_config": {"model_type": "evil_detector", "_name_or_path": str(detector)}}  # fmt: skip


def test_a_lightglue_opt_in_anywhere_in_any_file_is_high(tmp_path: Path) -> None:
    """Helper 251 ran a detector's code with a plain from_pretrained through a LightGlue opt-in wscan judged only at
    the top of config.json: a Llava's `vision_config`, and a `.txt` an Xcodec's `semantic_model_config` names
    (AutoConfig takes a file path); the same .txt with its key spelt with an escape. Each is WS-REPO-021 now."""
    marker = tmp_path / "ran"
    detector = _remote_code_folder(tmp_path / "detector", "evil_detector", marker)
    nested = tmp_path / "nested"
    nested.mkdir()
    llava = {"model_type": "llava", "vision_config": _lightglue_opt_in(detector)}
    (nested / "config.json").write_text(json.dumps(llava))
    named = tmp_path / "named"
    named.mkdir()
    (named / "config.json").write_text(json.dumps({"model_type": "xcodec", "semantic_model_config": {
        "_name_or_path": str(named / "semantic.txt")}}))  # fmt: skip
    (named / "semantic.txt").write_text(json.dumps(_lightglue_opt_in(detector)))
    index = tmp_path / "index"  # helper 254: a shard index, which only the shards scanner read
    index.mkdir()
    (index / "config.json").write_text(json.dumps({"model_type": "xcodec", "semantic_model_config": {
        "_name_or_path": str(index / "model.safetensors.index.json")}}))  # fmt: skip
    (index / "model.safetensors.index.json").write_text(json.dumps({
        "metadata": {"total_size": 0}, "weight_map": {}, **_lightglue_opt_in(detector)}))  # fmt: skip
    for folder in (nested, named, index):
        marker.unlink(missing_ok=True)
        _run_loader(f"from transformers import AutoConfig; AutoConfig.from_pretrained({str(folder)!r})", tmp_path)
        assert marker.read_text() == "ran", folder.name  # the detector's code ran: the user opted in to nothing
        assert "WS-REPO-021" in _high(scan(folder).findings), folder.name
    (named / "semantic.txt").write_text(json.dumps(_lightglue_opt_in(detector)).replace("trust_", "trust\\u005f"))
    assert json.loads((named / "semantic.txt").read_text())["trust_remote_code"] is True
    assert "WS-REPO-021" in _high(scan(named).findings)


def test_a_json_text_too_large_to_parse_is_a_finding_when_it_holds_a_key_loaders_act_on(tmp_path: Path) -> None:
    """Helper 254: 65 MiB of spaces, then a LightGlue opt-in, in a .txt an Xcodec config names: too large to parse,
    so the whole file is searched for the keys (escaped too); one found makes it a size-limit finding (high).
    Here with a limit of 1 KiB instead of 64 MiB."""
    from wscan.config import Config
    from wscan.limits import Limits

    opt_in = json.dumps(_lightglue_opt_in(tmp_path / "detector")).replace("trust_", "trust\\u005F")
    (tmp_path / "semantic.txt").write_text(" " * 70_000 + opt_in)
    (tmp_path / "padding.txt").write_text(" " * 70_000 + json.dumps({"loss": [0.5] * 500}))
    findings = scan(tmp_path, Config(limits=Limits(max_json_bytes=1024))).findings
    assert {(Path(f.location.path).name, f.rule_id) for f in findings if f.severity >= Severity.HIGH} == {
        ("semantic.txt", "WS-REPO-007")}  # fmt: skip


def test_json_text_of_any_name_that_nothing_acts_on_stays_unread(tmp_path: Path) -> None:
    """JSON objects under other names are read for what a loader acts on only: metrics, notes and escaped text
    stay skipped files with no finding."""
    (tmp_path / "metrics.txt").write_text(json.dumps({"loss": [0.5, 0.25], "note": "caf\u00e9"}))
    (tmp_path / "notes.md").write_text("{not json at all, \\u0041}")
    (tmp_path / "results.json").write_text(json.dumps({"eval": {"accuracy": 0.9}}, indent=2))
    report = scan(tmp_path)
    assert report.findings == [] or all(f.severity <= Severity.LOW for f in report.findings)
    assert report.count("scanned") == 0


def test_a_versioned_config_named_with_a_line_break_or_linked_out_is_judged(tmp_path: Path) -> None:
    """transformers takes any `config.<...>.json` whose middle packaging parses as a version, spaces and line breaks
    around it included (review 41: `config.4.0.0\\n.json`); a versioned config linked to a file outside the folder is
    a loader file leaving it, as config.json would be (WS-FILE-014)."""
    folder = _bert_folder(tmp_path / "newline", {"configuration_files": ["config.4.0.0\n.json"]})
    decoy = json.loads((folder / "config.json").read_text())
    (folder / "config.4.0.0\n.json").write_text(json.dumps({**decoy, "_attn_implementation_internal": KERNEL}))
    assert transformers.AutoConfig.from_pretrained(folder)._attn_implementation == KERNEL
    assert "WS-REPO-025" in _high(scan(folder).findings)
    linked = _bert_folder(tmp_path / "linked", {"configuration_files": ["config.4.0.0.json"]})
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({**decoy, "_attn_implementation_internal": KERNEL}))
    (linked / "config.4.0.0.json").symlink_to(outside)
    assert transformers.AutoConfig.from_pretrained(linked)._attn_implementation == KERNEL
    assert "WS-FILE-014" in _high(scan(linked).findings)


def test_a_timm_checkpoint_path_outside_the_folder_is_high(tmp_path: Path) -> None:
    """A timm_wrapper config's `model_args` go to timm.create_model as they are, whose `checkpoint_path` it loads as
    given, from the working folder (review 41 loaded another file's weights into the model, timm 1.0.31): any value
    there reads outside the model folder (WS-REPO-013). The config is transformers' own, as save_pretrained writes
    it."""
    folder = tmp_path / "timm"
    config = transformers.TimmWrapperConfig(architecture="resnet18", model_args={"checkpoint_path": "../other.pth"})
    config.save_pretrained(folder)
    assert json.loads((folder / "config.json").read_text())["model_args"] == {"checkpoint_path": "../other.pth"}
    assert "WS-REPO-013" in _high(scan(folder).findings)
    transformers.TimmWrapperConfig(architecture="resnet18", model_args={"global_pool": "avg"}).save_pretrained(folder)
    assert not _high(scan(folder).findings)


def test_backbone_kwargs_that_trust_remote_code_are_high(tmp_path: Path) -> None:
    """load_backbone hands a config's `backbone_kwargs` to AutoConfig.from_pretrained (or AutoBackbone's) for the
    `backbone` it names: a `trust_remote_code` there runs that backbone's code on a plain load (review 42), and
    transformers takes any value Python counts as true (1, "yes", "false"), as LightGlue's does."""
    marker = tmp_path / "ran"
    backbone = _remote_code_folder(tmp_path / "backbone", "evil_backbone", marker)
    folder = tmp_path / "model"
    transformers.DepthAnythingConfig(backbone=str(backbone), backbone_config=None, use_pretrained_backbone=False,
                                     backbone_kwargs={"trust_remote_code": "yes"}).save_pretrained(folder)  # fmt: skip
    load = ("import transformers\n"
            f"config = transformers.AutoConfig.from_pretrained({str(folder)!r})\n"
            "try:\n    transformers.AutoModelForDepthEstimation.from_config(config)\n"
            "except Exception:\n    pass\n")  # fmt: skip
    _run_loader(load, tmp_path)
    assert marker.read_text() == "ran"  # the backbone's code ran, the user having passed no trust_remote_code
    assert "WS-REPO-021" in _high(scan(folder).findings)
    for truthy in (1, "false"):
        config = json.loads((folder / "config.json").read_text())
        config["backbone"] = "attacker/backbone"
        config["backbone_kwargs"] = {"trust_remote_code": truthy}
        (folder / "config.json").write_text(json.dumps(config))
        assert _high(scan(folder).findings) == {"WS-REPO-021"}, truthy
    lightglue = tmp_path / "lightglue"
    transformers.LightGlueConfig().save_pretrained(lightglue)
    config = {**json.loads((lightglue / "config.json").read_text()), "trust_remote_code": 1}
    (lightglue / "config.json").write_text(json.dumps(config))
    assert "WS-REPO-021" in _high(scan(lightglue).findings)


def test_timm_backbone_settings_that_load_weights_from_outside_are_high(tmp_path: Path) -> None:
    """DETR-family models hand `backbone` and `backbone_kwargs` to timm.create_model: a `local-dir:` backbone and a
    `pretrained_cfg_overlay.file` are loaded as given (review 42 put another file's weights in the backbone with timm
    1.0.31). The configs are DetrConfig's own, as save_pretrained writes them; its defaults pass."""
    folder = tmp_path / "detr"
    transformers.DetrConfig().save_pretrained(folder)
    assert not _high(scan(folder).findings)
    overlay = {"pretrained_cfg_overlay": {"file": "../weights/resnet50.pth"}}
    transformers.DetrConfig(backbone_kwargs={**overlay, "out_indices": [1, 2, 3, 4]}).save_pretrained(folder)
    assert "WS-REPO-013" in _high(scan(folder).findings)
    transformers.DetrConfig(backbone="local-dir:../resnet").save_pretrained(folder)
    assert json.loads((folder / "config.json").read_text())["backbone"] == "local-dir:../resnet"
    assert "WS-REPO-013" in _high(scan(folder).findings)


def test_model_paths_that_can_only_be_folders_of_the_working_folder_are_high(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model named by path is looked for in the working folder first: `.`, `./x`, a backslash or two slashes can be
    nothing else (review 43 loaded a DepthAnything backbone from `./elsewhere`), where `org/name` stays a hub id;
    OneFormer reads `class_info_file` from the working folder when `repo_path` is "" or "." too; and `/proc/self/cwd`
    is the loader's working folder, not wscan's, however wscan is started (review 43 scanned from inside the folder)."""
    folder = tmp_path / "model"
    for backbone, high in (("./elsewhere", True), (".", True), ("a/b/c", True), ("microsoft/resnet-50", False)):
        transformers.DepthAnythingConfig(backbone=backbone, backbone_config=None,
                                         use_pretrained_backbone=False).save_pretrained(folder)  # fmt: skip
        assert ("WS-REPO-013" in _high(scan(folder).findings)) == high, backbone
    processor = tmp_path / "processor"
    processor.mkdir()
    for repo_path in ("", "."):
        (processor / "preprocessor_config.json").write_text(json.dumps({
            "image_processor_type": "OneFormerImageProcessor", "repo_path": repo_path,
            "class_info_file": "ade20k_panoptic.json"}))  # fmt: skip
        assert "WS-REPO-013" in _high(scan(processor).findings), repo_path
    transformers.DepthAnythingConfig(backbone="/proc/self/cwd/elsewhere", backbone_config=None,
                                     use_pretrained_backbone=False).save_pretrained(folder)  # fmt: skip
    (folder / "elsewhere").mkdir()  # inside the folder, seen from a scan started there
    monkeypatch.chdir(folder)
    assert "WS-REPO-013" in _high(scan(folder).findings)
