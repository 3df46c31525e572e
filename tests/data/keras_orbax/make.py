"""Write the Orbax checkpoint in this folder with Keras' own OrbaxCheckpoint callback.

Orbax (and the JAX it runs on) is not a test dependency, so the files are kept, made once with
`pip install jax==0.10.2 orbax-checkpoint==0.12.8 keras==3.15.1` and `python tests/data/keras_orbax/make.py`:

checkpoint/0/model_config/_strings.json   {"config": "<the model config, as a JSON string>"}, which
                                          keras.saving.load_model(checkpoint) rebuilds with json.loads
checkpoint/0/pytree/...                   the variables (OCDBT manifests and data files, array metadata)

A one-layer Sequential model (Dense) fitted for one epoch; `keras.saving.load_model` reloads it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
HERE = Path(__file__).resolve().parent


def main() -> None:
    import keras
    import numpy as np

    out = HERE / "checkpoint"
    shutil.rmtree(out, ignore_errors=True)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="d")])
    model.compile(optimizer="sgd", loss="mse")
    callback = keras.callbacks.OrbaxCheckpoint(directory=str(out), save_freq="epoch")
    model.fit(np.zeros((4, 2)), np.zeros((4, 2)), epochs=1, callbacks=[callback], verbose=0)
    keras.saving.load_model(str(out))


if __name__ == "__main__":
    main()
