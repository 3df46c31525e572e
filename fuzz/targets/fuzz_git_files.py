"""Git's files in a model folder (scanners/git_files.py): a .git/config read as git writes it, or a hook checked
against Git LFS's own. The first byte picks which (even: config, odd: hook); the rest is the file."""

from __future__ import annotations

from pathlib import Path

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.git_files import GitFilesScanner

SCANNERS = [GitFilesScanner()]
CONFIG = Path("/model/.git/config")  # never opened: the scanner reads the blob, and the path only by name
HOOK = Path("/model/.git/hooks/post-checkout")


def one_input(data: bytes) -> None:
    if not data:
        return
    where = HOOK if data[0] % 2 else CONFIG
    harness.drive(SCANNERS, data[1:], where.name, real_path=where)


if __name__ == "__main__":
    fuzz(one_input)
