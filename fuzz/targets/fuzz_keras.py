"""Keras (keras.py + keras_config.py): config.json of a .keras archive, stand-alone model JSON, .keras zips,
and a SavedModel's keras_metadata.pb (tf_keras' protobuf of JSON configs).

The HDF5 probe forks a child process per file and is not fuzzed here (NoHdf5Keras skips HDF5 heads).
"""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.archive import ZipScanner

KERAS = [harness.NoHdf5Keras()]
ZIP = [ZipScanner()]


def one_input(data: bytes) -> None:
    if data.startswith(b"PK"):
        harness.drive(ZIP, data, "model.keras")
        return
    harness.drive(KERAS, data, "config.json", {"container": "keras"})
    harness.drive(KERAS, data, "model.json")
    harness.drive(KERAS, data, "keras_metadata.pb")


if __name__ == "__main__":
    fuzz(one_input)
