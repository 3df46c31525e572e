"""PyTorch 2 program archives (`torch.export.save`, AOTInductor packages): what their loaders read and run.

A PT2 archive is a zip with `<top>/archive_format` ("pt2"). `torch.export.load` reads:
- tensors from `data/weights/` and `data/constants/`, raw bytes when the model's `*_config.json` says
  `use_pickle: false`, torch.load or pickle.loads otherwise: raw ones are tensor data (sniffed strictly, like a
  PyTorch zip's storages), the rest are scanned as what they are;
- the graph from every `models/*` record (`<name>.json`): its operators run when the program runs
  (`aten.from_file` reads a file named in the graph, shared it writes back), and `guards_code` is pasted into
  Python source and exec'd by `.module()`;
- AOTInductor's `data/aotinductor/<model>/`: a compiled library it loads, or C++ source and compile flags it
  hands the system compiler (the flags go through a shell), then loads: native code either way.
A review (the 25th) ran a payload through each of these while wscan passed the file.
"""

from __future__ import annotations

import ast
import json
import posixpath
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from wscan.model import AttrValue
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem

LAYOUT = "pt2"
FORMAT_MEMBER = "archive_format"
CONFIG_SUFFIXES = ("_weights_config.json", "_constants_config.json")
MAX_CONFIG_BYTES = 16 << 20
# Graph operators that touch files: aten.from_file reads (and with shared=True maps writable) a file the graph names;
# aten.save writes one. The same two TorchScript has (WS-TS-002).
FILE_OPERATORS = ("from_file", "save", "_save")
# AOTInductor members the loader compiles, links or loads.
NATIVE_SUFFIXES = (".so", ".dll", ".dylib", ".pyd", ".o", ".obj", ".cpp", ".cc", ".c", ".h", ".cu", ".ld",
                   "_compile_flags.json", "_linker_flags.json", "CMakeLists.txt")  # fmt: skip
LIBRARY_SUFFIXES = (".so", ".dll", ".dylib", ".pyd")
# What guard code may name: the inputs (`L['x']`), and the globals torch execs it with (SYMPY_INTERP, math, inf).
GUARD_NAMES = frozenset({"L", "math", "inf", "torch", "IsNonOverlappingAndDenseIndicator",
                         "cast_symbool_to_symint_guardless"})  # fmt: skip
# What it may read of an input, and of torch: shapes and layout; dtypes, devices and the sym_* helpers.
TENSOR_ATTRIBUTES = frozenset({"size", "stride", "storage_offset", "dim", "numel", "shape", "dtype", "device", "ndim",
                               "is_contiguous", "layout", "requires_grad", "is_sparse"})  # fmt: skip
TORCH_ATTRIBUTES = frozenset({"float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8",
                              "bool", "complex64", "complex128", "float", "half", "double", "long", "int", "device",
                              "strided", "contiguous_format", "channels_last"})  # fmt: skip
MAX_SHOWN = 200
RECORDS = ("archive_format", "archive_version", "byteorder")  # small text records beside .data/


def pt2_top(names: Iterable[str]) -> str | None:
    """The top folder of a PT2 archive, or None when the names are not one. torch's zip reader finds a record
    whatever its case, `ARCHIVE_FORMAT` too (red team, 2026-12-03)."""
    for name in names:
        top, _, leaf = name.rpartition("/")
        if leaf.lower() == FORMAT_MEMBER and top and "/" not in top:
            return top
    return None


def raw_tensor_members(top: str, names: Iterable[str], read: Callable[[str], bytes | None]) -> set[str]:
    """The members torch.export.load reads as raw tensor bytes: listed with `use_pickle: false` in a config and
    never with `true` (a member both ways is unpickled by one of the reads). torch looks members up whatever their
    case: `WEIGHT_0` with `use_pickle: true` unpickles `weight_0` (red team), so names are compared folded."""
    members = list(names)
    raw: set[str] = set()
    pickled: set[str] = set()
    folders = (f"{top}/data/weights".lower(), f"{top}/data/constants".lower())
    for name in members:
        folder = posixpath.dirname(name)
        if folder.lower() not in folders or not name.lower().endswith(CONFIG_SUFFIXES):
            continue
        data = read(name)
        try:
            config = json.loads(data) if data is not None else None
        except (ValueError, RecursionError):
            continue
        entries = config.get("config") if isinstance(config, dict) else None
        for entry in entries.values() if isinstance(entries, dict) else ():
            if isinstance(entry, dict) and isinstance(entry.get("path_name"), str):
                target = f"{folder}/{entry['path_name']}".lower()
                (raw if entry.get("use_pickle") is False else pickled).add(target)
    only_raw = raw - pickled
    return {name for name in members if name.lower() in only_raw}


def native_members(top: str, names: Iterable[str]) -> list[str]:
    """AOTInductor members the loader compiles or loads, in archive order."""
    prefix = f"{top}/data/aotinductor/".lower()
    return [name for name in names if name.lower().startswith(prefix) and name.endswith(NATIVE_SUFFIXES)]


def native_observation(members: list[str]) -> dict[str, AttrValue]:
    libraries = [name for name in members if name.endswith(LIBRARY_SUFFIXES)]
    how = "loads the compiled library" if libraries else "compiles the C++ source with these flags and loads it"
    return {"member": (libraries or members)[0][:MAX_SHOWN], "members": len(members), "how": how}


class Pt2GraphScanner:
    """`models/<name>.json` of a PT2 archive: graph operators that touch files, and guard code that is exec'd."""

    name = "pt2-graph"

    def accepts(self, head: Head) -> bool:
        # torch.export.load reads every record under models/ as a graph, whatever its name ends with: it cuts the
        # last five characters off as ".json" (red team: `models/modelXjson`).
        parts = head.name.split("/")
        return head.container == LAYOUT and len(parts) > 2 and parts[1].lower() == "models"

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        if artifact.size > ctx.limits.max_json_bytes:
            yield artifact.observe("pt2.graph_unreadable", reason=f"{artifact.size} bytes, over max-json-bytes")
            return
        with artifact.opener() as raw:
            data = raw.read(artifact.size)
        try:
            program = json.loads(data)
        except (ValueError, RecursionError) as exc:
            yield artifact.observe("pt2.graph_unreadable", reason=f"{type(exc).__name__}: {exc}"[:MAX_SHOWN])
            return
        if not isinstance(program, dict):
            yield artifact.observe("pt2.graph_unreadable", reason="not a JSON object")
            return
        for target in sorted(set(_targets(program))):
            operator = target.split(".")[-2] if target.count(".") >= 1 else target
            if target.startswith("torch.ops.") and operator in FILE_OPERATORS:
                yield artifact.observe("pt2.file_operator", operator=target[:MAX_SHOWN])
        guards = program.get("guards_code")
        for guard in guards if isinstance(guards, list) else [guards] if guards else []:
            reason = guard_problem(guard)
            if reason is not None:
                yield artifact.observe("pt2.guard_code", guard=str(guard)[:MAX_SHOWN], reason=reason)
                break


def _targets(program: dict[str, Any]) -> Iterator[str]:
    """Every node target of the program's graph and of its subgraphs (any `nodes` list, walked without
    recursion)."""
    stack: list[Any] = [program]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            target = value.get("target")
            if isinstance(target, str) and "nodes" not in value:
                yield target
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def guard_problem(guard: object) -> str | None:
    """Why a guard is not what torch writes (one expression over the inputs, `L[...]`), or None. `.module()` pastes
    it into a function's source and execs it: a newline or a comment in it ends the expression early."""
    if not isinstance(guard, str):
        return "not a string"
    if any(char in guard for char in "\n\r#;\\"):
        return "line break, comment or statement separator"
    try:
        tree = ast.parse(guard, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "not one Python expression"
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in GUARD_NAMES:
            return f"reads {node.id}"
        if isinstance(node, ast.Attribute) and not _guard_attribute(node):
            return f"reaches {node.attr[:MAX_SHOWN]}"
        if isinstance(node, ast.Lambda | ast.NamedExpr | ast.comprehension | ast.Starred):
            return "defines code"
    return None


def _guard_attribute(node: ast.Attribute) -> bool:
    """`math.floor`, `torch.sym_max`, `torch.float32`, `L['x'].size`: what guards read; never a module's module."""
    base = node.value
    if isinstance(base, ast.Name) and base.id == "math":
        return not node.attr.startswith("_")
    if isinstance(base, ast.Name) and base.id == "torch":
        return node.attr.startswith("sym_") or node.attr in TORCH_ATTRIBUTES
    return node.attr in TENSOR_ATTRIBUTES
