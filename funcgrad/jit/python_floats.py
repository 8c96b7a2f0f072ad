"""Python-float code: a program whose values are all float scalars runs on Python floats.

Calling ``math.sin`` on a float costs a fraction of a NumPy call on a 0-d array, so
the nested scalar functions of scientific code (and their higher derivatives) run
as one Python function of floats. Where Python's math raises (overflow, domain
errors, division by zero: NumPy returns inf or nan there) the array version runs
instead, so results and warnings stay NumPy's.

Example::

    fn = generate_scalar(prog, array_version)   # None unless every value is a float scalar
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .. import numpy as fnp
from ..core import trace as _trace_module
from ..core.trace import Primitive
from .ir import Const, Program, Var
from .kinds import host_number
from .known import primitive_of

__all__ = ["SCALAR_EXPR", "generate_scalar"]


def _table(pairs: list[tuple[Any, str]]) -> dict[Primitive, str]:
    return {primitive_of(fn): expr for fn, expr in pairs}


# Each primitive's Python expression of its arguments ``{0}``, ``{1}`` (math as ``_m``).
SCALAR_EXPR: dict[Primitive, str] = _table([
    (fnp.add, "{0} + {1}"), (fnp.subtract, "{0} - {1}"), (fnp.multiply, "{0} * {1}"),
    (fnp.divide, "{0} / {1}"), (fnp.negative, "-{0}"), (fnp.positive, "+{0}"), (fnp.power, "_pow({0}, {1})"),
    (fnp.square, "{0} * {0}"), (fnp.reciprocal, "1.0 / {0}"), (fnp.absolute, "abs({0})"),
    (fnp.sin, "_m.sin({0})"), (fnp.cos, "_m.cos({0})"), (fnp.tan, "_m.tan({0})"), (fnp.tanh, "_m.tanh({0})"),
    (fnp.sinh, "_m.sinh({0})"), (fnp.cosh, "_m.cosh({0})"), (fnp.exp, "_m.exp({0})"), (fnp.log, "_m.log({0})"),
    (fnp.sqrt, "_m.sqrt({0})"), (fnp.arctan, "_m.atan({0})"), (fnp.arcsin, "_m.asin({0})"),
    (fnp.arccos, "_m.acos({0})"), (fnp.log1p, "_m.log1p({0})"), (fnp.expm1, "_m.expm1({0})"),
    (fnp.arctanh, "_m.atanh({0})"), (fnp.arcsinh, "_m.asinh({0})"), (fnp.log10, "_m.log10({0})"),
    (fnp.log2, "_m.log2({0})"), (fnp.exp2, "_pow(2.0, {0})"),
])


def generate_scalar(prog: Program, fallback: Callable[..., Any],
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
        expr = SCALAR_EXPR.get(e.prim)
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
            num = host_number(a.value if isinstance(a, Const) else a)
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
