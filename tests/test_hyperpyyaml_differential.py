"""HyperPyYAML (SpeechBrain's hyperparameter reader) on hostile files: the real `load_hyperpyyaml`, each file in
a sandboxed child with a marker payload. Every case must run its payload there and be reported at high or
critical by wscan; the benign shapes real recipes use must load and pass.

The shapes come from reviews that proved them through SpeechBrain's `from_hparams`, which reads
hyperparams.yaml with this function.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.sandbox import Case, Outcome, write_and_load
from tests.helpers.scanning import scan
from wscan.model import Severity
from wscan.scanners.config_targets import _REFERENCE, _References
from wscan.scanners.hyperpyyaml_refs import UNKNOWN

LOAD = "from hyperpyyaml import load_hyperpyyaml\ndef load(path, option):\n    with open(path) as f:\n" \
       "        load_hyperpyyaml(f)\n"  # fmt: skip


def text(template: str) -> Case:
    """A hyperparams file whose payload makes the marker folder (`{m}`) when the loader runs it."""
    return Case("hyperpyyaml", lambda marker: template.replace("{m}", str(marker)).encode(), ".yaml")


MAKEDIRS = "!!python/object/apply:os.makedirs [{m}, 511, True]"
CASES = {
    "apply": text("log_dir: !apply:os.makedirs [{m}]\n"),
    "apply-escaped-twice": text("log_dir: !apply:%256Fs.makedirs [{m}]\n"),  # ruamel decodes a tag twice
    "tag-name-escaped-twice": text("log_dir: !%2561pply:%256Fs.makedirs [{m}]\n"),
    "implicit-tuple": text(f"kernel: ({MAKEDIRS}, 3)\n"),
    "quoted-implicit-tuple": text(f'kernel: "({MAKEDIRS}, 3)"\n'),
    "explicit-tuple-tag": text(f'kernel: !tuple "x{MAKEDIRS}x"\n'),
    "reference-joins-a-tuple": text('t1: "!!python/object/apply:o"\nt2: "s.makedirs"\n'
                                    "kernel: !ref (<t1><t2> [{m}, 511, True], 3)\n"),
    "reference-through-a-reference": text('t1: "!!python/object/apply:o"\nt2: "s.makedirs"\na: !ref <t1><t2>\n'
                                          "kernel: !ref (<a> [{m}, 511, True], 3)\n"),
    "reference-adds-escaped-strings": text(
        "empty: ''\nkernel: !ref <empty>'(\\x21\\x21pyth' + 'on/object/apply:o' + 's.makedirs [{m}, 511, True], 3)'\n"
    ),
    "reference-formats-a-string": text(
        "empty: ''\nkernel: !ref <empty>'(%c' % 33 + '!python/object/apply:os.makedirs [{m}, 511, True], 3)'\n"
    ),
    "copy-joins-a-tuple": text('t1: "!!python/object/apply:o"\nt2: "s.makedirs"\n'
                               "kernel: !copy (<t1><t2> [{m}, 511, True], 3)\n"),
    # A final review's three: HyperPyYAML's reference pattern (`<a<b>` is the key `a<b`), the loaded value of a
    # plain scalar (`true` is True, and '(!' * True is '(!'), and a result longer than wscan keeps.
    "reference-key-with-angle-bracket": text(
        "\"a<b\": \"'(!' + '!python/object/apply:os.makedirs [{m}, 511, True], 3)'\"\nb: 1\nc: !ref <a<b> + ''\n"),
    "reference-to-a-boolean": text(
        "t: true\nc: !ref \"'(!' * <t> + '!python/object/apply:os.makedirs [{m}, 511, True], 3)'\"\n"),
    "reference-with-extra-angle-brackets": text(  # deref strips every < and >: `<<a>` names `a`, not `<a`
        "a: \"'(!' + '!python/object/apply:os.makedirs [{m}, 511, True], 3)'\"\n\"<a\": \"'x'\"\n"
        "c: !ref <<a> + ''\n"),
    "reference-longer-than-kept": text(
        "pad: " + "a" * 70_000 + "\nc: !ref \"'(<pad>, !' + '!python/object/apply:os.makedirs [{m}, 511, True])'\"\n"),
}
# What recipes write: references to numbers and folders, arithmetic, tuples of numbers, seeding.
BENIGN = (
    "seed: 1986\nsample_rate: 16000\noutput_folder: results/xvect\nsave_folder: !ref <output_folder>/save\n"
    "n_fft: 400\nbins: !ref <n_fft> // 2 + 1\nkernel: !ref (<n_fft>, 3)\npool: (2, 2)\nlr: !ref 0.001 * 2\n"
    "name: !ref <output_folder>/'ckpt'\nshape: !tuple (1, 2)\nsizes: !copy <pool>\n"
)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Outcome]]:
    cases = {**CASES, "benign": Case("hyperpyyaml", lambda _: BENIGN.encode(), ".yaml")}
    return dict(write_and_load(LOAD, cases, tmp_path_factory.mktemp("hyperpyyaml"), timeout=300))


@pytest.mark.parametrize("name", list(CASES))
def test_what_hyperpyyaml_runs_wscan_flags(outcomes: dict[str, tuple[Path, Outcome]], name: str) -> None:
    path, outcome = outcomes[name]
    assert outcome.executed, outcome  # the real loader ran the payload
    report = scan(path)
    assert max((f.severity for f in report.findings), default=Severity.INFO) >= Severity.HIGH, report.findings


def test_recipe_shapes_load_and_pass(outcomes: dict[str, tuple[Path, Outcome]]) -> None:
    path, outcome = outcomes["benign"]
    assert outcome.loaded, outcome
    assert [f for f in scan(path).findings if f.severity >= Severity.MEDIUM] == []


# --- reference resolution, against HyperPyYAML's own -----------------------------------------------------

# Reference texts as recipes and attacks write them: references, quoted strings, numbers, joined bare or by the
# arithmetic HyperPyYAML folds (no `*`: HyperPyYAML's own folding of `'x' * 33 * 33 * ...` runs out of memory).
_TERM = st.sampled_from(["<a>", "<b>", "<c>", "'('", "')'", "'!'", "'x'", '"!!python/"', "1", "2", "33", "'%c'",
                         "(", ")", "!!python/", "x", "\\x21"])  # fmt: skip
_OP = st.sampled_from([" + ", " - ", " % ", " // ", " / ", "", " ", ", "])


def _joined(terms: st.SearchStrategy[str], most: int) -> st.SearchStrategy[str]:
    """Terms with an operator (or nothing) between each two."""
    pairs = st.lists(st.tuples(_OP, terms), max_size=most - 1)
    return st.tuples(terms, pairs).map(lambda t: t[0] + "".join(o + x for o, x in t[1]))


_TEXT = _joined(_TERM, 6)
# Values hold references too, but only to `z` (no cycles: HyperPyYAML's own resolution of `a: <b><b>`,
# `b: <a><a>` doubles the text at each step until memory runs out).
_PLAIN = st.one_of(st.just(""), _joined(_TERM.filter(lambda t: not t.startswith("<")), 3))
_VALUE = st.one_of(_PLAIN, _PLAIN.map(lambda v: v + "<z>"), _PLAIN.map(lambda v: "<z>" + v))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.fixed_dictionaries({k: _VALUE for k in "abc"}), z=_PLAIN, text=_TEXT)
def test_references_resolve_as_hyperpyyaml_resolves_them(values: dict[str, str], z: str, text: str) -> None:
    """Whatever HyperPyYAML's `recursive_resolve` makes of a reference, wscan's reading (`_References`) makes the
    same string, or knows it cannot tell; a tuple-shaped result is never missed."""
    from hyperpyyaml.core import recursive_resolve

    values = {**values, "z": z}
    if "<" not in text or _REFERENCE.fullmatch(text):
        return
    try:
        real = recursive_resolve(text, [], dict(values))
    except Exception:  # arithmetic that raises: the loader stops there
        return
    references = _References()
    references.scalars = {(key,): (value, None) for key, value in values.items()}
    ours = references.resolve(text, 0)
    if UNKNOWN in ours:
        return
    assert ours == str(real) or not isinstance(real, str), (ours, real)


@pytest.mark.parametrize(
    "reference",
    ["'(%.1500000000d' % <n> + ')'", "(" + "<b>" * 2000 + ")"],
    ids=["format-precision", "repeated-large-value"],
)
def test_pathological_references_stay_in_bounds(tmp_path: Path, reference: str) -> None:
    """A 50-byte reference HyperPyYAML would turn into gigabytes: wscan reports it as computed, in bounded memory
    (the scan runs under a 1 GiB address-space limit)."""
    import resource
    import subprocess
    import sys

    path = tmp_path / "hyperparams.yaml"
    path.write_text(f"n: 1\nb: {'x' * 1_000_000}\nc: !ref \"{reference}\"\n")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    run = subprocess.run([sys.executable, "-m", "wscan", "scan", "--no-progress", str(path)], preexec_fn=limit,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 1 and "WS-CFG-003" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]

