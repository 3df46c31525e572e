"""Real files whose size alone crossed one of wscan's fixed caps (scale sweep 205, 2026-12-06): each must pass
as its library writes it, with nothing reported, and the part past the old cap must still be read."""

from __future__ import annotations

import collections
import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.scanning import scan
from wscan.config import Config
from wscan.limits import Limits
from wscan.model import Severity
from wscan.scanners import loader_keys

torch = pytest.importorskip("torch")


def _nothing_found(path: Path) -> None:
    report = scan(path)
    assert [f.status for f in report.files] == ["scanned"], report.files
    assert not report.findings, [(f.rule_id, f.message) for f in report.findings]


@pytest.mark.parametrize("count", [4097, 12_000])
def test_a_legacy_checkpoint_of_more_than_4096_storages_is_read_to_its_end(tmp_path: Path, count: int) -> None:
    """torch's legacy reader steps over the storages in the order of a key list pickled after the tensors; a list
    is kept to 4,096 items, so a checkpoint of 4,097 storages was "malformed" (high) with its storages unread as
    trailing data (low). The keys of that one pickle are all kept now, as many as the pickle before it declared."""
    state = collections.OrderedDict((f"layers.{i}.weight", torch.full((2,), float(i))) for i in range(count))
    path = tmp_path / "legacy.pt"
    torch.save(state, path, _use_new_zipfile_serialization=False)
    _nothing_found(path)


def test_a_legacy_optimizer_state_of_many_parameters_passes(tmp_path: Path) -> None:
    """AdamW keeps three tensors per parameter (step, exp_avg, exp_avg_sq): 1,500 parameters are 4,500 storages."""
    params = [torch.nn.Parameter(torch.zeros(2)) for _ in range(1500)]
    optimizer = torch.optim.AdamW(params)
    for param in params:
        param.grad = torch.ones(2)
    optimizer.step()
    path = tmp_path / "optimizer.pt"
    torch.save(optimizer.state_dict(), path, _use_new_zipfile_serialization=False)
    _nothing_found(path)


def test_a_payload_after_4096_storage_keys_is_still_found(tmp_path: Path) -> None:
    """What follows the storages is read as a pickle of its own, as in a smaller file: a legacy file of 5,000
    storages with a pickle calling posix.system appended is critical. Before, the storages and the payload after
    them were one block of unread trailing data (low)."""
    state = {f"w{i}": torch.zeros(1) for i in range(5000)}
    path = tmp_path / "legacy.pt"
    torch.save(state, path, _use_new_zipfile_serialization=False)
    path.write_bytes(path.read_bytes() + b"cposix\nsystem\n(S'id'\ntR.")
    assert "WS-PKL-001" in {f.rule_id for f in scan(path).findings}


def test_a_legacy_checkpoint_of_more_storages_than_max_members_is_a_limit(tmp_path: Path) -> None:
    """The storage keys kept are bounded by max-members, as a zip checkpoint's are: past it a limit (high), and the
    storages are not read as pickles."""
    state = {f"w{i}": torch.zeros(1) for i in range(5000)}
    path = tmp_path / "legacy.pt"
    torch.save(state, path, _use_new_zipfile_serialization=False)
    report = scan(path, Config(jobs=0, limits=replace(Limits(), max_members=4500)))
    assert {(f.rule_id, f.evidence.get("limit", "")) for f in report.findings} == {("WS-FILE-002", "max-members")}
    assert not scan(path, Config(jobs=0, limits=replace(Limits(), max_members=5000))).findings


def test_a_tokenizer_config_of_150000_added_tokens_passes(tmp_path: Path) -> None:
    """transformers' save_pretrained lists every added token in tokenizer_config.json, seven JSON values each: a
    tokenizer given 150,000 image tokens (28 MB) passed the 1,000,000 values walked per file (high)."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")

    vocab = {"[UNK]": 0, "[PAD]": 1, **{f"tok{i}": i + 2 for i in range(1000)}}
    model = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=model, unk_token="[UNK]", pad_token="[PAD]")
    token = transformers.AddedToken
    tokenizer.add_tokens([token(f"<|visual token {i:06d}|>", special=True, normalized=False) for i in range(150_000)])
    tokenizer.save_pretrained(tmp_path)
    high = [(f.rule_id, f.message) for f in scan(tmp_path).findings if f.severity >= Severity.HIGH]
    assert not high, high


def test_past_the_json_values_walked_a_config_is_a_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk still ends, in a limit (high), never a pass: shown with the bound lowered to 10 values."""
    monkeypatch.setattr(loader_keys, "MAX_VALUES", 10)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({f"key{i}": i for i in range(11)}))
    found = {(f.rule_id, f.evidence.get("limit", "")) for f in scan(tmp_path).findings}
    assert ("WS-FILE-002", "max-json-values") in found, found


def _as_torch_before_2(model: torch.nn.Module, ordered: bool) -> torch.nn.Module:
    """With `ordered`, the submodule table as torch before 2.0 pickled it: an OrderedDict, which pickle makes empty
    and fills with SETITEMS (an object's items, kept apart from a dict's)."""
    if ordered:
        object.__setattr__(model, "_modules", collections.OrderedDict(model._modules))
    return model


@pytest.mark.parametrize("ordered", [False, True], ids=["dict", "ordereddict"])
def test_a_torch_model_of_more_than_4096_submodules_passes(tmp_path: Path, ordered: bool) -> None:
    """torch.save(model) of a Sequential of 4,097 layers: a dict keeps 4,096 items, and the rest read as something
    unknown in the submodule table torch calls (WS-PKL-029, high). Past the cap a dict now keeps one item of each
    kind (key spelt like a special method, value class), which is what the table's checks judge; so does an
    OrderedDict's SETITEMS (torch before 2.0), which stayed unknown one session longer."""
    model = _as_torch_before_2(torch.nn.Sequential(*[torch.nn.Linear(2, 2) for _ in range(4097)]), ordered)
    path = tmp_path / "model.pt"
    torch.save(model, path)
    _nothing_found(path)


@pytest.mark.parametrize("ordered", [False, True], ids=["dict", "ordereddict"])
@pytest.mark.parametrize("at", [10, 4199])
@pytest.mark.parametrize("intruder", ["function", "object", "special-name"])
def test_what_a_submodule_table_holds_past_4096_is_still_judged(
    tmp_path: Path, at: int, intruder: str, ordered: bool
) -> None:
    """A function, an object of another class or a key spelt like a special method among 4,200 submodules is
    flagged wherever it stands, before the cap or past it."""
    model = torch.nn.Sequential()
    for index in range(4200):
        name = "__deepcopy__" if intruder == "special-name" and index == at else str(index)
        model._modules[name] = torch.nn.Identity()
    if intruder != "special-name":
        model._modules[str(at)] = print if intruder == "function" else collections.Counter()
    expected = "WS-PKL-026" if intruder == "special-name" else "WS-PKL-029"
    path = tmp_path / "model.pt"
    torch.save(_as_torch_before_2(model, ordered), path)
    assert expected in {f.rule_id for f in scan(path).findings if f.severity >= Severity.HIGH}


@pytest.mark.parametrize("ordered", [False, True], ids=["dict", "ordereddict"])
def test_past_4096_submodules_of_more_than_64_kinds_stay_unknown(tmp_path: Path, ordered: bool) -> None:
    """Too many kinds past the cap to keep one of each (70 keys spelt like special methods, each a kind of its own):
    the table reads as holding something unknown (high), as every table past the cap did before."""
    model = torch.nn.Sequential(*[torch.nn.Identity() for _ in range(4100)])
    for index in range(70):
        model._modules[f"__extra{index}__"] = torch.nn.Identity()
    path = tmp_path / "model.pt"
    torch.save(_as_torch_before_2(model, ordered), path)
    found = [f for f in scan(path).findings if f.rule_id == "WS-PKL-029"]
    assert found and "<unknown>" in found[0].message, found


def test_past_the_objects_whose_items_are_kept_a_table_holds_something_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SETITEMS' items are kept for the first MAX_OBJECT_ITEMS objects (a million); an object past them read as
    holding nothing, so a submodule table holding `print` after a million one-item OrderedDicts passed. Shown with
    the bound lowered to 10: the table now holds something unread (high)."""
    from wscan.scanners import pickle_states

    monkeypatch.setattr(pickle_states, "MAX_OBJECT_ITEMS", 10)
    model = torch.nn.Sequential(torch.nn.Identity(), torch.nn.Identity())
    model._modules["1"] = print
    padding = [collections.OrderedDict(a=1) for _ in range(11)]
    path = tmp_path / "model.pt"
    torch.save({"padding": padding, "model": _as_torch_before_2(model, True)}, path)
    found = [f for f in scan(path).findings if f.rule_id == "WS-PKL-029"]
    assert found and "<unknown>" in found[0].message, found
