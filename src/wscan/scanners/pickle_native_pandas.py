"""A pickled DataFrame's block layout, checked before pandas' compiled code writes by it.

Why: pandas keeps a DataFrame's columns in blocks, each with the column positions it holds (its placement), and
rebuilds a position -> block table from them in compiled code that checks no bounds: a placement past the columns, or
negative, writes outside the table. A DataFrame whose BlockManager is pickled as pandas 1 wrote it (a state whose
"0.14.1" dict lists the blocks) is rebuilt while the pickle loads; one pickled as pandas 2 and 3 write it (the manager
called with its blocks and axes) at the first column it hands out. Both crashed the process (tests/test_pandas_blocks).
A placement is a slice or an integer array; the placements of a manager's blocks must cover its columns once each.
"""

from __future__ import annotations

import numpy as np

from wscan.scanners.pickle_arrays import ArrayReader, Unread
from wscan.scanners.pickle_native_common import Invalid
from wscan.scanners.pickle_values import Const, Dict, Global, Obj, Seq, Sym

BLOCK_MANAGERS = frozenset({"pandas.core.internals.managers.BlockManager"})
UNPICKLE_BLOCK = "pandas._libs.internals._unpickle_block"
NEW_INDEX = "pandas.core.indexes.base._new_Index"
MAX_COLUMNS = 10_000_000  # columns checked one by one; a frame with more is unread


def block_manager(target: Obj, arrays: ArrayReader) -> None:
    """Raise Invalid if the manager's blocks would make pandas write outside its table, Unread if wscan cannot tell.

    Made by a call (pandas 2 and 3), the manager checks that its blocks hold as many columns as its first axis has,
    unless told not to; restored from a state (pandas 1), it checks nothing, so the axis is read too."""
    if target.state is not None:
        legacy = _legacy_state(target.state)
        if legacy is not None:  # anything else makes pandas raise NotImplementedError
            axes, blocks = legacy
            placements = [_dict_get(block, "mgr_locs") for block in blocks.items]
            _cover(placements, _axis_length(axes.items[0] if axes.items else None, arrays), arrays)
    if not target.instance and isinstance(target.args, Seq) and target.args.items:
        args = target.args.items
        blocks_sym = args[0]
        if not isinstance(blocks_sym, Seq) or blocks_sym.dropped:
            raise Unread("blocks the stream computes")
        placements = [_block_placement(block) for block in blocks_sym.items]
        verified = len(args) < 3 or not (isinstance(args[2], Const) and not args[2].value)
        if verified:  # pandas compares the columns the blocks hold with the axis: they must be positions 0 to n-1
            _cover(placements, None, arrays)
        else:
            given = args[1] if len(args) > 1 else None
            first = given.items[0] if isinstance(given, Seq) and given.items else None
            _cover(placements, _axis_length(first, arrays), arrays)


def _legacy_state(state: Sym) -> tuple[Seq, Seq] | None:
    """(axes, blocks) of a pandas 1 state: a tuple whose fourth item maps "0.14.1" to them."""
    if not (isinstance(state, Seq) and state.type == "tuple" and len(state.items) >= 4):
        return None
    extra = state.items[3]
    if not isinstance(extra, Dict):
        raise Unread("a state the stream computes")
    inner = extra.get("0.14.1")
    if inner is None:
        return None
    axes, blocks = _dict_get(inner, "axes"), _dict_get(inner, "blocks")
    if not (isinstance(axes, Seq) and isinstance(blocks, Seq)) or axes.dropped or blocks.dropped:
        raise Unread("axes or blocks the stream computes")
    return axes, blocks


def _dict_get(value: Sym | None, key: str) -> Sym:
    if not isinstance(value, Dict) or value.dropped:
        raise Unread(f"a block or state without a readable {key}")
    found = value.get(key)
    if found is None:
        raise Unread(f"no {key}")
    return found


def _block_placement(block: Sym) -> Sym:
    if isinstance(block, Obj) and isinstance(block.func, Global) and block.func.dotted == UNPICKLE_BLOCK:
        args = block.args
        if isinstance(args, Seq) and len(args.items) >= 2:
            return args.items[1]
    raise Unread("a block not made by _unpickle_block")


def _positions(placement: Sym, arrays: ArrayReader) -> range | np.ndarray:
    """The column positions a placement names: a slice as pandas reads one, an integer, a list or an array of them."""
    if isinstance(placement, Const) and isinstance(placement.value, int) and not isinstance(placement.value, bool):
        return range(placement.value, placement.value + 1)
    if isinstance(placement, Obj) and isinstance(placement.func, Global) and placement.func.dotted == "builtins.slice":
        parts = placement.args.items if isinstance(placement.args, Seq) else []
        bounds = [_bound(part) for part in parts]
        if len(bounds) == 1:
            bounds = [None, bounds[0], None]
        if len(bounds) != 3:
            raise Unread("a slice the stream computes")
        start, stop, step = bounds
        step = 1 if step is None else step
        if step == 0 or (step > 0 and stop is None) or (step < 0 and start is None):
            raise Invalid("an unbounded slice as a block's columns")
        start = 0 if start is None else start
        stop = -1 if stop is None else stop
        if start < 0 or stop < (0 if step > 0 else -1):
            raise Invalid(f"a block's columns at negative positions ({start}:{stop}:{step})")
        return range(start, stop, step)
    if isinstance(placement, Seq):
        if placement.dropped or not all(isinstance(item, Const) for item in placement.items):
            raise Unread("columns the stream computes")
        return np.asarray([item.value for item in placement.items if isinstance(item, Const)], dtype=object)
    values = arrays.values(placement)
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise Invalid(f"a block's columns as a {values.ndim}-D {values.dtype} array, not integers")
    return values


def _bound(part: Sym) -> int | None:
    """A slice's bound: an integer or None (a computed one is unread)."""
    if isinstance(part, Const) and (part.value is None or type(part.value) is int):
        return part.value
    raise Unread("a slice the stream computes")


def _cover(placements: list[Sym], length: int | None, arrays: ArrayReader) -> None:
    """The blocks' positions must be 0 to n-1, each once (n the axis length, or how many they name)."""
    found = [_positions(placement, arrays) for placement in placements]
    total = sum(len(positions) for positions in found)
    columns = total if length is None else length
    if columns > MAX_COLUMNS or total > MAX_COLUMNS:
        raise Unread(f"more than {MAX_COLUMNS:,} columns")
    seen = np.zeros(columns, dtype=bool)
    for positions in found:
        if isinstance(positions, range):
            if len(positions) and (min(positions[0], positions[-1]) < 0 or max(positions[0], positions[-1]) >= columns):
                raise Invalid(f"a block's columns {positions.start}:{positions.stop}:{positions.step} outside 0 to "
                              f"{columns - 1}")  # fmt: skip
            taken = seen[positions.start : positions.stop : positions.step] if len(positions) else seen[:0]
            if taken.any():
                raise Invalid("a column held by two blocks")
            seen[positions.start : positions.stop : positions.step] = True
            continue
        for value in positions.tolist():
            if not isinstance(value, int) or isinstance(value, bool):
                raise Invalid("a block's column given as no integer")
            if not 0 <= value < columns:
                raise Invalid(f"a block's column at position {value}, outside 0 to {columns - 1}")
            if seen[value]:
                raise Invalid("a column held by two blocks")
            seen[value] = True
    if not seen.all():
        raise Invalid(f"blocks that hold {int(seen.sum())} of the {columns} columns")


def _axis_length(index: Sym | None, arrays: ArrayReader) -> int:
    """How many labels an index pickled by pandas has: its data's, a range's, or a MultiIndex's codes'."""
    if not (isinstance(index, Obj) and isinstance(index.func, Global) and index.func.dotted == NEW_INDEX):
        raise Unread("an axis not pickled as pandas pickles an index")
    args = index.args.items if isinstance(index.args, Seq) else []
    fields = args[1] if len(args) > 1 else None
    if not isinstance(fields, Dict) or fields.dropped:
        raise Unread("an axis whose fields the stream computes")
    data = fields.get("data")
    if data is not None:
        shape = arrays.shape(data)
        if len(shape) != 1:
            raise Invalid(f"an axis of {len(shape)} dimensions")
        return shape[0]
    ends = [fields.get(name) for name in ("start", "stop", "step")]
    numbers = [end.value for end in ends if isinstance(end, Const) and type(end.value) is int]
    if len(numbers) == 3:
        start, stop, step = (int(number) for number in numbers)
        if step == 0:
            raise Invalid("a range axis of step 0")
        return len(range(start, stop, step))
    codes = fields.get("codes")
    if isinstance(codes, Seq) and codes.items and not codes.dropped:
        shape = arrays.shape(codes.items[0])
        if len(shape) == 1:
            return shape[0]
    raise Unread("an axis wscan cannot measure")
