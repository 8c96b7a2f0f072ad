"""The dense layer's product ``x @ w.T + b`` as one primitive (PyTorch's ``addmm`` behind ``F.linear``).

Recorded as one node instead of three (transpose, matmul, add), with the rules of the
three in one place; every rule is a funcgrad.numpy expression, so it differentiates
again:

    dx = g @ w                 dw = g.T @ x (over every leading axis)      db = g summed to b's shape
    tangent = tx @ w.T + x @ tw.T + tb

``w`` is a matrix ``(out, in)``; ``x`` is ``(..., in)``; ``b`` is None or broadcasts against
``(..., out)``.

Example::

    y = dense(x, w, b)     # x: (32, 64), w: (10, 64), b: (10,) -> y: (32, 10)
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ...backend import namespace_of
from ...core import defprimitive
from ...jit.kinds import declare_fresh_result
from ...numpy._batching import batch_size, front, move_to_front
from ...numpy._util import unbroadcast

__all__ = ["dense", "dense_composed"]


def dense_composed(x: Any, w: Any, b: Any) -> Any:
    """``x @ w.T + b`` in funcgrad.numpy operations (the reference of :func:`dense`)."""
    y = fnp.matmul(x, fnp.transpose(w))
    return y if b is None else y + b


def _bias_in_product(rows: Any, w: Any, b: Any) -> bool:
    """Add ``b`` inside the product (a column of ones beside ``x``'s rows, ``b`` beside ``w``'s) rather than in a
    pass over the result: for host arrays whose result is large against the two copies this makes (the first
    feed-forward layer of a Transformer: 256 rows of 64 into 2048, 15% faster)."""
    if type(rows) is not np.ndarray or type(w) is not np.ndarray or type(b) is not np.ndarray:
        return False
    if b.ndim != 1 or b.dtype != rows.dtype or w.dtype != rows.dtype or rows.ndim != 2:
        return False
    size = rows.shape[0] * w.shape[0]
    return bool(size >= _BIAS_IN_PRODUCT_SIZE and size >= 2 * (w.size + rows.size))


_BIAS_IN_PRODUCT_SIZE = 1 << 16  # result elements from which the bias may go inside the product


def _product_with_bias(rows: Any, w: Any, b: Any, out: Any = None) -> Any:
    """``rows @ w.T + b`` as one product ``[rows, 1] @ [w, b].T`` (into ``out`` where given)."""
    n, k = rows.shape
    lhs = np.empty((n, k + 1), dtype=rows.dtype)
    lhs[:, :k] = rows
    lhs[:, k] = 1
    rhs = np.empty((w.shape[0], k + 1), dtype=w.dtype)
    rhs[:, :k] = w
    rhs[:, k] = b
    return np.matmul(lhs, rhs.T) if out is None else np.matmul(lhs, rhs.T, out=out)


def _dense_raw(x: Any, w: Any, b: Any) -> Any:
    xp = namespace_of(x)
    if x.ndim > 2 and x.flags.c_contiguous:  # one GEMM over all rows (a batch of small products is slower)
        rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
    elif x.ndim == 2:
        rows = x
    else:
        rows = None
    if rows is not None and b is not None and _bias_in_product(rows, w, b):
        return _product_with_bias(rows, w, b).reshape(x.shape[:-1] + (w.shape[0],))
    if rows is not None and x.ndim > 2:
        out = xp.matmul(rows, w.T).reshape(x.shape[:-1] + (w.shape[0],))
    else:
        out = xp.matmul(x, w.T)
    if b is None:
        return out
    if b.dtype == out.dtype and b.ndim <= 1:
        out += b  # (in place: the product's own buffer)
        return out
    return out + b


def _dense_into(x: Any, w: Any, b: Any, *, out: Any) -> Any:
    """:func:`dense` written into ``out`` (a buffer of ``fg.jit``'s replay, never ``x``, ``w`` or ``b``)."""
    xp = namespace_of(x)
    if tuple(out.shape) != tuple(x.shape[:-1]) + (w.shape[0],):  # b broadcasts the result wider
        out[...] = _dense_raw(x, w, b)
        return out
    if x.ndim >= 2 and x.flags.c_contiguous and out.flags.c_contiguous:
        rows = math.prod(x.shape[:-1])
        x_rows, out_rows = x.reshape(rows, x.shape[-1]), out.reshape(rows, w.shape[0])
        if b is not None and _bias_in_product(x_rows, w, b):
            _product_with_bias(x_rows, w, b, out=out_rows)
            return out
        xp.matmul(x_rows, w.T, out=out_rows)
    else:
        xp.matmul(x, w.T, out=out)
    if b is not None:
        out += b
    return out


def _weight_vjp(g: Any, ans: Any, x: Any, w: Any, b: Any) -> Any:
    n_out, n_in = fnp.shape(w)
    return fnp.matmul(fnp.transpose(fnp.reshape(g, (-1, n_out))), fnp.reshape(x, (-1, n_in)))


def _batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    x, w, b = args
    if dims[1] is None and (b is None or dims[2] is None):  # the common case: only x is batched
        return dense(move_to_front(x, dims[0]), w, b), 0
    size = batch_size(args, dims)
    xb, wb = front(x, dims[0], size), front(w, dims[1], size)  # (B, ..., in), (B, out, in)
    lead = fnp.ndim(xb) - 2  # x's own leading axes
    if lead == 0:  # a batch of vectors: one row each
        xb = fnp.reshape(xb, (size, 1, fnp.shape(xb)[-1]))
    wb = fnp.reshape(wb, (size,) + (1,) * max(lead - 1, 0) + tuple(fnp.shape(wb)[1:]))
    y = fnp.matmul(xb, fnp.swapaxes(wb, -1, -2))
    if lead == 0:
        y = fnp.reshape(y, (size, fnp.shape(y)[-1]))
    if b is not None:
        if dims[2] is None:
            y = y + b
        else:  # the batch axis of b lined up with y's
            bb = move_to_front(b, dims[2])
            y = y + fnp.reshape(bb, (size,) + (1,) * (fnp.ndim(y) - fnp.ndim(bb)) + tuple(fnp.shape(bb)[1:]))
    return y, 0


dense: Callable[..., Any] = defprimitive(
    _dense_raw, name="dense",
    vjp=(lambda g, ans, x, w, b: fnp.matmul(g, w), _weight_vjp, lambda g, ans, x, w, b: unbroadcast(g, b)),
    jvp=(lambda t, ans, x, w, b: fnp.matmul(t, fnp.transpose(w)),
         lambda t, ans, x, w, b: fnp.matmul(x, fnp.transpose(t)),
         lambda t, ans, x, w, b: fnp.broadcast_to(t, fnp.shape(ans))),
    batch=_batch, reads={0: {1}, 1: {0}, 2: set()},
    doc="``x @ w.T + b`` (``b`` may be None) for a matrix ``w`` ``(out, in)`` and ``x`` ``(..., in)``, one "
        "primitive (PyTorch's ``F.linear``).")

declare_fresh_result(_dense_raw, into=_dense_into)  # a new array: fg.jit's replay may write into it once it dies
