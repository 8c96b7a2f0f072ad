"""``ft.autograd.function``: custom Functions (``torch.autograd.function``'s import path)."""

from ..function import Function, FunctionCtx, InplaceFunction, NestedIOFunction, once_differentiable  # noqa: F401

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "NestedIOFunction", "once_differentiable"]
