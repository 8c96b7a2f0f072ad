"""The binomial distribution: differentiable ``scipy.stats.binom`` (``logpmf`` in ``n`` and ``p``,
``cdf`` in ``p``).

Example::

    from funcgrad.scipy.stats import binom
    binom.logpmf(fnp.array([0.0, 2.0]), 5.0, 0.3)
"""

from __future__ import annotations

from typing import Any

import funcgrad.numpy as fnp

from ..special import betainc, gammaln, xlog1py, xlogy
from ._common import where_in

__all__ = ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log C(n, k) + k log p + (n - k) log(1 - p) for integers 0 <= k <= n. Example: ``logpmf(2.0, 5.0, 0.3)``"""
    k = k - loc
    ok = (k >= 0) & (k <= n) & (k == fnp.floor(k))
    kk = fnp.where(ok, k, fnp.zeros_like(k))
    val = gammaln(n + 1) - gammaln(kk + 1) - gammaln(n - kk + 1) + xlogy(kk, p) + xlog1py(n - kk, -p)
    return where_in(ok, val, -fnp.inf)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """Probability mass. Example: ``pmf(0.0, 5.0, 0.3)``  # 0.7 ** 5"""
    return fnp.exp(logpmf(k, n, p, loc))


def cdf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """P(K <= k) = I_{1-p}(n - k, k + 1); differentiable in p. Example: ``cdf(0.0, 5.0, 0.3)``"""
    k = fnp.floor(k - loc)
    inner = (k >= 0) & (k < n)
    ks = fnp.where(inner, k, fnp.zeros_like(k))
    c = betainc(fnp.where(inner, n - ks, fnp.ones_like(ks)), ks + 1, 1 - p)
    return fnp.where(k < 0, 0 * c, fnp.where(k >= n, 0 * c + 1, c))


def logcdf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log CDF. Example: ``logcdf(0.0, 5.0, 0.3)``"""
    return fnp.log(cdf(k, n, p, loc))


def sf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """1 - CDF. Example: ``sf(0.0, 5.0, 0.3)``"""
    return 1 - cdf(k, n, p, loc)


def logsf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log survival function. Example: ``logsf(0.0, 5.0, 0.3)``"""
    return fnp.log(sf(k, n, p, loc))
