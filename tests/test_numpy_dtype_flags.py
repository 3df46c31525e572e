"""NumPy dtype states whose flags contradict their kind (review 46): NumPy 2 trusts them, and an object dtype that
says it holds no objects reads raw bytes as object pointers. Every dtype NumPy itself pickles stays clean."""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.scanning import rule_ids, scan

POINTER = struct.pack("<Q", 0x4141414141414141)


def _dtype(code: bytes, flags: int) -> bytes:
    """numpy.dtype(code, False, True) with a version 3 state of the given flags, as protocol 2 writes it."""
    length = struct.pack("<I", len(code))
    state = b"(K\x03X\x01\x00\x00\x00|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffJ" + struct.pack("<i", flags) + b"tb"
    return b"cnumpy\ndtype\nX" + length + code + b"\x89\x88\x87R" + state


def _array(dtype: bytes, data: bytes) -> bytes:
    """_reconstruct(ndarray, (0,), b'b') given the state (1, (1,), dtype, False, data)."""
    return (b"cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R"
            b"(K\x01K\x01\x85" + dtype + b"\x89C" + bytes([len(data)]) + data + b"tb")  # fmt: skip


def forged_object_array() -> bytes:
    """list(<an object array whose dtype says it holds no objects, over 8 raw bytes>): list() reads the pointer."""
    return b"\x80\x02cbuiltins\nlist\n" + _array(_dtype(b"O8", 0), POINTER) + b"\x85R."


def _loads_in_child(path: Path, bare: bool = False, fill: bool = False) -> int:
    """pickle.loads of the file in a child: its exit code (-11 for SIGSEGV). `bare`: an isolated interpreter with
    only PATH set; `fill`: heap memory filled with 0xff and freed first, so that a stray read finds no NULL."""
    code = "import pickle, sys\n"
    if fill:
        code += "heap = [b'\\xff' * 16384 for _ in range(256)]\ndel heap\n"
    code += "pickle.loads(open(sys.argv[1], 'rb').read())\n"
    command = [sys.executable, *(["-I"] if bare else []), "-c", code, str(path)]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")} if bare else None
    return subprocess.run(command, capture_output=True, timeout=120, env=env).returncode


def test_an_object_dtype_without_object_flags_crashes_the_loader_and_is_high(tmp_path: Path) -> None:
    path = tmp_path / "forged.pkl"
    path.write_bytes(forged_object_array())
    assert _loads_in_child(path) == -11  # SIGSEGV: the 8 bytes were taken for an object's address
    assert "WS-PKL-043" in rule_ids(scan(path))


@pytest.mark.parametrize("where", ["torch-zip", "npy"])
def test_the_forged_dtype_is_found_in_every_container(tmp_path: Path, where: str) -> None:
    data = forged_object_array()
    if where == "torch-zip":
        path = tmp_path / "model.pt"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("archive/data.pkl", data)
            archive.writestr("archive/version", "3\n")
    else:
        path = tmp_path / "array.npy"
        header = "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
        header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
        path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)
    assert "WS-PKL-043" in rule_ids(scan(path))


def test_a_number_dtype_claiming_objects_is_high(tmp_path: Path) -> None:
    """float64 with the object flags: NumPy 2.4 breaks inside (a C call returns NULL with no exception set, or
    'get_clear_loop not set'); a release that lets it through keeps a pointer where a float is read back."""
    blob = b"\x80\x02" + _array(_dtype(b"f8", 63), POINTER) + b"."
    path = tmp_path / "claims.pkl"
    path.write_bytes(blob)
    assert _loads_in_child(path) != 0
    assert "WS-PKL-043" in rule_ids(scan(path))


DTYPES = [
    "O", "f8", ">i4", "?", "U5", "S3", "V8", "M8[ns]", "m8[s]", "c16", "f2",
    [("a", "f8"), ("b", "O")], [("a", "f8"), ("b", "i4")], ("f8", (2, 2)), ("O", (2,)), [("x", [("y", "O")])],
    np.dtype([("a", "f8"), ("b", "O")], align=True), np.dtype([("a", "i1"), ("b", "f8")], align=True),
    np.dtype({"names": ["a"], "formats": ["O"], "titles": ["A title"]}),
    np.dtype((np.record, [("a", "i4"), ("o", "O")])),  # a record array's: numpy.record as the kind
    np.dtype({"names": ["a", "b"], "formats": ["i4", "i4"], "offsets": [0, 0]}),  # numbers may share bytes
]  # fmt: skip


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_every_dtype_numpy_pickles_is_clean(tmp_path: Path, protocol: int) -> None:
    for index, spec in enumerate(DTYPES):
        dtype = np.dtype(spec)  # type: ignore[call-overload]
        path = tmp_path / f"{index}.pkl"
        path.write_bytes(pickle.dumps({"dtype": dtype, "array": np.zeros(3, dtype=dtype)}, protocol=protocol))
        assert "WS-PKL-043" not in rule_ids(scan(path)), dtype


class _Reduce:
    """Pickles as the given (callable, arguments[, state]): how a hostile file is written without hand-made opcodes."""

    def __init__(self, *reduced: object) -> None:
        self.reduced = reduced

    def __reduce__(self) -> tuple[object, ...]:
        return self.reduced


def _state_dtype(code: object, state: tuple[object, ...]) -> _Reduce:
    return _Reduce(np.dtype, (code, False, True), state)


def _state_array(dtype: object, shape: tuple[int, ...], data: object) -> _Reduce:
    from numpy._core.multiarray import _reconstruct  # type: ignore[import-not-found]

    return _Reduce(_reconstruct, (np.ndarray, (0,), b"b"), (1, shape, dtype, False, data))


OBJECT = _state_dtype("O8", (3, "|", None, None, None, -1, -1, 63))
INT64 = _state_dtype("<i8", (3, "<", None, None, None, -1, -1, 0))
NO_FLAGS = (3, "|", None, None, None, -1, -1, 0)
# Review 47: states NumPy 2.4 takes as given though no NumPy writes them; each crashed a plain pickle.load.
MISREAD = {
    "object-spelled-as-a-word": _state_array(_state_dtype("object", NO_FLAGS), (1,), POINTER),
    "object-given-as-its-type": _state_array(_state_dtype(np.object_, NO_FLAGS), (1,), POINTER),
    "number-field-over-object-field": _state_array(
        _state_dtype("V8", (3, "|", None, ("o", "i"), {"o": (OBJECT, 0), "i": (INT64, 0)}, 8, 1, 27)),
        (1,), [(None, 0x4141414141414141)]),
    "object-field-past-the-end": _state_array(
        _state_dtype("V8", (3, "|", None, ("o",), {"o": (OBJECT, 4096)}, 8, 1, 27)), (1,), [(None,)]),
    "object-sub-array-past-the-end": _state_array(
        _state_dtype("V8", (3, "|", (OBJECT, (1000,)), None, None, 8, 8, 63)), (2,), [None, None]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(MISREAD), ids=list(MISREAD))
def test_a_dtype_state_numpy_misreads_is_high(tmp_path: Path, case: str) -> None:
    path = tmp_path / f"{case}.pkl"
    path.write_bytes(pickle.dumps(_Reduce(list, (MISREAD[case],)), protocol=4))  # list() reads every item
    # What lies past the buffer is the heap's, laid out by the environment's size too: a NULL there reads as None
    # (a full run's workers met one every time), so the loader is also run with a bare environment and after freeing
    # memory filled with 0xff, until one run shows the out-of-bounds read as a crash.
    assert -11 in (_loads_in_child(path, bare, fill) for bare in (False, True) for fill in (False, True))
    assert "WS-PKL-043" in rule_ids(scan(path))


# ml_dtypes' types (bfloat16, float8, int4: JAX, TensorFlow and ONNX weights hold them): NumPy pickles their
# descriptors as dtype(ml_dtypes.<type>, False, True) with a state of their own size and flags. They were WS-PKL-003
# and WS-PKL-043, and a joblib file holding one failed to parse.
ML_TYPES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "uint4", "complex32", "float4_e2m1fn"]


@pytest.mark.parametrize("name", ML_TYPES)
def test_ml_dtypes_arrays_as_numpy_and_joblib_pickle_them_are_clean(tmp_path: Path, name: str) -> None:
    import joblib
    import ml_dtypes

    kind = getattr(ml_dtypes, name)
    array = np.arange(6, dtype=np.float32).reshape(2, 3).astype(kind)
    for protocol in (2, 4, 5):
        path = tmp_path / f"{name}-{protocol}.pkl"
        path.write_bytes(pickle.dumps({"w": array, "first": array.flat[1], "row": array[1:]}, protocol=protocol))
        assert not rule_ids(scan(path)), protocol
    for compress in (0, 3):
        path = tmp_path / f"{name}-{compress}.joblib"
        joblib.dump({"w": array, "t": "x"}, path, compress=compress)
        assert not rule_ids(scan(path)), compress


class Reduce:
    """Pickles as whatever `__reduce__` tuple it is given: the streams a hostile writer makes by hand."""

    def __init__(self, *reduced: object) -> None:
        self.reduced = reduced

    def __reduce__(self) -> tuple[object, ...]:
        return self.reduced


def _ml_dtype_array(flags: int, size: int) -> bytes:
    """A two-item bfloat16 array whose descriptor's state says `flags` and `size`, over bytes of 0x41."""
    import ml_dtypes

    dtype = Reduce(np.dtype, (ml_dtypes.bfloat16, False, True), (3, "<", None, None, None, size, 2, flags))
    state = (1, (2,), dtype, False, b"A" * 2 * size)
    return pickle.dumps(Reduce(np._core.multiarray._reconstruct, (np.ndarray, (0,), b"b"), state), protocol=4)


def test_an_ml_dtype_state_claiming_objects_is_high(tmp_path: Path) -> None:
    """Flags 1 on an 8-byte bfloat16: NumPy takes both, and the array's 16 bytes become two object pointers, which the
    interpreter releases (0x4141414141414141) when it frees the array."""
    path = tmp_path / "forged.pkl"
    path.write_bytes(_ml_dtype_array(1, 8))
    code = "import pickle, sys; a = pickle.load(open(sys.argv[1], 'rb')); print(a.dtype.hasobject, a.itemsize)"
    shown = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert shown.stdout.split() == ["True", "8"], shown
    assert "WS-PKL-043" in rule_ids(scan(path))
    for flags, size in ((64, 8), (63, 2), (0, 2)):  # states NumPy never writes for bfloat16
        path.write_bytes(_ml_dtype_array(flags, size))
        assert "WS-PKL-043" in rule_ids(scan(path)), (flags, size)
    path.write_bytes(_ml_dtype_array(64, 2))  # as NumPy writes it
    assert not rule_ids(scan(path))


def _shared_descriptor_rewrite(how: str) -> bytes:
    """bfloat16's descriptor, the one the process shares, given a 4-byte state by `how`, then a list holding it."""
    import copyreg

    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    state = (3, "<", None, None, None, 4, 2, 64)
    made = {
        "reconstructor": (copyreg._reconstructor, (np.dtype, np.dtype, bf16)),  # type: ignore[attr-defined]
        "newobj": (copyreg.__newobj__, (np.dtype, bf16)),  # type: ignore[attr-defined]
        "newobj_ex": (copyreg.__newobj_ex__, (np.dtype, (bf16,), {})),  # type: ignore[attr-defined]
        "no-copy": (np.dtype, (bf16,)),
        "copy-false": (np.dtype, (bf16, False, False)),
    }[how]
    return pickle.dumps([Reduce(*made, state)], protocol=1)  # protocol 2 and up write __newobj__ as NEWOBJ


def _bfloat16_size_after_loading(path: Path) -> str:
    """The item size of ml_dtypes' shared bfloat16 descriptor once `path` is loaded, in a child process."""
    code = ("import pickle, sys, ml_dtypes, numpy as np; pickle.load(open(sys.argv[1], 'rb'));"
            " print(np.dtype(ml_dtypes.bfloat16).itemsize)")  # fmt: skip
    shown = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    return shown.stdout.strip() or shown.stderr[-500:]


@pytest.mark.parametrize("how", ["reconstructor", "newobj", "newobj_ex", "no-copy", "copy-false"])
def test_a_state_on_the_shared_ml_dtypes_descriptor_is_high(tmp_path: Path, how: str) -> None:
    """Review 54: NumPy protects its built-in descriptors but lets a state rewrite ml_dtypes' shared ones, so every
    later bfloat16 array in the process reads 4-byte items (a joblib file then ran a payload where wscan skipped 32
    bytes of data, and a record's bfloat16 field read past its buffer). Only numpy.dtype(t, False, True) copies."""
    path = tmp_path / f"{how}.pkl"
    path.write_bytes(_shared_descriptor_rewrite(how))
    assert _bfloat16_size_after_loading(path) == "4"
    assert "WS-PKL-043" in rule_ids(scan(path))


def test_a_joblib_array_of_an_ml_dtype_copy_never_given_a_state_is_not_sized(tmp_path: Path) -> None:
    """A copy never given NumPy's state copies the shared descriptor as the stream left it: its size is unknown, so
    the file is not read as if its items were 2 bytes (review 54 hid a payload behind 32 bytes so)."""
    import joblib
    import ml_dtypes

    path = tmp_path / "real.joblib"
    joblib.dump(np.zeros(16, ml_dtypes.bfloat16), path)
    assert not rule_ids(scan(path))
    blob = path.read_bytes()
    stated = b"\x94(K\x03\x8c\x01<\x94NNNK\x02K\x02K@t\x94b"  # MEMOIZE, the dtype's state, BUILD
    assert blob[2:3] == b"\x95" and stated in blob  # a FRAME first, holding the wrapper
    frame = struct.unpack("<Q", blob[3:11])[0] - len(stated) + 1
    path.write_bytes(blob[:3] + struct.pack("<Q", frame) + blob[11:].replace(stated, b"\x94", 1))
    assert "WS-PKL-008" in rule_ids(scan(path))  # the array's size is unknown: not read as 2-byte items


def test_an_ml_dtype_named_by_its_text_is_no_numpy_kind(tmp_path: Path) -> None:
    """Review 56: numpy.dtype('bfloat16') is ml_dtypes' shared descriptor by its registered name, and a 7-item state
    rewrote its size (later casts corrupted the heap). NumPy pickles it by its type, never its name: any state on
    a dtype of a kind NumPy never writes is WS-PKL-043, whatever the state's length."""
    import ml_dtypes  # noqa: F401  (registers the name)

    blob = b"\x80\x02cnumpy\ndtype\nX\x08\x00\x00\x00bfloat16\x89\x89\x87R(K\x02X\x01\x00\x00\x00<NNNK\x04K\x02tb."
    path = tmp_path / "by-name.pkl"
    path.write_bytes(blob)
    assert _bfloat16_size_after_loading(path) == "4"
    assert "WS-PKL-043" in rule_ids(scan(path))


@pytest.mark.parametrize("protocol", [2, 4])
def test_one_array_state_given_to_many_arrays_is_high(tmp_path: Path, protocol: int) -> None:
    """Review 59: the memo hands one byte-swapped state to many arrays, and NumPy copies it for each (16 MiB to 600
    arrays took 9.4 GiB as the file loaded; JAX's conversion to float32 did the same). Writers memoize an array,
    never its state: more array data than the stream holds (past 64 MiB of slack) is WS-PKL-048. Review 60: at
    protocol 2 (torch.save's default) the bytes are `_codecs.encode(text, 'latin1')`, and were counted as none."""
    state = (1, (131072,), np.dtype(">f8"), False, b"\x01" * (1 << 20))  # 1 MiB
    arrays = [Reduce(np._core.multiarray._reconstruct, (np.ndarray, (0,), b"b"), state) for _ in range(100)]
    blob = pickle.dumps(arrays, protocol=protocol)
    assert len(blob) < 2 << 20  # the state is written once
    loaded = pickle.loads(blob)
    assert sum(a.nbytes for a in loaded if a.flags.owndata) == 100 << 20  # a copy each
    path = tmp_path / "shared.pkl"
    path.write_bytes(blob)
    assert "WS-PKL-048" in rule_ids(scan(path))
    path.write_bytes(pickle.dumps([np.ones(131072, ">f8") for _ in range(3)], protocol=protocol))
    assert not rule_ids(scan(path))  # arrays of their own


@pytest.mark.parametrize("shape", ["state of 4", "ndarray by __newobj__", "masked array"])
def test_array_states_of_every_shape_numpy_takes_are_counted(tmp_path: Path, shape: str) -> None:
    """Review 63: ndarray.__setstate__ also takes (shape, dtype, fortran, data), an ndarray is also made by
    copyreg.__newobj__, and a masked array by numpy.ma's rebuilder with a 7-item state: one shared state given to
    many of each was counted as no data (3.2 GiB loaded from 8.4 MB)."""
    import copyreg

    data = b"\x01" * (1 << 20)
    if shape == "masked array":
        state: tuple[object, ...] = (1, (131072,), np.dtype(">f8"), False, data, b"\x00" * 131072, 0.0)
        made = (np.ma.core._mareconstruct, (np.ma.MaskedArray, np.ndarray, (0,), b"b"), state)
    elif shape == "ndarray by __newobj__":
        made = (copyreg.__newobj__, (np.ndarray, (0,)), (1, (131072,), np.dtype(">f8"), False, data))
    else:
        made = (np._core.multiarray._reconstruct, (np.ndarray, (0,), b"b"), ((131072,), np.dtype(">f8"), False, data))
    # protocol 1 writes __newobj__ as the plain call it is (2 and up insist the object be of that class)
    blob = pickle.dumps([Reduce(*made) for _ in range(100)], protocol=1 if "newobj" in shape else 4)
    assert len(blob) < 3 << 20
    assert sum(a.nbytes for a in pickle.loads(blob)) == 100 << 20  # each array its own 1 MiB
    path = tmp_path / "shared.pkl"
    path.write_bytes(blob)
    assert "WS-PKL-048" in rule_ids(scan(path))


@pytest.mark.parametrize("maker", ["bytearray", "numpy.bytes_", "array.array", "bytes state"])
def test_one_buffer_copied_by_many_makers_is_high(tmp_path: Path, maker: str) -> None:
    """Review 64: one bytes object handed to many calls of a maker that copies it (bytearray, numpy.bytes_, array.array,
    or an array state's data given as bytes(b)) loaded 3.2 GiB from 8.4 MB; what they copy counts as array data."""
    import array

    data = b"\x01" * (1 << 20)
    shared = Reduce(bytes, (data,))
    made = {
        "bytearray": (bytearray, (data,)), "numpy.bytes_": (np.bytes_, (data,)),
        "array.array": (array.array, ("b", data)),
        "bytes state": (np._core.multiarray._reconstruct, (np.ndarray, (0,), b"b"),
                        (1, (131072,), np.dtype(">f8"), False, shared)),
    }[maker]  # fmt: skip
    blob = pickle.dumps([Reduce(*made) for _ in range(100)], protocol=4)
    assert len(blob) < 2 << 20
    path = tmp_path / "copies.pkl"
    path.write_bytes(blob)
    assert "WS-PKL-048" in rule_ids(scan(path))
    path.write_bytes(pickle.dumps([bytearray(data[:4096]) for _ in range(100)], protocol=4))  # buffers of their own
    assert not rule_ids(scan(path))


@pytest.mark.parametrize("maker", [list, tuple, set])
def test_one_range_or_buffer_iterated_by_many_calls_is_high(tmp_path: Path, maker: type) -> None:
    """Review 66: one memoised range(999_999) listed 100 times took 3.75 GiB from 656 bytes, one 8 MiB bytes object
    listed 45 times 2.8 GiB: each call stayed under the per-call limit. What calls iterate counts per file (8 bytes an
    item); a real list of a range or of bytes passes."""
    ranged = pickle.dumps([Reduce(maker, (range(999_999),)) for _ in range(20)], protocol=4)
    assert len(ranged) < 1000
    path = tmp_path / "iterated.pkl"
    path.write_bytes(ranged)
    assert "WS-PKL-048" in rule_ids(scan(path))
    data = b"\x01" * (1 << 20)
    path.write_bytes(pickle.dumps([Reduce(maker, (data,)) for _ in range(20)], protocol=4))  # 20 x 8 MiB of items
    assert "WS-PKL-048" in rule_ids(scan(path))
    path.write_bytes(pickle.dumps([Reduce(maker, (range(1000),)), Reduce(maker, (data[:1000],))], protocol=4))
    assert not rule_ids(scan(path))


def test_array_data_is_counted_over_every_object_array_of_a_joblib_file(tmp_path: Path) -> None:
    """Review 60: joblib writes each object array as a pickle of its own (its own memo), so one state shared within
    each of many object arrays stayed under the allowance of each (5.4 GiB loaded from 13.7 MB). The count is the
    file's; real object arrays of arrays pass."""
    import joblib

    state = (1, (131072,), np.dtype(">f8"), False, b"\x01" * (1 << 20))  # 1 MiB, copied by each array it is given
    shared = np.empty(1, dtype=object)
    shared[0] = [Reduce(np._core.multiarray._reconstruct, (np.ndarray, (0,), b"b"), state) for _ in range(10)]
    path = tmp_path / "nested.joblib"
    joblib.dump([shared.copy() for _ in range(10)], path)  # ten object arrays: 10 MiB in the file, 100 MiB loaded
    assert len(path.read_bytes()) < 12 << 20
    assert "WS-PKL-048" in rule_ids(scan(path))
    real = [np.array([np.ones(131072) for _ in range(3)] + [None], dtype=object) for _ in range(10)]
    joblib.dump(real, path)
    assert not rule_ids(scan(path))
