"""Index tricks and in-place helpers: ``r_``, ``c_``, ``s_``, ``index_exp``, ``mgrid``, ``ogrid``,
``ndenumerate``, ``ndindex``, ``fill_diagonal``, ``put``, ``place``, ``putmask``, ``copyto``.

``r_``/``c_`` concatenate traced values (slices become NumPy's ranges). The
in-place helpers work on plain arrays exactly as NumPy's and, on traced arrays,
rebind the array to a functional update of itself (as ``a[i] = v`` does), so they
are differentiable in the array and the values. ``s_``, ``index_exp``, ``mgrid``,
``ogrid`` and ``ndindex`` take no arrays: they are NumPy's own.

Example::

    fnp.r_[x, 0.0, fnp.sin(x)]          # concatenated, differentiable in x
    fnp.fill_diagonal(a, v)             # a traced: a is rebound; its gradient flows
"""

from __future__ import annotations

from typing import Any, Iterator, Literal

import numpy as np
from numpy import index_exp, mgrid, ndindex, ogrid, s_  # noqa: F401  (no array inputs)

import funcgrad.numpy as fnp

from ..backend import device_constant
from ..core import Box, unbox_all
from ._labels import gather, label_arrays
from ._util import dtype, shape

__all__ = ["r_", "c_", "s_", "index_exp", "mgrid", "ogrid", "ndindex", "ndenumerate", "fill_diagonal", "put",
           "place", "putmask", "copyto"]


def _is_scalar(x: Any) -> bool:
    return isinstance(x, (int, float, complex, bool, np.generic))


class _Concatenator:
    """``r_[...]`` / ``c_[...]``: NumPy's concatenation shorthand, for traced values too."""

    def __init__(self, axis: int = 0, ndmin: int = 1, trans1d: int = -1, name: str = "r_") -> None:
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        items = []
        for k, item in enumerate(key):
            if isinstance(item, str):
                if k != 0:
                    raise ValueError(f"{self.name}: a string directive must come first")
                if item in ("r", "c"):
                    raise NotImplementedError(f"{self.name}['{item}', ...] builds numpy.matrix, which funcgrad.numpy "
                                              f"does not support; use 2-D arrays")
                vals = [int(v) for v in item.split(",")]
                axis = vals[0]
                if len(vals) > 1:
                    ndmin = vals[1]
                if len(vals) > 2:
                    trans1d = vals[2]
                continue
            if isinstance(item, slice):
                arr = np.r_[item]
            elif _is_scalar(item):
                arr = np.asarray([item])  # placed beside the arrays below
            else:
                arr = item if isinstance(item, Box) or hasattr(item, "shape") else fnp.asarray(item)
            items.append(self._promote(arr, ndmin, trans1d))
        if not items:
            return np.array([])
        arrays = [unbox_all(a) for a in items if isinstance(a, Box) or not isinstance(a, np.ndarray)]
        if arrays:  # host scalars and ranges on the device of the arrays (a no-op on the CPU)
            items = [device_constant(arrays[0], a) if isinstance(a, np.ndarray) else a for a in items]
        return fnp.concatenate(items, axis=axis)

    @staticmethod
    def _promote(arr: Any, ndmin: int, trans1d: int) -> Any:
        nd = len(shape(arr))
        if nd >= ndmin:
            return arr
        arr = fnp.reshape(arr, (1,) * (ndmin - nd) + tuple(shape(arr)))
        if trans1d != -1:
            k2 = ndmin - nd
            k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
            axes = list(range(ndmin))
            arr = fnp.transpose(arr, axes[:k1] + axes[k2:] + axes[k1:k2])
        return arr

    def __len__(self) -> int:
        return 0


r_ = _Concatenator(0, 1, -1, "r_")
c_ = _Concatenator(-1, 2, 0, "c_")


def ndenumerate(arr: Any) -> Iterator[tuple[tuple[int, ...], Any]]:
    """``numpy.ndenumerate``: ``(index, element)`` pairs; the elements stay traced.

    Example::

        for idx, v in fnp.ndenumerate(x): ...
    """
    for idx in np.ndindex(*shape(arr)):
        yield idx, arr[idx]


def _none_traced(*xs: Any) -> bool:
    """Whether no argument is a traced value (NumPy's own function may run)."""
    return not any(isinstance(x, Box) for x in xs)


def _concrete(x: Any, fn: str) -> Any:
    from ..core.batching import BatchBox

    while isinstance(x, Box):
        if isinstance(x, BatchBox):
            raise NotImplementedError(f"{fn}: indices or masks batched by vmap are not supported")
        x = x._value
    from ..backend import to_numpy

    return to_numpy(x) if hasattr(x, "shape") else x


def _rewrite(a: Any, values: Any, fill: Any, fn: str) -> None:
    """Write into ``a`` (in place, or by rebinding a traced ``a``) what ``fill(labels_a, labels_v)``
    does on labels."""
    if not isinstance(a, Box) and not hasattr(a, "__setitem__"):
        raise TypeError(f"{fn}: the first argument must be an array")
    v = values if isinstance(values, Box) or hasattr(values, "shape") else fnp.asarray(values)
    la, lv = label_arrays([a, v])
    lab = la.copy()
    fill(lab, lv)
    a[...] = gather([a, v], lab, dtype(a))


def fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    """``numpy.fill_diagonal`` (in place): differentiable in ``a`` and ``val`` when ``a`` is traced.

    Example::

        a = fnp.zeros((3, 3)); fnp.fill_diagonal(a, x)   # inside a transform
    """
    if _none_traced(a, val) and isinstance(a, np.ndarray):
        return np.fill_diagonal(a, val, wrap)
    _rewrite(a, val, lambda lab, lv: np.fill_diagonal(lab, lv.reshape(-1) if lv.ndim else lv, wrap), "fill_diagonal")
    return None


def put(a: Any, ind: Any, v: Any, mode: Literal["raise", "wrap", "clip"] = "raise") -> None:
    """``numpy.put`` (in place): ``a.flat[ind] = v``.

    Example::

        fnp.put(a, [0, 2], x)
    """
    if _none_traced(a, v, ind) and isinstance(a, np.ndarray):
        return np.put(a, ind, v, mode)
    ind = _concrete(ind, "put")
    _rewrite(a, v, lambda lab, lv: np.put(lab, ind, lv, mode), "put")
    return None


def place(arr: Any, mask: Any, vals: Any) -> None:
    """``numpy.place`` (in place): the ``True`` positions of ``mask`` take ``vals`` in turn.

    Example::

        fnp.place(a, a > 0, x)
    """
    if _none_traced(arr, mask, vals) and isinstance(arr, np.ndarray):
        return np.place(arr, mask, vals)
    mask = _concrete(mask, "place")
    _rewrite(arr, vals, lambda lab, lv: np.place(lab, mask, lv), "place")
    return None


def putmask(a: Any, mask: Any, values: Any) -> None:
    """``numpy.putmask`` (in place): ``a[mask] = values`` with ``values`` repeated as needed.

    Example::

        fnp.putmask(a, a > 0, x)
    """
    if _none_traced(a, mask, values) and isinstance(a, np.ndarray):
        return np.putmask(a, mask, values)
    mask = _concrete(mask, "putmask")
    _rewrite(a, values, lambda lab, lv: np.putmask(lab, mask, lv), "putmask")
    return None


def copyto(dst: Any, src: Any, casting: Literal["no", "equiv", "safe", "same_kind", "unsafe"] = "same_kind",
           where: Any = True) -> None:
    """``numpy.copyto`` (in place): ``dst[...] = src`` where ``where`` holds.

    Example::

        fnp.copyto(a, x, where=mask)
    """
    if _none_traced(dst, src, where) and isinstance(dst, np.ndarray):
        return np.copyto(dst, src, casting=casting, where=where)
    if isinstance(where, np.ndarray):  # a host mask beside device arrays: upload it (cached)
        where = device_constant(unbox_all(dst), where)
    new = fnp.broadcast_to(src, shape(dst)) if where is True else fnp.where(where, src, dst)
    dst[...] = fnp.astype(new, dtype(dst)) if dtype(new) != dtype(dst) else new
    return None
