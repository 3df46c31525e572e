"""Keras models: `.keras` archives (their config.json), legacy HDF5 `.h5` files and stand-alone model JSON.

Loading a Keras model rebuilds it from a JSON config, and that config decides what is imported and called:
Lambda layers carry marshalled Python bytecode (CVE-2024-3660; `safe_mode` ignored for HDF5 files,
CVE-2025-9905), objects name arbitrary modules and functions (CVE-2025-1550) or Keras' own non-modelling
APIs (load_model, get_file, enable_unsafe_deserialization: CVE-2025-8747, CVE-2025-9906), layers name files
to read (CVE-2025-12058) or SavedModels to load (TFSMLayer, CVE-2026-1462), and HDF5 links and external
storage make the weights loader read other files (CVE-2026-1669). The zip itself is walked by ZipScanner;
this scanner reads `config.json` members of a Keras layout, HDF5 files (through `hdf5_probe`, in a child
process, because libhdf5 can hang on crafted input), JSON files that hold a serialized Keras object anywhere
(Keras rebuilds those inside lists and plain dicts too, before it finds the top is no model) and the model
config an Orbax checkpoint keeps as a JSON string. Nothing is ever imported or unmarshalled; `keras_config`
names what the loader would resolve, and a torch module a layer embeds is handed on as a blob of its own.
"""

from __future__ import annotations

import io
import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from wscan.model import Observation
from wscan.scanners.base import HEAD_BYTES, NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem, read_capped
from wscan.scanners.tf_graph import KERAS_METADATA_NAME
from wscan.strict_json import JsonRejected, loads_lenient, loads_strict

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
HDF5_SUFFIXES = (".h5", ".hdf5", ".keras")
HDF5_SECONDS = 120.0  # one HDF5 file's metadata; real files take well under a second
MAX_SAVED_CONFIGS = 100_000  # saved objects with a config in one SavedModel (real ones hold a few thousand)
MAX_CONFIG_NODES = 20_000_000  # JSON values walked in one config (a 64 MiB config has fewer)
# The key, and the key inside a JSON string (an Orbax checkpoint keeps the model config as one), its opening quote
# escaped either way.
_CLASS_NAMES = ('"class_name"', '\\"class_name', "\\u0022class_name")
_JSON_STARTS = ("{", "[")  # Keras rebuilds the objects in a list or a plain dict too
# c l a s _ n m e, \u-escaped; inside a string, the escape's backslash may itself be written \u005c
_ESCAPED_KEY_LETTER = re.compile(r"\\(?:u005[cC])?u00(?:6[135cdeCDE]|5[fF]|73)")
_COPY_CHUNK = 1 << 20
ORBAX_CONFIG_KEY = "config"  # keras.callbacks.OrbaxCheckpoint saves the model config as {"config": "<JSON>"}


def hdf5_offset(head: bytes) -> int | None:
    """Where the HDF5 superblock signature is: libhdf5 looks at 0, 512, 1024, 2048, ... (a user block)."""
    offset = 0
    while offset + len(HDF5_MAGIC) <= len(head):
        if head.startswith(HDF5_MAGIC, offset):
            return offset
        offset = 512 if offset == 0 else offset * 2
    return None


def _base(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def _keras_json(head: Head) -> bool:
    """config.json of an archive (Keras opens any zip by its config.json), or a JSON file whose head reads like a
    serialized Keras object. The head is decoded as json.loads decodes bytes (UTF-8 with or without a BOM,
    UTF-16, UTF-32): Keras hands config.json's bytes to json.loads, so a config in UTF-16 loads."""
    encoding = json.detect_encoding(head.head)
    first = head.head[:256].decode(encoding, "ignore").lstrip(" \t\r\n")
    if first and not first.startswith(_JSON_STARTS):
        return False  # decided on the first bytes: most files are not JSON at all
    text = head.head.decode(encoding, "ignore")
    start = text.lstrip(" \t\r\n")
    base = _base(head.name)
    if not start:  # only whitespace so far: json.loads skips any amount of it
        return head.size > len(head.head) and _named_json(base)
    if not start.startswith(_JSON_STARTS):
        return False
    if head.container and base == "config.json":
        return True
    # model_from_json takes text from any file, so the name does not decide. The rest of a larger file is searched
    # when it is scanned: padding can push every key past the head.
    return head.size > len(head.head) or _may_name_a_class(text)


def _named_json(base: str) -> bool:
    return base.lower().endswith(".json")


def _may_name_a_class(text: str) -> bool:
    """Whether JSON text can hold a "class_name" key, or one in a config kept as a JSON string: spelt out, or with
    a letter of it escaped (json.loads decodes escapes in keys too). False means it certainly holds none. The key
    alone is looked for, not its colon: JSON allows any amount of whitespace between the two."""
    return any(key in text for key in _CLASS_NAMES) or _ESCAPED_KEY_LETTER.search(text) is not None


class KerasScanner:
    """Keras model configs and HDF5 files (every HDF5 file: Keras is the main source of them in models)."""

    name = "keras"

    def accepts(self, head: Head) -> bool:
        if head.raw_data:
            return False
        return (
            hdf5_offset(head.head) is not None
            or _base(head.name) == KERAS_METADATA_NAME
            or _keras_json(head)
            or _may_hold_late_hdf5(head)
        )

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as raw:
            head = raw.read(HEAD_BYTES)
        base = _base(artifact.name)
        if base == KERAS_METADATA_NAME:
            # tf_keras reads this file by its name, as protobuf, whatever else it may also be (an HDF5 user block
            # can hold the protobuf, which then skips the HDF5 as an unknown field)
            yield from _scan_saved_metadata(artifact, ctx)
        if hdf5_offset(head) is not None or (
            _late_search_pays(artifact) and late_hdf5_offset(artifact, len(head), ctx) is not None
        ):
            yield from _scan_hdf5(artifact, ctx)
        elif base == KERAS_METADATA_NAME:
            return
        elif _keras_json(Head(head, b"", artifact.size, artifact.name, container=_container(artifact))):
            yield from _scan_json(artifact, ctx)
        else:
            yield artifact.observe(NOT_MINE_KIND)  # accepted for a signature past the head, and there is none


def _container(artifact: Artifact) -> str:
    return str(artifact.context.get("container", ""))


def _may_hold_late_hdf5(head: Head) -> bool:
    """Whether the HDF5 signature could sit past the head: libhdf5 looks at every power of two up to the end of
    the file, so a user block of 64 KiB or more hides it from the head."""
    return head.size > len(head.head)


def _late_search_pays(artifact: Artifact) -> bool:
    """A file on disk or a member that seeks cheaply is searched; a compressed member only when it is named like
    HDF5 (Keras opens `model.weights.h5` by name), since each seek there decompresses up to the offset."""
    return _seeks_cheaply(artifact) or _base(artifact.name).lower().endswith(HDF5_SUFFIXES)


def _seeks_cheaply(artifact: Artifact) -> bool:
    return artifact.real_path is not None or bool(artifact.context.get("cheap_seek", True))


def late_hdf5_offset(artifact: Artifact, start: int, ctx: ScanContext) -> int | None:
    """The first power of two at or past `start` where the HDF5 signature is, up to the end of the blob. Where
    seeking means decompressing, the blob is read forward a chunk at a time, under the time budget."""
    try:
        return _late_hdf5_offset(artifact, start, ctx)
    except (OSError, EOFError, ValueError):
        return None  # a blob that cannot be read that far: its container reports the damage


def _late_hdf5_offset(artifact: Artifact, start: int, ctx: ScanContext) -> int | None:
    offset = 512
    while offset < start:
        offset *= 2
    cheap = _seeks_cheaply(artifact)
    with artifact.opener() as raw:
        position = 0
        while offset + len(HDF5_MAGIC) <= artifact.size:
            ctx.budget.check_time()
            if cheap:
                raw.seek(offset)
            else:
                while position < offset and (skipped := len(raw.read(min(_COPY_CHUNK, offset - position)))):
                    position += skipped
                    ctx.budget.check_time()
            found = raw.read(len(HDF5_MAGIC))
            position = offset + len(found)
            if found == HDF5_MAGIC:
                return offset
            if len(found) < len(HDF5_MAGIC):
                return None  # shorter than it said
            offset *= 2
    return None


# --- JSON --------------------------------------------------------------------------------------------


def _scan_json(artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
    limit = ctx.limits.max_json_bytes
    in_archive = artifact.context.get("container") == "keras"
    if artifact.size > limit:
        if in_archive or _stream_names_a_class(artifact, ctx):
            yield artifact.observe("keras.size_limit", source=_base(artifact.name), size=artifact.size, limit=limit)
        else:
            yield artifact.observe(NOT_MINE_KIND)
        return
    with artifact.opener() as raw:
        data = read_capped(raw, limit)
    if not in_archive and not _may_name_a_class(data.decode(json.detect_encoding(data), "ignore")):
        yield artifact.observe(NOT_MINE_KIND)  # a large JSON file that names no class: not a model
        return
    base = _base(artifact.name)
    named = _named_json(base)
    yield from check_json(artifact, ctx, data, base or "config", standalone=not in_archive, named_json=named)


def _stream_names_a_class(artifact: Artifact, ctx: ScanContext) -> bool:
    """`_may_name_a_class` over a file too large to parse, read a chunk at a time up to its stated size, in the
    encoding json.loads would detect (chunks and overlap are whole UTF-32 units)."""
    with artifact.opener() as raw:
        first = raw.read(4)
        encoding = json.detect_encoding(first)
        tail, read = first, len(first)
        while read < artifact.size and (chunk := raw.read(min(_COPY_CHUNK, artifact.size - read))):
            ctx.budget.check_time()
            read += len(chunk)
            if _may_name_a_class((tail + chunk).decode(encoding, "ignore")):
                return True
            tail = chunk[-64:]  # longer than the key in any encoding, and than an escape
    return False


def check_json(
    artifact: Artifact, ctx: ScanContext, data: bytes, source: str, standalone: bool = False, named_json: bool = True
) -> Iterator[ScanItem]:
    """Parse a config strictly (a lenient reread still gets checked) and report what it would load. A stand-alone
    file must turn out to hold a Keras object somewhere (Keras rebuilds them inside lists and plain dicts too), or
    an Orbax checkpoint's model config, else it is handed back; one not named .json that is no JSON at all is
    some other text, handed back too, while a .json file that cannot be read fails."""
    top, invalid = _parse(data)
    if top is None and standalone and not named_json:
        yield artifact.observe(NOT_MINE_KIND)
        return
    if top is None:
        yield artifact.observe("keras.config_unreadable", source=source, reason=invalid)
        return
    yield from _check_parsed(artifact, ctx, top, invalid, source, standalone)


def _check_parsed(
    artifact: Artifact, ctx: ScanContext, top: Any, invalid: str, source: str, standalone: bool, outer: bool = True
) -> Iterator[ScanItem]:
    """One parsed config: its issues as observations and its embedded files as blobs of their own."""
    from wscan.scanners.keras_config import walk_config

    walked = walk_config(top, MAX_CONFIG_NODES, ctx.budget.check_time)
    if standalone and not walked.keras:
        if outer:  # some other JSON that happens to mention class_name, or an Orbax checkpoint's config
            yield from _orbax_config(artifact, ctx, top, source)
        else:
            yield artifact.observe(NOT_MINE_KIND)
        return
    if invalid:
        yield artifact.observe("keras.config_invalid", source=source, reason=invalid)
    for issue in walked.issues:
        yield artifact.observe(issue.kind, **{**issue.attrs, "source": source})
    for embedded in walked.embedded:
        yield artifact.child(embedded.field, len(embedded.data), partial(io.BytesIO, embedded.data))


def _orbax_config(artifact: Artifact, ctx: ScanContext, top: Any, source: str) -> Iterator[ScanItem]:
    """An Orbax checkpoint's `model_config/_strings.json` ({"config": "<model config JSON>"}), recognised by
    its content: Keras' load_model takes a checkpoint folder and rebuilds the model from that string with
    json.loads. The string is judged as a stand-alone config (it must hold a Keras object); anything else is
    handed back."""
    text = top.get(ORBAX_CONFIG_KEY) if isinstance(top, dict) else None
    if not isinstance(text, str) or not _may_name_a_class(text):
        yield artifact.observe(NOT_MINE_KIND)
        return
    inner, invalid = _parse(text.encode("utf-8", "surrogatepass"))
    if inner is None:
        yield artifact.observe(NOT_MINE_KIND)  # not JSON: the loader fails before rebuilding anything
        return
    yield from _check_parsed(artifact, ctx, inner, invalid, f"{source} {ORBAX_CONFIG_KEY}", True, outer=False)


def _scan_saved_metadata(artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
    """keras_metadata.pb: tf_keras' SavedMetadata protobuf, one JSON config per saved object, from which
    `tf_keras.models.load_model` revives the layers of a SavedModel."""
    from google.protobuf.message import DecodeError

    from wscan.scanners.tf_graph import message_class

    limit = ctx.limits.max_json_bytes
    if artifact.size > limit:
        yield artifact.observe("keras.size_limit", source=KERAS_METADATA_NAME, size=artifact.size, limit=limit)
        return
    with artifact.opener() as raw:
        data = read_capped(raw, limit)
    metadata = message_class("KerasSavedMetadata")()
    try:
        metadata.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        reason = f"not a SavedMetadata protobuf: {type(exc).__name__}: {exc}"
        yield artifact.observe("keras.config_unreadable", source=KERAS_METADATA_NAME, reason=reason[:300])
        return
    yield from check_many(artifact, ctx, (node.metadata for node in metadata.nodes), KERAS_METADATA_NAME)


def check_many(artifact: Artifact, ctx: ScanContext, blobs: Iterable[bytes], source: str) -> Iterator[Observation]:
    """The configs of one file's saved objects (a SavedModel's, one per layer) judged as one list, so a file holds
    one walk, one time budget and one cap on what is reported, however many objects it declares. A config's
    field reads `[i]...`: the i-th object with metadata."""
    from wscan.scanners.keras_config import MAX_ISSUES, check_config

    tops: list[Any] = []
    failures = 0
    for data in blobs:
        if not data:
            continue
        if len(tops) == MAX_SAVED_CONFIGS:
            yield artifact.observe("keras.walk_limit", source=source, limit=MAX_SAVED_CONFIGS)
            break
        ctx.budget.check_time()
        top, reason = _parse(data)
        if not reason:
            tops.append(top)
            continue
        failures += 1
        if failures <= MAX_ISSUES:
            kind = "keras.config_unreadable" if top is None else "keras.config_invalid"
            yield artifact.observe(kind, source=f"{source} [{len(tops)}]", reason=reason)
        if top is not None:
            tops.append(top)
    for issue in check_config(tops, MAX_CONFIG_NODES, ctx.budget.check_time):
        yield artifact.observe(issue.kind, **{**issue.attrs, "source": source})


def _parse(data: bytes) -> tuple[Any, str]:
    """The config strict parsing reads, with no reason; else the lenient reading (None if there is none) and why
    strict parsing refused it."""
    try:
        return loads_strict(data), ""
    except JsonRejected as exc:
        return _lenient(data), str(exc)


def _lenient(data: bytes) -> Any:
    """What Keras's json.loads makes of a config strict parsing refused; else a UTF-8 reading that replaces what
    does not decode (what is in it is still checked)."""
    top = loads_lenient(data)
    return top if top is not None else loads_lenient(data.decode("utf-8", "replace"))


# --- HDF5 --------------------------------------------------------------------------------------------


def _scan_hdf5(artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
    from wscan.scanners.hdf5_probe import ProbeFailure, run_probe

    if artifact.real_path is None and artifact.size > ctx.limits.max_member_bytes:
        limit = ctx.limits.max_member_bytes
        yield artifact.observe("hdf5.size_limit", size=artifact.size, limit=limit)
        return
    timeout = min(HDF5_SECONDS, max(1.0, ctx.budget.deadline - time.monotonic()))
    with _on_disk(artifact, ctx) as path:
        answer = run_probe(str(path), ctx.limits.max_json_bytes, ctx.limits.max_members, timeout)
    if isinstance(answer, ProbeFailure):
        yield artifact.observe(f"hdf5.{answer.kind}", reason=answer.reason)
        return
    if "error" in answer:
        yield artifact.observe("hdf5.unreadable", reason=str(answer["error"])[:200])
    if answer.get("truncated"):
        yield artifact.observe("hdf5.object_limit", limit=ctx.limits.max_members)
    yield from _hdf5_structure(artifact, answer)
    yield from _hdf5_configs(artifact, ctx, answer.get("attrs", {}))


@contextmanager
def _on_disk(artifact: Artifact, ctx: ScanContext) -> Iterator[Path]:
    """The artifact as a file path: the file itself, or a temporary copy of a member, deleted after."""
    if artifact.real_path is not None:
        yield artifact.real_path
        return
    import tempfile  # only HDF5 members of archives need a copy on disk

    fd, temp = tempfile.mkstemp(prefix="wscan-h5-", suffix=".h5")
    try:
        with os.fdopen(fd, "wb") as out, artifact.opener() as raw:
            copied = 0
            while copied <= ctx.limits.max_member_bytes and (chunk := raw.read(_COPY_CHUNK)):
                ctx.budget.check_time()
                out.write(chunk)
                copied += len(chunk)
        yield Path(temp)
    finally:
        Path(temp).unlink(missing_ok=True)


def _hdf5_structure(artifact: Artifact, answer: dict[str, Any]) -> Iterator[ScanItem]:
    """Links and datasets that reach outside the file, or declare far more memory than they store."""
    for link in answer.get("links", []):
        kind = "hdf5.external_link" if link.get("type") == "external" else "hdf5.soft_link"
        yield artifact.observe(
            kind, object=_s(link.get("path")), file=_s(link.get("file")), target=_s(link.get("target"))
        )
    for item in answer.get("datasets", []):
        name = _s(item.get("path"))
        if "error" in item:
            yield artifact.observe("hdf5.dataset_unreadable", object=name, reason=_s(item["error"]))
            continue
        if item.get("external"):
            yield artifact.observe("hdf5.external_storage", object=name, files=_s(", ".join(item["external"])))
        if item.get("virtual"):
            yield artifact.observe("hdf5.virtual_dataset", object=name, files=_s(", ".join(item["virtual"])))
        if item.get("oversized"):
            declared, stored = int(item.get("declared", 0)), int(item.get("stored", 0))
            yield artifact.observe("hdf5.oversized_dataset", object=name, declared=declared, stored=stored)


def _hdf5_configs(artifact: Artifact, ctx: ScanContext, attrs: dict[str, Any]) -> Iterator[ScanItem]:
    """The model and training configs legacy Keras stores as root attributes, checked like config.json."""
    for source in ("model_config", "training_config"):
        value = attrs.get(source)
        if not isinstance(value, dict):
            continue
        if "size" in value:
            limit = ctx.limits.max_json_bytes
            yield artifact.observe("keras.size_limit", source=source, size=int(value["size"]), limit=limit)
        elif "error" in value:
            yield artifact.observe("hdf5.attribute_unreadable", attribute=source, reason=_s(value["error"]))
        elif isinstance(value.get("text"), str):
            yield from check_json(artifact, ctx, value["text"].encode("utf-8", "surrogatepass"), source)


def _s(value: Any) -> str:
    return str(value if value is not None else "")[:200]

