"""Writing a generated rule pack: one place for the format every generator in tools/ writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

RULES = Path(__file__).resolve().parents[1] / "rules"


def write_pack(name: str, description: str, lists: dict[str, list[str]]) -> None:
    """rules/<name>.yaml as JSON (JSON is YAML too, and wscan reads a built-in pack that is JSON at C speed, see
    rules/loader.py), and how many names it holds, on stderr."""
    data = {"pack": name, "description": description, "lists": lists}
    (RULES / f"{name}.yaml").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"{sum(len(values) for values in lists.values())} names", file=sys.stderr)
