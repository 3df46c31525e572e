"""Manifests that make a framework's loader import Python code from the model folder, with no opt-in.

- MLflow `MLmodel`: `mlflow.pyfunc.load_model` runs the file `python_function.model_code_path` names ("models
  from code", MLflow 3's recommended format), and puts any flavour's `code:` directory (or zip) first on
  `sys.path` before its loader imports anything, so a file there shadows any module (`torch.py`); a
  `loader_module` outside MLflow is imported from there.
- diffusers `model_index.json`: `DiffusionPipeline.from_pretrained` (before diffusers 0.38, without
  trust_remote_code) imports the pipeline module `_class_name: [module, Class, ...]` names from `module.py`
  beside the index, a component `[library, Class]` from `<component>/<library>.py` (a `..` in it included), and
  `None.py` (it looks for `{custom_pipeline}.py` with custom_pipeline None).

Each such import is reported with whether the file is in the folder; the Python files themselves are read by
the Python code scanner (these manifests mark a model folder). Nothing here imports or runs anything.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from typing import Any, TypeGuard

from wscan.model import Observation
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem
from wscan.scanners.repo_files import read_bounded
from wscan.strict_json import loads_lenient

MLMODEL = "MLmodel"
DIFFUSERS_INDEXES = frozenset({"model_index.json", "modular_model_index.json"})
MLFLOW_PREFIX = "mlflow."  # loader modules MLflow ships (mlflow.pyfunc.model, mlflow.sklearn, ...)
_KEEP = 300


class FrameworkCodeScanner:
    """MLflow's MLmodel and diffusers' model_index.json, for the code their loaders import from the folder."""

    name = "framework-code"

    def accepts(self, head: Head) -> bool:
        base = head.name.replace("\\", "/").rsplit("/", 1)[-1]
        return not head.raw_data and b"\x00" not in head.head and (base == MLMODEL or base in DIFFUSERS_INDEXES)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        data = read_bounded(artifact, ctx)
        if isinstance(data, Observation):
            yield data
            return
        if artifact.name.replace("\\", "/").rsplit("/", 1)[-1] == MLMODEL:
            yield from _mlflow(artifact, data)
        else:
            yield from _diffusers(artifact, data)


def _code(artifact: Artifact, loader: str, field: str, reference: str, file: str, local: bool) -> Observation:
    return artifact.observe(
        "repo.loader_code", loader=loader, field=field, references=reference[:_KEEP], file=file[:_KEEP], local=local
    )


def _exists(artifact: Artifact, relative: str) -> bool:
    """Whether the path (file, package folder, zip) exists from the manifest's folder; inside an archive it cannot
    be told, so it counts as there."""
    if artifact.real_path is None:
        return True
    try:
        return os.path.lexists(artifact.real_path.parent / relative)
    except (OSError, ValueError):
        return True


# --- MLflow -----------------------------------------------------------------------------------------------


def _mlflow(artifact: Artifact, data: bytes) -> Iterator[ScanItem]:
    """Read as MLflow reads it (yaml.safe_load: the last of duplicate keys, merge keys and aliases resolved)."""
    document = load_yaml_document(data)
    flavors = document.get("flavors") if isinstance(document, dict) else None
    if not isinstance(flavors, dict):
        return
    for flavor, conf in flavors.items():
        code = conf.get("code") if isinstance(conf, dict) else None
        if code:  # put first on sys.path before the flavour's loader imports anything: its files shadow any module
            for entry in code if isinstance(code, list) else [code]:
                yield _code(artifact, "mlflow", f"{flavor}.code", str(entry), str(entry), _exists(artifact, str(entry)))
    pyfunc = flavors.get("python_function")
    if not isinstance(pyfunc, dict):
        return
    code_path = pyfunc.get("model_code_path")
    if isinstance(code_path, str) and code_path:
        name = code_path.rsplit("/", 1)[-1]  # posixpath.basename, as MLflow takes it: a backslash is a character
        yield _code(artifact, "mlflow", "python_function.model_code_path", code_path, name, _exists(artifact, name))
    module = pyfunc.get("loader_module")
    if isinstance(module, str) and module and not module.startswith(MLFLOW_PREFIX):
        code = pyfunc.get("code")
        folder = str(code[0] if isinstance(code, list) and code else code or "")
        file = "/".join(filter(None, [folder.strip("/"), module.replace(".", "/") + ".py"]))
        local = _exists(artifact, file) or bool(folder and _exists(artifact, folder))
        yield _code(artifact, "mlflow", "python_function.loader_module", module, file, local)


def load_yaml_document(data: bytes) -> Any:
    """A YAML document as a loader's yaml.safe_load builds it (aliases are shared objects, never copies), or None."""
    import yaml

    try:
        return yaml.load(data.decode("utf-8", "replace"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):
        return None


# --- diffusers --------------------------------------------------------------------------------------------


def _diffusers(artifact: Artifact, data: bytes) -> Iterator[ScanItem]:
    top = loads_lenient(data)
    if not isinstance(top, dict):
        return
    if artifact.real_path is not None and (artifact.real_path.parent / "None.py").is_file():
        # diffusers < 0.38 looks for `{custom_pipeline}.py` with custom_pipeline=None, and imports None.py.
        yield _code(artifact, "diffusers", "custom_pipeline", "None", "None.py", True)
    pipeline = top.get("_class_name")
    if _names_class(pipeline):
        module, cls = pipeline[0], pipeline[1]
        file = f"{module}.py"
        yield _code(artifact, "diffusers", "_class_name", f"{module}.{cls}", file, _exists(artifact, file))
    for component, value in top.items():
        if isinstance(component, str) and not component.startswith("_") and _names_class(value):
            library, cls = value[0], value[1]
            file = posixpath.normpath(f"{component}/{library}.py")
            # Only a module file the folder holds: other library names are diffusers' own pipelines
            # (["stable_diffusion", "StableDiffusionSafetyChecker"]) or installed packages.
            if artifact.real_path is not None and _exists(artifact, file):
                yield _code(artifact, "diffusers", component, f"{library}.{cls}", file, True)


def _names_class(value: object) -> TypeGuard[list[str]]:
    """`[module, Class, ...]`: diffusers' form for a class to import (it reads the first two items)."""
    return isinstance(value, list) and len(value) >= 2 and all(isinstance(v, str) and v for v in value[:2])
