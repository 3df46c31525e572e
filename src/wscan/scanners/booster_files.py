"""LightGBM, XGBoost and CatBoost model files (`model.txt`, `model.json`, `model.ubj`, `model.cbm`), read as their
loaders read them.

Why: `lightgbm.Booster(model_file=...)` and `xgboost.Booster().load_model(...)` hand a downloaded model file to the
same C loaders a pickled Booster's state reaches, which follow its tree indices unchecked (`lightgbm_model`,
`xgboost_model`). Such a file is text or UBJSON, no pickle, so without this scanner it was skipped as text. A file
is a model by what its loader takes: LightGBM's file reader takes a first line of exactly `tree` (ended by `\r` or
`\n`: review 90 hid a model behind a bare `\r`; it refuses a byte-order mark, a blank line or anything else
first), XGBoost's an object with a `learner` object, wherever the key stands and however JSON spells it (review 90
put `version` first). Object-like files are decoded and declined (left to the other scanners) when they hold none.
CatBoost's `load_model` reads any file opening with `CBM1` as a model (`catboost_model`); until 2026-12-06 such files
were reported as of unknown format (low).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

from wscan.scanners import lightgbm_model, xgboost_model
from wscan.scanners.base import CHUNK, NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem, read_capped
from wscan.scanners.booster_common import Malformed

KIND = "booster.model_file"
_BLANKS = b" \t\r\n"
_LIGHTGBM = re.compile(rb"tree[\r\n]")  # the first line LightGBM's file reader requires
CATBOOST = b"CBM1"  # what CatBoost's loader requires first (catboost_model, imported with NumPy when one is read)


class BoosterFileScanner:
    """A LightGBM text model, an XGBoost JSON or UBJSON model or a CatBoost model, checked for numbers that lead the
    loader out of bounds (the checks of a pickled model's)."""

    name = "booster-model"

    def accepts(self, head: Head) -> bool:
        """LightGBM's `tree` line, CatBoost's `CBM1`, or an object (`{`, JSON or UBJSON): the scan decides whether
        it is XGBoost's."""
        if head.raw_data:
            return False
        start = head.head
        model = _LIGHTGBM.match(start) is not None or start.startswith(CATBOOST)
        return model or start.lstrip(_BLANKS).startswith(b"{")

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as raw:
            start = raw.read(8)
        if _LIGHTGBM.match(start):
            yield from _scan_lightgbm(artifact, ctx)
        elif start.startswith(CATBOOST):
            yield from _scan_catboost(artifact, ctx)
        else:
            yield from _scan_xgboost(artifact, ctx)


def _scan_lightgbm(artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
    def check(data: bytes, tick: Callable[[], None]) -> None:
        if b"\0" in data:  # given a file, LightGBM reads past a NUL (a pickled model is a C string, cut there)
            raise Malformed("a NUL byte, on which LightGBM's file reader never returned (review 90)")
        lightgbm_model.check(data, tick)

    yield from _scan_whole(artifact, ctx, "LightGBM", check)


def _scan_catboost(artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
    from wscan.scanners import catboost_model

    yield from _scan_whole(artifact, ctx, "CatBoost", catboost_model.check)


def _scan_whole(
    artifact: Artifact, ctx: ScanContext, library: str, check: Callable[[bytes, Callable[[], None]], None]
) -> Iterator[ScanItem]:
    """A model its library reads whole, checked whole: one over max-member-bytes (what is materialised to be checked)
    is a scan limit (unverified)."""
    limit = ctx.limits.max_member_bytes
    if artifact.size > limit:
        detail = f"a {library} model of {artifact.size:,} bytes, over {limit:,}: its trees were not checked"
        yield artifact.observe("scan.limit", limit="max-member-bytes", detail=detail)
        return
    with artifact.opener() as raw:
        data = read_capped(raw, limit)
    try:
        check(data, ctx.budget.check_time)
    except Malformed as exc:
        yield artifact.observe(KIND, library=library, detail=str(exc)[:300])


def _scan_xgboost(artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
    """An object XGBoost would read as a model: one whose `learner` is an object (the key written plainly or escaped
    in JSON), decoded once. What wscan cannot decode but names `learner` is reported, never passed."""
    limit = ctx.limits.max_member_bytes  # real models run to hundreds of megabytes
    if artifact.size > limit:
        if _contains(artifact, b"learner"):
            detail = f"an XGBoost model of {artifact.size:,} bytes, over {limit:,}: its trees were not checked"
            yield artifact.observe("scan.limit", limit="max-member-bytes", detail=detail)
        else:
            yield artifact.observe(NOT_MINE_KIND)
        return
    with artifact.opener() as raw:
        data = read_capped(raw, limit).lstrip(_BLANKS)
    if not data[1:2].isalpha() and b"learner" not in data and b"\\u" not in data:
        yield artifact.observe(NOT_MINE_KIND)  # JSON that cannot hold the key: no model, and no need to decode it
        return
    try:
        try:
            document = xgboost_model.read_file(data)
        except Malformed:
            if not _names_learner(data):
                yield artifact.observe(NOT_MINE_KIND)
                return
            raise
        if not (isinstance(document, dict) and isinstance(document.get("learner"), dict)):
            yield artifact.observe(NOT_MINE_KIND)
            return
        xgboost_model.check_model(document, ctx.budget.check_time)
    except Malformed as exc:
        yield artifact.observe(KIND, library="XGBoost", detail=str(exc)[:300])


def _names_learner(data: bytes) -> bool:
    """Whether an object XGBoost's reader refuses here (a key given twice, a layout not decoded) still names a
    `learner` object: plainly, or in JSON Python reads (escaped keys too)."""
    if b"learner" in data:
        return True
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return isinstance(document, dict) and isinstance(document.get("learner"), dict)


def _contains(artifact: Artifact, needle: bytes) -> bool:
    """Whether `needle` occurs in the blob, read a chunk at a time (a file can be large; nothing is kept)."""
    carry = b""
    with artifact.opener() as raw:
        while chunk := raw.read(CHUNK):
            if needle in carry + chunk:
                return True
            carry = chunk[-len(needle) :]
    return False
