"""The Dirichlet distribution: differentiable ``scipy.stats.dirichlet``.

As in SciPy, the components run along the first axis of ``x`` (shape (K,) or (K, N)).

Example::

    from funcgrad.scipy.stats import dirichlet
    dirichlet.logpdf(fnp.array([0.2, 0.3, 0.5]), fnp.array([1.0, 2.0, 3.0]))
"""

from __future__ import annotations

from typing import Any

import funcgrad.numpy as fnp

from ...numpy._util import ndim, shape
from ..special import gammaln, xlogy

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, alpha: Any) -> Any:
    """sum (alpha_i - 1) log x_i - log B(alpha). Example: ``logpdf(fnp.array([0.5, 0.5]), fnp.array([1.0, 1.0]))``  # 0"""
    if ndim(alpha) != 1:
        raise ValueError(f"dirichlet: alpha must be a vector of concentrations, got shape {shape(alpha)}")
    if ndim(x) < 1 or shape(x)[0] != shape(alpha)[0]:
        raise ValueError(f"dirichlet: x must have the {shape(alpha)[0]} components of alpha along its first "
                         f"axis, got shape {shape(x)}")
    a = fnp.reshape(alpha, shape(alpha) + (1,) * (ndim(x) - 1))
    log_b = fnp.sum(gammaln(alpha)) - gammaln(fnp.sum(alpha))
    return fnp.sum(xlogy(a - 1, x), axis=0) - log_b


def pdf(x: Any, alpha: Any) -> Any:
    """Density. Example: ``pdf(fnp.array([0.5, 0.5]), fnp.array([2.0, 2.0]))``  # 1.5"""
    return fnp.exp(logpdf(x, alpha))
