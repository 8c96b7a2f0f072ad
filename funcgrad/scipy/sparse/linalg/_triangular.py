"""``spsolve_triangular``: solve with the lower (or upper) triangle of a sparse matrix,
differentiable in its values and the right-hand side (the solve is the LU solve of
:mod:`._direct`; a triangular matrix factorizes without fill-in)."""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from .._arrays import coo_array
from .._pattern import INDEX
from .._values import gather, zeros
from ._direct import _rhs, as_square_sparse, spsolve

__all__ = ["spsolve_triangular"]


def spsolve_triangular(A: Any, b: Any, lower: bool = True, overwrite_A: bool = False,  # noqa: N803
                       overwrite_b: bool = False, unit_diagonal: bool = False) -> Any:
    """Solve ``T x = b`` for the lower (``lower=True``) or upper triangle ``T`` of a sparse
    square ``A`` (SciPy's ``spsolve_triangular``); with ``unit_diagonal`` the diagonal is
    taken to be ones (the stored one is not read). Differentiable in ``A``'s values (those
    of the triangle read) and in ``b``; a zero on the diagonal raises ``LinAlgError``.

    Only the triangle is read: entries of ``A`` outside it are ignored (SciPy's contract is
    a triangular ``A``; what it does with other entries is not specified).

    Example::

        L = sparse.csr_array(fnp.array([[2.0, 0.0], [1.0, 4.0]]))
        spsolve_triangular(L, fnp.array([2.0, 5.0]))   # [1., 1.]
    """
    a = as_square_sparse(A, "csr", "spsolve_triangular")
    b = _rhs(b, a.shape[0], "spsolve_triangular")
    p = a.pattern
    if lower:
        keep = p.row > p.col if unit_diagonal else p.row >= p.col
    else:
        keep = p.row < p.col if unit_diagonal else p.row <= p.col
    sel = np.nonzero(keep)[0].astype(INDEX)
    values = gather(a.data, sel)
    rows, cols = p.row[sel], p.col[sel]
    if unit_diagonal:
        n = a.shape[0]
        values = fnp.concatenate([values, zeros((n,), a.data) + 1.0])
        rows = np.concatenate([rows, np.arange(n, dtype=INDEX)])
        cols = np.concatenate([cols, np.arange(n, dtype=INDEX)])
    try:
        return spsolve(coo_array((values, (rows, cols)), shape=a.shape), b)
    except np.linalg.LinAlgError as e:
        raise np.linalg.LinAlgError(f"spsolve_triangular: A is singular (a zero or missing entry on the "
                                    f"diagonal of the {'lower' if lower else 'upper'} triangle): {e}") from e
