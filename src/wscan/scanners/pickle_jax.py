"""JAX arrays in a pickle, judged as JAX writes them.

A jax.Array pickles as `jax._src.array._reconstruct_array(fun, args, arr_state, aval_state)` (`ArrayImpl.__reduce__`),
which calls `fun(*args)`, gives the result `arr_state` through its __setstate__ (no BUILD opcode: the pickle machine
never sees that state) and updates the array's abstract value with `aval_state`. JAX writes NumPy's `_reconstruct` as
`fun` and `{'weak_type': <bool>}` as `aval_state`. Anything else would set a state no check judged on whatever `fun`
made, or give the array an abstract value (a shape, a dtype) its buffer does not have. `fun` itself is judged as
called by the allowlist (the machine's FORWARDERS).
"""

from __future__ import annotations

from wscan.scanners.pickle_values import _ARRAY_REBUILDERS, Dict, Global, Obj, Seq, Sym, _const, describe

RECONSTRUCT_ARRAY = "jax._src.array._reconstruct_array"
FROZEN_DICT = "flax.core.frozen_dict.FrozenDict"
MAPPING_MAKERS = frozenset({"builtins.dict", "__builtin__.dict", "collections.OrderedDict", "collections.defaultdict",
                            "collections.Counter"})  # fmt: skip
ObjectItems = dict[int, tuple[Obj, list[tuple[Sym, Sym]]]]


def forged_jax_array(func: Global, args: Sym) -> str | None:
    """Why `_reconstruct_array(*args)` is not what JAX writes, or None (also for any other function)."""
    if func.dotted != RECONSTRUCT_ARRAY:
        return None
    items = args.items if isinstance(args, Seq) and not args.dropped else None
    if items is None or len(items) != 4:
        return "arguments JAX never writes"
    fun, _, _, aval = items
    if not (isinstance(fun, Global) and fun.dotted in _ARRAY_REBUILDERS):
        return f"{describe(fun)} where JAX writes NumPy's _reconstruct"
    pairs = aval.items if isinstance(aval, Dict) and not aval.dropped else []
    if len(pairs) != 1 or _const(pairs[0][0]) != "weak_type" or not isinstance(_const(pairs[0][1]), bool):
        return "an abstract value JAX never writes (it writes weak_type alone)"
    return None


def shared_frozen_dicts(func: Global, args: Sym, object_items: ObjectItems) -> str | None:
    """Why making a FrozenDict from `args` copies more dicts than the file holds, or None. Flax's `_prepare_freeze`
    copies every dict (dict subclasses too: OrderedDict, defaultdict) it reaches in its argument, once per path: dicts
    the memo shares down D levels are 2^D copies (review 60: 317 bytes took 3.2 GiB and 41 s; review 63 the same with
    OrderedDicts). Flax writes a FrozenDict's own dict, in which nothing is shared. `object_items`: the items SETITEMS
    put in objects, by id."""
    if func.dotted != FROZEN_DICT or not isinstance(args, Seq):
        return None
    seen: set[int] = set()
    stack = [item for item in args.items if _is_mapping(item, object_items)]
    while stack:
        mapping = stack.pop()
        if id(mapping) in seen:
            return "a dict reached twice in its argument, which Flax copies once for each path to it"
        seen.add(id(mapping))
        stack.extend(value for value in _values(mapping, object_items) if _is_mapping(value, object_items))
    return None


def _is_mapping(value: Sym, object_items: ObjectItems) -> bool:
    """A dict, or what may be a dict subclass: made by a dict maker, filled by SETITEMS (any class: SciPy's
    OptimizeResult, review 64), or rebuilt by copyreg from dict."""
    if isinstance(value, Dict):
        return True
    if not (isinstance(value, Obj) and isinstance(value.func, Global)):
        return False
    if value.func.dotted in MAPPING_MAKERS or id(value) in object_items:
        return True
    args = value.args.items if isinstance(value.args, Seq) else []
    return value.func.dotted == "copyreg._reconstructor" and len(args) > 1 and isinstance(args[1], Global) and (
        args[1].dotted in MAPPING_MAKERS
    )


def _values(mapping: Sym, object_items: ObjectItems) -> list[Sym]:
    """A mapping's values: a dict's, or a dict subclass's set by SETITEMS or given as its argument (pairs, a dict)."""
    if isinstance(mapping, Dict):
        return [value for _, value in mapping.items]
    if not isinstance(mapping, Obj):
        return []
    values = [value for _, value in object_items.get(id(mapping), (mapping, []))[1]]
    for arg in mapping.args.items if isinstance(mapping.args, Seq) else []:
        if isinstance(arg, Dict):
            values += [value for _, value in arg.items]
        elif isinstance(arg, Seq):
            values += [pair.items[1] for pair in arg.items if isinstance(pair, Seq) and len(pair.items) == 2]
    return values
