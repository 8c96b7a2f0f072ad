"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

The state is thread-local, as in PyTorch: a ``no_grad`` block in one thread
does not stop recording in another, and every new thread starts with
gradients enabled. Each mode is a context manager and a decorator.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
from typing import TYPE_CHECKING, Any, Callable

__all__ = [
    "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
    "is_inference_mode_enabled",
]


class _State(threading.local):
    """Per-thread flags read by the recorder on every operation."""

    enabled: bool
    inference: bool
    # (primitive, PyTorch node name) while ``torch_names.named`` runs a call: the node of that
    # primitive made then is of that name's class
    name_request: Any

    def __init__(self) -> None:  # (run once per thread: the flags in the thread's own dict, the fastest to read)
        self.enabled = True
        self.inference = False
        self.name_request = None


state = _State()


def is_grad_enabled() -> bool:
    """True when operations in this thread are recorded for backward.

    Example::

        with ft.no_grad():
            assert not ft.is_grad_enabled()
    """
    return state.enabled


def is_inference_mode_enabled() -> bool:
    """True inside an ``inference_mode()`` block (this thread)."""
    return state.inference


@types.coroutine  # (awaitable too: a decorated coroutine awaits it)
def _drive(it: Any, factory: Callable[..., Any]) -> Any:
    """Run generator or coroutine ``it`` one step at a time under a fresh mode from
    ``factory``, so its body sees the mode but the caller, between steps, does not.
    ``send``, ``throw`` and ``close`` reach ``it`` (under the mode)."""
    try:
        with factory():
            value = it.send(None)
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                with factory():
                    it.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - thrown in by the caller: forwarded
                with factory():
                    value = it.throw(exc)
            else:
                with factory():
                    value = it.send(sent)
    except StopIteration as stop:
        return stop.value


class _DecoratorContextManager:
    """A context manager that also decorates functions, generator functions and coroutines.

    A decorated generator (or ``async def``) runs its body under the mode, one step at
    a time: between yields (awaits) the caller keeps its own mode.
    """

    if TYPE_CHECKING:  # every subclass is a context manager
        def __enter__(self) -> Any: ...

        def __exit__(self, *exc: Any) -> Any: ...

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} decorates functions, not classes ({fn.__name__})")
        factory = self.clone

        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
                return (yield from _drive(fn(*args, **kwargs), factory))

            return gen_wrapper

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def coro_wrapper(*args: Any, **kwargs: Any) -> Any:
                return await _drive(fn(*args, **kwargs), factory)

            return coro_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with factory():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self) -> "_DecoratorContextManager":
        return type(self)()


class _BareDecoratorContextManager(_DecoratorContextManager):
    """Turns recording to ``_enabled`` in its block (``no_grad``, ``enable_grad``); also usable as a bare
    decorator: ``@no_grad`` as well as ``@no_grad()``."""

    _enabled = False

    def __new__(cls, orig_func: Any = None) -> Any:
        if orig_func is not None:
            if not callable(orig_func):
                raise TypeError(f"{cls.__name__}() takes no arguments (or a function to decorate), "
                                f"got {type(orig_func).__name__}")
            return cls()(orig_func)
        return super().__new__(cls)

    def __init__(self, orig_func: Any = None) -> None:
        pass

    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = self._enabled

    def __exit__(self, *exc: Any) -> None:
        state.enabled = self.prev


class no_grad(_BareDecoratorContextManager):
    """Disable recording in this thread: results do not require grad.

    Example::

        with ft.no_grad():
            y = x * 2          # y.requires_grad is False

        @ft.no_grad              # or @ft.no_grad()
        def update(p): p -= 0.1 * p.grad
    """


class enable_grad(_BareDecoratorContextManager):
    """Enable recording in this thread (inside ``no_grad``, say).

    Example::

        with ft.no_grad():
            with ft.enable_grad():
                y = x * 2      # recorded
    """

    _enabled = True


class set_grad_enabled(_DecoratorContextManager):
    """Set recording on or off; as a function call it takes effect at once.

    Example::

        with ft.set_grad_enabled(is_train):
            loss = model(x)
        ft.set_grad_enabled(False)   # also works as a plain call
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(mode): mode must be a bool, got {type(mode).__name__}")
        self.prev = state.enabled
        self.mode = mode
        state.enabled = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        state.enabled = self.prev

    def clone(self) -> "set_grad_enabled":
        return set_grad_enabled(self.mode)  # sets the mode now; __exit__ restores it

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        state.enabled = self.prev  # as a decorator the call itself must not change the mode
        return super().__call__(fn)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``, and tensors created inside are *inference tensors*:
    they can never be recorded for backward later (PyTorch's error).

    Example::

        with ft.inference_mode():
            y = model(x)
    """

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode) and not isinstance(mode, bool):  # @inference_mode without parentheses
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(mode): mode must be a bool, got {type(mode).__name__}")
        self.mode = mode

    def __enter__(self) -> None:
        self.prev = (state.enabled, state.inference)
        if self.mode:
            state.enabled = False
        state.inference = self.mode

    def __exit__(self, *exc: Any) -> None:
        state.enabled, state.inference = self.prev

    def clone(self) -> "inference_mode":
        return inference_mode(self.mode)

