"""Framework loaders that run code from a local model folder with default settings (a review proved each with
the real library and a marker payload; wscan passed every folder):

- MLflow 3.17 `mlflow.pyfunc.load_model`: "models from code" (MLmodel `model_code_path`) runs model.py, and a
  `loader_module` is imported from the folder's `code:` directory;
- diffusers 0.35-0.37 `DiffusionPipeline.from_pretrained`: model_index.json `_class_name: [module, Class]`
  imports module.py beside it, a component `[library, Class]` imports `<component>/<library>.py`;
- SpeechBrain 1.1 `from_hparams`: hyperparams.yaml's HyperPyYAML tags (`!apply:os.makedirs`, `!new:X`) call
  what they name;
- pyannote.audio 4.0 `Pipeline.from_pretrained`: config.yaml `pipeline.name` and `preprocessors.*.name` are
  imported and called with their params.

The manifests below are the files those libraries wrote in the review (MLflow's own save_model output, cut to
the fields its loader reads), with the payloads the review used. The libraries themselves are not in the test
extra (MLflow alone pulls in a web stack); what is asserted is that wscan reports what they would run, and
stays quiet on the benign forms the same libraries write.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.scanning import rule_ids, scan
from wscan.model import Severity

MLMODEL_FROM_CODE = """\
flavors:
  python_function:
    cloudpickle_version: 3.1.3
    code: null
    env:
      conda: conda.yaml
      virtualenv: python_env.yaml
    loader_module: mlflow.pyfunc.loaders.code_model
    model_code_path: /tmp/tmpxi7yt4tm/model.py
    python_version: 3.11.7
    streamable: false
mlflow_version: 3.17.2
model_size_bytes: 188
"""
MLMODEL_LOADER_MODULE = """\
flavors:
  python_function:
    code: code
    env:
      conda: conda.yaml
      virtualenv: python_env.yaml
    loader_module: evil_loader
    python_version: 3.11.7
mlflow_version: 3.17.2
"""
MLMODEL_SKLEARN = """\
flavors:
  python_function:
    env:
      conda: conda.yaml
      virtualenv: python_env.yaml
    loader_module: mlflow.sklearn
    model_path: model.pkl
    predict_fn: predict
    python_version: 3.11.7
  sklearn:
    code: null
    pickled_model: model.pkl
    serialization_format: cloudpickle
    sklearn_version: 1.5.2
mlflow_version: 3.17.2
"""
MAKEDIRS = "import os\nos.makedirs('/tmp/marker', exist_ok=True)\n"
SYSTEM = "import os\nos.system('id')\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


CASES: dict[str, tuple[dict[str, str], str]] = {
    "mlflow-models-from-code": ({"MLmodel": MLMODEL_FROM_CODE, "model.py": MAKEDIRS}, "WS-REPO-009"),
    "mlflow-models-from-code-system": ({"MLmodel": MLMODEL_FROM_CODE, "model.py": SYSTEM}, "WS-CODE-002"),
    "mlflow-loader-module": (
        {"MLmodel": MLMODEL_LOADER_MODULE, "code/evil_loader.py": MAKEDIRS + "def _load_pyfunc(path):\n    pass\n"},
        "WS-REPO-009",
    ),
    "diffusers-custom-pipeline": (
        {
            "model_index.json": '{"_class_name": ["mypipe", "MyPipe"], "_diffusers_version": "0.30.0"}',
            "mypipe.py": MAKEDIRS,
        },
        "WS-REPO-009",
    ),
    "diffusers-custom-component": (
        {
            "model_index.json": '{"_class_name": "DDPMPipeline", "unet": ["my_unet", "MyUNet"], '
            '"scheduler": ["diffusers", "DDPMScheduler"]}',
            "unet/my_unet.py": MAKEDIRS,
            "unet/config.json": "{}",
        },
        "WS-REPO-009",
    ),
    "speechbrain-apply": (
        {"hyperparams.yaml": "sample_rate: 16000\nlog_dir: !apply:os.makedirs ['/tmp/marker', 0o777, True]\n"},
        "WS-CFG-001",
    ),
    "speechbrain-new-popen": (
        {"hyperparams.yaml": "worker: !new:subprocess.Popen\n    args: ['mkdir', '-p', '/tmp/marker']\n"},
        "WS-CFG-001",
    ),
    "pyyaml-python-tag": ({"params.yaml": "cmd: !!python/object/apply:os.system ['id']\n"}, "WS-CFG-001"),
    "pyannote-preprocessor": (
        {
            "config.yaml": "pipeline:\n  name: types.SimpleNamespace\npreprocessors:\n  audio:\n    name: os.makedirs\n"
            "    params:\n      name: /tmp/marker\n"
        },
        "WS-CFG-001",
    ),
    "pyannote-pipeline": ({"config.yaml": "pipeline:\n  name: subprocess.Popen\n  params: {}\n"}, "WS-CFG-001"),
}


LOADER = "def _load_pyfunc(path, model_config=None):\n    return None\n"
ENV = "    python_version: 3.11.7\nmlflow_version: 3.17.2\n"
SUPERPOWERS = """sp: !module:speechbrain.utils.superpowers
sub: !ref <sp.subprocess>
popen: !ref <sub.Popen>
setup: !apply:speechbrain.utils.distributed.run_on_main
    func: !ref <popen>
    args: [[mkdir, -p, /tmp/marker]]
"""
# A second review proved each of these with the real loader after the first fix (wscan passed every one).
CASES.update({
    "diffusers-None-py": ({"model_index.json": '{"_class_name": "DDPMPipeline"}', "None.py": MAKEDIRS}, "WS-REPO-009"),
    "diffusers-three-item-class-name": (
        {"model_index.json": '{"_class_name": ["mypipe", "MyPipe", ""]}', "mypipe.py": MAKEDIRS}, "WS-REPO-009"),
    "diffusers-component-library-with-dotdot": (
        {"model_index.json": '{"_class_name": "DDPMPipeline", "unet": ["../unet_code", "MyUNet"]}',
         "unet/config.json": "{}", "unet_code.py": MAKEDIRS}, "WS-REPO-009"),
    "mlflow-duplicate-loader-module": (
        {"MLmodel": "flavors:\n  python_function:\n    code: code\n    loader_module: mlflow.sklearn\n"
                    "    loader_module: evil_loader\n" + ENV, "code/evil_loader.py": MAKEDIRS + LOADER}, "WS-REPO-009"),
    "mlflow-duplicate-flavor": (
        {"MLmodel": "flavors:\n  python_function:\n    loader_module: mlflow.sklearn\n  python_function:\n"
                    "    code: code\n    loader_module: evil_loader\n" + ENV,
         "code/evil_loader.py": MAKEDIRS + LOADER}, "WS-REPO-009"),
    "mlflow-merge-key": (
        {"MLmodel": "flavors:\n  python_function:\n    <<: {code: code, loader_module: evil_loader}\n" + ENV,
         "code/evil_loader.py": MAKEDIRS + LOADER}, "WS-REPO-009"),
    "mlflow-loader-package": (
        {"MLmodel": "flavors:\n  python_function:\n    code: code\n    loader_module: evil_loader\n" + ENV,
         "code/evil_loader/__init__.py": MAKEDIRS + LOADER}, "WS-REPO-009"),
    "mlflow-code-zip": (
        {"MLmodel": "flavors:\n  python_function:\n    code: code.zip\n    loader_module: evil_loader\n" + ENV,
         "code.zip": "PK (a zip zipimport reads)"}, "WS-REPO-009"),
    "mlflow-backslash-in-model-code-path": (
        {"MLmodel": "flavors:\n  python_function:\n    loader_module: mlflow.pyfunc.loaders.code_model\n"
                    "    model_code_path: 'x\\model.py'\n" + ENV, "x\\model.py": MAKEDIRS}, "WS-REPO-009"),
    "mlflow-code-shadows-an-import": (
        {"MLmodel": "flavors:\n  python_function:\n    code: code\n    loader_module: mlflow.pytorch\n" + ENV,
         "code/torch.py": MAKEDIRS}, "WS-REPO-011"),
    "speechbrain-escaped-tag-in-an-include": (
        {"hyperparams.yaml": "sample_rate: 16000\nextra: !include:extra.txt\n",
         "extra.txt": "log_dir: !apply:%6Fs.makedirs ['/tmp/marker', 0o777, True]\n"}, "WS-CFG-001"),
    "speechbrain-ruamel-only-yaml": (
        {"hyperparams.yaml": "sample_rate: &sr.v 16000\nrate2: *sr.v\nlog_dir: !apply:%6Fs.makedirs ['/tmp/m']\n"},
        "WS-CFG-001"),
    "speechbrain-module-and-references": ({"hyperparams.yaml": SUPERPOWERS}, "WS-CFG-001"),
    "pyannote-merge-keys": (
        {"config.yaml": "pipeline:\n  <<: {name: types.SimpleNamespace}\npreprocessors:\n  audio:\n    <<:\n"
                        "      name: os.makedirs\n      params: {name: /tmp/marker}\n"}, "WS-CFG-001"),
    "pyannote-aliases": (
        {"config.yaml": "defs:\n  p: &p {name: types.SimpleNamespace}\n  a: &a {name: os.makedirs}\n"
                        "pipeline: *p\npreprocessors: {audio: *a}\n"}, "WS-CFG-001"),
    "pyannote-dotted-preprocessor-key": (
        {"config.yaml": "pipeline: {<<: {name: types.SimpleNamespace}}\npreprocessors:\n  a.b:\n"
                        "    name: os.makedirs\n"}, "WS-CFG-001"),
    "hyperpyyaml-dunder-reference": (
        {"hyperparams.yaml": "fb: !new:speechbrain.lobes.features.Fbank\ng: !ref <fb.__init__.__globals__>\n"},
        "WS-CFG-010"),
})  # fmt: skip


FROM_CODE = "    loader_module: mlflow.pyfunc.loaders.code_model\n    model_code_path: /tmp/t/model.py\n"
# A third review proved each of these with the real loaders after the second fix.
CASES.update({
    "hyperpyyaml-implicit-tuple-runs-the-unsafe-loader": (
        {"hyperparams.yaml": "kernel_sizes: (!!python/object/apply:os.makedirs [/tmp/marker, 511, True], 3)\n"},
        "WS-CFG-001"),
    "hyperpyyaml-implicit-tuple-verbatim-escaped-tag": (
        {"hyperparams.yaml": "k: (!<tag:yaml.org,2002:%70ython/object/apply:%6Fs.makedirs> [/tmp/m, 511, True], 3)\n"},
        "WS-CFG-001"),
    "speechbrain-reexported-load-hyperpyyaml": (
        {"hyperparams.yaml": 'extra: !apply:speechbrain.inference.interfaces.load_hyperpyyaml ["x: \\x21apply:os.mkdir '
                             '[/tmp/m]"]\n'}, "WS-CFG-009"),
    "speechbrain-reexported-import-from-path": (
        {"hyperparams.yaml": "helper: !apply:speechbrain.inference.interfaces.import_from_path [audio_norm.py]\n",
         "audio_norm.py": MAKEDIRS}, "WS-CFG-001"),  # an alias the generated pack lists (was WS-CFG-009)
    "speechbrain-name-of-a-module-and-references": (
        {"hyperparams.yaml": "der: !name:speechbrain.utils.DER\nsub: !ref <der.subprocess>\n"
                             "popen: !ref <sub.check_call>\nprocs: !apply:speechbrain.utils.parallel.parallel_map\n"
                             "    fn: !ref <popen>\n    source: [[mkdir, -p, /tmp/m]]\n"}, "WS-CFG-007"),
    "speechbrain-include-past-the-head": (
        {"hyperparams.yaml": "extra: !include:extra.txt\n",
         "extra.txt": "#" * 70_000 + "\nlog_dir: !apply:os.makedirs [/tmp/m, 0o777, True]\n"}, "WS-CFG-015"),
    "speechbrain-tag-directive-in-ruamel-only-yaml": (
        {"hyperparams.yaml": "%TAG !e! !apply:\n---\nsr: &sr.v 16000\nr2: *sr.v\nlog: !e!os.makedirs ['/tmp/m']\n"},
        "WS-CFG-014"),
    "mlflow-reserved-directive": ({"MLmodel": "%FOO bar\n---\nflavors:\n  python_function:\n" + FROM_CODE + ENV,
                                   "model.py": MAKEDIRS}, "WS-REPO-009"),
    "mlflow-lone-surrogate-escape": ({"MLmodel": "flavors:\n  python_function:\n" + FROM_CODE + ENV
                                      + 'note: "\\ud800"\n', "model.py": MAKEDIRS}, "WS-REPO-009"),
    "mlflow-langchain-model-code-path": (
        {"MLmodel": "flavors:\n  langchain:\n    model_code_path: /tmp/x/model.py\n  python_function:\n"
                    "    loader_module: mlflow.langchain\n" + ENV, "model.py": MAKEDIRS}, "WS-REPO-009"),
    "pyannote-reserved-directive": (
        {"config.yaml": "%FOO bar\n---\npipeline:\n  name: types.SimpleNamespace\npreprocessors:\n  audio:\n"
                        "    name: os.makedirs\n"}, "WS-CFG-001"),
})  # fmt: skip


# A fourth, short review proved these three after the third fix.
CASES.update({
    "hyperpyyaml-quoted-implicit-tuple": (
        {"hyperparams.yaml": 'kernel_sizes: "(!!python/object/apply:os.makedirs [/tmp/m, 511, True], 3)"\n'},
        "WS-CFG-001"),
    "speechbrain-lazy-module": (
        {"hyperparams.yaml": "ops: !new:speechbrain.utils.importutils.LazyModule\n"
                             "    {name: ops, target: os, package: null}\n"
                             "dirs: !new:list [!new:map [!ref <ops.makedirs>, [/tmp/m]]]\n"}, "WS-CFG-001"),
    "mlflow-code-folder-shadows-threadpoolctl": (
        {"MLmodel": "flavors:\n  python_function:\n    code: code\n    loader_module: mlflow.sklearn\n" + ENV,
         "code/threadpoolctl.py": MAKEDIRS}, "WS-REPO-011"),
})  # fmt: skip


CASES["hyperpyyaml-map-over-a-reference"] = (
    {"hyperparams.yaml": "f: !new:speechbrain.lobes.features.Fbank\n"
                         "run: !new:list [!new:map [!ref <f.execlp>, [x]]]\n"},
    "WS-CFG-016",
)


PRETRAINER = "modules: {}\npretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer\n    loadables: {}\n"
# A fifth review (SpeechBrain 1.1.2 `EncoderClassifier.from_hparams`, each with a marker) after the fourth fix.
CASES.update({
    "hyperpyyaml-tag-escaped-twice": (  # ruamel %-decodes a tag twice
        {"hyperparams.yaml": "log_dir: !apply:%256Fs.makedirs [/tmp/m, 0o777, True]\n" + PRETRAINER}, "WS-CFG-001"),
    "hyperpyyaml-tag-name-escaped-twice": (
        {"hyperparams.yaml": "log_dir: !%2561pply:%256Fs.system [mkdir -p /tmp/m]\n" + PRETRAINER}, "WS-CFG-001"),
    "hyperpyyaml-explicit-tuple-tag": (  # `!tuple` drops the first and last characters, whatever they are
        {"hyperparams.yaml": 'k: !tuple "x!!python/object/apply:os.makedirs [/tmp/m, 511, True]x"\n' + PRETRAINER},
        "WS-CFG-001"),
    "speechbrain-run-shell-reexported-by-logger": (
        {"hyperparams.yaml": "x: !apply:speechbrain.utils.logger.run_shell [mkdir -p /tmp/m]\n" + PRETRAINER},
        "WS-CFG-001"),
    "torch-basichandlers-reexported-by-routeddecoder": (
        {"hyperparams.yaml": "x: !apply:torch.utils.data.datapipes.iter.routeddecoder.decoder_basichandlers\n"
                             "    [pickle, !!binary gASVAAAAAAAAAAA=]\n" + PRETRAINER}, "WS-CFG-001"),
    "speechbrain-lazy-module-and-reduce-reexported": (
        {"hyperparams.yaml": "ops: !new:speechbrain.integrations.hdf5.LazyModule\n"
                             "    {name: ops, target: os, package: null}\n"
                             "d: !apply:speechbrain.lobes.models.g2p.reduce [!ref <ops.makedirs>, [511], /tmp/m]\n"
                             + PRETRAINER}, "WS-CFG-001"),
    "speechbrain-hpopt-reads-its-arguments-as-hyperparameters": (
        {"hyperparams.yaml": "hpctx: !new:speechbrain.utils.hpopt.HyperparameterOptimizationContext\n"
                             "parsed: !apply:speechbrain.utils.hpopt.HyperparameterOptimizationContext"
                             ".parse_arguments\n"
                             "    - !ref <hpctx>\n    - [hyperparams.yaml, '--extra=!apply:os.makedirs [/tmp/m]']\n"
                             + PRETRAINER}, "WS-CFG-001"),
    "speechbrain-from-hparams-of-another-file": (
        {"hyperparams.yaml": "inner: !apply:speechbrain.inference.classifiers.EncoderClassifier.from_hparams\n"
                             "    source: /tmp/x\n    hparams_file: notes.txt\n" + PRETRAINER,
         "notes.txt": "#" * 70_000 + "\nlog_dir: !apply:os.makedirs [/tmp/m, 0o777, True]\n"}, "WS-CFG-008"),
    "hyperpyyaml-calling-tags-in-a-string": (
        {"hyperparams.yaml": 't1: "!!python/object/apply:o"\nt2: "s.makedirs"\n'
                             "k: !ref (<t1><t2> [/tmp/m, 511, True], 3)\n" + PRETRAINER}, "WS-CFG-019"),
})  # fmt: skip


def test_generated_aliases_are_what_they_say(tmp_path: Path) -> None:
    """tools/gen_library_aliases.py lists library names that are a gadget under another name; for each library
    generated with the torch installed here, the alias must still be that object, and a config naming it is critical."""
    import importlib
    import json
    import types

    from wscan.rules import builtin_rules_dir

    record = json.loads((builtin_rules_dir() / "library-aliases.yaml").read_text())["lists"]["library-alias-record"]
    checked = 0
    for line in record:
        library, alias, _, real = line.split(" ")
        if library not in ("torch.nn", "torch.optim", "torch.utils.data"):  # generated with this torch
            continue
        module, _, attr = alias.rpartition(".")
        try:
            value = getattr(importlib.import_module(module), attr, None)
        except ImportError:
            value = None
        if value is None:  # not in this release: an alias from another only costs a finding on a name nobody uses
            continue
        named = value.__name__ if isinstance(value, types.ModuleType) else f"{value.__module__}.{value.__qualname__}"
        assert named == real, line
        checked += 1
    assert checked >= 15
    report = scan(write(tmp_path, {"config.yaml": "x:\n  _target_: torch.utils.data.dataloader.python_multiprocessing"
                                                 ".Process\n"}))  # fmt: skip
    assert "WS-CFG-001" in rule_ids(report)


def test_mlflow_code_paths_of_a_helper_are_medium(tmp_path: Path) -> None:
    """mlflow.sklearn.save_model(code_paths=["helpers.py"]) puts code/ on sys.path: a helper that shadows nothing
    is listed for review (medium), a file named like a module the loader imports is high."""
    mlmodel = (
        "flavors:\n  python_function:\n    code: code\n    loader_module: mlflow.sklearn\n  sklearn:\n    code: code\n"
    )
    report = scan(write(tmp_path / "m", {"MLmodel": mlmodel + ENV, "code/helpers.py": "def f():\n    return 1\n"}))
    assert not report.failed and "WS-REPO-012" in rule_ids(report)
    report = scan(write(tmp_path / "n", {"MLmodel": mlmodel + ENV, "code/json.py": "X = 1\n"}))
    assert report.failed and "WS-REPO-011" in rule_ids(report)
    # every name of the folder is read: json.py sorted after 10,000 others went unnamed (helper 208)
    filler = {f"code/a{index:05d}.txt": "" for index in range(10_001)}
    report = scan(write(tmp_path / "o", {"MLmodel": mlmodel + ENV, "code/json.py": "X = 1\n", **filler}))
    assert report.failed and "WS-REPO-011" in rule_ids(report)


@pytest.mark.parametrize("case", list(CASES))
def test_code_a_framework_loader_runs_is_reported(tmp_path: Path, case: str) -> None:
    files, rule = CASES[case]
    report = scan(write(tmp_path / case, files))
    assert rule in rule_ids(report), sorted(rule_ids(report))
    assert report.failed  # at or above high: the gate fails


def test_where_a_tag_sits_is_named(tmp_path: Path) -> None:
    report = scan(write(tmp_path, {"hyperparams.yaml": "model:\n  enc: !new:os.system\n    - id\n"}))
    (finding,) = [f for f in report.findings if f.rule_id == "WS-CFG-001"]
    assert "!new at model.enc" in finding.message


@pytest.mark.parametrize(
    "files",
    [
        {"MLmodel": MLMODEL_SKLEARN},
        {
            "model_index.json": '{"_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.30.0", '
            '"safety_checker": ["stable_diffusion", "StableDiffusionSafetyChecker"], '
            '"unet": ["diffusers", "UNet2DConditionModel"], "tokenizer": ["transformers", '
            '"CLIPTokenizer"], "feature_extractor": [null, null]}',
            "unet/config.json": "{}",
        },
        {
            "hyperparams.yaml": "n_mels: 80\ncompute_features: !new:speechbrain.lobes.features.Fbank\n"
            "    n_mels: !ref <n_mels>\nmodel: !new:torch.nn.Linear [80, 10]\n"
            "opt_class: !name:torch.optim.Adam\n    lr: 0.001\npair: !tuple (1, 2)\n"
        },
        {
            "config.yaml": "pipeline:\n  name: pyannote.audio.pipelines.SpeakerDiarization\n  params:\n"
            "    segmentation: pyannote/segmentation-3.0\n"
        },
        # A false-positive sweep: `!ref` text outside `<...>` is a string (a path with an extension, not a walk);
        # a conda recipe that PyYAML cannot read (Jinja) mentions github.com/python/ in a URL.
        {
            "hyperparams.yaml": "output_folder: results\nsave_folder: !ref <output_folder>/save\n"
            "cfg: !ref <save_folder>/hparams.yaml\ndb: !ref <output_folder>/cache.pickle\n"
        },
        {
            "meta.yaml": '{% set version = "3.12" %}\npackage:\n  name: python\n  version: {{ version }}\n'
            "about:\n  home: https://github.com/python/cpython\n"
        },
    ],
    ids=["mlflow-sklearn", "diffusers-stable-diffusion", "speechbrain-ecapa", "pyannote-diarization",
         "speechbrain-path-references", "conda-recipe-with-jinja-and-a-python-url"],
)
def test_the_forms_these_libraries_write_for_data_models_pass(tmp_path: Path, files: dict[str, str]) -> None:
    report = scan(write(tmp_path, files))
    assert max((f.severity for f in report.findings), default=Severity.INFO) < Severity.HIGH, [
        (f.rule_id, f.message) for f in report.findings
    ]


def test_aliases_of_gadgets_added_after_the_pack_was_made_are_listed(tmp_path: Path) -> None:
    """Lightning's launchers became gadgets after tools/gen_library_aliases.py last ran, so the strategies that
    import them (`lightning.pytorch.strategies.ddp._SubprocessScriptLauncher`) passed until it was run again."""
    config = ("trainer:\n  _target_: lightning.pytorch.Trainer\n  strategy:\n"
              "    _target_: lightning.pytorch.strategies.ddp._SubprocessScriptLauncher\n")
    assert "WS-CFG-001" in rule_ids(scan(write(tmp_path, {"config.yaml": config})))
