"""Loss modules with PyTorch's arguments (``reduction`` none/sum/mean, class ``weight``,
``ignore_index``, ``label_smoothing``), over ``ft.nn.functional``.

Example::

    loss_fn = ft.nn.CrossEntropyLoss(weight=w, label_smoothing=0.1, ignore_index=-1)
    loss = loss_fn(logits, labels)
"""

from __future__ import annotations

from typing import Any, cast

from ..tensor import Tensor
from .module import Module, stored_attr
from . import functional as F
from ._reduction import _legacy_reduction

__all__ = ["MSELoss", "L1Loss", "HuberLoss", "SmoothL1Loss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss", "SoftMarginLoss", "MarginRankingLoss", "HingeEmbeddingLoss",
           "CosineEmbeddingLoss", "GaussianNLLLoss", "PoissonNLLLoss"]

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    """A loss module: ``forward`` is the functional form ``_fn`` with the module's ``reduction`` and, by
    keyword, the attributes named in ``_options``."""

    _fn: Any
    _options: tuple[str, ...] = ()

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__()
        reduction = _legacy_reduction(size_average, reduce, reduction)
        if reduction not in _REDUCTIONS + (("batchmean",) if isinstance(self, KLDivLoss) else ()):
            raise ValueError(f"{reduction} is not a valid value for reduction")
        self.reduction = reduction

    def forward(self, *args: Any, **kwargs: Any) -> Tensor:
        options = {k: stored_attr(self, k) for k in self._options}
        return cast(Tensor, type(self)._fn(*args, reduction=self.reduction, **options, **kwargs))

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction}"


class _WeightedLoss(_Loss):
    _options: tuple[str, ...] = ("weight",)

    def __init__(self, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class _MarginLoss(_Loss):
    _options: tuple[str, ...] = ("margin",)

    def __init__(self, margin: float = 0.0, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class MSELoss(_Loss):
    """Mean squared error. Example: ``ft.nn.MSELoss()(pred, target)``."""

    _fn = staticmethod(F.mse_loss)


class L1Loss(_Loss):
    """Mean absolute error. Example: ``ft.nn.L1Loss(reduction="sum")(pred, target)``."""

    _fn = staticmethod(F.l1_loss)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear above. Example: ``ft.nn.HuberLoss(delta=0.5)``."""

    _fn, _options = staticmethod(F.huber_loss), ("delta",)

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta


class SmoothL1Loss(_Loss):
    """Huber loss divided by ``beta``. Example: ``ft.nn.SmoothL1Loss(beta=0.5)``."""

    _fn, _options = staticmethod(F.smooth_l1_loss), ("beta",)

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits ``(N, C, ...)`` against class indices or probabilities.

    Example: ``ft.nn.CrossEntropyLoss(label_smoothing=0.1)(logits, y)``.
    """

    _fn, _options = staticmethod(F.cross_entropy), ("weight", "ignore_index", "label_smoothing")

    def __init__(self, weight: Tensor | None = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # (_Loss.forward's, without building the options)
        return F.cross_entropy(input, target, stored_attr(self, "weight"), ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities. Example: ``ft.nn.NLLLoss()(F.log_softmax(x, 1), y)``."""

    _fn, _options = staticmethod(F.nll_loss), ("weight", "ignore_index")

    def __init__(self, weight: Tensor | None = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities. Example: ``ft.nn.BCELoss()(p, t)``."""

    _fn = staticmethod(F.binary_cross_entropy)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross entropy of logits (stable), with ``pos_weight``. Example: ``ft.nn.BCEWithLogitsLoss()(z, t)``."""

    _fn, _options = staticmethod(F.binary_cross_entropy_with_logits), ("weight", "pos_weight")

    def __init__(self, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean", pos_weight: Tensor | None = None) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities ``input`` from ``target``. Example: ``ft.nn.KLDivLoss("batchmean")``."""

    _fn, _options = staticmethod(F.kl_div), ("log_target",)

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-y x))``. Example: ``ft.nn.SoftMarginLoss()(x, y)``."""

    _fn = staticmethod(F.soft_margin_loss)


class MarginRankingLoss(_MarginLoss):
    """``max(0, -y (x1 - x2) + margin)``. Example: ``ft.nn.MarginRankingLoss(0.1)(a, b, y)``."""

    _fn = staticmethod(F.margin_ranking_loss)


class HingeEmbeddingLoss(_MarginLoss):
    """Hinge loss for ``y`` in {1, -1}. Example: ``ft.nn.HingeEmbeddingLoss()(x, y)``."""

    _fn = staticmethod(F.hinge_embedding_loss)

    def __init__(self, margin: float = 1.0, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)


class CosineEmbeddingLoss(_MarginLoss):
    """Cosine-similarity embedding loss for ``y`` in {1, -1}. Example: ``ft.nn.CosineEmbeddingLoss()(a, b, y)``."""

    _fn = staticmethod(F.cosine_embedding_loss)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood with predicted variance. Example: ``ft.nn.GaussianNLLLoss()(mu, y, var)``."""

    _fn, _options = staticmethod(F.gaussian_nll_loss), ("full", "eps")

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood. Example: ``ft.nn.PoissonNLLLoss()(log_rate, counts)``."""

    _fn, _options = staticmethod(F.poisson_nll_loss), ("log_input", "full", "eps")

    def __init__(self, log_input: bool = True, full: bool = False, size_average: Any = None, eps: float = 1e-8,
                 reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps
