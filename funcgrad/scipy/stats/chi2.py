"""The chi-squared distribution: differentiable ``scipy.stats.chi2`` (``cdf`` in ``df`` to second order).

Example::

    from funcgrad.scipy.stats import chi2
    chi2.logpdf(fnp.array([0.5, 2.0]), 3.0)
"""

from __future__ import annotations

from typing import Any

from . import gamma as _gamma

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density: gamma with shape df/2 and scale 2 scale. Example: ``logpdf(1.0, 3.0)``"""
    return _gamma.logpdf(x, df / 2, loc, 2 * scale)


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Density. Example: ``pdf(1.0, 3.0)``"""
    return _gamma.pdf(x, df / 2, loc, 2 * scale)


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """CDF; differentiable in df to second order (special.gammainc). Example: ``cdf(1.0, 3.0)``"""
    return _gamma.cdf(x, df / 2, loc, 2 * scale)


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log CDF. Example: ``logcdf(1.0, 3.0)``"""
    return _gamma.logcdf(x, df / 2, loc, 2 * scale)


def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Survival function. Example: ``sf(1.0, 3.0)``"""
    return _gamma.sf(x, df / 2, loc, 2 * scale)


def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log survival function. Example: ``logsf(1.0, 3.0)``"""
    return _gamma.logsf(x, df / 2, loc, 2 * scale)
