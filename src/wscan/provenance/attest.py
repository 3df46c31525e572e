"""Scan attestations: "these exact bytes were scanned by this rule set, with this verdict", signed.

An in-toto Statement v1 whose subject is the model's root digest (the same sha256 over every file digest
that an OMS signature's subject carries, so the two can be matched) and whose predicate records the wscan
version, the rule-pack digest, the threshold, the verdict, every file's digest and worst severity, and
the findings. It is signed into the same Sigstore bundle format as a model signature, by the same
`model_signing` signers (key, certificate or keyless), so the same trust roots verify it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from wscan.discover import display_path
from wscan.model import Location, Observation
from wscan.provenance.oms import (
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
from wscan.report import Report

PREDICATE_TYPE = "https://wscan.dev/attestation/scan/v1"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
DEFAULT_ATTESTATION = "wscan.attestation.sig"


def attest(model_dir: Path, report: Report, method: Method, output: Path, ignore: list[Path]) -> str:
    """Sign a scan attestation for `model_dir` into `output`; returns the root digest it attests."""
    from in_toto_attestation.v1 import statement
    from model_signing._signing import signing as oms_signing

    manifest = hashing_config(model_dir, [*ignore, output]).hash(model_dir)
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
    signed = statement.Statement(subjects=[subject], predicate_type=PREDICATE_TYPE, predicate=predicate)
    signer = _signer(method)
    signer.sign(SimpleNamespace(statement=signed)).write(output)
    return str(root_digest)


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
    return Attestation(str(root), statement["predicate"])


def attestation_observations(attestation: Attestation, location: Location, rules_digest: str) -> list[Observation]:
    """Facts from a verified attestation: its verdict and whether it was made with today's rules."""
    predicate = attestation.predicate
    scanner = predicate.get("scanner", {})
    observations = [
        Observation(
            "provenance.attested",
            location,
            {"verdict": str(predicate.get("verdict", "")), "version": str(scanner.get("version", "")),
             "rules_digest": str(scanner.get("rules_digest", ""))[:16], "root": attestation.root_digest[:16],
             "findings": len(predicate.get("findings", []))},
        )
    ]
    if scanner.get("rules_digest") != rules_digest:
        observations.append(Observation("provenance.attestation_rules_differ", location,
                                        {"attested": str(scanner.get("rules_digest", ""))[:16],
                                         "current": rules_digest[:16]}))
    return observations


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
    """A report path relative to the model folder, or None when it is elsewhere."""
    root = display_path(model_dir).rstrip("/")
    if reported == root:
        return "."
    return reported[len(root) + 1:] if reported.startswith(root + "/") else None
