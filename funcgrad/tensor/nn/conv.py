"""Convolution modules with PyTorch's arguments, parameter layouts and initialisation.

``Conv{1,2,3}d``: ``weight (out, in // groups, *kernel)``; ``ConvTranspose{1,2}d``:
``weight (in, out // groups, *kernel)``; both with ``bias (out,)``. The maths is
``funcgrad.nn``'s convolution kernels (``funcgrad.nn.kernels.convolution``). ``padding_mode``
``'reflect'``, ``'replicate'`` and ``'circular'`` pad first (``F.pad``), as PyTorch does;
``ConvTranspose{n}d(...)(x, output_size=...)`` picks the output padding that gives that size.

Example::

    conv = ft.nn.Conv2d(1, 8, kernel_size=3, padding=1)
    y = conv(ft.randn(4, 1, 8, 8))      # (4, 8, 8, 8)
"""

from __future__ import annotations

import math
from typing import Any, cast

from ..tensor import Tensor
from .module import _Functional, stored_attr
from .layers import _per_rank, _uniform_param
from . import functional as F
from .functional import _ntuple as _tup

# padding_mode -> F.pad's mode
_PAD_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "replicate", "circular": "circular"}

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
        if padding_mode not in _PAD_MODES:
            raise ValueError(f"padding_mode must be one of {sorted(_PAD_MODES)}, but got padding_mode='{padding_mode}'")
        if padding_mode != "zeros" and self._transposed:
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
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

    def forward(self, input: Tensor) -> Tensor:
        if self.padding_mode == "zeros":  # (_args in one call: the weight and bias from their store)
            return cast(Tensor, type(self)._fn(input, stored_attr(self, "weight"), stored_attr(self, "bias"), self.stride,
                                               self.padding, self.dilation, self.groups))
        # PyTorch: pad with the mode first (the same amounts as the zero padding), then convolve unpadded
        if self.padding == "same":
            pairs = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(self.kernel_size, self.dilation)]
        elif self.padding == "valid":
            pairs = [(0, 0)] * self._n
        else:
            pairs = [(p, p) for p in self.padding]
        flat = [v for lo_hi in reversed(pairs) for v in lo_hi]
        input = F.pad(input, flat, mode=_PAD_MODES[self.padding_mode])
        return cast(Tensor, type(self)._fn(input, self.weight, self.bias, self.stride, 0, self.dilation, self.groups))

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

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        op = self.output_padding if output_size is None else self._output_padding(input, output_size)
        return cast(Tensor, type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                           self.dilation))

    def _output_padding(self, x: Tensor, output_size: Any) -> tuple[int, ...]:
        """PyTorch's rule: the output padding that makes the output ``output_size`` (spatial sizes, optionally
        preceded by batch and channels), within the sizes this stride allows."""
        n = self._n
        want = [int(v) for v in output_size]
        if len(want) == n + 2 or (len(want) == n + 1 and x.dim() == n + 1):
            want = want[-n:]
        if len(want) != n:
            raise ValueError(f"ConvTranspose{n}D: for {x.dim()}D input, output_size must have {n} or {n + 2} elements "
                             f"(got {len(output_size)})")
        spatial = tuple(x.shape[-n:])
        pads = []
        for j in range(n):
            lo = ((spatial[j] - 1) * self.stride[j] - 2 * self.padding[j] + self.dilation[j] * (self.kernel_size[j] - 1)
                  + 1)
            hi = lo + self.stride[j] - 1
            if not lo <= want[j] <= hi:
                raise ValueError(f"requested an output size of {want}, but valid sizes range from {lo} to {hi} "
                                 f"(for an input of {list(spatial)})")
            pads.append(want[j] - lo)
        return tuple(pads)


ConvTranspose1d, ConvTranspose2d, ConvTranspose3d = _per_rank(
    _ConvTransposeNd, "ConvTranspose{n}d", "conv_transpose{n}d",
    "Transposed {n}-d convolution over ``{shape}``. Example: ``ft.nn.ConvTranspose{n}d(8, 4, 3, stride=2)``.")
