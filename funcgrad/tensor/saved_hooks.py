"""Saved-tensor hooks (``ft.autograd.graph.saved_tensors_hooks``, ``save_on_cpu``,
``disable_saved_tensors_hooks``): thread-local pack/unpack pairs that recording applies to
every value a node saves.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from ..backend import namespace_of
from .tensor_class import new_tensor

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


class _HookState(threading.local):
    stack: list[Any] = []
    disabled: str | None = None


_hook_state = _HookState()


class saved_tensors_hooks:
    """Context manager: every tensor saved for backward inside is packed with
    ``pack_hook(tensor)`` and unpacked with ``unpack_hook(packed)`` when backward
    needs it (thread-local, innermost wins), as ``torch.autograd.graph.saved_tensors_hooks``.

    Example::

        def pack(t):
            name = os.path.join(tmp, f"{uuid.uuid4()}.npy"); np.save(name, t.numpy()); return name
        def unpack(name):
            return ft.from_numpy(np.load(name))
        with ft.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (x * x).sum()
        y.backward()          # same gradient, saved values read back from disk
    """

    def __init__(self, pack_hook: Callable[..., Any], unpack_hook: Callable[..., Any]):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("saved_tensors_hooks(pack_hook, unpack_hook): both hooks must be callable")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        if _hook_state.disabled is not None:
            raise RuntimeError(_hook_state.disabled)
        _hook_state.stack = _hook_state.stack + [(self.pack_hook, self.unpack_hook)]
        return self

    def __exit__(self, *exc: Any) -> None:
        _hook_state.stack = _hook_state.stack[:-1]


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept in host memory and moved back to their device in backward.

    With NumPy arrays (already on the host) the value is kept as it is.

    Example::

        with ft.autograd.graph.save_on_cpu():
            loss = model(x).sum()
    """

    def __init__(self, pin_memory: bool = False):
        def pack(t: Any) -> tuple[Any, ...]:
            v = t._value
            ns = namespace_of(v)
            if ns is np:
                return (None, t)
            return (ns, v.get() if hasattr(v, "get") else ns.asnumpy(v))

        def unpack(packed: tuple[Any, ...]) -> Any:
            ns, payload = packed
            if ns is None:
                return payload
            return new_tensor(ns.asarray(payload))

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Inside, registering saved-tensor hooks raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str):
        self.message = error_message

    def __enter__(self) -> None:
        self.prev = _hook_state.disabled
        _hook_state.disabled = self.message

    def __exit__(self, *exc: Any) -> None:
        _hook_state.disabled = self.prev
