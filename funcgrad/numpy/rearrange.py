"""Functions that rearrange elements: insert, resize, block, partition, sort_complex, trim_zeros.

Differentiable through ``getitem``/``concatenate`` (see ``_labels``): NumPy works
out where each element goes on integer labels, and one gather builds the result.

Example::

    fg.grad(lambda x: fnp.sum(fnp.insert(x, 1, x[0] * 2.0) ** 2))(fnp.ones(3))
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..core import Box
from ._labels import gather, label_arrays, relabel
from ._util import dtype, ndim, shape

__all__ = ["insert", "resize", "block", "partition", "sort_complex", "trim_zeros"]


def _arr(a: Any) -> Any:
    return a if isinstance(a, Box) or hasattr(a, "shape") else fnp.asarray(a)


def _concrete(x: Any, fn: str) -> Any:
    from ..core.batching import BatchBox

    while isinstance(x, Box):
        if isinstance(x, BatchBox):
            raise NotImplementedError(f"{fn}: an index or mask batched by vmap is not supported; index with "
                                      f"values that are the same for every example")
        x = x._value
    return x


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    """``numpy.insert``, differentiable in ``arr`` and ``values``.

    Example::

        fnp.insert(fnp.asarray([1.0, 2.0]), 1, 5.0)   # [1, 5, 2]
    """
    arr, values = _arr(arr), _arr(values)
    obj = _concrete(obj, "insert") if not isinstance(obj, slice) else obj
    la, lv = label_arrays([arr, values])
    return gather([arr, values], np.insert(la, obj, lv, axis=axis), dtype(arr))


def resize(a: Any, new_shape: Any) -> Any:
    """``numpy.resize``: the elements of ``a`` repeated (in C order) to fill ``new_shape``.

    Example::

        fnp.resize(fnp.asarray([1.0, 2.0, 3.0]), (2, 2))   # [[1, 2], [3, 1]]
    """
    a = _arr(a)
    return relabel(lambda la: np.resize(la, new_shape), [a])


def _leaves(x: Any, out: list[Any]) -> Any:
    if isinstance(x, list):
        return [_leaves(v, out) for v in x]
    out.append(_arr(x))
    return len(out) - 1


def block(arrays: Any) -> Any:
    """``numpy.block``: assemble an array from nested lists of blocks (differentiable).

    Example::

        fnp.block([[A, B], [C, D]])
    """
    leaves: list[Any] = []
    nested = _leaves(arrays, leaves)
    labels = label_arrays(leaves)

    def put_labels(n: Any) -> Any:
        return [put_labels(v) for v in n] if isinstance(n, list) else labels[n]

    return gather(leaves, np.block(put_labels(nested)))


def partition(a: Any, kth: Any, axis: int | None = -1, kind: str = "introselect", order: Any = None) -> Any:
    """``numpy.partition`` (the same arrangement as NumPy's, via ``argpartition``), differentiable.

    Example::

        fnp.partition(fnp.asarray([3.0, 1.0, 2.0]), 1)   # [1, 2, 3]
    """
    a = _arr(a)
    if order is not None:
        raise NotImplementedError("partition: order= (structured arrays) is not supported")
    if axis is None:
        a, axis = fnp.reshape(a, (-1,)), 0
    idx = fnp.argpartition(a, kth, axis=axis, kind=kind)
    return fnp.take_along_axis(a, idx, axis=axis)


def sort_complex(a: Any) -> Any:
    """``numpy.sort_complex``: sorted by real part, then imaginary part, as complex (differentiable).

    Example::

        fnp.sort_complex(fnp.asarray([1 + 2j, 1 - 1j, 0.5]))
    """
    a = _arr(a)
    d = dtype(a)
    if d.kind != "c":
        cd = np.complex64 if d in (np.dtype(np.float32), np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.uint8),
                                   np.dtype(np.uint16), np.dtype(np.float16)) else np.complex128
        a = fnp.astype(a, cd)
    # by imaginary part, then stably by real part: lexicographic (real, imag), batchable
    o1 = fnp.argsort(fnp.imag(a), axis=-1, kind="stable")
    o2 = fnp.argsort(fnp.take_along_axis(fnp.real(a), o1, axis=-1), axis=-1, kind="stable")
    return fnp.take_along_axis(a, fnp.take_along_axis(o1, o2, axis=-1), axis=-1)


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """``numpy.trim_zeros``: drop leading ('f') and/or trailing ('b') zeros (differentiable in the
    kept values; where to cut is read from the values, so not under vmap).

    Example::

        fnp.trim_zeros(fnp.asarray([0.0, 1.0, 2.0, 0.0]))   # [1, 2]
    """
    filt = _arr(filt)
    from ..backend import to_numpy

    mask = to_numpy(_concrete(filt, "trim_zeros")) != 0
    nd = mask.ndim
    axes = range(nd) if axis is None else [a % nd for a in np.atleast_1d(axis)]
    trim = trim.lower()
    index = [slice(None)] * nd
    for ax in axes:
        other = tuple(i for i in range(nd) if i != ax)
        nz = np.flatnonzero(mask.any(axis=other) if other else mask)
        if nz.size == 0:
            index[ax] = slice(0, 0)
        else:
            index[ax] = slice(int(nz[0]) if "f" in trim else 0, int(nz[-1]) + 1 if "b" in trim else mask.shape[ax])
    return filt[tuple(index)]
