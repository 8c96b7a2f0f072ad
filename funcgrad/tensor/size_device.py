"""PyTorch's ``Size`` (a shape) and ``device`` (where a tensor's data lives), and the argument
types of sizes and dims: the small value types of the Tensor layer, below ``tensor.py``."""

from __future__ import annotations

import builtins
import collections
import math
from typing import Any, Sequence, SupportsIndex, Union

import numpy as np

from .. import backend as _backend

__all__ = ["Size", "device", "SizeArg", "DimArg", "MaxMin"]

_pyint = builtins.int


class Size(tuple[int, ...]):
    """A tensor's shape, like ``torch.Size`` (a tuple with ``numel()``)."""

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"ft.Size([{', '.join(str(s) for s in self)}])"

    def torch_repr(self) -> str:
        """How PyTorch prints this size (``torch.Size([2, 3])``): what error messages show, so
        that code matching PyTorch's messages works unchanged."""
        return f"torch.Size([{', '.join(str(s) for s in self)}])"


class device:
    """Where a tensor's data lives: ``device('cpu')`` or ``device('cuda', 0)``.

    ``'cuda'`` is an NVIDIA GPU through CuPy (``pip install 'funcgrad[cuda]'``);
    other platforms registered with ``funcgrad.backend.register_backend`` work too.
    An int is a CUDA device index, as in PyTorch (``device(0)`` is ``cuda:0``).
    """

    __slots__ = ("type", "index")
    type: str  # "cpu", "cuda", ...
    index: int | None

    def __init__(self, type: Any, index: int | None = None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, _backend.Device):
            type, index = type.platform, (None if type.platform == "cpu" else type.id)
        elif isinstance(type, (int, np.integer)) and not isinstance(type, bool):
            type, index = "cuda", _pyint(type)
        elif isinstance(type, str) and ":" in type:
            type, idx = type.split(":", 1)
            index = _pyint(idx)
        if type not in ("cpu", "cuda") and type not in _backend._BACKENDS:
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type = type
        self.index = index

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and (
            self.index == other.index or self.index is None or other.index is None)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


_CPU = device("cpu")
# Argument types of the public API: a size (``2, 3`` or ``(2, 3)``) and a dim (one or several).
SizeArg = Union[SupportsIndex, Sequence[SupportsIndex]]
DimArg = Union[SupportsIndex, Sequence[SupportsIndex], None]

MaxMin = collections.namedtuple("return_types", ["values", "indices"])  # type: ignore[name-match]  # torch's repr


def _backend_device(dev: device) -> Any:
    """The funcgrad.backend Device for a Tensor-layer device (index None: device 0)."""
    return _backend.as_device("cpu" if dev.type == "cpu" else f"{dev.type}:{dev.index or 0}")
