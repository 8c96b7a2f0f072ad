"""What the CUDA backend knows about each primitive it lowers, keyed by primitive object.

The CUDA backend (:mod:`funcgrad.jit.cuda`) fuses elementwise equations on device arrays
into CuPy ``ElementwiseKernel`` s. Each lowered primitive has its CUDA C spelling here
(:data:`CUDA_EXPR`, :data:`CUDA_COMPARISONS`, :data:`CUDA_SELECTIONS`), keyed by the same
primitive objects as the native backend's numba spellings
(:data:`funcgrad.jit.native_ops.NATIVE_EXPR` and its neighbours); a test keeps the two
tables' keys equal, so a primitive that lowers on the host lowers on the device too.

**The emitted C subset** (kept small so that the fake device's stand-in,
``tests/fake_backend.py``, can evaluate it with its own array functions):

- parameters ``<dtype> <name>`` separated by commas, ``<dtype>`` one of :data:`PARAM_TYPES`;
- statements, one per line: ``<ctype> <name> = <expr>;`` (a local) or ``<name> = <expr>;``
  (an output), ``<ctype>`` one of the values of :data:`C_TYPES`;
- expressions: names, decimal literals (``2``, ``0.5``, ``1e-300``), ``true``/``false``,
  ``f(x)`` / ``f(x, y)`` for ``f`` in :data:`FUNCTIONS` or a type of :data:`C_TYPES` (a
  conversion), unary ``-``/``!``, binary ``+ - * /``, ``< <= > >= == !=``, ``&&``, ``||``,
  ``c ? a : b`` and parentheses.

Operands must be device arrays of the result's dtype (float32, float64, complex64,
complex128; bool for conditions and for ``astype`` to a float dtype), finite Python numbers, or float scalars (cast to the
result's dtype first, as NumPy does with a weak scalar). Complex results take the
functions of :data:`COMPLEX_OK` (thrust's complex overloads); everything else stays on
the replay. The native tier's complex lowerings beyond these (``conj``, ``real``/``imag``/
``abs``/``angle`` of complex values, complex ``arctan``/``arctanh``/``log1p``, and handing a
call with non-finite complex results to the replay: :mod:`funcgrad.jit.native_complex`)
are host-only; tests/test_jit_cuda.py states the difference.

Example::

    from funcgrad.jit.cuda_ops import CUDA_EXPR
    from funcgrad.jit.known import MULTIPLY
    CUDA_EXPR[MULTIPLY].format("a", "b", t="double")   # "(a * b)"
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import numpy as fnp
from ..core.trace import Primitive
from .ir import Const, Eqn, Var
from .kinds import is_host_array
from .known import WHERE, primitive_of
from .native_ops import ASTYPE, TAKES_BOOL, dtype_name, is_literal

__all__ = ["CUDA_EXPR", "CUDA_COMPARISONS", "CUDA_SELECTIONS", "COMPLEX_OK", "C_TYPES", "PARAM_TYPES",
           "FUNCTIONS", "lowers", "c_literal"]


# Each primitive's CUDA C expression of its (already cast) operands ``{0}``, ``{1}``; ``{t}`` is
# the result's C type (double, float, complex<double>, complex<float>).
CUDA_EXPR: dict[Primitive, str] = {primitive_of(fn): expr for fn, expr in [
    (fnp.add, "({0} + {1})"), (fnp.subtract, "({0} - {1})"), (fnp.multiply, "({0} * {1})"),
    (fnp.divide, "({0} / {1})"), (fnp.negative, "(-{0})"), (fnp.positive, "{0}"), (fnp.power, "pow({0}, {1})"),
    (fnp.square, "({0} * {0})"), (fnp.reciprocal, "({t}(1) / {0})"), (fnp.absolute, "fabs({0})"),
    (fnp.sin, "sin({0})"), (fnp.cos, "cos({0})"), (fnp.tan, "tan({0})"), (fnp.tanh, "tanh({0})"),
    (fnp.sinh, "sinh({0})"), (fnp.cosh, "cosh({0})"), (fnp.exp, "exp({0})"), (fnp.log, "log({0})"),
    (fnp.sqrt, "sqrt({0})"), (fnp.arctan, "atan({0})"), (fnp.arcsin, "asin({0})"),
    (fnp.arccos, "acos({0})"), (fnp.log1p, "log1p({0})"), (fnp.expm1, "expm1({0})"),
    (fnp.arctanh, "atanh({0})"), (fnp.arcsinh, "asinh({0})"), (fnp.log10, "log10({0})"),
    (fnp.log2, "log2({0})"), (fnp.exp2, "exp2({0})"),
    # NumPy's sign: -1, 0 or 1, and NaN for NaN (the last branch returns x itself)
    (fnp.sign, "({0} > {t}(0) ? {t}(1) : ({0} < {t}(0) ? {t}(-1) : {0}))"),
    (fnp.zeros_like, "{t}(0)"), (fnp.ones_like, "{t}(1)"),
]}

# comparisons: a bool result from operands of one float dtype
CUDA_COMPARISONS: dict[Primitive, str] = {primitive_of(fn): expr for fn, expr in [
    (fnp.greater, "({0} > {1})"), (fnp.greater_equal, "({0} >= {1})"), (fnp.less, "({0} < {1})"),
    (fnp.less_equal, "({0} <= {1})"), (fnp.equal, "({0} == {1})"), (fnp.not_equal, "({0} != {1})"),
]}

# NumPy's maximum/minimum: a NaN in either operand wins
CUDA_SELECTIONS: dict[Primitive, str] = {primitive_of(fn): expr for fn, expr in [
    (fnp.maximum, "(({0} > {1} || {0} != {0}) ? {0} : {1})"),
    (fnp.minimum, "(({0} < {1} || {0} != {0}) ? {0} : {1})"),
]}

# the primitives whose CUDA spelling also holds for complex operands (thrust::complex overloads)
COMPLEX_OK = frozenset(primitive_of(fn) for fn in (
    fnp.add, fnp.subtract, fnp.multiply, fnp.divide, fnp.negative, fnp.positive, fnp.power, fnp.square,
    fnp.reciprocal, fnp.sin, fnp.cos, fnp.tan, fnp.tanh, fnp.sinh, fnp.cosh, fnp.exp, fnp.log, fnp.sqrt,
    fnp.log10, fnp.zeros_like, fnp.ones_like))

# NumPy dtype name (a kernel parameter's type, as CuPy spells it) -> the C type of a local
C_TYPES = {"float64": "double", "float32": "float", "complex128": "complex<double>",
           "complex64": "complex<float>", "bool": "bool"}
PARAM_TYPES = tuple(C_TYPES)
FLOATS = ("float64", "float32")
COMPLEX = ("complex128", "complex64")
# the functions the emitted C calls (besides conversions to the types of C_TYPES)
FUNCTIONS = ("pow", "fabs", "sin", "cos", "tan", "tanh", "sinh", "cosh", "exp", "log", "sqrt", "atan", "asin",
             "acos", "log1p", "expm1", "atanh", "asinh", "log10", "log2", "exp2")

_SCALAR_KINDS = (float, np.float64, np.float32)


def c_literal(value: Any, ctype: str) -> str:
    """A finite Python number as a C expression of type ``ctype`` (``double(0.5)``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{ctype}({value!r})"


def _finite_literal(a: Any) -> bool:
    v = a.value if isinstance(a, Const) else a
    return is_literal(v) and (isinstance(v, bool) or math.isfinite(v))


def _operand_ok(a: Any, device: type, want: tuple[str, ...], shape: tuple[int, ...], scalars: bool) -> bool:
    """Can a kernel read ``a``: a device array of a dtype in ``want`` broadcasting to ``shape``,
    a finite Python number, or (where ``scalars``) a float scalar value?"""
    if _finite_literal(a):
        return not isinstance(a.value if isinstance(a, Const) else a, bool)
    if isinstance(a, Const):
        kind, dt, s = type(a.value), dtype_name(a.value), tuple(getattr(a.value, "shape", ()))
    elif isinstance(a, Var):
        kind, dt, s = a.kind, dtype_name(a), tuple(a.shape)
    else:
        return False
    if kind in _SCALAR_KINDS:
        return scalars and s == ()
    if kind is not device or dt not in want or len(s) > len(shape):
        return False
    return all(d == 1 or d == n for d, n in zip(s, shape[len(shape) - len(s):]))


def lowers(e: Eqn, device: type) -> bool:
    """Does the CUDA backend lower ``e``, an equation of a program on arrays of type ``device``?"""
    if e.multiple or len(e.outs) != 1 or not e.prim.pure or e.kwargs:
        return False
    o, p = e.outs[0], e.prim
    if o.kind is not device or is_host_array(o.kind):
        return False
    odt, shape = dtype_name(o), tuple(o.shape)
    if p in CUDA_EXPR or p in CUDA_SELECTIONS:
        numbers = FLOATS + (COMPLEX if p in COMPLEX_OK and p in CUDA_EXPR else ())
        if odt not in numbers or len(e.ins) not in ((1, 2) if p in CUDA_EXPR else (2,)):
            return False
        want = (odt, "bool") if p in TAKES_BOOL else (odt,)
        return all(_operand_ok(a, device, want, shape, odt in FLOATS) for a in e.ins)
    if p in CUDA_COMPARISONS:
        if odt != "bool" or len(e.ins) != 2:
            return False
        dts = {dtype_name(a) for a in e.ins if isinstance(a, Var) or (isinstance(a, Const) and not is_literal(a.value))}
        return len(dts) == 1 and dts <= set(FLOATS) and all(
            _operand_ok(a, device, tuple(dts), shape, True) for a in e.ins)
    if p is ASTYPE:  # between float dtypes, or from bool: a C conversion (rounding as NumPy's)
        x = e.ins[0] if len(e.ins) == 2 else None
        return (isinstance(x, Var) and x.kind is device and odt in FLOATS
                and dtype_name(x) in FLOATS + ("bool",) and tuple(x.shape) == shape)
    if p is WHERE:
        return (len(e.ins) == 3 and odt in FLOATS + COMPLEX and not _finite_literal(e.ins[0])
                and _operand_ok(e.ins[0], device, ("bool",), shape, False)
                and all(_operand_ok(a, device, (odt,), shape, odt in FLOATS) for a in e.ins[1:]))
    return False
