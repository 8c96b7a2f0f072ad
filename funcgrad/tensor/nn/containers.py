"""Containers: ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict`` (PyTorch's keys).

Example::

    blocks = ft.nn.ModuleList([ft.nn.Linear(4, 4) for _ in range(3)])
    scales = ft.nn.ParameterList([ft.nn.Parameter(ft.ones(4)) for _ in range(3)])
"""

from __future__ import annotations

import operator
import warnings
from typing import Any, Iterable, Iterator, cast

from ..tensor import Tensor
from .module import Module
from .parameter import Parameter

__all__ = ["ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Container"]


def _index(i: Any, n: int, what: str) -> int:
    i = operator.index(i)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range for a {what} of length {n}")
    return cast("int", i % n)


class ModuleList(Module):
    """Sub-modules in a list, registered as ``"0"``, ``"1"``, ... (their ``state_dict`` prefixes).

    Example: ``ft.nn.ModuleList([ft.nn.Linear(2, 2)]).append(ft.nn.ReLU())``.
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _renumber(self, mods: list[Any]) -> None:
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def append(self, module: Module) -> "ModuleList":
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._renumber(mods)

    def pop(self, index: int = -1) -> Module:
        mods = list(self._modules.values())
        m: Module = mods.pop(index)
        self._renumber(mods)
        return m

    def __getitem__(self, i: Any) -> Any:
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return ModuleList(mods[i])
        return mods[_index(i, len(mods), "ModuleList")]

    def __setitem__(self, i: int, module: Module) -> None:
        self.add_module(str(_index(i, len(self), "ModuleList")), module)

    def __delitem__(self, i: Any) -> None:
        mods = list(self._modules.values())
        del mods[i]
        self._renumber(mods)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleList has no forward: iterate over it in the parent's forward")


class _NamedStore(Module):
    """The mapping methods of ``ModuleDict`` / ``ParameterDict`` over their store (``_store``:
    ``"_modules"`` or ``"_parameters"``)."""

    _store = "_modules"

    def _entries(self) -> Any:
        return self.__dict__[self._store]

    def __delitem__(self, k: str) -> None:
        del self._entries()[k]

    def __contains__(self, k: object) -> bool:
        return k in self._entries()

    def __len__(self) -> int:
        return len(self._entries())

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def keys(self) -> Any:
        return self._entries().keys()

    def items(self) -> Any:
        return self._entries().items()

    def values(self) -> Any:
        return self._entries().values()


class ModuleDict(_NamedStore):
    """Sub-modules by name, in insertion order. Example: ``ft.nn.ModuleDict({"enc": enc, "dec": dec})``."""

    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def update(self, modules: Any) -> None:
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self.add_module(k, m)

    def __getitem__(self, k: str) -> Module:
        return cast(Module, self._modules[k])

    def __setitem__(self, k: str, m: Module) -> None:
        self.add_module(k, m)

    def pop(self, k: str) -> Module:
        return cast(Module, self._modules.pop(k))

    def clear(self) -> None:
        self._modules.clear()


def _as_param(v: Any) -> Any:
    if isinstance(v, Tensor) and not isinstance(v, Parameter):
        return Parameter(v)
    return v


class ParameterList(Module):
    """Parameters in a list, registered as ``"0"``, ``"1"``, ... (plain tensors become Parameters).

    Example: ``ft.nn.ParameterList([ft.nn.Parameter(ft.zeros(3))])``.
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def append(self, value: Any) -> "ParameterList":
        self.register_parameter(str(len(self._parameters)), _as_param(value))
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        for v in values:
            self.append(v)
        return self

    def __getitem__(self, i: Any) -> Any:
        ps = list(self._parameters.values())
        if isinstance(i, slice):
            return ParameterList(ps[i])
        return ps[_index(i, len(ps), "ParameterList")]

    def __setitem__(self, i: int, value: Any) -> None:
        self.register_parameter(str(_index(i, len(self), "ParameterList")), _as_param(value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._parameters.values()))

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}]"
                         for k, p in self._parameters.items())


class ParameterDict(_NamedStore):
    """Parameters by name. Example: ``ft.nn.ParameterDict({"scale": ft.nn.Parameter(ft.ones(3))})``."""

    _store = "_parameters"

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def update(self, parameters: Any) -> None:
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v

    def __getitem__(self, k: str) -> Any:
        return self._parameters[k]

    def __setitem__(self, k: str, v: Any) -> None:
        self.register_parameter(k, _as_param(v))


class Container(Module):
    """PyTorch's deprecated ``nn.Container``: a Module holding the sub-modules given by keyword.

    Example: ``ft.nn.Container(fc=ft.nn.Linear(2, 2))`` (warns; subclass ``ft.nn.Module`` instead).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
                      "Subclass that instead.", stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)
