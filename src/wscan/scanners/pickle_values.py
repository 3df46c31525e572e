"""The symbolic values the pickle machine works on, what it records of a stream, and the readings of values
that every part of it needs.

A value stands in for what loading would make (`Const`, `Global`, `Obj`, `Seq`, `Dict`, `Persistent`, `Unknown`);
`PickleResult` is what one stream would import and call. Read here too: the text a value holds (`_text`,
`_unread_text`), the (key, value) pair dict.update takes from it (`_pair`), the class an object was restored as
(`restored_class`), and `describe` for evidence. A list keeps, past MAX_ITEMS, the pairs whose key a loader
instantiates (`Seq._note_past`), so those keys (`_PAIR_KEYS`) are defined here as well.
"""

from __future__ import annotations

import codecs
import encodings
import encodings.aliases
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from wscan.limits import BudgetExceeded
from wscan.scanners.pickle_ops import LongBytes, PickleSyntaxError

MAX_ITEMS = 4096  # items kept per container; more are counted, not kept (`items_kept` raises it for a while)
MAX_IMPORT_SITES = 1 << 16  # import opcodes whose offset and name are kept per pickle


@contextmanager
def items_kept(count: int) -> Iterator[None]:
    """Containers keep up to `count` items (never fewer than MAX_ITEMS) while the block runs: torch's legacy reader
    needs every storage key, in order, to step over the storages after them, and a checkpoint has more than 4,096."""
    global MAX_ITEMS
    saved = MAX_ITEMS
    MAX_ITEMS = max(saved, count)
    try:
        yield
    finally:
        MAX_ITEMS = saved


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
    heavy_past: bool = False  # a dropped item is no number or short text: its size cannot be told from the count

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
        if not self.heavy_past:
            self.heavy_past = not all(_light(value) for value in values)
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


def _light(value: Sym) -> bool:
    """A number or a short text: what a dropped item of a list of them weighs is known without it."""
    if not isinstance(value, Const):
        return False
    held = value.value
    short_text = isinstance(held, str | bytes) and len(held) <= 64
    return held is None or short_text or isinstance(held, int | float | complex)


MAX_KINDS_PAST = 64  # kinds of item a container keeps one of past MAX_ITEMS (`PastKinds`)


@dataclass(eq=False, slots=True)
class PastKinds:
    """The items past what a mapping keeps, as the checks of a table the library calls see them (`pickle_states`: a
    torch module's submodules, parameters and buffers, judged by each value's class and by keys spelt like special
    methods): one of each kind, up to MAX_KINDS_PAST kinds. A torch model of 4,097 submodules was flagged as holding
    something unknown (scale sweep 205). Only those checks read it: the config-target checks, which read keys by
    name, see such a mapping as not whole."""

    kept: dict[tuple[object, ...], tuple[Sym, Sym]] = field(default_factory=dict)
    mixed: bool = False  # more kinds than MAX_KINDS_PAST

    def add(self, key: Sym, value: Sym) -> None:
        if self.mixed or (type(value) is Const and type(key) is Const and not _dunder(key)):
            return  # text or numbers under a plain name: nothing the tables' checks look at
        kind = _item_kind(key, value)
        if kind not in self.kept:
            if len(self.kept) >= MAX_KINDS_PAST:
                self.mixed = True
            else:
                self.kept[kind] = (key, value)

    def items(self) -> list[tuple[Sym, Sym]] | None:
        """One item of each kind, or None when they were too varied."""
        return None if self.mixed else list(self.kept.values())


@dataclass(eq=False, slots=True)
class Dict(Sym):
    items: list[tuple[Sym, Sym]] = field(default_factory=list)
    dropped: int = 0
    walked: bool = False  # its names noted as values (`_keep`)
    past: PastKinds | None = None  # the items past MAX_ITEMS, one of each kind
    # What was given this dict (a BUILD's object, as or in its state; a pandas helper, in its arguments): the loader
    # used it then, so items set on it afterwards are not what the loader saw (helper 233).
    given_to: Sym | None = None

    def add(self, key: Sym, value: Sym) -> None:
        if len(self.items) < MAX_ITEMS:
            self.items.append((key, value))
            return
        self.dropped += 1
        if self.past is None:
            self.past = PastKinds()
        self.past.add(key, value)

    def past_items(self) -> list[tuple[Sym, Sym]] | None:
        """The items past MAX_ITEMS as a called table's checks see them (`PastKinds`), or None when they were too
        varied or the dict was made some other way."""
        if not self.dropped:
            return []
        return None if self.past is None else self.past.items()

    def has(self, key: str) -> bool:
        """Whether `key` was set at all (to None too)."""
        return any(isinstance(k, Const) and k.value == key for k, _ in self.items)

    def get(self, key: str) -> Sym | None:
        """The value of `key`: the last one set, as a dict keeps it when a key is written twice."""
        found = None
        for k, v in self.items:
            if isinstance(k, Const) and k.value == key:
                found = v
        return found


def _dunder(key: Sym) -> bool:
    """A key spelt like a special method (`__deepcopy__`), or no text at all: such keys are kept one by one."""
    text = key.value if isinstance(key, Const) else None
    return not isinstance(text, str) or (text.startswith("__") and text.endswith("__"))


def _item_kind(key: Sym, value: Sym) -> tuple[object, ...]:
    """What the checks of a called table tell an item by: its key when `_dunder`, and its value's class or name
    (`pickle_states._member_event`); any other value by its identity."""
    key_kind: object = id(key) if _dunder(key) else "name"
    if isinstance(value, Obj):
        return key_kind, "object", restored_class(value), describe(value)
    if isinstance(value, Global):
        return key_kind, "name", value.dotted
    if isinstance(value, Const | Seq | Dict | Persistent):
        return key_kind, type(value).__name__
    return key_kind, id(value)


@dataclass(eq=False, slots=True)
class Persistent(Sym):
    """What persistent_load returns for a persistent id (a PyTorch storage, usually)."""

    pid: Sym


class Unknown(Sym):
    """A value the machine cannot know (an out-of-band buffer)."""

    __slots__ = ()


class OutOfBand(Unknown):
    """A protocol 5 buffer the file does not hold: the loader's caller passes it (`pickle.loads(data, buffers=...)`)."""

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
    # Reached only by getattr on instances the stream restored (a bound method), never imported nor looked up on a
    # class or module, where the file would choose the function's first argument (review 67).
    bound: bool = False
    # cloudpickle writes a bound method as `_builtin_type('MethodType')(getattr(Class, "name"), obj)`: the reaches of
    # the name by import or by a lookup on a class or module (`unbound`), and how many of those types.MethodType then
    # bound to an object the stream restored (`rebound`). A name whose every such reach was bound so, and which the
    # stream never calls, is a bound method as well (`Machine.run`).
    unbound: int = 0
    rebound: int = 0
    # For a lookup helper (cloudpickle's _builtin_type, `getattr(types, name)`): how often the stream called it, and
    # how often such a call looked a constant name up, so that the load only looks names up (see `only_looks_up`).
    calls: int = 0
    lookups: int = 0


@dataclass
class Event:
    """Something other than an import that the rules need to see."""

    kind: str
    offset: int
    attrs: dict[str, str | int | bool]


MAX_NATIVE_RECORDED = 100_000  # native states and owners kept per stream; past it, reported unverified


@dataclass(eq=False, slots=True)
class Restored:
    """One BUILD of a native class, with its state as it was then (a dict's items copied: the stream may change the
    dict afterwards, the model keeps what it was given)."""

    offset: int
    cls: str
    target: Obj
    state: Sym


@dataclass(eq=False, slots=True)
class NativeStates:
    """What a stream restored that `check` reads once it ends."""

    restored: list[Restored] = field(default_factory=list)
    owners: list[tuple[int, Obj, Dict]] = field(default_factory=list)  # estimators' dict states that hold trees
    pandas: list[tuple[int, Obj]] = field(default_factory=list)  # pandas objects (`pickle_native_pandas`)
    statespace: list[tuple[int, Obj]] = field(default_factory=list)  # statsmodels' (`pickle_native_statsmodels`)
    statespace_states: dict[int, list[Sym]] = field(default_factory=dict)  # ... each BUILD's state, as it was then
    # Objects the stream hands out again from its memo, and the arrays each bytes object backs (by id, kept alive):
    # two arrays on one memory are one array to what writes them (helper 253's statsmodels nmissing).
    reused: dict[int, Sym] = field(default_factory=dict)
    buffers: dict[int, list[Sym]] = field(default_factory=dict)
    dropped: int = 0  # past MAX_RECORDED


@dataclass
class PickleResult:
    """What one pickle stream (up to its STOP or its failure) would do when loaded."""

    start: int
    end: int
    imports: dict[str, ImportRecord] = field(default_factory=dict)
    # Where each import was made (its opcode's offset) and the name after its module, for the first MAX_IMPORT_SITES:
    # joblib's plain reading tells a name real nested pickles make from the wrong memo slot by it (`_noise_shaped`).
    import_sites: dict[int, str] = field(default_factory=dict)
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
    # pyarrow.lib._restore_array calls (offset, arguments), checked once the stream ends (`pickle_arrow`).
    arrow_arrays: list[tuple[int, Sym]] = field(default_factory=list)
    # torch.ScriptObjects made (offset, object), each checked for the state torch gives it once the stream ends.
    script_objects: list[tuple[int, Obj]] = field(default_factory=list)
    # scikit-learn's compiled models and the estimators holding them, checked once the stream ends (`pickle_native`).
    native: NativeStates = field(default_factory=NativeStates)
    storage_infos_dropped: int = 0
    # Items set on objects under names pickle later looks up on the instance (see `_items_on_object`), by id.
    # The values SETITEMS put in objects (an OrderedDict of torch hooks), by id, for `_callable_members`.
    object_items: dict[int, tuple[Obj, list[tuple[Sym, Sym]]]] = field(default_factory=dict)
    # What SETITEMS put in such an object past MAX_ITEMS, one item of each kind (its list above ends in an unknown
    # pair), by id, for the called-table checks (`pickle_states._table_values`).
    object_items_past: dict[int, PastKinds] = field(default_factory=dict)
    item_methods: dict[int, tuple[Obj, dict[str, Sym]]] = field(default_factory=dict)
    # Objects (and states) `_after_build` judged, by id; kept alive here so an id is never reused.
    changed: dict[int, Sym] = field(default_factory=dict)
    # Names the stream keeps as plain values (in a list, dict, set, object state or items, call arguments, the
    # result), not only calls or restores.
    kept: set[str] = field(default_factory=set)
    # The dict states BUILD gave objects, with where: judged at the end of the stream (`check_states`), since the
    # stream can still change a state's lists after the BUILD.
    # each with the restored class's name, its items when BUILD copied them, and the classes its maker was handed,
    # which it may be (`_keep_state`, `pickle_states.handed_classes`)
    states: list[tuple[Dict, int, str, Dict, tuple[str, ...]]] = field(default_factory=list)
    # Dict items that a loader instantiates from a checkpoint's hyperparameters (`CONFIG_TARGET_KEYS`): (offset, key,
    # the name as text, or None when the pickle builds it), at most MAX_CONFIG_TARGETS of them.
    config_targets: list[tuple[int, str, str | None]] = field(default_factory=list)
    config_seen: set[tuple[str, str | None]] = field(default_factory=set)
    config_more: int = 0  # distinct ones past the cap: unjudged, which is high (WS-CFG-006)
    # Dicts set under `architecture` (pyannote's checkpoint names its model class there), read at the stream's end.
    architectures: list[tuple[int, Dict | Obj]] = field(default_factory=list)
    # Values set under Lightning's hyperparameter keys that are not dicts, read at the stream's end.
    hyperparameters: list[tuple[int, str, Sym]] = field(default_factory=list)
    # Mappings set under `meta` (OpenMMLab's checkpoint metadata), whose config text is read at the stream's end.
    resume_metas: list[tuple[int, Sym]] = field(default_factory=list)
    # The dict states BUILD gave transformers configs (`scanners.pickled_config` judges them as config.json), as BUILD
    # copied them and as the stream's end leaves them.
    config_states: list[tuple[int, str, Dict]] = field(default_factory=list)
    config_states_more: int = 0  # past MAX_CONFIG_STATES: unread, which is high (WS-PKL-042)
    states_more: bool = False  # dict states past MAX_STATES were not kept for `check_states`
    # Classes given a state that may make statsmodels' data objects evaluate a formula (`pickle_states`): one
    # holding `restore_model_spec`, one whose names cannot be read, one past MAX_STATES.
    formula_unclear: set[str] = field(default_factory=set)
    formula_kept: bool = False  # some state keeps a formula or a model spec, which predict() evaluates
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

    def only_looks_up(self, key: str) -> bool:
        """A lookup helper other than getattr (cloudpickle's _builtin_type) was only ever called, each time on a
        constant name, and never kept: the load then only looks those names up, each judged as an import."""
        record = self.imports[key]
        return record.invoked == {"REDUCE"} and record.calls == record.lookups and key not in self.kept


def _const(value: Sym | None) -> object:
    return value.value if isinstance(value, Const) else None


REBUILD_FROM_TYPE = "torch._tensor._rebuild_from_type_v2"


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


_STR_CLASSES = frozenset({"builtins.str", "__builtin__.str", "__builtin__.unicode"})
# Restores: the class a copyreg helper makes is not a value the object keeps (nor _reconstructor's base).
_RESTORED_POSITIONS = {"copyreg.__newobj__": 1, "copyreg.__newobj_ex__": 1, "copyreg._reconstructor": 2}


def _is_latin1(value: Sym) -> bool:
    name = _const(value)
    try:
        return isinstance(name, str) and codecs.lookup(name).name == LATIN1
    except LookupError:
        return False


_ARRAY_REBUILDERS = frozenset({"numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct"})


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
ARCHITECTURE_KEY = "architecture"


# Lightning's load_from_checkpoint merges the checkpoint's hyperparameters, and before that the 0.7-era keys, with
# dict.update (lightning/pytorch/core/saving.py, `_load_state`): a mapping, or any iterable of pairs.
HYPERPARAMETER_KEYS = frozenset({"hyper_parameters", "hparams", "module_arguments"})
_PAIR_KEYS = CONFIG_TARGET_KEYS | HYPERPARAMETER_KEYS | {ARCHITECTURE_KEY}  # keys `_config_targets` reads values of


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


def _keep(res: PickleResult, values: list[Sym]) -> None:
    """Note the names `values` hold, inside the lists, tuples, sets and dicts among them (each container walked
    once; what is added to it later is noted as it is added). A class kept as a value can be called later by
    whatever holds it (WS-PKL-022)."""
    pending = [value for value in values if type(value) is not Const]  # constants hold no names: most items
    while pending:
        value = pending.pop()
        if isinstance(value, Global):
            res.kept.add(value.dotted)
        elif isinstance(value, Seq | Dict) and not value.walked:  # marked on itself: a set of ids kept every
            value.walked = True  # container alive (9,900,000 empty lists appended to one: 1.9 GB, memory audit #10)
            if isinstance(value, Seq):
                pending.extend(item for item in value.items if type(item) is not Const)
            else:
                pending.extend(item for pair in value.items for item in pair if type(item) is not Const)


def _const_int(value: Sym) -> int | None:
    """The integer a constant holds (not a bool), else None."""
    if isinstance(value, Const) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return value.value
    return None


def const_ints(value: Sym) -> list[int] | None:
    """The integers a tuple or list of constants holds (a shape, strides, a range's bounds), else None."""
    if not isinstance(value, Seq) or value.dropped:
        return None
    numbers = [_const_int(item) for item in value.items]
    return [n for n in numbers if n is not None] if all(n is not None for n in numbers) else None


def _is_none(value: Sym) -> bool:
    return isinstance(value, Const) and value.value is None


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
