"""Renderers: pure functions from a Report to text for people, JSON for machines, SARIF for GitHub."""

from __future__ import annotations

from pathlib import Path

from wscan.output.json import SCHEMA_URI, SCHEMA_VERSION, render_json, report_schema
from wscan.output.sarif import render_sarif
from wscan.output.text import render_text
from wscan.report import Report

FORMATS = ("text", "json", "sarif")

__all__ = [
    "FORMATS",
    "SCHEMA_URI",
    "SCHEMA_VERSION",
    "render",
    "render_json",
    "render_sarif",
    "render_text",
    "report_schema",
]


def render(report: Report, fmt: str, *, srcroot: Path | None = None) -> str:
    """One entry point for the CLI; text here is uncoloured (use render_text for colour)."""
    if fmt == "text":
        return render_text(report, color=False)
    if fmt == "json":
        return render_json(report)
    if fmt == "sarif":
        return render_sarif(report, srcroot)
    raise ValueError(f"unknown output format {fmt!r} (expected one of {', '.join(FORMATS)})")
