"""Processor and tokenizer keys a seventeenth review turned against transformers 4.57.6 with no trust_remote_code
(wscan said nothing or low before): files outside the folder read through Marian's `vocab`/`source_spm`, OneFormer's
`class_info_file`, Bark's voice presets and links named like tokenizer files; a file written anywhere through
Tesseract's options; native code run through an inline Sudachi config naming a shared library as a plugin.

Two are proved here with the real loader (in a sandboxed child whose audit hook leaves a marker when the load opens
a file in the sibling `outside` folder): OneFormer's image processor and Bark's processor, which need nothing but
transformers. The others need sentencepiece, sudachipy or the tesseract program, which the tests do not install:
they were proved in the review, and are checked here at scan level.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.sandbox import WATCH_OUTSIDE, Outcome, load_each
from tests.helpers.scanning import rule_ids, scan
from wscan.discover import LOADER_FILES
from wscan.model import Severity
from wscan.scanners.loader_keys import FILE_SUFFIXES, TOKENIZER_FILE_KEYS

LOAD = WATCH_OUTSIDE + """
def load(folder, how):
    watch_outside(folder)
    if how == "image-processor":
        from transformers import AutoImageProcessor
        AutoImageProcessor.from_pretrained(folder)
    elif how == "tokenizer":
        from transformers import AutoTokenizer
        AutoTokenizer.from_pretrained(folder)
    else:
        from transformers import AutoProcessor
        processor = AutoProcessor.from_pretrained(folder)
        processor("hello world", voice_preset="v2/en_speaker_6")
"""


DEFAULT_REPO = "shi-labs/oneformer_demo"


def _oneformer(model: Path, outside: Path, class_info: str | None) -> None:
    from transformers import OneFormerImageProcessor

    info = {"0": {"name": "wall", "isthing": 0}}
    (outside / "classes.json").write_text(json.dumps(info))
    processor = OneFormerImageProcessor(repo_path=None, class_info_file=str(outside / "classes.json"), num_labels=1)
    processor.save_pretrained(model)
    config = json.loads((model / "preprocessor_config.json").read_text())
    # As real configs are: the default repository and a name in it. transformers first tries that as a path from the
    # working folder, where the fixture puts it, so the load needs no network.
    config.update(repo_path=DEFAULT_REPO, class_info_file=class_info or "classes.json")
    (model / "preprocessor_config.json").write_text(json.dumps(config))


def _bark(model: Path, outside: Path, rooted: bool) -> None:
    from transformers import BarkProcessor, BertTokenizer

    (outside / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]))
    BarkProcessor(BertTokenizer(str(outside / "vocab.txt"))).save_pretrained(model)
    (outside / "vocab.txt").unlink()
    prompts = {"semantic_prompt": np.arange(3), "coarse_prompt": np.ones((2, 3)), "fine_prompt": np.ones((2, 3))}
    preset: dict[str, str] = {}
    for name, array in prompts.items():
        if rooted:  # as BarkProcessor.save_pretrained writes them: inside the folder, rooted by repo_or_path
            (model / "speaker_embeddings").mkdir(exist_ok=True)
            np.save(model / "speaker_embeddings" / f"{name}.npy", array)
            preset[name] = f"speaker_embeddings/{name}.npy"
        else:  # no repo_or_path: paths are read from /, so a relative one is outside too
            np.save(outside / f"{name}.npy", array)
            preset[name] = str(outside / f"{name}.npy").lstrip("/")
    presets: dict[str, object] = {"v2/en_speaker_6": preset}
    if rooted:
        presets["repo_or_path"] = "/home/someone/bark"  # the writer's folder: BarkProcessor replaces it with this one
    (model / "speaker_embeddings_path.json").write_text(json.dumps(presets))


def _legacy_tokenizer(model: Path, outside: Path, vocab_elsewhere: bool) -> None:
    """A BERT tokenizer folder as older transformers saved it (no added_tokens_decoder): special_tokens_map.json's
    keys become the tokenizer's arguments, after the folder's own files were found."""
    words = "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]) + "\n"
    (model / "vocab.txt").write_text(words)
    (outside / "vocab.txt").write_text(words)
    config = {"tokenizer_class": "BertTokenizer", "do_lower_case": True}
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    special: dict[str, str] = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                               "mask_token": "[MASK]"}  # fmt: skip
    if vocab_elsewhere:
        special["vocab_file"] = str(outside / "vocab.txt")
    (model / "special_tokens_map.json").write_text(json.dumps(special))


def _timm_config(model: Path, outside: Path) -> None:
    """A config.json with `pretrained_cfg` (a timm checkpoint's), which AutoImageProcessor reads as the processor's
    settings: its image_processor_type names OneFormer, whose class_info_file is opened."""
    (outside / "classes.json").write_text(json.dumps({"0": {"name": "wall", "isthing": 0}}))
    (model / "config.json").write_text(json.dumps({
        "architecture": "resnet18", "num_classes": 2, "pretrained_cfg": {"input_size": [3, 224, 224]},
        "image_processor_type": "OneFormerImageProcessor", "num_labels": 1,
        "class_info_file": str(outside / "classes.json")}))  # fmt: skip


def _init_inputs(model: Path, outside: Path, elsewhere: str) -> None:
    """tokenizer_config.json's `init_inputs`, handed to the tokenizer as positional arguments: BloomTokenizerFast's
    first, `vocab_file`, is none of the files it looks up, and with no tokenizer.json it converts the vocabulary from
    it (a Tekken file, by its name) wherever it is (helper 265)."""
    import base64

    tokens = [bytes([i]) for i in range(256)]
    tekken = {"config": {"pattern": r"\S+|\s+", "default_vocab_size": 257, "default_num_special_tokens": 1},
              "special_tokens": [{"rank": 0, "token_str": "<s>", "is_control": True}],
              "vocab": [{"rank": i, "token_bytes": base64.b64encode(t).decode()} for i, t in enumerate(tokens)]}
    folder = outside if elsewhere else model
    (folder / "tekken.json").write_text(json.dumps(tekken))
    config: dict[str, object] = {"tokenizer_class": "BloomTokenizerFast", "init_inputs": []}
    if elsewhere == "list":
        config["init_inputs"] = [str(outside / "tekken.json")]
    elif elsewhere == "dict":  # `*init_inputs` of a dict hands over its keys (helper 267)
        config["init_inputs"] = {str(outside / "tekken.json"): None}
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    (model / "config.json").write_text(json.dumps({"model_type": "bloom", "architectures": ["BloomForCausalLM"]}))


CASES = {
    "oneformer-real": ("image-processor", lambda m, o: _oneformer(m, o, None), set()),
    "oneformer-class-info-outside": ("image-processor", lambda m, o: _oneformer(m, o, str(o / "classes.json")),
                                     {"WS-REPO-013"}),
    "bark-real": ("processor", lambda m, o: _bark(m, o, True), set()),
    "bark-presets-from-root": ("processor", lambda m, o: _bark(m, o, False), {"WS-REPO-013"}),
    # A twenty-first review:
    "legacy-tokenizer-real": ("tokenizer", lambda m, o: _legacy_tokenizer(m, o, False), set()),
    "special-tokens-map-vocab-file": ("tokenizer", lambda m, o: _legacy_tokenizer(m, o, True), {"WS-REPO-013"}),
    "timm-config-class-info-file": ("image-processor", _timm_config, {"WS-REPO-013"}),
    "init-inputs-empty": ("tokenizer", lambda m, o: _init_inputs(m, o, ""), set()),
    "init-inputs-outside": ("tokenizer", lambda m, o: _init_inputs(m, o, "list"), {"WS-REPO-013"}),
    "init-inputs-dict-keys": ("tokenizer", lambda m, o: _init_inputs(m, o, "dict"), {"WS-REPO-013"}),
}  # fmt: skip


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Outcome]]:
    base = tmp_path_factory.mktemp("processors")
    jobs = []
    for name, (how, build, _) in CASES.items():
        model, outside = base / name / "model", base / name / "outside"
        model.mkdir(parents=True)
        outside.mkdir()
        build(model, outside)
        jobs.append((name, model, how, base / name / "MARKER"))
    workdir = base / "work"
    (workdir / DEFAULT_REPO).mkdir(parents=True)
    (workdir / DEFAULT_REPO / "classes.json").write_text(json.dumps({"0": {"name": "wall", "isthing": 0}}))
    env = {"HF_HOME": str(workdir / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    outcomes = load_each(LOAD, jobs, workdir, 300.0, env)
    return {name: (base / name / "model", outcomes[name]) for name in CASES}


@pytest.mark.parametrize("name", list(CASES))
def test_processor_keys_proved_with_transformers(loaded: dict[str, tuple[Path, Outcome]], name: str) -> None:
    folder, outcome = loaded[name]
    expected = CASES[name][2]
    high = {f.rule_id for f in scan(folder).findings if f.severity >= Severity.HIGH}
    if not expected:
        assert outcome.loaded and not outcome.executed, outcome
        assert not high, high
        return
    assert outcome.executed, f"the loader did not open the file outside: {outcome.result}"
    assert expected <= high, high


def _one(tmp_path: Path, files: dict[str, object]) -> set[str]:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return rule_ids(scan(tmp_path))


SUDACHI_PLUGIN = json.dumps({"inputTextPlugin": [{"class": "com.worksap.nlp.sudachi.DefaultInputTextPlugin"},
                                                 {"class": "/root/.cache/huggingface/hub/models--o--m/blobs/ab12"}]})


@pytest.mark.parametrize(
    ("files", "rule"),
    [
        ({"tokenizer_config.json": {"tokenizer_class": "MarianTokenizer", "vocab": "/etc/passwd"}}, "WS-REPO-013"),
        ({"tokenizer_config.json": {"source_spm": "source.spm"}}, "WS-REPO-013"),  # opened as given: the working folder
        ({"tokenizer_config.json": {"sentencepiece_model_ckpt": "~/sp.model"}}, "WS-REPO-013"),
        ({"preprocessor_config.json": {"image_processor_type": "OneFormerImageProcessor", "repo_path": "../other",
                                       "class_info_file": "classes.json"}}, "WS-REPO-013"),
        ({"tokenizer_config.json": {"word_tokenizer_type": "sudachi",
                                    "sudachi_kwargs": {"sudachi_config_path": SUDACHI_PLUGIN}}}, "WS-REPO-020"),
        ({"tokenizer_config.json": {"sudachi_kwargs": {"sudachi_config_path": "{not json"}}}, "WS-REPO-020"),
        ({"tokenizer_config.json": {"sudachi_kwargs": {"sudachi_resource_dir": "resources"}}}, "WS-REPO-013"),
        ({"preprocessor_config.json": {"apply_ocr": True, "tesseract_config": "-c debug_file=/home/u/.bashrc"}},
         "WS-REPO-019"),
        ({"preprocessor_config.json": {"ocr_lang": "../../tessdata/evil"}}, "WS-REPO-019"),
        ({"preprocessor_config.json": {"tesseract_config": "-c tessedit_char_whitelist=0123 -c debug_file=/tmp/x"}},
         "WS-REPO-019"),
        ({"preprocessor_config.json": {"tesseract_config": "--psm 6 --tessdata-dir /opt/evil"}}, "WS-REPO-019"),
        ({"tokenizer_config.json": {"mecab_kwargs": {"mecab_option": "-r /etc/mecabrc -d /opt/dic"}}}, "WS-REPO-023"),
        ({"speaker_embeddings_path.json": {"repo_or_path": "x", "v2/en": {"semantic_prompt": "/etc/passwd"}}},
         "WS-REPO-013"),
        ({"special_tokens_map.json": {"unk_token": "<unk>", "tokenizer_file": "/etc/passwd"}}, "WS-REPO-013"),
        ({"byte_maps.json": {"decompose_map": "/etc/passwd", "merge_map": {}}}, "WS-REPO-013"),
        ({"tokenizer_config.json": {"sp_model_kwargs": {"model_file": "spiece.model"}}}, "WS-REPO-013"),
        ({"preprocessor_config.json": {"repo_path": None, "class_info_file": "classes.json"}}, "WS-REPO-013"),
        ({"tokenizer_config.json": {"tokenizer_class": "CohereTokenizerFast", "init_inputs": ["../x/tekken.json"]}},
         "WS-REPO-013"),
        ({"tokenizer_config.json": {"init_inputs": ["tekken.json"]}}, "WS-REPO-013"),  # from the working folder
    ],
    ids=["marian-vocab", "marian-source-spm", "ernie-m-sentencepiece", "oneformer-repo-path", "sudachi-plugin",
         "sudachi-unreadable-inline-config", "sudachi-resource-dir", "tesseract-options", "tesseract-language-path",
         "tesseract-settings-then-debug-file", "tesseract-tessdata-dir", "mecab-options", "bark-absolute-preset",
         "special-tokens-map-file", "myt5-byte-maps", "sp-model-file", "oneformer-working-folder",
         "init-inputs-climbing", "init-inputs-working-folder"],
)  # fmt: skip
def test_processor_keys_at_scan_level(tmp_path: Path, files: dict[str, object], rule: str) -> None:
    assert rule in _one(tmp_path, files)


def test_values_real_files_hold_pass(tmp_path: Path) -> None:
    """Empty OCR options or page segmentation only, languages joined with `+`, Sudachi's and MeCab's dictionary
    choices, OneFormer's default repository, Bark presets inside the folder."""
    files = {
        "ocr/preprocessor_config.json": {"apply_ocr": True, "tesseract_config": "", "ocr_lang": None},
        "ocr2/preprocessor_config.json": {"tesseract_config": "--psm 6 --oem 1", "ocr_lang": "eng+deu"},
        "ocr3/preprocessor_config.json": {"tesseract_config": "-c preserve_interword_spaces=1 --psm 6"},
        "ja/tokenizer_config.json": {"word_tokenizer_type": "sudachi",
                                     "sudachi_kwargs": {"sudachi_split_mode": "A", "sudachi_dict_type": "core"}},
        "ja2/tokenizer_config.json": {"word_tokenizer_type": "mecab", "mecab_kwargs": {"mecab_dic": "ipadic"}},
        "seg/preprocessor_config.json": {"repo_path": DEFAULT_REPO, "class_info_file": "ade20k_panoptic.json"},
        "bark/speaker_embeddings_path.json": {"repo_or_path": "/home/someone/bark",
                                              "v2/en": {"semantic_prompt": "speaker_embeddings/v2/en_semantic.npy"}},
        "legacy/special_tokens_map.json": {"unk_token": "<unk>", "additional_special_tokens": ["<x>"],
                                           "pad_token": {"content": "<pad>", "lstrip": False}},
        "myt5/byte_maps.json": {"decompose_map": {"41": "42"}, "merge_map": {"42": "41"}},
        "timm/config.json": {"architecture": "resnet18", "pretrained_cfg": {"input_size": [3, 224, 224],
                                                                          "hf_hub_id": "timm/resnet18.a1_in1k"}},
    }  # fmt: skip
    assert not _one(tmp_path, files) & {"WS-REPO-013", "WS-REPO-019", "WS-REPO-020"}


def test_tokenizer_file_arguments_of_installed_transformers_are_known() -> None:
    """Every key of every tokenizer's `vocab_files_names` (read from transformers' sources, not imported) is a path
    wscan judges, and every default file name is a loader file for links: a new tokenizer fails this test."""
    import transformers

    keys: set[str] = set()
    names: set[str] = set()
    for source in Path(transformers.__file__).parent.joinpath("models").rglob("tokenization_*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Dict):
                continue
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if not any("VOCAB_FILES_NAMES" in t.upper() for t in targets):
                continue
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    keys.add(key.value)
                    items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
                    names.update(i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str))
    assert len(keys) > 15 and len(names) > 20  # the sources were found and read
    assert {k for k in keys if not k.endswith(FILE_SUFFIXES)} <= TOKENIZER_FILE_KEYS
    assert names <= LOADER_FILES


JSON_NAME = re.compile(r"^[\w.-]+\.json$")


def test_module_configs_of_installed_sentence_transformers_are_loader_files() -> None:
    """Every JSON file name in sentence-transformers' sources (its modules' configs, the Transformer module's
    fallbacks) is a loader file for links: a link named sentence_xlnet_config.json fed it a config from elsewhere
    (helper 265). A new name fails this test."""
    import sentence_transformers

    names: set[str] = set()
    for source in Path(sentence_transformers.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and JSON_NAME.match(node.value):
                names.add(node.value)
    assert {"sentence_xlnet_config.json", "router_config.json", "modules.json"} <= names  # the sources were read
    assert names <= LOADER_FILES


@pytest.mark.parametrize("name", ["additional_chat_templates/tool_use.jinja", "source.spm", "spiece.model",
                                  "sentence_xlnet_config.json", "1_Router/router_config.json", "tekken.json",
                                  "tokenizer.model.", "README.md", "type.txt", "gluonts-config.json",
                                  "predictor.json"])  # fmt: skip
def test_links_named_like_tokenizer_files_are_high(tmp_path: Path, name: str) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("api_key=hunter2\n")
    model = tmp_path / "model"
    (model / name).parent.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    os.symlink(tmp_path / "outside" / "secret", model / name)
    assert "WS-FILE-014" in rule_ids(scan(model))


def test_native_code_in_a_model_folder_is_medium(tmp_path: Path) -> None:
    """A real shared library (numpy's compiled core) and a hand-made PE header; text that merely starts with "MZ" is
    text."""
    from numpy._core import _multiarray_umath

    shutil.copy(_multiarray_umath.__file__, tmp_path / "plugin.bin")
    pe = bytearray(256)
    pe[:2], pe[0x3C:0x40], pe[0x80:0x84] = b"MZ", (0x80).to_bytes(4, "little"), b"PE\0\0"
    (tmp_path / "tool.dat").write_bytes(bytes(pe))
    (tmp_path / "notes.txt").write_text("MZ is a prefix of these notes, nothing more\n")
    report = scan(tmp_path)
    native = {(f.location.path.rsplit("/", 1)[-1], f.severity) for f in report.findings if f.rule_id == "WS-FILE-015"}
    assert native == {("plugin.bin", Severity.MEDIUM), ("tool.dat", Severity.MEDIUM)}


# A nineteenth review (open_clip 3, timm 1, optimum 2 with diffusers 0.35; each load proved with an audit hook or a
# marker; wscan said nothing or medium): open_clip_config.json was not read as a configuration at all.
OPEN_CLIP_TEXT = {"hf_proj_type": "linear", "context_length": 16}


def _open_clip(**text: object) -> dict[str, object]:
    return {"open_clip_config.json": {"model_cfg": {"embed_dim": 16, "vision_cfg": {"image_size": 32},
                                                    "text_cfg": {**OPEN_CLIP_TEXT, **text}}}}  # fmt: skip


@pytest.mark.parametrize(
    ("files", "rule"),
    [
        (_open_clip(hf_model_name="/usr/lib"), "WS-REPO-013"),
        (_open_clip(hf_tokenizer_name="../../bert"), "WS-REPO-013"),
        (_open_clip(tokenizer_kwargs={"tokenizer_file": "/etc/passwd"}), "WS-REPO-013"),
        (_open_clip(tokenizer_kwargs={"bpe_path": "vocab.txt.gz"}), "WS-REPO-013"),  # as given: the working folder
        (_open_clip(tokenizer_kwargs={"trust_remote_code": True}), "WS-REPO-021"),
        ({"open_clip_config.json": {"model_cfg": {"vision_cfg": {"timm_model_name": "local-dir:/usr/lib"}}}},
         "WS-REPO-013"),
        ({"model_index.json": {"_class_name": "StableDiffusionPipeline", "unet": ["diffusers", "UNet2DConditionModel"],
                               "scheduler": ["antigravity", "FlowMatchEulerDiscreteScheduler"]}}, "WS-REPO-022"),
    ],
    ids=["hf-model-name", "hf-tokenizer-name", "tokenizer-kwargs-file", "bpe-path", "tokenizer-kwargs-remote-code",
         "timm-local-dir", "optimum-component-library"],
)  # fmt: skip
def test_framework_keys_at_scan_level(tmp_path: Path, files: dict[str, object], rule: str) -> None:
    assert rule in _one(tmp_path, files)


def test_open_clip_and_diffusers_files_as_written_pass(tmp_path: Path) -> None:
    """A hub text tower and timm model, and Stable Diffusion's index (diffusers, transformers, and a safety checker
    from diffusers' own stable_diffusion pipeline module)."""
    files = {
        "clip/open_clip_config.json": {"model_cfg": {"embed_dim": 512, "vision_cfg": {
            "timm_model_name": "vit_base_patch16_224"}, "text_cfg": {"hf_model_name": "xlm-roberta-base",
            "hf_tokenizer_name": "xlm-roberta-base", "tokenizer_kwargs": {"clean": "canonicalize"}}},
            "preprocess_cfg": {"mean": [0.5, 0.5, 0.5]}},
        "sd/model_index.json": {"_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.6.0",
                                "feature_extractor": ["transformers", "CLIPImageProcessor"],
                                "safety_checker": ["stable_diffusion", "StableDiffusionSafetyChecker"],
                                "scheduler": ["diffusers", "PNDMScheduler"],
                                "text_encoder": ["transformers", "CLIPTextModel"],
                                "tokenizer": ["transformers", "CLIPTokenizer"],
                                "unet": ["diffusers", "UNet2DConditionModel"],
                                "vae": ["diffusers", "AutoencoderKL"], "image_encoder": [None, None]},
    }  # fmt: skip
    assert not _one(tmp_path, files) & {"WS-REPO-013", "WS-REPO-021", "WS-REPO-022"}


@pytest.mark.parametrize("name", ["checkpoint.pth.tar", "open_clip_config.json"])
def test_links_timm_and_open_clip_read_by_name_are_high(tmp_path: Path, name: str) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "target").write_bytes(b"{}")
    model = tmp_path / "model"
    model.mkdir()
    os.symlink(tmp_path / "outside" / "target", model / name)
    assert "WS-FILE-014" in rule_ids(scan(model))


def test_an_absolute_path_is_judged_by_what_it_names_on_this_machine(tmp_path: Path) -> None:
    """A twentieth review saved real folders: a modular pipeline records its own folder's absolute path (inside:
    nothing to report), and peft, diffusers and open_clip record a local base model's path on the writer's machine
    (absent here: WS-REPO-024, medium). A path that exists here is what the loader opens (WS-REPO-013, high); a
    network path is never looked up (high)."""
    model = tmp_path / "model"
    model.mkdir()
    (tmp_path / "elsewhere").mkdir()

    def spec(path: str) -> list[object]:
        return ["diffusers", "AutoencoderKL", {"pretrained_model_name_or_path": path, "subfolder": "vae"}]

    cases = {
        "own": (str(model), set()),
        "absent": (str(tmp_path / "writer" / "sdxl"), {"WS-REPO-024"}),
        "present": (str(tmp_path / "elsewhere"), {"WS-REPO-013"}),
        "network": ("//fileserver/models/sdxl", {"WS-REPO-013"}),
    }
    for name, (path, expected) in cases.items():
        (model / "modular_model_index.json").write_text(json.dumps({"_class_name": "X", "vae": spec(path)}))
        found = rule_ids(scan(model)) & {"WS-REPO-013", "WS-REPO-024"}
        assert found == expected, (name, found)


def test_an_adapter_base_path_is_reported_only_where_it_exists(tmp_path: Path) -> None:
    model = tmp_path / "adapter"
    model.mkdir()
    for base, expected in ((str(tmp_path / "gone"), set()), (str(tmp_path), {"WS-REPO-018"})):
        (model / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "base_model_name_or_path": base}))
        assert rule_ids(scan(model)) & {"WS-REPO-018"} == expected, base


def test_paths_under_automount_roots_are_never_looked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Looking up /net/<host>/... makes an automounter mount that host's share: network traffic during a scan. Such
    paths (and `//host`) are judged without a lookup, as leaving the folder."""
    looked_up: list[str] = []
    real_lexists, real_realpath = os.path.lexists, os.path.realpath

    def lexists(path: str) -> bool:
        looked_up.append(str(path))
        return real_lexists(path)

    def realpath(path: str, *args: object, **kwargs: object) -> str:
        looked_up.append(str(path))
        return real_realpath(path)

    monkeypatch.setattr(os.path, "lexists", lexists)
    monkeypatch.setattr(os.path, "realpath", realpath)
    model = tmp_path / "model"
    model.mkdir()
    for path in ("/net/attacker.example/share/vae", "/x/../net/attacker.example/vae", "//attacker.example/vae"):
        (model / "modular_model_index.json").write_text(json.dumps({"_class_name": "X", "vae": [
            "diffusers", "AutoencoderKL", {"pretrained_model_name_or_path": path}]}))  # fmt: skip
        looked_up.clear()
        assert "WS-REPO-013" in rule_ids(scan(model)), path
        assert not [p for p in looked_up if "attacker" in p], looked_up
