"""Pickle semantics differential: streams CPython's unpicklers run, proved with a marker, must be critical.

Each case is hand-written opcode bytes whose payload creates a marker folder (os.mkdir, harmless). Both of
CPython's unpicklers load it in a fresh, isolated interpreter: the C one (`pickle.load`) and the pure-Python one
(`pickle._Unpickler`, which joblib subclasses). Where the marker appears, wscan must report a critical pickle
finding. The cases come from a review of how CPython reads arguments and resolves names; before the fixes, wscan
took the first five for text (no finding at all) and the rest for high only.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import struct
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.scanning import scan, scan_bytes
from wscan.limits import Limits
from wscan.model import Severity
from wscan.scanners.pickle_ops import Stream
from wscan.scanners.pickle_vm import Machine

LOADERS = {
    "c": "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))",
    "python": "import pickle, sys; pickle._Unpickler(open(sys.argv[1], 'rb')).load()",
}


def _call(marker: Path) -> bytes:
    """posix.mkdir(marker) in protocol 0, its result popped."""
    return b"cposix\nmkdir\n(S'" + str(marker).encode() + b"'\ntR0"


def _stack_global(module: str, name: str, arg: str) -> bytes:
    def text(value: str) -> bytes:
        return b"\x8c" + bytes([len(value)]) + value.encode()

    return b"\x80\x04" + text(module) + text(name) + b"\x93" + text(arg) + b"\x85R."


def _joblib_array_of(payload: bytes) -> bytes:
    """A joblib.dump layout (a NumpyArrayWrapper built by NEWOBJ, its state, then the array's raw bytes): joblib.load
    reads `payload` as a uint8 array, a plain unpickler as opcodes."""
    return (
        b"\x80\x02cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81}(U\x05shapeK" + bytes([len(payload)]) + b"\x85"
        b"U\x05orderU\x01CU\x05dtypecnumpy\ndtype\nU\x02u1\x89\x88\x87RU\nallow_mmap\x89ub" + payload + b"."
    )


CASES: dict[str, Callable[[Path], bytes]] = {
    # CPython reads INT with strtol(..., 0) or int(..., 0), LONG with int(..., 0): hex, octal, underscores.
    "int-hex": lambda m: b"I0x1\n0" + _call(m) + b".",
    "int-c-octal": lambda m: b"I010\n0" + _call(m) + b".",  # the C unpickler only
    "long-hex": lambda m: b"L0x1L\n0" + _call(m) + b".",
    # Whitespace before a number is skipped, however long (5,000 spaces; 70,000 fill the whole 64 KiB head).
    "int-5k-spaces": lambda m: b"I" + b" " * 5000 + b"1\n0" + _call(m) + b".",
    "int-70k-spaces": lambda m: b"I" + b" " * 70000 + b"1\n0" + _call(m) + b".",
    # The C unpickler reads a number's line as a C string: a NUL ends it, whatever follows (review 27: the first
    # opcode of a pickle, or of torch's protocol-version pickle, so written passed as unknown or trailing data).
    "float-nul": lambda m: b"F1.0\x00x\n0" + _call(m) + b".",
    "int-nul": lambda m: b"I1\x00x\n0" + _call(m) + b".",
    "int-leading-nul": lambda m: b"I\x00not a number\n0" + _call(m) + b".",  # strtol converts nothing: 0
    "long-nul": lambda m: b"L1\x00xL\n0" + _call(m) + b".",
    "put-get-nul": lambda m: b"I1\np0\x00x\n0g0\x00y\n0" + _call(m) + b".",
    "int-70k-nul": lambda m: b"I" + b" " * 70000 + b"1\x00" + b"x" * 70000 + b"\n0" + _call(m) + b".",
    "proto-then-float-nul": lambda m: b"\x80\x02F1.0\x00x\n0" + _call(m) + b".",
    # CPython's unpicklers stop at a PROTO above 5: what ran before it ran
    "call-then-proto-17": lambda m: _call(m) + b"\x80\x11" + _call(m) + b".",
    # Padding after the number that runs past the 64 KiB head (review 15: the sniff read these as text, no finding):
    # trailing whitespace, which int() and float() strip, or a NUL and any bytes, which the C unpickler never reads.
    "int-70k-trailing-spaces": lambda m: b"I1" + b" " * 70000 + b"\n0" + _call(m) + b".",
    "long-70k-trailing-tabs": lambda m: b"L1" + b"\t" * 70000 + b"\n0" + _call(m) + b".",
    "put-70k-trailing-spaces": lambda m: b"Np0" + b" " * 70000 + b"\n0" + _call(m) + b".",
    "float-nan-70k-spaces": lambda m: b"Fnan" + b" " * 70000 + b"\n0" + _call(m) + b".",  # the pure-Python one only
    "float-nul-70k-junk": lambda m: b"F1.0\x00" + b"A" * 70000 + b"\n0" + _call(m) + b".",
    "int-nul-70k-binary": lambda m: b"I0\x00" + bytes(range(11, 256)) * 300 + b"\n0" + _call(m) + b".",
    # A binary string whose length field has no NUL byte (16.8 MB) fills the head with text.
    "nul-free-string-length": lambda m: b"X\x01\x01\x01\x01" + b"a" * 0x01010101 + b"0" + _call(m) + b".",
    # Lines have no length limit in CPython.
    "unicode-line-300k": lambda m: b"\x80\x02V" + b"a" * 300000 + b"\n0" + _call(m) + b".",
    "string-line-300k": lambda m: b"\x80\x02S'" + b"a" * 300000 + b"'\n0" + _call(m) + b".",
    # A dangerous module in the middle of a dotted name: uuid.platform.os.mkdir is os.mkdir.
    "walk-through-middle-module": lambda m: _stack_global("uuid", "platform.os.mkdir", str(m)),
    # Private helpers of standard modules that run a command (os.system, subprocess).
    "osx-support-read-output": lambda m: _stack_global("_osx_support", "_read_output", f"mkdir {m}"),
    "uuid-get-command-stdout": lambda m: (
        b"\x80\x04\x8c\x04uuid\x8c\x13_get_command_stdout\x93\x8c\x05mkdir"
        + b"\x8c"
        + bytes([len(str(m))])
        + str(m).encode()
        + b"\x86R."
    ),
    # numpy.memmap passes as the subclass numpy's _reconstruct restores (a pickled memmap array); called, it makes
    # the file it is given (the marker).
    "numpy-memmap-called": lambda m: b"cnumpy\nmemmap\n(S'" + str(m).encode() + b"'\nS'uint8'\nS'w+'\nI0\n(I1\nttR.",
    # A joblib array's bytes, which joblib.load reads raw, are opcodes to pickle.load (and pandas.read_pickle): the
    # pickle oracle (fuzz/pickle_oracle.py) found names resolved there; wscan read only joblib's way (no finding).
    "joblib-array-read-as-opcodes": lambda m: _joblib_array_of(_call(m)),
    # An object array's nested pickle: joblib runs it with a memo of its own (MEMOIZE fills 0 and 1: builtins.str), a
    # plain unpickler with the outer stream's, whose 0 and 1 the stream set to posix and mkdir.
    "joblib-object-array-outer-memo": lambda m: (
        b"\x80\x02Vposix\nq\x000Vmkdir\nq\x010cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81}(U\x05shapeK\x01\x85"
        b"U\x05orderU\x01CU\x05dtypecnumpy\ndtype\nU\x02O8\x89\x88\x87RU\nallow_mmap\x89ub"
        b"\x80\x04Vbuiltins\n\x94Vstr\n\x94h\x00h\x01\x93(S'" + str(m).encode() + b"'\ntR.."
    ),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, bool]]]:
    """Each case written once and loaded by both unpicklers, each load with its own marker."""
    root = tmp_path_factory.mktemp("semantics")
    out: dict[str, tuple[Path, dict[str, bool]]] = {}
    for name, make in CASES.items():
        ran: dict[str, bool] = {}
        for loader, code in LOADERS.items():
            marker = root / f"marker-{name}-{loader}"
            path = root / f"{name}-{loader}.pkl"
            path.write_bytes(make(marker))
            subprocess.run([sys.executable, "-I", "-c", code, str(path)], cwd=root, capture_output=True, timeout=120)
            ran[loader] = marker.exists()
        out[name] = (path, ran)
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_what_cpython_runs_is_critical(files: dict[str, tuple[Path, dict[str, bool]]], case: str) -> None:
    path, ran = files[case]
    assert any(ran.values()), f"{case}: CPython did not run it ({ran}): the case proves nothing"
    critical = {f.rule_id for f in scan(path).findings if f.severity >= Severity.CRITICAL}
    assert critical, f"bypass: CPython runs {case}, wscan has no critical finding"


def test_a_protocol_above_5_is_no_act_of_its_own_but_what_follows_it_is_read(tmp_path: Path) -> None:
    """CPython's unpicklers refuse PROTO 17 where they meet it: bytes that only hold data before it, and no opcode
    after it, make no pickle (a CatBoost model, review 74). torch's weights-only reader, torch.load's default, reads
    on past it (review 75: a legacy checkpoint behind `K 01 80 11` loaded), so a call after it is judged."""
    path = tmp_path / "model.bin"
    path.write_bytes(b"C\x02ab\x80\x11\x00\x00" + bytes(range(256)) * 4)
    report = scan(path)
    assert [(f.status, f.formats) for f in report.files] == [("skipped", ())]
    assert not [f for f in report.findings if f.severity >= Severity.MEDIUM]
    path.write_bytes(b"C\x02ab\x80\x11" + _call(tmp_path / "marker") + b".")
    assert {f.rule_id for f in scan(path).findings if f.severity >= Severity.CRITICAL} == {"WS-PKL-001"}
    import torch

    legacy = io.BytesIO()
    torch.save({"w": torch.zeros(2)}, legacy, _use_new_zipfile_serialization=False)
    path.write_bytes(b"K\x01\x80\x11" + legacy.getvalue())
    assert torch.load(path, weights_only=True)["w"].shape == (2,)
    assert "WS-PKL-010" in {f.rule_id for f in scan(path).findings if f.severity >= Severity.HIGH}


def test_memmap_is_judged_as_a_gadget_but_where_numpy_restores_an_array_of_it(tmp_path: Path) -> None:
    """numpy.memmap opens or creates the file it is given when called; a pickled memmap array only names it as the
    subclass _reconstruct makes with ndarray.__new__ (fp hunt, 2026-12-03). Kept as a value, something may call it."""
    import numpy as np

    np.save(tmp_path / "a.npy", np.arange(3.0))
    path = tmp_path / "mapped.pkl"
    path.write_bytes(pickle.dumps(np.load(tmp_path / "a.npy", mmap_mode="r"), protocol=2))
    assert not [f for f in scan(path).findings if f.severity >= Severity.HIGH]
    path.write_bytes(b"\x80\x02]cnumpy\nmemmap\na.")  # [numpy.memmap]
    assert {f.rule_id for f in scan(path).findings if f.severity >= Severity.CRITICAL} == {"WS-PKL-001"}
    path.write_bytes(b"\x80\x02]cnumpy._core.memmap\nmemmap\na.")  # where it is defined (review 9)
    assert {f.rule_id for f in scan(path).findings if f.severity >= Severity.CRITICAL} == {"WS-PKL-001"}
    # joblib's array wrapper records it as `subclass` (joblib.dump of a memory-mapped array), which joblib only
    # compares; a plain unpickler leaves the wrapper an object the array's bytes can fetch it back from, which that
    # reading judges (review 12, below). That state dict used any other way, or on another class, keeps it.
    import joblib

    mapped = np.memmap(tmp_path / "a.dat", dtype="float32", mode="w+", shape=(4,))
    joblib.dump(mapped, tmp_path / "dumped.joblib")
    dumped = (tmp_path / "dumped.joblib").read_bytes()
    assert dumped.endswith(b".")
    names = []  # the opcodes up to the wrapper's state (the array's bytes follow its BUILD)
    for op, _, _ in pickletools.genops(dumped):
        names.append(op.name)
        if names[-2:] == ["EMPTY_DICT", "MEMOIZE"]:
            break
    get = b"h" + bytes([names.count("MEMOIZE") - 1])  # BINGET of the state dict
    cases = {
        "wrapper": (dumped, set()),
        "state-reused": (dumped[:-1] + b"0ccollections\nOrderedDict\n" + get + b"\x85R.", {"WS-PKL-001"}),
        "set-after": (dumped[:-1] + b"0" + get + b"X\x01\x00\x00\x00xcnumpy\nmemmap\ns.",
                      {"WS-PKL-001", "WS-PKL-018"}),  # an item set on the state after its BUILD (helper 233)
        "other-class": (b"\x80\x02cargparse\nNamespace\n)\x81}X\x08\x00\x00\x00subclasscnumpy\nmemmap\nsb.",
                        {"WS-PKL-001"}),
    }
    for case, (data, expected) in cases.items():
        path.write_bytes(data)
        joblib.load(path)  # well formed, as joblib reads it
        found = {f.rule_id for f in scan(path).findings if f.severity >= Severity.HIGH}
        assert found == expected, (case, found)


def test_a_joblib_wrappers_array_class_fetched_back_by_a_plain_unpickler_is_critical(tmp_path: Path) -> None:
    """Review 12: with the wrapper's `subclass` not kept (to pass joblib.dump of a memmap), the array's bytes, which a
    plain unpickler runs as opcodes, fetched it back with getattr(<wrapper>, "subclass") and called it: pickle.load
    made the file, joblib.load read an array, and wscan passed. The plain reading now reports getattr used for more
    than a lookup (WS-PKL-001) and the call of what it fetched (WS-PKL-005), which joblib's reading never made."""
    import joblib
    import numpy as np

    marker = tmp_path / "made-by-memmap"
    payload = (b"0cbuiltins\ngetattr\nh\x01" + _binstring("subclass") + b"\x86R(" + _binstring(str(marker))
               + _binstring("uint8") + _binstring("w+") + b"K\x00K\x01\x85tR.")  # fmt: skip
    dtype = (b"cnumpy\ndtype\n" + _binstring("u1")
             + b"\x89\x88\x87R(K\x03X\x01\x00\x00\x00|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb")  # fmt: skip
    data = (b"\x80\x04]\x94cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81\x94}(" + _binstring("subclass")
            + b"cnumpy\nmemmap\n" + _binstring("shape") + b"J" + struct.pack("<i", len(payload)) + b"\x85"
            + _binstring("order") + _binstring("C") + _binstring("dtype") + dtype + _binstring("allow_mmap")
            + b"\x88" + _binstring("numpy_array_alignment_bytes") + b"Nub" + payload
            + b"acbuiltins\ngetattr\ncbuiltins\nstr\n" + _binstring("lower") + b"\x86Ra.")  # fmt: skip
    path = tmp_path / "model.joblib"
    path.write_bytes(data)
    assert isinstance(joblib.load(path)[0], np.ndarray) and not marker.exists()  # joblib reads an array
    load = "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))"
    subprocess.run([sys.executable, "-I", "-c", load, str(path)], capture_output=True, timeout=120)
    assert marker.exists(), "pickle.load no longer runs the array's bytes: the case proves nothing"
    found = {f.rule_id for f in scan(path).findings if f.severity >= Severity.CRITICAL}
    assert {"WS-PKL-001", "WS-PKL-005"} <= found, found


def _object_dtype() -> bytes:
    return (b"cnumpy\ndtype\n" + _binunicode("O8") + b"\x89\x88\x87R(K\x03" + _binunicode("|")
            + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x3ftb")  # fmt: skip


def _binunicode(text: str) -> bytes:
    return b"X" + struct.pack("<I", len(text.encode())) + text.encode()


def test_a_wrappers_class_fetched_back_through_a_nested_pickles_memo_is_critical(tmp_path: Path) -> None:
    """The same class fetched inside an object array's nested pickle, which joblib reads with a memo of its own and a
    plain unpickler with the outer stream's: MEMOIZE fills different slots, so one BINGET is `str` and "lower" to
    joblib (an allowed lookup) and the wrapper and "subclass" to pickle.load, and the next call is NumPy's
    _reconstruct to one and numpy.memmap to the other. No array bytes are read as opcodes; only the plain reading's
    getattr, used for more than a lookup, tells."""
    import joblib
    import numpy as np

    marker = tmp_path / "made-by-memmap"
    u = _binunicode
    outer = (b"\x80\x04(" + u(str(marker)) + u("uint8") + u("w+") + b"K\x00K\x01\x85t\x940"  # memo 0: arguments
             + b"cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81\x94}(" + u("subclass") + b"\x94"  # 1: it, 2: name
             + b"cnumpy\nmemmap\n" + u("shape") + b"K\x01\x85" + u("order") + u("C") + u("dtype") + _object_dtype()
             + u("allow_mmap") + b"\x89" + u("numpy_array_alignment_bytes") + b"Nub")
    # The nested pickle's slots as joblib fills them | as a plain unpickler does.
    nested = (b"\x80\x02cnumpy\nndarray\nK\x00\x85C\x01b\x87\x940"  # 0: _reconstruct's arguments | 3
              + b"cbuiltins\nstr\n\x940" + u("lower") + b"\x940"  # 1: str, 2: "lower" | 4, 5
              + b"cnumpy.core.multiarray\n_reconstruct\n\x940"  # 3: _reconstruct | 6
              + b"cbuiltins\ngetattr\nh\x01h\x02\x86R\x940"  # 4: str.lower | 7: numpy.memmap
              + b"h\x03\x940" * 3  # 5 to 7: _reconstruct | 8 to 10
              + b"h\x07h\x00R"  # _reconstruct(ndarray, (0,), b"b") | memmap(marker, "uint8", "w+", 0, (1,))
              + b"(K\x01K\x01\x85" + _object_dtype() + b"\x89]" + u("a") + b"atb.")
    path = tmp_path / "model.joblib"
    path.write_bytes(outer + nested + b".")
    loaded = joblib.load(path)
    assert type(loaded) is np.ndarray and loaded.tolist() == ["a"] and not marker.exists()
    _run("import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))", path)
    assert marker.exists(), "pickle.load no longer calls memmap: the case proves nothing"
    found = {f.rule_id for f in scan(path).findings if f.severity >= Severity.CRITICAL}
    assert "WS-PKL-001" in found, found


def test_a_name_made_from_the_outer_memo_in_a_nested_pickle_is_judged_as_any_import(tmp_path: Path) -> None:
    """Helper 244: joblib reads builtins.str("ok") in an object array's nested pickle; pickle.load, with the outer
    memo, calls a name made of two strings the outer stream kept as data, with its arguments. Such names were judged by
    the critical rules alone (real nested pickles make `_mgr.dtype` so), and an exec gadget off that list passed. Only
    a name ending as one joblib's reading also wrote (`dtype` there) keeps that treatment now; dataclasses._create_fn,
    which execs the `def` it is given, is WS-PKL-003."""
    import joblib

    marker = tmp_path / "made-by-create-fn"
    u = _binunicode
    arguments = b"(" + u("f") + b"]" + u(f"a=__import__('os').mkdir({str(marker)!r})") + b"a]" + u("pass") + b"at"
    outer = (b"\x80\x04" + u("dataclasses") + b"\x94" + u("_create_fn") + b"\x94" + arguments + b"\x94000"
             + b"cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81}(" + u("subclass") + b"cnumpy\nndarray\n"
             + u("shape") + b"K\x01\x85" + u("order") + u("C") + u("dtype") + _object_dtype()
             + u("allow_mmap") + b"\x89" + u("numpy_array_alignment_bytes") + b"Nub")  # fmt: skip
    nested = (b"\x80\x04" + u("builtins") + b"\x94" + u("str") + b"\x94(" + u("ok") + b"t\x94000"
              + b"h\x00h\x01\x93h\x02R0"  # joblib: str("ok") | pickle.load: dataclasses._create_fn("f", [...], [...])
              + b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R"
              + b"(K\x01K\x01\x85" + _object_dtype() + b"\x89]" + u("a") + b"atb.")  # fmt: skip
    path = tmp_path / "model.joblib"
    path.write_bytes(outer + nested + b".")
    assert joblib.load(path).tolist() == ["a"] and not marker.exists()
    _run("import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))", path)
    assert marker.exists(), "pickle.load no longer runs the def: the case proves nothing"
    found = {(f.rule_id, f.severity) for f in scan(path).findings}
    assert ("WS-PKL-003", Severity.HIGH) in found, found


def test_a_name_elsewhere_in_the_file_does_not_make_a_nested_name_look_like_noise(tmp_path: Path) -> None:
    """Helper 246 got past a first fix, which let a nested name through when its last part was any name joblib's
    reading imported: an unused `numpy.copy` in the outer stream made `pipes.Template.copy` pass. A name passes as
    noise only when joblib's reading made the very same name with the same opcode."""
    u = _binunicode
    outer = (b"\x80\x04" + u("zipapp") + b"\x94" + u("Template.copy") + b"\x9400" + b"]cnumpy\ncopy\na0"
             + b"cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81}(" + u("subclass") + b"cnumpy\nndarray\n"
             + u("shape") + b"K\x01\x85" + u("order") + u("C") + u("dtype") + _object_dtype()
             + u("allow_mmap") + b"\x89" + u("numpy_array_alignment_bytes") + b"Nub")  # fmt: skip
    nested = (b"\x80\x04" + u("builtins") + b"\x94" + u("tuple") + b"\x94" + b"h\x00h\x01\x93)R0"
              + b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R"
              + b"(K\x01K\x01\x85" + _object_dtype() + b"\x89]" + u("a") + b"atb.")  # fmt: skip
    found = {(f.rule_id, f.message.split(",")[0]) for f in scan_bytes(tmp_path, outer + nested + b".",
                                                                     "model.joblib").findings}
    assert ("WS-PKL-003", "Loading imports zipapp.Template.copy") in found, found


def test_a_state_given_from_the_outer_memo_in_a_nested_pickle_is_judged(tmp_path: Path) -> None:
    """Review 16: `h0 h1 BUILD` in an object array's nested pickle fills an argparse.Namespace the nested pickle made
    with an empty dict to joblib, and to pickle.load, which goes on with the outer memo, gives a SciPy distribution
    the outer stream made (and never used) a dict whose `_parse_arg_template` its __setstate__ execs. The plain
    reading's observations inside nested pickles were all dropped: no finding."""
    import joblib

    marker = tmp_path / "made-by-exec"
    u = _binunicode
    code = f"open({str(marker)!r}, 'w')\ndef _parse_args(self, loc=0, scale=1):\n    return (), loc, scale\n"
    outer = (b"\x80\x04cscipy.stats._continuous_distns\nnorm_gen\n)\x81\x940"  # memo 0: a distribution, no state
             + b"}\x94(" + u("_parse_arg_template") + u(code) + u("numargs") + b"K\x00u0"  # memo 1: unused
             + b"cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81}(" + u("subclass") + b"cnumpy\nndarray\n"
             + u("shape") + b"K\x01\x85" + u("order") + u("C") + u("dtype") + _object_dtype()
             + u("allow_mmap") + b"\x89" + u("numpy_array_alignment_bytes") + b"Nub")
    nested = (b"\x80\x02cargparse\nNamespace\n)\x81\x940}\x940"  # slots 0 and 1 to joblib, 2 and 3 to pickle.load
              + b"h\x00h\x01b0"  # BUILD slot 0 with slot 1
              + b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R"
              + b"(K\x01K\x01\x85" + _object_dtype() + b"\x89]" + u("a") + b"atb.")
    path = tmp_path / "model.joblib"
    path.write_bytes(outer + nested + b".")
    assert joblib.load(path).tolist() == ["a"] and not marker.exists()
    _run("import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))", path)
    assert marker.exists(), "pickle.load no longer runs the template: the case proves nothing"
    found = {f.rule_id for f in scan(path).findings if f.severity >= Severity.CRITICAL}
    assert "WS-PKL-032" in found, found


def test_a_class_patched_through_an_identity_function_is_tampering(tmp_path: Path) -> None:
    """torch.jit._pickle.build_intlist (allowlisted) returns its argument: BUILD on its result patches the class
    itself, as BUILD on the class does."""
    data = (
        b"\x80\x02ctorch.jit._pickle\nbuild_intlist\ncpathlib\nPurePath\n\x85R"
        b"N}X\x08\x00\x00\x00__repr__cnumpy\nnegative\ns\x86b."
    )
    path = tmp_path / "patch.pkl"
    path.write_bytes(data)
    check = "import pickle, pathlib, sys; pickle.load(open(sys.argv[1], 'rb')); print(pathlib.PurePath.__repr__)"
    done = subprocess.run([sys.executable, "-I", "-c", check, str(path)], capture_output=True, text=True, timeout=120)
    assert "negative" in done.stdout, done.stderr
    assert "WS-PKL-006" in {f.rule_id for f in scan(path).findings if f.severity >= Severity.CRITICAL}


@pytest.mark.parametrize(
    "text",
    [
        b"The quick brown fox jumps over the lazy dog. " * 3000,  # 'T': a BINSTRING claiming 1.9 GB
        b"I am a note, not a number. " * 3000,  # 'I': an INT whose line is not a number
        b"Version 1.0\n" + b"x" * 70000,  # 'V': one unicode line, then 'x' is no opcode
        b"pandas notes\n" * 6000,
    ],
    ids=["binstring", "int", "unicode-then-junk", "put"],
)
def test_text_is_still_text(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(text)
    assert not [f for f in scan(path).findings if f.severity >= Severity.HIGH]


def test_binary_length_is_judged_against_the_file_size() -> None:
    from wscan.scanners.pickle import probe

    head = b"X\x01\x01\x01\x01" + b"a" * (64 * 1024 - 5)
    assert probe(head, strict=False, size=0x01010101 + 100)
    assert not probe(head, strict=False, size=1_000_000)  # claims more than the file holds
    assert struct.unpack("<I", head[1:5])[0] == 0x01010101


_LINE_PIECES = st.sampled_from([b"0", b"1", b"7", b"-", b"+", b" ", b"\x00", b"x", b".", b"e", b"_", b"0x", b"L",
                                b"\t", b"inf", b"nan", b"9" * 30])


@settings(max_examples=400, deadline=None)
@given(opcode=st.sampled_from([b"I", b"L", b"F", b"p", b"g"]), pieces=st.lists(_LINE_PIECES, max_size=6))
def test_a_number_line_the_c_unpickler_takes_is_read_past(opcode: bytes, pieces: list[bytes]) -> None:
    """Wherever CPython's C unpickler reads a number line and goes on, wscan's machine goes on too."""
    line = b"".join(pieces)
    prefix = b"I5\np0\n0" if opcode == b"g" else b""  # GET needs a memo entry to read
    data = prefix + opcode + line + b"\n" + (b"0" if opcode != b"p" else b"") + b"N."
    try:
        pickle.loads(data)
    except Exception:  # any refusal means CPython stops here too
        return
    res = Machine(Stream(io.BytesIO(data), limit=len(data)), Limits()).run()
    assert res.error is None and res.stopped, (data, res.error)


_PADDING = st.sampled_from([b" ", b"\t", b"\x00", b"\x00A", b" \x00\xff", b"\r\x0b"])


@settings(max_examples=150, deadline=None)
@given(opcode=st.sampled_from([b"I", b"L", b"F", b"p", b"g"]), pieces=st.lists(_LINE_PIECES, max_size=6),
       pad=_PADDING)
def test_a_number_line_padded_past_the_head_is_a_pickle(opcode: bytes, pieces: list[bytes], pad: bytes) -> None:
    """Wherever either of CPython's unpicklers reads a number line longer than the sniffed head and goes on, the sniff
    calls the file a pickle (review 15 padded a number with spaces, a NUL and junk, or after nan, past the head)."""
    from wscan.scanners.base import HEAD_BYTES
    from wscan.scanners.pickle import probe

    line = b"".join(pieces) + pad * (HEAD_BYTES // len(pad) + 1)
    prefix = b"I5\np0\n0" if opcode == b"g" else b""
    data = prefix + opcode + line + b"\n" + (b"0" if opcode != b"p" else b"") + b"N."
    for load in (pickle.loads, pickle._loads):  # type: ignore[attr-defined]
        try:
            load(data)
            break
        except Exception:  # any refusal means that unpickler stops here
            continue
    else:
        return
    assert probe(data[:HEAD_BYTES], strict=False, size=len(data)), data[:40]


LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19."


def _stop_in_a_frame_of_array_bytes(marker: Path) -> bytes:
    """Helper 248: a legacy torch file whose fourth pickle holds a joblib wrapper, whose 12 "array bytes" are PROTO,
    FRAME of 70,000 and STOP. wscan's main reading skips them as data; a plain unpickler ends the pickle at that
    STOP, and the next pickle.load (torch's storage keys) starts at the frame's end, past 64 KiB, where the payload
    is. wscan's plain reading went on after the STOP."""
    def body(value: object) -> bytes:
        return pickle.dumps(value, protocol=2)[2:-1]

    frame = 70_000
    array = b"\x80\x04\x95" + struct.pack("<Q", frame) + b"."
    import numpy as np

    state = {"subclass": np.ndarray, "shape": (len(array),), "order": "C", "allow_mmap": False}
    head = (LEGACY_MAGIC + pickle.dumps(1001, protocol=2)
            + pickle.dumps({"protocol_version": 1001, "little_endian": True}, protocol=2))  # fmt: skip
    fourth = (b"\x80\x02cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81" + body(state)[:-1]
              + _binunicode("dtype") + b"cnumpy\ndtype\n" + _binunicode("u1") + b"\x89\x88\x87Rub" + array)  # fmt: skip
    frame_end = len(head) + len(fourth) - 1 + frame  # the frame starts at its STOP
    payload = b"\x80\x02" + _call(marker) + b"N."
    pad = frame_end - (len(head) + len(fourth) + 1 + 5)
    blob = b"\x00" * pad + payload
    return head + fourth + b"0B" + struct.pack("<I", len(blob)) + blob + b"0N." + pickle.dumps([], protocol=2)


LEGACY_CASES: dict[str, tuple[Callable[[Path], bytes], Severity]] = {
    # torch.load's legacy reader unpickles the protocol-version pickle after the magic number whatever it holds.
    # Lines CPython reads but wscan's machine did not (over 128 KiB): the rest of the file was trailing data (low).
    "float-300k-digits": (lambda m: LEGACY_MAGIC + b"F0." + b"0" * 300000 + b"1\n0" + _call(m) + b".",
                          Severity.CRITICAL),
    "int-300k-octal": (lambda m: LEGACY_MAGIC + b"I0o" + b"7" * 300000 + b"\n0" + _call(m) + b".", Severity.CRITICAL),
    # Protocol 4 walks a dotted name of any length; wscan reads names up to 64 KiB and fails the file past that.
    "name-160k": (lambda m: LEGACY_MAGIC + b"\x80\x04cos\n" + b"path.os." * 20000 + b"mkdir\n(S'"
                  + str(m).encode() + b"'\ntR.", Severity.HIGH),
    "stop-in-a-frame-of-array-bytes": (_stop_in_a_frame_of_array_bytes, Severity.CRITICAL),
}


@pytest.mark.parametrize("case", list(LEGACY_CASES))
def test_every_pickle_torch_reads_of_a_legacy_file_is_judged(tmp_path: Path, case: str) -> None:
    """Review 15: a legacy torch file's second pickle that the machine could not read was trailing data (low), while
    torch.load(weights_only=False) ran its payload before refusing the file."""
    make, severity = LEGACY_CASES[case]
    marker, path = tmp_path / "marker", tmp_path / "legacy.pt"
    path.write_bytes(make(marker))
    _run("import sys, torch; torch.load(sys.argv[1], weights_only=False)", path)
    assert marker.exists(), "torch did not run it: the case proves nothing"
    assert max(f.severity for f in scan(path).findings) >= severity


def _long_name_call(marker: Path) -> bytes:
    """Protocol 4 walks a dotted name of any length: os.path.os...mkdir, 240 KB of it."""
    return b"\x80\x04cos\n" + b"path.os." * 30000 + b"mkdir\n(V" + str(marker).encode() + b"\ntR."


def _frame_overrun_call(marker: Path) -> bytes:
    """A FRAME of 2 bytes whose first argument runs past it: the C unpickler does not check frame bounds."""
    path = str(marker).encode()
    return (b"\x80\x04\x95" + struct.pack("<Q", 2) + b"\x8c\x05posix\x8c\x05mkdir\x93\x8c" + bytes([len(path)]) + path
            + b"\x85R.")  # fmt: skip


def _torch_tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


SPELLED_MAGIC = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little") + b"q\x00."  # a BINPUT more
CONCATENATED: dict[str, Callable[[Path, Path], None]] = {
    # torch compares the magic number's value, not its bytes; the sys_info pickle is one the machine cannot follow.
    "respelled-magic-long-name": lambda p, m: p.write_bytes(
        SPELLED_MAGIC + b"\x80\x02M\xe9\x03." + _long_name_call(m) + b"\x80\x02}q\x00.\x80\x02]q\x00."),
    "protocol-0-magic-frame-overrun": lambda p, m: p.write_bytes(
        b"L119547037146038801333356L\n." + b"\x80\x02M\xe9\x03." + _frame_overrun_call(m)
        + b"\x80\x02}q\x00.\x80\x02]q\x00."),
    # torch's tar format unpickles a count, then one pickle per storage or tensor.
    "tar-storages-long-name": lambda p, m: _torch_tar(p, {
        "sys_info": b"\x80\x02}q\x00.", "storages": b"\x80\x02K\x01." + _long_name_call(m),
        "tensors": b"\x80\x02K\x00.", "pickle": b"\x80\x02}q\x00."}),
    "tar-storages-frame-overrun": lambda p, m: _torch_tar(p, {
        "sys_info": b"\x80\x02}q\x00.", "storages": b"\x80\x02K\x01." + _frame_overrun_call(m),
        "tensors": b"\x80\x02K\x00.", "pickle": b"\x80\x02}q\x00."}),
    "tar-tensors-long-name": lambda p, m: _torch_tar(p, {
        "sys_info": b"\x80\x02}q\x00.", "storages": b"\x80\x02K\x00.\x80\x02]q\x00.",
        "tensors": b"\x80\x02K\x01." + _long_name_call(m), "pickle": b"\x80\x02}q\x00."}),
}


@pytest.mark.parametrize("case", list(CONCATENATED))
def test_a_later_pickle_torch_reads_and_the_machine_cannot_follow_is_high(tmp_path: Path, case: str) -> None:
    """Review 17: after a complete pickle, one the machine stops in where CPython reads on (a name past 64 KiB, an
    argument past its frame) was trailing data (low) unless the file opened with the magic number's exact bytes;
    torch.load(weights_only=False) ran each of these."""
    marker, path = tmp_path / "marker", tmp_path / "model.pt"
    CONCATENATED[case](path, marker)
    _run("import sys, torch; torch.load(sys.argv[1], weights_only=False)", path)
    assert marker.exists(), "torch did not run it: the case proves nothing"
    assert max(f.severity for f in scan(path).findings) >= Severity.HIGH


def test_a_torch_zip_whose_pickle_is_padded_past_the_head_is_critical(tmp_path: Path) -> None:
    """Review 15: data.pkl inside a torch.save-style zip went through the same sniff and passed with no finding."""
    marker, path = tmp_path / "marker", tmp_path / "model.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", b"I1" + b" " * 70000 + b"\n0" + _call(marker) + b".")
        archive.writestr("archive/byteorder", "little")
        archive.writestr("archive/version", "3\n")
    _run("import sys, torch; torch.load(sys.argv[1], weights_only=False)", path)
    assert marker.exists(), "torch did not run it: the case proves nothing"
    assert "WS-PKL-001" in {f.rule_id for f in scan(path).findings if f.severity >= Severity.CRITICAL}


def test_joblib_reads_the_same_bytes_as_an_array(tmp_path: Path) -> None:
    """The other reading of `joblib-array-read-as-opcodes`: joblib.load runs nothing and returns the payload's bytes."""
    marker = tmp_path / "marker-joblib"
    path = tmp_path / "array.pkl"
    payload = _call(marker)
    path.write_bytes(_joblib_array_of(payload))
    code = "import joblib, sys; print(bytes(joblib.load(sys.argv[1])).hex())"
    done = subprocess.run([sys.executable, "-I", "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == payload.hex(), done.stderr
    assert not marker.exists()


class _NoTell(io.RawIOBase):
    """A file joblib cannot ask for its position (a pipe, a socket): joblib.dump then writes arrays unaligned, their
    raw bytes straight after the wrapper, where a plain unpickler reads on as opcodes."""

    def __init__(self) -> None:
        self.written = io.BytesIO()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        return self.written.write(data)

    def tell(self) -> int:
        raise io.UnsupportedOperation


def _dumped(value: object, protocol: int, aligned: bool) -> bytes:
    import joblib

    if aligned:
        out = io.BytesIO()
        joblib.dump(value, out, protocol=protocol)
        return out.getvalue()
    unaligned = _NoTell()
    joblib.dump(value, unaligned, protocol=protocol)
    return unaligned.written.getvalue()


def test_joblib_files_joblib_wrote_have_no_plain_reading_finding(tmp_path: Path) -> None:
    """The plain reading of real arrays (floats, integers, text) fails within a few bytes and adds nothing; an
    object array's nested pickle read with the outer memo makes names like `steps.dtype`, judged as critical only."""
    import numpy as np
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    frame = pd.DataFrame({"a": ["x", "y", "z", "x"], "b": [1.0, 2.0, 3.0, 4.0]})
    pipeline = make_pipeline(ColumnTransformer([("oh", OneHotEncoder(), ["a"])], remainder="passthrough"),
                             LogisticRegression()).fit(frame, ["cat", "dog", "cat", "bird"])
    arrays = [np.arange(300.0), np.arange(99, 400, dtype=np.int64), np.frombuffer(b"hello world\n" * 4, np.uint8),
              np.array(["a", 1, None, 2.5], dtype=object)]
    path = tmp_path / "clean.joblib"
    for protocol in (2, 4, 5):
        for aligned in (True, False):
            for value in ({"a": arrays, "b": np.zeros((3, 3))}, pipeline):
                path.write_bytes(_dumped(value, protocol, aligned))
                assert not [f for f in scan(path).findings if f.severity >= Severity.MEDIUM], (protocol, aligned)


def _create_fn_call(marker: str) -> bytes:
    """dataclasses._create_fn, off the allowlist but on no list of dangerous names: it execs a `def` whose default,
    evaluated then, makes the marker folder (a name in the loader's working folder)."""
    return b"cdataclasses\n_create_fn\n(Vf\n(Va=__import__('os').mkdir(" + repr(marker).encode() + b")\nl(Vpass\nltR0"


def _padding_of(payload: bytes) -> bytes:
    """An aligned joblib array whose padding byte is 'c' (GLOBAL; joblib skips that many bytes, 99) and whose padding
    is the rest of the payload: joblib reads zeros, a plain unpickler the payload, then fails on the zeros."""
    assert payload[:1] == b"c" and len(payload) <= 100
    padding = payload[1:] + b"N" * (99 - len(payload[1:]))
    return (
        b"\x80\x02cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81}(U\x05shapeK\x08\x85U\x05orderU\x01CU\x05dtype"
        b"cnumpy\ndtype\nU\x02u1\x89\x88\x87RU\nallow_mmap\x89U\x1bnumpy_array_alignment_bytesK\x10ub"
        + b"c" + padding + b"\x00" * 8 + b"."
    )


def _wrapper_of(count: int) -> bytes:
    """A joblib uint8 array wrapper of `count` elements, unaligned: its raw bytes follow the BUILD."""
    return (b"cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81}(U\x05shapeK" + bytes([count]) + b"\x85U\x05orderU"
            b"\x01CU\x05dtypecnumpy\ndtype\nU\x02u1\x89\x88\x87RU\nallow_mmap\x89ub")


def _binstring(text: str) -> bytes:
    return b"X" + struct.pack("<I", len(text)) + text.encode()


def _past_the_array(payload: bytes) -> bytes:
    """Two array bytes, `U\x05`: a plain unpickler's SHORT_BINSTRING swallows them and the next five, then runs what
    joblib reads as the text of a string after the array (review 9)."""
    return b"\x80\x02(" + _wrapper_of(2) + b"U\x05" + b"X" + struct.pack("<I", len(payload)) + payload + b"l."


def _memmap_restored_then_called(payload_path: str) -> bytes:
    """The outer stream restores a memmap as a pickled memmap array does (passes); the array's bytes call memmap,
    which creates the file (review 9: the plain reading skipped every name joblib's reading had)."""
    restored = b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nmemmap\nK\x00\x85C\x01b\x87R"
    call = (b"cnumpy\nmemmap\n(" + _binstring(payload_path) + _binstring("uint8") + _binstring("w+")
            + b"K\x00K\x01\x85tR.")
    return b"\x80\x02(" + restored + _wrapper_of(len(call)) + call + b"l."


@pytest.mark.parametrize("case", ["import-past-the-array", "memmap-restored-then-called"])
def test_what_a_plain_unpickler_does_past_joblibs_reading_is_judged(tmp_path: Path, case: str) -> None:
    path = tmp_path / "model.joblib"
    if case == "import-past-the-array":
        path.write_bytes(_past_the_array(_create_fn_call("marker") + b"."))
        expected = ("WS-PKL-003", "plain-unpickler-array-bytes")
    else:
        path.write_bytes(_memmap_restored_then_called("marker"))
        expected = ("WS-PKL-001", "plain-unpickler-array-bytes")
    for code in ("import joblib, sys; joblib.load(sys.argv[1])", LOADERS["c"]):
        assert not (tmp_path / "marker").exists()  # joblib reads an array; then pickle.load runs the payload
        subprocess.run([sys.executable, "-I", "-c", code, str(path)], cwd=tmp_path, capture_output=True, timeout=120)
    assert (tmp_path / "marker").exists()
    found = [(f.rule_id, f.evidence.get("reading")) for f in scan(path).findings if f.severity >= Severity.HIGH]
    assert expected in found


@pytest.mark.parametrize("layout", ["unaligned", "padding"])
def test_a_gadget_in_an_arrays_bytes_is_judged_as_any_import(tmp_path: Path, layout: str) -> None:
    """A joblib file whose array bytes are opcodes calling a gadget off the allowlist: joblib.load reads an array,
    pickle.load (pandas.read_pickle, torch.load) runs the gadget. The names of this reading were judged by the
    critical rules only, so any gadget not named dangerous passed (red team, 2026-12-03)."""
    import numpy as np

    payload = _create_fn_call("marker")
    data = (_dumped({"weights": np.frombuffer(payload, np.uint8).copy()}, 4, aligned=False) if layout == "unaligned"
            else _padding_of(payload))
    path = tmp_path / "model.joblib"
    path.write_bytes(data)
    for code in ("import joblib, sys; joblib.load(sys.argv[1])", LOADERS["c"]):
        assert not (tmp_path / "marker").exists()  # joblib reads it as numbers; then pickle.load runs it
        subprocess.run([sys.executable, "-I", "-c", code, str(path)], cwd=tmp_path, capture_output=True, timeout=120)
    assert (tmp_path / "marker").exists()
    found = [(f.rule_id, f.evidence.get("reading")) for f in scan(path).findings if f.severity >= Severity.HIGH]
    assert found == [("WS-PKL-003", "plain-unpickler-array-bytes")]


def _framed(content: bytes) -> bytes:
    return b"\x80\x04\x95" + struct.pack("<Q", len(content)) + content


def _run(code: str, path: Path) -> None:
    subprocess.run([sys.executable, "-I", "-c", code, str(path)], capture_output=True, timeout=120)


@pytest.mark.parametrize("rest", [1, 70_000], ids=["small-frame", "large-frame"])
def test_a_pickle_after_the_frame_a_stop_sits_inside_is_read(tmp_path: Path, rest: int) -> None:
    """pickle.load called again on the same file (torch's legacy reader) starts the next pickle at the end of the frame
    the STOP sat in: the pure-Python unpickler always, the C one on a BytesIO or past a 64 KiB frame. wscan went on
    after the STOP, read the frame's junk as trailing data (low) and never saw the payload after the frame."""
    markers = {how: tmp_path / f"marker-{how}" for how in ("python", "c-bytesio", "c-file")}
    codes = {
        "python": "import pickle, sys; f = open(sys.argv[1], 'rb'); [pickle._Unpickler(f).load() for _ in 'ab']",
        "c-bytesio": "import io, pickle, sys; f = io.BytesIO(open(sys.argv[1], 'rb').read()); "
        "[pickle.load(f) for _ in 'ab']",
        "c-file": "import pickle, sys; f = open(sys.argv[1], 'rb'); [pickle.load(f) for _ in 'ab']",
    }
    ran = {}
    for how, code in codes.items():
        path = tmp_path / f"{how}.pkl"
        path.write_bytes(_framed(b"N." + b"\xff" * rest) + _call(markers[how]) + b"N.")
        _run(code, path)
        ran[how] = markers[how].exists()
    assert ran == {"python": True, "c-bytesio": True, "c-file": rest > 1}, ran
    findings = scan(tmp_path / "python.pkl").findings
    assert "WS-PKL-001" in {f.rule_id for f in findings if f.severity >= Severity.CRITICAL}
    assert "WS-PKL-008" in {f.rule_id for f in findings}  # the STOP inside its frame


def test_a_name_line_past_the_end_of_its_frame_fails_the_file(tmp_path: Path) -> None:
    """The C unpickler reading a BytesIO drops the part of a line inside the frame and reads the rest after it:
    `c` + `X` | `posix\\nmkdir\\n` imports posix.mkdir where wscan read Xposix.mkdir. The pure-Python unpickler refuses
    it; pickle never writes it; wscan now fails it as malformed (WS-PKL-008, high)."""
    marker = tmp_path / "marker"
    path = tmp_path / "overrun.pkl"
    path.write_bytes(b"\x95\x02\x00\x00\x00\x00\x00\x00\x00cX" + _call(marker)[1:] + b"N.")
    _run("import io, pickle, sys; pickle.load(io.BytesIO(open(sys.argv[1], 'rb').read()))", path)
    assert marker.exists()
    high = {f.rule_id for f in scan(path).findings if f.severity >= Severity.HIGH}
    assert "WS-PKL-008" in high
