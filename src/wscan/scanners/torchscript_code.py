"""The code/ files of a TorchScript archive: torch.jit.load compiles and runs them, never importing Python.

TorchScript cannot import modules, but its operators include file I/O: `torch.save` writes any path and
`torch.from_file` reads one, from `__setstate__` (while the archive loads) or `forward` (at model(x)); a review
proved both. Each file is listed for review (WS-TS-001) and those operators are reported where they are named.
The text is searched, never compiled.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem

MAX_CODE_BYTES = 64 * 1024 * 1024  # TorchScript code of a large model is a few MB
MAX_REPORTED = 20
# The operators that read or write a file, as serialized TorchScript spells them (`torch.save(...)`) or through
# the operator namespace (`ops.aten.save`, `torch.ops.aten.from_file`).
_ATEN = rb"ops\s*\.\s*aten\s*\.\s*"
FILE_OPERATORS = re.compile(rb"\b(?:torch\s*\.\s*(?:" + _ATEN + rb")?|" + _ATEN + rb")(save|from_file)\b")


def is_torchscript_code(head: Head) -> bool:
    """A source file under code/ of an archive laid out as TorchScript (the `.debug_pkl` beside each is a pickle)."""
    return (head.container == "torchscript" and "/code/" in "/" + head.name and head.name.endswith(".py")
            and not head.raw_data)  # fmt: skip


class TorchScriptCodeScanner:
    """Code files of TorchScript archives: listed, and searched for operators that read or write files."""

    name = "torchscript"

    def accepts(self, head: Head) -> bool:
        return is_torchscript_code(head)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        yield artifact.observe("torchscript.code", size=artifact.size)
        if artifact.size > MAX_CODE_BYTES:
            detail = f"TorchScript code of {artifact.size} bytes, more than the {MAX_CODE_BYTES} searched"
            yield artifact.observe("scan.limit", limit="max-code-bytes", detail=detail)
            return
        with artifact.opener() as raw:
            source = raw.read(MAX_CODE_BYTES)
        for count, match in enumerate(FILE_OPERATORS.finditer(source)):
            if count >= MAX_REPORTED:
                break
            line = source.count(b"\n", 0, match.start()) + 1
            yield artifact.observe("torchscript.file_operator", operator=match.group(1).decode(), line=line)
