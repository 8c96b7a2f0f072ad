"""``ft.nn.Embedding``: a lookup table with PyTorch's ``padding_idx`` and ``max_norm``.

Example::

    emb = ft.nn.Embedding(10, 4, padding_idx=0)
    vecs = emb(ft.tensor([[0, 2, 5]]))      # (1, 3, 4); row 0 is zeros and gets no gradient
"""

from __future__ import annotations

from typing import Any

from ..creation import default_generator
from ..tensor import Tensor
from .module import Module
from .parameter import Parameter
from .layers import _new_param, _np_dtype
from . import functional as F

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(Module):
    """``num_embeddings`` vectors of size ``embedding_dim`` (standard normal initialisation, as in PyTorch)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            d = _np_dtype(dtype)
            w = default_generator._rng.standard_normal((num_embeddings, embedding_dim)).astype(d)
            if padding_idx is not None:
                w[padding_idx] = 0
            self.weight = _new_param(w, requires_grad=not _freeze)
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> "Embedding":
        """An Embedding holding ``embeddings`` (frozen by default). Example: ``Embedding.from_pretrained(w)``."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        n, d = embeddings.shape
        return cls(n, d, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=Tensor._make(embeddings._value.copy()), _freeze=freeze)

    def forward(self, idx: Tensor) -> Tensor:
        return F.embedding(idx, self.weight, self.padding_idx, self.max_norm, self.norm_type)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        return s


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (``F.embedding_bag``), without the per-index embeddings.

    Example: ``ft.nn.EmbeddingBag(10, 3, mode="sum")(ft.tensor([1, 2, 4, 5]), ft.tensor([0, 2]))`` -> ``(2, 3)``.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 _weight: Tensor | None = None, include_last_offset: bool = False, padding_idx: int | None = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset, self.padding_idx = mode, sparse, include_last_offset, \
            padding_idx
        if _weight is None:
            w = default_generator._rng.standard_normal((num_embeddings, embedding_dim)).astype(_np_dtype(dtype))
            if padding_idx is not None:
                w[padding_idx] = 0
            self.weight = _new_param(w)
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> "EmbeddingBag":
        """An EmbeddingBag holding ``embeddings`` (frozen by default). Example: ``EmbeddingBag.from_pretrained(w)``."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        n, d = embeddings.shape
        bag = cls(n, d, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  _weight=Tensor._make(embeddings._value.copy()), include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag

    def forward(self, input: Tensor, offsets: Tensor | None = None,  # noqa: A002
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
