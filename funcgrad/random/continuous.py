"""Continuous samplers built from uniform floats: JAX's formulas, in funcgrad.numpy.

Each sampler turns JAX's bits into floats exactly as JAX does (``uniform``),
then applies JAX's transformation with funcgrad.numpy operations, so the
results are reparameterized samples: ``uniform`` differentiates with respect
to ``minval``/``maxval``, ``truncated_normal`` with respect to its bounds,
``multivariate_normal`` with respect to the mean and covariance. The default
dtype is float64 (JAX with ``jax_enable_x64``); float32 gives JAX's float32
stream.

Example::

    x = fg.random.normal(key, (3,))
    fg.grad(lambda m: fg.random.uniform(key, (), minval=m, maxval=2.0))(0.5)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import Box, defprimitive
from ..numpy._batching import elementwise_rule
from ..transforms import stop_gradient
from .floats import erf_inv, log1p, scale_shift, unit_floats
from . import xla_math
from .threefry import canonical_shape, check_key, random_bits, split

__all__ = [
    "uniform", "normal", "exponential", "laplace", "logistic", "gumbel", "cauchy", "truncated_normal",
    "multivariate_normal", "orthogonal", "float_dtype", "param_shape",
]


def float_dtype(name: str, dtype: Any) -> np.dtype:
    """The sampler's float dtype (float64 by default), or JAX's error for a non-float one."""
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if dt.kind != "f":
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
    return dt


def param_shape(x: Any) -> tuple[int, ...]:
    return tuple(fnp.shape(x)) if isinstance(x, Box) or hasattr(x, "shape") else np.shape(x)


def _as(x: Any, dt: np.dtype) -> Any:
    """``x`` converted to ``dt`` (traced values stay traced)."""
    if isinstance(x, Box):
        return x if fnp.result_type(x) == dt else fnp.astype(x, dt)
    if isinstance(x, (int, float, np.generic)) or isinstance(x, np.ndarray) and x.ndim == 0:
        return dt.type(x)  # a scalar mixes with arrays of any device
    if hasattr(x, "astype") and hasattr(x, "dtype"):
        return x if x.dtype == dt else x.astype(dt)
    return np.asarray(x, dtype=dt)


def check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    """JAX's rule: the parameters broadcast to ``shape`` and not beyond it."""
    if not param_shapes:
        return
    try:
        joint = np.broadcast_shapes(shape, *param_shapes)
    except ValueError:
        joint = None
    if joint != shape:
        raise ValueError(
            f"{name} parameter shapes must be broadcast-compatible with shape argument, and the result of "
            f"broadcasting the shapes must equal the shape argument, but got result {joint} for shape "
            f"argument {shape}."
        )


def _is_scalar(x: Any, value: float) -> bool:
    return isinstance(x, (int, float, np.generic)) and not isinstance(x, bool) and float(x) == value


def _uniform(key: Any, shape: tuple[int, ...], dt: np.dtype, minval: Any, maxval: Any) -> Any:
    nbits = dt.itemsize * 8
    floats = unit_floats(random_bits(key, nbits, shape), dt)
    if _is_scalar(minval, 0.0) and _is_scalar(maxval, 1.0):
        return floats  # max(0, floats * 1 + 0) is floats itself
    lo = _as(minval, dt)
    hi = _as(maxval, dt)
    return fnp.maximum(lo, scale_shift(floats, hi - lo, lo))


def uniform(key: Any, shape: Any = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    """Uniform floats in ``[minval, maxval)`` (JAX's stream; differentiable in the bounds).

    Example::

        fg.random.uniform(key, (2, 3), minval=-1.0, maxval=1.0)
    """
    key = check_key("uniform", key)
    dt = float_dtype("uniform", dtype)
    return _uniform(key, canonical_shape(shape, "uniform"), dt, minval, maxval)


def _normal_real(key: Any, shape: tuple[int, ...], dt: np.dtype, exact: bool = False, scale: Any = None) -> Any:
    """JAX's normals; ``exact`` for samplers that amplify the last bits (erf_inv's exact mode).

    ``scale`` multiplies them as XLA does when a product follows: ``erf_inv(u) * (scale * sqrt2)``
    (its simplifier gathers the constant factors)."""
    lo = np.nextafter(dt.type(-1.0), dt.type(0.0))
    u = _uniform(key, shape, dt, lo, dt.type(1.0))
    e = erf_inv(u, exact=True) if exact else erf_inv(u)
    if scale is None:
        return dt.type(np.sqrt(2)) * e
    return e * (scale * dt.type(np.sqrt(2)))


def normal(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard normal samples (``sqrt(2) * erf_inv(u)``, as JAX); complex dtypes too.

    Example::

        fg.random.normal(key, (1000,), np.float32)
    """
    key = check_key("normal", key)
    dt = np.dtype(np.float64 if dtype is None else dtype)
    shape = canonical_shape(shape, "normal")
    if dt.kind == "c":
        real = np.dtype(np.float32 if dt == np.complex64 else np.float64)
        k_re, k_im = split(key)
        re = _normal_real(k_re, shape, real)
        im = _normal_real(k_im, shape, real)
        return (fnp.astype(re, dt) + 1j * fnp.astype(im, dt)) / np.array(np.sqrt(2), dt)
    if dt.kind != "f":
        raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, got {dt}")
    return _normal_real(key, shape, dt)


def exponential(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Exponential(1) samples: ``-log1p(-u)``. Example: ``fg.random.exponential(key, (3,))``."""
    key = check_key("exponential", key)
    dt = float_dtype("exponential", dtype)
    u = _uniform(key, canonical_shape(shape, "exponential"), dt, 0.0, 1.0)
    return -log1p(-u)


def laplace(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Laplace(0, 1) samples. Example: ``fg.random.laplace(key, (3,))``."""
    key = check_key("laplace", key)
    dt = float_dtype("laplace", dtype)
    u = _uniform(key, canonical_shape(shape, "laplace"), dt, -1.0 + np.finfo(dt).epsneg, 1.0)
    return fnp.sign(u) * log1p(-fnp.abs(u))


def logistic(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard logistic samples. Example: ``fg.random.logistic(key, (3,))``."""
    key = check_key("logistic", key)
    dt = float_dtype("logistic", dtype)
    x = _uniform(key, canonical_shape(shape, "logistic"), dt, np.finfo(dt).tiny, 1.0)
    return fnp.log(x) - log1p(-x)


def gumbel(key: Any, shape: Any = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Standard Gumbel samples; ``mode`` "low" (default), "high" (more bits near 1) or "highest"
    (float32: 64 bits per sample, the full exponent range near 0 and 1; float64: as "high"), as JAX.

    Example::

        fg.random.gumbel(key, (3,))
    """
    key = check_key("gumbel", key)
    dt = float_dtype("gumbel", dtype)
    shape = canonical_shape(shape, "gumbel")
    return _gumbel(key, shape, dt, mode)


def _gumbel(key: Any, shape: tuple[int, ...], dt: np.dtype, mode: str | None) -> Any:
    info = np.finfo(dt)
    if mode in (None, "low"):
        return -fnp.log(-fnp.log(_uniform(key, shape, dt, info.tiny, 1.0)))
    if mode == "highest" and dt == np.float32:
        both = random_bits(key, 32, (2,) + shape)
        flip = both[0] < np.uint32(1 << 31)
        x = _fine_unit_floats_p(both[0], both[1], flip)
        return fnp.where(flip, -fnp.log(-log1p(-x)), -fnp.log(-fnp.log(x)))
    if mode in ("high", "highest"):
        both = _uniform(key, (2,) + shape, dt, 0.0, 1.0)
        high, low = both[0], both[1]
        x = fnp.where(high >= 0.5, high, high + 2.0 ** -info.nmant * low + info.tiny)
        return -fnp.log(-log1p(-x))
    raise ValueError(f"gumbel: mode must be None, 'low', 'high' or 'highest', got {mode!r}")


def _leading_zeros(xp: Any, v: Any) -> Any:
    """Leading zero bits of ``uint32`` values (32 for zero): float64 holds every uint32 exactly."""
    return (32 - xp.frexp(v.astype(xp.float64))[1]).astype(xp.uint32)


def _shift(xp: Any, v: Any, by: Any, left: bool) -> Any:
    """A logical ``uint32`` shift that gives 0 for shifts of 32 or more (XLA's rule, not the CPU's)."""
    small = xp.minimum(by, xp.uint32(31)).astype(xp.uint32)
    moved = xp.left_shift(v, small) if left else xp.right_shift(v, small)
    return xp.where(by >= 32, xp.uint32(0), moved)


def _fine_unit_floats_raw(high: Any, low: Any, flip: Any) -> Any:
    """JAX's float32 of 64 random bits in (0, 1) with the full exponent range: the bits (or their
    64-bit negation where ``flip`` is False) as a fixed-point fraction, normalised by its leading
    zeros so that small values keep 23 bits of mantissa."""
    xp = namespace_of(high, low, flip)
    high = xp.asarray(high, dtype=xp.uint32)
    low = xp.asarray(low, dtype=xp.uint32)
    neg_high = xp.bitwise_not(high) + (xp.bitwise_not(low) == xp.uint32(0xFFFFFFFF)).astype(xp.uint32)
    neg_low = xp.bitwise_not(low) + xp.uint32(1)
    hi = xp.where(flip, high, neg_high)
    lo = xp.where(flip, low, neg_low)
    hi_lz = _leading_zeros(xp, hi)
    lo_lz = _leading_zeros(xp, lo)
    top = hi_lz == 32
    mantissa = _shift(xp, hi, hi_lz, True) | xp.where(top, _shift(xp, lo, lo_lz, True),
                                                       _shift(xp, lo, xp.uint32(32) - hi_lz, False))
    mantissa = (mantissa >> xp.uint32(8)) & xp.uint32((1 << 23) - 1)
    zeros = xp.where(top, xp.uint32(32) + lo_lz, hi_lz)
    exponent = ((xp.uint32(126) - zeros) << xp.uint32(23)) & xp.uint32((1 << 30) - (1 << 22))
    return (exponent | mantissa).view(xp.float32)


_fine_unit_floats_p = defprimitive(
    _fine_unit_floats_raw, name="random_fine_unit_floats", differentiable=False, batch_from=elementwise_rule,
    doc="Two uint32 words -> float32 in (0, 1) with the full exponent range (JAX's gumbel mode 'highest').")


def cauchy(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard Cauchy samples: ``tan(pi * (u - 1/2))``. Example: ``fg.random.cauchy(key, (3,))``."""
    key = check_key("cauchy", key)
    dt = float_dtype("cauchy", dtype)
    u = _uniform(key, canonical_shape(shape, "cauchy"), dt, np.finfo(dt).eps, 1.0)
    return fnp.tan(np.array(np.pi, dt) * (u - np.array(0.5, dt)))


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Normal samples truncated to ``(lower, upper)``: ``sqrt(2) erf_inv(U(erf(lower/sqrt2), erf(upper/sqrt2)))``.

    Differentiable with respect to ``lower`` and ``upper`` (the implicit
    reparameterization: the sample moves with the bounds through the inverse CDF).

    Example::

        fg.random.truncated_normal(key, -1.0, 2.0, (5,))
    """
    key = check_key("truncated_normal", key)
    dt = float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = np.broadcast_shapes(param_shape(lower), param_shape(upper))
    else:
        shape = canonical_shape(shape, "truncated_normal")
        check_shape("truncated_normal", shape, param_shape(lower), param_shape(upper))
    sqrt2 = np.array(np.sqrt(2), dt)
    lower = _as(lower, dt)
    upper = _as(upper, dt)
    # XLA turns ``x / sqrt2`` into ``x * (1 / sqrt2)``; float32: its own erf, as JAX's
    inv_sqrt2 = np.array(1, dt) / sqrt2
    a = xla_math.erf(lower * inv_sqrt2)
    b = xla_math.erf(upper * inv_sqrt2)
    u = _uniform(key, shape, dt, a, b)
    out = sqrt2 * erf_inv(u, exact=dt == np.float32)  # float32: JAX's bits (exact mode costs little there)
    lo = fnp.nextafter(stop_gradient(lower), np.array(np.inf, dt))
    hi = fnp.nextafter(stop_gradient(upper), np.array(-np.inf, dt))
    return fnp.clip(out, lo, hi)


def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Any = None, dtype: Any = None,
                        method: str = "cholesky") -> Any:
    """Samples of ``N(mean, cov)``: ``mean + factor @ z``, ``factor`` from cholesky, eigh or svd.

    Differentiable with respect to ``mean`` and ``cov``.

    Example::

        fg.random.multivariate_normal(key, np.zeros(2), np.eye(2), (10,))
    """
    key = check_key("multivariate_normal", key)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError(f"multivariate_normal: method must be one of {{'svd', 'eigh', 'cholesky'}}, got {method!r}")
    if dtype is None:
        kind = fnp.result_type(mean, cov)
        dt = np.dtype(kind if np.dtype(kind).kind == "f" else np.float64)
    else:
        dt = float_dtype("multivariate_normal", dtype)
    mean = _as(mean, dt)
    cov = _as(cov, dt)
    ms, cs = param_shape(mean), param_shape(cov)
    if len(ms) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {len(ms)}")
    if len(cs) < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {len(cs)}")
    n = ms[-1]
    if cs[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got cov.shape == {cs}.")
    if shape is None:
        shape = np.broadcast_shapes(ms[:-1], cs[:-2])
    else:
        shape = canonical_shape(shape, "multivariate_normal")
        check_shape("normal", shape, ms[:-1], cs[:-2])
    if method != "svd":
        # cholesky/eigh read one triangle; symmetrizing (exact for a symmetric input) gives the
        # symmetric gradient with respect to cov that JAX's rules give.
        cov = (cov + fnp.swapaxes(cov, -1, -2)) / 2
    if method == "svd":
        u, s, _ = fnp.linalg.svd(cov)
        factor = u * fnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = fnp.linalg.eigh(cov)
        factor = v * fnp.sqrt(w[..., None, :])
    else:
        factor = fnp.linalg.cholesky(cov)
    z = _normal_real(key, tuple(shape) + (n,), dt)
    return mean + fnp.einsum("...ij,...j->...i", factor, z)


def _float32_lapack_qr(z: np.ndarray) -> Any:
    """Reduced QR of a stack of float32 matrices with LAPACK's single-precision ``sgeqrf`` and
    ``sorgqr`` through SciPy, the routines jaxlib calls on the CPU (NumPy's ``qr`` computes in
    float64, which rounds differently: up to 3 ulp from JAX's). NumPy's ``qr`` without SciPy."""
    try:
        from scipy import __version__ as scipy_version
        from scipy.linalg import qr
    except ImportError:  # pragma: no cover - SciPy is an optional dependency
        return fnp.linalg.qr(z)
    if z.ndim == 2 or tuple(int(v) for v in scipy_version.split(".")[:2]) >= (1, 15):  # batched from 1.15
        return qr(z, mode="economic", check_finite=False)
    k = min(z.shape[-2:])
    q = np.empty(z.shape[:-1] + (k,), z.dtype)
    r = np.empty(z.shape[:-2] + (k, z.shape[-1]), z.dtype)
    for index in np.ndindex(*z.shape[:-2]):
        q[index], r[index] = qr(z[index], mode="economic", check_finite=False)
    return q, r


def orthogonal(key: Any, n: int, shape: Any = (), dtype: Any = None, m: int | None = None) -> Any:
    """Uniformly distributed orthogonal ``(n, m)`` matrices (``m`` defaults to ``n``), as JAX.

    Example::

        q = fg.random.orthogonal(key, 3)      # q @ q.T == I
    """
    key = check_key("orthogonal", key)
    dt = float_dtype("orthogonal", dtype)
    shape = canonical_shape(shape, "orthogonal")
    n = int(n)
    m = n if m is None else int(m)
    z = _normal_real(key, shape + (max(n, m), min(n, m)), dt, exact=True)
    q, r = _float32_lapack_qr(z) if dt == np.float32 and isinstance(z, np.ndarray) else fnp.linalg.qr(z)
    d = fnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * fnp.expand_dims(fnp.sign(d), -2)
    return fnp.swapaxes(x, -1, -2) if n < m else x
