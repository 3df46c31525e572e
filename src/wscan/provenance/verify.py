"""Verify a model folder against its OMS signature and say precisely what differs, as findings.

The signature is checked first (by `model_signing`); then the folder is hashed the way the signature says it
was hashed and compared file by file, so a report names the file that changed, appeared, disappeared, moved
or became a symbolic link, instead of one "mismatch".
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from wscan import __version__
from wscan.config import Config
from wscan.discover import display_path
from wscan.model import AttrValue, Location, Observation
from wscan.provenance.oms import Method, Resource, SignatureProblem, hash_model, hashing_for, signed_manifest
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
        observations, files = observe_attestation(model_dir, signature, method, ignore, rules.digest)
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
    try:
        manifest, hashing = signed_manifest(signature, method)
    except SignatureProblem as problem:
        return [Observation(problem.kind, signature_location, {"reason": problem.reason})], []
    observations, files, count = _against(model_dir, signature, manifest.resources, manifest.serialization,
                                          hashing, ignore)
    if not observations:
        facts: dict[str, AttrValue] = {"files": count, "signer": _describe(method),
                                       "method": str(manifest.serialization.get("method", ""))}
        observations.append(Observation("provenance.verified", signature_location, facts))
    return observations, files


def observe_attestation(
    model_dir: Path, path: Path, method: Method, ignore: Sequence[Path], rules_digest: str
) -> tuple[list[Observation], list[tuple[str, int]]]:
    """A scan attestation: its signature, then the folder against the digests it attests."""
    from wscan.provenance.attest import attestation_observations, read_attestation

    location = Location(display_path(path))
    try:
        attested = read_attestation(path, method)
        serialization = dict(attested.predicate.get("serialization", {}))
        hashing = hashing_for(serialization)
    except SignatureProblem as problem:
        return [Observation(problem.kind, location, {"reason": problem.reason})], []
    observations, files, _ = _against(model_dir, path, attested.resources, serialization, hashing, ignore)
    return [*observations, *attestation_observations(attested, location, rules_digest)], files


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
    user_ignores = [_relative(model_dir, p) for p in ignore]
    excluded = {signature.resolve(), *(model_dir / p for p in [*signed_ignores, *user_ignores])}
    links, regular = _walk(model_dir, excluded) if model_dir.is_dir() else ([], [model_dir])
    actual = hash_model(model_dir, hashing, [*signed_ignores, *user_ignores, _relative(model_dir, signature)], regular)
    observations = _compare(model_dir, _by_file(resources), _by_file(actual), links)
    files = [(display_path(model_dir / name), _size(model_dir / name)) for name in sorted(_by_file(actual))]
    return observations, files, len(_by_file(actual))


Files = dict[str, tuple[Resource, ...]]


def _compare(model_dir: Path, expected: Files, actual: Files, links: list[str]) -> list[Observation]:
    def at(name: str) -> Location:
        return Location(display_path(model_dir / name))

    observations: list[Observation] = []
    removed = sorted(set(expected) - set(actual))
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
        new = next((n for n in added if n not in renamed and _digests(actual[n]) == _digests(expected[old])), None)
        if new is not None:
            renamed.add(new)
            observations.append(Observation("provenance.file_renamed", at(new), {"file": new, "was": old}))
        else:
            observations.append(Observation("provenance.file_removed", at(old), {"file": old}))
    for name in added:
        if name not in renamed:
            observations.append(Observation("provenance.file_added", at(name), {"file": name}))
    for name in links:
        if name not in expected:
            observations.append(Observation("provenance.symlink", at(name), {"file": name, "signed": False,
                                                                              "target": _target(model_dir / name)}))
    return observations


def _by_file(resources: Sequence[Resource]) -> dict[str, tuple[Resource, ...]]:
    """Resources grouped by file: shard identifiers are `path:start:end`."""
    files: dict[str, list[Resource]] = {}
    for resource in resources:
        name = resource.identifier
        parts = name.rsplit(SHARD_SEPARATOR, 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            name = parts[0]
        files.setdefault(name, []).append(resource)
    return {name: tuple(sorted(group, key=lambda r: r.identifier)) for name, group in files.items()}


def _digests(resources: tuple[Resource, ...]) -> tuple[tuple[str, str], ...]:
    """What a file's content is, whatever its name (for rename detection)."""
    return tuple((r.algorithm, r.digest) for r in resources)


def _walk(model_dir: Path, excluded: set[Path]) -> tuple[list[str], list[Path]]:
    """Symbolic links (relative names, never followed: a link can leave the model) and regular files."""
    links: list[str] = []
    regular: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(model_dir):
        base = Path(dirpath)
        for name in [*dirnames, *filenames]:
            path = base / name
            if path in excluded:
                continue
            if path.is_symlink():
                links.append(path.relative_to(model_dir).as_posix())
            elif name in filenames and path.is_file():
                regular.append(path)
        dirnames[:] = [d for d in dirnames if not (base / d).is_symlink() and (base / d) not in excluded]
    return sorted(links), regular


def _relative(model_dir: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(model_dir.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


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
