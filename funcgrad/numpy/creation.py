"""Array creation, and ``array``/``asarray`` that accept traced values."""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..core import Box, def_linear, defvjp, primitive
from ._util import backend_function, dtype

__all__ = [
    "array", "asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye",
    "identity", "astype", "copy", "tri",
]

zeros = np.zeros
ones = np.ones
empty = np.empty
full = np.full
arange = np.arange
linspace = np.linspace
logspace = np.logspace
eye = np.eye
identity = np.identity
tri = np.tri


def _contains_box(obj: Any) -> bool:
    if isinstance(obj, Box):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_contains_box(o) for o in obj)
    return False


def _stack_nested(obj: Any, dtype_: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        return fnp.stack([_stack_nested(o, dtype_) for o in obj])
    return obj if dtype_ is None else fnp.astype(obj, dtype_)


def array(obj: Any, dtype: Any = None, copy: bool = True, ndmin: int = 0) -> Any:
    """``numpy.array`` that also takes (nested lists of) traced values.

    Example::

        fg.grad(lambda x: fnp.array([x[0] * 2, x[1]]).sum())(fnp.ones(2))
    """
    if _contains_box(obj):
        out = _stack_nested(obj, dtype)
        while fnp.ndim(out) < ndmin:
            out = fnp.expand_dims(out, 0)
        return out
    return np.array(obj, dtype=dtype, copy=copy, ndmin=ndmin)


def asarray(obj: Any, dtype: Any = None) -> Any:
    """``numpy.asarray`` that passes traced values (and device arrays) through."""
    if isinstance(obj, Box):
        return obj if dtype is None or np.dtype(dtype) == fnp.result_type(obj) else astype(obj, dtype)
    if _contains_box(obj):
        return array(obj, dtype=dtype)
    if hasattr(obj, "__array_namespace__") and not isinstance(obj, np.ndarray):
        return obj if dtype is None else obj.astype(dtype)
    return np.asarray(obj, dtype=dtype)


def _astype_raw(x: Any, dtype_: Any) -> Any:
    if hasattr(x, "astype"):
        return x.astype(dtype_)
    return np.asarray(x, dtype=dtype_)


astype = primitive(_astype_raw, "astype")


def _astype_vjp(g: Any, ans: Any, x: Any, dtype_: Any) -> Any:
    gx = g if dtype(x).kind == "c" else fnp.real(g)
    return astype(gx, dtype(x))


defvjp(astype, _astype_vjp)
def_linear(astype)

copy = primitive(backend_function("copy"), "copy")
defvjp(copy, lambda g, ans, x: g)
def_linear(copy)
