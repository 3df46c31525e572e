"""OpenVINO IR models (`openvino_model.xml` and its `.bin`): the XML read as OpenVINO's pugixml reads it, and every
constant's bytes checked against the weights file, which the XML claims.

An IR runs no code from the file: its ops are OpenVINO's own, and an op OpenVINO does not know needs an extension
library the user loads (`read_model` refuses it otherwise). What a file can get wrong is its weights: every Const
layer reads `size` bytes at `offset` of the `.bin` beside the XML (same name), as `element_type` x `shape`, and
`read_model` refuses a constant past the end of the file or smaller than its type and shape take; it copies a
constant written in the XML (`value=`) without any check. Helper 217's red team shaped the reading: every `.xml` is
parsed (a namespace, an upper-case root, a processing instruction, 5,000 spaces or UTF-16 hid an IR from a sniff that
OpenVINO loaded), by expat without namespace processing (as pugixml, an `xmlns` is only an attribute) and with
DOCTYPE and ENTITY declarations refused (expat would expand them; pugixml skips them); element names are compared
in any case; the `.bin` is followed only inside the model's folder (linked to /etc/passwd, it came back as output).
"""

from __future__ import annotations

import math
import os
import stat
from collections import Counter
from collections.abc import Generator, Iterator
from pathlib import Path
from xml.etree import ElementTree
from xml.parsers import expat

from wscan.discover import INSIDE, ON_SHARE, display_path, leads
from wscan.model import Observation
from wscan.scanners.base import CLAIM_KIND, NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem, read_capped

SNIFF_BYTES = 65536
MAX_REPORTED = 100  # findings of one kind; the rest are counted
TICK = 4096  # elements between clock checks
MAX_DIMENSIONS = 64  # OpenVINO's shapes have far fewer; more is refused before any product is taken
# Bits per element of the types OpenVINO writes (ov::element::Type), packed types included; u3 and u6 are stored in
# groups (8 values in 3 bytes, 4 in 3), and OpenVINO writes a byte for an empty constant.
ELEMENT_BITS = {
    "boolean": 8, "bf16": 16, "f16": 16, "f32": 32, "f64": 64, "i4": 4, "i8": 8, "i16": 16, "i32": 32, "i64": 64,
    "u1": 1, "u2": 2, "u3": 3, "u4": 4, "u6": 6, "u8": 8, "u16": 16, "u32": 32, "u64": 64, "nf4": 4,
    "f8e4m3": 8, "f8e5m2": 8, "f4e2m1": 4, "f8e8m0": 8,
}  # fmt: skip
GROUPS = {"u3": (8, 3), "u6": (4, 3)}  # values per group, bytes per group
VARIABLE_SIZE = frozenset({"string"})  # constants of strings keep their own lengths in the bytes
# What may come before the root element, as (opening, closing) in lower case.
PROLOG = (("<?", "?>"), ("<!--", "-->"), ("<![cdata[", "]]>"))


def looks_like_ir(head: bytes, limit: int = SNIFF_BYTES) -> bool:
    """Whether the document's root element is <net> (any case), past a BOM, the XML declaration, processing
    instructions, comments and a document type, in UTF-8 or UTF-16, within `limit` bytes: what pugixml, OpenVINO's
    reader, takes."""
    start = head[:limit].lstrip(b" \t\r\n")  # every file's head comes here: most fail at their first byte
    if not start.startswith((b"<", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return False
    text = _decoded(head[:limit]).lower().lstrip("\ufeff")
    position = 0
    while True:
        while position < len(text) and text[position] in " \t\r\n":
            position += 1
        if text.startswith("<net", position):
            return len(text) == position + 4 or text[position + 4] in " \t\r\n/>"
        if text.startswith("<!doctype", position):
            bracket, close = text.find("[", position), text.find(">", position)
            if 0 <= bracket < close:
                close = text.find(">", max(text.find("]", bracket), bracket))
            if close < 0:
                return False
            position = close + 1
            continue
        for opening, closing in PROLOG:
            if text.startswith(opening, position):
                end = text.find(closing, position + len(opening))
                if end < 0:
                    return False
                position = end + len(closing)
                break
        else:
            return False


def _decoded(head: bytes) -> str:
    for bom, codec in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if head.startswith(bom):
            return head[2 : len(head) - len(head) % 2].decode(codec, "replace")
    return head.decode("utf-8", "replace")


class OpenVinoScanner:
    """OpenVINO IR XML files, by their name or their <net> root, and the weights file beside each."""

    name = "openvino"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and (head.name.lower().endswith(".xml") or looks_like_ir(head.head))

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        limit = ctx.limits.max_json_bytes
        if artifact.size > limit:
            if artifact.name.lower().endswith(".xml") or looks_like_ir(_head(artifact)):
                detail = f"an OpenVINO IR of {artifact.size} bytes is over {limit}"
                yield artifact.observe("scan.limit", limit="max-json-bytes", detail=detail)
            else:
                yield artifact.observe(NOT_MINE_KIND)
            return
        with artifact.opener() as raw:
            data = read_capped(raw, limit)
        if not (looks_like_ir(data) or looks_like_ir(data, len(data))):  # a prolog may be longer than any head
            yield artifact.observe(NOT_MINE_KIND)  # another XML file (or one with text before its root)
            return
        weights, located = yield from _weights(artifact)  # claimed first: the model's data even if the XML is not
        try:
            root = _parse(data)
        except _Refused as exc:
            yield artifact.observe("openvino.malformed", reason=str(exc))
            return
        except expat.ExpatError as exc:
            yield artifact.observe("openvino.malformed", reason=f"not well-formed XML: {exc}"[:300])
            return
        yield from _constants(artifact, ctx, root, weights, located)


def _head(artifact: Artifact) -> bytes:
    with artifact.opener() as raw:
        return raw.read(SNIFF_BYTES)


class _Refused(Exception):
    """A document type or entity declaration: expat would expand its entities (pugixml skips them)."""


def _parse(data: bytes) -> ElementTree.Element:
    """The document as an element tree, built by expat without namespace processing (as pugixml reads it: an
    `xmlns` is an attribute, a prefix part of the name) and with any DOCTYPE or ENTITY declaration refused."""
    builder = ElementTree.TreeBuilder()
    parser = expat.ParserCreate()

    def refuse(*_: object) -> None:
        raise _Refused("a document type declaration (no IR has one)")

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = lambda tag: builder.end(tag)
    parser.Parse(data, True)
    root: ElementTree.Element = builder.close()
    return root


def _weights(artifact: Artifact) -> Generator[Observation, None, tuple[int | None, bool]]:
    """The size of the `.bin` OpenVINO reads beside the XML (same name), claimed for it, or None; and whether a
    missing one is worth a finding (not inside an archive, where it cannot be known, nor when it leads out of the
    model's folder, which is its own finding: a link to /etc/passwd came back as the model's output)."""
    if artifact.real_path is None:
        return None, False
    folder = artifact.real_path.absolute().parent
    path = artifact.real_path.absolute().with_suffix(".bin")
    where = leads(path, Path(os.path.realpath(folder)))  # a Hugging Face snapshot's links into blobs/ stay inside
    if where != INSIDE:
        if os.path.lexists(path):
            reason = "leads onto a network share" if where == ON_SHARE else "is a link that leaves the model's folder"
            yield artifact.observe("openvino.weights_escape", file=display_path(path), reason=reason)
            return None, False
        return None, True
    try:
        info = os.stat(path)
    except OSError:
        return None, True
    if not stat.S_ISREG(info.st_mode):
        yield artifact.observe("openvino.weights_escape", file=display_path(path), reason="is not a regular file")
        return None, False
    yield artifact.observe(CLAIM_KIND, file=display_path(path), format="openvino-weights")
    return info.st_size, True


def _constants(artifact: Artifact, ctx: ScanContext, root: ElementTree.Element, weights: int | None,
               located: bool) -> Iterator[Observation]:
    reported: Counter[str] = Counter()
    for count, layer in enumerate(root.iter(), 1):
        if count % TICK == 0:
            ctx.budget.check_time()
        if layer.tag.lower() != "layer" or str(layer.get("type", "")).lower() != "const":
            continue
        data = next((child for child in layer if child.tag.lower() == "data"), None)
        kind, problem = ("openvino.bad_constant", "no data element") if data is None else _problem(
            data, weights, located)
        if not kind:
            continue
        reported[kind] += 1
        if kind == "openvino.weights_missing" and reported[kind] > 1:
            continue  # once: the file is missing for all of them
        if reported[kind] <= MAX_REPORTED:
            yield artifact.observe(kind, layer=str(layer.get("name", ""))[:200], id=str(layer.get("id", ""))[:40],
                                   reason=problem[:300])
    for kind, number in reported.items():
        if number > MAX_REPORTED and kind != "openvino.weights_missing":
            yield artifact.observe(kind, layer="", id="", reason=f"{number - MAX_REPORTED} more constants like these")


def _problem(data: ElementTree.Element, weights: int | None, located: bool) -> tuple[str, str]:
    """The observation kind and reason for a constant `read_model` would refuse or misread, ('', '') otherwise."""
    if "value" in data.attrib:  # OpenVINO copies the text whatever the shape: 1 byte for 4,096 leaked heap memory
        return "openvino.bad_constant", "its data is written in the XML (value=), which OpenVINO copies unchecked"
    element = data.get("element_type", "")
    text = data.get("shape", "").strip()
    dimensions = text.split(",") if text else []
    if len(dimensions) > MAX_DIMENSIONS:
        return "openvino.bad_constant", f"a shape of {len(dimensions)} dimensions"
    try:
        offset, size = int(data.get("offset", "")), int(data.get("size", ""))
        shape = [int(dim) for dim in dimensions]
    except ValueError:
        return "openvino.bad_constant", "its offset, size or shape is not a number"
    if offset < 0 or size < 0 or any(dim < 0 for dim in shape):
        return "openvino.bad_constant", "a negative offset, size or dimension"
    if located and weights is None and size:
        return "openvino.weights_missing", "the weights file (the .bin beside the XML) is missing"
    if weights is not None and offset + size > weights:
        return "openvino.bad_constant", f"{size} bytes at offset {offset} run past the {weights}-byte weights file"
    bits = ELEMENT_BITS.get(element)
    if bits is None:
        if element in VARIABLE_SIZE:
            return "", ""
        return "openvino.unknown_element_type", f"element type {element[:40]!r} is not one wscan knows OpenVINO has"
    needed = _bytes_needed(element, bits, math.prod(shape))
    if size < needed:  # read_model refuses only less: more is read as the shape takes
        return "openvino.bad_constant", f"{size} bytes for {element} of shape {text[:100]}, which takes {needed}"
    return "", ""


def _bytes_needed(element: str, bits: int, count: int) -> int:
    if element in GROUPS:
        values, group = GROUPS[element]
        return -(-count // values) * group
    return (count * bits + 7) // 8
