"""numpy .npy headers and .npz archives (scanners/numpy.py; npz through the zip walker)."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.archive import ZipScanner
    from wscan.scanners.base import Scanner
    from wscan.scanners.numpy import NpyScanner

SCANNERS: list[Scanner] = [NpyScanner(), ZipScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "arrays.npz" if data.startswith(b"PK") else "array.npy")


if __name__ == "__main__":
    fuzz(one_input)
