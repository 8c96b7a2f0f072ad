"""Convolution modules with PyTorch's arguments, parameter layouts and initialisation.

``Conv{1,2,3}d``: ``weight (out, in // groups, *kernel)``; ``ConvTranspose{1,2}d``:
``weight (in, out // groups, *kernel)``; both with ``bias (out,)``. The maths is
``funcgrad.nn.conv`` / ``col2im``.

Example::

    conv = ft.nn.Conv2d(1, 8, kernel_size=3, padding=1)
    y = conv(ft.randn(4, 1, 8, 8))      # (4, 8, 8, 8)
"""

from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from .module import _Functional
from .layers import _per_rank, _uniform_param
from .functional import _ntuple as _tup

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvNd(_Functional):
    _n = 2
    _transposed = False
    _args: tuple[str, ...] = ("weight", "bias", "stride", "padding", "dilation", "groups")

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None, output_padding: Any = 0) -> None:
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode={padding_mode!r} is not supported by funcgrad.tensor "
                                      f"(pad with ft.nn.functional.pad first)")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _tup(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tup(kernel_size, n)
        self.stride = _tup(stride, n)
        self.padding = padding if isinstance(padding, str) else _tup(padding, n)
        self.dilation = _tup(dilation, n)
        self.output_padding = _tup(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        # weight (out, in // groups, *kernel), transposed (in, out // groups, *kernel)
        lead, split = (in_channels, out_channels) if self._transposed else (out_channels, in_channels)
        shape = (lead, split // groups) + self.kernel_size
        fan_in = split // groups * math.prod(self.kernel_size)
        # PyTorch's default: kaiming_uniform(a=sqrt(5)) = uniform(+-1/sqrt(fan_in)); the same bound for the bias
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = _uniform_param(shape, bound, dtype)
        self.register_parameter("bias", _uniform_param((out_channels,), bound, dtype) if bias else None)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        for name, default in (("padding", (0,) * self._n), ("dilation", (1,) * self._n), ("groups", 1)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        if self.bias is None:
            s += ", bias=False"
        return s


Conv1d, Conv2d, Conv3d = _per_rank(_ConvNd, "Conv{n}d", "conv{n}d",
                                   "{n}-d convolution over ``{shape}``. Example: ``ft.nn.Conv{n}d(1, 8, 3, padding=1)``.")


class _ConvTransposeNd(_ConvNd):
    _transposed = True
    _args = ("weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if isinstance(padding, str):
            raise ValueError(f"padding={padding!r} is not supported for ConvTranspose{self._n}d")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, output_padding)

    def forward(self, x: Tensor, output_size: Any = None) -> Tensor:
        return super().forward(x)


ConvTranspose1d, ConvTranspose2d, ConvTranspose3d = _per_rank(
    _ConvTransposeNd, "ConvTranspose{n}d", "conv_transpose{n}d",
    "Transposed {n}-d convolution over ``{shape}``. Example: ``ft.nn.ConvTranspose{n}d(8, 4, 3, stride=2)``.")
