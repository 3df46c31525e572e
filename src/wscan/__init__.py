"""wscan: a security scanner and provenance auditor for machine-learning model files.

Nothing from a scanned file is ever executed, unpickled, imported or evaluated.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from wscan.config import Config
    from wscan.report import Report


def scan(paths: Iterable[str | Path], config: Config | None = None) -> Report:
    """Scan files and folders and return the report (the Python API behind `wscan scan`)."""
    from wscan.config import Config
    from wscan.engine import Engine

    path_list = [Path(p) for p in paths]
    return Engine(config or Config()).scan(path_list)


__all__ = ["__version__", "scan"]
