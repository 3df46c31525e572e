"""The code/ files of a TorchScript archive: torch.jit.load compiles and runs them, never importing Python.

TorchScript cannot import modules, but two of its operators do file I/O: `aten::save` writes any path and
`aten::from_file` reads one, from `__setstate__` (while the archive loads) or `forward` (at model(x)); reviews
proved both, spelled `torch.save`, `ops.aten.save`, `getattr(torch, "save")`, split by line continuations and
comments. The code is Python syntax: it is read with Python's tokenizer (never compiled), and every name or
string literal (adjacent literals joined, escapes decoded) that spells one of those operators is reported. Each
file is also listed for review (WS-TS-001). Code the tokenizer cannot read, or with control characters where the
two lexers part ways, is a finding of its own; `# type:` comments, which TorchScript parses, are read as code.
"""

from __future__ import annotations

import io
import pickletools
import re
import tokenize
from collections.abc import Callable, Iterator

from wscan.pyliteral import string_value
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem

MAX_CODE_BYTES = 16 * 1024 * 1024  # TorchScript code of a large model is a few MB; tokenizing takes ~1 s per MB
MAX_REPORTED = 20
FILE_OPERATORS = frozenset({"save", "from_file"})
# TorchScript's printer writes newlines and spaces; a carriage return in a comment ends it for Python's tokenizer
# but not for TorchScript's lexer (a review hid a torch.save line so), and other control characters may differ too.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# TorchScript's lexer makes a token of a `# type:` comment, and a one-line def parses a statement after it; Python
# skips the whole comment (a review hid torch.save there). Such comments are read as code: the `#` becomes a space.
TYPE_COMMENT = re.compile(r"#(?= type:)")  # exactly TorchScript's spelling: `#type:` is a plain comment to it
_INSIDE_LINE = (tokenize.COMMENT, tokenize.NL)  # what may sit between adjacent literals of one logical line


def is_torchscript_code(head: Head) -> bool:
    """A source file under code/ of an archive laid out as TorchScript (the `.debug_pkl` beside each is a pickle),
    or the lite interpreter's bytecode.pkl, which `_load_for_lite_interpreter` runs instead of code/."""
    name = head.name.lower()  # torch finds archive members whatever their case (a review named one `.PY`)
    if head.container != "torchscript" or head.raw_data:
        return False
    return ("/code/" in "/" + name and name.endswith(".py")) or _is_bytecode(name)


def _is_bytecode(name: str) -> bool:
    return name == "bytecode.pkl" or name.endswith("/bytecode.pkl")


def bytecode_operators(data: bytes) -> Iterator[tuple[str, int]]:
    """(operator, byte offset) for every string in the lite interpreter's bytecode pickle that names a file
    operator (`aten::save`, `aten::from_file.<overload>`): disassembled by pickletools, never loaded. torch's own
    unpickler has no opcode that builds a string from parts, so a name is a literal."""
    for _opcode, arg, offset in pickletools.genops(io.BytesIO(data)):
        if isinstance(arg, str) and arg.startswith("aten::"):
            name = arg[len("aten::") :].split(".", 1)[0]
            if name in FILE_OPERATORS:
                yield name, offset or 0


def file_operators(source: str, check_time: Callable[[], None] | None = None) -> Iterator[tuple[str, int]]:
    """(operator, line) for every name or string literal in `source` that spells a file operator. Raises
    SyntaxError for text the tokenizer cannot read cleanly (an error token): generated code never has one."""
    pending: list[tokenize.TokenInfo] = []  # adjacent string literals, which the parser joins
    for count, token in enumerate(tokenize.generate_tokens(io.StringIO(source).readline)):
        if check_time is not None and count % 10_000 == 0:
            check_time()
        if token.type == tokenize.ERRORTOKEN and not token.string.isspace():
            raise SyntaxError(f"unreadable token {token.string[:20]!r} at line {token.start[0]}")
        if token.type == tokenize.STRING:
            pending.append(token)
            continue
        if token.type in _INSIDE_LINE and pending:
            continue  # literals split over lines inside brackets are still adjacent
        if pending:
            text = _joined(pending)
            if text is not None and text in FILE_OPERATORS:
                yield text, pending[0].start[0]
            pending = []
        if token.type == tokenize.NAME and token.string in FILE_OPERATORS:
            yield token.string, token.start[0]
    text = _joined(pending) if pending else None
    if text in FILE_OPERATORS:
        yield str(text), pending[0].start[0]


def _joined(tokens: list[tokenize.TokenInfo]) -> str | None:
    """The value of adjacent string literals, joined as the parser joins them; None when one is not text."""
    parts = [string_value(t.string) for t in tokens]
    return None if any(part is None for part in parts) else "".join(str(part) for part in parts)


class TorchScriptCodeScanner:
    """Code files of TorchScript archives: listed, and searched for the operators that read or write files."""

    name = "torchscript"

    def accepts(self, head: Head) -> bool:
        return is_torchscript_code(head)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        yield artifact.observe("torchscript.code", size=artifact.size)
        if artifact.size > MAX_CODE_BYTES:
            detail = f"TorchScript code of {artifact.size} bytes, more than the {MAX_CODE_BYTES} read"
            yield artifact.observe("scan.limit", limit="max-code-bytes", detail=detail)
            return
        with artifact.opener() as raw:
            data = raw.read(MAX_CODE_BYTES)
        if _is_bytecode(artifact.name.lower()):
            try:
                hits = list(bytecode_operators(data))
            except Exception as exc:  # pickletools raises ValueError and others on damage: the pickle scanner says so
                yield artifact.observe("torchscript.unreadable", reason=f"{type(exc).__name__}: {exc}"[:200])
                return
            for operator, offset in hits[:MAX_REPORTED]:
                yield artifact.observe("torchscript.file_operator", operator=operator, line=0, offset=offset)
            return
        try:
            text = data.decode("utf-8")
            odd = CONTROL.search(text)
            if odd is not None:
                line = text.count("\n", 0, odd.start()) + 1
                raise SyntaxError(f"control character {odd.group()!r} at line {line}")
            found = list(file_operators(TYPE_COMMENT.sub(" ", text), ctx.budget.check_time))
        except (UnicodeDecodeError, tokenize.TokenError, SyntaxError) as exc:  # IndentationError is a SyntaxError
            yield artifact.observe("torchscript.unreadable", reason=f"{type(exc).__name__}: {exc}"[:200])
            return
        for operator, line in found[:MAX_REPORTED]:
            yield artifact.observe("torchscript.file_operator", operator=operator, line=line)
