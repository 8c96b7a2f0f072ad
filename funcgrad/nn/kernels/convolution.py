"""Convolution as three primitives, each one GEMM: the forward and its two backward products.

``conv_forward(x, w)`` is ``y = W @ cols``, ``conv_input_grad(g, w)`` is
``col2im(W^T @ g)`` and ``conv_weight_grad(g, x)`` is ``sum over the batch of g @ cols^T``,
with the columns laid out ``(N, C, *kernel, *out)``: per sample, so that ``W @ cols``
comes out as ``(N, O, *out)`` and ``W^T @ g`` scatters straight into ``(N, C, *spatial)``
(no transposing copy of the output, the cotangent or the input gradient; the batch
is the leading axis of one batched matrix product). A call builds at most one
column buffer; a 1x1 kernel with stride 1 and no padding builds none (the input is
its own column matrix), and the weight gradient reuses the forward's buffer of the
same input (:class:`_ColumnMemo`): one im2col per convolution per training step.

The three are closed under differentiation (the convolution is bilinear):

- ``conv_forward``: VJP in x is ``conv_input_grad(g, w)``, in w ``conv_weight_grad(g, x)``;
- ``conv_input_grad(g, w)``: VJP in g is ``conv_forward(ct, w)``, in w ``conv_weight_grad(g, ct)``;
- ``conv_weight_grad(g, x)``: VJP in g is ``conv_forward(x, ct)``, in x ``conv_input_grad(g, ct)``;

and each JVP is the primitive itself applied to one tangent, so derivatives of any
order are these three GEMMs again. ``x`` is ``(N, C, *spatial)``, ``w`` is
``(O, C // groups, *kernel)``; ``pads`` are ``(lo, hi)`` pairs per spatial axis.

Example::

    y = conv_forward(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable

import funcgrad.numpy as fnp

from ...backend import namespace_of
from ...core import defprimitive
from ...jit.kinds import declare_fresh_result
from ...numpy._batching import batch_size, front
from .forward_memo import ForwardMemo
from .pooling import pooled_size, window_slices

__all__ = ["conv_forward", "conv_input_grad", "conv_weight_grad", "conv_out_shape"]


def conv_out_shape(spatial: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...],
                   pads: tuple[tuple[int, int], ...], dilation: tuple[int, ...]) -> tuple[int, ...]:
    """The output's spatial shape; a clear error when the kernel does not fit."""
    out = tuple(pooled_size(n, k, s, p, d) for n, k, s, p, d in zip(spatial, kernel, stride, pads, dilation))
    if any(o <= 0 for o in out):
        raise ValueError(f"conv: the kernel {kernel} (dilation {dilation}) is larger than the padded input: input "
                         f"{spatial} with padding {pads}")
    return out


def _pointwise(kernel: tuple[int, ...], stride: tuple[int, ...], pads: tuple[tuple[int, int], ...]) -> bool:
    return all(k == 1 for k in kernel) and all(s == 1 for s in stride) and all(p == (0, 0) for p in pads)


def _columns(x: Any, kernel: tuple[int, ...], stride: tuple[int, ...], pads: tuple[tuple[int, int], ...],
             dilation: tuple[int, ...], groups: int) -> Any:
    """The im2col buffer ``(N, G, C/G * prod(kernel), prod(out))`` of ``x`` (one copy): each sample's
    column matrix, so the products below come out in ``x``'s ``(N, C, ...)`` layout with no transposing copy."""
    xp = namespace_of(x)
    n, c = x.shape[:2]
    out = conv_out_shape(tuple(x.shape[2:]), kernel, stride, pads, dilation)
    if any(p != (0, 0) for p in pads):
        x = xp.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    cols = xp.empty((n, c) + tuple(kernel) + out, dtype=x.dtype)
    lead = (slice(None), slice(None))
    for idx, sl in window_slices(kernel, stride, dilation, out):
        cols[lead + idx] = x[lead + sl]
    return cols.reshape(n, groups, (c // groups) * math.prod(kernel), math.prod(out))


def _shifted(kernel: tuple[int, ...], stride: tuple[int, ...], pads: tuple[tuple[int, int], ...]) -> bool:
    """Stride 1 (and not the column-free 1x1 case): the columns are whole shifted rows of the flattened
    padded input (:class:`_Shift`), built and used a few samples at a time."""
    return all(s == 1 for s in stride) and not _pointwise(kernel, stride, pads)


def _zero_outside(view: Any, kaxis: int, kernel: tuple[int, ...], dilation: tuple[int, ...],
                  pads: tuple[tuple[int, int], ...], grid: tuple[int, ...], axes: Any) -> None:
    """Zero, in ``view (..., *kernel, ..., *grid)`` (the kernel axes from ``kaxis``, the grid last), the
    entries of kernel index ``i`` along axis ``a`` (for ``a`` in ``axes``) whose read ``position + i * dilation
    - pad`` falls outside ``[0, grid[a])``: one assignment per axis and kernel index that shifts."""
    nk = len(kernel)
    middle = view.ndim - kaxis - 2 * nk  # axes between the kernel offsets and the grid
    for a in axes:
        size = grid[a]
        for i in range(kernel[a]):
            shift = i * dilation[a] - pads[a][0]
            if not shift:
                continue
            view[(slice(None),) * (kaxis + a) + (i,) + (slice(None),) * (nk - a - 1 + middle + a)
                 + (_outside(shift, size),)] = 0


def _outside(shift: int, size: int) -> slice:
    """The positions ``p`` of an axis of ``size`` whose read ``p + shift`` falls outside ``[0, size)``."""
    return slice(0, min(-shift, size)) if shift < 0 else slice(max(size - shift, 0), size)


class _Shift:
    """The geometry of the shifted-rows layout for a stride-1 convolution.

    Flatten the padded input's spatial axes: the window offset ``k`` of output position ``p`` is element
    ``p' + offsets[k]``, where ``p'`` is ``p`` counted in the padded grid. So the columns of offset ``k`` for
    all outputs are one contiguous run ``flat[offsets[k] : offsets[k] + length]`` (``length`` = the first
    output axis times the padded row of the others): each copy is a long contiguous run instead of one short
    row per output row. The products then also produce values at the ``padded - out`` positions past each
    output row, which the forward crops and the backward products meet as zeros of the padded cotangent.

    When the trailing axes keep their size ("same" padding along them, the common ``3x3, padding=1``), they
    are not padded at all (:attr:`wraps`): the grid is then the output itself (no crop, no cotangent copy,
    and the input goes in as long runs), and a read that crosses a row's edge (it lands on the neighbouring
    row where the padding would have been) is zeroed in the columns by :meth:`zero_wraps` instead.
    """

    def __init__(self, spatial: tuple[int, ...], kernel: tuple[int, ...], pads: tuple[tuple[int, int], ...],
                 dilation: tuple[int, ...]) -> None:
        self.out = conv_out_shape(spatial, kernel, (1,) * len(kernel), pads, dilation)
        self.kernel, self.dilation, self.pads = tuple(kernel), tuple(dilation), tuple(pads)
        self.wraps = len(spatial) > 1 and tuple(self.out[1:]) == tuple(spatial[1:])
        if self.wraps:  # only the first axis is padded; the others are read unpadded, edges masked
            self.padded = (spatial[0] + pads[0][0] + pads[0][1],) + tuple(spatial[1:])
            self.inner = (slice(pads[0][0], pads[0][0] + spatial[0]),) + (slice(None),) * (len(spatial) - 1)
        else:
            self.padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, pads))
            self.inner = tuple(slice(lo, lo + s) for (lo, _), s in zip(pads, spatial))
        strides = [math.prod(self.padded[a + 1:]) for a in range(len(kernel))]
        self.grid = (self.out[0],) + self.padded[1:]  # the outputs, counted in the padded grid
        self.length = math.prod(self.grid)
        windows = list(itertools.product(*(range(k) for k in kernel)))
        self.offsets = [sum(i * d * st for i, d, st in zip(idx, dilation, strides)) for idx in windows]
        # with unpadded trailing axes the padded image starts `lead` zeros into its row (the left padding
        # of those axes, flattened), so that every offset above stays >= 0
        self.lead = sum(lo * st for (lo, _), st in zip(pads[1:], strides[1:])) if self.wraps else 0
        self.flat = max(self.offsets) + self.length  # >= lead + prod(padded): the last rows' tails read zeros
        # a channel row of the input gradient's offset-major columns: `flat` rounded up to 64 bytes of
        # float32 (GEMMs writing rows at a stride of a cache-line multiple run about a quarter faster)
        self.row = -(-self.flat // 16) * 16
        self.crop = (slice(None),) * 3 + tuple(slice(0, o) for o in self.out[1:])  # of (N, O, *grid)

    def image(self, flat: Any) -> Any:
        """The padded image ``(..., *padded)`` inside flattened rows ``flat (..., >= lead + prod(padded))``."""
        size = math.prod(self.padded)
        return flat[..., self.lead:self.lead + size].reshape(tuple(flat.shape[:-1]) + self.padded)

    def flat_input(self, x: Any, buf: Any = None) -> Any:
        """``x (B, C, *spatial)`` zero-padded into a ``(B, C, flat)`` buffer (one copy); ``buf``: one made by an
        earlier call for a block of the same shape (its zeros stay, the inside is overwritten)."""
        xp = namespace_of(x)
        n, c = x.shape[:2]
        if buf is None or buf.shape[0] != n:
            buf = xp.zeros((n, c, self.flat), dtype=x.dtype)
        self.image(buf)[(slice(None), slice(None)) + self.inner] = x
        return buf

    def zero_wraps(self, cols: Any, kaxis: int) -> None:
        """Zero the entries of the columns ``cols (..., K, ..., length)`` (kernel offsets on axis ``kaxis``, the
        grid last) whose read crossed a row's edge: where the padding would have given a zero. Only with
        :attr:`wraps`; one assignment per trailing axis and kernel index that shifts (two for ``3x3``)."""
        if not self.wraps:
            return
        view = cols.reshape(tuple(cols.shape[:kaxis]) + self.kernel + tuple(cols.shape[kaxis + 1:-1]) + self.grid)
        _zero_outside(view, kaxis, self.kernel, self.dilation, self.pads, self.grid, range(1, len(self.kernel)))

    def grid_cotangent(self, g: Any, buf: Any = None) -> Any:
        """The output cotangent ``(B, O, *out)`` laid out on the padded grid ``(B, O, length)``, zeros past
        each output row (a view of ``g`` when the outputs fill the grid); ``buf`` as in :meth:`flat_input`."""
        if tuple(g.shape[2:]) == self.grid:
            return g.reshape(g.shape[:2] + (self.length,))
        xp = namespace_of(g)
        if buf is None or buf.shape[0] != g.shape[0]:
            buf = xp.zeros(tuple(g.shape[:2]) + (self.length,), dtype=g.dtype)
        buf.reshape(tuple(g.shape[:2]) + self.grid)[(slice(None), slice(None)) + tuple(slice(0, o) for o in self.out)] = g
        return buf


CHUNK_BYTES = 512 * 1024  # the column block of a few samples: stays in the core's cache between its copy and its GEMM


def _chunks(n: int, shift: _Shift, c: int, itemsize: int) -> list[slice]:
    """Sample blocks whose columns ``(B, C * K, length)`` take about :data:`CHUNK_BYTES`."""
    per_sample = c * len(shift.offsets) * shift.length * itemsize
    b = max(1, min(n, CHUNK_BYTES // max(per_sample, 1)))
    return [slice(s, min(s + b, n)) for s in range(0, n, b)]


def _fill_columns(cols: Any, flat: Any, shift: _Shift) -> None:
    """``cols (B, C, K, length)`` from the flattened padded input ``flat (B, C, flat)``: one contiguous run
    per sample, channel and kernel offset."""
    for k, off in enumerate(shift.offsets):
        cols[:, :, k] = flat[:, :, off:off + shift.length]
    shift.zero_wraps(cols, 2)


def _block_buffer(buf: Any, xp: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """``buf`` when it has ``shape`` (the blocks but the last have the same size), else a new empty array."""
    return buf if buf is not None and tuple(buf.shape) == shape else xp.empty(shape, dtype=dtype)


def _shifted_forward(x: Any, w: Any, shift: _Shift, groups: int) -> Any:
    """Block by block: pad, columns, one GEMM, crop into the result (every buffer but the result is one
    block's and is reused by the next block)."""
    xp = namespace_of(x)
    n, c = x.shape[:2]
    o, K = w.shape[0], len(shift.offsets)
    wm = w.reshape(groups, o // groups, -1)
    dtype = xp.result_type(x, w)
    y = xp.empty((n, o) + shift.out, dtype=dtype)
    flat = cols = prod = None
    for sl in _chunks(n, shift, c, x.dtype.itemsize):
        b = sl.stop - sl.start
        flat = shift.flat_input(x[sl], flat)
        cols = _block_buffer(cols, xp, (b, c, K, shift.length), x.dtype)
        _fill_columns(cols, flat, shift)
        operand = cols.reshape(b, groups, (c // groups) * K, shift.length)
        if shift.grid == shift.out:  # the grid is the output: the GEMM writes the result's block directly
            xp.matmul(wm, operand, out=y[sl].reshape(b, groups, o // groups, shift.length))
            continue
        prod = _block_buffer(prod, xp, (b, groups, o // groups, shift.length), dtype)
        xp.matmul(wm, operand, out=prod)
        y[sl] = prod.reshape((b, o) + shift.grid)[shift.crop]
    return y


def _shifted_input_grad(g: Any, w: Any, x_shape: tuple[int, ...], shift: _Shift, groups: int) -> Any:
    """Block by block: the cotangent on the padded grid, ``W^T g`` (the block's columns), col2im as long
    contiguous adds, crop into the result.

    The columns come out ordered (kernel offset, channel) with each channel's row ``shift.row`` long (the
    GEMM writes the first ``length`` entries; the rest stay zero), matching the flattened padded input's
    channel rows: so the col2im add of one kernel offset is one contiguous run over all channels of a
    sample, ``flat[off : off + C * shift.row] += cols[k]`` (the zeros past each row land harmlessly in the
    next channel's row), not one short run per channel."""
    xp = namespace_of(g)
    n, c = x_shape[:2]
    o, K = w.shape[0], len(shift.offsets)
    cg, og, row = c // groups, o // groups, shift.row
    # (G, K * C/G, O/G), rows ordered (kernel offset, channel): W^T with the offsets outermost
    wt = xp.ascontiguousarray(w.reshape((groups, og, cg, K)).transpose(0, 3, 2, 1)).reshape(groups, K * cg, og)
    dtype = xp.result_type(g, w)
    dx = xp.empty((n, c) + tuple(x_shape[2:]), dtype=dtype)
    run = c * row  # one sample's channel rows, end to end
    tail = max(shift.offsets)
    grid = flat = cols = None
    for sl in _chunks(n, shift, c, dtype.itemsize):
        b = sl.stop - sl.start
        grid = shift.grid_cotangent(g[sl], grid)
        if cols is None or cols.shape[0] != b:  # zeros past each row's `length` entries, kept between blocks
            cols = xp.zeros((b, groups, K * cg, row), dtype=dtype)
        xp.matmul(wt, grid.reshape(b, groups, og, shift.length), out=cols[..., :shift.length])
        # contributions of reads that crossed a row's edge: none
        shift.zero_wraps(cols.reshape(b, groups, K, cg, row)[..., :shift.length], 2)
        spread = cols.reshape(b, groups, K, cg * row)
        flat = _block_buffer(flat, xp, (b, run + tail), dtype)
        flat[:, run:] = 0
        for k, off in enumerate(shift.offsets):
            target = flat[:, off:off + run].reshape(b, groups, cg * row)
            if k == 0 and off == 0:
                target[...] = spread[:, :, 0]
            else:
                target += spread[:, :, k]
        dx[sl] = shift.image(flat[:, :run].reshape(b, c, row))[(slice(None), slice(None)) + shift.inner]
    return dx


# the input gradient's block on the unpadded grid (partials + shifted cotangent): 0.5-1.5 MiB measured alike,
# ~2 MiB took 2-3x longer (benchmarks/RESULTS.md, session 10b)
SAME_CHUNK_BYTES = 1024 * 1024


def _same(spatial: tuple[int, ...], out: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    """Stride 1 and every axis keeps its size (``3x3, padding=1``): the cotangent lives on the input's grid."""
    return all(s == 1 for s in stride) and tuple(out) == tuple(spatial)


def _same_input_grad(g: Any, w: Any, x_shape: tuple[int, ...], pads: tuple[tuple[int, int], ...],
                     dilation: tuple[int, ...], groups: int) -> Any:
    """The input gradient of a stride-1 convolution whose output keeps the input's shape, on no padded grid.

    The input gradient is ``dx[c, q] = sum over o, k of W[o, c, k] g[o, q - delta[k]]``, ``delta[k]`` the kernel
    offset flattened over the input's axes, the terms whose ``q - delta[k]`` falls outside the grid along some
    axis left out. The offsets along the last axis are summed by the GEMM: the block's cotangent goes in as
    ``kl`` copies shifted along the flattened grid (the entries that crossed a row's edge zeroed), so the
    product ``(H * C, kl * O) @ (kl * O, size)`` has an inner dimension ``kl`` times the channels (for 3x3 on
    OpenBLAS 65-78 GFLOP/s against 55-63 for ``(K * C, O) @ (O, size)``) and gives one partial per offset
    ``H`` of the other axes. Those partials (their entries that would land outside the grid zeroed: contiguous runs) are
    added, shifted by their offset, into one flat buffer of the whole batch (``margin`` spare entries at
    each end): one contiguous add per head offset and block (two adds for 3x3), no padded rows, no crop;
    every entry left lands inside its own channel and sample, and the result is the buffer's inside."""
    xp = namespace_of(g)
    n, c = x_shape[:2]
    spatial, kernel = tuple(x_shape[2:]), tuple(w.shape[2:])
    o = w.shape[0]
    cg, og, kl = c // groups, o // groups, kernel[-1]
    size = math.prod(spatial)
    strides = [math.prod(spatial[a + 1:]) for a in range(len(spatial))]
    heads = list(itertools.product(*(range(k) for k in kernel[:-1])))
    deltas = [sum((i * d - lo) * st for i, d, (lo, _), st in zip(idx, dilation, pads, strides)) for idx in heads]
    shifts = [j * dilation[-1] - pads[-1][0] for j in range(kl)]  # along the last axis
    H, margin, total = len(heads), max(abs(d) for d in deltas), n * c * size
    # (G, H * C/G, kl * O/G): rows (head offset, channel), columns (last-axis offset, output channel)
    wh = xp.ascontiguousarray(w.reshape((groups, og, cg, H, kl)).transpose(0, 3, 2, 4, 1)).reshape(
        groups, H * cg, kl * og)
    dtype = xp.result_type(g, w)
    buf = xp.empty((total + 2 * margin,), dtype=dtype)
    buf[:margin] = 0
    buf[margin + total:] = 0
    centre = deltas.index(0) if 0 in deltas else None  # its add covers the whole block: an assignment
    per_sample = (c * H + kl * o) * size * dtype.itemsize  # the block's partials and shifted cotangent
    step = max(1, min(n, SAME_CHUNK_BYTES // max(per_sample, 1)))
    shifted = partial = None
    for s in range(0, n, step):
        b = min(step, n - s)
        block = g[s:s + b].reshape(b, groups, og, size)
        shifted = _block_buffer(shifted, xp, (b, groups, kl, og, size), g.dtype)
        for j, t in enumerate(shifts):  # shifted[..., j, :, q] = g[..., q - t]
            lo, hi = min(max(t, 0), size), max(min(size + t, size), 0)
            shifted[:, :, j, :, lo:hi] = block[..., lo - t:hi - t]
            shifted[:, :, j, :, :lo] = 0
            shifted[:, :, j, :, hi:] = 0
            if t:  # the reads of the last axis outside the grid: the entries that crossed a row's edge
                grid = shifted.reshape((b, groups, kl, og) + spatial)
                grid[:, :, j, ..., _outside(-t, spatial[-1])] = 0
        partial = _block_buffer(partial, xp, (b, groups, H * cg, size), dtype)
        xp.matmul(wh, shifted.reshape(b, groups, kl * og, size), out=partial)
        # the head offsets' entries that would land outside the grid (a kernel axis of size 1 stands for the last)
        _zero_outside(partial.reshape((b, groups) + kernel[:-1] + (1, cg) + spatial), 2, kernel, dilation, pads,
                      spatial, range(len(kernel) - 1))
        spread = partial.reshape(b, groups, H, cg * size)
        start = margin + s * c * size
        if centre is None:
            buf[start:start + b * c * size] = 0
        else:
            buf[start:start + b * c * size].reshape(b, groups, cg * size)[...] = spread[:, :, centre]
        for h, delta in enumerate(deltas):
            if h != centre:
                buf[start + delta:start + delta + b * c * size].reshape(b, groups, cg * size)[...] += spread[:, :, h]
    return buf[margin:margin + total].reshape(tuple(x_shape))


def _shifted_weight_grad(g: Any, x: Any, w_shape: tuple[int, ...], shift: _Shift, groups: int) -> Any:
    """Block by block: pad, columns, ``cols @ g^T`` (reads the long column rows in memory order, faster
    than ``g @ cols^T``), summed over the samples; transposed once at the end."""
    xp = namespace_of(g)
    n, c = x.shape[:2]
    o, K = g.shape[1], len(shift.offsets)
    dw = xp.zeros((groups, (c // groups) * K, o // groups), dtype=xp.result_type(g, x))
    flat = cols = grid = None
    for sl in _chunks(n, shift, c, x.dtype.itemsize):
        b = sl.stop - sl.start
        flat = shift.flat_input(x[sl], flat)
        cols = _block_buffer(cols, xp, (b, c, K, shift.length), x.dtype)
        _fill_columns(cols, flat, shift)
        grid = shift.grid_cotangent(g[sl], grid)
        gt = grid.reshape(b, groups, o // groups, shift.length).swapaxes(-1, -2)
        dw += xp.matmul(cols.reshape(b, groups, (c // groups) * K, shift.length), gt).sum(axis=0)
    return xp.ascontiguousarray(dw.swapaxes(-1, -2)).reshape(tuple(w_shape))


class _ColumnMemo(ForwardMemo):
    """The column buffers of this thread's last few convolution forwards, for the weight gradient of the
    same input (:class:`~funcgrad.nn.kernels.forward_memo.ForwardMemo` keyed by ``x`` alone): the backward
    reuses the forward's im2col instead of building it again."""

    def put(self, x: Any, geometry: tuple[Any, ...], cols: Any) -> None:
        super().put((x,), geometry, cols)

    def take(self, x: Any, geometry: tuple[Any, ...]) -> Any:
        return super().take((x,), geometry)


_memo = _ColumnMemo()


# --------------------------------------------------------------------------- the three GEMMs


def _conv_forward_raw(x: Any, w: Any, stride: tuple[int, ...], pads: tuple[tuple[int, int], ...],
                      dilation: tuple[int, ...], groups: int) -> Any:
    xp = namespace_of(x)
    kernel = tuple(w.shape[2:])
    n, c = x.shape[:2]
    o = w.shape[0]
    out = conv_out_shape(tuple(x.shape[2:]), kernel, stride, pads, dilation)
    wm = w.reshape(groups, o // groups, -1)
    if _pointwise(kernel, stride, pads):  # the input is its own column matrix: no copy
        cols = x.reshape(n, groups, c // groups, math.prod(out))
    elif _shifted(kernel, stride, pads):  # blocks of samples, each block's columns built and used in cache
        return _shifted_forward(x, w, _Shift(tuple(x.shape[2:]), kernel, pads, dilation), groups)
    else:
        cols = _columns(x, kernel, stride, pads, dilation, groups)
        _memo.put(x, (kernel, stride, pads, dilation, groups), cols)  # for the weight gradient
    return xp.matmul(wm, cols).reshape((n, o) + out)  # (N, G, O/G, P): already (N, O, *out)


def _conv_input_grad_raw(g: Any, w: Any, x_shape: tuple[int, ...], stride: tuple[int, ...],
                         pads: tuple[tuple[int, int], ...], dilation: tuple[int, ...], groups: int) -> Any:
    xp = namespace_of(g)
    kernel = tuple(w.shape[2:])
    n, c = x_shape[:2]
    spatial = tuple(x_shape[2:])
    o = w.shape[0]
    out = tuple(g.shape[2:])
    wt = w.reshape(groups, o // groups, -1).swapaxes(-1, -2)
    gs = g.reshape(n, groups, o // groups, math.prod(out))
    if _pointwise(kernel, stride, pads):
        return xp.matmul(wt, gs).reshape(tuple(x_shape))
    if _same(spatial, out, stride):
        return _same_input_grad(g, w, tuple(x_shape), pads, dilation, groups)
    if _shifted(kernel, stride, pads):
        return _shifted_input_grad(g, w, tuple(x_shape), _Shift(spatial, kernel, pads, dilation), groups)
    cols = xp.matmul(wt, gs).reshape((n, c) + kernel + out)  # each sample's columns, (N, C, *kernel, *out)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, pads))
    dx = xp.zeros((n, c) + padded, dtype=cols.dtype)
    disjoint = all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
    lead = (slice(None), slice(None))
    for idx, sl in window_slices(kernel, stride, dilation, out):
        if disjoint:
            dx[lead + sl] = cols[lead + idx]
        else:
            dx[lead + sl] += cols[lead + idx]
    if any(p != (0, 0) for p in pads):
        dx = xp.ascontiguousarray(dx[lead + tuple(slice(lo, lo + s) for (lo, _), s in zip(pads, spatial))])
    return dx


def _conv_weight_grad_raw(g: Any, x: Any, w_shape: tuple[int, ...], stride: tuple[int, ...],
                          pads: tuple[tuple[int, int], ...], dilation: tuple[int, ...], groups: int) -> Any:
    xp = namespace_of(g)
    kernel = tuple(w_shape[2:])
    n, c = x.shape[:2]
    o = g.shape[1]
    gs = g.reshape(n, groups, o // groups, -1)
    if _pointwise(kernel, stride, pads):
        cols = x.reshape(n, groups, c // groups, -1)
    elif _shifted(kernel, stride, pads):
        return _shifted_weight_grad(g, x, tuple(w_shape), _Shift(tuple(x.shape[2:]), kernel, pads, dilation), groups)
    else:
        cols = _memo.take(x, (kernel, stride, pads, dilation, groups))
        if cols is None:
            cols = _columns(x, kernel, stride, pads, dilation, groups)
    # one product per sample, summed over the batch: cols @ g^T, (N, G, C/G * K, O/G), reads the long column
    # rows in memory order (faster than g @ cols^T, which walks them across), transposed once at the end
    dw = xp.matmul(cols, gs.swapaxes(-1, -2)).sum(axis=0).swapaxes(-1, -2)
    return xp.ascontiguousarray(dw).reshape(tuple(w_shape))


# --------------------------------------------------------------------------- rules


def _fwd_vjp_x(g: Any, ans: Any, x: Any, w: Any, *geom: Any) -> Any:
    return conv_input_grad(g, w, fnp.shape(x), *geom)


def _fwd_vjp_w(g: Any, ans: Any, x: Any, w: Any, *geom: Any) -> Any:
    return conv_weight_grad(g, x, fnp.shape(w), *geom)


def _in_vjp_g(ct: Any, ans: Any, g: Any, w: Any, x_shape: Any, *geom: Any) -> Any:
    return conv_forward(ct, w, *geom)


def _in_vjp_w(ct: Any, ans: Any, g: Any, w: Any, x_shape: Any, *geom: Any) -> Any:
    return conv_weight_grad(g, ct, fnp.shape(w), *geom)


def _wt_vjp_g(ct: Any, ans: Any, g: Any, x: Any, w_shape: Any, *geom: Any) -> Any:
    return conv_forward(x, ct, *geom)


def _wt_vjp_x(ct: Any, ans: Any, g: Any, x: Any, w_shape: Any, *geom: Any) -> Any:
    return conv_input_grad(g, ct, fnp.shape(x), *geom)


# vmap. A batch axis on the data only (x or g) folds into N. A batched weight runs the B problems
# as B times the groups: channels (B, C) become B*C grouped channels, weights (B, O, ...) B*O.
def _stack_groups(a: Any, d: Any, size: int) -> Any:
    """``(B?, N, C, *sp) -> (N, B*C, *sp)``."""
    a = front(a, d, size)
    s = fnp.shape(a)
    return fnp.reshape(fnp.swapaxes(a, 0, 1), (s[1], s[0] * s[2]) + tuple(s[3:]))


def _stack_weights(w: Any, d: Any, size: int) -> Any:
    """``(B?, O, C/G, *k) -> (B*O, C/G, *k)``."""
    w = front(w, d, size)
    s = fnp.shape(w)
    return fnp.reshape(w, (s[0] * s[1],) + tuple(s[2:]))


def _unstack_groups(y: Any, size: int) -> Any:
    """``(N, B*O, *sp) -> (N, B, O, *sp)`` (batch axis 1)."""
    s = fnp.shape(y)
    return fnp.reshape(y, (s[0], size, s[1] // size) + tuple(s[2:]))


def _fold_batch(a: Any, d: int) -> Any:
    a = fnp.moveaxis(a, d, 0)
    s = fnp.shape(a)
    return fnp.reshape(a, (s[0] * s[1],) + tuple(s[2:]))


def _forward_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    x, w, stride, pads, dilation, groups = args
    size = batch_size(args[:2], dims[:2])
    if dims[1] is None:
        y = conv_forward(_fold_batch(x, dims[0]), w, stride, pads, dilation, groups)
        s = fnp.shape(y)
        return fnp.reshape(y, (size, s[0] // size) + tuple(s[1:])), 0
    y = conv_forward(_stack_groups(x, dims[0], size), _stack_weights(w, dims[1], size), stride, pads, dilation,
                     groups * size)
    return _unstack_groups(y, size), 1


def _input_grad_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    g, w, x_shape, stride, pads, dilation, groups = args
    size = batch_size(args[:2], dims[:2])
    if dims[1] is None:
        n, rest = x_shape[0], tuple(x_shape[1:])
        dx = conv_input_grad(_fold_batch(g, dims[0]), w, (size * n,) + rest, stride, pads, dilation, groups)
        return fnp.reshape(dx, (size, n) + rest), 0
    shape = (x_shape[0], size * x_shape[1]) + tuple(x_shape[2:])
    dx = conv_input_grad(_stack_groups(g, dims[0], size), _stack_weights(w, dims[1], size), shape, stride, pads,
                         dilation, groups * size)
    return _unstack_groups(dx, size), 1


def _weight_grad_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    g, x, w_shape, stride, pads, dilation, groups = args
    size = batch_size(args[:2], dims[:2])
    shape = (size * w_shape[0],) + tuple(w_shape[1:])
    dw = conv_weight_grad(_stack_groups(g, dims[0], size), _stack_groups(x, dims[1], size), shape, stride, pads,
                          dilation, groups * size)
    return fnp.reshape(dw, (size,) + tuple(w_shape)), 0


conv_forward: Callable[..., Any] = defprimitive(
    _conv_forward_raw, name="conv_forward", vjp={0: _fwd_vjp_x, 1: _fwd_vjp_w},
    jvp={0: lambda t, ans, x, w, *geom: conv_forward(t, w, *geom),
         1: lambda t, ans, x, w, *geom: conv_forward(x, t, *geom)},
    batch=_forward_batch, reads={0: {1}, 1: {0}},
    doc="Cross-correlation of ``x (N, C, *sp)`` with ``w (O, C/groups, *k)``: one GEMM per group.")
conv_input_grad: Callable[..., Any] = defprimitive(
    _conv_input_grad_raw, name="conv_input_grad", vjp={0: _in_vjp_g, 1: _in_vjp_w},
    jvp={0: lambda t, ans, g, w, *rest: conv_input_grad(t, w, *rest),
         1: lambda t, ans, g, w, *rest: conv_input_grad(g, t, *rest)},
    batch=_input_grad_batch, reads={0: {1}, 1: {0}},
    doc="The transpose of :func:`conv_forward` in ``x``: ``col2im(W^T g)``, an array of ``x_shape``.")
conv_weight_grad: Callable[..., Any] = defprimitive(
    _conv_weight_grad_raw, name="conv_weight_grad", vjp={0: _wt_vjp_g, 1: _wt_vjp_x},
    jvp={0: lambda t, ans, g, x, *rest: conv_weight_grad(t, x, *rest),
         1: lambda t, ans, g, x, *rest: conv_weight_grad(g, t, *rest)},
    batch=_weight_grad_batch, reads={0: {1}, 1: {0}},
    doc="The transpose of :func:`conv_forward` in ``w``: ``g @ cols(x)^T``, an array of ``w_shape``.")

declare_fresh_result(_conv_forward_raw)  # a new array: fg.jit's replay may write into it once it dies
