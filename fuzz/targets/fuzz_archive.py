"""Zip, tar and 7z walkers (scanners/archive.py), members scanned recursively by every scanner."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.archive import SevenZipScanner, TarScanner, ZipScanner
    from wscan.scanners.base import Scanner

SCANNERS: list[Scanner] = [ZipScanner(), TarScanner(), SevenZipScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "archive.bin")


if __name__ == "__main__":
    fuzz(one_input)
