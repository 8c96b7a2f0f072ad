"""Activations and losses as plain differentiable functions.

All are written with funcgrad.numpy and funcgrad.scipy.special, so they work
under every transform and differentiate to any order. Each is numerically
stable in float32: exponentials are only taken of non-positive numbers
(log-sum-exp shifts, ``log1p(exp(-|x|))``), and a branch that ``where``
discards is never allowed to overflow (its gradient would be ``0 * inf``).

Losses take ``reduction="mean" | "sum" | "none"`` (the mean is over all
examples, i.e. all axes but the class axis where there is one).

Example::

    import funcgrad.nn as nn
    loss = nn.cross_entropy(logits, labels, label_smoothing=0.1)
    p = nn.softmax(logits, axis=-1)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.scipy import special as _special

from ..backend import namespace_of
from .softmax_loss import softmax_cross_entropy
from .rectifier import relu as relu_kernel

__all__ = [
    "relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "swish", "softplus", "sigmoid",
    "log_sigmoid", "tanh", "softmax", "log_softmax", "logsumexp", "one_hot", "cross_entropy",
    "nll_loss", "binary_cross_entropy_with_logits", "mse_loss", "l1_loss", "huber_loss",
]


# --------------------------------------------------------------------------- activations


def relu(x: Any) -> Any:
    """max(x, 0); the derivative at 0 is taken as 0 and a NaN stays NaN (as in PyTorch and JAX).

    Example::

        nn.relu(fnp.array([-1.0, 2.0]))   # [0, 2]
    """
    return relu_kernel(x)


def relu6(x: Any) -> Any:
    """min(max(x, 0), 6). Example: ``nn.relu6(fnp.array([-1.0, 3.0, 9.0]))`` -> [0, 3, 6]."""
    return fnp.where(x > 0, fnp.where(x < 6, x, 6.0), 0.0)


def leaky_relu(x: Any, negative_slope: float = 0.01) -> Any:
    """x for x >= 0, ``negative_slope * x`` otherwise. Example: ``nn.leaky_relu(x, 0.1)``."""
    return fnp.where(x >= 0, x, negative_slope * x)


def elu(x: Any, alpha: float = 1.0) -> Any:
    """x for x > 0, ``alpha * (exp(x) - 1)`` otherwise (no overflow for large x).

    Example::

        nn.elu(fnp.array([-1.0, 1.0]))
    """
    return fnp.where(x > 0, x, alpha * fnp.expm1(fnp.where(x > 0, 0.0, x)))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit ``x * Phi(x)``.

    ``approximate=True`` (the default, as in JAX) uses the tanh formula;
    ``approximate=False`` is exact (``0.5 x (1 + erf(x / sqrt 2))``, PyTorch's
    default; needs SciPy for erf).

    Example::

        nn.gelu(fnp.linspace(-3, 3, 7))
    """
    if approximate:
        return 0.5 * x * (1.0 + fnp.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))))
    return 0.5 * x * (1.0 + _special.erf(x * _INV_SQRT_2))


def sigmoid(x: Any) -> Any:
    """The logistic function ``1 / (1 + exp(-x))``, stable for large ``|x|``.

    Example::

        nn.sigmoid(fnp.array([-100.0, 0.0, 100.0]))   # [0, 0.5, 1]
    """
    return _special.expit(x)


def log_sigmoid(x: Any) -> Any:
    """log(sigmoid(x)) without overflow or underflow: ``-softplus(-x)``. Example: ``nn.log_sigmoid(x)``."""
    return _special.log_expit(x)


def softplus(x: Any) -> Any:
    """log(1 + exp(x)), computed as ``max(x, 0) + log1p(exp(-|x|))``. Example: ``nn.softplus(x)``."""
    return -_special.log_expit(-x)


def silu(x: Any) -> Any:
    """x * sigmoid(x) (a.k.a. swish). Example: ``nn.silu(x)``."""
    return x * _special.expit(x)


swish = silu


def tanh(x: Any) -> Any:
    """Hyperbolic tangent (``funcgrad.numpy.tanh``). Example: ``nn.tanh(x)``."""
    return fnp.tanh(x)


def softmax(x: Any, axis: int | tuple[int, ...] = -1) -> Any:
    """exp(x) / sum(exp(x)) along ``axis`` (default: the last, as in JAX), computed stably.

    Example::

        nn.softmax(fnp.array([1.0, 2.0, 1000.0]))   # no overflow
    """
    return _special.softmax(x, axis=axis)


def log_softmax(x: Any, axis: int | tuple[int, ...] = -1) -> Any:
    """x - logsumexp(x) along ``axis`` (default: the last), computed stably.

    Example::

        nn.log_softmax(logits)
    """
    return _special.log_softmax(x, axis=axis)


def logsumexp(x: Any, axis: Any = -1, keepdims: bool = False) -> Any:
    """log(sum(exp(x))) along ``axis`` (default: the last), computed stably. Example: ``nn.logsumexp(x)``."""
    return _special.logsumexp(x, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------- labels


def one_hot(labels: Any, num_classes: int, dtype: Any = np.float32, axis: int = -1) -> Any:
    """One-hot encoding of integer ``labels``: a new axis of length ``num_classes``.

    Labels outside ``[0, num_classes)`` give an all-zero row. Not differentiable
    (labels are integers).

    Example::

        nn.one_hot(np.array([0, 2]), 3)   # [[1, 0, 0], [0, 0, 1]]
    """
    if int(num_classes) != num_classes or num_classes < 1:
        raise ValueError(f"one_hot: num_classes must be a positive int, got {num_classes!r}")
    xp = namespace_of(labels)
    classes = xp.arange(int(num_classes))
    nd = fnp.ndim(labels)
    ax = axis % (nd + 1) if axis < 0 else axis
    if not 0 <= ax <= nd:
        raise ValueError(f"one_hot: axis {axis} is out of range for labels with {nd} dimensions")
    hot = fnp.equal(fnp.expand_dims(labels, ax), fnp.reshape(classes, (-1,) + (1,) * (nd - ax)))
    return fnp.astype(hot, dtype)


def _reduce(loss: Any, reduction: str, name: str) -> Any:
    if reduction == "mean":
        return fnp.mean(loss)
    if reduction == "sum":
        return fnp.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _check_labels(labels: Any, num_classes: int, name: str) -> None:
    if isinstance(labels, np.ndarray) and labels.size:
        lo, hi = int(labels.min()), int(labels.max())
        if lo < 0 or hi >= num_classes:
            raise ValueError(
                f"{name}: integer labels must lie in [0, {num_classes}) for {num_classes} classes, "
                f"got labels from {lo} to {hi}"
            )


def cross_entropy(logits: Any, targets: Any, *, axis: int = -1, label_smoothing: float = 0.0,
                  reduction: str = "mean") -> Any:
    """Softmax cross-entropy between ``logits`` and integer labels or class probabilities.

    ``targets`` is either an integer array of class indices (shape of
    ``logits`` without ``axis``) or a float array of probabilities with the
    shape of ``logits``. ``label_smoothing=eps`` mixes the targets with the
    uniform distribution: ``(1 - eps) * targets + eps / num_classes``. Stable
    for large logits in float32 (uses log_softmax).

    Example::

        loss = nn.cross_entropy(model(x), y)                      # y: int labels
        loss = nn.cross_entropy(logits, probs, label_smoothing=0.1)
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    shape = fnp.shape(logits)
    if not shape:
        raise ValueError("cross_entropy: logits must have a class axis, got a scalar")
    num_classes = shape[axis]
    tkind = fnp.result_type(targets).kind
    if tkind in "iub":
        tshape = fnp.shape(targets)
        expected = shape[:axis % len(shape)] + shape[axis % len(shape) + 1:]
        if tshape != expected:
            raise ValueError(
                f"cross_entropy: integer labels must have shape {expected} (logits {shape} without "
                f"axis {axis}), got {tshape}"
            )
        _check_labels(targets, num_classes, "cross_entropy")
        targets = one_hot(targets, num_classes, dtype=fnp.result_type(logits), axis=axis)
    elif fnp.shape(targets) != shape:
        raise ValueError(
            f"cross_entropy: probability targets must have the shape of the logits {shape}, "
            f"got {fnp.shape(targets)}"
        )
    if label_smoothing:
        targets = (1.0 - label_smoothing) * targets + label_smoothing / num_classes
    loss = softmax_cross_entropy(logits, targets, axis)  # one primitive: -sum(targets * log_softmax(logits))
    return _reduce(loss, reduction, "cross_entropy")


def nll_loss(log_probs: Any, labels: Any, *, axis: int = -1, reduction: str = "mean") -> Any:
    """Negative log-likelihood of integer ``labels`` under ``log_probs`` (e.g. from log_softmax).

    Example::

        nn.nll_loss(nn.log_softmax(logits), y)
    """
    num_classes = fnp.shape(log_probs)[axis]
    _check_labels(labels, num_classes, "nll_loss")
    hot = one_hot(labels, num_classes, dtype=fnp.result_type(log_probs), axis=axis)
    return _reduce(-fnp.sum(hot * log_probs, axis=axis), reduction, "nll_loss")


def binary_cross_entropy_with_logits(logits: Any, targets: Any, *, pos_weight: Any = None,
                                     reduction: str = "mean") -> Any:
    """Sigmoid cross-entropy: ``-[y log s(x) + (1 - y) log(1 - s(x))]`` from logits, stably.

    Computed as ``(1 - y) x - log_sigmoid(x)`` (with ``pos_weight`` p:
    ``(1 - y) x - (1 + (p - 1) y) log_sigmoid(x)``), which never overflows.

    Example::

        nn.binary_cross_entropy_with_logits(fnp.array([100.0, -100.0]), fnp.array([1.0, 0.0]))  # ~0
    """
    if fnp.shape(logits) != fnp.shape(targets):
        raise ValueError(
            f"binary_cross_entropy_with_logits: logits and targets must have the same shape, got "
            f"{fnp.shape(logits)} and {fnp.shape(targets)}"
        )
    ls = log_sigmoid(logits)
    if pos_weight is None:
        loss = (1.0 - targets) * logits - ls
    else:
        loss = (1.0 - targets) * logits - (1.0 + (pos_weight - 1.0) * targets) * ls
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def _check_same(pred: Any, target: Any, name: str) -> None:
    if fnp.shape(pred) != fnp.shape(target):
        raise ValueError(f"{name}: predictions and targets must have the same shape, got "
                         f"{fnp.shape(pred)} and {fnp.shape(target)}")


def mse_loss(pred: Any, target: Any, *, reduction: str = "mean") -> Any:
    """Mean squared error. Example: ``nn.mse_loss(model(x), y)``."""
    _check_same(pred, target, "mse_loss")
    d = pred - target
    return _reduce(d * d, reduction, "mse_loss")


def l1_loss(pred: Any, target: Any, *, reduction: str = "mean") -> Any:
    """Mean absolute error. Example: ``nn.l1_loss(model(x), y)``."""
    _check_same(pred, target, "l1_loss")
    return _reduce(fnp.abs(pred - target), reduction, "l1_loss")


def huber_loss(pred: Any, target: Any, *, delta: float = 1.0, reduction: str = "mean") -> Any:
    """Huber loss: ``0.5 d^2`` for ``|d| <= delta``, ``delta (|d| - delta / 2)`` beyond.

    Example::

        nn.huber_loss(model(x), y, delta=1.0)
    """
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    _check_same(pred, target, "huber_loss")
    d = pred - target
    ad = fnp.abs(d)
    loss = fnp.where(ad <= delta, 0.5 * d * d, delta * (ad - 0.5 * delta))
    return _reduce(loss, reduction, "huber_loss")
