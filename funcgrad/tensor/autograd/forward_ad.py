"""``ft.autograd.forward_ad``: forward-mode AD with dual tensors (``torch.autograd.forward_ad``'s import path)."""

from ..forward_ad import (  # noqa: F401
    UnpackedDualTensor, dual_level, enter_dual_level, exit_dual_level, make_dual, unpack_dual,
)

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]
