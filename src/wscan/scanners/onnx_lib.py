"""The parts of onnx the checks use: its protobuf classes, its operator schemas and its checker.

`import onnx` takes 0.3 s, 0.8 s with ml_dtypes 0.7.0: NumPy and ml_dtypes, which `onnx.helper` imports at the
top. The checks need none of that, only the generated protobuf module (`onnx_ml_pb2`) and the C++ extension
(schemas, checker). A scan worker (forked for one scan, gone after it, running nothing but wscan's scanners;
every scan has one where there is fork) loads just those two, under their own names, without running onnx's
`__init__`: about 0.1 s. Anywhere else (no fork, a program that calls a scanner itself) a later `import onnx`
must find a whole package, so there onnx is imported as usual. Both ways give the very same classes and
functions.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnx import onnx_cpp2py_export as cpp
    from onnx import onnx_ml_pb2 as pb

MAXIMUM_PROTOBUF = 2147483647  # onnx.checker refuses a serialized model this large; so does protobuf


def in_worker() -> bool:
    """Whether this process is a scan worker (see `wscan.parallel`); never imports it just to ask."""
    parallel = sys.modules.get("wscan.parallel")
    return bool(parallel is not None and getattr(parallel, "IN_WORKER", False))


def _load_parts() -> tuple[types.ModuleType, types.ModuleType]:
    """onnx_ml_pb2 and onnx_cpp2py_export, registered under their real names, with onnx's `__init__` skipped
    only in a scan worker that has not imported onnx yet."""
    if "onnx" in sys.modules or not in_worker():
        import onnx.checker  # noqa: F401  (the whole package, as any program would load it)

        return sys.modules["onnx.onnx_ml_pb2"], sys.modules["onnx.onnx_cpp2py_export"]
    spec = importlib.util.find_spec("onnx")  # finds the package without running it
    if spec is None or spec.origin is None:
        raise ImportError("onnx is not installed")
    package = types.ModuleType("onnx")
    package.__path__ = [os.path.dirname(spec.origin)]
    sys.modules["onnx"] = package
    try:
        protos = importlib.import_module("onnx.onnx_ml_pb2")
        native = importlib.import_module("onnx.onnx_cpp2py_export")
        importlib.import_module("onnx.onnx_cpp2py_export.defs")
        importlib.import_module("onnx.onnx_cpp2py_export.checker")
    finally:
        del sys.modules["onnx"]  # the stand-in goes; the two modules stay, under the names onnx gives them
    return protos, native


if not TYPE_CHECKING:
    pb, cpp = _load_parts()

AttributeProto = pb.AttributeProto
FunctionProto = pb.FunctionProto
GraphProto = pb.GraphProto
ModelProto = pb.ModelProto
NodeProto = pb.NodeProto
OperatorSetIdProto = pb.OperatorSetIdProto
SparseTensorProto = pb.SparseTensorProto
StringStringEntryProto = pb.StringStringEntryProto
TensorProto = pb.TensorProto
defs = cpp.defs


def check_tensor(tensor: TensorProto) -> None:
    """What `onnx.checker.check_tensor(tensor)` does, raising what it raises."""
    context = cpp.checker.CheckerContext()
    context.ir_version = pb.IR_VERSION
    cpp.checker.check_tensor(tensor.SerializeToString(), context)


def check_model(model: ModelProto) -> None:
    """What `onnx.checker.check_model(model, full_check=False)` does, raising what it raises."""
    data = model.SerializeToString()
    if len(data) > MAXIMUM_PROTOBUF:
        raise ValueError(
            "This protobuf of onnx model is too large (>2GiB). Call check_model with model path instead."
        )
    cpp.checker.check_model(data, False, False, False)
