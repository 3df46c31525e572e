"""stable-baselines3's saved models: the pickles inside the `data` member of the zip `model.save()` writes.

`PPO.load(path)` (any algorithm's) reads the zip's `data` member as JSON and, for every top-level value that is an
object with a `:serialized:` key, base64-decodes that text and hands it to `cloudpickle.loads`: the policy class,
the spaces, the schedules, the last observations. Those bytes are pickles like any other, so each is scanned as a
blob of its own (review 68 put an `os.system` pickle there, which passed). The rest of the zip (`policy.pth`,
`pytorch_variables.pth`) is torch files, which the zip walker already hands to the pickle scanner.
"""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import Iterator
from functools import partial

from wscan.model import Observation
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem
from wscan.scanners.repo_files import read_bounded
from wscan.strict_json import JsonRejected, loads_lenient, loads_strict

SERIALIZED = ":serialized:"
MEMBER = "data"  # the member stable-baselines3 reads, whatever the zip is called


class Sb3DataScanner:
    """The `data` JSON of a stable-baselines3 zip, or any JSON object that carries `:serialized:` values."""

    name = "sb3-data"

    def accepts(self, head: Head) -> bool:
        if head.raw_data or not head.head.lstrip(b" \t\r\n").startswith(b"{"):
            return False
        # By name the loader reads it whatever it holds first (a long docstring can push every key past the head).
        return head.name.rsplit("/", 1)[-1] == MEMBER or SERIALIZED.encode() in head.head

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        data = read_bounded(artifact, ctx)
        if isinstance(data, Observation):
            yield data
            return
        top = _as_loader_reads(data)
        if not isinstance(top, dict):
            return
        for key, value in top.items():
            if not (isinstance(value, dict) and SERIALIZED in value):
                continue
            text = value[SERIALIZED]
            if not isinstance(text, str):
                continue  # the loader's `.encode()` raises: the load fails before anything is unpickled
            try:
                payload = base64.b64decode(text.encode("utf-8"))  # as the loader decodes: non-alphabet bytes dropped
            except (binascii.Error, ValueError):
                continue  # the loader's decode raises too
            yield artifact.child(f"{str(key)[:200]}:serialized:", len(payload), partial(io.BytesIO, payload))


def _as_loader_reads(data: bytes) -> object:
    """The JSON as the loader's json reads it: strict when it can be, else the last of duplicate keys, NaN."""
    try:
        return loads_strict(data)
    except JsonRejected:
        return loads_lenient(data)
