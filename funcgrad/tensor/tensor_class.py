"""The Tensor class, for the modules below ``tensor.py``: they make and recognise Tensors
through :func:`new_tensor` and :func:`is_tensor` without importing it (``tensor.py``
registers the class once, when it is defined).
"""

from __future__ import annotations

from typing import Any

__all__ = ["register_tensor_class", "new_tensor", "is_tensor"]


_TENSOR_CLS: list[Any] = []  # [Tensor], once tensor.py has registered it


def register_tensor_class(cls: type) -> None:
    """Called once by ``tensor.py``: the class of the values this layer hands to users. The
    modules below it (this one, the Tensor's method mixins) make and recognise Tensors through
    :func:`new_tensor` and :func:`is_tensor` without importing it."""
    _TENSOR_CLS[:] = [cls]


def new_tensor(value: Any) -> Any:
    """A Tensor of the array ``value``, with no history."""
    return _TENSOR_CLS[0]._make(value)


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a Tensor (or a Parameter)."""
    return isinstance(x, _TENSOR_CLS[0])
