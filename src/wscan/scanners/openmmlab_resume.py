"""The Python config an OpenMMLab checkpoint keeps, which training runs as code when it resumes from the file.

Why: mmcv 1.x's runners and mmengine's `Runner.resume` pass `checkpoint['meta']['config']` to
`Config.fromstring(text, file_format='.py')`, which writes the text to a temporary file and runs it as Python (mmcv
imports it, mmengine evaluates its code). Only strings are involved: the pickle imports nothing for it, and torch's
`weights_only` loader accepts the file (helper 220 resumed from one that wrote a marker file). mmcv writes the text
as `Config.pretty_text`: names bound to literals, `dict(...)` and the other containers, `range(...)`, signs and
complex numbers. Text that holds anything else (an import, any other call, an attribute, an operator, `_base_`, which
makes the parser read and run other files, `custom_imports`, which mmengine imports, an environment placeholder,
whose default mmengine pastes in as code), or that wscan cannot read or parse, is reported (helper 221's red team).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from wscan.scanners.pickle_ops import LongBytes, decode_text
from wscan.scanners.pickle_values import Const, Dict, Obj, Sym, _text, _unread_text

CONFIG_KEY = "config"
RESUME_KEYS = frozenset({"epoch", "iter"})
MAX_CONFIG_BYTES = 4 * 1024 * 1024  # real configs are tens of kilobytes
# The only calls pretty_text writes: containers, and range (mmcv 1.x's training scripts set `gpu_ids = range(1)`).
BUILDERS = frozenset({"dict", "list", "tuple", "set", "frozenset", "bytes", "bytearray", "range"})
# Targets that change how the text is read or what later names mean: `_base_` makes mmcv read and run the files it
# names, `custom_imports` makes mmengine's fromstring import the modules it names (helper 221); the builders' names,
# rebound, would make a later `dict(...)` call anything, as `__builtins__` would.
RESERVED = BUILDERS | {"_base_", "_deprecation_", "custom_imports", "__builtins__"}
_DATA = (ast.Constant, ast.Name, ast.List, ast.Tuple, ast.Set, ast.keyword)
# mmengine replaces `{{'$NAME:default'}}` by the variable's value, or the default, as code, before running the text
# (`Config._substitute_env_variables`): to `ast` it is a set in a set (helper 221).
ENV_PLACEHOLDER = re.compile(r"\{\{['\"]?\s*\$")


def configs(
    meta: Sym, items: list[tuple[Sym, Sym]], whole: bool, read: Callable[[LongBytes], bytes]
) -> Iterator[str]:
    """Why each config text under a `meta` mapping's `config` key could run more than data, as detail for the rule.
    `items` are the mapping's as the stream's end leaves them; `whole` whether that is all of them. Both runners read
    the meta's `epoch` and `iter` first: a plain dict without them stops the resume with a KeyError before its config
    (a Counter or a defaultdict answers any key: helper 221)."""
    whole = whole and not (isinstance(meta, Obj) and meta.state is not None)  # a BUILD state may fill it (ChainMap)
    if whole and isinstance(meta, Dict) and not {_text(key) for key, _ in items} >= RESUME_KEYS:
        return
    for key, value in items:
        if _text(key) == CONFIG_KEY:
            reason = _judge_value(value, read)
            if reason is not None:
                yield reason
    if not whole:  # the last `config` set wins, and it may be one not read (helper 221 set a second past MAX_ITEMS)
        yield "whatever the meta's items wscan does not read hold"


def _judge_value(value: Sym, read: Callable[[LongBytes], bytes]) -> str | None:
    text = _text(value)
    if text is None and isinstance(value, Const) and isinstance(value.value, LongBytes) and value.value.text:
        long = value.value
        if long.length > MAX_CONFIG_BYTES:
            return f"a config of {long.length:,} bytes, more than wscan parses"
        raw = read(long)
        if len(raw) != long.length:
            return "a config cut short"
        try:
            text = decode_text(raw, long)
        except UnicodeDecodeError:
            return None  # the load fails there
    if text is None:
        return "a config the stream computes" if _unread_text(value) or isinstance(value, Obj) else None
    return judge(text)


def judge(text: str) -> str | None:
    """Why running `text` as a Python module could do more than bind names to data, or None when it cannot."""
    if len(text) > MAX_CONFIG_BYTES:
        return f"a config of {len(text):,} characters, more than wscan parses"
    if ENV_PLACEHOLDER.search(text):
        return "an environment placeholder, which mmengine replaces by code before it runs the text"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "text wscan cannot parse as Python (another Python version may run it)"
    pending: list[ast.AST] = list(reversed(tree.body))  # depth first, in the order the text runs
    while pending:
        node = pending.pop()
        reason = _node(node)
        if reason is not None:
            line = getattr(node, "lineno", 0)
            return f"{reason} at line {line}"
        if isinstance(node, ast.Assign | ast.Expr):
            pending.append(node.value)  # the targets are names, checked
        elif not isinstance(node, ast.UnaryOp | ast.BinOp):  # a sign or a complex number: checked whole
            children = [child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.expr_context)]
            pending.extend(children[::-1])
    return None


def _node(node: ast.AST) -> str | None:
    """What is wrong with one node, or None for data."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if not isinstance(target, ast.Name):
                return "an assignment to more than a name"
            if target.id in RESERVED:
                return f"an assignment to {target.id}"
        return None
    if isinstance(node, ast.Expr):
        return None  # its value is judged as an assigned one is
    if isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in BUILDERS):
            return f"a call of {_callee(node.func)}"
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(kw.arg is None for kw in node.keywords):
            return "arguments unpacked into a call"
        return None
    if isinstance(node, ast.Dict):
        return "a mapping unpacked into a dict" if any(key is None for key in node.keys) else None
    if isinstance(node, ast.UnaryOp):  # a sign: -1, -inf (a name pretty_text writes for an infinite float)
        if isinstance(node.op, ast.USub | ast.UAdd) and isinstance(node.operand, ast.Constant | ast.Name):
            return None
        return "an operator"
    if isinstance(node, ast.BinOp):  # a complex number, as pretty_text writes one: (1 + 2j)
        if isinstance(node.op, ast.Add | ast.Sub) and _number(node.left) and _number(node.right):
            return None
        return "an operator"
    if isinstance(node, _DATA):
        return None
    return {ast.Import: "an import", ast.ImportFrom: "an import", ast.Attribute: "an attribute lookup",
            ast.Lambda: "a lambda", ast.JoinedStr: "a formatted string",
            ast.FunctionDef: "a function", ast.ClassDef: "a class", ast.With: "a with block"}.get(
        type(node), f"Python other than data ({type(node).__name__})")  # fmt: skip


def _callee(func: ast.expr, depth: int = 0) -> str:
    """A called name as written (`os.system`), or what kind of value is called."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and depth < 4:
        return f"{_callee(func.value, depth + 1)}.{func.attr}"
    if isinstance(func, ast.Call) and depth < 4:
        return f"{_callee(func.func, depth + 1)}(...)"
    return "a computed value"


def _number(node: ast.expr) -> bool:
    """A numeric constant, signed or not."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, complex)
