"""TensorFlow Lite models (`.tflite`): the ops they run, read from the FlatBuffer without TensorFlow.

A TFLite model is a list of ops over built-in kernels, with two ways out of them. A custom op runs the kernel the
loading app registered under its name (no code travels in the file). A Flex op (`Flex` + a TensorFlow op name) is
run by TensorFlow's Flex delegate as a TensorFlow op, from the NodeDef kept in its options: tensorflow-cpu 2.15's
`tf.lite.Interpreter` links the delegate, and a model converted with `SELECT_TF_OPS` from `tf.io.read_file` and
`tf.io.write_file` read /etc/hostname and wrote a file of its choosing at `invoke()` (tests/data/tflite). So every
Flex op's TensorFlow op is judged by the SavedModel rules (`tf.op`, rules/tensorflow.yaml): the name in its op
code, the name the delegate runs (the options' first string) and its NodeDef's op, each of them, with the path it
takes from a constant string tensor.

The structure is checked as TFLite's loader checks it before running anything: the TFL3 identifier, schema
version 3, every offset inside the file (`flatbuffer`), op code indexes, and buffers kept past the FlatBuffer
(models over 2 GB) inside the file. Weights are never read.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Iterator
from typing import Any

from wscan.model import AttrValue, Observation
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem
from wscan.scanners.flatbuffer import FlatBufferError, Pages, Table, root
from wscan.scanners.tf_graph import ATTR_OPS, OP_CATEGORIES, PATH_INPUTS, message_class, node_attrs, op_category

IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3
CUSTOM = 32  # BuiltinOperator.CUSTOM
STRING = 5  # TensorType.STRING
FLEX = b"Flex"  # the prefix TFLite hands to the Flex delegate (tflite::IsFlexOp)
# TensorFlow ops that wait: the Flex delegate runs any registered op, and these never return on their own (helper
# 216: SleepOp and a FIFO queue's dequeue hung TensorFlow 2.15's interpreter). Only judged in TensorFlow Lite, where
# no input pipeline feeds a queue; TF1 graphs keep queues in their input pipelines.
BLOCKING_OPS = frozenset({
    "SleepOp", "SleepIdentityOp", "SleepDataset", "ExperimentalSleepDataset", "QueueDequeue", "QueueDequeueV2",
    "QueueDequeueMany", "QueueDequeueManyV2", "QueueDequeueUpTo", "QueueDequeueUpToV2", "BarrierTakeMany",
    "Unstage", "MapUnstage", "MapUnstageNoKey", "OrderedMapUnstage", "OrderedMapUnstageNoKey", "StagePeek",
    "MapPeek", "OrderedMapPeek", "CollectiveReduce", "CollectiveGather", "CollectiveBcastRecv", "_Recv",
    # Helper 218: puts into a full queue or staging area, takes from an accumulator nothing feeds, and batching
    # that waits out its timeout (2e9 microseconds) hung the interpreter too.
    "QueueEnqueue", "QueueEnqueueV2", "QueueEnqueueMany", "QueueEnqueueManyV2", "Stage", "MapStage",
    "OrderedMapStage", "AccumulatorTakeGradient", "SparseAccumulatorTakeGradient", "ResourceAccumulatorTakeGradient",
    "Batch", "BatchFunction", "Unbatch", "UnbatchGrad",
})  # fmt: skip
MAX_OPTIONS = 1 << 20  # a Flex op's NodeDef: converters write a few hundred bytes
MAX_TEXT = 4096  # of a name, path or string constant kept as evidence
MAX_REPORTED = 100  # observations of one kind; the rest are counted
TICK = 4096  # table reads between clock checks

# Field slots, in schema.fbs order (tensorflow/compiler/mlir/lite/schema/schema.fbs).
MODEL_VERSION, MODEL_OPCODES, MODEL_SUBGRAPHS, MODEL_BUFFERS, MODEL_METADATA = 0, 1, 2, 4, 6
CODE_DEPRECATED, CODE_CUSTOM, CODE_BUILTIN = 0, 1, 3
GRAPH_TENSORS, GRAPH_OPERATORS, GRAPH_NAME = 0, 3, 4
OP_OPCODE, OP_INPUTS, OP_CUSTOM_OPTIONS, OP_LARGE_OFFSET, OP_LARGE_SIZE = 0, 1, 5, 9, 10
TENSOR_TYPE, TENSOR_BUFFER = 1, 2
BUFFER_DATA, BUFFER_OFFSET, BUFFER_SIZE = 0, 1, 2
METADATA_NAME, METADATA_BUFFER = 0, 1
_I32 = struct.Struct("<i")


def looks_like_tflite(head: bytes) -> bool:
    return len(head) >= 8 and head[4:8] == IDENTIFIER


class TfliteScanner:
    """TensorFlow Lite FlatBuffers, by their identifier or their name."""

    name = "tflite"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and (looks_like_tflite(head.head) or head.name.lower().endswith(".tflite"))

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as raw:
            reader = _Reader(artifact, ctx, Pages(raw, artifact.size))
            try:
                yield from reader.model()
            except FlatBufferError as exc:
                yield artifact.observe("tflite.malformed", reason=str(exc)[:300])
            except _TooMany as exc:
                yield artifact.observe("scan.limit", limit="max-members", detail=str(exc))


class _TooMany(Exception):
    """More operators than max-members: vectors may point every entry at one table, so a 52 MB file held 13 million
    (helper 216; each is read, which took past the time limit)."""


class _Reader:
    def __init__(self, artifact: Artifact, ctx: ScanContext, pages: Pages) -> None:
        self.artifact, self.ctx, self.pages = artifact, ctx, pages
        self.reads = self.operators = 0
        self.reported: Counter[str] = Counter()

    def _tick(self) -> None:
        self.reads += 1
        if self.reads % TICK == 0:
            self.ctx.budget.check_time()

    def _observe(self, kind: str, **attrs: AttrValue) -> Iterator[Observation]:
        self.reported[kind] += 1
        if self.reported[kind] <= MAX_REPORTED:
            yield self.artifact.observe(kind, **attrs)

    def model(self) -> Iterator[Observation]:
        pages = self.pages
        if pages.size < 8 or pages.read(4, 4) != IDENTIFIER:
            reason = "no TFL3 identifier at byte 4: TensorFlow Lite refuses the file"
            yield self.artifact.observe("tflite.malformed", reason=reason)
            return
        model = root(pages)
        version = model.uint(MODEL_VERSION)
        if version != SCHEMA_VERSION:
            reason = f"schema version {version}: TensorFlow Lite loads only version {SCHEMA_VERSION}"
            yield self.artifact.observe("tflite.malformed", reason=reason)
            return
        codes = [self._code(code) for code in self._each(model, MODEL_OPCODES)]
        buffers = self._buffers(model)
        for index, graph in enumerate(self._each(model, MODEL_SUBGRAPHS)):
            yield from self._operators(model, index, graph, codes, buffers)
        for entry in self._each(model, MODEL_METADATA):
            buffer = entry.uint(METADATA_BUFFER)
            if buffer >= buffers:
                name = _text(entry.string(METADATA_NAME, MAX_TEXT) or b"")
                raise FlatBufferError(f"metadata {name!r} names buffer {buffer} of {buffers}")
        for kind, count in self.reported.items():
            if count > MAX_REPORTED:
                yield self.artifact.observe("tflite.more", what=kind, count=count - MAX_REPORTED)

    def _each(self, table: Table, slot: int) -> Iterator[Table]:
        for item in table.tables(slot):
            self._tick()
            yield item

    @staticmethod
    def _code(code: Table) -> bytes | None:
        """A custom op's name as the op resolver reads it, None for a built-in kernel. A C string: read to its NUL
        whatever the length field says (a length of 0 hid a FlexWriteFile from a reader that trusted it). The built-in
        code is the larger of the two fields (schema_utils GetBuiltinCode): files older than 2.3 have only the byte."""
        if max(code.int32(CODE_BUILTIN), code.int8(CODE_DEPRECATED)) != CUSTOM:
            return None
        return code.c_string(CODE_CUSTOM, MAX_TEXT) or b""

    def _buffers(self, model: Table) -> int:
        """How many buffers the model has, each checked to lie inside the file."""
        count = 0
        for buffer in self._each(model, MODEL_BUFFERS):
            count += 1
            buffer.vector(BUFFER_DATA, 1)
            offset, size = buffer.uint64(BUFFER_OFFSET), buffer.uint64(BUFFER_SIZE)
            if offset > 1 and offset + size > self.pages.size:  # 1: the converter's placeholder, with size 0
                raise FlatBufferError(f"buffer {count - 1} lies at {offset} for {size} bytes, past the file")
        return count

    def _operators(self, model: Table, index: int, graph: Table, codes: list[bytes | None],
                   buffers: int) -> Iterator[Observation]:
        name = _text(graph.string(GRAPH_NAME, MAX_TEXT) or b"")
        where = f"subgraph {index}" + (f" ({name})" if name else "")
        for position, operator in enumerate(self._each(graph, GRAPH_OPERATORS)):
            self.operators += 1
            if self.operators > self.ctx.limits.max_members:
                raise _TooMany(f"more than {self.ctx.limits.max_members:,} operators; the rest were not read")
            opcode = operator.uint(OP_OPCODE)
            if opcode >= len(codes):
                raise FlatBufferError(f"operator {position} of {where} uses op code {opcode} of {len(codes)}")
            custom = codes[opcode]
            if custom is None:
                continue
            if not custom.startswith(FLEX):
                continue  # a kernel the app registered by this name, or a failed load: no code in the file
            yield from self._flex(model, graph, where, position, operator, custom, buffers)

    def _flex(self, model: Table, graph: Table, where: str, position: int, operator: Table, custom: bytes,
              buffers: int) -> Iterator[Observation]:
        options = self._options(operator)
        node_op, run, node_name = b"", b"", ""
        attrs: dict[str, Any] = {}
        problem = ""
        if options is None:
            problem = "it has no options (the delegate needs its NodeDef)"
        else:
            try:
                run, node = _flex_options(options)
            except Exception as exc:  # flexbuffers and protobuf on hostile bytes: asserts, struct and decode errors
                problem = f"its options are not the delegate's [op, NodeDef]: {type(exc).__name__}: {exc}"
            else:
                node_op, node_name, attrs = node.op, _text(node.name), node_attrs(node)
        label = f"{node_name} (operator {position})" if node_name else f"operator {position}"
        if problem:
            yield from self._observe("tflite.flex_unreadable", op=_text(custom), node=f"{label} of {where}",
                                     reason=problem[:300])
            return
        for op in dict.fromkeys(_text(name) for name in (custom[len(FLEX):], run, node_op) if name):
            if op in BLOCKING_OPS:
                yield from self._observe("tf.op", op=op, category="blocks", node=label, function=where, path="",
                                         detail="", target="", format="tflite", fixed=False)
                continue
            if op not in OP_CATEGORIES and op not in ATTR_OPS:
                continue
            category, detail = op_category(op, attrs)
            if not category:
                continue
            path = "" if category in ("python", "hidden-graph") else self._path(model, graph, operator, op, buffers)
            detail = detail[:MAX_TEXT]
            yield from self._observe(
                "tf.op", op=op, category=category, node=label, function=where, path=path, detail=detail,
                target=path or detail or "not a constant", format="tflite", fixed=bool(path or detail),
            )

    def _options(self, operator: Table) -> bytes | None:
        options = operator.bytes(OP_CUSTOM_OPTIONS, MAX_OPTIONS)
        if options is not None:
            return options
        offset, size = operator.uint64(OP_LARGE_OFFSET), operator.uint64(OP_LARGE_SIZE)
        if not size:
            return None
        if size > MAX_OPTIONS:
            raise FlatBufferError(f"custom options of {size} bytes are over the {MAX_OPTIONS} read")
        return self.pages.read(offset, size)

    def _constant(self, buffer: Table) -> bytes:
        """A buffer's first 64 KiB: its data, or the bytes past the FlatBuffer its offset and size name (the layout
        of models over 2 GB, which the interpreter reads the same)."""
        data = buffer.string(BUFFER_DATA, 1 << 16)
        if data:
            return data
        offset, size = buffer.uint64(BUFFER_OFFSET), buffer.uint64(BUFFER_SIZE)
        if offset <= 1 or not size:
            return b""
        return self.pages.read(offset, min(size, 1 << 16))

    def _path(self, model: Table, graph: Table, operator: Table, op: str, buffers: int) -> str:
        """The first string of the constant tensor at the op's path input, '' when it is computed or fed."""
        inputs = list(operator.ints(OP_INPUTS))
        for position in PATH_INPUTS.get(op, (0,)):
            if position >= len(inputs) or inputs[position] < 0:
                continue
            tensor = graph.table_at(GRAPH_TENSORS, inputs[position])
            buffer = tensor.uint(TENSOR_BUFFER)
            if tensor.int8(TENSOR_TYPE) != STRING or not 0 < buffer < buffers:
                continue
            text = _first_string(self._constant(model.table_at(MODEL_BUFFERS, buffer)))
            if text is not None:
                return _text(text[:MAX_TEXT])
        return ""


def _flex_options(options: bytes) -> tuple[bytes, Any]:
    """The op name the Flex delegate runs and the NodeDef it builds it from (kernel.cc: a FlexBuffer vector of two
    strings). Raises on anything else."""
    from flatbuffers import flexbuffers

    root = flexbuffers.GetRoot(options)
    if not root.IsVector:
        raise ValueError("not a vector")
    vector = root.AsVector
    if len(vector) != 2 or not (vector[0].IsString and vector[1].IsString):
        raise ValueError(f"a vector of {len(vector)}, not two strings")
    name, serialized = vector[0].AsStringBytes, vector[1].AsStringBytes
    node = message_class("NodeDef")()
    node.ParseFromString(bytes(serialized))
    return bytes(name), node


def _first_string(data: bytes) -> bytes | None:
    """The first string of a TFLite string tensor: a count, count + 1 offsets, then the bytes."""
    if len(data) < 12:
        return None
    count, start, end = (_I32.unpack_from(data, at)[0] for at in (0, 4, 8))
    if count < 1 or not 0 <= start <= end <= len(data):
        return None
    return data[start:end]


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")
