"""Convolutions and pooling (1-, 2- and 3-D, channels first), via im2col + matmul.

``im2col`` gathers every kernel window of the (padded) input into one array
of shape ``(N, C, *kernel, *out_spatial)``; a convolution is then one
(batched) matrix product with the weight, which BLAS does well. ``im2col``
and its transpose ``col2im`` are a pair of linear primitives defined here:
each one's VJP is the other, so the backward pass costs what the forward
does (a matmul of the same size plus one col2im) and derivatives of any
order are available. Both run on the arrays' own namespace (NumPy or CuPy).

Layout follows PyTorch: inputs ``(N, C, *spatial)`` (the batch axis may be
left out), weights ``(out_channels, in_channels // groups, *kernel)``.

Example::

    conv = fg.nn.Conv2d(1, 8, kernel_size=3, padding=1, key=0)
    y = conv(x)                       # x: (N, 1, H, W) -> (N, 8, H, W)
    y = fg.nn.conv2d(x, w, b, stride=2, padding=1, dilation=1, groups=1)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from . import init as _init
from .kernels.convolution import conv_forward
from .kernels.pooling import pooled_size, window_argmax, window_gather, window_slices, window_sum
from .module import Module, static_field

__all__ = [
    "im2col", "col2im", "conv", "max_pool_windows", "conv1d", "conv2d", "conv3d", "max_pool", "avg_pool", "max_pool1d",
    "max_pool2d", "avg_pool1d", "avg_pool2d", "Conv1d", "Conv2d", "Conv3d", "MaxPool1d", "MaxPool2d",
    "AvgPool1d", "AvgPool2d",
]


# --------------------------------------------------------------------------- argument handling


def _tuple(v: Any, n: int, name: str) -> tuple[int, ...]:
    if isinstance(v, (int, np.integer)):
        out = (int(v),) * n
    else:
        out = tuple(int(x) for x in v)
        if len(out) != n:
            raise ValueError(f"{name} must be an int or a sequence of {n} ints, got {v!r}")
    return out


def _padding(v: Any, n: int, kernel: tuple[int, ...], dilation: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Normalize padding to ((lo, hi), ...) per spatial axis; 'same' and 'valid' allowed."""
    if isinstance(v, str):
        if v == "valid":
            return ((0, 0),) * n
        if v == "same":
            out = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                out.append((total // 2, total - total // 2))
            return tuple(out)
        raise ValueError(f"padding must be an int, a sequence, 'same' or 'valid', got {v!r}")
    if isinstance(v, (int, np.integer)):
        return ((int(v), int(v)),) * n
    v = tuple(v)
    if len(v) != n:
        raise ValueError(f"padding must give one entry per spatial axis ({n}), got {v!r}")
    out = []
    for p in v:
        if isinstance(p, (int, np.integer)):
            out.append((int(p), int(p)))
        else:
            lo, hi = p
            out.append((int(lo), int(hi)))
    return tuple(out)


# --------------------------------------------------------------------------- im2col / col2im primitives


def _im2col_raw(
    x: Any, kernel: tuple[int, ...], stride: tuple[int, ...], padding: tuple[tuple[int, int], ...],
    dilation: tuple[int, ...], pad_value: float = 0.0,
) -> Any:
    xp = namespace_of(x)
    nsp = len(kernel)
    lead = x.shape[:-nsp]
    spatial = x.shape[-nsp:]
    out = tuple(pooled_size(n, k, s, p, d) for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation))
    if any(o <= 0 for o in out):
        raise ValueError(
            f"the kernel {kernel} (dilation {dilation}) is larger than the padded input {spatial} "
            f"with padding {padding}"
        )
    if any(p != (0, 0) for p in padding):
        x = xp.pad(x, ((0, 0),) * len(lead) + tuple(padding), mode="constant", constant_values=pad_value)
    cols = xp.empty(lead + tuple(kernel) + out, dtype=x.dtype)
    pre = (slice(None),) * len(lead)
    for idx, sl in window_slices(kernel, stride, dilation, out):
        cols[pre + idx] = x[pre + sl]
    return cols


def _col2im_raw(
    cols: Any, x_shape: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...],
    padding: tuple[tuple[int, int], ...], dilation: tuple[int, ...],
) -> Any:
    xp = namespace_of(cols)
    nsp = len(kernel)
    lead = tuple(x_shape[:-nsp])
    spatial = tuple(x_shape[-nsp:])
    padded = tuple(n + p[0] + p[1] for n, p in zip(spatial, padding))
    out_sp = tuple(cols.shape[-nsp:])
    x = xp.zeros(lead + padded, dtype=cols.dtype)
    pre = (slice(None),) * len(lead)
    for idx, sl in window_slices(kernel, stride, dilation, out_sp):
        x[pre + sl] += cols[pre + idx]
    if any(p != (0, 0) for p in padding):
        crop = tuple(slice(p[0], p[0] + n) for p, n in zip(padding, spatial))
        x = x[pre + crop]
    return x




def _im2col_vjp(g: Any, ans: Any, x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any, pad_value: float = 0.0) -> Any:
    return _col2im(g, fnp.shape(x), kernel, stride, padding, dilation)


def _im2col_jvp(t: Any, ans: Any, x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any, pad_value: float = 0.0) -> Any:
    return _im2col(t, kernel, stride, padding, dilation, 0.0)


def _col2im_vjp(g: Any, ans: Any, cols: Any, x_shape: Any, kernel: Any, stride: Any, padding: Any, dilation: Any) -> Any:
    return _im2col(g, kernel, stride, padding, dilation, 0.0)


def _col2im_jvp(t: Any, ans: Any, cols: Any, x_shape: Any, kernel: Any, stride: Any, padding: Any, dilation: Any) -> Any:
    return _col2im(t, x_shape, kernel, stride, padding, dilation)


# Batching (vmap): fold the batch axis into the leading axes; the kernels only
# look at the trailing spatial axes.
def _im2col_batch(args: list[Any], dims: list[int | None], **kwargs: Any) -> tuple[Any, int | None]:
    x, *rest = args
    d = dims[0]
    if d is None:
        return _im2col(x, *rest, **kwargs), None
    return _im2col(fnp.moveaxis(x, d, 0), *rest, **kwargs), 0


def _col2im_batch(args: list[Any], dims: list[int | None], **kwargs: Any) -> tuple[Any, int | None]:
    cols, x_shape, *rest = args
    d = dims[0]
    if d is None:
        return _col2im(cols, x_shape, *rest, **kwargs), None
    cols = fnp.moveaxis(cols, d, 0)
    return _col2im(cols, (fnp.shape(cols)[0],) + tuple(x_shape), *rest, **kwargs), 0


_im2col = defprimitive(_im2col_raw, name="im2col", vjp=_im2col_vjp, jvp=_im2col_jvp, batch=_im2col_batch)
_col2im = defprimitive(_col2im_raw, name="col2im", vjp=_col2im_vjp, jvp=_col2im_jvp, batch=_col2im_batch)


def im2col(x: Any, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           pad_value: float = 0.0) -> Any:
    """Every kernel window of ``x``: ``(*lead, *spatial) -> (*lead, *kernel, *out_spatial)``.

    The number of spatial axes is ``len(kernel_size)`` (an int kernel means 2-D).
    Padding is filled with ``pad_value``. Differentiable (its VJP is :func:`col2im`).

    Example::

        cols = fg.nn.im2col(x, (3, 3), padding=1)    # x: (N, C, H, W) -> (N, C, 3, 3, H, W)
    """
    kernel = _tuple(kernel_size, 2, "kernel_size") if isinstance(kernel_size, int) else tuple(kernel_size)
    n = len(kernel)
    stride_t, dil = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    return _im2col(x, kernel, stride_t, _padding(padding, n, kernel, dil), dil, float(pad_value))


def col2im(cols: Any, x_shape: Sequence[int], kernel_size: Any, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1) -> Any:
    """The transpose of :func:`im2col`: sum every window back into an array of ``x_shape``.

    Example::

        x_back = fg.nn.col2im(cols, x.shape, (3, 3), padding=1)
    """
    kernel = _tuple(kernel_size, 2, "kernel_size") if isinstance(kernel_size, int) else tuple(kernel_size)
    n = len(kernel)
    stride_t, dil = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    return _col2im(cols, tuple(x_shape), kernel, stride_t, _padding(padding, n, kernel, dil), dil)


# --------------------------------------------------------------------------- functional convolution


def conv(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
         groups: int = 1) -> Any:
    """N-d convolution (cross-correlation, as in PyTorch), channels first.

    ``x``: ``(N, C_in, *spatial)`` or ``(C_in, *spatial)``; ``weight``:
    ``(C_out, C_in // groups, *kernel)``; ``bias``: ``(C_out,)`` or None.
    ``padding`` is an int, a per-axis sequence of ints or ``(lo, hi)`` pairs,
    ``'same'`` or ``'valid'``.

    Example::

        y = fg.nn.conv(x, w, b, stride=1, padding="same")
    """
    wshape = fnp.shape(weight)
    nsp = len(wshape) - 2
    if nsp < 1:
        raise ValueError(f"conv: weight must have shape (out, in // groups, *kernel), got {wshape}")
    xshape = fnp.shape(x)
    unbatched = len(xshape) == nsp + 1
    if unbatched:
        x = fnp.expand_dims(x, 0)
        xshape = fnp.shape(x)
    if len(xshape) != nsp + 2:
        raise ValueError(
            f"conv: a {nsp}-d convolution needs input of shape (N, C, *spatial) with {nsp} spatial "
            f"axes (or (C, *spatial)), got {xshape}"
        )
    c_out, c_in_g = wshape[0], wshape[1]
    kernel = tuple(wshape[2:])
    c_in = xshape[1]
    if groups < 1 or c_in % groups or c_out % groups:
        raise ValueError(
            f"conv: groups={groups} must divide both in_channels ({c_in}) and out_channels ({c_out})"
        )
    if c_in // groups != c_in_g:
        raise ValueError(
            f"conv: weight expects {c_in_g * groups} input channels ({c_in_g} per group x {groups} "
            f"groups), but the input has {c_in} channels (input shape {xshape})"
        )
    stride_t, dil = _tuple(stride, nsp, "stride"), _tuple(dilation, nsp, "dilation")
    pads = _padding(padding, nsp, kernel, dil)
    y = conv_forward(x, weight, stride_t, pads, dil, int(groups))
    if bias is not None:
        y = y + fnp.reshape(bias, (c_out,) + (1,) * nsp)
    return y[0] if unbatched else y


def conv1d(
    x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1
) -> Any:
    """1-d convolution: ``x`` (N, C, L), ``weight`` (O, C // groups, K). Example: ``fg.nn.conv1d(x, w)``."""
    _check_rank(weight, 3, "conv1d")
    return conv(x, weight, bias, stride, padding, dilation, groups)


def conv2d(
    x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1
) -> Any:
    """2-d convolution: ``x`` (N, C, H, W), ``weight`` (O, C // groups, KH, KW). Example: ``fg.nn.conv2d(x, w, b, padding=1)``."""
    _check_rank(weight, 4, "conv2d")
    return conv(x, weight, bias, stride, padding, dilation, groups)


def conv3d(
    x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1
) -> Any:
    """3-d convolution: ``x`` (N, C, D, H, W), ``weight`` (O, C // groups, KD, KH, KW). Example: ``fg.nn.conv3d(x, w)``."""
    _check_rank(weight, 5, "conv3d")
    return conv(x, weight, bias, stride, padding, dilation, groups)


def _check_rank(w: Any, rank: int, name: str) -> None:
    if fnp.ndim(w) != rank:
        raise ValueError(f"{name}: weight must have {rank} dimensions, got shape {fnp.shape(w)}")


# --------------------------------------------------------------------------- pooling


def _pool(x: Any, kernel_size: Any, stride: Any, padding: Any, nsp: int, kind: str, name: str) -> Any:
    kernel = _tuple(kernel_size, nsp, "kernel_size")
    stride_t = kernel if stride is None else _tuple(stride, nsp, "stride")
    pads = _padding(padding, nsp, kernel, (1,) * nsp)
    for k, (lo, hi) in zip(kernel, pads):
        if lo > k // 2 or hi > k // 2:
            raise ValueError(f"{name}: padding must be at most half the kernel size, got {padding} for {kernel}")
    shape = fnp.shape(x)
    if len(shape) < nsp + 1:
        raise ValueError(f"{name}: input needs at least {nsp + 1} dimensions (C, *spatial), got {shape}")
    if kind == "max":
        return max_pool_windows(x, kernel, stride_t, pads, (1,) * nsp)
    # padded zeros count in the mean (PyTorch's count_include_pad=True)
    return window_sum(x, kernel, stride_t, pads, (1,) * nsp) / math.prod(kernel)


def max_pool_windows(x: Any, kernel: tuple[int, ...], stride: tuple[int, ...], pads: tuple[tuple[int, int], ...],
                     dilation: tuple[int, ...]) -> Any:
    """Max over each window of the trailing ``len(kernel)`` axes (padding counts as -inf).

    The argmax is found once (:func:`~funcgrad.nn.kernels.pooling.window_argmax`); the values are
    gathered at it, and the backward pass scatters into it.

    Example::

        y = fg.nn.max_pool_windows(x, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1))
    """
    index = window_argmax(x, kernel, stride, pads, dilation)
    return window_gather(x, index, kernel, stride, pads, dilation, -math.inf)


def max_pool(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, *, ndim: int = 2) -> Any:
    """Max over windows of the last ``ndim`` axes (stride defaults to the kernel size).

    Example::

        fg.nn.max_pool(x, 2)          # (N, C, H, W) -> (N, C, H // 2, W // 2)
    """
    return _pool(x, kernel_size, stride, padding, ndim, "max", "max_pool")


def avg_pool(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, *, ndim: int = 2) -> Any:
    """Mean over windows of the last ``ndim`` axes; padded zeros count (PyTorch's default).

    Example::

        fg.nn.avg_pool(x, 2)
    """
    return _pool(x, kernel_size, stride, padding, ndim, "avg", "avg_pool")


def max_pool1d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    """1-d max pooling over the last axis. Example: ``fg.nn.max_pool1d(x, 2)``."""
    return _pool(x, kernel_size, stride, padding, 1, "max", "max_pool1d")


def max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    """2-d max pooling over the last two axes. Example: ``fg.nn.max_pool2d(x, 2)``."""
    return _pool(x, kernel_size, stride, padding, 2, "max", "max_pool2d")


def avg_pool1d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    """1-d average pooling over the last axis. Example: ``fg.nn.avg_pool1d(x, 2)``."""
    return _pool(x, kernel_size, stride, padding, 1, "avg", "avg_pool1d")


def avg_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    """2-d average pooling over the last two axes. Example: ``fg.nn.avg_pool2d(x, 2)``."""
    return _pool(x, kernel_size, stride, padding, 2, "avg", "avg_pool2d")


# --------------------------------------------------------------------------- layers


class _ConvNd(Module):
    weight: Any
    bias: Any
    in_channels: int = static_field()
    out_channels: int = static_field()
    kernel_size: tuple[Any, ...] = static_field()
    stride: tuple[Any, ...] = static_field()
    padding: Any = static_field()
    dilation: tuple[Any, ...] = static_field()
    groups: int = static_field()

    _nsp = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True, *,
                 key: Any = None, dtype: Any = np.float32, weight_init: Callable[..., Any] | None = None) -> None:
        n = self._nsp
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{type(self).__name__}: groups={groups} must divide in_channels ({in_channels}) and "
                f"out_channels ({out_channels})"
            )
        self.in_channels = int(in_channels)
        self.out_channels = int(out_channels)
        self.kernel_size = _tuple(kernel_size, n, "kernel_size")
        self.stride = _tuple(stride, n, "stride")
        self.dilation = _tuple(dilation, n, "dilation")
        self.padding = padding if isinstance(padding, str) else _padding(padding, n, self.kernel_size, self.dilation)
        self.groups = int(groups)
        g = _init.rng(key)
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = (weight_init or _init.torch_default)(g, shape, dtype)
        if bias:
            fan_in = _init.fans(shape)[0]
            bound = 1.0 / math.sqrt(fan_in)
            self.bias = _init.uniform(g, (out_channels,), dtype, -bound, bound)
        else:
            self.bias = None

    def __call__(self, x: Any) -> Any:
        return conv(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-d convolution layer (PyTorch's ``Conv1d``): ``(N, C_in, L) -> (N, C_out, L_out)``.

    Weights default to PyTorch's initialization (``U(+-1/sqrt(fan_in))``),
    reproducible from ``key`` (an int seed or a ``numpy.random.Generator``).

    Example::

        layer = fg.nn.Conv1d(4, 8, kernel_size=3, padding=1, key=0)
    """

    _nsp = 1


class Conv2d(_ConvNd):
    """2-d convolution layer (PyTorch's ``Conv2d``): ``(N, C_in, H, W) -> (N, C_out, H_out, W_out)``.

    Supports ``stride``, ``padding`` (int, pairs, ``'same'``, ``'valid'``),
    ``dilation`` and ``groups``. Computed by im2col + matmul; the backward
    pass costs about twice the forward (two matmuls of the same size).

    Example::

        layer = fg.nn.Conv2d(1, 16, kernel_size=3, padding=1, key=0)
        y = layer(x)          # (N, 1, 8, 8) -> (N, 16, 8, 8)
    """

    _nsp = 2


class Conv3d(_ConvNd):
    """3-d convolution layer: ``(N, C_in, D, H, W) -> (N, C_out, D', H', W')``.

    Example::

        layer = fg.nn.Conv3d(1, 4, kernel_size=3, key=0)
    """

    _nsp = 3


class _PoolNd(Module):
    kernel_size: Any = static_field()
    stride: Any = static_field(default=None)
    padding: Any = static_field(default=0)

    _nsp = 2
    _kind = "max"

    def __call__(self, x: Any) -> Any:
        return _pool(x, self.kernel_size, self.stride, self.padding, self._nsp, self._kind, type(self).__name__)


class MaxPool1d(_PoolNd):
    """1-d max pooling layer. Example: ``fg.nn.MaxPool1d(2)(x)``."""

    _nsp = 1


class MaxPool2d(_PoolNd):
    """2-d max pooling layer (stride defaults to the kernel size).

    Example::

        fg.nn.MaxPool2d(2)(x)      # (N, C, 8, 8) -> (N, C, 4, 4)
    """


class AvgPool1d(_PoolNd):
    """1-d average pooling layer. Example: ``fg.nn.AvgPool1d(2)(x)``."""

    _nsp = 1
    _kind = "avg"


class AvgPool2d(_PoolNd):
    """2-d average pooling layer (padded zeros count in the mean, as in PyTorch).

    Example::

        fg.nn.AvgPool2d(2)(x)
    """

    _kind = "avg"
