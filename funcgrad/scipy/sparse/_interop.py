"""Plain SciPy sparse matrices meeting traced values (``A_scipy @ x`` in unchanged user
code under ``fg.grad``/``jvp``/``vmap``/``jit``): the matrix is read as a constant
funcgrad sparse array and the product is differentiated like any other.

SciPy's ``_matmul_dispatch`` converts the other operand with ``numpy.asanyarray``; a
traced value answers that call (from SciPy's ``_matmul_dispatch`` only) with an opaque
0-d object array, on which SciPy returns NotImplemented, so Python calls the traced
value's ``__rmatmul__`` / ``__rmul__``, which come here. Any other SciPy sparse path that
would convert a traced value raises an error naming funcgrad.scipy.sparse.
"""

from __future__ import annotations

from typing import Any

from ...numpy.box_methods import register_foreign_operand
from ._arrays import _is_scipy_sparse, csr_array, isspmatrix

__all__: list[str] = []


def _handle(op: str, left: Any, right: Any) -> Any:
    if _is_scipy_sparse(left):
        a = csr_array(left)
        if op == "matmul" or isspmatrix(left):
            return a @ right
        return a.multiply(right)
    b = csr_array(right)
    if op == "matmul" or isspmatrix(right):
        return left @ b
    return b.multiply(left)


register_foreign_operand(_is_scipy_sparse, _handle)
