"""Regenerate rules/allow-*.yaml: the exact callables real checkpoints need.

Run at development time with the test extra installed (`python tools/gen_allowlists.py`). The scanner
never imports these libraries; it only compares names. Each list is generated from a library's own
public classes, never a module wildcard, and reviewed in the diff before it is committed.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import json
import pkgutil
import sys
import types
import typing
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
    # SeedSequence (a random_state of HistGradientBoosting & co.) and its Cython unpickle helper.
    "numpy.random.bit_generator.SeedSequence", "numpy.random.bit_generator.__pyx_unpickle_SeedSequence",
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
    # Helpers torch.jit.load's own unpickler knows for TorchScript's data/constants/debug pickles.
    names.update(
        f"torch.jit._pickle.{n}"
        for n in ("build_intlist", "build_tensorlist", "build_doublelist", "build_boollist",
                  "build_tensor_from_id", "restore_type_tag")
    )  # fmt: skip
    return sorted(names)


# transformers.Trainer saves its arguments with torch.save (training_args.bin). Besides the classes named
# by the dataclass fields (walked below), __post_init__ stores these objects on the instance, and they
# are pickled with it. Exact names only.
TRAINING_ARGS_CLASSES = [
    "transformers.training_args.TrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
]
TRAINING_ARGS_POST_INIT = [
    "transformers.trainer_pt_utils.AcceleratorConfig",  # accelerator_config dict -> dataclass
    "accelerate.state.PartialState",  # distributed_state, cached by the device setup
    "accelerate.utils.dataclasses.DistributedType",  # PartialState.distributed_type
]
TRAINING_ARGS_LIBRARIES = ("transformers.", "accelerate.")


def _classes_in_hint(hint: object, found: set[type]) -> None:
    if typing.get_origin(hint) is not None:
        for arg in typing.get_args(hint):
            _classes_in_hint(arg, found)
    elif isinstance(hint, type):
        found.add(hint)


def training_args_names() -> list[str]:
    """TrainingArguments classes, the enums and config classes their fields can hold, and what
    __post_init__ caches on them: everything a training_args.bin pickle names."""
    names: set[str] = set(TRAINING_ARGS_POST_INIT)
    for dotted in TRAINING_ARGS_CLASSES:
        module_name, _, class_name = dotted.rpartition(".")
        cls = getattr(importlib.import_module(module_name), class_name)
        names.add(dotted)
        hints = typing.get_type_hints(cls)
        found: set[type] = set()
        for item in dataclasses.fields(cls):
            _classes_in_hint(hints[item.name], found)
        for klass in found:
            module = klass.__module__ or ""
            if module.startswith(TRAINING_ARGS_LIBRARIES) and (
                issubclass(klass, enum.Enum) or dataclasses.is_dataclass(klass) or klass.__name__.endswith("Config")
            ):
                names.add(f"{module}.{klass.__qualname__}")
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
        names.update(reduce_helpers(module))
    return sorted(names)


def reduce_helpers(module: types.ModuleType) -> list[str]:
    """Module-level functions a library's own classes name in __reduce__: Cython's generated
    `__pyx_unpickle_<Class>` (it only calls <Class>.__new__ on a subtype and sets typed fields) and
    scikit-learn's `newObj` (`cls.__new__(cls)`, like copyreg.__newobj__)."""
    found = []
    for attr, value in vars(module).items():
        if (attr.startswith("__pyx_unpickle_") or attr == "newObj") and callable(value):
            found.append(f"{module.__name__}.{attr}")
    return found


def architecture_names() -> list[str]:
    """Every model class transformers' Auto classes map to: what `architectures` in config.json names."""
    names: set[str] = set()
    for module_name in ("modeling_auto", "modeling_tf_auto", "modeling_flax_auto"):
        module = importlib.import_module(f"transformers.models.auto.{module_name}")
        for attr, value in vars(module).items():
            if attr.endswith("_MAPPING_NAMES") and isinstance(value, dict):
                for entry in value.values():
                    names.update(e for e in (entry if isinstance(entry, tuple | list) else (entry,)) if e)
    return sorted(names)


def write(name: str, description: str, entries: list[str], list_name: str = "allowed-callables",
          pack: str | None = None) -> None:
    pack = pack or f"allow-{name}"
    # The description ends in a newline, as the folded YAML scalar these packs used to be: same content, same
    # rules digest, so attestations made before the change still match.
    data = {"pack": pack, "description": description + "\n", "lists": {list_name: sorted(set(entries))}}
    # JSON is YAML too, and wscan reads a built-in pack that is JSON at C speed (see rules/loader.py).
    (RULES / f"{pack}.yaml").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


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
    write(
        "transformers",
        "What transformers.Trainer pickles into training_args.bin: the arguments dataclasses, the enums and "
        "config classes their fields hold, and the accelerate state cached on them (exact names).",
        training_args_names(),
    )
    write(
        "architectures",
        "Model classes transformers ships (its Auto mappings): config.json architectures that need no custom code.",
        architecture_names(),
        list_name="transformers-architectures",
        pack="known-architectures",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
