"""Scaled dot-product attention as one primitive with its closed-form derivatives.

``attention(q, k, v, bias, scale) = P v`` with ``P = softmax(scale * q k^T + bias)``
over the last axis (``bias`` broadcasts to ``(..., L, S)``: an additive mask, or
None). The forward is two matrix products and one softmax on the raw arrays;
the backward is one primitive too (``attention_backward``), which takes ``P`` from
the forward of the same arrays where that forward just ran (a memo held by neither
tape nor caller), else recomputes it (one product and a softmax, as flash-attention
backward passes do), and then

    dV = P^T g,   dS = P * (g V^T - rowsum(g V^T * P)),   dQ = scale dS K,
    dK = scale dS^T Q,   dbias = dS (summed over broadcast axes);

the JVP is ``tP v + P tv`` with ``tP = P * (tS - rowsum(P tS))``. The JVP and
the derivatives of ``attention_backward`` are written with funcgrad.numpy
operations, so everything differentiates again.

Example::

    out = attention(q, k, v, None, 1 / math.sqrt(q.shape[-1]))
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import funcgrad.numpy as fnp

from ...backend import namespace_of
from ...core import defprimitive
from ...numpy._batching import _aligned
from ...numpy._util import unbroadcast
from ..functional import softmax
from .composed import composed_rules
from .forward_memo import ForwardMemo

__all__ = ["attention", "attention_backward"]


class _WeightsMemo(ForwardMemo):
    """The attention weights ``P^T`` a forward computed, for the backward of the very same ``q``, ``k``,
    ``bias`` and ``scale`` (:class:`~funcgrad.nn.kernels.forward_memo.ForwardMemo`): the backward skips the
    product and the softmax that would find them again. Weights over 8 MiB are not kept (long sequences:
    the backward recomputes them, as flash-attention backward passes do)."""

    MAX_BYTES = 8 * 2 ** 20


_saved_weights = _WeightsMemo()


def _attention_raw(q: Any, k: Any, v: Any, bias: Any, scale: float) -> Any:
    pt = _weights_transposed_raw(q, k, bias, scale)
    _saved_weights.put((q, k, bias), (scale,), pt)
    return namespace_of(q).matmul(pt.swapaxes(-1, -2), v)


def _weights(q: Any, k: Any, bias: Any, scale: float) -> Any:
    s = fnp.matmul(q, fnp.swapaxes(k, -1, -2)) * scale
    return softmax(s if bias is None else s + bias, axis=-1)


def _weights_transposed_raw(q: Any, k: Any, bias: Any, scale: float) -> Any:
    """``P^T`` ``(..., S, L)``: the softmax over the keys is taken down the columns of ``k q^T``, where
    NumPy's reductions run along contiguous rows (a max along each short row of ``q k^T`` costs several
    times more), and its column sums are one product with a vector of ones."""
    xp = namespace_of(q)
    s = xp.matmul(k, q.swapaxes(-1, -2))
    s *= scale
    if bias is not None:
        s = s + _transposed(bias)
    s -= s.max(axis=-2, keepdims=True)
    p = xp.exp(s, out=s)
    p /= _column_sums(p)
    return p


def _transposed(a: Any) -> Any:
    """``a`` (broadcasting to ``(..., L, S)``) as its transpose, broadcasting to ``(..., S, L)``."""
    if a.ndim < 2:
        a = a.reshape((1,) * (2 - a.ndim) + tuple(a.shape))
    return a.swapaxes(-1, -2)


def _column_sums(a: Any) -> Any:
    """Sums down the columns of the matrices of ``a``, kept as a row ``(..., 1, L)``."""
    ones = namespace_of(a).ones(a.shape[-2], dtype=a.dtype)
    return namespace_of(a).matmul(ones, a)[..., None, :]


def _backward_raw(q: Any, k: Any, v: Any, bias: Any, g: Any, scale: float) -> tuple[Any, Any, Any, Any]:
    xp = namespace_of(q)
    pt = _saved_weights.take((q, k, bias), (scale,))  # P^T, from the forward of these very arrays
    if pt is None:
        pt = _weights_transposed_raw(q, k, bias, scale)
    dv = xp.matmul(pt, g)
    dpt = xp.matmul(v, g.swapaxes(-1, -2))  # (g V^T)^T
    dpt -= _column_sums(dpt * pt)
    dpt *= pt  # dS^T
    dq = xp.matmul(dpt.swapaxes(-1, -2), k)
    dq *= scale
    dk = xp.matmul(dpt, q)
    dk *= scale
    return dq, dk, dv, dpt.swapaxes(-1, -2)


def attention_backward_composed(q: Any, k: Any, v: Any, bias: Any, g: Any, scale: float) -> tuple[Any, ...]:
    """``(dq, dk, dv, dlogits)`` of :func:`attention` for the cotangent ``g``, in funcgrad.numpy operations."""
    p = _weights(q, k, bias, scale)
    dv = fnp.matmul(fnp.swapaxes(p, -1, -2), g)
    dp = fnp.matmul(g, fnp.swapaxes(v, -1, -2))
    ds = p * (dp - fnp.sum(dp * p, axis=-1, keepdims=True))
    return fnp.matmul(ds, k) * scale, fnp.matmul(fnp.swapaxes(ds, -1, -2), q) * scale, dv, ds


def _present_aligned(args: list[Any], dims: list[Any]) -> list[Any]:
    """The array arguments (None stays None) with batch axes first and per-example parts right-aligned."""
    present = [i for i, a in enumerate(args) if a is not None]
    out: list[Any] = [None] * len(args)
    for i, a in zip(present, _aligned([args[i] for i in present], [dims[i] for i in present])):
        out[i] = a
    return out


def _backward_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, tuple[int, ...]]:
    out = attention_backward(*_present_aligned(args[:5], dims[:5]), args[5])
    return out, (0, 0, 0, 0)


_bwd_vjp, _bwd_jvp = composed_rules(attention_backward_composed)
attention_backward: Callable[..., Any] = defprimitive(
    _backward_raw, name="attention_backward", vjp_all=_bwd_vjp, jvp_all=_bwd_jvp, batch=_backward_batch,
    multiple_results=True,
    doc="``(dq, dk, dv, dlogits)`` of :func:`attention` for the cotangent ``g`` (before undoing broadcasting).")


def _vjp_all(g: Any, ans: Any, argnums: Sequence[int], q: Any, k: Any, v: Any, bias: Any, scale: float) -> list[Any]:
    cts = attention_backward(q, k, v, bias, g, scale)
    like = (q, k, v, bias)
    return [unbroadcast(cts[a], like[a]) for a in argnums]


def _jvp_all(tangents: list[Any], ans: Any, q: Any, k: Any, v: Any, bias: Any, scale: float) -> Any:
    tq, tk, tv, tb = (tangents + [None] * 4)[:4]
    p = _weights(q, k, bias, scale)
    out = None
    ts = None
    if tq is not None:
        ts = fnp.matmul(tq, fnp.swapaxes(k, -1, -2)) * scale
    if tk is not None:
        part = fnp.matmul(q, fnp.swapaxes(tk, -1, -2)) * scale
        ts = part if ts is None else ts + part
    if tb is not None:
        ts = tb if ts is None else ts + tb
    if ts is not None:
        tp = p * (ts - fnp.sum(p * ts, axis=-1, keepdims=True))
        out = fnp.matmul(tp, v)
    if tv is not None:
        part = fnp.matmul(p, tv)
        out = part if out is None else out + part
    return out


def _batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    return attention(*_present_aligned(args[:4], dims[:4]), args[4]), 0


attention: Callable[..., Any] = defprimitive(
    _attention_raw, name="attention", vjp_all=_vjp_all, jvp_all=_jvp_all, batch=_batch,
    doc="``softmax(scale * q k^T + bias) v`` over the last axis, one primitive (``bias`` may be None).")
