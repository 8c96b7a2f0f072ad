"""Forward AD's dual levels, the part the recording machinery needs: the trace of one dual
level (:class:`DualTrace`), this thread's open levels, pausing them for a backward pass, and
reading a raw value's primal through its dual boxes. The user's API (``make_dual``,
``unpack_dual``, ``dual_level``) is in ``forward_ad.py``, above the Tensor class.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

import funcgrad.numpy as fnp

from ..core import ForwardTrace, JVPBox, Primitive

__all__ = ["DualTrace", "paused", "primal_value", "is_dual", "conform_dual"]


class _Local(threading.local):
    """This thread's open dual levels (innermost last) and how many ``paused`` blocks it is in."""

    paused = 0

    def __init__(self) -> None:
        self.levels: list[Any] = []


_local = _Local()


class DualTrace(ForwardTrace):
    """One dual level. Open: a forward trace. Exited, or paused (backward pass): passes
    primal values through and drops tangents, so stale dual tensors stay usable."""

    __slots__ = ("index", "closed")

    def __init__(self, index: int) -> None:
        super().__init__(f"forward_ad.dual_level({index})")
        self.index = index
        self.closed = False
        # Not pushed on the thread's trace stack: tensor code is not "inside a transform".
        self.active = True
        self.thread = None

    def process(self, prim: Primitive, args: list[Any], kwargs: dict[Any, Any], argnums: list[Any]) -> Any:
        if self.closed or _local.paused > 0:
            for i in argnums:
                args[i] = args[i]._value
            return prim.call(*args, **kwargs)
        return super().process(prim, args, kwargs, argnums)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Forward AD off in this thread (the backward pass runs so: primal gradients only)."""
    _local.paused += 1
    try:
        yield
    finally:
        _local.paused -= 1


def primal_value(v: Any) -> Any:
    """The raw value ``v`` without the boxes of any dual level (what detach, numpy and printing see)."""
    while isinstance(v, JVPBox) and isinstance(v._trace, DualTrace):
        v = v._value
    return v


def is_dual(v: Any) -> bool:
    """True when the raw value ``v`` carries a tangent of some dual level (open or stale)."""
    return isinstance(v, JVPBox) and isinstance(v._trace, DualTrace)


def conform_dual(v: Any, shape: tuple[Any, ...], dtype: Any, bottom: Any) -> Any:
    """The dual chain of raw value ``v`` rebuilt on ``bottom`` (the primal), with each open level's
    tangent broadcast to ``shape`` and cast to ``dtype``; stale levels are dropped."""
    if not is_dual(v):
        return bottom
    inner = conform_dual(v._value, shape, dtype, bottom)
    if v._trace.closed:
        return inner
    tan = v._tangent
    if tan is not None:
        if tuple(fnp.shape(tan)) != tuple(shape):
            tan = fnp.broadcast_to(tan, shape)
        if fnp.result_type(tan) != dtype:
            tan = fnp.asarray(tan, dtype=dtype)
    return JVPBox(inner, v._trace, tan)
