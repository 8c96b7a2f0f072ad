"""Sparse-times-dense products, written with differentiable gathers and scatter-adds (so
they have VJP, JVP and batching rules, to any order). Untraced host values take SciPy's
compiled kernel."""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ...core import Box
from ...numpy._util import dtype, ndim, shape
from ._values import gather, segment_sum

__all__ = ["matvec"]


def matvec(a: Any, x: Any) -> Any:
    """``A @ x`` for a sparse ``A`` (m, n) and a dense ``x`` of shape (n,) or (n, k).

    Example::

        matvec(csr_array(fnp.eye(2)), fnp.array([1.0, 2.0]))   # [1., 2.]
    """
    if not isinstance(x, Box) and not hasattr(x, "shape"):
        x = np.asarray(x)
    m, n = a.shape
    if ndim(x) not in (1, 2) or shape(x)[0] != n:
        raise ValueError(f"matmul: dimension mismatch, sparse {a.shape} @ dense {tuple(shape(x))} "
                         f"(expected a vector of length {n} or a matrix with {n} rows)")
    p, data = a.pattern, a.data
    if isinstance(x, np.ndarray) and isinstance(data, np.ndarray):
        return _scipy_product(a, x)
    xs = gather(x, p.col)
    vals = data if ndim(x) == 1 else fnp.reshape(data, (-1, 1))
    prod = vals * xs
    if dtype(prod) != np.result_type(dtype(data), dtype(x)):
        prod = fnp.astype(prod, np.result_type(dtype(data), dtype(x)))
    return segment_sum(prod, p.row, m)


def _scipy_product(a: Any, x: np.ndarray) -> np.ndarray:
    import scipy.sparse as sp
    p = a.pattern
    if p.order == "csr":
        mat = sp.csr_array((a.data, p.indices, p.indptr), shape=p.shape)
    elif p.order == "csc":
        mat = sp.csc_array((a.data, p.indices, p.indptr), shape=p.shape)
    else:
        mat = sp.coo_array((a.data, (p.row, p.col)), shape=p.shape)
    out = mat @ x
    want = np.result_type(a.data.dtype, x.dtype)
    return np.asarray(out, dtype=want)
