"""Staging: a trace that records primitive calls as equations of a program.

Under a :class:`StagingTrace` each primitive call still computes its value
(so shapes, dtypes and backends are concrete while tracing) and, besides,
hands one equation ``outs = prim(ins, params)`` to a *recorder* (the program
being built). Differentiation and batching rules are written with primitives
too, so a ``grad`` or ``vmap`` opened *inside* the staged function records its
derivative computation as more equations.

The core knows only this recording: what a program is, how it is optimised and
compiled lives in :mod:`funcgrad.jit`, which supplies the recorder (see
:class:`Recorder`).

Values that reach Python control flow (``bool``, ``int``, ``float``,
``item``, use as an index or shape) cannot be recorded: they raise
:class:`StagedValueError`, which names the user's line.
"""

from __future__ import annotations

import os
import traceback
from typing import Any, Callable, Protocol

from .constant import ConstBox
from .trace import Box, Primitive, Trace

__all__ = [
    "Recorder", "StagingBox", "StagingTrace", "StagedValueError", "OuterTraceError",
    "staged_error", "is_staged", "check_concrete", "user_line",
]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class StagedValueError(ValueError):
    """Python code needed the value of a value staged by ``fg.jit``.

    A ValueError (like funcgrad's ConversionError): NumPy swallows TypeErrors from
    ``float()`` when a value is written into a plain array and reports another error."""


class OuterTraceError(Exception):
    """The staged function touched a value traced by a transform outside ``fg.jit`` that
    cannot become an input of the program (internal: ``fg.jit`` catches it and runs the
    function eagerly instead)."""


class Recorder(Protocol):
    """What a :class:`StagingTrace` records into (``funcgrad.jit.ir.Program`` is one).

    ``new_var``/``new_const`` return the program's atom for a value made by a recorded
    call / a value fixed at trace time; ``add_eqn`` appends ``outs = prim(*ins, **kwargs)``
    computed by ``fn``; ``function_for(prim, args)`` may name a cheaper function that
    computes ``prim`` on these arguments (``None``: the primitive's own)."""

    invars: list[Any]
    outs: list[Any]

    def new_var(self, value: Any) -> Any: ...

    def new_const(self, value: Any) -> Any: ...

    def add_eqn(self, prim: Primitive, ins: list[Any], kwargs: dict[str, Any], outs: list[Any],
                fn: Callable[..., Any]) -> None: ...

    def function_for(self, prim: Primitive, args: list[Any]) -> Callable[..., Any] | None: ...


def _unchanged(value: Any, frozen: Any) -> bool:
    """Does the array ``value`` still hold what ``frozen`` (its copy) holds? (Code may write
    into a captured array while it is traced.) False where that cannot be told cheaply."""
    if type(value).__module__ != "numpy":
        return False  # device arrays: comparing would read back to the host
    try:
        return bool(value.shape == frozen.shape and value.dtype == frozen.dtype and (value == frozen).all())
    except Exception:
        return False


def _identifiable(value: Any) -> bool:
    """Is ``value`` a fresh object, so that its identity names one program value?
    Python numbers and NumPy's two booleans are shared objects: never."""
    return not isinstance(value, (int, float, complex)) and type(value).__name__ not in ("bool_", "bool")




class StagingBox(Box):
    """A value staged by ``fg.jit``: its traced value and its program variable (in ``_node``)."""

    __slots__ = ()

    def __init__(self, value: Any, trace: Trace, var: Any):
        self._value = value
        self._trace = trace
        self._node = var
        self._view = None
        self._version = 0


class StagingTrace(Trace):
    """Records every primitive call on its boxes into :attr:`program`."""

    __slots__ = ("program", "produced", "fun_name", "consts_by_id", "example", "captures", "captured")

    def __init__(self, program: Recorder, name: str = "jit", fun_name: str = "f",
                 example: Callable[[Any], Any] | None = None) -> None:
        super().__init__(name)
        self.program = program
        # values of enclosing transforms that f reads from its closure become implicit
        # inputs (after the explicit ones): ``example(box)`` is the plain value traced for one
        self.example = example
        self.captures: list[Box] = []
        self.captured: dict[int, tuple[Box, Any, Any]] = {}
        # id(value) -> var for values made by recorded calls: code that strips a
        # box and passes its plain value on still refers to the variable
        self.produced: dict[int, tuple[Any, Any]] = {}
        self.fun_name = fun_name
        self.consts_by_id: dict[int, tuple[Any, Any]] = {}

    def new_input(self, value: Any) -> StagingBox:
        view = getattr(value, "view", None)
        if callable(view) and hasattr(value, "shape"):
            value = view()  # a distinct object: captured aliases of the input stay constants
        var = self.program.new_var(value)
        self.program.invars.append(var)
        if _identifiable(value):
            self.produced[id(value)] = (value, var)
        return StagingBox(value, self, var)

    def capture(self, box: Box) -> tuple[Any, Any]:
        """The implicit input for ``box``, a value of an enclosing transform read through f's
        closure, and the plain value traced for it; OuterTraceError where it cannot be one
        (no ``example`` given, or the box's transform is not an open, enclosing one)."""
        seen = self.captured.get(id(box))
        if seen is not None:
            return seen[1], seen[2]
        trace = box._trace
        if self.example is None or not trace.active or trace.level >= self.level or is_staged(box):
            # (a value of an enclosing fg.jit: f runs as plain code, recorded into that program)
            raise OuterTraceError(trace.name)
        value = self.example(box)
        view = getattr(value, "view", None)
        if callable(view) and hasattr(value, "shape"):
            value = view()  # a distinct object, as for explicit inputs
        var = self.program.new_var(value)
        self.program.invars.append(var)
        self.captures.append(box)
        self.captured[id(box)] = (box, var, value)
        return var, value

    def static_input(self, value: Any) -> Any:
        """An input whose value is part of the cache key: passed on unboxed, unused by the program."""
        self.program.invars.append(self.program.new_var(value))
        return value

    def atom(self, value: Any) -> Any:
        """The program atom for a plain argument: a produced var, a constant or a literal."""
        hit = self.produced.get(id(value))
        if hit is not None and hit[0] is value and _identifiable(value):
            return hit[1]
        if hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, type):
            seen = self.consts_by_id.get(id(value))
            if seen is not None and seen[0] is value and _unchanged(value, seen[1].value):
                return seen[1]  # one constant per captured array, however often it is used
            copy = getattr(value, "copy", None)
            const = self.program.new_const(copy() if callable(copy) else value)  # frozen now
            self.consts_by_id[id(value)] = (value, const)
            return const
        return value

    def process(self, prim: Primitive, args: list[Any], kwargs: dict[str, Any], argnums: list[int]) -> Any:
        ins: list[Any] = []
        for i, a in enumerate(args):
            if isinstance(a, Box):
                if a._trace is self:
                    ins.append(a._node)
                    args[i] = a._value
                    continue
                if type(a) is ConstBox:
                    args[i] = a = a._value
                else:
                    var, args[i] = self.capture(a)
                    ins.append(var)
                    continue
            ins.append(self.atom(a))
        for key, val in kwargs.items():
            if isinstance(val, Box):
                raise OuterTraceError(key)
        fast = prim.fast_types
        for a in args:
            if type(a) not in fast:
                fn = prim.raw
                break
        else:
            fn = prim.fast_fn
        if kwargs.get("out") is not None:
            fn = prim.raw
        elif fn is prim.raw:
            fn = self.program.function_for(prim, args) or fn  # the backend's own function, found once
        ans = fn(*args, **kwargs)
        prog = self.program
        values = ans if prim.multiple_results else (ans,)
        outs = [prog.new_var(v) for v in values]
        prog.add_eqn(prim, ins, dict(kwargs), outs, fn)
        boxes = []
        for v, var in zip(values, outs):
            if _identifiable(v):
                self.produced[id(v)] = (v, var)
            boxes.append(StagingBox(v, self, var))
        return tuple(boxes) if prim.multiple_results else boxes[0]

    def output(self, value: Any) -> Any:
        if isinstance(value, Box):
            if value._trace is self:
                return value._node
            if type(value) is ConstBox:
                value = value._value
            else:
                return self.capture(value)[0]
        atom = self.atom(value)
        return atom if atom is not value else self.program.new_const(value)


def is_staged(x: Any) -> bool:
    """True when ``x`` (through any boxes of inner transforms) is staged by ``fg.jit``."""
    while isinstance(x, Box):
        if isinstance(x, StagingBox):
            return True
        x = x._value
    return False


def user_line() -> str:
    """``file:line: code`` of the innermost frame outside funcgrad (the user's line)."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        path = os.path.abspath(frame.filename)
        if not path.startswith(_PACKAGE_DIR + os.sep) and not frame.filename.startswith("<funcgrad.jit"):
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return "<unknown>"


def staged_error(what: str) -> StagedValueError:
    return StagedValueError(
        f"{what} of a value traced by fg.jit: the program records array operations, not "
        f"Python decisions, so the value is unknown while tracing (a branch taken now would be "
        f"frozen into every later call).\n  at {user_line()}\n"
        f"Ways out: mark the argument static (fg.jit(f, static_argnums=...) or static_argnames=...) "
        f"if it is configuration; choose values with fnp.where / fnp.select instead of `if`; "
        f"use fg.scan / fg.fori_loop (or fg.while_loop / fg.cond) for loops and branches that "
        f"depend on values; or do not jit this function"
    )


def check_concrete(x: Any, what: str) -> None:
    """Raise :class:`StagedValueError` if Python needs the value of a staged ``x``."""
    if is_staged(x):
        raise staged_error(what)
