"""``ft.special``: PyTorch's ``torch.special`` (the special functions of SciPy's names, Bessel functions and
orthogonal polynomials) on Tensors.

Each function applies the ``funcgrad.scipy.special`` primitive (or the Tensor method) to its input, in the
default float dtype for integer inputs, so it is recorded and differentiable to any order; the orthogonal
polynomials are their three-term recurrences in recorded Tensor operations (differentiable in ``input``;
``n`` is an integer, or an integer tensor broadcast against ``input``).

Example::

    import funcgrad.tensor as ft

    x = ft.tensor([0.5, 1.5], requires_grad=True)
    ft.special.expit(x); ft.special.i0e(x); ft.special.chebyshev_polynomial_t(x, 3)
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Callable, cast

import funcgrad.numpy as fnp
import funcgrad.scipy.special as fsp

from . import dtypes as _dt
from ._tensor_special import _promoted
from .tensor import Tensor
from .tensor import _as_tensor

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc",
    "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
    "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p",
    "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]


def _floating(x: Any) -> Tensor:
    t = _as_tensor(x)
    return t.to(_dt.get_default_dtype()) if t._value.dtype.kind in "biu" else t


def _unary(fn: Callable[..., Any], name: str, doc: str) -> Callable[..., Tensor]:
    def f(input: Any, *, out: Any = None) -> Tensor:  # noqa: A002
        if out is not None:
            raise NotImplementedError(f"special.{name}(): out= is not supported; use the result")
        return cast(Tensor, fn(_floating(input)))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + f" (``torch.special.{name}``); differentiable."
    return f


def _binary(fn: Callable[..., Any], name: str, doc: str) -> Callable[..., Tensor]:
    def f(input: Any, other: Any, *, out: Any = None) -> Tensor:  # noqa: A002
        if out is not None:
            raise NotImplementedError(f"special.{name}(): out= is not supported; use the result")
        a, b = _promoted(name, input if isinstance(input, Tensor) else _as_tensor(input), other, to_float=True)
        return cast(Tensor, fn(a, b))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + f" (``torch.special.{name}``); differentiable."
    return f


(digamma, entr, erf, erfc, erfinv, expit, gammaln, i0, i1, log_ndtr, ndtr, ndtri, bessel_j0, bessel_j1, bessel_y0,
 bessel_y1) = (_unary(f, n, d) for f, n, d in (
    (fsp.digamma, "digamma", "The logarithmic derivative of the gamma function"),
    (fsp.entr, "entr", "``-x log x`` (0 at 0, -inf below)"), (fsp.erf, "erf", "The error function"),
    (fsp.erfc, "erfc", "``1 - erf(x)``"), (fsp.erfinv, "erfinv", "The inverse error function"),
    (fsp.expit, "expit", "The logistic sigmoid"), (fsp.gammaln, "gammaln", "``log |Gamma(x)|``"),
    (fsp.i0, "i0", "The modified Bessel function of the first kind, order 0"),
    (fsp.i1, "i1", "The modified Bessel function of the first kind, order 1"),
    (fsp.log_ndtr, "log_ndtr", "The log of the standard normal CDF"),
    (fsp.ndtr, "ndtr", "The standard normal CDF"), (fsp.ndtri, "ndtri", "The inverse of ``ndtr``"),
    (fsp.j0, "bessel_j0", "The Bessel function of the first kind, order 0"),
    (fsp.j1, "bessel_j1", "The Bessel function of the first kind, order 1"),
    (fsp.y0, "bessel_y0", "The Bessel function of the second kind, order 0"),
    (fsp.y1, "bessel_y1", "The Bessel function of the second kind, order 1")))
psi = digamma
erfcx = _unary(fsp.erfcx, "erfcx", "``exp(x^2) erfc(x)``, without overflow for large ``x``")
modified_bessel_i0, modified_bessel_i1 = i0, i1
i0e = _unary(lambda x: fsp.ive(0.0, x), "i0e", "``i0(x) * exp(-|x|)``")
i1e = _unary(lambda x: fsp.ive(1.0, x), "i1e", "``i1(x) * exp(-|x|)``")
modified_bessel_k0 = _unary(lambda x: fsp.kv(0.0, x), "modified_bessel_k0",
                            "The modified Bessel function of the second kind, order 0")
modified_bessel_k1 = _unary(lambda x: fsp.kv(1.0, x), "modified_bessel_k1",
                            "The modified Bessel function of the second kind, order 1")
spherical_bessel_j0 = _unary(lambda x: fnp.sinc(x / math.pi), "spherical_bessel_j0", "``sin(x) / x`` (1 at 0)")
exp2, expm1, log1p, sinc = (_unary(lambda x, n=n: getattr(x, n)(), n, f"``Tensor.{n}``")
                            for n in ("exp2", "expm1", "log1p", "sinc"))
xlogy = _binary(fsp.xlogy, "xlogy", "``input * log(other)``, 0 where ``input`` is 0")
xlog1py = _binary(fsp.xlog1py, "xlog1py", "``input * log1p(other)``, 0 where ``input`` is 0")
zeta = _binary(fsp.zeta, "zeta", "The Hurwitz zeta function ``sum_k (k + other) ** -input``")
gammainc = _binary(fsp.gammainc, "gammainc", "The regularized lower incomplete gamma function")
gammaincc = _binary(fsp.gammaincc, "gammaincc", "The regularized upper incomplete gamma function")


def airy_ai(input: Any, *, out: Any = None) -> Tensor:  # noqa: A002
    """The Airy function Ai (``torch.special.airy_ai``), from the Bessel functions of order 1/3 at
    ``z = 2/3 |x|^(3/2)``: ``sqrt(x/3) K(z) / pi`` for ``x > 0``, ``sqrt(|x|)/2 (J(z) - Y(z)/sqrt(3))`` for
    ``x < 0``; differentiable."""
    x = _floating(input)
    ax = x.abs()
    z = (2.0 / 3.0) * ax ** 1.5
    right, left = x > 0, x < 0
    positive = fsp.kv(1.0 / 3.0, fnp.where(right, z, 1.0)) * (ax / 3.0).sqrt() / math.pi
    zl = fnp.where(left, z, 1.0)
    negative = ax.sqrt() / 2.0 * (fsp.jv(1.0 / 3.0, zl) - fsp.yv(1.0 / 3.0, zl) / math.sqrt(3.0))
    at_zero = 1.0 / (3.0 ** (2.0 / 3.0) * math.gamma(2.0 / 3.0))
    return cast(Tensor, fnp.where(right, positive, fnp.where(left, negative, at_zero)))


def polygamma(n: int, input: Any, *, out: Any = None) -> Tensor:  # noqa: A002
    """The ``n``-th derivative of ``digamma`` (``torch.special.polygamma``)."""
    return _as_tensor(input).polygamma(n)


def multigammaln(input: Any, p: int, *, out: Any = None) -> Tensor:  # noqa: A002
    """The log of the multivariate gamma function of dimension ``p`` (``torch.special.multigammaln``)."""
    return _as_tensor(input).mvlgamma(p)


def logit(input: Any, eps: float | None = None, *, out: Any = None) -> Tensor:  # noqa: A002
    """``log(x / (1 - x))``, ``x`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    return _as_tensor(input).logit(eps)


def round(input: Any, *, decimals: int = 0, out: Any = None) -> Tensor:  # noqa: A001,A002
    """Round half to even, to ``decimals`` places (``torch.special.round``)."""
    return _as_tensor(input).round(decimals=decimals)


def softmax(input: Any, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """``exp(x) / sum(exp(x), dim)`` (``torch.special.softmax``)."""
    return _as_tensor(input).softmax(dim, dtype=dtype)


def log_softmax(input: Any, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """``x - logsumexp(x, dim)`` (``torch.special.log_softmax``)."""
    return _as_tensor(input).log_softmax(dim, dtype=dtype)


def logsumexp(input: Any, dim: Any, keepdim: bool = False, *, out: Any = None) -> Tensor:  # noqa: A002
    """``log(sum(exp(x), dim))``, computed stably (``torch.special.logsumexp``)."""
    return _as_tensor(input).logsumexp(dim, keepdim)


# ---------------------------------------------------------------------------- orthogonal polynomials
def _recurrence(name: str, first: Callable[[Tensor], Any], step: Callable[[int, Tensor, Any, Any], Any],
                shift: bool = False) -> Callable[..., Tensor]:
    """The polynomial ``p_n(x)`` with ``p_0 = 1``, ``p_1 = first(x)`` and ``p_{k+1} = step(k, x, p_k, p_{k-1})``
    (of ``2x - 1`` when ``shift``); 0 for negative ``n``."""

    def poly(input: Any, n: Any, *, out: Any = None) -> Tensor:  # noqa: A002
        x = _floating(input)
        if isinstance(n, Tensor):
            x, n = _promoted(name, x, n, to_float=True)
            orders = n._value
            top = builtins.int(orders.max()) if orders.size else 0  # (one transfer: the loop's length)
        else:
            orders, top = None, builtins.int(n)
        if shift:
            x = 2 * x - 1
        values: list[Any] = [x * 0 + 1]
        if top >= 1:
            values.append(first(x))
        for k in range(1, top):
            values.append(step(k, x, values[k], values[k - 1]))
        if orders is None:
            result = values[top] if top >= 0 else x * 0
        else:
            result = x * 0
            for k, v in enumerate(values):
                result = fnp.where((orders == k), v, result)
        return _as_tensor(result)

    poly.__name__ = poly.__qualname__ = name
    poly.__doc__ = (f"The polynomial ``{name}`` of degree ``n`` at ``input`` (``torch.special.{name}``), by its "
                    f"three-term recurrence; differentiable in ``input``.")
    return poly


def _chebyshev(k: int, x: Tensor, p: Any, q: Any) -> Any:
    return 2 * x * p - q


chebyshev_polynomial_t = _recurrence("chebyshev_polynomial_t", lambda x: x, _chebyshev)
chebyshev_polynomial_u = _recurrence("chebyshev_polynomial_u", lambda x: 2 * x, _chebyshev)
chebyshev_polynomial_v = _recurrence("chebyshev_polynomial_v", lambda x: 2 * x - 1, _chebyshev)
chebyshev_polynomial_w = _recurrence("chebyshev_polynomial_w", lambda x: 2 * x + 1, _chebyshev)
shifted_chebyshev_polynomial_t = _recurrence("shifted_chebyshev_polynomial_t", lambda x: x, _chebyshev, shift=True)
shifted_chebyshev_polynomial_u = _recurrence("shifted_chebyshev_polynomial_u", lambda x: 2 * x, _chebyshev, shift=True)
shifted_chebyshev_polynomial_v = _recurrence("shifted_chebyshev_polynomial_v", lambda x: 2 * x - 1, _chebyshev,
                                             shift=True)
shifted_chebyshev_polynomial_w = _recurrence("shifted_chebyshev_polynomial_w", lambda x: 2 * x + 1, _chebyshev,
                                             shift=True)
hermite_polynomial_h = _recurrence("hermite_polynomial_h", lambda x: 2 * x,
                                   lambda k, x, p, q: 2 * x * p - 2 * k * q)
hermite_polynomial_he = _recurrence("hermite_polynomial_he", lambda x: x, lambda k, x, p, q: x * p - k * q)
laguerre_polynomial_l = _recurrence("laguerre_polynomial_l", lambda x: 1 - x,
                                    lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1))
legendre_polynomial_p = _recurrence("legendre_polynomial_p", lambda x: x,
                                    lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1))
