"""Samplers that transform the basic draws: pareto, f, maxwell, double_sided_maxwell,
weibull_min, rayleigh, wald, geometric, triangular, lognormal (JAX's formulas).

They are compositions of funcgrad.numpy operations over ``uniform``,
``normal``, ``exponential``, ``chisquare`` and ``rademacher``, so they batch,
stage and differentiate in their parameters like those.

Example::

    fg.random.lognormal(key, 0.5, (3,))
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from .continuous import _as, _normal_real, _uniform, check_shape, exponential, float_dtype, param_shape
from .discrete import rademacher
from .floats import log1p
from .gamma_family import chisquare
from . import xla_math
from .threefry import canonical_shape, check_key, split

__all__ = ["pareto", "f", "maxwell", "double_sided_maxwell", "weibull_min", "rayleigh", "wald", "geometric",
           "triangular", "lognormal"]


def _shape_of(name: str, shape: Any, *params: Any) -> tuple[int, ...]:
    """JAX's ``_check_broadcast_shapes``: the parameters' broadcast shape, or ``shape`` checked."""
    shapes = [param_shape(p) for p in params]
    if shape is None:
        return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    checked = canonical_shape(shape, name)
    check_shape(name, checked, *shapes)
    return checked


def pareto(key: Any, b: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Pareto samples with shape ``b``: ``exp(exponential / b)``. Example: ``fg.random.pareto(key, 3.0, (2,))``."""
    key = check_key("pareto", key)
    dt = float_dtype("pareto", dtype)
    shape = _shape_of("pareto", shape, b)
    return fnp.exp(exponential(key, shape, dt) / _as(b, dt))


def f(key: Any, dfnum: Any, dfden: Any, shape: Any = None, dtype: Any = None) -> Any:
    """F-distribution samples (ratio of scaled chi-squares). Example: ``fg.random.f(key, 2.0, 5.0, (3,))``."""
    key = check_key("f", key)
    dt = float_dtype("f", dtype)
    shape = _shape_of("f", shape, dfnum, dfden)
    dfnum, dfden = _as(dfnum, dt), _as(dfden, dt)
    key_dfd, key_dfn = split(key)
    num = chisquare(key_dfn, dfnum, shape, dt) / dfnum
    den = chisquare(key_dfd, dfden, shape, dt) / dfden
    return num / den


def maxwell(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Maxwell samples: the norm of a 3-d standard normal. Example: ``fg.random.maxwell(key, (2,))``."""
    key = check_key("maxwell", key)
    dt = float_dtype("maxwell", dtype)
    z = _normal_real(key, canonical_shape(shape, "maxwell") + (3,), dt, exact=True)
    return fnp.sqrt(fnp.sum(z * z, axis=-1))


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Double-sided Maxwell samples (a random sign times a Maxwell sample, scaled and shifted).

    As JAX, the result shape is ``shape + broadcast(loc, scale)``.

    Example::

        fg.random.double_sided_maxwell(key, 0.0, 1.0, (3,))
    """
    key = check_key("double_sided_maxwell", key)
    dt = float_dtype("double_sided_maxwell", dtype)
    params = tuple(np.broadcast_shapes(param_shape(loc), param_shape(scale)))
    shape = canonical_shape(shape, "double_sided_maxwell") or params
    shape = tuple(shape) + params
    maxwell_key, sign_key = split(key)
    return rademacher(sign_key, shape, dt) * maxwell(maxwell_key, shape, dt) * scale + loc


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Weibull samples: ``(-log1p(-u)) ** (1 / concentration) * scale``. Example: ``fg.random.weibull_min(key, 1.0, 2.0, (3,))``."""
    key = check_key("weibull_min", key)
    dt = float_dtype("weibull_min", dtype)
    u = _uniform(key, canonical_shape(shape, "weibull_min"), dt, 0.0, 1.0)
    return fnp.power(-log1p(-u), 1.0 / _as(concentration, dt)) * scale


def rayleigh(key: Any, scale: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Rayleigh samples: ``scale * sqrt(-2 log u)``. Example: ``fg.random.rayleigh(key, 2.0, (3,))``."""
    key = check_key("rayleigh", key)
    dt = float_dtype("rayleigh", dtype)
    shape = _shape_of("rayleigh", shape, scale)
    u = _uniform(key, shape, dt, 0.0, 1.0)
    return fnp.broadcast_to(_as(scale, dt), shape) * fnp.sqrt(fnp.log(u) * dt.type(-2))


def wald(key: Any, mean: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian) samples with the given mean. Example: ``fg.random.wald(key, 1.5, (3,))``."""
    key = check_key("wald", key)
    dt = float_dtype("wald", dtype)
    shape = _shape_of("wald", shape, mean)
    k1, k2 = split(key)
    mean = fnp.broadcast_to(_as(mean, dt), shape)
    v = _normal_real(k1, shape, dt, exact=True)
    z = _uniform(k2, shape, dt, 0.0, 1.0)
    y = v * v
    mean_sq = mean * mean
    root = fnp.sqrt(4 * mean * y + mean_sq * (y * y))
    x = mean + mean_sq * y / 2 - mean / 2 * root
    return fnp.where(z <= mean / (mean + x), x, mean_sq / x)


def geometric(key: Any, p: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Geometric samples (trials to the first success, from 1); default dtype int64.

    Example::

        fg.random.geometric(key, 0.3, (5,))
    """
    key = check_key("geometric", key)
    dt = np.dtype(np.int64 if dtype is None else dtype)
    if dt.kind not in "iu":
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dt}")
    shape = _shape_of("geometric", shape, p)
    pdt = np.dtype(fnp.result_type(p))
    if pdt.kind != "f":
        pdt = np.dtype(np.float64)
    u = _uniform(key, shape, pdt, 0.0, 1.0)
    u = fnp.where(u == 0, pdt.type(1), u)
    g = fnp.floor(fnp.log(u) / fnp.broadcast_to(log1p(-_as(p, pdt)), shape)) + 1
    return fnp.astype(g, dt)


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Triangular samples on ``[left, right]`` peaking at ``mode``. Example: ``fg.random.triangular(key, 0.0, 0.3, 1.0, (3,))``."""
    key = check_key("triangular", key)
    dt = float_dtype("triangular", dtype)
    shape = _shape_of("triangular", shape, left, mode, right)
    left, mode, right = (fnp.broadcast_to(_as(v, dt), shape) for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = _uniform(key, shape, dt, 0.0, 1.0)
    low = left + fnp.sqrt(u * (right - left) * (mode - left))
    high = right - fnp.sqrt((1 - u) * (right - left) * (right - mode))
    return fnp.where(u < fc, low, high)


def lognormal(key: Any, sigma: Any = 1.0, shape: Any = None, dtype: Any = None) -> Any:
    """Log-normal samples: ``exp(sigma * normal)`` (float32: XLA's ``exp``, as JAX's).
    Example: ``fg.random.lognormal(key, 0.5, (3,))``."""
    key = check_key("lognormal", key)
    dt = float_dtype("lognormal", dtype)
    shape = _shape_of("lognormal", shape, sigma)
    if dt == np.float32:  # exp turns an ulp of the normal into |x| ulp: XLA's arithmetic throughout
        return xla_math.exp(_normal_real(key, shape, dt, exact=True, scale=_as(sigma, dt)))
    return fnp.exp(_normal_real(key, shape, dt) * _as(sigma, dt))
