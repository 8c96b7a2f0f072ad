"""Module forms of the window and channel operations in ``window_ops``: ``LPPool1d/2d/3d``,
``FractionalMaxPool2d/3d``, ``LocalResponseNorm``, ``CrossMapLRN2d`` and ``ChannelShuffle``, plus the
random-slope ``RReLU`` and ``FeatureAlphaDropout`` (from ``noise_ops``).

Example::

    features = ft.nn.Sequential(ft.nn.Conv2d(3, 64, 11, 4, 2), ft.nn.ReLU(), ft.nn.LocalResponseNorm(5),
                                ft.nn.LPPool2d(2, 3, stride=2))
"""

from __future__ import annotations

from typing import Any, cast

from ..tensor import Tensor
from .bridge import _check_dropout_p, _maybe_inplace
from .module import Module
from . import noise_ops, window_ops

__all__ = ["LPPool1d", "LPPool2d", "LPPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d", "LocalResponseNorm",
           "CrossMapLRN2d", "ChannelShuffle", "RReLU", "FeatureAlphaDropout"]


class _LPPool(Module):
    _fn: Any

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return cast("Tensor", type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                                              self.ceil_mode))

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    """Power-average pooling of the last axis. Example: ``ft.nn.LPPool1d(2, 3, stride=2)``."""

    _fn = staticmethod(window_ops.lp_pool1d)


class LPPool2d(_LPPool):
    """Power-average pooling of the last two axes. Example: ``ft.nn.LPPool2d(2, (3, 2))``."""

    _fn = staticmethod(window_ops.lp_pool2d)


class LPPool3d(_LPPool):
    """Power-average pooling of the last three axes. Example: ``ft.nn.LPPool3d(1, 2)``."""

    _fn = staticmethod(window_ops.lp_pool3d)


class _FractionalMaxPool(Module):
    _fn: Any
    _n = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if output_ratio is not None:
            ratio = (output_ratio,) * self._n if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
            if not all(0 < r < 1 for r in ratio):
                raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")
        self.kernel_size, self.output_size, self.output_ratio = kernel_size, output_size, output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                              _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPool):
    """Fractional max pooling of the last two axes. Example: ``ft.nn.FractionalMaxPool2d(3, output_ratio=0.5)``."""

    _fn = staticmethod(window_ops.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPool):
    """Fractional max pooling of the last three axes. Example: ``ft.nn.FractionalMaxPool3d(2, output_size=4)``."""

    _fn = staticmethod(window_ops.fractional_max_pool3d)
    _n = 3


class LocalResponseNorm(Module):
    """Normalization by the energy of neighbouring channels. Example: ``ft.nn.LocalResponseNorm(5)``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return window_ops.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """The legacy cross-channel normalization of 4-d inputs (Lua Torch's). Example: ``ft.nn.CrossMapLRN2d(5)``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return window_ops.cross_map_lrn(input, self.size, self.alpha, self.beta, self.k)


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups. Example: ``ft.nn.ChannelShuffle(2)``."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return window_ops.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class RReLU(Module):
    """Randomized leaky ReLU (random slopes in training, their mean in evaluation). Example: ``ft.nn.RReLU()``."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return noise_ops.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class FeatureAlphaDropout(Module):
    """Alpha dropout of whole channels. Example: ``ft.nn.FeatureAlphaDropout(0.2)``."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        _check_dropout_p(p)
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _maybe_inplace(input, lambda t: noise_ops.feature_alpha_dropout(t, self.p, self.training), self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
