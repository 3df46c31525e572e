"""Symbolic execution of a pickle opcode stream: what loading it would import and call.

Nothing is ever imported or called. Values are stand-ins (`Global`, `Obj`, containers of them), so the
machine can follow names kept in the memo, calls whose results are later called or built upon, copyreg
extension codes registered by the same stream, and persistent ids (how PyTorch refers to storages).
"""

from __future__ import annotations

import _compat_pickle
import codecs
import encodings
import encodings.aliases
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from wscan.limits import BudgetExceeded, Limits
from wscan.scanners.pickle_ops import OPCODES, READERS, FrameOverrun, LongBytes, PickleSyntaxError, Stream, Truncated

MAX_ITEMS = 4096  # items kept per container; more are counted, not kept

# Opcode names by byte ("" for bytes that are not opcodes), and the groups the machine treats alike.
NAMES = [OPCODES[code].name if code in OPCODES else "" for code in range(256)]
_CONSTANTS = frozenset({
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT", "STRING", "BINSTRING",
    "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE",
    "BINUNICODE8", "BYTEARRAY8",
})  # fmt: skip
_PY2_STRINGS = frozenset({"STRING", "BINSTRING", "SHORT_BINSTRING"})
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


class Sym:
    """Base of every symbolic value."""

    __slots__ = ()


@dataclass(eq=False, slots=True)
class Const(Sym):
    value: object


@dataclass(eq=False, slots=True)
class Global(Sym):
    """A name find_class would resolve: module plus (possibly dotted) qualified name."""

    module: str
    name: str

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(eq=False, slots=True)
class Obj(Sym):
    """The result of calling `func` with `args`; `state` is what BUILD gave it."""

    func: Sym
    args: Sym
    state: Sym | None = None
    instance: bool = False  # made by NEWOBJ: an instance of `func`, a class (REDUCE may call any function)


@dataclass(eq=False, slots=True)
class Seq(Sym):
    """list, tuple, set or frozenset; items past MAX_ITEMS are counted only, but for the (key, value) pairs a dict
    built from it would take a target from (a Python 2 OrderedDict pickles as a call given its items as pairs)."""

    type: str
    items: list[Sym] = field(default_factory=list)
    dropped: int = 0
    walked: bool = False  # its names noted as values (`_keep`)
    pairs_past: list[tuple[Sym, Sym]] | None = None  # dropped pairs whose key may name a target
    others_past: int = 0  # dropped items that are not pairs (or not kept)

    def add(self, value: Sym) -> None:
        if len(self.items) < MAX_ITEMS:
            self.items.append(value)
        else:
            self.dropped += 1
            self._note_past([value])

    def extend(self, values: list[Sym]) -> None:
        """`add` for each of `values`, in one step (APPENDS of a long list)."""
        room = max(0, MAX_ITEMS - len(self.items))
        self.items.extend(values[:room])
        if len(values) > room:
            self.dropped += len(values) - room
            self._note_past(values[room:])

    def _note_past(self, values: list[Sym]) -> None:
        if not isinstance(self.items[0], Seq | Dict):  # not a list of pairs: a list of numbers costs nothing here
            self.others_past += len(values)
            return
        for value in values:
            pair = _pair(value)
            if pair is None:
                self.others_past += 1
            elif _text(pair[0]) in _PAIR_KEYS or _unread_text(pair[0]):
                if self.pairs_past is None:
                    self.pairs_past = []
                if len(self.pairs_past) < MAX_CONFIG_TARGETS:
                    self.pairs_past.append(pair)
                else:
                    self.others_past += 1

    def pairs(self) -> tuple[list[tuple[Sym, Sym]], bool]:
        """The (key, value) pairs dict(self) takes that the machine can read (a set's both ways round: it iterates
        in its hashes' order), and whether that is all of them."""
        read, whole = [], not self.others_past
        for item in self.items:
            pair = _pair(item)
            if pair is None:
                whole = False
                continue
            read.append(pair)
            if isinstance(item, Seq) and item.type in ("set", "frozenset"):
                read.append((pair[1], pair[0]))
        return read + (self.pairs_past or []), whole


@dataclass(eq=False, slots=True)
class Dict(Sym):
    items: list[tuple[Sym, Sym]] = field(default_factory=list)
    dropped: int = 0
    walked: bool = False  # its names noted as values (`_keep`)

    def add(self, key: Sym, value: Sym) -> None:
        if len(self.items) < MAX_ITEMS:
            self.items.append((key, value))
        else:
            self.dropped += 1

    def get(self, key: str) -> Sym | None:
        """The value of `key`: the last one set, as a dict keeps it when a key is written twice."""
        found = None
        for k, v in self.items:
            if isinstance(k, Const) and k.value == key:
                found = v
        return found


@dataclass(eq=False, slots=True)
class Persistent(Sym):
    """What persistent_load returns for a persistent id (a PyTorch storage, usually)."""

    pid: Sym


class Unknown(Sym):
    """A value the machine cannot know (an out-of-band buffer)."""

    __slots__ = ()


NestedBytes = bytes | LongBytes  # a constant's bytes, or where a long one sits in the blob
CHANGED = object()  # the value of a constant the stream changed in place


@dataclass
class ImportRecord:
    """Every way one resolved name was reached in one stream."""

    module: str
    name: str
    raw: str  # as written in the stream, before Python 2 name mapping
    offset: int
    opcode: str
    count: int = 0
    invoked: set[str] = field(default_factory=set)


@dataclass
class Event:
    """Something other than an import that the rules need to see."""

    kind: str
    offset: int
    attrs: dict[str, str | int | bool]


@dataclass
class PickleResult:
    """What one pickle stream (up to its STOP or its failure) would do when loaded."""

    start: int
    end: int
    imports: dict[str, ImportRecord] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    persistent_ids: list[Sym] = field(default_factory=list)
    protocol: int = 0
    opcodes: int = 0
    stopped: bool = False  # reached STOP
    error: PickleSyntaxError | None = None
    # A scan limit stopped the machine: what it saw until then is reported all the same, then the limit.
    over_budget: BudgetExceeded | None = None
    result: Sym | None = None
    # builtins.getattr: whether the stream imports it, whether it ever went anywhere but the callee's place (into a
    # tuple, list, dict, call arguments, object state, a persistent id, the result), how often it was called,
    # and how often such a call looked a constant name up on an import (see `Machine._invoke`).
    getattr_seen: bool = False
    getattr_escaped: bool = False
    getattr_calls: int = 0
    getattr_lookups: int = 0
    # torch.storage._load_from_bytes(b), which hands the bytes b to torch's full unpickler: each direct call whose
    # argument is a constant (offset of the call, the bytes or where they sit), and whether it was ever used
    # any other way (put anywhere but the callee's place, called with an argument that is not a constant).
    nested_loads: list[tuple[int, NestedBytes]] = field(default_factory=list)
    nested_unread: bool = False
    # torch.distributed.checkpoint's storage records, as made (a container keeps only MAX_ITEMS of its items).
    storage_infos: list[Obj] = field(default_factory=list)
    storage_infos_dropped: int = 0
    # Items set on objects under names pickle later looks up on the instance (see `_items_on_object`), by id.
    # The values SETITEMS put in objects (an OrderedDict of torch hooks), by id, for `_callable_members`.
    object_items: dict[int, tuple[Obj, list[tuple[Sym, Sym]]]] = field(default_factory=dict)
    item_methods: dict[int, tuple[Obj, dict[str, Sym]]] = field(default_factory=dict)
    # Objects (and states) `_after_build` judged, by id; kept alive here so an id is never reused.
    changed: dict[int, Sym] = field(default_factory=dict)
    # Names the stream keeps as plain values (in a list, dict, set, object state or items, call arguments, the
    # result), not only calls or restores.
    kept: set[str] = field(default_factory=set)
    # The dict states BUILD gave objects, with where: judged at the end of the stream (`check_states`), since the
    # stream can still change a state's lists after the BUILD.
    # each with the restored class's name, and its items when BUILD copied them (`_keep_state`)
    states: list[tuple[Dict, int, str, Dict]] = field(default_factory=list)
    # Dict items that a loader instantiates from a checkpoint's hyperparameters (`CONFIG_TARGET_KEYS`): (offset, key,
    # the name as text, or None when the pickle builds it), at most MAX_CONFIG_TARGETS of them.
    config_targets: list[tuple[int, str, str | None]] = field(default_factory=list)
    config_seen: set[tuple[str, str | None]] = field(default_factory=set)
    config_more: int = 0  # distinct ones past the cap: unjudged, which is high (WS-CFG-006)
    # Dicts set under `architecture` (pyannote's checkpoint names its model class there), read at the stream's end.
    architectures: list[tuple[int, Dict | Obj]] = field(default_factory=list)
    # Values set under Lightning's hyperparameter keys that are not dicts, read at the stream's end.
    hyperparameters: list[tuple[int, str, Sym]] = field(default_factory=list)
    # The dict states BUILD gave transformers configs (`scanners.pickled_config` judges them as config.json), as BUILD
    # copied them and as the stream's end leaves them.
    config_states: list[tuple[int, str, Dict]] = field(default_factory=list)
    config_states_more: int = 0  # past MAX_CONFIG_STATES: unread, which is high (WS-PKL-042)
    states_more: bool = False  # dict states past MAX_STATES were not kept for `check_states`
    # Lists read as a call's pairs, by id, with what they held then (`_read_before`).
    pairs_read: dict[int, tuple[Seq, tuple[int, int], bool]] = field(default_factory=dict)
    # The copies `_keep_state` made of each dict state, by the dict's id (the dicts are kept alive in `states`).
    state_copies: dict[int, list[Dict]] = field(default_factory=dict)
    # Text and bytes constants `_zone_files` found naming no zone file, by (id, decoded), each kept alive here so an
    # id is never reused: a memoised constant given to 100,000 calls is decoded once, not 20 times per call.
    zone_free: dict[tuple[int, bool], Const] = field(default_factory=dict)

    @property
    def nested_all_read(self) -> bool:
        """Every use of torch.storage._load_from_bytes was a direct call on bytes the scanner can open."""
        return bool(self.nested_loads) and not self.nested_unread

    @property
    def getattr_only_looks_up(self) -> bool:
        """builtins.getattr was only ever called, each time on an import and a constant name: the load then only
        looks those dotted names up, and they are judged as imports of their own."""
        return self.getattr_seen and not self.getattr_escaped and self.getattr_calls == self.getattr_lookups


def map_py2_name(module: str, name: str) -> tuple[str, str]:
    """Apply the Python 2 -> 3 name mapping that find_class applies to protocols 0-2."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _const(value: Sym | None) -> object:
    return value.value if isinstance(value, Const) else None


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
}
PARTIAL = "functools.partial"
NESTED_LOADER = "torch.storage._load_from_bytes"  # loads its bytes with torch's loader, weights_only off
MAX_NESTED_LOADS = 10_000  # per stream; more is read as a use the scanner did not follow
STORAGE_INFO = "torch.distributed.checkpoint.filesystem._StorageInfo"  # where dcp.load reads an item (dcp.py)
MAX_STORAGE_INFOS = 1_000_000
REBUILD_FROM_TYPE = "torch._tensor._rebuild_from_type_v2"
GETATTR = "builtins.getattr"
# OmegaConf's ${resolver:args}. What follows the colon tells a shell default (${VAR:-x}) from most calls, but
# `${eval:-...}` is a call too: the rules decide (`shell_like`). A name that is itself an interpolation
# (`${${n}:...}`) is computed when the value resolves: reported as COMPUTED_RESOLVER.
RESOLVER_CALL = re.compile(r"\$\{\s*(?:([A-Za-z_][\w.\-]*)\s*:([-=?+]?)|\$\{)")
COMPUTED_RESOLVER = "(computed)"
TOO_MANY_RESOLVERS = "(too many)"


# A shell default that is one plain word (`${python:-python3}` in a docker-compose file): a resolver given it runs
# nothing, whether it evaluates Python (a negated name) or a command (one word, no metacharacters).
_PLAIN_DEFAULT = re.compile(r"[\w./-]*\}")


@dataclass(frozen=True, slots=True)
class ResolverCall:
    """One `${name:...}` in a text: the resolver, and whether its argument reads as a shell default."""

    name: str
    shell_like: bool  # what follows the colon starts like a shell default (`-`, `=`, `?`, `+`)
    plain_default: bool  # ... and is one plain word
    start: int

    @property
    def key(self) -> str:
        """What a file reports once: a plain default never stands for a real call of the same resolver."""
        return f"{self.name} (plain default)" if self.plain_default else self.name


def resolver_calls(text: str) -> Iterator[ResolverCall]:
    """Each resolver call in `text`, in order."""
    for match in RESOLVER_CALL.finditer(text):
        name, shell = match.groups()
        if name is None:
            yield ResolverCall(COMPUTED_RESOLVER, False, False, match.start())
        else:
            plain = bool(shell) and _PLAIN_DEFAULT.match(text, match.end()) is not None
            yield ResolverCall(name, bool(shell), plain, match.start())
MAX_RESOLVERS = 1000  # distinct resolver names reported per file; past it, one TOO_MANY_RESOLVERS
_NEWOBJ_HELPERS = ("copyreg.__newobj__", "copyreg.__newobj_ex__")


# Allowlisted functions that return their first argument: TorchScript's list and type-tag helpers.
IDENTITY_FUNCTIONS = frozenset(
    f"torch.jit._pickle.{name}"
    for name in ("build_intlist", "build_tensorlist", "build_doublelist", "build_boollist", "restore_type_tag")
)


def _module_class(value: Sym) -> Sym:
    """The class a legacy torch.save persistent id ('module', cls, source_file, source) stands for.

    torch.load's legacy persistent_load returns `cls` itself for such an id (torch.save writes one for every
    nn.Module class of a whole-model save), so calling it calls `cls`. No other loader returns anything for a
    persistent id: plain pickle refuses it, torch's zip loader accepts only storages."""
    if isinstance(value, Persistent) and isinstance(value.pid, Seq) and len(value.pid.items) >= 2:
        kind, cls = value.pid.items[0], value.pid.items[1]
        if isinstance(kind, Const) and kind.value == "module" and isinstance(cls, Global):
            return cls
    return value


def _is_partial(value: Sym) -> bool:
    return isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted == PARTIAL


def _is_defaultdict(value: Sym) -> bool:
    return isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted == "collections.defaultdict"


def _newobj_partial(func: Global, args: Sym) -> Obj | None:
    """The partial that copyreg.__newobj__(functools.partial, F, ...) makes, if that is the call."""
    if func.dotted not in _NEWOBJ_HELPERS or not isinstance(args, Seq) or not args.items:
        return None
    made = Obj(args.items[0], Seq("tuple", args.items[1:]))
    return made if _is_partial(made) else None
# Cython's __pyx_unpickle_<Class>(type, checksum, state) and scikit-learn's newObj(cls): cls.__new__ only.
_NEW_HELPERS = ("__pyx_unpickle_", "newObj")


LATIN1 = codecs.lookup("latin-1").name


def _nested_bytes(args: Sym) -> NestedBytes | None:
    """The bytes `_load_from_bytes(b)` loads, when b is a constant: bytes (protocol 3 and up), or text the stream
    turns into bytes with _codecs.encode(text, "latin1") (protocol 2)."""
    if not isinstance(args, Seq) or len(args.items) != 1:
        return None
    arg = args.items[0]
    if isinstance(arg, Const) and isinstance(arg.value, bytes | bytearray):
        return bytes(arg.value)
    if isinstance(arg, Const) and isinstance(arg.value, LongBytes) and not arg.value.text and arg.value.start >= 0:
        return arg.value
    if not (isinstance(arg, Obj) and isinstance(arg.func, Global) and arg.func.dotted == "_codecs.encode"):
        return None
    if not isinstance(arg.args, Seq) or len(arg.args.items) != 2:
        return None
    if not _is_latin1(arg.args.items[1]):
        return None
    text = _const(arg.args.items[0])
    if isinstance(text, str):
        try:
            return text.encode("latin-1")
        except UnicodeEncodeError:  # the loader fails there too
            return None
    if isinstance(text, LongBytes) and text.text and text.start >= 0:
        return text
    return None


# Names pickle looks up on an instance to rebuild it, by the opcode that looks them up.
APPEND_METHODS = {"APPEND": ("append",), "APPENDS": ("extend", "append"), "ADDITEMS": ("add",)}
INSTANCE_LOOKUPS = frozenset({"__setstate__", "append", "extend", "add"})

TIME_CHECK_MASK = 0x3FF  # the deadline is looked at every 1,024 opcodes

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


def _forwarded(func: Global) -> tuple[tuple[int, str], ...]:
    found = FORWARDERS.get(func.dotted)
    if found is not None:
        return found
    leaf = func.name.rsplit(".", 1)[-1]
    return ((0, "new"),) if leaf.startswith(_NEW_HELPERS[0]) or leaf == _NEW_HELPERS[1] else ()


# Hook for format-aware scanners (joblib) that need to act when an object is built.
BuildHook = Callable[["Machine", Obj], None]


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
        self.resolvers: set[str] = set()  # config resolvers already reported for this file
        self.getattr = Global("builtins", "getattr")  # one object, so a push of it is told by identity
        self.nested_loader = Global("torch.storage", "_load_from_bytes")  # the same, for the same reason

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
        if key == GETATTR:
            res.getattr_seen = True
            return self.getattr
        if key == NESTED_LOADER:
            return self.nested_loader
        return Global(mapped_module, mapped_name)

    def _invoke(self, res: PickleResult, func: Sym, args: Sym, how: str, offset: int) -> Sym:
        """A call loading would make: record it, apply the few effects that change later resolution."""
        func = _module_class(func)
        _keep_arguments(res, func, args)
        _zone_files(res, func, args, offset)
        _computed_text(res, func, args, offset)
        _config_pairs(res, func, args, offset)
        if func is self.getattr:
            res.getattr_calls += 1
        if isinstance(func, Global) and func.dotted == NESTED_LOADER:
            source = _nested_bytes(args) if func is self.nested_loader and how == "REDUCE" else None
            if source is None or len(res.nested_loads) >= MAX_NESTED_LOADS:
                res.nested_unread = True
            else:
                res.nested_loads.append((offset, source))
        if isinstance(func, Global):
            record = res.imports.get(func.dotted)
            if record is None:  # a name derived from getattr on a global
                record = ImportRecord(func.module, func.name, func.dotted, offset, how)
                record.count = 1
                res.imports[func.dotted] = record
            record.invoked.add(how)
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
                # name): recorded as one, so the allowlist judges it whether or not it is called.
                if derived.dotted not in res.imports:
                    res.imports[derived.dotted] = ImportRecord(derived.module, derived.name, derived.dotted, offset,
                                                               "getattr")  # fmt: skip
                res.imports[derived.dotted].count += 1
                if func is self.getattr:
                    res.getattr_lookups += 1
                return derived
            if derived is not None:
                return derived
            if func.dotted in IDENTITY_FUNCTIONS and isinstance(args, Seq) and args.items:
                return args.items[0]  # what it was given, itself: a class BUILD then patches is still that class
            if func.dotted == REBUILD_FROM_TYPE and isinstance(args, Seq) and len(args.items) > 3:
                # _rebuild_from_type_v2(func, type, args, state) sets `state` on what func(*args) returns; through an
                # identity helper that is an object the stream already restored: a second BUILD by another name.
                inner, called = args.items[0], args.items[2]
                if isinstance(inner, Global) and inner.dotted in IDENTITY_FUNCTIONS and isinstance(called, Seq):
                    target = called.items[0] if called.items else None
                    if isinstance(target, Obj) and target.state is not None:
                        self._after_build(res, target, f"{how} via {func.dotted}", offset)
            _state_from_call(res, func, args, offset)
        else:
            res.events.append(Event("pickle.dynamic_call", offset, {"opcode": how, "callee": describe(func)}))
        made = Obj(func, args)
        if isinstance(func, Global) and func.dotted == STORAGE_INFO:
            if len(res.storage_infos) < MAX_STORAGE_INFOS:
                res.storage_infos.append(made)
            else:
                res.storage_infos_dropped += 1
        return made

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
            self._forward(res, inner[0], inner[1], how, offset, depth + 1)

    def _mark(self, res: PickleResult, func: Global, target: Sym, use: str, how: str, offset: int) -> None:
        """`func` calls or instantiates `target`: judge a name as called, anything computed as a dynamic call."""
        if _is_partial(target):
            return  # a partial's callable is judged as called where the partial is made or built
        if isinstance(target, Global):
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
        if func.dotted == GETATTR and isinstance(args, Seq) and args.type == "tuple" and len(args.items) == 2:
            target, attr = args.items[0], _const(args.items[1])
            if isinstance(target, Global) and isinstance(attr, str):
                return Global(target.module, f"{target.name}.{attr}")
            made = _made_from(target) if isinstance(target, Obj) and target.state is None else None
            if made is not None and isinstance(attr, str) and attr.isidentifier() and not attr.startswith("__"):
                # A method of an object the stream restored and has not given a state yet (a SciPy discrete
                # distribution keeps its own _entropy in a vectorize, before its BUILD): the class's function of
                # that name, judged by the allowlist like an import. Once BUILD gave the object a state, the name
                # may be an attribute of that state instead (a review handed a payload dict on so).
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
        check_states(res)
        check_architectures(res)
        check_hyperparameters(res)
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
            if res.getattr_seen and any(v is getattr_global for v in values):
                res.getattr_escaped = True
            if any(v is nested_loader for v in values):
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
                stack.append(memo[index])
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
                stack.append(made)
            elif name == "BUILD":
                state = pop()
                escape([state])
                target = top()
                _keep(res, _built_values(target, state))
                self._build(res, target, state, at)
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
                stack.append(Unknown())
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
                stack.append(self._invoke(res, cls, Seq("tuple", [args, kwargs]), name, at))
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
                stack.append(Persistent(pid))
            else:
                raise PickleSyntaxError(at, f"unhandled opcode {name}")

    def _build(self, res: PickleResult, target: Sym, state: Sym, at: int) -> None:
        target = _module_class(target)  # legacy torch: the id is the class (or whatever it names) itself
        if isinstance(target, Global):
            # BUILD on a module or class sets attributes on it: the load patches the interpreter.
            res.events.append(
                Event("pickle.build_global", at, {"callable": target.dotted, "opcode": "BUILD"})
            )
            record = res.imports.get(target.dotted)
            if record is not None:
                record.invoked.add("BUILD")
            return
        if isinstance(target, Obj):
            if isinstance(target.func, Global):
                record = res.imports.get(target.func.dotted)
                if record is not None:
                    record.invoked.add("BUILD")
            if target.state is not None:
                self._after_build(res, target, "BUILD", at)
            target.state = state
            _judge_state(res, target, state, at)
            # A partial's (func, args, keywords, dict) is what its call is given; any other state, what pandas reads
            # (a DatetimeTZDtype restored with a `tz` of such a name), but an array's: its items are data.
            if restored_class(target) not in _ARRAY_REBUILDERS:
                _zone_files(res, target.func, state, at)
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
            if self.on_build is not None:
                self.on_build(self, target)

    def _mutation(self, res: PickleResult, target: Sym, opcode: str, at: int) -> None:
        target = _module_class(target)
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


# What makes tensors, arrays and storages: torch's rebuild functions, torch's and NumPy's classes.
_TENSOR_MAKERS = ("torch.", "numpy.")


def _tensor_memory(target: Sym) -> bool:
    """A storage (what torch's persistent_load returns) or an object torch or NumPy made: not a dict."""
    if isinstance(target, Persistent):
        return True
    return isinstance(target, Obj) and restored_class(target).startswith(_TENSOR_MAKERS)


_STR_CLASSES = frozenset({"builtins.str", "__builtin__.str", "__builtin__.unicode"})
# Restores: the class a copyreg helper makes is not a value the object keeps (nor _reconstructor's base).
_RESTORED_POSITIONS = {"copyreg.__newobj__": 1, "copyreg.__newobj_ex__": 1, "copyreg._reconstructor": 2}


ZONE_FILE_MARK = "dateutil/"


def _literal_bytes(value: Sym) -> bool:
    """Bytes written as they are: a constant (Python 2 wrote them as text), or protocol 2's
    _codecs.encode(text, "latin1") of a constant."""
    if isinstance(value, Const):
        return isinstance(value.value, bytes | bytearray | LongBytes | str)
    if not (isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted == "_codecs.encode"):
        return False
    parts = value.args.items if isinstance(value.args, Seq) else []
    return len(parts) == 2 and isinstance(parts[0], Const) and _is_latin1(parts[1])


def _is_latin1(value: Sym) -> bool:
    name = _const(value)
    try:
        return isinstance(name, str) and codecs.lookup(name).name == LATIN1
    except LookupError:
        return False


def _is_text(value: Sym) -> bool:
    return isinstance(value, Const) and isinstance(value.value, str)


def _computed_text(res: PickleResult, func: Sym, args: Sym, at: int) -> None:
    """Text the stream computes: _codecs.encode with any codec but latin-1 (rot13 turns text into text),
    str(bytes, encoding), str(object). Writers put strings in the stream as they are and use _codecs.encode only to
    make bytes from latin-1 text (protocol 2); reviews hid a time zone file name from WS-PKL-030 all three ways
    (str of a DatetimeTZDtype restored with that zone is its dtype string)."""
    if not (isinstance(func, Global) and isinstance(args, Seq)):
        return
    if func.dotted == "_codecs.encode":
        if len(args.items) == 2 and _is_latin1(args.items[1]):
            return
    elif func.dotted in _NUMPY_SCALAR:
        if len(args.items) == 2 and _literal_bytes(args.items[1]):
            return  # what NumPy writes: the scalar's own bytes (a string scalar's text as UCS-4)
    elif not (func.dotted in _TEXT_CLASSES and (len(args.items) > 1 or not all(map(_is_text, args.items)))):
        return  # str(text) is the text; str(bytes, encoding) decodes, str(object) asks the object (a dtype's name)
    attrs: dict[str, str | int | bool] = {"callable": func.dotted, "args": describe(args)}
    res.events.append(Event("pickle.computed_text", at, attrs))


ZONE_CODECS = ("latin-1", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")  # how bytes may carry the name
ZONE_WALK = 256  # values looked at per call or state
ZONE_CACHE = 65536  # constants `_zone_files` remembers as naming no zone file, at most (about 10 MB)
ZONE_DEPTH = 6  # a call's arguments, a scalar made in them, its bytes made by protocol 2's _codecs.encode, its text
_NUMPY_SCALAR = frozenset({"numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar"})
_ARRAY_REBUILDERS = frozenset({"numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct"})
_TEXT_CLASSES = _STR_CLASSES | {"numpy.str_", "numpy.unicode_"}


def _names_zone_file(value: Sym, decoded: bool) -> bool:
    """A constant naming a `dateutil/` zone as pandas reads one: a name that starts so, or a dtype string
    (`datetime64[ns, dateutil/...]`); a long constant by its kept start. Where the constant is decoded into text
    (`decoded`: a NumPy string scalar keeps its text as UCS-4 bytes, str(bytes, encoding)), its bytes too, in the
    encodings that could carry the name (protocol 2 writes bytes as latin-1 text)."""
    if not isinstance(value, Const):
        return False
    data = value.value.prefix if isinstance(value.value, LongBytes) else value.value
    if isinstance(data, str):
        if _zone_text(data):
            return True
        if not decoded:
            return False
        try:
            data = data.encode("latin-1")
        except UnicodeEncodeError:
            return False
    if not (decoded and isinstance(data, bytes | bytearray)):
        return False
    return any(_zone_text(bytes(data[skip:]).decode(codec, "ignore")) for codec in ZONE_CODECS for skip in range(4))


def _zone_text(text: str) -> bool:
    text = text.strip("\x00")
    # a name, or a type string pandas parses: datetime64[ns, ...], M8[...], pyarrow's timestamp[ns, tz=...]
    return text.startswith(ZONE_FILE_MARK) or (ZONE_FILE_MARK in text and "[" in text)


# Calls that make bytes: their text arguments are data (a string column's buffer), not names pandas reads.
_BYTES_MAKERS = frozenset({"_codecs.encode", "builtins.bytearray", "builtins.bytes", "pyarrow.lib.py_buffer"})


_UNCHANGING = (str, bytes, LongBytes, int, float, type(None))  # constants that keep their value (bool is an int)


def _zone_files(res: PickleResult, func: Sym, args: Sym, at: int) -> None:
    """Strings a call is given (or a partial will give) that pandas reads as a time zone file: it hands what follows
    `dateutil/` to dateutil's gettz, which opens any path (reviews read a file outside the folder through
    DatetimeTZDtype, Timestamp, a Series' dtype string and NumPy string scalars so). Real pickles give pandas
    zone objects, never such names. Looked for a few levels into the arguments (keywords, tuples, the calls that
    make them); bytes only where they become text."""
    if isinstance(func, Global) and func.dotted in _BYTES_MAKERS | _NUMPY_SCALAR | _TEXT_CLASSES:
        return  # bytes are data, and a string scalar or decoded text is judged where a call is given it
    level: list[tuple[Sym, bool]] = [(args, False)]
    seen = 0
    for _ in range(ZONE_DEPTH):
        inner: list[tuple[Sym, bool]] = []
        for value, decoded in level:
            if isinstance(value, Const):
                # text, bytes and numbers never change; a bytearray can (`_mutation`), so it is read every time
                known = isinstance(value.value, _UNCHANGING)
                if known and (id(value), decoded) in res.zone_free:
                    continue
                if _names_zone_file(value, decoded):
                    attrs: dict[str, str | int | bool] = {"callable": describe(func), "name": describe(value)}
                    res.events.append(Event("pickle.zone_file", at, attrs))
                    return
                if known:
                    if len(res.zone_free) >= ZONE_CACHE:
                        res.zone_free.clear()  # a memo, not a record: bounded, and refilled by what recurs
                    res.zone_free[id(value), decoded] = value
                continue
            room = ZONE_WALK - len(inner)  # what the next level reads at most, not built past (review 27's calls)
            if isinstance(value, Seq):
                inner.extend((item, decoded) for item in value.items[:room])
            elif isinstance(value, Dict):
                inner.extend((item, decoded) for pair in value.items[:room] for item in pair)
            elif isinstance(value, Obj) and isinstance(value.func, Global):
                maker = value.func.dotted
                if maker in _NUMPY_SCALAR or maker in _TEXT_CLASSES or (decoded and maker in _BYTES_MAKERS):
                    inner.append((value.args, True))
                elif maker not in _BYTES_MAKERS:
                    inner.append((value.args, False))
        seen += len(level)
        if seen > ZONE_WALK:
            return
        level = inner[:ZONE_WALK]


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
}


# Keys of a checkpoint's hyperparameters that loaders import and call: Hydra's `_target_`, which NeMo's models (and
# any module that calls hydra.utils.instantiate on its config) build in __init__, and Lightning's `_instantiator`,
# which load_from_checkpoint imported and called before 2.6.6 (Lightning #21822), whatever it named.
INSTANTIATOR_KEY = "_instantiator"  # Lightning's, in a checkpoint's hyperparameters
CONFIG_TARGET_KEYS = frozenset({"_target_", INSTANTIATOR_KEY})
# Lightning's dict subclass for hyperparameters, by every name it has had.
LIGHTNING_ATTRIBUTE_DICTS = frozenset({
    "lightning.fabric.utilities.data.AttributeDict", "lightning.pytorch.utilities.parsing.AttributeDict",
    "lightning_fabric.utilities.data.AttributeDict", "pytorch_lightning.utilities.parsing.AttributeDict",
})  # fmt: skip
MAX_CONFIG_TARGETS = 1000
MAX_CONFIG_STATES = 1000  # transformers config states kept for `scanners.pickled_config`
ARCHITECTURE_KEY = "architecture"
PYANNOTE_ARCHITECTURE = "pyannote.audio architecture"  # the key its module and class are reported under
_OMEGACONF_VALUE = "_val"  # an OmegaConf node's value, in its BUILD state (a DictConfig's items are nodes)


def _config_targets(res: PickleResult, pairs: list[Sym], at: int) -> None:
    """Note the items of a dict being filled whose key a loader instantiates; their values as text. A key is read as
    text as `_text` reads it: a numpy.str_ equals the str it holds, as a dict key too (review 23). A key that may be
    text the machine cannot read (str of bytes in an unknown codec), given a text value, may be any of them."""
    for index in range(0, len(pairs) - 1, 2):
        key, value = _text(pairs[index]), pairs[index + 1]
        if key in CONFIG_TARGET_KEYS:
            if _not_text(value):
                continue  # a token's id in a vocabulary: Hydra and Lightning fail on a number (review 27)
            for text in _config_texts(res, value):
                if key == INSTANTIATOR_KEY and text is not None and "." not in text and "${" not in text:
                    # Lightning imports it by `text.rsplit(".", 1)`, which raises without a dot (review 29); an
                    # OmegaConf interpolation resolves to other text first (review 32)
                    continue
                _config_target(res, at, key, text)
        elif key == ARCHITECTURE_KEY and isinstance(value, Dict | Obj):
            _architecture(res, at, value)
        elif (key in HYPERPARAMETER_KEYS and not isinstance(value, Dict)) or key in HYPERPARAMETER_TYPE_KEYS:
            _hyperparameters(res, at, key, value)
        elif _unread_text(pairs[index]):  # may be any key above (review 27 hid `hparams` and `architecture` so)
            if (text := _text(value)) is not None:
                _config_target(res, at, UNREAD_KEY, None)
                _config_target(res, at, UNREAD_KEY, text)  # judged too: a gadget is critical
            if isinstance(value, Dict | Obj):
                _architecture(res, at, value)
            if isinstance(value, Seq | Obj):
                _hyperparameters(res, at, "hparams", value)


# Lightning's load_from_checkpoint merges the checkpoint's hyperparameters, and before that the 0.7-era keys, with
# dict.update (lightning/pytorch/core/saving.py, `_load_state`): a mapping, or any iterable of pairs. Writers store a
# dict, an AttributeDict, an argparse Namespace or an OmegaConf DictConfig there; pairs in anything else (a numpy
# array of rows, review 26) are read at the stream's end, as the loader sees them.
HYPERPARAMETER_KEYS = frozenset({"hyper_parameters", "hparams", "module_arguments"})
_HYPERPARAMETER_CLASSES = frozenset({
    "builtins.dict", "collections.OrderedDict", "collections.defaultdict", "argparse.Namespace",
    "omegaconf.dictconfig.DictConfig", "easydict.EasyDict", *LIGHTNING_ATTRIBUTE_DICTS,
})  # fmt: skip
UNREAD_KEY = "(a key the machine cannot read)"
# What Lightning's _load_state calls on the merged hyperparameters (`_convert_loaded_hparams`): a class the checkpoint
# names, which it writes only for OmegaConf's containers (review 29: builtins.list turned a tuple key into a pair).
HYPERPARAMETER_TYPE_KEYS = frozenset({"hparams_type", "datamodule_hparams_type"})
_PAIR_KEYS = CONFIG_TARGET_KEYS | HYPERPARAMETER_KEYS | {ARCHITECTURE_KEY}  # keys `_config_targets` reads values of


def _hyperparameters(res: PickleResult, at: int, key: str, value: Sym) -> None:
    if len(res.hyperparameters) < MAX_CONFIG_TARGETS:
        res.hyperparameters.append((at, key, value))
    else:
        res.config_more += 1


def _list_items_set(res: PickleResult, at: int) -> None:
    """list[i] = v, which no writer pickles: the pairs any list makes are unknown from there (reviews 27 and 28 turned
    a pair appended as ['a', 'b'] into a `_target_` pair so, inside a list read before or past MAX_ITEMS)."""
    _config_target(res, at, UNREAD_PAIRS, None)
    res.pairs_read.clear()


def check_hyperparameters(res: PickleResult) -> None:
    """Hyperparameters that are not a dict, as the stream's end leaves them, where dict.update may take pairs from
    them: a list of pairs is read pair by pair; pairs the machine cannot read, and an object that may be a mapping
    or hold rows of text (a numpy array of objects or text), are an unread target. What makes the update raise is
    left alone, as the load fails there (review 27): an item that is certainly no pair, an object that is neither
    iterable nor a mapping, numbers; and anything but a mapping under `hyper_parameters`, which Lightning first
    updates with the caller's arguments. Only the checkpoint's own keys, when the stream's result is a dict."""
    top = res.result if isinstance(res.result, Dict) and not res.result.dropped else None
    for at, key, value in res.hyperparameters:
        if top is not None and not any(held is value for _, held in top.items):
            continue  # Lightning reads these keys of the checkpoint itself (a vocabulary elsewhere may hold them)
        if key in HYPERPARAMETER_TYPE_KEYS:
            if not (isinstance(value, Const) and isinstance(value.value, str | None)) and not (
                isinstance(value, Global) and value.dotted in _HYPERPARAMETER_TYPES
            ):
                _config_target(res, at, UNREAD_PAIRS, None)
            continue
        if isinstance(value, Seq):
            if key == LIGHTNING_HYPERPARAMETERS or any(_no_pair(item) for item in value.items):
                continue
            read, whole = value.pairs()
            _config_targets(res, [part for pair in read for part in pair], at)
            if not whole:
                _config_target(res, at, UNREAD_PAIRS, None)
        elif isinstance(value, Obj) and not _not_a_mapping(value, key):
            _config_target(res, at, UNREAD_PAIRS, None)


LIGHTNING_HYPERPARAMETERS = "hyper_parameters"
# The classes Lightning writes as hparams_type (OmegaConf's containers), and the mappings it may convert to.
_HYPERPARAMETER_TYPES = frozenset({"omegaconf.dictconfig.DictConfig", "omegaconf.listconfig.ListConfig"}) | (
    LIGHTNING_ATTRIBUTE_DICTS
)
_NOT_MAPPINGS = frozenset({"argparse.Namespace", "types.SimpleNamespace"})  # neither iterable nor mappings


def _no_pair(item: Sym) -> bool:
    """dict.update raises on `item`: a number, text or bytes not of length two, a container known not to hold two."""
    if isinstance(item, Const):
        return not (isinstance(item.value, str | bytes) and len(item.value) == 2)
    if isinstance(item, Seq) and item.type in ("list", "tuple"):
        return not item.dropped and len(item.items) != 2
    members = _members(item) if isinstance(item, Dict | Seq) else None
    return members is not None and len(members) != 2


def _not_a_mapping(value: Obj, key: str) -> bool:
    """An object dict.update cannot take pairs from (or, under `hyper_parameters`, one the loader cannot update),
    or a mapping whose items the machine reads where they are set."""
    made = restored_class(value)
    if made in _HYPERPARAMETER_CLASSES or made in _NOT_MAPPINGS or _not_text(value) or _text(value) is not None:
        return True  # text too: its items are characters, one each, which no update takes (review 29)
    if made in _ARRAY_REBUILDERS:  # a numpy array: no update(); its rows are pairs of numbers or bytes, or may be text
        state = value.state.items if isinstance(value.state, Seq) else []
        kind = _dtype_text(state[2]) if len(state) > 2 else None
        shape = [_const(size) for size in state[1].items] if len(state) > 1 and isinstance(state[1], Seq) else None
        rows = shape is None or (len(shape) == 2 and shape[-1] == 2)  # text in any other shape makes no pair
        return key == LIGHTNING_HYPERPARAMETERS or (
            kind is not None and (bool(_NOT_TEXT_DTYPE.fullmatch(kind)) or (not _OBJECTS.fullmatch(kind) and not rows))
        )
    return False


def _not_text(value: Sym) -> bool:
    """A number, bytes or None, a list or dict, or a numpy scalar of a dtype that is not text: no loader takes it for
    a name (Hydra and Lightning fail on each; a vocabulary maps a `_target_` token to one)."""
    if isinstance(value, Seq | Dict):
        return True
    if isinstance(value, Const):
        return not isinstance(value.value, str)
    if isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted in _NUMPY_SCALARS:
        kind = _dtype_text(value.args.items[0]) if isinstance(value.args, Seq) and value.args.items else None
        return kind is not None and bool(_NOT_TEXT_DTYPE.fullmatch(kind))
    return False


# Classes whose instances are text (str subclasses), for keys the machine cannot read as text.
_KEY_TEXT_CLASSES = _STR_CLASSES | {"numpy.str_", "numpy.unicode_", "torch.torch_version.TorchVersion"}


def _unread_text(key: Sym, depth: int = 0) -> bool:
    """A key made as text the machine cannot read: a str class (however made: copyreg's helpers,
    _rebuild_from_type_v2) given something else than one text (bytes in a codec not looked up), a numpy scalar of
    a dtype that may be unicode (any but the kinds NumPy writes for numbers and bytes), or any call given one such
    key (numpy.object_ returns what it is given: review 28)."""
    if not (isinstance(key, Obj) and isinstance(key.func, Global) and isinstance(key.args, Seq)) or _text(key):
        return False
    name, args = key.func.dotted, key.args.items
    if name in _NUMPY_SCALARS:
        kind = _dtype_text(args[0]) if args else None
        return kind is None or not _NOT_TEXT_DTYPE.fullmatch(kind)
    made = restored_class(key) if name in _RESTORED_POSITIONS else name
    if name == REBUILD_FROM_TYPE:  # the type it makes the result an instance of
        made = args[1].dotted if len(args) > 1 and isinstance(args[1], Global) else made
    if made in _KEY_TEXT_CLASSES:
        return True
    given, _ = _text_arguments(name, args)
    return len(given) == 1 and depth < MAX_TEXT_DEPTH and _unread_text(given[0], depth + 1)


def _architecture(res: PickleResult, at: int, value: Dict | Obj) -> None:
    if len(res.architectures) < MAX_CONFIG_TARGETS:
        res.architectures.append((at, value))
    else:
        res.config_more += 1  # unread: counted like targets past the cap


def _mapping(res: PickleResult, value: Sym, depth: int = 0) -> tuple[list[tuple[Sym, Sym]], bool]:
    """What a dict-like value holds at the stream's end, and whether that is all of it: a dict's items, or an
    object's (an OrderedDict, a ChainMap) from the pairs, dicts or mappings its call was given and the items SETITEMS
    put in it since. A mapping class given what the machine cannot read, or a dict past MAX_ITEMS, is not whole."""
    if isinstance(value, Dict):
        return list(value.items), not value.dropped
    if not (isinstance(value, Obj) and isinstance(value.args, Seq)) or depth > MAX_MAPPING_DEPTH:
        return [], False
    called = value.func.dotted if isinstance(value.func, Global) else ""
    builds = _MAPPING_ARGUMENTS.get(called)
    if called == "copyreg._reconstructor":  # a dict only when the base is one
        base = value.args.items[1] if len(value.args.items) > 1 else None
        builds = builds if isinstance(base, Global) and base.dotted in _DICT_BUILDERS else None
    items: list[tuple[Sym, Sym]] = []
    whole = True
    for argument in value.args.items[builds] if builds is not None else value.args.items[:4]:
        if isinstance(argument, Dict) or (builds is not None and isinstance(argument, Obj)):
            found, complete = _mapping(res, argument, depth + 1)
        elif isinstance(argument, Seq):
            found, complete = argument.pairs()
        else:
            found, complete = [], builds is None or _is_none(argument)
        items += found
        whole = whole and (complete or builds is None)
    filled = res.object_items.get(id(value))
    items += filled[1] if filled is not None else []
    return items, whole and not any(isinstance(key, Unknown) for key, _ in items)


def _config_target(res: PickleResult, at: int, key: str, text: str | None) -> None:
    """One name a loader would build, once per file; past MAX_CONFIG_TARGETS distinct ones, counted."""
    if (key, text) in res.config_seen:
        return
    if len(res.config_targets) < MAX_CONFIG_TARGETS:
        res.config_seen.add((key, text))
        res.config_targets.append((at, key, text))
    else:
        res.config_more += 1


# Calls that build a dict from the pairs or mapping at this argument. Writers never call them so (a dict pickles as
# itself, an OrderedDict or defaultdict as an empty call then SETITEMS, a dict subclass's state as a dict), so pairs
# the machine cannot read there, or did not keep, may hide a target (review 25: a numpy array of rows, one pair of
# another kind, 4,097 pairs): that is an unread target.
_DICT_BUILDERS = {"builtins.dict": 0, "collections.OrderedDict": 0, "collections.defaultdict": 1,
                  "copyreg._reconstructor": 2, "easydict.EasyDict": 0,
                  **dict.fromkeys(LIGHTNING_ATTRIBUTE_DICTS, 0)}  # fmt: skip
UNREAD_PAIRS = "(pairs the machine cannot read)"
# Classes that build a mapping from arguments, and which of them: the dict builders' one, every map of a ChainMap.
_MAPPING_ARGUMENTS = {**{name: slice(at, at + 1) for name, at in _DICT_BUILDERS.items()},
                      "collections.ChainMap": slice(0, 4)}  # fmt: skip
MAX_MAPPING_DEPTH = 8  # mappings built from mappings, followed


def _config_pairs(res: PickleResult, func: Sym, args: Sym, at: int) -> None:
    """A call given (key, value) pairs or a dict builds a dict of them (dict(pairs), OrderedDict(pairs),
    copyreg._reconstructor(cls, dict, pairs), a dict subclass's constructor): judged as SETITEMS' are, every pair
    the machine can read (any iterable of twos, review 24)."""
    if not isinstance(args, Seq):
        return
    for argument in args.items[:4]:
        if isinstance(argument, Dict):
            _config_targets(res, [part for pair in argument.items for part in pair], at)
        elif isinstance(argument, Seq):
            _read_pairs(res, argument, at)
    position = _DICT_BUILDERS.get(func.dotted) if isinstance(func, Global) else None
    if position == 2:  # copyreg._reconstructor(cls, base, state): a dict only when the base is one
        base = args.items[1] if len(args.items) > 1 else None
        position = position if isinstance(base, Global) and base.dotted in _DICT_BUILDERS else None
    given = args.items[position] if position is not None and position < len(args.items) else None
    if given is None or isinstance(given, Dict) or (isinstance(given, Const) and given.value is None):
        return
    if not (isinstance(given, Seq) and _read_pairs(res, given, at)):
        _config_target(res, at, UNREAD_PAIRS, None)


MAX_ARCHITECTURE_NAMES = 16  # (module, class) combinations judged per architecture; more are unread


MIN_CACHED_PAIRS = 8  # lists at least this long are read as pairs once while unchanged
MAX_CACHED_LISTS = 10_000


def _read_pairs(res: PickleResult, seq: Seq, at: int) -> bool:
    """Judge the pairs a call given `seq` may build a dict of; whether they are all read. A long list is read once
    while unchanged (as long; a SETITEMS on it forgets the reading): a review passed one memoised list of 4,096
    pairs to dict() 200,000 times, past the time budget."""
    version = (len(seq.items), seq.dropped)
    seen = res.pairs_read.get(id(seq)) if len(seq.items) >= MIN_CACHED_PAIRS else None
    if seen is not None and seen[1] == version:
        return seen[2]
    pairs, whole = seq.pairs()
    _config_targets(res, [part for pair in pairs for part in pair], at)
    if len(seq.items) >= MIN_CACHED_PAIRS:
        if len(res.pairs_read) >= MAX_CACHED_LISTS:
            res.pairs_read.clear()  # start over: a review filled it, then gave one list to 10,000 calls
        res.pairs_read[id(seq)] = (seq, version, whole)  # the list kept alive: its id is never reused
    return whole


def _known_mapping(value: Obj) -> bool:
    """A mapping class the machine reads the items of: the builders, and the dict subclasses writers store."""
    called = value.func.dotted if isinstance(value.func, Global) else ""
    return called in _MAPPING_ARGUMENTS or restored_class(value) in _HYPERPARAMETER_CLASSES | _MAPPING_ARGUMENTS.keys()


def check_architectures(res: PickleResult) -> None:
    """pyannote.audio's Model.from_pretrained imports the checkpoint's `architecture` `module` and calls
    `load_from_checkpoint` on its `class`: the names as the stream's end leaves the mapping (what the loader reads),
    every one it may hold (a key set twice, a ChainMap's maps), keys read as `_text` reads them (review 27)."""
    for at, value in res.architectures:
        items, whole = _mapping(res, value)
        if isinstance(value, Obj) and not (_known_mapping(value) or _not_text(value) or _text(value) is not None):
            whole = False  # a numpy record, a pandas Series: pyannote reads ['module'] from either (review 29)
        modules = [_text(found) for key, found in items if _text(key) == "module"]
        classes = [_text(found) for key, found in items if _text(key) == "class"]
        unread = not whole or any(_unread_text(key) for key, _ in items)
        if not modules and not classes and not unread:
            continue  # another library's `architecture`
        names = {(module, name) for module in dict.fromkeys(modules or [None])
                 for name in dict.fromkeys(classes or [None])}  # fmt: skip
        if unread or len(names) > MAX_ARCHITECTURE_NAMES:
            _config_target(res, at, PYANNOTE_ARCHITECTURE, None)
        for module, name in list(names)[:MAX_ARCHITECTURE_NAMES]:
            _config_target(res, at, PYANNOTE_ARCHITECTURE, f"{module}.{name}" if None not in (module, name) else None)


def _config_texts(res: PickleResult, value: Sym) -> list[str | None]:
    """A config value as the loader may read it: a string, or the string an OmegaConf node holds (as each BUILD
    copied its state, and as the state is now: a SETITEMS after the BUILD changes the dict, not the node); None
    for anything else."""
    own = _text(value)
    if isinstance(value, Obj) and isinstance(value.state, Dict) and restored_class(value).startswith("omegaconf."):
        states = [*res.state_copies.get(id(value.state), []), value.state]
        held = [found for state in states if (found := state.get(_OMEGACONF_VALUE)) is not None]
        texts = [_text(found) for found in held] + ([own] if own is not None else [])
        return list(dict.fromkeys(texts)) if texts else [None]
    return [own]


def _text(value: Sym | None, depth: int = 0) -> str | None:
    """A string the pickle holds: a constant, `str(constant)`, `str(bytes, encoding)`, or a numpy.str_ (NumPy's
    scalar rebuild from a unicode dtype and its UTF-32 bytes), which equals its text, as a dict key too (reviews
    23 to 26)."""
    if isinstance(value, Const):
        return value.value if isinstance(value.value, str) else None
    if not (isinstance(value, Obj) and isinstance(value.func, Global) and isinstance(value.args, Seq)):
        return None
    if value.func.dotted in _NUMPY_SCALARS and len(value.args.items) == 2:
        return _unicode_scalar(value.args.items[0], value.args.items[1])
    # A str subclass made from text equals that text, as a dict key too (review 25: copyreg's helpers, numpy.str_,
    # torch's TorchVersion), and so does what numpy.object_ returns (review 28). Any class given one text, or one
    # call that made text, is read so: a key taken for `_target_` that is not one only adds a finding.
    given, keywords = _text_arguments(value.func.dotted, value.args.items)
    if len(given) == 1 and not (keywords and keywords.items) and isinstance(given[0], Obj):
        return _text(given[0], depth + 1) if depth < MAX_TEXT_DEPTH else None
    return _decoded(given, keywords)


_NUMPY_SCALARS = frozenset({"numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar"})
_TEXT_POSITIONS = {"copyreg._reconstructor": 2, "copyreg.__newobj__": 1}  # where copyreg's helpers take the text


MAX_TEXT_DEPTH = 8  # calls made on calls' text, followed


def _text_arguments(name: str, args: list[Sym]) -> tuple[list[Sym], Dict | None]:
    """The arguments a call passes to the class it makes: after copyreg's class (and base), the arguments
    _rebuild_from_type_v2(func, type, args, state) calls func with, or the (args, kwargs) of __newobj_ex__ and of
    NEWOBJ_EX, which the machine records as a call given those two."""
    if name == REBUILD_FROM_TYPE:
        return (args[2].items, None) if len(args) > 2 and isinstance(args[2], Seq) else ([], None)
    if name == "copyreg.__newobj_ex__":
        args = args[1:]
    elif name in _TEXT_POSITIONS:
        return args[_TEXT_POSITIONS[name] :][:3], None
    if len(args) == 2 and isinstance(args[0], Seq) and isinstance(args[1], Dict):
        return args[0].items, args[1]
    return args, None


# str(bytes, encoding, errors) decodes: the codecs a key may be decoded with, by every name Python's codec registry
# takes for them (its alias table, read as data). Other codecs are not looked up (a lookup imports a codec module by
# name): such a key is unread.
_DECODERS = ("ascii", "utf_8", "latin_1", "utf_16", "utf_16_le", "utf_16_be", "utf_32", "utf_32_le", "utf_32_be")
_CODECS = {**dict(zip(_DECODERS, _DECODERS, strict=True)),
           **{alias: codec for alias, codec in encodings.aliases.aliases.items() if codec in _DECODERS}}  # fmt: skip
_ERRORS = frozenset({"strict", "ignore", "replace", "surrogateescape", "backslashreplace"})


def _decoded(given: list[Sym], keywords: Dict | None) -> str | None:
    """str(object, encoding, errors), by position or keyword: bytes decoded with a known codec, or plain text."""
    named = ("object", "encoding", "errors")
    values = [given[i] if i < len(given) else keywords.get(name) if keywords else None for i, name in enumerate(named)]
    if len(given) > 3 or any(value is not None and not isinstance(value, Const) for value in values[1:]):
        return None
    # bytes as the stream spells them: protocol 2 writes them as _codecs.encode(text, 'latin1')
    source = _nested_bytes(Seq("tuple", [values[0]])) if isinstance(values[0], Obj) else _const(values[0])
    encoding, errors = _const(values[1]), _const(values[2])
    if encoding is None and errors is None:
        return source if isinstance(source, str) else None
    codec = _CODECS.get(_normalized(encoding)) if isinstance(encoding, str) else "utf_8" if encoding is None else None
    if not (isinstance(source, bytes | bytearray) and codec is not None and (errors is None or errors in _ERRORS)):
        return None
    try:
        return bytes(source).decode(codec, errors if isinstance(errors, str) else "strict")
    except UnicodeDecodeError:
        return None


def _normalized(encoding: str) -> str:
    """A codec name as the registry looks it up: lower case, spaces as underscores, then encodings' own
    normalisation (other punctuation runs as one underscore), dots as underscores."""
    return encodings.normalize_encoding(encoding.lower().replace(" ", "_")).replace(".", "_")


_UNICODE_DTYPE = re.compile(r"([<>=|]?)U(\d+)")
# The dtype texts NumPy writes for scalars that are not text (a kind and a size: 'i8', 'f4', 'b1', 'M8', 'S5'):
# a scalar key of any other dtype may be text (review 27: 'str' and 'unicode' with the size in the BUILD state).
_OBJECTS = re.compile(r"[<>=|]?O\d*")  # an object dtype: its items may be anything, pairs too
_NOT_TEXT_DTYPE = re.compile(r"[<>=|]?[biufcmMS?]\d*")  # not V: a record's fields may be text (review 29)
# A dtype's BUILD state by its length: where the byte order and the item size are (numpy's arraydescr_setstate).
_DTYPE_STATE = {9: (1, 5), 8: (1, 5), 7: (1, 5), 6: (1, 4), 5: (0, 3)}


def _dtype_text(dtype: Sym) -> str | None:
    """The text numpy.dtype was called with ('<U8'), if it was."""
    if not (isinstance(dtype, Obj) and isinstance(dtype.args, Seq) and dtype.args.items):
        return None
    kind = _const(dtype.args.items[0])
    return kind if isinstance(kind, str) else None


def _unicode_scalar(dtype: Sym, data: Sym) -> str | None:
    """The text of numpy.str_: dtype('U<n>') and UTF-32 bytes, given as bytes or, under protocol 2, as
    `_codecs.encode(text, 'latin1')`: only the item's bytes (longer data is cut), trailing NULs dropped. The dtype's
    BUILD state may come before the scalar is made or after (review 27), so its byte order and size must agree with
    the text's, as NumPy writes them: else, or spelled any other way ('str', a size given as a numpy integer), the
    text is unread."""
    kind = _dtype_text(dtype)
    match = _UNICODE_DTYPE.fullmatch(kind) if kind is not None else None
    raw = _nested_bytes(Seq("tuple", [data]))  # bytes as the stream spells them, protocol 2's latin-1 text too
    if match is None or not isinstance(raw, bytes):
        return None
    big, size = match.group(1) == ">", 4 * int(match.group(2))
    state = dtype.state.items if isinstance(dtype, Obj) and isinstance(dtype.state, Seq) else None
    if state is not None:
        at_order, at_size = _DTYPE_STATE.get(len(state), (0, 0))
        order, given = _const(state[at_order]), _const(state[at_size])
        if len(state) not in _DTYPE_STATE or order not in _BYTE_ORDERS or (order == ">") != big or given != size:
            return None
    if len(raw) < size:
        return None  # NumPy refuses data shorter than the item
    try:
        return raw[:size].decode("utf-32-be" if big else "utf-32-le").rstrip("\x00")
    except UnicodeDecodeError:
        return None


_BYTE_ORDERS = frozenset({"<", ">", "=", "|"})


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


def _keep(res: PickleResult, values: list[Sym]) -> None:
    """Note the names `values` hold, inside the lists, tuples, sets and dicts among them (each container walked
    once; what is added to it later is noted as it is added). A class kept as a value can be called later by
    whatever holds it (WS-PKL-022)."""
    pending = list(values)
    while pending:
        value = pending.pop()
        if isinstance(value, Global):
            res.kept.add(value.dotted)
        elif isinstance(value, Seq | Dict) and not value.walked:  # marked on itself: a set of ids kept every
            value.walked = True  # container alive (9,900,000 empty lists appended to one: 1.9 GB, memory audit #10)
            if isinstance(value, Seq):
                pending.extend(value.items)
            else:
                pending.extend(item for pair in value.items for item in pair)


# gensim's SaveLoad.load reads the attributes these lists name from files beside the model, `<file>.<name>.npy`
# (the __scipys ones unpickled), and loads __recursive_saveloads attributes' own side files the same way.
SIDE_FILE_LISTS = ("__numpys", "__scipys", "__ignoreds", "__recursive_saveloads")
MAX_STATES = 1_000_000  # dict states kept for the end-of-stream check (the opcode limit bounds them anyway)


def check_states(res: PickleResult) -> None:
    """What the objects' states hold once the stream is done. gensim's SaveLoad.load reads the attributes a model
    lists in __numpys, __scipys and __recursive_saveloads from `<file>.<name>.npy` (unpickling the __scipys ones):
    a name with a path separator or `..` walks out of the folder through a directory the folder ships (a review
    proved it). A name the machine cannot read (computed, past MAX_ITEMS) counts the same. Writers name
    attributes with constants, so a state with a computed name, or more names than the machine keeps, is
    reported too. A dict is judged under every class a BUILD gives it to (review 21 built a model's state into a
    decoy of another class first), as BUILD copied it, and as the stream's end leaves it when that differs (a class
    whose __setstate__ keeps the dict itself sees later changes)."""
    seen: set[tuple[int, str]] = set()
    for state, at, restored, copied in res.states:
        if (id(state), restored) in seen:
            continue
        seen.add((id(state), restored))
        _judge_dict_state(res, copied, at, restored)
        if len(state.items) != len(copied.items) or state.dropped != copied.dropped:
            _judge_dict_state(res, state, at, restored)  # what both views find is one finding (RuleSet.judge)


def _judge_dict_state(res: PickleResult, state: Dict, at: int, restored: str) -> None:
    """One view of a dict state, as `check_states` takes it."""
    _callable_members(res, state, restored, at)
    if is_config_class(restored):
        if len(res.config_states) < MAX_CONFIG_STATES:
            res.config_states.append((at, restored, state))
        else:
            res.config_states_more += 1
    if state.dropped or any(not isinstance(key, Const) for key, _ in state.items):
        detail = f"{len(state.items) + state.dropped} names, some computed or past what wscan keeps"
        res.events.append(Event("pickle.unread_attribute_names", at, {"detail": detail, "callable": ""}))
        _state_code(res, restored, "<unread>", Unknown(), at)
    for key, value in state.items:
        if isinstance(key, Const) and key.value in CODE_STATE_KEYS:
            _state_code(res, restored, str(key.value), value, at)
        elif isinstance(key, Const) and key.value in FOLDER_STATE_KEYS and not _is_none(value):
            folder = {"name": str(key.value), "callable": restored, "value": describe(value)[:300]}
            res.events.append(Event("pickle.state_folder", at, dict[str, str | int | bool](folder)))
        elif isinstance(key, Const) and key.value in ALIAS_STATE_KEYS:
            aliases = {"name": str(key.value), "callable": restored, "value": describe(value)[:300]}
            res.events.append(Event("pickle.state_aliases", at, dict[str, str | int | bool](aliases)))
        elif isinstance(key, Const) and key.value in IMPORT_STATE_KEYS:
            _state_import(res, state, str(key.value), value, restored, at)
        elif isinstance(key, Const) and key.value in MODEL_ARGUMENT_KEYS:
            _model_arguments(res, str(key.value), value, restored, at)
        if isinstance(key, Const) and restored.startswith(SIDE_FILE_WRITERS) and _outside(key.value):
            attrs: dict[str, str | int | bool] = {"list": "its attribute names", "name": describe(key)}
            res.events.append(Event("pickle.side_file_outside", at, attrs))
        if not (isinstance(key, Const) and key.value in SIDE_FILE_LISTS):
            continue
        names = value.items if isinstance(value, Seq) else [value]
        unread = isinstance(value, Seq) and value.dropped > 0
        for name in names:
            text = name.value if isinstance(name, Const) else None
            if unread or not isinstance(text, str) or _outside(text):
                attrs = {"list": str(key.value), "name": describe(name)}
                res.events.append(Event("pickle.side_file_outside", at, attrs))
                break


def _outside(name: object) -> bool:
    """A side file's attribute name that leads out of the folder gensim joins it to."""
    return isinstance(name, str) and ("/" in name or "\\" in name or ".." in name)


# gensim's save writes an array attribute of 10 MiB elements or more to `<file>.<attribute name>.npy`, so an
# attribute named with a path leads the user's re-save out of the folder (review 21 wrote a file elsewhere so).
SIDE_FILE_WRITERS = ("gensim.",)
# State attributes holding the keyword arguments a library passes to the models it builds: gensim's EnsembleLda
# calls LdaModel(**gensim_kw_args) at add_model() and recluster(). `distributed` with `ns_conf` connects to the
# name server they name (Pyro4's client then unpickles its reply: review 21 ran code so), and `callbacks` are
# called during training (a visdom metric connects). Real files train locally, without callbacks.
# A coherence model's word-vector accumulator trains Word2Vec(**model_kwargs) when it has no vectors: callbacks again.
MODEL_ARGUMENT_KEYS = {
    "gensim_kw_args": frozenset({"distributed", "ns_conf", "callbacks", "dispatcher"}),
    "model_kwargs": frozenset({"callbacks"}),
}


def _model_arguments(res: PickleResult, name: str, value: Sym, restored: str, at: int) -> None:
    """The arguments of MODEL_ARGUMENT_KEYS that turn on what no real file asks for: set to anything but None,
    False, 0 or an empty container, or arguments the machine cannot read."""
    if _is_none(value):
        return
    if not isinstance(value, Dict) or value.dropped or any(not isinstance(k, Const) for k, _ in value.items):
        pairs: list[tuple[str, Sym]] = [("<unread>", value)]
    else:
        pairs = [(str(k.value), v) for k, v in value.items if isinstance(k, Const)]
    for argument, given in pairs:
        if argument != "<unread>" and (argument not in MODEL_ARGUMENT_KEYS[name] or _empty(given)):
            continue
        attrs: dict[str, str | int | bool] = {"name": name, "callable": restored, "argument": argument,
                                              "value": describe(given)[:300]}  # fmt: skip
        res.events.append(Event("pickle.state_model_arguments", at, attrs))


def _empty(value: Sym) -> bool:
    if isinstance(value, Const):
        return value.value is None or value.value is False or value.value == 0 or value.value in ("", b"")
    return isinstance(value, Seq | Dict) and not value.items and not value.dropped


# State attributes whose text a library runs as code when it restores the object: every SciPy distribution execs
# `_parse_arg_template` in __setstate__ (the rules check it is the argument parser SciPy writes, WS-PKL-032).
CODE_STATE_KEYS = frozenset({"_parse_arg_template"})
# State attributes naming a folder or file the library writes to when the object is used: scikit-learn's `memory` (a
# Pipeline's, an agglomerative clustering's) becomes a joblib.Memory cache at fit(), and a review wrote files anywhere
# so; gensim's AuthorTopicModel rewrites the corpus file at its `serialization_path` at update().
FOLDER_STATE_KEYS = frozenset({"memory", "serialization_path"})
# State attributes that rename the object's other attributes: a transformers config looks every name up in its
# `attribute_map` first, so an instance's own map points any attribute or method at another one (review 13 made
# save_pretrained call push_to_hub). The class keeps the map; no real file's state has one.
ALIAS_STATE_KEYS = frozenset({"attribute_map"})
# State attributes naming a class the library imports and calls when the object is used: gensim's EnsembleLda
# imports the module and takes the class its state names the first time it needs its topic model class (at save(),
# add_model(), recluster()) and calls it with keyword arguments from its state; gensim never saves the class itself
# (`topic_model_class`), and one in the state is what it calls. The rules check the name is gensim's LDA (WS-PKL-038).
IMPORT_STATE_KEYS = {"topic_model_module_string": "topic_model_class_string", "topic_model_class": ""}
MAX_CODE_TEXT = 8192  # SciPy's template is under 1 KiB for every distribution it ships


def _is_none(value: Sym) -> bool:
    return isinstance(value, Const) and value.value is None


def _state_import(res: PickleResult, state: Dict, name: str, value: Sym, restored: str, at: int) -> None:
    """The class a state names for the library to import and call (IMPORT_STATE_KEYS), as one dotted name: a module
    attribute and the class attribute beside it, or a class kept as the value. None names nothing (a loaded
    EnsembleLda's class before it is looked up); anything but constant text names what no check can read."""
    if _is_none(value):
        return
    partner = IMPORT_STATE_KEYS[name]
    if partner:
        module, attribute = state.get(name), state.get(partner)  # the last of a key written twice, as dict keeps
        parts = [value if module is None else module, Unknown() if attribute is None else attribute]
        texts = [p.value if isinstance(p, Const) and isinstance(p.value, str) else "<computed>" for p in parts]
        target = ".".join(text[:200] for text in texts)
    else:
        target = value.dotted if isinstance(value, Global) else f"<{describe(value)[:200]}>"
    attrs: dict[str, str | int | bool] = {"name": name, "callable": restored, "target": target}
    res.events.append(Event("pickle.state_import", at, attrs))


def _state_code(res: PickleResult, restored: str, name: str, value: Sym, at: int) -> None:
    """A state attribute whose text a library runs (CODE_STATE_KEYS), or a state whose names cannot be read, so that
    it may hold one (`name` "<unread>"): the text, or what stands for text the rules cannot check."""
    text = value.value if isinstance(value, Const) else None
    if not isinstance(text, str):
        shown = "<computed>" if text is None else f"<{type(text).__name__}, not text>"
    elif len(text) > MAX_CODE_TEXT:
        shown = f"<text of {len(text)} characters>"
    else:
        shown = text
    attrs: dict[str, str | int | bool] = {"name": name, "callable": restored, "text": shown}
    res.events.append(Event("pickle.state_code", at, attrs))


def _callable_members(res: PickleResult, state: Dict, restored: str, at: int) -> None:
    """The attributes a state gives a value that may be callable: a name, an object (but a constant, a list or
    a dict), something computed. Put in the instance's dict, such an attribute comes before the class's method
    of the same name, so the library's or the user's next call of that method runs it (a review ran code at a
    torchmetrics metric's `compute()` so, and sklearn's tag check through a DataFrame's `__sklearn_tags__`). The
    rules know the method names and which objects cannot be called (WS-PKL-026), and the attributes libraries call
    by design, which real files fill with a named function or a known object only (WS-PKL-027)."""
    for key, value in state.items:
        name = key.value if isinstance(key, Const) else None
        if name in METHOD_NAME_ATTRIBUTES:
            _method_names(res, name, value, restored, at)
        if name in PROXY_TABLES and isinstance(value, Dict):
            _dunder_items(res, [item for pair in value.items for item in pair], restored, at)
        if isinstance(name, str) and name in CALLED_TABLES:
            for item in _table_values(res, value, keys=name in LIST_TABLES):
                _member_event(res, name, item, restored, at)
            continue  # the table itself is data; its values are what is called
        if isinstance(name, str):
            # A config dict's state mirrors its items (EasyDict keeps both): no library calls its `weights`.
            _member_event(res, name, value, restored, at, via="items" if restored in ATTRIBUTE_DICTS else "state")


def _member_event(res: PickleResult, name: str, value: Sym, restored: str, at: int, via: str = "state") -> None:
    """`name` on an object of class `restored` holds `value`, which may be called (see `_callable_members`); `via`
    says whether a state or items set it (the attributes libraries call are judged on states only). A name map
    (NAME_MAP_ATTRIBUTES) is reported whatever it holds: it renames the object's attributes (WS-PKL-040)."""
    if name in NAME_MAP_ATTRIBUTES:
        made, kind = "<name map>", "name-map"
    elif isinstance(value, Const | Seq | Dict | Persistent):
        return
    elif isinstance(value, Obj):
        made, kind = restored_class(value), "object"
    elif isinstance(value, Global):
        made, kind = f"name:{value.dotted}", "name"  # the function or class itself, not an instance of it
    else:
        made, kind = "<computed>", "computed"
    attrs: dict[str, str | int | bool] = {"name": name[:200], "callable": restored, "value": describe(value),
                                          "value_class": made, "value_kind": kind, "via": via,
                                          "member": f"{restored}.{name[:200]}",
                                          "entry": f"{name[:200]}={made}"}  # fmt: skip
    res.events.append(Event("pickle.state_member", at, attrs))


# Dict attributes whose values the libraries call: torch's module hooks (at model(x), state_dict(), load), a
# torchmetrics metric's reductions (at compute()), a torch module's submodules (a container's forward calls each)
# and a multi-metric scorer's scorers (each called with the estimator its search keeps). A review put
# scikit-learn's validation callback among the hooks; the rules judge submodules and scorers by their class.
CALLED_TABLES = frozenset({
    "_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks", "_state_dict_hooks",
    "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_reductions",
    "_modules", "_scorers",
    # an optimizer's hooks (at step(), state_dict() and load_state_dict()), and the lists a LambdaLR's functions and a
    # SequentialLR's or ChainedScheduler's schedulers sit in (each called or stepped at step())
    "_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks",
    "lr_lambdas", "_schedulers",
    # a module's parameters and buffers: Module.__getattr__ hands out each as an attribute, so a name the module's
    # class lacks (`to_dict`) reaches whatever is there (review 14's chain); real files keep tensors or None
    "_parameters", "_buffers",
})  # fmt: skip
# Tables real files keep as lists, which the library iterates: given a dict, it calls or steps the keys (review 11).
LIST_TABLES = frozenset({"lr_lambdas", "_schedulers"})
# Dicts whose items are also their attributes (set by __setitem__ or __getattr__).
ATTRIBUTE_DICTS = frozenset({
    "easydict.EasyDict", "sklearn.utils._bunch.Bunch", *LIGHTNING_ATTRIBUTE_DICTS,
    # SciPy's result objects answer attribute lookups from their items (a review made one a pipeline step)
    "scipy.optimize._optimize.OptimizeResult", "scipy._lib._util._RichResult",
})  # fmt: skip
# What torch's Module.__getattr__ answers a name the class lacks from: `copy.deepcopy(model)` asks for __deepcopy__.
PROXY_TABLES = frozenset({"_modules", "_parameters", "_buffers"})
# Class attributes a library reads every attribute name through: a transformers config looks each name up in its
# `attribute_map` first (n_embd -> hidden_size). Kept in an instance's state, the map would send a method's name to
# another attribute of that state, which no method-name check sees. No writer keeps one in an instance.
NAME_MAP_ATTRIBUTES = frozenset({"attribute_map"})
MAX_OBJECT_ITEMS = 1_000_000  # objects whose SETITEMS values are kept (the opcode limit bounds them anyway)


def _note_items(res: PickleResult, target: Obj, pairs: list[tuple[Sym, Sym]]) -> None:
    """Keep what SETITEMS put in an object (an OrderedDict), so a table of callables is read like a dict."""
    entry = res.object_items.get(id(target))
    if entry is None:
        if len(res.object_items) >= MAX_OBJECT_ITEMS:
            return
        entry = res.object_items[id(target)] = (target, [])
    entry[1].extend(pairs[: max(0, MAX_ITEMS - len(entry[1]))])
    if len(entry[1]) >= MAX_ITEMS:
        entry[1].append((Unknown(), Unknown()))  # past what is kept: judged as computed


# Helpers that give the object they make a state of their own, as BUILD would: (position of the state, position of
# the class, or the class they always make). torch sets it with __setstate__ or setattr (_set_obj_state).
STATE_SETTERS: dict[str, tuple[int, int | str]] = {
    "torch._tensor._rebuild_from_type_v2": (3, 1),
    "torch._utils._rebuild_parameter_with_state": (3, "torch.nn.parameter.Parameter"),
}


# torch's tensor rebuilds set the hooks at this position as the tensor's backward hooks, run by backward().
BACKWARD_HOOKS = {
    "torch._utils._rebuild_tensor_v2": 5,
    "torch._utils._rebuild_parameter": 2,
    "torch._utils._rebuild_parameter_with_state": 2,
}


def _state_from_call(res: PickleResult, func: Global, args: Sym, at: int) -> None:
    """The state a call gives what it makes (a review restored any allowed class with any state through
    _rebuild_from_type_v2(copyreg.__newobj__, T, (T,), state), past every check of BUILD's state), and the items
    of a dict a call is given: copyreg._reconstructor(Bunch, dict, {...}) fills a dict subclass with them."""
    if not isinstance(args, Seq):
        return
    made_class = restored_class(Obj(func, args))
    for item in args.items:
        if isinstance(item, Dict):
            _dunder_items(res, [part for pair in item.items for part in pair], made_class, at)
    hooks = BACKWARD_HOOKS.get(func.dotted)
    if hooks is not None and len(args.items) > hooks:
        for value in _table_values(res, args.items[hooks]):
            _member_event(res, "_backward_hooks", value, func.dotted, at)
    where = STATE_SETTERS.get(func.dotted)
    if where is None or len(args.items) <= where[0]:
        return
    state, made = args.items[where[0]], where[1]
    if isinstance(made, int):
        kind = args.items[made] if len(args.items) > made else None
        made = kind.dotted if isinstance(kind, Global) else describe(kind)
    pair = isinstance(state, Seq) and state.type == "tuple" and len(state.items) == 2
    for part in state.items if pair and isinstance(state, Seq) else [state]:  # (dict, slots), as torch writes
        mapping = _as_mapping(res, part)
        if mapping is not None:
            _keep_state(res, mapping, at, made)
        elif not isinstance(part, Const):
            attrs: dict[str, str | int | bool] = {"detail": f"a state made by {describe(part)}", "callable": made}
            res.events.append(Event("pickle.unread_attribute_names", at, attrs))


def _filled_items(res: PickleResult, table: Obj) -> list[tuple[Sym, Sym]] | None:
    """What SETITEMS put in an object made with no arguments (writers make an OrderedDict empty and fill it so);
    None for one made from arguments, which holds what they hold."""
    if not (isinstance(table.args, Seq) and not table.args.items):
        return None
    entry = res.object_items.get(id(table))
    return list(entry[1]) if entry is not None else []


def _as_mapping(res: PickleResult, state: Sym) -> Dict | None:
    """`state` as a dict: a dict, or an OrderedDict made empty and filled by SETITEMS (what torch writes)."""
    if isinstance(state, Dict):
        return state
    if isinstance(state, Obj) and isinstance(state.func, Global) and state.func.dotted == "collections.OrderedDict":
        items = _filled_items(res, state)
        return Dict(items) if items is not None else None
    return None


def _dunder_items(res: PickleResult, pairs: list[Sym], owner: str, at: int) -> None:
    """Items named like a special method (`__deepcopy__`, `__array__`) set on an object, or in a torch module's
    submodule table: classes that answer attribute lookups from their items (torch's Module, scikit-learn's Bunch,
    EasyDict) hand them to code that looks such names up on the instance (copy, NumPy, scikit-learn). Judged as
    the object's own attributes (WS-PKL-026); writers never use such names. Every item of a dict whose items are
    its attributes (ATTRIBUTE_DICTS) is judged so: a review made an EasyDict's `transform` item a pipeline step's
    transform."""
    every = owner in ATTRIBUTE_DICTS
    for i in range(0, len(pairs) - 1, 2):
        key = _const(pairs[i])
        if isinstance(key, str) and (every or (key.startswith("__") and key.endswith("__"))):
            _member_event(res, key, pairs[i + 1], owner, at, via="items")


def _table_values(res: PickleResult, table: Sym, keys: bool = False) -> list[Sym]:
    """The values of a dict, or of an object SETITEMS filled (their keys too with `keys`: what iterating it gives),
    or the items of a list or tuple; a table made any other way, as one computed value."""
    if isinstance(table, Dict):
        pairs = table.items
        computed = [Unknown()] if table.dropped else []
    elif isinstance(table, Seq):
        return [*table.items, *([Unknown()] if table.dropped else [])]
    elif isinstance(table, Obj):
        filled = _filled_items(res, table)
        if filled is None:  # made from arguments: what they hold, with whatever SETITEMS added
            entry = res.object_items.get(id(table))
            pairs, computed = (entry[1] if entry is not None else []), [Unknown()]
        else:
            pairs, computed = filled, []
    else:
        return [] if isinstance(table, Const) else [table]
    return [item for key, value in pairs for item in ((key, value) if keys else (value,))] + computed


# scikit-learn's scorers and stacking ensembles call, on the estimator they are given, the method these attributes
# name: a review named DataFrame.query and ndarray.tofile there.
METHOD_NAME_ATTRIBUTES = frozenset({"_response_method", "response_method", "stack_method_", "chain_method_"})


def _method_names(res: PickleResult, name: str, value: Sym, restored: str, at: int) -> None:
    """Each method name such an attribute holds (a string, or a list or tuple of them); anything else as
    `<computed>`."""
    items = value.items if isinstance(value, Seq) else [value]
    if len(items) > 64 or (isinstance(value, Seq) and value.dropped):
        items = [*items[:64], Unknown()]  # the library takes the first name the estimator has: all must be read
    for item in items:
        text = item.value if isinstance(item, Const) else "<computed>"
        if text is None or text == "":
            continue  # nothing named: the library resolves it or calls nothing
        method = text[:200] if isinstance(text, str) else "<computed>"
        attrs: dict[str, str | int | bool] = {"name": name, "callable": restored, "method": method}
        res.events.append(Event("pickle.state_method_name", at, attrs))


def _judge_state(res: PickleResult, target: Obj, state: Sym, at: int) -> None:
    """What BUILD's state does besides filling the instance's dict. A (mapping, slots) pair, as pickle splits it:
    the slots are set with setattr (`_slot_state`); a mapping made by a call (OrderedDict(), dict([...])) has its
    items copied into the instance's dict under names wscan cannot check (a review hid gensim's side-file lists
    so). A plain dict state is kept for the end of the stream (`check_states`)."""
    restored = restored_class(target)
    pairs = _pairs(state)
    if pairs is not None:  # __dict__.update(state), as torch's Module.__setstate__ does, takes (name, value) pairs
        _keep_state(res, pairs, at, restored)
        return
    hidden_names = isinstance(state, Seq) and _hides_pairs(state)
    if hidden_names:
        _state_code(res, restored, "<unread>", Unknown(), at)
        if _class_like(restored):
            hidden = {"detail": "(name, value) pairs, some computed or past what wscan keeps", "callable": restored}
            res.events.append(Event("pickle.unread_attribute_names", at, dict[str, str | int | bool](hidden)))
            return
    pair = isinstance(state, Seq) and state.type == "tuple" and len(state.items) == 2
    mapping, slots = (state.items[0], state.items[1]) if pair and isinstance(state, Seq) else (state, None)
    if isinstance(mapping, Obj | Unknown | Global) and not hidden_names:  # names a call's result (or a named
        # object, which may be a dict) gives: any may be code
        _state_code(res, restored, "<unread>", Unknown(), at)
    if isinstance(state, Obj | Unknown):  # computed: a tuple or any tuple subclass of two makes such a pair
        _slot_state(res, restored, state, at)
    elif slots is not None:
        _slot_state(res, restored, slots, at)
    if isinstance(mapping, Dict):
        _keep_state(res, mapping, at, restored)
    elif pair and isinstance(mapping, Obj | Unknown) and _class_like(restored):
        # The objects Cython and NumPy helpers return take such pairs in their own __setstate__.
        attrs: dict[str, str | int | bool] = {"detail": f"names from what {describe(mapping)} returns",
                                              "callable": restored}  # fmt: skip
        res.events.append(Event("pickle.unread_attribute_names", at, attrs))


def _keep_state(res: PickleResult, mapping: Dict, at: int, restored: str) -> None:
    """A dict state, judged once the stream ends (`check_states`), up to MAX_STATES of them. BUILD copies the items
    into the instance as they are then: a SETITEMS on the same dict later changes what the stream's end shows, not
    the object (review 21 renamed an EnsembleLda's module so), so the items are kept as they were too."""
    if len(res.states) < MAX_STATES:
        copied = Dict(items=list(mapping.items), dropped=mapping.dropped)
        res.states.append((mapping, at, restored, copied))
        res.state_copies.setdefault(id(mapping), []).append(copied)
    elif not res.states_more:  # the rest are not judged, which is a finding (review 33), once
        res.states_more = True
        detail = f"more than {MAX_STATES:,} dict states; those past them are not judged"
        res.events.append(Event("pickle.unread_attribute_names", at, {"detail": detail, "callable": restored}))


def _pairs(state: Sym) -> Dict | None:
    """A list or tuple state whose every item is a (name, value) pair, as a dict: a class whose __setstate__ updates
    its __dict__ with the state (torch's Module, torchmetrics' Metric) takes pairs as well as a dict, and a review
    hid a scorer among a Sequential's submodules so, past every check of a dict state. Writers give such classes a
    dict. dict.update takes any iterable of two as a pair: a dict of two keys is the pair of its keys (another
    review hid `forward` so), a set of two either way round, a string of two its characters."""
    if not (isinstance(state, Seq) and state.items) or state.dropped:
        return None
    pairs, whole = state.pairs()  # a set's both ways round: its order is its hashes'
    return Dict(pairs) if whole else None


def _distinct(values: list[Sym]) -> list[Sym] | None:
    """`values` with equal constants merged, as a dict's keys and a set's members are (a review wrote a key twice to
    make a dict of two look like one of three); None when one is computed, whose equality is unknown."""
    seen: dict[object, None] = {}
    kept: list[Sym] = []
    for value in values:
        if not isinstance(value, Const):
            return None
        try:
            if value.value in seen:
                continue
            seen[value.value] = None
        except TypeError:
            return None
        kept.append(value)
    return kept


def _members(item: Sym) -> list[Sym] | None:
    """What iterating `item` gives when it is a dict (its keys) or a set (its members), duplicates merged; None when
    that cannot be known. Two written are two (or one, which no update takes): either way read as two."""
    if isinstance(item, Dict) and not item.dropped:
        keys = [key for key, _ in item.items]
        return keys if len(keys) == 2 else _distinct(keys)
    if isinstance(item, Seq) and item.type in ("set", "frozenset") and not item.dropped:
        return item.items if len(item.items) == 2 else _distinct(item.items)
    return None


def _maybe_pair(item: Sym) -> bool:
    """A dict or set of two or more whose members' equality is unknown: it may iterate as a pair."""
    if isinstance(item, Dict) or (isinstance(item, Seq) and item.type in ("set", "frozenset")):
        return _members(item) is None and len(item.items) + item.dropped >= 2
    return False


def _pair(item: Sym) -> tuple[Sym, Sym] | None:
    """The (name, value) dict.update takes from `item`, when it is an iterable of two the machine can read."""
    if isinstance(item, Dict) or (isinstance(item, Seq) and item.type in ("set", "frozenset")):
        members = _members(item)
        return (members[0], members[1]) if members is not None and len(members) == 2 else None
    if isinstance(item, Seq) and len(item.items) == 2 and not item.dropped:
        # items a SETITEMS on the list made unknown (review 27 set `_target_` into a pair so) are no pair read
        return None if any(isinstance(part, Unknown) for part in item.items) else (item.items[0], item.items[1])
    if isinstance(item, Const) and isinstance(item.value, str | bytes) and len(item.value) == 2:
        first, second = item.value[:1], item.value[1:]
        return (Const(first), Const(second)) if isinstance(first, str) else (Const(first[0]), Const(second[0]))
    return None


def _hides_pairs(state: Seq) -> bool:
    """A list or tuple state of (name, value) pairs, some or all of which are computed (an object's items, a call's
    result) or were not kept: the names __dict__.update would set are unknown."""
    computed = [isinstance(item, Obj | Unknown) or _maybe_pair(item) for item in state.items]
    if all(computed):  # every pair a call's result (tuple([name, value])): a ninth review set `forward` so
        return True
    return any(_pair(item) is not None for item in state.items) and (any(computed) or bool(state.dropped))


def _slot_state(res: PickleResult, restored: str, slots: Sym, at: int) -> None:
    """Slot state: pickle sets each item with setattr, which runs the class's __setattr__ and property setters (a
    review reached a library call through one). Real files write it only for classes that keep attributes in
    __slots__."""
    if isinstance(slots, Dict) and (slots.items or slots.dropped):
        keys = ",".join(str(k.value)[:40] for k, _ in slots.items[:8] if isinstance(k, Const))
    elif isinstance(slots, Obj | Unknown) and _class_like(restored):
        # Computed: an object with .items() (dict(...), a Series) works as slot state. Only for what is named like
        # a class (a plain instance takes the default BUILD): the objects Cython and NumPy helpers return
        # (__pyx_unpickle_*, _reconstruct) have a __setstate__ of their own that takes such pairs.
        keys = f"what {describe(slots)} returns"
    else:
        return
    res.events.append(Event("pickle.slot_state", at, {"callable": restored, "keys": keys}))


def _class_like(dotted: str) -> bool:
    """Named like a class (CamelCase): an instance pickle rebuilds with the default BUILD, unlike the objects
    Cython's and NumPy's helper functions (__pyx_unpickle_*, _reconstruct) return."""
    return dotted.rpartition(".")[2][:1].isupper()


def _made_from(target: Obj) -> Global | None:
    """The class an object is an instance of, when pickle restored it so: the class NEWOBJ or copyreg's helpers
    were given. What REDUCE made (a function's result, a module import_module returned) is not named so."""
    func, args = target.func, target.args
    if isinstance(func, Global) and func.dotted in _RESTORED_POSITIONS:
        first = args.items[0] if isinstance(args, Seq) and args.items else None
        return first if isinstance(first, Global) else None
    return func if target.instance and isinstance(func, Global) else None


def is_config_class(restored: str) -> bool:
    """A transformers configuration class, by the name pickle records (the allowlist says which ones are allowed)."""
    return restored.startswith("transformers.") and restored.endswith("Config")


def restored_class(target: Obj) -> str:
    """The class an object was made from: the class copyreg's helpers get, else what was called."""
    func, args = target.func, target.args
    if isinstance(func, Global) and func.dotted in _RESTORED_POSITIONS:
        first = args.items[0] if isinstance(args, Seq) and args.items else None
        return first.dotted if isinstance(first, Global) else describe(first)
    return func.dotted if isinstance(func, Global) else describe(func)


def _owner(target: Obj) -> Global:
    """What calls a callable stored in `target`'s state or items, for the record of that call."""
    return target.func if isinstance(target.func, Global) else Global("builtins", "object")


def describe(value: Sym | None) -> str:
    """Short readable form of a symbolic value for evidence."""
    if isinstance(value, Const):
        v = value.value
        if isinstance(v, LongBytes):
            return f"<{v.length} bytes>"
        text = repr(v)
        return text if len(text) <= 80 else text[:77] + "..."
    if isinstance(value, Global):
        return value.dotted
    if isinstance(value, Obj):
        return f"{describe(value.func)}(...)"
    if isinstance(value, Seq):
        return f"<{value.type} of {len(value.items) + value.dropped}>"
    if isinstance(value, Dict):
        return f"<dict of {len(value.items) + value.dropped}>"
    if isinstance(value, Persistent):
        return "<persistent>"
    return "<unknown>"
