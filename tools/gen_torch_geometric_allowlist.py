"""Regenerate rules/allow-torch-geometric.yaml: what PyTorch Geometric's saved graphs and processed datasets import.

torch_geometric is not a test dependency (tests/data/torch_geometric keeps real files it wrote), so run this where it
is installed beside the test extra (`pip install torch_geometric`, never another torch), then
`python tools/gen_torch_geometric_allowlist.py [--keep DIR]`. Empirical, as the other recorded lists
(`gen_darts_allowlist`):
each graph of the catalogue below is saved the ways PyG and its users do: `InMemoryDataset.save(data_list, path)`, the
processed file of every in-memory dataset (a tuple of the collated graph's dict, its slices and its class, which
`InMemoryDataset.load` calls as `data_cls.from_dict(dict)`), the older `torch.save((data, slices))` of a collated graph
that `load` still reads, and `torch.save` of a Data, HeteroData or TemporalData. The names those files import are
recorded by a find_class that refuses nothing (also as pickled with every protocol from 2), and classes are screened
as scikit-learn's ecosystem is, each hook the screen raised read in torch_geometric's source and reviewed below. Only
what these files import is listed, never the package: whole models (`torch.save(GCN(...))`) keep PyG's Inspector with
typing objects and `builtins.type` calls, and are not in the catalogue.

PyG's own loader (`torch_geometric.io.fs.torch_load`) reads these files with torch.load(weights_only=True) after
registering Data, HeteroData, TemporalData, TensorAttr, EdgeAttr and EdgeLayout with add_safe_globals (enough for the
processed-file tuple, whose only class is the graph's, as a value), and when that fails for want of a safe global it
loads the same file again with weights_only=False: whatever a file names is then imported and run, so the verdict here
is what stands between a processed dataset and the process.

A graph's storages answer attribute lookups from their items (`BaseStorage.__getattr__` reads `_mapping`, and
`Data.__getattr__` asks its `_store`): a name the classes lack (`__array__`) reaches whatever the item holds. wscan
judges every item of a PyG storage's `_mapping` as an attribute of it (WS-PKL-026: one named like a method must be
inert), as it judges an EasyDict's items. The FeatureStore and GraphStore classes a Data keeps (`_tensor_attr_cls`,
`_edge_attr_cls`) are called by its feature-store methods: `called-attributes`, real files keep the class by name.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from gen_allowlists import catalogue_arguments, screened_catalogue
from gen_fastai_allowlist import recorded_catalogue
from gen_stats_allowlist import screened_lists
from pack_file import write_pack

LIBRARIES = ("torch_geometric.",)
# Load hooks of torch_geometric's own, read in the installed source (torch_geometric 2.8.1).
PYG_OWNER_HOOKS = {
    # BaseData.__setstate__ puts each item of the state in the instance's dict (what BUILD does without it): a state
    # key named like a method is WS-PKL-026, as on any object
    "__setstate__ of torch_geometric.data.data.BaseData": "each state item into the instance's dict",
    # a graph hands attribute and item access to its storage (`_store`; HeteroData's `_global_store`), whose items
    # wscan judges as attributes (pickle_states.ITEM_ATTRIBUTE_OWNERS); BUILD uses __setstate__, never these setters
    "__getattr__ of torch_geometric.data.data.Data": "its storage's attribute, for a name the class lacks",
    "__setattr__ of torch_geometric.data.data.Data": "a property's setter (num_nodes), else its storage's item",
    "__setitem__ of torch_geometric.data.data.Data": "its storage's item",
    "__getattr__ of torch_geometric.data.temporal.TemporalData": "its storage's attribute, for a name the class lacks",
    "__setattr__ of torch_geometric.data.temporal.TemporalData": "its storage's item",
    "__setitem__ of torch_geometric.data.temporal.TemporalData": "its storage's item",
    # HeteroData: `<name>_dict` collects that item of each node and edge storage (a dict of their values)
    "__getattr__ of torch_geometric.data.hetero_data.HeteroData": "its global storage's attribute, or a collect",
    "__setattr__ of torch_geometric.data.hetero_data.HeteroData": "refuses a node or edge type, else a global item",
    "__setitem__ of torch_geometric.data.hetero_data.HeteroData": "refuses a node or edge type, else a global item",
    # FeatureStore.__eq__ is `id(self) == id(obj)`, and keeps object's __hash__
    "__eq__ of torch_geometric.data.feature_store.FeatureStore": "identity",
    # BaseStorage (a MutableMapping over `_mapping`): __setstate__ sets the instance's dict and makes `_parent` a
    # weakref; __getattr__ answers a name the class lacks from `_mapping` (every item judged as an attribute, as an
    # EasyDict's); __setitem__ first calls `discard(key)` on each value of `_cached_attr` (real files keep sets there;
    # `discard` is a method name below), then sets or deletes the item in `_mapping`
    "__setstate__ of torch_geometric.data.storage.BaseStorage": "the instance's dict, `_parent` made a weakref",
    "__setattr__ of torch_geometric.data.storage.BaseStorage":
        "a property's setter, `_parent` as a weakref, private names in the dict, else an item",
    "__getattr__ of torch_geometric.data.storage.BaseStorage": "an item of `_mapping`, judged as an attribute",
    "__setitem__ of torch_geometric.data.storage.BaseStorage": "discard(key) on `_cached_attr`'s sets, then `_mapping`",
    "__eq__ of collections.abc.Mapping": "compares dict(self.items()) with the other mapping's",
    "__hash__ of collections.abc.Mapping": "None: __eq__ is defined",
    # FeatureStore and GraphStore keys: dataclasses whose generated __eq__ compares the fields (__hash__ None)
    **{f"{hook} of torch_geometric.data.{name}": "the dataclass's: compares the fields" if hook == "__eq__"
       else "None: the dataclass defines __eq__" for hook in ("__eq__", "__hash__")
       for name in ("data.DataEdgeAttr", "data.DataTensorAttr", "feature_store.TensorAttr", "graph_store.EdgeAttr")},
}
# BaseStorage.__setitem__ (a SETITEMS on a graph or storage, and every later assignment) calls `.discard(key)` on the
# values of the storage's `_cached_attr`: a method name, so a value whose own attribute `discard` a state or an item
# set is judged (WS-PKL-026).
CALLED_METHODS = ["discard"]
# The classes a Data keeps and its FeatureStore/GraphStore methods call (`self._tensor_attr_cls(...)`, `.cast`).
CALLED_ATTRIBUTES = ["_edge_attr_cls", "_tensor_attr_cls"]


def save_models(folder: Path) -> None:
    import torch
    from torch_geometric.data import Data, HeteroData, InMemoryDataset, TemporalData

    torch.manual_seed(0)
    edges = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    graphs = [
        Data(x=torch.randn(4, 3), edge_index=edges, edge_attr=torch.randn(6, 2), y=torch.tensor([0, 1, 0, 1]),
             pos=torch.randn(4, 2), train_mask=torch.tensor([True, True, False, False])),
        Data(x=torch.randn(3, 3), edge_index=edges[:, :4], edge_attr=torch.randn(4, 2), y=torch.tensor([1, 0, 1]),
             pos=torch.randn(3, 2), train_mask=torch.tensor([True, False, True])),
    ]  # fmt: skip
    graphs[1].num_nodes = 3  # an int item, as datasets without node features keep
    hetero = HeteroData()
    hetero["paper"].x = torch.randn(3, 4)
    hetero["author"].x = torch.randn(2, 4)
    hetero["author", "writes", "paper"].edge_index = torch.tensor([[0, 1, 1], [0, 1, 2]])
    hetero["paper", "cites", "paper"].edge_index = torch.tensor([[0, 1], [1, 2]])
    hetero["paper"].y = torch.tensor([0, 1, 0])
    hetero.year = torch.tensor([2020])
    temporal = TemporalData(src=torch.tensor([0, 1]), dst=torch.tensor([1, 2]), t=torch.tensor([1, 2]),
                            msg=torch.randn(2, 3))  # fmt: skip
    torch.save(graphs[0], folder / "pyg_data.pt")
    torch.save(hetero, folder / "pyg_heterodata.pt")
    torch.save(temporal, folder / "pyg_temporaldata.pt")
    InMemoryDataset.save(graphs, str(folder / "pyg_inmemory_dataset.pt"))
    InMemoryDataset.save([hetero, hetero], str(folder / "pyg_inmemory_hetero_dataset.pt"))
    torch.save(InMemoryDataset.collate(graphs), folder / "pyg_collated_legacy.pt")  # (data, slices), PyG before 2.4


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], {}, PYG_OWNER_HOOKS)
    warnings.simplefilter("ignore")
    names, members, bound = recorded_catalogue(save_models, LIBRARIES, args.keep)
    if bound:
        raise SystemExit(f"bound methods to review: {', '.join(sorted(bound))}")
    allowed, state_only, functions = screened_catalogue(names, LIBRARIES)
    lists = screened_lists(allowed, state_only, functions, members - {f"{n}.{a}" for n in allowed
                                                                      for a in CALLED_ATTRIBUTES})
    lists["called-attributes"] = CALLED_ATTRIBUTES
    lists["method-names"] = sorted(set(lists["method-names"]) | set(CALLED_METHODS))
    others = sorted(n for n in names if not n.startswith(LIBRARIES))
    print(f"recorded outside torch_geometric (judged by the other packs): {', '.join(others)}", file=sys.stderr)
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("torch_geometric", "torch"))
    write_pack(
        "allow-torch-geometric",
        f"Generated by tools/gen_torch_geometric_allowlist.py ({versions}): what PyTorch Geometric's saved graphs "
        "import (torch.save of a Data, HeteroData or TemporalData; InMemoryDataset.save's processed files, which "
        "keep the graph's class as a value; the older collated (data, slices) tuple), recorded from real saves, never "
        "a package wildcard: classes restored from state only, each screened for the hooks loading runs; the "
        "graph classes as values; the feature-store classes a Data calls; their method names and the classes that "
        "cannot be called. Whole models (PyG's Inspector with typing objects) are not in it.\n",
        lists,
    )


if __name__ == "__main__":
    main()
