"""Inputs the atheris fuzz targets (fuzz/) found to crash a parser: each must now be a finding or a usage
error, never a traceback. One test per crash; the bytes are inline (or under tests/data/fuzz/)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from wscan.config import Config
from wscan.errors import UsageError
from wscan.rules import RuleSet
from wscan.rules.loader import _path_key, load_pack

# fuzz_config: libyaml reads `a\t 1` as a plain scalar, PyYAML's pure-Python scanner refuses the tab. The
# schema error's line lookup re-parsed with PyYAML and let its ScannerError escape instead of a UsageError.
TAB_IN_SCALAR = b"limits:\n  a\t 1\n"


def test_config_schema_error_after_libyaml_only_input_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / ".wscan.yaml"
    path.write_bytes(TAB_IN_SCALAR)
    with pytest.raises(UsageError, match=r"\.wscan\.yaml:2: limits: .* is not of type 'object'"):
        Config.from_file(path)


def test_rule_pack_schema_error_after_libyaml_only_input_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "pack.yaml"
    path.write_bytes(b"pack: p\nrules:\n  - id\t x\n")
    with pytest.raises(UsageError, match=r"pack\.yaml:3: rules/0: "):
        load_pack(path)


# fuzz_config: YAML keys may be integers (`02:` is the integer 2) beside strings in one mapping. Sorting the
# schema errors by their paths compared 2 with 'a' (TypeError), and a rule pack whose `lists` mixed key types
# passed the schema (it only judges string keys) and then failed in json.dumps(sort_keys=True). Every key of a
# config or rule pack must now be a string.
MIXED_KEY_TYPES = b"limits:\n a: x\n 1: y\n"


def test_config_with_integer_and_string_keys_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / ".wscan.yaml"
    path.write_bytes(MIXED_KEY_TYPES)
    with pytest.raises(UsageError, match=r"\.wscan\.yaml:2: limits: key 1 is not a string"):
        Config.from_file(path)


def test_config_fuzz_reproducer_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / ".wscan.yaml"
    path.write_bytes(b"rules: [e.yaml]\nlimits:\n ity:\n 02: lo")
    with pytest.raises(UsageError, match=r"limits: key 2 is not a string"):
        Config.from_file(path)


@pytest.mark.parametrize(
    ("pack", "message"),
    [
        (b"pack: p\nlists:\n  a: [x]\n  1: [y]\n", r"pack\.yaml:3: lists: key 1 is not a string"),
        (b"pack: p\nrules:\n  - {id: x, ~: 1}\n", r"pack\.yaml:3: rules/0: key None is not a string"),
    ],
)
def test_rule_pack_with_non_string_keys_is_a_usage_error(tmp_path: Path, pack: bytes, message: str) -> None:
    path = tmp_path / "pack.yaml"
    path.write_bytes(pack)
    with pytest.raises(UsageError, match=message):
        RuleSet.load(Config(rule_files=(path,)))


def test_schema_error_paths_sort_with_mixed_key_types() -> None:
    assert sorted([["rules", 2], ["lists", "a"], [1], ["rules", 10]], key=_path_key) == [
        [1], ["lists", "a"], ["rules", 2], ["rules", 10]
    ]


def _alias_bomb(levels: int) -> str:
    lines = ["  a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "x-anchors:\n" + "\n".join(lines) + f"\nallow: *a{levels - 1}\n"


# Found while fixing the key checks: a few hundred bytes of YAML aliases ("billion laughs") expand to 387 million
# values, and schema validation formatted the repr of the expanded value into its error message (time and
# memory grew tenfold per level: 0.1 s at 6 levels, a hang at 9). A `.wscan.yaml` inside a scanned repository
# is read as the config, so the file being scanned could stop the scan. Before the fix this test hangs.
def test_config_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    path = tmp_path / ".wscan.yaml"
    path.write_text(_alias_bomb(9), encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(UsageError, match="once YAML aliases are expanded"):
        Config.from_file(path)
    assert time.monotonic() - started < 5


def test_config_with_a_few_aliases_still_loads(tmp_path: Path) -> None:
    path = tmp_path / ".wscan.yaml"
    path.write_text("allow: &names [mypkg.layers.A, mypkg.layers.B]\n", encoding="utf-8")
    assert Config.from_file(path).allow == frozenset({"mypkg.layers.A", "mypkg.layers.B"})


def test_shard_index_naming_a_huge_shard_count_is_a_finding_not_an_oom(tmp_path: Path) -> None:
    """fuzz_shards (the CI smoke run, 2026-12-01): `model-00001-of-4444...00002.safetensors` made the naming check
    build the set 1..4.4e40 (2 GiB and counting); a count too large for a real model is now a naming finding."""
    import json

    import wscan

    huge = "4" * 40 + "00002"
    index = {"metadata": {"total_size": 8}, "weight_map": {"a": f"model-00001-of-{huge}.safetensors",
                                                           "b": "model-00002-of-00002.safetensors"}}  # fmt: skip
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    started = time.monotonic()
    report = wscan.scan([tmp_path / "model.safetensors.index.json"])
    assert time.monotonic() - started < 30
    kinds = {f.evidence.get("reason", "") for f in report.findings}
    assert any("disagree" in str(k) or "too large" in str(k) for k in kinds), [f.message for f in report.findings]
    index["weight_map"] = {"a": f"model-00001-of-{huge}.safetensors", "b": f"model-00002-of-{huge}.safetensors"}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    report = wscan.scan([tmp_path / "model.safetensors.index.json"])
    assert any("too large" in f.message for f in report.findings), [f.message for f in report.findings]


# fuzz_keras (2026-12-01, on a damaged .keras seed): the HDF5 signature search past the head seeks a zip member
# whose local header lies about where it starts; the member stream raised OSError(EOFError), which ended the
# Keras scanner with "could not be parsed" instead of leaving the damage to the archive scanner's findings.
def test_late_hdf5_search_in_an_unreadable_member_is_not_a_keras_failure() -> None:
    from tests.helpers.scanning import scan

    report = scan(Path(__file__).parent / "data" / "fuzz" / "keras-late-hdf5-truncated-member.keras")
    assert "WS-FILE-001" not in {f.rule_id for f in report.findings}
    assert {"WS-ARC-017", "WS-ARC-018"} <= {f.rule_id for f in report.findings}  # the archive says what is wrong


# fuzz_archive (2026-12-03): a PT2-shaped zip whose small tensor config member is deflated and damaged. Reading it
# whole to tell raw tensors apart raised zlib.error out of the zip scanner (WS-FILE-001 in a scan); it is now left
# to the member's own read, which reports the damage.
def test_a_damaged_deflated_pt2_config_is_the_archives_finding() -> None:
    from tests.helpers.scanning import scan

    report = scan(Path(__file__).parent / "data" / "fuzz" / "pt2-config-bad-deflate.zip")
    assert "WS-FILE-001" not in {f.rule_id for f in report.findings}, report.findings
    assert any(f.rule_id.startswith("WS-ARC") for f in report.findings)


def test_an_import_a_plain_unpickler_makes_from_an_arrays_bytes_is_reported() -> None:
    """fuzz/pickle_oracle.py on a mutated corpus sample (the CI run of stop 32): a joblib file whose unaligned array
    starts with `cdataclasses\\n_create_fn\\n`, imported but not called. CPython's unpicklers resolve it; the plain
    reading had dropped every name its reading did not call."""
    from tests.helpers.scanning import scan
    from wscan.model import Severity

    path = Path(__file__).parent / "data" / "fuzz" / "pickle-oracle-import-after-unaligned-array.pkl"
    found = {(f.rule_id, f.evidence.get("callable")) for f in scan(path).findings if f.severity >= Severity.HIGH}
    assert ("WS-PKL-003", "dataclasses._create_fn") in found


# fuzz/pickle_oracle.py, 20 minutes into a long run on a mutated corpus sample: GLOBAL with a UTF-8 module line.
# CPython's unpicklers decode both lines as UTF-8 and import what they name; the sniff only took ASCII names as
# evidence of a pickle, so the file was an unknown format (low).
UTF8_GLOBAL = b"(c\xd3\x9cos\nSystem\nX \x00\x00\x00echo wscan-corpus-hostile-s#mpos\nSystem\nX \x00\x00\x00echo"


@pytest.mark.parametrize("blob", [
    UTF8_GLOBAL,
    # a module line longer than the 64 KiB head the sniff reads
    b"(N" + b"c\xd3\x9c" + b"o" * 70_000 + b"s\nSystem\n.",
], ids=["first-opcodes", "past-the-head"])  # fmt: skip
def test_an_import_of_a_utf8_name_is_read_as_a_pickle(tmp_path: Path, blob: bytes) -> None:
    import pickle

    from tests.helpers.scanning import scan_bytes
    from wscan.model import Severity

    names: list[str] = []

    class Stub(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> object:
            names.append(f"{module}.{name}")
            raise pickle.UnpicklingError("stopped")

    with pytest.raises(pickle.UnpicklingError):
        Stub(__import__("io").BytesIO(blob)).load()
    assert names[0].startswith("Ӝ") and names[0].endswith("os.System")  # what the loader would import
    found = scan_bytes(tmp_path, blob, "model.bin").findings
    assert any(f.rule_id == "WS-PKL-003" and f.severity >= Severity.HIGH for f in found), found


# fuzz/targets/fuzz_boosters.py, 18 seconds into its first run: a UBJSON object with a count (`{#`) kept only its last
# key, and one of no keys raised UnboundLocalError (a traceback, where a finding belongs).
def _counted_object(pairs: list[tuple[bytes, int]]) -> bytes:
    import struct

    body = b"".join(b"L" + struct.pack(">q", len(k)) + k + b"i" + bytes([v]) for k, v in pairs)
    return b"{#L" + struct.pack(">q", len(pairs)) + body


def test_a_counted_ubjson_object_keeps_every_key() -> None:
    from wscan.scanners.booster_common import Malformed
    from wscan.scanners.xgboost_model import Ubjson, check

    assert Ubjson(_counted_object([])).document() == {}
    assert Ubjson(_counted_object([(b"a", 1), (b"b", 2)])).document() == {"a": 1, "b": 2}
    with pytest.raises(Malformed, match="layout wscan does not read"):  # XGBoost too reads `{` + a letter only
        check(_counted_object([(b"Config", 1)]))


def test_tflite_flex_options_that_are_not_two_strings_are_a_finding() -> None:
    """fuzz_tflite: a Flex op's FlexBuffer vector held something else than a string first, and flexbuffers'
    AsStringBytes asserted. The op is now reported as unreadable (WS-TFL-002); the file's WriteFile still is."""
    from tests.helpers.scanning import rule_ids, scan

    report = scan(Path(__file__).parent / "data" / "fuzz" / "tflite-flex-options-not-strings.tflite")
    assert rule_ids(report) == {"WS-TFL-002", "WS-TF-002"}
