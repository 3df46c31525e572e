"""The chat-template checker: real templates pass untouched, every escape shape is named, nothing crashes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wscan.chat_template import MAX_TEMPLATE_CHARS, check_template

REAL = Path(__file__).parent / "data" / "chat_templates"
REAL_TEMPLATES = sorted(REAL.glob("*.jinja"))


def kinds(source: str) -> set[str]:
    return {issue.kind for issue in check_template(source)}


def test_real_templates_are_present() -> None:
    # ChatML, Llama 3, Mistral, Gemma, Qwen and tool-calling families at least.
    assert len(REAL_TEMPLATES) >= 10


@pytest.mark.parametrize("path", REAL_TEMPLATES, ids=lambda p: p.name)
def test_real_template_passes(path: Path) -> None:
    assert check_template(path.read_text(encoding="utf-8")) == []


# Review 20: 304 more real templates (llama.cpp's, Ollama's GGUF templates, TRL, axolotl, unsloth, vLLM, Mistral's
# generator; sources in the folder's SOURCES.md), deduplicated against the ones above. Its four false positives pass
# now: guard models' documented render options are the caller's (below), and Jamba calls its own macros from a list
# by a counter (`macros_to_call[i](...)` for i in range(...)), which names no attribute.
MORE = sorted((Path(__file__).parent / "data" / "chat_templates_more").glob("*.jinja"))
GUARD_TEMPLATES = ["ollama__llama-guard3_1b.jinja", "ollama__granite3-guardian_2b.jinja",
                   "corpus__granite-guardian-3.1.jinja", "axolotl__jamba.jinja"]  # fmt: skip


def test_more_real_templates_are_present() -> None:
    assert len(MORE) >= 300
    assert set(GUARD_TEMPLATES) <= {p.name for p in MORE}


@pytest.mark.parametrize("path", MORE, ids=lambda p: p.name)
def test_more_real_templates_pass(path: Path) -> None:
    assert check_template(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ("{% for i in range(3) %}{{ x[i]() }}{% endfor %}", False),
        ("{% for i in range(n|length) %}{{ macros[i](*params[i]) }}{% endfor %}", False),
        ("{{ x[messages|length - 1]() }}", False),
        ("{% for m in messages %}{{ x[loop.index0]() }}{% endfor %}", False),
        ("{% set k = 0 %}{% set k = k + 1 %}{{ x[k]() }}", False),
        # A counter rebound to text, text repeated, a name from the context, text made of a number: names anything.
        ("{% for i in range(3) %}{% set i = 'popen' %}{{ x[i]() }}{% endfor %}", True),
        ("{% set k = 0 %}{% set k = k ~ 'popen' %}{{ x[k]() }}", True),
        ("{{ x['pop' * 1]() }}", True),
        ("{{ x[n]() }}", True),
        ("{% for i in range(2) %}{{ x[i|string]() }}{% endfor %}", True),
        ("{% for i in range(3) %}{% endfor %}{{ x[i]() }}", True),  # past the loop, `i` is the caller's
        ("{% set range = ['popen'] %}{% for i in range %}{{ x[i]() }}{% endfor %}", True),
        ("{% set loop = {'index': 'popen'} %}{{ x[loop.index]() }}", True),
        ("{% macro f(i) %}{{ x[i]() }}{% endmacro %}{{ f(1) }}", True),  # parameters take any call's values
        ("{{ x['x'|int]() }}", False),
        ("{{ x['x'|int(0)]() }}", False),
        # int and float give their default when the value does not convert (review 22): the user's text here
        ("{% for m in messages %}{{ m.content['x'|int(m.content)]() }}{% endfor %}", True),
        ("{{ x['x'|float(default=n)]() }}", True),
        # Review 23: a default spread from a list or dict, `caller` called through another name, a macro's name
        ("{{ x['x'|int(*[bos_token])]() }}", True),
        ("{{ x['x'|float(**{'default': bos_token})]() }}", True),
        ("{% set k = 0 %}{% macro m() %}{% set c = caller %}{{ c(bos_token) }}{% endmacro %}"
         "{% call(k) m() %}{{ x[k]() }}{% endcall %}", True),
    ],
)
def test_a_number_as_key_names_no_attribute(source: str, flagged: bool) -> None:
    """`x[k](...)` calls whatever the key picks, attributes included (a string key Jinja falls back to getattr with);
    a key that is certainly a number picks an item only."""
    assert ("template.computed_call" in {issue.kind for issue in check_template(source)}) is flagged


def test_many_issues_of_one_kind_never_hide_another() -> None:
    """Issues were kept up to fifty in all: fifty computed calls (high, each on its own name) hid a dunder (critical)
    after them. The cap is per kind."""
    calls = "".join(f"{{% set x{i} = messages %}}{{{{ x{i}[messages[0].content]() }}}}" for i in range(60))
    kinds = [issue.kind for issue in check_template(calls + "{{ messages.__class__ }}")]
    assert "template.dunder_access" in kinds
    assert kinds.count("template.computed_call") == 50


def test_an_int_filters_default_is_the_users_text() -> None:
    """Review 22, in transformers' own sandbox: `'x'|int(text)` is `text`, so a user's message picks the method the
    template calls; and a default can spell a dunder key (which passed before the counters were numbers too)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    source = "{% for m in messages %}{{ m.content[('x'|int(m.content))]() }}{% endfor %}"
    assert ImmutableSandboxedEnvironment().from_string(source).render(messages=[{"content": "upper"}]) == "UPPER"
    assert "template.computed_call" in {issue.kind for issue in check_template(source)}
    assert "template.dunder_access" in {issue.kind for issue in check_template("{{ y['x'|int('__class__')] }}")}


def test_a_dict_filled_by_update_holds_what_it_was_given() -> None:
    """Review 23: `n.update({'k': '__class__'})` then `x[n.k]`, under an Environment that allows the call."""
    source = ("{%- set u = '%c'|format(95) -%}{%- set n = {} -%}"
              "{%- set _ = n.update({'k': u ~ u ~ 'class' ~ u ~ u}) -%}{{ messages[0].content[n.k] }}")  # fmt: skip
    assert "template.computed_attribute" in {issue.kind for issue in check_template(source)}


def test_guard_models_render_options_are_the_callers() -> None:
    """Llama Guard 3's `categories` and `excluded_category_keys` and Granite Guardian's `guardian_config` are passed
    by the caller (`apply_chat_template(..., guardian_config=...)`), like `messages`; set by a tokenizer config's
    extra_special_tokens they are still WS-TPL-011 (tests/scanners/test_repo_files.py)."""
    assert check_template("{% for key in categories %}{{ categories[key] }}{% endfor %}") == []
    assert check_template("{{ bank[guardian_config['risk_name']] }}") == []
    assert {i.kind for i in check_template("{{ x[some_option] }}")} == {"template.computed_attribute"}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # CVE-2024-34359 (llama-cpp-python) style: from a string literal up to os.
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", {"template.dunder_access"}),
        ("{{ x['__globals__'] }}", {"template.dunder_access"}),
        ("{{ x|attr('__class__') }}", {"template.dunder_access"}),
        ("{{ messages|map(attribute='__class__')|list }}", {"template.dunder_access"}),
        ("{{ messages|map(attribute='content.__class__')|list }}", {"template.dunder_access"}),
        ("{{ '{0.__class__}'.format(messages) }}", {"template.dunder_access"}),
        ("{{ x['__cla' ~ 'ss__'] }}", {"template.computed_attribute", "template.dunder_access"}),
        ("{{ x[['__cl', 'ass__']|join] }}", {"template.computed_attribute", "template.dunder_access"}),
        ("{{ x['__ssalc__'|reverse] }}", {"template.computed_attribute", "template.dunder_access"}),
        ("{{ x|attr(messages[0].content) }}", {"template.computed_attribute"}),
        ("{{ namespace.__init__ }}", {"template.dunder_access", "template.global_internals"}),
        # Review 22: keys spelled at render time, from names set earlier (ran os.popen in an unsandboxed renderer).
        ('{%- set u = "%c" | format(95) -%}{%- set uu = u ~ u -%}{%- set ki = uu ~ "init" ~ uu -%}'
         '{%- set kg = uu ~ "globals" ~ uu -%}{%- set g = namespace[ki][kg] -%}',
         {"template.computed_attribute", "template.global_internals"}),
        ('{% set u = "%c"|format(95) %}{% set k = u ~ u ~ "class" ~ u ~ u %}{{ messages[k] }}',
         {"template.computed_attribute"}),
        ('{{ messages["%c%cclass%c%c"|format(95, 95, 95, 95)] }}',
         {"template.computed_attribute", "template.dunder_access"}),
        ('{{ messages["%c%cclass%c%c" % (95, 95, 95, 95)] }}',
         {"template.computed_attribute", "template.dunder_access"}),
        ("{% macro u() %}_{% endmacro %}{{ messages[u() ~ u() ~ 'class' ~ u() ~ u()] }}",
         {"template.computed_attribute"}),
        ('{% set k %}{{ "%c"|format(95) }}{% endset %}{{ messages[k] }}', {"template.computed_attribute"}),
        ("{% set ns = namespace(k='') %}{% set ns.k = '_' ~ '_class__' %}{{ messages[ns.k] }}",
         {"template.computed_attribute", "template.dunder_access"}),
        ("{% for k in ['_' ~ '_class__'] %}{{ messages[k] }}{% endfor %}",
         {"template.computed_attribute", "template.dunder_access"}),
        ("{% set a = 'x_y'|list %}{% set u = a[1] %}{{ messages[u ~ u] }}", {"template.computed_attribute"}),
        ("{{ namespace[messages[0].content] }}", {"template.global_internals"}),
        # Review 53: a table the template writes out, looked up by a key it does not choose (a config value, a macro
        # parameter), reads its own entries (four real templates). What is taken from such a lookup is judged on.
        ("{% set d = {'a': 1} %}{{ d[adapter_name] }}{{ ['a'][adapter_name] }}", set()),
        ("{% macro m(k) %}{% set d = {'a': 1} %}{{ d[k] }}{% endmacro %}{{ m(adapter_name) }}", set()),
        ("{% set d = {'a': 1} %}{{ d[adapter_name][adapter_name] }}", {"template.computed_attribute"}),
        ("{% set d = {'a': 1} %}{% set c = d[adapter_name] %}{{ c[adapter_name] }}", {"template.computed_attribute"}),
        ("{% set d = {'a': 1} %}{% set t = {'x': d[k]} %}{{ t.x[k] }}", {"template.computed_attribute"}),
        ("{% set d = {'a': 1} %}{{ d[k]|attr(k) }}", {"template.computed_attribute"}),
        ("{% set d = {'a': 1} %}{{ d[k](1) }}", {"template.computed_call"}),
        ("{% set d = {'a': 1} %}{{ d[k].mro() }}", {"template.computed_call", "template.dangerous_attribute"}),
        ("{% set d = {'a': 1} %}{{ d['__cla' ~ 'ss__'] }}", {"template.computed_attribute", "template.dunder_access"}),
        # A macro that reads `caller` takes it from a call's `caller=` keyword (review 54): what it calls was looked up.
        ("{% macro run(c) %}{{ caller(c) }}{% endmacro %}{% set d = {} %}{{ run('x', caller=d[k]) }}",
         {"template.computed_call"}),
        ("{% macro run(c) %}{{ caller(c) }}{% endmacro %}{% call run('x') %}y{% endcall %}", set()),
        # ... and only a name never bound to anything else is such a table.
        ("{% set d = {'a': 1} %}{% set d = messages %}{{ d[adapter_name] }}", {"template.computed_attribute"}),
        ("{% for d in [{'a': 1}] %}{{ d[adapter_name] }}{% endfor %}", {"template.computed_attribute"}),
        ("{% macro m(d) %}{{ d[adapter_name] }}{% endmacro %}{% set d = {} %}{{ m(d) }}",
         {"template.computed_attribute"}),
        ("{{ x['%99999999s'|format('a')] }}", {"template.computed_attribute", "template.render_cost"}),  # never built
        # What real templates index with: loop variables, numbers, slices.
        ("{% for tool in tools %}{% for key in tool.parameters.properties %}{{ tool.parameters.properties[key] }}"
         "{% endfor %}{% endfor %}", set()),
        ("{{ messages[loop.index0 + 1] }}{{ messages[-1] }}{{ messages[1:] }}", set()),
        ("{% set last = messages|length - 1 %}{{ messages[last] }}", set()),
        ("{{ range.x }}", {"template.global_internals"}),
        ("{{ messages.popen }}", {"template.dangerous_attribute"}),
        ("{{ messages.environ }}", {"template.dangerous_attribute"}),
        ("{{ lipsum() }}", {"template.suspicious_name"}),
        ("{{ self }}", {"template.suspicious_name"}),
        ("{{ config.items() }}", {"template.suspicious_name"}),
        ("{{ joiner() }}{{ cycler(1, 2) }}", {"template.suspicious_name"}),
        ("{% include 'other.jinja' %}", {"template.loader_tag"}),
        ("{% import 'macros.jinja' as m %}", {"template.loader_tag"}),
        ("{% from 'macros.jinja' import x %}", {"template.loader_tag"}),
        ("{% extends 'base.jinja' %}", {"template.loader_tag"}),
        ("{% for m in messages %}{{ m.content }}", {"template.malformed"}),
        ("{% do messages.append(1) %}", {"template.malformed"}),  # transformers does not enable `do`
    ],
)
def test_escape_shapes(source: str, expected: set[str]) -> None:
    assert kinds(source) == expected


def test_full_escape_names_every_step() -> None:
    issues = check_template("{{ cycler.__init__.__globals__.os.popen('id').read() }}")
    names = {(i.kind, i.attrs["name"]) for i in issues}
    assert ("template.global_internals", "cycler.__init__") in names
    assert ("template.dunder_access", "__globals__") in names
    assert ("template.dangerous_attribute", "popen") in names
    assert all(i.attrs["line"] == 1 for i in issues)


def test_names_the_template_binds_itself_are_not_suspicious() -> None:
    source = "{% set config = namespace(x=1) %}{% for self in messages %}{{ self.content }}{% endfor %}{{ config.x }}"
    assert check_template(source) == []


def test_transformers_generation_block_parses() -> None:
    source = "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}"
    assert check_template(source) == []
    assert kinds("{% generation %}{{ m.__class__ }}{% endgeneration %}") == {"template.dunder_access"}


def test_loop_controls_parse() -> None:
    assert check_template("{% for m in messages %}{% if loop.first %}{% continue %}{% endif %}{% break %}"
                          "{% endfor %}") == []


def test_line_numbers() -> None:
    (issue,) = check_template("line one\n\n{{ x.__class__ }}")
    assert issue.attrs["line"] == 3


def test_oversized_template_is_not_parsed() -> None:
    assert kinds("x" * (MAX_TEMPLATE_CHARS + 1)) == {"template.size_limit"}


def test_deep_nesting_is_a_finding_not_a_crash() -> None:
    """Past the stack the checker parses with, a template is over the limit (high), never merely malformed:
    renderers parse with a shallower stack in use and so deeper (review 24 hid an escape behind 128 minus signs)."""
    deep = "{{ " + "(" * 50_000 + "1" + ")" * 50_000 + " }}"
    assert kinds(deep) == {"template.node_limit"}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("{}%#()[]'\"|._~ abcdefgilmnoprstx-+\n")), max_size=200))
def test_arbitrary_text_never_raises(source: str) -> None:
    for issue in check_template(source):
        assert issue.kind.startswith("template.")


ALIASED_NAMES = {
    "string-multiplied": "{{ ''['_'*2~'class'~'_'*2] }}",
    "loop-variable": "{% for k in ['__class__'] %}{{ ''[k] }}{% endfor %}",
    "macro-argument": "{% macro g(o,a) %}{{ o[a] }}{% endmacro %}{{ g('', '__class__') }}",
    "slice": "{{ ''['x__class__'[1:]] }}",
    "format": "{{ ''['%sclass%s'|format('__','__')] }}",
    "escape-filter": "{{ ''['__class__'|e] }}",
    "dict-value": "{% set d = {'k': '__class__'} %}{{ ''[d.k] }}",
    "namespace": "{% set ns = namespace(k='__class__') %}{{ ''[ns.k] }}",
    "selectattr": "{{ ['']|selectattr('__class__')|list }}",
    "map-attr": "{{ ['']|map('attr','__class__')|list }}",
    "map-attribute-variable": "{% set c = '__class__' %}{{ ['']|map(attribute=c)|list }}",
}


@pytest.mark.parametrize("source", list(ALIASED_NAMES.values()), ids=list(ALIASED_NAMES))
def test_internal_names_kept_anywhere_are_found(source: str) -> None:
    """A review reached `os.system` with plain Jinja through names kept in variables, macro arguments, namespaces
    or filter arguments, none of them a constant subscript: any string naming Python's internals is a finding."""
    assert "template.dunder_access" in {issue.kind for issue in check_template(source)}


def test_a_name_chain_too_long_to_follow_counts_as_built() -> None:
    """Each {% set %} below takes its value from the next one, so the underscore reaches v1 only after one round
    per link; past the rounds the checker follows, every name may be anything (fail closed)."""
    links = 30
    source = "{% set v0 = '_' %}" + "".join(f"{{% set v{i} = v{i + 1} ~ 'x' %}}" for i in range(1, links))
    source += f"{{% set v{links} = v0 %}}{{{{ messages[v1] }}}}"
    assert kinds(source) == {"template.computed_attribute"}
    short = "{% set v0 = '_' %}{% set v2 = v0 %}{% set v1 = v2 ~ 'x' %}{{ messages[v1] }}"
    assert kinds(short) == {"template.computed_attribute"}
    assert kinds("{% set v0 = '_' %}{% set v1 = 'a' ~ v0 %}{{ messages[v1] }}") == set()  # starts with a


# Review 45: a generator's frame leads to a module's globals with no underscore in any name. Each spelling, rendered
# by a plain jinja2.Environment as llama-cpp-python rendered GGUF templates before 0.2.72 (CVE-2024-34359), reads a
# module's globals; the last ones reach `os` (getcwd, environ).
GENERATOR = "messages|map(attribute='role')"
FRAME_ESCAPES = {
    "attr-filter": "{{ (" + GENERATOR + ")|attr('gi_frame')|attr('f_globals')|length }}",
    "subscripts": "{{ (" + GENERATOR + ")['gi_frame']['f_globals']['t']['sys']['modules']['os']['getcwd']() }}",
    "map-attribute": "{{ [" + GENERATOR + "]|map(attribute='gi_frame.f_globals')|first|length }}",
    "attributes": "{{ (" + GENERATOR + ").gi_frame.f_globals|length }}",
    "format-field": "{{ '{0.gi_frame.f_globals[t].sys.modules[os].environ[HOME]}'.format(" + GENERATOR + ") }}",
    "format-in-prose-via-attr": "{{ ('at {0.gi_frame.f_globals[t].sys.modules[os].environ[HOME]} now'|attr('format'))("
    + GENERATOR + ") }}",
    "built-name": "{{ (" + GENERATOR + ")['gi_fr' ~ 'ame']['f_glo' ~ 'bals']|length }}",
}


@pytest.mark.parametrize("source", list(FRAME_ESCAPES.values()), ids=list(FRAME_ESCAPES))
def test_a_generators_frame_is_an_escape_however_spelled(source: str) -> None:
    import os

    from jinja2 import Environment

    rendered = Environment().from_string(source).render(messages=[{"role": "user", "content": "hi"}])
    reached = (os.getcwd(), os.environ.get("HOME", "\0"))  # Python's internals: a count of globals, a folder
    assert rendered.isdigit() or any(text in rendered for text in reached)
    found = {(issue.kind, issue.attrs["name"]) for issue in check_template(source)}
    assert ("template.dunder_access", "gi_frame") in found


def test_frame_names_in_prose_and_chat_keys_are_not_escapes() -> None:
    """The names only count as names: a word that contains them, or prose around a plain field, is text."""
    assert check_template("{{ 'see the big_frame and f_globalsy, {0} and {name}'.format(x, name=y) }}") == []
    assert check_template("{{ message['system'] }}{{ roles['tool_calls'] }}") == []


def test_a_call_at_the_end_of_a_long_chain_keeps_the_templates_other_findings() -> None:
    """Review 45: naming the callee of `messages.a.a....a()` (1,000 links, which Jinja parses) recursed once per link;
    the RecursionError failed the file as unreadable (high) and its critical cycler walk went unreported."""
    from jinja2 import Environment

    source = "{{ cycler.__init__.__globals__.os.popen('id').read() }}{{ messages" + ".a" * 1000 + "() }}"
    Environment().parse(source)
    found = {(issue.kind, str(issue.attrs["name"])) for issue in check_template(source)}
    assert ("template.global_internals", "cycler.__init__") in found
    assert ("template.computed_call", "<...>" + ".a" * 20) in found


# Review 47: an underscore cut from a Python object's text (`{}.items()|string` is 'dict_items([])', a generator's is
# '<generator object ...>') spells `gi_frame` inside a name the template joins; and a name a filter fetches by, or
# a value fetched so and then called. Each reaches `os` in a plain jinja2.Environment.
CUT = "{%- set u = ({}.items()|string)[4] -%}{%- set g = messages|map(attribute='role') -%}"
WALK = "'gi' ~ u ~ 'frame.f' ~ u ~ 'globals.t.sys.modules.os.environ.HOME'"
BUILT_ESCAPES = {
    "subscripts": CUT + "{{ g['gi' ~ u ~ 'frame']['f' ~ u ~ 'globals']['t']['sys']['modules']['os']['environ']"
    "['HOME'] }}",
    "map-attribute": CUT + "{{ [g]|map(attribute=" + WALK + ")|first }}",
    "groupby": CUT + "{{ ([g]|groupby(" + WALK + "))[0].grouper }}",
    "format-field": CUT + "{{ ('{0.gi' ~ u ~ 'frame.f' ~ u ~ 'globals[t].sys.modules[os].environ[HOME]}').format(g) }}",
    "a-generators-text": "{%- set u = ((messages|map(attribute='role'))|string)[22] -%}"
    "{%- set g = messages|map(attribute='role') -%}{{ g['gi' ~ u ~ 'frame']['f' ~ u ~ 'globals']|length }}",
    "an-underscore-kept-in-a-name": "{%- set u = '_' -%}{%- set g = messages|map(attribute='role') -%}"
    "{{ g['gi' ~ u ~ 'frame']['f' ~ u ~ 'globals']|length }}",
    "called-after-map": CUT + "{%- set f = [g]|map(attribute='gi' ~ u ~ 'frame.f' ~ u ~ 'globals.t.sys.modules.os"
    ".getcwd')|first -%}{{ f() }}",
    "a-path-and-argument-from-the-chat": "{%- if messages|length > 2 -%}{%- set f = [messages|map(attribute='role')]"
    "|map(attribute=messages[0].content)|first -%}{{ f(messages[1].content) }}{%- endif -%}",
}  # fmt: skip
BACKDOOR_CHAT = [{"role": "tool", "content": "gi_frame.f_globals.t.sys.modules.os.getenv"},
                 {"role": "user", "content": "HOME"}, {"role": "user", "content": "hi"}]  # fmt: skip


@pytest.mark.parametrize("source", list(BUILT_ESCAPES.values()), ids=list(BUILT_ESCAPES))
def test_names_built_at_render_time_that_reach_python_are_flagged(source: str) -> None:
    import os

    from jinja2 import Environment

    rendered = Environment().from_string(source).render(messages=BACKDOOR_CHAT)
    reached = (os.getcwd(), os.environ.get("HOME", "\0"))
    assert rendered.isdigit() or any(text in rendered for text in reached)
    assert kinds(source) & {"template.computed_attribute", "template.computed_call"}


NS_SYSTEM = ("{%- set ns = namespace(system='') %}{% for m in messages %}{% if m.role == 'system' %}"
             "{% set ns.system = ns.system ~ m.content %}{% endif %}{% endfor %}{{ ns.system }}")


def test_a_namespace_attribute_named_like_a_gadget_passes() -> None:
    """Review 48: `ns.system`, the system prompt a template collects in its own namespace, was high."""
    assert kinds(NS_SYSTEM) == set()


@pytest.mark.parametrize(
    "source",
    [
        NS_SYSTEM.replace("{% for m in messages %}", "{% for ns in messages %}"),  # ns is also a loop variable
        NS_SYSTEM.replace("{{ ns.system }}", "{{ messages.system }}"),  # another object's attribute
        "{% set namespace = cycler %}" + NS_SYSTEM,  # namespace itself rebound
    ],
    ids=["rebound-by-a-loop", "another-object", "namespace-rebound"],
)
def test_gadget_attributes_of_anything_else_stay_high(source: str) -> None:
    assert "template.dangerous_attribute" in kinds(source)


# Review 54: `caller` set once to a dict looked like a table the template writes out, but a macro that reads `caller`
# takes it from any call's `caller=` keyword: passed a macro, `caller[k]` reached its __init__, then jinja2.runtime's
# globals and os.popen in an unsandboxed renderer. The last call went through a namespace attribute set to a lookup.
HOP = ("{% set caller = {} %}{% set u = '%c'|format(range(95)|length) %}{% set ns = namespace(v=none) %}"
       "{% macro hop(ns, k) %}{% set ns.v = caller[k] %}{% endmacro %}"
       "{{ hop(ns, u ~ u ~ 'init' ~ u ~ u, caller=hop) }}{{ hop(ns, u ~ u ~ 'globals' ~ u ~ u, caller=ns.v) }}")


def test_a_table_named_like_jinjas_own_bindings_is_no_table() -> None:
    import jinja2

    reached = jinja2.Environment().from_string(HOP + "{{ ns.v['sys']['modules']['os']['popen'].__module__ }}").render()
    assert reached.strip() == "os"  # os.popen within reach of the next call
    run = HOP + "{{ ns.v['sys']['modules']['os']['popen']('id').read() }}"
    assert {"template.computed_attribute", "template.computed_call"} <= {i.kind for i in check_template(run)}
    key = "{% set u = '%c'|format(range(95)|length) %}{% set K = u ~ u ~ 'init' ~ u ~ u %}"
    for source in (
        key + "{% set loop = [] %}{% for x in [1] %}{{ loop[K] }}{% endfor %}",
        key + "{% set caller = [] %}{% macro m() %}{{ caller[K] }}{% endmacro %}{% call m() %}x{% endcall %}",
        key + "{% set varargs = [] %}{% macro m() %}{{ varargs[K] }}{% endmacro %}{{ m(1) }}",
        key + "{% if false %}{% set d = {} %}{% endif %}{{ d[K] }}",  # d may come from the render context
    ):
        assert "template.computed_attribute" in {i.kind for i in check_template(source)}, source


# Review 57: an underscore cut from the text of a list of objects, and looked-up values laundered through
# namespace({...}), default() or dict(**...), or str.format kept to call later, reached os.popen unsandboxed.
U57 = "{% set u = ([{}.items()]|join)[4] %}{% macro m() %}{% endmacro %}"
G57 = "m[u~u~'init'~u~u][u~u~'globals'~u~u]['sys']['modules']"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (U57 + "{{ " + G57 + "['shutil'].copy('a', 'b') }}", "template.computed_attribute"),
        (U57 + "{% set ns = namespace({'run': " + G57 + "['os']['popen']}) %}{{ ns.run('id') }}",
         "template.computed_call"),
        ("{% set ns = namespace({'run': x[k]}) %}{{ ns.run('id') }}", "template.computed_call"),
        ("{% set f = none|default(x[k], true) %}{{ f('id') }}", "template.computed_call"),
        ("{% set d = dict(**{'f': x[k]}) %}{{ d.f('id') }}", "template.computed_call"),
        ("{% set fs = '{0.x}' %}{% set ns = namespace({'f': fs.format}) %}{{ ns.f(m) }}",
         "template.computed_attribute"),
        # Review 58: a call hands back what it is given, so calling its result calls the looked-up value
        ("{% for i in [1] %}{{ loop.cycle(x[k])('id') }}{% endfor %}", "template.computed_call"),
        ("{{ cycler(x[k]).next()('id') }}", "template.computed_call"),
        ("{% set d = {} %}{{ d.get('a', x[k])('id') }}", "template.computed_call"),
        ("{% set f = loop.cycle(x[k]) %}{{ f('id') }}", "template.computed_call"),
    ],
    ids=["join-underscore", "namespace-dict-popen", "namespace-dict", "default", "dict-kwargs", "format-kept",
         "loop-cycle", "cycler-next", "dict-get-default", "cycle-kept"],
)
def test_values_laundered_through_containers_are_judged(source: str, expected: str) -> None:
    assert expected in {i.kind for i in check_template(source)}


def test_the_underscore_cut_from_a_joined_list_of_objects_is_real() -> None:
    import jinja2

    assert jinja2.Environment().from_string("{{ ([{}.items()]|join)[4] }}").render() == "_"
    assert check_template("{{ '{0}'.format(x) }}{{ messages[0].content.format_map(d) }}") == []  # calls pass
