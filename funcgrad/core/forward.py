"""Forward mode: tangents carried beside primal values (true forward mode).

Under a :class:`ForwardTrace` every primitive call computes its result and,
at once, the result's tangent from the arguments' tangents with the
primitive's JVP rules. Nothing is kept for later.
"""

from __future__ import annotations

from typing import Any, Sequence

from . import trace as _trace
from .trace import Box, Primitive, Trace

__all__ = ["JVPBox", "ForwardTrace", "add_tangents", "output_tangent"]


class JVPBox(Box):
    """A value traced by forward mode: the primal value and its tangent."""

    __slots__ = ()

    def __init__(self, value: Any, trace: Trace, tangent: Any):
        self._value = value
        self._trace = trace
        self._tangent = tangent
        self._view = None
        self._version = 0


def add_tangents(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if isinstance(a, tuple):
        return tuple(x + y for x, y in zip(a, b))
    return a + b


def output_tangent(
    prim: Primitive, ans: Any, args: Sequence[Any], kwargs: dict[str, Any], argnums: Sequence[int],
    tangents: Sequence[Any],
) -> Any:
    """The tangent of ``ans = prim(*args, **kwargs)`` from the tangents of ``args[argnums]``:
    the one dispatch to a primitive's JVP rules (forward mode and ``linearize`` use it)."""
    if prim.jvp_all is not None:
        full: list[Any] = [None] * len(args)
        for argnum, t in zip(argnums, tangents):
            full[argnum] = t
        out = prim.jvp_all(full, ans, *args, **kwargs)
        if _trace.result_hook is not None:  # fg.debug_nans
            _trace.result_hook(prim, out, "jvp")
        return out
    jvps = prim.jvps
    out = None
    for argnum, t in zip(argnums, tangents):
        rule = jvps.get(argnum)
        if rule is None:
            raise prim.missing_rule("JVP", argnum)
        out = add_tangents(out, rule(t, ans, *args, **kwargs))
    if _trace.result_hook is not None:  # fg.debug_nans
        _trace.result_hook(prim, out, "jvp")
    return out


class ForwardTrace(Trace):
    """Pushes tangents through each primitive call as it happens."""

    __slots__ = ()

    def new_input(self, value: Any, tangent: Any) -> JVPBox:
        return JVPBox(value, self, tangent)

    def process(self, prim: Primitive, args: list[Any], kwargs: dict[str, Any], argnums: list[int]) -> Any:
        tangents = []
        for i in argnums:
            box = args[i]
            tangents.append(box._tangent)
            args[i] = box._value
        fast = prim.fast_types
        for a in args:
            if type(a) not in fast:
                ans = prim.call(*args, **kwargs)  # lower-level boxes or another backend
                break
        else:
            ans = prim.fast_fn(*args, **kwargs)
        if not prim.differentiable:
            return ans
        out = output_tangent(prim, ans, args, kwargs, argnums, tangents)
        if prim.multiple_results:
            return tuple(JVPBox(a, self, ta) for a, ta in zip(ans, out))
        return JVPBox(ans, self, out)
