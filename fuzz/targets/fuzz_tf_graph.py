"""TensorFlow SavedModel and frozen GraphDef protobufs (tf_graph.py), under both names."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.tf_graph import TfGraphScanner

SCANNERS = [TfGraphScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "saved_model.pb")
    harness.drive(SCANNERS, data, "frozen_graph.pb")


if __name__ == "__main__":
    fuzz(one_input)
