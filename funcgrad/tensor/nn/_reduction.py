"""PyTorch's ``reduction=`` argument of the losses (``none``/``sum``/``mean``, and the deprecated
``size_average``/``reduce`` pair), shared by ``ft.nn.functional``'s loss families."""

from __future__ import annotations

import warnings
from typing import Any

from ..tensor import Tensor


def _legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    """``reduction``, or what PyTorch's deprecated ``size_average``/``reduce`` say when either is given
    (they take precedence, with PyTorch's warning): both true (or None) ``mean``, ``reduce`` alone ``sum``,
    ``reduce=False`` ``none``. Example: ``_legacy_reduction(False, None, "mean") == "sum"``."""
    if size_average is None and reduce is None:
        return reduction
    reduce = reduce is None or bool(reduce)
    legacy = ("mean" if size_average is None or size_average else "sum") if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{legacy}' instead.",
                  UserWarning, stacklevel=3)
    return legacy


def _check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str, wt: Tensor | None = None) -> Tensor:
    """PyTorch's ``reduction=``; with per-sample weights ``wt`` the mean is ``sum(loss) / sum(wt)``."""
    _check_reduction(reduction)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wt.sum() if wt is not None else loss.mean()
