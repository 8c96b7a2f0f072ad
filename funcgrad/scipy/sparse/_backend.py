"""The SciPy-like sparse modules for an array namespace: ``scipy.sparse`` for NumPy,
``cupyx.scipy.sparse`` for CuPy, or a namespace's own ``scipy_sparse`` attribute (the
tests' fake device). Sparse kernels (matrix construction, factorizations, iterative
solvers) go through these, so device values never make an implicit trip to the host."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from .._scipy import require_scipy

__all__ = ["sparse_module", "sparse_linalg_module", "native_matrix"]


def sparse_module(xp: Any) -> Any:
    """``scipy.sparse``-like module for arrays of namespace ``xp``."""
    if xp is np:
        require_scipy("sparse")
        return importlib.import_module("scipy.sparse")
    own = getattr(xp, "scipy_sparse", None)
    if own is not None:
        return own
    name = getattr(xp, "__name__", "") or ""
    if name == "cupy" or name.startswith("cupy."):
        try:
            return importlib.import_module("cupyx.scipy.sparse")
        except ImportError as e:
            raise ImportError(f"funcgrad.scipy.sparse on CuPy arrays needs cupyx.scipy.sparse ({e}); "
                              f"install CuPy with: pip install funcgrad[cuda]") from e
    raise NotImplementedError(f"funcgrad.scipy.sparse: no scipy.sparse-like module is known for arrays of "
                              f"namespace {name or xp!r} (not numpy, not cupy, no 'scipy_sparse' attribute)")


def sparse_linalg_module(xp: Any) -> Any:
    """``scipy.sparse.linalg``-like module for arrays of namespace ``xp``."""
    mod = sparse_module(xp)
    sub = getattr(mod, "linalg", None)
    if sub is None:
        sub = importlib.import_module(mod.__name__ + ".linalg")
    return sub


def native_matrix(xp: Any, data: Any, pattern: Any, fmt: str) -> Any:
    """The backend's own csr/csc matrix holding raw ``data`` (already in ``fmt`` order)."""
    mod = sparse_module(xp)
    cls = getattr(mod, f"{fmt}_matrix")
    idx = pattern.indices if xp is np else xp.asarray(pattern.indices)
    ptr = pattern.indptr if xp is np else xp.asarray(pattern.indptr)
    return cls((data, idx, ptr), shape=pattern.shape)
