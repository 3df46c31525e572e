"""Python code beside a model's weights named like a module their loaders import (WS-CODE-015).

Python run from the model folder (a script there, `python -c`, a notebook) has that folder first on `sys.path`, so
`numpy/__init__.py` or `_loss.pyc` beside a pickle runs in place of the library when the pickle loads (helper 229: a
`_loss/` package beside a scikit-learn 1.5 pickle was never read, and a `_loss.pyc` was only medium). Each case is
loaded here by the real pickle module, run from the folder, with the payload writing a marker.
"""

from __future__ import annotations

import pickle
import py_compile
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.scanning import scan
from wscan.model import Severity

PAYLOAD = "open({marker!r}, 'w').close()\n"


def _folder(tmp_path: Path, layout: str) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.pkl").write_bytes(pickle.dumps({"weights": np.arange(3)}))
    code = PAYLOAD.format(marker=str(tmp_path / "MARKER"))
    if layout == "package":
        (folder / "numpy").mkdir()
        (folder / "numpy" / "__init__.py").write_text(code)
    elif layout == "module":
        (folder / "numpy.py").write_text(code)
    elif layout == "bytecode":
        source = tmp_path / "numpy.py"
        source.write_text(code)
        py_compile.compile(str(source), cfile=str(folder / "numpy.pyc"))
    return folder


@pytest.mark.parametrize("layout", ["package", "module", "bytecode"])
def test_a_module_shadowing_the_loaders_import_is_high(tmp_path: Path, layout: str) -> None:
    folder = _folder(tmp_path, layout)
    subprocess.run([sys.executable, "-c", "import pickle; pickle.load(open('model.pkl', 'rb'))"], cwd=folder,
                   capture_output=True, timeout=120, check=False)
    assert (tmp_path / "MARKER").exists()  # the folder's numpy ran, not the library
    high = {f.rule_id for f in scan(folder).findings if f.severity >= Severity.HIGH}
    assert "WS-CODE-015" in high


# Helper 230's layouts: weights named so the folder had not counted as a model's, a package the standard library
# imports if present (copy.py tries `org.python.core`), and a numpy.py at a repository's top with the weights below.
LAYOUTS = {
    "upper-case-weights": ("MODEL.PKL", "numpy.py", "import pickle; pickle.load(open('MODEL.PKL', 'rb'))"),
    "compressed-joblib": ("model.pkl.gz", "numpy.py", "import joblib; joblib.load('model.pkl.gz')"),
    "weights-below": ("models/model.pkl", "numpy.py", "import pickle; pickle.load(open('models/model.pkl', 'rb'))"),
    "optional-import": ("model.pkl", "org/__init__.py", "import joblib; joblib.load('model.pkl')"),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_helper_230_layouts_are_high(tmp_path: Path, layout: str) -> None:
    weights, code, load = LAYOUTS[layout]
    folder = tmp_path / "model"
    (folder / weights).parent.mkdir(parents=True)
    if weights.endswith(".gz"):
        import joblib

        joblib.dump({"weights": np.arange(3)}, folder / weights)
    else:
        (folder / weights).write_bytes(pickle.dumps({"weights": np.arange(3)}))
    (folder / code).parent.mkdir(parents=True, exist_ok=True)
    (folder / code).write_text(PAYLOAD.format(marker=str(tmp_path / "MARKER")))
    subprocess.run([sys.executable, "-c", load], cwd=folder, capture_output=True, timeout=120, check=False)
    assert (tmp_path / "MARKER").exists()
    assert "WS-CODE-015" in {f.rule_id for f in scan(folder).findings if f.severity >= Severity.HIGH}


# Names Python never takes from the folder: a namespace folder (no __init__.py) loses to the installed package, a
# built-in module (time) and one imported at start-up (os) are never looked up there; scripts named otherwise.
@pytest.mark.parametrize("name", ["test.py", "modeling_tiny.py", "inference.py", "code/inference.py",
                                  "onnx/export.py", "time.py", "os.py"])
def test_scripts_named_otherwise_are_not(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "model"
    (folder / name).parent.mkdir(parents=True)
    (folder / "model.pkl").write_bytes(pickle.dumps({"weights": np.arange(3)}))
    (folder / name).write_text("import numpy\nprint(numpy.arange(3))\n")
    assert "WS-CODE-015" not in {f.rule_id for f in scan(folder).findings}


def _linked_folder(tmp_path: Path, link: str, package: bool = True) -> Path:
    folder = tmp_path / "model"
    (folder / "lib").mkdir(parents=True)
    (folder / "model.pkl").write_bytes(pickle.dumps({"weights": np.arange(3)}))
    if package:
        (folder / "lib" / "__init__.py").write_text(PAYLOAD.format(marker=str(tmp_path / "MARKER")))
    (folder / link).symlink_to("lib", target_is_directory=True)
    return folder


def test_a_symlinked_folder_named_like_a_module_is_high(tmp_path: Path) -> None:
    """`numpy -> lib/` beside the weights: Python follows the link and imports lib/__init__.py as numpy (it was only
    WS-FILE-011, medium: the scan passed)."""
    folder = _linked_folder(tmp_path, "numpy")
    subprocess.run([sys.executable, "-c", "import pickle; pickle.load(open('model.pkl', 'rb'))"], cwd=folder,
                   capture_output=True, timeout=120, check=False)
    assert (tmp_path / "MARKER").exists()
    report = scan(folder)
    high = [f for f in report.findings if f.severity >= Severity.HIGH]
    assert [(f.rule_id, Path(f.location.path).name) for f in high] == [("WS-CODE-015", "numpy")]
    assert "numpy would be imported" in high[0].message


@pytest.mark.parametrize(("link", "package"), [("assets", True), ("numpy", False), ("time", True)])
def test_symlinked_folders_that_shadow_nothing_stay_medium(tmp_path: Path, link: str, package: bool) -> None:
    """A link named like no module, one to a folder without __init__.py (a namespace portion) and one named like a
    built-in module are the symlinked folder they were (WS-FILE-011), nothing more."""
    folder = _linked_folder(tmp_path, link, package)
    assert {(f.rule_id, f.severity) for f in scan(folder).findings} == {("WS-FILE-011", Severity.MEDIUM)}


EXTENSION = r"""
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "numpy", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_numpy(void) {
    FILE *marker = fopen(getenv("WSCAN_MARKER"), "w");
    if (marker) fclose(marker);
    return PyModule_Create(&module);
}
"""


def _loads_and_runs(folder: Path, marker: Path, load: str) -> None:
    """Load the weights as a user would, from the folder, and check the folder's code ran (made `marker`)."""
    env = {"PATH": "/usr/bin:/bin", "WSCAN_MARKER": str(marker), "HOME": str(folder.parent)}
    subprocess.run([sys.executable, "-c", load], cwd=folder, env=env, capture_output=True, timeout=300, check=False)
    assert marker.exists()


@pytest.mark.parametrize("name", [f"numpy{sysconfig.get_config_var('EXT_SUFFIX')}", "numpy.so", "numpy.abi3.so"])
def test_an_extension_module_named_like_an_import_is_high(tmp_path: Path, name: str) -> None:
    """helper 238: a C extension module `numpy.<tag>.so` (or plain `numpy.so`) beside a pickle was imported as numpy
    when it loaded, and was only WS-FILE-015, medium (a shared library in the folder)."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.pkl").write_bytes(pickle.dumps({"weights": np.arange(3)}))
    source = tmp_path / "numpy.c"
    source.write_text(EXTENSION)
    include = sysconfig.get_paths()["include"]
    subprocess.run(["cc", "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(folder / name)], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    _loads_and_runs(folder, tmp_path / "MARKER", "import pickle; pickle.load(open('model.pkl', 'rb'))")
    assert "WS-CODE-015" in {f.rule_id for f in scan(folder).findings if f.severity >= Severity.HIGH}


def _bytecode(source: Path, flags: int) -> bytes:
    """The .pyc of `source` with its header's flags word set (2: check the source, not hash-based)."""
    compiled = py_compile.compile(str(source), cfile=str(source.with_suffix(".pyc")))
    data = Path(compiled).read_bytes()
    return data[:4] + flags.to_bytes(4, "little") + data[8:]


@pytest.mark.parametrize("layout", ["package-bytecode", "flags-2", "package-flags-2"])
def test_sourceless_bytecode_python_imports_is_high(tmp_path: Path, layout: str) -> None:
    """helper 238: a package whose only file is `__init__.pyc` (the package had to have an `__init__.py`), and a
    `numpy.pyc` whose header flags are 2 (read as no .pyc at all): Python imported each as numpy."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.pkl").write_bytes(pickle.dumps({"weights": np.arange(3)}))
    source = tmp_path / "payload.py"
    source.write_text("import os\nopen(os.environ['WSCAN_MARKER'], 'w').close()\n")
    data = _bytecode(source, 0 if layout == "package-bytecode" else 2)
    target = folder / "numpy.pyc" if layout == "flags-2" else folder / "numpy" / "__init__.pyc"
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(data)
    _loads_and_runs(folder, tmp_path / "MARKER", "import pickle; pickle.load(open('model.pkl', 'rb'))")
    assert "WS-CODE-015" in {f.rule_id for f in scan(folder).findings if f.severity >= Severity.HIGH}


# helper 238: modules the loaders import or only look for, on no list wscan had: torch.load imports torchgen, and
# joblib tries numexpr (not installed here): a file beside the weights ran, then handed over (or raised ImportError,
# which the loader takes for "not installed").
LOADER_LAYOUTS = {
    "torchgen": ("model.pt", "import sys, os\nopen(os.environ['WSCAN_MARKER'], 'w').close()\ndel sys.modules[__name__]"
                 "\nsys.path[:] = [p for p in sys.path if p not in ('', '.')]\nimport torchgen\n",
                 "import torch; torch.load('model.pt')"),
    "numexpr": ("model.joblib", "import os\nopen(os.environ['WSCAN_MARKER'], 'w').close()\nraise ImportError\n",
                "import joblib; joblib.load('model.joblib')"),
}  # fmt: skip


@pytest.mark.parametrize("module", list(LOADER_LAYOUTS))
def test_a_module_a_loader_looks_for_is_high(tmp_path: Path, module: str) -> None:
    weights, code, load = LOADER_LAYOUTS[module]
    folder = tmp_path / "model"
    folder.mkdir()
    if weights.endswith(".pt"):
        import torch

        torch.save({"w": torch.zeros(2)}, folder / weights)
    else:
        import joblib
        from sklearn.linear_model import LogisticRegression

        joblib.dump(LogisticRegression().fit(np.eye(4), [0, 1, 0, 1]), folder / weights)
    (folder / f"{module}.py").write_text(code)
    _loads_and_runs(folder, tmp_path / "MARKER", load)
    assert "WS-CODE-015" in {f.rule_id for f in scan(folder).findings if f.severity >= Severity.HIGH}


SHIM = "import os\nopen(os.environ['WSCAN_MARKER'], 'w').close()\nraise ImportError\n"


def test_modules_other_loaders_import_are_high(tmp_path: Path) -> None:
    """helper 239: `ml_dtypes` beside an ONNX model (onnx imports it), `h5py` beside a `.h5` file, and a `backports/`
    namespace portion beside a transformers save (urllib3 imports `backports.zstd`; a folder without __init__.py
    joins that namespace): each ran from the folder and was medium at most."""
    import h5py
    import onnx
    from onnx import TensorProto, helper
    from transformers import BertConfig, BertModel

    cases = {
        "onnx": ("ml_dtypes.py", "import onnx; onnx.load('model.onnx')"),
        "h5py": ("h5py.py", "import h5py; h5py.File('model.h5')"),
        "transformers": ("backports/zstd.py", "from transformers import AutoModel; AutoModel.from_pretrained('.')"),
    }
    for name, (module, load) in cases.items():
        folder = tmp_path / name
        (folder / module).parent.mkdir(parents=True)
        if name == "onnx":
            graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])  # fmt: skip
            onnx.save(helper.make_model(graph), folder / "model.onnx")
        elif name == "h5py":
            with h5py.File(folder / "model.h5", "w") as stream:
                stream["w"] = np.zeros(3)
        else:
            config = BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                                vocab_size=32)  # fmt: skip
            BertModel(config).save_pretrained(folder)
        (folder / module).write_text(SHIM)
        _loads_and_runs(folder, tmp_path / f"MARKER-{name}", load)
        assert "WS-CODE-015" in {f.rule_id for f in scan(folder).findings if f.severity >= Severity.HIGH}, name


def test_package_metadata_beside_the_weights_is_high(tmp_path: Path) -> None:
    """helper 241: transformers imports a quantizer's package once importlib.metadata says it is installed, and
    importlib.metadata reads `*.dist-info` from the folder Python runs from: a quark-quantized model's config, a
    `quark/` package and `amd_quark-0.9.dist-info` ran the package at from_pretrained (only the .pyc was medium)."""
    folder = tmp_path / "model"
    (folder / "amd_quark-0.9.dist-info").mkdir(parents=True)
    metadata = "Metadata-Version: 2.1\nName: amd-quark\nVersion: 0.9\n"
    (folder / "amd_quark-0.9.dist-info" / "METADATA").write_text(metadata)
    (folder / "model.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    lookup = "from importlib.metadata import version; print(version('amd-quark'))"
    probe = subprocess.run([sys.executable, "-c", lookup], cwd=folder, capture_output=True, text=True, timeout=60,
                           check=False)  # fmt: skip
    assert probe.stdout.strip() == "0.9"  # "installed", as far as any loader can tell
    found = [f for f in scan(folder).findings if f.rule_id == "WS-CODE-015"]
    assert found and found[0].severity >= Severity.HIGH
