"""OpenMMLab checkpoints whose `meta['config']` runs as Python when training resumes (WS-PKL-061).

Helper 220 resumed mmengine's Runner from a checkpoint of plain dicts, strings and tensors, which torch's weights_only
loader accepts and wscan passed, and its config wrote a file. tests/data/openmmlab (tools/record_openmmlab_files.py)
keeps files mmengine resumed from, with whether their config ran.
"""

from __future__ import annotations

import struct
from collections import ChainMap, Counter, OrderedDict, defaultdict
from pathlib import Path

import pytest
import torch

from tests.helpers.scanning import scan
from wscan.model import Severity
from wscan.scanners.openmmlab_resume import judge

DATA = Path(__file__).parent / "data" / "openmmlab"
RULE = "WS-PKL-061"


@pytest.mark.parametrize(
    ("name", "detail"),
    [
        ("config-writes-file", "a call of open(...).write at line 1"),
        ("config-writes-file-long", "a call of open(...).write at line 232"),  # past 4 KiB: read back from the file
        ("config-base", "an assignment to _base_ at line 1"),
    ],
)
def test_configs_that_ran_on_resume_are_high(name: str, detail: str) -> None:
    found = [f for f in scan(DATA / "hostile" / f"{name}.pth").findings if f.severity >= Severity.HIGH]
    assert [f.rule_id for f in found] == [RULE]
    assert detail in found[0].message


@pytest.mark.parametrize("name", ["mmcv1-detector-config.pth", "mmengine-epoch_1.pth"])
def test_real_configs_are_not_reported(name: str) -> None:
    """A detector's config as Config.pretty_text writes it (range(0, 1) for gpu_ids, negative numbers, a dict literal
    with keys that are no names) is data; mmengine's own checkpoint keeps its config under `cfg`, which resume does not
    run."""
    assert RULE not in {f.rule_id for f in scan(DATA / name).findings}


def _checkpoint(path: Path, meta: object, protocol: int = 2) -> Path:
    torch.save({"meta": meta, "state_dict": {"w": torch.zeros(2)}}, path, pickle_protocol=protocol)
    return path


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_an_ordered_dict_meta_is_read_at_every_protocol(tmp_path: Path, protocol: int) -> None:
    meta = OrderedDict(epoch=1, iter=2, config="import os\nos.system('id')\n")
    found = scan(_checkpoint(tmp_path / "c.pth", meta, protocol)).findings
    assert [f.message for f in found if f.rule_id == RULE] == [
        "The checkpoint's meta config holds an import at line 1, which mmcv and mmengine run as Python when training "
        f"resumes from it (byte {found[0].location.offset})"
    ]


def test_a_meta_the_runners_stop_at_first_is_not_reported(tmp_path: Path) -> None:
    """Both runners read meta['epoch'] and meta['iter'] before the config: without them resume raises first."""
    assert RULE not in {f.rule_id for f in scan(_checkpoint(tmp_path / "c.pth", {"config": "import os"})).findings}


def test_a_config_that_is_no_text_is_not_reported(tmp_path: Path) -> None:
    meta = {"epoch": 1, "iter": 2, "config": {"model": "x"}}  # Config.fromstring fails on a dict
    assert RULE not in {f.rule_id for f in scan(_checkpoint(tmp_path / "c.pth", meta)).findings}


def test_a_config_hidden_past_the_items_kept_is_reported(tmp_path: Path) -> None:
    meta: dict[str, object] = {f"key{index}": index for index in range(5000)}
    meta.update(epoch=1, iter=2, config="import os")
    found = [f for f in scan(_checkpoint(tmp_path / "c.pth", meta)).findings if f.rule_id == RULE]
    assert len(found) == 1 and "whatever the meta's items wscan does not read hold" in found[0].message


@pytest.mark.parametrize(
    "meta",
    [
        Counter(config="import os"),  # answers meta['epoch'] with 0: resume goes on to the config (helper 221)
        defaultdict(int, config="import os"),
        ChainMap({"config": "import os"}),  # its maps are a BUILD state
    ],
    ids=["counter", "defaultdict", "chainmap"],
)
def test_mappings_that_answer_every_key_are_read(tmp_path: Path, meta: object) -> None:
    assert RULE in {f.rule_id for f in scan(_checkpoint(tmp_path / "c.pth", meta)).findings}


def _unicode(text: str) -> bytes:
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def test_a_second_config_past_the_items_kept_is_reported(tmp_path: Path) -> None:
    """The last `config` set wins: helper 221 set a harmless one, 5,000 other keys, then the payload, in one dict."""
    pairs = [_unicode("epoch") + b"K\x01", _unicode("iter") + b"K\x02", _unicode("config") + _unicode("x = 1")]
    pairs += [_unicode(f"key{index}") + b"K\x00" for index in range(5000)]
    pairs.append(_unicode("config") + _unicode("import os"))
    stream = b"\x80\x02}(" + _unicode("meta") + b"}(" + b"".join(pairs) + b"uu."
    path = tmp_path / "c.pkl"
    path.write_bytes(stream)
    found = [f.message for f in scan(path).findings if f.rule_id == RULE]
    assert len(found) == 1 and "whatever the meta's items wscan does not read hold" in found[0]


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("model = dict(type='ResNet', depth=50, out_indices=(0, 1, 2, 3))\ngpu_ids = range(0, 1)\n", None),
        ("x = -1\ny = [None, True, 1e-4, b'', ...]\nz = {3: 'a', 'b-c': dict({'d': 1})}\nw = x\n'doc'\n", None),
        ("import os", "an import at line 1"),
        ("x = dict(a=os.system)", "an attribute lookup at line 1"),
        ("x = open('f')", "a call of open at line 1"),
        ("x = dict(**y)", "arguments unpacked into a call at line 1"),
        ("x = {**y}", "a mapping unpacked into a dict at line 1"),
        ("dict = exec\nx = dict('1')", "an assignment to dict at line 1"),
        ("__builtins__ = {}", "an assignment to __builtins__ at line 1"),
        ("x = 10 ** 10 ** 10", "an operator at line 1"),
        ("x = not y", "an operator at line 1"),
        ("x = [i for i in y]", "Python other than data (ListComp) at line 1"),
        ("x = lambda: 1", "a lambda at line 1"),
        ("x = f'{y}'", "a formatted string at line 1"),
        ("x = y[0]", "Python other than data (Subscript) at line 1"),
        ("x, y = 1, 2", "an assignment to more than a name at line 1"),
        ("x = (" * 300 + ")" * 300, "text wscan cannot parse as Python (another Python version may run it)"),
        ("x = (", "text wscan cannot parse as Python (another Python version may run it)"),
        # helper 221: what mmengine does to the text before it runs it, and pretty_text's other values
        ("x = {{'$NOPE:open(1)'}}",
         "an environment placeholder, which mmengine replaces by code before it runs the text"),
        ("custom_imports = dict(imports=['os'])", "an assignment to custom_imports at line 1"),
        ("a = frozenset({255})\nb = bytearray(b'x')\nc = (1 + 2j)\nd = -inf\n__version = 1", None),
        ("x = (1 + y)", "an operator at line 1"),
    ],
)
def test_judge(text: str, verdict: str | None) -> None:
    assert judge(text) == verdict
