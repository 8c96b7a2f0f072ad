"""``ft.nn.init`` (``import funcgrad.tensor.nn.init``): in-place initialisers drawing from ft's generator.

Example::

    ft.nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")
    ft.nn.init.zeros_(conv.bias)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from funcgrad.nn import init as _init

from ..creation import default_generator
from ..tensor import Tensor
from ..grad_mode import no_grad



def calculate_gain(nonlinearity: str, param: Any = None) -> float | int:
    """The recommended gain for a nonlinearity, with PyTorch's types: the Python int ``1`` for
    linear, convolutions and sigmoid, floats otherwise.

    Example::

        ft.nn.init.calculate_gain("relu")          # 1.4142135623730951
        ft.nn.init.calculate_gain("conv2d")        # 1
    """
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                        "conv_transpose3d", "sigmoid"):
        return 1
    if nonlinearity == "leaky_relu" and param is not None and (
            isinstance(param, bool) or not isinstance(param, (int, float))):
        raise ValueError(f"negative_slope {param} not a valid number")
    if nonlinearity not in ("tanh", "relu", "leaky_relu", "selu"):
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")
    return _init.calculate_gain(nonlinearity, param)


def _fill(t: Tensor, values: np.ndarray) -> Tensor:
    """Write ``values`` (cast to ``t``'s dtype) into ``t`` in place, unrecorded; returns ``t``."""
    with no_grad():
        t.copy_(Tensor._make(np.asarray(values, dtype=t._value.dtype)))
    return t


def _draw(t: Tensor, initializer: Any, *args: Any, **kwargs: Any) -> Tensor:
    """Fill ``t`` from a ``funcgrad.nn.init`` initializer drawing from ft's generator."""
    return _fill(t, initializer(default_generator._rng, tuple(t.shape), t._value.dtype, *args, **kwargs))


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    return _draw(t, _init.uniform, a, b)


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    return _draw(t, _init.normal, std, mean)


def zeros_(t: Tensor) -> Tensor:
    return _fill(t, np.zeros(tuple(t.shape)))


def ones_(t: Tensor) -> Tensor:
    return _fill(t, np.ones(tuple(t.shape)))


def constant_(t: Tensor, val: float) -> Tensor:
    return _fill(t, np.full(tuple(t.shape), val))


def xavier_uniform_(t: Tensor, gain: float = 1.0) -> Tensor:
    return _draw(t, _init.glorot_uniform, gain)


def xavier_normal_(t: Tensor, gain: float = 1.0) -> Tensor:
    return _draw(t, _init.glorot_normal, gain)


def kaiming_uniform_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    return _draw(t, _init.kaiming_uniform, a=a, mode=mode, nonlinearity=nonlinearity)


def kaiming_normal_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    return _draw(t, _init.kaiming_normal, a=a, mode=mode, nonlinearity=nonlinearity)


def trunc_normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Any = None) -> Tensor:
    """Normal values redrawn until inside ``[a, b]``. Example: ``trunc_normal_(w, std=0.02)``."""
    rng = default_generator._rng
    shape = tuple(t.shape)
    out = rng.normal(mean, std, shape)
    bad = (out < a) | (out > b)
    while bad.any():
        out[bad] = rng.normal(mean, std, int(bad.sum()))
        bad = (out < a) | (out > b)
    return _fill(t, out)


def orthogonal_(t: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix (flattened trailing axes), times ``gain``. Example: ``orthogonal_(w)``."""
    if t.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    return _draw(t, _init.orthogonal, gain)


def eye_(t: Tensor) -> Tensor:
    """The identity matrix (2-D tensors only). Example: ``eye_(w)``."""
    if t.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(t, np.eye(*t.shape))


def dirac_(t: Tensor, groups: int = 1) -> Tensor:
    """A convolution kernel that passes its input through (3-5-D tensors). Example: ``dirac_(conv.weight)``."""
    if t.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tuple(t.shape)
    out_g = shape[0] // groups
    w = np.zeros(shape)
    centre = tuple(k // 2 for k in shape[2:])
    for g in range(groups):
        for d in range(min(out_g, shape[1])):
            w[(g * out_g + d, d) + centre] = 1.0
    return _fill(t, w)


def sparse_(t: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """Normal values with a fraction ``sparsity`` of each column zeroed (2-D). Example: ``sparse_(w, 0.1)``."""
    if t.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = t.shape
    rng = default_generator._rng
    w = rng.normal(0.0, std, (rows, cols))
    nz = int(math.ceil(sparsity * rows))
    for c in range(cols):
        w[rng.permutation(rows)[:nz], c] = 0.0
    return _fill(t, w)


__all__ = ["uniform_", "normal_", "zeros_", "ones_", "constant_", "xavier_uniform_", "xavier_normal_",
           "kaiming_uniform_", "kaiming_normal_", "calculate_gain", "trunc_normal_", "orthogonal_", "eye_", "dirac_",
           "sparse_"]
