"""XLA's own ``exp`` and ``erf`` on the CPU, operation for operation, as differentiable primitives.

JAX's samplers call XLA's elementary functions, which are not NumPy's: XLA's float32
``exp`` differs from NumPy's in the last bit for about 40% of inputs, its float32 ``erf``
from the correctly rounded one for about half. Where a sampler's last bits depend on
them (``lognormal``, ``truncated_normal``), these reproduce XLA's results bit for bit
(checked against JAX 0.10.2's jitted ``exp`` and ``erf`` in tests/test_random_jax.py,
recorded in tests/fixtures/random_xla_math_jax.npz):

- ``exp``: the Cephes reduction ``x = m ln2 + r`` (``ln2`` split in a short head and a
  tail), a degree-7 polynomial in ``r`` by Horner's rule with every multiply-add fused,
  ``m`` capped at 127 so that ``2**m`` is a float32, and results below the smallest
  normal flushed to zero (XLA's CPU code runs with denormals off). float64: the Cephes
  rational function ``1 + 2 p / (q - p)`` with the reduction and ``p`` fused.
- ``rsqrt``: the processor's estimate (``rsqrtps`` in float32, 2 x 1024 entries;
  ``rsqrt14`` in float64, 2 x 32768 entries; tables read from an Intel CPU, in
  funcgrad/random/rsqrt_estimates.py) refined by two fused Newton steps.
- ``erf`` (float32): Eigen's rational function ``x p(x**2) / q(x**2)`` with fused
  Horner steps, ``sign(x)`` from ``|x| >= 3.8325...`` on. float64 ``erf`` is the C
  library's, which SciPy's matches closely: it is left to ``fnp`` callers.

Example::

    exp(np.array([0.5, -1.0], np.float32))     # XLA's float32 exp, bit for bit
"""

from __future__ import annotations

import base64
import math
import zlib
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from ..numpy._batching import elementwise_rule
from .floats import fma

__all__ = ["exp", "erf", "xla_exp", "xla_erf", "xla_rsqrt"]

# float32 exp: log2(e), ln 2 = _LN2_HEAD + _LN2_TAIL, Cephes' expf coefficients (highest degree first).
_LOG2E = 1.44269504088896341
_LN2_HEAD32, _LN2_TAIL32 = 0.693359375, -2.12194440e-4
_EXP32_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
            5.0000001201e-1)
_EXP32_LIMIT = 88.723164

# float64 exp: Cephes' rational function in r**2, ln 2 split in two, XLA's clamp.
_LN2_HEAD64, _LN2_TAIL64 = 0.693145751953125, 1.42860682030941723212e-6
_EXP64_P = (1.26177193074810590878e-4, 3.02994407707441961300e-2, 9.99999999999999999910e-1)
_EXP64_Q = (3.00198505138664455042e-6, 2.52448340349684104192e-3, 2.27265548208155028766e-1,
            2.00000000000000000009e0)
_EXP64_HI, _EXP64_LO = 709.782712893384, -708.3964185322641

# float32 erf: Eigen's rational function (odd numerator, even denominator; highest degree first).
_ERF32_NUM = (0.00022905065861350646, 0.0034082910107109506, 0.050955695062380861, 0.18520832239976145,
              1.128379143519084)
_ERF32_DEN = (-1.1791602954361697e-7, 0.000023547966471313185, 0.0010179625278914885, 0.014070470171167667,
              0.11098505178285362, 0.49746925110067538, 1.0)
_ERF32_SATURATES = 3.832506856900711  # erf rounds to +-1 in float32 from here on


def _fused_horner(xp: Any, coeffs: tuple[float, ...], w: Any, dt: np.dtype) -> Any:
    p = fma(xp, dt.type(coeffs[0]), w, dt.type(coeffs[1]))
    for c in coeffs[2:]:
        p = fma(xp, p, w, dt.type(c))
    return p


def xla_exp(xp: Any, x: Any) -> Any:
    """``exp(x)`` as XLA computes it on the CPU, for float32 and float64 plain arrays.

    Example::

        xla_exp(np, np.array([0.0, 1.0], np.float32))     # [1, 2.7182817]
    """
    dt = np.dtype(x.dtype)
    f = dt.type
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        if dt == np.float32:
            xc = xp.clip(x, f(-_EXP32_LIMIT), f(_EXP32_LIMIT))
            m = xp.minimum(xp.floor(fma(xp, xc, f(_LOG2E), f(0.5))), f(127.0))
            r = fma(xp, m, f(-_LN2_HEAD32), xc)
            r = fma(xp, m, f(-_LN2_TAIL32), r)
            y = _fused_horner(xp, _EXP32_P, r, dt)
            y = fma(xp, y, r * r, r) + f(1.0)
            out = xp.ldexp(y, m.astype(np.int32))
            out = xp.where(out < f(np.finfo(dt).tiny), f(0.0), out)  # denormals flushed
            out = xp.maximum(out, x)  # +inf stays inf; NaN propagates
            return xp.where(xp.isnan(x), x, out)
        if dt != np.float64:
            return xp.exp(x)
        xc = xp.clip(x, f(_EXP64_LO), f(_EXP64_HI))
        m = xp.floor(fma(xp, xc, f(_LOG2E), f(0.5)))
        g = fma(xp, m, f(-_LN2_HEAD64), xc)
        g = fma(xp, m, f(-_LN2_TAIL64), g)
        g2 = g * g
        p = _fused_horner(xp, _EXP64_P, g2, dt) * g
        q = _fused_horner(xp, _EXP64_Q, g2, dt)
        y = fma(xp, p / (q - p), f(2.0), f(1.0))
        out = xp.ldexp(y, m.astype(np.int32))
        out = xp.where(x < f(_EXP64_LO), f(0.0), out)
        out = xp.where(x > f(_EXP64_HI), f(np.inf), out)
        return xp.where(xp.isnan(x), x, out)


def xla_erf(xp: Any, x: Any) -> Any:
    """``erf(x)`` as XLA computes it on the CPU in float32 (Eigen's rational function), for a
    plain float32 array.

    Example::

        xla_erf(np, np.array([0.5, 4.0], np.float32))     # [0.5204999, 1]
    """
    f = np.float32
    with np.errstate(over="ignore", invalid="ignore"):
        x2 = x * x
        p = x * _fused_horner(xp, _ERF32_NUM, x2, np.dtype(f))
        q = _fused_horner(xp, _ERF32_DEN, x2, np.dtype(f))
        return xp.where(xp.abs(x) >= f(_ERF32_SATURATES), xp.copysign(f(1.0), x), p / q)


_RSQRT_TABLES: dict[str, np.ndarray] = {}


def _rsqrt_table(dt: np.dtype) -> np.ndarray:
    """The processor's estimates for ``x0`` in ``[1, 2)`` (row 0) and ``[2, 4)`` (row 1), built once:
    float32 ``rsqrtps`` (2 x 1024), float64 ``rsqrt14`` (2 x 32768)."""
    if dt.name not in _RSQRT_TABLES:
        from . import rsqrt_estimates

        if dt == np.float32:
            digits = "".join(rsqrt_estimates.MANTISSAS)
            mantissas = np.array([int(digits[i:i + 3], 16) for i in range(0, len(digits), 3)], np.float64)
            table = (0.5 * (1.0 + mantissas / 4096.0)).astype(np.float32)
        else:
            packed = base64.b64decode("".join(rsqrt_estimates.SCALED_STEPS_64))
            steps = np.frombuffer(zlib.decompress(packed), dtype="<i4").astype(np.int64)
            table = np.ldexp(np.cumsum(steps).astype(np.float64), -17)
        _RSQRT_TABLES[dt.name] = table.reshape(2, -1)
    return _RSQRT_TABLES[dt.name]


def xla_rsqrt(xp: Any, x: Any) -> Any:
    """``1 / sqrt(x)`` as XLA computes it on an x86 CPU with AVX-512 (a plain positive float32
    or float64 array): the processor's estimate (``rsqrtps`` in float32, ``rsqrt14`` in
    float64) from its table, then two Newton steps, each ``y + (-y/2) * fma(x y, y, -1)``
    with fused multiply-adds.

    Example::

        xla_rsqrt(np, np.array([4.0, 2.0], np.float32))     # [0.5, 0.70710677]
    """
    dt = np.dtype(x.dtype)
    f = dt.type
    table = _rsqrt_table(dt)
    if xp is not np:
        table = xp.asarray(table)
    m, e = xp.frexp(x)  # x = (2 m) 2**(e - 1), 2 m in [1, 2)
    e = e - 1
    odd = e % 2
    index = xp.floor((m * f(2.0) - f(1.0)) * f(table.shape[1])).astype(np.int64)  # exact: the top mantissa bits
    estimate = table[odd, index]
    if dt != np.float32:  # rsqrt14 is exact at powers of 4
        estimate = xp.where((m == f(0.5)) & (odd == 0), f(1.0), estimate)
    y = xp.ldexp(estimate, -((e - odd) // 2))
    for _ in range(2):
        half = y * f(-0.5)
        h = fma(xp, x * y, y, f(-1.0))
        y = fma(xp, half, h, y)
    tiny_or_inf = (x < f(np.finfo(dt).tiny)) | (x == f(np.inf))
    return xp.where(tiny_or_inf, f(1.0) / xp.sqrt(x), y)


def _plain(fn: Any) -> Any:
    def raw(x: Any) -> Any:
        xp = namespace_of(x)
        return fn(xp, xp.asarray(x))
    return raw


exp = defprimitive(
    _plain(xla_exp), name="random_xla_exp",
    vjp=lambda g, ans, x: g * ans,
    jvp=lambda t, ans, x: t * ans,
    reads={0: {"ans"}},
    batch_from=elementwise_rule,
    doc="""XLA's CPU ``exp`` (float32 and float64), differentiable: its derivative is itself.

    Example::

        exp(np.array([0.5], np.float32))
    """,
)

def _erf_raw(x: Any) -> Any:
    xp = namespace_of(x)
    x = xp.asarray(x)
    if np.dtype(x.dtype) == np.float32:
        return xla_erf(xp, x)
    from ..scipy.special import erf as scipy_erf

    return scipy_erf(x)


erf = defprimitive(
    _erf_raw, name="random_xla_erf",
    vjp=lambda g, ans, x: g * (2 / math.sqrt(math.pi)) * fnp.exp(-x * x),
    jvp=lambda t, ans, x: t * (2 / math.sqrt(math.pi)) * fnp.exp(-x * x),
    reads={0: {0}},
    batch_from=elementwise_rule,
    doc="""``erf`` as XLA computes it on the CPU, differentiable: its own rational function in
    float32, SciPy's ``erf`` otherwise (XLA's float64 ``erf`` is the C library's).

    Example::

        erf(np.array([0.5, 4.0], np.float32))     # [0.5204999, 1]
    """,
)
