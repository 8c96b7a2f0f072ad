"""``inplace_variant(name)``: the in-place method ``<name>_`` of a Tensor method ``name``.

Mixins declare in-place forms with it, without importing ``tensor.py``::

    class _SpecialMixin:
        erf_ = inplace_variant("erf")        # x.erf_() writes x.erf() into x
"""

from __future__ import annotations

from typing import Any, Callable

from .tensor_type import TensorBase


def inplace_variant(name: str) -> Callable[..., Any]:
    """The in-place form ``<name>_`` of the method ``name``: ``exp_()`` writes ``exp()`` into the tensor,
    ``add_(y, alpha=2)`` writes ``add(y, alpha=2)`` (through ``Tensor._inplace``: version bump, view
    propagation and the autograd checks of every in-place op)."""

    def method(self: TensorBase[Any], *args: Any, **kwargs: Any) -> Any:
        return self._inplace(getattr(type(self), name), *args, **kwargs)

    method.__name__ = method.__qualname__ = name + "_"
    return method
