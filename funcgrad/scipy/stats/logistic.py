"""The logistic distribution: differentiable ``scipy.stats.logistic``.

Example::

    from funcgrad.scipy.stats import logistic
    logistic.logpdf(fnp.array([0.5, -2.0]), scale=2.0)
"""

from __future__ import annotations

from typing import Any

import funcgrad.numpy as fnp

from ..special import expit, log_expit
from ._common import log_param, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log_expit(z) + log_expit(-z) - log(scale), stable for large |z|. Example: ``logpdf(0.0)``  # -log 4"""
    z = standardize(x, loc, scale)
    return log_expit(z) + log_expit(-z) - log_param(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Density. Example: ``pdf(0.0)``  # 0.25"""
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """expit(z). Example: ``cdf(0.0)``  # 0.5"""
    return expit(standardize(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log_expit(z). Example: ``logcdf(0.0)``"""
    return log_expit(standardize(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """expit(-z). Example: ``sf(0.0)``  # 0.5"""
    return expit(-standardize(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log_expit(-z). Example: ``logsf(0.0)``"""
    return log_expit(-standardize(x, loc, scale))
