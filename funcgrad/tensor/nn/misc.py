"""Small layers: padding (``ZeroPad2d``, ``ReflectionPad1d``, ...), ``PixelShuffle``, ``Upsample``,
``Unflatten``, ``Fold``/``Unfold``, ``CosineSimilarity``, ``PairwiseDistance``, ``Hardshrink``,
``Softshrink``, ``RMSNorm``, ``Bilinear``, and two more losses.

Example::

    up = ft.nn.Sequential(ft.nn.Upsample(scale_factor=2, mode="nearest"), ft.nn.ReflectionPad2d(1))
"""

from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from .module import Module, _Functional
from .layers import _const_param, _uniform_param
from . import functional as F
from .loss import _Loss, _WeightedLoss

__all__ = ["ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d",
           "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d", "PixelShuffle",
           "PixelUnshuffle", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "Unflatten", "Fold",
           "Unfold", "CosineSimilarity", "PairwiseDistance", "Hardshrink", "Softshrink", "RMSNorm", "Bilinear",
           "TripletMarginLoss", "MultiLabelSoftMarginLoss", "ZeroPad3d", "ConstantPad3d", "ReflectionPad3d",
           "ReplicationPad3d", "CircularPad3d"]


class _Pad(Module):
    _n = 2
    _mode = "constant"

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        self.padding = (int(padding),) * (2 * self._n) if isinstance(padding, int) else tuple(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode, self.value if self._mode == "constant" else None)

    def extra_repr(self) -> str:
        return f"{self.padding}"


def _pad(name: str, n: int, mode: str) -> type:
    doc = f"Pad the last {n} axes ({mode}), as ``torch.nn.{name}``. Example: ``ft.nn.{name}(1)``."
    return type(name, (_Pad,), {"_n": n, "_mode": mode, "__doc__": doc})


ZeroPad1d = _pad("ZeroPad1d", 1, "constant")
ZeroPad2d = _pad("ZeroPad2d", 2, "constant")
ReflectionPad1d = _pad("ReflectionPad1d", 1, "reflect")
ReflectionPad2d = _pad("ReflectionPad2d", 2, "reflect")
ReplicationPad1d = _pad("ReplicationPad1d", 1, "replicate")
ReplicationPad2d = _pad("ReplicationPad2d", 2, "replicate")
CircularPad1d = _pad("CircularPad1d", 1, "circular")
CircularPad2d = _pad("CircularPad2d", 2, "circular")


class ConstantPad1d(_Pad):
    """Pad the last axis with ``value``. Example: ``ft.nn.ConstantPad1d(2, 3.5)``."""

    _n = 1

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)


class ConstantPad2d(ConstantPad1d):
    """Pad the last two axes with ``value``. Example: ``ft.nn.ConstantPad2d((1, 1, 2, 0), 0.5)``."""

    _n = 2


class PixelShuffle(_Functional):
    """``(*, C r^2, H, W) -> (*, C, H r, W r)``. Example: ``ft.nn.PixelShuffle(2)``."""

    _fn, _args = staticmethod(F.pixel_shuffle), ("upscale_factor",)

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor


class PixelUnshuffle(_Functional):
    """``(*, C, H r, W r) -> (*, C r^2, H, W)``. Example: ``ft.nn.PixelUnshuffle(2)``."""

    _fn, _args = staticmethod(F.pixel_unshuffle), ("downscale_factor",)

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor


class Upsample(_Functional):
    """Resize (``F.interpolate``). Example: ``ft.nn.Upsample(scale_factor=2, mode="bilinear")``."""

    _fn = staticmethod(F.interpolate)
    _args = ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor")

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling. Example: ``ft.nn.UpsamplingNearest2d(scale_factor=2)``."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling with ``align_corners=True``. Example: ``ft.nn.UpsamplingBilinear2d(scale_factor=2)``."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, "bilinear", True)


class Unflatten(Module):
    """Split axis ``dim`` into ``unflattened_size``. Example: ``ft.nn.Unflatten(1, (2, 5))``."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)


class Unfold(_Functional):
    """Sliding windows as columns (``F.unfold``). Example: ``ft.nn.Unfold(3, padding=1)``."""

    _fn, _args = staticmethod(F.unfold), ("kernel_size", "dilation", "padding", "stride")

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride


class Fold(_Functional):
    """Columns summed back into an image (``F.fold``). Example: ``ft.nn.Fold((4, 4), 2)``."""

    _fn, _args = staticmethod(F.fold), ("output_size", "kernel_size", "dilation", "padding", "stride")

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride


class CosineSimilarity(Module):
    """Cosine similarity along ``dim``. Example: ``ft.nn.CosineSimilarity(dim=1)(a, b)``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` over the last axis. Example: ``ft.nn.PairwiseDistance()(a, b)``."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Hardshrink(_Functional):
    """Zero inside ``[-lambd, lambd]``. Example: ``ft.nn.Hardshrink(0.3)``."""

    _fn, _args = staticmethod(F.hardshrink), ("lambd",)

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd


class Softshrink(Hardshrink):
    """Shrink towards zero by ``lambd``. Example: ``ft.nn.Softshrink(0.3)``."""

    _fn = staticmethod(F.softshrink)


class RMSNorm(_Functional):
    """Root-mean-square normalization over the trailing ``normalized_shape`` axes, learned ``weight``.

    Example: ``ft.nn.RMSNorm(64)``.
    """

    _fn, _args = staticmethod(F.rms_norm), ("normalized_shape", "weight", "eps")

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        ns = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        self.register_parameter("weight", _const_param(ns, 1.0, dtype) if elementwise_affine else None)


class Bilinear(Module):
    """``y = x1^T W x2 + b`` with ``weight (out, in1, in2)``. Example: ``ft.nn.Bilinear(3, 4, 2)(a, b)``."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        bound = 1.0 / math.sqrt(in1_features)
        self.weight = _uniform_param((out_features, in1_features, in2_features), bound, dtype)
        self.register_parameter("bias", _uniform_param((out_features,), bound, dtype) if bias else None)

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.bilinear(x1, x2, self.weight, self.bias)


class TripletMarginLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)``. Example: ``ft.nn.TripletMarginLoss(margin=0.5)(a, p, n)``."""

    _fn, _options = staticmethod(F.triplet_margin_loss), ("margin", "p", "eps", "swap")

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label binary cross entropy of logits, averaged over classes. Example: ``ft.nn.MultiLabelSoftMarginLoss()``."""

    _fn = staticmethod(F.multilabel_soft_margin_loss)


ZeroPad3d = _pad("ZeroPad3d", 3, "constant")
ReflectionPad3d = _pad("ReflectionPad3d", 3, "reflect")
ReplicationPad3d = _pad("ReplicationPad3d", 3, "replicate")
CircularPad3d = _pad("CircularPad3d", 3, "circular")


class ConstantPad3d(ConstantPad1d):
    """Pad the last three axes with ``value``. Example: ``ft.nn.ConstantPad3d((1, 1, 2, 0, 1, 0), 0.5)``."""

    _n = 3
