"""Scan attestations: "these exact bytes were scanned by this rule set, with this verdict", signed.

An in-toto Statement v1 whose subject is the model's root digest (the same sha256 over every file digest
that an OMS signature's subject carries, so the two can be matched) and whose predicate records the wscan
version, the rule-pack digest, the threshold, the verdict, every file's digest and worst severity, and
the findings. It is signed into the same Sigstore bundle format as a model signature, by the same
`model_signing` signers (key, certificate or keyless), so the same trust roots verify it.

A clean verdict is only as good as the settings it was reached with, so the predicate also records the
config's effect (`config`: threshold, ignores, severity overrides, allowed callables, replaced rules, and
how many findings the default settings report that this scan did not); a consumer is told when the scan
ran with settings that loosen the rules, and when the attestation vouches for bytes the scan never read.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from wscan.config import Config
from wscan.discover import display_path
from wscan.model import Finding, Location, Observation, Severity
from wscan.provenance.fingerprint import Fingerprint, changed, fingerprints
from wscan.provenance.oms import (
    DEFAULT_SIGNATURE,
    CertificateMethod,
    KeyMethod,
    Method,
    Resource,
    SignatureProblem,
    hashing_config,
    read_bundle,
    run_verifier,
    verifier_for,
)
from wscan.report import FILE_SCANNED, Report

PREDICATE_TYPE = "https://wscan.dev/attestation/scan/v1"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
DEFAULT_ATTESTATION = "wscan.attestation.sig"


def attest(
    model_dir: Path,
    report: Report,
    method: Method,
    output: Path,
    ignore: list[Path],
    settings: Mapping[str, Any] | None = None,
    before: Snapshot | None = None,
) -> str:
    """Sign a scan attestation for `model_dir` into `output`; returns the root digest it attests.

    `settings` is the config's effect (`scan_settings`); without it the attestation says nothing about the
    config, and a consumer is told so. `before` is the folder's `snapshot` taken before the scan: if the folder
    hashes differently now, or any entry was rewritten since (its change time moved: swapped and put back, it
    hashes the same), FolderChanged is raised and nothing is written (the scan may have read other bytes than the
    ones attested)."""
    from in_toto_attestation.v1 import statement
    from model_signing._signing import signing as oms_signing

    manifest = _manifest(model_dir, ignore, output)
    if before is not None:
        after = fingerprints(model_dir, (output,))
        moved = {r.identifier for r in before.resources ^ _resources(manifest)} | set(changed(before.entries, after))
        if moved:
            raise FolderChanged(sorted(moved))
    oms_payload = oms_signing.Payload(manifest)  # the OMS subject: model name and root digest
    subject = oms_payload.statement.pb.subject[0]
    root_digest = subject.digest["sha256"]
    predicate = {
        "scanner": {"name": "wscan", "version": report.tool_version, "rules_digest": report.rules_digest},
        "fail_on": report.fail_on.label,
        "verdict": report.verdict(),
        "serialization": manifest.serialization_type,
        "resources": [{"name": rd.identifier, "algorithm": rd.digest.algorithm, "digest": rd.digest.digest_hex}
                      for rd in manifest.resource_descriptors()],
        "files": _file_verdicts(model_dir, report),
        "findings": [
            {"rule_id": f.rule_id, "severity": f.severity.label, "path": _inside(model_dir, f.location.path),
             "member": f.location.member or "", "message": f.message}
            for f in report.findings
            if _inside(model_dir, f.location.path) is not None
        ],
    }
    if settings is not None:
        predicate["config"] = dict(settings)
    signed = statement.Statement(subjects=[subject], predicate_type=PREDICATE_TYPE, predicate=predicate)
    signer = _signer(method)
    signer.sign(SimpleNamespace(statement=signed)).write(output)
    return str(root_digest)


class FolderChanged(Exception):
    """Files changed between the snapshot taken before the scan and the attestation's own hashing."""

    def __init__(self, files: list[str]) -> None:
        super().__init__(", ".join(files))
        self.files = files


@dataclass(frozen=True)
class Snapshot:
    """A folder before the scan: what each entry is on disk (looked at first), and the digests an attestation of it
    would record."""

    entries: dict[str, Fingerprint]
    resources: frozenset[Resource]


def snapshot(model_dir: Path, ignore: list[Path], output: Path) -> Snapshot:
    """The folder as it is before the scan, to compare with it when attesting."""
    entries = fingerprints(model_dir, (output,))
    return Snapshot(entries, _resources(_manifest(model_dir, ignore, output)))


def _manifest(model_dir: Path, ignore: list[Path], output: Path) -> Any:
    own = [output, model_dir / DEFAULT_SIGNATURE]  # an OMS signature beside it is not part of the scan's subject
    return hashing_config(model_dir, ignore, own=own).hash(model_dir)


def _resources(manifest: Any) -> frozenset[Resource]:
    return frozenset(Resource(rd.identifier, rd.digest.algorithm, rd.digest.digest_hex)
                     for rd in manifest.resource_descriptors())


@dataclass(frozen=True)
class Attestation:
    """What a verified attestation says."""

    root_digest: str
    predicate: dict[str, Any]

    @property
    def resources(self) -> tuple[Resource, ...]:
        return tuple(Resource(r["name"], r["algorithm"], r["digest"]) for r in self.predicate.get("resources", []))


def read_attestation(path: Path, method: Method) -> Attestation:
    """Check the bundle's signature (raises SignatureProblem) and return the statement it vouches for."""
    bundle = read_bundle(path, method)
    verifier = verifier_for(method)
    payload_type, payload = run_verifier(method, lambda: verifier._verify_signed_content(bundle))
    try:
        statement = json.loads(payload)
        ok = (payload_type == PAYLOAD_TYPE and statement.get("_type") == STATEMENT_TYPE
              and statement.get("predicateType") == PREDICATE_TYPE)
        root = statement["subject"][0]["digest"]["sha256"]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        ok, root = False, ""
    if not ok:
        raise SignatureProblem("provenance.attestation_invalid", "the bundle is not a wscan scan attestation")
    predicate = statement.get("predicate")
    if not _well_formed(predicate):
        raise SignatureProblem("provenance.attestation_invalid", "the attestation's predicate is malformed")
    if _root_of(predicate.get("resources", [])) != root:
        raise SignatureProblem("provenance.attestation_invalid",
                               "its subject digest is not the root digest of the resources it lists")
    return Attestation(str(root), predicate)


def _root_of(resources: list[dict[str, str]]) -> str | None:
    """The root digest the subject must carry: sha256 over the listed digests in order, as model_signing computes
    (and checks, for a model signature) it. Tools matching an attestation to a signature go by the subject."""
    try:
        return hashlib.sha256(b"".join(bytes.fromhex(r["digest"]) for r in resources)).hexdigest()
    except ValueError:
        return None  # a digest that is not hex


def _well_formed(predicate: Any) -> bool:
    """The predicate's shape, as read later: a signer's odd one is a finding, not an AttributeError."""
    if not isinstance(predicate, dict):
        return False
    resources = predicate.get("resources", [])
    fields = ("name", "algorithm", "digest")
    return (isinstance(resources, list)
            and all(isinstance(r, dict) and all(isinstance(r.get(k), str) for k in fields) for r in resources)
            and isinstance(predicate.get("scanner", {}), dict)
            and isinstance(predicate.get("serialization", {}), dict)
            and isinstance(predicate.get("files", []), list) and isinstance(predicate.get("findings", []), list))


def attestation_observations(
    attestation: Attestation,
    location: Location,
    rules_digest: str,
    model_dir: Path | None = None,
    fail_on: Severity = Severity.HIGH,
) -> list[Observation]:
    """Facts from a verified attestation: its verdict, whether it was made with today's rules, which attested
    files the scan never read, and whether its settings loosened the rules (judged at `fail_on`)."""
    predicate = attestation.predicate
    scanner = predicate.get("scanner", {})
    observations = [
        Observation(
            "provenance.attested",
            location,
            {"verdict": _verdict(predicate), "version": str(scanner.get("version", "")),
             "rules_digest": str(scanner.get("rules_digest", ""))[:16], "root": attestation.root_digest[:16],
             "findings": len(predicate.get("findings", []))},
        )
    ]
    if scanner.get("rules_digest") != rules_digest:
        observations.append(Observation("provenance.attestation_rules_differ", location,
                                        {"attested": str(scanner.get("rules_digest", ""))[:16],
                                         "current": rules_digest[:16]}))
    if model_dir is not None:
        observations.extend(_unscanned(attestation, model_dir))
    observations.extend(_settings_observations(predicate, location, fail_on))
    return observations


def _verdict(predicate: Mapping[str, Any]) -> str:
    """The attested verdict as its own findings and threshold make it: "pass" only when it says so and no finding
    it records reaches its threshold (helper 234 signed "pass" beside a critical finding, and it verified as clean);
    a verdict, threshold or severity it does not spell as wscan does counts as failing."""
    threshold = _severity(predicate.get("fail_on"))
    severities = [_severity(f.get("severity")) if isinstance(f, Mapping) else None
                  for f in _list(predicate.get("findings"))]
    if predicate.get("verdict") != "pass" or threshold is None:
        return "fail"
    return "fail" if any(s is None or s >= threshold for s in severities) else "pass"


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _unscanned(attestation: Attestation, model_dir: Path) -> list[Observation]:
    """Attested files the scan never read: not listed (a scan that left a file out, as one before 2026-12-07 left
    out a Hugging Face cache's unlinked blobs, while hashing takes all), skipped (no scanner knew the format) or
    failed (not fully parsed). Their digests are vouched for, their content was not judged. An empty file has
    nothing to read."""
    status = {str(f.get("path", "")): str(f.get("status", "")) for f in _list(attestation.predicate.get("files"))
              if isinstance(f, Mapping)}
    serialization = attestation.predicate.get("serialization")
    sharded = isinstance(serialization, Mapping) and serialization.get("method") == "shards"
    empty = {r.identifier for r in attestation.resources if r.algorithm == "sha256" and r.digest == EMPTY_SHA256}
    names = sorted({_file_of(r.identifier, sharded) for r in attestation.resources} - empty)
    base = model_dir if model_dir.is_dir() else model_dir.parent
    return [Observation("provenance.attested_unscanned", Location(display_path(base / name)),
                        {"file": name, "status": status.get(name, "not listed")})
            for name in names if status.get(name) != FILE_SCANNED]


def _file_of(identifier: str, sharded: bool) -> str:
    parts = identifier.rsplit(":", 2)
    if sharded and len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0]
    return identifier


def _settings_observations(predicate: Mapping[str, Any], location: Location, fail_on: Severity) -> list[Observation]:
    """What the attested scan's settings did: loosened nothing, loosened rules (and hid how many findings),
    or, for an attestation made before settings were recorded, unknown."""
    observations: list[Observation] = []
    settings = predicate.get("config")
    parts: list[str] = []
    hidden, worst = 0, None
    if isinstance(settings, Mapping):
        parts = _loosening(settings)
        recorded = settings.get("hidden", {})
        if isinstance(recorded, Mapping):
            hidden = _int(recorded.get("count"))
            worst = _severity(recorded.get("worst"))
    else:
        scanner = predicate.get("scanner", {})
        observations.append(Observation("provenance.attestation_config_unknown", location,
                                        {"version": str(scanner.get("version", "") if isinstance(scanner, Mapping)
                                                        else "")}))
    # A laxer threshold than this verification's lets recorded findings pass; count those that would fail here.
    attested_fail_on = _severity(predicate.get("fail_on"))
    if attested_fail_on is not None and attested_fail_on > fail_on:
        recorded_findings = [f for f in _list(predicate.get("findings")) if isinstance(f, Mapping)]
        passed = [s for s in (_severity(f.get("severity")) for f in recorded_findings)
                  if s is not None and fail_on <= s < attested_fail_on]
        if passed:
            parts.append(f"fail-on {attested_fail_on.label} (passed {len(passed)} at or above {fail_on.label})")
            hidden += len(passed)
            worst = max([*passed, *([worst] if worst is not None else [])])
    if parts or hidden:
        observations.append(Observation("provenance.attestation_lenient", location,
                                        {"settings": "; ".join(parts) or "unrecorded settings", "hidden": hidden,
                                         "worst": worst.label if worst is not None else "none"}))
    return observations


def _loosening(settings: Mapping[str, Any]) -> list[str]:
    """The recorded settings that loosen the built-in rules, in words."""
    parts = []
    ignores = _list(settings.get("ignores"))
    if ignores:
        shown = ", ".join(f"{i.get('rule')} in {i.get('paths')}" for i in ignores[:3] if isinstance(i, Mapping))
        parts.append(f"ignores {shown}{', ...' if len(ignores) > 3 else ''}")
    lowered = _list(settings.get("lowered"))
    if lowered:
        parts.append(f"lowered severities of {', '.join(map(str, lowered[:5]))}{', ...' if len(lowered) > 5 else ''}")
    allow = _list(settings.get("allow"))
    if allow:
        parts.append(f"allowed {_int(settings.get('allow_count')) or len(allow)} more callables "
                     f"({', '.join(map(str, allow[:3]))}{', ...' if len(allow) > 3 else ''})")
    replaced = _list(settings.get("replaced_rules"))
    if replaced:
        parts.append(f"replaced rules {', '.join(map(str, replaced[:5]))}{', ...' if len(replaced) > 5 else ''}")
    lists = _list(settings.get("changed_lists"))
    if lists:
        parts.append(f"changed rule lists {', '.join(map(str, lists[:5]))}{', ...' if len(lists) > 5 else ''}")
    return parts


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int:
    """A recorded count (the signed statement stores numbers as floats), 0 when absent or nonsense."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return 0
    return int(min(value, 2**31))


def _severity(value: Any) -> Severity | None:
    try:
        return Severity.parse(value) if isinstance(value, str) else None
    except ValueError:
        return None


def scan_settings(config: Config, report: Report, model_dir: Path, unfiltered: Report | None) -> dict[str, Any]:
    """The effect of the scan's config, to record in the attestation.

    `unfiltered` is the same scan run with the built-in rules (only needed when the config has ignores, severities
    or rule packs; its allowed callables are kept, and recorded on their own); a finding it reports that `report`
    does not, or reports lower, was hidden. A finding reported below its rule's built-in severity (a pack may
    redefine a rule) was hidden too.
    """
    from wscan.rules import RuleSet

    defaults, current = RuleSet.load(Config()), RuleSet.load(config)
    default_rules = {r.id: r for r in defaults.rules}
    lowered = sorted(r.id for r in current.rules if r.id in default_rules and r.severity < default_rules[r.id].severity)
    replaced = sorted(r.id for r in current.rules if r.id in default_rules and r.source != default_rules[r.id].source)
    allow = sorted({name for list_name, values in current.lists.items() if list_name.startswith("allowed-")
                    for name in values - defaults.lists.get(list_name, frozenset())})
    # Any other list a pack changed (a gadget moved to `dangerous-exceptions`, a library added to a trusted set).
    changed_lists = sorted(name for name in {*current.lists, *defaults.lists} if not name.startswith("allowed-")
                           and current.lists.get(name) != defaults.lists.get(name))

    def inside(findings: list[Finding]) -> dict[tuple[str, str, str], Severity]:
        return {(f.rule_id, f.location.describe(), json.dumps(dict(f.evidence), sort_keys=True, default=str)):
                f.severity for f in findings if _inside(model_dir, f.location.path) is not None}

    reported = inside(report.findings)
    hidden: dict[tuple[str, str, str], Severity] = {}
    for key, severity in reported.items():
        rule = default_rules.get(key[0])
        if rule is not None and rule.severity > severity:
            hidden[key] = rule.severity
    if unfiltered is not None:
        for key, severity in inside(unfiltered.findings).items():
            rule = default_rules.get(key[0])
            severity = max(severity, rule.severity) if rule is not None else severity
            if reported.get(key, Severity.INFO) < severity:
                hidden[key] = max(severity, hidden.get(key, Severity.INFO))
    hidden = {key: severity for key, severity in hidden.items() if severity > Severity.INFO}
    return {
        "file": config.source.name if config.source is not None else "",
        "fail_on": report.fail_on.label,
        "ignores": [{"rule": rule, "paths": glob} for rule, glob in config.ignores],
        "severity": {rule: severity.label for rule, severity in sorted(config.severity.items())},
        "lowered": lowered,
        "allow": allow[:100],
        "allow_count": len(allow),
        "rule_files": [p.name for p in config.rule_files],
        "replaced_rules": replaced,
        "changed_lists": changed_lists[:20],
        "hidden": {"count": len(hidden), "worst": max(hidden.values()).label if hidden else None,
                   "rules": sorted({key[0] for key in hidden})[:20]},
    }


def _signer(method: Method) -> Any:
    from model_signing import signing

    config = signing.Config()  # type: ignore[no-untyped-call]
    if isinstance(method, KeyMethod):
        config.use_elliptic_key_signer(private_key=method.key, password=method.password)  # type: ignore[arg-type]
    elif isinstance(method, CertificateMethod):
        if method.private_key is None or method.signing_certificate is None:
            raise ValueError("certificate signing needs a private key and a signing certificate")
        config.use_certificate_signer(private_key=method.private_key,
                                      signing_certificate=method.signing_certificate,
                                      certificate_chain=method.chain)
    else:
        config.use_sigstore_signer(oidc_issuer=method.issuer,
                                   use_ambient_credentials=method.ambient and method.identity_token is None,
                                   identity_token=method.identity_token, trust_config=method.trust_config)
    return config._signer


def _file_verdicts(model_dir: Path, report: Report) -> list[dict[str, Any]]:
    verdicts = []
    for result in sorted(report.files, key=lambda r: r.path):
        name = _inside(model_dir, result.path)
        if name is not None:
            verdicts.append({"path": name, "status": result.status,
                             "worst": result.worst.label if result.worst is not None else None})
    return verdicts


def _inside(model_dir: Path, reported: str) -> str | None:
    """A report path relative to the model folder, or None when it is elsewhere. Compared as absolute paths: a
    scan of `.` reports `config.json`, not `./config.json`."""
    root = os.path.abspath(model_dir)
    path = os.path.abspath(reported)
    if path == root:
        return "."
    return path[len(root.rstrip("/")) + 1 :].replace(os.sep, "/") if path.startswith(root.rstrip("/") + "/") else None
