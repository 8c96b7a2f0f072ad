"""The helpers of PyTorch's ``__torch_function__`` override protocol and of its functional layer's
argument handling, as ``torch.nn.functional`` exports them: ``has_torch_function`` (and its unary and
variadic forms), ``handle_torch_function``, ``boolean_dispatch`` and ``assert_int_or_pair``.

``ft.Tensor`` itself defines no ``__torch_function__``; a user type that does (a tensor-like wrapper)
is found and dispatched to exactly as PyTorch does, so library code written against the protocol runs.

Example::

    def my_op(x):
        if F.has_torch_function_unary(x):
            return F.handle_torch_function(my_op, (x,), x)
        return x * 2
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "handle_torch_function", "boolean_dispatch", "assert_int_or_pair"]


def _overrides(value: Any) -> bool:
    return hasattr(type(value), "__torch_function__")


def has_torch_function(relevant_args: Iterable[Any]) -> bool:
    """Whether any of ``relevant_args`` has a type defining ``__torch_function__``.

    Example: ``F.has_torch_function((x, w))`` is False for plain ``ft`` tensors.
    """
    return any(_overrides(a) for a in relevant_args)


def has_torch_function_unary(value: Any) -> bool:
    """``has_torch_function((value,))``. Example: ``F.has_torch_function_unary(x)``."""
    return _overrides(value)


def has_torch_function_variadic(*args: Any) -> bool:
    """``has_torch_function(args)``. Example: ``F.has_torch_function_variadic(x, w, b)``."""
    return any(_overrides(a) for a in args)


def handle_torch_function(public_api: Callable[..., Any], relevant_args: Iterable[Any], *args: Any,
                          **kwargs: Any) -> Any:
    """Call ``__torch_function__`` of the overriding arguments (subclasses before their bases, otherwise left
    to right) until one returns something other than ``NotImplemented``.

    Example: ``F.handle_torch_function(my_op, (x,), x)`` inside ``my_op`` when ``has_torch_function_unary(x)``.
    """
    overloaded: list[Any] = []
    types: list[type] = []
    for a in relevant_args:
        t = type(a)
        if not _overrides(a) or t in types:
            continue
        at = len(overloaded)
        for i, other in enumerate(overloaded):
            if issubclass(t, type(other)):
                at = i
                break
        overloaded.insert(at, a)
        types.insert(at, t)
    for a in overloaded:
        result = type(a).__torch_function__(public_api, tuple(types), args, kwargs)
        if result is not NotImplemented:
            return result
    name = getattr(public_api, "__qualname__", repr(public_api))
    raise TypeError(f"no implementation found for '{name}' on types that implement __torch_function__: "
                    f"{[t for t in types]}")


def boolean_dispatch(arg_name: str, arg_index: int, default: bool, if_true: Callable[..., Any],
                     if_false: Callable[..., Any], module_name: str | None = None,
                     func_name: str | None = None) -> Callable[..., Any]:
    """A function that calls ``if_true`` or ``if_false`` by the boolean argument ``arg_name`` (at position
    ``arg_index``, ``default`` when absent), as ``F.max_pool2d`` dispatches on ``return_indices``.

    Example: ``pool = F.boolean_dispatch("return_indices", 6, False, with_idx, without_idx)``.
    """
    def fn(*args: Any, **kwargs: Any) -> Any:
        flag = kwargs[arg_name] if arg_name in kwargs else args[arg_index] if len(args) > arg_index else default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = fn.__qualname__ = func_name
    fn.__doc__ = if_true.__doc__ or if_false.__doc__
    return fn


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    """Raise ``AssertionError(message.format(arg_name))`` unless ``arg`` is an int or a pair.

    Example: ``F.assert_int_or_pair(k, "kernel_size", "{} must be int or 2-tuple for 2D input")``.
    """
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)  # noqa: S101
