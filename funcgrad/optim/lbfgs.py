"""L-BFGS for scientific fitting: a gradient transformation and a minimize loop.

``lbfgs()`` is a :class:`GradientTransformation` whose ``update`` takes, on
top of the gradient, the objective's value and the objective itself
(``value=``, ``value_fn=``) to run a backtracking (Armijo) line search along
the quasi-Newton direction; without ``value_fn`` it takes a fixed step of
``learning_rate``. The memory of the last ``memory_size`` curvature pairs is
part of the state (a pytree), so a fit can be checkpointed and resumed.

Example::

    opt = fg.optim.lbfgs()
    state = opt.init(params)
    for _ in range(100):
        value, grads = fg.value_and_grad(loss)(params)
        updates, state = opt.update(grads, state, params, value=value, value_fn=loss)
        params = fg.optim.apply_updates(params, updates)

    params, info = fg.optim.minimize_lbfgs(loss, params, tol=1e-8)   # the same loop
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

from .. import tree_util
from ..transforms import value_and_grad
from .base import GradientTransformation, apply_updates, tree_vdot
from .transforms import _count0, _inc, _zeros

__all__ = ["LbfgsState", "lbfgs", "minimize_lbfgs", "MinimizeInfo"]

tree_map = tree_util.tree_map


class LbfgsState(NamedTuple):
    """Step count, number of stored pairs, the pairs ``(s, y)`` (ring buffers), their ``1 / s.y``,
    and the previous parameters and gradients."""

    count: Any
    num_pairs: Any
    s_memory: tuple[Any, ...]
    y_memory: tuple[Any, ...]
    rho: Any
    prev_params: Any
    prev_grads: Any


def _f(x: Any) -> float:
    return float(np.real(np.asarray(x.get() if hasattr(x, "get") else x)))


def _vdot(a: Any, b: Any) -> float:
    return _f(tree_vdot(a, b))


def lbfgs(learning_rate: float = 1.0, memory_size: int = 10, *, c1: float = 1e-4, max_backtracking: int = 30,
          backtracking_factor: float = 0.5) -> GradientTransformation:
    """Limited-memory BFGS (Nocedal & Wright, Alg. 7.4/7.5) with an Armijo line search.

    ``update(grads, state, params, value=None, value_fn=None)``: with
    ``value_fn`` (the objective, ``params -> scalar``) the step along the
    L-BFGS direction starts at 1 (at ``learning_rate / max(1, |g|)`` on the first
    step) and is halved until the Armijo condition holds; without it the step
    is ``learning_rate``. Pairs with non-positive curvature are skipped, and a
    direction that is not a descent direction is replaced by ``-grads``.

    Example::

        opt = fg.optim.lbfgs(memory_size=5)
    """
    m = int(memory_size)
    if m < 1:
        raise ValueError(f"lbfgs: memory_size must be at least 1, got {memory_size}")

    def init(params: Any) -> LbfgsState:
        zeros = _zeros(params)
        return LbfgsState(_count0(), _count0(), tuple(_zeros(params) for _ in range(m)),
                          tuple(_zeros(params) for _ in range(m)), np.zeros((m,), np.float64), zeros,
                          _zeros(params))

    def update(grads: Any, state: LbfgsState, params: Any = None, *, value: Any = None,
               value_fn: Callable[[Any], Any] | None = None, **extra: Any) -> tuple[Any, LbfgsState]:
        if params is None:
            raise ValueError("lbfgs needs the parameters: call opt.update(grads, state, params, ...)")
        count = int(state.count)
        head = int(state.num_pairs)
        s_mem, y_mem = list(state.s_memory), list(state.y_memory)
        rho = np.array(state.rho, dtype=np.float64, copy=True)
        if count > 0:
            s = tree_map(lambda a, b: a - b, params, state.prev_params)
            y = tree_map(lambda a, b: a - b, grads, state.prev_grads)
            sy, yy, ss = _vdot(s, y), _vdot(y, y), _vdot(s, s)
            if sy > 1e-10 * math.sqrt(yy * ss) and sy > 0:
                i = head % m
                s_mem[i], y_mem[i], rho[i] = s, y, 1.0 / sy
                head += 1
        # Two-loop recursion: r = H g.
        order = [(head - 1 - j) % m for j in range(min(head, m))]
        q = grads
        alphas = {}
        for i in order:
            a = rho[i] * _vdot(s_mem[i], q)
            alphas[i] = a
            q = tree_map(lambda qq, yy_: qq - a * yy_, q, y_mem[i])
        if order:
            newest = order[0]
            gamma = 1.0 / (rho[newest] * _vdot(y_mem[newest], y_mem[newest]))
        else:
            gamma = 1.0
        r = tree_map(lambda qq: gamma * qq, q)
        for i in reversed(order):
            b = rho[i] * _vdot(y_mem[i], r)
            coef = alphas[i] - b
            r = tree_map(lambda rr, ss_: rr + coef * ss_, r, s_mem[i])
        direction = tree_map(lambda rr: -rr, r)
        gd = _vdot(grads, direction)
        if not gd < 0:  # not a descent direction (or NaN): fall back to steepest descent
            direction = tree_map(lambda g: -g, grads)
            gd = -_vdot(grads, grads)
        if value_fn is not None:
            v0 = value if value is not None else value_fn(params)
            f0 = _f(v0)
            # Near the minimum, f changes by less than its rounding error: allow that much
            # slack (as Hager & Zhang's approximate Wolfe conditions do) instead of stalling.
            dt = np.result_type(getattr(v0, "dtype", np.float64))
            slack = 10.0 * float(np.finfo(dt if dt.kind == "f" else np.float64).eps) * abs(f0)
            if order:
                t = 1.0
            else:
                gnorm = math.sqrt(-gd) if gd < 0 else 1.0
                t = learning_rate / max(1.0, gnorm)
            for _ in range(max_backtracking):
                trial = apply_updates(params, tree_map(lambda d: t * d, direction))
                f_new = _f(value_fn(trial))
                if f_new <= f0 + c1 * t * gd + slack:
                    break
                t *= backtracking_factor
        else:
            t = float(learning_rate)
        updates = tree_map(lambda d: t * d, direction)
        new_state = LbfgsState(_inc(count), np.asarray(head, dtype=np.int32), tuple(s_mem), tuple(y_mem), rho,
                               params, grads)
        return updates, new_state

    return GradientTransformation(init, update)


class MinimizeInfo(NamedTuple):
    """What :func:`minimize_lbfgs` reports."""

    value: float
    grad_norm: float
    n_iter: int
    converged: bool


def minimize_lbfgs(fun: Callable[[Any], Any], params: Any, *, maxiter: int = 500, tol: float = 1e-6,
                   memory_size: int = 10, callback: Callable[[int, Any, float], None] | None = None
                   ) -> tuple[Any, MinimizeInfo]:
    """Minimize a scalar function of a pytree with L-BFGS until ``max |grad| <= tol``.

    Example::

        rosen = lambda x: fnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        x, info = fg.optim.minimize_lbfgs(rosen, np.zeros(10), tol=1e-8)
        info.converged, info.n_iter
    """
    opt = lbfgs(memory_size=memory_size)
    state = opt.init(params)
    vg = value_and_grad(fun)
    value, grads = vg(params)
    for it in range(maxiter):
        gmax = max((_f(np.max(np.abs(np.asarray(g.get() if hasattr(g, "get") else g))))
                    for g in tree_util.tree_leaves(grads)), default=0.0)
        if gmax <= tol:
            return params, MinimizeInfo(_f(value), gmax, it, True)
        updates, state = opt.update(grads, state, params, value=value, value_fn=fun)
        params = apply_updates(params, updates)
        value, grads = vg(params)
        if callback is not None:
            callback(it, params, _f(value))
    gmax = max((_f(np.max(np.abs(np.asarray(g.get() if hasattr(g, "get") else g))))
                for g in tree_util.tree_leaves(grads)), default=0.0)
    return params, MinimizeInfo(_f(value), gmax, maxiter, gmax <= tol)
