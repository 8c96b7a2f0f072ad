"""``ft.autograd``: backward, grad, custom Functions, functional tools, hooks, anomaly mode, profiler.

Mirrors ``torch.autograd``.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..backward import backward, grad  # noqa: F401
from ..function import Function, FunctionCtx, InplaceFunction, NestedIOFunction, once_differentiable  # noqa: F401
from ..grad_mode import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from ..anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly  # noqa: F401
# the submodules first: importing them later would rebind ``gradcheck`` to its module
from . import forward_ad, function, functional, grad_mode, gradcheck, graph, profiler  # noqa: F401
from .gradcheck import gradcheck, gradgradcheck, GradcheckError  # type: ignore[no-redef]  # noqa: F401,F811
from ..tensor import Tensor

__all__ = [
    "backward", "grad", "Function", "FunctionCtx", "once_differentiable", "Variable", "functional", "graph",
    "profiler", "forward_ad", "gradcheck", "gradgradcheck", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
    "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
]


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated alias: ``Variable(t, requires_grad=...)`` returns a Tensor, as in PyTorch >= 0.4."""

    def __new__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False) -> Tensor:  # type: ignore[misc]
        warnings.warn("The Variable API is deprecated: use tensors directly (Variable(t) returns t).",
                      DeprecationWarning, stacklevel=2)
        from ..tensor_helpers import _as_tensor

        t = _as_tensor(data) if data is not None else Tensor._make(__import__("numpy").zeros(0, "float32"))
        if requires_grad:
            t = t.detach().requires_grad_(True) if t._node is None else t
        return t


class _ExecutionEngine:
    """``Variable._execution_engine``: what PyTorch code reaches for to queue a callback."""

    @staticmethod
    def queue_callback(callback: Any) -> None:
        """Run ``callback()`` once the backward pass now running has finished (only inside one).

        Example::

            x.register_hook(lambda g: ft.autograd.Variable._execution_engine.queue_callback(lambda: print("done")))
        """
        from ..backward import current_pass

        bp = current_pass()
        if bp is None:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        bp.queue_callback(callback)


Variable._execution_engine = _ExecutionEngine()  # type: ignore[attr-defined]
