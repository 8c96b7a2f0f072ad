"""More of ``scipy.special``, differentiable: the incomplete gamma and beta families, zeta,
the normal distribution's functions, entropies and Bessel functions.

Re-exported by :mod:`funcgrad.scipy.special` (import them from there). Each function is
a primitive computed by the special-function module of the arrays' namespace (SciPy,
``cupyx.scipy.special``), with VJP, JVP and batching rules; the rules are written in
differentiable operations, so derivatives of any order follow. Arguments that have no
derivative here (a Bessel function's order, the shape ``a`` of ``gammainc``, the
exponent of ``zeta``) raise a clear error when differentiated.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from ..numpy._batching import elementwise_rule
from ..numpy._util import unbroadcast
from ._scipy import scipy_function
from .special import digamma, gammaln

__all__: list[str] = [
    "betaln", "gammainc", "gammaincc", "multigammaln", "zeta", "ndtr", "ndtri", "log_ndtr",
    "entr", "rel_entr", "kl_div", "j0", "j1", "y0", "y1", "jv", "yv", "iv", "kv",
]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _raw(name: str) -> Callable[..., Any]:
    """Raw ``<special module>.<name>`` keeping the floating dtype of the arguments
    (some SciPy kernels compute float32 input in float64)."""

    def raw(*args: Any) -> Any:
        xp = namespace_of(*args)
        out = scipy_function(xp, "special", name)(*args)
        floats = [a.dtype for a in args if getattr(a, "dtype", None) is not None and a.dtype.kind == "f"]
        if floats:
            want = np.result_type(*floats)
            if out.dtype != want and out.dtype.kind == "f":
                out = out.astype(want)
        return out

    raw.__name__ = raw.__qualname__ = name
    return raw


def _per_arg(rules: list[Any]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """VJP and JVP rules from ``d f / d arg_k`` formulas ``deriv(ans, *args)`` (None: no derivative)."""
    vjp, jvp = {}, {}
    for k, d in enumerate(rules):
        if d is None:
            continue
        vjp[k] = (lambda d, k: lambda g, ans, *a: unbroadcast(g * d(ans, *a), a[k]))(d, k)
        jvp[k] = (lambda d: lambda t, ans, *a: t * d(ans, *a))(d)
    return vjp, jvp


def _no_derivative(fname: str, arg: str, why: str) -> Callable[..., Any]:
    def rule(*_: Any, **__: Any) -> Any:
        raise TypeError(f"{fname} is not differentiable with respect to {arg} ({why}); pass {arg} as a "
                        f"constant, not a traced value")

    return rule


def _special(name: str, derivs: list[Any], doc: str,
             no_deriv: dict[int, tuple[str, str]] | None = None) -> Callable[..., Any]:
    vjp, jvp = _per_arg(derivs)
    for k, (arg, why) in (no_deriv or {}).items():
        vjp[k] = jvp[k] = _no_derivative(name, arg, why)
    return defprimitive(_raw(name), name=name, vjp=vjp, jvp=jvp, batch_from=elementwise_rule, doc=doc)


# --------------------------------------------------------------------------
# gamma and beta families

betaln = _special("betaln", [
    lambda ans, a, b: digamma(a) - digamma(a + b),
    lambda ans, a, b: digamma(b) - digamma(a + b),
], """log|B(a, b)|. Differentiable ``scipy.special.betaln``; d/da = digamma(a) - digamma(a + b).

    Example::

        betaln(fnp.array([1.0, 2.0]), fnp.array([1.0, 3.0]))   # [0, log(1/12)]
    """)


def _gammainc_dx(ans: Any, a: Any, x: Any) -> Any:
    return fnp.exp((a - 1) * fnp.log(x) - x - gammaln(a))


_GAMMAINC_A = ("the shape a", "its derivative in a is not implemented")

gammainc = _special("gammainc", [None, _gammainc_dx], """The regularized lower incomplete gamma function P(a, x).
    Differentiable ``scipy.special.gammainc`` in ``x``: d/dx = x^(a-1) exp(-x) / Gamma(a).

    The derivative in the shape ``a`` is not provided: differentiating with respect
    to ``a`` raises TypeError.

    Example::

        gammainc(1.0, fnp.array([1.0]))   # 1 - exp(-1)
    """, {0: _GAMMAINC_A})

gammaincc = _special("gammaincc", [None, lambda ans, a, x: -_gammainc_dx(ans, a, x)],
                     """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).
    Differentiable ``scipy.special.gammaincc`` in ``x``; not in ``a`` (raises TypeError).

    Example::

        gammaincc(1.0, fnp.array([1.0]))   # exp(-1)
    """, {0: _GAMMAINC_A})


def multigammaln(a: Any, d: int) -> Any:
    """Log of the multivariate gamma function of dimension ``d``. Differentiable
    ``scipy.special.multigammaln`` in ``a`` (a sum of gammaln terms; ``d`` is an int).

    Example::

        multigammaln(fnp.array([3.0]), 2)
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d!r}")
    out = d * (d - 1) / 4 * math.log(math.pi)
    for j in range(1, d + 1):
        out = out + gammaln(a + (1 - j) / 2)
    return out


_zeta: Callable[..., Any] = _special("zeta", [None, lambda ans, x, q: -x * _zeta(x + 1, q)],
                 "", {0: ("the exponent x", "its derivative in x is not implemented")})


def zeta(x: Any, q: Any = None) -> Any:
    """Hurwitz zeta function sum_k (k + q)^-x (Riemann's with ``q=None``). Differentiable
    ``scipy.special.zeta`` in ``q``: d/dq = -x zeta(x + 1, q). Not in ``x`` (raises TypeError).

    Example::

        zeta(fnp.array([2.0]))   # pi^2 / 6
    """
    return _zeta(x, 1.0 if q is None else q)


# --------------------------------------------------------------------------
# the normal distribution

ndtr = _special("ndtr", [lambda ans, x: fnp.exp(-0.5 * x * x - _LOG_SQRT_2PI)],
                """The standard normal CDF. Differentiable ``scipy.special.ndtr``; d/dx = the normal density.

    Example::

        ndtr(fnp.array([0.0]))   # 0.5
    """)

ndtri = _special("ndtri", [lambda ans, p: _SQRT_2PI * fnp.exp(0.5 * ans * ans)],
                 """The inverse of ndtr. Differentiable ``scipy.special.ndtri``; d/dp = 1 / density(ndtri(p)).

    Example::

        ndtri(fnp.array([0.5]))   # 0
    """)

log_ndtr = _special("log_ndtr", [lambda ans, x: fnp.exp(-0.5 * x * x - _LOG_SQRT_2PI - ans)],
                    """log of the standard normal CDF, accurate far in both tails.
    Differentiable ``scipy.special.log_ndtr``: d/dx = exp(-x^2/2 - log(2 pi)/2 - log_ndtr(x)),
    computed in log space so that it stays finite (about -x) for x -> -inf.

    Example::

        log_ndtr(fnp.array([-40.0, 0.0, 40.0]))
    """)


# --------------------------------------------------------------------------
# entropies

entr = _special("entr", [lambda ans, x: -(fnp.log(x) + 1)],
                """-x log x (0 at x = 0, -inf for x < 0). Differentiable ``scipy.special.entr``; d/dx = -log(x) - 1.

    Example::

        entr(fnp.array([0.5, 1.0]))
    """)

rel_entr = _special("rel_entr", [
    lambda ans, x, y: fnp.log(x / y) + 1,
    lambda ans, x, y: -x / y,
], """x log(x / y) (0 at x = 0, inf where undefined). Differentiable ``scipy.special.rel_entr``.

    d/dx = log(x / y) + 1, d/dy = -x / y (for x, y > 0).

    Example::

        rel_entr(fnp.array([0.5]), fnp.array([0.25]))   # 0.5 log 2
    """)

kl_div = _special("kl_div", [
    lambda ans, x, y: fnp.log(x / y),
    lambda ans, x, y: 1 - x / y,
], """x log(x / y) - x + y. Differentiable ``scipy.special.kl_div``; d/dx = log(x / y), d/dy = 1 - x / y.

    Example::

        kl_div(fnp.array([0.5]), fnp.array([0.25]))
    """)


# --------------------------------------------------------------------------
# Bessel functions (derivatives from the recurrences; the order is not differentiable)

_ORDER = {0: ("the order v", "it is a discrete parameter here")}

jv: Callable[..., Any] = _special("jv", [None, lambda ans, v, x: (jv(v - 1, x) - jv(v + 1, x)) / 2],
              """Bessel function of the first kind of real order v. Differentiable ``scipy.special.jv`` in x:
    d/dx J_v = (J_{v-1} - J_{v+1}) / 2. The order is not differentiable (TypeError).

    Example::

        jv(2.0, fnp.array([1.0]))
    """, _ORDER)

yv: Callable[..., Any] = _special("yv", [None, lambda ans, v, x: (yv(v - 1, x) - yv(v + 1, x)) / 2],
              """Bessel function of the second kind of real order v. Differentiable ``scipy.special.yv`` in x:
    d/dx Y_v = (Y_{v-1} - Y_{v+1}) / 2. The order is not differentiable (TypeError).

    Example::

        yv(2.0, fnp.array([1.0]))
    """, _ORDER)

iv: Callable[..., Any] = _special("iv", [None, lambda ans, v, x: (iv(v - 1, x) + iv(v + 1, x)) / 2],
              """Modified Bessel function of the first kind of real order v. Differentiable ``scipy.special.iv``
    in x: d/dx I_v = (I_{v-1} + I_{v+1}) / 2. The order is not differentiable (TypeError).

    Example::

        iv(1.0, fnp.array([1.0]))
    """, _ORDER)

kv: Callable[..., Any] = _special("kv", [None, lambda ans, v, x: -(kv(v - 1, x) + kv(v + 1, x)) / 2],
              """Modified Bessel function of the second kind of real order v. Differentiable ``scipy.special.kv``
    in x: d/dx K_v = -(K_{v-1} + K_{v+1}) / 2. The order is not differentiable (TypeError).

    Example::

        kv(1.0, fnp.array([1.0]))
    """, _ORDER)

j0 = _special("j0", [lambda ans, x: -j1(x)], """Bessel J_0. Differentiable ``scipy.special.j0``; d/dx = -J_1(x).

    Example::

        j0(fnp.array([0.0, 1.0]))
    """)

j1: Callable[..., Any] = _special("j1", [lambda ans, x: (j0(x) - jv(2.0, x)) / 2],
              """Bessel J_1. Differentiable ``scipy.special.j1``; d/dx = (J_0(x) - J_2(x)) / 2.

    Example::

        j1(fnp.array([0.0, 1.0]))
    """)

y0 = _special("y0", [lambda ans, x: -y1(x)], """Bessel Y_0. Differentiable ``scipy.special.y0``; d/dx = -Y_1(x).

    Example::

        y0(fnp.array([1.0]))
    """)

y1: Callable[..., Any] = _special("y1", [lambda ans, x: (y0(x) - yv(2.0, x)) / 2],
              """Bessel Y_1. Differentiable ``scipy.special.y1``; d/dx = (Y_0(x) - Y_2(x)) / 2.

    Example::

        y1(fnp.array([1.0]))
    """)


# --------------------------------------------------------------------------
# CDFs the distributions need: derivative in the variable, not in the shape parameters

_SHAPE = ("the shape parameters", "their derivatives are not implemented")


def _betainc_dx(ans: Any, a: Any, b: Any, x: Any) -> Any:
    return fnp.exp((a - 1) * fnp.log(x) + (b - 1) * fnp.log1p(-x) - betaln(a, b))


betainc = defprimitive(
    _raw("betainc"), name="betainc",
    vjp={0: _no_derivative("betainc", "a", _SHAPE[1]), 1: _no_derivative("betainc", "b", _SHAPE[1]),
         2: lambda g, ans, a, b, x: unbroadcast(g * _betainc_dx(ans, a, b, x), x)},
    jvp={0: _no_derivative("betainc", "a", _SHAPE[1]), 1: _no_derivative("betainc", "b", _SHAPE[1]),
         2: lambda t, ans, a, b, x: t * _betainc_dx(ans, a, b, x)},
    batch_from=elementwise_rule,
    doc="""The regularized incomplete beta function I_x(a, b). Differentiable ``scipy.special.betainc``
    in ``x`` (d/dx = x^(a-1) (1-x)^(b-1) / B(a, b)); not in ``a`` or ``b`` (raises TypeError).

    Example::

        betainc(1.0, 1.0, fnp.array([0.25]))   # 0.25
    """)


def _stdtr_dt(ans: Any, df: Any, t: Any) -> Any:
    return fnp.exp(gammaln((df + 1) / 2) - gammaln(df / 2) - 0.5 * fnp.log(df * math.pi)
                   - (df + 1) / 2 * fnp.log1p(t * t / df))


stdtr = defprimitive(
    _raw("stdtr"), name="stdtr",
    vjp={0: _no_derivative("stdtr", "df", "its derivative in the degrees of freedom is not implemented"),
         1: lambda g, ans, df, t: unbroadcast(g * _stdtr_dt(ans, df, t), t)},
    jvp={0: _no_derivative("stdtr", "df", "its derivative in the degrees of freedom is not implemented"),
         1: lambda tt, ans, df, t: tt * _stdtr_dt(ans, df, t)},
    batch_from=elementwise_rule,
    doc="""Student t CDF. Differentiable ``scipy.special.stdtr`` in ``t`` (d/dt = the t density);
    not in ``df`` (raises TypeError).

    Example::

        stdtr(3.0, fnp.array([0.0]))   # 0.5
    """)

__all__ += ["betainc", "stdtr"]
