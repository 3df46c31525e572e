"""Look up paths that scanned files name, or link to, without reaching the network.

Looking up a path under an automount root (/net/<host>/..., /afs, macOS's /home, the autofs mount points the machine
lists) mounts a share over the network, and a symlink can lead there from any folder: `os.path.realpath`, `stat`
and `exists` all follow it. `resolve` walks a path one component at a time, as the kernel does, and stops before a
component under such a root, unless the scan is already on that share (`home`: the scanned file's folder). Once
`resolve` has returned a path for `p`, looking up `p` itself is safe: it takes the same steps.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

MAC_AUTOMOUNTS = ("/home",) if sys.platform == "darwin" else ()  # macOS mounts /home by autofs out of the box
AUTOMOUNT_ROOTS = ("/net", "/Network", "/misc", "/afs", "/nfs", "/smb", *MAC_AUTOMOUNTS)
MAX_LINKS = 40  # Linux's limit on links followed in one lookup (ELOOP after it)


@cache
def automount_roots() -> tuple[str, ...]:
    """AUTOMOUNT_ROOTS, and the autofs mount points this machine lists (read once; local, never the network)."""
    listed: list[str] = []
    with contextlib.suppress(OSError), open("/proc/mounts", encoding="utf-8", errors="replace") as mounts:
        rows = (line.split() for line in mounts)
        listed = [fields[1] for fields in rows if len(fields) > 2 and fields[2] == "autofs"]
    return (*AUTOMOUNT_ROOTS, *listed)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _share(path: str) -> str | None:
    """The automount share a normalized absolute path lies on (`/net/host`), or None when it lies on none."""
    for root in automount_roots():
        if _under(path, root):
            rest = path[len(root.rstrip("/")) :].lstrip("/")
            return root.rstrip("/") + "/" + rest.split("/", 1)[0] if rest else root
    return None


@lru_cache(maxsize=64)
def _home_share(home: str) -> str | None:
    """The share the scan itself is on: the user chose to read from there, so lookups on it mount nothing new."""
    return _share(os.path.realpath(home))


def remote(path: str, home: str | Path) -> bool:
    """Whether looking up a normalized absolute path may mount a share the scan (`home`) is not already on."""
    share = _share(path)
    if share is None:
        return False
    own = _home_share(os.fspath(home))
    return own is None or not (_under(path, own) or _under(own, path))  # the scan's own share, or a step to it


def resolve(path: str | Path, home: str | Path) -> str | None:
    """`os.path.realpath(path)`, step for step, or None when a step would look up a path on another automount share.

    As with realpath, a missing component is kept as written and a symlink loop leaves the rest unresolved (the
    kernel stops at either). The result is for comparing; look up `path` itself, which takes the steps checked here
    (and, past a missing component or a loop, fails)."""
    if os.name == "nt":  # no automounts; UNC paths are judged by name where they are named
        return os.path.realpath(path)
    text = os.fspath(path)  # not normalized: `link/..` is the link's target's parent, as for the kernel
    try:
        resolved, _ = _Resolver(home).join("/", os.path.join(os.getcwd(), text))
    except _OnShare:
        return None
    resolved = os.path.normpath(resolved)
    return None if remote(resolved, home) else resolved  # a loader that normalizes first (Path.resolve) goes there


class _OnShare(Exception):
    """The next lookup would be on another automount share."""


class _Resolver:
    """posixpath.realpath's walk, with a share check before each lookup and Linux's bound on links followed."""

    def __init__(self, home: str | Path) -> None:
        self.home = home
        self.seen: dict[str, str | None] = {}  # link -> where it leads (None while it is being resolved)
        self.links = 0

    def join(self, path: str, rest: str) -> tuple[str, bool]:
        """`path` joined with `rest` resolved, and whether that went to the end (no loop)."""
        if rest.startswith("/"):
            path, rest = "/", rest[1:]
        while rest:
            name, _, rest = rest.partition("/")
            if not name or name == ".":
                continue
            if name == "..":
                path = os.path.dirname(path)
                continue
            candidate = os.path.join(path, name)
            if remote(candidate, self.home):
                raise _OnShare
            info = _lstat(candidate)
            if info is None or not stat.S_ISLNK(info.st_mode):
                path = candidate  # a missing component too, as realpath keeps it
                continue
            if candidate in self.seen:
                known = self.seen[candidate]
                if known is None:  # a loop
                    return os.path.join(candidate, rest), False
                path = known
                continue
            self.links += 1
            target = _readlink(candidate) if self.links <= MAX_LINKS else None
            if target is None:
                return os.path.join(candidate, rest), False
            self.seen[candidate] = None
            path, finished = self.join(path, target)
            if not finished:
                return os.path.join(path, rest), False
            self.seen[candidate] = path
        return path, True


@dataclass
class Folder:
    """One folder of a walk: its entries in name order, or why it could not be listed. Links are entries, whatever
    they lead to; `folders` (real subfolders, in name order) is what the walk descends into, and may be pruned."""

    path: Path
    entries: list[os.DirEntry[str]] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    error: OSError | None = None


def walk(top: Path) -> Iterator[Folder]:
    """os.walk without following links, even to tell a folder from a file (os.walk's test stats the target: a link
    onto a share would mount it), without recursion, and top-down in name order."""
    stack = [top]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            yield Folder(here, error=exc)
            continue
        folder = Folder(here, entries, [entry.name for entry in entries if _is_folder(entry)])
        yield folder
        stack.extend(here / name for name in reversed(folder.folders))


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def is_file(path: Path) -> bool:
    """`path.is_file()` for a file beside the one scanned, False where the lookup would reach a network share."""
    try:
        return resolve(path, path.parent) is not None and path.is_file()
    except (OSError, ValueError):  # a name too long, a NUL
        return False


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (OSError, ValueError):  # missing, not a folder, a name too long, a NUL
        return None


def _readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:  # gone since the lstat
        return None
