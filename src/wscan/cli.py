"""Command line: `wscan [scan] PATH...`, `wscan sign|verify MODEL_DIR` and `wscan rules list|show ID`.

Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 usage, config or I/O error.
UsageError is the one error type caught here; anything a scanned file does ends up in the report.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from wscan import __version__
from wscan.config import load_config
from wscan.errors import UsageError
from wscan.limits import Limits
from wscan.model import Severity

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
COMMANDS = ("scan", "rules", "sign", "verify")
SEVERITIES = [s.label for s in Severity]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wscan",
        description="Scan machine-learning model files for code execution and tampering; never loads them.",
        epilog="`wscan PATH...` is short for `wscan scan PATH...`. Exit: 0 clean, 1 findings, 2 usage error.",
    )
    parser.add_argument("--version", action="version", version=f"wscan {__version__}")
    sub = parser.add_subparsers(dest="command")
    scan = sub.add_parser("scan", help="scan files and folders (the default)")
    scan.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    scan.add_argument("--format", choices=["text", "json", "sarif"], default="text")
    scan.add_argument("-o", "--output", type=Path, help="write the report here instead of standard output")
    scan.add_argument(
        "--fail-on", choices=SEVERITIES, help="lowest severity that fails the scan (default high)"
    )
    scan.add_argument("--config", type=Path, help="config file (read only when named: none by default)")
    scan.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    scan.add_argument("--jobs", type=_positive_int, metavar="N",
                      help="files scanned at once (default: one per core, at most 8)")
    scan.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                      help="override a limit, e.g. --limit max-seconds-per-file=60 (see `limits` in the report)")
    scan.add_argument("--verify", action="store_true",
                      help="also verify each scanned folder against its signature (options as for `wscan verify`)")
    _signature_options(scan)
    _verify_options(scan)
    scan.add_argument("--attest", action="store_true",
                      help="sign a scan attestation of each scanned folder (signing options as for `wscan sign`)")
    scan.add_argument("--attestation", type=Path, help="attestation file (default FOLDER/wscan.attestation.sig)")
    _signer_options(scan)
    _signing_parsers(sub)
    rules = sub.add_parser("rules", help="document the rules in force")
    rules.add_argument("action", choices=["list", "show"], nargs="?", default="list")
    rules.add_argument("rule_id", nargs="?", metavar="ID")
    rules.add_argument("--config", type=Path)
    return parser


def console() -> None:
    """The `wscan` command: `main`, then, after a plain scan, out at once without tearing the interpreter down.
    Freeing the heap a scan built (rules, parsers, the report) took 50 ms after the report was written, for memory
    the system takes back anyway. Signing and verifying exit as usual: their libraries may leave work to atexit.

    The cyclic garbage collector is off in this process where files are scanned in forked workers (which turn it
    back on for themselves: a hostile file may make cycles): what this process makes (modules, rules, the report)
    lives until it exits, and collecting it again and again took 13 ms of a scan's start-up."""
    if hasattr(os, "fork"):
        gc.disable()
    parser, args = _parse(sys.argv[1:])
    code = _run(parser, args)
    if args.command == "scan" and not (args.attest or args.verify):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed or broken stream: Python's own exit reports it
            sys.exit(code)
        _reap_workers()
        os._exit(code)
    sys.exit(code)


def _reap_workers() -> None:
    """Wait for the killed workers, as multiprocessing does at exit: their CPU time is then this process's
    (`time`, the benchmark), and none is left a zombie."""
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None:
        for child in multiprocessing.active_children():
            child.join()


def main(argv: list[str] | None = None) -> int:
    """Run one command line (`wscan ...` without the program name) and return its exit code."""
    return _run(*_parse(sys.argv[1:] if argv is None else argv))


def _parse(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser and the parsed command line (`wscan PATH...` is `wscan scan PATH...`). The standard streams are
    made to take any text first: argparse may echo a name back."""
    from wscan.output.text import tolerate_encoding

    tolerate_encoding(sys.stdout, sys.stderr)
    args_list = list(argv)
    if args_list and args_list[0] not in (*COMMANDS, "-h", "--help", "--version"):
        args_list.insert(0, "scan")
    parser = _parser()
    return parser, parser.parse_args(args_list)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        if args.command == "scan":
            return _scan(args)
        if args.command == "rules":
            return _rules(args, sys.stdout)
        if args.command in ("sign", "verify"):
            from wscan.provenance.cli import run

            return run(args)
        parser.print_help()
        return EXIT_USAGE
    except UsageError as exc:
        from wscan.output.text import lines_safe

        print(f"wscan: error: {lines_safe(str(exc))}", file=sys.stderr)
        return EXIT_USAGE



def _signing_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`sign` and `verify`, with model_signing's options in kebab case so users can switch tools."""
    sign = sub.add_parser("sign", help="sign every file of a model (OpenSSF Model Signing, Sigstore bundle)")
    verify = sub.add_parser("verify", help="verify a model against its signature, naming every difference")
    for command in (sign, verify):
        command.add_argument("model", type=Path, metavar="MODEL_DIR")
        _signature_options(command)
    sign.add_argument("--trust-config", type=Path, help="Sigstore ClientTrustConfig (private deployment)")
    sign.add_argument("--certificate-chain", type=Path, nargs="+", default=[], metavar="PEM",
                      help="certificates between the signing certificate and the root")
    _signer_options(sign)
    sign.add_argument("--shard-size", type=int, metavar="BYTES",
                      help="hash files in shards of this size (OMS `shards` method) so large files use every core;"
                      " model_signing 1.1.1 verifies only per-file signatures")
    _verify_options(verify)
    verify.add_argument("--attestation", type=Path, metavar="FILE",
                        help="verify this scan attestation (made by `wscan scan --attest`) instead of a signature")
    verify.add_argument("--format", choices=["text", "json", "sarif"], default="text")
    verify.add_argument("-o", "--output", type=Path, help="write the report here instead of standard output")
    verify.add_argument("--fail-on", choices=SEVERITIES, help="lowest severity that fails (default high)")
    verify.add_argument("--config", type=Path, help="config file (read only when named: none by default)")


def _signer_options(command: argparse.ArgumentParser) -> None:
    """How to sign: an EC key, a certificate (with --certificate-chain), or keyless (the default)."""
    command.add_argument("--private-key", type=Path, metavar="PEM", help="sign with this EC private key")
    command.add_argument("--password-file", type=Path, help="file holding the private key's password")
    command.add_argument("--signing-certificate", type=Path, metavar="PEM", help="sign with this certificate")
    command.add_argument("--identity-token", help="OIDC token for keyless signing (else ambient CI credentials)")
    command.add_argument("--oidc-issuer", help="OIDC issuer to get a token from for keyless signing")


def _signature_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--signature", type=Path, help="signature file (default MODEL_DIR/model.sig)")
    command.add_argument("--ignore-paths", type=Path, nargs="+", default=[], metavar="P",
                         help="paths in the model the signature leaves out")


def _verify_options(command: argparse.ArgumentParser) -> None:
    """How a signature is checked: a public key, a CA chain, or a keyless identity and issuer."""
    command.add_argument("--public-key", type=Path, metavar="PEM", help="verify with this EC public key")
    command.add_argument("--certificate-chain", type=Path, nargs="+", default=[], metavar="PEM",
                         help="verify against this CA chain")
    command.add_argument("--identity", help="keyless: the signer identity expected in the certificate")
    command.add_argument("--issuer", help="keyless: the OIDC issuer expected in the certificate")
    command.add_argument("--trust-config", type=Path, help="Sigstore ClientTrustConfig (private deployment)")


def _use_color(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def _scan(args: argparse.Namespace) -> int:
    from wscan.engine import Engine
    from wscan.output import render, render_text

    for path in args.paths:
        if not os.path.lexists(path):
            raise UsageError(f"no such file or folder: {path}")
    config = load_config(args.config)
    if args.fail_on:
        config = replace(config, fail_on=Severity.parse(args.fail_on))
    if args.limit:
        config = replace(config, limits=_limits(config.limits, args.limit))
    if args.jobs:
        config = replace(config, jobs=args.jobs)
    progress = None
    if not args.no_progress and sys.stderr.isatty():
        progress = _progress_bar(sys.stderr)
    snapshots = None
    if args.attest:  # the digests before the scan: the attestation must be of the bytes the scan read
        from wscan.provenance.cli import attest_snapshots

        snapshots = attest_snapshots(args)
    verify_before = None
    if args.verify:  # what each folder's entries are before the scan: verified bytes must be the scanned ones
        from wscan.provenance.cli import verify_snapshots

        verify_before = verify_snapshots(args)
    report = Engine(config).scan(list(args.paths), progress)
    if args.verify:
        from wscan.provenance.cli import verify_into

        verify_into(report, args, config, verify_before)
    if args.attest:
        from wscan.provenance.cli import attest_folders

        attest_folders(report, args, snapshots)
    to_terminal = args.output is None
    if args.format == "text":
        text = render_text(report, color=to_terminal and _use_color(sys.stdout))
    else:
        text = render(report, args.format)
    emit(text, args.output)
    return EXIT_FINDINGS if report.failed else EXIT_OK


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _limits(base: Limits, overrides: list[str]) -> Limits:
    """The config's limits with NAME=VALUE overrides from the command line."""
    values: dict[str, float] = {}
    for item in overrides:
        name, sep, text = item.partition("=")
        try:
            if not sep:
                raise ValueError("expected NAME=VALUE")
            values[name.strip()] = float(text)
        except ValueError as exc:
            raise UsageError(f"--limit {item}: {exc}") from None
    try:
        return Limits.from_mapping({**base.as_dict(), **values})
    except ValueError as exc:
        raise UsageError(f"--limit: {exc}") from None


def emit(text: str, output: Path | None) -> None:
    """The report to standard output, or to the --output file (an unwritable file is a usage error)."""
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc}") from None


def _progress_bar(stream: TextIO):  # type: ignore[no-untyped-def]
    from wscan.output.text import clean  # a file name can hold escape sequences

    width = 30

    def show(done: int, total: int, current: str) -> None:
        if total == 0:
            return
        filled = width * done // total
        name = clean(current[-40:]) if current else "done"
        end = "\n" if done >= total else ""
        stream.write(f"\r\x1b[2K[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name}{end}")
        stream.flush()

    return show


def _rules(args: argparse.Namespace, out: TextIO) -> int:
    from wscan.rules import RuleSet

    config = load_config(args.config)
    ruleset = RuleSet.load(config)
    if args.action == "list":
        for rule in ruleset.rules:
            out.write(f"{rule.id:<12} {rule.severity.label:<9} {rule.name:<40} {rule.summary}\n")
        out.write(f"\n{len(ruleset.rules)} rules; rule pack digest {ruleset.digest[:16]}\n")
        return EXIT_OK
    if not args.rule_id:
        raise UsageError("rules show needs a rule ID (see `wscan rules list`)")
    found = ruleset.get(args.rule_id)
    if found is None:
        raise UsageError(f"unknown rule {args.rule_id}")
    rule = found
    out.write(f"{rule.id}  {rule.name}\n")
    out.write(f"severity: {rule.severity.label}\nsummary:  {rule.summary}\n")
    if rule.description:
        out.write(f"\n{rule.description.strip()}\n")
    out.write(f"\nmatches:  {', '.join(sorted(rule.kinds))}\n")
    for cond in rule.conditions:
        out.write(f"  {cond.attr}: {dict(cond.ops)}\n")
    for exception in rule.unless:
        out.write("unless all of:\n")
        for cond in exception:
            out.write(f"  {cond.attr}: {dict(cond.ops)}\n")
    if rule.cwe:
        out.write(f"cwe:      {', '.join(rule.cwe)}\n")
    if rule.tags:
        out.write(f"tags:     {', '.join(rule.tags)}\n")
    out.write(f"help:     {rule.help.strip()}\nsource:   {rule.source}\n")
    return EXIT_OK
