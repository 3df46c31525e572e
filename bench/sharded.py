"""Validating a sharded safetensors model reads headers, not weights: wall time and bytes read vs hashing.

Builds (once, under bench/work/) a model folder of SIZE_GB gigabytes in SHARDS safetensors shards with a
`model.safetensors.index.json`, the layout `save_pretrained` writes (hundreds of tensors per shard, data
written as real zero bytes, not holes). Then, in one run:

- `wscan` scans the folder (every shard header validated, every shard cross-checked against the index);
  bytes read are the process's `rchar` (every byte returned by read(2)) around the scan itself;
- the same folder is hashed with sha256 (what signing needs), one file after another and two at a time.

Run: python bench/sharded.py [SIZE_GB] [SHARDS]   (defaults: 5 GB, 5 shards)
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from measure import rchar, write_zeros

WORK = Path(__file__).resolve().parent / "work"
TENSORS_PER_SHARD = 300


def build(folder: Path, size: int, shards: int) -> None:
    """Shards of BF16 matrices, headers and index as save_pretrained writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    per_shard = size // shards
    per_tensor = per_shard // TENSORS_PER_SHARD // 2 * 2  # BF16: an even number of bytes
    cols = 4096
    rows = per_tensor // 2 // cols
    nbytes = rows * cols * 2
    weight_map: dict[str, str] = {}
    total = 0
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        header: dict[str, object] = {"__metadata__": {"format": "pt"}}
        for t in range(TENSORS_PER_SHARD):
            tensor = f"model.layers.{s * TENSORS_PER_SHARD + t}.mlp.weight"
            header[tensor] = {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [t * nbytes, (t + 1) * nbytes]}
            weight_map[tensor] = name
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        data = nbytes * TENSORS_PER_SHARD
        total += data
        path = folder / name
        if path.is_file() and path.stat().st_size == 8 + len(text) + data:
            continue
        with path.open("wb") as out:
            out.write(struct.pack("<Q", len(text)) + text)
            write_zeros(out, data)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))


def sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def main(argv: list[str]) -> int:
    size_gb = float(argv[0]) if argv else 5.0
    shards = int(argv[1]) if len(argv) > 1 else 5
    folder = WORK / f"sharded-{size_gb:g}gb-{shards}"
    build(folder, int(size_gb * 1e9), shards)
    files = sorted(p for p in folder.iterdir() if p.is_file())
    total = sum(p.stat().st_size for p in files)

    from wscan.config import Config
    from wscan.engine import Engine

    engine = Engine(Config())  # rule packs loaded before measuring: they are not the folder's bytes
    before, started = rchar(), time.perf_counter()
    report = engine.scan([folder])
    scan_seconds, scan_bytes = time.perf_counter() - started, rchar() - before
    shard_count = sum(1 for p in files if p.suffix == ".safetensors")

    started = time.perf_counter()
    for path in files:
        sha256_file(path)
    hash_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(sha256_file, files))
    hash2_seconds = time.perf_counter() - started

    print(f"folder: {folder} ({total / 1e9:.2f} GB, {shard_count} shards, {len(files)} files)")
    print(f"{'task':34} {'wall s':>8} {'bytes read':>14} {'per shard':>12}")
    print(f"{'wscan scan (all checks)':34} {scan_seconds:8.3f} {scan_bytes:14,d} {scan_bytes // shard_count:12,d}")
    print(f"{'sha256, one file at a time':34} {hash_seconds:8.3f} {total:14,d} {total // shard_count:12,d}")
    print(f"{'sha256, two files at a time':34} {hash2_seconds:8.3f} {total:14,d} {total // shard_count:12,d}")
    print(f"verdict {report.verdict()}, findings {len(report.findings)}; "
          f"scan is {hash_seconds / scan_seconds:,.0f}x faster than hashing and reads "
          f"{scan_bytes / total:.6%} of the bytes")
    return 0 if not report.findings else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
