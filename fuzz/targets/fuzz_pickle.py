"""Pickle streams (scanners/pickle.py + pickle_vm.py and its pickle_* parts): the symbolic VM on any opcode stream.

Each input is also a torch.distributed.checkpoint folder: its first field is `.metadata` (a pickle whose
storage records dcp.py follows into the folder), its second the `__0_0.distcp` those records point into.
"""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.pickle import PickleScanner

SCANNERS = [PickleScanner()]
FOLDER = harness.scratch_dir()
METADATA = FOLDER / ".metadata"
ITEMS = FOLDER / "__0_0.distcp"


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "model.pkl")
    metadata, items = harness.split(data, 2)
    METADATA.write_bytes(metadata)
    ITEMS.write_bytes(items)
    harness.drive(SCANNERS, metadata, METADATA.name, real_path=METADATA)


if __name__ == "__main__":
    fuzz(one_input)
