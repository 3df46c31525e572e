"""skops files (`skops.io.dump`, `.skops`): the calls `skops.io.load` makes, written out as the pickle making them.

skops.io.load reads `schema.json` from the zip, builds a tree of nodes from it (nothing imported yet), audits the
names against the types the user trusts, then constructs: each node names a module and a class or function, which
it imports and uses. An ObjectNode is `cls.__new__(cls)` then `__setstate__`, pickle's NEWOBJ and BUILD; a DictNode
calls its class with no arguments and each key's type on the key; a ConstructorFromReduceNode calls its class, an
OperatorFuncNode any function of `operator`. skops' own documentation loads a file with
`trusted=get_untrusted_types(file=...)`, which trusts whatever the file names, so what the file names is what runs.

Rather than judge those names by a second rule set, the tree is translated into the pickle that imports and calls
the same things on the same values (arrays read from their `.npy` members as NumPy pickles them), and that pickle is
scanned as any other: the allowlists, the gadget lists and the checks of scikit-learn's trees all apply. The tree is
built as skops builds it, with its memo (`__id__`: the first node built under an id is the one every later use of
that id gets, children in skops' order), so a name cannot hide behind a duplicate id. A schema skops would refuse,
or one this translation cannot follow, is a finding: skops versions differ, and nothing here may pass unjudged.
The tree is built in `skops_tree`, the pickle written in `skops_pickle`; this module finds the schema in a zip and
hands the pickle on to be scanned.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from wscan.limits import BudgetExceeded
from wscan.scanners.base import Artifact, ScanContext, ScanItem, read_capped
from wscan.scanners.skops_pickle import Writer
from wscan.scanners.skops_tree import PROTOCOLS, MemberReader, Unfollowed, build_tree, is_skops_schema

SCHEMA = "schema.json"
LOADED_AS_PICKLE = "schema.json#loaded-as-pickle"  # the blob holding the equivalent pickle, named in findings


def scan_skops(artifact: Artifact, ctx: ScanContext, archive: zipfile.ZipFile) -> Iterator[ScanItem]:
    """The pickle equivalent to skops.io.load of this zip, as a blob to scan, or why it cannot be written. A zip
    whose schema.json skops would refuse at once (no JSON, no loader, no protocol) is no skops file: nothing runs."""
    left = ctx.limits.max_pickle_bytes  # the arrays' bytes go into the pickle: one pickle's budget for them all

    def read_member(name: str) -> bytes:
        nonlocal left
        data = _read(archive, name, left, ctx)
        if data is None:
            raise Unfollowed(f"the members it reads exceed max-pickle-bytes ({ctx.limits.max_pickle_bytes})", "$")
        left -= len(data)
        return data

    try:
        text = _read(archive, SCHEMA, ctx.limits.max_json_bytes, ctx)
        if text is None:
            raise Unfollowed(f"{SCHEMA} is larger than max-json-bytes ({ctx.limits.max_json_bytes})", "$")
    except KeyError:
        return
    except Unfollowed as problem:
        yield artifact.observe("skops.unfollowed", member=SCHEMA, reason=problem.reason, node=problem.path)
        return
    try:
        schema = json.loads(text)  # as skops reads it: the member's bytes, their encoding detected
    except RecursionError:  # skops, called from a shallower stack, may read it: fail closed
        yield artifact.observe("skops.unfollowed", member=SCHEMA, reason="schema.json nests deeper than wscan reads",
                               node="$")
        return
    except ValueError:  # not JSON, so skops refuses it before anything is imported
        return
    if not is_skops_schema(schema):
        return
    result = translate(schema, read_member, ctx.budget.check_time)
    if result.problem is not None:
        yield artifact.observe(
            "skops.unfollowed", member=SCHEMA, reason=result.problem.reason, node=result.problem.path
        )
        return
    assert result.pickle is not None
    data = result.pickle
    yield artifact.child(LOADED_AS_PICKLE, len(data), partial(io.BytesIO, data), {"container": "skops"})


def _read(archive: zipfile.ZipFile, name: str, cap: int, ctx: ScanContext) -> bytes | None:
    """A member's bytes by name, as zipfile finds it for skops; None past `cap`; KeyError when there is none."""
    try:
        with archive.open(name) as member:
            data = read_capped(member, cap)  # type: ignore[arg-type]
    except (KeyError, BudgetExceeded):
        raise
    except (OSError, ValueError, RuntimeError, EOFError, NotImplementedError, zipfile.BadZipFile, zlib.error) as exc:
        raise Unfollowed(f"member {name!r} cannot be read: {exc}"[:200], "$") from None
    ctx.budget.charge_decompressed(len(data))
    return None if len(data) > cap else data


@dataclass
class Translation:
    """The pickle equivalent to loading the file, or why there is none."""

    pickle: bytes | None
    protocol: object
    problem: Unfollowed | None = None


def translate(schema: dict[str, Any], read_member: MemberReader, check_time: Callable[[], None]) -> Translation:
    """The pickle whose loading imports and calls what skops.io.load of this schema would."""
    protocol = schema.get("protocol", 0)  # skops 0.4 and 0.5 wrote none, and read everything as protocol 0
    try:
        if isinstance(protocol, bool) or not isinstance(protocol, int) or protocol not in PROTOCOLS:
            raise Unfollowed(f"protocol {protocol!r} is not one skops reads (0 to {PROTOCOLS[-1]})", "$")
        root, _ = build_tree(schema, protocol, read_member, check_time)
        return Translation(Writer(check_time).finish(root), protocol)
    except Unfollowed as problem:
        return Translation(None, protocol, problem)
    except RecursionError:
        return Translation(None, protocol, Unfollowed("the schema nests deeper than wscan follows", "$"))
