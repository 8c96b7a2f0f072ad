"""Top-level torch functions that tutorials use and the rest of ``ft`` lacks: the default device,
``multinomial``, ``bernoulli``, ``unique``, ``bincount``, ``median``.

Example::

    ft.set_default_device("cpu")
    idx = ft.multinomial(ft.tensor([0.1, 0.9]), 5, replacement=True)
"""

# A result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor class
# ``TensorT`` of the argument (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

from typing import Any

import numpy as np

from . import factory_defaults as _defaults
from .factory_defaults import Generator
from .sampling import multinomial_draws
from .size_device import device
from .tensor_class import new_tensor
from .tensor_helpers import _as_tensor
from .tensor_type import TensorBase, TensorT


__all__ = ["set_default_device", "get_default_device", "multinomial", "bernoulli", "unique", "bincount", "median"]


def set_default_device(dev: Any) -> None:
    """Factories (``ft.zeros``, ``ft.randn``, ``ft.tensor``, ...) and new ``ft.nn`` layers put tensors made
    without ``device=`` on ``dev`` (None restores the CPU). Example: ``ft.set_default_device("cuda")``."""
    _defaults._DEFAULT_DEVICE[0] = None if dev is None else device(dev)


def get_default_device() -> device:
    """The device factories use when none is given. Example: ``ft.get_default_device()  # device(type='cpu')``."""
    d = _defaults._DEFAULT_DEVICE[0]
    return device("cpu") if d is None else d


def _on_default_device(t: TensorT) -> TensorT:
    d = _defaults._DEFAULT_DEVICE[0]
    return t if d is None or d.type == "cpu" else t.to(d)


def multinomial(input: TensorBase[TensorT], num_samples: int, replacement: bool = False, *,  # noqa: A002
                generator: Generator | None = None) -> TensorT:
    """Draw ``num_samples`` category indices per row with probabilities proportional to ``input``.

    Example: ``ft.multinomial(ft.tensor([1.0, 3.0]), 4, replacement=True)``.
    """
    p = np.asarray(_as_tensor(input).detach().cpu()._value, dtype=np.float64)
    return new_tensor(multinomial_draws(_defaults._rng(generator), p, num_samples, replacement))


def bernoulli(input: TensorBase[TensorT], p: float | None = None, *, generator: Generator | None = None) -> TensorT:  # noqa: A002
    """0/1 draws with probability ``input`` (or ``p``), in ``input``'s dtype; no gradient flows (as in PyTorch).

    Example: ``ft.bernoulli(ft.full((3,), 0.5))`` or ``ft.full((3,), 0.5).bernoulli()``.
    """
    t = _as_tensor(input)
    if not t.is_floating_point():
        raise RuntimeError(f"bernoulli expects a floating point input (the probabilities), got {t.dtype}")
    probs = np.asarray(t.detach().cpu()._value) if p is None else np.full(tuple(t.shape), p)
    if np.any((probs < 0) | (probs > 1)) or np.any(np.isnan(probs)):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false: bernoulli probabilities "
                           "must lie in [0, 1]")
    rng = _defaults._rng(generator)
    return new_tensor((rng.random(probs.shape) < probs).astype(t._value.dtype))


def unique(input: TensorBase[TensorT], sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
           dim: int | None = None) -> Any:
    """The distinct values (sorted; with ``dim``, slices), optionally with inverse indices and counts:
    ``input.unique(...)``. Example: ``ft.unique(t)``."""
    return _as_tensor(input).unique(sorted, return_inverse, return_counts, dim)


def bincount(input: TensorBase[TensorT], weights: TensorBase[TensorT] | None = None, minlength: int = 0) -> TensorT:  # noqa: A002
    """Counts of each non-negative integer (weighted sums with ``weights``). Example: ``ft.bincount(labels)``."""
    return _as_tensor(input).bincount(weights, minlength)


def median(input: TensorBase[TensorT], dim: int | None = None, keepdim: bool = False) -> Any:  # noqa: A002
    """``input.median(dim, keepdim)``: the lower median (PyTorch's: no averaging), NaN where a NaN is
    reduced; with ``dim``, ``(values, indices)``.

    Example: ``ft.median(ft.tensor([3.0, 1.0, 2.0, 4.0]))  # tensor(2.)``.
    """
    return _as_tensor(input).median(dim, keepdim)


