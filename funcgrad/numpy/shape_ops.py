"""Shape and layout primitives (reshape, transpose, concatenate, split, pad, ...) and their rules.

Almost everything here is linear in its array argument: the JVP is the
function applied to the tangent (``def_linear``) and the VJP is the inverse
layout operation (reshape back, transpose by the inverse permutation, slice
the cotangent of a concatenation, sum the cotangent of a tile ...).

Functions that take a list of arrays (``concatenate``, ``stack``) are thin
wrappers around a primitive that takes the arrays as varargs; their rules
are ``vjp_all``/``jvp_all`` rules that handle every argument in one call, so
any number of arguments works and a call costs O(output size) in every mode.

Private helpers with their own rules: ``_take_slice``/``_embed_slice`` (a
basic slice and its adjoint, used by the rules of concatenate, stack, split
and pad), ``_take_axis``/``_scatter_axis`` (a static gather along an axis and
its scatter-add adjoint: per-element ``repeat`` and the non-constant ``pad``
modes) and ``_diag_embed`` (the adjoint of ``diagonal``).

Every primitive here, the private ones included, has a batching rule (vmap):
the batch axis goes first and the axis parameters shift by one; ``reshape``
and ``broadcast_to`` put the batch size in front of the target shape (for
``order='F'`` the batch axis goes last, where Fortran order keeps each example
contiguous); ``concatenate``/``stack`` broadcast their unbatched members along
a new leading axis of the batch size; ``axis=None`` (roll, repeat, squeeze,
flip, transpose) means the example's axes, never the batch axis.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any, Callable, Protocol, Sequence, cast

import numpy as np

import funcgrad.numpy as fnp

from ..core.trace import contains_box
from ..backend import device_constant, namespace_of, scatter_add, to_numpy
from ..core import Box, defprimitive, get_primitive, unbox_all
from ..core.reverse import ArraySpec
from ._batching import fallback as _fallback, move_to_front
from ._batching import batch_size as _batch_size
from ._typing import Array, ArrayLike, Axis, ShapeLike
from ._util import backend_function, dtype as _dtype, ndim as _ndim, shape as _shape, unbroadcast, pack

__all__ = [
    "reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "swapaxes", "moveaxis",
    "expand_dims", "squeeze", "broadcast_to", "broadcast_arrays", "broadcast_shapes",
    "atleast_1d", "atleast_2d", "atleast_3d", "concatenate", "concat", "stack", "hstack", "vstack",
    "dstack", "column_stack", "split", "array_split", "hsplit", "vsplit", "dsplit", "unstack",
    "tile", "repeat", "flip", "fliplr", "flipud", "roll", "rot90", "pad", "diag", "diagflat",
    "diagonal", "trace", "triu", "tril", "meshgrid",
]

broadcast_shapes = np.broadcast_shapes  # shapes only: nothing to differentiate
_AxisError = getattr(np, "exceptions", np).AxisError  # numpy.exceptions is NumPy >= 1.25


# --------------------------------------------------------------------------
# small helpers

def _any_box(items: Sequence[Any]) -> bool:
    """True when an item is traced or is a (nested) list or tuple holding a traced value."""
    for a in items:
        if isinstance(a, Box) or (type(a) in (list, tuple) and contains_box(a)):
            return True
    return False


def _norm_axis(axis: Any, nd: int) -> int:
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"axis must be an integer, got {axis!r}") from None
    if not -nd <= a < nd:
        raise _AxisError(a, nd)
    return a % nd


def _as_arrays(items: Sequence[Any]) -> list[Any]:
    """Arrays and boxes as they are; lists and scalars made arrays of the others' namespace."""
    items = [pack(a) for a in items]  # lists holding traced values: one traced array each
    xp = namespace_of(*[a for a in items if isinstance(a, Box) or hasattr(a, "shape")])
    # Python scalars become 0-d arrays by a fill on the device (no host-to-device copy).
    return [a if isinstance(a, Box) or hasattr(a, "shape") else (xp.asarray(a) if xp is np else _scalar_array(xp, a))
            for a in items]


def _unpack(arrays: Any) -> list[Any]:
    """The sequence argument of concatenate/stack as a list (a traced array iterates over axis 0)."""
    if isinstance(arrays, Box):
        return list(unstack(arrays))
    return list(arrays)


def _ct_for(g: Any, x: Any) -> Any:
    """Cotangent ``g`` in the dtype of the argument ``x`` it belongs to (mixed-dtype inputs)."""
    gd, xd = _dtype(g), _dtype(x)
    if gd == xd or xd.kind not in "fc":
        return g
    if gd.kind == "c" and xd.kind != "c":
        g = fnp.real(g)
    return g if _dtype(g) == xd else fnp.astype(g, xd)


def _tangent_for(t: Any, ans: Any) -> Any:
    """Tangent ``t`` in the dtype of the output ``ans`` (mixed-dtype inputs)."""
    ad = _dtype(ans)
    return t if _dtype(t) == ad else fnp.astype(t, ad)


def _axis_index(axis: int, index: Any) -> tuple[Any, ...]:
    return (slice(None),) * axis + (index,)


# --------------------------------------------------------------------------
# batching (vmap) helpers. A rule ``rule(args, dims, **kwargs) -> (out, out_dim)``
# puts the batch axis of the array argument first and shifts the primitive's axis
# parameters past it; the parameters (axes, shapes, widths ...) are static, so a
# batched parameter (never produced by funcgrad itself) takes the loop fallback.


def _loop(fn: Any, args: Sequence[Any], dims: Sequence[Any], kwargs: dict[Any, Any]) -> tuple[Any, ...]:
    return _fallback(get_primitive(fn), list(args), list(dims), _batch_size(args, dims), kwargs)


def _shift_axes(axis: Any, nd: int) -> Any:
    """Axis parameter (an int or a sequence, negative allowed) for an input with a leading batch axis."""
    if isinstance(axis, numbers.Integral) or (hasattr(axis, "ndim") and axis.ndim == 0):
        return _norm_axis(axis, nd) + 1
    return tuple(_norm_axis(a, nd) + 1 for a in axis)


def _front_rule(fn: Any, adjust: Any, n_results: int = 0) -> Any:
    """Batching rule for ``fn(x, *params, **kwargs)`` batched in ``x`` alone.

    The batch axis of ``x`` goes first and ``adjust(per_example_shape, *params,
    **kwargs) -> (params, kwargs)`` rewrites the parameters for that input.
    """

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, ...]:
        if any(d is not None for d in dims[1:]):
            return _loop(fn, args, dims, kwargs)
        x = move_to_front(args[0], dims[0])
        params, kw = adjust(_shape(x)[1:], *args[1:], **kwargs)
        return fn(x, *params, **kw), ((0,) * n_results if n_results else 0)

    return rule


def _flatten_examples(x: Any) -> Any:
    """Batch-first ``x`` as (batch, per-example size): numpy's ``axis=None`` per example."""
    s = _shape(x)
    return _reshape(x, (s[0], math.prod(s[1:])))


# --------------------------------------------------------------------------
# private linear pairs used by the rules

def _take_slice_raw(x: Any, index: tuple[Any, ...]) -> Any:
    # The trailing Ellipsis makes integer indexing return a 0-d array, never a scalar.
    return x[index + (Ellipsis,)]


def _embed_slice_raw(g: Any, index: tuple[Any, ...], shape: tuple[Any, ...]) -> Any:
    xp = namespace_of(g)
    out = xp.zeros(shape, dtype=_dtype(g))
    out[index] = g
    return out


_take_slice = defprimitive(
    _take_slice_raw, name="take_slice", vjp=lambda g, ans, x, index: _embed_slice(g, index, _shape(x)),
    linear=True,
    batch_from=lambda fn: _front_rule(fn, lambda per, index: (((slice(None),) + tuple(index),), {})),
)


def _embed_slice_batch(args: Any, dims: Any) -> Any:
    if any(d is not None for d in dims[1:]):
        return _loop(_embed_slice, args, dims, {})
    g, index, shape = args
    g = move_to_front(g, dims[0])
    gs = _shape(g)
    if len(gs) - 1 < len(shape):
        # g may broadcast against its slot; keep its example part right-aligned behind the batch.
        slot = np.broadcast_to(np.empty((), np.int8), shape)[tuple(index)].shape
        if len(gs) - 1 < len(slot):
            g = _reshape(g, gs[:1] + (1,) * (len(slot) - len(gs) + 1) + gs[1:])
    return _embed_slice(g, (slice(None),) + tuple(index), (gs[0],) + tuple(shape)), 0


_embed_slice: Callable[..., Any] = defprimitive(
    _embed_slice_raw, name="embed_slice", vjp=lambda g, ans, x, index, shape: _take_slice(g, index),
    linear=True, batch=_embed_slice_batch,
)


def _scalar_array(xp: Any, a: Any) -> Any:
    """A 0-d array of ``xp`` holding the scalar (or nested list) ``a``, uploading only lists."""
    if isinstance(a, (bool, int, float, complex, np.generic)):
        return xp.full((), a, dtype=np.result_type(a))
    return xp.asarray(a)


def _take_axis_raw(x: Any, idx: np.ndarray, axis: int) -> Any:
    xp = namespace_of(x)
    return xp.take(x, device_constant(x, idx), axis=axis)


def _scatter_axis_raw(g: Any, idx: np.ndarray, n: int, axis: int) -> Any:
    """out[..., idx[j], ...] += g[..., j, ...] along ``axis`` (out has length n there)."""
    xp = namespace_of(g)
    shp = list(g.shape)
    shp[axis] = n
    out = xp.zeros(tuple(shp), dtype=g.dtype)
    where = _axis_index(axis, device_constant(g, idx))
    scatter_add(out, where, g)  # numpy.add.at; cupyx.scatter_add on CuPy
    return out


_take_axis = defprimitive(
    _take_axis_raw, name="take_axis",
    vjp=lambda g, ans, x, idx, axis: _scatter_axis(g, idx, _shape(x)[axis], axis), linear=True,
    batch_from=lambda fn: _front_rule(fn, lambda per, idx, axis: ((idx, _shift_axes(axis, len(per))), {})),
)
_scatter_axis: Callable[..., Any] = defprimitive(
    _scatter_axis_raw,
    name="scatter_axis",
    vjp=lambda g, ans, x, idx, n, axis: _take_axis(g, idx, axis),
    linear=True,
    batch_from=lambda fn: _front_rule(
        fn, lambda per, idx, n, axis: ((idx, n, _shift_axes(axis, len(per))), {})),
)


def _diag_embed_raw(g: Any, offset: int, axis1: int, axis2: int, shape: tuple[Any, ...]) -> Any:
    """Zeros of ``shape`` with ``g`` on the diagonal: the adjoint of ``diagonal``."""
    xp = namespace_of(g)
    out = xp.zeros(shape, dtype=_dtype(g))
    view = xp.moveaxis(out, (axis1, axis2), (-2, -1))
    n = g.shape[-1]
    i = xp.arange(n) + max(-offset, 0)
    view[..., i, i + offset] = g
    return out


# --------------------------------------------------------------------------
# reshaping

def _resolve_order(order: str, a: Any) -> str:
    """'A' means 'F' for a Fortran-ordered (not C-ordered) array, else 'C'."""
    if order in ("A", "a"):
        a = unbox_all(a)
        if isinstance(a, ArraySpec):  # what the tape kept of an array it did not need
            return "F" if a.f_order else "C"
        flags = getattr(a, "flags", None)
        if flags is not None and flags.f_contiguous and not flags.c_contiguous:
            return "F"
        return "C"
    return order


def _reshape_vjp(g: Any, ans: Any, a: Any, shape: Any = None, order: Any = "C", copy: Any = None) -> Any:
    return _reshape(g, _shape(a), order=_resolve_order(order, a))


def _reshape_jvp(t: Any, ans: Any, a: Any, shape: Any = None, order: Any = "C", copy: Any = None) -> Any:
    return _reshape(t, shape, order=_resolve_order(order, a))


def _target_shape(shape: Any, per: tuple[Any, ...]) -> tuple[Any, ...]:
    """``shape`` (an int or a sequence, one -1 allowed) resolved for examples of shape ``per``."""
    target: tuple[int, ...]
    if isinstance(shape, numbers.Integral) or (hasattr(shape, "ndim") and shape.ndim == 0):
        target = (operator.index(shape),)
    else:
        target = tuple(operator.index(n) for n in shape)
    size = math.prod(per)
    if any(n < -1 for n in target):
        raise ValueError("negative dimensions not allowed")
    if target.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = math.prod(n for n in target if n != -1)
    if -1 in target:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        target = tuple(size // known if n == -1 else n for n in target)
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return target


def _reshape_batch(args: Any, dims: Any, **kwargs: Any) -> Any:
    """C order: batch axis first, shape (batch,) + shape. F order: the batch axis is the
    slowest in Fortran order when it comes last, so reshape to shape + (batch,) there.
    order='A' is resolved from the layout of one example as a view of the batched array."""
    if any(d is not None for d in dims[1:]):
        return _loop(_reshape, args, dims, kwargs)
    a, d = args[0], dims[0]
    params = list(args[1:])
    if params:
        shape = params.pop(0)
    else:
        shape = kwargs.pop("shape", None)
        if shape is None:
            shape = kwargs.pop("newshape", None)
        if shape is None:
            raise TypeError("reshape() missing required argument 'shape'")
    order = params.pop(0) if params else kwargs.pop("order", "C")
    if params:
        raise TypeError(f"reshape() takes at most 3 positional arguments ({len(args)} given)")
    full = _shape(a)
    size = full[d]
    target = _target_shape(shape, full[:d] + full[d + 1:])
    if order in ("A", "a"):
        order = _resolve_order(order, unbox_all(a)[_axis_index(d, 0)]) if size else "C"
    if order in ("F", "f"):
        last = len(full) - 1
        if d != last:
            a = fnp.moveaxis(a, d, last)
        return _reshape(a, target + (size,), order="F", **kwargs), len(target)
    return _reshape(move_to_front(a, d), (size,) + target, order=order, **kwargs), 0


_reshape = defprimitive(
    backend_function("reshape"), vjp=_reshape_vjp, jvp=_reshape_jvp, batch=_reshape_batch,
    reads={0: {1, 2, 3}},  # a's shape and layout only
    doc="""Differentiable ``numpy.reshape`` (shape a tuple or an int, -1 allowed; order 'C', 'F' or 'A').

Example::

    fnp.reshape(x, (2, -1), order="F")
""",
)


def _ravel(a: Any, order: str = "C") -> Any:
    """Differentiable ``numpy.ravel``.

    On traced values order 'K' is treated like 'A' (memory layouts other than C
    or Fortran order are not tracked).

    Example::

        fnp.ravel(x)              # == fnp.reshape(x, -1)
    """
    a = pack(a)
    if not isinstance(a, Box):
        return namespace_of(a).ravel(a, order=order)
    if order in ("K", "k"):
        order = "A"
    return _reshape(a, (-1,), order=order)


def _transpose_vjp(g: Any, ans: Any, a: Any, axes: Any = None) -> Any:
    if axes is None:
        return _transpose(g)
    nd = len(axes)
    inverse = [0] * nd
    for i, ax in enumerate(axes):
        inverse[operator.index(ax) % nd] = i
    return _transpose(g, tuple(inverse))


def _transpose_adjust(per: Any, axes: Any = None) -> Any:
    nd = len(per)
    if axes is None:
        return ((0,) + tuple(range(nd, 0, -1)),), {}
    if len(axes) != nd:
        raise ValueError("axes don't match array")
    return ((0,) + _shift_axes(axes, nd),), {}


_transpose = defprimitive(
    backend_function("transpose"), vjp=_transpose_vjp, linear=True, reads={0: {1}},
    batch_from=lambda fn: _front_rule(fn, _transpose_adjust),
    doc="""Differentiable ``numpy.transpose`` (axes None or a permutation, negative axes allowed).

Example::

    fnp.transpose(x, (1, 0, 2))
""",
)
permute_dims = _transpose


_swapaxes: Callable[..., Any] = defprimitive(
    backend_function("swapaxes"),
    vjp=lambda g, ans, a, axis1, axis2: _swapaxes(g, axis1, axis2),
    linear=True, reads={0: {1, 2}},
    batch_from=lambda fn: _front_rule(
        fn, lambda per, axis1, axis2: ((_shift_axes(axis1, len(per)), _shift_axes(axis2, len(per))), {})),
    doc="""Differentiable ``numpy.swapaxes``.

Example::

    fnp.swapaxes(x, 0, -1)
""",
)


def matrix_transpose(x: Any) -> Any:
    """Differentiable ``numpy.matrix_transpose``: swap the last two axes.

    Example::

        fnp.matrix_transpose(x)   # shape (..., n, m) for x of shape (..., m, n)
    """
    if _ndim(x) < 2:
        raise ValueError(f"matrix_transpose: input must be at least 2-dimensional, got shape {_shape(x)}")
    return _swapaxes(x, -1, -2)


_moveaxis: Callable[..., Any] = defprimitive(
    backend_function("moveaxis"),
    vjp=lambda g, ans, a, source, destination: _moveaxis(g, destination, source),
    linear=True, reads={0: {1, 2}},
    batch_from=lambda fn: _front_rule(
        fn, lambda per, source, destination: ((_shift_axes(source, len(per)),
                                                     _shift_axes(destination, len(per))), {})),
    doc="""Differentiable ``numpy.moveaxis`` (source/destination ints or sequences).

Example::

    fnp.moveaxis(x, 0, -1)
""",
)


def _expand_dims_adjust(per: Any, axis: Any) -> Any:
    many = not (isinstance(axis, numbers.Integral) or (hasattr(axis, "ndim") and axis.ndim == 0))
    return (_shift_axes(axis, len(per) + (len(axis) if many else 1)),), {}


_expand_dims = defprimitive(
    backend_function("expand_dims"), vjp=lambda g, ans, a, axis: _reshape(g, _shape(a)), linear=True,
    reads={0: {1}},  # a's shape only
    batch_from=lambda fn: _front_rule(fn, _expand_dims_adjust),
    doc="""Differentiable ``numpy.expand_dims`` (axis an int or a tuple).

Example::

    fnp.expand_dims(x, (0, -1))
""",
)


def _squeeze_adjust(per: Any, axis: Any = None) -> Any:
    if axis is None:  # the example's unit axes, never the batch axis (the batch may have size 1)
        return (tuple(i + 1 for i, n in enumerate(per) if n == 1),), {}
    return (_shift_axes(axis, len(per)),), {}


_squeeze = defprimitive(
    backend_function("squeeze"), vjp=lambda g, ans, a, axis=None: _reshape(g, _shape(a)), linear=True,
    reads={0: {1}},  # a's shape only
    batch_from=lambda fn: _front_rule(fn, _squeeze_adjust),
    doc="""Differentiable ``numpy.squeeze`` (axis None, an int or a tuple).

Example::

    fnp.squeeze(x, axis=0)
""",
)


# --------------------------------------------------------------------------
# broadcasting


def _broadcast_to_batch(args: Any, dims: Any, **kwargs: Any) -> Any:
    if any(d is not None for d in dims[1:]):
        return _loop(_broadcast_to, args, dims, kwargs)
    x = move_to_front(args[0], dims[0])
    params = list(args[1:])
    shape = params.pop(0) if params else kwargs.pop("shape")
    target = (operator.index(shape),) if isinstance(shape, numbers.Integral) else tuple(shape)
    s = _shape(x)
    if len(s) - 1 < len(target):  # example axes right-aligned behind the batch axis
        x = _reshape(x, s[:1] + (1,) * (len(target) - len(s) + 1) + s[1:])
    return _broadcast_to(x, (s[0],) + target, *params, **kwargs), 0


_broadcast_to = defprimitive(
    backend_function("broadcast_to"), vjp=lambda g, ans, array, shape, subok=False: unbroadcast(g, array),
    linear=True, batch=_broadcast_to_batch, reads={0: {1, 2}},  # array's shape and dtype only
)


def broadcast_to(array: Any, shape: Any, subok: bool = False) -> Any:
    """Differentiable ``numpy.broadcast_to``; its VJP sums over the broadcast axes.

    A traced value that already has the shape is returned as it is.

    Example::

        fnp.broadcast_to(x, (4,) + x.shape)
    """
    if isinstance(array, Box):
        target = (operator.index(shape),) if isinstance(shape, numbers.Integral) else tuple(shape)
        if _shape(array) == target:
            return array
    return _broadcast_to(array, shape)


def broadcast_arrays(*args: Any, subok: bool = False) -> tuple[Any, ...]:
    """Differentiable ``numpy.broadcast_arrays``; returns a tuple.

    Example::

        a, b = fnp.broadcast_arrays(x[:, None], y)
    """
    if not _any_box(args):
        return tuple(namespace_of(*args).broadcast_arrays(*args))
    arrays = _as_arrays(args)
    target = np.broadcast_shapes(*[_shape(a) for a in arrays])
    return tuple(broadcast_to(a, target) for a in arrays)


def _atleast(a: Any, n: int) -> Any:
    a = pack(a)
    if not isinstance(a, Box):
        return getattr(namespace_of(a), f"atleast_{n}d")(a)
    s = _shape(a)
    if len(s) >= n:
        return a
    if n == 1:
        new = (1,)
    elif n == 2:
        new = (1,) + s + (1,) * (1 - len(s))
    else:
        new = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)]
    return _reshape(a, new)


def _atleast_nd(arys: tuple[Any, ...], n: int) -> Any:
    res = tuple(_atleast(a, n) for a in arys)
    return res[0] if len(res) == 1 else res


def atleast_1d(*arys: Any) -> Any:
    """Differentiable ``numpy.atleast_1d`` (a tuple for several arguments).

    Example::

        fnp.atleast_1d(x)
    """
    return _atleast_nd(arys, 1)


def atleast_2d(*arys: Any) -> Any:
    """Differentiable ``numpy.atleast_2d`` (a tuple for several arguments).

    Example::

        fnp.atleast_2d(x)   # (n,) -> (1, n)
    """
    return _atleast_nd(arys, 2)


def atleast_3d(*arys: Any) -> Any:
    """Differentiable ``numpy.atleast_3d`` (a tuple for several arguments).

    Example::

        fnp.atleast_3d(x)   # (n,) -> (1, n, 1); (m, n) -> (m, n, 1)
    """
    return _atleast_nd(arys, 3)


# --------------------------------------------------------------------------
# joining: varargs primitives behind list-taking wrappers

def _join_kwargs(dtype: Any, casting: str) -> dict[Any, Any]:
    kw = {}
    if dtype is not None:
        kw["dtype"] = dtype
    if casting != "same_kind":
        kw["casting"] = casting
    return kw


def _concatenate_raw(axis: int, *arrays: Any, **kwargs: Any) -> Any:
    return namespace_of(*arrays).concatenate(arrays, axis=axis, **kwargs)


def _stack_raw(axis: int, *arrays: Any, **kwargs: Any) -> Any:
    if len(arrays) == 1 and not kwargs:  # (one array, as an RNN's h_n of one layer: a copy with a new axis,
        a = arrays[0]                    # without the ~100 bytecodes and 5 us of NumPy's Python-level stack)
        shape = getattr(a, "shape", None)
        if shape is not None and 0 <= axis <= len(shape):
            return a.reshape(shape[:axis] + (1,) + shape[axis:]).copy(order="K")  # (np.stack's layout)
    return namespace_of(*arrays).stack(arrays, axis=axis, **kwargs)


# The rules see all arguments at once (``vjp_all``/``jvp_all``): one split of the
# cotangent serves every traced argument, and one join of the tangents (zeros for
# constant arguments) makes the output tangent, so a call with k traced arguments
# costs O(size), not O(k * size), in forward mode and in the reverse-of-reverse pass.


def _zeros_for(a: Any, ans: Any) -> Any:
    v = unbox_all(ans)
    return namespace_of(v).zeros(_shape(a), dtype=_dtype(v))


def _concatenate_vjp_all(g: Any, ans: Any, argnums: Any, axis: Any, *arrays: Any, **kwargs: Any) -> Any:
    if len(argnums) == 1:
        i = argnums[0] - 1
        start = 0
        for a in arrays[:i]:
            start += _shape(a)[axis]
        piece = _take_slice(g, _axis_index(axis, slice(start, start + _shape(arrays[i])[axis])))
        return [_ct_for(piece, arrays[i])]
    bounds, total = [], 0
    for a in arrays[:-1]:
        total += _shape(a)[axis]
        bounds.append(total)
    pieces = _split(g, tuple(bounds), axis)
    return [_ct_for(pieces[n - 1], arrays[n - 1]) for n in argnums]


def _stack_vjp_all(g: Any, ans: Any, argnums: Any, axis: Any, *arrays: Any, **kwargs: Any) -> Any:
    if len(argnums) == 1:
        i = argnums[0] - 1
        return [_ct_for(_take_slice(g, _axis_index(axis, i)), arrays[i])]
    pieces = _split(g, tuple(range(1, len(arrays))), axis)
    return [_ct_for(_reshape(pieces[n - 1], _shape(arrays[n - 1])), arrays[n - 1]) for n in argnums]


def _join_tangents(tangents: Any, ans: Any, arrays: Any) -> Any:
    return [_zeros_for(a, ans) if t is None else _tangent_for(t, ans) for t, a in zip(tangents[1:], arrays)]


def _concatenate_jvp_all(tangents: Any, ans: Any, axis: Any, *arrays: Any, **kwargs: Any) -> Any:
    return _concatenate(axis, *_join_tangents(tangents, ans, arrays))


def _stack_jvp_all(tangents: Any, ans: Any, axis: Any, *arrays: Any, **kwargs: Any) -> Any:
    return _stack(axis, *_join_tangents(tangents, ans, arrays))


def _join_batch(fn: Any, new_axis: int) -> Any:
    """Rule for ``fn(axis, *arrays)``: batched members get their batch axis first, the
    others are broadcast along a new leading axis of the batch size; axis shifts by one."""

    def rule(args: Any, dims: Any, **kwargs: Any) -> Any:
        if dims[0] is not None:
            return _loop(fn, args, dims, kwargs)
        size = _batch_size(args, dims)
        arrays = []
        per_nd: Any = None
        for a, d in zip(args[1:], dims[1:]):
            if d is None:
                s = _shape(a)
                arrays.append(broadcast_to(a, (size,) + s))
            else:
                a = move_to_front(a, d)
                s = _shape(a)[1:]
                arrays.append(a)
            if per_nd is None:
                per_nd = len(s)
        return fn(_shift_axes(args[0], per_nd + new_axis), *arrays, **kwargs), 0

    return rule


# The VJPs of a join read the axis and the arrays' shapes and dtypes, never their values nor
# the result: the tape keeps no joined array (so ``stack([a, b]).mul_(2)`` leaves the backward
# intact). Declared per array for joins of up to 256 arrays; longer ones keep everything.
_JOIN_READS = {i: {0} for i in range(1, 257)}
_concatenate = defprimitive(
    _concatenate_raw, name="concatenate", vjp_all=_concatenate_vjp_all, jvp_all=_concatenate_jvp_all,
    batch_from=lambda fn: _join_batch(fn, 0), reads=_JOIN_READS,
)
_stack = defprimitive(
    _stack_raw, name="stack", vjp_all=_stack_vjp_all, jvp_all=_stack_jvp_all,
    batch_from=lambda fn: _join_batch(fn, 1), reads=_JOIN_READS,
)


def concatenate(arrays: Any, axis: int | None = 0, out: Any = None, *, dtype: Any = None,
                casting: str = "same_kind") -> Any:
    """Differentiable ``numpy.concatenate`` (``axis=None`` flattens first).

    The list may mix traced values, arrays and nested Python lists. ``out=``
    works only when nothing is traced.

    Example::

        fnp.concatenate([x, fnp.zeros(2), [1.0, 2.0]])
    """
    arrays = _unpack(arrays)
    if not _any_box(arrays):
        kw = _join_kwargs(dtype, casting)
        if out is not None:
            kw["out"] = out
        return namespace_of(*arrays).concatenate(arrays, axis=axis, **kw)
    if out is not None:
        raise TypeError("concatenate: out= is not supported on traced values; use the returned array")
    arrays = _as_arrays(arrays)
    if axis is None:
        arrays = [_reshape(a, (-1,)) for a in arrays]
        axis = 0
    nd = _ndim(arrays[0])
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    return _concatenate(_norm_axis(axis, nd), *arrays, **_join_kwargs(dtype, casting))


concat = concatenate


def stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None,
          casting: str = "same_kind") -> Any:
    """Differentiable ``numpy.stack``; works for traced scalars (``fnp.array`` and ``jacrev`` use it).

    Example::

        fnp.stack([x, y], axis=-1)
    """
    arrays = _unpack(arrays)
    if not _any_box(arrays):
        kw = _join_kwargs(dtype, casting)
        if out is not None:
            kw["out"] = out
        return namespace_of(*arrays).stack(arrays, axis=axis, **kw)
    if out is not None:
        raise TypeError("stack: out= is not supported on traced values; use the returned array")
    arrays = _as_arrays(arrays)
    shapes = {_shape(a) for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"stack: all input arrays must have the same shape, got shapes {sorted(shapes)}")
    return _stack(_norm_axis(axis, _ndim(arrays[0]) + 1), *arrays, **_join_kwargs(dtype, casting))


def hstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """Differentiable ``numpy.hstack``.

    Example::

        fnp.hstack([x, y])
    """
    items = _unpack(tup)
    if not _any_box(items):
        return namespace_of(*items).hstack(items, **_join_kwargs(dtype, casting))
    arrs = [_atleast(a, 1) for a in _as_arrays(items)]
    axis = 0 if _ndim(arrs[0]) == 1 else 1
    return concatenate(arrs, axis, dtype=dtype, casting=casting)


def vstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """Differentiable ``numpy.vstack``.

    Example::

        fnp.vstack([x, y])   # rows
    """
    items = _unpack(tup)
    if not _any_box(items):
        return namespace_of(*items).vstack(items, **_join_kwargs(dtype, casting))
    return concatenate([_atleast(a, 2) for a in _as_arrays(items)], 0, dtype=dtype, casting=casting)


def dstack(tup: Sequence[Any]) -> Any:
    """Differentiable ``numpy.dstack``.

    Example::

        fnp.dstack([x, y])   # along a third axis
    """
    items = _unpack(tup)
    if not _any_box(items):
        return namespace_of(*items).dstack(items)
    return concatenate([_atleast(a, 3) for a in _as_arrays(items)], 2)


def column_stack(tup: Sequence[Any]) -> Any:
    """Differentiable ``numpy.column_stack``: 1-D arrays become columns.

    Example::

        fnp.column_stack([x, y])   # shape (n, 2) for 1-D x, y of length n
    """
    items = _unpack(tup)
    if not _any_box(items):
        return namespace_of(*items).column_stack(items)
    cols = [_reshape(a, (-1, 1)) if _ndim(a) < 2 else a for a in _as_arrays(items)]
    return concatenate(cols, 1)


# --------------------------------------------------------------------------
# splitting: one multi-result primitive; its VJP concatenates (zeros for unused pieces)

def _split_raw(x: Any, indices: tuple[Any, ...], axis: int) -> tuple[Any, ...]:
    return tuple(namespace_of(x).split(x, list(indices), axis=axis))


def _split_batch(args: Any, dims: Any) -> Any:
    if any(d is not None for d in dims[1:]):
        return _loop(_split, args, dims, {})
    x, indices, axis = args
    x = move_to_front(x, dims[0])
    out = _split(x, indices, _shift_axes(axis, _ndim(x) - 1))
    return out, (0,) * len(out)


_split: Callable[..., Any] = defprimitive(
    _split_raw, name="split", vjp=lambda g, ans, x, indices, axis: concatenate(list(g), axis=axis),
    jvp=lambda t, ans, x, indices, axis: _split(t, indices, axis), batch=_split_batch, multiple_results=True,
)


def _split_at(x: Any, div_points: list[Any], axis: int) -> list[Any]:
    """Pieces ``x[div[i]:div[i+1]]`` along ``axis``, with Python slice semantics."""
    n = _shape(x)[axis]
    spans = []
    for st, end in zip(div_points[:-1], div_points[1:]):
        start, stop, _ = slice(st, end).indices(n)
        spans.append((start, max(start, stop)))
    tiles = spans[0][0] == 0 and spans[-1][1] == n and all(
        a[1] == b[0] for a, b in zip(spans[:-1], spans[1:])
    )
    if tiles:
        return list(_split(x, tuple(s for s, _ in spans[1:]), axis))
    # Overlapping or out-of-order indices: pieces do not tile the input, slice each.
    return [_take_slice(x, _axis_index(axis, slice(st, end))) for st, end in zip(div_points[:-1], div_points[1:])]


def _sections(indices_or_sections: Any, n: int, equal: bool) -> list[Any]:
    if isinstance(indices_or_sections, numbers.Integral) or (
        hasattr(indices_or_sections, "ndim") and indices_or_sections.ndim == 0
    ):
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if equal and n % sections:
            raise ValueError("array split does not result in an equal division")
        each, extras = divmod(n, sections)
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        return [int(v) for v in np.cumsum(sizes)]
    return [0] + [operator.index(i) for i in indices_or_sections] + [n]


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """Differentiable ``numpy.array_split`` (sections need not divide the axis evenly).

    Example::

        a, b, c = fnp.array_split(x, 3)
    """
    if not isinstance(ary, Box):
        pieces: list[Any] = namespace_of(ary).array_split(ary, indices_or_sections, axis=axis)
        return pieces
    ax = _norm_axis(axis, _ndim(ary))
    return _split_at(ary, _sections(indices_or_sections, _shape(ary)[ax], False), ax)


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """Differentiable ``numpy.split``; unused pieces get zero cotangents.

    Example::

        first, rest = fnp.split(x, [1])
    """
    ary = pack(ary)
    if not isinstance(ary, Box):
        pieces: list[Any] = namespace_of(ary).split(ary, indices_or_sections, axis=axis)
        return pieces
    ax = _norm_axis(axis, _ndim(ary))
    return _split_at(ary, _sections(indices_or_sections, _shape(ary)[ax], True), ax)


def hsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    """Differentiable ``numpy.hsplit`` (axis 1, or 0 for 1-D input).

    Example::

        left, right = fnp.hsplit(x, 2)
    """
    if _ndim(ary) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if _ndim(ary) > 1 else 0)


def vsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    """Differentiable ``numpy.vsplit`` (axis 0, input at least 2-D).

    Example::

        top, bottom = fnp.vsplit(x, 2)
    """
    if _ndim(ary) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    """Differentiable ``numpy.dsplit`` (axis 2, input at least 3-D).

    Example::

        a, b = fnp.dsplit(x, 2)
    """
    if _ndim(ary) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """Differentiable ``numpy.unstack``: the slices along ``axis``, as a tuple.

    Example::

        rows = fnp.unstack(x)
    """
    if not isinstance(x, Box):
        xp = namespace_of(x)
        if hasattr(xp, "unstack"):
            return tuple(xp.unstack(x, axis=axis))
        return tuple(xp.moveaxis(x, axis, 0))  # NumPy < 2.1
    ax = _norm_axis(axis, _ndim(x))
    n = _shape(x)[ax]
    if n == 0:
        return ()
    return tuple(_squeeze(p, axis=ax) for p in _split(x, tuple(range(1, n)), ax))


# --------------------------------------------------------------------------
# repetition


def _tile_vjp(g: Any, ans: Any, A: Any, reps: Any) -> Any:
    xs = _shape(A)
    reps = (operator.index(reps),) if isinstance(reps, numbers.Integral) else tuple(reps)
    d = max(len(xs), len(reps))
    xs_p = (1,) * (d - len(xs)) + xs
    reps_p = (1,) * (d - len(reps)) + reps
    split_shape = []
    for r, s in zip(reps_p, xs_p):
        split_shape += [r, s]
    g = fnp.sum(_reshape(g, tuple(split_shape)), axis=tuple(range(0, 2 * d, 2)))
    return _reshape(g, xs)


def _tile_batch(args: Any, dims: Any, **kwargs: Any) -> Any:
    if any(d is not None for d in dims[1:]):
        return _loop(tile, args, dims, kwargs)
    x = move_to_front(args[0], dims[0])
    reps = args[1] if len(args) > 1 else kwargs.pop("reps")
    if isinstance(reps, numbers.Integral) or (hasattr(reps, "ndim") and reps.ndim == 0):
        reps = (operator.index(reps),)
    else:
        reps = tuple(operator.index(r) for r in reps)
    s = _shape(x)
    d = max(len(s) - 1, len(reps))
    if len(s) - 1 < d:  # numpy pads the example's shape with leading ones
        x = _reshape(x, s[:1] + (1,) * (d - len(s) + 1) + s[1:])
    return tile(x, (1,) * (d - len(reps) + 1) + reps), 0


tile = defprimitive(
    backend_function("tile"), vjp=_tile_vjp, linear=True, batch=_tile_batch,
    doc="""Differentiable ``numpy.tile``; its VJP sums the tiles.

Example::

    fnp.tile(x, (2, 1))
""",
)


def _repeat_raw(a: Any, repeats: Any, axis: Any) -> Any:
    return namespace_of(a).repeat(a, repeats, axis=axis)


def _repeat_vjp(g: Any, ans: Any, a: Any, repeats: Any, axis: Any) -> Any:
    xs = _shape(a)
    if axis is None:
        n = int(np.prod(xs, dtype=np.int64))
        ax = 0
    else:
        ax = axis
        n = xs[ax]
    if isinstance(repeats, tuple) and len(repeats) == 1:
        repeats = repeats[0]
    if isinstance(repeats, int):
        gs = _shape(g)
        out = fnp.sum(_reshape(g, gs[:ax] + (n, repeats) + gs[ax + 1:]), axis=ax + 1)
    else:
        idx = np.repeat(np.arange(n), np.asarray(repeats, dtype=np.intp))
        out = _scatter_axis(g, idx, n, ax)
    return _reshape(out, xs) if axis is None else out


def _repeat_batch(args: Any, dims: Any) -> Any:
    if any(d is not None for d in dims[1:]):
        return _loop(_repeat, args, dims, {})
    a, repeats, axis = args
    a = move_to_front(a, dims[0])
    if axis is None:  # per example: flatten, then repeat along the flat axis
        return _repeat(_flatten_examples(a), repeats, 1), 0
    return _repeat(a, repeats, _shift_axes(axis, _ndim(a) - 1)), 0


_repeat = defprimitive(_repeat_raw, name="repeat", vjp=_repeat_vjp, linear=True, batch=_repeat_batch)


def repeat(a: Any, repeats: Any, axis: int | None = None) -> Any:
    """Differentiable ``numpy.repeat`` (repeats a scalar or one count per element).

    Example::

        fnp.repeat(x, [1, 0, 2], axis=0)
    """
    a = pack(a)
    if not isinstance(a, Box):
        return namespace_of(a).repeat(a, repeats, axis=axis)
    if axis is not None:
        axis = _norm_axis(axis, _ndim(a))
    reps: Any = np.asarray(to_numpy(repeats))
    if reps.dtype.kind not in "iub":
        raise TypeError(f"repeat: repeats must be integers, got dtype {reps.dtype}")
    reps = int(reps) if reps.ndim == 0 else tuple(int(r) for r in reps.ravel())
    return _repeat(a, reps, axis)


# --------------------------------------------------------------------------
# reordering


def _flip_adjust(per: Any, axis: Any = None) -> Any:
    return (tuple(range(1, len(per) + 1)) if axis is None else _shift_axes(axis, len(per)),), {}


flip: Callable[..., Any] = defprimitive(
    backend_function("flip"), vjp=lambda g, ans, m, axis=None: flip(g, axis), linear=True, reads={0: {1}},
    batch_from=lambda fn: _front_rule(fn, _flip_adjust),
    doc="""Differentiable ``numpy.flip`` (axis None, an int or a tuple).

Example::

    fnp.flip(x, axis=0)
""",
)


def fliplr(m: Any) -> Any:
    """Differentiable ``numpy.fliplr``.

    Example::

        fnp.fliplr(x)   # == fnp.flip(x, 1)
    """
    if _ndim(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


def flipud(m: Any) -> Any:
    """Differentiable ``numpy.flipud``.

    Example::

        fnp.flipud(x)   # == fnp.flip(x, 0)
    """
    if _ndim(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


def _negate_shift(shift: Any) -> Any:
    s = np.negative(np.asarray(shift))  # shift is static host data (ints), not an array argument
    return int(s) if s.ndim == 0 else tuple(int(v) for v in s)


def _roll_batch(args: Any, dims: Any, **kwargs: Any) -> Any:
    if any(d is not None for d in dims[1:]):
        return _loop(roll, args, dims, kwargs)
    x = move_to_front(args[0], dims[0])
    params = list(args[1:])
    shift = params.pop(0) if params else kwargs.pop("shift")
    axis = params.pop(0) if params else kwargs.pop("axis", None)
    if axis is None:  # numpy rolls the flattened example
        return _reshape(roll(_flatten_examples(x), shift, 1), _shape(x)), 0
    return roll(x, shift, _shift_axes(axis, _ndim(x) - 1)), 0


roll: Callable[..., Any] = defprimitive(
    backend_function("roll"), vjp=lambda g, ans, a, shift, axis=None: roll(g, _negate_shift(shift), axis),
    linear=True, batch=_roll_batch,
    doc="""Differentiable ``numpy.roll`` (shift an int or tuple, axis None, an int or a tuple).

Example::

    fnp.roll(x, (1, -2), axis=(0, 1))
""",
)


def _rot90_adjust(per: Any, k: Any = 1, axes: Any = (0, 1)) -> Any:
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    return (k, _shift_axes(axes, len(per))), {}


rot90: Callable[..., Any] = defprimitive(
    backend_function("rot90"), vjp=lambda g, ans, m, k=1, axes=(0, 1): rot90(g, -k, axes), linear=True,
    batch_from=lambda fn: _front_rule(fn, _rot90_adjust),
    doc="""Differentiable ``numpy.rot90``.

Example::

    fnp.rot90(x, k=2)
""",
)


# --------------------------------------------------------------------------
# padding

_GATHER_MODES = ("edge", "reflect", "symmetric", "wrap")
_NUMPY_MODES = ("constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum", "reflect",
                "symmetric", "wrap", "empty")


def _pad_raw(x: Any, widths: tuple[Any, ...], mode: str, kw: tuple[Any, ...]) -> Any:
    return namespace_of(x).pad(x, widths, mode=mode, **dict(kw))


def _pad_vjp(g: Any, ans: Any, x: Any, widths: Any, mode: Any, kw: Any) -> Any:
    xs = _shape(x)
    if mode == "constant":
        return _take_slice(g, tuple(slice(b, b + n) for (b, _), n in zip(widths, xs)))
    for axis, ((b, a), n) in enumerate(zip(widths, xs)):
        if b or a:
            idx = np.pad(np.arange(n), (b, a), mode=mode)
            g = _scatter_axis(g, idx, n, axis)
    return g


def _pad_jvp(t: Any, ans: Any, x: Any, widths: Any, mode: Any, kw: Any) -> Any:
    return _pad(t, widths, mode, () if mode == "constant" else kw)


def _pad_per_axis(value: Any, nd: int) -> Any:
    """A per-axis ``constant_values``/``end_values`` with a (0, 0) row for a leading batch axis."""
    xp = namespace_of(value)
    v = xp.broadcast_to(xp.asarray(value), (nd, 2))
    v = xp.concatenate([xp.zeros((1, 2), dtype=v.dtype), v])
    return tuple(tuple(row) for row in v.tolist()) if xp is np else v


def _pad_adjust(per: Any, widths: Any, mode: Any, kw: Any) -> Any:
    nd = len(per)
    kw = tuple((k, _pad_per_axis(v, nd) if k in ("constant_values", "end_values") and np.ndim(v) else v)
               for k, v in kw)
    return (((0, 0),) + tuple(widths), mode, kw), {}


_pad = defprimitive(
    _pad_raw, name="pad", vjp=_pad_vjp, jvp=_pad_jvp, batch_from=lambda fn: _front_rule(fn, _pad_adjust),
)


def _pad_widths(pad_width: Any, nd: int) -> tuple[Any, ...]:
    pw = np.asarray(to_numpy(pad_width))
    if pw.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    try:
        pw = np.broadcast_to(pw, (nd, 2))
    except ValueError:
        raise ValueError(
            f"pad: pad_width of shape {pw.shape} cannot be broadcast to ({nd}, 2) for an array of "
            f"{nd} dimensions"
        ) from None
    if (pw < 0).any():
        raise ValueError("index can't contain negative values")
    return tuple((int(b), int(a)) for b, a in pw)


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """Differentiable ``numpy.pad`` for modes 'constant', 'edge', 'reflect', 'symmetric' and 'wrap'.

    ``constant_values`` may be traced: its derivative is the sum of the
    cotangent over the region each value fills. On traced values the other
    NumPy modes (and ``reflect_type='odd'``) raise NotImplementedError; on
    untraced arrays every NumPy mode works.

    Example::

        fnp.pad(x, ((1, 1), (0, 2)), mode="reflect")
    """
    cv = kwargs.get("constant_values", 0)
    cv_traced = contains_box(cv)
    array = pack(array)
    if not isinstance(array, Box) and not cv_traced:
        return namespace_of(array).pad(array, pad_width, mode=mode, **kwargs)
    if not isinstance(mode, str) or mode not in ("constant",) + _GATHER_MODES:
        if isinstance(mode, str) and mode not in _NUMPY_MODES:
            raise ValueError(f"mode '{mode}' is not supported")
        raise NotImplementedError(
            f"pad: mode={mode!r} is not differentiable in funcgrad; the supported modes are "
            f"'constant', 'edge', 'reflect', 'symmetric' and 'wrap' (wrap the input in "
            f"fg.stop_gradient if no derivative is wanted)"
        )
    allowed = {"constant": {"constant_values"}, "edge": set(), "wrap": set(),
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}}[mode]
    extra = set(kwargs) - allowed
    if extra:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {extra}")
    if kwargs.get("reflect_type", "even") != "even":
        if kwargs["reflect_type"] != "odd":
            raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {kwargs['reflect_type']!r}")
        raise NotImplementedError("pad: reflect_type='odd' is not differentiable in funcgrad; use 'even'")
    x = array if isinstance(array, Box) or hasattr(array, "shape") else np.asarray(array)
    nd = _ndim(x)
    widths = _pad_widths(pad_width, nd)
    if mode != "constant":
        return _pad(x, widths, mode, tuple(sorted(kwargs.items())))
    if not cv_traced:
        return _pad(x, widths, "constant", (("constant_values", cv),))
    return _pad_traced_constant(x, widths, cv)


def _pad_traced_constant(x: Any, widths: tuple[Any, ...], cv: Any) -> Any:
    """Constant padding with traced constant_values: x padded with zeros plus one
    constant times an indicator mask per padded region (NumPy fills the regions
    axis by axis, later axes over the corners)."""
    xp = namespace_of(x, cv)
    out = _pad(x, widths, "constant", ())
    codes_pw = tuple((2 * k + 1, 2 * k + 2) for k in range(len(widths)))
    codes = xp.pad(xp.zeros(_shape(x), dtype=np.int32), widths, mode="constant", constant_values=codes_pw)
    cvb = broadcast_to(fnp.asarray(cv), (len(widths), 2))
    out_dtype = _dtype(out)
    for k, (b, a) in enumerate(widths):
        for side, width in ((0, b), (1, a)):
            if width:
                mask = xp.asarray(codes == 2 * k + 1 + side, dtype=out_dtype)
                value = _take_slice(cvb, (k, side))
                if _dtype(value) != out_dtype:
                    value = fnp.astype(value, out_dtype)
                out = out + value * mask
    return out


# --------------------------------------------------------------------------
# diagonals and triangles


def _diagonal_vjp(g: Any, ans: Any, a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> Any:
    return _diag_embed(g, offset, axis1, axis2, _shape(a))


def _diagonal_adjust(per: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> Any:
    nd = len(per)
    return (offset, _shift_axes(axis1, nd), _shift_axes(axis2, nd)), {}


def _diag_embed_batch(args: Any, dims: Any) -> Any:
    if any(d is not None for d in dims[1:]):
        return _loop(_diag_embed, args, dims, {})
    g, offset, axis1, axis2, shape = args
    g = move_to_front(g, dims[0])
    nd = len(shape)
    out_shape = (_shape(g)[0],) + tuple(shape)
    return _diag_embed(g, offset, _shift_axes(axis1, nd), _shift_axes(axis2, nd), out_shape), 0


diagonal = defprimitive(
    backend_function("diagonal"), vjp=_diagonal_vjp, linear=True, reads={0: {1, 2, 3}},  # a's shape only
    batch_from=lambda fn: _front_rule(fn, _diagonal_adjust),
    doc="""Differentiable ``numpy.diagonal`` (offset, axis1, axis2).

Example::

    fnp.diagonal(x, offset=1)
""",
)
_diag_embed = defprimitive(
    _diag_embed_raw, name="diag_embed",
    vjp=lambda g, ans, x, offset, axis1, axis2, shape: diagonal(g, offset, axis1, axis2), linear=True,
    batch=_diag_embed_batch,
)


def diag(v: Any, k: int = 0) -> Any:
    """Differentiable ``numpy.diag``: 1-D -> 2-D matrix with ``v`` on diagonal ``k``; 2-D -> its diagonal ``k``.

    Example::

        fnp.diag(fnp.diag(x))    # keeps only the diagonal of a square x
    """
    v = pack(v)
    if not isinstance(v, Box):
        return namespace_of(v).diag(v, k)
    nd = _ndim(v)
    if nd == 1:
        n = _shape(v)[0] + abs(k)
        return _diag_embed(v, k, 0, 1, (n, n))
    if nd == 2:
        return diagonal(v, k)
    raise ValueError("Input must be 1- or 2-d.")


def diagflat(v: Any, k: int = 0) -> Any:
    """Differentiable ``numpy.diagflat``: the flattened input on diagonal ``k`` of a 2-D array.

    Example::

        fnp.diagflat(x)
    """
    v = pack(v)
    if not isinstance(v, Box):
        return namespace_of(v).diagflat(v, k)
    return diag(_reshape(v, (-1,)), k)


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    """Differentiable ``numpy.trace``: the sum along a diagonal.

    Example::

        fnp.trace(x)       # == fnp.sum(fnp.diagonal(x))
    """
    a = pack(a)
    if not isinstance(a, Box):
        return namespace_of(a).trace(a, offset, axis1, axis2, dtype=dtype, out=out)
    if out is not None:
        raise TypeError("trace: out= is not supported on traced values; use the returned array")
    return fnp.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _tri_batch(fn: Any) -> Any:
    """triu/tril act on the last two axes; a 1-D example is first broadcast to a square,
    as numpy does (its result is (n, n))."""

    def rule(args: Any, dims: Any, **kwargs: Any) -> Any:
        if any(d is not None for d in dims[1:]):
            return _loop(fn, args, dims, kwargs)
        x = move_to_front(args[0], dims[0])
        s = _shape(x)
        if len(s) == 1:
            return _loop(fn, args, dims, kwargs)  # numpy's error for 0-d input
        if len(s) == 2:
            x = broadcast_to(_reshape(x, (s[0], 1, s[1])), (s[0], s[1], s[1]))
        return fn(x, *args[1:], **kwargs), 0

    return rule


triu: Callable[..., Any] = defprimitive(
    backend_function("triu"), vjp=lambda g, ans, m, k=0: unbroadcast(triu(g, k), m), linear=True,
    batch_from=lambda fn: _tri_batch(fn),
    doc="""Differentiable ``numpy.triu`` (zero below diagonal ``k``).

Example::

    fnp.triu(x, k=1)
""",
)
tril: Callable[..., Any] = defprimitive(
    backend_function("tril"), vjp=lambda g, ans, m, k=0: unbroadcast(tril(g, k), m), linear=True,
    batch_from=lambda fn: _tri_batch(fn),
    doc="""Differentiable ``numpy.tril`` (zero above diagonal ``k``).

Example::

    fnp.tril(x, k=-1)
""",
)


# --------------------------------------------------------------------------
# grids

def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple[Any, ...]:
    """Differentiable ``numpy.meshgrid`` (indexing 'xy' or 'ij'); returns a tuple.

    Example::

        X, Y = fnp.meshgrid(x, y, indexing="ij")
    """
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    if not _any_box(xi):
        return tuple(namespace_of(*xi).meshgrid(*xi, copy=copy, sparse=sparse, indexing=indexing))
    nd = len(xi)
    s0 = (1,) * nd
    out: Any = [_reshape(x, s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(_as_arrays(xi))]
    if indexing == "xy" and nd > 1:
        out[0] = _reshape(out[0], (1, -1) + s0[2:])
        out[1] = _reshape(out[1], (-1, 1) + s0[2:])
    if not sparse:
        out = broadcast_arrays(*out)
    return tuple(out)


# --------------------------------------------------------------------------
# The public layout functions are view-aware (see funcgrad.numpy.inplace): on a
# traced array the result views its input, as in NumPy, so that a write through
# either one shows in the other. Rules above call the primitives themselves.

from .inplace import (  # noqa: E402
    _moveaxis_back, _reshape_back, _swapaxes_back, _transpose_back, view_function,
)


# The public signatures of the view functions (their primitives forward to the backend).
class _Reshape(Protocol):
    def __call__(self, a: ArrayLike, /, shape: ShapeLike, order: str = "C", *, copy: bool | None = None) -> Array: ...


class _Ravel(Protocol):
    def __call__(self, a: ArrayLike, order: str = "C") -> Array: ...


class _Squeeze(Protocol):
    def __call__(self, a: ArrayLike, axis: Axis = None) -> Array: ...


class _ExpandDims(Protocol):
    def __call__(self, a: ArrayLike, axis: int | Sequence[int]) -> Array: ...


class _Transpose(Protocol):
    def __call__(self, a: ArrayLike, axes: Sequence[int] | None = None) -> Array: ...


class _Swapaxes(Protocol):
    def __call__(self, a: ArrayLike, axis1: int, axis2: int) -> Array: ...


class _Moveaxis(Protocol):
    def __call__(self, a: ArrayLike, source: int | Sequence[int], destination: int | Sequence[int]) -> Array: ...


reshape: _Reshape = cast(_Reshape, view_function(_reshape, _reshape_back))
ravel: _Ravel = cast(_Ravel, view_function(_ravel, _reshape_back))
squeeze: _Squeeze = cast(_Squeeze, view_function(_squeeze, _reshape_back))
expand_dims: _ExpandDims = cast(_ExpandDims, view_function(_expand_dims, _reshape_back))
transpose: _Transpose = cast(_Transpose, view_function(_transpose, _transpose_back))
swapaxes: _Swapaxes = cast(_Swapaxes, view_function(_swapaxes, _swapaxes_back))
moveaxis: _Moveaxis = cast(_Moveaxis, view_function(_moveaxis, _moveaxis_back))
