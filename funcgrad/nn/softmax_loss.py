"""Softmax cross-entropy as one primitive: ``-sum(t * log_softmax(x), axis)``.

The loss of every classifier step, recorded as one node instead of four (log_softmax,
multiply, sum, negative). Its rules, in funcgrad.numpy operations (so they differentiate
again), with ``p = softmax(x)``:

    d/dx = g * (p * sum(t) - t)          d/dt = -g * log_softmax(x)
    tangent = -sum(t * (tx - sum(p * tx)) + tt * log_softmax(x))

(``sum(t)`` over ``axis`` is 1 for probabilities and one-hot labels; the rule does not assume it.)
Like ``rectifier.py`` it sits beside ``functional.py``, not in ``kernels/`` (whose modules import
``functional``).

Example::

    loss = softmax_cross_entropy(logits, one_hot_targets, -1)    # one value per row
"""

from __future__ import annotations

from typing import Any, Callable

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from ..numpy._batching import batch_size, front
from ..scipy.special import log_softmax, softmax

__all__ = ["softmax_cross_entropy", "softmax_cross_entropy_composed"]


def softmax_cross_entropy_composed(x: Any, t: Any, axis: int) -> Any:
    """``-sum(t * log_softmax(x), axis)`` in funcgrad.numpy operations (the reference)."""
    return -fnp.sum(t * log_softmax(x, axis=axis), axis=axis)


def _raw(x: Any, t: Any, axis: int) -> Any:
    xp = namespace_of(x)
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    shifted -= xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))  # log_softmax, in place
    shifted *= t
    return -xp.sum(shifted, axis=axis)


def _logits_vjp(g: Any, ans: Any, x: Any, t: Any, axis: int) -> Any:
    return fnp.expand_dims(g, axis) * (softmax(x, axis=axis) * fnp.sum(t, axis=axis, keepdims=True) - t)


def _targets_vjp(g: Any, ans: Any, x: Any, t: Any, axis: int) -> Any:
    return -fnp.expand_dims(g, axis) * log_softmax(x, axis=axis)


def _batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    x, t, axis = args
    size = batch_size(args[:2], dims[:2])
    nd = fnp.ndim(x) - (dims[0] is not None)
    return softmax_cross_entropy(front(x, dims[0], size), front(t, dims[1], size), axis % nd + 1), 0


def _logits_jvp(tx: Any, ans: Any, x: Any, t: Any, axis: int) -> Any:
    return -fnp.sum(t * (tx - fnp.sum(softmax(x, axis=axis) * tx, axis=axis, keepdims=True)), axis=axis)


def _targets_jvp(tt: Any, ans: Any, x: Any, t: Any, axis: int) -> Any:
    return -fnp.sum(tt * log_softmax(x, axis=axis), axis=axis)


softmax_cross_entropy: Callable[..., Any] = defprimitive(
    _raw, name="softmax_cross_entropy", vjp=(_logits_vjp, _targets_vjp), jvp=(_logits_jvp, _targets_jvp),
    batch=_batch,
    reads={0: {0, 1}, 1: {0}},
    doc="``-sum(t * log_softmax(x, axis), axis)``: the cross-entropy of logits ``x`` against target "
        "probabilities ``t`` (one-hot labels included) along ``axis``, one primitive.")
