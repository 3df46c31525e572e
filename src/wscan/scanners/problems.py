"""What the header parsers (safetensors, GGUF) report: deviations at byte offsets, some of them hidden bytes.

The parsers stay pure (bytes in, problems out); `problem_items` is the one place that turns problems into
observations and hidden byte ranges into child blobs, so a pickle hidden in a file gets its own finding.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from wscan.model import AttrValue
from wscan.scanners.base import Artifact, ScanItem


@dataclass(frozen=True, slots=True)
class Problem:
    """One deviation from the format at a file offset; `hidden` is (start, length) of bytes no tensor owns."""

    kind: str
    offset: int
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)
    hidden: tuple[int, int] | None = None


def problem_items(artifact: Artifact, problems: Iterable[Problem]) -> Iterator[ScanItem]:
    """Each problem as an observation, followed by its hidden bytes as a blob to scan."""
    for problem in problems:
        yield artifact.observe(problem.kind, problem.offset, **problem.attrs)
        if problem.hidden is not None:
            yield artifact.hidden(*problem.hidden)
