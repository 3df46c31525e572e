"""Hashing and signing a multi-gigabyte model: wscan against the reference `model_signing`, in one run.

Uses the sharded folder `bench/sharded.py` builds (5 GB in 5 safetensors shards by default; built here if
missing), a fresh EC P-256 key, and times, each in a fresh process, after one warm-up read of the folder:

- `wscan sign --private-key` and `python -m model_signing sign key --private_key` (same signature format);
- `wscan sign --shard-size 1000000000` (OMS `shards` method: large files hashed on every core);
- `wscan verify` and `python -m model_signing verify key`.

Run: python bench/signing.py [SIZE_GB] [SHARDS]
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sharded import WORK, build


def _run(label: str, command: list[str]) -> tuple[str, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{label} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return label, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str]) -> int:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    size_gb = float(argv[0]) if argv else 5.0
    shards = int(argv[1]) if len(argv) > 1 else 5
    folder = WORK / f"sharded-{size_gb:g}gb-{shards}"
    build(folder, int(size_gb * 1e9), shards)
    total = sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and p.suffix != ".sig")
    keys = Path(tempfile.mkdtemp(prefix="wscan-bench-keys-"))
    key = ec.generate_private_key(ec.SECP256R1())
    (keys / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()))
    (keys / "pub.pem").write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                                 serialization.PublicFormat.SubjectPublicKeyInfo))
    wscan = [sys.executable, "-m", "wscan"]
    reference = [sys.executable, "-m", "model_signing"]
    ours, theirs, sharded = keys / "wscan.sig", keys / "ms.sig", keys / "sharded.sig"
    for path in folder.iterdir():  # warm the page cache so every tool reads the same cached bytes
        with path.open("rb") as handle:
            while handle.read(64 << 20):
                pass
    rows = [
        _run("model_signing sign key", [*reference, "sign", "key", "--private_key", str(keys / "key.pem"),
                                        "--signature", str(theirs), str(folder)]),
        _run("wscan sign --private-key", [*wscan, "sign", str(folder), "--private-key", str(keys / "key.pem"),
                                          "--signature", str(ours)]),
        _run("wscan sign --shard-size 1e9", [*wscan, "sign", str(folder), "--private-key", str(keys / "key.pem"),
                                             "--signature", str(sharded), "--shard-size", "1000000000"]),
        _run("model_signing verify key", [*reference, "verify", "key", "--public_key", str(keys / "pub.pem"),
                                          "--signature", str(ours), str(folder)]),
        _run("wscan verify --public-key", [*wscan, "verify", str(folder), "--public-key", str(keys / "pub.pem"),
                                           "--signature", str(theirs)]),
    ]
    print(f"folder: {folder} ({total / 1e9:.2f} GB in {shards} files), page cache warm, 2 cores")
    print(f"{'task':32} {'wall s':>8} {'CPU s':>8} {'GB/s':>6}")
    for label, wall, cpu in rows:
        print(f"{label:32} {wall:8.2f} {cpu:8.2f} {total / 1e9 / wall:6.2f}")
    ratio = rows[0][1] / rows[1][1]
    print(f"wscan sign / model_signing sign: {ratio:.2f}x the speed (same library underneath: sha256 per file, "
          "files hashed in parallel)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
