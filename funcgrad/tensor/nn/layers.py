"""The small layers of ``ft.nn`` (``Linear``, ``Sequential``, ``Identity``, ``Flatten``, ``ReLU``,
``GELU``) and the helpers the layer modules share (PyTorch's default initialisation, one
class per rank)."""

from __future__ import annotations

import collections
import math
from typing import Any, Iterator

import numpy as np

from funcgrad.nn import init as _init

from ..creation import _np_dtype as _np_dtype  # one copy, re-exported for the layers
from ..creation import default_generator
from ..tensor import Tensor
from ..toplevel import _on_default_device
from . import functional
from .module import Module, stored_attr
from .parameter import Parameter

__all__ = ["Linear", "Sequential", "Identity", "Flatten", "ReLU", "GELU"]


def _uniform_param(shape: tuple[Any, ...], bound: float, dtype: Any = None) -> Parameter:
    """A Parameter drawn uniformly from ``[-bound, bound]`` with ft's generator (PyTorch's layer default)."""
    d = _np_dtype(dtype)
    vals = _init.uniform(default_generator._rng, shape, d, -bound, bound)
    return _new_param(np.asarray(vals, dtype=d))


def _const_param(shape: tuple[Any, ...], value: float, dtype: Any = None) -> Parameter:
    return _new_param(np.full(shape, value, dtype=_np_dtype(dtype)))


def _new_param(values: Any, requires_grad: bool = True) -> Parameter:
    """A Parameter holding ``values``, on ft's default device (``ft.set_default_device``)."""
    return Parameter(_on_default_device(Tensor._make(values)), requires_grad)


class Linear(Module):
    """``y = x @ weight.T + bias`` with PyTorch's default initialisation (uniform in ``±1/sqrt(in_features)``)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        d = _np_dtype(dtype)
        w = _init.torch_default(default_generator._rng, (out_features, in_features), d)
        self.weight = _new_param(np.asarray(w, dtype=d))
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.register_parameter("bias", _uniform_param((out_features,), bound, dtype) if bias else None)

    def forward(self, input: Tensor) -> Tensor:
        return functional.linear(input, stored_attr(self, "weight"), stored_attr(self, "bias"))

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Sequential(Module):
    """Modules applied in order; indexable and iterable."""

    def __init__(self, *mods: Any) -> None:
        super().__init__()
        named = len(mods) == 1 and isinstance(mods[0], collections.OrderedDict)
        for name, m in mods[0].items() if named else ((str(i), m) for i, m in enumerate(mods)):
            self.add_module(name, m)

    def forward(self, input: Any) -> Any:
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, i: Any) -> Any:
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return Sequential(*mods[i])
        return mods[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, m: Module) -> "Sequential":
        self.add_module(str(len(self)), m)
        return self


_SHAPES = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}


def _per_rank(base: type, name: str, fn: str | None, doc: str, ranks: tuple[int, ...] = (1, 2, 3)) -> tuple[type, ...]:
    """The subclasses of ``base`` per rank ``_n`` (``Conv1d``, ``Conv2d``, ``Conv3d``) whose functional form ``_fn``
    is ``F.<fn>`` (``conv1d`` ...); ``name``, ``fn`` and ``doc`` are formatted with ``n`` and the input ``shape``."""

    def attrs(n: int) -> dict[str, Any]:
        out = {"_n": n, "__module__": base.__module__, "__doc__": doc.format(n=n, shape=_SHAPES[n])}
        if fn is not None:
            out["_fn"] = staticmethod(getattr(functional, fn.format(n=n)))
        return out

    return tuple(type(name.format(n=n), (base,), attrs(n)) for n in ranks)


class Identity(Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)


class ReLU(Module):
    """``relu`` as a module; with ``inplace=True`` it overwrites its input (``x.relu_()``), as PyTorch's."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return input.relu_() if self.inplace else input.relu()

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return functional.gelu(input, self.approximate)
