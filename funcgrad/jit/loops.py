"""Loops a backend may compile: a primitive that runs a staged body program over steps.

``fg.scan`` (and ``fori_loop``, and the scans that are the derivatives of a scan)
records one equation whose parameters hold the Python step function. While that
equation is being staged, the step function is staged too, once per kind of operands,
into its own :class:`~funcgrad.jit.ir.Program` (:func:`funcgrad.jit.bodies.stage_body`), and the primitive is
registered here (:func:`register_loop`) with a function that reads the equation as
a :class:`Loop`. A backend that can compile the body compiles the loop as a real
loop calling it (:mod:`funcgrad.jit.native_source`); the NumPy replay keeps calling
the primitive, which runs the Python step function.

Layering: this module knows programs, not ``fg.scan``; ``funcgrad.transforms.control``
registers its primitive here.

Example::

    from funcgrad.jit.loops import loop_of
    prog = fg.make_program(lambda x: fg.fori_loop(0, 3, lambda i, c: c * 2.0, x))(fnp.ones(2))
    loop_of(prog.eqns[0]).body      # the staged step: (i, c) -> (2 c,)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

from ..core.trace import Primitive
from .ir import Const, Eqn, Program, Var

__all__ = ["Loop", "Branches", "WhileLoop", "Structured", "register_loop", "loop_of", "avals", "replay_runner"]


class Loop:
    """``carry, ys, entering = loop(*carry, *xs)``: ``length`` steps (last to first where
    ``reverse``) of ``body(*carry, *x_t) -> (*carry, *y_t)``; the equation's results are the
    final carry, the stacked ``y`` and the stacked carries entering each step."""

    __slots__ = ("body", "n_carry", "n_xs", "length", "reverse")

    def __init__(self, body: Program, n_carry: int, n_xs: int, length: int, reverse: bool) -> None:
        self.body, self.n_carry, self.n_xs, self.length, self.reverse = body, n_carry, n_xs, length, reverse


class Branches:
    """``outs = bodies[index](*operands)`` for ``switch(index, *operands)``: ``index`` clamped
    to the bodies, or (``is_cond``) the truth of a predicate choosing ``bodies[1]`` over ``bodies[0]``."""

    __slots__ = ("bodies", "is_cond")

    def __init__(self, bodies: list[Program], is_cond: bool) -> None:
        self.bodies, self.is_cond = bodies, is_cond


class WhileLoop:
    """``while cond(*carry)[0]: carry = body(*carry)`` for ``while(*carry)``."""

    __slots__ = ("cond", "body")

    def __init__(self, cond: Program, body: Program) -> None:
        self.cond, self.body = cond, body


Structured = Union[Loop, Branches, WhileLoop]
_LOOPS: dict[Primitive, Callable[[Eqn], "Structured | None"]] = {}


def register_loop(prim: Primitive, describe: Callable[[Eqn], "Structured | None"]) -> None:
    """Declare ``prim`` a loop or branch: ``describe(eqn)`` is its :class:`Loop`,
    :class:`Branches` or :class:`WhileLoop` (None: not compilable)."""
    _LOOPS[prim] = describe


def loop_of(e: Eqn) -> Structured | None:
    """The loop equation ``e`` runs, or None (not a loop, or its body was not staged)."""
    describe = _LOOPS.get(e.prim)
    return None if describe is None else describe(e)


def avals(values: Sequence[Any]) -> tuple[Any, ...]:
    """What a program knows of each value (kind, shape, dtype): the same for a plain value
    and for the program atom recorded for it, so a body staged for the one is found from the other."""
    def one(x: Any) -> Any:
        if isinstance(x, Const):
            x = x.value
        v = x if isinstance(x, Var) else Var(0, x)
        return v.kind, v.shape, str(v.dtype)
    return tuple(one(x) for x in values)


def replay_runner(loop: Structured, compile_body: Callable[[Program], Callable[..., tuple[Any, ...]]]
                  ) -> Callable[..., tuple[Any, ...]]:
    """The loop or branch as a function of its equation's operands that runs its bodies'
    replays (``compile_body(program)``) instead of the Python functions (no tracing per step)."""
    if isinstance(loop, Branches):
        bodies = [compile_body(b) for b in loop.bodies]
        last = len(bodies) - 1
        is_cond = loop.is_cond

        def branch(index: Any, *operands: Any) -> tuple[Any, ...]:
            k = (1 if bool(index) else 0) if is_cond else min(max(int(index), 0), last)
            return bodies[k](*operands)
        return branch
    if isinstance(loop, WhileLoop):
        cond, body = compile_body(loop.cond), compile_body(loop.body)

        def while_(*carry: Any) -> tuple[Any, ...]:
            while bool(cond(*carry)[0]):
                carry = body(*carry)
            return tuple(carry)
        return while_
    step = compile_body(loop.body)
    nc, length, reverse = loop.n_carry, loop.length, loop.reverse
    ny = len(loop.body.outs) - nc

    def scan(*leaves: Any) -> tuple[Any, ...]:
        from ..backend import namespace_of

        carry = tuple(leaves[:nc])
        xs = leaves[nc:]
        ys: list[Any] = [None] * length
        entering: list[Any] = [None] * length
        for t in (range(length - 1, -1, -1) if reverse else range(length)):
            entering[t] = carry
            out = step(*carry, *[x[t] for x in xs])
            carry, ys[t] = out[:nc], out[nc:]
        xp = namespace_of(leaves[0] if leaves else 0.0)
        return (carry + tuple(xp.stack([y[j] for y in ys]) for j in range(ny))
                + tuple(xp.stack([c[j] for c in entering]) for j in range(nc)))
    return scan
