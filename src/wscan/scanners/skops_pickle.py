"""The pickle equivalent to constructing a skops node tree: each node's value pushed as skops constructs it.

Why a pickle: the pickle scanner already judges every import and call a pickle makes (allowlists, gadget lists,
the checks of scikit-learn's compiled state), so a skops file is judged by the same rules, not a second set. An
ObjectNode is NEWOBJ and BUILD; a DictNode's class is made with no arguments (NEWOBJ) and each key type called on its
key; a ConstructorFromReduceNode, an OperatorFuncNode and a named tuple are calls; a MethodNode is getattr. Arrays are
read from their `.npy` members and written as NumPy pickles them, sparse matrices from their `.npz` members (each key
as NumPy's NpzFile finds it) as a pickled matrix's state, so their index checks apply. A node used twice is memoized;
one that refers back to a node still being written (skops recurses there until it fails) is None.
"""

from __future__ import annotations

import io
import json
import math
import struct
import zipfile
import zlib
from collections.abc import Callable
from functools import partial
from typing import Any

from wscan.scanners.skops_tree import Node, Unfollowed

# NumPy's bit generators, which skops takes by name from numpy.random (it refuses any other class), and the module
# NumPy's own pickles name each by
BIT_GENERATORS = {
    "MT19937": "numpy.random._mt19937", "PCG64": "numpy.random._pcg64", "PCG64DXSM": "numpy.random._pcg64",
    "Philox": "numpy.random._philox", "SFC64": "numpy.random._sfc64",
}

_NUMPY_RECONSTRUCT = ("numpy.core.multiarray", "_reconstruct")


class Writer:
    """Protocol 4 opcodes pushing each node's value as skops constructs it; a node used twice is memoized."""

    def __init__(self, check_time: Callable[[], None]) -> None:
        self.out = io.BytesIO()
        self.memo: dict[int, int] = {}
        self.building: set[int] = set()
        self.arrays: dict[int, tuple[Any, tuple[int, ...], bool, bytes]] = {}
        self.check_time = check_time
        self.written = 0

    def finish(self, root: Node) -> bytes:
        self.out.write(b"\x80\x04")
        self.node(root)
        self.out.write(b".")
        return self.out.getvalue()

    # -- opcodes

    def op(self, code: bytes) -> None:
        self.out.write(code)

    def global_(self, module: str, name: str) -> None:
        self.value(module)
        self.value(name)
        self.op(b"\x93")  # STACK_GLOBAL

    def new(self, module: str, name: str) -> None:
        """module.name() with no arguments, which skops calls where pickle's NEWOBJ makes the instance (a dict
        subclass to fill, a RandomState to seed): nothing from the file reaches the call."""
        self.global_(module, name)
        self.op(b")\x81")

    def call(self, module: str, name: str, args: list[Callable[[], None]]) -> None:
        """module.name(*args), each argument pushed by its function."""
        self.global_(module, name)
        self.tuple_(args)
        self.op(b"R")

    def tuple_(self, items: list[Callable[[], None]]) -> None:
        if not items:
            self.op(b")")  # EMPTY_TUPLE
            return
        if len(items) > 3:
            self.op(b"(")
        for push in items:
            push()
        self.op(b"t" if len(items) > 3 else b"\x85\x86\x87"[len(items) - 1 : len(items)])  # TUPLE, TUPLE1-3

    def list_(self, items: list[Callable[[], None]]) -> None:
        self.op(b"]")
        if items:
            self.op(b"(")
            for push in items:
                push()
            self.op(b"e")

    def remember(self, node: Node) -> None:
        self.op(b"\x94")  # MEMOIZE
        self.memo[id(node)] = len(self.memo)

    def value(self, value: Any) -> None:
        """A plain value as CPython's pickler writes it: what json.loads gives, NumPy's tuples and dtypes."""
        if value is None:
            self.op(b"N")
        elif value is True or value is False:
            self.op(b"\x88" if value else b"\x89")
        elif isinstance(value, int):
            self.integer(value)
        elif isinstance(value, float):
            self.op(b"G" + struct.pack(">d", value))
        elif isinstance(value, str):
            raw = value.encode("utf-8", "surrogatepass")
            self.sized(raw, b"\x8c", b"X", b"\x8d")  # SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
        elif isinstance(value, bytes):
            self.sized(value, b"C", b"B", b"\x8e")  # SHORT_BINBYTES, BINBYTES, BINBYTES8
        elif isinstance(value, tuple):
            self.tuple_([partial(self.value, item) for item in value])
        elif isinstance(value, list):
            self.list_([partial(self.value, item) for item in value])
        elif isinstance(value, dict):
            self.op(b"}")
            if value:
                self.op(b"(")
                for key, item in value.items():
                    self.value(key)
                    self.value(item)
                self.op(b"u")
        else:
            self.dtype(value)

    def integer(self, value: int) -> None:
        if 0 <= value < 256:
            self.op(b"K" + bytes([value]))
        elif 0 <= value < 65536:
            self.op(b"M" + struct.pack("<H", value))
        elif -(2**31) <= value < 2**31:
            self.op(b"J" + struct.pack("<i", value))
        else:
            raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
            if len(raw) < 256:
                self.op(b"\x8a" + bytes([len(raw)]) + raw)  # LONG1
            else:
                self.op(b"\x8b" + struct.pack("<I", len(raw)) + raw)  # LONG4

    def sized(self, raw: bytes, short: bytes, medium: bytes, large: bytes) -> None:
        if len(raw) < 256:
            self.op(short + bytes([len(raw)]) + raw)
        elif len(raw) < 2**32:
            self.op(medium + struct.pack("<I", len(raw)) + raw)
        else:
            self.op(large + struct.pack("<Q", len(raw)) + raw)

    def dtype(self, dtype: Any) -> None:
        """A NumPy dtype as NumPy pickles it: dtype(kind, False, True), then BUILD with its state."""
        _, args, state = dtype.__reduce__()
        self.call("numpy", "dtype", [partial(self.value, arg) for arg in args])
        self.value(state)
        self.op(b"b")

    # -- nodes

    def node(self, node: Node) -> None:
        key = id(node)
        if key in self.memo:
            index = self.memo[key]
            self.op(b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index))  # BINGET
            return
        if key in self.building:
            self.op(b"N")  # skops recurses into itself here and fails; what it called on the way is written
            return
        self.written += 1
        if self.written % 4096 == 0:
            self.check_time()
        self.building.add(key)
        getattr(self, f"_{node.loader}")(node)  # a name in LOADERS: the builder refused any other
        self.building.discard(key)
        if key not in self.memo:
            self.remember(node)

    def array_of(self, node: Node) -> tuple[Any, tuple[int, ...], bool, bytes]:
        """An array node's .npy member, read once however often the node is written or its dtype taken."""
        key = id(node)
        if key not in self.arrays:
            self.arrays[key] = npy_array(node.children["data"], node.path)
        return self.arrays[key]

    def child(self, node: Node, role: str) -> Callable[[], None]:
        return partial(self.node, node.children[role])

    def _JsonNode(self, node: Node) -> None:
        content = node.state["content"]
        if not isinstance(content, str):
            raise Unfollowed("a JsonNode's content is not text", node.path)
        try:
            self.value(json.loads(content))
        except (ValueError, RecursionError):
            raise Unfollowed("a JsonNode's content is not JSON", node.path) from None

    def _FunctionNode(self, node: Node) -> None:
        if "also" in node.children:  # what skops 0.4 and 0.5 import, the rest of the file read as later ones do
            self.global_(*node.children["also"])
            self.op(b"0")
        self.global_(node.module, node.name)

    def _TypeNode(self, node: Node) -> None:
        self.global_(node.module, node.name)

    def _container(self, node: Node, plain: tuple[str, str], empty: bytes, add: bytes) -> None:
        items: list[Node] = node.children["content"]
        if (node.module, node.name) == plain:
            self.op(empty)
            self.remember(node)
            self.op(b"(")
            for item in items:
                self.node(item)
            self.op(add)
            return
        # the class is called with the items as a list
        self.call(node.module, node.name, [partial(self.list_, [partial(self.node, item) for item in items])])

    def _ListNode(self, node: Node) -> None:
        self._container(node, ("builtins", "list"), b"]", b"e")

    def _SetNode(self, node: Node) -> None:
        self._container(node, ("builtins", "set"), b"\x8f", b"\x90")

    def _TupleNode(self, node: Node) -> None:
        items: list[Node] = node.children["content"]
        plain = (node.module, node.name) == ("builtins", "tuple")
        if not plain:
            self.global_(node.module, node.name)  # imported; a namedtuple is called with the items
        self.tuple_([partial(self.node, item) for item in items])
        if not plain:
            self.op(b"R")

    def _DictNode(self, node: Node) -> None:
        if (node.module, node.name) == ("builtins", "dict"):
            self.op(b"}")
        else:
            self.new(node.module, node.name)
        self.remember(node)
        key_types: Node = node.children["key_types"]
        types = self._key_types(key_types)
        content: dict[str, Node] = node.children["content"]
        self.op(b"(")
        for key_type, (key, value) in zip(types, content.items(), strict=False):
            self._key(key_type, key)
            self.node(value)
        self.op(b"u")

    def _key_types(self, key_types: Node) -> list[Node]:
        """The key types, which skops zips with the items: a list of type nodes in every file skops writes."""
        if key_types.loader != "ListNode" or (key_types.module, key_types.name) != ("builtins", "list"):
            raise Unfollowed("a DictNode's key_types is not a list", key_types.path)
        self.node(key_types)  # built, so every name in it is judged
        self.op(b"0")  # POP
        return list(key_types.children["content"])

    def _key(self, key_type: Node, key: str) -> None:
        if key_type.loader == "TypeNode" and (key_type.module, key_type.name) == ("builtins", "str"):
            self.value(key)
            return
        self.node(key_type)  # k_type(key): whatever the node is, it is called on the key
        self.tuple_([partial(self.value, key)])
        self.op(b"R")

    def _DefaultDictNode(self, node: Node) -> None:
        self.call("collections", "defaultdict", [self.child(node, "default_factory"), self.child(node, "main")])

    def _SliceNode(self, node: Node) -> None:
        content = node.state["content"]
        self.call("builtins", "slice", [partial(self.value, content[role]) for role in ("start", "stop", "step")])

    def _PartialNode(self, node: Node) -> None:
        self.call("functools", "partial", [self.child(node, "func")])
        self.tuple_([self.child(node, role) for role in ("func", "args", "kwds", "namespace")])
        self.op(b"b")

    def _ConstructorFromReduceNode(self, node: Node) -> None:
        self.global_(node.module, node.name)
        self._arguments(node.children["content"])
        self.op(b"R")

    def _arguments(self, args: Node) -> None:
        """A node given to a call as `*args`: a tuple or list node's items, as a tuple."""
        if args.loader not in ("TupleNode", "ListNode"):
            raise Unfollowed(f"call arguments come from a {args.loader}", args.path)
        self.node(args)  # built, so the names it holds are judged (a named tuple's class is)
        self.op(b"0")
        self.tuple_([partial(self.node, item) for item in args.children["content"]])

    def _ObjectNode(self, node: Node) -> None:
        self.global_(node.module, node.name)
        self.op(b")\x81")  # cls.__new__(cls)
        self.remember(node)
        if "attrs" in node.children:
            self.node(node.children["attrs"])
            self.op(b"b")  # __setstate__, else __dict__.update

    def _MethodNode(self, node: Node) -> None:
        func = node.children["func"]
        self.call("builtins", "getattr", [self.child(node, "obj"), partial(self.value, func)])

    def _OperatorFuncNode(self, node: Node) -> None:
        self.global_("operator", node.name)
        self._arguments(node.children["attrs"])
        self.op(b"R")

    def _BytesNode(self, node: Node) -> None:
        self.value(node.children["data"])

    def _BytearrayNode(self, node: Node) -> None:
        self.call("builtins", "bytearray", [partial(self.value, node.children["data"])])

    def _reduce(self, node: Node, constructor: tuple[str, str]) -> None:
        self.global_(*constructor)
        self._arguments(node.children["args"])
        self.op(b"R")
        self.remember(node)
        self.node(node.children["attrs"])
        self.op(b"b")

    def _TreeNode(self, node: Node) -> None:
        self._reduce(node, ("sklearn.tree._tree", "Tree"))

    def _LossNode(self, node: Node) -> None:
        self._reduce(node, (node.module, node.name))

    _SGDNode = _LossNode

    def _NdArrayNode(self, node: Node) -> None:
        if "data" in node.children:
            array = self.array_of(node)
            plain = (node.module, node.name) == ("numpy", "ndarray")
            if not plain:
                self.global_(node.module, node.name)  # gettype(...)(array)
                self.op(b"(")
            self._array(array[0], array[1], array[2], partial(self.value, array[3]))
            if not plain:
                self.op(b"tR")
            return
        items: list[Node] = node.children["items"]
        self.node(node.children["shape"])  # constructed by skops, so written
        self.op(b"0")
        shape, flat = _object_layout(items, node.children["shape"])

        objects = partial(self.list_, [partial(self.node, item) for item in flat])
        self._array(_object_dtype(), shape, False, objects)

    def _array(self, dtype: Any, shape: tuple[int, ...], fortran: bool, data: Callable[[], None]) -> None:
        ndarray = partial(self.global_, "numpy", "ndarray")
        self.call(*_NUMPY_RECONSTRUCT, [ndarray, partial(self.value, (0,)), partial(self.value, b"b")])
        self.tuple_([partial(self.value, 1), partial(self.value, shape), partial(self.dtype, dtype),
                     partial(self.value, fortran), data])
        self.op(b"b")

    def _MaskedArrayNode(self, node: Node) -> None:
        self.call("numpy.ma.core", "MaskedArray", [self.child(node, "data"), self.child(node, "mask")])

    def _RandomStateNode(self, node: Node) -> None:
        self.new(node.module, node.name)
        self.remember(node)
        self.node(node.children["content"])
        self.op(b"b")  # set_state

    def _RandomGeneratorNode(self, node: Node) -> None:
        state: Node = node.children["bit_generator"]
        name = _bit_generator_name(state)
        if not isinstance(name, str) or name not in BIT_GENERATORS:
            raise Unfollowed(f"bit generator {name!r} is not one NumPy has", node.path)
        if "seed_seq" in node.children:
            self.node(node.children["seed_seq"])  # SeedSequence(**state)
            self.op(b"0")
        self.global_(node.module, node.name)  # cls(bit_generator=...), the bit generator as NumPy pickles one
        self.op(b"(")
        self.call("numpy.random._pickle", "__bit_generator_ctor", [partial(self.global_, BIT_GENERATORS[name], name)])
        self.node(state)
        self.op(b"b")
        self.op(b"tR")

    def _DTypeNode(self, node: Node) -> None:
        content: Node = node.children["content"]
        if content.loader != "NdArrayNode" or "data" not in content.children:
            raise Unfollowed("a DTypeNode's content is not an array file", node.path)
        self.node(content)  # constructed first, whatever class it names (a call when that is not ndarray)
        self.op(b"0")
        self.dtype(self.array_of(content)[0])

    def _SparseMatrixNode(self, node: Node) -> None:
        """load_npz of the member: the class named by its `format` (the node's own names are only audited, written
        first so they are judged too), given the member's arrays. Written as a pickled matrix's state, so the
        checks of a pickled matrix's indices apply (scipy's constructor checks their lengths, not their bounds)."""
        self.global_(node.module, node.name)
        self.op(b"0")
        fmt, array, arrays, shape = sparse_npz(node.children["data"], node.path)
        module = f"scipy.sparse._{fmt}"
        self.global_("copyreg", "__newobj__")
        self.tuple_([partial(self.global_, module, f"{fmt}_{'array' if array else 'matrix'}")])
        self.op(b"R")
        self.op(b"}(")
        self.value("_shape")
        self.value(shape)
        for key, (dtype, dims, fortran, raw) in arrays.items():
            self.value(key)
            self._array(dtype, dims, fortran, partial(self.value, raw))
        self.op(b"ub")

    def _CachedNode(self, node: Node) -> None:
        self.node(node.children["cached"])


def _bit_generator_name(state: Node) -> object:
    """The name skops reads from a generator's raw state (content, bit_generator, content: JSON text). The class it
    then takes must be a NumPy bit generator, so this only decides which of them is written."""
    try:
        return json.loads(state.state["content"]["bit_generator"]["content"])
    except (KeyError, TypeError, ValueError, RecursionError):
        return None


# load_npz: the arrays each format's constructor takes, by their member names, and the state keys a pickle keeps them
# under (COO's coordinates as `coords`, which pickle_native_scipy reads as the row and column arrays)
SPARSE_ARRAYS = {
    "csr": ("data", "indices", "indptr"), "csc": ("data", "indices", "indptr"), "bsr": ("data", "indices", "indptr"),
    "dia": ("data", "offsets"), "coo": ("data", "row", "col"),
}
MAX_NPZ_MEMBERS = 16  # save_npz writes at most six


def sparse_npz(data: bytes, path: str) -> tuple[str, bool, dict[str, Any], tuple[int, ...]]:
    """(format, whether a sparse array, arrays by state key, shape) of a save_npz member, as load_npz reads it:
    each key looked up as NumPy's NpzFile does (a member named exactly so before `<key>.npy`)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as npz:
            names = npz.namelist()
            if len(names) > MAX_NPZ_MEMBERS:
                raise Unfollowed(f"a sparse matrix member of {len(names)} entries", path)
            keys = {name.removesuffix(".npy"): name for name in names}
            keys.update({name: name for name in names})

            def array(key: str) -> tuple[Any, tuple[int, ...], bool, bytes] | None:
                return npy_array(npz.read(keys[key]), f"{path} ({keys[key]})") if key in keys else None

            fmt = _text_item(array("format"))
            if fmt not in SPARSE_ARRAYS:
                raise Unfollowed(f"a sparse matrix member of format {fmt!r}", path)
            coords = array("coords") if fmt == "coo" else None
            wanted = ("data",) if coords is not None else SPARSE_ARRAYS[fmt]
            found = {key: array(key) for key in (*wanted, "shape")}
            is_array = _truthy(array("_is_array"), path)
    except (zipfile.BadZipFile, OSError, ValueError, RuntimeError, EOFError, NotImplementedError, zlib.error) as exc:
        raise Unfollowed(f"a sparse matrix member: {exc}"[:200], path) from None
    arrays = {key: value for key, value in found.items() if value is not None}
    if len(arrays) != len(found):
        raise Unfollowed(f"a sparse matrix member without {sorted(set(found) - set(arrays))}", path)
    dtype, dims, _, raw = arrays.pop("shape")
    if dtype.kind not in "iu" or dims != (2,):
        raise Unfollowed("a sparse matrix member whose shape is not two integers", path)
    import numpy

    shape = tuple(int(v) for v in numpy.frombuffer(raw, dtype=dtype))
    if coords is not None:  # (2, n) coordinates: the row and the column arrays
        cdtype, cdims, fortran, craw = coords
        if len(cdims) != 2 or cdims[0] != 2 or fortran:
            raise Unfollowed("a COO member whose coords are not two rows", path)
        half = len(craw) // 2
        arrays["row"], arrays["col"] = (cdtype, cdims[1:], False, craw[:half]), (cdtype, cdims[1:], False, craw[half:])
    return fmt, is_array, arrays, shape


def _truthy(array: tuple[Any, tuple[int, ...], bool, bytes] | None, path: str) -> bool:
    """`if loaded.get('_is_array')`: absent is False; a one-item array is its item; more items make numpy raise."""
    if array is None:
        return False
    dtype, dims, _, raw = array
    if math.prod(dims) != 1 or dtype.hasobject or dtype.fields is not None:
        raise Unfollowed("a sparse matrix member whose _is_array is not one value", path)
    import numpy

    return bool(numpy.frombuffer(raw, dtype=dtype)[0])


def _text_item(array: tuple[Any, tuple[int, ...], bool, bytes] | None) -> str | None:
    """The one string a 0-d array of bytes or text holds (save_npz's `format`), or None."""
    if array is None:
        return None
    dtype, dims, _, raw = array
    if dims != () or dtype.kind not in "SU":
        return None
    import numpy

    value = numpy.frombuffer(raw, dtype=dtype)[0]
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def _object_layout(items: list[Node], shape_node: Node) -> tuple[tuple[int, ...], list[Node]]:
    """The shape and flat items of an object array skops builds from JSON: a 1-D one holds the items as they are;
    for more dimensions np.array(items, dtype=object) descends through the nested lists, which are plain list nodes
    in what skops writes. Anything else is written as a 1-D array of the items (every node still judged)."""
    shape = _json_ints(shape_node)
    if shape is None or len(shape) < 2 or len(shape) > 32:
        return (len(items),), items
    level = items
    for size in shape[1:]:
        if any(n.loader != "ListNode" or (n.module, n.name) != ("builtins", "list") for n in level):
            return (len(items),), items
        if any(len(n.children["content"]) != size for n in level):
            return (len(items),), items
        level = [child for n in level for child in n.children["content"]]
    if shape[0] != len(items):
        return (len(items),), items
    return shape, level


def _json_ints(node: Node) -> tuple[int, ...] | None:
    """A tuple node of JSON integers (an array's shape), or None."""
    if node.loader != "TupleNode":
        return None
    values: list[int] = []
    for item in node.children["content"]:
        content = item.state.get("content") if item.loader == "JsonNode" else None
        try:
            value = json.loads(content) if isinstance(content, str) else None
        except ValueError:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return None
        values.append(value)
    return tuple(values)


def _object_dtype() -> Any:
    import numpy

    return numpy.dtype("O")


def npy_array(data: bytes, path: str) -> tuple[Any, tuple[int, ...], bool, bytes]:
    """(dtype, shape, Fortran order, the items' bytes) of an .npy member, as np.load(allow_pickle=False) reads it."""
    import numpy
    from numpy.lib import format as npy_format

    from wscan.scanners.numpy import read_header

    header, start = read_header(io.BytesIO(data), len(data))
    if isinstance(header, str):
        raise Unfollowed(f"an array member: {header}", path)
    shape, fortran = header["shape"], header["fortran_order"]
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise Unfollowed("an array member's shape is not a tuple of sizes", path)
    if not isinstance(fortran, bool):
        raise Unfollowed("an array member's fortran_order is not a bool", path)
    try:
        dtype = npy_format.descr_to_dtype(header["descr"])  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError, RecursionError):
        raise Unfollowed(f"an array member's descr {str(header['descr'])[:80]!r} is not a dtype", path) from None
    if dtype.hasobject:
        raise Unfollowed("an array member holds objects, which np.load refuses without allow_pickle", path)
    count = math.prod(shape)
    needed = count * dtype.itemsize
    if len(data) - start < needed:
        raise Unfollowed(f"an array member holds {len(data) - start} bytes of the {needed} its header needs", path)
    del numpy
    return dtype, shape, fortran, data[start : start + needed]
