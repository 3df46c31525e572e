"""Review 29, case 9: chat templates that crash or exhaust llama.cpp's Jinja engine while it loads the model
(a recursive macro overflowed the stack under ASan; `range(1000000000)` and `'x' * 1000000000` passed 5.6 and
6.7 GB in 30 s). Python's Jinja stops some of them; llama.cpp's engine has no limit. WS-TPL-010, judged from the
syntax tree; real templates that recurse into nested tool schemas pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.gguf_files import gguf_with_template
from tests.helpers.scanning import rule_ids, scan
from wscan.chat_template import check_template
from wscan.cli import main
from wscan.template_cost import MAX_ITEMS

DATA = Path(__file__).parent / "data"
REVIEW = sorted((DATA / "template_cost").glob("*.jinja"))  # the review's three templates, unmodified
REAL = sorted((DATA / "chat_templates").glob("*.jinja"))
RECURSIVE_REAL = [p for p in REAL if p.name.startswith(("CohereForAI", "NousResearch"))]  # json_to_python_type


def costs(source: str) -> list[str]:
    return [str(i.attrs["name"]) for i in check_template(source) if i.kind == "template.render_cost"]


@pytest.mark.parametrize("path", REVIEW, ids=lambda p: p.stem)
def test_the_reviews_templates_are_reported(path: Path) -> None:
    assert len(costs(path.read_text(encoding="utf-8"))) == 1


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "macro f calls itself"),
        ("{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(1) }}",
         "macros a, b call each other"),
        # A condition alone is not a limit: the argument grows, it never descends into the data.
        ("{% macro f(n) %}{% if n < 1000000000 %}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}",
         "macro f calls itself"),
        ("{% macro f(x) %}{% for m in messages %}{{ f(m) }}{% endfor %}{% endmacro %}{{ f(1) }}",
         "macro f calls itself"),
        ("{% macro f(x) %}{{ f(x.child) }}{% endmacro %}{{ f(messages) }}", "macro f calls itself"),
        ("{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}", "macro f calls itself"),
        ("{% for i in range(100000 * 100000) %}{% endfor %}", "range() of 10,000,000,000 items"),
        ("{% for i in range(0, 10**9) %}{% endfor %}", "range() of 1,000,000,000 items"),
        ("{% for i in range(1, 10**9, 2) %}{% endfor %}", "range() of 500,000,000 items"),
        ("{% set n = 10 ** 9 %}{% for i in range(n) %}{% endfor %}", "range() of 1,000,000,000 items"),
        ("{% for i in range('1000000000'|int) %}{% endfor %}", "range() of 1,000,000,000 items"),
        ("{% set l = [1, 2] * 1000000 %}", "a string or list of 2,000,000 items built from constants"),
        ("{{ 1000000000 * 'x' }}", "a string or list of 1,000,000,000 items built from constants"),
        ("{{ 'x' * 1000 * 1000 }}", "a string or list of 1,000,000 items built from constants"),
        ("{% set n = 100000 %}{% set s = 'ab' * n %}{{ s * n }}", "a string or list of 20,000,000,000 items"),
        ("{% set a = 'x' * 4000 %}{% set b = a ~ a %}{% set c = b + b %}{% set d = c ~ c %}{{ d ~ d ~ d ~ d }}",
         "a string or list of 128,000 items built from constants"),
        ("{{ 'x'.ljust(10**9) }}", "a string padded to 1,000,000,000 characters"),
        ("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
         "nested loops over constants running 1,000,000 times"),
        # A namespace value keeps its value from run to run: two copies of itself double it each time.
        ("{% set ns = namespace(s='x') %}{% for m in messages %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
         "a namespace value ns.s made of 2 copies of itself in a loop run as many times as the chat has messages"),
        ("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s * 2 %}{% endfor %}",
         "a namespace value ns.s made of 2 copies of itself in a loop run 40 times"),
        ("{% set ns = namespace(l=[1]) %}{% for i in range(5) %}{% for j in range(5) %}"
         "{% set ns.l = (ns.l + ns.l + ns.l)|list %}{% endfor %}{% endfor %}",
         "a namespace value ns.l made of 3 copies of itself in a loop run 25 times"),
        ("{% set n = 3 %}{% set ns = namespace(s='x') %}{% for m in messages %}{% set ns.s = n * ns.s %}{% endfor %}",
         "a namespace value ns.s made of 3 copies of itself"),
        ("{% set ns = namespace(s='x') %}{% for m in messages %}{% set ns.s = ns.s" + " * 1000000000000" * 45
         + " %}{% endfor %}", "a namespace value ns.s made of 100000 copies of itself"),  # capped, never computed
        ("{% set ns = namespace(s='x') %}{% for m in messages %}{% if m.role == 'user' %}"
         "{% set ns.s = ns.s ~ m.content ~ ns.s|trim %}{% endif %}{% endfor %}",
         "a namespace value ns.s made of 2 copies of itself"),
    ],
)
def test_exhausting_shapes_are_reported(source: str, expected: str) -> None:
    found = costs(source)
    assert any(name.startswith(expected) for name in found), found


@pytest.mark.parametrize(
    "source",
    [
        "{% for i in range(10) %}{{ 'x' * 3 }}{% endfor %}",
        f"{{% for i in range({MAX_ITEMS}) %}}{{% endfor %}}{{{{ '-' * {MAX_ITEMS} }}}}",
        "{% for i in range(0, 10**9, 100000) %}{% endfor %}",  # 10,000 items
        "{{ 'x' * -1000000000 }}{% for i in range(10**9, 0) %}{% endfor %}",  # empty
        "{{ 'x' * 10**10**10 }}",  # not computed (no finding, and no hang)
        "{% macro range(n) %}{% endmacro %}{{ range(10**9) }}",  # a macro, not the global
        "{% for m in messages %}{% for i in range(1000) %}{% endfor %}{% endfor %}",  # the chat's size is not known
        "{{ '=' * (messages|length) }}",
        # Namespace values appended to, doubled a few times, doubled outside a loop, or a plain name (reset on
        # every run of the loop).
        "{% set ns = namespace(s='') %}{% for m in messages %}{% set ns.s = ns.s ~ m.content %}{% endfor %}",
        "{% set ns = namespace(s='') %}{% for m in messages %}{% set ns.s = ns.s if m.x else ns.s ~ m.y %}"
        "{% endfor %}",
        "{% set ns = namespace(s='x') %}{% for i in range(10) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "{% set ns = namespace(s='x') %}{% set ns.s = ns.s ~ ns.s %}",
        "{% set s = 'x' %}{% for m in messages %}{% set s = s ~ s %}{% endfor %}",
        # Recursion into nested data, under a condition: what tool-calling templates do.
        "{% macro f(x) %}{% if x.child %}{{ f(x.child) }}{% endif %}{% endmacro %}{{ f(messages) }}",
        "{% macro f(s) %}{% for k, v in s.properties.items() %}{{ f(v) }}{% endfor %}{% endmacro %}{{ f(tools) }}",
        "{% macro f(s) %}{% set i = s.items if s.items is defined else none %}{% if i %}{{ f(i) }}{% endif %}"
        "{% endmacro %}{{ f(tools) }}",
        "{% macro f(s) %}{% for t in s.type %}{{ f({'type': t}) }}{% endfor %}{% endmacro %}{{ f(tools) }}",
        # Macros calling macros without a cycle.
        "{% macro a(x) %}{{ x }}{% endmacro %}{% macro b(x) %}{{ a(x) }}{{ a(x) }}{% endmacro %}{{ b(1) }}",
    ],
)
def test_bounded_templates_pass(source: str) -> None:
    assert costs(source) == []


def test_a_doubling_namespace_really_doubles_in_jinja() -> None:
    """What the check assumes of Jinja's scoping: a namespace value carries over between runs, a name does not."""
    import jinja2

    env = jinja2.Environment()
    grow = "{% set ns = namespace(s='x') %}{% for i in range(12) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}"
    reset = "{% set s = 'x' %}{% for i in range(12) %}{% set s = s ~ s %}{% endfor %}{{ s }}"
    assert len(env.from_string(grow).render()) == 2**12
    assert len(env.from_string(reset).render()) == 1


def test_joined_constants_no_longer_than_the_template_pass() -> None:
    assert costs("{{ '" + "x" * 60_000 + "' ~ '" + "y" * 60_000 + "' }}") == []


@pytest.mark.parametrize(
    "source",
    [
        "{{ ('x'*64*64*64*64*64)|upper }}",  # 1 GiB; lower, upper and trim of it were all built (3 GB)
        "{{ ('x'*64*64*64*64)|replace('x', 'yyyy'*64*64) }}",  # 16 MiB, each character replaced by 16 KiB
        "{{ 'x'*64*64*64*64 ~ 'y'*64*64*64*64 }}",
        "{{ '%s%s' % ('x'*64*64*64*64, 'y') }}",
    ],
)
def test_strings_are_not_built_past_the_fold_limit(source: str) -> None:
    """The check folds constant strings to read the names a template builds (`'_'*2 ~ 'class'`); a 99-byte template
    made it build 3 GB (memory audit, #7). It builds none past FOLD_CHARS (16 MiB), and the cost is reported."""
    import tracemalloc

    tracemalloc.start()
    try:
        found = costs(source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20
    assert found and found[0].startswith("a string or list of")


@pytest.mark.parametrize(
    "source",
    [  # review 8: a 200 KB constant grown past 1 MiB by replace, then cut back and reversed into __class__
        "{{ x|attr((('" + "ab" * 200_000 + "')|replace('a', 'aaaaaaaa')|replace('a', '')|replace('b', '')"
        " ~ '__ssalc__')|reverse) }}",
        "{{ x[(('" + "ab" * 200_000 + "')|replace('a', 'aaaaaaaa')|replace('a', '')|replace('b', '') ~ '__ssalc__')"
        "|reverse] }}",
        # past FOLD_CHARS: not built, so it may be any name
        "{{ x|attr(('a'*64*64*64*64)|replace('a', 'aa')|replace('a', '') ~ 'items') }}",
        "{{ x[('a'*64*64*64*64)|replace('a', 'aa')|replace('a', '') ~ 'items'] }}",
        "{{ (('{0.x}'*64*64*64*64)|replace('x', 'xx')).format(x) }}",
    ],
)
def test_a_name_folded_past_a_long_string_is_private(source: str) -> None:
    """A name built through a long constant string is still read as the name it builds, and one past FOLD_CHARS,
    which is not built, is taken for a private one (WS-TPL-001 critical, as any private name)."""
    assert "template.dunder_access" in {issue.kind for issue in check_template(source)}


@pytest.mark.parametrize("path", RECURSIVE_REAL, ids=lambda p: p.name)
def test_real_recursive_templates_pass(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert "json_to_python_type(json_spec" in source  # recursive into the tool schema
    assert check_template(source) == []


def test_every_real_template_passes() -> None:
    assert [p.name for p in REAL if costs(p.read_text(encoding="utf-8"))] == []


def test_a_long_chain_of_macros_is_linear() -> None:
    chain = "".join(f"{{% macro m{i}() %}}{{{{ m{i + 1}() }}}}{{% endmacro %}}" for i in range(5000))
    assert costs(chain + "{% macro m5000() %}{% endmacro %}") == []
    assert costs(chain + "{% macro m5000() %}{{ m0() }}{% endmacro %}")


@pytest.mark.parametrize("path", REVIEW, ids=lambda p: p.stem)
def test_a_gguf_with_the_template_fails_the_cli(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = gguf_with_template(tmp_path / f"{path.stem}.gguf", path.read_text(encoding="utf-8"))
    assert main(["scan", "--format", "json", str(model)]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    found = [f for f in findings if f["rule_id"] == "WS-TPL-010"]
    assert [f["severity"] for f in found] == ["high"], findings
    assert "tokenizer.chat_template" in found[0]["message"]


def test_a_tokenizer_config_and_a_template_file_are_judged(tmp_path: Path) -> None:
    source = (DATA / "template_cost" / "string-mul.jinja").read_text(encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": source}), encoding="utf-8")
    (tmp_path / "chat_template.jinja").write_text(source, encoding="utf-8")
    report = scan(tmp_path)
    assert "WS-TPL-010" in rule_ids(report)
    assert len({f.location.path for f in report.findings if f.rule_id == "WS-TPL-010"}) == 2


# Review 45: shapes whose cost passed unjudged. Each is rendered small in transformers' own sandbox (the cost grows
# with the constant: width, runs, doublings), and its large form is reported.
GROWING = {
    "padding-in-a-loop": ("{% for i in range(N) %}{{ 'x'|center(99999) }}{% endfor %}", 3, 3 * 99999, 100000),
    "repetition-in-a-loop": ("{% for i in range(N) %}{{ 'x' * 99999 }}{% endfor %}", 3, 3 * 99999, 100000),
    "namespace-doubled-by-join": ("{% set ns = namespace(s='x') %}{% for i in range(N) %}"
                                  "{% set ns.s = [ns.s, ns.s]|join %}{% endfor %}{{ ns.s }}", 10, 1024, 64),
    "namespace-doubled-by-replace": ("{% set ns = namespace(s='x') %}{% for i in range(N) %}"
                                     "{% set ns.s = ns.s|replace('x', 'xx') %}{% endfor %}{{ ns.s }}", 10, 1024, 64),
    "namespace-doubled-by-format": ("{% set ns = namespace(s='x') %}{% for i in range(N) %}"
                                    "{% set ns.s = '%s%s'|format(ns.s, ns.s) %}{% endfor %}{{ ns.s }}", 10, 1024, 64),
    "percent-width": ("{{ '%Ns'|format('x') }}", 1000, 1000, 400_000_000),
    "percent-operator-width": ("{{ '%Nd' % 1 }}", 1000, 1000, 400_000_000),
    "percent-precision": ("{{ '%.Nf' % 1 }}", 1000, 1002, 400_000_000),
    "format-method-width": ("{{ '{:>N}'.format('x') }}", 1000, 1000, 400_000_000),
    "tab-expansion": ("{{ '\\t'.expandtabs(N) }}", 1000, 1000, 400_000_000),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(GROWING), ids=list(GROWING))
def test_growth_the_sandbox_allows_is_reported(shape: str) -> None:
    from transformers.utils.chat_template_utils import _compile_jinja_template

    template, small, length, large = GROWING[shape]
    rendered = _compile_jinja_template(template.replace("N", str(small))).render(messages=[])
    assert len(rendered) == length
    assert costs(template.replace("N", str(large)))
    assert not costs(template.replace("N", "2"))


BRANCHING = "{% macro f(s) %}x{% if s|length > 0 %}{{ f(s[1:]) }}{{ f(s[1:]) }}{% endif %}{% endmacro %}{{ f('TEXT') }}"


def test_a_macro_calling_itself_twice_on_slices_is_exponential() -> None:
    """Review 45: each level descends (a slice), so the recursion check passed it, but calls twice: 2^n calls."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    rendered = _compile_jinja_template(BRANCHING.replace("TEXT", "y" * 10)).render(messages=[])
    assert len(rendered) == 2**11 - 1  # one 'x' per call
    twice = "macro f calls itself 2 times a run on slices of its argument"
    assert costs(BRANCHING.replace("TEXT", "y" * 64)) == [twice]
    one_call_a_branch = BRANCHING.replace("{{ f(s[1:]) }}{{ f(s[1:]) }}", "{{ f(s[1:]) }}{% else %}{{ f(s[2:]) }}")
    assert costs(one_call_a_branch) == []
    in_a_loop = BRANCHING.replace("{{ f(s[1:]) }}{{ f(s[1:]) }}", "{% for c in s %}{{ f(s[1:]) }}{% endfor %}")
    assert costs(in_a_loop) == ["macro f calls itself in a loop on slices of its argument"]


def test_numbers_in_escaped_braces_are_no_width() -> None:
    """Review 47: a JSON number inside `{{ }}` of a str.format string is text, not a width (transformers renders it in
    milliseconds)."""
    source = "{{ 'Settings: {{\"max_new_tokens\": 131072}}, {0}% 100%% 400000000'.format(1) }}"
    from transformers.utils.chat_template_utils import _compile_jinja_template

    assert len(_compile_jinja_template(source).render(messages=[])) < 100
    assert costs(source) == []


# Review 47: cheap shapes that still made transformers' renderer build without bound, each passed by wscan. Each is
# rendered at two small sizes in transformers' own sandbox to show it grows (the output, or the namespace value's
# length it prints), and its large form is reported; at N=2 the shapes without a namespace pass.
GROWING_47 = {
    "repetition-in-constant-loops-inside-the-chat-loop": (
        "{% for m in messages %}{% for i in range(N) %}{{ 'x' * N }}{% endfor %}{% endfor %}", 99999),
    "repeated-string-printed-by-name": ("{% set big = 'x' * N %}{% for i in range(N) %}{{ big }}{% endfor %}", 99999),
    "percent-star-width": ("{{ '%*s'|format(N * 4000, 'x') }}", 99999),
    "format-nested-width": ("{{ '{:>{}}'.format('x', N * 4000) }}", 99999),
    "percent-mapping-key-width": ("{{ '%(a)Ns'|format(a='x') }}", 400_000_000),
    "width-joined-from-a-number": ("{{ ('%' ~ N * 4000 ~ 's')|format('x') }}", 99999),
    "tabs-expanded": ("{{ ('\\t' * N).expandtabs(N) }}", 99999),
    "lines-indented": ("{{ ('\\n' * N)|indent(N, blank=true) }}", 99999),
    "each-character-replaced": ("{{ ('x' * N)|replace('x', 'y' * N) }}", 99999),
    "namespace-doubled-by-format-fields": (
        "{% set ns = namespace(s='ab') %}{% for m in messages %}{% for i in range(N) %}"
        "{% set ns.s = '{0}{0}'.format(ns.s) %}{% endfor %}{% endfor %}{{ ns.s|length }}", 40),
    "namespace-doubled-by-mapping-keys": (
        "{% set ns = namespace(s='ab') %}{% for m in messages %}{% for i in range(N) %}"
        "{% set ns.s = '%(a)s%(a)s'|format(a=ns.s) %}{% endfor %}{% endfor %}{{ ns.s|length }}", 40),
    "namespaces-feeding-each-other": (
        "{% set ns = namespace(a='x', b='x') %}{% for m in messages %}{% for i in range(N) %}"
        "{% set ns.a = ns.a ~ ns.b %}{% set ns.b = ns.b ~ ns.a %}{% endfor %}{% endfor %}{{ ns.a|length }}", 40),
    "namespace-times-the-chat-length": (
        "{% set ns = namespace(s='ab') %}{% for m in messages %}{% for i in range(N) %}"
        "{% set ns.s = ns.s * (messages|length) %}{% endfor %}{% endfor %}{{ ns.s|length }}", 40),
    "namespace-doubled-by-the-replace-method": (
        "{% set ns = namespace(s='ab') %}{% for m in messages %}{% for i in range(N) %}"
        "{% set ns.s = ns.s.replace('a', 'aa').replace('b', 'bb') %}{% endfor %}{% endfor %}{{ ns.s|length }}", 40),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(GROWING_47), ids=list(GROWING_47))
def test_review_47_growth_is_reported(shape: str) -> None:
    from transformers.utils.chat_template_utils import _compile_jinja_template

    template, large = GROWING_47[shape]
    messages = [{"role": "user", "content": "hi"}] * 3

    def rendered(n: int) -> int:
        out = _compile_jinja_template(template.replace("N", str(n))).render(messages=messages)
        return int(out) if out.strip().isdigit() else len(out)

    assert rendered(2) < rendered(3) < rendered(4)
    assert costs(template.replace("N", str(large)))
    if "namespace" not in shape:  # a namespace value that grows in the chat loop does so at any N
        assert not costs(template.replace("N", "2"))


@pytest.mark.parametrize(
    "source",
    [
        # appending to namespace values, also to two that read each other once: linear, as real templates do
        "{% set ns = namespace(a='', b='') %}{% for m in messages %}{% set ns.a = ns.a ~ m.content %}"
        "{% set ns.b = ns.a ~ '\\n' %}{% endfor %}{{ ns.b }}",
        "{% set ns = namespace(t='', a='x', b='y') %}{% for m in messages %}{% set ns.t = ns.a %}{% set ns.a = ns.b %}"
        "{% set ns.b = ns.t %}{% endfor %}{{ ns.a }}",
        "{% set ns = namespace(s='') %}{% for m in messages %}{% set ns.s = '{}{}'.format(ns.s, m.content) %}"
        "{% endfor %}{{ ns.s }}",
        "{% for m in messages %}{{ m.content|indent(4) }}{{ '%-10s'|format(m.role) }}{{ m.content.replace('a', 'b') }}"
        "{% endfor %}{{ ('x' * 100)|indent(4) }}{{ '{:>{}}'.format('x', 8) }}",
    ],
)
def test_linear_namespace_use_and_small_growth_pass(source: str) -> None:
    assert costs(source) == []


LONG_PROMPT = "\\n".join(f"{i}. Always follow rule number {i}: be helpful, honest and harmless." for i in range(300))


@pytest.mark.parametrize(
    "source",
    [
        '{%- set prompt = "' + LONG_PROMPT + '" %}{{ prompt|indent(4) }}{% for m in messages %}{{ m }}{% endfor %}',
        '{%- set prompt = "' + LONG_PROMPT + '" %}{{ prompt|replace("\\n", "\\n> ") }}',
        '{{ "' + LONG_PROMPT + '"|indent(8, first=true) }}',
    ],
    ids=["indent", "replace", "indent-first"],
)
def test_a_long_prompt_indented_or_quoted_passes(source: str) -> None:
    """Review 48: a 20 KB default system prompt indented by 4 was taken for 20,000 lines (120,000 characters); its
    lines and matches are counted when its text is known."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    assert len(_compile_jinja_template(source).render(messages=[])) < 2 * len(LONG_PROMPT)
    assert costs(source) == []


def test_many_lines_indented_by_name_are_still_reported() -> None:
    assert costs("{% set s = '\\n' * 99999 %}{{ s|indent(99999) }}")


def test_a_width_too_long_to_convert_is_reported_not_a_crash() -> None:
    """Review 48: a width of 5,000 digits made int() raise (Python's 4,300-digit limit), failing the file."""
    expected = ["a string padded to 999,999,999,999,999,999 characters"]
    assert costs("{{ '%" + "9" * 5000 + "s'|format('x') }}") == expected


def test_a_long_prompt_joined_then_indented_passes() -> None:
    """Review 49: the prompt joined with `~` before `indent` was still taken for one line per character."""
    source = ('{%- set prompt = "' + LONG_PROMPT + '" %}{% set full = prompt ~ "\\n" ~ prompt %}'
              "{{ full|indent(4) }}{{ (prompt ~ '\\n' ~ prompt)|indent(2) }}")  # fmt: skip
    assert costs(source) == []
    assert costs("{% set s = '\\n' * 60000 %}{{ (s ~ s)|indent(99999) }}")  # many lines, joined: still reported


GROWING_51 = {
    "count-from-a-bool": ("{{ 'x' * (true * N) }}", 400_000_000),
    "count-from-a-float": ("{{ 'x' * ((N * 1.0)|int) }}", 400_000_000),
    "count-from-float-text": ("{{ 'x' * ('Ne0'|float|int) }}", 400_000_000),
    "count-through-abs": ("{{ 'x' * (N|abs) }}", 400_000_000),
    "count-picked-from-a-list": ("{{ 'x' * ([N]|first) }}", 400_000_000),
    "count-through-max": ("{{ 'x' * ([1, N]|max) }}", 400_000_000),
    "nested-loops-counted-by-a-bool": (
        "{% for i in range(N) %}{% for j in range(true * N) %}.{% endfor %}{% endfor %}", 99999),
    "joined-by-a-long-separator": ("{{ range(N)|join('x' * N) }}", 30000),
    "indented-json": ("{{ range(N)|list|tojson(indent=N) }}", 30000),
}  # fmt: skip


def test_a_power_folded_at_compile_time_is_reported() -> None:
    """Jinja's optimizer computes `9 ** 10**9` while transformers compiles the template (hours of CPU; 10**7 took
    9 s in review 51): a power of constants past MAX_POWER_BITS is reported, small ones pass."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    environment = _compile_jinja_template("x").environment
    code = environment.compile("{% if false %}{{ 9 ** 2000 }}{% endif %}", raw=True)
    assert str(9**2000) in code  # computed while compiling, in a branch that never renders
    assert costs("{% if (9 ** 1000000000) > 0 %}{{ '' }}{% endif %}")
    assert costs("{% set e = 10000000 %}{{ 7 ** e }}")
    assert not costs("{{ 2 ** 10 }}{{ 10 ** 6 }}{% if x ** 2 > 1 %}{% endif %}")


GROWING_52 = {
    "sum-of-a-list": ("{{ 'x' * ([N, N]|sum) }}", 400_000_000),
    "sum-of-a-range": ("{{ 'x' * (range(N)|sum) }}", 60000),
    "random-item": ("{{ 'x' * ([N]|random) }}", 400_000_000),
    "sorted-first": ("{{ 'x' * ([N]|sort|first) }}", 400_000_000),
    "number-as-text-then-int": ("{{ 'x' * (N|string|int) }}", 400_000_000),
    "formatted-then-int": ("{{ 'x' * ('%d'|format(N)|int) }}", 400_000_000),
    "joined-then-int": ("{{ 'x' * ([N]|join|int) }}", 400_000_000),
    "list-item": ("{{ 'x' * ([N][0]) }}", 400_000_000),
    "dict-item": ("{{ 'x' * ({'a': N}['a']) }}", 400_000_000),
    "loop-variable": ("{% for n in [N] %}{{ 'x' * n }}{% endfor %}", 400_000_000),
    "items-loop-value": ("{% for k, v in {'a': N}.items() %}{{ 'x' * v }}{% endfor %}", 400_000_000),
    "macro-argument": ("{% macro f(n) %}{{ 'x' * n }}{% endmacro %}{{ f(N) }}", 400_000_000),
    "namespace-attribute": ("{% set ns = namespace(n=N) %}{{ 'x' * ns.n }}", 400_000_000),
}  # fmt: skip


def test_names_taking_several_values_are_sized_by_the_largest() -> None:
    """A loop variable, macro parameter or namespace attribute is sized by the largest constant it takes (it reaches
    that one, whatever its other values are); small constants beside the chat's data pass."""
    assert costs("{% for n in [3, 400000000] %}{{ 'x' * n }}{% endfor %}")
    assert not costs("{% for n in [3, 4] %}{{ 'x' * n }}{% endfor %}")
    assert costs("{% macro f(n) %}{{ 'x' * n }}{% endmacro %}{{ f(2) }}{{ f(m) }}{{ f(400000000) }}")
    assert not costs("{% macro f(n) %}{{ 'x' * n }}{% endmacro %}{{ f(2) }}{{ f(m) }}")
    assert costs("{% set ns = namespace(n=2) %}{% set ns.n = 400000000 %}{{ 'x' * ns.n }}")
    assert not costs("{% set ns = namespace(n=2) %}{% set ns.n = ns.n + loop.index %}{{ 'x' * ns.n }}")


GROWING_53 = {
    "center-by-keyword": ("{{ 'x'|center(width=N) }}", 400_000_000),
    "conditional-count": ("{{ 'x' * (N if messages else 1) }}", 400_000_000),
    "default-count": ("{{ 'x' * (budget|default(N)) }}", 400_000_000),
    "dict-by-name": ("{% set d = {'n': N} %}{{ 'x' * d['n'] }}", 400_000_000),
    "dict-get": ("{{ 'x' * ({'n': N}.get('n')) }}", 400_000_000),
    "format-method": ("{{ 'x' * ('{}'.format(N)|int) }}", 400_000_000),
    "list-by-name": ("{% set l = [N] %}{{ 'x' * l[0] }}", 400_000_000),
    "tuple-unpacking-loop": ("{% for k, n in [('a', N)] %}{{ 'x' * n }}{% endfor %}", 400_000_000),
    "macro-default": ("{% macro pad(n=N) %}{{ 'x' * n }}{% endmacro %}{{ pad() }}", 400_000_000),
    "macro-keyword": ("{% macro pad(n) %}{{ 'x' * n }}{% endmacro %}{{ pad(n=N) }}", 400_000_000),
    "max-with-the-chat": ("{{ 'x' * ([N, messages|length]|max) }}", 400_000_000),
    "namespace-set-later": ("{% set ns = namespace(n=1) %}{% set ns.n = N %}{{ 'x' * ns.n }}", 400_000_000),
    "percent-operator": ("{{ 'x' * (('%d' % N)|int) }}", 400_000_000),
    "plus-the-chat-length": ("{{ 'x' * (N + messages|length) }}", 400_000_000),
    "set-block": ("{% set n %}N{% endset %}{{ 'x' * (n|int) }}", 400_000_000),
    "text-trimmed": ("{{ 'x' * (N|string|trim|int) }}", 400_000_000),
    "true-division": ("{{ 'x' * ((N * 2 / 2)|int) }}", 400_000_000),
    "with-block": ("{% with n = N %}{{ 'x' * n }}{% endwith %}", 400_000_000),
}  # fmt: skip


def test_a_long_string_dumped_as_json_with_an_indent_passes() -> None:
    """tojson's indent never applies to a string (review 53: a 43,540-character system prompt was taken for 130,497
    items)."""
    prompt = "You are a helpful assistant. " * 1500
    assert not costs("{% set p = '" + prompt + "' %}{{ p|tojson(indent=2) }}{{ tools|tojson(indent=4) }}")


COUNTS = {f"review-{n}-{name}": shape for n, shapes in ((51, GROWING_51), (52, GROWING_52), (53, GROWING_53))
          for name, shape in shapes.items()}  # fmt: skip


@pytest.mark.parametrize("shape", list(COUNTS), ids=list(COUNTS))
def test_counts_carried_to_a_repetition_are_reported(shape: str) -> None:
    """Reviews 51 to 53: a count written through a bool, a float or a filter, a long `join` separator or `tojson`
    indent; counts summed, picked, spelled out and read back; counts passed through loop variables, macro arguments
    (by position, keyword or default), namespace attributes, `set` and `with` blocks, conditionals and `|default`.
    Each built 1 to 2 billion characters in transformers' sandbox while wscan passed. Each grows with N when
    rendered there (small N), and is reported at the review's sizes; a name is sized by the largest constant it may
    take."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    template, large = COUNTS[shape]
    messages = [{"role": "user", "content": "hi"}]

    def rendered(n: int) -> int:
        return len(_compile_jinja_template(template.replace("N", str(n))).render(messages=messages))

    assert rendered(2) < rendered(3) < rendered(4)
    assert costs(template.replace("N", str(large)))
    assert not costs(template.replace("N", "3"))
