"""funcgrad.nn: modules as pytrees, layers, initializers and functional ops.

A model is a :class:`Module`: a dataclass-like pytree whose array fields are
its parameters. ``fg.grad(loss)(model, x, y)`` returns a gradient shaped like
the model; optimizers from :mod:`funcgrad.optim` update it functionally;
``fg.save``/``fg.load`` checkpoint it.

Example::

    import numpy as np
    import funcgrad as fg
    import funcgrad.nn as nn

    model = nn.MLP(64, 10, hidden_sizes=(128,), key=0)

    def loss(model, x, y):
        return nn.cross_entropy(model(x), y)

    grads = fg.grad(loss)(model, x, y)           # an MLP of gradients
"""

from __future__ import annotations

from . import init  # noqa: F401
from .module import (  # noqa: F401
    Module, combine, count_params, field, is_array, is_inexact_array, partition, static_field, tree_at,
    tree_equal,
)
from .functional import (  # noqa: F401
    binary_cross_entropy_with_logits, cross_entropy, elu, gelu, huber_loss, l1_loss, leaky_relu,
    log_sigmoid, log_softmax, logsumexp, mse_loss, nll_loss, one_hot, relu, relu6, sigmoid, silu,
    softmax, softplus, swish, tanh,
)
from .dropout import Dropout, dropout  # noqa: F401
from .linear import MLP, Embedding, Identity, Linear, linear  # noqa: F401
from .containers import Flatten, Lambda, Sequential  # noqa: F401
from .conv import (  # noqa: F401
    AvgPool1d, AvgPool2d, Conv1d, Conv2d, Conv3d, MaxPool1d, MaxPool2d, avg_pool, avg_pool1d,
    avg_pool2d, col2im, conv, conv1d, conv2d, conv3d, im2col, max_pool, max_pool1d, max_pool2d,
    max_pool_windows,
)
from .norm import BatchNorm, BatchNormState, GroupNorm, LayerNorm, RMSNorm, batch_norm, group_norm, layer_norm  # noqa: F401
from .recurrent import GRUCell, LSTMCell, gru_cell, lstm, lstm_cell, scan_cell  # noqa: F401
from .attention import MultiheadAttention, causal_mask, dot_product_attention  # noqa: F401
from . import pool_rewrite  # noqa: F401  (registers fg.jit's max_pool(relu) -> relu(max_pool) rewrite)

__all__ = [
    # modules and tree helpers
    "Module", "field", "static_field", "tree_at", "partition", "combine", "count_params", "is_array",
    "is_inexact_array", "tree_equal", "init",
    # layers
    "Linear", "MLP", "Embedding", "Identity", "Sequential", "Lambda", "Flatten", "Dropout",
    "Conv1d", "Conv2d", "Conv3d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
    "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm", "BatchNormState", "GRUCell", "LSTMCell",
    "MultiheadAttention",
    # functional
    "linear", "relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "swish", "softplus", "sigmoid",
    "log_sigmoid", "tanh", "softmax", "log_softmax", "logsumexp", "one_hot", "cross_entropy",
    "nll_loss", "binary_cross_entropy_with_logits", "mse_loss", "l1_loss", "huber_loss", "dropout",
    "conv", "conv1d", "conv2d", "conv3d", "im2col", "col2im", "max_pool", "avg_pool", "max_pool1d",
    "max_pool2d", "max_pool_windows", "avg_pool1d", "avg_pool2d", "layer_norm", "batch_norm", "group_norm", "scan_cell", "gru_cell",
    "lstm_cell", "lstm", "dot_product_attention",
    "causal_mask",
]
