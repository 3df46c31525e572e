"""Regenerate rules/allow-keras.yaml: the objects a Keras model config may name without custom code.

Run at development time with the test extra installed (`KERAS_BACKEND=torch python tools/gen_keras_allowlist.py`).
The scanner never imports Keras; it compares the names a config.json or an HDF5 `model_config` names with
this list. The list is built from Keras' own registry of exported symbols, never from a module wildcard:

* exported classes that can be rebuilt from a config (`from_config`), by their canonical export name
  (`keras.layers.Dense`), which is what Keras 3 writes as module + class_name;
* classes Keras writes by their defining module because they are not exported (`Functional`, the torch
  backend's optimizers), limited to `KerasSaveable` subclasses as Keras >= 3.9 itself does;
* exported functions from the modelling namespaces (activations, losses, metrics, initializers,
  regularizers, constraints, ops, random, quantizers), and the same activation/loss/metric names under
  `builtins`, which is how Keras writes a built-in function it only knows by name (a name that is also a
  Python builtin is left out: older Keras imported `builtins` and would have resolved that instead);
* bare class names, for legacy (Keras 2 / tf.keras) configs that name classes without a module.

Gadgets (the NON_MODELING_APIS Keras itself refuses, file download, safe-mode switches, TFSMLayer) are
never listed: rules/keras.yaml names them as critical whatever this list says.
"""

from __future__ import annotations

import builtins
import inspect
import os
import sys
from pathlib import Path

from pack_file import submodules, write_pack

RULES = Path(__file__).resolve().parents[1] / "rules"

MODELLING_FUNCTIONS = ("activations", "losses", "metrics", "initializers", "regularizers", "constraints", "ops",
                       "random", "quantizers")
BUILTIN_MODULES = ("activations", "constraints", "initializers", "losses", "metrics", "optimizers", "regularizers")
# Never allowed besides the gadgets of rules/keras.yaml: namespaces no model config needs.
NOT_MODELLING = ("keras.backend", "keras.visualization", "keras.tree", "keras.src.tree", "keras.utils")


def gadgets() -> tuple[str, ...]:
    """The keras-gadgets prefixes of rules/keras.yaml: one list, so the two can never disagree."""
    import yaml

    pack = yaml.safe_load((RULES / "keras.yaml").read_text(encoding="utf-8"))
    return tuple(pack["lists"]["keras-gadgets"]) + NOT_MODELLING


NEVER: tuple[str, ...] = ()
SKIP_FUNCTION_NAMES = ("get", "serialize", "deserialize")


def _import_all() -> None:
    """Import every keras.src module that imports under this backend, so every export is registered (the other
    backends' modules need their framework: named on stderr)."""
    submodules("keras.src", lambda name: name.endswith("_test") or ".tests" in name)


def _never(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in NEVER)


def exported(registry: dict[str, object], non_modeling: frozenset[str]) -> tuple[set[str], set[str]]:
    """Allowed export names, and the class names among them."""
    names: set[str] = set()
    classes: set[str] = set()
    for name, obj in registry.items():
        if name in non_modeling or _never(name):
            continue
        if inspect.isclass(obj):
            if hasattr(obj, "from_config"):
                names.add(name)
                classes.add(name.rsplit(".", 1)[1])
        elif inspect.isfunction(obj) or callable(obj):
            namespace = name.split(".")[1] if name.count(".") >= 2 else ""
            if namespace in MODELLING_FUNCTIONS and name.rsplit(".", 1)[1] not in SKIP_FUNCTION_NAMES:
                names.add(name)
    return names, classes


def internal_classes() -> tuple[set[str], set[str]]:
    """KerasSaveable subclasses by their defining module (what Keras writes for unexported classes)."""
    from keras.src.saving.keras_saveable import KerasSaveable

    names: set[str] = set()
    bare: set[str] = set()
    for module in list(sys.modules.values()):
        module_name = getattr(module, "__name__", "") or ""
        if not module_name.startswith("keras.src.") or _never(module_name):
            continue
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module_name and issubclass(obj, KerasSaveable) and obj is not KerasSaveable:
                names.add(f"{module_name}.{obj.__name__}")
                bare.add(obj.__name__)
    return names, bare


def builtin_function_names(registry: dict[str, object]) -> set[str]:
    """`builtins.<name>` for Keras' built-in activations, losses, metrics, ...: how Keras writes them by name."""
    python_builtins = set(dir(builtins))
    found: set[str] = set()
    for name, obj in registry.items():
        parts = name.split(".")
        if (len(parts) == 3 and parts[1] in BUILTIN_MODULES and inspect.isfunction(obj)
                and parts[2] not in python_builtins and parts[2] not in SKIP_FUNCTION_NAMES):
            found.add(f"builtins.{parts[2]}")
    return found


def main() -> int:
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras
    from keras.src.api_export import REGISTERED_NAMES_TO_OBJS
    from keras.src.saving.serialization_lib import NON_MODELING_APIS

    global NEVER
    NEVER = gadgets()
    _import_all()
    names, classes = exported(REGISTERED_NAMES_TO_OBJS, NON_MODELING_APIS)
    internal, bare = internal_classes()
    entries = names | internal | classes | bare | {"Functional", "Sequential", "Model"}
    entries |= builtin_function_names(REGISTERED_NAMES_TO_OBJS)
    description = (
        f"Objects a Keras model config may name without custom code, generated from Keras {keras.__version__}'s "
        "own export registry by tools/gen_keras_allowlist.py (exact names; gadgets are never listed).\n"
    )  # the newline keeps the content (and the rules digest) of the folded YAML scalar this pack used to be
    write_pack("allow-keras", description, {"allowed-keras-objects": sorted(entries)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
