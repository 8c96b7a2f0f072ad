"""``LinearOperator``: a matrix given by its products, accepted by the iterative solvers.

An operator may depend on parameters: ``LinearOperator(shape, matvec=lambda p, v: ...,
params=p)`` with ``p`` any pytree of arrays (traced or not). A solve ``x = A(p)^-1 b`` is
then differentiable in ``p`` by the implicit-function rule (see :mod:`._system`), which
needs only products with ``A`` and its transpose at the solution. Values a ``matvec``
*closes over* cannot be seen by the engine: a traced one raises an error that says to pass
it as ``params`` (funcgrad's rule for closures, as for ``fg.scan`` and ``fg.checkpoint``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ....backend import namespace_of
from ....core import Box, unbox_all
from ....numpy._util import ndim, shape
from ....transforms import vjp
from ....tree_util import tree_flatten, tree_unflatten

__all__ = ["LinearOperator", "OperatorForm"]


class LinearOperator:
    """A linear map given by ``matvec`` (and ``rmatvec``, the conjugate-transposed product),
    as SciPy's; ``cg``, ``gmres``, ``bicgstab`` and ``minres`` accept it.

    With ``params`` (a pytree of arrays), ``matvec(params, v)`` and ``rmatvec(params, v)``
    take them first, and solves are differentiable in ``params`` (as in the right-hand
    side), implicitly at the solution: never through the iterations. ``rmatvec`` may be
    left out when ``matvec`` is written with ``funcgrad.numpy``: products with the
    transpose then come from reverse mode through ``matvec``. A traced value captured by
    the closures instead of passed in ``params`` raises an error.

    Example::

        b = fnp.array([2.0, 3.0, 8.0])
        def f(d):
            op = LinearOperator((3, 3), matvec=lambda d, v: d * v, params=d)
            return fnp.sum(cg(op, b, rtol=1e-12)[0])
        fg.grad(f)(fnp.array([2.0, 3.0, 4.0]))        # -b / d**2
    """

    def __init__(self, shape: tuple[int, int], matvec: Callable[..., Any],
                 rmatvec: Callable[..., Any] | None = None, matmat: Callable[..., Any] | None = None,
                 dtype: Any = None, rmatmat: Callable[..., Any] | None = None, *, params: Any = None):
        m, n = (int(s) for s in shape)
        self.shape = (m, n)
        self.params = params
        leaves, treedef = tree_flatten(params)
        self.leaves = tuple(leaves)
        given = np.dtype(dtype) if dtype is not None else None
        # SciPy's default is float64 ... unless the parameters say otherwise (float32 stays float32)
        self.dtype = given or (fnp.result_type(*self.leaves) if self.leaves else np.dtype(np.float64))
        self.form = OperatorForm(self.shape, matvec, rmatvec, given, treedef if params is not None else None)

    def matvec(self, x: Any) -> Any:
        """``A x``."""
        return self.form.apply(self.leaves, x, "N")

    def rmatvec(self, x: Any) -> Any:
        """``A^H x``."""
        return self.form.apply(self.leaves, x, "H")

    def __matmul__(self, x: Any) -> Any:
        return self.matvec(x)

    dot = __matmul__


class OperatorForm:
    """The static part of a :class:`LinearOperator` (its functions, shape, dtype and the
    structure of its parameters), compared by identity: what a solve's ``System`` holds."""

    __slots__ = ("shape", "matvec", "rmatvec", "dtype", "treedef")

    def __init__(self, shape: tuple[int, int], matvec: Callable[..., Any], rmatvec: Callable[..., Any] | None,
                 dtype: np.dtype | None, treedef: Any):
        self.shape, self.matvec, self.rmatvec, self.dtype, self.treedef = shape, matvec, rmatvec, dtype, treedef

    def __repr__(self) -> str:
        return f"LinearOperator(shape={self.shape})"

    def _call(self, fn: Callable[..., Any], leaves: Any, v: Any) -> Any:
        return fn(v) if self.treedef is None else fn(tree_unflatten(self.treedef, list(leaves)), v)

    def apply(self, leaves: Any, v: Any, trans: str = "N") -> Any:
        """``op(A) v`` with parameters ``leaves``, for ``trans`` 'N' (A), 'T' (A transposed)
        or 'H' (conjugate transposed); a matrix ``v`` column by column."""
        if ndim(v) == 2:
            return fnp.stack([self.apply(leaves, v[:, j], trans) for j in range(shape(v)[1])], axis=1)
        if trans == "N":
            return self._call(self.matvec, leaves, v)
        if self.rmatvec is not None:
            if trans == "H":
                return self._call(self.rmatvec, leaves, v)
            return fnp.conj(self._call(self.rmatvec, leaves, fnp.conj(v)))
        if trans == "T":
            return self._transpose_product(leaves, v)
        return fnp.conj(self._transpose_product(leaves, fnp.conj(v)))

    def _transpose_product(self, leaves: Any, v: Any) -> Any:
        """``A^T v`` by reverse mode through ``matvec`` (which is linear in its vector)."""
        want = fnp.result_type(v, *(() if self.dtype is None else (self.dtype,)))
        start = namespace_of(unbox_all(v)).zeros((self.shape[1],), dtype=want)  # on v's device
        try:
            _, pullback = vjp(lambda u: self._call(self.matvec, leaves, u), start)
            return pullback(v)[0]
        except Exception as e:
            raise NotImplementedError(
                "LinearOperator: this needs products with the transpose (a solve's derivative), and rmatvec was "
                f"not given nor could reverse mode run through matvec ({type(e).__name__}: {e}); give "
                "LinearOperator(shape, matvec, rmatvec)") from e

    def scipy_operator(self, leaves: Any, trans: str, sla: Any, dtype: Any) -> Any:
        """The backend's LinearOperator of ``op(A)`` (``trans``: 'N', 'T' or 'H') with concrete
        parameters ``leaves``."""
        shape = self.shape if trans == "N" else self.shape[::-1]

        def forward(v: Any) -> Any:
            return concrete(self.apply(leaves, v, trans))

        def backward(v: Any) -> Any:
            if trans == "T":  # (A^T)^H = conj(A)
                return concrete(fnp.conj(self.apply(leaves, fnp.conj(v), "N")))
            return concrete(self.apply(leaves, v, "N" if trans == "H" else "H"))
        return sla.LinearOperator(shape, matvec=forward, rmatvec=backward, dtype=dtype)


def concrete(y: Any) -> Any:
    """A product computed on concrete values; a traced result means the closures captured a
    traced value, whose derivative the solve cannot see: an error that says what to do."""
    if isinstance(y, Box):
        raise TypeError(
            f"LinearOperator: matvec closes over a value traced by {y._trace.name}; the solve's derivative "
            "cannot see it. Pass it as params: LinearOperator(shape, matvec=lambda p, v: ..., params=p) "
            "(a pytree of arrays), or give the matrix as a sparse array (funcgrad.scipy.sparse)")
    return y
