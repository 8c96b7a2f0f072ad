"""The ``torch`` namespace's forms of neural-network operations (``torch.conv2d``, ``torch.max_pool2d``,
``torch.batch_norm``, ``torch.embedding``, ``torch.dropout``, ``torch.grid_sampler``, ...), with the
argument order and conventions of those forms where they differ from ``torch.nn.functional``'s
(``torch.embedding(weight, input)``; ``torch.batch_norm(input, weight, bias, running_mean, ...)``;
``torch.adaptive_max_pool1d`` always returning indices; integer modes of ``torch.grid_sampler``).
Each calls the ``ft.nn.functional`` function that holds the maths.

Example::

    y = ft.conv2d(x, w, b, padding=1)
    y = ft.max_pool2d(y, 2)
"""

from __future__ import annotations

from typing import Any, cast

from .nn import functional as F
from .tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc",
           "avg_pool1d", "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "adaptive_avg_pool1d",
           "adaptive_max_pool1d", "celu", "celu_", "selu", "selu_", "rrelu", "rrelu_", "hardshrink", "threshold",
           "threshold_", "prelu", "relu_", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
           "native_channel_shuffle", "pdist", "pairwise_distance", "cosine_similarity", "bilinear", "rms_norm",
           "layer_norm", "group_norm", "instance_norm", "batch_norm", "embedding", "embedding_bag", "dropout",
           "dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_dropout",
           "constant_pad_nd", "affine_grid_generator", "grid_sampler", "grid_sampler_2d"]

conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d
conv_tbc = F.conv_tbc
avg_pool1d, adaptive_avg_pool1d = F.avg_pool1d, F.adaptive_avg_pool1d
max_pool1d_with_indices = F.max_pool1d_with_indices
celu, selu, rrelu, rrelu_, hardshrink, threshold, prelu = F.celu, F.selu, F.rrelu, F.rrelu_, F.hardshrink, \
    F.threshold, F.prelu
celu_, selu_, threshold_, relu_ = F.celu_, F.selu_, F.threshold_, F.relu_
pixel_shuffle, pixel_unshuffle, channel_shuffle, native_channel_shuffle = F.pixel_shuffle, F.pixel_unshuffle, \
    F.channel_shuffle, F.native_channel_shuffle
pdist, pairwise_distance, cosine_similarity, bilinear, rms_norm = F.pdist, F.pairwise_distance, \
    F.cosine_similarity, F.bilinear, F.rms_norm
affine_grid_generator = F.affine_grid


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool1d``: the values of ``F.max_pool1d``. Example: ``ft.max_pool1d(x, 2)``."""
    return cast(Tensor, F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode))


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool2d``: the values of ``F.max_pool2d``. Example: ``ft.max_pool2d(x, 2)``."""
    return cast(Tensor, F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode))


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False) -> Tensor:
    """``torch.max_pool3d``: the values of ``F.max_pool3d``. Example: ``ft.max_pool3d(x, 2)``."""
    return cast(Tensor, F.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode))


def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:  # noqa: A002
    """``torch.adaptive_max_pool1d``: ``(values, indices)`` always. Example: ``v, i = ft.adaptive_max_pool1d(x, 3)``."""
    return cast("tuple[Tensor, Tensor]", F.adaptive_max_pool1d_with_indices(input, output_size))


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    """``torch.layer_norm`` (``cudnn_enable`` is accepted and changes nothing). Example: ``ft.layer_norm(x, (4,))``."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,  # noqa: A002
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    """``torch.group_norm``. Example: ``ft.group_norm(x, 2)``."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,  # noqa: A002
                  running_var: Tensor | None, use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool = True) -> Tensor:
    """``torch.instance_norm`` (the affine parameters before the running statistics).

    Example: ``ft.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False)``.
    """
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,  # noqa: A002
               running_var: Tensor | None, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool = True) -> Tensor:
    """``torch.batch_norm`` (the affine parameters before the running statistics).

    Example: ``ft.batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5, False)``.
    """
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def embedding(weight: Tensor, input: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,  # noqa: A002
              sparse: bool = False) -> Tensor:
    """``torch.embedding``: ``weight`` first; ``padding_idx=-1`` means none.

    Example: ``ft.embedding(w, ft.tensor([0, 2]))``.
    """
    return F.embedding(input, weight, None if padding_idx == -1 else padding_idx, None, 2.0, scale_grad_by_freq,
                       sparse)


def embedding_bag(weight: Tensor, input: Tensor, offsets: Tensor, scale_grad_by_freq: bool = False,  # noqa: A002
                  mode: int = 0, sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> tuple[Tensor, ...]:
    """``torch.embedding_bag``: ``weight`` first, ``mode`` 0/1/2 for sum/mean/max; returns a tuple whose first
    entry is the bags (PyTorch's other three are its kernel's workspaces, not offered: only the first).

    Example: ``ft.embedding_bag(w, ids, offsets)[0]``.
    """
    if mode not in (0, 1, 2):
        raise RuntimeError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got {mode}")
    out = F.embedding_bag(input, weight, offsets, None, 2, scale_grad_by_freq, ("sum", "mean", "max")[mode], sparse,
                          per_sample_weights, include_last_offset, padding_idx)
    return (out,)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.dropout(input, p, train)``. Example: ``ft.dropout(x, 0.1, True)``."""
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """In-place ``torch.dropout``. Example: ``ft.dropout_(x, 0.1, True)``."""
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.alpha_dropout(input, p, train)``. Example: ``ft.alpha_dropout(x, 0.1, True)``."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """In-place ``torch.alpha_dropout``. Example: ``ft.alpha_dropout_(x, 0.1, True)``."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.feature_alpha_dropout(input, p, train)``. Example: ``ft.feature_alpha_dropout(x, 0.1, True)``."""
    return F.feature_alpha_dropout(input, p, train)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.feature_dropout``: dropout of whole channels (``(N, C, ...)``). Example: ``ft.feature_dropout(x, 0.1, True)``."""
    return F.dropout2d(input, p, train) if input.dim() == 4 else F.dropout1d(input, p, train) if input.dim() == 3 \
        else F.dropout3d(input, p, train)


def constant_pad_nd(input: Tensor, pad: Any, value: float = 0) -> Tensor:  # noqa: A002
    """``torch.constant_pad_nd``: ``F.pad`` with a constant. Example: ``ft.constant_pad_nd(x, (1, 1), 0.5)``."""
    return F.pad(input, pad, "constant", value)


_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,  # noqa: A002
                 align_corners: bool) -> Tensor:
    """``torch.grid_sampler``: ``F.grid_sample`` with integer modes (0 bilinear, 1 nearest, 2 bicubic; padding
    0 zeros, 1 border, 2 reflection). Example: ``ft.grid_sampler(x, grid, 0, 0, False)``."""
    return F.grid_sample(input, grid, _MODES[interpolation_mode], _PADDINGS[padding_mode], align_corners)


grid_sampler_2d = grid_sampler
