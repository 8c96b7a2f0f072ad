"""More rescalings (PyTorch's optimizers' formulas): AMSGrad, Adamax, NAdam, RAdam, Adadelta, and
momentum with dampening. Each is a :class:`GradientTransformation` giving the update direction for a
learning rate of 1 (chain :func:`scale_by_learning_rate` after it), as the rest of ``fg.optim``.

Example::

    opt = fg.optim.chain(fg.optim.scale_by_radam(), fg.optim.scale_by_learning_rate(1e-3))
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import funcgrad.numpy as fnp

from .. import tree_util
from .base import GradientTransformation
from .transforms import _count0, _inc, _zeros

__all__ = ["ScaleByAmsgradState", "ScaleByAdamaxState", "ScaleByAdadeltaState", "MomentumState", "scale_by_amsgrad",
           "scale_by_adamax", "scale_by_nadam", "scale_by_radam", "scale_by_adadelta", "momentum"]

tree_map = tree_util.tree_map


class ScaleByAmsgradState(NamedTuple):
    """Step count, moment estimates and the running maximum of the second moment."""

    count: Any
    mu: Any
    nu: Any
    nu_max: Any


class ScaleByAdamaxState(NamedTuple):
    """Step count, first moment and the infinity-norm estimate."""

    count: Any
    mu: Any
    exp_inf: Any


class ScaleByAdadeltaState(NamedTuple):
    """Running means of squared gradients and of squared updates."""

    square_avg: Any
    acc_delta: Any


class MomentumState(NamedTuple):
    """Step count and momentum buffer."""

    count: Any
    momentum_buffer: Any


def scale_by_amsgrad(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> GradientTransformation:
    """Adam with the maximum of the second moment so far in the denominator (Reddi et al.).

    Example: ``fg.optim.chain(fg.optim.scale_by_amsgrad(), fg.optim.scale_by_learning_rate(1e-3))``.
    """

    def init(params: Any) -> ScaleByAmsgradState:
        return ScaleByAmsgradState(_count0(), _zeros(params), _zeros(params), _zeros(params))

    def update(updates: Any, state: ScaleByAmsgradState, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        mu = tree_map(lambda g, m: b1 * m + (1.0 - b1) * g, updates, state.mu)
        nu = tree_map(lambda g, v: b2 * v + (1.0 - b2) * (g * g), updates, state.nu)
        nu_max = tree_map(fnp.maximum, state.nu_max, nu)
        t = int(state.count) + 1
        c1, c2 = 1.0 - b1 ** t, math.sqrt(1.0 - b2 ** t)
        out = tree_map(lambda m, v: (m / c1) / (fnp.sqrt(v) / c2 + eps), mu, nu_max)
        return out, ScaleByAmsgradState(_inc(state.count), mu, nu, nu_max)

    return GradientTransformation(init, update)


def scale_by_adamax(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> GradientTransformation:
    """Adamax (Kingma & Ba): ``m_hat / u`` with ``u = max(b2 u, |g| + eps)``.

    Example: ``fg.optim.scale_by_adamax()``.
    """

    def init(params: Any) -> ScaleByAdamaxState:
        return ScaleByAdamaxState(_count0(), _zeros(params), _zeros(params))

    def update(updates: Any, state: ScaleByAdamaxState, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        mu = tree_map(lambda g, m: b1 * m + (1.0 - b1) * g, updates, state.mu)
        u = tree_map(lambda g, e: fnp.maximum(b2 * e, fnp.abs(g) + eps), updates, state.exp_inf)
        t = int(state.count) + 1
        c1 = 1.0 - b1 ** t
        return tree_map(lambda m, e: m / (c1 * e), mu, u), ScaleByAdamaxState(_inc(state.count), mu, u)

    return GradientTransformation(init, update)


def scale_by_nadam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                   momentum_decay: float = 4e-3) -> GradientTransformation:
    """NAdam (Dozat): Adam with Nesterov momentum and PyTorch's momentum schedule
    ``mu_t = b1 (1 - 0.5 * 0.96 ** (t * momentum_decay))``.

    Example: ``fg.optim.scale_by_nadam()``.
    """

    def mu_t(t: int) -> float:
        return float(b1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay)))

    def init(params: Any) -> Any:
        from .transforms import ScaleByAdamState

        return ScaleByAdamState(_count0(), _zeros(params), _zeros(params))

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        mu = tree_map(lambda g, m: b1 * m + (1.0 - b1) * g, updates, state.mu)
        nu = tree_map(lambda g, v: b2 * v + (1.0 - b2) * (g * g), updates, state.nu)
        t = int(state.count) + 1
        prod = 1.0
        for i in range(1, t + 1):
            prod *= mu_t(i)
        m_now, m_next = mu_t(t), mu_t(t + 1)
        c2 = 1.0 - b2 ** t
        a = (1.0 - m_now) / (1.0 - prod)
        b = m_next / (1.0 - prod * m_next)
        out = tree_map(lambda g, m, v: (a * g + b * m) / (fnp.sqrt(v / c2) + eps), updates, mu, nu)
        return out, type(state)(_inc(state.count), mu, nu)

    return GradientTransformation(init, update)


def scale_by_radam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> GradientTransformation:
    """RAdam (Liu et al.): Adam with the variance rectification term; plain momentum while the
    approximated SMA length is at most 5.

    Example: ``fg.optim.scale_by_radam()``.
    """
    rho_inf = 2.0 / (1.0 - b2) - 1.0

    def init(params: Any) -> Any:
        from .transforms import ScaleByAdamState

        return ScaleByAdamState(_count0(), _zeros(params), _zeros(params))

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        mu = tree_map(lambda g, m: b1 * m + (1.0 - b1) * g, updates, state.mu)
        nu = tree_map(lambda g, v: b2 * v + (1.0 - b2) * (g * g), updates, state.nu)
        t = int(state.count) + 1
        c1, c2 = 1.0 - b1 ** t, 1.0 - b2 ** t
        rho = rho_inf - 2.0 * t * b2 ** t / c2
        if rho > 5.0:
            r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
            out = tree_map(lambda m, v: (m / c1) * r * math.sqrt(c2) / (fnp.sqrt(v) + eps), mu, nu)
        else:
            out = tree_map(lambda m: m / c1, mu)
        return out, type(state)(_inc(state.count), mu, nu)

    return GradientTransformation(init, update)


def scale_by_adadelta(rho: float = 0.9, eps: float = 1e-6) -> GradientTransformation:
    """Adadelta (Zeiler): ``sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) * g``.

    Example: ``fg.optim.chain(fg.optim.scale_by_adadelta(), fg.optim.scale_by_learning_rate(1.0))``.
    """

    def init(params: Any) -> ScaleByAdadeltaState:
        return ScaleByAdadeltaState(_zeros(params), _zeros(params))

    def update(updates: Any, state: ScaleByAdadeltaState, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        sq = tree_map(lambda g, s: rho * s + (1.0 - rho) * (g * g), updates, state.square_avg)
        delta = tree_map(lambda g, s, a: fnp.sqrt(a + eps) / fnp.sqrt(s + eps) * g, updates, sq, state.acc_delta)
        acc = tree_map(lambda d, a: rho * a + (1.0 - rho) * (d * d), delta, state.acc_delta)
        return delta, ScaleByAdadeltaState(sq, acc)

    return GradientTransformation(init, update)


def momentum(decay: float, dampening: float = 0.0, nesterov: bool = False) -> GradientTransformation:
    """PyTorch's SGD momentum: the buffer starts at the first gradient, then ``b = decay b + (1 - dampening) g``;
    the update is ``b`` (``g + decay b`` with Nesterov).

    Example: ``fg.optim.chain(fg.optim.momentum(0.9, dampening=0.1), fg.optim.scale_by_learning_rate(0.1))``.
    """

    def init(params: Any) -> MomentumState:
        return MomentumState(_count0(), _zeros(params))

    def update(updates: Any, state: MomentumState, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        if int(state.count) == 0:
            buf = updates
        else:
            buf = tree_map(lambda g, b: decay * b + (1.0 - dampening) * g, updates, state.momentum_buffer)
        out = tree_map(lambda g, b: g + decay * b, updates, buf) if nesterov else buf
        return out, MomentumState(_inc(state.count), buf)

    return GradientTransformation(init, update)
