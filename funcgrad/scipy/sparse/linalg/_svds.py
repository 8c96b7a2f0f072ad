"""``svds``: the largest singular triplets of a sparse matrix, as eigenpairs of the
Hermitian augmented matrix ``H = [[0, A], [A^H, 0]]``: its eigenvalues are ``+-sigma_i``
(and zeros), the eigenvector of ``sigma_i`` is ``[u_i; v_i] / sqrt(2)``. Computed by the
differentiable ``eigsh`` (:mod:`._eigen`), so singular values and vectors differentiate to
any order in ``A``'s values, with no dense array and no loss of accuracy from ``A^H A``."""

from __future__ import annotations

from typing import Any

import math

import funcgrad.numpy as fnp

from .._arrays import SparseArray, _is_foreign_sparse, csr_array
from ..construct import bmat
from ._eigen import eigsh

__all__ = ["svds"]


def svds(A: Any, k: int = 6, ncv: Any = None, tol: float = 0, which: str = "LM", v0: Any = None,  # noqa: N803
         maxiter: Any = None, return_singular_vectors: Any = True, solver: str = "arpack", rng: Any = None,
         options: Any = None, *, random_state: Any = None) -> Any:
    """The ``k`` largest singular values (ascending, as SciPy returns them) and vectors of a
    sparse ``A`` (SciPy's ``svds``): ``u`` (m, k), ``s`` (k,), ``vh`` (k, n), or ``s`` alone
    with ``return_singular_vectors=False`` (``"u"``/``"vh"``: that one and ``s``).

    Differentiable in ``A``'s values to any order, through ``eigsh`` of ``[[0, A], [A^H, 0]]``.
    Each pair ``(u_i, v_i)`` is unique up to a common sign (a phase, when complex); the
    gauge is ``eigsh``'s: the entry of largest magnitude of ``[u_i; v_i]`` is real and
    positive. Repeated singular values have no differentiable vectors (an error says so).
    Only ``which='LM'`` (the largest) is supported.

    Example::

        A = sparse.random(6, 4, density=0.6, rng=0)
        u, s, vh = svds(A, k=2)
        fg.grad(lambda d: fnp.sum(svds(A._like(d), k=2, return_singular_vectors=False)))(A.data)
    """
    if which != "LM":
        raise NotImplementedError(f"svds: which={which!r} is not supported; only 'LM' (the largest singular values)")
    if solver not in ("arpack", "propack", "lobpcg"):
        raise ValueError(f"svds: solver must be 'arpack', 'propack' or 'lobpcg', got {solver!r}")
    a = A if isinstance(A, SparseArray) else csr_array(A) if _is_foreign_sparse(A) or hasattr(A, "shape") else None
    if a is None:
        raise TypeError(f"svds: A must be a sparse array or a 2-D array, got {type(A).__name__}")
    m, n = a.shape
    if not 0 < k < min(m, n):
        raise ValueError(f"svds: k must satisfy 0 < k < min(A.shape) = {min(m, n)}, got {k}")
    adjoint = a.conj().T if fnp.result_type(a.data).kind == "c" else a.T
    h = bmat([[None, a], [adjoint, None]], format="csr")
    if return_singular_vectors is False:
        return eigsh(h, k=k, which="LA", tol=tol, return_eigenvectors=False)
    s, w = eigsh(h, k=k, which="LA", tol=tol)
    u, v = w[:m] * math.sqrt(2.0), w[m:] * math.sqrt(2.0)
    vh = fnp.conj(v).T if fnp.result_type(v).kind == "c" else v.T
    if return_singular_vectors == "u":
        return u, s, None
    if return_singular_vectors == "vh":
        return None, s, vh
    return u, s, vh
