"""Scaled dot-product attention as one primitive with its closed-form derivatives.

``attention(q, k, v, bias, scale) = P v`` with ``P = softmax(scale * q k^T + bias)``
over the last axis (``bias`` broadcasts to ``(..., L, S)``: an additive mask, or
None). The forward is two matrix products and one softmax on the raw arrays;
the rules recompute ``P`` (one product and a softmax, as flash-attention
backward passes do) instead of keeping it on the tape, and then

    dV = P^T g,   dS = P * (g V^T - rowsum(g V^T * P)),   dQ = scale dS K,
    dK = scale dS^T Q,   dbias = dS (summed over broadcast axes);

the JVP is ``tP v + P tv`` with ``tP = P * (tS - rowsum(P tS))``. Rules are
written with funcgrad.numpy operations, so they differentiate again.

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

__all__ = ["attention"]


def _attention_raw(q: Any, k: Any, v: Any, bias: Any, scale: float) -> Any:
    xp = namespace_of(q)
    s = xp.matmul(q, k.swapaxes(-1, -2))
    s *= scale
    if bias is not None:
        s = s + bias
    s -= s.max(axis=-1, keepdims=True)
    p = xp.exp(s, out=s)
    p /= p.sum(axis=-1, keepdims=True)
    return xp.matmul(p, v)


def _weights(q: Any, k: Any, bias: Any, scale: float) -> Any:
    s = fnp.matmul(q, fnp.swapaxes(k, -1, -2)) * scale
    return softmax(s if bias is None else s + bias, axis=-1)


def _vjp_all(g: Any, ans: Any, argnums: Sequence[int], q: Any, k: Any, v: Any, bias: Any, scale: float) -> list[Any]:
    p = _weights(q, k, bias, scale)
    out: dict[int, Any] = {}
    if 2 in argnums:
        out[2] = unbroadcast(fnp.matmul(fnp.swapaxes(p, -1, -2), g), v)
    if any(a in argnums for a in (0, 1, 3)):
        dp = fnp.matmul(g, fnp.swapaxes(v, -1, -2))
        ds = p * (dp - fnp.sum(dp * p, axis=-1, keepdims=True))
        if 0 in argnums:
            out[0] = unbroadcast(fnp.matmul(ds, k) * scale, q)
        if 1 in argnums:
            out[1] = unbroadcast(fnp.matmul(fnp.swapaxes(ds, -1, -2), q) * scale, k)
        if 3 in argnums:
            out[3] = unbroadcast(ds, bias)
    return [out[a] for a in argnums]


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
    q, k, v, bias, scale = args
    present = [i for i in range(4) if args[i] is not None]
    aligned = _aligned([args[i] for i in present], [dims[i] for i in present])
    moved: list[Any] = [None] * 4
    for i, a in zip(present, aligned):
        moved[i] = a
    return attention(*moved, scale), 0


attention: Callable[..., Any] = defprimitive(
    _attention_raw, name="attention", vjp_all=_vjp_all, jvp_all=_jvp_all, batch=_batch,
    doc="``softmax(scale * q k^T + bias) v`` over the last axis, one primitive (``bias`` may be None).")
