"""The static part of a sparse array: where its stored entries are.

A :class:`Pattern` holds the row and column of every stored entry (host NumPy integer
arrays), the shape and the order the entries are stored in: ``"csr"`` (row-major, no
duplicates), ``"csc"`` (column-major, no duplicates) or ``"coo"`` (as given; duplicates
allowed, summed wherever they are read, as SciPy does). Everything here is index work on
the host, done once per pattern; the values never pass through it. Functions that move
values return *plans* (index arrays) that :mod:`._values` applies to the values with
differentiable gathers and scatter-adds.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import numpy as np

__all__ = ["Pattern", "canonical_plan", "product_plan", "union_plan", "intersection_plan"]

INDEX = np.intp


class Pattern:
    """Rows, columns, shape and storage order of a sparse array's entries (immutable).

    Compared and hashed by content, so a pattern is static data for ``fg.jit`` and pytrees.

    Example::

        p = Pattern(np.array([0, 1]), np.array([1, 0]), (2, 2), "coo")
        p.nnz   # 2
    """

    __slots__ = ("row", "col", "shape", "order", "_key", "_indptr", "_cache")

    def __init__(self, row: Any, col: Any, shape: tuple[int, int], order: str):
        self.row = np.ascontiguousarray(row, dtype=INDEX)
        self.col = np.ascontiguousarray(col, dtype=INDEX)
        self.row.setflags(write=False)
        self.col.setflags(write=False)
        self.shape = (int(shape[0]), int(shape[1]))
        self.order = order
        digest = hashlib.blake2b(self.row.tobytes() + b"|" + self.col.tobytes(), digest_size=16).hexdigest()
        self._key = (self.shape, order, digest)
        self._indptr: np.ndarray | None = None
        self._cache = _plans_for(self._key)

    @property
    def nnz(self) -> int:
        return int(self.row.shape[0])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pattern) and (self is other or self._key == other._key)

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Pattern(shape={self.shape}, nnz={self.nnz}, order={self.order!r})"

    @property
    def indptr(self) -> np.ndarray:
        """Compressed pointers of a csr (over rows) or csc (over columns) pattern."""
        if self.order not in ("csr", "csc"):
            raise AttributeError("indptr: only csr and csc patterns have compressed pointers")
        if self._indptr is None:
            major, n = (self.row, self.shape[0]) if self.order == "csr" else (self.col, self.shape[1])
            ptr = np.zeros(n + 1, dtype=INDEX)
            np.cumsum(np.bincount(major, minlength=n), out=ptr[1:])
            ptr.setflags(write=False)
            self._indptr = ptr
        return self._indptr

    @property
    def indices(self) -> np.ndarray:
        """Minor indices of a csr (columns) or csc (rows) pattern."""
        if self.order == "csr":
            return self.col
        if self.order == "csc":
            return self.row
        raise AttributeError("indices: only csr and csc patterns have compressed indices")

    def transpose(self) -> "Pattern":
        """The transposed pattern; the values keep their positions (csr <-> csc)."""
        order = {"csr": "csc", "csc": "csr"}.get(self.order, "coo")
        return Pattern(self.col, self.row, (self.shape[1], self.shape[0]), order)

    def cached(self, key: Any, make: Any) -> Any:
        """Memoized host plan ``make()`` under ``key`` (plans depend on the pattern only)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def has_duplicates(self) -> bool:
        return bool(self.cached("dups", lambda: _keys(self.row, self.col, self.shape, "csr").shape[0]
                                != np.unique(_keys(self.row, self.col, self.shape, "csr")).shape[0]))


_PLANS: "OrderedDict[tuple[Any, ...], dict[Any, Any]]" = OrderedDict()
_KEEP_PLANS = 64


def _plans_for(key: tuple[Any, ...]) -> dict[Any, Any]:
    """The plan cache shared by every Pattern of this content (a pattern rebuilt on each
    call, as user code does, finds its plans again); the most recent few are kept."""
    plans = _PLANS.get(key)
    if plans is None:
        plans = _PLANS[key] = {}
        while len(_PLANS) > _KEEP_PLANS:
            _PLANS.popitem(last=False)
    else:
        _PLANS.move_to_end(key)
    return plans


def _keys(row: np.ndarray, col: np.ndarray, shape: tuple[int, int], order: str) -> np.ndarray:
    out: np.ndarray = col.astype(np.int64) * shape[0] + row if order == "csc" else row.astype(np.int64) * shape[1] + col
    return out


def canonical_plan(p: Pattern, order: str) -> tuple[Pattern, np.ndarray, bool]:
    """Plan of the conversion of ``p`` to csr or csc order.

    Returns ``(new_pattern, target, summed)``: entry ``k`` of ``p`` goes to position
    ``target[k]`` of the new pattern. Without duplicates (``summed`` False) ``target`` is a
    permutation, and the new values are ``values[argsort(target)]``; with duplicates the
    values are scatter-added at ``target``.
    """
    def make() -> tuple[Pattern, np.ndarray, bool]:
        keys = _keys(p.row, p.col, p.shape, order)
        uniq, inverse = np.unique(keys, return_inverse=True)
        inverse = inverse.astype(INDEX).reshape(-1)
        if order == "csc":
            row, col = uniq % p.shape[0], uniq // p.shape[0]
        else:
            row, col = uniq // p.shape[1], uniq % p.shape[1]
        return Pattern(row, col, p.shape, order), inverse, uniq.shape[0] != keys.shape[0]
    return p.cached(("canonical", order), make)  # type: ignore[no-any-return]


def product_plan(a: Pattern, b_csr: Pattern) -> tuple[Pattern, np.ndarray, np.ndarray, np.ndarray]:
    """Plan of ``A @ B`` (``b_csr`` in csr order): pairs ``(pa, pb)`` of entries with
    ``col(A) == row(B)``, their products summed at ``target`` of the csr result pattern."""
    indptr = b_csr.indptr
    counts = indptr[a.col + 1] - indptr[a.col]
    pa = np.repeat(np.arange(a.nnz, dtype=INDEX), counts)
    first = np.repeat(indptr[a.col] - (np.cumsum(counts) - counts), counts)
    pb = first + np.arange(pa.shape[0], dtype=INDEX)
    shape = (a.shape[0], b_csr.shape[1])
    keys = a.row[pa].astype(np.int64) * shape[1] + b_csr.col[pb]
    uniq, target = np.unique(keys, return_inverse=True)
    out = Pattern(uniq // shape[1], uniq % shape[1], shape, "csr")
    return out, pa, pb, target.astype(INDEX).reshape(-1)


def union_plan(a: Pattern, b: Pattern) -> tuple[Pattern, np.ndarray]:
    """Plan of ``A + B``: the csr pattern of both and where each entry of ``a`` then ``b`` goes."""
    joined = Pattern(np.concatenate([a.row, b.row]), np.concatenate([a.col, b.col]), a.shape, "coo")
    out, target, _ = canonical_plan(joined, "csr")
    return out, target


def intersection_plan(a: Pattern, b: Pattern) -> tuple[Pattern, np.ndarray, np.ndarray]:
    """Plan of the elementwise product: csr pattern of the common positions and, for each
    entry of ``a`` and ``b`` (duplicates included), its position there or -1."""
    ka = np.unique(_keys(a.row, a.col, a.shape, "csr"))
    kb = np.unique(_keys(b.row, b.col, b.shape, "csr"))
    common = np.intersect1d(ka, kb, assume_unique=True)
    out = Pattern(common // a.shape[1], common % a.shape[1], a.shape, "csr")

    def where(p: Pattern) -> np.ndarray:
        k = _keys(p.row, p.col, p.shape, "csr")
        pos = np.searchsorted(common, k)
        hit = (pos < common.shape[0]) & (common[np.minimum(pos, max(common.shape[0] - 1, 0))] == k) \
            if common.shape[0] else np.zeros(k.shape, bool)
        return np.where(hit, pos, -1).astype(INDEX)
    return out, where(a), where(b)
