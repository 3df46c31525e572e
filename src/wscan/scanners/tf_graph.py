"""TensorFlow graphs: SavedModel `saved_model.pb` and frozen GraphDef `.pb` files, read without TensorFlow.

A TensorFlow graph is a program: running it (serving a SavedModel, importing a frozen graph) runs every op
in it, and some ops reach outside the model: they read and write files (ReadFile, WriteFile, the
checkpoint ops, tf.data readers, ImmutableConst's memory map), call back into the host's Python (PyFunc),
or talk to other machines (tf.data service, RPC, debugger URLs). Every node of the graph and of every
function in its library is read with protobuf message classes built here at run time from the few fields
needed (unknown fields are skipped by protobuf itself), and each op from that list is reported with its
node, its function and, when the node reads its path from a constant, the path. Checkpoint ops are normal
in a SavedModel (the loader feeds them the variables path): they are only reported when they use a
hard-coded path instead.

A `.pb` has no magic number: a blob is taken for a graph when its first bytes parse as the start of a
SavedModel (schema version 1, then a MetaGraphDef) or of a GraphDef (a NodeDef with a name and an op), or
when it is named `saved_model.pb`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from wscan.discover import display_path
from wscan.model import AttrValue
from wscan.scanners.base import CLAIM_KIND, Artifact, Head, ScanContext, ScanItem

SAVED_MODEL_NAME = "saved_model.pb"
IGNORED_NAMES = frozenset({"keras_metadata.pb", "fingerprint.pb"})  # Keras and SavedModel side files, no graph

# Ops that reach outside the graph, by what they reach. Judged by rules/tensorflow.yaml.
OP_CATEGORIES: dict[str, str] = {
    **dict.fromkeys(["PyFunc", "PyFuncStateless", "EagerPyFunc"], "python"),
    **dict.fromkeys(
        ["WriteFile", "DatasetToTFRecord", "ExperimentalDatasetToTFRecord", "SaveDataset", "SaveDatasetV2",
         "DistributedSave", "SnapshotDataset", "SnapshotDatasetV2", "CreateSummaryFileWriter",
         "CreateSummaryDbWriter", "DebugIdentityV2", "DebugIdentityV3"],
        "file-write",
    ),
    **dict.fromkeys(
        ["ReadFile", "MatchingFiles", "ImmutableConst", "LoadAndRemapMatrix", "GenerateVocabRemapping",
         "InitializeTableFromTextFile", "InitializeTableFromTextFileV2", "TFRecordDataset", "TFRecordDatasetV2",
         "FixedLengthRecordDataset", "FixedLengthRecordDatasetV2", "TextLineDataset", "TFRecordReader",
         "TFRecordReaderV2", "TextLineReader", "TextLineReaderV2", "FixedLengthRecordReader",
         "FixedLengthRecordReaderV2", "WholeFileReader", "WholeFileReaderV2", "LMDBReader", "LMDBDataset",
         "ExperimentalLMDBDataset", "SqlDataset", "ExperimentalSqlDataset", "CSVDataset", "CSVDatasetV2",
         "ExperimentalCSVDataset", "MatchingFilesDataset", "ExperimentalMatchingFilesDataset", "LoadDataset"],
        "file-read",
    ),
    **dict.fromkeys(["Save", "SaveV2", "SaveSlices", "MergeV2Checkpoints"], "checkpoint-write"),
    **dict.fromkeys(["Restore", "RestoreV2", "RestoreSlice"], "checkpoint-read"),
    **dict.fromkeys(
        ["DataServiceDataset", "DataServiceDatasetV2", "DataServiceDatasetV3", "DataServiceDatasetV4",
         "RegisterDataset", "RegisterDatasetV2", "Rpc", "TryRpc", "RpcClient", "RpcCall", "RpcServer",
         "RpcServerStart", "RpcServerRegister", "RpcCheckStatus", "RpcGetValue"],
        "network",
    ),
}
# Ops that only reach outside through an attribute: (op, attr) -> what a non-default value means.
ATTR_OPS = {
    "PrintV2": "output_stream",  # file://path appends the printed tensors to a file
    "DecodeProtoV2": "descriptor_source",  # a path reads a FileDescriptorSet from disk
    "EncodeProto": "descriptor_source",
    "DebugIdentity": "debug_urls",  # file:// dumps tensors, grpc:// streams them to a host
    "DebugNanCount": "debug_urls",
    "DebugNumericSummary": "debug_urls",
}
EVIDENCE_ATTRS = ("token", "memory_region_name", "output_stream", "descriptor_source", "debug_urls", "dump_root",
                  "file_pattern", "filename")  # fmt: skip
PASS_THROUGH = frozenset({"Identity", "Snapshot", "StopGradient", "IdentityN", "PlaceholderWithDefault"})
MAX_HOPS = 8
MAIN_GRAPH = "<graph>"  # the function name reported for nodes of the top-level graph
MAX_REPORTED = 1000  # op observations per file; more are counted
_TICK = 1 << 14
_OP_NAME = re.compile(rb"^[A-Za-z_][A-Za-z0-9_>]{0,127}$")
_KEEP = 200

# --- the message types ---------------------------------------------------------------------------------

# (message, [(field name, number, type, repeated, message type name)]) in proto3. Strings are declared as
# bytes so text that is not UTF-8 neither fails the parse nor is lost; the attr map is read as a repeated
# entry message (wire-identical) for the same reason.
_B, _M, _I = "bytes", "message", "int64"
_MESSAGES: list[tuple[str, list[tuple[str, int, str, bool, str]]]] = [
    ("SavedModel", [("schema_version", 1, _I, False, ""), ("meta_graphs", 2, _M, True, "MetaGraphDef")]),
    ("MetaGraphDef", [("graph_def", 2, _M, False, "GraphDef"), ("saver_def", 3, _M, False, "SaverDef")]),
    ("SaverDef", [("filename_tensor_name", 1, _B, False, "")]),
    ("GraphDef", [("node", 1, _M, True, "NodeDef"), ("library", 2, _M, False, "FunctionDefLibrary")]),
    ("FunctionDefLibrary", [("function", 1, _M, True, "FunctionDef")]),
    ("FunctionDef", [("signature", 1, _M, False, "OpDef"), ("node_def", 3, _M, True, "NodeDef")]),
    ("OpDef", [("name", 1, _B, False, "")]),
    ("NodeDef", [("name", 1, _B, False, ""), ("op", 2, _B, False, ""), ("input", 3, _B, True, ""),
                 ("attr", 5, _M, True, "AttrEntry")]),
    ("AttrEntry", [("key", 1, _B, False, ""), ("value", 2, _M, False, "AttrValue")]),
    ("AttrValue", [("list", 1, _M, False, "ListValue"), ("s", 2, _B, False, ""),
                   ("tensor", 8, _M, False, "TensorProto")]),
    ("ListValue", [("s", 2, _B, True, "")]),
    ("TensorProto", [("dtype", 1, _I, False, ""), ("string_val", 8, _B, True, "")]),
]  # fmt: skip
_PACKAGE = "wscan.tfgraph"
_CLASSES: dict[str, Any] = {}


def message_class(name: str) -> Any:
    """A protobuf message class for one of the types above, built once in a private descriptor pool."""
    if not _CLASSES:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        proto = descriptor_pb2.FileDescriptorProto(name="wscan_tfgraph.proto", package=_PACKAGE, syntax="proto3")
        kinds = {_B: descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
                 _I: descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                 _M: descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE}  # fmt: skip
        for message, fields in _MESSAGES:
            described = proto.message_type.add(name=message)
            for field_name, number, kind, repeated, type_name in fields:
                label = (descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED if repeated
                         else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)  # fmt: skip
                added = described.field.add(name=field_name, number=number, type=kinds[kind], label=label)
                if type_name:
                    added.type_name = f".{_PACKAGE}.{type_name}"
        pool = descriptor_pool.DescriptorPool()
        pool.Add(proto)
        for message, _ in _MESSAGES:
            _CLASSES[message] = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{message}"))
    return _CLASSES[name]


# --- sniffing -----------------------------------------------------------------------------------------

_LEN, _VARINT = 2, 0
SAVED_MODEL_FIELDS = {1: _VARINT, 2: _LEN}
META_GRAPH_FIELDS = dict.fromkeys(range(1, 8), _LEN)
META_INFO_FIELDS = {1: _LEN, 2: _LEN, 3: _LEN, 4: _LEN, 5: _LEN, 6: _LEN, 7: _VARINT, 8: _LEN}
GRAPH_FIELDS = {1: _LEN, 2: _LEN, 3: _VARINT, 4: _LEN}


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int] | None:
    """(value, next position) of a varint at `pos`, or None when it runs past `end` or past ten bytes."""
    value = shift = 0
    while pos < end and shift < 70:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None


@dataclass(frozen=True, slots=True)
class _Field:
    number: int
    wire: int
    value: int  # the varint, or the payload length
    start: int  # payload start (LEN)


def _fields(data: bytes, pos: int, end: int, allowed: dict[int, int]) -> Iterator[_Field] | None:
    """Fields between pos and end that are all `allowed` with their wire type; stops where the bytes stop."""
    found: list[_Field] = []
    while pos < end:
        tag = _varint(data, pos, end)
        if tag is None:
            break
        number, wire = tag[0] >> 3, tag[0] & 7
        if allowed.get(number) != wire:
            return None
        value = _varint(data, tag[1], end)
        if value is None:
            break
        found.append(_Field(number, wire, value[0], value[1]))
        pos = value[1] + (value[0] if wire == _LEN else 0)
    return iter(found)


def sniff(head: bytes) -> str | None:
    """'saved_model' or 'graph_def' when the head parses as the start of one, else None."""
    if _looks_like_saved_model(head):
        return "saved_model"
    if _looks_like_graph_def(head):
        return "graph_def"
    return None


def _looks_like_saved_model(head: bytes) -> bool:
    fields = _fields(head, 0, len(head), SAVED_MODEL_FIELDS)
    if fields is None:
        return False
    first = next(fields, None)
    second = next(fields, None)
    if first is None or second is None or (first.number, first.value, second.number) != (1, 1, 2):
        return False  # TensorFlow always writes saved_model_schema_version = 1 first
    end = min(len(head), second.start + second.value)
    meta = _fields(head, second.start, end, META_GRAPH_FIELDS)
    info = next(meta, None) if meta is not None else None
    if info is None:
        return False
    if info.number != 1:
        return True
    inner = _fields(head, info.start, min(end, info.start + info.value), META_INFO_FIELDS)
    return inner is not None and next(inner, None) is not None


def _looks_like_graph_def(head: bytes) -> bool:
    fields = _fields(head, 0, len(head), GRAPH_FIELDS)
    first = next(fields, None) if fields is not None else None
    if first is None or first.number != 1:
        return False
    end = min(len(head), first.start + first.value)
    node = _fields(head, first.start, end, {1: _LEN, 2: _LEN, 3: _LEN, 4: _LEN, 5: _LEN, 6: _LEN, 7: _LEN})
    if node is None:
        return False
    seen = {f.number: f for f in node}
    name, op = seen.get(1), seen.get(2)
    return (name is not None and op is not None and op.start + op.value <= end
            and _OP_NAME.match(head[op.start : op.start + op.value]) is not None)  # fmt: skip


# --- reading the graph ----------------------------------------------------------------------------------


def _text(data: bytes) -> str:
    return data[:_KEEP].decode("utf-8", "backslashreplace")


def _attr_text(value: Any) -> str:
    """A string attribute, a string list attribute, or the strings of a string tensor, as text."""
    if value.s:
        return _text(value.s)
    if value.HasField("list") and value.list.s:
        return _text(b", ".join(value.list.s))
    if value.HasField("tensor") and value.tensor.string_val:
        return _text(value.tensor.string_val[0])
    return ""


def _attrs(node: Any) -> dict[str, Any]:
    return {entry.key.decode("utf-8", "replace"): entry.value for entry in node.attr}


def _source(name: bytes) -> str:
    """The node an input names: `^ctrl`, `node:1` and `node:output:0` all come from `node`."""
    return name.decode("utf-8", "replace").lstrip("^").split(":", 1)[0]


@dataclass(slots=True)
class _Scope:
    """One graph or function body: its nodes by name, to find the constant an input comes from."""

    nodes: list[Any]
    function: str
    fed: frozenset[str]  # nodes the loader feeds (the saver's filename tensor)
    by_name: dict[str, Any] | None = None

    def constant(self, node: Any) -> str:
        """The string constant the node's first input comes from, through pass-through ops; '' if fed."""
        if self.by_name is None:
            self.by_name = {n.name.decode("utf-8", "replace"): n for n in self.nodes}
        current = node
        for _ in range(MAX_HOPS):
            if not current.input:
                return ""
            name = _source(current.input[0])
            current = self.by_name.get(name)
            if current is None or name in self.fed:
                return ""
            op = current.op.decode("utf-8", "replace")
            if op == "Const":
                value = _attrs(current).get("value")
                return _attr_text(value) if value is not None else ""
            if op not in PASS_THROUGH:
                return ""
        return ""


def _category(op: str, attrs: dict[str, Any]) -> tuple[str, str]:
    """What an op reaches ('' for nothing) and the attribute that says where."""
    attr = ATTR_OPS.get(op)
    if attr is not None:
        value = _attr_text(attrs[attr]) if attr in attrs else ""
        if op == "PrintV2":
            return ("file-write", value) if value.startswith("file://") else ("", "")
        if op in ("DecodeProtoV2", "EncodeProto"):
            return ("file-read", value) if value and not value.startswith(("local://", "bytes://")) else ("", "")
        if not value:
            return "", ""
        return ("network" if "grpc://" in value else "file-write"), value
    detail = ", ".join(f"{k}={_attr_text(attrs[k])}" for k in EVIDENCE_ATTRS if k in attrs and _attr_text(attrs[k]))
    return OP_CATEGORIES.get(op, ""), detail


def _scopes(message: Any, kind: str) -> Iterator[_Scope]:
    """The top-level graph and every library function, of every meta graph."""
    graphs: list[tuple[Any, frozenset[str]]] = []
    if kind == "saved_model":
        for meta in message.meta_graphs:
            saver = _source(meta.saver_def.filename_tensor_name) if meta.HasField("saver_def") else ""
            graphs.append((meta.graph_def, frozenset({saver} - {""})))
    else:
        graphs.append((message, frozenset()))
    for graph, fed in graphs:
        yield _Scope(list(graph.node), "", fed)
        for function in graph.library.function:
            yield _Scope(list(function.node_def), _text(function.signature.name), frozenset())


class TfGraphScanner:
    """SavedModel and frozen GraphDef protobufs, whatever their name (saved_model.pb is taken on its name)."""

    name = "tf-graph"

    def accepts(self, head: Head) -> bool:
        if head.raw_data:
            return False
        base = head.name.replace("\\", "/").rsplit("/", 1)[-1]
        if base in IGNORED_NAMES:
            return False
        return base == SAVED_MODEL_NAME or sniff(head.head) is not None

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        from google.protobuf.message import DecodeError

        limit = ctx.limits.max_member_bytes
        if artifact.size > limit:
            yield artifact.observe("tf.size_limit", size=artifact.size, limit=limit)
            return
        with artifact.opener() as raw:
            data = raw.read(limit + 1)
        base = artifact.name.replace("\\", "/").rsplit("/", 1)[-1]
        kind = sniff(data[: 64 * 1024]) or ("saved_model" if base == SAVED_MODEL_NAME else "graph_def")
        message = message_class("SavedModel" if kind == "saved_model" else "GraphDef")()
        try:
            message.ParseFromString(data)
        except (DecodeError, RecursionError, ValueError) as exc:
            yield artifact.observe("tf.malformed", format=kind, reason=f"{type(exc).__name__}: {exc}"[:200])
            return
        if kind == "saved_model" and not any(m.HasField("graph_def") for m in message.meta_graphs):
            yield artifact.observe("tf.graph_invalid", format=kind, reason="no meta graph with a graph")
            return
        yield from _ops(artifact, ctx, message, kind)
        if kind == "saved_model":
            yield from _claim_variables(artifact)


MAX_CLAIMED = 10_000


def _claim_variables(artifact: Artifact) -> Iterator[ScanItem]:
    """`variables/` beside saved_model.pb holds the checkpoint (an index table and raw shards) this graph
    restores: the engine is told they are its data, not files of unknown format. They are still sniffed."""
    if artifact.real_path is None:
        return
    folder = artifact.real_path.parent / "variables"
    if not folder.is_dir() or folder.is_symlink():
        return
    for _, path in zip(range(MAX_CLAIMED), sorted(folder.iterdir()), strict=False):
        if path.name.startswith("variables.") and path.is_file() and not path.is_symlink():
            yield artifact.observe(CLAIM_KIND, file=display_path(path), format="tf-variables")


def _ops(artifact: Artifact, ctx: ScanContext, message: Any, kind: str) -> Iterator[ScanItem]:
    """One observation per node whose op reaches outside the graph."""
    reported = walked = 0
    for scope in _scopes(message, kind):
        for node in scope.nodes:
            walked += 1
            if walked % _TICK == 0:
                ctx.budget.check_time()
            op = node.op.decode("utf-8", "replace")
            if op not in OP_CATEGORIES and op not in ATTR_OPS:
                continue
            category, detail = _category(op, _attrs(node))
            if not category:
                continue
            reported += 1
            if reported > MAX_REPORTED:
                continue
            path = "" if category == "python" else scope.constant(node)
            attrs: dict[str, AttrValue] = {
                "op": op[:_KEEP], "category": category, "node": _text(node.name),
                "function": scope.function or MAIN_GRAPH, "path": path, "detail": detail[:_KEEP],
                "target": path or detail[:_KEEP] or "not a constant", "format": kind,
            }  # fmt: skip
            yield artifact.observe("tf.op", **attrs)
    if reported > MAX_REPORTED:
        yield artifact.observe("tf.more_ops", count=reported - MAX_REPORTED, format=kind)
