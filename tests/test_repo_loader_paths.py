"""Loader differential for model folders: code transformers (and sentence-transformers) imports
from a folder's files must be named by wscan at the severity its opt-in deserves.

Each case is a real tiny GPT-2 folder written by transformers, plus one file that makes a loader import a
module creating a marker folder (harmless). The loader runs in a fresh interpreter (isolated, stripped
environment, offline, its own module cache, temporary cwd); the marker proves the code ran, and the scan of
the same folder must hold the rules the case names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.sandbox import Outcome, load_each
from tests.helpers.scanning import rule_ids, scan

LOAD_TIMEOUT = 300.0
LOAD = """
def load(folder, how):
    if how == "model":
        from transformers import AutoModelForCausalLM
        AutoModelForCausalLM.from_pretrained(folder)  # default arguments: trust_remote_code not given
    elif how == "model-trusted":
        from transformers import AutoModelForCausalLM
        AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)
    elif how == "pipeline-trusted":
        from transformers import pipeline
        pipeline(model=folder, trust_remote_code=True)
    elif how == "sentence-transformers":
        from sentence_transformers import SentenceTransformer
        SentenceTransformer(folder)  # default arguments
"""


def marker_code(marker: Path, tail: str = "") -> str:
    return f"import os\nos.makedirs({str(marker)!r}, exist_ok=True)\n{tail}"


def tiny_gpt2(folder: Path) -> Path:
    """A genuine GPT-2 folder (config.json, generation_config.json, model.safetensors), as transformers writes it."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=64, n_positions=32)).save_pretrained(folder)
    return folder


def edit_config(folder: Path, edit: Callable[[dict[str, object]], None]) -> None:
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config, indent=2))  # json.dumps writes NaN as Python reads it


@dataclass(frozen=True)
class Case:
    how: str
    rules: frozenset[str]  # wscan must report at least these for the folder
    build: Callable[[Path, Path, Path], None]  # (model folder, a folder outside it, marker)


def custom_generate(model: Path, _: Path, marker: Path) -> None:
    (model / "custom_generate").mkdir()
    (model / "custom_generate" / "generate.py").write_text(
        marker_code(marker, "def generate(model, **kwargs):\n    return None\n"))


def custom_generate_linked_outside(model: Path, outside: Path, marker: Path) -> None:
    (outside / "generate.py").write_text(marker_code(marker, "def generate(model, **kwargs):\n    return None\n"))
    (model / "custom_generate").symlink_to(outside, target_is_directory=True)


EVIL_MODEL = "from transformers import GPT2LMHeadModel\n\n\nclass Evil(GPT2LMHeadModel):\n    pass\n"
EVIL_PIPE = "from transformers import TextGenerationPipeline\n\n\nclass EvilPipe(TextGenerationPipeline):\n    pass\n"


def auto_map_with_nan(model: Path, _: Path, marker: Path) -> None:
    (model / "modeling_evil.py").write_text(marker_code(marker, EVIL_MODEL))

    def edit(config: dict[str, object]) -> None:
        config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.Evil"}
        config["layer_norm_scale"] = float("nan")

    edit_config(model, edit)


def custom_pipeline_local(model: Path, _: Path, marker: Path) -> None:
    (model / "pipe.py").write_text(marker_code(marker, EVIL_PIPE))
    edit_config(model, lambda c: c.update(custom_pipelines={"evil-task": {"impl": "pipe.EvilPipe",
                                                                          "pt": ["AutoModelForCausalLM"]}}))


def custom_pipeline_elsewhere(model: Path, outside: Path, marker: Path) -> None:
    (outside / "pipe.py").write_text(marker_code(marker, EVIL_PIPE))
    edit_config(model, lambda c: c.update(custom_pipelines={"evil-task": {"impl": f"{outside}--pipe.EvilPipe",
                                                                          "pt": ["AutoModelForCausalLM"]}}))


ST_MODULE = "import torch\n\n\nclass Evil(torch.nn.Module):\n    @classmethod\n    def load(cls, *a, **k):\n" \
            "        return cls()\n"  # fmt: skip


def st_module_local(model: Path, _: Path, marker: Path) -> None:
    (model / "custom_pool.py").write_text(marker_code(marker, ST_MODULE))
    (model / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": "custom_pool.Evil"}]))


def st_module_elsewhere(model: Path, outside: Path, marker: Path) -> None:
    (outside / "custom_pool.py").write_text(marker_code(marker, ST_MODULE))
    (model / "modules.json").write_text(
        json.dumps([{"idx": 0, "name": "0", "path": "", "type": f"{outside}--custom_pool.Evil"}]))


CASES = {
    "custom-generate": Case("model", frozenset({"WS-CODE-011"}), custom_generate),
    "custom-generate-linked-outside": Case("model", frozenset({"WS-FILE-012"}), custom_generate_linked_outside),
    "auto-map-in-nan-config": Case("model-trusted", frozenset({"WS-REPO-005", "WS-REPO-001"}), auto_map_with_nan),
    "custom-pipeline-local": Case("pipeline-trusted", frozenset({"WS-REPO-001"}), custom_pipeline_local),
    "custom-pipeline-elsewhere": Case("pipeline-trusted", frozenset({"WS-REPO-002"}), custom_pipeline_elsewhere),
    "st-module-local": Case("sentence-transformers", frozenset({"WS-REPO-008"}), st_module_local),
    "st-module-elsewhere": Case("sentence-transformers", frozenset({"WS-REPO-002"}), st_module_elsewhere),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Outcome]]:
    """Each case's model folder, loaded the way a user would in a sandboxed child (tests/helpers/sandbox.py)."""
    base = tmp_path_factory.mktemp("loader-paths")
    folders: dict[str, Path] = {}
    jobs = []
    for name, case in CASES.items():
        model = tiny_gpt2(base / name / "model")
        outside = base / name / "outside"
        outside.mkdir()
        marker = base / name / "MARKER"
        case.build(model, outside, marker)
        folders[name] = model
        jobs.append((name, model, case.how, marker))
    workdir = base / "work"
    workdir.mkdir()
    env = {"HF_HOME": str(workdir / "hf"), "HF_MODULES_CACHE": str(workdir / "modules"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}  # fmt: skip
    outcomes = load_each(LOAD, jobs, workdir, LOAD_TIMEOUT, env)
    return {name: (folders[name], outcomes[name]) for name in CASES}


@pytest.mark.parametrize("name", list(CASES))
def test_code_the_loader_runs_is_named(built: dict[str, tuple[Path, Outcome]], name: str) -> None:
    folder, outcome = built[name]
    assert outcome.executed, f"the loader did not run the code: {outcome.result}"
    found = rule_ids(scan(folder))
    assert CASES[name].rules <= found, found
