"""GGUF files (gguf.py + gguf_header.py): header, metadata, tensor table, chat template."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.gguf import GgufScanner

SCANNERS = [GgufScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "model.gguf")


if __name__ == "__main__":
    fuzz(one_input)
