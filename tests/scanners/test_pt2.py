"""PT2 archives (torch.export.save, AOTInductor packages), made by torch and then edited the way review 25's
hostile ones were."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tests.helpers.scanning import rule_ids, scan
from wscan.model import Severity
from wscan.scanners.pt2 import guard_problem

PAYLOAD = b"cos\nsystem\n(S'touch /tmp/wscan-pt2'\ntR."


class _Small(torch.nn.Module):
    def __init__(self, first: float) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)
        with torch.no_grad():
            self.linear.weight.fill_(first)
        self.register_buffer("scale", torch.full((2,), first))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scale


def export(path: Path, first: float = 0.5) -> Path:
    program = torch.export.export(_Small(first), (torch.randn(3, 4),))
    torch.export.save(program, str(path))
    return path


def edit(path: Path, change: Callable[[str, bytes], bytes | None], extra: dict[str, bytes] | None = None) -> Path:
    """Rewrite the archive with `change(name, data)` applied to each member (None drops it), plus `extra`."""
    with zipfile.ZipFile(path) as source:
        members = [(info.filename, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, "w") as target:
        for name, data in members:
            changed = change(name, data)
            if changed is not None:
                target.writestr(name, changed)
        for name, data in (extra or {}).items():
            target.writestr(name, data)
    return path


def top(path: Path) -> str:
    with zipfile.ZipFile(path) as archive:
        return next(n.split("/")[0] for n in archive.namelist() if n.endswith("/archive_format"))


def test_raw_tensors_that_look_like_pickles_or_headers_are_tensor_data(tmp_path: Path) -> None:
    """torch writes a tensor's bytes as they are; a first byte of 0x80 (a pickle's PROTO) or a length that reads as
    a safetensors header was flagged high before the layout was known (review 25: 4 of 10 seeds of a small MLP)."""
    pickle_like = struct.unpack("<f", b"\x80\xd9\x9a\x3e")[0]  # bytes 80 d9 ...: a pickle's PROTO opcode
    for index, first in enumerate((pickle_like, 0.5, -2.25)):
        report = scan(export(tmp_path / f"m{index}.pt2", first))
        assert [f.rule_id for f in report.findings if f.severity >= Severity.HIGH] == [], first


def test_a_weight_the_config_says_is_pickled_is_scanned_as_a_pickle(tmp_path: Path) -> None:
    path = export(tmp_path / "m.pt2")
    name = top(path)

    def change(member: str, data: bytes) -> bytes:
        if member == f"{name}/data/weights/model_weights_config.json":
            config = json.loads(data)
            for entry in config["config"].values():
                entry["use_pickle"] = True  # torch.load(weights_only=False) for every weight
            return json.dumps(config).encode()
        return PAYLOAD if member == f"{name}/data/weights/weight_0" else data

    assert "WS-PKL-001" in rule_ids(scan(edit(path, change)))


def _graph(path: Path, change: Callable[[dict[str, object]], None]) -> Path:
    def rewrite(member: str, data: bytes) -> bytes:
        if "/models/" in member and member.endswith(".json"):
            program = json.loads(data)
            change(program)
            return json.dumps(program).encode()
        return data

    return edit(path, rewrite)


def test_a_graph_that_reads_a_file_is_high(tmp_path: Path) -> None:
    def read_passwd(program: dict[str, object]) -> None:
        nodes = program["graph_module"]["graph"]["nodes"]  # type: ignore[index]
        nodes[0]["target"] = "torch.ops.aten.from_file.default"

    report = scan(_graph(export(tmp_path / "m.pt2"), read_passwd))
    assert "WS-PT2-002" in rule_ids(report)


def test_guard_code_that_breaks_out_of_its_expression_is_critical(tmp_path: Path) -> None:
    """Review 25's guard: `.module()` pastes it into source and execs it; the comment hides the break-out from the
    newline-stripped copy torch parses."""
    hostile = "True #\n, 'ok')\nimport os; os.system('id')\ndef __(*args):\n  torch._assert(True"

    def guard(program: dict[str, object]) -> None:
        program["guards_code"] = [hostile]

    report = scan(_graph(export(tmp_path / "m.pt2"), guard))
    assert "WS-PT2-003" in rule_ids(report)
    assert scan(export(tmp_path / "plain.pt2")).findings == []


@pytest.mark.parametrize(("guard", "problem"), [
    ("L['x'].size()[0] <= 1024", False), ("2 <= L['x'].size()[0]", False),
    ("L['x'].stride()[1] == 1 and L['x'].dtype == torch.float32", False), ("math.floor(L['n']) >= 1", False),
    ("torch.sym_max(L['x'].size()[0], 2) == 4", False),
    ("True #\nimport os", True), ("torch.os.system('id')", True), ("L['x'].numpy().tofile('/tmp/x')", True),
    ("L['x'].__class__", True), ("__import__('os')", True), ("(lambda: 1)()", True), ("x; y", True),
])  # fmt: skip
def test_guard_code_is_one_expression_over_the_inputs(guard: str, problem: bool) -> None:
    assert (guard_problem(guard) is not None) == problem


def test_an_aoti_package_is_native_code_the_loader_runs(tmp_path: Path) -> None:
    """A compiled library, or C++ source and compile flags the loader hands the system compiler (review 25 ran a
    constructor, a flags file's shell command and a static constructor in source this way)."""
    library = Path(sys.executable).read_bytes()[:4096]  # an ELF (or Mach-O) header: what a .so starts with
    for extra in (
        {"data/aotinductor/model/abc.wrapper.so": library},
        {"data/aotinductor/model/abc.wrapper.cpp": b"int x;\n",
         "data/aotinductor/model/abc.wrapper_compile_flags.json": b'{"compiler": "g++"}'},
    ):  # fmt: skip
        path = export(tmp_path / "m.pt2")
        name = top(path)
        edit(path, lambda _, data: data, {f"{name}/{member}": data for member, data in extra.items()})
        assert "WS-PT2-001" in rule_ids(scan(path))


def test_pickled_sample_inputs_stay_scanned(tmp_path: Path) -> None:
    """torch.export.load retries sample inputs with weights_only=False when the safe load fails."""
    path = export(tmp_path / "m.pt2")
    name = top(path)
    edit(path, lambda member, data: PAYLOAD if member == f"{name}/data/sample_inputs/model.pt" else data)
    assert "WS-PKL-001" in rule_ids(scan(path))


def _guard_making(marker: str) -> str:
    return f"True #\n, 'ok')\nimport os; os.mkdir({marker!r})\ndef __(*args):\n  torch._assert(True"


def _loads_and_runs(path: Path, folder: Path) -> bool:
    """torch.export.load(path).module()(x) in a process of its own, in `folder`: whether it made `marker` there."""
    code = "import sys, torch; torch.export.load(sys.argv[1]).module()(torch.randn(3, 4))"
    subprocess.run([sys.executable, "-I", "-c", code, str(path)], cwd=folder, capture_output=True, timeout=300)
    return (folder / "marker").exists()


@pytest.mark.parametrize("how", ["weight-named-in-capitals", "format-record-in-capitals", "graph-not-named-json"])
def test_what_torch_finds_whatever_the_names_case_or_suffix_is_read(tmp_path: Path, how: str) -> None:
    """torch's zip reader finds records whatever their case, and torch.export.load reads every models/* record as a
    graph: a raw weight unpickled as `WEIGHT_0`, an `ARCHIVE_FORMAT` record and a `models/modelXjson` graph each ran
    a payload while wscan passed the file (red team, 2026-12-03)."""
    path = export(tmp_path / "m.pt2")
    name = top(path)
    if how == "weight-named-in-capitals":
        # Its import past the 64 KiB a raw tensor is sniffed over: read only as the pickle torch unpickles.
        body = b"\x80\x02X" + struct.pack("<I", 70_000) + b"a" * 70_000 + b"0" + (
            b"cos\nmkdir\n(S'marker'\ntR.")
        body += b"\0" * (-len(body) % 4)

        def change(member: str, data: bytes) -> bytes:
            if member == f"{name}/data/weights/model_weights_config.json":
                config = json.loads(data)
                first = next(iter(config["config"].values()))
                config["config"]["extra"] = dict(first, path_name=first["path_name"].upper(), use_pickle=True)
                return json.dumps(config).encode()
            return body if member == f"{name}/data/weights/{first_weight}" else data

        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read(f"{name}/data/weights/model_weights_config.json"))
        first_weight = next(iter(config["config"].values()))["path_name"]
        edit(path, change)
        code = "import sys, torch; torch.export.load(sys.argv[1])"
        subprocess.run([sys.executable, "-I", "-c", code, str(path)], cwd=tmp_path, capture_output=True, timeout=300)
        assert (tmp_path / "marker").exists()
        assert "WS-PKL-001" in rule_ids(scan(path))
        return
    _graph(path, lambda program: program.__setitem__("guards_code", [_guard_making("marker")]))
    renamed = {"format-record-in-capitals": ("/archive_format", "/ARCHIVE_FORMAT"),
               "graph-not-named-json": ("/models/model.json", "/models/modelXjson")}[how]
    with zipfile.ZipFile(path) as source:
        members = [(info.filename, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, "w") as target:
        for member, data in members:
            target.writestr(member.replace(*renamed), data)
    assert _loads_and_runs(path, tmp_path)
    assert "WS-PT2-003" in rule_ids(scan(path))
