"""Direct sparse solves: ``spsolve``, ``splu``, ``factorized`` (LU through the backend's
``splu``; derivatives by one adjoint solve with the same factorization)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ....core import Box
from ....numpy._util import ndim, shape
from .._arrays import SparseArray, _is_foreign_sparse, csc_array
from ._system import System, factor, solve

__all__ = ["spsolve", "splu", "spilu", "factorized", "SuperLU", "as_square_sparse"]


def as_square_sparse(A: Any, fmt: str, what: str) -> SparseArray:  # noqa: N803
    """``A`` (funcgrad or SciPy sparse, or dense) as a square sparse array in ``fmt`` order."""
    if isinstance(A, SparseArray):
        out = A.asformat(fmt)
    elif _is_foreign_sparse(A) or hasattr(A, "shape") or isinstance(A, (list, tuple, Box)):
        out = csc_array(A).asformat(fmt)
    else:
        raise TypeError(f"{what}: A must be a sparse array (funcgrad.scipy.sparse or scipy.sparse) or a dense "
                        f"2-D array, got {type(A).__name__}")
    m, n = out.shape
    if m != n:
        raise ValueError(f"{what}: A must be square, got shape {out.shape}")
    return out


def _rhs(b: Any, n: int, what: str) -> Any:
    if _is_foreign_sparse(b) or isinstance(b, SparseArray):
        raise TypeError(f"{what}: b must be a dense vector or matrix (a sparse right-hand side is not supported)")
    if not isinstance(b, Box) and not hasattr(b, "shape"):
        b = np.asarray(b)
    if ndim(b) not in (1, 2) or shape(b)[0] != n:
        raise ValueError(f"{what}: b must have shape ({n},) or ({n}, k) to match A of shape ({n}, {n}), "
                         f"got {tuple(shape(b))}")
    if fnp.result_type(b).kind in "iub":
        b = fnp.astype(b, np.float64)
    return b


def spsolve(A: Any, b: Any, permc_spec: Any = None, use_umfpack: bool = True) -> Any:  # noqa: N803
    """Solve ``A x = b`` for sparse square ``A`` (SciPy's ``spsolve``), differentiable in
    ``A``'s values and in ``b``. The gradient costs one more solve with the same LU
    factorization; the cotangent of ``A`` has ``A``'s pattern (no dense n x n).

    Example::

        A = sparse.csc_array(fnp.array([[4.0, 1.0], [1.0, 3.0]]))
        fg.grad(lambda b: fnp.sum(spsolve(A, b)))(fnp.array([1.0, 2.0]))
    """
    a = as_square_sparse(A, "csc", "spsolve")
    b = _rhs(b, a.shape[0], "spsolve")
    return solve(a.data, b, None, system=System("lu", a.pattern, options=_lu_options(permc_spec=permc_spec)),
                 trans="N")


def _lu_options(**given: Any) -> tuple[tuple[str, Any], ...]:
    """The backend ``splu``'s options that were given (SciPy's names: ``permc_spec`` is the
    column ordering, e.g. ``"MMD_AT_PLUS_A"`` for a structurally symmetric matrix)."""
    return tuple((k, v) for k, v in given.items() if v is not None)


class SuperLU:
    """An LU factorization of a sparse matrix whose ``solve`` is differentiable (in the
    right-hand side and in the matrix's values). ``L``, ``U``, ``perm_r``, ``perm_c`` are
    the backend factorization's (concrete values only).

    Example::

        lu = splu(A)
        x = lu.solve(b)          # A x = b
        y = lu.solve(b, "T")     # A^T y = b
    """

    def __init__(self, a: SparseArray, options: tuple[tuple[str, Any], ...] = ()):
        self._a = a
        self._system = System("lu", a.pattern, options=options)
        self.shape = a.shape
        self.nnz = a.nnz
        self._lu = None if isinstance(a.data, Box) else factor(a.data, self._system)

    def solve(self, rhs: Any, trans: str = "N") -> Any:
        """``op(A)^-1 rhs`` with ``op`` ``'N'`` (A), ``'T'`` (transpose), ``'H'`` (conjugate transpose)."""
        if trans not in ("N", "T", "H"):
            raise ValueError(f"SuperLU.solve: trans must be 'N', 'T' or 'H', got {trans!r}")
        b = _rhs(rhs, self.shape[0], "SuperLU.solve")
        return solve(self._a.data, b, None, system=self._system, trans=trans)

    def _factor_attr(self, name: str) -> Any:
        if self._lu is None:
            raise AttributeError(f"SuperLU.{name}: the factorization of traced values is not available")
        return getattr(self._lu, name)

    L = property(lambda self: self._factor_attr("L"))
    U = property(lambda self: self._factor_attr("U"))
    perm_r = property(lambda self: self._factor_attr("perm_r"))
    perm_c = property(lambda self: self._factor_attr("perm_c"))


def splu(A: Any, permc_spec: Any = None, diag_pivot_thresh: Any = None, relax: Any = None,  # noqa: N803
         panel_size: Any = None, options: Any = None) -> SuperLU:
    """LU factorization of sparse square ``A`` with a differentiable ``solve`` (SciPy's ``splu``).

    Example::

        lu = splu(sparse.csc_array(fnp.array([[2.0, 0.0], [1.0, 1.0]])))
        lu.solve(fnp.array([2.0, 2.0]))   # [1., 1.]
    """
    return SuperLU(as_square_sparse(A, "csc", "splu"),
                   _lu_options(permc_spec=permc_spec, diag_pivot_thresh=diag_pivot_thresh, relax=relax,
                               panel_size=panel_size, options=options))


def factorized(A: Any) -> Callable[[Any], Any]:  # noqa: N803
    """A function ``b -> A^-1 b`` that reuses one factorization (SciPy's ``factorized``).

    Example::

        solve = factorized(A)
        x = solve(b)
    """
    return splu(A).solve


def spilu(A: Any, drop_tol: Any = None, fill_factor: Any = None, drop_rule: Any = None,  # noqa: N803
          permc_spec: Any = None, diag_pivot_thresh: Any = None, relax: Any = None, panel_size: Any = None,
          options: Any = None) -> Any:
    """Incomplete LU factorization, for a preconditioner (SciPy's ``spilu``): the backend's
    own factorization object, whose ``solve`` approximates ``A^-1``. It is not
    differentiated and need not be: a preconditioner changes how fast an iterative solver
    converges, not its solution, and the solvers' derivatives are those of the exact solve.
    Values traced by ``grad``/``jvp`` are read as constants; under ``fg.jit`` or ``fg.vmap``
    build it outside the transform (it needs one concrete matrix).

    Example::

        ilu = spilu(A, drop_tol=1e-4)
        M = LinearOperator(A.shape, matvec=ilu.solve)
        x, info = gmres(A, b, M=M, rtol=1e-10)
    """
    from ....backend import namespace_of
    from ....core.batching import BatchBox
    from ....core.staging import StagingBox
    from .._backend import native_matrix, sparse_linalg_module
    a = as_square_sparse(A, "csc", "spilu")
    data = a.data
    while isinstance(data, Box):
        if isinstance(data, (StagingBox, BatchBox)):
            raise TypeError("spilu: the values are staged by fg.jit or batched by fg.vmap; build the preconditioner "
                            "outside the transform (it needs one concrete matrix and is not differentiated)")
        data = data._value
    xp = namespace_of(data)
    given = _lu_options(drop_tol=drop_tol, fill_factor=fill_factor, drop_rule=drop_rule, permc_spec=permc_spec,
                        diag_pivot_thresh=diag_pivot_thresh, relax=relax, panel_size=panel_size, options=options)
    return sparse_linalg_module(xp).spilu(native_matrix(xp, data, a.pattern, "csc"), **dict(given))
