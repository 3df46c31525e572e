"""Loader differential for model folders: code transformers (and sentence-transformers, when installed) imports
from a folder's files must be named by wscan at the severity its opt-in deserves.

Each case is a real tiny GPT-2 folder written by transformers, plus one file that makes a loader import a
module creating a marker folder (harmless). The loader runs in a fresh interpreter (isolated, stripped
environment, offline, its own module cache, temporary cwd); the marker proves the code ran, and the scan of
the same folder must hold the rules the case names.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.scanning import rule_ids, scan

LOAD_TIMEOUT = 300.0
HAS_ST = importlib.util.find_spec("sentence_transformers") is not None

DRIVER = r"""
import json, os, sys
cases = json.loads(sys.stdin.read())
results = {}
for name, how, folder in cases:
    try:
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
        results[name] = "loaded"
    except BaseException as exc:
        results[name] = f"error: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:160]}"
print(json.dumps(results))
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


@dataclass(frozen=True)
class Built:
    folders: dict[str, Path]
    results: dict[str, str]
    markers: dict[str, Path]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    base = tmp_path_factory.mktemp("loader-paths")
    folders: dict[str, Path] = {}
    markers: dict[str, Path] = {}
    jobs = []
    for name, case in CASES.items():
        if case.how == "sentence-transformers" and not HAS_ST:
            continue
        model = tiny_gpt2(base / name / "model")
        outside = base / name / "outside"
        outside.mkdir()
        markers[name] = base / name / "MARKER"
        case.build(model, outside, markers[name])
        folders[name] = model
        jobs.append((name, case.how, str(model)))
    workdir = base / "work"
    workdir.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "HF_HOME": str(workdir / "hf"), "OMP_NUM_THREADS": "1",
           "HF_MODULES_CACHE": str(workdir / "modules"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]  # where sentence-transformers is
    proc = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path[:0] = {extra!r}\n" + DRIVER],
        input=json.dumps(jobs), capture_output=True, text=True, cwd=workdir, env=env, timeout=LOAD_TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return Built(folders, json.loads(proc.stdout.strip().splitlines()[-1]), markers)


@pytest.mark.parametrize("name", list(CASES))
def test_code_the_loader_runs_is_named(built: Built, name: str) -> None:
    if name not in built.folders:
        pytest.skip("sentence-transformers is not installed")
    assert built.markers[name].is_dir(), f"the loader did not run the code: {built.results[name]}"
    found = rule_ids(scan(built.folders[name]))
    assert CASES[name].rules <= found, found
