"""The exponential distribution: differentiable ``scipy.stats.expon``.

Example::

    from funcgrad.scipy.stats import expon
    expon.logpdf(fnp.array([0.5, 2.0]), scale=2.0)
"""

from __future__ import annotations

from typing import Any

import funcgrad.numpy as fnp

from ._common import log_param, standardize, where_in

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-z - log(scale) for z >= 0. Example: ``logpdf(1.0)``  # -1"""
    z = standardize(x, loc, scale)
    return where_in(z >= 0, -z - log_param(scale), -fnp.inf)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Density. Example: ``pdf(1.0)``"""
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - exp(-z). Example: ``cdf(1.0)``"""
    return -fnp.expm1(-fnp.maximum(standardize(x, loc, scale), 0))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log CDF. Example: ``logcdf(1.0)``"""
    return fnp.log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(-z). Example: ``sf(1.0)``"""
    return fnp.exp(logsf(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-z (0 below loc). Example: ``logsf(1.0)``  # -1"""
    return -fnp.maximum(standardize(x, loc, scale), 0)
