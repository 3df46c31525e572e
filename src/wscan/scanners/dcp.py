"""torch.distributed.checkpoint: the items a `.metadata` file names, scanned where the loader reads them.

`dcp.load` unpickles `.metadata` (plain pickle.load), then reads each item from the file its `_StorageInfo` names,
at its offset and length, and torch.loads it: the non-tensor items with weights_only=False. What is read is
decided by the metadata, not by how the `.distcp` files are laid out (a review pointed an item into a tensor's
bytes), so each slice the metadata names is scanned as a blob of its own, and a slice the scanner cannot place
is a finding.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from wscan.limits import open_counted
from wscan.scanners.base import Artifact, ScanContext, ScanItem
from wscan.scanners.pickle_values import Const, Dict, Obj, PickleResult, Seq
from wscan.scanners.pickle_vm import STORAGE_INFO
from wscan.scanners.shards import folder_escape_reason
from wscan.scanners.slice import open_slice

METADATA_NAME = re.compile(r"(__\d+)?\.metadata")  # FileSystemReader's `.metadata`, or `__<rank>.metadata`


def is_metadata(artifact: Artifact, res: PickleResult) -> bool:
    """A top-level `.metadata` whose pickle makes storage records."""
    return (
        artifact.real_path is not None
        and METADATA_NAME.fullmatch(artifact.real_path.name) is not None
        and STORAGE_INFO in res.imports
    )


def item_blobs(artifact: Artifact, res: PickleResult, ctx: ScanContext) -> Iterator[ScanItem]:
    """Every slice the metadata names, as a blob; what cannot be placed or opened, as an observation."""
    assert artifact.real_path is not None
    folder = artifact.real_path.parent
    records, unread = _records(res)
    if unread:
        yield artifact.observe("dcp.item_unread", reason=unread)
    seen: set[tuple[str, int, int]] = set()
    for path, offset, length in records:
        ctx.budget.check_time()
        ctx.budget.charge_read(0)  # nothing more is opened once the file's read budget is spent
        if (path, offset, length) in seen:
            continue
        seen.add((path, offset, length))
        if len(seen) > ctx.limits.max_members:
            yield artifact.observe("dcp.item_unread", reason=f"more than {ctx.limits.max_members} items")
            return
        found = _item_file(folder, path)
        if found is None:
            yield artifact.observe("dcp.item_outside", path=path[:200])
            continue
        target, size = found
        if offset >= size:
            continue  # nothing there: the loader reads no bytes
        length = min(length, size - offset)
        opener = partial(open_slice, partial(open_counted, target, ctx.budget), offset, length)
        yield artifact.child(f"{path}@{offset}", length, opener, {"container": "dcp-item"})


def _item_file(folder: Path, name: str) -> tuple[Path, int] | None:
    """The regular file `name` names in `folder`, and its size, if it is one. The reader joins the name to the
    checkpoint folder as given; it is judged as a shard index's names are (a Hugging Face snapshot's links into
    its blobs stay inside)."""
    try:  # ValueError: a name the file system cannot take (a lone surrogate)
        if folder_escape_reason(folder, name) is not None:
            return None
        info = os.stat(folder / name)
    except (OSError, ValueError):
        return None
    return (folder / name, info.st_size) if stat.S_ISREG(info.st_mode) else None


def _records(res: PickleResult) -> tuple[list[tuple[str, int, int]], str]:
    """(relative_path, offset, length) of every _StorageInfo the pickle makes, and why some could not be read."""
    records: list[tuple[str, int, int]] = []
    unread = "more storage records than can be kept" if res.storage_infos_dropped else ""
    for info in res.storage_infos:
        record = _record(info)
        if record is None:
            unread = "an item's file, offset or length is not a constant"
        else:
            records.append(record)
    return records, unread


def _record(info: Obj) -> tuple[str, int, int] | None:
    """A record's fields, from its restored state (a dataclass pickles as NEWOBJ, then BUILD of its dict) or its
    constructor's arguments."""
    fields: dict[str, object] = {}
    if isinstance(info.args, Seq):
        for name, item in zip(("relative_path", "offset", "length"), info.args.items, strict=False):
            fields[name] = item.value if isinstance(item, Const) else None
    state = info.state
    if isinstance(state, Seq) and state.type == "tuple" and state.items:  # (dict, slots)
        state = state.items[0]
    if isinstance(state, Dict):
        for key, item in state.items:
            if isinstance(key, Const) and isinstance(key.value, str):
                fields[key.value] = item.value if isinstance(item, Const) else None
    path, offset, length = fields.get("relative_path"), fields.get("offset"), fields.get("length")
    if isinstance(path, str) and isinstance(offset, int) and isinstance(length, int) and offset >= 0 and length >= 0:
        return path, offset, length
    return None
