"""TorchScript archives: their code is listed for review, their pickles judged as torch.jit.load reads them."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import torch

import wscan


class Doubler(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * 2


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ts") / "model.pt"
    torch.jit.save(torch.jit.script(Doubler()), str(path))
    return path


def test_torchscript_is_clean_but_code_is_listed(scripted: Path) -> None:
    report = wscan.scan([scripted])
    assert not report.failed
    assert {f.rule_id for f in report.findings} == {"WS-TS-001"}
    assert all(f.severity.label == "info" for f in report.findings)


def test_payload_in_torchscript_data_pkl_is_caught(scripted: Path, tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.pt"
    with zipfile.ZipFile(scripted) as src, zipfile.ZipFile(hostile, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/data.pkl"):
                data = b"cos\nsystem\n(S'echo pwned'\ntR."
            dst.writestr(info.filename, data)
    report = wscan.scan([hostile])
    assert "WS-PKL-001" in {f.rule_id for f in report.findings}


def test_torch_names_outside_torchscript_are_not_archive_types(tmp_path: Path) -> None:
    path = tmp_path / "plain.pkl"
    path.write_bytes(b"\x80\x04\x8c\t__torch__\x8c\x04Evil\x93)\x81.")
    report = wscan.scan([path])
    assert "WS-PKL-003" in {f.rule_id for f in report.findings}
