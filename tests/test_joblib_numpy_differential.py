"""Loader differential for joblib and NumPy: whatever `joblib.load` or `np.load(allow_pickle=True)` would run,
wscan must have inspected.

Each case is a file the real library wrote (or joblib's own legacy writer, or bytes damaged one way) holding a
payload that creates a marker folder (os.mkdir, harmless). The real loader runs in a forked child of a fresh,
isolated interpreter; if the marker appears, wscan must report a critical pickle finding for the file, and if
the loader refuses the file wscan must still report it at high or above. Two bypasses were found this way and
fixed: joblib's pre-0.10 Z-file ("ZF" header, zlib body), which joblib 1.x still loads, and joblib's
compress="lz4" files; wscan called both an unknown format (low).
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import joblib
import numpy as np
import pytest
from joblib.numpy_pickle_compat import write_zfile

from tests.helpers.sandbox import Case, Outcome, write_and_load
from tests.helpers.scanning import rule_ids, scan
from tests.test_loader_differential import CRITICAL_PICKLE, Entry, build_zip
from wscan.model import Severity


class Payload:
    """Pickles as os.mkdir(marker): proof of execution that harms nothing."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.mkdir, (self.marker,)


def _pickled(marker: Path, protocol: int = 2) -> bytes:
    return pickle.dumps({"model": Payload(marker)}, protocol=protocol)


# --- joblib ------------------------------------------------------------------------------------------------


def joblib_dump(compress: object) -> Callable[[Path], bytes]:
    def make(marker: Path) -> bytes:
        buffer = io.BytesIO()
        joblib.dump({"weights": np.arange(4.0), "model": Payload(marker)}, buffer, compress=compress)
        return buffer.getvalue()

    return make


def joblib_object_array(marker: Path) -> bytes:
    """An object array: joblib pickles its items inline after the NumpyArrayWrapper."""
    buffer = io.BytesIO()
    joblib.dump({"column": np.array([1, Payload(marker)], dtype=object)}, buffer)
    return buffer.getvalue()


def joblib_string_array(marker: Path) -> bytes:
    """A NumPy 2 StringDType array (joblib pickles its items after the wrapper), then the payload: wscan called the
    dtype unknown (high) and read no further, so the payload after it went unseen."""
    buffer = io.BytesIO()
    labels = np.array(["cat", "dog"], dtype=np.dtypes.StringDType(na_object=None))
    joblib.dump({"labels": labels, "model": Payload(marker)}, buffer)
    return buffer.getvalue()


def zfile(spell: Callable[[int], bytes] | None = None, space: bool = False, cut: int = 0) -> Callable[[Path], bytes]:
    """joblib's pre-0.10 Z-file, as its own write_zfile writes it, optionally with the length spelled by `spell`,
    the extra space joblib <= 0.8.4 wrote, or the last `cut` bytes missing."""

    def make(marker: Path) -> bytes:
        buffer = io.BytesIO()
        data = _pickled(marker)
        write_zfile(buffer, data)
        blob = buffer.getvalue()
        if spell is not None:
            blob = blob[:2] + spell(len(data)).ljust(19) + blob[21:]
        if space:
            blob = blob[:21] + b" " + blob[21:]
        return blob[: len(blob) - cut]

    return make


def truncated(make: Callable[[Path], bytes], cut: int) -> Callable[[Path], bytes]:
    return lambda marker: make(marker)[:-cut]


def trailing(make: Callable[[Path], bytes]) -> Callable[[Path], bytes]:
    return lambda marker: make(marker) + b"\x00trailing bytes" * 8


# Hand-written joblib streams (from a bypass hunt): a NumpyArrayWrapper whose attributes make joblib step over a
# different number of array bytes than a naive reader, so that the payload sits where one of them reads "array".


def _text(value: str) -> bytes:
    return b"X" + struct.pack("<I", len(value.encode())) + value.encode()


def _p0_payload(marker: Path) -> bytes:
    """os.mkdir(marker) in protocol 0 opcodes, its result popped."""
    return b"cos\nmkdir\n(V" + str(marker).encode() + b"\ntR0"


def _dtype(code: str = "f8", elsize: int = -1, extra: bytes = b"", flags: int = 0) -> bytes:
    """numpy.dtype(code, False, True) with the BUILD state numpy writes, its size and flags fields set."""
    state = b"(K\x03" + _text("<") + b"NNNJ" + struct.pack("<i", elsize) + b"J\xff\xff\xff\xffK" + bytes([flags])
    state += extra + b"tb"
    return b"cnumpy\ndtype\n" + _text(code) + b"\x89\x88\x87R" + state


def _wrapper(
    count: int, dtype: bytes, alignment: bytes | None = b"K\x10", mmap: bytes = b"\x88", extra: bytes = b""
) -> bytes:
    """A protocol 2 joblib.numpy_pickle.NumpyArrayWrapper of `count` items, up to its BUILD state."""
    items = _text("subclass") + b"cnumpy\nndarray\n" + _text("shape") + b"K" + bytes([count]) + b"\x85"
    items += _text("order") + _text("C") + _text("dtype") + dtype + _text("allow_mmap") + mmap + extra
    if alignment is not None:
        items += _text("numpy_array_alignment_bytes") + alignment
    return b"\x80\x02cjoblib.numpy_pickle\nNumpyArrayWrapper\n)\x81}(" + items + b"u"


def _hidden_after(head: bytes, marker: Path, skipped: int, naive: int) -> bytes:
    """`head` (ending in BUILD), then `skipped` bytes joblib steps over before the payload; a reader stepping over
    only `naive` bytes lands on a BINBYTES whose body swallows the payload."""
    payload = _p0_payload(marker)
    filler = bytearray(b"\x00" * skipped)
    filler[naive : naive + 5] = b"B" + struct.pack("<I", skipped + len(payload) - naive - 5)
    return head + bytes(filler) + payload + b"."


def joblib_wrong_elsize(marker: Path) -> bytes:
    """float64 with a size field of 1: NumPy ignores it for a non-flexible type, so joblib steps over the padding
    byte (0) and 32 bytes, not 4."""
    return _hidden_after(_wrapper(4, _dtype("f8", 1)) + b"b", marker, 1 + 32, 1 + 4)


def joblib_alignment_not_none(marker: Path) -> bytes:
    """Alignment `()`: not None, so joblib reads a padding byte (20), then 20 bytes, then the 8-byte array."""
    head = _wrapper(1, _dtype("f8"), alignment=b")") + b"b"
    data = _hidden_after(head, marker, 1 + 20 + 8, 8)
    return data[: len(head)] + bytes([20]) + data[len(head) + 1 :]


def joblib_state_and_slotstate(marker: Path) -> bytes:
    """BUILD (None, {...}): pickle sets the attributes from the slot state, and joblib reads the array. The
    padding byte is "B" (66), which a reader that misses the wrapper takes for BINBYTES."""
    head = _wrapper(4, _dtype("f8")).replace(b"\x81}(", b"\x81N}(") + b"\x86b"
    return _hidden_after(head, marker, 1 + 66 + 32, 0)


def joblib_object_in_metadata(marker: Path) -> bytes:
    """float64 whose metadata holds an object dtype: the array holds no objects, its bytes are raw."""
    metadata = b"}" + _text("x") + _dtype("O") + b"s"
    return _hidden_after(_wrapper(4, _dtype("f8", -1, metadata)) + b"b", marker, 1 + 66 + 32, 0)


def joblib_flags_hold_objects(marker: Path) -> bytes:
    """float64 whose state's flags say "holds objects": NumPy takes the flags, so joblib unpickles what follows."""
    return _wrapper(0, _dtype("f8", flags=1), mmap=b"\x89") + b"b" + _pickled(marker) + b"."


def joblib_object_flags_cleared(marker: Path) -> bytes:
    """An object dtype whose state's flags are 0: no objects, so joblib reads a padding byte ("B", 66) and skips."""
    return _hidden_after(_wrapper(0, _dtype("O8", flags=0)) + b"b", marker, 1 + 66, 0)


def joblib_empty_object_array(marker: Path) -> bytes:
    """An empty object array: joblib still unpickles its (empty) array, and the payload follows in the outer one."""
    import numpy as np

    nested = pickle.dumps(np.empty(0, dtype=object), protocol=2)
    return _wrapper(0, _dtype("O8", flags=63), mmap=b"\x89") + b"b" + nested + b"0" + _p0_payload(marker) + b"N."


def joblib_wrapper_in_nested_pickle(marker: Path) -> bytes:
    """A wrapper inside an object array's nested pickle: a plain unpickler reads it, so no array bytes follow."""
    nested = b"\x80\x02" + _wrapper(0, _dtype("f8"))[2:] + b"b0" + _p0_payload(marker) + b"N."
    return _wrapper(1, _dtype("O8", flags=63), mmap=b"\x89") + b"b" + nested + b"."


# Helper 244's three ways past joblib's reading: a wrapper made by a helper joblib never writes (joblib reads an array
# after any BUILD of one), a nested pickle whose STOP leaves bytes of its frame (joblib reads on at the frame's end),
# and an object array whose nested pickle calls, in a plain unpickler's reading (pickle.load, np.load, torch.load),
# an exec gadget off the critical list made from the outer stream's memo.


def _u(text: str) -> bytes:
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw if len(raw) < 256 else b"X" + struct.pack("<I", len(raw)) + raw


_OBJECT_DTYPE = (_u("numpy") + _u("dtype") + b"\x93" + _u("O8") + b"\x89\x88\x87R(K\x03" + _u("|")
                 + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb")  # fmt: skip


def _object_wrapper(maker: bytes = b"\x93)\x81") -> bytes:
    """A protocol 4 wrapper of one object, made by `maker` after the class (NEWOBJ, as joblib writes), built."""
    return (_u("joblib.numpy_pickle") + _u("NumpyArrayWrapper") + maker + b"}(" + _u("subclass") + _u("numpy")
            + _u("ndarray") + b"\x93" + _u("shape") + b"K\x01\x85" + _u("order") + _u("C") + _u("dtype")
            + _OBJECT_DTYPE + _u("allow_mmap") + b"\x89" + _u("numpy_array_alignment_bytes") + b"K\x10ub")  # fmt: skip


def _p4_payload(marker: Path) -> bytes:
    return b"0" + _u("os") + _u("mkdir") + b"\x93" + _u(str(marker)) + b"\x85R."


def _raw_swallowing(head: bytes, marker: Path) -> bytes:
    """`head` ends in a BUILD of a 16-byte uint8 wrapper: joblib steps over 16 bytes to the payload, a reader that
    missed the wrapper reads a BINBYTES there that swallows it."""
    payload = _p4_payload(marker)
    return head + b"B" + struct.pack("<I", 11 + len(payload)) + bytes(11) + payload + b"0."


def _uint8_state() -> bytes:
    return (b"}(" + _u("subclass") + _u("numpy") + _u("ndarray") + b"\x93" + _u("shape") + b"K\x10\x85"
            + _u("order") + _u("C") + _u("dtype") + _u("numpy") + _u("dtype") + b"\x93" + _u("u1")
            + b"\x89\x88\x87R" + _u("allow_mmap") + b"\x89ub")  # fmt: skip


def joblib_wrapper_made_by_newobj(marker: Path) -> bytes:
    """scikit-learn's newObj(cls), which is cls.__new__(cls): joblib reads the array after its BUILD."""
    wrapper = _u("joblib.numpy_pickle") + _u("NumpyArrayWrapper") + b"\x93"
    head = b"\x80\x04" + _u("sklearn.metrics._dist_metrics") + _u("newObj") + b"\x93" + wrapper + b"\x85R"
    return _raw_swallowing(head + _uint8_state(), marker)


def joblib_wrapper_made_by_torch_rebuild(marker: Path) -> bytes:
    """torch's _rebuild_from_type_v2(copyreg.__newobj__, W, (W,), {}): a wrapper, made through a helper's call."""
    wrapper = _u("joblib.numpy_pickle") + _u("NumpyArrayWrapper") + b"\x93"
    head = (b"\x80\x04" + _u("torch._tensor") + _u("_rebuild_from_type_v2") + b"\x93(" + _u("copyreg")
            + _u("__newobj__") + b"\x93" + wrapper + wrapper + b"\x85}tR")  # fmt: skip
    return _raw_swallowing(head + _uint8_state(), marker)


def joblib_wrapper_behind_many_arguments(marker: Path) -> bytes:
    """The torch helper again, given a state of 300 entries after the class (helper 246): a search of what made the
    object that walked the state first ran out of its budget before it reached the class."""
    wrapper = _u("joblib.numpy_pickle") + _u("NumpyArrayWrapper") + b"\x93"
    big = b"}(" + b"".join(_u(f"a{k}") + b"K\x00" for k in range(300)) + b"u"
    head = (b"\x80\x04" + _u("torch._tensor") + _u("_rebuild_from_type_v2") + b"\x93(" + _u("copyreg")
            + _u("__newobj__") + b"\x93" + wrapper + wrapper + b"\x85" + big + b"tR")  # fmt: skip
    return _raw_swallowing(head + _uint8_state(), marker)


def joblib_wrapper_copied(maker: bytes) -> Callable[[Path], bytes]:
    """A wrapper made as joblib writes it but never built, handed to an allowed function that returns a copy of it
    (copy.deepcopy) or itself (gensim's identity), then built (helper 248): joblib reads an array after any BUILD of a
    wrapper, wscan took the copy for what the function made."""

    def make(marker: Path) -> bytes:
        wrapper = _u("joblib.numpy_pickle") + _u("NumpyArrayWrapper") + b"\x93)\x81"
        return _raw_swallowing(b"\x80\x04" + maker + wrapper + b"\x85R" + _uint8_state(), marker)

    return make


def joblib_nested_stop_inside_frame(marker: Path) -> bytes:
    """An object array's nested pickle whose STOP leaves bytes of its frame: joblib reads on at the frame's end, where
    the payload is; the frame's rest (a new frame, a BINBYTES over the payload, POP, STOP) ends the stream cleanly for
    a reader that goes on after the STOP."""
    array = (_u("numpy._core.multiarray") + _u("_reconstruct") + b"\x93" + _u("numpy") + _u("ndarray") + b"\x93"
             + b"K\x00\x85C\x01b\x87R(K\x01K\x01\x85" + _OBJECT_DTYPE + b"\x89](" + _u("ok") + b"etb.")  # fmt: skip
    payload = _p4_payload(marker)
    second = b"B" + struct.pack("<I", len(payload)) + payload + b"0."
    frame = array + b"\x95" + struct.pack("<Q", len(second)) + b"B" + struct.pack("<I", len(payload))
    nested = b"\x80\x04\x95" + struct.pack("<Q", len(frame)) + frame
    return b"\x80\x04" + _object_wrapper() + nested + payload + b"0."


def plain_reading_exec_gadget(marker: Path) -> bytes:
    """joblib reads builtins.str('ok') in the nested pickle (a fresh memo); a plain unpickler reads the same opcodes
    with the outer memo: six.exec_(<code>). Off the critical list, it was judged by the critical rules alone."""
    code = f"import os; os.mkdir({str(marker)!r})"
    outer = b"\x80\x04" + _u("six") + b"\x94" + _u("exec_") + b"\x94" + _u(code) + b"\x94000" + _object_wrapper()
    nested = (b"\x80\x04" + _u("builtins") + b"\x94" + _u("str") + b"\x94" + _u("ok") + b"\x94000"
              + b"h\x00h\x01\x93h\x02\x85R0" + _u("numpy._core.multiarray") + _u("_reconstruct") + b"\x93"
              + _u("numpy") + _u("ndarray") + b"\x93K\x00\x85C\x01b\x87R(K\x01K\x01\x85" + _OBJECT_DTYPE
              + b"\x89](h\x02etb.")  # fmt: skip
    return outer + nested + b"."


def joblib_lzma_small_dictionary(marker: Path) -> bytes:
    """lzma-alone with a 4 KiB dictionary: the header reads 5d 00 10 00 00; joblib takes any 5d 00 for lzma."""
    import lzma

    filters = [{"id": lzma.FILTER_LZMA1, "dict_size": 4096}]
    return lzma.compress(_pickled(marker), format=lzma.FORMAT_ALONE, filters=filters)


def none_filler(marker: Path) -> bytes:
    """70,000 NONE opcodes before the payload: nothing in the first 64 KiB but harmless opcodes."""
    return b"N" * 70000 + _p0_payload(marker) + b"."


# --- NumPy -------------------------------------------------------------------------------------------------


def npy(array_of: Callable[[Path], np.ndarray], version: tuple[int, int] | None = None) -> Callable[[Path], bytes]:
    def make(marker: Path) -> bytes:
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, array_of(marker), version=version, allow_pickle=True)
        return buffer.getvalue()

    return make


def object_vector(marker: Path) -> np.ndarray:
    return np.array([1, Payload(marker)], dtype=object)


def object_scalar(marker: Path) -> np.ndarray:
    array = np.empty((), dtype=object)
    array[()] = Payload(marker)
    return array


def object_field(marker: Path) -> np.ndarray:
    return np.array([(1.0, Payload(marker))], dtype=[("x", "f8"), ("obj", "O")])


def object_subarray(marker: Path) -> np.ndarray:
    array = np.zeros(1, dtype=[("obj", "O", (2,))])
    array[0]["obj"][1] = Payload(marker)
    return array


def npy_empty_with_payload(marker: Path) -> bytes:
    """An empty object array whose header is followed by a payload pickle: np.load unpickles it anyway."""
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.empty((0,), dtype=object), allow_pickle=True)
    header_end = buffer.getvalue().index(b"\n") + 1
    return buffer.getvalue()[:header_end] + _pickled(marker)


def npy_descr(descr: str) -> Callable[[Path], bytes]:
    """A .npy whose header spells an object dtype some other way NumPy accepts, then a payload pickle."""

    def make(marker: Path) -> bytes:
        header = "{'descr': " + descr + ", 'fortran_order': False, 'shape': (1,), }"
        header += " " * (63 - (10 + len(header)) % 64) + "\n"
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + _pickled(marker)

    return make


def long4_prefixed(marker: Path) -> bytes:
    """A 70,000-byte integer (LONG4), popped, before the payload: the head ends inside the integer's bytes."""
    return b"\x8b" + struct.pack("<i", 70_000) + b"\x01" * 70_000 + b"0" + _pickled(marker)


def long_global_name(marker: Path) -> bytes:
    """A 72 KB dotted name (os.path.os... is os) on a protocol-4 GLOBAL line, past the head."""
    return b"N0\x80\x04cos\n" + b"path.os." * 9_000 + b"mkdir\n(V" + str(marker).encode() + b"\ntR."


def npy_header_then(descr: str, payload: Callable[[Path], bytes], padding: int = 0) -> Callable[[Path], bytes]:
    """A .npy whose header NumPy reads (`descr`, then `padding` spaces) and wscan does not, then `payload`."""

    def make(marker: Path) -> bytes:
        header = "{'descr': " + descr + ", 'fortran_order': False, 'shape': (1,), }" + " " * padding
        header += " " * (63 - (12 + len(header)) % 64) + "\n"
        return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header.encode() + payload(marker)

    return make


def npz(compressed: bool) -> Callable[[Path], bytes]:
    def make(marker: Path) -> bytes:
        buffer = io.BytesIO()
        save = np.savez_compressed if compressed else np.savez
        save(buffer, weights=np.arange(4.0), column=object_vector(marker))
        return buffer.getvalue()

    return make


def npz_member(name: str, **damage: object) -> Callable[[Path], bytes]:
    """An npz whose object member is stored under `name` and damaged by `damage` (Entry fields)."""

    def make(marker: Path) -> bytes:
        member = npy(object_vector)(marker)
        entries = [Entry("weights.npy", npy(lambda _: np.arange(4.0))(marker)), Entry(name, member, **damage)]  # type: ignore[arg-type]
        return build_zip(entries)

    return make


def npz_prefixed(marker: Path) -> bytes:
    with zipfile.ZipFile(io.BytesIO(npz(False)(marker))) as archive:
        entries = [Entry(info.filename, archive.read(info)) for info in archive.infolist()]
    return build_zip(entries, prefix=b"\x00" * 100, adjust=False)


def plain_pickle(marker: Path) -> bytes:
    """np.load falls back to pickle.load for anything that is neither .npy nor zip."""
    return _pickled(marker)


CASES: dict[str, Case] = {
    "joblib-plain": Case("joblib", joblib_dump(0), ".joblib"),
    "joblib-zlib": Case("joblib", joblib_dump(3), ".joblib"),
    "joblib-gzip": Case("joblib", joblib_dump(("gzip", 3)), ".joblib"),
    "joblib-bz2": Case("joblib", joblib_dump(("bz2", 3)), ".joblib"),
    "joblib-lzma": Case("joblib", joblib_dump(("lzma", 3)), ".joblib"),
    "joblib-xz": Case("joblib", joblib_dump(("xz", 3)), ".joblib"),
    "joblib-lz4": Case("joblib", joblib_dump(("lz4", 3)), ".joblib"),
    "joblib-object-array": Case("joblib", joblib_object_array, ".joblib"),
    "joblib-string-array": Case("joblib", joblib_string_array, ".joblib"),
    "joblib-zlib-truncated": Case("joblib", truncated(joblib_dump(3), 4), ".joblib"),
    "joblib-gzip-truncated": Case("joblib", truncated(joblib_dump(("gzip", 3)), 4), ".joblib"),
    "joblib-lz4-truncated": Case("joblib", truncated(joblib_dump(("lz4", 3)), 4), ".joblib"),
    # (not zlib or gzip: joblib's readers spend a minute on trailing bytes before a MemoryError)
    "joblib-plain-trailing": Case("joblib", trailing(joblib_dump(0)), ".joblib"),
    "joblib-bz2-trailing": Case("joblib", trailing(joblib_dump(("bz2", 3))), ".joblib"),
    "joblib-zfile": Case("joblib", zfile(), ".pkl"),
    "joblib-zfile-space": Case("joblib", zfile(space=True), ".pkl"),
    "joblib-zfile-length-spelled-otherwise": Case("joblib", zfile(lambda n: b" +0X0_%x" % n), ".pkl"),
    "joblib-zfile-wrong-length": Case("joblib", zfile(lambda n: b"0x1"), ".pkl"),
    "joblib-zfile-truncated": Case("joblib", zfile(cut=4), ".bin"),
    "joblib-wrong-elsize": Case("joblib", joblib_wrong_elsize, ".joblib"),
    "joblib-alignment-not-none": Case("joblib", joblib_alignment_not_none, ".joblib"),
    "joblib-state-and-slotstate": Case("joblib", joblib_state_and_slotstate, ".joblib"),
    "joblib-object-in-metadata": Case("joblib", joblib_object_in_metadata, ".joblib"),
    "joblib-lzma-small-dictionary": Case("joblib", joblib_lzma_small_dictionary, ".joblib"),
    "joblib-flags-hold-objects": Case("joblib", joblib_flags_hold_objects, ".joblib"),
    "joblib-object-flags-cleared": Case("joblib", joblib_object_flags_cleared, ".joblib"),
    "joblib-empty-object-array": Case("joblib", joblib_empty_object_array, ".joblib"),
    "joblib-wrapper-in-nested-pickle": Case("joblib", joblib_wrapper_in_nested_pickle, ".joblib"),
    "joblib-none-filler": Case("joblib", none_filler, ".pkl"),
    "joblib-wrapper-made-by-newobj": Case("joblib", joblib_wrapper_made_by_newobj, ".joblib"),
    "joblib-wrapper-made-by-torch-rebuild": Case("joblib", joblib_wrapper_made_by_torch_rebuild, ".joblib"),
    "joblib-wrapper-behind-many-arguments": Case("joblib", joblib_wrapper_behind_many_arguments, ".joblib"),
    "joblib-wrapper-deep-copied": Case("joblib", joblib_wrapper_copied(_u("copy") + _u("deepcopy") + b"\x93"), ".pkl"),
    "joblib-nested-stop-inside-frame": Case("joblib", joblib_nested_stop_inside_frame, ".joblib"),
    "numpy-plain-reading-exec-gadget": Case("numpy", plain_reading_exec_gadget, ".npy"),
    "numpy-none-filler": Case("numpy", none_filler, ".npy"),
    "numpy-npy-v1": Case("numpy", npy(object_vector, (1, 0)), ".npy"),
    "numpy-npy-v2": Case("numpy", npy(object_vector, (2, 0)), ".npy"),
    "numpy-npy-v3": Case("numpy", npy(object_vector, (3, 0)), ".npy"),
    "numpy-npy-0d": Case("numpy", npy(object_scalar), ".npy"),
    "numpy-npy-object-field": Case("numpy", npy(object_field), ".npy"),
    "numpy-npy-object-subarray": Case("numpy", npy(object_subarray), ".npy"),
    "numpy-npy-empty-with-payload": Case("numpy", npy_empty_with_payload, ".npy"),
    "numpy-npy-truncated": Case("numpy", truncated(npy(object_vector), 2), ".npy"),
    "numpy-npy-descr-object": Case("numpy", npy_descr("'object'"), ".npy"),
    "numpy-npy-descr-comma-string": Case("numpy", npy_descr("'f8,O'"), ".npy"),
    "numpy-npy-descr-subarray-tuple": Case("numpy", npy_descr("('O', (2,))"), ".npy"),
    # Spellings wscan's own literal reader (not ast.literal_eval, which numpy calls) must read as numpy does:
    "numpy-npy-descr-adjacent-strings": Case("numpy", npy_descr("'|' # the byte order\n 'O'"), ".npy"),
    "numpy-npy-descr-escapes": Case("numpy", npy_descr("'\\x7c\\N{LATIN CAPITAL LETTER O}'"), ".npy"),
    "numpy-npy-descr-crlf-continuation": Case("numpy", npy_descr("'|\\\r\nO'"), ".npy"),
    "numpy-npy-descr-float-title": Case("numpy", npy_descr("[((1.5, 'a'), '|O')]"), ".npy"),
    "numpy-npy-descr-complex-title": Case("numpy", npy_descr("[((-1-2_0j, 'a'), '|O', (0b1,))]"), ".npy"),
    # ... and one it refuses (a bytes title): the pickle after the header is simulated all the same.
    "numpy-npy-descr-bytes-title": Case("numpy", npy_descr("[((b'x', 'a'), '|O')]"), ".npy"),
    # An eighteenth review: numpy reads these headers (wscan does not) and unpickles what follows, which wscan then
    # simulated only when it looked like a pickle from its first 64 KiB; a header past 1 MiB was never read past.
    "numpy-npy-comma-descr-long4-payload": Case("numpy", npy_header_then("'f8,O'", long4_prefixed), ".npy"),
    "numpy-npy-stringdtype-long4-payload": Case("numpy", npy_header_then("'T'", long4_prefixed), ".npy"),
    "numpy-npy-object-long-global-name": Case("numpy", npy_header_then("'object'", long_global_name), ".npy"),
    "numpy-npy-header-past-1-mib": Case("numpy", npy_header_then("'|O'", _pickled, padding=1_100_000), ".npy"),
    "joblib-long4-prefix": Case("joblib", long4_prefixed, ".pkl"),
    "numpy-npz": Case("numpy", npz(False), ".npz"),
    "numpy-npz-compressed": Case("numpy", npz(True), ".npz"),
    "numpy-npz-member-not-named-npy": Case("numpy", npz_member("column"), ".npz"),
    "numpy-npz-crc-wrong": Case("numpy", npz_member("column.npy", crc_local=1, crc_central=1), ".npz"),
    "numpy-npz-data-descriptor": Case("numpy", npz_member("column.npy", descriptor=True), ".npz"),
    "numpy-npz-deflated": Case("numpy", npz_member("column.npy", method=zipfile.ZIP_DEFLATED), ".npz"),
    "numpy-npz-prefixed": Case("numpy", npz_prefixed, ".npz"),
    "numpy-plain-pickle": Case("numpy", plain_pickle, ".npy"),
}

# What the loaders do with each case (a tripwire for loader upgrades; the safety assertion never depends on it).
# Refused before the payload runs: joblib checks a Z-file's length and zlib its end before unpickling, the LZ4
# reader fails on its first read, np.load reads a zip only from byte 0 and checks a
# member's CRC (the member is small enough to be read whole), and pickle reads a truncated .npy whole first.
EXPECTED_EXECUTES = set(CASES) - {
    "joblib-zfile-wrong-length", "joblib-zfile-truncated", "joblib-lz4-truncated",
    "numpy-npz-prefixed", "numpy-npz-crc-wrong", "numpy-npy-truncated",
}  # fmt: skip

LOAD = """
import joblib, numpy as np
def load(path, loader):
    if loader == "joblib":
        joblib.load(path)
        return
    loaded = np.load(path, allow_pickle=True)
    for name in getattr(loaded, "files", ()):  # an npz unpickles a member when it is read
        loaded[name]
"""


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Outcome]]:
    """Every case written to a file and loaded by the real library, each with its own marker."""
    return write_and_load(LOAD, CASES, tmp_path_factory.mktemp("joblib-numpy"), 180)


@pytest.mark.parametrize("case", list(CASES))
def test_wscan_inspects_what_the_loader_runs(loaded: dict[str, tuple[Path, Outcome]], case: str) -> None:
    path, outcome = loaded[case]
    report = scan(path)
    ids = rule_ids(report)
    worst = max((f.severity for f in report.findings), default=Severity.INFO)
    if outcome.executed:
        assert ids & CRITICAL_PICKLE, (
            f"bypass: {CASES[case].loader} ran the payload of {case}, wscan said {sorted(ids)}"
        )
    else:
        assert worst >= Severity.HIGH, f"{case}: the loader refused it ({outcome.result}); wscan said {sorted(ids)}"


def test_loader_behaviour_matches_expectations(loaded: dict[str, tuple[Path, Outcome]]) -> None:
    executed = {name for name, (_, outcome) in loaded.items() if outcome.executed}
    assert executed == EXPECTED_EXECUTES, json.dumps({name: o.result for name, (_, o) in loaded.items()}, indent=1)


def test_zfile_magic_alone_is_not_claimed(tmp_path: Path) -> None:
    """joblib refuses a "ZF" file whose length does not parse, before unpickling: text that happens to start
    with "ZF" is not a corrupt Z-file."""
    path = tmp_path / "notes.txt"
    path.write_bytes(b"ZFS pool notes: scrub weekly\n")
    assert not any(f.rule_id == "WS-ARC-001" for f in scan(path).findings)


def test_legacy_array_wrapper_loads_the_file_it_names(tmp_path: Path) -> None:
    """joblib.load np.loads, with allow_pickle=True, the file a pickled NDArrayWrapper names, even outside the
    model folder: a name that leaves the folder is critical (WS-PKL-034), and no allow entry lowers it."""
    from joblib.numpy_pickle_compat import NDArrayWrapper

    from wscan.config import Config

    marker = tmp_path / "marker"
    (tmp_path / "elsewhere").mkdir()
    np.save(tmp_path / "elsewhere" / "evil.npy", object_vector(marker), allow_pickle=True)
    model = tmp_path / "model" / "model.joblib"
    model.parent.mkdir()
    wrapper = NDArrayWrapper("../elsewhere/evil.npy", np.ndarray, allow_mmap=False)
    model.write_bytes(pickle.dumps({"weights": wrapper}, protocol=2))
    load = "import sys, warnings, joblib; warnings.simplefilter('ignore'); joblib.load(sys.argv[1])"
    subprocess.run([sys.executable, "-I", "-c", load, str(model)], cwd=tmp_path, capture_output=True, timeout=120)
    assert marker.exists()
    name = "joblib.numpy_pickle_compat.NDArrayWrapper"
    for config in (None, Config(allow=frozenset({name}))):
        critical = {(f.rule_id, f.evidence.get("callable")) for f in scan(model.parent, config).findings
                    if f.severity >= Severity.CRITICAL}  # fmt: skip
        assert ("WS-PKL-034", name) in critical


@pytest.mark.parametrize(
    "blob",
    [
        # BUILD sets `read` on the wrapper: joblib calls that instead of its method (found with builtins.slice).
        _wrapper(4, _dtype("f8"), extra=_text("read") + b"cbuiltins\nslice\n") + b"b" + bytes(200) + b".",
        # Built by a call with arguments: __init__ sets the alignment a state may leave out.
        b"\x80\x02cjoblib.numpy_pickle\nNumpyArrayWrapper\n(cnumpy\nndarray\nK\x00\x85"
        + _text("C")
        + _dtype("f8")
        + b"tR"
        + b"}"
        + b"b"
        + bytes(200)
        + b".",
        # An object array that allows mmap: joblib.load(mmap_mode="r") maps its bytes raw, without it unpickles.
        _wrapper(1, _dtype("O8", flags=63)) + b"b" + bytes(200) + b".",
        # A wrapper BUILD inside a protocol 4 frame: joblib reads the array from after the frame.
        b"\x80\x04\x95" + struct.pack("<Q", 400) + _wrapper(0, _dtype("f8"))[2:] + b"b" + bytes(400) + b".",
    ],
    ids=["read-attribute", "built-by-call", "object-array-mmap", "array-inside-frame"],
)
def test_wrapper_forms_joblib_never_writes_fail_closed(tmp_path: Path, blob: bytes) -> None:
    """A bypass hunt proved joblib runs a payload hidden behind each of these; wscan does not emulate them, it
    stops reading there and fails the file (high)."""
    report = scan(_write(tmp_path, blob))
    assert any(f.rule_id == "WS-PKL-008" and f.severity >= Severity.HIGH for f in report.findings)


def _write(folder: Path, blob: bytes) -> Path:
    path = folder / "model.joblib"
    path.write_bytes(blob)
    return path


def test_files_every_joblib_release_wrote_are_read(tmp_path: Path) -> None:
    """joblib ships the files its releases since 0.8 wrote (joblib/test/data), and joblib.load still reads them all.
    Every one is scanned (the 0.8-0.9 compressed ones are Z-files named .gz, once an unknown format); those of
    0.10 and later have no finding at high or above; those of 0.8-0.9 keep their arrays in sibling files, which
    the legacy wrappers np.load with allow_pickle=True: critical (WS-PKL-013), as for any such wrapper."""
    import shutil

    data = Path(joblib.__file__).parent / "test" / "data"
    files = sorted(p for p in data.iterdir() if p.name.startswith("joblib_") and not p.name.endswith(".npy"))
    assert len(files) > 40
    for path in files:
        shutil.copy(path, tmp_path / path.name)
    for sibling in data.glob("joblib_*.npy"):
        shutil.copy(sibling, tmp_path / sibling.name)
    report = scan(tmp_path)
    skipped = [f.path for f in report.files if f.status != "scanned"]
    assert not skipped, skipped
    for result in report.files:
        name = Path(result.path).name
        found = {
            f.rule_id for f in report.findings if Path(f.location.path).name == name and f.severity >= Severity.HIGH
        }
        allowed = {"WS-PKL-013"} if name.startswith(("joblib_0.8", "joblib_0.9")) else set()
        assert found <= allowed, (name, found)


@pytest.mark.parametrize("protocol", range(6))
def test_joblib_dump_at_every_protocol_is_clean(tmp_path: Path, protocol: int) -> None:
    """Protocols 0 and 1 make the wrapper with copyreg._reconstructor(cls, object, None), a call with arguments
    that is not the wrapper's constructor: joblib's own files must not fail closed."""
    path = tmp_path / "model.joblib"
    strings = np.array(["x", "yz"], dtype=np.dtypes.StringDType())
    joblib.dump({"a": np.arange(3.0), "o": np.array(["x", 1], dtype=object), "s": strings}, path, protocol=protocol)
    assert not [f for f in scan(path).findings if f.severity >= Severity.HIGH]
