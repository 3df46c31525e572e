"""What rendering a chat template costs, judged from its syntax tree, never by rendering it.

llama.cpp renders a GGUF's chat template with probe messages while it loads the model (`common_chat_template`
runs `caps_get`), and its Jinja engine (common/jinja) has no recursion, range or size limit: a macro that calls
itself overflows the stack (SIGSEGV), `range(1000000000)` and `'x' * 1000000000` take gigabytes before the
first request. Python's Jinja raises RecursionError, and its sandbox refuses ranges over 100,000 items, but a
billion-character string is built there too. Reported here:

- macros that call themselves, directly or through other macros, where no call on the cycle both sits under a
  condition and passes a part of what the macro was given (real templates recurse into nested JSON schemas:
  `{% if spec.type == 'array' %}{{ f(spec['items']) }}`; `{{ f(n + 1) }}` behind `{% if n < 10**9 %}` is not a
  descent, so it is reported);
- `range()`, strings and lists repeated by `*`, padding methods and nested constant loops whose size, folded
  from constants and names set once, exceeds MAX_ITEMS (Jinja's own sandbox limit on `range`); strings joined by
  `+` or `~` when they exceed it beyond what the template's own text holds.

- widths and precisions in format strings (`'%400000000s'|format(x)`, `'{:>400000000}'.format(x)`) and
  `expandtabs(n)` over MAX_ITEMS; a string repeated or padded within it, in loops over constants that run it
  so often the total passes MAX_REPEATED_TEXT;
- a namespace value built from two or more copies of itself in a loop (it doubles on every run), joined,
  added, formatted or replaced (`|replace('x', 'xx')`) into itself;
- a macro that calls itself more than once a run (twice in a row, or in a loop) on slices of its argument:
  each level descends, and multiplies the calls (2^n for n characters).
- (review 47) widths taken from the arguments (`'%*s'|format(n, x)`, `'{:>{}}'.format(x, n)`, `'%(a)9999s'`, a
  format string joined from a number); `|indent(n)`, `|replace(a, b)`, `.expandtabs(n)` and `.replace(a, b)` of a
  sized string, bounded by every line, tab or match growing; a sized string repeated by name, or inside a loop
  over the chat around constant loops (which runs at least once); namespace values that grow through
  `.format` fields, `%(key)s` mappings, the `replace` method, a count that is not constant, or through each
  other (`ns.a = ns.a ~ ns.b` and `ns.b = ns.b ~ ns.a` in one loop: Fibonacci growth).
- (review 51) counts written through a bool (`true * N`), a float (`1.5e9|int`, `'1e9'|float|int`) or a filter
  (`|abs`, `|round`, `[N]|first`, `|max`); the separators `|join(sep)` puts between the items of a sized sequence
  and the newline and indent `|tojson(indent=n)` puts before each; powers of constants past MAX_POWER_BITS, which
  Jinja's optimizer computes when the template is compiled (`9 ** 10**9`).
- (review 52) counts summed (`|sum` of a list or a range), picked (`|random`, `|sort|first`, `[N][0]`,
  `{'a': N}['a']`), spelled out and read back (`N|string|int`, `'%d'|format(N)|int`, `[N]|join|int`), or passed
  through a loop variable over a literal (also `.items()` of a dict literal), a macro parameter every call gives a
  constant, or a namespace attribute set once (each sized by the largest value it takes).
- (review 53) a padding width given by keyword; the larger branch of `a if c else b`, a `|default`, `|max` beside
  the chat's data, a number plus a length; subscripts and `.get` of a literal through a name set once; `'%d' % N`,
  `'{}'.format(N)` and `|trim` read back as numbers; true division; loops unpacking literal tuples; macro keywords
  and defaults; `set ns.n = N`; `{% set n %}N{% endset %}` and `{% with n = N %}`. A name is sized by the largest
  constant it may take (it reaches that one); `|tojson(indent=n)` of a string is never indented.

Known gaps: counts carried by data flow the folder does not follow (`|map('center', n)` over a range, values from
macros' output or from the chat itself), recursion that descends into data which never shrinks (a one-character
string is its own element, a namespace can hold itself) or that branches on parts other than slices, macros passed
around as values, `loop()` in recursive for-loops, loops over `range(i)` of an outer counter, lists of long strings
repeated and joined, a namespace value padded to a multiple of its own length, and growth through a macro's result
or through plain names (which Python's Jinja resets on every run of a loop).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

from jinja2 import nodes

from wscan.model import Issue

MAX_ITEMS = 100_000  # jinja2.sandbox.MAX_RANGE; real templates loop over the chat, never over constants this large
MAX_BITS = 128  # numbers larger than this are never computed (10**10**10 must not hang the scanner)
MAX_DEPTH = 50
# Where a node's fields run only sometimes: a call there is behind a condition.
CONDITIONAL_FIELDS: dict[type[nodes.Node], frozenset[str]] = {
    nodes.If: frozenset({"body", "elif_", "else_"}),
    nodes.For: frozenset({"body", "else_", "test"}),
    nodes.CondExpr: frozenset({"expr1", "expr2"}),
    nodes.And: frozenset({"right"}),
    nodes.Or: frozenset({"right"}),
    nodes.CallBlock: frozenset({"body"}),
}
# Filters and methods that select a part of a value: a recursion through them descends into the data.
SELECTING_FILTERS = frozenset({
    "items", "first", "last", "dictsort", "map", "select", "reject", "selectattr", "rejectattr", "list", "sort",
    "unique", "batch", "slice", "groupby", "reverse",
})
SELECTING_METHODS = frozenset({"items", "values", "keys", "get"})
PADDING_METHODS = frozenset({"ljust", "rjust", "center", "zfill", "expandtabs"})
PADDING_FILTERS = frozenset({"center", "indent"})
# Widths and precisions in a format string: `'%400000000s'|format(x)`, `'%.9999999f' % 1`, `'{:>400000000}'.format(x)`
# build a string that wide (review 45). Real templates format numbers two digits wide.
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d*)(?:\.(\d+|\*))?")
_FORMAT_SPEC = re.compile(r"\{[^{}]*?:([^{}]*)\}")
_NESTED_FIELD = re.compile(r"\{[^{}]*:[^{}]*\{")  # `{:>{}}`: a width given by another argument
_MAPPING_KEY = re.compile(r"%\(([^)]*)\)")
GROWING_FILTERS = frozenset({"indent", "replace"})  # each line indented, each match replaced
GROWING_METHODS = frozenset({"expandtabs", "replace"})
MAX_GROWTH_RUNS = 64  # runs of a loop over the chat assumed when namespace values feed each other
MAX_GROWING_VALUES = 100  # namespace values followed in one loop
_DIGITS = re.compile(r"\d+")
FORMAT_METHODS = frozenset({"format", "format_map"})
MAX_TEXT = 16 * 1024 * 1024  # characters of a joined constant string built to count its lines
MAX_WIDTH_DIGITS = 18  # digits of a width read; more is past every limit anyway
MAX_REPEATED_TEXT = 100 * MAX_ITEMS  # characters a loop over constants may build from a sized string, in all

Fold = Callable[[nodes.Node], "str | None"]


@dataclass(frozen=True, slots=True)
class Sized:
    """A string, list or range of `length` items, never built."""

    length: int


Value = int | Sized


def render_costs(tree: nodes.Template, walked: list[nodes.Node], fold: Fold, text: int) -> Iterator[Issue]:
    """Rendering work no chat needs: unbounded recursion and constant sizes over MAX_ITEMS (`text`: the
    template's length, which joined constants may reach without costing more than the template itself)."""
    yield from _recursion(walked)
    yield from _branching(walked)
    sizes = _Sizes(walked, fold)
    yield from _sizes(walked, sizes, text)
    placed = list(_loops_around(tree, sizes))
    yield from _nested_loops(placed, sizes)
    yield from _repeated_text(placed, sizes)
    yield from _growing_namespaces(placed, sizes)
    yield from _feeding_namespaces(tree, sizes)


def _issue(node: nodes.Node, name: str) -> Issue:
    return Issue("template.render_cost", {"name": name, "line": node.lineno})


# --- sizes ------------------------------------------------------------------------------------------------------


def bound_names(walked: list[nodes.Node]) -> Counter[str]:
    """How often each name is bound anywhere (set, loops, macro and call-block parameters, with, macros)."""
    counts: Counter[str] = Counter()
    for node in walked:
        if (isinstance(node, nodes.Name) and node.ctx in ("store", "param")) or isinstance(node, nodes.Macro):
            counts[node.name] += 1
    return counts


class _Sizes:
    """Integers and lengths an expression evaluates to, from constants and names set exactly once."""

    def __init__(self, walked: list[nodes.Node], fold: Fold) -> None:
        self.fold = fold
        self.bound = bound_names(walked)
        self.values: dict[str, nodes.Node] = {}
        for node in walked:
            if not (isinstance(node, nodes.Assign) and isinstance(node.target, nodes.Name)):
                continue
            if self.bound[node.target.name] == 1:
                self.values[node.target.name] = node.node
        self.memo: dict[int, Value | None] = {}
        self.attributes = _namespace_values(walked, self.bound)
        # Loop variables and macro parameters that take constants (review 52): sized by the largest they take.
        self.largest = {name: values for name, values in _passed_values(walked).items()
                        if self.bound[name] == 1 and name not in self.values}  # fmt: skip
        self.texts: dict[int, str | None] = {}
        self.counts: dict[tuple[int, str], int] = {}

    def of(self, node: nodes.Node, depth: int = 0) -> Value | None:
        """The node's number or length; None when it is not a constant (or too large to compute)."""
        if depth > MAX_DEPTH:
            return None
        key = id(node)
        if key not in self.memo:
            self.memo[key] = None  # a name set to itself resolves to nothing
            self.memo[key] = _small(self._of(node, depth + 1))
        return self.memo[key]

    def _of(self, node: nodes.Node, depth: int) -> Value | None:
        if isinstance(node, nodes.Const):
            return _constant(node.value)
        if isinstance(node, nodes.List | nodes.Tuple):
            return Sized(len(node.items))
        if isinstance(node, nodes.Name) and node.ctx == "load" and node.name in self.largest:
            return self._largest(self.largest[node.name], depth)
        if isinstance(node, nodes.Name) and node.ctx == "load":
            value = self.values.get(node.name)
            return None if value is None else self.of(value, depth)
        if isinstance(node, nodes.BinExpr | nodes.UnaryExpr):
            return self._arithmetic(node, depth)
        if isinstance(node, nodes.Concat):
            return self._concat(node, depth)
        if isinstance(node, nodes.Call) and _method(node) == "get":  # `{'a': N}.get('a')` (review 53)
            picked = _literal_item(node, self.values)
            return None if picked is None else self.of(picked, depth)
        if isinstance(node, nodes.Call):
            return self._range(node, depth) if _method(node) not in GROWING_METHODS else self._grown(node, depth)
        if isinstance(node, nodes.Filter):
            return self._grown(node, depth) if node.name in GROWING_FILTERS else self._filter(node, depth)
        if isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name):  # `namespace(n=N)` ... `ns.n`
            given = self.attributes.get((node.node.name, node.attr))
            if given is not None:
                return self._largest(given, depth)
        if isinstance(node, nodes.Getitem | nodes.Call):  # `[N][0]`, `{'a': N}['a']`, `d.get('a')` (reviews 52, 53)
            picked = _literal_item(node, self.values)
            if picked is not None:
                return self.of(picked, depth)
        if isinstance(node, nodes.CondExpr):  # `N if c else M`: the larger (review 53)
            return self._largest([node.expr1] + ([node.expr2] if node.expr2 is not None else []), depth)
        text = self.fold(node)
        return None if text is None else Sized(len(text))

    def _arithmetic(self, node: nodes.BinExpr | nodes.UnaryExpr, depth: int) -> Value | None:
        if isinstance(node, nodes.UnaryExpr):
            operand = self.of(node.node, depth)
            if not isinstance(operand, int):
                return None
            return -operand if isinstance(node, nodes.Neg) else operand if isinstance(node, nodes.Pos) else None
        left, right = self.of(node.left, depth), self.of(node.right, depth)
        if isinstance(node, nodes.Add) and _counts_something(node.right if isinstance(left, int) else node.left):
            known = left if isinstance(left, int) else right  # `N + messages|length` is at least N (review 53)
            return known if isinstance(known, int) else None
        if left is None or right is None:
            return None
        return _binary(type(node), left, right)

    def _concat(self, node: nodes.Concat, depth: int) -> Value | None:
        total = 0
        for part in node.nodes:
            value = self.of(part, depth)
            if value is None:
                return None
            total += value.length if isinstance(value, Sized) else len(str(value))
        return Sized(total)

    def _range(self, node: nodes.Call, depth: int) -> Value | None:
        """`range(...)` of constants, when `range` is the template global."""
        bounds = self._range_bounds(node, depth)
        return None if bounds is None else Sized(_range_length(*bounds))

    def _range_bounds(self, node: nodes.Call, depth: int) -> tuple[int, int, int] | None:
        """(start, stop, step) of `range(...)` of constants, when `range` is the template global."""
        if not (isinstance(node.node, nodes.Name) and node.node.name == "range" and not self.bound["range"]):
            return None
        if node.kwargs or node.dyn_args or node.dyn_kwargs or not 1 <= len(node.args) <= 3:
            return None
        bounds = [self.of(arg, depth) for arg in node.args]
        numbers = [b for b in bounds if isinstance(b, int)]
        if len(numbers) != len(bounds):
            return None
        start, stop = (0, numbers[0]) if len(numbers) == 1 else (numbers[0], numbers[1])
        step = numbers[2] if len(numbers) == 3 else 1
        return None if step == 0 else (start, stop, step)

    def text(self, node: nodes.Node, depth: int = 0) -> str | None:
        """A constant string, through names set once and the `~` and `+` joins of such names and constants
        (`{% set full = prompt ~ '\\n' %}{{ full|indent(4) }}`); each node's text is worked out once (review 49
        rebuilt a 6-million-character string for every `indent` of it), and none longer than MAX_TEXT is built."""
        if depth > MAX_DEPTH:
            return None
        key = id(node)
        if key not in self.texts:
            self.texts[key] = None  # a name set to itself has no text
            self.texts[key] = self._text(node, depth)
        return self.texts[key]

    def count(self, text: str, needle: str) -> int:
        """How often `needle` occurs in a text `text` returned: counted once per text (each is kept in `texts`)."""
        key = (id(text), needle)
        if key not in self.counts:
            self.counts[key] = text.count(needle)
        return self.counts[key]

    def _text(self, node: nodes.Node, depth: int) -> str | None:
        if isinstance(node, nodes.Name) and node.ctx == "load":
            value = self.values.get(node.name)
            return None if value is None else self.text(value, depth + 1)
        if isinstance(node, nodes.Concat | nodes.Add):
            parts = node.nodes if isinstance(node, nodes.Concat) else [node.left, node.right]
            texts = [self.text(part, depth + 1) for part in parts]
            if any(t is None for t in texts) or sum(len(t or "") for t in texts) > MAX_TEXT:
                return None
            return "".join(t or "" for t in texts)
        return self.fold(node)

    def _grown(self, node: nodes.Filter | nodes.Call, depth: int) -> Value | None:
        """What `|indent(n)`, `|replace(a, b)`, `.expandtabs(n)` or `.replace(a, b)` make of a sized string: its lines,
        tabs or matches counted when its text is known, else every character taken for one (review 47:
        `('\\t' * N).expandtabs(N)` has each factor within the limit and their product past it; review 48: a long
        prompt indented is as long as its lines make it, not its characters)."""
        subject = _subject(node)
        inner = None if subject is None else self.of(subject, depth)
        if not isinstance(inner, Sized):
            return None
        text = None if subject is None else self.text(subject)
        name = node.name if isinstance(node, nodes.Filter) else _method(node)
        keywords = {k.key: k.value for k in node.kwargs}
        if name == "replace":
            if len(node.args) < 2:
                return None
            old, new = self.fold(node.args[0]), self.of(node.args[1], depth)
            if old is None or not isinstance(new, Sized):
                return None
            if text is not None:
                matches = self.count(text, old) if old else len(text) + 1
            else:
                matches = inner.length + 1 if not old else inner.length // len(old)
            return Sized(inner.length + matches * new.length)
        default = 4 if name == "indent" else 8
        given = node.args[0] if node.args else keywords.get("width" if name == "indent" else "tabsize")
        width = default if given is None else self.of(given, depth)
        if isinstance(width, Sized):  # Jinja indents by a string too
            width = width.length
        if not isinstance(width, int):
            return None
        if text is not None:
            places = self.count(text, "\n") + 1 if name == "indent" else self.count(text, "\t")
        else:
            places = inner.length + 1
        return Sized(inner.length + places * max(width, 0))

    def _filter(self, node: nodes.Filter, depth: int) -> Value | None:
        inner = None if node.node is None else self.of(node.node, depth)
        if node.name in ("length", "count") and isinstance(inner, Sized):
            return inner.length
        if node.name == "list" and isinstance(inner, Sized):
            return inner
        if node.name in NUMBER_FILTERS and node.node is not None:
            # `1.5e9|int`, `'1e9'|float|int`, `N|abs`, `x|round|int` (review 51), `N|string|int`, `'%d'|format(N)|int`,
            # `[N]|join|int` (review 52): Jinja's int() of a float, of a float's text or of a number's text; round
            # and float are taken as the integer a later `int` makes of them.
            if isinstance(inner, int):
                return abs(inner) if node.name == "abs" else inner
            written = self._written_number(node.node, depth)
            if written is not None:
                return written
            return _integral(node.node.value if isinstance(node.node, nodes.Const) else self.fold(node.node))
        if node.name in PICKING_FILTERS and node.node is not None:
            # `[N]|first`, `[N, M]|max`, `[N]|sort|first`, `[N]|random` (reviews 51, 52): the largest item, where the
            # order is not the literal's
            items = _literal_items(node.node)
            picked = [self.of(item, depth) for item in items or []]
            numbers = [value for value in picked if isinstance(value, int)]
            if not picked:
                return None
            if node.name in ("first", "last") and isinstance(node.node, nodes.List | nodes.Tuple):
                return picked[0] if node.name == "first" else picked[-1]
            if node.name == "max" and numbers:  # `[N, messages|length]|max` is at least N (review 53)
                return max(numbers)
            if len(numbers) != len(picked):
                return None
            return min(numbers) if node.name == "min" else max(numbers)
        if node.name == "sum" and node.node is not None:
            return self._sum(node.node, depth)
        if node.name in ("default", "d") and node.node is not None and node.args:  # `budget|default(N)`
            return self._largest([node.node, node.args[0]], depth)
        if node.name in JOINING_FILTERS:
            return self._joined(node, inner, depth)
        text = self.fold(node)
        return None if text is None else Sized(len(text))

    def _largest(self, candidates: Sequence[nodes.Node], depth: int) -> int | None:
        """The largest number among what a name may take: at least that is reached, whatever the others are."""
        numbers = [value for value in (self.of(c, depth) for c in candidates) if isinstance(value, int)]
        return max(numbers) if numbers else None

    def _written_number(self, node: nodes.Node, depth: int) -> int | None:
        """The number a text spells when it is a number written out: `N|string`, `'%d'|format(N)`, `[N]|join`,
        `'%d' % N`, `'{}'.format(N)`, through filters that keep a number's text (`|trim`)."""
        while isinstance(node, nodes.Filter) and node.name in TEXT_KEEPING_FILTERS and node.node is not None:
            node = node.node
            number = self.of(node, depth)
            if isinstance(number, int):
                return number  # `N|string|trim`
        spelled = _spelled_argument(node)
        if spelled is not None:
            value = self.of(spelled, depth)
            return value if isinstance(value, int) else None
        if isinstance(node, nodes.Filter) and node.name == "string" and node.node is not None:
            value = self.of(node.node, depth)
            return value if isinstance(value, int) else None
        if (isinstance(node, nodes.Filter) and node.name == "format" and isinstance(node.node, nodes.Const)
                and node.node.value in ("%d", "%i", "%s") and len(node.args) == 1 and not node.kwargs):
            value = self.of(node.args[0], depth)
            return value if isinstance(value, int) else None
        if isinstance(node, nodes.Filter) and node.name == "join" and not node.args and node.node is not None:
            items = _literal_items(node.node)
            values = [self.of(item, depth) for item in items or []]
            if len(values) == 1 and isinstance(values[0], int):
                return values[0]
        return None

    def _sum(self, node: nodes.Node, depth: int) -> int | None:
        """`[a, b]|sum` of constants, or `range(...)|sum` (review 52: range(60000)|sum is 1.8 billion)."""
        items = _literal_items(node)
        if items is not None:
            values = [self.of(item, depth) for item in items]
            numbers = [value for value in values if isinstance(value, int)]
            return sum(numbers) if len(numbers) == len(values) else None
        bounds = self._range_bounds(node, depth) if isinstance(node, nodes.Call) else None
        if bounds is None:
            return None
        start, _, step = bounds
        count = _range_length(*bounds)
        return count * start + step * count * (count - 1) // 2

    def _joined(self, node: nodes.Filter, inner: Value | None, depth: int) -> Value | None:
        """At least what `|join(sep)` and `|tojson(indent=n)` add to a sized sequence: the separator between each
        two items, a newline and the indent before each (review 51: `range(30000)|join('x' * 50000)` and
        `|tojson(indent=75000)` each made 1.5 billion characters)."""
        keywords: dict[object, nodes.Node] = {k.key: k.value for k in node.kwargs}
        given = node.args[0] if node.args else keywords.get("d" if node.name == "join" else "indent")
        if given is None:
            return None
        width = self.of(given, depth)
        per_item = width.length if isinstance(width, Sized) else width if node.name == "tojson" else None
        if not isinstance(per_item, int):
            return None
        if node.name == "tojson":
            if node.node is not None and self.text(node.node) is not None:
                return None  # a string: dumped as one JSON string, never indented (review 53: 43,540 characters)
            per_item += 1  # the newline before each indented item
            if not isinstance(inner, Sized):  # any value: at least one item, and a bare value is never indented
                return Sized(per_item) if per_item > MAX_ITEMS else None
        return Sized(max(inner.length - 1, 0) * per_item) if isinstance(inner, Sized) else None


NUMBER_FILTERS = frozenset({"int", "abs", "round", "float"})
PICKING_FILTERS = frozenset({"first", "last", "max", "min", "random"})
ORDERING_FILTERS = frozenset({"sort", "reverse", "unique", "list"})  # the same items, in another order


def _passed_values(walked: list[nodes.Node]) -> dict[str, list[nodes.Node]]:
    """What names take from literals: `for n in [N]`, `for k, n in [('a', N)]`, `for k, v in {'a': N}.items()`
    (each value in turn), `{% with n = N %}`, `{% set n %}N{% endset %}`, and a macro's parameters from what its
    calls pass, by position or keyword, or its defaults (reviews 52, 53: each was a count wscan never sized)."""
    passed: dict[str, list[nodes.Node]] = {}

    def add(target: nodes.Node, value: nodes.Node) -> None:
        if isinstance(target, nodes.Name):
            passed.setdefault(target.name, []).append(value)

    for node in walked:
        if isinstance(node, nodes.For):
            for target, value in _loop_bindings(node):
                add(target, value)
        elif isinstance(node, nodes.With):
            for target, value in zip(node.targets, node.values, strict=False):
                add(target, value)
        elif isinstance(node, nodes.AssignBlock) and node.filter is None and len(node.body) == 1:
            output = node.body[0]
            data = output.nodes[0] if isinstance(output, nodes.Output) and len(output.nodes) == 1 else None
            text = data.data.strip() if isinstance(data, nodes.TemplateData) else ""
            if text.isdigit() and len(text) < 40:
                add(node.target, nodes.Const(int(text)))
    macros = {node.name: node for node in walked if isinstance(node, nodes.Macro)}
    calls: dict[str, list[nodes.Call]] = {}
    for node in walked:
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and node.node.name in macros:
            calls.setdefault(node.node.name, []).append(node)
    for name, macro in macros.items():
        defaults = dict(zip([a.name for a in macro.args[len(macro.args) - len(macro.defaults):]], macro.defaults,
                            strict=True))  # fmt: skip
        for index, param in enumerate(macro.args):
            for call in calls.get(name, []):
                keywords = {k.key: k.value for k in call.kwargs}
                given = call.args[index] if index < len(call.args) else keywords.get(param.name)
                given = given if given is not None else defaults.get(param.name)
                if given is not None:
                    add(param, given)
            if not calls.get(name) and param.name in defaults:
                add(param, defaults[param.name])
    return passed


def _loop_bindings(loop: nodes.For) -> Iterator[tuple[nodes.Node, nodes.Node]]:
    """(name, value) for each value a loop over a literal binds, unpacked as the loop's target is."""
    iterated = loop.iter
    if isinstance(iterated, nodes.Call) and isinstance(iterated.node, nodes.Getattr) and isinstance(
        iterated.node.node, nodes.Dict
    ) and iterated.node.attr in ("items", "values") and not iterated.args:
        pairs = iterated.node.node.items
        if iterated.node.attr == "values":
            yield from ((loop.target, pair.value) for pair in pairs)
        elif isinstance(loop.target, nodes.Tuple) and len(loop.target.items) == 2:
            yield from ((loop.target.items[1], pair.value) for pair in pairs)
        return
    items = _literal_items(iterated) or []
    if isinstance(loop.target, nodes.Tuple):
        for item in items:
            if isinstance(item, nodes.List | nodes.Tuple) and len(item.items) == len(loop.target.items):
                yield from zip(loop.target.items, item.items, strict=True)
    else:
        yield from ((loop.target, item) for item in items)


def _namespace_values(walked: list[nodes.Node], bound: Counter[str]) -> dict[tuple[str, str], list[nodes.Node]]:
    """What `ns.n` takes, for a name bound once to `namespace(n=...)`: its first value and every `set ns.n = ...`
    (review 53), sized by the largest."""
    spaces: dict[tuple[str, str], list[nodes.Node]] = {}
    names: set[str] = set()
    for node in walked:
        if not (isinstance(node, nodes.Assign) and isinstance(node.target, nodes.Name)):
            continue
        if bound[node.target.name] != 1:
            continue
        made = node.node
        if isinstance(made, nodes.Call) and isinstance(made.node, nodes.Name) and made.node.name == "namespace":
            names.add(node.target.name)
            for keyword in made.kwargs:
                spaces.setdefault((node.target.name, keyword.key), []).append(keyword.value)
    for node in walked:
        if isinstance(node, nodes.Assign) and isinstance(node.target, nodes.NSRef) and node.target.name in names:
            spaces.setdefault((node.target.name, node.target.attr), []).append(node.node)
    return spaces


TEXT_KEEPING_FILTERS = frozenset({"trim", "string", "e", "escape", "safe", "lower", "upper"})


def _counts_something(node: nodes.Node) -> bool:
    """A length or count, never below zero: added to a number, the sum is at least that number."""
    return isinstance(node, nodes.Filter) and node.name in ("length", "count")


def _spelled_argument(node: nodes.Node) -> nodes.Node | None:
    """What `'%d' % N` or `'{}'.format(N)` writes out: N."""
    if isinstance(node, nodes.Mod) and isinstance(node.left, nodes.Const) and node.left.value in ("%d", "%i", "%s"):
        right = node.right.items if isinstance(node.right, nodes.Tuple) else [node.right]
        return right[0] if len(right) == 1 else None
    if (isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr) and node.node.attr == "format"
            and isinstance(node.node.node, nodes.Const) and node.node.node.value == "{}" and len(node.args) == 1):
        return node.args[0]
    return None


def _literal_items(node: nodes.Node, names: dict[str, nodes.Node] | None = None) -> list[nodes.Node] | None:
    """The items of a list or tuple literal, also through filters that only reorder them and a name set once."""
    while isinstance(node, nodes.Filter) and node.name in ORDERING_FILTERS and node.node is not None:
        node = node.node
    if isinstance(node, nodes.Name) and names is not None and node.name in names:
        node = names[node.name]
    return list(node.items) if isinstance(node, nodes.List | nodes.Tuple) and node.items else None


def _literal_item(node: nodes.Getitem | nodes.Call, names: dict[str, nodes.Node]) -> nodes.Node | None:
    """The item a constant index or key picks from a list, tuple or dict literal (or a name set once to one):
    `l[0]`, `d['n']`, `d.get('n')`."""
    container: nodes.Node
    if isinstance(node, nodes.Call):
        if not (isinstance(node.node, nodes.Getattr) and node.node.attr == "get" and len(node.args) >= 1):
            return None
        container, arg = node.node.node, node.args[0]
    else:
        container, arg = node.node, node.arg
    if isinstance(container, nodes.Name) and container.name in names:
        container = names[container.name]
    key = arg.value if isinstance(arg, nodes.Const) else None
    if isinstance(container, nodes.List | nodes.Tuple) and isinstance(key, int) and not isinstance(key, bool):
        items = container.items
        return items[key] if -len(items) <= key < len(items) else None
    if isinstance(container, nodes.Dict) and key is not None:
        found = [pair.value for pair in container.items if isinstance(pair.key, nodes.Const) and pair.key.value == key]
        return found[-1] if found else None
    return None
JOINING_FILTERS = frozenset({"join", "tojson"})
MAX_POWER_BITS = 1 << 20  # Jinja folds `a ** b` when it compiles the template: 9 ** 10**9 runs for hours (review 51)


def _integral(value: object) -> int | None:
    """Jinja's `int` of a constant: the integer, or the float's integer part, of a number or of its text."""
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, str) and len(value) < 40:
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, float) and math.isfinite(value) and abs(value) < 2.0**MAX_BITS:
        return int(value)
    return None


def _range_length(start: int, stop: int, step: int) -> int:
    return max(0, -((start - stop) // step))  # ceil((stop - start) / step), as len(range(...))


def _method(node: nodes.Call) -> str | None:
    """The name of the method a call calls (`x.replace(...)`: replace), else None."""
    return node.node.attr if isinstance(node.node, nodes.Getattr) else None


def _subject(node: nodes.Filter | nodes.Call) -> nodes.Node | None:
    """What a filter filters, or the object whose method a call calls."""
    if isinstance(node, nodes.Filter):
        return node.node
    return node.node.node if isinstance(node.node, nodes.Getattr) else None


def _grows(node: nodes.Node) -> bool:
    return (isinstance(node, nodes.Filter) and node.name in GROWING_FILTERS) or (
        isinstance(node, nodes.Call) and _method(node) in GROWING_METHODS
    )


def _constant(value: object) -> Value | None:
    """A constant's number (a bool is 0 or 1 to Python's `*`: `true * N`, review 51; a float its integer part, as a
    count made from it by `|int` is) or length."""
    if isinstance(value, bool | int | float):
        return _integral(value)
    return Sized(len(value)) if isinstance(value, str) else None


def _small(value: Value | None) -> Value | None:
    """None for numbers beyond MAX_BITS: they are not computed further."""
    number = value.length if isinstance(value, Sized) else value
    return None if number is None or abs(number).bit_length() > MAX_BITS else value


def _binary(kind: type[nodes.Node], left: Value, right: Value) -> Value | None:
    """Python's meaning of `left <op> right` for numbers, and for repetition and concatenation of sequences."""
    if isinstance(left, int) and isinstance(right, int):
        return _numbers(kind, left, right)
    if kind is nodes.Mul:
        count, seq = (right, left) if isinstance(left, Sized) else (left, right)
        if isinstance(count, int) and isinstance(seq, Sized):
            return Sized(seq.length * max(count, 0))
    if kind is nodes.Add and isinstance(left, Sized) and isinstance(right, Sized):
        return Sized(left.length + right.length)
    return None


def _numbers(kind: type[nodes.Node], left: int, right: int) -> int | None:
    if kind is nodes.Add:
        return left + right
    if kind is nodes.Sub:
        return left - right
    if kind is nodes.Mul:
        return left * right
    if kind in (nodes.FloorDiv, nodes.Mod) and right:
        return left // right if kind is nodes.FloorDiv else left % right
    if kind is nodes.Div and right:  # `(2 * N / 2)|int` (review 53): the integer part a later `int` makes
        return int(left / right) if abs(left).bit_length() < 1000 else left // right
    computable = abs(left) <= 1 or right * abs(left).bit_length() <= MAX_BITS + 1  # 10**10**10 is never computed
    return int(left**right) if kind is nodes.Pow and right >= 0 and computable else None


def _sizes(walked: list[nodes.Node], sizes: _Sizes, text: int) -> Iterator[Issue]:
    """Ranges, strings and lists built from constants (`*`, `+`, `~`) and paddings over MAX_ITEMS; of nested
    expressions over the limit, the outermost."""
    large: dict[int, tuple[nodes.Node, int]] = {}
    for node in walked:
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and node.node.name == "range":
            value = sizes.of(node)
            if isinstance(value, Sized) and value.length > MAX_ITEMS:
                yield _issue(node, f"range() of {value.length:,} items")
        elif isinstance(node, nodes.Pow):
            bits = _power_bits(sizes.of(node.left), sizes.of(node.right))
            if bits > MAX_POWER_BITS:
                yield _issue(node, f"a power of about {bits:,} bits, computed when the template is compiled")
        elif isinstance(node, nodes.Mul | nodes.Add | nodes.Concat) or _grows(node) or (
            isinstance(node, nodes.Filter) and node.name in JOINING_FILTERS
        ):
            value = sizes.of(node)
            limit = MAX_ITEMS + text if isinstance(node, nodes.Add | nodes.Concat) else MAX_ITEMS
            if isinstance(value, Sized) and value.length > limit:
                large[id(node)] = (node, value.length)
        else:
            width = _padding(node, sizes)
            if width > MAX_ITEMS:
                yield _issue(node, f"a string padded to {width:,} characters")
    inner = {id(child) for node, _ in large.values() for child in node.iter_child_nodes()}
    for key, (node, length) in large.items():
        if key not in inner:
            yield _issue(node, f"a string or list of {length:,} items built from constants")


def _power_bits(base: Value | None, exponent: Value | None) -> int:
    """About how many bits `base ** exponent` has; 0 when either is not a constant integer or it stays small."""
    if not (isinstance(base, int) and isinstance(exponent, int)) or exponent <= 0 or abs(base) <= 1:
        return 0
    return exponent * (abs(base).bit_length() - 1) + 1


def _padding(node: nodes.Node, sizes: _Sizes) -> int:
    """The width `'x'.ljust(n)`, `'x'|center(n)`, `|indent(n)`, `expandtabs(n)` or a format string's conversions
    pad to, when constant; else 0."""
    formatted = _format_width(node, sizes)
    if formatted:
        return formatted
    method = isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr) and node.node.attr in PADDING_METHODS
    if not (method or (isinstance(node, nodes.Filter) and node.name in PADDING_FILTERS)):
        return 0
    args = node.args if isinstance(node, nodes.Call | nodes.Filter) else []
    keywords = {k.key: k.value for k in node.kwargs} if isinstance(node, nodes.Call | nodes.Filter) else {}
    given = args[0] if args else keywords.get("width")  # `|center(width=N)` (review 53)
    width = sizes.of(given) if given is not None else None
    return width if isinstance(width, int) else 0


def _format_width(node: nodes.Node, sizes: _Sizes) -> int:
    """The widest width or precision in the constant format string of `|format`, `%` or `.format(...)`; else 0."""
    if isinstance(node, nodes.Filter) and node.name == "format" and node.node is not None:
        text, specs, args = _text(node.node, sizes), _PERCENT_SPEC, [*node.args, *(k.value for k in node.kwargs)]
    elif isinstance(node, nodes.Mod):
        text, specs = _text(node.left, sizes), _PERCENT_SPEC
        args = list(node.right.items) if isinstance(node.right, nodes.Tuple) else [node.right]
    elif isinstance(node, nodes.Call) and _method(node) in FORMAT_METHODS:
        text, specs = _text(_subject(node), sizes), _FORMAT_SPEC
        args = [*node.args, *(k.value for k in node.kwargs)]
    else:
        return 0
    if text is None:
        return 0
    for escaped in ("{{", "}}", "%%"):  # literal braces and percent signs: `'{{"max_new_tokens": 131072}}'.format()`
        text = text.replace(escaped, " ")
    groups = [group or "" for match in specs.finditer(text) for group in match.groups()]
    # a width too long to be a number Python converts (4,300 digits) is at least this wide anyway (review 48)
    widest = max((int(digits[:MAX_WIDTH_DIGITS]) for digits in _DIGITS.findall(" ".join(groups))), default=0)
    if "*" in groups or (specs is _FORMAT_SPEC and _NESTED_FIELD.search(text)):
        # `'%*s'|format(n, x)`, `'{:>{}}'.format(x, n)`: the width is an argument (review 47)
        given = (sizes.of(arg) for arg in args)
        widest = max([widest, *(value for value in given if isinstance(value, int))])
    return widest


def _text(node: nodes.Node | None, sizes: _Sizes) -> str | None:
    """A constant string, also one joined from constant strings and numbers (`'%' ~ n ~ 's'`)."""
    if node is None:
        return None
    text = sizes.fold(node)
    if text is not None or not isinstance(node, nodes.Concat):
        return text
    parts: list[str] = []
    for part in node.nodes:
        value = sizes.fold(part)
        if value is None:
            number = sizes.of(part)
            if not isinstance(number, int):
                return None
            value = str(number)
        parts.append(value)
    return "".join(parts)


Placed = tuple[nodes.Node, tuple[int | None, ...]]  # a node and the sizes of the loops around it


def _loops_around(tree: nodes.Template, sizes: _Sizes) -> Iterator[Placed]:
    """Every node with the sizes of the loops whose body holds it, outermost first (None: not a constant, such as
    the chat), counted from the nearest macro: a macro's body runs where it is called, not where it is defined."""
    stack: list[tuple[nodes.Node, tuple[int | None, ...]]] = [(tree, ())]
    while stack:
        node, loops = stack.pop()
        if isinstance(node, nodes.Macro):
            loops = ()
        yield node, loops
        inside = loops
        if isinstance(node, nodes.For):
            size = sizes.of(node.iter)
            inside = (*loops, size.length if isinstance(size, Sized) else None)
        stack.extend((child, inside if field == "body" else loops) for field, child in _children(node))


def _runs(sizes: Iterable[int]) -> int:
    """How often a body runs inside loops of these sizes, capped at MAX_ITEMS squared (far past anything reported,
    so deep nesting never builds a huge number)."""
    runs = 1
    for size in sizes:
        runs = min(runs * size, MAX_ITEMS * MAX_ITEMS)
    return runs


def _repeated_text(placed: list[Placed], sizes: _Sizes) -> Iterator[Issue]:
    """A string repeated or padded within the limit (or a name set to one), in loops over constants that run it so often
    the total is past MAX_REPEATED_TEXT (`{% for i in range(1000) %}{{ 'x' * 99999 }}`: 100 MB), also inside a loop
    over the chat."""
    for node, loops in placed:
        if not loops:
            continue
        repeated = isinstance(node, nodes.Mul) or _grows(node) or (isinstance(node, nodes.Name) and node.ctx == "load")
        value = sizes.of(node) if repeated else None
        size = value.length if isinstance(value, Sized) else _padding(node, sizes)
        if 0 < size <= MAX_ITEMS:
            runs = _runs(s for s in loops if s is not None)  # a loop over the chat runs at least once
            if size * runs > MAX_REPEATED_TEXT:
                chat = ", and again for each message" if None in loops else ""
                yield _issue(node, f"{size:,} characters built {runs:,} times in loops over constants{chat}")


def _nested_loops(placed: list[Placed], sizes: _Sizes) -> Iterator[Issue]:
    """Loops over constant sequences, each within the limit, nested so their product is over it."""
    for node, loops in placed:
        size = sizes.of(node.iter) if isinstance(node, nodes.For) else None
        if isinstance(size, Sized) and size.length <= MAX_ITEMS:
            runs = _runs(s for s in loops if s is not None and s <= MAX_ITEMS)
            inner = _runs([runs, size.length])
            if inner > MAX_ITEMS >= runs:
                yield _issue(node, f"nested loops over constants running {inner:,} times")


def _growing_namespaces(placed: list[Placed], sizes: _Sizes) -> Iterator[Issue]:
    """`{% set ns.s = ns.s ~ ns.s %}` in a loop: a namespace value (which, unlike a plain name, keeps its value
    from one run of the loop to the next) built from two or more copies of itself doubles on every run, so 40
    messages make a terabyte. Reported when the runs are not constant (the chat's length) or the growth passes
    MAX_ITEMS; real templates append to a namespace value, one copy of it per assignment."""
    for node, loops in placed:
        if not (loops and isinstance(node, nodes.Assign) and isinstance(node.target, nodes.NSRef)):
            continue
        target = (node.target.name, node.target.attr)
        copies = min(_copies(node.node, target, sizes, 0), MAX_ITEMS)
        runs = None if None in loops else _runs(s for s in loops if s is not None)
        if copies >= 2 and (runs is None or runs * math.log2(copies) > math.log2(MAX_ITEMS)):
            shown = f"{target[0]}.{target[1]}"
            count = "as many times as the chat has messages" if runs is None else f"{runs:,} times"
            yield _issue(node, f"a namespace value {shown} made of {copies} copies of itself in a loop run {count}")


def _feeding_namespaces(tree: nodes.Template, sizes: _Sizes) -> Iterator[Issue]:
    """Namespace values in one loop that take copies of each other (`ns.a = ns.a ~ ns.b`, `ns.b = ns.b ~ ns.a`): none
    holds two copies of itself, yet together they grow like Fibonacci numbers (review 47). Their lengths are followed
    through the loop's runs (MAX_GROWTH_RUNS for a loop over the chat) from one character each, leaving out the text
    the assignments add: values that only append stay at one, and a value set anew drops to nothing."""
    references: dict[int, dict[tuple[str, str], int]] = {}  # per assignment: copies of each value it reads
    checked: set[tuple[tuple[int, ...], int]] = set()
    for loop, assigns in _namespace_assignments(tree).items():
        rows = [((target.name, target.attr), _references(value, sizes, references)) for target, value in assigns]
        keys = {target for target, _ in rows}
        if not any(key != target and key in keys for target, refs in rows for key in refs):
            continue  # no value reads another: each only appends (or doubles by itself, `_growing_namespaces`)
        if any(refs.get(target, 0) >= 2 for target, refs in rows):
            continue  # a value that doubles by itself: `_growing_namespaces` reports it
        size = sizes.of(loop.iter)
        runs = min(size.length if isinstance(size, Sized) else MAX_GROWTH_RUNS, MAX_GROWTH_RUNS)
        seen = (tuple(id(value) for _, value in assigns), runs)  # nested loops around the same body: once
        if seen in checked:
            continue
        checked.add(seen)
        lengths = dict.fromkeys(keys, 1)
        for _ in range(runs):
            for target, refs in rows:
                grown = sum(count * lengths.get(key, 0) for key, count in refs.items())
                lengths[target] = min(grown, MAX_ITEMS * MAX_ITEMS)
            if max(lengths.values()) > MAX_ITEMS:
                count = "as many times as the chat has messages" if size is None else f"{runs:,} times"
                names = sorted(f"{name}.{attr}" for name, attr in keys if lengths[(name, attr)] > 1)
                shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
                yield _issue(loop, f"namespace values {shown} built from each other in a loop run {count}")
                break


MAX_REFERENCES = 20  # namespace values one assignment is judged to copy


def _references(
    value: nodes.Node, sizes: _Sizes, cache: dict[int, dict[tuple[str, str], int]]
) -> dict[tuple[str, str], int]:
    """How many copies of each namespace value (`ns.a`) an assigned expression holds, for the first MAX_REFERENCES
    it names; worked out once per assignment, however many loops hold it."""
    key = id(value)
    if key not in cache:
        named: dict[tuple[str, str], None] = {}
        stack = [value]  # a loop, not find_all's recursion: an expression may nest deeply
        while stack and len(named) < MAX_REFERENCES:
            node = stack.pop()
            if isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name):
                named[(node.node.name, node.attr)] = None
            stack.extend(child for _, child in _children(node))
        copies = {name: _copies(value, name, sizes, 0) for name in named}
        cache[key] = {name: count for name, count in copies.items() if count}
    return cache[key]


def _namespace_assignments(tree: nodes.Template) -> dict[nodes.For, list[tuple[nodes.NSRef, nodes.Node]]]:
    """Each loop with the namespace assignments its body runs (in inner loops too; a macro's body runs where it is
    called), in order, at most MAX_GROWING_VALUES a loop."""
    found: dict[nodes.For, list[tuple[nodes.NSRef, nodes.Node]]] = {}
    stack: list[tuple[nodes.Node, tuple[nodes.For, ...]]] = [(tree, ())]
    while stack:
        node, loops = stack.pop()
        if isinstance(node, nodes.Macro):
            loops = ()
        if isinstance(node, nodes.Assign) and isinstance(node.target, nodes.NSRef):
            for loop in loops:
                assigns = found.setdefault(loop, [])
                if len(assigns) < MAX_GROWING_VALUES:
                    assigns.append((node.target, node.node))
        inside = (*loops, node) if isinstance(node, nodes.For) else loops
        children = list(_children(node))
        stack.extend((child, inside if field == "body" else loops) for field, child in reversed(children))
    return found


COPYING_FILTERS = frozenset({"string", "trim", "upper", "lower", "title", "capitalize", "list", "safe", "e", "escape"})


def _copies(node: nodes.Node, target: tuple[str, str], sizes: _Sizes, depth: int) -> int:
    """How many copies of the namespace value `target` the expression's result holds (joined, added, repeated)."""
    if depth > MAX_DEPTH:
        return 0
    if isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name):
        return int((node.node.name, node.attr) == target)
    if isinstance(node, nodes.Concat):
        return sum(_copies(part, target, sizes, depth + 1) for part in node.nodes)
    if isinstance(node, nodes.Add):
        return _copies(node.left, target, sizes, depth + 1) + _copies(node.right, target, sizes, depth + 1)
    if isinstance(node, nodes.Mul):
        for count, value in ((node.left, node.right), (node.right, node.left)):
            times = sizes.of(count)
            if isinstance(times, int):
                return min(max(times, 0) * _copies(value, target, sizes, depth + 1), MAX_ITEMS)
        # `ns.s * (messages|length)`: a count that is not constant may be two or more (review 47)
        return 2 * (_copies(node.left, target, sizes, depth + 1) + _copies(node.right, target, sizes, depth + 1))
    if isinstance(node, nodes.CondExpr):
        branches = [node.expr1, *([node.expr2] if node.expr2 is not None else [])]
        return max(_copies(branch, target, sizes, depth + 1) for branch in branches)
    if isinstance(node, nodes.Filter) and node.node is not None and node.name in COPYING_FILTERS:
        return _copies(node.node, target, sizes, depth + 1)
    if isinstance(node, nodes.Filter) and node.node is not None and node.name in ("join", "format"):
        # `[ns.s, ns.s]|join`, `'%s%s'|format(ns.s, ns.s)` (review 45), `'%(a)s%(a)s'|format(a=ns.s)` (review 47)
        parts = [node.node, *node.args]
        total = sum(_copies(part, target, sizes, depth + 1) for part in parts)
        keys = _MAPPING_KEY.findall(sizes.fold(node.node) or "")
        for keyword in node.kwargs:
            total += max(keys.count(keyword.key), 1) * _copies(keyword.value, target, sizes, depth + 1)
        return min(total, MAX_ITEMS)
    if isinstance(node, nodes.Call) and _method(node) in FORMAT_METHODS:
        return min(_format_copies(node, target, sizes, depth), MAX_ITEMS)  # `'{0}{0}'.format(ns.s)` (review 47)
    if isinstance(node, nodes.List | nodes.Tuple):
        return min(sum(_copies(item, target, sizes, depth + 1) for item in node.items), MAX_ITEMS)
    replacement = _replacement(node)
    if replacement is not None:
        # `ns.s|replace('x', 'xx')`, `ns.s.replace('x', 'xx')`: every 'x' becomes two, so a value of them doubles
        subject, old_node, new_node = replacement
        old, new = sizes.fold(old_node), sizes.fold(new_node)
        grows = new.count(old) if old and new is not None else 1
        return min(max(grows, 1) * _copies(subject, target, sizes, depth + 1), MAX_ITEMS)
    return 0


def _replacement(node: nodes.Node) -> tuple[nodes.Node, nodes.Node, nodes.Node] | None:
    """(subject, old, new) of `subject|replace(old, new)` or `subject.replace(old, new)`, else None."""
    if isinstance(node, nodes.Filter) and node.name == "replace" and node.node is not None and len(node.args) >= 2:
        return node.node, node.args[0], node.args[1]
    if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr) and node.node.attr == "replace":
        return (node.node.node, node.args[0], node.args[1]) if len(node.args) >= 2 else None
    return None


def _format_copies(node: nodes.Call, target: tuple[str, str], sizes: _Sizes, depth: int) -> int:
    """Copies of `target` that `'...'.format(...)` puts in its result: each argument as often as a field names it
    (every argument once when the format string is not constant)."""
    args = {str(index): arg for index, arg in enumerate(node.args)}
    args.update((keyword.key, keyword.value) for keyword in node.kwargs)
    text = sizes.fold(node.node.node) if isinstance(node.node, nodes.Getattr) else None
    uses: Counter[str] = Counter()
    try:
        automatic = 0
        for _, field, _, _ in string.Formatter().parse(text or ""):  # parsing only: nothing is formatted
            if field is None:
                continue
            name = re.split(r"[.\[]", field, maxsplit=1)[0]
            if not name:
                name, automatic = str(automatic), automatic + 1
            uses[name] += 1
    except ValueError:  # not a format string Python accepts: the call fails
        return 0
    if text is None:
        uses = Counter(dict.fromkeys(args, 1))
    return sum(count * _copies(args[name], target, sizes, depth + 1) for name, count in uses.items() if name in args)


def _children(node: nodes.Node) -> Iterator[tuple[str, nodes.Node]]:
    """Each child node with the field it sits in."""
    for field in node.fields:
        value = getattr(node, field, None)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, nodes.Node):
                yield field, item


# --- recursion --------------------------------------------------------------------------------------------------


def _recursion(walked: list[nodes.Node]) -> Iterator[Issue]:
    """Macros on a call cycle where no call both sits under a condition and descends into an argument."""
    macros = [node for node in walked if isinstance(node, nodes.Macro)]
    names = {macro.name for macro in macros}
    edges: dict[str, set[str]] = {name: set() for name in names}
    lines: dict[str, int] = {}
    for macro in macros:
        lines.setdefault(macro.name, macro.lineno)
        scope = _MacroScope(macro)
        for call, guarded in _calls(macro):
            callee = call.node.name if isinstance(call.node, nodes.Name) else ""
            if callee in names and not (guarded and scope.descends(call)):
                edges[macro.name].add(callee)
    cyclic = _on_cycles(edges)
    if cyclic:
        first = min(cyclic, key=lambda name: lines[name])
        listed = ", ".join(sorted(cyclic)[:5])
        text = f"macro {first} calls itself" if cyclic == {first} else f"macros {listed} call each other"
        yield Issue("template.render_cost", {"name": f"{text} with no limit", "line": lines[first]})


Branch = tuple[int, str]  # an If or a conditional expression (by id) and the field a call sits in


def _branching(walked: list[nodes.Node]) -> Iterator[Issue]:
    """A macro that calls itself more than once a run on slices of what it was given (`f(s[1:])` twice, or in a
    loop): each level shrinks the data by a step and multiplies the calls, 2^n for n characters (review 45; a
    recursion into the parts of a tool schema calls itself once for each part, never twice on the same one)."""
    for macro in (node for node in walked if isinstance(node, nodes.Macro)):
        sites = [(path, looped) for call, path, looped in _self_calls(macro) if _sliced(call)]
        exclusive = all(_exclusive(a, b) for (a, _), (b, _) in combinations(sites, 2))
        if sites and (any(looped for _, looped in sites) or not exclusive):
            how = "in a loop" if any(looped for _, looped in sites) else f"{len(sites)} times a run"
            yield _issue(macro, f"macro {macro.name} calls itself {how} on slices of its argument")


def _self_calls(macro: nodes.Macro) -> Iterator[tuple[nodes.Call, tuple[Branch, ...], bool]]:
    """The macro's calls of itself, each with the branches it sits in and whether a loop repeats it."""
    stack: list[tuple[nodes.Node, tuple[Branch, ...], bool]] = [(child, (), False) for child in macro.body]
    while stack:
        node, path, looped = stack.pop()
        if isinstance(node, nodes.Macro):
            continue
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and node.node.name == macro.name:
            yield node, path, looped
        for field, child in _children(node):
            branch = isinstance(node, nodes.If | nodes.CondExpr) and field != "test"
            inner = (*path, (id(node), field)) if branch else path
            stack.append((child, inner, looped or (isinstance(node, nodes.For) and field == "body")))


def _exclusive(first: tuple[Branch, ...], second: tuple[Branch, ...]) -> bool:
    """Whether two calls sit in different branches of one condition, so one run makes only one of them."""
    taken = dict(first)
    return any(node in taken and taken[node] != field for node, field in second)


def _sliced(call: nodes.Call) -> bool:
    arguments = [*call.args, *(kw.value for kw in call.kwargs)]
    return any(next(argument.find_all(nodes.Slice), None) is not None for argument in arguments)


def _calls(macro: nodes.Macro) -> Iterator[tuple[nodes.Call, bool]]:
    """Every call in the macro's own body (not in macros defined inside it), and whether a condition guards it."""
    stack: list[tuple[nodes.Node, bool]] = [(child, False) for child in macro.body]
    while stack:
        node, guarded = stack.pop()
        if isinstance(node, nodes.Macro):
            continue
        if isinstance(node, nodes.Call):
            yield node, guarded
        conditional = CONDITIONAL_FIELDS.get(type(node), frozenset())
        stack.extend((child, guarded or field in conditional) for field, child in _children(node))


class _MacroScope:
    """A macro's parameters and the names it binds to parts of them (`set`, loops), to tell a descent into the
    data from a call that passes the same or a computed value."""

    def __init__(self, macro: nodes.Macro) -> None:
        self.params = {arg.name for arg in macro.args}
        self.defs: dict[str, list[tuple[nodes.Node, int]]] = {}  # name -> (expression, steps added)
        self.memo: dict[int, int | None] = {}
        stack: list[nodes.Node] = list(macro.body)
        while stack:
            node = stack.pop()
            if isinstance(node, nodes.Macro):
                continue
            if isinstance(node, nodes.Assign):
                self._bind(node.target, node.node, 0)
            elif isinstance(node, nodes.For):
                self._bind(node.target, node.iter, 1)
            stack.extend(child for _, child in _children(node))

    def _bind(self, target: nodes.Node, value: nodes.Node, steps: int) -> None:
        for name in target.find_all(nodes.Name) if not isinstance(target, nodes.Name) else [target]:
            self.defs.setdefault(name.name, []).append((value, steps + (0 if isinstance(target, nodes.Name) else 1)))

    def descends(self, call: nodes.Call) -> bool:
        """Whether some argument is a part of a parameter, not the parameter itself or a value computed anew."""
        arguments = [*call.args, *(kw.value for kw in call.kwargs)]
        return any((self.steps(arg) or 0) > 0 for arg in arguments)

    def steps(self, node: nodes.Node, depth: int = 0) -> int | None:
        """How many selections (attribute, item, element, selecting filter) lead from a parameter to the value;
        None when it is not reached from a parameter that way. Each node is judged once."""
        if depth > MAX_DEPTH:
            return None
        key = id(node)
        if key not in self.memo:
            self.memo[key] = None  # a name defined through itself adds nothing
            self.memo[key] = self._steps(node, depth)
        return self.memo[key]

    def _steps(self, node: nodes.Node, depth: int) -> int | None:
        if isinstance(node, nodes.Name):
            found = [0] if node.name in self.params else []
            for value, added in self.defs.get(node.name, []):
                inner = self.steps(value, depth + 1)
                if inner is not None:
                    found.append(inner + added)
            return max(found, default=None)
        if isinstance(node, nodes.Getattr | nodes.Getitem):
            return _plus(self.steps(node.node, depth + 1))
        if isinstance(node, nodes.Filter) and node.node is not None and node.name in SELECTING_FILTERS:
            return _plus(self.steps(node.node, depth + 1))
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr):
            if node.node.attr in SELECTING_METHODS:
                return _plus(self.steps(node.node.node, depth + 1))
            return None
        parts: list[nodes.Node] = []
        if isinstance(node, nodes.List | nodes.Tuple):
            parts = list(node.items)
        elif isinstance(node, nodes.Dict):
            parts = [pair.value for pair in node.items]
        elif isinstance(node, nodes.CondExpr):
            parts = [node.expr1, *([node.expr2] if node.expr2 is not None else [])]
        found = [s for s in (self.steps(part, depth + 1) for part in parts) if s is not None]
        return max(found, default=None)


def _plus(steps: int | None) -> int | None:
    return None if steps is None else steps + 1


def _on_cycles(edges: dict[str, set[str]]) -> set[str]:
    """The macros left after repeatedly dropping those that call none of the rest or are called by none of
    them: each lies on a cycle or between two. Linear, so a long chain of macros costs little."""
    callers: dict[str, set[str]] = {name: set() for name in edges}
    for name, callees in edges.items():
        for callee in callees:
            callers[callee].add(name)
    outgoing = {name: len(callees) for name, callees in edges.items()}
    incoming = {name: len(names) for name, names in callers.items()}
    alive = set(edges)
    queue = [name for name in edges if not outgoing[name] or not incoming[name]]
    while queue:
        name = queue.pop()
        if name not in alive:
            continue
        alive.discard(name)
        for callee in edges[name]:
            incoming[callee] -= 1
            if not incoming[callee]:
                queue.append(callee)
        for caller in callers[name]:
            outgoing[caller] -= 1
            if not outgoing[caller]:
                queue.append(caller)
    return alive
