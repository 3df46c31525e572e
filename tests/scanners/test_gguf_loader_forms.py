"""Review 29: the chat template llama.cpp and llama-cpp-python read is not always the stored string. llama.cpp keeps
a metadata value up to its first NUL; llama-cpp-python reads into a 1,024-byte buffer and keeps 1,023 bytes of a
value exactly that long. A dangerous template in front of a tail that breaks the whole (wscan had said only
"does not parse", medium) is judged as those loaders read it. Files written with the real `gguf` package."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.gguf_files import gguf_with_template
from tests.helpers.scanning import scan
from wscan.model import Severity
from wscan.scanners.gguf import LCP_METADATA_BUFFER, loader_forms

ESCAPE = "{{ cycler.__init__.__globals__.os.popen('id').read() }}"


def _worst(path: Path) -> tuple[Severity, set[str]]:
    findings = scan(path).findings
    return max(f.severity for f in findings), {f.rule_id for f in findings}


def test_a_template_before_a_nul_is_judged_as_llama_cpp_reads_it(tmp_path: Path) -> None:
    worst, _ = _worst(gguf_with_template(tmp_path / "nul.gguf", ESCAPE + "\0{% endif %}"))
    assert worst == Severity.CRITICAL


def test_a_1024_byte_template_is_judged_without_its_last_byte(tmp_path: Path) -> None:
    stored = ESCAPE + " " * (LCP_METADATA_BUFFER - len(ESCAPE) - 2) + "{{"  # does not parse; without one byte it does
    assert len(stored.encode()) == LCP_METADATA_BUFFER
    assert list(loader_forms(stored, LCP_METADATA_BUFFER).values()) == [stored[:-1]]
    worst, _ = _worst(gguf_with_template(tmp_path / "cut.gguf", stored))
    assert worst == Severity.CRITICAL


def test_ordinary_templates_have_no_other_form() -> None:
    assert loader_forms("{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}", 60) == {}


def test_a_clean_template_with_a_nul_stays_clean_before_it(tmp_path: Path) -> None:
    worst, rules = _worst(gguf_with_template(tmp_path / "ok.gguf", "{{ bos_token }}\0{% if %}"))
    assert "WS-TPL-001" not in rules and worst < Severity.CRITICAL
