"""Tampered model folders that once passed `wscan verify`, `scan --verify` or `verify --attestation` (a security
review's reproducers, /tmp/prov_review): each must now be a finding."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_provenance import a_model, keys  # noqa: F401  (keys is a fixture)
from wscan.cli import main
from wscan.config import Config
from wscan.model import Severity
from wscan.provenance.attest import attest
from wscan.provenance.oms import KeyMethod
from wscan.provenance.verify import observe, verify_model
from wscan.report import Report

PAYLOAD = b"cposix\nsystem\n(S'echo hi'\ntR."  # never loaded
UNKNOWN_IMPORT = b"\x80\x02cmymodule\nThing\nq\x00)\x81q\x01."  # WS-PKL-003 (high), never loaded


def signed(folder: Path, keys: dict[str, Path], *extra: str) -> Path:  # noqa: F811
    model = a_model(folder)
    assert main(["sign", str(model), "--private-key", str(keys["private"]), *extra]) == 0
    return model


def verified(model: Path, keys: dict[str, Path], signature: Path | None = None) -> Report:  # noqa: F811
    return verify_model(model, signature or model / "model.sig", KeyMethod(keys["public"]), [], Config())


def found(report: Report) -> set[tuple[str, str]]:
    """(rule, file name inside the model) of every finding."""
    return {(f.rule_id, str(f.evidence.get("file", ""))) for f in report.findings}


def predicate_of(path: Path) -> dict[str, object]:
    statement = json.loads(base64.b64decode(json.loads(path.read_text())["dsseEnvelope"]["payload"]))
    predicate: dict[str, object] = statement["predicate"]
    return predicate


# --- 1. a signature file that is a symbolic link ------------------------------------------------------------


def test_symlinked_signature_is_reported_and_not_read(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = signed(tmp_path / "m", keys)
    (model / "model.sig").rename(model / "chat_template.jinja")  # the bundle's bytes under a name loaders read
    (model / "model.sig").symlink_to("chat_template.jinja")
    observations, _ = observe(model, model / "model.sig", KeyMethod(keys["public"]), [])
    assert observations[0].kind == "provenance.symlink" and observations[0].attrs["role"] == "signature"
    report = verified(model, keys)
    # Never opened through the link (review 31: a link to /dev/zero or a FIFO hung or filled memory).
    assert found(report) == {("WS-SIG-008", "model.sig"), ("WS-SIG-003", "")}
    assert all(f.severity >= Severity.HIGH for f in report.findings) and report.failed
    assert main(["scan", str(model), "--verify", "--public-key", str(keys["public"])]) == 1


def test_symlinked_signature_is_reported_even_when_unreadable(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = signed(tmp_path / "m", keys)
    (model / "model.sig").unlink()
    (model / "model.sig").symlink_to("/etc/hostname")
    assert {f.rule_id for f in verified(model, keys).findings} == {"WS-SIG-008", "WS-SIG-003"}


def test_symlinked_attestation_is_reported(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    attestation = tmp_path / "elsewhere.sig"
    assert main(["scan", str(model), "--attest", "--attestation", str(attestation),
                 "--private-key", str(keys["private"])]) == 0
    (model / "notes.txt").write_bytes(attestation.read_bytes())
    (model / "wscan.attestation.sig").symlink_to("notes.txt")
    report = verify_model(model, model / "wscan.attestation.sig", KeyMethod(keys["public"]), [], Config(),
                          attestation=True)
    assert {("WS-SIG-008", "wscan.attestation.sig"), ("WS-SIG-003", "")} <= found(report)  # not read via the link


# --- 2. FIFOs, sockets and device nodes ---------------------------------------------------------------------


def test_special_files_are_unsigned_files(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = signed(tmp_path / "m", keys)
    os.mkfifo(model / "pytorch_model.bin")
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(model / "tokenizer.json"))
        (model / "config.json").unlink()
        os.mkfifo(model / "config.json")  # a signed file replaced by a FIFO
        report = verified(model, keys)
    finally:
        listener.close()
    assert found(report) == {("WS-SIG-014", "pytorch_model.bin"), ("WS-SIG-014", "tokenizer.json"),
                             ("WS-SIG-014", "config.json")}
    types = {f.evidence["file"]: (f.evidence["type"], f.evidence["signed"]) for f in report.findings}
    assert types == {"pytorch_model.bin": ("FIFO", False), "tokenizer.json": ("socket", False),
                     "config.json": ("FIFO", True)}
    assert all(f.severity == Severity.HIGH for f in report.findings)


def test_device_node_is_an_unsigned_file(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """A real character device where root can make one; elsewhere the walk is shown one (lstat says so)."""
    model = signed(tmp_path / "m", keys)
    node = model / "weights" / "zero.bin"
    if os.geteuid() == 0:
        os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    else:
        node.write_bytes(b"")
        real_lstat = os.lstat

        def lstat(path: object) -> os.stat_result:
            result = real_lstat(path)  # type: ignore[arg-type]
            if os.fspath(path) != os.fspath(node):  # type: ignore[arg-type]
                return result
            return os.stat_result((stat.S_IFCHR | 0o600, *tuple(result)[1:]))

        monkeypatch.setattr(os, "lstat", lstat)
    report = verified(model, keys)
    assert [(f.rule_id, f.evidence["type"]) for f in report.findings] == [("WS-SIG-014", "character device")]


# --- 3. empty files -------------------------------------------------------------------------------------


def test_empty_file_added_to_a_sharded_signature(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = signed(tmp_path / "m", keys, "--shard-size", "4096")
    assert {f.rule_id for f in verified(model, keys).findings} == {"WS-SIG-009"}
    (model / "added_tokens.json").touch()  # no shard, so no resource: it used to be invisible
    assert found(verified(model, keys)) == {("WS-SIG-005", "added_tokens.json")}
    (model / "added_tokens.json").unlink()
    (model / "config.json").write_bytes(b"")  # a signed file emptied used to read as removed
    assert found(verified(model, keys)) == {("WS-SIG-004", "config.json")}


def test_sharded_signing_refuses_empty_files(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    (model / "__init__.py").touch()
    (model / ".gitignore").touch()  # left out of every signature: not a reason to refuse
    assert main(["sign", str(model), "--private-key", str(keys["private"]), "--shard-size", "4096"]) == 2
    assert not (model / "model.sig").exists()
    assert main(["sign", str(model), "--private-key", str(keys["private"]), "--shard-size", "4096",
                 "--ignore-paths", "__init__.py"]) == 0
    assert {f.rule_id for f in verified(model, keys).findings} == {"WS-SIG-009", "WS-SIG-022"}  # __init__.py noted


def test_signed_empty_file_still_verifies(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    (model / "__init__.py").touch()
    assert main(["sign", str(model), "--private-key", str(keys["private"])]) == 0
    report = verified(model, keys)
    assert [(f.rule_id, f.evidence["files"]) for f in report.findings] == [("WS-SIG-009", 3)]
    (model / "added_tokens.json").touch()
    assert found(verified(model, keys)) == {("WS-SIG-005", "added_tokens.json")}


# --- 4. folders that cannot be listed -----------------------------------------------------------------------


def _hidden_folder(tmp_path: Path, keys: dict[str, Path]) -> Path:  # noqa: F811
    model = signed(tmp_path / "m", keys)
    (model / "extra").mkdir()
    (model / "extra" / "evil.py").write_text("print('unsigned code ran')\n")
    return model


def _verify_as_ordinary_user(
    model: Path, keys: dict[str, Path], refused: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> list[tuple[str, str]]:
    """(rule, file) of each finding of `wscan verify`, run as a user permissions apply to: root drops its DAC
    capabilities with setpriv first, as the review did. Where that cannot be done, the permission error is
    raised for `refused` in this process instead (os.open and os.scandir refuse it), so the test always runs."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv is not None:
        drop = "-dac_override,-dac_read_search"
        code = ("import sys; from wscan.cli import main; "
                "sys.exit(main(['verify', sys.argv[1], '--public-key', sys.argv[2], '--format', 'json']))")
        result = subprocess.run([setpriv, "--bounding-set", drop, "--inh-caps", drop, sys.executable, "-c", code,
                                 str(model), str(keys["public"])],
                                capture_output=True, text=True, timeout=120, check=False)
        if not (result.returncode == 2 and "setpriv" in result.stderr):
            assert result.returncode == 1, result.stdout + result.stderr
            return [(f["rule_id"], f["evidence"]["file"]) for f in json.loads(result.stdout)["findings"]]
    if os.geteuid() == 0:  # root without a way to drop its override: refuse the path here
        real_open, real_scandir = os.open, os.scandir

        def refuse(path: object) -> None:
            if os.fspath(path) == os.fspath(refused):  # type: ignore[arg-type]
                raise PermissionError(13, "Permission denied", os.fspath(path))  # type: ignore[arg-type]

        def fake_open(path: object, *args: object, **kwargs: object) -> int:
            refuse(path)
            return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

        def fake_scandir(path: object = ".") -> object:
            refuse(path)
            return real_scandir(path)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "open", fake_open)
        monkeypatch.setattr(os, "scandir", fake_scandir)
    report = verified(model, keys)
    return [(f.rule_id, str(f.evidence["file"])) for f in report.findings]


def test_unlistable_folder_is_a_finding(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """A real listing failure: mode 0o000."""
    model = _hidden_folder(tmp_path, keys)
    os.chmod(model / "extra", 0o000)
    try:
        rules = _verify_as_ordinary_user(model, keys, model / "extra", monkeypatch)
    finally:
        os.chmod(model / "extra", 0o755)
    assert rules == [("WS-SIG-015", "extra")]


def test_unreadable_signed_file_is_a_finding_not_a_traceback(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """Hashing opened every file at once and a PermissionError ended verify with a traceback (exit 0 from the
    shell's view of a crash is not the point: nothing was verified and nothing said why)."""
    model = signed(tmp_path / "m", keys)
    target = model / "config.json"
    os.chmod(target, 0o000)
    try:
        rules = _verify_as_ordinary_user(model, keys, target, monkeypatch)
    finally:
        os.chmod(target, 0o644)
    assert rules == [("WS-SIG-015", "config.json")]


def test_listing_error_is_a_finding_simulated(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """Any error os.walk meets (here a listing refused, whoever runs the test), and a signed file inside."""
    model = _hidden_folder(tmp_path, keys)
    real_scandir = os.scandir
    refused = os.path.join(str(model), "weights")

    def scandir(path: str) -> object:
        if os.fspath(path) == refused:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report = verified(model, keys)
    assert found(report) == {("WS-SIG-015", "weights"), ("WS-SIG-005", "extra/evil.py"),
                             ("WS-SIG-006", "weights/model.safetensors")}
    (finding,) = [f for f in report.findings if f.rule_id == "WS-SIG-015"]
    assert finding.severity == Severity.HIGH and "Permission denied" in finding.message


# --- 5. scan attestations -----------------------------------------------------------------------------------


def _attest(model: Path, keys: dict[str, Path], *options: str) -> int:  # noqa: F811
    return main(["scan", str(model), "--attest", "--private-key", str(keys["private"]), *options])


def _verify_attestation(model: Path, keys: dict[str, Path], config: Config | None = None) -> Report:  # noqa: F811
    return verify_model(model, model / "wscan.attestation.sig", KeyMethod(keys["public"]), [], config or Config(),
                        attestation=True)


def _blobs_beside_snapshots(folder: Path, blob: bytes = PAYLOAD) -> Path:
    (folder / "blobs").mkdir(parents=True)
    (folder / "snapshots").mkdir()
    (folder / "blobs" / "pytorch_model.bin").write_bytes(blob)
    (folder / "snapshots" / ".keep").touch()
    (folder / "modules.json").write_text('[{"idx": 0, "name": "0", "path": "blobs", '
                                         '"type": "sentence_transformers.models.Transformer"}]')
    return folder


def test_attested_files_the_scan_never_read(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    # Bytes no scanner knows: the scan skips them, the attestation hashes them all the same.
    model = _blobs_beside_snapshots(tmp_path / "models--org--name", bytes(range(7, 250)) * 4)
    assert _attest(model, keys) == 0
    predicate = predicate_of(model / "wscan.attestation.sig")
    assert predicate["verdict"] == "pass"
    report = _verify_attestation(model, keys)
    assert ("WS-SIG-016", "blobs/pytorch_model.bin") in found(report)
    assert report.failed


@pytest.mark.parametrize("name", ["m", "models--org--name"])
def test_blobs_beside_snapshots_are_scanned(tmp_path: Path, keys: dict[str, Path], name: str) -> None:  # noqa: F811
    """In a folder named like a Hugging Face cache repo too, since helper 249: a blob no snapshot leads to is read
    as itself (the cache-named folder's blobs were attested as clean, never read)."""
    model = _blobs_beside_snapshots(tmp_path / name)
    assert _attest(model, keys) == 1  # the pickle in blobs/ is read now
    predicate = predicate_of(model / "wscan.attestation.sig")
    assert predicate["verdict"] == "fail"
    report = _verify_attestation(model, keys)
    assert {f.rule_id for f in report.findings} == {"WS-SIG-010"}


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "trusted.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("setting", [
    'ignore:\n  - rule: "*"\n    paths: ["*"]\n',
    "severity:\n  WS-PKL-001: info\n",
])
def test_attestation_whose_config_hid_findings(tmp_path: Path, keys: dict[str, Path], setting: str) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    (model / "payload.pkl").write_bytes(PAYLOAD)
    assert _attest(model, keys, "--config", str(_config(tmp_path, setting))) == 0  # "clean"
    recorded = predicate_of(model / "wscan.attestation.sig")["config"]
    assert isinstance(recorded, dict) and recorded["hidden"]["count"] >= 1
    assert recorded["hidden"]["worst"] == "critical" and "WS-PKL-001" in recorded["hidden"]["rules"]
    report = _verify_attestation(model, keys)
    rules = {f.rule_id: f for f in report.findings}
    assert set(rules) - {"WS-SIG-012"} == {"WS-SIG-011", "WS-SIG-018"}  # 012: a severity override changes the digest
    assert rules["WS-SIG-018"].severity == Severity.HIGH and report.failed
    assert "critical" in rules["WS-SIG-018"].message


def test_attestation_with_allowed_callables(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    (model / "state.pkl").write_bytes(UNKNOWN_IMPORT)
    assert _attest(model, keys, "--config", str(_config(tmp_path, "allow: [mymodule.Thing]\n"))) == 0
    recorded = predicate_of(model / "wscan.attestation.sig")["config"]
    assert isinstance(recorded, dict) and recorded["allow"] == ["mymodule.Thing"]
    report = _verify_attestation(model, keys)
    rules = {f.rule_id: f for f in report.findings}
    assert set(rules) >= {"WS-SIG-011", "WS-SIG-017"} and "WS-SIG-018" not in rules
    assert rules["WS-SIG-017"].severity == Severity.MEDIUM and "mymodule.Thing" in rules["WS-SIG-017"].message


def test_attestation_with_an_ignore_that_hid_nothing(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    config = _config(tmp_path, 'ignore:\n  - rule: WS-PKL-001\n    paths: ["nothing/*"]\n')
    assert _attest(model, keys, "--config", str(config)) == 0
    rules = {f.rule_id: f.severity for f in _verify_attestation(model, keys).findings}
    assert rules == {"WS-SIG-011": Severity.INFO, "WS-SIG-017": Severity.MEDIUM}


def test_attestation_with_a_laxer_threshold(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    (model / "state.pkl").write_bytes(UNKNOWN_IMPORT)
    assert _attest(model, keys, "--fail-on", "critical") == 0  # a high finding, recorded, verdict "pass"
    report = _verify_attestation(model, keys)
    assert {f.rule_id for f in report.findings} == {"WS-SIG-011", "WS-SIG-018"} and report.failed
    # A consumer whose own threshold is critical is not told about it.
    report = _verify_attestation(model, keys, Config(fail_on=Severity.CRITICAL))
    assert {f.rule_id for f in report.findings} == {"WS-SIG-011"}


def test_default_attestation_records_default_settings(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = a_model(tmp_path / "m")
    assert _attest(model, keys) == 0
    recorded = predicate_of(model / "wscan.attestation.sig")["config"]
    assert recorded == {"file": "", "fail_on": "high", "ignores": [], "severity": {}, "lowered": [], "allow": [],
                        "allow_count": 0, "rule_files": [], "replaced_rules": [], "changed_lists": [],
                        "hidden": {"count": 0, "worst": None, "rules": []}}
    assert [f.rule_id for f in _verify_attestation(model, keys).findings] == ["WS-SIG-011"]


def test_old_attestation_without_settings_still_verifies(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    from wscan.engine import Engine

    model = a_model(tmp_path / "m")
    report = Engine(Config()).scan([model])
    attest(model, report, KeyMethod(keys["private"]), model / "wscan.attestation.sig", [])  # as before: no settings
    assert "config" not in predicate_of(model / "wscan.attestation.sig")
    verification = _verify_attestation(model, keys)
    assert {(f.rule_id, f.severity) for f in verification.findings} == {("WS-SIG-011", Severity.INFO),
                                                                        ("WS-SIG-019", Severity.INFO)}
    assert not verification.failed


# --- 6. file names that look like shards --------------------------------------------------------------------


def test_file_named_like_a_shard(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    model = signed(tmp_path / "m", keys)
    (model / "weights" / "model.safetensors:0:1").write_bytes(b"unsigned")
    assert found(verified(model, keys)) == {("WS-SIG-005", "weights/model.safetensors:0:1")}


def test_attestation_whose_rule_pack_hid_findings(tmp_path: Path, keys: dict[str, Path]) -> None:  # noqa: F811
    """A pack that only moves os.system to `dangerous-exceptions` made a 'clean' attestation that verified with a
    low digest mismatch: the built-in rules' scan is compared whenever packs are named, and list changes recorded."""
    model = a_model(tmp_path / "m")
    (model / "payload.pkl").write_bytes(PAYLOAD)
    pack = tmp_path / "quiet.yaml"
    pack.write_text("pack: quiet\nlists:\n  dangerous-exceptions: [os.system, posix.system]\nrules: []\n")
    assert _attest(model, keys, "--config", str(_config(tmp_path, f"rules: [{pack}]\n"))) == 0  # "clean"
    recorded = predicate_of(model / "wscan.attestation.sig")["config"]
    assert isinstance(recorded, dict) and "dangerous-exceptions" in recorded["changed_lists"]
    report = _verify_attestation(model, keys)
    rules = {f.rule_id: f for f in report.findings}
    assert "WS-SIG-018" in rules and report.failed
    assert "dangerous-exceptions" in rules["WS-SIG-018"].message


def test_attestation_made_inside_the_model_folder(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """`cd model && wscan scan . --attest`: report paths have no './', so every file looked unscanned (WS-SIG-016)."""
    model = a_model(tmp_path / "m")
    monkeypatch.chdir(model)
    assert main(["scan", ".", "--attest", "--private-key", str(keys["private"])]) == 0
    files = predicate_of(model / "wscan.attestation.sig")["files"]
    assert isinstance(files, list) and {"config.json"} <= {entry["path"] for entry in files}
    assert {f.rule_id for f in _verify_attestation(model, keys).findings} == {"WS-SIG-011"}
