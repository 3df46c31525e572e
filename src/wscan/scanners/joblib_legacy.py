"""joblib before 0.10: each array in a file beside the pickle, read by joblib.load as its unpickler meets it.

joblib 0.9 pickled an array as an NDArrayWrapper (ZNDArrayWrapper when compressed) whose state names a file.
joblib.load, in every version since, joins that name to the pickle's folder at the wrapper's BUILD and reads it:
with np.load(allow_pickle=True) (so an object array there, or a plain pickle, runs), or as raw zlib data. A name
that leaves the folder (a separator, `..`, a drive, a link out) or that the machine cannot read makes it read
anywhere: an observation the rules judge. A plain name is the file beside the pickle, scanned as part of it, as
the loader reads it; a missing one makes the load fail.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from wscan.limits import open_counted
from wscan.scanners.base import LOADER_FOLDER, Artifact, ScanContext, ScanItem
from wscan.scanners.pickle_values import Const, Sym, describe
from wscan.scanners.shards import folder_escape_reason

# The wrapper classes, by every name pickle records for them, and how joblib reads their file.
LEGACY_WRAPPERS = {
    "joblib.numpy_pickle.NDArrayWrapper": "numpy",
    "joblib.numpy_pickle_compat.NDArrayWrapper": "numpy",
    "joblib.numpy_pickle.ZNDArrayWrapper": "zlib",
    "joblib.numpy_pickle_compat.ZNDArrayWrapper": "zlib",
}


@dataclass(frozen=True)
class SideFile:
    """A wrapper's BUILD: where, which class, and the `filename` its state holds then (None: none set)."""

    offset: int
    wrapper: str
    name: Sym | None


def side_files(artifact: Artifact, found: list[SideFile], ctx: ScanContext) -> Iterator[ScanItem]:
    """The file each wrapper makes joblib.load read, as a blob of this file; a name that leaves the folder, or that
    cannot be read or placed (inside an archive joblib.load is not given a folder), as an observation."""
    seen: set[str] = set()
    for side in found:
        ctx.budget.check_time()
        text = side.name.value if isinstance(side.name, Const) else None
        if side.name is None:
            continue  # no file named: joblib's read fails
        if not isinstance(text, str):
            yield _outside(artifact, side, "the name is not a constant string")
            continue
        folder = _folder(artifact)
        if folder is None:
            yield _outside(artifact, side, "inside a container, the folder joblib.load reads from is unknown")
            continue
        try:  # ValueError: a name the file system cannot take (a lone surrogate)
            reason = folder_escape_reason(folder, text) or ("drive-relative name" if ":" in text else None)
            info = os.stat(folder / text) if reason is None else None
        except FileNotFoundError:
            continue  # nothing there: the load fails before anything is read
        except (OSError, ValueError) as exc:
            reason, info = f"cannot be opened: {type(exc).__name__}", None
        if reason is not None:
            yield _outside(artifact, side, str(reason))
            continue
        if info is None or not stat.S_ISREG(info.st_mode) or LEGACY_WRAPPERS[side.wrapper] != "numpy" or text in seen:
            continue  # a folder fails to load; raw zlib data is only bytes
        seen.add(text)
        ctx.budget.charge_read(0)  # nothing more is opened once the file's read budget is spent
        opener = partial(open_counted, folder / text, ctx.budget)
        yield artifact.child(text, info.st_size, opener, {"container": "joblib-side-file"})


def _folder(artifact: Artifact) -> Path | None:
    """Where joblib.load looks for the files: the pickle's folder, or the folder of the compressed file it is."""
    if artifact.real_path is not None:
        return artifact.real_path.parent
    where = artifact.context.get(LOADER_FOLDER)
    return Path(where) if isinstance(where, str) and where else None


def _outside(artifact: Artifact, side: SideFile, reason: str) -> ScanItem:
    shown = describe(side.name)[:200] if side.name is not None else ""
    return artifact.observe("pickle.side_file", side.offset, callable=side.wrapper, name=shown, reason=reason)
