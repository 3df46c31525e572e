"""PyTorch zip checkpoints (archive/data.pkl, data/0, ...): zip walker, layout, pickle with storages, and
TorchScript archives' code/ files."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.archive import ZipScanner
    from wscan.scanners.base import Scanner
    from wscan.scanners.pickle import PickleScanner
    from wscan.scanners.torchscript_code import TorchScriptCodeScanner

SCANNERS: list[Scanner] = [ZipScanner(), PickleScanner(), TorchScriptCodeScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "pytorch_model.bin")


if __name__ == "__main__":
    fuzz(one_input)
