"""Functions that call the user's function: apply_along_axis, apply_over_axes, piecewise,
vectorize, fromfunction.

They run the user's function on pieces of (possibly traced) arrays and assemble
the results with differentiable operations, so they are differentiable whenever
the user's function is. ``vectorize`` runs the function once, under ``vmap``,
over the broadcast elements instead of once per element.

Example::

    fnp.apply_along_axis(lambda r: fnp.sum(r ** 2), 1, x)
    fnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2])
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from numpy import fromfunction  # noqa: F401  (calls the user's function on index grids: traced closures work)

import funcgrad.numpy as fnp

from ..core import Box
from ..core.batching import BatchBox, BatchTrace, is_batched
from ..core.constant import ConstBox
from ._util import dtype, shape

__all__ = ["apply_along_axis", "apply_over_axes", "piecewise", "vectorize", "fromfunction"]


def _arr(a: Any) -> Any:
    return a if isinstance(a, Box) or hasattr(a, "shape") else fnp.asarray(a)


def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """``numpy.apply_along_axis``: ``func1d`` on every 1-D slice along ``axis``; the result's
    dimensions replace ``axis``. Differentiable when ``func1d`` is.

    Example::

        fnp.apply_along_axis(fnp.diff, 1, x)
    """
    arr = _arr(arr)
    nd = len(shape(arr))
    if not -nd <= axis < nd:
        raise ValueError(f"apply_along_axis: axis {axis} is out of bounds for an array of dimension {nd}")
    axis %= nd
    moved = fnp.moveaxis(arr, axis, -1)
    outer = tuple(shape(moved)[:-1])
    if not int(np.prod(outer, dtype=np.int64)):
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = [_arr(func1d(moved[idx], *args, **kwargs)) for idx in np.ndindex(*outer)]
    rshape = tuple(shape(results[0]))
    for r in results[1:]:
        if tuple(shape(r)) != rshape:
            raise ValueError(f"apply_along_axis: func1d returned shapes {rshape} and {tuple(shape(r))}; "
                             f"it must return the same shape for every slice")
    out = fnp.reshape(fnp.stack(results), outer + rshape)
    r = len(rshape)
    if r == 0:
        return out
    return fnp.moveaxis(out, tuple(range(len(outer), len(outer) + r)), tuple(range(axis, axis + r)))


def apply_over_axes(func: Callable[[Any, int], Any], a: Any, axes: Any) -> Any:
    """``numpy.apply_over_axes``: ``func(a, axis)`` for each axis in turn, keeping dimensions.

    Example::

        fnp.apply_over_axes(fnp.sum, x, [0, 2])
    """
    val = _arr(a)
    n = len(shape(val))
    for axis in np.atleast_1d(axes).tolist():
        axis = int(axis) + n if int(axis) < 0 else int(axis)
        res = _arr(func(val, axis))
        if len(shape(res)) == len(shape(val)):
            val = res
        else:
            res = fnp.expand_dims(res, axis)
            if len(shape(res)) == len(shape(val)):
                val = res
            else:
                raise ValueError("function is not returning an array of the correct shape")
    return val


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    """``numpy.piecewise``: ``funclist[k]`` (a function or a constant) where ``condlist[k]``
    holds; one extra function is the "otherwise" case. Each function sees only its own
    elements (as in NumPy), so a branch that is undefined elsewhere makes no NaN gradient.
    Under ``vmap`` with batched conditions each function sees all elements instead.

    Example::

        fnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2])
    """
    from .indexing import _index_set, _update

    x = _arr(x)
    n2 = len(funclist)
    if _is_single_condition(condlist, x):
        condlist = [condlist]
    condlist = [_arr(c) for c in condlist]
    n = len(condlist)
    if n == n2 - 1:
        rest = fnp.logical_not(fnp.any(fnp.stack(condlist), axis=0)) if n else fnp.ones_like(x, dtype=bool)
        condlist = condlist + [rest]
        n += 1
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = fnp.zeros_like(x)
    for cond, func in zip(condlist, funclist):
        batched = is_batched(cond) or is_batched(x)
        if not callable(func):
            y = fnp.where(cond, fnp.astype(fnp.asarray(func), dtype(x)), y)
        elif batched:
            y = fnp.where(cond, fnp.astype(_arr(func(x, *args, **kw)), dtype(x)), y)
        else:
            from ..backend import to_numpy
            raw = cond
            while isinstance(raw, Box):
                raw = raw._value
            mask = to_numpy(raw).astype(bool)
            if mask.any():
                vals = func(x[mask], *args, **kw)
                vals = _arr(vals)
                vals = fnp.astype(vals, dtype(x)) if dtype(vals) != dtype(x) else vals
                y = _update(_index_set, y, mask, vals)
    return y


def _is_single_condition(condlist: Any, x: Any) -> bool:
    if isinstance(condlist, (list, tuple)):
        if not condlist:
            return False
        first = condlist[0]
        return _is_scalar_bool(first) and len(shape(x)) > 0 and len(condlist) == shape(x)[0] and not any(
            hasattr(c, "shape") and shape(c) for c in condlist)
    return True


def _is_scalar_bool(c: Any) -> bool:
    return isinstance(c, (bool, np.bool_))


class vectorize:
    """``numpy.vectorize``: call ``pyfunc`` elementwise over broadcast arguments.

    On plain arrays this is NumPy's ``vectorize``. With traced arguments the
    function runs once under ``vmap`` over the flattened broadcast elements, so
    the result is differentiable and the function is traced once, not per element
    (``signature=`` is supported on plain arrays only).

    Example::

        f = fnp.vectorize(lambda a, b: fnp.maximum(a, b) ** 2)
        fg.grad(lambda x: fnp.sum(f(x, 0.5)))(x)
    """

    def __init__(self, pyfunc: Callable[..., Any], otypes: Any = None, doc: Any = None, excluded: Any = None,
                 cache: bool = False, signature: Any = None) -> None:
        self.pyfunc = pyfunc
        self.otypes, self.excluded, self.cache, self.signature = otypes, set(excluded or ()), cache, signature
        self.__doc__ = doc if doc is not None else getattr(pyfunc, "__doc__", None)
        self._np = np.vectorize(pyfunc, otypes=otypes, doc=doc, excluded=excluded, cache=cache, signature=signature)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from .. import tree_util
        from ..backend import namespace_of

        leaves = tree_util.tree_leaves((args, kwargs))
        traced = any(isinstance(a, Box) for a in leaves)
        if not traced and namespace_of(*[a for a in leaves if hasattr(a, "shape")]) is np:
            return self._np(*args, **kwargs)
        if self.signature is not None:
            raise NotImplementedError("vectorize(signature=...) on traced values: use fg.vmap directly")
        def is_array(v: Any) -> bool:  # Python scalars stay as they are (broadcast by pyfunc itself)
            return isinstance(v, Box) or hasattr(v, "shape") or isinstance(v, (list, tuple))

        positions = [i for i in range(len(args)) if i not in self.excluded and is_array(args[i])]
        names = [k for k in kwargs if k not in self.excluded and is_array(kwargs[k])]
        vec = [_arr(args[i]) for i in positions] + [_arr(kwargs[k]) for k in names]
        bshape = np.broadcast_shapes(*[tuple(shape(v)) for v in vec]) if vec else ()
        flat = [fnp.reshape(fnp.broadcast_to(v, bshape), (-1,)) for v in vec]

        def one(*elems: Any) -> Any:
            full = list(args)
            for i, e in zip(positions, elems[: len(positions)]):
                full[i] = e
            kw = dict(kwargs)
            for k, e in zip(names, elems[len(positions):]):
                kw[k] = e
            return self.pyfunc(*full, **kw)

        out = _map_leading_axis(one, flat, int(np.prod(bshape, dtype=np.int64)))
        return tree_util.tree_map(lambda o: fnp.reshape(o, bshape), out)


def _map_leading_axis(fn: Callable[..., Any], arrays: list[Any], size: int) -> Any:
    """``fn`` run once over axis 0 of each of ``arrays`` (all of length ``size``) by the
    batching trace: what ``vmap(fn)(*arrays)`` does, here where transforms may not be
    imported (funcgrad.numpy sits below them). Outputs not depending on the batch are repeated."""
    from .. import tree_util

    trace = BatchTrace("vectorize", size)
    with trace:
        out = fn(*[trace.new_input(a, 0) for a in arrays])

    def place(leaf: Any) -> Any:
        if isinstance(leaf, BatchBox) and leaf._trace is trace:
            return fnp.moveaxis(leaf._value, leaf._bdim, 0)
        if type(leaf) is ConstBox:
            leaf = leaf._value
        leaf = fnp.asarray(leaf)
        return fnp.broadcast_to(leaf, (size,) + tuple(shape(leaf)))

    return tree_util.tree_map(place, out)
