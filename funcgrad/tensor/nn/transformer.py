"""``MultiheadAttention``, ``TransformerEncoderLayer`` and ``TransformerEncoder`` (PyTorch's parameters,
``state_dict`` keys and mask conventions).

Masks follow PyTorch: a boolean ``attn_mask`` / ``key_padding_mask`` is True
where attending is NOT allowed; a float mask is added to the attention logits.
A query whose every key is masked gets NaN, as in PyTorch.

Example::

    mha = ft.nn.MultiheadAttention(16, 4, batch_first=True)
    out, weights = mha(x, x, x, key_padding_mask=pad)      # weights averaged over heads
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable, cast

import numpy as np

from funcgrad.backend import namespace_of

from .. import dtypes as _dt
from ..tensor import Tensor
from ..tensor import _as_tensor
from funcgrad.nn.kernels.attention import attention as _attention

from .dropout import Dropout
from .layers import Linear, _new_param, _np_dtype
from .module import Module
from .bridge import _like
from . import functional as F
from . import init as _init
from .containers import ModuleList
from .norm import LayerNorm

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]


def _additive(mask: Any, like: Tensor) -> Tensor:
    """A PyTorch attention mask as a float tensor added to the logits (bool True -> -inf)."""
    m = _as_tensor(mask)
    if m.dtype is _dt.bool:
        xp = namespace_of(m._value)
        return Tensor._make(xp.where(m._value, -np.inf, 0.0).astype(like._value.dtype))
    return m.to(like.dtype)


class MultiheadAttention(Module):
    """Multi-head attention ``softmax(Q K^T / sqrt(d) + masks) V`` with input and output projections.

    Inputs are ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``, or unbatched
    ``(L, E)``). Returns ``(output, weights)``; ``weights`` is averaged over heads
    unless ``average_attn_weights=False``, and None with ``need_weights=False``.

    Example: ``out, w = ft.nn.MultiheadAttention(8, 2)(q, k, v)``.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention(add_bias_kv/add_zero_attn) is not supported by "
                                      "funcgrad.tensor")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        d = _np_dtype(dtype)
        E = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _new_param(np.empty((3 * E, E), dtype=d))
            _init.xavier_uniform_(self.in_proj_weight)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            for name, n_in in (("q_proj_weight", E), ("k_proj_weight", self.kdim), ("v_proj_weight", self.vdim)):
                w = _new_param(np.empty((E, n_in), dtype=d))
                _init.xavier_uniform_(w)
                setattr(self, name, w)
        self.register_parameter("in_proj_bias", _new_param(np.zeros(3 * E, dtype=d)) if bias else None)
        self.out_proj = Linear(E, E, bias=bias, dtype=dtype)
        if bias:
            _init.zeros_(self.out_proj.bias)

    def _project(self, x: Tensor, i: int) -> Tensor:
        E = self.embed_dim
        w = self.in_proj_weight[i * E:(i + 1) * E] if self._qkv_same_embed_dim else \
            (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)[i]
        b = self.in_proj_bias[i * E:(i + 1) * E] if self.in_proj_bias is not None else None
        return F.linear(x, w, b)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Any, ...]:
        unbatched = query.dim() == 2
        if unbatched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = _as_tensor(key_padding_mask).unsqueeze(0)
        # self-attention with batch_first stays (N, L, E) throughout: no transposes in or out
        packed = query is key and key is value and self._qkv_same_embed_dim
        seq_first = unbatched or not self.batch_first
        if not seq_first and not packed:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
            seq_first = True
        L, N, E = query.shape if seq_first else (query.shape[1], query.shape[0], query.shape[2])
        S = key.shape[0] if seq_first else L
        if E != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {E}")
        H, hd = self.num_heads, self.head_dim
        # one primitive (funcgrad.nn's attention kernel, closed-form backward) unless the weights are asked for
        # or dropped out; masks as an additive bias (a primitive: it takes the Tensors as they are, no bridge boxes)
        kernel = not need_weights and not (self.dropout > 0.0 and self.training)
        # q, k, v: (N*H, L or S, hd), or with the kernel and one projection (N, H, L, hd)
        if packed:  # one projection for the three, viewed as (3, N, H, L, hd)
            qkv = F.linear(query, self.in_proj_weight, self.in_proj_bias)
            heads = (2, 1, 3, 0, 4) if seq_first else (2, 0, 3, 1, 4)
            qkv = qkv.reshape(qkv.shape[0], qkv.shape[1], 3, H, hd).permute(*heads)
            q, k, v = qkv if kernel else qkv.reshape(3, N * H, L, hd)  # (the kernel takes the views as they are)
        else:
            q, k, v = (self._project(t, i).reshape(t.shape[0], N * H, hd).transpose(0, 1)
                       for i, t in enumerate((query, key, value)))
        if is_causal and attn_mask is None:
            attn_mask = _like(query, np.triu(np.ones((L, S), dtype=bool), 1))
        w: Tensor | None = None
        if kernel:
            o = _attention(q, k, v, _bias(attn_mask, key_padding_mask, q, N, H, L, S), 1.0 / math.sqrt(hd))
        else:
            logits = q.matmul(k.transpose(1, 2)) * (1.0 / math.sqrt(hd))  # (N*H, L, S)
            if attn_mask is not None:
                am = _additive(attn_mask, logits)
                if am.dim() == 2:
                    if tuple(am.shape) != (L, S):
                        raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(am.shape)}, but should be {(L, S)}.")
                    am = am.unsqueeze(0)
                elif tuple(am.shape) != (N * H, L, S):
                    raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(am.shape)}, but should be "
                                       f"{(N * H, L, S)}.")
                logits = logits + am
            if key_padding_mask is not None:
                kp = _additive(key_padding_mask, logits)
                if tuple(kp.shape) != (N, S):
                    raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got {tuple(kp.shape)}")
                logits = (logits.reshape(N, H, L, S) + kp.reshape(N, 1, 1, S)).reshape(N * H, L, S)
            w = logits.softmax(-1)
            wd = F.dropout(w, self.dropout, self.training) if self.dropout > 0.0 else w
            o = wd.matmul(v)
        if o.dim() == 4:  # (N, H, L, hd) -> (L, N, H, hd) or (N, L, H, hd) -> (L, N, E) or (N, L, E)
            out = o.permute(2, 0, 1, 3).reshape(L, N, E) if seq_first else o.transpose(1, 2).reshape(N, L, E)
        elif seq_first:
            out = o.transpose(0, 1).reshape(L, N, E)
        else:  # (N*H, L, hd) -> (N, L, H, hd) -> (N, L, E)
            out = o.reshape(N, H, L, hd).transpose(1, 2).reshape(N, L, E)
        out = self.out_proj(out)
        weights = None
        if need_weights and w is not None:
            weights = w.reshape(N, H, L, S)
            if average_attn_weights:
                weights = weights.mean(1)
            if unbatched:
                weights = weights.squeeze(0)
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first and seq_first:
            out = out.transpose(0, 1)
        return out, weights


def _bias(attn_mask: Any, key_padding_mask: Any, q: Tensor, N: int, H: int, L: int, S: int) -> Tensor | None:
    """The attention masks as one additive bias broadcasting to the logits, ``(N*H, L, S)`` or, for ``q`` of
    4 dimensions, ``(N, H, L, S)`` (None without masks)."""
    bias = None
    heads = q.dim() == 4
    if attn_mask is not None:
        bias = _additive(attn_mask, q)
        want = (L, S) if bias.dim() == 2 else (N * H, L, S)
        if tuple(bias.shape) != want:
            raise RuntimeError(f"The shape of the {bias.dim()}D attn_mask is {tuple(bias.shape)}, but should be {want}.")
        if heads and bias.dim() == 3:
            bias = bias.reshape(N, H, L, S)
    if key_padding_mask is not None:
        kp = _additive(key_padding_mask, q)
        if tuple(kp.shape) != (N, S):
            raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got {tuple(kp.shape)}")
        kp = kp.reshape(N, 1, 1, S) if heads else kp.reshape(N, 1, 1, S).expand(N, H, 1, S).reshape(N * H, 1, S)
        bias = kp if bias is None else bias + kp
    return bias


def _activation(a: Any) -> Callable[..., Any]:
    if callable(a):
        return cast("Callable[..., Any]", a)
    if a not in ("relu", "gelu"):
        raise RuntimeError(f"activation should be relu/gelu, not {a}")
    return cast("Callable[..., Any]", getattr(F, a))


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual and a LayerNorm (post-norm by
    default, ``norm_first=True`` for pre-norm). Example: ``ft.nn.TransformerEncoderLayer(16, 4, 32)``."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Any = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def _sa(self, x: Tensor, mask: Any, kpm: Any, is_causal: bool) -> Tensor:
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=kpm, need_weights=False,
                             is_causal=is_causal)[0]
        return cast("Tensor", self.dropout1(out))

    def _ff(self, x: Tensor) -> Tensor:
        return cast("Tensor", self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x))))))

    def forward(self, src: Tensor, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x, src_mask, src_key_padding_mask, is_causal))
        return cast("Tensor", self.norm2(x + self._ff(x)))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (keys ``layers.0.…``) and an optional final ``norm``.

    Example: ``ft.nn.TransformerEncoder(ft.nn.TransformerEncoderLayer(16, 4, 32), num_layers=2)``.
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src: Tensor, mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool | None = None) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x
