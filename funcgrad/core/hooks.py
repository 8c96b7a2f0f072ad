"""What an array library registers with the core.

The core knows nothing of arrays: the library that provides them (funcgrad.numpy)
registers, explicitly and once, what the engine needs from it. Nothing here is
set by patching another module's attributes.

- :func:`register_box_methods`: array behaviour of traced values (operators,
  ``.shape``, ``.sum()``, in-place writes ...), as a mixin class whose members are
  given to :class:`~funcgrad.core.trace.Box` (or a subclass).
- :func:`register_zeros_like`: a zero cotangent for an unused result of a
  multi-result primitive.
- :func:`register_batching_fallback`: vmap's loop over the batch, for a primitive
  with no batching rule.
- :func:`register_sequence_packer`: an array from a list holding traced values, so
  that ``fnp.mean([x, x + 2])`` works.
- :func:`set_result_hook`: a check of every primitive's result (``fg.debug_nans``).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

from . import trace as _trace
from .trace import Box

__all__ = [
    "register_box_methods", "register_zeros_like", "register_batching_fallback", "zeros_like",
    "batching_fallback", "watch_batching_fallback", "register_sequence_packer", "set_result_hook",
]

_MIXIN_SKIP = frozenset({"__module__", "__doc__", "__dict__", "__weakref__", "__qualname__", "__slots__"})


def register_box_methods(mixin: type, box_type: type[Box] = Box) -> None:
    """Give ``box_type`` (and so every kind of traced value) the members of ``mixin``.

    Example::

        class ArrayMethods:
            def __add__(self, other): return fnp.add(self, other)
        register_box_methods(ArrayMethods)
    """
    for name, member in vars(mixin).items():
        if name not in _MIXIN_SKIP:
            setattr(box_type, name, member)


def _default_zeros_like(x: Any) -> Any:
    return x * 0


_zeros_like: Callable[[Any], Any] = _default_zeros_like
_fallback: Callable[..., tuple[Any, Any]] | None = None


def register_zeros_like(fn: Callable[[Any], Any]) -> None:
    """``fn(x)``: zeros shaped like ``x``, the cotangent of an unused result."""
    global _zeros_like
    _zeros_like = fn


def zeros_like(x: Any) -> Any:
    return _zeros_like(x)


def register_batching_fallback(fn: Callable[..., tuple[Any, Any]]) -> None:
    """``fn(prim, args, dims, size, kwargs) -> (out, out_dim)``: run a primitive with no
    batching rule once per batch element."""
    global _fallback
    _fallback = fn


_watchers = threading.local()


def batching_fallback(prim: Any, args: list[Any], dims: list[Any], size: int, kwargs: dict[str, Any]) -> Any:
    """vmap's loop fallback, as registered."""
    if _fallback is None:
        raise RuntimeError(
            f"vmap: primitive '{getattr(prim, 'name', prim)}' has no batching rule and no loop "
            f"fallback is registered (import funcgrad.numpy)"
        )
    for seen in getattr(_watchers, "stack", ()):
        seen.append(prim.name)
    return _fallback(prim, args, dims, size, kwargs)


@contextlib.contextmanager
def watch_batching_fallback() -> Iterator[list[str]]:
    """Within the block, collect the names of the primitives that took vmap's loop
    fallback in this thread (a test can then assert that none did).

    Example::

        with watch_batching_fallback() as seen:
            fg.vmap(fnp.sin)(x)
        assert seen == []
    """
    stack = getattr(_watchers, "stack", None)
    if stack is None:
        stack = _watchers.stack = []
    seen: list[str] = []
    stack.append(seen)
    try:
        yield seen
    finally:
        stack.remove(seen)


def register_sequence_packer(fn: Callable[[Any], Any]) -> None:
    """``fn(seq)``: one array from a list or tuple that holds traced values; primitives
    apply it to such arguments (``fnp.mean([x, x + 2])``)."""
    _trace.pack_sequence = fn


def set_result_hook(fn: Callable[[Any, Any, str], Any] | None) -> None:
    """``fn(prim, value, kind)`` sees every primitive's result (kind ``"forward"``, ``"vjp"``
    or ``"jvp"``) and returns the forward value; None removes it. Used by ``fg.debug_nans``."""
    _trace.result_hook = fn
