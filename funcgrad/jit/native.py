"""The native backend: a staged program's elementwise work as numba-compiled loops.

A *segment* is a run of equations this backend can lower (:data:`NATIVE_EXPR`:
elementwise functions with broadcasting, comparisons, ``where``, and ``sum`` of a
whole array) on host float32/float64 values. Each segment becomes one numba
function; inside it the equations with one loop shape run as one loop nest that
computes every value element by element, so a chain of elementwise calls, forward
or derivative, makes no temporaries: only the values read after the loop are
stored. A ``sum`` in a loop nest accumulates as it goes (in float64 for float32
input). Where every equation lowers, the whole program is one compiled call;
otherwise the replay (:mod:`funcgrad.jit.numpy_replay`) runs the rest and calls
the compiled segments.

Results: every elementwise result is computed in its recorded dtype from the same
operands, by LLVM's / libm's functions rather than NumPy's loops, so values may
differ from the replay's in the last few bits (docs/jit.md states the bound);
NaN and inf come out as NumPy's (no floating-point warnings are issued).

numba is optional (``pip install funcgrad[native]``); nothing here imports it
until a program is compiled. :func:`available` says whether the tier is on and,
if not, why.

Example::

    from funcgrad.jit import native
    made = native.native_program(prog)   # (program calling compiled segments, lowered, left), or None
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from typing import Any, Callable

import numpy as np

from .. import numpy as fnp
from ..core.trace import Primitive
from .ir import Const, Eqn, Program, Var
from .kinds import is_host_array
from .known import SUM, WHERE, primitive_of

__all__ = ["NATIVE_EXPR", "COMPARISONS", "available", "installed", "status", "cache_dir", "lowerable", "Segment", "plan",
           "segment_source", "compile_segment", "native_program"]


def _table(pairs: list[tuple[Any, str]]) -> dict[Primitive, str]:
    return {primitive_of(fn): expr for fn, expr in pairs}


# Each primitive's numba expression of its (already cast) operands ``{0}``, ``{1}``; ``{t}`` is
# the result's dtype constructor (np.float64 or np.float32).
NATIVE_EXPR: dict[Primitive, str] = _table([
    (fnp.add, "{0} + {1}"), (fnp.subtract, "{0} - {1}"), (fnp.multiply, "{0} * {1}"),
    (fnp.divide, "{0} / {1}"), (fnp.negative, "-{0}"), (fnp.positive, "{0}"), (fnp.power, "{0} ** {1}"),
    (fnp.square, "{0} * {0}"), (fnp.reciprocal, "{t}(1.0) / {0}"), (fnp.absolute, "np.abs({0})"),
    (fnp.sin, "np.sin({0})"), (fnp.cos, "np.cos({0})"), (fnp.tan, "np.tan({0})"), (fnp.tanh, "np.tanh({0})"),
    (fnp.sinh, "np.sinh({0})"), (fnp.cosh, "np.cosh({0})"), (fnp.exp, "np.exp({0})"), (fnp.log, "np.log({0})"),
    (fnp.sqrt, "np.sqrt({0})"), (fnp.arctan, "np.arctan({0})"), (fnp.arcsin, "np.arcsin({0})"),
    (fnp.arccos, "np.arccos({0})"), (fnp.log1p, "np.log1p({0})"), (fnp.expm1, "np.expm1({0})"),
    (fnp.arctanh, "np.arctanh({0})"), (fnp.arcsinh, "np.arcsinh({0})"), (fnp.log10, "np.log10({0})"),
    (fnp.log2, "np.log2({0})"), (fnp.exp2, "np.exp2({0})"), (fnp.sign, "np.sign({0})"),
])

# comparisons: a bool result from operands of one float dtype
COMPARISONS: dict[Primitive, str] = _table([
    (fnp.greater, "{0} > {1}"), (fnp.greater_equal, "{0} >= {1}"), (fnp.less, "{0} < {1}"),
    (fnp.less_equal, "{0} <= {1}"), (fnp.equal, "{0} == {1}"), (fnp.not_equal, "{0} != {1}"),
])

_FLOATS = ("float64", "float32")
_SCALAR_KINDS = (float, np.float64, np.float32)


# -- is numba there? ----------------------------------------------------------------------

_numba: Any = None
_why_off: str | None = None


def _load_numba() -> Any:
    global _numba, _why_off
    if _numba is None and _why_off is None:
        try:
            import numba
        except Exception as exc:  # noqa: BLE001 - any failure means: no native tier
            _why_off = (f"the native tier of fg.jit is off: numba cannot be imported ({exc}); "
                        f"install it with `pip install funcgrad[native]`")
        else:
            _numba = numba
    return _numba


def available() -> bool:
    """Can programs be compiled to native code here (is numba importable)? Imports numba."""
    return _load_numba() is not None


_installed: bool | None = None


def installed() -> bool:
    """Is numba installed (found without importing it: cheap enough for a first call)?"""
    global _installed
    if _installed is None:
        try:
            _installed = sys.modules.get("numba", 0) is not None and importlib.util.find_spec("numba") is not None
        except (ImportError, ValueError):
            _installed = False
    return _installed


def status() -> str:
    """One line on the native tier: on (with numba's version) or off, and why."""
    if available():
        return f"the native tier of fg.jit is on (numba {_numba.__version__}); kernels cached in {cache_dir()}"
    return _why_off or "the native tier of fg.jit is off"


def cache_dir() -> str:
    """Where compiled kernels are kept between processes (env ``FUNCGRAD_CACHE_DIR``)."""
    base = os.environ.get("FUNCGRAD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "funcgrad")
    return os.path.join(base, "native")


# -- what lowers ------------------------------------------------------------------------

def _dtype_name(x: Any) -> str:
    """The dtype of a value (a Var's recorded one), Python floats as float64."""
    dt = str(x.dtype) if isinstance(x, Var) else str(getattr(x, "dtype", ""))
    return "float64" if dt == "float" else dt


def _is_literal(a: Any) -> bool:
    return type(a) in (int, float, bool)


def _atom_ok(a: Any, want: tuple[str, ...], shape: tuple[int, ...]) -> bool:
    """Can operand ``a`` be read inside a loop of ``shape``: a host value of a dtype in ``want``
    whose shape broadcasts to ``shape``, or a Python number?"""
    if isinstance(a, Var):
        if not (is_host_array(a.kind) or a.kind in _SCALAR_KINDS or a.kind is np.bool_):
            return False
        dt, s = _dtype_name(a), a.shape
    elif isinstance(a, Const):
        v = a.value
        if _is_literal(v):
            return True
        if not (is_host_array(type(v)) or isinstance(v, (np.floating, np.bool_))):
            return False
        dt, s = _dtype_name(v), tuple(v.shape)
    else:
        return _is_literal(a)
    if dt not in want or len(s) > len(shape):
        return False
    return all(d == 1 or d == n for d, n in zip(s, shape[len(shape) - len(s):]))


def _out_ok(o: Var, dtypes: tuple[str, ...]) -> bool:
    return _dtype_name(o) in dtypes and (is_host_array(o.kind) or o.kind in _SCALAR_KINDS or o.kind is np.bool_)


def lowerable(e: Eqn) -> bool:
    """Does this backend lower equation ``e`` (see the module docstring)?"""
    if e.multiple or len(e.outs) != 1 or not e.prim.pure:
        return False
    o = e.outs[0]
    if e.prim is SUM:
        if len(e.ins) != 7 or e.kwargs or not isinstance(e.ins[0], Var):
            return False
        x, axis, dtype, out, keepdims, initial, where = e.ins
        return (axis is None and dtype is None and out is None and keepdims is False and initial is None
                and where is None and _out_ok(o, _FLOATS) and o.shape == () and _dtype_name(x) == _dtype_name(o)
                and is_host_array(x.kind) and len(x.shape) >= 1)
    if e.kwargs:
        return False
    if e.prim in NATIVE_EXPR:
        return (_out_ok(o, _FLOATS) and len(e.ins) in (1, 2)
                and all(_atom_ok(a, (_dtype_name(o),), o.shape) for a in e.ins))
    if e.prim in COMPARISONS:
        if not _out_ok(o, ("bool",)) or len(e.ins) != 2:
            return False
        dts = {_dtype_name(a) if isinstance(a, Var) else _dtype_name(a.value) for a in e.ins
               if isinstance(a, (Var, Const)) and not (isinstance(a, Const) and _is_literal(a.value))}
        return len(dts) == 1 and all(_atom_ok(a, tuple(dts), o.shape) for a in e.ins)
    if e.prim is WHERE:
        return (len(e.ins) == 3 and _out_ok(o, _FLOATS) and _atom_ok(e.ins[0], ("bool",), o.shape)
                and not _is_literal(e.ins[0])
                and all(_atom_ok(a, (_dtype_name(o),), o.shape) for a in e.ins[1:]))
    return False


class Segment:
    """A run of lowerable equations compiled as one function: ``ins`` the values it reads
    from outside, ``outs`` the values read after it."""

    def __init__(self, eqns: list[Eqn], ins: list[Any], outs: list[Var]):
        self.eqns, self.ins, self.outs = eqns, ins, outs


def plan(prog: Program) -> list[Any]:
    """``prog``'s equations with each maximal run of lowerable ones replaced by a :class:`Segment`."""
    users: dict[Var, set[int]] = {}
    for k, e in enumerate(prog.eqns):
        for a in e.ins:
            if isinstance(a, Var):
                users.setdefault(a, set()).add(k)
    final = {o for o in prog.outs if isinstance(o, Var)}
    items: list[Any] = []
    run: list[int] = []

    def flush() -> None:
        if run:
            members = [prog.eqns[k] for k in run]
            inside = set(run)
            made = {o for e in members for o in e.outs}
            ins: list[Any] = []
            for e in members:
                for a in e.ins:
                    if (isinstance(a, Var) or (isinstance(a, Const) and not _is_literal(a.value))) \
                            and a not in made and a not in ins:
                        ins.append(a)
            outs = [o for e in members for o in e.outs
                    if o in final or any(k not in inside for k in users.get(o, ()))]
            items.append(Segment(members, ins, outs))
            run.clear()

    for k, e in enumerate(prog.eqns):
        if lowerable(e):
            run.append(k)
        else:
            flush()
            items.append(e)
    flush()
    return items


# -- code generation ------------------------------------------------------------------------

def _literal(value: Any, dtype: str) -> str:
    v = float(value)
    if v != v:
        text = "np.nan"
    elif v in (float("inf"), float("-inf")):
        text = "np.inf" if v > 0 else "-np.inf"
    else:
        text = repr(v)
    return f"np.{dtype}({text})"


def segment_source(seg: Segment, name: str = "segment") -> str:
    """The Python source of ``seg`` as a numba-compilable function of ``seg.ins``."""
    params = [a.name for a in seg.ins]
    lines: list[str] = []
    # loop nests: equations of one loop shape in a row; a sum closes its nest for its readers
    nests: list[tuple[tuple[int, ...], list[Eqn]]] = []
    nest_of: dict[Var, int] = {}
    sums_in_nest: set[Var] = set()
    for e in seg.eqns:
        shape = tuple(e.ins[0].shape) if e.prim is SUM else tuple(e.outs[0].shape)
        reads_sum = any(isinstance(a, Var) and a in sums_in_nest for a in e.ins)
        if not nests or nests[-1][0] != shape or reads_sum:
            nests.append((shape, []))
            sums_in_nest = set()
        nests[-1][1].append(e)
        for o in e.outs:
            nest_of[o] = len(nests) - 1
        if e.prim is SUM:
            sums_in_nest.add(e.outs[0])
    # values read outside their nest (or returned) are stored whole
    seg_outs = set(seg.outs)
    stored: set[Var] = set()
    for k, (shape, eqns) in enumerate(nests):
        for e in eqns:
            for a in e.ins:
                if isinstance(a, Var) and a in nest_of and nest_of[a] != k:
                    stored.add(a)
    stored |= seg_outs

    def read(a: Any, shape: tuple[int, ...], nest: int, dtype: str) -> str:
        """The expression for operand ``a`` inside nest ``nest`` (loop ``shape``)."""
        if isinstance(a, Var) and a in nest_of:  # made in this segment
            if nest_of[a] == nest or not a.shape:
                return a.name  # this iteration's value, or a scalar of an earlier nest
            return _index(f"a_{a.name}", a.shape, shape)
        if isinstance(a, Const) and _is_literal(a.value):
            a = a.value
        if isinstance(a, (Var, Const)):
            s = a.shape if isinstance(a, Var) else tuple(a.value.shape)
            if not is_host_array(a.kind if isinstance(a, Var) else type(a.value)):
                return a.name  # a scalar argument
            return f"{a.name}[()]" if s == () else _index(a.name, s, shape)
        if isinstance(a, bool):
            return repr(a)
        return _literal(a, dtype)

    for k, (shape, eqns) in enumerate(nests):
        ind = "    "
        for e in eqns:
            o = e.outs[0]
            if e.prim is SUM:
                acc = "np.float64"  # float32 sums accumulate in float64
                lines.append(f"{ind}acc_{o.name} = {acc}(0.0)")
            elif o in stored and o.shape:
                dt = "np.bool_" if _dtype_name(o) == "bool" else f"np.{_dtype_name(o)}"
                lines.append(f"{ind}a_{o.name} = np.empty({o.shape!r}, {dt})")
        depth = len(shape)
        for d in range(depth):
            lines.append(f"{ind}{'    ' * d}for i{d} in range({shape[d]}):")
        body = ind + "    " * depth
        for e in eqns:
            o = e.outs[0]
            odt = _dtype_name(o)
            if e.prim is SUM:
                lines.append(f"{body}acc_{o.name} += {read(e.ins[0], shape, k, odt)}")
                continue
            if e.prim in COMPARISONS:
                dts = [_dtype_name(a) if isinstance(a, Var) else _dtype_name(a.value) for a in e.ins
                       if isinstance(a, (Var, Const)) and not (isinstance(a, Const) and _is_literal(a.value))]
                args = [read(a, shape, k, dts[0]) for a in e.ins]
                expr = COMPARISONS[e.prim].format(*args)
            elif e.prim is WHERE:
                c, x, y = (read(a, shape, k, odt) for a in e.ins)
                expr = f"({x} if {c} else {y})"
            else:
                args = [read(a, shape, k, odt) for a in e.ins]
                expr = f"np.{odt}(" + NATIVE_EXPR[e.prim].format(*args, t=f"np.{odt}") + ")"
            lines.append(f"{body}{o.name} = {expr}")
            if o in stored and o.shape:
                lines.append(f"{body}a_{o.name}[{', '.join(f'i{d}' for d in range(depth))}] = {o.name}")
        for e in eqns:
            if e.prim is SUM:
                o = e.outs[0]
                lines.append(f"{ind}{o.name} = np.{_dtype_name(o)}(acc_{o.name})")
    rets = [f"a_{o.name}" if o.shape else o.name for o in seg.outs]
    src = (f"def {name}({', '.join(params)}):\n" + "\n".join(lines)
           + f"\n    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})\n")
    return src


def _index(name: str, s: tuple[int, ...], shape: tuple[int, ...]) -> str:
    """``name`` indexed at the loop's counters, broadcast: trailing axes aligned, unit axes at 0."""
    lead = len(shape) - len(s)
    idx = ["0" if d == 1 and shape[lead + j] != 1 else f"i{lead + j}" for j, d in enumerate(s)]
    return f"{name}[{', '.join(idx)}]"


# -- compiling, with an on-disk cache ------------------------------------------------------

_import_lock = threading.Lock()


def _kernel(src: str, name: str, signature: tuple[Any, ...]) -> Any:
    """The numba dispatcher of ``src``'s function ``name`` compiled for ``signature`` (and only
    for it), from a module written to the cache directory (numba caches the machine code next
    to it, so a new process reuses it)."""
    numba = _load_numba()
    key = hashlib.sha256("\0".join((src, repr(signature), numba.__version__, np.__version__,
                                     sys.version)).encode()).hexdigest()[:24]
    mod_name = f"funcgrad_native_{key}"
    with _import_lock:
        mod = sys.modules.get(mod_name)
        if mod is None:
            folder = cache_dir()
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, mod_name + ".py")
            if not os.path.exists(path):
                tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
                with open(tmp, "w") as fh:
                    fh.write("import numpy as np\nimport numba\n\n\n"
                             "@numba.njit(cache=True, error_model='numpy', nogil=True)\n" + src)
                os.replace(tmp, path)
            spec = importlib.util.spec_from_file_location(mod_name, path)
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = mod  # (numba's cache finds the function's module by name)
            try:
                spec.loader.exec_module(mod)
                kernel = getattr(mod, name)
                kernel.compile(signature)
                kernel.disable_compile()  # never compile on the caller's thread: other types raise TypeError
            except BaseException:
                del sys.modules[mod_name]
                raise
    return getattr(mod, name)


def _numba_type(a: Any) -> Any:
    numba = _load_numba()
    if isinstance(a, Var):
        kind, dtype, shape = a.kind, a.dtype, a.shape
    else:
        kind, dtype, shape = type(a.value), getattr(a.value, "dtype", None), tuple(getattr(a.value, "shape", ()))
    if is_host_array(kind):
        return numba.types.Array(numba.from_dtype(np.dtype(dtype)), len(shape), "A", readonly=True)  # any array
    return numba.from_dtype(np.dtype(dtype if dtype is not None else "float64"))


def compile_segment(seg: Segment) -> Callable[..., tuple[Any, ...]]:
    """``seg`` compiled: a function of ``seg.ins``' values returning ``seg.outs``' values, with
    the kinds the replay gives them (NumPy scalars stay NumPy scalars)."""
    src = segment_source(seg, "segment")
    kernel = _kernel(src, "segment", tuple(_numba_type(a) for a in seg.ins))
    convert = [None if (o.shape and is_host_array(o.kind)) else (np.asarray if is_host_array(o.kind) else o.kind)
               for o in seg.outs]
    if all(c is None or c is float for c in convert):
        def run(*args: Any) -> tuple[Any, ...]:
            return kernel(*args)  # type: ignore[no-any-return]
    else:
        def run(*args: Any) -> tuple[Any, ...]:
            outs = kernel(*args)
            return tuple(v if c is None else c(v) for v, c in zip(outs, convert))
    run.source = src  # type: ignore[attr-defined]
    return run


_NATIVE = Primitive(lambda *a: a, name="native_segment", multiple_results=True)


def native_program(prog: Program) -> tuple[Program, int, int] | None:
    """``prog`` with each segment replaced by one call of its compiled function, the number
    of equations lowered and of those left to the replay; None where nothing lowers."""
    if not available():
        return None
    items = plan(prog)
    segments = [it for it in items if isinstance(it, Segment)]
    if not segments:
        return None
    new = prog.derived()
    new.invars, new.consts, new.outs = prog.invars, prog.consts, prog.outs
    lowered = left = 0
    for it in items:
        if isinstance(it, Segment):
            fn = compile_segment(it)
            lowered += len(it.eqns)
            for o in it.outs:
                o.fresh = False  # made by compiled code: never written into by the replay
            new.eqns.append(Eqn(_NATIVE, list(it.ins), {}, list(it.outs), fn))
        else:
            left += 1
            new.eqns.append(it)
    return new, lowered, left
