"""skops files (scanners/skops.py): the schema.json a fuzzed input gives, in a zip beside the arrays of a real skops
file (the corpus's pipeline), translated to its pickle and scanned with every scanner the zip's members meet."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.archive import ZipScanner
    from wscan.scanners.base import Scanner
    from wscan.scanners.numpy import NpyScanner
    from wscan.scanners.pickle import PickleScanner

SCANNERS: list[Scanner] = [ZipScanner(), NpyScanner(), PickleScanner()]
REAL = Path(__file__).resolve().parents[2] / "corpus" / "benign" / "sklearn-pipeline.skops"
with zipfile.ZipFile(REAL) as real:
    ARRAYS = {name: real.read(name) for name in real.namelist() if name != "schema.json"}


def one_input(data: bytes) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, member in ARRAYS.items():
            archive.writestr(name, member)
        archive.writestr("schema.json", data)
    harness.drive(SCANNERS, buffer.getvalue(), "model.skops")


if __name__ == "__main__":
    fuzz(one_input)
