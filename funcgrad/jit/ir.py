"""The program IR: values (:class:`Var`, :class:`Const`), equations and programs.

A :class:`Program` is what :class:`funcgrad.core.staging.StagingTrace` records
(it implements the trace's ``Recorder``): inputs, one :class:`Eqn`
``outs = prim(*ins, **kwargs)`` per primitive call, constants and outputs.
``print(program)`` shows it like a jaxpr. It is plain data: the passes
(:mod:`funcgrad.jit.passes`) rewrite it and the backends
(:mod:`funcgrad.jit.numpy_replay`, :mod:`funcgrad.jit.native`) compile it.

Example::

    print(fg.make_program(lambda x: fnp.sin(x) * 2)(fnp.ones(3)))
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.trace import Primitive

__all__ = ["Var", "Const", "Eqn", "Program", "eval_program"]


class Var:
    """A value in a program: ``shape``/``dtype``/``kind`` as seen while tracing."""

    __slots__ = ("n", "shape", "dtype", "kind", "fresh", "nbytes")

    def __init__(self, n: int, value: Any) -> None:
        self.n = n
        if isinstance(value, type):  # a class passed as a (static) value, e.g. a dtype
            value = None
        self.shape = tuple(getattr(value, "shape", ()))
        self.dtype = getattr(value, "dtype", type(value).__name__)
        self.kind = type(value)
        self.fresh = False  # made by a ufunc: owns its memory, may be written into
        self.nbytes = getattr(value, "nbytes", 0)

    @property
    def name(self) -> str:
        return f"v{self.n}"

    def __repr__(self) -> str:
        return self.name


class Const:
    """A value fixed when the program was traced (arrays captured or created in ``f``)."""

    __slots__ = ("n", "value", "prefix")

    def __init__(self, n: int, value: Any, prefix: str = "c") -> None:
        self.n = n
        self.value = value
        self.prefix = prefix  # a sub-program's constants have their own, so names never clash

    @property
    def name(self) -> str:
        return f"{self.prefix}{self.n}"

    def __repr__(self) -> str:
        return self.name


def _short(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and len(shape) > 0:
        return f"{getattr(value, 'dtype', '')}{list(shape)}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _aval(v: Var) -> str:
    dt = v.dtype
    return f"{dt}{list(v.shape)}" if v.shape or hasattr(dt, "kind") else str(dt)


class Eqn:
    """``outs = prim(*ins, **kwargs)``; ``fn`` is the backend call replay uses."""

    __slots__ = ("prim", "ins", "kwargs", "outs", "fn", "multiple")

    def __init__(self, prim: Primitive, ins: list[Any], kwargs: dict[str, Any], outs: list[Var], fn: Callable[..., Any]):
        self.prim = prim
        self.ins = ins
        self.kwargs = kwargs
        self.outs = outs
        self.fn = fn
        self.multiple = prim.multiple_results

    def __repr__(self) -> str:
        outs = " ".join(f"{o}:{_aval(o)}" for o in self.outs)
        ins = " ".join(a.name if isinstance(a, (Var, Const)) else _short(a) for a in self.ins)
        params = ""
        if self.kwargs:
            params = "[" + ", ".join(f"{k}={_short(v)}" for k, v in self.kwargs.items()) + "]"
        return f"{outs} = {self.prim.name}{params} {ins}"


class Program:
    """A recorded computation: inputs, equations, constants and outputs.

    ``print(program)`` shows it; :func:`funcgrad.jit.passes.optimize` rewrites it and
    :func:`funcgrad.jit.numpy_replay.compile_program` makes it a function.
    """

    def __init__(self, function_for: Callable[[Primitive, list[Any]], Any] | None = None,
                 const_prefix: str = "c") -> None:
        self.invars: list[Var] = []
        self.eqns: list[Eqn] = []
        self.consts: list[Const] = []
        self.outs: list[Any] = []  # Var or Const
        self._count = 0
        self.const_prefix = const_prefix
        # while recording: the backend function that computes a primitive on these arguments
        # without its dispatch (CuPy's, say), or None (see funcgrad.jit.numpy_replay.direct_call)
        self._function_for = function_for

    def new_var(self, value: Any) -> Var:
        v = Var(self._count, value)
        self._count += 1
        return v

    def new_const(self, value: Any) -> Const:
        c = Const(len(self.consts), value, self.const_prefix)
        self.consts.append(c)
        return c

    def add_eqn(self, prim: Primitive, ins: list[Any], kwargs: dict[str, Any], outs: list[Var],
                fn: Callable[..., Any]) -> None:
        self.eqns.append(Eqn(prim, ins, kwargs, outs, fn))

    def function_for(self, prim: Primitive, args: list[Any]) -> Callable[..., Any] | None:
        return None if self._function_for is None else self._function_for(prim, args)

    def readers(self) -> dict["Var", set[int]]:
        """For each value an equation reads, the indices of the equations that read it."""
        found: dict[Var, set[int]] = {}
        for k, e in enumerate(self.eqns):
            for a in e.ins:
                if isinstance(a, Var):
                    found.setdefault(a, set()).add(k)
        return found

    def output_vars(self) -> set["Var"]:
        """The program's outputs that are computed values (not constants)."""
        return {o for o in self.outs if isinstance(o, Var)}

    def derived(self) -> "Program":
        """An empty program numbering its values after this one's (for programs made of its parts)."""
        new = Program(const_prefix=self.const_prefix)
        new._count = self._count
        return new

    def __repr__(self) -> str:
        lines = ["{ lambda " + " ".join(f"{c}" for c in self.consts) + " ; "
                 + " ".join(f"{v}:{_aval(v)}" for v in self.invars) + ". let"]
        for e in self.eqns:
            lines.append("    " + repr(e))
        lines.append("  in (" + ", ".join(o.name for o in self.outs) + ") }")
        consts = [f"  {c} = {_short(c.value)}" for c in self.consts]
        return "\n".join(lines + (["where"] + consts if consts else []))

    __str__ = __repr__


def eval_program(prog: Program, *inputs: Any) -> tuple[Any, ...]:
    """Run ``prog`` by calling each equation's primitive through its traced entry point,
    so that transforms applied around the call see ordinary primitive calls."""
    env: dict[Var, Any] = dict(zip(prog.invars, inputs))

    def read(a: Any) -> Any:
        if isinstance(a, Var):
            return env[a]
        if isinstance(a, Const):
            return a.value
        return a

    for e in prog.eqns:
        out = e.prim.call(*[read(a) for a in e.ins], **e.kwargs)
        if e.multiple:
            env.update(zip(e.outs, out))
        else:
            env[e.outs[0]] = out
    return tuple(read(o) for o in prog.outs)
