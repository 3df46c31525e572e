"""Core value types shared by every stage: what was seen, where, and how bad it is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum

AttrValue = str | int | bool
# Integers past this stand for "huge": a crafted .npy header states dimensions thousands of digits long, whose
# product Python refuses to print (past 4,300 digits); no rule or reader needs more than that it is huge, and a
# 64-bit size or offset stays exact below it.
HUGE_INT = 10**30


def bounded(value: AttrValue) -> AttrValue:
    """An attribute as rules read it: an integer at or past +-HUGE_INT as +-HUGE_INT, so every comparison with a
    real threshold answers as it would for the integer itself."""
    if type(value) is int and not -HUGE_INT < value < HUGE_INT:
        return HUGE_INT if value > 0 else -HUGE_INT
    return value


def shown(value: AttrValue) -> str:
    """An attribute as text: a bounded integer as what it stands for."""
    if type(value) is int and not -HUGE_INT < value < HUGE_INT:
        return "more than 10^30" if value > 0 else "less than -10^30"
    return str(value)


class Severity(IntEnum):
    """Ordered so thresholds compare with plain integers."""

    INFO = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Read a severity name as written in rules, config and on the command line."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            names = ", ".join(s.name.lower() for s in cls)
            raise ValueError(f"unknown severity {text!r} (expected one of {names})") from None

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Issue:
    """What a pure checker (templates, Keras configs, ONNX graphs) found, before it knows where it sits: an
    observation kind and the facts a rule message needs. The scanner places it (Artifact.observe)."""

    kind: str
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Location:
    """Where a fact was seen, down to the byte inside nested containers."""

    path: str
    member: str | None = None
    offset: int | None = None

    def describe(self) -> str:
        """Human form: path!member@offset."""
        text = self.path
        if self.member:
            text += "!" + self.member
        if self.offset is not None:
            text += f"@{self.offset}"
        return text

    def child(self, member: str) -> Location:
        """Location of a member inside this container."""
        chain = f"{self.member}!{member}" if self.member else member
        return Location(self.path, chain)

    def at(self, offset: int) -> Location:
        return Location(self.path, self.member, offset)


@dataclass(frozen=True, slots=True)
class Observation:
    """A fact a scanner saw. Scanners never judge; rules do."""

    kind: str
    location: Location
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Finding:
    """An observation judged by a rule."""

    rule_id: str
    severity: Severity
    message: str
    location: Location
    evidence: Mapping[str, AttrValue]

    def sort_key(self) -> tuple[int, str, str, int, str]:
        return (
            -int(self.severity),
            self.location.path,
            self.location.member or "",
            self.location.offset or 0,
            self.rule_id,
        )
