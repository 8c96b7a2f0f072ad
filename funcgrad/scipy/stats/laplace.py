"""The Laplace distribution: differentiable ``scipy.stats.laplace``.

Example::

    from funcgrad.scipy.stats import laplace
    laplace.logpdf(fnp.array([0.5, -2.0]), scale=2.0)
"""

from __future__ import annotations

import math
from typing import Any

import funcgrad.numpy as fnp

from ._common import log_param, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-|z| - log(2 scale). Example: ``logpdf(0.0)``  # -log 2"""
    return -fnp.abs(standardize(x, loc, scale)) - log_param(scale) - math.log(2.0)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Density. Example: ``pdf(0.0)``  # 0.5"""
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(z)/2 below loc, 1 - exp(-z)/2 above. Example: ``cdf(0.0)``  # 0.5"""
    z = standardize(x, loc, scale)
    return fnp.where(z < 0, 0.5 * fnp.exp(-fnp.abs(z)), 1 - 0.5 * fnp.exp(-fnp.abs(z)))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log CDF. Example: ``logcdf(-40.0)``  # -40 - log 2"""
    z = standardize(x, loc, scale)
    return fnp.where(z < 0, -fnp.abs(z) - math.log(2.0), fnp.log1p(-0.5 * fnp.exp(-fnp.abs(z))))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Survival function. Example: ``sf(0.0)``  # 0.5"""
    return cdf(-standardize(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log survival function. Example: ``logsf(40.0)``"""
    return logcdf(-standardize(x, loc, scale))
