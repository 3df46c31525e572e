"""Write the tf.keras 2 samples in this folder with tf_keras itself, and prove the hostile ones with it.

TensorFlow and tf_keras are not test dependencies (2 GB, and wscan never imports them), so the files are kept
here, made once with `pip install tensorflow-cpu==2.21.0 tf-keras==2.21.0` and
`python tests/data/tf_keras/make.py`. Each hostile file is proved, not assumed: loading it with
`tf_keras.models.load_model` (safe_mode off where tf_keras has one) and running the model writes a marker file,
which this script checks.

benign/      what tf_keras writes for a few real architectures: legacy HDF5 (`.h5`, with the training config),
             the tf_keras v3 archive (`.keras`), `model.to_json()`, and a SavedModel's `keras_metadata.pb`.
             The functional model `tfops` uses TensorFlow ops on Keras tensors (TFOpLambda, SlicingOpLambda).
             Also a `save_weights` checkpoint (`tfops-checkpoint/`) and the saved_model.pb of an adapted
             Discretization layer, whose adapt step tf_keras traces with a tf.numpy_function (a PyFunc node).
hostile/     read-file.{h5,keras,json}: a model of string ops whose last TFOpLambda is renamed from strings.lower
             to io.read_file: the model's output is the content of a file named in the config
             lambda-savedmodel/keras_metadata.pb: a Lambda layer's bytecode, revived by load_model
             lambda-legacy-savedmodel/saved_model.pb: the same config in the SavedModel's own object graph
             (SavedUserObject.metadata), which tf_keras reads when keras_metadata.pb is absent
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).resolve().parent
MARKER = "wscan-tf-keras-marker.txt"  # written in the working directory by the hostile models
SECRET = "wscan-secret.txt"  # read by the read-file models; its content must come out of the model


def tfops():  # type: ignore[no-untyped-def]
    import tensorflow as tf
    import tf_keras as keras

    a = keras.Input((8,), name="a")
    b = keras.Input((8,), name="b")
    x = tf.nn.relu(tf.math.add(a, b) * 2.0 + 1.0)
    x = tf.transpose(tf.reshape(x, (-1, 2, 4)), [0, 2, 1])
    z = tf.concat([x[:, 0], tf.reduce_mean(x, axis=1)], axis=-1)
    z = tf.math.sigmoid(tf.matmul(tf.cast(tf.squeeze(tf.expand_dims(z, 1), 1), tf.float32), tf.ones((4, 3))))
    z = tf.where(tf.clip_by_value(z, 0.0, 1.0) > 0.5, z, tf.zeros_like(z))
    z = tf.nn.softmax(tf.math.reduce_sum(tf.stack([z, z], axis=1), axis=1))
    z = tf.sqrt(tf.abs(tf.pad(tf.tile(tf.math.log(tf.gather(z, [0, 1], axis=1) + 1e-6), [1, 2]), [[0, 0], [1, 1]])))
    model = keras.Model([a, b], z)
    model.compile(optimizer="sgd", loss="mse")
    return model


def rnn():  # type: ignore[no-untyped-def]
    import tf_keras as keras
    from tf_keras import layers

    inp = keras.Input((None,), dtype="int32")
    x = layers.Embedding(100, 16, mask_zero=True)(inp)
    x = layers.GRU(8)(layers.Bidirectional(layers.LSTM(8, return_sequences=True))(x))
    x = layers.Dense(4, kernel_regularizer=keras.regularizers.l2(1e-4))(layers.BatchNormalization()(x))
    model = keras.Model(inp, layers.Softmax()(x))
    model.compile(optimizer=keras.optimizers.RMSprop(), loss=keras.losses.SparseCategoricalCrossentropy(),
                  metrics=[keras.metrics.SparseCategoricalAccuracy()])
    return model


def conv():  # type: ignore[no-untyped-def]
    import tf_keras as keras
    from tf_keras import layers

    inp = keras.Input((16, 16, 3))
    x = layers.RandomFlip()(layers.Rescaling(1 / 255.0)(inp))
    x = layers.Activation("gelu")(layers.LayerNormalization()(layers.Conv2D(4, 3, padding="same")(x)))
    x = layers.GlobalAveragePooling2D()(layers.SeparableConv2D(4, 3)(layers.MaxPooling2D()(x)))
    x = layers.MultiHeadAttention(2, 4)(layers.Reshape((4, 1))(x), layers.Reshape((4, 1))(x))
    model = keras.Model(inp, layers.Dense(10)(layers.Flatten()(x)))
    schedule = keras.optimizers.schedules.ExponentialDecay(1e-3, 100, 0.9)
    model.compile(optimizer=keras.optimizers.experimental.AdamW(learning_rate=schedule),
                  loss=keras.losses.CategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def lambda_model():  # type: ignore[no-untyped-def]
    import tf_keras as keras
    from tf_keras import layers

    inp = keras.Input((2,))
    marker = MARKER
    out = layers.Lambda(lambda t: (open(marker, "w").write("tf_keras Lambda"), t)[1])(inp)  # noqa: SIM115
    return keras.Model(inp, out)


def discretization():  # type: ignore[no-untyped-def]
    import numpy as np
    import tf_keras as keras
    from tf_keras import layers

    inp = keras.Input((1,))
    bins = layers.Discretization(num_bins=4)
    bins.adapt(np.arange(100, dtype="float32").reshape(-1, 1))  # traced with a tf.numpy_function inside
    return keras.Model(inp, layers.Dense(1)(bins(inp)))


def _write_extra_benign(folder: Path) -> None:
    """A Keras `save_weights` checkpoint (index table and data shard) and an adapted Discretization SavedModel."""
    tfops().save_weights(folder / "tfops-checkpoint" / "tfops")
    with tempfile.TemporaryDirectory() as tmp:
        discretization().save(f"{tmp}/sm", save_format="tf")
        (folder / "discretization-savedmodel").mkdir()
        shutil.copy(f"{tmp}/sm/saved_model.pb", folder / "discretization-savedmodel" / "saved_model.pb")


def _write_benign(folder: Path) -> None:
    folder.mkdir(parents=True)
    _write_extra_benign(folder)
    for name, make in (("tfops", tfops), ("rnn", rnn), ("conv", conv)):
        model = make()
        model.save(folder / f"{name}.h5")
        model.save(folder / f"{name}.keras")
        (folder / f"{name}.json").write_text(model.to_json())
        with tempfile.TemporaryDirectory() as tmp:
            model.save(f"{tmp}/sm", save_format="tf")
            (folder / f"{name}-savedmodel").mkdir()
            shutil.copy(f"{tmp}/sm/keras_metadata.pb", folder / f"{name}-savedmodel" / "keras_metadata.pb")


def string_model():  # type: ignore[no-untyped-def]
    import tensorflow as tf
    import tf_keras as keras

    inp = keras.Input((2,))
    path = tf.strings.regex_replace(tf.strings.reduce_join(tf.strings.as_string(inp)), ".*", SECRET,
                                    replace_global=False)
    return keras.Model(inp, tf.strings.lower(path))


def _read_file(config: str) -> str:
    """The last op renamed from strings.lower to io.read_file (which takes no keyword arguments)."""
    data = json.loads(config)
    layer = next(layer for layer in data["config"]["layers"] if layer["config"].get("function") == "strings.lower")
    layer["config"]["function"] = "io.read_file"
    layer["inbound_nodes"][0][3] = {}
    return json.dumps(data)


def _write_hostile(folder: Path) -> None:
    import zipfile

    import h5py

    folder.mkdir(parents=True)
    model = string_model()
    model.save(folder / "read-file.h5")
    with h5py.File(folder / "read-file.h5", "r+") as h5:
        h5.attrs["model_config"] = _read_file(h5.attrs["model_config"])
    (folder / "read-file.json").write_text(_read_file(model.to_json()))
    with tempfile.TemporaryDirectory() as tmp:
        model.save(f"{tmp}/m.keras")
        with zipfile.ZipFile(f"{tmp}/m.keras") as src, zipfile.ZipFile(folder / "read-file.keras", "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                dst.writestr(info, _read_file(data.decode()).encode() if info.filename == "config.json" else data)
        cwd = os.getcwd()
        os.chdir(tmp)  # building the Lambda model runs the lambda once, here
        try:
            lambda_model().save(f"{tmp}/lambda", save_format="tf")
        finally:
            os.chdir(cwd)
        shutil.copytree(f"{tmp}/lambda", folder / "lambda-savedmodel")
        shutil.copytree(f"{tmp}/lambda", folder / "lambda-legacy-savedmodel")
        _move_metadata_into_object_graph(folder / "lambda-legacy-savedmodel")


def _move_metadata_into_object_graph(folder: Path) -> None:
    """What TensorFlow before 2.5 wrote: each Keras object's metadata in SavedUserObject, no keras_metadata.pb."""
    from tensorflow.core.protobuf import saved_model_pb2
    from tf_keras.protobuf import saved_metadata_pb2

    metadata = saved_metadata_pb2.SavedMetadata()
    metadata.ParseFromString((folder / "keras_metadata.pb").read_bytes())
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((folder / "saved_model.pb").read_bytes())
    nodes = saved.meta_graphs[0].object_graph_def.nodes
    for node in metadata.nodes:
        nodes[node.node_id].user_object.identifier = node.identifier
        nodes[node.node_id].user_object.metadata = node.metadata
    (folder / "saved_model.pb").write_bytes(saved.SerializeToString())
    (folder / "keras_metadata.pb").unlink()


PROOF = """
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tf_keras
path = sys.argv[1]
if path.endswith(".json"):
    model = tf_keras.models.model_from_json(open(path).read())
elif path.endswith((".h5", ".keras")):
    model = tf_keras.models.load_model(path, safe_mode=False, compile=False)
else:
    model = tf_keras.models.load_model(path, compile=False)
print(model(np.ones((1, 2), "float32")))
"""


def prove(path: Path) -> None:
    """Load and run the model in a fresh process: it must write the marker or put the secret in its output."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / SECRET).write_text("wscan secret content")
        run = subprocess.run([sys.executable, "-c", PROOF, str(path)], cwd=tmp, capture_output=True, text=True)
        if (Path(tmp) / MARKER).exists():
            print(f"proved: {path.relative_to(HERE)} wrote {MARKER}")
        elif "wscan secret content" in run.stdout:
            print(f"proved: {path.relative_to(HERE)} returned the content of {SECRET}")
        else:
            raise AssertionError(f"{path.name}: nothing happened\n{run.stdout[-500:]}\n{run.stderr[-2000:]}")


def main() -> None:
    for sub in ("benign", "hostile"):
        shutil.rmtree(HERE / sub, ignore_errors=True)
    _write_benign(HERE / "benign")
    _write_hostile(HERE / "hostile")
    for path in sorted((HERE / "hostile").iterdir()):
        prove(path)


if __name__ == "__main__":
    main()
