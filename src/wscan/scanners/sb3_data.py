"""stable-baselines3's saved models: the pickles inside the `data` member of the zip `model.save()` writes.

`PPO.load(path)` (any algorithm's) reads the zip's `data` member as JSON and, for every top-level value that is an
object with a `:serialized:` key, base64-decodes that text and hands it to `cloudpickle.loads`: the policy class,
the spaces, the schedules, the last observations. Those bytes are pickles like any other, so each is scanned as a
blob of its own (review 68 put an `os.system` pickle there, which passed). The rest of the zip (`policy.pth`,
`pytorch_variables.pth`) is torch files, which the zip walker already hands to the pickle scanner. The loader then
sets every top-level key on the model, and makes its environment from an `env` key where the user gives none
(review 75): each key is an observation the rules judge.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Iterator
from functools import partial

from wscan.model import Observation
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem
from wscan.scanners.repo_files import read_bounded
from wscan.strict_json import TOO_DEEP, JsonRejected, loads_lenient, loads_strict

SERIALIZED = ":serialized:"
MEMBER = "data"  # the member stable-baselines3 reads, whatever the zip is called
CONTAINER = "sb3-data"  # what the pickles of its values are inside: the loader calls some of them (WS-PKL-053)


class Sb3DataScanner:
    """The `data` JSON of a stable-baselines3 zip, or any JSON object that carries `:serialized:` values."""

    name = "sb3-data"

    def accepts(self, head: Head) -> bool:
        if head.raw_data:
            return False
        start = head.head.lstrip(b" \t\r\n")
        if head.name.rsplit("/", 1)[-1] == MEMBER:
            # By name, as the loader reads it, whatever comes first: a long docstring can push every key past the
            # head, and json skips any amount of leading whitespace (review 69 put 70 KiB of it first).
            return not start or start.startswith(b"{")
        return start.startswith(b"{") and SERIALIZED.encode() in head.head

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        data = read_bounded(artifact, ctx)
        if isinstance(data, Observation):
            yield data
            return
        top = _as_loader_reads(data)
        if isinstance(top, str):  # unreadable here; the loader, from a shallower stack, may read it (review 69)
            if top == TOO_DEEP:
                yield artifact.observe("repo.json_too_deep", role=self.name)
            yield from _serialized_anywhere(artifact, data)
            return
        if not isinstance(top, dict):
            return
        for key, value in top.items():
            serialized = isinstance(value, dict) and SERIALIZED in value
            # The loader sets every key on the model (`model.__dict__.update(data)`): the rules judge the names
            # (one naming a method replaces it; `env` it makes an environment from, gym.make importing a module)
            text = value if isinstance(value, str) else ""
            yield artifact.observe("sb3.data_key", key=str(key)[:200], serialized=serialized, text=text[:200])
            if serialized:
                yield from _pickle_of(artifact, str(key)[:200], value[SERIALIZED])


def _as_loader_reads(data: bytes) -> object:
    """The JSON as the loader's json reads it: strict when it can be, else the last of duplicate keys, NaN; or, when
    neither reads it, why strict parsing refused (a str)."""
    try:
        return loads_strict(data)
    except JsonRejected as exc:
        top = loads_lenient(data)
        return str(exc) if top is None else top


def _pickle_of(artifact: Artifact, key: str, text: object) -> Iterator[ScanItem]:
    """The bytes the loader cloudpickle-loads for one value, as a blob of their own."""
    if not isinstance(text, str):
        return  # the loader's `.encode()` raises: the load fails before anything is unpickled
    try:
        payload = base64.b64decode(text.encode("utf-8"))  # as the loader decodes: non-alphabet bytes dropped
    except (binascii.Error, ValueError):
        return  # the loader's decode raises too
    yield artifact.child(f"{key}:serialized:", len(payload), partial(io.BytesIO, payload), {"container": CONTAINER})


def _serialized_anywhere(artifact: Artifact, data: bytes) -> Iterator[ScanItem]:
    """Every `":serialized:": "..."` in a text wscan could not parse, wherever it sits (more than the loader's top
    level, never less)."""
    for number, match in enumerate(_SERIALIZED_VALUE.finditer(data)):
        if number >= MAX_UNPARSED_VALUES:
            yield artifact.observe("repo.json_too_deep", role="sb3-data (values past the count)")
            return
        text = loads_lenient(b'"' + match.group(1) + b'"')
        yield from _pickle_of(artifact, f"{match.start()}", text)


# A JSON string value under the key, escapes and all (what json.loads then decodes).
_SERIALIZED_VALUE = re.compile(rb'":serialized:"\s*:\s*"((?:[^"\\]|\\.)*)"')
MAX_UNPARSED_VALUES = 10_000
