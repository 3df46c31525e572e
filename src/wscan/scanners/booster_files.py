"""LightGBM and XGBoost model files (`model.txt`, `model.json`, `model.ubj`), read as their loaders read them.

Why: `lightgbm.Booster(model_file=...)` and `xgboost.Booster().load_model(...)` hand a downloaded model file to the
same C loaders a pickled Booster's state reaches, which follow its tree indices unchecked (`lightgbm_model`,
`xgboost_model`). Such a file is text or UBJSON, no pickle, so without this scanner it was skipped as text. A file
is a model by what its loader takes: LightGBM's file reader takes a first line of exactly `tree` (ended by `\r` or
`\n`: review 90 hid a model behind a bare `\r`; it refuses a byte-order mark, a blank line or anything else
first), XGBoost's an object with a `learner` object, wherever the key stands and however JSON spells it (review 90
put `version` first). Object-like files are decoded and declined (left to the other scanners) when they hold none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from wscan.scanners import lightgbm_model, xgboost_model
from wscan.scanners.base import CHUNK, NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem, read_capped

KIND = "booster.model_file"
_BLANKS = b" \t\r\n"
_LIGHTGBM = re.compile(rb"tree[\r\n]")  # the first line LightGBM's file reader requires
_LEARNER = re.compile(rb"learner")
_OVERLAP = 64  # bytes kept between chunks, so a marker cut by a chunk's end is still found


class BoosterFileScanner:
    """A LightGBM text model or an XGBoost JSON or UBJSON model, checked for numbers that lead the loader out of
    bounds (the checks of a pickled Booster's model)."""

    name = "booster-model"

    def accepts(self, head: Head) -> bool:
        """LightGBM's `tree` line, or an object (`{`, JSON or UBJSON): the scan decides whether it is XGBoost's."""
        if head.raw_data:
            return False
        return _LIGHTGBM.match(head.head) is not None or head.head.lstrip(_BLANKS).startswith(b"{")

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as raw:
            start = raw.read(8)
        if _LIGHTGBM.match(start):
            yield from _scan_lightgbm(artifact, ctx)
        else:
            yield from _scan_xgboost(artifact, ctx)


def _scan_lightgbm(artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
    limit = ctx.limits.max_header_bytes
    if artifact.size > limit:
        detail = f"a LightGBM model of {artifact.size:,} bytes, over {limit:,}: its trees were not checked"
        yield artifact.observe("scan.limit", limit="max-header-bytes", detail=detail)
        return
    with artifact.opener() as raw:
        data = read_capped(raw, limit)
    try:
        if b"\0" in data:  # given a file, LightGBM reads past a NUL (a pickled model is a C string, cut there)
            raise lightgbm_model.Malformed("a NUL byte, on which LightGBM's file reader never returned (review 90)")
        lightgbm_model.check(data, ctx.budget.check_time)
    except lightgbm_model.Malformed as exc:
        yield artifact.observe(KIND, library="LightGBM", detail=str(exc)[:300])


def _scan_xgboost(artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
    """An object XGBoost would read as a model: one with a `learner` key (written plainly or escaped in JSON). What
    wscan cannot decode but names `learner` is reported, never passed."""
    limit = ctx.limits.max_header_bytes  # real models run to tens of megabytes
    if artifact.size > limit:
        if _search(artifact, (_LEARNER,))[0]:
            detail = f"an XGBoost model of {artifact.size:,} bytes, over {limit:,}: its trees were not checked"
            yield artifact.observe("scan.limit", limit="max-header-bytes", detail=detail)
        else:
            yield artifact.observe(NOT_MINE_KIND)
        return
    with artifact.opener() as raw:
        data = read_capped(raw, limit).lstrip(_BLANKS)
    if not _is_model(data):
        yield artifact.observe(NOT_MINE_KIND)
        return
    try:
        xgboost_model.check_file(data, ctx.budget.check_time)
    except lightgbm_model.Malformed as exc:
        yield artifact.observe(KIND, library="XGBoost", detail=str(exc)[:300])


def _is_model(data: bytes) -> bool:
    """Whether XGBoost's loader would take `data` (an object) as a model: its `learner` is an object."""
    try:
        if data[1:2].isalpha():  # UBJSON: XGBoost's own layout
            document = xgboost_model.Ubjson(data).document()
        elif b"learner" not in data and b"\\u" not in data:  # the key, written plainly or escaped
            return False
        else:
            document = json.loads(data)
    except (lightgbm_model.Malformed, ValueError, RecursionError):
        return b"learner" in data  # not read here, but naming the key: the check reports it
    return isinstance(document, dict) and isinstance(document.get("learner"), dict)


def _search(artifact: Artifact, patterns: tuple[re.Pattern[bytes], ...]) -> list[bool]:
    """Which patterns occur in the blob, read a chunk at a time (a text file can be large; nothing is kept)."""
    found = [False] * len(patterns)
    carry = b""
    with artifact.opener() as raw:
        while not all(found):
            chunk = raw.read(CHUNK)
            if not chunk:
                break
            window = carry + chunk
            found = [seen or pattern.search(window) is not None for seen, pattern in zip(found, patterns, strict=True)]
            carry = window[-_OVERLAP:]
    return found
