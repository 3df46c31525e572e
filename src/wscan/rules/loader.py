"""Read a YAML file safely and validate it against a JSON Schema, reporting the offending line."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from wscan.errors import UsageError

if TYPE_CHECKING:
    import jsonschema

SCHEMA_DIR = Path(__file__).resolve().parent
# The C parser when libyaml is there: rule packs hold ~1,000 allowlist lines, parsed on every run.
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _validator(schema_name: str) -> jsonschema.protocols.Validator:
    import jsonschema  # only files from users are validated at run time (a fifth of start-up otherwise)

    schema = json.loads((SCHEMA_DIR / schema_name).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def _line_of(node: yaml.Node | None, path: list[str | int]) -> int | None:
    """Walk the composed YAML node tree along a JSON path to find the 1-based line of the culprit."""
    line = node.start_mark.line + 1 if node is not None else None
    for step in path:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if getattr(k, "value", None) == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
        else:
            break
        if node is None:
            break
        line = node.start_mark.line + 1
    return line


def load_yaml(path: Path, schema_name: str | None) -> Any:
    """Parse with safe_load (no Python tags) and validate against `schema_name` unless None; UsageError names
    file, line and reason."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from None
    try:
        data = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{path}{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if schema_name is None:
        return data
    errors = sorted(_validator(schema_name).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        error = errors[0]
        # Only a failing file is composed a second time, to find the line of the culprit; by the same parser
        # (libyaml and PyYAML disagree on some input, e.g. a tab inside a plain scalar).
        try:
            line = _line_of(yaml.compose(text, Loader=_SAFE_LOADER), list(error.absolute_path))
        except (yaml.YAMLError, RecursionError):
            line = None
        where = f":{line}" if line else ""
        field = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise UsageError(f"{path}{where}: {field}: {error.message}")
    return data


def load_pack(path: Path, validate: bool = True) -> dict[str, Any]:
    """A rule pack, validated unless it is one wscan ships (the test suite validates those)."""
    data = load_yaml(path, "pack.schema.json" if validate else None)
    assert isinstance(data, dict)
    return data
