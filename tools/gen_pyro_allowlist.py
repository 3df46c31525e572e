"""Regenerate rules/allow-pyro.yaml: what Pyro's saved parameter stores import.

pyro-ppl is not a test dependency (tests/data/pyro keeps real files it wrote), so run this where it is installed beside
the test extra (`pip install pyro-ppl`, never another torch), then `python tools/gen_pyro_allowlist.py [--keep DIR]`.
Empirical, as the other recorded lists (`gen_darts_allowlist`): the catalogue below fits an AutoNormal guide a few SVI
steps and saves the ways Pyro documents: `pyro.get_param_store().save(path)` (a torch.save of each parameter's
unconstrained tensor and its constraint), the guide's `state_dict()` and `pyro.optim`'s `save`; and a parameter store
holding one parameter under each constraint Pyro defines that has a transform (`transform_to`; `integer` has none, so
no parameter can hold it). The names these files import are recorded by a find_class that refuses nothing (also as
pickled with every protocol from 2). Pyro's constraint classes are added whether a save recorded them or not, as
torch's are in allow-torch: singletons with no state of their own beside torch's Constraint (softplus_positive a
`greater_than` bound at 0), each screened as scikit-learn's ecosystem is. torch's constraints and tensors are judged by
allow-torch. Only these names are listed, never the package.
"""

from __future__ import annotations

import inspect
import io
import pickle
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from gen_allowlists import catalogue_arguments, screened_catalogue
from gen_fastai_allowlist import loaded
from gen_stats_allowlist import _callable_attributes, screened_lists
from pack_file import record_imports, write_pack

LIBRARIES = ("pyro.",)
# Pyro's constraints a parameter can hold, with a value inside each (an identity matrix is a correlation matrix and
# both kinds of Cholesky factor; an ordered vector; a unit vector for the sphere).
CONSTRAINED = {
    "softplus_positive": lambda torch: torch.tensor(1.5),
    "softplus_lower_cholesky": lambda torch: torch.eye(3),
    "unit_lower_cholesky": lambda torch: torch.eye(3),
    "corr_matrix": lambda torch: torch.eye(3),
    "ordered_vector": lambda torch: torch.tensor([0.0, 1.0, 2.0]),
    "positive_ordered_vector": lambda torch: torch.tensor([0.5, 1.0, 2.0]),
    "sphere": lambda torch: torch.tensor([0.6, 0.8]),
}


def save_models(folder: Path) -> None:
    import pyro
    import pyro.distributions as dist
    import torch
    from pyro.infer import SVI, Trace_ELBO
    from pyro.infer.autoguide import AutoNormal

    pyro.set_rng_seed(0)
    data = torch.randn(50) + 2.0

    def model(data: torch.Tensor) -> None:
        loc = pyro.sample("loc", dist.Normal(0.0, 10.0))
        scale = pyro.param("scale", torch.tensor(1.0), constraint=dist.constraints.positive)
        frac = pyro.param("frac", torch.tensor(0.5), constraint=dist.constraints.unit_interval)
        with pyro.plate("data", len(data)):
            pyro.sample("obs", dist.Normal(loc, scale * frac + 0.1), obs=data)

    pyro.clear_param_store()
    guide = AutoNormal(model)
    svi = SVI(model, guide, pyro.optim.Adam({"lr": 0.05}), loss=Trace_ELBO())
    for _ in range(5):
        svi.step(data)
    pyro.get_param_store().save(str(folder / "pyro_param_store.save"))
    torch.save(guide.state_dict(), folder / "pyro_guide_state.pt")
    svi.optim.save(str(folder / "pyro_optim.save"))

    pyro.clear_param_store()
    for name, value in CONSTRAINED.items():
        pyro.param(name, value(torch), constraint=getattr(dist.constraints, name))
    pyro.get_param_store().save(str(folder / "pyro_param_store_constraints.save"))
    pyro.clear_param_store()


def constraint_classes() -> set[str]:
    """The constraint classes pyro.distributions.constraints defines (torch's are allow-torch's)."""
    import pyro.distributions.constraints as constraints
    from torch.distributions.constraints import Constraint

    return {f"{k.__module__}.{k.__qualname__}" for _, k in inspect.getmembers(constraints, inspect.isclass)
            if issubclass(k, Constraint) and k.__module__ == constraints.__name__}  # fmt: skip


def recorded(folder: Path, members: set[str]) -> set[str]:
    """The names the catalogue's files import (also pickled with every protocol from 2); into `members` the callable
    attributes Pyro's objects keep under names their classes have no method by."""
    names: set[str] = set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        obj = loaded(path, names)  # this tool's own file, written a moment ago
        _callable_attributes(obj, members, LIBRARIES)
        for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
            record_imports(io.BytesIO(pickle.dumps(obj, protocol=protocol)), names)
    return names


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], {}, {})
    warnings.simplefilter("ignore")
    members: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        save_models(Path(folder))
        names = recorded(Path(folder), members)
        if args.keep:
            shutil.copytree(folder, args.keep, dirs_exist_ok=True)
    allowed, state_only, functions = screened_catalogue(names | constraint_classes(), LIBRARIES)
    lists = screened_lists(allowed, state_only, functions, members)
    others = sorted(n for n in names if not n.startswith(LIBRARIES))
    print(f"recorded outside pyro (judged by the other packs): {', '.join(others)}", file=sys.stderr)
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("pyro-ppl", "torch"))
    write_pack(
        "allow-pyro",
        f"Generated by tools/gen_pyro_allowlist.py ({versions}): what Pyro's saved parameter stores import "
        "(pyro.get_param_store().save of an AutoNormal guide's parameters and of parameters under each of Pyro's "
        "constraints; a guide's state_dict; pyro.optim's save), recorded from real saves, and the constraint classes "
        "Pyro defines, never a package wildcard: classes restored from state only, each screened for the hooks "
        "loading runs; their method names and the classes that cannot be called.\n",
        lists,
    )


if __name__ == "__main__":
    main()
