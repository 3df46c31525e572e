"""AutoGluon's TabularPredictor folders (helper 281): real folders pass (rules/allow-autogluon.yaml), and the state
that makes predict() unpickle a model from outside the folder, or call another object as a scorer, stays high."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pickle_bytes import binunicode as _s
from tests.helpers.pickle_bytes import global_op as _g
from tests.helpers.scanning import scan, scan_bytes
from wscan.model import Severity

AUTOGLUON = Path(__file__).parent / "data" / "autogluon"
HOSTILE = AUTOGLUON / "hostile"
FOLDERS = sorted(p for p in AUTOGLUON.iterdir() if p.is_dir() and p.name != "hostile")


def _high(path: Path) -> list[str]:
    return [f"{f.rule_id}: {f.message}" for f in scan(path).findings if f.severity >= Severity.HIGH]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda path: path.name)
def test_real_autogluon_predictor_folders_pass(folder: Path) -> None:
    """An earlier sweep found about 25 AutoGluon classes high in every folder a TabularPredictor saves, and
    WS-PKL-027 on the weighted ensemble's scorer. The folders are AutoGluon's own (tests/data/autogluon/README.md)."""
    assert len(list(folder.rglob("*.pkl"))) >= 8
    assert not _high(folder)


def test_autogluon_is_allowed_by_the_names_its_files_import_only() -> None:
    """AutoGluon's classes its files import and networkx's DiGraph (the trainer's model graph) with the view it
    caches, by their whole names; a model's params dicts are the only classes called (their __reduce__); the scorers
    are the objects an attribute AutoGluon calls may hold."""
    from wscan.rules import builtin_rules_dir
    from wscan.rules.loader import load_pack

    lists = load_pack(builtin_rules_dir() / "allow-autogluon.yaml")["lists"]
    allowed = lists["allowed-callables"]
    graph = {"networkx.classes.digraph.DiGraph", "networkx.classes.reportviews.InEdgeView"}
    assert "autogluon.tabular.predictor.predictor.TabularPredictor" in allowed
    assert all(name.startswith("autogluon.") or name in graph for name in allowed)
    called = sorted(set(allowed) - set(lists["state-only-classes"]))
    assert called == ["autogluon.core.models.abstract._auxiliary_params.ParamsAuxDict",
                      "autogluon.core.models.abstract._mutation_deprecated_dict.ParamsDict"]  # fmt: skip
    assert lists["called-attribute-objects"] == [
        "autogluon.core.metrics._ClassScorer", "autogluon.core.metrics._PredictScorer",
        "autogluon.core.metrics._ProbaScorer"]  # fmt: skip
    assert lists["referenced-callables"] == ["autogluon.core.metrics.customized_log_loss",
                                             "autogluon.core.metrics.rmse_func"]  # fmt: skip


@pytest.mark.parametrize("name", ["trainer_model_path.pkl", "trainer_model_path_dotdot.pkl",
                                  "bagged_child_path.pkl"])  # fmt: skip
def test_a_model_folder_outside_the_predictor_is_high(name: str) -> None:
    """TabularPredictor.load passes and predict() unpickles the model.pkl of the folder a trainer's model graph or a
    bagged model's child list names, joined to the predictor's folder (helper 281 had a marker written from /tmp)."""
    assert any(line.startswith("WS-PKL-070") for line in _high(HOSTILE / name)), _high(HOSTILE / name)


def test_the_ensemble_metric_is_a_scorer_and_nothing_else_callable() -> None:
    """The weighted ensemble's selection keeps AutoGluon's scorer as its `metric` (WS-PKL-027 was high on it); the
    scorer calls its `_score_func`, a named function. Another callable object in either place stays high."""
    assert not _high(AUTOGLUON / "multiclass_small" / "models" / "WeightedEnsemble_L2" / "model.pkl")
    for name in ("ensemble_metric_object.pkl", "scorer_func_object.pkl"):
        assert any(line.startswith("WS-PKL-027") for line in _high(HOSTILE / name)), (name, _high(HOSTILE / name))


def _restored(module: str, name: str, state: bytes) -> bytes:
    made = _g("copyreg", "_reconstructor") + b"(" + _g(module, name) + _g("builtins", "object") + b"NtR"
    return made + state + b"b"


def _dict(*pairs: tuple[bytes, bytes]) -> bytes:
    return b"}" + (b"(" + b"".join(k + v for k, v in pairs) + b"u" if pairs else b"")


def _list(*items: bytes) -> bytes:
    return b"]" + (b"(" + b"".join(items) + b"e" if items else b"")


_TRAINER = ("autogluon.tabular.trainer.auto_trainer", "AutoTrainer")
_BAGGED = ("autogluon.core.models.ensemble.stacker_ensemble_model", "StackerEnsembleModel")


def _graph(nodes: bytes) -> bytes:
    return _restored("networkx.classes.digraph", "DiGraph", _dict((_s("graph"), b"}"), (_s("_node"), nodes)))


def _trainer(graph: bytes) -> bytes:
    return _restored(*_TRAINER, _dict((_s("models"), b"}"), (_s("model_graph"), graph)))


def _bagged(models: bytes) -> bytes:
    return _restored(*_BAGGED, _dict((_s("models"), models)))


def _node(name: str, path: bytes) -> bytes:
    return _dict((_s(name), _dict((_s("path"), path))))


@pytest.mark.parametrize(("label", "body"), [
    ("an absolute path part", _trainer(_graph(_node("LightGBM", _list(_s("/tmp/x")))))),
    ("a later part walks up", _trainer(_graph(_node("LightGBM", _list(_s("LightGBM"), _s("..")))))),
    ("a Windows drive", _trainer(_graph(_node("LightGBM", _list(_s("C:x")))))),
    ("a backslash", _trainer(_graph(_node("LightGBM", _list(_s("..\\x")))))),
    ("a node named with a path", _trainer(_graph(_node("../x", _list(_s("x")))))),
    ("a part computed", _trainer(_graph(_node("LightGBM", _list(_g("os.path", "sep")))))),
    ("a graph that is not one", _trainer(_dict((_s("_node"), _node("LightGBM", _list(_s("LightGBM"))))))),
    ("node attributes made by a call", _trainer(_graph(_dict((_s("LightGBM"), _g("collections", "OrderedDict")
                                                               + b")R"))))),
    ("a child named with a path", _bagged(_list(_s("S1F1"), _s("/tmp/x")))),
    ("a child walking up", _bagged(_list(_s("..")))),
    ("children that are no list", _bagged(_g("collections", "OrderedDict") + b")R")),
    ("a child table keyed by a path", _bagged(_dict((_s("../x"), b"N")))),
])  # fmt: skip
def test_hand_made_model_paths_leaving_the_folder_are_high(tmp_path: Path, label: str, body: bytes) -> None:
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    assert "WS-PKL-070" in {f.rule_id for f in found if f.severity >= Severity.HIGH}, (label, [
        f.message for f in found])


@pytest.mark.parametrize(("label", "body"), [
    ("a model's own name", _trainer(_graph(_node("LightGBM_BAG_L1", _list(_s("LightGBM_BAG_L1")))))),
    ("no graph", _trainer(b"N")),
    ("children by name", _bagged(_list(_s("S1F1"), _s("S1F2")))),
    ("children kept whole", _bagged(_list(_restored(*_BAGGED, b"}")))),
])  # fmt: skip
def test_hand_made_model_paths_inside_the_folder_pass(tmp_path: Path, label: str, body: bytes) -> None:
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH], label
