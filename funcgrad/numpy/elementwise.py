"""Elementwise primitives and their rules: a table of derivatives.

Each primitive is defined once, with its VJP per argument and its JVP next to
it, all written in funcgrad.numpy so they differentiate again. Unary
functions whose derivative is ``f'(x)`` (holomorphic ones included: complex
rules are linear, JAX's convention) are declared in one line with
``_unary(name, d=lambda ans, x: f'(x), reads=...)``; the others spell out both
rules. Each entry is one :func:`funcgrad.core.defprimitive` declaration.

Every primitive here broadcasts, so its batching (vmap) rule is
``elementwise_rule`` (``batch_from=`` in each declaration).
On plain arrays the ufuncs take NumPy's options (``out=``, ``where=``,
``dtype=`` ...) exactly as NumPy does; on traced values only ``out=`` (see
funcgrad.numpy.inplace).

Conventions at non-smooth points (as in JAX): ties of ``maximum``/``minimum``
(``fmax``, ``fmin``, ``clip``) split the derivative half/half; ``abs`` has
derivative 0 at 0; the singular points of ``arctan2``, ``hypot`` and
``angle`` (the origin) get derivative 0 instead of nan.
"""

from __future__ import annotations

import cmath
import math
from typing import Any, Callable, Iterable, cast

import numpy as np

import funcgrad.numpy as fnp

from ..backend import NUMPY_FAST_TYPES, _NAMESPACE_BY_TYPE, namespace_of
from ..core import defprimitive
from ._batching import elementwise_rule
from ._typing import BinaryUfunc, UnaryUfunc
from ._util import backend_function, is_complex, resolve, shape, unbroadcast

__all__ = [
    # arithmetic
    "add", "subtract", "multiply", "divide", "true_divide", "negative", "positive", "reciprocal",
    "power", "float_power", "mod", "remainder", "fmod",
    # exponentials, logarithms, roots
    "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "square",
    "logaddexp", "logaddexp2",
    # trigonometric and hyperbolic
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "hypot", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "sinc", "deg2rad", "rad2deg", "radians", "degrees",
    # absolute value, sign, complex parts
    "abs", "absolute", "fabs", "copysign", "real", "imag", "conj", "conjugate", "angle",
    # selection
    "maximum", "minimum", "fmax", "fmin", "where", "clip", "nan_to_num",
]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


# --- building blocks --------------------------------------------------------

def _traced_kwargs(name: str, extra: tuple[Any, ...], kwargs: dict[Any, Any]) -> TypeError:
    if extra:
        return TypeError(
            f"funcgrad.numpy.{name} on traced values: give out= as a keyword argument, not as a "
            f"positional one ({len(extra)} extra positional argument{'s' if len(extra) != 1 else ''} given)"
        )
    return TypeError(
        f"funcgrad.numpy.{name} takes no keyword arguments other than out= on traced values (got "
        f"{', '.join(map(repr, kwargs))}): ufunc options such as where=, dtype= and casting= work "
        f"on plain arrays only; use fnp.where or fnp.astype on the result instead"
    )


_UFUNC_NIN: dict[str, int] = {}  # name -> number of array arguments of the ufunc primitives


def _refuse_traced_options(name: str) -> Callable[[tuple[Any, ...], dict[Any, Any]], None]:
    """The ``check_kwargs`` of ufunc primitive ``name``: refuse ufunc options on traced calls.

    On plain arrays the raw forward passes ``out=``, ``where=``, ``dtype=`` ... to
    the backend's ufunc, exactly as NumPy would (``out=`` on traced values is
    handled by the engine before the call, see ``core.trace.call_with_out``). The
    derivative rules know none of these options, so the engine refuses a traced
    call with one before anything is recorded.
    """
    nin = _UFUNC_NIN[name]

    def check(args: tuple[Any, ...], kwargs: dict[Any, Any]) -> None:
        raise _traced_kwargs(name, args[nin:], kwargs)

    return check


def _ufunc_raw(name: str, nin: int) -> Callable[..., Any]:
    """The raw forward of ufunc ``name``: the arrays' own namespace.

    Ufunc options (``out=``, ``where=``, ``dtype=`` ...) go to the backend's ufunc
    unchanged, so that plain calls behave exactly as NumPy's.
    """
    np_fn = getattr(np, name)
    _UFUNC_NIN[name] = nin
    raw: Callable[..., Any]
    if nin == 1:

        def raw1(x: Any, *out: Any, **kwargs: Any) -> Any:
            if _NAMESPACE_BY_TYPE.get(type(x)) is np:
                return np_fn(x, *out, **kwargs) if out or kwargs else np_fn(x)
            ns = namespace_of(x)
            return (np_fn if ns is np else resolve(ns, name))(x, *out, **kwargs)

        raw = raw1
    else:

        def raw2(x: Any, y: Any, *out: Any, **kwargs: Any) -> Any:
            if _NAMESPACE_BY_TYPE.get(type(x)) is np and _NAMESPACE_BY_TYPE.get(type(y)) is np:
                return np_fn(x, y, *out, **kwargs) if out or kwargs else np_fn(x, y)
            ns = namespace_of(x, y)
            return (np_fn if ns is np else resolve(ns, name))(x, y, *out, **kwargs)

        raw = raw2

    raw.fast_path = (NUMPY_FAST_TYPES, np_fn)  # type: ignore[attr-defined]  # plain host arguments
    raw.__name__ = raw.__qualname__ = name
    raw.__doc__ = f"Differentiable ``numpy.{name}`` (runs on the arrays' own backend)."
    return raw


def _ufunc_batch_rule(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """vmap rule of a broadcasting ufunc primitive (ufunc options refused, as in any trace)."""
    rule = elementwise_rule(fn)
    nin = _UFUNC_NIN[name]

    def batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
        if kwargs or len(args) > nin:
            raise _traced_kwargs(name, tuple(args[nin:]), kwargs)
        out: tuple[Any, int] = rule(args, dims)
        return out

    return batch


def _ufunc(name: str, nin: int, *, reads: Any = None, **rules: Any) -> Callable[..., Any]:
    """Declare ufunc primitive ``name`` (``nin`` array arguments) with its rules."""
    raw = _ufunc_raw(name, nin)
    return defprimitive(raw, name=name, batch_from=lambda fn: _ufunc_batch_rule(fn, name), reads=reads,
                        check_kwargs=_refuse_traced_options(name), max_args=nin, **rules)


def _times(d: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """VJP ``g * f'`` and JVP ``t * f'`` of a unary function with derivative ``d(ans, x)``."""
    return (lambda g, ans, x: g * d(ans, x)), (lambda t, ans, x: t * d(ans, x))


def _unary(name: str, d: Callable[..., Any] | None = None, reads: Iterable[Any] | None = None,
           **rules: Any) -> UnaryUfunc:
    """A unary ufunc primitive; ``d(ans, x)`` is its derivative, ``reads`` what that reads (0 is x)."""
    if d is not None:
        rules["vjp"], rules["jvp"] = _times(d)
    return cast(UnaryUfunc, _ufunc(name, 1, reads=None if reads is None else {0: reads}, **rules))


def _binary(name: str, **rules: Any) -> BinaryUfunc:
    return cast(BinaryUfunc, _ufunc(name, 2, **rules))


def _bt(t: Any, ans: Any) -> Any:
    """Broadcast tangent ``t`` to the shape of ``ans`` (no work when it already has it)."""
    s = shape(ans)
    return t if shape(t) == s else fnp.broadcast_to(t, s)


def _is_pyscalar(v: Any) -> bool:
    return type(v) in (int, float, complex)


def _safe(d: Any) -> Any:
    """``d`` with zeros replaced by ones: a denominator that cannot make nan."""
    return fnp.where(d == 0, 1, d)


# --- arithmetic -------------------------------------------------------------

_SHAPES_ONLY: dict[int, set[Any]] = {0: set(), 1: set()}  # the rules read shapes and dtypes only

add = _binary(
    "add",
    vjp=(lambda g, ans, x, y: unbroadcast(g, x), lambda g, ans, x, y: unbroadcast(g, y)),
    jvp=(lambda t, ans, x, y: _bt(t, ans), lambda t, ans, x, y: _bt(t, ans)),
    reads=_SHAPES_ONLY,
)

subtract = _binary(
    "subtract",
    vjp=(lambda g, ans, x, y: unbroadcast(g, x), lambda g, ans, x, y: -unbroadcast(g, y)),
    jvp=(lambda t, ans, x, y: _bt(t, ans), lambda t, ans, x, y: _bt(-t, ans)),
    reads=_SHAPES_ONLY,
)

multiply = _binary(
    "multiply",
    vjp=(lambda g, ans, x, y: unbroadcast(g * y, x), lambda g, ans, x, y: unbroadcast(x * g, y)),
    jvp=(lambda t, ans, x, y: t * y, lambda t, ans, x, y: x * t),
    reads={0: {1}, 1: {0}},
)

divide = _binary(
    "divide",
    # y's rule reads x rather than the result, as PyTorch saves both operands: an in-place change
    # of the quotient (``(a / b).relu_()``) leaves what backward needs intact.
    vjp=(lambda g, ans, x, y: unbroadcast(g / y, x), lambda g, ans, x, y: unbroadcast(-(g / y) * (x / y), y)),
    jvp=(lambda t, ans, x, y: t / y, lambda t, ans, x, y: -t * ans / y),
    reads={0: {1}, 1: {0, 1}},
)
true_divide = divide

negative = _unary("negative", vjp=lambda g, ans, x: -g, linear=True, reads=())

positive = _unary("positive", vjp=lambda g, ans, x: g, linear=True, reads=())

reciprocal = _unary("reciprocal", lambda ans, x: -(ans * ans), reads={"ans"})


# power(x, y) = x ** y.
#   d/dx = y * x ** (y - 1): finite for negative x with integer-valued y (no
#          division by x, no log), and 0 where y == 0 (also at x == 0).
#   d/dy = x ** y * log(x): nan for a negative base with a real result (x ** y is
#          only defined there at integer y, so it has no derivative in y; JAX and
#          PyTorch give nan too), and 0 where x == 0 (0 ** y is constant for y > 0;
#          JAX's and PyTorch's convention). Complex results use the principal log.

_ZERO, _ONE = object(), object()  # markers: d(x ** y)/dx is identically 0 or 1 (Python y)


def _power_dx(x: Any, y: Any, pow_fn: Callable[..., Any]) -> Any:
    """d(x ** y)/dx, or the marker _ZERO / _ONE for a Python exponent 0 / 1."""
    if _is_pyscalar(y):
        if y == 0:
            return _ZERO
        if y == 1:
            return _ONE
        if y == 2:
            return 2 * x
        return y * pow_fn(x, y - 1)
    # where x == y == 0, 0 * 0 ** -1 would be nan: take the base 1 there.
    xs = fnp.where(fnp.logical_and(y == 0, x == 0), 1, x)
    return y * pow_fn(xs, y - 1)


def _log_base(x: Any, ans: Any) -> Any:
    """The log(x) factor of d(x ** y)/dy (see above)."""
    if _is_pyscalar(x):
        if x == 0:
            return 0.0
        if is_complex(ans):
            return cmath.log(x)
        return math.log(x) if x > 0 else math.nan
    xs = _safe(x)
    if is_complex(ans):
        return fnp.log(xs if is_complex(xs) else xs + 0j)
    return fnp.where(xs < 0, math.nan, fnp.log(fnp.abs(xs)))  # no log of a negative: no warning


def _power_rules(pow_fn: Callable[..., Any], cast: bool) -> dict[str, Any]:
    def cast_like(c: Any, x: Any) -> Any:
        # float_power computes in float64: hand back cotangents in x's dtype.
        if cast and fnp.result_type(c) != fnp.result_type(x):
            return fnp.astype(c, fnp.result_type(x))
        return c

    def vjp_x(g: Any, ans: Any, x: Any, y: Any) -> Any:
        d = _power_dx(x, y, pow_fn)
        if d is _ZERO:
            return fnp.zeros_like(x)
        return cast_like(unbroadcast(g if d is _ONE else g * d, x), x)

    def vjp_y(g: Any, ans: Any, x: Any, y: Any) -> Any:
        return cast_like(unbroadcast(g * ans * _log_base(x, ans), y), y)

    def jvp_x(t: Any, ans: Any, x: Any, y: Any) -> Any:
        d = _power_dx(x, y, pow_fn)
        if d is _ZERO:
            return fnp.zeros_like(ans)
        return _bt(t, ans) if d is _ONE else t * d

    def jvp_y(t: Any, ans: Any, x: Any, y: Any) -> Any:
        return t * ans * _log_base(x, ans)

    return {"vjp": (vjp_x, vjp_y), "jvp": (jvp_x, jvp_y)}


power: BinaryUfunc = _binary("power", **_power_rules(lambda x, y: power(x, y), cast=False))

float_power: BinaryUfunc = _binary("float_power", **_power_rules(lambda x, y: float_power(x, y), cast=True))


# mod(x, y) = x - floor(x / y) * y and fmod(x, y) = x - trunc(x / y) * y: slope 1 in x,
# minus the (piecewise constant) quotient in y. The quotient is read off the result
# itself so that it matches what numpy computed.

def _mod_quotient(x: Any, y: Any, ans: Any) -> Any:
    return fnp.floor_divide(x, y)


def _fmod_quotient(x: Any, y: Any, ans: Any) -> Any:
    return fnp.rint((x - ans) / y)


def _mod_rules(quotient: Callable[..., Any]) -> dict[str, Any]:
    return {
        "vjp": (
            lambda g, ans, x, y: unbroadcast(g, x),
            lambda g, ans, x, y: unbroadcast(-g * quotient(x, y, ans), y),
        ),
        "jvp": (
            lambda t, ans, x, y: _bt(t, ans),
            lambda t, ans, x, y: -t * quotient(x, y, ans),
        ),
    }


mod = _binary("remainder", **_mod_rules(_mod_quotient))
remainder = mod

fmod = _binary("fmod", **_mod_rules(_fmod_quotient))


# --- exponentials, logarithms, roots ----------------------------------------

exp = _unary("exp", lambda ans, x: ans, reads={"ans"})
expm1 = _unary("expm1", lambda ans, x: ans + 1, reads={"ans"})
exp2 = _unary("exp2", lambda ans, x: ans * _LN2, reads={"ans"})
log = _unary("log", lambda ans, x: 1 / x, reads={0})
log1p = _unary("log1p", lambda ans, x: 1 / (x + 1), reads={0})
log2 = _unary("log2", lambda ans, x: 1 / (x * _LN2), reads={0})
log10 = _unary("log10", lambda ans, x: 1 / (x * _LN10), reads={0})
sqrt = _unary("sqrt", lambda ans, x: 0.5 / ans, reads={"ans"})
cbrt = _unary("cbrt", lambda ans, x: 1 / (3 * (ans * ans)), reads={"ans"})
square = _unary("square", lambda ans, x: 2 * x, reads={0})


# logaddexp(x, y) = log(exp(x) + exp(y)); d/dx = exp(x) / (exp(x) + exp(y)) = expit(x - y)
# (logaddexp2: expit((x - y) ln 2)). From x - y rather than exp(x - ans): ans is rounded
# (1e17 + log 2 == 1e17), which would make the weights [1, 1], not [1/2, 1/2], and lose
# precision in float32. Each branch of the where is analytic, so derivatives of every
# order are right; both +inf (or both -inf) is a tie (weight 1/2), never inf - inf.

def _logaddexp_weight(x: Any, y: Any, ans: Any, scale: Any) -> Any:
    tie = fnp.logical_and(x == y, fnp.isinf(x))
    d = fnp.where(tie, 0, x) - fnp.where(tie, 0, y)
    if fnp.result_type(d) != fnp.result_type(ans):  # a Python scalar side: keep float32
        d = fnp.astype(d, fnp.result_type(ans))
    if scale != 1:
        d = d * scale
    pos = d >= 0
    e = fnp.exp(-fnp.where(pos, d, -d))  # exp(-|d|) <= 1: no overflow
    return fnp.where(pos, 1 / (1 + e), e / (1 + e))


def _logaddexp_rules(scale: float) -> dict[str, Any]:
    return {
        "vjp": (
            lambda g, ans, x, y: unbroadcast(g * _logaddexp_weight(x, y, ans, scale), x),
            lambda g, ans, x, y: unbroadcast(g * _logaddexp_weight(y, x, ans, scale), y),
        ),
        "jvp": (
            lambda t, ans, x, y: t * _logaddexp_weight(x, y, ans, scale),
            lambda t, ans, x, y: t * _logaddexp_weight(y, x, ans, scale),
        ),
    }


logaddexp = _binary("logaddexp", **_logaddexp_rules(1.0))
logaddexp2 = _binary("logaddexp2", **_logaddexp_rules(_LN2))


# --- trigonometric and hyperbolic -------------------------------------------

_ELIDE_BYTES = 256 * 1024  # NumPy computes an operator on a temporary array this large in place


def _one_minus_square(y: Any) -> Any:
    """``1 - y * y``; for a large NumPy array as ``-(y * y) + 1`` (the same bits, +0 included), which
    NumPy computes in one temporary (it does not reuse one for ``1 - t``), so that tanh's VJP
    ``g * d`` makes one array instead of two. Small arrays keep the one-operation form."""
    if type(y) is np.ndarray and y.nbytes >= _ELIDE_BYTES:
        return -(y * y) + y.dtype.type(1)
    return 1 - y * y


sin = _unary("sin", lambda ans, x: fnp.cos(x), reads={0})
cos: UnaryUfunc = _unary("cos", lambda ans, x: -fnp.sin(x), reads={0})
tan = _unary("tan", lambda ans, x: 1 + ans * ans, reads={"ans"})
arcsin = _unary("arcsin", lambda ans, x: 1 / fnp.sqrt(1 - x * x), reads={0})
arccos = _unary("arccos", lambda ans, x: -1 / fnp.sqrt(1 - x * x), reads={0})
arctan = _unary("arctan", lambda ans, x: 1 / (1 + x * x), reads={0})
sinh = _unary("sinh", lambda ans, x: fnp.cosh(x), reads={0})
cosh: UnaryUfunc = _unary("cosh", lambda ans, x: fnp.sinh(x), reads={0})
tanh = _unary("tanh", lambda ans, x: _one_minus_square(ans), reads={"ans"})
arcsinh = _unary("arcsinh", lambda ans, x: 1 / fnp.sqrt(x * x + 1), reads={0})
# sqrt(x - 1) * sqrt(x + 1) is the principal branch for complex x; equal to sqrt(x^2 - 1) for real x > 1.
arccosh = _unary(
    "arccosh",
    lambda ans, x: 1 / (fnp.sqrt(x - 1) * fnp.sqrt(x + 1) if is_complex(x) else fnp.sqrt(x * x - 1)),
    reads={0},
)
arctanh = _unary("arctanh", lambda ans, x: 1 / _one_minus_square(x), reads={0})


def _arctan2_denominator(x1: Any, x2: Any) -> Any:
    return _safe(x1 * x1 + x2 * x2)


arctan2 = _binary(  # arctan2(x1, x2) = angle of the point (x2, x1)
    "arctan2",
    vjp=(
        lambda g, ans, x1, x2: unbroadcast(g * x2 / _arctan2_denominator(x1, x2), x1),
        lambda g, ans, x1, x2: unbroadcast(-g * x1 / _arctan2_denominator(x1, x2), x2),
    ),
    jvp=(
        lambda t, ans, x1, x2: t * x2 / _arctan2_denominator(x1, x2),
        lambda t, ans, x1, x2: -t * x1 / _arctan2_denominator(x1, x2),
    ),
)

hypot = _binary(
    "hypot",
    vjp=(
        lambda g, ans, x1, x2: unbroadcast(g * x1 / _safe(ans), x1),
        lambda g, ans, x1, x2: unbroadcast(g * x2 / _safe(ans), x2),
    ),
    jvp=(
        lambda t, ans, x1, x2: t * x1 / _safe(ans),
        lambda t, ans, x1, x2: t * x2 / _safe(ans),
    ),
)


# sinc(x) = sin(pi x) / (pi x). Its derivatives come from a primitive that computes
# the n-th derivative directly (a Taylor series near 0, where the closed form
# cancels), each differentiable by the next: correct at 0 to any order.

def _sinc_derivative_raw(x: Any, n: int) -> Any:
    """The ``n``-th derivative of numpy's (normalized) sinc at ``x``, ``n >= 1``."""
    xp = namespace_of(x)
    u = x * math.pi
    small = xp.abs(u) < 1.0
    us = xp.where(small, 1.0, u)
    # f(u) = sin(u) / u obeys u f^(k) + k f^(k-1) = sin^(k)(u) = sin(u + k pi / 2).
    s, c = xp.sin(us), xp.cos(us)
    cycle = (s, c, -s, -c)
    f = s / us
    for k in range(1, n + 1):
        f = (cycle[k % 4] - k * f) / us
    # Near 0: f(u) = sum_k (-1)^k u^(2k) / (2k+1)!, differentiated n times (Horner in u^2).
    k0 = (n + 1) // 2
    u2 = u * u
    series = 0.0
    for k in range(k0 + 12, k0 - 1, -1):
        coef = (-1) ** k * math.factorial(2 * k) / (math.factorial(2 * k - n) * math.factorial(2 * k + 1))
        series = series * u2 + coef
    if n % 2:
        series = series * u
    return xp.where(small, series, f) * math.pi ** n


_sinc_derivative: Callable[[Any, int], Any] = defprimitive(
    _sinc_derivative_raw, name="sinc_derivative", vjp=lambda g, ans, x, n: g * _sinc_derivative(x, n + 1),
    jvp=lambda t, ans, x, n: t * _sinc_derivative(x, n + 1), batch_from=elementwise_rule, reads={0: {0, 1}},
)

_sinc_vjp, _sinc_jvp = _times(lambda ans, x: _sinc_derivative(x, 1))
sinc = defprimitive(
    backend_function("sinc"), vjp=_sinc_vjp, jvp=_sinc_jvp, batch_from=elementwise_rule, reads={0: {0}},
    doc="Differentiable ``numpy.sinc`` (normalized: sin(pi x) / (pi x)); exact derivatives at 0 too.",
)

deg2rad: UnaryUfunc = _unary("deg2rad", vjp=lambda g, ans, x: fnp.deg2rad(g), linear=True)
radians = deg2rad

rad2deg: UnaryUfunc = _unary("rad2deg", vjp=lambda g, ans, x: fnp.rad2deg(g), linear=True)
degrees = rad2deg


# --- absolute value, sign, complex parts ------------------------------------
# For a complex x, abs(x) is real: d|x| = real(conj(x) dx) / |x|, so the VJP is
# g * conj(x) / |x| (JAX's convention: grad(abs)(3+4j) = 0.6-0.8j); 0 at x == 0.

def _abs_vjp(g: Any, ans: Any, x: Any) -> Any:
    if is_complex(x):
        return g * fnp.conj(x) / _safe(ans)
    return g * fnp.sign(x)


def _abs_jvp(t: Any, ans: Any, x: Any) -> Any:
    if is_complex(x):
        return fnp.real(fnp.conj(x) * t) / _safe(ans)
    return t * fnp.sign(x)


absolute = _unary("absolute", vjp=_abs_vjp, jvp=_abs_jvp)
abs = absolute  # noqa: A001 - mirrors numpy

fabs = _unary("fabs", vjp=_abs_vjp, jvp=_abs_jvp)


def _copysign_flip(x: Any, y: Any) -> Any:
    return fnp.not_equal(fnp.signbit(x), fnp.signbit(y))


copysign = _binary(  # |x| with the sign of y: slope +-1 in x, 0 in y
    "copysign",
    vjp=(
        lambda g, ans, x, y: unbroadcast(fnp.where(_copysign_flip(x, y), -g, g), x),
        lambda g, ans, x, y: fnp.zeros_like(y),
    ),
    jvp=(
        lambda t, ans, x, y: _bt(fnp.where(_copysign_flip(x, y), -t, t), ans),
        lambda t, ans, x, y: fnp.zeros_like(ans),
    ),
)

real: UnaryUfunc = _unary(
    "real", vjp=lambda g, ans, x: fnp.real(g) if not fnp.iscomplexobj(x) else fnp.real(g) + 0j, linear=True,
    reads=(),  # x's dtype only
)

imag = _unary(
    "imag", vjp=lambda g, ans, x: -1j * fnp.real(g) if fnp.iscomplexobj(x) else fnp.zeros_like(g), linear=True,
    reads=(),  # x's dtype only
)

conj: UnaryUfunc = _unary("conjugate", vjp=lambda g, ans, x: fnp.conj(g), linear=True, reads=())
conjugate = conj


# angle(z) = arg z: d angle = imag(conj(z) dz) / |z|^2, so the VJP is -1j * g * conj(z) / |z|^2
# (= -1j * g / z). Real inputs have a piecewise constant angle (0 or pi): derivative 0.

def _angle_vjp(g: Any, ans: Any, z: Any, deg: Any=False) -> Any:
    if not is_complex(z):
        return fnp.zeros_like(z)
    zc = fnp.conj(z)
    out = (-1j * g) * zc / _safe(fnp.real(z * zc))
    return out * (180 / math.pi) if deg else out


def _angle_jvp(t: Any, ans: Any, z: Any, deg: Any=False) -> Any:
    if not is_complex(z):
        return fnp.zeros_like(ans)
    zc = fnp.conj(z)
    out = fnp.imag(zc * t) / _safe(fnp.real(z * zc))
    return out * (180 / math.pi) if deg else out


angle = defprimitive(
    backend_function("angle"), vjp=_angle_vjp, jvp=_angle_jvp, batch_from=elementwise_rule,
    doc="Differentiable ``numpy.angle(z, deg=False)``; derivative 0 for real input and at 0.",
)


# --- selection: maximum/minimum, where, clip ---------------------------------
# The derivative goes to the argument the result came from; at a tie it is split
# half/half (as in JAX), so that e.g. maximum(x, x) has derivative 1 in x.

def _share(g: Any, mine: Any, other: Any) -> Any:
    """``g`` where ``mine`` alone equals the result, ``g / 2`` where ``other`` does too, else 0."""
    return fnp.where(mine, fnp.where(other, g * 0.5, g), 0)


_SELECT_RULES = {
    "vjp": (
        lambda g, ans, x, y: unbroadcast(_share(g, x == ans, y == ans), x),
        lambda g, ans, x, y: unbroadcast(_share(g, y == ans, x == ans), y),
    ),
    "jvp": (
        lambda t, ans, x, y: _bt(_share(t, x == ans, y == ans), ans),
        lambda t, ans, x, y: _bt(_share(t, y == ans, x == ans), ans),
    ),
}

maximum = _binary("maximum", **_SELECT_RULES)
minimum = _binary("minimum", **_SELECT_RULES)
fmax = _binary("fmax", **_SELECT_RULES)  # like maximum, but a nan loses: its derivative then goes to the other
fmin = _binary("fmin", **_SELECT_RULES)


_where = defprimitive(
    backend_function("where", 3), name="where",
    vjp=(
        lambda g, ans, c, x, y: fnp.zeros_like(c),
        lambda g, ans, c, x, y: unbroadcast(fnp.where(c, g, 0), x),
        lambda g, ans, c, x, y: unbroadcast(fnp.where(c, 0, g), y),
    ),
    reads={0: {0}, 1: {0}, 2: {0}},  # the condition (x's and y's shapes)
    jvp=(
        lambda t, ans, c, x, y: fnp.zeros_like(ans),
        lambda t, ans, c, x, y: _bt(fnp.where(c, t, 0), ans),
        lambda t, ans, c, x, y: _bt(fnp.where(c, 0, t), ans),
    ),
    batch_from=elementwise_rule,
)


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """Elements of ``x`` where ``condition`` holds, else of ``y`` (broadcast together).

    Differentiable ``numpy.where`` in ``x`` and ``y`` (the condition carries no
    derivative). With only ``condition`` it is ``nonzero(condition)``, which has
    no derivative.

    Example::

        fg.grad(lambda x: fnp.sum(fnp.where(x > 0, x, 0.1 * x)))(fnp.array([-1.0, 2.0]))   # [0.1, 1.]
    """
    if x is None and y is None:
        return fnp.nonzero(condition)
    if x is None or y is None:
        raise ValueError(
            "where: give both x and y (elements to choose from), or neither (which means "
            "nonzero(condition)); got only " + ("y" if x is None else "x")
        )
    return _where(condition, x, y)


def _clip_raw(a: Any, a_min: Any, a_max: Any, **kwargs: Any) -> Any:
    xp = namespace_of(*[v for v in (a, a_min, a_max) if v is not None])
    return xp.clip(a, a_min, a_max, **kwargs)  # kwargs (out=, dtype= ...) only on plain arrays


def _clip_others(ans: Any, *others: Any) -> Any:
    """Where any of the other (non-None) arguments also equals the result."""
    eqs = [o == ans for o in others if o is not None]
    if not eqs:
        return False
    return eqs[0] if len(eqs) == 1 else fnp.logical_or(eqs[0], eqs[1])


def _clip_rule(k: int, reverse: bool) -> Callable[..., Any]:
    def rule(g: Any, ans: Any, a: Any, a_min: Any, a_max: Any) -> Any:
        args = (a, a_min, a_max)
        share = _share(g, args[k] == ans, _clip_others(ans, *args[:k], *args[k + 1:]))
        return unbroadcast(share, args[k]) if reverse else _bt(share, ans)

    return rule


_UFUNC_NIN["clip"] = 3
_clip = defprimitive(
    _clip_raw, name="clip", vjp=[_clip_rule(k, True) for k in range(3)],
    jvp=[_clip_rule(k, False) for k in range(3)], batch_from=lambda fn: _ufunc_batch_rule(fn, "clip"),
    check_kwargs=_refuse_traced_options("clip"), max_args=3,
)


def clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, *, min: Any = None,  # noqa: A002
         max: Any = None, **kwargs: Any) -> Any:  # noqa: A002
    """Limit ``a`` to ``[a_min, a_max]``; either bound may be None or an array.

    Differentiable ``numpy.clip`` in ``a`` and in both bounds: the derivative goes
    to whichever of them the result equals (half/half at a tie, as in JAX).
    ``min``/``max`` are NumPy 2's aliases of ``a_min``/``a_max``. ``out=`` works as
    in NumPy (on traced values too, see funcgrad.numpy.inplace); other ufunc options
    (``dtype=``, ``casting=`` ...) only on plain arrays.

    Example::

        fg.grad(lambda x: fnp.sum(fnp.clip(x, 0.0, 1.0)))(fnp.array([-1.0, 0.5, 2.0]))   # [0., 1., 0.]
    """
    if min is not None:
        if a_min is not None:
            raise TypeError("clip: give the lower bound once, as a_min or as min, not both")
        a_min = min
    if max is not None:
        if a_max is not None:
            raise TypeError("clip: give the upper bound once, as a_max or as max, not both")
        a_max = max
    if out is not None:
        return _clip(a, a_min, a_max, out=out, **kwargs)
    return _clip(a, a_min, a_max, **kwargs)


def _finite_part(g: Any, x: Any) -> Any:
    """``g`` where ``x`` is finite, 0 elsewhere (per real and imaginary part for complex x)."""
    if is_complex(x):
        re = fnp.where(fnp.isfinite(fnp.real(x)), fnp.real(g), 0)
        im = fnp.where(fnp.isfinite(fnp.imag(x)), fnp.imag(g), 0)
        return re + 1j * im
    return fnp.where(fnp.isfinite(x), g, 0)


def _nan_to_num_raw(x: Any, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    xp = np if _NAMESPACE_BY_TYPE.get(type(x)) is np else namespace_of(x)
    return xp.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf)


_nan_to_num = defprimitive(
    _nan_to_num_raw, name="nan_to_num", vjp=lambda g, ans, x, **kw: _finite_part(g, x),
    jvp=lambda t, ans, x, **kw: _finite_part(t, x), batch_from=elementwise_rule,
)


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Any:
    """Replace nan and infinities by finite numbers.

    Differentiable ``numpy.nan_to_num``: slope 1 where ``x`` is finite, 0 where it
    was replaced. Always returns a new array (``copy=False`` is accepted and ignored:
    the input is never changed in place).

    Example::

        fg.grad(lambda x: fnp.sum(fnp.nan_to_num(x * x)))(fnp.array([1.0, 2.0]))   # [2., 4.]
    """
    return _nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)
