"""What Ultralytics acts on in a YOLO checkpoint besides its objects: data it reads as code, paths and addresses.

A YOLO `.pt` keeps the model's architecture as a dict (`model.yaml`), which training (a fine-tune, a resume) builds
the network from again: `parse_model` looks each layer's name up among the names its module imports and calls it
with the row's arguments, and evaluates the `activation` string as Python (older versions also evaluate string
arguments). Its arguments (`model.args`, the checkpoint's `train_args`) name the dataset `val()` and a resume fetch
(an address's YAML is downloaded and its `download` script run), a teacher model to fetch and unpickle, and the image
size predict allocates; a `modelopt` entry makes loading pip-install packages. Review 78
ran code through each. These are reported as events the rules judge (rules/pickle.yaml); nothing here is
Ultralytics-version specific but the key names.
"""

from __future__ import annotations

import re

from wscan.scanners.pickle_states import _pairs, unread_names
from wscan.scanners.pickle_values import (
    Const,
    Dict,
    Event,
    Global,
    Obj,
    PickleResult,
    Seq,
    Sym,
    _is_none,
    describe,
    restored_class,
)

TASKS = "ultralytics.nn.tasks."
SPEC_PARTS = ("backbone", "head")  # the rows: [from, repeats, layer name, arguments]
FETCHED_ARGS = frozenset({"data", "model", "pretrained", "distill_model"})  # an address is downloaded and read
SIZE_ARGS = frozenset({"imgsz"})
QUANTIZE_ARGS = frozenset({"quantize", "int8"})  # a resume prepares quantization-aware training: installs ModelOpt
MAX_SIZE = 8192  # pixels or channels; real checkpoints keep a few hundred to a few thousand
MAX_REPEATS = 100  # a row's repeat count; real architectures repeat a block at most a few times
SCALE_KEYS = frozenset({"scales", "channels", "ch"})  # the widths, depths and input channels the network is built of
TRANSFORMS = "torchvision.transforms."
DICT_LIKE = frozenset({"collections.OrderedDict", "collections.defaultdict", "collections.Counter", "builtins.dict"})
CHAIN_MAP = "collections.ChainMap"
PLAIN_FACTORIES = frozenset({"builtins.list", "builtins.dict", "builtins.set", "builtins.int", "builtins.float"})
COPYREG_MAKERS = frozenset({"copyreg._reconstructor", "copyreg.__newobj__", "copyreg.__newobj_ex__"})
NAMESPACES = frozenset({"types.SimpleNamespace", "ultralytics.utils.IterableSimpleNamespace", "argparse.Namespace"})
ADDRESS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:/")  # a scheme of two letters or more (not a drive) and a slash
# What real checkpoints import (review 81): Ultralytics, torch, torchvision and NumPy, and these core modules
CHECKPOINT_PACKAGES = frozenset({"ultralytics", "torch", "torchvision", "numpy"})
CORE_MODULES = frozenset({"builtins", "__builtin__", "collections", "copyreg", "copy_reg", "_codecs", "codecs",
                          "types", "functools", "pathlib", "datetime", "argparse", "enum", "operator", "math"})
MAX_STATE_DEPTH = 4  # a state's state: real ones go one level down (a namespace's dict)
MAX_VALUES = 10_000  # spec values walked per checkpoint (real ones hold a few hundred)


def check_ultralytics(res: PickleResult) -> None:
    """The `yaml` and `args` state of each Ultralytics model, and of whatever object a checkpoint dict keeps under
    `model` or `ema` (the loader takes `ckpt.get("ema") or ckpt["model"]` whatever its class, and training reads
    its `yaml`); the checkpoint's `train_args` and `modelopt`; the sizes of a classifier's stored transforms; the
    modules an Ultralytics checkpoint imports."""
    judged: dict[int, bool] = {}  # states judged, and whether as an Ultralytics model's
    for state, at, restored, _, _ in res.states:  # every class's: the loader takes any object (review 80 restored a
        # Sequential through torch's _rebuild_from_type_v2, whose state is a call's argument)
        _judge_model_once(res, judged, state, restored, at, own=restored.startswith(TASKS))
        if restored.startswith(TRANSFORMS):
            _judge_sizes(res, state, restored, at)
    if res.result is None:
        return
    top = _items(res, res.result)
    ultralytics = any(name.startswith("ultralytics.") for name in res.imports)
    # A result that is no dict is taken as a whole model (`{"model": result.model}`): its states are judged above.
    unread = (top is None and _dict_like(res, res.result)) or (top is not None and unread_names(top))
    if unread and ultralytics:  # a checkpoint whose keys wscan cannot all read
        _event(res, "unread", res.start, "checkpoint", "keys", describe(res.result))
    named = {key.value: value for key, value in top.items if isinstance(key, Const)} if top is not None else {}
    # Ultralytics' own key: a checkpoint that has it is read as strictly as one importing Ultralytics' classes
    ultralytics = ultralytics or "train_args" in named
    # a torch checkpoint YOLO(path) would take, a model object (not a state dict, as fastai's saves keep) under
    # `model` or `ema`: its loader pip-installs a module it lacks before looking at anything else (review 83)
    models = [value for key, value in named.items() if key in ("model", "ema")]
    torch_checkpoint = any(isinstance(value, Obj) and not _dict_like(res, value) for value in models) and any(
        name.startswith("torch.") for name in res.imports)
    _judge_modules(res, ultralytics or torch_checkpoint)
    if top is None:
        return
    for key, value in top.items:
        name = key.value if isinstance(key, Const) else None
        if name in ("model", "ema") and isinstance(value, Obj):
            held = _attributes(res, value)
            if held is None and ultralytics and value.state is not None:
                _event(res, "unread", res.start, restored_class(value), name, describe(value.state))
            elif held is not None:
                _judge_model_once(res, judged, held, restored_class(value), res.start, own=ultralytics)
        elif name == "train_args":
            _judge_args(res, value, "train_args", res.start, strict=True)
        elif name == "modelopt" and not _falsy(value):
            _event(res, "modelopt", res.start, "checkpoint", "modelopt", describe(value))


def _judge_model_once(res: PickleResult, judged: dict[int, bool], state: Dict, owner: str, at: int, own: bool) -> None:
    """`_judge_model` once per state, and once more when it is met again as an Ultralytics model's (strictly)."""
    if id(state) not in judged or (own and not judged[id(state)]):
        judged[id(state)] = own
        _judge_model(res, state, owner, at, own=own)


def _judge_modules(res: PickleResult, ultralytics: bool) -> None:
    """Ultralytics' loader pip-installs a module a checkpoint names and this Python lacks, and loads again (review
    81: `easydict`, and `pathlib._local`, which only Python 3.13 has, under a name anyone may register). Real
    checkpoints import Ultralytics, torch, torchvision, NumPy and a few core modules; any other module is reported."""
    if not ultralytics:
        return
    for record in res.imports.values():
        module = record.module
        if module not in CORE_MODULES and module.partition(".")[0] not in CHECKPOINT_PACKAGES:
            _event(res, "module", record.offset, "checkpoint", module, f"{module}.{record.name}")


def _judge_sizes(res: PickleResult, state: Dict, owner: str, at: int) -> None:
    """A stored transform's size (Resize, CenterCrop): predict makes pictures of it."""
    for key, value in state.items:
        if isinstance(key, Const) and key.value == "size" and _size_past(value):
            _event(res, "size", at, owner, "size", describe(value))


def _judge_model(res: PickleResult, state: Dict, owner: str, at: int, own: bool) -> None:
    """A model's architecture and arguments. The architecture must be a dict wscan reads (text is a file the trainer
    loads or an address check_yaml downloads, review 80); the arguments too in an Ultralytics model or checkpoint
    (`own`), and elsewhere they are judged when they are one (other libraries keep other things under `args`)."""
    for key, value in state.items:
        name = key.value if isinstance(key, Const) else None
        if name == "yaml" and not _is_none(value):
            text = value.value if isinstance(value, Const) else None
            spec = _items(res, value)
            if isinstance(text, str):
                _event(res, "fetched" if _address(text) else "unread", at, owner, "yaml", text)
            elif spec is None:
                _event(res, "unread", at, owner, "yaml", describe(value))
            else:
                _judge_spec(res, spec, owner, at)
        elif name == "args":
            _judge_args(res, value, owner, at, strict=own)


def _address(text: str) -> bool:
    """An address Ultralytics downloads: a scheme and a slash (its downloader and requests take `http:/` too)."""
    return "://" in text or ADDRESS.match(text) is not None


def _items(res: PickleResult, value: Sym, depth: int = 0) -> Dict | None:
    """`value` as the dict Ultralytics reads with `[]`, get() and `**`: a dict; a dict-like object (OrderedDict,
    defaultdict, Counter, a dict call, any object SETITEMS filled) as the pairs it was made from and those SETITEMS
    gave it, whatever attributes a BUILD state gave it (reviews 80, 81: the state is not its items); a dict
    subclass copyreg rebuilt from a dict; a ChainMap as its maps merged. None for anything else, and past
    MAX_STATE_DEPTH."""
    if isinstance(value, Dict):
        return value
    if not isinstance(value, Obj) or depth >= MAX_STATE_DEPTH:
        return None
    made = restored_class(value)
    if made == CHAIN_MAP:
        attributes = _attributes(res, value, depth + 1)
        maps = next((item for key, item in attributes.items if isinstance(key, Const) and key.value == "maps"),
                    None) if attributes is not None else None  # fmt: skip
        if not isinstance(maps, Seq) or maps.dropped:
            return None
        merged = [_items(res, item, depth + 1) for item in maps.items]
        if any(part is None for part in merged):
            return None
        return Dict([pair for part in merged if part is not None for pair in part.items])
    if _dict_like(res, value):
        return _dict_items(res, value)
    return None


def _dict_like(res: PickleResult, value: Sym) -> bool:
    """Whether Ultralytics may take `value` as a dict: a dict, a dict-like class, an object SETITEMS filled (it fills
    only dicts), a dict subclass copyreg rebuilt, a ChainMap, or a class called with a dict (any dict subclass made
    from one: judging its argument as its items is the safe side)."""
    if isinstance(value, Dict):
        return True
    if not isinstance(value, Obj):
        return False
    args = value.args.items if isinstance(value.args, Seq) else []
    return (restored_class(value) in DICT_LIKE | {CHAIN_MAP} or id(value) in res.object_items or _dict_made(value)
            or (not value.instance and any(isinstance(arg, Dict) for arg in args)))  # fmt: skip


def _dict_made(value: Obj) -> bool:
    """A dict subclass copyreg rebuilds from a dict: `_reconstructor(cls, dict, items)` (protocols 0 and 1)."""
    args = value.args.items if isinstance(value.args, Seq) else []
    return (isinstance(value.func, Global) and value.func.dotted == "copyreg._reconstructor" and len(args) == 3
            and isinstance(args[1], Global) and args[1].dotted == "builtins.dict")  # fmt: skip


def _attributes(res: PickleResult, value: Sym, depth: int = 0) -> Dict | None:
    """An object's attributes, as BUILD sets them from its state: a dict (or dict-like), (name, value) pairs, which
    __dict__.update takes too (review 80), or a (dict, slots) pair's two merged. None when any part cannot be read,
    or is nested past MAX_STATE_DEPTH (an object may be its own state: statsmodels' Bunch)."""
    if isinstance(value, Dict):
        return value
    if not isinstance(value, Obj) or value.state is None or depth >= MAX_STATE_DEPTH:
        return None
    state = value.state
    if isinstance(state, Seq) and state.type == "tuple" and len(state.items) == 2 and _pairs(state) is None:
        parts = [_items(res, part, depth + 1) for part in state.items if not _is_none(part)]
        if all(part is not None for part in parts):
            return Dict([pair for part in parts if part is not None for pair in part.items])
        return None
    return _pairs(state) if isinstance(state, Seq) else _items(res, state, depth + 1)


def _dict_items(res: PickleResult, value: Obj) -> Dict | None:
    """The items of a dict-like object: the pairs its call was given (counted even where the call ignores them, as
    cls.__new__ does: judging more is safe) and those SETITEMS added."""
    made = restored_class(value)
    args = value.args.items if isinstance(value.args, Seq) else None
    if args is None:
        return None
    if isinstance(value.func, Global) and value.func.dotted in COPYREG_MAKERS:
        args = args[2:] if value.func.dotted == "copyreg._reconstructor" else args[1:]  # past the class (and base)
    if made == "collections.defaultdict":  # its factory makes the value of any key it lacks (review 83 hid an
        # architecture's rows, and a ChainMap's address, in a partial there): only an empty container's type passes
        factory = args[0] if args else None
        if factory is not None and not _is_none(factory) and not (
                isinstance(factory, Global) and factory.dotted in PLAIN_FACTORIES):
            return None
        args = args[1:]
    pairs: list[tuple[Sym, Sym]] = []
    for given in args:
        if isinstance(given, Dict):
            pairs += given.items
        elif (listed := _pairs(given)) is not None:  # (name, value) pairs, read as dict.update reads them
            pairs += listed.items
        elif not (_is_none(given) or (isinstance(given, Seq) and not given.items and not given.dropped)):
            return None
    filled = res.object_items.get(id(value))
    if filled is not None:
        pairs += list(filled[1])
    return Dict(pairs)


def _past(value: Sym, limit: int) -> bool:
    """A number past `limit`, int or float (Ultralytics rounds a float repeat count and ceils float sizes: review
    83)."""
    number = value.value if isinstance(value, Const) else None
    return isinstance(number, int | float) and not isinstance(number, bool) and number > limit


def _size_past(value: Sym) -> bool:
    """A size (one number, or a list of them: height and width) past MAX_SIZE."""
    return any(_past(size, MAX_SIZE) for size in (value.items if isinstance(value, Seq) else [value]))


def _falsy(value: Sym) -> bool:
    return isinstance(value, Const) and not value.value


def _event(res: PickleResult, part: str, at: int, owner: str, name: str, value: str) -> None:
    attrs: dict[str, str | int | bool] = {"part": part, "callable": owner, "name": name, "value": value[:300]}
    res.events.append(Event("pickle.ultralytics", at, attrs))


def _judge_spec(res: PickleResult, spec: Sym, owner: str, at: int) -> None:
    """Every layer name, the activation and every string argument of the architecture; what cannot be read is
    reported as unread; repeat counts, channels and scales past what a network is built of (review 80 made training
    exhaust memory with two million repeats, and with 40,000 channels) as sizes."""
    if not isinstance(spec, Dict) or unread_names(spec):
        _event(res, "unread", at, owner, "yaml", describe(spec))
        return
    walked = 0
    for key, value in spec.items:
        name = key.value if isinstance(key, Const) else None
        if name == "activation":
            text = value.value if isinstance(value, Const) else None
            _event(res, "activation", at, owner, "activation", text if isinstance(text, str) else describe(value))
        elif name in SCALE_KEYS and _numbers_past(value, MAX_SIZE):
            _event(res, "size", at, owner, str(name), describe(value))
        elif name in SPEC_PARTS:
            if not isinstance(value, Seq) or value.dropped:
                _event(res, "unread", at, owner, str(name), describe(value))
                continue
            for row in value.items:
                walked += 1
                if walked > MAX_VALUES or not isinstance(row, Seq) or len(row.items) < 3 or row.dropped:
                    _event(res, "unread", at, owner, str(name), describe(row))
                    continue
                repeats = row.items[1]
                if _past(repeats, MAX_REPEATS):
                    _event(res, "size", at, owner, f"{name} repeats", describe(repeats))
                layer = row.items[2]
                text = layer.value if isinstance(layer, Const) else None
                _event(res, "layer", at, owner, str(name), text if isinstance(text, str) else describe(layer))
                for argument in row.items[3:]:
                    _judge_arguments(res, argument, owner, str(name), at)


def _numbers_past(value: Sym, limit: int) -> bool:
    """Whether a number in `value` (a scale's [depth, width, max channels], nested lists of them) passes `limit`."""
    pending, count = [value], 0
    while pending and count < MAX_VALUES:
        item = pending.pop()
        count += 1
        if isinstance(item, Dict):
            pending.extend(part for _, part in item.items)
        elif isinstance(item, Seq):
            pending.extend(item.items)
        elif _past(item, limit):
            return True
    return bool(pending)  # past MAX_VALUES: sized as past the limit, never passed


def _judge_arguments(res: PickleResult, value: Sym, owner: str, name: str, at: int) -> None:
    """String arguments of a row (older Ultralytics evaluates them; newer ones read literals and a few names)."""
    pending = [value]
    count = 0
    while pending and count < MAX_VALUES:
        item = pending.pop()
        count += 1
        if isinstance(item, Seq):
            if item.dropped:
                _event(res, "unread", at, owner, name, describe(item))
            pending.extend(item.items)
        elif isinstance(item, Const) and isinstance(item.value, str):
            _event(res, "argument", at, owner, name, item.value)
        elif _past(item, MAX_SIZE):
            _event(res, "size", at, owner, name, describe(item))  # a layer's channels: its weights are made of them
        elif not isinstance(item, Const):
            _event(res, "unread", at, owner, name, describe(item))
    if pending:  # past MAX_VALUES: what is left may be a string Ultralytics evaluates (helper 208 hid one there)
        _event(res, "unread", at, owner, name, f"more than {MAX_VALUES:,} argument values")


def _judge_args(res: PickleResult, value: Sym, owner: str, at: int, strict: bool) -> None:
    """Arguments Ultralytics fetches or sizes memory by. Not the folders a resume writes its arguments and weights
    under (`save_dir`, `project`): every trained checkpoint keeps the trainer's own, and the file names are fixed.
    Arguments wscan cannot read as a dict (a computed mapping, a state it does not follow) are reported unread when
    `strict` (an Ultralytics model's, or a checkpoint's that imports Ultralytics: other libraries' objects keep
    other things under `args`)."""
    args = _items(res, value)
    if args is None and isinstance(value, Obj) and restored_class(value) in NAMESPACES:
        args = _attributes(res, value)
    if args is None or unread_names(args):
        if strict and not _is_none(value):
            _event(res, "unread", at, owner, "args", describe(value))
        if args is None:
            return
    for key, item in args.items:
        name = key.value if isinstance(key, Const) else None
        text = item.value if isinstance(item, Const) else None
        if name in FETCHED_ARGS and isinstance(text, str) and _address(text):
            _event(res, "fetched", at, owner, str(name), text)
        elif name == "distill_model" and not _falsy(item):
            _event(res, "fetched", at, owner, str(name), describe(item))
        elif name in FETCHED_ARGS and not isinstance(item, Const):
            _event(res, "unread", at, owner, str(name), describe(item))
        elif name in SIZE_ARGS:
            if _size_past(item):
                _event(res, "size", at, owner, str(name), describe(item))
        elif name in QUANTIZE_ARGS and not _falsy(item):
            _event(res, "modelopt", at, owner, str(name), describe(item))
