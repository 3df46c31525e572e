"""safetensors files (safetensors.py + safetensors_header.py): header JSON, offsets, gaps."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.safetensors import SafetensorsScanner

SCANNERS = [SafetensorsScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "model.safetensors")


if __name__ == "__main__":
    fuzz(one_input)
