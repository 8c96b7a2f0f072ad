"""The rectifier as two primitives: ``relu`` and its derivative's mask, each one pass.

``relu(x) = max(x, 0)`` (a NaN stays NaN, as in PyTorch and JAX). Its VJP and JVP
are ``positive_part(v, relu(x))``: ``v`` where ``x > 0`` and an exact zero elsewhere (the
derivative at 0 is 0), linear in ``v`` and constant in ``x``, so it differentiates
again into itself. The mask is read from the result (``relu(x) > 0`` exactly where
``x > 0``, and a NaN stays NaN), as PyTorch's ``ReluBackward0`` does, so the tape
keeps the output, which the next layer keeps anyway, and frees the input. Both
avoid ``where`` over a data-dependent mask, which NumPy runs several times slower
than an arithmetic pass: the mask zeroes the cotangent's bits (an ``and`` with
all-ones or all-zeros words), which keeps an infinite or NaN cotangent out of the
zeroed positions, as a select would.

Example::

    y = relu(x)
    dx = positive_part(g, x)      # the VJP of relu at x for the cotangent g
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from ..jit.kinds import declare_elementwise_writer
from ..numpy._batching import elementwise_rule
from ..numpy._util import unbroadcast

__all__ = ["relu", "positive_part"]

_WORDS = {2: "int16", 4: "int32", 8: "int64"}
_ROW = 1024  # the length of the rows of zeros a large host array is compared with
_ZEROS: dict[Any, Any] = {}  # dtype -> a read-only row of _ROW zeros


def _zero_row(dtype: Any) -> Any:
    row = _ZEROS.get(dtype)
    if row is None:
        row = np.zeros(_ROW, dtype=dtype)
        row.setflags(write=False)
        _ZEROS[dtype] = row
    return row


def _floor_at_zero(x: Any, out: Any) -> Any:
    """``maximum(x, 0)`` into ``out`` (None: a new array). NumPy (2.4) runs ``maximum`` against a scalar
    without its vector loop, against an array with it (2-3x faster on large arrays, the same bits): a
    contiguous host float array whose size is a multiple of :data:`_ROW` is compared row by row with a row
    of zeros."""
    if (type(x) is np.ndarray and x.dtype.kind == "f" and x.size >= 4 * _ROW and x.size % _ROW == 0
            and x.flags.c_contiguous and (out is None or (type(out) is np.ndarray and out.flags.c_contiguous))):
        rows = x.reshape(x.size // _ROW, _ROW)
        if out is None:
            return np.maximum(rows, _zero_row(x.dtype)).reshape(x.shape)
        np.maximum(rows, _zero_row(x.dtype), out=out.reshape(rows.shape))
        return out
    xp = namespace_of(x)
    return xp.maximum(x, 0) if out is None else xp.maximum(x, 0, out=out)


def _relu_raw(x: Any, nan_passes: bool = False) -> Any:
    return _floor_at_zero(x, None)


def _relu_into(x: Any, nan_passes: bool = False, *, out: Any) -> Any:
    """:func:`relu` written into ``out`` (``x`` itself where ``fg.jit`` knows it dies here)."""
    return _floor_at_zero(x, out)


def _positive_part_raw(v: Any, x: Any, nan_passes: bool = False) -> Any:
    return _positive_part_into(v, x, nan_passes)


def _positive_part_into(v: Any, x: Any, nan_passes: bool = False, *, out: Any = None) -> Any:
    """:func:`positive_part`, written into ``out`` where given (``v`` or ``x`` itself where ``fg.jit`` knows it
    dies here: the mask is made before anything is written)."""
    xp = namespace_of(v)
    # True where v is zeroed (x <= 0: PyTorch's mask, a NaN in x lets v through), else where v is kept
    mask = (x <= 0) if nan_passes else (x > 0)
    word = _WORDS.get(v.dtype.itemsize) if v.dtype.kind == "f" else None
    if word is None or tuple(v.shape) != tuple(x.shape):
        zero = xp.zeros((), dtype=v.dtype)
        picked = xp.where(mask, zero, v) if nan_passes else xp.where(mask, v, zero)
        if out is None:
            return picked
        out[...] = picked
        return out
    # the mask as bytes of all bits set or clear (sign-extended to v's word by the AND), one byte per element,
    # turned into them in place (the comparison's result is fresh: no second byte array)
    keep = mask.view(xp.int8)
    if nan_passes:
        keep -= 1  # 1 (zeroed) -> 0, 0 -> -1
    elif isinstance(keep, np.ndarray):
        np.negative(keep, out=keep)
    else:
        keep *= -1
    if out is None:
        return xp.bitwise_and(xp.ascontiguousarray(v).view(word), keep).view(v.dtype)
    xp.bitwise_and(xp.ascontiguousarray(v).view(word), keep, out=out.view(word))
    return out


positive_part: Callable[..., Any] = defprimitive(
    _positive_part_raw, name="positive_part",
    vjp={0: lambda g, ans, v, x, nan_passes=False: unbroadcast(positive_part(g, x, nan_passes=nan_passes), v),
         1: lambda g, ans, v, x, nan_passes=False: fnp.zeros_like(x)},
    jvp={0: lambda t, ans, v, x, nan_passes=False: positive_part(t, x, nan_passes=nan_passes),
         1: lambda t, ans, v, x, nan_passes=False: fnp.zeros_like(ans)},
    batch_from=elementwise_rule, reads={0: {1}, 1: {1}},
    doc="``v`` where ``x > 0``, exactly 0 elsewhere: the derivative of :func:`relu` at ``x`` applied to ``v``; "
        "with ``nan_passes=True``, ``v`` also where ``x`` is NaN (zero exactly where ``x <= 0``, as PyTorch).")

relu: Callable[..., Any] = defprimitive(
    _relu_raw, name="relu",
    vjp=lambda g, ans, x, nan_passes=False: positive_part(g, ans, nan_passes=nan_passes),
    jvp=lambda t, ans, x, nan_passes=False: positive_part(t, ans, nan_passes=nan_passes),
    batch_from=elementwise_rule, reads={0: {"ans"}},
    doc="``max(x, 0)``, one pass; the derivative at 0 is 0 (as in PyTorch and JAX), a NaN stays NaN. Its "
        "derivative at a NaN is 0 (JAX's), or, with ``nan_passes=True``, 1 (PyTorch's: the Tensor layer's).")

# fg.jit's replay may run both in place, into an argument (or a temporary) that dies at the call
declare_elementwise_writer(_relu_raw, into=_relu_into)
declare_elementwise_writer(_positive_part_raw, into=_positive_part_into)
