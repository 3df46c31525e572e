"""FLAML's saved searches and models (helper 280): the real files in tests/data/flaml pass, and what the FLAML pack
allows stays where FLAML's own files put it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.pickle_bytes import binunicode as _s
from tests.helpers.pickle_bytes import global_op as _g
from tests.helpers.scanning import scan, scan_bytes
from wscan.model import Severity

FLAML = Path(__file__).parent / "data" / "flaml"


def _high(path: Path) -> list[str]:
    return [f"{f.rule_id}: {f.message}" for f in scan(path).findings if f.severity >= Severity.HIGH]


@pytest.mark.parametrize("path", sorted(FLAML.glob("flaml_*")), ids=lambda path: path.name)
def test_real_flaml_files_pass(path: Path) -> None:
    """Helper 280: every saved AutoML was critical (its searchers keep getattr(<estimator class>, "size"), bound
    classmethods) and every `automl.model` high (FLAML's classes). The files are FLAML's own
    (tests/data/flaml/README.md); rules/allow-flaml.yaml records what they import."""
    assert not _high(path)


def test_flaml_pack_lists_what_its_files_hold_only() -> None:
    """Classes restored from state are those FLAML's files hold objects of; the estimator classes FLAML keeps as
    values only (TransformersEstimator, whose cleanup() at AutoML.__del__ deletes folders) are values, never
    objects; the getattr lookups are the searchers' exact (class, `size`) pairs; the training function passes only
    inside a partial in a SearchState's training_function."""
    from wscan.rules import builtin_rules_dir
    from wscan.rules.loader import load_pack

    lists = load_pack(builtin_rules_dir() / "allow-flaml.yaml")["lists"]
    allowed = lists["allowed-callables"]
    assert "flaml.automl.automl.AutoML" in allowed and "flaml.automl.model.LGBMEstimator" in allowed
    assert all(name.startswith("flaml.") for name in allowed)
    assert allowed == lists["state-only-classes"]
    referenced = lists["referenced-callables"]
    assert "flaml.automl.model.TransformersEstimator" in referenced
    assert not {n for n in allowed if "Transformers" in n or "Spark" in n or "CatBoost" in n}
    lookups = [name for name in referenced if name.rpartition(".")[2][0].islower()]
    assert lookups and all(name.endswith(".size") for name in lookups)
    train = "flaml.automl.state.AutoMLState._compute_with_config_base"
    assert lists["kept-partial-functions"] == [train]
    assert lists["kept-partial-members"] == ["flaml.automl.state.SearchState.training_function"]
    assert train not in allowed and train not in referenced


def test_hostile_flaml_files_are_flagged() -> None:
    """Helper 280's two gadgets (tests/data/flaml/README.md): a TransformersEstimator restored as the trained
    estimator (AutoML.__del__ had it rmtree the folder its state named) is the only high finding of its file;
    an estimator naming a loader in `_flaml_spark_model_meta` (AutoML.load_pickle had joblib unpickle a file of the
    state's choosing) is WS-PKL-038."""
    cleanup = _high(FLAML / "hostile" / "automl_checkpoint_cleanup.pkl")
    assert cleanup and all(f.startswith("WS-PKL-003") and "TransformersEstimator" in f for f in cleanup), cleanup
    spark = _high(FLAML / "hostile" / "automl_spark_meta.pkl")
    assert spark and all(f.startswith("WS-PKL-038") and "joblib.numpy_pickle" in f for f in spark), spark


def _sg(module: str, name: str) -> bytes:
    """A STACK_GLOBAL import, as FLAML's files (protocol 4 and 5) name a nested class or a static method."""
    return _s(module) + _s(name) + b"\x93"


def _tuple(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def _list(*items: bytes) -> bytes:
    return b"](" + b"".join(items) + b"e"


def _dict(*pairs: tuple[bytes, bytes]) -> bytes:
    return b"}" + (b"(" + b"".join(k + v for k, v in pairs) + b"u" if pairs else b"")


def _restored(module: str, name: str, *pairs: tuple[bytes, bytes]) -> bytes:
    made = _g("copyreg", "_reconstructor") + _tuple(_sg(module, name), _g("builtins", "object"), b"N") + b"R"
    return made + _dict(*pairs) + b"b"


_STATE = "flaml.automl.state"
_MODEL = "flaml.automl.model"
_TRAIN = _sg(_STATE, "AutoMLState._compute_with_config_base")
_PARTIAL = _g("functools", "partial") + _tuple(_TRAIN) + b"R"


def _search(value: bytes) -> bytes:
    return _restored(_STATE, "SearchState", (_s("training_function"), value))


def _transformer(func: bytes) -> bytes:
    return _restored("sklearn.preprocessing._function_transformer", "FunctionTransformer", (_s("func"), func),
                     (_s("kw_args"), _dict((_s("estimator"), _s("lgbm")))))  # fmt: skip


def _lookup(owner: str, name: str) -> bytes:
    return _g("builtins", "getattr") + _tuple(_sg(_MODEL, owner), _s(name)) + b"R"


def _estimator(*pairs: tuple[bytes, bytes]) -> bytes:
    return _restored(_MODEL, "LGBMEstimator", (_s("_model"), b"N"), *pairs)


_SEARCH = _search(_PARTIAL)


@pytest.mark.parametrize(("label", "body", "real", "rule"), [
    # the training function: only inside a partial held by a SearchState's training_function
    ("partial as a transformer's func", _transformer(_PARTIAL), _SEARCH, "WS-PKL-069"),
    ("partial in a list", _list(_PARTIAL), _SEARCH, "WS-PKL-069"),
    ("partial as the file's object", _PARTIAL, _SEARCH, "WS-PKL-069"),
    ("partial also in a list (memo)", _list(_search(_PARTIAL + b"q\x01"), b"h\x01"), _list(_SEARCH), "WS-PKL-069"),
    ("state dict also in a list (memo)", _list(_g("copyreg", "_reconstructor") + _tuple(
        _sg(_STATE, "SearchState"), _g("builtins", "object"), b"N") + b"R" + _dict(
        (_s("training_function"), _PARTIAL)) + b"q\x02b", b"h\x02"), _list(_SEARCH), "WS-PKL-069"),
    ("partial under another attribute", _restored(_STATE, "SearchState", (_s("search_alg"), _PARTIAL)), _SEARCH,
     "WS-PKL-069"),
    ("function as a transformer's func", _transformer(_TRAIN), _SEARCH, "WS-PKL-003"),
    ("function called", _TRAIN + _tuple(_dict()) + b"R", _SEARCH, "WS-PKL-003"),
    ("partial called", _PARTIAL + _tuple(_dict()) + b"R", _SEARCH, "WS-PKL-005"),
    # getattr: the searchers' (class, size) pairs only, never called
    ("another classmethod", _list(_lookup("LGBMEstimator", "search_space")), _list(_lookup("LGBMEstimator", "size")),
     "WS-PKL-017"),
    ("size of a class kept as a value only", _list(_lookup("TransformersEstimator", "size")),
     _list(_lookup("RandomForestEstimator", "size")), "WS-PKL-017"),
    ("size called", _lookup("LGBMEstimator", "size") + _tuple(_dict()) + b"R", _list(_lookup("LGBMEstimator", "size")),
     "WS-PKL-017"),
    # classes FLAML keeps as values only are never objects; restored classes are never called
    ("TransformersEstimator restored", _restored(_MODEL, "TransformersEstimator", (_s("_use_ray"), b"\x89"),
                                                 (_s("_ckpt_remains"), _list(_s("/tmp/x")))),
     _list(_sg(_MODEL, "TransformersEstimator")), "WS-PKL-003"),
    ("AutoML called", _sg("flaml.automl.automl", "AutoML") + _tuple() + b"R",
     _restored("flaml.automl.automl", "AutoML", (_s("preserve_checkpoint"), b"\x88")), "WS-PKL-014"),
    ("cleanup replaced", _estimator((_s("cleanup"), _sg(_MODEL, "TransformersEstimator"))),
     _estimator((_s("estimator_class"), _sg(_MODEL, "TransformersEstimator"))), "WS-PKL-026"),
    # AutoML.load_pickle imports and loads what `_flaml_spark_model_meta` names
    ("spark meta", _estimator((_s("_flaml_spark_model_meta"), _dict((_s("path"), _s("side.pkl")),
                                                                     (_s("class"), _s("joblib.numpy_pickle"))))),
     _estimator((_s("_flaml_spark_model_meta"), b"N")), "WS-PKL-038"),
])  # fmt: skip
def test_hostile_flaml_streams_stay_flagged(tmp_path: Path, label: str, body: bytes, real: bytes, rule: str) -> None:
    """Each hostile stream beside the shape FLAML's own files have, which passes."""
    passed = scan_bytes(tmp_path / "real", b"\x80\x04" + real + b".", "model.pkl").findings
    assert not [(f.rule_id, f.message) for f in passed if f.severity >= Severity.HIGH], label
    found = scan_bytes(tmp_path / "hostile", b"\x80\x04" + body + b".", "model.pkl").findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}, (label, [f.message for f in found])
