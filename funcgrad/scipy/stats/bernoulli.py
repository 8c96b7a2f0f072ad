"""The Bernoulli distribution: differentiable ``scipy.stats.bernoulli`` in ``p``.

Example::

    from funcgrad.scipy.stats import bernoulli
    bernoulli.logpmf(fnp.array([0.0, 1.0]), 0.3)
"""

from __future__ import annotations

from typing import Any

import funcgrad.numpy as fnp

from ..special import xlog1py, xlogy
from ._common import where_in

__all__ = ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """k log p + (1 - k) log(1 - p) for k in {0, 1}, -inf elsewhere. Example: ``logpmf(1.0, 0.3)``"""
    k = k - loc
    ok = (k == 0) | (k == 1)
    return where_in(ok, xlogy(k, p) + xlog1py(1 - k, -p), -fnp.inf)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """Probability mass. Example: ``pmf(1.0, 0.3)``  # 0.3"""
    return fnp.exp(logpmf(k, p, loc))


def cdf(k: Any, p: Any, loc: Any = 0) -> Any:
    """0 below 0, 1 - p on [0, 1), 1 from 1. Example: ``cdf(0.0, 0.3)``  # 0.7"""
    k = k - loc
    one = fnp.ones_like(1 - p * k)
    return fnp.where(k < 0, 0 * one, fnp.where(k < 1, (1 - p) * one, one))


def logcdf(k: Any, p: Any, loc: Any = 0) -> Any:
    """log CDF. Example: ``logcdf(0.0, 0.3)``"""
    return fnp.log(cdf(k, p, loc))


def sf(k: Any, p: Any, loc: Any = 0) -> Any:
    """1 - CDF. Example: ``sf(0.0, 0.3)``  # 0.3"""
    return 1 - cdf(k, p, loc)


def logsf(k: Any, p: Any, loc: Any = 0) -> Any:
    """log survival function. Example: ``logsf(0.0, 0.3)``"""
    return fnp.log(sf(k, p, loc))
