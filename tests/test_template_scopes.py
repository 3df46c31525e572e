"""Names a chat template binds are judged where Jinja's scoping makes them the template's own; elsewhere the same
name is the template global or the caller's variable. A binding that never runs (`{% for namespace in [] %}`)
or is out of scope no longer hides one."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import wscan
from wscan.chat_template import _ENV, check_template
from wscan.model import Severity
from wscan.template_scopes import context_reads

# Every name the template uses comes from a loop that never runs, so the checker took them all for the
# template's own; at render time they are the namespace global and the tokenizer's special tokens, which the
# model's own config sets (GGUF metadata, tokenizer_config.json).
SHADOWED = textwrap.dedent("""\
    {%- for namespace in [] %}{% endfor -%}
    {%- for bos_token, eos_token, unk_token in [] %}{% endfor -%}
    {{- namespace[bos_token][eos_token].os[unk_token]("touch MARKER_SCOPES").read() -}}
    {%- for message in messages %}{{ message.content }}{% endfor -%}
    """)
RENDER = """
import json, sys, jinja2
config = json.load(open(sys.argv[1], encoding="utf-8"))
env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)  # unsandboxed, as llama-cpp-python before 0.2.72
tokens = {k: v for k, v in config.items() if k.endswith("_token")}
print(env.from_string(config["chat_template"]).render(messages=[{"role": "user", "content": "hi"}], **tokens))
"""


def kinds(source: str) -> set[str]:
    return {issue.kind for issue in check_template(source)}


def test_a_template_with_shadowed_names_runs_code_in_plain_jinja_and_fails_the_scan(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    config = {"chat_template": SHADOWED, "bos_token": "__init__", "eos_token": "__globals__", "unk_token": "popen"}
    (model / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    rendered = subprocess.run([sys.executable, "-c", RENDER, str(model / "tokenizer_config.json")],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)  # fmt: skip
    assert (tmp_path / "MARKER_SCOPES").exists(), rendered.stderr[-500:]
    findings = wscan.scan([model]).findings
    assert max(f.severity for f in findings) >= Severity.HIGH
    assert {"WS-TPL-002", "WS-TPL-005"} <= {f.rule_id for f in findings}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{% for lipsum in [] %}{% endfor %}{{ lipsum.x }}",
         {"template.global_internals", "template.suspicious_name"}),
        ("{% if false %}{% set cycler = 1 %}{% endif %}{{ cycler[0] }}",
         {"template.global_internals", "template.suspicious_name"}),
        ("{% macro m(namespace) %}{{ namespace }}{% endmacro %}{{ namespace.x }}", {"template.global_internals"}),
        ("{% for self in [] %}{% endfor %}{{ self }}", {"template.suspicious_name"}),
        ("{% if messages %}{% set config = 1 %}{% endif %}{{ config }}", {"template.suspicious_name"}),
        ("{% for bos_token in [] %}{% endfor %}{{ messages[bos_token] }}", {"template.computed_attribute"}),
        ("{% with eos_token = 'a' %}{% endwith %}{{ messages[eos_token] }}", {"template.computed_attribute"}),
        ("{{ messages[k] }}{% set k = 'role' %}", {"template.computed_attribute"}),  # read before it is set
        ("{% if false %}{% set ns = namespace(k='a') %}{% endif %}{{ messages[ns.k] }}",
         {"template.computed_attribute"}),
    ],
)
def test_a_name_bound_where_it_does_not_reach_is_still_the_global(source: str, expected: set[str]) -> None:
    assert kinds(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "{% for self in messages %}{{ self.content }}{% endfor %}",
        "{% if messages %}{% set k = 'a' %}{% elif tools %}{% set k = 'b' %}{% else %}{% set k = 'c' %}{% endif %}"
        "{{ messages[0][k] }}",
        "{% set roles = {'user': 'U'} %}{% for m in messages %}{{ roles[m.role] }}{% endfor %}",
        "{% macro m(config) %}{{ config.x }}{% endmacro %}{{ m(messages) }}",
        "{% set k = 'role' %}{% macro m(x) %}{{ x[k] }}{% endmacro %}{{ m(messages[0]) }}",
        "{% for m in messages if m.role %}{{ m.content }}{% endfor %}",
        "{% set ns = namespace(k='a') %}{% for ns in [] %}{% endfor %}{{ messages[ns.k] }}",
        "{% call(item) loop_over(messages) %}{{ item.content }}{% endcall %}",
    ],
)
def test_names_bound_on_every_path_are_the_templates_own(source: str) -> None:
    assert check_template(source) == []


def test_nothing_in_the_template_is_evaluated_while_scopes_are_worked_out() -> None:
    # Jinja folds constant output at compile time; here that would never end (or take all memory).
    code = "from wscan.chat_template import check_template; print(check_template('{{ 9 ** 9 ** 9 ** 9 }}'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr[-500:]


def test_a_template_jinja_cannot_compile_falls_back_to_names_bound_anywhere() -> None:
    tree = _ENV.parse("{% block a %}{% endblock %}{% block a %}{% endblock %}")  # a block defined twice
    assert context_reads(tree, _ENV) is None
    assert kinds("{% block a %}{% endblock %}{% block a %}{% endblock %}{{ self }}") == {"template.suspicious_name"}


def test_filters_and_tests_this_jinja_lacks_do_not_stop_the_compile() -> None:
    tree = _ENV.parse("{% for lipsum in [] %}{% endfor %}{{ lipsum|no_such_filter }}{{ x is no_such_test }}")
    reads = context_reads(tree, _ENV)
    assert reads is not None and len(reads) == 2  # lipsum and x, both from the context


# A backdoor: inert for ordinary chats, but a user's message naming the way to os.popen runs a shell command in
# plain Jinja. Every key comes from the chat, which the checker trusts as keys; the call on what they found is
# what no real template does.
BACKDOOR = textwrap.dedent("""\
    {%- macro render(message) -%}{{ message.content }}{%- endmacro -%}
    {%- for message in messages -%}
    {%- set p = message.content.split('|') -%}
    {%- if p[0] == 'BD' -%}{{ render[p[1]][p[2]][p[3]][p[4]][p[5]][p[6]](p[7]).read() }}
    {%- else -%}{{ render(message) }}{%- endif -%}
    {%- endfor -%}
    """)
TRIGGER = "BD|_environment|globals|lipsum|__globals__|os|popen|touch MARKER_BACKDOOR"
RENDER_CHAT = """
import sys, jinja2
env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)  # unsandboxed, as llama-cpp-python before 0.2.72
print(env.from_string(open(sys.argv[1], encoding="utf-8").read()).render(
    messages=[{"role": "user", "content": sys.argv[2]}]))
"""


def test_a_template_calling_what_chat_keys_looked_up_is_a_backdoor_and_fails_the_scan(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "chat_template.jinja").write_text(BACKDOOR, encoding="utf-8")
    for content in ("hello", TRIGGER):
        rendered = subprocess.run([sys.executable, "-c", RENDER_CHAT, str(model / "chat_template.jinja"), content],
                                  capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)  # fmt: skip
        assert rendered.returncode == 0, rendered.stderr[-500:]
        assert (tmp_path / "MARKER_BACKDOOR").exists() == (content == TRIGGER)
    findings = wscan.scan([model]).findings
    assert {f.rule_id for f in findings if f.severity >= Severity.HIGH} == {"WS-TPL-009"}


@pytest.mark.parametrize(
    "source",
    [
        "{{ messages[k](1) }}",
        "{% set f = messages[0][key] %}{{ f() }}",
        "{% for f in tools[name] %}{{ f(1) }}{% endfor %}",
        "{{ (messages|attr(name))() }}",
        "{% macro m(g) %}{{ g(1) }}{% endmacro %}{{ m(tools[name]) }}",
        "{% set d = {'a': messages[k]} %}{{ d.a() }}",
        "{{ messages[0]['eval']|string }}{{ x.eval(1) }}",
    ],
)
def test_calling_a_looked_up_value_is_flagged(source: str) -> None:
    assert kinds(source) & {"template.computed_call", "template.dangerous_attribute"}


@pytest.mark.parametrize(
    "source",
    [
        "{% for m in messages %}{{ m.content.strip() }}{{ m['content'].split('x')|join }}{% endfor %}",
        "{% for tool in tools %}{% for name in tool.parameters.properties %}"
        "{{ tool.parameters.properties[name].get('type') }}{{ tool[name].items()|list }}{% endfor %}{% endfor %}",
        "{% set roles = {'user': 'U'} %}{{ roles[messages[0].role]|upper }}{{ raise_exception('x') }}",
        "{% macro m(x) %}{{ x }}{% endmacro %}{% set f = m %}{{ f(messages[0]) }}",
    ],
)
def test_methods_macros_and_globals_are_called_as_usual(source: str) -> None:
    assert check_template(source) == []
