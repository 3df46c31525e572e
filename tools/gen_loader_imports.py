"""Regenerate src/wscan/loader_imports.py: every top-level module name the usual loaders import while they load a
model, whether or not it is installed.

Python run from a model folder puts the folder first on sys.path, so a file there named like any module a loader
imports, or merely looks for (transformers probes dozens of optional packages with find_spec; torch.load tries
`torchgen`, joblib `numexpr`), is found first and runs (helper 238: `torchgen.py`, `opt_einsum.py` and `numexpr.py`
beside weights each ran on load, and the scan passed, the names being on no list). Run with the test extra
installed: `python tools/gen_loader_imports.py`. Each loader runs in its own interpreter, in a temporary folder
with files this tool writes, with a finder first on sys.meta_path that notes every name asked for and finds nothing.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

TARGET = Path(__file__).resolve().parents[1] / "src" / "wscan" / "loader_imports.py"

MAKE = """
import joblib, numpy as np, pandas as pd, torch
from safetensors.torch import save_file
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from transformers import BertConfig, BertModel
torch.save({"w": torch.zeros(2)}, "model.pt")
torch.save({"w": torch.zeros(2)}, "legacy.pt", _use_new_zipfile_serialization=False)
torch.save(torch.nn.Linear(2, 2), "whole.pt")
x, y = np.random.rand(20, 3), np.arange(20) % 2
joblib.dump(make_pipeline(StandardScaler(), LogisticRegression()).fit(x, y), "model.joblib")
joblib.dump(RandomForestClassifier(n_estimators=2).fit(x, y), "forest.joblib", compress=3)
pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "t": pd.date_range("2020", periods=2, tz="UTC")}).to_pickle("frame.pkl")
np.savez("arrays.npz", a=np.zeros(3), o=np.array([{"k": 1}], dtype=object))
save_file({"w": torch.zeros(2)}, "model.safetensors")
import h5py, msgpack, onnx, skops.io, xgboost, lightgbm
from onnx import helper, TensorProto
graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
onnx.save(helper.make_model(graph), "model.onnx")
with h5py.File("model.h5", "w") as f:
    f["w"] = np.zeros(3)
open("model.msgpack", "wb").write(msgpack.packb({"w": [0.0, 1.0]}))
open("config.yaml", "w").write("width: 3")
skops.io.dump(LogisticRegression().fit(x, y), "model.skops")
xgboost.train({}, xgboost.DMatrix(x, label=y), 2).save_model("booster.json")
lightgbm.train({"verbose": -1}, lightgbm.Dataset(x, label=y), 2).save_model("booster.txt")
import gguf
writer = gguf.GGUFWriter("model.gguf", "llama")
writer.add_tensor("w", np.zeros(4, dtype=np.float32))
writer.write_header_to_file(); writer.write_kv_data_to_file(); writer.write_tensors_to_file(); writer.close()
BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                     vocab_size=32)).save_pretrained("bert")
"""

LOADERS = {
    "torch": "import torch; torch.load('model.pt'); torch.load('legacy.pt'); "
             "torch.load('whole.pt', weights_only=False)",
    "joblib": "import joblib; joblib.load('model.joblib'); joblib.load('forest.joblib')",
    "pickle": "import pickle; pickle.load(open('frame.pkl', 'rb'))",
    "pandas": "import pandas; pandas.read_pickle('frame.pkl')",
    "numpy": "import numpy; dict(numpy.load('arrays.npz', allow_pickle=True))",
    "safetensors": "from safetensors.torch import load_file; load_file('model.safetensors')",
    "transformers": "from transformers import AutoModel; AutoModel.from_pretrained('bert')",
    "onnx": "import onnx; onnx.load('model.onnx')",
    "h5py": "import h5py; h5py.File('model.h5')['w'][()]",
    "msgpack": "import msgpack; msgpack.unpackb(open('model.msgpack', 'rb').read())",
    "omegaconf": "from omegaconf import OmegaConf; OmegaConf.load('config.yaml')",
    "skops": "import skops.io; skops.io.load('model.skops', trusted=skops.io.get_untrusted_types(file='model.skops'))",
    "xgboost": "import xgboost; xgboost.Booster(model_file='booster.json')",
    "lightgbm": "import lightgbm; lightgbm.Booster(model_file='booster.txt')",
    "gguf": "import gguf; gguf.GGUFReader('model.gguf')",
}

# Names an import statement or a probe asks for (torch probes `dill` with find_spec and imports it when found), but
# for transformers' `_is_package_available`, which also wants the package's metadata, which a module beside the
# weights has none of (helper 239 found `datasets/`, `tree.py`, `optimum/` and `cv2.py` reported though no loader
# imported them).
TRACE = """
import sys
seen = set()
class Noting:
    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == "_is_package_available":
                return None
            frame = frame.f_back
        seen.add(name.partition(".")[0])
sys.meta_path.insert(0, Noting())
{loader}
print("\\n".join(sorted(seen)))
"""


def traced(folder: Path, loader: str) -> set[str]:
    run = subprocess.run([sys.executable, "-c", TRACE.format(loader=loader)], cwd=folder, capture_output=True,
                         text=True, check=True, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})  # fmt: skip
    return set(run.stdout.split())


def main() -> None:
    names: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([sys.executable, "-c", MAKE], cwd=folder, check=True, capture_output=True)
        for loader in LOADERS.values():
            names |= traced(Path(folder), loader)
    names = {name for name in names if name.isidentifier() and not name.startswith("_sysconfigdata_")} - {"__main__"}
    body = textwrap.fill(", ".join(f'"{name}"' for name in sorted(names)), 116, initial_indent="    ",
                         subsequent_indent="    ")  # fmt: skip
    TARGET.write_text(
        '"""Generated by tools/gen_loader_imports.py: the top-level module names torch, joblib, pickle, pandas,\n'
        "NumPy, safetensors, transformers, ONNX, h5py, msgpack, OmegaConf, skops, XGBoost, LightGBM and gguf import\n"
        "while they load a model (installed or not). A module of one of these names beside the weights is found\n"
        "first when Python runs from the model folder (module_shadowing).\n"
        '"""\n\n'
        f"LOADER_IMPORTS = frozenset({{\n{body},\n}})  # fmt: skip\n",
        encoding="utf-8",
    )
    print(f"{len(names)} names", file=sys.stderr)


if __name__ == "__main__":
    main()
