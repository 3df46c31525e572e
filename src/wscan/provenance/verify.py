"""Verify a model folder against its OMS signature and say precisely what differs, as findings.

The signature is checked first (by `model_signing`); then the folder is hashed the way the signature says it
was hashed and compared file by file, so a report names the file that changed, appeared, disappeared, moved
or became a symbolic link, instead of one "mismatch". Whatever the walk cannot vouch for is a finding too:
a signature file that is a link, a FIFO, socket or device node, a folder that cannot be listed.
"""

from __future__ import annotations

import math
import os
import posixpath
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from wscan import __version__
from wscan.config import Config
from wscan.discover import display_path
from wscan.lookup import walk as walk_folders
from wscan.model import AttrValue, Location, Observation, Severity
from wscan.provenance.oms import (
    GIT_PATHS,
    MAX_SHARDS,
    Method,
    Resource,
    SignatureProblem,
    hash_model,
    hashing_for,
    signed_manifest,
)
from wscan.report import FILE_SCANNED, FileResult, Report
from wscan.rules import RuleSet

SHARD_SEPARATOR = ":"


def verify_model(
    model_dir: Path,
    signature: Path,
    method: Method,
    ignore: Sequence[Path],
    config: Config,
    attestation: bool = False,
) -> Report:
    """A report of the verification (of a signature, or of a scan attestation), judged by the rules."""
    started = time.monotonic()
    rules = RuleSet.load(config)
    if attestation:
        observations, files = observe_attestation(model_dir, signature, method, ignore, rules.digest,
                                                  config.fail_on)
    else:
        observations, files = observe(model_dir, signature, method, ignore)
    report = Report(__version__, rules.digest, config.fail_on, limits=config.limits.as_dict())
    report.findings = sorted(rules.judge(observations), key=lambda f: f.sort_key())
    for path, size in files:
        severity = max((f.severity for f in report.findings if f.location.path == path), default=None)
        report.files.append(FileResult(path, size, ("oms-signature",), FILE_SCANNED, "", severity))
    report.rules = rules.info()
    report.duration_seconds = round(time.monotonic() - started, 3)
    return report


def observe(
    model_dir: Path, signature: Path, method: Method, ignore: Sequence[Path]
) -> tuple[list[Observation], list[tuple[str, int]]]:
    """Observations of one signature verification, and the (display path, size) of every file it hashed."""
    signature_location = Location(display_path(signature))
    link = _signature_link(model_dir, signature)  # before anything else: model_signing refuses a linked signature
    try:
        manifest, hashing = signed_manifest(signature, method)
    except SignatureProblem as problem:
        return [*link, Observation(problem.kind, signature_location, {"reason": problem.reason})], []
    observations, files, count = _against(model_dir, signature, manifest.resources, manifest.serialization,
                                          hashing, ignore)
    observations = [*link, *observations]
    if all(o.kind in NOTES for o in observations):
        signer = _describe(method) + (f" (certificate {manifest.leaf})" if manifest.leaf else "")
        facts: dict[str, AttrValue] = {"files": count, "signer": signer,
                                       "method": str(manifest.serialization.get("method", ""))}
        observations.append(Observation("provenance.verified", signature_location, facts))
    return observations, files


def observe_attestation(
    model_dir: Path,
    path: Path,
    method: Method,
    ignore: Sequence[Path],
    rules_digest: str,
    fail_on: Severity = Severity.HIGH,
) -> tuple[list[Observation], list[tuple[str, int]]]:
    """A scan attestation: its signature, then the folder against the digests it attests."""
    from wscan.provenance.attest import attestation_observations, read_attestation

    location = Location(display_path(path))
    link = _signature_link(model_dir, path)
    try:
        attested = read_attestation(path, method)
        serialization = dict(attested.predicate.get("serialization", {}))
        hashing = hashing_for(serialization)
    except SignatureProblem as problem:
        return [*link, Observation(problem.kind, location, {"reason": problem.reason})], []
    observations, files, _ = _against(model_dir, path, attested.resources, serialization, hashing, ignore)
    facts = attestation_observations(attested, location, rules_digest, model_dir, fail_on)
    return [*link, *observations, *facts], files


def _against(
    model_dir: Path,
    signature: Path,
    resources: Sequence[Resource],
    serialization: dict[str, object],
    hashing: object,
    ignore: Sequence[Path],
) -> tuple[list[Observation], list[tuple[str, int]], int]:
    """The folder hashed the signed way and compared with the signed resources, file by file."""
    raw_ignores = serialization.get("ignore_paths", [])
    signed_ignores = [str(p) for p in raw_ignores] if isinstance(raw_ignores, list) else []
    user_ignores = [_lexical(model_dir, p) for p in ignore]
    # The signature is left out by the name it was given, never by what it points to: a linked signature
    # would otherwise take its target (an unsigned file the attacker named) out of the comparison.
    ignores = [*signed_ignores, *user_ignores, _lexical(model_dir, signature)]
    walk = _walk(model_dir, ignores) if model_dir.is_dir() else _walk_one(model_dir)
    sharded = serialization.get("method") == "shards"
    expected_files = _by_file(resources, sharded)
    too_many = _too_many_shards(serialization, walk.regular) if sharded else None
    if too_many is not None:
        return [Observation("provenance.signature_invalid", Location(display_path(signature)),
                            {"reason": too_many})], [], 0
    try:
        actual = hash_model(model_dir, hashing, ignores, _to_hash(model_dir, walk.regular, set(expected_files)))
    except (OSError, ValueError) as exc:  # a file swapped (for a link, a FIFO) or removed after the walk
        reason = f"the model changed while it was hashed: {type(exc).__name__}: {exc}".replace("\n", " ")[:300]
        return [Observation("provenance.unlisted", Location(display_path(model_dir)),
                            {"file": ".", "reason": reason})], [], 0
    actual_files = _by_file(actual, sharded)
    if model_dir.is_dir():
        # Every regular file counts, whatever its size: an empty file makes no shard, hence no resource.
        for path in walk.regular:
            actual_files.setdefault(path.relative_to(model_dir).as_posix(), ())
    observations = [*_covers_nothing(signature, resources, signed_ignores),
                     *_compare(model_dir, expected_files, actual_files, walk)]
    left_out = _left_out_by_signer(walk.ignored, [*user_ignores, _lexical(model_dir, signature)])
    if left_out and not any(o.kind == "provenance.covers_nothing" for o in observations):
        shown = ", ".join(left_out[:5]) + (", ..." if len(left_out) > 5 else "")
        observations.append(Observation("provenance.signer_ignored", Location(display_path(signature)),
                                        {"files": shown, "count": len(left_out)}))
    files = [(display_path(model_dir / name), _size(model_dir / name)) for name in sorted(actual_files)]
    return observations, files, len(actual_files)


Files = dict[str, tuple[Resource, ...]]


def _to_hash(model_dir: Path, regular: list[Path], signed: set[str]) -> list[Path]:
    """The files to hash: the `signed` ones, or every one when a signed file is missing (an added file may be it,
    renamed). Files added beside all the signed ones are reported unread: helper 234's 15 TiB sparse file was
    hashed in full before being reported as added."""
    if not model_dir.is_dir():
        return regular
    named = {path.relative_to(model_dir).as_posix(): path for path in regular}
    if signed - named.keys():
        return regular
    return [path for name, path in named.items() if name in signed]


def _too_many_shards(serialization: dict[str, object], regular: list[Path]) -> str | None:
    """Why a signed shard size cannot be hashed here: the library makes one task per shard, and a shard size of one
    byte held gigabytes for a megabyte model (helper 234)."""
    given = serialization.get("shard_size")  # a number, read back from JSON as a float or an int
    if (isinstance(given, bool) or not isinstance(given, int | float) or not math.isfinite(given) or given < 1
            or given != int(given)):
        return None  # refused by the library's own reading (hashing_for)
    size = int(given)
    shards = sum(-(-_size(path) // size) for path in regular)
    if shards <= MAX_SHARDS:
        return None
    return f"shard_size {size} makes {shards:,} shards of these files, more than {MAX_SHARDS:,}"


NOTES = frozenset({"provenance.signer_ignored"})  # reported beside WS-SIG-009, not instead of it
OWN_NAMES = ("model.sig", "wscan.attestation.sig")  # signatures and attestations, which signers leave out


def _left_out_by_signer(ignored: Sequence[str], ours: Sequence[str]) -> list[str]:
    """Entries present but left out only by the signer's own ignore paths: not git files, not a signature or
    attestation, not what this verification was told to ignore. "Verified" says nothing about them."""
    quiet = [PurePosixPath(p) for p in (*GIT_PATHS, *ours)]
    return sorted(name for name in ignored if PurePosixPath(name).name not in OWN_NAMES
                  and not any(PurePosixPath(name).is_relative_to(q) for q in quiet))


def _covers_nothing(signature: Path, resources: Sequence[Resource], signed_ignores: Sequence[str]) -> list[Observation]:
    """A signature whose ignore paths take in the whole folder, or that lists no file: it verifies any folder
    it is copied into (model_signing accepts it; `wscan sign --ignore-paths ""` once made one)."""
    whole = [p for p in signed_ignores if posixpath.normpath(p) == "."]
    if whole:
        reason = f"its signed ignore paths include {whole[0]!r}, which leaves out the whole folder"
    elif not resources:
        reason = "it lists no file"
    else:
        return []
    return [Observation("provenance.covers_nothing", Location(display_path(signature)), {"reason": reason})]



@dataclass
class Walk:
    """What a model folder holds, by kind; nothing is followed or opened."""

    links: list[str] = field(default_factory=list)  # symbolic links (relative names)
    regular: list[Path] = field(default_factory=list)  # regular files
    special: list[tuple[str, str]] = field(default_factory=list)  # (relative name, "FIFO" | "socket" | ...)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (relative name, why it could not be read)
    ignored: list[str] = field(default_factory=list)  # entries an ignore path left out (a folder as one)


def _compare(model_dir: Path, expected: Files, actual: Files, walk: Walk) -> list[Observation]:
    def at(name: str) -> Location:
        return Location(display_path(model_dir / name))

    observations: list[Observation] = []
    for name, reason in walk.unreadable:
        observations.append(Observation("provenance.unlisted", at(name), {"file": name, "reason": reason}))
    links = set(walk.links)
    special = dict(walk.special)
    unread = {name for name, _ in walk.unreadable}
    removed = sorted(set(expected) - set(actual) - unread)  # an unreadable file is reported as that, not missing
    added = sorted(set(actual) - set(expected))
    for name in sorted(set(expected) & set(actual)):
        if expected[name] != actual[name]:
            observations.append(Observation("provenance.file_modified", at(name), {"file": name}))
    renamed: set[str] = set()
    for old in removed:
        if old in links:
            observations.append(Observation("provenance.symlink", at(old), {"file": old, "signed": True,
                                                                             "target": _target(model_dir / old)}))
            continue
        if old in special:
            continue  # reported below, as what it now is
        new = next((n for n in added if n not in renamed and _digests(actual[n]) == _digests(expected[old])), None)
        if new is not None:
            renamed.add(new)
            observations.append(Observation("provenance.file_renamed", at(new), {"file": new, "was": old}))
        else:
            observations.append(Observation("provenance.file_removed", at(old), {"file": old}))
    for name in added:
        if name not in renamed:
            observations.append(Observation("provenance.file_added", at(name), {"file": name}))
    for name in walk.links:
        if name not in expected:
            observations.append(Observation("provenance.symlink", at(name), {"file": name, "signed": False,
                                                                              "target": _target(model_dir / name)}))
    for name, kind in walk.special:
        observations.append(Observation("provenance.special_file", at(name),
                                        {"file": name, "type": kind, "signed": name in expected}))
    return observations


def _by_file(resources: Sequence[Resource], sharded: bool) -> dict[str, tuple[Resource, ...]]:
    """Resources grouped by file: shard identifiers are `path:start:end`, file identifiers are the path (which
    may hold colons of its own: `model.safetensors:0:1` is a file name under the `files` method)."""
    files: dict[str, list[Resource]] = {}
    for resource in resources:
        name = resource.identifier
        parts = name.rsplit(SHARD_SEPARATOR, 2)
        if sharded and len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            name = parts[0]
        files.setdefault(name, []).append(resource)
    return {name: tuple(sorted(group, key=lambda r: r.identifier)) for name, group in files.items()}


def _digests(resources: tuple[Resource, ...]) -> tuple[tuple[str, str], ...]:
    """What a file's content is, whatever its name (for rename detection)."""
    return tuple((r.algorithm, r.digest) for r in resources)


_SPECIAL = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
            (stat.S_ISBLK, "block device"))


def _walk(model_dir: Path, ignores: Sequence[str]) -> Walk:
    """Every entry under `model_dir` by kind (links are never followed: a link can leave the model). An entry
    that is not a regular file, folder or link, and a folder that cannot be listed, is kept too: a loader may
    still open it by name, so skipping it would vouch for bytes nobody checked."""
    walk = Walk()
    ignored = [PurePosixPath(p) for p in ignores]

    def relative(path: Path | str) -> str:
        return Path(path).relative_to(model_dir).as_posix()

    for folder in walk_folders(model_dir):
        if folder.error is not None:
            walk.unreadable.append((relative(folder.path), folder.error.strerror or type(folder.error).__name__))
            continue
        keep: list[str] = []
        for entry in folder.entries:
            name, path = entry.name, folder.path / entry.name
            rel = relative(path)
            if any(PurePosixPath(rel).is_relative_to(p) for p in ignored):
                walk.ignored.append(rel)
                continue
            try:
                mode = os.lstat(path).st_mode
            except OSError as exc:
                walk.unreadable.append((rel, exc.strerror or type(exc).__name__))
                continue
            if stat.S_ISLNK(mode):
                walk.links.append(rel)
            elif stat.S_ISDIR(mode):
                keep.append(name)
            elif stat.S_ISREG(mode):
                problem = _unopenable(path)  # hashing it would fail mid-way, for every file at once
                if problem is None:
                    walk.regular.append(path)
                else:
                    walk.unreadable.append((rel, problem))
            else:
                walk.special.append((rel, next((k for test, k in _SPECIAL if test(mode)), "special file")))
        folder.folders[:] = [d for d in folder.folders if d in keep]
    walk.links.sort()
    walk.special.sort()
    walk.unreadable.sort()
    return walk


def _walk_one(path: Path) -> Walk:
    """A one-file model by kind, as `_walk` sees each file of a folder (the library refuses a link or a FIFO).
    Its name is ".", as the library names a one-file model's resource."""
    name = "."
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return Walk(unreadable=[(name, exc.strerror or type(exc).__name__)])
    if stat.S_ISLNK(mode):
        return Walk(links=[name])
    if not stat.S_ISREG(mode):
        return Walk(special=[(name, next((k for test, k in _SPECIAL if test(mode)), "special file"))])
    problem = _unopenable(path)
    return Walk(regular=[path]) if problem is None else Walk(unreadable=[(name, problem)])


def _unopenable(path: Path) -> str | None:
    """Why a regular file cannot be opened for reading, or None when it can (nothing is read)."""
    try:
        os.close(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)))
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _signature_link(model_dir: Path, signature: Path) -> list[Observation]:
    """A signature (or attestation) file that is a symbolic link: model_signing refuses one, and its target
    is whatever file the link names, so it is reported first, whatever the rest of the check says."""
    if not signature.is_symlink():
        return []
    name = _lexical(model_dir, signature)
    return [Observation("provenance.symlink", Location(display_path(signature)),
                        {"file": name, "signed": False, "target": _target(signature), "role": "signature"})]


def _lexical(model_dir: Path, path: Path) -> str:
    """`path` relative to the model folder by its name: its last component is never followed (a linked
    signature must not take its target out of the comparison), the folders above it may be. A path outside
    the folder comes back absolute, so it matches nothing inside (as in model_signing): given relative, a
    signature `config.json` in the working directory would otherwise leave the model's config.json out."""
    base = model_dir if model_dir.is_dir() else model_dir.parent
    absolute = os.path.abspath(path)
    real = os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))
    for name in (os.path.relpath(absolute, os.path.abspath(base)), os.path.relpath(real, os.path.realpath(base))):
        if name != ".." and not name.startswith(".." + os.sep):
            return Path(name).as_posix()
    return Path(absolute).as_posix()


def _target(path: Path) -> str:
    try:
        return os.readlink(path)[:200]
    except OSError:
        return ""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _describe(method: Method) -> str:
    from wscan.provenance.oms import CertificateMethod, KeyMethod

    if isinstance(method, KeyMethod):
        return f"key {method.key.name}"
    if isinstance(method, CertificateMethod):
        return f"certificate chain {', '.join(p.name for p in method.chain)}"
    return f"{method.identity} via {method.issuer}"
