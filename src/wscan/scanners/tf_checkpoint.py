"""TensorFlow 2 checkpoints (`tf.train.Checkpoint`, Keras `save_weights` without `.h5`): `<prefix>.index` and
its `<prefix>.data-NNNNN-of-NNNNN` shards.

The index is a TensorBundle table in LevelDB's format, recognised by the table magic in its last 8 bytes; it
maps tensor names to dtypes, shapes and offsets in the shards. Restoring a checkpoint reads tensors into
variables the program already built and runs nothing from the files, so there is nothing to judge: the index
is named as what it is, and its shards are claimed as its data rather than reported as unknown files.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from wscan.lookup import is_file
from wscan.scanners.base import NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem
from wscan.scanners.tf_graph import SAVED_MODEL_NAME, SAVED_MODEL_TEXT_NAME, claim_checkpoint_files

INDEX_SUFFIX = ".index"
TABLE_MAGIC = struct.pack("<Q", 0xDB4775248B80FB57)  # tensorflow/core/lib/io/format.h kTableMagicNumber


class TfCheckpointScanner:
    """A checkpoint's index table, by name and magic; its shards are claimed, never parsed."""

    name = "tf-checkpoint"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and head.name.endswith(INDEX_SUFFIX) and head.tail.endswith(TABLE_MAGIC)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        path = artifact.real_path
        if path is not None and path.parent.name == "variables" and any(
            is_file(path.parent.parent / name) for name in (SAVED_MODEL_NAME, SAVED_MODEL_TEXT_NAME)
        ):
            yield artifact.observe(NOT_MINE_KIND)  # a SavedModel's variables: its graph claims them
            return
        yield from claim_checkpoint_files(artifact, artifact.name.rsplit("/", 1)[-1].removesuffix(INDEX_SUFFIX))
