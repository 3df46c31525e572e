"""The contract between the engine and format scanners."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import BinaryIO, Protocol

from wscan.limits import MIB, Budget, Limits
from wscan.model import AttrValue, Location, Observation
from wscan.scanners.slice import open_slice

# An observation by which a scanner says another top-level file is data it reads (attrs: file = that file's
# report path, format = what it holds), so the engine does not call it an unknown format.
CLAIM_KIND = "fact.claims"
# Yielded by a scanner that accepted a blob on its head and, having read the rest, finds it is not its format
# (a large JSON file that names no Keras class): the engine drops the format, as if it had never accepted.
NOT_MINE_KIND = "scan.not_this_format"
# Context key: the folder a loader resolves the names inside a blob against (the folder of the compressed file the
# blob was decompressed from); a top-level file's own folder is its real path's parent.
LOADER_FOLDER = "loader_folder"
HEAD_BYTES = 64 * 1024
TAIL_BYTES = 64 * 1024 + 22  # a zip end-of-central-directory record with the longest comment


@dataclass(frozen=True, slots=True)
class Head:
    """The bytes a scanner may look at to decide whether a blob is its format."""

    head: bytes
    tail: bytes
    size: int
    name: str  # member or file name: a hint for layout checks, never for the format
    raw_data: bool = False  # the parent knows these are raw tensor bytes: sniff strictly
    container: str = ""  # layout of the enclosing archive (pytorch, torchscript, npz, ...)


@dataclass(slots=True)
class Artifact:
    """A blob to scan: a file on disk or a member inside a container, opened lazily."""

    location: Location
    size: int
    opener: Callable[[], BinaryIO]
    depth: int = 0
    name: str = ""
    # Facts the parent learnt that a child scanner needs (e.g. container=pytorch, raw_data=True).
    context: Mapping[str, AttrValue] = field(default_factory=dict)
    # The file on disk for a top-level artifact (None inside containers): for checks that need its folder.
    real_path: Path | None = None
    # A PyTorch zip's data.pkl: the size of each data/<key> record, which torch.load reads a storage from.
    storage_records: Mapping[str, int] | None = None

    def observe(self, kind: str, offset: int | None = None, /, **attrs: AttrValue) -> Observation:
        """An observation located in this artifact, at a byte offset when one is known."""
        location = self.location if offset is None else self.location.at(offset)
        merged: dict[str, AttrValue] = {k: v for k, v in self.context.items() if k == "container"}
        merged.update(attrs)
        return Observation(kind, location, merged)

    def hidden(self, start: int, length: int) -> Artifact:
        """Bytes inside this blob that no structure owns, as a blob of their own (named by their offset)."""
        return self.child(f"@{start}", length, partial(open_slice, self.opener, start, length))

    def child(
        self,
        member: str,
        size: int,
        opener: Callable[[], BinaryIO],
        context: Mapping[str, AttrValue] | None = None,
        storage_records: Mapping[str, int] | None = None,
    ) -> Artifact:
        """A member of this container, one level deeper."""
        return Artifact(
            location=self.location.child(member),
            size=size,
            opener=opener,
            depth=self.depth + 1,
            name=member,
            context=dict(context or {}),
            storage_records=storage_records,
        )


@dataclass(slots=True)
class ScanContext:
    """What a scanner may consult: the limits and the running budget of the current top-level file."""

    limits: Limits
    budget: Budget


ScanItem = Observation | Artifact


class Scanner(Protocol):
    """One format. `accepts` sniffs bytes; `scan` reports facts and child artifacts, never verdicts."""

    name: str

    def accepts(self, head: Head) -> bool: ...

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]: ...


CHUNK = 1 * MIB  # what a stream is read by when it is read whole


def read_capped(raw: BinaryIO, limit: int) -> bytes:
    """Up to `limit` + 1 bytes of `raw`, a chunk at a time: one read of `limit` + 1 bytes reserves that much first,
    whatever the file holds (2 GiB for each TensorFlow graph in a tar, past the worker's memory cap)."""
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = raw.read(min(CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
