"""TensorStore OCDBT files, which an Orbax checkpoint (Keras' OrbaxCheckpoint, JAX training loops) keeps its
arrays in: `manifest.ocdbt` and the `d/<id>` data files.

Restoring reads them as array data through TensorStore and runs nothing from them, so there is nothing to judge:
a file that starts with an OCDBT envelope (manifest, version tree node or B+tree node; tensorstore's OCDBT format
spec) is named as what it is rather than reported as an unknown format. The header is checked strictly (magic,
a length that fits the file, version 0, a known compression); the rest is never read. What in a checkpoint can
run code is its model config, which the Keras scanner reads.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem

# magic (uint32 big-endian), length (uint64 little-endian, the whole envelope), version and compression (varints,
# one byte each for the values allowed), ..., CRC-32C (uint32 little-endian)
MAGICS = frozenset({0x0CDB3A2A, 0x0CDB1234, 0x0CDB20DE})  # manifest, version tree node, B+tree node
_HEADER = struct.Struct(">I")
_LENGTH = struct.Struct("<Q")
_SMALLEST = 4 + 8 + 1 + 1 + 4  # header, an empty body, checksum
_COMPRESSIONS = (0, 1)  # none, zstd


def is_ocdbt(head: bytes, size: int) -> bool:
    """Whether the blob starts with an OCDBT envelope whose header is what tensorstore writes and fits the blob
    (a data file may hold more after it: other nodes, out-of-line values)."""
    if len(head) < 14 or _HEADER.unpack_from(head)[0] not in MAGICS:
        return False
    length = _LENGTH.unpack_from(head, 4)[0]
    return _SMALLEST <= length <= size and head[12] == 0 and head[13] in _COMPRESSIONS


class OcdbtScanner:
    """OCDBT manifests and data files, by their envelope header; claimed as array data, never parsed."""

    name = "ocdbt"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and is_ocdbt(head.head, head.size)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        return iter(())
