"""One summary per model folder: what a reviewer asks before the findings (what is it, how big, whose).

A model is a folder that holds weights or a model config; a diffusers pipeline (model_index.json) is one
model with its component folders. Everything here comes from facts the scanners observed while reading
headers (safetensors and GGUF headers, PyTorch storage ids, config.json, adapter_config.json, the model
card's front matter), so no file is read twice.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from wscan.model import AttrValue, Observation, Severity
from wscan.report import FileResult, ModelSummary

# Observation kinds the summary reads; none of them is judged by a rule.
FACT_KINDS = frozenset({
    "safetensors.layout", "pickle.summary", "fact.config", "fact.adapter", "fact.model_card", "fact.gguf",
    "fact.onnx", "fact.flax",
})
WEIGHT_FORMATS = frozenset({
    "safetensors", "pickle", "zip", "gguf", "onnx", "npy", "keras", "hdf5", "tf-graph", "flax-msgpack",
    "tflite", "openvino",
})
SHARD = re.compile(r".+-\d{5,}-of-\d{5,}(\.[^/]+)?$")
# Files a trainer writes beside the weights: their tensors are not model parameters.
TRAINER_STATE = re.compile(r"(^|/)(optimizer|scheduler|rng_state[^/]*|training_args|trainer_state)\.[^/]+$")
LICENSE_FILE = re.compile(r"(^|/)(LICEN[CS]E|COPYING)(\.[A-Za-z]+)?$", re.IGNORECASE)
FLOAT_DTYPES = frozenset({"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"})
# Parameter counts are taken from one format, best first, so a folder with both .bin and .safetensors
# copies of the same weights is not counted twice.
PARAMETER_SOURCES = ("safetensors", "gguf", "onnx", "flax", "pickle")


@dataclass
class _Model:
    path: str
    files: list[FileResult] = field(default_factory=list)
    facts: list[tuple[str, Observation]] = field(default_factory=list)  # (file path, observation)


def _parent(path: str) -> str:
    return posixpath.dirname(path) or "."


def model_root(path: str, pipelines: set[str]) -> str:
    """The folder a file belongs to: its own, or the diffusers pipeline folder above it."""
    folder = _parent(path)
    ancestor = folder
    while pipelines:
        if ancestor in pipelines:
            return ancestor
        parent = _parent(ancestor)
        if parent == ancestor:  # ".", "/" and "//" are their own parents
            break
        ancestor = parent
    return folder


def summarize(
    files: Iterable[FileResult], facts: Mapping[str, list[Observation]], fail_on: Severity
) -> list[ModelSummary]:
    """Group files into models and summarise each one that holds weights or a model config."""
    results = sorted(files, key=lambda f: f.path)
    pipelines = {_parent(f.path) for f in results if f.path.rsplit("/", 1)[-1] == "model_index.json"}
    models: dict[str, _Model] = {}
    for result in results:
        root = model_root(result.path, pipelines)
        model = models.get(root)
        if model is None:
            model = models[root] = _Model(root)
        model.files.append(result)
        model.facts += [(result.path, obs) for obs in facts.get(result.path, [])]
    summaries = []
    for model in models.values():
        has_weights = any(set(f.formats) & WEIGHT_FORMATS for f in model.files)
        if has_weights or any(obs.kind in ("fact.config", "fact.adapter") for _, obs in model.facts):
            summaries.append(_summary(model, fail_on))
    return summaries


def _summary(model: _Model, fail_on: Severity) -> ModelSummary:
    facts = model.facts
    config = _first(facts, "fact.config")
    adapter = _first(facts, "fact.adapter")
    card = _first(facts, "fact.model_card")
    gguf = _first(facts, "fact.gguf")
    dtypes = sorted({d for _, obs in facts for d in _split(obs.attrs.get("dtypes"))})
    worst = max((f.worst for f in model.files if f.worst is not None), default=None)
    license_name = _text(card, "license") or ("see " + _license_file(model) if _license_file(model) else "")
    base = _text(adapter, "base_model") or _text(card, "base_model")
    return ModelSummary(
        path=model.path,
        files=len(model.files),
        size=sum(f.size for f in model.files),
        shards=sum(1 for f in model.files if SHARD.match(f.path) and set(f.formats) & WEIGHT_FORMATS),
        formats=tuple(sorted({fmt for f in model.files for fmt in f.formats})),
        dtypes=tuple(dtypes),
        parameters=_parameters(facts),
        quantization=_text(config, "quantization") or _gguf_quantization(gguf, dtypes),
        kind="adapter" if adapter is not None else "full",
        base_model=base,
        architecture=_text(config, "architectures") or _text(gguf, "architecture"),
        model_card=card is not None,
        license=license_name,
        worst=worst,
        verdict="fail" if worst is not None and worst >= fail_on else "pass",
    )


def _parameters(facts: list[tuple[str, Observation]]) -> int | None:
    per_source: dict[str, int] = {}
    for path, obs in facts:
        if TRAINER_STATE.search(path):
            continue
        if obs.kind == "safetensors.layout":
            source, count = "safetensors", obs.attrs.get("parameters")
        elif obs.kind == "pickle.summary":
            source, count = "pickle", obs.attrs.get("elements")
        elif obs.kind in ("fact.gguf", "fact.onnx", "fact.flax"):
            source, count = obs.kind.split(".")[1], obs.attrs.get("parameters")
        else:
            continue
        if isinstance(count, int) and not isinstance(count, bool):
            per_source[source] = per_source.get(source, 0) + count
    return next((per_source[s] for s in PARAMETER_SOURCES if s in per_source), None)


def _gguf_quantization(gguf: Observation | None, dtypes: list[str]) -> str:
    quantized = _text(gguf, "quantization")
    if quantized:
        return quantized
    return ",".join(d for d in dtypes if d not in FLOAT_DTYPES and d.startswith(("Q", "IQ", "TQ")))


def _first(facts: list[tuple[str, Observation]], kind: str) -> Observation | None:
    return next((obs for _, obs in facts if obs.kind == kind), None)


MAX_FACT_CHARS = 300  # a summary names a model; a file's value of any length must not fill every report


def _text(obs: Observation | None, key: str) -> str:
    value: AttrValue | None = obs.attrs.get(key) if obs is not None else None
    return value[:MAX_FACT_CHARS] if isinstance(value, str) else ""


def _split(value: AttrValue | None) -> list[str]:
    return [part for part in value.split(",") if part] if isinstance(value, str) else []


def _license_file(model: _Model) -> str:
    return next((PurePosixPath(f.path).name for f in model.files if LICENSE_FILE.search(f.path)), "")
