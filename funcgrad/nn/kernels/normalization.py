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

from typing import Any, Callable

import funcgrad.numpy as fnp

from ...backend import namespace_of
from ...core import defprimitive
from ...numpy._batching import batch_size, front, move_to_front
from .composed import composed_rules

__all__ = ["standardize", "standardize_tangent"]


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
