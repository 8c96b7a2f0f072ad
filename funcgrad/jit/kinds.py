"""What kind of function an equation calls and what kind of value an atom holds.

Shared by the passes and the backends: a one-result ufunc is elementwise (and takes
``out=``), a generalized ufunc (``matmul``) takes ``out=`` but may not alias an argument,
and only host NumPy arrays may be read back or blocked (device arrays never leave the
device here).
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_ufunc", "is_gufunc", "is_host_array", "host_number"]


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
