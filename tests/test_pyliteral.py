"""wscan's literal reader against Python's: where it answers, it answers as `ast.literal_eval` does.

The reader replaces `ast.literal_eval` for text taken from scanned files (a .npy header); these tests are the
only place that calls the real one, as the reference. Values are compared by repr, which tells True from 1, a
tuple from a list and keeps a dict's order.
"""

from __future__ import annotations

import ast
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib import _format_impl

from wscan.pyliteral import MAX_NESTING, NotALiteral, read_literal
from wscan.scanners.numpy import read_header


def _reference(text: str) -> str | None:
    try:
        return repr(ast.literal_eval(text))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _ours(text: str) -> str | None:
    try:
        return repr(read_literal(text))
    except NotALiteral:
        return None


_scalars = st.one_of(
    st.text(max_size=6), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False, allow_infinity=False)
)
_keys = st.one_of(st.text(max_size=4), st.integers(-5, 5), st.booleans(), st.none(), st.tuples(st.text(max_size=2)))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple), st.dictionaries(_keys, inner, max_size=4)
    ),
    max_leaves=16,
)


@settings(max_examples=1500, deadline=None)
@given(_values)
def test_every_value_of_the_subset_reads_back_from_its_repr(value: object) -> None:
    assert _ours(repr(value)) == repr(value) == _reference(repr(value))


# Pieces that move a text across the lexer's corners: quotes and prefixes, escapes (short, unknown, named,
# non-ASCII), line ends and continuations, comments, number spellings, signs, brackets, names.
_PIECES = [
    "", " ", "\t", ",", ":", "(", ")", "[", "]", "{", "}", "'", '"', "'''", '"""', "\\", "\\\n", "\\\r\n", "\n", "\r",
    "\r\n", "#", "# x\n", "0", "1,", "010", "0x1f", "0o7", "0b1", "1_0", "_", "1__0", "L", "-", "+", "--", "1j",
    "2.5", "1e3", "1e5_0", ".", "e", "j", "u", "r", "b", "f", "R", "U", "rb", "br", "ur", "\\N{BULLET}", "\\N{nope}",
    "\\x4", "\\x41", "\\u00e9", "\\U0001F600", "\\777", "\\0", "\\q", "\\€", "é", "€", "\x00", "\x0c", "\x0b", "...",
    "set()", "True", "None", "not", "lambda", "'a'", "'b' 'c'", "u'x'", "r'\\d'", "b'x'", "f'x'", "{1}", "1+2j",
    "-1-2j", "(1)+2j", "1+-2j", "[1,]", "(,)", "{'a': 1, 'a': 2}", "{1: 'x', True: 'y'}", "{[]: 1}",
]  # fmt: skip


@settings(max_examples=4000, deadline=None)
@given(
    base=st.one_of(_values.map(repr), st.just("{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }  \n")),
    edits=st.lists(st.tuples(st.integers(0, 60), st.sampled_from(_PIECES), st.integers(0, 2)), max_size=3),
)
def test_an_edited_text_reads_as_python_reads_it_or_not_at_all(base: str, edits: list[tuple[int, str, int]]) -> None:
    text = base
    for at, piece, drop in edits:
        text = text[:at] + piece + text[at + drop :]
    ours = _ours(text)
    if ours is not None:
        assert ours == _reference(text), text


@settings(max_examples=4000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=10).map("".join))
def test_text_made_of_pieces_reads_as_python_reads_it_or_not_at_all(text: str) -> None:
    ours = _ours(text)
    if ours is not None:
        assert ours == _reference(text), text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("'|' 'O'", "|O"),  # adjacent literals are joined
        ("{'a': 1, # a comment\n 'b': (2,)}", {"a": 1, "b": (2,)}),
        ("'|\\\r\nO'", "|O"),  # a continuation ended by \r\n, which Python reads as \n
        ("'\\x7c\\N{LATIN CAPITAL LETTER O}'", "|O"),
        ("{'a': 1, 'a': 2, 'b': 3}", {"a": 2, "b": 3}),
        ("-1-2_0j", -1 - 20j),
        ("(0x1F, 0o17, 0b11, 1_000)", (31, 15, 3, 1000)),
        ("  [1, 2,]  \n", [1, 2]),
    ],
)
def test_spellings_python_accepts(text: str, value: object) -> None:
    assert read_literal(text) == value == ast.literal_eval(text)


@pytest.mark.parametrize("text", ["b'x'", "{1, 2}", "...", "f'x'", "1 + 2", "(1)+2j", "x", "__import__('os')"])
def test_what_the_reader_refuses(text: str) -> None:
    """Bytes, sets and Ellipsis are literals to Python, outside the subset; the rest are no literals at all."""
    with pytest.raises(NotALiteral):
        read_literal(text)


def test_nesting_is_bounded_without_recursion_errors() -> None:
    deep = "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)
    with pytest.raises(NotALiteral):
        read_literal(deep)
    assert read_literal("[" * 50 + "]" * 50) == ast.literal_eval("[" * 50 + "]" * 50)


def test_time_is_checked_while_a_long_text_is_read() -> None:
    calls = []
    text = "[" + "1, " * 20_000 + "]"
    from wscan.pyliteral import read_tokens, tokens_of

    assert read_tokens(tokens_of(text, lambda: calls.append(1))) == [1] * 20_000
    assert len(calls) >= 5  # 40,000 tokens, a check every 4,096


_DTYPES = [
    "<f8", "|O", [("a", "<i4"), ("b", "|O")], [(("a title", "a"), "<f4"), (("\u00e9t\u00e9", "b"), "|O", (2, 3))],
    [((1.5, "x"), "|O")], [("outer", [("inner", "<u2"), ("obj", "|O")])], [("s", "|S7"), ("u", "<U3"), ("", "|V4")],
    [(f"field{i}", "<f8") for i in range(300)],
]  # fmt: skip


@pytest.mark.parametrize("dtype", _DTYPES, ids=range(len(_DTYPES)))
@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_headers_numpy_writes_read_as_numpy_reads_them(dtype: object, version: tuple[int, int]) -> None:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.zeros((2,), dtype=dtype), version=version, allow_pickle=True)
    header, data_start = read_header(io.BytesIO(buffer.getvalue()), 1 << 20)
    assert not isinstance(header, str), header
    buffer.seek(0)
    np.lib.format.read_magic(buffer)
    shape, fortran, read_dtype = _format_impl._read_array_header(buffer, version, max_header_size=1 << 20)
    assert np.lib.format.descr_to_dtype(header["descr"]) == read_dtype
    assert (header["shape"], header["fortran_order"], data_start) == (shape, fortran, buffer.tell())
