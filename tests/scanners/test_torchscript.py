"""TorchScript archives: their code is listed for review, their pickles judged as torch.jit.load reads them."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
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


class _Writer(torch.nn.Module):  # type: ignore[misc]
    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.save(x, self.path)
        return x


class _Reader(torch.nn.Module):  # type: ignore[misc]
    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.from_file(self.path, False, 4, dtype=torch.uint8)


def test_torchscript_that_writes_or_reads_files_is_high(tmp_path: Path) -> None:
    """A seventh review: TorchScript alone wrote a file outside the folder at model(x) (torch.save) and read one
    (torch.from_file), while wscan listed the code as info only. Proved here with torch.jit.load; WS-TS-002."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"SECRET")
    modules = {"writer": _Writer(str(outside / "written")), "reader": _Reader(str(outside / "secret"))}
    for name, module in modules.items():
        path = tmp_path / f"{name}.pt"
        torch.jit.save(torch.jit.script(module), str(path))
        result = torch.jit.load(str(path))(torch.zeros(2))
        report = wscan.scan([path])
        assert "WS-TS-002" in {f.rule_id for f in report.findings if f.severity.label == "high"}, name
    assert (outside / "written").is_file()
    assert bytes(result.tolist()) == b"SECR"


@pytest.mark.parametrize(
    "spelling",
    ['getattr(torch, "save")', "torch.\\\n    save", "(torch.  # a comment\n    save)", 'getattr(ops.aten, "sa" "ve")',
     "torch . save"],
)
def test_every_spelling_of_a_file_operator_is_found(tmp_path: Path, spelling: str) -> None:
    """An eighth review spelled torch.save five more ways torch.jit.load compiles (getattr with a literal, a line
    continuation, a comment inside brackets) and wrote files while a regular expression saw nothing; the code is
    read with Python's tokenizer now, and names and joined string literals are compared."""
    path = tmp_path / "writer.pt"
    torch.jit.save(torch.jit.script(_Writer(str(tmp_path / "written"))), str(path))
    edited = tmp_path / "edited.pt"
    replaced = 0
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(edited, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if "/code/" in info.filename and info.filename.endswith(".py"):
                replaced += data.count(b"torch.save")
                data = data.replace(b"torch.save", spelling.encode())
            dst.writestr(info, data)
    assert replaced == 1
    torch.jit.load(str(edited))(torch.zeros(2))  # torch compiles the spelling and runs it
    assert (tmp_path / "written").is_file()
    assert "WS-TS-002" in {f.rule_id for f in wscan.scan([edited]).findings}


def _edited(source: Path, target: Path, edit: Callable[[str, bytes], tuple[str, bytes]]) -> Path:
    """`source` with each code/ file's name and text changed by `edit`."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for info in src.infolist():
            name, data = info.filename, src.read(info)
            if "/code/" in name and name.endswith(".py"):
                name, data = edit(name, data)
            dst.writestr(name, data)
    return target


def test_torchscript_code_the_tokenizer_cannot_read_is_high(scripted: Path, tmp_path: Path) -> None:
    """Text Python's tokenizer reads otherwise than TorchScript's lexer: a ninth review hid a torch.save line behind
    a carriage return in a comment (Python ends the comment there, then reads a string over the next lines;
    TorchScript compiled the line and wrote the file). Control characters, and tokens Python cannot read, are
    WS-TS-003."""
    odd = _edited(scripted, tmp_path / "odd.pt", lambda name, data: (name, data + b"\n$ = 1\n"))
    assert "WS-TS-003" in {f.rule_id for f in wscan.scan([odd]).findings}
    hidden = b'  # note\r"""\n    torch.save(x, "/tmp/nowhere")\n    # """\n'
    carriage = _edited(scripted, tmp_path / "cr.pt", lambda name, data: (name, data.replace(b"\n", hidden, 1)))
    assert "WS-TS-003" in {f.rule_id for f in wscan.scan([carriage]).findings}


def test_a_statement_after_a_type_comment_is_read(tmp_path: Path) -> None:
    """TorchScript's lexer makes a token of `# type:` and a one-line def parses a statement after it, which Python
    reads as part of the comment: a tenth review wrote a file at model(x) from there. Such comments are read as
    code."""
    path = tmp_path / "writer.pt"
    torch.jit.save(torch.jit.script(Doubler()), str(path))
    marker = tmp_path / "written"

    def one_line(name: str, data: bytes) -> tuple[str, bytes]:
        text = data.decode()
        head, sep, _ = text.partition("  def forward(")
        if not sep:
            return name, data
        line = (f'  def forward(self: __torch__.{name.split("/code/")[1][:-3].replace("/", ".")}.Doubler, x: Tensor)'
                f' -> Tensor: # type: (Tensor) -> Tensor return (torch.save(x, "{marker}"), x)[1]\n')  # fmt: skip
        return name, (head + line).encode()

    edited = _edited(path, tmp_path / "typed.pt", one_line)
    torch.jit.load(str(edited))(torch.zeros(2))
    assert marker.is_file()
    assert "WS-TS-002" in {f.rule_id for f in wscan.scan([edited]).findings}


def _hash_type(name: str, data: bytes) -> tuple[str, bytes]:
    """The eleventh review's shape: `#type: '''` opens a string for a reader that un-comments it, not for torch."""
    quotes = b"'" * 3
    data = data.replace(b"torch.save", b"#type: " + quotes + b"\n    torch.save", 1)
    return name, data.replace(b"\n    return", b"\n    # " + quotes + b"\n    return", 1)


def test_an_eleventh_reviews_shapes_are_high(tmp_path: Path) -> None:
    """`#type:` is a plain comment to TorchScript (only `# type:` is its token), so it stays one here; an archive
    whose data.pkl is named DATA.PKL is still TorchScript to torch; a flatbuffer module (PTMF) runs its code on
    torch.jit.load and is not read (WS-TS-004); the lite interpreter runs bytecode.pkl, not code/."""
    path = tmp_path / "writer.pt"
    module = torch.jit.script(_Writer(str(tmp_path / "written")))
    torch.jit.save(module, str(path))
    hidden = _edited(path, tmp_path / "hash.pt", _hash_type)
    torch.jit.load(str(hidden))(torch.zeros(2))
    assert (tmp_path / "written").is_file()
    assert "WS-TS-002" in {f.rule_id for f in wscan.scan([hidden]).findings}
    upper = tmp_path / "upper.pt"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(upper, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename.replace("/data.pkl", "/DATA.PKL"), src.read(info))
    assert "WS-TS-002" in {f.rule_id for f in wscan.scan([upper]).findings}
    flat = tmp_path / "flat.pt"
    torch.jit.save_jit_module_to_flatbuffer(module, str(flat))
    assert "WS-TS-004" in {f.rule_id for f in wscan.scan([flat]).findings}
    lite = tmp_path / "lite.ptl"
    module._save_for_lite_interpreter(str(lite))
    located = {f.location.describe() for f in wscan.scan([lite]).findings if f.rule_id == "WS-TS-002"}
    assert any("/bytecode.pkl" in where for where in located), located


def test_code_named_in_any_case_is_read(tmp_path: Path) -> None:
    """torch finds archive members whatever their case: a ninth review's `code/__torch__.PY` and `CODE/` folder
    wrote files while wscan read no code."""
    path = tmp_path / "writer.pt"
    torch.jit.save(torch.jit.script(_Writer(str(tmp_path / "written"))), str(path))
    changes: dict[str, Callable[[str, bytes], tuple[str, bytes]]] = {
        "suffix": lambda name, data: (name[:-3] + ".PY", data),
        "folder": lambda name, data: (name.replace("/code/", "/CODE/"), data),
    }
    for label, change in changes.items():
        renamed = _edited(path, tmp_path / f"{label}.pt", change)
        torch.jit.load(str(renamed))(torch.zeros(2))
        assert "WS-TS-002" in {f.rule_id for f in wscan.scan([renamed]).findings}, label
    assert (tmp_path / "written").is_file()


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
