"""``ft.nn.utils``: gradient clipping and flattening parameters to a vector (PyTorch's semantics); the
submodule ``rnn`` pads and packs variable-length sequences.

Example::

    loss.backward()
    ft.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from funcgrad.backend import namespace_of

from ...grad_mode import no_grad
from ...ops import cat
from ...tensor import Tensor
from . import rnn  # noqa: F401  (the submodule ft.nn.utils.rnn)

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters", "get_total_norm",
           "clip_grads_with_norm_", "rnn"]


def _params(parameters: Any) -> list[Any]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _grads(parameters: Any) -> list[Any]:
    return [p.grad for p in _params(parameters) if p.grad is not None]


def _vector_norm(xp: Any, g: Any, p: float) -> Any:
    """The ``p``-norm of all elements of ``g`` (inf, -inf and 0 as torch.linalg.vector_norm)."""
    a = xp.abs(g.reshape(-1))
    if p == math.inf:
        return xp.max(a) if a.size else xp.zeros((), a.dtype)
    if p == -math.inf:
        return xp.min(a) if a.size else xp.full((), math.inf, a.dtype)
    if p == 0:
        return xp.sum(a != 0).astype(a.dtype)
    if p == 2:
        return xp.sqrt(xp.sum(a * a))
    return xp.sum(a ** p) ** (1.0 / p)


def get_total_norm(tensors: Any, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Any = None) -> Tensor:
    """The ``norm_type``-norm of all tensors together (as if concatenated). Example: ``get_total_norm(grads)``."""
    ts = _params(tensors)
    if not ts:
        return Tensor._make(np.asarray(0.0, dtype=np.float32))
    p = float(norm_type)
    xp = namespace_of(ts[0]._value)
    # PyTorch's total: the norm of the per-tensor norms (norm_type 0 thus counts the nonzero
    # per-tensor counts); on the tensors' device, without reading anything back (no host sync)
    total = _vector_norm(xp, xp.stack([_vector_norm(xp, t._value.astype(np.float64), p) for t in ts]), p)
    total = xp.asarray(total, dtype=ts[0]._value.dtype)
    if error_if_nonfinite and not bool(xp.isfinite(total)):  # (this check reads the norm, as in PyTorch)
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           f"it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           f"norm anyway, set `error_if_nonfinite=False`")
    return Tensor._make(total)


def clip_grads_with_norm_(parameters: Any, max_norm: float, total_norm: Tensor, foreach: Any = None) -> None:
    """Scale gradients by ``min(1, max_norm / (total_norm + 1e-6))`` in place (on the device, no host sync)."""
    t = total_norm._value
    xp = namespace_of(t)
    coef = xp.minimum(float(max_norm) / (t + 1e-6), 1.0)
    with no_grad():
        for g in _grads(parameters):
            g._value *= coef.astype(g._value.dtype)
            g._version_counter[0] += 1


def clip_grad_norm_(parameters: Any, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: Any = None) -> Tensor:
    """Rescale gradients in place so their total ``norm_type``-norm is at most ``max_norm``; returns the norm
    before clipping. With ``error_if_nonfinite`` a NaN/inf norm raises.

    Example: ``ft.nn.utils.clip_grad_norm_(model.parameters(), 1.0)``.
    """
    params = _params(parameters)
    total = get_total_norm(_grads(params), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_value_(parameters: Any, clip_value: float, foreach: Any = None) -> None:
    """Clamp every gradient into ``[-clip_value, clip_value]`` in place. Example: ``clip_grad_value_(ps, 0.5)``."""
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated (differentiable). Example: ``v = parameters_to_vector(m.parameters())``."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy slices of ``vec`` into the parameters, in order (the inverse of :func:`parameters_to_vector`).

    Example: ``vector_to_parameters(v, model.parameters())``.
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    off = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            if off + n > vec.numel():
                raise RuntimeError(f"vector_to_parameters: the vector has {vec.numel()} elements, fewer than the "
                                   f"parameters need")
            p.copy_(vec[off:off + n].reshape(p.shape))
            off += n
