"""Shared helpers for primitives and their rules.

``backend_function`` builds the raw (untraced) forward function of a
primitive: it calls the same-named function of the arguments' own array
namespace (numpy, cupy, ...). ``unbroadcast`` undoes NumPy broadcasting on a
cotangent: the one place where that is done.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

try:  # NumPy >= 2
    from numpy.lib.array_utils import normalize_axis_tuple as _normalize_axis_tuple
except ImportError:  # pragma: no cover - NumPy 1.x
    from numpy.core.numeric import normalize_axis_tuple as _normalize_axis_tuple  # type: ignore[no-redef]

import funcgrad.numpy as fnp  # rules call the namespace lazily, at run time

from ..backend import _NAMESPACE_BY_TYPE, NUMPY_FAST_TYPES, dtype_of, namespace_of
from ..core import shape_of, unbox_all

__all__ = ["backend_function", "resolve", "unbroadcast", "shape", "ndim", "dtype", "is_complex", "normalize_axes", "pack"]


def resolve(namespace: Any, dotted: str) -> Callable[..., Any]:
    obj: Any = namespace
    for part in dotted.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise NotImplementedError(
                f"{getattr(namespace, '__name__', namespace)} has no function '{dotted}', "
                f"which funcgrad.numpy.{dotted} needs"
            ) from None
    fn: Callable[..., Any] = obj
    return fn


def backend_function(dotted: str, n_arrays: int = 1) -> Callable[..., Any]:
    """The raw function ``namespace.<dotted>``, namespace picked from the first ``n_arrays`` args."""
    np_fn = resolve(np, dotted)

    def one(x: Any, *args: Any, **kwargs: Any) -> Any:
        if _NAMESPACE_BY_TYPE.get(type(x)) is np:
            return np_fn(x, *args, **kwargs)
        ns = namespace_of(x)
        return (np_fn if ns is np else resolve(ns, dotted))(x, *args, **kwargs)

    def many(*args: Any, **kwargs: Any) -> Any:
        ns = namespace_of(*args[:n_arrays])
        return (np_fn if ns is np else resolve(ns, dotted))(*args, **kwargs)

    raw: Callable[..., Any] = one if n_arrays == 1 else many

    raw.fast_path = (NUMPY_FAST_TYPES, np_fn)  # type: ignore[attr-defined]
    raw.__name__ = dotted.rsplit(".", 1)[-1]
    raw.__qualname__ = raw.__name__
    raw.__doc__ = f"Differentiable ``numpy.{dotted}`` (runs on the arrays' own backend)."
    return raw


_value = unbox_all
shape = shape_of  # shape of an array, box or scalar (scalars have shape ())
dtype = dtype_of


def normalize_axes(axis: Any, nd: int, name: str = "axis") -> tuple[int, ...]:
    """``axis`` (None: every axis; an int or a sequence, negatives counting from the end) as a
    sorted tuple of non-negative ints: the one axis normalisation of the reductions. Raises
    NumPy's AxisError (a ValueError and an IndexError) when out of bounds or repeated."""
    if axis is None:
        return tuple(range(nd))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(sorted(_normalize_axis_tuple(tuple(operator.index(a) for a in items), nd, name)))


def ndim(x: Any) -> int:
    return len(shape(x))


def is_complex(x: Any) -> bool:
    return dtype(x).kind == "c"


def unbroadcast(g: Any, x: Any) -> Any:
    """Sum ``g`` down to the shape of ``x`` (undoing broadcasting) and drop an
    imaginary part that ``x`` cannot have. Differentiable."""
    target = shape(x)
    gshape = shape(g)
    if gshape != target:
        extra = len(gshape) - len(target)
        if extra > 0:
            g = fnp.sum(g, axis=tuple(range(extra)))
        axes = tuple(i for i, n in enumerate(target) if n == 1 and shape(g)[i] != 1)
        if axes:
            g = fnp.sum(g, axis=axes, keepdims=True)
    if is_complex(g) and not is_complex(x):
        g = fnp.real(g)
    return g


def pack(a: Any) -> Any:
    """A (nested) list or tuple holding traced values as one array (``fnp.array``); else ``a``."""
    from ..core.trace import _holds_box

    return fnp.array(a) if type(a) in (list, tuple) and _holds_box(a) else a
