"""Regenerate rules/allow-ultralytics.yaml: the names Ultralytics YOLO checkpoints import.

Ultralytics is not a test dependency (tests/data/ultralytics keeps real files it wrote), so run this where it is
installed beside the test extra with a torchvision that imports (`pip install torch==2.14.1 torchvision==0.29.1
ultralytics`, see .library/env), then `python tools/gen_ultralytics_allowlist.py [--keep DIR]`. A YOLO `.pt` is a
torch.save of a dict holding the whole model (`model`, `ema`), which ultralytics loads with weights_only off. Empirical,
as the other recorded lists: each architecture of the catalogue below is built from its YAML and saved the way the
docs show (`YOLO(...).save()`, also after `fuse()`, which replaces layers' forward with bound methods), and a detector
and a classifier train one epoch on a few generated images, which writes the trainer's `last.pt` (optimizer state,
EMA, arguments) and the stripped `best.pt` Ultralytics publishes. The names those pickles import are recorded by a
find_class that refuses nothing. Beside them, the scope of Ultralytics' own restricted loader (`_SafeLoad` in
ultralytics/nn/tasks.py): every torch module class of `ultralytics.nn.modules` and `ultralytics.nn.tasks`, and the
classes of its losses and assigners; all are screened as scikit-learn's ecosystem is.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import os
import pkgutil
import shutil
import tempfile
import types
from pathlib import Path

from gen_allowlists import (
    catalogue_arguments,
    reachable,
    screened_catalogue,
    screened_names,
)
from gen_fastai_allowlist import loaded, shadowed_methods, table_members
from gen_stats_allowlist import _callable_attributes, screened_lists
from pack_file import write_pack

LIBRARIES = ("ultralytics.", "torchvision.transforms.")
# The architectures built from YAML and saved with YOLO.save() (a half-precision copy of the model in a dict).
ARCHITECTURES = ("yolov8n.yaml", "yolov8n-seg.yaml", "yolov8n-cls.yaml", "yolov8n-pose.yaml", "yolov8n-obb.yaml",
                 "yolo11n.yaml", "yolo11n-seg.yaml", "yolo26n.yaml", "yolov10n.yaml",
                 "yolov8n-worldv2.yaml", "yolov9t.yaml")
# Where Ultralytics' restricted loader looks for model and loss classes (torch modules, and every class of the last
# three modules).
MODULE_PACKAGES = ("ultralytics.nn.modules", "ultralytics.nn.tasks")
CLASS_MODULES = ("ultralytics.utils.loss", "ultralytics.utils.tal", "ultralytics.nn.distill_model")
# Load hooks of Ultralytics' own classes, read in the installed source (ultralytics 8.4).
ULTRALYTICS_OWNER_HOOKS = {
    # the namespace a checkpoint keeps its arguments in (before strip_optimizer turns them into a dict): a missing
    # name raises AttributeError with a help text; never another object's attribute
    "__getattr__ of ultralytics.utils.IterableSimpleNamespace": "raises AttributeError",
    # ... a types.SimpleNamespace, which pickles as a call of its class with no arguments (an empty namespace), then
    # its dict as the state
    "__new__ of types.SimpleNamespace": "an empty namespace",
    "__setattr__ of types.SimpleNamespace": "sets the name in its dict",
    "__getattribute__ of types.SimpleNamespace": "object's lookup",
    "__hash__ of types.SimpleNamespace": "None: unhashable",
    "__eq__ of types.SimpleNamespace": "compares dicts",
    # a transposed depthwise convolution: torch's own, which sets a default padding mode on old states
    "__setstate__ of torch.nn.modules.conv._ConvNd": "Module's, then padding_mode 'zeros' if missing",
}
# Left out (WS-PKL-003 names them): DistillationModel, whose __setstate__ registers hooks on the models its state
# holds (stripped checkpoints keep only the student), and YOLO12's AAttn, whose __setstate__ multiplies two values of
# the state when a checkpoint lacks all_head_dim (a string times a huge count would exhaust memory while loading).
# A classifier keeps its preprocessing (torchvision's transforms), whose resize names an Enum member.
ULTRALYTICS_CLASS_HOOKS = {"torchvision.transforms.functional.InterpolationMode": "Enum"}
# Left out of --keep: YOLO-World at its published width (its text embeddings fix it), 7.8 MB.
UNKEPT = ("yolov8n-worldv2",)
# Classes real files have pickle call: a SimpleNamespace pickles as its class called with no arguments (keyword
# arguments would only set attributes, as its state does).
CALLED_CLASSES = ["ultralytics.utils.IterableSimpleNamespace"]
# The bound methods fused models keep as their layers' forward (`m.forward = m.forward_fuse`): looked up on the layer
# itself by pickle, never called while the file loads.
INSTANCE_METHODS_SUFFIXES = ("forward_fuse", "forward")


def bound_methods(root: object, found: set[str]) -> None:
    """`Class.name` for each bound method the saved objects keep, by the class of the object it is bound to: pickle
    writes one as `getattr(obj, name)`, which wscan names so (a DWConv's forward_fuse is Conv's function)."""
    for obj in reachable(root, 40):
        if isinstance(obj, types.MethodType):
            klass = type(obj.__self__)
            found.add(f"{klass.__module__}.{klass.__qualname__}.{obj.__func__.__name__}")


def layer_names(allowed: list[str]) -> list[str]:
    """The layer names an architecture may give (WS-PKL-054): what parse_model resolves among ultralytics.nn.tasks'
    names to an allowed torch module class, and `nn.<Layer>` for torch's own layers."""
    import torch.nn
    import ultralytics.nn.tasks as tasks

    own = [name for name, obj in vars(tasks).items() if isinstance(obj, type) and issubclass(obj, torch.nn.Module)
           and f"{obj.__module__}.{obj.__qualname__}" in allowed]  # fmt: skip
    torch_layers = [f"nn.{name}" for name, obj in vars(torch.nn).items()
                    if isinstance(obj, type) and issubclass(obj, torch.nn.Module)]  # fmt: skip
    return sorted(own + torch_layers)


def module_classes() -> list[str]:
    """Every torch module class defined under MODULE_PACKAGES and every class of CLASS_MODULES, by pickle's names."""
    import torch.nn

    modules: list[types.ModuleType] = []
    for package in MODULE_PACKAGES:
        root = importlib.import_module(package)
        modules.append(root)
        if hasattr(root, "__path__"):
            modules += [importlib.import_module(i.name) for i in pkgutil.walk_packages(root.__path__, package + ".")]
    names = {f"{obj.__module__}.{obj.__qualname__}" for module in modules
             for _, obj in inspect.getmembers(module, inspect.isclass)
             if obj.__module__.startswith(MODULE_PACKAGES) and issubclass(obj, torch.nn.Module)}  # fmt: skip
    for module_name in CLASS_MODULES:
        module = importlib.import_module(module_name)
        names |= {f"{obj.__module__}.{obj.__qualname__}" for _, obj in inspect.getmembers(module, inspect.isclass)
                  if obj.__module__ == module_name}  # fmt: skip
    return sorted(names)


def _dataset(folder: Path) -> tuple[Path, Path]:
    """A detection dataset (YOLO format: images with one box each) and a classification one (a folder per class),
    of a few generated pictures."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    detect = folder / "detect"
    for split in ("train", "val"):
        (detect / "images" / split).mkdir(parents=True)
        (detect / "labels" / split).mkdir(parents=True)
        for i in range(4):
            picture = rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)
            picture[16:48, 16:48] = (255, 0, 0)
            Image.fromarray(picture).save(detect / "images" / split / f"{i}.jpg")
            (detect / "labels" / split / f"{i}.txt").write_text("0 0.5 0.5 0.5 0.5\n")
    data = detect / "data.yaml"
    data.write_text(f"path: {detect}\ntrain: images/train\nval: images/val\nnames:\n  0: square\n")
    classify = folder / "classify"
    for split in ("train", "val"):
        for label in ("red", "blue"):
            (classify / split / label).mkdir(parents=True)
            for i in range(4):
                picture = rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)
                picture[8:24, 8:24] = (255, 0, 0) if label == "red" else (0, 0, 255)
                Image.fromarray(picture).save(classify / split / label / f"{i}.jpg")
    return data, classify


def tiny(config: str, folder: Path) -> str:
    """The architecture's YAML at its narrowest (8 to 64 channels, two classes), written under its own name in
    `folder`: the same layers and classes as the published sizes, in files small enough for tests/data."""
    from ultralytics.nn.tasks import yaml_model_load
    from ultralytics.utils import YAML

    spec = yaml_model_load(config)
    if "world" not in config:  # its text embeddings' width and count are fixed: the published n
        scale = spec["scale"] or "n"  # YOLOv9's YAMLs give channels, no scales
        depth = spec.get("scales", {}).get(scale, [1.0])[0]
        spec["scales"] = {scale: [depth, 0.0625, 64]}
        spec["nc"] = 2
    for key in ("scale", "yaml_file"):
        spec.pop(key)
    path = folder / config
    YAML.save(path, spec)
    return str(path)


def save_models(folder: Path) -> None:
    import torch
    from ultralytics import YOLO

    torch.manual_seed(0)
    specs = folder / "specs"
    specs.mkdir()
    for config in ARCHITECTURES:
        stem = config.removesuffix(".yaml")
        with contextlib.redirect_stdout(io.StringIO()):
            model = YOLO(tiny(config, specs))
            with torch.no_grad():  # zeros, so that git stores the kept files in a few kilobytes
                for tensor in model.model.state_dict().values():
                    tensor.zero_()
            model.save(folder / f"{stem}.pt")
            if config in ("yolov8n.yaml", "yolo11n-seg.yaml"):
                model.fuse()
                model.save(folder / f"{stem}_fused.pt")
    data, classify = _dataset(folder / "data")
    runs = folder / "runs"
    common = {"epochs": 1, "batch": 4, "workers": 0, "device": "cpu", "plots": False, "amp": False, "project": runs,
              "exist_ok": True, "verbose": False, "seed": 0}
    trained = (("detect", "yolov8n.yaml", data, 64), ("classify", "yolov8n-cls.yaml", classify, 32))
    for task, config, source, size in trained:
        model = YOLO(tiny(config, specs))
        # last.pt as the trainer writes it each epoch (optimizer state, EMA, arguments), before training strips it
        model.add_callback("on_model_save", lambda trainer, task=task: shutil.copy(
            trainer.last, folder / f"yolov8n_{task}_epoch.pt"))
        model.train(data=str(source), imgsz=size, name=task, **common)
        shutil.copy(runs / task / "weights" / "best.pt", folder / f"yolov8n_{task}_best.pt")
    shutil.rmtree(runs)
    shutil.rmtree(folder / "data")
    shutil.rmtree(specs)


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], ULTRALYTICS_CLASS_HOOKS, ULTRALYTICS_OWNER_HOOKS)
    os.environ.setdefault("YOLO_OFFLINE", "1")
    names: set[str] = set()
    members: set[str] = set()
    bound: set[str] = set()
    shadowing: set[str] = set()
    shadows: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)  # training writes its runs and fonts' caches relative to the working folder
        save_models(Path(folder))
        for path in sorted(Path(folder).glob("*.pt")):
            obj = loaded(path, names)
            _callable_attributes(obj, members, LIBRARIES)
            bound_methods(obj, bound)
            shadowed_methods(obj, shadowing, shadows, LIBRARIES)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for path in Path(folder).glob("*.pt"):
                if path.stem not in UNKEPT:
                    shutil.copy(path, args.keep)
    unknown = sorted(n for n in bound if not n.endswith(INSTANCE_METHODS_SUFFIXES))
    if unknown:
        raise SystemExit(f"bound methods to review: {', '.join(unknown)}")
    recorded, state_only, functions = screened_catalogue(names, LIBRARIES)
    scope, scope_state_only = screened_names(sorted(set(module_classes()) - set(recorded)))
    allowed = sorted(set(recorded) | set(scope))
    state_only = sorted((set(state_only) | set(scope_state_only)) - set(CALLED_CLASSES))
    import ultralytics

    write_pack(
        "allow-ultralytics",
        f"Generated by tools/gen_ultralytics_allowlist.py (ultralytics {ultralytics.__version__}): what YOLO "
        "checkpoints import (models saved with YOLO.save(), fused or not; a trainer's last.pt and the stripped "
        "best.pt), recorded from real saves, and the torch module, loss and assigner classes Ultralytics' own "
        "restricted loader accepts: classes restored from state only, each screened for the hooks loading runs; "
        "the bound forward methods fused layers keep; their method names.\n",
        {
            **screened_lists(allowed, state_only, functions, members | shadowing),
            "instance-methods": sorted(bound),
            # a fused layer's forward, replaced by its own forward_fuse bound (WS-PKL-027: only a bound method there)
            "called-attributes": sorted({member.rpartition(".")[2] for member in shadowing}),
            "called-attribute-objects": sorted(shadows),
            "table-members": table_members(allowed),
            "ultralytics-layers": layer_names(allowed),
        },
    )


if __name__ == "__main__":
    main()
