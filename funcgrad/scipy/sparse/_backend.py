"""The SciPy-like sparse modules for an array namespace: ``scipy.sparse`` for NumPy,
``cupyx.scipy.sparse`` for CuPy, or a namespace's own ``scipy_sparse`` attribute (the
tests' fake device). Sparse kernels (matrix construction, factorizations, iterative
solvers) go through these, so device values never make an implicit trip to the host."""

from __future__ import annotations

import hashlib
import importlib
from collections import OrderedDict
from typing import Any

import numpy as np

from .._scipy import require_scipy

__all__ = ["sparse_module", "sparse_linalg_module", "native_matrix", "device_index"]


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
    idx, ptr = device_index(pattern.indices, xp), device_index(pattern.indptr, xp)
    return cls((xp.ascontiguousarray(data), idx, ptr), shape=pattern.shape)


_ON_DEVICE: "OrderedDict[tuple[Any, ...], Any]" = OrderedDict()
_KEEP = 512


def device_index(idx: np.ndarray, xp: Any) -> Any:
    """Host index array ``idx`` in namespace ``xp``. Uploads are remembered by content (a
    pattern rebuilt each call, as user code does, is uploaded once; the last few hundred
    index arrays are kept)."""
    if xp is np:
        return idx
    key = (id(xp), idx.dtype.str, idx.shape, hashlib.blake2b(idx.tobytes(), digest_size=16).digest())
    hit = _ON_DEVICE.get(key)
    if hit is None:
        hit = _ON_DEVICE[key] = xp.asarray(idx)
        while len(_ON_DEVICE) > _KEEP:
            _ON_DEVICE.popitem(last=False)
    else:
        _ON_DEVICE.move_to_end(key)
    return hit
