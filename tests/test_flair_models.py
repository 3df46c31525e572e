"""flair's saved models: since flair 0.12 a torch.save of a dict whose one flair class is its Dictionary. Helper 231's
sweep found every real save high (WS-PKL-003); the class is in rules/allow-flair.yaml now, recorded and screened by
tools/gen_flair_allowlist.py from the files in tests/data/flair (README there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pickle_bytes import binunicode as _s
from tests.helpers.pickle_bytes import global_op as _g
from tests.helpers.scanning import scan, scan_bytes
from wscan.model import Severity

FLAIR = Path(__file__).parent / "data" / "flair"
PASSING = sorted(path for path in FLAIR.glob("*.pt") if path.name != "classifier_transformer.pt")


def _high(path: Path) -> set[str]:
    return {f.rule_id for f in scan(path).findings if f.severity >= Severity.HIGH}


@pytest.mark.parametrize("path", PASSING, ids=lambda path: path.name)
def test_real_flair_saves_pass(path: Path) -> None:
    assert _high(path) == set()


def test_transformer_embeddings_stay_critical() -> None:
    """flair unpacks the tokenizer zip its transformer embeddings keep in an io.BytesIO and hands it to transformers:
    nothing wscan reads vouches for those files."""
    found = scan(FLAIR / "classifier_transformer.pt").findings
    assert any(f.rule_id == "WS-PKL-001" and "_io.BytesIO" in f.message for f in found)


DICTIONARY = _g("flair.data", "Dictionary")


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        # flair makes its Dictionary with cls.__new__ and its state; a call runs the constructor on the file's values
        (DICTIONARY + b"(\x88tR", "WS-PKL-014"),
        # a state hiding one of its methods behind a function of the file's
        (DICTIONARY + b")\x81}(" + _s("get_idx_for_item") + _g("builtins", "print") + b"ub", "WS-PKL-026"),
        # another flair class: only the Dictionary is on the list
        (_g("flair.embeddings.token", "FlairEmbeddings") + b")\x81", "WS-PKL-003"),
    ],
    ids=["called", "method-replaced", "other-class"],
)
def test_flair_classes_stay_judged_outside_what_real_saves_do(tmp_path: Path, body: bytes, rule: str) -> None:
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}, [f.rule_id for f in found]
