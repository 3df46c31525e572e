"""Configuration keys loaders open as paths, write to, or import by name (a twelfth review's bypasses, 0 findings
before): a real sentence-transformers folder, written by the library, passes; each hostile edit of it is named.

Three edits are proved with the real loader (SentenceTransformer(folder), in a sandboxed child with an audit hook
that leaves a marker when the load opens a file in the sibling `outside` folder or makes a temporary folder):
a module `path` outside the folder, a tokenizer `vocab_file` outside it, and a Dense `activation_function` the
loader imports and calls. The others are the same loaders' keys, checked at scan level.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.sandbox import WATCH_OUTSIDE, Outcome, load_each
from tests.helpers.scanning import rule_ids, scan
from wscan.model import Severity

LOAD = WATCH_OUTSIDE + """
def load(folder, how):
    watch_outside(folder, "tempfile.mkdtemp")
    from sentence_transformers import SentenceTransformer
    SentenceTransformer(folder, device="cpu")
"""
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz"]


def _hf_model(folder: Path) -> Path:
    """A tiny BERT with its word-piece tokenizer, as transformers saves them."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True)
    (folder / "source-vocab.txt").write_text("\n".join(VOCAB) + "\n")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=32)  # fmt: skip
    BertModel(config).save_pretrained(folder)
    BertTokenizer(str(folder / "source-vocab.txt")).save_pretrained(folder)
    (folder / "source-vocab.txt").unlink()
    return folder


@pytest.fixture(scope="module")
def real_st(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SentenceTransformer (transformer, mean pooling, a Dense layer with tanh) saved by sentence-transformers."""
    import torch
    from sentence_transformers import SentenceTransformer, models

    base = tmp_path_factory.mktemp("st")
    hf = _hf_model(base / "hf")
    modules = [models.Transformer(str(hf)), models.Pooling(8), models.Dense(8, 4, activation_function=torch.nn.Tanh())]
    SentenceTransformer(modules=modules, device="cpu").save(str(base / "model"))
    return base / "model"


def _edit(folder: Path, name: str, edit: Callable[[Any], Any]) -> None:
    path = folder / name
    data = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps(edit(data) or data, indent=2))


def _module_path_outside(model: Path, outside: Path) -> None:
    """The transformer module (saved at the top of the folder, path "") loaded from a copy elsewhere."""
    (outside / "transformer").mkdir()
    for item in model.iterdir():
        if item.is_file() and item.name not in ("modules.json", "README.md"):
            shutil.copy(item, outside / "transformer" / item.name)
    _edit(model, "modules.json", lambda m: [dict(e, path=str(outside / "transformer")) if e["idx"] == 0 else e
                                            for e in m])  # fmt: skip


def _vocab_outside(model: Path, outside: Path) -> None:
    (outside / "vocab.txt").write_text((model / "vocab.txt").read_text())
    (model / "tokenizer.json").unlink()  # the word-piece tokenizer is then built from the vocabulary file
    _edit(model, "tokenizer_config.json", lambda c: c.update(vocab_file=str(outside / "vocab.txt")))


def _dense_activation(model: Path, _: Path) -> None:
    _edit(model, "2_Dense/config.json", lambda c: c.update(activation_function="tempfile.mkdtemp"))


PROVED: dict[str, tuple[Callable[[Path, Path], None] | None, set[str]]] = {
    "real": (None, set()),
    "module-path-outside": (_module_path_outside, {"WS-REPO-013"}),
    "vocab-file-outside": (_vocab_outside, {"WS-REPO-013"}),
    "dense-activation": (_dense_activation, {"WS-REPO-014"}),
}


@pytest.fixture(scope="module")
def loaded(real_st: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Outcome]]:
    base = tmp_path_factory.mktemp("st-cases")
    jobs = []
    folders = {}
    for name, (build, _) in PROVED.items():
        model = base / name / "model"
        shutil.copytree(real_st, model)
        (base / name / "outside").mkdir()
        if build is not None:
            build(model, base / name / "outside")
        folders[name] = model
        jobs.append((name, model, "st", base / name / "MARKER"))
    workdir = base / "work"
    workdir.mkdir()
    env = {"HF_HOME": str(workdir / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    outcomes = load_each(LOAD, jobs, workdir, 300.0, env)
    return {name: (folders[name], outcomes[name]) for name in PROVED}


@pytest.mark.parametrize("name", list(PROVED))
def test_loader_keys_proved_with_sentence_transformers(loaded: dict[str, tuple[Path, Outcome]], name: str) -> None:
    folder, outcome = loaded[name]
    expected = PROVED[name][1]
    report = scan(folder)
    high = {f.rule_id for f in report.findings if f.severity >= Severity.HIGH}
    if not expected:
        assert outcome.loaded and not outcome.executed, outcome
        assert not high, report.findings
        return
    assert outcome.executed, f"the loader did not act on the key: {outcome.result}"
    assert expected <= high, report.findings


def _one(tmp_path: Path, files: dict[str, object]) -> set[str]:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))  # a string is the file's text
    return rule_ids(scan(tmp_path))


@pytest.mark.parametrize(
    ("files", "rule"),
    [
        ({"tokenizer_config.json": {"tokenizer_class": "BertTokenizerFast", "tokenizer_file": "/etc/passwd"}},
         "WS-REPO-013"),
        ({"tokenizer_config.json": {"merges_file": "../../merges.txt"}}, "WS-REPO-013"),
        ({"0_Transformer/sentence_bert_config.json": {"tokenizer_args": {"vocab_file": "~/secret.txt"}}},
         "WS-REPO-013"),
        ({"0_Transformer/sentence_bert_config.json": {"model_args": {"device_map": {"encoder": "disk"},
                                                                     "offload_folder": "/var/tmp/x"}}},
         "WS-REPO-016"),
        ({"config.json": {"architectures": ["BertForSequenceClassification"],
                          "sentence_transformers": {"activation_fn": "torch.utils.collect_env.main"}}},
         "WS-REPO-014"),
        ({"config.json": {"sbert_ce_default_activation_function": "torch.utils.collect_env.main"}}, "WS-REPO-014"),
        ({"config.json": {"backbone": "/usr/lib", "use_pretrained_backbone": True}}, "WS-REPO-013"),
        ({"audio_tokenizer_config.json": {"audio_tokenizer_class": "AutoModel",
                                          "audio_tokenizer_name_or_path": "/usr/lib"}}, "WS-REPO-013"),
        ({"processor_config.json": {"audio_tokenizer": {"audio_tokenizer_class": "AutoModel",
                                                        "audio_tokenizer_name_or_path": "\\\\srv\\models\\x"}}},
         "WS-REPO-013"),
        ({"router_config.json": {"types": {"../../elsewhere": "sentence_transformers.models.Transformer"}}},
         "WS-REPO-013"),
        ({"router_config.json": {"types": {"query": "gensim.models.Word2Vec"}}}, "WS-REPO-015"),
        ({"0_WordEmbeddings/wordembedding_config.json": {"tokenizer_class": "pickle.Unpickler"}}, "WS-REPO-015"),
        ({"0_Transformer/sentence_bert_config.json": {"model_args": {"trust_remote_code": True}}}, "WS-REPO-003"),
        # A fifteenth review: a list of files, a name relative to the working folder (opened as given), a weights
        # variant that walks into folders, a sentence-transformers tokenizer path.
        ({"tokenizer_config.json": {"fast_tokenizer_files": ["/etc/passwd"]}}, "WS-REPO-013"),
        ({"tokenizer_config.json": {"tokenizer_file": "elsewhere/tokenizer.json"}}, "WS-REPO-013"),
        ({"sentence_bert_config.json": {"tokenizer_args": {"tokenizer_file": "tokenizer.json"}}}, "WS-REPO-013"),
        ({"sentence_bert_config.json": {"model_args": {"variant": "x/../../../outside/evil"}}}, "WS-REPO-013"),
        ({"sentence_bert_config.json": {"tokenizer_name_or_path": "/usr/lib"}}, "WS-REPO-013"),
        ({"modules.json": '[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer", '
                          '"zz": ' + "[" * 990 + "0" + "]" * 990 + "}]"}, "WS-REPO-017"),
        # A sixteenth review (diffusers 0.42.1, peft 0.21.2, each load proved with an audit hook and a canary in the
        # file read): a multitask prompt-tuning adapter opens its init file as given while it is built, a SHADOW
        # adapter loads its shadow model, ModularPipeline.load_components loads a component from its spec's path or
        # subfolder, AutoPeftModel loads the base model from a local path.
        ({"adapter_config.json": {"peft_type": "MULTITASK_PROMPT_TUNING", "prompt_tuning_init": "AVERAGE_SOURCE_TASKS",
                                  "prompt_tuning_init_state_dict_path": "source_tasks.pt"}}, "WS-REPO-013"),
        ({"adapter_config.json": {"peft_type": "SHADOW", "shadow_model": "/usr/lib"}}, "WS-REPO-013"),
        ({"modular_model_index.json": {"_class_name": "StableDiffusionXLModularPipeline", "vae": [
            "diffusers", "AutoencoderKL", {"pretrained_model_name_or_path": "/usr/lib", "subfolder": None}]}},
         "WS-REPO-013"),
        ({"modular_model_index.json": {"_class_name": "StableDiffusionXLModularPipeline", "vae": [
            "diffusers", "AutoencoderKL", {"pretrained_model_name_or_path": "stabilityai/stable-diffusion-xl-base-1.0",
                                           "subfolder": "../../../outside/vae"}]}}, "WS-REPO-013"),
        ({"model_index.json": {"_class_name": "StableDiffusionPipeline", "unet": [
            "diffusers", "UNet2DConditionModel", {"pretrained_model_name_or_path": "org/repo", "variant": "a/../b"}]}},
         "WS-REPO-013"),
        ({"adapter_config.json": {"peft_type": "LORA", "base_model_name_or_path": "../base/llama"}}, "WS-REPO-018"),
    ],
    ids=["tokenizer-file", "merges-file", "tokenizer-args", "offload-folder", "cross-encoder", "cross-encoder-legacy",
         "backbone", "audio-tokenizer", "processor-audio-tokenizer", "router-folder", "router-type",
         "word-embeddings-tokenizer", "nested-trust-remote-code", "fast-tokenizer-files", "working-folder-relative",
         "tokenizer-args-relative", "variant", "tokenizer-name-or-path", "nested-too-deep", "peft-mpt-init-file",
         "peft-shadow-model", "diffusers-spec-path", "diffusers-spec-subfolder", "diffusers-spec-variant",
         "peft-base-model-path"],
)  # fmt: skip
def test_loader_keys_at_scan_level(tmp_path: Path, files: dict[str, object], rule: str) -> None:
    assert rule in _one(tmp_path, files)


def test_plain_values_of_those_keys_pass(tmp_path: Path) -> None:
    """What real files hold there: names inside the folder, hub ids, activations, the library's own classes."""
    files = {
        "config.json": {"architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new",
                        "_name_or_path": "/home/someone/models/gpt2", "backbone": "microsoft/resnet-50",
                        "sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid"}},
        # save_pretrained leaves the file arguments out (a value there is opened as given, not from the folder)
        "tokenizer_config.json": {"tokenizer_class": "BertTokenizer",
                                  "special_tokens_map_file": "/home/someone/.cache/special_tokens_map.json"},
        "router_config.json": {"types": {"query": "sentence_transformers.models.Transformer"}},
        "2_Dense/config.json": {"in_features": 8, "out_features": 4,
                                "activation_function": "torch.nn.modules.linear.Identity"},
        "adapter/adapter_config.json": {"peft_type": "SHADOW", "shadow_model": "mirror",
                                        "base_model_name_or_path": "meta-llama/Llama-3.2-1B"},
        "pipeline/modular_model_index.json": {"_class_name": "StableDiffusionXLModularPipeline", "vae": [
            "diffusers", "AutoencoderKL", {"pretrained_model_name_or_path": "stabilityai/stable-diffusion-xl-base-1.0",
                                           "subfolder": "vae", "variant": "fp16", "revision": None}]},
    }  # fmt: skip
    found = _one(tmp_path, files)
    assert not found & {"WS-REPO-013", "WS-REPO-014", "WS-REPO-015", "WS-REPO-016", "WS-REPO-018"}, found


def test_role_files_are_read_by_name_whatever_they_start_with(tmp_path: Path) -> None:
    """A fifteenth review padded modules.json and tokenizer_config.json with 80 KB of whitespace, which json skips
    and the loaders read, past the first 64 KiB wscan looked at to recognise JSON."""
    entry = [{"idx": 0, "name": "0", "path": "", "type": "mypool.MyPooling"}]
    (tmp_path / "modules.json").write_text(" \n" * 40_000 + json.dumps(entry))
    (tmp_path / "mypool.py").write_text("class MyPooling:\n    pass\n")
    (tmp_path / "tokenizer_config.json").write_text("\n" * 70_000 + json.dumps({"tokenizer_file": "/etc/passwd"}))
    (tmp_path / "padded.json").write_text(" " * 70_000 + json.dumps({"auto_map": {"AutoModel": "a--b.C"}}))
    assert {"WS-REPO-008", "WS-REPO-013", "WS-REPO-002"} <= rule_ids(scan(tmp_path))


def test_a_loader_file_linked_outside_the_folder_is_high(tmp_path: Path) -> None:
    """The same review linked tokenizer.json and tokenizer_config.json to files elsewhere, which transformers read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "tokenizer.json").write_text("{}")
    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer.json").symlink_to(outside / "tokenizer.json")
    report = scan(model)
    assert [f.rule_id for f in report.findings if f.severity >= Severity.HIGH] == ["WS-FILE-014"], report.findings


def test_a_chat_template_in_tokenizer_args_is_checked(tmp_path: Path) -> None:
    """sentence-transformers hands `tokenizer_args` to the tokenizer, whose chat_template it overrides (a fifteenth
    review noticed that template was never read)."""
    payload = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
    files = {"sentence_bert_config.json": {"max_seq_length": 32, "tokenizer_args": {"chat_template": payload}}}
    assert "WS-TPL-001" in _one(tmp_path, files)
