"""Dropout variants: ``Dropout1d/2d/3d`` (whole channels) and ``AlphaDropout`` (for SELU networks).

Identity in eval mode. Random masks come from ft's generator, so they differ
from PyTorch's for the same seed.

Example::

    drop = ft.nn.Dropout2d(0.25)
    y = drop(x)          # training: channels zeroed, the rest scaled by 1/(1-p)
"""

from __future__ import annotations

from typing import Any, cast

from ..tensor import Tensor
from . import Module, _maybe_inplace
from . import functional as F

__all__ = ["Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"]


class _DropoutNd(Module):
    _fn: Any = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x: Tensor) -> Tensor:
        return _maybe_inplace(x, lambda t: type(self)._fn(t, self.p, self.training), self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)``. Example: ``ft.nn.Dropout1d(0.2)``."""

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)``. Example: ``ft.nn.Dropout2d(0.2)``."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)``. Example: ``ft.nn.Dropout3d(0.2)``."""

    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps a SELU network's mean and variance. Example: ``ft.nn.AlphaDropout(0.1)``."""

    _fn = staticmethod(F.alpha_dropout)
