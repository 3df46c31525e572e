"""Hypothesis profiles: `ci` (set by .ci/run) draws the same examples on every run, so a CI result can be
reproduced and never hinges on a rare draw; local runs keep drawing new examples, and the fuzz targets explore."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
