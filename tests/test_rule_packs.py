"""The built-in packs are validated here, not on every run: a scan loads them without the JSON Schema check."""

from __future__ import annotations

from pathlib import Path

import pytest

from wscan.errors import UsageError
from wscan.rules import builtin_rules_dir
from wscan.rules.loader import load_pack

PACKS = sorted(builtin_rules_dir().glob("*.yaml"))


def test_there_are_packs() -> None:
    assert len(PACKS) >= 17


@pytest.mark.parametrize("path", PACKS, ids=[p.name for p in PACKS])
def test_builtin_pack_matches_the_schema(path: Path) -> None:
    assert load_pack(path, validate=True) == load_pack(path, validate=False)


def test_a_user_pack_is_still_validated(tmp_path: Path) -> None:
    pack = tmp_path / "mine.yaml"
    pack.write_text("pack: mine\nrules:\n  - id: X-1\n    severity: loud\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"mine\.yaml:3: rules/0: .name. is a required property"):
        load_pack(pack)


JSON_PACKS = [p for p in PACKS if p.read_text(encoding="utf-8").startswith("{")]


def test_the_generated_allowlists_are_json() -> None:
    assert {p.name for p in JSON_PACKS} >= {"allow-keras.yaml", "allow-sklearn.yaml", "known-architectures.yaml"}


@pytest.mark.parametrize("path", JSON_PACKS, ids=[p.name for p in JSON_PACKS])
def test_a_json_pack_reads_the_same_as_yaml(path: Path) -> None:
    # A scan reads these with json (C speed); a user reading them as YAML must see the very same pack.
    import json

    import yaml

    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == yaml.safe_load(text) == load_pack(path, validate=False)
