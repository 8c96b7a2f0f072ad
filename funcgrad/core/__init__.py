"""The tape engine: traces, boxes, nodes, the reverse pass and forward mode.

Knows nothing of NumPy. Read ``trace.py`` (how a value becomes traced),
``reverse.py`` (the tape and the backward pass) and ``forward.py`` (tangents).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from .declare import defprimitive, linear_jvp
from .forward import ForwardTrace, JVPBox
from .reverse import ReverseTrace, VJPBox, VJPNode, backward_pass
from .trace import (
    Box,
    LeakedTraceError,
    Primitive,
    Trace,
    contains_box,
    current_traces,
    is_traced,
    nondiff_primitive,
    primitive,
    shape_of,
    unbox_all,
)

__all__ = [
    "Box", "Trace", "Primitive", "LeakedTraceError", "primitive", "nondiff_primitive",
    "unbox_all", "shape_of", "contains_box", "is_traced", "current_traces", "ReverseTrace", "VJPBox", "VJPNode",
    "backward_pass", "ForwardTrace", "JVPBox", "defvjp", "defjvp", "def_linear", "get_primitive", "defprimitive",
]


def get_primitive(fn: Callable[..., Any]) -> Primitive:
    """The :class:`Primitive` behind a function made by :func:`primitive`."""
    prim = getattr(fn, "primitive", None)
    if not isinstance(prim, Primitive):
        raise TypeError(
            f"{getattr(fn, '__name__', fn)!r} is not a funcgrad primitive; wrap the raw "
            f"function with fg.primitive first"
        )
    return prim


def defvjp(
    fn: Callable[..., Any],
    *rules: Callable[..., Any] | None,
    argnums: tuple[int, ...] | None = None,
    reads: Mapping[int, Iterable[Any]] | None = None,
) -> None:
    """Define the VJP of each positional argument of primitive ``fn``.

    ``rules[k]`` handles argument ``argnums[k]`` (default 0, 1, ...) and is called
    as ``rule(g, ans, *args, **kwargs)``; it returns the cotangent of that
    argument, shaped like it. ``None`` leaves an argument without a rule.
    ``reads`` is as in :func:`defprimitive`: what each rule reads, so that the
    tape keeps only the shapes and dtypes of the rest.

    Example::

        fg.defvjp(fnp.multiply, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x)
    """
    prim = get_primitive(fn)
    prim.vjps.update((i, r) for i, r in zip(argnums or range(len(rules)), rules) if r is not None)
    if reads is not None:
        prim.reads = {int(i): frozenset(r) for i, r in reads.items()}
        prim.drop_cache.clear()


def defjvp(fn: Callable[..., Any], *rules: Callable[..., Any] | None, argnums: tuple[int, ...] | None = None) -> None:
    """Define the JVP of each positional argument of primitive ``fn``.

    ``rules[k]`` handles argument ``argnums[k]`` and is called as
    ``rule(t, ans, *args, **kwargs)``, returning the output tangent that a
    tangent ``t`` of that argument contributes.

    Example::

        fg.defjvp(fnp.sin, lambda t, ans, x: t * fnp.cos(x))
    """
    get_primitive(fn).jvps.update((i, r) for i, r in zip(argnums or range(len(rules)), rules) if r is not None)


def def_linear(fn: Callable[..., Any]) -> None:
    """Declare ``fn`` linear in its first argument: its JVP is ``fn`` of the tangent."""
    get_primitive(fn).jvps[0] = linear_jvp(fn)
