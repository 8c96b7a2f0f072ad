"""``norm`` and ``onenormest`` of sparse arrays (SciPy's ``scipy.sparse.linalg.norm`` and
``onenormest``), differentiable in the values: reductions of ``|data|`` over the stored
entries (duplicates summed first), never a dense array."""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ....transforms import stop_gradient
from .._arrays import SparseArray, _is_foreign_sparse, csr_array
from .._values import zeros
from ._interface import LinearOperator

__all__ = ["norm", "onenormest"]


def _sparse(x: Any, what: str) -> SparseArray:
    if isinstance(x, LinearOperator):
        raise TypeError(f"{what}: a LinearOperator has no stored entries; give a sparse array")
    if isinstance(x, SparseArray):
        a = x
    elif _is_foreign_sparse(x):
        a = csr_array(x)
    else:
        raise TypeError(f"{what}: x must be a sparse array (funcgrad.scipy.sparse or scipy.sparse), got "
                        f"{type(x).__name__}; for dense arrays use funcgrad.numpy.linalg.{what}")
    return a.tocsr() if a.format == "coo" and a.pattern.has_duplicates() else a


def _magnitudes(a: SparseArray) -> SparseArray:
    return a._like(fnp.abs(a.data))


def norm(x: Any, ord: Any = None, axis: Any = None) -> Any:  # noqa: A002  (SciPy's name)
    """Norm of a sparse array (SciPy's ``scipy.sparse.linalg.norm``), differentiable in its values.

    Matrix norms (``axis`` None or a pair): ``None``/``'fro'`` (Frobenius), ``1``/``-1`` (max/min
    column sum of ``|a_ij|``), ``inf``/``-inf`` (max/min row sum). Vector norms along one
    ``axis``: ``ord`` 2 (default), ``inf``, ``-inf``, ``0`` (count of nonzeros), ``1``, or any
    other power ``p``. ``ord=2`` and ``'nuc'`` of a matrix (singular values) are refused as in
    SciPy (use ``svds``).

    Example::

        A = sparse.csr_array(fnp.array([[3.0, 0.0], [0.0, -4.0]]))
        norm(A), norm(A, 1), norm(A, axis=1)          # 5.0, 4.0, [3., 4.]
        fg.grad(lambda d: norm(A._like(d)))(A.data)    # [0.6, -0.8]
    """
    a = _sparse(x, "norm")
    if axis is None or (isinstance(axis, tuple) and len(axis) == 2):
        if isinstance(axis, tuple) and {int(v) % 2 for v in axis} != {0, 1}:
            raise ValueError(f"norm: axis {axis!r} must name two different axes")
        if axis is not None and tuple(int(v) % 2 for v in axis) == (1, 0):
            a = a.T
        if ord in (None, "fro", "f"):
            return fnp.linalg.norm(a.data)
        if ord in (1, -1, np.inf, -np.inf):
            sums = _magnitudes(a).sum(axis=0 if abs(ord) == 1 else 1)
            sums = fnp.ravel(sums)
            return fnp.max(sums) if ord > 0 else fnp.min(sums)
        if ord in (2, -2, "nuc"):
            raise NotImplementedError(f"norm: ord={ord!r} needs singular values (as in SciPy); use "
                                      f"funcgrad.scipy.sparse.linalg.svds")
        raise ValueError(f"norm: invalid norm order {ord!r} for a matrix; expected None, 'fro', 1, -1, inf or -inf")
    if isinstance(axis, tuple):
        if len(axis) != 1:
            raise ValueError(f"norm: axis must be None, an int or a pair of ints, got {axis!r}")
        axis = axis[0]
    if int(axis) not in (0, 1, -1, -2):
        raise ValueError(f"norm: axis {axis!r} is out of range for a 2-D sparse array")
    axis = int(axis) % 2
    mags = _magnitudes(a)
    if ord is None or ord == 2:
        out = fnp.sqrt(mags.power(2).sum(axis=axis))
    elif ord == np.inf:
        out = mags.max(axis=axis)
    elif ord == -np.inf:
        out = mags.min(axis=axis)
    elif ord == 0:
        out = a.count_nonzero(axis=axis)
    elif ord == 1:
        out = mags.sum(axis=axis)
    elif isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    else:
        out = mags.power(ord).sum(axis=axis) ** (1.0 / ord)
    return fnp.ravel(out)


def onenormest(A: Any, t: int = 2, itmax: int = 5, compute_v: bool = False,  # noqa: N803
               compute_w: bool = False) -> Any:
    """The 1-norm of a sparse matrix (SciPy's ``onenormest``). The stored entries are at hand,
    so the "estimate" is exact (``t`` and ``itmax`` are accepted and not needed) and
    differentiable in the values; with ``compute_v``/``compute_w`` also the unit vector ``v``
    (a column of the identity) with ``||A v||_1 = ||A||_1`` and ``w = A v``.

    Example::

        onenormest(sparse.csr_array(fnp.array([[1.0, -2.0], [3.0, 4.0]])))   # 6.0
    """
    a = _sparse(A, "onenormest")
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"onenormest: A must be square, got shape {a.shape}")
    sums = _magnitudes(a).sum(axis=0)
    est = fnp.max(fnp.ravel(sums))
    if not (compute_v or compute_w):
        return est
    column = fnp.argmax(fnp.ravel(stop_gradient(sums)))
    v = fnp.at(zeros((a.shape[1],), a.data))[fnp.reshape(column, (1,))].set(1.0)
    out: tuple[Any, ...] = (est,) + ((v,) if compute_v else ()) + ((a @ v,) if compute_w else ())
    return out
