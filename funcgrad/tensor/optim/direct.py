"""Optimizers written directly on the parameters' arrays, as PyTorch writes them: ``Rprop`` and ``ASGD``
(``funcgrad.optim`` has no counterpart to build them on). Their live ``state[p]`` holds PyTorch's slots
(``step``, ``prev``, ``step_size``; ``step``, ``eta``, ``mu``, ``ax``), so state dicts move between the two.

Example::

    opt = ft.optim.Rprop(model.parameters(), lr=0.01)
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ...backend import namespace_of
from ..grad_mode import enable_grad, no_grad
from ..tensor import Tensor
from .optimizer import Optimizer, _check, _check_common

__all__ = ["Rprop", "ASGD"]


def _scalar(value: float) -> Tensor:
    """A 0-d float32 host tensor (how PyTorch keeps ``step``, ``eta`` and ``mu``)."""
    return Tensor._make(np.array(value, dtype=np.float32))


class _Direct(Optimizer):
    def _update(self, p: Tensor, g: Any, group: dict[Any, Any]) -> None:
        raise NotImplementedError

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; ``closure`` re-evaluates the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                g = p._grad._value
                self._update(p, -g if group.get("maximize", False) else g, group)
                p._version_counter[0] += 1
        return loss


class Rprop(_Direct):
    """Resilient backpropagation, as ``torch.optim.Rprop``: per-element step sizes grown by ``etas[1]``
    while the gradient keeps its sign and shrunk by ``etas[0]`` when it flips (that step is skipped).

    Example: ``ft.optim.Rprop(model.parameters(), lr=0.01, etas=(0.5, 1.2))``.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False, foreach: Any = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check_common(lr)
        _check("eta values", etas, 0.0 < etas[0] < 1.0 < etas[1])
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    def _update(self, p: Tensor, g: Any, group: dict[Any, Any]) -> None:
        xp = namespace_of(p._value)
        st = self.state[p]
        if not st:
            st["step"] = _scalar(0.0)
            st["prev"] = Tensor._make(xp.zeros_like(p._value))
            st["step_size"] = Tensor._make(xp.full_like(g, group["lr"]))
        st["step"]._value[...] += 1
        eta_minus, eta_plus = group["etas"]
        lo, hi = group["step_sizes"]
        prev, step_size = st["prev"]._value, st["step_size"]._value
        sign = xp.sign(g * prev)
        factor = xp.where(sign > 0, eta_plus, xp.where(sign < 0, eta_minus, 1.0)).astype(g.dtype)
        step_size[...] = xp.clip(step_size * factor, lo, hi)
        g = xp.where(sign < 0, xp.zeros_like(g), g)  # after a sign flip: no step, and no memory of it
        p._value -= (xp.sign(g) * step_size).astype(p._value.dtype, copy=False)
        prev[...] = g


class ASGD(_Direct):
    """Averaged stochastic gradient descent, as ``torch.optim.ASGD``: SGD with a decaying rate ``eta``
    and a running average ``ax`` of the iterates that starts after ``t0`` steps.

    Example: ``ft.optim.ASGD(model.parameters(), lr=0.01, t0=1000)``.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0.0, foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_common(lr, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _update(self, p: Tensor, g: Any, group: dict[Any, Any]) -> None:
        xp = namespace_of(p._value)
        st = self.state[p]
        if not st:
            st["step"] = _scalar(0.0)
            st["eta"] = _scalar(group["lr"])
            st["mu"] = _scalar(1.0)
            st["ax"] = Tensor._make(xp.zeros_like(p._value))
        st["step"]._value[...] += 1
        step = float(st["step"]._value)
        lr, lambd, alpha, t0, wd = group["lr"], group["lambd"], group["alpha"], group["t0"], group["weight_decay"]
        if wd:
            g = g + wd * p._value
        eta = float(st["eta"]._value)  # (a float32 value, as PyTorch reads it)
        p._value *= 1 - lambd * eta
        p._value -= (eta * g).astype(p._value.dtype, copy=False)
        mu = st["mu"]._value
        ax = st["ax"]._value
        if float(mu) != 1:
            ax += ((p._value - ax) * mu).astype(ax.dtype, copy=False)
        else:
            ax[...] = p._value
        st["eta"]._value[...] = lr / ((1 + lambd * lr * step) ** alpha)
        st["mu"]._value[...] = 1 / max(1.0, step - t0)
