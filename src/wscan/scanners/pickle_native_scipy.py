"""SciPy objects in a pickle, checked for the sizes and indices their compiled code trusts.

Why: SciPy checks a sparse matrix's index arrays, a B-spline's knots and a grid interpolator's values in their
constructors, and unpickling never runs those: the object's dict is restored as written. Its compiled products,
conversions and evaluations then read by those indices and sizes unchecked (a sparsified model's `coef_`, a KNN fitted
on sparse data, SplineTransformer's splines; reviews 84 and 85 crashed each). Each is checked here as its constructor
would check it, from the arrays `pickle_arrays` reads.
"""

from __future__ import annotations

import numpy as np

from wscan.scanners.pickle_arrays import ArrayReader, Unread, const_shape
from wscan.scanners.pickle_native import FITPACK_SPLINES, SPARSE, dict_state, native_class_of
from wscan.scanners.pickle_native_common import Invalid, int_values, outside
from wscan.scanners.pickle_values import Const, Dict, Obj, Seq, Sym, _const_int, _is_none

MAX_SPLINE_DEGREE = 100  # B-spline degrees evaluated in O(k^2) per point: SciPy's splines are of degree 5 or less
FITPACK_MAX_DEGREE = 5  # what FITPACK's routines accept when they fit
MAX_LIL_ROWS = 1_000_000  # a LIL matrix's row lists walked


def sparse(cls: str, state: Dict, arrays: ArrayReader) -> None:
    """A sparse matrix as `check_format(full_check=True)` would check it (CSR, CSC, BSR: pointers from 0, never
    falling, ending at the stored count, indices within the other dimension; COO: coordinates within the shape; DIA:
    one row of data per offset; LIL: each row's columns within the shape). An abstract base class is no matrix."""
    kind = SPARSE.get(cls)
    if kind is None:
        raise Invalid("an instance of an abstract sparse class, which no writer pickles")
    if kind == "dok":
        return  # a dict of (row, column) keys: every conversion goes through COO's checked constructor
    shape = const_shape(state.get("_shape"))
    if shape is None:
        raise Unread("a matrix shape the stream computes")
    if kind == "lil":
        _lil(state, shape, arrays)
        return
    data = arrays.shape(state.get("data"))
    if kind == "dia":
        offsets = arrays.shape(state.get("offsets"))
        if len(data) != 2 or len(offsets) != 1 or offsets[0] != data[0]:
            raise Invalid(f"{offsets} diagonal offsets over data of shape {data}")
        return
    stored = data[0] if data else 0
    if kind == "coo":
        _coordinates(state, shape, stored, arrays)
        return
    if len(shape) == 1 and kind == "csr":
        shape = (1, shape[0])  # a 1-D CSR array (sparsify() of a 1-D coef_): one row, as SciPy stores it
    if len(shape) != 2:
        raise Invalid(f"a {kind} matrix of shape {shape}")
    major, minor = (shape[1], shape[0]) if kind == "csc" else shape
    if kind == "bsr":
        block = data[1:] if len(data) == 3 else (0, 0)
        if 0 in block or major % block[0] or minor % block[1]:
            raise Invalid(f"blocks of {block} in a matrix of shape {shape}")
        major, minor = major // block[0], minor // block[1]
    indptr = int_values(arrays, state.get("indptr"), "indptr")
    indices = int_values(arrays, state.get("indices"), "indices")
    if indptr.shape != (major + 1,) or int(indptr[0]) != 0 or bool(np.any(np.diff(indptr) < 0)):
        raise Invalid(f"indptr not rising from 0 over {major} rows")
    if indices.ndim != 1 or int(indptr[-1]) != len(indices) or len(indices) != stored:
        raise Invalid(f"indptr ending at {int(indptr[-1])} for {len(indices)} indices and {stored} values")
    bad = outside(indices, 0, minor)
    if bad is not None:
        raise Invalid(f"index {bad} outside the matrix's {minor} columns")


def _coordinates(state: Dict, shape: tuple[int, ...], stored: int, arrays: ArrayReader) -> None:
    coords = state.get("coords")
    parts = coords.items if isinstance(coords, Seq) else [state.get("row"), state.get("col")]
    if len(parts) != len(shape):
        raise Invalid(f"{len(parts)} coordinates for a shape of {len(shape)}")
    for axis, (part, size) in enumerate(zip(parts, shape, strict=True)):
        values = int_values(arrays, part, "coordinates")
        if values.shape != (stored,) or outside(values, 0, size) is not None:
            raise Invalid(f"axis {axis} coordinates outside its {size} or not one per stored value")


def _lil(state: Dict, shape: tuple[int, ...], arrays: ArrayReader) -> None:
    """LIL keeps a Python list of column indices per row (an object array): converting it to CSR takes them as
    given (review 85 wrote out of bounds with a column of 10**8)."""
    if len(shape) != 2:
        raise Invalid(f"a lil matrix of shape {shape}")
    rows_shape, rows = _object_items(arrays, state.get("rows"))
    data_shape, data = _object_items(arrays, state.get("data"))
    if rows_shape != (shape[0],) or data_shape != (shape[0],) or shape[0] > MAX_LIL_ROWS:
        raise Invalid(f"row lists of shape {rows_shape} and {data_shape} for {shape[0]} rows")
    if not (isinstance(rows, Seq) and isinstance(data, Seq)) or rows.dropped or data.dropped:
        raise Unread("row lists the stream computes or longer than wscan keeps")
    for index, (columns, values) in enumerate(zip(rows.items, data.items, strict=True)):
        if not (isinstance(columns, Seq) and isinstance(values, Seq)) or columns.dropped or values.dropped:
            raise Unread(f"row {index}'s lists the stream computes or longer than wscan keeps")
        numbers = [_const_int(column) for column in columns.items]
        if len(numbers) != len(values.items) or any(n is None or not 0 <= n < shape[1] for n in numbers):
            raise Invalid(f"row {index}'s columns outside the matrix's {shape[1]} or not one per value")


def _object_items(arrays: ArrayReader, array: Sym | None) -> tuple[tuple[int, ...], Sym | None]:
    """An object array's shape and items: joblib's nested pickle made the array again, so its items are one more
    step away."""
    shape, items = arrays.object_shape(array)
    if isinstance(items, Obj):
        inner, items = arrays.object_shape(items)
        if inner != shape:
            raise Invalid(f"an object array of shape {shape} holding one of {inner}")
    return shape, items


def scipy_object(cls: str, state: Dict, arrays: ArrayReader) -> None:
    """A B-spline, grid interpolator or Gaussian KDE as its constructor would check it."""
    name = cls.rpartition(".")[2]
    if name == "BSpline":
        _spline(state, arrays)
    elif cls in FITPACK_SPLINES:
        _fitpack(state, arrays)
    elif name == "RegularGridInterpolator":
        _grid(state, arrays)
    else:
        _kde(state, arrays)


def _spline(state: Dict, arrays: ArrayReader) -> None:
    """BSpline(t, c, k): knots rising, at least 2k + 2 of them, a coefficient per basis function (len(t) - k - 1)
    and a small degree (review 85: a million intervals over one coefficient crashed SplineTransformer.transform, a
    degree of a million hung it)."""
    degree = _const_int(state.get("k") or Const(None))
    if degree is None or not 0 <= degree <= MAX_SPLINE_DEGREE:
        raise Invalid(f"degree {degree}")
    knots = arrays.values(state.get("_t") or state.get("t"))  # private since SciPy 1.15
    coefficients = arrays.shape(state.get("_c") or state.get("c"))
    if knots.ndim != 1 or knots.dtype.kind not in "iuf" or len(knots) < 2 * degree + 2:
        raise Invalid(f"{knots.shape} knots for degree {degree}")
    if not bool(np.all(np.isfinite(knots))) or bool(np.any(np.diff(knots) < 0)):
        raise Invalid("knots not finite and rising")
    if not coefficients or coefficients[0] < len(knots) - degree - 1:
        raise Invalid(f"coefficients of shape {coefficients} for {len(knots) - degree - 1} basis functions")


def _fitpack(state: Dict, arrays: ArrayReader) -> None:
    """UnivariateSpline and its kin evaluate `_eval_args = (t, c, k)` with FITPACK's splev, which takes the degree
    as given: 1 to 5 (FITPACK's own bound; review 86 overflowed splev's 20-slot stack array with k = 30), knots
    rising, a coefficient per basis function."""
    args = state.get("_eval_args")
    items = args.items if isinstance(args, Seq) and not args.dropped else []
    if len(items) != 3:
        raise Unread("spline arguments the stream computes")
    degree = _const_int(items[2])
    if degree is None or not 1 <= degree <= FITPACK_MAX_DEGREE:
        raise Invalid(f"degree {degree}")
    knots = arrays.values(items[0])
    coefficients = arrays.shape(items[1])
    if knots.ndim != 1 or knots.dtype.kind not in "iuf" or len(knots) < 2 * degree + 2:
        raise Invalid(f"{knots.shape} knots for degree {degree}")
    if not bool(np.all(np.isfinite(knots))) or bool(np.any(np.diff(knots) < 0)):
        raise Invalid("knots not finite and rising")
    if len(coefficients) != 1 or coefficients[0] < len(knots) - degree - 1:
        raise Invalid(f"coefficients of shape {coefficients} for {len(knots) - degree - 1} basis functions")


def _grid(state: Dict, arrays: ArrayReader) -> None:
    """RegularGridInterpolator: one rising 1-D grid per dimension, and values with a point per grid node."""
    grid = state.get("_grid") or state.get("grid")  # SciPy 1.13 and later keep them private
    values = state.get("_values") or state.get("values")
    if not isinstance(grid, Seq) or grid.dropped or values is None:
        raise Unread("a grid the stream computes")
    sizes = []
    for axis in grid.items:
        points = arrays.values(axis)
        if points.ndim != 1 or points.dtype.kind not in "iuf" or bool(np.any(np.diff(points) <= 0)):
            raise Invalid("a grid axis not one-dimensional and rising")
        sizes.append(len(points))
    shape = arrays.shape(values)
    if tuple(shape[: len(sizes)]) != tuple(sizes):
        raise Invalid(f"values of shape {shape} over a grid of {tuple(sizes)}")


def _kde(state: Dict, arrays: ArrayReader) -> None:
    """gaussian_kde: `dataset` of d rows and n points, the d and n it says, weights per point, d x d matrices."""
    dataset = arrays.shape(state.get("dataset"))
    if len(dataset) != 2:
        raise Invalid(f"a dataset of shape {dataset}")
    dims, points = dataset
    for key, expected in (("d", dims), ("n", points)):
        given = state.get(key)
        if given is not None and _const_int(given) != expected:
            raise Invalid(f"{key} = {_const_int(given)} for a dataset of shape {dataset}")
    weights = state.get("_weights")
    if weights is not None and not _is_none(weights) and arrays.shape(weights) != (points,):
        raise Invalid(f"weights of shape {arrays.shape(weights)} for {points} points")
    for key in ("covariance", "inv_cov", "cho_cov", "_data_covariance", "_data_inv_cov", "_data_cho_cov"):
        matrix = state.get(key)
        if isinstance(matrix, Obj) and arrays.shape(matrix) != (dims, dims):
            raise Invalid(f"{key} of shape {arrays.shape(matrix)} for {dims} dimensions")


def matrix_shape(arrays: ArrayReader, value: Sym | None) -> tuple[int, ...]:
    """A dense array's shape, or a sparse matrix's `_shape` (its own checks are its own)."""
    if isinstance(value, Obj) and native_class_of(value) in SPARSE:
        state = dict_state(value.state)
        shape = const_shape(state.get("_shape")) if state is not None else None
        if shape is None:
            raise Unread("a matrix shape the stream computes")
        return shape
    return arrays.shape(value)
