"""Discovery: folders, symlinks, Hugging Face caches, LFS pointers, empty and special files."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import wscan
from wscan.discover import FileEntry, discover
from wscan.model import Observation, Severity

PAYLOAD = b"cos\nsystem\n(S'id'\ntR."


def kinds(paths: list[Path]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in discover(paths):
        if isinstance(item, FileEntry):
            out[Path(item.display).name] = "file"
        else:
            out[Path(item.location.path).name] = item.kind
    return out


def test_folder_recursion_and_skips(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "deeper" / "w.pkl").write_bytes(pickle.dumps([1]))
    (tmp_path / "empty.bin").write_bytes(b"")
    (tmp_path / "lfs.bin").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 12345\n"
    )
    os.mkfifo(tmp_path / "pipe")
    found = kinds([tmp_path])
    assert found == {
        "w.pkl": "file",
        "empty.bin": "file.empty",
        "lfs.bin": "file.lfs_pointer",
        "pipe": "file.special",
    }


def test_symlink_inside_is_scanned_outside_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "model"
    root.mkdir()
    (root / "real.pkl").write_bytes(PAYLOAD)
    (root / "inside.pkl").symlink_to(root / "real.pkl")
    outside = tmp_path / "secret.pkl"
    outside.write_bytes(PAYLOAD)
    (root / "escape.pkl").symlink_to(outside)
    (root / "broken.pkl").symlink_to(tmp_path / "nowhere")
    found = kinds([root])
    assert found["inside.pkl"] == "file"
    assert found["escape.pkl"] == "file.symlink_escape"
    assert found["broken.pkl"] == "file.broken_symlink"
    report = wscan.scan([root])
    assert {f.rule_id for f in report.findings} >= {"WS-PKL-001", "WS-FILE-014", "WS-FILE-009"}
    assert report.count("skipped") >= 2


def test_huggingface_cache_snapshots(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / "models--org--name"
    blobs, snap = repo / "blobs", repo / "snapshots" / "abc123"
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    (blobs / "deadbeef").write_bytes(PAYLOAD)
    (snap / "pytorch_model.bin").symlink_to(Path("../../blobs/deadbeef"))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    for target in (tmp_path / "hub", snap):
        report = wscan.scan([target])
        hits = [f for f in report.findings if f.rule_id == "WS-PKL-001"]
        assert len(hits) == 1, target
        assert hits[0].location.path.endswith("snapshots/abc123/pytorch_model.bin")
        # blobs/ is passed over, never reported as a special file (it was, WS-FILE-008, on every cache scan)
        assert "WS-FILE-008" not in {f.rule_id for f in report.findings}, target


def test_a_snapshot_linked_to_the_blobs_folder_is_read_through_the_blobs(tmp_path: Path) -> None:
    """Helper 249: `snapshots/main` a link to `../blobs`, so torch.load of snapshots/main/pytorch_model.bin ran a
    pickle that no scan read (blobs/ is passed over in a cache, and a linked folder is not walked). Blobs no file
    leads to are scanned themselves; scanned from snapshots/, the link leads out of the scan (high)."""
    repo = tmp_path / "hub" / "models--org--name"
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / "pytorch_model.bin").write_bytes(PAYLOAD)
    (repo / "snapshots").mkdir()
    (repo / "snapshots" / "main").symlink_to(Path("../blobs"))
    report = wscan.scan([repo])
    assert [f.location.path[len(str(repo)) + 1:] for f in report.findings if f.rule_id == "WS-PKL-001"] == [
        "blobs/pytorch_model.bin"
    ]
    assert "WS-FILE-011" in {f.rule_id for f in report.findings}
    assert "WS-FILE-012" in {f.rule_id for f in wscan.scan([repo / "snapshots"]).findings}
    linked = wscan.scan([repo / "snapshots" / "main"])  # the link itself, named on the command line: walked
    assert [f.location.path for f in linked.findings if f.rule_id == "WS-PKL-001"] == [
        str(repo / "snapshots" / "main" / "pytorch_model.bin")
    ]


def test_blobs_a_snapshot_file_leads_to_are_read_once(tmp_path: Path) -> None:
    """In a cache as the hub writes it every blob is reached through a snapshot's link to it, and scanned under that
    name only; a blob no snapshot names (an older revision's, or one planted) is scanned as itself."""
    repo = tmp_path / "models--org--name"
    blobs, snap = repo / "blobs", repo / "snapshots" / "abc123"
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    (blobs / "aaaa").write_bytes(pickle.dumps({"step": 1}))
    (blobs / "bbbb").write_bytes(PAYLOAD)
    (snap / "training_state.pkl").symlink_to(Path("../../blobs/aaaa"))
    entries = [item.display[len(str(repo)) + 1:] for item in discover([repo]) if isinstance(item, FileEntry)]
    assert entries == ["snapshots/abc123/training_state.pkl", "blobs/bbbb"]


def test_a_folder_link_named_on_the_command_line_is_walked(tmp_path: Path) -> None:
    """Helper 249: `wscan scan dirlink` (a link to a folder holding a pickle .npy) passed it as a special file."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "model.npy").write_bytes(PAYLOAD)
    (tmp_path / "dirlink").symlink_to(real)
    for named in (tmp_path / "dirlink", Path(f"{tmp_path / 'dirlink'}/")):
        report = wscan.scan([named])
        assert [f.location.path for f in report.findings if f.rule_id == "WS-PKL-001"] == [
            str(tmp_path / "dirlink" / "model.npy")
        ]
        assert "WS-FILE-008" not in {f.rule_id for f in report.findings}


def test_report_counts(tmp_path: Path) -> None:
    (tmp_path / "a.pkl").write_bytes(pickle.dumps({"x": 1}))
    (tmp_path / "b.pkl").write_bytes(PAYLOAD[:-3])
    (tmp_path / "c.bin").write_bytes(b"")
    report = wscan.scan([tmp_path])
    assert (report.count("scanned"), report.count("failed"), report.count("skipped")) == (1, 1, 1)


def test_format_from_content_not_name(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(PAYLOAD)
    (tmp_path / "weights.txt").write_bytes(PAYLOAD)
    report = wscan.scan([tmp_path])
    assert len([f for f in report.findings if f.rule_id == "WS-PKL-001"]) == 2


def test_a_file_that_cannot_be_opened_is_unreadable_whatever_its_size(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import wscan.discover

    for name, size in (("small.bin", 10), ("large.bin", 4096)):
        (tmp_path / name).write_bytes(b"x" * size)

    real_open = os.open

    def refuse(path: object, flags: int, *args: object) -> int:
        if str(path).startswith(str(tmp_path)):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(wscan.discover.os, "open", refuse)
    assert kinds([tmp_path]) == {"small.bin": "file.unreadable", "large.bin": "file.unreadable"}


def test_symlinked_folders_are_reported_with_where_they_lead(tmp_path: Path) -> None:
    """Loaders follow a symlinked custom_generate/ or module folder; a scan does not walk it."""
    root = tmp_path / "model"
    (root / "code").mkdir(parents=True)
    (root / "config.json").write_text('{"model_type": "gpt2"}')
    (root / "code" / "generate.py").write_text("def generate(model):\n    return None\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "generate.py").write_text("import os\nos.system('id')\n")
    (root / "inner").symlink_to(root / "code")
    (root / "custom_generate").symlink_to(outside)
    found = {o.location.path.rsplit("/", 1)[-1]: o for o in discover([root]) if isinstance(o, Observation)}
    assert (found["inner"].kind, found["inner"].attrs["outside"]) == ("file.symlink_dir", False)
    assert found["custom_generate"].attrs == {"target": outside.resolve().as_posix(), "outside": True, "shadows": "",
                                              "git_folder": False}
    report = wscan.scan([root])
    by_path = {(Path(f.location.path).name, f.rule_id, f.severity) for f in report.findings
               if f.rule_id.startswith("WS-FILE")}  # fmt: skip
    assert by_path == {("inner", "WS-FILE-011", Severity.MEDIUM), ("custom_generate", "WS-FILE-012", Severity.HIGH)}


def test_python_file_linked_outside_is_high(tmp_path: Path) -> None:
    root = tmp_path / "model"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "modeling_y.py").write_text("import subprocess\n")
    (outside / "w.pkl").write_bytes(pickle.dumps([1]))
    (root / "modeling_y.py").symlink_to(outside / "modeling_y.py")
    (root / "weights.pkl").symlink_to(outside / "w.pkl")
    (outside / "notes.txt").write_text("notes")
    (root / "notes.txt").symlink_to(outside / "notes.txt")
    report = wscan.scan([root])
    # Code and the files loaders open by name (weights: from_pretrained reads a linked model.safetensors) are
    # high; any other link out of the folder is medium.
    assert {(Path(f.location.path).name, f.rule_id, f.severity) for f in report.findings} == {
        ("modeling_y.py", "WS-FILE-013", Severity.HIGH), ("weights.pkl", "WS-FILE-014", Severity.HIGH),
        ("notes.txt", "WS-FILE-004", Severity.MEDIUM)}


def test_a_keras_asset_linked_outside_is_high(tmp_path: Path) -> None:
    """Keras opens a lookup layer's assets/.../vocabulary.txt by name and follows a link, even in safe mode: a
    review had an unzipped .keras folder's vocabulary read a file outside it. Outside assets/ a text link stays
    medium."""
    root = tmp_path / "model"
    (root / "assets" / "layers" / "string_lookup").mkdir(parents=True)
    (root / "config.json").write_text('{"class_name": "Sequential", "config": {}}')
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET\n")
    (root / "assets" / "layers" / "string_lookup" / "vocabulary.txt").symlink_to(secret)
    (root / "notes.txt").symlink_to(secret)
    found = {(Path(f.location.path).name, f.rule_id, f.severity) for f in wscan.scan([root]).findings
             if f.rule_id.startswith("WS-FILE")}  # fmt: skip
    assert found == {("vocabulary.txt", "WS-FILE-014", Severity.HIGH), ("notes.txt", "WS-FILE-004", Severity.MEDIUM)}


def _case_findings(root: Path) -> set[tuple[str, str, Severity]]:
    return {(str(f.evidence["names"]), f.rule_id, f.severity) for f in wscan.scan([root]).findings
            if f.rule_id in ("WS-FILE-019", "WS-FILE-020")}  # fmt: skip


def test_names_differing_only_in_case_are_reported(tmp_path: Path) -> None:
    """On macOS or Windows each pair is one file: transformers opening config.json there may get the CONFIG.JSON
    that was judged as a plain JSON file. Loader names, weights, code and folders are high; other names low."""
    root = tmp_path / "model"
    (root / "onnx").mkdir(parents=True)
    (root / "ONNX").mkdir()
    (root / "config.json").write_text('{"model_type": "bert"}')
    (root / "CONFIG.JSON").write_text('{"model_type": "bert", "configuration_files": ["config.9.json"]}')
    (root / "Model.safetensors").write_bytes(b"")
    (root / "model.safetensors").write_bytes(b"")
    (root / "Modeling_x.py").write_text("")
    (root / "modeling_x.py").write_text("")
    (root / "notes.txt").write_text("a")
    (root / "Notes.txt").write_text("b")
    (root / "single.JSON").write_text("{}")  # no other spelling beside it: nothing to report
    report = wscan.scan([root])
    assert _case_findings(root) == {
        ("CONFIG.JSON, config.json", "WS-FILE-019", Severity.HIGH),
        ("Model.safetensors, model.safetensors", "WS-FILE-019", Severity.HIGH),
        ("Modeling_x.py, modeling_x.py", "WS-FILE-019", Severity.HIGH),
        ("ONNX, onnx", "WS-FILE-019", Severity.HIGH),
        ("Notes.txt, notes.txt", "WS-FILE-020", Severity.LOW),
    }
    config = next(r for r in report.files if r.path.endswith("CONFIG.JSON"))  # its own result counts the finding
    assert config.worst == Severity.HIGH
    assert len(report.files) == 9  # the names are reported on files that are there, no file added


def test_names_differing_only_in_unicode_normalization_are_reported(tmp_path: Path) -> None:
    """macOS also takes a name's composed and decomposed spellings for one (é as one code point or e + accent)."""
    (tmp_path / "mod\u00e8le.safetensors").write_bytes(b"")
    (tmp_path / "mode\u0300le.safetensors").write_bytes(b"")
    assert {rule for _, rule, _ in _case_findings(tmp_path)} == {"WS-FILE-019"}


def test_loader_names_count_in_any_case(tmp_path: Path) -> None:
    """macOS and Windows open TOKENIZER_CONFIG.JSON when transformers asks for tokenizer_config.json: alone in its
    folder, it is judged as the loader's file (its vocab_file opened as given), and a link by such a name is one."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("api_key=hunter2\n")
    model = tmp_path / "model"
    model.mkdir()
    (model / "TOKENIZER_CONFIG.JSON").write_text('{"tokenizer_class": "BertTokenizer", "vocab_file": "/etc/passwd"}')
    (model / "Config.json").symlink_to(tmp_path / "outside" / "secret")
    found = {(Path(f.location.path).name, f.rule_id) for f in wscan.scan([model]).findings
             if f.severity >= Severity.HIGH}  # fmt: skip
    assert found == {("TOKENIZER_CONFIG.JSON", "WS-REPO-013"), ("Config.json", "WS-FILE-014")}
