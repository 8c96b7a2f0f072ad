"""Margin, ranking and sequence losses of ``torch.nn.functional``: ``multi_margin_loss``,
``multilabel_margin_loss``, ``triplet_margin_with_distance_loss`` and ``ctc_loss`` (the CTC forward
recursion in log space), composed of recorded Tensor operations so they differentiate to any order.

Example::

    loss = F.multi_margin_loss(scores, labels, margin=0.5)
    loss = F.ctc_loss(log_probs, targets, input_lengths, target_lengths)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from funcgrad.backend import namespace_of, to_numpy

from ..tensor import Tensor
from ..tensor_helpers import _as_tensor
from ..ops import cat, stack
from ._reduction import _check_reduction, _legacy_reduction, _reduce
from .bridge import _like

__all__ = ["multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss", "ctc_loss"]


def _classes_2d(input: Tensor, target: Any, name: str) -> tuple[Tensor, Any, bool]:  # noqa: A002
    """``(input as (N, C), target's array on its own device, was 1-d)`` with PyTorch's shape checks."""
    t = _as_tensor(target)._value
    if input.dim() not in (1, 2):
        raise RuntimeError(f"{name}: expected a 1-d or 2-d input of scores, got shape {list(input.shape)}")
    one = input.dim() == 1
    return (input.unsqueeze(0) if one else input), t, one


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,  # noqa: A002
                      weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
                      reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: ``sum_{j != y} max(0, margin - x[y] + x[j])^p / C`` per sample (times ``weight[y]``).

    Example: ``F.multi_margin_loss(scores, labels)``.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x, t, one = _classes_2d(input, target, "multi_margin_loss")
    N, C = int(x.shape[0]), int(x.shape[1])
    t = t.reshape(-1)
    if t.shape != (N,):
        raise RuntimeError(f"inconsistent target size: {list(t.shape)} for input of size: {list(input.shape)}")
    xp = namespace_of(t)
    if xp is np and t.size and (t.min() < 0 or t.max() >= C):  # host targets only (a device would read back)
        raise RuntimeError("target out of range")
    idx = Tensor._make(t.reshape(N, 1))
    picked = x.gather(1, idx)
    hinge = (x - picked + margin).clamp(min=0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * _as_tensor(weight).reshape(-1)[Tensor._make(t)].reshape(N, 1)
    others = Tensor._make((xp.arange(C)[None, :] != t[:, None]).astype(x._value.dtype))
    loss = (hinge * others).sum(1) / C
    return _reduce(loss.squeeze(0) if one else loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
                           reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: the targets are class indices, ended by the first -1; per sample
    ``sum over targets j and non-targets k of max(0, 1 - (x[j] - x[k])) / C``.

    Example: ``F.multilabel_margin_loss(scores, ft.tensor([[3, 0, -1, 1]]))``.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t, one = _classes_2d(input, target, "multilabel_margin_loss")
    N, C = int(x.shape[0]), int(x.shape[1])
    t = t.reshape(N, -1) if t.size else t
    if t.shape != (N, C):
        raise RuntimeError(f"inconsistent target size: {list(t.shape)} for input of size: {list(input.shape)}")
    xp = namespace_of(t)
    listed = xp.cumprod(t >= 0, axis=1).astype(bool)  # each row's targets end at its first negative entry
    if xp is np and np.any(listed & (t >= C)):  # host targets only (a device would read back)
        c = int(t[listed & (t >= C)][0])
        raise RuntimeError(f"multilabel_margin_loss: target index {c} is out of bounds for {C} classes")
    is_target = ((t[:, :, None] == xp.arange(C)) & listed[:, :, None]).any(1)  # (N, C)
    pair = (is_target[:, :, None] & ~is_target[:, None, :]).astype(x._value.dtype)  # (N, j target, k not)
    hinge = (1.0 - (x.unsqueeze(2) - x.unsqueeze(1))).clamp(min=0)
    loss = (hinge * Tensor._make(pair)).sum((1, 2)) / C
    return _reduce(loss.squeeze(0) if one else loss, reduction)


def _pairwise(x1: Tensor, x2: Tensor) -> Tensor:
    """PyTorch's default distance: ``pairwise_distance(x1, x2)`` = ``||x1 - x2 + 1e-6||_2`` over the last axis."""
    return (x1 - x2 + 1e-6).norm(p=2, dim=-1)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any distance ``d`` (default: the Euclidean pairwise
    distance); ``swap`` uses ``min(d(a, n), d(p, n))``.

    Example: ``F.triplet_margin_with_distance_loss(a, p, n, distance_function=lambda x, y: 1 - F.cosine_similarity(x, y))``.
    """
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} "
                         f"instead")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                           f"inputs")
    d = distance_function if distance_function is not None else _pairwise
    d_ap, d_an = d(anchor, positive), d(anchor, negative)
    if swap:
        d_pn = d(positive, negative)
        d_an = d_an.minimum(d_pn)
    return _reduce((d_ap - d_an + margin).clamp(min=0), reduction)


# --------------------------------------------------------------------------- CTC

_NEG = -1e300  # log(0) stand-in: keeps logsumexp and its gradient finite where -inf would give NaN


def _ctc_one(lp: Tensor, labels: Any, T: int, blank: int) -> Tensor:
    """``-log p(labels | lp[:T])`` for one sequence, by the CTC forward recursion over the labels with blanks
    (``labels`` stays on its device: the extended label sequence and its skip mask are built there)."""
    xp = namespace_of(labels)
    L = 2 * labels.shape[0] + 1
    ext = xp.full(L, blank, dtype=xp.int64)
    ext[1::2] = labels
    skip_ok = xp.zeros(L, dtype=bool)
    skip_ok[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    emit = lp[:T][:, _like(lp, ext)]  # (T, L); targets may sit on the host while lp is on a device
    start = np.full(L, _NEG)
    start[:min(2, L)] = 0.0
    alpha = emit[0] + _like(lp, start.astype(lp._value.dtype))
    neg = _like(lp, np.full(1, _NEG, dtype=lp._value.dtype))
    neg2 = _like(lp, np.full(2, _NEG, dtype=lp._value.dtype))
    skip_bias = _like(lp, xp.where(skip_ok, 0.0, _NEG).astype(lp._value.dtype))
    for t in range(1, T):
        stay = alpha
        step = cat([neg, alpha[:-1]]) if L > 1 else neg
        jump = (cat([neg2, alpha[:-2]]) if L > 2 else neg2[:L]) + skip_bias
        alpha = stack([stay, step, jump]).logsumexp(0) + emit[t]
    tail = alpha[-2:] if L > 1 else alpha
    return -tail.logsumexp(0)


def _lengths_on_host(*lengths: Any) -> list[np.ndarray]:
    """The lengths of ``ctc_loss`` as host int64 vectors. They set how many steps each sequence's recursion
    runs and which of its targets it reads: sizes of the computation, so (as in PyTorch, which copies them
    to the CPU too) lengths on a device cross to the host, in ONE explicit read of all of them together."""
    arrays: list[Any] = [v if isinstance(v, (list, tuple, int)) else _as_tensor(v)._value for v in lengths]
    held = [i for i, a in enumerate(arrays) if not isinstance(a, (list, tuple, int)) and namespace_of(a) is not np]
    if held:
        xp = namespace_of(arrays[held[0]])
        parts = [arrays[i].reshape(-1).astype(xp.int64) for i in held]
        flat = to_numpy(xp.concatenate(parts))  # the one device-to-host read of ctc_loss
        for i, piece in zip(held, np.split(flat, np.cumsum([p.shape[0] for p in parts])[:-1])):
            arrays[i] = piece
    return [np.asarray(a).reshape(-1).astype(np.int64) for a in arrays]


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss: ``-log`` of the total probability of all alignments of
    each target with ``log_probs`` (``(T, N, C)`` or ``(T, C)``, log-softmaxed over classes).

    ``targets`` is ``(N, S)`` padded or the 1-d concatenation of the targets; ``reduction="mean"`` divides
    each loss by its target length, then averages over the batch (PyTorch's convention). An impossible
    alignment gives ``inf`` (0 with ``zero_infinity=True``).

    Example: ``F.ctc_loss(lp, tg, ft.tensor([50, 50]), ft.tensor([10, 7]))``.
    """
    _check_reduction(reduction)
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    if lp.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs of shape (T, N, C) or (T, C), got {list(log_probs.shape)}")
    T, N, C = (int(s) for s in lp.shape)
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    tg = _as_tensor(targets)._value
    tg = tg.astype(namespace_of(tg).int64)
    il, tl = _lengths_on_host(input_lengths, target_lengths)
    if unbatched and tg.ndim == 1:
        tg = tg.reshape(1, -1)
    if il.shape != (N,) or tl.shape != (N,):
        raise RuntimeError(f"ctc_loss: expected input_lengths and target_lengths of {N} entries, got {il.shape[0]} "
                           f"and {tl.shape[0]}")
    losses = []
    offset = 0
    for n in range(N):
        if il[n] > T or il[n] < 0:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {il[n]} (while "
                               f"checking arguments for ctc_loss_cpu)")
        labels = tg[n, :tl[n]] if tg.ndim == 2 else tg[offset:offset + tl[n]]
        offset += int(tl[n])
        if tg.ndim == 2 and tl[n] > tg.shape[1]:
            raise RuntimeError(f"Expected tensor to have size at least {tl[n]} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss_cpu)")
        losses.append(_ctc_one(lp[:, n], labels, int(il[n]), blank))
    loss = stack(losses)
    impossible = loss.detach() > 1e299
    if zero_infinity:
        loss = loss.masked_fill(impossible, 0.0)
    else:
        loss = loss.masked_fill(impossible, float("inf"))
    if unbatched:
        loss = loss.squeeze(0)
    if reduction == "mean":
        return (loss / _like(loss, np.maximum(tl, 1).astype(loss._value.dtype).reshape(loss.shape))).mean()
    return _reduce(loss, reduction)
