"""``A[rows, cols]`` for sparse arrays: integers, slices, integer lists or arrays and boolean
masks, differentiable in the values (one gather at a plan computed on the host from the
pattern and the index; the index must be concrete).

Two integers give the entry (a scalar); otherwise rows and columns select independently
(outer indexing, like ``A[rows][:, cols]``) and the result is a sparse array of the
selection, repeated indices repeating rows or columns. SciPy's ``sparray`` returns a 1-D
sparse array for an integer with a slice (``A[i]``, ``A[:, j]``); funcgrad has no 1-D
sparse arrays, so it refuses these and names the 2-D spelling (``A[[i]]``); the
``*_matrix`` forms keep both axes, as SciPy's ``spmatrix`` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ...core import Box
from ._pattern import INDEX, Pattern
from ._values import gather, zeros

__all__ = ["getitem"]


def _axis_index(idx: Any, n: int, axis: str) -> tuple[np.ndarray, bool]:
    """The selected positions along one axis (host ints) and whether ``idx`` was an integer."""
    if isinstance(idx, Box) or (hasattr(idx, "shape") and not isinstance(idx, np.ndarray)
                                and type(idx).__module__.split(".")[0] not in ("numpy", "builtins")):
        raise TypeError(f"sparse indexing: the {axis} index must be concrete (host integers, slices or "
                        f"masks): the pattern of the result is static")
    if isinstance(idx, (int, np.integer)):
        i = int(idx)
        if not -n <= i < n:
            raise IndexError(f"sparse indexing: {axis} index {i} is out of range for size {n}")
        return np.array([i % n], dtype=INDEX), True
    if isinstance(idx, slice):
        return np.arange(n, dtype=INDEX)[idx], False
    arr = np.asarray(idx)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise IndexError(f"sparse indexing: a boolean {axis} mask must have shape ({n},), got {arr.shape}")
        return np.nonzero(arr)[0].astype(INDEX), False
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise IndexError(f"sparse indexing: the {axis} index must be an integer, a slice, a 1-D integer array "
                         f"or a boolean mask, got {idx!r}")
    if arr.size and (arr.min() < -n or arr.max() >= n):
        raise IndexError(f"sparse indexing: {axis} index out of range for size {n}: {arr}")
    return (arr.astype(INDEX) % n) if n else arr.astype(INDEX), False


def _occurrences(keys: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each key, every position of ``chosen`` that selects it: ``(which key, new position)``."""
    order = np.argsort(chosen, kind="stable").astype(INDEX)
    ordered = chosen[order]
    lo = np.searchsorted(ordered, keys, side="left")
    hi = np.searchsorted(ordered, keys, side="right")
    counts = hi - lo
    which = np.repeat(np.arange(keys.shape[0], dtype=INDEX), counts)
    first = np.repeat(lo - (np.cumsum(counts) - counts), counts)
    return which, order[first + np.arange(which.shape[0], dtype=INDEX)]


def _plan(p: Pattern, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries of the selection: source entry, new row, new column."""
    e1, new_row = _occurrences(p.row, rows)
    e2, new_col = _occurrences(p.col[e1], cols)
    return e1[e2], new_row[e2], new_col


def getitem(a: Any, key: Any) -> Any:
    """``a[key]`` (see the module docstring)."""
    if not isinstance(key, tuple):
        key = (key, slice(None))
    if len(key) != 2:
        raise IndexError(f"sparse indexing: a sparse array has two axes, got an index of {len(key)}")
    if any(k is None or k is Ellipsis for k in key):
        raise IndexError("sparse indexing: None and ... are not supported; index rows and columns")
    m, n = a.shape
    rows, row_int = _axis_index(key[0], m, "row")
    cols, col_int = _axis_index(key[1], n, "column")
    if not (row_int or col_int) and not isinstance(key[0], slice) and not isinstance(key[1], slice):
        raise IndexError("sparse indexing with two index arrays (pairs of positions) is not supported; select "
                         "rows and columns separately: A[rows][:, cols]")
    p = a.pattern
    if row_int and col_int:
        hit = np.nonzero((p.row == rows[0]) & (p.col == cols[0]))[0].astype(INDEX)
        if hit.shape[0] == 0:
            return fnp.reshape(zeros((1,), a.data), ())
        return fnp.sum(gather(a.data, hit))
    if (row_int or col_int) and not a._is_matrix:
        spelled = f"A[[{int(rows[0])}]]" if row_int else f"A[:, [{int(cols[0])}]]"
        raise NotImplementedError(f"sparse indexing: an integer with a slice gives a 1-D sparse array in SciPy, "
                                  f"which funcgrad does not have; use {spelled} (a 2-D sparse array), or the "
                                  f"*_matrix form")
    source, new_row, new_col = _plan(p, rows, cols)
    out = Pattern(new_row, new_col, (rows.shape[0], cols.shape[0]), "coo")
    fmt = a.format if a.format in ("csr", "csc") else "csr"
    return a._in("coo", gather(a.data, source), out).asformat(fmt)
