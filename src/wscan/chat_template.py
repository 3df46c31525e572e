"""Chat templates judged by their Jinja syntax tree, never rendered.

Loaders render chat templates (in `tokenizer_config.json`, `chat_template.jinja`, GGUF metadata) in a Jinja
sandbox, and sandbox escapes start the same way: reach an attribute or name a chat never needs
(`__class__`, `__globals__`, `cycler.__init__`, `lipsum`, `self`, `config`, `popen`) or pull in other
templates. The source is parsed by Jinja's own parser, configured as transformers configures it, and the
tree is walked; nothing in it is evaluated, so a template cannot act on the scanner. One module, shared by
every format that carries templates. What rendering would cost (recursion, constant sizes) is `template_cost`'s:
llama.cpp renders the template while it loads the model, with no limits.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import chain, islice

from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateSyntaxError
from jinja2.ext import Extension
from jinja2.parser import Parser

from wscan.model import AttrValue, Issue
from wscan.template_cost import bound_names, render_costs
from wscan.template_keys import DATA_METHODS, KeySources
from wscan.template_scopes import context_reads

MAX_TEMPLATE_CHARS = 1024 * 1024  # real templates, tool-calling ones included, are under 64 KiB
FOLD_CHARS = 16 * MAX_TEMPLATE_CHARS  # constant strings folded to read names; longer ones are not built
OVERSIZED_NAME = "__<name built from more than 16 MiB of constants>__"  # may be private: reported as such
MAX_NODES = 200_000
MAX_ISSUES = 50
MAX_CALLEE_LINKS = 20  # attribute links named in a finding about a call

# Names a chat template reads that no chat template needs: template globals whose internals lead to Python
# (lipsum, cycler and joiner carry __init__.__globals__), objects other Jinja hosts expose (Flask's config,
# request, self), and Python names that only make sense in an escape.
SUSPICIOUS_NAMES = frozenset({
    "self", "config", "request", "session", "g", "url_for", "get_flashed_messages", "lipsum", "cycler",
    "joiner", "os", "sys", "subprocess", "builtins", "__builtins__", "import", "__import__", "eval", "exec",
    "open", "getattr", "globals", "locals", "vars", "importlib",
})
# Globals a template may call but never take apart: attribute access on the function object itself.
TEMPLATE_GLOBALS = frozenset({
    "namespace", "range", "dict", "lipsum", "cycler", "joiner", "raise_exception", "strftime_now",
})
# Attribute names that only matter when something reaches Python objects beyond strings, lists and dicts.
DANGEROUS_ATTRIBUTES = frozenset({
    "popen", "system", "spawn", "spawnl", "spawnv", "execv", "execl", "execve", "fork", "import_module",
    "load_module", "check_output", "getoutput", "communicate", "environ", "getenv", "putenv",
    "modules", "builtins", "f_globals", "f_locals", "f_back", "f_builtins", "gi_frame", "gi_code", "cr_frame",
    "tb_frame", "func_globals", "func_code", "im_func", "mro", "eval", "exec", "compile", "open", "getattr",
    "setattr", "delattr", "breakpoint",
})
# Filters that fetch an attribute by name from every item: which positional argument names it (None: only the
# `attribute=` keyword does). map's first argument is a filter's name: `map('attr', k)` is `|attr(k)` on each.
ATTRIBUTE_FILTERS: dict[str, int | None] = {"attr": 0, "selectattr": 0, "rejectattr": 0, "groupby": 0, "sort": 2,
                                            "map": None, "sum": None, "unique": None, "min": None, "max": None}
_FORMAT_FIELD = re.compile(r"\{[^{}]*?[.\[]\s*['\"]?_")
_FIELDS = re.compile(r"\{[^{}]*\}")
# Python's internals by name, in any string the template holds or builds: a name kept in a variable, a macro
# argument, a namespace or a filter's positional argument becomes an attribute lookup later (`''[c]`).
# The interpreter's frame, generator, coroutine, traceback and function attributes need no underscore in front:
# `(messages|map(attribute='role'))|attr('gi_frame')` is a generator's frame, whose `f_globals` hold `sys` when a
# host renders without a sandbox (llama-cpp-python before 0.2.72, CVE-2024-34359). No chat names them, as an
# attribute, a key, a filter's argument or a format field.
_INTERNAL_NAME = re.compile(
    r"__(class|base|bases|mro|subclasses|init|globals|builtins|import|getattribute|dict|code|func|self|reduce"
    r"|reduce_ex|closure|loader|spec|call|getitem|subclasshook|init_subclass|new)__"
    r"|\b(?:(?:gi|cr|ag)_(?:frame|code|yieldfrom|await)|f_(?:globals|locals|builtins|back|code)|tb_(?:frame|next)"
    r"|func_(?:globals|code|closure)|im_(?:func|self))\b"
)
_STRING_BUILDERS = (nodes.Concat, nodes.Add, nodes.Mul, nodes.Mod, nodes.Filter)
_WORDS = re.compile(r"\s")  # text with whitespace in it is prose or markup, never a name on its own
_WIDE = re.compile(r"%[^a-zA-Z%]*\d{3}")  # a conversion with a width or precision of 100 or more


class _Generation(Extension):
    """transformers' `{% generation %}` block, parsed into a plain scope (its body is still walked)."""

    tags = {"generation"}  # noqa: RUF012 - Jinja reads this class attribute

    def parse(self, parser: Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


# The parse-only environment: same syntax options and extensions as transformers' chat template environment.
_ENV = Environment(trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, "jinja2.ext.loopcontrols"])


def check_template(source: str, program_data: bool = False) -> list[Issue]:
    """Everything a chat template reaches for that a sandboxed chat never needs; empty for a clean template.

    `program_data`: the template is another program's (an HTML report), whose render context is that program's own
    data: a key read from there is the program's choice, and only names the template builds itself are judged."""
    parsed = _parse(source)
    if isinstance(parsed, Issue):
        return [parsed]
    tree, walked = parsed
    issues: dict[tuple[str, str], Issue] = {}
    if len(walked) > MAX_NODES:  # failed whatever it holds; Jinja's scoping is not worth compiling it for
        issues[("limit", "")] = Issue("template.node_limit", {"limit": MAX_NODES})
        sources = KeySources(walked, trust_context=program_data)
    else:
        sources = KeySources(walked, context_reads(tree, _ENV), trust_context=program_data)
    aliases = _global_aliases(walked, sources)
    owned = _Owned(walked, sources)
    found: Iterator[Issue] = (issue for node in walked for issue in _inspect(node, aliases, sources, owned))
    if len(walked) <= MAX_NODES:  # what rendering costs: llama.cpp renders the template while loading the model
        found = chain(found, render_costs(tree, walked, _fold, len(source)))
    kept: Counter[str] = Counter()
    for issue in found:  # capped per kind: fifty computed calls (high) once hid a dunder (critical) after them
        key = (issue.kind, str(issue.attrs.get("name", "")))
        if key not in issues and kept[issue.kind] < MAX_ISSUES:
            issues[key] = issue
            kept[issue.kind] += 1
    return list(issues.values())


def names_internals(text: str) -> bool:
    """Whether `text` names a dunder or the interpreter's frame and function attributes (`gi_frame`, `f_globals`)."""
    return _INTERNAL_NAME.search(text) is not None


def context_names(source: str) -> set[str] | None:
    """The names a template reads from its render context (where Jinja's scoping may resolve them there:
    `template_scopes`), or None when it does not parse or is too large to walk: a caller then treats it as a chat
    template, whose checks report why. (jinja2.meta compiles the template, and fails on another program's
    filters.)"""
    parsed = _parse(source)
    if isinstance(parsed, Issue) or len(parsed[1]) > MAX_NODES:
        return None
    tree, walked = parsed
    reads = context_reads(tree, _ENV)
    if reads is None:
        return None
    return {node.name for node in walked if isinstance(node, nodes.Name) and id(node) in reads}


def _parse(source: str) -> tuple[nodes.Template, list[nodes.Node]] | Issue:
    """The template's tree and its nodes (one past MAX_NODES at most), or why it cannot be read."""
    if len(source) > MAX_TEMPLATE_CHARS:
        return Issue("template.size_limit", {"length": len(source), "limit": MAX_TEMPLATE_CHARS})
    try:
        tree = _ENV.parse(source)
    except TemplateSyntaxError as exc:
        return Issue("template.malformed", {"reason": str(exc.message)[:200], "line": exc.lineno})
    except RecursionError:  # renderers parse deeper than this stack allows: never a pass for a deep template
        return Issue("template.node_limit", {"limit": "nesting the parser can follow"})
    return tree, list(islice(_walk(tree), MAX_NODES + 1))


def _walk(tree: nodes.Node) -> Iterator[nodes.Node]:
    """Every node, depth first, without recursion (a deep tree must not overflow the scanner's stack)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(list(node.iter_child_nodes())))


def _global_aliases(walked: list[nodes.Node], sources: KeySources) -> set[int]:
    """The name loads that are a template global: its own name read from the context, or a name set to one
    (`{% set n = namespace %}`, then every load of `n`)."""
    loads = [node for node in walked if isinstance(node, nodes.Name) and node.ctx == "load"]
    aliases = {id(n) for n in loads if n.name in TEMPLATE_GLOBALS and sources.from_context(n)}
    pairs: list[tuple[nodes.Node, nodes.Node]] = []  # (target, the value it is set to)
    for node in walked:
        if isinstance(node, nodes.With):
            pairs.extend(zip(node.targets, node.values, strict=False))
        if isinstance(node, nodes.Assign):
            pairs.append((node.target, node.node))
    named = [(target.name, value) for target, value in pairs if isinstance(target, nodes.Name)]
    names: set[str] = set()
    while True:  # each round adds a name or ends: a chain n = m = namespace settles in as many rounds
        new = {name for name, value in named if id(value) in aliases and name not in names}
        if not new:
            return aliases
        names |= new
        aliases |= {id(n) for n in loads if n.name in new}


def _issue(kind: str, node: nodes.Node, **attrs: AttrValue) -> Issue:
    return Issue(kind, {**attrs, "line": node.lineno})


def _only_set_to(walked: list[nodes.Node], made: Callable[[nodes.Node], bool]) -> frozenset[str]:
    """Names every binding of which (set, loops, parameters, ...) is a `{% set name = value %}` with `made(value)`."""
    bound = bound_names(walked)
    counts = Counter(node.target.name for node in walked
                     if isinstance(node, nodes.Assign) and isinstance(node.target, nodes.Name) and made(node.node))
    return frozenset(name for name, count in counts.items() if bound[name] == count)


def _is_namespace_call(value: nodes.Node) -> bool:
    return isinstance(value, nodes.Call) and isinstance(value.node, nodes.Name) and value.node.name == "namespace"


# Names Jinja binds itself: a macro that reads `caller` takes it from any call's `caller=` keyword (review 54 passed a
# macro there and went on through its __init__ to os.popen), a loop binds `loop`, a macro `varargs` and `kwargs`.
IMPLICIT_NAMES = frozenset({"caller", "loop", "varargs", "kwargs", "self"})


class _Owned:
    """What the template makes itself, and what it calls."""

    def __init__(self, walked: list[nodes.Node], sources: KeySources) -> None:
        # Names only ever set to `namespace(...)`: their attributes are the template's own keys (`ns.system` holds
        # the system prompt it collects), not Python objects' (review 48).
        self.namespaces = frozenset() if bound_names(walked)["namespace"] else _only_set_to(walked, _is_namespace_call)
        # Names only ever set to a dict or list it writes out (`{% set roles = {'user': ...} %}`): looking one up by a
        # key the chat controls (`roles[message.role]`) reads the template's own entries. A key no entry has falls
        # through to an attribute of dict or list, which the sandbox refuses when it starts with `_`, and which
        # without one is a method, harmless unless taken further (that lookup is judged on its own).
        self.tables = _only_set_to(walked, lambda value: isinstance(value, nodes.Dict | nodes.List)) - IMPLICIT_NAMES
        self.sources = sources
        self.called = {id(node.node) for node in walked if isinstance(node, nodes.Call)}  # what calls call

    def table(self, node: nodes.Node) -> bool:
        """Whether `node` is a dict or list the template writes out, directly or by a name only ever set to one that
        Jinja resolves to that binding here (not to the render context, where the binding does not reach)."""
        if isinstance(node, nodes.Dict | nodes.List):
            return True
        return isinstance(node, nodes.Name) and node.name in self.tables and not self.sources.from_context(node)


def _inspect(node: nodes.Node, aliases: set[int], sources: KeySources, owned: _Owned) -> Iterator[Issue]:
    if (isinstance(node, nodes.Const) and isinstance(node.value, str)) or isinstance(node, _STRING_BUILDERS):
        text = node.value if isinstance(node, nodes.Const) else _fold(node)
        # A name, or a dotted path, on its own: prose that mentions `__init__.py` is not a lookup, but a format
        # field in prose is (`('x {0.gi_frame} y'|attr('format'))(g)`).
        if isinstance(text, str):
            found = _INTERNAL_NAME.search(text if not _WORDS.search(text) else " ".join(_FIELDS.findall(text)))
            if found is not None:
                yield _issue("template.dunder_access", node, name=found.group(0))
    if isinstance(node, nodes.Getattr):
        own = isinstance(node.node, nodes.Name) and node.node.name in owned.namespaces
        yield from _attribute(node, node.attr, dangerous=not own)
        if node.attr in ("format", "format_map") and id(node) not in owned.called:
            # str.format kept to call later, where the check of its format string (`_call`) cannot see it (review 57)
            yield _issue("template.computed_attribute", node, name=f"<{node.attr} method kept as a value>")
        if isinstance(node.node, nodes.Name) and id(node.node) in aliases:
            yield _issue("template.global_internals", node, name=f"{node.node.name}.{node.attr}")
    elif isinstance(node, nodes.Getitem):
        yield from _computed_key(node, node.arg, sources, owned.table(node.node))
        if isinstance(node.node, nodes.Name) and id(node.node) in aliases:
            yield _issue("template.global_internals", node, name=f"{node.node.name}[...]")
    elif isinstance(node, nodes.Filter):
        yield from _filter(node, sources)
    elif isinstance(node, nodes.Name) and node.ctx == "load":
        if node.name in SUSPICIOUS_NAMES and sources.from_context(node):
            yield _issue("template.suspicious_name", node, name=node.name)
    elif isinstance(node, nodes.Import | nodes.FromImport | nodes.Include | nodes.Extends):
        yield _issue("template.loader_tag", node, name=type(node).__name__.lower())
    elif isinstance(node, nodes.Call):
        yield from _call(node, sources)


def _call(node: nodes.Call, sources: KeySources) -> Iterator[Issue]:
    for keyword in node.kwargs:  # dict(__init__=1)|list spells the name without a string
        if keyword.key.startswith("_"):
            yield _issue("template.dunder_access", node, name=keyword.key)
    target = node.node
    if isinstance(target, nodes.Getattr):
        called = target.attr not in DATA_METHODS and sources.fetches(target.node)
    else:
        called = sources.fetches(target)
    if called:
        # `x[k](...)`: whatever the key (the chat's own text too: a user's message can name `popen`), the call
        # runs what the lookup found. Templates call macros, globals and the methods of strings, lists and
        # dicts, never other values looked up by a computed name.
        yield _issue("template.computed_call", node, name=_callee(target))
    if isinstance(target, nodes.Getattr) and target.attr in ("format", "format_map"):
        # str.format reads attributes and items named in its fields: `'{0.__class__}'.format(x)`
        text = target.node.value if isinstance(target.node, nodes.Const) else _fold_name(target.node)
        if isinstance(text, str):
            if text is OVERSIZED_NAME or _FORMAT_FIELD.search(text):
                yield _issue("template.dunder_access", node, name=f"format string {text[:60]!r}")
        elif sources.contains(target.node):
            yield _issue("template.computed_attribute", node, name="<format string built at render time>")


def _callee(target: nodes.Node) -> str:
    """What a call calls, as the template spells it (`x.y[...]`), in a loop: Jinja parses a chain of any length
    (review 45: 1,000 links overflowed the stack of a recursive reading, and the template's other findings went)."""
    parts: list[str] = []
    node = target
    while isinstance(node, nodes.Getattr) and len(parts) < MAX_CALLEE_LINKS:
        parts.append(f".{node.attr}")
        node = node.node
    if isinstance(node, nodes.Getattr):
        head = "<...>"
    elif isinstance(node, nodes.Name):
        head = node.name
    elif isinstance(node, nodes.Getitem):
        head = f"{node.node.name}[...]" if isinstance(node.node, nodes.Name) else "<lookup>[...]"
    else:
        head = f"<{type(node).__name__.lower()}>"
    return head + "".join(reversed(parts))


def _attribute(node: nodes.Node, name: str, dangerous: bool = False) -> Iterator[Issue]:
    """A private or special name; with `dangerous`, also an attribute only reached past Python's internals
    (`x.popen`). A subscript's constant key is left alone there: `roles['system']` is a dict lookup."""
    if name.startswith("_") or _INTERNAL_NAME.fullmatch(name):
        yield _issue("template.dunder_access", node, name=name)
    elif dangerous and name in DANGEROUS_ATTRIBUTES:
        yield _issue("template.dangerous_attribute", node, name=name)


def _computed_key(node: nodes.Node, key: nodes.Node, sources: KeySources, own_table: bool) -> Iterator[Issue]:
    """`x['__class__']` or `x['__cla' ~ 'ss__']`: a string key is an attribute lookup in Jinja. A key the template
    assembles, there or through names, a macro's parameters and the like (template_keys), may be any name, except as
    a key into a table the template writes out itself (`_Owned.tables`): real templates map a role or a language code
    to text so (review 53 found four)."""
    if isinstance(key, nodes.Const):
        if isinstance(key.value, str):
            yield from _attribute(node, key.value)
        return
    folded = _fold_name(key)
    if folded is not None:
        yield _issue("template.computed_attribute", node, name=folded[:80])
        yield from _attribute(node, folded)
    elif own_table:
        return
    elif sources.starts(key):
        yield _issue("template.computed_attribute", node, name="<may start with _ at render time>")
    elif sources.splices(key):  # `'gi' ~ u ~ 'frame'`: a frame attribute has its underscore inside
        yield _issue("template.computed_attribute", node, name="<may hold _ at render time>")


def _filter(node: nodes.Filter, sources: KeySources) -> Iterator[Issue]:
    """The attribute names a filter fetches: constants segment by segment (`map(attribute='a.__class__')`), and
    names computed at render time, which may be anything."""
    if node.name not in ATTRIBUTE_FILTERS:
        return
    position = ATTRIBUTE_FILTERS[node.name]
    names = [kw.value for kw in node.kwargs if kw.key == "attribute"]
    if position is not None and len(node.args) > position:
        names.append(node.args[position])
    direct = node.name == "attr"
    if node.name == "map" and node.args:
        chosen = node.args[0]  # the filter map applies
        direct = isinstance(chosen, nodes.Const) and chosen.value == "attr"
        if not (isinstance(chosen, nodes.Const) and isinstance(chosen.value, str)):
            yield _issue("template.computed_attribute", node, name="<map filter chosen at render time>")
        elif chosen.value == "attr" and len(node.args) > 1:
            names.append(node.args[1])
    for value in names:
        text = value.value if isinstance(value, nodes.Const) else _fold_name(value)
        if isinstance(text, str):
            if not isinstance(value, nodes.Const):
                yield _issue("template.computed_attribute", node, name=text[:80])
            for segment in text.split("."):  # |attr is getattr alone: `|attr('system')` is never a dict's key
                yield from _attribute(node, segment, dangerous=direct)
        elif not isinstance(value, nodes.Const) and (direct or sources.contains(value)):
            # |attr with a name computed at render time: nothing a chat needs (it looks up fields by constants).
            yield _issue("template.computed_attribute", node, name="<attribute name built at render time>")


class _Oversized(Exception):
    """A constant string longer than FOLD_CHARS: not built, and read as no name at all."""


def _fold(node: nodes.Node) -> str | None:
    """The string an expression built only from string constants evaluates to, or None (also past FOLD_CHARS)."""
    try:
        return _folded(node)
    except _Oversized:
        return None


def _fold_name(node: nodes.Node) -> str | None:
    """`_fold` for a name a template looks up. One built from more than FOLD_CHARS of constants is not built
    (`'x'*64*64*64*64*64` is 1 GiB), so it may be any name, a private one too: it is returned as one."""
    try:
        return _folded(node)
    except _Oversized:
        return OVERSIZED_NAME


def _folded(node: nodes.Node, depth: int = 0) -> str | None:
    """`_fold`, raising _Oversized before it builds a string past FOLD_CHARS."""
    if depth > 50:
        return None
    if isinstance(node, nodes.Const):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, nodes.Concat | nodes.List | nodes.Tuple):
        parts = [_folded(n, depth + 1) for n in (node.nodes if isinstance(node, nodes.Concat) else node.items)]
        return _joined(parts)
    if isinstance(node, nodes.Add):
        return _joined([_folded(node.left, depth + 1), _folded(node.right, depth + 1)])
    if isinstance(node, nodes.Mul) and isinstance(node.right, nodes.Const) and isinstance(node.right.value, int):
        left, times = _folded(node.left, depth + 1), node.right.value  # '_' * 2
        if left is None or not 0 <= times <= 64:
            return None
        _within(len(left) * times)
        return left * times
    if isinstance(node, nodes.Filter) and node.node is not None:
        return _fold_filter(node, depth)
    if isinstance(node, nodes.Mod):  # 'x%sy' % 'z', '%c' % 95
        text = _folded(node.left, depth + 1)
        items = node.right.items if isinstance(node.right, nodes.Tuple) else [node.right]
        return None if text is None else _percent(text, items, depth)
    return None


def _within(length: int) -> None:
    if length > FOLD_CHARS:
        raise _Oversized


def _joined(parts: list[str | None]) -> str | None:
    if any(p is None for p in parts):
        return None
    _within(sum(len(p) for p in parts if p is not None))
    return "".join(p for p in parts if p is not None)


def _fold_filter(node: nodes.Filter, depth: int) -> str | None:
    assert node.node is not None
    inner = _folded(node.node, depth + 1)
    if inner is None:
        return None
    if node.name in ("join", "string"):
        return inner
    if node.name in ("trim", "lower", "upper"):
        return inner.strip() if node.name == "trim" else inner.lower() if node.name == "lower" else inner.upper()
    if node.name == "reverse":
        return inner[::-1]
    if node.name == "format" and node.args and not node.kwargs:
        return _percent(inner, node.args, depth)
    if node.name == "replace" and len(node.args) >= 2:
        old, new = _folded(node.args[0], depth + 1), _folded(node.args[1], depth + 1)
        if old is None or new is None:
            return None
        grows = (inner.count(old) if old else len(inner) + 1) * max(0, len(new) - len(old))
        _within(len(inner) + grows)
        return inner.replace(old, new)
    return None


def _percent(text: str, items: list[nodes.Expr], depth: int) -> str | None:
    """`text % items` for constant strings and small integers (`'%c' % 95` is an underscore)."""
    args: list[str | int] = []
    for item in items:
        if isinstance(item, nodes.Const) and isinstance(item.value, int) and 0 <= item.value < 0x110000:
            args.append(item.value)
            continue
        folded = _folded(item, depth + 1)
        if folded is None:
            return None
        args.append(folded)
    if len(text) > 1000 or text.count("%") > 100 or _WIDE.search(text):
        return None  # '%99999999s' would build a string of that width here
    _within(len(text) + sum(len(arg) for arg in args if isinstance(arg, str)))
    try:
        return text % tuple(args)
    except (TypeError, ValueError, OverflowError):
        return None
