"""Differentiable ``scipy.special``: logsumexp, expit, erf, gammaln, digamma, softmax, ...

Each function mirrors the SciPy function of the same name and signature and
is a primitive with a VJP and a JVP rule written in funcgrad.numpy (and in
this module), so derivatives of any order come for free: the derivative of
``gammaln`` is ``digamma``, whose derivative is ``polygamma(1, x)``, and so on.

Two kinds of raw (untraced) functions:

* ``logsumexp``, ``softmax``, ``log_softmax``, ``expit``, ``logit`` and
  ``log_expit`` are written with the arrays' own namespace (numpy, cupy, ...)
  and need no SciPy. They are numerically stable for large ``|x|`` in float32
  and float64 alike.
* The others (``erf``, ``gammaln``, ``digamma``, ``polygamma``, ...) call the
  special-function module that matches the arrays' namespace, chosen by
  :func:`_special_namespace`: ``scipy.special`` for NumPy arrays (SciPy is the
  optional ``scipy`` extra: ``pip install funcgrad[scipy]``; without it these
  functions raise ImportError, importing this module still works),
  ``cupyx.scipy.special`` for CuPy arrays, and for any other namespace the
  module found in its ``scipy_special`` attribute.

Example::

    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad.scipy.special import logsumexp, gammaln

    fg.grad(logsumexp)(fnp.array([1.0, 2.0, 3.0]))   # softmax([1, 2, 3])
    fg.grad(fg.grad(gammaln))(2.5)                    # polygamma(1, 2.5)
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..backend import fused, namespace_of
from ..core import defprimitive
from ..numpy._typing import Array, ArrayLike
from ..numpy._batching import elementwise_rule, move_to_front, reduction_rule
from ..numpy._util import ndim, shape, unbroadcast
from ..numpy import special_base
from ..numpy.special_base import _special_function, _special_namespace, _special_raw
from ..numpy.special_base import unary_special as _unary
from .prefix_scans import logcumsumexp  # noqa: F401  (the scan of logaddexp: logsumexp's cumulative form)

__all__: list[str] = [
    "logsumexp", "softmax", "log_softmax", "expit", "logit", "log_expit",
    "erf", "erfc", "erfcx", "erfinv", "erfcinv", "gammaln", "gamma", "digamma", "psi", "polygamma",
    "xlogy", "xlog1py", "i0", "i1", "logcumsumexp",
]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0


# --------------------------------------------------------------------------
# special-function module per array namespace

# --------------------------------------------------------------------------
# helpers for the namespace-only functions

def _as_float(xp: Any, x: Any) -> Any:
    """``x`` as an array of its namespace; integer and boolean input becomes float64 (as in SciPy)."""
    x = xp.asarray(x)
    if x.dtype.kind not in "fc":
        x = x.astype(xp.float64)
    return x


def _reduced_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    """``axis`` (None, int or tuple of ints) as a tuple of non-negative axes of an ndim-array."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else axis
    if not isinstance(axes, (tuple, list)):
        raise TypeError(f"axis must be None, an int or a tuple of ints, got {axis!r}")
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"axis must be None, an int or a tuple of ints, got {axis!r}")
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(int(a), ndim)
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"axis {axis!r} names an axis more than once")
    return tuple(out)


def _keepdims_shape(full: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(full))


# --------------------------------------------------------------------------
# logsumexp

def _logsumexp_raw(a: Any, b: Any = None, axis: Any = None, keepdims: bool = False,
                   return_sign: bool = False) -> Any:
    xp = namespace_of(a) if b is None else namespace_of(a, b)
    a = _as_float(xp, a)
    if b is not None:
        b = xp.asarray(b)
        full = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
        if tuple(a.shape) != full:
            a = xp.broadcast_to(a, full)
        # Terms with zero weight are left out, even where a is +-inf.
        a = xp.where(b != 0, a, xp.full((), -math.inf, dtype=a.dtype))  # no host upload
    full = tuple(a.shape)
    axes = _reduced_axes(len(full), axis)
    if a.size == 0:
        m = xp.zeros(_keepdims_shape(full, axes), dtype=a.dtype)
    else:
        m = xp.max(a, axis=axes, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    e = xp.exp(a - m)
    if b is not None:
        e = e * b
    s = xp.sum(e, axis=axes, keepdims=True)
    if return_sign:
        sgn = xp.sign(s)
        s = xp.abs(s)
    if xp is np:
        with np.errstate(divide="ignore"):  # log(0) = -inf is the answer, not an accident
            out = np.log(s) + m
    else:
        out = xp.log(s) + m
    if not keepdims:
        reduced = tuple(n for i, n in enumerate(full) if i not in axes)
        out = xp.reshape(out, reduced)
        if return_sign:
            sgn = xp.reshape(sgn, reduced)
    return (out, sgn) if return_sign else out


def _logsumexp_signed_raw(a: Any, b: Any = None, axis: Any = None, keepdims: bool = False) -> tuple[Any, ...]:
    out: tuple[Any, ...] = _logsumexp_raw(a, b, axis, keepdims, True)
    return out


def _lse_weights(lse: Any, a: Any, b: Any, axis: Any, keepdims: bool, sgn: Any = None, for_b: bool = False) -> Any:
    """d lse / d(b * exp(a)): exp(a - c) / sum(b * exp(a - c)) for the shift c = lse.

    Normalized rather than exp(a - lse) alone: lse is rounded (1e17 + log 2 == 1e17
    in float64), and exp(a - lse) would inherit that error (weights [1, 1] instead of
    [0.5, 0.5]); the quotient does not depend on the shift. The signed sum also
    carries the sign of a return_sign=True result, so ``sgn`` is not needed. Terms with
    zero weight are left out of the sum, as in the forward; ``for_b`` keeps their
    exp(a - c) (d lse / d b_i, inf where a_i = inf), which the rule for ``a`` multiplies by 0."""
    full = shape(a) if b is None else np.broadcast_shapes(shape(a), shape(b))
    axes = _reduced_axes(len(full), axis)
    kd = _keepdims_shape(full, axes)
    if not keepdims:
        lse = fnp.reshape(lse, kd)
    e = fnp.exp(a - fnp.where(fnp.isfinite(lse), lse, 0))
    if b is None:
        return e / fnp.sum(e, axis=axes, keepdims=True), full, axes, kd
    kept = fnp.where(b != 0, e, 0)
    w = (e if for_b else kept) / fnp.sum(kept * b, axis=axes, keepdims=True)
    return w, full, axes, kd


def _lse_vjp_a(g: Any, lse: Any, a: Any, b: Any = None, axis: Any = None, keepdims: Any = False,
               sgn: Any = None) -> Any:
    w, full, axes, kd = _lse_weights(lse, a, b, axis, keepdims, sgn)
    ct = (g if keepdims else fnp.reshape(g, kd)) * w
    if b is not None:
        ct = ct * b
    return unbroadcast(ct, a)


def _lse_vjp_b(g: Any, lse: Any, a: Any, b: Any = None, axis: Any = None, keepdims: Any = False,
               sgn: Any = None) -> Any:
    w, full, axes, kd = _lse_weights(lse, a, b, axis, keepdims, sgn, for_b=True)
    ct = (g if keepdims else fnp.reshape(g, kd)) * w
    if shape(ct) != full:
        ct = fnp.broadcast_to(ct, full)
    return unbroadcast(ct, b)


def _lse_jvp_a(t: Any, lse: Any, a: Any, b: Any = None, axis: Any = None, keepdims: Any = False,
               sgn: Any = None) -> Any:
    w, full, axes, kd = _lse_weights(lse, a, b, axis, keepdims, sgn)
    tw = t * w if b is None else t * w * b
    return fnp.sum(tw, axis=axes, keepdims=keepdims)


def _lse_jvp_b(t: Any, lse: Any, a: Any, b: Any = None, axis: Any = None, keepdims: Any = False,
               sgn: Any = None) -> Any:
    w, full, axes, kd = _lse_weights(lse, a, b, axis, keepdims, sgn, for_b=True)
    return fnp.sum(t * w, axis=axes, keepdims=keepdims)


# With return_sign, the result is (log|s|, sign(s)); the sign is piecewise
# constant (zero derivative) and scales the weights.


def _batch_front(x: Any, d: Any, per: int) -> Any:
    """Batched ``x``: batch axis first, unit axes added so its example part has rank ``per``."""
    if d is None:
        return x  # broadcasts from the right against the batched arguments
    x = move_to_front(x, d)
    s = shape(x)
    if len(s) - 1 < per:
        x = fnp.reshape(x, s[:1] + (1,) * (per - len(s) + 1) + s[1:])
    return x


def _lse_batch_rule(fn: Callable[..., Any], n_out: int) -> Callable[..., Any]:
    """Batching rule for fn(a, b, axis, keepdims): batch axes to the front, reduce the axes after it."""

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, Any]:
        a, b, axis, keepdims = args
        da, db = dims[0], dims[1]
        per = ndim(a) - (da is not None)
        if b is not None:
            per = max(per, ndim(b) - (db is not None))
        a, b = _batch_front(a, da, per), _batch_front(b, db, per)
        axes = tuple(i + 1 for i in _reduced_axes(per, axis))
        return fn(a, b, axes, keepdims), (0 if n_out == 1 else (0,) * n_out)

    return rule


_logsumexp = defprimitive(
    _logsumexp_raw, name="logsumexp", vjp=(_lse_vjp_a, _lse_vjp_b), jvp=(_lse_jvp_a, _lse_jvp_b),
    batch_from=lambda fn: _lse_batch_rule(fn, 1),
)
_logsumexp_signed = defprimitive(
    _logsumexp_signed_raw,
    name="logsumexp_signed",
    vjp=(
        lambda g, ans, a, b=None, axis=None, keepdims=False: _lse_vjp_a(g[0], ans[0], a, b, axis, keepdims, ans[1]),
        lambda g, ans, a, b=None, axis=None, keepdims=False: _lse_vjp_b(g[0], ans[0], a, b, axis, keepdims, ans[1]),
    ),
    jvp=(
        lambda t, ans, a, b=None, axis=None, keepdims=False: (
            _lse_jvp_a(t, ans[0], a, b, axis, keepdims, ans[1]), fnp.zeros_like(ans[1])),
        lambda t, ans, a, b=None, axis=None, keepdims=False: (
            _lse_jvp_b(t, ans[0], a, b, axis, keepdims, ans[1]), fnp.zeros_like(ans[1])),
    ),
    batch_from=lambda fn: _lse_batch_rule(fn, 2),
    multiple_results=True,
)


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False) -> Any:
    """log(sum(b * exp(a), axis)), computed stably. Differentiable ``scipy.special.logsumexp``.

    ``axis`` is None (all axes), an int or a tuple of ints; ``b`` are optional
    weights broadcastable against ``a`` (differentiable too); with
    ``return_sign=True`` the result is ``(log|s|, sign(s))`` so negative
    weights are allowed. Needs no SciPy. The gradient with respect to ``a`` is
    the softmax weights ``b * exp(a - logsumexp(a))``. Unlike SciPy, a 0-d
    result is a 0-d array rather than a NumPy scalar. Real input only.

    Example::

        logsumexp(fnp.array([1000.0, 1000.0]))             # 1000 + log(2), no overflow
        fg.grad(logsumexp)(fnp.array([0.0, 1.0]))          # softmax([0, 1])
    """
    if return_sign:
        return _logsumexp_signed(a, b, axis, keepdims)
    return _logsumexp(a, b, axis, keepdims)


# --------------------------------------------------------------------------
# softmax, log_softmax

def _softmax_raw(x: Any, axis: Any = None) -> Any:
    xp = namespace_of(x)
    x = _as_float(xp, x)
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax_raw(x: Any, axis: Any = None) -> Any:
    xp = namespace_of(x)
    x = _as_float(xp, x)
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def softmax(x: Any, axis: Any = None) -> Any:
    """exp(x) / sum(exp(x), axis), computed stably. Differentiable ``scipy.special.softmax``.

    ``axis`` defaults to None (all axes), as in SciPy (JAX's nn.softmax uses -1).
    Needs no SciPy.

    Example::

        softmax(fnp.array([[1.0, 2.0], [3.0, 1000.0]]), axis=1)
    """
    return _softmax(x, axis=axis)


def _softmax_rule(g: Any, ans: Any, x: Any, axis: Any = None) -> Any:
    # The Jacobian diag(s) - s s^T is symmetric: one formula for VJP and JVP.
    return ans * (g - fnp.sum(g * ans, axis=axis, keepdims=True))


_softmax = defprimitive(
    _softmax_raw, name="softmax", vjp=_softmax_rule, jvp=_softmax_rule,
    batch_from=lambda fn: reduction_rule(fn),
)


def log_softmax(x: Any, axis: Any = None) -> Any:
    """x - logsumexp(x, axis, keepdims=True), computed stably. Differentiable ``scipy.special.log_softmax``.

    ``axis`` defaults to None (all axes), as in SciPy. Needs no SciPy.

    Example::

        log_softmax(fnp.array([1.0, 2.0, 3.0]))
    """
    return _log_softmax(x, axis=axis)


_log_softmax = defprimitive(
    _log_softmax_raw, name="log_softmax",
    vjp=lambda g, ans, x, axis=None: g - fnp.exp(ans) * fnp.sum(g, axis=axis, keepdims=True),
    jvp=lambda t, ans, x, axis=None: t - fnp.sum(fnp.exp(ans) * t, axis=axis, keepdims=True),
    batch_from=lambda fn: reduction_rule(fn),
)


# --------------------------------------------------------------------------
# logistic functions

# The logistic functions and their derivatives are the hot elementwise chains of
# sigmoid/softplus layers: on CuPy each is one fused kernel (funcgrad.backend.fused)
# instead of five to seven launches; elsewhere the same formula in the namespace's ops.

def _expit_np(xp: Any, x: Any) -> Any:
    e = xp.exp(-xp.abs(x))  # in (0, 1]: never overflows
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _expit_grad_np(xp: Any, g: Any, x: Any) -> Any:
    e = xp.exp(-xp.abs(x))
    return g * e / ((1 + e) * (1 + e))


def _log_expit_np(xp: Any, x: Any) -> Any:
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


_expit_kernel = fused("funcgrad_expit", "T x", "T out",
                      "T e = exp(-fabs(x)); out = x >= 0 ? 1 / (1 + e) : e / (1 + e)", _expit_np)
_log_expit_kernel = fused("funcgrad_log_expit", "T x", "T out",
                          "out = (x < 0 ? x : (T)0) - log1p(exp(-fabs(x)))", _log_expit_np)
# g * s * (1 - s) for s = expit(x), as g e / (1 + e)^2 with e = exp(-|x|): the derivative
# of expit. From x rather than s, so the tails keep their precision (1 - s rounds to 0
# for x > 37 in float64, where s (1 - s) is still 1e-17).
_expit_grad_kernel = fused("funcgrad_expit_grad", "T g, T x", "T out",
                           "T e = exp(-fabs(x)); out = g * e / ((1 + e) * (1 + e))",
                           lambda xp, g, x: _expit_grad_np(xp, g, x))
# g * expit(-x): the derivative of log_expit (softplus(x) = -log_expit(-x))
_log_expit_grad_kernel = fused(
    "funcgrad_log_expit_grad", "T g, T x", "T out",
    "T e = exp(-fabs(x)); out = g * (x >= 0 ? e / (1 + e) : 1 / (1 + e))",
    lambda xp, g, x: g * _expit_np(xp, -x))


def _expit_raw(x: Any) -> Any:
    xp = namespace_of(x)
    return _expit_kernel(_as_float(xp, x))


def _logit_raw(x: Any) -> Any:
    xp = namespace_of(x)
    x = _as_float(xp, x)
    return xp.log(x) - xp.log1p(-x)


def _log_expit_raw(x: Any) -> Any:
    xp = namespace_of(x)
    return _log_expit_kernel(_as_float(xp, x))


def _expit_grad_raw(g: Any, x: Any) -> Any:
    return _expit_grad_kernel(*_same_float(g, x))


def _log_expit_grad_raw(g: Any, x: Any) -> Any:
    return _log_expit_grad_kernel(*_same_float(g, x))


def _same_float(a: Any, b: Any) -> tuple[Any, Any]:
    """Two arrays of one namespace (scalars become arrays; NumPy's type promotion is kept)."""
    xp = namespace_of(a, b)
    return (a if hasattr(a, "shape") else xp.asarray(a)), (b if hasattr(b, "shape") else xp.asarray(b))


# _expit_grad(g, x) = g expit(x) expit(-x) and _log_expit_grad(g, x) = g expit(-x): the rules of
# expit and log_expit, as primitives of their own (one kernel each on CuPy) whose rules
# are written in differentiable operations, so higher derivatives still work.
_expit_grad: Callable[[Any, Any], Any] = defprimitive(
    _expit_grad_raw, name="expit_grad",
    vjp=(
        lambda c, ans, g, x: unbroadcast(_expit_grad(c, x), g),
        # d/dx expit'(x) = expit'(x) (1 - 2 expit(x)) = -expit'(x) tanh(x / 2)
        lambda c, ans, g, x: unbroadcast(-_expit_grad(c * g, x) * fnp.tanh(x / 2), x),
    ),
    jvp=(lambda t, ans, g, x: _expit_grad(t, x), lambda t, ans, g, x: -_expit_grad(t * g, x) * fnp.tanh(x / 2)),
    batch_from=elementwise_rule,
)
_log_expit_grad: Callable[[Any, Any], Any] = defprimitive(
    _log_expit_grad_raw, name="log_expit_grad",
    vjp=(
        lambda c, ans, g, x: unbroadcast(_log_expit_grad(c, x), g),
        lambda c, ans, g, x: unbroadcast(-_expit_grad(c * g, x), x),
    ),
    jvp=(lambda t, ans, g, x: _log_expit_grad(t, x), lambda t, ans, g, x: -_expit_grad(t * g, x)),
    batch_from=elementwise_rule,
)


expit = defprimitive(
    _expit_raw, name="expit", vjp=lambda g, ans, x: _expit_grad(g, x),
    jvp=lambda t, ans, x: _expit_grad(t, x), batch_from=elementwise_rule,
    doc="""The logistic sigmoid 1 / (1 + exp(-x)). Differentiable ``scipy.special.expit``.

    Stable for large ``|x|`` in float32 and float64 (exp is only taken of
    -|x|). Needs no SciPy.

    Example::

        expit(fnp.array([-1000.0, 0.0, 1000.0]))   # [0, 0.5, 1]
    """,
)

logit = defprimitive(
    _logit_raw, name="logit", vjp=lambda g, ans, x: g / (x * (1 - x)),
    jvp=lambda t, ans, x: t / (x * (1 - x)), batch_from=elementwise_rule,
    doc="""log(p / (1 - p)), the inverse of expit. Differentiable ``scipy.special.logit``.

    Computed as log(p) - log1p(-p). Needs no SciPy.

    Example::

        logit(fnp.array([0.25, 0.5]))   # [-log(3), 0]
    """,
)

log_expit = defprimitive(
    _log_expit_raw, name="log_expit", vjp=lambda g, ans, x: _log_expit_grad(g, x),
    jvp=lambda t, ans, x: _log_expit_grad(t, x), batch_from=elementwise_rule,
    doc="""log(expit(x)), stable for large ``|x|``. Differentiable ``scipy.special.log_expit``.

    Computed as min(x, 0) - log1p(exp(-|x|)). Needs no SciPy.

    Example::

        log_expit(fnp.array([-1000.0, 0.0]))   # [-1000, -log(2)]
    """,
)


# --------------------------------------------------------------------------
# error functions

erf: Callable[[ArrayLike], Array] = _unary("erf", lambda ans, x: _TWO_OVER_SQRT_PI * fnp.exp(-x * x), """The error function. Differentiable ``scipy.special.erf``; d/dx = 2/sqrt(pi) exp(-x^2).

    Example::

        erf(fnp.array([0.0, 1.0]))
    """)

erfc: Callable[[ArrayLike], Array] = _unary("erfc", lambda ans, x: -_TWO_OVER_SQRT_PI * fnp.exp(-x * x), """1 - erf(x), accurate for large x. Differentiable ``scipy.special.erfc``.

    Example::

        erfc(fnp.array([0.0, 5.0]))
    """)

erfcx: Callable[[ArrayLike], Array] = _unary("erfcx", lambda ans, x: 2.0 * x * ans - _TWO_OVER_SQRT_PI, """The scaled complementary error function ``exp(x^2) erfc(x)``, without overflow for large x. Differentiable ``scipy.special.erfcx``; d/dx = 2x erfcx(x) - 2/sqrt(pi).

    Example::

        erfcx(fnp.array([0.0, 30.0]))    # [1, ~1/(30 sqrt(pi))]
    """)

erfinv: Callable[[ArrayLike], Array] = _unary("erfinv", lambda ans, y: _SQRT_PI_OVER_TWO * fnp.exp(ans * ans), """Inverse of erf on (-1, 1). Differentiable ``scipy.special.erfinv``; d/dy = sqrt(pi)/2 exp(erfinv(y)^2).

    Example::

        erfinv(fnp.array([0.0, 0.5]))
    """)

erfcinv: Callable[[ArrayLike], Array] = _unary("erfcinv", lambda ans, y: -_SQRT_PI_OVER_TWO * fnp.exp(ans * ans), """Inverse of erfc on (0, 2). Differentiable ``scipy.special.erfcinv``; d/dy = -sqrt(pi)/2 exp(erfcinv(y)^2).

    Example::

        erfcinv(fnp.array([0.5, 1.0]))
    """)


# --------------------------------------------------------------------------
# gamma family (its own module: the other families' rules use it)

from .gamma_family import digamma, gamma, gammaln, polygamma, psi  # noqa: E402


# --------------------------------------------------------------------------
# x log y

xlogy = defprimitive(
    _special_raw("xlogy"),
    vjp=(lambda g, ans, x, y: unbroadcast(g * fnp.log(y), x), lambda g, ans, x, y: unbroadcast(g * x / y, y)),
    jvp=(lambda t, ans, x, y: t * fnp.log(y), lambda t, ans, x, y: t * x / y), batch_from=elementwise_rule,
    doc="""x * log(y), 0 where x == 0. Differentiable ``scipy.special.xlogy``.

    Derivatives as in JAX: d/dx = log(y), d/dy = x / y.

    Example::

        xlogy(fnp.array([0.0, 2.0]), fnp.array([0.0, 3.0]))   # [0, 2 log 3]
    """,
)


xlog1py = defprimitive(
    _special_raw("xlog1py"),
    vjp=(
        lambda g, ans, x, y: unbroadcast(g * fnp.log1p(y), x),
        lambda g, ans, x, y: unbroadcast(g * x / (1 + y), y),
    ),
    jvp=(lambda t, ans, x, y: t * fnp.log1p(y), lambda t, ans, x, y: t * x / (1 + y)),
    batch_from=elementwise_rule,
    doc="""x * log1p(y), 0 where x == 0. Differentiable ``scipy.special.xlog1py``.

    Derivatives as in JAX: d/dx = log1p(y), d/dy = x / (1 + y).

    Example::

        xlog1py(fnp.array([0.0, 2.0]), fnp.array([-1.0, 1e-10]))
    """,
)


# --------------------------------------------------------------------------
# modified Bessel functions

i0 = special_base.i0
i1 = special_base.i1


# --------------------------------------------------------------------------
# more families, in modules of their own (issue 16)

# (named one by one, so that the API reference renders them here: tests/test_docs.py checks the list)
from ._special_more import (  # noqa: E402,F401
    beta, betainc, betaln, entr, gammainc, gammaincc, gammasgn, iv, ive, j0, j1, jv, kl_div, kv, log_ndtr,
    multigammaln, ndtr, ndtri, rel_entr, rgamma, stdtr, y0, y1, yv, zeta,
)

__all__ += [
    "beta", "betainc", "betaln", "entr", "gammainc", "gammaincc", "gammasgn", "iv", "ive", "j0", "j1", "jv",
    "kl_div", "kv", "log_ndtr", "multigammaln", "ndtr", "ndtri", "rel_entr", "rgamma", "stdtr", "y0", "y1",
    "yv", "zeta",
]
