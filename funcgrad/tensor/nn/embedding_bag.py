"""``embedding_bag``: sums, means or maxima of bags of embedding rows without materializing the
per-index embeddings as a user-visible tensor (the pooling of bag-of-words and recommender models).

Bags are the rows of a 2-d ``input``, or the slices of a 1-d ``input`` that start at ``offsets``.
Sum and mean are one product of a (bags x indices) weighting matrix with the looked-up rows, so the
gradient reaches ``weight`` and ``per_sample_weights``; max picks the first maximum per feature.

Example::

    out = F.embedding_bag(ids, weight, offsets, mode="sum", per_sample_weights=w)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from funcgrad.backend import namespace_of

from ..tensor import Tensor
from ..tensor_helpers import _as_tensor
from .bridge import _renorm_rows_

__all__ = ["embedding_bag"]


def _membership(idx: Any, offsets: Any, include_last_offset: bool) -> tuple[Any, Any]:
    """``(flat indices, member)`` from PyTorch's two input layouts, both on ``idx``'s device: ``member[b, m]``
    says whether index ``m`` belongs to bag ``b`` (built from the bag bounds by comparison, so the offsets are
    never read on the host). The value checks of the offsets run for host arrays only (on a device they
    would read the offsets back)."""
    xp = namespace_of(idx)
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences. However, found offsets of type Tensor")
        B, L = idx.shape
        bag = xp.arange(B * L) // max(L, 1)
        return idx.reshape(-1), bag[None, :] == xp.arange(B)[:, None]
    if idx.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    off = _as_tensor(offsets)._value
    if off.ndim != 1:
        raise ValueError(f"offsets has to be a 1D Tensor, but got Tensor of dimension {off.ndim}")
    off = off.astype(xp.int64)
    M = idx.shape[0]
    starts = off[:-1] if include_last_offset else off
    ends = off[1:] if include_last_offset else xp.concatenate([off[1:], xp.full(1, M, dtype=xp.int64)])
    if xp is np:
        if off.size and off[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                               f"from position 0. However, got {off[0]}")
        if np.any(ends[:-1] > M) or np.any(starts > ends):
            raise RuntimeError(f"offsets must be non-decreasing and at most the number of indices ({M})")
        if include_last_offset and ends.size:
            idx = idx[:ends[-1]]  # the indices after the last offset belong to no bag
    pos = xp.arange(idx.shape[0])
    return idx, (pos[None, :] >= starts[:, None]) & (pos[None, :] < ends[:, None])


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,  # noqa: A002
                  max_norm: float | None = None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """The ``mode`` (``"sum"``, ``"mean"`` or ``"max"``) of each bag of rows of ``weight`` -> ``(bags, D)``.

    ``padding_idx`` entries are left out of their bag (and of its count); an empty bag gives zeros;
    ``per_sample_weights`` (same shape as ``input``) scales each row, with ``mode="sum"`` only.

    Example: ``F.embedding_bag(ft.tensor([1, 2, 4, 5, 4, 3]), w, ft.tensor([0, 3]))`` -> ``(2, D)``.
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag(scale_grad_by_freq/sparse) is not supported by funcgrad.tensor")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    it = _as_tensor(input)
    if it.dtype.is_floating_point:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {it.dtype.name} instead")
    raw = it._value.astype(namespace_of(it._value).int64)
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != raw.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({list(raw.shape)})")
    idx, member = _membership(raw, offsets, include_last_offset)
    xp = namespace_of(idx)
    n = int(weight.shape[0])
    if xp is np and idx.size and (idx.min() < 0 or idx.max() >= n):  # host indices only (a device would read back)
        raise IndexError(f"index out of range in self: embedding_bag of {n} rows takes indices in [0, {n}), got "
                         f"{int(idx.min())} to {int(idx.max())}")
    if max_norm is not None:
        _renorm_rows_(weight, Tensor._make(idx), max_norm, norm_type)
    if padding_idx is not None:
        member = member & (idx != (padding_idx % n))[None, :]
    rows = weight[Tensor._make(idx)]  # (M, D)
    dtype = weight._value.dtype
    if mode == "max":
        big = rows.unsqueeze(0).where(Tensor._make(member[:, :, None]), float("-inf"))
        first = big.argmax(1, keepdim=True)
        out = big.gather(1, first).squeeze(1)
        return out.where(Tensor._make(member.any(1)[:, None]), 0.0)
    scale = member.astype(dtype)
    if mode == "mean":
        scale = scale / xp.maximum(member.sum(1, keepdims=True), 1)
    mix = Tensor._make(scale)
    if per_sample_weights is not None:
        mix = mix * per_sample_weights.reshape(1, -1)[:, :idx.shape[0]]
    return mix.matmul(rows)
