"""GGUF files written by the real `gguf` package's GGUFWriter, as llama.cpp's converters write them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gguf.gguf_writer import GGUFWriter


def write_gguf(path: Path, fill: Callable[[GGUFWriter], object], arch: str = "llama", **kwargs: Any) -> Path:
    """A GGUF of architecture `arch` whose metadata and tensors `fill` adds (kwargs go to GGUFWriter)."""
    writer = GGUFWriter(str(path), arch, **kwargs)
    fill(writer)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def gguf_with_template(path: Path, template: str) -> Path:
    """A GGUF holding only a chat template."""
    return write_gguf(path, lambda writer: writer.add_chat_template(template))
