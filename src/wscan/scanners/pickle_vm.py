"""Symbolic execution of a pickle opcode stream: what loading it would import and call.

Nothing is ever imported or called. Values are stand-ins (`Global`, `Obj`, containers of them), so the
machine can follow names kept in the memo, calls whose results are later called or built upon, copyreg
extension codes registered by the same stream, and persistent ids (how PyTorch refers to storages).

The values it works on are in `pickle_values`; what it notes about the calls and states it meets, in
`pickle_zones`, `pickle_config_targets` and `pickle_states`.
"""

from __future__ import annotations

import _compat_pickle
import re
import struct
from collections.abc import Callable

from wscan.limits import BudgetExceeded, Limits
from wscan.scanners.omegaconf_resolvers import TOO_MANY_RESOLVERS, ResolverCall, resolver_calls
from wscan.scanners.pickle_arrow import (
    ARROW_CALLS,
    BYTEARRAY,
    INDIRECT,
    MAX_ARRAYS,
    RESTORE_ARRAY,
    SCALAR,
    frozen,
    null_scalar_bytes,
)
from wscan.scanners.pickle_calls import (
    ARRAY_DATA,
    ARRAY_DATA_SLACK,
    ARRAY_MAKERS_BUILT,
    COPYING_MAKERS,
    NULL_FILL,
    NULL_FILL_SLACK,
    Tally,
    amplified_call,
    array_data_length,
    copied_length,
    iterated_bytes,
)
from wscan.scanners.pickle_config_targets import (
    _config_pairs,
    _config_targets,
    _list_items_set,
    check_architectures,
    check_hyperparameters,
)
from wscan.scanners.pickle_dtypes import forged_dtype_flags
from wscan.scanners.pickle_jax import FROZEN_DICT, RECONSTRUCT_ARRAY, forged_jax_array, shared_frozen_dicts
from wscan.scanners.pickle_native import (
    FROMBUFFER_MAKERS,
    INDEX_HELPERS,
    NEWOBJ_HELPERS,
    PANDAS_CHECKED,
    PANDAS_MAKERS,
    pandas_class,
    record_buffer,
    record_pandas,
    record_statespace,
)
from wscan.scanners.pickle_native import record as record_native
from wscan.scanners.pickle_ops import OPCODES, READERS, FrameOverrun, LongBytes, PickleSyntaxError, Stream, Truncated
from wscan.scanners.pickle_states import (
    _class_like,
    _dunder_items,
    _judge_state,
    _note_items,
    _state_from_call,
    check_model_package,
    check_script_objects,
    check_states,
    forged_counter,
    note_script_object,
)
from wscan.scanners.pickle_ultralytics import check_ultralytics
from wscan.scanners.pickle_values import (
    _ARRAY_REBUILDERS,
    _RESTORED_POSITIONS,
    _STR_CLASSES,
    CHANGED,
    MAX_IMPORT_SITES,
    MAX_ITEMS,
    REBUILD_FROM_TYPE,
    Const,
    Dict,
    Event,
    Global,
    ImportRecord,
    Obj,
    OutOfBand,
    Persistent,
    PickleResult,
    Seq,
    Sym,
    Unknown,
    _const,
    _keep,
    _nested_bytes,
    describe,
    restored_class,
)
from wscan.scanners.pickle_zones import WHOLE_ZONES, _computed_text, _time_state, _zone_files

# Opcode names by byte ("" for bytes that are not opcodes), and the groups the machine treats alike.
NAMES = [OPCODES[code].name if code in OPCODES else "" for code in range(256)]
_CONSTANTS = frozenset({
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT", "STRING", "BINSTRING",
    "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE",
    "BINUNICODE8", "BYTEARRAY8",
})  # fmt: skip
_PY2_STRINGS = frozenset({"STRING", "BINSTRING", "SHORT_BINSTRING"})
# The attributes NumPy (and torch, CuPy, Numba) make an array of: `__array_interface__`'s `data` is a raw memory
# address, `__array_struct__` a C struct holding one. Given to an object as an attribute, however (a state, the items
# of a dict whose items are attributes, pairs a constructor takes, a module's buffers: helper 223 found nine ways),
# the next np.asarray of the object reads where the file chose; no writer spells them, so the text is what is judged
# (WS-PKL-062), as text or bytes (str(b"...", "ascii") makes the text).
_POINTERS = ("__array_interface__", "__array_struct__", "__cuda_array_interface__")
POINTER_NAMES = frozenset({*_POINTERS, *(name.encode() for name in _POINTERS)})
_MEMO_PUT = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_MEMO_GET = frozenset({"GET", "BINGET", "LONG_BINGET"})
_SMALL_TUPLES = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}
_EMPTY = {"EMPTY_LIST": "list", "EMPTY_TUPLE": "tuple", "EMPTY_SET": "set", "EMPTY_DICT": "dict"}
_SET_ITEMS = frozenset({"SETITEM", "SETITEMS"})
_APPENDS = frozenset({"APPEND", "APPENDS", "ADDITEMS"})
_SINGLETONS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
# Fixed-width numbers by opcode byte (BINFLOAT, BININT, BININT1, BININT2): a run of one of them is matched and
# unpacked in one go. Lists of numbers (metrics, shapes, sizes) are such runs; a loop turn per number was most of
# the time spent on them.
_RUNS: dict[int, tuple[re.Pattern[bytes], struct.Struct]] = {
    code[0]: (re.compile(b"(?:%s.{%d})+" % (code, size), re.DOTALL), struct.Struct(layout))
    for code, size, layout in ((b"G", 8, ">xd"), (b"J", 4, "<xi"), (b"K", 1, "<xB"), (b"M", 2, "<xH"))
}


def map_py2_name(module: str, name: str) -> tuple[str, str]:
    """Apply the Python 2 -> 3 name mapping that find_class applies to protocols 0-2."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


# Allowlisted callables that call or instantiate one of their positional arguments. "call" runs it (a function,
# or a class's __init__); "new" only makes an instance (cls.__new__(cls)). A name there is judged as called;
# anything else there (the result of a call: an object with __call__) is a call of a computed value, which is how
# an allowed helper would otherwise launder a call (numpy's __generator_ctor(name, ctor) runs ctor(name)).
FORWARDERS: dict[str, tuple[tuple[int, str], ...]] = {
    "copyreg.__newobj__": ((0, "new"),),
    "copyreg.__newobj_ex__": ((0, "new"),),
    "copyreg._reconstructor": ((0, "new"), (1, "call")),  # base.__new__(cls), then base.__init__(obj, state)
    "numpy.random._pickle.__generator_ctor": ((1, "call"),),
    "numpy.random._pickle.__randomstate_ctor": ((1, "call"),),
    "numpy.random._pickle.__bit_generator_ctor": ((0, "call"),),
    "torch._tensor._rebuild_from_type_v2": ((0, "call"),),
    # partial(F, ...) and defaultdict(F) call F later, with no opcode of their own: a defaultdict's factory runs
    # on the first missing key, and allowlisted code looks keys up at load (NumPy's bit-generator state setter).
    # Calling the partial is calling F, so a partial passed on needs no second judgement (see `_forward`).
    "functools.partial": ((0, "call"),),
    "collections.defaultdict": ((0, "call"),),
    # pandas' index rebuilders call their first argument's __new__, _simple_new or from_arrays.
    "pandas.core.indexes.base._new_Index": ((0, "new"),),
    "pandas.core.indexes.datetimes._new_DatetimeIndex": ((0, "new"),),
    "pandas.core.indexes.timedeltas._new_TimedeltaIndex": ((0, "new"),),
    "pandas.core.indexes.interval._new_IntervalIndex": ((0, "call"),),
    "jax._src.array._reconstruct_array": ((0, "call"),),  # fun(*args): NumPy's _reconstruct, as JAX writes it
}
PARTIAL = "functools.partial"
NESTED_LOADER = "torch.storage._load_from_bytes"  # loads its bytes with torch's loader, weights_only off
STORAGE_INFO = "torch.distributed.checkpoint.filesystem._StorageInfo"  # where dcp.load reads an item (dcp.py)
MAX_STORAGE_INFOS = 1_000_000
GETATTR = "builtins.getattr"
# cloudpickle's _builtin_type(name): `getattr(types, name)` ("ClassType": type), as cloudpickle and the copies of it
# that joblib, spaCy's srsly, numba and Ray ship write a class of the types module (MethodType, CodeType, ...).
TYPE_LOOKUPS = frozenset(
    f"{package}cloudpickle.{module}._builtin_type"
    for package in ("", "joblib.externals.", "srsly.", "numba.", "ray.", "pyspark.")
    for module in ("cloudpickle", "cloudpickle_fast")
)
METHOD_TYPE = "types.MethodType"  # MethodType(function, obj): the function bound to obj, nothing called
BOUND_BY_METHOD_TYPE = f"CALL via {METHOD_TYPE}"  # how a function MethodType binds is invoked (`Machine._bind`)
MAX_RESOLVERS = 1000  # distinct resolver names reported per file; past it, one TOO_MANY_RESOLVERS


# Allowlisted functions that return their first argument: TorchScript's list and type-tag helpers.
IDENTITY_FUNCTIONS = frozenset(
    f"torch.jit._pickle.{name}"
    for name in ("build_intlist", "build_tensorlist", "build_doublelist", "build_boollist", "restore_type_tag")
)


def _module_class(value: Persistent) -> Sym:
    """What a legacy torch.save persistent id ('module', cls, source_file, source) stands for: `cls` itself.

    torch.load's legacy persistent_load returns the id's second item for such an id, whatever it is (torch.save writes
    one for every nn.Module class of a whole-model save), so calling it calls `cls`, and a BUILD on an object given
    there is a BUILD on that object (helper 260 gave a SciPy distribution its template so). The kind is decoded first
    when it is bytes (helper 262 wrote b'module'); a kind the stream computes may be either, so it counts as 'module'.
    No other loader returns anything for a persistent id: plain pickle refuses it, torch's zip loader accepts only
    storages."""
    if isinstance(value.pid, Seq) and len(value.pid.items) >= 2:
        kind, cls = value.pid.items[0], value.pid.items[1]
        if not isinstance(kind, Const) or kind.value in ("module", b"module"):
            return cls
    return value


def _is_partial(value: Sym) -> bool:
    return isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted == PARTIAL


def _partial_function(value: Obj) -> Sym | None:
    """The function a partial calls, through partials of partials: what its BUILD state names, else its first
    argument."""
    for _ in range(MAX_FORWARD_DEPTH):
        state, args = value.state, value.args
        if isinstance(state, Seq) and state.items:
            inner: Sym | None = state.items[0]
        else:
            inner = args.items[0] if isinstance(args, Seq) and args.items else None
        if not isinstance(inner, Obj) or not _is_partial(inner):
            return inner
        value = inner
    return None


# How many values `check_partials` walks at most; past it, every partial counts as kept elsewhere.
MAX_PARTIAL_WALK = 1_000_000


def check_partials(res: PickleResult) -> None:
    """Where each functools.partial of a named function sits once the stream is done, for the rules: the attribute of
    the object whose state holds it (`Class.attribute`), or `<elsewhere>` for any other place (a list, a dict's key
    or item, a call's arguments, the result) and `<nowhere>` for one nothing keeps. A few functions are allowed only
    inside a partial kept in one attribute that their library never calls once the file is saved (FLAML's search
    keeps its training function so): anywhere else, in an attribute another library calls (FunctionTransformer's
    `func`) or a list it iterates, it is the function called with what the file chose (WS-PKL-069). A container
    whose items past what the machine keeps may hold one, or a walk past MAX_PARTIAL_WALK, counts as elsewhere."""
    if PARTIAL not in res.imports or res.result is None:
        return
    places: dict[int, tuple[Obj, set[str]]] = {}
    seen: set[tuple[int, str]] = set()
    unsure = False
    todo: list[tuple[Sym, str]] = [(res.result, "<elsewhere>")]
    walked = 0
    while todo:
        value, place = todo.pop()
        walked += 1
        if walked > MAX_PARTIAL_WALK:
            unsure = True
            break
        partial = isinstance(value, Obj) and _is_partial(value)
        if partial and isinstance(value, Obj):
            places.setdefault(id(value), (value, set()))[1].add(place)
        if (id(value), place if partial else "") in seen:
            continue
        seen.add((id(value), place if partial else ""))
        if isinstance(value, Obj):
            todo.append((value.func, "<elsewhere>"))
            todo.append((value.args, "<elsewhere>"))
            state = value.state
            owner = restored_class(value)
            if isinstance(state, Dict) and (id(state), f"state of {owner}") not in seen:
                # as this object's attributes; the same dict reached as a value elsewhere is walked as one too
                seen.add((id(state), f"state of {owner}"))
                unsure = unsure or _past_unsure(state, todo)
                for key, item in state.items:
                    name = key.value if isinstance(key, Const) and isinstance(key.value, str) else None
                    todo.append((key, "<elsewhere>"))
                    todo.append((item, "<elsewhere>" if name is None else f"{owner}.{name[:200]}"))
            elif state is not None and not isinstance(state, Dict):
                todo.append((state, "<elsewhere>"))
        elif isinstance(value, Seq):
            unsure = unsure or value.heavy_past
            todo.extend((item, "<elsewhere>") for item in value.items)
        elif isinstance(value, Dict):
            unsure = unsure or _past_unsure(value, todo)
            todo.extend((part, "<elsewhere>") for pair in value.items for part in pair)
    for obj, found in places.values():
        inner = _partial_function(obj)
        if not isinstance(inner, Global):
            continue
        record = res.imports.get(inner.dotted)
        at = record.offset if record is not None else res.start
        kept = sorted(found | ({"<elsewhere>"} if unsure else set())) or ["<nowhere>"]
        for place in kept:
            attrs: dict[str, str | int | bool] = {"function": inner.dotted, "member": place}
            res.events.append(Event("pickle.partial_kept", at, attrs))


def _past_unsure(mapping: Dict, todo: list[tuple[Sym, str]]) -> bool:
    """Whether a dict's items past what the machine keeps may hide a partial: their kinds are walked when known."""
    past = mapping.past_items()
    if past is None:
        return True
    todo.extend((part, "<elsewhere>") for pair in past for part in pair)
    return False


def _is_defaultdict(value: Sym) -> bool:
    return isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted == "collections.defaultdict"


def _newobj_partial(func: Global, args: Sym) -> Obj | None:
    """The partial that copyreg.__newobj__(functools.partial, F, ...) makes, if that is the call."""
    if func.dotted not in NEWOBJ_HELPERS or not isinstance(args, Seq) or not args.items:
        return None
    made = Obj(args.items[0], Seq("tuple", args.items[1:]))
    return made if _is_partial(made) else None


def _method_type_args(func: Global, args: Sym, how: str) -> Sym | None:
    """What types.MethodType is given, however the stream makes one: MethodType(F, obj) by REDUCE or NEWOBJ,
    NEWOBJ_EX(MethodType, (F, obj), {}), or copyreg's __newobj__(MethodType, F, obj) and __newobj_ex__(MethodType,
    (F, obj), {}) (review 71 bound print so); else None."""
    items = args.items if isinstance(args, Seq) else []
    if func.dotted == METHOD_TYPE:
        return items[0] if how == "NEWOBJ_EX" and items else args
    helper = func.dotted in NEWOBJ_HELPERS
    if not (helper and items and isinstance(items[0], Global) and items[0].dotted == METHOD_TYPE):
        return None
    if func.dotted == "copyreg.__newobj__":
        return Seq("tuple", items[1:])
    return items[1] if len(items) > 1 else Seq("tuple", [])


# Cython's __pyx_unpickle_<Class>(type, checksum, state) and scikit-learn's newObj(cls): cls.__new__ only.
_NEW_HELPERS = ("__pyx_unpickle_", "newObj")


# Names pickle looks up on an instance to rebuild it, by the opcode that looks them up.
APPEND_METHODS = {"APPEND": ("append",), "APPENDS": ("extend", "append"), "ADDITEMS": ("add",)}
INSTANCE_LOOKUPS = frozenset({"__setstate__", "append", "extend", "add"})

TIME_CHECK_MASK = 0x3FF  # the deadline is looked at every 1,024 opcodes

MAX_GIVEN_VISITS = 256  # containers looked into for the dicts a BUILD or a pandas helper takes
MAX_GIVEN_DEPTH = 4  # ... this many levels down (pandas 1's frame state holds its blocks' dicts at the fourth)
MAX_FORWARD_DEPTH = 32  # forwarders passed to forwarders: each level is one nesting of the stream's tuples


def _inner_call(func: Global, args: Seq) -> tuple[Global, Seq] | None:
    """The forwarder and arguments that `func(*args)` calls in turn, if its forwarded callable forwards too."""
    items = args.items
    if func.dotted == PARTIAL and items and isinstance(items[0], Global):
        return items[0], Seq("tuple", items[1:])  # partial binds the leading positions
    if func.dotted == REBUILD_FROM_TYPE and len(items) > 2 and isinstance(items[0], Global):
        called = items[2]
        return (items[0], called) if isinstance(called, Seq) else None
    return None


# What torch's _rebuild_from_type_v2 is given to make the tensor it then gives its subclass (Tensor.__reduce_ex__'s
# rebuild functions, and a nested jagged tensor's).
TENSOR_MAKER_MODULE = "torch._utils"
NESTED_TENSOR_MAKER = "torch.nested._internal.nested_tensor._rebuild_njt"


def _makes_tensors(func: Global) -> bool:
    rebuild = func.module == TENSOR_MAKER_MODULE and func.name.startswith("_rebuild_")
    return rebuild or func.dotted == NESTED_TENSOR_MAKER


def _forwarded(func: Global) -> tuple[tuple[int, str], ...]:
    found = FORWARDERS.get(func.dotted)
    if found is not None:
        return found
    leaf = func.name.rsplit(".", 1)[-1]
    return ((0, "new"),) if leaf.startswith(_NEW_HELPERS[0]) or leaf == _NEW_HELPERS[1] else ()


# Hook for format-aware scanners (joblib) that need to act when an object is built.
# Called after each BUILD on an object; what it returns replaces the object on the stack (joblib's reading puts the
# array it reads where its wrapper was).
BuildHook = Callable[["Machine", Obj], Sym | None]


class Machine:
    """One symbolic unpickler. `run` simulates a single pickle (to STOP) from the stream's position."""

    def __init__(
        self,
        stream: Stream,
        limits: Limits,
        on_build: BuildHook | None = None,
        check_time: Callable[[], None] | None = None,
    ) -> None:
        self.stream = stream
        self.limits = limits
        self.on_build = on_build
        self.check_time = check_time  # raises BudgetExceeded past the file's deadline
        self.frame_end = -1  # where the last FRAME ends (protocol 4+)
        self.extensions: dict[int, tuple[str, str]] = {}  # copyreg registrations seen in this file
        self.opcodes_total = 0
        # Bytes of array data the file's arrays were handed, each use counted, over every pickle this machine runs: a
        # file's concatenated pickles and joblib's object arrays, each a pickle with its own memo (review 60).
        self.array_data = Tally(ARRAY_DATA_SLACK, ARRAY_DATA)
        self.null_fill = Tally(NULL_FILL_SLACK, NULL_FILL)  # judged only far past what a real list of scalars fills
        self.resolvers: set[str] = set()  # config resolvers already reported for this file
        self.getattr = Global("builtins", "getattr")  # one object, so a push of it is told by identity
        self.nested_loader = Global("torch.storage", "_load_from_bytes")  # the same, for the same reason
        self.rebound: list[Global] = []  # the name objects types.MethodType bound (`_bind`), kept alive

    def frame_left(self) -> int:
        """Bytes of the last FRAME after where the stream is now (0 or less: none); a STOP with some left is what no
        pickler writes, and the unpicklers go on at different places after it (`pickle._stop_inside_frame`)."""
        return self.frame_end - (self.stream.base + self.stream.offset)

    # -- helpers -------------------------------------------------------------------------------------

    def _record_import(self, res: PickleResult, module: str, name: str, offset: int, opcode: str) -> Global:
        # find_class maps Python 2 names only below protocol 3 (fix_imports); a stream without PROTO is protocol 0.
        mapped_module, mapped_name = map_py2_name(module, name) if res.protocol < 3 else (module, name)
        key = f"{mapped_module}.{mapped_name}"
        record = res.imports.get(key)
        if record is None:
            record = ImportRecord(mapped_module, mapped_name, f"{module}.{name}", offset, opcode)
            res.imports[key] = record
        record.count += 1
        record.unbound += 1
        if len(res.import_sites) < MAX_IMPORT_SITES:
            res.import_sites[offset] = mapped_name
        if key == GETATTR:
            res.getattr_seen = True
            return self.getattr
        if key == NESTED_LOADER:
            return self.nested_loader
        return Global(mapped_module, mapped_name)

    def _invoke(self, res: PickleResult, func: Sym, args: Sym, how: str, offset: int) -> Sym:
        """A call loading would make: record it, apply the few effects that change later resolution."""
        _keep_arguments(res, func, args)
        _zone_files(res, func, args, offset)
        _computed_text(res, func, args, offset)
        _config_pairs(res, func, args, offset)
        if func is self.getattr:
            res.getattr_calls += 1
        if isinstance(func, Global) and func.dotted in ARROW_CALLS:
            args = frozen(args)  # as pyarrow takes them now, whatever the stream does to the lists later
        if isinstance(func, Global) and func.dotted == RESTORE_ARRAY and len(res.arrow_arrays) <= MAX_ARRAYS:
            res.arrow_arrays.append((offset, args))  # the layout is checked once the stream ends (`pickle_arrow`)
        if isinstance(func, Global) and func.dotted == SCALAR:
            self._tally(res, self.null_fill, func, null_scalar_bytes(args), offset)
        if isinstance(func, Global) and func.dotted in COPYING_MAKERS:
            self._tally(res, self.array_data, func, copied_length(args), offset)
        if isinstance(func, Global):
            self._tally(res, self.array_data, func, iterated_bytes(func, args), offset)
        if isinstance(func, Global) and func.dotted == FROZEN_DICT:
            shared = shared_frozen_dicts(func, args, res.object_items)
            if shared is not None:
                res.events.append(Event("pickle.amplified_call", offset, {"callable": func.dotted, "detail": shared}))
        if isinstance(func, Global) and func.dotted == NESTED_LOADER:
            source = _nested_bytes(args) if func is self.nested_loader and how == "REDUCE" else None
            if source is None:
                res.nested_unread = True
            elif len(res.nested_loads) >= self.limits.max_members:
                # Each is a torch file of its own, scanned as an archive's member (0.35 ms each): a plain pickle of
                # a state dict holds one per tensor. A limit the user can raise, never a call judged unread.
                raise BudgetExceeded("max-members", f"more than {self.limits.max_members:,} torch files loaded")
            else:
                res.nested_loads.append((offset, source))
        if isinstance(func, Global):
            record = res.imports.get(func.dotted)
            if record is None:  # a name derived from getattr on a global
                record = ImportRecord(func.module, func.name, func.dotted, offset, how)
                record.count = 1
                res.imports[func.dotted] = record
            record.invoked.add(how)
            record.calls += 1
            self._forward(res, func, args, how, offset)
            self._apply_effects(res, func, args)
            made = _newobj_partial(func, args)
            if made is not None:
                # copyreg.__newobj__(partial, F, ...) makes a partial of F, as partial(F, ...) does.
                self._forward(res, Global("functools", "partial"), made.args, how, offset)
                return made
            derived = self._derive(func, args)
            if isinstance(derived, Global):
                # getattr(<import>, "name") is the import of the dotted name (as protocol 4 writes a qualified
                # name): recorded as one, so the allowlist judges it whether or not it is called. On an instance
                # it is a bound method, as long as no lookup of that name was on a class or module.
                on_instance = isinstance(args, Seq) and bool(args.items) and isinstance(args.items[0], Obj)
                record = res.imports.setdefault(derived.dotted, ImportRecord(
                    derived.module, derived.name, derived.dotted, offset, "getattr", bound=on_instance))
                record.bound = record.bound and on_instance
                record.count += 1
                record.unbound += not on_instance
                if func is self.getattr:
                    res.getattr_lookups += 1
                elif func.dotted in TYPE_LOOKUPS:
                    res.imports[func.dotted].lookups += 1
                return derived
            if derived is not None:
                return derived
            bound_args = _method_type_args(func, args, how)
            if bound_args is not None:
                self._bind(res, bound_args, offset)
            if func.dotted in IDENTITY_FUNCTIONS and isinstance(args, Seq) and args.items:
                return args.items[0]  # what it was given, itself: a class BUILD then patches is still that class
            if func.dotted == REBUILD_FROM_TYPE and isinstance(args, Seq) and len(args.items) > 3:
                # _rebuild_from_type_v2(func, type, args, state) sets `state` on what func(*args) returns; through an
                # identity helper that is an object the stream already restored: a second BUILD by another name.
                inner, called = args.items[0], args.items[2]
                if not (isinstance(inner, Global) and _makes_tensors(inner)):
                    # ... and first calls its `as_subclass(type)`: torch's rebuild functions make tensors, whose
                    # method that is; any other object's may be an item it answers the lookup with (helper 255: a
                    # pandas Series indexed `as_subclass` called a SciPy distribution class, which ran its template)
                    callee = f"{describe(inner)}(...).as_subclass"
                    res.events.append(Event("pickle.dynamic_call", offset, {"opcode": f"{how} via {func.dotted}",
                                                                            "callee": callee}))  # fmt: skip
                if isinstance(inner, Global) and inner.dotted in IDENTITY_FUNCTIONS and isinstance(called, Seq):
                    target = called.items[0] if called.items else None
                    if isinstance(target, Obj) and target.state is not None:
                        self._after_build(res, target, f"{how} via {func.dotted}", offset)
                # ... with __setstate__ if the object has one: a hook handle's id moves torch's counter (review 48)
                made = Obj(inner, called)
                counter = forged_counter(made, args.items[3])
                if counter is not None:
                    attrs: dict[str, str | int | bool] = {"callable": restored_class(made), "detail": counter}
                    res.events.append(Event("pickle.shared_counter", offset, attrs))
            _state_from_call(res, func, args, offset)
            if func.dotted == RECONSTRUCT_ARRAY:
                self._jax_array(res, func, args, offset)
            amplified = amplified_call(func, args)
            if amplified is not None:
                attrs = {"callable": func.dotted, "detail": amplified}
                res.events.append(Event("pickle.amplified_call", offset, dict[str, str | int | bool](attrs)))
        else:
            res.events.append(Event("pickle.dynamic_call", offset, {"opcode": how, "callee": describe(func)}))
        made = Obj(func, args)
        if isinstance(func, Global) and func.dotted.startswith("pandas."):
            _given(args, made, True)  # pandas' helpers take their fields as a dict (_new_Index(cls, fields))
        if isinstance(func, Global) and func.dotted in PANDAS_MAKERS and pandas_class(made) in PANDAS_CHECKED:
            record_pandas(res.native, made, offset)  # called, or through copyreg's __newobj__ or pandas' helpers
        if isinstance(func, Global) and func.dotted.startswith(("statsmodels.", "copyreg.")):
            record_statespace(res.native, made, offset)
        if isinstance(func, Global) and func.dotted in FROMBUFFER_MAKERS and isinstance(args, Seq) and args.items:
            record_buffer(res.native, args.items[0], made)
        if isinstance(func, Global) and func.dotted == STORAGE_INFO:
            if len(res.storage_infos) < MAX_STORAGE_INFOS:
                res.storage_infos.append(made)
            else:
                res.storage_infos_dropped += 1
        return made

    def _bind(self, res: PickleResult, args: Sym, offset: int) -> None:
        """types.MethodType(F, obj): whoever calls the bound method calls F with obj first, so F counts as called
        through MethodType (review 70 bound print, a logger's class and a scheduler's so). With F a name and obj an
        object the stream restored, it is a bound method of F, as getattr(obj, "name") makes one, so that reach of F
        counts as bound (each name object once: the memo can hand the same one on twice)."""
        if not (isinstance(args, Seq) and args.type == "tuple" and len(args.items) == 2):
            return
        function, target = args.items
        self._mark(res, Global("types", "MethodType"), function, "call", "REDUCE", offset)
        if isinstance(function, Global) and isinstance(target, Obj) and function not in self.rebound:
            record = res.imports.get(function.dotted)
            if record is not None:
                self.rebound.append(function)
                record.rebound += 1

    def _jax_array(self, res: PickleResult, func: Global, args: Sym, offset: int) -> None:
        """JAX's _reconstruct_array(fun, args, arr_state, aval_state): arr_state is the array's BUILD (its data is
        counted), and anything but what JAX writes is WS-PKL-050 (`pickle_jax`)."""
        if isinstance(args, Seq) and len(args.items) == 4:
            self._tally(res, self.array_data, func, array_data_length(args.items[2]), offset)
        forged = forged_jax_array(func, args)
        if forged is not None:
            attrs: dict[str, str | int | bool] = {"callable": func.dotted, "detail": forged}
            res.events.append(Event("pickle.forged_jax_array", offset, attrs))

    def _tally(self, res: PickleResult, tally: Tally, maker: Sym, nbytes: int, offset: int) -> None:
        """Count bytes an object is handed against what the stream holds (`pickle_calls.Tally`), once per file."""
        amplified = tally.add(nbytes, self.stream.base + self.stream.offset)
        if amplified is not None:
            callable_ = restored_class(maker) if isinstance(maker, Obj) else describe(maker)
            attrs = {"callable": callable_, "detail": amplified}
            res.events.append(Event("pickle.amplified_call", offset, dict[str, str | int | bool](attrs)))

    def _forward(self, res: PickleResult, func: Global, args: Sym, how: str, offset: int, depth: int = 0) -> None:
        """What an allowlisted helper does with its arguments: call them, or instantiate them."""
        uses = _forwarded(func)
        if not uses:
            return
        if not isinstance(args, Seq):  # arguments the machine cannot see: whatever they are gets called
            res.events.append(Event("pickle.dynamic_call", offset, {"opcode": f"{how} via {func.dotted}",
                                                                    "callee": describe(args)}))  # fmt: skip
            return
        for position, use in uses:
            if position < len(args.items):
                self._mark(res, func, args.items[position], use, how, offset)
        # What the forwarded callable does with its own arguments, when it forwards too: partial(F, *bound) calls
        # F(*bound, ...), and _rebuild_from_type_v2(F, type, args, state) calls F(*args).
        inner = _inner_call(func, args)
        if inner is not None and depth < MAX_FORWARD_DEPTH:
            # the state the inner call gives what it makes too (helper 223 nested _rebuild_from_type_v2 in itself)
            _state_from_call(res, inner[0], inner[1], offset)
            self._forward(res, inner[0], inner[1], how, offset, depth + 1)

    def _mark(self, res: PickleResult, func: Global, target: Sym, use: str, how: str, offset: int) -> None:
        """`func` calls or instantiates `target`: judge a name as called, anything computed as a dynamic call."""
        if isinstance(target, Obj) and _is_partial(target):
            # A partial's callable is judged as called where the partial is made or built; handed on here it is
            # called while the file loads too (numpy's __generator_ctor), or later by what the helper made (a
            # defaultdict's factory): noted, so a bound method that passes only inside a partial no longer does.
            inner = _partial_function(target)
            record = res.imports.get(inner.dotted) if isinstance(inner, Global) else None
            if record is not None:
                record.invoked.add(f"{use.upper()} via {func.dotted}")
            return
        if isinstance(target, Global):
            if target.dotted == RESTORE_ARRAY and len(res.arrow_arrays) <= MAX_ARRAYS:
                res.arrow_arrays.append((offset, INDIRECT))  # what the helper gives it is not followed (review 48)
            if target.dotted == RECONSTRUCT_ARRAY:  # its arguments are the helper's to give: not JAX's shape
                attrs: dict[str, str | int | bool] = {"callable": target.dotted,
                                                      "detail": f"called through {func.dotted}, which JAX never writes"}
                res.events.append(Event("pickle.forged_jax_array", offset, attrs))
            record = res.imports.get(target.dotted)
            if record is None:  # derived by getattr
                record = ImportRecord(target.module, target.name, target.dotted, offset, how)
                record.count = 1
                res.imports[target.dotted] = record
            record.invoked.add(f"{use.upper()} via {func.dotted}")
        elif not isinstance(target, Const):  # a string or None is looked up or skipped, never called
            res.events.append(Event("pickle.dynamic_call", offset, {"opcode": f"{how} via {func.dotted}",
                                                                    "callee": describe(target)}))  # fmt: skip

    def _resolver_calls(self, res: PickleResult, text: str, at: int) -> None:
        """`${name:...}` in a string: OmegaConf calls the resolver registered as `name` when it resolves the
        value, which comparing two configs does while a pickle loads (a config used as a dict key)."""
        for call in resolver_calls(text):
            if call.key in self.resolvers:
                continue
            if len(self.resolvers) >= MAX_RESOLVERS:  # fail closed: what is not listed may be anything
                call = ResolverCall(TOO_MANY_RESOLVERS, False, False, 0)
                if call.key in self.resolvers:
                    return
            self.resolvers.add(call.key)
            attrs: dict[str, str | int | bool] = {"resolver": call.name, "text": text[:120],
                                                  "shell_like": call.shell_like,
                                                  "plain_default": call.plain_default}  # fmt: skip
            res.events.append(Event("pickle.config_resolver", at, attrs))

    def _apply_effects(self, res: PickleResult, func: Global, args: Sym) -> None:
        if func.dotted == "copyreg.add_extension" and isinstance(args, Seq) and len(args.items) == 3:
            module, name, code = (_const(a) for a in args.items)
            if isinstance(module, str) and isinstance(name, str) and isinstance(code, int):
                self.extensions[code] = (module, name)

    @staticmethod
    def _derive(func: Global, args: Sym) -> Global | Obj | None:
        """getattr(<import>, "name") is the import of the dotted name; getattr(<built object>, "name") an object
        named after it, whose calls stay computed."""
        # Exactly (target, name): with a default, a name missing from the installed library yields the default.
        if func.dotted in TYPE_LOOKUPS and isinstance(args, Seq) and args.type == "tuple" and len(args.items) == 1:
            attr = _const(args.items[0])
            if isinstance(attr, str):
                return Global("builtins", "type") if attr == "ClassType" else Global("types", attr)
        if func.dotted == GETATTR and isinstance(args, Seq) and args.type == "tuple" and len(args.items) == 2:
            target, attr = args.items[0], _const(args.items[1])
            if isinstance(target, Global) and isinstance(attr, str):
                return Global(target.module, f"{target.name}.{attr}")
            made = _made_from(target) if isinstance(target, Obj) and _holds_no_callable(target.state) else None
            if made is not None and isinstance(attr, str) and attr.isidentifier() and not attr.startswith("__"):
                # A method of an object the stream restored and has not given a state yet (a SciPy discrete
                # distribution keeps its own _entropy in a vectorize, before its BUILD), or gave a state of plain
                # constants (river's Random, its generator's numbers): the class's function of that name, judged by
                # the allowlist like an import. A state that may hold objects may put one under the name instead
                # (a review handed a payload dict on so).
                return Global(made.module, f"{made.name}.{attr}")
            if isinstance(target, Obj) and isinstance(target.func, Global) and isinstance(attr, str):
                return Obj(Global(target.func.module, f"{target.func.name}().{attr}"), args)
        return None

    # -- the machine ---------------------------------------------------------------------------------

    def run(self) -> PickleResult:
        """Simulate from the current position to STOP, end of data, or the first invalid opcode."""
        res = PickleResult(start=self.stream.base + self.stream.offset, end=0)
        out_of_memory = False
        try:
            self._loop(res)
        except PickleSyntaxError as exc:
            res.error = exc
        except (RecursionError, OverflowError, ValueError, UnicodeError) as exc:
            res.error = PickleSyntaxError(self.stream.base + self.stream.offset, f"undecodable: {exc}")
        except BudgetExceeded as exc:
            res.over_budget = exc
        except MemoryError:  # the worker's cap: what the machine saw is kept
            out_of_memory = True
        if out_of_memory:  # past the except block: its traceback held the loop's stack and memo, and more failed
            detail = f"the pickle machine needed more than {self.limits.max_memory_bytes} bytes of memory"
            res.over_budget = BudgetExceeded("max-memory-bytes", detail)
        res.end = self.stream.base + self.stream.offset
        for key, record in res.imports.items():
            if record.rebound:  # cloudpickle's bound methods (`_bind`): bound if every unbound reach was bound so,
                # and nothing but MethodType calls the function or keeps it unbound (review 70 kept the one it bound)
                record.bound = (record.unbound == record.rebound and record.invoked <= {BOUND_BY_METHOD_TYPE}
                                and key not in res.kept)
        check_states(res)
        check_partials(res)
        check_model_package(res)
        check_script_objects(res)
        check_architectures(res)
        check_hyperparameters(res)
        check_ultralytics(res)
        return res

    def _loop(self, res: PickleResult) -> None:
        # One flat loop with the most frequent opcodes first: this is the hottest code in wscan.
        stream = self.stream
        base = stream.base
        stack: list[Sym] = []
        metastack: list[list[Sym]] = []
        memo: dict[int, Sym] = {}
        limits = self.limits
        max_memo = limits.max_memo_entries
        max_depth = limits.max_stack_depth
        max_opcodes = limits.max_pickle_opcodes
        max_reported = limits.max_observations
        events = res.events
        reused = res.native.reused
        at = base + stream.offset
        name = ""

        def pop() -> Sym:
            if not stack:
                raise PickleSyntaxError(at, f"{name} on an empty stack")
            return stack.pop()

        def top() -> Sym:
            if not stack:
                raise PickleSyntaxError(at, f"{name} on an empty stack")
            return stack[-1]

        def pop_mark() -> list[Sym]:
            nonlocal stack
            if not metastack:
                raise PickleSyntaxError(at, f"{name} without a MARK")
            items = stack
            stack = metastack.pop()
            return items

        getattr_global = self.getattr

        nested_loader = self.nested_loader

        def escape(values: list[Sym]) -> None:
            """builtins.getattr put anywhere but the callee's place: no longer only a lookup (the same for the
            nested loader: no longer only called where the machine sees its argument)."""
            # `in` is identity here: symbolic values compare by identity (eq=False), and it runs in C
            if res.getattr_seen and getattr_global in values:
                res.getattr_escaped = True
            if nested_loader in values:
                res.nested_unread = True

        def memo_put(index: int, value: Sym) -> None:
            if index not in memo and len(memo) >= max_memo:
                raise BudgetExceeded("max-memo-entries", f"more than {max_memo} memo entries")
            memo[index] = value

        while True:
            code = stream.opcode()
            if code < 0:
                raise Truncated(base + stream.offset, "stream ends before STOP")
            at = base + stream.op_at
            name = NAMES[code]
            if not name:
                raise PickleSyntaxError(at, f"invalid opcode 0x{code:02x}")
            res.opcodes += 1
            self.opcodes_total += 1
            if self.opcodes_total > max_opcodes:
                raise BudgetExceeded("max-pickle-opcodes", f"more than {max_opcodes} opcodes")
            if not self.opcodes_total & TIME_CHECK_MASK:
                if self.check_time is not None:
                    self.check_time()  # an opcode can cost much (a call forwarded through nested partials)
                if len(res.imports) + len(events) > max_reported:  # each is an observation, and held until STOP
                    raise BudgetExceeded("max-observations", f"more than {max_reported:,} imports and calls")
            if len(stack) + len(metastack) > max_depth:
                raise BudgetExceeded("max-stack-depth", f"stack deeper than {max_depth}")
            reader = READERS[code]
            arg = None if reader is None else reader(stream)
            if at < self.frame_end < base + stream.offset:
                # An argument that runs past the end of its frame: the pure-Python unpickler refuses it, the C one
                # reading a file without `peek` (a BytesIO) drops the frame's part and reads the rest from after it
                # (`c` + `X` | `posix\nmkdir\n` imports posix.mkdir, not Xposix.mkdir). pickle never writes one.
                raise FrameOverrun(at, f"{name} argument runs past the end of its frame")

            if name in _CONSTANTS:
                if name in _PY2_STRINGS and isinstance(arg, bytes):
                    # Python 3 decodes protocol 0-2 strings as ASCII by default; keep text for names.
                    arg = arg.decode("latin-1")
                if isinstance(arg, str | bytes) and arg in POINTER_NAMES:
                    name_attrs: dict[str, str | int | bool] = {"name": arg if isinstance(arg, str) else repr(arg)}
                    res.events.append(Event("pickle.pointer_name", at, name_attrs))
                if isinstance(arg, str) and "${" in arg:
                    self._resolver_calls(res, arg, at)
                elif isinstance(arg, LongBytes) and (arg.interpolations or b"${" in arg.prefix):
                    for text in (arg.prefix.decode("utf-8", "replace"), *arg.interpolations):
                        self._resolver_calls(res, text, at)
                stack.append(Const(arg))
                if code in _RUNS:
                    run, layout = _RUNS[code]
                    more = stream.take_run(run)
                    count = len(more) // layout.size
                    # Only as many as the limits let through: the next opcode then stops at the very one it did.
                    allowed = max(0, min(max_opcodes - self.opcodes_total, max_depth - len(stack) - len(metastack) + 1))
                    if count > allowed:
                        stream.rewind((count - allowed) * layout.size)
                        more, count = more[: allowed * layout.size], allowed
                    if count:
                        stack.extend([Const(value) for (value,) in layout.iter_unpack(more)])
                        res.opcodes += count
                        self.opcodes_total += count
            elif name in _MEMO_PUT:
                index = int(arg) if isinstance(arg, int) else -1
                if index < 0:
                    raise PickleSyntaxError(at, "negative or invalid memo index")
                memo_put(index, top())
            elif name == "MEMOIZE":
                memo_put(len(memo), top())
            elif name in _MEMO_GET:
                index = int(arg) if isinstance(arg, int) else -1
                if index not in memo:
                    raise PickleSyntaxError(at, f"memo key {index} not defined")
                again = memo[index]
                if type(again) is Obj:
                    reused[id(again)] = again
                stack.append(again)
            elif name == "MARK":
                metastack.append(stack)
                stack = []
            elif name in _SMALL_TUPLES:
                n = _SMALL_TUPLES[name]
                if len(stack) < n:
                    raise PickleSyntaxError(at, f"{name} on a stack of {len(stack)}")
                items = stack[-n:]
                del stack[-n:]
                escape(items)
                stack.append(Seq("tuple", items))
            elif name in _EMPTY:
                stack.append(Seq(_EMPTY[name]) if name != "EMPTY_DICT" else Dict())
            elif name in _SET_ITEMS:
                if name == "SETITEM":
                    value = pop()
                    key = pop()
                    pairs = [key, value]
                else:
                    pairs = pop_mark()
                    if len(pairs) % 2:
                        raise PickleSyntaxError(at, "SETITEMS with an odd number of items")
                escape(pairs)
                _config_targets(res, pairs, at)
                target = top()
                if isinstance(target, Dict) and target.given_to is not None and id(target) not in res.changed:
                    # Items set on a dict a BUILD or a pandas helper already took: the loader used what it held
                    # then, the checks would read what it holds at the end (helper 233 grew a checked state so).
                    res.changed[id(target)] = target
                    attrs = {"opcode": name, "callee": f"what was given to {describe(target.given_to)}"}
                    events.append(Event("pickle.changed_after_build", at, dict[str, str | int | bool](attrs)))
                if isinstance(target, Dict):
                    # A dict's items are kept when the dict is (its walk reads them), or now if it already was or
                    # has no room: a dict no opcode uses keeps nothing, and a joblib wrapper's state need not.
                    dropped = target.dropped
                    for i in range(0, len(pairs), 2):
                        target.add(pairs[i], pairs[i + 1])
                    if target.walked or target.dropped > dropped:
                        _keep(res, pairs)
                else:
                    _keep(res, pairs)
                    if isinstance(target, Obj):
                        _note_items(res, target, list(zip(pairs[::2], pairs[1::2], strict=True)))
                        _dunder_items(res, pairs, restored_class(target), at)
                    self._items_on_object(res, target, pairs, name, at)
                    if isinstance(target, Seq):
                        _list_items_set(res, at)
                    self._mutation(res, target, name, at)
            elif name in _APPENDS:
                values = [pop()] if name == "APPEND" else pop_mark()
                escape(values)
                _keep(res, values)
                target = top()
                if isinstance(target, Seq):
                    target.extend(values)
                else:
                    self._method_from_items(res, target, APPEND_METHODS[name], name, at)
                    self._mutation(res, target, name, at)
            elif name == "REDUCE" or name == "NEWOBJ":
                args = pop()
                func = pop()
                escape([args])
                made = self._invoke(res, func, args, name, at)
                if name == "NEWOBJ" and isinstance(made, Obj) and made.func is func:
                    made.instance = True
                note_script_object(res, made, at)
                stack.append(made)
            elif name == "BUILD":
                state = pop()
                escape([state])
                target = top()
                _keep(res, _built_values(target, state))
                replacement = self._build(res, target, state, at)
                if replacement is not None:
                    stack[-1] = replacement
            elif name == "STACK_GLOBAL":
                qual = pop()
                module = pop()
                if (
                    isinstance(module, Const)
                    and isinstance(qual, Const)
                    and isinstance(module.value, str)
                    and isinstance(qual.value, str)
                ):
                    stack.append(self._record_import(res, module.value, qual.value, at, name))
                else:
                    events.append(
                        Event("pickle.dynamic_import", at, {"module": describe(module), "name": describe(qual)})
                    )
                    stack.append(Obj(Global("?", "?"), Seq("tuple", [module, qual])))
            elif name == "GLOBAL":
                assert isinstance(arg, tuple)
                stack.append(self._record_import(res, arg[0], arg[1], at, name))
            elif name in _SINGLETONS:
                stack.append(Const(_SINGLETONS[name]))
            elif name == "FRAME":
                # Framing changes nothing a load imports or calls, but a reader that takes raw bytes from the file
                # (joblib's arrays) takes them from after the frame: the hook needs to know where it ends.
                assert isinstance(arg, int)
                self.frame_end = base + stream.offset + arg
            elif name == "READONLY_BUFFER":
                top()  # a flag on the buffer below it: nothing to import or call, but there must be one
            elif name == "STOP":
                res.result = pop()
                escape([res.result])
                _keep(res, [res.result])
                res.stopped = True
                return
            elif name == "PROTO":
                assert isinstance(arg, int)
                res.protocol = arg
                if arg > 5:
                    # CPython's unpicklers refuse it here; torch's weights-only reader, torch.load's default, reads on
                    # (review 75): so does the machine
                    events.append(Event("pickle.unsupported_protocol", at, {"protocol": arg}))
            elif name in ("LIST", "TUPLE", "FROZENSET"):
                seq = Seq(name.lower())
                popped = pop_mark()
                escape(popped)  # all of them: a Seq keeps only the first MAX_ITEMS
                if name != "TUPLE":  # a tuple's items are values once the tuple is (it may be a restore's arguments)
                    _keep(res, popped)
                else:
                    _keep(res, popped[MAX_ITEMS:])  # not kept by the Seq, so never walked later: values now
                seq.extend(popped)
                stack.append(seq)
            elif name == "DICT":
                items = pop_mark()
                escape(items)
                _keep(res, items)
                if len(items) % 2:
                    raise PickleSyntaxError(at, "DICT with an odd number of items")
                _config_targets(res, items, at)
                d = Dict()
                for i in range(0, len(items), 2):
                    d.add(items[i], items[i + 1])
                stack.append(d)
            elif name == "POP":
                if stack:
                    stack.pop()
                else:
                    pop_mark()
            elif name == "POP_MARK":
                pop_mark()
            elif name == "DUP":
                stack.append(top())
            elif name == "NEXT_BUFFER":
                stack.append(OutOfBand())
            elif name in ("EXT1", "EXT2", "EXT4"):
                assert isinstance(arg, int)
                registered = self.extensions.get(arg)
                if registered is None:
                    events.append(Event("pickle.unregistered_extension", at, {"code": arg}))
                    stack.append(Unknown())
                else:
                    stack.append(self._record_import(res, registered[0], registered[1], at, name))
            elif name == "NEWOBJ_EX":
                kwargs = pop()
                args = pop()
                cls = pop()
                escape([args, kwargs])
                made = self._invoke(res, cls, Seq("tuple", [args, kwargs]), name, at)
                note_script_object(res, made, at)
                stack.append(made)
            elif name == "INST":
                assert isinstance(arg, tuple)
                cls_global = self._record_import(res, arg[0], arg[1], at, name)
                args_seq = Seq("tuple", pop_mark())
                escape(args_seq.items)
                stack.append(self._invoke(res, cls_global, args_seq, name, at))
            elif name == "OBJ":
                items = pop_mark()
                if not items:
                    raise PickleSyntaxError(at, "OBJ without a class")
                escape(items[1:])
                stack.append(self._invoke(res, items[0], Seq("tuple", items[1:]), name, at))
            elif name == "PERSID" or name == "BINPERSID":
                if name == "PERSID" and not (isinstance(arg, str) and arg.isascii()):
                    raise PickleSyntaxError(at, "protocol 0 persistent id is not ASCII")  # as CPython refuses it
                pid: Sym = Const(arg) if name == "PERSID" else pop()
                escape([pid])
                _keep(res, [pid])
                res.persistent_ids.append(pid)
                stack.append(_module_class(Persistent(pid)))  # legacy torch: a 'module' id is what it names
            else:
                raise PickleSyntaxError(at, f"unhandled opcode {name}")

    def _build(self, res: PickleResult, target: Sym, state: Sym, at: int) -> Sym | None:
        _given(state, target, isinstance(target, Obj) and pandas_class(target).startswith("pandas."))
        if isinstance(target, Global):
            # BUILD on a module or class sets attributes on it: the load patches the interpreter.
            res.events.append(
                Event("pickle.build_global", at, {"callable": target.dotted, "opcode": "BUILD"})
            )
            record = res.imports.get(target.dotted)
            if record is not None:
                record.invoked.add("BUILD")
            return None
        if isinstance(target, Obj):
            if isinstance(target.func, Global):
                record = res.imports.get(target.func.dotted)
                if record is not None:
                    record.invoked.add("BUILD")
                looked_up = _one_value_lookup(target)
                if looked_up is not None:
                    # Class(value) looks an enum's member up, one object the whole process shares (rules judge
                    # which classes are enums): a state on it rewrites HTTPStatus.OK.phrase everywhere.
                    attrs: dict[str, str | int | bool] = {"callable": looked_up, "opcode": "BUILD"}
                    res.events.append(Event("pickle.state_on_lookup", at, attrs))
            if target.state is not None or _made_whole(target):
                self._after_build(res, target, "BUILD", at)
            target.state = state
            record_native(res.native, target, state, at)
            _judge_state(res, target, state, at)
            if restored_class(target) in ARRAY_MAKERS_BUILT:
                self._tally(res, self.array_data, target, array_data_length(state), at)
            forged = forged_dtype_flags(target, state)
            if forged is not None:
                res.events.append(Event("pickle.forged_dtype", at, {"callable": describe(target), "detail": forged}))
            counter = forged_counter(target, state)
            if counter is not None:
                res.events.append(Event("pickle.shared_counter", at, {"callable": describe(target), "detail": counter}))
            # A partial's (func, args, keywords, dict) is what its call is given; any other state, what pandas reads
            # (a DatetimeTZDtype restored with a `tz` of such a name), but an array's: its items are data.
            if restored_class(target) not in _ARRAY_REBUILDERS:
                _zone_files(res, target.func, state, at)
                _time_state(res, target, state, at)
            if _is_partial(target) or _is_defaultdict(target):
                # partial.__setstate__((func, args, keywords, dict)) replaces the callable the partial calls, and a
                # defaultdict's factory can be set from BUILD's slot state: what they will call comes from here.
                # A tuple the machine cannot read (built by a call) is a call of an unknown callable.
                first = state.items[0] if isinstance(state, Seq) and state.items and _is_partial(target) else state
                owner = Global("functools", "partial") if _is_partial(target) else Global("collections", "defaultdict")
                self._mark(res, owner, first, "call", "BUILD", at)
                bound = state.items[1] if isinstance(state, Seq) and len(state.items) > 1 else None
                if _is_partial(target) and isinstance(first, Global) and isinstance(bound, Seq):
                    self._forward(res, owner, Seq("tuple", [first, *bound.items]), "BUILD", at)
                if _is_partial(target) and isinstance(state, Seq) and len(state.items) > 3:
                    # ... and its fourth item becomes the partial's own dict, judged as any object's (review 70 put a
                    # callable under `cpu` there, which fastai's load_learner calls on what it takes for its loaders)
                    _judge_state(res, target, state.items[3], at)
            if self.on_build is not None:
                return self.on_build(self, target)
        return None

    def _mutation(self, res: PickleResult, target: Sym, opcode: str, at: int) -> None:
        if opcode in _SET_ITEMS and _tensor_memory(target):
            # tensor[i] = v or storage[i] = v: no writer does it, and torch.load before 2.10 ran it even with
            # weights_only=True, a write out of bounds (CVE-2026-24747); torch now allows dicts only.
            res.events.append(Event("pickle.item_set_on_tensor", at, {"opcode": opcode, "callee": describe(target)}))
        if isinstance(target, Const):
            # A bytearray (BYTEARRAY8) changed in place (SETITEMS sets bytes, APPENDS extends it): what it holds
            # is no longer known, wherever the memo shares it (a review passed it to _load_from_bytes so).
            target.value = CHANGED
        elif isinstance(target, Global):
            res.events.append(Event("pickle.build_global", at, {"callable": target.dotted, "opcode": opcode}))
        elif isinstance(target, Obj) and isinstance(target.func, Global) and target.func.dotted in BYTEARRAY:
            target.state = Const(CHANGED)  # bytes set or appended in place: pyarrow's buffers are read as changed
        elif isinstance(target, Obj) and (target.state is not None or not isinstance(target.func, Global)):
            self._after_build(res, target, opcode, at)
        elif isinstance(target, Seq):
            # list[i] = v: which item changed is not followed, so none of them is known any more (a list can be a
            # call's arguments: joblib's and pandas' unpicklers call func(*args) with any iterable).
            target.items = [Unknown() for _ in target.items]
            res.pairs_read.pop(id(target), None)  # read again when a call is given it (`_read_pairs`)


    def _items_on_object(self, res: PickleResult, target: Sym, pairs: list[Sym], opcode: str, at: int) -> None:
        """Items set on an object (a dict subclass). Classes such as EasyDict and Lightning's AttributeDict make an
        item an attribute too, and pickle looks `__setstate__` (BUILD), `extend`/`append` (APPENDS) and `add`
        (ADDITEMS) up on the instance: an item by one of those names is what those opcodes then call."""
        if not isinstance(target, Obj):
            return
        for i in range(0, len(pairs) - 1, 2):
            name = pairs[i]
            if isinstance(name, Obj) and restored_class(name) in _STR_CLASSES:
                # A name built by str(...): no writer does that, and it may be any of the names above.
                attrs: dict[str, str | int | bool] = {"opcode": opcode, "name": describe(name),
                                                      "callee": describe(target)}  # fmt: skip
                res.events.append(Event("pickle.method_from_items", at, attrs))
                self._mark(res, _owner(target), pairs[i + 1], "call", opcode, at)
                continue
            key = _const(pairs[i])
            if isinstance(key, str) and key in INSTANCE_LOOKUPS:
                res.item_methods.setdefault(id(target), (target, {}))[1][key] = pairs[i + 1]
                if key == "__setstate__":
                    self._method_from_items(res, target, ("__setstate__",), opcode, at)

    def _method_from_items(
        self, res: PickleResult, target: Sym, names: tuple[str, ...], opcode: str, at: int
    ) -> None:
        """`opcode` looks one of `names` up on the instance, and an item set it: that item is what runs."""
        entry = res.item_methods.get(id(target))  # kept alive there, so an equal id is the same object
        if entry is None:
            return
        owner = _owner(entry[0])
        for name in names:
            value = entry[1].get(name)
            if value is None:
                continue
            attrs: dict[str, str | int | bool] = {"opcode": opcode, "name": name, "callee": describe(target)}
            res.events.append(Event("pickle.method_from_items", at, attrs))
            if isinstance(value, Global | Obj):
                self._mark(res, owner, value, "call", opcode, at)

    def _after_build(self, res: PickleResult, target: Obj, opcode: str, at: int) -> None:
        """An object changed after its state was restored, or one a computed callable made: no writer does this.
        The change runs the object's own methods (SETITEMS its __setitem__, a second BUILD its __setstate__), and
        restored state put in the instance's dict comes before the class's: a callable stored under a method name
        runs. So every callable in that state counts as called."""
        if id(target) in res.changed:  # reported, and its state judged, at the first change
            return
        res.changed[id(target)] = target
        res.events.append(Event("pickle.changed_after_build", at, {"opcode": opcode, "callee": describe(target)}))
        state = target.state
        if isinstance(state, Seq) and state.type == "tuple" and state.items:  # (dict, slots) state
            state = state.items[0]
        if isinstance(state, Dict) and id(state) not in res.changed:  # one state shared by many objects: once
            res.changed[id(state)] = state
            owner = _owner(target)
            for value in {id(v): v for _, v in state.items if isinstance(v, Global | Obj)}.values():
                self._mark(res, owner, value, "call", opcode, at)  # each distinct value once


def _given(value: Sym, owner: Sym, deep: bool) -> None:
    """Mark the dicts a state or arguments hold as given to `owner`: the state itself or a tuple state's dicts, and,
    when `deep` (pandas' objects, whose checks read nested states), those a few levels down, a bounded number. Only
    pandas' are walked: elsewhere a nested dict may be one whose writing is still under way (an object in a dict
    that refers back to that dict), which writers go on filling after the BUILD."""
    pending: list[tuple[Sym, int]] = [(value, 0)]
    visited = 0
    while pending and visited < MAX_GIVEN_VISITS:
        item, depth = pending.pop()
        visited += 1
        if isinstance(item, Dict):
            if item.given_to is None:
                item.given_to = owner
            children = [child for _, child in item.items[:MAX_GIVEN_VISITS]] if deep else []
        elif isinstance(item, Seq):
            children = item.items[:MAX_GIVEN_VISITS] if deep or depth == 0 else []
        else:
            continue
        if depth < MAX_GIVEN_DEPTH:
            pending.extend((child, depth + 1) for child in children if isinstance(child, Dict | Seq))


# What makes tensors, arrays and storages: torch's rebuild functions, torch's and NumPy's classes.
_TENSOR_MAKERS = ("torch.", "numpy.")


def _tensor_memory(target: Sym) -> bool:
    """A storage (what torch's persistent_load returns) or an object torch or NumPy made: not a dict."""
    if isinstance(target, Persistent):
        return True
    return isinstance(target, Obj) and restored_class(target).startswith(_TENSOR_MAKERS)


# Restores the arguments of which are not kept either: numpy's _reconstruct(subtype, ...) makes an array of the
# subclass with ndarray.__new__, which runs none of its constructor (memmap's opens a file; a pickled memmap array
# opens none); torch's _rebuild_wrapper_subclass(cls, ...) makes an empty instance of cls with
# Tensor._make_wrapper_subclass (a DTensor); getattr(C, name) returns an attribute of C, judged by its own dotted name
# (torch pickles a CyclicLR's scale function as getattr(CyclicLR, "_triangular_scale_fn")).
# _rebuild_from_type_v2(func, type, args, state) calls func (judged as a call) on args and makes the result an
# instance of `type` with Tensor.as_subclass, then sets the state (a nested jagged tensor, a DTensor):
# `_keep_arguments` reads it.
_KEPT_FROM = {
    **_RESTORED_POSITIONS, **dict.fromkeys(_ARRAY_REBUILDERS, 1), "torch._utils._rebuild_wrapper_subclass": 1,
    GETATTR: 1,
    METHOD_TYPE: 1,  # the function is bound, so judged as a bound method (`Machine._bind`); the object is kept
}


def _keep_arguments(res: PickleResult, func: Sym, args: Sym) -> None:
    """A call's arguments are values the callee may keep, but for the class a restore helper makes; the arguments
    _rebuild_from_type_v2 passes on to the function it calls, as that call keeps them."""
    for _ in range(MAX_FORWARD_DEPTH):
        if not (isinstance(args, Seq) and args.type == "tuple"):
            break
        dotted = func.dotted if isinstance(func, Global) else ""
        if dotted == REBUILD_FROM_TYPE and len(args.items) > 2:
            _keep(res, args.items[3:])
            func, args = args.items[0], args.items[2]
            continue
        _keep(res, args.items[_KEPT_FROM.get(dotted, 0):])
        return
    _keep(res, [args])


# joblib's array wrapper keeps the array's class as `subclass`, which joblib compares with ndarray and memmap and
# otherwise only hands to numpy's _reconstruct (whose class is restored, not kept: `_KEPT_FROM`); a plain unpickler
# leaves the wrapper as it is. `joblib.dump` of a memory-mapped array writes numpy.memmap there.
ARRAY_WRAPPERS = frozenset({"joblib.numpy_pickle.NumpyArrayWrapper"})


def _built_values(target: Sym, state: Sym) -> list[Sym]:
    """What BUILD keeps: the state, but for the class in a joblib array wrapper's state dict. The dict itself is not
    marked walked then, so any other use of it keeps that class too."""
    if not (isinstance(target, Obj) and isinstance(state, Dict) and not state.walked and not state.dropped
            and restored_class(target) in ARRAY_WRAPPERS):  # fmt: skip
        return [state]
    kept: list[Sym] = []
    for key, value in state.items:
        kept.append(key)
        if not (isinstance(key, Const) and key.value == "subclass" and isinstance(value, Global)):
            kept.append(value)
    return kept


# Makers that return their result whole, to which real pickles give no state: pandas' index and block helpers (a
# state given later, a RangeIndex's `_range`, an index's `_data` or cached engine, a block's placement, is not what
# pandas checked the frame against: helper 242 crashed pandas 1.5 to 3.1 with each, the BUILD at the stream's end)
# and the time zones pytz, dateutil and zoneinfo return (pytz's and zoneinfo's shared by the whole process).
MADE_WHOLE = INDEX_HELPERS | {"pandas._libs.internals._unpickle_block"} | WHOLE_ZONES


def _made_whole(target: Obj) -> bool:
    return isinstance(target.func, Global) and target.func.dotted in MADE_WHOLE


def _one_value_lookup(target: Obj) -> str | None:
    """The class an object was made from with exactly one value, `Class(value)`, however the stream spells it:
    REDUCE or NEWOBJ, NEWOBJ_EX with one positional argument, or copyreg's __newobj__(Class, value) (review 53)."""
    func, args = target.func, target.args
    if not isinstance(func, Global) or not isinstance(args, Seq) or args.dropped:
        return None
    items = args.items
    if func.dotted == "copyreg.__newobj__":
        cls = items[0] if items else None
        return cls.dotted if isinstance(cls, Global) and len(items) == 2 else None
    if func.dotted == "copyreg.__newobj_ex__":
        cls = items[0] if items else None
        given = items[1] if len(items) == 3 else None
        return cls.dotted if isinstance(cls, Global) and isinstance(given, Seq) and len(given.items) == 1 else None
    # NEWOBJ_EX(Class, (value,), {}) is held as Class((value,), {}); as a plain call that shape only fails
    positional = items[0] if len(items) == 2 and isinstance(items[0], Seq) and isinstance(items[1], Dict) else None
    if positional is not None:
        return func.dotted if len(positional.items) == 1 else None
    return func.dotted if len(items) == 1 else None


def _made_from(target: Obj) -> Global | None:
    """The class an object is an instance of, when pickle restored it so: the class NEWOBJ or copyreg's helpers
    were given, or what REDUCE gave nothing but constants (random.Random()) when named like a class. A function's
    result (a module import_module returned) is not named so, nor what a class made from objects (a LinearOperator
    its __new__ chose from the function it was given); and what the allowlist lists under such names are methods of
    classes that make their own instances."""
    func, args = target.func, target.args
    if isinstance(func, Global) and func.dotted in _RESTORED_POSITIONS:
        first = args.items[0] if isinstance(args, Seq) and args.items else None
        return first if isinstance(first, Global) else None
    if isinstance(func, Global) and not target.instance and args is not None and _holds_no_callable(args):
        return func if _class_like(func.dotted) else None  # a class's name, not a function's
    return func if target.instance and isinstance(func, Global) else None


def _holds_no_callable(value: Sym | None, depth: int = 0) -> bool:
    """Nothing, a constant, or a tuple or list of only those (every item kept): what cannot put a callable under any
    name, whatever __setstate__ or BUILD does with it."""
    if value is None or isinstance(value, Const):
        return True
    if isinstance(value, Seq) and value.type in ("tuple", "list") and not value.dropped and depth < 4:
        return all(_holds_no_callable(item, depth + 1) for item in value.items)
    return False


def _owner(target: Obj) -> Global:
    """What calls a callable stored in `target`'s state or items, for the record of that call."""
    return target.func if isinstance(target.func, Global) else Global("builtins", "object")
