"""More of NumPy's math: nan-aware products and cumulative sums, ldexp/frexp, i0, unwrap,
geomspace, real_if_close, and the non-differentiable spacing/nextafter/bitwise_count.

``ldexp`` is a primitive (linear in its first argument); the rest are compositions
of differentiable functions, or non-differentiable primitives that traced values
pass through (their results carry no derivative; vmap batches them).

Example::

    fg.grad(lambda x: fnp.nanprod(x))(fnp.asarray([2.0, fnp.nan, 3.0]))   # [3, 0, 2]
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..core import Box, defprimitive, nondiff_primitive
from ..core.batching import defbatch
from . import special_base
from ._batching import elementwise_rule
from ._util import backend_function, dtype, unbroadcast

__all__ = [
    "nanprod", "nancumsum", "nancumprod", "ldexp", "frexp", "i0", "unwrap", "geomspace", "real_if_close",
    "spacing", "nextafter", "bitwise_count",
]


def _arr(a: Any) -> Any:
    return a if isinstance(a, Box) or hasattr(a, "shape") else fnp.asarray(a)


def _no_nan(a: Any, fill: float) -> Any:
    a = _arr(a)
    return fnp.where(fnp.isnan(a), fill, a) if dtype(a).kind in "fc" else a


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
            initial: Any = None, where: Any = None) -> Any:
    """``numpy.nanprod``: the product with NaNs counted as 1 (their derivative is 0).

    Example::

        fnp.nanprod(fnp.asarray([2.0, fnp.nan, 3.0]))   # 6
    """
    kw: dict[Any, Any] = {}
    if initial is not None:
        kw["initial"] = initial
    if where is not None:
        kw["where"] = where
    x = _no_nan(a, 1.0)
    if dtype is not None:
        x = fnp.astype(x, dtype)
    return _to(fnp.prod(x, axis=axis, keepdims=keepdims, **kw), out)


def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """``numpy.nancumsum``: the cumulative sum with NaNs counted as 0.

    Example::

        fnp.nancumsum(fnp.asarray([1.0, fnp.nan, 2.0]))   # [1, 1, 3]
    """
    x = _no_nan(a, 0.0)
    return _to(fnp.cumsum(x if dtype is None else fnp.astype(x, dtype), axis=axis), out)


def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """``numpy.nancumprod``: the cumulative product with NaNs counted as 1.

    Example::

        fnp.nancumprod(fnp.asarray([2.0, fnp.nan, 3.0]))   # [2, 2, 6]
    """
    x = _no_nan(a, 1.0)
    return _to(fnp.cumprod(x if dtype is None else fnp.astype(x, dtype), axis=axis), out)


def _to(result: Any, out: Any) -> Any:
    if out is None:
        return result
    out[...] = result
    return out


ldexp: Callable[..., Any] = defprimitive(
    backend_function("ldexp", 2), name="ldexp",
    vjp=[lambda g, ans, x1, x2: unbroadcast(ldexp(g, x2), x1)],
    jvp={1: lambda t, ans, x1, x2: fnp.zeros_like(ans)},
    linear=True, batch_from=elementwise_rule, reads={0: {1}},
    doc="""``numpy.ldexp``: ``x1 * 2 ** x2``, differentiable in ``x1`` (``x2`` is an integer).

    Example::

        fnp.ldexp(fnp.asarray([1.5]), 3)   # [12.]
    """,
)


def _frexp_exponent_raw(x: Any) -> Any:
    return backend_function("frexp")(x)[1]


_frexp_exponent = nondiff_primitive(_frexp_exponent_raw, "frexp_exponent")
defbatch(_frexp_exponent, elementwise_rule(_frexp_exponent))


def frexp(x: Any, /) -> tuple[Any, Any]:
    """``numpy.frexp``: ``(mantissa, exponent)`` with ``x = mantissa * 2 ** exponent``; the
    mantissa is differentiable (``2 ** -exponent`` times the derivative of ``x``).

    Example::

        fnp.frexp(fnp.asarray([12.0]))   # ([0.75], [4])
    """
    x = _arr(x)
    e = _frexp_exponent(x)
    return ldexp(x, -e), e


def i0(x: Any) -> Any:
    """``numpy.i0``: the modified Bessel function of order 0 (differentiable: ``i0' = i1``).

    Example::

        fnp.i0(fnp.asarray([0.0, 1.0]))   # [1., 1.26606588]
    """
    return special_base.i0(_arr(x))


def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * math.pi) -> Any:
    """``numpy.unwrap``: remove jumps larger than ``discont`` by adding multiples of ``period``.
    The added multiples are piecewise constant, so the derivative is the identity.

    Example::

        fnp.unwrap(fnp.asarray([0.0, 3.0, 6.5]))   # [0, 3, 0.2168...]
    """
    p = _arr(p)
    if dtype(p).kind not in "fc":
        p = fnp.astype(p, np.float64)
    dd = fnp.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    high = period / 2
    low = -high
    ddmod = fnp.mod(dd - low, period) + low
    ddmod = fnp.where((ddmod == low) & (dd > 0), high, ddmod)
    correct = fnp.where(fnp.abs(dd) < discont, 0.0, ddmod - dd)
    nd = len(fnp.shape(p))
    ax = axis % nd
    head = p[(slice(None),) * ax + (slice(0, 1),)]
    tail = p[(slice(None),) * ax + (slice(1, None),)]
    return fnp.concatenate([head, tail + fnp.cumsum(correct, axis=ax)], axis=ax)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None, axis: int = 0) -> Any:
    """``numpy.geomspace``: numbers spaced evenly on a log scale, differentiable in the
    (real, same-signed, scalar) end points.

    Example::

        fnp.geomspace(1.0, 1000.0, 4)   # [1, 10, 100, 1000]
    """
    if not isinstance(start, Box) and not isinstance(stop, Box):
        return np.geomspace(start, stop, num, endpoint, dtype, axis) if _host(start, stop) else \
            _geom(_arr(start), _arr(stop), num, endpoint, dtype)
    if fnp.shape(start) != () or fnp.shape(stop) != () or axis != 0:
        raise NotImplementedError("geomspace with traced end points: scalar start and stop (axis=0) only")
    return _geom(start, stop, num, endpoint, dtype)


def _host(*xs: Any) -> bool:
    from ..backend import namespace_of

    return all(namespace_of(x) is np for x in xs if hasattr(x, "shape"))


def _geom(start: Any, stop: Any, num: int, endpoint: bool, dtype_: Any) -> Any:
    from ..backend import namespace_of
    from ..core import unbox_all

    r0, r1 = unbox_all(start), unbox_all(stop)  # every example's end points (vmap)
    xp = namespace_of(r0, r1)
    if dtype(start).kind == "c" or dtype(stop).kind == "c":
        raise NotImplementedError("geomspace of complex end points is not differentiable here")
    if bool(xp.any(r0 == 0)) or bool(xp.any(r1 == 0)):
        raise ValueError("Geometric sequence cannot include zero")
    if bool(xp.any(xp.sign(r0) != xp.sign(r1))):
        raise NotImplementedError("geomspace between end points of different signs (complex results)")
    s0 = fnp.sign(start)
    ls, le = fnp.log10(fnp.abs(start)), fnp.log10(fnp.abs(stop))
    mid = s0 * fnp.logspace(ls, le, num, endpoint=endpoint)
    if num > 0:
        one = fnp.reshape(fnp.astype(start, dtype(mid)) if dtype(start) != dtype(mid) else start, (1,))
        parts = [one, mid[1:]]
        if endpoint and num > 1:
            last = fnp.reshape(fnp.astype(stop, dtype(mid)) if dtype(stop) != dtype(mid) else stop, (1,))
            parts = [one, mid[1:-1], last]
        mid = fnp.concatenate(parts)
    return mid if dtype_ is None else fnp.astype(mid, dtype_)


def real_if_close(a: Any, tol: float = 100) -> Any:
    """``numpy.real_if_close``: the real part when every imaginary part is within ``tol``
    machine epsilons of zero (a decision on the values), else ``a``.

    Example::

        fnp.real_if_close(fnp.asarray([2.1 + 4e-14j]))   # [2.1]
    """
    a = _arr(a)
    d = dtype(a)
    if d.kind != "c":
        return a
    if tol > 1:
        tol = np.finfo(d).eps * tol
    raw = a
    while isinstance(raw, Box):
        raw = raw._value
    from ..backend import namespace_of

    xp = namespace_of(raw)
    return fnp.real(a) if bool(xp.all(xp.abs(raw.imag) < tol)) else a


def _nondiff(name: str, n: int) -> Any:
    fn = nondiff_primitive(backend_function(name, n), name)
    defbatch(fn, elementwise_rule(fn))
    return fn


spacing = _nondiff("spacing", 1)
nextafter = _nondiff("nextafter", 2)
bitwise_count = _nondiff("bitwise_count", 1)
