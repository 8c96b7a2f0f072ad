"""The gamma family of ``scipy.special``, differentiable: ``gamma``, ``gammaln``, ``digamma``
(``psi``) and ``polygamma``, each the derivative of the one before. A module of its own
because the other families' rules are written with them; re-exported by
:mod:`funcgrad.scipy.special` (import them from there).
"""

from __future__ import annotations

from typing import Any, Callable

import funcgrad.numpy as fnp  # noqa: F401  (doc examples)

from ..backend import namespace_of
from ..core import defprimitive
from ..numpy._batching import elementwise_rule
from ..numpy._typing import Array, ArrayLike
from ..numpy._util import unbroadcast
from ..numpy.special_base import _special_function
from ..numpy.special_base import unary_special as _unary

__all__ = ["polygamma", "digamma", "psi", "gammaln", "gamma"]


def _polygamma_raw(n: Any, x: Any) -> Any:
    out = _special_function(namespace_of(n, x), "polygamma")(n, x)
    # scipy.special.polygamma computes in float64; keep the dtype of x.
    want = getattr(x, "dtype", None)
    if want is not None and want.kind == "f" and out.dtype != want:
        out = out.astype(want)
    return out


def _polygamma_order_rule(*_: Any, **__: Any) -> Any:
    raise TypeError(
        "polygamma(n, x) is not differentiable with respect to the order n; pass n as a "
        "constant (an int or integer array), not a traced value"
    )


polygamma: Callable[[ArrayLike, ArrayLike], Array] = defprimitive(
    _polygamma_raw, name="polygamma",
    vjp=(_polygamma_order_rule, lambda g, ans, n, x: unbroadcast(g * polygamma(n + 1, x), x)),
    jvp=(_polygamma_order_rule, lambda t, ans, n, x: t * polygamma(n + 1, x)), batch_from=elementwise_rule,
    doc="""The n-th derivative of digamma. Differentiable ``scipy.special.polygamma`` (in x).

    d/dx polygamma(n, x) = polygamma(n + 1, x). The order ``n`` (a non-negative
    integer, or an array of them) is not differentiable. Unlike SciPy the
    result keeps the dtype of a floating ``x`` (SciPy returns float64).

    Example::

        polygamma(1, fnp.array([1.0, 2.0]))   # [pi^2/6, pi^2/6 - 1]
    """,
)

digamma: Callable[[ArrayLike], Array] = _unary("digamma", lambda ans, x: polygamma(1, x), """The logarithmic derivative of the gamma function. Differentiable ``scipy.special.digamma``.

    d/dx digamma(x) = polygamma(1, x).

    Example::

        digamma(fnp.array([1.0]))   # [-euler_gamma]
    """)
psi = digamma

gammaln: Callable[[ArrayLike], Array] = _unary("gammaln", lambda ans, x: digamma(x), """log|Gamma(x)|. Differentiable ``scipy.special.gammaln``; d/dx = digamma(x).

    Example::

        gammaln(fnp.array([1.0, 5.0]))   # [0, log(24)]
    """)

gamma: Callable[[ArrayLike], Array] = _unary("gamma", lambda ans, x: ans * digamma(x), """The gamma function. Differentiable ``scipy.special.gamma``; d/dx = gamma(x) digamma(x).

    Example::

        gamma(fnp.array([5.0]))   # [24]
    """)
