"""The NumPy replay backend: a program as straight-line Python calling the backend's functions.

No boxes, no tape: each equation is one call of the function that computed it
while tracing (NumPy's ufunc, CuPy's function for device arrays ...), with
buffer reuse (``out=`` into temporaries that die at that call), the cheaper
equivalent calls of :data:`LOWERINGS`, elementwise regions on large host
arrays run in blocks (:mod:`funcgrad.jit.blocking`) and, for programs of float
scalars, Python-float code (:mod:`funcgrad.jit.python_floats`).

Example::

    run = compile_program(fg.make_program(f)(x))
    outs = run(x)          # a tuple of the program's outputs
"""

from __future__ import annotations

import math
from typing import Any, Callable, Union

import numpy as np

from ..backend import namespace_of
from ..core import trace as _trace_module
from ..core.staging import user_line
from ..core.trace import Primitive
from .blocking import blocked_program
from .ir import Const, Eqn, Program, Var
from .loops import loop_of, replay_runner
from .kinds import is_gufunc, is_host_array, is_ufunc, makes_fresh, takes_out, writer_of, writes_out
from .known import EXPAND_DIMS, MATMUL, SQUEEZE, SUM
from .python_floats import generate_scalar
from .workspace import WORKSPACE_BYTES, Workspace, reachable_from_outputs

__all__ = ["compile_program", "direct_call", "LOWERINGS"]


def compile_program(prog: Program, reuse_bytes: int = 1 << 16, name: str = "f",
                    debug_version: Callable[..., tuple[Any, ...]] | None = None) -> Callable[..., tuple[Any, ...]]:
    """The program as a Python function ``f(*inputs) -> tuple of outputs``.

    Temporaries that die at a ufunc call with the same shape and dtype as its
    result are written into: host NumPy arrays of any size (positional ``out``
    below ``reuse_bytes``), other backends' arrays from ``reuse_bytes`` up. Runs of
    elementwise calls on one large host shape run block by block, on several threads
    where ``fg.config.jit_threads`` allows (see :mod:`funcgrad.jit.blocking`). A program
    whose values are all float scalars runs on Python floats (``math``), and
    falls back to the backend's functions where Python's math raises (overflow,
    domain errors, division by zero: NumPy returns inf or nan there).

    While ``fg.debug_nans`` is on, the function runs the equations one by one instead
    and checks each result, naming the first primitive that makes a NaN (``name`` is
    the jitted function's, for the message), or ``debug_version`` where given (the replay
    of a program whose native version this is).
    """
    checked = debug_version or _checked_runner(prog, name)
    blocked = blocked_program(prog, _generate, reuse_bytes)
    array_fn = _generate(blocked, reuse_bytes, checked)
    if blocked is not prog:  # show what each blocked region runs per block
        array_fn.source += "".join(  # type: ignore[attr-defined]
            f"# {', '.join(o.name for o in e.outs)} = elementwise blocks of:\n{e.fn.source}"
            for e in blocked.eqns if hasattr(e.fn, "source"))
    scalar_fn = generate_scalar(prog, array_fn, checked)
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


# -- how this backend lowers a primitive: by primitive object --------------------------
# ``lower(eqn)`` returns ``(fn, ins)`` (generated code calls ``fn(*ins)``, the same computation
# for these arguments), a Python expression of the input names (no call at all), or None to keep
# the recorded call.
Lowered = Union[tuple[Callable[..., Any], list[Any]], str, None]


def _lower_sum(e: Eqn) -> Lowered:
    """``sum`` of a host float array with only axis/keepdims set: ``numpy.add.reduce``
    (what ``numpy.sum`` computes, without its Python-level argument handling)."""
    ins = e.ins
    if e.kwargs or len(ins) != 7 or not isinstance(ins[0], Var):
        return None
    x, axis, dtype, out, keepdims, initial, where = ins
    if (x.kind is not np.ndarray or not hasattr(x.dtype, "kind") or x.dtype.kind != "f" or dtype is not None
            or out is not None or initial is not None or where is not None or type(keepdims) is not bool
            or not (axis is None or type(axis) is int or (type(axis) is tuple and all(type(a) is int for a in axis)))):
        return None
    return np.add.reduce, [x, axis, None, None, keepdims]


def _lower_unit_axis(e: Eqn) -> Lowered:
    """``expand_dims``/``squeeze``: a view with one more (or fewer) unit axis, made by the
    array's own ``reshape`` (no dispatch)."""
    x = e.ins[0] if e.ins else None
    if (isinstance(x, Var) and not e.kwargs and x.kind is e.outs[0].kind and hasattr(x.kind, "reshape")):
        return f"{x.name}.reshape({e.outs[0].shape!r})"
    return None


def _rows_matmul(a: Any, b: Any, out: Any = None) -> Any:
    """``a @ b`` for a C-contiguous ``a`` of shape ``(..., n, k)`` and a matrix ``b``: one product of
    ``a``'s rows ``(prod(...) * n, k)`` with ``b`` (a batch of small products is slower in NumPy)."""
    if not a.flags.c_contiguous or (out is not None and not out.flags.c_contiguous):
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    rows = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])
    if out is None:
        return np.matmul(rows, b).reshape(a.shape[:-1] + b.shape[-1:])
    np.matmul(rows, b, out=out.reshape(rows.shape[0], b.shape[-1]))
    return out


def _lower_matmul(e: Eqn) -> Lowered:
    """``matmul`` of a host stack of matrices ``(..., n, k)`` with one matrix ``(k, m)``: the rows of the
    stack times the matrix, one GEMM (:func:`_rows_matmul`)."""
    if e.kwargs or len(e.ins) != 2 or not isinstance(e.ins[0], Var):
        return None
    a, b = e.ins
    b_shape = b.shape if isinstance(b, Var) else getattr(getattr(b, "value", b), "shape", ())
    b_kind = b.kind if isinstance(b, Var) else type(getattr(b, "value", b))
    if (a.kind is not np.ndarray or b_kind is not np.ndarray or len(a.shape) < 3 or len(b_shape) != 2
            or a.dtype != e.outs[0].dtype):
        return None
    return _rows_matmul, [a, b]


LOWERINGS: dict[Primitive, Callable[[Eqn], Lowered]] = {
    MATMUL: _lower_matmul,
    SUM: _lower_sum,
    EXPAND_DIMS: _lower_unit_axis,
    SQUEEZE: _lower_unit_axis,
}


def direct_call(prim: Primitive, args: list[Any]) -> Any:
    """The backend function a NumPy-named primitive dispatches to for these (device)
    arguments, so that the generated program calls it without dispatch; None otherwise.
    (Passed to the recording :class:`~funcgrad.jit.ir.Program` as its ``function_for``.)"""
    np_fn = prim.fast_fn
    if prim.fast_fn is prim.raw or not hasattr(prim.raw, "fast_path"):
        return None
    name = getattr(np_fn, "__name__", None)
    if name is None or getattr(np, name, None) is not np_fn:
        return None  # not a top-level NumPy function (linalg, fft ...): keep the dispatch
    arrays = [a for a in args if hasattr(a, "shape") and hasattr(a, "dtype")]
    if not arrays:
        return None
    try:
        ns = namespace_of(arrays[0])
        if any(namespace_of(a) is not ns for a in arrays[1:]):
            return None
    except Exception:
        return None
    if ns is np:
        return None
    return getattr(ns, name, None)


def _separates(e: Eqn) -> bool:
    """Its result is a new array that shares no memory with its arguments, and none of them is ever written
    into by the call: a generalized ufunc (matmul), funcgrad's matmul or sum (a reduction makes a new
    array), or a declared non-elementwise kernel (:func:`~funcgrad.jit.kinds.declare_fresh_result`)."""
    if e.multiple:
        return False
    if (is_gufunc(e.fn) or e.prim is MATMUL or e.prim is SUM) and not e.kwargs:
        return True
    return makes_fresh(e.fn, e.kwargs) and not writes_out(e.fn, e.kwargs)


RELEASE_BYTES = 1 << 16  # temporaries from this size are deleted after their last use (smaller ones: not worth a line)


def _generate(prog: Program, reuse_bytes: int,
              checked: Callable[..., Any] | None = None) -> Callable[..., tuple[Any, ...]]:
    names: dict[str, Any] = {}
    inputs = {id(v) for v in prog.invars}
    outputs = {id(o) for o in prog.outs}
    # last use of each var, and whether every consumer is a ufunc (then no view of it exists)
    last: dict[int, int] = {}
    only_ufunc: dict[int, bool] = {}
    for k, e in enumerate(prog.eqns):
        u = (writes_out(e.fn, e.kwargs) or (is_gufunc(e.fn) and not e.kwargs)) and not e.multiple
        for a in e.ins:
            if isinstance(a, Var):
                last[id(a)] = k
                only_ufunc[id(a)] = only_ufunc.get(id(a), True) and u
    for e in prog.eqns:
        if _separates(e) or (writes_out(e.fn, e.kwargs) and not e.multiple):  # a new array
            for o in e.outs:
                o.fresh = True
    shared = reachable_from_outputs(prog, _separates)  # what the caller may see: never in the workspace
    slots: list[tuple[tuple[int, ...], Any]] = []  # the workspace's buffers, named _w[i]
    in_workspace: set[str] = set()
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
        return v.nbytes >= reuse_bytes or is_host_array(v.kind)
    written: set[str] = set()  # names whose buffers a later result was written into

    def release(k: int, e: Eqn) -> None:
        """``del`` the large temporaries whose last reader is equation ``k`` (and results nothing reads), so
        that their memory is freed there, as eager execution frees it, rather than when the program
        returns: a training step's program otherwise holds every activation and cotangent to its end, and
        the larger heap is given back to the system and faulted in again at every call. Buffers kept for a
        later ``out=`` stay."""
        dead = [a for a in e.ins if isinstance(a, Var) and last.get(id(a)) == k]
        dead += [o for o in e.outs if id(o) not in last]
        names = []
        for v in dead:
            if (v.nbytes >= RELEASE_BYTES and id(v) not in inputs and id(v) not in outputs and v not in pooled
                    and v.name not in written and v.name not in names):
                names.append(v.name)
        if names:
            body.append(f"    del {', '.join(names)}")

    for k, e in enumerate(prog.eqns):
        call_fn, call_ins, kwargs = e.fn, e.ins, e.kwargs
        loop = loop_of(e)
        if loop is not None:  # the bodies' replays, not the Python functions (no tracing per step)
            call_fn, kwargs = replay_runner(loop, lambda body: compile_program(body, reuse_bytes)), {}
        lower = LOWERINGS.get(e.prim) if loop is None else None
        lowered = lower(e) if lower is not None else None
        if isinstance(lowered, str):  # an expression of the arguments' names: no call at all
            body.append(f"    {e.outs[0].name} = {lowered}")
            release(k, e)
            continue
        if lowered is not None:
            call_fn, call_ins = lowered
        args = []
        float_ufunc = (is_ufunc(e.fn) and len(e.outs) == 1 and hasattr(e.outs[0].dtype, "kind")
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
        for key, val in kwargs.items():
            args.append(f"{key}={literal(val)}")
        out = None
        reusable = [a for a in e.ins if isinstance(a, Var) and a.fresh and last.get(id(a)) == k
                    and only_ufunc.get(id(a)) and id(a) not in inputs and id(a) not in outputs]
        gufunc = is_gufunc(e.fn)
        if (writes_out(e.fn, e.kwargs) or (gufunc and not e.kwargs)) and not e.multiple and len(e.outs) == 1:
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
        single = e.outs[0] if len(e.outs) == 1 else None
        if (out is None and single is not None and loop is None and not e.multiple and is_host_array(single.kind)
                and single.nbytes >= WORKSPACE_BYTES and id(single) not in shared
                and (takes_out(e.fn, e.kwargs) or call_fn is _rows_matmul)):
            out = f"_w[{len(slots)}]"  # a buffer kept from call to call: no fresh pages to fault in
            slots.append((tuple(single.shape), single.dtype))
        if single is not None and out is not None and (out in in_workspace or out.startswith("_w[")):
            in_workspace.add(single.name)  # (written into a workspace buffer: never pooled for another value)
        for a in reusable:  # buffers nothing can see any more, for later results
            if a.name != out and poolable(a) and a not in pooled and a.name not in in_workspace:
                pooled.add(a)
                pool.setdefault((a.shape, a.dtype, a.kind), []).append(a.name)
        if out is not None and call_fn is e.fn:
            call_fn = writer_of(e.fn)  # (a declared kernel's variant that takes out=)
        fname = fn_names.get(id(call_fn))
        if fname is None:  # one name per backend function, however often it is called
            fname = fn_names[id(call_fn)] = f"f{len(fn_names)}"
            names[fname] = call_fn
        if out is not None:
            if (call_fn is e.fn and e.outs[0].nbytes < reuse_bytes and is_host_array(e.outs[0].kind)
                    and len(args) == getattr(e.fn, "nin", -1)
                    and getattr(e.fn, "__name__", "") not in ("maximum", "minimum")):  # NumPy 2.4 deprecates their positional out
                args.append(out)  # small arrays: NumPy parses a positional out faster than a keyword
            else:
                args.append(f"out={out}")
        lhs = ", ".join(o.name for o in e.outs) + ("," if e.multiple and len(e.outs) == 1 else "")
        if e.multiple and not e.outs:
            lhs = "_"
        body.append(f"    {lhs} = {fname}({', '.join(args)})")
        if out is not None and not out.startswith("_w["):
            written.add(out)
        release(k, e)
    rets = []
    for o in prog.outs:
        if isinstance(o, Const):
            names[o.name] = o.value
            rets.append(f"_copy({o.name})" if hasattr(o.value, "copy") else o.name)
        else:
            rets.append(o.name)
    names["_copy"] = lambda a: a.copy()
    if slots:  # this thread's buffers for the call, handed back at its end (a call that raises keeps them)
        names["_ws"] = Workspace(slots)
        body.insert(0, "    _w = _ws.take()")
        body.append("    _ws.give(_w)")
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
