"""Gamma-family samplers with implicit reparameterization gradients.

``gamma`` runs JAX's Marsaglia-Tsang rejection loop (one key per element, split
from the caller's key, then JAX's loop structure: an inner loop for a positive
``v``, an outer one until the squeeze or log test accepts; shapes below one are
boosted by ``U ** (1 / a)``), vectorised over all elements at once: each round
updates only the elements still rejecting.

The sample is a primitive whose derivative with respect to the shape ``a`` is
the implicit reparameterization gradient (Figurnov et al., 2018)::

    dx/da = -(dF(x; a)/da) / p(x; a)

with ``F`` the regularized lower incomplete gamma function. ``dF/da`` is
``gammainc``'s derivative in its shape (a series summed from its largest term,
or in the upper tail a quadrature of ``gammaincc``'s, about 1e-13 relative),
written in funcgrad.numpy, so the gradient differentiates again: second
derivatives in ``a`` are exact (a third raises, as ``gammainc``'s does). ``loggamma``, ``beta``, ``dirichlet``, ``t``,
``generalized_normal`` and ``ball`` are compositions, so their gradients with
respect to the shape parameters follow.

Example::

    fg.grad(lambda a: fg.random.gamma(key, a))(2.0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import Box, defprimitive
from ..numpy._batching import batch_size, front
from ..scipy._special_more import _gammainc_da
from ..scipy.special import gammaln
from .continuous import _as, _normal_real, _uniform, check_shape, exponential, float_dtype, param_shape
from .discrete import rademacher
from .floats import _erf_inv_raw, _unit_floats_raw, fma, xla_log, xla_log1p
from . import xla_math
from .xla_math import xla_rsqrt
from .threefry import _bits_raw, _split_raw, canonical_shape, check_key, split

__all__ = ["gamma", "loggamma", "beta", "dirichlet", "t", "chisquare", "generalized_normal", "ball"]


def _normal_scalars(xp: Any, keys: Any, dt: np.dtype) -> Any:
    floats = _unit_floats_raw(_bits_raw(keys, (), dt.itemsize * 8), dt)
    lo = np.nextafter(dt.type(-1.0), dt.type(0.0))
    u = xp.maximum(lo, fma(xp, floats, dt.type(1.0) - lo, lo))
    return dt.type(np.sqrt(2)) * _erf_inv_raw(u, exact=True)  # exactly XLA's: v = 1 + c x is cubed


def _uniform_scalars(keys: Any, dt: np.dtype) -> Any:
    return _unit_floats_raw(_bits_raw(keys, (), dt.itemsize * 8), dt)


def _rsqrt(xp: Any, d: Any) -> Any:
    """``1 / sqrt(d)`` as XLA's, bit for bit, in float32 and float64 (:func:`xla_math.xla_rsqrt`);
    correctly rounded through float64 for other float dtypes."""
    dt = np.dtype(d.dtype)
    if dt in (np.float32, np.float64):
        return xla_rsqrt(xp, d)
    return (1.0 / xp.sqrt(d.astype(np.float64))).astype(dt)


def _gamma_one(xp: Any, keys: Any, alpha: Any, log_space: bool) -> Any:
    """JAX's ``_gamma_one`` for a vector of (key, alpha) pairs at once."""
    dt = np.dtype(alpha.dtype)
    one, third = dt.type(1.0), dt.type(1.0 / 3.0)
    boost_mask = alpha >= one
    alpha_b = xp.where(boost_mask, alpha, alpha + one)
    d = alpha_b - third
    # XLA rewrites a / sqrt(d) as a * rsqrt(d), and its rsqrt starts from the processor's
    # estimate (rebuilt from its tables, see xla_math.xla_rsqrt).
    c = third * _rsqrt(xp, d)
    pair = _split_raw(keys)
    key, subkey = pair[:, 0], pair[:, 1]
    n = alpha.shape[0]
    X = xp.zeros(n, dtype=dt)
    V = xp.ones(n, dtype=dt)
    U = xp.full(n, 2.0, dtype=dt)
    active = xp.ones(n, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        while bool(active.any()):
            idx = xp.nonzero(active)[0]
            three = _split_raw(key[idx], (3,))
            key[idx] = three[:, 0]
            xkey, ukey = three[:, 1], three[:, 2]
            ci = c[idx]
            x = xp.zeros(idx.shape[0], dtype=dt)
            v = xp.full(idx.shape[0], -1.0, dtype=dt)
            inner = v <= 0
            while bool(inner.any()):
                j = xp.nonzero(inner)[0]
                kk = _split_raw(xkey[j])
                xkey[j] = kk[:, 0]
                xn = _normal_scalars(xp, kk[:, 1], dt)
                x[j] = xn
                v[j] = fma(xp, xn, ci[j], one)
                inner = v <= 0
            Xi = x * x
            Vi = v * v * v
            Ui = _uniform_scalars(ukey, dt)
            X[idx], V[idx], U[idx] = Xi, Vi, Ui
            di = d[idx]
            squeeze = Ui >= one - dt.type(0.0331) * (Xi * Xi)
            log_test = xla_log(xp, Ui) >= Xi * dt.type(0.5) + di * (one - Vi + xla_log(xp, Vi))
            active[idx] = squeeze & log_test
        if log_space:
            u = _uniform_scalars(subkey, dt)
            log_samples = xla_log1p(xp, -u, exact=True)
            log_boost = xp.where(boost_mask | (log_samples == 0), dt.type(0.0), log_samples * (one / alpha))
            return (xla_log(xp, d) + xla_log(xp, V)) + log_boost
        samples = one - _uniform_scalars(subkey, dt)
        if dt.itemsize < 8:  # XLA's float32 pow is nearly correctly rounded: so is the float64 one, rounded
            power = (samples.astype(np.float64) ** (one / alpha).astype(np.float64)).astype(dt)
        else:
            power = samples ** (one / alpha)
        boost = xp.where(boost_mask, one, power)
        return (d * V) * boost


def _gamma_raw(keys: Any, a: Any, log_space: bool = False) -> Any:
    xp = namespace_of(keys, a)
    a = xp.asarray(a)
    lead = tuple(keys.shape[:-1])
    count = math.prod(a.shape[len(lead):])
    flat_keys = _split_raw(keys, (count,)).reshape(-1, 2)
    out = _gamma_one(xp, flat_keys, a.reshape(-1), log_space)
    return out.reshape(a.shape)


def _implicit_gradient(a: Any, sample: Any, log_space: bool = False) -> Any:
    """``d sample / d a`` of a gamma sample (``d log-sample / d a`` in log space): ``-dF/da / p``.

    Written in funcgrad.numpy over ``gammainc``'s derivative in the shape (a primitive with
    its own rules, differentiable once more), so the gradient differentiates again: the
    second derivative in ``a`` is exact (a third raises, as for ``gammainc``). Computed in
    float64 and returned in the sample's dtype.
    """
    dt = np.dtype(fnp.result_type(sample))
    a64 = fnp.astype(a, np.float64)
    x = fnp.astype(sample, np.float64)
    if log_space:
        x = fnp.exp(x)
    x = fnp.maximum(x, float(np.finfo(dt).tiny))
    log_density = (a64 - 1) * fnp.log(x) - x - gammaln(a64)
    grad = -_gammainc_da(a64, x) / fnp.exp(log_density)
    if log_space:
        grad = grad / x
    return fnp.astype(grad, dt)


def _gamma_vjp(g: Any, ans: Any, keys: Any, a: Any, log_space: bool = False) -> Any:
    from ..numpy._util import unbroadcast

    return unbroadcast(g * _implicit_gradient(a, ans, log_space=log_space), a)


def _gamma_jvp(t: Any, ans: Any, keys: Any, a: Any, log_space: bool = False) -> Any:
    return t * _implicit_gradient(a, ans, log_space=log_space)


def _gamma_batch(fn: Any) -> Any:
    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
        size = batch_size(args, dims)
        keys, a = (front(x, d, size) for x, d in zip(args, dims))
        return fn(keys, a, **kwargs), 0

    return rule


_gamma_p = defprimitive(
    _gamma_raw, name="random_gamma",
    vjp={1: _gamma_vjp}, jvp={1: _gamma_jvp}, reads={1: {1, "ans"}},
    batch_from=_gamma_batch,
    doc="JAX's gamma sampler (keys ``(..., 2)``, shapes ``(..., *s)``), with implicit gradients in ``a``.",
)


def _gamma(name: str, key: Any, a: Any, shape: Any, dtype: Any, log_space: bool) -> Any:
    key = check_key(name, key)
    dt = float_dtype(name, dtype)
    if shape is None:
        shape = param_shape(a)
    else:
        shape = canonical_shape(shape, name)
        check_shape("gamma", shape, param_shape(a))
    a = _as(a, dt)
    if not isinstance(a, Box) and bool((a <= 0).any()):
        raise ValueError(f"{name}: the shape parameter a must be positive, got {a}")
    if param_shape(a) != tuple(shape):
        a = fnp.broadcast_to(a, shape)
    return _gamma_p(key, a, log_space=log_space)


def gamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Gamma(a, 1) samples; differentiable in ``a`` (implicit reparameterization).

    Example::

        fg.random.gamma(key, np.array([0.5, 2.0]))
    """
    return _gamma("gamma", key, a, shape, dtype, False)


def loggamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Any:
    """``log`` of Gamma(a, 1) samples, accurate for small ``a``; differentiable in ``a``.

    Example::

        fg.random.loggamma(key, 0.01, (3,))
    """
    return _gamma("loggamma", key, a, shape, dtype, True)


def beta(key: Any, a: Any, b: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Beta(a, b) samples (two log-gammas); differentiable in ``a`` and ``b``.

    Example::

        fg.random.beta(key, 2.0, 3.0, (4,))
    """
    key = check_key("beta", key)
    dt = float_dtype("beta", dtype)
    if shape is None:
        shape = np.broadcast_shapes(param_shape(a), param_shape(b))
    else:
        shape = canonical_shape(shape, "beta")
        check_shape("beta", shape, param_shape(a), param_shape(b))
    key_a, key_b = split(key)
    a = fnp.broadcast_to(_as(a, dt), shape)
    b = fnp.broadcast_to(_as(b, dt), shape)
    log_a = loggamma(key_a, a, shape, dt)
    log_b = loggamma(key_b, b, shape, dt)
    log_max = fnp.maximum(log_a, log_b)
    ga = fnp.exp(log_a - log_max)
    gb = fnp.exp(log_b - log_max)
    return ga / (ga + gb)


def dirichlet(key: Any, alpha: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Dirichlet(alpha) samples over the last axis; differentiable in ``alpha``.

    Example::

        fg.random.dirichlet(key, np.array([1.0, 2.0, 3.0]), (5,))
    """
    key = check_key("dirichlet", key)
    dt = float_dtype("dirichlet", dtype)
    ashape = param_shape(alpha)
    if len(ashape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(ashape)}")
    if shape is None:
        shape = ashape[:-1]
    else:
        shape = canonical_shape(shape, "dirichlet")
        check_shape("dirichlet", shape, ashape[:-1])
    alpha = _as(alpha, dt)
    logs = loggamma(key, alpha, tuple(shape) + tuple(ashape[-1:]), dt)
    shifted = logs - fnp.max(logs, axis=-1, keepdims=True)
    e = fnp.exp(shifted)
    return e / fnp.sum(e, axis=-1, keepdims=True)


def t(key: Any, df: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Student's t samples with ``df`` degrees of freedom (normal / sqrt(gamma)); differentiable in ``df``.

    Example::

        fg.random.t(key, 3.0, (4,))
    """
    key = check_key("t", key)
    dt = float_dtype("t", dtype)
    if shape is None:
        shape = param_shape(df)
    else:
        shape = canonical_shape(shape, "t")
        check_shape("t", shape, param_shape(df))
    df = _as(df, dt)
    key_n, key_g = split(key)
    n = _normal_real(key_n, tuple(shape), dt)
    half_df = df / dt.type(2)
    g = gamma(key_g, half_df, shape, dt)
    return n * fnp.sqrt(half_df / g)


def chisquare(key: Any, df: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Chi-square samples (``2 * gamma(df / 2)``); differentiable in ``df``. Example: ``fg.random.chisquare(key, 3.0, (2,))``."""
    key = check_key("chisquare", key)
    dt = float_dtype("chisquare", dtype)
    if shape is None:
        shape = param_shape(df)
    else:
        shape = canonical_shape(shape, "chisquare")
        check_shape("chisquare", shape, param_shape(df))
    df = _as(df, dt)
    half_df = df / dt.type(2)
    log_g = loggamma(key, half_df, shape, dt)
    return dt.type(2) * xla_math.exp(log_g)  # XLA's exp: the loggamma draws are JAX's to an ulp


def generalized_normal(key: Any, p: float, shape: Any = (), dtype: Any = None) -> Any:
    """Generalized normal samples, density proportional to ``exp(-|x|**p)``. Example: ``fg.random.generalized_normal(key, 1.5, (3,))``."""
    key = check_key("generalized_normal", key)
    dt = float_dtype("generalized_normal", dtype)
    shape = canonical_shape(shape, "generalized_normal")
    keys = split(key)
    g = gamma(keys[0], 1 / p, shape, dt)
    r = rademacher(keys[1], shape, dt)
    return r * g ** (1 / p)


def ball(key: Any, d: int, p: float = 2, shape: Any = (), dtype: Any = None) -> Any:
    """Points uniform in the unit ``p``-norm ball of dimension ``d``: shape ``(*shape, d)``.

    Example::

        fg.random.ball(key, 3, shape=(10,))
    """
    key = check_key("ball", key)
    dt = float_dtype("ball", dtype)
    shape = canonical_shape(shape, "ball")
    d = int(d)
    if d < 1:
        raise ValueError(f"ball: the dimension d must be a positive integer, got {d}")
    k1, k2 = split(key)
    g = generalized_normal(k1, p, tuple(shape) + (d,), dt)
    e = exponential(k2, shape, dt)
    return g / (((fnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]
