"""Sharded checkpoints: the index (`*.safetensors.index.json`, `pytorch_model.bin.index.json`,
`flax_model.msgpack.index.json`) against its shards.

Loaders open whatever file the index names, relative to the index's folder, and merge every tensor of every
shard. So a name that leaves the folder loads a file nobody reviewed, a tensor stored twice lets the second
copy silently win, and a stale shard next to the index is a file a user may load by hand. Shard headers are
read through the safetensors header parser or the Flax msgpack walker (bounded); tensor bytes are never read.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO

from wscan.discover import INSIDE, ON_SHARE, leads
from wscan.limits import BudgetExceeded
from wscan.model import Observation
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem, read_capped
from wscan.scanners.flax_msgpack import looks_like_flax
from wscan.scanners.safetensors import looks_like_safetensors
from wscan.scanners.safetensors_header import parse_header
from wscan.strict_json import JsonRejected, loads_strict

MAX_SHARD_DIGITS = 9  # no model has a billion shards; longer numbers are not counted (int() refuses past 4300)
SHARD_NAME = re.compile(r"(?P<prefix>.+)-(?P<index>\d{5,})-of-(?P<total>\d{5,})(?P<ext>\..+)?")
_INDEX_HINT = re.compile(rb'"weight_map"\s*:')


def read_index(data: bytes) -> tuple[dict[str, str], int | None] | str | None:
    """(weight_map, total_size) of an index, the reason it is malformed, or None if it is not an index."""
    try:
        top = loads_strict(data)
    except JsonRejected as exc:
        return str(exc)
    if not isinstance(top, dict) or "weight_map" not in top:
        return None
    weight_map, metadata = top["weight_map"], top.get("metadata", {})
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        return "weight_map must map tensor names to file names"
    if not isinstance(metadata, dict):
        return "metadata must be an object"
    total = metadata.get("total_size")
    if total is not None and (not isinstance(total, int) or isinstance(total, bool) or total < 0):
        return "metadata.total_size must be a non-negative integer"
    return weight_map, total


@dataclass
class _Shard:
    name: str
    path: Path
    listed: bool = False  # its tensors are known: a safetensors or Flax shard (a pickle shard's are not)
    names: set[str] = field(default_factory=set)
    nbytes: int | None = None  # of its tensors' data, where known


class ShardIndexScanner:
    """Index files of sharded checkpoints, checked against the shards in their folder."""

    name = "shards"

    def accepts(self, head: Head) -> bool:
        """An index by its name (how loaders find it: `model.safetensors.index.json`, ...) or by its key. The key
        alone misses an index that writes it as `weight\\u005fmap` or puts it past the head, which json.loads
        and so transformers still read."""
        start = head.head.lstrip(b" \t\r\n")
        if head.raw_data or (start and not start.startswith(b"{")):
            return False
        return head.name.lower().endswith(".index.json") or bool(_INDEX_HINT.search(head.head))

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        if artifact.size > ctx.limits.max_header_bytes:
            detail = f"index of {artifact.size} bytes is over {ctx.limits.max_header_bytes}"
            yield artifact.observe("scan.limit", limit="max-header-bytes", detail=detail)
            return
        with artifact.opener() as raw:
            parsed = read_index(read_capped(raw, ctx.limits.max_header_bytes - 1))
        if parsed is None:
            return  # JSON that merely mentions weight_map
        if isinstance(parsed, str):
            yield artifact.observe("shards.invalid", 0, reason=parsed)
            return
        weight_map, total_size = parsed
        if artifact.real_path is None:  # inside an archive: there is no folder to check against
            yield artifact.observe("shards.layout", shards=len(set(weight_map.values())), checked=False)
            return
        yield from _check(artifact, artifact.real_path, weight_map, total_size, ctx)


def _check(
    artifact: Artifact, index_path: Path, weight_map: dict[str, str], total_size: int | None, ctx: ScanContext
) -> Iterator[Observation]:
    folder = Path(os.path.abspath(index_path)).parent
    names = list(dict.fromkeys(weight_map.values()))
    if len(names) > ctx.limits.max_members:
        detail = f"index names {len(names)} shards, over {ctx.limits.max_members}"
        raise BudgetExceeded("max-members", detail)
    per_shard = Counter(weight_map.values())
    shards: dict[str, _Shard] = {}
    by_file: dict[tuple[int, int], _Shard] = {}  # a file the index names several ways (`m`, `./m`, a link): read once
    for name in names:
        ctx.budget.check_time()
        escape = folder_escape_reason(folder, name)
        if escape is not None:
            yield artifact.observe("shards.path_escape", shard=name, reason=escape)
        elif not _is_file(folder / name):
            yield artifact.observe("shards.missing", shard=name, tensors=per_shard[name])
        else:
            shard = _Shard(name, folder / name)
            identity = _identity(shard.path)
            same = by_file.get(identity) if identity is not None else None
            if same is None:
                yield from _read_shard(artifact, shard, ctx)
                if identity is not None:
                    by_file[identity] = shard
            else:  # its header, shared: eight spellings of one 9 MB shard took 4 GB (memory audit, #5)
                shard.listed, shard.names, shard.nbytes = same.listed, same.names, same.nbytes
            shards[name] = shard
    yield from _check_tensors(artifact, weight_map, shards)
    sizes = [s.nbytes for s in shards.values() if s.nbytes is not None]
    if total_size is not None and len(sizes) == len(names):  # every shard present, safetensors or Flax
        actual = sum(sizes)
        if actual != total_size:
            yield artifact.observe("shards.total_size_mismatch", declared=total_size, actual=actual)
    yield from _check_naming(artifact, names)
    yield from _check_orphans(artifact, folder, names, ctx)
    yield artifact.observe("shards.layout", shards=len(names), tensors=len(weight_map), checked=len(sizes))


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system, ...
        return False


def folder_escape_reason(folder: Path, name: str) -> str | None:
    """Why loading `name` relative to `folder` would leave it, or None when it stays inside."""
    if not name or "\x00" in name:
        return "empty name or NUL byte"
    if name.startswith(("/", "\\")) or PureWindowsPath(name).drive:
        return "absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "parent-folder component"
    where = leads(folder / name, Path(os.path.realpath(folder)))  # a HF snapshot's links into blobs/ stay inside
    if where == INSIDE:
        return None
    return "symbolic link leads onto a network share" if where == ON_SHARE else "symbolic link leaves the folder"


def _read_shard(artifact: Artifact, shard: _Shard, ctx: ScanContext) -> Iterator[Observation]:
    """Read a safetensors shard's header or walk a Flax shard (bounded); pickle shards are left to their own scan."""
    try:
        size = shard.path.stat().st_size
        with shard.path.open("rb") as raw:
            head = raw.read(4096)
            raw.seek(0)
            if looks_like_safetensors(head, size):
                parsed = parse_header(raw, size, ctx.limits.max_header_bytes)
            elif looks_like_flax(head):
                yield from _read_flax_shard(artifact, shard, raw, size, ctx)
                return
            else:
                return
    except OSError as exc:
        yield artifact.observe("shards.shard_invalid", shard=shard.name, reason=f"cannot read: {exc.strerror}")
        return
    if isinstance(parsed, list):
        reason = "; ".join(f"{p.kind}: {p.attrs.get('reason', '')}" for p in parsed)[:300]
        yield artifact.observe("shards.shard_invalid", shard=shard.name, reason=reason)
        return
    if parsed.stopped:
        yield artifact.observe("shards.shard_invalid", shard=shard.name, reason="too many problems in its header")
        return
    shard.listed, shard.names = True, set(parsed.names)
    shard.nbytes = sum(t.end - t.begin for t in parsed.tensors)


def _read_flax_shard(
    artifact: Artifact, shard: _Shard, raw: BinaryIO, size: int, ctx: ScanContext
) -> Iterator[Observation]:
    """A Flax shard's leaves as transformers merges them (`flatten_dict(state, sep="/")`, shard after shard); one that
    msgpack cannot read is invalid (its own scan says where)."""
    from wscan.scanners.flax_msgpack_tree import Caps, walk

    parsed = walk(raw, size, Caps(ctx.limits.max_header_bytes, ctx.budget.check_time, leaf_names=True))
    if parsed.over_budget is not None:
        raise parsed.over_budget
    broken = [p for p in parsed.problems if p.kind in ("flax.malformed", "flax.over_limit")]
    if broken or parsed.stopped or not parsed.complete:
        reason = str(broken[0].attrs.get("reason", "too large to read")) if broken else "too many problems"
        yield artifact.observe("shards.shard_invalid", shard=shard.name, reason=reason[:300])
        return
    shard.listed, shard.names, shard.nbytes = True, set(parsed.leaves), parsed.nbytes


def _check_tensors(artifact: Artifact, weight_map: dict[str, str], shards: dict[str, _Shard]) -> Iterator[Observation]:
    """Every mapped tensor in its shard and nowhere else; no shard holds tensors the index does not name."""
    holders: dict[str, list[str]] = {}
    for held in shards.values():
        for tensor in held.names:
            holders.setdefault(tensor, []).append(held.name)
    for tensor, name in weight_map.items():
        shard = shards.get(name)
        found = holders.get(tensor, [])
        if len(found) > 1:
            yield artifact.observe("shards.tensor_duplicated", tensor=tensor, shards=",".join(found)[:300])
        elif shard is not None and shard.listed and tensor not in shard.names:
            yield artifact.observe("shards.tensor_missing", tensor=tensor, shard=name, found_in=",".join(found))
    for tensor in sorted(holders.keys() - weight_map.keys()):
        found = holders[tensor]
        if len(found) > 1:
            yield artifact.observe("shards.tensor_duplicated", tensor=tensor, shards=",".join(found)[:300])
        else:
            yield artifact.observe("shards.unlisted_tensor", tensor=tensor, shard=found[0])


def _basename(name: str) -> str:
    return PurePosixPath(name.replace("\\", "/")).name


def _check_naming(artifact: Artifact, names: list[str]) -> Iterator[Observation]:
    """`prefix-NNNNN-of-NNNNN.ext` used by all shards or none, one total, every index present once."""
    matches = {name: SHARD_NAME.fullmatch(_basename(name)) for name in names}
    good = {name: m for name, m in matches.items() if m is not None}
    if not good:
        return
    odd = [name for name, m in matches.items() if m is None]
    if odd:
        yield artifact.observe("shards.naming", reason=f"{odd[0]} does not follow prefix-NNNNN-of-NNNNN")
    groups = {(m["prefix"], m["total"], m["ext"] or "") for m in good.values()}
    if len(groups) > 1:
        yield artifact.observe("shards.naming", reason="shards disagree on prefix, total or extension")
        return
    numbers = [m["total"] for m in good.values()] + [m["index"] for m in good.values()]
    if any(len(number.lstrip("0")) > MAX_SHARD_DIGITS for number in numbers):
        yield artifact.observe("shards.naming", reason="a shard number is too large to be a real count")
        return
    total = int(next(iter(good.values()))["total"])
    seen = sorted(int(m["index"]) for m in good.values())
    present = {i for i in seen if 1 <= i <= total}
    # The first gap is at most one past the shards present: never build 1..total (a name can say 10^40).
    missing = next((i for i in range(1, min(total, len(present) + 1) + 1) if i not in present), None)
    if missing is not None:
        yield artifact.observe("shards.naming", reason=f"shard {missing} of {total} is not in the index")
    extra = [i for i in seen if not 1 <= i <= total]
    if extra:
        yield artifact.observe("shards.naming", reason=f"shard number {extra[0]} is outside 1..{total}")


def _check_orphans(artifact: Artifact, folder: Path, names: list[str], ctx: ScanContext) -> Iterator[Observation]:
    """Files next to the index that look like its shards but are not named by it."""
    matches = [SHARD_NAME.fullmatch(_basename(n)) for n in names]
    exts = {m["ext"] or "" for m in matches if m is not None}
    if not exts:
        return
    known = set(names)
    try:
        entries = sorted(os.listdir(folder))[: ctx.limits.max_members]
    except OSError:
        return
    for entry in entries:
        match = SHARD_NAME.fullmatch(entry)
        if match and entry not in known and (match["ext"] or "") in exts and _is_file(folder / entry):
            yield artifact.observe("shards.orphan", shard=entry)
