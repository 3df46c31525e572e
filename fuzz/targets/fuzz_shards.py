"""Shard indexes (shards.py): the index JSON and one shard header, checked against a real folder.

The input is `index JSON` + marker + `bytes of model-00001-of-00002.safetensors`; the second shard is a fixed
valid file, so missing-shard, escape, duplicate-tensor and size checks all have something to compare.
"""

from __future__ import annotations

import struct

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.shards import ShardIndexScanner

SCANNERS = [ShardIndexScanner()]
FOLDER = harness.scratch_dir()
INDEX = FOLDER / "model.safetensors.index.json"
SHARD = FOLDER / "model-00001-of-00002.safetensors"
_HEADER = b'{"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
(FOLDER / "model-00002-of-00002.safetensors").write_bytes(struct.pack("<Q", len(_HEADER)) + _HEADER + bytes(8))


def one_input(data: bytes) -> None:
    index, shard = harness.split(data, 2)
    INDEX.write_bytes(index)
    SHARD.write_bytes(shard)
    harness.drive(SCANNERS, index, INDEX.name, real_path=INDEX)


if __name__ == "__main__":
    fuzz(one_input)
