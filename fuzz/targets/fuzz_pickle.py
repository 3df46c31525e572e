"""Pickle streams (scanners/pickle.py + pickle_vm.py): the symbolic VM on arbitrary opcode streams."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.pickle import PickleScanner

SCANNERS = [PickleScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "model.pkl")


if __name__ == "__main__":
    fuzz(one_input)
