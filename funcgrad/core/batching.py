"""Batching: a trace whose boxes carry one extra (batch) axis.

Under a :class:`BatchTrace` a box's value holds a whole batch of per-example
values stacked along axis ``_bdim``; user code sees the per-example shape. A
primitive with a batching rule handles the batch in one call; one without
falls back to a loop over the batch (correct, slower) and warns once.

A batching rule is ``rule(args, dims, **kwargs) -> (out, out_dim)``: ``args``
are the primitive's positional arguments with this trace's boxes removed,
``dims[i]`` the batch axis of ``args[i]`` (None where it is not batched). It
is written with differentiable operations, so batching composes with the
differentiation traces in both nesting orders.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

from .hooks import batching_fallback
from .trace import Box, Primitive, Trace

__all__ = ["BatchBox", "BatchTrace", "defbatch", "is_batched"]


class BatchBox(Box):
    """A batch of values stacked along axis ``_bdim`` of ``_value``."""

    __slots__ = ()

    def __init__(self, value: Any, trace: Trace, bdim: int):
        self._value = value
        self._trace = trace
        self._bdim = bdim
        self._view = None
        self._version = 0

    def _shape(self) -> tuple[Any, ...]:
        v = self._value
        full = v._shape() if isinstance(v, Box) else tuple(getattr(v, "shape", ()))
        return full[: self._bdim] + full[self._bdim + 1:]


_warned: set[str] = set()


class BatchTrace(Trace):
    """Runs each primitive once on a whole batch (vmap)."""

    __slots__ = ("size",)

    def __init__(self, name: str, size: int):
        super().__init__(name)
        self.size = size

    def new_input(self, value: Any, bdim: int) -> BatchBox:
        return BatchBox(value, self, bdim)

    def process(self, prim: Primitive, args: list[Any], kwargs: dict[str, Any], argnums: list[int]) -> Any:
        dims: list[Any] = [None] * len(args)
        for i in argnums:
            box = args[i]
            dims[i] = box._bdim
            args[i] = box._value
        rule = prim.batch_rule
        if rule is None:
            if prim.name not in _warned:
                _warned.add(prim.name)
                warnings.warn(
                    f"vmap: primitive '{prim.name}' has no batching rule; falling back to a "
                    f"Python loop over the batch (correct but slow). Register one with "
                    f"batch= in fg.defprimitive (or fg.defbatch).",
                    stacklevel=4,
                )
            out, out_dim = batching_fallback(prim, args, dims, self.size, kwargs)
        else:
            out, out_dim = rule(args, dims, **kwargs)
        if prim.multiple_results:
            return tuple(o if d is None else BatchBox(o, self, d) for o, d in zip(out, out_dim))
        return out if out_dim is None else BatchBox(out, self, out_dim)


def defbatch(fn: Callable[..., Any], rule: Callable[..., Any]) -> None:
    """Give primitive ``fn`` a batching rule ``rule(args, dims, **kwargs) -> (out, out_dim)``."""
    prim = getattr(fn, "primitive", None)
    if not isinstance(prim, Primitive):
        raise TypeError(f"{fn!r} is not a funcgrad primitive")
    prim.batch_rule = rule


def is_batched(x: Any) -> bool:
    """True when ``x`` carries a batch axis of some vmap, at any level of boxing."""
    while isinstance(x, Box):
        if isinstance(x, BatchBox):
            return True
        x = x._value
    return False
