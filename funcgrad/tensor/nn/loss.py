"""Loss modules with PyTorch's arguments (``reduction`` none/sum/mean, class ``weight``,
``ignore_index``, ``label_smoothing``), over ``ft.nn.functional``.

Example::

    loss_fn = ft.nn.CrossEntropyLoss(weight=w, label_smoothing=0.1, ignore_index=-1)
    loss = loss_fn(logits, labels)
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import Module
from . import functional as F

__all__ = ["MSELoss", "L1Loss", "HuberLoss", "SmoothL1Loss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss", "SoftMarginLoss", "MarginRankingLoss", "HingeEmbeddingLoss",
           "CosineEmbeddingLoss", "GaussianNLLLoss", "PoissonNLLLoss"]

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in _REDUCTIONS + (("batchmean",) if isinstance(self, KLDivLoss) else ()):
            raise ValueError(f"{reduction} is not a valid value for reduction")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction}"


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error. Example: ``ft.nn.MSELoss()(pred, target)``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error. Example: ``ft.nn.L1Loss(reduction="sum")(pred, target)``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.l1_loss(input, target, reduction=self.reduction)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear above. Example: ``ft.nn.HuberLoss(delta=0.5)``."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SmoothL1Loss(_Loss):
    """Huber loss divided by ``beta``. Example: ``ft.nn.SmoothL1Loss(beta=0.5)``."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits ``(N, C, ...)`` against class indices or probabilities.

    Example: ``ft.nn.CrossEntropyLoss(label_smoothing=0.1)(logits, y)``.
    """

    def __init__(self, weight: Tensor | None = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities. Example: ``ft.nn.NLLLoss()(F.log_softmax(x, 1), y)``."""

    def __init__(self, weight: Tensor | None = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities. Example: ``ft.nn.BCELoss()(p, t)``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross entropy of logits (stable), with ``pos_weight``. Example: ``ft.nn.BCEWithLogitsLoss()(z, t)``."""

    def __init__(self, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean", pos_weight: Tensor | None = None) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        if self.weight is not None:
            loss = F.binary_cross_entropy_with_logits(input, target, "none", self.pos_weight) * self.weight
            return F._reduce(loss, self.reduction)
        return F.binary_cross_entropy_with_logits(input, target, self.reduction, self.pos_weight)


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities ``input`` from ``target``. Example: ``ft.nn.KLDivLoss("batchmean")``."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-y x))``. Example: ``ft.nn.SoftMarginLoss()(x, y)``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """``max(0, -y (x1 - x2) + margin)``. Example: ``ft.nn.MarginRankingLoss(0.1)(a, b, y)``."""

    def __init__(self, margin: float = 0.0, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """Hinge loss for ``y`` in {1, -1}. Example: ``ft.nn.HingeEmbeddingLoss()(x, y)``."""

    def __init__(self, margin: float = 1.0, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """Cosine-similarity embedding loss for ``y`` in {1, -1}. Example: ``ft.nn.CosineEmbeddingLoss()(a, b, y)``."""

    def __init__(self, margin: float = 0.0, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, self.margin, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood with predicted variance. Example: ``ft.nn.GaussianNLLLoss()(mu, y, var)``."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor) -> Tensor:  # noqa: A002
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood. Example: ``ft.nn.PoissonNLLLoss()(log_rate, counts)``."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average: Any = None, eps: float = 1e-8,
                 reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.poisson_nll_loss(input, target, self.log_input, self.full, eps=self.eps, reduction=self.reduction)
