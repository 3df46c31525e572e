"""The names a checkpoint's config makes its loader import and call, as the pickle machine meets them.

Hydra's `_target_` and Lightning's `_instantiator` in dict items, Lightning's hyperparameters (merged with
dict.update: any iterable of pairs), pyannote.audio's `architecture` module and class, and the pairs a call builds a
dict of (dict(pairs), OrderedDict(pairs)), noted in `PickleResult.config_targets` for the rules. Items are read as
they are set; hyperparameters and architectures at the stream's end (`check_hyperparameters`,
`check_architectures`).
"""

from __future__ import annotations

from wscan.scanners.pickle_values import (
    _ARRAY_REBUILDERS,
    _NOT_TEXT_DTYPE,
    _NUMPY_SCALARS,
    _OBJECTS,
    ARCHITECTURE_KEY,
    CONFIG_TARGET_KEYS,
    HYPERPARAMETER_KEYS,
    INSTANTIATOR_KEY,
    LIGHTNING_ATTRIBUTE_DICTS,
    MAX_CONFIG_TARGETS,
    Const,
    Dict,
    Global,
    Obj,
    PickleResult,
    Seq,
    Sym,
    Unknown,
    _const,
    _dtype_text,
    _is_none,
    _members,
    _text,
    _unread_text,
    restored_class,
)

META_KEY = "meta"  # OpenMMLab's checkpoint metadata, whose `config` its runners run on resume (`openmmlab_resume`)
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
        elif key == META_KEY and isinstance(value, Dict | Obj):  # an OpenMMLab checkpoint's: read at the stream's end
            if len(res.resume_metas) < MAX_CONFIG_TARGETS:
                res.resume_metas.append((at, value))
            else:
                res.config_more += 1
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


# Writers store a dict, an AttributeDict, an argparse Namespace or an OmegaConf DictConfig under HYPERPARAMETER_KEYS;
# pairs in anything else (a numpy array of rows, review 26) are read at the stream's end, as the loader sees them.
_HYPERPARAMETER_CLASSES = frozenset({
    "builtins.dict", "collections.OrderedDict", "collections.defaultdict", "argparse.Namespace",
    "omegaconf.dictconfig.DictConfig", "easydict.EasyDict", *LIGHTNING_ATTRIBUTE_DICTS,
})  # fmt: skip
UNREAD_KEY = "(a key the machine cannot read)"
# What Lightning's _load_state calls on the merged hyperparameters (`_convert_loaded_hparams`): a class the checkpoint
# names, which it writes only for OmegaConf's containers (review 29: builtins.list turned a tuple key into a pair).
HYPERPARAMETER_TYPE_KEYS = frozenset({"hparams_type", "datamodule_hparams_type"})


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


def _architecture(res: PickleResult, at: int, value: Dict | Obj) -> None:
    if len(res.architectures) < MAX_CONFIG_TARGETS:
        res.architectures.append((at, value))
    else:
        res.config_more += 1  # unread: counted like targets past the cap


def mapping_items(res: PickleResult, value: Sym, depth: int = 0) -> tuple[list[tuple[Sym, Sym]], bool]:
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
            found, complete = mapping_items(res, argument, depth + 1)
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
        items, whole = mapping_items(res, value)
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
