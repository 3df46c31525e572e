"""gzip, bz2, xz/lzma and zlib streams (scanners/compressed.py), the payload scanned recursively."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.compressed import CompressedScanner

SCANNERS = [CompressedScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "payload.gz")


if __name__ == "__main__":
    fuzz(one_input)
