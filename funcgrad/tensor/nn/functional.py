"""``ft.nn.functional`` (``import funcgrad.tensor.nn.functional as F``)."""

from . import F as _F

relu = _F.relu
sigmoid = _F.sigmoid
tanh = _F.tanh
gelu = _F.gelu
silu = _F.silu
softplus = _F.softplus
leaky_relu = _F.leaky_relu
softmax = _F.softmax
log_softmax = _F.log_softmax
linear = _F.linear
dropout = _F.dropout
one_hot = _F.one_hot
mse_loss = _F.mse_loss
l1_loss = _F.l1_loss
huber_loss = _F.huber_loss
cross_entropy = _F.cross_entropy
nll_loss = _F.nll_loss
binary_cross_entropy_with_logits = _F.binary_cross_entropy_with_logits

__all__ = [
    "relu", "sigmoid", "tanh", "gelu", "silu", "softplus", "leaky_relu", "softmax", "log_softmax", "linear",
    "dropout", "one_hot", "mse_loss", "l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy_with_logits",
]
