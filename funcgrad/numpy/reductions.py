"""Reductions (sum, mean, prod, max, ...) and their rules."""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp

from ..core import def_linear, defvjp, primitive
from ._util import backend_function, shape

__all__ = ["sum"]


def _normalize_axis(axis, nd: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(a % nd if nd else a for a in axis)


def _expand_reduced(g, x, axis, keepdims):
    """Give a reduced cotangent back the reduced axes so it broadcasts against ``x``."""
    if keepdims or axis is None and fnp.ndim(g) == 0:
        return g if keepdims else fnp.reshape(g, (1,) * len(shape(x)))
    axes = _normalize_axis(axis, len(shape(x)))
    return fnp.expand_dims(g, axes) if axes else g


sum = primitive(backend_function("sum"), "sum")  # noqa: A001 - mirrors numpy


def _sum_vjp(g, ans, x, axis=None, dtype=None, keepdims=False, **_):
    return fnp.broadcast_to(_expand_reduced(g, x, axis, keepdims), shape(x))


defvjp(sum, _sum_vjp)
def_linear(sum)
