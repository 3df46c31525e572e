"""TensorFlow Lite models (tflite.py, flatbuffer.py): the FlatBuffer's tables, Flex ops' FlexBuffer options and
NodeDefs, constant string tensors."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.tflite import TfliteScanner

SCANNERS = [TfliteScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "model.tflite")


if __name__ == "__main__":
    fuzz(one_input)
