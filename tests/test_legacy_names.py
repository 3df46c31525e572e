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
