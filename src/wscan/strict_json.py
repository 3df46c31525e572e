"""JSON read the way a careful loader should: refuse what different parsers read differently.

Python's `json` keeps the last of duplicate keys and accepts NaN; other readers keep the first or refuse.
A file a scanner reads one way and a loader another is an evasion, so both are errors here.
"""

from __future__ import annotations

import json
from typing import Any

TOO_DEEP = "JSON nested too deeply"


class JsonRejected(ValueError):
    """Not strict JSON; the message says why, short enough for a finding."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonRejected(f"duplicate key {key[:80]!r}")
            seen.add(key)
    return result


def _constant(name: str) -> Any:
    raise JsonRejected(f"{name} is not JSON")


def loads_strict(data: bytes) -> Any:
    """The parsed value; raises JsonRejected for bad UTF-8, bad JSON, duplicate keys, NaN or deep nesting."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonRejected(f"not UTF-8 at byte {exc.start}") from None
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except RecursionError:
        raise JsonRejected(TOO_DEEP) from None
    except JsonRejected:
        raise
    except ValueError as exc:  # JSONDecodeError, integers too long to convert
        raise JsonRejected(str(exc)[:200]) from None


def loads_lenient(data: bytes | str) -> Any:
    """What Python's json (and so the loaders) reads when strict parsing refused: the last duplicate wins, NaN is
    accepted, the encoding of bytes is detected (a BOM, UTF-16, UTF-32). None if even that fails."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, integers too long
        return None
