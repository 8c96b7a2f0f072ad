"""Student's t distribution: differentiable ``scipy.stats.t`` (``cdf`` in ``df`` to second order).

Example::

    from funcgrad.scipy.stats import t
    t.logpdf(fnp.array([0.0, 1.0]), 3.0)
"""

from __future__ import annotations

import math
from typing import Any

import funcgrad.numpy as fnp

from ..special import gammaln, stdtr
from ._common import log_param, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of t with ``df`` degrees of freedom. Example: ``logpdf(0.0, 3.0)``"""
    z = standardize(x, loc, scale)
    return (gammaln((df + 1) / 2) - gammaln(df / 2) - 0.5 * fnp.log(df * math.pi) - log_param(scale)
            - (df + 1) / 2 * fnp.log1p(z * z / df))


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Density. Example: ``pdf(0.0, 3.0)``"""
    return fnp.exp(logpdf(x, df, loc, scale))


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """CDF (stdtr); differentiable in x, loc, scale and in df (to second order). Example: ``cdf(0.0, 3.0)``  # 0.5"""
    return stdtr(df, standardize(x, loc, scale))


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log CDF. Example: ``logcdf(0.0, 3.0)``"""
    return fnp.log(cdf(x, df, loc, scale))


def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Survival function. Example: ``sf(0.0, 3.0)``  # 0.5"""
    return stdtr(df, -standardize(x, loc, scale))


def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log survival function. Example: ``logsf(0.0, 3.0)``"""
    return fnp.log(sf(x, df, loc, scale))
