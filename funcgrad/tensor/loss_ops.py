"""The ``torch`` namespace's forms of the losses (``torch.kl_div``, ``torch.binary_cross_entropy_with_logits``,
``torch.margin_ranking_loss``, ...): ``torch.nn.functional``'s losses with the reduction given as PyTorch's
enum integer (0: ``"none"``, 1: ``"mean"``, 2: ``"sum"``) and the argument order of those forms
(``torch.poisson_nll_loss(input, target, log_input, full, eps, reduction)``, all required). Unlike
``torch.nn.functional``'s, these forms default to no reduction (0), as PyTorch's do. Each calls the
``ft.nn.functional`` loss that holds the maths.

Example::

    loss = ft.kl_div(log_q, p, 2)                     # summed; F.kl_div(log_q, p, reduction="sum")
"""

from __future__ import annotations

from typing import Any

from .nn import functional as F
from .tensor import Tensor

__all__ = ["binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "hinge_embedding_loss",
           "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "ctc_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction: Any) -> str:
    """PyTorch's reduction enum (0, 1, 2) as the string ``torch.nn.functional`` takes (a string passes)."""
    if isinstance(reduction, str):
        return reduction
    if isinstance(reduction, bool) or reduction not in (0, 1, 2):
        raise ValueError(f"{reduction} is not a valid value for reduction: expected 0 (none), 1 (mean) or 2 (sum)")
    return _REDUCTIONS[int(reduction)]


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                     pos_weight: Tensor | None = None, reduction: Any = 0) -> Tensor:
    """``F.binary_cross_entropy_with_logits`` (weight, pos_weight, reduction enum)."""
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def kl_div(input: Tensor, target: Tensor, reduction: Any = 0, *, log_target: bool = False) -> Tensor:  # noqa: A002
    """``F.kl_div`` (reduction enum; 1 is the elementwise mean, as ``"mean"``; default: none)."""
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,  # noqa: A002
                     reduction: Any) -> Tensor:
    """``F.poisson_nll_loss`` with every option given, in PyTorch's order."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,  # noqa: A002
                         reduction: Any = 0) -> Tensor:
    """``F.hinge_embedding_loss`` (reduction enum)."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: Any = 0) -> Tensor:
    """``F.cosine_embedding_loss`` (reduction enum)."""
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: Any = 0) -> Tensor:
    """``F.margin_ranking_loss`` (reduction enum)."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: Any = 0) -> Tensor:
    """``F.triplet_margin_loss`` (reduction enum)."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: Any = 0, zero_infinity: bool = False) -> Tensor:
    """``F.ctc_loss`` (reduction enum)."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction), zero_infinity)
