"""``LinearOperator``: a matrix given by its products, accepted by the iterative solvers."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["LinearOperator"]


class LinearOperator:
    """A linear map given by ``matvec`` (and ``rmatvec``, the conjugate-transposed product),
    as SciPy's. The iterative solvers accept it; their solution is differentiable in the
    right-hand side (solves with ``rmatvec`` give the gradient). The closures must use
    concrete values: a traced value captured by ``matvec`` raises an error (derivatives
    with respect to an operator's parameters need a sparse array for ``A``).

    Example::

        op = LinearOperator((2, 2), matvec=lambda v: 2 * v, rmatvec=lambda v: 2 * v)
        cg(op, fnp.array([2.0, 4.0]))[0]   # [1., 2.]
    """

    def __init__(self, shape: tuple[int, int], matvec: Callable[[Any], Any],
                 rmatvec: Callable[[Any], Any] | None = None, matmat: Callable[[Any], Any] | None = None,
                 dtype: Any = None, rmatmat: Callable[[Any], Any] | None = None):
        m, n = (int(s) for s in shape)
        self.shape = (m, n)
        self.matvec = matvec
        self.rmatvec = rmatvec
        self.dtype = np.dtype(dtype) if dtype is not None else np.dtype(np.float64)

    def __matmul__(self, x: Any) -> Any:
        return self.matvec(x)

    def scipy_operator(self, trans: str, sla: Any, dtype: Any) -> Any:
        """The backend's LinearOperator of ``op(self)`` (``trans``: 'N', 'T' or 'H')."""
        if trans == "N":
            return sla.LinearOperator(self.shape, matvec=self.matvec, rmatvec=self.rmatvec, dtype=dtype)
        if self.rmatvec is None:
            raise NotImplementedError("LinearOperator: the derivative of a solve needs rmatvec (the product with "
                                      "the conjugate transpose); give LinearOperator(shape, matvec, rmatvec)")
        rmv = self.rmatvec
        if trans == "T":
            def tmv(v: Any) -> Any:
                return rmv(v.conj()).conj()
            return sla.LinearOperator(self.shape[::-1], matvec=tmv, dtype=dtype)
        return sla.LinearOperator(self.shape[::-1], matvec=rmv, rmatvec=self.matvec, dtype=dtype)

