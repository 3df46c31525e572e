"""Keep OpenMMLab checkpoints as test data: real ones mmengine wrote, one as mmcv 1.x writes them, hostile configs.

Why: mmcv 1.x's runners and mmengine's `Runner.resume` run `checkpoint['meta']['config']` as Python
(`openmmlab_resume`). Each file here is resumed from by mmengine's Runner in a fresh process, and whether its config
ran (a marker file written) goes to the folder's README. mmcv 1.x does not install beside torch 2.13, so its layout is
written by hand as its `save_checkpoint` writes it (meta: mmcv_version, time, CLASSES, config, epoch, iter), with a
config as `Config.pretty_text` writes it (mmengine's, which mmcv 1.x's became).

Run where mmengine is installed (`pip install torch==2.13.0 mmengine`, see .library/env), from the project root:
    python tools/record_openmmlab_files.py tests/data/openmmlab
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MARKER = "wscan-openmmlab-marker"
MODEL = '''
import torch, torch.nn as nn
from torch.utils.data import Dataset
from mmengine.model import BaseModel
from mmengine.registry import DATASETS, MODELS


@MODELS.register_module()
class TinyNet(BaseModel):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, inputs, labels=None, mode="tensor"):
        x = self.fc(torch.stack(inputs) if isinstance(inputs, list) else inputs)
        if mode == "loss":
            labels = torch.stack(labels) if isinstance(labels, list) else labels
            return dict(loss=nn.functional.cross_entropy(x, labels))
        return x


@DATASETS.register_module()
class TinyData(Dataset):
    def __init__(self):
        generator = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(8, 4, generator=generator), torch.randint(0, 2, (8,), generator=generator)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return dict(inputs=self.x[index], labels=self.y[index])


def config(work_dir, **changes):
    return dict(model=dict(type="TinyNet"), work_dir=work_dir, default_scope="mmengine", log_level="WARNING",
                train_dataloader=dict(dataset=dict(type="TinyData"), sampler=dict(type="DefaultSampler", shuffle=True),
                                      collate_fn=dict(type="default_collate"), batch_size=4, num_workers=0),
                optim_wrapper=dict(type="OptimWrapper", optimizer=dict(type="SGD", lr=0.01, momentum=0.9)),
                train_cfg=dict(by_epoch=True, max_epochs=changes.pop("max_epochs", 1)),
                default_hooks=dict(checkpoint=dict(type="CheckpointHook", interval=1)), **changes)
'''
TRAIN = MODEL + '''
import sys, mmengine
from mmengine.runner import Runner
Runner.from_cfg(mmengine.Config(config(sys.argv[1]))).train()
'''
RESUME = MODEL + '''
import os, sys, mmengine
os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"  # mmengine's own epoch_1.pth holds a HistoryBuffer torch refuses
from mmengine.runner import Runner
Runner.from_cfg(mmengine.Config(config(sys.argv[2], load_from=sys.argv[1], resume=True, max_epochs=2))).train()
'''
# What a detector's config looks like (mmdetection's Faster R-CNN, shortened), as mmcv 1.x's tools/train.py leaves it.
DETECTOR = dict(
    model=dict(type="FasterRCNN", backbone=dict(type="ResNet", depth=50, num_stages=4, out_indices=(0, 1, 2, 3),
                                                norm_cfg=dict(type="BN", requires_grad=True), norm_eval=True,
                                                init_cfg=dict(type="Pretrained", checkpoint="torchvision://resnet50")),
               rpn_head=dict(type="RPNHead", anchor_generator=dict(type="AnchorGenerator", scales=[8],
                                                                   ratios=[0.5, 1.0, 2.0], strides=[4, 8, 16, 32, 64])),
               test_cfg=dict(rcnn=dict(score_thr=0.05, nms=dict(type="nms", iou_threshold=0.5), max_per_img=100))),
    dataset_type="CocoDataset", data_root="data/coco/",
    img_norm_cfg=dict(mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], to_rgb=True),
    train_pipeline=[dict(type="LoadImageFromFile"), dict(type="Resize", img_scale=(1333, 800), keep_ratio=True),
                    dict(type="RandomFlip", flip_ratio=0.5), dict(type="Collect", keys=["img", "gt_bboxes"])],
    optimizer=dict(type="SGD", lr=0.02, momentum=0.9, weight_decay=0.0001), optimizer_config=dict(grad_clip=None),
    lr_config=dict(policy="step", warmup="linear", warmup_iters=500, warmup_ratio=0.001, step=[8, 11]),
    runner=dict(type="EpochBasedRunner", max_epochs=12), checkpoint_config=dict(interval=1),
    log_config=dict(interval=50, hooks=[dict(type="TextLoggerHook")]), dist_params=dict(backend="nccl"),
    log_level="INFO", load_from=None, resume_from=None, workflow=[("train", 1)], work_dir="./work_dirs/faster_rcnn",
    gpu_ids=range(0, 1), seed=0, evaluation=dict(interval=1, metric="bbox"), neg=-1, weird={"a-b": 1, 3: "x"},
)  # fmt: skip
# Its datasets, as mmdetection 2's configs spell them out: the config passes 4 KiB, past which a pickle's text is
# read back from the file rather than kept.
DETECTOR["data"] = dict(samples_per_gpu=2, workers_per_gpu=2, **{
    split: dict(type="CocoDataset", ann_file=f"data/coco/annotations/instances_{split}2017.json",
                img_prefix=f"data/coco/{split}2017/", pipeline=DETECTOR["train_pipeline"])
    for split in ("train", "val", "test")})  # fmt: skip
DETECTOR["classes"] = tuple(f"class_{index}" for index in range(80))  # COCO's 80, renamed


def payload(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('ran')\n"


def main(folder: Path) -> None:
    from importlib.metadata import version

    import torch
    from mmengine.config import Config

    folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    subprocess.run([sys.executable, "-c", TRAIN, str(work / "train")], check=True, capture_output=True)
    shutil.copy(work / "train" / "epoch_1.pth", folder / "mmengine-epoch_1.pth")
    real = torch.load(folder / "mmengine-epoch_1.pth", weights_only=False)
    pretty = Config(DETECTOR).pretty_text
    marker = work / MARKER

    def mmcv1(config: str) -> dict[str, object]:
        meta = dict(mmcv_version="1.7.2", time="Mon Dec  7 00:00:00 2026", CLASSES=("person", "car"), config=config,
                    epoch=1, iter=2)  # fmt: skip
        return dict(meta=meta, state_dict=real["state_dict"], optimizer=real["optimizer"])

    files = {
        "mmcv1-detector-config.pth": mmcv1(pretty),
        "hostile/config-writes-file.pth": mmcv1(payload(marker) + "gpu_ids = [0]\n"),
        "hostile/config-writes-file-long.pth": mmcv1(pretty + payload(marker)),  # past 4 KiB: read back
        "hostile/config-base.pth": mmcv1(f"_base_ = [{str(work / 'base.py')!r}]\n"),
    }
    (work / "base.py").write_text(payload(marker))
    (folder / "hostile").mkdir(exist_ok=True)
    for name, checkpoint in files.items():
        torch.save(checkpoint, folder / name)
    rows = []
    for name in ["mmengine-epoch_1.pth", *files]:
        marker.unlink(missing_ok=True)
        done = subprocess.run([sys.executable, "-c", RESUME, str(folder / name), str(work / "resume")],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        last = (done.stderr.strip().splitlines() or [""])[-1][:90] if done.returncode else ""
        ran = "yes" if marker.exists() else "no"
        rows.append(f"| `{name}` | {'resumed' if not done.returncode else f'exit {done.returncode}: {last}'} | {ran} |")
    shutil.rmtree(work)
    (folder / "README.md").write_text(
        "# OpenMMLab checkpoints\n\nWritten by `tools/record_openmmlab_files.py` (mmengine "
        f"{version('mmengine')}, torch {version('torch')}). `mmengine-epoch_1.pth` is what mmengine's Runner saves "
        "after one epoch of a tiny model; the others hold its weights with a `meta` as mmcv 1.x's save_checkpoint "
        "writes it (mmcv 1.x does not install here), whose `config` is a detector's `Config.pretty_text` or, in "
        "`hostile/`, Python that writes a marker file (after the detector's config, past 4 KiB, in the long one; in a "
        "file `_base_` names, in the last). Each was resumed from by mmengine's Runner (`load_from=..., resume=True`) "
        "in a fresh process (mmcv 1.x keeps no message hub, which mmengine then asks for, after the config ran):\n\n"
        "| file | resume | the config's code ran |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    )


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main(Path(sys.argv[1]))
