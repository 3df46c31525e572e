"""Zip, tar and 7z containers: structural tricks as observations, every readable member as a child.

Loaders disagree about malformed archives (Python's zipfile checks the local header name, PyTorch's
reader does not; one extractor follows a symlink, another refuses), so the scanner reports each
disagreement point itself and reads members the most permissive way, so nothing a loader would load
goes unscanned. Tensor members are only opened lazily by the child opener, never read here in full.
"""

from __future__ import annotations

import bisect
import bz2
import io
import lzma
import posixpath
import re
import stat
import struct
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from wscan.limits import MIB, Budget, BudgetExceeded
from wscan.model import AttrValue, Observation
from wscan.scanners.base import CHUNK, NOT_MINE_KIND, TAIL_BYTES, Artifact, Head, ScanContext, ScanItem
from wscan.scanners.compressed import guarded, reason
from wscan.scanners.pt2 import LAYOUT as PT2_LAYOUT
from wscan.scanners.pt2 import MAX_CONFIG_BYTES as PT2_CONFIG_BYTES
from wscan.scanners.pt2 import RECORDS as PT2_RECORDS
from wscan.scanners.pt2 import native_members, native_observation, pt2_top, raw_tensor_members
from wscan.scanners.skops import SCHEMA as SKOPS_SCHEMA
from wscan.scanners.skops import scan_skops

ZIP_LOCAL = b"PK\x03\x04"
ZIP_END = b"PK\x05\x06"
ZIP_CENTRAL = b"PK\x01\x02"
SEVENZIP_MAGIC = b"7z\xbc\xaf\x27\x1c"
FULL_READ_BYTES = 64 * MIB  # members below this are read once in full to check CRC and decompression
LINK_TARGET_BYTES = 4096

# Zip flag bits every writer sets: 1-2 (deflate level), 3 (data descriptor), 11 (UTF-8 names).
# Bit 0 (encryption) is reported as archive.encrypted instead; anything else is odd.
ZIP_NORMAL_FLAGS = 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0800
ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_DRIVE = re.compile(r"^[A-Za-z]:")

Emit = Iterator[Observation]


# --- layout ------------------------------------------------------------------------------------------


def classify_layout(names: Iterable[str]) -> tuple[str, str]:
    """What produced this archive (pytorch, torchscript, npz, keras, torch-tar, generic), and its top folder."""
    names = [n for n in names if not n.endswith("/")]
    found = set(names)
    # torch finds members whatever their case (a review named one DATA.PKL): TorchScript is told apart so
    folded = {n.lower() for n in names}
    candidates = [n[: -len("/data.pkl")] for n in names if n.lower().endswith("/data.pkl") and n.count("/") == 1]
    for top in candidates:
        prefix = top.lower()
        if f"{prefix}/constants.pkl" in folded and any(n.startswith(f"{prefix}/code/") for n in folded):
            return "torchscript", top
    tops = [top for top in candidates if f"{top}/data.pkl" in found]
    if tops:
        return "pytorch", tops[0]
    packages = [n[: -len("/.data/version")] for n in names if n.endswith("/.data/version") and n.count("/") == 2]
    if packages and f"{packages[0]}/.data/extern_modules" in found:  # torch.package's PackageExporter
        return "torch-package", packages[0]
    pt2 = pt2_top(names)  # torch.export.save, AOTInductor packages
    if pt2 is not None:
        return PT2_LAYOUT, pt2
    if names and all(n.endswith(".npy") for n in names):
        return "npz", ""
    if "config.json" in found and ({"model.weights.h5", "metadata.json"} & found):
        return "keras", ""
    if SKOPS_SCHEMA in found:  # skops.io.load reads this member by name
        return "skops", ""
    if {"pickle", "storages", "tensors"} <= found:  # torch.save's oldest format, which torch.load still reads
        return "torch-tar", ""
    return "generic", ""


def member_context(layout: str, top: str, name: str) -> dict[str, AttrValue]:
    """Context for a child: the container layout, and raw_data for tensor storages."""
    context: dict[str, AttrValue] = {"container": layout}
    folders = {"pytorch": ("data",), "torchscript": ("data", "constants")}.get(layout, ())
    head, _, leaf = name.rpartition("/")
    if leaf.isdigit() and head in {f"{top}/{folder}" for folder in folders}:
        context["raw_data"] = True
    # torch.package keeps tensor bytes (<n>.storage) and its own records (extern module names, versions) in
    # .data/, and the byte order beside it: read as text or raw bytes by PackageImporter, never unpickled.
    if layout == "torch-package" and (head == f"{top}/.data" or name == f"{top}/byteorder"):
        context["raw_data"] = True
    # A PT2 archive's own records, read as text: its format, version, byte order and serialization id.
    if layout == PT2_LAYOUT and (head == f"{top}/.data" or name in {f"{top}/{leaf}" for leaf in PT2_RECORDS}):
        context["raw_data"] = True
    return context


def storage_records(top: str, infos: Iterable[zipfile.ZipInfo]) -> dict[str, int]:
    """The size of each `<top>/data/<key>` record of a PyTorch zip, by key, as torch.load finds them (member
    names whatever their case)."""
    prefix = f"{top}/data/".lower()
    return {i.filename[len(prefix):]: i.file_size for i in infos if i.filename.lower().startswith(prefix)}


# --- names and links ----------------------------------------------------------------------------------


def path_problem(name: str) -> str | None:
    """Why extracting `name` could land outside the target folder, if it could."""
    if "\x00" in name:
        return "nul"
    if name.startswith(("/", "\\")):
        return "absolute"
    if _DRIVE.match(name):
        return "drive"
    if ".." in re.split(r"[/\\]", name):
        return "parent"
    if "\\" in name:
        return "backslash"
    return None


def normalize(name: str) -> str:
    """The path an extractor would write, for comparing names (duplicates, links)."""
    return posixpath.normpath(name.replace("\\", "/")).lstrip("/")


def link_escapes(name: str, target: str, hard: bool = False) -> bool:
    """Does a link resolve outside? Symlinks are relative to their folder, hardlinks to the archive root."""
    target = target.replace("\\", "/")
    if target.startswith("/") or _DRIVE.match(target):
        return True
    base = "" if hard else posixpath.dirname(normalize(name))
    resolved = posixpath.normpath(posixpath.join(base, target))
    return resolved == ".." or resolved.startswith("../")


@dataclass
class NameChecks:
    """Per-archive bookkeeping of names: traversal, duplicates, links, writes through links."""

    artifact: Artifact
    seen: set[str] = field(default_factory=set)
    links: set[str] = field(default_factory=set)

    def member(self, name: str, offset: int | None) -> Emit:
        problem = path_problem(name)
        if problem:
            yield self.artifact.observe("archive.path_traversal", offset, member=name, reason=problem)
        norm = normalize(name.rstrip("/"))
        if norm in self.seen:
            yield self.artifact.observe("archive.duplicate_name", offset, member=name)
        parts = norm.split("/")
        for depth in range(1, len(parts) + 1):
            link = "/".join(parts[:depth])
            if link in self.links:
                yield self.artifact.observe("archive.write_through_link", offset, member=name, link=link)
                break
        self.seen.add(norm)

    def link(self, name: str, target: str, offset: int | None, hard: bool = False) -> Emit:
        if link_escapes(name, target, hard):
            yield self.artifact.observe("archive.link_escape", offset, member=name, target=target[:256], hard=hard)
        self.links.add(normalize(name))


def ratio_bomb(artifact: Artifact, ctx: ScanContext, name: str, size: int, packed: int) -> Emit:
    limits = ctx.limits
    ratio = size // max(packed, 1)
    if size > limits.ratio_floor_bytes and ratio > limits.max_compression_ratio:
        yield artifact.observe("archive.bomb", member=name, ratio=ratio, size=size)


# --- zip ---------------------------------------------------------------------------------------------


def plausible_end(tail: bytes, size: int) -> bool:
    """Whether `tail` (the last bytes of a file of `size` bytes) holds a plausible end-of-central-directory
    record: single-disk, its comment fits, and its central directory fits before it, so stray `PK\x05\x06`
    bytes in tensor data are not taken for a zip."""
    pos = tail.rfind(ZIP_END)
    while pos >= 0 and pos + 22 <= len(tail):
        disks, _, _, cd_size, cd_offset, comment_len = struct.unpack_from("<IHHIIH", tail, pos + 4)
        at = size - len(tail) + pos
        if disks == 0 and pos + 22 + comment_len <= len(tail) and cd_offset + cd_size <= at:
            return True
        pos = tail.rfind(ZIP_END, 0, pos)
    return False


ZIP64_END = b"PK\x06\x06"
ZIP64_LOCATOR = b"PK\x06\x07"


def miniz_directory(fh: IO[bytes], size: int) -> tuple[int, int, int] | None:
    """Entries, size and offset of the central directory as miniz (PyTorch's reader) finds it, or None where it
    finds none: the last end record; then, if a zip64 locator sits right before it and names a zip64 end record,
    that record's values, whatever the classic record says. Offsets are taken as recorded, never shifted."""
    start = max(0, size - TAIL_BYTES)
    fh.seek(start)
    tail = fh.read(TAIL_BYTES)
    pos = tail.rfind(ZIP_END)
    if pos < 0 or pos + 22 > len(tail):
        return None
    _, _, count, cd_size, cd_offset, _ = struct.unpack_from("<IHHIIH", tail, pos + 4)
    record: tuple[int, int, int] = (count, cd_size, cd_offset)
    at = start + pos - 20
    if at >= 56:
        fh.seek(at)
        locator = fh.read(20)
        if locator[:4] == ZIP64_LOCATOR:
            (where,) = struct.unpack_from("<Q", locator, 8)
            if where <= size - 56:
                fh.seek(where)
                end64 = fh.read(56)
                if end64[:4] == ZIP64_END:
                    record = struct.unpack_from("<3Q", end64, 32)
    count, cd_size, cd_offset = record
    if cd_offset + cd_size > size:
        return None
    return int(count), int(cd_size), int(cd_offset)


def end_records(count: int, size: int, offset: int, at: int) -> bytes:
    """Zip64 and classic end records, the zip64 one written at `at`, for a central directory of `count` entries
    and `size` bytes that they say starts at `offset`. The locator says where a writer would have put the zip64
    record, right after the directory as offsets count (newer zipfiles check it), and never past where it is."""
    end64 = struct.pack("<4sQ2H2I4Q", ZIP64_END, 44, 45, 45, 0, 0, count, count, size, offset)
    locator = struct.pack("<4sIQI", ZIP64_LOCATOR, 0, min(at, offset + size), 1)
    end = struct.pack("<4s4H2IH", ZIP_END, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return end64 + locator + end


class _Patched(io.RawIOBase):
    """A file with `patch` laid over its bytes at `at` (at its end or past it, to add bytes), which seems to end
    where the patch ends: seeking to its end or reading to its end stops there, so zipfile finds its end records
    there. A read of a given size elsewhere gets the file's own bytes, wherever they lie (members' data)."""

    def __init__(self, fh: IO[bytes], size: int, at: int, patch: bytes) -> None:
        super().__init__()
        self._fh, self._size, self._at, self._patch, self._pos = fh, size, at, patch, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._at + len(self._patch)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        """`size` bytes, or to the end; a single piece (the usual read) is not copied again."""
        if size is None or size < 0:
            size = max(0, self._at + len(self._patch) - self._pos)
        pieces = []
        while size > 0 and (piece := self._piece(size)):
            pieces.append(piece)
            size -= len(piece)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def _piece(self, size: int) -> bytes:
        """Up to `size` bytes from the patch or from the file, whichever is at the position."""
        pos, at = self._pos, self._at
        if at <= pos < at + len(self._patch):
            data = self._patch[pos - at : pos - at + size]
        elif pos < self._size:
            self._fh.seek(pos)
            data = self._fh.read(min(size, self._size - pos, at - pos if pos < at else size))
        else:
            data = b""
        self._pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


CENTRAL_HEADER = 46  # bytes of a central directory entry before its name, extra field and comment
ZIPFILE_SEARCH = (1 << 16) + 22  # how far back from the end zipfile looks for the end record


class _DirectoryAt(Exception):
    """Raised out of zipfile's constructor as it reads a large central directory: where it starts, how long."""

    def __init__(self, start: int, size: int) -> None:
        super().__init__(start, size)
        self.start, self.size = start, size


class _Through(io.RawIOBase):
    """A file read through a wrapper that watches what its reader reads: everything but `read` goes to the file."""

    def __init__(self, fh: IO[bytes]) -> None:
        super().__init__()
        self._fh = fh

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._fh.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._fh.seek(offset, whence)


class _StopAtDirectory(_Through):
    """The file as zipfile opens it, up to its read of a central directory larger than `floor` bytes; once open,
    the file as it is."""

    def __init__(self, fh: IO[bytes], floor: int) -> None:
        super().__init__(fh)
        self.floor = floor

    def read(self, size: int | None = -1) -> bytes:
        if size is not None and size > self.floor:
            raise _DirectoryAt(self._fh.tell(), size)
        return self._fh.read(-1 if size is None else size)


@dataclass(frozen=True)
class PythonZip:
    """A zip as Python's zipfile reads it."""

    archive: zipfile.ZipFile
    start_dir: int  # where zipfile found the central directory
    shift: int | None  # what it adds to every recorded offset (None: unknown, this zipfile does not say)
    cut: str = ""  # the limit its directory was cut at ("max-members", "max-header-bytes"), or ""
    lowest_cut: int | None = None  # the lowest local header offset among the entries the cut left out

    def first_member(self) -> int:
        """Where the zip's first member lies, by the directory: what comes before is another file's."""
        offsets = [info.header_offset for info in self.archive.infolist()]
        if self.lowest_cut is not None:
            offsets.append(self.lowest_cut)
        return min(offsets, default=0)


def open_zip(fh: IO[bytes], size: int, ctx: ScanContext) -> PythonZip:
    """Python's zipfile over the file, its central directory cut to the limits when it is past them.

    zipfile builds an object (half a kilobyte) for every entry its central directory lists, and a zip64 can
    list millions. So zipfile is stopped as it reads a directory large enough to list more than max-members, and
    the directory is walked; past max-members entries or max-header-bytes, zipfile is handed the same file with
    end records right after the entries before that point (laid over the rest), stating the same offset as the
    record it took. So it finds the directory where it did and shifts offsets as it did, by its own reckoning."""
    end_record = getattr(zipfile, "_EndRecData", None)  # private, in every zipfile since Python 2
    limits = ctx.limits  # zipfile's other reads while opening a file are at most ZIPFILE_SEARCH bytes
    floor = max(ZIPFILE_SEARCH, min((limits.max_members + 1) * CENTRAL_HEADER, limits.max_header_bytes))
    watched = _StopAtDirectory(fh, floor)
    try:
        archive = zipfile.ZipFile(watched)
    except _DirectoryAt as found:
        cut = directory_walk(fh, found.start, found.size, ctx)
        if cut is None:  # within both limits: zipfile reads it all
            watched.floor = sys.maxsize
            archive = zipfile.ZipFile(watched)
        else:
            if end_record is None:
                raise BudgetExceeded(cut[2], "past this limit, and this Python's zipfile cannot be given the "
                                     "central directory's first entries alone") from None
            length, count, limit = cut
            recorded = int(end_record(fh)[6])  # the directory's offset, as the end record zipfile took states it
            at = found.start + length
            view = _Patched(fh, size, at, _cut_end(fh, count, length, recorded, at))
            lowest = lowest_offset_past(fh, found.start, length, found.size, ctx.budget)
            cut_off = None if lowest is None else lowest + found.start - recorded
            return PythonZip(zipfile.ZipFile(view), found.start, found.start - recorded, limit, cut_off)
    watched.floor = sys.maxsize  # members are read through it
    shift = None if end_record is None else archive.start_dir - int(end_record(fh)[6])
    return PythonZip(archive, archive.start_dir, shift)


def _cut_end(fh: IO[bytes], count: int, size: int, offset: int, at: int) -> bytes:
    """End records for a cut directory. Zip64 ones, unless the shift is negative (offsets recorded past where
    they are): newer zipfiles then refuse a zip64 locator, so a classic record says it. Older ones would take a
    locator in the 20 bytes before it, the end of the last entry kept, so one there is refused."""
    if at - size >= offset or offset + size >= 0xFFFFFFFF:  # the shift, at - size - offset, is not negative
        return end_records(count, size, offset, at)
    fh.seek(at - 20)
    if fh.read(4) == ZIP64_LOCATOR:
        raise zipfile.BadZipFile("a zip64 locator ends the last central directory entry kept")
    return struct.pack("<4s4H2IH", ZIP_END, 0, 0, min(count, 0xFFFE), min(count, 0xFFFE), size, offset, 0)


def directory_walk(fh: IO[bytes], start: int, size: int, ctx: ScanContext) -> tuple[int, int, str] | None:
    """Where to cut the central directory at `start` (`size` bytes): (bytes, entries, limit) before the entry
    past max-members, or before the first entry that ends past max-header-bytes; None within both. An entry
    that is not one raises what zipfile raises there (it would fail the same way)."""
    limit, cap = ctx.limits.max_members, ctx.limits.max_header_bytes
    window, window_at = b"", 0  # directory bytes from window_at on
    pos = count = 0
    while pos < size:
        if count == limit:
            return pos, count, "max-members"
        if pos + CENTRAL_HEADER > window_at + len(window):
            ctx.budget.check_time()
            fh.seek(start + pos)
            window, window_at = fh.read(min(CHUNK, size - pos)), pos
            if len(window) < CENTRAL_HEADER:
                raise zipfile.BadZipFile("Truncated central directory")
        at = pos - window_at
        if window[at : at + 4] != ZIP_CENTRAL:
            raise zipfile.BadZipFile("Bad magic number for central directory")
        end = pos + _entry_length(window, at)
        if end > cap:
            return pos, count, "max-header-bytes"
        pos, count = end, count + 1
    return None


def lowest_offset_past(fh: IO[bytes], start: int, pos: int, size: int, budget: Budget) -> int | None:
    """The lowest local header offset, as recorded, of the central directory entries from `pos` to `size` (the
    ones a cut leaves out), read as zipfile reads them (a zip64 extra field's values in turn); None if none."""
    lowest: int | None = None
    window, window_at = b"", pos
    while pos < size:
        at = pos - window_at
        if at + CENTRAL_HEADER > len(window) or at + _entry_length(window, at) > len(window):
            budget.check_time()
            fh.seek(start + pos)
            window, window_at, at = fh.read(min(CHUNK, size - pos)), pos, 0
            if len(window) < CENTRAL_HEADER or at + _entry_length(window, at) > len(window):
                break
        if window[at : at + 4] != ZIP_CENTRAL:
            break
        packed, size_, name, extra = struct.unpack_from("<2I2H", window, at + 20)
        offset = int.from_bytes(window[at + 42 : at + 46], "little")
        fields = window[at + 46 + name : at + 46 + name + extra]
        while len(fields) >= 4:
            kind, length = struct.unpack_from("<2H", fields)
            data = fields[4 : 4 + length]
            if kind == 1:
                if size_ == 0xFFFFFFFF and len(data) >= 8:
                    size_, data = int.from_bytes(data[:8], "little"), data[8:]
                if packed == 0xFFFFFFFF and len(data) >= 8:
                    packed, data = int.from_bytes(data[:8], "little"), data[8:]
                if offset == 0xFFFFFFFF and len(data) >= 8:
                    offset = int.from_bytes(data[:8], "little")
            fields = fields[4 + length :]
        lowest = offset if lowest is None else min(lowest, offset)
        pos += _entry_length(window, at)
    return lowest


def _entry_length(window: bytes, at: int) -> int:
    name, extra, comment = struct.unpack_from("<3H", window, at + 28)
    return CENTRAL_HEADER + int(name) + int(extra) + int(comment)


@dataclass(frozen=True)
class LocalHeader:
    """The fields of a zip local header that loaders use instead of the central directory's."""

    data_start: int
    name: str
    flags: int


def read_local_header(fh: IO[bytes], info: zipfile.ZipInfo) -> LocalHeader | str:
    """Parse the 30-byte local header at header_offset; a string says why it is unusable."""
    if info.header_offset < 0:
        return "local header offset before the start of the file"
    fh.seek(info.header_offset)
    fixed = fh.read(30)
    if len(fixed) < 30 or not fixed.startswith(ZIP_LOCAL):
        return "bad local header"
    _, _, flags, _, _, _, _, _, _, name_len, extra_len = struct.unpack("<4s5H3I2H", fixed)
    raw_name = fh.read(name_len)
    name = raw_name.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
    return LocalHeader(info.header_offset + 30 + name_len + extra_len, name, flags)


class _CappedZipExtFile(zipfile.ZipExtFile):
    """A member stream whose bzip2 and LZMA output comes a bounded piece at a time. zipfile hands those two
    decompressors no max_length, so one read of a 3 KB bzip2 member returned a single 4 GiB buffer; deflate
    already gets one. Only the decompression step differs from zipfile's own `_read1`."""

    _capped: Any = None  # bz2.BZ2Decompressor or lzma.LZMADecompressor, created on the first read
    _header = b""  # an LZMA member's 4-byte version/size header and its filter properties, until complete
    if TYPE_CHECKING:  # zipfile's private state, which typeshed does not declare

        _compress_type: int
        _compress_left: int
        _left: int
        _eof: bool

        def _read2(self, n: int) -> bytes: ...
        def _update_crc(self, newdata: bytes) -> None: ...

    def _read1(self, n: int) -> bytes:
        if self._compress_type not in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
            return super()._read1(n)  # type: ignore[misc, no-any-return]
        if self._eof or n <= 0:
            return b""
        limit = max(n, self.MIN_READ_SIZE)
        if self._capped is None or self._capped.needs_input:
            data = self._read2(n)
            if self._capped is None:
                data = self._start(data)
        else:
            data = b""
        if self._capped is None:  # an LZMA header not complete yet, or never: the member ended inside it
            self._eof = self._compress_left <= 0
            return b""
        out = self._capped.decompress(data, limit)
        self._eof = self._capped.eof or (self._compress_left <= 0 and self._capped.needs_input)
        out = out[: self._left]
        self._left -= len(out)
        if self._left <= 0:
            self._eof = True
        self._update_crc(out)
        return bytes(out)

    def _start(self, data: bytes) -> bytes:
        """Create the decompressor once its header is in; return the compressed bytes that follow it."""
        if self._compress_type == zipfile.ZIP_BZIP2:
            self._capped = bz2.BZ2Decompressor()
            return data
        self._header += data
        if len(self._header) <= 4:
            return b""
        (size,) = struct.unpack("<H", self._header[2:4])
        if len(self._header) <= 4 + size:
            return b""
        properties = lzma._decode_filter_properties(lzma.FILTER_LZMA1, self._header[4 : 4 + size])  # type: ignore[attr-defined]
        self._capped = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[properties])
        rest, self._header = self._header[4 + size :], b""
        return rest


class _NoCrcZipExtFile(_CappedZipExtFile):
    """A member stream that reads past a bad CRC: the scanner reports it once, children still see the bytes."""

    def _update_crc(self, newdata: bytes) -> None:
        return None  # the CRC is checked once, by the scanner's own full read


def zip_member_opener(
    artifact: Artifact, info: zipfile.ZipInfo, start: int, ctx: ScanContext, errors: list[str]
) -> Callable[[], BinaryIO]:
    """Open a member from its local data the way permissive loaders do: no name check, no CRC check."""
    budget = None if info.compress_type == zipfile.ZIP_STORED else ctx.budget

    def open_member() -> BinaryIO:
        fh = artifact.opener()
        try:
            fh.seek(start)
            member = _NoCrcZipExtFile(fh, "r", info, None, True)
        except BaseException:
            fh.close()
            raise
        return guarded(member, budget, errors)

    return open_member


def check_zip_member(artifact: Artifact, ctx: ScanContext, info: zipfile.ZipInfo, start: int) -> Emit:
    """Read a small member once in full, with its CRC, as a strict loader would."""
    fh = artifact.opener()
    try:
        fh.seek(start)
        with _CappedZipExtFile(fh, "r", info, None, True) as member:
            while chunk := member.read(CHUNK):
                if info.compress_type != zipfile.ZIP_STORED:
                    ctx.budget.charge_decompressed(len(chunk))
    except BudgetExceeded:
        raise
    except zipfile.BadZipFile as exc:
        kind = "archive.bad_crc" if "CRC" in str(exc) else "archive.member_unreadable"
        yield artifact.observe(kind, info.header_offset, member=info.orig_filename, reason=reason(exc))
    except Exception as exc:
        yield artifact.observe(
            "archive.member_unreadable", info.header_offset, member=info.orig_filename, reason=reason(exc)
        )
    finally:
        fh.close()


def zip_structure(artifact: Artifact, infos: list[zipfile.ZipInfo], locals_: list[Any], start_dir: int) -> Emit:
    """Overlapping entries: how quine bombs are built."""
    spans = sorted(
        (i.header_offset, local.data_start + i.compress_size, i.orig_filename)
        for i, local in zip(infos, locals_, strict=True)
        if isinstance(local, LocalHeader)
    )
    end, owner = -1, ""
    for begin, stop, name in spans:
        if begin < end:
            yield artifact.observe("archive.overlap", begin, member=name, other=owner)
        elif stop > start_dir:
            yield artifact.observe("archive.overlap", begin, member=name, other="<central directory>")
        if stop > end:
            end, owner = stop, name


def zips_before(fh: IO[bytes], end: int, limit: int, budget: Budget) -> list[tuple[int, int]]:
    """(start, end) of the zips written one right after another before `end`, the last first.

    torch.distributed.checkpoint writes each item of a `.distcp` file with torch.save, one after another, and its
    loader reads each from the offset its metadata records (non-tensor items with weights_only=False). Python's
    zipfile and miniz see only the last. Each earlier zip ends where the next begins: its end record is the last
    thing before that start, and its offsets count from its own first byte."""
    found: list[tuple[int, int]] = []
    while end > 0 and len(found) < limit:
        budget.check_time()
        start = _zip_ending_at(fh, end)
        if start is None:
            break
        found.append((start, end))
        end = start
    return found


def _zip_ending_at(fh: IO[bytes], end: int) -> int | None:
    """The first byte of a self-contained zip whose end record (with its comment) ends right at `end`: its
    central directory sits right before the end record (or before the zip64 record and locator), and a local
    header or another end record at the start it implies."""
    window = min(end, 22 + 0xFFFF)
    fh.seek(end - window)
    tail = fh.read(window)
    pos = tail.rfind(ZIP_END)
    while pos >= 0:
        if pos + 22 <= len(tail):
            disks, _, count, cd_size, cd_offset, comment_len = struct.unpack_from("<IHHIIH", tail, pos + 4)
            at = end - window + pos
            if disks == 0 and pos + 22 + comment_len == len(tail):
                # A zip64 end record and its locator before the end record take over, as zipfile reads them
                # (torch.save always writes them); the record sits right before its locator.
                fh.seek(max(0, at - 20 - 56))
                record = fh.read(56 + 4) if at >= 20 + 56 else b""
                if record[:4] == ZIP64_END and record[56:] == ZIP64_LOCATOR:
                    at -= 20 + 56
                    count, cd_size, cd_offset = struct.unpack_from("<3Q", record, 32)
                elif count == 0xFFFF or 0xFFFFFFFF in (cd_size, cd_offset):
                    return None
                start = at - cd_size - cd_offset
                if start >= 0:
                    fh.seek(start)
                    if fh.read(4) == (ZIP_LOCAL if count else ZIP_END):
                        fh.seek(at - cd_size)
                        if not count or fh.read(4) == ZIP_CENTRAL:
                            return int(start)
        pos = tail.rfind(ZIP_END, 0, pos)
    return None


def _holds_local_header(fh: IO[bytes], length: int, budget: Budget) -> bool:
    """Whether the first `length` bytes hold a zip local header signature (read in pieces, time-checked)."""
    fh.seek(0)
    carry = b""
    done = 0
    while done < length:
        budget.check_time()
        piece = fh.read(min(CHUNK, length - done))
        if not piece:
            break
        if ZIP_LOCAL in carry + piece:
            return True
        carry = piece[-3:]
        done += len(piece)
    return False


def _last_tar_member(artifact: Artifact, start: int) -> bool:
    """Whether the zip at `start` is the last member of a tar (a `.nemo` ends with its weights, a torch zip):
    the file opens with a tar header, a tar header sits just before the zip, and after that member's data
    come only the tar's zero blocks. The bytes before the zip are then the tar, which is scanned as such, and
    the zip is scanned both ways; they are not a polyglot's hidden head."""
    if start < 512 or start % 512:
        return False
    with artifact.opener() as fh:
        if not tar_checksum_ok(fh.read(512)):
            return False
        length = _tar_member_size(fh, start - 512)
        if length is None:
            return False
        rest = artifact.size - start - length
        if rest < 0 or rest > TAIL_BYTES:
            return False
        fh.seek(start + length)
        return not any(fh.read(rest))


_PAX_SIZE = re.compile(rb"(?:^|\n)\d+ size=(\d+)\n")
PAX_LOOKBACK_BLOCKS = 64  # a pax record set longer than 32 KiB before a weights member is no writer's


def _tar_member_size(fh: IO[bytes], header_at: int) -> int | None:
    """The data size of the tar member whose header block is at `header_at`, or None if it is no header.

    A member of 8 GiB or more (a large `.nemo`'s weights) does not fit the octal field: GNU tar writes it in
    base-256 there, and the pax format (Python's tarfile, GNU tar --format=pax)
    writes 0 there and a `size=` record in an extended header just before."""
    fh.seek(header_at)
    header = fh.read(512)
    if not tar_checksum_ok(header):
        return None
    size = _tar_number(header[124:136])
    if size is None:
        return None
    for blocks in range(1, PAX_LOOKBACK_BLOCKS + 1):
        at = header_at - 512 * (blocks + 1)
        if at < 0:
            break
        fh.seek(at)
        extended = fh.read(512)
        if extended[156:157] != tarfile.XHDTYPE or not tar_checksum_ok(extended):
            continue
        length = _tar_number(extended[124:136])
        if length is None or -(-length // 512) != blocks:
            continue
        fh.seek(at + 512)
        match = _PAX_SIZE.search(fh.read(length))
        return int(match.group(1)) if match else size
    return size


def _tar_number(field: bytes) -> int | None:
    """A numeric tar header field: octal digits, or GNU base-256 (first byte 0x80) for what does not fit."""
    if field[:1] == b"\x80":
        return int.from_bytes(field[1:], "big")
    try:
        return int(field.replace(b"\x00", b" ").strip() or b"0", 8)
    except ValueError:
        return None


def _cut_at(artifact: Artifact, ctx: ScanContext, limit: str, where: int) -> Emit:
    """What a central directory cut at `limit` reports: entries past it are not scanned."""
    if limit == "max-members":
        yield artifact.observe("archive.too_many_members", where, limit=ctx.limits.max_members)
    elif limit:
        cap = ctx.limits.max_header_bytes
        detail = f"the zip's central directory at {where} is larger than {cap} bytes; later entries were not read"
        yield artifact.observe("scan.limit", where, limit=limit, detail=detail)


class ZipScanner:
    """Zip archives, including PyTorch, TorchScript, npz and Keras files and zips behind other bytes."""

    name = "zip"

    def accepts(self, head: Head) -> bool:
        return head.head.startswith((ZIP_LOCAL, ZIP_END)) or plausible_end(head.tail, head.size)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as fh:
            try:
                python = open_zip(fh, artifact.size, ctx)
            except BudgetExceeded:
                raise
            except Exception as exc:
                yield artifact.observe("archive.corrupt", reason=reason(exc))
                # Python's zipfile gave up; miniz may not (it trusts a zip64 locator zipfile ignores).
                yield from self._absolute_reading(artifact, ctx, fh, None)
                return
            with python.archive:
                yield from _cut_at(artifact, ctx, python.cut, python.start_dir)
                yield from self._members(artifact, ctx, fh, python.archive, python.start_dir)
                yield from self._absolute_reading(artifact, ctx, fh, python)
                yield from self._before(artifact, ctx, fh, python.first_member())

    def _before(self, artifact: Artifact, ctx: ScanContext, fh: IO[bytes], first: int) -> Iterator[ScanItem]:
        """What precedes the zip: zips written before it one after another (a `.distcp`), each scanned as a blob
        of its own; then any other leading bytes, a polyglot's other head, reported (the engine has read the
        file's start with every scanner). Zip entry headers among those bytes are entries no directory lists,
        which a reader given an offset opens."""
        if first <= 0 or _last_tar_member(artifact, first):
            return
        earlier = zips_before(fh, first, ctx.limits.max_members, ctx.budget)
        for start, end in reversed(earlier):
            ctx.budget.check_time()
            ctx.budget.charge_read(0)  # nothing more is opened once the file's read budget is spent
            yield artifact.hidden(start, end - start)
        rest = earlier[-1][0] if earlier else first
        if rest <= 0:
            return
        if len(earlier) == ctx.limits.max_members:
            yield artifact.observe("archive.too_many_members", count=len(earlier), limit=ctx.limits.max_members)
        from wscan.scanners.tflite import looks_like_tflite  # tflite reads tf_graph, which imports this module

        fh.seek(0)
        # TensorFlow Lite's metadata writer appends the model's associated files (labels, vocabularies) as a zip.
        leading: dict[str, AttrValue] = {"leading": "tflite"} if looks_like_tflite(fh.read(8)) else {}
        yield artifact.observe("archive.prepended_bytes", 0, length=rest, **leading)
        if _holds_local_header(fh, rest, ctx.budget):
            yield artifact.observe("archive.unlisted_entries", 0, length=rest)

    def _absolute_reading(
        self, artifact: Artifact, ctx: ScanContext, fh: IO[bytes], python: PythonZip | None
    ) -> Iterator[ScanItem]:
        """Read the directory miniz (PyTorch's reader) reads, when Python's zipfile read another one, none, or the
        same one with its offsets shifted.

        Python's zipfile finds the central directory just before the end record (or the zip64 record right
        before its locator) and shifts every offset by the difference; miniz follows the zip64 locator wherever
        it points and takes the recorded offsets as they are. A file with a directory at each place shows Python
        one set of members and torch.load another, so both are scanned.
        """
        record = miniz_entries(fh, artifact.size)
        if record is None or (python is not None and record[2] == python.start_dir and python.shift == 0):
            return  # no directory there (miniz refuses the file too), or the one zipfile read, as zipfile read it
        count, cd_size, cd_offset = record
        python_view = "none" if python is None else f"one at {python.start_dir}"
        reason = f"the end record names a central directory at {cd_offset}, Python's zipfile reads {python_view}"
        try:
            cut = directory_walk(fh, cd_offset, cd_size, ctx)
            if cut is not None:
                cd_size, count, limit = cut
                yield from _cut_at(artifact, ctx, limit, cd_offset)
            fh.seek(cd_offset)
            directory = fh.read(cd_size)  # at most max-header-bytes
            at = artifact.size + len(directory)
            tail = directory + end_records(count, len(directory), artifact.size, at)
            second = zipfile.ZipFile(_Patched(fh, artifact.size, artifact.size, tail))
        except BudgetExceeded:
            raise
        except Exception as exc:  # what miniz would read there cannot be checked: fail closed
            yield artifact.observe("archive.corrupt", cd_offset, reason=f"{reason}; it is unreadable: {exc}"[:300])
            return
        yield artifact.observe("archive.corrupt", cd_offset, reason=f"{reason}; both were scanned")
        with second:
            yield from self._members(artifact, ctx, fh, second, second.start_dir)

    def _members(
        self, artifact: Artifact, ctx: ScanContext, fh: IO[bytes], archive: zipfile.ZipFile, start_dir: int
    ) -> Iterator[ScanItem]:
        infos = archive.infolist()
        if len(infos) > ctx.limits.max_members:
            yield artifact.observe("archive.too_many_members", count=len(infos), limit=ctx.limits.max_members)
            infos = infos[: ctx.limits.max_members]
        # Layout and member names as Python's zipfile (Keras, NumPy) sees them: cut at the first NUL.
        layout, top = classify_layout(i.filename for i in infos)
        yield artifact.observe("archive.layout", format="zip", layout=layout)
        raw_tensors: set[str] = set()
        if layout == PT2_LAYOUT:
            raw_tensors = raw_tensor_members(top, (i.filename for i in infos), partial(_small_member, archive))
            native = native_members(top, [i.filename for i in infos])
            if native:
                yield artifact.observe("pt2.native_code", **native_observation(native))
        locals_ = [read_local_header(fh, i) for i in infos]
        yield from zip_structure(artifact, infos, locals_, start_dir)
        names = NameChecks(artifact)
        records = storage_records(top, infos) if layout == "pytorch" else None
        for info, local in zip(infos, locals_, strict=True):
            ctx.budget.check_time()
            name, offset = info.orig_filename, info.header_offset
            yield from names.member(name, offset)
            if isinstance(local, str):
                yield artifact.observe("archive.corrupt", offset, member=name, reason=local)
                continue
            flags = info.flag_bits | local.flags
            if flags & ~ZIP_NORMAL_FLAGS:
                yield artifact.observe("archive.odd_flags", offset, member=name, flags=flags)
            if local.name != name:
                yield artifact.observe("archive.name_mismatch", offset, member=name, local_name=local.name)
            if flags & 0x1:
                yield artifact.observe("archive.encrypted", offset, member=name)
            if info.flag_bits & 0x1:
                continue  # readers take encryption from the central directory; a local-only bit is ignored
            if info.compress_type not in ZIP_METHODS:
                yield artifact.observe("archive.unsupported_method", offset, member=name, method=info.compress_type)
                continue
            bombs = list(ratio_bomb(artifact, ctx, name, info.file_size, info.compress_size))
            yield from bombs
            errors: list[str] = []
            opener = zip_member_opener(artifact, info, local.data_start, ctx, errors)
            if stat.S_ISLNK(info.external_attr >> 16):
                with opener() as link:
                    target = link.read(LINK_TARGET_BYTES).decode("utf-8", errors="replace")
                yield from names.link(name, target, offset)
            if info.filename.endswith("/") and not info.file_size:
                continue  # a folder; one holding data is read like a file (np.load opens it by that name)
            if layout == "torch-package" and info.filename.endswith(".py"):
                # PackageImporter resolves a pickle's names to the package's own modules first, and imports them:
                # this source runs when a pickle loads, even for a name that looks like a standard one.
                yield artifact.observe("archive.package_code", offset, member=name)
            context = member_context(layout, top, info.filename)
            if info.filename in raw_tensors:  # torch.export.load reads these bytes as a tensor, never unpickles
                context["raw_data"] = True
            if info.compress_type != zipfile.ZIP_STORED:
                context["cheap_seek"] = False  # the engine must not inflate a whole tensor to read its tail
            # Small members are read once in full (CRC, decompression); tensor storages never are.
            checked = info.file_size < FULL_READ_BYTES and not bombs and not context.get("raw_data")
            if checked:
                yield from check_zip_member(artifact, ctx, info, local.data_start)
            pickle_records = records if info.filename == f"{top}/data.pkl" else None
            yield artifact.child(info.filename, info.file_size, opener, context, pickle_records)
            if errors and not checked:
                yield artifact.observe("archive.member_unreadable", offset, member=name, reason=errors[0])
        if SKOPS_SCHEMA in archive.NameToInfo:  # skops.io.load reads it by name, whatever else the zip holds
            yield from scan_skops(artifact, ctx, archive)


class LenientZipScanner(ZipScanner):
    """Tried only when no other scanner read the blob: a zip behind other bytes whose end record the sniff calls
    implausible (a disk field set, a comment running past the end, a directory overlapping it). Python's zipfile
    checks none of that and miniz only some (review 27: pandas.read_pickle and torch.package ran such a zip's
    pickle). Where either would find a central directory, the zip is reported as disguised and scanned in full."""

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and ZIP_END in head.tail[-ZIPFILE_SEARCH:]

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as fh:
            found = zipfile_directory(fh, artifact.size)
            if not found:
                record = miniz_entries(fh, artifact.size)
                found = record is not None and record[0] > 0  # entries: an empty zip has nothing to load
        if not found:
            yield artifact.observe(NOT_MINE_KIND)  # no zip reader lists anything: left to the unknown formats
            return
        yield artifact.observe("archive.disguised_end", 0)
        yield from super().scan(artifact, ctx)



def zipfile_directory(fh: IO[bytes], size: int) -> bool:
    """Whether Python's zipfile would find a central directory: its end record (the last 22 bytes when they are
    one without a comment, else the last signature in the final 64 KiB, nothing checked), the directory right
    before it whatever the record's offset says, starting with an entry's signature. A zip64 locator before the
    record: zipfile is asked (it reads at most the file)."""
    start = max(0, size - ZIPFILE_SEARCH)
    fh.seek(start)
    tail = fh.read(ZIPFILE_SEARCH)
    no_comment = tail[-22:-18] == ZIP_END and tail[-2:] == b"\0\0"
    pos = len(tail) - 22 if no_comment else tail.rfind(ZIP_END)
    if pos < 0 or pos + 22 > len(tail):
        return False
    if pos >= 20 and tail[pos - 20 : pos - 16] == ZIP64_LOCATOR:
        try:
            fh.seek(0)
            with zipfile.ZipFile(_StopAtDirectory(fh, MIB)) as archive:
                return bool(archive.infolist())
        except _DirectoryAt as large:  # zipfile would read a directory of a megabyte or more there
            fh.seek(large.start)
            return fh.read(4) == ZIP_CENTRAL
        except Exception:
            return False
    count, cd_size = struct.unpack_from("<HI", tail, pos + 10)
    directory = start + pos - cd_size
    if count == 0 or cd_size == 0 or directory < 0:
        return False
    fh.seek(directory)
    return fh.read(4) == ZIP_CENTRAL


def miniz_entries(fh: IO[bytes], size: int) -> tuple[int, int, int] | None:
    """miniz_directory's record when a central directory entry starts where it says, else None."""
    record = miniz_directory(fh, size)
    if record is None:
        return None
    fh.seek(record[2])
    return record if fh.read(4) == ZIP_CENTRAL else None


def _small_member(archive: zipfile.ZipFile, name: str) -> bytes | None:
    """A member's bytes when it is small enough to read whole (a PT2 tensor config), else None."""
    try:
        info = archive.getinfo(name)
        return archive.read(info) if info.file_size <= PT2_CONFIG_BYTES else None
    except (KeyError, OSError, ValueError, zipfile.BadZipFile, RuntimeError, EOFError, NotImplementedError,
            zlib.error, lzma.LZMAError):
        return None  # the member's damage is reported where it is read


# --- tar ---------------------------------------------------------------------------------------------

TORCH_TAR_NAMES = ("storages", "tensors", "pickle")  # the members torch.load's tar reader opens, by name

_TAR_SPECIAL = {tarfile.CHRTYPE: "char", tarfile.BLKTYPE: "block", tarfile.FIFOTYPE: "fifo"}


def tar_checksum_ok(block: bytes) -> bool:
    """Whether tarfile would take this block for a header: its checksum field read by tarfile's own number
    parser (octal cut at a NUL, or base-256), against the unsigned or signed sum, as tarfile accepts."""
    if len(block) < 512 or not any(block[:512]):
        return False
    try:
        stored = tarfile.nti(block[148:156])  # type: ignore[attr-defined]
    except (tarfile.HeaderError, ValueError):
        return False
    return stored in tarfile.calc_chksums(block[:512])  # type: ignore[attr-defined]


PAX_RECORD_COST = 100  # bytes tarfile spends on a pax record beside its text (50 MB of tiny ones took 500 MB)
EXTENDED_PER_MEMBER = 1024  # extended header bytes each member may have beside max-header-bytes (GNU tar's posix
# format writes a pax header of three times for every file: a 512-byte block and three records)
_PAX_LENGTH = re.compile(rb"(\d+) ")
# GNU sparse maps: tarfile keeps a member's holes as a list of (offset, size) regions, and its member reader a map of
# two entries for each; a region's text can be 4 bytes ("0\n1\n"): 4 MB of map took 110 MB to list, 195 MB to read.
SPARSE_NUMBER_COST = 200  # for each number of a map, charged as tarfile parses it
TOO_MANY_HEADERS, TOO_LARGE_MAPS = "oversized extended header", "oversized sparse map"  # why a tar's listing stopped


def pax_cost(body: bytes, cap: int) -> int:
    """What tarfile keeps of a pax body, past `cap` or not. Records begin with their length, and the first that does
    not parse ends them; each keeps its keyword, up to the next '=' wherever that is (Python 3.11.7's tarfile takes
    that much: 40 KB of '2 ' took 394 MB), its value, and PAX_RECORD_COST bytes."""
    equals = [found.start() for found in re.finditer(b"=", body)]
    cost = pos = 0
    while cost <= cap and (match := _PAX_LENGTH.match(body, pos)) and (length := int(match[1])) > 0:
        at = bisect.bisect_left(equals, match.end())
        if at == len(equals) or equals[at] == match.end():
            break  # no keyword: tarfile's records end here
        cost += PAX_RECORD_COST + equals[at] - match.end() + max(0, pos + length - equals[at] - 2)
        pos += length
    return cost


class _HeadersPastLimit(Exception):
    """tarfile was about to read more extended headers or sparse maps than max-header-bytes allows (what: the
    reason given)."""

    def __init__(self, what: str = TOO_MANY_HEADERS) -> None:
        super().__init__(what)


class _HeaderReads(_Through):
    """A tar as tarfile lists it. The bodies of extended headers (pax, GNU long names) and the sparse maps it parses,
    which it keeps for every member, may not pass `allowance` bytes together: a read of a body (after such a header,
    or of more than a block) that would, or a negative one (to the end), is refused before it is made, and so is a
    block of a map tarfile reads from the file. Once listed, the file."""

    def __init__(self, fh: IO[bytes], allowance: int) -> None:
        super().__init__(fh)
        self.allowance, self.listing = allowance, True
        self.map_numbers: Callable[[bytes], int] | None = None  # while tarfile reads a map: how many a block holds
        self._body_of = 0  # the type of the extended header whose body tarfile reads next, or 0

    def read(self, size: int | None = -1) -> bytes:
        if not self.listing:
            return self._fh.read(-1 if size is None else size)
        if size is None or size < 0:
            raise _HeadersPastLimit  # to the end of the file
        if self.map_numbers is not None:
            data = self._fh.read(size)
            self.charge(self.map_numbers(data) * SPARSE_NUMBER_COST, TOO_LARGE_MAPS)
            return data
        body = size > 512 or self._body_of
        if body and size > self.allowance:
            raise _HeadersPastLimit
        data = self._fh.read(size)
        if body:  # what tarfile keeps of it: a long name, or pax records (and whatever follows them, until it parses)
            self.charge(max(len(data), pax_cost(data, self.allowance)) if self._body_of in b"xgX" else len(data))
        self._body_of = data[156] if len(data) == 512 and data[156] in b"xgLKX" else 0  # tarfile reads it next
        return data

    def charge(self, cost: int, what: str = TOO_MANY_HEADERS) -> None:
        self.allowance -= cost
        if self.allowance < 0:
            raise _HeadersPastLimit(what)

    @contextmanager
    def reading_map(self, numbers: Callable[[bytes], int]) -> Iterator[None]:
        self.map_numbers = numbers
        try:
            yield
        finally:
            self.map_numbers = None


def _map_lines(block: bytes) -> int:
    """Numbers in a block of a GNU 1.0 map: one a line."""
    return block.count(b"\n")


def _old_gnu_numbers(block: bytes) -> int:
    """Numbers in an old GNU extension block: 21 (offset, size) pairs, the empty ones ignored."""
    return 2 * sum(1 for at in range(0, 504, 24) if block[at : at + 24].strip(b"0 \0"))


def _members_charged_to(reads: _HeaderReads) -> type[tarfile.TarInfo]:
    """TarInfo that charges `reads` for every sparse map tarfile parses while listing, where it parses it: in old GNU
    extension blocks or a 1.0 map (the member's data), as they are read; in pax records or a 0.1 pax value (a global
    header's is parsed again for every member with a pax header of its own). A 30 MB 1.0 map took 2 GB to scan."""

    class Charged(tarfile.TarInfo):
        def _proc_sparse(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
            with reads.reading_map(_old_gnu_numbers):
                return super()._proc_sparse(tar)  # type: ignore[misc,no-any-return]

        def _proc_gnusparse_10(self, member: tarfile.TarInfo, pax: dict[str, str], tar: tarfile.TarFile) -> None:
            with reads.reading_map(_map_lines):
                super()._proc_gnusparse_10(member, pax, tar)  # type: ignore[misc]

        def _proc_gnusparse_01(self, member: tarfile.TarInfo, pax: dict[str, str]) -> None:
            reads.charge((pax["GNU.sparse.map"].count(",") + 1) * SPARSE_NUMBER_COST, TOO_LARGE_MAPS)
            super()._proc_gnusparse_01(member, pax)  # type: ignore[misc]

        def _proc_gnusparse_00(self, member: tarfile.TarInfo, *records: Any) -> None:
            found = records[-1]  # the pax body, searched whole (Python 3.12.1 and before) or its parsed records
            count = found.count(b"GNU.sparse.") if isinstance(found, bytes) else len(found)
            reads.charge(count * SPARSE_NUMBER_COST, TOO_LARGE_MAPS)
            super()._proc_gnusparse_00(member, *records)  # type: ignore[misc]

    return Charged


def _past_global_headers(fh: IO[bytes], offset: int, end: int) -> int:
    """Where a run of pax global headers at `offset` ends: tarfile reads them with the member after them, whose
    offset is its own header's (`git archive` writes one first)."""
    while offset < end:
        fh.seek(offset)
        block = fh.read(512)
        if len(block) < 512 or block[156:157] != b"g":
            break
        try:
            size = int(block[124:136].split(b"\0", 1)[0].strip(), 8)
        except ValueError:
            break
        offset += 512 + -(-max(size, 0) // 512) * 512
    return offset


def read_tar_members(
    artifact: Artifact, ctx: ScanContext, fh: IO[bytes]
) -> tuple[tarfile.TarFile | None, list[tarfile.TarInfo], list[Observation]]:
    """Headers up to max_members; a broken header ends the list with an observation."""
    found: list[Observation] = []
    members: list[tarfile.TarInfo] = []
    reads = _HeaderReads(fh, ctx.limits.max_header_bytes + EXTENDED_PER_MEMBER * ctx.limits.max_members)
    try:
        fh.seek(0)
        # Plain tar only: compression is undone upstream. ignore_zeros reads on past zero blocks and
        # broken headers, as GNU tar -i does, so nothing hides behind an end-of-archive marker.
        tar = tarfile.TarFile(fileobj=reads, mode="r", ignore_zeros=True, tarinfo=_members_charged_to(reads))
    except BudgetExceeded:
        raise
    except _HeadersPastLimit as exc:
        return None, [], [artifact.observe("archive.corrupt", 0, reason=str(exc))]
    except Exception as exc:
        return None, [], [artifact.observe("archive.corrupt", reason=reason(exc))]
    expected = 0
    try:
        while True:
            ctx.budget.check_time()
            member = tar.next()
            if member is None:
                break
            if len(members) == ctx.limits.max_members:  # one more than allowed
                found.append(artifact.observe("archive.too_many_members", limit=ctx.limits.max_members))
                break
            if member.offset > _past_global_headers(fh, expected, member.offset):  # after zero blocks or junk:
                # Python's tarfile stops before it
                found.append(
                    artifact.observe(
                        "archive.hidden_member", member.offset, member=member.name, gap=member.offset - expected
                    )
                )
            expected = tar.offset
            members.append(member)
    except BudgetExceeded:
        raise
    except _HeadersPastLimit as exc:
        found.append(artifact.observe("archive.corrupt", tar.offset, reason=str(exc)))
    except Exception as exc:
        found.append(artifact.observe("archive.corrupt", reason=reason(exc)))
    reads.listing = False  # members are read through it
    return tar, members, found


class TarScanner:
    """Plain (uncompressed) tar archives; compressed tars reach here through CompressedScanner."""

    name = "tar"

    def accepts(self, head: Head) -> bool:
        return head.head[257:262] == b"ustar" or tar_checksum_ok(head.head[:512])

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as fh:
            tar, members, problems = read_tar_members(artifact, ctx, fh)
            yield from problems
            if tar is None:
                return
            layout, top = classify_layout(m.name for m in members if holds_data(m))
            if any(m.name == "storages" for m in members):
                layout, top = "torch-tar", ""  # torch.load's tar reader begins with this member, whatever else is there
            yield artifact.observe("archive.layout", format="tar", layout=layout)
            names = NameChecks(artifact)
            links = _LinkIndex(members) if layout == "torch-tar" else None
            # torch extracts `storages` into a folder first, then `tensors`: a `tensors` link to `storages` reads that
            # file on disk, wherever the link stands (helper 249 put it before `storages`, which tarfile's own lookup
            # of an earlier member never reaches).
            extracted = max((p for p, m in enumerate(members) if m.name == "storages"), default=None)
            for position, member in enumerate(members):
                ctx.budget.check_time()
                name, offset = member.name, member.offset
                yield from names.member(name, offset)
                if member.issym() or member.islnk():
                    yield from names.link(name, member.linkname, offset, hard=member.islnk())
                if member.type in _TAR_SPECIAL:
                    yield artifact.observe("archive.special_file", offset, member=name, type=_TAR_SPECIAL[member.type])
                if links is not None and name in TORCH_TAR_NAMES and (member.issym() or member.islnk()):
                    reads = [position]
                    if name == "tensors" and extracted is not None and _link_name(member) == "storages":
                        reads.append(extracted)
                    for read in reads:
                        try:
                            target = links.target(read)
                        except LinkChainTooLong as exc:
                            yield artifact.observe("archive.member_unreadable", offset, member=name, reason=str(exc))
                            continue
                        yield from self._torch_link(artifact, tar, member, target)
                if not holds_data(member):
                    continue
                errors: list[str] = []
                yield artifact.child(
                    name, member.size, self._opener(tar, member, errors), member_context(layout, top, name)
                )
                if errors:
                    yield artifact.observe("archive.member_unreadable", offset, member=name, reason=errors[0])

    def _torch_link(
        self, artifact: Artifact, tar: tarfile.TarFile, member: tarfile.TarInfo, target: tarfile.TarInfo | None
    ) -> Iterator[ScanItem]:
        """torch reads `storages`, `tensors` and `pickle` by name, through links as tarfile resolves them: the
        target's bytes are read again under the link's name, so torch's records are stepped over as torch does."""
        if target is not None:
            errors: list[str] = []
            opener = self._opener(tar, target, errors)
            yield artifact.child(member.name, target.size, opener, {"container": "torch-tar"})
            if errors:
                yield artifact.observe("archive.member_unreadable", member.offset, member=member.name, reason=errors[0])

    @staticmethod
    def _opener(tar: tarfile.TarFile, member: tarfile.TarInfo, errors: list[str]) -> Callable[[], BinaryIO]:
        def open_member() -> BinaryIO:
            stream = tar.extractfile(member)
            if stream is None:
                raise OSError(f"{member.name} has no data")
            return guarded(stream, None, errors)

        return open_member


def holds_data(member: tarfile.TarInfo) -> bool:
    """A member tarfile reads as a file: a regular one, or one of a type it does not know (a `Z` type flag is
    read, extracted and loaded like a file; torch.load and pandas.read_pickle ran such a member's pickle)."""
    return member.isreg() or member.type not in tarfile.SUPPORTED_TYPES


# Links followed to reach a member's bytes. tarfile follows a chain as deep as Python's recursion lets it (helper
# 249 had torch read storages through 100 hard links), two or three frames a link: past this, the member is reported
# unread rather than passed over.
MAX_LINK_STEPS = 1000


class LinkChainTooLong(Exception):
    """A chain of links longer than wscan follows (MAX_LINK_STEPS)."""


def _link_name(member: tarfile.TarInfo) -> str:
    """The name a link leads to, from the archive's root: a hard link's target is, a symbolic one's is relative to
    the link's folder (the folder torch extracts into, for its members at the top)."""
    if member.islnk():
        return posixpath.normpath(member.linkname)
    return posixpath.normpath("/".join(filter(None, (posixpath.dirname(member.name), member.linkname))))


class _LinkIndex:
    """Resolves links among the members already read, as tarfile's extract and extractfile do (a hard link: the
    last member of that name before it; a symbolic link: the last of its folder-relative name anywhere), chains
    followed. tarfile's own lookup scans every member per link and reads the rest of the archive first."""

    def __init__(self, members: list[tarfile.TarInfo]) -> None:
        self.members = members
        self.positions: dict[str, list[int]] = {}
        for position, member in enumerate(members):
            self.positions.setdefault(posixpath.normpath(member.name), []).append(position)
        # Each link's end, once found, for every link of its chain: links into one long chain cost one walk.
        self.ends: dict[int, tarfile.TarInfo | LinkChainTooLong | None] = {}

    def target(self, position: int) -> tarfile.TarInfo | None:
        """The regular member a link reads, or None (a dead end, or a loop, which tarfile's recursion never
        leaves); raises LinkChainTooLong past MAX_LINK_STEPS links."""
        walked: list[int] = []
        end = self._walk(position, walked)
        for link in walked:
            self.ends[link] = end
        if isinstance(end, LinkChainTooLong):
            raise end
        return end

    def _walk(self, position: int, walked: list[int]) -> tarfile.TarInfo | LinkChainTooLong | None:
        member = self.members[position]
        for _ in range(MAX_LINK_STEPS):
            if position in self.ends:
                return self.ends[position]
            if not (member.issym() or member.islnk()):
                return member if holds_data(member) else None
            if position in walked:
                return None
            walked.append(position)
            found = self.positions.get(_link_name(member), [])
            before = bisect.bisect_left(found, position if member.islnk() else len(self.members))
            if before == 0:
                return None
            position = found[before - 1]
            member = self.members[position]
        return LinkChainTooLong(f"a chain of more than {MAX_LINK_STEPS} links, which wscan does not follow")


# --- 7z ----------------------------------------------------------------------------------------------


class SevenZipScanner:
    """7z archives via py7zr (in scanners/sevenzip.py, imported on the first 7z: py7zr is a slow import)."""

    name = "7z"

    def accepts(self, head: Head) -> bool:
        return head.head.startswith(SEVENZIP_MAGIC)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        from wscan.scanners.sevenzip import scan_7z

        yield from scan_7z(artifact, ctx)
