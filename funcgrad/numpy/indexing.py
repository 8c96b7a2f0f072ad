"""Indexing: ``x[idx]``, take, take_along_axis, and ``x.at[idx].set/add/...``.

Three primitives carry every derivative here, each the transpose of another,
so higher orders come for free:

* ``getitem(x, idx)``            gather: ``x[idx]``                 (VJP: ``_unindex``)
* ``_unindex(g, idx, shape)``    scatter-add of ``g`` into zeros    (VJP: ``getitem``)
* ``_index_add(x, idx, v)``      ``x`` with ``v`` added at ``idx``   (linear in x and v)
* ``_index_set(x, idx, v)``      ``x`` with ``v`` written at ``idx`` (linear in x and v)

Repeated integer indices accumulate in every scatter-add (``numpy.add.at`` on
the CPU, ``cupyx.scatter_add`` on CuPy), so the VJP of ``x[[0, 0]]`` puts both
cotangents on ``x[0]``.

The index is normalized once per call into a tuple holding no traced values
(indices are never differentiable; a traced index contributes its value), so
a tape node stores it as plain data. NumPy's own indexing does the rest:
basic and advanced indices, boolean masks and NumPy's rules for where the
advanced dimensions go are NumPy's, and a bad index raises NumPy's
``IndexError`` unchanged.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of, to_numpy
from ..core import Box, defjvp, defvjp, primitive, unbox_all
from ..core.batching import BatchBox, defbatch
from ._batching import move_to_front
from ._util import dtype, shape, unbroadcast
from .nondiff import zeros_like as _zeros_like  # plain zeros (fnp.zeros_like may give a ConstBox)

__all__ = [
    "take", "take_along_axis", "put_along_axis", "compress", "extract", "choose", "at", "unique", "bincount",
]


# --------------------------------------------------------------------------
# the index: normalization and classification

def _index_value(item: Box) -> Any:
    """The value of a traced index: differentiation boxes hold the same value, a
    vmap box does not (it holds the whole batch), so that one is refused."""
    while isinstance(item, Box):
        if isinstance(item, BatchBox):
            raise NotImplementedError(
                "indexing with a value batched by vmap (a per-example index) is not supported "
                "yet; index with unbatched values, or vmap over the indexed array only"
            )
        item = item._value
    return item


def _plain_index_item(item: Any, x: Any) -> Any:
    """One entry of an index tuple with traced values stripped (lists become arrays)."""
    if isinstance(item, Box):
        return _index_value(item)
    if isinstance(item, list):
        if any(isinstance(i, (Box, list)) for i in item):
            item = [_plain_index_item(i, x) for i in item]
        xp = namespace_of(x)
        try:
            arr = xp.asarray(item) if item else xp.asarray(item, dtype=np.intp)
        except (ValueError, TypeError):
            return item  # ragged or odd: let the backend's indexing raise its own error
        return arr
    return item


def normalize_index(idx: Any, x: Any = None) -> tuple:
    """``idx`` as an index tuple holding no traced values.

    ``x[i]`` and ``x[(i,)]`` mean the same in NumPy for every non-tuple ``i``, so
    the result is always a tuple. Lists become arrays of ``x``'s namespace.
    """
    if type(idx) is tuple:
        for item in idx:
            if isinstance(item, (Box, list)):
                return tuple(_plain_index_item(i, x) for i in idx)
        return idx
    return (_plain_index_item(idx, x),)


def _is_int_array(item: Any) -> bool:
    """An integer index array of rank >= 1 (the only kind that can repeat a position)."""
    if isinstance(item, (int, slice, type(None), type(Ellipsis), np.integer, bool, np.bool_)):
        return False
    d = getattr(item, "dtype", None)
    if d is None:
        return isinstance(item, (list, tuple))
    return np.dtype(d).kind in "iu" and getattr(item, "ndim", 0) > 0


def may_repeat(idx: tuple) -> bool:
    """True when ``idx`` holds an integer array, so a position can be hit twice."""
    for item in idx:
        if _is_int_array(item):
            return True
    return False


# --------------------------------------------------------------------------
# backend-neutral scatters (raw, in place)

def _scatter_ufunc_at(out: Any, idx: tuple, v: Any, ufunc: str = "add") -> None:
    """``numpy.<ufunc>.at(out, idx, v)`` on ``out``'s own backend (in place).

    NumPy: ``numpy.add.at``; CuPy: ``cupyx.scatter_add``/``scatter_max``/
    ``scatter_min`` (cupyx imported only when a CuPy array shows up); other
    namespaces: their ``<ufunc>.at`` if they have one.
    """
    xp = namespace_of(out)
    if xp is np:
        getattr(np, ufunc).at(out, idx, v)
        return
    if getattr(xp, "__name__", "") == "cupy":
        import cupyx  # noqa: PLC0415 - only CuPy users need it

        fn = {"add": "scatter_add", "maximum": "scatter_max", "minimum": "scatter_min"}.get(ufunc)
        if fn is not None:
            getattr(cupyx, fn)(out, idx, v)
            return
    at = getattr(getattr(xp, ufunc, None), "at", None)
    if at is None:
        raise NotImplementedError(
            f"{getattr(xp, '__name__', xp)} has no {ufunc}.at (scatter with repeated indices), "
            f"which funcgrad.numpy indexing needs here"
        )
    at(out, idx, v)


def _scatter_add(out: Any, idx: tuple, v: Any) -> None:
    """``out[idx] += v`` with repeated positions accumulating (in place)."""
    if may_repeat(idx):
        _scatter_ufunc_at(out, idx, v, "add")
    else:
        out[idx] += v


def _copy(x: Any) -> Any:
    """A fresh, writable array with ``x``'s values (scalars become 0-d arrays)."""
    return namespace_of(x).array(x, copy=True)


def _occurrences(xshape: tuple, idx: tuple, xp: Any) -> tuple:
    """Where each element of ``x[idx]`` lands, and its rank among writes to the same place.

    Returns ``(targets, rank, is_last, ishape)``: flat over the indexed shape
    ``ishape`` (C order), the flat position in ``x`` each element refers to, how
    many earlier elements refer to the same position, and whether it is the
    last of them. Integer work only; nothing is differentiated.
    """
    size = 1
    for n in xshape:
        size *= n
    where = xp.reshape(xp.arange(size, dtype=np.intp), xshape)[idx]
    ishape = tuple(where.shape)
    targets = xp.reshape(where, (-1,))
    n = targets.shape[0]
    try:
        order = xp.argsort(targets, kind="stable")
    except (TypeError, ValueError, NotImplementedError):  # a backend whose sort is stable anyway
        order = xp.argsort(targets)
    s = targets[order]
    first = xp.ones(n, dtype=bool)
    last = xp.ones(n, dtype=bool)
    if n > 1:
        first[1:] = s[1:] != s[:-1]
        last[:-1] = first[1:]
    starts = xp.nonzero(first)[0]
    group = xp.cumsum(first) - 1
    rank_sorted = xp.arange(n, dtype=np.intp) - starts[group] if n else xp.zeros(0, dtype=np.intp)
    rank = xp.empty(n, dtype=np.intp)
    rank[order] = rank_sorted
    is_last = xp.empty(n, dtype=bool)
    is_last[order] = last
    return targets, rank, is_last, ishape


# --------------------------------------------------------------------------
# the primitives

def _getitem_raw(x: Any, idx: tuple) -> Any:
    return x[idx]


_getitem = primitive(_getitem_raw, "getitem")


def getitem(x: Any, idx: Any) -> Any:
    """``x[idx]``, differentiable in ``x`` (what ``Box.__getitem__`` calls).

    Any NumPy index works: integers, slices (with negative steps), ``...``,
    ``None``, integer arrays (repeated positions accumulate in the gradient),
    boolean masks, and mixtures placed by NumPy's rules. Traced values inside
    the index are used for their value; indices carry no derivative.

    Example::

        fg.grad(lambda x: (x[[0, 0, 2]] ** 2).sum())(fnp.ones(3))  # [4., 0., 2.]
    """
    return _getitem(x, normalize_index(idx, x))


def _unindex_raw(g: Any, idx: tuple, shape_: tuple) -> Any:
    out = namespace_of(g).zeros(shape_, dtype=dtype(g))
    if may_repeat(idx):
        _scatter_ufunc_at(out, idx, g, "add")
    else:
        out[idx] = g  # no position is hit twice
    return out


# The transpose of getitem: zeros of ``shape_`` with ``g`` added at ``idx``.
_unindex = primitive(_unindex_raw, "unindex")

defvjp(_getitem, lambda g, ans, x, idx: _unindex(g, idx, shape(x)))
defjvp(_getitem, lambda t, ans, x, idx: _getitem(t, idx))
defvjp(_unindex, lambda g, ans, x, idx, shape_: _getitem(g, idx))
defjvp(_unindex, lambda t, ans, x, idx, shape_: _unindex(t, idx, shape_))


def _index_add_raw(x: Any, idx: tuple, v: Any) -> Any:
    out = _copy(x)
    _scatter_add(out, idx, v)
    return out


_index_add = primitive(_index_add_raw, "index_add")


def _index_set_raw(x: Any, idx: tuple, v: Any) -> Any:
    out = _copy(x)
    xp = namespace_of(out)
    if xp is np or not may_repeat(idx) or not shape(v):
        out[idx] = v  # NumPy: with repeated positions the last write wins
        return out
    # Other backends leave the winner of repeated writes unspecified: write only
    # the last occurrence of each position, as NumPy does.
    targets, _, is_last, ishape = _occurrences(tuple(out.shape), idx, xp)
    v = xp.asarray(v, dtype=out.dtype)
    if v.ndim > len(ishape):  # assignment drops leading unit axes of v
        v = xp.reshape(v, v.shape[v.ndim - len(ishape):])
    vb = xp.reshape(xp.broadcast_to(v, ishape), (-1,))
    flat = xp.reshape(out, (-1,))
    flat[targets[is_last]] = vb[is_last]
    return out


_index_set = primitive(_index_set_raw, "index_set")


def _cotangent_of_values(g_sel: Any, v: Any) -> Any:
    """Sum a cotangent shaped like ``x[idx]`` down to ``v`` (which was broadcast to it)."""
    vs = shape(v)
    gs = shape(g_sel)
    if len(vs) > len(gs):  # assignment drops leading unit axes of v
        g_sel = fnp.reshape(g_sel, (1,) * (len(vs) - len(gs)) + tuple(gs))
    g_v = unbroadcast(g_sel, v)
    want = dtype(v)
    if dtype(g_v) != want and want.kind in "fc":
        g_v = fnp.astype(g_v, want)
    return g_v


def _winners(x: Any, idx: tuple) -> Any:
    """0/1 mask (in ``x``'s dtype) over ``x[idx]``: 1 where that write is the last to its position."""
    xp = namespace_of(x)
    _, _, is_last, ishape = _occurrences(tuple(shape(x)), idx, xp)
    return xp.reshape(is_last, ishape).astype(dtype(x))  # x's visible shape, raw namespace


def _index_set_vjp_v(g: Any, ans: Any, x: Any, idx: tuple, v: Any) -> Any:
    g_sel = _getitem(g, idx)
    if may_repeat(idx):  # only the last write to a position reaches the output
        g_sel = g_sel * _winners(g, idx)
    return _cotangent_of_values(g_sel, v)


defvjp(
    _index_add,
    lambda g, ans, x, idx, v: g,
    lambda g, ans, x, idx, v: _cotangent_of_values(_getitem(g, idx), v),
    argnums=(0, 2),
)
defjvp(
    _index_add,
    lambda t, ans, x, idx, v: t,
    lambda t, ans, x, idx, v: _index_add(_zeros_like(ans), idx, t),
    argnums=(0, 2),
)
defvjp(
    _index_set,
    lambda g, ans, x, idx, v: _index_set(g, idx, 0),
    _index_set_vjp_v,
    argnums=(0, 2),
)
defjvp(
    _index_set,
    lambda t, ans, x, idx, v: _index_set(t, idx, 0),
    lambda t, ans, x, idx, v: _index_set(_zeros_like(ans), idx, t),
    argnums=(0, 2),
)


# --------------------------------------------------------------------------
# functional updates: x.at[idx].set(v) ...

def _as_array(x: Any) -> Any:
    if isinstance(x, Box) or hasattr(x, "shape"):
        return x
    return np.asarray(x)


def _apply_at(x: Any, idx: tuple, v: Any, fn: Callable, ufunc: str | None) -> Any:
    """``x`` with ``fn(x[idx], v)`` applied at ``idx``, repeated positions in turn (``ufunc.at``)."""
    traced = isinstance(x, Box) or isinstance(v, Box)
    xp = namespace_of(x)
    if not traced and ufunc is not None and xp is np:
        out = _copy(x)
        if v is None:
            getattr(np, ufunc).at(out, idx, )
        else:
            getattr(np, ufunc).at(out, idx, v)
        return out
    if not may_repeat(idx):
        cur = _getitem(x, idx)
        return _index_set(x, idx, fn(cur) if v is None else fn(cur, v))
    targets, rank, _, ishape = _occurrences(tuple(shape(x)), idx, xp)
    n_rounds = int(to_numpy(rank.max())) + 1 if rank.shape[0] else 0
    if n_rounds <= 1:  # no position repeats: one gather, one write
        cur = _getitem(x, idx)
        return _index_set(x, idx, fn(cur) if v is None else fn(cur, v))
    # Repeated positions: apply in rounds, each touching every position at most once,
    # in the order NumPy's ufunc.at would (C order over the index).
    xshape = tuple(shape(x))
    out = fnp.reshape(x, (-1,))
    if v is not None:
        v = fnp.asarray(v)
        if len(shape(v)) > len(ishape):
            v = fnp.reshape(v, shape(v)[len(shape(v)) - len(ishape):])
        v = fnp.reshape(fnp.broadcast_to(v, ishape), (-1,))
    for r in range(n_rounds):
        sel = xp.nonzero(rank == r)[0]
        pos = (targets[sel],)
        cur = _getitem(out, pos)
        new = fn(cur) if v is None else fn(cur, _getitem(v, (sel,)))
        out = _index_set(out, pos, new)
    return fnp.reshape(out, xshape)


def _minimum(a: Any, b: Any) -> Any:
    return fnp.minimum(a, b)


def _maximum(a: Any, b: Any) -> Any:
    return fnp.maximum(a, b)


class IndexUpdateRef:
    """``x.at[idx]``: the functional updates of ``x`` at ``idx`` (JAX's API).

    Each method returns a new array and never writes into ``x``. Semantics
    follow NumPy (``x[idx] = v`` and ``numpy.<ufunc>.at``), which JAX's differ
    from in two places: a bad index raises ``IndexError`` (JAX clamps or
    drops), and repeated positions are defined:

    * ``set``: the last write wins (NumPy's behaviour); its gradient w.r.t.
      ``v`` reaches only the winning occurrence.
    * ``add``/``subtract``/``multiply``/``divide``/``power``/``min``/``max``/
      ``apply``: every occurrence applies, in turn (``numpy.<ufunc>.at``).

    ``v`` broadcasts to ``x[idx].shape``. Differentiable w.r.t. ``x`` and ``v``
    to any order, in both modes.
    """

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any):
        self.array = array
        self.index = index

    def _idx(self) -> tuple:
        return normalize_index(self.index, self.array)

    def get(self, mode: str | None = None, fill_value: Any = None) -> Any:
        """``x[idx]`` (``mode`` other than None/'raise' is not supported)."""
        if mode not in (None, "raise", "promise_in_bounds") or fill_value is not None:
            raise NotImplementedError(
                f"x.at[idx].get(mode={mode!r}, fill_value={fill_value!r}): only NumPy's indexing "
                f"(mode=None, out-of-bounds raises IndexError) is supported"
            )
        return _getitem(self.array, self._idx())

    def set(self, values: Any) -> Any:
        """A copy of ``x`` with ``x[idx] = values`` (last write wins on repeated positions)."""
        return _index_set(self.array, self._idx(), values)

    def add(self, values: Any) -> Any:
        """A copy of ``x`` with ``values`` added at ``idx``; repeated positions accumulate."""
        return _index_add(self.array, self._idx(), values)

    def subtract(self, values: Any) -> Any:
        """A copy of ``x`` with ``values`` subtracted at ``idx``; repeated positions accumulate."""
        return _index_add(self.array, self._idx(), -_as_array(values))

    def multiply(self, values: Any) -> Any:
        """A copy of ``x`` with ``x[idx] *= values``; repeated positions multiply in turn."""
        return _apply_at(self.array, self._idx(), values, fnp.multiply, "multiply")

    mul = multiply

    def divide(self, values: Any) -> Any:
        """A copy of ``x`` with ``x[idx] /= values``; repeated positions divide in turn."""
        return _apply_at(self.array, self._idx(), values, fnp.divide, "divide")

    def power(self, values: Any) -> Any:
        """A copy of ``x`` with ``x[idx] **= values``; repeated positions apply in turn."""
        return _apply_at(self.array, self._idx(), values, fnp.power, "power")

    def min(self, values: Any) -> Any:  # noqa: A003 - JAX's name
        """A copy of ``x`` with ``x[idx] = minimum(x[idx], values)`` (``numpy.minimum.at``)."""
        return _apply_at(self.array, self._idx(), values, _minimum, "minimum")

    def max(self, values: Any) -> Any:  # noqa: A003 - JAX's name
        """A copy of ``x`` with ``x[idx] = maximum(x[idx], values)`` (``numpy.maximum.at``)."""
        return _apply_at(self.array, self._idx(), values, _maximum, "maximum")

    def apply(self, func: Callable) -> Any:
        """A copy of ``x`` with ``func`` applied elementwise at ``idx``, once per occurrence.

        ``func`` must be elementwise and written with funcgrad.numpy functions.
        """
        ufunc = func.__name__ if isinstance(func, np.ufunc) else None
        fn = getattr(fnp, func.__name__) if isinstance(func, np.ufunc) else func
        return _apply_at(self.array, self._idx(), None, fn, ufunc)

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"


class IndexUpdateHelper:
    """``x.at``: index it to get an :class:`IndexUpdateRef` (``x.at[idx].set(v)``)."""

    __slots__ = ("array",)

    def __init__(self, array: Any):
        self.array = array

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


_IndexUpdateHelper = IndexUpdateHelper  # the name box_methods uses


def at(x: Any) -> IndexUpdateHelper:
    """JAX's ``x.at`` for any array, traced or not: ``fnp.at(x)[idx].set(v)``.

    Traced values also have it as an attribute (``x.at[idx].add(v)``); plain
    NumPy arrays don't, so use this function on them. The input is never
    modified; a new array is returned.

    Example::

        y = fnp.at(fnp.zeros(3))[[0, 0, 2]].add(1.0)   # array([2., 0., 1.])
    """
    return IndexUpdateHelper(_as_array(x))


# --------------------------------------------------------------------------
# take, take_along_axis, put_along_axis, compress, extract, choose

def _axis_index(axis: int, nd: int, arg: str, fn: str) -> int:
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{fn}: {arg} must be an int or None, got {axis!r}")
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(f"{fn}: {arg}={axis} is out of bounds for an array of dimension {nd}")
    return int(axis) % nd


def _mode_indices(indices: Any, n: int, mode: str, fn: str) -> Any:
    if mode == "raise":
        return indices
    xp = namespace_of(indices)
    ind = xp.asarray(indices)
    if mode == "wrap":
        return ind % n if n else ind
    if mode == "clip":
        return xp.clip(ind, 0, max(n - 1, 0))
    raise ValueError(f"{fn}: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")


def take(a: Any, indices: Any, axis: int | None = None, out: None = None, mode: str = "raise") -> Any:
    """Differentiable ``numpy.take`` (``out=`` is not supported).

    Repeated indices accumulate in the gradient.

    Example::

        fnp.take(x, [2, 0, 2], axis=1)
    """
    if out is not None:
        raise TypeError("take: out= is not supported (funcgrad arrays are never written in place)")
    a = _as_array(a)
    indices = _plain_index_item(indices, unbox_all(a))
    if axis is None:
        flat = fnp.reshape(a, (-1,))
        return _getitem(flat, (_mode_indices(indices, shape(flat)[0], mode, "take"),))
    nd = len(shape(a))
    ax = _axis_index(axis, nd, "axis", "take")
    ind = _mode_indices(indices, shape(a)[ax], mode, "take")
    return _getitem(a, (slice(None),) * ax + (ind,))


def _along_axis_index(arr_shape: tuple, indices: Any, axis: int, fn: str) -> tuple:
    nd = len(arr_shape)
    ind_nd = getattr(indices, "ndim", None)
    if ind_nd is None or np.dtype(indices.dtype).kind not in "iu":
        raise IndexError(f"{fn}: indices must be an integer array, got {type(indices).__name__}")
    if ind_nd != nd:
        raise ValueError(
            f"{fn}: indices and arr must have the same number of dimensions, got "
            f"{ind_nd} and {nd}"
        )
    xp = namespace_of(indices)
    idx = []
    for d, n in enumerate(arr_shape):
        if d == axis:
            idx.append(indices)
        else:
            s = [1] * nd
            s[d] = n
            idx.append(xp.reshape(xp.arange(n, dtype=np.intp), tuple(s)))
    return tuple(idx)


def take_along_axis(arr: Any, indices: Any, axis: int | None = -1) -> Any:
    """Differentiable ``numpy.take_along_axis``; repeated indices accumulate in the gradient.

    Example::

        fnp.take_along_axis(x, fnp.argsort(x, axis=1), axis=1)   # a differentiable sort
    """
    arr = _as_array(arr)
    indices = _plain_index_item(indices, unbox_all(arr))
    if axis is None:
        if getattr(indices, "ndim", None) != 1:
            raise ValueError("take_along_axis: when axis=None, indices must be one-dimensional")
        arr = fnp.reshape(arr, (-1,))
        axis = 0
    nd = len(shape(arr))
    ax = _axis_index(axis, nd, "axis", "take_along_axis")
    return _getitem(arr, _along_axis_index(tuple(shape(arr)), indices, ax, "take_along_axis"))


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None, inplace: bool = True) -> Any:
    """``numpy.put_along_axis``; pass ``inplace=False`` for the differentiable, functional form.

    With ``inplace=True`` (NumPy's behaviour, the default) ``arr`` is written
    in place and None is returned; a traced ``arr`` is rebound to the updated
    value, as ``arr[...] = values`` would be. With ``inplace=False`` a new
    array is returned and ``arr`` is left alone (as in JAX); repeated
    positions keep the last write.

    Example::

        y = fnp.put_along_axis(x, idx, 0.0, axis=1, inplace=False)
    """
    if inplace and not isinstance(arr, Box):
        if isinstance(values, Box):
            raise ValueError(
                "put_along_axis: a plain NumPy array cannot hold traced values; call "
                "put_along_axis(arr, indices, values, axis, inplace=False), which returns the "
                "updated copy (or use fnp.at(arr)[...].set(values))"
            )
        return namespace_of(arr).put_along_axis(arr, indices, values, axis)
    arr = _as_array(arr)
    indices = _plain_index_item(indices, unbox_all(arr))
    xshape = tuple(shape(arr))
    if inplace:  # a traced array: the write rebinds it (see funcgrad.numpy.inplace)
        if axis is None:
            raise ValueError("put_along_axis: axis=None needs inplace=False on a traced array")
        ax = _axis_index(axis, len(xshape), "axis", "put_along_axis")
        arr[_along_axis_index(xshape, indices, ax, "put_along_axis")] = values
        return None
    if axis is None:
        if getattr(indices, "ndim", None) != 1:
            raise ValueError("put_along_axis: when axis=None, indices must be one-dimensional")
        flat = fnp.reshape(arr, (-1,))
        return fnp.reshape(_index_set(flat, (indices,), values), xshape)
    ax = _axis_index(axis, len(xshape), "axis", "put_along_axis")
    return _index_set(arr, _along_axis_index(xshape, indices, ax, "put_along_axis"), values)


def compress(condition: Any, a: Any, axis: int | None = None, out: None = None) -> Any:
    """Differentiable ``numpy.compress`` (``out=`` is not supported)."""
    if out is not None:
        raise TypeError("compress: out= is not supported (funcgrad arrays are never written in place)")
    a = _as_array(a)
    cond = _plain_index_item(condition, unbox_all(a))
    xp = namespace_of(cond) if hasattr(cond, "shape") else namespace_of(a)
    cond = xp.asarray(cond)
    if cond.ndim != 1:
        raise ValueError("compress: condition must be a 1-d array")
    keep = xp.nonzero(cond)[0]
    if axis is None:
        a = fnp.reshape(a, (-1,))
        axis = 0
    ax = _axis_index(axis, len(shape(a)), "axis", "compress")
    n = shape(a)[ax]
    if cond.shape[0] > n:
        # NumPy raises only when a True lies past the end; match that.
        if keep.shape[0] and int(to_numpy(keep[-1])) >= n:
            raise IndexError(
                f"compress: condition has a True at position {int(to_numpy(keep[-1]))}, past the "
                f"length {n} of axis {ax}"
            )
    return _getitem(a, (slice(None),) * ax + (keep,))


def extract(condition: Any, arr: Any) -> Any:
    """Differentiable ``numpy.extract``: ``ravel(arr)[ravel(condition) != 0]``."""
    arr = _as_array(arr)
    cond = _plain_index_item(condition, unbox_all(arr))
    xp = namespace_of(arr)
    cond = xp.reshape(xp.asarray(cond) != 0, (-1,))
    return _getitem(fnp.reshape(arr, (-1,)), (xp.nonzero(cond)[0],))


def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    """Differentiable ``numpy.choose`` (w.r.t. ``choices``; ``out=`` is not supported).

    Example::

        fnp.choose([0, 1, 0], [x, y])   # x[0], y[1], x[2]
    """
    if out is not None:
        raise TypeError("choose: out= is not supported (funcgrad arrays are never written in place)")
    a = _plain_index_item(a, None)
    if isinstance(choices, Box) or hasattr(choices, "shape"):
        choices = [choices[i] for i in range(shape(choices)[0])]
    choices = [_as_array(c) for c in choices]
    n = len(choices)
    xp = namespace_of(*choices)
    a = xp.asarray(a)
    if np.dtype(a.dtype).kind not in "iub":
        raise TypeError(f"choose: a must be an integer array, got dtype {a.dtype}")
    bshape = np.broadcast_shapes(tuple(a.shape), *[tuple(shape(c)) for c in choices])
    if mode == "raise":
        if a.size and (int(to_numpy(a.min())) < 0 or int(to_numpy(a.max())) >= n):
            raise ValueError("choose: invalid entry in choice array (a must hold values in [0, len(choices)))")
    else:
        a = _mode_indices(a, n, mode, "choose")
    stacked = fnp.stack([fnp.broadcast_to(c, bshape) for c in choices])
    grid = tuple(
        xp.reshape(xp.arange(m, dtype=np.intp), tuple(m if k == d else 1 for k in range(len(bshape))))
        for d, m in enumerate(bshape)
    )
    return _getitem(stacked, (xp.broadcast_to(a, bshape),) + grid)


# --------------------------------------------------------------------------
# functions whose values are gathered from (or scattered out of) the input

_unique_raw = primitive(lambda ar, **kwargs: namespace_of(ar).unique(ar, **kwargs), "unique")
_unique_raw.primitive.differentiable = False  # type: ignore[attr-defined]


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, *, equal_nan: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """``numpy.unique``; the unique values are differentiable (each is ``ar`` at its first occurrence).

    The indices, inverse and counts carry no derivative.

    Example::

        fg.grad(lambda x: fnp.unique(x).sum())(fnp.array([2.0, 1.0, 2.0]))   # [1., 1., 0.]
    """
    kwargs: dict = {}
    if not equal_nan:
        kwargs["equal_nan"] = False
    if not sorted:
        kwargs["sorted"] = False
    if axis is not None:
        kwargs["axis"] = axis
    if not isinstance(ar, Box):
        return namespace_of(ar).unique(ar, return_index=return_index, return_inverse=return_inverse,
                                       return_counts=return_counts, **kwargs)
    raw = _index_value(ar)
    res = namespace_of(raw).unique(raw, return_index=True, return_inverse=return_inverse,
                                   return_counts=return_counts, **kwargs)
    first = res[1]
    values = take(ar, first, axis=axis)
    extra = ((first,) if return_index else ()) + tuple(res[2:])
    return (values,) + extra if extra else values


_bincount_nondiff = primitive(lambda x, *args, **kwargs: namespace_of(x).bincount(x, *args, **kwargs), "bincount")
_bincount_nondiff.primitive.differentiable = False  # type: ignore[attr-defined]


def bincount(x: Any, weights: Any = None, minlength: int = 0) -> Any:
    """``numpy.bincount``; differentiable in ``weights``.

    Unlike NumPy (which always returns float64 for weighted counts) float32
    weights give a float32 result, as everywhere in funcgrad.

    Example::

        fg.grad(lambda w: fnp.bincount(idx, w)[0])(w)
    """
    if not isinstance(weights, Box):
        return _bincount_nondiff(x, weights, minlength=minlength)
    xv = _plain_index_item(x, None)
    xp = namespace_of(xv)
    xv = xp.asarray(xv)
    if xv.ndim != 1:
        raise ValueError(f"bincount: x must be one-dimensional, got shape {tuple(xv.shape)}")
    if tuple(shape(weights)) != tuple(xv.shape):
        raise ValueError(
            f"bincount: weights must have the shape of x, {tuple(xv.shape)}, got {tuple(shape(weights))}"
        )
    n = xp.bincount(xv, minlength=minlength).shape[0]  # validates x (non-negative ints)
    w = weights if dtype(weights).kind in "fc" else fnp.astype(weights, np.float64)
    return _unindex(w, (xv,), (n,))


# --------------------------------------------------------------------------
# batching (vmap) rules: prepend a full slice for the batch axis

def _advanced_layout(idx: tuple) -> tuple[bool, int]:
    """(NumPy moves the advanced dimensions to the front, their broadcast rank).

    Integer and boolean arrays are advanced indices; so are boolean scalars,
    and integers once any array is present. When the advanced entries are not
    next to each other NumPy puts their dimensions first.
    """
    positions = []
    rank = 0
    fancy = False
    for k, item in enumerate(idx):
        if isinstance(item, (bool, np.bool_)):
            positions.append(k)
            rank = max(rank, 1)
            fancy = True
            continue
        if isinstance(item, (int, np.integer)):
            positions.append(k)
            continue
        d = getattr(item, "dtype", None)
        if d is None or item is None or isinstance(item, slice):
            continue
        nd = item.ndim
        if np.dtype(d).kind == "b":
            rank = max(rank, 1)
            fancy = True
            positions.append(k)
        elif nd > 0:
            rank = max(rank, nd)
            fancy = True
            positions.append(k)
        else:
            positions.append(k)  # a 0-d integer array counts as an integer
    if not fancy or not positions:
        return False, 0
    return positions[-1] - positions[0] + 1 != len(positions), rank


def _batch_out_dim(idx: tuple) -> int:
    """Where the batch axis lands in ``x[(slice(None),) + idx]`` (x batched in front)."""
    moved, rank = _advanced_layout(idx)
    return rank if moved else 0


def _getitem_batch(args: list, dims: list) -> tuple:
    x, idx = args
    x = move_to_front(x, dims[0])
    return _getitem(x, (slice(None),) + idx), _batch_out_dim(idx)


def _unindex_batch(args: list, dims: list) -> tuple:
    g, idx, shape_ = args
    k = _batch_out_dim(idx)
    if dims[0] != k:
        g = fnp.moveaxis(g, dims[0], k)
    return _unindex(g, (slice(None),) + idx, (shape(g)[k],) + tuple(shape_)), 0


def _update_batch(prim: Callable) -> Callable:
    def rule(args: list, dims: list) -> tuple:
        x, idx, v = args
        dx, _, dv = dims
        size = shape(x)[dx] if dx is not None else shape(v)[dv]
        if dx is None:
            x = fnp.broadcast_to(x, (size,) + tuple(shape(x)))
        else:
            x = move_to_front(x, dx)
        per_shape = tuple(shape(x)[1:])
        xp = namespace_of(x)
        ishape = tuple(xp.broadcast_to(xp.zeros((), dtype=np.int8), per_shape)[idx].shape)
        k = _batch_out_dim(idx)
        n = len(ishape)
        if dv is None:
            vs = tuple(shape(v))
            if len(vs) > n:
                v = fnp.reshape(v, vs[len(vs) - n:])
            elif k and len(vs) < n:
                v = fnp.reshape(v, (1,) * (n - len(vs)) + vs)
            if k:
                v = fnp.expand_dims(v, k)
        else:
            v = move_to_front(v, dv)
            vs = tuple(shape(v)[1:])
            if len(vs) != n:
                vs = vs[len(vs) - n:] if len(vs) > n else (1,) * (n - len(vs)) + vs
                v = fnp.reshape(v, (size,) + vs)
            if k:
                v = fnp.moveaxis(v, 0, k)
        return prim(x, (slice(None),) + idx, v), 0

    return rule


defbatch(_getitem, _getitem_batch)
defbatch(_unindex, _unindex_batch)
defbatch(_index_add, _update_batch(_index_add))
defbatch(_index_set, _update_batch(_index_set))
