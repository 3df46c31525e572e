"""Manifests that make a framework's loader import Python code from the model folder, with no opt-in.

- MLflow `MLmodel`: `mlflow.pyfunc.load_model` runs the file `python_function.model_code_path` names ("models
  from code", MLflow 3's recommended format), and puts any flavour's `code:` directory (or zip) first on
  `sys.path` before its loader imports anything, so a file there shadows any module (`torch.py`); a
  `loader_module` outside MLflow is imported from there.
- diffusers `model_index.json`: `DiffusionPipeline.from_pretrained` (before diffusers 0.38, without
  trust_remote_code) imports the pipeline module `_class_name: [module, Class, ...]` names from `module.py`
  beside the index, a component `[library, Class]` from `<component>/<library>.py` (a `..` in it included), and
  `None.py` (it looks for `{custom_pipeline}.py` with custom_pipeline None). A modular pipeline's component spec
  (`[library, class, {"pretrained_model_name_or_path": ..., "subfolder": ...}]`) names where load_components
  loads the component from: paths leaving the folder are judged as other config keys are (`loader_keys`).
- optimum's `ORTDiffusionPipeline.from_pretrained` imports the `library` of a component (scheduler, tokenizer,
  feature extractor) whatever it is, running an installed module's import-time code (a review ran `antigravity`):
  each component's library is reported, and the rules judge it against the libraries real pipelines name.

Each such import is reported with whether the file is in the folder; the Python files themselves are read by
the Python code scanner (these manifests mark a model folder). Nothing here imports or runs anything.
"""

from __future__ import annotations

import os
import posixpath
import sys
from collections.abc import Iterator
from typing import Any, TypeGuard

from wscan.lookup import is_file, resolve
from wscan.model import Observation
from wscan.module_shadowing import COMMON_IMPORTS
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem
from wscan.scanners.loader_keys import DIFFUSERS_INDEX, loader_keys
from wscan.scanners.repo_files import read_bounded
from wscan.scanners.yaml_parsers import yaml_loaders
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
    """Whether the path (file, package folder, zip) exists from the manifest's folder; inside an archive, or on a
    network share (not looked up), it cannot be told, so it counts as there."""
    if artifact.real_path is None:
        return True
    path = artifact.real_path.parent / relative
    try:
        return resolve(path, artifact.real_path.parent) is None or os.path.lexists(path)
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
        if not isinstance(conf, dict):
            continue
        code_path = conf.get("model_code_path")  # any flavour's loader (pyfunc, langchain, ...) runs this file
        if isinstance(code_path, str) and code_path:
            name = code_path.rsplit("/", 1)[-1]  # posixpath.basename, as MLflow takes it: a backslash is a character
            yield _code(artifact, "mlflow", f"{flavor}.model_code_path", code_path, name, _exists(artifact, name))
        code = conf.get("code")
        for entry in (code if isinstance(code, list) else [code]) if code else []:
            # Put first on sys.path before the flavour's loader imports anything.
            folder = str(entry)
            yield artifact.observe("repo.code_path", loader="mlflow", field=f"{flavor}.code", folder=folder[:_KEEP],
                                   shadows=", ".join(_shadowed(artifact, folder))[:_KEEP])  # fmt: skip
    pyfunc = flavors.get("python_function")
    module = pyfunc.get("loader_module") if isinstance(pyfunc, dict) else None
    if isinstance(pyfunc, dict) and isinstance(module, str) and module and not module.startswith(MLFLOW_PREFIX):
        code = pyfunc.get("code")
        folder = str(code[0] if isinstance(code, list) and code else code or "")
        file = "/".join(filter(None, [folder.strip("/"), module.replace(".", "/") + ".py"]))
        local = _exists(artifact, file) or bool(folder and _exists(artifact, folder))
        yield _code(artifact, "mlflow", "python_function.loader_module", module, file, local)




def _shadowed(artifact: Artifact, folder: str) -> list[str]:
    """Modules a `code:` entry would shadow; inside an archive or for a zip, that cannot be listed, so "(unknown)"."""
    if artifact.real_path is None or not folder.strip("/"):
        return ["(unknown)"]
    path = artifact.real_path.parent / folder
    if resolve(path, artifact.real_path.parent) is None:
        return ["(unknown)"]
    if not path.is_dir():
        return ["(unknown)"] if _exists(artifact, folder) else []  # a zip (zipimport) or another file
    known = COMMON_IMPORTS | frozenset(sys.stdlib_module_names)
    try:
        names = os.listdir(path)  # every name: a json.py sorted past the first 10,000 once went unnamed (helper 208)
    except OSError:
        return ["(unknown)"]
    stems = {name.split(".", 1)[0] for name in names}
    return sorted(stems & known)


def load_yaml_document(data: bytes) -> Any:
    """A YAML document as yaml.safe_load builds it (aliases are shared objects, never copies), or None, read by the
    parser the loaders use (`yaml_parsers`); what libyaml refuses (`%YAML 1.9`, a reserved directive, a lone
    surrogate escape) the pure parser may still accept."""
    import yaml

    text = data.decode("utf-8", "replace")
    for loader in yaml_loaders(text):
        try:
            return yaml.load(text, Loader=loader)
        except (yaml.YAMLError, RecursionError, ValueError, TypeError):
            continue
    return None


# --- diffusers --------------------------------------------------------------------------------------------


def _diffusers(artifact: Artifact, data: bytes) -> Iterator[ScanItem]:
    top = loads_lenient(data)
    if not isinstance(top, dict):
        return
    yield from loader_keys(artifact, top, DIFFUSERS_INDEX)  # a component spec's model path, subfolder, variant
    if artifact.real_path is not None and is_file(artifact.real_path.parent / "None.py"):
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
            else:  # optimum's ORT pipelines import any installed module by this name (the rules judge the name)
                yield artifact.observe("repo.component_library", field=component[:_KEEP], library=library[:_KEEP],
                                       references=f"{library}.{cls}"[:_KEEP])  # fmt: skip


def _names_class(value: object) -> TypeGuard[list[str]]:
    """`[module, Class, ...]`: diffusers' form for a class to import (it reads the first two items)."""
    return isinstance(value, list) and len(value) >= 2 and all(isinstance(v, str) and v for v in value[:2])
