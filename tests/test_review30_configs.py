"""A thirtieth review's misses (report only, each with 0 findings or below high before): configuration keys that
make a loader import code with no opt-in. The files are hand-made, as the review's were, under data/review30.

- M1: an `auto_map` in a sub-config (vLLM CVE-2025-66448, CVE-2026-4944).
- M2: jsonargparse's `class_path` (LightningCLI; vocos' from_hparams, gemelo-ai/vocos#76).
- M3: a lerobot processor pipeline step's `class` (huggingface/lerobot#4219).
- M4: mlx-lm's config.json `model_file` (CVE-2026-5843 / GHSA-9m9w-53g9-47c4).
- M5: a FunASR config.yaml that sets `trust_remote_code` itself, or a `remote_code` URL (FunASR 1.4.16).
- M6: config.json's attention implementation naming a hub kernel, or its `_internal` key (CVE-2026-4372).
- N2: ModelScope's configuration.json `allow_remote` and `plugins` (modelscope#1405), and FunASR's
  `file_path_metas` there.
- N4: a compressed-tensors `format` of the form `module:name` (transformers PR #46303).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.scanning import scan
from wscan.model import Finding, Severity

DATA = Path(__file__).parent / "data" / "review30"


def _findings(tmp_path: Path, case: str) -> list[Finding]:
    """The case copied out of the source tree (a folder of its own, as a model is) and scanned."""
    target = tmp_path / case
    shutil.copytree(DATA / case, target)
    return scan(target).findings


def _at_least(findings: list[Finding], severity: Severity) -> set[str]:
    return {f.rule_id for f in findings if f.severity >= severity}


@pytest.mark.parametrize(
    ("case", "rule", "field"),
    [
        ("nested_automap_remote", "WS-REPO-002", "vision_config.auto_map"),
        ("nested_automap_list", "WS-REPO-002", "sub_configs[0].text_config.auto_map"),
    ],
)
def test_a_remote_auto_map_in_a_sub_config_is_high(tmp_path: Path, case: str, rule: str, field: str) -> None:
    findings = _findings(tmp_path, case)
    hits = [f for f in findings if f.rule_id == rule]
    assert hits and hits[0].severity == Severity.HIGH, findings
    assert hits[0].evidence["field"] == field


def test_a_local_auto_map_in_a_sub_config_is_named_like_a_top_level_one(tmp_path: Path) -> None:
    """Medium, as at the top (WS-REPO-001 says why): the folder's code is read and judged on its own."""
    findings = _findings(tmp_path, "nested_automap_local")
    hits = [f for f in findings if f.rule_id == "WS-REPO-001"]
    assert [f.evidence["field"] for f in hits] == ["vision_config.auto_map"], findings
    assert not _at_least(findings, Severity.HIGH), findings


def test_sub_configs_without_auto_map_and_vocabularies_stay_clean(tmp_path: Path) -> None:
    """A LLaVA-style config.json, and a tokenizer vocabulary holding the token "auto_map"."""
    (tmp_path / "config.json").write_text(
        '{"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "text_config": '
        '{"model_type": "llama", "rope_scaling": {"type": "linear", "factor": 2.0}}, "vision_config": '
        '{"model_type": "clip_vision_model", "hidden_size": 1024}}'
    )
    (tmp_path / "tokenizer.json").write_text(
        '{"version": "1.0", "model": {"type": "BPE", "vocab": {"auto_map": {"a": 1}}, "merges": []}}'
    )
    assert not _at_least(scan(tmp_path).findings, Severity.MEDIUM)


@pytest.mark.parametrize(
    ("case", "callable_"),
    [("vocos", "subprocess.Popen"), ("lightning_cli", "os.system")],
)
def test_a_class_path_gadget_is_critical(tmp_path: Path, case: str, callable_: str) -> None:
    """vocos builds `class_path` with `init_args` when from_hparams reads config.yaml; a file holding a
    `class_path:` key is read as a config whatever its name (the review's hparams file)."""
    findings = _findings(tmp_path, case)
    hits = [f for f in findings if f.rule_id == "WS-CFG-001"]
    assert [f.evidence["callable"] for f in hits] == [callable_], findings
    assert hits[0].severity == Severity.CRITICAL
    assert hits[0].evidence["key"] == "class_path"


def test_real_lightning_and_vocos_configs_stay_clean(tmp_path: Path) -> None:
    """torch, Lightning and vocos classes are judged as a `_target_` naming them is: allowed; a bare class name
    is resolved by jsonargparse among classes already imported, so it imports nothing."""
    assert not _at_least(_findings(tmp_path, "lightning_cli_real"), Severity.LOW)


def test_an_unknown_class_path_is_judged_like_an_unknown_target(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("model:\n  class_path: my_project.models.Net\n")
    (tmp_path / "hydra.yaml").write_text("model:\n  _target_: my_project.models.Net\n")
    by_file = {f.location.path.rsplit("/", 1)[-1]: (f.rule_id, f.severity) for f in scan(tmp_path).findings}
    assert by_file["config.yaml"] == by_file["hydra.yaml"] == ("WS-CFG-002", Severity.MEDIUM)


@pytest.mark.parametrize(
    ("case", "rule", "severity"),
    [("lerobot_popen", "WS-CFG-001", Severity.CRITICAL), ("lerobot_unknown", "WS-CFG-021", Severity.HIGH)],
)
def test_a_pipeline_step_class_is_judged_as_a_call(tmp_path: Path, case: str, rule: str, severity: Severity) -> None:
    """from_pretrained imports a step's `class` and calls it with its `config`, whatever the file is named."""
    findings = _findings(tmp_path, case)
    assert [(f.rule_id, f.severity) for f in findings if f.severity >= Severity.MEDIUM] == [(rule, severity)]


def test_registered_steps_and_lerobot_classes_pass(tmp_path: Path) -> None:
    """What lerobot writes: `registry_name` for registered steps (a `class` beside one is never imported), the
    class path of its own unregistered ones."""
    assert not _at_least(_findings(tmp_path, "lerobot_real"), Severity.LOW)
    (tmp_path / "both.json").write_text(
        '{"steps": [{"registry_name": "device_processor", "class": "os.system", "config": {}}]}'
    )
    assert not _at_least(scan(tmp_path / "both.json").findings, Severity.LOW)


def test_steps_past_the_thousand_judged_are_counted_never_passed(tmp_path: Path) -> None:
    """A pipeline's steps are judged up to 1,000; a class in step 1,001 was passed silently. Now the steps past them
    are counted as targets not judged (WS-CFG-006, high); so are pyannote preprocessors past the 1,000 named."""
    steps = [{"registry_name": "device_processor", "config": {}}] * 1000 + [{"class": "os.system", "config": {}}]
    (tmp_path / "policy_preprocessor.json").write_text(json.dumps({"name": "p", "steps": steps}))
    found = [(f.rule_id, f.message) for f in scan(tmp_path / "policy_preprocessor.json").findings]
    assert found == [("WS-CFG-006", "1 more targets in this config were not judged")], found
    names = "".join(f"  p{index}:\n    name: torch.nn.Identity\n" for index in range(1000))
    (tmp_path / "config.yaml").write_text(f"preprocessors:\n{names}  last:\n    name: os.makedirs\n")
    assert "WS-CFG-006" in {f.rule_id for f in scan(tmp_path / "config.yaml").findings if f.severity >= Severity.HIGH}


@pytest.mark.parametrize(
    ("case", "rule"),
    [("mlx_model_file", "WS-REPO-009"), ("mlx_outside", "WS-REPO-013")],
)
def test_an_mlx_model_file_is_code_the_load_runs(tmp_path: Path, case: str, rule: str) -> None:
    """mlx-lm 0.31 execs `folder / model_file` on load(), with no opt-in; a path leaving the folder is a path."""
    findings = _findings(tmp_path, case)
    hits = [f for f in findings if f.rule_id == rule]
    assert hits and hits[0].severity == Severity.HIGH, findings
    assert hits[0].evidence["field"] == "model_file"


def test_an_mlx_model_file_not_in_the_folder_or_not_code_is_lower(tmp_path: Path) -> None:
    """A file that is not there is WS-REPO-010 (medium, as for other manifests); a name importlib cannot load
    (a sentencepiece model) and a nested `model_file` are not mlx-lm's."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text('{"model_type": "llama", "model_file": "gone.py"}')
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "config.json").write_text(
        '{"model_file": "tokenizer.model", "x": {"model_file": "m.py"}}'
    )
    assert [(f.rule_id, f.severity) for f in scan(tmp_path / "a").findings] == [("WS-REPO-010", Severity.MEDIUM)]
    assert not _at_least(scan(tmp_path / "b").findings, Severity.LOW)


@pytest.mark.parametrize(
    ("case", "rules"),
    [("funasr_opt_in", {"WS-REPO-021"}), ("funasr_remote_url", {"WS-REPO-002"})],
)
def test_a_funasr_config_that_runs_code_is_high(tmp_path: Path, case: str, rules: set[str]) -> None:
    """AutoModel merges config.yaml into its arguments: the file's truthy trust_remote_code opts in (a file name
    is truthy), and a `remote_code` URL is downloaded and imported once anyone opts in."""
    assert rules <= _at_least(_findings(tmp_path, case), Severity.HIGH)


def test_funasr_and_training_configs_without_an_opt_in_pass(tmp_path: Path) -> None:
    """A real Paraformer config (trust_remote_code false), and a training config without a top-level `model`."""
    assert not _at_least(_findings(tmp_path, "funasr_real"), Severity.LOW)


def test_an_internal_attention_key_is_high(tmp_path: Path) -> None:
    """transformers never writes `_attn_implementation_internal`; 4.56-5.2 loaded the hub kernel it names."""
    findings = _findings(tmp_path, "attn_internal")
    assert [(f.rule_id, f.severity) for f in findings] == [("WS-REPO-025", Severity.HIGH)]


def test_a_hub_kernel_outside_kernels_community_is_high(tmp_path: Path) -> None:
    """In a sub-config too, and in the dict form that maps sub-configs to implementations."""
    findings = _findings(tmp_path, "attn_kernel")
    fields = sorted(str(f.evidence["field"]) for f in findings if f.rule_id == "WS-REPO-026")
    assert fields == ["text_config.attn_implementation", "vision_config._attn_implementation"], findings
    assert all(f.severity == Severity.HIGH for f in findings if f.rule_id == "WS-REPO-026")


def test_transformers_own_implementations_pass_and_community_kernels_are_info(tmp_path: Path) -> None:
    findings = _findings(tmp_path, "attn_real")
    assert [(f.rule_id, f.severity) for f in findings] == [("WS-REPO-027", Severity.INFO)], findings


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # allow_remote imports the folder's code, which configuration.json now marks as model code (os.system there)
        ("modelscope_allow_remote", {"WS-REPO-001": Severity.MEDIUM, "WS-CODE-002": Severity.CRITICAL}),
        ("modelscope_plugins", {"WS-REPO-002": Severity.HIGH}),
    ],
)
def test_modelscope_remote_code_keys(tmp_path: Path, case: str, expected: dict[str, Severity]) -> None:
    found = {f.rule_id: f.severity for f in _findings(tmp_path, case)}
    assert expected.items() <= found.items(), found


def test_a_real_modelscope_config_passes_and_its_paths_stay_inside(tmp_path: Path) -> None:
    """FunASR joins `file_path_metas` to the folder and loads them: a path climbing out of it is high."""
    assert not _at_least(_findings(tmp_path, "modelscope_real"), Severity.LOW)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "configuration.json").write_text(
        '{"model": {"type": "funasr"}, "file_path_metas": {"init_param": "../../elsewhere/model.pt"}}'
    )
    assert "WS-REPO-013" in _at_least(scan(tmp_path / "other").findings, Severity.HIGH)


def test_a_quantization_format_naming_a_module_is_high(tmp_path: Path) -> None:
    """compressed-tensors imports `module:name` instead of looking the format up; real formats (and a
    `sparsity_structure` of "2:4", which is no format) pass."""
    findings = _findings(tmp_path, "ct_format")
    assert [(f.rule_id, f.severity, f.evidence["field"]) for f in findings] == [
        ("WS-REPO-028", Severity.HIGH, "quantization_config.sparsity_config.format")]
    assert not _at_least(_findings(tmp_path, "ct_real"), Severity.LOW)
    # Review 36: auto-round writes its own backend as `packing_format` (`auto_round:gptq`), which compressed-tensors
    # never reads; it was high.
    (tmp_path / "auto-round").mkdir()
    (tmp_path / "auto-round" / "config.json").write_text(json.dumps({"model_type": "llama", "quantization_config": {
        "quant_method": "auto-round", "bits": 4, "group_size": 128, "packing_format": "auto_round:auto_gptq"}}))
    assert not _at_least(scan(tmp_path / "auto-round").findings, Severity.LOW)
