"""Time zone file names in what a pickle's calls are given, and the text they compute (WS-PKL-030).

pandas hands what follows `dateutil/` in a time zone name to dateutil's gettz, which opens any path; real pickles
give pandas zone objects, never such names. The machine looks at every call and BUILD state (`_zone_files`), and
reports text a call computes (`_computed_text`), the ways reviews hid such a name.
"""

from __future__ import annotations

from wscan.scanners.pickle_ops import LongBytes
from wscan.scanners.pickle_values import (
    _STR_CLASSES,
    Const,
    Dict,
    Event,
    Global,
    Obj,
    PickleResult,
    Seq,
    Sym,
    _is_latin1,
    describe,
)

ZONE_FILE_MARK = "dateutil/"


def _literal_bytes(value: Sym) -> bool:
    """Bytes written as they are: a constant (Python 2 wrote them as text), or protocol 2's
    _codecs.encode(text, "latin1") of a constant."""
    if isinstance(value, Const):
        return isinstance(value.value, bytes | bytearray | LongBytes | str)
    if not (isinstance(value, Obj) and isinstance(value.func, Global) and value.func.dotted == "_codecs.encode"):
        return False
    parts = value.args.items if isinstance(value.args, Seq) else []
    return len(parts) == 2 and isinstance(parts[0], Const) and _is_latin1(parts[1])


def _is_text(value: Sym) -> bool:
    return isinstance(value, Const) and isinstance(value.value, str)


def _computed_text(res: PickleResult, func: Sym, args: Sym, at: int) -> None:
    """Text the stream computes: _codecs.encode with any codec but latin-1 (rot13 turns text into text),
    str(bytes, encoding), str(object). Writers put strings in the stream as they are and use _codecs.encode only to
    make bytes from latin-1 text (protocol 2); reviews hid a time zone file name from WS-PKL-030 all three ways
    (str of a DatetimeTZDtype restored with that zone is its dtype string)."""
    if not (isinstance(func, Global) and isinstance(args, Seq)):
        return
    if func.dotted == "_codecs.encode":
        if len(args.items) == 2 and _is_latin1(args.items[1]):
            return
    elif func.dotted in _NUMPY_SCALAR:
        if len(args.items) == 2 and _literal_bytes(args.items[1]):
            return  # what NumPy writes: the scalar's own bytes (a string scalar's text as UCS-4)
    elif not (func.dotted in _TEXT_CLASSES and (len(args.items) > 1 or not all(map(_is_text, args.items)))):
        return  # str(text) is the text; str(bytes, encoding) decodes, str(object) asks the object (a dtype's name)
    attrs: dict[str, str | int | bool] = {"callable": func.dotted, "args": describe(args)}
    res.events.append(Event("pickle.computed_text", at, attrs))


ZONE_CODECS = ("latin-1", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")  # how bytes may carry the name
ZONE_WALK = 256  # values looked at per call or state
ZONE_CACHE = 65536  # constants `_zone_files` remembers as naming no zone file, at most (about 10 MB)
ZONE_DEPTH = 6  # a call's arguments, a scalar made in them, its bytes made by protocol 2's _codecs.encode, its text
_NUMPY_SCALAR = frozenset({"numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar"})
_TEXT_CLASSES = _STR_CLASSES | {"numpy.str_", "numpy.unicode_"}


def _names_zone_file(value: Sym, decoded: bool) -> bool:
    """A constant naming a `dateutil/` zone as pandas reads one: a name that starts so, or a dtype string
    (`datetime64[ns, dateutil/...]`); a long constant by its kept start. Where the constant is decoded into text
    (`decoded`: a NumPy string scalar keeps its text as UCS-4 bytes, str(bytes, encoding)), its bytes too, in the
    encodings that could carry the name (protocol 2 writes bytes as latin-1 text)."""
    if not isinstance(value, Const):
        return False
    data = value.value.prefix if isinstance(value.value, LongBytes) else value.value
    if isinstance(data, str):
        if _zone_text(data):
            return True
        if not decoded:
            return False
        try:
            data = data.encode("latin-1")
        except UnicodeEncodeError:
            return False
    if not (decoded and isinstance(data, bytes | bytearray)):
        return False
    return any(_zone_text(bytes(data[skip:]).decode(codec, "ignore")) for codec in ZONE_CODECS for skip in range(4))


def _zone_text(text: str) -> bool:
    text = text.strip("\x00")
    # a name, or a type string pandas parses: datetime64[ns, ...], M8[...], pyarrow's timestamp[ns, tz=...]
    return text.startswith(ZONE_FILE_MARK) or (ZONE_FILE_MARK in text and "[" in text)


# Calls that make bytes: their text arguments are data (a string column's buffer), not names pandas reads.
_BYTES_MAKERS = frozenset({"_codecs.encode", "builtins.bytearray", "builtins.bytes", "pyarrow.lib.py_buffer"})


_UNCHANGING = (str, bytes, LongBytes, int, float, type(None))  # constants that keep their value (bool is an int)


def _zone_files(res: PickleResult, func: Sym, args: Sym, at: int) -> None:
    """Strings a call is given (or a partial will give) that pandas reads as a time zone file: it hands what follows
    `dateutil/` to dateutil's gettz, which opens any path (reviews read a file outside the folder through
    DatetimeTZDtype, Timestamp, a Series' dtype string and NumPy string scalars so). Real pickles give pandas
    zone objects, never such names. Looked for a few levels into the arguments (keywords, tuples, the calls that
    make them); bytes only where they become text."""
    if isinstance(func, Global) and func.dotted in _BYTES_MAKERS | _NUMPY_SCALAR | _TEXT_CLASSES:
        return  # bytes are data, and a string scalar or decoded text is judged where a call is given it
    level: list[tuple[Sym, bool]] = [(args, False)]
    seen = 0
    for _ in range(ZONE_DEPTH):
        inner: list[tuple[Sym, bool]] = []
        for value, decoded in level:
            if isinstance(value, Const):
                # text, bytes and numbers never change; a bytearray can (`_mutation`), so it is read every time
                known = isinstance(value.value, _UNCHANGING)
                if known and (id(value), decoded) in res.zone_free:
                    continue
                if _names_zone_file(value, decoded):
                    attrs: dict[str, str | int | bool] = {"callable": describe(func), "name": describe(value)}
                    res.events.append(Event("pickle.zone_file", at, attrs))
                    return
                if known:
                    if len(res.zone_free) >= ZONE_CACHE:
                        res.zone_free.clear()  # a memo, not a record: bounded, and refilled by what recurs
                    res.zone_free[id(value), decoded] = value
                continue
            room = ZONE_WALK - len(inner)  # what the next level reads at most, not built past (review 27's calls)
            if isinstance(value, Seq):
                inner.extend((item, decoded) for item in value.items[:room])
            elif isinstance(value, Dict):
                inner.extend((item, decoded) for pair in value.items[:room] for item in pair)
            elif isinstance(value, Obj) and isinstance(value.func, Global):
                maker = value.func.dotted
                if maker in _NUMPY_SCALAR or maker in _TEXT_CLASSES or (decoded and maker in _BYTES_MAKERS):
                    inner.append((value.args, True))
                elif maker not in _BYTES_MAKERS:
                    inner.append((value.args, False))
        seen += len(level)
        if seen > ZONE_WALK:
            return
        level = inner[:ZONE_WALK]


# What pandas' compiled time code trusts on the objects it is given: a zone's transitions, from pytz's
# (`_utc_transition_times`, `_transition_info`) and dateutil 2's (`_trans_list`, `_trans_idx`, ...) attributes, taken by
# whether the zone has them, its offsets then indexed by positions among the times without bounds checks (a BUILD
# giving a zone two million times and one offset crashed pandas 1.5 to 3.1 at repr, helper 237); and a frequency's
# `_period_dtype_code`, which PeriodDtype takes from the offset it is given and period code uses as a table index
# (helper 240: a DateOffset given a code by its state read 8 MB past the table). No writer sets them by a state but
# dateutil 2's tzfile, whose call is judged on its own (it opens a file).
TIME_INTERNALS = frozenset({
    "_utc_transition_times", "_transition_info", "_trans_list", "_trans_list_utc", "_trans_idx", "_ttinfo_before",
    "_ttinfo_std", "_ttinfo_dst", "_period_dtype_code",
})  # fmt: skip
# Zones their makers return whole (pytz's and zoneinfo's from a cache every caller shares, dateutil's rebuilt from
# the data it is given): real pickles set no state on one (the machine reports one as a change, `_made_whole`).
WHOLE_ZONES = frozenset({"pytz._p", "pytz._UTC", "dateutil.tz._tzfile._unpickle", "dateutil.tz.tz.tzutc",
                         "dateutil.tz.tz.tzoffset", "zoneinfo.ZoneInfo._unpickle", "datetime.timezone"})  # fmt: skip


def _time_state(res: PickleResult, target: Obj, state: Sym, at: int) -> None:
    """A state naming what pandas' time code trusts (TIME_INTERNALS; helpers 237 and 240)."""
    dicts = [state] if isinstance(state, Dict) else [item for item in state.items[:2] if isinstance(item, Dict)] \
        if isinstance(state, Seq) else []  # fmt: skip
    keys = [key.value for found in dicts for key, _ in found.items if isinstance(key, Const)]
    names = sorted({key for key in keys if isinstance(key, str) and key in TIME_INTERNALS})
    if names:
        detail = f"a state setting {', '.join(names)}, which pandas' compiled time code trusts"
        res.events.append(Event("pickle.time_state", at, {"callable": describe(target), "detail": detail}))
