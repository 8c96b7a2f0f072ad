"""The rest of NumPy's namespace: functions with no derivative that traced values pass
through, NumPy's own utilities, types and constants, and the few names refused with a
reason.

* Histograms and set operations are non-differentiable primitives: traced inputs
  are accepted, the results carry no derivative, vmap runs them per example.
* Printing and saving take traced values and use their current values.
* Utilities that take no arrays (dtype queries, error state, print options, dates,
  file loading) are NumPy's own functions.
* Refused names raise ``NotImplementedError`` naming the function and what to use.

Example::

    counts, edges = fnp.histogram(x, bins=5)     # x may be traced; no derivative
    fnp.array2string(x)                          # the current value of x
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np
# NumPy's own: no array inputs, or dtype/datetime/error-state/file utilities.
from numpy import (  # noqa: F401
    base_repr, binary_repr, busday_count, busday_offset, busdaycalendar, datetime_as_string, datetime_data,
    errstate, format_float_positional, format_float_scientific, from_dlpack, frombuffer, fromfile, fromiter,
    fromregex, fromstring, genfromtxt, get_include, get_printoptions, getbufsize, geterr, geterrcall, info,
    is_busday, isdtype, isnat, load, loadtxt, min_scalar_type, mintypecode, poly1d, printoptions,
    set_printoptions, setbufsize, seterr, seterrcall, show_config, show_runtime, typename, ufunc, broadcast,
    flatiter, ScalarType, False_, True_, little_endian, sctypeDict, typecodes,
    bool, byte, bytes_, cdouble, character, clongdouble, csingle, datetime64, double, flexible, half, inexact,
    int_, intc, intp, long, longdouble, longlong, object_, short, signedinteger, single, str_, timedelta64,
    ubyte, uint, uintc, uintp, ulong, ulonglong, unsignedinteger, ushort, void,
    dtypes, exceptions, typing, testing, random, char, strings, rec, mask_indices, test,
)

from ..core import Box, defprimitive, unbox_all
from ._batching import batch_size, fallback
from ._util import backend_function

__all__ = [
    "histogram", "histogram2d", "histogramdd", "histogram_bin_edges", "intersect1d", "union1d", "setdiff1d",
    "setxor1d", "packbits", "unpackbits", "array2string", "array_repr", "array_str", "save", "savetxt", "savez",
    "savez_compressed", "einsum_path", "iterable", "isfortran", "may_share_memory", "shares_memory",
    "common_type", "asmatrix", "bmat", "matrix", "frompyfunc", "nditer", "nested_iters", "memmap", "recarray",
    "record",
    # NumPy's own
    "base_repr", "binary_repr", "busday_count", "busday_offset", "busdaycalendar", "datetime_as_string",
    "datetime_data", "errstate", "format_float_positional", "format_float_scientific", "from_dlpack", "frombuffer",
    "fromfile", "fromiter", "fromregex", "fromstring", "genfromtxt", "get_include", "get_printoptions",
    "getbufsize", "geterr", "geterrcall", "info", "is_busday", "isdtype", "isnat", "load", "loadtxt",
    "min_scalar_type", "mintypecode", "poly1d", "printoptions", "set_printoptions", "setbufsize", "seterr",
    "seterrcall", "show_config", "show_runtime", "typename", "ufunc", "broadcast", "flatiter", "ScalarType",
    "False_", "True_", "little_endian", "sctypeDict", "typecodes",
    "bool", "byte", "bytes_", "cdouble", "character", "clongdouble", "csingle", "datetime64", "double", "flexible",
    "half", "inexact", "int_", "intc", "intp", "long", "longdouble", "longlong", "object_", "short",
    "signedinteger", "single", "str_", "timedelta64", "ubyte", "uint", "uintc", "uintp", "ulong", "ulonglong",
    "unsignedinteger", "ushort", "void", "dtypes", "exceptions", "typing", "testing", "random", "char", "strings",
    "rec", "mask_indices", "test",
]
# Extended-precision types exist on some platforms only.
for _name in ("float128", "complex256", "float96", "complex192"):
    if hasattr(np, _name):
        globals()[_name] = getattr(np, _name)
        __all__.append(_name)


def _passing(name: str, n_arrays: int, multiple: builtins.bool = False) -> Callable[..., Any]:
    """A primitive with no derivative: traced values pass through; vmap runs it per example."""

    def batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, ...]:
        return fallback(fn.primitive, list(args), list(dims), batch_size(args, dims), kwargs)  # type: ignore[attr-defined]

    fn = defprimitive(backend_function(name, n_arrays), name=name, multiple_results=multiple,
                      differentiable=False, batch=batch)
    return fn


_histogram = _passing("histogram", 1, multiple=True)
_histogram_bin_edges = _passing("histogram_bin_edges", 1)
_histogram2d = _passing("histogram2d", 2, multiple=True)
intersect1d_ = _passing("intersect1d", 2)
union1d = _passing("union1d", 2)
setdiff1d = _passing("setdiff1d", 2)
setxor1d = _passing("setxor1d", 2)
packbits = _passing("packbits", 1)
unpackbits = _passing("unpackbits", 1)


def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> tuple[Any, ...]:
    """``numpy.histogram`` (no derivative: traced ``a``/``weights`` pass through).

    Example::

        counts, edges = fnp.histogram(x, bins=4)
    """
    out: tuple[Any, ...] = _histogram(a, bins, range, density, weights)
    return out


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    """``numpy.histogram_bin_edges`` (no derivative).

    Example::

        fnp.histogram_bin_edges(x, bins=4)
    """
    return _histogram_bin_edges(a, bins, range, weights)


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, density: Any = None,
                weights: Any = None) -> tuple[Any, ...]:
    """``numpy.histogram2d`` (no derivative).

    Example::

        h, ex, ey = fnp.histogram2d(x, y, bins=3)
    """
    out: tuple[Any, ...] = _histogram2d(x, y, bins, range, density, weights)
    return out


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, density: Any = None,
                weights: Any = None) -> tuple[Any, ...]:
    """``numpy.histogramdd`` on the current values (no derivative; not batched by vmap).

    Example::

        h, edges = fnp.histogramdd(points, bins=3)
    """
    return np.histogramdd(_host(sample), bins, range, density, _host(weights))


def intersect1d(ar1: Any, ar2: Any, assume_unique: builtins.bool = False, return_indices: builtins.bool = False) -> Any:
    """``numpy.intersect1d`` (no derivative: traced values pass through).

    Example::

        fnp.intersect1d(a, b)
    """
    if return_indices:
        return np.intersect1d(_host(ar1), _host(ar2), assume_unique, True)
    return intersect1d_(ar1, ar2, assume_unique)


def _host(x: Any) -> Any:
    if x is None:
        return None
    from ..backend import to_numpy

    if isinstance(x, (list, tuple)):
        return type(x)(_host(v) for v in x)
    v = unbox_all(x)
    return to_numpy(v) if hasattr(v, "shape") else v


def array2string(a: Any, *args: Any, **kwargs: Any) -> str:
    """``numpy.array2string`` of the current value (traced values print their value).

    Example::

        fnp.array2string(x, precision=3)
    """
    return np.array2string(_host(a), *args, **kwargs)


def array_repr(arr: Any, *args: Any, **kwargs: Any) -> str:
    """``numpy.array_repr`` of the current value.

    Example::

        fnp.array_repr(x)
    """
    return np.array_repr(_host(arr), *args, **kwargs)


def array_str(a: Any, *args: Any, **kwargs: Any) -> str:
    """``numpy.array_str`` of the current value.

    Example::

        fnp.array_str(x)
    """
    return np.array_str(_host(a), *args, **kwargs)


def save(file: Any, arr: Any, allow_pickle: builtins.bool = False) -> None:
    """``numpy.save`` of the current value (host copy of a device array; no pickles by default).

    Example::

        fnp.save("x.npy", x)
    """
    np.save(file, _host(arr), allow_pickle=allow_pickle)


def savetxt(fname: Any, X: Any, *args: Any, **kwargs: Any) -> None:
    """``numpy.savetxt`` of the current value.

    Example::

        fnp.savetxt("x.txt", x)
    """
    np.savetxt(fname, _host(X), *args, **kwargs)


def savez(file: Any, *args: Any, **kwds: Any) -> None:
    """``numpy.savez`` of the current values.

    Example::

        fnp.savez("arrays.npz", x=x, y=y)
    """
    np.savez(file, *[_host(a) for a in args], **{k: _host(v) for k, v in kwds.items()})


def savez_compressed(file: Any, *args: Any, **kwds: Any) -> None:
    """``numpy.savez_compressed`` of the current values.

    Example::

        fnp.savez_compressed("arrays.npz", x=x)
    """
    np.savez_compressed(file, *[_host(a) for a in args], **{k: _host(v) for k, v in kwds.items()})


def _shape_only(x: Any) -> Any:
    from ._util import dtype, shape

    if isinstance(x, Box) or hasattr(x, "shape"):
        return np.broadcast_to(np.zeros((), dtype=dtype(x)), tuple(shape(x)))
    return x


def einsum_path(subscripts: Any, *operands: Any, **kwargs: Any) -> Any:
    """``numpy.einsum_path``: the contraction order, from shapes only (traced values welcome).

    Example::

        path, report = fnp.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")
    """
    return np.einsum_path(subscripts, *[_shape_only(o) for o in operands], **kwargs)


def iterable(y: Any) -> builtins.bool:
    """``numpy.iterable`` (a traced array is iterable unless 0-d).

    Example::

        fnp.iterable(x)
    """
    if isinstance(y, Box):
        return len(y._shape()) > 0
    return np.iterable(y)


def isfortran(a: Any) -> bool:
    """``numpy.isfortran`` of the underlying array.

    Example::

        fnp.isfortran(x)
    """
    v = unbox_all(a)
    return bool(getattr(v, "flags", None) is not None and v.flags.f_contiguous and not v.flags.c_contiguous)


def may_share_memory(a: Any, b: Any, max_work: Any = None) -> bool:
    """``numpy.may_share_memory`` of the underlying arrays.

    Example::

        fnp.may_share_memory(x, x[1:])
    """
    from ..backend import namespace_of

    a, b = unbox_all(a), unbox_all(b)
    return bool(namespace_of(a, b).may_share_memory(a, b))


def shares_memory(a: Any, b: Any, max_work: Any = None) -> bool:
    """``numpy.shares_memory`` of the underlying arrays.

    Example::

        fnp.shares_memory(x, x[1:])
    """
    from ..backend import namespace_of

    a, b = unbox_all(a), unbox_all(b)
    return bool(namespace_of(a, b).shares_memory(a, b))


def common_type(*arrays: Any) -> Any:
    """``numpy.common_type``: the inexact scalar type common to the arrays (from dtypes only).

    Example::

        fnp.common_type(x, y)   # numpy.float64
    """
    from ._util import dtype

    return np.common_type(*[np.zeros(0, dtype=dtype(a)) for a in arrays])


# --- refused -----------------------------------------------------------------

REFUSED: dict[str, str] = {
    "asmatrix": "numpy.matrix is not supported (NumPy itself discourages it); use 2-D arrays with @",
    "bmat": "numpy.matrix is not supported; assemble 2-D arrays with fnp.block",
    "matrix": "numpy.matrix is not supported; use 2-D arrays with @ (fnp.asarray)",
    "frompyfunc": "object-array ufuncs cannot carry derivatives; use fnp.vectorize (vmap underneath) or fg.vmap",
    "nditer": "a C-level iterator over plain memory; iterate with fnp.ndenumerate / fnp.ndindex, or vectorize",
    "nested_iters": "a C-level iterator over plain memory; use fnp.ndindex or vectorized code",
    "memmap": "file-backed arrays hold plain data: load with numpy.memmap, then fnp.asarray(...)",
    "recarray": "record arrays (named fields) cannot be traced: keep one array per field (a dict is a pytree)",
    "record": "record scalars cannot be traced: keep one array per field (a dict is a pytree)",
}


def _refused(name: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"funcgrad.numpy.{name} is not supported: {REFUSED[name]}")

    refused.__name__ = refused.__qualname__ = name
    refused.__doc__ = f"Refused: {REFUSED[name]}."
    return refused


for _name in REFUSED:
    globals()[_name] = _refused(_name)
