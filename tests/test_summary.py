"""One summary per model folder, from facts the scanners saw, in every output format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import torch
from safetensors.numpy import save_file

import wscan
from wscan.model import Severity
from wscan.output import render_json, render_sarif, render_text, report_schema
from wscan.report import ModelSummary, Report


def only_model(report: Report) -> ModelSummary:
    (model,) = report.models
    return model


def tiny_llama() -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                         torch_dtype="float32")
    return LlamaForCausalLM(config)


@pytest.fixture(scope="module")
def hf_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp("llama")
    model = tiny_llama()
    model.save_pretrained(out, max_shard_size="20KB")
    (out / "README.md").write_text("---\nlicense: llama3.1\nbase_model: meta-llama/Llama-3.1-8B\n---\n# Tiny\n")
    return out, sum(p.numel() for p in model.parameters())


def test_real_sharded_model(hf_model: tuple[Path, int]) -> None:
    folder, parameters = hf_model
    report = wscan.scan([folder])
    model = only_model(report)
    assert model.parameters == parameters
    assert model.shards == 2
    assert model.files == len(list(folder.iterdir()))
    assert model.size == sum(p.stat().st_size for p in folder.iterdir())
    assert model.dtypes == ("F32",)
    assert model.architecture == "LlamaForCausalLM"
    assert (model.kind, model.base_model) == ("full", "meta-llama/Llama-3.1-8B")
    assert (model.model_card, model.license) == (True, "llama3.1")
    assert (model.worst, model.verdict) == (None, "pass")
    assert {"safetensors", "model-config", "model-card", "shards"} <= set(model.formats)


def test_pytorch_copy_beside_safetensors_is_not_counted_twice(tmp_path: Path) -> None:
    model = tiny_llama()
    model.save_pretrained(tmp_path)
    model.save_pretrained(tmp_path, safe_serialization=False)
    torch.save({"state": {0: {"exp_avg": torch.zeros(1000)}}}, tmp_path / "optimizer.pt")
    summary = only_model(wscan.scan([tmp_path]))
    assert summary.parameters == sum(p.numel() for p in model.parameters())
    assert {"safetensors", "pickle", "zip"} <= set(summary.formats)


def test_pytorch_only_model_counts_storages(tmp_path: Path) -> None:
    model = tiny_llama().to(torch.bfloat16)
    model.save_pretrained(tmp_path, safe_serialization=False)
    summary = only_model(wscan.scan([tmp_path]))
    assert summary.parameters == sum(p.numel() for p in model.parameters())
    assert summary.dtypes == ("BF16",)


def test_adapter(tmp_path: Path) -> None:
    (tmp_path / "adapter_config.json").write_text(json.dumps(
        {"peft_type": "LORA", "base_model_name_or_path": "Qwen/Qwen2.5-7B-Instruct", "r": 8}))
    save_file({"base_model.model.q_proj.lora_A.weight": np.zeros((8, 16), dtype=np.float16)},
              str(tmp_path / "adapter_model.safetensors"))
    (tmp_path / "LICENSE").write_text("MIT\n")
    summary = only_model(wscan.scan([tmp_path]))
    assert (summary.kind, summary.base_model) == ("adapter", "Qwen/Qwen2.5-7B-Instruct")
    assert (summary.parameters, summary.dtypes) == (128, ("F16",))
    assert (summary.model_card, summary.license) == (False, "see LICENSE")


def test_quantization_from_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(
        {"architectures": ["LlamaForCausalLM"], "quantization_config": {"quant_method": "awq", "bits": 4}}))
    assert only_model(wscan.scan([tmp_path])).quantization == "awq 4-bit"


def test_bitsandbytes_flags(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(
        {"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}}))
    assert only_model(wscan.scan([tmp_path])).quantization == "bitsandbytes 4-bit"


def test_diffusers_pipeline_is_one_model(tmp_path: Path) -> None:
    (tmp_path / "model_index.json").write_text('{"_class_name": "StableDiffusionPipeline"}')
    for part in ("unet", "vae"):
        (tmp_path / part).mkdir()
        save_file({"w": np.zeros(4, dtype=np.float32)}, str(tmp_path / part / "diffusion_pytorch_model.safetensors"))
    summary = only_model(wscan.scan([tmp_path]))
    assert (summary.files, summary.parameters) == (3, 8)


def test_each_model_folder_gets_its_own_summary_and_verdict(tmp_path: Path) -> None:
    (tmp_path / "good").mkdir()
    save_file({"w": np.zeros(4, dtype=np.float32)}, str(tmp_path / "good" / "m.safetensors"))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "model.bin").write_bytes(b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x8c\x06system"
                                                 b"\x93\x8c\x02id\x85R.")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("nothing to see\n")
    report = wscan.scan([tmp_path])
    by_path = {Path(m.path).name: m for m in report.models}
    assert set(by_path) == {"good", "bad"}  # a folder without weights or config is not a model
    assert (by_path["good"].verdict, by_path["bad"].verdict) == ("pass", "fail")
    assert by_path["bad"].worst == Severity.CRITICAL


def test_summary_in_every_format(hf_model: tuple[Path, int]) -> None:
    folder, parameters = hf_model
    report = wscan.scan([folder])
    doc = json.loads(render_json(report))
    jsonschema.Draft202012Validator(report_schema()).validate(doc)
    (model,) = doc["models"]
    assert (model["parameters"], model["shards"], model["license"]) == (parameters, 2, "llama3.1")
    sarif = json.loads(render_sarif(report, srcroot=folder))
    assert sarif["runs"][0]["properties"]["models"] == doc["models"]
    text = render_text(report)
    assert "Models:" in text and "2 shards" in text and "licence llama3.1" in text


@pytest.mark.parametrize("path", ["//models/other/config.json", "/x/config.json", "x/config.json", "config.json"])
def test_model_root_walk_ends_at_every_kind_of_top(path: str) -> None:
    # "//" is its own parent, as "/" and "." are: a walk that stopped only at those two never ended.
    from wscan.summary import model_root

    folder = path.rsplit("/", 1)[0] if "/" in path else "."
    assert model_root(path, {"//models/pipe"}) == folder
