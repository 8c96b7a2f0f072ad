"""Array creation, and ``array``/``asarray`` that accept traced values.

Creation functions take a ``device=`` argument (``'cpu'``, ``'cuda'``,
``'cuda:1'``, an ``fg.Device``); without one they create on the default
device, :func:`funcgrad.default_device` (the CPU unless changed with
``with fg.default_device('cuda'):`` or ``fg.set_default_device``). On the CPU
``zeros``, ``ones``, ``empty``, ``arange``, ``eye``, ``identity`` and ``tri``
are NumPy's own calls. ``full``, ``full_like``, ``linspace`` and ``logspace``
are NumPy's too unless a traced value is passed as the fill value or an end
point: then they are built from differentiable operations, so the derivative
flows. ``zeros_like``, ``ones_like`` and ``empty_like`` live in ``nondiff``
(their result carries no derivative, on the device of their argument).
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Protocol, Sequence, SupportsIndex, cast

import numpy as np

import funcgrad.numpy as fnp

from ..core.trace import contains_box
from .. import backend as _backend
from ..backend import creation_namespace, namespace_of
from ..core import Box, defprimitive, get_primitive
from ._typing import DTypeLike, ShapeLike
from ._util import backend_function, dtype
from ._util import shape as _shape

__all__ = [
    "array", "asarray", "zeros", "ones", "empty", "full", "full_like", "arange", "linspace", "logspace",
    "eye", "identity", "astype", "copy", "tri",
]


# --------------------------------------------------------------------------
# creation from shapes, on a device

class _Shaped(Protocol):
    def __call__(self, shape: ShapeLike, dtype: DTypeLike = None, order: str = "C", *, device: Any = None,
                 like: Any = None) -> Any: ...


def _shaped(name: str, example: str) -> _Shaped:
    """``numpy.<name>(shape, dtype, order)`` placed on ``device`` (default: the default device)."""
    np_fn = getattr(np, name)

    def create(shape: ShapeLike, dtype: DTypeLike = None, order: str = "C", *, device: Any = None,
               like: Any = None) -> Any:
        xp, scope = creation_namespace(device)
        if xp is np:
            return np_fn(shape, dtype, order) if like is None else np_fn(shape, dtype, order, like=like)
        with scope:
            return getattr(xp, name)(shape, dtype=float if dtype is None else dtype, order=order)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = f"""``numpy.{name}`` on ``device`` (default: the default device).

    Example::

        {example}
    """
    return create


_zeros = _shaped("zeros", 'fnp.zeros((2, 3), device="cuda")')
_ones = _shaped("ones", "fnp.ones(3, dtype=fnp.float32)")
_empty = _shaped("empty", "fnp.empty((4, 4))")


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *, device: Any = None,
           like: Any = None) -> Any:
    """``numpy.arange`` on ``device`` (default: the default device)."""
    xp, scope = creation_namespace(device)
    args = (start,) if stop is None and step is None else (start, stop) if step is None else (start, stop, step)
    if xp is np:
        return np.arange(*args, dtype=dtype) if like is None else np.arange(*args, dtype=dtype, like=like)
    if stop is None and step is not None:
        args = (0, start, step)
    with scope:
        return xp.arange(*args, dtype=dtype)


def _eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float, order: str = "C", *,  # noqa: N803
        device: Any = None, like: Any = None) -> Any:
    """``numpy.eye`` on ``device`` (default: the default device)."""
    xp, scope = creation_namespace(device)
    if xp is np:
        return np.eye(N, M, k, dtype, order) if like is None else np.eye(N, M, k, dtype, order, like=like)  # type: ignore[call-overload]
    with scope:
        return xp.eye(N, M, k, dtype=dtype, order=order)


def _identity(n: int, dtype: Any = None, *, device: Any = None, like: Any = None) -> Any:
    """``numpy.identity`` on ``device`` (default: the default device)."""
    xp, scope = creation_namespace(device)
    if xp is np:
        return np.identity(n, dtype) if like is None else np.identity(n, dtype, like=like)
    with scope:
        return xp.identity(n, dtype=float if dtype is None else dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = float, *, device: Any = None,  # noqa: N803
        like: Any = None) -> Any:
    """``numpy.tri`` on ``device`` (default: the default device)."""
    xp, scope = creation_namespace(device)
    if xp is np:
        return np.tri(N, M, k, dtype) if like is None else np.tri(N, M, k, dtype, like=like)
    with scope:
        return xp.tri(N, M, k, dtype=dtype)


def _device_namespace_in(obj: Any) -> Any:
    """The namespace of device arrays inside a (nested) list/tuple, or None if there are none."""
    found = None
    host = False
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, (list, tuple)):
            stack.extend(o)
        elif isinstance(o, np.ndarray):
            host = True
        elif hasattr(o, "shape") and not isinstance(o, np.generic):
            ns = namespace_of(o)
            if ns is not np:
                if found is not None and found is not ns:
                    found = None
                    host = True
                    break
                found = ns
    if found is not None and host or host and found is None and _has_device(obj):
        namespace_of(*[x for x in _flat(obj) if hasattr(x, "shape")])  # raises, naming both devices
    return found


def _has_device(obj: Any) -> bool:
    return any(hasattr(x, "shape") and not isinstance(x, (np.ndarray, np.generic)) and namespace_of(x) is not np
               for x in _flat(obj))


def _flat(obj: Any) -> list[Any]:
    if isinstance(obj, (list, tuple)):
        return [y for o in obj for y in _flat(o)]
    return [obj]


def _stack_device(obj: Any, xp: Any, dtype_: Any) -> Any:
    """A device array from a nested list holding device arrays and numbers."""
    if isinstance(obj, (list, tuple)):
        return xp.stack([_stack_device(o, xp, dtype_) for o in obj])
    return xp.asarray(obj, dtype=dtype_)


def _put(a: Any, device: Any) -> Any:
    """Host or device array ``a`` on ``device`` (an explicit transfer requested by the caller)."""
    return _backend.device_put(a, device)


# --------------------------------------------------------------------------
# array / asarray

def _stack_nested(obj: Any, dtype_: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        return fnp.stack([_stack_nested(o, dtype_) for o in obj])
    return obj if dtype_ is None else astype(obj, dtype_)


def _array(obj: Any, dtype: Any = None, *, copy: bool = True, order: str = "K", ndmin: int = 0,
          device: Any = None) -> Any:
    """``numpy.array`` that also takes (nested lists of) traced values.

    A list holding traced values becomes a traced array (built with
    ``fnp.stack``), so derivatives flow through it. A device array stays on
    its device (unless ``device=`` names another: then it is copied there);
    host data goes to ``device`` (default: the default device).

    Example::

        fg.grad(lambda x: fnp.array([x[0] * 2, x[1]]).sum())(fnp.ones(2))   # [2., 1.]
    """
    if contains_box(obj):
        out = _stack_nested(obj, dtype)
        if out is obj and copy:
            out = fnp.copy(out)  # NumPy copies: an in-place write must not reach obj
        while fnp.ndim(out) < ndmin:
            out = fnp.expand_dims(out, 0)
        return out
    xp = namespace_of(obj) if not isinstance(obj, (list, tuple)) else (_device_namespace_in(obj) or np)
    if xp is not np:
        if device is not None and _backend.device_of(obj if not isinstance(obj, (list, tuple)) else _first_array(obj)) \
                != _backend.as_device(device):
            return _put(_array(obj, dtype=dtype, copy=copy, order=order, ndmin=ndmin), device)
        if isinstance(obj, (list, tuple)):
            out = _stack_device(obj, xp, dtype)
            while out.ndim < ndmin:
                out = out[None]
            return out
        return xp.array(obj, dtype=dtype, copy=copy, order=order, ndmin=ndmin)
    out = np.array(obj, dtype=dtype, copy=copy, order=order, ndmin=ndmin)  # type: ignore[call-overload]
    if device is None and _backend._default_is_cpu():
        return out
    xp, _ = creation_namespace(device)
    return out if xp is np else _put(out, device if device is not None else _backend.default_device())


def asarray(obj: Any, dtype: Any = None, order: str | None = None, *, copy: bool | None = None,
            device: Any = None) -> Any:
    """``numpy.asarray`` that passes traced values (and device arrays) through.

    Host data (lists, NumPy arrays) goes to ``device`` (default: the default
    device, the CPU unless changed); arrays already on a device stay there
    unless ``device=`` names another.

    Example::

        fnp.asarray([x, 2 * x])   # traced when x is
    """
    if isinstance(obj, Box):  # traced values are never written in place: no copy needed
        if device is not None and _backend.device_of(obj) != _backend.as_device(device):
            raise ValueError(
                f"asarray: a traced value on {_backend.device_of(obj)} cannot be moved to {device} inside a "
                f"transform; move the inputs with fg.device_put before calling the transformed function"
            )
        return obj if dtype is None or np.dtype(dtype) == fnp.result_type(obj) else astype(obj, dtype)
    if contains_box(obj):
        return _array(obj, dtype=dtype, device=device)
    if isinstance(obj, (list, tuple)) and _device_namespace_in(obj) is not None:
        return _array(obj, dtype=dtype, device=device)
    xp = namespace_of(obj)
    if xp is not np:
        if device is not None and _backend.device_of(obj) != _backend.as_device(device):
            return _put(asarray(obj, dtype=dtype, copy=copy), device)
        if copy:
            return xp.array(obj, dtype=dtype, copy=True)
        return obj if dtype is None else obj.astype(dtype, copy=False)
    out = np.asarray(obj, dtype=dtype, order=order, copy=copy)  # type: ignore[arg-type]
    if device is None and _backend._default_is_cpu():
        return out
    xp, _ = creation_namespace(device)
    return out if xp is np else _put(out, device if device is not None else _backend.default_device())


def _first_array(obj: Any) -> Any:
    for o in _flat(obj):
        if hasattr(o, "shape") and not isinstance(o, (np.ndarray, np.generic)):
            return o
    return None


# --------------------------------------------------------------------------
# astype / copy

def _astype_raw(x: Any, dtype_: Any) -> Any:
    if hasattr(x, "astype"):
        return x.astype(dtype_)
    return np.asarray(x, dtype=dtype_)


def _same_layout_rule(fn: Any) -> Any:
    """Batching for ``fn(x, *params)`` whose result has ``x``'s layout: the batch axis stays put."""

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, ...]:
        if any(d is not None for d in dims[1:]):
            from ._batching import fallback

            k = next(i for i, d in enumerate(dims) if d is not None)
            size = fnp.shape(args[k])[dims[k]]
            return fallback(get_primitive(fn), list(args), list(dims), size, kwargs)
        return fn(*args, **kwargs), dims[0]

    return rule


# A cast to an integer or boolean dtype has derivative zero almost everywhere.
_astype_nondiff = defprimitive(
    _astype_raw, name="astype_nondiff", differentiable=False, batch_from=_same_layout_rule,
)


def _astype_vjp(g: Any, ans: Any, x: Any, dtype_: Any) -> Any:
    gx = g if dtype(x).kind == "c" else fnp.real(g)
    return _astype(gx, dtype(x))


_astype = defprimitive(_astype_raw, name="astype", vjp=_astype_vjp, linear=True, batch_from=_same_layout_rule,
                       reads={0: {1}})  # x's dtype only


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


_copy = defprimitive(
    backend_function("copy"), vjp=lambda g, ans, x, *args, **kwargs: g, linear=True, reads={0: {1, 2, 3}},
    doc="Differentiable ``numpy.copy``.", batch_from=_same_layout_rule,
)


# --------------------------------------------------------------------------
# full, full_like, linspace, logspace: differentiable in their values

def _full(shape: ShapeLike, fill_value: Any, dtype: Any = None, order: str = "C", *, device: Any = None) -> Any:
    """``numpy.full`` on ``device``; differentiable in ``fill_value`` when it is traced.

    A device array as ``fill_value`` (a 0-d CuPy array, say) fills on its own
    device; scalars fill on ``device`` (default: the default device).

    Example::

        fg.grad(lambda v: fnp.full((2, 3), v).sum())(1.0)   # 6.0
    """
    if not isinstance(fill_value, Box):
        fxp = namespace_of(fill_value)
        if fxp is not np and device is None:
            with _backend.get_backend(_backend.device_of(fill_value).platform).creation_scope(
                    _backend.device_of(fill_value).id):
                return fxp.full(shape, fill_value, dtype=dtype, order=order)
        xp, scope = creation_namespace(device)
        if xp is np:
            return np.full(shape, fill_value, dtype=dtype, order=order)  # type: ignore[call-overload]
        if fxp is np and isinstance(fill_value, np.ndarray):
            fill_value = _put(fill_value, device if device is not None else _backend.default_device())
        with scope:
            return xp.full(shape, fill_value, dtype=dtype, order=order)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(cast(Sequence[SupportsIndex], shape))
    out = fnp.broadcast_to(fill_value, shape)
    if dtype is not None and np.dtype(dtype) != fnp.result_type(out):
        return astype(out, dtype)
    return _copy(out)  # a writable array of its own, not a broadcast view


_full_like_raw = defprimitive(
    backend_function("full_like"), differentiable=False, batch_from=_same_layout_rule,
)


def _full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True,
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
    return _copy(out)


# --------------------------------------------------------------------------
# device_put of traced values: a differentiable copy between devices

def _device_copy_raw(x: Any, device: Any) -> Any:
    return _backend.put_array(x, device)


# The cotangent goes back to the device of x (an explicit copy, as the forward pass is).
_device_copy: Callable[..., Any] = defprimitive(
    _device_copy_raw, name="device_copy",
    vjp=lambda g, ans, x, device: _device_copy(g, _backend.device_of(x)), linear=True,
    batch_from=_same_layout_rule,
)


def device_copy(x: Any, device: Any) -> Any:
    """``x`` on ``device``, differentiably (the derivative flows back to ``x``'s device).

    What ``fg.device_put`` does with a traced value, and what the Tensor layer's
    ``.to('cuda')`` records (``ToCopyBackward0``).
    """
    return _device_copy(x, _backend.as_device(device))


_backend.register_traced_put(device_copy)


def _shape_of(a: Any) -> tuple[Any, ...]:
    return tuple(_shape(a)) if isinstance(a, Box) or hasattr(a, "shape") else np.shape(a)


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0, *, device: Any = None) -> Any:
    """``numpy.linspace``; differentiable in ``start`` and ``stop`` when they are traced.

    Example::

        fg.jacobian(lambda ab: fnp.linspace(ab[0], ab[1], 5))(fnp.array([0.0, 1.0]))
    """
    if not (isinstance(start, Box) or isinstance(stop, Box)):
        xp = namespace_of(start, stop)
        if xp is np:
            xp, scope = creation_namespace(device)
            if xp is np:
                return np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype, axis=axis)  # type: ignore[call-overload]
        else:
            scope = _backend.NULL_SCOPE
        with scope:
            return xp.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype, axis=axis)
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
        try:  # NumPy arrays: NumPy's own choice, for the whole result
            any_zero = bool(fnp.any(fnp.equal(step, 0))) if xp is np else None
        except (TypeError, ValueError):  # batched by vmap, or staged by fg.jit: no Python control flow
            any_zero = None
        if any_zero is None:  # a device (no host sync) or a batch: choose elementwise
            y = fnp.where(fnp.equal(step, 0), steps / div * delta, steps * step)
        elif any_zero:
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
             dtype: Any = None, axis: int = 0, *, device: Any = None) -> Any:
    """``numpy.logspace`` on ``device``; differentiable in ``start``, ``stop`` and ``base`` when traced."""
    if not any(isinstance(v, Box) for v in (start, stop, base)):
        xp = namespace_of(start, stop, base)
        if xp is np:
            xp, scope = creation_namespace(device)
            if xp is np:
                return np.logspace(start, stop, num, endpoint=endpoint, base=base, dtype=dtype, axis=axis)
        else:
            scope = _backend.NULL_SCOPE
        with scope:
            return xp.logspace(start, stop, num, endpoint=endpoint, base=base, dtype=dtype, axis=axis)
    y = linspace(start, stop, num, endpoint=endpoint, axis=axis, device=device)
    if isinstance(base, (int, float, complex, np.generic)):
        b = base  # a scalar combines with y on any device
    elif isinstance(base, Box) or namespace_of(base) is not np:
        b = asarray(base)
    else:  # host data for the base: on y's device, like the rest of the result
        b = asarray(base, device=_backend.device_of(y))
    if fnp.ndim(b):
        b = fnp.expand_dims(b, axis)
    out = fnp.power(b, y)
    return out if dtype is None else astype(out, dtype)


# Inside a transform the creation functions return a constant box (see
# funcgrad.numpy.inplace), so that NumPy code writing traced values into a new
# array (``J = fnp.zeros((n, n)); J[i] = f(x[i])``) works unchanged.

from .inplace import creation_function  # noqa: E402

zeros = creation_function(_zeros)
ones = creation_function(_ones)
empty = creation_function(_empty)
eye = creation_function(_eye)
identity = creation_function(_identity)
array = creation_function(_array)
copy = creation_function(_copy)
full = creation_function(_full)
full_like = creation_function(_full_like)
