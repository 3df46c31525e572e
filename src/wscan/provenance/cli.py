"""`wscan sign` and `wscan verify`: argument checking and output; the work is in `oms` and `verify`."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from wscan.config import Config, load_config
from wscan.errors import UsageError
from wscan.model import Severity
from wscan.output.text import lines_safe
from wscan.provenance.fingerprint import Fingerprint, changed, fingerprints
from wscan.provenance.oms import (
    DEFAULT_SIGNATURE,
    CertificateMethod,
    KeylessMethod,
    KeyMethod,
    Method,
)
from wscan.report import Report

if TYPE_CHECKING:
    from wscan.provenance.attest import Snapshot

EXIT_OK, EXIT_FINDINGS = 0, 1


def run(args: argparse.Namespace) -> int:
    """Sign or verify; usage problems raise UsageError (exit 2), verification problems are findings (exit 1)."""
    if not os.path.lexists(args.model):
        raise UsageError(f"no such model folder or file: {args.model}")
    model = _absolute(args.model)
    # A one-file model (OMS allows it) keeps its signature beside it.
    signature = _absolute(args.signature or (model if model.is_dir() else model.parent) / DEFAULT_SIGNATURE)
    ignore = ignore_paths(model, args.ignore_paths)
    if args.command == "sign":
        return _sign(args, model, signature, ignore)
    return _verify(args, model, signature, ignore)


def _absolute(path: Path) -> Path:
    """`path` made absolute once, by name (no link followed): the library joins ignore paths to the model path,
    and a relative model path made it join them twice (review 31)."""
    return Path(os.path.abspath(path))


def ignore_paths(model: Path, given: list[Path]) -> list[Path]:
    """`--ignore-paths` as absolute paths inside `model` (a relative one is taken inside the folder); one that
    is the folder itself (an empty value too) or lies outside it is a usage error."""
    from wscan.provenance.oms import ignored_names

    try:
        names = ignored_names(model, given)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return [model / name for name in names] if model.is_dir() else list(given)


def _sign(args: argparse.Namespace, model: Path, signature: Path, ignore: list[Path]) -> int:
    from wscan.provenance.oms import sign

    method = sign_method(args)
    try:
        sign(model, signature, ignore, method, args.shard_size)
    except Exception as exc:  # the library's errors (bad key, password, OIDC) are the user's to fix
        raise UsageError(f"signing failed: {type(exc).__name__}: {exc}") from None
    print(lines_safe(f"wscan: signed {model} -> {signature}"), file=sys.stderr)
    return EXIT_OK


def sign_method(args: argparse.Namespace) -> Method:
    """Key, certificate, or keyless (the default), from the sign options."""
    if args.signing_certificate is not None:
        if args.private_key is None:
            raise UsageError("--signing-certificate needs --private-key")
        return CertificateMethod(tuple(args.certificate_chain), args.private_key, args.signing_certificate)
    if args.private_key is not None:
        password = None
        if args.password_file is not None:
            try:
                password = args.password_file.read_bytes().rstrip(b"\r\n")
            except OSError as exc:
                raise UsageError(f"cannot read {args.password_file}: {exc}") from None
        return KeyMethod(args.private_key, password)
    return KeylessMethod(issuer=args.oidc_issuer, identity_token=args.identity_token, trust_config=args.trust_config)


def verify_method(args: argparse.Namespace) -> Method:
    """Public key, certificate chain, or keyless identity and issuer, from the verify options. Options of two
    methods together are a usage error: one was silently dropped, so `--identity` beside `--certificate-chain`
    looked like a pinned signer while any certificate of the CA verified (review 31)."""
    # `scan --attest` with a signing certificate shares --certificate-chain with the signer.
    chain = args.certificate_chain and not (getattr(args, "attest", False) and args.signing_certificate)
    given = [name for name, value in (("--public-key", args.public_key), ("--certificate-chain", chain),
                                      ("--identity/--issuer", args.identity or args.issuer)) if value]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} are different verification methods: give one "
                         "(--identity and --issuer are checked only in keyless verification)")
    if args.public_key is not None:
        return KeyMethod(args.public_key)
    if args.certificate_chain:
        return CertificateMethod(tuple(args.certificate_chain))
    if args.identity and args.issuer:
        return KeylessMethod(identity=args.identity, issuer=args.issuer, trust_config=args.trust_config)
    raise UsageError("verify needs --public-key, --certificate-chain, or --identity with --issuer")


def _checked(method: Method) -> Method:
    """`method` once its key or chain loads: an RSA, non-PEM or missing file is the user's to fix (exit 2), not a
    traceback. Keyless material is left to verification (building it may fetch the Sigstore trust root)."""
    from wscan.provenance.oms import verifier_for

    if isinstance(method, KeyMethod | CertificateMethod):
        try:
            verifier_for(method)
        except Exception as exc:
            what = "--public-key" if isinstance(method, KeyMethod) else "--certificate-chain"
            reason = "not an elliptic-curve key" if isinstance(exc, AttributeError) else f"{type(exc).__name__}: {exc}"
            raise UsageError(f"{what}: cannot be used to verify: {reason}") from None
    return method


def verify_into(report: Report, args: argparse.Namespace, config: Config,
                before: dict[Path, dict[str, Fingerprint]] | None = None) -> None:
    """`scan --verify`: verify every scanned folder and add what it found to the scan's report; a folder whose
    entries were rewritten since `before` (taken before the scan) is WS-SIG-023 too.

    Hashing reads each file once; the scanners read only the headers they need, so the two passes together
    cost one read of the bytes.
    """
    from wscan.provenance.verify import verify_model

    method = _checked(verify_method(args))
    for folder in _folders(args.paths, "--verify", args.signature is not None):
        verification = verify_model(folder, _absolute(args.signature or folder / DEFAULT_SIGNATURE), method,
                                    ignore_paths(folder, args.ignore_paths), config)
        merge(report, verification, folder)
        moved = changed(before[folder], fingerprints(folder)) if before and folder in before else []
        if moved:
            _changed_during_scan(report, config, folder, moved, "provenance.changed_during_verify")


def _folders(paths: list[Path], option: str, one_file_named: bool) -> list[Path]:
    """The scanned folders a provenance option applies to (one only when a single file is named for it)."""
    folders = [_absolute(p) for p in paths if p.is_dir()]
    if not folders:
        raise UsageError(f"{option} needs a model folder")
    if one_file_named and len(folders) > 1:
        raise UsageError(f"{option} with a named signature or attestation file takes one folder")
    return folders


def merge(report: Report, verification: Report, folder: Path | None = None) -> None:
    """Verification findings join the scan's; each file's worst severity covers both. Every finding of the
    verification of `folder` counts for that folder's model, even one located at a signature kept elsewhere."""
    report.findings = sorted([*report.findings, *verification.findings], key=lambda f: f.sort_key())
    report.rules.update(verification.rules)
    worst: dict[str, Severity] = {}
    for finding in verification.findings:
        path = finding.location.path
        worst[path] = max(worst.get(path, finding.severity), finding.severity)
    for i, result in enumerate(report.files):
        extra = worst.get(result.path)
        if extra is not None and (result.worst is None or extra > result.worst):
            report.files[i] = replace(result, worst=extra)
    for i, model in enumerate(report.models):
        if folder is not None and os.path.abspath(model.path) == os.path.abspath(folder):
            inside = list(worst.values())
        else:
            inside = [s for p, s in worst.items() if p == model.path or p.startswith(model.path.rstrip("/") + "/")]
        level = max([*inside, *([model.worst] if model.worst is not None else [])], default=None)
        if level is not None:
            verdict = "fail" if level >= report.fail_on else "pass"
            report.models[i] = replace(model, worst=level, verdict=verdict)


def attest_snapshots(args: argparse.Namespace) -> dict[Path, Snapshot]:
    """`scan --attest`, before the scan: each folder as it is, to check the scanned bytes are the attested ones. A
    folder the library will not hash (a symbolic link or a FIFO in it) is a usage error, as for `wscan sign`."""
    from wscan.provenance.attest import DEFAULT_ATTESTATION, snapshot

    snapshots = {}
    for folder in _folders(args.paths, "--attest", args.attestation is not None):
        output = _absolute(args.attestation or folder / DEFAULT_ATTESTATION)
        try:
            snapshots[folder] = snapshot(folder, ignore_paths(folder, args.ignore_paths), output)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot attest {folder}: {type(exc).__name__}: {exc}") from None
    return snapshots


def verify_snapshots(args: argparse.Namespace) -> dict[Path, dict[str, Fingerprint]]:
    """`scan --verify`, before the scan: what each folder's entries are, to tell whether any was rewritten by the
    time it is verified (the scan would have judged other bytes than the ones verified)."""
    return {folder: fingerprints(folder) for folder in _folders(args.paths, "--verify", args.signature is not None)}


def attest_folders(report: Report, args: argparse.Namespace, snapshots: dict[Path, Snapshot] | None = None) -> None:
    """`scan --attest`: sign, per scanned folder, what this scan found in exactly these bytes, and the effect of
    the config it ran with (a config that ignores or lowers rules can make any model "clean"). A folder whose
    files changed since its snapshot (taken before the scan) is not attested: WS-SIG-021 instead."""
    from wscan.provenance.attest import DEFAULT_ATTESTATION, FolderChanged, attest, scan_settings

    method = sign_method(args)
    folders = _folders(args.paths, "--attest", args.attestation is not None)
    config = _scan_config(report, args)
    unfiltered = None
    if config.ignores or config.severity or config.rule_files:
        # What they hid: the same scan with the built-in rules and only the config's allowed callables, which are
        # recorded and reported on their own (costs a second scan).
        from wscan.engine import Engine

        builtin = Config(fail_on=config.fail_on, allow=config.allow, limits=config.limits, jobs=config.jobs)
        unfiltered = Engine(builtin).scan(folders)
    for folder in folders:
        output = _absolute(args.attestation or folder / DEFAULT_ATTESTATION)
        ignore = ignore_paths(folder, args.ignore_paths)
        settings = scan_settings(config, report, folder, unfiltered)
        try:
            digest = attest(folder, report, method, output, ignore, settings,
                            before=(snapshots or {}).get(folder))
        except FolderChanged as changed:
            _changed_during_scan(report, config, folder, changed.files, "provenance.changed_during_scan")
            continue
        except Exception as exc:  # key, password or OIDC problems are the user's to fix
            raise UsageError(f"attestation failed: {type(exc).__name__}: {exc}") from None
        print(lines_safe(f"wscan: attested {folder} (sha256 {digest[:16]}...) -> {output}"), file=sys.stderr)


def _changed_during_scan(report: Report, config: Config, folder: Path, files: list[str], kind: str) -> None:
    """WS-SIG-021 (not attested) or WS-SIG-023 (verified bytes the scan may not have read) into the scan's report:
    the folder changed while it was scanned."""
    from wscan.discover import display_path
    from wscan.model import Location, Observation
    from wscan.rules import RuleSet

    shown = ", ".join(files[:5]) + (", ..." if len(files) > 5 else "")
    observation = Observation(kind, Location(display_path(folder)), {"files": shown, "count": len(files)})
    rules = RuleSet.load(config)
    verification = Report(report.tool_version, report.rules_digest, report.fail_on)
    verification.findings = list(rules.judge([observation]))
    found = {finding.rule_id for finding in verification.findings}
    verification.rules = {k: v for k, v in rules.info().items() if k in found}
    merge(report, verification, folder)
    what = "not attested" if kind == "provenance.changed_during_scan" else "verified bytes may not be the scanned ones"
    print(lines_safe(f"wscan: {what}: {folder} changed while it was scanned ({shown})"), file=sys.stderr)


def _scan_config(report: Report, args: argparse.Namespace) -> Config:
    """The config the scan ran with: its file (already read once by the scan), with the command line's
    threshold, limits and jobs as the report records them."""
    from wscan.limits import Limits

    config = Config.load(getattr(args, "config", None))
    limits = Limits.from_mapping(dict(report.limits)) if report.limits else config.limits
    return replace(config, fail_on=report.fail_on, limits=limits, jobs=getattr(args, "jobs", None) or config.jobs)


def _verify(args: argparse.Namespace, model: Path, signature: Path, ignore: list[Path]) -> int:
    from wscan.cli import emit
    from wscan.output import render
    from wscan.provenance.verify import verify_model

    method = _checked(verify_method(args))
    config = load_config(args.config)
    if args.fail_on:
        config = replace(config, fail_on=Severity.parse(args.fail_on))
    attestation = args.attestation is not None
    report = verify_model(model, _absolute(args.attestation) if attestation else signature, method, ignore, config,
                          attestation=attestation)
    emit(render(report, args.format), args.output)
    return EXIT_FINDINGS if report.failed else EXIT_OK
