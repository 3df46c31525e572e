"""Scanning from tests: one engine with the built-in rules (loading the packs dominates a small scan), and the
rule IDs a report holds above INFO."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from wscan.config import Config
from wscan.engine import Engine
from wscan.model import Severity
from wscan.report import Report


@cache
def default_engine() -> Engine:
    """The engine behind `wscan.scan`, built once, scanning in the test's own process: a forked worker per scan
    costs 20 ms in a process this large (torch, TensorFlow), minutes over the suite. The worker path has tests
    of its own (test_budgets, test_never_executes, and every CLI test)."""
    return Engine(Config(jobs=0))


def scan(path: Path, config: Config | None = None) -> Report:
    return (Engine(config) if config else default_engine()).scan([path])


def scan_bytes(folder: Path, blob: bytes, name: str, config: Config | None = None) -> Report:
    """Write `blob` as folder/name and scan it."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return scan(path, config)


def rule_ids(report: Report) -> set[str]:
    """Rule IDs of the findings that are more than information."""
    return {f.rule_id for f in report.findings if f.severity > Severity.INFO}
