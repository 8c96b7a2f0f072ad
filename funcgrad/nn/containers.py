"""Containers: Sequential (with explicit randomness and state threading) and Lambda.

Example::

    model = fg.nn.Sequential(
        fg.nn.Conv2d(1, 8, 3, padding=1, key=0), fg.nn.relu, fg.nn.MaxPool2d(2),
        fg.nn.Flatten(), fg.nn.Linear(8 * 4 * 4, 10, key=1),
    )
    logits = model(x)
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import funcgrad.numpy as fnp

from . import init as _init
from .module import Module, static_field

__all__ = ["Sequential", "Lambda", "Flatten"]


class Lambda(Module):
    """Wrap a parameter-free function as a layer (its function is static).

    Example::

        fg.nn.Lambda(fnp.tanh)(x)
    """

    fn: Callable[..., Any] = static_field()

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        return self.fn(x, *args, **kwargs)


class Flatten(Module):
    """Flatten axes ``start_dim`` to ``end_dim`` (default: all but the batch axis).

    Example::

        fg.nn.Flatten()(np.zeros((2, 3, 4))).shape    # (2, 12)
    """

    start_dim: int = static_field(default=1)
    end_dim: int = static_field(default=-1)

    def __call__(self, x: Any) -> Any:
        shape = fnp.shape(x)
        nd = len(shape)
        s, e = self.start_dim % nd, self.end_dim % nd
        n = 1
        for d in shape[s:e + 1]:
            n *= d
        return fnp.reshape(x, shape[:s] + (n,) + shape[e + 1:])


def _stateful(layer: Any) -> bool:
    if isinstance(layer, Sequential):
        return any(_stateful(x) for x in layer.layers)
    return bool(getattr(type(layer), "_fg_stateful", False))


def _stochastic(layer: Any) -> bool:
    if isinstance(layer, Sequential):
        return any(_stochastic(x) for x in layer.layers)
    return bool(getattr(type(layer), "_fg_stochastic", False))


class Sequential(Module):
    """Apply layers in order. Plain functions (``fg.nn.relu``) are wrapped in :class:`Lambda`.

    ``key`` (int seed or Generator) and ``training`` are passed to the layers
    that use randomness (Dropout, MLP with dropout). If some layer keeps state
    (BatchNorm), the call is ``y, state = seq(x, state, training=...)`` with
    ``state = seq.initial_state()`` (a tuple with one entry per layer).

    Example::

        seq = fg.nn.Sequential(fg.nn.Linear(4, 8, key=0), fg.nn.relu, fg.nn.Dropout(0.1),
                               fg.nn.Linear(8, 1, key=1))
        y = seq(x, key=np.random.default_rng(0))   # training (dropout on)
        y = seq(x)                                  # evaluation
    """

    layers: tuple[Any, ...]

    def __init__(self, *layers: Any) -> None:
        if len(layers) == 1 and isinstance(layers[0], (list, tuple)):
            layers = tuple(layers[0])
        wrapped = []
        for i, layer in enumerate(layers):
            if isinstance(layer, Module):
                wrapped.append(layer)
            elif callable(layer):
                wrapped.append(Lambda(layer))
            else:
                raise TypeError(f"Sequential: layer {i} is not a Module or a function: {layer!r}")
        self.layers = tuple(wrapped)

    def __len__(self) -> int:
        return len(self.layers)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return Sequential(*self.layers[i])
        return self.layers[i]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.layers)

    def initial_state(self) -> tuple[Any, ...]:
        """One state per layer (None for stateless layers).

        Example::

            state = seq.initial_state()
        """
        return tuple(layer.initial_state() if _stateful(layer) else None for layer in self.layers)

    def __call__(self, x: Any, state: Any = None, *, key: Any = None, training: bool | None = None) -> Any:
        stateful = _stateful(self)
        if stateful:
            if state is None:
                raise TypeError(
                    "Sequential: a layer keeps state (e.g. BatchNorm); call seq(x, state, training=...) "
                    "with state = seq.initial_state()"
                )
            if training is None:
                raise TypeError("Sequential: with stateful layers (BatchNorm) pass training=True or False")
            if not isinstance(state, tuple) or len(state) != len(self.layers):
                raise ValueError(
                    f"Sequential: state must be a tuple with one entry per layer ({len(self.layers)}), "
                    f"as made by seq.initial_state()"
                )
        g = _init.rng(key) if key is not None else None
        new_state = []
        for i, layer in enumerate(self.layers):
            if _stateful(layer):
                if _stochastic(layer):
                    x, s = layer(x, state[i], key=g, training=training)
                else:
                    x, s = layer(x, state[i], training=training)
                new_state.append(s)
                continue
            if _stochastic(layer):
                x = layer(x, key=g, training=training)
            else:
                x = layer(x)
            new_state.append(None if not stateful else state[i])
        return (x, tuple(new_state)) if stateful else x
