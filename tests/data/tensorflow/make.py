"""Write the TensorFlow samples in this folder with TensorFlow itself, and check that TensorFlow loads them.

TensorFlow is not a test dependency (it is large, and wscan never imports it), so the files are kept here,
made once with `pip install tensorflow-cpu==2.21.0` and `python tests/data/tensorflow/make.py`. The hostile
ones are proved, not assumed: loading each one with TensorFlow writes a marker file, which this script checks.

benign/
  saved-model-text/    TF1 SavedModelBuilder(as_text=True): saved_model.pbtxt, variables/, a Saver
  tf1-checkpoint/      tf.compat.v1.train.Saver.save: model.ckpt.meta (binary MetaGraphDef), .index, .data
  graph.pbtxt          tf.io.write_graph of a graph holding a Saver (as Estimator writes into model_dir)
  model-text.meta      export_meta_graph(as_text=True) with the Saver's saver_def
hostile/
  saved-model-text/    saved_model.pbtxt whose main_op runs tf.io.write_file when the SavedModel is loaded
  tf1-checkpoint/      model.ckpt.meta whose restore op depends on tf.io.write_file: restoring writes a file
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import tensorflow as tf

HERE = Path(__file__).resolve().parent
MARKER = "wscan-tf-marker.txt"  # written in the working directory by the hostile graphs


def _graph_with_saver(hostile: bool) -> tuple[tf.Graph, tf.compat.v1.train.Saver, tf.Operation | None]:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
        w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.ones_initializer())
        tf.identity(tf.matmul(x, w), name="y")
        write = tf.io.write_file(MARKER, "written by a TensorFlow graph") if hostile else None
        saver = tf.compat.v1.train.Saver()
    return graph, saver, write


def _saved_model_text(folder: Path, hostile: bool) -> None:
    graph, _, write = _graph_with_saver(hostile)
    with graph.as_default(), tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        builder = tf.compat.v1.saved_model.Builder(str(folder))
        signature = tf.compat.v1.saved_model.predict_signature_def(
            {"x": graph.get_tensor_by_name("x:0")}, {"y": graph.get_tensor_by_name("y:0")}
        )
        builder.add_meta_graph_and_variables(
            session, ["serve"], signature_def_map={"serving_default": signature}, main_op=write
        )
        builder.save(as_text=True)


def _checkpoint(folder: Path, hostile: bool) -> None:
    graph, saver, write = _graph_with_saver(hostile)
    with graph.as_default(), tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        if write is not None:  # the restore op, which import_meta_graph + restore runs, now also writes the file
            restore = graph.get_operation_by_name(saver.saver_def.restore_op_name)
            restore._add_control_input(write)
        saver.save(session, str(folder / "model.ckpt"), write_state=False)


def _writes_marker(load: Callable[[Path], None], folder: Path) -> bool:
    """Load `folder` from an empty working directory; whether the marker file appeared."""
    with tempfile.TemporaryDirectory() as work:
        previous = os.getcwd()
        os.chdir(work)
        try:
            load(folder)
        finally:
            os.chdir(previous)
        return (Path(work) / MARKER).exists()


def _load_saved_model(folder: Path) -> None:
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        tf.compat.v1.saved_model.loader.load(session, ["serve"], str(folder))


def _restore_checkpoint(folder: Path) -> None:
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        saver = tf.compat.v1.train.import_meta_graph(str(folder / "model.ckpt.meta"))
        saver.restore(session, str(folder / "model.ckpt"))


def main() -> None:
    for label in ("benign", "hostile"):
        shutil.rmtree(HERE / label, ignore_errors=True)
        (HERE / label).mkdir()
    for label in ("benign", "hostile"):
        hostile = label == "hostile"
        _saved_model_text(HERE / label / "saved-model-text", hostile)
        _checkpoint(HERE / label / "tf1-checkpoint", hostile)
        for load, folder in ((_load_saved_model, "saved-model-text"), (_restore_checkpoint, "tf1-checkpoint")):
            if _writes_marker(load, HERE / label / folder) != hostile:
                raise SystemExit(f"{label}/{folder}: loading it {'did not write' if hostile else 'wrote'} the marker")
    if not (HERE / "benign" / "saved-model-text" / "saved_model.pbtxt").exists():
        raise SystemExit("SavedModelBuilder(as_text=True) wrote no saved_model.pbtxt")
    graph, saver, _ = _graph_with_saver(hostile=False)
    tf.io.write_graph(graph.as_graph_def(), str(HERE / "benign"), "graph.pbtxt", as_text=True)
    with graph.as_default():
        tf.compat.v1.train.export_meta_graph(
            str(HERE / "benign" / "model-text.meta"), saver_def=saver.saver_def, as_text=True
        )
    with tf.Graph().as_default():
        tf.compat.v1.train.import_meta_graph(str(HERE / "benign" / "model-text.meta"))
    print("TensorFlow", tf.__version__, "wrote and loaded every sample")


if __name__ == "__main__":
    main()
