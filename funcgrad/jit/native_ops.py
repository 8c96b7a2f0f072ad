"""What the native backend knows about each primitive it lowers, keyed by primitive object.

Four kinds of equation lower (:func:`kind_of` says which an equation is):

- ``"elementwise"``: one value per element of the result (:data:`NATIVE_EXPR`,
  :data:`COMPARISONS`, :data:`SELECTIONS`, ``where``, ``astype`` between float and
  bool dtypes), broadcasting included; fused into loop nests;
- ``"reduce"``: ``sum``/``mean``/``prod``/``max``/``min`` over any axes, ``keepdims``
  included (:func:`reduction`); accumulated inside the loop nest over their operand;
- ``"view"``: ``transpose``/``swapaxes``/``moveaxis``/``expand_dims``/``squeeze``/
  ``reshape``/``broadcast_to``, basic indexing (integers, slices, ``None``, ``...``) and
  advanced indexing (integer arrays, static masks, the program's integer values:
  :func:`index_of`, :mod:`funcgrad.jit.native_gather`), as maps of indices
  (:func:`view_map`): no code, no copy; readers index the viewed value directly;
- ``"block"``: whole-array statements: contractions (``matmul``/``dot``/``tensordot``/
  ``einsum``: loops, or BLAS through numba's ``np.dot`` for large 2-D operands,
  :func:`contraction`, :func:`einsum_plan`), ``concatenate``, LAPACK calls (stacks whose
  batch axes broadcast included), and the scatters of basic or advanced indices
  (``.at[...].set/add``, the gradient of indexing: ``index_set``, ``index_add``,
  ``unindex``; ``winner_mask``, the last writes of ``set``'s gradient).

Operands must be host float32/float64 or complex64/complex128 arrays (bool for
conditions), NumPy or Python scalars, or integer scalars (a loop's index): ``+``/``-``/``*``
between integer scalars, ``astype`` of one to a float dtype, and float arithmetic reading
one (converted first, as NumPy does), and integer arrays as indices; anything else (other
integer arrays, device arrays) stays on the replay. Complex values (:mod:`funcgrad.jit.native_complex`)
lower in elementwise work (real operands converted as NumPy promotes them), ``real``/
``imag``/``abs``/``angle``, ``where``, ``sum``/``mean``/``prod``, views, contractions,
concatenation, scatters and loop carries.

Example::

    from funcgrad.jit.native_ops import kind_of
    kind_of(fg.make_program(lambda x: x.T)(fnp.ones((2, 3))).eqns[0])   # "view"
"""

from __future__ import annotations

import math
import numbers
import weakref
from typing import Any, Callable

import numpy as np

from .. import numpy as fnp
from ..core.trace import Primitive
from ..numpy import creation as _creation, indexing as _indexing, linalg as _linalg, shape_ops as _shape_ops
from . import native_complex, native_math
from .native_complex import COMPLEX, COMPLEX_EXPR, COMPLEX_PARTS
from .native_gather import AdvancedIndex, advanced_index
from .ir import Const, Eqn, Program, Var
from .kinds import is_host_array
from .loops import Branches, Structured, WhileLoop, loop_of
from .known import BROADCAST_TO, EXPAND_DIMS, SQUEEZE, SUM, TENSORDOT, WHERE, primitive_of

__all__ = ["INTS", "is_int_scalar", "NATIVE_EXPR", "NATIVE_EXPR_FLOAT64", "COMPARISONS", "SELECTIONS", "FLOATS", "WHERE", "kind_of", "reduction", "view_map",
           "split_maps", "Contraction", "contraction", "basic_index", "dtype_name", "is_literal", "loop_lowers",
           "loop_consts", "reads_of", "index_of", "index_consts", "linalg_batch", "EINSUM", "Einsum", "einsum_plan", "WINNER_MASK", "STACK", "LINALG", "linalg_ok", "POWER", "POWERS",
           "NUMBERS", "complex_operand", "complex_elementwise"]


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
    (fnp.zeros_like, "{t}(0.0)"), (fnp.ones_like, "{t}(1.0)"),
])

# float64 results of these primitives use inline arithmetic instead (funcgrad/jit/native_math.py)
NATIVE_EXPR_FLOAT64: dict[Primitive, str] = _table([
    (fnp.exp, native_math.EXP64 + "({0})"), (fnp.tanh, native_math.TANH64 + "({0})"),
])

# x ** p for these literal exponents p as products and square roots, {0} the base, {t} the dtype:
# within the elementwise bound of pow's result (away from overflow), and several times faster
POWER = primitive_of(fnp.power)
POWERS: dict[float, str] = {
    1.0: "{0}", 2.0: "{0} * {0}", 3.0: "{0} * {0} * {0}", 0.5: "np.sqrt({0})", 1.5: "{0} * np.sqrt({0})",
    2.5: "{0} * {0} * np.sqrt({0})", -1.0: "{t}(1.0) / {0}", -2.0: "{t}(1.0) / ({0} * {0})",
    -0.5: "{t}(1.0) / np.sqrt({0})", -1.5: "{t}(1.0) / ({0} * np.sqrt({0}))",
    -2.5: "{t}(1.0) / ({0} * {0} * np.sqrt({0}))",
}

# arithmetic that also takes a bool operand (as 0 or 1: the gradient of eigh adds an identity mask)
TAKES_BOOL = frozenset(primitive_of(fn) for fn in (fnp.add, fnp.subtract, fnp.multiply))

# integer arithmetic on scalars (a loop's index: ``i + 1``, ``2 * i``), wrapping as NumPy's does
INT_ARITHMETIC = frozenset(primitive_of(fn) for fn in (fnp.add, fnp.subtract, fnp.multiply, fnp.negative,
                                                        fnp.positive))

# comparisons: a bool result from operands of one float dtype
COMPARISONS: dict[Primitive, str] = _table([
    (fnp.greater, "{0} > {1}"), (fnp.greater_equal, "{0} >= {1}"), (fnp.less, "{0} < {1}"),
    (fnp.less_equal, "{0} <= {1}"), (fnp.equal, "{0} == {1}"), (fnp.not_equal, "{0} != {1}"),
])

# NumPy's maximum/minimum: a NaN in either operand wins
SELECTIONS: dict[Primitive, str] = _table([
    (fnp.maximum, "({0} if ({0} > {1} or {0} != {0}) else {1})"),
    (fnp.minimum, "({0} if ({0} < {1} or {0} != {0}) else {1})"),
])

ASTYPE = primitive_of(_creation._astype)
MEAN, PROD = primitive_of(fnp.mean), primitive_of(fnp.prod)
MAX, MIN = primitive_of(fnp.max), primitive_of(fnp.min)
ANGLE, REAL, IMAG = primitive_of(fnp.angle), primitive_of(fnp.real), primitive_of(fnp.imag)
TRANSPOSE, SWAPAXES, MOVEAXIS = primitive_of(fnp.transpose), primitive_of(fnp.swapaxes), primitive_of(fnp.moveaxis)
RESHAPE = primitive_of(fnp.reshape)
GETITEM = primitive_of(_indexing._getitem)
UNINDEX, INDEX_ADD, INDEX_SET = (primitive_of(_indexing._unindex), primitive_of(_indexing._index_add),
                                 primitive_of(_indexing._index_set))
WINNER_MASK = primitive_of(_indexing._winner_mask)
CONCATENATE, SPLIT = primitive_of(_shape_ops._concatenate), primitive_of(_shape_ops._split)
STACK = primitive_of(_shape_ops._stack)
INV, SOLVE, DET = primitive_of(_linalg.inv), primitive_of(_linalg.solve), primitive_of(_linalg.det)
CHOLESKY, EIGH = primitive_of(_linalg._cholesky), primitive_of(_linalg._eigh)
# numba's LAPACK bindings, on one square matrix (a stack loops over them): the expression of the
# operands' names
LINALG: dict[Primitive, str] = {INV: "np.linalg.inv({0})", SOLVE: "np.linalg.solve({0}, {1})",
                                DET: "np.linalg.det({0})", CHOLESKY: "np.linalg.cholesky({0})",
                                EIGH: "np.linalg.eigh({0})"}
MATMUL, DOT = primitive_of(fnp.matmul), primitive_of(fnp.dot)
EINSUM = primitive_of(_linalg._einsum)

FLOATS = ("float64", "float32")
NUMBERS = FLOATS + COMPLEX  # what views, contractions, sums and copies of values lower for
INTS = ("int64", "int32")
_SCALAR_KINDS = (float, np.float64, np.float32, complex, np.complex128, np.complex64)
_INT_KINDS = (int, np.int64, np.int32)
ANY, ALL = primitive_of(fnp.any), primitive_of(fnp.all)
_REDUCTIONS = {SUM: "sum", MEAN: "mean", PROD: "prod", MAX: "max", MIN: "min", ANY: "any", ALL: "all"}
# the positional arguments after ``axis`` that must be left at their defaults, and where keepdims is
_REDUCTION_ARGS = {SUM: (7, 4), MEAN: (6, 4), PROD: (6, 4), MAX: (5, 3), MIN: (5, 3)}
_VIEWS = (TRANSPOSE, SWAPAXES, MOVEAXIS, EXPAND_DIMS, SQUEEZE, RESHAPE, BROADCAST_TO, GETITEM)
_SCATTERS = (UNINDEX, INDEX_ADD, INDEX_SET)


def dtype_name(x: Any) -> str:
    """The dtype of a value (a Var's recorded one), Python floats as float64."""
    if isinstance(x, Const):
        x = x.value
    dt = str(x.dtype) if isinstance(x, Var) else str(getattr(x, "dtype", ""))
    return "float64" if dt == "float" else dt


def is_literal(a: Any) -> bool:
    return type(a) in (int, float, bool)


def _shape_of(a: Any) -> tuple[int, ...]:
    if isinstance(a, Var):
        return tuple(a.shape)
    if isinstance(a, Const):
        return tuple(getattr(a.value, "shape", ()))
    return ()


def _atom_ok(a: Any, want: tuple[str, ...], shape: tuple[int, ...] | None) -> bool:
    """Can operand ``a`` be read by native code: a host value of a dtype in ``want`` (whose shape
    broadcasts to ``shape`` unless that is None), or a Python number?"""
    if isinstance(a, Var):
        if not (is_host_array(a.kind) or a.kind in _SCALAR_KINDS or a.kind is np.bool_):
            return False
        dt, s = dtype_name(a), a.shape
    elif isinstance(a, Const):
        v = a.value
        if is_literal(v) or type(v) is complex:
            return type(v) is not complex or any(w in COMPLEX for w in want)
        if not (is_host_array(type(v)) or isinstance(v, (np.floating, np.complexfloating, np.bool_))):
            return False
        dt, s = dtype_name(v), tuple(v.shape)
    else:
        return is_literal(a) or (type(a) is complex and any(w in COMPLEX for w in want))
    if dt not in want:
        return False
    if shape is None:
        return True
    if len(s) > len(shape):
        return False
    return all(d == 1 or d == n for d, n in zip(s, shape[len(shape) - len(s):]))


def _out_ok(o: Var, dtypes: tuple[str, ...]) -> bool:
    return dtype_name(o) in dtypes and (is_host_array(o.kind) or o.kind in _SCALAR_KINDS or o.kind is np.bool_)


def _is_array_var(a: Any) -> bool:
    return isinstance(a, Var) and is_host_array(a.kind)


def _is_array(a: Any) -> bool:
    """A host array: a value of the program or a constant."""
    return _is_array_var(a) or (isinstance(a, Const) and is_host_array(type(a.value)))


def is_int_scalar(a: Any) -> bool:
    """An integer scalar of the program (a loop's index and arithmetic on it), int64 or int32."""
    return (isinstance(a, Var) and a.shape == () and dtype_name(a) in INTS
            and (a.kind in _INT_KINDS or is_host_array(a.kind)))


def _int_operand(a: Any) -> bool:
    return is_int_scalar(a) or type(a) is int or (isinstance(a, Const) and type(a.value) is int)


def _is_scalar_var(a: Any) -> bool:
    return isinstance(a, Var) and a.shape == () and a.kind in _SCALAR_KINDS


def _ints(value: Any) -> bool:
    """A static int or tuple of ints (axes, shapes)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return True
    return isinstance(value, tuple) and all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                            for v in value)


def kind_of(e: Eqn) -> str | None:
    """How the native backend lowers ``e`` (see the module docstring), or None where it does not."""
    loop = loop_of(e)
    if loop is not None:
        return "loop" if loop_lowers(e, loop) else None
    if e.prim in LINALG:
        return "block" if linalg_ok(e) else None
    if e.prim is SPLIT:
        return "view" if split_maps(e) is not None else None
    if e.multiple or len(e.outs) != 1 or not e.prim.pure:
        return None
    o, p = e.outs[0], e.prim
    if p in _REDUCTIONS:
        return "reduce" if reduction(e) is not None else None
    if p in _VIEWS:
        return "view" if view_map(e) is not None else None
    if p in (MATMUL, DOT, TENSORDOT):
        return "block" if contraction(e) is not None else None
    if p is CONCATENATE:
        return "block" if _concatenate_ok(e) else None
    if p is EINSUM:
        return "block" if einsum_plan(e) is not None else None
    if p is STACK:
        return "block" if _stack_ok(e) else None
    if p in _SCATTERS:
        return "block" if _scatter_ok(e) else None
    if p is WINNER_MASK:
        return "block" if _winner_mask_ok(e) else None
    if e.kwargs:
        return None
    if complex_elementwise(e):
        return "elementwise" if _complex_ok(e) else None
    if p in NATIVE_EXPR or p in SELECTIONS:
        if o.shape == () and dtype_name(o) in INTS and (o.kind in _INT_KINDS or is_host_array(o.kind)):
            ok = p in INT_ARITHMETIC and len(e.ins) in (1, 2) and all(_int_operand(a) for a in e.ins)
            return "elementwise" if ok else None
        want = (dtype_name(o), "bool") if p in TAKES_BOOL else (dtype_name(o),)
        ok = (_out_ok(o, FLOATS) and len(e.ins) in ((1, 2) if p in NATIVE_EXPR else (2,))
              and all(_atom_ok(a, want, o.shape) or is_int_scalar(a) for a in e.ins))
        return "elementwise" if ok else None
    if p in COMPARISONS:
        if not _out_ok(o, ("bool",)) or len(e.ins) != 2:
            return None
        dts = {dtype_name(a) if isinstance(a, Var) else dtype_name(a.value) for a in e.ins
               if isinstance(a, (Var, Const)) and not (isinstance(a, Const) and is_literal(a.value))}
        ok = len(dts) == 1 and dts <= set(FLOATS) and all(_atom_ok(a, tuple(dts), o.shape) for a in e.ins)
        return "elementwise" if ok else None
    if p is WHERE:
        ok = (len(e.ins) == 3 and _out_ok(o, FLOATS) and _atom_ok(e.ins[0], ("bool",), o.shape)
              and not is_literal(e.ins[0]) and all(_atom_ok(a, (dtype_name(o),), o.shape) for a in e.ins[1:]))
        return "elementwise" if ok else None
    if p is ASTYPE:
        ok = len(e.ins) == 2 and _out_ok(o, FLOATS) and (
            (_is_array_var(e.ins[0]) and _atom_ok(e.ins[0], FLOATS + ("bool",), o.shape) and e.ins[0].shape == o.shape)
            or (is_int_scalar(e.ins[0]) and o.shape == ()))
        return "elementwise" if ok else None
    return None


def complex_operand(a: Any, odt: str) -> bool:
    """Is ``a``, read by an elementwise equation with a complex result of dtype ``odt``, converted
    to ``odt`` exactly (NumPy's promotion: any float or complex operand into complex128; float32
    and complex64 into complex64; Python numbers are weak, cast to ``odt``)?"""
    if isinstance(a, Const) and (is_literal(a.value) or type(a.value) is complex):
        a = a.value
    if not isinstance(a, (Var, Const)):
        return (is_literal(a) and type(a) is not bool) or type(a) is complex
    want = NUMBERS if odt == "complex128" else ("float32", "complex64")
    return dtype_name(a) in want + ("bool",)


def complex_elementwise(e: Eqn) -> bool:
    """Is ``e`` (an equation of one result) complex work: a complex result, or ``real``/``imag``/
    ``absolute``/``angle`` of a complex value (``real``/``imag`` of a real one too)?"""
    if dtype_name(e.outs[0]) in COMPLEX:
        return True
    if e.prim not in COMPLEX_PARTS or not e.ins:
        return False
    return e.prim in (REAL, IMAG) or dtype_name(e.ins[0]) in COMPLEX


def _complex_ok(e: Eqn) -> bool:
    """An elementwise equation with a complex result (:data:`COMPLEX_EXPR`, ``where``, ``astype``
    into a complex dtype), or a real part of a complex value (:data:`COMPLEX_PARTS`)."""
    o, p = e.outs[0], e.prim
    odt = dtype_name(o)
    if p in COMPLEX_PARTS:
        ins = e.ins[:1] if p is not ANGLE or len(e.ins) == 1 or e.ins[1] is False else ()
        if len(ins) != 1 or not _out_ok(o, FLOATS) or is_literal(ins[0]) or not _atom_ok(ins[0], NUMBERS, o.shape):
            return False
        return native_complex.PART_DTYPE.get(dtype_name(ins[0]), dtype_name(ins[0])) == odt
    if not _out_ok(o, COMPLEX):
        return False
    if p is WHERE:
        return (len(e.ins) == 3 and _atom_ok(e.ins[0], ("bool",), o.shape) and not is_literal(e.ins[0])
                and all(_atom_ok(a, NUMBERS, o.shape) and complex_operand(a, odt) for a in e.ins[1:]))
    if p is ASTYPE:
        return (len(e.ins) == 2 and _is_array_var(e.ins[0]) and e.ins[0].shape == o.shape
                and _atom_ok(e.ins[0], NUMBERS + ("bool",), o.shape) and complex_operand(e.ins[0], odt))
    want = NUMBERS + ("bool",) if p in TAKES_BOOL else NUMBERS
    return (p in COMPLEX_EXPR and len(e.ins) in (1, 2)
            and all(_atom_ok(a, want, o.shape) and complex_operand(a, odt) for a in e.ins))


# -- loops: a compiled loop calling the compiled body -------------------------------------------

_lowers: "weakref.WeakKeyDictionary[Program, bool]" = weakref.WeakKeyDictionary()


def _program_lowers(prog: Program) -> bool:
    """Does every equation of the (body) program lower, and are its results values it makes
    or reads (float or bool scalars, or host arrays)?"""
    ok = _lowers.get(prog)
    if ok is None:
        ok = all(kind_of(b) is not None for b in prog.eqns) and all(
            isinstance(o, Var) and _out_ok(o, NUMBERS + ("bool",)) and (o.shape == () or is_host_array(o.kind))
            for o in prog.outs)
        _lowers[prog] = ok
    return ok


def _loop_value_ok(a: Any, like: Any) -> bool:
    """Can ``a`` stand where ``like`` (a body input) is: the same float dtype and shape, both
    scalars or both arrays of at least one axis (so the loop's carry keeps one native type)?"""
    if not (isinstance(a, Var) or (isinstance(a, Const) and not is_literal(a.value))):
        return False
    if not _atom_ok(a, NUMBERS, None) or dtype_name(a) != dtype_name(like) or _shape_of(a) != tuple(like.shape):
        return False
    array = _is_array(a)
    return array == is_host_array(like.kind) and (not array or len(like.shape) > 0)


def _passable(a: Any) -> bool:
    """Can ``a`` be passed to a compiled body (which reads it only if its equations lower)?"""
    if isinstance(a, Const):
        return is_literal(a.value) or is_host_array(type(a.value)) or isinstance(a.value, np.generic)
    if isinstance(a, Var):
        return is_host_array(a.kind) or (a.shape == () and isinstance(a.kind, type) and issubclass(
            a.kind, (int, float, np.integer, np.floating, np.bool_)))
    return is_literal(a)


def loop_lowers(e: Eqn, loop: Structured) -> bool:
    """Does the loop or branch ``e`` lower: bodies whose every equation lowers, carries that keep
    their dtype, shape and kind from step to step (and branches that agree), host operands?"""
    if isinstance(loop, Branches):
        ops = e.ins[1:]
        if not (_is_scalar_var(e.ins[0]) or (isinstance(e.ins[0], Var) and e.ins[0].shape == ()
                                             and _passable(e.ins[0]) and not is_host_array(e.ins[0].kind))):
            return False
        return all(_passable(a) for a in ops) and all(
            len(b.invars) == len(ops) and len(b.outs) == len(e.outs) and _program_lowers(b)
            and all(_loop_value_ok(o, w) for o, w in zip(b.outs, e.outs)) for b in loop.bodies)
    if isinstance(loop, WhileLoop):
        cond, body = loop.cond, loop.body
        nc = len(e.ins)
        return (len(cond.invars) == nc == len(body.invars) == len(body.outs) == len(e.outs) and len(cond.outs) == 1
                and _program_lowers(cond) and _program_lowers(body) and dtype_name(cond.outs[0]) == "bool"
                and cond.outs[0].shape == ()
                and all(_loop_value_ok(o, v) for o, v in zip(body.outs, body.invars))
                and all(_loop_value_ok(a, v) for a, v in zip(e.ins, body.invars)))
    body, nc, nx = loop.body, loop.n_carry, loop.n_xs
    if loop.length < 1 or len(e.ins) != nc + nx or len(body.invars) != nc + nx or len(body.outs) < nc:
        return False
    if len(e.outs) != 2 * nc + len(body.outs) - nc:
        return False
    if not (_program_lowers(body) and all(_out_ok(o, NUMBERS) for o in body.outs)
            and all(_loop_value_ok(o, v) for o, v in zip(body.outs[:nc], body.invars[:nc]))):
        return False
    if not all(_loop_value_ok(a, v) for a, v in zip(e.ins[:nc], body.invars[:nc])):
        return False
    for a, v in zip(e.ins[nc:], body.invars[nc:]):
        if not (_is_array(a) and _shape_of(a)[:1] == (loop.length,) and _shape_of(a)[1:] == tuple(v.shape)):
            return False
    return True


def bodies_of(loop: Structured) -> list[Program]:
    """The programs a loop or branch runs."""
    if isinstance(loop, Branches):
        return list(loop.bodies)
    if isinstance(loop, WhileLoop):
        return [loop.cond, loop.body]
    return [loop.body]


def loop_consts(loop: Structured) -> list[Const]:
    """The array constants the loop's bodies read (their nested loops' included): parameters of
    the compiled bodies, passed in by the code around them (their names are the bodies' own)."""
    found: list[Const] = []
    for body in bodies_of(loop):
        for b in body.eqns:
            inner = loop_of(b)
            for c in [a for a in b.ins if isinstance(a, Const) and not is_literal(a.value)] + index_consts(b) + (
                    loop_consts(inner) if inner is not None else []):
                if all(c is not f and c.name != f.name for f in found):  # (index constants are named by value)
                    found.append(c)
    return found


def reads_of(e: Eqn) -> list[Any]:
    """What the lowered ``e`` reads: its operands, a gather's or scatter's static index arrays
    (:func:`index_consts`), and a loop's body constants."""
    loop = loop_of(e)
    return list(e.ins) + index_consts(e) + (loop_consts(loop) if loop is not None else [])


# -- reductions --------------------------------------------------------------------------------

def reduction(e: Eqn) -> tuple[str, tuple[int, ...], bool] | None:
    """(``"sum"|"mean"|"prod"|"max"|"min"|"any"|"all"``, reduced axes, keepdims) of a lowerable
    reduction (``any``/``all`` of bool arrays)."""
    if e.prim in (ANY, ALL):  # axis and keepdims come as keywords
        if len(e.ins) != 1 or set(e.kwargs) - {"axis", "keepdims"} or not _is_array_var(e.ins[0]):
            return None
        x, axis, keepdims, o = e.ins[0], e.kwargs.get("axis"), e.kwargs.get("keepdims", False), e.outs[0]
        if dtype_name(x) != "bool" or not _out_ok(o, ("bool",)) or not isinstance(keepdims, bool):
            return None
    else:
        n, keep_at = _REDUCTION_ARGS[e.prim]
        if e.kwargs or len(e.ins) != n or not (_is_array_var(e.ins[0]) or _is_scalar_var(e.ins[0])):
            return None
        x, axis, keepdims, o = e.ins[0], e.ins[1], e.ins[keep_at], e.outs[0]
        rest = [a for k, a in enumerate(e.ins[2:], 2) if k != keep_at]
        if any(a is not None for a in rest) or not isinstance(keepdims, bool):
            return None
        if not (_out_ok(o, NUMBERS if e.prim in (SUM, MEAN, PROD) else FLOATS) and dtype_name(x) == dtype_name(o)):
            return None
    nd = len(x.shape)
    if nd == 0 and axis not in (None, 0, -1, ()):
        return None
    if nd == 0:
        axis = None
    if axis is None:
        axes = tuple(range(nd))
    elif _ints(axis):
        raw = (axis,) if not isinstance(axis, tuple) else axis
        if any(not -nd <= int(a) < nd for a in raw):
            return None
        axes = tuple(sorted({int(a) % nd for a in raw}))
        if len(axes) != len(raw):
            return None
    else:
        return None
    op = _REDUCTIONS[e.prim]
    if op in ("max", "min", "mean") and any(x.shape[a] == 0 for a in axes):
        return None  # NumPy raises (or warns) there
    want = tuple(1 if d in axes else n for d, n in enumerate(x.shape)) if keepdims else \
        tuple(n for d, n in enumerate(x.shape) if d not in axes)
    if tuple(o.shape) != want:
        return None
    return op, axes, keepdims


# -- views: maps from the result's indices to the operand's ----------------------------------------

IndexMap = Callable[[list[str]], list[str]]


def basic_index(idx: Any, shape: tuple[int, ...]) -> tuple[IndexMap, tuple[int, ...]] | None:
    """``x[idx]`` for a basic index (ints, slices, None, one ``...``) on ``shape`` as a map of the
    result's indices to ``x``'s, and the result's shape; None for anything else."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    for k in idx:
        if not (k is None or k is Ellipsis or isinstance(k, slice)
                or (isinstance(k, numbers.Integral) and not isinstance(k, bool))):
            return None
        if isinstance(k, slice) and not all(v is None or (isinstance(v, numbers.Integral) and not isinstance(v, bool))
                                            for v in (k.start, k.stop, k.step)):
            return None
    real = sum(1 for k in idx if k is not None and k is not Ellipsis)
    if sum(1 for k in idx if k is Ellipsis) > 1 or real > len(shape):
        return None
    full: list[Any] = []
    for k in idx:
        full.extend([slice(None)] * (len(shape) - real) if k is Ellipsis else [k])
    if Ellipsis not in idx:
        full.extend([slice(None)] * (len(shape) - real))
    plan: list[tuple[str, Any]] = []  # per entry: ("int", k) | ("slice", (start, step)) | ("new", None)
    out: list[int] = []
    d = 0
    for k in full:
        if k is None:
            plan.append(("new", None))
            out.append(1)
            continue
        n = shape[d]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            plan.append(("slice", (start, step)))
            out.append(len(range(start, stop, step)))
        else:
            if not -n <= int(k) < n:
                return None
            plan.append(("int", int(k) % n))
        d += 1

    def mapping(ix: list[str]) -> list[str]:
        base: list[str] = []
        j = 0
        for what, arg in plan:
            if what == "new":
                j += 1
            elif what == "int":
                base.append(str(arg))
            else:
                start, step = arg
                base.append(_affine(start, step, ix[j]))
                j += 1
        return base

    return mapping, tuple(out)


def _affine(start: int, step: int, i: str) -> str:
    if step == 1:
        return i if start == 0 else f"{start} + {i}"
    return f"{start} + {step} * {i}" if start else f"{step} * {i}"


def view_map(e: Eqn) -> IndexMap | None:
    """For a view equation ``out = view(x, ...)``: the map of ``out``'s index expressions to
    ``x``'s, or None where this view does not lower."""
    if not e.ins or len(e.outs) != 1 or not (_is_array_var(e.ins[0]) or _is_scalar_var(e.ins[0]) or (
            e.prim is GETITEM and _is_array(e.ins[0]) and index_of(e) is not None)):  # (a gather from a constant)
        return None
    x, o = e.ins[0], e.outs[0]
    xs, os_ = _shape_of(x), tuple(o.shape)
    if dtype_name(x) != dtype_name(o) or not _out_ok(o, NUMBERS + ("bool",)):
        return None
    if not all(_ints(a) or a is None for a in e.ins[1:]) and e.prim is not GETITEM:
        return None
    args, p = e.ins[1:], e.prim
    mapping: IndexMap | None = None
    if p is TRANSPOSE and not e.kwargs and len(args) <= 1:
        axes = tuple(reversed(range(len(xs)))) if not args or args[0] is None else tuple(int(a) for a in args[0])
        if sorted(a % len(xs) for a in axes) == list(range(len(xs))):
            mapping = _permuted([a % len(xs) for a in axes])
    elif p is SWAPAXES and not e.kwargs and len(args) == 2 and all(isinstance(a, numbers.Integral) for a in args):
        perm = list(range(len(xs)))
        a, b = int(args[0]) % len(xs), int(args[1]) % len(xs)
        perm[a], perm[b] = perm[b], perm[a]
        mapping = _permuted(perm)
    elif p is MOVEAXIS and not e.kwargs and len(args) == 2:
        src = [int(a) % len(xs) for a in (args[0] if isinstance(args[0], tuple) else (args[0],))]
        dst = [int(a) % len(xs) for a in (args[1] if isinstance(args[1], tuple) else (args[1],))]
        order = [n for n in range(len(xs)) if n not in src]
        for d, s in sorted(zip(dst, src)):
            order.insert(d, s)
        mapping = _permuted(order)
    elif p is EXPAND_DIMS and not e.kwargs and len(args) == 1:
        raw = args[0] if isinstance(args[0], tuple) else (args[0],)
        new = {int(a) % len(os_) for a in raw}
        mapping = lambda ix: [i for j, i in enumerate(ix) if j not in new]  # noqa: E731
    elif p is SQUEEZE and len(args) + len(e.kwargs) <= 1:
        axis = args[0] if args else e.kwargs.get("axis")
        gone = {d for d, n in enumerate(xs) if n == 1} if axis is None else \
            {int(a) % len(xs) for a in (axis if isinstance(axis, tuple) else (axis,))}

        def mapping(ix: list[str]) -> list[str]:
            it = iter(ix)
            return ["0" if d in gone else next(it) for d in range(len(xs))]
    elif p is RESHAPE and e.kwargs in ({}, {"order": "C"}) and len(args) == 1:
        mapping = _reshaped(xs, os_)
    elif p is BROADCAST_TO and not e.kwargs and len(args) == 1:
        lead = len(os_) - len(xs)
        mapping = lambda ix: ["0" if n == 1 and os_[lead + d] != 1 else ix[lead + d]  # noqa: E731
                              for d, n in enumerate(xs)]
    elif p is GETITEM and not e.kwargs and args:
        made = basic_index(args[0], xs) if len(args) == 1 else None
        if made is not None and made[1] == os_:
            mapping = made[0]
        elif made is None:
            gather = index_of(e)
            mapping = gather.mapping if gather is not None and gather.shape == os_ else None
    if mapping is None:
        return None
    if len(mapping(["i"] * len(os_))) != len(xs):
        return None
    return mapping


def split_maps(e: Eqn) -> list[IndexMap] | None:
    """``split(x, indices, axis)``: one index map per piece (a slice of ``x`` along ``axis``)."""
    if e.kwargs or len(e.ins) != 3 or not _is_array_var(e.ins[0]) or not _ints(e.ins[2]):
        return None
    x, indices, axis = e.ins
    if not (isinstance(indices, tuple) and _ints(indices)) or not all(
            is_host_array(o.kind) and dtype_name(o) == dtype_name(x) for o in e.outs):
        return None
    xs = tuple(x.shape)
    if not xs or not -len(xs) <= int(axis) < len(xs):
        return None
    axis = int(axis) % len(xs)
    maps: list[IndexMap] = []
    bounds = [0] + [min(max(int(i), 0), xs[axis]) for i in indices] + [xs[axis]]
    for o in e.outs:
        start = bounds[len(maps)]
        stop = max(bounds[len(maps) + 1], start)
        made = basic_index((slice(None),) * axis + (slice(start, stop),), xs)
        if made is None or made[1] != tuple(o.shape):
            return None
        maps.append(made[0])
    return maps


def _permuted(axes: list[int]) -> IndexMap:
    """transpose(x, axes): result axis j is x's axis axes[j]."""
    def mapping(ix: list[str]) -> list[str]:
        base = [""] * len(axes)
        for j, a in enumerate(axes):
            base[a] = ix[j]
        return base
    return mapping


def _reshaped(xs: tuple[int, ...], os_: tuple[int, ...]) -> IndexMap:
    """reshape (C order): unit axes added or removed map directly; otherwise through the flat index."""
    if [n for n in xs if n != 1] == [n for n in os_ if n != 1]:
        def direct(ix: list[str]) -> list[str]:
            real = iter(i for i, n in zip(ix, os_) if n != 1)
            return ["0" if n == 1 else next(real) for n in xs]
        return direct

    def through_flat(ix: list[str]) -> list[str]:
        terms = [f"{i} * {math.prod(os_[j + 1:])}" for j, i in enumerate(ix) if os_[j] != 1]
        flat = "(" + " + ".join(terms or ["0"]) + ")"
        return [f"({flat} // {math.prod(xs[d + 1:])}) % {n}" if n != 1 else "0" for d, n in enumerate(xs)]
    return through_flat


# -- blocks --------------------------------------------------------------------------------------

class Contraction:
    """``out[r...] = sum over s... of a[a_index] * b[b_index]``, index expressions in the
    counters ``r0 ...`` (the result's axes) and ``s0 ...`` (the summed ones).

    ``a_order``/``b_order``, where not None, say how the product is one matrix product for
    BLAS: ``a`` with its axes in ``a_order`` (free ones, then summed ones) reshaped to
    (M, K) times ``b`` with its axes in ``b_order`` (summed, then free) reshaped to (K, N)
    is the result reshaped to (M, N)."""

    def __init__(self, a: Any, b: Any, sizes: tuple[int, ...], a_index: list[str], b_index: list[str],
                 a_order: list[int] | None, b_order: list[int] | None) -> None:
        self.a, self.b, self.sizes, self.a_index, self.b_index = a, b, sizes, a_index, b_index
        self.a_order, self.b_order = a_order, b_order


def contraction(e: Eqn) -> Contraction | None:
    """``matmul``/``dot``/``tensordot`` of two host float arrays of the result's dtype, as a
    :class:`Contraction`; None otherwise."""
    if e.kwargs or len(e.ins) < 2 or not all(_is_array(a) for a in e.ins[:2]):
        return None
    a, b, o = e.ins[0], e.ins[1], e.outs[0]
    if not (_out_ok(o, NUMBERS) and dtype_name(a) == dtype_name(b) == dtype_name(o)):
        return None
    ash, bsh = _shape_of(a), _shape_of(b)
    an, bn = len(ash), len(bsh)
    if an == 0 or bn == 0:
        return None
    if e.prim is MATMUL and len(e.ins) == 2:
        made = _matmul(ash, bsh) if an > 2 or bn > 2 else \
            _tensordot(ash, bsh, ((an - 1,), (0 if bn == 1 else bn - 2,)))
    elif e.prim is DOT and len(e.ins) == 2:
        made = _tensordot(ash, bsh, ((an - 1,), (0 if bn == 1 else bn - 2,)))
    elif e.prim is TENSORDOT and len(e.ins) == 3:
        axes = e.ins[2]
        if isinstance(axes, numbers.Integral) and not isinstance(axes, bool):
            axes = (tuple(range(an - int(axes), an)), tuple(range(int(axes))))
        if not (isinstance(axes, tuple) and len(axes) == 2 and all(_ints(t) for t in axes)):
            return None
        pair = tuple(tuple(int(v) for v in (t if isinstance(t, tuple) else (t,))) for t in axes)
        made = _tensordot(ash, bsh, (pair[0], pair[1]))
    else:
        return None
    if made is None or made[0] != tuple(o.shape):
        return None
    shape, sizes, ai, bi, orders = made
    return Contraction(a, b, sizes, ai, bi, *orders)


def _matmul(a: tuple[int, ...], b: tuple[int, ...]) -> Any:
    a1, b1 = len(a) == 1, len(b) == 1
    am = (1,) + a if a1 else a
    bm = b + (1,) if b1 else b
    if am[-1] != bm[-2]:
        return None
    try:
        batch = np.broadcast_shapes(am[:-2], bm[:-2])
    except ValueError:
        return None
    nb = len(batch)
    o = [f"r{j}" for j in range(nb + 2)]
    shape = batch + (() if a1 else (am[-2],)) + (() if b1 else (bm[-1],))
    m_label, n_label = o[nb], o[nb + 1] if not a1 else o[nb]

    def batch_index(s: tuple[int, ...]) -> list[str]:
        lead = nb - len(s)
        return ["0" if n == 1 and batch[lead + d] != 1 else o[lead + d] for d, n in enumerate(s)]
    ai = batch_index(am[:-2]) + ([] if a1 else [m_label]) + ["s0"]
    bi = batch_index(bm[:-2]) + ["s0"] + ([] if b1 else [n_label])
    return shape, (am[-1],), ai, bi, (None, None)


def _tensordot(a: tuple[int, ...], b: tuple[int, ...], axes: tuple[tuple[int, ...], tuple[int, ...]]) -> Any:
    ax_a = [x % len(a) for x in axes[0]] if a else []
    ax_b = [x % len(b) for x in axes[1]] if b else []
    if len(ax_a) != len(ax_b) or len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b):
        return None
    if any(a[i] != b[j] for i, j in zip(ax_a, ax_b)):
        return None
    free_a = [d for d in range(len(a)) if d not in ax_a]
    free_b = [d for d in range(len(b)) if d not in ax_b]
    shape = tuple(a[d] for d in free_a) + tuple(b[d] for d in free_b)
    ai = [f"s{ax_a.index(d)}" if d in ax_a else f"r{free_a.index(d)}" for d in range(len(a))]
    bi = [f"s{ax_b.index(d)}" if d in ax_b else f"r{len(free_a) + free_b.index(d)}" for d in range(len(b))]
    return shape, tuple(a[d] for d in ax_a), ai, bi, (free_a + ax_a, ax_b + free_b)


def _concatenate_ok(e: Eqn) -> bool:
    if e.kwargs or len(e.ins) < 2 or not _ints(e.ins[0]) or isinstance(e.ins[0], tuple):
        return False
    o = e.outs[0]
    if not (_out_ok(o, NUMBERS) and is_host_array(o.kind)):
        return False
    nd = len(o.shape)
    if nd == 0 or not -nd <= int(e.ins[0]) < nd:
        return False
    axis = int(e.ins[0]) % nd
    pieces = e.ins[1:]
    if not all(_is_array_var(p) and dtype_name(p) == dtype_name(o) and len(p.shape) == nd for p in pieces):
        return False
    return (sum(p.shape[axis] for p in pieces) == o.shape[axis]
            and all(p.shape[d] == o.shape[d] for p in pieces for d in range(nd) if d != axis))


def linalg_ok(e: Eqn) -> bool:
    """A LAPACK call numba has: ``inv``/``det``/``cholesky``/``eigh`` (lower triangle) of a
    square host float or complex matrix or a stack of them (..., n, n), ``solve`` of one (or a
    stack) with a vector (n,) or a stack of right-hand sides (..., n, k) whose batch axes
    broadcast against the matrices' (:func:`linalg_batch`): a stack is a loop over its
    matrices. Results have the matrix's dtype, but for a complex ``eigh``'s eigenvalues: real,
    of the parts' dtype. (What numba raises for a singular or non-finite matrix hands the call
    to the replay: ``funcgrad.jit.tiered``.)"""
    a = e.ins[0] if e.ins else None
    if not (_is_array(a) and len(_shape_of(a)) >= 2 and _shape_of(a)[-1] == _shape_of(a)[-2] > 0):
        return False
    dt, batch, n = dtype_name(a), _shape_of(a)[:-2], _shape_of(a)[-1]
    if dt not in NUMBERS:
        return False
    if e.prim is EIGH:
        return len(e.ins) == 1 and e.kwargs.get("UPLO", "L") == "L" and set(e.kwargs) <= {"UPLO"} \
            and len(e.outs) == 2 and all(is_host_array(o.kind) for o in e.outs) \
            and [dtype_name(o) for o in e.outs] == [native_complex.PART_DTYPE.get(dt, dt), dt] \
            and [_shape_of(o) for o in e.outs] == [batch + (n,), batch + (n, n)]
    if not all(dtype_name(o) == dt for o in e.outs):
        return False
    if e.kwargs or len(e.outs) != 1:
        return False
    o = e.outs[0]
    if e.prim is SOLVE:
        b = e.ins[1] if len(e.ins) == 2 else None
        if not (_is_array(b) and dtype_name(b) == dt and is_host_array(o.kind)):
            return False
        bs = _shape_of(b)
        if len(bs) == 1:
            return bs[0] == n and _shape_of(o) == batch + (n,)
        try:
            out_batch = tuple(np.broadcast_shapes(batch, bs[:-2]))
        except ValueError:
            return False
        return bs[-2] == n and _shape_of(o) == out_batch + bs[-2:]
    if len(e.ins) != 1:
        return False
    if e.prim is DET:
        return _out_ok(o, NUMBERS) and _shape_of(o) == batch and (is_host_array(o.kind) or not batch)
    return is_host_array(o.kind) and _shape_of(o) == batch + (n, n)


def linalg_batch(e: Eqn) -> tuple[int, ...]:
    """The batch axes a lowerable LAPACK equation loops over: its result's (``solve``'s broadcast
    ones), or its matrix's for ``eigh``."""
    o = e.outs[0]
    if e.prim is SOLVE:
        return tuple(o.shape)[:-1] if len(_shape_of(e.ins[1])) == 1 else tuple(o.shape)[:-2]
    return _shape_of(e.ins[0])[:-2]


def _stack_ok(e: Eqn) -> bool:
    """``stack(axis, *pieces)`` of host float arrays or scalars of one shape and the result's dtype."""
    if e.kwargs or len(e.ins) < 2 or not _ints(e.ins[0]) or isinstance(e.ins[0], tuple):
        return False
    o = e.outs[0]
    if not (_out_ok(o, NUMBERS) and is_host_array(o.kind)) or not 0 <= int(e.ins[0]) < len(o.shape):
        return False
    axis = int(e.ins[0])
    want = tuple(o.shape[:axis]) + tuple(o.shape[axis + 1:])
    return o.shape[axis] == len(e.ins) - 1 and all(
        (_is_array_var(p) or _is_scalar_var(p)) and dtype_name(p) == dtype_name(o) and tuple(p.shape) == want
        for p in e.ins[1:])


def scatter_region(e: Eqn) -> tuple[Any, Any, IndexMap, tuple[int, ...]]:
    """(base or None, values, index map, region shape) of a lowerable scatter equation:
    ``unindex(g, idx, shape)`` writes ``g`` into zeros; ``index_set/index_add(x, idx, v)`` into ``x``."""
    if e.prim is UNINDEX:
        g, idx, _ = e.ins[:3]
        base, values = None, g
    else:
        base, idx, values = e.ins[:3]
    made = _scatter_index(e)
    assert made is not None
    return base, values, made[0], made[1]


def _scatter_index(e: Eqn) -> tuple[IndexMap, tuple[int, ...]] | None:
    """(map, region shape) of a scatter's index: basic, else advanced (:func:`index_of`)."""
    made = basic_index(e.ins[1], tuple(e.outs[0].shape)) if len(e.ins) == 3 else None
    if made is None:
        gather = index_of(e)
        made = None if gather is None else (gather.mapping, gather.shape)
    return made


def _scatter_ok(e: Eqn) -> bool:
    if e.kwargs or len(e.ins) < 3:
        return False
    o = e.outs[0]
    if not (_out_ok(o, NUMBERS) and is_host_array(o.kind) and len(o.shape) >= 1):
        return False
    if e.prim is UNINDEX:
        g, idx, shape = e.ins[:3]
        if not (_ints(shape) and tuple(shape) == tuple(o.shape)):
            return False
        values = g
    else:
        x, idx, values = e.ins[:3]
        if not (_is_array_var(x) and dtype_name(x) == dtype_name(o) and tuple(x.shape) == tuple(o.shape)):
            return False
    made = _scatter_index(e)
    if made is None:
        return False
    region = made[1]
    if isinstance(values, (Var, Const)) and len(_shape_of(values)) > len(region):
        return False  # (NumPy drops leading unit axes of the values; rare enough to replay)
    return _atom_ok(values, (dtype_name(o),), region)


# -- advanced indexing: integer arrays, static masks, the program's index values ------------------

_GATHER_AT = {GETITEM: 2, UNINDEX: 3, INDEX_ADD: 3, INDEX_SET: 3, WINNER_MASK: 2}  # where the index values start
_indices: dict[int, tuple[Eqn, AdvancedIndex | None, list[Any]]] = {}


def index_of(e: Eqn) -> AdvancedIndex | None:
    """The advanced index of a gather, scatter or winner mask ``e`` (``x[idx]`` on the shape it
    indexes, :func:`funcgrad.jit.native_gather.advanced_index`), or None: basic indices, or one
    that does not lower."""
    if e.prim not in _GATHER_AT or len(e.ins) < 2:
        return None
    hit = _indices.get(id(e))
    if hit is not None and hit[0] is e and len(hit[2]) == len(e.ins) and all(a is b for a, b in zip(hit[2], e.ins)):
        return hit[1]  # (the same equation with the same operands: the passes rewrite operands in place)
    o = e.outs[0]
    if e.prim is GETITEM or e.prim is WINNER_MASK:
        indexed = _shape_of(e.ins[0])
    elif e.prim is UNINDEX:
        indexed = tuple(e.ins[2]) if _ints(e.ins[2]) and len(e.ins) > 2 else ()
    else:
        indexed = tuple(o.shape)
    made = advanced_index(e.ins[1], list(e.ins[_GATHER_AT[e.prim]:]), indexed)
    if len(_indices) > 4096:
        _indices.clear()
    _indices[id(e)] = (e, made, list(e.ins))
    return made


def index_consts(e: Eqn) -> list[Const]:
    """The static index arrays a lowered gather or scatter ``e`` reads, as constants."""
    made = index_of(e) if e.prim in _GATHER_AT else None
    return [] if made is None else made.consts


def _winner_mask_ok(e: Eqn) -> bool:
    """``winner_mask(like, idx)``: 1 where a write to ``like[idx]`` is the last to its position."""
    if e.kwargs or len(e.ins) < 2 or not _is_array(e.ins[0]) or len(e.outs) != 1:
        return False
    o = e.outs[0]
    if not (_out_ok(o, FLOATS) and is_host_array(o.kind) and dtype_name(o) == dtype_name(e.ins[0])):
        return False
    made = basic_index(e.ins[1], _shape_of(e.ins[0])) if len(e.ins) == 2 else None
    shape = made[1] if made is not None else getattr(index_of(e), "shape", None)
    return shape == tuple(o.shape)


def winner_region(e: Eqn) -> tuple[IndexMap, tuple[int, ...]]:
    """(map into ``like``, region shape) of a lowerable winner mask."""
    made = basic_index(e.ins[1], _shape_of(e.ins[0])) if len(e.ins) == 2 else None
    if made is None:
        gather = index_of(e)
        assert gather is not None
        made = (gather.mapping, gather.shape)
    return made


# -- einsum: one loop nest (or a matrix product for BLAS) ------------------------------------------

class Einsum:
    """``out[r...] = sum over s... of the product of operands[j][indices[j]]``: index expressions
    in the counters ``r0 ...`` (the result's axes) and ``s0 ...`` (the summed labels, ``sizes``);
    a label repeated in one operand reads its diagonal, a size-1 axis broadcast against a longer
    one reads index 0. ``blas``: the same as a :class:`Contraction` whose operands are one
    matrix product (two operands, each label once per operand, the result's labels the first
    operand's free ones then the second's), else None."""

    def __init__(self, operands: list[Any], indices: list[list[str]], sizes: tuple[int, ...],
                 blas: Contraction | None) -> None:
        self.operands, self.indices, self.sizes, self.blas = operands, indices, sizes, blas


def einsum_plan(e: Eqn) -> Einsum | None:
    """The loop nest of an ``einsum`` equation (canonical subscripts ``"ij,jk->ik"``: explicit,
    letters only, as funcgrad.numpy.linalg records them) over host float arrays of the result's
    dtype; None otherwise."""
    if set(e.kwargs) - {"optimize"} or len(e.ins) < 2 or not isinstance(e.ins[0], str) or len(e.outs) != 1:
        return None
    o, ops = e.outs[0], e.ins[1:]
    if not _out_ok(o, FLOATS) or not all((_is_array(a) or _is_scalar_var(a)) and dtype_name(a) == dtype_name(o)
                                         for a in ops):
        return None
    if "->" not in e.ins[0] or "." in e.ins[0]:
        return None
    ins_s, out = e.ins[0].split("->")
    terms = ins_s.split(",")
    shapes = [_shape_of(a) for a in ops]
    if len(terms) != len(ops) or any(len(t) != len(s) for t, s in zip(terms, shapes)):
        return None
    sizes: dict[str, int] = {}
    for t, s in zip(terms, shapes):
        for c, n in zip(t, s):
            if sizes.get(c, 1) != 1 and n not in (1, sizes[c]):
                return None
            if n != 1 or c not in sizes:
                sizes[c] = n
    if len(set(out)) != len(out) or any(c not in sizes for c in out) or tuple(sizes[c] for c in out) != tuple(o.shape):
        return None
    summed = [c for c in sizes if c not in out]
    counter = {c: f"r{j}" for j, c in enumerate(out)} | {c: f"s{j}" for j, c in enumerate(summed)}
    indices = [["0" if n == 1 and sizes[c] != 1 else counter[c] for c, n in zip(t, s)] for t, s in zip(terms, shapes)]
    return Einsum(list(ops), indices, tuple(sizes[c] for c in summed), _einsum_blas(terms, out, ops, sizes, indices))


def _einsum_blas(terms: list[str], out: str, ops: list[Any], sizes: dict[str, int],
                 indices: list[list[str]]) -> Contraction | None:
    """A two-operand einsum that is one matrix product, as a :class:`Contraction` with BLAS orders."""
    if len(terms) != 2 or not all(_is_array(a) and _shape_of(a) for a in ops):
        return None
    (ta, tb), shapes = terms, [_shape_of(a) for a in ops]
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or any(
            n != sizes[c] for t, s in zip(terms, shapes) for c, n in zip(t, s)):
        return None
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]
    shared = [c for c in ta if c in tb]
    if any(c in out for c in shared) or out != "".join(free_a + free_b):
        return None
    a_order = [ta.index(c) for c in free_a + shared]
    b_order = [tb.index(c) for c in shared + free_b]
    return Contraction(ops[0], ops[1], tuple(sizes[c] for c in shared), indices[0], indices[1], a_order, b_order)
