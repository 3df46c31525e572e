"""skops files: what skops.io.load would import and call is judged as the equivalent pickle (scanners/skops.py).

skops' documentation loads a file with `trusted=get_untrusted_types(file=...)`, which trusts whatever the file
names; the hostile cases below are loaded exactly so by the real skops in a sandboxed child, which shows each payload
running (or the tree crashing scikit-learn), and wscan must flag each. The benign files are written by the real skops
from fitted scikit-learn models and must pass with no finding at all.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers.sandbox import load_each
from tests.helpers.scanning import scan
from wscan.model import Severity

sio = pytest.importorskip("skops.io")
sklearn = pytest.importorskip("sklearn")

from sklearn import cluster, compose, ensemble, linear_model, naive_bayes, neighbors, pipeline, preprocessing, svm, tree  # noqa: E402  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402

X, Y = np.random.default_rng(0).random((60, 8)), np.arange(60) % 3


def _benign() -> dict[str, Any]:
    texts = ["the cat sat", "a dog ran", "the bird flew", "cats and dogs"] * 5
    return {
        "logistic": linear_model.LogisticRegression(max_iter=300).fit(X, Y),
        "random-forest": ensemble.RandomForestClassifier(n_estimators=3, random_state=0).fit(X, Y),
        "gradient-boosting": ensemble.GradientBoostingClassifier(n_estimators=3).fit(X, Y),
        "hist-gradient-boosting": ensemble.HistGradientBoostingRegressor(max_iter=3).fit(X, X[:, 0]),
        "svc": svm.SVC().fit(X, Y),
        "kd-tree": neighbors.KNeighborsClassifier(algorithm="kd_tree").fit(X, Y),
        "kmeans": cluster.KMeans(3, n_init=2, random_state=0).fit(X),
        "function-transformer": pipeline.make_pipeline(
            preprocessing.FunctionTransformer(np.log1p), linear_model.LogisticRegression()
        ).fit(X, Y),
        "column-transformer": compose.ColumnTransformer(
            [("scale", preprocessing.StandardScaler(), [0, 1]), ("onehot", preprocessing.OneHotEncoder(), [2])]
        ).fit(np.round(X * 3)),
        "tfidf": pipeline.make_pipeline(TfidfVectorizer(), naive_bayes.MultinomialNB()).fit(texts, [0, 1] * 10),
        "sgd-random-state": linear_model.SGDClassifier(random_state=np.random.RandomState(0)).fit(X, Y),
        "plain-values": {
            "a": np.arange(3), 1: [1, 2.5, None], "set": {1, 2}, "tuple": (1, "x"), "bytes": b"xy",
            "bytearray": bytearray(b"z"), "slice": slice(1, 5, 2), "generator": np.random.default_rng(0),
            "dtype": np.dtype("<f4"), "masked": np.ma.MaskedArray([1, 2], mask=[0, 1]),
            "objects": np.array([1, "a"], dtype=object),
        },
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("skops")
    made = {}
    for name, obj in _benign().items():
        made[name] = root / f"{name}.skops"
        sio.dump(obj, made[name])
    return made


def _at_least_high(path: Path) -> set[str]:
    return {f.rule_id for f in scan(path).findings if f.severity >= Severity.HIGH}


@pytest.mark.parametrize("name", list(_benign()))
def test_real_skops_files_pass(files: dict[str, Path], name: str) -> None:
    report = scan(files[name])
    assert [f.rule_id for f in report.findings] == []
    assert sio.get_untrusted_types(file=files[name]) is not None  # skops reads it back


def test_the_translation_is_scanned(files: dict[str, Path]) -> None:
    """Every benign file above went through the pickle scanner: the summary names the format."""
    report = scan(files["random-forest"])
    assert "pickle" in report.files[0].formats


# --- hostile files, built from real ones -----------------------------------------------------------------------


def _rewrite(source: Path, change: Callable[[dict[str, Any]], Any], members: dict[str, bytes] | None = None) -> bytes:
    """The skops zip with its schema changed (and members replaced), written as skops writes one."""
    with zipfile.ZipFile(source) as original:
        schema = json.loads(original.read("schema.json"))
        schema = change(schema) or schema
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            for info in original.infolist():
                if info.filename != "schema.json":
                    z.writestr(info.filename, (members or {}).get(info.filename) or original.read(info))
            z.writestr("schema.json", json.dumps(schema))
    return out.getvalue()


def _json(value: object) -> dict[str, Any]:
    return {"__class__": type(value).__name__, "__module__": "builtins", "__loader__": "JsonNode",
            "content": json.dumps(value), "is_json": True}


def _function(module: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"__class__": name, "__module__": module, "__loader__": "FunctionNode", **extra}


def _tuple(*items: dict[str, Any]) -> dict[str, Any]:
    return {"__class__": "tuple", "__module__": "builtins", "__loader__": "TupleNode", "content": list(items)}


def _list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"__class__": "list", "__module__": "builtins", "__loader__": "ListNode", "content": list(items)}


def _plain_dict(items: dict[str, dict[str, Any]], key_types: dict[str, Any] | None = None) -> dict[str, Any]:
    types = key_types or _list(*[{"__class__": "str", "__module__": "builtins", "__loader__": "TypeNode"}] * len(items))
    return {"__class__": "dict", "__module__": "builtins", "__loader__": "DictNode", "key_types": types,
            "content": items, "protocol": 2}


def _transformer_func(schema: dict[str, Any], node: dict[str, Any]) -> None:
    """Replace the function a FunctionTransformer calls on transform."""
    step = schema["content"]["content"]["steps"]["content"][0]["content"][1]
    step["content"]["content"]["func"] = node


def _exec(command: str) -> str:
    return f"import os; os.system({command!r})"


def _cases(sources: dict[str, Path]) -> dict[str, tuple[Callable[[Path], bytes], object]]:
    """Case name: (the file given its marker, what the sandbox does after loading it)."""
    transformer = sources["function-transformer"]
    plain = sources["plain-values"]

    def os_system_function(marker: Path) -> bytes:
        return _rewrite(transformer, lambda s: _transformer_func(s, _function("os", "system")))

    def protocol_0_function(marker: Path) -> bytes:
        def change(s: dict[str, Any]) -> None:
            s["protocol"] = 0
            node = {"__class__": "function", "__module__": "builtins", "__loader__": "FunctionNode",
                    "content": {"module_path": "os", "function": "system"}}
            _transformer_func(s, node)

        return _rewrite(transformer, change)

    def key_type_calls(marker: Path) -> bytes:
        return _rewrite(plain, lambda s: _plain_dict({f"touch {marker}": _json(1)}, _list(_function("os", "system"))))

    def operator_call(marker: Path) -> bytes:
        call = {"__class__": "call", "__module__": "operator", "__loader__": "OperatorFuncNode",
                "attrs": _tuple(_function("os", "system"), _json(f"touch {marker}"))}
        return _rewrite(plain, lambda s: _plain_dict({"x": call}))

    def constructor_exec(marker: Path) -> bytes:
        node = {"__class__": "exec", "__module__": "builtins", "__loader__": "ConstructorFromReduceNode",
                "content": _tuple(_json(_exec(f"touch {marker}")))}
        return _rewrite(plain, lambda s: _plain_dict({"x": node}))

    def shared_id_first_built(marker: Path) -> bytes:
        """skops builds a reduce node's state before its arguments, and an id names the first node built under it:
        the payload sits in the state where nothing constructs it (a dict with no key types), and the argument
        that reuses its id looks like int('5'). Built arguments-first, the payload would never be seen."""
        payload = {"__class__": "exec", "__module__": "builtins", "__loader__": "ConstructorFromReduceNode",
                   "content": _tuple(_json(_exec(f"touch {marker}"))), "__id__": 7777}
        decoy = {"__class__": "int", "__module__": "builtins", "__loader__": "ConstructorFromReduceNode",
                 "content": _tuple(_json("5")), "__id__": 7777}
        loss = {"__class__": "CyHalfSquaredError", "__module__": "sklearn._loss._loss", "__loader__": "LossNode",
                "content": _plain_dict({"x": payload}, _list()), "__reduce__": {"args": _tuple(decoy)}}
        return _rewrite(plain, lambda s: _plain_dict({"loss": loss}))

    def unknown_loader(marker: Path) -> bytes:
        return _rewrite(plain, lambda s: _plain_dict({"x": {"__class__": "system", "__module__": "os",
                                                             "__loader__": "ShellNode"}}))

    def future_protocol(marker: Path) -> bytes:
        return _rewrite(plain, lambda s: {**s, "protocol": 99})

    return {
        "os-system-function": (os_system_function, ["transform", "touch {marker}"]),
        "protocol-0-function": (protocol_0_function, ["transform", "touch {marker}"]),
        "key-type-calls": (key_type_calls, None),
        "operator-call": (operator_call, None),
        "constructor-exec": (constructor_exec, None),
        "shared-id-first-built": (shared_id_first_built, None),
        "unknown-loader": (unknown_loader, None),
        "future-protocol": (future_protocol, None),
    }


SETUP = """
import skops.io as sio

def load(path, option):
    obj = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    if option:  # the pipeline's first step (a FunctionTransformer) calls its function on the text
        obj.steps[0][1].transform(option[1])
"""

RUNS = {"os-system-function", "protocol-0-function", "key-type-calls", "operator-call", "constructor-exec",
        "shared-id-first-built"}
REFUSED = {"unknown-loader", "future-protocol"}  # skops refuses these; wscan cannot follow them either


@pytest.fixture(scope="module")
def hostile(files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("skops-hostile")
    (root / "cwd").mkdir()
    jobs, made = [], {}
    for name, (make, option) in _cases(files).items():
        marker = root / f"{name}.marker"
        path = root / f"{name}.skops"
        path.write_bytes(make(marker))
        if isinstance(option, list):
            option = [option[0], option[1].format(marker=marker)]
        jobs.append((name, path, option, marker))
        made[name] = path
    outcomes = load_each(SETUP, jobs, root / "cwd", timeout=300)
    return {name: (made[name], outcomes[name]) for name in made}


@pytest.mark.parametrize("case", sorted(RUNS))
def test_payloads_skops_runs_are_flagged(hostile: dict[str, tuple[Path, Any]], case: str) -> None:
    path, outcome = hostile[case]
    assert outcome.executed, f"the real skops did not run the payload: {outcome.result}"
    assert "WS-PKL-001" in _at_least_high(path) or "WS-PKL-004" in _at_least_high(path)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_schemas_wscan_cannot_follow_are_high(hostile: dict[str, tuple[Path, Any]], case: str) -> None:
    path, outcome = hostile[case]
    assert not outcome.executed and outcome.result.startswith("error"), outcome.result
    assert "WS-SKP-001" in _at_least_high(path)


# --- a tree whose node points past the node array: skops loads it, scikit-learn reads out of bounds -------------


def _out_of_bounds_tree(source: Path) -> bytes:
    with zipfile.ZipFile(source) as z:
        schema = json.loads(z.read("schema.json"))
        tree_node = schema["content"]["content"]["tree_"]
        nodes_file = tree_node["content"]["content"]["nodes"]["file"]
        nodes = np.load(io.BytesIO(z.read(nodes_file)))
    nodes["left_child"][0] = nodes["right_child"][0] = 10**9
    buffer = io.BytesIO()
    np.save(buffer, nodes)
    return _rewrite(source, lambda s: None, {nodes_file: buffer.getvalue()})


def test_tree_past_its_nodes_is_flagged(tmp_path: Path) -> None:
    source = tmp_path / "tree.skops"
    sio.dump(tree.DecisionTreeClassifier(random_state=0).fit(X, Y), source)
    bad = tmp_path / "bad.skops"
    bad.write_bytes(_out_of_bounds_tree(source))
    _predict_crashes_only_on(tmp_path, bad, source)


def _predict_crashes_only_on(tmp_path: Path, bad: Path, good: Path) -> None:
    """The real skops loads both and predict crashes on `bad` only; wscan flags `bad` (WS-PKL-059) and not `good`."""
    (tmp_path / "cwd").mkdir()
    setup = SETUP.replace("obj.steps[0][1].transform(option[1])", "obj.predict(__import__('numpy').ones((4, 8)))")
    outcomes = load_each(setup, [("bad", bad, True, tmp_path / "none"), ("good", good, True, tmp_path / "none")],
                         tmp_path / "cwd", timeout=300)
    assert outcomes["good"].loaded
    assert outcomes["bad"].result.startswith("crashed"), outcomes["bad"].result
    assert "WS-PKL-059" in _at_least_high(bad)
    assert _at_least_high(good) == set()


# --- helper 226's red team: each of these passed before, and each is loaded by the real skops ----------------------


def _npy(array: np.ndarray[Any, Any]) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _exec_dict(marker: Path) -> dict[str, Any]:
    node = {"__class__": "exec", "__module__": "builtins", "__loader__": "ConstructorFromReduceNode",
            "content": _tuple(_json(_exec(f"touch {marker}")))}
    return _plain_dict({"x": node})


def _zip(schema: dict[str, Any], members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
        z.writestr("schema.json", json.dumps(schema))
    return out.getvalue()


def _red_team_cases() -> dict[str, Callable[[Path], bytes]]:
    import pickle

    class _System:
        def __init__(self, command: str) -> None:
            self.command = command

        def __reduce__(self) -> tuple[Any, ...]:
            import os

            return os.system, (self.command,)

    def dtype_of_pickle_loads(marker: Path) -> bytes:
        """A DTypeNode's array node names pickle.loads as its class: skops calls it on the array's bytes."""
        raw = np.frombuffer(pickle.dumps(_System(f"touch {marker}")), dtype=np.uint8)
        array = {"__class__": "loads", "__module__": "pickle", "__loader__": "NdArrayNode", "type": "numpy",
                 "file": "a.npy"}
        dtype = {"__class__": "dtype", "__module__": "numpy", "__loader__": "DTypeNode", "content": array}
        return _zip(_plain_dict({"d": dtype}), {"a.npy": _npy(raw)})

    def beside_torch_members(marker: Path) -> bytes:
        """A schema beside the members a PyTorch zip has: skops reads only schema.json."""
        return _zip(_exec_dict(marker), {"archive/data.pkl": pickle.dumps({}), "archive/version": b"3\n"})

    def beside_keras_members(marker: Path) -> bytes:
        return _zip(_exec_dict(marker), {"config.json": b"{}", "metadata.json": b"{}"})

    def protocol_1_seed_sequence_id(marker: Path) -> bytes:
        """Helper 228: skops' protocol 1 builds a Generator's bit generator only, so an id in its seed sequence never
        enters the memo, and a later node under that id is built afresh: here an exec. Built as protocol 2 builds
        it, the id named the harmless seed sequence, and the exec was never seen."""
        buffer = io.BytesIO()
        sio.dump({"gen": np.random.default_rng(0)}, buffer)
        with zipfile.ZipFile(buffer) as z:
            schema = json.loads(z.read("schema.json"))
        generator = schema["content"]["gen"]
        generator["content"]["seed_seq"] = {**_json({}), "__id__": 4242}
        payload = _exec_dict(marker)["content"]["x"]
        return _zip({**_plain_dict({"gen": generator, "x": {**payload, "__id__": 4242}}), "protocol": 1}, {})

    return {
        "protocol-1-seed-sequence-id": protocol_1_seed_sequence_id,
        "dtype-of-pickle-loads": dtype_of_pickle_loads,
        "beside-torch-members": beside_torch_members,
        "beside-keras-members": beside_keras_members,
    }


@pytest.fixture(scope="module")
def red_team(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("skops-red-team")
    (root / "cwd").mkdir()
    jobs, made = [], {}
    for name, make in _red_team_cases().items():
        marker, path = root / f"{name}.marker", root / f"{name}.skops"
        path.write_bytes(make(marker))
        jobs.append((name, path, None, marker))
        made[name] = path
    outcomes = load_each(SETUP, jobs, root / "cwd", timeout=300)
    return {name: (made[name], outcomes[name]) for name in made}


@pytest.mark.parametrize("case", sorted(_red_team_cases()))
def test_red_team_payloads_are_flagged(red_team: dict[str, tuple[Path, Any]], case: str) -> None:
    path, outcome = red_team[case]
    assert outcome.executed, outcome.result
    assert "WS-PKL-001" in _at_least_high(path)


def test_schema_too_deep_for_wscan_is_high(tmp_path: Path) -> None:
    """An unread key nested 970 deep: json.loads reads it from skops' shallow stack (the payload beside it ran,
    helper 226), and fails from wscan's deeper one, which had made the file pass unread."""
    schema = _exec_dict(tmp_path / "marker")
    deep = "[" * 970 + "]" * 970
    text = json.dumps(schema)[:-1] + ', "padding": ' + deep + "}"
    path = tmp_path / "deep.skops"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("schema.json", text)
    assert _at_least_high(path) & {"WS-SKP-001", "WS-PKL-001"}


def _sparse_coef(tmp_path: Path, index: int | None, member: str = "indices.npy") -> Path:
    """A sparsified LogisticRegression (coef_ a CSR matrix), its column indices set to `index` in `member` (NumPy's
    NpzFile takes a member named `indices` before `indices.npy`: helper 228 added one beside the real one)."""
    model = linear_model.LogisticRegression(max_iter=300).fit(X, Y).sparsify()
    path = tmp_path / f"sparse-{index}.skops"
    sio.dump(model, path)
    if index is None:
        return path
    with zipfile.ZipFile(path) as z:
        name = json.loads(z.read("schema.json"))["content"]["content"]["coef_"]["file"]
        npz = zipfile.ZipFile(io.BytesIO(z.read(name)))
        members = {n: npz.read(n) for n in npz.namelist()}
    indices = np.load(io.BytesIO(members["indices.npy"]))
    indices[:] = index
    members[member] = _npy(indices)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as new:
        for n, data in members.items():
            new.writestr(n, data)
    bad = tmp_path / f"sparse-bad-{member}.skops"
    bad.write_bytes(_rewrite(path, lambda s: None, {name: out.getvalue()}))
    return bad


@pytest.mark.parametrize("member", ["indices.npy", "indices"])
def test_sparse_indices_past_the_matrix_are_flagged(tmp_path: Path, member: str) -> None:
    """scipy's constructor checks a CSR matrix's index lengths, not their bounds: predict then reads past coef_."""
    good, bad = _sparse_coef(tmp_path, None), _sparse_coef(tmp_path, 2**31 - 7, member)
    _predict_crashes_only_on(tmp_path, bad, good)


@pytest.mark.parametrize("kind", ["svc", "nu-svc", "one-class", "kmeans"])
def test_models_fitted_on_sparse_input_pass(tmp_path: Path, kind: str) -> None:
    """Their support vectors (or centres) are sparse matrices: read from the .npz member, checked, and passed."""
    from scipy import sparse

    data = sparse.csr_matrix(np.where(X > 0.5, X, 0.0))
    model = {"svc": lambda: svm.SVC(probability=True).fit(data, Y), "nu-svc": lambda: svm.NuSVC().fit(data, Y),
             "one-class": lambda: svm.OneClassSVM().fit(data),
             "kmeans": lambda: {"kept": sparse.coo_matrix(data), "dia": sparse.dia_matrix(data[:8, :8]),
                                "csc": sparse.csc_array(data)}}[kind]()
    path = tmp_path / f"{kind}.skops"
    sio.dump(model, path)
    assert [f.rule_id for f in scan(path).findings] == []


def test_schema_without_a_protocol_is_read_as_skops_0_4_reads_it(tmp_path: Path) -> None:
    """skops 0.4 and 0.5 never read the protocol: helper 229's dict whose key type is protocol 0's FunctionNode
    os.system ran the command under both, and wscan, wanting a protocol, had returned without reading the file.
    skops 0.16 refuses it (no protocol), so the old releases' behaviour is the ground truth, seen by helper 229."""
    system = {"__class__": "function", "__module__": "builtins", "__loader__": "FunctionNode",
              "content": {"module_path": "os", "function": "system"}}
    schema = _plain_dict({"touch marker": _json(1)}, _list(system))
    del schema["protocol"]
    path = tmp_path / "no-protocol.skops"
    path.write_bytes(_zip(schema, {}))
    assert "WS-PKL-001" in _at_least_high(path)
    with pytest.raises(Exception):  # noqa: B017 - skops 0.16 refuses it, whatever the error
        sio.load(path, trusted=[])


def test_a_function_named_both_ways_is_judged_both_ways(tmp_path: Path, files: dict[str, Path]) -> None:
    """A FunctionNode of protocol 2 naming numpy.log1p by __module__/__class__ and os.system in the content that
    skops 0.4 and 0.5 read (they ignore the protocol)."""
    node = _function("numpy", "log1p", content={"module_path": "os", "function": "system"})
    path = tmp_path / "both.skops"
    path.write_bytes(_rewrite(files["function-transformer"], lambda s: _transformer_func(s, node)))
    assert "WS-PKL-001" in _at_least_high(path)
