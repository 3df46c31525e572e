"""An XGBoost model's bytes, checked for indices its compiled loader and predictor follow without bounds checks.

Why: a pickled XGBoost `Booster` keeps its model as the bytes `XGBoosterSerializeToBuffer` wrote (UBJSON since
XGBoost 2, JSON before it), and unpickling hands them to `XGBoosterUnserializeFromBuffer`, which checks none of a
tree's indices. With one changed (measured with xgboost 3.2 in a subprocess), a child past the nodes, a child
pointing back up the tree, a negative child or a split on a feature past the model's crashed `predict()`. This
module reads the bytes (JSON with the standard library, UBJSON with a bounded reader of its own: no maintained
library reads it) and checks each tree's shape, its split features, the trees' output groups and the iteration
ranges; a layout it does not know (XGBoost 1's binary snapshot) is reported as unverified.
"""

from __future__ import annotations

import itertools
import json
import re
import struct
from collections.abc import Callable

from wscan.scanners.booster_common import Malformed, cuts

ROOT_PARENT = 2147483647  # the root's parent as XGBoost writes it (its invalid node id, without the left bit)
MAX_DEPTH = 64  # nesting of the model's containers; XGBoost's own is under ten
# A tree deeper than this is refused: XGBoost's SHAP values and text dump recurse once per level and its predict
# walks a row's path with a per-depth buffer; a chain 300,000 deep crashed predict and one 30,000 deep made
# pred_contribs run for minutes (review 89). Real trees are a few dozen levels deep (max_depth is 6 by default).
MAX_TREE_DEPTH = 2048
# The largest category a categorical split may hold: XGBoost allocates a bitset up to it for each split (review 89
# took 8.6 GB with sixty splits at 2**30 from a 14 KB file). Categories are the codes of a column's values.
MAX_CATEGORY = 2**24
MAX_OUTPUTS = 65_536  # classes or targets: a model's outputs per row (real ones have a few, a thousand at most)
NODE_ARRAYS = ("left_children", "right_children", "parents", "split_indices", "split_conditions", "default_left")
_NUMBERS = {b"i": ">b", b"U": ">B", b"I": ">h", b"l": ">i", b"L": ">q", b"d": ">f", b"D": ">d"}
_SIZES = {code: struct.calcsize(form) for code, form in _NUMBERS.items()}
Value = object


def check(blob: bytes, tick: Callable[[], None] = lambda: None) -> None:
    """Raise Malformed for the first index of the model in `blob`, a pickled Booster's snapshot ({"Config",
    "Model"}), that leads XGBoost out of bounds, or for a model it cannot read."""
    check_model(_dict(_get(_dict(_document(blob), "the snapshot"), "Model"), "Model"), tick)


def read_file(blob: bytes) -> Value:
    """A model file as XGBoost's file loader reads it (`save_model`'s JSON, however it is spaced, or UBJSON)."""
    text = re.match(rb'\s*\{\s*"', blob) is not None
    return _document(blob.lstrip(b" \t\r\n"), text)


def _document(blob: bytes, text: bool = False) -> Value:
    """JSON (`{"`) or UBJSON (`{` and a type letter), as XGBoost tells them apart; anything else it refuses."""
    if text or blob[:2] == b'{"':
        try:
            snapshot = json.loads(blob, object_pairs_hook=_unique)
        except (ValueError, RecursionError):
            raise Malformed("JSON XGBoost cannot read either, or a key given twice") from None
    elif blob[:1] == b"{" and blob[1:2].isalpha():
        snapshot = Ubjson(blob).document()
    else:
        raise Malformed("a model layout wscan does not read (XGBoost 1's binary snapshot, or none)")
    return snapshot


def check_model(model: dict[str, Value], tick: Callable[[], None] = lambda: None) -> None:
    """Raise Malformed for the first index of a model ({"learner", ...}: a file, or a snapshot's "Model") that leads
    XGBoost out of bounds."""
    learner = _dict(_get(model, "learner"), "learner")
    params = _dict(_get(learner, "learner_model_param"), "learner_model_param")
    features = _int(_get(params, "num_feature"), "num_feature")
    classes = _int(params.get("num_class", "0"), "num_class")
    targets = _int(params.get("num_target", "1"), "num_target")
    # XGBoost reads these unsigned ("-1" is 4,294,967,295) and sizes buffers by them at load: num_target -1 or a
    # num_class of 2e9 took over 6 GB and never returned (review 90).
    if not 0 <= features < 2**31 or not 0 <= classes <= MAX_OUTPUTS or not 0 <= targets <= MAX_OUTPUTS:
        raise Malformed(f"num_feature {features}, num_class {classes}, num_target {targets}")
    objective = learner.get("objective")
    if isinstance(objective, dict) and isinstance(objective.get("softmax_multiclass_param"), dict):
        wanted = objective["softmax_multiclass_param"].get("num_class", "0")
        if _int(wanted, "the objective's num_class") != classes:
            raise Malformed(f"an objective of {str(wanted)[:20]} classes in a model of {classes}")
    groups = max(1, classes, targets)
    booster = _dict(_get(learner, "gradient_booster"), "gradient_booster")
    name = booster.get("name")
    if name == "gbtree":
        rounds = _trees(_dict(_get(booster, "model"), "model"), features, groups, tick)
    elif name == "dart":
        inner = _dict(_get(_dict(_get(booster, "gbtree"), "gbtree"), "model"), "model")
        rounds = _trees(inner, features, groups, tick)
        count = len(_list(_get(inner, "trees"), "trees"))
        if len(_list(_get(booster, "weight_drop"), "weight_drop")) != count:
            raise Malformed(f"weight_drop not one per tree of {count}")
    elif name == "gblinear":
        weights = _list(_get(_dict(_get(booster, "model"), "model"), "weights"), "weights")
        if len(weights) != (features + 1) * groups:
            raise Malformed(f"{len(weights)} linear weights for {features} features and {groups} outputs")
    else:
        raise Malformed(f"a booster named {str(name)[:20]!r}")
    if name in ("gbtree", "dart"):
        _best_iteration(_dict(learner.get("attributes", {}), "attributes"), rounds)


def _best_iteration(attributes: dict[str, Value], rounds: int) -> None:
    """scikit-learn's wrapper predicts with the trees up to `best_iteration` + 1, and XGBoost reads that many rounds
    unchecked (review 88: "2147483647" crashed predict, "-5" read past the trees). -1 asks for none, which XGBoost
    reads as every round (an end of 0 means the whole model): XGBoost 1 wrote it for a booster of no rounds."""
    if "best_iteration" not in attributes:
        return
    if not -1 <= _int(attributes["best_iteration"], "best_iteration") < max(rounds, 1):
        raise Malformed(f"best_iteration {str(attributes['best_iteration'])[:20]} of {rounds} rounds")


def _trees(model: dict[str, Value], features: int, groups: int, tick: Callable[[], None]) -> int:
    """The trees (each at its place: XGBoost puts a tree where its id says), their output group each (an index into
    a row's outputs), the iterations' ranges of them and the categorical encoder; the number of rounds."""
    trees = _list(_get(model, "trees"), "trees")
    count = len(trees)
    declared = _int(_get(_dict(_get(model, "gbtree_model_param"), "gbtree_model_param"), "num_trees"), "num_trees")
    info = _list(_get(model, "tree_info"), "tree_info")
    if declared != count or len(info) != count:
        raise Malformed(f"{count} trees, num_trees {declared}, {len(info)} tree_info")
    bad = next((g for g in info if not (isinstance(g, int) and 0 <= g < groups)), None)
    if bad is not None:
        raise Malformed(f"a tree writing output {bad} of {groups}")
    rounds = count
    if "iteration_indptr" in model:
        ranges = _ints(_list(model["iteration_indptr"], "iteration_indptr"), "iteration_indptr")
        if not cuts(ranges, count):
            raise Malformed(f"iteration_indptr {ranges[:6]} for {count} trees")
        rounds = len(ranges) - 1
    if "cats" in model:
        _encoder(_dict(model["cats"], "cats"))
    for number, tree in enumerate(trees):
        tick()
        try:
            tree = _dict(tree, "a tree")
            if _int(_get(tree, "id"), "id") != number:
                raise Malformed(f"an id of {str(tree['id'])[:20]}")
            _tree(tree, features, groups)
        except Malformed as exc:
            raise Malformed(f"tree {number}: {exc}") from None
    return rounds


def _encoder(cats: dict[str, Value]) -> None:
    """The categories a DataFrame's columns are recoded by: each feature's segment of `sorted_idx` holds positions
    within that segment (review 88 put one far outside and predict aborted)."""
    segments = _ints(_list(cats.get("feature_segments", []), "feature_segments"), "feature_segments")
    order = _ints(_list(cats.get("sorted_idx", []), "sorted_idx"), "sorted_idx")
    if not segments:
        if order:
            raise Malformed("sorted_idx without feature_segments")
        return
    if not cuts(segments, len(order)):
        raise Malformed(f"feature_segments {segments[:6]} for {len(order)} sorted_idx")
    for start, end in itertools.pairwise(segments):
        bad = next((i for i in order[start:end] if not 0 <= i < end - start), None)
        if bad is not None:
            raise Malformed(f"a category position {bad} of {end - start}")
    encodings = _list(cats.get("enc", []), "enc")
    if encodings and len(encodings) != len(segments) - 1:
        raise Malformed(f"{len(encodings)} category tables for {len(segments) - 1} features")
    for feature, table in enumerate(encodings):
        _category_table(_dict(table, "a category table"), segments[feature + 1] - segments[feature])


def _category_table(table: dict[str, Value], size: int) -> None:
    """A feature's categories: strings as `values` bytes cut by `offsets` (from 0, rising, to the end), or numbers
    in `values`; as many as its segment of sorted_idx (review 89 put an offset past the bytes: predict aborted)."""
    values = _list(table.get("values", []), "values")
    if "offsets" in table and (offsets := _ints(_list(table["offsets"], "offsets"), "offsets")):
        if not cuts(offsets, len(values)):
            raise Malformed(f"category offsets {offsets[:4]}... for {len(values)} bytes")
        count = len(offsets) - 1
    else:
        count = len(values)
    if count != size:
        raise Malformed(f"{count} categories where sorted_idx holds {size}")


def _tree(tree: dict[str, Value], features: int, outputs: int) -> None:
    """Children from the root form a tree over the nodes (XGBoost follows them and the parents unchecked), split
    features index a row, categorical splits' segments lie inside the categories. A multi-target tree's leaf keeps
    in `right_children` the index of its row of `leaf_weights`, one weight per output."""
    param = _dict(_get(tree, "tree_param"), "tree_param")
    nodes = _int(_get(param, "num_nodes"), "num_nodes")
    targets = _int(param.get("size_leaf_vector", "1"), "size_leaf_vector")
    leaves = _leaf_rows(tree, nodes, targets, outputs) if targets > 1 else 0
    if nodes < 1:
        raise Malformed(f"num_nodes {nodes}")
    arrays = {key: _list(_get(tree, key), key) for key in NODE_ARRAYS}
    short = next((key for key, values in arrays.items() if len(values) != nodes), None)
    if short is not None:
        raise Malformed(f"{len(arrays[short])} {short} for {nodes} nodes")
    left, right = _ints(arrays["left_children"], "left_children"), _ints(arrays["right_children"], "right_children")
    parents, split = _ints(arrays["parents"], "parents"), _ints(arrays["split_indices"], "split_indices")
    if parents[0] not in (ROOT_PARENT, -1):
        raise Malformed(f"the root's parent {parents[0]}")
    # Every node, reached or not (pruning leaves deleted nodes behind): the loader follows each one's parent and
    # children (review 88 crashed it with an unreachable node's parent far away).
    for node in range(nodes):
        if not 0 <= parents[node] < nodes and not (node == 0 and parents[node] in (ROOT_PARENT, -1)):
            raise Malformed(f"node {node}'s parent {parents[node]}")
        if targets > 1 and left[node] == -1:
            if not 0 <= right[node] < leaves:
                raise Malformed(f"leaf {node}'s weights at row {right[node]} of {leaves}")
            continue
        for child in (left[node], right[node]):
            if child != -1 and not 0 <= child < nodes:
                raise Malformed(f"node {node}'s child {child} of {nodes} nodes")
    _parent_chains(parents)
    seen = bytearray(nodes)
    seen[0] = 1
    pending = [(0, 1)]
    while pending:
        node, depth = pending.pop()
        if left[node] == -1:
            continue
        if depth >= MAX_TREE_DEPTH:
            raise Malformed(f"a tree deeper than {MAX_TREE_DEPTH:,} levels")
        if not 0 <= split[node] < features:
            raise Malformed(f"node {node} splits on feature {split[node]} of {features}")
        for child in (left[node], right[node]):
            if not 0 <= child < nodes:
                raise Malformed(f"node {node}'s child {child} of {nodes} nodes")
            if seen[child]:
                raise Malformed(f"node {child} reached twice")
            if parents[child] != node:
                raise Malformed(f"node {child}'s parent {parents[child]}, where node {node} holds it")
            seen[child] = 1
            pending.append((child, depth + 1))
    _categories(tree, left)


def _parent_chains(parents: list[int]) -> None:
    """Every node's parents lead to the root, unreachable ones too: XGBoost walks them up (its pruner looped forever
    on a node that is its own parent, review 89)."""
    reaches = bytearray(len(parents))  # 1: known to reach the root
    reaches[0] = 1
    for start in range(len(parents)):
        path: list[int] = []
        node = start
        while not reaches[node]:
            if len(path) > len(parents):
                raise Malformed(f"node {start}'s parents loop")
            path.append(node)
            node = parents[node]
        for seen in path:
            reaches[seen] = 1


def _leaf_rows(tree: dict[str, Value], nodes: int, targets: int, outputs: int) -> int:
    """A multi-target tree writes `size_leaf_vector` outputs per row (as many as the model has), from rows of
    `leaf_weights`; its `base_weights` hold a row per node. The rows of leaf weights it has."""
    if targets != outputs:
        raise Malformed(f"a tree of {targets} outputs in a model of {outputs}")
    weights = len(_list(_get(tree, "leaf_weights"), "leaf_weights"))
    if weights % targets or len(_list(_get(tree, "base_weights"), "base_weights")) != nodes * targets:
        raise Malformed(f"{weights} leaf weights or base weights not in rows of {targets}")
    return weights // targets


def _categories(tree: dict[str, Value], left: list[int]) -> None:
    """Categorical splits: exactly the inner nodes of split type 1 have a segment of `categories` (a categorical
    split without one aborted predict, review 88), each inside it, the categories themselves not negative."""
    nodes = len(left)
    split_types = _list(tree.get("split_type", []), "split_type")
    if split_types and len(split_types) != nodes:
        raise Malformed(f"{len(split_types)} split_type for {nodes} nodes")
    if any(kind not in (0, 1) for kind in split_types):
        raise Malformed("a split type other than numerical or categorical")
    at = _ints(_list(tree.get("categories_nodes", []), "categories_nodes"), "categories_nodes")
    starts = _ints(_list(tree.get("categories_segments", []), "categories_segments"), "categories_segments")
    sizes = _ints(_list(tree.get("categories_sizes", []), "categories_sizes"), "categories_sizes")
    total = len(_list(tree.get("categories", []), "categories"))
    if not len(at) == len(starts) == len(sizes):
        raise Malformed("categories_nodes, _segments and _sizes of different lengths")
    for node, start, size in zip(at, starts, sizes, strict=True):
        if not 0 <= node < nodes or left[node] == -1 or not split_types or split_types[node] != 1:
            raise Malformed(f"categories for node {node}, no categorical split")
        if start < 0 or size < 0 or start + size > total:
            raise Malformed(f"node {node}'s categories {start}..{start + size} of {total}")
    categorical = {node for node in range(len(split_types)) if split_types[node] == 1 and left[node] != -1}
    if categorical != set(at) or len(at) != len(set(at)):
        raise Malformed("a categorical split without its categories, or given two")
    values = _list(tree.get("categories", []), "categories")
    if any(not isinstance(v, int | float) or not 0 <= v < MAX_CATEGORY for v in values):
        raise Malformed(f"a negative category, or one past {MAX_CATEGORY:,}")


class Ubjson:
    """UBJSON as XGBoost writes it (keys without a marker, typed and counted arrays, big-endian numbers), read with
    bounds: every count is checked against the bytes left before anything is allocated, nesting is limited."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob
        self.at = 0

    def document(self) -> Value:
        try:
            return self._value(self._marker(), 0)
        except (struct.error, IndexError, UnicodeDecodeError, OverflowError):
            raise Malformed("UBJSON cut short or not what XGBoost writes") from None

    def _take(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.blob):
            raise Malformed("UBJSON cut short or not what XGBoost writes")
        chunk = self.blob[self.at : self.at + size]
        self.at += size
        return chunk

    def _marker(self) -> bytes:
        marker = self._take(1)
        while marker == b"N":  # no-op
            marker = self._take(1)
        return marker

    def _number(self, marker: bytes) -> int | float:
        form = _NUMBERS.get(marker)
        if form is None:
            raise Malformed(f"UBJSON marker {marker!r} where a number belongs")
        value: int | float = struct.unpack(form, self._take(_SIZES[marker]))[0]
        return value

    def _length(self) -> int:
        length = self._number(self._marker())
        if not isinstance(length, int) or length < 0:
            raise Malformed(f"a UBJSON length of {length}")
        return length

    def _value(self, marker: bytes, depth: int) -> Value:
        if depth > MAX_DEPTH:
            raise Malformed(f"UBJSON nested deeper than {MAX_DEPTH}")
        if marker in _NUMBERS:
            return self._number(marker)
        if marker == b"S" or marker == b"H":
            return self._take(self._length()).decode("utf-8")
        if marker == b"C":
            return self._take(1).decode("utf-8")
        if marker in (b"T", b"F", b"Z"):
            return {b"T": True, b"F": False, b"Z": None}[marker]
        if marker == b"[":
            return self._array(depth)
        if marker == b"{":
            return self._object(depth)
        raise Malformed(f"UBJSON marker {marker!r}")

    def _container_type(self) -> tuple[bytes | None, int | None]:
        """An optimized container's `$type` and `#count`, where given."""
        kind: bytes | None = None
        count: int | None = None
        if self.blob[self.at : self.at + 1] == b"$":
            self.at += 1
            kind = self._take(1)
            if self._take(1) != b"#":
                raise Malformed("a UBJSON type without a count")
            count = self._length()
        elif self.blob[self.at : self.at + 1] == b"#":
            self.at += 1
            count = self._length()
        return kind, count

    def _array(self, depth: int) -> list[Value]:
        kind, count = self._container_type()
        if kind is not None and count is not None:
            if kind not in _NUMBERS:
                return [self._value(kind, depth + 1) for _ in range(self._bounded(count, 1))]
            raw = self._take(self._bounded(count, _SIZES[kind]) * _SIZES[kind])
            return list(struct.unpack(f">{count}{_NUMBERS[kind][1]}", raw))
        items: list[Value] = []
        if count is not None:
            for _ in range(self._bounded(count, 1)):
                items.append(self._value(self._marker(), depth + 1))
            return items
        while True:
            marker = self._marker()
            if marker == b"]":
                return items
            items.append(self._value(marker, depth + 1))

    def _object(self, depth: int) -> dict[str, Value]:
        kind, count = self._container_type()
        found: dict[str, Value] = {}
        if count is not None:
            for _ in range(self._bounded(count, 2)):
                key = self._take(self._length()).decode("utf-8")
                self._unique_key(found, key)
                found[key] = self._value(kind if kind is not None else self._marker(), depth + 1)
            return found
        while True:
            if self.blob[self.at : self.at + 1] == b"}":
                self.at += 1
                return found
            key = self._take(self._length()).decode("utf-8")
            self._unique_key(found, key)
            found[key] = self._value(self._marker(), depth + 1)

    @staticmethod
    def _unique_key(found: dict[str, Value], key: str) -> None:
        """XGBoost keeps the first of a repeated key, a dict the last: a key given twice is refused (review 88)."""
        if key in found:
            raise Malformed(f"the key {key[:30]!r} given twice")

    def _bounded(self, count: int, least: int) -> int:
        """A count no larger than the bytes left can hold (each item takes at least `least` bytes)."""
        if count * least > len(self.blob) - self.at:
            raise Malformed(f"a UBJSON count of {count:,} past the bytes left")
        return count


def _unique(pairs: list[tuple[str, Value]]) -> dict[str, Value]:
    """A JSON object, refused when a key is given twice (json keeps the last, XGBoost the first)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key given twice")
    return found


def _get(mapping: dict[str, Value], key: str) -> Value:
    if key not in mapping:
        raise Malformed(f"no {key}")
    return mapping[key]


def _dict(value: Value, what: str) -> dict[str, Value]:
    if not isinstance(value, dict):
        raise Malformed(f"{what} is no object")
    return value


def _list(value: Value, what: str) -> list[Value]:
    if not isinstance(value, list):
        raise Malformed(f"{what} is no array")
    return value


def _ints(values: list[Value], what: str) -> list[int]:
    """A list of integers (booleans are not), as XGBoost writes node indices and counts."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise Malformed(f"{what} not all integers")
    return [v for v in values if isinstance(v, int)]


def _int(value: Value, what: str) -> int:
    """XGBoost keeps its parameters as strings of numbers (`"5"`); counts elsewhere are numbers."""
    if isinstance(value, bool):
        raise Malformed(f"{what} is no integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,19}", value.strip(" \t\n"), re.ASCII):
        return int(value)
    raise Malformed(f"{what} {str(value)[:20]!r} is no integer")
