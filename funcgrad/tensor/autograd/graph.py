"""``ft.autograd.graph``: graph nodes, saved-tensor hooks, gradient edges."""

from ..graph import (  # noqa: F401
    Node, RemovableHandle, SavedTensor, disable_saved_tensors_hooks, get_gradient_edge, save_on_cpu,
    saved_tensors_hooks,
)

__all__ = ["Node", "SavedTensor", "RemovableHandle", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "get_gradient_edge"]
