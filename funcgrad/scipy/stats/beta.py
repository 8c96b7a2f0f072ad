"""The beta distribution: differentiable ``scipy.stats.beta`` (``cdf`` in ``a``, ``b`` to second order).

Example::

    from funcgrad.scipy.stats import beta
    beta.logpdf(fnp.array([0.2, 0.7]), 2.0, 3.0)
"""

from __future__ import annotations

from typing import Any

import funcgrad.numpy as fnp

from ..special import betainc, betaln, xlog1py, xlogy
from ._common import log_param, standardize, where_in

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """(a-1) log z + (b-1) log(1-z) - betaln(a, b) - log(scale) on 0 <= z <= 1. Example: ``logpdf(0.5, 2.0, 2.0)``"""
    z = standardize(x, loc, scale)
    ok = (z >= 0) & (z <= 1)
    z = fnp.where(ok, z, 0.5 * fnp.ones_like(z))   # no NaN outside the support, in values or derivatives
    val = xlogy(a - 1, z) + xlog1py(b - 1, -z) - betaln(a, b) - log_param(scale)
    return where_in(ok, val, -fnp.inf)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Density. Example: ``pdf(0.5, 2.0, 2.0)``  # 1.5"""
    return fnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """CDF betainc(a, b, z); differentiable in a, b to second order. Example: ``cdf(0.5, 2.0, 2.0)``  # 0.5"""
    z = standardize(x, loc, scale)
    return betainc(a, b, fnp.clip(z, 0, 1))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log CDF. Example: ``logcdf(0.5, 2.0, 2.0)``"""
    return fnp.log(cdf(x, a, b, loc, scale))


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Survival function I_{1-z}(b, a). Example: ``sf(0.5, 2.0, 2.0)``  # 0.5"""
    z = standardize(x, loc, scale)
    return betainc(b, a, 1 - fnp.clip(z, 0, 1))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log survival function. Example: ``logsf(0.5, 2.0, 2.0)``"""
    return fnp.log(sf(x, a, b, loc, scale))
