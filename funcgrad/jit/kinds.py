"""What kind of function an equation calls and what kind of value an atom holds.

Shared by the passes and the backends: a one-result ufunc is elementwise (and takes
``out=``), a generalized ufunc (``matmul``) takes ``out=`` but may not alias an argument,
and only host NumPy arrays may be read back or blocked (device arrays never leave the
device here).

Functions of higher layers (the nn kernels) declare what the replay may assume of them:
:func:`declare_elementwise_writer` for a function that, like a ufunc, reads its arguments
elementwise, takes ``out=`` (which may be one of its arguments) and otherwise returns a fresh
array; :func:`declare_fresh_result` for one whose result is a new array that nothing else
holds (so a later call may write into it once it dies), with an optional variant that
writes into ``out=``. An elementwise writer may not keep its arguments (in a memo keyed by
them, say): the replay writes into an argument once it is dead.

Example::

    declare_elementwise_writer(_relu_raw, into=_relu_into)   # _relu_into(x, out=x): relu in place
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_ufunc", "is_gufunc", "is_host_array", "host_number", "declare_elementwise_writer",
           "declare_fresh_result", "writes_out", "takes_out", "writer_of", "makes_fresh"]

_ELEMENTWISE: set[Any] = set()  # declared elementwise writers (the kernels of higher layers)
_FRESH: set[Any] = set()  # declared functions whose result is a new array nothing else holds
_INTO: dict[Any, Any] = {}  # declared function -> its variant that writes into ``out=``


def is_ufunc(fn: Any) -> bool:
    """An elementwise ufunc with one result (not a generalized one such as matmul)."""
    return type(fn).__name__ == "ufunc" and getattr(fn, "nout", 0) == 1 and getattr(fn, "signature", None) is None


def is_gufunc(fn: Any) -> bool:
    """A generalized ufunc (matmul): it takes ``out=``, but its result may not alias an argument."""
    return type(fn).__name__ == "ufunc" and getattr(fn, "nout", 0) == 1 and getattr(fn, "signature", None) is not None


def is_host_array(kind: Any) -> bool:
    """Is the type ``kind`` NumPy's ndarray?"""
    return getattr(kind, "__name__", "") == "ndarray" and getattr(kind, "__module__", "") == "numpy"


def host_number(value: Any) -> Any:
    """``value`` as a Python number if it is a host scalar or size-1 host array, else None
    (device arrays are never read back to the host here)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and getattr(value, "size", 0) == 1 and getattr(value, "dtype", None) is not None:
        if value.dtype.kind in "fiu":
            return value.item()
    return None


def declare_elementwise_writer(fn: Any, into: Any) -> Any:
    """Declare ``fn`` elementwise, with ``into(*args, out=out)`` the same call writing its one result into
    ``out`` (an array of the result's shape and dtype, possibly one of the arguments) and returning it;
    ``fn`` returns a fresh array and keeps no view or memo of its arguments. The replay then treats ``fn``
    as a ufunc: it calls ``into`` to write into an argument or a temporary that dies at the call. Returns
    ``fn``."""
    _ELEMENTWISE.add(fn)
    return declare_fresh_result(fn, into)


def declare_fresh_result(fn: Any, into: Any = None) -> Any:
    """Declare that ``fn`` returns a new array (no view of an argument, held by nothing else), so that a
    later elementwise call may write into it once nothing reads it; ``into``: the same call writing its
    result into ``out=`` (never one of the arguments: a temporary of the replay's). Returns ``fn``."""
    _FRESH.add(fn)
    if into is not None:
        _INTO[fn] = into
    return fn


def writes_out(fn: Any, kwargs: Any = None) -> bool:
    """Called with these keyword arguments, elementwise and with ``out=``: a ufunc called without any, or a
    declared writer (:func:`declare_elementwise_writer`) called without ``out``."""
    if fn in _ELEMENTWISE:
        return not kwargs or "out" not in kwargs
    return is_ufunc(fn) and not kwargs


def takes_out(fn: Any, kwargs: Any = None) -> bool:
    """Called with these keyword arguments, it can write its result into ``out=`` (through
    :func:`writer_of`): a ufunc or generalized ufunc called without any, or a declared function with
    an ``into`` variant, called without ``out``."""
    if fn in _INTO:
        return not kwargs or "out" not in kwargs
    return (is_ufunc(fn) or is_gufunc(fn)) and not kwargs


def writer_of(fn: Any) -> Any:
    """The function that writes ``fn``'s result into ``out=``: ``fn`` itself for a ufunc."""
    return _INTO.get(fn, fn)


def makes_fresh(fn: Any, kwargs: Any = None) -> bool:
    """Called with these keyword arguments, its result owns its memory: a ufunc or a generalized ufunc
    called without any, or a declared function (:func:`declare_fresh_result`) called without ``out``."""
    if fn in _FRESH:
        return not kwargs or "out" not in kwargs
    return (is_ufunc(fn) or is_gufunc(fn)) and not kwargs
