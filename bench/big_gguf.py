"""A multi-gigabyte GGUF is checked from its header, metadata and tensor infos: wall time and bytes read.

Builds (once, under bench/work/) a GGUF of SIZE_GB gigabytes laid out like a quantized Llama: a 128k-token
vocabulary with scores and types, the real Llama 3.1 chat template, and 291 Q4_0 tensors whose data are
real zero bytes (not holes). Then scans it in-process and reports wall time and the process's `rchar`
(every byte returned by read(2)) around the scan, next to the time sha256 takes to read the same file.

Run: python bench/big_gguf.py [SIZE_GB]   (default 4). (Not named gguf.py: it would shadow the gguf package.)
"""

from __future__ import annotations

import hashlib
import struct
import sys
import time
from pathlib import Path

from measure import rchar, write_zeros

WORK = Path(__file__).resolve().parent / "work"
ROOT = Path(__file__).resolve().parents[1]
Q4_0, Q4_0_BLOCK, Q4_0_BYTES = 2, 32, 18  # ggml type id, elements per block, bytes per block
TENSORS = 291


def _str(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _kv_str(key: str, value: str) -> bytes:
    return _str(key) + struct.pack("<I", 8) + _str(value)


def _kv_array(key: str, item_type: int, items: list[bytes]) -> bytes:
    return _str(key) + struct.pack("<IIQ", 9, item_type, len(items)) + b"".join(items)


def build(path: Path, size: int) -> None:
    """Header, metadata and tensor infos as llama.cpp's converter writes them, then zero tensor data."""
    cols = 4096
    rows = max(1, size // TENSORS // (cols // Q4_0_BLOCK * Q4_0_BYTES))
    nbytes = rows * cols // Q4_0_BLOCK * Q4_0_BYTES
    template = (ROOT / "tests/data/chat_templates/meta-llama-Llama-3.1-8B-Instruct.jinja").read_text()
    tokens = [f"tok{i}" for i in range(128_256)]
    kvs = [
        _kv_str("general.architecture", "llama"),
        _kv_str("general.name", "bench-llama"),
        _kv_str("tokenizer.ggml.model", "gpt2"),
        _kv_array("tokenizer.ggml.tokens", 8, [_str(t) for t in tokens]),
        _kv_array("tokenizer.ggml.scores", 6, [struct.pack("<f", 0.0)] * len(tokens)),
        _kv_array("tokenizer.ggml.token_type", 5, [struct.pack("<i", 1)] * len(tokens)),
        _kv_str("tokenizer.chat_template", template),
    ]
    infos = []
    for t in range(TENSORS):
        infos.append(_str(f"blk.{t}.weight") + struct.pack("<IQQIQ", 2, cols, rows, Q4_0, t * nbytes))
    head = b"GGUF" + struct.pack("<IQQ", 3, TENSORS, len(kvs)) + b"".join(kvs) + b"".join(infos)
    head += bytes(-len(head) % 32)
    total = len(head) + TENSORS * nbytes
    if path.is_file() and path.stat().st_size == total:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        out.write(head)
        write_zeros(out, TENSORS * nbytes)


def main(argv: list[str]) -> int:
    size_gb = float(argv[0]) if argv else 4.0
    path = WORK / f"bench-{size_gb:g}gb.gguf"
    build(path, int(size_gb * 1e9))
    size = path.stat().st_size

    from wscan.config import Config
    from wscan.engine import Engine

    engine = Engine(Config())
    engine.scan([path])  # warm up: the gguf package and NumPy import on the first GGUF
    before, started = rchar(), time.perf_counter()
    report = engine.scan([path])
    scan_seconds, scan_bytes = time.perf_counter() - started, rchar() - before
    started = time.perf_counter()
    with path.open("rb") as handle:
        hashlib.file_digest(handle, "sha256")
    hash_seconds = time.perf_counter() - started

    print(f"file: {path} ({size / 1e9:.2f} GB, {TENSORS} Q4_0 tensors, 128,256-token vocabulary)")
    print(f"{'task':28} {'wall s':>8} {'bytes read':>16}")
    print(f"{'wscan scan':28} {scan_seconds:8.3f} {scan_bytes:16,d}")
    print(f"{'sha256 of the file':28} {hash_seconds:8.3f} {size:16,d}")
    print(f"verdict {report.verdict()}, findings {len(report.findings)}; read {scan_bytes / size:.4%} of the file")
    return 0 if not report.findings else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
