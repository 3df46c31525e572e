"""Regenerate rules/library-aliases.yaml: names inside the libraries configs build from that are gadgets by
another name.

Config targets are judged by spelling: a name under `config-target-libraries` (speechbrain, torch.utils.data,
lightning, ...) passes unless it, or a tail of it, is on the `dangerous` list. A library module that imports a
gadget makes it reachable under the library's own prefix (`speechbrain.utils.logger.run_shell` is
`speechbrain.utils.superpowers.run_shell`; `torch.utils.data.dataloader.python_multiprocessing` is
`multiprocessing`). This tool imports every submodule of those libraries, finds each module attribute whose
real name (a module's `__name__`, a function's or class's `__module__.__qualname__`) is dangerous, and lists the
alias as dangerous too. Aliases already judged (a dangerous prefix or tail) are left out.

Run at development time, in an environment with the libraries installed (`python tools/gen_library_aliases.py`);
the scanner never imports them. speechbrain and pyannote.audio import torchaudio at the top: where it cannot be
installed, an empty stub package on PYTHONPATH lets the rest import. A library that is not installed keeps its
previous aliases (they are merged, never dropped silently; pass --fresh to start over).
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import types
import warnings
from pathlib import Path

import yaml
from pack_file import write_pack

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "rules"
OUT = RULES / "library-aliases.yaml"
LIBRARIES = [
    "speechbrain", "pyannote.audio", "torch.nn", "torch.optim", "torch.utils.data", "torchmetrics",
    "lightning.pytorch", "pytorch_lightning", "omegaconf", "nemo", "megatron",
    # not a config library: numba's modules import its serializer (`numba.core.dispatcher.serialize`), whose loads
    # pickles read too (review 75)
    "numba",
]  # fmt: skip
SKIP = ("typing.",)  # typing's aliases are names for annotations: listed, they would only be noise


def _lists() -> tuple[list[str], set[str]]:
    dangerous: list[str] = []
    exceptions: set[str] = set()
    for path in sorted(RULES.glob("*.yaml")):
        if path == OUT:
            continue
        lists = yaml.safe_load(path.read_text()).get("lists", {})
        dangerous += lists.get("dangerous", [])
        exceptions |= set(lists.get("dangerous-exceptions", []))
    return dangerous, exceptions


def _judged(name: str, dangerous: set[str]) -> bool:
    parts = name.split(".")
    return any(".".join(parts[: i + 1]) in dangerous for i in range(len(parts)))


def _real_name(value: object) -> str | None:
    if isinstance(value, types.ModuleType):
        return value.__name__
    try:
        module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    except Exception:  # an object whose attributes raise (numba's CUDA driver where there is none)
        return None
    if callable(value) and isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        return f"{module}.{qualname}"
    return None


def aliases(library: str, dangerous: set[str], exceptions: set[str]) -> dict[str, str] | None:
    """alias -> real name for one library; None when it is not installed."""
    try:
        package = importlib.import_module(library)
    except Exception:  # any import failure means: not here
        return None
    names = [library]
    if hasattr(package, "__path__"):
        names += [m.name for m in pkgutil.walk_packages(package.__path__, library + ".", onerror=lambda _: None)]
    found: dict[str, str] = {}
    for name in names:
        if _judged(name, dangerous):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(name)
        except BaseException:  # a submodule with a missing optional dependency
            continue
        for attr, value in list(vars(module).items()):
            real = _real_name(value)
            if attr.startswith("__") or real is None or real in exceptions or real.startswith(SKIP):
                continue
            if not _judged(real, dangerous):
                continue
            alias = f"{name}.{attr}"
            parts = alias.split(".")
            if any(_judged(".".join(parts[i:]), dangerous) for i in range(len(parts))):
                continue  # the alias, or a tail the walk rule judges, is already dangerous
            found[alias] = real
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", action="store_true", help="drop the aliases of libraries not installed here")
    parser.add_argument("--only", nargs="+", metavar="LIBRARY", help="recompute these; keep the others' aliases")
    args = parser.parse_args()
    previous: dict[str, dict[str, str]] = {}
    if OUT.exists() and not args.fresh:
        for line in json.loads(OUT.read_text())["lists"].get("library-alias-record", []):
            library, alias, _, real = line.split(" ")  # "<library> <alias> -> <real>"
            previous.setdefault(library, {})[alias] = real
    listed, exceptions = _lists()
    dangerous = set(listed)
    table: dict[str, dict[str, str]] = {}
    for library in LIBRARIES:
        if args.only and library not in args.only:
            table[library] = previous.get(library, {})
            continue
        found = aliases(library, dangerous, exceptions)
        if found is None:
            print(f"  {library}: not installed here, previous aliases kept", file=sys.stderr)
            if library in previous:
                table[library] = previous[library]
            continue
        table[library] = dict(sorted(found.items()))
        print(f"  {library}: {len(found)} aliases", file=sys.stderr)
    description = (
        "Generated by tools/gen_library_aliases.py: names inside the libraries configs build from that are a "
        "gadget under another name (a module that imports it), so a config that spells the alias is judged as "
        "the gadget. `library-alias-record` (used by no rule) says, per library, what each alias is.\n"
    )
    write_pack("library-aliases", description, {
        "dangerous": sorted({alias for found in table.values() for alias in found}),
        "library-alias-record": [
            f"{lib} {alias} -> {real}" for lib, found in table.items() for alias, real in found.items()
        ],
    })

if __name__ == "__main__":
    main()
