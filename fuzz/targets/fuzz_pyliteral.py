"""wscan's literal reader (pyliteral.py) against Python's own: where wscan reads a value, it is Python's value.

The input is a .npy file's header text (the seeds are the corpus's .npy files) or any text. A crash is either
an exception other than NotALiteral, or a value ast.literal_eval (the reference, here only) reads otherwise.
"""

from __future__ import annotations

import ast

from _boot import fuzz, instrument

with instrument():
    from wscan.pyliteral import NotALiteral, read_literal

MAGIC = b"\x93NUMPY"


def one_input(data: bytes) -> None:
    text = (data[10:] if data.startswith(MAGIC) else data).decode("latin-1")
    try:
        ours = repr(read_literal(text))
    except NotALiteral:
        return
    try:
        reference = repr(ast.literal_eval(text))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise AssertionError(f"wscan read {ours[:80]} where Python reads no literal ({exc})") from None
    if ours != reference:
        raise AssertionError(f"wscan read {ours[:80]}, Python {reference[:80]}")


if __name__ == "__main__":
    fuzz(one_input)
