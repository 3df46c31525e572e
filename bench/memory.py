"""Peak memory of `wscan scan` on multi-gigabyte files: it must stay flat, whatever the file size.

Builds (once, under bench/work/) a PyTorch zip checkpoint, a legacy torch file, a raw pickle and an .npy,
each about SIZE_GB gigabytes, then runs `wscan scan` on each in a fresh process and reports wall time,
peak resident memory (ru_maxrss of the child) and the verdict. Run: python bench/memory.py [SIZE_GB]
"""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

from measure import write_zeros

WORK = Path(__file__).resolve().parent / "work"


def build_torch_zip(path: Path, size: int) -> None:
    import torch

    buf = io.BytesIO()
    torch.save({"weight": torch.zeros(4)}, buf)
    buf.seek(0)
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            if info.filename.endswith("/data/0"):
                with dst.open(info.filename, "w", force_zip64=True) as out:
                    write_zeros(out, size)
            else:
                dst.writestr(info.filename, src.read(info.filename))


def build_legacy(path: Path, size: int) -> None:
    import torch

    buf = io.BytesIO()
    torch.save({"weight": torch.zeros(4)}, buf, _use_new_zipfile_serialization=False)
    data = buf.getvalue()
    # Rewrite the storage's element count so the loader (and wscan) expect SIZE bytes of floats.
    head, count_and_data = data[: -(8 + 16)], data[-(8 + 16) :]
    assert struct.unpack("<q", count_and_data[:8])[0] == 4
    with open(path, "wb") as out:
        out.write(head + struct.pack("<q", size // 4))
        write_zeros(out, size // 4 * 4)


def build_pickle(path: Path, size: int) -> None:
    with open(path, "wb") as out:
        out.write(b"\x80\x04\x8e" + struct.pack("<Q", size))
        write_zeros(out, size)
        out.write(b".")


def build_npy(path: Path, size: int) -> None:
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({size // 4},), }}"
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    with open(path, "wb") as out:
        out.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        write_zeros(out, size // 4 * 4)


def main() -> int:
    size = int(float(sys.argv[1] if len(sys.argv) > 1 else "4") * (1 << 30))
    WORK.mkdir(exist_ok=True)
    builders = {
        "pytorch-zip.pt": build_torch_zip, "legacy.pt": build_legacy, "raw.pkl": build_pickle, "array.npy": build_npy,
    }  # fmt: skip
    print("| file | size | wall s | peak RSS MiB | exit |\n|---|---|---|---|---|")
    for name, build in builders.items():
        path = WORK / name
        if not path.exists() or path.stat().st_size < size:
            build(path, size)
        # Each measurement runs in its own process so ru_maxrss is that scan's alone.
        code = (
            "import resource,subprocess,sys,time;t=time.monotonic();"
            f"p=subprocess.run([sys.executable,'-m','wscan','--format','json',{str(path)!r}],capture_output=True);"
            "print(time.monotonic()-t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024, p.returncode)"
        )
        wall, peak, rc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True
        ).stdout.split()
        print(
            f"| {name} | {path.stat().st_size / (1 << 30):.2f} GiB | {float(wall):.2f} | {float(peak):.0f} | {rc} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
