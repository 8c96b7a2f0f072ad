"""Count samplers: ``binomial`` and ``multinomial``, with JAX's algorithms and streams.

``binomial`` follows JAX (which follows TensorFlow): with ``q = min(p, 1 - p)``,
elements with ``n * q <= 10`` count geometric waiting times (inversion), the
others run the transformed-rejection sampler BTRS (Hormann, 1993). Both loops
run over the whole array at once, as JAX's ``while_loop`` does: every round
draws one uniform array (inversion) or two (BTRS) for all elements, from keys
split off the caller's key, until every element is done. So an element's value
depends on how many rounds the slowest element needed, and matching JAX's
numbers means running the same rounds over the same array -- which is what
this module does. The counts are floats (JAX's dtype rule), ``nan`` for
``p`` outside ``[0, 1]`` or ``n`` negative or ``nan``, ``inf`` for ``n = inf``.

``multinomial`` draws the categories one after another: category ``i`` takes
``binomial(remaining n, p_i / sum(p_i:))`` with the ``i``-th of
``split(key, k)``.

Example::

    fg.random.binomial(key, 10.0, 0.3, (5,))
    fg.random.multinomial(key, 20.0, np.array([0.2, 0.3, 0.5]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import Box, defprimitive
from .continuous import check_shape, float_dtype, param_shape
from .floats import _unit_floats_raw
from .threefry import _bits_raw, _split_raw, canonical_shape, check_key, split

__all__ = ["binomial", "multinomial"]

# Stirling's series tail log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2] for k = 0..9.
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _uniform_array(keys: Any, shape: tuple[int, ...], dt: np.dtype) -> Any:
    return _unit_floats_raw(_bits_raw(keys, shape, dt.itemsize * 8), dt)


def _stirling_tail(xp: Any, k: Any) -> Any:
    """The tail of Stirling's series at ``k``: the table below 10, three terms of the series above."""
    dt = np.dtype(k.dtype)
    table = xp.asarray(np.array(_STIRLING_TAIL, dtype=dt))
    small = k <= 9
    k = xp.clip(k, dt.type(0.0), dt.type(9.0))
    kp1sq = (k + 1) * (k + 1)
    series = (dt.type(1.0 / 12) - (dt.type(1.0 / 360) - dt.type(1.0 / 1260) / kp1sq) / kp1sq) / (k + 1)
    with np.errstate(invalid="ignore"):  # nan and inf take the series (their index is never read)
        index = xp.where(small, xp.floor(k), dt.type(0.0)).astype(xp.int32)
    return xp.where(small, table[index], series)


def _inversion(xp: Any, key: Any, count: Any, q: Any) -> Any:
    """Counts of successes as the number of geometric waiting times that fit in ``count`` trials."""
    dt = np.dtype(q.dtype)
    log1m_q = xp.log1p(-q)
    num_geom = xp.zeros(q.shape, dtype=dt)
    geom_sum = xp.zeros(q.shape, dtype=dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        while bool((geom_sum <= count).any()):
            keys = _split_raw(key)
            sub, key = keys[0], keys[1]
            num_geom = xp.where(geom_sum <= count, num_geom + 1, num_geom)
            geom_sum = geom_sum + xp.ceil(xp.log(_uniform_array(sub, tuple(q.shape), dt)) / log1m_q)
    return num_geom - 1


def _btrs(xp: Any, key: Any, count: Any, q: Any) -> Any:
    """Hormann's transformed rejection with squeeze; the last accepted proposal of every round is kept."""
    dt = np.dtype(q.dtype)
    c = dt.type
    stddev = xp.sqrt(count * q * (1 - q))
    b = c(1.15) + c(2.53) * stddev
    a = c(-0.0873) + c(0.0248) * b + c(0.01) * q
    shift = count * q + c(0.5)
    v_r = c(0.92) - c(4.2) / b
    r = q / (1 - q)
    alpha = (c(2.83) + c(5.1) / b) * stddev
    m = xp.floor((count + 1) * q)
    k_out = xp.full(q.shape, -1, dtype=dt)
    accepted = xp.zeros(q.shape, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        while not bool(accepted.all()):
            keys = _split_raw(key, (3,))
            key, k0, k1 = keys[0], keys[1], keys[2]
            u = _uniform_array(k0, tuple(q.shape), dt) - c(0.5)
            v = _uniform_array(k1, tuple(q.shape), dt)
            us = c(0.5) - xp.abs(u)
            accept1 = (us >= c(0.07)) & (v <= v_r)
            k = xp.floor((c(2) * a / us + b) * u + shift)
            reject = (k < 0) | (k > count)
            log_v = xp.log(v * alpha / (a / (us * us) + b))
            bound = ((m + c(0.5)) * xp.log((m + 1) / (r * (count - m + 1)))
                     + (count + 1) * xp.log((count - m + 1) / (count - k + 1))
                     + (k + c(0.5)) * xp.log(r * (count - k + 1) / (k + 1))
                     + _stirling_tail(xp, m) + _stirling_tail(xp, count - m)
                     - _stirling_tail(xp, k) - _stirling_tail(xp, count - k))
            accept = accept1 | (~reject & (log_v <= bound))
            k_out = xp.where(accept, k, k_out)
            accepted |= accept
    return k_out


def _binomial_raw(key: Any, count: Any, prob: Any, dtype: Any = np.float64) -> Any:
    xp = namespace_of(key, count, prob)
    out_dt = np.dtype(dtype)
    prob = xp.asarray(prob)
    dt = np.dtype(prob.dtype)
    count = xp.broadcast_to(xp.asarray(count, dtype=dt), prob.shape)
    p_below_half = prob < 0.5
    q = xp.where(p_below_half, prob, 1 - prob)
    count_nan_or_negative = xp.isnan(count) | (count < 0)
    count_inf = xp.isinf(count)
    q_nan = xp.isnan(q)
    q_negative = q < 0
    q = xp.where(q_nan | q_negative, dt.type(0.01), q)
    with np.errstate(invalid="ignore"):
        use_inversion = count_nan_or_negative | (count * q <= 10)
    count = xp.floor(count)
    inverted = _inversion(xp, key, xp.where(use_inversion, count, dt.type(0.0)), q)
    rejected = _btrs(xp, key, xp.where(use_inversion, dt.type(1e4), count), xp.where(use_inversion, dt.type(0.5), q))
    samples = xp.where(use_inversion, inverted.astype(out_dt), rejected.astype(out_dt))
    invalid = q_negative | q_nan | count_nan_or_negative
    samples = xp.where(invalid, out_dt.type(np.nan), samples)
    samples = xp.where(count_inf & ~invalid, out_dt.type(np.inf), samples)
    keep = p_below_half | count_nan_or_negative | q_nan | count_inf
    with np.errstate(invalid="ignore"):
        return xp.where(keep, samples, count.astype(out_dt) - samples)


def _binomial_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    from ..core import get_primitive
    from ..numpy._batching import batch_size, fallback

    # One draw per batch element: a batched while loop runs each element's own rounds.
    return fallback(get_primitive(_binomial_p), list(args), list(dims), batch_size(args, dims), kwargs)


_binomial_p = defprimitive(_binomial_raw, name="random_binomial", differentiable=False, batch=_binomial_batch,
                           doc="JAX's binomial sampler (inversion for n*q <= 10, BTRS above) over a whole array.")


def _probability_dtype(name: str, *params: Any) -> np.dtype:
    """JAX's promotion of the parameters to an inexact dtype: a float parameter's, else float64."""
    floats = [np.dtype(fnp.result_type(x)) for x in params
              if (isinstance(x, Box) or hasattr(x, "dtype")) and np.dtype(fnp.result_type(x)).kind == "f"]
    for x in params:
        kind = np.dtype(fnp.result_type(x)).kind if (isinstance(x, Box) or hasattr(x, "dtype")) else None
        if kind is not None and kind not in "iufb":
            raise TypeError(f"{name}: n and p must be real numbers, got dtype {fnp.result_type(x)}")
    return np.result_type(*floats) if floats else np.dtype(np.float64)


def binomial(key: Any, n: Any, p: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Counts of successes in ``n`` trials of probability ``p`` (JAX's algorithms and stream).

    ``n`` and ``p`` broadcast to ``shape`` (default: their broadcast shape).
    The result is a float array of ``dtype`` (default float64): ``nan`` where
    ``p`` is outside ``[0, 1]`` or ``n`` is negative or ``nan``, ``inf`` where
    ``n`` is infinite; a fractional ``n`` is floored (NumPy's rule). The
    computation runs in the float dtype of ``p`` (float64 for Python floats).
    Not differentiable (a count has no reparameterization).

    Example::

        fg.random.binomial(key, 10.0, 0.3, (5,))
        fg.random.binomial(key, np.array([5.0, 50.0]), np.float32(0.5))
    """
    key = check_key("binomial", key)
    out_dt = float_dtype("binomial", dtype)
    compute = _probability_dtype("binomial", n, p)
    joint = np.broadcast_shapes(param_shape(n), param_shape(p))
    if shape is None:
        shape = joint
    else:
        shape = canonical_shape(shape, "binomial")
        check_shape("binomial", shape, param_shape(n), param_shape(p))
    prob = fnp.broadcast_to(fnp.astype(p, compute), shape)
    count = fnp.broadcast_to(fnp.astype(n, compute), shape)
    return _binomial_p(key, count, prob, dtype=out_dt)


_EXACT_TAIL_SUMS = 128


def _tail_sums(probs: Any) -> list[Any]:
    """``sum(probs[i:])`` for each ``i``, summed as XLA's windowed cumulative sum does (left to right
    within each window) up to ``_EXACT_TAIL_SUMS`` outcomes; a reversed cumulative sum beyond (the
    quadratic cost would not pay: the ratios may then differ from JAX's in the last bit)."""
    k = param_shape(probs)[0]
    if k > _EXACT_TAIL_SUMS:
        tails = fnp.flip(fnp.cumsum(fnp.flip(probs, 0), axis=0), 0)
        return [tails[i] for i in range(k)]
    out = []
    for i in range(k):
        total = probs[i]
        for j in range(i + 1, k):
            total = total + probs[j]
        out.append(total)
    return out


def multinomial(key: Any, n: Any, p: Any, *, shape: Any = None, dtype: Any = None, unroll: Any = 1) -> Any:
    """Counts of each outcome in ``n`` trials with outcome probabilities ``p`` (last axis).

    JAX's algorithm and stream: category ``i`` draws ``binomial(remaining,
    p_i / sum(p_i:))`` with the ``i``-th key of ``split(key, k)``. ``n``
    broadcasts to ``shape[:-1]`` and ``p`` to ``shape`` (default ``p.shape``;
    as in JAX 0.10's code, ``shape`` includes the outcome axis). ``unroll`` is
    accepted for JAX's signature and has no effect. Float counts of ``dtype``
    (default float64).

    Example::

        fg.random.multinomial(key, 10.0, np.array([0.2, 0.3, 0.5]))      # sums to 10
    """
    del unroll
    key = check_key("multinomial", key)
    out_dt = float_dtype("multinomial", dtype)
    compute = _probability_dtype("multinomial", n, p)
    pshape = param_shape(p)
    if not pshape:
        raise ValueError("multinomial: p must have at least one dimension (the outcomes, last axis)")
    shape = pshape if shape is None else canonical_shape(shape, "multinomial")
    if not shape:
        raise ValueError("multinomial: shape must include the outcome axis (p's last axis)")
    check_shape("multinomial", tuple(shape), pshape)
    check_shape("multinomial", tuple(shape[:-1]), param_shape(n))
    remainder = fnp.broadcast_to(fnp.astype(n, compute), shape[:-1])
    probs = fnp.moveaxis(fnp.broadcast_to(fnp.astype(p, compute), shape), -1, 0)
    keys = split(key, shape[-1])
    counts = []
    for i, remaining in enumerate(_tail_sums(probs)):
        ratio = probs[i] / fnp.where(remaining == 0, fnp.ones_like(remaining), remaining)
        drawn = _binomial_p(keys[i], remainder, fnp.clip(ratio, 0, 1), dtype=compute)
        remainder = remainder - drawn
        counts.append(drawn)
    return fnp.astype(fnp.stack(counts, axis=-1), out_dt)
