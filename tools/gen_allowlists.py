"""Regenerate rules/allow-*.yaml: the exact callables real checkpoints need.

Run at development time with the test extra installed (`python tools/gen_allowlists.py`). The scanner
never imports these libraries; it only compares names. Each list is generated from a library's own
public classes, never a module wildcard, and reviewed in the diff before it is committed.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

RULES = Path(__file__).resolve().parents[1] / "rules"

# Hand-picked: what pickle itself, NumPy and plain containers need.
CORE = [
    "builtins.set", "builtins.frozenset", "builtins.bytearray", "builtins.complex", "builtins.slice",
    "builtins.range", "builtins.object", "builtins.dict", "builtins.list", "builtins.tuple",
    "builtins.int", "builtins.float", "builtins.str", "builtins.bytes", "builtins.bool",
    "collections.OrderedDict", "collections.defaultdict", "collections.Counter", "collections.deque",
    "copyreg._reconstructor", "copyreg.__newobj__", "copyreg.__newobj_ex__", "_codecs.encode",
    "datetime.datetime", "datetime.date", "datetime.time", "datetime.timedelta", "datetime.timezone",
    "decimal.Decimal", "fractions.Fraction", "uuid.UUID", "pathlib.PosixPath", "pathlib.WindowsPath",
    "numpy.ndarray", "numpy.dtype", "numpy.core.multiarray._reconstruct", "numpy.core.multiarray.scalar",
    "numpy._core.multiarray._reconstruct", "numpy._core.multiarray.scalar", "numpy.ma.core._mareconstruct",
    "numpy.ma.core.MaskedArray", "numpy.random._pickle.__randomstate_ctor",
    "numpy.random._pickle.__bit_generator_ctor", "numpy.random._pickle.__generator_ctor",
    "numpy.random.mtrand.RandomState", "numpy.random._mt19937.MT19937", "numpy.random._pcg64.PCG64",
    "numpy.random._pcg64.PCG64DXSM", "numpy.random._philox.Philox", "numpy.random._sfc64.SFC64",
    "numpy.random._generator.Generator", "numpy.core.numeric._frombuffer", "numpy._core.numeric._frombuffer",
    "joblib.numpy_pickle.NumpyArrayWrapper",
]  # fmt: skip

NUMPY_SCALARS = [
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
    "float64", "longdouble", "complex64", "complex128", "clongdouble", "str_", "bytes_", "void",
    "datetime64", "timedelta64", "object_", "intc", "uintc", "longlong", "ulonglong",
]  # fmt: skip


def torch_names() -> list[str]:
    import torch._weights_only_unpickler as w

    names = set(w._get_allowed_globals())
    names.update({"torch._utils._rebuild_parameter_with_state", "torch.nn.parameter.Buffer"})
    return sorted(names)


def classes_under(package: str, skip: tuple[str, ...] = ()) -> list[str]:
    """Every class defined in `package` and its submodules, by the name pickle records."""
    root = importlib.import_module(package)
    names: set[str] = set()
    modules = [root]
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if any(part in info.name for part in ("tests", ".conftest", *skip)):
            continue
        try:
            modules.append(importlib.import_module(info.name))
        except Exception:
            continue
    for module in modules:
        for _, obj in inspect.getmembers(module, inspect.isclass):
            mod = getattr(obj, "__module__", "") or ""
            if mod.startswith(package) and getattr(obj, "__qualname__", "").isidentifier():
                names.add(f"{mod}.{obj.__qualname__}")
    return sorted(names)


def write(name: str, description: str, entries: list[str]) -> None:
    lines = [f"pack: allow-{name}", f"description: >\n  {description}", "lists:", "  allowed-callables:"]
    lines += [f"    - {entry}" for entry in sorted(set(entries))]
    (RULES / f"allow-{name}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    numpy_names = [f"numpy.{s}" for s in NUMPY_SCALARS]
    write(
        "core", "Python containers, copyreg helpers, NumPy reconstruction (hand-picked).", CORE + numpy_names
    )
    write(
        "torch", "Tensor, storage, dtype and rebuild helpers: torch's weights_only allowlist.", torch_names()
    )
    write(
        "sklearn",
        "Classes defined in scikit-learn (estimators, trees, losses) and SciPy sparse matrices.",
        classes_under("sklearn", skip=("externals", "_build_utils", "experimental"))
        + [n for n in classes_under("scipy.sparse") if "._" in n or n.count(".") == 2],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
