"""Complex values in the native tier: the numba spelling of each primitive on complex64 and
complex128 operands, and how a non-finite complex result keeps NumPy's answer.

numba has complex scalars and most of NumPy's complex functions. On finite values they agree
with NumPy's to a few ulp (the bound of docs/jit.md, measured in
tests/test_jit_native_complex.py); on non-finite values they often do not: ``(inf+0j) * 2``
is ``inf+nanj`` in numba and ``inf+0j`` in NumPy, ``exp(710+0j)`` is ``inf+nanj`` against
``inf+0j``, ``sin(inf+0j)`` is ``nan+nanj`` against ``nan+0j``, a complex division by zero
raises ZeroDivisionError. C99's special-value tables (which NumPy follows) would need
dozens of cases per function; instead each complex result that can differ goes through
:data:`FINITE`, which raises ``FloatingPointError`` when the result is not finite, and the
tier runs that call in the NumPy replay (``funcgrad.jit.tiered``: a call the native code
hands back). Finite results are the compiled code's; the first inf or NaN in a complex
result makes the call NumPy's, so NaN and inf come out exactly where NumPy puts them.
Addition, subtraction, negation and conjugation need no check (componentwise: the same as
NumPy's on every value).

Tables (keyed by primitive object, ``{0}``, ``{1}`` the operands already converted to the
result's dtype, as NumPy converts them; ``{t}`` the result's dtype constructor):

- :data:`COMPLEX_EXPR`: a complex result from complex (or real, converted) operands;
- :data:`COMPLEX_PARTS`: a real result from one complex operand (``real``, ``imag``,
  ``absolute``, ``angle``), the real dtype of the operand's parts.

``tanh`` is :data:`TANH`: numba's complex ``tanh`` divides ``sinh`` by ``cosh`` and gives
``nan+nanj`` once they overflow (``|Re z| > 355``), where NumPy's gives ``±1``; from
``|Re z| >= 22`` on it is ``(sign(x), 4 sin(y) cos(y) exp(-2|x|))``, exact to rounding
there (as in C99 implementations), ``tanh(x) + 0j`` with the zero's sign on the real axis
(numba's drops it), and numba's elsewhere. ``log`` is :data:`LOG`: numba's
takes ``log(|z|)``, which loses the real part's relative precision near ``|z| = 1`` (1400
ulp of the result measured); this one takes ``log1p((a - 1)(a + 1) + b^2) / 2`` there
(``a >= b`` the parts' magnitudes), as careful C libraries do. ``abs`` is :data:`ABS`:
``sqrt(x^2 + y^2)`` in float64 where that can neither overflow nor underflow (within 2 ulp
of ``hypot``, and six times faster than numba's call of the C library's ``hypot``, which
stays for the rest: huge, tiny, inf and NaN parts). ``exp``, ``sin`` and ``cos`` are
:data:`EXP`, :data:`SIN`, :data:`COS`: ``e^x (cos y, sin y)``, ``(sin x cosh y, cos x sinh y)``
and ``(cos x cosh y, -sin x sinh y)`` in float64 with the inline ``exp`` and ``expm1`` of
:mod:`funcgrad.jit.native_math` for ``e^x``, ``sinh`` and ``cosh`` (numba's call the C
library's ``exp``, ``sinh`` and ``cosh`` besides ``sin`` and ``cos``); a real ``z`` keeps its
zero imaginary part's sign under ``exp`` as NumPy's does.

Left to the replay (measured outside the bound, or no numba spelling): ``expm1`` (numba's
loses the real part of tiny arguments), ``sign`` (numba's predates NumPy 2's ``z / |z|``),
``arccos``/``arcsin``/``arcsinh`` and ``exp2``/``log10``/``log2`` (see the test's table),
comparisons, ``maximum``/``minimum`` (NumPy orders complex numbers lexicographically) and
``astype`` from complex to real.

Complex ``solve``/``inv``/``det``/``cholesky``/``eigh`` are LAPACK calls like the float ones
(:func:`funcgrad.jit.native_ops.linalg_ok`): numba's complex bindings need no spelling here; a
singular or non-finite matrix hands the call to the replay as a non-finite result does.

Example::

    from funcgrad.jit.native_complex import COMPLEX_EXPR
    from funcgrad.jit.known import MULTIPLY
    COMPLEX_EXPR[MULTIPLY].format("a", "b", t="np.complex128")   # "cfinite(a * b)"
"""

from __future__ import annotations

from typing import Any

from .. import numpy as fnp
from ..core.trace import Primitive
from . import native_math
from .known import primitive_of

__all__ = ["COMPLEX", "COMPLEX_EXPR", "COMPLEX_PARTS", "FINITE", "SOURCE", "PART_DTYPE", "uses", "literal"]

COMPLEX = ("complex128", "complex64")
# the real dtype of a complex dtype's parts (and of abs/angle of it)
PART_DTYPE = {"complex128": "float64", "complex64": "float32"}

FINITE, TANH, LOG, ABS, EXP, SIN, COS = "cfinite", "ctanh", "clog", "cabs", "cexp", "csin", "ccos"


def _checked(expr: str) -> str:
    return f"{FINITE}({expr})"


COMPLEX_EXPR: dict[Primitive, str] = {primitive_of(fn): expr for fn, expr in [
    (fnp.add, "{0} + {1}"), (fnp.subtract, "{0} - {1}"), (fnp.negative, "-{0}"), (fnp.positive, "{0}"),
    (fnp.conj, "np.conj({0})"),
    (fnp.multiply, _checked("{0} * {1}")), (fnp.divide, _checked("{0} / {1}")),
    (fnp.square, _checked("{0} * {0}")), (fnp.reciprocal, _checked("{t}(1.0) / {0}")),
    (fnp.power, _checked("{0} ** {1}")),
    (fnp.exp, _checked(EXP + "({0})")), (fnp.log, _checked(LOG + "({0})")), (fnp.sqrt, _checked("np.sqrt({0})")),
    (fnp.sin, _checked(SIN + "({0})")), (fnp.cos, _checked(COS + "({0})")), (fnp.tan, _checked("np.tan({0})")),
    (fnp.sinh, _checked("np.sinh({0})")), (fnp.cosh, _checked("np.cosh({0})")),
    (fnp.tanh, _checked(TANH + "({0})")), (fnp.arctan, _checked("np.arctan({0})")),
    (fnp.arctanh, _checked("np.arctanh({0})")), (fnp.log1p, _checked("np.log1p({0})")),
    (fnp.zeros_like, "{t}(0.0)"), (fnp.ones_like, "{t}(1.0)"),
]}

# x ** p for these literal p: products (and a division) as NumPy's complex power computes them,
# with the spellings of funcgrad.jit.native_ops.POWERS; other exponents: exp(p log x), as NumPy's
INTEGER_POWERS = (1.0, 2.0, 3.0, -1.0, -2.0)

REAL = primitive_of(fnp.real)
COMPLEX_PARTS: dict[Primitive, str] = {primitive_of(fn): expr for fn, expr in [
    (fnp.real, "{0}.real"), (fnp.imag, "{0}.imag"), (fnp.absolute, ABS + "({0})"),
    (fnp.angle, "np.arctan2({0}.imag, {0}.real)"),
]}

# cfinite and cabs are inlined at every use (a few operations); the others are compiled once each and
# called (inlining each use of them made the gradient of a 50-step complex chain compile for minutes)
SOURCE = f'''@numba.njit(error_model='numpy', nogil=True, cache=True)
def {FINITE}(w):
    if np.isfinite(w.real) and np.isfinite(w.imag):
        return w
    raise FloatingPointError("a complex result that is not finite: the call runs on the NumPy replay")


@numba.njit(error_model='numpy', nogil=True, cache=True)
def {TANH}(z):
    x = z.real
    if abs(x) >= 22.0:
        e = np.exp(-abs(x))
        return complex(np.copysign(1.0, x), 4.0 * np.sin(z.imag) * np.cos(z.imag) * e * e)
    if z.imag == 0.0:
        return complex(np.tanh(x), z.imag)
    return np.tanh(z)


@numba.njit(error_model='numpy', nogil=True, cache=True)
def {LOG}(z):
    x = abs(z.real)
    y = abs(z.imag)
    a = max(x, y)
    b = min(x, y)
    if 0.5 <= a <= 2.0:
        re = 0.5 * np.log1p((a - 1.0) * (a + 1.0) + b * b)
    else:
        re = np.log(np.hypot(x, y))
    return complex(re, np.arctan2(z.imag, z.real))


@numba.njit(inline='always', error_model='numpy')
def {ABS}(z):
    x = abs(np.float64(z.real))
    y = abs(np.float64(z.imag))
    a = x if x > y else y
    if 1e-150 < a < 1e150:
        return np.sqrt(x * x + y * y)
    return np.hypot(x, y)


@numba.njit(error_model='numpy', nogil=True, cache=True)
def {EXP}(z):
    x = np.float64(z.real)
    y = np.float64(z.imag)
    e = {native_math.EXP64}(x)
    if y == 0.0:
        return complex(e, y)
    return complex(e * np.cos(y), e * np.sin(y))


@numba.njit(error_model='numpy', nogil=True, cache=True)
def sinh_cosh(y):
    a = abs(y)
    if a < 22.0:
        k, q = expm1_reduced(a)
        s = pow2_64(k)
        m = s * q + (s - 1.0)
        sh = 0.5 * (m + m / (m + 1.0))
        ch = 0.5 * (m + 1.0) + 0.5 / (m + 1.0)
    else:
        sh = 0.5 * {native_math.EXP64}(a)
        ch = sh
    return np.copysign(sh, y), ch


@numba.njit(error_model='numpy', nogil=True, cache=True)
def {SIN}(z):
    x = np.float64(z.real)
    sh, ch = sinh_cosh(np.float64(z.imag))
    return complex(np.sin(x) * ch, np.cos(x) * sh)


@numba.njit(error_model='numpy', nogil=True, cache=True)
def {COS}(z):
    x = np.float64(z.real)
    sh, ch = sinh_cosh(np.float64(z.imag))
    return complex(np.cos(x) * ch, -(np.sin(x) * sh))
'''


def uses(source: str) -> bool:
    """Does generated code ``source`` call the functions of :data:`SOURCE`?"""
    return any(f"{name}(" in source for name in (FINITE, TANH, LOG, ABS, EXP, SIN, COS))


def _real_text(v: float) -> str:
    if v != v:
        return "np.nan"
    if v in (float("inf"), float("-inf")):
        return "np.inf" if v > 0 else "-np.inf"
    return repr(v)


def literal(value: Any, dtype: str) -> str:
    """A Python number as a numba expression of the complex ``dtype`` (``np.complex128(complex(0.0, 1.0))``)."""
    z = complex(value)
    return f"np.{dtype}(complex({_real_text(z.real)}, {_real_text(z.imag)}))"
