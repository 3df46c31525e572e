"""Flax msgpack checkpoints (flax_msgpack.py + flax_msgpack_tree.py): maps, arrays, extensions, chunked arrays."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.flax_msgpack import FlaxMsgpackScanner

SCANNERS = [FlaxMsgpackScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "flax_model.msgpack")


if __name__ == "__main__":
    fuzz(one_input)
