"""Batching-rule builders shared by the primitive families, and the loop fallback.

A batching rule ``rule(args, dims, **kwargs) -> (out, out_dim)`` sees the
primitive's arguments with the batch trace's boxes removed; ``dims[i]`` is
the batch axis of ``args[i]`` or None. Rules are written in funcgrad.numpy so
that they compose with differentiation.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import funcgrad.numpy as fnp

from ..core import get_primitive
from ..core.hooks import register_batching_fallback
from ._util import ndim, shape

__all__ = [
    "move_to_front", "front", "batch_size", "elementwise_rule", "reduction_rule", "first_arg_rule",
    "normalize_axis", "fallback",
]


def move_to_front(x: Any, d: int | None) -> Any:
    """Put batch axis ``d`` of ``x`` first (no-op when it is already there or None)."""
    if d is None or d == 0:
        return x
    return fnp.moveaxis(x, d, 0)


def normalize_axis(axis: int, nd: int) -> int:
    if not -nd <= axis < max(nd, 1):
        raise ValueError(f"axis {axis} is out of bounds for an array of dimension {nd}")
    return axis % nd if nd else 0


def _aligned(args: list[Any], dims: list[Any]) -> list[Any]:
    """Batch axes to the front, unit axes inserted so per-example parts right-align."""
    rank = 0
    for a, d in zip(args, dims):
        rank = max(rank, ndim(a) - (d is not None))
    out = []
    for a, d in zip(args, dims):
        if d is None:
            out.append(a)
            continue
        a = move_to_front(a, d)
        per = ndim(a) - 1
        if per < rank:
            s = shape(a)
            a = fnp.reshape(a, s[:1] + (1,) * (rank - per) + s[1:])
        out.append(a)
    return out


def elementwise_rule(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Rule for a broadcasting elementwise primitive: align batch axes, call once."""

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
        return fn(*_aligned(args, dims), **kwargs), 0

    return rule


def _shift_axis(axis: Any, per_ndim: int) -> Any:
    if axis is None:
        return tuple(range(1, per_ndim + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(normalize_axis(a, per_ndim) + 1 for a in axis)
    return normalize_axis(axis, per_ndim) + 1


def reduction_rule(fn: Callable[..., Any], flatten_when_none: bool = False) -> Callable[..., Any]:
    """Rule for ``fn(x, axis=..., ...)`` batched in ``x`` only: shift ``axis`` past the batch axis.

    With ``flatten_when_none`` (cumsum, argmax ...), ``axis=None`` means "flatten
    each example first" rather than "reduce over every axis".
    """

    def rule(args: list[Any], dims: list[Any], axis: Any = None, **kwargs: Any) -> tuple[Any, int]:
        if any(d is not None for d in dims[1:]):
            return fallback(get_primitive(fn), list(args), list(dims), batch_size(args, dims), dict(kwargs, axis=axis))
        x = move_to_front(args[0], dims[0])
        per = ndim(x) - 1
        if axis is None and flatten_when_none:
            x = fnp.reshape(x, (shape(x)[0], -1))
            return fn(x, *args[1:], axis=1, **kwargs), 0
        return fn(x, *args[1:], axis=_shift_axis(axis, per), **kwargs), 0

    return rule


def first_arg_rule(fn: Callable[..., Any], adjust: Callable[..., tuple[tuple[Any, ...], dict[str, Any]]]) -> Callable[..., Any]:
    """Rule for ``fn(x, *params, **kwargs)`` batched in ``x`` only.

    ``adjust(per_example_ndim, *params, **kwargs) -> (params, kwargs)`` rewrites
    the parameters for an input whose batch axis is in front.
    """

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
        if any(d is not None for d in dims[1:]):
            return fallback(get_primitive(fn), list(args), list(dims), batch_size(args, dims), kwargs)
        x = move_to_front(args[0], dims[0])
        params, kw = adjust(ndim(x) - 1, *args[1:], **kwargs)
        return fn(x, *params, **kw), 0

    return rule


def batch_size(args: Sequence[Any], dims: Sequence[Any]) -> int:
    """The batch size of a batching rule's arguments: the length of the first batched axis."""
    for a, d in zip(args, dims):
        if d is not None:
            n: int = shape(a)[d]
            return n
    raise ValueError("no batched argument")


def front(x: Any, d: Any, size: int) -> Any:
    """``x`` with its batch axis first; an unbatched ``x`` (``d`` None) is broadcast to the batch."""
    if d is None:
        return fnp.broadcast_to(x, (size,) + tuple(shape(x)))
    return move_to_front(x, d)


def fallback(prim: Any, args: list[Any], dims: list[Any], size: int, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """Run ``prim`` once per batch element and stack the results along axis 0."""
    results: list[Any] = []
    for b in range(size):
        one = [a if d is None else fnp.take(a, b, axis=d) for a, d in zip(args, dims)]
        results.append(prim.call(*one, **kwargs))
    if prim.multiple_results:
        n = len(results[0]) if results else 0
        return tuple(fnp.stack([r[k] for r in results]) for k in range(n)), (0,) * n
    return fnp.stack(results), 0


register_batching_fallback(fallback)
