"""Configuration files (config.py, `.wscan.yaml`): schema, limits, severities, ignores and extra rule packs.

A bad config must be a UsageError. A config that loads must build its rule set (or refuse with UsageError),
and its limits must drive a scan of a small zip holding a pickle without a traceback.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import zipfile

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.config import Config
    from wscan.errors import UsageError
    from wscan.limits import Budget
    from wscan.rules import RuleSet
    from wscan.scanners.archive import ZipScanner
    from wscan.scanners.base import ScanContext, Scanner
    from wscan.scanners.pickle import PickleScanner

FOLDER = harness.scratch_dir()
CONFIG = FOLDER / ".wscan.yaml"
(FOLDER / "extra.yaml").write_text("rules: []\n", encoding="utf-8")
_buffer = io.BytesIO()
with zipfile.ZipFile(_buffer, "w") as _zip:
    _zip.writestr("archive/data.pkl", pickle.dumps({"w": [1.0, 2.0]}, protocol=2))
SAMPLE = _buffer.getvalue()
SCANNERS: list[Scanner] = [ZipScanner(), PickleScanner()]


def one_input(data: bytes) -> None:
    CONFIG.write_bytes(data)
    try:
        config = Config.from_file(CONFIG)
    except UsageError:
        return
    with contextlib.suppress(UsageError):
        RuleSet.load(config)
    ctx = ScanContext(config.limits, Budget(config.limits))
    for obs in harness.scan_blob(harness.artifact_of(SAMPLE, "model.pt"), ctx, SCANNERS):
        harness.check(obs)


if __name__ == "__main__":
    fuzz(one_input)
