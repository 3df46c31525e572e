"""What the LightGBM and XGBoost model readers share: their verdict on a model, and how a list of cut points is
checked (LightGBM's category boundaries, XGBoost's iteration ranges, category segments and offsets)."""

from __future__ import annotations

import itertools


class Malformed(Exception):
    """The model leads its loader or predictor out of bounds, or is not what its library writes (unverified)."""


def cuts(points: list[int], end: int) -> bool:
    """Whether `points` cut a list of `end` items as the loaders index it: from 0, never falling, ending at `end`."""
    return bool(points) and points[0] == 0 and points[-1] == end and all(a <= b for a, b in itertools.pairwise(points))
