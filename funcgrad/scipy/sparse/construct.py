"""Constructors of sparse arrays, as in ``scipy.sparse``: ``diags``, ``eye``, ``identity``,
``kron``, ``block_diag``, ``bmat``/``block_array``, ``hstack``, ``vstack``, ``tril``, ``triu``,
``random``/``random_array``.

Values given as (possibly traced) arrays stay differentiable; the patterns are computed on
the host from the shapes and offsets.

Example::

    import funcgrad.numpy as fnp
    from funcgrad.scipy import sparse

    n = 4
    lap = sparse.diags([-fnp.ones(n - 1), 2 * fnp.ones(n), -fnp.ones(n - 1)], [-1, 0, 1])
    lap.toarray()[0]   # [2., -1., 0., 0.]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import funcgrad.numpy as fnp

from ...numpy._util import dtype, ndim, shape
from .._random_state import numpy_generator
from ._arrays import _CLASSES, SparseArray, coo_array, csr_array
from ._pattern import INDEX, Pattern
from ._values import gather

__all__ = ["diags", "diags_array", "eye", "eye_array", "identity", "kron", "block_diag", "bmat", "block_array",
           "hstack", "vstack", "tril", "triu", "find", "random", "random_array"]


def _assemble(parts: Sequence[tuple[Any, np.ndarray, np.ndarray]], shape_: tuple[int, int], format: str | None,
              default: str, dtype_: Any = None) -> SparseArray:
    """A sparse array in ``format`` from coo parts ``(values, row, col)``."""
    fmt = format or default
    cls = _CLASSES.get((fmt, False))
    if cls is None:
        raise ValueError(f"format must be 'csr', 'csc' or 'coo' (or None), got {format!r}")
    parts = [p for p in parts if shape(p[0])[0] > 0] or list(parts[:1])
    if not parts:
        vals: Any = np.zeros(0, dtype=dtype_ or np.float64)
        row = col = np.zeros(0, dtype=INDEX)
    else:
        want = np.result_type(*[dtype(p[0]) for p in parts]) if dtype_ is None else np.dtype(dtype_)
        vals = fnp.concatenate([fnp.astype(p[0], want) if dtype(p[0]) != want else p[0] for p in parts])
        row = np.concatenate([p[1] for p in parts]).astype(INDEX)
        col = np.concatenate([p[2] for p in parts]).astype(INDEX)
    return cls(coo_array._from(vals, Pattern(row, col, shape_, "coo")))


def _values(v: Any) -> Any:
    if hasattr(v, "shape") or hasattr(v, "_trace"):
        return v
    return np.asarray(v, dtype=np.result_type(np.asarray(v).dtype, np.float64)
                      if np.asarray(v).dtype.kind in "iub" else None)


def diags_array(diagonals: Any, /, *, offsets: Any = 0, shape: Any = None, format: str | None = None,
                dtype: Any = None) -> SparseArray:
    """Sparse array from diagonals (SciPy's ``diags_array``); a scalar diagonal is broadcast.

    Example::

        diags_array([fnp.array([1.0, 2.0])], offsets=[1], shape=(3, 3)).toarray()
    """
    return diags(diagonals, offsets, shape, format, dtype)


def diags(diagonals: Any, offsets: Any = 0, shape: Any = None, format: str | None = None,
          dtype: Any = None) -> SparseArray:
    """Sparse array with the given ``diagonals`` at ``offsets`` (SciPy's ``diags``; default
    format csr). Diagonals may be traced.

    Example::

        diags([fnp.ones(2), fnp.array([2.0, 3.0, 4.0])], [1, 0]).toarray()
    """
    single = np.isscalar(offsets) or np.ndim(offsets) == 0
    if single:
        diagonals, offsets = [diagonals], [int(offsets)]
    offsets = [int(k) for k in np.atleast_1d(offsets)]
    if len(diagonals) != len(offsets):
        raise ValueError(f"diags: {len(diagonals)} diagonals but {len(offsets)} offsets")
    if len(set(offsets)) != len(offsets):
        raise ValueError("diags: repeated offsets")
    diagonals = [_values(d) for d in diagonals]
    if shape is None:
        lens = [shape_of(d) for d in diagonals]
        if not any(n is not None for n in lens):
            raise ValueError("diags: give shape when every diagonal is a scalar")
        m = max(n + abs(k) for n, k in zip(lens, offsets) if n is not None)
        shape = (m, m)
    m, n = int(shape[0]), int(shape[1])
    parts = []
    for d, k in zip(diagonals, offsets):
        length = max(0, min(m + min(k, 0), n - max(k, 0)))
        if ndim(d) == 0:
            d = fnp.broadcast_to(d, (length,))
        elif ndim(d) != 1:
            raise ValueError(f"diags: each diagonal must be a scalar or 1-D, got shape {fnp.shape(d)}")
        if fnp.shape(d)[0] < length:
            raise ValueError(f"diags: diagonal {k} has {fnp.shape(d)[0]} entries; shape {(m, n)} needs {length}")
        d = d[:length] if fnp.shape(d)[0] > length else d
        i = np.arange(length, dtype=INDEX)
        parts.append((d, i - min(k, 0), i + max(k, 0)))
    return _assemble(parts, (m, n), format, "csr", dtype)


def shape_of(d: Any) -> int | None:
    return None if ndim(d) == 0 else int(fnp.shape(d)[0])


def eye(m: int, n: int | None = None, k: int = 0, dtype: Any = float, format: str | None = None) -> SparseArray:
    """Sparse identity (ones on diagonal ``k``); default format csr.

    Example::

        eye(3, k=1).toarray()
    """
    n = m if n is None else n
    length = max(0, min(m + min(k, 0), n - max(k, 0)))
    return diags([np.ones(length, dtype=np.dtype(dtype))], [k], (m, n), format, dtype)


def eye_array(m: int, n: int | None = None, *, k: int = 0, dtype: Any = float, format: str | None = None) -> SparseArray:
    """SciPy's ``eye_array`` (keyword-only form of :func:`eye`)."""
    return eye(m, n, k, dtype, format)


def identity(n: int, dtype: Any = "d", format: str | None = None) -> SparseArray:
    """Sparse ``n`` x ``n`` identity.

    Example::

        identity(2).nnz   # 2
    """
    return eye(n, n, 0, dtype, format)


def _sparse(a: Any) -> SparseArray:
    if isinstance(a, SparseArray):
        return a
    return csr_array(a)


def kron(A: Any, B: Any, format: str | None = None) -> SparseArray:  # noqa: N803
    """Kronecker product of two sparse (or dense) arrays, differentiable in both.

    Example::

        kron(eye(2), csr_array(fnp.array([[1.0, 2.0]]))).shape   # (2, 4)
    """
    a, b = _sparse(A).tocoo(), _sparse(B).tocoo()
    pa = np.repeat(np.arange(a.nnz, dtype=INDEX), b.nnz)
    pb = np.tile(np.arange(b.nnz, dtype=INDEX), a.nnz)
    mb, nb = b.shape
    row = a.row[pa] * mb + b.row[pb]
    col = a.col[pa] * nb + b.col[pb]
    vals = gather(a.data, pa) * gather(b.data, pb)
    return _assemble([(vals, row, col)], (a.shape[0] * mb, a.shape[1] * nb), format, "coo")


def bmat(blocks: Any, format: str | None = None, dtype: Any = None) -> SparseArray:
    """Sparse array from a 2-D grid of sparse blocks (``None`` for zero blocks).

    Example::

        bmat([[eye(2), None], [None, 2 * eye(1)]]).shape   # (3, 3)
    """
    grid = [list(r) for r in blocks]
    if not grid or any(len(r) != len(grid[0]) for r in grid):
        raise ValueError("bmat: blocks must be a non-empty rectangular 2-D grid")
    conv = [[None if b is None else _sparse(b).tocoo() for b in r] for r in grid]
    heights = [_one({b.shape[0] for b in r if b is not None}, f"block row {i}", "rows") for i, r in enumerate(conv)]
    widths = [_one({b.shape[1] for b in (r[j] for r in conv) if b is not None}, f"block column {j}", "columns")
              for j in range(len(conv[0]))]
    r0 = np.concatenate([[0], np.cumsum(heights)]).astype(INDEX)
    c0 = np.concatenate([[0], np.cumsum(widths)]).astype(INDEX)
    parts = [(b.data, b.row + r0[i], b.col + c0[j]) for i, r in enumerate(conv) for j, b in enumerate(r)
             if b is not None]
    return _assemble(parts, (int(r0[-1]), int(c0[-1])), format, "coo", dtype)


def _one(sizes: set[int], where: str, what: str) -> int:
    if len(sizes) > 1:
        raise ValueError(f"bmat: the blocks of {where} have different numbers of {what}: {sorted(sizes)}")
    if not sizes:
        raise ValueError(f"bmat: {where} has only None blocks, its size is unknown")
    return sizes.pop()


def block_diag(mats: Sequence[Any], format: str | None = None, dtype: Any = None) -> SparseArray:
    """Block-diagonal sparse array of ``mats``.

    Example::

        block_diag([eye(2), eye(3)]).shape   # (5, 5)
    """
    mats = list(mats)
    return bmat([[m if i == j else None for j in range(len(mats))] for i, m in enumerate(mats)]
                if len(mats) > 1 else [[mats[0]]], format, dtype)


def hstack(blocks: Sequence[Any], format: str | None = None, dtype: Any = None) -> SparseArray:
    """Stack sparse arrays side by side.

    Example::

        hstack([eye(2), eye(2)]).shape   # (2, 4)
    """
    return bmat([list(blocks)], format, dtype)


def vstack(blocks: Sequence[Any], format: str | None = None, dtype: Any = None) -> SparseArray:
    """Stack sparse arrays vertically.

    Example::

        vstack([eye(2), eye(2)]).shape   # (4, 2)
    """
    return bmat([[b] for b in blocks], format, dtype)


def random(m: int, n: int, density: float = 0.01, format: str = "coo", dtype: Any = None,
           rng: Any = None, random_state: Any = None, data_rvs: Any = None) -> SparseArray:
    """Random sparse array (pattern and values from SciPy's ``scipy.sparse.random`` with the
    given ``rng``: a seed, a ``numpy.random.Generator`` or ``RandomState``, or a ``fg.random``
    key, which seeds NumPy's generator with its 64 bits; ``random_state`` is SciPy's older name).

    Example::

        random(5, 5, density=0.4, rng=0).nnz   # 10
        random(5, 5, density=0.4, rng=fg.random.PRNGKey(0)).nnz   # 10
    """
    import scipy.sparse as sp
    if not 0 <= density <= 1:
        raise ValueError(f"random: density must be between 0 and 1, got {density}")
    gen = rng if rng is not None else random_state
    if gen is not None and not isinstance(gen, (int, np.integer, np.random.Generator, np.random.RandomState)):
        gen = numpy_generator(gen, "sparse.random")  # a fg.random key (or a clear error)
    a = sp.random(m, n, density=density, format="coo", dtype=dtype, rng=gen, data_rvs=data_rvs)
    return _assemble([(np.asarray(a.data), a.row.astype(INDEX), a.col.astype(INDEX))], (m, n), format, "coo")




def block_array(blocks: Any, *, format: str | None = None, dtype: Any = None) -> SparseArray:
    """SciPy's ``block_array`` (the sparse-array spelling of :func:`bmat`).

    Example::

        block_array([[eye(2), None], [None, eye(1)]]).shape   # (3, 3)
    """
    return bmat(blocks, format, dtype)


def _triangle(A: Any, k: int, format: str | None, lower: bool) -> SparseArray:  # noqa: N803
    a = _sparse(A).tocoo()
    keep = (a.col - a.row <= k) if lower else (a.col - a.row >= k)
    sel = np.nonzero(keep)[0].astype(INDEX)
    return _assemble([(gather(a.data, sel), a.row[sel], a.col[sel])], a.shape, format, "coo")


def tril(A: Any, k: int = 0, format: str | None = None) -> SparseArray:  # noqa: N803
    """The entries on and below diagonal ``k`` (SciPy's ``tril``; default format coo),
    differentiable in the values.

    Example::

        tril(csr_array(fnp.array([[1.0, 2.0], [3.0, 4.0]]))).toarray()   # [[1, 0], [3, 4]]
    """
    return _triangle(A, int(k), format, lower=True)


def triu(A: Any, k: int = 0, format: str | None = None) -> SparseArray:  # noqa: N803
    """The entries on and above diagonal ``k`` (SciPy's ``triu``; default format coo).

    Example::

        triu(csr_array(fnp.array([[1.0, 2.0], [3.0, 4.0]])), k=1).toarray()   # [[0, 2], [0, 0]]
    """
    return _triangle(A, int(k), format, lower=False)


def random_array(shape: tuple[int, int], *, density: float = 0.01, format: str = "coo", dtype: Any = None,
                 rng: Any = None, data_sampler: Any = None, random_state: Any = None) -> SparseArray:
    """SciPy's ``random_array`` (the shape-first spelling of :func:`random`).

    Example::

        random_array((5, 5), density=0.4, rng=0).nnz   # 10
    """
    if len(shape) != 2:
        raise ValueError(f"random_array: funcgrad's sparse arrays are 2-D, got shape {shape}")
    return random(int(shape[0]), int(shape[1]), density, format, dtype, rng, random_state, data_sampler)


def find(A: Any) -> tuple[np.ndarray, np.ndarray, Any]:  # noqa: N803
    """Rows, columns and values of the nonzero entries (SciPy's ``find``; duplicates summed,
    stored zeros left out). The values are differentiable; which entries are nonzero is read
    from the concrete values (not under ``fg.jit`` or ``fg.vmap``).

    Example::

        find(csr_array(fnp.array([[0.0, 2.0], [3.0, 0.0]])))   # ([0, 1], [1, 0], [2., 3.])
    """
    a = _sparse(A).tocsr()
    keep = a._nonzero_entries("find")
    return a.row[keep], a.col[keep], gather(a.data, keep)
