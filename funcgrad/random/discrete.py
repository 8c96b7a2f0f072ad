"""Integer and boolean samplers, shuffles and choices: JAX's algorithms, bit for bit.

``randint`` draws twice the bits it needs and reduces them modulo the span
(JAX's slightly biased but branch-free method); ``permutation`` sorts by
random 32-bit keys (stably, ``ceil(3 ln n / ln(2**32 - 1))`` rounds);
``choice`` and ``categorical`` use cumulative sums and the Gumbel trick.
``poisson`` runs JAX's Knuth (``lam < 10``) and transformed-rejection loops,
vectorised over the whole array.

Example::

    fg.random.randint(key, (3,), 0, 10)
    fg.random.permutation(key, 5)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import Box, defprimitive
from ..numpy._batching import elementwise_rule
from .continuous import _gumbel, _uniform, check_shape, param_shape
from .floats import fma, unit_floats, xla_log1p
from .threefry import _bits_raw, _split_raw, canonical_shape, check_key, random_bits, split

__all__ = ["randint", "bernoulli", "rademacher", "permutation", "choice", "categorical", "poisson"]

_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _rem(xp: Any, a: Any, span: Any) -> Any:
    """XLA's unsigned remainder: ``a % 0 == a``."""
    zero = span == 0
    return xp.where(zero, a, a % xp.where(zero, span.dtype.type(1), span))


def _randint_raw(high: Any, low: Any, minval: Any, maxval: Any, dtype: Any = np.int64) -> Any:
    xp = namespace_of(high, low, minval, maxval)
    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    nbits = info.bits
    udt = np.dtype(_UNSIGNED[nbits])
    minval = xp.asarray(minval)
    maxval = xp.asarray(maxval)
    if minval.dtype.kind not in "iu":
        minval = minval.astype(xp.int64)
    if maxval.dtype.kind not in "iu":
        maxval = maxval.astype(xp.int64)
    big = xp.int64 if maxval.dtype != np.uint64 else xp.uint64
    out_of_range = maxval.astype(big) > min(info.max, np.iinfo(maxval.dtype).max)
    lo = xp.clip(minval, max(info.min, np.iinfo(minval.dtype).min), min(info.max, np.iinfo(minval.dtype).max)).astype(dt)
    hi = xp.clip(maxval, max(info.min, np.iinfo(maxval.dtype).min), min(info.max, np.iinfo(maxval.dtype).max)).astype(dt)
    shape = np.broadcast_shapes(tuple(high.shape), tuple(lo.shape), tuple(hi.shape))
    lo = xp.broadcast_to(lo, shape).reshape(-1)
    hi = xp.broadcast_to(hi, shape).reshape(-1)
    out_of_range = xp.broadcast_to(out_of_range, shape).reshape(-1)
    span = (hi.view(udt) - lo.view(udt)).astype(udt) if dt.kind == "i" else (hi - lo)
    empty = hi <= lo
    span = xp.where(empty, udt.type(1), span)
    span = xp.where(out_of_range & ~empty, span + udt.type(1), span)
    mult = _rem(xp, xp.full(span.shape, udt.type(2 ** (nbits // 2)), dtype=udt), span)
    mult = _rem(xp, mult * mult, span)
    high = xp.broadcast_to(high, shape).reshape(-1)
    low = xp.broadcast_to(low, shape).reshape(-1)
    offset = _rem(xp, high, span) * mult + _rem(xp, low, span)
    offset = _rem(xp, offset, span)
    out = (lo.view(udt) + offset).view(dt) if dt.kind == "i" else lo + offset
    return out.reshape(shape)


_randint_p = defprimitive(_randint_raw, name="random_randint_from_bits", differentiable=False,
                          batch_from=elementwise_rule,
                          doc="JAX's reduction of two words of bits to integers in ``[minval, maxval)``.")


def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers uniform in ``[minval, maxval)`` (JAX's stream; default dtype int64).

    ``maxval <= minval`` gives ``minval`` (JAX's rule); bounds beyond the dtype
    are clipped to it, and ``maxval`` one past the dtype's maximum reaches it.

    Example::

        fg.random.randint(key, (5,), 0, 10)
    """
    key = check_key("randint", key)
    dt = np.dtype(np.int64 if dtype is None else dtype)
    if dt.kind not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    shape = canonical_shape(shape, "randint")
    check_shape("randint", shape, param_shape(minval), param_shape(maxval))
    for name, bound in (("minval", minval), ("maxval", maxval)):
        if not isinstance(bound, Box) and np.asarray(bound).dtype.kind not in "iufb":
            raise TypeError(f"randint: {name} must be an integer, got {bound!r}")
    sample_dt = dt
    if dt.itemsize < 4:
        # JAX samples in int32 (less bias) and converts.
        info = np.iinfo(dt)
        sample_dt = np.dtype(np.int32)
        minval = fnp.clip(fnp.astype(fnp.asarray(minval), np.int32), int(info.min), int(info.max))
        maxval = fnp.clip(fnp.astype(fnp.asarray(maxval), np.int32), int(info.min), int(info.max) + 1)
    nbits = sample_dt.itemsize * 8
    k1, k2 = split(key)
    high = random_bits(k1, nbits, shape)
    low = random_bits(k2, nbits, shape)
    out = _randint_p(high, low, minval, maxval, dtype=sample_dt)
    return fnp.astype(out, dt) if sample_dt != dt else out


def bernoulli(key: Any, p: Any = 0.5, shape: Any = None, mode: str = "low") -> Any:
    """Booleans that are True with probability ``p`` (``uniform < p``; ``mode="high"`` as JAX).

    Example::

        fg.random.bernoulli(key, 0.3, (10,))
    """
    key = check_key("bernoulli", key)
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    if isinstance(p, Box):
        dt = np.dtype(fnp.result_type(p))
    else:
        p = np.asarray(p) if not isinstance(p, float) else np.asarray(p, dtype=np.float64)
        dt = p.dtype
    if dt.kind != "f":
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    if shape is None:
        shape = param_shape(p)
    else:
        shape = canonical_shape(shape, "bernoulli")
        check_shape("bernoulli", shape, param_shape(p))
    if mode == "high":
        both = _uniform(key, (2,) + tuple(shape), dt, 0.0, 1.0)
        u1, u2 = both[0], both[1] * (2.0 ** -np.finfo(dt).nmant)
        return u2 < p - u1
    return _uniform(key, tuple(shape), dt, 0.0, 1.0) < p


def rademacher(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Uniform on ``{-1, +1}`` (default dtype int64). Example: ``fg.random.rademacher(key, (4,))``."""
    key = check_key("rademacher", key)
    dt = np.dtype(np.int64 if dtype is None else dtype)
    b = bernoulli(key, 0.5, canonical_shape(shape, "rademacher"))
    return fnp.astype(2 * fnp.astype(b, dt) - 1, dt)


def _shuffle(key: Any, x: Any, axis: int) -> Any:
    size = math.prod(param_shape(x))
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        keys = split(key)
        key, sub = keys[0], keys[1]
        sort_keys = random_bits(sub, 32, tuple(param_shape(x)))
        order = fnp.argsort(sort_keys, axis=axis, kind="stable")
        x = fnp.take_along_axis(x, order, axis=axis)
    return x


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` (an int ``x``) or of ``x`` along ``axis``.

    ``independent=True`` shuffles each slice along ``axis`` separately. The
    result differentiates with respect to ``x`` (it is an indexing of ``x``).

    Example::

        fg.random.permutation(key, 5)
        fg.random.permutation(key, np.arange(6).reshape(2, 3), axis=1)
    """
    key = check_key("permutation", key)
    shp = param_shape(x)
    if not shp:
        arr = np.asarray(x) if not isinstance(x, Box) else None
        if arr is None or arr.dtype.kind not in "iu":
            raise TypeError("x must be an integer or at least 1-dimensional")
        return _shuffle(key, np.arange(int(arr)), 0)
    nd = len(shp)
    if not -nd <= axis < nd:
        raise ValueError(f"permutation: axis {axis} is out of bounds for an array of dimension {nd}")
    axis %= nd
    if independent or nd == 1:
        return _shuffle(key, x, axis)
    order = _shuffle(key, np.arange(shp[axis]), 0)
    return fnp.take(x, order, axis=axis)


def choice(key: Any, a: Any, shape: Any = (), replace: bool = True, p: Any = None, axis: int = 0,
           mode: str | None = None) -> Any:
    """A random sample from ``a`` (an array, or ``arange(a)`` for an int), as ``jax.random.choice``.

    Example::

        fg.random.choice(key, 10, (3,), replace=False)
        fg.random.choice(key, np.array([1.0, 2.0, 3.0]), (5,), p=np.array([0.2, 0.3, 0.5]))
    """
    key = check_key("choice", key)
    if isinstance(shape, (int, np.integer)):
        raise TypeError(f"shape argument of fg.random.choice must be a sequence, got {shape}")
    shape = canonical_shape(shape, "choice")
    arr = a if isinstance(a, Box) else np.asarray(a)
    shp = param_shape(arr)
    if not shp:
        if isinstance(arr, Box) or np.asarray(arr).dtype.kind not in "iu":
            raise TypeError(f"choice: a must be an integer or an array, got {a!r}")
        n_inputs = int(arr)
    else:
        if not -len(shp) <= axis < len(shp):
            raise ValueError(f"choice: axis {axis} is out of bounds for an array of dimension {len(shp)}")
        axis %= len(shp)
        n_inputs = shp[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return fnp.zeros(shape, dtype=fnp.result_type(arr))
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) "
                         f"when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if not shp else fnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(key, n_inputs if not shp else arr, axis)
            result = perm[(slice(None),) * axis + (slice(n_draws),)]
    else:
        pdt = np.dtype(fnp.result_type(p))
        if pdt.kind != "f":
            p = fnp.astype(p, np.float64)
            pdt = np.dtype(np.float64)
        if param_shape(p) != (n_inputs,):
            raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]. p has shape "
                             f"{param_shape(p)} and a.shape[axis] is {n_inputs}.")
        if replace:
            cum = fnp.cumsum(p)
            r = cum[-1] * (1 - _uniform(key, shape, pdt, 0.0, 1.0))
            ind = fnp.astype(fnp.searchsorted(cum, r), np.int64)
        else:
            g = _gumbel(key, (n_inputs,), pdt, mode) + fnp.log(p)
            ind = fnp.astype(fnp.argsort(-g, kind="stable")[:n_draws], np.int64)
        result = ind if not shp else fnp.take(arr, ind, axis=axis)
    out_shape = shape if not shp else tuple(shp[:axis]) + shape + tuple(shp[axis + 1:])
    return fnp.reshape(result, out_shape)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None, replace: bool = True,
                mode: str | None = None) -> Any:
    """Category indices drawn with probabilities ``softmax(logits)`` along ``axis`` (Gumbel-max).

    Example::

        fg.random.categorical(key, np.log(np.array([0.2, 0.8])), shape=(10,))
    """
    key = check_key("categorical", key)
    lshape = tuple(param_shape(logits))
    nd = len(lshape)
    if nd == 0:
        raise ValueError("categorical: logits must have at least one dimension")
    if not -nd <= axis < nd:
        raise ValueError(f"categorical: axis {axis} is out of bounds for logits of dimension {nd}")
    dt = np.dtype(fnp.result_type(logits))
    if dt.kind != "f":
        logits = fnp.astype(logits, np.float64)
        dt = np.dtype(np.float64)
    batch_shape = tuple(np.delete(np.array(lshape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = canonical_shape(shape, "categorical")
        check_shape("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        ax = axis - nd if axis >= 0 else axis
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(ax % nd, lshape[ax])
        g = _gumbel(key, tuple(prefix) + tuple(logits_shape), dt, mode)
        expanded = fnp.reshape(logits, (1,) * len(prefix) + lshape)
        return fnp.argmax(g + expanded, axis=ax)
    noisy = logits + _gumbel(key, lshape, dt, mode)
    k = math.prod(prefix)
    if k > lshape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of categories "
                         f"({lshape[axis]}).")
    moved = fnp.moveaxis(noisy, axis, -1)
    top = fnp.argsort(-moved, axis=-1, kind="stable")[..., :k]
    top = fnp.moveaxis(top, -1, 0)
    return fnp.astype(fnp.reshape(top, shape), np.int32)  # JAX's top_k gives int32 indices


# ---------------------------------------------------------------- poisson


def _uniform_f32(keys: Any, shape: tuple[int, ...]) -> Any:
    return unit_floats(_bits_raw(keys, shape, 32), np.float32)


def _poisson_knuth(xp: Any, key: Any, lam: Any, out_dt: np.dtype) -> Any:
    k = xp.zeros(lam.shape, dtype=out_dt)
    log_prod = xp.zeros(lam.shape, dtype=xp.float32)
    while bool((log_prod > -lam).any()):
        keys = _split_raw(key)
        key, sub = keys[0], keys[1]
        k = xp.where(log_prod > -lam, k + 1, k)
        with np.errstate(divide="ignore"):
            log_prod = log_prod + xp.log(_uniform_f32(sub, tuple(lam.shape)))
    return (k - 1).astype(out_dt)


_LANCZOS_G = 7.0
_LANCZOS_BASE = 0.99999999999980993227684700473478
_LANCZOS = (676.520368121885098567009190444019, -1259.13921672240287047156078755283,
            771.3234287776530788486528258894, -176.61502916214059906584551354,
            12.507343278686904814458936853, -0.13857109526572011689554707,
            9.984369578019570859563e-6, 1.50563273514931155834e-7)


def _lgamma_at_least_one(xp: Any, x: Any) -> Any:
    """XLA's Lanczos ``lgamma`` (g = 7, 8 terms) in the dtype of ``x``, for ``x >= 0.5``."""
    dt = np.dtype(x.dtype)
    z = x - dt.type(1)
    a = xp.full(x.shape, dt.type(_LANCZOS_BASE), dtype=dt)
    for i, c in enumerate(_LANCZOS):
        a = a + dt.type(c) / (z + dt.type(i + 1))
    scale = dt.type(_LANCZOS_G + 0.5)
    t = scale + z
    log_t = dt.type(np.log(_LANCZOS_G + 0.5)) + xla_log1p(xp, z / scale)
    r = (z + dt.type(0.5)) - t / log_t
    out = fma(xp, r, log_t, xp.full(x.shape, dt.type((np.log(2) + np.log(np.pi)) / 2), dtype=dt))
    return xp.where(xp.isinf(x), dt.type(np.inf), out + xp.log(a))


def _poisson_rejection(xp: Any, key: Any, lam: Any, out_dt: np.dtype) -> Any:
    f32 = np.float32
    log_lam = xp.log(lam)
    b = f32(0.931) + f32(2.53) * xp.sqrt(lam)
    a = f32(-0.059) + f32(0.02483) * b
    inv_alpha = f32(1.1239) + f32(1.1328) / (b - f32(3.4))
    v_r = f32(0.9277) - f32(3.6224) / (b - f32(2))
    k_out = xp.full(lam.shape, -1, dtype=xp.float32)
    accepted = xp.zeros(lam.shape, dtype=bool)
    while not bool(accepted.all()):
        keys = _split_raw(key, (3,))
        key, k0, k1 = keys[0], keys[1], keys[2]
        u = _uniform_f32(k0, tuple(lam.shape)) - f32(0.5)
        v = _uniform_f32(k1, tuple(lam.shape))
        u_shifted = f32(0.5) - xp.abs(u)
        with np.errstate(divide="ignore", invalid="ignore"):
            k = xp.floor((f32(2) * a / u_shifted + b) * u + lam + f32(0.43))
            s = xp.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
            t = -lam + k * log_lam - _lgamma_at_least_one(xp, xp.maximum(k + 1, f32(1)))
        accept1 = (u_shifted >= f32(0.07)) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < f32(0.013)) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t))
        k_out = xp.where(accept, k, k_out)
        accepted |= accept
    return k_out.astype(out_dt)


def _poisson_raw(key: Any, lam: Any, dtype: Any = np.int64) -> Any:
    xp = namespace_of(key, lam)
    dt = np.dtype(dtype)
    lam = xp.asarray(lam, dtype=xp.float32)
    use_knuth = xp.isnan(lam) | (lam < 10)
    lam_knuth = xp.where(use_knuth, lam, xp.float32(0.0))
    lam_rejection = xp.where(use_knuth, xp.float32(1e5), lam)
    result = xp.where(use_knuth, _poisson_knuth(xp, key, lam_knuth, dt), _poisson_rejection(xp, key, lam_rejection, dt))
    return xp.where(lam == 0, dt.type(0), result)


def _poisson_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    from ..numpy._batching import batch_size, fallback
    from ..core import get_primitive

    return fallback(get_primitive(_poisson_p), list(args), list(dims), batch_size(args, dims), kwargs)


_poisson_p = defprimitive(_poisson_raw, name="random_poisson", differentiable=False, batch=_poisson_batch,
                          doc="JAX's Poisson sampler (Knuth below 10, transformed rejection above).")


def poisson(key: Any, lam: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Poisson samples with rates ``lam`` (JAX's algorithms; default dtype int64).

    Example::

        fg.random.poisson(key, 3.0, (5,))
    """
    key = check_key("poisson", key)
    dt = np.dtype(np.int64 if dtype is None else dtype)
    if dt.kind not in "iu":
        raise TypeError(f"poisson: dtype must be an integer dtype, got {dt}")
    shape = param_shape(lam) if shape is None else canonical_shape(shape, "poisson")
    lam = fnp.broadcast_to(fnp.astype(lam if isinstance(lam, Box) else np.asarray(lam), np.float32), shape)
    if not isinstance(lam, Box) and bool((np.asarray(lam) < 0).any()):
        raise ValueError("poisson: lam must be non-negative")
    return _poisson_p(key, lam, dtype=dt)
