"""Sparse arrays with a static pattern and differentiable values.

``csr_array``, ``csc_array`` and ``coo_array`` (and the ``*_matrix`` forms) are built the
ways SciPy builds them. The pattern (:class:`._pattern.Pattern`) is static; ``.data`` may
be a traced value. They are pytrees whose one leaf is ``.data``, so ``fg.grad`` of a
function of a sparse array returns a sparse array of the same pattern holding the
gradient of each stored value, and ``fg.vmap`` maps over a batch of values sharing one
pattern.

Example::

    import funcgrad as fg
    from funcgrad.scipy import sparse

    A = sparse.csr_array(([2.0, 1.0, 3.0], [0, 1, 1], [0, 2, 3]), shape=(2, 2))
    x = fnp.array([1.0, 2.0])
    fg.grad(lambda A: fnp.sum(A @ x))(A).data   # [1., 2., 2.]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ...core import Box
from ...numpy._util import dtype, ndim, shape
from ...tree_util import register_pytree_node
from ._pattern import INDEX, Pattern, canonical_plan, intersection_plan, product_plan, union_plan
from ._values import gather, index_for, scatter_dense, segment_sum

__all__ = ["SparseArray", "csr_array", "csc_array", "coo_array", "csr_matrix", "csc_matrix",
           "coo_matrix", "issparse", "isspmatrix"]

_FORMATS = ("csr", "csc", "coo")


def _scipy_sparse_base() -> tuple[type, ...]:
    try:
        import scipy.sparse as sp
    except ImportError:
        return ()
    return (sp.sparray, sp.spmatrix)


def _is_scipy_sparse(x: Any) -> bool:
    bases = _scipy_sparse_base()
    return bool(bases) and isinstance(x, bases)


def _is_foreign_sparse(x: Any) -> bool:
    """A SciPy or cupyx sparse matrix (or anything shaped like one: format, tocoo)."""
    return _is_scipy_sparse(x) or (hasattr(x, "tocoo") and hasattr(x, "format") and not isinstance(x, SparseArray))


def _as_values(data: Any, dtype_: Any) -> Any:
    if isinstance(data, Box) or (hasattr(data, "shape") and hasattr(data, "dtype")):
        out = data
    else:
        out = np.asarray(data)
    if dtype_ is not None and dtype(out) != np.dtype(dtype_):
        out = fnp.astype(out, np.dtype(dtype_))
    elif dtype(out).kind in "iub":
        out = fnp.astype(out, np.float64)
    if ndim(out) != 1:
        raise ValueError(f"sparse array values (data) must be one-dimensional, got shape {shape(out)}")
    return out


def _host_index(x: Any, name: str) -> np.ndarray:
    from ...backend import to_numpy
    if isinstance(x, Box) or (isinstance(x, (list, tuple)) and any(isinstance(v, Box) for v in x)):
        raise TypeError(f"sparse array {name} must be concrete integers (the pattern is static), got a traced value")
    a = np.asarray(x) if isinstance(x, (list, tuple, np.ndarray)) else to_numpy(x)
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"sparse array {name} must be integers, got dtype {a.dtype}")
    return a.astype(INDEX).reshape(-1)


def _check_coords(row: np.ndarray, col: np.ndarray, shape_: tuple[int, int]) -> None:
    if row.shape != col.shape:
        raise ValueError(f"row and column index arrays differ in length: {row.shape[0]} and {col.shape[0]}")
    for name, idx, n in (("row", row, shape_[0]), ("column", col, shape_[1])):
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
            raise ValueError(f"{name} index {bad} is out of range for a sparse array of shape {shape_} "
                             f"(expected 0 <= {name} < {n})")


def _check_shape(s: Any) -> tuple[int, int]:
    try:
        m, n = (int(v) for v in s)
    except (TypeError, ValueError):
        raise ValueError(f"sparse arrays are two-dimensional: shape must be (rows, columns), got {s!r}") from None
    if m < 0 or n < 0:
        raise ValueError(f"sparse array shape must be non-negative, got {(m, n)}")
    return m, n


class SparseArray:
    """Base of the differentiable sparse arrays (see the module docstring)."""

    format = "coo"
    _is_matrix = False
    __array_priority__ = 10000.0
    __array_ufunc__ = None        # NumPy defers ``ndarray @ A``, ``ndarray * A`` ... to us

    def __init__(self, arg1: Any, shape: Any = None, dtype: Any = None, copy: bool = False):
        data, pattern = _build(arg1, shape, dtype)
        self._set(*_to_order(data, pattern, self.format))

    # ---- construction helpers -------------------------------------------------
    def _set(self, data: Any, pattern: Pattern) -> None:
        if self.format == "coo" and pattern.order != "coo":
            pattern = Pattern(pattern.row, pattern.col, pattern.shape, "coo")
        self._data = data
        self._pattern = pattern

    @classmethod
    def _from(cls, data: Any, pattern: Pattern) -> "SparseArray":
        out = cls.__new__(cls)
        out._set(data, pattern)
        return out

    def _like(self, data: Any, pattern: Pattern | None = None) -> "SparseArray":
        """Same class (and pattern unless given) with other values."""
        return type(self)._from(data, self._pattern if pattern is None else pattern)

    def _in(self, fmt: str, data: Any, pattern: Pattern) -> "SparseArray":
        cls = _CLASSES[(fmt, self._is_matrix)]
        return cls._from(data, pattern)

    # ---- attributes -------------------------------------------------------------
    @property
    def data(self) -> Any:
        """The stored values (differentiable)."""
        return self._data

    @property
    def pattern(self) -> Pattern:
        """The static pattern (rows, columns, shape, order)."""
        return self._pattern

    @property
    def shape(self) -> tuple[int, int]:
        return self._pattern.shape

    @property
    def ndim(self) -> int:
        return 2

    @property
    def nnz(self) -> int:
        return self._pattern.nnz

    @property
    def size(self) -> int:
        return self._pattern.nnz

    @property
    def dtype(self) -> np.dtype:
        return dtype(self._data)

    @property
    def indices(self) -> np.ndarray:
        return self._pattern.indices

    @property
    def indptr(self) -> np.ndarray:
        return self._pattern.indptr

    @property
    def row(self) -> np.ndarray:
        return self._pattern.row

    @property
    def col(self) -> np.ndarray:
        return self._pattern.col

    @property
    def coords(self) -> tuple[np.ndarray, np.ndarray]:
        return self._pattern.row, self._pattern.col

    @property
    def T(self) -> "SparseArray":  # noqa: N802
        return self.transpose()

    @property
    def real(self) -> "SparseArray":
        return self._like(fnp.real(self._data))

    @property
    def imag(self) -> "SparseArray":
        return self._like(fnp.imag(self._data))

    def __repr__(self) -> str:
        return (f"<funcgrad {self.format}_{'matrix' if self._is_matrix else 'array'} of dtype '{self.dtype}' "
                f"with {self.nnz} stored elements and shape {self.shape}>")

    def __len__(self) -> int:
        raise TypeError("sparse array length is ambiguous; use .nnz or .shape[0]")

    def __bool__(self) -> bool:
        raise ValueError("the truth value of a sparse array is ambiguous")

    def __getitem__(self, key: Any) -> Any:
        """``A[i, j]`` (an entry), ``A[rows, cols]`` with slices, integer arrays or masks (a
        sparse array of the selection); differentiable in the values.

        Example::

            A = csr_array(fnp.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
            A[0, 2], A[:, [0, 2]].toarray(), A[[1]].nnz   # 2.0, [[1, 2], [0, 0]], 1
        """
        from ._indexing import getitem
        return getitem(self, key)

    # ---- conversions ----------------------------------------------------------
    def asformat(self, format: str | None, copy: bool = False) -> "SparseArray":  # noqa: A002
        """This array in another format (``'csr'``, ``'csc'``, ``'coo'``); values move
        differentiably (duplicates are summed going to csr/csc)."""
        if format is None or format == self.format:
            return self
        if format not in _FORMATS:
            raise ValueError(f"asformat: unknown or unsupported sparse format {format!r}; expected one of {_FORMATS}")
        return self._in(format, *_to_order(self._data, self._pattern, format))

    def tocsr(self, copy: bool = False) -> "SparseArray":
        return self.asformat("csr")

    def tocsc(self, copy: bool = False) -> "SparseArray":
        return self.asformat("csc")

    def tocoo(self, copy: bool = False) -> "SparseArray":
        return self.asformat("coo")

    def copy(self) -> "SparseArray":
        return self._like(self._data)

    def astype(self, dtype: Any, copy: bool = True) -> "SparseArray":
        return self._like(fnp.astype(self._data, np.dtype(dtype)))

    def toarray(self, order: Any = None, out: Any = None) -> Any:
        """The dense array (differentiable in the values)."""
        p = self._pattern
        return scatter_dense(self._data, p.row, p.col, p.shape)

    def todense(self, order: Any = None, out: Any = None) -> Any:
        return self.toarray()

    def to_scipy(self) -> Any:
        """The SciPy sparse array of the same format (values must be concrete host arrays)."""
        import scipy.sparse as sp
        from ...backend import to_numpy
        if isinstance(self._data, Box):
            raise TypeError("to_scipy: the values are traced; SciPy cannot hold them (use fg.stop_gradient first)")
        p, d = self._pattern, to_numpy(self._data)
        if self.format == "coo":
            return sp.coo_array((d, (p.row, p.col)), shape=p.shape)
        cls = sp.csr_array if self.format == "csr" else sp.csc_array
        return cls((d, p.indices, p.indptr), shape=p.shape)

    # ---- shape ops --------------------------------------------------------------
    def transpose(self, axes: Any = None, copy: bool = False) -> "SparseArray":
        if axes is not None and tuple(axes) != (1, 0):
            raise ValueError("transpose: sparse arrays only swap their two axes (axes=None or (1, 0))")
        p = self._pattern.transpose()
        return self._in(p.order, self._data, p)

    def conj(self) -> "SparseArray":
        return self._like(fnp.conj(self._data))

    conjugate = conj

    def getH(self) -> "SparseArray":  # noqa: N802
        return self.transpose().conj()

    # ---- reductions -------------------------------------------------------------
    def sum(self, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
        """Sum of all entries, or along ``axis`` (0: over rows, 1: over columns)."""
        data = self._data if dtype is None else fnp.astype(self._data, np.dtype(dtype))
        if axis is None:
            return fnp.sum(data)
        if axis not in (0, 1, -1, -2):
            raise ValueError(f"sum: axis must be None, 0 or 1 for a sparse array, got {axis!r}")
        axis = axis % 2
        p = self._pattern
        res = segment_sum(data, p.col if axis == 0 else p.row, p.shape[1 - axis])
        if self._is_matrix:
            return fnp.reshape(res, (1, -1) if axis == 0 else (-1, 1))
        return res

    def mean(self, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
        n = self.shape[0] * self.shape[1] if axis is None else self.shape[axis % 2]
        return self.sum(axis, dtype) / n

    def diagonal(self, k: int = 0) -> Any:
        """The ``k``-th diagonal as a dense vector (differentiable)."""
        m, n = self.shape
        length = max(0, min(m + min(k, 0), n - max(k, 0)))
        sel, pos = self._pattern.cached(("diagonal", k), lambda: _diagonal_plan(self._pattern, k))
        return segment_sum(gather(self._data, sel), pos, length)

    def _nonzero_entries(self, what: str) -> np.ndarray:
        """Positions (in storage order, duplicates summed) of the entries whose value is not
        zero. The pattern would depend on the values, so they must be concrete: traced by
        grad/jvp is fine (their current value is read), staged by jit or batched by vmap is not."""
        from ...backend import to_numpy
        from ...core.batching import BatchBox
        from ...core.staging import StagingBox
        values = self._data
        while isinstance(values, Box):
            if isinstance(values, (StagingBox, BatchBox)):
                raise TypeError(f"{what}: which entries are zero depends on the values, which fg.jit stages or "
                                f"fg.vmap batches; call it outside the transform (the pattern is static)")
            values = values._value
        return np.nonzero(to_numpy(values) != 0)[0].astype(INDEX)

    def nonzero(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows and columns of the stored entries whose value is not zero, as SciPy orders
        them (coo: storage order, duplicates not summed; csr and csc: row by row).

        Example::

            coo_array(([1.0, 0.0], ([0, 1], [1, 0])), shape=(2, 2)).nonzero()   # ([0], [1])
        """
        a = self.tocsr() if self.format == "csc" else self
        keep = a._nonzero_entries("nonzero")
        return a._pattern.row[keep], a._pattern.col[keep]

    def eliminate_zeros(self) -> None:
        """Drop the stored zeros, in place (as SciPy); the values kept stay differentiable.
        The values must be concrete (see :meth:`nonzero`)."""
        keep = self._nonzero_entries("eliminate_zeros")
        p = self._pattern
        self._set(gather(self._data, keep), Pattern(p.row[keep], p.col[keep], p.shape, p.order))

    def setdiag(self, values: Any, k: int = 0) -> None:
        """Set diagonal ``k`` to ``values`` (a scalar, or an array: when shorter than the
        diagonal only its first entries are set, when longer the rest is ignored), in place,
        as SciPy does: the array takes the new pattern (the positions set are stored, zeros
        included) and values that stay differentiable in both the old values and ``values``.

        Example::

            A = csr_array(fnp.array([[1.0, 2.0], [0.0, 0.0]]))
            A.setdiag(fnp.array([5.0, 6.0]))
            A.toarray()   # [[5., 2.], [0., 6.]]
        """
        m, n = self.shape
        k = int(k)
        if not -m < k < n:
            raise ValueError(f"setdiag: k={k} is out of range for a sparse array of shape {self.shape}")
        length = min(m + min(k, 0), n - max(k, 0))
        if not isinstance(values, Box) and not hasattr(values, "shape"):
            values = np.asarray(values, dtype=np.result_type(self.dtype, np.asarray(values).dtype))
        if ndim(values) == 0:
            values = fnp.broadcast_to(values, (length,))
        elif ndim(values) != 1:
            raise ValueError(f"setdiag: values must be a scalar or 1-D, got shape {tuple(shape(values))}")
        values = values[:length]
        count = shape(values)[0]
        i = np.arange(count, dtype=INDEX)
        rows, cols = i - min(k, 0), i + max(k, 0)
        p = self._pattern
        on = (p.col - p.row == k) & (p.row + min(k, 0) < count)   # the positions being set
        keep = np.nonzero(~on)[0].astype(INDEX)
        want = np.result_type(self.dtype, dtype(values))
        old = self._data if dtype(self._data) == want else fnp.astype(self._data, want)
        new = values if dtype(values) == want else fnp.astype(values, want)
        data = fnp.concatenate([gather(old, keep), new])
        joined = Pattern(np.concatenate([p.row[keep], rows]), np.concatenate([p.col[keep], cols]), p.shape, "coo")
        self._set(*_to_order(data, joined, self.format))

    def trace(self, offset: int = 0) -> Any:
        return fnp.sum(self.diagonal(offset))

    def max(self, axis: int | None = None, out: Any = None, *, explicit: bool = False) -> Any:
        """Largest entry, over all or along ``axis`` (implicit zeros count, as in SciPy);
        differentiable in the values. Along an axis the result is dense (SciPy's is a 1-D
        sparse array).

        Example::

            csr_array(fnp.array([[-1.0, 0.0], [0.0, -2.0]])).max()   # 0.0 (an implicit zero)
        """
        from ._extrema import extremum
        _no_explicit(explicit, "max")
        return extremum(self, axis, largest=True)

    def min(self, axis: int | None = None, out: Any = None, *, explicit: bool = False) -> Any:
        """Smallest entry, over all or along ``axis`` (see :meth:`max`)."""
        from ._extrema import extremum
        _no_explicit(explicit, "min")
        return extremum(self, axis, largest=False)

    def argmax(self, axis: int | None = None, out: Any = None, *, explicit: bool = False) -> Any:
        """Position of the first largest entry: flat (C order) for ``axis=None``, else per
        column (``axis=0``: a row index) or per row (``axis=1``: a column index).

        Example::

            csr_array(fnp.array([[1.0, 3.0], [0.0, 2.0]])).argmax()   # 1
        """
        from ._extrema import arg_extremum
        _no_explicit(explicit, "argmax")
        return arg_extremum(self, axis, largest=True)

    def argmin(self, axis: int | None = None, out: Any = None, *, explicit: bool = False) -> Any:
        """Position of the first smallest entry (see :meth:`argmax`)."""
        from ._extrema import arg_extremum
        _no_explicit(explicit, "argmin")
        return arg_extremum(self, axis, largest=False)

    def count_nonzero(self, axis: int | None = None) -> Any:
        """Number of nonzero entries (stored zeros do not count; duplicates are summed first).

        Example::

            coo_array(([1.0, 0.0], ([0, 1], [0, 1])), shape=(2, 2)).count_nonzero()   # 1
        """
        from ._extrema import count_nonzero
        return count_nonzero(self, axis)

    # ---- elementwise ------------------------------------------------------------
    def _map(self, fn: Callable[[Any], Any]) -> "SparseArray":
        return self._like(fn(self._data))

    def __neg__(self) -> "SparseArray":
        return self._map(fnp.negative)

    def __pos__(self) -> "SparseArray":
        return self

    def __abs__(self) -> "SparseArray":
        return self._map(fnp.abs)

    def power(self, n: Any, dtype: Any = None) -> "SparseArray":
        """Entrywise ``data ** n`` (stored entries only, as SciPy)."""
        if not np.isscalar(n):
            raise NotImplementedError("power: the exponent must be a scalar")
        return self._map(lambda d: d ** n)

    def multiply(self, other: Any) -> Any:
        """Entrywise product: with a scalar or a dense array (broadcast) a sparse array of
        this pattern; with a sparse array a csr array of the common pattern."""
        if _is_foreign_sparse(other):
            other = csr_array(other)
        if isinstance(other, SparseArray):
            _check_same_shape(self, other, "multiply")
            pat, wa, wb = intersection_plan(self._pattern, other._pattern)
            a = _at_positions(self._data, wa, pat.nnz)
            b = _at_positions(other._data, wb, pat.nnz)
            return self._in("csr", a * b, pat)
        if np.isscalar(other) or ndim(other) == 0:
            return self._map(lambda d: d * other)
        dense = fnp.broadcast_to(other, self.shape)
        p = self._pattern
        vals = dense[index_for(p.row, dense), index_for(p.col, dense)]
        return self._like(self._data * vals)

    def __mul__(self, other: Any) -> Any:
        if self._is_matrix and not (np.isscalar(other) or ndim(other) == 0):
            return self @ other
        return self.multiply(other)

    def __rmul__(self, other: Any) -> Any:
        if self._is_matrix and not (np.isscalar(other) or ndim(other) == 0):
            return self.__rmatmul__(other)   # spmatrix: x * A is the matrix product
        return self.multiply(other)

    def __truediv__(self, other: Any) -> "SparseArray":
        if not (np.isscalar(other) or ndim(other) == 0):
            raise NotImplementedError("sparse / array: only division by a scalar keeps the pattern; "
                                      "use A.multiply(1 / B) for an entrywise division")
        return self._map(lambda d: d / other)

    def __add__(self, other: Any) -> Any:
        return self._add(other, 1)

    def __radd__(self, other: Any) -> Any:
        return self._add(other, 1)

    def __sub__(self, other: Any) -> Any:
        return self._add(other, -1)

    def __rsub__(self, other: Any) -> Any:
        return (-self)._add(other, 1)

    def _add(self, other: Any, sign: int) -> Any:
        if _is_foreign_sparse(other):
            other = csr_array(other)
        if isinstance(other, SparseArray):
            _check_same_shape(self, other, "+/-")
            pat, target = union_plan(self._pattern, other._pattern)
            vals = fnp.concatenate([self._data, other._data if sign > 0 else -other._data])
            vals = fnp.astype(vals, np.result_type(self.dtype, other.dtype)) if dtype(vals) != np.result_type(
                self.dtype, other.dtype) else vals
            return self._in("csr" if self.format == "coo" else self.format,
                            *_to_order(segment_sum(vals, target, pat.nnz), pat, self.format
                                       if self.format != "coo" else "csr"))
        if np.isscalar(other) or ndim(other) == 0:
            if np.isscalar(other) and other == 0:
                return self
            raise NotImplementedError("adding a nonzero scalar to a sparse array is not supported (as in SciPy); "
                                      "use A.toarray() + c")
        return self.toarray() + (other if sign > 0 else -other)

    # ---- products -------------------------------------------------------------
    def __matmul__(self, other: Any) -> Any:
        if np.isscalar(other) or (not isinstance(other, SparseArray) and not _is_foreign_sparse(other)
                                  and ndim(other) == 0):
            raise ValueError("Scalar operands are not allowed with @, use '*' instead")
        if _is_foreign_sparse(other):
            other = csr_array(other)
        if isinstance(other, SparseArray):
            return _sparse_matmul(self, other)
        from ._ops import matvec
        return matvec(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        if np.isscalar(other) or ndim(other) == 0:
            raise ValueError("Scalar operands are not allowed with @, use '*' instead")
        if _is_foreign_sparse(other):
            return csr_array(other) @ self
        from ._ops import matvec
        other = fnp.asarray(other) if not isinstance(other, Box) else other
        if ndim(other) == 1:
            return matvec(self.T, other)
        return fnp.swapaxes(matvec(self.T, fnp.swapaxes(other, -1, -2)), -1, -2)

    def dot(self, other: Any) -> Any:
        if np.isscalar(other) or ndim(other) == 0:
            return self * other
        return self @ other


def _no_explicit(explicit: bool, what: str) -> None:
    if explicit:
        raise NotImplementedError(f"{what}(explicit=True) (stored entries only) is not supported; "
                                  f"reduce A.data instead")


def _diagonal_plan(p: Pattern, k: int) -> tuple[np.ndarray, np.ndarray]:
    sel = np.nonzero(p.col - p.row == k)[0].astype(INDEX)
    return sel, (p.row[sel] if k >= 0 else p.col[sel]).astype(INDEX)


def _check_same_shape(a: SparseArray, b: SparseArray, what: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{what}: inconsistent shapes {a.shape} and {b.shape}")


def _at_positions(values: Any, where: np.ndarray, n: int) -> Any:
    keep = np.nonzero(where >= 0)[0].astype(INDEX)
    return segment_sum(gather(values, keep), where[keep], n)


def _sparse_matmul(a: SparseArray, b: SparseArray) -> SparseArray:
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: dimension mismatch, {a.shape} @ {b.shape}")
    b_csr = b.tocsr()
    pat, pa, pb, target = product_plan(a._pattern, b_csr._pattern)
    prod = gather(a._data, pa) * gather(b_csr._data, pb)
    return a._in("csr", segment_sum(prod, target, pat.nnz), pat)


def _to_order(data: Any, pattern: Pattern, fmt: str) -> tuple[Any, Pattern]:
    """``(data, pattern)`` stored in ``fmt`` order (csr/csc: sorted, duplicates summed)."""
    if fmt == "coo" or pattern.order == fmt:
        return data, pattern
    new, target, summed = canonical_plan(pattern, fmt)
    if summed:
        return segment_sum(data, target, new.nnz), new
    perm = pattern.cached(("perm", fmt), lambda: _inverse_permutation(target))
    return (data, new) if perm is None else (gather(data, perm), new)


def _inverse_permutation(target: np.ndarray) -> np.ndarray | None:
    """The gather that applies ``target`` (None for the identity)."""
    perm = np.empty_like(target)
    perm[target] = np.arange(target.shape[0], dtype=INDEX)
    return None if np.array_equal(perm, np.arange(perm.shape[0])) else perm


def _build(arg1: Any, shape_: Any, dtype_: Any) -> tuple[Any, Pattern]:
    """Values and pattern from SciPy's constructor arguments."""
    if isinstance(arg1, SparseArray):
        data = arg1._data if dtype_ is None else fnp.astype(arg1._data, np.dtype(dtype_))
        return data, arg1._pattern
    if _is_foreign_sparse(arg1):
        coo = arg1.tocoo()
        ns = type(coo.data).__module__.split(".")[0]
        row, col = (_host_index(coo.row, "row"), _host_index(coo.col, "col"))
        data = _as_values(coo.data if ns != "numpy" else np.asarray(coo.data), dtype_)
        shp = _check_shape(arg1.shape)
        order = "coo" if arg1.format == "coo" else "csr"
        if arg1.format in ("csr", "csc"):   # keep its order (csr/csc) with duplicates summed
            return _to_order(data, Pattern(row, col, shp, "coo"), arg1.format)
        return data, Pattern(row, col, shp, order)
    if isinstance(arg1, tuple) and len(arg1) == 2 and all(isinstance(v, (int, np.integer)) for v in arg1):
        shp = _check_shape(arg1)
        return _as_values(np.zeros(0, dtype=dtype_ or np.float64), None), Pattern([], [], shp, "csr")
    if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple) and len(arg1[1]) == 2:
        data = _as_values(arg1[0], dtype_)
        row, col = _host_index(arg1[1][0], "row"), _host_index(arg1[1][1], "col")
        if shape_ is None:
            shape_ = (int(row.max()) + 1 if row.size else 0, int(col.max()) + 1 if col.size else 0)
        shp = _check_shape(shape_)
        _check_coords(row, col, shp)
        if shape(data)[0] != row.shape[0]:
            raise ValueError(f"data has {shape(data)[0]} values but there are {row.shape[0]} (row, col) indices")
        return data, Pattern(row, col, shp, "coo")
    if isinstance(arg1, tuple) and len(arg1) == 3:
        raise _compressed_needs_class()
    return _from_dense(arg1, shape_, dtype_)


def _compressed_needs_class() -> Exception:
    return TypeError("(data, indices, indptr) is the csr/csc form: build it with csr_array or csc_array")


def _compressed(arg1: tuple[Any, Any, Any], shape_: Any, dtype_: Any, fmt: str) -> tuple[Any, Pattern]:
    data = _as_values(arg1[0], dtype_)
    indices, indptr = _host_index(arg1[1], "indices"), _host_index(arg1[2], "indptr")
    if indptr.shape[0] < 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise ValueError("indptr must start at 0 and be non-decreasing")
    if indptr[-1] != indices.shape[0] or shape(data)[0] != indices.shape[0]:
        raise ValueError(f"indptr[-1] ({int(indptr[-1])}), len(indices) ({indices.shape[0]}) and len(data) "
                         f"({shape(data)[0]}) must agree")
    major = np.repeat(np.arange(indptr.shape[0] - 1, dtype=INDEX), np.diff(indptr))
    if shape_ is None:
        minor_n = int(indices.max()) + 1 if indices.size else 0
        shape_ = (indptr.shape[0] - 1, minor_n) if fmt == "csr" else (minor_n, indptr.shape[0] - 1)
    shp = _check_shape(shape_)
    if (shp[0] if fmt == "csr" else shp[1]) != indptr.shape[0] - 1:
        raise ValueError(f"indptr has {indptr.shape[0]} entries; a {fmt} array of shape {shp} needs "
                         f"{(shp[0] if fmt == 'csr' else shp[1]) + 1}")
    row, col = (major, indices) if fmt == "csr" else (indices, major)
    _check_coords(row, col, shp)
    return _to_order(data, Pattern(row, col, shp, "coo"), fmt)


def _from_dense(arg1: Any, shape_: Any, dtype_: Any) -> tuple[Any, Pattern]:
    from ...backend import to_numpy
    dense = arg1 if isinstance(arg1, Box) or hasattr(arg1, "shape") else np.asarray(arg1)
    if ndim(dense) != 2:
        raise ValueError(f"a sparse array is built from a 2-D dense array, got shape {shape(dense)}")
    if dtype(dense).kind in "iub" or dtype_ is not None:
        dense = fnp.astype(dense, np.dtype(dtype_ or np.float64))
    if isinstance(dense, Box):
        # the pattern must be static: every position of a traced dense array is stored
        m, n = shape(dense)
        row, col = np.divmod(np.arange(m * n, dtype=INDEX), n)
    else:
        host = to_numpy(dense) if not isinstance(dense, np.ndarray) else dense
        row, col = (r.astype(INDEX) for r in np.nonzero(host))
    pattern = Pattern(row, col, tuple(shape(dense)), "csr")
    return dense[index_for(row, dense), index_for(col, dense)], pattern


class coo_array(SparseArray):  # noqa: N801  (SciPy's name)
    """COOrdinate sparse array: ``coo_array((data, (row, col)), shape=...)``, dense, or sparse.

    Duplicates are kept as given and summed when read (as SciPy).

    Example::

        A = coo_array(([1.0, 2.0], ([0, 1], [1, 0])), shape=(2, 2))
        A.toarray()   # [[0, 1], [2, 0]]
    """

    format = "coo"

    def sum_duplicates(self) -> "SparseArray":
        """A coo array with duplicates summed (a new array: values are immutable here;
        SciPy's changes the array in place)."""
        data, p = _to_order(self._data, self._pattern, "csr")
        return self._like(data, Pattern(p.row, p.col, p.shape, "coo"))


class _Compressed(SparseArray):
    def __init__(self, arg1: Any, shape: Any = None, dtype: Any = None, copy: bool = False):
        if isinstance(arg1, tuple) and len(arg1) == 3:
            self._set(*_compressed(arg1, shape, dtype, self.format))
        else:
            super().__init__(arg1, shape, dtype, copy)

    def sum_duplicates(self) -> "SparseArray":
        return self

    def sort_indices(self) -> None:
        """Nothing to do: csr/csc indices are always sorted here."""
        return None

    def sorted_indices(self) -> "SparseArray":
        """This array (its indices are always sorted)."""
        return self

    @property
    def has_sorted_indices(self) -> bool:
        return True

    @property
    def has_canonical_format(self) -> bool:
        return True


class csr_array(_Compressed):  # noqa: N801
    """Compressed Sparse Row array: ``csr_array((data, indices, indptr), shape=...)``,
    ``csr_array((data, (row, col)))``, dense, or a SciPy sparse object.

    Example::

        A = csr_array(([2.0, 1.0, 3.0], [0, 1, 1], [0, 2, 3]), shape=(2, 2))
        A @ fnp.array([1.0, 1.0])   # [3., 3.]
    """

    format = "csr"


class csc_array(_Compressed):  # noqa: N801
    """Compressed Sparse Column array (``csc_array((data, indices, indptr), shape=...)``, ...).

    Example::

        A = csc_array(fnp.array([[1.0, 0.0], [2.0, 3.0]]))
        A.indptr   # [0, 2, 3]
    """

    format = "csc"


class coo_matrix(coo_array):  # noqa: N801
    """``coo_array`` with SciPy's ``spmatrix`` semantics (``*`` is the matrix product)."""

    _is_matrix = True


class csr_matrix(csr_array):  # noqa: N801
    """``csr_array`` with SciPy's ``spmatrix`` semantics (``*`` is the matrix product)."""

    _is_matrix = True


class csc_matrix(csc_array):  # noqa: N801
    """``csc_array`` with SciPy's ``spmatrix`` semantics (``*`` is the matrix product)."""

    _is_matrix = True


_CLASSES: dict[tuple[str, bool], type[SparseArray]] = {
    ("csr", False): csr_array, ("csc", False): csc_array, ("coo", False): coo_array,
    ("csr", True): csr_matrix, ("csc", True): csc_matrix, ("coo", True): coo_matrix,
}

for _cls in _CLASSES.values():
    register_pytree_node(
        _cls,
        lambda a: ((a._data,), a._pattern),
        (lambda c: lambda pattern, leaves: c._from(leaves[0], pattern))(_cls),
    )


def issparse(x: Any) -> bool:
    """True for funcgrad and SciPy sparse arrays and matrices.

    Example::

        issparse(csr_array((2, 2)))   # True
    """
    return isinstance(x, SparseArray) or _is_scipy_sparse(x)


def isspmatrix(x: Any) -> bool:
    """True for the ``*_matrix`` forms (funcgrad's or SciPy's)."""
    if isinstance(x, SparseArray):
        return x._is_matrix
    try:
        import scipy.sparse as sp
    except ImportError:
        return False
    return isinstance(x, sp.spmatrix)
