"""Models older scikit-learn and NumPy 1 wrote pass (rules/allow-legacy-names.yaml, tools/gen_legacy_allowlist.py).

Every file here was written by a real release in its own environment (tools/record_legacy_sklearn_pickles.py,
tools/record_legacy_skops_files.py): plain pickles from scikit-learn 1.1.3, 1.3.2 and 1.5.2 under NumPy 1, and skops
files from skops 0.4 to 0.11. Before the legacy pack each gradient boosting model, KNN, grid search,
FunctionTransformer(np.log1p) and ColumnTransformer among them was high for a name today's releases no longer have
(`sklearn.ensemble._gb_losses.*`, `EuclideanDistance`, `_passthrough_scorer`, `numpy.core._multiarray_umath.log1p`,
scikit-learn 1.5's top-level `_loss`, `_RemainderColsList`), and skops 0.10's SGDNode and 0.6's Generator without a
seed sequence were WS-SKP-001.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.scanning import scan
from wscan.model import Severity

DATA = Path(__file__).parent / "data" / "legacy_sklearn"
FILES = sorted(p for folder in ("pickles", "skops") for p in (DATA / folder).iterdir())


def test_the_files_are_there() -> None:
    assert len([p for p in FILES if p.suffix == ".pkl"]) == 21
    assert len([p for p in FILES if p.suffix == ".skops"]) == 11


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_files_older_releases_wrote_pass(path: Path) -> None:
    report = scan(path)
    assert [(f.rule_id, f.message) for f in report.findings] == []
    assert report.files[0].status == "scanned"


HOSTILE = sorted((DATA / "hostile").iterdir())


@pytest.mark.parametrize("path", HOSTILE, ids=[p.name for p in HOSTILE])
def test_legacy_gradient_boosting_wider_than_its_loss_is_flagged(path: Path) -> None:
    """scikit-learn 1.3's predict sizes the initial predictions by its legacy loss object (K columns from zero, one
    for a regression loss) and writes one column per column of estimators_ into them. Written by scikit-learn 1.3.2
    (tools/record_legacy_gb_variants.py): its predict aborted on heap corruption with both (rc 134, checked when they
    were recorded; helper 229's full-size ones crashed it with SIGSEGV). No 1.3 is installed here to load them."""
    high = {f.rule_id for f in scan(path).findings if f.severity >= Severity.HIGH}
    assert "WS-PKL-059" in high
