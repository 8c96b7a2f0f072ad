"""Normalization layers: LayerNorm, RMSNorm, GroupNorm and BatchNorm (with explicit state).

BatchNorm keeps no hidden mutable buffers: its running statistics live in a
separate :class:`BatchNormState` pytree that the caller passes in and gets
back, so training steps stay pure functions and the state can be saved with
``fg.save`` like anything else.

Example::

    bn = fg.nn.BatchNorm(16)
    state = bn.initial_state()
    y, state = bn(x, state, training=True)      # batch statistics, state updated
    y, _ = bn(x, state, training=False)         # running statistics
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import funcgrad.numpy as fnp

from ..transforms import stop_gradient
from .kernels.layer_norm import layer_norm_affine
from .kernels.running_statistics import blend_running_statistics
from .kernels.normalization import standardize, standardize_affine, standardize_affine_statistics
from .module import Module, static_field

__all__ = ["LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm", "BatchNormState", "layer_norm", "batch_norm", "group_norm",
           "batch_norm_train"]


def _one_affine_node(x: Any, weight: Any, bias: Any) -> bool:
    """Whether :func:`layer_norm_affine` computes this layer norm over the last axis: a scale and a shift of
    the last axis's length, all three of one real floating dtype."""
    if weight is None or bias is None:
        return False
    d = fnp.shape(x)[-1:]
    dtype = fnp.result_type(x)
    return (fnp.shape(weight) == d and fnp.shape(bias) == d and np.issubdtype(dtype, np.floating)
            and fnp.result_type(weight) == dtype and fnp.result_type(bias) == dtype)


def layer_norm(x: Any, normalized_ndim: int = 1, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """Normalize over the last ``normalized_ndim`` axes, then scale and shift.

    Example::

        y = fg.nn.layer_norm(x, 1, gamma, beta)
    """
    nd = fnp.ndim(x)
    if normalized_ndim == 1 and _one_affine_node(x, weight, bias):
        return layer_norm_affine(x, weight, bias, float(eps))
    y = standardize(x, tuple(range(nd - normalized_ndim, nd)), float(eps))
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def group_norm(x: Any, num_groups: int, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """Normalize ``(N, C, *spatial)`` over groups of ``C // num_groups`` channels, then per-channel affine.

    Example::

        y = fg.nn.group_norm(x, 4, gamma, beta)
    """
    shape = fnp.shape(x)
    xg = fnp.reshape(x, (shape[0], num_groups, -1))
    y = fnp.reshape(standardize(xg, (2,), float(eps)), shape)
    bshape = (shape[1],) + (1,) * (len(shape) - 2)
    if weight is not None:
        y = y * fnp.reshape(weight, bshape)
    if bias is not None:
        y = y + fnp.reshape(bias, bshape)
    return y


def batch_norm_train(x: Any, weight: Any, bias: Any, *, eps: float = 1e-5, axis: int = 1) -> tuple[Any, Any, Any]:
    """Batch normalization with batch statistics and a per-feature affine, and those statistics:
    ``(y, mean, var)``, the mean and biased variance over every axis but ``axis``, kept (shape 1 there),
    from the one kernel that normalizes (no second pass over ``x`` for running statistics). The
    statistics are differentiable results; :func:`batch_norm` blends them into its running ones.

    Example::

        y, mean, var = fg.nn.norm.batch_norm_train(x, gamma, beta)   # x: (N, C, H, W); mean: (1, C, 1, 1)
    """
    shape = fnp.shape(x)
    ax = axis % len(shape)
    bshape = tuple(n if i == ax else 1 for i, n in enumerate(shape))
    axes = tuple(i for i in range(len(shape)) if i != ax)
    out: tuple[Any, Any, Any] = standardize_affine_statistics(x, fnp.reshape(weight, bshape),
                                                              fnp.reshape(bias, bshape), axes, float(eps))
    return out


def batch_norm(x: Any, running_mean: Any, running_var: Any, weight: Any = None, bias: Any = None, *,
               training: bool, momentum: float = 0.1, eps: float = 1e-5, axis: int = 1) -> tuple[Any, Any, Any]:
    """Batch normalization over every axis but ``axis``: returns ``(y, new_running_mean, new_running_var)``.

    In training the batch statistics normalize and the running ones are
    blended in with ``momentum`` (unbiased variance, as PyTorch); otherwise the
    running statistics normalize and come back unchanged. Either running
    statistic may be None (then batch statistics are always used).

    Example::

        y, rm, rv = fg.nn.batch_norm(x, rm, rv, gamma, beta, training=True)
    """
    shape = fnp.shape(x)
    nd = len(shape)
    ax = axis % nd if nd else 0
    nf = shape[ax]
    bshape = tuple(nf if i == ax else 1 for i in range(nd))
    axes = tuple(i for i in range(nd) if i != ax)
    if training or running_mean is None:
        count = 1
        for i in axes:
            count *= shape[i]
        if count < 2 and training:
            raise ValueError(f"batch_norm: training needs more than one value per channel, got input shape {shape}")
        tracked = training and running_mean is not None
        if weight is not None and bias is not None and tracked:  # the statistics come from the kernel
            y, bm, bv = batch_norm_train(x, weight, bias, eps=eps, axis=ax)
            bm, bv = fnp.reshape(stop_gradient(bm), (nf,)), fnp.reshape(stop_gradient(bv), (nf,))
            weight = bias = None
        elif weight is not None and bias is not None:  # the per-channel affine fused into the kernel
            y = standardize_affine(x, fnp.reshape(weight, bshape), fnp.reshape(bias, bshape), axes, float(eps))
            weight = bias = None
        else:
            y = standardize(x, axes, float(eps))
            if tracked:
                xs = stop_gradient(x)
                bm, bv = fnp.mean(xs, axis=axes), fnp.var(xs, axis=axes)
        if tracked:
            running_mean, running_var = blend_running_statistics(running_mean, running_var, bm, bv, momentum, count)
    else:
        mean = fnp.reshape(running_mean, bshape)
        var = fnp.reshape(running_var, bshape)
        y = (x - mean) / fnp.sqrt(var + eps)
    if weight is not None:
        y = y * fnp.reshape(weight, bshape)
    if bias is not None:
        y = y + fnp.reshape(bias, bshape)
    return y, running_mean, running_var


class LayerNorm(Module):
    """Layer normalization over the trailing ``normalized_shape`` axes (PyTorch's ``LayerNorm``).

    Example::

        ln = fg.nn.LayerNorm(64)
        y = ln(x)          # x: (..., 64)
    """

    weight: Any
    bias: Any
    normalized_shape: tuple[Any, ...] = static_field()
    eps: float = static_field()

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, *, dtype: Any = np.float32) -> None:
        shape = (int(normalized_shape),) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
        self.normalized_shape = shape
        self.eps = float(eps)
        self.weight = np.ones(shape, dtype=dtype) if elementwise_affine else None
        self.bias = np.zeros(shape, dtype=dtype) if elementwise_affine and bias else None

    def __call__(self, x: Any) -> Any:
        n = len(self.normalized_shape)
        if tuple(fnp.shape(x)[-n:]) != self.normalized_shape:
            raise ValueError(
                f"LayerNorm{self.normalized_shape}: the input's trailing axes must be "
                f"{self.normalized_shape}, got input shape {fnp.shape(x)}"
            )
        return layer_norm(x, n, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    """Root-mean-square normalization over the last axis: ``x / rms(x) * weight``.

    Example::

        y = fg.nn.RMSNorm(64)(x)
    """

    weight: Any
    eps: float = static_field()

    def __init__(self, dim: int, eps: float = 1e-6, *, dtype: Any = np.float32) -> None:
        self.weight = np.ones((int(dim),), dtype=dtype)
        self.eps = float(eps)

    def __call__(self, x: Any) -> Any:
        ms = fnp.mean(x * x, axis=-1, keepdims=True)
        return x / fnp.sqrt(ms + self.eps) * self.weight


class GroupNorm(Module):
    """Group normalization (PyTorch's ``GroupNorm``) of ``(N, C, *spatial)`` inputs.

    Example::

        y = fg.nn.GroupNorm(4, 16)(x)     # x: (N, 16, H, W)
    """

    weight: Any
    bias: Any
    num_groups: int = static_field()
    num_channels: int = static_field()
    eps: float = static_field()

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, *,
                 dtype: Any = np.float32) -> None:
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_groups ({num_groups}) must divide num_channels ({num_channels})")
        self.num_groups, self.num_channels, self.eps = int(num_groups), int(num_channels), float(eps)
        self.weight = np.ones((num_channels,), dtype=dtype) if affine else None
        self.bias = np.zeros((num_channels,), dtype=dtype) if affine else None

    def __call__(self, x: Any) -> Any:
        shape = fnp.shape(x)
        if len(shape) < 2 or shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected input (N, {self.num_channels}, ...), got {shape}")
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class BatchNormState(Module):
    """Running statistics of a :class:`BatchNorm` layer (a pytree; save it with fg.save)."""

    running_mean: Any
    running_var: Any


class BatchNorm(Module):
    """Batch normalization over all axes but ``axis`` (the channel axis, default 1).

    Works for ``(N, C)``, ``(N, C, L)`` and ``(N, C, H, W)`` inputs (PyTorch's
    BatchNorm1d/2d). The running statistics are explicit state: get the
    initial one with :meth:`initial_state`, pass it to each call and use the
    state returned. ``training=True`` normalizes with the batch's statistics
    and returns updated running statistics (``momentum`` weights the new
    batch, the variance is the unbiased one, as in PyTorch); ``training=False``
    normalizes with the running statistics and returns the state unchanged.
    No gradient flows into the state.

    Example::

        bn = fg.nn.BatchNorm(8)
        state = bn.initial_state()

        def loss(model, state, x, y):
            out, state = model(x, state, training=True)
            return fg.nn.mse_loss(out, y), state

        (l, state), g = fg.value_and_grad(loss, has_aux=True)(bn, state, x, y)
    """

    weight: Any
    bias: Any
    num_features: int = static_field()
    eps: float = static_field()
    momentum: float = static_field()
    axis: int = static_field()

    _fg_stateful = True

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True, *,
                 axis: int = 1, dtype: Any = np.float32) -> None:
        self.num_features, self.eps, self.momentum, self.axis = int(num_features), float(eps), float(momentum), int(axis)
        self.weight = np.ones((num_features,), dtype=dtype) if affine else None
        self.bias = np.zeros((num_features,), dtype=dtype) if affine else None

    def initial_state(self, dtype: Any = None) -> BatchNormState:
        """Zero running mean and unit running variance.

        Example::

            state = bn.initial_state()
        """
        dt = dtype or (self.weight.dtype if self.weight is not None else np.float32)
        return BatchNormState(np.zeros((self.num_features,), dtype=dt), np.ones((self.num_features,), dtype=dt))

    def __call__(self, x: Any, state: BatchNormState, *, training: bool) -> tuple[Any, BatchNormState]:
        if not isinstance(state, BatchNormState):
            raise TypeError(
                f"BatchNorm needs its state: call bn(x, state, training=...) with state = "
                f"bn.initial_state() (or the state a previous call returned); got {type(state).__name__}"
            )
        if not isinstance(training, (bool, np.bool_)):
            raise TypeError(f"BatchNorm: training must be True or False, got {training!r}")
        shape = fnp.shape(x)
        nd = len(shape)
        ax = self.axis % nd if nd else 0
        if nd < 2 or shape[ax] != self.num_features:
            raise ValueError(
                f"BatchNorm({self.num_features}): expected the channel axis {self.axis} of the input "
                f"to have length {self.num_features}, got input shape {shape}"
            )
        if training:
            count = 1
            for i in range(nd):
                if i != ax:
                    count *= shape[i]
            if count < 2:
                raise ValueError(f"BatchNorm: training needs more than one value per channel, got input shape {shape}")
        y, rm, rv = batch_norm(x, state.running_mean, state.running_var, self.weight, self.bias, training=training,
                               momentum=self.momentum, eps=self.eps, axis=ax)
        new_state = BatchNormState(rm, rv) if training else state
        return y, new_state
