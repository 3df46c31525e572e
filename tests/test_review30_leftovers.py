"""A thirtieth review's leftovers: paths a FunASR config.yaml or a lerobot pipeline makes the loader open outside
the model folder, the requirements.txt FunASR pip-installs once a config opts in, and the modules old PEFT imported
by the names adapter_config.json gives (review N5). Hand-made files under data/review30, as the review's were,
beside what the libraries write (a PEFT 0.21.2 LoRA adapter, a lerobot pipeline, a FunASR trainer's config).

- FunASR 1.4.16 (funasr/download/download_model_from_hub.py, auto/auto_model.py): config.yaml's `remote_code` is
  imported from its folder once trust_remote_code is set; `init_param` is kept when something is at that path (as
  given: absolute, or from the working folder) and torch.load'ed, as is a component's `*_conf.init_param_path`;
  `tokenizer_conf.token_list`, `seg_dict`, `bpemodel`, `frontend_conf.cmvn_file` and `jieba_usr_dict` are read as
  data, unless the folder has its own tokens.txt/tokens.json, seg_dict, bpe.model, am.mvn or jieba_usr_dict, which
  then replace them.
- lerobot 0.4.4 (processor/pipeline.py): a step's `state_file` is `base_path / state_file`, read with safetensors.
- PEFT before its allowlists (peft#3085): AutoPeftModel imports `auto_mapping.parent_library`, a LoRA layer with a
  `megatron_config` imports `megatron_core`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.scanning import scan
from wscan.model import Finding, Severity

DATA = Path(__file__).parent / "data" / "review30"


def _findings(tmp_path: Path, case: str) -> list[Finding]:
    """The case copied out of the source tree into a folder of its own, as a model is, and scanned."""
    target = tmp_path / case
    shutil.copytree(DATA / case, target)
    return scan(target).findings


def _judged(findings: list[Finding]) -> list[tuple[str, Severity, str]]:
    """Rule, severity and field of every finding at low or above, sorted."""
    return sorted((f.rule_id, f.severity, str(f.evidence.get("field", ""))) for f in findings
                  if f.severity >= Severity.LOW)  # fmt: skip


def test_a_funasr_checkpoint_or_code_outside_the_folder_is_high(tmp_path: Path) -> None:
    """init_param and a component's init_param_path are torch.load'ed (a pickle wscan never sees), remote_code is
    imported once the user opts in (code other than the folder's)."""
    assert _judged(_findings(tmp_path, "funasr_init_param")) == [
        ("WS-REPO-013", Severity.HIGH, "audio_adaptor_conf.init_param_path"),
        ("WS-REPO-013", Severity.HIGH, "init_param"),
        ("WS-REPO-013", Severity.HIGH, "remote_code"),
    ]


def test_funasr_data_files_outside_the_folder_are_medium(tmp_path: Path) -> None:
    """A token list or CMVN statistics read from elsewhere: data, not code."""
    assert _judged(_findings(tmp_path, "funasr_data_paths")) == [
        ("WS-REPO-029", Severity.MEDIUM, "frontend_conf.cmvn_file"),
        ("WS-REPO-029", Severity.MEDIUM, "tokenizer_conf.token_list"),
    ]


def test_an_absolute_funasr_path_is_judged_by_what_is_there(tmp_path: Path) -> None:
    """Something at the path on this machine: FunASR opens it. A data key the folder's own file replaces: not."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in ("model.pt", "tokens.txt", "am.mvn"):
        (elsewhere / name).write_bytes(b"x")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.yaml").write_text(
        f"model: Paraformer\ninit_param: {elsewhere}/model.pt\ntokenizer_conf: {{token_list: {elsewhere}/tokens.txt}}\n"
        f"frontend_conf: {{cmvn_file: {elsewhere}/am.mvn}}\n"
    )
    (model / "am.mvn").write_text("<Nnet>\n</Nnet>\n")
    assert _judged(scan(model).findings) == [
        ("WS-REPO-013", Severity.HIGH, "init_param"),
        ("WS-REPO-029", Severity.MEDIUM, "tokenizer_conf.token_list"),
    ]


def test_with_a_configuration_json_only_its_file_path_metas_replace_a_key(tmp_path: Path) -> None:
    """download_model then reads config.yaml through configuration.json: init_param is replaced by the model.pt
    file_path_metas names; the folder's tokens.txt, which it does not name, replaces nothing."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in ("model.pt", "tokens.txt"):
        (elsewhere / name).write_bytes(b"x")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.yaml").write_text(
        f"model: Paraformer\ninit_param: {elsewhere}/model.pt\ntokenizer_conf: {{token_list: {elsewhere}/tokens.txt}}\n"
    )
    (model / "configuration.json").write_text(
        '{"framework": "pytorch", "model": {"type": "funasr"}, '
        '"file_path_metas": {"init_param": "model.pt", "config": "config.yaml"}}'
    )
    for name in ("model.pt", "tokens.txt"):
        (model / name).write_bytes(b"x")
    assert _judged(scan(model).findings) == [("WS-REPO-029", Severity.MEDIUM, "tokenizer_conf.token_list")]


def test_what_funasr_writes_and_configs_of_other_tools_stay_clean(tmp_path: Path) -> None:
    """A trainer's config.yaml (the writer's absolute paths, absent here: FunASR takes the folder's files), the
    review's real Paraformer config, and a training config without FunASR's top-level `model`."""
    assert not _judged(_findings(tmp_path, "funasr_finetuned"))
    assert not _judged(_findings(tmp_path, "funasr_real"))
    (tmp_path / "hydra").mkdir()
    (tmp_path / "hydra" / "config.yaml").write_text("init_param: ../base/model.pt\ntokenizer_conf: {token_list: /x}\n")
    assert not _judged(scan(tmp_path / "hydra").findings)


def test_a_requirements_file_beside_an_opt_in_is_noted(tmp_path: Path) -> None:
    """FunASR pip-installs requirements.txt before it imports the code the config opts in to."""
    judged = _judged(_findings(tmp_path, "funasr_requirements"))
    assert ("WS-REPO-021", Severity.HIGH, "trust_remote_code") in judged
    assert ("WS-REPO-030", Severity.LOW, "trust_remote_code") in judged


def test_a_requirements_file_without_an_opt_in_is_not(tmp_path: Path) -> None:
    target = tmp_path / "funasr_real"
    shutil.copytree(DATA / "funasr_real", target)
    (target / "requirements.txt").write_text("torch>=2.0\n")
    assert not _judged(scan(target).findings)


def test_a_lerobot_state_file_outside_the_folder_is_medium(tmp_path: Path) -> None:
    """lerobot reads it with safetensors: tensors from elsewhere, no code."""
    assert _judged(_findings(tmp_path, "lerobot_state_outside")) == [
        ("WS-REPO-029", Severity.MEDIUM, "steps[0].state_file"),
    ]


def test_lerobot_state_files_in_the_folder_pass(tmp_path: Path) -> None:
    """What lerobot's save_pretrained writes: the file's name, beside the pipeline."""
    assert not _judged(_findings(tmp_path, "lerobot_real"))


@pytest.mark.parametrize(
    ("case", "field", "module"),
    [
        ("peft_parent_library", "auto_mapping.parent_library", "unittest.__main__"),
        ("peft_megatron", "megatron_core", "evil_module"),
    ],
)
def test_a_module_old_peft_imports_is_high(tmp_path: Path, case: str, field: str, module: str) -> None:
    findings = [f for f in _findings(tmp_path, case) if f.rule_id == "WS-REPO-031"]
    assert [(f.severity, f.evidence["field"], f.evidence["module"]) for f in findings] == [
        (Severity.HIGH, field, module)]


def test_what_peft_writes_passes(tmp_path: Path) -> None:
    """A PEFT 0.21.2 LoRA adapter (auto_mapping null, megatron_core "megatron.core" with no megatron_config), the
    auto_mapping PEFT writes for a transformers model and for a module of the running script, and a megatron_core
    that is never imported (no megatron_config)."""
    assert not _judged(_findings(tmp_path, "peft_real"))
    for name, body in {
        "auto": '{"peft_type": "LORA", "task_type": null, "auto_mapping": {"base_model_class": "LlamaForCausalLM", '
                '"parent_library": "transformers.models.llama.modeling_llama"}, "megatron_core": "megatron.core"}',
        "custom": '{"peft_type": "LORA", "task_type": null, "auto_mapping": {"base_model_class": "Net", '
                  '"parent_library": "__main__"}}',
        "unused": '{"peft_type": "LORA", "task_type": "CAUSAL_LM", "megatron_config": null, "megatron_core": "x"}',
    }.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "adapter_config.json").write_text(body)
        assert not _judged(scan(tmp_path / name).findings), name
