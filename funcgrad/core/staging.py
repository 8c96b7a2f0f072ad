"""Staging: record primitive calls into a small program, then replay it as Python.

Under a :class:`StagingTrace` each primitive call still computes its value
(so shapes, dtypes and backends are concrete while tracing) and, besides,
appends one equation ``outs = prim(ins, params)`` to a :class:`Program`.
Differentiation and batching rules are written with primitives too, so a
``grad`` or ``vmap`` opened *inside* the staged function records its
derivative computation as more equations.

A program is inspectable (``print(program)`` looks like a jaxpr) and compiles
to a straight-line Python function that calls the backend's functions
directly: no boxes, no tape. Compilation runs dead-code elimination (pure
primitives only), common-subexpression elimination, constant folding and
buffer reuse (``out=`` into temporaries that die at that call), plus two
rewrites that keep every result bit for bit: a contraction with a diagonal
matrix built from the identity becomes a row scaling, and the elementwise
regions of a program on large host arrays run in cache-sized blocks, on a
small thread pool where ``fg.config.jit_threads`` allows (``blocking``).

Values that reach Python control flow (``bool``, ``int``, ``float``,
``item``, use as an index or shape) cannot be recorded: they raise
:class:`StagedValueError`, which names the user's line.
"""

from __future__ import annotations

import math
import os
import traceback
from typing import Any, Callable, Sequence

from . import trace as _trace_module
from .constant import ConstBox
from .trace import Box, Primitive, Trace

__all__ = [
    "Var", "Eqn", "Program", "StagingBox", "StagingTrace", "StagedValueError", "OuterTraceError",
    "staged_error", "is_staged", "check_concrete",
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

    __slots__ = ("n", "value")

    def __init__(self, n: int, value: Any) -> None:
        self.n = n
        self.value = value

    @property
    def name(self) -> str:
        return f"c{self.n}"

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

    ``print(program)`` shows it; ``program.compile()`` returns the straight-line
    Python function that replays it on new inputs of the same signature.
    """

    def __init__(self) -> None:
        self.invars: list[Var] = []
        self.eqns: list[Eqn] = []
        self.consts: list[Const] = []
        self.outs: list[Any] = []  # Var or Const
        self._count = 0

    def new_var(self, value: Any) -> Var:
        v = Var(self._count, value)
        self._count += 1
        return v

    def new_const(self, value: Any) -> Const:
        c = Const(len(self.consts), value)
        self.consts.append(c)
        return c

    def __repr__(self) -> str:
        lines = ["{ lambda " + " ".join(f"{c}" for c in self.consts) + " ; "
                 + " ".join(f"{v}:{_aval(v)}" for v in self.invars) + ". let"]
        for e in self.eqns:
            lines.append("    " + repr(e))
        lines.append("  in (" + ", ".join(o.name for o in self.outs) + ") }")
        consts = [f"  {c} = {_short(c.value)}" for c in self.consts]
        return "\n".join(lines + (["where"] + consts if consts else []))

    __str__ = __repr__

    # -- passes -----------------------------------------------------------------
    def optimize(self) -> "Program":
        """Constant folding, identities (x * 1, x + 0), common-subexpression elimination,
        dead-code elimination."""
        self._fold_constants()
        self._identities()
        self._cse()
        self._implicit_broadcasts()
        self._dce()
        self._diagonal_products()
        return self

    def _diagonal_products(self) -> None:
        """``tensordot(D, W, ((1,), (0,)))`` where ``D`` is the identity times vectors along its
        last axis (what reverse mode over ``vmap`` makes of the basis vectors: ``D = I * u * v``)
        becomes ``diagonal(D)[:, None] * W``: one elementwise pass instead of an n^3 product.
        The sums it skips add only signed zeros while everything is finite; the generated call
        checks that at run time and otherwise runs the product (host NumPy arrays only)."""
        diag: set[Var] = set()
        for e in self.eqns:
            if e.prim.name == "multiply" and len(e.ins) == 2 and not e.kwargs and _is_ufunc(e.fn):
                out = e.outs[0]
                if len(out.shape) != 2 or out.shape[0] != out.shape[1] or not _is_host_array(out.kind):
                    continue
                n = out.shape[0]
                for k in (0, 1):
                    a, b = e.ins[k], e.ins[1 - k]
                    if ((a in diag or _is_identity(a, n)) and isinstance(b, Var) and b.shape == (n,)
                            and b.dtype == out.dtype and _is_host_array(b.kind)):
                        diag.add(out)
                        break
            elif (e.prim.name == "tensordot" and len(e.ins) == 3 and not e.kwargs and e.ins[0] in diag
                  and _axes_are(e.ins[2], ((1,), (0,)))):
                d, w, out = e.ins[0], e.ins[1], e.outs[0]
                if isinstance(w, Const):
                    kind, dtype, shape = type(w.value), getattr(w.value, "dtype", None), getattr(w.value, "shape", ())
                elif isinstance(w, Var):
                    kind, dtype, shape = w.kind, w.dtype, w.shape
                else:
                    continue
                if _is_host_array(kind) and dtype == d.dtype == out.dtype and d.dtype.kind == "f" and len(shape) == 2:
                    e.fn = _diag_rows(e.fn, known_finite=isinstance(w, Const) and _all_finite(w.value))

    def _implicit_broadcasts(self) -> None:
        """Drop ``b = broadcast_to(a, s)`` where every use of ``b`` is a two-argument
        ufunc whose other argument already has shape ``s``: the ufunc broadcasts ``a``
        itself, to the same values."""
        uses: dict[Var, list[Eqn]] = {}
        for e in self.eqns:
            for a in e.ins:
                if isinstance(a, Var):
                    uses.setdefault(a, []).append(e)
        outs = {o for o in self.outs if isinstance(o, Var)}
        for e in self.eqns:
            if e.prim.name != "broadcast_to" or e.kwargs or not isinstance(e.ins[0], Var) or e.outs[0] in outs:
                continue
            b, a = e.outs[0], e.ins[0]
            users = uses.get(b, [])
            if not users or a.dtype != b.dtype or a.kind is not b.kind:
                continue
            ok = True
            for u in users:
                others = [x for x in u.ins if x is not b]
                if not (_is_ufunc(u.fn) and not u.kwargs and len(u.ins) == 2 and len(others) == 1
                        and isinstance(others[0], Var) and others[0].shape == b.shape):
                    ok = False
                    break
            if ok:
                for u in users:
                    u.ins = [a if x is b else x for x in u.ins]

    def _identities(self) -> None:
        """``x * 1``, ``1 * x``, ``x + 0``, ``0 + x``, ``x - 0`` where the result is ``x``
        exactly (same shape, dtype and type: the constant neither broadcasts nor casts)."""
        subst: dict[Var, Any] = {}
        kept = []
        unit = {"multiply": (1, (0, 1)), "add": (0, (0, 1)), "subtract": (0, (1,))}
        for e in self.eqns:
            e.ins = [subst.get(a, a) if isinstance(a, Var) else a for a in e.ins]
            rule = unit.get(e.prim.name)
            if rule is not None and len(e.ins) == 2 and not e.kwargs and e.prim.pure:
                value, positions = rule
                out = e.outs[0]
                for k in positions:
                    other = e.ins[1 - k]
                    if (isinstance(other, Var) and _is_constant(e.ins[k], value) and other.shape == out.shape
                            and other.dtype == out.dtype and other.kind is out.kind):
                        subst[out] = other
                        break
                else:
                    kept.append(e)
                continue
            kept.append(e)
        self.eqns = kept
        self.outs = [subst.get(o, o) if isinstance(o, Var) else o for o in self.outs]

    def _fold_constants(self) -> None:
        kept = []
        subst: dict[Var, Any] = {}
        for e in self.eqns:
            e.ins = [subst.get(a, a) if isinstance(a, Var) else a for a in e.ins]
            if e.prim.pure and not any(isinstance(a, Var) for a in e.ins):
                args = [a.value if isinstance(a, Const) else a for a in e.ins]
                try:
                    out = e.fn(*args, **e.kwargs)
                except Exception:  # leave it to run time, where it raises for real
                    kept.append(e)
                    continue
                outs = out if e.multiple else (out,)
                for v, val in zip(e.outs, outs):
                    subst[v] = self.new_const(val)
                continue
            kept.append(e)
        self.eqns = kept
        self.outs = [subst.get(o, o) if isinstance(o, Var) else o for o in self.outs]

    def _cse(self) -> None:
        seen: dict[Any, list[Var]] = {}
        subst: dict[Var, Var] = {}
        kept = []
        for e in self.eqns:
            e.ins = [subst.get(a, a) if isinstance(a, Var) else a for a in e.ins]
            if e.prim.pure:
                try:
                    key = (id(e.prim), id(e.fn), tuple(_atom_key(a) for a in e.ins),
                           tuple(sorted((k, _atom_key(v)) for k, v in e.kwargs.items())))
                    hash(key)
                except TypeError:
                    key = None
                if key is not None:
                    prev = seen.get(key)
                    if prev is not None:
                        for a, b in zip(e.outs, prev):
                            subst[a] = b
                        continue
                    seen[key] = e.outs
            kept.append(e)
        self.eqns = kept
        self.outs = [subst.get(o, o) if isinstance(o, Var) else o for o in self.outs]

    def _dce(self) -> None:
        live = {o for o in self.outs if isinstance(o, Var)}
        kept = []
        for e in reversed(self.eqns):
            if not e.prim.pure or any(o in live for o in e.outs):
                kept.append(e)
                live.update(a for a in e.ins if isinstance(a, Var))
        kept.reverse()
        self.eqns = kept
        used = {id(a) for e in self.eqns for a in e.ins if isinstance(a, Const)}
        used |= {id(o) for o in self.outs if isinstance(o, Const)}
        self.consts = [c for c in self.consts if id(c) in used]

    # -- code generation ----------------------------------------------------------
    def compile(self, reuse_bytes: int = 1 << 16, name: str = "f") -> Callable[..., tuple[Any, ...]]:
        """The program as a Python function ``f(*inputs) -> tuple of outputs``.

        Temporaries that die at a ufunc call with the same shape and dtype as its
        result are written into: host NumPy arrays of any size (positional ``out``
        below ``reuse_bytes``), other backends' arrays from ``reuse_bytes`` up. Runs of
        elementwise calls on one large host shape run block by block, on several threads
        where ``fg.config.jit_threads`` allows (see ``funcgrad.core.blocking``). A program
        whose values are all float scalars runs on Python floats (``math``), and
        falls back to the backend's functions where Python's math raises (overflow,
        domain errors, division by zero: NumPy returns inf or nan there).

        While ``fg.debug_nans`` is on, the function runs the equations one by one instead
        and checks each result, naming the first primitive that makes a NaN (``name`` is
        the jitted function's, for the message).
        """
        from .blocking import blocked_program

        checked = _checked_runner(self, name)
        blocked = blocked_program(self, reuse_bytes)
        array_fn = _generate(blocked, reuse_bytes, checked)
        if blocked is not self:  # show what each blocked region runs per block
            array_fn.source += "".join(  # type: ignore[attr-defined]
                f"# {', '.join(o.name for o in e.outs)} = elementwise blocks of:\n{e.fn.source}"
                for e in blocked.eqns if hasattr(e.fn, "source"))
        scalar_fn = _generate_scalar(self, array_fn, checked)
        return scalar_fn if scalar_fn is not None else array_fn


def _checked_runner(prog: Program, name: str) -> Callable[..., tuple[Any, ...]]:
    """``prog`` run equation by equation with each result shown to the engine's result hook
    (``fg.debug_nans``'s check); where the hook raises, the error names the equation too."""
    eqns, invars, outs = list(prog.eqns), list(prog.invars), list(prog.outs)

    def read(env: dict[Var, Any], a: Any) -> Any:
        if isinstance(a, Var):
            return env[a]
        return a.value if isinstance(a, Const) else a

    def checked(*inputs: Any) -> tuple[Any, ...]:
        env: dict[Var, Any] = dict(zip(invars, inputs))
        for e in eqns:
            out = e.fn(*[read(env, a) for a in e.ins], **e.kwargs)
            hook = _trace_module.result_hook
            if hook is not None:
                try:
                    out = hook(e.prim, out, "forward")
                except FloatingPointError:
                    raise FloatingPointError(
                        f"debug_nans: primitive '{e.prim.name}' produced a NaN in the compiled program of "
                        f"fg.jit({name}), equation {eqns.index(e) + 1} of {len(eqns)}: `{e!r}`; the call: "
                        f"{user_line()}. fg.make_program({name})(*args) prints the program (it includes the "
                        f"derivative computations of transforms used inside {name}). Turn the check off with "
                        f"fg.config.update('debug_nans', False) once found.") from None
            env.update(zip(e.outs, out) if e.multiple else ((e.outs[0], out),))
        res = []
        for o in outs:
            v = read(env, o)
            res.append(v.copy() if isinstance(o, Const) and hasattr(v, "copy") else v)
        return tuple(res)
    return checked


def _host_number(value: Any) -> Any:
    """``value`` as a Python number if it is a host scalar or size-1 host array, else None
    (device arrays are never read back to the host here)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and getattr(value, "size", 0) == 1 and getattr(value, "dtype", None) is not None:
        if value.dtype.kind in "fiu":
            return value.item()
    return None


def _is_constant(a: Any, value: float) -> bool:
    """Is the atom ``a`` a constant whose every entry equals ``value``?"""
    v = a.value if isinstance(a, Const) else a
    if isinstance(a, Var):
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v == value
    if type(v).__module__ == "numpy" and getattr(v, "dtype", None) is not None and v.dtype.kind in "fiu" and v.size:
        return bool((v == value).all())
    return False


def _atom_key(a: Any) -> Any:
    if isinstance(a, Var):
        return ("v", a.n)
    if isinstance(a, Const):
        v = a.value
        return ("c", id(v)) if hasattr(v, "shape") else ("k", type(v), v)
    if hasattr(a, "shape") and not isinstance(a, (int, float, complex)):
        return ("a", id(a))
    if isinstance(a, (float, complex)):
        return (type(a), repr(a))  # 0.0 and -0.0 are equal but not the same literal
    return (type(a), a)


def _is_ufunc(fn: Any) -> bool:
    """An elementwise ufunc with one result (not a generalized one such as matmul)."""
    return type(fn).__name__ == "ufunc" and getattr(fn, "nout", 0) == 1 and getattr(fn, "signature", None) is None


def _is_gufunc(fn: Any) -> bool:
    """A generalized ufunc (matmul): it takes ``out=``, but its result may not alias an argument."""
    return type(fn).__name__ == "ufunc" and getattr(fn, "nout", 0) == 1 and getattr(fn, "signature", None) is not None


def _is_identity(a: Any, n: int) -> bool:
    """A constant host identity matrix of order ``n``."""
    if not isinstance(a, Const) or not _is_host_array(type(a.value)) or a.value.shape != (n, n):
        return False
    import numpy as np
    return bool(np.array_equal(a.value, np.eye(n)))


def _all_finite(a: Any) -> bool:
    import numpy as np
    return bool(np.isfinite(a).all())


def _axes_are(axes: Any, want: tuple[tuple[int, ...], ...]) -> bool:
    try:
        return tuple(tuple(int(i) for i in ax) for ax in axes) == want
    except TypeError:
        return False


def _diag_rows(product: Callable[..., Any], known_finite: bool) -> Callable[..., Any]:
    """``tensordot(D, W, axes)`` for a diagonal ``D``: its diagonal scales the rows of ``W``
    (exact while ``D`` and ``W`` are finite; otherwise the product itself)."""
    import numpy as np
    isfinite, multiply = np.isfinite, np.multiply

    def diag_rows(d: Any, w: Any, axes: Any) -> Any:
        scale = d.diagonal()
        if isfinite(scale).all() and (known_finite or isfinite(w).all()):
            return multiply(scale[:, None], w)
        return product(d, w, axes)
    return diag_rows


def _is_host_array(kind: Any) -> bool:
    return getattr(kind, "__name__", "") == "ndarray" and getattr(kind, "__module__", "") == "numpy"


def _generate(prog: Program, reuse_bytes: int,
              checked: Callable[..., Any] | None = None) -> Callable[..., tuple[Any, ...]]:
    names: dict[str, Any] = {}
    inputs = {id(v) for v in prog.invars}
    outputs = {id(o) for o in prog.outs}
    # last use of each var, and whether every consumer is a ufunc (then no view of it exists)
    last: dict[int, int] = {}
    only_ufunc: dict[int, bool] = {}
    for k, e in enumerate(prog.eqns):
        u = (_is_ufunc(e.fn) or _is_gufunc(e.fn)) and not e.kwargs and not e.multiple
        for a in e.ins:
            if isinstance(a, Var):
                last[id(a)] = k
                only_ufunc[id(a)] = only_ufunc.get(id(a), True) and u
    for e in prog.eqns:
        if (_is_ufunc(e.fn) or _is_gufunc(e.fn)) and not e.kwargs and not e.multiple:
            for o in e.outs:
                o.fresh = True
    body = []
    fn_names: dict[int, str] = {}
    lit_names: dict[Any, str] = {}

    def literal(value: Any) -> str:
        """A name bound to ``value`` (equal hashable values share one)."""
        try:
            key: Any = (type(value), value)
            if isinstance(value, (float, complex)) or getattr(value, "shape", None) == ():
                key = (type(value), repr(value))  # 0.0 and -0.0 are equal but not the same literal
            hash(key)
        except TypeError:
            key = ("id", id(value))
        name = lit_names.get(key)
        if name is None:
            name = lit_names[key] = f"k{len(lit_names)}"
            names[name] = value
        return name

    pool: dict[Any, list[str]] = {}  # dead temporaries by (shape, dtype, type), free for out=
    pooled: set[Var] = set()

    def poolable(v: Var) -> bool:
        """Worth writing into: a large array, or any host NumPy array (not a 0-d one, which a
        ufunc returns as a scalar): for small arrays a positional ``out`` skips the allocation."""
        if not hasattr(v.dtype, "kind") or v.shape == ():
            return False
        return v.nbytes >= reuse_bytes or _is_host_array(v.kind)
    for k, e in enumerate(prog.eqns):
        call_fn, call_ins = e.fn, e.ins
        lower = lowerings.get(e.prim.name)
        if lower is not None and not e.kwargs:
            lowered = lower(e.ins, e.outs)
            if lowered is not None:
                call_fn, call_ins = lowered
        fname = fn_names.get(id(call_fn))
        if fname is None:  # one name per backend function, however often it is called
            fname = fn_names[id(call_fn)] = f"f{len(fn_names)}"
            names[fname] = call_fn
        args = []
        float_ufunc = (_is_ufunc(e.fn) and len(e.outs) == 1 and hasattr(e.outs[0].dtype, "kind")
                       and e.outs[0].dtype.kind in "fc"
                       and all(a.dtype == e.outs[0].dtype for a in e.ins if isinstance(a, Var)))
        for a in call_ins:
            if isinstance(a, Var):
                args.append(a.name)
            elif isinstance(a, Const):
                names[a.name] = a.value
                args.append(a.name)
            elif type(a) is int and float_ufunc and abs(a) < 2 ** 53:
                args.append(repr(float(a)))  # same result (the array's float dtype wins), faster call
            elif a is None or type(a) in (int, bool, str) or (type(a) is float and math.isfinite(a)):
                args.append(repr(a))
            else:
                args.append(literal(a))
        for key, val in e.kwargs.items():
            args.append(f"{key}={literal(val)}")
        out = None
        reusable = [a for a in e.ins if isinstance(a, Var) and a.fresh and last.get(id(a)) == k
                    and only_ufunc.get(id(a)) and id(a) not in inputs and id(a) not in outputs]
        gufunc = _is_gufunc(e.fn)
        if (_is_ufunc(e.fn) or gufunc) and not e.kwargs and not e.multiple and len(e.outs) == 1:
            res = e.outs[0]
            if poolable(res):
                slot = (res.shape, res.dtype, res.kind)
                seen_args = [a for a in e.ins if isinstance(a, Var)]
                for a in ([] if gufunc else reusable):  # an argument that dies here (elementwise only)
                    if (a.shape, a.dtype, a.kind) == slot and seen_args.count(a) == 1:
                        out = a.name
                        break
                else:  # a temporary that died earlier
                    free = pool.get(slot)
                    if free:
                        out = free.pop()
        for a in reusable:  # buffers nothing can see any more, for later results
            if a.name != out and poolable(a) and a not in pooled:
                pooled.add(a)
                pool.setdefault((a.shape, a.dtype, a.kind), []).append(a.name)
        if out is not None:
            if (call_fn is e.fn and e.outs[0].nbytes < reuse_bytes and _is_host_array(e.outs[0].kind)
                    and len(args) == getattr(e.fn, "nin", -1)
                    and getattr(e.fn, "__name__", "") not in ("maximum", "minimum")):  # NumPy 2.4 deprecates their positional out
                args.append(out)  # small arrays: NumPy parses a positional out faster than a keyword
            else:
                args.append(f"out={out}")
        lhs = ", ".join(o.name for o in e.outs) + ("," if e.multiple and len(e.outs) == 1 else "")
        src_var = e.ins[0] if e.ins else None
        if (e.prim.name in ("expand_dims", "squeeze") and isinstance(src_var, Var) and not e.kwargs
                and src_var.kind is e.outs[0].kind and hasattr(src_var.kind, "reshape")):
            # a view with one more (or fewer) unit axis: the array's own reshape, no dispatch
            body.append(f"    {lhs} = {src_var.name}.reshape({e.outs[0].shape!r})")
            continue
        if e.multiple and not e.outs:
            lhs = "_"
        body.append(f"    {lhs} = {fname}({', '.join(args)})")
    rets = []
    for o in prog.outs:
        if isinstance(o, Const):
            names[o.name] = o.value
            rets.append(f"_copy({o.name})" if hasattr(o.value, "copy") else o.name)
        else:
            rets.append(o.name)
    names["_copy"] = lambda a: a.copy()
    params = ", ".join(v.name for v in prog.invars)
    if checked is not None:  # fg.debug_nans: one attribute test per call while it is off
        names["_tr"], names["_checked"] = _trace_module, checked
        body.insert(0, f"    if _tr.result_hook is not None:\n        return _checked({params})")
    # every function and constant is bound as a keyword-only default: a fast local, not a global
    bound = [n for n in names if n != "_copy"] + ["_copy"]
    params += (", " if params else "") + "*, " + ", ".join(f"{n}={n}" for n in bound)
    src = f"def program({params}):\n" + "\n".join(body) + f"\n    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})\n"
    scope = dict(names)
    exec(compile(src, "<funcgrad.jit program>", "exec"), scope)
    fn: Callable[..., tuple[Any, ...]] = scope["program"]
    fn.source = src  # type: ignore[attr-defined]
    return fn


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


# Cheaper equivalent calls for generated code, registered by the layers that know the
# primitives: ``lowerings[name](ins, outs) -> (fn, ins)`` or None to keep the call.
lowerings: dict[str, Callable[[list[Any], list[Var]], Any]] = {}


def register_lowering(name: str, lower: Callable[[list[Any], list[Var]], Any]) -> None:
    """Let generated code call ``fn(*ins)`` instead of primitive ``name``'s function where
    ``lower`` says that is the same computation for these arguments (see ``lowerings``)."""
    lowerings[name] = lower


# Registered by the layer that knows array namespaces (funcgrad.transforms.jit):
# ``direct_call(prim, args)`` returns the backend function that ``prim.raw`` would
# dispatch to for these arguments (CuPy's, say), or None to keep ``prim.raw``.
direct_call: Callable[[Primitive, list[Any]], Any] | None = None


def register_direct_call(resolver: Callable[[Primitive, list[Any]], Any]) -> None:
    """Let staged programs call the backend's functions directly (see ``direct_call``)."""
    global direct_call
    direct_call = resolver


class StagingBox(Box):
    """A value staged by ``fg.jit``: its traced value and its program variable (in ``_node``)."""

    __slots__ = ()

    def __init__(self, value: Any, trace: Trace, var: Var):
        self._value = value
        self._trace = trace
        self._node = var  # type: ignore[assignment]
        self._view = None
        self._version = 0


class StagingTrace(Trace):
    """Records every primitive call on its boxes into :attr:`program`."""

    __slots__ = ("program", "produced", "fun_name", "consts_by_id", "example", "captures", "captured")

    def __init__(self, name: str = "jit", fun_name: str = "f",
                 example: Callable[[Any], Any] | None = None) -> None:
        super().__init__(name)
        self.program = Program()
        # values of enclosing transforms that f reads from its closure become implicit
        # inputs (after the explicit ones): ``example(box)`` is the plain value traced for one
        self.example = example
        self.captures: list[Box] = []
        self.captured: dict[int, tuple[Box, Var, Any]] = {}
        # id(value) -> var for values made by recorded calls: code that strips a
        # box and passes its plain value on still refers to the variable
        self.produced: dict[int, tuple[Any, Var]] = {}
        self.fun_name = fun_name
        self.consts_by_id: dict[int, tuple[Any, Const]] = {}

    def new_input(self, value: Any) -> StagingBox:
        view = getattr(value, "view", None)
        if callable(view) and hasattr(value, "shape"):
            value = view()  # a distinct object: captured aliases of the input stay constants
        var = self.program.new_var(value)
        self.program.invars.append(var)
        if _identifiable(value):
            self.produced[id(value)] = (value, var)
        return StagingBox(value, self, var)

    def capture(self, box: Box) -> tuple[Var, Any]:
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
        elif fn is prim.raw and direct_call is not None:
            fn = direct_call(prim, args) or fn  # the backend's own function, found once
        ans = fn(*args, **kwargs)
        prog = self.program
        values = ans if prim.multiple_results else (ans,)
        outs = [prog.new_var(v) for v in values]
        prog.eqns.append(Eqn(prim, ins, dict(kwargs), outs, fn))
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
        return atom if isinstance(atom, (Var, Const)) else self.program.new_const(value)


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


# -- programs as functions of traced values -------------------------------------------

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


def split_program(joint: Program, n_primal_in: int, n_primal_out: int) -> tuple[Program, Program]:
    """Split a program ``(xs, cts) -> (outs, grads)`` into a forward program
    ``xs -> (outs, residuals)`` and a backward program ``(residuals, cts) -> grads``.

    Equations that depend on no cotangent input belong to the forward program; the
    forward values the backward equations read are its residuals (nothing is recomputed).
    """
    back_vars = set(joint.invars[n_primal_in:])
    fwd_eqns, bwd_eqns = [], []
    for e in joint.eqns:
        if any(isinstance(a, Var) and a in back_vars for a in e.ins):
            bwd_eqns.append(e)
            back_vars.update(e.outs)
        else:
            fwd_eqns.append(e)
    residuals: list[Var] = []
    seen: set[Var] = set()

    def need(a: Any) -> None:
        if isinstance(a, Var) and a not in back_vars and a not in seen:
            seen.add(a)
            residuals.append(a)

    for e in bwd_eqns:
        for a in e.ins:
            need(a)
    grads = joint.outs[n_primal_out:]
    for a in grads:
        need(a)
    fwd = Program()
    fwd._count = bwd_count = joint._count
    fwd.invars = list(joint.invars[:n_primal_in])
    fwd.eqns = fwd_eqns
    fwd.consts = list(joint.consts)
    fwd.outs = list(joint.outs[:n_primal_out]) + residuals
    bwd = Program()
    bwd._count = bwd_count
    bwd.invars = residuals + list(joint.invars[n_primal_in:])
    bwd.eqns = bwd_eqns
    bwd.consts = list(joint.consts)
    bwd.outs = list(grads)
    return fwd.optimize(), bwd.optimize()


# Python-float code for programs of float scalars: each primitive's expression.
_SCALAR_EXPR = {
    "add": "{0} + {1}", "subtract": "{0} - {1}", "multiply": "{0} * {1}", "divide": "{0} / {1}",
    "true_divide": "{0} / {1}", "negative": "-{0}", "positive": "+{0}", "power": "_pow({0}, {1})",
    "square": "{0} * {0}", "reciprocal": "1.0 / {0}", "absolute": "abs({0})", "abs": "abs({0})",
    "sin": "_m.sin({0})", "cos": "_m.cos({0})", "tan": "_m.tan({0})", "tanh": "_m.tanh({0})",
    "sinh": "_m.sinh({0})", "cosh": "_m.cosh({0})", "exp": "_m.exp({0})", "log": "_m.log({0})",
    "sqrt": "_m.sqrt({0})", "arctan": "_m.atan({0})", "arcsin": "_m.asin({0})", "arccos": "_m.acos({0})",
    "log1p": "_m.log1p({0})", "expm1": "_m.expm1({0})", "arctanh": "_m.atanh({0})", "arcsinh": "_m.asinh({0})",
    "log10": "_m.log10({0})", "log2": "_m.log2({0})", "exp2": "_pow(2.0, {0})",
}


def _generate_scalar(prog: Program, fallback: Callable[..., Any],
                     checked: Callable[..., Any] | None = None) -> Callable[..., Any] | None:
    """Straight-line Python-float code for ``prog``, or None if a value is not a float scalar."""
    if not prog.eqns:
        return None
    for v in prog.invars:
        if not issubclass(v.kind, float) or v.shape:
            return None
    lines = []
    consts: dict[str, Any] = {}
    for e in prog.eqns:
        expr = _SCALAR_EXPR.get(e.prim.name)
        if expr is None or e.kwargs or e.multiple or not e.prim.pure:
            return None
        o = e.outs[0]
        if not issubclass(o.kind, float) or o.shape or str(o.dtype) != "float64":
            return None
        args = []
        for a in e.ins:
            if isinstance(a, Var):
                args.append(a.name)
                continue
            num = _host_number(a.value if isinstance(a, Const) else a)
            if num is None or isinstance(num, bool) or not math.isfinite(num):
                return None
            args.append(repr(float(num)))
        lines.append(f"        {o.name} = {expr.format(*args)}")
    rets = []
    kinds: dict[str, Any] = {}
    for k, o in enumerate(prog.outs):
        if not isinstance(o, Var) or not issubclass(o.kind, float):
            return None
        kinds[f"_k{k}"] = o.kind
        rets.append(f"_k{k}({o.name})")
    params = ", ".join(v.name for v in prog.invars)
    conv = [f"        {v.name} = float({v.name})" for v in prog.invars]
    names = {"_m": math, "_pow": math.pow, "_fallback": fallback, **kinds, **consts}
    check = ""
    if checked is not None:  # fg.debug_nans
        names["_tr"], names["_checked"] = _trace_module, checked
        check = f"    if _tr.result_hook is not None:\n        return _checked({params})\n"
    bound = ", ".join(f"{n}={n}" for n in names)
    src = (f"def program({params}{', ' if params else ''}*, {bound}):\n{check}    try:\n" + "\n".join(conv + lines)
           + f"\n    except (OverflowError, ValueError, ZeroDivisionError):\n        return _fallback({params})\n"
           + f"    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})\n")
    scope = dict(names)
    exec(compile(src, "<funcgrad.jit scalar program>", "exec"), scope)
    fn: Callable[..., Any] = scope["program"]
    fn.source = src  # type: ignore[attr-defined]
    fn.array_version = fallback  # type: ignore[attr-defined]
    return fn
