"""What the report keeps of one scanned file, and its JSON form for the pipe from a worker.

A worker judges the files it scans and sends back this, not their observations: a hostile file may hold
200,000 of them (70 MB as JSON), and judging them in the parent would take seconds per file, one file at a
time and outside the file's time limit. JSON, never a pickle: the strings in it come from hostile files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from wscan.model import Finding, Location, Observation, Severity


@dataclass
class Settled:
    """A file's status, findings, and the observations the report reads across files."""

    kept: list[Observation]  # claims and facts
    formats: list[str]  # the scanners that read it
    status: str
    reason: str
    findings: list[Finding]
    # A file no scanner read: its few observations, to settle it again if another file claims it (ONNX data).
    unread: list[Observation] | None


def encode(settled: Settled) -> bytes:
    return json.dumps({
        "kept": [_observation(o) for o in settled.kept],
        "formats": settled.formats,
        "status": settled.status,
        "reason": settled.reason,
        "findings": [[f.rule_id, int(f.severity), f.message, _location(f.location), dict(f.evidence)]
                     for f in settled.findings],
        "unread": None if settled.unread is None else [_observation(o) for o in settled.unread],
    }).encode()  # fmt: skip


def decode(data: bytes) -> Settled:
    doc = json.loads(data)
    return Settled(
        [_read_observation(row) for row in doc["kept"]],
        [str(name) for name in doc["formats"]],
        str(doc["status"]),
        str(doc["reason"]),
        [Finding(str(rule_id), Severity(severity), str(message), _read_location(where), dict(evidence))
         for rule_id, severity, message, where, evidence in doc["findings"]],
        None if doc["unread"] is None else [_read_observation(row) for row in doc["unread"]],
    )  # fmt: skip


def _observation(obs: Observation) -> list[Any]:
    return [obs.kind, _location(obs.location), dict(obs.attrs)]


def _location(where: Location) -> list[Any]:
    return [where.path, where.member, where.offset]


def _read_observation(row: list[Any]) -> Observation:
    kind, where, attrs = row
    return Observation(str(kind), _read_location(where), dict(attrs))


def _read_location(row: list[Any]) -> Location:
    path, member, offset = row
    return Location(path, member, offset)

