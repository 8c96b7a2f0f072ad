"""Dropout with explicit randomness: a ``key`` per call (a ``fg.random`` key, an int seed or a numpy Generator).

There is no global train/eval switch. Dropout is active exactly when the call
is in training mode: ``training=True``, or ``training=None`` (the default)
together with a ``key``. Without a key (or with ``training=False``) it is the
identity. Asking for training without a key is an error, never a silent
no-op.

Example::

    drop = fg.nn.Dropout(0.5)
    y = drop(x, key=step)                 # training: random mask from seed `step`
    y = drop(x)                           # evaluation: identity
    rng = np.random.default_rng(0)
    y = drop(x, key=rng)                  # a Generator advances: a new mask each call
    y = drop(x, key=fg.random.PRNGKey(0)) # a fg.random key (as Equinox): works under vmap and jit

With a ``fg.random`` key the mask is ``fg.random.bernoulli(key, 1 - rate, x.shape)``
(Equinox's and JAX's construction), a staged computation of the key: under
``fg.vmap`` over a batch of keys each example gets its own mask, and under
``fg.jit`` a new key gives a new mask.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..random.threefry import is_key
from . import init as _init
from .module import Module, static_field

__all__ = ["dropout", "Dropout"]


def _training(training: bool | None, key: Any, name: str) -> bool:
    if training is None:
        return key is not None
    if training and key is None:
        raise ValueError(
            f"{name}: training=True needs a random key (a fg.random key, an int seed or a numpy.random.Generator): "
            f"call it with key=..., or training=False for evaluation"
        )
    return bool(training)


def dropout(x: Any, rate: float, key: Any = None, training: bool | None = None) -> Any:
    """Zero each element with probability ``rate`` and scale the rest by ``1 / (1 - rate)``.

    Example::

        y = fg.nn.dropout(x, 0.1, key=np.random.default_rng(0))
        y = fg.nn.dropout(x, 0.1, key=fg.random.PRNGKey(0))
    """
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
    if not _training(training, key, "dropout") or rate == 0.0:
        return x
    shape = fnp.shape(x)
    if is_key(key):
        from ..random.discrete import bernoulli

        dt = fnp.result_type(x)
        q = 1.0 - rate
        keep = bernoulli(key, np.asarray(q, dt if dt.kind == "f" else np.float64), shape)
        return fnp.where(keep, x / q, fnp.zeros_like(x))
    keep = _init.rng(key).random(shape) >= rate
    dt = fnp.result_type(x)
    mask = (keep / (1.0 - rate)).astype(dt if dt.kind in "fc" else np.float32)
    xp = namespace_of(x)
    if xp is not np:
        mask = xp.asarray(mask)
    return x * mask


class Dropout(Module):
    """Dropout layer: ``Dropout(p)(x, key=..., training=...)`` (see :func:`dropout`).

    Example::

        drop = fg.nn.Dropout(0.2)
        y = drop(x, key=fg.random.PRNGKey(0))
        ys = fg.vmap(lambda x, k: drop(x, key=k))(xs, fg.random.split(key, len(xs)))  # per example
    """

    p: float = static_field(default=0.5)

    _fg_stochastic = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.p < 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1), got {self.p}")

    def __call__(self, x: Any, *, key: Any = None, training: bool | None = None) -> Any:
        return dropout(x, self.p, key=key, training=training)
