"""Functions without a derivative: queries, comparisons, logic, rounding, argmax ...

Queries (shape, ndim, dtype ...) are plain functions. The others are
``nondiff_primitive``: differentiating traces pass them through with a zero
derivative, while batching still sees them. Functions whose *values* come
from the input (``unique``, ``bincount`` with weights) are differentiable and
live in ``indexing``; ``full_like`` (differentiable in its fill value) lives
in ``creation``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
# Dtype queries and index builders that take no arrays: NumPy's own.
from numpy import diag_indices, indices, isscalar, issubdtype, promote_types, tril_indices, triu_indices  # noqa: F401

from ..backend import namespace_of
from ..core import Box, nondiff_primitive
from ..core.batching import BatchBox
from ._util import backend_function, dtype

_ONE_ARRAY = [
    "argmax", "argmin", "argsort", "argwhere", "nonzero", "flatnonzero", "isnan", "isinf", "isfinite",
    "isneginf", "isposinf", "signbit", "logical_not", "floor", "ceil", "rint", "trunc", "fix", "sign",
    "count_nonzero", "any", "all", "iscomplex", "isreal", "searchsorted", "digitize",
    "zeros_like", "ones_like", "empty_like", "round", "around", "nanargmax", "nanargmin",
    "argpartition", "invert", "bitwise_not", "unravel_index", "tril_indices_from", "triu_indices_from",
    "diag_indices_from",
]
_TWO_ARRAYS = [
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
    "logical_or", "logical_xor", "isclose", "allclose", "array_equal", "floor_divide", "bitwise_and",
    "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "isin", "heaviside", "gcd", "lcm",
    "array_equiv",
]
__all__ = [
    "shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "can_cast", "lexsort",
    "ravel_multi_index", "ix_", "diag_indices", "indices", "isscalar", "issubdtype", "promote_types",
    "tril_indices", "triu_indices",
]

for _name in _ONE_ARRAY:
    if hasattr(np, _name):
        globals()[_name] = nondiff_primitive(backend_function(_name), _name)
        __all__.append(_name)
for _name in _TWO_ARRAYS:
    if hasattr(np, _name):
        globals()[_name] = nondiff_primitive(backend_function(_name, 2), _name)
        __all__.append(_name)


def _concrete(x: Any, fn: str) -> Any:
    """The value behind differentiation boxes (the same value); a vmap box is refused."""
    while isinstance(x, Box):
        if isinstance(x, BatchBox):
            raise NotImplementedError(f"{fn} of a value batched by vmap is not supported")
        x = x._value
    return x


def shape(x: Any) -> tuple[int, ...]:
    """``numpy.shape``: the shape of an array, traced value, scalar or nested list.

    Example::

        fnp.shape(x)   # inside fg.grad too
    """
    if isinstance(x, Box):
        return x._shape()
    s = getattr(x, "shape", None)
    if s is not None:
        return tuple(s)
    return np.shape(x)


def ndim(x: Any) -> int:
    """``numpy.ndim``: the number of dimensions (traced values too)."""
    return len(shape(x))


def size(x: Any, axis: int | None = None) -> int:
    """``numpy.size``: number of elements (along ``axis`` if given), traced values too."""
    s = shape(x)
    if axis is not None:
        return s[axis]
    n = 1
    for d in s:
        n *= d
    return n


def result_type(*xs: Any) -> np.dtype:
    """``numpy.result_type`` that looks through traced values."""
    return np.result_type(*[dtype(x) if isinstance(x, Box) else x for x in xs])


def iscomplexobj(x: Any) -> bool:
    """``numpy.iscomplexobj`` that looks through traced values."""
    return dtype(x).kind == "c"


def isrealobj(x: Any) -> bool:
    """``numpy.isrealobj`` that looks through traced values."""
    return not iscomplexobj(x)


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """``numpy.can_cast``; a traced value or array stands for its dtype."""
    if isinstance(from_, Box) or hasattr(from_, "dtype"):
        from_ = dtype(from_)
    return np.can_cast(from_, to, casting=casting)


def lexsort(keys: Any, axis: int = -1) -> Any:
    """``numpy.lexsort`` (no derivative); the keys may be traced."""
    if isinstance(keys, (list, tuple)):
        keys = [_concrete(k, "lexsort") for k in keys]
    else:
        keys = _concrete(keys, "lexsort")
    xp = namespace_of(*keys) if isinstance(keys, list) else namespace_of(keys)
    if isinstance(keys, list) and xp is not np:
        keys = xp.stack(keys)
    return xp.lexsort(keys, axis=axis)


def ravel_multi_index(multi_index: Any, dims: Any, mode: str = "raise", order: str = "C") -> Any:
    """``numpy.ravel_multi_index`` (no derivative); the indices may be traced."""
    multi_index = tuple(_concrete(i, "ravel_multi_index") for i in multi_index)
    xp = namespace_of(*multi_index)
    return xp.ravel_multi_index(multi_index, dims, mode=mode, order=order)


def ix_(*args: Any) -> tuple:
    """``numpy.ix_`` (no derivative); the index sequences may be traced."""
    args = tuple(_concrete(a, "ix_") for a in args)
    return namespace_of(*args).ix_(*args)
