"""Keyless signing end to end, offline: a local Sigstore stack (an OIDC issuer, Fulcio with its CT log, and
Rekor v1, from the npm package @sigstore/mock, served on 127.0.0.1 by tests/sigstore_stack/server.js) certifies
a test identity; wscan signs a model keyless through its CLI, verifies it, and names every tamper.

The stack needs Node.js and `npm ci --prefix tests/sigstore_stack` (see tests/sigstore_stack/README.md);
without them these tests fail rather than skip, so CI cannot pass with the keyless path untested.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.hazmat.primitives.hashes import SHA256

from wscan.cli import main

STACK_DIR = Path(__file__).parent / "sigstore_stack"
IDENTITY = "wscan-test@example.com"
START_TIMEOUT = 30.0
ISSUER_EXTENSION = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")  # Fulcio's OIDC issuer (v2)


@dataclass(frozen=True)
class Stack:
    """A running local Sigstore stack: its issuer URL and a ClientTrustConfig file for it."""

    url: str
    trust_config: Path

    def token(self, sub: str = IDENTITY) -> str:
        """An ID token for `sub`, minted and signed by the stack's OIDC issuer."""
        query = urllib.parse.urlencode({"sub": sub})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        with opener.open(f"{self.url}/token?{query}", timeout=10) as response:
            return str(json.load(response)["id_token"])


def _require_stack_installed() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("keyless tests need Node.js (node) on PATH to run the local Sigstore stack", pytrace=False)
    if not (STACK_DIR / "node_modules" / "@sigstore" / "mock" / "package.json").is_file():
        pytest.fail(
            f"the local Sigstore stack is not installed ({STACK_DIR / 'node_modules'} is missing): "
            "run `npm ci --prefix tests/sigstore_stack` first",
            pytrace=False,
        )
    return node


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Start tests/sigstore_stack/server.js on a free loopback port; stop it after the module."""
    node = _require_stack_installed()
    folder = tmp_path_factory.mktemp("sigstore-stack")
    log_path = folder / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [node, str(STACK_DIR / "server.js"), "--port", "0", "--exit-with-stdin"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, cwd=STACK_DIR,
        )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT)
        line = proc.stdout.readline() if ready else ""
        if not line:
            proc.kill()
            proc.wait(timeout=5)
            pytest.fail(f"the local Sigstore stack did not start (exit {proc.returncode}):\n"
                        f"{log_path.read_text()}", pytrace=False)
        info: dict[str, Any] = json.loads(line)
        trust_config = folder / "trust_config.json"
        trust_config.write_text(json.dumps(info["trust_config"], indent=1))
        yield Stack(info["url"], trust_config)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()  # --exit-with-stdin: the server stops on its own
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(autouse=True)
def _no_proxy_for_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """sigstore-python talks to the stack with requests, which would send even loopback through a proxy."""
    for name in ("NO_PROXY", "no_proxy"):
        existing = os.environ.get(name, "")
        monkeypatch.setenv(name, ",".join(filter(None, [existing, "127.0.0.1", "localhost"])))


def a_model(folder: Path) -> Path:
    (folder / "weights").mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "tiny"}')
    (folder / "weights" / "model.safetensors").write_bytes(b"\x08" + bytes(7) + b"{}" + bytes(6))
    return folder


def verify_json(model: Path, stack: Stack, capsys: pytest.CaptureFixture[str], identity: str = IDENTITY,
                issuer: str | None = None) -> tuple[int, list[tuple[str, str]]]:
    """Exit code of `wscan verify` and its findings as (rule, path)."""
    capsys.readouterr()
    code = main(["verify", str(model), "--identity", identity, "--issuer", issuer or stack.url,
                 "--trust-config", str(stack.trust_config), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    return code, [(f["rule_id"], f["location"]["path"]) for f in doc["findings"]]


@pytest.fixture(scope="module")
def signed(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model signed keyless by `wscan sign` against the local stack (signed once, copied by each test)."""
    model = a_model(tmp_path_factory.mktemp("signed") / "model")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NO_PROXY", "127.0.0.1,localhost")
        patch.setenv("no_proxy", "127.0.0.1,localhost")
        code = main(["sign", str(model), "--identity-token", stack.token(),
                     "--trust-config", str(stack.trust_config)])
    assert code == 0
    return model


def copy_of(signed: Path, tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(signed, target)
    return target


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    path.write_bytes(bytes(data))


# --- the signature --------------------------------------------------------------------------------------------


def test_keyless_signature_is_a_sigstore_bundle_for_the_identity(signed: Path, stack: Stack) -> None:
    bundle = json.loads((signed / "model.sig").read_text())
    material = bundle["verificationMaterial"]
    cert = x509.load_der_x509_certificate(base64.b64decode(material["certificate"]["rawBytes"]))
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert IDENTITY in sans.get_values_for_type(x509.UniformResourceIdentifier)
    issuer = cert.extensions.get_extension_for_oid(ISSUER_EXTENSION).value
    assert isinstance(issuer, x509.UnrecognizedExtension)
    assert stack.url.encode() in issuer.value
    (entry,) = material["tlogEntries"]
    assert entry["kindVersion"] == {"kind": "dsse", "version": "0.0.1"}
    assert entry["inclusionPromise"]["signedEntryTimestamp"]
    assert entry["inclusionProof"]["checkpoint"]["envelope"]
    statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
    assert {r["name"] for r in statement["predicate"]["resources"]} == {"config.json", "weights/model.safetensors"}


def test_keyless_signature_verifies(signed: Path, stack: Stack, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    model = copy_of(signed, tmp_path)
    code, findings = verify_json(model, stack, capsys)
    assert (code, [rule for rule, _ in findings]) == (0, ["WS-SIG-009"])
    # text output too, as a user would run it
    assert main(["verify", str(model), "--identity", IDENTITY, "--issuer", stack.url,
                 "--trust-config", str(stack.trust_config)]) == 0
    assert f"signed by {IDENTITY} via {stack.url}" in capsys.readouterr().out


def test_flipped_byte_is_named(signed: Path, stack: Stack, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    model = copy_of(signed, tmp_path)
    _flip(model / "weights" / "model.safetensors")
    code, findings = verify_json(model, stack, capsys)
    assert code == 1
    assert [rule for rule, _ in findings] == ["WS-SIG-004"]
    assert findings[0][1].endswith("weights/model.safetensors")


@pytest.mark.parametrize(("identity", "issuer"), [("mallory@example.com", None),
                                                  (IDENTITY, "https://accounts.google.com")])
def test_wrong_signer_is_named(signed: Path, stack: Stack, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               identity: str, issuer: str | None) -> None:
    model = copy_of(signed, tmp_path)
    code, findings = verify_json(model, stack, capsys, identity=identity, issuer=issuer)
    assert (code, [rule for rule, _ in findings]) == (1, ["WS-SIG-002"])


def test_other_trust_root_rejects_the_signature(signed: Path, stack: Stack, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The production trust root does not vouch for the local Fulcio: the signature is not trusted."""
    model = copy_of(signed, tmp_path)
    production = Path(__file__).parent / "data" / "provenance" / "prod_client_trust_config.json"
    capsys.readouterr()
    code = main(["verify", str(model), "--identity", IDENTITY, "--issuer", stack.url,
                 "--trust-config", str(production), "--format", "json"])
    rules = [f["rule_id"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert (code, rules) == (1, ["WS-SIG-002"])


# --- interop and the stack's own checks --------------------------------------------------------------------------


def test_model_signing_verifies_the_keyless_signature(signed: Path, stack: Stack) -> None:
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    result = subprocess.run(
        [sys.executable, "-m", "model_signing", "verify", "sigstore", "--signature", str(signed / "model.sig"),
         "--identity", IDENTITY, "--identity_provider", stack.url, "--trust_config", str(stack.trust_config),
         str(signed)],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_forged_token_is_refused(stack: Stack, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The stack's Fulcio checks the token's signature: a token signed by another key gets no certificate."""
    header, claims, _ = stack.token().split(".")
    forger = ec.generate_private_key(ec.SECP256R1())
    signature = forger.sign(f"{header}.{claims}".encode(), ec.ECDSA(SHA256()))
    r, s = _decode_dss(signature)
    forged = f"{header}.{claims}.{base64.urlsafe_b64encode(r + s).rstrip(b'=').decode()}"
    model = a_model(tmp_path / "model")
    capsys.readouterr()
    assert main(["sign", str(model), "--identity-token", forged, "--trust-config", str(stack.trust_config)]) == 2
    assert "signing failed: FulcioClientError" in capsys.readouterr().err
    assert not (model / "model.sig").exists()


def _decode_dss(signature: bytes) -> tuple[bytes, bytes]:
    r, s = decode_dss_signature(signature)
    return r.to_bytes(32, "big"), s.to_bytes(32, "big")
