"""A CatBoost model's bytes (`save_model`'s `.cbm`, a pickled model's `__model`), checked for the indices its
compiled loader and predictor follow without bounds checks.

Why: CatBoost's loader (`TFullModel::Load`) verifies the flatbuffer of the model's core, then trusts every number
in it: a tree's split is an index into the model's binary features, its size a shift, its leaves an offset into
the leaf values, a categorical counter table's buckets indices into its counts. The counter tables, stored after
the core, are not verified at all ("TODO: add length validation"): CatBoost follows their offsets as they are.
One of 60 random byte changes of a real model crashed catboost 1.2.10 (2026-12-06). This module reads the core
and the counter tables with a bounded flatbuffer reader of its own (the `flatbuffers` package reads without
checking either) and checks what the loader and predictor index by; a part it does not read (text and embedding
processing) is reported as unverified.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Iterator
from functools import partial

import numpy as np

from wscan.scanners.booster_common import Malformed

MAGIC = b"CBM1"
CORE_FORMAT = b"FlabuffersModel_v1"
COUNTER_TABLES = b"static_provider_v1"  # the only model part wscan reads
MAX_OUTPUTS = 65_536  # ApproxDimension: CatBoost sizes a bias and each row's result by it
# CatBoost shifts an int by a symmetric tree's depth, and trains 16 at most: review 93's depth of 20 made SHAP values
# and plot_tree run for minutes (a 16 MB file).
MAX_OBLIVIOUS_DEPTH = 16
MAX_JSON_DEPTH = 256  # metadata nesting (CatBoost's own is a few levels; its reader crashed at 200,000)
CLASS_METADATA = (b"class_params", b"multiclass_params")  # JSON CatBoost takes a count of class labels from
MAX_FEATURE_INDEX = 2**22  # a feature's column: predict sizes each row's features by the largest
EMPTY_BUCKET = 0xFFFFFFFFFFFFFFFF  # a counter table's unused hash bucket
BUCKET = struct.Struct("<QI")  # a counter table's bucket: hash, index into its counts (packed, 12 bytes)
# CtrType: 0 Borders, 1 Buckets, 2 BinarizedTargetMeanValue, 3 FloatTargetMeanValue, 4 Counter, 5 FeatureFreq
BORDERS, BUCKETS, MEANS, COUNTS = 0, 1, (2, 3), (4, 5)


def check(blob: bytes, tick: Callable[[], None] = lambda: None) -> None:
    """Raise Malformed for the first number in the model `blob` that leads CatBoost out of bounds, or for a part of
    it wscan does not read."""
    stream = _Stream(blob)
    if stream.take(4) != MAGIC:
        raise Malformed("no CBM1 model descriptor")
    core = _root(stream.take(stream.size()))
    if core.string(0) != CORE_FORMAT:
        raise Malformed("a core format CatBoost does not read")
    parts = [part for part in core.strings(3)]
    trees = core.table(1)
    _metadata(core, trees.scalar(0, "<i", 0) if trees is not None else 0, tick)
    counters = _trees(trees, tick) if trees is not None else {}
    for part in parts:
        if part != COUNTER_TABLES:
            name = part[:40].rstrip(b"\0").decode("utf-8", "replace")  # CatBoost's text part names end in a NUL
            raise Malformed(f"a model part wscan does not read ({name})")
    if parts.count(COUNTER_TABLES) > 1:
        raise Malformed("the counter tables given twice")
    if parts:
        _counter_tables(stream, counters, tick)
    elif counters:  # predict computes the counters through tables the model does not have (a crash)
        raise Malformed("counter features without counter tables (as final_ctr_computation_mode='Skip' writes them: "
                        "CatBoost's own predict crashes on such a model)")


def _metadata(core: _Table, dimension: int, tick: Callable[[], None]) -> None:
    """The model's metadata (InfoMap): CatBoost parses the JSON it keeps with a recursive reader (review 91: 200,000
    nested brackets in `params` or `class_params` crashed load or predict) and makes a class label per
    `classes_count` (800,000,000 took over 5 GB), and indexes by each class's `class_to_label` entry (review 93: 10**8
    crashed predict; CatBoost writes 0, 1, 2, ...). Every JSON-like value is held to a nesting depth; the class
    parameters must be JSON, with a class count within the outputs wscan allows and class indices within the
    model's classes."""
    for pair in core.tables(2):
        tick()
        key, value = pair.string(0) or b"", pair.string(1) or b""
        if value.lstrip()[:1] not in (b"{", b"["):
            continue
        depth = _nesting(value)
        if depth > MAX_JSON_DEPTH:
            raise Malformed(f"metadata nested {depth:,} levels deep (CatBoost's JSON reader recurses per level)")
        if key in CLASS_METADATA:
            try:
                json.loads(value, object_pairs_hook=partial(_class_params, max(2, dimension)))
            except (ValueError, RecursionError) as exc:
                raise Malformed(f"{key.decode()} metadata wscan cannot read as JSON ({str(exc)[:80]})") from None


def _nesting(text: bytes) -> int:
    """How deep brackets nest in a JSON text, strings left out."""
    bare = re.sub(rb'"(?:[^"\\]|\\.)*"', b"", text)
    codes = np.frombuffer(bare, dtype=np.uint8)
    steps = np.isin(codes, (91, 123)).astype(np.int64) - np.isin(codes, (93, 125))
    return int(np.cumsum(steps).max(initial=0))


def _class_params(classes: int, pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object of the class parameters, its `classes_count` and `class_to_label` (every one given) checked."""
    for name, value in pairs:
        if name == "classes_count" and not (isinstance(value, int) and 0 <= value <= MAX_OUTPUTS):
            raise Malformed(f"a classes_count of {str(value)[:20]} (CatBoost makes a class label for each)")
        if name == "class_to_label":
            indices = value if isinstance(value, list) else [value]
            bad = next((v for v in indices if type(v) is not int or not 0 <= v < classes), None)
            if bad is not None or len(indices) > classes:
                raise Malformed(f"a class_to_label entry of {str(bad)[:20]} for {classes} classes")
    return dict(pairs)


def _trees(trees: _Table, tick: Callable[[], None]) -> dict[bytes, int]:
    """TModelTrees: the features, the binary features they make, the trees over them and their leaves; each
    counter's base (`_base`) and the largest target class read through it, for the counter tables."""
    dimension = trees.scalar(0, "<i", 0)
    if not 1 <= dimension <= MAX_OUTPUTS:
        raise Malformed(f"an ApproxDimension of {dimension}")
    splits = trees.array(1, "<i4")
    sizes = trees.array(2, "<i4")
    starts = trees.array(3, "<i4")
    leaves = trees.array(8, "<f8")
    weights = trees.array(9, "<f8")
    steps = np.frombuffer(trees.raw(10, 4) or b"", dtype="<u2").reshape(-1, 2)  # (left, right) steps
    leaf_ids = trees.array(11, "<u4")
    bias = trees.array(16, "<f8")
    if len(bias) not in (0, dimension):
        raise Malformed(f"{len(bias)} biases for {dimension} outputs")
    if any(next(trees.tables(slot), None) is not None for slot in (12, 13, 18)):
        # their processing (a model part of another format) is not read; without it, feature importances crashed
        # catboost (review 94)
        raise Malformed("text or embedding features, whose processing wscan does not read")
    binary = _features(trees, tick)
    if len(sizes) != len(starts):
        raise Malformed(f"{len(sizes)} tree sizes and {len(starts)} start offsets")
    if len(leaves) % dimension:
        raise Malformed(f"{len(leaves)} leaf values for {dimension} outputs")
    if len(weights) not in (0, len(leaves) // dimension):
        raise Malformed(f"{len(weights)} leaf weights for {len(leaves) // dimension} leaves")
    if len(steps):
        _asymmetric(splits, sizes, starts, steps, leaf_ids, len(leaves), dimension, binary)
    else:
        _oblivious(splits, sizes, starts, len(leaves), dimension, binary)
    counters: dict[bytes, int] = {}
    for ctr_feature in trees.tables(7):
        tick()
        ctr = ctr_feature.table(0)
        base = ctr.table(0) if ctr is not None else None
        if ctr is None or base is None:
            raise Malformed("a counter feature without its counter")
        key, target = _base(base), ctr.scalar(1, "<i", 0)
        if target < 0:  # predict reads the counts from this class on (review 91: -2**31+1 read 8 GB before them)
            raise Malformed(f"a counter of class {target}")
        counters[key] = max(counters.get(key, 0), target)
    return counters


def _oblivious(splits: np.ndarray, sizes: np.ndarray, starts: np.ndarray, leaves: int, dimension: int,
               binary: int) -> None:  # fmt: skip
    """Symmetric trees: each a run of `size` splits from its start, and 2**size leaves of `dimension` values."""
    if len(sizes) and (sizes.min() < 0 or sizes.max() > MAX_OBLIVIOUS_DEPTH):
        raise Malformed(f"a symmetric tree of depth {int(sizes.min() if sizes.min() < 0 else sizes.max())}")
    ends = np.cumsum(sizes, dtype=np.int64)
    if len(sizes) and (starts[0] != 0 or (starts[1:] != ends[:-1]).any()):
        raise Malformed("trees whose start offsets do not follow their sizes")
    if int(ends[-1] if len(ends) else 0) != len(splits):
        raise Malformed(f"{len(splits)} splits for trees of {int(ends[-1] if len(ends) else 0)}")
    wanted = int((np.left_shift(np.int64(1), sizes.astype(np.int64))).sum()) * dimension
    if wanted != leaves:
        raise Malformed(f"{leaves} leaf values for trees of {wanted}")
    _split_indices(splits, binary)


def _asymmetric(splits: np.ndarray, sizes: np.ndarray, starts: np.ndarray, steps: np.ndarray, leaf_ids: np.ndarray,
                leaves: int, dimension: int, binary: int) -> None:  # fmt: skip
    """Depthwise and Lossguide trees: nodes whose steps to their children stay in their tree, and whose leaf values
    (where a step is 0) lie inside the leaf values, a tree's leaves one block after another's."""
    nodes = len(splits)
    if len(steps) != nodes or len(leaf_ids) != nodes:
        raise Malformed(f"{nodes} splits, {len(steps)} steps, {len(leaf_ids)} leaf ids")
    ends = np.cumsum(sizes, dtype=np.int64)
    if len(sizes) and (sizes.min() < 1 or starts[0] != 0 or (starts[1:] != ends[:-1]).any()):
        raise Malformed("trees whose start offsets do not follow their sizes")
    if int(ends[-1] if len(ends) else 0) != nodes:
        raise Malformed(f"{nodes} nodes for trees of {int(ends[-1] if len(ends) else 0)}")
    tree_end = np.repeat(ends, sizes) if len(sizes) else np.zeros(0, np.int64)
    index = np.arange(nodes, dtype=np.int64)
    for side in (0, 1):
        step = steps[:, side].astype(np.int64)
        if ((step != 0) & (index + step >= tree_end)).any():
            raise Malformed("a node whose child lies outside its tree")
    # Every node but a tree's first is the child of exactly one node: review 93 made each node's two steps lead to the
    # next one, a chain of 2**55 paths on which SHAP values, plot_tree and model export never returned.
    targets = np.concatenate([(index + steps[:, side])[steps[:, side] != 0] for side in (0, 1)])
    parents = np.bincount(targets, minlength=nodes) if nodes else np.zeros(0, np.int64)
    first = np.zeros(nodes, dtype=bool)
    first[starts[starts < nodes] if len(starts) else []] = True
    if (parents[first] != 0).any() or (parents[~first] != 1).any():
        raise Malformed("an asymmetric tree whose nodes are not each the child of one node")
    valued = (steps[:, 0] == 0) | (steps[:, 1] == 0)
    ids = leaf_ids.astype(np.int64)
    if (valued & ((ids % dimension != 0) | (ids + dimension > leaves))).any():
        raise Malformed(f"a leaf past the {leaves} leaf values")
    previous = 0
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        mine = ids[start:end][valued[start:end]]
        if not len(mine):
            raise Malformed("a tree without a leaf")
        low, high = int(mine.min()), int(mine.max())
        if low < previous or high != low + (len(mine) - 1) * dimension:
            raise Malformed("a tree whose leaves are not one block after the previous tree's")
        previous = high + dimension
    _split_indices(splits, binary, asymmetric=True)


def _split_indices(splits: np.ndarray, binary: int, asymmetric: bool = False) -> None:
    """Each split (a leaf's too) an index into the model's binary features, which the loader looks up unchecked;
    asymmetric trees of no split at all mark every node 0."""
    if asymmetric and binary == 0 and not splits.any():
        return
    if len(splits) and (splits.min() < 0 or splits.max() >= binary):
        raise Malformed(f"a split on binary feature {int(splits.max())} of {binary}")


def _features(trees: _Table, tick: Callable[[], None]) -> int:
    """The model's features, each kind at increasing positions (predict sizes a row by the last one's), no two at
    one column; the number of binary features their borders, one-hot values and counter borders make."""
    columns = bytearray(MAX_FEATURE_INDEX)  # a flag per column taken
    binary = 0
    for slot, kind in ((5, "float"), (4, "categorical"), (12, "text"), (18, "embedding")):
        last = -1
        for feature in trees.tables(slot):
            tick()
            position, column = feature.scalar(1 if slot == 5 else 0, "<i", -1), feature.scalar(2 if slot == 5 else 1,
                                                                                                "<i", -1)
            if not last < position <= column < MAX_FEATURE_INDEX or columns[column]:
                raise Malformed(f"a {kind} feature at position {position}, column {column}")
            last = position
            columns[column] = 1
            if slot == 5:
                binary += len(feature.array(3, "<f4"))
                if feature.scalar(5, "<b", 0) not in (0, 1, 2):
                    raise Malformed("a NaN treatment CatBoost does not know")
    categorical = {feature.scalar(0, "<i", -1) for feature in trees.tables(4)}
    for one_hot in trees.tables(6):
        tick()
        if one_hot.scalar(0, "<i", -1) not in categorical:
            raise Malformed("a one-hot feature of no categorical feature")
        binary += len(one_hot.array(1, "<i4"))
    for slot in (13, 7):  # estimated features' borders, counters' borders
        for feature in trees.tables(slot):
            tick()
            binary += len(feature.array(3 if slot == 13 else 1, "<f4"))
    return binary


def _base(base: _Table) -> bytes:
    """A counter's base (TModelCtrBase: its type and feature combination), read whole as the loader reads it, as
    the key the loader finds its table by."""
    combination = base.table(0)
    if combination is None:
        raise Malformed("a counter without its feature combination")
    # CatBoost compares borders as floats: -0.0 is 0.0 (NaN matches nothing, and its lookup fails cleanly).
    splits = np.frombuffer(combination.raw(1, 8) or b"", dtype=[("index", "<i4"), ("border", "<f4")]).copy()
    splits["border"][splits["border"] == 0] = 0.0
    parts = [combination.raw(0, 4), splits.tobytes(), combination.raw(2, 8)]  # ints, (index, border) pairs,
    key = [struct.pack("<bi", base.scalar(1, "<b", 0), base.scalar(2, "<i", 0))]  # (index, value) pairs; its type
    # and, in newer models, which target binarization it counts by
    for part in parts:
        key += [struct.pack("<I", len(part or b"")), part or b""]
    return b"".join(key)


def _counter_tables(stream: _Stream, counters: dict[bytes, int], tick: Callable[[], None]) -> None:
    """The counter tables (TStaticCtrProvider): a count, then each table's flatbuffer, which the loader reads
    unverified, so every offset in it is checked here; each bucket's index must fall inside its counts."""
    count = stream.size()
    if count > stream.left() // 4:
        raise Malformed(f"{count} counter tables in {stream.left()} bytes")
    found: set[bytes] = set()
    for _ in range(count):
        tick()
        table = _root(stream.take(stream.size()))
        base = table.table(0)
        if base is None:
            raise Malformed("a counter table without its counter")
        key = _base(base)
        found.add(key)
        target = counters.get(key, 0)
        ctr_type = base.scalar(1, "<b", 0)
        classes = table.scalar(4, "<i", 0)
        buckets = table.raw(1)
        blob = table.raw(2)
        if buckets is None or blob is None:
            raise Malformed("a counter table without its buckets or counts")
        _buckets(buckets, _entries(ctr_type, classes, target, len(blob)))
    if set(counters) - found:
        raise Malformed("a counter feature without its counter table")


def _entries(ctr_type: int, classes: int, target: int, blob: int) -> int:
    """How many buckets of counts a counter table's blob holds, as predict reads it for the counter's type."""
    if ctr_type in MEANS:
        return blob // 8  # (sum, count)
    if ctr_type in COUNTS:
        return blob // 4
    if ctr_type not in (BORDERS, BUCKETS):
        raise Malformed(f"a counter of type {ctr_type}")
    if ctr_type == BUCKETS and not 0 <= target < classes:
        raise Malformed(f"a counter of class {target} in a table of {classes}")
    if ctr_type == BORDERS and classes > 2 and not 0 <= target < classes - 1:
        raise Malformed(f"a counter of class {target} in a table of {classes}")
    width = classes if ctr_type == BUCKETS or classes > 2 else 2
    return blob // (4 * width) if width > 0 else 0


def _buckets(raw: bytes, entries: int) -> None:
    """A power-of-two hash table with an empty bucket (the lookup probes until one) whose used buckets point inside
    the counts."""
    if len(raw) % BUCKET.size:
        raise Malformed("a counter hash table of partial buckets")
    count = len(raw) // BUCKET.size
    if count & (count - 1) or count == 0:
        raise Malformed(f"a counter hash table of {count} buckets")
    table = np.frombuffer(raw, dtype=np.dtype([("hash", "<u8"), ("index", "<u4")]))
    used = table["hash"] != EMPTY_BUCKET
    if used.all():
        raise Malformed("a counter hash table without an empty bucket (a lookup of a new value never ends)")
    if (table["index"][used] >= entries).any():
        raise Malformed(f"a counter bucket past the table's {entries} counts")


class _Stream:
    """The model's bytes as the loader reads them in turn: ui32 sizes (0xFFFFFFFF then a ui64), blocks."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob
        self.at = 0

    def left(self) -> int:
        return len(self.blob) - self.at

    def take(self, count: int) -> bytes:
        if count > self.left():
            raise Malformed(f"a block of {count} bytes past the model's end")
        self.at += count
        return self.blob[self.at - count : self.at]

    def size(self) -> int:
        (size,) = struct.unpack("<I", self.take(4))
        if size == 0xFFFFFFFF:
            (size,) = struct.unpack("<Q", self.take(8))
        return int(size)


def _root(buf: bytes) -> _Table:
    return _Table(buf, _Table.offset(buf, 0))


class _Table:
    """A flatbuffer table, every offset checked against the buffer before it is followed."""

    def __init__(self, buf: bytes, at: int) -> None:
        self.buf = buf
        self.at = at
        vtable = at - _unpack(buf, "<i", at)
        self.vtable = vtable
        vsize, self.size = _unpack(buf, "<H", vtable), _unpack(buf, "<H", vtable + 2)
        if vsize < 4 or vsize % 2 or vtable + vsize > len(buf) or at + self.size > len(buf):
            raise Malformed("a flatbuffer table out of bounds")
        self.slots = (vsize - 4) // 2

    @staticmethod
    def offset(buf: bytes, at: int) -> int:
        """Where the uoffset at `at` points."""
        target = at + _unpack(buf, "<I", at)
        if target >= len(buf):
            raise Malformed("a flatbuffer offset out of bounds")
        return target

    def _field(self, slot: int) -> int | None:
        if slot >= self.slots:
            return None
        field = _unpack(self.buf, "<H", self.vtable + 4 + 2 * slot)
        if field == 0:
            return None
        if field >= self.size:
            raise Malformed("a flatbuffer field out of its table")
        return self.at + field

    def scalar(self, slot: int, form: str, default: int) -> int:
        at = self._field(slot)
        return default if at is None else int(_unpack(self.buf, form, at))

    def table(self, slot: int) -> _Table | None:
        at = self._field(slot)
        return None if at is None else _Table(self.buf, self.offset(self.buf, at))

    def raw(self, slot: int, width: int = 1) -> bytes | None:
        """A vector's bytes (`width` bytes an element)."""
        at = self._field(slot)
        if at is None:
            return None
        start = self.offset(self.buf, at)
        count = _unpack(self.buf, "<I", start)
        end = start + 4 + count * width
        if end > len(self.buf):
            raise Malformed("a flatbuffer vector out of bounds")
        return self.buf[start + 4 : end]

    def array(self, slot: int, dtype: str) -> np.ndarray:
        width = np.dtype(dtype).itemsize
        raw = self.raw(slot, width)
        return np.frombuffer(raw or b"", dtype=dtype)

    def tables(self, slot: int) -> Iterator[_Table]:
        """A vector's tables, one at a time (a vector of offsets holds a quarter of its bytes' count)."""
        for at in self._offsets(slot):
            yield _Table(self.buf, self.offset(self.buf, at))

    def string(self, slot: int) -> bytes | None:
        return self.raw(slot)

    def strings(self, slot: int) -> list[bytes]:
        out = []
        for at in self._offsets(slot):
            text = self.offset(self.buf, at)
            length = _unpack(self.buf, "<I", text)
            if text + 4 + length > len(self.buf):
                raise Malformed("a flatbuffer string out of bounds")
            out.append(self.buf[text + 4 : text + 4 + length])
        return out

    def _offsets(self, slot: int) -> range:
        """Where the offsets of a vector of tables or strings lie, checked to lie in the buffer."""
        at = self._field(slot)
        if at is None:
            return range(0)
        start = self.offset(self.buf, at)
        count = _unpack(self.buf, "<I", start)
        if start + 4 + 4 * count > len(self.buf):
            raise Malformed("a flatbuffer vector out of bounds")
        return range(start + 4, start + 4 + 4 * count, 4)


def _unpack(buf: bytes, form: str, at: int) -> int:
    if at < 0 or at + struct.calcsize(form) > len(buf):
        raise Malformed("a flatbuffer read out of bounds")
    return int(struct.unpack_from(form, buf, at)[0])
