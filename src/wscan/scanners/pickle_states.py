"""The states objects get (by BUILD, or from a call that sets one), judged for what a library later reads, calls
or writes with them.

Dict states are judged once the stream ends (`check_states`: gensim's side-file lists, SciPy's code templates,
folders, name maps, callables stored under method names); a (dict, slots) pair or a state made by a call, as it is
given (`_judge_state`, `_state_from_call`). Items set on objects are judged as their attributes too.
"""

from __future__ import annotations

import math

from wscan.scanners.pickle_values import (
    LIGHTNING_ATTRIBUTE_DICTS,
    MAX_ITEMS,
    Const,
    Dict,
    Event,
    Global,
    Obj,
    PastKinds,
    Persistent,
    PickleResult,
    Seq,
    Sym,
    Unknown,
    _const,
    _const_int,
    _is_none,
    _members,
    _pair,
    const_ints,
    describe,
    is_config_class,
    restored_class,
)

MAX_CONFIG_STATES = 1000  # transformers config states kept for `scanners.pickled_config`


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
    for state, at, restored, copied, handed in res.states:
        if (id(state), restored) in seen:
            continue
        seen.add((id(state), restored))
        _judge_dict_state(res, copied, at, restored, handed)
        if len(state.items) != len(copied.items) or state.dropped != copied.dropped:
            _judge_dict_state(res, state, at, restored, handed)  # what both views find is one finding (RuleSet.judge)


# tslearn's to_pickle writes a plain dict {"hyper_params": ..., "model_params": ...}; its from_pickle (and from_json,
# from_hdf5) makes the model from the first and sets each item of the second on it with setattr: both are the
# model's attributes (review 72 replaced `predict` so).
MODEL_PACKAGE = "tslearn.bases.bases.BaseModelPackage"
MODEL_PACKAGE_KEYS = ("hyper_params", "model_params")


def check_model_package(res: PickleResult) -> None:
    """A stream whose result is tslearn's model dict: its parameters judged as the model's attributes."""
    result = res.result
    if not isinstance(result, Dict):
        return
    found = {key.value: value for key, value in result.items if isinstance(key, Const) and isinstance(key.value, str)}
    if set(MODEL_PACKAGE_KEYS) <= set(found):
        for key in MODEL_PACKAGE_KEYS:
            params = found[key]
            if isinstance(params, Dict):
                _judge_dict_state(res, params, res.start, MODEL_PACKAGE)


def _judge_dict_state(res: PickleResult, state: Dict, at: int, restored: str, handed: tuple[str, ...] = ()) -> None:
    """One view of a dict state, as `check_states` takes it; `handed`: other classes the object may be."""
    _callable_members(res, state, restored, at)
    if is_config_class(restored):
        if len(res.config_states) < MAX_CONFIG_STATES:
            res.config_states.append((at, restored, state))
        else:
            res.config_states_more += 1
    if unread_names(state):
        detail = f"{len(state.items) + state.dropped} names, some computed or past what wscan keeps"
        res.events.append(Event("pickle.unread_attribute_names", at, {"detail": detail, "callable": ""}))
        _unread_state(res, restored, handed, at)
    for key, value in state.items:
        if isinstance(key, Const) and key.value in CODE_STATE_KEYS:
            _state_code(res, restored, str(key.value), value, at)
        elif isinstance(key, Const) and key.value in FORMULA_STATE_KEYS:
            res.formula_unclear.add(restored)
        elif isinstance(key, Const) and key.value in FORMULA_KEPT_KEYS and (key.value == "formula" or
                                                                            not _is_none(value)):
            res.formula_kept = True  # whatever the class: a results object's model may be any object
        elif isinstance(key, Const) and key.value in FOLDER_STATE_KEYS and not _is_none(value) and not _no_cache(value):
            folder = {"name": str(key.value), "callable": restored, "value": describe(value)[:300]}
            res.events.append(Event("pickle.state_folder", at, dict[str, str | int | bool](folder)))
        elif isinstance(key, Const) and key.value in ALIAS_STATE_KEYS:
            aliases = {"name": str(key.value), "callable": restored, "value": describe(value)[:300]}
            res.events.append(Event("pickle.state_aliases", at, dict[str, str | int | bool](aliases)))
        elif isinstance(key, Const) and key.value in IMPORT_STATE_KEYS:
            _state_import(res, state, str(key.value), value, restored, at)
        elif isinstance(key, Const) and key.value == SPARK_MODEL_META and not _empty(value):
            _spark_model_meta(res, value, restored, at)
        elif isinstance(key, Const) and key.value in MODEL_ARGUMENT_KEYS and restored.startswith(
                MODEL_ARGUMENT_KEYS[str(key.value)][0]):  # fmt: skip
            _model_arguments(res, str(key.value), value, restored, at)
        elif isinstance(key, Const) and key.value in LAZY_MODEL_KEYS and restored.startswith(LAZY_MODEL_OWNERS):
            _lazy_model_paths(res, str(key.value), value, restored, at)
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


# AutoGluon's TabularPredictor loads its models lazily, each the first time predict() needs it, from paths its state
# holds joined to the folder it was loaded from: the trainer's model graph keeps each model's folder as a list of
# names (`model_graph`, a networkx DiGraph: `_node[name]["path"]`, joined with os.path.join, so an absolute part
# replaces the folder) and a bagged model its children's folder names (`models`, a list of names or of the children
# themselves). helper 281 had a trainer.pkl name /tmp/... there: predict() unpickled a model.pkl outside the folder.
# The model graph's names also name the folder of a model's cached predictions (utils/attr/<name>/), which
# fit_weighted_ensemble() and refits unpickle. AutoGluon's saves keep plain names in all of them (WS-PKL-070).
LAZY_MODEL_OWNERS = ("autogluon.",)
LAZY_MODEL_KEYS = frozenset({"model_graph", "models"})


def _plain_name(name: Sym) -> bool:
    """A constant folder name that os.path.join keeps inside the folder it is joined to."""
    text = name.value if isinstance(name, Const) else None
    return isinstance(text, str) and text not in ("", ".", "..") and not any(c in text for c in "/\\:\0")


def _lazy_model_paths(res: PickleResult, key: str, value: Sym, restored: str, at: int) -> None:
    """The names an AutoGluon trainer's model graph or a bagged model's `models` give the folders its models load
    from (LAZY_MODEL_KEYS): each must be a plain name; one that is not, or that wscan cannot read, is reported."""
    found: list[Sym] = []  # the names that are not plain, or the value itself when it cannot be read
    if _is_none(value):
        return
    if key == "models":
        if isinstance(value, Seq):  # a bagged model's children: names, or the children themselves
            found = [item for item in value.items if not isinstance(item, Obj) and not _plain_name(item)]
            found += [value] if value.dropped else []
        elif isinstance(value, Dict):  # a trainer's models kept in memory, by name (iterated, a dict gives names)
            found = [name for name, _ in value.items if not _plain_name(name)] + ([value] if value.dropped else [])
        else:
            found = [value]
    else:
        state = value.state if isinstance(value, Obj) else None
        nodes = state.get("_node") if isinstance(state, Dict) and not unread_names(state) else None
        if not isinstance(nodes, Dict) or nodes.dropped:
            found = [value]
        for name, attrs in nodes.items if isinstance(nodes, Dict) else ():
            path = attrs.get("path") if isinstance(attrs, Dict) and not unread_names(attrs) else attrs
            parts = path.items if isinstance(path, Seq) and not path.dropped else [path]
            found += [name] if not _plain_name(name) else []
            found += [part for part in parts if part is not None and not _plain_name(part)]
    if found:
        attrs_: dict[str, str | int | bool] = {"name": key, "callable": restored, "value": describe(found[0])[:300]}
        res.events.append(Event("pickle.model_path_outside", at, attrs_))


# A joblib Memory with neither location nor store backend caches nothing: its cache() hands the function back as it
# is. HDBSCAN keeps one as its default `memory` (scikit-learn's check_memory passes a Memory through).
UNCACHED_MEMORY = "joblib.memory.Memory"
NO_CACHE_KEYS = ("location", "store_backend")


def _no_cache(value: Sym) -> bool:
    """Whether `value` is a joblib Memory restored from a state that sets no location and no store backend."""
    if not (isinstance(value, Obj) and restored_class(value) == UNCACHED_MEMORY and isinstance(value.state, Dict)):
        return False
    if unread_names(value.state):
        return False
    kept = {key.value: item for key, item in value.state.items if isinstance(key, Const)}
    return all(key in kept and _is_none(kept[key]) for key in NO_CACHE_KEYS)


def unread_names(mapping: Dict) -> bool:
    """Whether some of a dict's keys are unknown: computed (a numpy.str_ equals its text), or past what the machine
    keeps."""
    return bool(mapping.dropped) or any(not isinstance(key, Const) for key, _ in mapping.items)


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
# A darts torch model rebuilds itself from `_model_params` (`model_params` too) when it is trained again (backtest()
# and historical_forecasts() retrain by default) and hands `trainer_params` to Lightning's Trainer at fit() and
# predict(): helper 269 had `save_checkpoints` with `force_reset` delete and rewrite a folder the file named, and a
# `default_root_dir` with a logger write logs there at predict(). darts' own saves keep those off.
TRAINER_WRITES = frozenset({"default_root_dir", "weights_save_path", "logger", "enable_checkpointing", "callbacks",
                            "profiler", "plugins"})  # fmt: skip
DARTS_REBUILD = frozenset({"save_checkpoints", "force_reset", "log_tensorboard", "pl_trainer_kwargs"})
# Each name's arguments that turn on what no real file asks for, and on whose objects the name is judged (darts' only,
# as other libraries use the same words).
MODEL_ARGUMENT_KEYS = {
    "gensim_kw_args": ("", frozenset({"distributed", "ns_conf", "callbacks", "dispatcher"})),
    "model_kwargs": ("", frozenset({"callbacks"})),
    "_model_params": ("darts.", DARTS_REBUILD), "model_params": ("darts.", DARTS_REBUILD),
    "trainer_params": ("darts.", TRAINER_WRITES),
    "pl_trainer_kwargs": ("darts.", TRAINER_WRITES),  # inside the model's arguments: merged into trainer_params
}


def _model_arguments(res: PickleResult, name: str, value: Sym, restored: str, at: int) -> None:
    """The arguments of MODEL_ARGUMENT_KEYS that turn on what no real file asks for: set to anything but None,
    False, 0 or an empty container, or arguments the machine cannot read."""
    if _is_none(value):
        return
    mapping = _as_mapping(res, value)  # darts keeps its arguments in an OrderedDict
    if mapping is None or mapping.dropped or any(not isinstance(k, Const) for k, _ in mapping.items):
        pairs: list[tuple[str, Sym]] = [("<unread>", value)]
    else:
        pairs = [(str(k.value), v) for k, v in mapping.items if isinstance(k, Const)]
    for argument, given in pairs:
        if argument != "<unread>" and (argument not in MODEL_ARGUMENT_KEYS[name][1] or _empty(given)):
            continue
        if argument in MODEL_ARGUMENT_KEYS and _as_mapping(res, given) is not None:  # within arguments: alike
            _model_arguments(res, argument, given, restored, at)
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
# State attributes that make statsmodels' ModelData.__setstate__ evaluate the model's formula (through formulaic, or
# patsy before statsmodels 0.15) over the data in the same state: a formula evaluates Python expressions. A state
# without them only fills the instance's dict. Classes given such a state, or one whose names cannot be read, are
# `PickleResult.formula_unclear` (WS-PKL-051).
FORMULA_STATE_KEYS = frozenset({"restore_model_spec", "restore_design_info"})
# What a statsmodels results object's predict() reads: a model with a `formula` attribute (any value) has the new data
# go through its `model_spec` (`design_info` before 0.15), the model's or its data object's, which evaluates the
# formula's Python (review 67 ran code at predict() from an array-fitted OLS given these two strings). Models fitted
# from arrays keep none of them; in any state of a file that imports statsmodels they are WS-PKL-051
# (`PickleResult.formula_kept`), since the results' model and data may be objects of any class.
FORMULA_KEPT_KEYS = frozenset({"formula", "model_spec", "design_info"})
# State attributes naming a folder or file the library writes to when the object is used: scikit-learn's `memory` (a
# Pipeline's, an agglomerative clustering's) becomes a joblib.Memory cache at fit(), and a review wrote files anywhere
# so; gensim's AuthorTopicModel rewrites the corpus file at its `serialization_path` at update().
# A darts torch model's `load_ckpt_path` is the checkpoint fit() resumes from, which Lightning opens (any fsspec URL:
# `data:`, http) and loads with weights_only=False (helper 269 ran code so); darts' own saves keep None.
# PyCaret's Pipeline keeps its cache as `_memory` (its `memory` is a property) and rebuilds it from there while it
# loads: its __setstate__ sets `memory`, whose setter makes a joblib Memory at a folder the text names and the
# folders of three cached functions in it (helper 274 proved it with pickle.load alone).
FOLDER_STATE_KEYS = frozenset({"memory", "_memory", "serialization_path", "load_ckpt_path"})
# State attributes that rename the object's other attributes: a transformers config looks every name up in its
# `attribute_map` first, so an instance's own map points any attribute or method at another one (review 13 made
# save_pretrained call push_to_hub). The class keeps the map; no real file's state has one.
ALIAS_STATE_KEYS = frozenset({"attribute_map"})
# State attributes naming a class the library imports and calls when the object is used: gensim's EnsembleLda
# imports the module and takes the class its state names the first time it needs its topic model class (at save(),
# add_model(), recluster()) and calls it with keyword arguments from its state; gensim never saves the class itself
# (`topic_model_class`), and one in the state is what it calls. The rules check the name is gensim's LDA (WS-PKL-038).
# A darts torch model loads its network with getattr(sys.modules[_module_path], _module_name).load_from_checkpoint(
# <the .ckpt beside it>): the rules check the module is darts' own (helper 268).
IMPORT_STATE_KEYS = {"topic_model_module_string": "topic_model_class_string", "topic_model_class": "",
                     "_module_path": "_module_name"}  # fmt: skip
MAX_CODE_TEXT = 8192  # SciPy's template is under 1 KiB for every distribution it ships


# FLAML's AutoML.load_pickle, for each trained estimator with this attribute (a dict), imports the module its "class"
# names, takes the class and calls its load() (or read().load()) with the "path" it names joined to the file's folder
# (an absolute path stays absolute): AutoML.pickle writes it for Spark models only, saved beside the file. Any other
# class is a loader of the file's choosing (helper 280 had joblib.numpy_pickle unpickle a file elsewhere), and
# wscan does not scan Spark's folders: WS-PKL-038 judges every one. Real files of other models keep none.
SPARK_MODEL_META = "_flaml_spark_model_meta"


def _spark_model_meta(res: PickleResult, value: Sym, restored: str, at: int) -> None:
    """The class FLAML's load_pickle imports and loads a path with, as WS-PKL-038's target."""
    named = value.get("class") if isinstance(value, Dict) else None
    text = named.value if isinstance(named, Const) else None
    target = text[:200] if isinstance(text, str) else f"<{describe(value)[:200]}>"
    attrs: dict[str, str | int | bool] = {"name": SPARK_MODEL_META, "callable": restored, "target": target}
    res.events.append(Event("pickle.state_import", at, attrs))


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


def _unread_state(res: PickleResult, restored: str, handed: tuple[str, ...], at: int) -> None:
    """A state whose names cannot be read may hold code the class runs: judged as the restored class's, and as
    each class the object's maker was handed, which an allowed function may return, copy or instantiate."""
    for made in (restored, *(name for name in handed if name != restored)):
        if made == HANDED_PAST:
            attrs: dict[str, str | int | bool] = {"callable": restored, "detail": "what made the object was handed "
                                                  f"more than wscan follows ({MAX_HANDED} classes, {MAX_HANDED_DEPTH} "
                                                  "calls deep)"}  # fmt: skip
            res.events.append(Event("pickle.unread_attribute_names", at, attrs))
        else:
            _state_code(res, made, "<unread>", Unknown(), at)


# What `handed_classes` looks through: arguments this many calls deep, and this many classes at most; past either,
# HANDED_PAST stands for the rest (which a state wscan cannot read then fails on).
MAX_HANDED_DEPTH = 4
MAX_HANDED = 16
HANDED_PAST = "<past what wscan follows>"


def handed_classes(target: Obj) -> tuple[str, ...]:
    """The classes among what made `target` was handed: named classes, and objects by the class they were made
    from, through the arguments of calls and inside tuples, lists and dicts. An allowed function that returns its
    argument, a copy or a new instance of it (gensim.utils.identity, copy.deepcopy, scikit-learn's newObj) makes an
    object of that class, which its name does not say (helper 259 gave a SciPy distribution its code template so)."""
    found: dict[str, None] = {}
    todo: list[tuple[Sym | None, int]] = [(target.args, 0)]
    while todo:
        value, depth = todo.pop()
        if not isinstance(value, Global | Obj | Seq | Dict):
            continue
        if depth > MAX_HANDED_DEPTH or len(found) >= MAX_HANDED:
            found[HANDED_PAST] = None
            break
        if isinstance(value, Global):
            found[value.dotted] = None
        elif isinstance(value, Obj):
            found[restored_class(value)] = None
            todo.append((value.args, depth + 1))
        else:
            items = value.items if isinstance(value, Seq) else [part for pair in value.items for part in pair]
            if len(items) > MAX_HANDED or value.dropped:
                found[HANDED_PAST] = None
            todo.extend((item, depth + 1) for item in items[:MAX_HANDED])
    return tuple(found)


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
    if name == "<unread>":  # names that cannot be read may ask for the formula too
        res.formula_unclear.add(restored)


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
            items = [*value.items, *(value.past_items() or [])]  # (too varied past them: the table is unknown)
            _dunder_items(res, [item for pair in items for item in pair], restored, at)
        if name in ITEM_TABLES and restored in ITEM_ATTRIBUTE_OWNERS:
            _item_table(res, value, restored, at)
            continue
        if isinstance(name, str) and name in CALLED_TABLES:
            for item in _table_values(res, value, keys=name in LIST_TABLES):
                _member_event(res, name, item, restored, at)
            continue  # the table itself is data; its values are what is called
        if isinstance(name, str) and name in CLASS_TABLES:
            _class_table(res, name, value, restored, at)
            continue
        if isinstance(name, str):
            # A config dict's state mirrors its items (EasyDict keeps both): no library calls its `weights`.
            _member_event(res, name, value, restored, at, via="items" if restored in ATTRIBUTE_DICTS else "state")


def _member_event(
    res: PickleResult, name: str, value: Sym, restored: str, at: int, via: str = "state", depth: int = 0
) -> None:
    """`name` on an object of class `restored` holds `value`, which may be called (see `_callable_members`); `via`
    says whether a state or items set it (the attributes libraries call are judged on states only). A name map
    (NAME_MAP_ATTRIBUTES) is reported whatever it holds: it renames the object's attributes (WS-PKL-040). `depth`:
    how many EasyDicts down this one is."""
    if restored == EASYDICT:
        _nested_items(res, value, at, depth)
    if name in TEXT_ONLY_ATTRIBUTES and restored.startswith(TEXT_ONLY_ATTRIBUTES[name]) and not _text_or_none(value):
        given: dict[str, str | int | bool] = {"name": name[:200], "callable": restored, "value": describe(value)}
        res.events.append(Event("pickle.state_not_text", at, given))
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


# Attributes a library reads as a name of its own but also takes as callables (WS-PKL-068): pytorch-forecasting's
# normalizers call a `transformation` dict's `forward`, `reverse` and `inverse` on the data and on every prediction
# (helper 271 had an allowed function called so); its saves keep the name of a built-in transformation, or None.
TEXT_ONLY_ATTRIBUTES = {"transformation": "pytorch_forecasting."}


def _text_or_none(value: Sym) -> bool:
    return isinstance(value, Const) and (value.value is None or isinstance(value.value, str))


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
# Tables of a class whose values the library calls by name, which a state fills: mmengine's HistoryBuffer merges its
# state's `statistics_methods` into the class's `_statistics_methods` with dict.update (for every buffer of the
# process), and an instance's own `_statistics_methods` comes before the class's; `statistics("mean")` runs at every
# log line. Judged entry by entry (WS-PKL-063).
CLASS_TABLES = frozenset({"statistics_methods", "_statistics_methods"})
# Tables real files keep as lists, which the library iterates: given a dict, it calls or steps the keys (review 11).
LIST_TABLES = frozenset({"lr_lambdas", "_schedulers"})
EASYDICT = "easydict.EasyDict"  # makes each dict among its values an EasyDict too (`_nested_items`)
MAX_NESTED_DICTS = 32
# Dicts whose items are also their attributes (set by __setitem__ or __getattr__).
ATTRIBUTE_DICTS = frozenset({
    EASYDICT, "sklearn.utils._bunch.Bunch", *LIGHTNING_ATTRIBUTE_DICTS,
    # SciPy's result objects answer attribute lookups from their items (a review made one a pipeline step)
    "scipy.optimize._optimize.OptimizeResult", "scipy._lib._util._RichResult",
})  # fmt: skip
# What torch's Module.__getattr__ answers a name the class lacks from: `copy.deepcopy(model)` asks for __deepcopy__.
PROXY_TABLES = frozenset({"_modules", "_parameters", "_buffers"})
# Objects whose items are their attributes without being dicts: PyTorch Geometric's storages answer a name their class
# lacks from the `_mapping` their state keeps (BaseStorage.__getattr__), and its graphs ask their storage
# (Data.__getattr__, HeteroData's global storage); SETITEMS on either fills that `_mapping`. Every item is judged as an
# attribute, as an EasyDict's are (ordinary use looks names up on them: `data.x`, loaders, `np.asarray(store)`).
ITEM_ATTRIBUTE_OWNERS = frozenset({
    *(f"torch_geometric.data.storage.{name}" for name in ("BaseStorage", "NodeStorage", "EdgeStorage",
                                                           "GlobalStorage")),
    "torch_geometric.data.data.Data", "torch_geometric.data.hetero_data.HeteroData",
    "torch_geometric.data.temporal.TemporalData",
})  # fmt: skip
# The state attribute those storages keep their items in.
ITEM_TABLES = frozenset({"_mapping"})
# Class attributes a library reads every attribute name through: a transformers config looks each name up in its
# `attribute_map` first (n_embd -> hidden_size). Kept in an instance's state, the map would send a method's name to
# another attribute of that state, which no method-name check sees. No writer keeps one in an instance.
NAME_MAP_ATTRIBUTES = frozenset({"attribute_map"})
MAX_OBJECT_ITEMS = 1_000_000  # objects whose SETITEMS values are kept (the opcode limit bounds them anyway)
# What any object SETITEMS fills past them holds: something unread. Shared, never extended (`_note_items`).
UNKEPT_ITEMS: list[tuple[Sym, Sym]] = [(Unknown(), Unknown())]


def _note_items(res: PickleResult, target: Obj, pairs: list[tuple[Sym, Sym]]) -> None:
    """Keep what SETITEMS put in an object (an OrderedDict), so a table of callables is read like a dict."""
    entry = res.object_items.get(id(target))
    if entry is None:
        # Past MAX_OBJECT_ITEMS objects, one is known to hold something unread, never nothing: a torch model's
        # submodule table holding `print` passed after a million OrderedDicts of one item each.
        full = len(res.object_items) >= MAX_OBJECT_ITEMS
        entry = res.object_items[id(target)] = (target, UNKEPT_ITEMS if full else [])
    if entry[1] is UNKEPT_ITEMS:
        return
    room = max(0, MAX_ITEMS - len(entry[1]))
    entry[1].extend(pairs[:room])
    if len(pairs) <= room:
        return
    past = res.object_items_past.get(id(target))
    if past is None:
        entry[1].append((Unknown(), Unknown()))  # past what is kept: judged as computed, but by the table checks
        past = res.object_items_past[id(target)] = PastKinds()
    for key, value in pairs[room:]:
        past.add(key, value)


# Helpers that give the object they make a state of their own, as BUILD would: (position of the state, position of
# the class, or the class they always make). torch sets it with __setstate__ or setattr (_set_obj_state).
STATE_SETTERS: dict[str, tuple[int, int | str]] = {
    "torch._tensor._rebuild_from_type_v2": (3, 1),
    "torch._utils._rebuild_parameter_with_state": (3, "torch.nn.parameter.Parameter"),
    # a namespace called with a mapping takes its items as attributes (Python 3.13 and later); real files call one
    # with no arguments and give it a state
    "types.SimpleNamespace": (0, "types.SimpleNamespace"),
    "ultralytics.utils.IterableSimpleNamespace": (0, "ultralytics.utils.IterableSimpleNamespace"),
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
        elif isinstance(item, Seq) and item.type in ("list", "tuple"):
            # pairs, which dict() and EasyDict() take as they take a dict's items (helper 223 gave EasyDict and a
            # Bunch's reconstructor an array interface so)
            pairs = [pair for pair in item.items if isinstance(pair, Seq) and len(pair.items) == 2 and not pair.dropped]
            _dunder_items(res, [part for pair in pairs for part in pair.items], made_class, at)
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
            res.formula_unclear.add(made)
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


def _dunder_items(res: PickleResult, pairs: list[Sym], owner: str, at: int, depth: int = 0) -> None:
    """Items named like a special method (`__deepcopy__`, `__array__`) set on an object, or in a torch module's
    submodule table: classes that answer attribute lookups from their items (torch's Module, scikit-learn's Bunch,
    EasyDict) hand them to code that looks such names up on the instance (copy, NumPy, scikit-learn). Judged as
    the object's own attributes (WS-PKL-026); writers never use such names. Every item of a dict whose items are
    its attributes (ATTRIBUTE_DICTS) is judged so: a review made an EasyDict's `transform` item a pipeline step's
    transform."""
    every = owner in ATTRIBUTE_DICTS or owner in ITEM_ATTRIBUTE_OWNERS
    for i in range(0, len(pairs) - 1, 2):
        key = _const(pairs[i])
        if isinstance(key, str) and (every or (key.startswith("__") and key.endswith("__"))):
            _member_event(res, key, pairs[i + 1], owner, at, via="items", depth=depth)


def _item_table(res: PickleResult, value: Sym, owner: str, at: int) -> None:
    """The `_mapping` a PyG storage's state gives it (ITEM_ATTRIBUTE_OWNERS): each item judged as an attribute of
    the storage. Real files keep a dict there; anything else (an object, something computed) hides which names it
    answers, and is reported unread."""
    mapping = _as_mapping(res, value)
    if mapping is not None:
        items = [*mapping.items, *(mapping.past_items() or [])]
        _dunder_items(res, [part for pair in items for part in pair], owner, at)
    elif not isinstance(value, Const):
        detail = f"a storage's items made by {describe(value)}"
        attrs: dict[str, str | int | bool] = {"detail": detail, "callable": owner}
        res.events.append(Event("pickle.unread_attribute_names", at, attrs))


def _nested_items(res: PickleResult, value: Sym, at: int, depth: int) -> None:
    """The items of the dicts an EasyDict's value holds (itself, or in lists and tuples), which EasyDict makes
    EasyDicts of their own: each is an attribute of a nested one (`copy.deepcopy(config)` reaches a nested
    `__deepcopy__` item). Past MAX_NESTED_DICTS levels, what is deeper is reported unread."""
    if not isinstance(value, Dict | Seq):
        return
    if depth >= MAX_NESTED_DICTS:
        attrs: dict[str, str | int | bool] = {"detail": f"EasyDicts nested past {MAX_NESTED_DICTS} levels",
                                              "callable": EASYDICT}  # fmt: skip
        res.events.append(Event("pickle.unread_attribute_names", at, attrs))
    elif isinstance(value, Dict):
        items = [*value.items, *(value.past_items() or [])]
        _dunder_items(res, [part for pair in items for part in pair], EASYDICT, at, depth + 1)
    elif value.type in ("list", "tuple"):
        for item in value.items:
            _nested_items(res, item, at, depth + 1)


def _class_table(res: PickleResult, name: str, table: Sym, restored: str, at: int) -> None:
    """Each entry dict.update(table) would merge, as `key=value` for the rules: a mapping's items, or the pairs a list,
    tuple or set holds (a set's two items either way round). What cannot be read is one computed entry."""
    pairs: list[tuple[Sym, Sym]] = []
    if isinstance(table, Seq):
        for pair in table.items:
            if isinstance(pair, Seq) and len(pair.items) == 2 and not pair.dropped:
                pairs.append((pair.items[0], pair.items[1]))
                if pair.type in ("set", "frozenset"):
                    pairs.append((pair.items[1], pair.items[0]))
            else:
                pairs.append((Unknown(), Unknown()))
        if table.dropped:
            pairs.append((Unknown(), Unknown()))
    else:
        flat = _table_values(res, table, keys=True)
        pairs = list(zip(flat[0::2], flat[1::2], strict=False))
        if len(flat) % 2:
            pairs.append((Unknown(), Unknown()))
    for key, value in pairs:
        text = _const(key)
        shown = repr(text[:200]) if isinstance(text, str) else "<computed>"
        made = f"name:{value.dotted}" if isinstance(value, Global) else describe(value)
        attrs: dict[str, str | int | bool] = {"name": name, "callable": restored, "key": shown,
                                              "value": describe(value), "entry": f"{name}:{shown}={made}"}  # fmt: skip
        res.events.append(Event("pickle.table_entry", at, attrs))


def _table_values(res: PickleResult, table: Sym, keys: bool = False) -> list[Sym]:
    """The values of a dict, or of an object SETITEMS filled (their keys too with `keys`: what iterating it gives),
    or the items of a list or tuple; a table made any other way, as one computed value."""
    if isinstance(table, Dict):
        past = table.past_items()  # past what a dict keeps, one item of each kind
        pairs = [*table.items, *past] if past else table.items
        computed = [Unknown()] if past is None else []
    elif isinstance(table, Seq):
        return [*table.items, *([Unknown()] if table.dropped else [])]
    elif isinstance(table, Obj):
        filled = _filled_items(res, table)
        overflow = res.object_items_past.get(id(table))
        kinds = overflow.items() if overflow is not None else None
        if filled is None:  # made from arguments: what they hold, with whatever SETITEMS added
            entry = res.object_items.get(id(table))
            pairs, computed = (entry[1] if entry is not None else []), [Unknown()]
        elif kinds is not None:  # an OrderedDict (torch before 2.0) past what is kept: one item of each kind
            pairs, computed = [*filled[:-1], *kinds], []
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
    restored, handed = restored_class(target), handed_classes(target)
    own = res.object_items.get(id(target)) if state is target else None
    if own is not None and own[0] is target:
        # The object as its own state (statsmodels' Bunch, a dict that is its own __dict__): BUILD copies the items
        # SETITEMS gave it so far into its attributes, as from a dict state.
        _keep_state(res, Dict(items=list(own[1])), at, restored, handed)
        return
    pairs = _pairs(state)
    if pairs is not None:  # __dict__.update(state), as torch's Module.__setstate__ does, takes (name, value) pairs
        _keep_state(res, pairs, at, restored, handed)
        return
    hidden_names = isinstance(state, Seq) and _hides_pairs(state)
    if hidden_names:
        _unread_state(res, restored, handed, at)
        if _class_like(restored):
            hidden = {"detail": "(name, value) pairs, some computed or past what wscan keeps", "callable": restored}
            res.events.append(Event("pickle.unread_attribute_names", at, dict[str, str | int | bool](hidden)))
            return
    pair = isinstance(state, Seq) and state.type == "tuple" and len(state.items) == 2
    mapping, slots = (state.items[0], state.items[1]) if pair and isinstance(state, Seq) else (state, None)
    if isinstance(mapping, Obj | Unknown | Global) and not hidden_names:  # names a call's result (or a named
        # object, which may be a dict) gives: any may be code
        _unread_state(res, restored, handed, at)
    if isinstance(state, Obj | Unknown):  # computed: a tuple or any tuple subclass of two makes such a pair
        _slot_state(res, restored, state, at)
    elif slots is not None:
        _slot_state(res, restored, slots, at)
    if isinstance(mapping, Dict):
        _keep_state(res, mapping, at, restored, handed)
    elif pair and isinstance(mapping, Obj | Unknown) and _class_like(restored):
        # The objects Cython and NumPy helpers return take such pairs in their own __setstate__.
        attrs: dict[str, str | int | bool] = {"detail": f"names from what {describe(mapping)} returns",
                                              "callable": restored}  # fmt: skip
        res.events.append(Event("pickle.unread_attribute_names", at, attrs))


def _keep_state(res: PickleResult, mapping: Dict, at: int, restored: str, handed: tuple[str, ...] = ()) -> None:
    """A dict state, judged once the stream ends (`check_states`), up to MAX_STATES of them. BUILD copies the items
    into the instance as they are then: a SETITEMS on the same dict later changes what the stream's end shows, not
    the object (review 21 renamed an EnsembleLda's module so), so the items are kept as they were too."""
    if len(res.states) < MAX_STATES:
        copied = Dict(items=list(mapping.items), dropped=mapping.dropped)
        res.states.append((mapping, at, restored, copied, handed))
        res.state_copies.setdefault(id(mapping), []).append(copied)
    else:  # the rest are not judged, which is a finding (review 33), once; nor is whether they ask for a formula
        res.formula_unclear.add(restored)
        if not res.states_more:
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


def _maybe_pair(item: Sym) -> bool:
    """A dict or set of two or more whose members' equality is unknown: it may iterate as a pair."""
    if isinstance(item, Dict) or (isinstance(item, Seq) and item.type in ("set", "frozenset")):
        return _members(item) is None and len(item.items) + item.dropped >= 2
    return False


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
    __slots__, under the slots' names: never a dunder name, whose setattr on even such a class changes what the
    object is (`__class__`, to any class of the same layout). `dunder` is also set where the names are not all
    known."""
    dunder = True
    if isinstance(slots, Dict) and (slots.items or slots.dropped):
        keys = ",".join(str(k.value)[:40] for k, _ in slots.items[:8] if isinstance(k, Const))
        dunder = bool(slots.dropped) or not all(
            isinstance(k, Const) and isinstance(k.value, str) and not _is_dunder(k.value) for k, _ in slots.items
        )
    elif isinstance(slots, Obj | Unknown) and _class_like(restored):
        # Computed: an object with .items() (dict(...), a Series) works as slot state. Only for what is named like
        # a class (a plain instance takes the default BUILD): the objects Cython and NumPy helpers return
        # (__pyx_unpickle_*, _reconstruct) have a __setstate__ of their own that takes such pairs.
        keys = f"what {describe(slots)} returns"
    else:
        return
    res.events.append(Event("pickle.slot_state", at, {"callable": restored, "keys": keys, "dunder": dunder}))


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _class_like(dotted: str) -> bool:
    """Named like a class (CamelCase): an instance pickle rebuilds with the default BUILD, unlike the objects
    Cython's and NumPy's helper functions (__pyx_unpickle_*, _reconstruct) return."""
    return dotted.rpartition(".")[2][:1].isupper()


# Classes whose __setstate__ moves a counter the whole process shares to the id in their state, and the largest id
# they can be given before their ids collide. torch's hook handles set next_id = max(next_id, id + 1): from an id a
# float cannot tell from id + 1 (inf, 1e300) on, every hook registered later gets the same id, and a hook
# registered after another silently replaces it (review 47).
SHARED_COUNTERS = {"torch.utils.hooks.RemovableHandle": 1}  # the index of the id in the state tuple
MAX_COUNTER_ID = 2**53  # any int is exact; past this a float id + 1 == id, and ids this large are never made


# A quantized layer's packed weights are TorchScript objects: torch pickles one as torch.ScriptObject.__new__() and a
# BUILD of (state, class name), and ScriptObject.__setstate__ makes an object of that registered class and runs the
# class's own __setstate__ with the state. These are the classes torch's quantized layers write; any other runs
# whatever TorchScript class the process has registered, and one never given a state is an empty object that crashes
# the process when used (review 50).
SCRIPT_OBJECT = "torch.ScriptObject"
SCRIPT_CLASSES = frozenset({
    "__torch__.torch.classes.quantized.LinearPackedParamsBase",
    "__torch__.torch.classes.quantized.Conv2dPackedParamsBase",
    "__torch__.torch.classes.quantized.Conv3dPackedParamsBase",
    "__torch__.torch.classes.quantized.EmbeddingPackedParamsBase",
    "__torch__.torch.classes.sparse.LinearPackedParamsBase",
    "__torch__.torch.classes.rnn.CellParamsBase",
})  # fmt: skip
MAX_SCRIPT_OBJECTS = 1_000_000  # tracked per stream (the opcode limit bounds them anyway); past it, fails closed


def check_script_objects(res: PickleResult) -> None:
    """Each torch.ScriptObject the stream made, as the stream's end leaves it: given the state torch writes, once."""
    for at, made in res.script_objects:
        detail = forged_script_object(made.state)
        if detail is not None:
            res.events.append(Event("pickle.script_object", at, {"callable": SCRIPT_OBJECT, "detail": detail}))


def note_script_object(res: PickleResult, made: Sym, at: int) -> None:
    if not (isinstance(made, Obj) and restored_class(made) == SCRIPT_OBJECT):
        return
    if len(res.script_objects) < MAX_SCRIPT_OBJECTS:
        res.script_objects.append((at, made))
    elif len(res.script_objects) == MAX_SCRIPT_OBJECTS:
        detail = f"more than {MAX_SCRIPT_OBJECTS:,} TorchScript objects, past what wscan checks"
        res.events.append(Event("pickle.script_object", at, {"callable": SCRIPT_OBJECT, "detail": detail}))
        res.script_objects.append((at, made))  # counted once past the limit: the event above is not repeated


def forged_script_object(state: Sym | None) -> str | None:
    """Why a torch.ScriptObject's state is not one torch writes, or None."""
    if state is None:
        return "an empty TorchScript object, never given a state (using it crashes the process)"
    if not (isinstance(state, Seq) and state.type == "tuple" and not state.dropped and len(state.items) == 2):
        return f"a state torch never writes ({describe(state)[:60]})"
    name = _const(state.items[1])
    if not isinstance(name, str) or name not in SCRIPT_CLASSES:
        return f"the TorchScript class {describe(state.items[1])[:80]}, which torch's quantized layers never write"
    return _viewed_weight(state.items[0], 0)


# The class's __setstate__ repacks its weights into a new contiguous copy: one stored byte viewed as 40,000 x 40,000
# with strides (0, 0) took 30 s and 3.3 GB to load (review 52). torch writes the weights it unpacked, contiguous.
TENSOR_REBUILDS = frozenset({"torch._utils._rebuild_qtensor", "torch._utils._rebuild_tensor_v2",
                             "torch._utils._rebuild_tensor"})  # fmt: skip
MAX_VIEW_DEPTH = 6
MAX_VIEW_GROWTH = 16  # elements a view may have per element its strides reach (plus a small allowance)


def _viewed_weight(value: Sym, depth: int) -> str | None:
    """Why a tensor in a packed-parameter state would be copied out far larger than what it stores, or None."""
    if depth > MAX_VIEW_DEPTH:
        return "tensors nested past what wscan reads"
    if isinstance(value, Seq):
        return next((why for item in value.items if (why := _viewed_weight(item, depth + 1))), None)
    if not (isinstance(value, Obj) and isinstance(value.args, Seq)):
        return None
    if not (isinstance(value.func, Global) and value.func.dotted in TENSOR_REBUILDS):
        return _viewed_weight(value.args, depth + 1)  # a parameter wrapping its tensor
    items = value.args.items
    if isinstance(value.state, Seq) and len(value.state.items) == 4:
        # BUILD on the tensor: Tensor.__setstate__ runs set_(storage, offset, size, stride), a new view (review 53)
        items = value.state.items
    elif value.state is not None:
        return "a weight given a state after it was rebuilt, which torch never writes"
    sizes = const_ints(items[2]) if len(items) > 3 else None
    strides = const_ints(items[3]) if len(items) > 3 else None
    if sizes is None or strides is None or len(sizes) != len(strides):
        return "a weight whose shape or strides wscan cannot read"
    elements = math.prod(max(size, 0) for size in sizes)
    reach = 1 + sum((size - 1) * abs(stride) for size, stride in zip(sizes, strides, strict=True) if size > 0)
    if elements > MAX_VIEW_GROWTH * reach + 4096:
        return f"a weight of {elements:,} elements viewed over {reach:,} stored ones, which the class copies out"
    return None


def forged_counter(target: Obj, state: Sym) -> str | None:
    """Why BUILD's state gives a class in SHARED_COUNTERS an id that breaks its process-wide counter, or None. torch
    writes (hooks dict or None, id, extra dicts or None) with the int id the handle was made with."""
    index = SHARED_COUNTERS.get(restored_class(target))
    if index is None:
        return None
    if not isinstance(state, Seq) or state.dropped or len(state.items) <= index:
        return f"a state torch never writes ({describe(state)[:60]})"
    value = _const_int(state.items[index])
    if value is None:
        return f"an id that is not an integer ({describe(state.items[index])[:60]})"
    if not 0 <= value < MAX_COUNTER_ID:
        return f"an id of {'more than 2^53' if value > 0 else 'below zero'}"
    return None

