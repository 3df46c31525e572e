"""NumPy random states whose positions point outside them (WS-PKL-059).

NumPy's state setters store the MT19937 key position and Philox's buffer position as given, and the next draw reads
the key or the buffer at that index. Helper 226 set a RandomState's `pos` to 2^31 - 1 inside a DummyClassifier saved
by skops: `predict` crashed. The same states in plain pickles, in the dict NumPy writes and in the tuple NumPy before
1.17 wrote (which set_state still takes), are loaded and drawn from by the real NumPy in a sandboxed child here.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers.sandbox import load_each
from tests.helpers.scanning import scan
from wscan.model import Severity


class _Legacy:
    """Pickles as a RandomState given the tuple state NumPy 1.16 and older wrote."""

    def __init__(self, pos: int) -> None:
        self.pos = pos

    def __reduce__(self) -> tuple[Any, ...]:
        state = np.random.RandomState(0).get_state(legacy=True)
        assert isinstance(state, tuple)
        return np.random.RandomState, (), ("MT19937", state[1], self.pos, 0, 0.0)


def _random_state(pos: int) -> bytes:
    rs = np.random.RandomState(0)
    state = rs.get_state(legacy=False)
    assert isinstance(state, dict)
    state["state"]["pos"] = pos
    rs.set_state(state)
    return pickle.dumps({"random_state": rs})


def _philox(buffer_pos: int) -> bytes:
    bit_generator = np.random.Philox(0)
    state = bit_generator.state
    state["buffer_pos"] = buffer_pos
    bit_generator.state = state
    return pickle.dumps({"rng": np.random.Generator(bit_generator)})


CASES = {
    "random-state-pos-far": (lambda: _random_state(2**31 - 1), True),
    "random-state-legacy-tuple-far": (lambda: pickle.dumps(_Legacy(2**31 - 1)), True),
    "philox-buffer-before": (lambda: _philox(-3_000_000), True),
    "random-state-fresh": (lambda: pickle.dumps(np.random.RandomState(0)), False),
    "random-state-at-end": (lambda: _random_state(624), False),
    "random-state-legacy-tuple": (lambda: pickle.dumps(_Legacy(624)), False),
    "philox-full-buffer": (lambda: _philox(4), False),
    "every-generator": (lambda: pickle.dumps([np.random.default_rng(0), *(np.random.Generator(getattr(np.random, n)(1))
                                              for n in ("MT19937", "PCG64DXSM", "Philox", "SFC64"))]), False),
}

SETUP = """
import pickle, numpy as np

def load(path, option):
    with open(path, "rb") as f:
        obj = pickle.load(f)
    for value in (obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else [obj]):
        if hasattr(value, "random_sample"):
            value.random_sample(1000)  # a RandomState
        else:
            value.integers(0, 10, 1000)  # a Generator
"""


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("random-states")
    (root / "cwd").mkdir()
    jobs, paths = [], {}
    for name, (make, _) in CASES.items():
        paths[name] = root / f"{name}.pkl"
        paths[name].write_bytes(make())
        jobs.append((name, paths[name], None, root / "none"))
    done = load_each(SETUP, jobs, root / "cwd", timeout=300)
    return {name: (paths[name], done[name]) for name in CASES}


@pytest.mark.parametrize("case", list(CASES))
def test_random_states(outcomes: dict[str, tuple[Path, Any]], case: str) -> None:
    path, outcome = outcomes[case]
    hostile = CASES[case][1]
    high = {f.rule_id for f in scan(path).findings if f.severity >= Severity.HIGH}
    if hostile:
        assert outcome.result.startswith("crashed"), outcome.result
        assert "WS-PKL-059" in high
    else:
        assert outcome.loaded, outcome.result
        assert [f.rule_id for f in scan(path).findings] == []
