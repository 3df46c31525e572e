"""Name what no scanner claimed, so nothing passes silently: text, media, known-but-unchecked, unknown."""

from __future__ import annotations

from wscan.model import AttrValue
from wscan.scanners.base import Head

TORCHSCRIPT_FLATBUFFER = b"PTMF"  # the flatbuffer file identifier, at offset 4
# Shared libraries and executables: a model folder has no use for one, but a loader that takes a library path
# (Sudachi's plugins, ctypes in model code) runs it, and the Hugging Face cache gives it a predictable path.
NATIVE_MAGIC = {
    b"\x7fELF": "ELF",
    b"\xfe\xed\xfa\xce": "Mach-O", b"\xfe\xed\xfa\xcf": "Mach-O", b"\xce\xfa\xed\xfe": "Mach-O",
    b"\xcf\xfa\xed\xfe": "Mach-O",
}  # fmt: skip
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


def _is_pe(data: bytes) -> bool:
    """A Windows executable or DLL: the MZ stub, and the PE signature where its header offset points."""
    if not data.startswith(b"MZ") or len(data) < 0x40:
        return False
    offset = int.from_bytes(data[0x3C:0x40], "little")
    return data[offset : offset + 4] == b"PE\0\0"


def classify_unscanned(head: Head) -> tuple[str, dict[str, AttrValue]] | None:
    """The observation for a blob no scanner accepted, or None for raw tensor bytes."""
    data = head.head
    if head.raw_data:
        return None
    if data[4:8] == TORCHSCRIPT_FLATBUFFER:
        # torch.jit.load also takes TorchScript saved as a flatbuffer, with its code inside: not a format wscan reads.
        return "torchscript.flatbuffer", {}
    native = next((name for magic, name in NATIVE_MAGIC.items() if data.startswith(magic)), None)
    if native is None and _is_pe(data):
        native = "PE"
    if native is not None:
        return "file.native_code", {"format": native}
    for magic, name in MEDIA_MAGIC.items():
        if data.startswith(magic):
            return "file.media", {"format": name}
    if _is_text(data):
        return "file.text", {}
    return "file.unknown_format", {"head": data[:8].hex()}
