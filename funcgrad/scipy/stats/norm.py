"""The normal distribution N(loc, scale^2): differentiable ``scipy.stats.norm``.

Example::

    from funcgrad.scipy.stats import norm
    norm.logpdf(fnp.array([0.0, 1.0]), loc=0.0, scale=2.0)
"""

from __future__ import annotations

import math
from typing import Any

import funcgrad.numpy as fnp

from ..special import log_ndtr, ndtr, ndtri
from ._common import log_param, standardize

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "sf", "logsf", "ppf", "isf"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density -z^2/2 - log(scale) - log(2 pi)/2, z = (x - loc) / scale.

    Example::

        logpdf(0.0)   # -0.9189...
    """
    z = standardize(x, loc, scale)
    return -0.5 * z * z - log_param(scale) - _HALF_LOG_2PI


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Density. Example: ``pdf(0.0)``  # 0.3989..."""
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """CDF ndtr((x - loc) / scale). Example: ``cdf(0.0)``  # 0.5"""
    return ndtr(standardize(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log CDF, accurate in the lower tail (log_ndtr). Example: ``logcdf(-40.0)``"""
    return log_ndtr(standardize(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Survival function 1 - CDF. Example: ``sf(0.0)``  # 0.5"""
    return ndtr(-standardize(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log survival function, accurate in the upper tail. Example: ``logsf(40.0)``"""
    return log_ndtr(-standardize(x, loc, scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Quantile function loc + scale ndtri(q). Example: ``ppf(0.5)``  # 0.0"""
    return loc + scale * ndtri(q)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Inverse survival function. Example: ``isf(0.5)``  # 0.0"""
    return loc - scale * ndtri(q)
