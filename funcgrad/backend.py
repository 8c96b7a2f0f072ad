"""Array namespaces and devices: which library (numpy, cupy, ...) owns an array.

Every array operation in funcgrad goes through the namespace of the arrays it
is given, so device arrays never round-trip through the host. NumPy is the
default; CuPy (and the test-suite's fake device backend) register themselves
with :func:`register_namespace`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from .core import unbox_all

__all__ = ["namespace_of", "register_namespace", "shape_of", "dtype_of", "is_float_dtype"]

# type -> namespace module. Python and NumPy scalars count as NumPy.
_NAMESPACE_BY_TYPE: dict[type, Any] = {
    np.ndarray: np,
    float: np,
    int: np,
    bool: np,
    complex: np,
}
_registered: list[tuple[type, Any]] = []

# Types that a plain NumPy call accepts as-is: host arrays, Python and NumPy scalars.
NUMPY_FAST_TYPES: frozenset = frozenset(
    [np.ndarray, float, int, bool, complex, type(None)]
    + [getattr(np, n) for n in ("float16", "float32", "float64", "longdouble", "complex64", "complex128",
                                "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_")]
)


def register_namespace(array_type: type, namespace: Any) -> None:
    """Route arrays of ``array_type`` (and subclasses) to ``namespace``."""
    _registered.append((array_type, namespace))
    _NAMESPACE_BY_TYPE[array_type] = namespace


def _lookup(t: type) -> Any:
    for array_type, ns in _registered:
        if issubclass(t, array_type):
            _NAMESPACE_BY_TYPE[t] = ns
            return ns
    if issubclass(t, (np.ndarray, np.generic)):
        _NAMESPACE_BY_TYPE[t] = np
    return np


def namespace_of(*xs: Any) -> Any:
    """The array namespace (numpy, cupy, ...) of the given arrays.

    Scalars defer to arrays; arrays of two different namespaces are an error
    rather than a silent copy.
    """
    found = None
    for x in xs:
        ns = _NAMESPACE_BY_TYPE.get(type(x))
        if ns is None:
            x = unbox_all(x)
            ns = _NAMESPACE_BY_TYPE.get(type(x)) or _lookup(type(x))
        if ns is not np:
            if found is not None and found is not ns:
                raise ValueError(
                    f"arrays from different devices/backends in one operation: "
                    f"{getattr(found, '__name__', found)} and {getattr(ns, '__name__', ns)}; "
                    f"move them to one device first with fg.device_put"
                )
            found = ns
    return found or np


def shape_of(x: Any) -> tuple[int, ...]:
    x = unbox_all(x)
    s = getattr(x, "shape", None)
    return () if s is None else tuple(s)


def dtype_of(x: Any) -> Any:
    x = unbox_all(x)
    d = getattr(x, "dtype", None)
    if d is None:
        return np.result_type(x)
    return d


def is_float_dtype(dtype: Any) -> bool:
    """Floating or complex: the dtypes that can carry a derivative."""
    return np.dtype(dtype).kind in "fc"


def to_numpy(x: Any) -> Any:
    """Copy an array (or every leaf of a pytree) to a host NumPy array, explicitly.

    Example::

        fg.to_numpy(cupy_array)   # a numpy.ndarray
    """
    from . import tree_util

    def one(v: Any) -> Any:
        v = unbox_all(v)
        if isinstance(v, (np.ndarray, np.generic, int, float, complex, bool)):
            return np.asarray(v)
        if hasattr(v, "get"):
            return v.get()
        ns = namespace_of(v)
        if hasattr(ns, "asnumpy"):
            return ns.asnumpy(v)
        return np.asarray(v)

    return tree_util.tree_map(one, x)
