"""Differentiable ``scipy.sparse.linalg``: direct solves (``spsolve``, ``splu``,
``factorized``, ``spsolve_triangular``), iterative solvers (``cg``, ``gmres``,
``bicgstab``, ``minres``) and least squares (``lsqr``, ``lsmr``) with implicit derivatives, ``LinearOperator`` (with
differentiable ``params``), ``eigsh`` (eigenvalues and eigenvectors, real symmetric or
complex Hermitian), ``svds``, ``expm_multiply``, ``norm``, ``onenormest``.

Every solve is differentiable in the right-hand side and in the matrix's values by the
implicit-function rule: one adjoint solve (reusing the LU factorization for direct
solves), the matrix cotangent read only at the stored positions.

Example::

    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad.scipy import sparse
    from funcgrad.scipy.sparse.linalg import spsolve

    A = sparse.csc_array(fnp.array([[4.0, 1.0], [1.0, 3.0]]))
    fg.grad(lambda d: fnp.sum(spsolve(A._like(d), fnp.ones(2))))(A.data)
"""

from __future__ import annotations

from ._direct import SuperLU, factorized, spilu, splu, spsolve
from ._eigen import eigsh
from ._expm import expm_multiply
from ._interface import LinearOperator
from ._iterative import bicgstab, cg, gmres, minres
from ._least_squares import lsmr, lsqr
from ._norms import norm, onenormest
from ._svds import svds
from ._system import SingularMatrixError
from ._triangular import spsolve_triangular

__all__ = ["spsolve", "spsolve_triangular", "splu", "spilu", "factorized", "SuperLU", "cg", "gmres", "bicgstab", "minres",
           "lsqr", "lsmr", "LinearOperator", "eigsh", "svds", "expm_multiply", "norm", "onenormest", "SingularMatrixError"]
