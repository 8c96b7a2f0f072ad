"""Standardization over a set of axes as one primitive, with the fused closed-form rules.

``standardize(x, axes, eps) = (x - mean) / sqrt(var + eps)`` (biased variance,
statistics over ``axes``) is the core of batch, layer, group and instance
normalization; the layers add their per-feature scale and shift. Its derivative
is self-adjoint: with ``xhat`` the result and ``rstd = 1 / sqrt(var + eps)``,

    VJP(g) = JVP(g) = rstd * (g - mean(g) - xhat * mean(g * xhat))

(means over ``axes``): the backward's reductions in one expression instead of
the graph of a dozen primitives the composition records. The rule is written
with funcgrad.numpy operations on ``x`` (and ``standardize`` itself), so it
differentiates again (double backward through a normalization layer works).

Example::

    xhat = standardize(x, (0, 2, 3), 1e-5)     # batch norm's statistics of (N, C, H, W)
"""

from __future__ import annotations

from typing import Any, Callable

import funcgrad.numpy as fnp

from ...backend import namespace_of
from ...core import defprimitive
from ...numpy._batching import move_to_front

__all__ = ["standardize"]


def _standardize_raw(x: Any, axes: tuple[int, ...], eps: float) -> Any:
    xp = namespace_of(x)
    mean = xp.mean(x, axis=axes, keepdims=True)
    xc = x - mean
    var = xp.mean(xp.square(xc), axis=axes, keepdims=True)
    xc *= (1.0 / xp.sqrt(var + eps)).astype(x.dtype, copy=False)
    return xc


def _tangent(v: Any, x: Any, axes: tuple[int, ...], eps: float) -> Any:
    """``rstd * (v - mean(v) - xhat * mean(v * xhat))``: the VJP and the JVP alike.

    Reads ``x`` only (not the result, which a following in-place op may overwrite, as in PyTorch)."""
    xhat = standardize(x, axes, eps)
    rstd = 1.0 / fnp.sqrt(fnp.var(x, axis=axes, keepdims=True) + eps)
    return rstd * (v - fnp.mean(v, axis=axes, keepdims=True) - xhat * fnp.mean(v * xhat, axis=axes, keepdims=True))


def _batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    x, axes, eps = args
    nd = fnp.ndim(x) - 1
    shifted = tuple((a % nd) + 1 for a in axes)
    return standardize(move_to_front(x, dims[0]), shifted, eps), 0


standardize: Callable[..., Any] = defprimitive(
    _standardize_raw, name="standardize",
    vjp=lambda g, ans, x, axes, eps: _tangent(g, x, axes, eps),
    jvp=lambda t, ans, x, axes, eps: _tangent(t, x, axes, eps),
    batch=_batch, reads={0: {0}},
    doc="``(x - mean) / sqrt(var + eps)`` with statistics over ``axes`` (biased variance), one primitive.")
