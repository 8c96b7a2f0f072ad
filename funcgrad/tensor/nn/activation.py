"""Activation modules (``ft.nn.ReLU6``, ``ELU``, ``PReLU``, ...) over ``ft.nn.functional``.

Example::

    act = ft.nn.Hardswish()
    y = act(x)
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .module import Module, _Functional
from .layers import _const_param
from .bridge import _maybe_inplace
from . import functional as F

__all__ = ["Sigmoid", "Tanh", "SiLU", "LeakyReLU", "Softmax", "LogSoftmax", "ReLU6", "ELU", "SELU", "CELU", "Mish",
           "Softplus", "Softsign", "Hardtanh", "Hardsigmoid", "Hardswish", "LogSigmoid", "Softmin", "Tanhshrink",
           "Threshold", "GLU", "PReLU", "Softmax2d"]


class _Act(_Functional):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        names = self._args
        extra = set(kwargs) - set(names) - {"inplace"}
        if len(args) > len(names) + 1 or extra:
            raise TypeError(f"{type(self).__name__}() takes the arguments {names + ('inplace',)}, got "
                            f"{len(args)} positional and the keywords {sorted(kwargs)}")
        vals = dict(zip(names, args))
        vals.update({k: v for k, v in kwargs.items() if k in names})
        defaults = type(self)._defaults
        for n in names:
            object.__setattr__(self, n, vals.get(n, defaults.get(n)))
        self.inplace = bool(kwargs.get("inplace", args[len(names)] if len(args) > len(names) else False))

    _defaults: dict[Any, Any] = {}

    def forward(self, input: Tensor) -> Tensor:
        return _maybe_inplace(input, super().forward, self.inplace)

    _shows_inplace = False  # PyTorch's repr says inplace=True for some of them

    def extra_repr(self) -> str:
        inplace = ["inplace=True"] if self.inplace and self._shows_inplace else []
        return ", ".join([f"{n}={getattr(self, n)}" for n in self._args] + inplace)


def _act(name: str, fn: Any, args: tuple[Any, ...] = (), defaults: dict[Any, Any] | None = None,
         shows_inplace: bool = False) -> type:
    doc = f"``{name}``: the module form of ``ft.nn.functional.{fn.__name__}``. Example: ``ft.nn.{name}()(x)``."
    return type(name, (_Act,), {"_fn": staticmethod(fn), "_args": args, "_defaults": defaults or {}, "__doc__": doc,
                                "_shows_inplace": shows_inplace})


Sigmoid = _act("Sigmoid", F.sigmoid)
Tanh = _act("Tanh", F.tanh)
SiLU = _act("SiLU", F.silu, shows_inplace=True)
LeakyReLU = _act("LeakyReLU", F.leaky_relu, ("negative_slope",), {"negative_slope": 0.01}, True)
Softmax = _act("Softmax", F.softmax, ("dim",), {"dim": None})
LogSoftmax = _act("LogSoftmax", F.log_softmax, ("dim",), {"dim": None})
ReLU6 = _act("ReLU6", F.relu6, shows_inplace=True)
ELU = _act("ELU", F.elu, ("alpha",), {"alpha": 1.0}, True)
SELU = _act("SELU", F.selu, shows_inplace=True)
CELU = _act("CELU", F.celu, ("alpha",), {"alpha": 1.0}, True)
Mish = _act("Mish", F.mish, shows_inplace=True)
Softplus = _act("Softplus", F.softplus, ("beta", "threshold"), {"beta": 1.0, "threshold": 20.0})
Softsign = _act("Softsign", F.softsign)
Hardtanh = _act("Hardtanh", F.hardtanh, ("min_val", "max_val"), {"min_val": -1.0, "max_val": 1.0}, True)
Hardsigmoid = _act("Hardsigmoid", F.hardsigmoid)
Hardswish = _act("Hardswish", F.hardswish)
LogSigmoid = _act("LogSigmoid", F.logsigmoid)
Softmin = _act("Softmin", F.softmin, ("dim",), {"dim": None})
Tanhshrink = _act("Tanhshrink", F.tanhshrink)
Threshold = _act("Threshold", F.threshold, ("threshold", "value"), shows_inplace=True)
GLU = _act("GLU", F.glu, ("dim",), {"dim": -1})


class Softmax2d(Module):
    """Softmax over the channel axis of ``(N, C, H, W)`` or ``(C, H, W)``. Example: ``ft.nn.Softmax2d()(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        return input.softmax(-3)


class PReLU(_Functional):
    """``x`` if positive else ``weight * x``; one learned slope or one per channel (``num_parameters``).

    Example: ``ft.nn.PReLU(num_parameters=8)``.
    """

    _fn, _args = staticmethod(F.prelu), ("weight",)

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = _const_param((num_parameters,), init, dtype)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
