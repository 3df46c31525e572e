"""User configuration: the file named by `--config` (conventionally `.wscan.yaml`).

A config can lower severities, ignore rules and allow callables (never a known code-execution gadget:
those rules do not consult the allowlist), so it is only read when named: one found beside scanned
files may have come with them.
"""

from __future__ import annotations

import sys
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
    # Worker processes; None: one per core (up to 8). 0: none, files are scanned in the calling process, which a
    # parser that hangs in native code, or crashes it, then takes down (for callers that isolate scans themselves).
    jobs: int | None = None

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
    def load(cls, explicit: Path | None) -> Config:
        """The named file, else the defaults. A config is never found by looking around: one in a scanned
        folder, or in the folder a scan runs in, may have come with the model, and could lower any severity,
        ignore every rule or silence a signature check. The report names the config it ran with."""
        if explicit is None:
            return cls()
        if not explicit.is_file():
            raise UsageError(f"config file not found: {explicit}")
        return cls.from_file(explicit)


def load_config(explicit: Path | None) -> Config:
    """`Config.load` for the command line, with a note on stderr when `.wscan.yaml` sits in the working
    directory but was not named (it used to be read from there)."""
    if explicit is None and Path(CONFIG_NAME).is_file():
        print(
            f"wscan: note: ./{CONFIG_NAME} was not read: a config is read only when named (--config {CONFIG_NAME}),"
            " since one beside the files scanned may have come with them",
            file=sys.stderr,
        )
    return Config.load(explicit)
