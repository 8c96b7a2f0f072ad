"""The Dirichlet distribution: differentiable ``scipy.stats.dirichlet``.

As in SciPy, the components run along the first axis of ``x`` (shape (K,) or (K, N)).

Example::

    from funcgrad.scipy.stats import dirichlet
    dirichlet.logpdf(fnp.array([0.2, 0.3, 0.5]), fnp.array([1.0, 2.0, 3.0]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ...backend import device_of, device_put, namespace_of, to_numpy
from ...core.trace import is_traced
from ...numpy._util import ndim, shape
from .._random_state import numpy_generator
from ..special import gammaln, xlogy

__all__ = ["logpdf", "pdf", "rvs"]


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


def rvs(alpha: Any, size: Any = 1, random_state: Any = None) -> Any:
    """Random draws, shape ``size + (K,)``, as ``scipy.stats.dirichlet.rvs``: ``random_state``
    is None (NumPy's global generator), an int seed, or a ``numpy.random.Generator`` /
    ``RandomState``; the same seed gives SciPy's draws. A ``fg.random`` key seeds NumPy's
    generator with its 64 bits. The draws carry no derivative (``fg.random.dirichlet(key,
    alpha)`` gives reparameterized draws, JAX's).

    Example::

        rvs(fnp.array([1.0, 2.0, 3.0]), size=2, random_state=0)   # shape (2, 3)
        rvs(fnp.array([1.0, 2.0]), size=3, random_state=fg.random.PRNGKey(0))
    """
    if is_traced(alpha):
        raise TypeError("dirichlet.rvs: alpha is a traced value, but these draws carry no derivative; pass "
                        "a constant alpha (fg.stop_gradient(alpha)) or draw outside the transform")
    if ndim(alpha) != 1:
        raise ValueError(f"dirichlet: alpha must be a vector of concentrations, got shape {shape(alpha)}")
    host = np.asarray(to_numpy(alpha))
    draws = numpy_generator(random_state, "dirichlet.rvs").dirichlet(host, size=size)
    return draws if namespace_of(alpha) is np else device_put(draws, device_of(alpha))

