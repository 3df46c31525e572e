"""Seed corpora for the fuzz targets, generated from corpus/ (benign and hostile samples) at run time.

Nothing here is committed as a copy: `build` writes fuzz/work/seeds/<target>/ (gitignored) from the files in
corpus/, the built-in rule packs and a few inline configs, picking files by their bytes where that is easy.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import pickle
import shutil
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus"
TF_KERAS = ROOT / "tests" / "data" / "tf_keras"  # files tf_keras wrote (TensorFlow is not installed to make more)
SPARSE_TARS = ROOT / "tests" / "data" / "tar_sparse"  # GNU tar 1.34 -S output in its four sparse formats
TF_FUNCTIONS = ROOT / "tests" / "data" / "tf_functions"  # TF 2.21 SavedModels whose paths cross function calls
FLAX = ROOT / "tests" / "data" / "flax"  # files Flax and transformers wrote, and hostile variants of them
OPENVINO = ROOT / "tests" / "data" / "openvino"  # IRs ov.save_model wrote, and hostile variants of them
TFLITE = ROOT / "tests" / "data" / "tflite"  # models TensorFlow's converter wrote, and hostile variants of them
MARKER = b"\n--8<--\n"  # harness.split: fields of a multi-part input
MAX_SEED_BYTES = 256 * 1024

# git configs and hooks (the first byte picks which the target reads: even a config, odd a hook)
GIT_FILES = [
    b"\x00[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch x\n[remote \"origin\"]\n\turl = https://h/x\n",
    b'\x00[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n[alias]\n\tp = !sh\n',
    b"\x00[include]\n\tpath = ../x\n[core.]\n\tpager = \\\n less\n",
    b'\x01#!/bin/sh\ncommand -v git-lfs >/dev/null 2>&1 || { echo >&2 "x"; exit 2; }\ngit lfs pre-push "$@"\n',
]
CONFIGS = [
    b"fail-on: high\n",
    b"fail-on: medium\nallow:\n  - mypkg.layers.Custom\n",
    b"severity:\n  WS-PKL-002: low\nignore:\n  - rule: WS-ARC-001\n    paths: ['models/*', '**/*.zip']\n",
    b"rules: [extra.yaml]\nlimits:\n  max-depth: 3\n  max-members: 10\n  max-pickle-opcodes: 1000\n",
    b"limits:\n  max-seconds-per-file: 2.5\n  max-json-bytes: 1024\n  max-header-bytes: 64\n"
    b"  max-decompressed-bytes: 100\n  max-compression-ratio: 2\n  ratio-floor-bytes: 0\n",
    b'ignore:\n  - rule: "*"\n    paths: ["*"]\nfail-on: critical\n',
]


def _files(*patterns: str) -> Iterator[Path]:
    for pattern in patterns:
        yield from sorted(p for p in CORPUS.rglob(pattern) if p.is_file())


def _zip_members(path: Path, keep: Callable[[str], bool]) -> Iterator[bytes]:
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if keep(info.filename) and info.file_size <= MAX_SEED_BYTES:
                    yield zf.read(info)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError):
        return


def _is_torch_zip(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return any(n.endswith("/data.pkl") or n == "data.pkl" for n in zf.namelist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False


def _magic(path: Path, *magics: bytes) -> bool:
    with path.open("rb") as handle:
        head = handle.read(8)
    return head.startswith(magics)


def _templates() -> Iterator[bytes]:
    for path in _files("*.jinja"):
        yield path.read_bytes()
    for path in sorted((ROOT / "tests" / "data" / "chat_templates").glob("*")):
        if path.is_file():
            yield path.read_bytes()
    for path in _files("tokenizer_config.json"):
        try:
            template = json.loads(path.read_bytes()).get("chat_template")
        except ValueError:
            continue
        for item in template if isinstance(template, list) else [template]:
            text = item.get("template") if isinstance(item, dict) else item
            if isinstance(text, str):
                yield text.encode("utf-8")


def _shards() -> Iterator[bytes]:
    for index in _files("*.index.json"):
        shards = sorted(index.parent.glob("*-00001-of-*"))
        shard = shards[0].read_bytes()[:MAX_SEED_BYTES] if shards else b""
        yield index.read_bytes() + MARKER + shard


def _tar_members(path: Path, keep: Callable[[str], bool]) -> Iterator[bytes]:
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() and keep(member.name) else None
            if handle is not None:
                yield handle.read()


def _pickles() -> Iterator[bytes]:
    for metadata in _files(".metadata"):  # a torch.distributed.checkpoint folder: metadata, then its items
        items = metadata.parent / "__0_0.distcp"
        yield metadata.read_bytes() + MARKER + (items.read_bytes()[:MAX_SEED_BYTES] if items.is_file() else b"")
    for path in _files("*.pkl", "*.joblib", "*.pt", "*.pth", "*.bin", "*.safetensors"):
        if _magic(path, b"\x80", b"(", b"c", b"]", b"}"):
            yield path.read_bytes()
        elif _is_torch_zip(path):
            yield from _zip_members(path, lambda n: n.endswith(".pkl"))
    yield from _arrow_pickles()
    yield from _sklearn_native_pickles()
    for name in ULTRALYTICS_SEEDS:  # what pickle_ultralytics reads: architecture, arguments, transforms
        yield from _zip_members(ROOT / "tests" / "data" / "ultralytics" / name, lambda n: n.endswith(".pkl"))
    for name in HDBSCAN_SEEDS:  # what pickle_native_hdbscan reads: condensed and single-linkage trees, prediction data
        yield (ROOT / "tests" / "data" / "outliers" / name).read_bytes()


# Ultralytics checkpoints: a trainer's (arguments as a namespace, optimizer, EMA), a fused model's, a classifier's.
ULTRALYTICS_SEEDS = ("yolov8n_detect_epoch.pt", "yolov8n_fused.pt", "yolov8n_classify_best.pt")
# hdbscan clusterers as the library writes them: with prediction data (pickle, joblib) and a RobustSingleLinkage.
HDBSCAN_SEEDS = ("hdbscan_manhattan.pkl", "hostile/original.joblib", "hostile/original-rsl.joblib")


def _sklearn_native_pickles() -> Iterator[bytes]:
    """scikit-learn models whose index arrays `scanners/pickle_native_checks.py` reads (neighbor and decision trees,
    histogram boosting, libsvm, sparse matrices), pickled and joblib-dumped, when scikit-learn is there."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the models are built by the tests' helper
    try:
        from tests.helpers.sklearn_native import benign_models, save
    except ImportError:
        return
    models = benign_models()
    for name in ("knn-kd", "knn-ball-mahalanobis", "tree", "gradient-boosting-3", "hist-gradient-boosting-categorical",
                 "svc-sparse", "sparse-matrices"):
        for how in ("pickle2", "pickle4", "joblib"):
            yield save(models[name], how)


def _sentencepiece_models() -> Iterator[bytes]:
    """Models the trainer writes (sentencepiece is in the test extra): unigram with NFKC rules, BPE with byte
    fallback and no rules, and a character model with custom rules."""
    import tempfile

    import sentencepiece as spm

    text = "\n".join(f"the quick brown fox {i} jumps, naïve café №{i} 日本語 \uff21\uff22" for i in range(300))
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "corpus.txt").write_text(text, encoding="utf-8")
        (Path(folder) / "rules.tsv").write_text("41\t61\n43 44\t63\n", encoding="utf-8")
        for name, arguments in {
            "unigram": {"model_type": "unigram", "vocab_size": 70},
            "bytes": {"model_type": "bpe", "vocab_size": 340, "byte_fallback": True,
                      "normalization_rule_name": "identity"},
            "custom": {"model_type": "char", "normalization_rule_tsv": f"{folder}/rules.tsv"},
        }.items():
            spm.SentencePieceTrainer.train(input=f"{folder}/corpus.txt", model_prefix=f"{folder}/{name}", minloglevel=2,
                                           **arguments)
            yield (Path(folder) / f"{name}.model").read_bytes()


def _boosters() -> Iterator[bytes]:
    """LightGBM model texts, XGBoost snapshots and CatBoost models of the models the tests fit (when the libraries
    are there), and the corpus's hand-written LightGBM text and CatBoost model."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if importlib.util.find_spec("lightgbm") is not None:  # the test module skips itself without it
        from tests.test_lightgbm_model import _models as lightgbm_models
        from tests.test_lightgbm_model import _text

        for name, model in lightgbm_models().items():
            if name != "unfitted":
                yield _text(model).encode()
    if importlib.util.find_spec("xgboost") is not None:
        from tests.test_xgboost_model import _booster
        from tests.test_xgboost_model import _models as xgboost_models

        for name, model in xgboost_models().items():
            if name != "unfitted":
                yield bytes(_booster(model).__getstate__()["handle"])
    if importlib.util.find_spec("catboost") is not None:
        from tests.test_catboost_model import _blob
        from tests.test_catboost_model import _models as catboost_models

        for name, model in catboost_models().items():
            if name != "unfitted":
                yield _blob(model)
    spec = importlib.util.spec_from_file_location("wscan_corpus_build", CORPUS / "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = build  # dataclasses resolve their module by name
    spec.loader.exec_module(build)
    yield build.lightgbm_model().encode()
    yield build.catboost_model(first_split=0)


def _arrow_pickles() -> Iterator[bytes]:
    """pyarrow arrays as pickle writes them (`scanners/pickle_arrow.py` checks their layout), when pyarrow is there."""
    try:
        import pyarrow as pa
    except ImportError:
        return
    strings = pa.array(["a", None, "ccc"])
    arrays = [strings, strings.slice(1), pa.array([1, None, 3]), pa.array([True, False]), pa.array([[1], [2, 3]])]
    for protocol in (2, 5):
        yield pickle.dumps(arrays, protocol=protocol)


# gzip, bz2, xz, lzma-alone, zlib (joblib's compress=3), LZ4 frames, joblib's Z-file.
COMPRESSION_MAGICS = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"\x5d\x00", b"\x78", b"\x04\x22\x4d\x18", b"ZF")

SOURCES: dict[str, Callable[[], Iterable[bytes | Path]]] = {
    "pickle": _pickles,
    "pickle_oracle": _pickles,
    "archive": lambda: [
        *(p for p in _files("*") if _magic(p, b"PK\x03\x04", b"7z\xbc\xaf") or p.suffix == ".tar"),
        *(gzip.decompress(p.read_bytes()) for p in sorted(SPARSE_TARS.glob("*.tar.gz"))),  # GNU tar's sparse formats
    ],
    "pytorch": lambda: [p for p in _files("*.pt", "*.pth", "*.bin") if _is_torch_zip(p)],
    "compressed": lambda: [p for p in _files("*") if _magic(p, *COMPRESSION_MAGICS)],
    "numpy": lambda: _files("*.npy", "*.npz"),
    "pyliteral": lambda: _files("*.npy"),
    "safetensors": lambda: _files("*.safetensors"),
    "shards": _shards,
    "onnx": lambda: _files("*.onnx"),
    "gguf": lambda: _files("*.gguf"),
    "flax": lambda: [*_files("*.msgpack"), *sorted(FLAX.rglob("*.msgpack"))],
    "sentencepiece": _sentencepiece_models,
    "openvino": lambda: sorted(OPENVINO.rglob("*.xml")),
    "tflite": lambda: [*_files("*.tflite"), *sorted(TFLITE.rglob("*.tflite"))],
    "keras": lambda: [
        *_files("*.keras"),
        *(m for p in _files("*.keras") for m in _zip_members(p, lambda n: n == "config.json")),
        *sorted(TF_KERAS.rglob("keras_metadata.pb")),
    ],
    "tf_graph": lambda: [*_files("*.pb", "*.pbtxt", "*.meta"), *sorted(TF_KERAS.rglob("saved_model.pb")),
                         *sorted(TF_FUNCTIONS.rglob("saved_model.pb"))],
    "config_targets": lambda: [
        *_files("*.yaml", "*.yml"),
        *(m for p in _files("*.nemo") for m in _tar_members(p, lambda n: n.endswith(".yaml"))),
    ],
    "chat_template": _templates,
    "repo_json": lambda: [*(p for p in _files("*.json") if p.name != "MANIFEST.json"), *_files("README.md")],
    "python_code": lambda: [*_files("*.py"), *sorted((ROOT / "tools").glob("*.py"))],
    "rules": lambda: sorted((ROOT / "rules").glob("*.yaml")),
    "config": lambda: CONFIGS,
    "pt2": lambda: sorted((ROOT / "tests" / "data" / "pt2").glob("*.json")),  # from a torch.export.save archive
    "boosters": _boosters,
    "skops": lambda: [m for p in _files("*.skops") for m in _zip_members(p, lambda n: n == "schema.json")],
    "git_files": lambda: GIT_FILES,
}


def build(work: Path, targets: Iterable[str]) -> dict[str, Path]:
    """Write the seeds of each target to work/seeds/<target>/ (replacing old ones); the folder per target."""
    folders: dict[str, Path] = {}
    for target in targets:
        folder = work / "seeds" / target
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for item in SOURCES[target]():
            data = item.read_bytes() if isinstance(item, Path) else item
            if len(data) > MAX_SEED_BYTES:
                continue
            (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
        folders[target] = folder
    return folders


if __name__ == "__main__":
    built = build(Path(__file__).resolve().parent / "work", sys.argv[1:] or list(SOURCES))
    for name, path in built.items():
        print(f"{name:15} {len(list(path.iterdir())):4} seeds  {path}")
