"""Regenerate rules/allow-keras-hub.yaml: the KerasHub objects a preset's configs may name.

A KerasHub preset (`config.json`, `task.json`, `preprocessor.json`, `tokenizer.json` beside `model.weights.h5`)
names KerasHub's own classes by defining module and registered name (`keras_hub>LlamaBackbone`); Keras resolves
the registered name among the objects KerasHub registered when it was imported. Run at development time with
keras-hub installed (it is not a test dependency): `KERAS_BACKEND=tensorflow python tools/gen_keras_hub_allowlist.py`.

Listed, from KerasHub's own registry: the Keras-saveable classes it registered (backbones, tasks, preprocessors,
tokenizers, layers), its samplers and activations, each by `module.Name` and by `keras_hub>Name`. Its utilities
that upload presets or write vocabulary files are not listed; rules/keras.yaml names them as gadgets.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

from pack_file import submodules, write_pack

RULES = Path(__file__).resolve().parents[1] / "rules"
PACKAGE = "keras_hub"
ACTIVATIONS = ("gelu_approximate",)  # the one registered function a layer's config may name
NOT_MODELLING = (
    "upload_preset", "compute_", "coco_", "imagenet_", "decode_imagenet", "serialize", "deserialize", "get",
)


def _import_all() -> None:
    submodules(f"{PACKAGE}.src", lambda name: "_test" in name or ".tests" in name)


def _modelling(key: str, obj: object) -> bool:
    from keras.src.saving.keras_saveable import KerasSaveable

    name = key.split(">", 1)[1]
    if any(name == skip or name.startswith(skip) for skip in NOT_MODELLING):
        return False
    if inspect.isclass(obj):
        return issubclass(obj, KerasSaveable) or obj.__module__.startswith(f"{PACKAGE}.src.samplers")
    return inspect.isfunction(obj) and name in ACTIVATIONS


def main() -> int:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import keras_hub

    _import_all()
    entries: set[str] = set()
    for key, obj in keras.saving.get_custom_objects().items():
        # KerasHub registers everything twice: as keras_hub>Name and, for older presets, keras_nlp>Name
        if key.startswith((f"{PACKAGE}>", "keras_nlp>")) and _modelling(key, obj):
            entries.add(key)
            entries.add(f"{obj.__module__}.{getattr(obj, '__name__', key.split('>', 1)[1])}")
    description = (
        f"KerasHub objects a preset's configs may name, generated from keras-hub {keras_hub.__version__}'s own "
        "registry by tools/gen_keras_hub_allowlist.py (exact names; its upload and vocabulary-writing utilities are "
        "never listed).\n"
    )
    write_pack("allow-keras-hub", description, {"allowed-keras-objects": sorted(entries)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
