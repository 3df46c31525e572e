"""Which files and folders near a model's weights Python would import in place of a library (WS-CODE-015).

Python run from a model folder (a script there, `python -c`, a notebook) puts that folder first on `sys.path`, so a
`numpy.py`, a `sklearn/` package or a link named like one beside the weights runs when they load. Shared by the
code scanners and by discovery, which reports symlinked folders without walking them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from wscan.loader_imports import LOADER_IMPORTS
from wscan.lookup import is_file

MAX_PARENT_LEVELS = 4  # code in a model's subfolders (custom_generate/, 0_Transformer/, packages) is model code
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".onnx", ".h5", ".keras", ".pkl",
                    ".npz", ".msgpack", ".joblib")
# What else a loader unpickles from a folder (joblib's compressed dumps, skops files, scikit-learn's `.sav`), and the
# compression a name may end with after a weights suffix; names compared whatever their case (MODEL.PKL loads too).
_MORE_WEIGHTS = (".pickle", ".sav", ".skops", ".dill", ".npy")
_COMPRESSION = (".gz", ".bz2", ".xz", ".lzma", ".z", ".lz4", ".zst")


def is_weights(name: str) -> bool:
    """Whether a file name is one a loader reads weights or a pickle from (helper 230 hid code beside MODEL.PKL,
    model.pkl.gz, model.sav and a .skops file, none counted as weights)."""
    lower = name.lower()
    for suffix in _COMPRESSION:
        if lower.endswith(suffix):
            lower = lower[: -len(suffix)]
            break
    return lower.endswith(_WEIGHT_SUFFIXES + _MORE_WEIGHTS)


# Modules a flavour's loader goes on to import (besides the standard library): a file of that name in a `code:`
# folder, first on sys.path, runs instead.
# The list is of names seen imported while MLflow loads sklearn, pytorch and pyfunc models (sys.modules before and
# after), plus the usual ML stack; a name outside it is medium (WS-REPO-012), and the files are read as code anyway.
COMMON_IMPORTS: frozenset[str] = frozenset({
    "mlflow", "torch", "numpy", "pandas", "sklearn", "scipy", "cloudpickle", "yaml", "packaging", "requests",
    "transformers", "tensorflow", "keras", "PIL", "joblib", "pyarrow", "sqlalchemy", "click", "importlib_metadata",
    "google", "cachetools", "sentence_transformers", "huggingface_hub", "tokenizers", "safetensors", "onnx",
    "onnxruntime", "xgboost", "lightgbm", "catboost", "langchain", "openai", "pydantic", "typing_extensions",
    "threadpoolctl", "narwhals", "rich", "lz4", "tqdm", "filelock", "fsspec", "regex", "urllib3", "certifi",
    "charset_normalizer", "idna", "six", "attr", "attrs", "jinja2", "markupsafe", "psutil", "dateutil", "pytz",
    "tzdata", "sqlparse", "grpc", "opentelemetry", "databricks", "flask", "werkzeug", "docker", "git", "alembic",
    "graphene", "matplotlib", "numba", "llvmlite", "sentencepiece", "accelerate", "peft", "datasets", "diffusers",
    "einops", "timm", "torchvision", "torchaudio", "triton", "sympy", "networkx", "mpmath", "fastapi", "starlette",
    "uvicorn", "anyio", "httpx", "h11", "sniffio", "annotated_types", "typing_inspection", "pydantic_core",
    "cryptography", "cffi", "pygments", "markdown_it", "mdurl", "zstandard", "pyparsing", "kiwisolver", "cycler",
    "fonttools", "contourpy", "gunicorn", "waitress", "setuptools", "pkg_resources", "wheel", "pip", "distutils",
})  # fmt: skip
# Top-level modules a model's loaders import (and scikit-learn 1.5's `_loss`, which its pickles name): Python run from
# the model folder (a script there, `python -c`, a notebook) imports a file or package of that name from the folder
# first, so one there runs in place of the library when the weights load (helper 229: a `_loss/` package beside a
# pickle, never read).
# Standard modules no loader imports, whose names model folders use for their own scripts (a `test.py` beside the
# weights), are left out, and so are those no folder can shadow: built into the interpreter (`time`), or imported
# before the folder is on sys.path (`os`, `io`, `abc`: Python's start-up). Modules the standard library imports if
# present are in (helper 230: `copy` tries `org.python.core`, `sysconfig` its `_sysconfigdata_*`).
NEVER_IMPORTED = frozenset({"test", "this", "antigravity", "idlelib", "turtle", "turtledemo", "tkinter", "__main__"})
AT_START_UP = frozenset({"abc", "codecs", "encodings", "io", "os", "stat", "posixpath", "ntpath", "genericpath",
                         "_collections_abc", "site", "_sitebuiltins"})  # fmt: skip
OPTIONAL_IMPORTS = frozenset({"org", "sitecustomize", "usercustomize", "skops", "_loss"})
SHADOWED = (
    (COMMON_IMPORTS | LOADER_IMPORTS | frozenset(sys.stdlib_module_names) | OPTIONAL_IMPORTS)
    - NEVER_IMPORTED - AT_START_UP - frozenset(sys.builtin_module_names)
)
SHADOWED_PREFIXES = ("_sysconfigdata_",)
# A folder without __init__.py joins these namespace packages, and may shadow their parts (helper 239: urllib3 imports
# `backports.zstd`; a `backports/zstd.pyc` beside the weights ran, none being installed).
NAMESPACE_LIBRARIES = frozenset({"google", "backports"})
# How Python names a module file (importlib's suffixes, for any interpreter: a 3.12 extension module shadows under
# 3.12): source, bytecode, and extension modules (`numpy.so`, `numpy.abi3.so`, `numpy.cpython-311-x86_64-linux-gnu.so`,
# Windows' `numpy.cp311-win_amd64.pyd`; helper 238 ran one beside the weights, and a package whose only file was
# `__init__.pyc`).
MODULE_FILE = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*)(?:\.py|\.pyc|\.pyw|(?:\.(?:cpython-[\w-]+|abi3|cp\d+-[\w-]+))?\.(?:so|pyd))", re.ASCII
)
MAX_LISTING = 10_000
MAX_SUBFOLDERS = 200  # folders below a shadowing module's looked into for weights


def listing(folder: Path) -> list[str] | None:
    """The folder's first MAX_LISTING names, None when it cannot be listed."""
    try:
        return [entry.name for _, entry in zip(range(MAX_LISTING), folder.iterdir(), strict=False)]
    except OSError:
        return None


def shadowed_module(path: Path) -> str:
    """The module a file near a model's weights (or the package it is in) would be imported as in place of a
    library's (`numpy.py`, `sklearn/__init__.py`, `_loss.pyc`), else "": Python run from that folder imports it first.
    The weights may be beside it or in a folder below (run from the repository's top, a loader of models/x.pkl
    still imports the top's numpy.py). A folder without `__init__.py` is a namespace portion, which never wins over
    an installed package."""
    path = path.absolute()
    for candidate in (path, *path.parents[:MAX_PARENT_LEVELS]):
        stem = module_name(candidate.name) if candidate == path else candidate.name
        if not stem or not shadows(stem):
            continue
        if candidate != path and stem not in NAMESPACE_LIBRARIES and not is_package(candidate):
            continue
        if weights_at_or_below(candidate.parent):
            return stem
    return ""


def module_name(file_name: str) -> str:
    """The module Python imports a file as (`numpy.py`, `numpy.cpython-311-x86_64-linux-gnu.so`: numpy), else ""."""
    found = MODULE_FILE.fullmatch(file_name)
    return found.group(1) if found else ""


def is_package(folder: Path) -> bool:
    """Whether Python imports a folder as a regular package: an `__init__` it can load (source, bytecode or an
    extension module), not only `__init__.py`."""
    names = listing(folder)
    return names is not None and any(module_name(name) == "__init__" and is_file(folder / name) for name in names)


def shadows(stem: str) -> bool:
    """Whether a top-level module of this name, in the folder Python runs from, is imported in place of a library."""
    return stem in SHADOWED or stem.startswith(SHADOWED_PREFIXES)


def weights_at_or_below(folder: Path) -> bool:
    """Weights in the folder or in a folder directly below it."""
    names = listing(folder)
    if names is None:
        return False
    if any(is_weights(n) for n in names):
        return True
    for name in names[:MAX_SUBFOLDERS]:
        below = folder / name
        if below.is_dir() and not below.is_symlink():
            inner = listing(below)
            if inner is not None and any(is_weights(n) for n in inner):
                return True
    return False


def shadowing_link(link: Path) -> str:
    """The module a symlinked folder near the weights would be imported as (`numpy -> lib/`), else "": Python follows
    the link as it would a folder, while the scan reports the link and reads its target under the target's own name
    (lib/__init__.py ran as numpy, and the scan passed with the link at medium)."""
    stem = link.name
    if not shadows(stem) or (stem not in NAMESPACE_LIBRARIES and not is_package(link)):
        return ""
    return stem if weights_at_or_below(link.parent) else ""
