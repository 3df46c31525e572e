"""OpenVINO IR models (`openvino_model.xml` and its `.bin`): the XML read with the standard library's expat, DTDs
refused, and every constant's bytes checked against the weights file, which the XML claims.

An IR runs no code from the file: its ops are OpenVINO's own, and an op OpenVINO does not know needs an extension
library the user loads (`read_model` refuses it otherwise). What a file can get wrong is its weights: every Const
layer reads `size` bytes at `offset` of the `.bin` beside the XML (same name), as `element_type` x `shape`, and
`read_model` refuses a constant past the end of the file or of another size than its type and shape make.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

from wscan.discover import display_path
from wscan.model import Observation
from wscan.scanners.base import CLAIM_KIND, NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem, read_capped

# <?xml ...?>, comments, then the <net> element: what ov.save_model and the Model Optimizer write (and a document
# type, which none writes, so that a file with one is read and refused).
_NET = re.compile(
    rb"(\xef\xbb\xbf)?\s*(<\?xml[^>]{0,200}\?>\s*)?(<!--.{0,2000}?-->\s*|<!DOCTYPE[^[>]{0,2000}(\[.{0,8000}?\])?\s*>\s*)*<net[\s>]",
    re.S,
)
_DTD = re.compile(rb"<!(DOCTYPE|ENTITY)", re.I)
MAX_REPORTED = 100  # findings of one kind; the rest are counted
TICK = 4096  # layers between clock checks
# Bits per element of the types OpenVINO writes (ov::element::Type), packed types included.
ELEMENT_BITS = {
    "boolean": 8, "bf16": 16, "f16": 16, "f32": 32, "f64": 64, "i4": 4, "i8": 8, "i16": 16, "i32": 32, "i64": 64,
    "u1": 1, "u2": 2, "u3": 3, "u4": 4, "u6": 6, "u8": 8, "u16": 16, "u32": 32, "u64": 64, "nf4": 4,
    "f8e4m3": 8, "f8e5m2": 8, "f4e2m1": 4, "f8e8m0": 8,
}  # fmt: skip
VARIABLE_SIZE = frozenset({"string"})  # constants of strings keep their own lengths in the bytes


def looks_like_ir(head: bytes) -> bool:
    return _NET.match(head[:4096]) is not None


class OpenVinoScanner:
    """OpenVINO IR XML files, by their `<net>` root, and the weights file beside each."""

    name = "openvino"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and looks_like_ir(head.head)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        limit = ctx.limits.max_json_bytes
        if artifact.size > limit:
            detail = f"an OpenVINO IR of {artifact.size} bytes is over {limit}"
            yield artifact.observe("scan.limit", limit="max-json-bytes", detail=detail)
            return
        weights = _weights(artifact)
        if weights is not None:  # claimed first: it is this model's data even when the XML is unreadable
            yield artifact.observe(CLAIM_KIND, file=display_path(weights[0]), format="openvino-weights")
        with artifact.opener() as raw:
            data = read_capped(raw, limit)
        if _DTD.search(data):  # expat would expand its entities; OpenVINO's pugixml skips them. No IR has one.
            yield artifact.observe("openvino.malformed", reason="a document type declaration (no IR has one)")
            return
        try:
            root = ElementTree.fromstring(data)
        except ElementTree.ParseError as exc:
            yield artifact.observe("openvino.malformed", reason=f"not well-formed XML: {exc}"[:300])
            return
        if root.tag != "net":
            yield artifact.observe(NOT_MINE_KIND)
            return
        located = artifact.real_path is not None  # inside an archive, the .bin beside it is not known
        size = None if weights is None else weights[1]
        yield from _constants(artifact, ctx, root, size, located)


def _weights(artifact: Artifact) -> tuple[Path, int] | None:
    """The `.bin` OpenVINO reads beside the XML (same name), and its size; None inside an archive or when absent."""
    if artifact.real_path is None:
        return None
    path = artifact.real_path.with_suffix(".bin")
    if path.is_symlink() or not path.is_file():
        return None
    return path, path.stat().st_size


def _constants(artifact: Artifact, ctx: ScanContext, root: ElementTree.Element, weights: int | None,
               located: bool) -> Iterator[Observation]:
    reported: Counter[str] = Counter()
    for count, layer in enumerate(root.iter("layer"), 1):
        if count % TICK == 0:
            ctx.budget.check_time()
        if layer.get("type") != "Const":
            continue
        data = layer.find("data")
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
    """The observation kind and reason for a constant `read_model` would refuse, ('', '') for one it reads."""
    element = data.get("element_type", "")
    try:
        offset, size = int(data.get("offset", "")), int(data.get("size", ""))
        text = data.get("shape", "").strip()
        shape = [int(dim) for dim in text.split(",")] if text else []
    except ValueError:
        offsets = f"offset {data.get('offset')!r}, size {data.get('size')!r}, shape {data.get('shape')!r}"
        return "openvino.bad_constant", f"{offsets} are not numbers"
    if offset < 0 or size < 0 or any(dim < 0 for dim in shape):
        return "openvino.bad_constant", f"a negative offset, size or dimension ({offset}, {size}, {shape})"
    if located and weights is None and size:
        return "openvino.weights_missing", "the weights file (the .bin beside the XML) is missing"
    if weights is not None and offset + size > weights:
        return "openvino.bad_constant", f"{size} bytes at offset {offset} run past the {weights}-byte weights file"
    bits = ELEMENT_BITS.get(element)
    if bits is None:
        if element in VARIABLE_SIZE:
            return "", ""
        return "openvino.unknown_element_type", f"element type {element!r} is not one wscan knows OpenVINO to define"
    expected = (math.prod(shape) * bits + 7) // 8
    if size != expected:
        return "openvino.bad_constant", f"{size} bytes for {element} of shape {shape}, which take {expected}"
    return "", ""
