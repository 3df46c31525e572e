"""Keep TensorFlow Lite models as test data: files TensorFlow's converter wrote, and hostile variants of them, each
with what TensorFlow Lite's Python interpreter did with it.

Why: TensorFlow is not a test dependency (600 MB). The benign files are what `tf.lite.TFLiteConverter` writes; the
hostile ones are converted from functions that read and write files with `SELECT_TF_OPS` (Flex ops), or are one of
those with one thing changed through the schema's object API (`schema_py_generated`, shipped with TensorFlow).
Every file is then loaded and invoked in a fresh process by `--run-with` (a Python whose `tf.lite.Interpreter` links
the Flex delegate: tensorflow-cpu 2.15.1's does, 2.21's does not), and what happened is written to the folder's
README.

Run where tensorflow is installed, in a virtualenv of its own, from the project root:
    python tools/record_tflite_files.py tests/data/tflite --run-with /path/to/tf2.15/bin/python
"""

from __future__ import annotations

import argparse
import io
import pickle
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

RUN = """
import os, sys, numpy as np, tensorflow as tf
marker = sys.argv[2]
try:
    it = tf.lite.Interpreter(model_path=sys.argv[1])
    it.allocate_tensors()
    for detail in it.get_input_details():
        it.set_tensor(detail["index"], np.ones(detail["shape"], detail["dtype"]))
    it.invoke()
except BaseException as exc:
    print(f"refused: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
else:
    print("ran" + (", and wrote the marker file" if os.path.exists(marker) else ""))
"""


def _convert(function: Any, module: Any, select: bool = False, custom: bool = False,
             quantize: bool = False, offsets: bool = False) -> bytes:
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_concrete_functions([function.get_concrete_function()], module)
    if select:
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]
    converter.allow_custom_ops = custom
    if quantize:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if offsets:
        converter._experimental_use_buffer_offset = True  # what models over 2 GB are written with
    data: bytes = converter.convert()
    return data


def benign() -> dict[str, bytes]:
    import tensorflow as tf

    class Dense(tf.Module):
        def __init__(self) -> None:
            self.w = tf.Variable(tf.random.stateless_normal([64, 32], seed=[1, 2]))  # big enough to quantize

        @tf.function(input_signature=[tf.TensorSpec([1, 64], tf.float32)])
        def f(self, x: Any) -> Any:
            return tf.nn.relu(tf.matmul(x, self.w) + 1.0)

    class Strings(tf.Module):  # a Flex op that reaches nothing: tf.strings.as_string
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def f(self, x: Any) -> Any:
            return tf.strings.length(tf.strings.as_string(x))

    dense, strings = Dense(), Strings()
    plain = _convert(dense.f, dense)
    return {
        "dense.tflite": plain,
        "dense-associated-files.tflite": _associated(plain, {"labels.txt": b"background\ntench\ngoldfish\n"}),
        "dense-quantized.tflite": _convert(dense.f, dense, quantize=True),
        "dense-buffer-offsets.tflite": _convert(dense.f, dense, offsets=True),
        "flex-strings.tflite": _convert(strings.f, strings, select=True),
        "custom-op.tflite": _convert(strings.f, strings, custom=True),
    }


def hostile(marker: str) -> dict[str, bytes]:
    import tensorflow as tf

    class FileIo(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def f(self, x: Any) -> Any:
            tf.io.write_file(marker, tf.io.read_file("/etc/hostname"))
            return x * 2.0

    class PrintToFile(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def f(self, x: Any) -> Any:
            tf.print(x, output_stream=f"file://{marker}")
            return x * 2.0

    class Dense(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32)])
        def f(self, x: Any) -> Any:
            return tf.nn.relu(x)

    io, printer, dense = FileIo(), PrintToFile(), Dense()
    flex_io = _convert(io.f, io, select=True)
    return {
        "associated-pickle.tflite": _associated(_convert(dense.f, dense), {"labels.pkl": pickle.dumps(_Payload())}),
        "flex-read-write.tflite": flex_io,
        "flex-print-to-file.tflite": _convert(printer.f, printer, select=True),
        **{name: _changed(flex_io, change) for name, change in CHANGES.items()},
    }


class _Payload:
    """A pickle that would run `echo` when unpickled (never unpickled here)."""

    def __reduce__(self) -> tuple[Any, ...]:
        import os

        return os.system, ("echo tflite-payload",)


def _associated(model: bytes, files: dict[str, bytes]) -> bytes:
    """The model with associated files, as tflite_support's MetadataPopulator packs them: a zip appended by
    zipfile's append mode. (tflite-support 0.4.4 itself needs libusb, which this machine lacks.)"""
    buffer = io.BytesIO(model)
    with zipfile.ZipFile(buffer, "a") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _changed(data: bytes, change: Callable[[Any], None]) -> bytes:
    """The model with one thing changed through the object API, written back as TFL3."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(data, 0))
    change(model)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _write_code(model: Any) -> Any:
    return next(code for code in model.operatorCodes if code.customCode == b"FlexWriteFile")


def _disguise(model: Any) -> None:
    _write_code(model).customCode = b"FlexAdd"  # the delegate runs the options' op name: WriteFile


def _old_style_code(model: Any) -> None:
    code = _write_code(model)
    code.builtinCode, code.deprecatedBuiltinCode = 0, 32  # CUSTOM in the byte only, as before TF 2.3


def _no_options(model: Any) -> None:
    for operator in model.subgraphs[0].operators:
        operator.customOptions = None


def _version_2(model: Any) -> None:
    model.version = 2


def _opcode_past_list(model: Any) -> None:
    model.subgraphs[0].operators[0].opcodeIndex = 99


def _buffer_past_end(model: Any) -> None:
    model.buffers[1].data, model.buffers[1].offset, model.buffers[1].size = None, 1 << 40, 64


CHANGES: dict[str, Callable[[Any], None]] = {
    "flex-disguised-as-add.tflite": _disguise,
    "flex-custom-in-deprecated-code.tflite": _old_style_code,
    "flex-without-options.tflite": _no_options,
    "schema-version-2.tflite": _version_2,
    "opcode-index-past-list.tflite": _opcode_past_list,
    "buffer-offset-past-end.tflite": _buffer_past_end,
}


def _outcome(python: str, path: Path, marker: Path) -> str:
    marker.unlink(missing_ok=True)
    result = subprocess.run([python, "-c", RUN, str(path), str(marker)], capture_output=True, text=True, timeout=300,
                            env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    lines = [line for line in result.stdout.splitlines() if line.startswith(("ran", "refused"))]
    marker.unlink(missing_ok=True)
    return lines[-1] if lines else f"crashed (exit {result.returncode})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--run-with", required=True, help="a Python whose tf.lite.Interpreter links the Flex delegate")
    args = parser.parse_args(argv)
    marker = Path(tempfile.gettempdir()) / "wscan-tflite-marker.txt"
    (args.folder / "hostile").mkdir(parents=True, exist_ok=True)
    rows = []
    for sub, files in (("", benign()), ("hostile/", hostile(str(marker)))):
        for name, data in files.items():
            path = args.folder / f"{sub}{name}"
            path.write_bytes(data)
            rows.append(f"| `{sub}{name}` | {len(data):,} | {_outcome(args.run_with, path, marker)} |")
    version = subprocess.run([args.run_with, "-c", "import tensorflow as tf; print(tf.__version__)"],
                             capture_output=True, text=True, env={"TF_CPP_MIN_LOG_LEVEL": "3"}).stdout.strip()
    readme = [
        "# TensorFlow Lite models",
        "",
        "Written by `tools/record_tflite_files.py` with TensorFlow's converter; each loaded, allocated and invoked",
        f"(inputs of ones) by `tf.lite.Interpreter` of tensorflow-cpu {version}, whose Flex delegate runs Flex ops.",
        f"The marker file is what the hostile models write ({marker}).",
        "",
        "| file | bytes | tf.lite.Interpreter |",
        "|---|---:|---|",
        *rows,
        "",
    ]
    (args.folder / "README.md").write_text("\n".join(readme))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
