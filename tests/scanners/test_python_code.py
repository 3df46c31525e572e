"""Python files beside the weights: read with `ast`, each way of reaching outside named, real code quiet."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
import transformers

from tests.helpers.scanning import default_engine
from wscan.model import Severity
from wscan.report import Report
from wscan.scanners.python_code import _Resolver, category_of

MODELS = Path(transformers.__file__).parent / "models"


def scan_code(folder: Path, source: str, name: str = "modeling_x.py") -> Report:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"auto_map": {"AutoModel": "modeling_x.XModel"}}')
    (folder / name).write_text(source)
    report = default_engine().scan([folder / name])
    return report


def code_rules(report: Report) -> set[str]:
    return {f.rule_id for f in report.findings if f.rule_id != "WS-CODE-001"}


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("import os\nos.system('id')\n", "WS-CODE-002"),
        ("from os import system as s\ns('id')\n", "WS-CODE-002"),
        ("import os\ngetattr(os, 'popen')('id')\n", "WS-CODE-002"),
        ("import os\nrun = os.popen\nrun('id')\n", "WS-CODE-002"),
        ("__import__('os').system('id')\n", "WS-CODE-002"),
        ("import subprocess as sp\n", "WS-CODE-002"),  # importing it is reaching for it
        ("from subprocess import *\n", "WS-CODE-002"),
        ("import urllib.request\nurllib.request.urlopen('http://x')\n", "WS-CODE-003"),
        ("import requests\n", "WS-CODE-003"),
        ("exec(user_code)\n", "WS-CODE-004"),
        ("import importlib\nimportlib.import_module(name)\n", "WS-CODE-004"),
        ("import marshal\n", "WS-CODE-004"),
        ("import base64\nexec(base64.b64decode(b'cHJpbnQoMSk='))\n", "WS-CODE-005"),
        ("import zlib\neval(compile(zlib.decompress(DATA), 'x', 'exec'))\n", "WS-CODE-005"),
        ("import ctypes\n", "WS-CODE-006"),
        ("import pickle\npickle.load(open('vocab.pkl', 'rb'))\n", "WS-CODE-007"),
        ("open('/etc/passwd').read()\n", "WS-CODE-008"),
        ("open('../../outside.txt')\n", "WS-CODE-008"),
        ("from pathlib import Path\nPath('~/.bashrc')\n", "WS-CODE-008"),
        ("import shutil\nshutil.rmtree(folder)\n", "WS-CODE-008"),
        ("KEY = '~/.ssh/id_rsa'\n", "WS-CODE-008"),
        ("PAYLOAD = '" + "QUJD" * 200 + "'\n", "WS-CODE-009"),
        ("def broken(:\n", "WS-CODE-010"),
    ],
)
def test_each_reach_is_named(tmp_path: Path, source: str, rule: str) -> None:
    report = scan_code(tmp_path, source)
    assert code_rules(report) == {rule}
    assert "WS-CODE-001" in {f.rule_id for f in report.findings}


def test_many_findings_of_one_kind_never_hide_another(tmp_path: Path) -> None:
    """Findings were capped at a hundred in all: a hundred `dill` calls (medium) before `os.system` hid the critical
    one (helper 208). The cap is per category now."""
    filler = "".join(f"    dill.f{index}(x)\n" for index in range(150))
    report = scan_code(tmp_path, "import os\nimport dill\n\ndef setup(x):\n" + filler + "    os.system('id')\n")
    assert "WS-CODE-002" in code_rules(report)
    assert sum(f.rule_id == "WS-CODE-007" for f in report.findings) == 100


def test_a_config_past_a_cut_listing_still_marks_a_model_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder is listed up to 10,000 entries, in the file system's order; a config.json past them (20,000 files in
    the folder) made its code not model code, not judged (helper 208). A cut listing is completed by name: shown
    with the listing made to stop before config.json."""
    from wscan.scanners import python_code

    monkeypatch.setattr(python_code, "_listing", lambda folder: [f"n{i}.txt" for i in range(python_code.MAX_LISTING)])
    assert "WS-CODE-002" in code_rules(scan_code(tmp_path, "import os\nos.system('id')\n"))


def test_finding_names_the_line(tmp_path: Path) -> None:
    report = scan_code(tmp_path, "import torch\n\n\ndef f():\n    import os\n    os.system('id')\n")
    (finding,) = [f for f in report.findings if f.rule_id == "WS-CODE-002"]
    assert finding.evidence["line"] == 6
    assert finding.evidence["callee"] == "os.system"


def test_ordinary_import_module_is_an_import(tmp_path: Path) -> None:
    source = "import importlib\nif importlib.util.find_spec('flash_attn'):\n    importlib.import_module('flash_attn')\n"
    assert code_rules(scan_code(tmp_path, source)) == set()


def test_code_outside_a_model_folder_is_not_model_code(tmp_path: Path) -> None:
    (tmp_path / "tool.py").write_text("import subprocess\nsubprocess.run(['ls'])\n")
    assert default_engine().scan([tmp_path]).findings == []


# What Python imports and runs, spelled past the check by a red team (2026-12-03): the payload makes `marker`.
HIDDEN_CALLS = {
    "through-a-module-attribute": "import shutil\nshutil.os.system('mkdir marker')\n",
    "through-a-private-alias": "import tempfile\ntempfile._os.system('mkdir marker')\n",
    "through-sys-modules": "import os, sys\nsys.modules['os'].system('mkdir marker')\n",
    "after-a-star-import": "from os import *\nsystem('mkdir marker')\n",
    "after-a-700-term-sum": "x = " + "+".join(["1"] * 700) + "\nimport os\nos.system('mkdir marker')\n",
    # review 10
    "through-a-modules-alias": "import enum\nenum.bltns.exec(\"__import__('os').mkdir('marker')\")\n",
    "through-sys-modules-get": "import sys\nsys.modules.get('os').system('mkdir marker')\n",
    "through-another-modules-sys": "import os, shutil\nshutil.sys.modules['os'].system('mkdir marker')\n",
    "through-a-modules-builtins": "import json\njson.__builtins__['exec'](\"__import__('os').mkdir('marker')\")\n",
    "after-a-star-import-of-a-submodule": (
        "import asyncio\nfrom asyncio.subprocess import *\n"
        "async def main():\n    await (await create_subprocess_shell('mkdir marker')).wait()\nasyncio.run(main())\n"),
}


@pytest.mark.parametrize("case", list(HIDDEN_CALLS))
def test_what_python_runs_however_spelled_is_found(tmp_path: Path, case: str) -> None:
    import subprocess
    import sys

    report = scan_code(tmp_path, HIDDEN_CALLS[case])
    assert max(f.severity for f in report.findings) >= Severity.HIGH, case
    subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, '.'); import modeling_x"],
                   cwd=tmp_path, capture_output=True, timeout=60)
    assert (tmp_path / "marker").exists()  # the import ran it


def test_code_too_large_to_check_fails_closed(tmp_path: Path) -> None:
    """Over 8 MiB of Python is read by nothing but the loader: a padded custom_generate/generate.py ran at
    from_pretrained without trust_remote_code and passed as medium (red team)."""
    padded = "import os\nos.system('mkdir marker')\n" + "#" * 80 + "\n"
    model = model_folder(tmp_path / "model")
    (model / "custom_generate").mkdir()
    (model / "custom_generate" / "generate.py").write_text(padded * 110_000)
    found = {(f.rule_id, f.severity) for f in default_engine().scan([model]).findings}
    assert found >= {("WS-CODE-011", Severity.HIGH), ("WS-CODE-012", Severity.HIGH)}


def test_a_config_over_the_json_limit_fails_closed(tmp_path: Path) -> None:
    """modules.json over max-json-bytes named a module sentence-transformers imports; unread, it was medium."""
    from dataclasses import replace

    from wscan.config import Config
    from wscan.engine import Engine
    from wscan.limits import Limits

    (tmp_path / "modules.json").write_text('[{"idx": 0, "name": "0", "path": "", "type": "custom_mod.Pooler", '
                                           '"pad": "' + "x" * 5000 + '"}]')
    engine = Engine(Config(jobs=0, limits=replace(Limits(), max_json_bytes=4096)))
    assert ("WS-REPO-007", Severity.HIGH) in {(f.rule_id, f.severity) for f in engine.scan([tmp_path]).findings}


def test_transformers_own_model_code_is_only_listed(tmp_path: Path) -> None:
    shutil.copy(MODELS / "llama" / "modeling_llama.py", tmp_path / "modeling_llama.py")
    shutil.copy(MODELS / "llama" / "tokenization_llama.py", tmp_path / "tokenization_llama.py")
    (tmp_path / "config.json").write_text('{"auto_map": {"AutoModel": "modeling_llama.LlamaModel"}}')
    report = default_engine().scan([tmp_path])
    assert {f.rule_id for f in report.findings} == {"WS-REPO-001", "WS-CODE-001"}


def test_transformers_model_code_never_looks_dangerous() -> None:
    """A sample of real modelling and tokenizer code (every 10th file): no process, network, exec or blob."""
    files = sorted(p for p in MODELS.glob("*/*.py") if not p.name.startswith("convert_"))[::10]
    assert len(files) > 100
    for path in files:
        resolver = _Resolver()
        resolver.visit(ast.parse(path.read_bytes()))
        bad = [h for h in resolver.hits if h.category not in ("deserialization",)
               and not (h.category == "dynamic-code" and path.parent.name == "auto")]
        assert bad == [], f"{path.name}: {bad}"


def test_categories() -> None:
    assert category_of("subprocess.Popen") == "process"
    assert category_of("os.path.join") is None
    assert category_of("os.system") == "process"
    assert category_of("socket.socket.connect") == "network"


def test_severities(tmp_path: Path) -> None:
    report = scan_code(tmp_path, "import os\nos.system('id')\n")
    assert {f.rule_id: f.severity for f in report.findings} == {
        "WS-CODE-001": Severity.MEDIUM, "WS-CODE-002": Severity.CRITICAL}


def model_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"}')
    (folder / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    return folder


def test_custom_generate_is_high_by_itself(tmp_path: Path) -> None:
    """from_pretrained(folder) imports custom_generate/generate.py even with trust_remote_code=False."""
    model = model_folder(tmp_path / "model")
    (model / "custom_generate").mkdir()
    (model / "custom_generate" / "generate.py").write_text("def generate(model, **kwargs):\n    return None\n")
    (model / "custom_generate" / "helpers.py").write_text("def top_k(x):\n    return x\n")
    report = default_engine().scan([model])
    found = {(f.rule_id, f.severity, Path(f.location.path).name) for f in report.findings}
    assert found == {
        ("WS-CODE-011", Severity.HIGH, "generate.py"), ("WS-CODE-001", Severity.MEDIUM, "generate.py"),
        ("WS-CODE-011", Severity.HIGH, "helpers.py"), ("WS-CODE-001", Severity.MEDIUM, "helpers.py")}


def test_custom_generate_code_is_read_like_model_code(tmp_path: Path) -> None:
    model = model_folder(tmp_path / "model")
    (model / "custom_generate").mkdir()
    (model / "custom_generate" / "generate.py").write_text("import subprocess\nsubprocess.run(['id'])\n")
    report = default_engine().scan([model / "custom_generate" / "generate.py"])
    assert {f.rule_id for f in report.findings} == {"WS-CODE-001", "WS-CODE-002", "WS-CODE-011"}


def test_custom_generate_needs_a_model_beside_it(tmp_path: Path) -> None:
    (tmp_path / "custom_generate").mkdir()
    (tmp_path / "custom_generate" / "generate.py").write_text("def generate(model):\n    return None\n")
    assert default_engine().scan([tmp_path]).findings == []


def test_code_in_a_model_subfolder_is_model_code(tmp_path: Path) -> None:
    model = model_folder(tmp_path / "model")
    deep = model / "pkg" / "layers" / "ops"
    deep.mkdir(parents=True)
    (deep / "kernel.py").write_text("import subprocess\n")
    report = default_engine().scan([model])
    assert {f.rule_id for f in report.findings} == {"WS-CODE-001", "WS-CODE-002"}


def test_a_config_far_above_or_past_a_repository_top_does_not_count(tmp_path: Path) -> None:
    model_folder(tmp_path)
    far = tmp_path / "a" / "b" / "c" / "d" / "e"
    far.mkdir(parents=True)
    (far / "tool.py").write_text("import subprocess\n")
    repo = tmp_path / "src" / "project"
    (repo / ".git").mkdir(parents=True)
    (repo / "tool.py").write_text("import subprocess\n")
    assert default_engine().scan([far, repo]).findings == []


@pytest.mark.parametrize("marker", ["modules.json", "config_sentence_transformers.json"])
def test_sentence_transformers_files_mark_a_model(tmp_path: Path, marker: str) -> None:
    (tmp_path / marker).write_text('[{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"}]'
                                   if marker == "modules.json" else '{"prompts": {}}')
    (tmp_path / "1_Custom").mkdir()
    (tmp_path / "1_Custom" / "layer.py").write_text("import os\nos.system('id')\n")
    report = default_engine().scan([tmp_path])
    assert {f.rule_id for f in report.findings} == {"WS-CODE-001", "WS-CODE-002"}


def test_code_too_deep_to_parse_here_is_high(tmp_path: Path) -> None:
    """Python run with a higher recursion limit (torch's inductor sets 2,000) imports what ast.parse refuses at the
    default one: it was medium (review 10)."""
    report = scan_code(tmp_path, "import os\nos.system('id')\nif False:\n    x = a" + ".b" * 3000 + "\n")
    assert ("WS-CODE-012", Severity.HIGH) in {(f.rule_id, f.severity) for f in report.findings}


def test_long_dotted_names_are_walked_in_linear_time() -> None:
    """Each extra part doubled the time of the first walk (review 10: 40 parts ran past the file's time limit)."""
    import time

    started = time.monotonic()
    assert category_of("shutil" + ".os" * 40 + ".system") == "process"
    assert category_of("shutil" + ".os" * 40 + ".getcwd") is None
    assert time.monotonic() - started < 1


def test_a_star_import_of_builtins_is_not_a_reach(tmp_path: Path) -> None:
    assert code_rules(scan_code(tmp_path, "from builtins import *\nprint(1)\n")) <= {"WS-REPO-001"}
