"""The Poisson distribution: differentiable ``scipy.stats.poisson`` in ``mu``.

Example::

    from funcgrad.scipy.stats import poisson
    poisson.logpmf(fnp.array([0.0, 2.0]), 1.5)
"""

from __future__ import annotations

from typing import Any

import funcgrad.numpy as fnp

from ..special import gammaincc, gammaln, xlogy
from ._common import where_in

__all__ = ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """k log(mu) - mu - log(k!) for integers k >= 0 (after subtracting loc), -inf elsewhere.

    Example::

        logpmf(2.0, 2.0)
    """
    k = k - loc
    ok = (k >= 0) & (k == fnp.floor(k))
    kk = fnp.where(ok, k, fnp.zeros_like(k))
    return where_in(ok, xlogy(kk, mu) - gammaln(kk + 1) - mu, -fnp.inf)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """Probability mass. Example: ``pmf(0.0, 2.0)``  # exp(-2)"""
    return fnp.exp(logpmf(k, mu, loc))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """P(K <= k) = gammaincc(floor(k) + 1, mu). Example: ``cdf(0.0, 2.0)``  # exp(-2)"""
    k = fnp.floor(k - loc)
    ok = k >= 0
    c = gammaincc(fnp.where(ok, k, fnp.zeros_like(k)) + 1, mu)
    return where_in(ok, c, 0.0)


def logcdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """log CDF. Example: ``logcdf(0.0, 2.0)``  # -2"""
    return fnp.log(cdf(k, mu, loc))


def sf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """P(K > k). Example: ``sf(0.0, 2.0)``"""
    return 1 - cdf(k, mu, loc)


def logsf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """log survival function. Example: ``logsf(0.0, 2.0)``"""
    return fnp.log(sf(k, mu, loc))
