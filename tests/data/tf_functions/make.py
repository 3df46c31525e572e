"""Write the SavedModels in this folder with TensorFlow itself, and check what loading and calling each one does.

TensorFlow is not a test dependency, so the files are kept, made once with `pip install tensorflow-cpu==2.21.0` and
`python tests/data/tf_functions/make.py`. Each model is a tf.Module with a `serving_default` signature. In every
hostile one the path of the file read (or written) is a constant in one function and the op that uses it is in
another, which gets the path as an argument: tf.data's readers (in the flat_map or interleave function
TensorFlow makes for them), a map function's capture, a tf.cond branch, a nested tf.function. The script loads
each with `tf.saved_model.load`, calls it, and checks that the secret came back (or the checkpoint was written).
The ordinary ones take the path from the caller, and read what they are given.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import tensorflow as tf

HERE = Path(__file__).resolve().parent
OUTSIDE = "/tmp/wscan-tf-functions"  # written into the hostile graphs: the secret, and where one writes
SECRET = f"{OUTSIDE}/secret.txt"
SECRET_TEXT = b"SECRET outside the model"
SIGNATURE = [tf.TensorSpec([None], tf.float32)]


@tf.function(autograph=False)
def _read(path: tf.Tensor) -> tf.Tensor:
    return tf.io.read_file(path)


@tf.function(autograph=False)
def _join_and_read(folder: tf.Tensor) -> tf.Tensor:
    return _read(tf.strings.join([folder, "/secret.txt"]))


@tf.function(autograph=False)
def _save(prefix: tf.Tensor) -> tf.Tensor:
    save = tf.raw_ops.SaveV2(prefix=prefix, tensor_names=["x"], shape_and_slices=[""], tensors=[tf.constant("hi")])
    with tf.control_dependencies([save]):
        return tf.identity(prefix)


def _joined(dataset: tf.data.Dataset) -> tf.Tensor:
    return dataset.reduce(tf.constant(b""), lambda a, b: a + b)


class TextLineConst(tf.Module):
    """tf.data.TextLineDataset(constant): the reader is in a flat_map function (FlatMapDataset)."""

    @tf.function(input_signature=SIGNATURE)
    def run(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"out": _joined(tf.data.TextLineDataset(SECRET))}


class TextLineInterleave(tf.Module):
    """TextLineDataset(constants, num_parallel_reads=2): the reader is in an interleave function."""

    @tf.function(input_signature=SIGNATURE)
    def run(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"out": _joined(tf.data.TextLineDataset([SECRET, SECRET], num_parallel_reads=2))}


class MapCaptured(tf.Module):
    """A map function that reads a path joined outside it: the path is the map's captured input."""

    @tf.function(input_signature=SIGNATURE)
    def run(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        path = tf.strings.join([OUTSIDE, "/secret.txt"])
        return {"out": _joined(tf.data.Dataset.range(1).map(lambda i: tf.io.read_file(path)))}


class CondBranch(tf.Module):
    """ReadFile in a tf.cond branch (If), the path a constant of the function around it."""

    @tf.function(input_signature=SIGNATURE)
    def run(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        path = tf.constant(SECRET)
        return {"out": tf.cond(tf.size(x) > 0, lambda: tf.io.read_file(path), lambda: tf.constant(b""))}


class ReadFileNested(tf.Module):
    """A constant path passed to a nested tf.function that reads it (PartitionedCall)."""

    @tf.function(input_signature=SIGNATURE)
    def run(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"out": _read(tf.constant(SECRET))}


class ReadFileNestedJoined(tf.Module):
    """A folder constant, joined with a file name one function down, read another function down."""

    @tf.function(input_signature=SIGNATURE)
    def run(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"out": _join_and_read(tf.constant(OUTSIDE))}


class SaveNested(tf.Module):
    """SaveV2 in a nested tf.function, to a constant prefix outside the model."""

    @tf.function(input_signature=SIGNATURE)
    def run(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"out": _save(tf.constant(f"{OUTSIDE}/written"))}


class ReadFileFed(tf.Module):
    """Ordinary: the caller passes the path, a nested tf.function reads it."""

    @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
    def run(self, path: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"out": _read(path)}


class TextLineFed(tf.Module):
    """Ordinary: the caller passes the file a TextLineDataset reads."""

    @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
    def run(self, path: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"out": _joined(tf.data.TextLineDataset(path))}


HOSTILE: dict[str, type[tf.Module]] = {
    "textline_const": TextLineConst, "textline_interleave": TextLineInterleave, "map_captured": MapCaptured,
    "cond_branch": CondBranch, "readfile_nested": ReadFileNested, "readfile_nested_joined": ReadFileNestedJoined,
    "save_nested": SaveNested,
}  # fmt: skip
ORDINARY: dict[str, type[tf.Module]] = {"readfile_fed": ReadFileFed, "textline_fed": TextLineFed}


def _save_module(folder: Path, module: tf.Module) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    tf.saved_model.save(module, str(folder), signatures={"serving_default": module.run})


def _call(folder: Path, **inputs: tf.Tensor) -> bytes:
    loaded = tf.saved_model.load(str(folder))
    return bytes(loaded.signatures["serving_default"](**inputs)["out"].numpy())


def _check(name: str, proved: bool) -> None:
    if not proved:
        raise SystemExit(f"{name}: loading and calling it did not do what it is kept for")


def main() -> None:
    os.makedirs(OUTSIDE, exist_ok=True)
    Path(SECRET).write_bytes(SECRET_TEXT)
    for label, models in (("hostile", HOSTILE), ("ordinary", ORDINARY)):
        shutil.rmtree(HERE / label, ignore_errors=True)
        for name, module in models.items():
            _save_module(HERE / label / name, module())
    for name in HOSTILE:
        out = _call(HERE / "hostile" / name, x=tf.zeros([1]))
        if name == "save_nested":
            _check(name, Path(f"{OUTSIDE}/written.index").exists())
        else:
            _check(name, SECRET_TEXT in out)
    with tempfile.TemporaryDirectory() as work:
        mine = Path(work) / "mine.txt"
        mine.write_bytes(b"the caller's own file")
        for name in ORDINARY:
            _check(name, _call(HERE / "ordinary" / name, path=tf.constant(str(mine))) == mine.read_bytes())
    shutil.rmtree(OUTSIDE)
    print("TensorFlow", tf.__version__, "wrote, loaded and called every sample")


_: Callable[[], None] = main
if __name__ == "__main__":
    main()
