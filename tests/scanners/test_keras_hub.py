"""KerasHub presets: what keras-hub 0.32 writes passes; configs it would turn against the host are caught.

The presets in tests/data/keras_hub were written by KerasHub itself (`make.py` there); KerasHub is not a test
dependency, so the tests read the kept files and edit copies of them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.scanning import rule_ids, scan
from wscan.rules import builtin_rules_dir
from wscan.rules.loader import load_pack

DATA = Path(__file__).resolve().parents[1] / "data" / "keras_hub" / "benign"
PRESETS = ["bert-full", "llama-causallm", "gemma-backbone.keras"]


def _allowed() -> set[str]:
    return set(load_pack(builtin_rules_dir() / "allow-keras-hub.yaml")["lists"]["allowed-keras-objects"])


@pytest.mark.parametrize("name", PRESETS)
def test_what_keras_hub_writes_has_no_findings(name: str) -> None:
    report = scan(DATA / name)
    assert [(f.rule_id, f.message) for f in report.findings] == []
    read = {Path(f.path).name: f.formats for f in report.files}
    for config in ("config.json", "task.json", "preprocessor.json", "tokenizer.json"):
        if config in read:
            assert "keras" in read[config], config


def test_the_pack_lists_registered_classes_and_no_utilities() -> None:
    allowed = _allowed()
    assert {"keras_hub>LlamaBackbone", "keras_hub.src.models.llama.llama_backbone.LlamaBackbone",
            "keras_hub>BertTokenizer", "keras_hub.src.samplers.top_k_sampler.TopKSampler"} <= allowed
    assert not [name for name in allowed if "upload" in name or "compute_" in name or "preset_utils" in name]


def _edited(tmp_path: Path, member: str, edit: dict[str, object], where: str = "config") -> Path:
    folder = shutil.copytree(DATA / "bert-full", tmp_path / "preset")
    data = json.loads((folder / member).read_text())
    (data[where] if where else data).update(edit)
    (folder / member).write_text(json.dumps(data))
    return folder


def test_a_tokenizer_reading_a_vocabulary_from_a_path_is_high(tmp_path: Path) -> None:
    """KerasHub reads a string vocabulary as a file path (refused in safe mode, read without it)."""
    folder = _edited(tmp_path, "tokenizer.json", {"vocabulary": "/etc/passwd"})
    assert rule_ids(scan(folder)) == {"WS-KERAS-007"}


def test_a_registered_name_dressed_on_another_module_is_judged_by_the_module(tmp_path: Path) -> None:
    folder = _edited(tmp_path, "config.json", {"module": "os", "class_name": "system"}, where="")
    assert "WS-KERAS-002" in rule_ids(scan(folder))


def test_keras_hub_utilities_are_gadgets(tmp_path: Path) -> None:
    upload = {"module": "keras_hub.src.utils.preset_utils", "class_name": "function", "config": "upload_preset",
              "registered_name": "keras_hub>upload_preset"}
    folder = _edited(tmp_path, "task.json", {"preprocessor": upload})
    assert "WS-KERAS-003" in rule_ids(scan(folder))


def test_a_gadget_behind_a_registered_name_is_critical(tmp_path: Path) -> None:
    """Keras takes the registered name first: BertBackbone's module and class, registered as upload_preset, is
    upload_preset."""
    folder = _edited(tmp_path, "config.json", {"registered_name": "keras_hub>upload_preset"}, where="")
    assert "WS-KERAS-021" in rule_ids(scan(folder))


REVIEWED = Path(__file__).resolve().parents[1] / "data" / "keras_hub" / "reviewed"
# Proved with KerasHub by a review, then fixed (reviewed/README.md says how each one works).
REVIEWED_RULES = {
    "f1-config-file-abs": "WS-KERAS-007",
    "f2-whisper-language-tokens": "WS-KERAS-007",
    "f3-spoof-none-BertTokenizer": "WS-KERAS-007",
    "f3-spoof-keras.layers-Dense": "WS-KERAS-007",
    "f4-parseq-vocab-nomodule": "WS-KERAS-007",
    "f6-keras-nlp-alias-gadget": "WS-KERAS-003",
    "g1-whisper-class-name-only": "WS-KERAS-007",
    "g2-parseq-class-name-only": "WS-KERAS-007",
    "g3-whisper-preset-class-name-only": "WS-KERAS-007",
    "g4-sequential-registered-decoy": "WS-KERAS-007",
    "g5-h5-registered-decoy": "WS-KERAS-007",
}


@pytest.mark.parametrize(("name", "rule"), sorted(REVIEWED_RULES.items()))
def test_reviewed_bypasses_fail_the_scan(name: str, rule: str) -> None:
    assert rule in rule_ids(scan(REVIEWED / name))


def test_the_older_keras_nlp_spellings_are_listed_too() -> None:
    assert {"keras_nlp>BertBackbone", "keras_nlp>LlamaCausalLM"} <= _allowed()
    assert not [name for name in _allowed() if name.endswith(("upload_preset", "compute_sentence_piece_proto"))]
