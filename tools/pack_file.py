"""What the generators in tools/ share: the format they write a rule pack in, how they import a library's
submodules, and how they record the names their own freshly made pickles import."""

from __future__ import annotations

import importlib
import io
import json
import pickle
import pkgutil
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

RULES = Path(__file__).resolve().parents[1] / "rules"


def write_pack(name: str, description: str, lists: dict[str, list[str]]) -> None:
    """rules/<name>.yaml as JSON (JSON is YAML too, and wscan reads a built-in pack that is JSON at C speed, see
    rules/loader.py), and how many names it holds, on stderr."""
    data = {"pack": name, "description": description, "lists": lists}
    (RULES / f"{name}.yaml").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"{sum(len(values) for values in lists.values())} names", file=sys.stderr)


def submodules(package: str, skip: Callable[[str], bool] = lambda name: False) -> list[types.ModuleType]:
    """`package` and every submodule of it that imports, but those `skip` names. One that does not import (an
    optional dependency missing, another backend's module) is named on stderr: whatever it defines is missing from
    the pack, as category_encoders' GLMMEncoder once was, unnoticed, where statsmodels was not installed."""
    root = importlib.import_module(package)
    modules = [root]
    for info in pkgutil.walk_packages(getattr(root, "__path__", []), package + ".", onerror=lambda name: None):
        if skip(info.name):
            continue
        try:  # a package walk_packages could not import fails here again, and is named once
            modules.append(importlib.import_module(info.name))
        except Exception as error:
            print(f"not in the pack: {info.name} ({type(error).__name__}: {error})", file=sys.stderr)
    return modules


class _Recorder(pickle.Unpickler):
    """Loads a pickle and notes every global it imports. Only for this tool's own pickles, made a moment before:
    loading runs them."""

    def __init__(self, stream: BinaryIO, names: set[str]) -> None:
        super().__init__(stream)
        self.names = names

    def find_class(self, module: str, name: str) -> object:
        self.names.add(f"{module}.{name}")
        return super().find_class(module, name)


def record_imports(stream: BinaryIO, names: set[str]) -> None:
    """Add to `names` the globals the pickle in `stream` (one this tool just wrote) imports."""
    _Recorder(stream, names).load()


def record_folder(folder: Path, objects: dict[str, object], protocol: int, header: str) -> None:
    """Pickle each object to `folder/<label>.pkl` and write `folder/names.txt`: the `header` line, then every global
    those pickles import. What tools/record_old_*.py keep of an older library: its real files, as test data, and
    the names tools/gen_tabular_allowlist.py adds."""
    names: set[str] = set()
    for label, obj in objects.items():
        blob = pickle.dumps(obj, protocol=protocol)
        (folder / f"{label}.pkl").write_bytes(blob)
        record_imports(io.BytesIO(blob), names)
    listed = "".join(f"{name}\n" for name in sorted(names))
    (folder / "names.txt").write_text(f"# {header}\n{listed}", encoding="utf-8")
    print(f"{len(names)} names", file=sys.stderr)

