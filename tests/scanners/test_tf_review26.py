"""Review 26's SavedModels (written by TensorFlow 2.21): the hostile ones are high, the ordinary ones are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.scanning import rule_ids, scan
from wscan.model import Severity

DATA = Path(__file__).parents[1] / "data" / "tf_review26"
HOSTILE = {
    "asset_escape_readfile": "WS-TF-014",  # an asset named ../../../secret/outside.txt, read by ReadFile
    "asset_escape_table": "WS-TF-014",  # an absolute asset name filling a vocabulary table at load
    "cache_write": "WS-TF-002",  # Dataset.cache(path): CacheDatasetV2 writes the cache files
    "dataset_from_graph": "WS-TF-013",  # DatasetFromGraph: a TextLineDataset hidden in a serialized graph
    "matching_joined": "WS-TF-012",  # MatchingFiles on a path joined from constants
    "readfile_joined": "WS-TF-012",  # ReadFile on a path joined from constants (StringJoin)
    "record_input": "WS-TF-012",  # RecordInput(file_pattern=...) reads TFRecords outside the folder
    "save_v1_joined": "WS-TF-004",  # Save to a path joined from constants
    "savev2_joined": "WS-TF-004",  # SaveV2 to a path joined from constants
    "table_const_path": "WS-TF-012",  # InitializeTableFromTextFileV2 with a constant path (its second input)
}


@pytest.mark.parametrize(("name", "rule"), HOSTILE.items())
def test_a_hostile_saved_model_is_high(name: str, rule: str) -> None:
    assert rule in rule_ids(scan(DATA / "hostile" / name))


@pytest.mark.parametrize("name", ["fp_keras_dense", "fp_keras_textvec", "fp_tf_module", "asset_table"])
def test_an_ordinary_saved_model_is_not_high(name: str) -> None:
    report = scan(DATA / "ordinary" / name)
    assert [f.rule_id for f in report.findings if f.severity >= Severity.HIGH] == []
