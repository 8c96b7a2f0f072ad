"""``ft.nn.Parameter``: a Tensor that a Module registers as one of its parameters."""

from __future__ import annotations

from typing import Any, SupportsIndex

import numpy as np

from funcgrad.backend import namespace_of

from .. import dtypes as _dt
from ..tensor import Tensor
from ..tensor_class import register_parameter_class
from ..tensor_helpers import _as_tensor

__all__ = ["Parameter"]


def _copy(value: Any) -> Any:
    """A copy of ``value`` on its own device (deepcopy and pickling of a Parameter)."""
    return namespace_of(value).array(value, copy=True)


class Parameter(Tensor):
    """A Tensor that is a module parameter: a leaf that requires grad by default.

    ``Parameter(t)`` shares memory with ``t`` (as in PyTorch).
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            data = Tensor._make(np.empty(0, dtype=_dt.get_default_dtype().np))
        data = _as_tensor(data)
        if requires_grad and data._value.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        return Parameter._make(data._value, requires_grad=requires_grad, inference=data._inference)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[Any, Any]) -> "Parameter":
        new = Parameter(Tensor._make(_copy(self._value)), self._requires_grad)
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return (Parameter, (Tensor._make(_copy(self._value)), self._requires_grad))


register_parameter_class(Parameter)  # the Tensor layer makes Parameters (copies, deepcopy) through it
