"""Python files beside model weights (python_code.py): ast parse and the import/call resolver."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.python_code import PythonCodeScanner

SCANNERS = [PythonCodeScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "modeling_custom.py", {"container": "generic"})


if __name__ == "__main__":
    fuzz(one_input)
