"""From bits to floating point: the unit interval, and the inverse error function JAX uses.

``unit_floats(bits, dtype)`` keeps the top ``nmant`` bits as the mantissa of a
number in ``[1, 2)`` and subtracts one (JAX's construction, so the same bits
give the same floats). ``erf_inv`` is XLA's polynomial (Giles, "Approximating
the erfinv function", 2010: one branch pair in float32, three branches in
float64) evaluated with the same operations in the same order, so that
``normal`` and ``truncated_normal`` agree with JAX to within a couple of ulp
rather than to the few hundred ulp that separate XLA's polynomial from
``scipy.special.erfinv``. It is a primitive: its derivative is
``sqrt(pi)/2 * exp(erf_inv(x)**2)``, written in funcgrad.numpy (so it
differentiates again).

Example::

    u = unit_floats(bits, np.float32)      # in [0, 1)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from ..numpy._batching import elementwise_rule
from ..numpy._util import unbroadcast
from . import native

__all__ = ["unit_floats", "erf_inv", "log1p", "scale_shift", "xla_log", "xla_log1p", "fma"]

_UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _unit_floats_raw(bits: Any, dtype: Any = np.float64) -> Any:
    xp = namespace_of(bits)
    dt = np.dtype(dtype)
    info = np.finfo(dt)
    uint = _UINT_OF[dt.itemsize]
    bits = xp.asarray(bits).astype(uint, copy=False)
    one = np.array(1.0, dt).view(uint)
    mant = bits >> uint(info.bits - info.nmant)  # a new array: the rest runs in place on it
    mant |= uint(one)
    out = mant.view(dt)
    out -= dt.type(1.0)
    return out


_unit_floats_p = defprimitive(_unit_floats_raw, name="random_unit_floats", differentiable=False,
                              batch_from=elementwise_rule,
                              doc="Unsigned bits -> floats in [0, 1) of ``dtype`` (JAX's mantissa construction).")


def unit_floats(bits: Any, dtype: Any) -> Any:
    """Floats in ``[0, 1)`` from unsigned bits of the float's width (traceable).

    Example::

        unit_floats(np.array([0, 2**32 - 1], np.uint32), np.float32)   # [0, 1 - 2**-23]
    """
    return _unit_floats_raw(bits, dtype=dtype) if isinstance(bits, np.ndarray) else _unit_floats_p(bits, dtype=dtype)


# Giles' coefficients, highest degree first (XLA's erfInv32 / erfInv64).
_F32_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_F32_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_F64_SMALL = (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
              1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
              6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
              2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
              1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
              4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
              0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
              0.24015818242558961693, 1.6536545626831027356)
_F64_MIDDLE = (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
               1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
               2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
               6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
               0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
               -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
               3.0838856104922207635)
_F64_LARGE = (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
              -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
              2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
              -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
              7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
              1.0103004648645343977, 4.8499064014085844221)


# XLA's log1p on the CPU (a Cephes rational function below sqrt(2) - 1, log(1 + x) above).
_LOG1P_SMALL = 0.41421356237309504880
_LOG1P_NUM = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
              2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
              2.0039553499201281259648e1)
_LOG1P_DEN = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
              3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1)


# XLA's float32 log on the CPU: Cephes' logf polynomial in the reduced mantissa, fused steps
# (measured against JAX 0.10.2's jitted log on 600,000 float32 inputs: equal for 99.96%,
# one ulp apart otherwise; NumPy's float32 log differs from it for 12%).
_LOG32_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
            -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
_LOG32_Q1, _LOG32_Q2 = -2.12194440e-4, 0.693359375  # log(2) split in a short head and a tail
_SQRT_HALF = 0.707106781186547524


def xla_log(xp: Any, x: Any) -> Any:
    """``log(x)`` as XLA computes it on the CPU: its float32 polynomial, the namespace's own
    ``log`` in float64 (where XLA's differs from NumPy's for under 1% of inputs). Plain arrays.

    Example::

        xla_log(np, np.array([0.5, 2.0], np.float32))
    """
    dt = np.dtype(x.dtype)
    if dt != np.float32:
        return xp.log(x)
    f = dt.type
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m, e = xp.frexp(x)  # x = m 2**e, m in [0.5, 1)
        below = m < f(_SQRT_HALF)
        e = e.astype(dt) - below.astype(dt)
        m = m - f(1.0) + xp.where(below, m, f(0.0))  # exact: m - 1, or 2 m - 1 below sqrt(1/2)
        m2 = m * m
        m3 = m2 * m
        p = _LOG32_P
        y = fma(xp, f(p[0]), m, f(p[1]))
        y1 = fma(xp, f(p[3]), m, f(p[4]))
        y2 = fma(xp, f(p[6]), m, f(p[7]))
        y = fma(xp, y, m, f(p[2]))
        y1 = fma(xp, y1, m, f(p[5]))
        y2 = fma(xp, y2, m, f(p[8]))
        y = fma(xp, y, m3, y1)
        y = fma(xp, y, m3, y2)
        y = fma(xp, e, f(_LOG32_Q1), y * m3)
        out = fma(xp, e, f(_LOG32_Q2), fma(xp, m2, f(-0.5), m) + y)
        out = xp.where(x == 0, f(-np.inf), out)
        out = xp.where(x < 0, f(np.nan), out)
        return xp.where(x == f(np.inf), f(np.inf), out)


def xla_log1p(xp: Any, x: Any, exact: bool = False) -> Any:
    """``log(1 + x)`` computed as XLA computes it on the CPU (plain float arrays): its rational
    function below the cut, ``log(1 + x)`` above it, with XLA's float32 ``log`` when ``exact``
    (:func:`xla_log`, several times the cost of NumPy's) and the namespace's ``log`` otherwise."""
    log = (lambda v: xla_log(xp, v)) if exact else xp.log
    dt = np.dtype(x.dtype)
    flat = x.reshape(-1)

    def rational(v: Any) -> Any:
        v2 = v * v
        ratio = _horner(xp, _LOG1P_NUM, v, dt)
        ratio /= _horner(xp, _LOG1P_DEN, v, dt)
        ratio *= v * v2
        v2 *= dt.type(-0.5)
        ratio += v2
        ratio += v
        return ratio

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        large = xp.abs(flat) >= dt.type(_LOG1P_SMALL)
        out = rational(flat)
        if xp is not np:  # a device computes every element (no host synchronisation)
            return xp.where(large, log(flat + dt.type(1.0)), out).reshape(x.shape)
        # NumPy: the short rational function on every element (cheaper than gathering the
        # elements below the cut), log(1 + x) on the others only (float64 log is slow).
        idx = np.flatnonzero(large)
        if idx.size:
            out[idx] = log(flat[idx] + dt.type(1.0))
    return out.reshape(x.shape)


def _on_subset(xp: Any, mask: Any, fn: Any, x: Any, out: Any) -> Any:
    """``where(mask, fn(x), out)``; on NumPy ``fn`` runs only on the selected elements
    (a device namespace computes every element, which needs no host synchronisation)."""
    if xp is np:
        if mask.all():
            return fn(x)
        idx = np.nonzero(mask)[0]
        if idx.size:
            out = out.copy()
            out[idx] = fn(x[idx])
        return out
    return xp.where(mask, fn(x), out)


def fma(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` rounded once, as XLA's fused multiply-add on the CPU (plain float arrays).

    float32: the product is exact in float64. float64: Dekker's error-free
    product and Knuth's two-sum give the rounded sum to within an ulp in rare ties.
    """
    dt = np.dtype(np.result_type(*(getattr(v, "dtype", v) for v in (a, b, c))))

    def cast(v: Any, to: Any) -> Any:  # scalars stay scalars (no upload to a device)
        return to.type(v) if isinstance(v, (int, float, np.generic)) else v.astype(to)

    if dt.itemsize <= 4:
        wide = np.dtype(np.float64)
        return (cast(a, wide) * cast(b, wide) + cast(c, wide)).astype(dt)
    a, b, c = cast(a, dt), cast(b, dt), cast(c, dt)
    p = a * b
    split = dt.type(134217729.0)  # 2**27 + 1
    with np.errstate(over="ignore", invalid="ignore"):
        ta = split * a
        a_hi = ta - (ta - a)
        a_lo = a - a_hi
        tb = split * b
        b_hi = tb - (tb - b)
        b_lo = b - b_hi
        err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
        s = p + c
        bv = s - p
        t = (p - (s - bv)) + (c - bv)
        out = s + (t + err)
    return xp.where(xp.isfinite(err) & xp.isfinite(out), out, p + c)


def _horner(xp: Any, coeffs: tuple[float, ...], w: Any, dt: np.dtype, fused: bool = False) -> Any:
    """Horner's rule; fused steps in float32 (as XLA, and cheap to emulate), plain ones in
    float64 unless ``fused`` (emulating fusion in float64 costs ten times more and changes
    results by under an ulp; the gamma family asks for it, where the error is amplified).

    A float32 step ``fma(p, w, c)`` is the float64 product (exact) plus ``c``, rounded to
    float32: three passes over preallocated buffers (``w`` widened once)."""
    if dt.itemsize <= 4:
        if not (hasattr(w, "shape") and getattr(w, "ndim", 0) > 0):
            p = fma(xp, dt.type(coeffs[0]), w, dt.type(coeffs[1]))
            for c in coeffs[2:]:
                p = fma(xp, p, w, dt.type(c))
            return p
        wide = np.dtype(np.float64)
        w64 = w.astype(wide)
        p64 = w64 * wide.type(dt.type(coeffs[0]))
        p64 += wide.type(dt.type(coeffs[1]))
        p = p64.astype(dt)
        for c in coeffs[2:]:
            xp.multiply(p, w64, out=p64)
            p64 += wide.type(dt.type(c))
            p[...] = p64
        return p
    if fused:
        p = fma(xp, dt.type(coeffs[0]), w, dt.type(coeffs[1]))
        for c in coeffs[2:]:
            p = fma(xp, p, w, dt.type(c))
        return p
    p = w * dt.type(coeffs[0])
    p += dt.type(coeffs[1])
    for c in coeffs[2:]:
        p *= w
        p += dt.type(c)
    return p


def _erf_inv_raw(x: Any, exact: bool = False) -> Any:
    """XLA's ``erf_inv`` on a plain array. ``exact`` also emulates XLA's fused multiply-adds in
    float64 and its float32 ``log`` (JAX's values exactly, as measured over the recorded draws,
    at several times the cost): the gamma family asks for it, whose loop cubes ``1 + c x``."""
    xp = namespace_of(x)
    x = xp.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(xp.float64)
    dt = np.dtype(x.dtype)
    compute = dt if dt.itemsize >= 4 else np.dtype(np.float32)
    xc = x.astype(compute).reshape(-1)
    kernels = (native.kernels_for(xc.size) if xp is np and compute in (np.float32, np.float64) and not exact
               else None)
    if kernels is not None:
        out = np.empty(xc.shape, dtype=compute)
        with np.errstate(divide="ignore", invalid="ignore"):
            # log(1 - x**2) where xla_log1p takes the log (at or above its cut), as it computes it
            log_one_plus = np.empty_like(xc)
            square = xc * xc
            idx = np.flatnonzero(square >= compute.type(_LOG1P_SMALL))
            log_one_plus[idx] = np.log(compute.type(1.0) - square[idx])
        if compute == np.float64:
            kernels.erf_inv_f64(xc, log_one_plus, _COEFFS[_LOG1P_NUM], _COEFFS[_LOG1P_DEN], _COEFFS[_F64_SMALL],
                                _COEFFS[_F64_MIDDLE], _COEFFS[_F64_LARGE], out)
        else:
            kernels.erf_inv_f32(xc, log_one_plus, _COEFFS32[_LOG1P_NUM], _COEFFS32[_LOG1P_DEN],
                                _COEFFS32[_F32_SMALL], _COEFFS32[_F32_LARGE], out)
        return out.astype(dt, copy=False).reshape(x.shape)
    if xp is np and xc.size > _CHUNK:  # block by block: the forty-odd passes stay in cache
        out = np.empty(xc.shape, dtype=dt)
        for start in range(0, xc.size, _CHUNK):
            out[start:start + _CHUNK] = _erf_inv_flat(xp, xc[start:start + _CHUNK], compute, exact)
        return out.reshape(x.shape)
    return _erf_inv_flat(xp, xc, compute, exact).astype(dt).reshape(x.shape)


_CHUNK = 1 << 15
# The coefficient tables as arrays, for the compiled erf_inv of funcgrad.random.native.
_COEFFS = {c: np.array(c, dtype=np.float64) for c in (_LOG1P_NUM, _LOG1P_DEN, _F64_SMALL, _F64_MIDDLE, _F64_LARGE)}
_COEFFS32 = {c: np.array(c, dtype=np.float32) for c in (_LOG1P_NUM, _LOG1P_DEN, _F32_SMALL, _F32_LARGE)}


def _erf_inv_flat(xp: Any, xc: Any, compute: np.dtype, exact: bool = False) -> Any:
    w = xc * xc
    xp.negative(w, out=w)
    w = xla_log1p(xp, w, exact)
    xp.negative(w, out=w)
    branches: list[tuple[float, float, tuple[float, ...], float, bool]]  # [low, high) of w: coeffs at f(w) - shift
    if compute == np.float64:
        branches = [(-np.inf, 6.25, _F64_SMALL, 3.125, False), (6.25, 16.0, _F64_MIDDLE, 3.25, True),
                    (16.0, np.inf, _F64_LARGE, 5.0, True)]
    else:
        branches = [(-np.inf, 5.0, _F32_SMALL, 2.5, False), (5.0, np.inf, _F32_LARGE, 3.0, True)]

    def polynomial(v: Any, coeffs: tuple[float, ...], shift: float, root: bool) -> Any:
        return _horner(xp, coeffs, (xp.sqrt(v) if root else v) - compute.type(shift), compute, exact)

    with np.errstate(invalid="ignore", over="ignore"):
        if xp is np:
            # The first branch (all but the tails, |x| < 0.998) on every element, in place;
            # the tail branches on their few elements.
            first_high = branches[0][1]
            p = polynomial(w, *branches[0][2:])
            idx = np.flatnonzero(~(w < first_high))
            if idx.size:
                wt, pt = w[idx], p[idx]
                for low, high, coeffs, shift, root in branches[1:]:
                    pt = _on_subset(xp, (wt >= low) & (wt < high),
                                    lambda v, c=coeffs, s=shift, r=root: polynomial(v, c, s, r), wt, pt)
                p[idx] = pt
            p *= xc
            edge = np.flatnonzero(np.abs(xc) == 1)
            if edge.size:
                p[edge] = xc[edge] * compute.type(np.inf)
            return p
        p = xc * compute.type(np.nan)
        for low, high, coeffs, shift, root in branches:
            p = _on_subset(xp, (w >= low) & (w < high),
                           lambda v, c=coeffs, s=shift, r=root: polynomial(v, c, s, r), w, p)
        return xp.where(xp.abs(xc) == 1, xc * compute.type(np.inf), p * xc)


def _erf_inv_derivative(ans: Any) -> Any:
    return (math.sqrt(math.pi) / 2) * fnp.exp(ans * ans)


erf_inv = defprimitive(
    _erf_inv_raw, name="random_erf_inv",
    vjp=lambda g, ans, x, **options: g * _erf_inv_derivative(ans),
    jvp=lambda t, ans, x, **options: t * _erf_inv_derivative(ans),
    reads={0: {"ans"}},
    batch_from=elementwise_rule,
    doc="""XLA's inverse error function (Giles' polynomials), differentiable. ``exact=True``
    reproduces XLA's arithmetic more closely at several times the cost (see ``_erf_inv_raw``).

    Example::

        erf_inv(np.array([0.0, 0.5]))      # [0, 0.4769...]
    """,
)


def _log1p_raw(x: Any) -> Any:
    xp = namespace_of(x)
    x = xp.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(xp.float64)
    return xla_log1p(xp, x.reshape(-1)).reshape(x.shape)


log1p = defprimitive(
    _log1p_raw, name="random_log1p",
    vjp=lambda g, ans, x: g / (1 + x),
    jvp=lambda t, ans, x: t / (1 + x),
    reads={0: {0}},
    batch_from=elementwise_rule,
    doc="""``log(1 + x)`` as XLA computes it (so samplers built on it match JAX's bits), differentiable.

    Example::

        log1p(np.array([1e-10, 1.0]))
    """,
)


def _power_of_two(v: Any) -> bool:
    """Is ``v`` a scalar power of two (so that ``u * v`` is exact and needs no fused add)?"""
    if isinstance(v, np.ndarray) and v.ndim == 0 or isinstance(v, (float, int, np.generic)):
        m = float(np.abs(v))
        return m > 0 and np.frexp(m)[0] == 0.5
    return False


def _scale_shift_raw(u: Any, scale: Any, shift: Any) -> Any:
    xp = namespace_of(u, scale, shift)
    dt = np.result_type(*(getattr(v, "dtype", v) for v in (u, scale, shift)))
    if _power_of_two(scale):
        return u * scale + shift
    shape = np.broadcast_shapes(*(tuple(getattr(a, "shape", ())) for a in (u, scale, shift)))
    flat = [xp.broadcast_to(xp.asarray(a, dtype=dt), shape).reshape(-1) for a in (u, scale, shift)]
    return fma(xp, *flat).reshape(shape)


scale_shift = defprimitive(
    _scale_shift_raw, name="random_scale_shift",
    vjp=(lambda g, ans, u, a, b: unbroadcast(g * a, u),
         lambda g, ans, u, a, b: unbroadcast(g * u, a),
         lambda g, ans, u, a, b: unbroadcast(g, b)),
    jvp=(lambda t, ans, u, a, b: t * a + fnp.zeros_like(ans),
         lambda t, ans, u, a, b: t * u + fnp.zeros_like(ans),
         lambda t, ans, u, a, b: t + fnp.zeros_like(ans)),
    batch_from=elementwise_rule,
    doc="""``u * scale + shift`` with one rounding (XLA fuses it on the CPU), differentiable.

    Example::

        scale_shift(np.float32(0.5), np.float32(2), np.float32(-1))   # 0.0
    """,
)

