"""Array creation, and ``array``/``asarray`` that accept traced values.

``zeros``, ``ones``, ``empty``, ``arange``, ``eye``, ``identity`` and ``tri``
are NumPy's own (they make host arrays; a ``device`` argument comes with GPU
support). ``full``, ``full_like``, ``linspace`` and ``logspace`` are NumPy's
too unless a traced value is passed as the fill value or an end point: then
they are built from differentiable operations, so the derivative flows.
``zeros_like``, ``ones_like`` and ``empty_like`` live in ``nondiff`` (their
result carries no derivative; they accept traced values).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import Box, def_linear, defvjp, get_primitive, nondiff_primitive, primitive
from ..core.batching import defbatch
from ._util import backend_function, dtype
from ._util import shape as _shape

__all__ = [
    "array", "asarray", "zeros", "ones", "empty", "full", "full_like", "arange", "linspace", "logspace",
    "eye", "identity", "astype", "copy", "tri",
]

zeros = np.zeros
ones = np.ones
empty = np.empty
arange = np.arange
eye = np.eye
identity = np.identity
tri = np.tri


# --------------------------------------------------------------------------
# array / asarray

def _contains_box(obj: Any) -> bool:
    if isinstance(obj, Box):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_contains_box(o) for o in obj)
    return False


def _stack_nested(obj: Any, dtype_: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        return fnp.stack([_stack_nested(o, dtype_) for o in obj])
    return obj if dtype_ is None else astype(obj, dtype_)


def array(obj: Any, dtype: Any = None, *, copy: bool = True, order: str = "K", ndmin: int = 0) -> Any:
    """``numpy.array`` that also takes (nested lists of) traced values.

    A list holding traced values becomes a traced array (built with
    ``fnp.stack``), so derivatives flow through it. A device array stays on
    its device.

    Example::

        fg.grad(lambda x: fnp.array([x[0] * 2, x[1]]).sum())(fnp.ones(2))   # [2., 1.]
    """
    if _contains_box(obj):
        out = _stack_nested(obj, dtype)
        if out is obj and copy:
            out = fnp.copy(out)  # NumPy copies: an in-place write must not reach obj
        while fnp.ndim(out) < ndmin:
            out = fnp.expand_dims(out, 0)
        return out
    xp = namespace_of(obj)
    if xp is not np:
        return xp.array(obj, dtype=dtype, copy=copy, order=order, ndmin=ndmin)
    return np.array(obj, dtype=dtype, copy=copy, order=order, ndmin=ndmin)


def asarray(obj: Any, dtype: Any = None, order: str | None = None, *, copy: bool | None = None) -> Any:
    """``numpy.asarray`` that passes traced values (and device arrays) through.

    Example::

        fnp.asarray([x, 2 * x])   # traced when x is
    """
    if isinstance(obj, Box):  # traced values are never written in place: no copy needed
        return obj if dtype is None or np.dtype(dtype) == fnp.result_type(obj) else astype(obj, dtype)
    if _contains_box(obj):
        return array(obj, dtype=dtype)
    xp = namespace_of(obj)
    if xp is not np:
        if copy:
            return xp.array(obj, dtype=dtype, copy=True)
        return obj if dtype is None else obj.astype(dtype, copy=False)
    return np.asarray(obj, dtype=dtype, order=order, copy=copy)


# --------------------------------------------------------------------------
# astype / copy

def _astype_raw(x: Any, dtype_: Any) -> Any:
    if hasattr(x, "astype"):
        return x.astype(dtype_)
    return np.asarray(x, dtype=dtype_)


_astype = primitive(_astype_raw, "astype")
# A cast to an integer or boolean dtype has derivative zero almost everywhere.
_astype_nondiff = nondiff_primitive(_astype_raw, "astype_nondiff")


def _astype_vjp(g: Any, ans: Any, x: Any, dtype_: Any) -> Any:
    gx = g if dtype(x).kind == "c" else fnp.real(g)
    return _astype(gx, dtype(x))


defvjp(_astype, _astype_vjp)
def_linear(_astype)


def astype(x: Any, dtype: Any, /, *, copy: bool = True) -> Any:
    """Differentiable ``numpy.astype`` (casts to integer/bool dtypes carry no derivative).

    Derivatives are cast back to ``x``'s dtype; casting complex to real keeps
    the real part.

    Example::

        fnp.astype(x, fnp.float32)
    """
    want = np.dtype(dtype)
    if want.kind not in "fc":
        return _astype_nondiff(x, want)
    if not copy and not isinstance(x, Box) and getattr(x, "dtype", None) == want:
        return x
    return _astype(x, want)


copy = primitive(backend_function("copy"), "copy")
copy.__doc__ = "Differentiable ``numpy.copy``."
defvjp(copy, lambda g, ans, x, *args, **kwargs: g)
def_linear(copy)


def _same_layout_rule(fn: Any) -> Any:
    """Batching for ``fn(x, *params)`` whose result has ``x``'s layout: the batch axis stays put."""

    def rule(args: list, dims: list, **kwargs: Any) -> tuple:
        if any(d is not None for d in dims[1:]):
            from ._batching import fallback

            k = next(i for i, d in enumerate(dims) if d is not None)
            size = fnp.shape(args[k])[dims[k]]
            return fallback(get_primitive(fn), list(args), list(dims), size, kwargs)
        return fn(*args, **kwargs), dims[0]

    return rule



# --------------------------------------------------------------------------
# full, full_like, linspace, logspace: differentiable in their values

def full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C") -> Any:
    """``numpy.full``; differentiable in ``fill_value`` when it is traced.

    Example::

        fg.grad(lambda v: fnp.full((2, 3), v).sum())(1.0)   # 6.0
    """
    if not isinstance(fill_value, Box):
        return np.full(shape, fill_value, dtype=dtype, order=order)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    out = fnp.broadcast_to(fill_value, shape)
    if dtype is not None and np.dtype(dtype) != fnp.result_type(out):
        return astype(out, dtype)
    return copy(out)  # a writable array of its own, not a broadcast view


_full_like_raw = nondiff_primitive(backend_function("full_like"), "full_like")


def full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True,
              shape: Any = None) -> Any:
    """``numpy.full_like``; differentiable in ``fill_value`` (not in ``a``) when it is traced.

    Example::

        fnp.full_like(x, 2.0)
    """
    if not isinstance(fill_value, Box):
        return _full_like_raw(a, fill_value, dtype=dtype, order=order, subok=subok, shape=shape)
    target = _shape_of(a) if shape is None else ((shape,) if isinstance(shape, (int, np.integer)) else tuple(shape))
    want = np.dtype(dtype) if dtype is not None else fnp.result_type(a)
    out = fnp.broadcast_to(fill_value, target)
    if want != fnp.result_type(out):
        return astype(out, want)
    return copy(out)


for _fn in (_astype, _astype_nondiff, copy, _full_like_raw):
    defbatch(_fn, _same_layout_rule(_fn))


def _shape_of(a: Any) -> tuple:
    return tuple(_shape(a)) if isinstance(a, Box) or hasattr(a, "shape") else np.shape(a)


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0) -> Any:
    """``numpy.linspace``; differentiable in ``start`` and ``stop`` when they are traced.

    Example::

        fg.jacobian(lambda ab: fnp.linspace(ab[0], ab[1], 5))(fnp.array([0.0, 1.0]))
    """
    if not (isinstance(start, Box) or isinstance(stop, Box)):
        return np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype, axis=axis)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    div = num - 1 if endpoint else num
    dt = fnp.result_type(start, stop, float(num))
    if dt.kind not in "fc":
        dt = np.dtype(np.float64)
    start = astype(asarray(start), dt) if fnp.result_type(start) != dt else asarray(start)
    stop = astype(asarray(stop), dt) if fnp.result_type(stop) != dt else asarray(stop)
    bshape = np.broadcast_shapes(tuple(_shape(start)), tuple(_shape(stop)))
    nd = len(bshape) + 1
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(f"linspace: axis {axis} is out of bounds for an array of dimension {nd}")
    axis %= nd
    if bshape:
        start = fnp.expand_dims(fnp.broadcast_to(start, bshape), axis)
        stop_b = fnp.broadcast_to(stop, bshape)
    else:
        stop_b = stop
    delta = fnp.expand_dims(stop_b, axis) - start if bshape else stop - start
    xp = namespace_of(start, stop)
    steps = xp.reshape(xp.arange(num, dtype=dt), tuple(num if k == axis else 1 for k in range(nd)))
    if div > 0:
        step = delta / div
        if bool(fnp.any(fnp.equal(step, 0))):
            y = steps / div * delta
        else:
            y = steps * step
    else:
        step = np.nan
        y = steps * delta
    y = y + start
    if endpoint and num > 1:
        y = fnp.indexing.at(y)[(slice(None),) * axis + (-1,)].set(stop_b)
    if dtype is not None:
        want = np.dtype(dtype)
        if want.kind in "iu":
            y = fnp.floor(y)
        y = astype(y, want)
    if retstep:
        if bshape and not isinstance(step, float):
            step = fnp.reshape(step, bshape)
        return y, step
    return y


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
             dtype: Any = None, axis: int = 0) -> Any:
    """``numpy.logspace``; differentiable in ``start``, ``stop`` and ``base`` when traced."""
    if not any(isinstance(v, Box) for v in (start, stop, base)):
        return np.logspace(start, stop, num, endpoint=endpoint, base=base, dtype=dtype, axis=axis)
    y = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    b = asarray(base)
    if fnp.ndim(b):
        b = fnp.expand_dims(b, axis)
    out = fnp.power(b, y)
    return out if dtype is None else astype(out, dtype)
