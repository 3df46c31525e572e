"""Compiled Python (`.pyc`) shipped with a model: code a review of the folder's sources cannot read.

wscan does not read bytecode; it names the file and how Python would pick it. Python imports a `.pyc` with no
source beside it (a legacy `NAME.pyc`), and takes `__pycache__/NAME.<tag>.pyc` instead of `NAME.py` when the
cache entry is an unchecked hash-based one: the source is then never compared, so the code that runs is not the
code a reviewer (or wscan's Python check) read. Nothing writes that kind by default; `py_compile` and
`compileall` write it only when asked (`--invalidation-mode unchecked-hash`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePath

from wscan.lookup import is_file
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem
from wscan.scanners.python_code import in_model_folder, shadowed_by

PYC_HEADER = 16  # magic (2 bytes and CR LF), flags, then a timestamp and size or a source hash (PEP 552)
CACHE_FOLDER = "__pycache__"
# The flags word: bit 0 set for a hash-based .pyc, bit 1 for one whose source Python checks against the hash.
# The flags word: bit 0 hash-based, bit 1 check the source. Python 3.7+ loads every value of the two bits; 2 (check,
# without a hash) is timestamp-based as 0 is (helper 238: a `numpy.pyc` with flags 2 was taken for no .pyc at all).
INVALIDATION = {0: "timestamp", 1: "unchecked-hash", 2: "timestamp", 3: "checked-hash"}


def bytecode_header(head: bytes) -> str | None:
    """The invalidation mode of a CPython 3.7+ .pyc header, or None if the bytes are not one."""
    if len(head) < PYC_HEADER or head[2:4] != b"\r\n":
        return None
    return INVALIDATION.get(int.from_bytes(head[4:8], "little"))


class PythonBytecodeScanner:
    """`.pyc` files in a model's folders (CPython 3.7 and later, as pip and compileall write them)."""

    name = "python-bytecode"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and head.name.lower().endswith(".pyc") and bytecode_header(head.head) is not None

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        shadows = shadowed_by(artifact)
        if not shadows and not in_model_folder(artifact):
            return
        with artifact.opener() as raw:
            mode = bytecode_header(raw.read(PYC_HEADER)) or "unknown"
        place, source = _placement(artifact)
        shadows = shadows if place == "legacy" else ""
        yield artifact.observe("code.bytecode", invalidation=mode, place=place, source=source, shadows=shadows)


def _placement(artifact: Artifact) -> tuple[str, str]:
    """Where the file sits ("cache": in __pycache__, else "legacy") and whether the source Python would compile in
    its place lies beside it: "beside", "none" or "unknown" (inside an archive, which Python imports nothing from)."""
    where = artifact.real_path.absolute() if artifact.real_path is not None else PurePath(artifact.name)
    cached = where.parent.name == CACHE_FOLDER
    place = "cache" if cached else "legacy"
    if artifact.real_path is None:
        return place, "unknown"
    stem = where.name.split(".", 1)[0]  # NAME.cpython-311.pyc and NAME.pyc both compile NAME.py
    folder = where.parent.parent if cached else where.parent
    return place, "beside" if is_file(Path(folder, f"{stem}.py")) else "none"
