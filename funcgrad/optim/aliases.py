"""Ready-made optimizers: sgd, adam, adamw, rmsprop, adagrad.

Each ``learning_rate`` is a float or a schedule (``step -> float``).

Example::

    opt = fg.optim.adamw(fg.optim.cosine_decay_schedule(1e-3, 1000), weight_decay=1e-2)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    params = fg.optim.apply_updates(params, updates)
"""

from __future__ import annotations

from typing import Any

from .base import GradientTransformation, chain
from .transforms import (
    add_decayed_weights, scale_by_adam, scale_by_learning_rate, scale_by_rms, scale_by_rss, trace,
)

__all__ = ["sgd", "adam", "adamw", "rmsprop", "adagrad"]


def sgd(learning_rate: Any, momentum: float = 0.0, nesterov: bool = False,
        weight_decay: float = 0.0) -> GradientTransformation:
    """Stochastic gradient descent, with optional (Nesterov) momentum and L2 weight decay.

    With momentum ``m``: ``t = g + m t``, ``params -= lr * t`` (``lr * (g + m t)``
    with Nesterov), as in PyTorch's SGD. ``weight_decay`` adds ``wd * params``
    to the gradient first (coupled L2, as in PyTorch).

    Example::

        opt = fg.optim.sgd(0.1, momentum=0.9, nesterov=True)
    """
    if nesterov and not momentum:
        raise ValueError("sgd: nesterov=True needs a momentum > 0")
    parts = []
    if weight_decay:
        parts.append(add_decayed_weights(weight_decay))
    if momentum:
        parts.append(trace(momentum, nesterov))
    parts.append(scale_by_learning_rate(learning_rate))
    return chain(*parts)


def adam(learning_rate: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         eps_root: float = 0.0) -> GradientTransformation:
    """Adam (Kingma & Ba, 2015).

    Example::

        opt = fg.optim.adam(1e-3)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def adamw(learning_rate: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          weight_decay: float = 1e-4, mask: Any = None) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``params -= lr * (adam + wd * params)``.

    ``mask`` (a pytree of booleans or a function of the parameters) limits the decay.

    Example::

        opt = fg.optim.adamw(1e-3, weight_decay=1e-2)
    """
    return chain(scale_by_adam(b1, b2, eps), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate: Any, decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
            centered: bool = False, momentum: float = 0.0, nesterov: bool = False) -> GradientTransformation:
    """RMSprop (Tieleman & Hinton): ``params -= lr * g / (sqrt(mean g**2) + eps)``, optional momentum.

    Example::

        opt = fg.optim.rmsprop(1e-3, decay=0.99)
    """
    parts = [scale_by_rms(decay, eps, initial_scale, centered)]
    if momentum:
        parts.append(trace(momentum, nesterov))
    parts.append(scale_by_learning_rate(learning_rate))
    return chain(*parts)


def adagrad(learning_rate: Any, initial_accumulator_value: float = 0.0, eps: float = 1e-10) -> GradientTransformation:
    """Adagrad (Duchi et al.): ``params -= lr * g / (sqrt(sum of g**2) + eps)``.

    Example::

        opt = fg.optim.adagrad(0.1)
    """
    return chain(scale_by_rss(initial_accumulator_value, eps), scale_by_learning_rate(learning_rate))
