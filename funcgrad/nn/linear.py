"""Dense layers: Linear, MLP, Embedding, Identity.

Weights follow PyTorch's layout and default initialization (``Linear.weight``
is ``(out_features, in_features)``, drawn from ``U(+-1/sqrt(in_features))``),
reproducible from ``key`` (an int seed or a ``numpy.random.Generator``).
Parameters default to float32; pass ``dtype=np.float64`` for float64.

Example::

    lin = fg.nn.Linear(64, 10, key=0)
    mlp = fg.nn.MLP(64, 10, hidden_sizes=(128, 128), key=0)
    emb = fg.nn.Embedding(1000, 32, key=0)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import unbox_all
from . import init as _init
from .dropout import dropout as _dropout
from .functional import relu
from .kernels.dense import dense
from .module import Module, static_field

__all__ = ["Linear", "MLP", "Embedding", "Identity", "linear"]


def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """``x @ weight.T + bias`` over the last axis of ``x`` (PyTorch's ``F.linear``), ``bias`` optional.

    ``weight`` is ``(out_features, in_features)``. Recorded as one node (the ``dense`` kernel:
    one product over every row of ``x``, the bias added in its buffer) when ``x`` and ``weight``
    share a real floating dtype; otherwise as the product and the sum.

    Example::

        y = fg.nn.linear(x, w, b)        # x: (8, 32, 64), w: (10, 64), b: (10,) -> (8, 32, 10)
    """
    x_shape, w_shape = fnp.shape(x), fnp.shape(weight)
    if len(w_shape) != 2 or not x_shape or x_shape[-1] != w_shape[1]:
        raise ValueError(f"linear: weight must be a matrix (out_features, in_features) whose second axis matches "
                         f"the input's last axis; got input shape {x_shape} and weight shape {w_shape}")
    dtype = fnp.result_type(x)
    if dtype == fnp.result_type(weight) and np.issubdtype(dtype, np.floating):
        return dense(x, weight, bias)
    y = fnp.matmul(x, fnp.transpose(weight))
    return y if bias is None else y + bias


class Identity(Module):
    """Returns its input unchanged. Example: ``fg.nn.Identity()(x) is x``."""

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        return x


class Linear(Module):
    """``y = x @ weight.T + bias`` over the last axis (PyTorch's ``Linear``).

    ``weight_init(key, shape, dtype)`` replaces the default initializer (e.g.
    ``fg.nn.init.glorot_uniform``); the bias is ``U(+-1/sqrt(in_features))``
    or ``None`` with ``bias=False``.

    Example::

        lin = fg.nn.Linear(3, 2, key=0)
        lin(np.ones((5, 3), np.float32)).shape      # (5, 2)
    """

    weight: Any
    bias: Any
    in_features: int = static_field()
    out_features: int = static_field()

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, key: Any = None,
                 dtype: Any = np.float32, weight_init: Callable[..., Any] | None = None) -> None:
        if in_features < 1 or out_features < 1:
            raise ValueError(f"Linear: in_features and out_features must be positive, got {in_features}, {out_features}")
        self.in_features, self.out_features = int(in_features), int(out_features)
        g = _init.rng(key)
        self.weight = (weight_init or _init.torch_default)(g, (out_features, in_features), dtype)
        if bias:
            b = 1.0 / math.sqrt(in_features)
            self.bias = _init.uniform(g, (out_features,), dtype, -b, b)
        else:
            self.bias = None

    def __call__(self, x: Any) -> Any:
        shape = fnp.shape(x)
        if not shape or shape[-1] != self.in_features:
            raise ValueError(
                f"Linear({self.in_features} -> {self.out_features}): the input's last axis must have "
                f"length {self.in_features}, got input shape {shape}"
            )
        return linear(x, self.weight, self.bias)


class MLP(Module):
    """A multilayer perceptron: Linear layers with an activation between them.

    ``hidden_sizes`` lists the widths of the hidden layers; ``activation``
    follows each hidden layer and ``final_activation`` (default: none) the
    last. With ``dropout > 0``, dropout follows each hidden activation when the
    call gets a ``key`` (training mode); see :class:`fg.nn.Dropout`.

    Example::

        mlp = fg.nn.MLP(64, 10, hidden_sizes=(128, 128), activation=fg.nn.relu, key=0)
        logits = mlp(x)
        logits = mlp(x, key=step_seed)      # with dropout, in training
    """

    layers: list[Any]
    activation: Callable[..., Any] = static_field()
    final_activation: Any = static_field()
    dropout: float = static_field()

    def __init__(self, in_features: int, out_features: int, hidden_sizes: Sequence[int] = (), *,
                 activation: Callable[..., Any] = relu, final_activation: Callable[..., Any] | None = None, dropout: float = 0.0,
                 bias: bool = True, key: Any = None, dtype: Any = np.float32,
                 weight_init: Callable[..., Any] | None = None) -> None:
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"MLP: dropout must be in [0, 1), got {dropout}")
        g = _init.rng(key)
        sizes = [int(in_features), *[int(h) for h in hidden_sizes], int(out_features)]
        self.layers = [Linear(a, b, bias, key=g, dtype=dtype, weight_init=weight_init)
                       for a, b in zip(sizes[:-1], sizes[1:])]
        self.activation = activation
        self.final_activation = final_activation
        self.dropout = float(dropout)

    _fg_stochastic = True

    def __call__(self, x: Any, *, key: Any = None, training: bool | None = None) -> Any:
        g = _init.rng(key) if key is not None else None
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
            if self.dropout:
                x = _dropout(x, self.dropout, key=g, training=training)
        x = self.layers[-1](x)
        if self.final_activation is not None:
            x = self.final_activation(x)
        return x


class Embedding(Module):
    """A lookup table: integer ids -> rows of ``weight`` (``(num_embeddings, embedding_dim)``).

    Initialized from ``N(0, 1)`` as in PyTorch. Gradients flow into the rows
    that were looked up.

    Example::

        emb = fg.nn.Embedding(100, 16, key=0)
        emb(np.array([[1, 2], [3, 4]])).shape     # (2, 2, 16)
    """

    weight: Any
    num_embeddings: int = static_field()
    embedding_dim: int = static_field()

    def __init__(self, num_embeddings: int, embedding_dim: int, *, key: Any = None, dtype: Any = np.float32,
                 weight_init: Callable[..., Any] | None = None) -> None:
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        shape = (self.num_embeddings, self.embedding_dim)
        self.weight = weight_init(_init.rng(key), shape, dtype) if weight_init else _init.normal(key, shape, dtype)

    def __call__(self, ids: Any) -> Any:
        if isinstance(ids, (int, np.integer, list, tuple)):
            ids = np.asarray(ids)
        kind = fnp.result_type(ids).kind
        if kind not in "iu":
            raise TypeError(f"Embedding: ids must be integers, got dtype {fnp.result_type(ids)}")
        # Checked on every backend (and for all examples under vmap): a negative id
        # would silently pick a row from the end, as NumPy indexing does.
        raw = unbox_all(ids)
        xp = namespace_of(raw)
        if raw.size and bool(xp.any((raw < 0) | (raw >= self.num_embeddings))):
            raise IndexError(
                f"Embedding({self.num_embeddings}, {self.embedding_dim}): ids must lie in "
                f"[0, {self.num_embeddings}), got ids from {int(raw.min())} to {int(raw.max())}"
            )
        return fnp.take(self.weight, ids, axis=0)
