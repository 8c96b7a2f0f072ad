"""funcgrad.scipy: differentiable parts of SciPy.

``funcgrad.scipy.special`` mirrors ``scipy.special`` (logsumexp, expit, erf,
gammaln, digamma, softmax, ...). Importing it never needs SciPy; functions
that call SciPy's kernels (erf, gammaln, ...) raise an ImportError that says
``pip install funcgrad[scipy]`` when SciPy is missing, while logsumexp,
expit, logit, log_expit, softmax and log_softmax are written with the array
namespace alone.

Example::

    import funcgrad as fg
    from funcgrad.scipy.special import logsumexp

    fg.grad(logsumexp)(fnp.array([1.0, 2.0, 3.0]))   # softmax weights
"""

from __future__ import annotations

from . import special  # noqa: F401

__all__ = ["special"]
