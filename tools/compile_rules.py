"""Regenerate rules/compiled-packs.json: every built-in rule pack, parsed, with the SHA-256 of its YAML.

Run after editing any pack (`python tools/compile_rules.py`); the test suite fails while the file is stale.
wscan reads a pack from this file only when the pack's bytes still match the hash, so a stale file costs start-up
time (the YAML is parsed instead), never a wrong rule.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from wscan.rules import COMPILED_PACKS  # noqa: E402
from wscan.rules.loader import load_pack  # noqa: E402

RULES = ROOT / "rules"


def compiled() -> str:
    """The file's text: packs by file name, each with its source hash."""
    packs = {
        path.name: {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "pack": load_pack(path)}
        for path in sorted(RULES.glob("*.yaml"))
    }
    return json.dumps(packs, indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    (RULES / COMPILED_PACKS).write_text(compiled(), encoding="utf-8")
    print(f"wrote {RULES / COMPILED_PACKS}")
