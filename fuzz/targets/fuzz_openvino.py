"""OpenVINO IR XML (openvino.py): the document-type refusal, expat's parse and every Const layer's numbers."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.openvino import OpenVinoScanner

SCANNERS = [OpenVinoScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "openvino_model.xml")


if __name__ == "__main__":
    fuzz(one_input)
