"""``max``, ``min``, ``argmax``, ``argmin`` and ``count_nonzero`` of a sparse array, over all
entries (the implicit zeros count, as in SciPy) or along an axis.

The entries are sorted by segment (the whole array, a row or a column) on the host, and
each segment is reduced by a log-step scan: at step ``d`` every entry takes
``op(itself, the entry d places before it)`` when that one is in its segment, so after
``ceil(log2(longest segment))`` steps a segment's last entry holds its extremum. Gathers,
selections and ``maximum``/``minimum`` only: differentiable, O(nnz) memory per step (never
a dense table, even with one full row), no host read of the values on a device. Which
segments have implicit zeros, and the first implicit zero's position in each, are static
(pattern only).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ...numpy._util import dtype
from ._pattern import INDEX, Pattern
from ._values import index_for, zeros

__all__ = ["extremum", "arg_extremum", "count_nonzero"]


class _Plan:
    """The host plan of a segmented reduction of a canonical (csr) pattern's entries."""

    def __init__(self, p: Pattern, axis: int | None):
        m, n = p.shape
        if axis is None:
            seg, pos, nseg, length = np.zeros(p.nnz, INDEX), p.row * n + p.col, 1, m * n
        elif axis == 1:
            seg, pos, nseg, length = p.row, p.col, m, n
        else:
            seg, pos, nseg, length = p.col, p.row, n, m
        self.order = np.lexsort((pos, seg)).astype(INDEX)
        self.segment = seg[self.order].astype(INDEX)
        self.position = pos[self.order].astype(np.int64)
        counts = np.bincount(seg, minlength=nseg).astype(INDEX)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(INDEX)
        rank = np.arange(p.nnz, dtype=INDEX) - starts[self.segment]
        # the last entry of each segment (p.nnz, the padding, for an empty one)
        self.last = np.where(counts > 0, starts + counts - 1, p.nnz).astype(INDEX)
        self.steps: list[tuple[np.ndarray, np.ndarray]] = []
        index, d = np.arange(p.nnz, dtype=INDEX), 1
        while d < (int(counts.max()) if counts.size else 0):
            source = np.maximum(index - d, 0)
            self.steps.append((source, (index >= d) & (self.segment[source] == self.segment)))
            d *= 2
        self.implicit = counts < length                                   # segments with implicit zeros
        self.big = np.int64(length)
        # the first implicit zero of a segment: its first rank whose sorted position differs from the rank
        first = counts.astype(np.int64)
        differs = self.position != rank
        np.minimum.at(first, self.segment[differs], rank[differs])
        self.first_implicit = np.where(self.implicit, first, self.big)


def _canonical(a: Any) -> Any:
    return a.tocsr() if a.format == "coo" and a.pattern.has_duplicates() else a


def _plan(a: Any, axis: int | None) -> _Plan:
    p = a.pattern
    return p.cached(("extrema plan", axis), lambda: _Plan(p, axis))  # type: ignore[no-any-return]


def _check(a: Any, axis: Any, what: str) -> int | None:
    if dtype(a.data).kind == "c":
        raise TypeError(f"{what}: complex values have no ordering (SciPy refuses them too); use abs(A) or A.real")
    if axis is not None and axis not in (0, 1, -1, -2):
        raise ValueError(f"{what}: axis must be None, 0 or 1 for a sparse array, got {axis!r}")
    if a.shape[0] * a.shape[1] == 0:
        raise ValueError(f"{what}: the array is empty (shape {a.shape}); there is no {what} of zero entries")
    return None if axis is None else axis % 2


def _segment_reduce(values: Any, plan: _Plan, op: Any, pad: Any) -> Any:
    """``op``-reduction of each segment of ``values`` (given in the plan's sorted order);
    ``pad`` for an empty segment."""
    for source, valid in plan.steps:
        values = fnp.where(index_for(valid, values), op(values, fnp.take(values, index_for(source, values))), values)
    padded = fnp.concatenate([values, zeros((1,), values) + pad])
    return fnp.take(padded, index_for(plan.last, padded))


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
    plan = _plan(a, axis)
    sorted_values = fnp.take(a.data, index_for(plan.order, a.data))
    if largest:
        best = _segment_reduce(sorted_values, plan, fnp.maximum, -np.inf)
        with_zero = fnp.maximum(best, 0)
    else:
        best = _segment_reduce(sorted_values, plan, fnp.minimum, np.inf)
        with_zero = fnp.minimum(best, 0)
    best = fnp.where(index_for(plan.implicit, best), with_zero, best)
    return _shape_like(a, best, axis)


def arg_extremum(a: Any, axis: Any, largest: bool) -> Any:
    """``A.argmax(axis)`` / ``A.argmin(axis)``: the first position of the extremum (an
    implicit zero counts, as in SciPy); flat (C order) for ``axis=None``."""
    what = "argmax" if largest else "argmin"
    axis = _check(a, axis, what)
    a = _canonical(_without_derivative(a))
    plan = _plan(a, axis)
    value = fnp.reshape(extremum(a, axis, largest), (-1,))
    sorted_values = fnp.take(a.data, index_for(plan.order, a.data))
    at_extremum = sorted_values == fnp.take(value, index_for(plan.segment, value))
    candidates = fnp.where(at_extremum, index_for(plan.position, value), plan.big)
    stored = _segment_reduce(candidates, plan, fnp.minimum, plan.big)
    implicit = fnp.where(value == 0, index_for(plan.first_implicit, value), plan.big)
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
