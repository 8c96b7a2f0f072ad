"""Training-time noise of ``torch.nn.functional`` beyond plain dropout: ``rrelu`` (leaky ReLU with a
random negative slope per element while training, the mean slope in evaluation) and
``feature_alpha_dropout`` (SELU-preserving dropout of whole channels). The noise is drawn from
``ft``'s generator, so ``ft.manual_seed`` makes it reproducible.

Example::

    y = F.rrelu(x, training=True)                  # slopes ~ U(1/8, 1/3) on the negative part
    y = F.feature_alpha_dropout(x, 0.2, training=True)
"""

from __future__ import annotations

from typing import cast

from ..creation import default_generator
from ..tensor import Tensor
from .bridge import _check_dropout_p, _like, _maybe_inplace

__all__ = ["rrelu", "rrelu_", "feature_alpha_dropout"]

_SELU_SATURATION = -1.7580993408473766  # -scale * alpha of SELU: where a dropped unit sits


def _rrelu(x: Tensor, lower: float, upper: float, training: bool) -> Tensor:
    if lower > upper:
        raise RuntimeError(f"Lower bound should be less than or equal to the upper bound, got lower={lower} and "
                           f"upper={upper}")
    if not training:
        return x.where(x >= 0, x * ((lower + upper) / 2.0))
    slopes = default_generator._rng.uniform(lower, upper, tuple(x.shape)).astype(x._value.dtype)
    return x.where(x >= 0, x * _like(x, slopes))


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: ``x`` where ``x >= 0``, else ``a x`` with ``a ~ U(lower, upper)`` per element while
    training and ``a = (lower + upper) / 2`` otherwise. Example: ``F.rrelu(x, training=True)``."""
    return _maybe_inplace(input, lambda t: _rrelu(t, lower, upper, training), inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False) -> Tensor:
    """In-place ``rrelu``: writes the result into ``input``. Example: ``F.rrelu_(x)``."""
    return rrelu(input, lower, upper, training, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (one draw per ``(N, C)``): dropped channels take SELU's negative
    saturation, and an affine correction keeps SELU's mean and variance.

    Example: ``F.feature_alpha_dropout(x, 0.2, training=True)``.
    """
    _check_dropout_p(p)
    if not training or p == 0.0:
        return input

    def drop(x: Tensor) -> Tensor:
        if p == 1.0:
            return x * 0.0
        if x.dim() < 2:
            raise RuntimeError(f"Feature dropout requires at least 2 dimensions in the input, got shape "
                               f"{list(x.shape)}")
        shape = tuple(x.shape[:2]) + (1,) * (x.dim() - 2)
        keep = (default_generator._rng.random(shape) >= p).astype(x._value.dtype)
        a = ((1 - p) * (1 + p * _SELU_SATURATION ** 2)) ** -0.5
        b = -a * _SELU_SATURATION * p
        return cast("Tensor", (x * _like(x, keep) + _like(x, (1 - keep) * _SELU_SATURATION)) * a + b)

    return _maybe_inplace(input, drop, inplace)
