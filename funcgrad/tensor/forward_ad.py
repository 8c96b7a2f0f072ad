"""``ft.autograd.forward_ad``: PyTorch's forward-mode AD (dual tensors) on the engine's forward mode.

A dual level is a :class:`~funcgrad.core.ForwardTrace`. ``make_dual`` gives a Tensor whose raw
value is a ``JVPBox`` of that trace (primal and tangent); every Tensor operation is a
funcgrad.numpy primitive call on raw values, so the box's trace carries the tangent through
the primitive's own JVP rule (the tensor trace's ``run`` step hands boxed raw values to ``prim.call``).
Nothing here differentiates anything: one engine, one rule per primitive.

Levels nest (PyTorch refuses nesting): each level is its own trace, so tangents of two
levels never mix, and the tangent read at an outer level of a value computed at an inner
one is a second derivative. When a level exits, its boxes go stale: they still compute
primal values (their trace drops tangents from then on), and ``unpack_dual`` sees no tangent.
The backward pass runs with every level paused, so ``.grad`` is a plain primal gradient.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from typing import Any, Iterator, cast

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import JVPBox
from .tensor_class import _TENSOR_CLS
from .dual_trace import DualTrace, _local, is_dual, paused, primal_value  # noqa: F401  (re-exported)

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level() -> int:
    """Open a new dual level and return its index (``exit_dual_level`` closes it).

    Example::

        lvl = fwAD.enter_dual_level(); ...; fwAD.exit_dual_level(level=lvl)
    """
    levels = _local.levels
    trace = DualTrace(len(levels))
    levels.append(trace)
    return trace.index


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the innermost dual level (``level`` must name it when given)."""
    levels = _local.levels
    if not levels:
        raise RuntimeError("exit_dual_level: no dual level is open (use enter_dual_level() or dual_level())")
    if level is not None and level != levels[-1].index:
        raise RuntimeError(f"exit_dual_level: level {level} is not the innermost open dual level "
                           f"({levels[-1].index}); exit levels innermost first")
    levels.pop().closed = True


class dual_level:
    """Context manager for a dual level: ``with fwAD.dual_level(): ...``.

    Example::

        import funcgrad.tensor.autograd.forward_ad as fwAD
        with fwAD.dual_level():
            x = fwAD.make_dual(ft.tensor([1.0, 2.0]), ft.tensor([1.0, 0.0]))
            fwAD.unpack_dual(x.sin()).tangent   # cos(1), 0
    """

    def __enter__(self) -> int:
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level(level=self.level)


def _trace_of(level: int | None, what: str) -> DualTrace:
    levels = _local.levels
    if not levels:
        raise RuntimeError(f"Trying to {what} but no level exists, make sure to enter_dual_level() first.")
    if level is None:
        return cast("DualTrace", levels[-1])
    for t in levels:
        if t.index == level:
            return cast("DualTrace", t)
    raise RuntimeError(f"{what}: dual level {level} is not open (open levels: {[t.index for t in levels]})")


def _alias(t: Any, value: Any) -> Any:
    """A new tensor with raw value ``value`` whose backward flows to ``t`` unchanged (an identity node)."""
    out = fnp.positive(t)  # recorded (when t requires grad) with the identity VJP; reads nothing
    out._value = value
    return out


def make_dual(tensor: Any, tangent: Any, *, level: int | None = None) -> Any:
    """A dual tensor: ``tensor``'s values with ``tangent`` as its forward gradient at ``level``
    (default: the innermost open level). Backward through it reaches ``tensor``.

    Example::

        with fwAD.dual_level():
            d = fwAD.make_dual(x, ft.ones_like(x))
            fwAD.unpack_dual((d * d).sum()).tangent   # 2 * x.sum()
    """
    Tensor = _TENSOR_CLS[0]
    trace = _trace_of(level, "create a dual Tensor for forward AD")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual expects Tensors, got {type(tensor).__name__} and {type(tangent).__name__}")
    for what, t in (("primal", tensor), ("tangent", tangent)):
        if not (t.is_floating_point() or t.is_complex()):
            raise ValueError(f"Expected {what} to be floating point or complex, but got: {t.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
            f"not supported. Tensor is of size {list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError(f"make_dual: the tangent is on {tangent.device} but the primal is on {tensor.device}; "
                           f"move the tangent with .to(primal.device)")
    if _level_box(_fresh_value(tensor), trace) is not None:
        raise RuntimeError(f"make_dual: this tensor already has a tangent at dual level {trace.index}; use "
                           f"unpack_dual(t).primal to make a new dual tensor from its primal")
    if tangent.dtype != tensor.dtype:  # kept in the primal's dtype (float32 stays float32)
        tangent = tangent.to(tensor.dtype)
    return _alias(tensor, JVPBox(tensor._value, trace, tangent._value))


def _fresh_value(t: Any) -> Any:
    """``t``'s raw value; a view whose base was written in place first re-derives it (its tangent)."""
    if t._base is not None and t._view_version != t._version_counter[0]:
        from .boxes import _refresh_view

        _refresh_view(t)
    return t._value


def _level_box(v: Any, trace: DualTrace) -> Any:
    """The box of ``trace`` in the raw value ``v`` (None if it has none); stale levels are skipped.
    A box of another open level outside it cannot be peeled off here: an error says so."""
    while isinstance(v, JVPBox) and isinstance(v._trace, DualTrace):
        t = v._trace
        if t is trace:
            return v
        if not t.closed:
            if t.index < trace.index:
                return None  # an outer level's box: nothing of the inner level inside
            raise RuntimeError(f"unpack_dual at dual level {trace.index}: the tensor also has a tangent at the inner "
                               f"level {t.index}; unpack that level first (or exit it)")
        v = v._value
    return None


def _strip_closed(v: Any) -> Any:
    while isinstance(v, JVPBox) and isinstance(v._trace, DualTrace) and v._trace.closed:
        v = v._value
    return v


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level`` (default innermost); tangent None if it has none.

    The primal is a new tensor with the same values; backward through it reaches ``tensor``.

    Example::

        p, t = fwAD.unpack_dual(y)
    """
    Tensor = _TENSOR_CLS[0]
    if not isinstance(tensor, Tensor) or not _local.levels:
        return UnpackedDualTensor(tensor, None)
    trace = _trace_of(level, "unpack a dual Tensor")
    box = _level_box(_fresh_value(tensor), trace)
    if box is None:
        v = _strip_closed(tensor._value)
        return UnpackedDualTensor(tensor if v is tensor._value else _alias(tensor, v), None)
    tangent = box._tangent if box._tangent is not None else fnp.zeros_like(box._value)
    t = Tensor._make(_strip_closed(tangent))
    return UnpackedDualTensor(_alias(tensor, box._value), t)


def dual_inputs(args: Any) -> tuple[DualTrace | None, list[Any]]:
    """For a custom Function: the innermost open level any Tensor argument is dual at, and each argument's
    tangent there (None where none)."""
    Tensor = _TENSOR_CLS[0]
    if _local.paused > 0:
        return None, []
    for trace in reversed(_local.levels):
        boxes = [_level_box(_fresh_value(a), trace) if isinstance(a, Tensor) else None for a in args]
        if any(b is not None for b in boxes):
            return trace, boxes
    return None, []


def primal_args(args: tuple[Any, ...], boxes: list[Any]) -> tuple[Any, ...]:
    """``args`` with the dual tensors replaced by their primals (aliases, so backward still reaches them)."""
    return tuple(_alias(a, b._value) if b is not None else a for a, b in zip(args, boxes))


