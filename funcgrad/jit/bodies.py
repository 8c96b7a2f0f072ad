"""Loop and branch bodies staged into programs of their own while ``fg.jit`` traces.

``fg.scan``'s step, ``cond``/``switch``'s branches and ``while_loop``'s functions are
Python functions; while their equation is recorded (:func:`staging_now`), each is staged
into a :class:`~funcgrad.jit.ir.Program` (:func:`stage_body`), which the backends compile
(:mod:`funcgrad.jit.loops` says what the equation runs). :func:`stage_closure` also turns
traced values a function reads through its closure into extra inputs (closure conversion),
and :func:`replayed` runs a loop on its bodies' NumPy replays.

Example::

    from funcgrad.jit.bodies import stage_body
    prog = stage_body(lambda c, x: (c * x,), [1.0, 2.0])
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable, Sequence

from ..core.staging import OuterTraceError, StagedValueError, StagingTrace
from ..core.trace import current_traces
from .ir import Program
from .loops import Branches, Structured, replay_runner
from .numpy_replay import compile_program, direct_call
from .passes import optimize

__all__ = ["staging_now", "stage_body", "stage_closure", "replayed"]


def staging_now() -> bool:
    """Is a program being staged in this thread (is ``fg.jit`` tracing)?"""
    return any(isinstance(t, StagingTrace) for t in current_traces())


class _ClosureTrace(StagingTrace):
    """A staging trace that makes the values of enclosing transforms a function reads through
    its closure (values staged by an enclosing ``fg.jit`` included) extra inputs of the program,
    after the explicit ones (:attr:`captures`). Batched values are refused (their plain value
    holds the whole batch)."""

    __slots__ = ()

    def capture(self, box: Any) -> tuple[Any, Any]:
        from ..core import unbox_all
        from ..core.batching import is_batched

        seen = self.captured.get(id(box))
        if seen is not None:
            return seen[1], seen[2]
        trace = box._trace
        if not trace.active or trace.level >= self.level or is_batched(box):
            raise OuterTraceError(trace.name)
        value = unbox_all(box)
        var = self.program.new_var(value)
        self.program.invars.append(var)
        self.captures.append(box)
        self.captured[id(box)] = (box, var, value)
        return var, value


_bodies = itertools.count()


def _stage(trace_type: type, fn: Callable[..., Sequence[Any]], examples: Sequence[Any],
           name: str) -> tuple[Program, list[Any]] | None:
    prog = Program(function_for=direct_call, const_prefix=f"b{next(_bodies)}c")  # its own constant names
    trace = trace_type(prog, "loop body", name)
    try:
        with trace:
            boxes = [trace.new_input(x) for x in examples]
            outs = fn(*boxes)
            prog.outs = [trace.output(x) for x in outs]
    except (StagedValueError, OuterTraceError, TypeError, ValueError):
        return None
    return optimize(prog), list(trace.captures)


def stage_body(fn: Callable[..., Sequence[Any]], examples: Sequence[Any], name: str = "body") -> Program | None:
    """``fn(*leaves) -> tuple of leaves`` staged at the plain values ``examples`` into an
    optimised program; None where it cannot be (Python decided on a value, or the function
    reads a value traced outside it)."""
    made = _stage(StagingTrace, fn, examples, name)
    return None if made is None else made[0]


def stage_closure(fn: Callable[..., Sequence[Any]], examples: Sequence[Any],
                  name: str = "body") -> tuple[Program, list[Any]] | None:
    """Like :func:`stage_body`, but traced values ``fn`` reads through its closure become inputs
    of the program after ``examples``' (returned with it: the boxes to pass there); None where
    ``fn`` cannot be staged (Python decided on a value, or it reads a batched value)."""
    return _stage(_ClosureTrace, fn, examples, name)


_replays: "weakref.WeakKeyDictionary[Program, Callable[..., tuple[Any, ...]]]" = weakref.WeakKeyDictionary()


def replayed(loop: Structured) -> Callable[..., tuple[Any, ...]]:
    """:func:`replay_runner` of the loop with its bodies' NumPy replays, made once per body (what
    its primitive runs while ``fg.jit`` traces it: no Python step function traced per step)."""
    key = loop.bodies[0] if isinstance(loop, Branches) else loop.body
    run = _replays.get(key)
    if run is None:
        run = _replays[key] = replay_runner(loop, compile_program)
    return run


