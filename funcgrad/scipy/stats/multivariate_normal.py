"""The multivariate normal distribution: differentiable ``scipy.stats.multivariate_normal``.

``x`` has the dimension along its last axis (shape (d,) or (..., d)); ``cov`` is a
positive-definite (d, d) matrix (or a scalar: that multiple of the identity). The
log density uses the Cholesky factor of ``cov``, so it is differentiable in ``x``,
``mean`` and ``cov``. With ``allow_singular=True`` a positive semi-definite ``cov`` is
accepted, as in SciPy: the density lives on the range of ``cov`` (``-inf`` off it), with
the pseudo-inverse and the pseudo-determinant from ``eigh`` (eigenvalues at or below SciPy's
cutoff count as zero); derivatives in ``cov`` there need its nonzero eigenvalues distinct.

Example::

    from funcgrad.scipy.stats import multivariate_normal
    multivariate_normal.logpdf(fnp.zeros(2), fnp.zeros(2), fnp.eye(2))   # -log(2 pi)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ...backend import namespace_of
from ...core.trace import is_traced
from ...numpy._util import dtype, ndim, shape
from ..linalg import solve_triangular

__all__ = ["logpdf", "pdf", "entropy"]

_LOG_2PI = math.log(2 * math.pi)


def _square_cov(cov: Any, d: int, like: Any) -> Any:
    if ndim(cov) == 0:
        kind = fnp.result_type(like, np.float32) if hasattr(like, "dtype") or is_traced(like) else np.float64
        cov = cov * fnp.eye(d, dtype=kind)
    if shape(cov) != (d, d):
        raise ValueError(f"multivariate_normal: cov must be a ({d}, {d}) matrix (or a scalar) for x of "
                         f"dimension {d}, got shape {shape(cov)}")
    return cov


def _spectrum(cov: Any) -> tuple[Any, Any, Any]:
    """``(w, v, kept)`` of a positive semi-definite ``cov``: eigenvalues, eigenvectors and
    the mask of those above SciPy's cutoff (1e6 eps max|w| in float64, 1e3 eps in float32)."""
    w, v = fnp.linalg.eigh((cov + fnp.swapaxes(cov, -1, -2)) / 2)   # symmetric gradient, as with cholesky
    kind = dtype(w)
    factor = 1e6 if kind == np.float64 else 1e3
    cutoff = factor * np.finfo(kind).eps * fnp.max(fnp.abs(w))   # only compared with: no derivative
    if not is_traced(w) and bool(namespace_of(w).min(w) < -cutoff):   # checked where w is concrete
        raise ValueError("multivariate_normal: cov must be symmetric positive semi-definite, but its "
                         f"smallest eigenvalue is {float(namespace_of(w).min(w)):.3g}")
    return w, v, w > cutoff


def logpdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    """-1/2 (x - mean)^T cov^-1 (x - mean) - 1/2 log det(2 pi cov). Example: ``logpdf(fnp.zeros(2), None, fnp.eye(2))``

    ``allow_singular=True``: a positive semi-definite ``cov`` (pseudo-inverse and
    pseudo-determinant; ``-inf`` off the range of ``cov``), as SciPy's.
    """
    d = shape(x)[-1] if ndim(x) else 1
    diff = x if mean is None else x - mean
    if ndim(diff) == 0:
        diff = fnp.reshape(diff, (1,))
    cov = _square_cov(cov, d, diff)
    if allow_singular:
        return _logpdf_singular(diff, cov)
    L = fnp.linalg.cholesky(cov)
    lead = shape(diff)[:-1]
    cols = fnp.reshape(diff, (-1, d)).T
    z = solve_triangular(L, cols, lower=True)
    maha = fnp.reshape(fnp.sum(z * z, axis=0), lead)
    half_logdet = fnp.sum(fnp.log(fnp.diagonal(L)))
    return -0.5 * maha - half_logdet - 0.5 * d * math.log(2 * math.pi)


def _logpdf_singular(diff: Any, cov: Any) -> Any:
    w, v, kept = _spectrum(cov)
    safe = fnp.where(kept, w, fnp.ones_like(w))
    z = fnp.matmul(diff, v)                              # coordinates in the eigenbasis
    maha = fnp.sum(fnp.where(kept, z * z / safe, fnp.zeros_like(z)), axis=-1)
    off = fnp.sqrt(fnp.sum(fnp.where(kept, fnp.zeros_like(z), z * z), axis=-1))   # distance to the range
    rank = fnp.sum(kept)
    out = -0.5 * (maha + fnp.sum(fnp.where(kept, fnp.log(safe), fnp.zeros_like(w))) + rank * _LOG_2PI)
    return fnp.where(off < 1e-8, out, -fnp.inf * fnp.ones_like(out))


def pdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    """Density. Example: ``pdf(fnp.zeros(2), None, fnp.eye(2))``  # 1 / (2 pi)"""
    return fnp.exp(logpdf(x, mean, cov, allow_singular))


def entropy(mean: Any = None, cov: Any = 1) -> Any:
    """Differential entropy ``(r (1 + log 2 pi) + log pdet(cov)) / 2`` (r: the rank of ``cov``;
    a singular ``cov`` is accepted, as in SciPy). Differentiable in ``cov``.

    Example::

        entropy(cov=fnp.eye(2))   # 1 + log(2 pi) = 2.8379
    """
    d = shape(mean)[-1] if mean is not None and ndim(mean) else (shape(cov)[-1] if ndim(cov) else 1)
    cov = _square_cov(cov, d, cov)
    w, _, kept = _spectrum(cov)
    safe = fnp.where(kept, w, fnp.ones_like(w))
    return 0.5 * (fnp.sum(kept) * (_LOG_2PI + 1) + fnp.sum(fnp.where(kept, fnp.log(safe), fnp.zeros_like(w))))
