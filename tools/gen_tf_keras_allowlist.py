"""Regenerate rules/allow-tf-keras.yaml: what a tf.keras 2 (tf_keras) model config may name without custom code.

Run at development time in a virtualenv with `tensorflow-cpu` and `tf-keras` (not part of the test extra: 2 GB):
`python tools/gen_tf_keras_allowlist.py`. The scanner never imports TensorFlow; it compares names. The list is
built from tf_keras' and TensorFlow's own export registries, never from a module wildcard:

* tf_keras' exported modelling classes and functions by their export name (`keras.optimizers.experimental.AdamW`),
  which is what tf_keras writes as module + class_name, and by bare class name for legacy HDF5 configs;
* tf_keras classes it writes by their defining module because they are not exported
  (`tf_keras.src.engine.functional.Functional`, `...tf_op_layer.TFOpLambda`);
* names tf_keras registered itself (`Custom>Adam`: how its optimizers appear in an HDF5 training config);
* the TensorFlow functions a `TFOpLambda`/`SlicingOpLambda` layer may call, by API name (`tensorflow.math.add`,
  `tensorflow.compat.v1.gather`). tf_keras writes such a layer for every TF op used on a Keras tensor and calls
  the named function when the model is rebuilt and run. Only functions defined in TensorFlow's tensor-maths
  modules are listed (PURE_OP_MODULES); file, print, Python-callback, dataset, summary, lookup-table, state,
  checkpoint and graph-import ops are not, whatever their name, and raw ops are never listed;
* `RaggedTensor`/`SparseTensor` factory class methods (`ClassMethod` layers) and the tensor attributes tf_keras
  delegates for ragged and sparse Keras tensors (`InstanceProperty`/`InstanceMethod` layers).

Gadgets (rules/keras.yaml keras-gadgets) are never listed.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from pathlib import Path

from pack_file import submodules, write_pack

RULES = Path(__file__).resolve().parents[1] / "rules"

# Defining modules (under tensorflow.python.ops.) whose exported functions compute on tensors and nothing else.
PURE_OP_MODULES = frozenset({
    "array_ops", "array_ops_stack", "math_ops", "nn_ops", "nn_impl", "clip_ops", "linalg_ops", "linalg.linalg_impl",
    "special_math_ops", "sort_ops", "image_ops_impl", "random_ops", "stateless_random_ops", "random_crop_ops",
    "string_ops", "sparse_ops", "embedding_ops", "histogram_ops", "manip_ops", "check_ops", "confusion_matrix",
    "bincount_ops", "ctc_ops", "numerics", "sets_impl", "tensor_getitem_override", "nn_impl_distribute",
    "candidate_sampling_ops", "weights_broadcast_ops", "parsing_ops", "gen_parsing_ops",
    "ragged.ragged_array_ops", "ragged.ragged_concat_ops", "ragged.ragged_factory_ops", "ragged.ragged_getitem",
    "ragged.ragged_math_ops", "ragged.ragged_string_ops", "ragged.segment_id_ops",
    "signal.dct_ops", "signal.fft_ops", "signal.mel_ops", "signal.mfcc_ops", "signal.reconstruction_ops",
    "signal.shape_ops", "signal.spectral_ops", "signal.window_ops",
    "numpy_ops.np_array_ops", "numpy_ops.np_math_ops",
    "gen_array_ops", "gen_math_ops", "gen_nn_ops", "gen_bitwise_ops", "gen_linalg_ops", "gen_image_ops",
    "gen_random_ops", "gen_stateless_random_ops", "gen_stateless_random_ops_v2", "gen_spectral_ops",
    "gen_sparse_ops", "gen_string_ops", "gen_special_math_ops", "gen_set_ops", "gen_ragged_array_ops",
    "gen_ragged_math_ops", "gen_ragged_conversion_ops", "gen_manip_ops", "gen_ctc_ops", "gen_count_ops",
})
PURE_FRAMEWORK = frozenset({"tensorflow.python.framework.constant_op",  # tf.constant
                            "tensorflow.python.framework.tensor_conversion"})  # tf.convert_to_tensor
# Single functions of modules that also hold state or queue ops (tf.dynamic_partition, tf.dynamic_stitch).
PURE_FUNCTIONS = frozenset({("gen_data_flow_ops", "dynamic_partition"), ("gen_data_flow_ops", "dynamic_stitch"),
                            ("gen_data_flow_ops", "parallel_dynamic_stitch")})
# ...and even there, a function that takes a file, path, stream or URL is left out (a review found
# fixed_unigram_candidate_sampler reading its vocab_file through TensorFlow's file systems).
FILE_PARAMETER = re.compile(r"(^|_)(file|filename|filepath|path|stream|url|urls|dir|directory)$")
# Modelling namespaces of tf_keras' API whose functions a config may name.
MODELLING_FUNCTIONS = ("activations", "losses", "metrics", "initializers", "regularizers", "constraints")
# tf_keras packages that hold modelling classes (unexported ones are written by their defining module).
MODELLING_PACKAGES = ("engine", "layers", "losses", "metrics", "optimizers", "initializers", "regularizers",
                      "constraints", "mixed_precision", "premade_models", "feature_column", "models")
RAGGED_SPARSE = ("RaggedTensor", "SparseTensor")


def gadgets() -> tuple[str, ...]:
    import yaml

    pack = yaml.safe_load((RULES / "keras.yaml").read_text(encoding="utf-8"))
    return tuple(pack["lists"]["keras-gadgets"])


def _gadget(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _import_all(package: str) -> None:
    submodules(package, lambda name: "_test" in name or ".tests" in name or "testing" in name)


def keras_names(mapping: dict[str, object], prefixes: tuple[str, ...]) -> set[str]:
    """tf_keras' exported modelling classes and functions: export name, and bare class name."""
    names: set[str] = set()
    for name, obj in mapping.items():
        if not name.startswith("keras.") or _gadget(name, prefixes):
            continue
        parts = name.split(".")
        if inspect.isclass(obj) and hasattr(obj, "from_config"):
            names.update({name, parts[-1]})
        elif (callable(obj) and len(parts) == 3 and parts[1] in MODELLING_FUNCTIONS
              and parts[2] not in ("get", "serialize", "deserialize")):
            names.add(name)
    return names


def internal_classes(prefixes: tuple[str, ...]) -> set[str]:
    """Serializable classes by defining module, as tf_keras writes a class it does not export."""
    names: set[str] = set()
    roots = tuple(f"tf_keras.src.{p}." for p in MODELLING_PACKAGES)
    for module in list(sys.modules.values()):
        module_name = getattr(module, "__name__", "") or ""
        if not module_name.startswith(roots) or "test" in module_name or _gadget(module_name, prefixes):
            continue
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module_name and hasattr(obj, "from_config") and hasattr(obj, "get_config"):
                names.update({f"{module_name}.{obj.__name__}", obj.__name__})
    return names


def tf_ops(mapping: dict[str, object], prefixes: tuple[str, ...]) -> set[str]:
    """`tensorflow.<api name>` for every exported function defined in a tensor-maths module."""
    from tensorflow.python.util import tf_decorator

    names: set[str] = set()
    for name, symbol in mapping.items():
        if name.startswith("keras.") or "raw_ops." in name or name.startswith("raw_ops"):
            continue
        _, target = tf_decorator.unwrap(symbol)
        if not inspect.isfunction(target):
            continue
        module = target.__module__ or ""
        local = module.removeprefix("tensorflow.python.ops.")
        pure = module in PURE_FRAMEWORK or (
            module.startswith("tensorflow.python.ops.")
            and (local in PURE_OP_MODULES or (local, target.__name__) in PURE_FUNCTIONS)
        )
        qualified = f"tensorflow.{name}"
        if pure and not _gadget(qualified, prefixes) and not _takes_a_file(target):
            names.add(qualified)
    return names


def _takes_a_file(function: object) -> bool:
    try:
        parameters = inspect.signature(function).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True  # cannot tell: not listed
    return any(FILE_PARAMETER.search(name) for name in parameters)


def tensor_methods(mapping: dict[str, object]) -> set[str]:
    """ClassMethod targets (`RaggedTensor.from_row_splits`) and delegated ragged/sparse tensor attributes."""
    from tf_keras.src.engine import keras_tensor

    names: set[str] = set()
    for class_name in RAGGED_SPARSE:
        cls = mapping[class_name]
        for attr, value in vars(cls).items():
            if attr.startswith("from_") and isinstance(value, classmethod):
                names.add(f"tensorflow.{class_name}.{attr}")
    for cls in (keras_tensor.RaggedKerasTensor, keras_tensor.SparseKerasTensor):
        names.update(f"tensorflow.<tensor>.{attr}" for attr in vars(cls) if not attr.startswith("_"))
    return names


def main() -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    import tf_keras
    from tensorflow.python.util import tf_export
    from tf_keras.src.saving import object_registration

    prefixes = gadgets()
    _import_all("tf_keras.src")
    mapping = dict(tf_export._NAME_TO_SYMBOL_MAPPING)
    entries = keras_names(mapping, prefixes) | internal_classes(prefixes) | tf_ops(mapping, prefixes)
    entries |= tensor_methods(mapping)
    entries |= {name for name in object_registration._GLOBAL_CUSTOM_OBJECTS if name.startswith("Custom>")}
    description = (
        f"Objects a tf.keras 2 model config may name without custom code, generated from tf_keras "
        f"{tf_keras.__version__} and TensorFlow {tf.__version__} by tools/gen_tf_keras_allowlist.py (exact names; "
        "gadgets and TensorFlow's file, print, callback and raw ops are never listed).\n"
    )
    write_pack("allow-tf-keras", description, {"allowed-keras-objects": sorted(entries)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
