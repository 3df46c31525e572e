"""Review 24's templates, rendered for real: each hostile one runs code, reads a file or reaches `os` under plain
Jinja (llama-cpp-python before 0.2.72), and wscan flags it high; the ordinary ones pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import wscan
from wscan.chat_template import check_template
from wscan.model import Severity

DATA = Path(__file__).parent / "data" / "template_review"
HOSTILE = sorted((DATA / "hostile").glob("*.jinja"))
ORDINARY = sorted((DATA / "ordinary").glob("*.jinja"))
RENDER = """
import sys, jinja2
env = jinja2.Environment(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True)
template = env.from_string(open(sys.argv[1], encoding="utf-8").read())
print(template.render(messages=[{"role": "user", "content": "hi"}], add_generation_prompt=True, bos_token="<s>",
                      eos_token="</s>"))
"""


def test_the_review_files_are_present() -> None:
    assert len(HOSTILE) == 10 and len(ORDINARY) == 6


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: p.stem)
def test_a_hostile_template_escapes_plain_jinja_and_is_flagged(tmp_path: Path, path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-24")
    text = path.read_text(encoding="utf-8").replace("/tmp/review24/", f"{tmp_path}/")
    text = text.replace("/etc/hostname", str(secret))
    template = tmp_path / "model" / "chat_template.jinja"
    template.parent.mkdir()
    template.write_text(text, encoding="utf-8")
    rendered = subprocess.run([sys.executable, "-c", RENDER, str(template)], capture_output=True, text=True,
                              timeout=60, cwd=tmp_path, check=False)  # fmt: skip
    escaped = list(tmp_path.glob("MARKER*")) or "SECRET-24" in rendered.stdout or "<module 'os'" in rendered.stdout
    assert escaped, rendered.stdout[-500:] + rendered.stderr[-500:]
    worst = max((f.severity for f in wscan.scan([template.parent]).findings), default=None)
    assert worst is not None and worst >= Severity.HIGH


@pytest.mark.parametrize("path", ORDINARY, ids=lambda p: p.stem)
def test_an_ordinary_tool_template_passes(path: Path) -> None:
    assert check_template(path.read_text(encoding="utf-8")) == []
