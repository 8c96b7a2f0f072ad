"""Multi-head attention (scaled dot-product), batch-first.

Example::

    mha = fg.nn.MultiheadAttention(embed_dim=32, num_heads=4, key=0)
    out = mha(x, x, x)                             # self-attention, x: (batch, seq, 32)
    out = mha(q, k, v, mask=causal_mask)           # mask: True where attending is allowed
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from . import init as _init
from .dropout import dropout as _dropout
from .functional import softmax
from .kernels.attention import attention
from .linear import Linear
from .module import Module, static_field

__all__ = ["MultiheadAttention", "dot_product_attention", "causal_mask"]


def causal_mask(length: int, kv_length: int | None = None) -> np.ndarray:
    """Boolean ``(length, kv_length)`` mask, True on and below the diagonal.

    Example::

        fg.nn.causal_mask(3)     # lower-triangular True
    """
    kv = length if kv_length is None else kv_length
    return np.tril(np.ones((length, kv), dtype=bool), k=kv - length)


def dot_product_attention(q: Any, k: Any, v: Any, mask: Any = None, *, dropout_rate: float = 0.0,
                          key: Any = None, training: bool | None = None, return_weights: bool = False) -> Any:
    """``softmax(q k^T / sqrt(d) [masked]) v`` over the last two axes.

    ``q``: ``(..., L, d)``, ``k``: ``(..., S, d)``, ``v``: ``(..., S, dv)``;
    ``mask`` broadcasts to ``(..., L, S)`` and is True where attending is
    allowed (the JAX convention; PyTorch's boolean ``attn_mask`` is the
    opposite). A row with nothing allowed gets uniform weights, not NaN.

    Example::

        out = fg.nn.dot_product_attention(q, k, v, mask=fg.nn.causal_mask(L))
    """
    d = fnp.shape(q)[-1]
    scale = 1.0 / math.sqrt(d)
    if mask is not None:
        big = float(np.finfo(fnp.result_type(q, k)).min) / 2
        xp = namespace_of(q)
        mask = mask if xp is np or not isinstance(mask, np.ndarray) else xp.asarray(mask)
    dropping = bool(dropout_rate) and (training is True or (training is None and key is not None))
    if not dropping and not return_weights:  # one primitive, closed-form backward
        bias = None if mask is None else fnp.astype(fnp.where(mask, 0.0, big), fnp.result_type(q, k))
        return attention(q, k, v, bias, scale)
    logits = fnp.matmul(q, fnp.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        logits = fnp.where(mask, logits, big)
    weights = softmax(logits, axis=-1)
    if dropout_rate:
        weights = _dropout(weights, dropout_rate, key=key, training=training)
    out = fnp.matmul(weights, v)
    return (out, weights) if return_weights else out


class MultiheadAttention(Module):
    """Multi-head attention with input and output projections (batch-first).

    ``query``: ``(..., L, embed_dim)``; ``key``/``value``: ``(..., S, kdim/vdim)``.
    ``mask`` (True = may attend) has shape ``(L, S)`` or ``(*batch, L, S)`` and
    is the same for every head; ``causal=True`` adds a causal mask. Attention dropout is active in training
    mode, i.e. when ``dropout_key`` is given (see :class:`fg.nn.Dropout`).

    Example::

        mha = fg.nn.MultiheadAttention(32, 4, key=0)
        y = mha(x, x, x, causal=True)
        y, w = mha(x, x, x, return_weights=True)        # w: (batch, heads, L, S)
    """

    q_proj: Linear
    k_proj: Linear
    v_proj: Linear
    out_proj: Linear
    embed_dim: int = static_field()
    num_heads: int = static_field()
    dropout: float = static_field()

    _fg_stochastic = True

    def __init__(self, embed_dim: int, num_heads: int, *, kdim: int | None = None, vdim: int | None = None,
                 dropout: float = 0.0, bias: bool = True, key: Any = None, dtype: Any = np.float32) -> None:
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: num_heads ({num_heads}) must divide embed_dim ({embed_dim})")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1), got {dropout}")
        g = _init.rng(key)
        self.embed_dim, self.num_heads, self.dropout = int(embed_dim), int(num_heads), float(dropout)
        gl = _init.glorot_uniform
        self.q_proj = Linear(embed_dim, embed_dim, bias, key=g, dtype=dtype, weight_init=gl)
        self.k_proj = Linear(kdim or embed_dim, embed_dim, bias, key=g, dtype=dtype, weight_init=gl)
        self.v_proj = Linear(vdim or embed_dim, embed_dim, bias, key=g, dtype=dtype, weight_init=gl)
        self.out_proj = Linear(embed_dim, embed_dim, bias, key=g, dtype=dtype)

    def _heads(self, x: Any) -> Any:
        shape = fnp.shape(x)
        h = self.num_heads
        x = fnp.reshape(x, shape[:-1] + (h, shape[-1] // h))
        return fnp.swapaxes(x, -2, -3)  # (..., heads, seq, head_dim)

    def __call__(self, query: Any, key: Any, value: Any, *, mask: Any = None, causal: bool = False,
                 dropout_key: Any = None, training: bool | None = None, return_weights: bool = False) -> Any:
        q = self._heads(self.q_proj(query))
        k = self._heads(self.k_proj(key))
        v = self._heads(self.v_proj(value))
        if mask is not None and fnp.ndim(mask) >= 3:
            mask = fnp.expand_dims(mask, -3)  # (..., L, S) -> (..., 1, L, S): same mask for every head
        if causal:
            cm = causal_mask(fnp.shape(q)[-2], fnp.shape(k)[-2])
            mask = cm if mask is None else fnp.logical_and(mask, cm)
        res = dot_product_attention(q, k, v, mask, dropout_rate=self.dropout, key=dropout_key,
                                    training=training, return_weights=return_weights)
        out, w = res if return_weights else (res, None)
        out = fnp.swapaxes(out, -2, -3)  # (..., seq, heads, head_dim)
        shape = fnp.shape(out)
        out = self.out_proj(fnp.reshape(out, shape[:-2] + (self.embed_dim,)))
        return (out, w) if return_weights else out
