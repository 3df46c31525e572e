"""A LightGBM model's text, checked for numbers its compiled loader and predictor follow without bounds checks.

Why: a pickled LightGBM `Booster` keeps its model as the text `model_to_string` writes, and unpickling hands it to
`LGBM_BoosterLoadModelFromString`, which checks the count of each list but none of the values. With one number
changed (measured with lightgbm 4.7 in a subprocess): `tree_sizes` past the text crashes the load itself, a
`num_tree_per_iteration` of 0 divides by zero, a child, leaf or feature index past its array crashes `predict()`, a
child pointing back up the tree loops forever, an objective's `num_class` above the trees per iteration, or a
`num_class` below them, corrupt the heap. This module reads the text the way the loader does (`GBDT::
LoadModelFromString` and `Tree::Tree` in LightGBM's C++) and checks each of those numbers; anything it cannot read
is reported as unverified, never passed. LightGBM itself writes every one of them in bounds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from wscan.scanners.booster_common import Malformed, cuts

TREE_LINES = 22  # `Tree::Tree` reads at most this many key=value lines per tree
# A number as LightGBM writes one, in ASCII only: its `Atoi` skips spaces, reads ASCII digits and stops anywhere else,
# where Python's int() and float() take other digits, other blanks and underscores (review 87 passed U+0661 for 1 and
# "\x0c1" for 1, which LightGBM read as 0). Anything else is not what LightGBM writes, so it is unverified.
_INT = re.compile(r"-?[0-9]{1,19}", re.ASCII)
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", re.ASCII)
INT32 = 2**31
# A tree deeper than this is refused: LightGBM's SHAP values (predict(pred_contrib=True)), dump_model and
# trees_to_dataframe recurse once per level, and a chain 131,071 deep (LightGBM's largest num_leaves) crashed them
# (review 89). Real trees are far shallower: num_leaves is 31 by default, and a tree as deep as this would need
# thousands of splits each peeling off a single leaf.
MAX_TREE_DEPTH = 2048
# The lists `Tree::Tree` reads, by how many values each holds: one per inner node, one per leaf. A list of another
# length stops the loader, and where it parses trees in parallel (tree_sizes given) that stop is std::terminate:
# pickle.load aborts (review 89 made one `threshold` short).
INNER_LISTS = ("split_feature", "split_gain", "threshold", "decision_type", "left_child", "right_child",
               "internal_value", "internal_weight", "internal_count")  # fmt: skip
LEAF_LISTS = ("leaf_value", "leaf_weight", "leaf_count")
REQUIRED_SPLIT_LISTS = ("split_feature", "threshold", "left_child", "right_child")


def check(text: bytes, tick: Callable[[], None] = lambda: None) -> None:
    """Raise Malformed for the first number of `text` (UTF-8, as the Python package passes it to the C library)
    that leads LightGBM out of bounds or cannot be read."""
    text = text.split(b"\0", 1)[0]  # a C string: the loader sees nothing past a NUL
    lines = _lines(text)
    header, first_tree = _header(lines)
    features = _int(header, "max_feature_idx") + 1
    classes = _int(header, "num_class")
    per_iteration = _int(header, "num_tree_per_iteration") if "num_tree_per_iteration" in header else classes
    if features < 1 or classes < 1 or per_iteration < 1:
        raise Malformed(f"max_feature_idx {features - 1}, num_class {classes}, num_tree_per_iteration {per_iteration}")
    if classes < per_iteration:  # predictions are written per tree of an iteration into num_class slots
        raise Malformed(f"num_class {classes} below num_tree_per_iteration {per_iteration}")
    for token in _tokens(header.get("objective", "")):
        parts = [part for part in token.split(":") if part]  # `Split` drops empty pieces (":num_class:9" too)
        if parts and parts[0] == "num_class":  # the objective converts this many outputs per row
            if len(parts) != 2:
                raise Malformed(f"an objective parameter {token[:30]!r}")
            wanted = _number(parts[1], "the objective's num_class")
            if not 1 <= wanted <= per_iteration:
                raise Malformed(f"an objective converting {wanted} outputs per row of {per_iteration}")
    starts = _tree_starts(lines, first_tree)
    if "tree_sizes" in header:
        _tree_sizes(header["tree_sizes"], lines, first_tree, starts, len(text))
    for number, start in enumerate(starts):
        tick()
        try:
            _tree(_tree_keys(lines, start + 1), features)
        except Malformed as exc:
            raise Malformed(f"tree {number}: {exc}") from None


def _lines(text: bytes) -> list[tuple[int, str]]:
    """Each line with the byte it starts at; a line ends at `\\r`, `\\n` or `\\r\\n`, as `Common::GetLine` reads
    (and as bytes.splitlines cuts). Lines are decoded for reading only: the numbers checked are ASCII."""
    found: list[tuple[int, str]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        found.append((offset, line.rstrip(b"\r\n").decode("utf-8", "replace")))
        offset += len(line)
    return found


def _header(lines: list[tuple[int, str]]) -> tuple[dict[str, str], int]:
    """The key=value lines before the first tree, cut as `Common::Split(line, '=')` cuts them (empty pieces dropped:
    review 87 set num_class with a line `=num_class=1`), the last of a repeated key kept; and where the trees begin."""
    header: dict[str, str] = {}
    for index, (_, line) in enumerate(lines):
        if line.startswith("Tree="):
            return header, index
        parts = [part for part in line.split("=") if part]
        if not parts:
            continue
        if len(parts) > 2 and parts[0] != "feature_names":  # the loader refuses such a line
            raise Malformed(f"a header line {line[:40]!r}")
        header[parts[0]] = "=".join(parts[1:]) if parts[0] == "feature_names" else (parts[1] if len(parts) == 2 else "")
    return header, len(lines)


def _tree_starts(lines: list[tuple[int, str]], first: int) -> list[int]:
    """The lines that start a tree, up to `end of trees`, as the loader reads them without tree_sizes."""
    starts: list[int] = []
    index = first
    while index < len(lines):
        line = lines[index][1]
        if line.startswith("end of trees"):
            break
        if line.startswith("Tree="):
            starts.append(index)
            index = _tree_end(lines, index + 1)
            continue
        index += 1
    return starts


def _tree_end(lines: list[tuple[int, str]], index: int) -> int:
    """The line after a tree's key=value lines: the first empty one, or TREE_LINES of them (or the text's end,
    which `_tree_keys` refuses: the loader reads on past it)."""
    for read in range(TREE_LINES):
        if index + read >= len(lines) or not lines[index + read][1]:
            return index + read
    return index + TREE_LINES


def _tree_sizes(value: str, lines: list[tuple[int, str]], first: int, starts: list[int], end: int) -> None:
    """With tree_sizes the loader parses tree i at the first tree's offset plus the sizes before it, unchecked:
    each such offset must be one of the trees read here, and the sizes must end inside the text."""
    sizes = [_number(token, "tree_sizes", 2**63) for token in _tokens(value)]
    if not sizes:
        return  # a model of no trees (a Booster never trained) writes `tree_sizes=` and no tree
    if first >= len(lines):
        raise Malformed("tree_sizes without trees")
    base = lines[first][0]
    at_offset = {lines[index][0]: index for index in starts}
    offset = base
    for size in sizes:
        if offset not in at_offset:
            raise Malformed(f"tree_sizes lead to byte {offset - base} past the trees, where no tree starts")
        if size < 0:
            raise Malformed(f"a tree size of {size}")
        offset += size
    if offset > end:
        raise Malformed(f"tree_sizes end {offset - end} bytes past the text")


def _tree_keys(lines: list[tuple[int, str]], index: int) -> dict[str, str]:
    """A tree's key=value lines as `Tree::Tree` reads them: up to TREE_LINES, until an empty line, the last of a
    repeated key kept. A line without `=` makes the loader search on past it for one (past the text's end)."""
    keys: dict[str, str] = {}
    end = _tree_end(lines, index)
    if end >= len(lines) and end - index < TREE_LINES:
        raise Malformed("a tree running to the end of the text, where the loader reads on past it")
    for line_index in range(index, end):
        line = lines[line_index][1]
        if "=" not in line:
            raise Malformed(f"a tree line without '=': {line[:40]!r}")
        key, _, value = line.partition("=")
        keys[key] = value
    return keys


def _tree(keys: dict[str, str], features: int) -> None:
    """One tree: its children form a tree over its nodes and leaves, its features index a row, its categorical
    splits index its category bitsets, a linear leaf's features index a row."""
    leaves = _int(keys, "num_leaves")
    categories = _int(keys, "num_cat")
    if leaves < 1 or categories < 0:
        raise Malformed(f"num_leaves {leaves}, num_cat {categories}")
    linear = "is_linear" in keys and _int(keys, "is_linear") != 0
    _count(keys, "leaf_value", leaves)
    if leaves > 1 or linear:  # the loader stops after leaf_value for a single leaf, unless it is linear
        for key in LEAF_LISTS:
            if key in keys:
                _count(keys, key, leaves)
        for key in REQUIRED_SPLIT_LISTS:  # a linear stump is read as far as its split lists (review 89)
            _count(keys, key, leaves - 1)
        for key in INNER_LISTS:
            if key in keys:
                _count(keys, key, leaves - 1)
    if leaves > 1:
        inner = leaves - 1
        split = _ints(keys, "split_feature", inner)
        left = _ints(keys, "left_child", inner)
        right = _ints(keys, "right_child", inner)
        bad = next((f for f in split if not 0 <= f < features), None)
        if bad is not None:
            raise Malformed(f"a split on feature {bad} of {features}")
        _shape(left, right, leaves)
        _categorical(keys, inner, categories)
    if linear:
        _linear(keys, leaves, features)


def _shape(left: list[int], right: list[int], leaves: int) -> None:
    """Children from the root reach every node and leaf once (a node reached twice, or back up the tree, loops
    or crashes predict); an index past its array crashes it."""
    inner = len(left)
    seen_nodes = bytearray(inner)
    seen_leaves = bytearray(leaves)
    pending = [(0, 1)]
    seen_nodes[0] = 1
    while pending:
        node, depth = pending.pop()
        for child in (left[node], right[node]):
            if child >= 0:
                if child >= inner:
                    raise Malformed(f"node {node}'s child {child} of {inner} nodes")
                if seen_nodes[child]:
                    raise Malformed(f"node {child} reached twice")
                if depth >= MAX_TREE_DEPTH:
                    raise Malformed(f"a tree deeper than {MAX_TREE_DEPTH:,} levels")
                seen_nodes[child] = 1
                pending.append((child, depth + 1))
            else:
                leaf = ~child
                if leaf >= leaves:
                    raise Malformed(f"node {node}'s leaf {leaf} of {leaves} leaves")
                if seen_leaves[leaf]:
                    raise Malformed(f"leaf {leaf} reached twice")
                seen_leaves[leaf] = 1


def _categorical(keys: dict[str, str], inner: int, categories: int) -> None:
    """A categorical split (decision_type's bit 0, whatever num_cat says: review 87 set it in a tree of no
    categories) has as threshold the index of its bitset in cat_boundaries, which cut cat_threshold."""
    kinds = _ints(keys, "decision_type", inner, 128) if "decision_type" in keys else [0] * inner
    if not categories:
        node = next((node for node, kind in enumerate(kinds) if kind & 1), None)
        if node is not None:
            raise Malformed(f"node {node}'s categorical split in a tree of no category sets")
        return
    thresholds = _floats(keys, "threshold", inner)
    boundaries = _ints(keys, "cat_boundaries", categories + 1)
    words = _count(keys, "cat_threshold", None)
    if not cuts(boundaries, words):
        raise Malformed(f"cat_boundaries {boundaries[:8]} for {words} words of cat_threshold")
    for node, (kind, threshold) in enumerate(zip(kinds, thresholds, strict=True)):
        if not -128 <= kind <= 127:
            raise Malformed(f"node {node}'s decision_type {kind}")
        if kind & 1 and not (math.isfinite(threshold) and 0 <= math.trunc(threshold) < categories):
            raise Malformed(f"node {node}'s category set {threshold} of {categories}")


def _linear(keys: dict[str, str], leaves: int, features: int) -> None:
    """A linear tree's leaves each read num_features features, listed one after another in leaf_features."""
    _count(keys, "leaf_const", leaves)
    counts = _ints(keys, "num_features", leaves)
    if any(count < 0 for count in counts):
        raise Malformed(f"a linear leaf of {min(counts)} features")
    listed = _ints(keys, "leaf_features", sum(counts))
    _count(keys, "leaf_coeff", sum(counts))
    bad = next((f for f in listed if not 0 <= f < features), None)
    if bad is not None:
        raise Malformed(f"a linear leaf reading feature {bad} of {features}")


def _tokens(value: str) -> list[str]:
    """A list as `Common::Split(value, ' ')` cuts it: empty tokens dropped."""
    return [token for token in value.split(" ") if token]


def _count(keys: dict[str, str], key: str, expected: int | None) -> int:
    if key not in keys:
        raise Malformed(f"no {key}")
    found = len(_tokens(keys[key]))
    if expected is not None and found != expected:
        raise Malformed(f"{found} values of {key} where the loader reads {expected}")
    return found


def _ints(keys: dict[str, str], key: str, expected: int, bound: int = INT32) -> list[int]:
    _count(keys, key, expected)
    return [_number(token, key, bound) for token in _tokens(keys[key])]


def _floats(keys: dict[str, str], key: str, expected: int) -> list[float]:
    _count(keys, key, expected)
    tokens = _tokens(keys[key])
    if not all(_FLOAT.fullmatch(token) for token in tokens):
        raise Malformed(f"{key} not numbers as LightGBM writes them")
    return [float(token) for token in tokens]


def _int(keys: dict[str, str], key: str) -> int:
    if key not in keys:
        raise Malformed(f"no {key}")
    return _number(keys[key], key)


def _number(token: str, what: str, bound: int = INT32) -> int:
    """An integer as LightGBM writes it, within the range of the C type it is read into (a larger one wraps)."""
    if not _INT.fullmatch(token) or not -bound <= int(token) < bound:
        raise Malformed(f"{what} {token[:20]!r} is no integer LightGBM writes")
    return int(token)
