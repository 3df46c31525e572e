"""Start-up shared by every target: put fuzz/ on the path and instrument wscan before it is imported."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import atheris  # type: ignore[import-untyped]

FUZZ_DIR = Path(__file__).resolve().parents[1]
if str(FUZZ_DIR) not in sys.path:
    sys.path.insert(0, str(FUZZ_DIR))
# Where the runner wants reproducers (libFuzzer's own crash file is not always written for Python exceptions).
CRASH_DIR_VARIABLE = "WSCAN_FUZZ_CRASH_DIR"


def instrument() -> AbstractContextManager[Any]:
    """A context manager: modules of wscan (and the harness) imported inside it get coverage feedback."""
    manager: AbstractContextManager[Any] = atheris.instrument_imports(include=["wscan", "harness"])
    return manager


def _saving(one_input: Callable[[bytes], None]) -> Callable[[bytes], None]:
    """The target, writing the input that made it raise to the crash folder before the exception goes on."""
    folder = os.environ.get(CRASH_DIR_VARIABLE)

    def wrapped(data: bytes) -> None:
        try:
            one_input(data)
        except Exception:
            if folder:
                path = Path(folder) / f"exception-{hashlib.sha1(data).hexdigest()}"
                path.write_bytes(data)
                print(f"\n=== input that raised written to {path}", file=sys.stderr, flush=True)
            raise

    return wrapped


def fuzz(one_input: Callable[[bytes], None]) -> None:
    """Hand the target to libFuzzer with the command line the runner built."""
    atheris.Setup(sys.argv, _saving(one_input))
    atheris.Fuzz()
