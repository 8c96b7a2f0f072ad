"""The gamma distribution (shape ``a``): differentiable ``scipy.stats.gamma`` (``cdf`` in ``a`` to second order).

Example::

    from funcgrad.scipy.stats import gamma
    gamma.logpdf(fnp.array([0.5, 2.0]), 2.0, scale=1.5)
"""

from __future__ import annotations

from typing import Any

import funcgrad.numpy as fnp

from ..special import gammainc, gammaincc, gammaln, xlogy
from ._common import log_param, standardize, where_in

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """(a-1) log z - z - gammaln(a) - log(scale), z = (x - loc) / scale >= 0. Example: ``logpdf(1.0, 2.0)``"""
    z = standardize(x, loc, scale)
    ok = z >= 0
    z = fnp.where(ok, z, fnp.ones_like(z))   # no NaN outside the support, in values or derivatives
    return where_in(ok, xlogy(a - 1, z) - z - gammaln(a) - log_param(scale), -fnp.inf)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Density. Example: ``pdf(1.0, 2.0)``"""
    return fnp.exp(logpdf(x, a, loc, scale))


def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """CDF gammainc(a, z); differentiable in ``a`` to second order (see special.gammainc). Example: ``cdf(1.0, 1.0)``  # 1 - exp(-1)"""
    z = standardize(x, loc, scale)
    return gammainc(a, fnp.maximum(z, 0))


def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log CDF. Example: ``logcdf(1.0, 1.0)``"""
    return fnp.log(cdf(x, a, loc, scale))


def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Survival function gammaincc(a, z). Example: ``sf(1.0, 1.0)``  # exp(-1)"""
    z = standardize(x, loc, scale)
    return gammaincc(a, fnp.maximum(z, 0))


def logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log survival function. Example: ``logsf(1.0, 1.0)``  # -1"""
    return fnp.log(sf(x, a, loc, scale))
