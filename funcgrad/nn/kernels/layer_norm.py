"""Layer norm over the last axis with its scale and shift, as one primitive with a fused backward.

``layer_norm_affine(x, w, b, eps) = xhat * w + b`` with ``xhat = (x - mean) * rstd``,
``rstd = 1 / sqrt(var + eps)`` (biased variance over the last axis; ``w``, ``b``: ``(d,)``).
The layer records one node instead of three (``standardize``, a product, a sum), and its
backward is one primitive (``layer_norm_affine_backward``) that forms ``xhat`` from ``x``
(with the forward's row statistics where the forward of this very ``x`` just ran, else
finding them again) and the three cotangents from two matrix-vector products:

    dx = rstd * (g w - (g @ w) / d - xhat ((g xhat) @ w) / d)
    dw = sum(g xhat) over the leading axes,    db = sum(g) over the leading axes

(``(g @ w) / d`` is ``mean(g w)`` over the last axis). The JVP and the derivatives of the
backward are written with funcgrad.numpy operations (``standardize``,
``standardize_tangent``), so everything differentiates again.

Example::

    y = layer_norm_affine(x, w, b, 1e-5)       # x: (8, 32, 64), w, b: (64,)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import funcgrad.numpy as fnp

from ...backend import namespace_of
from ...core import defprimitive
from ...numpy._batching import _aligned, batch_size, front, move_to_front
from .composed import composed_rules
from .forward_memo import ForwardMemo
from .normalization import standardize, standardize_tangent

__all__ = ["layer_norm_affine", "layer_norm_affine_backward", "layer_norm_affine_composed",
           "layer_norm_affine_backward_composed"]


def _normalized(x: Any, eps: float) -> tuple[Any, Any, Any]:
    """``(xhat, mean, rstd)`` over the last axis, on the raw array."""
    xp = namespace_of(x)
    inv_d = xp.full(x.shape[-1], 1.0 / x.shape[-1], dtype=x.dtype)  # means as matrix-vector products (faster
    mean = xp.matmul(x, inv_d)[..., None]                           # than NumPy's reductions along short rows)
    xc = x - mean
    rstd = 1.0 / xp.sqrt(xp.matmul(xc * xc, inv_d)[..., None] + eps)
    xc *= rstd
    return xc, mean, rstd


class _StatisticsMemo(ForwardMemo):
    """The per-row ``(mean, rstd)`` a forward computed, for the backward of the very same ``x``
    (:class:`~funcgrad.nn.kernels.forward_memo.ForwardMemo`): the backward forms ``xhat`` in two passes
    instead of finding the statistics again."""


_saved_statistics = _StatisticsMemo()


def _leading_sums(a: Any) -> Any:
    """``a`` summed over every axis but the last: one product with a vector of ones (a third of the time of
    ``sum`` over the leading axes of the short rows of a layer)."""
    xp = namespace_of(a)
    rows = a.reshape(-1, a.shape[-1])
    return xp.matmul(xp.ones(rows.shape[0], dtype=a.dtype), rows)


def _forward_raw(x: Any, w: Any, b: Any, eps: float) -> Any:
    y, mean, rstd = _normalized(x, eps)
    _saved_statistics.put((x,), (eps,), (mean, rstd))
    y *= w
    y += b
    return y


def _backward_raw(g: Any, x: Any, w: Any, eps: float) -> tuple[Any, Any, Any]:
    xp = namespace_of(x)
    saved = _saved_statistics.take((x,), (eps,))
    if saved is None:
        xhat, _, rstd = _normalized(x, eps)
    else:  # the forward's statistics
        mean, rstd = saved
        xhat = x - mean
        xhat *= rstd
    gx = g * xhat
    dw, db = _leading_sums(gx), _leading_sums(g)
    inv_d = 1.0 / x.shape[-1]
    mean_gw = xp.matmul(g, w)[..., None]  # mean(g w) * d
    mean_gxw = xp.matmul(gx, w)[..., None]  # mean(g xhat w) * d
    mean_gw *= inv_d
    mean_gxw *= inv_d
    dx = g * w
    dx -= mean_gw
    xhat *= mean_gxw
    dx -= xhat
    dx *= rstd
    return dx, dw, db


def layer_norm_affine_composed(x: Any, w: Any, b: Any, eps: float) -> Any:
    """``standardize(x) * w + b`` over the last axis in funcgrad.numpy operations (the reference)."""
    return standardize(x, (fnp.ndim(x) - 1,), eps) * w + b


def layer_norm_affine_backward_composed(g: Any, x: Any, w: Any, eps: float) -> tuple[Any, Any, Any]:
    """``(dx, dw, db)`` of :func:`layer_norm_affine` for the cotangent ``g``, in funcgrad.numpy operations."""
    nd = fnp.ndim(x)
    lead = tuple(range(nd - 1))
    xhat = standardize(x, (nd - 1,), eps)
    return standardize_tangent(g * w, x, (nd - 1,), eps), fnp.sum(g * xhat, axis=lead), fnp.sum(g, axis=lead)


def _backward_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, tuple[int, ...]]:
    g, x, w, eps = args
    size = batch_size(args[:3], dims[:3])
    gb, xb = front(g, dims[0], size), front(x, dims[1], size)
    nd = fnp.ndim(xb)
    wb = w if dims[2] is None else fnp.reshape(move_to_front(w, dims[2]), (size,) + (1,) * (nd - 2) + (fnp.shape(w)[-1],))
    lead = tuple(range(1, nd - 1))  # per example: its own leading axes, not the batch's
    xhat = standardize(xb, (nd - 1,), eps)
    out = (standardize_tangent(gb * wb, xb, (nd - 1,), eps), fnp.sum(gb * xhat, axis=lead), fnp.sum(gb, axis=lead))
    return out, (0, 0, 0)


_bwd_vjp, _bwd_jvp = composed_rules(layer_norm_affine_backward_composed)
layer_norm_affine_backward: Callable[..., Any] = defprimitive(
    _backward_raw, name="layer_norm_affine_backward", vjp_all=_bwd_vjp, jvp_all=_bwd_jvp, batch=_backward_batch,
    multiple_results=True,
    doc="``(dx, dw, db)`` of :func:`layer_norm_affine` at ``x``, ``w`` for the cotangent ``g``, one pass.")


def _vjp_all(g: Any, ans: Any, argnums: Sequence[int], x: Any, w: Any, b: Any, eps: float) -> list[Any]:
    cts = layer_norm_affine_backward(g, x, w, eps)
    return [cts[a] for a in argnums]


def _jvp_all(tangents: list[Any], ans: Any, x: Any, w: Any, b: Any, eps: float) -> Any:
    tx, tw, tb = (tangents + [None] * 3)[:3]
    axes = (fnp.ndim(x) - 1,)
    out = None if tx is None else standardize_tangent(tx, x, axes, eps) * w
    if tw is not None:
        part = standardize(x, axes, eps) * tw
        out = part if out is None else out + part
    if tb is not None:
        out = fnp.broadcast_to(tb, fnp.shape(ans)) if out is None else out + tb
    return out


def _batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    x, w, b, eps = args
    if dims[1] is None and dims[2] is None:  # the common case: only x is batched
        return layer_norm_affine(move_to_front(x, dims[0]), w, b, eps), 0
    xa, wa, ba = _aligned([x, w, b], dims[:3])
    if dims[0] is None:
        xa = fnp.broadcast_to(xa, (batch_size(args[:3], dims[:3]),) + tuple(fnp.shape(xa)))
    return layer_norm_affine_composed(xa, wa, ba, eps), 0


layer_norm_affine: Callable[..., Any] = defprimitive(
    _forward_raw, name="layer_norm_affine", vjp_all=_vjp_all, jvp_all=_jvp_all, batch=_batch,
    reads={0: {0, 1}, 1: {0, 1}, 2: {0, 1}},
    doc="``standardize(x) * w + b`` over the last axis (``w``, ``b``: ``(d,)``), one primitive.")
