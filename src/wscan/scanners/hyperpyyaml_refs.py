"""The arithmetic HyperPyYAML applies to an interpolated reference, worked out on constants, never evaluated.

`hyperpyyaml.core.parse_arithmetic` parses the text as a Python expression and folds it with `_ast_eval`:
constants, and the binary operators + - * / // ** %, nothing else (a name, a call or a unary minus makes it keep
the text as written). Its result then becomes a value of the config, and a string shaped `( ... )` is read again
as a tuple with PyYAML's unsafe Loader. So the checks need the same result: `'(%c' % 33 + '!python/...'` is a
tag. This module folds the same expressions with the same operators, in bounds (string and number sizes, powers,
format widths): what would exceed them, or what raises where the loader raises, is UNKNOWN.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable

UNKNOWN = "\ue000"  # a value the checks cannot work out (a private-use character no YAML text needs)
MAX_TEXT = 65_536  # characters of a computed string
_MAX_DIGITS = 400  # of a computed integer
# A width or precision ('%999999999d' % 1, '%.1500000000d' % 1 would be gigabytes): any digit, `*` or `.` after %.
_FORMAT_WIDTH = re.compile(r"%[^a-zA-Z%]*[\d*.]")

_Value = str | int | float | bool | None
_OPERATORS: dict[type[ast.operator], Callable[[object, object], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
}


class _KeepText(Exception):
    """_ast_eval raises one of the errors parse_arithmetic catches: the text stays as written."""


class _Unknown(Exception):
    """Past the bounds, or an error that stops the loader: the result is not worked out."""


_BOOL = {"true": "True", "True": "True", "TRUE": "True", "false": "False", "False": "False", "FALSE": "False"}
_NULL = {"null", "Null", "NULL", "~", ""}
_INT = re.compile(r"[-+]?(0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)\Z")
_FLOAT = re.compile(r"[-+]?(\.[0-9_]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?\Z")
_SPECIAL_FLOAT = {".inf": "inf", ".Inf": "inf", ".INF": "inf", "+.inf": "inf", "+.Inf": "inf", "+.INF": "inf",
                  "-.inf": "-inf", "-.Inf": "-inf", "-.INF": "-inf", ".nan": "nan", ".NaN": "nan", ".NAN": "nan"}


def plain_scalar_text(text: str) -> str:
    """What `str()` of a plain (unquoted) YAML scalar is once ruamel has loaded it, which is what HyperPyYAML puts
    in place of a reference to it: `true` is `True`, `~` is `None`, `0x1F` is `31`, `1e3` is `1000.0`."""
    if text in _BOOL:
        return _BOOL[text]
    if text in _NULL:
        return "None"
    if text in _SPECIAL_FLOAT:
        return _SPECIAL_FLOAT[text]
    if len(text) > 400:
        return text if not (_INT.match(text) or _FLOAT.match(text)) else UNKNOWN
    digits = text.replace("_", "")
    if _INT.match(text):
        sign, body = (digits[0], digits[1:]) if digits[0] in "+-" else ("", digits)
        base = {"0b": 2, "0o": 8, "0x": 16}.get(body[:2].lower(), 10)
        try:
            return str(int(sign + (body[2:] if base != 10 else body), base))
        except ValueError:
            return UNKNOWN
    if _FLOAT.match(text) and any(c in text for c in ".eE"):
        try:
            return str(float(digits))
        except ValueError:
            return UNKNOWN
    return text


def reference_arithmetic(text: str) -> str:
    """The text a resolved reference becomes: its arithmetic's result as text, the text itself when it is not
    arithmetic, UNKNOWN when the result cannot be worked out."""
    if UNKNOWN in text:
        return UNKNOWN
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text
    try:
        return str(_fold(tree, 0))
    except _KeepText:
        return text
    except _Unknown:
        return UNKNOWN


def _fold(node: ast.AST, depth: int) -> _Value:
    if depth > 100:
        raise _Unknown
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (str, int, float, bool)) or node.value is None:
            return node.value
        raise _Unknown  # bytes, Ellipsis, complex: _ast_eval returns them, their text is not worth modelling
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _fold(node.left, depth + 1), _fold(node.right, depth + 1)
        _check_bounds(node.op, left, right)
        try:
            result = _OPERATORS[type(node.op)](left, right)
        except TypeError:
            raise _KeepText from None
        except (ArithmeticError, ValueError, MemoryError):
            raise _Unknown from None  # the loader stops with this error
        if isinstance(result, str) and len(result) > MAX_TEXT:
            raise _Unknown
        if isinstance(result, int) and not isinstance(result, bool) and abs(result).bit_length() > _MAX_DIGITS * 4:
            raise _Unknown
        return result  # type: ignore[return-value]  # the operators of constants return constants
    raise _KeepText  # a name, a call, a unary operator: _ast_eval raises TypeError or KeyError


def _check_bounds(op: ast.operator, left: _Value, right: _Value) -> None:
    """Refuse what would take too long or too much memory to work out (the loader would hang on it too)."""
    if isinstance(op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > 256:
        raise _Unknown
    if isinstance(op, ast.Pow) and isinstance(left, int) and abs(left) > 2**64:
        raise _Unknown
    if isinstance(op, ast.Mult) and isinstance(left, str) != isinstance(right, str):
        count = right if isinstance(left, str) else left
        text = left if isinstance(left, str) else right
        if isinstance(count, int) and isinstance(text, str) and count * len(text) > MAX_TEXT:
            raise _Unknown
    if isinstance(op, ast.Mod) and isinstance(left, str) and _FORMAT_WIDTH.search(left):
        raise _Unknown
