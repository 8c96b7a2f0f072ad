"""Constant boxes: untraced arrays that can later be written with traced values.

Inside a transform, ``fnp.zeros(n)`` and the other creation functions return
a :class:`ConstBox`: an ordinary array in every respect (operations on it
give plain results) except that ``a[i] = traced`` can rebind it, in place, to
a traced value. The constant trace sits below every other trace and is never
closed.
"""

from __future__ import annotations

from typing import Any

from .trace import Box, Primitive, Trace, current_traces

__all__ = ["ConstBox", "CONSTANT", "constant_box", "in_transform"]


class ConstantTrace(Trace):
    """Records nothing: a primitive on constant boxes just computes."""

    __slots__ = ()

    def process(self, prim: Primitive, args: list[Any], kwargs: dict[str, Any], argnums: list[int]) -> Any:
        for i in argnums:
            args[i] = args[i]._value
        return prim.call(*args, **kwargs)


CONSTANT = ConstantTrace("constant", level=-1)
CONSTANT.active = True


class ConstBox(Box):
    """An untraced array that in-place writes may turn into a traced one."""

    __slots__ = ()

    def __init__(self, value: Any):
        self._value = value
        self._trace = CONSTANT
        self._view = None
        self._version = 0

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        return np.asarray(self._value, dtype=dtype)


def in_transform() -> bool:
    """True when some transform is running in this thread."""
    return bool(current_traces())


def constant_box(value: Any) -> Any:
    """``value`` as a ConstBox when inside a transform (and not traced already),
    else ``value`` itself."""
    if isinstance(value, Box) or not current_traces():
        return value
    return ConstBox(value)
