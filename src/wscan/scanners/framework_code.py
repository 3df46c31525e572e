"""Manifests that make a framework's loader import Python code from the model folder, with no opt-in.

- MLflow `MLmodel`: `mlflow.pyfunc.load_model` runs the file `python_function.model_code_path` names ("models
  from code", MLflow 3's recommended format), and imports `loader_module` with the folder's `code:` directory
  first on `sys.path`.
- diffusers `model_index.json`: `DiffusionPipeline.from_pretrained` (before diffusers 0.38, without
  trust_remote_code) imports the pipeline module `_class_name: [module, Class]` names from `module.py` beside
  the index, and a component `[library, Class]` from `<component>/<library>.py`.

Each such import is reported with whether the file is in the folder; the Python files themselves are read by
the Python code scanner (these manifests mark a model folder). Nothing here imports or runs anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
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


def _code(artifact: Artifact, loader: str, field: str, reference: str, file: str) -> Observation:
    return artifact.observe(
        "repo.loader_code", loader=loader, field=field, references=reference[:_KEEP], file=file[:_KEEP],
        local=_beside(artifact, file),
    )  # fmt: skip


def _beside(artifact: Artifact, relative: str) -> bool:
    """Whether the file is in the manifest's folder; inside an archive it cannot be told, so it counts as there."""
    if artifact.real_path is None:
        return True
    try:
        return (artifact.real_path.parent / relative).is_file()
    except (OSError, ValueError):
        return True


# --- MLflow -----------------------------------------------------------------------------------------------


def _mlflow(artifact: Artifact, data: bytes) -> Iterator[ScanItem]:
    pyfunc = _yaml_get(_compose(data), "flavors", "python_function")
    if pyfunc is None:
        return
    code_path = _scalar(_yaml_get(pyfunc, "model_code_path"))
    if code_path:
        name = code_path.replace("\\", "/").rsplit("/", 1)[-1]  # MLflow copies the file into the model folder
        yield _code(artifact, "mlflow", "python_function.model_code_path", code_path, name)
    module = _scalar(_yaml_get(pyfunc, "loader_module"))
    if module and not module.startswith(MLFLOW_PREFIX):
        code_dir = _scalar(_yaml_get(pyfunc, "code")) or ""
        file = "/".join(filter(None, [code_dir.strip("/"), module.replace(".", "/") + ".py"]))
        yield _code(artifact, "mlflow", "python_function.loader_module", module, file)


def _compose(data: bytes) -> Any:
    """The YAML node tree (aliases stay shared nodes: nothing is expanded or constructed), or None."""
    import yaml

    try:
        return yaml.compose(data.decode("utf-8", "replace"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, RecursionError):
        return None


def _yaml_get(node: Any, *keys: str) -> Any:
    """The value node under a path of mapping keys, or None."""
    import yaml

    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
    return node


def _scalar(node: Any) -> str:
    import yaml

    if isinstance(node, yaml.ScalarNode) and node.tag != "tag:yaml.org,2002:null" and node.value not in ("", "~"):
        return str(node.value)
    return ""


# --- diffusers --------------------------------------------------------------------------------------------


def _diffusers(artifact: Artifact, data: bytes) -> Iterator[ScanItem]:
    top = loads_lenient(data)
    if not isinstance(top, dict):
        return
    pipeline = top.get("_class_name")
    if _pair(pipeline):
        module, cls = pipeline
        yield _code(artifact, "diffusers", "_class_name", f"{module}.{cls}", f"{module}.py")
    for component, value in top.items():
        if isinstance(component, str) and not component.startswith("_") and _pair(value):
            library, cls = value
            file = f"{component}/{library}.py"
            # Only a module file in the component's folder: other library names are diffusers' own pipelines
            # (["stable_diffusion", "StableDiffusionSafetyChecker"]) or installed packages.
            if _beside(artifact, file) and artifact.real_path is not None and _safe_part(component, library):
                yield _code(artifact, "diffusers", component, f"{library}.{cls}", file)


def _pair(value: object) -> TypeGuard[list[str]]:
    """`[module, Class]`: diffusers' form for a class to import."""
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) and v for v in value)


def _safe_part(*parts: str) -> bool:
    """Plain names only: a component or library with a path separator is not a folder the loader looks in."""
    return all(part not in (".", "..") and "/" not in part and "\\" not in part and not Path(part).is_absolute()
               for part in parts)  # fmt: skip
