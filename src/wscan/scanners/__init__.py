"""The scanner table: every format wscan reads, in the order they are tried.

Every scanner whose `accepts` says yes runs, so a polyglot file (a pickle that is also a zip) is read
both ways. Third parties add scanners through the `wscan.scanners` entry-point group.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder

from wscan.scanners.archive import LenientZipScanner, SevenZipScanner, TarScanner, ZipScanner
from wscan.scanners.base import Scanner
from wscan.scanners.booster_files import BoosterFileScanner
from wscan.scanners.compressed import CompressedScanner
from wscan.scanners.config_targets import ConfigTargetScanner
from wscan.scanners.flax_msgpack import FlaxMsgpackScanner
from wscan.scanners.framework_code import FrameworkCodeScanner
from wscan.scanners.gguf import GgufScanner
from wscan.scanners.git_files import GitFilesScanner
from wscan.scanners.gluonts_serde import TypeFileScanner
from wscan.scanners.keras import KerasScanner
from wscan.scanners.numpy import NpyScanner
from wscan.scanners.ocdbt import OcdbtScanner
from wscan.scanners.onnx_model import LenientOnnxScanner, OnnxScanner
from wscan.scanners.openvino import OpenVinoScanner
from wscan.scanners.pickle import PickleScanner
from wscan.scanners.pt2 import Pt2GraphScanner
from wscan.scanners.python_bytecode import PythonBytecodeScanner
from wscan.scanners.python_code import PythonCodeScanner
from wscan.scanners.repo_files import ModelCardScanner, RepoJsonScanner, TemplateFileScanner
from wscan.scanners.safetensors import SafetensorsScanner
from wscan.scanners.sb3_data import Sb3DataScanner
from wscan.scanners.sentencepiece_model import SentencePieceScanner
from wscan.scanners.shards import ShardIndexScanner
from wscan.scanners.tf_checkpoint import TfCheckpointScanner
from wscan.scanners.tf_graph import TfGraphScanner
from wscan.scanners.tflite import TfliteScanner
from wscan.scanners.torchscript_code import TorchScriptCodeScanner


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
        FlaxMsgpackScanner(),
        SentencePieceScanner(),
        KerasScanner(),
        TfGraphScanner(),
        TfliteScanner(),
        TfCheckpointScanner(),
        OcdbtScanner(),
        OnnxScanner(),
        OpenVinoScanner(),
        PickleScanner(),
        ShardIndexScanner(),
        BoosterFileScanner(),
        Sb3DataScanner(),
        Pt2GraphScanner(),
        RepoJsonScanner(),
        TypeFileScanner(),
        TemplateFileScanner(),
        ConfigTargetScanner(),
        FrameworkCodeScanner(),
        ModelCardScanner(),
        PythonCodeScanner(),
        PythonBytecodeScanner(),
        TorchScriptCodeScanner(),
        GitFilesScanner(),
    ]


def fallback_scanners() -> list[Scanner]:
    """Scanners tried only on a blob no other scanner read: sniffs too loose to run beside the others."""
    # What protobuf would still read as an ONNX model, what zipfile or miniz would still read as a zip.
    return [LenientOnnxScanner(), LenientZipScanner()]


PLUGIN_GROUP = "wscan.scanners"


def all_scanners() -> list[Scanner]:
    """Built-in scanners followed by those registered by installed plugins."""
    scanners = builtin_scanners()
    if _plugins_may_be_installed():
        from importlib.metadata import entry_points

        for entry in entry_points(group=PLUGIN_GROUP):
            scanners.append(entry.load()())
    return scanners


def _plugins_may_be_installed() -> bool:
    """Whether any installed distribution may declare a scanner. `importlib.metadata` takes 50 to 100 ms to
    import and ask, a third of a scan's start-up, so the `entry_points.txt` files it would read are searched
    for the group's name first. Anything this search cannot see into (a zip on sys.path, another kind of
    distribution finder) counts as a yes, and `importlib.metadata` decides."""
    if any(hasattr(finder, "find_distributions") and finder is not PathFinder for finder in sys.meta_path):
        return True
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except NotADirectoryError:
            return True  # a zip archive on the path may hold distributions
        except OSError:
            continue
        for name in names:
            lowered = name.lower()
            if lowered.endswith(".egg"):
                return True  # an egg keeps its metadata in EGG-INFO/: importlib.metadata decides
            if not lowered.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), "rb") as handle:
                    if PLUGIN_GROUP.encode() in handle.read():
                        return True
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                return True
    return False
