"""What a model folder's entries are on disk, cheaply, to tell whether any was rewritten between two reads of it.

Hashing a folder twice and comparing the digests misses a file swapped for other bytes in between and put back: it
hashes the same both times. Its change time does not stay the same: every write, rename or replacement sets it to
the current time, and only the kernel sets it (helper 234 swapped a pickle for a clean one while the scan read it,
put it back before the second hash, and had the original attested as scanned clean).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from wscan.lookup import walk

Fingerprint = tuple[int, int, int, int, int, int]  # mode, device, inode, size, modified and changed (ns)
GONE: Fingerprint = (0, 0, 0, 0, 0, 0)  # an entry that could not be looked up


def fingerprints(model: Path, leave_out: Iterable[Path] = ()) -> dict[str, Fingerprint]:
    """Every entry under `model` (or `model` itself, a file) by relative name, from lstat: nothing is followed or
    opened. `leave_out` are files the run itself writes (the attestation)."""
    skipped = {os.path.abspath(path) for path in leave_out}
    if not model.is_dir():
        return {".": _stat(model)}
    found: dict[str, Fingerprint] = {}
    for folder in walk(model):
        for entry in folder.entries:
            path = folder.path / entry.name
            if os.path.abspath(path) not in skipped:
                found[path.relative_to(model).as_posix()] = _stat(path)
    return found


def changed(before: dict[str, Fingerprint], after: dict[str, Fingerprint]) -> list[str]:
    """The entries that appeared, went or changed between two looks."""
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def _stat(path: Path) -> Fingerprint:
    try:
        info = os.lstat(path)
    except OSError:
        return GONE
    return (info.st_mode, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
