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

from wscan.scanners.pickle_values import Const, Dict, Event, Obj, PickleResult, Seq, Sym, describe

TASKS = "ultralytics.nn.tasks."
SPEC_PARTS = ("backbone", "head")  # the rows: [from, repeats, layer name, arguments]
FETCHED_ARGS = frozenset({"data", "model", "pretrained", "distill_model"})  # an address is downloaded and read
SIZE_ARGS = frozenset({"imgsz"})
MAX_VALUES = 10_000  # spec values walked per checkpoint (real ones hold a few hundred)


def check_ultralytics(res: PickleResult) -> None:
    """Each Ultralytics model's `yaml` and `args` state, and the checkpoint's `train_args` and `modelopt`."""
    seen: set[int] = set()
    for state, at, restored, _ in res.states:
        if not restored.startswith(TASKS) or id(state) in seen:
            continue
        seen.add(id(state))
        for key, value in state.items:
            if isinstance(key, Const) and key.value == "yaml":
                _judge_spec(res, value, restored, at)
            elif isinstance(key, Const) and key.value == "args":
                _judge_args(res, _mapping(value), restored, at)
    top = res.result
    if isinstance(top, Dict):
        for key, value in top.items:
            if isinstance(key, Const) and key.value == "train_args":
                _judge_args(res, _mapping(value), "train_args", res.start)
            elif isinstance(key, Const) and key.value == "modelopt" and not _falsy(value):
                _event(res, "modelopt", res.start, "checkpoint", "modelopt", describe(value))


def _mapping(value: Sym) -> Dict | None:
    """A dict, or the state of an object made from one (IterableSimpleNamespace)."""
    if isinstance(value, Dict):
        return value
    if isinstance(value, Obj) and isinstance(value.state, Dict):
        return value.state
    return None


def _falsy(value: Sym) -> bool:
    return isinstance(value, Const) and not value.value


def _event(res: PickleResult, part: str, at: int, owner: str, name: str, value: str) -> None:
    attrs: dict[str, str | int | bool] = {"part": part, "callable": owner, "name": name, "value": value[:300]}
    res.events.append(Event("pickle.ultralytics", at, attrs))


def _judge_spec(res: PickleResult, spec: Sym, owner: str, at: int) -> None:
    """Every layer name, the activation and every string argument of the architecture; what cannot be read is
    reported as unread."""
    if not isinstance(spec, Dict) or spec.dropped:
        _event(res, "unread", at, owner, "yaml", describe(spec))
        return
    walked = 0
    for key, value in spec.items:
        name = key.value if isinstance(key, Const) else None
        if name == "activation":
            text = value.value if isinstance(value, Const) else None
            _event(res, "activation", at, owner, "activation", text if isinstance(text, str) else describe(value))
        elif name in SPEC_PARTS:
            if not isinstance(value, Seq) or value.dropped:
                _event(res, "unread", at, owner, str(name), describe(value))
                continue
            for row in value.items:
                walked += 1
                if walked > MAX_VALUES or not isinstance(row, Seq) or len(row.items) < 3 or row.dropped:
                    _event(res, "unread", at, owner, str(name), describe(row))
                    continue
                layer = row.items[2]
                text = layer.value if isinstance(layer, Const) else None
                _event(res, "layer", at, owner, str(name), text if isinstance(text, str) else describe(layer))
                for argument in row.items[3:]:
                    _judge_arguments(res, argument, owner, str(name), at)


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
        elif not isinstance(item, Const):
            _event(res, "unread", at, owner, name, describe(item))


def _judge_args(res: PickleResult, args: Dict | None, owner: str, at: int) -> None:
    """Arguments Ultralytics fetches or sizes memory by. Not the folders a resume writes its arguments and weights
    under (`save_dir`, `project`): every trained checkpoint keeps the trainer's own, and the file names are fixed."""
    if args is None:
        return
    for key, value in args.items:
        name = key.value if isinstance(key, Const) else None
        text = value.value if isinstance(value, Const) else None
        if name in FETCHED_ARGS and isinstance(text, str) and "://" in text:
            _event(res, "fetched", at, owner, str(name), text)
        elif name == "distill_model" and not _falsy(value):
            _event(res, "fetched", at, owner, str(name), describe(value))
        elif name in SIZE_ARGS:
            sizes = value.items if isinstance(value, Seq) else [value]
            if any(isinstance(size, Const) and isinstance(size.value, int) and size.value > 8192 for size in sizes):
                _event(res, "size", at, owner, str(name), describe(value))
