"""Dropout modules: ``Dropout``, ``Dropout1d/2d/3d`` (whole channels) and ``AlphaDropout`` (for SELU networks).

Identity in eval mode. Random masks come from ft's generator, so they differ
from PyTorch's for the same seed.

Example::

    drop = ft.nn.Dropout2d(0.25)
    y = drop(x)          # training: channels zeroed, the rest scaled by 1/(1-p)
"""

from __future__ import annotations

from ..tensor import Tensor
from .bridge import _check_dropout_p, _maybe_inplace
from .module import _Functional
from .layers import _per_rank
from . import functional as F

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"]


class _DropoutNd(_Functional):
    _args = ("p", "training")

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        _check_dropout_p(p)
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return _maybe_inplace(input, super().forward, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes elements with probability ``p`` in training mode (scaled by ``1/(1-p)``); identity in eval mode.

    Example: ``ft.nn.Dropout(0.1)``.
    """

    _fn = staticmethod(F.dropout)


Dropout1d, Dropout2d, Dropout3d = _per_rank(_DropoutNd, "Dropout{n}d", "dropout{n}d",
                                            "Zero whole channels of ``{shape}``. Example: ``ft.nn.Dropout{n}d(0.2)``.")


class AlphaDropout(_DropoutNd):
    """Dropout that keeps a SELU network's mean and variance. Example: ``ft.nn.AlphaDropout(0.1)``."""

    _fn = staticmethod(F.alpha_dropout)
