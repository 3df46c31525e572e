"""Regenerate rules/allow-outliers.yaml: the names PyOD's outlier detectors, SUOD's ensembles and hdbscan's
clusterers import.

PyOD and hdbscan are not test dependencies (tests/data/outliers keeps real files they wrote), so run this where they
are installed beside the test extra (`pip install pyod suod hdbscan`, never another torch), then
`python tools/gen_outlier_allowlist.py [--keep DIR]`. Empirical, as the other recorded lists (`gen_stats_allowlist`,
whose recording this shares): each detector and clusterer of the catalogue below is fitted on a little data and saved
the ways the libraries document (pickle and joblib, which pickles the same names; a PyOD deep model's own `save()`
pickles it too), with every pickle protocol from 2; the names those pickles import are recorded by a find_class that
refuses nothing, and classes are screened as scikit-learn's ecosystem is. The deep detectors keep torch modules and
optimizers (allow-torch judges those).

hdbscan's compiled tree, prediction and distance code trusts the arrays a clusterer keeps (review 82 wrote out of
bounds through `outlier_scores_` and `dbscan_clustering`): `pickle_native_hdbscan` checks them, as it does for the
classes listed here. Branch detection (BranchDetector, BranchDetectionData) is left out: its compiled linkage trusts
what no check of the state can promise (a real fit with alpha above 1 crashed it), so those files stay high.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from gen_allowlists import catalogue_arguments, screened_catalogue, screened_names
from gen_fastai_allowlist import table_members
from gen_stats_allowlist import recorded_catalogue, screened_lists
from pack_file import write_pack

LIBRARIES = ("pyod.", "suod.", "hdbscan.")
# HDBSCAN keeps `memory=Memory(None)` by default: a joblib Memory with no store backend, whose cache() returns the
# function as is (WS-PKL-033 passes only such a Memory, see pickle_states; any other memory is a folder fit writes to).
OTHER_CLASSES = ["joblib.memory.Memory"]
# hdbscan's own copy of scikit-learn's old distance metrics: Cython classes made by newObj (cls.__new__(cls)), whose
# __setstate__ sets p and takes the data pointers of the state's vec and mat arrays (None as NULL), which only the
# weighted, standardised and Mahalanobis metrics read (by the data's width, not the arrays': they stay off the list).
NEW_HELPERS = ["hdbscan.dist_metrics.newObj"]  # `return obj.__new__(obj)`, as scikit-learn's
METRIC_HOOKS = {f"hdbscan.dist_metrics.{name}": "sets p, vec and mat; does not read vec or mat"
                for name in ("EuclideanDistance", "ManhattanDistance", "ChebyshevDistance")}  # fmt: skip


def save_models(folder: Path) -> None:
    import pickle

    import numpy as np
    import torch
    from pyod.models.auto_encoder import AutoEncoder
    from pyod.models.cblof import CBLOF
    from pyod.models.copod import COPOD
    from pyod.models.deep_svdd import DeepSVDD
    from pyod.models.ecod import ECOD
    from pyod.models.gmm import GMM
    from pyod.models.hbos import HBOS
    from pyod.models.iforest import IForest
    from pyod.models.inne import INNE
    from pyod.models.knn import KNN
    from pyod.models.loda import LODA
    from pyod.models.lof import LOF
    from pyod.models.mcd import MCD
    from pyod.models.ocsvm import OCSVM
    from pyod.models.pca import PCA
    from pyod.models.suod import SUOD
    from pyod.models.vae import VAE

    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    data = np.vstack([rng.randn(50, 4), rng.randn(10, 4) + 8])
    detectors = {
        "iforest": IForest(n_estimators=10, random_state=0), "lof": LOF(n_neighbors=5), "knn": KNN(n_neighbors=5),
        "ecod": ECOD(), "copod": COPOD(), "hbos": HBOS(), "ocsvm": OCSVM(), "pca": PCA(), "mcd": MCD(random_state=0),
        "cblof": CBLOF(n_clusters=2, alpha=0.8, beta=3, random_state=0), "gmm": GMM(n_components=2, random_state=0),
        "loda": LODA(), "inne": INNE(n_estimators=10, random_state=0),
        "suod": SUOD(base_estimators=[LOF(n_neighbors=5), IForest(n_estimators=5)], n_jobs=1, verbose=False),
        "auto_encoder": AutoEncoder(epoch_num=2, batch_size=16, hidden_neuron_list=[4, 2], verbose=0, device="cpu"),
        "vae": VAE(epoch_num=2, batch_size=16, encoder_neuron_list=[4, 2], decoder_neuron_list=[2, 4], latent_dim=2,
                   verbose=0, device="cpu"),
        "deep_svdd": DeepSVDD(n_features=4, epochs=2, batch_size=16, hidden_neurons=[4, 2], verbose=0),
    }  # fmt: skip
    detectors.update(more_detectors())
    for name, detector in detectors.items():
        if name == "mad":
            detector.fit(data[:, :1])  # one feature only
        elif name == "cd":
            detector.fit(data, (data[:, 0] > 4).astype(int))  # Cook's distance, given the labels
        else:
            detector.fit(data)
        with (folder / f"pyod_{name}.pkl").open("wb") as stream:  # joblib.dump pickles the same names
            pickle.dump(detector, stream)

    import hdbscan

    points = np.vstack([rng.randn(40, 2), rng.randn(40, 2) + 6, rng.randn(20, 2) - 6])
    clusterers = {
        "default": hdbscan.HDBSCAN(),
        "prediction": hdbscan.HDBSCAN(min_cluster_size=5, prediction_data=True, gen_min_span_tree=True),
        "manhattan": hdbscan.HDBSCAN(min_cluster_size=5, metric="manhattan", prediction_data=True),
        "minkowski": hdbscan.HDBSCAN(min_cluster_size=5, metric="minkowski", p=3, prediction_data=True),
        "chebyshev": hdbscan.HDBSCAN(min_cluster_size=5, metric="chebyshev", prediction_data=True),
        "robust_single_linkage": hdbscan.RobustSingleLinkage(cut=0.5),
    }
    for name, clusterer in clusterers.items():
        clusterer.fit(points)
        if name == "prediction":  # the trees and scores users read, built lazily
            _ = clusterer.condensed_tree_, clusterer.single_linkage_tree_, clusterer.minimum_spanning_tree_
            _ = clusterer.outlier_scores_, clusterer.exemplars_, clusterer.relative_validity_
        with (folder / f"hdbscan_{name}.pkl").open("wb") as stream:
            pickle.dump(clusterer, stream)


def more_detectors() -> dict[str, object]:
    """The rest of PyOD's classical detectors, which helper 258's sweep found high (2026-12-07). LMDD is left out:
    its default distance is a numba function (critical, as every numba dispatcher), the others NumPy's and SciPy's
    functions kept as values."""
    from pyod.models.abod import ABOD
    from pyod.models.cd import CD
    from pyod.models.cof import COF
    from pyod.models.feature_bagging import FeatureBagging
    from pyod.models.kde import KDE
    from pyod.models.kpca import KPCA
    from pyod.models.loci import LOCI
    from pyod.models.lof import LOF
    from pyod.models.lscp import LSCP
    from pyod.models.mad import MAD
    from pyod.models.qmcd import QMCD
    from pyod.models.rgraph import RGraph
    from pyod.models.sampling import Sampling
    from pyod.models.sod import SOD
    from pyod.models.sos import SOS

    return {
        "abod": ABOD(), "cof": COF(n_neighbors=5), "sod": SOD(n_neighbors=10, ref_set=5), "sos": SOS(),
        "feature_bagging": FeatureBagging(n_estimators=3, random_state=0),
        "lscp": LSCP([LOF(n_neighbors=5), LOF(n_neighbors=10)], random_state=0), "kde": KDE(),
        "sampling": Sampling(random_state=0), "kpca": KPCA(), "qmcd": QMCD(), "loci": LOCI(),
        "rgraph": RGraph(n_nonzero=5, maxiter=5, maxiter_lasso=5), "cd": CD(), "mad": MAD(),
    }  # fmt: skip


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], METRIC_HOOKS, {})
    names, members = recorded_catalogue(save_models, LIBRARIES, args.keep)
    allowed, state_only, functions = screened_catalogue(names, LIBRARIES)
    other_allowed, other_state_only = screened_names(OTHER_CLASSES)
    if other_allowed != OTHER_CLASSES:
        raise SystemExit(f"classes with hooks to review: {', '.join(sorted(set(OTHER_CLASSES) - set(other_allowed)))}")
    allowed, state_only = sorted(allowed + other_allowed), sorted(state_only + other_state_only)
    functions = [name for name in functions if name not in NEW_HELPERS]
    others = sorted(n for n in names if not n.startswith(LIBRARIES))
    print(f"recorded outside the libraries (judged by the other packs): {', '.join(others)}")
    from importlib.metadata import version

    versions = ", ".join(f"{lib} {version(lib)}" for lib in ("pyod", "suod", "hdbscan"))
    lists = screened_lists(allowed, state_only, functions, members)
    write_pack(
        "allow-outliers",
        f"Generated by tools/gen_outlier_allowlist.py ({versions}): what PyOD's outlier detectors, SUOD's "
        "ensembles and hdbscan's clusterers import, recorded from real saves, never a package wildcard: classes "
        "restored from state only, each screened for the hooks loading runs; hdbscan's newObj (cls.__new__(cls)); "
        "the functions they keep as values; their method names and the classes that cannot be called.\n",
        {
            **lists,
            "allowed-callables": sorted(lists["allowed-callables"] + NEW_HELPERS),
            "table-members": table_members(allowed),  # the deep detectors' networks, as a Sequential's modules
        },
    )


if __name__ == "__main__":
    main()
