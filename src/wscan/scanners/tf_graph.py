"""TensorFlow graphs: SavedModels, TF1 meta graphs and frozen GraphDefs, binary or text, read without TensorFlow.

A TensorFlow graph is a program: running it (serving a SavedModel, importing a frozen graph, restoring a TF1
checkpoint through its `.meta`) runs every op in it, and some ops reach outside the model: they read and
write files (ReadFile, WriteFile, the checkpoint ops, tf.data readers, ImmutableConst's memory map), call
back into the host's Python (PyFunc), or talk to other machines (tf.data service, RPC, debugger URLs).
Every node of the graph and of every function in its library is read with protobuf message classes built
here at run time from the few fields needed (unknown fields are skipped by protobuf itself), and each op
from that list is reported with its node, its function and, when the node reads its path from a constant,
the path: constants joined count, and so do constants a function gets as an argument or a called function
returns (tf.data runs its readers and maps in functions). Checkpoint ops are normal (the loader or the TF1 Saver
feeds them the variables path): they are only reported when they use a hard-coded path instead.

The same messages come as protobuf text too: TensorFlow's loader reads `saved_model.pbtxt` when there is no
`saved_model.pb`, `import_meta_graph` reads a text `.meta`, and `tf.io.write_graph` writes `graph.pbtxt`
by default. Text is parsed with protobuf's own `text_format`, the parser TensorFlow's Python loader uses.

A binary graph has no magic number: a blob is taken for one when its first bytes parse as the start of a
SavedModel (schema version 1, then a MetaGraphDef), a GraphDef (a NodeDef with a name and an op) or a
MetaGraphDef (its meta info, or a graph), or when it is named `saved_model.pb`. Text is taken when it opens
the way TensorFlow writes each of them, or when it is named `saved_model.pbtxt`.
"""

from __future__ import annotations

import bisect
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Any

from wscan.discover import display_path
from wscan.model import AttrValue, Observation
from wscan.scanners.archive import path_problem
from wscan.scanners.base import (
    CLAIM_KIND,
    HEAD_BYTES,
    NOT_MINE_KIND,
    Artifact,
    Head,
    ScanContext,
    ScanItem,
    read_capped,
)

SAVED_MODEL_NAME = "saved_model.pb"
SAVED_MODEL_TEXT_NAME = "saved_model.pbtxt"
KERAS_METADATA_NAME = "keras_metadata.pb"  # a SavedModel's Keras configs: read by scanners.keras
IGNORED_NAMES = frozenset({KERAS_METADATA_NAME, "fingerprint.pb"})  # Keras and SavedModel side files, no graph

# Ops that reach outside the graph, by what they reach. Judged by rules/tensorflow.yaml.
OP_CATEGORIES: dict[str, str] = {
    **dict.fromkeys(["PyFunc", "PyFuncStateless", "EagerPyFunc"], "python"),
    **dict.fromkeys(
        ["WriteFile", "DatasetToTFRecord", "ExperimentalDatasetToTFRecord", "SaveDataset", "SaveDatasetV2",
         "DistributedSave", "SnapshotDataset", "SnapshotDatasetV2", "CreateSummaryFileWriter",
         "CreateSummaryDbWriter", "DebugIdentityV2", "DebugIdentityV3", "CacheDataset", "CacheDatasetV2",
         "DumpTensor"],
        "file-write",
    ),
    **dict.fromkeys(
        ["ReadFile", "MatchingFiles", "ImmutableConst", "LoadAndRemapMatrix", "GenerateVocabRemapping",
         "InitializeTableFromTextFile", "InitializeTableFromTextFileV2", "TFRecordDataset", "TFRecordDatasetV2",
         "FixedLengthRecordDataset", "FixedLengthRecordDatasetV2", "TextLineDataset", "TFRecordReader",
         "TFRecordReaderV2", "TextLineReader", "TextLineReaderV2", "FixedLengthRecordReader",
         "FixedLengthRecordReaderV2", "WholeFileReader", "WholeFileReaderV2", "LMDBReader", "LMDBDataset",
         "ExperimentalLMDBDataset", "SqlDataset", "ExperimentalSqlDataset", "CSVDataset", "CSVDatasetV2",
         "ExperimentalCSVDataset", "MatchingFilesDataset", "ExperimentalMatchingFilesDataset", "LoadDataset",
         "RecordInput", "SnapshotDatasetReader", "SnapshotNestedDatasetReader", "SnapshotChunkDataset",
         "ListSnapshotChunksDataset"],
        "file-read",
    ),
    # A dataset rebuilt from a GraphDef held in a tensor (a variable, a constant): any op can hide in it, out of
    # every graph a scanner reads (a review read and wrote files through one).
    **dict.fromkeys(["DatasetFromGraph"], "hidden-graph"),
    **dict.fromkeys(["Save", "SaveV2", "SaveSlices", "MergeV2Checkpoints"], "checkpoint-write"),
    **dict.fromkeys(["Restore", "RestoreV2", "RestoreSlice", "DTensorRestoreV2"], "checkpoint-read"),
    **dict.fromkeys(
        ["DataServiceDataset", "DataServiceDatasetV2", "DataServiceDatasetV3", "DataServiceDatasetV4",
         "RegisterDataset", "RegisterDatasetV2", "Rpc", "TryRpc", "RpcClient", "RpcCall", "RpcServer",
         "RpcServerStart", "RpcServerRegister", "RpcCheckStatus", "RpcGetValue", "RemoteCall",
         "FileSystemSetConfiguration"],
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
                  "file_pattern", "filename", "log_dir_path", "file_name")  # fmt: skip
PASS_THROUGH = frozenset({"Identity", "Snapshot", "StopGradient", "IdentityN", "PlaceholderWithDefault"})
MAX_HOPS = 8
# The inputs that hold the path, where it is not the first (a table initializer's first input is the table, a
# dataset writer's its dataset), first found first: MergeV2Checkpoints writes its destination and deletes the
# folders of its sources.
PATH_INPUTS = {
    **dict.fromkeys(["InitializeTableFromTextFile", "InitializeTableFromTextFileV2", "CacheDataset", "CacheDatasetV2",
                     "DatasetToTFRecord", "ExperimentalDatasetToTFRecord", "SaveDataset", "SaveDatasetV2",
                     "DistributedSave", "SnapshotDataset", "SnapshotDatasetV2", "CreateSummaryFileWriter",
                     "CreateSummaryDbWriter", "SqlDataset", "ExperimentalSqlDataset"], (1,)),
    "MergeV2Checkpoints": (1, 0), "GenerateVocabRemapping": (0, 1),
}  # fmt: skip
# What TensorFlow's loaders run once a SavedModel or meta graph is loaded, feeding it only the asset paths: the init
# op's signature output, else the main op or legacy init op collections (loader_impl.get_init_op).
INIT_OP_SIGNATURE = b"__saved_model_init_op"
INIT_OP_COLLECTIONS = (b"saved_model_main_op", b"legacy_init_op")
ASSETS_COLLECTION = b"saved_model_assets"  # where the loader finds the assets when asset_file_def has none
MAX_COMPUTED_NODES = 256  # nodes, inputs and callers followed back from a path input, across the functions it crosses
MAX_CALL_DEPTH = 8  # function calls a path is followed back through, from an argument to its caller's input
NOT_FOLLOWED = "<made by more than wscan follows>"  # a path the trace gave up on: never taken for a fed one
# Calls whose function takes their inputs one for one, from this input on (If and Case pass all but the first).
CALL_ARGUMENTS = {
    **dict.fromkeys(["PartitionedCall", "StatefulPartitionedCall", "TPUPartitionedCall", "While",
                     "StatelessWhile", "_While", "XlaWhile", "RiscWhile"], 0),
    **dict.fromkeys(["If", "StatelessIf", "_If", "XlaIf", "Case", "StatelessCase", "RemoteCall"], 1),
}  # fmt: skip
# tf.data ops whose function takes the input dataset's element (its first input) then `other_arguments` (what
# the function captured), by how many inputs follow those: TextLineDataset(path) runs in a flat_map function
# that gets the path as an argument.
DATASET_CALLS = {
    **dict.fromkeys(["MapDataset", "ExperimentalMapDataset", "FlatMapDataset", "FilterDataset",
                     "TakeWhileDataset", "ExperimentalTakeWhileDataset"], 0),
    **dict.fromkeys(["ParallelMapDataset", "ParallelMapDatasetV2", "ParallelFilterDataset"], 1),
    **dict.fromkeys(["InterleaveDataset"], 2),
    **dict.fromkeys(["ParallelInterleaveDatasetV2", "ParallelInterleaveDatasetV3", "MapAndBatchDataset",
                     "ExperimentalMapAndBatchDataset"], 3),
    **dict.fromkeys(["LegacyParallelInterleaveDatasetV2"], 4),
    **dict.fromkeys(["ParallelInterleaveDatasetV4", "ParallelInterleaveDataset",
                     "ExperimentalParallelInterleaveDataset"], 5),
}  # fmt: skip
# Calls whose outputs are their function's outputs, one for one (a nested tf.function that returns a path).
RETURNING_CALLS = frozenset({"PartitionedCall", "StatefulPartitionedCall", "TPUPartitionedCall"})
# tf.data ops whose element is what their function returns (a map), or made from the dataset it returns (a
# flat_map, an interleave): the element of `range(1).map(lambda _: path)` is the map function's constant.
DATASET_MAPS = frozenset(DATASET_CALLS) - {"FilterDataset", "TakeWhileDataset", "ExperimentalTakeWhileDataset",
                                           "ParallelFilterDataset"}  # fmt: skip
# Every op TensorFlow 2.21 has that calls a function named in an attribute: the ones above, and these, whose
# function gets its arguments from all their inputs together (or, for some, from another function's outputs).
FUNCTION_OPS = frozenset(CALL_ARGUMENTS) | frozenset(DATASET_CALLS) | {
    "BatchFunction", "ChooseFastestBranchDataset", "DataServiceDatasetV3", "DataServiceDatasetV4", "For",
    "ExperimentalGroupByReducerDataset", "ExperimentalGroupByWindowDataset", "ExperimentalScanDataset",
    "GeneratorDataset", "GroupByReducerDataset", "GroupByWindowDataset", "IndexFlatMapDataset", "LoadDataset",
    "MapDefun", "OneShotIterator", "ReduceDataset", "RiscCondition", "RpcServerRegister", "SaveDataset",
    "SaveDatasetV2", "ScanDataset", "SnapshotDatasetV2", "SymbolicGradient", "TPUCompile", "XlaCallModule",
    "XlaHostCompute", "XlaLaunch", "XlaLaunchV2", "XlaReduce", "XlaReduceWindow", "XlaScatter",
    "XlaSelectAndScatter", "XlaVariadicReduce", "XlaVariadicReduceV2", "XlaVariadicSort", "_TPUReplicate",
    "_XlaCompile",
}  # fmt: skip
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
    ("SavedModel", [("saved_model_schema_version", 1, _I, False, ""),
                    ("meta_graphs", 2, _M, True, "MetaGraphDef")]),
    ("MetaGraphDef", [("graph_def", 2, _M, False, "GraphDef"), ("saver_def", 3, _M, False, "SaverDef"),
                      ("collection_def", 4, _M, True, "CollectionEntry"),
                      ("signature_def", 5, _M, True, "SignatureEntry"),
                      ("asset_file_def", 6, _M, True, "AssetFileDef"),
                      ("object_graph_def", 7, _M, False, "SavedObjectGraph")]),
    # An asset: the graph tensor the loader feeds its path to, and the file's name under assets/.
    ("AssetFileDef", [("tensor_info", 1, _M, False, "TensorInfo"), ("filename", 2, _B, False, "")]),
    ("TensorInfo", [("name", 1, _B, False, "")]),
    # The init op (what the loader runs after restoring, unfed): a signature's output, or a collection's node.
    ("CollectionEntry", [("key", 1, _B, False, ""), ("value", 2, _M, False, "CollectionDef")]),
    # TF1's SavedModelBuilder keeps a SavedModel's assets in a collection of packed AssetFileDefs instead.
    ("CollectionDef", [("node_list", 1, _M, False, "NodeList"), ("any_list", 5, _M, False, "AnyList")]),
    ("NodeList", [("value", 1, _B, True, "")]),
    ("AnyList", [("value", 1, _M, True, "Any")]),
    ("Any", [("type_url", 1, _B, False, ""), ("value", 2, _B, False, "")]),
    ("SignatureEntry", [("key", 1, _B, False, ""), ("value", 2, _M, False, "SignatureDef")]),
    ("SignatureDef", [("outputs", 2, _M, True, "TensorInfoEntry")]),
    ("TensorInfoEntry", [("key", 1, _B, False, ""), ("value", 2, _M, False, "TensorInfo")]),
    # Keras' object metadata: tf_keras rebuilds layers from these JSON configs when a SavedModel has no
    # keras_metadata.pb (SavedUserObject.metadata), and from keras_metadata.pb itself otherwise.
    ("SavedObjectGraph", [("nodes", 1, _M, True, "SavedObject")]),
    ("SavedObject", [("user_object", 4, _M, False, "SavedUserObject")]),
    ("SavedUserObject", [("metadata", 3, _B, False, "")]),
    ("KerasSavedMetadata", [("nodes", 1, _M, True, "KerasSavedNode")]),
    ("KerasSavedNode", [("metadata", 5, _B, False, "")]),
    ("SaverDef", [("filename_tensor_name", 1, _B, False, "")]),
    ("GraphDef", [("node", 1, _M, True, "NodeDef"), ("library", 2, _M, False, "FunctionDefLibrary")]),
    ("FunctionDefLibrary", [("function", 1, _M, True, "FunctionDef")]),
    ("FunctionDef", [("signature", 1, _M, False, "OpDef"), ("node_def", 3, _M, True, "NodeDef"),
                     ("ret", 4, _M, True, "RetEntry")]),
    ("RetEntry", [("key", 1, _B, False, ""), ("value", 2, _B, False, "")]),  # an output's name -> its tensor
    ("OpDef", [("name", 1, _B, False, ""), ("input_arg", 2, _M, True, "ArgDef"),
               ("output_arg", 3, _M, True, "ArgDef")]),
    ("ArgDef", [("name", 1, _B, False, "")]),
    ("NodeDef", [("name", 1, _B, False, ""), ("op", 2, _B, False, ""), ("input", 3, _B, True, ""),
                 ("attr", 5, _M, True, "AttrEntry")]),
    ("AttrEntry", [("key", 1, _B, False, ""), ("value", 2, _M, False, "AttrValue")]),
    ("AttrValue", [("list", 1, _M, False, "ListValue"), ("s", 2, _B, False, ""),
                   ("tensor", 8, _M, False, "TensorProto"), ("func", 10, _M, False, "NameAttrList")]),
    ("ListValue", [("s", 2, _B, True, ""), ("func", 9, _M, True, "NameAttrList")]),
    ("NameAttrList", [("name", 1, _B, False, "")]),  # a function an op calls (If's branches, a dataset's map)
    ("TensorProto", [("tensor_content", 4, _B, False, ""), ("string_val", 8, _B, True, "")]),
]  # fmt: skip
# Field names are TensorFlow's own, since text format names fields. Enum fields (a tensor's dtype) are left out:
# text writes their values by name, and only the strings above are needed. AttrValue's members are one oneof,
# as in TensorFlow: of `s: "model"` followed by a `tensor`, the last one set is the value, here as there.
_ONEOF = {"AttrValue": ("value", frozenset({"list", "s", "tensor", "func"}))}
MESSAGE_OF = {"saved_model": "SavedModel", "graph_def": "GraphDef", "meta_graph": "MetaGraphDef"}
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
            oneof, members = _ONEOF.get(message, ("", frozenset()))
            if oneof:
                described.oneof_decl.add(name=oneof)
            for field_name, number, kind, repeated, type_name in fields:
                label = (descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED if repeated
                         else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)  # fmt: skip
                added = described.field.add(name=field_name, number=number, type=kinds[kind], label=label)
                if type_name:
                    added.type_name = f".{_PACKAGE}.{type_name}"
                if field_name in members:
                    added.oneof_index = 0
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
    """'saved_model', 'graph_def' or 'meta_graph' when the head parses as the start of one, else None."""
    if _looks_like_saved_model(head):
        return "saved_model"
    if _looks_like_graph_def(head):
        return "graph_def"
    if _looks_like_meta_graph(head):
        return "meta_graph"
    return None


# How TensorFlow's text printer opens each message (after any `#` comment lines): a GraphDef with its first
# node's name (or its function library), a SavedModel with its schema version, a MetaGraphDef with its meta
# info or its graph. Anything else that is text stays text.
_TEXT_OPENINGS = [
    ("saved_model", re.compile(rb"saved_model_schema_version\s*:\s*\d|meta_graphs\s*:?\s*[{<]")),
    ("graph_def", re.compile(rb"(node\s*:?\s*[{<]\s*name\s*:|library\s*:?\s*[{<]\s*function\s*:?\s*[{<])")),
    ("meta_graph", re.compile(rb"(meta_info_def|graph_def)\s*:?\s*[{<]")),
]
_TEXT_LEAD = re.compile(rb"(?:\s|#[^\n]*(?:\n|$))*")


def sniff_text(head: bytes) -> str | None:
    """The kind of graph a protobuf text head opens, else None."""
    start = _TEXT_LEAD.match(head)
    pos = start.end() if start is not None else 0
    for kind, opening in _TEXT_OPENINGS:
        if opening.match(head, pos):
            return kind
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


def _looks_like_meta_graph(head: bytes) -> bool:
    """A MetaGraphDef (a TF1 `.meta`): every field length-delimited, the first its meta info (whose own fields
    must fill it exactly, as meta info fields) or its graph (which must read as a GraphDef)."""
    fields = _fields(head, 0, len(head), META_GRAPH_FIELDS)
    first = next(fields, None) if fields is not None else None
    if first is None or first.number not in (1, 2):
        return False
    end = first.start + first.value
    if first.number == 2:
        return _looks_like_graph_def(head[first.start : end])
    return _fills(head, first.start, min(end, len(head)), META_INFO_FIELDS, cut=end > len(head))


def _fills(data: bytes, pos: int, end: int, allowed: dict[int, int], cut: bool) -> bool:
    """Whether allowed fields run from `pos` exactly to `end` (or to where the data is `cut` short)."""
    count = 0
    while pos < end:
        tag = _varint(data, pos, end)
        if tag is None or allowed.get(tag[0] >> 3) != tag[0] & 7:
            return cut and tag is None
        value = _varint(data, tag[1], end)
        if value is None:
            return cut
        pos = value[1] + (value[0] if tag[0] & 7 == _LEN else 0)
        count += 1
    return count > 0 and (pos == end or cut)


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


def _attr_value(value: Any) -> bytes:
    """A string attribute, a string list attribute, or a string tensor's first string, whole; a tensor whose
    strings are packed in tensor_content comes back marked as such (it is never a bare file name)."""
    member = value.WhichOneof("value")
    if member == "s":
        return bytes(value.s)
    if member == "list":
        return b", ".join(value.list.s)
    if member == "tensor":
        if value.tensor.tensor_content:
            return b"tensor_content:" + bytes(value.tensor.tensor_content)
        return bytes(value.tensor.string_val[0]) if value.tensor.string_val else b""
    return b""


def _attr_text(value: Any) -> str:
    """`_attr_value`, shortened for a report."""
    return _text(_attr_value(value))


def _bare_file_name(value: bytes) -> bool:
    """A file name without a folder, drive or scheme: what a TF1 Saver writes by default (`model`)."""
    return not any(c in value for c in b"/\\:")


def node_attrs(node: Any) -> dict[str, Any]:
    return {entry.key.decode("utf-8", "replace"): entry.value for entry in node.attr}


def _source(name: bytes) -> str:
    """The node an input names: `^ctrl`, `node:1` and `node:output:0` all come from `node`."""
    return name.decode("utf-8", "replace").lstrip("^").split(":", 1)[0]


def _tensor(name: str) -> tuple[str, str, int]:
    """An input's node, output name and index: `node` is output 0, `node:1` (a graph's) output 1, and
    `node:output:2` (a function body's) the third tensor of the node's output named `output`."""
    parts = name.split(":")
    index = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 0
    return parts[0], parts[1] if len(parts) == 3 else "", index


@dataclass(slots=True)
class _Scope:
    """One graph or function body: its nodes by name, to find the constant an input comes from."""

    nodes: list[Any]
    function: str
    fed: frozenset[str]  # the Saver's filename input: save and restore feed it a path
    assets: frozenset[str] = frozenset()  # tensors the loader feeds an asset's path to, whatever they hold
    at_load: frozenset[str] = frozenset()  # the init op and every node it needs: run at load, with nothing fed
    name: str = ""  # the function's whole name, as calls name it ('' for the top-level graph)
    arguments: tuple[str, ...] = ()  # the function's arguments, in order
    outputs: tuple[str, ...] = ()  # the function's outputs' names, in order
    returns: tuple[str, ...] = ()  # the tensor each output returns
    calls: _Calls | None = None  # where the functions of this scope's graph are called
    by_name: dict[str, Any] | None = None
    argument_index: dict[str, int] | None = None
    output_index: dict[str, int] | None = None
    read_inputs: dict[tuple[int, bool], list[str]] = field(default_factory=dict)  # by id(node), distinct

    def node(self, name: str) -> Any:
        """The node of this name, or None (a function argument, a name that is not here)."""
        if self.by_name is None:
            self.by_name = {n.name.decode("utf-8", "replace"): n for n in self.nodes}
        return self.by_name.get(name)

    def data_inputs(self, node: Any, distinct: bool = False) -> list[str]:
        """A node's inputs but its control inputs (each once, if `distinct`), read once however many traces
        pass the node: one can have hundreds of thousands (a StringJoin of 200,000 inputs, read by
        1,000 ReadFile ops, took a minute)."""
        key = (id(node), distinct)
        found = self.read_inputs.get(key)
        if found is None:
            found = [i.decode("utf-8", "replace") for i in node.input if not i.startswith(b"^")]
            found = list(dict.fromkeys(found)) if distinct else found
            self.read_inputs[key] = found
        return found

    def argument(self, name: str) -> int | None:
        """The position of the function argument of this name, or None."""
        if self.argument_index is None:
            self.argument_index = {argument: i for i, argument in reversed(list(enumerate(self.arguments)))}
        return self.argument_index.get(name)

    def path(self, node: Any, op: str) -> str:
        """Where a node reaches, if that is written into the graph: the first of its path inputs made of
        constants, else ''. The loader feeds the init op and what it runs nothing but the asset paths, so there
        a Saver's filename input holds its default like any constant (a review's main op ran a second Saver's
        save op, which wrote its default file name into the working directory)."""
        fed = frozenset() if node.name.decode("utf-8", "replace") in self.at_load else self.fed
        for index in PATH_INPUTS.get(op, (0,)):
            found = self.constant(node, index, fed) or self.computed(node, index, fed)
            if found:
                return found
        return ""

    def constant(self, node: Any, index: int = 0, fed_names: frozenset[str] | None = None) -> str:
        """The string constant the node's path input comes from, through pass-through ops; '' if there is
        none. Through the Saver's filename input (of `fed_names`, this scope's fed ones unless told) only a
        folder-free default counts as '': that input is fed on save and restore, but an op that runs at any
        other time, unfed, writes to the default."""
        current, fed = node, False
        fed_names = self.fed if fed_names is None else fed_names
        for hop in range(MAX_HOPS):
            position = index if hop == 0 else 0
            if len(current.input) <= position:
                return ""
            name = _source(current.input[position])
            if name in self.assets:
                return ""
            fed = fed or name in fed_names
            current = self.node(name)
            if current is None:
                return ""
            op = current.op.decode("utf-8", "replace")
            if op == "Const":
                value = node_attrs(current).get("value")
                whole = _attr_value(value) if value is not None else b""
                return "" if fed and _bare_file_name(whole) else _text(whole)
            if op not in PASS_THROUGH:
                return ""
        return ""

    def computed(self, node: Any, index: int = 0, fed: frozenset[str] | None = None) -> str:
        """The constants a path input is computed from (StringJoin, Add, ShardedFilename, ... of constants only),
        joined with ' + '; '' when anything else feeds it: a placeholder, a variable, the Saver's filename input
        (what the loader feeds), or more nodes than are followed. A function argument is followed to what its
        callers pass (a tf.data reader gets its path as one, and so does a nested tf.function): the path is
        written into the graph if one caller passes it made of constants only."""
        if len(node.input) <= index:
            return ""
        path = node.input[index].decode("utf-8", "replace")
        budget = _Budget()
        texts = self._constants([] if path.startswith("^") else [path], budget, MAX_CALL_DEPTH, fed)
        if texts is None and budget.exhausted:
            # Fail closed: padding a graph with callers, nodes or calls past the limits must not turn a path
            # written into it into one the caller feeds (a review hid a constant behind 16 fed callers).
            return NOT_FOLLOWED
        return " + ".join(text for text in texts or [] if text)[:_KEEP]

    def _constants(
        self, names: list[str], budget: _Budget, depth: int, fed: frozenset[str] | None = None, call: _Site = None
    ) -> list[str] | None:
        """The string constants the tensors `names` are made of, in input order, with each argument of this
        function replaced by what a caller passes it (`call`, when the trace came down into it from there) and
        each output of a call by what its function returns; None when something else makes them, when one of
        `fed` (this scope's fed names unless told) does, or when the budget runs out."""
        fed = self.fed if fed is None else fed
        if not budget.spend(len(names)):
            return None  # more than are followed
        pending, seen = list(reversed(names)), set()
        texts: list[str | int] = []  # a constant's text, or the index of an argument still to follow
        while pending:
            name, output, index = _tensor(pending.pop())
            current = self.node(name)
            callee = self._callee(current) if current is not None else None
            key = (name, self._output(current, callee, output, index) if callee is not None else 0)
            returned_tensors = _returned(current, callee, key[1])
            if key in seen:
                continue
            seen.add(key)
            if name in fed or name in self.assets:
                return None  # what the loader feeds
            if not budget.spend(1):
                return None  # too far to follow
            if current is None:
                argument = self.argument(name)
                if argument is None:
                    return None  # a name that is nowhere
                texts.append(argument)
                continue
            if current.op == b"Const":
                value = node_attrs(current).get("value")
                texts.append(_text(_attr_value(value)) if value is not None else "")
                continue
            if callee is not None and returned_tensors:
                if depth == 0:
                    budget.exhausted = True
                    return None
                returned = callee._constants(returned_tensors, budget, depth - 1, call=(self, current))
                if returned is None:
                    return None
                texts.extend(returned)
                continue
            inputs = self.data_inputs(current, distinct=True)
            if not inputs:
                return None  # a placeholder, a variable, a table: not written into the graph
            if not budget.spend(len(inputs)):  # every input is looked at, if only to find it seen
                return None
            pending.extend(reversed(inputs))
        wanted = sorted({text for text in texts if isinstance(text, int)})
        passed = self._from_a_caller(wanted, budget, depth, call) if wanted else {}
        if passed is None:
            return None
        return [piece for text in texts for piece in (passed[text] if isinstance(text, int) else [text])]

    def _callee(self, node: Any) -> _Scope | None:
        """The library function a call node (or a tf.data map) runs and returns the outputs of, or None."""
        if self.calls is None:
            return None
        op = node.op.decode("utf-8", "replace")
        if op not in RETURNING_CALLS and op not in DATASET_MAPS:
            return self.calls.function(op)
        attr = node_attrs(node).get("f")
        return self.calls.function(attr.func.name.decode("utf-8", "replace")) if attr is not None else None

    @staticmethod
    def _output(node: Any, callee: _Scope, output: str, index: int) -> int:
        """Which of the callee's outputs an input names: a PartitionedCall's are one list, `output`; a function
        called as an op names each of its own (one past the last when it has no such output)."""
        op = node.op.decode("utf-8", "replace")
        if op in RETURNING_CALLS or op in DATASET_MAPS or not output:
            return index
        if callee.output_index is None:
            callee.output_index = {name: i for i, name in reversed(list(enumerate(callee.outputs)))}
        position = callee.output_index.get(output)
        return len(callee.returns) if position is None else position + index

    def _from_a_caller(
        self, arguments: list[int], budget: _Budget, depth: int, call: _Site = None
    ) -> dict[int, list[str]] | None:
        """The constants one caller passes to each of these arguments, all at the same call (`call`, if the
        trace came from there); None when no caller passes constants only, or the trace is
        as deep as it may go."""
        if self.calls is None:
            return None
        if depth == 0:
            budget.exhausted = True
            return None
        asked = (self.name, tuple(arguments))
        if call is None and asked in budget.asked:
            return None  # a function that calls itself passes on what its other callers pass: nothing new
        budget.asked.add(asked)
        try:
            for caller, site in [call] if call is not None else self.calls.sites(self.name):
                if not budget.spend(1):
                    return None
                passed: dict[int, list[str]] = {}
                for argument in arguments:
                    inputs = _call_inputs(site, caller.data_inputs(site), self.name, argument, len(self.arguments))
                    texts = caller._constants(inputs, budget, depth - 1) if inputs else None
                    if texts is None:
                        break
                    passed[argument] = texts
                else:
                    return passed
            return None
        finally:
            budget.asked.discard(asked)  # asked again later (another input of the same join), it is followed again


_Site = tuple[_Scope, Any] | None  # a call node, with the scope it is in


def _returned(node: Any, callee: _Scope | None, output: int) -> list[str]:
    """The tensors of `callee` that make a call's output: the one it returns there, or for a tf.data map every
    one (its element); [] when there is no such output."""
    if callee is None:
        return []
    if node.op.decode("utf-8", "replace") in DATASET_MAPS:
        return [tensor for tensor in callee.returns if tensor]
    return [callee.returns[output]] if output < len(callee.returns) else []


@dataclass(slots=True)
class _Budget:
    """What one path trace may still look at, across every function it follows the path through."""

    nodes: int = MAX_COMPUTED_NODES
    exhausted: bool = False  # the trace stopped at a limit, not at something fed or made at run time
    asked: set[tuple[str, tuple[int, ...]]] = field(default_factory=set)  # (function, arguments) being followed
    def spend(self, count: int) -> bool:
        """Take `count` from what the trace may still look at; False, and exhausted, once it is spent."""
        self.nodes -= count
        self.exhausted = self.exhausted or self.nodes < 0
        return not self.exhausted

@dataclass(slots=True)
class _Calls:
    """Where each function of one graph's library is called, by its name: listed once, the first time a trace
    reaches a function argument."""

    scopes: list[_Scope]
    check_time: Callable[[], None]
    by_function: dict[str, list[tuple[_Scope, Any]]] | None = None
    by_name: dict[str, _Scope] | None = None

    def function(self, name: str) -> _Scope | None:
        """The library function of this name, or None."""
        if self.by_name is None:
            self.by_name = {scope.name: scope for scope in reversed(self.scopes) if scope.name}
        return self.by_name.get(name)

    def sites(self, function: str) -> list[tuple[_Scope, Any]]:
        """The (scope, node) pairs that call `function` (each one tried costs the trace's budget)."""
        if self.by_function is None:
            self.by_function = self._index()
        return self.by_function.get(function, [])

    def _index(self) -> dict[str, list[tuple[_Scope, Any]]]:
        names = {scope.name for scope in self.scopes if scope.name}
        found: dict[str, list[tuple[_Scope, Any]]] = {}
        walked = 0
        for scope in self.scopes:
            for node in scope.nodes:
                walked += 1
                if walked % _TICK == 0:
                    self.check_time()
                for called in _called(node, names):
                    found.setdefault(called, []).append((scope, node))
        return found


def _called(node: Any, functions: set[str]) -> set[str]:
    """The library functions a node calls: by its op (a function is an op in its library), or through a
    function-valued attribute of an op that takes one (PartitionedCall's f, If's branches, a dataset's map
    function). Other ops' attributes are not read: most nodes have several, and reading them all doubled the
    time a large graph took."""
    op = node.op.decode("utf-8", "replace")
    if op not in FUNCTION_OPS:
        return {op} & functions
    called = set()
    for entry in node.attr:
        member = entry.value.WhichOneof("value")
        if member == "func":
            called.add(entry.value.func.name.decode("utf-8", "replace"))
        elif member == "list":
            called.update(function.name.decode("utf-8", "replace") for function in entry.value.list.func)
    return called & functions


def _call_inputs(call: Any, inputs: list[str], function: str, argument: int, count: int) -> list[str]:
    """The inputs of a call that make one argument of `function` (of `count` arguments): the input it is passed
    by a call, If, Case or While, or by a node whose op is the function; the input dataset (whose element it
    is) or the captured input of a tf.data function; else every input the op has, since it can only make the
    argument from them. [] when the call does not have that input. `inputs` are the call's data inputs."""
    op = call.op.decode("utf-8", "replace")
    if op in DATASET_CALLS:
        captured = max(0, len(inputs) - 1 - DATASET_CALLS[op])  # inputs[1 : 1 + captured] are other_arguments
        element = count - captured
        position = 1 + argument - element
        return inputs[:1] if argument < element else inputs[position : position + 1] if position <= captured else []
    first = 0 if op == function else CALL_ARGUMENTS.get(op)
    return inputs if first is None else inputs[first + argument : first + argument + 1]


def _meta_graphs(message: Any, kind: str) -> list[Any]:
    """The meta graphs of a SavedModel, the one a meta graph file is, none of a bare GraphDef."""
    return list(message.meta_graphs) if kind == "saved_model" else [message] if kind == "meta_graph" else []


def _asset_paths(artifact: Artifact, message: Any, kind: str) -> Iterator[Observation]:
    """Asset file names that leave assets/: the loader joins each onto the folder's assets/ as written (a review
    had a vocabulary table and a ReadFile read a file outside the model through `../` and an absolute name)."""
    for meta in _meta_graphs(message, kind):
        for asset in _assets(meta):
            name = asset.filename.decode("utf-8", "replace")
            reason = path_problem(name)
            if reason is not None:
                yield artifact.observe("tf.asset_escape", asset=name[:_KEEP], reason=reason, format=kind)


def _assets(meta: Any) -> list[Any]:
    """A meta graph's assets, where the loader takes them from (loader_impl.get_asset_tensors): its asset_file_def,
    else the AssetFileDefs packed in its assets collection, which TF1's SavedModelBuilder writes (an ordinary TF1
    vocabulary table's path was taken for one written into the graph). One that does not parse is left out."""
    from google.protobuf.message import DecodeError

    if meta.asset_file_def:
        return list(meta.asset_file_def)
    found = []
    packed = (collection.value.any_list.value for collection in meta.collection_def
              if collection.key == ASSETS_COLLECTION)  # fmt: skip
    for value in chain.from_iterable(packed):
        if value.type_url.rsplit(b"/", 1)[-1] != b"tensorflow.AssetFileDef":
            continue  # Any.Unpack refuses it, and the loader gets an asset with no tensor
        try:
            found.append(message_class("AssetFileDef").FromString(value.value))
        except (DecodeError, RecursionError, ValueError):
            continue
    return found


def op_category(op: str, attrs: dict[str, Any]) -> tuple[str, str]:
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


def _scopes(message: Any, kind: str, check_time: Callable[[], None]) -> Iterator[_Scope]:
    """The top-level graph and every library function, of every meta graph; the scopes of one graph share
    the list of where its functions are called."""
    graphs: list[tuple[Any, frozenset[str], frozenset[str], list[str]]] = []
    for meta in _meta_graphs(message, kind):
        saver = {_source(meta.saver_def.filename_tensor_name)} - {""} if meta.HasField("saver_def") else set()
        assets = frozenset({_source(asset.tensor_info.name) for asset in _assets(meta)} - {""})
        graphs.append((meta.graph_def, _tf1_saver_inputs(meta.graph_def.node) | saver, assets, _init_ops(meta)))
    if kind == "graph_def":
        graphs.append((message, _tf1_saver_inputs(message.node), frozenset(), []))
    for graph, fed, assets, init in graphs:
        main = _Scope(list(graph.node), "", fed, assets)
        main.at_load = _needed(main, init, check_time)
        scopes = [main]
        for function in graph.library.function:
            signature = function.signature
            arguments = tuple(argument.name.decode("utf-8", "replace") for argument in signature.input_arg)
            outputs = tuple(output.name.decode("utf-8", "replace") for output in signature.output_arg)
            returned = {entry.key.decode("utf-8", "replace"): entry.value.decode("utf-8", "replace")
                        for entry in function.ret}  # fmt: skip
            name = signature.name.decode("utf-8", "replace")
            scopes.append(_Scope(list(function.node_def), _text(signature.name), frozenset(), name=name,
                                 arguments=arguments, outputs=outputs,
                                 returns=tuple(returned.get(output, "") for output in outputs)))  # fmt: skip
        calls = _Calls(scopes, check_time)
        for scope in scopes:
            scope.calls = calls
        yield from scopes


def _init_ops(meta: Any) -> list[str]:
    """The nodes a meta graph's loader runs once it is loaded: the init op signature's outputs, and the main op and
    legacy init op collections (the loader takes the first it finds; all are taken here)."""
    names = [_source(output.value.name) for signature in meta.signature_def if signature.key == INIT_OP_SIGNATURE
             for output in signature.value.outputs]  # fmt: skip
    names += [_source(value) for collection in meta.collection_def if collection.key in INIT_OP_COLLECTIONS
              for value in collection.value.node_list.value]  # fmt: skip
    return [name for name in names if name]


def _needed(scope: _Scope, roots: list[str], check_time: Callable[[], None]) -> frozenset[str]:
    """The names of `roots` and of every node they need, through data and control inputs, in one graph."""
    pending, needed = list(roots), set()
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        needed.add(name)
        if len(needed) % _TICK == 0:
            check_time()
        node = scope.node(name)
        if node is not None:
            pending.extend(_source(i) for i in node.input)
    return frozenset(needed)


def _tf1_saver_inputs(nodes: Iterable[Any]) -> frozenset[str]:
    """The filename inputs of every TF1 `tf.train.Saver` in a graph: `<scope>/Const`, a PlaceholderWithDefault
    over `<scope>/filename`, another PlaceholderWithDefault. A meta graph's saver_def names only the Saver its
    loader uses, and a bare GraphDef (Estimator's `graph.pbtxt`) names none. What counts as fed is judged in
    `_Scope.constant`."""
    placeholders = {_source(n.name): n for n in nodes if n.op == b"PlaceholderWithDefault"}
    fed = set()
    for name, node in placeholders.items():
        filename = f"{name.removesuffix('/Const')}/filename"
        inner = _source(node.input[0]) if len(node.input) == 1 else ""
        if name.endswith("/Const") and inner == filename and filename in placeholders:
            fed.add(name)
    return frozenset(fed)


class TfGraphScanner:
    """TensorFlow graphs, binary or text: by the names TensorFlow's loaders read, else by their first bytes."""

    name = "tf-graph"

    def accepts(self, head: Head) -> bool:
        if head.raw_data:
            return False
        return _readings(head.head, _base(head.name)) is not None

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        limit = ctx.limits.max_member_bytes
        if artifact.size > limit:
            yield artifact.observe("tf.size_limit", size=artifact.size, limit=limit)
            return
        with artifact.opener() as raw:
            data = read_capped(raw, limit)
        base = _base(artifact.name)
        readings = _readings(data[:HEAD_BYTES], base) or [("graph_def", BINARY)]
        parsed: list[str] = []
        failures: list[tuple[str, str]] = []
        text_limit = ctx.limits.max_json_bytes  # Python's text parser takes about 18 bytes of memory per byte
        seen: set[object] = set()  # a node two readings both find is reported once
        for kind, encoding in readings:  # one message at a time: a 700 MB graph read three ways at once took 2.9 GB
            if encoding == TEXT and not _may_hold_graphs(data, kind) and len(readings) > 1:
                continue  # none of this message's graph fields is named anywhere in the text
            try:
                message = _parse(data, kind, encoding, ctx, text=len(data) <= text_limit)
            except _Unparsable as exc:
                failures.append((kind, str(exc)))
                continue
            if len(readings) == 1 and kind == "saved_model" and not any(
                m.HasField("graph_def") for m in message.meta_graphs
            ):
                yield artifact.observe("tf.graph_invalid", format=kind, reason="no meta graph with a graph")
                return
            parsed.append(kind)
            found = chain(_ops(artifact, ctx, message, kind), _keras_objects(artifact, ctx, message, kind),
                          _asset_paths(artifact, message, kind))  # fmt: skip
            for item in found:
                key = (item.kind, tuple(sorted(item.attrs.items())))
                if key not in seen:
                    seen.add(key)
                    yield item
            del message, found
        if not parsed and not failures and len(readings) > 1:
            # Text naming none of any message's graph fields (a Triton `config.pbtxt`, review 19): whatever a
            # program reads it as, it finds no graph in it. Not a TensorFlow file, as for any other text.
            yield artifact.observe(NOT_MINE_KIND)
            return
        if not parsed:
            kind, reason = failures[0] if failures else (readings[0][0], "nothing to read")
            head = data[:HEAD_BYTES]
            if base.lower().endswith(".meta") and sniff(head) is None and sniff_text(head) is None:
                # Neither reading works, so import_meta_graph refuses it too; `.meta` is also Unity's suffix.
                yield artifact.observe("file.unknown_format", head=head[:8].hex())
            elif reason == _TOO_LONG:
                yield artifact.observe("tf.size_limit", size=artifact.size, limit=text_limit)
            else:
                yield artifact.observe("tf.malformed", format=kind, reason=reason[:200])
            return
        if base in (SAVED_MODEL_NAME, SAVED_MODEL_TEXT_NAME) or (len(readings) == 1 and parsed == ["saved_model"]):
            yield from _claim_saved_model_files(artifact)
        elif "meta_graph" in parsed:
            yield from _claim_checkpoint(artifact)


BINARY, TEXT, BINARY_THEN_TEXT = "binary", "text", "binary, else text"
KINDS = ("saved_model", "meta_graph", "graph_def")
# A reading of text as one message only finds graphs through its top-level fields, which text names.
_GRAPH_FIELD_NAMES = {
    "saved_model": re.compile(rb"\bmeta_graphs\b"),
    "meta_graph": re.compile(rb"\bgraph_def\b"),
    "graph_def": re.compile(rb"\b(node|library)\b"),
}


class _Unparsable(Exception):
    """The bytes are not this message in this encoding; the message says why."""


def _base(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def _readings(head: bytes, base: str) -> list[tuple[str, str]] | None:
    """How TensorFlow's loaders would read a file, as (message, encoding) pairs, or None if it is no graph.

    By name first, as the loaders go: `saved_model.pb` is a binary SavedModel and `saved_model.pbtxt` a text
    one; a `.meta` is a MetaGraphDef, binary if it parses so, else text (`import_meta_graph`); any other
    `.pb` or `.pbtxt` is read as each message, and what each reading finds is reported (which one a program
    expects is in the program, not the file). Other names by their first bytes, the way TensorFlow writes.
    """
    lowered = base.lower()
    if base in IGNORED_NAMES:
        return None
    if base == SAVED_MODEL_NAME:
        return [("saved_model", BINARY)]
    if base == SAVED_MODEL_TEXT_NAME:
        return [("saved_model", TEXT)]
    if lowered.endswith(".meta"):
        return [("meta_graph", BINARY_THEN_TEXT)]
    if lowered.endswith(".pbtxt"):
        return [(kind, TEXT) for kind in KINDS]
    if lowered.endswith(".pb"):
        return [(kind, BINARY) for kind in KINDS]
    binary = sniff(head)
    if binary is not None:
        return [(binary, BINARY)]
    text = sniff_text(head)
    return [(text, TEXT)] if text is not None else None


def _may_hold_graphs(data: bytes, kind: str) -> bool:
    return _GRAPH_FIELD_NAMES[kind].search(data) is not None


_TOO_LONG = "too long to read as text"


def _parse(data: bytes, kind: str, encoding: str, ctx: ScanContext, text: bool) -> Any:
    """The message `kind` read from `data` (as text only when `text` allows it); raises _Unparsable with
    protobuf's reason."""
    from google.protobuf.message import DecodeError
    from google.protobuf.text_format import ParseError

    message = message_class(MESSAGE_OF[kind])()
    if encoding != TEXT:
        try:
            message.ParseFromString(data)
            return message
        except (DecodeError, RecursionError, ValueError) as exc:
            if "alloc failed" in str(exc):  # upb's arena: the worker's memory cap, not the bytes of another message
                raise MemoryError(str(exc)) from None  # (the other readings parsing would hide this one's nodes)
            if encoding == BINARY:
                raise _Unparsable(f"{type(exc).__name__}: {exc}") from None
            message = message_class(MESSAGE_OF[kind])()
    if not text:
        raise _Unparsable(_TOO_LONG)
    try:
        _parse_text(data, message, ctx.budget.check_time)
    except (ParseError, RecursionError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise _Unparsable(f"text format: {type(exc).__name__}: {exc}") from None
    return message


def _parse_text(data: bytes, message: Any, check_time: Callable[[], None]) -> None:
    """Protobuf text into `message`, as TensorFlow reads it (`text_format.Merge` for a `.meta`; `Parse` for a
    SavedModel refuses a repeated singular field, so anything it reads reads the same here). Fields this
    scanner has no use for are skipped, not refused. Python's text parser reads about 1 MB/s, so the lines
    go to it one by one and the time budget is checked as they go."""
    from google.protobuf import text_format

    text = data.decode("utf-8")
    text_format.MergeLines(
        _lines(text, check_time), message, allow_unknown_extension=True, allow_unknown_field=True
    )


def _lines(text: str, check_time: Callable[[], None]) -> Iterator[str]:
    """`text.split("\\n")` (what `text_format.Merge` parses), made lazily, with a time check every few lines;
    a very long line is cut into pieces (see `_pieces`), so that a one-line file is checked too."""
    start = count = since_check = 0
    while True:
        end = text.find("\n", start)
        for piece in _pieces(text[start:] if end < 0 else text[start:end]):
            count += 1
            since_check += len(piece)
            if count % _TICK == 0 or since_check >= _PIECE:  # the parser reads about 64 KiB in 60 ms
                check_time()
                since_check = 0
            yield piece
        if end < 0:
            return
        start = end + 1


_PIECE = 1 << 16
# Text format tokens as far as line breaks go: strings (no raw line breaks in them), comments, white space.
_BREAKABLE = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|#[^\n]*|(\s+)|[^\s\"'#]+|.")


def _pieces(line: str) -> Iterator[str]:
    """A line of at most `_PIECE` characters as it is; a longer one cut at white space outside strings and
    comments, where text format reads a line break as the same white space."""
    if len(line) <= _PIECE:
        yield line
        return
    start = 0
    for token in _BREAKABLE.finditer(line):
        if token.group(1) is not None and token.start() - start >= _PIECE:
            yield line[start : token.start()]
            start = token.end()
    yield line[start:]


MAX_CLAIMED = 10_000


def _keras_objects(artifact: Artifact, ctx: ScanContext, message: Any, kind: str) -> Iterator[Observation]:
    """The Keras configs a SavedModel's object graph carries (what tf_keras revives layers from when there is no
    keras_metadata.pb), checked like any Keras config."""
    if kind != "saved_model":
        return
    from wscan.scanners.keras import check_many

    blobs = (node.user_object.metadata for graph in message.meta_graphs for node in graph.object_graph_def.nodes)
    yield from check_many(artifact, ctx, blobs, "the object graph's Keras metadata")


def _claim_saved_model_files(artifact: Artifact) -> Iterator[ScanItem]:
    """`variables/` beside saved_model.pb holds the checkpoint (an index table and raw shards) this graph
    restores, and fingerprint.pb its hashes: the engine is told they are its data, not files of unknown
    format. They are still sniffed."""
    if artifact.real_path is None:
        return
    fingerprint = artifact.real_path.parent / "fingerprint.pb"
    if not fingerprint.is_symlink() and fingerprint.is_file():  # the link test first: it does not follow the link
        yield artifact.observe(CLAIM_KIND, file=display_path(fingerprint), format="tf-fingerprint")
    folder = artifact.real_path.parent / "variables"
    if folder.is_symlink() or not folder.is_dir():
        return
    for _, path in zip(range(MAX_CLAIMED), sorted(folder.iterdir()), strict=False):
        if path.name.startswith("variables.") and not path.is_symlink() and path.is_file():
            yield artifact.observe(CLAIM_KIND, file=display_path(path), format="tf-variables")


def _claim_checkpoint(artifact: Artifact) -> Iterator[ScanItem]:
    """A TF1 checkpoint `model.ckpt.meta` restores `model.ckpt.index` and `model.ckpt.data-*` beside it."""
    if artifact.real_path is not None and artifact.real_path.name.endswith(".meta"):
        yield from claim_checkpoint_files(artifact, artifact.real_path.name.removesuffix(".meta"))


def claim_checkpoint_files(artifact: Artifact, prefix: str) -> Iterator[ScanItem]:
    """`<prefix>.index` and `<prefix>.data-*` beside the artifact, claimed as a checkpoint's tensors."""
    if artifact.real_path is None:
        return
    folder = artifact.real_path.parent
    try:
        names = _names_in(folder, folder.stat().st_mtime_ns)
    except OSError:
        return
    start = bisect.bisect_left(names, prefix + ".")
    claimed = 0
    for name in names[start:]:
        if not name.startswith(prefix + ".") or claimed == MAX_CLAIMED:
            break
        rest = name[len(prefix) :]
        path = folder / name
        if (rest == ".index" or rest.startswith(".data-")) and not path.is_symlink() and path.is_file():
            claimed += 1
            yield artifact.observe(CLAIM_KIND, file=display_path(path), format="tf-checkpoint")


@lru_cache(maxsize=16)
def _names_in(folder: Path, stamp: int) -> tuple[str, ...]:
    """A folder's file names, sorted, listed once per change of the folder (`stamp`): a folder of many
    checkpoints costs one listing, not one per index."""
    return tuple(sorted(entry.name for entry in os.scandir(folder)))


def _ops(artifact: Artifact, ctx: ScanContext, message: Any, kind: str) -> Iterator[Observation]:
    """One observation per node whose op reaches outside the graph."""
    walked = past = 0
    counts: Counter[tuple[str, bool, bool]] = Counter()
    for scope in _scopes(message, kind, ctx.budget.check_time):
        for node in scope.nodes:
            walked += 1
            if walked % _TICK == 0:
                ctx.budget.check_time()
            op = node.op.decode("utf-8", "replace")
            if op not in OP_CATEGORIES and op not in ATTR_OPS:
                continue
            category, detail = op_category(op, node_attrs(node))
            if not category:
                continue
            path = scope.path(node, op) if category not in ("python", "hidden-graph") else ""
            # Capped per way the rules can judge a node (its category, and whether a path or target is written
            # in): a thousand fed-path RestoreV2 nodes, which no rule flags, once hid a WriteFile after them.
            judged = (category, bool(path or detail), bool(path))
            counts[judged] += 1
            if counts[judged] > MAX_REPORTED:
                past += 1
                continue
            attrs: dict[str, AttrValue] = {
                "op": op[:_KEEP], "category": category, "node": _text(node.name),
                "function": scope.function or MAIN_GRAPH, "path": path, "detail": detail[:_KEEP],
                "target": path or detail[:_KEEP] or "not a constant", "format": kind,
                "fixed": bool(path or detail),  # where it reaches is written into the graph
            }  # fmt: skip
            yield artifact.observe("tf.op", **attrs)
    if past:
        yield artifact.observe("tf.more_ops", count=past, format=kind)
