"""Regenerate rules/allow-mmengine.yaml: the names mmengine's training checkpoints import.

Why: every checkpoint mmengine's Runner saves (OpenMMLab's detectors, segmenters and the rest since mmengine) keeps
its message hub, whose logged scalars are HistoryBuffer objects; each pickles its class's table of statistics as
getattr(HistoryBuffer, "min") and so on. wscan reported all of them (an unknown class, unknown lookups).

mmengine is not a test dependency (tests/data/openmmlab keeps real files it wrote), so run this where it is installed
beside the test extra (`pip install torch==2.13.0 mmengine`, see .library/env), then
`python tools/gen_mmengine_allowlist.py [--keep DIR]`. Empirical, as the other recorded lists: a tiny model trains
under the Runner in the layouts below (epoch- and iteration-based loops, validation with a best checkpoint, learning
rate schedules, an EMA hook, AdamW with gradient clipping), and the names each checkpoint imports are recorded by a
find_class that refuses nothing, with the attributes its getattr calls look up; classes are screened as
scikit-learn's ecosystem is, each hook the screen raised read in mmengine's source and reviewed below.
"""

from __future__ import annotations

import builtins
import json
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from gen_allowlists import catalogue_arguments, screened_catalogue
from gen_stats_allowlist import _callable_attributes, screened_lists
from pack_file import write_pack
from record_openmmlab_files import MODEL

LIBRARIES = ("mmengine.",)
# Load hooks of mmengine's own, read in the installed source (mmengine 0.10.7).
MMENGINE_OWNER_HOOKS = {
    # pops `statistics_methods` from the state and merges it into the class's own table with dict.update (so every
    # buffer of the process answers `statistics(name)` with what it holds: WS-PKL-063 judges each entry), then sets
    # the rest as attributes (WS-PKL-026 judges names of methods, WS-PKL-062 array interfaces)
    "__setstate__ of mmengine.logging.history_buffer.HistoryBuffer": "statistics table merged, then __dict__",
    "__getstate__ of mmengine.logging.history_buffer.HistoryBuffer": "adds the table to __dict__, only when saving",
}
# What the Runner trains and saves, beside the defaults of `config` in record_openmmlab_files.MODEL.
LAYOUTS: dict[str, dict[str, Any]] = {
    "epoch-best-ema": dict(
        train_cfg=dict(by_epoch=True, max_epochs=2, val_interval=1),
        val_dataloader=dict(dataset=dict(type="TinyData"), sampler=dict(type="DefaultSampler", shuffle=False),
                            collate_fn=dict(type="default_collate"), batch_size=4, num_workers=0),
        val_cfg=dict(), val_evaluator=dict(type="TinyAccuracy"),
        default_hooks=dict(checkpoint=dict(type="CheckpointHook", interval=1, save_best="accuracy", rule="greater"),
                           logger=dict(type="LoggerHook", interval=1)),
        param_scheduler=[dict(type="MultiStepLR", by_epoch=True, milestones=[1], gamma=0.1)],
        custom_hooks=[dict(type="EMAHook")],
    ),
    "iter-adamw-clip": dict(
        train_cfg=dict(type="IterBasedTrainLoop", max_iters=4, val_interval=2),
        val_dataloader=dict(dataset=dict(type="TinyData"), sampler=dict(type="DefaultSampler", shuffle=False),
                            collate_fn=dict(type="default_collate"), batch_size=4, num_workers=0),
        val_cfg=dict(), val_evaluator=dict(type="TinyAccuracy"),
        optim_wrapper=dict(type="OptimWrapper", optimizer=dict(type="AdamW", lr=0.001, weight_decay=0.05),
                           clip_grad=dict(max_norm=1.0)),
        default_hooks=dict(checkpoint=dict(type="CheckpointHook", interval=2, by_epoch=False)),
        param_scheduler=[dict(type="LinearLR", start_factor=0.1, by_epoch=False, begin=0, end=2),
                         dict(type="CosineAnnealingLR", by_epoch=False, begin=2, end=4, T_max=2)],
        log_processor=dict(by_epoch=False),
    ),
}
TRAIN = MODEL + '''
import json, sys, mmengine
from mmengine.evaluator import BaseMetric
from mmengine.registry import METRICS
from mmengine.runner import Runner


@METRICS.register_module()
class TinyAccuracy(BaseMetric):
    def process(self, data_batch, data_samples):
        self.results.append(len(data_batch["inputs"]))

    def compute_metrics(self, results):
        return dict(accuracy=0.5)


layout = config(sys.argv[1])
layout.update(json.loads(sys.argv[2]))
Runner.from_cfg(mmengine.Config(layout)).train()
'''


def save_models(folder: Path) -> None:
    """Train under every layout; keep each checkpoint the Runner saved as `<layout>-<name>.pth`."""
    for name, changes in LAYOUTS.items():
        work = folder / f"work-{name}"
        subprocess.run([sys.executable, "-c", TRAIN, str(work), json.dumps(changes)], check=True, capture_output=True)
        for saved in sorted(work.glob("*.pth")):
            shutil.move(saved, folder / f"{name}-{saved.name}")
        shutil.rmtree(work)


class _Recording:
    """A pickle module for torch.load whose unpickler notes every global it imports and every attribute its getattr
    looks up on a class (`Class.attr`). Only for this tool's own checkpoints, made a moment before: loading runs
    them."""

    def __init__(self, names: set[str], lookups: set[str]) -> None:
        def recording_getattr(owner: object, attr: str) -> object:
            lookups.add(f"{getattr(owner, '__module__', '?')}.{getattr(owner, '__qualname__', '?')}.{attr}")
            return getattr(owner, attr)

        class Unpickler(pickle.Unpickler):
            def find_class(self, module: str, name: str) -> Any:
                names.add(f"{module}.{name}")
                found = super().find_class(module, name)
                return recording_getattr if found is builtins.getattr else found

        self.__name__ = "wscan_recording"  # torch.load asks whether it is dill
        self.Unpickler = Unpickler
        self.load = pickle.load


def statistics_entries() -> list[str]:
    """What the checkpoints just loaded merged into HistoryBuffer's table of statistics, as WS-PKL-063 reads a state's
    `statistics_methods`: `statistics_methods:'name'=name:<function>`, each function looked up on the class."""
    from mmengine.logging.history_buffer import HistoryBuffer

    table = HistoryBuffer._statistics_methods
    return sorted(f"statistics_methods:{key!r}=name:{f.__module__}.{f.__qualname__}" for key, f in table.items())


def main() -> None:
    import mmengine
    import torch

    args = catalogue_arguments(__doc__.splitlines()[0], {}, MMENGINE_OWNER_HOOKS)
    names: set[str] = set()
    lookups: set[str] = set()
    members: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        save_models(Path(folder))
        saved = sorted(Path(folder).glob("*.pth"))
        for path in saved:
            obj = torch.load(path, weights_only=False, pickle_module=_Recording(names, lookups))  # type: ignore[arg-type]
            _callable_attributes(obj, members, LIBRARIES)
        print(f"{len(saved)} checkpoints: {', '.join(p.name for p in saved)}", file=sys.stderr)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for path in saved:
                shutil.copy(path, args.keep)
    allowed, state_only, functions = screened_catalogue(names, LIBRARIES)
    own_lookups = sorted(n for n in lookups if n.startswith(LIBRARIES))
    write_pack(
        "allow-mmengine",
        f"Generated by tools/gen_mmengine_allowlist.py (mmengine {mmengine.__version__}): what the checkpoints "
        "mmengine's Runner saves import (epoch- and iteration-based training, validation with a best checkpoint, "
        "learning rate schedules, an EMA hook), recorded from real saves: the message hub's HistoryBuffer, restored "
        "from state only and screened for the hooks loading runs, and the statistics methods its state keeps, "
        "looked up on the class with getattr as values only, each under its own name in the table the state fills "
        "(class-table-entries); their method names.\n",
        {
            **screened_lists(allowed, state_only, [*functions, *own_lookups], members),
            "class-table-entries": statistics_entries(),
        },
    )


if __name__ == "__main__":
    main()
