"""OmegaConf's `${name:...}` resolver calls in a text: found by the pickle machine in string constants, and by
`config_targets` in config files.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# OmegaConf's ${resolver:args}. What follows the colon tells a shell default (${VAR:-x}) from most calls, but
# `${eval:-...}` is a call too: the rules decide (`shell_like`). A name that is itself an interpolation
# (`${${n}:...}`) is computed when the value resolves: reported as COMPUTED_RESOLVER.
RESOLVER_CALL = re.compile(r"\$\{\s*(?:([A-Za-z_][\w.\-]*)\s*:([-=?+]?)|\$\{)")
COMPUTED_RESOLVER = "(computed)"
TOO_MANY_RESOLVERS = "(too many)"


# A shell default that is one plain word (`${python:-python3}` in a docker-compose file): a resolver given it runs
# nothing, whether it evaluates Python (a negated name) or a command (one word, no metacharacters).
_PLAIN_DEFAULT = re.compile(r"[\w./-]*\}")


@dataclass(frozen=True, slots=True)
class ResolverCall:
    """One `${name:...}` in a text: the resolver, and whether its argument reads as a shell default."""

    name: str
    shell_like: bool  # what follows the colon starts like a shell default (`-`, `=`, `?`, `+`)
    plain_default: bool  # ... and is one plain word
    start: int

    @property
    def key(self) -> str:
        """What a file reports once: a plain default never stands for a real call of the same resolver."""
        return f"{self.name} (plain default)" if self.plain_default else self.name


def resolver_calls(text: str) -> Iterator[ResolverCall]:
    """Each resolver call in `text`, in order."""
    for match in RESOLVER_CALL.finditer(text):
        name, shell = match.groups()
        if name is None:
            yield ResolverCall(COMPUTED_RESOLVER, False, False, match.start())
        else:
            plain = bool(shell) and _PLAIN_DEFAULT.match(text, match.end()) is not None
            yield ResolverCall(name, bool(shell), plain, match.start())
