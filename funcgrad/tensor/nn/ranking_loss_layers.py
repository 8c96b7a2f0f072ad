"""Module forms of the margin, ranking and sequence losses (``MultiMarginLoss``,
``MultiLabelMarginLoss``, ``TripletMarginWithDistanceLoss``, ``CTCLoss``) and PyTorch's deprecated
alias ``NLLLoss2d``.

Example::

    ctc = ft.nn.CTCLoss(blank=0, zero_infinity=True)
    loss = ctc(log_probs, targets, input_lengths, target_lengths)
"""

from __future__ import annotations

from typing import Any, Callable

from ..tensor import Tensor
from .loss import NLLLoss, _Loss, _WeightedLoss
from . import ranking_losses

__all__ = ["MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss", "NLLLoss2d"]


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss. Example: ``ft.nn.MultiMarginLoss(p=2, margin=0.5)(scores, labels)``."""

    _fn, _options = staticmethod(ranking_losses.multi_margin_loss), ("p", "margin", "weight")

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean") -> None:
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        super().__init__(weight, size_average, reduce, reduction)
        self.p, self.margin = p, margin


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over class-index targets ended by -1. Example: ``ft.nn.MultiLabelMarginLoss()``."""

    _fn = staticmethod(ranking_losses.multilabel_margin_loss)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance function. Example:
    ``ft.nn.TripletMarginWithDistanceLoss(distance_function=ft.nn.PairwiseDistance(p=1))``."""

    _fn, _options = staticmethod(ranking_losses.triplet_margin_with_distance_loss), (
        "distance_function", "margin", "swap")

    def __init__(self, *, distance_function: Callable[[Tensor, Tensor], Tensor] | None = None, margin: float = 1.0,
                 swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             f"instead")
        self.distance_function, self.margin, self.swap = distance_function, margin, swap


class CTCLoss(_Loss):
    """Connectionist temporal classification loss. Example: ``ft.nn.CTCLoss()(lp, targets, in_lens, tgt_lens)``."""

    _fn, _options = staticmethod(ranking_losses.ctc_loss), ("blank", "zero_infinity")

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity


class NLLLoss2d(NLLLoss):
    """PyTorch's deprecated alias of ``NLLLoss`` for ``(N, C, H, W)`` inputs. Example: ``ft.nn.NLLLoss2d()``."""


