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
from . import _Init as _I

uniform_ = _I.uniform_
normal_ = _I.normal_
zeros_ = _I.zeros_
ones_ = _I.ones_
constant_ = _I.constant_
xavier_uniform_ = _I.xavier_uniform_
xavier_normal_ = _I.xavier_normal_
kaiming_uniform_ = _I.kaiming_uniform_
kaiming_normal_ = _I.kaiming_normal_
calculate_gain = _init.calculate_gain


def _fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    if t.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    return _init.fans(tuple(t.shape))


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
    return _I._fill(t, out)


def orthogonal_(t: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix (flattened trailing axes), times ``gain``. Example: ``orthogonal_(w)``."""
    if t.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    return _I._fill(t, _init.orthogonal(default_generator._rng, tuple(t.shape), t._value.dtype, gain))


def eye_(t: Tensor) -> Tensor:
    """The identity matrix (2-D tensors only). Example: ``eye_(w)``."""
    if t.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _I._fill(t, np.eye(*t.shape))


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
    return _I._fill(t, w)


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
    return _I._fill(t, w)


__all__ = ["uniform_", "normal_", "zeros_", "ones_", "constant_", "xavier_uniform_", "xavier_normal_",
           "kaiming_uniform_", "kaiming_normal_", "calculate_gain", "trunc_normal_", "orthogonal_", "eye_", "dirac_",
           "sparse_"]
