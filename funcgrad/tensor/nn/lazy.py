"""Lazy modules: ``LazyLinear``, ``LazyConv{1,2,3}d``, ``LazyConvTranspose{1,2,3}d``,
``LazyBatchNorm{1,2,3}d`` and ``LazyInstanceNorm{1,2,3}d`` infer their input size (features or channels)
from the first input, then become the ordinary module (``type(m)`` is ``Linear`` afterwards, as in
PyTorch) with that module's initialization drawn at that moment from ``ft``'s generator.

Before the first call a lazy module holds no parameters (PyTorch holds ``UninitializedParameter``
placeholders): run one forward pass before building an optimizer over ``model.parameters()``, as
PyTorch's documentation advises. Hooks registered on the lazy module are kept.

Example::

    model = ft.nn.Sequential(ft.nn.LazyConv2d(16, 3), ft.nn.ReLU(), ft.nn.Flatten(), ft.nn.LazyLinear(10))
    model(ft.randn(1, 3, 8, 8))                  # materializes: Conv2d(3, 16, 3), Linear(576, 10)
    opt = ft.optim.SGD(model.parameters(), lr=0.1)
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .layers import Linear
from .module import Module
from .norm import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

_KEPT = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks", "training")


class LazyModuleMixin(Module):
    """A module whose first input fixes its remaining size argument: ``forward`` builds
    ``cls_to_become(size, *args, **kwargs)``, takes over its state and class, and runs it."""

    cls_to_become: type
    _spatial: int = 0  # spatial axes of the input (conv, norms): an input with one axis more is unbatched

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        object.__setattr__(self, "_lazy_args", (args, kwargs))

    def has_uninitialized_params(self) -> bool:
        """True until the first forward pass. Example: ``ft.nn.LazyLinear(3).has_uninitialized_params()``."""
        return True

    def _input_size(self, x: Tensor) -> int:
        axis = 0 if self._spatial and x.dim() == self._spatial + 1 else 1
        if x.dim() <= axis:
            raise ValueError(f"{type(self).__name__}: cannot infer the input size from an input of shape "
                             f"{list(x.shape)}")
        return int(x.shape[axis])

    def initialize_parameters(self, input: Tensor) -> None:  # noqa: A002
        """Become ``cls_to_become`` sized for ``input`` (what the first forward pass does).

        Example: ``m = ft.nn.LazyLinear(3); m.initialize_parameters(x); type(m) is ft.nn.Linear``.
        """
        args, kwargs = self._lazy_args
        real = self.cls_to_become(self._input_size(input), *args, **kwargs)
        kept = {k: self.__dict__[k] for k in _KEPT}
        self.__dict__.clear()
        self.__dict__.update(real.__dict__)
        self.__dict__.update(kept)
        self.__class__ = self.cls_to_become
        if not self.training:
            self.train(False)

    def forward(self, input: Tensor, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)

    def extra_repr(self) -> str:
        args, kwargs = self._lazy_args
        return ", ".join([f"{a!r}" for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])


class LazyLinear(LazyModuleMixin):
    """``Linear`` with ``in_features`` from the first input's last axis. Example: ``ft.nn.LazyLinear(10)``."""

    cls_to_become = Linear

    def _input_size(self, x: Tensor) -> int:
        return int(x.shape[-1])


def _lazy(name: str, real: type, spatial: int) -> type:
    doc = (f"``{real.__name__}`` with its input channels / features from the first input. "
           f"Example: ``ft.nn.{name}(...)``.")
    return type(name, (LazyModuleMixin,), {"cls_to_become": real, "_spatial": spatial, "__doc__": doc,
                                           "__module__": __name__})


LazyConv1d = _lazy("LazyConv1d", Conv1d, 1)
LazyConv2d = _lazy("LazyConv2d", Conv2d, 2)
LazyConv3d = _lazy("LazyConv3d", Conv3d, 3)
LazyConvTranspose1d = _lazy("LazyConvTranspose1d", ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy("LazyConvTranspose2d", ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy("LazyConvTranspose3d", ConvTranspose3d, 3)
LazyBatchNorm1d = _lazy("LazyBatchNorm1d", BatchNorm1d, 0)
LazyBatchNorm2d = _lazy("LazyBatchNorm2d", BatchNorm2d, 0)
LazyBatchNorm3d = _lazy("LazyBatchNorm3d", BatchNorm3d, 0)
LazyInstanceNorm1d = _lazy("LazyInstanceNorm1d", InstanceNorm1d, 1)
LazyInstanceNorm2d = _lazy("LazyInstanceNorm2d", InstanceNorm2d, 2)
LazyInstanceNorm3d = _lazy("LazyInstanceNorm3d", InstanceNorm3d, 3)
