"""Write the SavedModels in this folder with TensorFlow itself, and check what loading and calling each one does.

TensorFlow is not a test dependency, so the files are kept, made once with `pip install tensorflow-cpu==2.21.0` and
`python tests/data/tf_functions/make.py`. Each model is a tf.Module with a `serving_default` signature. In every
hostile one the path of the file read (or written) is a constant in one function and the op that uses it is in
another, which gets the path as an argument: tf.data's readers (in the flat_map or interleave function
TensorFlow makes for them), a map function's capture, a tf.cond branch, a nested tf.function; or the path is what
a nested tf.function or a map function returns. The script loads each with `tf.saved_model.load`, calls it, and
checks that the secret came back (or the checkpoint was written). The ordinary ones take the path from the caller,
and read what they are given.

Two more are about what the path of a checkpoint op is: merge_destination merges a checkpoint the caller names
into a constant destination (MergeV2Checkpoints' second input), and tf1_main_op_saver is a TF1 SavedModel whose
main op (which the loader runs unfed) runs a second Saver's save op, which writes the Saver's default file name
into the working directory; tf1_main_op_tables is an ordinary TF1 SavedModel whose main op fills a vocabulary
table from an asset.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import tensorflow as tf

HERE = Path(__file__).resolve().parent
OUTSIDE = "/tmp/wscan-tf-functions"  # written into the hostile graphs: the secret, and where one writes
SECRET = f"{OUTSIDE}/secret.txt"
SECRET_TEXT = b"SECRET outside the model"
SIGNATURE = [tf.TensorSpec([None], tf.float32)]
MARKER = "wscan-tf-saver-marker.txt"  # the file name a hostile main op's Saver writes in the working directory


@tf.function(autograph=False)
def _read(path: tf.Tensor) -> tf.Tensor:
    return tf.io.read_file(path)


@tf.function(autograph=False)
def _join_and_read(folder: tf.Tensor) -> tf.Tensor:
    return _read(tf.strings.join([folder, "/secret.txt"]))


@tf.function(autograph=False)
def _secret_path() -> tf.Tensor:
    return tf.identity(tf.constant(SECRET))


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


class MapReturned(tf.Module):
    """TextLineDataset over the paths a map function returns (the constant is in the map function)."""

    @tf.function(input_signature=SIGNATURE)
    def run(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        paths = tf.data.Dataset.range(1).map(lambda _: tf.constant(SECRET))
        return {"out": _joined(paths.flat_map(tf.data.TextLineDataset))}


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


class ReadFileReturned(tf.Module):
    """A path returned by a nested tf.function (PartitionedCall with no inputs), read by its caller."""

    @tf.function(input_signature=SIGNATURE)
    def run(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"out": tf.io.read_file(_secret_path())}


class SaveNested(tf.Module):
    """SaveV2 in a nested tf.function, to a constant prefix outside the model."""

    @tf.function(input_signature=SIGNATURE)
    def run(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"out": _save(tf.constant(f"{OUTSIDE}/written"))}


class MergeDestination(tf.Module):
    """A checkpoint saved where the caller says, merged into a constant destination outside the model."""

    @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
    def run(self, path: tf.Tensor) -> dict[str, tf.Tensor]:
        save = tf.raw_ops.SaveV2(prefix=path, tensor_names=["x"], shape_and_slices=[""], tensors=[tf.constant("hi")])
        with tf.control_dependencies([save]):
            merge = tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=[path], destination_prefix=f"{OUTSIDE}/merged")
        with tf.control_dependencies([merge]):
            return {"out": tf.identity(path)}


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
    "map_returned": MapReturned, "cond_branch": CondBranch, "readfile_nested": ReadFileNested,
    "readfile_nested_joined": ReadFileNestedJoined, "readfile_returned": ReadFileReturned, "save_nested": SaveNested,
    "merge_destination": MergeDestination,
}  # fmt: skip
ORDINARY: dict[str, type[tf.Module]] = {"readfile_fed": ReadFileFed, "textline_fed": TextLineFed}


def _tf1_saved_model(folder: Path, hostile: bool) -> None:
    """A TF1 SavedModel (Builder) with a variable, a Saver, and a main op: a second Saver's save op (hostile), or
    the initializer of a vocabulary table read from an asset."""
    shutil.rmtree(folder, ignore_errors=True)
    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session() as session, tempfile.TemporaryDirectory() as work:
        payload = tf.compat.v1.Variable(tf.constant("written by a Saver the main op ran"), name="payload")
        x = tf.compat.v1.placeholder(tf.string, [None], name="x")
        if hostile:
            saver = tf.compat.v1.train.Saver([payload], filename=MARKER, write_version=tf.compat.v1.train.SaverDef.V1)
            main_op = tf.group(graph.get_operation_by_name(saver.saver_def.save_tensor_name.split(":")[0]))
            y = tf.identity(x, name="y")
        else:
            vocabulary = Path(work) / "vocab.txt"
            vocabulary.write_text("a\nb\n")
            initializer = tf.lookup.TextFileInitializer(str(vocabulary), tf.string, -2, tf.int64, -1)
            y = tf.identity(tf.lookup.StaticHashTable(initializer, -1).lookup(x), name="y")
            main_op = tf.compat.v1.saved_model.main_op.main_op()
        session.run(tf.compat.v1.global_variables_initializer())
        builder = tf.compat.v1.saved_model.Builder(str(folder))
        signature = tf.compat.v1.saved_model.predict_signature_def({"x": x}, {"y": y})
        builder.add_meta_graph_and_variables(
            session, ["serve"], signature_def_map={"serving_default": signature}, main_op=main_op,
            assets_collection=tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.ASSET_FILEPATHS),
        )
        builder.save()


def _tf1_load_writes_marker(folder: Path) -> bool:
    """Load a TF1 SavedModel from an empty working directory; whether the Saver's file name appeared there."""
    with tempfile.TemporaryDirectory() as work:
        previous = os.getcwd()
        os.chdir(work)
        try:
            with tf.Graph().as_default(), tf.compat.v1.Session() as session:
                tf.compat.v1.saved_model.loader.load(session, ["serve"], str(folder))
        finally:
            os.chdir(previous)
        return (Path(work) / MARKER).exists()


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
        if name == "merge_destination":
            with tempfile.TemporaryDirectory() as work:
                _call(HERE / "hostile" / name, path=tf.constant(f"{work}/checkpoint"))
            _check(name, Path(f"{OUTSIDE}/merged.index").exists())
            continue
        out = _call(HERE / "hostile" / name, x=tf.zeros([1]))
        if name == "save_nested":
            _check(name, Path(f"{OUTSIDE}/written.index").exists())
        else:
            _check(name, SECRET_TEXT in out)
    _tf1_saved_model(HERE / "hostile" / "tf1_main_op_saver", hostile=True)
    _check("tf1_main_op_saver", _tf1_load_writes_marker(HERE / "hostile" / "tf1_main_op_saver"))
    _tf1_saved_model(HERE / "ordinary" / "tf1_main_op_tables", hostile=False)
    _check("tf1_main_op_tables", not _tf1_load_writes_marker(HERE / "ordinary" / "tf1_main_op_tables"))
    with tempfile.TemporaryDirectory() as work:
        mine = Path(work) / "mine.txt"
        mine.write_bytes(b"the caller's own file")
        for name in ORDINARY:
            _check(name, _call(HERE / "ordinary" / name, path=tf.constant(str(mine))) == mine.read_bytes())
    shutil.rmtree(OUTSIDE)
    print("TensorFlow", tf.__version__, "wrote, loaded and called every sample")


if __name__ == "__main__":
    main()
