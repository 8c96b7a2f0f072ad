"""Pooling as primitives: max pooling as a window argmax, a gather and its transpose; average pooling as a
window sum and its transpose.

``window_argmax`` runs once in the forward pass. The windows are copied once
into a contiguous ``(K, *lead, *out)`` buffer (for windows that tile the
input, one transposing copy of a reshape); the maximum is ``K - 1`` ``maximum``
calls over its contiguous rows and the first offset that reaches it is found
in Horner form over bytes (ties: the first; contiguous rows are several times
faster than reducing over strided views). A window holding a NaN takes one
sweep over the K offsets instead, which lets the last NaN win (PyTorch's
rule). The pooled values are ``window_gather(x, argmax)``: the maxima the
argmax just found (handed over by a forward memo), else one ``take`` at flat
positions; its VJP is ``window_scatter``, one
write (an add for overlapping windows) at the positions the forward recorded
(no second search), and the VJP of the scatter is the gather again, so
derivatives of any order are two linear primitives.

``window_sum`` adds the strided view of each kernel offset (no reduction over
strided axes); its transpose ``window_spread`` is, for windows that tile the
input, one broadcasting copy of the cotangent.

The geometry (``kernel``, ``stride``, ``pads`` as ``(lo, hi)`` pairs,
``dilation``) acts on the trailing ``len(kernel)`` axes; leading axes (batch,
channels, a vmap axis) broadcast. Everything runs on the input's own array
namespace (NumPy or CuPy).

Example::

    idx = window_argmax(x, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1))
    y = window_gather(x, idx, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), -math.inf)
    mean = window_sum(x, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)) / 4
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Iterator

import numpy as np  # shapes only (host tuples); arrays go through their own namespace

import funcgrad.numpy as fnp

from ...backend import device_constant, namespace_of, scatter_add
from ...core import defprimitive
from ...jit.kinds import declare_fresh_result
from ...numpy._batching import batch_size, move_to_front
from .forward_memo import ForwardMemo

__all__ = ["window_argmax", "window_gather", "window_scatter", "window_sum", "window_spread", "pooled_size",
           "window_slices"]

Geometry = tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, int], ...], tuple[int, ...]]


def pooled_size(size: int, k: int, s: int, pad: tuple[int, int], d: int) -> int:
    """Output length of one axis: windows of ``k`` (dilation ``d``) every ``s`` over the padded axis."""
    return (size + pad[0] + pad[1] - d * (k - 1) - 1) // s + 1


def window_slices(kernel: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...],
                  out: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """For each kernel offset, in C order: (the offset, the slices of the padded input it sees)."""
    for idx in itertools.product(*(range(k) for k in kernel)):
        yield idx, tuple(slice(i * d, i * d + s * (o - 1) + 1, s) for i, d, s, o in zip(idx, dilation, stride, out))


def _out_shape(spatial: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...],
               pads: tuple[tuple[int, int], ...], dilation: tuple[int, ...]) -> tuple[int, ...]:
    out = tuple(pooled_size(n, k, s, p, d) for n, k, s, p, d in zip(spatial, kernel, stride, pads, dilation))
    if any(o <= 0 for o in out):
        raise ValueError(f"pooling: the window {kernel} (dilation {dilation}) does not fit the input {spatial} "
                         f"padded by {pads}")
    return out


def _padded(x: Any, pads: tuple[tuple[int, int], ...], value: float) -> Any:
    if all(p == (0, 0) for p in pads):
        return x
    xp = namespace_of(x)
    lead = x.ndim - len(pads)
    return xp.pad(x, ((0, 0),) * lead + tuple(pads), mode="constant", constant_values=value)


# --------------------------------------------------------------------------- forward: the argmax


def _window_stack(x: Any, kernel: tuple[int, ...], stride: tuple[int, ...], pads: tuple[tuple[int, int], ...],
                  dilation: tuple[int, ...], out: tuple[int, ...], pad_value: float) -> Any:
    """The windows as one contiguous ``(K, *lead, *out)`` buffer (one copy of the input's windowed elements).

    Sweeping contiguous rows is several times faster than sweeping strided views of the input, and for
    windows that tile the input (stride = kernel, no padding) the buffer is one transposing copy of a reshape.
    """
    xp = namespace_of(x)
    nsp = len(kernel)
    lead = tuple(x.shape[:-nsp])
    spatial = tuple(x.shape[-nsp:])
    tiles = (all(p == (0, 0) for p in pads) and tuple(stride) == tuple(kernel) and all(d == 1 for d in dilation)
             and all(o * k == n for o, k, n in zip(out, kernel, spatial)))
    if tiles:  # (*lead, o0, k0, o1, k1, ...) -> (k0, k1, ..., *lead, o0, o1, ...)
        split = x.reshape(lead + tuple(v for o, k in zip(out, kernel) for v in (o, k)))
        nl = len(lead)
        order = tuple(nl + 2 * a + 1 for a in range(nsp)) + tuple(range(nl)) + tuple(nl + 2 * a for a in range(nsp))
        return xp.ascontiguousarray(split.transpose(order)).reshape((math.prod(kernel),) + lead + out)
    xpad = _padded(x, pads, pad_value)
    pre = (slice(None),) * len(lead)
    stack = xp.empty((math.prod(kernel),) + lead + out, dtype=x.dtype)
    for j, (_, sl) in enumerate(window_slices(kernel, stride, dilation, out)):
        stack[j] = xpad[pre + sl]
    return stack


def _tiles(spatial: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...],
           pads: tuple[tuple[int, int], ...], dilation: tuple[int, ...]) -> bool:
    """Whether the windows tile the input exactly (stride = kernel, no padding or dilation, no remainder)."""
    return (all(p == (0, 0) for p in pads) and tuple(stride) == tuple(kernel) and all(d == 1 for d in dilation)
            and all(n % k == 0 for n, k in zip(spatial, kernel)))


def _tile_views(a: Any, kernel: tuple[int, ...]) -> Iterator[Any]:
    """For windows that tile ``a``'s trailing axes: the strided view of each kernel offset (C order), each of
    the pooled shape."""
    nsp = len(kernel)
    lead = tuple(a.shape[:-nsp])
    out = tuple(n // k for n, k in zip(a.shape[-nsp:], kernel))
    split = a.reshape(lead + tuple(v for o, k in zip(out, kernel) for v in (o, k)))
    pre = (slice(None),) * len(lead)
    for idx in itertools.product(*(range(k) for k in kernel)):
        yield split[pre + tuple(v for i in idx for v in (slice(None), i))]


def _first_maximum_scan(stack: Any) -> tuple[Any, Any]:
    """``(maximum, offset of the first maximum)`` over the stack's leading axis by one sweep of running
    comparisons; a NaN wins (the last one, as PyTorch's kernel) and the running maximum stays NaN."""
    xp = namespace_of(stack)
    best = stack[0].copy()
    index = xp.zeros(best.shape, dtype=xp.int32)
    step = xp.empty(best.shape, dtype=xp.int32)
    for j in range(1, stack.shape[0]):
        v = stack[j]
        wins = v > best  # strictly greater: the first maximum stays
        wins |= v != v   # a NaN wins
        # index = where(wins, j, index) by arithmetic: a masked select is branchy and several times slower
        xp.subtract(j, index, out=step)
        step *= wins
        index += step
        xp.maximum(best, v, out=best)
    return best, index


def _first_maximum(stack: Any) -> tuple[Any, Any]:
    """:func:`_first_maximum_scan`'s result with fewer passes for host arrays without NaN: the maximum by
    ``K - 1`` ``maximum`` calls, then the first offset that reaches it in Horner form,
    ``n0 (1 + n1 (1 + ... (1 + n_{K-2})))`` with ``n_j = stack[j] != maximum`` (bytes, not int32 steps)."""
    K = stack.shape[0]
    if not isinstance(stack, np.ndarray) or K < 2:  # device arrays: the sweep (the NaN test below reads the host)
        return _first_maximum_scan(stack)
    best = np.maximum(stack[0], stack[1])
    for j in range(2, K):
        np.maximum(best, stack[j], out=best)
    if np.isnan(best).any():  # a NaN window: the sweep's rule (the last NaN wins)
        return _first_maximum_scan(stack)
    word = np.uint8 if K <= 256 else np.int32
    offset = np.not_equal(stack[K - 2], best).astype(word)
    for j in range(K - 3, -1, -1):
        offset += 1
        offset *= np.not_equal(stack[j], best)
    return best, offset.astype(np.int32)


class _PooledMemo(ForwardMemo):
    """The window maxima the argmax found, for the gather of the same input and index that follows it
    (:class:`~funcgrad.nn.kernels.forward_memo.ForwardMemo`): max pooling's values without a second pass."""


_pooled = _PooledMemo()


def _window_argmax_raw(x: Any, kernel: tuple[int, ...], stride: tuple[int, ...], pads: tuple[tuple[int, int], ...],
                       dilation: tuple[int, ...]) -> Any:
    nsp = len(kernel)
    out = _out_shape(tuple(x.shape[-nsp:]), kernel, stride, pads, dilation)
    best, index = _first_maximum(_window_stack(x, kernel, stride, pads, dilation, out, -math.inf))
    _pooled.put((x, index), (kernel, stride, pads, dilation, -math.inf), best)
    return index


def _argmax_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    x, *rest = args
    return window_argmax(move_to_front(x, dims[0]), *rest, **kwargs), 0


window_argmax: Callable[..., Any] = defprimitive(
    _window_argmax_raw, name="window_argmax", differentiable=False, batch=_argmax_batch,
    doc="The flat kernel offset (C order) of each pooling window's maximum (int32; ties: the first maximum; "
        "a NaN wins).")


# --------------------------------------------------------------------------- the gather and its transpose


def _flat_positions(index: Any, lead: tuple[int, ...], padded: tuple[int, ...], kernel: tuple[int, ...],
                    stride: tuple[int, ...], dilation: tuple[int, ...], out: tuple[int, ...]) -> Any:
    """The position in the flattened padded input ``(*lead, *padded)`` of each window element ``index`` names."""
    xp = namespace_of(index)
    nsp = len(kernel)
    steps = tuple(math.prod(padded[a + 1:]) for a in range(nsp))
    offsets = np.zeros(kernel, dtype=np.intp)  # host tables: the geometry is static
    corners = np.zeros(out, dtype=np.intp)
    for a in range(nsp):
        shape = (1,) * a + (-1,) + (1,) * (nsp - a - 1)
        offsets = offsets + (np.arange(kernel[a]) * (dilation[a] * steps[a])).reshape(shape)
        corners = corners + (np.arange(out[a]) * (stride[a] * steps[a])).reshape(shape)
    table = device_constant(index, offsets.reshape(-1))
    base = device_constant(index, corners)
    rows = xp.arange(math.prod(lead), dtype=xp.intp).reshape(lead + (1,) * nsp) * math.prod(padded)
    pos = xp.take(table, index)
    pos += base  # in place: one position array per call, not three
    pos += rows
    return pos


def _same_lead(a: Any, b: Any, nsp: int) -> bool:
    return tuple(a.shape[:-nsp]) == tuple(b.shape[:-nsp])


def _window_gather_raw(x: Any, index: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
                       pads: tuple[tuple[int, int], ...], dilation: tuple[int, ...], pad_value: float = 0.0) -> Any:
    maxima = _pooled.take((x, index), (kernel, stride, pads, dilation, pad_value))
    if maxima is not None:  # the values the argmax of this very x found
        return maxima
    xp = namespace_of(x)
    nsp = len(kernel)
    out = _out_shape(tuple(x.shape[-nsp:]), kernel, stride, pads, dilation)
    xpad = _padded(x, pads, pad_value)
    if _same_lead(x, index, nsp):  # one gather by flat position
        pos = _flat_positions(index, tuple(x.shape[:-nsp]), tuple(xpad.shape[-nsp:]), kernel, stride, dilation, out)
        return xp.take(xp.ascontiguousarray(xpad).reshape(-1), pos)
    # leading axes that broadcast (vmap beside an unbatched partner): select per kernel offset
    lead = np.broadcast_shapes(tuple(x.shape[:-nsp]), tuple(index.shape[:-nsp]))
    pre = (slice(None),) * (x.ndim - nsp)
    y = xp.empty(lead + out, dtype=x.dtype)
    for j, (_, sl) in enumerate(window_slices(kernel, stride, dilation, out)):
        v = xpad[pre + sl]
        if j == 0:
            y[...] = v
        else:
            xp.copyto(y, v, where=index == j)
    return y


def _window_scatter_raw(g: Any, index: Any, x_shape: tuple[int, ...], kernel: tuple[int, ...],
                        stride: tuple[int, ...], pads: tuple[tuple[int, int], ...], dilation: tuple[int, ...]) -> Any:
    xp = namespace_of(g)
    nsp = len(kernel)
    spatial = tuple(x_shape[-nsp:])
    out = tuple(g.shape[-nsp:])
    lead = np.broadcast_shapes(tuple(x_shape[:-nsp]), tuple(g.shape[:-nsp]), tuple(index.shape[:-nsp]))
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(spatial, pads))
    disjoint = all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
    pre = (slice(None),) * len(lead)
    if (_same_lead(g, index, nsp) and tuple(g.shape[:-nsp]) == lead
            and _tiles(spatial, kernel, stride, pads, dilation)):
        # windows that tile the input: each offset's strided view written once, g where the index names it
        # and an exact zero elsewhere (for floats by bits, g AND a sign-extended byte mask: a product with the
        # mask would write NaN for an infinite g)
        dx = xp.empty(lead + spatial, dtype=g.dtype)
        word = np.dtype(f"int{8 * g.dtype.itemsize}") if g.dtype.kind == "f" and g.dtype.itemsize in (2, 4, 8) else None
        bits = None if word is None else xp.ascontiguousarray(g).view(word)
        hits = xp.empty(index.shape, dtype=bool) if isinstance(g, np.ndarray) else None  # one mask buffer
        if hits is not None and math.prod(kernel) <= 127:
            index = index.astype(np.int8)  # one narrowing pass: each offset's comparison then reads bytes
        for j, view in enumerate(_tile_views(dx, kernel)):
            if bits is None:
                xp.multiply(g, index == j, out=view)
            elif hits is None:
                xp.bitwise_and(bits, xp.negative((index == j).view(xp.int8)), out=view.view(word))
            else:  # host: the mask made and sign-extended in place, in the one buffer
                flags = np.equal(index, j, out=hits).view(np.int8)
                np.negative(flags, out=flags)
                np.bitwise_and(bits, flags, out=view.view(word))
        return dx
    if _same_lead(g, index, nsp) and tuple(g.shape[:-nsp]) == lead:  # one scatter by flat position
        pos = _flat_positions(index, lead, padded, kernel, stride, dilation, out).reshape(-1)
        flat = xp.zeros(math.prod(lead) * math.prod(padded), dtype=g.dtype)
        if disjoint:  # every input position is in at most one window: write, do not add
            flat[pos] = g.reshape(-1)
        else:
            scatter_add(flat, pos, g.reshape(-1))
        dx = flat.reshape(lead + padded)
    else:
        dx = xp.zeros(lead + padded, dtype=g.dtype)
        zero = xp.zeros((), dtype=g.dtype)
        for j, (_, sl) in enumerate(window_slices(kernel, stride, dilation, out)):
            if disjoint:
                dx[pre + sl] = xp.where(index == j, g, zero)
            else:
                dx[pre + sl] += xp.where(index == j, g, zero)
    if any(p != (0, 0) for p in pads):
        dx = dx[pre + tuple(slice(lo, lo + n) for (lo, _), n in zip(pads, spatial))]
    return dx


def _gather_vjp(g: Any, ans: Any, x: Any, index: Any, kernel: Any, stride: Any, pads: Any, dilation: Any,
                pad_value: float = 0.0) -> Any:
    return window_scatter(g, index, fnp.shape(x), kernel, stride, pads, dilation)


def _gather_jvp(t: Any, ans: Any, x: Any, index: Any, kernel: Any, stride: Any, pads: Any, dilation: Any,
                pad_value: float = 0.0) -> Any:
    return window_gather(t, index, kernel, stride, pads, dilation, 0.0)


def _scatter_vjp(g: Any, ans: Any, cot: Any, index: Any, x_shape: Any, kernel: Any, stride: Any, pads: Any,
                 dilation: Any) -> Any:
    return window_gather(g, index, kernel, stride, pads, dilation, 0.0)


def _scatter_jvp(t: Any, ans: Any, cot: Any, index: Any, x_shape: Any, kernel: Any, stride: Any, pads: Any,
                 dilation: Any) -> Any:
    return window_scatter(t, index, x_shape, kernel, stride, pads, dilation)


# vmap: batch axes go first; an unbatched partner broadcasts (the geometry only reads trailing axes)
def _gather_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    x, index, *rest = args
    return window_gather(_front_or_unit(x, dims[0], index, dims[1]), _front_or_unit(index, dims[1], x, dims[0]),
                         *rest, **kwargs), 0


def _scatter_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    g, index, x_shape, *rest = args
    n = batch_size(args[:2], dims[:2])
    return window_scatter(_front_or_unit(g, dims[0], index, dims[1]), _front_or_unit(index, dims[1], g, dims[0]),
                          (n,) + tuple(x_shape), *rest, **kwargs), 0


def _front_or_unit(a: Any, d: Any, other: Any, other_d: Any) -> Any:
    """``a`` with its batch axis first, or (unbatched beside a batched partner) a unit axis there."""
    if d is not None:
        return move_to_front(a, d)
    return fnp.expand_dims(a, 0)


window_gather: Callable[..., Any] = defprimitive(
    _window_gather_raw, name="window_gather", vjp=_gather_vjp, jvp=_gather_jvp, batch=_gather_batch,
    reads={0: {1}},
    doc="The element of each pooling window at the offset ``index`` gives (padding reads ``pad_value``); "
        "linear in ``x``.")
window_scatter: Callable[..., Any] = defprimitive(
    _window_scatter_raw, name="window_scatter", vjp=_scatter_vjp, jvp=_scatter_jvp, batch=_scatter_batch,
    reads={0: {1}},
    doc="The transpose of :func:`window_gather`: each value added into the input position its window's "
        "``index`` names; an array of ``x_shape``.")


# --------------------------------------------------------------------------- average pooling: window sums


def _window_sum_raw(x: Any, kernel: tuple[int, ...], stride: tuple[int, ...], pads: tuple[tuple[int, int], ...],
                    dilation: tuple[int, ...]) -> Any:
    nsp = len(kernel)
    out = _out_shape(tuple(x.shape[-nsp:]), kernel, stride, pads, dilation)
    xpad = _padded(x, pads, 0.0)
    pre = (slice(None),) * (x.ndim - nsp)
    total = None
    for _, sl in window_slices(kernel, stride, dilation, out):  # one strided add per kernel offset, no reduction
        v = xpad[pre + sl]
        if total is None:
            total = v.copy()
        else:
            total += v
    return total


def _window_spread_raw(g: Any, x_shape: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...],
                       pads: tuple[tuple[int, int], ...], dilation: tuple[int, ...]) -> Any:
    xp = namespace_of(g)
    nsp = len(kernel)
    lead = tuple(g.shape[:-nsp])
    spatial = tuple(x_shape[-nsp:])
    out = tuple(g.shape[-nsp:])
    nl = len(lead)
    if all(p == (0, 0) for p in pads) and tuple(stride) == tuple(kernel) and all(d == 1 for d in dilation):
        # windows tile the input: one broadcasting copy, and zeros for a remainder no window covers
        unit = g.reshape(lead + tuple(v for o in out for v in (o, 1)))
        tiled = xp.broadcast_to(unit, lead + tuple(v for o, k in zip(out, kernel) for v in (o, k)))
        dx = tiled.reshape(lead + tuple(o * k for o, k in zip(out, kernel)))
        if dx.shape[nl:] != spatial:
            dx = xp.pad(dx, ((0, 0),) * nl + tuple((0, n - o * k) for n, o, k in zip(spatial, out, kernel)))
        return dx
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(spatial, pads))
    dx = xp.zeros(lead + padded, dtype=g.dtype)
    pre = (slice(None),) * nl
    for _, sl in window_slices(kernel, stride, dilation, out):
        dx[pre + sl] += g
    if any(p != (0, 0) for p in pads):
        dx = dx[pre + tuple(slice(lo, lo + n) for (lo, _), n in zip(pads, spatial))]
    return dx


def _sum_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    x, *rest = args
    return window_sum(move_to_front(x, dims[0]), *rest), 0


def _spread_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    g, x_shape, *rest = args
    g = move_to_front(g, dims[0])
    return window_spread(g, (fnp.shape(g)[0],) + tuple(x_shape), *rest), 0


window_sum: Callable[..., Any] = defprimitive(
    _window_sum_raw, name="window_sum",
    vjp=lambda g, ans, x, *geom: window_spread(g, fnp.shape(x), *geom),
    jvp=lambda t, ans, x, *geom: window_sum(t, *geom),
    batch=_sum_batch,
    doc="The sum of each pooling window of the trailing ``len(kernel)`` axes (padding reads 0); "
        "linear in ``x``. Average pooling is this over the window size.")
window_spread: Callable[..., Any] = defprimitive(
    _window_spread_raw, name="window_spread",
    vjp=lambda ct, ans, g, x_shape, *geom: window_sum(ct, *geom),
    jvp=lambda t, ans, g, x_shape, *geom: window_spread(t, x_shape, *geom),
    batch=_spread_batch,
    doc="The transpose of :func:`window_sum`: each value added to every input position of its window; "
        "an array of ``x_shape``'s spatial size.")

declare_fresh_result(_window_scatter_raw)  # new arrays (the gather's maxima are handed over by the argmax):
declare_fresh_result(_window_gather_raw)  # fg.jit's replay may write into them once they die
