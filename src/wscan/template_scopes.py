"""Which names in a chat template are read from the render context, by Jinja's own scoping rules.

A name the template binds somewhere (`{% for lipsum in [] %}`, `{% if false %}{% set cycler = 1 %}{% endif %}`)
is still the template global, or the caller's variable, wherever that binding is out of scope or may not have run.
Two questions decide it:

- Jinja's own scoping: while compiling, each frame's symbols say whether a name's reference starts as a
  parameter, an alias of an outer one, or `resolve(name)` from the context. Jinja's code generator is run over the
  parsed tree and asked, name by name; its Python source is thrown away, never compiled or run. Constant
  folding, the one place the generator evaluates template expressions (`{{ 9 ** 9 ** 9 }}`), is switched off.
- Whether a binding certainly ran first: Jinja starts a reference at `resolve` even when every branch of an
  `if`/`else` sets it (it counts the missing `elif` as a branch), so real templates that set `system_message` on
  both sides would seem to read the context. A load is the template's own when, on every path to it, a binding
  of that name in a scope it sees came before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jinja2 import Environment, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import TemplateError
from jinja2.idtracking import VAR_LOAD_ALIAS, VAR_LOAD_RESOLVE, Symbols

from wscan.template_keys import target_names

MAX_ALIASES = 256  # of one chain of frames; Jinja nests one frame per block, loop, macro or call


def context_reads(tree: nodes.Template, environment: Environment) -> set[int] | None:
    """The ids of the Name nodes (ctx load) that may take their value from the render context; None when Jinja
    cannot compile the template (then no renderer using Jinja can render it either)."""
    compiling = environment.overlay()  # its own filter and test tables, which the recorder adds names to
    compiling.filters = dict(environment.filters)
    compiling.tests = dict(environment.tests)
    generator = _Recorder(compiling, "<chat template>", None, optimized=False)
    try:
        generator.visit(tree)
        assigned: set[int] = set()
        _statements(tree.body, set(), assigned)
    except (TemplateError, RecursionError, AssertionError, LookupError, TypeError, ValueError):
        return None
    return generator.reads - assigned


class _Recorder(CodeGenerator):
    """Jinja's code generator, noting for each name it loads whether the reference resolves from the context."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads: set[int] = set()

    def visit_Name(self, node: nodes.Name, frame: Frame) -> None:
        # `self` (the template's reference to its own blocks) is given by the generator, not by the template
        if node.ctx == "load" and (node.name == "self" or _from_context(frame.symbols, node.name)):
            self.reads.add(id(node))
        super().visit_Name(node, frame)

    def visit_Filter(self, node: nodes.Filter, frame: Frame) -> None:
        self.environment.filters.setdefault(node.name, _unknown)
        super().visit_Filter(node, frame)

    def visit_Test(self, node: nodes.Test, frame: Frame) -> None:
        self.environment.tests.setdefault(node.name, _unknown)
        super().visit_Test(node, frame)

    def _output_child_to_const(self, node: nodes.Expr, frame: Frame, finalize: Any) -> str:
        raise nodes.Impossible  # Jinja would evaluate a constant expression here; nothing is evaluated


def _from_context(symbols: Symbols, name: str) -> bool:
    """Whether the name's reference may start as `resolve(name)`: directly, or through aliases of outer frames."""
    ref = symbols.find_ref(name)
    for _ in range(MAX_ALIASES):
        load = symbols.find_load(ref) if ref is not None else (VAR_LOAD_RESOLVE, name)
        if load is None or load[0] != VAR_LOAD_ALIAS:
            return load is not None and load[0] == VAR_LOAD_RESOLVE
        ref = load[1]
    return True


def _unknown(*args: Any, **kwargs: Any) -> None:
    """Stands in for a filter or test this Jinja does not have (renderers add their own); never called."""


def _statements(body: list[nodes.Node], assigned: set[str], found: set[int]) -> set[str]:
    """Walk statements in order, adding to `found` the loads of names certainly bound before them; the names
    they certainly bind are added to `assigned` and returned (those not in it already)."""
    added: set[str] = set()
    for node in body:
        added |= _statement(node, assigned, found)
    return added


def _scope(body: list[nodes.Node], assigned: set[str], found: set[int], bound: Iterable[str] = ()) -> None:
    """A nested scope, with `bound` (loop targets, parameters) bound in it: its bindings end with it."""
    added = set(bound) - assigned
    assigned |= added
    added |= _statements(body, assigned, found)
    assigned -= added


def _branch(body: list[nodes.Node], assigned: set[str], found: set[int]) -> set[str]:
    """One branch of an `if`: what it binds, which the statements after the `if` get only if every branch does."""
    added = _statements(body, assigned, found)
    assigned -= added
    return added


def _statement(node: nodes.Node, assigned: set[str], found: set[int]) -> set[str]:
    """One statement: what it reads, and what it binds for the statements after it (nothing of an inner scope)."""
    if isinstance(node, nodes.Assign | nodes.AssignBlock):
        if isinstance(node, nodes.Assign):
            _loads(node.node, assigned, found)
        else:
            _scope(node.body, assigned, found)
            _loads(node.filter, assigned, found)
        added = set(target_names(node.target)) - assigned
        assigned |= added
        return added
    if isinstance(node, nodes.If):
        _loads(node.test, assigned, found)
        outcomes = [_branch(node.body, assigned, found)]
        for branch in node.elif_:
            _loads(branch.test, assigned, found)
            outcomes.append(_branch(branch.body, assigned, found))
        outcomes.append(_branch(node.else_, assigned, found))  # no else: a branch that binds nothing
        common = set.intersection(*outcomes)
        assigned |= common
        return common
    if isinstance(node, nodes.For):
        _loads(node.iter, assigned, found)
        inner = {*target_names(node.target), "loop"}
        added = inner - assigned
        assigned |= added
        _loads(node.test, assigned, found)  # {% for m in messages if m.role %}: the targets are bound there
        assigned -= added
        _scope(node.body, assigned, found, inner)
        _scope(node.else_, assigned, found)
        return set()
    if isinstance(node, nodes.Macro | nodes.CallBlock):
        for default in node.defaults:
            _loads(default, assigned, found)
        if isinstance(node, nodes.CallBlock):
            _loads(node.call, assigned, found)
        parameters = [name for arg in node.args for name in target_names(arg)]
        _scope(node.body, assigned, found, [*parameters, "caller", "varargs", "kwargs"])
        if isinstance(node, nodes.CallBlock) or node.name in assigned:
            return set()
        assigned.add(node.name)
        return {node.name}
    if isinstance(node, nodes.With):
        for value in node.values:
            _loads(value, assigned, found)
        _scope(node.body, assigned, found, [name for target in node.targets for name in target_names(target)])
        return set()
    if isinstance(node, nodes.FilterBlock):
        _loads(node.filter, assigned, found)
    if isinstance(node, nodes.Block) and not node.scoped:  # its own function: outer names come from the context
        _statements(node.body, set(), found)
        return set()
    if isinstance(node, nodes.FilterBlock | nodes.Block | nodes.Scope | nodes.ScopedEvalContextModifier):
        _scope(node.body, assigned, found)
        return set()
    _loads(node, assigned, found)  # output, expressions, tags without a body
    return set()


def _loads(node: nodes.Node | None, assigned: set[str], found: set[int]) -> None:
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, nodes.Name) and current.ctx == "load" and current.name in assigned:
            found.add(id(current))
        stack.extend(current.iter_child_nodes())
