"""Helper 234's red team of `sign` / `verify` / `scan --verify` / `scan --attest`: each case, rebuilt here, is a
finding or a usage error now, never a pass, a traceback or a hashing run without end."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.test_provenance import a_model, keys  # noqa: F401  (keys is a fixture)
from tests.test_review31_provenance import PAYLOAD, rule_ids, sign, verified
from wscan.cli import main
from wscan.model import Severity
from wscan.report import Report

CLEAN = b"\x80\x02}q\x00."  # an empty dict


def _swap_during_scan(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the scanners run, the hostile file is clean; before and after, it is what it was (same bytes, so it
    hashes the same both times): helper 234 did this with inotify."""
    from wscan.engine import Engine

    scan = Engine.scan
    original = (model / "pytorch_model.bin").read_bytes()

    def scan_swapped(self: Engine, *args: Any, **kwargs: Any) -> Report:
        (model / "pytorch_model.bin").write_bytes(CLEAN)
        try:
            return scan(self, *args, **kwargs)
        finally:
            (model / "pytorch_model.bin").write_bytes(original)

    monkeypatch.setattr(Engine, "scan", scan_swapped)


def _findings(path: Path) -> list[tuple[str, str]]:
    return [(f["rule_id"], f["severity"]) for f in json.loads(path.read_text())["findings"]]


def test_a_file_swapped_and_put_back_during_the_scan_is_not_attested(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    model = a_model(tmp_path / "m")
    (model / "pytorch_model.bin").write_bytes(PAYLOAD)
    _swap_during_scan(model, monkeypatch)
    out = tmp_path / "report.json"
    assert main(["scan", str(model), "--attest", "--private-key", str(keys["private"]), "--format", "json",
                 "-o", str(out)]) == 1  # fmt: skip
    assert not (model / "wscan.attestation.sig").exists()
    assert ("WS-SIG-021", "high") in _findings(out)


def test_a_file_swapped_and_put_back_during_a_scan_and_verify_is_high(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """The publisher signed the hostile file; the scan read a clean one; verification hashed the signed one."""
    model = a_model(tmp_path / "m")
    (model / "pytorch_model.bin").write_bytes(PAYLOAD)
    assert sign(model, keys) == 0
    _swap_during_scan(model, monkeypatch)
    out = tmp_path / "report.json"
    assert main(["scan", str(model), "--verify", "--public-key", str(keys["public"]), "--format", "json",
                 "-o", str(out)]) == 1  # fmt: skip
    found = _findings(out)
    assert ("WS-SIG-023", "high") in found and ("WS-SIG-009", "info") in found
    # untouched, the same command passes
    monkeypatch.undo()
    (model / "pytorch_model.bin").write_bytes(CLEAN)
    assert sign(model, keys) == 0
    assert main(["scan", str(model), "--verify", "--public-key", str(keys["public"]), "--format", "json",
                 "-o", str(out)]) == 0  # fmt: skip


def test_an_attestation_that_says_pass_beside_a_finding_at_its_threshold_fails(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """Signed by the trusted key, "pass" with a critical finding recorded verified as clean (WS-SIG-011)."""
    model = a_model(tmp_path / "m")
    (model / "pytorch_model.bin").write_bytes(PAYLOAD)
    monkeypatch.setattr(Report, "verdict", lambda self: "pass")
    assert main(["scan", str(model), "--attest", "--private-key", str(keys["private"]), "--format", "json",
                 "-o", str(tmp_path / "scan.json")]) in (0, 1)  # fmt: skip
    monkeypatch.undo()
    out = tmp_path / "verify.json"
    code = main(["verify", str(model), "--attestation", str(model / "wscan.attestation.sig"), "--public-key",
                 str(keys["public"]), "--format", "json", "-o", str(out)])  # fmt: skip
    assert code == 1
    assert ("WS-SIG-010", "high") in _findings(out) and not any(r == "WS-SIG-011" for r, _ in _findings(out))


def test_files_added_beside_every_signed_one_are_reported_unhashed(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """Helper 234's 15 TiB sparse file was hashed in full before it was reported as added."""
    from wscan.provenance import verify

    model = a_model(tmp_path / "m")
    assert sign(model, keys) == 0
    with (model / "extra.bin").open("wb") as stream:
        stream.truncate(1 << 40)  # sparse: a terabyte that takes no room
    hashed: list[str] = []
    hash_model = verify.hash_model

    def recorded(model_dir: Path, config: Any, ignore: Any, files: list[Path]) -> Any:
        hashed.extend(path.name for path in files)
        return hash_model(model_dir, config, ignore, files)

    monkeypatch.setattr(verify, "hash_model", recorded)
    report = verified(model, keys)
    assert "WS-SIG-005" in rule_ids(report) and report.failed
    assert "extra.bin" not in hashed and "config.json" in hashed


def test_a_shard_size_making_too_many_shards_is_refused_both_ways(
    tmp_path: Path, keys: dict[str, Path]  # noqa: F811
) -> None:
    """One task per shard: a one-byte shard size held gigabytes for a megabyte model (helper 234). A signature can
    list only so many shards (a bundle is at most 16 MiB), but the folder verified may hold more bytes."""
    from model_signing import hashing, signing

    model = a_model(tmp_path / "m")
    (model / "big.bin").write_bytes(os.urandom(200_001))
    assert sign(model, keys, "--shard-size", "1") == 2  # a usage error
    (model / "big.bin").unlink()
    config = signing.Config().use_elliptic_key_signer(private_key=keys["private"])
    config.set_hashing_config(hashing.Config().use_shard_serialization(shard_size=1, ignore_paths=["model.sig"]))
    config.sign(model, model / "model.sig")  # the library signs the small folder
    (model / "weights" / "model.safetensors").write_bytes(os.urandom(200_001))  # then it grows
    report = verified(model, keys)
    assert [f.rule_id for f in report.findings] == ["WS-SIG-001"] and report.findings[0].severity >= Severity.HIGH
    assert "more than 100,000" in report.findings[0].message


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_attesting_a_folder_the_library_will_not_hash_is_a_usage_error(
    tmp_path: Path, keys: dict[str, Path], kind: str, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    model = a_model(tmp_path / "m")
    if kind == "symlink":
        (model / "link.json").symlink_to(model / "config.json")
    else:
        os.mkfifo(model / "pipe")
    assert main(["scan", str(model), "--attest", "--private-key", str(keys["private"])]) == 2
    assert "cannot attest" in capsys.readouterr().err
