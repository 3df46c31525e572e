"""Python literals read from the tokenizer's tokens, never evaluated, compiled or handed to `ast`.

Two scanners need what a Python literal means: a `.npy` header is a dict literal (numpy reads it with
`ast.literal_eval`), and TorchScript code spells operators in string literals. wscan reads neither with an
evaluator, not even a "safe" one: the text comes from the file being scanned. The reader here takes a deliberate
subset (strings, numbers, True/False/None, tuples, lists and dicts: all a header numpy writes can hold) and
refuses the rest (bytes, sets, `...`), so where it answers, it answers as `ast.literal_eval` does (the tests
check that over generated and mutated texts), and where it refuses, the caller fails closed.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterable, Iterator

MAX_NESTING = 100  # Python's own parser stops at 200 open brackets
_PREFIX = re.compile(r"[A-Za-z]*")  # a string literal's prefix letters (r, u, b, f, in any case)
# A backslash escape as Python's literal reader takes one (short forms too, which it refuses as malformed).
_ESCAPE = re.compile(r"\\(?:N\{[^}]*\}|x[0-9A-Fa-f]{0,2}|u[0-9A-Fa-f]{0,4}|U[0-9A-Fa-f]{0,8}|[0-7]{1,3}|[\s\S])")
_SIMPLE_ESCAPES = frozenset("\\'\"abfnrtv\n")  # the one-character escapes Python decodes (octal digits apart)
_SKIPPED = (tokenize.NL, tokenize.COMMENT)
_END = (tokenize.NEWLINE, tokenize.ENDMARKER)  # the end of the one logical line a literal may take
_NAMES: dict[str, object] = {"True": True, "False": False, "None": None}
_CLOSING = {"(": ")", "[": "]", "{": "}"}


class NotALiteral(ValueError):
    """The text is not a literal of the subset this module reads (or not Python at all)."""


def string_value(token: str) -> str | None:
    """One string literal token's value, each backslash escape decoded by the unicode_escape codec as Python
    decodes the literal; None for bytes, f-strings and malformed literals, which are no text constant."""
    prefix = _PREFIX.match(token)
    letters = prefix.group().lower() if prefix is not None else ""
    if "b" in letters or "f" in letters or letters not in ("", "r", "u"):
        return None
    body = token[len(letters) :]
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    if quote not in ('"', "'", '"""', "'''") or len(body) < 2 * len(quote) or not body.endswith(quote):
        return None
    body = body[len(quote) : len(body) - len(quote)]
    if "r" in letters:
        return body
    try:
        return _ESCAPE.sub(_unescape, body)
    except UnicodeDecodeError:  # a malformed escape (`\x4`): Python refuses the literal too
        return None


def _unescape(match: re.Match[str]) -> str:
    """One backslash escape, decoded by the unicode_escape codec; an unknown one (a backslash before q or €) stays
    as written, as Python keeps it."""
    escape = match.group()
    if len(escape) == 2 and escape[1] not in _SIMPLE_ESCAPES and escape[1] not in "xuUN01234567":
        return escape  # unknown: kept as written (the codec would too, after a warning that quotes the text)
    if escape.isascii():
        return escape.encode("ascii").decode("unicode_escape")
    if escape.startswith("\\N"):  # no character is named outside ASCII: Python refuses the literal
        raise UnicodeDecodeError("unicode_escape", escape.encode(), 0, 2, "unknown character name")
    return escape


def tokens_of(text: str, check_time: Callable[[], None] | None = None) -> Iterator[tokenize.TokenInfo]:
    """The tokens of `text` as Python's tokenizer reads them, lazily; NotALiteral where it cannot read cleanly.
    `check_time` is called every few thousand tokens (pure-Python tokenizing is about 1 s per MB)."""
    if "\0" in text:
        raise NotALiteral("a NUL character")  # Python refuses source text that holds one
    # Python's reader takes \r\n and \r as line ends (in strings too), and skips leading blanks of an expression.
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip(" \t")
    # Python's reader sees an indent in a last line of blanks alone, and after a continuation before any token.
    if text.rpartition("\n")[2].isspace() or text.lstrip(" \t\n\f").startswith("\\"):
        raise NotALiteral("blanks Python would read as an indent")
    try:
        for count, token in enumerate(tokenize.generate_tokens(io.StringIO(text).readline)):
            if check_time is not None and count % 4096 == 4095:
                check_time()
            yield token
    except (tokenize.TokenError, SyntaxError) as exc:  # an unclosed bracket or string, a bad dedent
        raise NotALiteral(str(exc)) from None


def read_literal(text: str) -> object:
    """The value of `text`, a single literal, as `ast.literal_eval` reads it; NotALiteral otherwise."""
    return read_tokens(tokens_of(text))


def read_tokens(tokens: Iterable[tokenize.TokenInfo]) -> object:
    """The value the literal in `tokens` spells (comments and line breaks skipped); NotALiteral otherwise."""
    stream = _Tokens(t for t in tokens if t.type not in _SKIPPED)
    value = stream.sequence(end=None, depth=0, bracket=None)
    stream.finish()
    return value


class _Tokens:
    """A recursive-descent reader over significant tokens, with one token of look-ahead."""

    def __init__(self, tokens: Iterator[tokenize.TokenInfo]) -> None:
        self._tokens = tokens
        self._next: tokenize.TokenInfo | None = next(tokens, None)

    def peek(self) -> str | None:
        """The next token's text; None at the end of the logical line."""
        return None if self._next is None or self._next.type in _END else self._next.string

    def take(self) -> tokenize.TokenInfo:
        token = self._next
        if token is None or token.type in _END:
            raise NotALiteral("unexpected end")
        self._next = next(self._tokens, None)
        return token

    def finish(self) -> None:
        """Only the end of the line may follow the literal: a second line is no literal to Python."""
        rest = [self._next, *self._tokens] if self._next is not None else []
        if any(token.type not in _END for token in rest) or len(rest) > 2:
            raise NotALiteral("more than one literal")

    def expect(self, text: str) -> None:
        if self.take().string != text:
            raise NotALiteral(f"expected {text!r}")

    def value(self, depth: int) -> object:
        """One literal: a string (adjacent ones joined), a number, a name constant or a bracketed display."""
        token = self.take()
        if token.type == tokenize.STRING:
            parts = [token]
            while self._next is not None and self._next.type == tokenize.STRING:
                parts.append(self.take())
            values = [string_value(part.string) for part in parts]
            if any(part is None for part in values):
                raise NotALiteral("not a text literal")
            return "".join(str(part) for part in values)
        if token.type == tokenize.NUMBER or (token.type == tokenize.OP and token.string in ("-", "+")):
            return self.number(token)
        if token.type == tokenize.NAME and token.string in _NAMES:
            return _NAMES[token.string]
        if token.type == tokenize.OP and token.string in _CLOSING:
            return self.display(token.string, depth + 1)
        raise NotALiteral(f"unexpected {token.string!r}")

    def number(self, token: tokenize.TokenInfo) -> int | float | complex:
        """A number with at most one sign, then, as literal_eval allows, `+` or `-` and an imaginary (`1-2j`)."""
        sign = ""
        if token.type == tokenize.OP:
            sign = token.string
            token = self.take()
            if token.type != tokenize.NUMBER:
                raise NotALiteral("a sign before something other than a number")
        value = _number(token.string)
        if sign == "-":
            value = -value
        if self.peek() in ("+", "-") and not isinstance(value, complex):
            operator = self.take().string
            right = self.take()
            imaginary = _number(right.string) if right.type == tokenize.NUMBER else None
            if not isinstance(imaginary, complex):
                raise NotALiteral("only an imaginary number may be added to a number")
            return value + imaginary if operator == "+" else value - imaginary
        return value

    def display(self, bracket: str, depth: int) -> object:
        """What follows an opening bracket, up to and including its closing one."""
        if depth > MAX_NESTING:
            raise NotALiteral("nested too deep")
        end = _CLOSING[bracket]
        if bracket == "{":
            return self.mapping(depth)
        if self.peek() == end:
            self.take()
            return () if bracket == "(" else []
        value = self.sequence(end, depth, bracket)
        self.expect(end)
        return value

    def sequence(self, end: str | None, depth: int, bracket: str | None) -> object:
        """Comma-separated values up to `end` (not taken): a tuple when a comma appears, except in brackets,
        which always make a list; a lone value in parentheses (or at the top) is itself."""
        items = [self.value(depth)]
        comma = False
        while self.peek() == ",":
            self.take()
            comma = True
            if self.peek() == end:
                break
            items.append(self.value(depth))
        if bracket == "[":
            return items
        return tuple(items) if comma else items[0]

    def mapping(self, depth: int) -> dict[object, object]:
        """A dict display after its `{`; as with literal_eval, a repeated key keeps its first place and last value.
        A set display (a value with no colon) is refused."""
        result: dict[object, object] = {}
        while self.peek() != "}":
            key = self.value(depth)
            self.expect(":")
            item = self.value(depth)
            try:
                result[key] = item
            except TypeError as exc:  # an unhashable key (a list): literal_eval fails on it too
                raise NotALiteral(str(exc)) from None
            if self.peek() != ",":
                break
            self.take()
        self.expect("}")
        return result


def _number(token: str) -> int | float | complex:
    """A number token's value: an integer (decimal, hex, octal, binary), a float or an imaginary, underscores
    allowed as Python allows them (the tokenizer already placed them)."""
    try:
        if token[-1] in "jJ":
            return complex(0.0, float(token[:-1]))
        if token[:2].lower() in ("0x", "0o", "0b") or not any(c in token for c in ".eE"):
            return int(token, 0)  # refuses `010`, which Python refuses, and more digits than it converts
        return float(token)
    except ValueError:
        raise NotALiteral(f"not a number: {token[:40]!r}") from None
