"""Differentiable ``scipy.linalg``: triangular solves, Cholesky and LU factorizations and solves,
matrix functions (``expm``, ``sqrtm``, ``logm``, ``fractional_matrix_power``), ``block_diag``, ``eigh``, ``solve_sylvester``.

New primitives (``solve_triangular``, ``lu_factor``, ``expm``, ``sqrtm``, ``logm``,
``solve_sylvester``) carry VJP, JVP and batching rules written in funcgrad.numpy, so
they differentiate again; the rest (``cho_factor``, ``cho_solve``, ``lu_solve``,
``block_diag``, ``eigh``) are compositions of differentiable operations. Every
function takes stacks of matrices (leading batch axes), which is what their vmap
rules use. Real input is the tested case; complex input is computed but its
derivatives are not checked.

Needs SciPy (``pip install funcgrad[scipy]``) for NumPy arrays; CuPy arrays use
``cupyx.scipy.linalg`` where it has the function, and say so where it has not.

Example::

    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad.scipy import linalg

    A = fnp.array([[4.0, 1.0], [1.0, 3.0]])
    b = fnp.array([1.0, 2.0])
    fg.grad(lambda A: fnp.sum(linalg.cho_solve(linalg.cho_factor(A), b)))(A)
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Callable, Sequence

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from ..numpy._batching import move_to_front
from ..numpy._util import dtype, ndim, resolve, shape
from ._scipy import require_scipy, scipy_function

require_scipy("linalg")

__all__ = [
    "solve_triangular", "cho_factor", "cho_solve", "lu_factor", "lu_solve", "expm", "expm_frechet",
    "sqrtm", "logm", "fractional_matrix_power", "block_diag", "eigh", "solve_sylvester", "solve",
    "solve_banded", "inv", "det", "cholesky",
    "LinAlgError",
]

LinAlgError = np.linalg.LinAlgError


# --------------------------------------------------------------------------
# helpers

def _mT(x: Any) -> Any:
    return fnp.swapaxes(x, -1, -2)


def _H(x: Any) -> Any:
    return fnp.conj(_mT(x)) if dtype(x).kind == "c" else _mT(x)


def _per_matrix(fn: Callable[..., Any], *arrays: Any, cores: Sequence[int] | None = None) -> Any:
    """Apply ``fn`` (a SciPy kernel taking matrices) over the leading stack axes of ``arrays``.

    ``cores[i]`` is how many trailing axes of ``arrays[i]`` form one example (2 by default);
    the stack axes broadcast. Results may be tuples (stacked element by element).
    """
    xp = namespace_of(*arrays)
    cores = cores or [2] * len(arrays)
    stacks = [tuple(a.shape[: a.ndim - c]) for a, c in zip(arrays, cores)]
    if all(s == () for s in stacks):
        return fn(*arrays)
    full = np.broadcast_shapes(*stacks)
    arrays = tuple(xp.broadcast_to(a, full + tuple(a.shape[a.ndim - c:])) for a, c in zip(arrays, cores))
    outs = [fn(*(a[idx] for a in arrays)) for idx in itertools.product(*(range(n) for n in full))]
    if not outs:
        raise ValueError("funcgrad.scipy.linalg: an empty stack of matrices")
    if isinstance(outs[0], tuple):
        return tuple(xp.reshape(xp.stack([o[k] for o in outs]), full + tuple(outs[0][k].shape))
                     for k in range(len(outs[0])))
    return xp.reshape(xp.stack(outs), full + tuple(outs[0].shape))


def _keep_dtype(out: Any, like: Any) -> Any:
    """SciPy may compute in float64 or complex; return the input's precision (real stays real
    where the result is real). ``like``: an array or a dtype."""
    want = np.result_type(getattr(like, "dtype", like), np.float32)
    if out.dtype == want:
        return out
    if out.dtype.kind == "c" and want.kind != "c":
        return out.astype(np.result_type(want, np.complex64))
    return out.astype(want)


def _eye(n: int, like: Any) -> Any:
    """The identity on ``like``'s device, in its dtype (a constant)."""
    return namespace_of(like).eye(n, dtype=dtype(like))


def _check_square(a: Any, name: str) -> None:
    s = shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(f"{name} expects a square matrix (or a stack of them, shape (..., n, n)), "
                         f"got an array of shape {s}")


def _front(args: Sequence[Any], dims: Sequence[Any]) -> list[Any]:
    """Batch axes to the front; unbatched arguments keep their shape (the stack axes broadcast)."""
    out = []
    for a, d in zip(args, dims):
        out.append(move_to_front(a, d) if d is not None else a)
    return out


def _stack_rule(fn: Callable[..., Any], n_arrays: int, cores: Sequence[int], n_results: int = 0) -> Callable[..., Any]:
    """vmap rule for a function of stacked matrices: batch axes to the front, unbatched arrays
    get a unit batch axis so that the stack axes line up, one call."""

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, Any]:
        arrays = list(args[:n_arrays])
        stack_ranks = [ndim(a) - (d is not None) - c for a, d, c in zip(arrays, dims, cores)]
        r = max(stack_ranks)
        for i, (a, d, c) in enumerate(zip(arrays, dims, cores)):
            if d is None:
                a = fnp.reshape(a, (1,) * (r - stack_ranks[i] + 1) + shape(a))
            else:
                a = move_to_front(a, d)
                s = shape(a)
                a = fnp.reshape(a, s[:1] + (1,) * (r - stack_ranks[i]) + s[1:])
            arrays[i] = a
        out = fn(*arrays, *args[n_arrays:], **kwargs)
        return out, ((0,) * n_results if n_results else 0)

    return rule


# --------------------------------------------------------------------------
# solve_triangular

_TRANS = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}


def _trans_code(trans: Any) -> int:
    try:
        return _TRANS[trans]
    except (KeyError, TypeError):
        raise ValueError(f"solve_triangular: trans must be 0/'N', 1/'T' or 2/'C', got {trans!r}") from None


def _triangle_part(c: Any, lower: bool, unit_diagonal: bool) -> Any:
    """Cotangent of the triangle: the entries the solve read."""
    k = 1 if unit_diagonal else 0
    return fnp.tril(c, -k) if lower else fnp.triu(c, k)


def _solve_tri_raw(a: Any, b: Any, trans: int = 0, lower: bool = False, unit_diagonal: bool = False) -> Any:
    xp = namespace_of(a, b)
    fn = scipy_function(xp, "linalg", "solve_triangular")
    out = _per_matrix(lambda m, v: fn(m, v, trans=trans, lower=lower, unit_diagonal=unit_diagonal), a, b)
    return _keep_dtype(out, np.result_type(a.dtype, b.dtype))


def _op(m: Any, trans: int) -> Any:
    if trans == 0:
        return m
    return _mT(m) if trans == 1 else _H(m)


def _solve_tri_vjp_b(g: Any, ans: Any, a: Any, b: Any, trans: Any = 0, lower: Any = False,
                     unit_diagonal: Any = False) -> Any:
    # x = op(T)^-1 b  ->  b_bar = op(T)^-H g
    if trans == 0:
        return _solve_tri(a, g, 2 if dtype(a).kind == "c" else 1, lower, unit_diagonal)
    if trans == 2 or dtype(a).kind != "c":
        return _solve_tri(a, g, 0, lower, unit_diagonal)
    return _solve_tri(fnp.conj(a), g, 0, lower, unit_diagonal)


def _solve_tri_vjp_a(g: Any, ans: Any, a: Any, b: Any, trans: Any = 0, lower: Any = False,
                     unit_diagonal: Any = False) -> Any:
    bb = _solve_tri_vjp_b(g, ans, a, b, trans, lower, unit_diagonal)
    m_bar = -fnp.matmul(bb, _H(ans))          # cotangent of op(T)
    t_bar = _op(m_bar, trans)
    t_bar = _triangle_part(t_bar, lower, unit_diagonal)
    return _sum_to(t_bar, a)


def _sum_to(x: Any, like: Any) -> Any:
    """Sum the broadcast stack axes of ``x`` down to the shape of ``like``."""
    extra = ndim(x) - ndim(like)
    if extra > 0:
        x = fnp.sum(x, axis=tuple(range(extra)))
    axes = tuple(i for i, (n, m) in enumerate(zip(shape(like), shape(x))) if n == 1 and m != 1)
    if axes:
        x = fnp.sum(x, axis=axes, keepdims=True)
    return x


def _solve_tri_jvp_a(t: Any, ans: Any, a: Any, b: Any, trans: Any = 0, lower: Any = False,
                     unit_diagonal: Any = False) -> Any:
    dm = _op(_triangle_part(t, lower, unit_diagonal), trans)
    return -_solve_tri(a, fnp.matmul(dm, ans), trans, lower, unit_diagonal)


_solve_tri: Callable[..., Any] = defprimitive(
    _solve_tri_raw, name="solve_triangular",
    vjp={0: _solve_tri_vjp_a, 1: lambda g, ans, a, b, *r, **k: _sum_to(_solve_tri_vjp_b(g, ans, a, b, *r, **k), b)},
    jvp={0: _solve_tri_jvp_a, 1: lambda t, ans, a, b, *r, **k: _solve_tri(a, t, *r, **k)},
    batch_from=lambda fn: _stack_rule(fn, 2, (2, 2)),   # vmap: the batch axis becomes a stack axis
)


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solve ``op(a) x = b`` for triangular ``a``. Differentiable ``scipy.linalg.solve_triangular``.

    Only the ``lower`` (or upper) triangle of ``a`` is read (and receives a
    gradient); with ``unit_diagonal=True`` its diagonal is taken as ones and
    gets no gradient. ``trans``: 0/'N' (a), 1/'T' (a.T), 2/'C' (a.conj().T).
    ``b`` is a vector (n,) or a matrix (n, k); stacks (..., n, n) with
    (..., n, k) broadcast. ``overwrite_b`` and ``check_finite`` are accepted and ignored.

    Example::

        L = fnp.array([[2.0, 0.0], [1.0, 1.0]])
        solve_triangular(L, fnp.array([2.0, 3.0]), lower=True)   # [1, 2]
    """
    _check_square(a, "solve_triangular")
    code = _trans_code(trans)
    n = shape(a)[-1]
    vector = ndim(b) == 1
    if vector:
        b = fnp.reshape(b, (n, 1))
    if ndim(b) < 2 or shape(b)[-2] != n:
        raise ValueError(f"solve_triangular: b must have shape (n,) or (..., n, k) with n = {n} "
                         f"(the size of a), got {shape(b)}")
    x = _solve_tri(a, b, code, bool(lower), bool(unit_diagonal))
    return fnp.reshape(x, (n,)) if vector else x


# --------------------------------------------------------------------------
# Cholesky

def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Cholesky factor of a Hermitian positive-definite matrix. Differentiable ``scipy.linalg.cholesky``.

    As in SciPy the upper factor ``U`` (``a = U^H U``) is the default; ``lower=True``
    gives ``L`` (``a = L L^H``).

    Example::

        cholesky(fnp.array([[4.0, 2.0], [2.0, 2.0]]))   # [[2, 1], [0, 1]]
    """
    L = fnp.linalg.cholesky(a)
    return L if lower else _H(L)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, ...]:
    """``(c, lower)`` for :func:`cho_solve`. Differentiable ``scipy.linalg.cho_factor``.

    Unlike SciPy (whose other triangle holds leftover entries), the other
    triangle of ``c`` is zero, as in JAX.

    Example::

        c = cho_factor(fnp.array([[4.0, 2.0], [2.0, 2.0]]))
    """
    return cholesky(a, lower=lower), bool(lower)


def cho_solve(c_and_lower: tuple[Any, ...], b: Any, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solve ``a x = b`` given ``cho_factor(a)``. Differentiable ``scipy.linalg.cho_solve``.

    Differentiable in the factor and in ``b`` (so through ``cho_factor`` in ``a``).

    Example::

        A = fnp.array([[4.0, 2.0], [2.0, 2.0]])
        cho_solve(cho_factor(A), fnp.array([1.0, 0.0]))   # inv(A) @ [1, 0]
    """
    c, lower = c_and_lower
    if lower:   # a = L L^H
        y = solve_triangular(c, b, lower=True)
        return solve_triangular(c, y, trans=2, lower=True)
    y = solve_triangular(c, b, trans=2, lower=False)   # a = U^H U
    return solve_triangular(c, y, lower=False)


# --------------------------------------------------------------------------
# LU

def _piv_to_perm_raw(piv: Any) -> Any:
    """LAPACK row interchanges -> the permutation ``perm`` with ``a[perm] = L U``; stacks too.
    Vectorized over the stack, no host synchronization."""
    xp = namespace_of(piv)
    n = piv.shape[-1]
    ar = xp.arange(n)
    perm = xp.broadcast_to(ar, piv.shape).copy() if hasattr(xp, "broadcast_to") else ar
    for i in range(n):
        j = piv[..., i:i + 1]
        pi = perm[..., i:i + 1]
        pj = xp.take_along_axis(perm, j, axis=-1)
        perm = xp.where(ar == i, pj, xp.where(ar == j, pi, perm))
    return perm


def _piv_rule(args: list[Any], dims: list[Any]) -> tuple[Any, Any]:
    return _piv_to_perm(move_to_front(args[0], dims[0])), 0


_piv_to_perm = defprimitive(_piv_to_perm_raw, name="lu_pivots_to_permutation", differentiable=False,
                            batch=_piv_rule)


def _lu_factor_raw(a: Any) -> tuple[Any, ...]:
    xp = namespace_of(a)
    fn = scipy_function(xp, "linalg", "lu_factor")

    def one(m: Any) -> tuple[Any, ...]:
        lu, piv = fn(m)
        return lu, piv.astype(np.int32) if hasattr(piv, "astype") else piv

    lu, piv = _per_matrix(one, a)
    return _keep_dtype(lu, a), piv


def _lu_parts(lu: Any) -> tuple[Any, Any]:
    eye = _eye(shape(lu)[-1], lu)
    return fnp.tril(lu, -1) + eye, fnp.triu(lu)


def _lu_jvp(t: Any, ans: Any, a: Any) -> Any:
    lu, piv = ans
    L, U = _lu_parts(lu)
    perm = _piv_to_perm(piv)
    pt = _rows(t, perm)
    # F = L^-1 P dA U^-1;  dL = L tril(F, -1), dU = triu(F) U
    F = _solve_tri(L, pt, 0, True, True)
    F = _mT(_solve_tri(U, _mT(F), 1, False, False))
    dlu = fnp.matmul(L, fnp.tril(F, -1)) + fnp.matmul(fnp.triu(F), U)
    return dlu, fnp.zeros_like(piv)


def _lu_vjp(g: Any, ans: Any, a: Any) -> Any:  # noqa: D401
    lu, piv = ans
    glu = g[0]
    L, U = _lu_parts(lu)
    perm = _piv_to_perm(piv)
    inner = fnp.tril(fnp.matmul(_H(L), fnp.tril(glu, -1)), -1) + fnp.triu(fnp.matmul(fnp.triu(glu), _H(U)))
    # P^T L^-H inner U^-H
    x = _solve_tri(L, inner, 2, True, True)
    x = _mT(_solve_tri(U, _mT(x), 0, False, False)) if dtype(U).kind != "c" else \
        _H(_solve_tri(U, _H(x), 0, False, False))
    return _rows(x, fnp.argsort(perm, axis=-1))


def _rows(x: Any, perm: Any) -> Any:
    """``x[..., perm, :]`` for stacks of matrices and row permutations."""
    idx = fnp.expand_dims(perm, -1)
    lead = np.broadcast_shapes(shape(x)[:-2], shape(idx)[:-2])
    x = fnp.broadcast_to(x, lead + shape(x)[-2:])
    return fnp.take_along_axis(x, fnp.broadcast_to(idx, lead + shape(idx)[-2:-1] + shape(x)[-1:]), axis=-2)


_lu_factor: Callable[..., Any] = defprimitive(_lu_factor_raw, name="lu_factor", multiple_results=True, vjp=_lu_vjp, jvp=_lu_jvp,
                          batch=lambda args, dims: (_lu_factor(move_to_front(args[0], dims[0])), (0, 0)))


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, ...]:
    """Pivoted LU factorization ``(lu, piv)`` of a square matrix. Differentiable ``scipy.linalg.lu_factor``.

    ``lu`` packs the unit lower factor (below the diagonal) and the upper factor;
    ``piv`` are LAPACK's 0-based row interchanges (an integer array, not
    differentiable). The derivative of ``lu`` follows from ``P dA = dL U + L dU``.

    Example::

        lu, piv = lu_factor(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
    """
    _check_square(a, "lu_factor")
    out: tuple[Any, ...] = _lu_factor(a)
    return out


def lu_solve(lu_and_piv: tuple[Any, ...], b: Any, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:
    """Solve ``a x = b`` (``trans=1``: ``a^T x = b``; 2: ``a^H x = b``) given ``lu_factor(a)``.
    Differentiable ``scipy.linalg.lu_solve`` in ``lu`` and ``b``.

    Example::

        A = fnp.array([[1.0, 2.0], [3.0, 4.0]])
        lu_solve(lu_factor(A), fnp.array([1.0, 1.0]))   # solve(A, [1, 1])
    """
    lu, piv = lu_and_piv
    code = _trans_code(trans)
    perm = _piv_to_perm(piv)
    vector = ndim(b) == 1
    if vector:
        b = fnp.expand_dims(b, -1)
    if code == 0:
        pb = _rows(b, perm)
        y = _solve_tri(lu, pb, 0, True, True)
        x = _solve_tri(lu, y, 0, False, False)
    else:
        z = _solve_tri(lu, b, code, False, False)
        w = _solve_tri(lu, z, code, True, True)
        x = _rows(w, fnp.argsort(perm, axis=-1))
    return fnp.squeeze(x, -1) if vector else x


# --------------------------------------------------------------------------
# matrix functions: expm, sqrtm, logm (the block trick for their Frechet derivatives)

def _block(a: Any, e: Any) -> Any:
    """[[a, e], [0, a]] for stacks of matrices."""
    z = fnp.zeros_like(a)
    return fnp.concatenate([fnp.concatenate([a, e], axis=-1), fnp.concatenate([z, a], axis=-1)], axis=-2)


def _matrix_function(name: str, doc: str, branch: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A primary matrix function f computed by SciPy, with rules from the block identity
    f([[A, E], [0, A]]) = [[f(A), L_f(A, E)], [0, f(A)]] (L_f: the Frechet derivative); the
    VJP (a transpose, as everywhere in funcgrad) is L_f(A^T, G). ``branch``: for a
    function with a branch cut, ``L(A, E, f(A))``, the Frechet derivative on f(A)'s branch."""

    def raw(a: Any) -> Any:
        kernel = scipy_function(namespace_of(a), "linalg", name)
        # float32 is computed in float64 (SciPy's logm/sqrtm warn on their own float32 error)
        wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        return _keep_dtype(_per_matrix(lambda m: _as_result(kernel(m)), wide), a)

    raw.__name__ = raw.__qualname__ = name

    def frechet(a: Any, e: Any) -> Any:
        n = shape(a)[-1]
        return fn(_block(a, e))[..., :n, n:]

    if branch is not None:
        def vjp(g: Any, ans: Any, a: Any) -> Any:
            return branch(_mT(a), g, _mT(ans))

        def jvp(t: Any, ans: Any, a: Any) -> Any:
            return branch(a, t, ans)
    else:
        def vjp(g: Any, ans: Any, a: Any) -> Any:
            return frechet(_mT(a), g)

        def jvp(t: Any, ans: Any, a: Any) -> Any:
            return frechet(a, t)

    fn = defprimitive(
        raw, name=name, vjp=vjp, jvp=jvp,
        batch=lambda args, dims: (fn(move_to_front(args[0], dims[0])), 0),
        doc=doc,
    )
    return fn


# sqrtm and logm have a branch cut on the negative real axis. A real matrix with a negative
# eigenvalue sits on it (SciPy takes the root or logarithm from above the cut), and the block
# [[A, E], [0, A]] repeats that eigenvalue in a Jordan-like block, which rounding splits by
# about sqrt(eps) to both sides of the cut: sqrtm of the block then mixes the roots +i and -i
# and divides by their sum (issue 31: a second derivative of 4.9e12 instead of -0.46). The
# Frechet derivative below takes the branch from f(A) itself and turns the block's spectrum
# away from the cut (f(z) = turn_back(f(r z)) with |r| = 1) before calling SciPy, and its rules
# call it again, so every order sees the same branch.

def _eigenvalue_arguments(name: str, root: Any) -> Any:
    """The arguments (angles) of A's eigenvalues on the branch f(A) = root took, from root's
    eigenvalues: sqrt halves an angle, log's imaginary part is it."""
    xp = namespace_of(root)
    mu = resolve(xp, "linalg.eigvals")(root.astype(np.complex128))
    return 2 * xp.angle(mu) if name == "sqrtm" else mu.imag


def _frechet_raw(name: str, a: Any, e: Any, root: Any) -> Any:
    xp = namespace_of(a, e, root)
    kernel = scipy_function(xp, "linalg", name)
    a, e, root = xp.broadcast_arrays(a, e, root)
    angles = _eigenvalue_arguments(name, root)
    turn = -(xp.max(angles, axis=-1) + xp.min(angles, axis=-1)) / 2      # centre them on 0
    real = all(x.dtype.kind != "c" for x in (a, e, root))
    n = a.shape[-1]
    big = xp.concatenate([xp.concatenate([a, e], axis=-1),
                          xp.concatenate([xp.zeros_like(a), a], axis=-1)], axis=-2)
    r = xp.exp(1j * turn)[..., None, None]      # computed in complex even when turn is 0: no sync
    out = _per_matrix(lambda m: _as_result(kernel(m)), big.astype(np.complex128) * r)[..., :n, n:]
    if name == "sqrtm":
        out = out * xp.exp(-0.5j * turn)[..., None, None]   # f(z) = sqrt(r z) / sqrt(r), r = e^(i turn)
    if real:
        out = out.real
    return _keep_dtype(out, xp.result_type(a, e, root))


def _branch_frechet(name: str) -> Callable[..., Any]:
    """``L(a, e, root)``: the Frechet derivative of sqrtm/logm at ``a`` in direction ``e`` on the
    branch of ``root = f(a)`` (which only picks the branch: its derivative is zero)."""

    def raw(a: Any, e: Any, root: Any) -> Any:
        return _frechet_raw(name, a, e, root)

    raw.__name__ = raw.__qualname__ = f"{name}_frechet"

    def big_args(a: Any, e: Any, root: Any, ans: Any) -> tuple[Any, Any]:
        # f([[a, e], [0, a]]) = [[root, ans], [0, root]]: the block and its root
        return _block(a, e), _block(root, ans)

    def vjp_a(g: Any, ans: Any, a: Any, e: Any, root: Any) -> Any:
        n = shape(a)[-1]
        big, big_root = big_args(a, e, root, ans)
        z = fnp.zeros_like(g)
        pad = fnp.concatenate([fnp.concatenate([z, g], axis=-1), fnp.concatenate([z, z], axis=-1)], axis=-2)
        p = fn(_mT(big), pad, _mT(big_root))
        return p[..., :n, :n] + p[..., n:, n:]

    def jvp_a(t: Any, ans: Any, a: Any, e: Any, root: Any) -> Any:
        n = shape(a)[-1]
        big, big_root = big_args(a, e, root, ans)
        return fn(big, _block(t, fnp.zeros_like(t)), big_root)[..., :n, n:]   # direction [[t, 0], [0, t]]

    fn = defprimitive(
        raw, name=f"{name}_frechet",
        vjp={0: vjp_a, 1: lambda g, ans, a, e, root: fn(_mT(a), g, _mT(root)),
             2: lambda g, ans, a, e, root: fnp.zeros_like(root)},
        jvp={0: jvp_a, 1: lambda t, ans, a, e, root: fn(a, t, root),
             2: lambda t, ans, a, e, root: fnp.zeros_like(ans)},
        batch=_stack_rule(lambda a, e, root: fn(a, e, root), 3, (2, 2, 2)),
    )
    return fn


def _as_result(out: Any) -> Any:
    # scipy.linalg.sqrtm returned (out, errest) when disp=False in old versions; we call it plainly.
    return out[0] if isinstance(out, tuple) else out


_expm = _matrix_function("expm", "")
_sqrtm_frechet = _branch_frechet("sqrtm")
_logm_frechet = _branch_frechet("logm")
_sqrtm = _matrix_function("sqrtm", "", _sqrtm_frechet)
_logm = _matrix_function("logm", "", _logm_frechet)


def expm(A: Any) -> Any:
    """Matrix exponential. Differentiable ``scipy.linalg.expm`` (stacks (..., n, n) too).

    Derivatives use the Frechet derivative from the block identity
    ``expm([[A, E], [0, A]]) = [[expm(A), L(A, E)], [0, expm(A)]]``, so any order works.

    Example::

        expm(fnp.zeros((2, 2)))   # identity
    """
    _check_square(A, "expm")
    return _expm(A)


def expm_frechet(A: Any, E: Any, method: Any = None, compute_expm: bool = True, check_finite: bool = True) -> Any:
    """``(expm(A), L(A, E))``: the matrix exponential and its Frechet derivative in direction E
    (``L`` alone with ``compute_expm=False``). Differentiable ``scipy.linalg.expm_frechet``.

    Example::

        expm_frechet(fnp.zeros((2, 2)), fnp.eye(2))   # (I, I)
    """
    _check_square(A, "expm_frechet")
    n = shape(A)[-1]
    big = _expm(_block(A, E))
    L = big[..., :n, n:]
    return (big[..., :n, :n], L) if compute_expm else L


def sqrtm(A: Any, disp: bool = True, blocksize: int = 64) -> Any:
    """Principal matrix square root. Differentiable ``scipy.linalg.sqrtm``.

    Derivatives: ``X dX + dX X = dA``, solved through the block identity
    ``sqrtm([[A, E], [0, A]])`` on the branch of ``X`` (the block's spectrum is turned away
    from the cut first). Matrices with eigenvalues on the negative real axis have a complex
    root (as in SciPy) and derivatives of every order there; real input keeps its precision.

    Example::

        sqrtm(fnp.array([[4.0, 0.0], [0.0, 9.0]]))   # [[2, 0], [0, 3]]
    """
    _check_square(A, "sqrtm")
    return _sqrtm(A)


def logm(A: Any, disp: bool = True) -> Any:
    """Principal matrix logarithm. Differentiable ``scipy.linalg.logm``.

    Derivatives through the block identity ``logm([[A, E], [0, A]])``, on the branch of the
    result (a real matrix with a negative eigenvalue has a complex logarithm, as in SciPy).

    Example::

        logm(fnp.eye(2))   # zeros
    """
    _check_square(A, "logm")
    return _logm(A)


def fractional_matrix_power(A: Any, t: Any) -> Any:
    """``A`` to the power ``t``: ``matrix_power`` for an integer ``t``, else the principal power
    ``expm(t * logm(A))`` (complex where a real ``A`` has a negative eigenvalue, as in SciPy).
    Differentiable ``scipy.linalg.fractional_matrix_power``, in ``A`` and in ``t``.

    Example::

        fractional_matrix_power(fnp.array([[4.0, 0.0], [0.0, 9.0]]), 0.5)   # [[2, 0], [0, 3]]
    """
    _check_square(A, "fractional_matrix_power")
    if isinstance(t, (int, np.integer)) or (isinstance(t, (float, np.floating)) and float(t).is_integer()):
        return fnp.linalg.matrix_power(A, int(t))
    return _expm(t * _logm(A))

# --------------------------------------------------------------------------
# solve_sylvester

def _sylvester_raw(a: Any, b: Any, q: Any) -> Any:
    xp = namespace_of(a, b, q)
    fn = scipy_function(xp, "linalg", "solve_sylvester")
    return _keep_dtype(_per_matrix(fn, a, b, q), q)


def _syl_adjoint(g: Any, ans: Any, a: Any, b: Any, q: Any) -> Any:
    return _sylvester(_H(a), _H(b), g)


_sylvester: Callable[..., Any] = defprimitive(
    _sylvester_raw, name="solve_sylvester",
    vjp={0: lambda g, ans, a, b, q: _sum_to(-fnp.matmul(_syl_adjoint(g, ans, a, b, q), _H(ans)), a),
         1: lambda g, ans, a, b, q: _sum_to(-fnp.matmul(_H(ans), _syl_adjoint(g, ans, a, b, q)), b),
         2: lambda g, ans, a, b, q: _sum_to(_syl_adjoint(g, ans, a, b, q), q)},
    jvp={0: lambda t, ans, a, b, q: _sylvester(a, b, -fnp.matmul(t, ans)),
         1: lambda t, ans, a, b, q: _sylvester(a, b, -fnp.matmul(ans, t)),
         2: lambda t, ans, a, b, q: _sylvester(a, b, t)},
    batch_from=lambda fn: _stack_rule(fn, 3, (2, 2, 2)),
)


def solve_sylvester(a: Any, b: Any, q: Any) -> Any:
    """Solve ``a x + x b = q``. Differentiable ``scipy.linalg.solve_sylvester`` in a, b and q.

    With ``x`` the solution: ``dx`` solves ``a dx + dx b = dq - da x - x db``, and the
    cotangent of ``q`` solves the adjoint equation ``a^H y + y b^H = g``.

    Example::

        solve_sylvester(fnp.eye(2), fnp.eye(2), fnp.ones((2, 2)))   # 0.5 * ones
    """
    _check_square(a, "solve_sylvester (a)")
    _check_square(b, "solve_sylvester (b)")
    if shape(q)[-2:] != (shape(a)[-1], shape(b)[-1]):
        raise ValueError(f"solve_sylvester: q must have shape (..., {shape(a)[-1]}, {shape(b)[-1]}) for a of "
                         f"shape {shape(a)} and b of shape {shape(b)}, got {shape(q)}")
    return _sylvester(a, b, q)


# --------------------------------------------------------------------------
# compositions

def block_diag(*arrs: Any) -> Any:
    """Block-diagonal matrix from the given arrays. Differentiable ``scipy.linalg.block_diag``.

    0-d and 1-d inputs are treated as 1x1 and 1xn blocks, as in SciPy.

    Example::

        block_diag(fnp.eye(2), fnp.array([[3.0]]))   # 3x3
    """
    if not arrs:
        return fnp.zeros((1, 0))
    blocks = []
    for i, a in enumerate(arrs):
        if ndim(a) > 2:
            raise ValueError(f"block_diag: argument {i} has {ndim(a)} dimensions; blocks must be at most 2-D")
        blocks.append(fnp.reshape(a, (1, -1)) if ndim(a) < 2 else a)
    dt = np.result_type(*[dtype(b) for b in blocks])
    cols = sum(shape(b)[1] for b in blocks)
    rows = []
    left = 0
    for b in blocks:
        r, c = shape(b)
        parts = []
        if left:
            parts.append(namespace_of(b).zeros((r, left), dtype=dt))
        parts.append(fnp.astype(b, dt) if dtype(b) != dt else b)
        if cols - left - c:
            parts.append(namespace_of(b).zeros((r, cols - left - c), dtype=dt))
        rows.append(fnp.concatenate(parts, axis=1) if len(parts) > 1 else parts[0])
        left += c
    return fnp.concatenate(rows, axis=0)


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False, **kwargs: Any) -> Any:
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix, or of the generalized
    problem ``a v = w b v`` with ``b`` positive definite. Differentiable ``scipy.linalg.eigh``.

    ``eigvals_only=True`` returns the eigenvalues alone (their derivative needs no
    eigenvector gaps). The generalized problem reduces to the standard one through
    the Cholesky factor of ``b``, so it is differentiable in both matrices. Other
    SciPy options (``subset_by_index``, ``driver`` ...) are not supported.

    Example::

        w = eigh(fnp.array([[2.0, 1.0], [1.0, 2.0]]), eigvals_only=True)   # [1, 3]
    """
    for k, v in kwargs.items():
        if k in ("overwrite_a", "overwrite_b", "check_finite", "turbo") or (k == "type" and v == 1):
            continue
        if v is not None and v is not False:
            raise NotImplementedError(f"funcgrad.scipy.linalg.eigh: option {k}={v!r} is not supported")
    uplo = "L" if lower else "U"
    if b is None:
        if eigvals_only:
            return fnp.linalg.eigvalsh(a, UPLO=uplo)
        w, v = fnp.linalg.eigh(a, UPLO=uplo)
        return w, v
    half = fnp.tril(a) if lower else fnp.triu(a)
    a_full = half + _H(half) - _eye(shape(a)[-1], a) * half   # the named triangle, mirrored
    L = fnp.linalg.cholesky(b)
    c = _solve_tri(L, a_full, 0, True, False)
    c = _H(_solve_tri(L, _H(c), 0, True, False))
    c = (c + _H(c)) / 2
    if eigvals_only:
        return fnp.linalg.eigvalsh(c)
    w, u = fnp.linalg.eigh(c)
    return w, _solve_tri(L, u, 2, True, False)


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          check_finite: bool = True, assume_a: str | None = None, transposed: bool = False) -> Any:
    """Solve ``a x = b``. Differentiable ``scipy.linalg.solve`` (general solver for every ``assume_a``).

    Example::

        solve(fnp.array([[2.0, 0.0], [0.0, 4.0]]), fnp.array([2.0, 2.0]))   # [1, 0.5]
    """
    return fnp.linalg.solve(_mT(a) if transposed else a, b)


def solve_banded(l_and_u: tuple[int, int], ab: Any, b: Any, overwrite_ab: bool = False, overwrite_b: bool = False,
                 check_finite: bool = True) -> Any:
    """Solve ``a x = b`` for a banded ``a`` given in LAPACK band storage ``ab`` (shape
    ``(l + u + 1, n)``, ``ab[u + i - j, j] = a[i, j]``). Differentiable
    ``scipy.linalg.solve_banded`` in ``ab`` and ``b`` (the band is unpacked and solved densely:
    O(n^3), meant for the moderate sizes where derivatives are wanted).

    Example::

        ab = fnp.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 0.0]])   # tridiagonal
        solve_banded((1, 1), ab, fnp.array([5.0, 6.0, 5.0]))                 # [1, 1, 1]
    """
    try:
        lower, upper = (operator.index(k) for k in l_and_u)
    except (TypeError, ValueError):
        raise TypeError(f"solve_banded: l_and_u must be two integers (l, u), got {l_and_u!r}") from None
    if ndim(ab) != 2 or shape(ab)[0] != lower + upper + 1:
        raise ValueError(f"solve_banded: ab must have shape (l + u + 1, n) = ({lower + upper + 1}, n) for "
                         f"(l, u) = ({lower}, {upper}), got shape {shape(ab)}")
    n = shape(ab)[1]
    if shape(b)[0] != n:
        raise ValueError(f"solve_banded: b has {shape(b)[0]} rows but the banded matrix is {n} x {n}")
    i, j = np.indices((n, n))
    row = upper + i - j                         # where a[i, j] sits in ab
    row[(row < 0) | (row > lower + upper)] = lower + upper + 1   # outside the band: a zero row
    padded = fnp.concatenate([ab, fnp.zeros_like(ab[:1])], axis=0)
    return fnp.linalg.solve(padded[row, j], b)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Matrix inverse. Differentiable ``scipy.linalg.inv``.

    Example::

        inv(fnp.array([[2.0, 0.0], [0.0, 4.0]]))
    """
    return fnp.linalg.inv(a)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Determinant. Differentiable ``scipy.linalg.det``.

    Example::

        det(fnp.array([[2.0, 0.0], [0.0, 4.0]]))   # 8
    """
    return fnp.linalg.det(a)
