"""Functions without a derivative: queries, comparisons, logic, rounding, argmax ...

Queries (shape, ndim, dtype ...) are plain functions. The others are
``nondiff_primitive``: differentiating traces pass them through with a zero
derivative, while batching still sees them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Box, nondiff_primitive
from ._util import backend_function, dtype, ndim, shape

_ONE_ARRAY = [
    "argmax", "argmin", "argsort", "argwhere", "nonzero", "flatnonzero", "isnan", "isinf", "isfinite",
    "isneginf", "isposinf", "signbit", "logical_not", "floor", "ceil", "rint", "trunc", "fix", "sign",
    "count_nonzero", "any", "all", "iscomplex", "isreal", "searchsorted", "digitize", "bincount",
    "unique", "zeros_like", "ones_like", "empty_like", "full_like", "round", "around",
]
_TWO_ARRAYS = [
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
    "logical_or", "logical_xor", "isclose", "allclose", "array_equal", "floor_divide", "bitwise_and",
    "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
]

__all__ = ["shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj"]

for _name in _ONE_ARRAY:
    if hasattr(np, _name):
        globals()[_name] = nondiff_primitive(backend_function(_name), _name)
        __all__.append(_name)
for _name in _TWO_ARRAYS:
    if hasattr(np, _name):
        globals()[_name] = nondiff_primitive(backend_function(_name, 2), _name)
        __all__.append(_name)


def size(x: Any, axis: int | None = None) -> int:
    """Number of elements (along ``axis`` if given)."""
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
    return dtype(x).kind == "c"


def isrealobj(x: Any) -> bool:
    return not iscomplexobj(x)
