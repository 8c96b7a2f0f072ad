"""Differentiable ``scipy.stats`` distributions: ``norm``, ``multivariate_normal``, ``t``,
``gamma``, ``beta``, ``poisson``, ``dirichlet``, ``chi2``, ``expon``, ``laplace``,
``logistic``, ``bernoulli``, ``binom``.

Each distribution is a module with SciPy's functions of the same names and
argument order (``logpdf``/``pdf``/``logcdf``/``cdf``/``sf``/``logsf`` for continuous
ones, ``logpmf``/``pmf``/``cdf`` ... for discrete ones, with ``loc``/``scale``), as
in ``jax.scipy.stats``. They are compositions of funcgrad.numpy and
funcgrad.scipy.special functions, so they are differentiable in every continuous
argument (to any order), batch under ``vmap`` and run on any device; the
exceptions are CDFs whose special function has no derivative in a shape
parameter (``gamma.cdf``/``chi2.cdf`` in ``a``/``df``, ``beta.cdf`` in ``a``,
``b``, ``t.cdf`` in ``df``): differentiating those raises TypeError.

Example::

    import funcgrad as fg
    from funcgrad.scipy.stats import norm

    fg.grad(norm.logpdf, argnums=(0, 1, 2))(0.5, 0.0, 2.0)
"""

from __future__ import annotations

from .._scipy import require_scipy

require_scipy("stats", uses="special")

from . import (  # noqa: E402
    bernoulli, beta, binom, chi2, dirichlet, expon, gamma, laplace, logistic, multivariate_normal, norm, poisson, t,
)

__all__ = ["norm", "multivariate_normal", "t", "gamma", "beta", "poisson", "dirichlet", "chi2", "expon",
           "laplace", "logistic", "bernoulli", "binom"]
