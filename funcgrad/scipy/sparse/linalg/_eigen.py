"""``eigsh``: a few eigenvalues (and eigenvectors) of a symmetric sparse matrix, through the
backend's ``eigsh``. Eigenvalues are differentiable in the values: for a simple eigenvalue
``d lam_i = v_i^T dA v_i``, so ``data_bar[k] = sum_i g_i v_i[row_k] v_i[col_k]`` (never a
dense n x n). Eigenvectors are returned (unique up to sign; for a repeated eigenvalue only
their span is defined), but their derivatives are refused with an error rather than given
wrongly."""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ....backend import namespace_of
from ....core import defprimitive
from ....numpy._batching import move_to_front
from ....numpy._util import shape
from .._backend import native_matrix, sparse_linalg_module
from .._pattern import Pattern
from .._values import gather, segment_sum
from ._direct import as_square_sparse

__all__ = ["eigsh"]


def _eigsh_raw(data: Any, *, pattern: Pattern, k: int, which: str, tol: float) -> tuple[Any, Any]:
    xp = namespace_of(data)
    mat = native_matrix(xp, data, pattern, "csr")
    n = pattern.shape[0]
    fn = sparse_linalg_module(xp).eigsh
    start = xp.ones(n, dtype=data.dtype)
    w, v = fn(mat, k=k, which=which, tol=tol, v0=start)
    order = xp.argsort(w)
    return w[order].astype(data.dtype), v[:, order].astype(data.dtype)


def _vjp(g: tuple[Any, Any], ans: tuple[Any, Any], data: Any, **kw: Any) -> Any:
    gw, gv = g
    if gv is not None and not _is_zero(gv):
        raise NotImplementedError("eigsh: derivatives of the eigenvectors are not implemented (only the "
                                  "eigenvalues are differentiable); use return_eigenvectors=False")
    p: Pattern = kw["pattern"]
    v = ans[1]
    return fnp.sum(gather(v, p.row) * gather(v, p.col) * gw, axis=1)


def _is_zero(x: Any) -> bool:
    try:
        return bool(fnp.all(x == 0))
    except Exception:
        return False


def _jvp(t: Any, ans: tuple[Any, Any], data: Any, **kw: Any) -> tuple[Any, Any]:
    p: Pattern = kw["pattern"]
    v = ans[1]
    tw = fnp.sum(fnp.reshape(t, (-1, 1)) * gather(v, p.row) * gather(v, p.col), axis=0)
    return tw, _NoVectorTangent.make(v)


class _NoVectorTangent:
    @staticmethod
    def make(v: Any) -> Any:
        return fnp.full(shape(v), np.nan, dtype=fnp.result_type(v))  # NaN: never a finite wrong number


def _batch(args: list[Any], dims: list[Any], **kw: Any) -> tuple[Any, Any]:
    data = move_to_front(args[0], dims[0])
    outs = [_eigsh(data[i], **kw) for i in range(shape(data)[0])]
    return (fnp.stack([o[0] for o in outs]), fnp.stack([o[1] for o in outs])), (0, 0)


_eigsh = defprimitive(_eigsh_raw, name="sparse_eigsh", vjp=_vjp, jvp=_jvp, batch=_batch, multiple_results=True)


def eigsh(A: Any, k: int = 6, M: Any = None, sigma: Any = None, which: str = "LM", v0: Any = None,  # noqa: N803
          ncv: Any = None, maxiter: Any = None, tol: float = 0, return_eigenvectors: bool = True,
          Minv: Any = None, OPinv: Any = None, mode: str = "normal") -> Any:  # noqa: N803
    """``k`` eigenvalues (ascending) and eigenvectors of a real symmetric sparse ``A`` (SciPy's
    ``eigsh``; ``which`` 'LM', 'SM', 'LA', 'SA' or 'BE'). Eigenvalues are differentiable in
    ``A``'s values (simple eigenvalues); eigenvectors are unique up to sign, and their
    derivatives are not implemented (an error, or NaN tangents in forward mode).

    Example::

        w = eigsh(A, k=2, which="LA", return_eigenvectors=False)
        fg.grad(lambda d: fnp.sum(eigsh(A._like(d), k=1, return_eigenvectors=False)))(A.data)
    """
    if M is not None or sigma is not None or Minv is not None or OPinv is not None or mode != "normal":
        raise NotImplementedError("eigsh: generalized problems and shift-invert (M, sigma, Minv, OPinv, mode) "
                                  "are not supported")
    a = as_square_sparse(A, "csr", "eigsh")
    if fnp.result_type(a.data).kind == "c":
        raise NotImplementedError("eigsh: complex Hermitian matrices are not supported; give real symmetric values")
    n = a.shape[0]
    if not 0 < k < n:
        raise ValueError(f"eigsh: k must satisfy 0 < k < n = {n}, got {k}")
    w, v = _eigsh(a.data, pattern=a.pattern, k=int(k), which=which, tol=float(tol))
    return (w, v) if return_eigenvectors else w
