"""Name what no scanner claimed, so nothing passes silently: text, media, known-but-unchecked, unknown."""

from __future__ import annotations

from wscan.model import AttrValue
from wscan.scanners.base import Head

TORCHSCRIPT_FLATBUFFER = b"PTMF"  # the flatbuffer file identifier, at offset 4
MEDIA_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "png",
    b"\xff\xd8\xff": "jpeg",
    b"GIF87a": "gif",
    b"GIF89a": "gif",
    b"%PDF-": "pdf",
}


def _is_text(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(data) - 3  # a multi-byte character cut by the head boundary
    return True


def classify_unscanned(head: Head) -> tuple[str, dict[str, AttrValue]] | None:
    """The observation for a blob no scanner accepted, or None for raw tensor bytes."""
    data = head.head
    if head.raw_data:
        return None
    if data[4:8] == TORCHSCRIPT_FLATBUFFER:
        # torch.jit.load also takes TorchScript saved as a flatbuffer, with its code inside: not a format wscan reads.
        return "torchscript.flatbuffer", {}
    for magic, name in MEDIA_MAGIC.items():
        if data.startswith(magic):
            return "file.media", {"format": name}
    if _is_text(data):
        return "file.text", {}
    return "file.unknown_format", {"head": data[:8].hex()}
