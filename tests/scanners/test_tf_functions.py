"""SavedModels written by TensorFlow 2.21 whose file op gets its path as a function argument (tests/data/tf_functions):
a constant passed by the caller is a path written into the graph (high); a path the caller feeds is not. And where a
checkpoint op's path is: MergeV2Checkpoints' destination, a TF1 Saver's default when the main op runs it unfed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.scanning import rule_ids, scan
from wscan.model import Severity

DATA = Path(__file__).parents[1] / "data" / "tf_functions"
SECRET = "/tmp/wscan-tf-functions/secret.txt"
HOSTILE = {
    "textline_const": ("WS-TF-012", SECRET),  # TextLineDataset(constant): the reader is in a flat_map function
    "textline_interleave": ("WS-TF-012", SECRET),  # num_parallel_reads: the reader is in an interleave function
    "map_captured": ("WS-TF-012", "/tmp/wscan-tf-functions + /secret.txt"),  # a map function's captured input
    "map_returned": ("WS-TF-012", SECRET),  # TextLineDataset over the path a map function returns
    "cond_branch": ("WS-TF-012", SECRET),  # ReadFile in a tf.cond branch (If)
    "readfile_nested": ("WS-TF-012", SECRET),  # ReadFile in a nested tf.function (PartitionedCall)
    "readfile_nested_joined": ("WS-TF-012", "/tmp/wscan-tf-functions + /secret.txt"),  # joined one call down
    "readfile_returned": ("WS-TF-012", SECRET),  # the path a nested tf.function returns
    "save_nested": ("WS-TF-004", "/tmp/wscan-tf-functions/written"),  # SaveV2 in a nested tf.function
    "merge_destination": ("WS-TF-004", "/tmp/wscan-tf-functions/merged"),  # a fed checkpoint merged to a constant
    "tf1_main_op_saver": ("WS-TF-004", "wscan-tf-saver-marker.txt"),  # the main op runs a Saver's save op unfed
}


@pytest.mark.parametrize(("name", "expected"), HOSTILE.items())
def test_a_constant_path_passed_to_a_function_is_high(name: str, expected: tuple[str, str]) -> None:
    rule, path = expected
    report = scan(DATA / "hostile" / name)
    assert [(f.rule_id, f.evidence["path"]) for f in report.findings if f.severity >= Severity.HIGH] == [(rule, path)]


@pytest.mark.parametrize("name", ["readfile_fed", "textline_fed", "tf1_main_op_tables"])
def test_a_path_the_caller_or_the_loader_feeds_stays_medium(name: str) -> None:
    """tf1_main_op_tables: TF1's SavedModelBuilder names the vocabulary asset in a collection, not in
    asset_file_def; the loader feeds its path all the same."""
    report = scan(DATA / "ordinary" / name)
    assert rule_ids(report) == {"WS-TF-003"}
    assert [f.rule_id for f in report.findings if f.severity >= Severity.HIGH] == []
