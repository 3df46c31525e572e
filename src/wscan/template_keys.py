"""Which lookup keys in a chat template may start with an underscore when it is rendered.

Every way from a chat template to Python's internals goes through a name that starts with an underscore
(`__init__`, `__globals__`, a macro's `_environment`), looked up at render time: a subscript (`x[k]`, which Jinja
falls back to getattr for), an attribute filter (`|attr(k)`, `map(attribute=k)`, `groupby(k)`, ...) or a format
string's field (`'{0.__class__}'`). A key written as a constant is read as it is. A key computed at render time is
judged by where its value comes from, tracked through names (`set`, `with`, loops, namespace attributes):

- the chat the caller passes (`messages`, `tools`, ...), and what the template derives from it by lookups and
  filters, is the caller's, not the template's: safe as a key;
- numbers, and strings built from a first piece that is a constant not starting with `_` (`"call_" ~ i`): safe;
- everything else: strings the template builds (`'%c'|format(95)`, `u ~ u`, a macro's output, a `{% set %}`
  block, keyword-argument names turned into a list), macro and call-block parameters (`varargs` too), special
  tokens and other values the tokenizer config supplies (an attacker writes those as well): may be anything.

Unsandboxed renderers (llama-cpp-python before 0.2.72, CVE-2024-34359) run whatever such a key reaches, so one is
reported however innocent it may be; real templates index with constants, numbers and the chat's own fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from jinja2 import nodes

# What the caller of apply_chat_template (or a server) passes: the conversation and its options. Anything else
# the template reads unbound (bos_token, eos_token, other tokenizer config values) is the model author's.
CHAT_DATA = frozenset({
    "messages", "tools", "documents", "custom_tools", "builtin_tools", "tools_in_user_message", "tool_choice",
    "add_generation_prompt", "continue_final_message", "enable_thinking", "thinking", "reasoning_effort",
    "date_string", "loop", "conversation", "chat", "message", "system_message",
    # Guard models' documented render options: Llama Guard 3's categories, Granite Guardian's guardian_config.
    "categories", "excluded_category_keys", "guardian_config",
})  # fmt: skip
# Callables a template may call whose result is never a name: numbers, dates, nothing.
PLAIN_CALLS = frozenset({"range", "strftime_now", "raise_exception"})
LOOP_COUNTERS = frozenset({"index", "index0", "revindex", "revindex0", "length", "depth", "depth0"})
NUMBER_FILTERS = frozenset({"int", "float", "abs", "round", "length", "count", "filesizeformat", "wordcount"})
# Filters whose result is an int or float (filesizeformat makes text), but for `int` and `float`, which return their
# default when the value does not convert (`_filter_defaults`).
COUNT_FILTERS = NUMBER_FILTERS - {"filesizeformat"}
DEFAULTED_FILTERS = frozenset({"int", "float"})
# Filters whose arguments can end up in the result (`replace`'s new text, `join`'s separator, `default`'s value);
# the others' arguments name attributes or tests.
OUTPUT_ARGUMENT_FILTERS = frozenset({"replace", "join", "default", "d", "format", "indent", "truncate", "wordwrap",
                                     "center", "map", "batch", "slice", "sum", "xmlattr"})  # fmt: skip
# Filters that turn their input into text (`str()` of an object): a Python object's text has the underscores of its
# type's name (`{}.items()|string` is 'dict_items([])', `(messages|map('x'))|string` '<generator object ...>'),
# which a template can cut out (review 47 built `gi_frame` so, in an unsandboxed renderer).
TEXT_FILTERS = frozenset({"string", "pprint", "e", "escape", "forceescape", "join", "lower", "upper", "title",
                          "capitalize", "trim", "replace", "truncate", "wordwrap", "center", "indent", "striptags",
                          "urlize", "urlencode", "list", "first", "last", "reverse", "batch", "slice"})  # fmt: skip
# ... and what makes such objects: filters that return generators, and the template globals (functions, classes).
GENERATOR_FILTERS = frozenset({"map", "select", "reject", "selectattr", "rejectattr", "batch", "slice", "groupby",
                               "dictsort", "items"})  # fmt: skip
# Filters that hand on items of their input as they are: an object in a list stays one.
PICKING_FILTERS = frozenset({"first", "last", "random", "min", "max", "list", "reverse", "sort", "unique", "join",
                             "string", "batch", "slice"})  # fmt: skip
OBJECT_GLOBALS = frozenset({"namespace", "range", "dict", "lipsum", "cycler", "joiner", "raise_exception",
                            "strftime_now", "loop", "caller", "self"})  # fmt: skip
# Methods of str, list and dict: what templates call on the chat's own values (`m.content.strip()`).
DATA_METHODS = frozenset({
    "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format", "format_map",
    "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric",
    "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "partition",
    "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip",
    "split", "splitlines", "startswith", "strip", "swapcase", "title", "upper", "zfill", "append", "extend",
    "insert", "pop", "remove", "reverse", "sort", "copy", "clear", "get", "items", "keys", "values",
    "setdefault", "update", "popitem",
})
# ... of which these return views whose text names their type ('dict_items([])'); the others' text names none.
TEXT_METHODS = DATA_METHODS - {"items", "keys", "values"}
# Filters that fetch an attribute by a name they are given (`map(attribute=k)`, `sum(attribute=k)`, `groupby(k)`):
# what they return is what that name looked up, like `x|attr(k)`.
ATTRIBUTE_FETCHERS = frozenset({"attr", "map", "sum", "groupby"})
MAX_ROUNDS = 20  # of the fixpoint over bindings; real templates settle in two or three
MAX_DEPTH = 60  # of one expression


class KeySources:
    """Where every name a template binds gets its values from, resolved once for the whole template. Three facts
    per name: its value may start with `_` (`loose`), it may hold a `_` anywhere (`underscored`: a piece of it,
    `s[1]`, or a loop over it, may then be one), and it may be an object looked up by a computed name
    (`fetched`)."""

    def __init__(
        self, walk: Iterable[nodes.Node], context_reads: set[int] | None = None, trust_context: bool = False
    ) -> None:
        """`context_reads`: the name loads Jinja resolves from the render context (`template_scopes`); without it
        a name the template binds anywhere is taken to be bound everywhere. `trust_context`: every name the context
        gives is the caller's, as CHAT_DATA's are in a chat (another program's template, rendered with its data)."""
        self.context_reads = context_reads
        self.trust_context = trust_context
        bindings: list[tuple[list[str], nodes.Node | None, bool]] = []  # names, value (None: anything), a loop?
        statements = list(walk)
        macros = {node.name: node for node in statements if isinstance(node, nodes.Macro)}
        for node in statements:
            bindings.extend(_bindings(node))
            if isinstance(node, nodes.Call):
                bindings.extend(_arguments(node, macros, statements))
                bindings.extend(_mutations(node))
        self.bound = {name for names, _, _ in bindings for name in names} | {"varargs", "kwargs"}
        self.loose: set[str] = {"varargs", "kwargs"}
        self.underscored: set[str] = {"varargs", "kwargs"}
        self.fetched: set[str] = {"varargs", "kwargs"}
        # Names every binding of which is a number (`for i in range(n)`, `set k = k + 1` from `set k = 0`): the
        # largest such set, so a name counting on itself stays a number. A number as a key never names an attribute.
        self.numeric = set(self.bound) - {"varargs", "kwargs"} - set(macros)  # a macro's name is the macro
        changed = True
        while changed:
            wrong = {name for names, value, loop in bindings for name in names
                     if name in self.numeric and not self._numbers(value, loop)}  # fmt: skip
            self.numeric -= wrong
            changed = bool(wrong)
        for _ in range(MAX_ROUNDS):  # until nothing changes: a name set from a name set from ...
            before = len(self.loose) + len(self.underscored) + len(self.fetched)
            for names, value, loop in bindings:
                inner = value is None or self.contains(value)
                if value is None or (inner if loop else self.starts(value)):  # a loop's items are pieces
                    self.loose.update(names)
                if inner:
                    self.underscored.update(names)
                if value is None or self.fetches(value):  # a loop over a fetched object: its items too
                    self.fetched.update(names)
            if len(self.loose) + len(self.underscored) + len(self.fetched) == before:
                break
        else:  # still changing: a chain no real template has, so every name may be anything
            self.loose |= self.bound
            self.underscored |= self.bound
            self.fetched |= self.bound

    def starts(self, node: nodes.Node, depth: int = 0) -> bool:
        """Whether the expression may evaluate to a string that starts with `_`, by the template's choice."""
        if depth > MAX_DEPTH:
            return True
        deeper = depth + 1
        if isinstance(node, nodes.Const):
            return isinstance(node.value, str) and node.value.startswith("_")
        if isinstance(node, nodes.Name):
            return self._name(node, self.loose)
        if isinstance(node, nodes.Getattr):
            own = _attribute_name(node)
            if own in self.bound and own in self.loose:
                return True
            return self.contains(node.node, deeper) if own not in self.bound or self._outer(node.node) else False
        if isinstance(node, nodes.Getitem):
            return self.contains(node.node, deeper) or (not _number(node.arg) and self.starts(node.arg, deeper))
        if isinstance(node, nodes.Concat):
            return self._first_piece(node.nodes, deeper)
        if isinstance(node, nodes.Add):
            return self._first_piece([node.left, node.right], deeper)
        if isinstance(node, nodes.Mod):
            return self._percent(node.left, [node.right], deeper)
        if isinstance(node, nodes.Filter) and node.name == "format" and node.node is not None:
            return self._percent(node.node, node.args, deeper)
        if isinstance(node, nodes.CondExpr):
            return any(n is not None and self.starts(n, deeper) for n in (node.expr1, node.expr2))
        if isinstance(node, nodes.Or | nodes.And):  # either side's value
            return self.starts(node.left, deeper) or self.starts(node.right, deeper)
        return self.contains(node, deeper)  # filters, calls, lists, ...: a `_` anywhere may come first

    def contains(self, node: nodes.Node, depth: int = 0) -> bool:
        """Whether the expression may evaluate to something with a `_` in it that the template chose."""
        if depth > MAX_DEPTH:
            return True
        deeper = depth + 1
        if isinstance(node, nodes.Const):
            return isinstance(node.value, str) and "_" in node.value
        if isinstance(node, nodes.Name):
            return self._name(node, self.underscored)
        if isinstance(node, nodes.Getattr):
            own = _attribute_name(node)
            if own in self.bound and own in self.underscored:
                return True
            return self.contains(node.node, deeper) if own not in self.bound or self._outer(node.node) else False
        if isinstance(node, nodes.Getitem):
            return self.contains(node.node, deeper) or (not _number(node.arg) and self.contains(node.arg, deeper))
        if isinstance(node, nodes.Mod):
            return True  # '%c' % 95
        if isinstance(node, nodes.Filter):
            if node.name in NUMBER_FILTERS:  # `int` and `float` give their default when the value is not a number
                return any(self.contains(d, deeper) for d in _filter_defaults(node))
            if node.name == "format":
                return True
            if node.name in TEXT_FILTERS and node.node is not None and self.object_text(node.node):
                return True
            values = [node.node] if node.node is not None else []
            if node.name in OUTPUT_ARGUMENT_FILTERS:  # arguments that end up in the result
                values += [*node.args, *(kw.value for kw in node.kwargs)]
            return any(self.contains(value, deeper) for value in values)
        if isinstance(node, nodes.Call):
            return self._call(node, deeper)
        if isinstance(node, nodes.CondExpr):
            return any(n is not None and self.contains(n, deeper) for n in (node.expr1, node.expr2))
        if isinstance(node, nodes.Concat):  # `~` is str() of each piece
            return any(self.contains(piece, deeper) or self.object_text(piece) for piece in node.nodes)
        if isinstance(node, nodes.BinExpr):  # + - * / // % ** and/or: any side's text may pass through
            return self.contains(node.left, deeper) or self.contains(node.right, deeper)
        if isinstance(node, nodes.List | nodes.Tuple):
            return any(self.contains(item, deeper) for item in node.items)
        if isinstance(node, nodes.Dict):
            return any(self.contains(p.key, deeper) or self.contains(p.value, deeper) for p in node.items)
        return False  # numbers, comparisons, tests, slices

    def splices(self, node: nodes.Node, depth: int = 0) -> bool:
        """Whether the expression joins pieces one of which may start with `_` by the template's choice: a name with
        an underscore inside (`'gi' ~ u ~ 'frame'`, u cut from an object's text: review 47)."""
        if depth > MAX_DEPTH:
            return True
        if isinstance(node, nodes.Concat):
            pieces = list(node.nodes)
        elif isinstance(node, nodes.Add):
            pieces = [node.left, node.right]
        else:
            return False
        return any(self.starts(piece, depth + 1) or self.splices(piece, depth + 1) for piece in pieces)

    def object_text(self, node: nodes.Node) -> bool:
        """Whether the expression may be an object that is not text, a number or the chat's data, whose text then
        names its type: a call's result (but a string method's), a generator from a filter, a template global."""
        if isinstance(node, nodes.Call):
            target = node.node
            plain = isinstance(target, nodes.Name) and target.name in PLAIN_CALLS and target.name not in self.bound
            return not plain and not (isinstance(target, nodes.Getattr) and target.attr in TEXT_METHODS)
        if isinstance(node, nodes.Filter):
            # ... or one taken out of a list of them (`[{}.items()]|join` is 'dict_items([])': review 57)
            picked = node.name in PICKING_FILTERS and node.node is not None and self.object_text(node.node)
            return node.name in GENERATOR_FILTERS or picked
        if isinstance(node, nodes.List | nodes.Tuple):
            return any(self.object_text(item) for item in node.items)
        if isinstance(node, nodes.Name) and node.ctx == "load":
            return node.name in OBJECT_GLOBALS and node.name not in self.bound
        return False

    def fetches(self, node: nodes.Node, depth: int = 0) -> bool:
        """Whether the expression's value may be an object looked up by a name chosen at render time (`x[k]`,
        `x|attr(k)`, anything reached from one): calling it may call anything, whoever chose the name."""
        if depth > MAX_DEPTH:
            return True
        deeper = depth + 1
        if isinstance(node, nodes.Name):
            return node.name in self.bound and node.name in self.fetched
        if isinstance(node, nodes.Getitem):
            keyed = not isinstance(node.arg, nodes.Const | nodes.Slice) and not self.number(node.arg)
            return keyed or self.fetches(node.node, deeper)
        if isinstance(node, nodes.Filter):
            names = [*node.args, *(kw.value for kw in node.kwargs if kw.key == "attribute")]
            if node.name == "map":  # map('attr', k) or map(attribute=k); map('upper') names a filter
                names = names[1:2] if node.args and _is_attr_filter(node.args[0]) else names[len(node.args):]
            computed = node.name in ATTRIBUTE_FETCHERS and not all(isinstance(arg, nodes.Const) for arg in names)
            # `none|default(x[k], true)` is x[k]: what the filter is given may be what it returns (review 57)
            return computed or (node.node is not None and self.fetches(node.node, deeper)) or any(
                self.fetches(value, deeper) for value in _passed(node)
            )
        if isinstance(node, nodes.Call):
            # A call may hand back what it is given: namespace({'run': x[k]}) and dict(**{...}) keep it (review 57),
            # loop.cycle(x[k]) and cycler(x[k]).next() return it, d.get(k, x[k]) may (review 58)
            return self.fetches(node.node, deeper) or any(self.fetches(value, deeper) for value in _passed(node))
        if isinstance(node, nodes.Getattr) and _attribute_name(node) in self.fetched:
            return True  # `{% set ns.v = x[k] %}`, then `ns.v`: what the attribute was set to (review 54)
        if isinstance(node, nodes.Getattr):
            return self.fetches(node.node, deeper)
        if isinstance(node, nodes.CondExpr):
            return any(n is not None and self.fetches(n, deeper) for n in (node.expr1, node.expr2))
        if isinstance(node, nodes.Or | nodes.And):
            return self.fetches(node.left, deeper) or self.fetches(node.right, deeper)
        if isinstance(node, nodes.List | nodes.Tuple):
            return any(self.fetches(item, deeper) for item in node.items)
        if isinstance(node, nodes.Dict):
            return any(self.fetches(pair.value, deeper) for pair in node.items)
        return False

    def number(self, node: nodes.Node, depth: int = 0) -> bool:
        """Whether the expression is certainly a number (never a string, so never an attribute's name): a numeric
        constant, a count or length, arithmetic on numbers, a loop's counters, a name bound only to numbers."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, nodes.Const):
            return isinstance(node.value, int | float)
        if isinstance(node, nodes.Name):
            return node.name in self.numeric and not self.from_context(node)
        if isinstance(node, nodes.Getattr):  # Jinja's loop object, when the template never rebinds `loop`
            return (isinstance(node.node, nodes.Name) and node.node.name == "loop" and "loop" not in self.bound
                    and node.attr in LOOP_COUNTERS)  # fmt: skip
        if isinstance(node, nodes.Filter):
            return node.name in COUNT_FILTERS and all(self.number(d, depth + 1) for d in _filter_defaults(node))
        if isinstance(node, nodes.Neg | nodes.Pos):
            return self.number(node.node, depth + 1)
        if isinstance(node, nodes.Add | nodes.Sub | nodes.Mul | nodes.Div | nodes.FloorDiv | nodes.Pow | nodes.Mod):
            return self.number(node.left, depth + 1) and self.number(node.right, depth + 1)  # 'popen' * 1 is text
        return False

    def _numbers(self, value: nodes.Node | None, loop: bool) -> bool:
        """Whether a binding gives its names only numbers: a number, or the items of `range(...)`."""
        if value is None:
            return False
        if loop:
            return (isinstance(value, nodes.Call) and isinstance(value.node, nodes.Name) and value.node.name == "range"
                    and "range" not in self.bound)  # fmt: skip
        return self.number(value)

    def from_context(self, node: nodes.Name) -> bool:
        """Whether this load of a name may read the render context (a template global, the caller's variable, a
        tokenizer config value) rather than only what the template bound to it."""
        if self.context_reads is None:
            return node.name not in self.bound
        return id(node) in self.context_reads

    def _name(self, node: nodes.Name, facts: set[str]) -> bool:
        """A name's values: those of its bindings, and the context's where Jinja may resolve it from there."""
        bound = node.name in self.bound and node.name in facts
        return bound or (self.from_context(node) and not self.trust_context and node.name not in CHAT_DATA)

    def _outer(self, node: nodes.Node) -> bool:
        """Whether `node` is a name that may come from the context here (its namespace attributes with it)."""
        return isinstance(node, nodes.Name) and self.context_reads is not None and id(node) in self.context_reads

    def _first_piece(self, pieces: list[nodes.Expr], depth: int) -> bool:
        """A concatenation starts with its first non-empty piece: safe when that is a constant without a leading
        `_`. Any other start (even the chat's own text, which may be empty) is judged by the rest too."""
        for index, piece in enumerate(pieces):
            if isinstance(piece, nodes.Const) and piece.value == "":
                continue
            if isinstance(piece, nodes.Const) and isinstance(piece.value, str | int | float):
                return str(piece.value).startswith("_")
            return self.starts(piece, depth) or any(self.contains(p, depth) for p in pieces[index + 1 :])
        return False

    def _percent(self, text: nodes.Node, arguments: list[nodes.Expr], depth: int) -> bool:
        """`text % arguments` starts with the format string's first character unless that is a conversion."""
        if isinstance(text, nodes.Const) and isinstance(text.value, str) and text.value[:1] not in ("", "%"):
            return text.value.startswith("_")
        return True

    def _call(self, node: nodes.Call, depth: int) -> bool:
        target = node.node
        if isinstance(target, nodes.Name) and target.name in PLAIN_CALLS and target.name not in self.bound:
            return False
        if isinstance(target, nodes.Getattr):  # a method: its object and its arguments make the result
            arguments = [*node.args, *(kw.value for kw in node.kwargs)]
            return self.contains(target.node, depth) or any(self.contains(a, depth) for a in arguments)
        return True  # a macro's output, caller(), a cycler or joiner: text the template makes


def _passed(node: nodes.Call | nodes.Filter) -> list[nodes.Expr]:
    """Everything a call or filter is handed: positional and keyword arguments, and what `*` and `**` spread."""
    spread = [n for n in (node.dyn_args, node.dyn_kwargs) if n is not None]
    return [*node.args, *(kw.value for kw in node.kwargs), *spread]


def _bindings(node: nodes.Node) -> Iterator[tuple[list[str], nodes.Node | None, bool]]:
    """The names a statement binds, the expression their values come from (None: may be anything), and whether
    they are its items (a loop)."""
    if isinstance(node, nodes.Assign):
        yield target_names(node.target), node.node, False
        if isinstance(node.target, nodes.Name) and isinstance(node.node, nodes.Call):
            for keyword in node.node.kwargs:  # namespace(k=v): ns.k starts as v
                yield [f"{node.target.name}.{keyword.key}"], keyword.value, False
            for given in node.node.args:  # namespace({'k': v}) too (review 57)
                for pair in given.items if isinstance(given, nodes.Dict) else []:
                    if isinstance(pair.key, nodes.Const) and isinstance(pair.key.value, str):
                        yield [f"{node.target.name}.{pair.key.value}"], pair.value, False
    elif isinstance(node, nodes.AssignBlock):
        yield target_names(node.target), None, False
    elif isinstance(node, nodes.For):
        yield target_names(node.target), node.iter, True
    elif isinstance(node, nodes.With):
        for target, value in zip(node.targets, node.values, strict=False):
            yield target_names(target), value, False
    elif isinstance(node, nodes.Macro):  # parameters take what calls pass (_arguments), or their defaults
        parameters = [name for arg in node.args for name in target_names(arg)]
        yield parameters, nodes.Const(""), False  # declared: bound, to nothing loose until a call says so
        for name, default in zip(reversed(parameters), reversed(node.defaults), strict=False):
            yield [name], default, False


# Methods that put their arguments into the container they are called on (an unsandboxed Environment runs them).
MUTATORS = frozenset({"update", "setdefault", "append", "extend", "insert", "add"})


def _mutations(call: nodes.Call) -> Iterator[tuple[list[str], nodes.Node | None, bool]]:
    """`n.update({'k': v})` or `l.append(v)`: the name then holds what the call put in it (review 23 built a
    dunder key so, read back as `n.k`)."""
    target = call.node
    if isinstance(target, nodes.Getattr) and target.attr in MUTATORS and isinstance(target.node, nodes.Name):
        yield [target.node.name], nodes.List(_passed(call)), False


def _arguments(call: nodes.Call, macros: dict[str, nodes.Macro], statements: list[nodes.Node]) -> Iterator[
    tuple[list[str], nodes.Node | None, bool]
]:
    """What a call passes to parameters: a macro's, by position and by name; `caller(...)`'s, to every call
    block's; `loop(...)`'s, to every recursive loop's target; a call of any other name (a macro kept in a
    variable), to every macro's."""
    target = call.node.name if isinstance(call.node, nodes.Name) else None
    if target == "caller":
        receivers = [node.args for node in statements if isinstance(node, nodes.CallBlock)]
    elif target == "loop":  # a recursive loop's loop(items) iterates again over `items`
        for node in statements:
            if isinstance(node, nodes.For) and node.recursive:
                yield target_names(node.target), call.args[0] if call.args else None, True
        return
    elif target in macros:
        receivers = [macros[target].args]
    elif target is not None and target not in PLAIN_CALLS:  # a macro or `caller` kept in a variable (review 23)
        receivers = [macro.args for macro in macros.values()]
        receivers += [node.args for node in statements if isinstance(node, nodes.CallBlock)]
    else:
        return
    for parameters in receivers:
        names = [name for arg in parameters for name in target_names(arg)]
        for name, value in zip(names, call.args, strict=False):
            yield [name], value, False
        for keyword in call.kwargs:
            if keyword.key in names or keyword.key == "caller":  # a macro that reads `caller` takes it from here
                yield [keyword.key], keyword.value, False
        if call.dyn_args is not None or call.dyn_kwargs is not None:  # f(*xs), f(**d): any parameter
            yield names, None, False


def target_names(target: nodes.Node) -> list[str]:
    """The names an assignment target binds: a name, a namespace attribute (`ns.k`), or those in a tuple."""
    if isinstance(target, nodes.Name):
        return [target.name]
    if isinstance(target, nodes.NSRef):
        return [f"{target.name}.{target.attr}"]
    if isinstance(target, nodes.Tuple | nodes.List):
        return [name for item in target.items for name in target_names(item)]
    return []


def _filter_defaults(node: nodes.Filter) -> list[nodes.Expr]:
    """What `int` and `float` return when the value does not convert: their first argument, `default=`, or whatever
    `*args` and `**kwargs` spread (`'x'|int(message.content)` is the message's text, reviews 22 and 23). Other
    filters have none."""
    if node.name not in DEFAULTED_FILTERS:
        return []
    spread = [n for n in (node.dyn_args, node.dyn_kwargs) if n is not None]
    return [*node.args[:1], *(kw.value for kw in node.kwargs if kw.key == "default"), *spread]


def _attribute_name(node: nodes.Getattr) -> str:
    """`ns.key` for an attribute of a name (a namespace's, when bound by `set ns.key`), else ''."""
    return f"{node.node.name}.{node.attr}" if isinstance(node.node, nodes.Name) else ""


def _number(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Const) and isinstance(node.value, int | float) and not isinstance(node.value, bool)


def _is_attr_filter(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Const) and node.value == "attr"
