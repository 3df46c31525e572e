"""Single-stream compression (gzip, bz2, xz, lzma-alone, zlib as joblib writes it, zstd, LZ4 frames, joblib's Z-file).

The stream is inflated in bounded chunks into a spooled temporary file that becomes the child, so a
pickle inside is scanned like any other. Bombs and broken streams are observations; the bytes inflated
before the failure are still handed on, because a loader would run the payload they hold.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import posixpath
import re
import zlib
from collections.abc import Callable, Iterator
from functools import cache, partial
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from wscan.limits import MIB, Budget, BudgetExceeded
from wscan.scanners.base import CHUNK, LOADER_FOLDER, Artifact, Head, ScanContext, ScanItem
from wscan.scanners.slice import open_slice

if TYPE_CHECKING:
    import tempfile



@cache
def _zstd() -> Any:
    """The zstd module (Python 3.14's, else the backport), or None: it is optional, and imported only when a
    file starts with zstd's magic (its native library takes several milliseconds to load)."""
    try:
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from backports import zstd  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            return None
    return zstd


def _lz4_frame() -> Any:
    """lz4.frame, imported only when a file starts with the LZ4 frame magic (joblib's compress="lz4")."""
    import lz4.frame

    return lz4.frame


LZ4_MAGIC = b"\x04\x22\x4d\x18"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZMA_SUFFIXES = (".lzma", ".lz", ".xz", ".txz", ".tlz")
SNIFF_BYTES = 64 * 1024  # what the engine's head holds, and what the scanner re-reads to pick the codec
SPOOL_BYTES = 16 * MIB

Stream = IO[bytes] | io.BufferedIOBase

# What a file name turns into once its compression suffix is undone.
SUFFIXES = {
    ".tgz": ".tar", ".tbz2": ".tar", ".txz": ".tar", ".gz": "", ".bz2": "", ".xz": "", ".lzma": "",
    ".zst": "", ".zstd": "", ".zlib": "", ".z": "", ".lz4": "",
}  # fmt: skip


def reason(exc: BaseException) -> str:
    """A short, single-line description of a parse failure for an observation attribute."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


class _Guarded(io.RawIOBase):
    """A member stream that ends instead of raising when the bytes behind it are broken.

    Scanners downstream then see a truncated stream (which is what a loader would have run) and the
    parent learns about the failure through `errors`. Decompressed bytes are charged to the budget.
    """

    def __init__(self, inner: Stream, budget: Budget | None, errors: list[str]) -> None:
        super().__init__()
        self._inner = inner
        self._budget = budget
        self._errors = errors

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        try:
            return bool(self._inner.seekable())
        except Exception:
            return False

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        try:
            data = self._inner.read(len(view))
        except (BudgetExceeded, MemoryError):  # a limit, not broken bytes (MemoryError: the worker's memory cap)
            raise
        except Exception as exc:
            self._errors.append(reason(exc))
            return 0
        if self._budget is not None:
            self._budget.charge_decompressed(len(data))
        view[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        try:
            return self._inner.seek(offset, whence)
        except (BudgetExceeded, MemoryError):
            raise
        except Exception as exc:  # decompressors fail while skipping forward, too
            self._errors.append(reason(exc))
            raise OSError(reason(exc)) from None

    def tell(self) -> int:
        return self._inner.tell()

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()


def guarded(inner: Stream, budget: Budget | None, errors: list[str]) -> BinaryIO:
    """Wrap a member stream for a child opener (see `_Guarded`)."""
    return io.BufferedReader(_Guarded(inner, budget, errors), buffer_size=64 * 1024)


class _View(io.RawIOBase):
    """An independent read position over a shared spool, so each child open starts afresh."""

    def __init__(self, spool: IO[bytes]) -> None:
        super().__init__()
        self._spool = spool
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        self._spool.seek(self._pos)
        data = self._spool.read(len(view))
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._pos
        elif whence == io.SEEK_END:
            offset += self._spool.seek(0, io.SEEK_END)
        self._pos = max(0, offset)
        return self._pos

    def tell(self) -> int:
        return self._pos


def view_opener(spool: IO[bytes]) -> Callable[[], BinaryIO]:
    """A child opener over a spool the parent keeps open (and closes) itself."""
    return lambda: io.BufferedReader(_View(spool))


def new_spool() -> tempfile.SpooledTemporaryFile[bytes]:
    """Memory up to 16 MiB, then a temporary file on disk."""
    import tempfile  # imported by the few scans that decompress

    return tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)


# joblib's pre-0.10 format, which joblib.load still reads (numpy_pickle_compat): "ZF", the pickle's length in hex
# padded to 19 bytes, perhaps one space, then the zlib-compressed pickle. joblib takes every file starting with
# "ZF" for one, and refuses it only when the length does not parse.
ZFILE_MAGIC = b"ZF"
ZFILE_HEADER = len(ZFILE_MAGIC) + 19


def zfile_length(head: bytes) -> int | None:
    """The length a Z-file header declares, parsed as joblib parses it (int(field, 16)), or None if it would not."""
    if not head.startswith(ZFILE_MAGIC):
        return None
    try:
        return int(head[len(ZFILE_MAGIC) : ZFILE_HEADER], 16)
    except ValueError:
        return None


def sniff(head: bytes, strict: bool = False, name: str = "") -> str | None:
    """Name the codec `head` starts with; weak magics (zlib, lzma-alone, Z-file, skippable frames) are confirmed by
    decoding or by what follows, and never taken in tensor bytes (`strict`). The name only adds a reading: a file
    named `.lzma` is read as liblzma would read it whatever its properties byte."""
    if head.startswith(b"\x1f\x8b\x08"):
        return "gzip"
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[3:4] != b"0":
        return "bz2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(ZSTD_MAGIC) and _zstd() is not None:
        return "zstd"
    if head.startswith(LZ4_MAGIC):
        return "lz4"
    if strict:
        return None
    if _SKIPPABLE.match(head):
        at, magic = skip_frames(lambda offset, count: head[offset : offset + count])
        if at + len(magic) <= len(head) and len(magic) == 4:
            return codec_after_frames(magic)
        return SKIPPABLE if len(head) >= SNIFF_BYTES else None  # past a whole head: read on in the file
    # joblib takes any 5d 00 for lzma-alone. lzma.open takes any header liblzma's .lzma decoder accepts (a
    # properties byte, a dictionary size of 2^n or 2^n + 2^(n-1), a size below 2^38 or unknown), which zeros and
    # much else satisfy: that reading is for files named as .lzma, which is what such code opens.
    lzma_named = name.lower().endswith(LZMA_SUFFIXES)
    if (head.startswith(b"\x5d\x00") or (lzma_named and _lzma_alone_header(head))) and _decodes(
        lzma.LZMADecompressor(lzma.FORMAT_ALONE), head
    ):
        return "lzma"
    if len(head) >= 2 and head[0] == 0x78 and (head[0] * 256 + head[1]) % 31 == 0 and not head[1] & 0x20:
        return "zlib" if _decodes(zlib.decompressobj(), head) else None
    if zfile_length(head) is not None:
        return "joblib-zfile"
    return None


def _lzma_alone_header(head: bytes) -> bool:
    """Whether liblzma's auto decoder (lzma.open, LZMAFile) would read `head` as an .lzma header."""
    if len(head) < 13 or head[0] > 224:
        return False
    pb, rest = divmod(head[0], 45)
    lp, lc = divmod(rest, 9)
    if lc + lp > 4 or pb > 4:
        return False
    dictionary = int.from_bytes(head[1:5], "little")
    if dictionary != 0xFFFFFFFF:
        d = dictionary - 1
        for shift in (2, 3, 4, 8, 16):
            d |= d >> shift
        if d + 1 != dictionary:
            return False
    size = int.from_bytes(head[5:13], "little")
    return size == 2**64 - 1 or size < 2**38


def _decodes(decompressor: Any, head: bytes) -> bool:
    """Does a prefix decode cleanly? Random bytes fail within a few kilobytes. A whole head that decodes to
    nothing yet is a stream too (64 KiB of empty deflate blocks, then the pickle: joblib reads through them);
    a shorter one that decodes to nothing holds nothing a loader could run."""
    try:
        out = decompressor.decompress(head, 64 * 1024)
    except (zlib.error, lzma.LZMAError, EOFError, ValueError):
        return False
    return bool(out) or bool(decompressor.eof) or len(head) >= SNIFF_BYTES


# zstd and LZ4 frames may be preceded by skippable frames (magic 0x184D2A50 to 0x184D2A5F, a 32-bit length, that
# many bytes), which both libraries' readers step over, as many as there are.
_SKIPPABLE = re.compile(rb"[\x50-\x5f]\x2a\x4d\x18", re.DOTALL)
SKIPPABLE = "skippable"  # frames run past the head: the codec is read from the file, after them
_FRAMES_PER_CHECK = 4096


def skip_frames(peek: Callable[[int, int], bytes], check: Callable[[], None] | None = None) -> tuple[int, bytes]:
    """The offset after the leading skippable frames and up to 4 bytes found there; `peek(offset, count)` reads."""
    at = frames = 0
    while True:
        header = peek(at, 8)
        if len(header) < 4 or not _SKIPPABLE.match(header):
            return at, header[:4]
        if len(header) < 8:
            return at + len(header), b""  # a cut frame header: nothing follows
        at += 8 + int.from_bytes(header[4:8], "little")
        frames += 1
        if check is not None and frames % _FRAMES_PER_CHECK == 0:
            check()


def codec_after_frames(magic: bytes) -> str | None:
    if magic == ZSTD_MAGIC and _zstd() is not None:
        return "zstd"
    return "lz4" if magic == LZ4_MAGIC else None


def _chunks(codec: str, raw: IO[bytes]) -> Iterator[bytes]:
    """Decompressed output in chunks of at most CHUNK bytes; stdlib rules for members and trailers."""
    if codec in ("zlib", "joblib-zfile"):
        if codec == "joblib-zfile":  # past the header, and the space joblib <= 0.8.4 wrote after it
            raw.seek(ZFILE_HEADER)
            if raw.read(1) != b" ":
                raw.seek(ZFILE_HEADER)
        decompressor = zlib.decompressobj()
        while not decompressor.eof:
            data = decompressor.unconsumed_tail or raw.read(CHUNK)
            if not data:
                raise EOFError("compressed stream ended before the end-of-stream marker")
            yield decompressor.decompress(data, CHUNK)
        return
    with _reader(codec, raw) as stream:
        while chunk := stream.read1(CHUNK):  # read1: an error must not swallow what came before
            yield chunk


def _reader(codec: str, raw: IO[bytes]) -> io.BufferedIOBase:
    """The stdlib reader for a codec: it handles multi-member streams and trailing bytes."""
    if codec == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if codec == "bz2":
        return bz2.BZ2File(raw)
    if codec in ("xz", "lzma"):
        # FORMAT_AUTO, as joblib and lzma.open read: each concatenated stream may be either format, and a
        # reader fixed to one takes the other for trailing garbage and stops.
        return lzma.LZMAFile(raw, format=lzma.FORMAT_AUTO)
    if codec == "lz4":  # the reader joblib.load uses for these files
        lz4_file: io.BufferedIOBase = _lz4_frame().LZ4FrameFile(raw, mode="rb")
        return lz4_file
    reader: io.BufferedIOBase = _zstd().ZstdFile(raw)
    return reader


def _peek(raw: IO[bytes], offset: int, count: int) -> bytes:
    raw.seek(offset)
    return raw.read(count)


def _member_name(name: str, codec: str) -> str:
    """`model.pkl.gz` holds `model.pkl`, `x.tgz` holds `x.tar`; a hint for layout checks only."""
    base = posixpath.basename(name.replace("\\", "/"))
    for suffix, replacement in SUFFIXES.items():
        if base.lower().endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)] + replacement
    return f"{base or 'stream'}.{codec}-decoded"


# Git's loose objects (`.git/objects/ab/cdef...`): zlib streams of `<type> <size>\0` and the content. What a
# checkout writes is the content, scanned as such: the header read as a format's first bytes was a safetensors
# header of impossible length (WS-ST-001, high, in every clone with a commit of its own).
GIT_OBJECT_HEADER = re.compile(rb"(?:blob|tree|commit|tag) [0-9]{1,20}\0")
GIT_OBJECT_NAME = re.compile(r"(?:.*/)?objects/[0-9a-f]{2}/(?:[0-9a-f]{38}|[0-9a-f]{62})")


def git_object_start(artifact: Artifact, spool: IO[bytes]) -> int:
    """Where a git loose object's content starts in its decompressed stream, 0 for any other stream."""
    path = artifact.real_path.as_posix() if artifact.real_path is not None else artifact.name
    if GIT_OBJECT_NAME.fullmatch(path) is None:
        return 0
    spool.seek(0)
    header = GIT_OBJECT_HEADER.match(spool.read(32))
    return header.end() if header else 0


class CompressedScanner:
    """gzip / bz2 / xz / lzma / zlib / zstd / lz4 streams and joblib Z-files: one child holding the decompressed
    bytes."""

    name = "compressed"

    def accepts(self, head: Head) -> bool:
        return sniff(head.head, strict=head.raw_data, name=head.name) is not None

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        limits = ctx.limits
        with artifact.opener() as raw, new_spool() as spool:
            codec = sniff(raw.read(SNIFF_BYTES), name=artifact.name)
            if codec == SKIPPABLE:
                _, magic = skip_frames(lambda offset, count: _peek(raw, offset, count), ctx.budget.check_time)
                codec = codec_after_frames(magic)
                if codec is None:
                    yield artifact.observe("compressed.corrupt", reason="skippable frames, then no zstd or LZ4 frame")
                    return
            if codec is None:
                yield artifact.observe("compressed.corrupt", reason="no known compression magic")
                return
            raw.seek(0)
            yield artifact.observe("compressed.layout", codec=codec)
            total = 0
            try:
                for chunk in _chunks(codec, raw):
                    ctx.budget.check_time()
                    ctx.budget.charge_decompressed(len(chunk))
                    spool.write(chunk)
                    total += len(chunk)
                    ratio = total // max(artifact.size, 1)
                    if total > limits.ratio_floor_bytes and ratio > limits.max_compression_ratio:
                        yield artifact.observe("archive.bomb", ratio=ratio, size=total)
                        break
                    if total > limits.max_member_bytes:
                        yield artifact.observe("archive.member_limit", size=total, limit=limits.max_member_bytes)
                        break
            except BudgetExceeded:
                raise
            except Exception as exc:
                yield artifact.observe("compressed.corrupt", reason=reason(exc), codec=codec, decompressed=total)
            name = _member_name(artifact.name or artifact.location.path, codec)
            # Loaders that decompress a file as they read it (joblib.load of a .gz, .z, .xz) resolve the names it
            # holds against its folder: the stream is that file, read from there.
            where = {LOADER_FOLDER: str(artifact.real_path.parent)} if artifact.real_path is not None else None
            start = git_object_start(artifact, spool) if codec == "zlib" else 0
            opener = view_opener(spool) if not start else partial(open_slice, view_opener(spool), start, total - start)
            yield artifact.child(name, total - start, opener, where)
