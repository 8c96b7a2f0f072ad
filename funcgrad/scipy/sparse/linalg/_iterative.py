"""Iterative solvers ``cg``, ``gmres``, ``bicgstab``, ``minres`` returning ``(x, info)`` like
SciPy's, differentiated implicitly at the solution: the derivative is that of the exact
solve ``A^-1 b``, computed by one more iterative solve (with ``A^H``) at the same
tolerance, never by differentiating the iterations."""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ....core import Box
from ....numpy._util import dtype, ndim, shape
from ....transforms import stop_gradient
from .._arrays import SparseArray
from .._ops import matvec
from ._direct import _rhs, as_square_sparse
from ._interface import LinearOperator
from ._system import System, solve

__all__ = ["cg", "gmres", "bicgstab", "minres"]


def _iterate(method: str, A: Any, b: Any, x0: Any, rtol: float, atol: float, maxiter: int | None,  # noqa: N803
             M: Any, extra: tuple[tuple[str, Any], ...] = ()) -> tuple[Any, Any]:  # noqa: N803
    if isinstance(A, LinearOperator):
        m, n = A.shape
        if m != n:
            raise ValueError(f"{method}: A must be square, got shape {A.shape}")
        b = _rhs(b, n, method)
        data, pattern, op = A.leaves, None, A.form
    else:
        a = as_square_sparse(A, "csr", method)
        b = _rhs(b, a.shape[0], method)
        data, pattern, op = a.data, a.pattern, None
    if ndim(b) != 1:
        raise ValueError(f"{method}: b must be a vector of shape ({shape(b)[0]},), got {tuple(shape(b))}")
    if x0 is not None and not isinstance(x0, Box) and not hasattr(x0, "shape"):
        x0 = np.asarray(x0, dtype=np.float64)
    if x0 is not None and tuple(shape(x0)) != tuple(shape(b)):
        raise ValueError(f"{method}: x0 must have b's shape {tuple(shape(b))}, got {tuple(shape(x0))}")
    opts: tuple[tuple[str, Any], ...] = (("rtol", float(rtol)),) + ((("atol", float(atol)),) if method != "minres"
                                                                   else ()) + (("maxiter", maxiter),) + extra
    if M is not None:
        opts += (("M", M),)
    system = System(method, pattern, op, opts)
    x = solve(data, b, x0, system=system, trans="N")
    return x, _info(A if op is not None else SparseArray._in(a, "csr", stop_gradient(data), pattern),  # type: ignore
                    x, b, rtol, atol, maxiter)


def _info(A: Any, x: Any, b: Any, rtol: float, atol: float, maxiter: int | None) -> Any:  # noqa: N803
    """0 when ``x`` meets SciPy's stopping test ``|b - A x| <= max(rtol |b|, atol)`` (with a
    small slack for rounding), else a positive number (``maxiter``, or 10 n as SciPy's default)."""
    xs, bs = stop_gradient(x), stop_gradient(b)
    ax = A.matvec(xs) if isinstance(A, LinearOperator) else matvec(A, xs)
    res = fnp.linalg.norm(bs - ax)
    tol = fnp.maximum(rtol * fnp.linalg.norm(bs), atol)
    eps = float(np.finfo(dtype(res)).eps)
    limit = maxiter if maxiter is not None else 10 * shape(b)[0]
    return fnp.where(res <= tol * (1 + 1e3 * eps) + 10 * eps * fnp.linalg.norm(bs), 0, limit)


def cg(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,  # noqa: N803
       maxiter: int | None = None, M: Any = None, callback: Any = None) -> tuple[Any, Any]:  # noqa: N803
    """Conjugate gradients for Hermitian positive definite ``A`` (SciPy's ``cg``): ``(x, info)``.

    ``x`` is differentiable in ``b`` and in ``A``'s values, implicitly at the solution
    (the adjoint is another ``cg`` solve at the same tolerance).

    Example::

        x, info = cg(A, b, rtol=1e-10)
        fg.grad(lambda b: fnp.sum(cg(A, b, rtol=1e-10)[0]))(b)
    """
    _no_callback(callback, "cg")
    return _iterate("cg", A, b, x0, rtol, atol, maxiter, M)


def gmres(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,  # noqa: N803
          restart: int | None = None, maxiter: int | None = None, M: Any = None,  # noqa: N803
          callback: Any = None, callback_type: Any = None) -> tuple[Any, Any]:
    """Restarted GMRES (SciPy's ``gmres``): ``(x, info)``, differentiated implicitly.

    Example::

        x, info = gmres(A, b, rtol=1e-10)
    """
    _no_callback(callback, "gmres")
    return _iterate("gmres", A, b, x0, rtol, atol, maxiter, M, (("restart", restart),))


def bicgstab(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,  # noqa: N803
             maxiter: int | None = None, M: Any = None, callback: Any = None) -> tuple[Any, Any]:  # noqa: N803
    """BiCGSTAB (SciPy's ``bicgstab``): ``(x, info)``, differentiated implicitly.

    Example::

        x, info = bicgstab(A, b, rtol=1e-10)
    """
    _no_callback(callback, "bicgstab")
    return _iterate("bicgstab", A, b, x0, rtol, atol, maxiter, M)


def minres(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, shift: float = 0.0,  # noqa: N803
           maxiter: int | None = None, M: Any = None, callback: Any = None) -> tuple[Any, Any]:  # noqa: N803
    """MINRES for Hermitian ``A`` (SciPy's ``minres``; solves ``(A - shift I) x = b``): ``(x, info)``.

    Example::

        x, info = minres(A, b, rtol=1e-10)
    """
    _no_callback(callback, "minres")
    if shift:
        raise NotImplementedError("minres: shift != 0 is not supported; subtract shift * eye(n) from A instead")
    return _iterate("minres", A, b, x0, rtol, 0.0, maxiter, M)


def _no_callback(callback: Any, name: str) -> None:
    if callback is not None:
        raise NotImplementedError(f"{name}: callback is not supported (the solver may run under a transform)")
