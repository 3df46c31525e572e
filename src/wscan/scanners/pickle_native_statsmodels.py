"""statsmodels' state-space objects in a pickle, checked for the sizes their compiled code trusts.

Why: every pickled state-space result (SARIMAX, ARIMA, UnobservedComponents, DynamicFactor, VARMAX, the state-space
ExponentialSmoothing, pmdarima's ARIMA) calls the Cython classes of `statsmodels.tsa.statespace` (`dStatespace`,
`zStatespace`, the Kalman filter and smoother, `Initialization`) through their `__reduce__`, then gives each a state.
Cython checks a typed array's dimensions count, dtype and contiguity when it is assigned, never its lengths, and each
`__setstate__` puts the file's arrays in place of the ones the constructor sized: the filter and smoother then read
and write them by the model's dimensions without bounds checks (helper 252 crashed `pickle.load` and `smooth()` with
one array a row short, a `None`, a filter built on another model; review 67 with a simulation smoother's nobs).
Each object is checked here as its constructor would size it (helper 252's specification, statsmodels 0.15): the
dimensions come from the representation's `obs` (k_endog x nobs) and `selection` (k_states x k_posdef), the filter's
storage from its `conserve_memory` flags. Every array must be its own (helper 253 put two on one buffer, and the
model's step wrote a count into `nmissing`), a filter may drop steps only if no smoother can be built on it, and the
Python Initialization's blocks must start at a state (a negative offset wrote before the arrays). Objects not made
by calling the class (copyreg, NEWOBJ), and every other class of those modules (the simulation smoothers, whose
`__reduce__` no statsmodels can run), stay flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wscan.scanners.pickle_arrays import ArrayReader, Unread
from wscan.scanners.pickle_native import PY_INITIALIZATION, shared_buffer
from wscan.scanners.pickle_native_common import Invalid, scalar_number
from wscan.scanners.pickle_values import Const, Dict, Global, NativeStates, Obj, Seq, Sym, _is_none

MODULE = "statsmodels.tsa.statespace."
KINDS = {"_representation": "Statespace", "_initialization": "Initialization", "_kalman_filter": "KalmanFilter",
         "_kalman_smoother": "KalmanSmoother"}  # fmt: skip
PREFIXES = ("d", "z")  # float64 and its complex-step twin: the only ones statsmodels results keep
STATESPACE_CLASSES = frozenset(
    f"{MODULE}{module}.{prefix}{name}" for module, name in KINDS.items() for prefix in PREFIXES
)
COLLAPSED, CONCENTRATED, CHANDRASEKHAR = 0x20, 0x100, 0x200  # filter_method bits that change what the filter sizes
FILTER_METHODS = 0x01 | 0x02 | 0x10 | COLLAPSED | CONCENTRATED | CHANDRASEKHAR
# conserve_memory bits: each stores its output for the last step or two only
NO_FORECAST, NO_FORECAST_COV, NO_PREDICTED, NO_PREDICTED_COV, NO_FILTERED, NO_FILTERED_COV, NO_LIKELIHOOD, NO_GAIN, \
    NO_SMOOTHING, NO_STD_FORECAST = (1 << bit for bit in range(10))  # fmt: skip
NOT_SMOOTHABLE = NO_PREDICTED | NO_PREDICTED_COV | NO_GAIN | NO_SMOOTHING  # the constructor refuses a smoother
SMOOTH_METHODS = (0, 1, 2, 4, 8)
MAX_FLAGS = 0x3FF


@dataclass(frozen=True, slots=True)
class Dims:
    """A checked representation's sizes: k_endog, k_states, k_posdef, nobs; and the prefix it was made with."""

    prefix: str
    endog: int
    states: int
    posdef: int
    nobs: int
    varying: bool  # the selected state covariance is stored per step (selection or state_cov varies over time)


@dataclass(frozen=True, slots=True)
class Filter:
    """A checked filter: the representation it runs on, its width (k_states when collapsed) and flags."""

    model: Obj
    dims: Dims
    width: int
    method: int
    memory: int


class StatespaceChecks:
    """A stream's state-space objects, checked in the order made (a filter names its representation, a smoother its
    filter), each with the state its BUILD gave it as it was then; those checked so far by id (each kept alive by
    the stream's record)."""

    def __init__(self, arrays: ArrayReader, native: NativeStates) -> None:
        self.arrays = arrays
        self.native = native
        self.checked: dict[int, Dims | Filter | None] = {}

    def run(self, cls: str, obj: Obj) -> None:
        """Check one object; raises Invalid or Unread for what is wrong with it."""
        states = self.native.statespace_states.get(id(obj), [])
        if len(states) > 1:
            raise Invalid("a state given twice, as statsmodels never writes one")
        self.checked[id(obj)] = self.object(cls, obj, states[0] if states else None)

    def object(self, cls: str, obj: Obj, state: Sym | None) -> Dims | Filter | None:
        if cls == PY_INITIALIZATION:
            self.blocks(state)
            return None
        if obj.instance or not (isinstance(obj.func, Global) and obj.func.dotted == cls):
            raise Invalid("made without calling its class, as statsmodels never writes one")
        if cls not in STATESPACE_CLASSES:
            raise Invalid("a class no statsmodels results object keeps")
        args = obj.args.items if isinstance(obj.args, Seq) and not obj.args.dropped else None
        if args is None or not (state is None or (isinstance(state, Dict) and not state.dropped)):
            raise Unread("arguments or a state the stream computes")
        module, name = cls[len(MODULE) :].split(".")
        prefix = name[0]
        if module == "_representation":
            dims = self.statespace(prefix, args)
            if state is not None:
                self.statespace_state(dims, args[0], state)
            return dims
        if module == "_initialization":
            self.initialization(args, state)
            return None
        if module == "_kalman_filter":
            kfilter = self.filter(prefix, args)
            if state is not None:
                self.filter_state(kfilter, state)
            return kfilter
        self.smoother(prefix, args, state)
        return None

    def shape(self, value: Sym | None, what: str) -> tuple[int, ...]:
        """An array's shape, the array its own: none the file hands out twice or builds on another's bytes (what
        writes one would write the other: helper 253 had the model's step write a count into `nmissing`)."""
        if value is None or _is_none(value):
            raise Invalid(f"{what} is None, which compiled code dereferences")
        found = self.arrays.shape(value)
        backing = self.arrays.backing(value)
        shared = shared_buffer(self.native, backing) and not (isinstance(backing, Const) and not backing.value)
        if id(value) in self.native.reused or shared:
            raise Invalid(f"{what} on memory another array of the file shares")
        return found

    def blocks(self, state: Sym | None) -> None:
        """The Python Initialization's blocks: the representation initializes each at its offset plus the block's
        first state, which only the upper end is checked of (helper 253 wrote 2e6 elements before the arrays)."""
        if state is None:
            return
        if not isinstance(state, Dict) or state.dropped:
            raise Unread("an Initialization's state the stream computes")
        blocks = state.get("blocks")
        if blocks is None:
            return
        if not isinstance(blocks, Dict) or blocks.dropped:
            raise Invalid("blocks that are not a dict the file spells out")
        for key, _ in blocks.items:
            first = key.items[0] if isinstance(key, Seq) and key.type == "tuple" and key.items else None
            number = scalar_number(first, self.arrays) if first is not None else None
            if not isinstance(number, int) or number < 0:
                raise Invalid("a block of states that does not start at a state (its offset is below zero)")

    def sized(self, state: Dict, sizes: dict[str, tuple[int, ...]], none_ok: bool = False) -> None:
        """Each of the state's arrays of exactly its shape (a key the state lacks makes __setstate__ raise: nothing
        to check)."""
        for key, expected in sizes.items():
            value = state.get(key)
            if value is None or (none_ok and _is_none(value)):
                continue
            found = self.shape(value, key)
            if found != expected:
                raise Invalid(f"{key} of shape {found}, where the model's sizes make it {expected}")

    def integer(self, value: Sym | None, what: str, low: int, high: int) -> int:
        number = scalar_number(value, self.arrays) if value is not None else None
        if not isinstance(number, int) or not low <= number <= high:
            raise Invalid(f"{what} of {number if number is not None else 'no number'}, outside {low} to {high}")
        return number

    def statespace(self, prefix: str, args: list[Sym]) -> Dims:
        if len(args) not in (8, 9):
            raise Invalid(f"{len(args)} arguments, where the constructor takes 8 or 9")
        obs, design, obs_intercept, obs_cov, transition, state_intercept, selection, state_cov = (
            self.shape(value, f"argument {index}") for index, value in enumerate(args[:8])
        )
        if len(obs) != 2 or len(selection) != 3:
            raise Invalid(f"obs of {len(obs)} and selection of {len(selection)} dimensions")
        (endog, nobs), (states, posdef) = obs, selection[:2]
        if min(endog, nobs, states, posdef) < 1:
            raise Invalid(f"sizes {endog}, {nobs}, {states}, {posdef}")
        # The constructor checks the others against these sizes, but takes selection's time axis as given.
        leading = {"design": (design, (endog, states)), "obs_intercept": (obs_intercept, (endog,)),
                   "obs_cov": (obs_cov, (endog, endog)), "transition": (transition, (states, states)),
                   "state_intercept": (state_intercept, (states,)), "selection": (selection, (states, posdef)),
                   "state_cov": (state_cov, (posdef, posdef))}  # fmt: skip
        for name, (found, sizes) in leading.items():
            if found[:-1] != sizes or found[-1] not in (1, nobs):
                raise Invalid(f"{name} of shape {found} over {endog} series, {states} states, {nobs} observations")
        if len(args) == 9:
            self.integer(args[8], "diagonal_obs_cov", -1, 1)
        return Dims(prefix, endog, states, posdef, nobs, state_cov[-1] > 1 or selection[-1] > 1)

    def statespace_state(self, dims: Dims, obs: Sym, state: Dict) -> None:
        e, m, r, t = dims.endog, dims.states, dims.posdef, dims.nobs
        initialized = state.get("initialized")
        none_ok = initialized is not None and scalar_number(initialized, self.arrays) == 0
        self.sized(state, {"initial_state": (m,), "initial_state_cov": (m, m), "initial_diffuse_state_cov": (m, m)},
                   none_ok)  # fmt: skip
        steps = t if dims.varying else 1
        self.sized(state, {
            "missing": (e, t), "nmissing": (t,), "tmp": (m, max(m, r)), "selected_state_cov": (m, m, steps),
            "selected_obs": (e,), "selected_obs_intercept": (e,), "selected_design": (e * m,),
            "selected_obs_cov": (e * e,), "transform_cholesky": (e, e), "transform_obs_cov": (e, e),
            "transform_design": (e, m), "collapse_obs": (m,), "collapse_obs_tmp": (m,), "collapse_design": (m, m),
            "collapse_obs_cov": (m, m), "collapse_cholesky": (m, m),
        })  # fmt: skip
        missing, counts = state.get("missing"), state.get("nmissing")
        if missing is not None and counts is not None:  # native code takes k_endog - nmissing series at each step
            absent = np.isnan(self.arrays.values(obs))
            if not np.array_equal(self.arrays.values(missing), absent):
                raise Invalid("missing does not mark the observations that are NaN")
            if not np.array_equal(self.arrays.values(counts), absent.sum(axis=0)):
                raise Invalid("nmissing does not count the missing observations")
        if state.get("t") is not None:
            self.integer(state.get("t"), "t", 0, t - 1)

    def initialization(self, args: list[Sym], state: Dict | None) -> None:
        if len(args) not in (3, 4):
            raise Invalid(f"{len(args)} arguments, where the constructor takes 3 or 4")
        k = self.integer(args[0], "k_states", 1, 1 << 31)
        if self.shape(args[1], "constant") != (k,) or self.shape(args[2], "stationary_cov") != (k, k):
            raise Invalid(f"a constant or covariance not sized for {k} states")
        if state is not None:
            self.sized(state, {"_tmp_transition": (k, k), "_tmp_selected_state_cov": (k, k)})

    def model(self, value: Sym | None, prefix: str) -> tuple[Obj, Dims]:
        dims = self.checked.get(id(value))
        if not isinstance(value, Obj) or not isinstance(dims, Dims) or dims.prefix != prefix:
            raise Invalid(f"a model that is no {prefix}Statespace this file made and wscan checked")
        return value, dims

    def filter(self, prefix: str, args: list[Sym]) -> Filter:
        """(model, filter_method, inversion_method, stability_method, conserve_memory, filter_timing, tolerance,
        loglikelihood_burn), the constructor's defaults for those not given."""
        if not 1 <= len(args) <= 8:
            raise Invalid(f"{len(args)} arguments, where the constructor takes 1 to 8")
        model, dims = self.model(args[0], prefix)
        flags = [1, 0x09, 1, 0, 0]
        for index, value in enumerate(args[1:6]):
            flags[index] = self.integer(value, "a filter setting", 0, MAX_FLAGS)
        method, inversion, stability, memory, timing = flags
        if method & ~FILTER_METHODS or inversion & ~0x1F or stability > 1 or timing > 1:
            raise Invalid(f"filter settings {flags} no statsmodels takes")
        if method & COLLAPSED and (dims.endog <= dims.states or method & CONCENTRATED):
            raise Invalid("a collapsed filter over no more series than states, or concentrated")
        if method & CHANDRASEKHAR:
            raise Invalid("the Chandrasekhar recursions, whose preconditions wscan does not check")
        if not memory & NOT_SMOOTHABLE and memory & (NO_FORECAST | NO_FORECAST_COV | NO_FILTERED | NO_FILTERED_COV):
            # a smoother may be built on it, and the classical and alternative ones read every step of these
            # (helper 253 read 40,000 values past them); statsmodels' own memory settings never leave one so
            raise Invalid(f"conserve_memory {memory}: steps dropped that a smoother on this filter would read")
        if len(args) == 8:
            self.integer(args[7], "loglikelihood_burn", 0, dims.nobs)
        return Filter(model, dims, dims.states if method & COLLAPSED else dims.endog, method, memory)

    def filter_state(self, kfilter: Filter, state: Dict) -> None:
        w, m, t, cm = kfilter.width, kfilter.dims.states, kfilter.dims.nobs, kfilter.memory

        def kept(flag: int, small: int) -> int:  # the steps an output is stored for
            return small if cm & flag else t

        predicted = kept(NO_PREDICTED_COV, 2)
        steps = kept(NO_SMOOTHING, 1)
        self.sized(state, {
            "converged_filtered_state_cov": (m, m), "converged_forecast_error_cov": (w, w),
            "converged_kalman_gain": (m, w), "converged_M": (m, w), "converged_predicted_state_cov": (m, m),
            "filtered_state": (m, kept(NO_FILTERED, 2)), "filtered_state_cov": (m, m, kept(NO_FILTERED_COV, 2)),
            "forecast": (w, kept(NO_FORECAST, 2)), "forecast_error": (w, kept(NO_FORECAST, 2)),
            "forecast_error_cov": (w, w, kept(NO_FORECAST_COV, 2)), "forecast_error_fac": (w, w),
            "forecast_error_ipiv": (w,), "forecast_error_work": (kfilter.dims.endog, kfilter.dims.endog),
            "kalman_gain": (m, w, kept(NO_GAIN, 1)), "univariate_filter": (t,),
            "loglikelihood": (kept(NO_LIKELIHOOD, 1),), "predicted_state": (m, kept(NO_PREDICTED, 2) + 1),
            "predicted_state_cov": (m, m, predicted + 1), "predicted_diffuse_state_cov": (m, m, predicted + 1),
            "standardized_forecast_error": (w, kept(NO_STD_FORECAST, 1)),
            "forecast_error_diffuse_cov": (w, w, kept(NO_FORECAST_COV, 2)),
            "tmp0": (m, m), "tmp00": (m, m), "tmp1": (m, w, steps), "tmp2": (w, steps), "tmp3": (w, m, steps),
            "tmp4": (w, w, steps), "M": (m, w, predicted), "M_inf": (m, w, predicted), "tmpK0": (m,), "tmpK1": (m,),
            "tmpL0": (m, m), "tmpL1": (m, m),
        })  # fmt: skip
        for key in ("t", "nobs_diffuse", "period_converged"):
            if state.get(key) is not None:
                self.integer(state.get(key), key, 0, t)

    def smoother(self, prefix: str, args: list[Sym], state: Dict | None) -> None:
        """(model, kfilter, smoother_output, smooth_method): the filter must run on the same model."""
        if not 2 <= len(args) <= 4:
            raise Invalid(f"{len(args)} arguments, where the constructor takes 2 to 4")
        model, dims = self.model(args[0], prefix)
        kfilter = self.checked.get(id(args[1]))
        if not isinstance(kfilter, Filter) or kfilter.model is not model:
            raise Invalid("a filter that is not one this file made on the same model, checked")
        if kfilter.memory & NOT_SMOOTHABLE:
            raise Invalid("a filter that keeps too little to smooth")
        if len(args) > 2:
            self.integer(args[2], "smoother_output", 0, 0x1F)
        if len(args) > 3 and self.integer(args[3], "smooth_method", 0, 8) not in SMOOTH_METHODS:
            raise Invalid("a smooth_method no statsmodels takes")
        if state is None:
            return
        w, m, r, t = kfilter.width, dims.states, dims.posdef, dims.nobs
        wide = (m, max(m, r))
        self.sized(state, {
            "scaled_smoothed_estimator": (m, t + 1), "scaled_smoothed_estimator_cov": (m, m, t + 1),
            "smoothing_error": (w, t), "smoothed_state": (m, t), "smoothed_state_cov": (m, m, t),
            "smoothed_measurement_disturbance": (w, t), "smoothed_state_disturbance": (r, t),
            "smoothed_measurement_disturbance_cov": (w, w, t), "smoothed_state_disturbance_cov": (r, r, t),
            "smoothed_state_autocov": (m, m, t), "innovations_transition": (m, m, t), "tmp_autocov": (m, m),
            "scaled_smoothed_diffuse_estimator": (m, t + 1), "scaled_smoothed_diffuse1_estimator_cov": (m, m, t + 1),
            "scaled_smoothed_diffuse2_estimator_cov": (m, m, t + 1), "tmpL": wide, "tmpL2": wide, "tmp0": wide,
            "tmp00": (m, w), "tmp000": (m, w),
        })  # fmt: skip
        if state.get("t") is not None:
            self.integer(state.get("t"), "t", -1, t - 1)
