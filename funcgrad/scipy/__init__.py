"""funcgrad.scipy: differentiable parts of SciPy.

``funcgrad.scipy.special`` mirrors ``scipy.special`` (logsumexp, expit, erf,
gammaln, digamma, softmax, ...). Importing it never needs SciPy; functions
that call SciPy's kernels (erf, gammaln, ...) raise an ImportError that says
``pip install funcgrad[scipy]`` when SciPy is missing, while logsumexp,
expit, logit, log_expit, softmax and log_softmax are written with the array
namespace alone.

``linalg``, ``stats``, ``signal``, ``integrate``, ``optimize`` and ``sparse`` mirror the
SciPy modules of the same names; they need SciPy, and importing one without it raises
an ImportError that says ``pip install funcgrad[scipy]``.

Example::

    import funcgrad as fg
    from funcgrad.scipy.special import logsumexp

    fg.grad(logsumexp)(fnp.array([1.0, 2.0, 3.0]))   # softmax weights
"""

from __future__ import annotations

import importlib
from typing import Any

from . import special  # noqa: F401

__all__ = ["special", "linalg", "stats", "signal", "integrate", "optimize", "sparse"]

# linalg, stats, signal, integrate and optimize need SciPy: imported on first use, so
# that ``import funcgrad.scipy`` works without it and ``funcgrad.scipy.linalg`` says how
# to install it.
_LAZY = {"linalg", "stats", "signal", "integrate", "optimize", "sparse"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
