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
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wscan.errors import UsageError
from wscan.model import AttrValue, Finding, Observation, Severity, shown
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
    """Every built-in pack, parsed, in file-name order."""
    return [(path, pack) for path, pack, _ in _builtin_packs()]


def _builtin_packs() -> list[tuple[Path, dict[str, Any], str]]:
    """Every built-in pack, parsed, with the SHA-256 of its source (what the rule set's digest is made of).

    Parsing the YAML packs took a third of a scan's start-up, so tools/compile_rules.py stores them parsed in
    one JSON file, each with the SHA-256 of its source. A pack whose bytes no longer match (edited since) is
    parsed from its YAML: the compiled file can make loading slow, never wrong.
    """
    folder = builtin_rules_dir()
    try:
        compiled = json.loads((folder / COMPILED_PACKS).read_bytes())
    except (OSError, ValueError):
        compiled = {}
    packs: list[tuple[Path, dict[str, Any], str]] = []
    for path in sorted(folder.glob("*.yaml")):
        entry = compiled.get(path.name) if isinstance(compiled, dict) else None
        source = hashlib.sha256(path.read_bytes()).hexdigest()
        if isinstance(entry, dict) and entry.get("sha256") == source:
            packs.append((path, entry["pack"], source))
        else:
            packs.append((path, load_pack(path, validate=False), source))
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


Test = Callable[[AttrValue | None], bool]  # one operator of a condition, bound to its expected value
Predicate = Callable[[Mapping[str, AttrValue]], bool]  # all conditions of a rule's `where` (or `unless`)


def _predicate(conditions: tuple[Condition, ...], lists: Mapping[str, frozenset[str]]) -> Predicate:
    """The conditions as one function, each operator bound once: a hostile pickle may hold 200,000 imports, and
    each is tried against every rule of its kind."""
    tests = [(cond.attr, _test(op, expected, lists)) for cond in conditions for op, expected in cond.ops.items()]

    def holds(attrs: Mapping[str, AttrValue]) -> bool:
        for attr, test in tests:  # noqa: SIM110 (a loop is a third faster than all(); this runs very often)
            if not test(attrs.get(attr)):
                return False
        return True

    return holds


def _any_of(predicates: list[Predicate]) -> Predicate | None:
    """One predicate that holds where any of `predicates` does; None for none."""
    if not predicates:
        return None
    if len(predicates) == 1:
        return predicates[0]
    return lambda attrs: any(predicate(attrs) for predicate in predicates)


def _test(op: str, expected: Any, lists: Mapping[str, frozenset[str]]) -> Test:
    if op == "equals":
        return lambda value: bool(value == expected)
    if op == "not-equals":
        return lambda value: bool(value != expected)
    if op == "in":
        return lambda value: value in expected
    if op == "not-in":
        return lambda value: value not in expected
    if op in ("gte", "lte"):
        at_least = op == "gte"

        def ordered(value: AttrValue | None) -> bool:
            if not isinstance(value, int) or isinstance(value, bool):
                return False
            return bool(value >= expected if at_least else value <= expected)

        return ordered
    if op in ("matches", "not-matches"):
        wanted = op == "matches"
        return lambda value: (re.search(expected, _text(value)) is not None) == wanted  # re caches the pattern
    members = lists[expected]
    if op == "in-set":
        return lambda value: _text(value) in members
    if op == "not-in-set":
        return lambda value: _text(value) not in members
    if op == "segment-in-set":
        return _part_in(_segments, members)
    hit = _part_in(_prefixes, members)
    return hit if op == "prefix-in-set" else lambda value: not hit(value)


def _part_in(parts: Callable[[str], Iterable[str]], members: frozenset[str]) -> Test:
    def test(value: AttrValue | None) -> bool:
        text = _text(value)
        return bool(text) and any(part in members for part in parts(text))

    return test


def _text(value: AttrValue | None) -> str:
    return "" if value is None else str(value)


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
    # Exceptions: the rule does not match where all conditions of any one of these hold.
    unless: tuple[tuple[Condition, ...], ...] = ()
    cwe: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    precision: str = "high"
    supersedes: frozenset[str] = frozenset()
    source: str = ""

    def render(self, obs: Observation) -> str:
        values: dict[str, str] = {k: shown(v) for k, v in obs.attrs.items()}
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
    # The rules that may match each observation kind, in rule order, with their `where` and `unless` compiled.
    by_kind: dict[str, list[tuple[Rule, Predicate, Predicate | None]]] = field(init=False, repr=False,
                                                                               compare=False)

    def __post_init__(self) -> None:
        self.by_kind = {}
        for rule in self.rules:
            where = _predicate(rule.conditions, self.lists)
            unless = _any_of([_predicate(exception, self.lists) for exception in rule.unless])
            for kind in rule.kinds:
                self.by_kind.setdefault(kind, []).append((rule, where, unless))

    @classmethod
    def load(cls, config: Config) -> RuleSet:
        """Built-in packs, then the config's extra packs; validate references; apply overrides."""
        # A built-in pack is known by its source's digest; a user's, which may be any YAML, by its parsed content.
        packs = [*_builtin_packs(), *((path, pack, json.dumps(pack, sort_keys=True))
                                      for path in config.rule_files for pack in [load_pack(path)])]  # fmt: skip
        rules: dict[str, Rule] = {}
        lists: dict[str, set[str]] = {}
        hasher = hashlib.sha256()
        for path, pack, digest in packs:
            hasher.update(digest.encode())
            for name, values in pack.get("lists", {}).items():
                lists.setdefault(name, set()).update(values)
            for raw in pack.get("rules", []):
                rules[raw["id"]] = _build_rule(raw, str(path))  # a later pack may replace a rule by id
        lists.setdefault("allowed-callables", set()).update(config.allow)
        for rule in rules.values():
            for cond in (*rule.conditions, *(cond for exception in rule.unless for cond in exception)):
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
        return self.judge_listing(observations, None)[0]

    def judge_listing(
        self, observations: Iterable[Observation], listed: int | None
    ) -> tuple[list[Finding], Counter[str]]:
        """The findings, only the first `listed` of each rule made (if given), and how many each rule found."""
        seen: set[tuple[str, str, frozenset[tuple[str, AttrValue]]]] = set()  # the findings made
        counted: set[int] = set()  # the hashes of those only counted: a flood's keys would take more than it
        findings: list[Finding] = []
        found: Counter[str] = Counter()
        for obs in observations:
            attrs = obs.attrs
            matched = [rule for rule, where, unless in self.by_kind.get(obs.kind, ())
                       if where(attrs) and not (unless and unless(attrs)) and not self._ignored(rule.id, obs)]
            if not matched:
                continue
            superseded = {rule_id for r in matched for rule_id in r.supersedes}
            for rule in matched:
                if rule.id in superseded:
                    continue
                key = (rule.id, obs.location.describe(), frozenset(attrs.items()))
                if key in seen or hash(key) in counted:
                    continue
                found[rule.id] += 1
                if listed is None or found[rule.id] <= listed:
                    seen.add(key)
                    findings.append(Finding(rule.id, rule.severity, rule.render(obs), obs.location, dict(attrs)))
                else:
                    counted.add(hash(key))
        return findings, found

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


def _exceptions(raw: Mapping[str, Any] | list[Mapping[str, Any]] | None, rule_id: str,
                source: str) -> tuple[tuple[Condition, ...], ...]:
    """`unless`: one set of conditions, or a list of them (any one holding is an exception)."""
    if not raw:
        return ()
    return tuple(_conditions(each, rule_id, source) for each in (raw if isinstance(raw, list) else [raw]))


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
        unless=_exceptions(match.get("unless"), raw["id"], source),
        help=meta["help"],
        cwe=tuple(meta.get("cwe", ())),
        tags=tuple(meta.get("tags", ())),
        precision=meta.get("precision", "high"),
        supersedes=frozenset(raw.get("supersedes", ())),
        source=source,
    )
