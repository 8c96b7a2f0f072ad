"""``max``, ``min``, ``argmax``, ``argmin`` and ``count_nonzero`` of a sparse array, over all
entries (the implicit zeros count, as in SciPy) or along an axis.

The entries of each segment (the whole array, a row or a column) are laid out on the host
in a padded table (segments x the longest segment's count), filled from the values by one
gather, and reduced along the table's rows: differentiable (gather and max), no rounds of
scatters, and no host read of the values on a device. Which segments have implicit zeros,
and the first implicit zero's position in each, are static (pattern only).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ...numpy._util import dtype
from ._pattern import INDEX, Pattern
from ._values import index_for, zeros

__all__ = ["extremum", "arg_extremum", "count_nonzero"]


class _Table:
    """Padded layout of a canonical (csr) pattern's entries by segment."""

    def __init__(self, p: Pattern, axis: int | None):
        m, n = p.shape
        if axis is None:
            seg, pos, nseg, length = np.zeros(p.nnz, INDEX), p.row * n + p.col, 1, m * n
        elif axis == 1:
            seg, pos, nseg, length = p.row, p.col, m, n
        else:
            seg, pos, nseg, length = p.col, p.row, n, m
        order = np.lexsort((pos, seg)).astype(INDEX)
        counts = np.bincount(seg, minlength=nseg).astype(INDEX)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(INDEX)
        rank = np.arange(p.nnz, dtype=INDEX) - starts[seg[order]]
        self.width = max(int(counts.max()) if counts.size else 0, 1)
        self.slot = np.full((nseg, self.width), p.nnz, dtype=INDEX)     # p.nnz: the padding entry
        self.slot[seg[order], rank] = order
        self.implicit = counts < length                                   # segments with implicit zeros
        big = np.int64(length)
        keys = np.full((nseg, self.width), big, dtype=np.int64)
        keys[seg[order], rank] = pos[order]
        self.keys = keys
        # the first implicit zero of each segment: the first rank whose sorted position differs
        mismatch = keys != np.arange(self.width, dtype=np.int64)[None, :]
        first = np.where(mismatch.any(axis=1), mismatch.argmax(axis=1), self.width).astype(np.int64)
        self.first_implicit = np.where(self.implicit, first, big)
        self.big = big
        self.nseg = nseg


def _canonical(a: Any) -> Any:
    return a.tocsr() if a.format == "coo" and a.pattern.has_duplicates() else a


def _table(a: Any, axis: int | None) -> _Table:
    p = a.pattern
    return p.cached(("extrema table", axis), lambda: _Table(p, axis))  # type: ignore[no-any-return]


def _check(a: Any, axis: Any, what: str) -> int | None:
    if dtype(a.data).kind == "c":
        raise TypeError(f"{what}: complex values have no ordering (SciPy refuses them too); use abs(A) or A.real")
    if axis is not None and axis not in (0, 1, -1, -2):
        raise ValueError(f"{what}: axis must be None, 0 or 1 for a sparse array, got {axis!r}")
    if a.shape[0] * a.shape[1] == 0:
        raise ValueError(f"{what}: the array is empty (shape {a.shape}); there is no {what} of zero entries")
    return None if axis is None else axis % 2


def _grid(a: Any, t: _Table, pad: float) -> Any:
    """The values laid out in ``t``'s table, ``pad`` in the unused slots."""
    vals = fnp.concatenate([a.data, zeros((1,), a.data) + pad])
    return fnp.take(vals, index_for(t.slot, vals), axis=0)


def _shape_like(a: Any, out: Any, axis: int | None) -> Any:
    if axis is None:
        return fnp.reshape(out, ())
    if a._is_matrix:
        return fnp.reshape(out, (1, -1) if axis == 0 else (-1, 1))
    return out


def extremum(a: Any, axis: Any, largest: bool) -> Any:
    """``A.max(axis)`` (``largest``) or ``A.min(axis)``: differentiable in the values."""
    axis = _check(a, axis, "max" if largest else "min")
    a = _canonical(a)
    t = _table(a, axis)
    if largest:
        best = fnp.max(_grid(a, t, -np.inf), axis=1)
        with_zero = fnp.maximum(best, 0)
    else:
        best = fnp.min(_grid(a, t, np.inf), axis=1)
        with_zero = fnp.minimum(best, 0)
    best = fnp.where(index_for(t.implicit, best), with_zero, best)
    return _shape_like(a, best, axis)


def arg_extremum(a: Any, axis: Any, largest: bool) -> Any:
    """``A.argmax(axis)`` / ``A.argmin(axis)``: the first position of the extremum (an
    implicit zero counts, as in SciPy); flat (C order) for ``axis=None``."""
    what = "argmax" if largest else "argmin"
    axis = _check(a, axis, what)
    a = _canonical(_without_derivative(a))
    t = _table(a, axis)
    value = extremum(a, axis, largest)
    value = fnp.reshape(value, (-1,))
    grid = _grid(a, t, -np.inf if largest else np.inf)
    keys = index_for(t.keys, grid)
    stored = fnp.min(fnp.where(grid == value[:, None], keys, t.big), axis=1)
    implicit = fnp.where(value == 0, index_for(t.first_implicit, grid), t.big)
    out = fnp.minimum(stored, implicit)
    return fnp.reshape(out, ()) if axis is None else out


def _without_derivative(a: Any) -> Any:
    """``a`` with its values cut from differentiation (positions have no derivative)."""
    from ...transforms import stop_gradient
    return a._like(stop_gradient(a.data))


def count_nonzero(a: Any, axis: Any = None) -> Any:
    """The number of nonzero entries (duplicates summed first), in all or along ``axis``."""
    if axis is not None and axis not in (0, 1, -1, -2):
        raise ValueError(f"count_nonzero: axis must be None, 0 or 1, got {axis!r}")
    a = _canonical(_without_derivative(a))
    nonzero = fnp.astype(a.data != 0, np.int64)
    if axis is None:
        return fnp.sum(nonzero)
    return a._like(nonzero).sum(axis=axis % 2) if not a._is_matrix else fnp.ravel(a._like(nonzero).sum(axis))
