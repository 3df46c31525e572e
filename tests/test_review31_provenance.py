"""Review 31 of `wscan sign` / `verify` / `scan --verify` / `scan --attest`: each case, rebuilt here, must be a
finding or a usage error (exit 2), never a bypass, a hang or a traceback."""

from __future__ import annotations

import base64
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_provenance import a_model, keys, model_signing  # noqa: F401  (keys is a fixture)
from wscan.cli import main
from wscan.config import Config
from wscan.provenance.oms import KeyMethod
from wscan.provenance.verify import verify_model
from wscan.report import Report

PAYLOAD = b"cposix\nsystem\n(S'echo hi'\ntR."  # never loaded


def statement_of(signature: Path) -> dict[str, object]:
    statement: dict[str, object] = json.loads(base64.b64decode(json.loads(signature.read_text())["dsseEnvelope"]
                                                               ["payload"]))
    return statement


def serialization_of(signature: Path) -> dict[str, object]:
    predicate = statement_of(signature)["predicate"]
    assert isinstance(predicate, dict)
    serialization: dict[str, object] = predicate["serialization"]
    return serialization


def signed_names(signature: Path) -> set[str]:
    predicate = statement_of(signature)["predicate"]
    assert isinstance(predicate, dict)
    return {r["name"] for r in predicate["resources"]}


def rule_ids(report: Report) -> set[str]:
    return {f.rule_id for f in report.findings}


def verified(model: Path, keys: dict[str, Path], signature: Path | None = None) -> Report:  # noqa: F811
    return verify_model(model, signature or model / "model.sig", KeyMethod(keys["public"]), [], Config())


def sign(model: Path, keys: dict[str, Path], *extra: str) -> int:  # noqa: F811
    return main(["sign", str(model), "--private-key", str(keys["private"]), *extra])


# --- 1. a signature of nothing (universal_signature) ----------------------------------------------------------


@pytest.mark.parametrize("ignore", ["", ".", "FOLDER", "FOLDER/..", "OUTSIDE", "../x"])
def test_sign_refuses_ignore_paths_that_cover_the_folder_or_leave_it(
    tmp_path: Path, keys: dict[str, Path], ignore: str  # noqa: F811
) -> None:
    model = a_model(tmp_path / "m")
    value = ignore.replace("FOLDER", str(model)).replace("OUTSIDE", str(tmp_path / "elsewhere"))
    assert sign(model, keys, "--ignore-paths", value) == 2
    assert not (model / "model.sig").exists()


def test_sign_refuses_a_folder_with_nothing_to_sign(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = tmp_path / "m"
    model.mkdir()
    (model / ".gitignore").write_text("*.tmp\n")
    assert sign(model, keys) == 2
    assert not (model / "model.sig").exists()


def _sign_with_library(model: Path, keys: dict[str, Path], ignore: list[Path]) -> Path:  # noqa: F811
    """What model_signing's API makes when told to ignore these paths (its verifier accepts the result)."""
    from model_signing import hashing, signing

    hashing_config = hashing.Config().set_ignored_paths(paths=ignore, ignore_git_paths=True)  # type: ignore[no-untyped-call]
    config = signing.Config().set_hashing_config(hashing_config)  # type: ignore[no-untyped-call]
    config.use_elliptic_key_signer(private_key=keys["private"])
    config.sign(model, model / "model.sig")
    return model / "model.sig"


def test_signature_whose_ignore_paths_cover_the_folder_verifies_nothing(
    tmp_path: Path, keys: dict[str, Path]  # noqa: F811
) -> None:
    model = a_model(tmp_path / "m")
    signature = _sign_with_library(model, keys, [Path(".")])
    assert signed_names(signature) == set()
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "pytorch_model.bin").write_bytes(PAYLOAD)
    (evil / "model.sig").write_bytes(signature.read_bytes())
    for folder in (model, evil):
        report = verified(folder, keys)
        assert rule_ids(report) == {"WS-SIG-020"} and report.failed
    assert main(["verify", str(evil), "--public-key", str(keys["public"])]) == 1


def test_signature_that_lists_no_file_verifies_nothing(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    empty = tmp_path / "empty"
    empty.mkdir()
    signature = _sign_with_library(empty, keys, [])
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "pytorch_model.bin").write_bytes(PAYLOAD)
    report = verified(evil, keys, signature)
    assert {"WS-SIG-020", "WS-SIG-005"} <= rule_ids(report) and report.failed
    assert "WS-SIG-009" not in rule_ids(report)


def test_verify_refuses_ignore_paths_that_cover_the_folder(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    assert sign(model, keys) == 0
    assert main(["verify", str(model), "--public-key", str(keys["public"]), "--ignore-paths", ""]) == 2
    assert main(["scan", str(model), "--verify", "--public-key", str(keys["public"]), "--ignore-paths", "."]) == 2


# --- 6. relative model paths (relative_ignore, attest_relative) ------------------------------------------------


def test_relative_model_path_signs_what_it_says(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    a_model(tmp_path / "m")
    (tmp_path / "m" / "README.md").write_text("notes\n")
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # signing again must not sign the previous model.sig in
        assert sign(Path("m"), keys, "--ignore-paths", "README.md") == 0
    signature = tmp_path / "m" / "model.sig"
    assert signed_names(signature) == {"config.json", "weights/model.safetensors"}
    ignored = serialization_of(signature)["ignore_paths"]
    assert isinstance(ignored, list)
    assert set(ignored) == {"README.md", "model.sig", ".git", ".gitattributes", ".github", ".gitignore"}
    assert rule_ids(verified(Path("m"), keys)) == {"WS-SIG-009", "WS-SIG-022"}  # README.md: left out, noted
    result = model_signing("verify", "key", "m", "--signature", "m/model.sig", "--public_key", str(keys["public"]),
                           "--ignore-paths", "m/README.md")
    assert result.returncode == 0, result.stderr


def test_relative_model_path_attests_twice(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    a_model(tmp_path / "m")
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # the previous attestation is not attested
        assert main(["scan", "m", "--attest", "--private-key", str(keys["private"])]) == 0
    assert main(["verify", "m", "--attestation", "m/wscan.attestation.sig", "--public-key", str(keys["public"])]) == 0


# --- 2. a signature file that is a FIFO, a link to a device, or huge (sig_devzero) ----------------------------


class Blocked(BaseException):
    """Raised by `deadline`: a BaseException, so no `except Exception` in the code under test turns it into a
    finding."""


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail, rather than hang the suite, when a test blocks (on a FIFO) for a minute."""
    def expire(signum: int, frame: object) -> None:
        raise Blocked("blocked for 60 s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _unreadable_signature(model: Path, kind: str) -> None:
    signature = model / "model.sig"
    signature.unlink()
    if kind == "fifo":
        os.mkfifo(signature)
    elif kind == "devzero":
        signature.symlink_to("/dev/zero")
    else:  # a sparse file far larger than any bundle
        with signature.open("wb") as stream:
            stream.truncate(3 * 1024**3)


@pytest.mark.parametrize("kind", ["fifo", "devzero", "sparse"])
def test_signature_that_is_no_bundle_file_is_a_finding_not_a_hang(
    tmp_path: Path, keys: dict[str, Path], kind: str, deadline: None  # noqa: F811
) -> None:
    model = a_model(tmp_path / "m")
    assert sign(model, keys) == 0
    _unreadable_signature(model, kind)
    report = verified(model, keys)
    expected = {"WS-SIG-003", "WS-SIG-008"} if kind == "devzero" else {"WS-SIG-003"}
    assert rule_ids(report) == expected and report.failed
    assert main(["scan", str(model), "--verify", "--public-key", str(keys["public"])]) == 1


def test_attestation_that_is_a_fifo_is_a_finding_not_a_hang(
    tmp_path: Path, keys: dict[str, Path], deadline: None  # noqa: F811
) -> None:
    model = a_model(tmp_path / "m")
    os.mkfifo(tmp_path / "att.sig")
    report = verify_model(model, tmp_path / "att.sig", KeyMethod(keys["public"]), [], Config(), attestation=True)
    assert rule_ids(report) == {"WS-SIG-003"}


# --- 3. a file swapped while the scan to attest runs (attest_toctou) ------------------------------------------


def test_folder_changed_during_the_scan_is_not_attested(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    from wscan.engine import Engine

    model = a_model(tmp_path / "m")
    (model / "pytorch_model.bin").write_bytes(b"\x80\x02}q\x00.")  # an empty dict: clean
    scan = Engine.scan

    def scan_then_swap(self: Engine, *args: object, **kwargs: object) -> Report:
        report = scan(self, *args, **kwargs)  # type: ignore[arg-type]
        (model / "pytorch_model.bin").write_bytes(PAYLOAD)  # after the scanners read it, before the attestation
        return report

    monkeypatch.setattr(Engine, "scan", scan_then_swap)
    out = tmp_path / "report.json"
    assert main(["scan", str(model), "--attest", "--private-key", str(keys["private"]), "--format", "json",
                 "-o", str(out)]) == 1
    assert not (model / "wscan.attestation.sig").exists()
    findings = json.loads(out.read_text())["findings"]
    assert [(f["rule_id"], f["evidence"]["files"]) for f in findings if f["rule_id"].startswith("WS-SIG")] == [
        ("WS-SIG-021", "pytorch_model.bin")]


# --- 4. identity options beside a key or a CA chain (cert_validity) -------------------------------------------


@pytest.mark.parametrize("options", [
    ["--certificate-chain", "CA", "--identity", "alice@corp.example", "--issuer", "https://login.corp.example"],
    ["--public-key", "PUB", "--identity", "alice@corp.example"],
    ["--public-key", "PUB", "--certificate-chain", "CA"],
])
def test_identity_beside_another_method_is_a_usage_error(
    tmp_path: Path, keys: dict[str, Path], options: list[str], capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    model = a_model(tmp_path / "m")
    assert sign(model, keys) == 0
    given = [str(keys["ca"]) if o == "CA" else str(keys["public"]) if o == "PUB" else o for o in options]
    assert main(["verify", str(model), *given]) == 2
    assert "different verification methods" in capsys.readouterr().err
    assert main(["scan", str(model), "--verify", *given]) == 2


# --- 5. tracebacks that are findings or usage errors now -------------------------------------------------------


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_one_file_model_that_is_a_link_or_fifo(tmp_path: Path, keys: dict[str, Path], kind: str) -> None:  # noqa: F811
    (tmp_path / "w.bin").write_bytes(b"weights")
    assert sign(tmp_path / "w.bin", keys) == 0
    (tmp_path / "w.bin").rename(tmp_path / "real.bin")
    if kind == "link":
        (tmp_path / "w.bin").symlink_to("real.bin")
    else:
        os.mkfifo(tmp_path / "w.bin")
    report = verified(tmp_path / "w.bin", keys, tmp_path / "model.sig")
    assert rule_ids(report) == ({"WS-SIG-008"} if kind == "link" else {"WS-SIG-014"}) and report.failed


def test_file_swapped_between_walk_and_hash(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    from wscan.provenance import verify

    model = a_model(tmp_path / "m")
    assert sign(model, keys) == 0
    walk = verify._walk

    def walk_then_swap(*args: object) -> verify.Walk:
        listed = walk(*args)  # type: ignore[arg-type]
        (model / "config.json").unlink()
        (model / "config.json").symlink_to("/etc/hostname")
        return listed

    monkeypatch.setattr(verify, "_walk", walk_then_swap)
    report = verified(model, keys)
    assert rule_ids(report) == {"WS-SIG-015"} and report.failed


def test_unusable_verification_material_is_a_usage_error(
    tmp_path: Path, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    model = a_model(tmp_path / "m")
    assert sign(model, keys) == 0
    rsa_key = tmp_path / "rsa.pem"
    rsa_key.write_bytes(rsa.generate_private_key(65537, 2048).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    junk = tmp_path / "junk.pem"
    junk.write_text("not a PEM file\n")
    for options in (["--public-key", str(rsa_key)], ["--public-key", str(junk)],
                    ["--public-key", str(tmp_path / "missing.pem")], ["--certificate-chain", str(junk)]):
        assert main(["verify", str(model), *options]) == 2
        assert "cannot be used to verify" in capsys.readouterr().err
    assert main(["scan", str(model), "--verify", "--public-key", str(rsa_key)]) == 2


@pytest.mark.parametrize("serialization", [
    {"method": "shards", "hash_type": "sha256", "shard_size": "abc"},
    {"method": "shards", "hash_type": "sha256", "shard_size": 0},
    {"method": "shards", "hash_type": "sha256", "shard_size": -5},
    {"method": "shards", "hash_type": "sha256", "shard_size": 60.5},
    {"method": "files", "hash_type": "md5"},
])
def test_signer_made_serialization_the_library_cannot_hash_with(serialization: dict[str, object]) -> None:
    from wscan.provenance.oms import SignatureProblem, hashing_for

    with pytest.raises(SignatureProblem) as problem:
        hashing_for(serialization)
    assert problem.value.kind == "provenance.signature_invalid"


@pytest.mark.parametrize("predicate", [
    {"resources": [{"name": "config.json"}]},
    {"resources": [], "scanner": "wscan"},
    {"resources": "config.json"},
])
def test_signer_made_attestation_predicate_of_the_wrong_shape(
    tmp_path: Path, keys: dict[str, Path], predicate: dict[str, object]  # noqa: F811
) -> None:
    from types import SimpleNamespace

    from in_toto_attestation.v1 import statement

    from wscan.provenance.attest import PREDICATE_TYPE, _signer

    model = a_model(tmp_path / "m")
    subject = {"name": "m", "digest": {"sha256": "0" * 64}}
    from in_toto_attestation.v1 import resource_descriptor

    signed = statement.Statement(subjects=[resource_descriptor.ResourceDescriptor(**subject).pb],
                                 predicate_type=PREDICATE_TYPE, predicate=predicate)
    _signer(KeyMethod(keys["private"])).sign(SimpleNamespace(statement=signed)).write(model / "wscan.attestation.sig")
    report = verify_model(model, model / "wscan.attestation.sig", KeyMethod(keys["public"]), [], Config(),
                          attestation=True)
    assert rule_ids(report) == {"WS-SIG-013"}


# --- 7. attested files the scan skipped (attest_skipped) -------------------------------------------------------


def test_attested_file_the_scan_skipped_is_unscanned(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "bert"}')
    (model / "weights.custom").write_bytes(bytes(range(256)) * 16)  # no scanner knows it
    (model / "__init__.py").write_bytes(b"")  # empty: nothing to read, not reported
    assert main(["scan", str(model), "--attest", "--private-key", str(keys["private"])]) == 0
    report = verify_model(model, model / "wscan.attestation.sig", KeyMethod(keys["public"]), [], Config(),
                          attestation=True)
    unscanned = [(f.evidence["file"], f.evidence["status"]) for f in report.findings if f.rule_id == "WS-SIG-016"]
    assert unscanned == [("weights.custom", "skipped")] and report.failed


# --- 5 of the report: files the signer's ignore paths leave out (signed_ignore_silent) --------------------------


def test_files_left_out_by_the_signer_are_noted(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    (model / "config.json").write_text('{"auto_map": {"AutoModel": "modeling_x.XModel"}}')
    (model / "modeling_x.py").write_text("class XModel: pass\n")
    (model / ".git").mkdir()
    (model / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert sign(model, keys, "--ignore-paths", "modeling_x.py") == 0
    (model / "modeling_x.py").write_text("import os\nos.system('id')\n")
    report = verified(model, keys)
    notes = [(f.rule_id, f.severity.label, f.evidence["files"]) for f in report.findings if f.rule_id != "WS-SIG-009"]
    assert notes == [("WS-SIG-022", "low", "modeling_x.py")]
    assert "WS-SIG-009" in rule_ids(report) and not report.failed
    assert sign(model, keys) == 0  # signed again without the ignore: no note (git files are left out silently)
    assert rule_ids(verified(model, keys)) == {"WS-SIG-009"}


# --- 4b. the verified certificate is named (cert_validity) ----------------------------------------------------


def test_verified_line_names_the_signing_certificate(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    assert main(["sign", str(model), "--private-key", str(keys["private"]), "--signing-certificate",
                 str(keys["leaf"]), "--certificate-chain", str(keys["ca"])]) == 0
    from wscan.provenance.oms import CertificateMethod

    report = verify_model(model, model / "model.sig", CertificateMethod((keys["ca"],)), [], Config())
    [finding] = report.findings
    assert finding.rule_id == "WS-SIG-009" and "CN=wscan test signer, serial " in finding.message


# --- 9 of the report: a signature kept outside the folder (model_verdict_outside_sig) ---------------------------


def test_outside_signature_findings_reach_the_model_verdict(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    model = a_model(tmp_path / "m")
    (tmp_path / "sigs").mkdir()
    assert sign(model, keys, "--signature", str(tmp_path / "sigs" / "m.sig")) == 0
    other = tmp_path / "other.pem"
    other.write_bytes(ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    out = tmp_path / "report.json"
    assert main(["scan", str(model), "--verify", "--signature", str(tmp_path / "sigs" / "m.sig"), "--public-key",
                 str(other), "--format", "json", "-o", str(out)]) == 1
    models = json.loads(out.read_text())["models"]
    assert [m["verdict"] for m in models if Path(m["path"]).name == "m"] == ["fail"]


# --- leftovers of review 31 -------------------------------------------------------------------------------------


def test_attestation_whose_subject_is_not_its_resources_root_is_invalid(
    tmp_path: Path, keys: dict[str, Path]  # noqa: F811
) -> None:
    """Signed by the right key, yet its subject (what tools match against a model signature) is another model's."""
    from types import SimpleNamespace

    from in_toto_attestation.v1 import resource_descriptor, statement

    from wscan.provenance.attest import PREDICATE_TYPE, _signer

    model = a_model(tmp_path / "m")
    attestation = model / "wscan.attestation.sig"
    assert main(["scan", str(model), "--attest", "--private-key", str(keys["private"])]) == 0
    assert rule_ids(verify_model(model, attestation, KeyMethod(keys["public"]), [], Config(),
                                 attestation=True)) == {"WS-SIG-011"}
    original = statement_of(attestation)
    subject = original["subject"][0]  # type: ignore[index]
    for digest in ("0" * 64, subject["digest"]["sha256"][::-1]):
        resealed = statement.Statement(
            subjects=[resource_descriptor.ResourceDescriptor(name=subject["name"], digest={"sha256": digest}).pb],
            predicate_type=PREDICATE_TYPE, predicate=original["predicate"])  # type: ignore[arg-type]
        _signer(KeyMethod(keys["private"])).sign(SimpleNamespace(statement=resealed)).write(attestation)
        report = verify_model(model, attestation, KeyMethod(keys["public"]), [], Config(), attestation=True)
        assert rule_ids(report) == {"WS-SIG-013"}
        assert "not the root digest of the resources" in report.findings[0].message


def test_signature_outside_the_folder_named_like_a_model_file_hides_nothing(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """`config.json` as the signature, relative to a working directory outside the model, is not the model's."""
    model = a_model(tmp_path / "m")
    work = tmp_path / "work"
    work.mkdir()
    assert sign(model, keys, "--signature", str(work / "config.json")) == 0
    (model / "config.json").write_text('{"model_type": "tiny", "auto_map": {"AutoModel": "evil.Model"}}')
    monkeypatch.chdir(work)
    report = verify_model(model, Path("config.json"), KeyMethod(keys["public"]), [], Config())
    assert [(f.rule_id, f.evidence["file"]) for f in report.findings] == [("WS-SIG-004", "config.json")]
