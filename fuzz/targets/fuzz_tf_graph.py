"""TensorFlow SavedModel, MetaGraphDef and GraphDef protobufs, binary and text (tf_graph.py), under the names
that are taken whatever the bytes and one that is not; and a TF2 checkpoint index (tf_checkpoint.py)."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import google.protobuf.text_format  # noqa: F401  (imported by the scanner only when a graph is text)
    import harness

    from wscan.scanners.tf_checkpoint import TfCheckpointScanner
    from wscan.scanners.tf_graph import TfGraphScanner

SCANNERS = [TfGraphScanner()]
CHECKPOINT = [TfCheckpointScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "saved_model.pb")
    harness.drive(SCANNERS, data, "saved_model.pbtxt")
    harness.drive(SCANNERS, data, "frozen_graph.pb")
    harness.drive(CHECKPOINT, data, "model.index")


if __name__ == "__main__":
    fuzz(one_input)
