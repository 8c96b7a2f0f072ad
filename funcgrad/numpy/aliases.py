"""NumPy 2's array-API names and other aliases of funcgrad.numpy functions.

Each name is the funcgrad function it stands for (``fnp.acos is fnp.arccos``), or
a thin composite over one, so derivatives, vmap and devices come with it.

Example::

    fnp.acos(fnp.asarray([0.5]))         # = fnp.arccos
    fnp.cumulative_sum(x, include_initial=True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ._util import ndim, shape
from .elementwise import (  # noqa: F401
    arccos as acos, arccosh as acosh, arcsin as asin, arcsinh as asinh, arctan as atan, arctan2 as atan2,
    arctanh as atanh, power as pow,
)
from .nondiff import invert as bitwise_invert, left_shift as bitwise_left_shift  # noqa: F401
from .nondiff import right_shift as bitwise_right_shift  # noqa: F401
from .shape_ops import vstack as row_stack  # noqa: F401

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "pow", "bitwise_invert",
    "bitwise_left_shift", "bitwise_right_shift", "row_stack", "cumulative_sum", "cumulative_prod",
    "rollaxis", "asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite", "require",
    "unique_values", "unique_counts", "unique_inverse", "unique_all",
]


def _cumulative(fn: Any, x: Any, axis: Any, dtype: Any, include_initial: bool, initial: float) -> Any:
    x = fnp.asarray(x) if not hasattr(x, "shape") else x
    if axis is None:
        if ndim(x) > 1:
            raise ValueError("cumulative functions need axis= for arrays of more than one dimension")
        axis = 0
    out = fn(x, axis=axis) if dtype is None else fn(fnp.astype(x, dtype), axis=axis)
    if include_initial:
        nd = ndim(out)
        ax = axis % nd
        first = fnp.full_like(fnp.take(out, [0], axis=ax), initial) if shape(out)[ax] else fnp.full(
            tuple(1 if i == ax else n for i, n in enumerate(shape(out))), initial, dtype=out.dtype)
        out = fnp.concatenate([first, out], axis=ax)
    return out


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None, out: Any = None,
                   include_initial: bool = False) -> Any:
    """Array-API ``numpy.cumulative_sum``: ``cumsum`` with an optional leading 0.

    Example::

        fnp.cumulative_sum(fnp.asarray([1.0, 2.0]), include_initial=True)   # [0, 1, 3]
    """
    return _to(_cumulative(fnp.cumsum, x, axis, dtype, include_initial, 0.0), out)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None, out: Any = None,
                    include_initial: bool = False) -> Any:
    """Array-API ``numpy.cumulative_prod``: ``cumprod`` with an optional leading 1.

    Example::

        fnp.cumulative_prod(fnp.asarray([2.0, 3.0]), include_initial=True)   # [1, 2, 6]
    """
    return _to(_cumulative(fnp.cumprod, x, axis, dtype, include_initial, 1.0), out)


def _to(result: Any, out: Any) -> Any:
    if out is None:
        return result
    out[...] = result
    return out


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """``numpy.rollaxis``: move ``axis`` to before position ``start`` (as ``moveaxis``).

    Example::

        fnp.rollaxis(fnp.ones((3, 4, 5)), 2).shape   # (5, 3, 4)
    """
    n = ndim(a)
    if not -n <= axis < n:
        raise ValueError(f"rollaxis: axis {axis} is out of bounds for an array of dimension {n}")
    if not -n <= start <= n:
        raise ValueError(f"rollaxis: start {start} is out of bounds for an array of dimension {n}")
    axis %= n
    if start < 0:
        start += n
    if axis < start:
        start -= 1
    if axis == start:
        return a
    return fnp.moveaxis(a, axis, start)


def asanyarray(a: Any, dtype: Any = None, order: Any = None, **kwargs: Any) -> Any:
    """``numpy.asanyarray`` (there are no array subclasses here: ``asarray``).

    Example::

        fnp.asanyarray([1.0, 2.0])
    """
    return fnp.asarray(a, dtype=dtype, **kwargs)


def ascontiguousarray(a: Any, dtype: Any = None, **kwargs: Any) -> Any:
    """``numpy.ascontiguousarray`` (traced values pass through unchanged: layout is the backend's).

    Example::

        fnp.ascontiguousarray(x.T)
    """
    return fnp.asarray(a, dtype=dtype, **kwargs)


def asfortranarray(a: Any, dtype: Any = None, **kwargs: Any) -> Any:
    """``numpy.asfortranarray`` (traced values pass through: layout is the backend's).

    Example::

        fnp.asfortranarray(x)
    """
    return fnp.asarray(a, dtype=dtype, **kwargs)


def asarray_chkfinite(a: Any, dtype: Any = None, order: Any = None) -> Any:
    """``numpy.asarray_chkfinite``: ``asarray``, raising ValueError on inf or NaN.

    Example::

        fnp.asarray_chkfinite([1.0, 2.0])
    """
    x = fnp.asarray(a, dtype=dtype)
    if not bool(fnp.all(fnp.isfinite(x))):
        raise ValueError("array must not contain infs or NaNs")
    return x


def require(a: Any, dtype: Any = None, requirements: Any = None, *, like: Any = None) -> Any:
    """``numpy.require`` (layout requirements are the backend's business; dtype is honoured).

    Example::

        fnp.require(x, np.float64)
    """
    return fnp.asarray(a, dtype=dtype)


def _result(name: str, *values: Any) -> Any:
    cls = type(getattr(np, name)(np.zeros(1)))
    return cls(*values)


def unique_values(x: Any) -> Any:
    """Array-API ``numpy.unique_values``: the sorted distinct values (differentiable).

    Example::

        fnp.unique_values(fnp.asarray([2.0, 1.0, 2.0]))   # [1, 2]
    """
    return fnp.unique(x, equal_nan=False)


def unique_counts(x: Any) -> Any:
    """Array-API ``numpy.unique_counts``: ``(values, counts)`` as NumPy's named tuple.

    Example::

        fnp.unique_counts(fnp.asarray([2.0, 1.0, 2.0])).counts   # [1, 2]
    """
    values, counts = fnp.unique(x, return_counts=True, equal_nan=False)
    return _result("unique_counts", values, counts)


def unique_inverse(x: Any) -> Any:
    """Array-API ``numpy.unique_inverse``: ``(values, inverse_indices)``, the indices shaped like ``x``.

    Example::

        v, inv = fnp.unique_inverse(x)   # v[inv] == x
    """
    values, inv = fnp.unique(x, return_inverse=True, equal_nan=False)
    return _result("unique_inverse", values, fnp.reshape(inv, shape(x)))


def unique_all(x: Any) -> Any:
    """Array-API ``numpy.unique_all``: ``(values, indices, inverse_indices, counts)``.

    Example::

        fnp.unique_all(fnp.asarray([2.0, 1.0, 2.0])).indices   # [1, 0]
    """
    values, idx, inv, counts = fnp.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                          equal_nan=False)
    return _result("unique_all", values, idx, fnp.reshape(inv, shape(x)), counts)
