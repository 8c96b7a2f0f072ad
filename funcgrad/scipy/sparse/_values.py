"""Differentiable moves of a sparse array's values: gather at, and scatter-add into, index
plans computed by :mod:`._pattern`. Built from funcgrad.numpy operations, so every sparse
operation written with them has VJP, JVP and batching rules and differentiates again."""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ...backend import namespace_of
from ...numpy._util import dtype, shape
from ._backend import device_index

__all__ = ["index_for", "gather", "segment_sum", "scatter_dense", "zeros"]


def index_for(idx: np.ndarray, like: Any) -> Any:
    """Host index ``idx`` on ``like``'s device (an explicit upload; NumPy arrays unchanged)."""
    return device_index(idx, namespace_of(like))


def zeros(shape_: tuple[int, ...], like: Any, dtype_: Any = None) -> Any:
    """Zeros on ``like``'s device, in its dtype unless given."""
    xp = namespace_of(like)
    return xp.zeros(shape_, dtype=dtype_ or dtype(like))


def gather(values: Any, idx: np.ndarray) -> Any:
    """``values[idx]`` along the first axis."""
    return fnp.take(values, index_for(idx, values), axis=0)


def segment_sum(values: Any, target: np.ndarray, n: int) -> Any:
    """``out[target[k]] += values[k]`` into ``n`` rows (trailing axes kept)."""
    out = zeros((n,) + tuple(shape(values))[1:], values)
    return fnp.at(out)[index_for(target, values)].add(values)


def scatter_dense(values: Any, row: np.ndarray, col: np.ndarray, shape_: tuple[int, int]) -> Any:
    """The dense ``shape_`` array with ``values`` added at ``(row, col)`` (duplicates summed)."""
    out = zeros(shape_, values)
    return fnp.at(out)[index_for(row, values), index_for(col, values)].add(values)
