"""SciPy objects as scientific models keep them: the catalogue tests/test_benign_real.py scans and
tools/gen_allowlists.py records the SciPy names of. Fitted interpolators and splines (calibration curves,
emulators), a kernel density estimate, optimizer results, linear systems and a short-time FFT plan, pickled on
their own or in a joblib dump with NumPy arrays.

SciPy's distributions are here, each of them as it is shipped and some frozen with parameters (what a
RandomizedSearchCV keeps): their pickled state carries the argument-parser code SciPy execs on load, which wscan
checks is the template SciPy writes (WS-PKL-032; a hostile one is in test_library_gadgets).

Not here, and so not allowed: the spatial trees and triangulations (compiled classes that trust the buffers their
state gives), rotations and RBFInterpolator (their __setstate__ asks objects of the state for their array
namespace)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

SEED = 7


def models() -> dict[str, Any]:
    import numpy as np
    from scipy import interpolate, optimize, signal, stats

    rng = np.random.default_rng(SEED)
    x = np.linspace(0.0, 10.0, 24)
    y = np.sin(x)
    grid = np.linspace(0.0, 1.0, 6)
    found: dict[str, Any] = {
        "CubicSpline": interpolate.CubicSpline(x, y),
        "CubicSpline-periodic": interpolate.CubicSpline(x, np.cos(x * 2 * np.pi / 10), bc_type="periodic"),
        "PchipInterpolator": interpolate.PchipInterpolator(x, y),
        "Akima1DInterpolator": interpolate.Akima1DInterpolator(x, y),
        "makima": interpolate.Akima1DInterpolator(x, y, method="makima"),
        "PPoly": interpolate.PPoly.from_spline(interpolate.splrep(x, y)),
        "BPoly": interpolate.BPoly.from_derivatives([0, 1, 2], [[0, 1], [1, 0], [2, 1]]),
        "UnivariateSpline": interpolate.UnivariateSpline(x, y),
        "InterpolatedUnivariateSpline": interpolate.InterpolatedUnivariateSpline(x, y),
        "LSQUnivariateSpline": interpolate.LSQUnivariateSpline(x, y, [3.0, 6.0]),
        "make_interp_spline": interpolate.make_interp_spline(x, y),
        "splrep": interpolate.splrep(x, y),
        "RegularGridInterpolator": interpolate.RegularGridInterpolator((grid, grid), np.outer(grid, grid)),
        "gaussian_kde": stats.gaussian_kde(rng.normal(size=(2, 40))),
        "OptimizeResult": optimize.minimize(lambda v: float((v**2).sum()), np.ones(3), method="BFGS"),
        "linprog": optimize.linprog(c=[1, 2], A_ub=[[1, 1]], b_ub=[3]),
        "least_squares": optimize.least_squares(lambda v: v - 1.0, np.zeros(2)),
        "curve_fit": optimize.curve_fit(lambda t, a, b: a * t + b, x, 2 * x + 1)[0],
        "sos": signal.butter(4, 0.2, output="sos"),
        "ShortTimeFFT": signal.ShortTimeFFT(signal.windows.hann(32), hop=8, fs=100),
    }
    for kind in ("linear", "nearest", "quadratic", "cubic", "previous"):
        found[f"interp1d-{kind}"] = interpolate.interp1d(x, y, kind=kind, fill_value="extrapolate")
    # review 55: the defaults take numpy.interp's path (_call_linear_np), NaNs a cubic one's (_call_nan_spline)
    found["interp1d-default"] = interpolate.interp1d(x, y)
    found["interp1d-cubic-nan"] = interpolate.interp1d(x, np.where(x > 5, np.nan, y), kind="cubic")
    systems = {"lti": signal.lti([1], [1, 2, 1]), "dlti": signal.dlti([1], [1, 0.5], dt=0.1)}
    for name, system in systems.items():
        found[name] = system
        found[f"{name}-zpk"] = system.to_zpk()
        found[f"{name}-ss"] = system.to_ss()
    found.update(distributions())
    # an OptimizeResult's lambda-free fields only: a result keeps no callable, but minimize's keeps the inverse
    # Hessian approximation, a plain array
    return found


def distributions() -> dict[str, Any]:
    """Every distribution scipy.stats ships, and frozen ones as a parameter search keeps them (loguniform, randint),
    a histogram distribution and one made from values (rv_sample)."""
    import numpy as np
    from scipy import stats
    from scipy.stats import _continuous_distns, _discrete_distns

    found: dict[str, Any] = {}
    for name in [*_continuous_distns._distn_names, *_discrete_distns._distn_names]:
        found[f"dist-{name}"] = getattr(stats, name)
    rng = np.random.default_rng(SEED)
    found["frozen-loguniform"] = stats.loguniform(1e-3, 1e3)
    found["frozen-randint"] = stats.randint(1, 50)
    found["frozen-uniform"] = stats.uniform(0.0, 1.0)
    found["frozen-gamma"] = stats.gamma(2.0, scale=3.0)
    found["frozen-norm-seeded"] = stats.norm(0.0, 1.0)
    found["frozen-norm-seeded"].random_state = 5
    found["rv_histogram"] = stats.rv_histogram(np.histogram(rng.normal(size=200), bins=12))
    found["rv_discrete-values"] = stats.rv_discrete(values=([1, 2, 3], [0.2, 0.5, 0.3]), name="three")
    # frozen multivariate distributions (review 55), as a sampler or a density model keeps them
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    found["frozen-multivariate_normal"] = stats.multivariate_normal([0.0, 1.0], cov)
    found["frozen-multivariate_t"] = stats.multivariate_t([0.0, 1.0], cov, df=4)
    found["frozen-dirichlet"] = stats.dirichlet([1.0, 2.0, 3.0])
    found["frozen-wishart"] = stats.wishart(df=3, scale=cov)
    return found


def save_models(out: Path) -> None:
    """Each object pickled on its own, and all of them in one joblib dump."""
    import joblib

    found = models()
    for name, value in found.items():
        (out / f"{name}.pkl").write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    joblib.dump(found, out / "all.joblib")
