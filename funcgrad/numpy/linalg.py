"""Linear algebra: products (dot, matmul, einsum, ...) and ``numpy.linalg``.

Importable as ``funcgrad.numpy.linalg`` (mirroring ``numpy.linalg``); the
product functions that NumPy has at top level (``__all__``) are also
re-exported from ``funcgrad.numpy``.

Every rule is written with funcgrad.numpy functions (mostly ``matmul``,
``einsum``, ``solve`` and elementwise arithmetic), so every derivative here
can be differentiated again. All ``numpy.linalg`` functions work on stacks of
matrices (leading batch axes) as NumPy's do.

Conventions worth knowing:

* Complex numbers follow JAX: VJPs are linear (transposes, not conjugate
  transposes); the gradient of a real-valued f of a complex matrix is the c
  with ``df = real(sum(c * dA))`` (``grad`` of ``log|det A|`` is
  ``inv(A)^T``, of ``norm(z)`` is ``conj(z) / norm(z)``), as in JAX.
* ``eigh``, ``eigvalsh``, ``cholesky`` (and ``svd``/``pinv`` with
  ``hermitian=True``) read only one triangle of their input, as NumPy's do
  (the lower one by default; the imaginary part of the diagonal is ignored).
  Their derivatives are the derivatives of exactly that function: the
  cotangent of the unread triangle is zero and the read off-diagonal entries
  count for both of their positions. For a symmetric gradient (JAX's and
  PyTorch's convention), symmetrize the input yourself:
  ``eigh((A + A.T) / 2)``; when A is built symmetrically (``X @ X.T``) every
  convention gives the same gradient with respect to X.
* Eigenvector and singular-vector derivatives are undefined where two
  eigenvalues (singular values) coincide; funcgrad drops the coupling term of
  exactly tied pairs (so eigenvalue-only and basis-invariant uses stay finite)
  and the eigenvector derivative there is not meaningful. Singular vectors of
  a zero singular value likewise get no derivative.
* Complex eigenvectors and singular vectors have an arbitrary phase; the
  derivatives use the gauge ``diag(V^H dV) = 0``. Only phase-invariant
  functions of them have a derivative that finite differences can confirm.
* ``norm``: the 2-norm (and Frobenius norm) has gradient 0 at x = 0 (a
  subgradient) instead of nan; higher derivatives at exactly 0 are not
  meaningful. Other orders are compositions of ``abs``, ``max``, ``sum`` and
  ``power`` and share their behaviour at kinks and zeros.
"""

from __future__ import annotations

import functools
import operator
import string
from collections import namedtuple
from typing import Any, Callable, Sequence

import numpy as np

import funcgrad.numpy as fnp

from ..backend import device_constant, namespace_of
from ..core import Box, defprimitive
from ..core.reverse import ArraySpec
from ..core.trace import contains_box
from ._batching import move_to_front
from ._typing import Axis
from ._util import backend_function, dtype, is_complex, ndim, resolve, shape, unbroadcast, pack

__all__ = [
    "dot", "matmul", "tensordot", "einsum", "inner", "vdot", "outer", "kron", "cross",
    "vecdot", "matvec", "vecmat",
]

LinAlgError = np.linalg.LinAlgError

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])


# --------------------------------------------------------------------------
# small helpers (used by rules: all differentiable)

def _untraced(*xs: Any) -> bool:
    """True when no argument is traced: the wrappers then call the backend directly."""
    for x in xs:
        if isinstance(x, Box) or (type(x) in (list, tuple) and contains_box(x)):
            return False
    return True


def _arr(x: Any) -> Any:
    """Lists/tuples given as operands become arrays (their shape matters to rules)."""
    return fnp.asarray(x) if isinstance(x, (list, tuple)) else x


def _mT(x: Any) -> Any:
    """Transpose of the last two axes."""
    return fnp.swapaxes(x, -1, -2)


def _conj(x: Any) -> Any:
    return fnp.conj(x) if is_complex(x) else x


def _H(x: Any) -> Any:
    """Conjugate transpose of the last two axes."""
    return _mT(_conj(x))


def _real_like(c: Any, x: Any) -> Any:
    """Drop the imaginary part of a cotangent that belongs to a real value."""
    return fnp.real(c) if is_complex(c) and not is_complex(x) else c


def _real_dtype(x: Any) -> np.dtype:
    d = dtype(x)
    return np.finfo(d).dtype if d.kind == "c" else d


def _eye(n: int, like: Any, real: bool = False) -> Any:
    return namespace_of(like).eye(n, dtype=_real_dtype(like) if real else dtype(like))


def _strict_tri(n: int, like: Any, upper: bool = False) -> Any:
    """Mask of the strictly lower (or upper) triangle, in like's real dtype."""
    m = namespace_of(like).tri(n, n, -1, dtype=_real_dtype(like))
    return m.T if upper else m


def _matmul(*xs: Any) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = matmul(out, x)
    return out


def _diag(x: Any) -> Any:
    """Diagonal of the last two axes."""
    return einsum("...ii->...i", x)


def _diag_embed(v: Any) -> Any:
    """Diagonal matrices with v on the diagonal (last axis)."""
    return fnp.expand_dims(v, -1) * _eye(shape(v)[-1], v, real=True)


def _drop_last(x: Any) -> Any:
    return fnp.reshape(x, shape(x)[:-1])


def _inv_gaps(w: Any) -> Any:
    """F[..., i, j] = 1 / (w_j - w_i), and 0 where w_j == w_i (the diagonal, exact ties)."""
    diff = fnp.expand_dims(w, -2) - fnp.expand_dims(w, -1)
    tie = fnp.equal(diff, 0)  # no derivative: a constant mask
    return 1 / (diff + tie) - tie


def _safe_inv(s: Any) -> Any:
    """1 / s, and 0 where s == 0."""
    zero = fnp.equal(s, 0)
    return 1 / (s + zero) - zero


def _hermitian_tangent(t: Any, UPLO: str) -> Any:
    """The Hermitian matrix a function sees when it reads only one triangle of ``t``."""
    n = shape(t)[-1]
    tri = t * _strict_tri(n, t, upper=UPLO == "U")
    d = fnp.real(t) if is_complex(t) else t
    return tri + _H(tri) + d * _eye(n, t, real=True)


def _hermitian_cotangent(c: Any, UPLO: str) -> Any:
    """Transpose of :func:`_hermitian_tangent` (under real(sum(c * v)))."""
    n = shape(c)[-1]
    d = fnp.real(c) if is_complex(c) else c
    return (c + _H(c)) * _strict_tri(n, c, upper=UPLO == "U") + d * _eye(n, c, real=True)


def _no_derivative(why: str, nargs: int = 1) -> dict[str, Any]:
    """Rules that raise (``**`` them into a declaration): the forward works, derivatives say why."""

    def rule(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(why)

    return {"vjp": [rule] * nargs, "jvp": [rule] * nargs}


def _check_square(a: Any, name: str) -> None:
    s = shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise LinAlgError(
            f"{name}: expected a square matrix (or a stack of them) with shape (..., M, M), got shape {s}"
        )


def _check_uplo(UPLO: str) -> str:
    u = str(UPLO).upper()
    if u not in ("L", "U"):
        raise ValueError(f"UPLO argument must be 'L' or 'U', got {UPLO!r}")
    return u


# ==========================================================================
# batching rules (vmap, and jacfwd/jacrev/hessian, which batch the rules above)
#
# ``rule(args, dims, **kwargs) -> (out, out_dim)``: args with the batch trace's
# boxes removed, dims[i] the batch axis of args[i] or None. The numpy.linalg
# functions all work on stacks, so most rules only move the batch axis to the
# front; products align per-example batch ranks (or add an einsum label).


def _front_rule(fn: Any, n_results: int = 0) -> Any:
    """Rule for fn(a, **kw) that maps over leading axes: batch axis first, call once."""

    def rule(args: Any, dims: Any, **kwargs: Any) -> Any:
        x = move_to_front(args[0], dims[0])
        return fn(x, *args[1:], **kwargs), ((0,) * n_results if n_results else 0)

    return rule


def _qr_other_batch(args: Any, dims: Any, mode: Any = None) -> Any:
    x = move_to_front(args[0], dims[0])
    out = _qr_other(x, args[1] if mode is None else mode)  # qr() passes mode positionally
    return out, (0,) * len(out)


def _align_stack(x: Any, d: int | None, own: int, target: int) -> Any:
    """Batch axis first, then unit axes so the per-example stack ranks match (own -> target)."""
    if d is None:
        return x
    x = move_to_front(x, d)
    if own < target:
        s = shape(x)
        x = fnp.reshape(x, s[:1] + (1,) * (target - own) + s[1:])
    return x


def _drop_axes(x: Any, axes: tuple[int, ...]) -> Any:
    s = shape(x)
    drop = {a % len(s) for a in axes}
    return fnp.reshape(x, tuple(n for i, n in enumerate(s) if i not in drop))


def _matmul_batch(args: Any, dims: Any, **kwargs: Any) -> Any:
    a, b = args
    da, db = dims
    na, nb = ndim(a) - (da is not None), ndim(b) - (db is not None)
    a, b = move_to_front(a, da), move_to_front(b, db)
    if na == 1:
        a = fnp.expand_dims(a, -2)
    if nb == 1:
        b = fnp.expand_dims(b, -1)
    ra, rb = max(na, 2) - 2, max(nb, 2) - 2
    r = max(ra, rb)
    a = _align_stack(a, 0 if da is not None else None, ra, r)
    b = _align_stack(b, 0 if db is not None else None, rb, r)
    out = matmul(a, b, **kwargs)
    drop = ((-2,) if na == 1 else ()) + ((-1,) if nb == 1 else ())
    return (_drop_axes(out, drop) if drop else out), 0


def _solve_batch(args: Any, dims: Any) -> Any:
    a, b = args
    da, db = dims
    na, nb = ndim(a) - (da is not None), ndim(b) - (db is not None)
    a, b = move_to_front(a, da), move_to_front(b, db)
    if nb == 1 and db is None:  # a shared vector: NumPy broadcasts it against every matrix
        return solve(a, b), 0
    if nb == 1:
        b = fnp.expand_dims(b, -1)
    ra, rb = na - 2, max(nb, 2) - 2
    r = max(ra, rb)
    a = _align_stack(a, 0 if da is not None else None, ra, r)
    b = _align_stack(b, 0 if db is not None else None, rb, r)
    out = solve(a, b)
    return (_drop_axes(out, (-1,)) if nb == 1 else out), 0


def _einsum_batch(args: Any, dims: Any, optimize: Any = False) -> Any:
    subscripts, ops = args[0], list(args[1:])
    ins, out = subscripts.split("->")
    z = next(c for c in _LETTERS if c not in subscripts)
    terms = ins.split(",")
    for i, d in enumerate(dims[1:]):
        if d is not None:
            ops[i] = move_to_front(ops[i], d)
            terms[i] = z + terms[i]
    return _einsum(",".join(terms) + "->" + z + out, *ops, optimize=optimize), 0


def _tensordot_batch(args: Any, dims: Any) -> Any:
    a, b, (ax_a, ax_b) = args
    da, db = dims[0], dims[1]
    if da is not None and db is not None:  # a shared batch label: einsum
        na, nb = ndim(a) - 1, ndim(b) - 1
        la_, lb_ = _LETTERS[:na], _LETTERS[na:na + nb]
        lb_ = "".join(la_[ax_a[ax_b.index(j)]] if j in ax_b else c for j, c in enumerate(lb_))
        out = "".join(c for i, c in enumerate(la_) if i not in ax_a) + "".join(
            c for j, c in enumerate(lb_) if j not in ax_b)
        z = _LETTERS[-1]
        a, b = move_to_front(a, da), move_to_front(b, db)
        return _einsum(f"{z}{la_},{z}{lb_}->{z}{out}", a, b, optimize=True), 0
    if da is not None:
        a = move_to_front(a, da)
        return _tensordot(a, b, (tuple(i + 1 for i in ax_a), ax_b)), 0
    b = move_to_front(b, db)
    free_a = ndim(a) - len(ax_a)
    return _tensordot(a, b, (ax_a, tuple(j + 1 for j in ax_b))), free_a


def _mul_batch(a: Any, da: Any, b: Any, db: Any) -> Any:
    """a * b for a per-example scalar operand, batch axes aligned."""
    na, nb = ndim(a) - (da is not None), ndim(b) - (db is not None)
    r = max(na, nb)
    a = _align_stack(a, da, na, r)
    b = _align_stack(b, db, nb, r)
    return a * b, 0


def _dot_batch(args: Any, dims: Any, out: Any = None) -> Any:
    a, b = args
    da, db = dims
    na, nb = ndim(a) - (da is not None), ndim(b) - (db is not None)
    if na == 0 or nb == 0:
        return _mul_batch(a, da, b, db)
    axes = ((na - 1,), (max(nb - 2, 0),))
    return _tensordot_batch([a, b, axes], [da, db, None])


def _inner_batch(args: Any, dims: Any) -> Any:
    a, b = args
    da, db = dims
    na, nb = ndim(a) - (da is not None), ndim(b) - (db is not None)
    return _tensordot_batch([a, b, ((na - 1,), (nb - 1,))], [da, db, None])


def _vdot_batch(args: Any, dims: Any) -> Any:
    a, b = args
    da, db = dims
    a = fnp.reshape(move_to_front(a, da), (shape(a)[da], -1)) if da is not None else fnp.reshape(a, (-1,))
    b = fnp.reshape(move_to_front(b, db), (shape(b)[db], -1)) if db is not None else fnp.reshape(b, (-1,))
    return fnp.sum(_conj(a) * b, axis=-1), 0


def _norm2_batch(args: Any, dims: Any, axis: Any = None, keepdims: Any = False) -> Any:
    x = move_to_front(args[0], dims[0])
    per = ndim(x) - 1
    if axis is None:
        out = _norm2(fnp.reshape(x, (shape(x)[0], -1)), axis=1)
        return (fnp.reshape(out, (shape(x)[0],) + (1,) * per) if keepdims else out), 0
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % per + 1 for a in axes)
    return _norm2(x, axis=axes if len(axes) > 1 else axes[0], keepdims=keepdims), 0


# ==========================================================================
# products

# --- matmul ---------------------------------------------------------------


def _column_major(x: Any) -> bool:
    """Whether ``x`` is a 2-D array laid out column-major (a transposed C array, as ``w.T`` in
    ``x @ w.T``), or the tape's spec of one. Traced values report False."""
    if isinstance(x, ArraySpec):
        return x.f_order and len(x.shape) == 2
    flags = getattr(x, "flags", None)
    return flags is not None and not isinstance(x, Box) and x.ndim == 2 and bool(flags.f_contiguous) \
        and not flags.c_contiguous


def _matmul_vjp_a(g: Any, ans: Any, a: Any, b: Any, **_: Any) -> Any:
    a, b = _arr(a), _arr(b)
    na, nb = ndim(a), ndim(b)
    if na == 1 and nb == 1:
        ga = g * b
    elif nb == 1:  # (..., n, k) @ (k,) -> (..., n)
        ga = fnp.expand_dims(g, -1) * b
    elif na == 1:  # (k,) @ (..., k, m) -> (..., m)
        ga = _drop_last(matmul(b, fnp.expand_dims(g, -1)))
    elif na == 2 and nb == 2 and _column_major(a):
        # the gradient in a's layout: its transpose (the array a was transposed from) comes out
        # C-ordered, so updates and reductions of that array do not walk memory across rows
        ga = fnp.transpose(matmul(b, fnp.transpose(g)))
    else:
        ga = matmul(g, _mT(b))
    return unbroadcast(ga, a)


def _matmul_vjp_b(g: Any, ans: Any, a: Any, b: Any, **_: Any) -> Any:
    a, b = _arr(a), _arr(b)
    na, nb = ndim(a), ndim(b)
    if na == 1 and nb == 1:
        gb = g * a
    elif nb == 1:  # g: (..., n); a: (..., n, k)
        gb = tensordot(g, a, ndim(g))
    elif na == 1:  # g: (..., m); a: (k,)
        gb = fnp.expand_dims(a, -1) * fnp.expand_dims(g, -2)
    elif nb == 2:  # (..., n, k) @ (k, m): one product over all rows (no batch of products summed afterwards)
        if na > 2:  # (explicit row counts: -1 is ambiguous for empty arrays)
            rows = functools.reduce(operator.mul, shape(a)[:-1], 1)
            a, g = fnp.reshape(a, (rows, shape(a)[-1])), fnp.reshape(g, (rows, shape(g)[-1]))
        if _column_major(b):
            gb = fnp.transpose(matmul(fnp.transpose(g), a))  # in b's layout (x @ w.T: w's gradient C-ordered)
        else:
            gb = matmul(fnp.transpose(a), g)
    else:
        gb = matmul(_mT(a), g)
    return unbroadcast(gb, b)


_backend_matmul = backend_function("matmul", 2)


def _matmul_raw(a: Any, b: Any, **kwargs: Any) -> Any:
    try:
        return _backend_matmul(a, b, **kwargs)
    except ValueError as err:  # NumPy's message names a gufunc signature, not the operands' shapes
        sa, sb = tuple(getattr(a, "shape", ())), tuple(getattr(b, "shape", ()))
        if not sa or not sb:
            raise ValueError(f"matmul: operands must have at least one dimension, got shapes {sa} and {sb}") from None
        inner_b = sb[0] if len(sb) == 1 else sb[-2]
        if sa[-1] != inner_b:
            where = "the length" if len(sb) == 1 else "the second-to-last axis"
            raise ValueError(f"matmul: shapes {sa} and {sb} do not align: the last axis of the first ({sa[-1]}) "
                             f"must equal {where} of the second ({inner_b}) [NumPy: {err}]") from None
        raise ValueError(f"matmul: shapes {sa} and {sb}: {err}") from None


_matmul_raw.__name__ = _matmul_raw.__qualname__ = "matmul"

matmul: Callable[..., Any] = defprimitive(
    _matmul_raw, vjp=(_matmul_vjp_a, _matmul_vjp_b),
    jvp=(lambda t, ans, a, b, **kw: matmul(t, b, **kw), lambda t, ans, a, b, **kw: matmul(a, t, **kw)),
    batch=_matmul_batch, reads={0: {1}, 1: {0}},
    doc="""Matrix product with batch broadcasting. Differentiable ``numpy.matmul``.

Example::

    fg.grad(lambda A: fnp.sum(A @ x))(A)
""",
)


# --- dot --------------------------------------------------------------------


def _dot_vjp_a(g: Any, ans: Any, a: Any, b: Any, out: Any = None) -> Any:
    a, b = _arr(a), _arr(b)
    na, nb = ndim(a), ndim(b)
    if na == 0 or nb == 0:
        return unbroadcast(g * b, a)
    if nb == 1:
        ga = fnp.expand_dims(g, -1) * b if na > 1 else g * b
    else:  # g: a.shape[:-1] + b.shape[:-2] + (m,)
        ga = tensordot(g, b, axes=(list(range(na - 1, na + nb - 2)), list(range(nb - 2)) + [nb - 1]))
    return _real_like(ga, a)


def _dot_vjp_b(g: Any, ans: Any, a: Any, b: Any, out: Any = None) -> Any:
    a, b = _arr(a), _arr(b)
    na, nb = ndim(a), ndim(b)
    if na == 0 or nb == 0:
        return unbroadcast(g * a, b)
    if na == 1:
        gb = g * a if nb == 1 else fnp.expand_dims(a, -1) * fnp.expand_dims(g, -2)
    else:
        gb = tensordot(a, g, axes=(list(range(na - 1)), list(range(na - 1))))  # (k,) + b.shape[:-2] + (m,)
        if nb > 2:
            gb = fnp.moveaxis(gb, 0, -2)
    return _real_like(gb, b)


dot: Callable[..., Any] = defprimitive(
    backend_function("dot", 2), vjp=(_dot_vjp_a, _dot_vjp_b),
    jvp=(lambda t, ans, a, b, out=None: dot(t, b), lambda t, ans, a, b, out=None: dot(a, t)),
    batch=_dot_batch, reads={0: {1}, 1: {0}},
    doc="""Dot product (all of NumPy's cases: scalars, vectors, N-D). Differentiable ``numpy.dot``.

Example::

    fg.grad(lambda x: fnp.dot(x, x))(fnp.ones(3))   # 2 * x
""",
)


# --- tensordot ----------------------------------------------------------------

def _tensordot_raw(a: Any, b: Any, axes: Any) -> Any:
    return namespace_of(a, b).tensordot(a, b, axes=(list(axes[0]), list(axes[1])))


def _axis_list(ax: Any, nd: int, which: str) -> tuple[int, ...]:
    if isinstance(ax, (int, np.integer)):
        ax = (ax,)
    out = []
    for i in ax:
        i = operator.index(i)
        if not -nd <= i < nd:
            raise ValueError(f"tensordot: axis {i} in axes for {which} is out of bounds for an array of dimension {nd}")
        out.append(i % nd)
    return tuple(out)


def _tensordot_axes(axes: Any, na: int, nb: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    try:
        n = operator.index(axes)
    except TypeError:
        try:
            ax_a, ax_b = axes
        except (TypeError, ValueError):
            raise TypeError(
                f"tensordot: axes must be an int or a pair of sequences of axes, got {axes!r}"
            ) from None
        ax_a, ax_b = _axis_list(ax_a, na, "a"), _axis_list(ax_b, nb, "b")
        if len(ax_a) != len(ax_b):
            raise ValueError(f"tensordot: axes name {len(ax_a)} axes of a but {len(ax_b)} axes of b")
        return ax_a, ax_b
    if n < 0 or n > na or n > nb:
        raise ValueError(f"tensordot: axes={n} needs 0 <= axes <= ndim of both arrays (got {na} and {nb})")
    return tuple(range(na - n, na)), tuple(range(n))


def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """Sum products over the given axes. Differentiable ``numpy.tensordot``.

    Example::

        fnp.tensordot(A, B, axes=([1, 0], [0, 1]))
    """
    if _untraced(a, b):
        return namespace_of(a, b).tensordot(a, b, axes)
    a, b = _arr(a), _arr(b)
    return _tensordot(a, b, _tensordot_axes(axes, ndim(a), ndim(b)))


def _inverse_perm(src: list[int]) -> tuple[int, ...] | None:
    perm = tuple(src.index(p) for p in range(len(src)))
    return None if perm == tuple(range(len(src))) else perm


def _tensordot_vjp_a(g: Any, ans: Any, a: Any, b: Any, axes: Any) -> Any:
    ax_a, ax_b = axes
    free_a = [i for i in range(ndim(a)) if i not in ax_a]
    free_b = [i for i in range(ndim(b)) if i not in ax_b]
    nfa = len(free_a)
    ga = _tensordot(g, b, (tuple(range(nfa, nfa + len(free_b))), tuple(free_b)))
    perm = _inverse_perm(free_a + [ax_a[ax_b.index(j)] for j in sorted(ax_b)])
    if perm is not None:
        ga = fnp.transpose(ga, perm)
    return _real_like(ga, a)


def _tensordot_vjp_b(g: Any, ans: Any, a: Any, b: Any, axes: Any) -> Any:
    ax_a, ax_b = axes
    free_a = [i for i in range(ndim(a)) if i not in ax_a]
    free_b = [i for i in range(ndim(b)) if i not in ax_b]
    gb = _tensordot(a, g, (tuple(free_a), tuple(range(len(free_a)))))
    perm = _inverse_perm([ax_b[ax_a.index(i)] for i in sorted(ax_a)] + free_b)
    if perm is not None:
        gb = fnp.transpose(gb, perm)
    return _real_like(gb, b)


_tensordot: Callable[..., Any] = defprimitive(
    _tensordot_raw, name="tensordot", vjp=(_tensordot_vjp_a, _tensordot_vjp_b),
    jvp=(
        lambda t, ans, a, b, axes: _tensordot(t, b, axes),
        lambda t, ans, a, b, axes: _tensordot(a, t, axes),
    ),
    batch=_tensordot_batch,
)


# --- inner, vdot, outer, kron ------------------------------------------------------


def _inner_vjp_a(g: Any, ans: Any, a: Any, b: Any) -> Any:
    na, nb = ndim(a), ndim(b)
    ga = tensordot(g, b, axes=(list(range(na - 1, na + nb - 2)), list(range(nb - 1))))
    return _real_like(ga, a)


def _inner_vjp_b(g: Any, ans: Any, a: Any, b: Any) -> Any:
    na = ndim(a)
    gb = tensordot(g, a, axes=(list(range(na - 1)), list(range(na - 1))))
    return _real_like(gb, b)


_inner: Callable[..., Any] = defprimitive(
    backend_function("inner", 2), name="inner", vjp=(_inner_vjp_a, _inner_vjp_b),
    jvp=(lambda t, ans, a, b: _inner(t, b), lambda t, ans, a, b: _inner(a, t)), batch=_inner_batch,
)


def inner(a: Any, b: Any) -> Any:
    """Sum product over the last axes. Differentiable ``numpy.inner``.

    Example::

        fnp.inner(x, y)   # == fnp.sum(x * y) for vectors
    """
    a, b = _arr(a), _arr(b)
    if ndim(a) == 0 or ndim(b) == 0:
        return fnp.multiply(a, b)
    return _inner(a, b)


vdot: Callable[..., Any] = defprimitive(
    backend_function("vdot", 2),
    vjp=(
        lambda g, ans, a, b: _real_like(fnp.reshape(_conj(g * _arr(b)), shape(_arr(a))), a),
        lambda g, ans, a, b: _real_like(fnp.reshape(g * _conj(_arr(a)), shape(_arr(b))), b),
    ),
    jvp=(lambda t, ans, a, b: vdot(t, b), lambda t, ans, a, b: vdot(a, t)), batch=_vdot_batch,
    doc="""Flattened dot product, conjugating the first argument. Differentiable ``numpy.vdot``.

Example::

    fnp.vdot(z, z)   # sum(|z|**2) as a complex number
""",
)


def outer(a: Any, b: Any, out: None = None) -> Any:
    """Outer product of the flattened inputs. Differentiable ``numpy.outer``.

    ``funcgrad.numpy.linalg.outer`` is this function too (NumPy's linalg
    variant only accepts 1-D inputs).

    Example::

        fnp.outer(fnp.ones(2), fnp.arange(3.0))
    """
    if out is not None:
        raise TypeError("outer: out= is not supported (funcgrad arrays are not written in place)")
    if _untraced(a, b):
        return namespace_of(a, b).outer(a, b)
    return fnp.multiply(fnp.reshape(_arr(a), (-1, 1)), fnp.reshape(_arr(b), (1, -1)))


def kron(a: Any, b: Any) -> Any:
    """Kronecker product (block tensor product). Differentiable ``numpy.kron``.

    Example::

        fnp.kron(fnp.eye(2), B)   # block-diagonal copies of B
    """
    a, b = _arr(a), _arr(b)
    sa, sb = shape(a), shape(b)
    nd = max(len(sa), len(sb))
    sa = (1,) * (nd - len(sa)) + tuple(sa)
    sb = (1,) * (nd - len(sb)) + tuple(sb)
    a2 = fnp.reshape(a, tuple(x for n in sa for x in (n, 1)))
    b2 = fnp.reshape(b, tuple(x for n in sb for x in (1, n)))
    return fnp.reshape(a2 * b2, tuple(x * y for x, y in zip(sa, sb)))


# --- einsum -------------------------------------------------------------------

_LETTERS = string.ascii_letters
_MAX_OPERANDS = 64


def _einsum_raw(subscripts: Any, *operands: Any, optimize: Any = False) -> Any:
    return namespace_of(*operands).einsum(subscripts, *operands, optimize=optimize)


def _check_term(term: str, subscripts: str) -> None:
    rest = term.replace("...", "", 1)
    for c in rest:
        if c not in _LETTERS:
            raise ValueError(
                f"einsum: invalid character {c!r} in subscripts {subscripts!r}; subscripts are "
                f"letters a-z, A-Z, ',' between operands, '->' before the output and '...'"
            )


@functools.lru_cache(maxsize=2048)
def _canonical_einsum(subscripts: str, ndims: tuple[int, ...]) -> str:
    """Explicit subscripts with '...' replaced by letters: 'ij,jk->ik' style."""
    s = subscripts.replace(" ", "")
    if s.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} contain '->' more than once")
    explicit = "->" in s
    ins_s, out_s = s.split("->") if explicit else (s, "")
    ins = ins_s.split(",")
    if len(ins) != len(ndims):
        raise ValueError(
            f"einsum: subscripts {subscripts!r} name {len(ins)} operand(s) but {len(ndims)} were given"
        )
    for term in ins + [out_s]:
        _check_term(term, subscripts)
    used = set(c for c in s if c in _LETTERS)
    ells = []
    for k, (term, nd) in enumerate(zip(ins, ndims)):
        named = len(term.replace("...", ""))
        if "..." in term:
            if named > nd:
                raise ValueError(
                    f"einsum: operand {k} has {nd} dimension(s), fewer than the {named} named by "
                    f"its subscripts {term!r}"
                )
            ells.append(nd - named)
        elif named != nd:
            raise ValueError(
                f"einsum: operand {k} has {nd} dimension(s) but its subscripts {term!r} name {named}"
            )
        else:
            ells.append(0)
    n_ell = max(ells, default=0)
    free = [c for c in _LETTERS if c not in used]
    if n_ell > len(free):
        raise ValueError(f"einsum: too many dimensions for subscripts {subscripts!r} (at most 52 labels)")
    ell = "".join(free[:n_ell])
    new_ins = [t.replace("...", ell[n_ell - e:]) for t, e in zip(ins, ells)]
    if explicit:
        if "..." in out_s:
            out = out_s.replace("...", ell)
        elif n_ell:
            raise ValueError(
                f"einsum: subscripts {subscripts!r}: the output has no '...' to hold the operands' "
                f"broadcast dimensions"
            )
        else:
            out = out_s
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: output subscript in {subscripts!r} repeats a label")
        seen = set("".join(new_ins))
        for c in out:
            if c not in seen:
                raise ValueError(f"einsum: output label {c!r} in {subscripts!r} names no input dimension")
    else:
        labels = "".join(t.replace("...", "") for t in ins)
        out = ell + "".join(sorted(c for c in set(labels) if labels.count(c) == 1))
    return ",".join(new_ins) + "->" + out


def _sublist_letters(sub: Any) -> str:
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
            continue
        s = operator.index(s)
        if not 0 <= s < 52:
            raise ValueError(f"einsum: sublist labels must be integers in [0, 52), got {s}")
        out.append(chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26))
    return "".join(out)


def einsum(*operands: Any, optimize: Any = False, **kwargs: Any) -> Any:
    """Einstein summation. Differentiable ``numpy.einsum``.

    Subscripts may use '...' (broadcast dimensions), implicit output and
    repeated labels (diagonals, traces); the interleaved form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` works too. On traced values
    ``out``, ``dtype``, ``order`` and ``casting`` are not supported. The
    derivative with respect to each operand is another einsum.

    Example::

        fnp.einsum("bij,bjk->bik", A, B)
        fnp.einsum("ii->i", A)        # diagonal
    """
    if not operands:
        raise TypeError("einsum: no subscripts and operands given")
    if _untraced(*operands):
        return namespace_of(*operands).einsum(*operands, optimize=optimize, **kwargs)
    if kwargs:
        raise TypeError(
            f"einsum: keyword argument(s) {sorted(kwargs)} are not supported on traced values; "
            f"only optimize= is (cast with .astype instead of dtype=)"
        )
    if isinstance(operands[0], str):
        subscripts, ops = operands[0], list(operands[1:])
    else:  # interleaved: op0, sub0, op1, sub1, ..., [sub_out]
        items = list(operands)
        out_sub = items.pop() if len(items) % 2 == 1 else None
        ops, terms = items[0::2], items[1::2]
        subscripts = ",".join(_sublist_letters(t) for t in terms)
        if out_sub is not None:
            subscripts += "->" + _sublist_letters(out_sub)
    if len(ops) > _MAX_OPERANDS:
        raise ValueError(f"einsum: at most {_MAX_OPERANDS} operands are supported, got {len(ops)}")
    ops = [o if isinstance(o, Box) or hasattr(o, "shape") else fnp.asarray(o) for o in ops]
    canon = _canonical_einsum(subscripts, tuple(ndim(o) for o in ops))
    return _einsum(canon, *ops, optimize=optimize)


@functools.lru_cache(maxsize=2048)
def _einsum_vjp_plan(canon: str, k: int) -> tuple[str, tuple[Any, ...], tuple[Any, ...]]:
    """Subscripts of the einsum that gives operand k's cotangent.

    Its operands: the output cotangent, the other operands, then an identity
    matrix per repeated label of operand k (to rebuild the diagonal) and a
    ones vector per label only operand k has (it was summed away).
    """
    ins_s, out = canon.split("->")
    ins = ins_s.split(",")
    target = ins[k]
    others = [out] + [t for j, t in enumerate(ins) if j != k]
    present = set("".join(others))
    free = iter(c for c in _LETTERS if c not in set(canon))
    result, deltas, ones, seen = [], [], [], set()
    for c in target:
        if c in seen:
            try:
                nc = next(free)
            except StopIteration:
                raise ValueError(f"einsum: too many labels to differentiate {canon!r}") from None
            deltas.append((c, nc))
            result.append(nc)
        else:
            seen.add(c)
            result.append(c)
            if c not in present:
                ones.append(c)
    terms = others + [c + nc for c, nc in deltas] + ones
    return ",".join(terms) + "->" + "".join(result), tuple(c for c, _ in deltas), tuple(ones)


def _label_sizes(canon: str, arrays: Sequence[Any]) -> dict[str, int]:
    ins_s, out = canon.split("->")
    sizes: dict[str, int] = {}
    for term, x in zip(ins_s.split(",") + [out], arrays):
        for c, n in zip(term, shape(x)):
            if n != 1 or c not in sizes:
                sizes[c] = n
    return sizes


def _einsum_vjp(k: int) -> Any:
    def rule(g: Any, ans: Any, subscripts: Any, *ops: Any, optimize: Any = False) -> Any:
        x = ops[k]
        subs, deltas, ones = _einsum_vjp_plan(subscripts, k)
        others = [op for j, op in enumerate(ops) if j != k]
        consts = []
        if deltas or ones:
            sizes = _label_sizes(subscripts, list(ops) + [g])
            xp = namespace_of(g)
            dt = dtype(g)
            consts = [xp.eye(sizes[c], dtype=dt) for c in deltas] + [xp.ones(sizes[c], dtype=dt) for c in ones]
        r = _einsum(subs, g, *others, *consts, optimize=optimize)
        # undo size-1 broadcasting of operand k's labelled dimensions
        axes = tuple(i for i, (n, m) in enumerate(zip(shape(x), shape(r))) if n == 1 and m != 1)
        if axes:
            r = fnp.sum(r, axis=axes, keepdims=True)
        if shape(r) != shape(x):  # operand k's label met only size-1 dimensions elsewhere
            r = fnp.broadcast_to(r, shape(x))
        return _real_like(r, x)

    return rule


def _einsum_jvp(k: int) -> Any:
    def rule(t: Any, ans: Any, subscripts: Any, *ops: Any, optimize: Any = False) -> Any:
        args = list(ops)
        args[k] = t
        return _einsum(subscripts, *args, optimize=optimize)

    return rule


_einsum = defprimitive(
    _einsum_raw,
    name="einsum",
    vjp={k + 1: _einsum_vjp(k) for k in range(_MAX_OPERANDS)},  # operands follow the subscripts
    jvp={k + 1: _einsum_jvp(k) for k in range(_MAX_OPERANDS)},
    batch=_einsum_batch,
)


# --- cross, vecdot, matvec, vecmat ----------------------------------------------------

def _levi_civita(like: Any, dt: Any, n_a: int, n_b: int) -> Any:
    """The Levi-Civita symbol (a constant) on the device of ``like``, uploaded once per device."""
    eps = np.zeros((3, 3, 3))
    eps[0, 1, 2] = eps[1, 2, 0] = eps[2, 0, 1] = 1.0
    eps[0, 2, 1] = eps[2, 1, 0] = eps[1, 0, 2] = -1.0
    return device_constant(like, np.ascontiguousarray(eps[:, :n_a, :n_b].astype(dt)))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None) -> Any:
    """Cross product of 3-vectors (or 2-vectors: the z component). Differentiable ``numpy.cross``.

    Example::

        fnp.cross(fnp.array([1.0, 0, 0]), fnp.array([0.0, 1, 0]))   # [0, 0, 1]
    """
    if _untraced(a, b):
        return namespace_of(a, b).cross(a, b, axisa, axisb, axisc, axis)
    a, b = _arr(a), _arr(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = fnp.moveaxis(a, axisa, -1)
    b = fnp.moveaxis(b, axisb, -1)
    n_a, n_b = shape(a)[-1], shape(b)[-1]
    if n_a not in (2, 3) or n_b not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    namespace_of(a, b)  # one device (or a clear error)
    dt = fnp.result_type(a, b)
    if n_a == 2 and n_b == 2:
        return einsum("jk,...j,...k->...", _levi_civita(a, dt, 2, 2)[2], a, b)
    c = einsum("ijk,...j,...k->...i", _levi_civita(a, dt, n_a, n_b), a, b)
    return fnp.moveaxis(c, -1, axisc)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Vector dot product along ``axis``, conjugating x1. Differentiable ``numpy.vecdot``."""
    x1, x2 = _arr(x1), _arr(x2)
    return fnp.sum(_conj(x1) * x2, axis=axis)


def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix-vector product with broadcasting. Differentiable ``numpy.matvec``."""
    return einsum("...ij,...j->...i", _arr(x1), _arr(x2))


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Vector-matrix product, conjugating the vector. Differentiable ``numpy.vecmat``."""
    return einsum("...i,...ij->...j", _conj(_arr(x1)), _arr(x2))


def multi_dot(arrays: Sequence[Any], *, out: None = None) -> Any:
    """Chain of dot products in the cheapest order. Differentiable ``numpy.linalg.multi_dot``."""
    if out is not None:
        raise TypeError("multi_dot: out= is not supported")
    arrays = [_arr(a) for a in arrays]
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return dot(arrays[0], arrays[1])
    first_1d, last_1d = ndim(arrays[0]) == 1, ndim(arrays[-1]) == 1
    if first_1d:
        arrays[0] = fnp.reshape(arrays[0], (1, -1))
    if last_1d:
        arrays[-1] = fnp.reshape(arrays[-1], (-1, 1))
    for a in arrays:
        if ndim(a) != 2:
            raise ValueError(f"multi_dot: {ndim(a)}-dimensional array given; the inner arrays must be 2-D")
    if n == 3:
        A, B, C = arrays
        a0, a1b0 = shape(A)
        b1c0, c1 = shape(C)
        cost1 = a0 * b1c0 * (a1b0 + c1)
        cost2 = a1b0 * c1 * (a0 + b1c0)
        result = dot(dot(A, B), C) if cost1 < cost2 else dot(A, dot(B, C))
    else:
        order = _matrix_chain_order(arrays)
        result = _multi_dot(arrays, order, 0, n - 1)
    if first_1d and last_1d:
        return fnp.reshape(result, ())
    if first_1d or last_1d:
        return fnp.reshape(result, (-1,))
    return result


def _matrix_chain_order(arrays: list[Any]) -> Any:
    n = len(arrays)
    p = [shape(a)[0] for a in arrays] + [shape(arrays[-1])[1]]
    m = np.zeros((n, n), dtype=np.float64)
    s = np.empty((n, n), dtype=np.intp)
    for ln in range(1, n):
        for i in range(n - ln):
            j = i + ln
            m[i, j] = np.inf
            for k in range(i, j):
                q = m[i, k] + m[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
                if q < m[i, j]:
                    m[i, j] = q
                    s[i, j] = k
    return s


def _multi_dot(arrays: list[Any], order: Any, i: int, j: int) -> Any:
    if i == j:
        return arrays[i]
    k = int(order[i, j])
    return dot(_multi_dot(arrays, order, i, k), _multi_dot(arrays, order, k + 1, j))


# ==========================================================================
# numpy.linalg

# --- inv, solve, det, slogdet -------------------------------------------------------

inv = defprimitive(
    backend_function("linalg.inv"), vjp=lambda g, ans, a: -_matmul(_mT(ans), g, _mT(ans)),
    jvp=lambda t, ans, a: -_matmul(ans, t, ans), batch_from=lambda fn: _front_rule(fn, 0),
    doc="""Inverse of a (stack of) square matrices. Differentiable ``numpy.linalg.inv``.

Example::

    fg.grad(lambda A: fnp.trace(fnp.linalg.inv(A)))(A)   # -(A^-2)^T
""",
)


_NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _solve_vector(a: Any, b: Any) -> bool:
    """Whether solve treats b as (a stack of) vectors: NumPy 2 when b is 1-D, NumPy 1 also
    when b has one dimension fewer than a."""
    nb = ndim(_arr(b))
    return nb == 1 or (not _NUMPY2 and nb == ndim(_arr(a)) - 1)


def _as_columns(a: Any, b: Any, *xs: Any) -> list[Any]:
    """In vector mode, make the matching arrays columns (..., M, 1)."""
    return [fnp.expand_dims(x, -1) for x in xs] if _solve_vector(a, b) else list(xs)


def _solve_vjp_a(g: Any, ans: Any, a: Any, b: Any) -> Any:
    g2, x2 = _as_columns(a, b, g, ans)
    gb = solve(_mT(a), g2)
    return unbroadcast(-matmul(gb, _mT(x2)), a)


def _solve_vjp_b(g: Any, ans: Any, a: Any, b: Any) -> Any:
    b = _arr(b)
    (g2,) = _as_columns(a, b, g)
    gb = solve(_mT(a), g2)
    if _solve_vector(a, b):
        gb = _drop_last(gb)
    return unbroadcast(gb, b)


def _solve_jvp_a(t: Any, ans: Any, a: Any, b: Any) -> Any:
    (x2,) = _as_columns(a, b, ans)
    dx = -solve(a, matmul(t, x2))
    return _drop_last(dx) if _solve_vector(a, b) else dx


solve: Callable[..., Any] = defprimitive(
    backend_function("linalg.solve", 2), vjp=(_solve_vjp_a, _solve_vjp_b),
    jvp=(_solve_jvp_a, lambda t, ans, a, b: solve(a, t)), batch=_solve_batch,
    doc="""Solve ``a @ x = b``; b is (M,) or a stack (..., M, K). Differentiable ``numpy.linalg.solve``.

As in NumPy 2, b is a vector only when it is 1-D; batch axes broadcast.

Example::

    x = fnp.linalg.solve(A, b)
""",
)


def _expand2(x: Any) -> Any:
    return fnp.reshape(x, shape(x) + (1, 1))


det = defprimitive(
    backend_function("linalg.det"), vjp=lambda g, ans, a: _expand2(g * ans) * _mT(inv(a)),
    jvp=lambda t, ans, a: ans * einsum("...ij,...ji->...", inv(a), t),
    batch_from=lambda fn: _front_rule(fn, 0),
    doc="""Determinant of a (stack of) square matrices. Differentiable ``numpy.linalg.det``.

The derivative ``det(A) inv(A)^T`` is inf/nan at singular matrices.

Example::

    fg.grad(fnp.linalg.det)(A)   # det(A) * inv(A).T
""",
)


def _slogdet_raw(a: Any) -> Any:
    sign, logdet = resolve(namespace_of(a), "linalg.slogdet")(a)
    return sign, logdet


def _slogdet_vjp(g: Any, ans: Any, a: Any) -> Any:
    g_sign, g_log = g
    sign, _ = ans
    coef = g_log
    if is_complex(a):
        coef = g_log + 1j * fnp.imag(g_sign * sign)
    return _expand2(coef) * _mT(inv(a))


def _slogdet_jvp(t: Any, ans: Any, a: Any) -> Any:
    sign, _ = ans
    tau = einsum("...ij,...ji->...", inv(a), t)
    if is_complex(a):
        re = fnp.real(tau)
        return sign * (tau - re), re
    return fnp.zeros_like(sign), tau


_slogdet = defprimitive(
    _slogdet_raw, name="slogdet", vjp=_slogdet_vjp, jvp=_slogdet_jvp,
    batch_from=lambda fn: _front_rule(fn, 2), multiple_results=True,
)


def slogdet(a: Any) -> SlogdetResult:
    """Sign and log of |det|: ``(sign, logabsdet)``. Differentiable ``numpy.linalg.slogdet``.

    The sign has zero derivative for real input (for complex input it is the
    unit phase of det and has one).

    Example::

        fg.grad(lambda A: fnp.linalg.slogdet(A)[1])(A)   # inv(A).T
    """
    s, l = _slogdet(a)
    return SlogdetResult(s, l)


# --- cholesky ------------------------------------------------------------------


def _phi(x: Any) -> Any:
    """Lower triangle with the diagonal halved."""
    n = shape(x)[-1]
    return x * (_strict_tri(n, x) + 0.5 * _eye(n, x, real=True))


def _cholesky_vjp(g: Any, ans: Any, a: Any) -> Any:
    L = ans
    Linv = inv(L)
    c = _matmul(_mT(Linv), _phi(matmul(_mT(L), g)), _conj(Linv))
    return _hermitian_cotangent(c, "L")


def _cholesky_jvp(t: Any, ans: Any, a: Any) -> Any:
    L = ans
    Linv = inv(L)
    S = _matmul(Linv, _hermitian_tangent(t, "L"), _H(Linv))
    return matmul(L, _phi(S))


_cholesky = defprimitive(
    backend_function("linalg.cholesky"), vjp=_cholesky_vjp, jvp=_cholesky_jvp,
    batch_from=lambda fn: _front_rule(fn, 0),
)


def cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """Cholesky factor L (``a = L @ L^H``), or U with ``upper=True``. Differentiable ``numpy.linalg.cholesky``.

    Reads only the lower triangle of ``a`` (the upper one with ``upper=True``),
    as NumPy does; the derivative is that function's (see the module notes).

    Example::

        L = fnp.linalg.cholesky(X @ X.T + fnp.eye(3))
    """
    a = _arr(a)
    if upper:
        return _H(_cholesky(_H(a)))
    return _cholesky(a)


# --- eigh, eigvalsh ---------------------------------------------------------------

def _eigh_raw(a: Any, UPLO: Any = "L") -> Any:
    w, v = resolve(namespace_of(a), "linalg.eigh")(a, UPLO=UPLO)
    return w, v


def _eigh_vjp(g: Any, ans: Any, a: Any, UPLO: Any = "L") -> Any:
    gw, gV = g
    w, V = ans
    K = _inv_gaps(w) * matmul(_mT(V), gV) + _diag_embed(gw)
    return _hermitian_cotangent(_matmul(_conj(V), K, _mT(V)), UPLO)


def _eigh_jvp(t: Any, ans: Any, a: Any, UPLO: Any = "L") -> Any:
    w, V = ans
    M = _matmul(_H(V), _hermitian_tangent(t, UPLO), V)
    dw = _diag(M)
    if is_complex(dw):
        dw = fnp.real(dw)
    return dw, matmul(V, _inv_gaps(w) * M)


_eigh = defprimitive(
    _eigh_raw, name="eigh", vjp=_eigh_vjp, jvp=_eigh_jvp, batch_from=lambda fn: _front_rule(fn, 2),
    multiple_results=True,
)


def eigh(a: Any, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix. Differentiable ``numpy.linalg.eigh``.

    Reads only the ``UPLO`` triangle, as NumPy does. Eigenvector derivatives
    need distinct eigenvalues (see the module notes).

    Example::

        w, V = fnp.linalg.eigh(A)
    """
    a = _arr(a)
    _check_square(a, "eigh")
    w, v = _eigh(a, UPLO=_check_uplo(UPLO))
    return EighResult(w, v)


def _eigvalsh_raw(a: Any, UPLO: Any = "L") -> Any:
    return resolve(namespace_of(a), "linalg.eigvalsh")(a, UPLO=UPLO)


def _eigvalsh_vjp(g: Any, ans: Any, a: Any, UPLO: Any = "L") -> Any:
    _, V = _eigh(a, UPLO=UPLO)
    return _hermitian_cotangent(matmul(_conj(V) * fnp.expand_dims(g, -2), _mT(V)), UPLO)


def _eigvalsh_jvp(t: Any, ans: Any, a: Any, UPLO: Any = "L") -> Any:
    _, V = _eigh(a, UPLO=UPLO)
    dw = einsum("...ji,...jk,...ki->...i", _conj(V), _hermitian_tangent(t, UPLO), V)
    return fnp.real(dw) if is_complex(dw) else dw


_eigvalsh = defprimitive(
    _eigvalsh_raw, name="eigvalsh", vjp=_eigvalsh_vjp, jvp=_eigvalsh_jvp,
    batch_from=lambda fn: _front_rule(fn, 0),
)


def eigvalsh(a: Any, UPLO: str = "L") -> Any:
    """Eigenvalues (ascending) of a Hermitian matrix. Differentiable ``numpy.linalg.eigvalsh``.

    Example::

        fg.grad(lambda A: fnp.sum(fnp.linalg.eigvalsh(A)))(A)   # identity
    """
    a = _arr(a)
    _check_square(a, "eigvalsh")
    return _eigvalsh(a, UPLO=_check_uplo(UPLO))


# --- svd ----------------------------------------------------------------------------

def _svd_raw(a: Any, full_matrices: Any = True, hermitian: Any = False) -> Any:
    kw = {"hermitian": True} if hermitian else {}
    u, s, vh = resolve(namespace_of(a), "linalg.svd")(a, full_matrices=full_matrices, compute_uv=True, **kw)
    return u, s, vh


def _svdvals_raw(a: Any, hermitian: Any = False) -> Any:
    kw = {"hermitian": True} if hermitian else {}
    return resolve(namespace_of(a), "linalg.svd")(a, compute_uv=False, **kw)


def _check_reduced(a: Any, full_matrices: bool) -> None:
    m, n = shape(a)[-2:]
    if full_matrices and m != n:
        raise NotImplementedError(
            f"the derivative of svd with full_matrices=True is not defined for a non-square "
            f"matrix (shape {shape(a)[-2:]}): the extra singular vectors are not unique. Use "
            f"full_matrices=False"
        )


def _svd_vjp(g: Any, ans: Any, a: Any, full_matrices: Any = True, hermitian: Any = False) -> Any:
    _check_reduced(a, full_matrices)
    gU, gS, gVh = g
    U, S, Vh = ans
    m, n = shape(a)[-2:]
    k = min(m, n)
    Ut, Vt = _mT(U), _conj(Vh)  # U^T and V^T (V = Vh^H)
    gV = _H(gVh)
    F = _inv_gaps(S * S)  # 1 / (s_j^2 - s_i^2)
    s_row, s_col = fnp.expand_dims(S, -2), fnp.expand_dims(S, -1)
    inv_s = _safe_inv(S)
    inv_row, inv_col = fnp.expand_dims(inv_s, -2), fnp.expand_dims(inv_s, -1)
    J = matmul(Ut, gU)
    Q = matmul(Vt, gV)
    JJ = J - _H(J)
    K = (F * JJ) * s_row + s_col * (F * (Q - _H(Q))) + _diag_embed(gS)
    if is_complex(JJ):
        K = K + 0.5 * JJ * _eye(k, JJ, real=True) * inv_row
    c = _matmul(_conj(U), K, Vt)
    if m > k:  # (I - conj(U) U^T) gU S^-1 V^T
        c = c + matmul((gU - matmul(_conj(U), J)) * inv_row, Vt)
    if n > k:  # conj(U) S^-1 gV^H (I - conj(V) V^T)
        c = c + matmul(_conj(U), inv_col * (gVh - _matmul(gVh, _mT(Vh), Vt)))
    c = _real_like(c, a)
    return _hermitian_cotangent(c, "L") if hermitian else c


def _svd_jvp(t: Any, ans: Any, a: Any, full_matrices: Any = True, hermitian: Any = False) -> Any:
    _check_reduced(a, full_matrices)
    U, S, Vh = ans
    m, n = shape(a)[-2:]
    k = min(m, n)
    dA = _hermitian_tangent(t, "L") if hermitian else t
    V = _H(Vh)
    dP = _matmul(_H(U), dA, V)
    dS = _diag(dP)
    if is_complex(dS):
        dS = fnp.real(dS)
    F = _inv_gaps(S * S)
    s_row, s_col = fnp.expand_dims(S, -2), fnp.expand_dims(S, -1)
    inv_row = fnp.expand_dims(_safe_inv(S), -2)
    dSS = dP * s_row
    SdS = s_col * dP
    X = F * (dSS + _H(dSS))
    if is_complex(dP):
        X = X + 0.5 * (dP - _H(dP)) * _eye(k, dP, real=True) * inv_row
    dU = matmul(U, X)
    dV = matmul(V, F * (SdS + _H(SdS)))
    if m > k:
        dAV = matmul(dA, V)
        dU = dU + (dAV - _matmul(U, _H(U), dAV)) * inv_row
    if n > k:
        dAHU = matmul(_H(dA), U)
        dV = dV + (dAHU - _matmul(V, Vh, dAHU)) * inv_row
    return dU, dS, _H(dV)


_svd = defprimitive(
    _svd_raw, name="svd", vjp=_svd_vjp, jvp=_svd_jvp, batch_from=lambda fn: _front_rule(fn, 3),
    multiple_results=True,
)


def _svdvals_vjp(g: Any, ans: Any, a: Any, hermitian: Any = False) -> Any:
    U, _, Vh = _svd(a, full_matrices=False, hermitian=hermitian)
    c = _real_like(matmul(_conj(U) * fnp.expand_dims(g, -2), _conj(Vh)), a)
    return _hermitian_cotangent(c, "L") if hermitian else c


def _svdvals_jvp(t: Any, ans: Any, a: Any, hermitian: Any = False) -> Any:
    U, _, Vh = _svd(a, full_matrices=False, hermitian=hermitian)
    dA = _hermitian_tangent(t, "L") if hermitian else t
    dS = einsum("...ji,...jk,...ik->...i", _conj(U), dA, _conj(Vh))
    return fnp.real(dS) if is_complex(dS) else dS


_svdvals = defprimitive(
    _svdvals_raw, name="svdvals", vjp=_svdvals_vjp, jvp=_svdvals_jvp,
    batch_from=lambda fn: _front_rule(fn, 0),
)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """Singular value decomposition ``a = U @ diag(S) @ Vh``. Differentiable ``numpy.linalg.svd``.

    Returns ``SVDResult(U, S, Vh)``, or only S with ``compute_uv=False``.
    Derivatives of U and Vh need ``full_matrices=False`` for non-square
    input, distinct singular values and no zero singular value (see the
    module notes); S alone is differentiable wherever it is distinct.

    Example::

        U, S, Vh = fnp.linalg.svd(A, full_matrices=False)
    """
    a = _arr(a)
    if ndim(a) < 2:
        raise LinAlgError(f"svd: expected an array with at least 2 dimensions, got shape {shape(a)}")
    if not compute_uv:
        return _svdvals(a, hermitian=bool(hermitian))
    u, s, vh = _svd(a, full_matrices=bool(full_matrices), hermitian=bool(hermitian))
    return SVDResult(u, s, vh)


def svdvals(x: Any, /) -> Any:
    """Singular values, descending. Differentiable ``numpy.linalg.svdvals``."""
    return svd(x, compute_uv=False)


# --- qr -----------------------------------------------------------------------------------

def _qr_raw(a: Any) -> Any:
    q, r = resolve(namespace_of(a), "linalg.qr")(a, mode="reduced")
    return q, r


def _solve_right(B: Any, R: Any, transpose: bool = False) -> Any:
    """B @ inv(R) (or B @ inv(R)^T with transpose=True)."""
    return _mT(solve(R if transpose else _mT(R), _mT(B)))


def _qr_jvp_tall(dA: Any, Q: Any, R: Any) -> Any:
    n = shape(R)[-1]
    X = _solve_right(dA, R)
    C = matmul(_H(Q), X)
    low = C * _strict_tri(n, C)
    do = low - _H(low)
    if is_complex(C):
        do = do + (C - fnp.real(C)) * _eye(n, C, real=True)
    return matmul(Q, do - C) + X, matmul(C - do, R)


def _qr_vjp_tall(gQ: Any, gR: Any, Q: Any, R: Any) -> Any:
    n = shape(R)[-1]
    M = matmul(_mT(Q), gQ) - matmul(gR, _mT(R))
    Kdo = (M - _H(M)) * _strict_tri(n, M)
    if is_complex(M):
        Kdo = Kdo + (M - fnp.real(M)) * _eye(n, M, real=True)
    gX = gQ + matmul(_conj(Q), Kdo - M)
    return _solve_right(gX, R, transpose=True)


def _wide_split(a: Any) -> tuple[Any, Any]:
    """Selection matrices E1 (n, m), E2 (n, n - m): a @ E1 = a[..., :m], a @ E2 = a[..., m:]."""
    m, n = shape(a)[-2:]
    xp = namespace_of(a)
    dt = _real_dtype(a)
    return xp.eye(n, m, dtype=dt), xp.eye(n, n - m, k=-m, dtype=dt)


def _qr_jvp(t: Any, ans: Any, a: Any) -> Any:
    Q, R = ans
    m, n = shape(a)[-2:]
    if m >= n:
        return _qr_jvp_tall(t, Q, R)
    E1, E2 = _wide_split(a)
    dQ, dR1 = _qr_jvp_tall(matmul(t, E1), Q, matmul(R, E1))
    dR2 = matmul(_H(dQ), matmul(a, E2)) + matmul(_H(Q), matmul(t, E2))
    return dQ, matmul(dR1, _mT(E1)) + matmul(dR2, _mT(E2))


def _qr_vjp(g: Any, ans: Any, a: Any) -> Any:
    gQ, gR = g
    Q, R = ans
    m, n = shape(a)[-2:]
    if m >= n:
        return _qr_vjp_tall(gQ, gR, Q, R)
    E1, E2 = _wide_split(a)
    gR2 = matmul(gR, E2)
    gX = _qr_vjp_tall(gQ + matmul(_conj(matmul(a, E2)), _H(gR2)), matmul(gR, E1), Q, matmul(R, E1))
    gY = matmul(_conj(Q), gR2)
    return _real_like(matmul(gX, _mT(E1)) + matmul(gY, _mT(E2)), a)


_qr = defprimitive(
    _qr_raw, name="qr", vjp=_qr_vjp, jvp=_qr_jvp, batch_from=lambda fn: _front_rule(fn, 2),
    multiple_results=True,
)


def _qr_other_raw(a: Any, mode: Any) -> Any:
    return tuple(resolve(namespace_of(a), "linalg.qr")(a, mode=mode))


_qr_other = defprimitive(
    _qr_other_raw,
    name="qr_other",
    batch=_qr_other_batch,
    multiple_results=True,
    **_no_derivative(
        "the derivative of qr is defined for mode='reduced' (and 'r'), and for mode='complete' only "
        "when the matrix is not taller than wide; the extra columns of a complete Q, and the "
        "'raw' Householder form, have none",
    ),
)


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition. Differentiable ``numpy.linalg.qr`` (modes 'reduced', 'r', and 'complete' for wide input).

    The derivative needs a full-rank input (R invertible in its leading block).

    Example::

        Q, R = fnp.linalg.qr(A)
    """
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"qr: unrecognized mode {mode!r}; expected 'reduced', 'complete', 'r' or 'raw'")
    a = _arr(a)
    if ndim(a) < 2:
        raise LinAlgError(f"qr: expected an array with at least 2 dimensions, got shape {shape(a)}")
    m, n = shape(a)[-2:]
    if mode == "reduced" or (mode == "complete" and m <= n):
        q, r = _qr(a)
        return QRResult(q, r)
    if mode == "r":
        return _qr(a)[1]
    if mode == "complete":
        q, r = _qr_other(a, mode)
        return QRResult(q, r)
    return _qr_other(a, mode)


# --- pinv ----------------------------------------------------------------------------------

_UNSET = object()


def _pinv_raw(a: Any, hermitian: Any = False, **kw: Any) -> Any:
    if hermitian:
        kw["hermitian"] = True
    return resolve(namespace_of(a), "linalg.pinv")(a, **kw)


def _pinv_vjp(g: Any, ans: Any, a: Any, hermitian: Any = False, **_: Any) -> Any:
    X = ans
    Xt, Xc = _mT(X), _conj(X)
    AXc = _conj(matmul(a, X))
    XAc = _conj(matmul(X, a))
    gH = _H(g)
    W = _matmul(gH, Xc, Xt)
    Z = _matmul(Xt, Xc, gH)
    c = -_matmul(Xt, g, Xt) + (W - matmul(AXc, W)) + (Z - matmul(Z, XAc))
    c = _real_like(c, a)
    return _hermitian_cotangent(c, "L") if hermitian else c


def _pinv_jvp(t: Any, ans: Any, a: Any, hermitian: Any = False, **_: Any) -> Any:
    X = ans
    dA = _hermitian_tangent(t, "L") if hermitian else t
    dAH = _H(dA)
    Y = _matmul(X, _H(X), dAH)
    Z = _matmul(dAH, _H(X), X)
    return -_matmul(X, dA, X) + (Y - _matmul(Y, a, X)) + (Z - _matmul(X, a, Z))


_pinv = defprimitive(
    _pinv_raw, name="pinv", vjp=_pinv_vjp, jvp=_pinv_jvp, batch_from=lambda fn: _front_rule(fn, 0),
)


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _UNSET) -> Any:
    """Moore-Penrose pseudo-inverse. Differentiable ``numpy.linalg.pinv``.

    The derivative (Golub & Pereyra) holds where the rank is locally constant;
    singular values cut off by rcond/rtol are treated as exactly zero.

    Example::

        x = fnp.linalg.pinv(A) @ b   # least squares
    """
    kw = {}
    if rcond is not None:
        kw["rcond"] = rcond
    if rtol is not _UNSET:
        kw["rtol"] = rtol
    return _pinv(a, hermitian=bool(hermitian), **kw)


# --- matrix_power, tensorinv, tensorsolve, cond, matrix_rank -----------------------------------------

def matrix_power(a: Any, n: int) -> Any:
    """``a`` raised to the integer power n (n < 0 inverts; n == 0 gives the identity). Differentiable ``numpy.linalg.matrix_power``.

    Example::

        fnp.linalg.matrix_power(A, 3)   # A @ A @ A
    """
    a = _arr(a)
    _check_square(a, "matrix_power")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}") from None
    if n == 0:
        xp = namespace_of(a)
        return xp.zeros(shape(a), dtype=dtype(a)) + xp.eye(shape(a)[-1], dtype=dtype(a))
    if n < 0:
        a = inv(a)
        n = -n
    if n == 1:
        return a
    if n == 2:
        return matmul(a, a)
    if n == 3:
        return matmul(matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def tensorinv(a: Any, ind: int = 2) -> Any:
    """Inverse of an N-D array seen as a matrix. Differentiable ``numpy.linalg.tensorinv``."""
    a = _arr(a)
    old = shape(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    prod = 1
    for k in old[ind:]:
        prod *= k
    return fnp.reshape(inv(fnp.reshape(a, (prod, -1))), old[ind:] + old[:ind])


def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """Solve ``tensordot(a, x, axes=b.ndim) = b`` for x. Differentiable ``numpy.linalg.tensorsolve``."""
    a, b = _arr(a), _arr(b)
    an = ndim(a)
    if axes is not None:
        allaxes = list(range(an))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(an, k)
        a = fnp.transpose(a, allaxes)
    old = shape(a)[-(an - ndim(b)):]
    prod = 1
    for k in old:
        prod *= k
    size = 1
    for k in shape(a):
        size *= k
    if size != prod ** 2:
        raise LinAlgError(
            "Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])"
        )
    x = solve(fnp.reshape(a, (prod, prod)), fnp.reshape(b, (-1,)))
    return fnp.reshape(x, old)


def cond(x: Any, p: Any = None) -> Any:
    """Condition number. Differentiable ``numpy.linalg.cond`` (a composition of svd, norm and inv)."""
    x = _arr(x)
    if p is None or p == 2 or p == -2:
        s = svd(x, compute_uv=False)
        hi, lo = fnp.max(s, axis=-1), fnp.min(s, axis=-1)
        return lo / hi if p == -2 else hi / lo
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


matrix_rank = defprimitive(
    backend_function("linalg.matrix_rank"), batch_from=lambda fn: _front_rule(fn, 0), differentiable=False,
)


# --- norm ------------------------------------------------------------------------------------

def _norm2_raw(x: Any, axis: Any = None, keepdims: Any = False) -> Any:
    return resolve(namespace_of(x), "linalg.norm")(x, None, axis, keepdims)


def _kept_shape(x: Any, axis: Any) -> tuple[int, ...]:
    s = shape(x)
    if axis is None:
        return (1,) * len(s)
    axes = (axis,) if isinstance(axis, int) else axis
    axes = {a % len(s) for a in axes}
    return tuple(1 if i in axes else n for i, n in enumerate(s))


def _norm2_vjp(g: Any, ans: Any, x: Any, axis: Any = None, keepdims: Any = False) -> Any:
    if not keepdims:
        ks = _kept_shape(x, axis)
        g, ans = fnp.reshape(g, ks), fnp.reshape(ans, ks)
    return _real_like(g * _conj(x) * _safe_inv(ans), x)


def _norm2_jvp(t: Any, ans: Any, x: Any, axis: Any = None, keepdims: Any = False) -> Any:
    p = _conj(x) * t
    if is_complex(p):
        p = fnp.real(p)
    return fnp.sum(p, axis=axis, keepdims=keepdims) * _safe_inv(ans)


_norm2 = defprimitive(_norm2_raw, name="norm2", vjp=_norm2_vjp, jvp=_norm2_jvp, batch=_norm2_batch)

_inf = float("inf")


def _vector_norm(x: Any, ord: Any, axis: int, keepdims: bool) -> Any:
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord is None or ord == 2:
        return _norm2(x, axis=axis, keepdims=keepdims)
    if ord == _inf:
        return fnp.max(fnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == -_inf:
        return fnp.min(fnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:  # a count: no derivative
        nz = fnp.not_equal(x, 0)
        return fnp.sum(fnp.astype(nz, _real_dtype(x)), axis=axis, keepdims=keepdims)
    if ord == 1:
        return fnp.sum(fnp.abs(x), axis=axis, keepdims=keepdims)
    ord = float(ord)
    return fnp.sum(fnp.abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _svd_norm(x: Any, row: int, col: int, op: str) -> Any:
    s = svd(fnp.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
    if op == "max":
        return fnp.max(s, axis=-1)
    if op == "min":
        return fnp.min(s, axis=-1)
    return fnp.sum(s, axis=-1)


def _matrix_norm(x: Any, ord: Any, row: int, col: int) -> Any:
    if ord == 2:
        return _svd_norm(x, row, col, "max")
    if ord == -2:
        return _svd_norm(x, row, col, "min")
    if ord in (1, -1):
        reduce = fnp.max if ord == 1 else fnp.min
        if col > row:
            col -= 1
        return reduce(fnp.sum(fnp.abs(x), axis=row), axis=col)
    if ord in (_inf, -_inf):
        reduce = fnp.max if ord == _inf else fnp.min
        if row > col:
            row -= 1
        return reduce(fnp.sum(fnp.abs(x), axis=col), axis=row)
    if ord in (None, "fro", "f"):
        return _norm2(x, axis=(row, col))
    if ord == "nuc":
        return _svd_norm(x, row, col, "sum")
    raise ValueError(f"Invalid norm order {ord!r} for matrices.")


def norm(x: Any, ord: Any = None, axis: Axis = None, keepdims: bool = False) -> Any:
    """Matrix or vector norm. Differentiable ``numpy.linalg.norm``, every ``ord``.

    The gradient of the 2-norm (and Frobenius norm) at x = 0 is 0 rather
    than nan. ``ord=0`` (a count of nonzeros) has zero derivative.

    Example::

        fg.grad(fnp.linalg.norm)(x)   # x / norm(x)
    """
    x = pack(x)
    if not isinstance(x, Box):
        return resolve(namespace_of(x), "linalg.norm")(x, ord, axis, keepdims)
    if dtype(x).kind not in "fc":
        x = fnp.astype(x, np.float64)
    nd = ndim(x)
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            r = _norm2(x)
            return fnp.reshape(r, (1,) * nd) if keepdims else r
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (operator.index(axis),)
        except TypeError:
            raise TypeError(f"norm: 'axis' must be None, an integer or a tuple of integers, got {axis!r}") from None
    for a in axis:
        if not -nd <= a < max(nd, 1):
            raise ValueError(f"norm: axis {a} is out of bounds for an array of dimension {nd}")
    if len(axis) == 1:
        return _vector_norm(x, ord, axis[0] % nd, keepdims)
    if len(axis) == 2:
        row, col = axis[0] % nd, axis[1] % nd
        if row == col:
            raise ValueError("Duplicate axes given.")
        r = _matrix_norm(x, ord, row, col)
        return fnp.reshape(r, _kept_shape(x, (row, col))) if keepdims else r
    raise ValueError("Improper number of dimensions to norm.")


def vector_norm(x: Any, /, *, axis: Axis = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """Vector norm over ``axis`` (all axes, flattened, by default). Differentiable ``numpy.linalg.vector_norm``."""
    x = _arr(x)
    nd = ndim(x)
    if axis is None:
        r = norm(fnp.reshape(x, (-1,)), ord=ord)
        return fnp.reshape(r, (1,) * nd) if keepdims else r
    if isinstance(axis, tuple):
        axes = tuple(a % nd for a in axis)
        rest = [i for i in range(nd) if i not in axes]
        moved = fnp.transpose(x, rest + list(axes))
        s = shape(moved)
        r = norm(fnp.reshape(moved, s[: len(rest)] + (-1,)), ord=ord, axis=-1)
        return fnp.reshape(r, _kept_shape(x, axes)) if keepdims else r
    return norm(x, ord=ord, axis=axis, keepdims=keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """Matrix norm over the last two axes. Differentiable ``numpy.linalg.matrix_norm``."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def matrix_transpose(x: Any, /) -> Any:
    """Transpose of the last two axes. Differentiable ``numpy.linalg.matrix_transpose``."""
    x = _arr(x)
    if ndim(x) < 2:
        raise ValueError(f"matrix_transpose: expected at least 2 dimensions, got shape {shape(x)}")
    return _mT(x)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """Diagonals of the last two axes. Differentiable ``numpy.linalg.diagonal``."""
    return fnp.diagonal(x, offset, -2, -1)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Traces of the last two axes. Differentiable ``numpy.linalg.trace``."""
    return fnp.trace(x, offset, -2, -1, dtype=dtype)


# --- no derivative (yet) ---------------------------------------------------------------------

def _eig_raw(a: Any) -> Any:
    w, v = resolve(namespace_of(a), "linalg.eig")(a)
    return w, v


_eig = defprimitive(
    _eig_raw,
    name="eig",
    batch_from=lambda fn: _front_rule(fn, 2),
    multiple_results=True,
    **_no_derivative(
        "the derivative of the general (non-Hermitian) eig is not implemented; for symmetric or "
        "Hermitian matrices use fnp.linalg.eigh",
    ),
)


def eig(a: Any) -> EigResult:
    """Eigenvalues and right eigenvectors (``numpy.linalg.eig``). Not differentiable: use eigh where it applies."""
    w, v = _eig(a)
    return EigResult(w, v)


eigvals = defprimitive(
    backend_function("linalg.eigvals"),
    batch_from=lambda fn: _front_rule(fn, 0),
    doc="Eigenvalues of a general matrix (``numpy.linalg.eigvals``). Not differentiable: use eigvalsh where it applies.",
    **_no_derivative(
        "the derivative of the general (non-Hermitian) eigvals is not implemented; for symmetric or "
        "Hermitian matrices use fnp.linalg.eigvalsh",
    ),
)


def lstsq(a: Any, b: Any, rcond: Any = None) -> Any:
    """Least squares (``numpy.linalg.lstsq``); not differentiable: use ``pinv(a) @ b`` or ``solve`` instead."""
    if isinstance(a, Box) or isinstance(b, Box):
        raise NotImplementedError(
            "lstsq is not differentiable in funcgrad; use fnp.linalg.pinv(a) @ b, or "
            "fnp.linalg.solve(a.T @ a, a.T @ b) for a full-column-rank a"
        )
    return resolve(namespace_of(a, b), "linalg.lstsq")(a, b, rcond=rcond)


