"""Optimizers that treat a parameter as a matrix, written directly on the arrays as PyTorch writes them:
``Adafactor`` (a factored second moment: one row and one column statistic per matrix) and ``Muon``
(momentum orthogonalized by a Newton-Schulz iteration); and ``SparseAdam``, which PyTorch keeps for
sparse gradients (``funcgrad.tensor`` has none, so its step says so, as PyTorch's does for dense ones).

Their live ``state[p]`` holds PyTorch's slots (``step``, ``row_var``, ``col_var`` or ``variance``;
``momentum_buffer``), so state dicts move between the two.

Example::

    opt = ft.optim.Adafactor(model.parameters(), lr=1e-2)
    hidden = ft.optim.Muon([layer.weight for layer in hidden_layers], lr=0.02)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import numpy as np

from ...backend import namespace_of
from ..grad_mode import enable_grad, no_grad
from ..tensor import Tensor
from .direct import _Direct, _scalar
from .optimizer import Optimizer

__all__ = ["Adafactor", "Muon", "SparseAdam"]


def _norm(xp: Any, a: Any) -> float:
    return float(xp.sqrt(xp.sum(a * a)))


class Adafactor(_Direct):
    """Adafactor (Shazeer and Stern), as ``torch.optim.Adafactor``: the second moment of a matrix gradient
    kept as its row and column means (``beta2_t = 1 - t^beta2_decay``), the step relative to the parameter's
    RMS (at least ``eps[1]``) and clipped to RMS ``d``; decoupled weight decay.

    Example: ``ft.optim.Adafactor(model.parameters(), lr=1e-2, weight_decay=0.01)``.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: Any = None, maximize: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize))

    def _update(self, p: Tensor, g: Any, group: dict[Any, Any]) -> None:
        xp = namespace_of(p._value)
        if p._value.dtype.kind == "c":
            raise RuntimeError("Adafactor does not support complex parameters")
        st = self.state[p]
        if not st:
            st["step"] = _scalar(0.0)
            if g.ndim > 1:
                st["row_var"] = Tensor._make(xp.zeros(g.shape[:-1] + (1,), dtype=g.dtype))
                st["col_var"] = Tensor._make(xp.zeros(g.shape[:-2] + (1,) + g.shape[-1:], dtype=g.dtype))
            else:
                st["variance"] = Tensor._make(xp.zeros_like(g))
        st["step"]._value[...] += 1
        step = float(st["step"]._value)
        lr, wd, d = group["lr"], group["weight_decay"], group["d"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(p._value.dtype).eps)
        w = step ** group["beta2_decay"]
        rho = min(lr, 1 / step ** 0.5)
        alpha = max(eps2, _norm(xp, p._value) / p._value.size ** 0.5) * rho
        if wd:
            p._value *= 1 - lr * wd
        if g.ndim > 1:
            row, col = st["row_var"]._value, st["col_var"]._value
            row += w * (xp.mean(g * g, axis=-1, keepdims=True) - row)
            col += w * (xp.mean(g * g, axis=-2, keepdims=True) - col)
            var = (row @ col) / xp.maximum(xp.mean(row, axis=-2, keepdims=True), eps1)
        else:
            v = st["variance"]._value
            v += w * (g * g - v)
            var = v.copy()
        update = g / xp.sqrt(xp.maximum(var, eps1 * eps1))
        denom = max(1.0, _norm(xp, update) / (update.size ** 0.5 * d))
        p._value -= (alpha / denom * update).astype(p._value.dtype, copy=False)


def _orthogonalize(xp: Any, g: Any, coefficients: tuple[float, float, float], steps: int, eps: float) -> Any:
    """The quintic Newton-Schulz iteration towards ``U V^T`` of ``g = U S V^T`` (in ``g``'s own dtype:
    PyTorch runs it in bfloat16, which NumPy does not have)."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if g.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    tall = g.shape[0] > g.shape[1]
    x = g.T if tall else g
    x = x / max(_norm(xp, x), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.T if tall else x


class Muon(_Direct):
    """Muon, as ``torch.optim.Muon``: momentum (Nesterov by default) orthogonalized by ``ns_steps``
    Newton-Schulz iterations, decoupled weight decay, and the learning rate scaled for the matrix's shape
    (``sqrt(max(1, rows / cols))``, or ``0.2 sqrt(max(rows, cols))`` with ``adjust_lr_fn="match_rms_adamw"``).
    For 2-d parameters only (hidden layers' weights; give biases and embeddings to AdamW).

    Example: ``ft.optim.Muon([lin.weight for lin in hidden], lr=0.02, momentum=0.95)``.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315),
                 eps: float = 1e-7, ns_steps: int = 5, adjust_lr_fn: str | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                                      ns_coefficients=tuple(ns_coefficients), eps=eps, ns_steps=ns_steps,
                                      adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size().torch_repr()}")

    def _update(self, p: Tensor, g: Any, group: dict[Any, Any]) -> None:
        xp = namespace_of(p._value)
        if p._value.dtype.kind == "c":
            raise RuntimeError("Muon does not support complex parameters")
        st = self.state[p]
        if "momentum_buffer" not in st:
            st["momentum_buffer"] = Tensor._make(xp.zeros_like(g))
        mu = group["momentum"]
        buf = st["momentum_buffer"]._value
        buf += (1 - mu) * (g - buf)
        direction = g + mu * (buf - g) if group["nesterov"] else buf
        ortho = _orthogonalize(xp, direction, group["ns_coefficients"], group["ns_steps"], group["eps"])
        rows, cols = p._value.shape[:2]
        fn = group["adjust_lr_fn"]
        ratio = math.sqrt(max(1, rows / cols)) if fn in (None, "original") else 0.2 * math.sqrt(max(rows, cols))
        lr = group["lr"]
        p._value *= 1 - lr * group["weight_decay"]
        p._value -= (lr * ratio * ortho).astype(p._value.dtype, copy=False)


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam`` takes sparse gradients only; ``funcgrad.tensor`` has no sparse tensors, so
    a step with a (dense) gradient raises PyTorch's error for dense gradients. Use ``Adam``.

    Example: ``ft.optim.SparseAdam(params)`` constructs; ``.step()`` after a backward raises.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Raises for any gradient (they are dense here), as PyTorch's SparseAdam does for dense ones."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return loss
