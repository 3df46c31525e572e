"""Read a YAML file safely and validate it against a JSON Schema, reporting the offending line."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wscan.errors import UsageError

if TYPE_CHECKING:
    import jsonschema
    import yaml

SCHEMA_DIR = Path(__file__).resolve().parent
# Values a config or pack may hold once aliases are expanded (the built-in packs hold a few thousand).
MAX_EXPANDED_VALUES = 1_000_000


@cache
def _yaml() -> tuple[Any, type[yaml.SafeLoader]]:
    """PyYAML and its safe loader (the C one when libyaml is there). Imported on first use: a scan with only the
    built-in rules (read precompiled) and no config never needs it, and the import is a tenth of start-up."""
    import yaml

    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _validator(schema_name: str) -> jsonschema.protocols.Validator:
    import jsonschema  # only files from users are validated at run time (a fifth of start-up otherwise)

    schema = json.loads((SCHEMA_DIR / schema_name).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def _line_of(node: yaml.Node | None, path: list[str | int]) -> int | None:
    """Walk the composed YAML node tree along a JSON path to find the 1-based line of the culprit."""
    yaml, _ = _yaml()
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


def _path_key(path: Iterable[str | int]) -> list[tuple[int, int, str]]:
    """A sort key for error paths: YAML keys may be strings and integers in one mapping (`1: x` beside `a: y`)."""
    return [(0, step, "") if isinstance(step, int) else (1, 0, str(step)) for step in path]


def _non_string_key(data: Any) -> tuple[list[str | int], Any] | None:
    """The path of a mapping with a key that is not a string (`1:`, `yes:`, `~:`), and that key: JSON Schema
    only judges string keys, and later code sorts and serializes keys as strings. Each container is visited once:
    YAML aliases share one object many times (a "billion laughs" file would otherwise take forever)."""
    stack: list[tuple[list[str | int], Any]] = [([], data)]
    seen: set[int] = set()
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict | list):
            if id(value) in seen:
                continue
            seen.add(id(value))
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    return where, key
                stack.append(([*where, key], item))
        elif isinstance(value, list):
            stack.extend(([*where, index], item) for index, item in enumerate(value))
    return None


def _expanded_size(data: Any) -> int:
    """How many values the document holds with every alias expanded, as validation and error messages see it
    (nine lists of nine aliases, nine levels deep, is a few hundred bytes of YAML and 387 million values)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        value, children_done = stack.pop()
        if not isinstance(value, dict | list) or id(value) in sizes:
            continue
        items = list(value.values()) if isinstance(value, dict) else value
        if children_done:
            sizes[id(value)] = 1 + sum(sizes.get(id(i), 1) for i in items)
            continue
        stack.append((value, True))
        stack.extend((i, False) for i in items if isinstance(i, dict | list) and id(i) not in sizes)
    return sizes.get(id(data), 1)


def load_yaml(path: Path, schema_name: str | None) -> Any:
    """Parse with safe_load (no Python tags) and validate against `schema_name` unless None; UsageError names
    file, line and reason."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from None
    if schema_name is None and text.startswith("{"):
        # A built-in file written as JSON, which is YAML too: the generated allowlists (thousands of names) load
        # at C speed instead of through PyYAML's constructor, the larger part of start-up. The test suite checks
        # that both parsers read every such pack alike.
        try:
            return json.loads(text)
        except ValueError:
            pass  # not strict JSON after all: the YAML parser reads it, or says where it is broken
    yaml, loader = _yaml()
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{path}{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if schema_name is None:
        return data
    if _expanded_size(data) > MAX_EXPANDED_VALUES:
        raise UsageError(f"{path}: more than {MAX_EXPANDED_VALUES} values once YAML aliases are expanded")
    bad_key = _non_string_key(data)
    if bad_key is not None:
        key_path, key = bad_key
        raise _located(path, text, key_path, f"key {key!r} is not a string")
    errors = sorted(_validator(schema_name).iter_errors(data), key=lambda e: _path_key(e.absolute_path))
    if errors:
        raise _located(path, text, list(errors[0].absolute_path), errors[0].message)
    return data


def _located(path: Path, text: str, where: list[str | int], message: str) -> UsageError:
    """`file:line: field: message`. Only a failing file is composed a second time, to find the culprit's line,
    by the same parser (libyaml and PyYAML disagree on some input, e.g. a tab inside a plain scalar)."""
    yaml, loader = _yaml()
    try:
        line = _line_of(yaml.compose(text, Loader=loader), where)
    except (yaml.YAMLError, RecursionError):
        line = None
    field = "/".join(str(p) for p in where) or "(top level)"
    return UsageError(f"{path}{f':{line}' if line else ''}: {field}: {message}")


def load_pack(path: Path, validate: bool = True) -> dict[str, Any]:
    """A rule pack, validated unless it is one wscan ships (the test suite validates those)."""
    data = load_yaml(path, "pack.schema.json" if validate else None)
    assert isinstance(data, dict)
    return data
