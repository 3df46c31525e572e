"""User configuration: `.wscan.yaml` in the scanned folder, or `--config FILE`.

A config found inside a scanned repository may come from whoever sent the model: it can lower
severities and allow callables, but it can never allow a known code-execution gadget (those rules do
not consult the allowlist).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from wscan.errors import UsageError
from wscan.limits import Limits
from wscan.model import Severity
from wscan.rules.loader import load_yaml

CONFIG_NAME = ".wscan.yaml"


@dataclass(frozen=True)
class Config:
    """Everything a scan can be told, with safe defaults."""

    fail_on: Severity = Severity.HIGH
    rule_files: tuple[Path, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    allow: frozenset[str] = frozenset()
    ignores: tuple[tuple[str, str], ...] = ()
    limits: Limits = field(default_factory=Limits)
    source: Path | None = None
    jobs: int | None = None  # worker processes for many files; None: one per core

    @classmethod
    def from_file(cls, path: Path) -> Config:
        """Load and validate a config file; relative rule paths are relative to it."""
        data = load_yaml(path, "config.schema.json") or {}
        base = path.parent
        try:
            limits = Limits.from_mapping(data.get("limits", {}))
        except ValueError as exc:
            raise UsageError(f"{path}: limits: {exc}") from None
        return cls(
            fail_on=Severity.parse(data.get("fail-on", "high")),
            rule_files=tuple((base / p) for p in data.get("rules", [])),
            severity={rule: Severity.parse(level) for rule, level in data.get("severity", {}).items()},
            allow=frozenset(data.get("allow", [])),
            ignores=tuple((item["rule"], glob) for item in data.get("ignore", []) for glob in item["paths"]),
            limits=limits,
            source=path,
        )

    @classmethod
    def discover(cls, explicit: Path | None, scan_paths: list[Path]) -> Config:
        """The explicit file, else the first `.wscan.yaml` in the working directory or a scanned folder."""
        if explicit is not None:
            if not explicit.is_file():
                raise UsageError(f"config file not found: {explicit}")
            return cls.from_file(explicit)
        candidates = [Path.cwd()] + [p if p.is_dir() else p.parent for p in scan_paths]
        for folder in candidates:
            found = folder / CONFIG_NAME
            if found.is_file():
                return cls.from_file(found)
        return cls()
