"""7z archives through py7zr: declared sizes are charged to the budget before anything is inflated, and
members land in spools whose memory use is bounded all together."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import py7zr
from py7zr import archiveinfo
from py7zr.io import Py7zIO, WriterFactory
from py7zr.py7zr import FileInfo

from wscan.limits import MIB, Budget, BudgetExceeded, Limits
from wscan.model import Observation
from wscan.scanners.archive import (
    LINK_TARGET_BYTES,
    Emit,
    NameChecks,
    classify_layout,
    member_context,
    path_problem,
    ratio_bomb,
)
from wscan.scanners.base import Artifact, ScanContext, ScanItem
from wscan.scanners.compressed import new_spool, reason, view_opener

SPOOL_MEMORY_BYTES = 64 * MIB  # all in-memory 7z spools together; later members go straight to disk

class _SpoolWriter(Py7zIO):
    """One 7z member in its own spool; bytes past the member limit are dropped."""

    def __init__(self, owner: _Spools) -> None:
        self.owner = owner
        self.spool = new_spool()
        self.written = 0
        self.on_disk = False

    def write(self, s: bytes | bytearray) -> int:
        self.owner.budget.check_time()
        keep = s[: max(0, self.owner.member_limit - self.written)]
        self.spool.write(keep)
        self.written += len(keep)
        if not self.on_disk:
            self.owner.in_memory += len(keep)
            if self.owner.in_memory > SPOOL_MEMORY_BYTES:
                self.spool.rollover()
                self.on_disk = True
        return len(s)

    def read(self, size: int | None = None) -> bytes:
        return self.spool.read(-1 if size is None else size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.spool.seek(offset, whence)

    def flush(self) -> None:
        self.spool.flush()

    def size(self) -> int:
        return self.written

    def close(self) -> None:
        """py7zr calls this when the member is complete; the scanner closes the spool when done."""


class _Spools(WriterFactory):
    """py7zr writer factory: members in spools whose memory use is bounded all together."""

    def __init__(self, member_limit: int, budget: Budget) -> None:
        self.member_limit = member_limit
        self.budget = budget
        self.in_memory = 0
        self.products: dict[str, _SpoolWriter] = {}

    def create(self, filename: str) -> Py7zIO:
        writer = _SpoolWriter(self)
        self.products[filename] = writer
        return writer

    def __enter__(self) -> _Spools:
        return self

    def __exit__(self, *exc: object) -> None:
        for writer in self.products.values():
            writer.spool.close()


def py7zr_key(name: str) -> str:
    """The relative path py7zr writes a member name to (leading '/', '.' and empty parts dropped)."""
    return "/".join(p for p in name.lstrip("/").split("/") if p not in ("", "."))


def py7zr_refuses(name: str) -> bool:
    """Names py7zr will not extract; one of them in `targets` would abort the whole extraction."""
    return path_problem(name) in ("nul", "drive", "parent") or not py7zr_key(name)


@contextmanager
def _header_within(limits: Limits) -> Iterator[None]:
    """py7zr refuses a header listing more than MAX_NUMFILES entries before it builds anything for them (2 KB
    apiece once open; its own cap is 8,388,608), and one that decodes to more than MAX_HEADER_SIZE bytes (names:
    its own cap is 256 MiB). Both are lowered to wscan's limits while it reads one."""
    saved = archiveinfo.MAX_NUMFILES, archiveinfo.MAX_HEADER_SIZE
    archiveinfo.MAX_NUMFILES = min(saved[0], limits.max_members)
    archiveinfo.MAX_HEADER_SIZE = min(saved[1], limits.max_header_bytes)
    try:
        yield
    finally:
        archiveinfo.MAX_NUMFILES, archiveinfo.MAX_HEADER_SIZE = saved


def scan_7z(artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
    """Sizes are checked against the budget before anything is extracted."""
    with ExitStack() as stack:
        fh = stack.enter_context(artifact.opener())
        try:
            with _header_within(ctx.limits):
                archive = stack.enter_context(py7zr.SevenZipFile(fh, mode="r"))
            files = archive.list()
        except py7zr.PasswordRequired:
            yield artifact.observe("archive.encrypted", reason="encrypted header")
            return
        except BudgetExceeded:
            raise
        except py7zr.Bad7zFile as exc:  # nothing of it is listed
            message = str(exc)
            if message.startswith("numfiles value") and f"exceeds limit {ctx.limits.max_members}" in message:
                yield artifact.observe("archive.too_many_members", limit=ctx.limits.max_members)
            elif message.startswith("decoded header size exceeds limit"):
                yield artifact.observe("scan.limit", limit="max-header-bytes", detail=f"7z {message}")
            else:
                yield artifact.observe("archive.corrupt", reason=reason(exc))
            return
        except Exception as exc:
            yield artifact.observe("archive.corrupt", reason=reason(exc))
            return
        if len(files) > ctx.limits.max_members:
            yield artifact.observe("archive.too_many_members", count=len(files), limit=ctx.limits.max_members)
            files = files[: ctx.limits.max_members]
        layout, top = classify_layout(f.filename for f in files if not f.is_directory)
        yield artifact.observe("archive.layout", format="7z", layout=layout)
        if archive.needs_password():
            yield artifact.observe("archive.encrypted", reason="encrypted content")
            return
        wanted, problems = _plan(artifact, ctx, files)
        yield from problems
        spools = stack.enter_context(_Spools(ctx.limits.max_member_bytes, ctx.budget))
        if wanted:
            yield from _extract(artifact, archive, wanted, spools)
        names = NameChecks(artifact)
        copies: dict[str, int] = {}
        for info in files:
            ctx.budget.check_time()
            yield from names.member(info.filename, None)
            if info.is_directory:
                continue
            # py7zr names the second copy of a name "name_0", the third "name_1", ...
            count = copies[info.filename] = copies.get(info.filename, -1) + 1
            outname = info.filename if count == 0 else f"{info.filename}_{count - 1}"
            writer = spools.products.get(py7zr_key(outname))
            if writer is None:
                continue
            if info.is_symlink:
                writer.seek(0)
                target = writer.read(LINK_TARGET_BYTES).decode("utf-8", errors="replace")
                yield from names.link(info.filename, target, None)
            context = member_context(layout, top, info.filename)
            yield artifact.child(info.filename, writer.written, view_opener(writer.spool), context)


def _plan(artifact: Artifact, ctx: ScanContext, files: list[FileInfo]) -> tuple[list[str], list[Observation]]:
    """Pick what to extract; charge declared sizes up front so a bomb never starts inflating.

    Everything is charged, wanted or not: py7zr inflates a solid block from its start.
    """
    limits = ctx.limits
    wanted: list[str] = []
    found: list[Observation] = []
    for info in files:
        name, size = info.filename, info.uncompressed
        if info.is_directory:
            continue
        if py7zr_refuses(name):
            found.append(
                artifact.observe("archive.member_unreadable", member=name, reason="py7zr refuses the name")
            )
        elif size > limits.max_member_bytes:
            limit = limits.max_member_bytes
            found.append(artifact.observe("archive.member_limit", member=name, size=size, limit=limit))
        else:
            wanted.append(name)
    total = sum(info.uncompressed for info in files)
    found.extend(ratio_bomb(artifact, ctx, "", total, artifact.size))
    ctx.budget.charge_decompressed(total)
    return wanted, found

def _extract(artifact: Artifact, archive: py7zr.SevenZipFile, wanted: list[str], spools: _Spools) -> Emit:
    """Extract the wanted members into spools; a failure keeps what was extracted before it."""
    with tempfile.TemporaryDirectory(prefix="wscan-7z-") as folder:
        try:
            # `path` only anchors py7zr's name checks in an empty folder; nothing is written there.
            archive.extract(path=folder, targets=wanted, factory=spools)
        except BudgetExceeded:
            raise
        except py7zr.exceptions.CrcError as exc:
            yield artifact.observe("archive.bad_crc", reason=reason(exc))
        except Exception as exc:
            yield artifact.observe("archive.member_unreadable", reason=reason(exc))
        prefix = Path(folder).as_posix().rstrip("/") + "/"
    spools.products = {name.removeprefix(prefix): writer for name, writer in spools.products.items()}
