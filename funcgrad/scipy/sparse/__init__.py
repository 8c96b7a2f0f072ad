"""Differentiable ``scipy.sparse``: sparse arrays with a static pattern and differentiable values.

``csr_array``, ``csc_array``, ``coo_array`` (and the ``*_matrix`` forms) are built as in
SciPy; constructors ``diags``, ``eye``, ``identity``, ``kron``, ``block_diag``, ``bmat``,
``block_array``, ``hstack``, ``vstack``, ``tril``, ``triu``, ``random``, ``random_array``. Sparse arrays are pytrees whose leaf is ``.data``.
``funcgrad.scipy.sparse.linalg`` has the solvers (``spsolve``, ``splu``, ``cg`` ...),
differentiated by adjoint solves. See docs/sparse.md.

Example::

    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad.scipy import sparse

    A = sparse.diags([fnp.array([2.0, 3.0])], [0])
    fg.grad(lambda d: fnp.sum(sparse.diags([d], [0]) @ fnp.ones(2)))(fnp.array([2.0, 3.0]))
"""

from __future__ import annotations

from ._arrays import (SparseArray, coo_array, coo_matrix, csc_array, csc_matrix, csr_array, csr_matrix,
                      issparse, isspmatrix)
from . import _interop  # noqa: F401  (SciPy sparse matrices @ traced values)
from ._pattern import Pattern
from .construct import (block_array, block_diag, bmat, diags, diags_array, eye, eye_array, find, hstack, identity,
                        kron, random, random_array, tril, triu, vstack)

__all__ = [
    "SparseArray", "Pattern", "csr_array", "csc_array", "coo_array", "csr_matrix", "csc_matrix", "coo_matrix",
    "issparse", "isspmatrix", "diags", "diags_array", "eye", "eye_array", "identity", "kron", "block_diag",
    "bmat", "block_array", "hstack", "vstack", "tril", "triu", "find", "random", "random_array", "linalg",
]


def __getattr__(name: str) -> object:
    if name == "linalg":
        import importlib
        return importlib.import_module(f"{__name__}.linalg")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
