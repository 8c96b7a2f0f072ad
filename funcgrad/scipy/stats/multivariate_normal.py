"""The multivariate normal distribution: differentiable ``scipy.stats.multivariate_normal``.

``x`` has the dimension along its last axis (shape (d,) or (..., d)); ``cov`` is a
positive-definite (d, d) matrix (or a scalar: that multiple of the identity). The
log density uses the Cholesky factor of ``cov``, so it is differentiable in ``x``,
``mean`` and ``cov``.

Example::

    from funcgrad.scipy.stats import multivariate_normal
    multivariate_normal.logpdf(fnp.zeros(2), fnp.zeros(2), fnp.eye(2))   # -log(2 pi)
"""

from __future__ import annotations

import math
from typing import Any

import funcgrad.numpy as fnp

from ...numpy._util import ndim, shape
from ..linalg import solve_triangular

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, mean: Any = None, cov: Any = 1) -> Any:
    """-1/2 (x - mean)^T cov^-1 (x - mean) - 1/2 log det(2 pi cov). Example: ``logpdf(fnp.zeros(2), None, fnp.eye(2))``"""
    d = shape(x)[-1] if ndim(x) else 1
    diff = x if mean is None else x - mean
    if ndim(diff) == 0:
        diff = fnp.reshape(diff, (1,))
    if ndim(cov) == 0:
        cov = cov * fnp.eye(d, dtype=fnp.result_type(diff))
    if shape(cov) != (d, d):
        raise ValueError(f"multivariate_normal: cov must be a ({d}, {d}) matrix (or a scalar) for x of "
                         f"dimension {d}, got shape {shape(cov)}")
    L = fnp.linalg.cholesky(cov)
    lead = shape(diff)[:-1]
    cols = fnp.reshape(diff, (-1, d)).T
    z = solve_triangular(L, cols, lower=True)
    maha = fnp.reshape(fnp.sum(z * z, axis=0), lead)
    half_logdet = fnp.sum(fnp.log(fnp.diagonal(L)))
    return -0.5 * maha - half_logdet - 0.5 * d * math.log(2 * math.pi)


def pdf(x: Any, mean: Any = None, cov: Any = 1) -> Any:
    """Density. Example: ``pdf(fnp.zeros(2), None, fnp.eye(2))``  # 1 / (2 pi)"""
    return fnp.exp(logpdf(x, mean, cov))
