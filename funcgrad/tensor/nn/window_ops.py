"""Window and channel operations of ``torch.nn.functional`` beyond the plain pools: power-average
pooling (``lp_pool1d/2d/3d``), fractional max pooling, local response normalization (and the legacy
``CrossMapLRN2d`` window), ``channel_shuffle`` and ``conv_tbc``.

Each is a short composition of recorded Tensor operations and ``funcgrad.nn``'s ``im2col``/``conv``
maths, so gradients (to any order) come from the one engine.

Example::

    y = F.lp_pool2d(x, 2.0, 3, stride=2)                       # sqrt of the sum of squares per window
    y, idx = F.fractional_max_pool2d(x, 2, output_size=(5, 5), return_indices=True)
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

import funcgrad.nn as _fnn
import funcgrad.numpy as fnp
from funcgrad.backend import namespace_of

from ..creation import default_generator
from ..tensor import Tensor
from ..tensor_helpers import _as_tensor
from .bridge import _run_on_tensors, _like

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices", "local_response_norm", "cross_map_lrn",
           "channel_shuffle", "native_channel_shuffle", "conv_tbc"]


def _tuple(v: Any, n: int) -> tuple[int, ...]:
    return (int(v),) * n if isinstance(v, (int, np.integer)) else tuple(int(a) for a in v)


# --------------------------------------------------------------------------- power-average pooling


def _window_mean(x: Tensor, k: tuple[int, ...], s: tuple[int, ...], ceil_mode: bool, name: str) -> Tensor:
    """PyTorch's ``avg_pool{n}d(x, k, s, padding=0, ceil_mode)``: with ``ceil_mode`` the last window may
    hang past the input and is divided by the part of it inside."""
    nsp = len(k)
    if x.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{name}: expected a {nsp + 1}-d or {nsp + 2}-d input, got shape {tuple(x.shape)}")
    sizes = tuple(x.shape[-nsp:])
    out, hi = [], []
    for n, kk, ss in zip(sizes, k, s):
        if kk <= 0 or ss <= 0:
            raise RuntimeError(f"{name}: kernel_size and stride must be positive, got {k} and {s}")
        span = n - kk
        if span < 0:
            raise RuntimeError(f"{name}: the kernel {k} is larger than the input's spatial size {sizes}")
        o = (-(-span // ss) if ceil_mode else span // ss) + 1
        if ceil_mode and (o - 1) * ss >= n:
            o -= 1
        out.append(o)
        hi.append(max((o - 1) * ss + kk - n, 0))
    lead = tuple(x.shape[:-nsp])
    nk = math.prod(k)

    def window_sum(v: Any) -> Any:
        cols = _fnn.im2col(v, k, s, tuple((0, h) for h in hi), 1)
        return fnp.sum(fnp.reshape(cols, lead + (nk,) + tuple(out)), axis=len(lead))

    total = _run_on_tensors(window_sum, x)
    div = np.ones((), dtype=np.float64)
    for n, kk, ss, o in zip(sizes, k, s, out):
        lo = np.arange(o) * ss
        div = np.multiply.outer(div, (np.minimum(lo + kk, n) - lo).astype(np.float64))
    return total / _like(x, div.astype(x._value.dtype))


def _lp_pool(x: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False, *,
             nsp: int) -> Tensor:
    k = _tuple(kernel_size, nsp)
    s = k if stride is None else _tuple(stride, nsp)
    mean = _window_mean(x.pow(norm_type), k, s, ceil_mode, f"lp_pool{nsp}d")
    return (mean.sign() * mean.abs().relu()).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` along the last axis. Example: ``F.lp_pool1d(x, 2.0, 3)``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nsp=1)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` over the last two axes. Example: ``F.lp_pool2d(x, 2.0, 2)``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nsp=2)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` over the last three axes. Example: ``F.lp_pool3d(x, 1.0, 2)``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nsp=3)


# --------------------------------------------------------------------------- fractional max pooling


def _intervals(sample: Any, n_in: int, n_out: int, pool: int) -> Any:
    """PyTorch's pseudo-random window starts: ``int((i + u) a) - int(u a)`` with ``a = (n_in - pool) / (n_out - 1)``,
    the last window ending at the input's end; ``sample`` (any shape) holds ``u``, the result adds an axis.
    Computed in ``sample``'s own namespace, so samples on a device stay there."""
    xp = namespace_of(sample)
    starts = xp.empty(sample.shape + (n_out,), dtype=xp.int64)
    if n_out > 1:
        alpha = (n_in - pool) / (n_out - 1)
        i = xp.arange(n_out - 1)
        starts[..., :-1] = ((i + sample[..., None]) * alpha).astype(xp.int64) - (sample[..., None] * alpha).astype(
            xp.int64)
    starts[..., -1] = n_in - pool
    return starts


def _fractional_max(x: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any, return_indices: bool,
                    random_samples: Any, *, nsp: int) -> Any:
    name = f"fractional_max_pool{nsp}d"
    if x.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{name}(): Expected {nsp + 1}D or {nsp + 2}D tensor, but got: {list(x.shape)}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    sizes = tuple(int(n) for n in x.shape[-nsp:])
    k = _tuple(kernel_size, nsp)
    if output_size is None:
        ratio = (float(output_ratio),) * nsp if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        if not all(0.0 < r < 1.0 for r in ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")
        out = tuple(int(n * r) for n, r in zip(sizes, ratio))
    else:
        out = _tuple(output_size, nsp)
    axes = ("time", "height", "width")[3 - nsp:]
    for a, n, o, kk in zip(axes, sizes, out, k):
        if o + kk - 1 > n:
            raise RuntimeError(f"{name}(): pool {a} {kk} too large relative to input {a} {n}")
    batched = x.dim() == nsp + 2
    xb = x if batched else x.unsqueeze(0)
    N, C = int(xb.shape[0]), int(xb.shape[1])
    if random_samples is None:
        samples = default_generator._rng.random((N, C, nsp))
    else:
        samples = _as_tensor(random_samples)._value
        samples = samples.astype(namespace_of(samples).float64)
        if samples.shape != (N, C, nsp):
            raise RuntimeError(f"{name}(): expected _random_samples of shape {(N, C, nsp)}, got {samples.shape}")
    # PyTorch's order of the samples: (width, height) in 2-d, (time, height, width) in 3-d
    order = (1, 0) if nsp == 2 else (0, 1, 2)
    starts = [_intervals(samples[..., order[j]], sizes[j], out[j], k[j]) for j in range(nsp)]  # (N, C, out_j)
    # flat input index of every (output position, window offset): (N, C, *out, prod(k))
    xp = namespace_of(samples)
    flat = xp.zeros((N, C) + out + (math.prod(k),), dtype=xp.int64)
    mult = 1
    offsets = xp.indices(k).reshape(nsp, -1)
    for j in reversed(range(nsp)):
        shape = (N, C) + tuple(out[i] if i == j else 1 for i in range(nsp)) + (1,)
        pos = starts[j].reshape(shape) + offsets[j]
        flat = flat + pos * mult
        mult *= sizes[j]
    idx = _like(xb, flat.reshape(N, C, -1))
    cols = xb.reshape(N, C, -1).gather(2, idx).reshape((N, C) + out + (math.prod(k),))
    first = cols.argmax(-1, keepdim=True)
    values = cols.gather(-1, first).squeeze(-1)
    indices = _like(xb, flat).reshape((N, C) + out + (math.prod(k),)).gather(-1, first).squeeze(-1)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Max over pseudo-randomly placed windows (Graham's fractional max pooling) of the last two axes.

    ``_random_samples`` (``(N, C, 2)`` in [0, 1)) fixes the placement; by default it is drawn from ``ft``'s
    generator. Example: ``F.fractional_max_pool2d(x, 2, output_ratio=0.5)``.
    """
    return _fractional_max(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, nsp=2)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Fractional max pooling of the last three axes (``_random_samples``: ``(N, C, 3)``).

    Example: ``F.fractional_max_pool3d(x, 2, output_size=(3, 3, 3))``.
    """
    return _fractional_max(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, nsp=3)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> tuple[Tensor, Tensor]:
    """``fractional_max_pool2d`` returning ``(values, flat indices)``. Example:
    ``y, i = F.fractional_max_pool2d_with_indices(x, 2, output_size=4)``."""
    return cast("tuple[Tensor, Tensor]", _fractional_max(input, kernel_size, output_size, output_ratio, True,
                                                          _random_samples, nsp=2))


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> tuple[Tensor, Tensor]:
    """``fractional_max_pool3d`` returning ``(values, flat indices)``. Example:
    ``y, i = F.fractional_max_pool3d_with_indices(x, 2, output_size=3)``."""
    return cast("tuple[Tensor, Tensor]", _fractional_max(input, kernel_size, output_size, output_ratio, True,
                                                          _random_samples, nsp=3))


# --------------------------------------------------------------------------- across channels


def _channel_window_sum(sq: Tensor, before: int, after: int) -> Tensor:
    """``sum(sq[:, c - before : c + after + 1])`` per channel ``c`` (axis 1), zero outside the channels."""
    widths = ((0, 0), (before, after)) + ((0, 0),) * (sq.dim() - 2)
    padded = _run_on_tensors(lambda v: fnp.pad(v, widths), sq)
    C = int(sq.shape[1])
    total = padded[:, 0:C]
    for j in range(1, before + after + 1):
        total = total + padded[:, j:j + C]
    return total


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,  # noqa: A002
                        k: float = 1.0) -> Tensor:
    """``x / (k + alpha * mean of x^2 over size neighbouring channels)^beta`` (AlexNet's normalization).

    Example: ``F.local_response_norm(x, 5)``.
    """
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    total = _channel_window_sum(input * input, size // 2, (size - 1) // 2)
    return input / (total * (alpha / size) + k).pow(beta)


def cross_map_lrn(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,  # noqa: A002
                  k: float = 1.0) -> Tensor:
    """The legacy ``CrossMapLRN2d`` normalization of a 4-d input, window for window as PyTorch's running sum
    computes it: channels ``c - h .. c + h`` with ``h = int((size - 1) / 2 + 1) - 1``, except that channel 0,
    once added, is never taken out again (so it stays in every window).

    Example: ``F.cross_map_lrn(x, 5)`` (``ft.nn.CrossMapLRN2d(5)``).
    """
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    C = int(input.shape[1])
    pre = int((size - 1) / 2 + 1)
    window = np.zeros((C, C), dtype=input._value.dtype)  # window[c, j]: channel j in channel c's sum
    for c in range(C):
        window[c, :min(c + pre, C)] = 1
        window[c, 1:max(c - pre + 1, 1)] = 0
    sq = (input * input).permute(0, 2, 3, 1)  # channels last
    total = sq.matmul(_like(input, window.T)).permute(0, 3, 1, 2)
    return input * (total * (alpha / size) + k).pow(-beta)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """Interleave the channels of ``groups`` groups (ShuffleNet): ``(N, g*c, *) -> (N, c*g, *)``.

    Example: ``F.channel_shuffle(x, 2)``.
    """
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    C = int(input.shape[1])
    if C % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {C} channels and {groups} groups.")
    shape = tuple(input.shape)
    return input.reshape((shape[0], groups, C // groups) + shape[2:]).transpose(1, 2).reshape(shape)


native_channel_shuffle = channel_shuffle


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:  # noqa: A002
    """1-d convolution of a time-batch-channel input: ``input (T, B, C_in)``, ``weight (K, C_in, C_out)``,
    ``bias (C_out,)`` -> ``(T + 2 pad - K + 1, B, C_out)``. Example: ``F.conv_tbc(x, w, b, 1)``."""
    if input.dim() != 3:
        raise RuntimeError(f"Input must have 3 dims: time, batch, in_channel, got shape {list(input.shape)}")
    if weight.dim() != 3:
        raise RuntimeError(f"Weight tensor must have 3 dims: kernel_width, in_channels, out_channels., got shape "
                           f"{list(weight.shape)}")
    if bias.dim() != 1:
        raise RuntimeError(f"Bias must be 1-D, got shape {list(bias.shape)}")
    if int(input.shape[2]) != int(weight.shape[1]):
        raise RuntimeError(f"Input dim 2 (input channels, {int(input.shape[2])}) is not == dim 1 in the weight "
                           f"tensor ({int(weight.shape[1])})")
    out = _run_on_tensors(_fnn.conv1d, input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=int(pad))
    return out.permute(2, 0, 1)
