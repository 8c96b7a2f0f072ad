"""Standardization over a set of axes as one primitive, with the fused closed-form rules.

``standardize(x, axes, eps) = (x - mean) / sqrt(var + eps)`` (biased variance,
statistics over ``axes``) is the core of batch, layer, group and instance
normalization; the layers add their per-feature scale and shift. Its derivative
is self-adjoint: with ``xhat`` the result and ``rstd = 1 / sqrt(var + eps)``,

    VJP(g) = JVP(g) = rstd * (g - mean(g) - xhat * mean(g * xhat))

(means over ``axes``): the backward's reductions in one pass
(``standardize_tangent``, a primitive) instead of the graph of a dozen primitives
the composition records. ``standardize_tangent`` reads ``x`` only and
differentiates again through the same formula in funcgrad.numpy operations
(double backward through a normalization layer works).

Example::

    xhat = standardize(x, (0, 2, 3), 1e-5)     # batch norm's statistics of (N, C, H, W)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np  # the host fast path of _sum_over; arrays go through their own namespace

import funcgrad.numpy as fnp

from ...backend import namespace_of
from ...numpy._util import unbroadcast
from ...core import defprimitive
from ...jit.kinds import declare_fresh_result
from ...numpy._batching import batch_size, front, move_to_front
from .composed import composed_rules
from .forward_memo import ForwardMemo

__all__ = ["standardize", "standardize_tangent", "standardize_affine", "standardize_affine_backward",
           "standardize_affine_statistics"]


def _standardize_raw(x: Any, axes: tuple[int, ...], eps: float) -> Any:
    xp = namespace_of(x)
    mean = xp.mean(x, axis=axes, keepdims=True)
    xc = x - mean
    var = xp.mean(xp.square(xc), axis=axes, keepdims=True)
    xc *= (1.0 / xp.sqrt(var + eps)).astype(x.dtype, copy=False)
    return xc


def standardize_tangent_composed(v: Any, x: Any, axes: tuple[int, ...], eps: float) -> Any:
    """``rstd * (v - mean(v) - xhat * mean(v * xhat))`` in funcgrad.numpy operations: the VJP and JVP alike.

    Reads ``x`` only (not the result, which a following in-place op may overwrite, as in PyTorch)."""
    xhat = standardize(x, axes, eps)
    rstd = 1.0 / fnp.sqrt(fnp.var(x, axis=axes, keepdims=True) + eps)
    return rstd * (v - fnp.mean(v, axis=axes, keepdims=True) - xhat * fnp.mean(v * xhat, axis=axes, keepdims=True))


def _tangent_raw(v: Any, x: Any, axes: tuple[int, ...], eps: float) -> Any:
    xp = namespace_of(x)
    mean = xp.mean(x, axis=axes, keepdims=True)
    xc = x - mean
    rstd = (1.0 / xp.sqrt(xp.mean(xp.square(xc), axis=axes, keepdims=True) + eps)).astype(x.dtype, copy=False)
    xc *= rstd  # xhat
    out = v - xp.mean(v, axis=axes, keepdims=True)
    out -= xc * xp.mean(v * xc, axis=axes, keepdims=True)
    out *= rstd
    return out


def _tangent_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    v, x, axes, eps = args
    size = batch_size(args[:2], dims[:2])
    nd = fnp.ndim(x) - (dims[1] is not None)
    shifted = tuple((a % nd) + 1 for a in axes)
    return standardize_tangent(front(v, dims[0], size), front(x, dims[1], size), shifted, eps), 0


_tangent_vjp, _tangent_jvp = composed_rules(standardize_tangent_composed, multiple_results=False)
standardize_tangent: Callable[..., Any] = defprimitive(
    _tangent_raw, name="standardize_tangent", vjp_all=_tangent_vjp, jvp_all=_tangent_jvp, batch=_tangent_batch,
    doc="The VJP (= JVP) of :func:`standardize` at ``x`` applied to ``v``, one pass; differentiable again.")


def _batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    x, axes, eps = args
    nd = fnp.ndim(x) - 1
    shifted = tuple((a % nd) + 1 for a in axes)
    return standardize(move_to_front(x, dims[0]), shifted, eps), 0


standardize: Callable[..., Any] = defprimitive(
    _standardize_raw, name="standardize",
    vjp=lambda g, ans, x, axes, eps: standardize_tangent(g, x, axes, eps),
    jvp=lambda t, ans, x, axes, eps: standardize_tangent(t, x, axes, eps),
    batch=_batch, reads={0: {0}},
    doc="``(x - mean) / sqrt(var + eps)`` with statistics over ``axes`` (biased variance), one primitive.")


# --------------------------------------------------------------------------- with a per-feature scale and shift


def standardize_affine_composed(x: Any, w: Any, b: Any, axes: tuple[int, ...], eps: float) -> Any:
    """``standardize(x) * w + b`` in funcgrad.numpy operations (the reference of :func:`standardize_affine`)."""
    return standardize(x, axes, eps) * w + b


def standardize_affine_backward_composed(g: Any, x: Any, w: Any, axes: tuple[int, ...], eps: float
                                         ) -> tuple[Any, Any, Any]:
    """Cotangents ``(dx, dw, sum of g over axes)`` of :func:`standardize_affine` in funcgrad.numpy operations
    (the shift's cotangent is the last summed down to the shift's shape)."""
    xhat = standardize(x, axes, eps)
    return (standardize_tangent(g * w, x, axes, eps), unbroadcast(g * xhat, w),
            fnp.sum(g, axis=axes, keepdims=True))


def _sum_to(a: Any, shape: tuple[int, ...]) -> Any:
    """``a`` (already summed over the normalized axes, kept) summed down to a broadcastable ``shape``."""
    extra = a.ndim - len(shape)
    if extra:
        a = a.sum(axis=tuple(range(extra)))
    rest = tuple(i for i, n in enumerate(shape) if n == 1 and a.shape[i] != 1)
    return a.sum(axis=rest, keepdims=True) if rest else a


_vecdot = getattr(np, "vecdot", None)  # NumPy >= 2


def _batch_norm_layout(a: Any, reduced: set[int]) -> bool:
    """Whether ``a`` is a contiguous float32/float64 host array of at least three axes reduced over every axis
    but axis 1: batch norm's layout, which the per-feature sums take as rows of ``(N, C, rest)``."""
    return (isinstance(a, np.ndarray) and a.ndim >= 3 and a.dtype in (np.float32, np.float64)
            and a.flags.c_contiguous and reduced == set(range(a.ndim)) - {1})


def _sum_of_products(a: Any, b: Any, axes: tuple[int, ...]) -> Any:
    """``sum(a * b, axes, keepdims=True)`` in one pass, without the product as a temporary (``einsum``; for
    batch norm's layout on the host, NumPy 2's ``vecdot`` over ``(N, C, rest)`` rows: 0.15 against 0.20 ms at
    (32, 16, 32, 32) float32, 0.07 against 0.11 ms at (32, 32, 16, 16))."""
    xp = namespace_of(a)
    reduced = {ax % a.ndim for ax in axes}
    if (_vecdot is not None and _batch_norm_layout(a, reduced) and _batch_norm_layout(b, reduced)
            and a.shape == b.shape and a.dtype == b.dtype):
        n, c = a.shape[:2]
        total = _vecdot(a.reshape(n, c, -1), b.reshape(n, c, -1)).sum(axis=0)
        return total.reshape((1, c) + (1,) * (a.ndim - 2))
    letters = "abcdefghijklmnopqrstuvwxyz"[:a.ndim]
    kept = "".join(c for i, c in enumerate(letters) if i not in reduced)
    out = xp.einsum(f"{letters},{letters}->{kept}", a, b)
    return out.reshape(tuple(1 if i in reduced else n for i, n in enumerate(a.shape)))


def _sum_over(a: Any, axes: tuple[int, ...]) -> Any:
    """``sum(a, axes, keepdims=True)``; for batch norm's layout (a contiguous host array reduced over every
    axis but axis 1, float32/float64: BLAS) as one matrix-vector product of ``(N, C, rest)`` with ones, about
    twice as fast as the reduction over the strided axes."""
    reduced = {ax % a.ndim for ax in axes} if a.ndim else set()
    if _batch_norm_layout(a, reduced):
        n, c = a.shape[:2]
        rows = a.reshape(n, c, -1)
        total = (rows @ np.ones(rows.shape[-1], dtype=a.dtype)).sum(axis=0)
        return total.reshape((1, c) + (1,) * (a.ndim - 2))
    return namespace_of(a).sum(a, axis=axes, keepdims=True)


def _moments(x: Any, axes: tuple[int, ...]) -> tuple[Any, Any, Any]:
    """``(mean, x - mean, biased variance)`` over ``axes`` (kept), in ``x``'s dtype."""
    count = math.prod(x.shape[a] for a in axes)
    mean = (_sum_over(x, axes) / count).astype(x.dtype, copy=False)
    xc = x - mean
    return mean, xc, _sum_of_products(xc, xc, axes) / count


def _statistics(x: Any, axes: tuple[int, ...], eps: float) -> tuple[Any, Any, Any]:
    """``(mean, x - mean, rstd)`` over ``axes`` (kept), in ``x``'s dtype; kept for the backward of the same
    ``x`` (:data:`_saved_statistics`)."""
    mean, xc, var = _moments(x, axes)
    rstd = _rstd(x, var, axes, eps)
    return mean, xc, rstd


def _rstd(x: Any, var: Any, axes: tuple[int, ...], eps: float) -> Any:
    """``1 / sqrt(var + eps)`` in ``x``'s dtype; with the mean, handed to the backward of this ``x``."""
    return (1.0 / namespace_of(x).sqrt(var + eps)).astype(x.dtype, copy=False)


class _StatisticsMemo(ForwardMemo):
    """The per-feature ``(mean, rstd)`` a forward computed, for the backward of the very same ``x``
    (:class:`~funcgrad.nn.kernels.forward_memo.ForwardMemo`): the backward skips the two passes over ``x``
    that would find them again."""


_saved_statistics = _StatisticsMemo()


def _affine_raw(x: Any, w: Any, b: Any, axes: tuple[int, ...], eps: float) -> Any:
    mean, xc, rstd = _statistics(x, axes, eps)
    _saved_statistics.put((x,), (axes, eps), (mean, rstd))
    xc *= rstd * w  # one pass: the scale folded into the statistics, per feature
    xc += b
    return xc


def _affine_backward_raw(g: Any, x: Any, w: Any, axes: tuple[int, ...], eps: float) -> tuple[Any, Any, Any]:
    xp = namespace_of(x)
    saved = _saved_statistics.take((x,), (axes, eps))
    if saved is None:
        _, xc, rstd = _statistics(x, axes, eps)
    else:  # the forward's statistics: one pass for x - mean instead of three
        mean, rstd = saved
        xc = x - mean
    count = math.prod(x.shape[a] for a in axes)
    g_sum = _sum_over(g, axes)
    gx_sum = _sum_of_products(g, xc, axes) * rstd  # sum(g * xhat), xhat = xc * rstd never formed
    # w is constant along axes: mean(g w) = w mean(g), mean(g w xhat) = w mean(g xhat); so
    # dx = w rstd (g - mean(g) - xhat mean(g xhat)) = scale ((x - mean) rstd (-mean(g xhat)) - mean(g) + g),
    # per feature: four in-place passes over x - mean, which becomes dx (no second full-size array)
    scale = w * rstd
    slope = rstd * (gx_sum / -count)
    shape = tuple(w.shape)
    if tuple(g.shape) == tuple(xc.shape) and xp.result_type(g, xc, scale) == xc.dtype:
        xc *= slope
        xc -= g_sum / count
        xc += g
        xc *= scale
        return xc, _sum_to(gx_sum, shape).astype(w.dtype, copy=False), g_sum
    xc *= scale * slope  # g broadcasts against x, or a wider dtype: dx is a new array
    xc -= scale * (g_sum / count)
    return g * scale + xc, _sum_to(gx_sum, shape).astype(w.dtype, copy=False), g_sum


def _affine_backward_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, Any]:
    g, x, w, axes, eps = args
    size = batch_size(args[:3], dims[:3])
    nd = fnp.ndim(x) - (dims[1] is not None)
    shifted = tuple((a % nd) + 1 for a in axes)
    g, x, w = (front(a, d, size) for a, d in zip((g, x, w), dims[:3]))
    w = _aligned(w, fnp.ndim(x))
    return standardize_affine_backward(g, x, w, shifted, eps), (0, 0, 0)


def _aligned(w: Any, nd: int) -> Any:
    """``w`` with leading unit axes up to ``nd`` dimensions (its batch axis stays first)."""
    s = fnp.shape(w)
    return fnp.reshape(w, (s[0],) + (1,) * (nd - len(s)) + tuple(s[1:])) if len(s) < nd else w


_affine_bwd_vjp, _affine_bwd_jvp = composed_rules(standardize_affine_backward_composed)
standardize_affine_backward: Callable[..., Any] = defprimitive(
    _affine_backward_raw, name="standardize_affine_backward", vjp_all=_affine_bwd_vjp, jvp_all=_affine_bwd_jvp,
    multiple_results=True, batch=_affine_backward_batch,
    doc="Cotangents ``(dx, dw, sum of g over axes)`` of :func:`standardize_affine` for the cotangent ``g``, "
        "one pass; differentiable again.")


def _affine_vjp_all(g: Any, ans: Any, argnums: Sequence[int], x: Any, w: Any, b: Any, axes: tuple[int, ...],
                    eps: float) -> list[Any]:
    dx, dw, db = standardize_affine_backward(g, x, w, axes, eps)
    return [(dx, dw, unbroadcast(db, b))[k] for k in argnums]


def _affine_batched_args(args: list[Any], dims: list[Any]) -> tuple[Any, ...]:
    """``(x, w, b, axes, eps)`` with the batch axis first in each array and ``axes`` shifted past it."""
    x, w, b, axes, eps = args
    size = batch_size(args[:3], dims[:3])
    nd = fnp.ndim(x) - (dims[0] is not None)
    shifted = tuple((a % nd) + 1 for a in axes)
    x, w, b = (front(a, d, size) for a, d in zip((x, w, b), dims[:3]))
    return x, _aligned(w, nd + 1), _aligned(b, nd + 1), shifted, eps


def _affine_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    return standardize_affine(*_affine_batched_args(args, dims)), 0


standardize_affine: Callable[..., Any] = defprimitive(
    _affine_raw, name="standardize_affine", vjp_all=_affine_vjp_all,
    jvp_all=composed_rules(standardize_affine_composed, multiple_results=False)[1], batch=_affine_batch,
    reads={0: {0, 1}, 1: {0, 1}, 2: {0, 1}},
    doc="``standardize(x, axes, eps) * w + b`` as one primitive, for a scale ``w`` and shift ``b`` that are "
        "constant along ``axes`` (batch normalization's per-channel affine); the backward is one pass "
        "(:func:`standardize_affine_backward`).")


# --------------------------------------------------------------------------- with the batch statistics as results


def standardize_affine_statistics_composed(x: Any, w: Any, b: Any, axes: tuple[int, ...], eps: float
                                           ) -> tuple[Any, Any, Any]:
    """``(standardize(x) * w + b, mean, biased variance)`` (statistics over ``axes``, kept) in funcgrad.numpy
    operations: the reference of :func:`standardize_affine_statistics`."""
    return (standardize_affine(x, w, b, axes, eps), fnp.mean(x, axis=axes, keepdims=True),
            fnp.var(x, axis=axes, keepdims=True))


def _affine_statistics_raw(x: Any, w: Any, b: Any, axes: tuple[int, ...], eps: float) -> tuple[Any, Any, Any]:
    mean, xc, var = _moments(x, axes)
    rstd = _rstd(x, var, axes, eps)
    _saved_statistics.put((x,), (axes, eps), (mean, rstd))
    xc *= rstd * w
    xc += b
    return xc, mean, var


def _moments_vjp(g_mean: Any, g_var: Any, x: Any, axes: tuple[int, ...]) -> Any:
    """The cotangent of ``x`` from cotangents of its mean and biased variance over ``axes`` (None: none):
    ``g_mean / n + 2 (x - mean) g_var / n``."""
    count = math.prod(fnp.shape(x)[a] for a in axes)
    out = fnp.zeros_like(x) if g_mean is None else fnp.broadcast_to(g_mean / count, fnp.shape(x))
    if g_var is not None:
        out = out + (x - fnp.mean(x, axis=axes, keepdims=True)) * (g_var * (2.0 / count))
    return out


def _affine_statistics_vjp_all(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], x: Any, w: Any,
                               b: Any, axes: tuple[int, ...], eps: float) -> list[Any]:
    g_y, g_mean, g_var = g
    dx, dw, db = standardize_affine_backward(fnp.zeros_like(x) if g_y is None else g_y, x, w, axes, eps)
    if g_mean is not None or g_var is not None:  # (running statistics take none: they are not differentiated)
        dx = dx + _moments_vjp(g_mean, g_var, x, axes)
    return [(dx, dw, unbroadcast(db, b))[k] for k in argnums]


def _affine_statistics_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, tuple[int, ...]]:
    return standardize_affine_statistics(*_affine_batched_args(args, dims)), (0, 0, 0)


standardize_affine_statistics: Callable[..., Any] = defprimitive(
    _affine_statistics_raw, name="standardize_affine_statistics", vjp_all=_affine_statistics_vjp_all,
    jvp_all=composed_rules(standardize_affine_statistics_composed)[1], batch=_affine_statistics_batch,
    multiple_results=True, reads={0: {0, 1}, 1: {0, 1}, 2: {0, 1}},
    doc="``(standardize(x, axes, eps) * w + b, mean, var)``: :func:`standardize_affine` with the batch "
        "statistics it computes (mean and biased variance over ``axes``, kept) as two more results, so that "
        "batch normalization's running statistics need no second pass over ``x``. Differentiable in all "
        "three results; the backward of the first is :func:`standardize_affine_backward`.")

declare_fresh_result(_affine_raw)  # a new array: fg.jit's replay may write into it once it dies
