"""LightGBM and XGBoost model files (`model.txt`, `model.json`, `model.ubj`), read as their loaders read them.

Why: `lightgbm.Booster(model_file=...)` and `xgboost.Booster().load_model(...)` hand a downloaded model file to the
same C loaders a pickled Booster's state reaches, which follow its tree indices unchecked (`lightgbm_model`,
`xgboost_model`). Such a file is text or UBJSON, no pickle, so without this scanner it was skipped as text. Files are
recognised by their first bytes, as the loaders write them: LightGBM's `tree` line, XGBoost's `learner` key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from wscan.scanners import lightgbm_model, xgboost_model
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem, read_capped

KIND = "booster.model_file"
_LIGHTGBM = re.compile(rb"tree\r?\n")  # model_to_string's first line
_XGBOOST_JSON = re.compile(rb'\s*\{\s*"learner"\s*:')
_XGBOOST_UBJSON = b"{L" + (7).to_bytes(8, "big") + b"learner"


class BoosterFileScanner:
    """A LightGBM text model or an XGBoost JSON or UBJSON model, checked for numbers that lead the loader out of
    bounds (the checks of a pickled Booster's model)."""

    name = "booster-model"

    def accepts(self, head: Head) -> bool:
        data = head.head
        xgboost = data.startswith(_XGBOOST_UBJSON) or _XGBOOST_JSON.match(data) is not None
        return not head.raw_data and (_LIGHTGBM.match(data) is not None or xgboost)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        limit = ctx.limits.max_json_bytes
        if artifact.size > limit:
            detail = f"a model file of {artifact.size:,} bytes, over {limit:,}: its trees were not checked"
            yield artifact.observe("scan.limit", limit="max-json-bytes", detail=detail)
            return
        with artifact.opener() as raw:
            blob = read_capped(raw, limit)
        library = "LightGBM" if _LIGHTGBM.match(blob) else "XGBoost"
        try:
            if library == "LightGBM":
                lightgbm_model.check(blob, ctx.budget.check_time)
            else:
                xgboost_model.check_file(blob, ctx.budget.check_time)
        except lightgbm_model.Malformed as exc:
            yield artifact.observe(KIND, library=library, detail=str(exc)[:300])
