"""Gradient transformations: the building blocks that optimizers chain.

Each function returns a :class:`GradientTransformation`. Arithmetic is done
with Python floats and funcgrad.numpy, so float32 parameters get float32
updates and states, arrays stay on their device, and an update step can
itself be differentiated (meta-learning).

Example::

    opt = fg.optim.chain(
        fg.optim.clip_by_global_norm(1.0),
        fg.optim.scale_by_adam(b1=0.9, b2=0.999),
        fg.optim.add_decayed_weights(1e-4),
        fg.optim.scale_by_learning_rate(fg.optim.cosine_decay_schedule(1e-3, 1000)),
    )
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

import funcgrad.numpy as fnp

from .. import tree_util
from .base import EmptyState, GradientTransformation, global_norm

__all__ = [
    "ScaleState", "ScaleByScheduleState", "TraceState", "ScaleByAdamState", "ScaleByRmsState",
    "ScaleByRssState", "MaskedState", "scale", "scale_by_schedule", "scale_by_learning_rate", "trace",
    "scale_by_adam", "scale_by_rms", "scale_by_rss", "add_decayed_weights", "clip_by_global_norm", "clip",
    "masked",
]

tree_map = tree_util.tree_map


def _count0() -> np.ndarray:
    return np.zeros((), dtype=np.int32)


def _inc(count: Any) -> np.ndarray:
    return np.asarray(int(count) + 1, dtype=np.int32)


def _zeros(params: Any) -> Any:
    return tree_map(fnp.zeros_like, params)


class ScaleState(NamedTuple):
    """No state (kept for a readable chain state)."""


class ScaleByScheduleState(NamedTuple):
    """The number of updates done so far."""

    count: Any


class TraceState(NamedTuple):
    """Momentum buffer."""

    trace: Any


class ScaleByAdamState(NamedTuple):
    """Adam's step count and first and second moment estimates."""

    count: Any
    mu: Any
    nu: Any


class ScaleByRmsState(NamedTuple):
    """RMSprop's running mean of squared gradients (and of gradients when centered)."""

    nu: Any
    mu: Any


class ScaleByRssState(NamedTuple):
    """Adagrad's running sum of squared gradients."""

    sum_of_squares: Any


class MaskedState(NamedTuple):
    """The inner state of a :func:`masked` transformation."""

    inner_state: Any


def scale(step_size: float) -> GradientTransformation:
    """Multiply updates by ``step_size``. Example: ``fg.optim.scale(-0.1)``."""
    s = float(step_size)

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        return tree_map(lambda g: g * s, updates), state

    return GradientTransformation(lambda params: ScaleState(), update)


def scale_by_schedule(step_size_fn: Callable[[int], float]) -> GradientTransformation:
    """Multiply updates by ``step_size_fn(count)``. Example: ``fg.optim.scale_by_schedule(lambda t: -0.1 / (1 + t))``."""

    def init(params: Any) -> ScaleByScheduleState:
        return ScaleByScheduleState(_count0())

    def update(updates: Any, state: ScaleByScheduleState, params: Any = None, **extra: Any) -> tuple[Any, ScaleByScheduleState]:
        s = float(step_size_fn(int(state.count)))
        return tree_map(lambda g: g * s, updates), ScaleByScheduleState(_inc(state.count))

    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate: Any, flip_sign: bool = True) -> GradientTransformation:
    """Multiply by ``-learning_rate`` (a float or a schedule). Example: ``fg.optim.scale_by_learning_rate(1e-3)``."""
    m = -1.0 if flip_sign else 1.0
    if callable(learning_rate):
        return scale_by_schedule(lambda count: m * learning_rate(count))
    return scale(m * float(learning_rate))


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: ``t = g + decay * t``; the update is ``t`` (or ``g + decay * t`` with Nesterov).

    Example::

        fg.optim.trace(0.9, nesterov=True)
    """

    def init(params: Any) -> TraceState:
        return TraceState(_zeros(params))

    def decayed_sum(g: Any, t: Any) -> Any:
        if type(g) is np.ndarray and type(t) is np.ndarray and g.shape == t.shape and g.dtype == t.dtype:
            out = t * decay  # host arrays: g + decay * t with one new array, not two (the same bits: + commutes)
            out += g
            return out
        return g + decay * t

    def update(updates: Any, state: TraceState, params: Any = None, **extra: Any) -> tuple[Any, TraceState]:
        new_trace = tree_map(decayed_sum, updates, state.trace)
        out = tree_map(decayed_sum, updates, new_trace) if nesterov else new_trace
        return out, TraceState(new_trace)

    return GradientTransformation(init, update)


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0) -> GradientTransformation:
    """Adam's rescaling (Kingma & Ba): ``m_hat / (sqrt(v_hat + eps_root) + eps)`` with bias correction.

    Example::

        fg.optim.chain(fg.optim.scale_by_adam(), fg.optim.scale_by_learning_rate(1e-3))
    """

    def init(params: Any) -> ScaleByAdamState:
        return ScaleByAdamState(_count0(), _zeros(params), _zeros(params))

    def update(updates: Any, state: ScaleByAdamState, params: Any = None, **extra: Any) -> tuple[Any, ScaleByAdamState]:
        mu = tree_map(lambda g, m: b1 * m + (1.0 - b1) * g, updates, state.mu)
        nu = tree_map(lambda g, v: b2 * v + (1.0 - b2) * (g * g), updates, state.nu)
        t = int(state.count) + 1
        c1 = 1.0 / (1.0 - b1 ** t)
        c2 = 1.0 / (1.0 - b2 ** t)
        out = tree_map(lambda m, v: (m * c1) / (fnp.sqrt(v * c2 + eps_root) + eps), mu, nu)
        return out, ScaleByAdamState(_inc(state.count), mu, nu)

    return GradientTransformation(init, update)


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                 centered: bool = False) -> GradientTransformation:
    """RMSprop's rescaling: ``g / (sqrt(nu) + eps)``, ``nu`` a running mean of ``g**2``
    (``centered``: of the variance, ``nu - mu**2``).

    Example::

        fg.optim.scale_by_rms(decay=0.99)
    """

    def init(params: Any) -> ScaleByRmsState:
        nu = tree_map(lambda p: fnp.zeros_like(p) + initial_scale, params)
        return ScaleByRmsState(nu, _zeros(params) if centered else None)

    def update(updates: Any, state: ScaleByRmsState, params: Any = None, **extra: Any) -> tuple[Any, ScaleByRmsState]:
        nu = tree_map(lambda g, v: decay * v + (1.0 - decay) * (g * g), updates, state.nu)
        if centered:
            mu = tree_map(lambda g, m: decay * m + (1.0 - decay) * g, updates, state.mu)
            out = tree_map(lambda g, v, m: g / (fnp.sqrt(fnp.maximum(v - m * m, 0.0)) + eps), updates, nu, mu)
        else:
            mu = None
            out = tree_map(lambda g, v: g / (fnp.sqrt(v) + eps), updates, nu)
        return out, ScaleByRmsState(nu, mu)

    return GradientTransformation(init, update)


def scale_by_rss(initial_accumulator_value: float = 0.0, eps: float = 1e-10) -> GradientTransformation:
    """Adagrad's rescaling: ``g / (sqrt(sum of g**2 so far) + eps)``.

    Example::

        fg.optim.scale_by_rss()
    """

    def init(params: Any) -> ScaleByRssState:
        return ScaleByRssState(tree_map(lambda p: fnp.zeros_like(p) + initial_accumulator_value, params))

    def update(updates: Any, state: ScaleByRssState, params: Any = None, **extra: Any) -> tuple[Any, ScaleByRssState]:
        ss = tree_map(lambda g, s: s + g * g, updates, state.sum_of_squares)
        out = tree_map(lambda g, s: g / (fnp.sqrt(s) + eps), updates, ss)
        return out, ScaleByRssState(ss)

    return GradientTransformation(init, update)


def _need_params(params: Any, name: str) -> None:
    if params is None:
        raise ValueError(f"{name} needs the parameters: call opt.update(grads, state, params)")


def add_decayed_weights(weight_decay: float = 0.0, mask: Any = None) -> GradientTransformation:
    """Add ``weight_decay * params`` to the updates (decoupled weight decay when chained
    before the learning rate, as in AdamW). ``mask``: see :func:`masked`.

    Example::

        fg.optim.add_decayed_weights(1e-4, mask=lambda p: fg.tree_util.tree_map(lambda x: x.ndim > 1, p))
    """
    wd = float(weight_decay)

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        _need_params(params, "add_decayed_weights")
        if wd == 0.0:
            return updates, state
        return tree_map(lambda g, p: g + wd * p, updates, params), state

    t = GradientTransformation(lambda params: EmptyState(), update)
    return masked(t, mask) if mask is not None else t


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Scale all updates by ``min(1, max_norm / global_norm)``.

    Example::

        fg.optim.chain(fg.optim.clip_by_global_norm(1.0), fg.optim.adam(1e-3))
    """
    if max_norm <= 0:
        raise ValueError(f"clip_by_global_norm: max_norm must be positive, got {max_norm}")

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        # No host synchronization: the factor stays an array on the updates' device.
        norm = global_norm(updates)
        factor = fnp.where(fnp.isfinite(norm), max_norm / fnp.maximum(norm, max_norm), 1.0)
        return tree_map(lambda g: g * fnp.astype(factor, fnp.result_type(g)), updates), state

    return GradientTransformation(lambda params: EmptyState(), update)


def clip(max_delta: float) -> GradientTransformation:
    """Clip each update element to ``[-max_delta, max_delta]``. Example: ``fg.optim.clip(1.0)``."""

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        return tree_map(lambda g: fnp.clip(g, -max_delta, max_delta), updates), state

    return GradientTransformation(lambda params: EmptyState(), update)


def _mask_tree(mask: Any, params: Any) -> Any:
    m = mask(params) if callable(mask) else mask
    leaves, treedef = tree_util.tree_flatten(params, is_leaf=lambda x: x is None)
    try:
        mleaves = treedef.flatten_up_to(m)
    except (ValueError, tree_util.TreeStructureError) as e:
        raise ValueError(f"masked: the mask must have the structure of the parameters: {e}") from None
    return treedef, leaves, [bool(b) for b in mleaves]


def masked(inner: GradientTransformation, mask: Any) -> GradientTransformation:
    """Apply ``inner`` only where ``mask`` is True; other updates pass through unchanged.

    ``mask`` is a pytree of booleans shaped like the parameters, or a function
    ``params -> such a tree``.

    Example: no weight decay on biases::

        decay_mask = lambda p: fg.tree_util.tree_map(lambda x: x.ndim > 1, p)
        opt = fg.optim.adamw(1e-3, weight_decay=1e-2, mask=decay_mask)
    """

    def select(tree: Any, keep: list[Any], treedef: Any) -> Any:
        leaves = treedef.flatten_up_to(tree)
        return treedef.unflatten([x if k else None for x, k in zip(leaves, keep)])

    def init(params: Any) -> MaskedState:
        treedef, _, keep = _mask_tree(mask, params)
        return MaskedState(inner.init(select(params, keep, treedef)))

    def update(updates: Any, state: MaskedState, params: Any = None, **extra: Any) -> tuple[Any, MaskedState]:
        ref = params if params is not None else updates
        treedef, _, keep = _mask_tree(mask, ref)
        sub_u = select(updates, keep, treedef)
        sub_p = select(params, keep, treedef) if params is not None else None
        new_u, s = inner.update(sub_u, state.inner_state, sub_p, **extra)
        all_u = treedef.flatten_up_to(updates)
        new_leaves = treedef.flatten_up_to(new_u)
        merged = [n if k else u for u, n, k in zip(all_u, new_leaves, keep)]
        return treedef.unflatten(merged), MaskedState(s)

    return GradientTransformation(init, update)
