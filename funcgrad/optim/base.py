"""The gradient-transformation interface, chaining, and applying updates.

An optimizer is a :class:`GradientTransformation`: a pair of pure functions

* ``init(params) -> state``
* ``update(updates, state, params=None) -> (updates, state)``

over pytrees (the style of optax). States are pytrees (NamedTuples of
arrays), so they can be saved with ``fg.save`` and restored with
``fg.load(path, like=state)``. Leaves that are ``None`` (the frozen part
of a model split by ``fg.nn.partition``) are skipped everywhere.

Example::

    opt = fg.optim.adam(1e-3)
    state = opt.init(params)
    grads = fg.grad(loss)(params, x, y)
    updates, state = opt.update(grads, state, params)
    params = fg.optim.apply_updates(params, updates)
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

import funcgrad.numpy as fnp

from .. import tree_util

__all__ = [
    "GradientTransformation", "EmptyState", "identity", "chain", "apply_updates", "global_norm",
    "tree_vdot", "stateless",
]


class GradientTransformation(NamedTuple):
    """``init(params) -> state`` and ``update(updates, state, params=None) -> (updates, state)``.

    Example::

        opt = fg.optim.chain(fg.optim.clip_by_global_norm(1.0), fg.optim.adam(1e-3))
    """

    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


class EmptyState(NamedTuple):
    """The state of a stateless transformation."""


def identity() -> GradientTransformation:
    """Leaves updates unchanged. Example: ``fg.optim.identity()``."""
    return GradientTransformation(lambda params: EmptyState(), lambda u, s, p=None, **kw: (u, s))


def stateless(fn: Callable[[Any, Any], Any]) -> GradientTransformation:
    """A transformation from ``fn(updates, params) -> updates`` with no state.

    Example::

        negate = fg.optim.stateless(lambda u, p: fg.tree_util.tree_map(lambda g: -g, u))
    """

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        return fn(updates, params), state

    return GradientTransformation(lambda params: EmptyState(), update)


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply transformations in order; the state is the tuple of their states.

    Extra keyword arguments given to ``update`` (e.g. ``value=``/``value_fn=``
    for lbfgs) are passed to the transformations that accept them.

    Example::

        opt = fg.optim.chain(fg.optim.clip_by_global_norm(1.0),
                             fg.optim.scale_by_adam(), fg.optim.scale_by_learning_rate(1e-3))
    """
    for i, t in enumerate(transforms):
        if not (hasattr(t, "init") and hasattr(t, "update")):
            raise TypeError(f"chain: argument {i} is not a GradientTransformation: {t!r}")

    def init(params: Any) -> tuple[Any, ...]:
        return tuple(t.init(params) for t in transforms)

    def update(updates: Any, state: tuple[Any, ...], params: Any = None, **extra: Any) -> tuple[Any, tuple[Any, ...]]:
        if not isinstance(state, tuple) or len(state) != len(transforms):
            raise ValueError(
                f"chain: expected a state tuple of length {len(transforms)} (from init), got "
                f"{type(state).__name__}"
            )
        new_states = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params, **extra) if extra else t.update(updates, s, params)
            new_states.append(s)
        return updates, tuple(new_states)

    return GradientTransformation(init, update)


def _is_none(x: Any) -> bool:
    return x is None


def apply_updates(params: Any, updates: Any) -> Any:
    """``params + updates`` leaf by leaf, keeping each parameter's dtype.

    ``None`` updates (frozen leaves) leave the parameter unchanged.

    Example::

        params = fg.optim.apply_updates(params, updates)
    """

    def add(p: Any, u: Any) -> Any:
        if u is None or p is None:
            return p
        out = p + u
        if type(p) is np.ndarray and type(out) is np.ndarray:  # host arrays: their dtypes at hand
            return out if out.dtype == p.dtype else out.astype(p.dtype)
        dt = fnp.result_type(p)
        return out if fnp.result_type(out) == dt else fnp.astype(out, dt)

    try:
        return tree_util.tree_map(add, params, updates, is_leaf=_is_none)
    except tree_util.TreeStructureError as e:
        raise ValueError(f"apply_updates: params and updates have different structures: {e}") from None


def tree_vdot(a: Any, b: Any) -> Any:
    """Sum over leaves of ``sum(a * b)`` (an array scalar). Example: ``fg.optim.tree_vdot(g, g)``."""
    total = 0.0
    for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)):
        total = total + fnp.sum(x * y)
    return total


def global_norm(tree: Any) -> Any:
    """sqrt of the sum of squares of all leaves. Example: ``fg.optim.global_norm(grads)``."""
    total = 0.0
    for x in tree_util.tree_leaves(tree):
        if fnp.iscomplexobj(x):
            x = fnp.abs(x)
        total = total + fnp.sum(x * x)
    return fnp.sqrt(total) if not isinstance(total, float) else np.sqrt(total)
