"""The rule engine: YAML rule packs turn observations into findings.

Packs are validated against `pack.schema.json` when loaded; a bad pack is a usage error that names the file
and line. Named lists (allowed and dangerous callables, ...) are unions across packs, so a user pack or the
config's `allow` can extend them without copying the built-in rules.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wscan.errors import UsageError
from wscan.model import AttrValue, Finding, Observation, Severity
from wscan.report import RuleInfo
from wscan.rules.loader import load_pack

if TYPE_CHECKING:
    from wscan.config import Config

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
# The built-in packs, parsed, with the SHA-256 of each source: written by tools/compile_rules.py.
COMPILED_PACKS = "compiled-packs.json"
SET_OPERATORS = ("in-set", "not-in-set", "prefix-in-set", "not-prefix-in-set", "segment-in-set")


def builtin_rules_dir() -> Path:
    """Rule packs shipped in the wheel (wscan/_rules) or, in a source checkout, the top-level rules/."""
    packaged = Path(__file__).resolve().parent.parent / "_rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "rules"


def builtin_packs() -> list[tuple[Path, dict[str, Any]]]:
    """Every built-in pack, parsed, in file-name order.

    Parsing the YAML packs took a third of a scan's start-up, so tools/compile_rules.py stores them parsed in
    one JSON file, each with the SHA-256 of its source. A pack whose bytes no longer match (edited since) is
    parsed from its YAML: the compiled file can make loading slow, never wrong.
    """
    folder = builtin_rules_dir()
    try:
        compiled = json.loads((folder / COMPILED_PACKS).read_bytes())
    except (OSError, ValueError):
        compiled = {}
    packs: list[tuple[Path, dict[str, Any]]] = []
    for path in sorted(folder.glob("*.yaml")):
        entry = compiled.get(path.name) if isinstance(compiled, dict) else None
        if isinstance(entry, dict) and entry.get("sha256") == hashlib.sha256(path.read_bytes()).hexdigest():
            packs.append((path, entry["pack"]))
        else:
            packs.append((path, load_pack(path, validate=False)))
    return packs


def _prefixes(value: str) -> Iterable[str]:
    parts = value.split(".")
    return (".".join(parts[: i + 1]) for i in range(len(parts)))


def _segments(value: str) -> Iterable[str]:
    """Every run of consecutive dotted parts: `platform.os.mkdir` walks through `os` and `os.mkdir` too."""
    parts = value.split(".")[:64]
    return (".".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1))


@dataclass(frozen=True)
class Condition:
    """One attribute test; every operator present must hold."""

    attr: str
    ops: Mapping[str, Any]

    def holds(self, attrs: Mapping[str, AttrValue], lists: Mapping[str, frozenset[str]]) -> bool:
        value = attrs.get(self.attr)
        return all(_check(op, expected, value, lists) for op, expected in self.ops.items())


def _check(op: str, expected: Any, value: AttrValue | None, lists: Mapping[str, frozenset[str]]) -> bool:
    if op == "equals":
        return bool(value == expected)
    if op == "not-equals":
        return bool(value != expected)
    if op == "in":
        return value in expected
    if op == "not-in":
        return value not in expected
    if op in ("gte", "lte"):
        if not isinstance(value, int) or isinstance(value, bool):
            return False
        return bool(value >= expected if op == "gte" else value <= expected)
    text = "" if value is None else str(value)
    if op in ("matches", "not-matches"):
        found = re.search(expected, text) is not None
        return found if op == "matches" else not found
    members = lists[expected]
    if op == "in-set":
        return text in members
    if op == "not-in-set":
        return text not in members
    if op == "segment-in-set":
        return bool(text) and any(p in members for p in _segments(text))
    hit = bool(text) and any(p in members for p in _prefixes(text))
    return hit if op == "prefix-in-set" else not hit


@dataclass(frozen=True)
class Rule:
    """A rule as loaded: match on kind and attributes, then a finding with the rule's severity."""

    id: str
    name: str
    severity: Severity
    summary: str
    description: str
    message: str
    kinds: frozenset[str]
    conditions: tuple[Condition, ...]
    help: str
    unless: tuple[Condition, ...] = ()  # all of these holding makes the rule not match (an exception)
    cwe: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    precision: str = "high"
    supersedes: frozenset[str] = frozenset()
    source: str = ""

    def matches(self, obs: Observation, lists: Mapping[str, frozenset[str]]) -> bool:
        if obs.kind not in self.kinds or not all(c.holds(obs.attrs, lists) for c in self.conditions):
            return False
        return not (self.unless and all(c.holds(obs.attrs, lists) for c in self.unless))

    def render(self, obs: Observation) -> str:
        values: dict[str, str] = {k: str(v) for k, v in obs.attrs.items()}
        values.setdefault("path", obs.location.path)
        values.setdefault("member", obs.location.member or "")
        values.setdefault("offset", str(obs.location.offset))

        def sub(m: re.Match[str]) -> str:
            return values.get(m.group(1), "?")

        return _PLACEHOLDER.sub(sub, self.message)


@dataclass
class RuleSet:
    """All rules in force, with the config's overrides applied."""

    rules: list[Rule]
    lists: dict[str, frozenset[str]]
    ignores: list[tuple[str, str]] = field(default_factory=list)  # (rule id or *, path glob)
    digest: str = ""
    # The rules that may match each observation kind, in rule order: most kinds have one to three rules.
    by_kind: dict[str, list[Rule]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.by_kind = {}
        for rule in self.rules:
            for kind in rule.kinds:
                self.by_kind.setdefault(kind, []).append(rule)

    @classmethod
    def load(cls, config: Config) -> RuleSet:
        """Built-in packs, then the config's extra packs; validate references; apply overrides."""
        packs = [*builtin_packs(), *((path, load_pack(path)) for path in config.rule_files)]
        rules: dict[str, Rule] = {}
        lists: dict[str, set[str]] = {}
        hasher = hashlib.sha256()
        for path, pack in packs:
            hasher.update(json.dumps(pack, sort_keys=True).encode())
            for name, values in pack.get("lists", {}).items():
                lists.setdefault(name, set()).update(values)
            for raw in pack.get("rules", []):
                rules[raw["id"]] = _build_rule(raw, str(path))  # a later pack may replace a rule by id
        lists.setdefault("allowed-callables", set()).update(config.allow)
        for rule in rules.values():
            for cond in (*rule.conditions, *rule.unless):
                for op, ref in cond.ops.items():
                    if op in SET_OPERATORS and ref not in lists:
                        raise UsageError(f"{rule.source}: rule {rule.id} uses unknown list {ref!r}")
        for rule_id, severity in config.severity.items():
            if rule_id not in rules:
                raise UsageError(f"config: severity override for unknown rule {rule_id}")
            old = rules[rule_id]
            rules[rule_id] = Rule(**{**old.__dict__, "severity": severity})
        hasher.update(json.dumps(sorted(config.allow)).encode())
        hasher.update(json.dumps({k: v.label for k, v in sorted(config.severity.items())}).encode())
        frozen = {name: frozenset(values) for name, values in lists.items()}
        return cls(
            sorted(rules.values(), key=lambda r: r.id), frozen, list(config.ignores), hasher.hexdigest()
        )

    def judge(self, observations: Iterable[Observation]) -> list[Finding]:
        """Findings for these observations, one per (rule, location, evidence)."""
        seen: set[tuple[str, str, str]] = set()
        findings: list[Finding] = []
        for obs in observations:
            candidates = self.by_kind.get(obs.kind, ())
            matched = [r for r in candidates if r.matches(obs, self.lists) and not self._ignored(r.id, obs)]
            if not matched:
                continue
            superseded = {rule_id for r in matched for rule_id in r.supersedes}
            for rule in matched:
                if rule.id in superseded:
                    continue
                key = (rule.id, obs.location.describe(), json.dumps(dict(obs.attrs), sort_keys=True))
                if key in seen:
                    continue
                seen.add(key)
                findings.append(
                    Finding(rule.id, rule.severity, rule.render(obs), obs.location, dict(obs.attrs))
                )
        return findings

    def _ignored(self, rule_id: str, obs: Observation) -> bool:
        return any(
            (pattern_rule in ("*", rule_id)) and fnmatch.fnmatchcase(obs.location.path, glob)
            for pattern_rule, glob in self.ignores
        )

    def get(self, rule_id: str) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def info(self) -> dict[str, RuleInfo]:
        return {
            r.id: RuleInfo(
                r.id,
                r.name,
                r.severity,
                r.summary,
                r.description or r.summary,
                r.help,
                r.cwe,
                r.tags,
                r.precision,
            )
            for r in self.rules
        }


def _conditions(block: Mapping[str, Any] | None, rule_id: str, source: str) -> tuple[Condition, ...]:
    conditions = []
    for attr, ops in (block or {}).items():
        for op in ("matches", "not-matches"):
            if op in ops:
                try:
                    re.compile(ops[op])
                except re.error as exc:
                    raise UsageError(f"{source}: rule {rule_id}: bad regular expression: {exc}") from None
        conditions.append(Condition(attr, dict(ops)))
    return tuple(conditions)


def _build_rule(raw: Mapping[str, Any], source: str) -> Rule:
    match = raw["match"]
    kinds = match["kind"]
    meta = raw["metadata"]
    return Rule(
        id=raw["id"],
        name=raw["name"],
        severity=Severity.parse(raw["severity"]),
        summary=raw["summary"],
        description=raw.get("description", ""),
        message=raw["message"],
        kinds=frozenset([kinds] if isinstance(kinds, str) else kinds),
        conditions=_conditions(match.get("where"), raw["id"], source),
        unless=_conditions(match.get("unless"), raw["id"], source),
        help=meta["help"],
        cwe=tuple(meta.get("cwe", ())),
        tags=tuple(meta.get("tags", ())),
        precision=meta.get("precision", "high"),
        supersedes=frozenset(raw.get("supersedes", ())),
        source=source,
    )
