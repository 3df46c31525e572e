"""Pickle streams: raw pickles (protocols 0-5), concatenated pickles, legacy PyTorch and joblib files.

The symbolic machine reports what loading would import and call. This module knows the layouts that put
non-pickle bytes between pickles (legacy PyTorch storages, joblib arrays) so it can step over them
exactly as the loader would, and it keeps reading after a STOP so nothing can hide behind the first pickle.
"""

from __future__ import annotations

import io
import re
import struct
from collections.abc import Iterator
from typing import BinaryIO

from wscan.limits import Limits
from wscan.model import AttrValue, Observation
from wscan.scanners.archive import ZIP_END, ZIP_LOCAL
from wscan.scanners.base import HEAD_BYTES, Artifact, Head, ScanContext, ScanItem
from wscan.scanners.pickle_ops import OPCODES, PickleSyntaxError, Stream, Truncated
from wscan.scanners.pickle_vm import Const, Dict, Global, Machine, Obj, PickleResult, Seq, Sym

LEGACY_TORCH_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19."

# Element sizes of the storage classes legacy torch.save names in its persistent ids.
STORAGE_ELEMENT_SIZE = {
    "DoubleStorage": 8, "FloatStorage": 4, "HalfStorage": 2, "BFloat16Storage": 2, "LongStorage": 8,
    "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1, "BoolStorage": 1,
    "ComplexFloatStorage": 8, "ComplexDoubleStorage": 16, "ComplexHalfStorage": 4, "QUInt8Storage": 1,
    "QInt8Storage": 1, "QInt32Storage": 4, "QUInt4x2Storage": 1, "QUInt2x4Storage": 1,
    "UntypedStorage": 1,
}  # fmt: skip

# The same classes as safetensors dtype names, for the model summary.
STORAGE_DTYPE = {
    "DoubleStorage": "F64", "FloatStorage": "F32", "HalfStorage": "F16", "BFloat16Storage": "BF16",
    "LongStorage": "I64", "IntStorage": "I32", "ShortStorage": "I16", "CharStorage": "I8", "ByteStorage": "U8",
    "BoolStorage": "BOOL", "ComplexFloatStorage": "C64", "ComplexDoubleStorage": "C128",
    "ComplexHalfStorage": "C32", "QUInt8Storage": "QUINT8", "QInt8Storage": "QINT8", "QInt32Storage": "QINT32",
    "QUInt4x2Storage": "QUINT4X2", "QUInt2x4Storage": "QUINT2X4", "UntypedStorage": "U8",
}  # fmt: skip

JOBLIB_WRAPPERS = {
    "joblib.numpy_pickle.NumpyArrayWrapper",
    "sklearn.externals.joblib.numpy_pickle.NumpyArrayWrapper",
}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
_DTYPE_CODE = re.compile(r"[<>|=]?([bBiufcmMOSUVa?])(\d*)")
# Opcodes that take something off the stack, with a fixed-size argument: a stream that starts with one fails on
# its first opcode in any unpickler, before anything is imported or called. Most non-pickle files start with one
# (.npy's 0x93 is STACK_GLOBAL), and saying no at once saves running the machine on every such file.
CANNOT_START = frozenset(
    code for code, op in OPCODES.items() if op.stack_before and (op.arg is None or op.arg.n >= 0)
)
_RUNS_INIT = frozenset({"REDUCE", "OBJ", "INST"})  # NEWOBJ and NEWOBJ_EX call cls.__new__ only
PROTO_PEEK = 16  # enough for PROTO, then FRAME and its 8-byte length, then one more opcode
_PROBE_LIMITS = Limits()  # a probe reads one head: the defaults bound it, built once (it runs for every file)


def probe(head: bytes, strict: bool) -> bool:
    """Does this prefix look like a pickle? `strict` demands clear evidence (for raw tensor bytes)."""
    if not head or head[0] not in OPCODES or head[0] in CANNOT_START or head.startswith((ZIP_LOCAL, ZIP_END)):
        # A zip opens with "PK", which pickle reads as a persistent id, and no unpickler gets past that without
        # a persistent_load hook. The only loader with one (torch) reads a file with this magic as a zip, and the
        # archive scanner does so here; a random CRC byte must not turn a real .keras or .pt into a "pickle".
        return False
    has_proto = head[0] == 0x80 and len(head) > 1 and 2 <= head[1] <= 5
    if strict and head[:1] == b"\x80" and len(head) > 1 and head[1] > 5:
        return False  # pickle refuses PROTO > 5 before running anything: raw tensor bytes, not a pickle
    if has_proto and not strict:
        # Anything that gets one opcode past its PROTO is a pickle, damaged or not (fail closed). What the
        # unpickler refuses at the very next byte is not: a safetensors header of 640 bytes opens with 80 02 00.
        first = Machine(Stream(io.BytesIO(head[:PROTO_PEEK]), limit=PROTO_PEEK), _PROBE_LIMITS).run()
        return first.opcodes >= 2 or isinstance(first.error, Truncated)
    res = Machine(Stream(io.BytesIO(head), limit=len(head)), _PROBE_LIMITS).run()
    if strict:
        # Raw tensor bytes, which no loader unpickles: only a stream that imports a name is a payload worth
        # reading. Random floats decode as a few opcodes often enough (an EXT code, "N.") to flag a checkpoint.
        return _imports_names(res)
    if res.stopped and res.opcodes >= 2:
        return True
    if _acts(res):
        # An import alone already runs a module's import-time code when the file is unpickled.
        return True
    # Every byte of a full head decoded as opcodes and a string runs past it: a protocol 0/1 pickle opening with
    # a long string would otherwise pass as text (or as an unknown format).
    return isinstance(res.error, Truncated) and len(head) >= HEAD_BYTES and _long_string_at(head, res.end)


class PickleScanner:
    """Raw, concatenated, legacy-PyTorch and joblib pickle files."""

    name = "pickle"

    def accepts(self, head: Head) -> bool:
        return probe(head.head, strict=head.raw_data)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        with artifact.opener() as raw:
            yield from analyze(artifact, raw, 0, ctx)


def analyze(artifact: Artifact, raw: BinaryIO, base: int, ctx: ScanContext) -> Iterator[Observation]:
    """Simulate every pickle in `raw` (positioned at artifact offset `base`) and report what it does."""
    stream = Stream(raw, limit=ctx.limits.max_pickle_bytes, base=base, size=artifact.size - base)
    nested: list[PickleResult] = []
    machine = Machine(stream, ctx.limits, on_build=lambda m, obj: _joblib_build(m, obj, nested))
    legacy = stream.peek(len(LEGACY_TORCH_MAGIC)) == LEGACY_TORCH_MAGIC
    results: list[PickleResult] = []
    while not stream.at_end():
        ctx.budget.check_time()
        res = machine.run()
        if results and not _is_real_pickle(res):
            # Bytes after a complete pickle that do not form another one: loaders ignore them.
            yield artifact.observe(
                "pickle.trailing_data", res.start, length=_remaining(stream, res.start, artifact.size - base)
            )
            break
        results.append(res)
        yield from _report(artifact, res, nested)
        nested.clear()
        if not res.stopped:
            break
        if legacy and len(results) == 5:
            yield from _skip_legacy_storages(artifact, stream, results)
            if stream.at_end():
                break
    yield artifact.observe(
        "pickle.summary",
        base,
        pickles=len(results),
        protocol=max((r.protocol for r in results), default=0),
        opcodes=sum(r.opcodes for r in results),
        layout="legacy-torch" if legacy else "pickle",
        **_storages(results),
    )


def _storages(results: list[PickleResult]) -> dict[str, AttrValue]:
    """PyTorch storages named by persistent ids ('storage', torch.FloatStorage, key, location, numel)."""
    found: dict[str, tuple[str, int]] = {}
    for res in results:
        for pid in res.persistent_ids:
            if not isinstance(pid, Seq) or len(pid.items) < 5:
                continue
            kind, storage_type, key, numel = pid.items[0], pid.items[1], pid.items[2], pid.items[4]
            if (isinstance(kind, Const) and kind.value == "storage" and isinstance(storage_type, Global)
                    and isinstance(key, Const) and isinstance(numel, Const) and isinstance(numel.value, int)):
                dtype = STORAGE_DTYPE.get(storage_type.name.rsplit(".", 1)[-1], storage_type.name[:32])
                found[str(key.value)] = (dtype, numel.value)
    if not found:
        return {}
    return {
        "storages": len(found),
        "elements": sum(n for _, n in found.values()),
        "dtypes": ",".join(sorted({d for d, _ in found.values()})),
    }


def _remaining(stream: Stream, start: int, total: int) -> int:
    return max(total - (start - stream.base), 0)


def _is_real_pickle(res: PickleResult) -> bool:
    """A pickle after the first: complete, or doing something the loader of concatenated pickles would run."""
    return res.stopped or bool(res.imports) or _acts(res)


def _imports_names(res: PickleResult) -> bool:
    return any(r.invoked or _IDENTIFIER.fullmatch(r.raw) for r in res.imports.values())


def _acts(res: PickleResult) -> bool:
    """Whether loading the stream would import or call anything. An extension code this stream never
    registered is not enough: the unpickler refuses it ("unregistered extension code") before it does anything
    else, and bytes 0x82-0x84 open many binary files (a Flax msgpack map, a float)."""
    return _imports_names(res) or any(e.kind != "pickle.unregistered_extension" for e in res.events)


def _report(artifact: Artifact, res: PickleResult, nested: list[PickleResult]) -> Iterator[Observation]:
    for sub in [res, *nested]:
        for key, rec in sub.imports.items():
            # The attribute path with leading underscores dropped: `_os.system` walks through `os`.
            walk = ".".join(part.lstrip("_") for part in rec.name.split("."))
            extra: dict[str, AttrValue] = {}
            if artifact.context.get("container") == "torchscript" and rec.module.split(".")[0] == "__torch__":
                # torch.jit.load's C++ unpickler resolves __torch__ names to classes compiled from the
                # archive's own code/ folder, never to Python modules.
                extra["archive_type"] = True
            yield artifact.observe(
                "pickle.import",
                rec.offset,
                module=rec.module,
                name=rec.name,
                callable=key,
                raw=rec.raw,
                opcode=rec.opcode,
                count=rec.count,
                invoked=",".join(sorted(rec.invoked)),
                called=bool(rec.invoked),
                # Whether the class's __init__ (or the function) runs, not only __new__ and BUILD.
                runs_init=any(use in _RUNS_INIT or use.startswith("CALL ") for use in rec.invoked),
                # The name when loading only looks it up (a score function a scorer keeps): see
                # `referenced-callables` in the rule packs.
                referenced="" if rec.invoked else key,
                walk=walk,
                leaf=rec.name.rsplit(".", 1)[-1],
                **extra,
            )
        for event in sub.events:
            yield artifact.observe(event.kind, event.offset, **event.attrs)
        if sub.error is not None:
            kind = "pickle.truncated" if isinstance(sub.error, Truncated) else "pickle.malformed"
            yield artifact.observe(kind, sub.error.offset, reason=sub.error.reason)


def _long_string_at(head: bytes, arg_start: int) -> bool:
    """The opcode before `arg_start` carries a string (not a number, memo key or module name: those are short)."""
    if arg_start < 1 or arg_start > len(head):
        return False
    op = head[arg_start - 1 : arg_start]
    if op == b"S":  # STRING: a quoted Python literal
        return head[arg_start : arg_start + 1] in (b"'", b'"')
    if op == b"V":  # UNICODE: one line of raw-unicode-escape text
        return True
    # Binary string opcodes: their length field has NUL bytes unless it claims gigabytes, which plain text
    # ("The ..." reads as BINSTRING of 0x71206568 bytes) always does.
    return b"\x00" in head and op not in (b"c", b"i", b"I", b"F", b"L", b"p", b"g", b"P")


# -- legacy torch.save(..., _use_new_zipfile_serialization=False) ---------------------------------------


def _skip_legacy_storages(
    artifact: Artifact, stream: Stream, results: list[PickleResult]
) -> Iterator[Observation]:
    """After the five pickles come raw storages: int64 element count then bytes, in key order."""
    keys_value = results[4].result
    if not isinstance(keys_value, Seq) or keys_value.dropped:
        yield artifact.observe(
            "torch.legacy_malformed", results[4].start, reason="storage key list is not a list"
        )
        return
    sizes: dict[str, int] = {}
    for pid in results[3].persistent_ids:
        if isinstance(pid, Seq) and len(pid.items) >= 3:
            kind, storage_type, pid_key = pid.items[0], pid.items[1], pid.items[2]
            name = pid_key.value if isinstance(pid_key, Const) else None
            if isinstance(storage_type, Global) and isinstance(name, str):
                size = STORAGE_ELEMENT_SIZE.get(storage_type.name.rsplit(".", 1)[-1])
                if isinstance(kind, Const) and kind.value == "storage" and size:
                    sizes[name] = size
    for item in keys_value.items:
        key = item.value if isinstance(item, Const) else None
        if not isinstance(key, str) or key not in sizes:
            yield artifact.observe(
                "torch.legacy_malformed",
                stream.base + stream.offset,
                reason=f"storage {key!r} has no known type",
            )
            return
        at = stream.base + stream.offset
        try:
            (count,) = struct.unpack("<q", stream.read(8))
            if count < 0:
                raise PickleSyntaxError(at, "negative storage size")
            stream.skip(count * sizes[key])
        except PickleSyntaxError as exc:
            yield artifact.observe("torch.legacy_malformed", at, reason=f"storage {key}: {exc.reason}")
            return


# -- joblib: arrays are written raw into the pickle stream right after the wrapper's BUILD ----------


def _joblib_build(machine: Machine, obj: Obj, nested: list[PickleResult]) -> None:
    if not (
        isinstance(obj.func, Global) and obj.func.dotted in JOBLIB_WRAPPERS and isinstance(obj.state, Dict)
    ):
        return
    state = obj.state
    dtype = state.get("dtype")
    shape = state.get("shape")
    count = 1
    if isinstance(shape, Seq):
        for dim in shape.items:
            value = dim.value if isinstance(dim, Const) else None
            if not isinstance(value, int) or value < 0:
                raise PickleSyntaxError(
                    machine.stream.base + machine.stream.offset, "joblib array shape unknown"
                )
            count *= value
    else:
        raise PickleSyntaxError(machine.stream.base + machine.stream.offset, "joblib array shape unknown")
    info = _dtype_info(dtype)
    if info is None:
        raise PickleSyntaxError(machine.stream.base + machine.stream.offset, "joblib array dtype unknown")
    itemsize, has_object = info
    if has_object:
        # Object arrays are a nested pickle in the same stream, loaded with a fresh unpickler.
        nested.append(machine.run())
        return
    alignment = state.get("numpy_array_alignment_bytes")
    if isinstance(alignment, Const) and alignment.value is not None:
        padding = machine.stream.read(1)[0]
        machine.stream.skip(padding)
    machine.stream.skip(count * itemsize)


def _dtype_info(dtype: Sym | None) -> tuple[int, bool] | None:
    """(itemsize, holds Python objects) of a symbolic numpy.dtype(...) call."""
    if not (isinstance(dtype, Obj) and isinstance(dtype.func, Global) and dtype.func.name == "dtype"):
        return None
    if not (isinstance(dtype.args, Seq) and dtype.args.items and isinstance(dtype.args.items[0], Const)):
        return None
    code = dtype.args.items[0].value
    if not isinstance(code, str):
        return None
    match = _DTYPE_CODE.fullmatch(code)
    if match is None:
        return None
    kind, digits = match.group(1), match.group(2)
    elsize = None
    if isinstance(dtype.state, Seq) and len(dtype.state.items) >= 6:
        value = dtype.state.items[5]
        if isinstance(value, Const) and isinstance(value.value, int) and value.value > 0:
            elsize = value.value
    has_object = kind == "O" or _contains_object_dtype(dtype.state, 0)
    if elsize is None:
        if not digits:
            return (1, has_object) if kind in "?bB" else None
        elsize = int(digits) * (4 if kind == "U" else 1)
    return elsize, has_object


def _contains_object_dtype(value: Sym | None, depth: int) -> bool:
    if depth > 20 or value is None:
        return False
    if isinstance(value, Obj) and isinstance(value.func, Global) and value.func.name == "dtype":
        code = value.args.items[0] if isinstance(value.args, Seq) and value.args.items else None
        if (
            isinstance(code, Const)
            and isinstance(code.value, str)
            and code.value.lstrip("<>|=").startswith("O")
        ):
            return True
        return _contains_object_dtype(value.state, depth + 1)
    if isinstance(value, Seq):
        return any(_contains_object_dtype(v, depth + 1) for v in value.items)
    if isinstance(value, Dict):
        return any(_contains_object_dtype(v, depth + 1) for _, v in value.items)
    return False
