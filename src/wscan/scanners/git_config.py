"""Git's config format, read as git's own parser (config.c) reads it.

Why: a setting git runs as a command is found only if the config is read the way git reads it. Python's line
splitting, a comment taken to go on past its line, a BOM, or an escaped backslash at the end of a line each hid
`core.fsmonitor` from a line-by-line reading while git ran it (helper 238). Checked against `git config --list`
over generated text (tests/test_git_files.py).
"""

from __future__ import annotations

from dataclasses import dataclass

BOM = "\xef\xbb\xbf"  # UTF-8's, as the text is read: each byte one character (latin-1), as git reads bytes
SPACE = " \t\n\r"  # git's own isspace: not form feeds or vertical tabs
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


class GitConfigError(ValueError):
    """Text git refuses as a config (git stops with `bad config line`)."""


@dataclass(frozen=True)
class Setting:
    section: str  # lower case; the subsection, as written, after a dot
    name: str  # lower case
    value: str | None  # None: the name alone (`[core] bare`), which git reads as true

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}" if self.section else self.name


def parse(data: bytes) -> list[Setting]:
    """Every setting of a git config, in order, as git reads it (names and values as latin-1 text: git reads
    bytes): a BOM skipped; CR LF as LF (a lone CR is space, and form feeds and the other characters Python would
    split lines on are text); `#` and `;` start a comment to the end of the line, outside quotes only, and a comment
    never continues; a backslash before the end of a line continues the value; names and sections in any case,
    subsections as written ([section "sub"], or the old [section.sub], lower-cased whole)."""
    text = data.decode("latin-1")
    reader = _Reader(text[len(BOM):] if text.startswith(BOM) else text)
    found: list[Setting] = []
    section = ""
    while (c := reader.next()) is not None:
        if c in SPACE:
            continue
        if c in "#;":
            reader.skip_line()
        elif c == "[":
            section = _section(reader)
        elif c.isascii() and c.isalpha():
            found.append(_setting(reader, section, c))
        else:
            raise GitConfigError(f"unexpected {c!r}")
    return found


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def next(self) -> str | None:
        if self.at >= len(self.text):
            return None
        c = self.text[self.at]
        self.at += 1
        if c == "\r" and self.text.startswith("\n", self.at):
            self.at += 1
            return "\n"
        return c

    def skip_line(self) -> None:
        end = self.text.find("\n", self.at)
        self.at = len(self.text) if end < 0 else end + 1


def _is_key_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "-")


def _section(reader: _Reader) -> str:
    name = ""
    while True:
        c = reader.next()
        if c is None:
            raise GitConfigError("unterminated section header")
        if c == "]":
            if not name:
                raise GitConfigError("empty section name")
            return name.lower()
        if c in SPACE:
            if c == "\n":
                raise GitConfigError("unterminated section header")
            return name.lower() + "." + _subsection(reader)
        if not (_is_key_char(c) or c == "."):
            raise GitConfigError(f"bad section name character {c!r}")
        name += c


def _subsection(reader: _Reader) -> str:
    c = reader.next()
    while c is not None and c in SPACE:
        if c == "\n":
            raise GitConfigError("unterminated section header")
        c = reader.next()
    if c != '"':
        raise GitConfigError("subsection not quoted")
    sub = ""
    while (c := reader.next()) != '"':
        if c is None or c == "\n":
            raise GitConfigError("unterminated subsection")
        if c == "\\":
            c = reader.next()
            if c is None or c == "\n":
                raise GitConfigError("unterminated subsection")
        sub += c
    if reader.next() != "]":
        raise GitConfigError("section header not closed")
    return sub


def _setting(reader: _Reader, section: str, first: str) -> Setting:
    name = first
    while (c := reader.next()) is not None and _is_key_char(c):
        name += c
    while c is not None and c in " \t":
        c = reader.next()
    if c is None or c == "\n":
        return Setting(section, name.lower(), None)
    if c != "=":
        raise GitConfigError(f"bad setting name {name!r}")
    return Setting(section, name.lower(), _value(reader))


def _value(reader: _Reader) -> str:
    """git's parse_value: leading spaces dropped, each inner space (a tab too) kept as a space once text follows,
    trailing ones dropped, quotes toggled, escapes \\n \\t \\b \\\\ \\" and a backslash-newline continuation."""
    value = ""
    quoted = False
    pending_space = 0
    while True:
        c = reader.next()
        if c is None or c == "\n":
            if quoted:
                raise GitConfigError("unterminated quote")
            return value
        if not quoted and c in "#;":
            reader.skip_line()
            return value
        if not quoted and c in SPACE:
            if value:
                pending_space += 1
            continue
        value += " " * pending_space
        pending_space = 0
        if c == "\\":
            c = reader.next()
            if c is None or c == "\n":  # git reads the end of the text as a newline
                continue
            if c not in _ESCAPES:
                raise GitConfigError("bad escape")
            value += _ESCAPES[c]
        elif c == '"':
            quoted = not quoted
        else:
            value += c
