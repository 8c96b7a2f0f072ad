"""Pooling modules: ``MaxPool{1,2,3}d``, ``AvgPool{1,2,3}d``, ``AdaptiveAvgPool{1,2,3}d``, ``AdaptiveMaxPool{1,2,3}d``.

Max pools take ``dilation``, ``ceil_mode`` and ``return_indices`` (flat indices into each input plane, as
PyTorch's); average pools take ``ceil_mode``, ``count_include_pad`` and ``divisor_override``.

Example::

    pool = ft.nn.MaxPool2d(2)
    y = pool(ft.randn(1, 3, 8, 8))     # (1, 3, 4, 4)
"""

from __future__ import annotations

from typing import Any, cast

from ..tensor import Tensor
from .module import Module, _Functional
from .layers import _per_rank
from . import functional as F

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


class _Windowed(_Functional):
    """A pool over windows: ``kernel_size``, ``stride`` (the kernel size when None) and ``padding``,
    shown by ``repr``; ``_fn`` is the functional form."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _MaxPool(_Windowed):
    _args = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, stride, padding)
        self.dilation = dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Any:  # a tensor, or (values, indices) with return_indices
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                              self.return_indices)  # (_args in one call)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


MaxPool1d, MaxPool2d, MaxPool3d = _per_rank(_MaxPool, "MaxPool{n}d", "max_pool{n}d",
                                            "Max over windows of ``{shape}``. Example: ``ft.nn.MaxPool{n}d(2)``.")


class AvgPool1d(_Windowed):
    """Mean over windows of ``(N, C, L)``. Example: ``ft.nn.AvgPool1d(3, stride=1, padding=1)``."""

    _fn = staticmethod(F.avg_pool1d)
    _args = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__(kernel_size, stride, padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad


class _AvgPoolNd(_Windowed):
    _args = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: Any = None) -> None:
        super().__init__(kernel_size, stride, padding)
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override


AvgPool2d, AvgPool3d = _per_rank(_AvgPoolNd, "AvgPool{n}d", "avg_pool{n}d",
                                 "Mean over windows of ``{shape}``. Example: ``ft.nn.AvgPool{n}d(2)``.", (2, 3))


class _Adaptive(Module):
    _fn: Any = None

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:  # a tensor, or (values, indices) with return_indices
        if self.return_indices:
            return type(self)._fn(input, self.output_size, True)
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d = _per_rank(
    _Adaptive, "AdaptiveAvgPool{n}d", "adaptive_avg_pool{n}d",
    "Average pooling of ``{shape}`` to a fixed size. Example: ``ft.nn.AdaptiveAvgPool{n}d(1)``.")
AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d = _per_rank(
    _Adaptive, "AdaptiveMaxPool{n}d", "adaptive_max_pool{n}d",
    "Max pooling of ``{shape}`` to a fixed size. Example: ``ft.nn.AdaptiveMaxPool{n}d(2)``.")


class _MaxUnpool(_Windowed):
    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:  # type: ignore[override]
        return cast(Tensor, type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size))


MaxUnpool1d, MaxUnpool2d, MaxUnpool3d = _per_rank(
    _MaxUnpool, "MaxUnpool{n}d", "max_unpool{n}d",
    "Undo ``MaxPool{n}d(return_indices=True)``. Example: ``ft.nn.MaxUnpool{n}d(2)(y, idx)``.")
