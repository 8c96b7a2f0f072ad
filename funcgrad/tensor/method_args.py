"""Argument handling of the breadth mixins (issue 29 part B) that ``tensor_helpers`` does not have: tensor
operands on ``self``'s dtype and device, promoted pairs, checked index arrays, size and dims lists.

Example::

    operand(x, 2.0)            # a 0-d tensor of x's dtype, on x's device
    int_list((2, 3))           # [2, 3]
"""

from __future__ import annotations

import builtins
import functools
from typing import Any, Callable, TypeVar

from ..backend import namespace_of
from . import dtypes as _dt
from .tensor_class import is_tensor, new_tensor
from .tensor_helpers import named_result

_Method = TypeVar("_Method", bound=Callable[..., Any])

__all__ = ["operand", "promoted", "index_array", "int_list", "recorded_as"]


def operand(self: Any, x: Any) -> Any:
    """``x`` as a tensor: a tensor as it is, a number or array as a constant tensor of ``self``'s dtype
    (for numbers) on ``self``'s device."""
    if is_tensor(x):
        return x
    xp = namespace_of(self._value)
    if isinstance(x, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        return new_tensor(xp.asarray(x, dtype=self._value.dtype))
    return new_tensor(xp.asarray(x))


def promoted(a: Any, b: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` (tensors) cast to their common dtype, as PyTorch's binary ops promote."""
    if a.dtype == b.dtype:
        return a, b
    common = _dt.promote_types(a.dtype, b.dtype)
    return a.to(common), b.to(common)


def index_array(index: Any, op: str, arg: str = "index") -> Any:
    """The raw integer array of an index tensor, refused (PyTorch's wording) when it is not a tensor or
    not of an integer dtype."""
    if not is_tensor(index):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(index).__name__}")
    idx = index._value
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for {arg}, but got {index.dtype}")
    return idx


def int_list(x: Any) -> list[int]:
    """A size or dims argument (an int, a sequence or a 1-D integer tensor) as a list of Python ints."""
    if is_tensor(x):
        return [builtins.int(v) for v in x.tolist()] if x.dim() else [builtins.int(x.item())]
    if isinstance(x, (list, tuple)):
        return [builtins.int(v) for v in x]
    return [builtins.int(x)]


def recorded_as(name: str) -> Callable[[_Method], _Method]:
    """A method whose result's ``grad_fn`` carries PyTorch's node name ``name`` (a composite: its
    result's node, made during the call, takes ``name``; see ``tensor_helpers.named_result``).

    Example::

        @recorded_as("IndexAddBackward0")
        def index_add(self, dim, index, source, *, alpha=1): ...
    """

    def decorate(method: _Method) -> _Method:
        return functools.wraps(method)(named_result(name, method))  # type: ignore[return-value]

    return decorate
