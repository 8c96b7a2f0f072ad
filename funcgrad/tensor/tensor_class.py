"""The Tensor class, for the modules below ``tensor.py``: they make and recognise Tensors
through :func:`new_tensor` and :func:`is_tensor` without importing it (``tensor.py``
registers the class once, when it is defined).
"""

from __future__ import annotations

from typing import Any

__all__ = ["register_tensor_class", "register_parameter_class", "new_tensor", "is_tensor"]


_TENSOR_CLS: list[Any] = []  # [Tensor], once tensor.py has registered it
# [Parameter] once ft.nn.Parameter is defined (until then [Tensor]): the two exact types the hot paths check
_PARAM: list[Any] = []


def register_tensor_class(cls: type) -> None:
    """Called once by ``tensor.py``: the class of the values this layer hands to users. The
    modules below it (this one, the Tensor's method mixins) make and recognise Tensors through
    :func:`new_tensor` and :func:`is_tensor` without importing it."""
    _TENSOR_CLS[:] = [cls]
    if not _PARAM:
        _PARAM[:] = [cls]


def register_parameter_class(cls: type) -> None:
    """Called once by ``nn/parameter.py``: ``Parameter``, which the Tensor layer's type checks
    on hot paths test by exact type beside ``Tensor``."""
    _PARAM[:] = [cls]


def new_tensor(value: Any) -> Any:
    """A Tensor of the array ``value``, with no history."""
    return _TENSOR_CLS[0]._make(value)


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a Tensor (or a Parameter)."""
    return isinstance(x, _TENSOR_CLS[0])
