"""The scanner table: every format wscan reads, in the order they are tried.

Every scanner whose `accepts` says yes runs, so a polyglot file (a pickle that is also a zip) is read
both ways. Third parties add scanners through the `wscan.scanners` entry-point group.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from wscan.scanners.archive import SevenZipScanner, TarScanner, ZipScanner
from wscan.scanners.base import Scanner
from wscan.scanners.compressed import CompressedScanner
from wscan.scanners.gguf import GgufScanner
from wscan.scanners.keras import KerasScanner
from wscan.scanners.numpy import NpyScanner
from wscan.scanners.onnx_model import OnnxScanner
from wscan.scanners.pickle import PickleScanner
from wscan.scanners.python_code import PythonCodeScanner
from wscan.scanners.repo_files import ModelCardScanner, RepoJsonScanner, TemplateFileScanner
from wscan.scanners.safetensors import SafetensorsScanner
from wscan.scanners.shards import ShardIndexScanner
from wscan.scanners.tf_graph import TfGraphScanner


def builtin_scanners() -> list[Scanner]:
    """Scanners shipped with wscan."""
    return [
        ZipScanner(),
        TarScanner(),
        SevenZipScanner(),
        CompressedScanner(),
        NpyScanner(),
        SafetensorsScanner(),
        GgufScanner(),
        KerasScanner(),
        TfGraphScanner(),
        OnnxScanner(),
        PickleScanner(),
        ShardIndexScanner(),
        RepoJsonScanner(),
        TemplateFileScanner(),
        ModelCardScanner(),
        PythonCodeScanner(),
    ]


def all_scanners() -> list[Scanner]:
    """Built-in scanners followed by those registered by installed plugins."""
    scanners = builtin_scanners()
    for entry in entry_points(group="wscan.scanners"):
        scanners.append(entry.load()())
    return scanners
