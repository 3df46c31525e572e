"""ONNX models (onnx_model.py + onnx_checks.py): protobuf parse, graph checks, external-data paths; the lenient
sniff and top-level walk for models laid out to slip past the strict one."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.onnx_model import LenientOnnxScanner, OnnxScanner

SCANNERS = [OnnxScanner(), LenientOnnxScanner()]
# A real folder, so external-data references are resolved against the disk (a weights.bin is there).
FOLDER = harness.scratch_dir()
(FOLDER / "weights.bin").write_bytes(bytes(4096))
MODEL = FOLDER / "model.onnx"  # never written: the scanner reads the bytes, the path only names the folder


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "model.onnx", real_path=MODEL)


if __name__ == "__main__":
    fuzz(one_input)
