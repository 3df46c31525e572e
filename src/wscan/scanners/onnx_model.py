"""ONNX models: parsed as protobuf without their external data, then checked; nothing in them is run.

Loading an ONNX model runs no Python, so the risks are around it: external data that makes the loader read
a file outside the model folder (or on another machine), operators from custom domains that only a native
custom-op library can run, structures that crash loaders, and text fields carrying templates or scripts.
ONNX has no magic number, so the sniff walks the first protobuf fields of the head and accepts only what
reads as a `ModelProto`. Protobuf readers take more than exporters write (unknown fields first, a known field with
another wire type, a large doc_string before ir_version): a model written that way is taken, after every other
format has declined it, by a second, lenient sniff, and scanned when the file holds a graph, functions or training
info. Every check lives in `onnx_checks`; this module sniffs, reads and reports.
"""

from __future__ import annotations

from collections.abc import Iterator

from wscan.discover import display_path
from wscan.scanners.base import CLAIM_KIND, NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem

# ModelProto's field numbers and their protobuf wire types (0 varint, 2 length-delimited), from onnx.proto3;
# the tests check this table against the installed onnx. Kept here so sniffing never imports onnx.
MODEL_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}
IR_VERSION_FIELD = 1
GRAPH_FIELD = 7
# ONNX 1.0 shipped IR 3 (1 and 2 were pre-release) and onnx 1.23 writes up to 14; loaders refuse versions they
# do not know. Starting at 3 also keeps TensorFlow's SavedModel out: its first field is schema version 1.
MIN_IR_VERSION = 3
MAX_IR_VERSION = 20
_VARINT = 0  # wire type of ir_version and model_version; every other field is length-delimited (2)
CONTENT_FIELDS = frozenset({7, 20, 25})  # graph, training_info, functions: what a loader runs or reads data for


def read_varint(data: bytes, pos: int) -> tuple[int, int] | None:
    """A protobuf varint at `pos` and the position after it; None when cut off or longer than ten bytes."""
    value = 0
    for shift in range(0, 70, 7):
        if pos >= len(data):
            return None
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
    return None


def looks_like_onnx(head: bytes, size: int) -> bool:
    """Whether the head reads as the start of a serialized ModelProto.

    Every field must be a ModelProto field with its own wire type, in any order (protobuf readers accept
    any order and overlong varints, so a model that moves `ir_version` behind its producer name is still a
    model), and an `ir_version` from 3 to 20 must be among them. The walk stops where the head ends or a
    field runs past it; a file that fits in the head must parse exactly and hold a graph. Pickles, zips,
    text, safetensors and GGUF fail on their first bytes: their first tag is not a ModelProto field or has
    the wrong wire type, and text never holds the 0x08 byte of the `ir_version` tag. A TensorFlow
    SavedModel has ModelProto's first two wire types, but its schema version is 1.
    """
    pos, ir_version, graph = 0, None, False
    while pos < len(head):
        tag = read_varint(head, pos)
        if tag is None:
            return len(head) < size and ir_version is not None
        number, wire = tag[0] >> 3, tag[0] & 7
        if MODEL_FIELDS.get(number) != wire:
            return False
        value = read_varint(head, tag[1])
        if value is None:
            return len(head) < size and ir_version is not None
        if wire == _VARINT:
            pos = value[1]
            if number == IR_VERSION_FIELD:  # a repeated scalar field: the last one wins, as in protobuf
                ir_version = value[0] if MIN_IR_VERSION <= value[0] <= MAX_IR_VERSION else None
            continue
        graph = graph or number == GRAPH_FIELD
        pos = value[1] + value[0]
        if pos > len(head):  # runs past what the head shows: a big graph, or a truncated file
            return ir_version is not None
    return ir_version is not None and (graph or len(head) < size)


def may_be_onnx(head: bytes, size: int) -> bool:
    """Whether the head is well-formed protobuf (any field numbers and wire types, groups included) that a reader
    could still take as a ModelProto: a graph, training info or functions among its fields, or a field that runs
    past the head, where only the whole file can tell."""
    pos, groups = 0, list[int]()
    while pos < len(head):
        tag = read_varint(head, pos)
        if tag is None or tag[0] >> 3 == 0:
            return tag is None and len(head) < size
        number, wire, pos = tag[0] >> 3, tag[0] & 7, tag[1]
        if wire == 3 or wire == 4:
            if wire == 4 and (not groups or groups.pop() != number):
                return False
            if wire == 3:
                groups.append(number)
            continue
        if wire in (1, 5):
            pos += 8 if wire == 1 else 4
        elif wire in (0, 2):
            value = read_varint(head, pos)
            if value is None:
                return len(head) < size
            pos = value[1] + (value[0] if wire == 2 else 0)
            if wire == 2 and number in CONTENT_FIELDS and not groups:
                return True
        else:
            return False
        if pos > len(head):
            return len(head) < size
    return len(head) < size


class OnnxScanner:
    """`.onnx` files, whatever their name."""

    name = "onnx"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and looks_like_onnx(head.head, head.size)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        cap = ctx.limits.max_member_bytes  # also protobuf's own 2 GiB limit on one message
        if artifact.size > cap:
            yield artifact.observe("onnx.size_limit", 0, limit="max-member-bytes", value=cap, size=artifact.size)
            return
        # Imported here: onnx and its C++ extension load in a few hundred milliseconds and only ONNX needs them.
        from wscan.scanners.onnx_slim import SlimError, slim_model

        try:
            with artifact.opener() as raw:
                data = slim_model(raw, artifact.size, ctx.budget.check_time)
        except SlimError as exc:
            yield artifact.observe("onnx.malformed", 0, reason=str(exc)[:300])
            return
        yield from self.inspect(artifact, data, ctx)

    def inspect(self, artifact: Artifact, data: bytes, ctx: ScanContext) -> Iterator[ScanItem]:
        """The checks on a model read without its weights."""
        from wscan.scanners.onnx_checks import inspect_model

        folder = artifact.real_path.absolute().parent if artifact.real_path is not None else None
        inspection = inspect_model(data, folder, ctx.budget.check_time)
        for problem in inspection.problems:
            yield artifact.observe(problem.kind, **problem.attrs)
        if inspection.fact is not None:
            yield artifact.observe("fact.onnx", 0, **inspection.fact)
        for path in inspection.external_files:  # raw tensor bytes: the engine stops calling them unknown
            yield artifact.observe(CLAIM_KIND, file=display_path(path), format="onnx-external-data")


class LenientOnnxScanner(OnnxScanner):
    """Last in the table: a ModelProto written in a way no exporter writes (unknown or mistyped fields first, a
    large field before ir_version), which onnx.load and onnxruntime still load. The whole file decides: a model is
    a ModelProto protobuf parses, with an ir_version onnxruntime accepts and a graph, training info or functions; it
    is reported as disguised and checked in full. Anything else (TensorFlow's fingerprint.pb has a field 7 too)
    stays what it was, an unknown format or another scanner's."""

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and may_be_onnx(head.head, head.size)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        from wscan.scanners.onnx_slim import SlimError, top_level_fields

        try:
            with artifact.opener() as raw:
                fields = top_level_fields(raw, artifact.size, ctx.budget.check_time)
        except SlimError:
            fields = set()  # protobuf would refuse it as well
        data = self._model(artifact, ctx) if not fields.isdisjoint(CONTENT_FIELDS) else None
        if data is None:
            yield artifact.observe(NOT_MINE_KIND)  # nothing a loader would run or read: left to the unknown formats
            return
        yield artifact.observe("onnx.disguised", 0)
        yield from self.inspect(artifact, data, ctx)

    def _model(self, artifact: Artifact, ctx: ScanContext) -> bytes | None:
        """The model without its weights, when the file is one; None when protobuf or onnxruntime would refuse it."""
        from onnx import ModelProto

        from wscan.scanners.onnx_slim import slim_model

        if artifact.size > ctx.limits.max_member_bytes:
            return None
        try:
            with artifact.opener() as raw:
                data = slim_model(raw, artifact.size, ctx.budget.check_time)
            model = ModelProto.FromString(data)
        except Exception:  # SlimError, protobuf's DecodeError: not a model any loader reads
            return None
        return data if MIN_IR_VERSION <= model.ir_version <= MAX_IR_VERSION else None
