"""Scatter and index-update methods of ``Tensor``: ``scatter``, ``scatter_reduce``, ``index_add``,
``index_copy``, ``index_fill``, ``index_reduce``, ``index_put``, ``masked_scatter``, ``put``, the
``*_scatter`` embeddings (``diagonal_scatter``, ``select_scatter``, ``slice_scatter``,
``as_strided_scatter``), ``take_along_dim``, ``argwhere`` and ``nonzero_static``, with their in-place forms.

Every update is a functional update of ``funcgrad.numpy.indexing.at`` (``x.at[idx].set/add/multiply/
min/max``), so each is recorded once and differentiable in ``self`` and in the values to any order.
Index tensors stay where they are: on a device they are never copied to the host (the only host reads
are one bounds flag, and ``masked_scatter``'s element count, as PyTorch's checks).

Example::

    x = ft.zeros(3, 2)
    x.scatter(0, ft.tensor([[2, 0]]), ft.ones(1, 2))        # [[0, 1], [0, 0], [1, 0]]
    x.index_add(0, ft.tensor([0, 0]), ft.ones(2, 2))          # row 0 gets 2
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
from typing import Any

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import Box
from .inplace_variant import inplace_variant
from .method_args import index_array, int_list, operand, recorded_as
from .tensor_helpers import _raw, _wrap_dim, named_result
from .tensor_class import is_tensor, new_tensor
from .tensor_type import TensorBase, TensorT

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _check_bounds(idx: Any, size: int, dim: int, op: str) -> None:
    """PyTorch's out-of-bounds error of ``op`` (its type and wording differ by op); reads one flag from a
    device (the indices only on error)."""
    if not idx.size:
        return
    xp = namespace_of(idx)
    if not builtins.bool(xp.any((idx < -size) | (idx >= size))):
        return
    low, high = builtins.int(xp.min(idx)), builtins.int(xp.max(idx))
    bad = high if high >= size else low
    plain = f"index {bad} is out of bounds for dimension {dim} with size {size}"
    if op in ("scatter", "scatter_reduce", "index_add"):
        raise RuntimeError(plain)
    if op == "index_copy":
        raise IndexError(f"index_copy_(): {plain}")
    if op == "index_reduce":
        raise IndexError("index out of range in self")
    if op == "put":
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {size} elements.")
    raise IndexError(plain)


def _scatter_positions(self: TensorT, dim: Any, index: Any, src: Any, op: str) -> tuple[tuple[Any, ...], int]:
    """The full position tuple of ``self``'s elements that ``scatter``'s ``index`` names along ``dim``
    (``index`` along ``dim``, its own coordinates elsewhere), checked as PyTorch checks it."""
    idx = index_array(index, op)
    nd = max(self.dim(), 1)
    d = _wrap_dim(dim, self.dim())
    src_nd = max(src.dim(), 1) if is_tensor(src) else nd
    if max(idx.ndim, 1) != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src_nd != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    shape = tuple(self.shape)
    src_shape = tuple(src.shape) if is_tensor(src) else None
    if builtins.any((a != d and idx.shape[a] > shape[a]) or (src_shape is not None and idx.shape[a] > src_shape[a])
                    for a in range(idx.ndim)):
        raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self {list(shape)} apart from "
                           f"dimension {d}" + (f" and to be no larger size than src {list(src_shape)}"
                                               if src_shape is not None else ""))
    _check_bounds(idx, shape[d], d, op)
    xp = namespace_of(idx)
    positions = tuple(idx if a == d else xp.reshape(xp.arange(n), (1,) * a + (n,) + (1,) * (idx.ndim - a - 1))
                      for a, n in enumerate(idx.shape))
    return positions, d


def _values_for(src: Any, idx_shape: tuple[int, ...], self: TensorT) -> Any:
    """The leading ``idx_shape`` block of ``src`` (a tensor), or a number as a constant of ``self``'s dtype."""
    if not is_tensor(src):
        return operand(self, src)
    if src.dtype != self.dtype:
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype, but got self.dtype "
                           f"{self.dtype} and src.dtype {src.dtype}")
    if not src.dim():
        return src
    return src[tuple(slice(0, n) for n in idx_shape)]


def _flat(src: Any) -> Any:
    """A tensor ``src`` as 1-D (a number as it is): the 0-d scatter's source."""
    return src.reshape(-1) if is_tensor(src) else src


def _reduce_at(self: TensorT, pos: tuple[Any, ...], values: Any, reduce: str, include_self: builtins.bool,
               op: str) -> Any:
    """``self`` with ``values`` reduced into the positions ``pos`` (repeated positions all count)."""
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)  # PyTorch's older spellings
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"{op}(): reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    base = self
    if not include_self:
        if reduce in ("amax", "amin") and self.dtype.is_floating_point:
            identity: Any = float("-inf") if reduce == "amax" else float("inf")
        elif reduce in ("amax", "amin"):
            info = namespace_of(self._value).iinfo(self._value.dtype)
            identity = info.min if reduce == "amax" else info.max
        else:
            identity = 1 if reduce == "prod" else 0
        base = fnp.indexing.at(self)[pos].set(operand(self, identity))
    if reduce in ("amax", "amin"):
        return _extreme_at(self, base, pos, operand(self, values), reduce, include_self)
    updates = fnp.indexing.at(base)[pos]
    if reduce in ("sum", "mean"):
        out = updates.add(values)
    else:
        out = updates.multiply(values)  # (in rounds where positions repeat: one per repetition)
    if reduce == "mean":
        xp = namespace_of(self._value)
        ones = xp.ones(fnp.indexing.getitem(self._value, pos).shape, dtype=self._value.dtype) if pos else 1
        counts = fnp.indexing.at(xp.full(self._value.shape, 1 if include_self else 0, dtype=self._value.dtype))[pos]
        count = xp.maximum(counts.add(ones), 1)
        out = out / count if self.dtype.is_floating_point or self.dtype.is_complex else out // count
    return out


def _extreme_at(self: TensorT, base: Any, pos: tuple[Any, ...], values: Any, reduce: str,
                include_self: builtins.bool) -> Any:
    """``amax``/``amin`` of ``values`` into ``base`` at ``pos``, in one scatter whatever the repetitions.

    The extremes ``m`` come from one ``maximum.at``/``minimum.at`` of detached values; the recorded result is
    ``m + sum over the elements equal to m of (element - m) / their count``: exactly ``m``, and each
    element that attains the extreme (of ``values``, and of ``self`` with ``include_self``) receives
    ``grad / count``, PyTorch's rule for ties. Linear in the inputs, so differentiable again.
    """
    values_held, base_held = values.detach(), base.detach()
    if isinstance(base_held._value, Box) or isinstance(values_held._value, Box):  # traced by ft.func
        updates = fnp.indexing.at(base_held)[pos]
        m = updates.max(values_held) if reduce == "amax" else updates.min(values_held)
    else:  # plain arrays: one maximum.at / minimum.at
        updates = fnp.indexing.at(base_held._value)[pos]
        m = new_tensor(updates.max(values_held._value) if reduce == "amax" else updates.min(values_held._value))
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        return m
    xp = namespace_of(self._value)
    at_pos = fnp.indexing.getitem(m, pos)
    src_wins = values_held == at_pos
    self_wins = self.detach() == m
    if not include_self:
        untouched = fnp.indexing.at(xp.ones(tuple(self.shape), dtype=bool))[pos].set(False)
        self_wins = fnp.logical_and(self_wins, untouched)
    zeros = xp.zeros(tuple(self.shape), dtype=self._value.dtype)
    count = fnp.where(self_wins, 1.0, 0.0) + fnp.indexing.at(zeros)[pos].add(fnp.where(src_wins, 1.0, 0.0))
    from_src = fnp.indexing.at(zeros)[pos].add(fnp.where(src_wins, values - at_pos, 0.0))
    return (fnp.where(self_wins, self - m, 0.0) + from_src) / count + m


def _index_positions(self: TensorT, dim: Any, index: Any, op: str) -> tuple[tuple[Any, ...], int]:
    """``(slice(None),) * dim + (index,)``: the positions ``index_add``/``index_copy``/... address."""
    idx = index_array(index, op)
    if idx.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    d = _wrap_dim(dim, self.dim())
    if self.dim() == 0:
        return (idx.reshape(-1),) if idx.ndim else (), 0
    _check_bounds(idx, self.shape[d], d, op)
    return (slice(None),) * d + (idx.reshape(-1),), d


def _index_source(self: TensorT, source: Any, pos: tuple[Any, ...], d: int, n: int, op: str) -> Any:
    """``source`` checked against the slices ``self[pos]`` (``n`` of them along ``d``), with PyTorch's errors."""
    source = operand(self, source)
    if source.dtype != self.dtype:
        raise RuntimeError(f"{op}_(): self ({self.dtype}) and source ({source.dtype}) must have the same scalar "
                           f"type")
    if not self.dim() or not source.dim():
        return source
    count = source.shape[d] if source.dim() > d else 1
    if count != n:
        if op == "index_copy":
            raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) ({count})")
        raise RuntimeError(f"{op}_(): Number of indices ({n}) should be equal to source.size(dim): ({count}), for "
                           f"dim: {d}")
    rest_self = tuple(self.shape[:d]) + tuple(self.shape[d + 1:])
    rest_source = tuple(source.shape[:d]) + tuple(source.shape[d + 1:])
    if rest_self != rest_source:
        if op == "index_copy":
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                               f"slice shape: {list(rest_self)} and source slice shape: {list(rest_source)}.")
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")
    return source


class _ScatterMixin(TensorBase[TensorT]):
    __slots__ = ()

    # ------------------------------------------------------------------ scatter family
    def scatter(self: TensorT, dim: builtins.int, index: Any, src: Any = None, value: Any = None, *,
                reduce: str | None = None) -> "TensorT":
        """``self`` with ``src`` (a tensor or a number) written at the positions ``index`` names along ``dim``:
        for 2-D and ``dim=0``, ``out[index[i][j]][j] = src[i][j]``. ``reduce="add"``/``"multiply"`` combine
        instead. Repeated positions: the last write wins (PyTorch leaves it unspecified).

        Example: ``ft.zeros(3).scatter(0, ft.tensor([2, 0]), ft.tensor([5., 6.]))`` is ``[6., 0., 5.]``.
        """
        if src is None:
            if value is None:
                raise TypeError("scatter() missing required argument 'src' (or 'value')")
            src = value
        if self.dim() == 0:
            return self.reshape(1).scatter(0, index.reshape(-1), _flat(src), reduce=reduce).reshape(())
        pos, d = _scatter_positions(self, dim, index, src, "scatter")
        values = _values_for(src, pos[d].shape, self)
        if reduce not in (None, "add", "multiply"):
            raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
        def update(target: Any) -> Any:
            at = fnp.indexing.at(target)[pos]
            return at.set(values) if reduce is None else at.add(values) if reduce == "add" else at.multiply(values)

        return named_result("ScatterBackward0" if is_tensor(src) else "ScatterBackward1", update)(self)

    @recorded_as("ScatterReduceBackward0")
    def scatter_reduce(self: TensorT, dim: builtins.int, index: Any, src: Any, reduce: str, *,
                       include_self: builtins.bool = True) -> "TensorT":
        """``self`` with ``src`` reduced (``"sum"``, ``"prod"``, ``"mean"``, ``"amax"``, ``"amin"``) into the
        positions ``index`` names along ``dim``; ``include_self=False`` leaves ``self``'s values out of the
        reduction where anything is scattered.

        Example: ``ft.zeros(2).scatter_reduce(0, ft.tensor([0, 0, 1]), ft.tensor([1., 3., 2.]), "amax")``.
        """
        src = operand(self, src)
        if self.dim() == 0:
            return self.reshape(1).scatter_reduce(0, index.reshape(-1), src.reshape(-1), reduce,
                                                  include_self=include_self).reshape(())
        pos, d = _scatter_positions(self, dim, index, src, "scatter_reduce")
        return _reduce_at(self, pos, _values_for(src, pos[d].shape, self), reduce, include_self, "scatter_reduce")

    # ------------------------------------------------------------------ index_* family
    @recorded_as("IndexAddBackward0")
    def index_add(self: TensorT, dim: builtins.int, index: Any, source: Any, *, alpha: Any = 1) -> "TensorT":
        """``self`` with ``alpha * source`` added at the slices ``index`` names along ``dim`` (repeats add up).

        Example: ``ft.zeros(3, 2).index_add(0, ft.tensor([0, 2, 0]), ft.ones(3, 2))``.
        """
        pos, d = _index_positions(self, dim, index, "index_add")
        source = _index_source(self, source, pos, d, _raw(index).size, "index_add")
        return fnp.indexing.at(self)[pos].add(source if alpha == 1 else source * alpha)

    @recorded_as("IndexCopyBackward0")
    def index_copy(self: TensorT, dim: builtins.int, index: Any, source: Any) -> "TensorT":
        """``self`` with the slices ``index`` names along ``dim`` replaced by ``source``'s.

        Example: ``ft.zeros(3, 2).index_copy(0, ft.tensor([2, 0]), ft.ones(2, 2))``.
        """
        pos, d = _index_positions(self, dim, index, "index_copy")
        source = _index_source(self, source, pos, d, _raw(index).size, "index_copy")
        return fnp.indexing.at(self)[pos].set(source)

    def index_fill(self: TensorT, dim: builtins.int, index: Any, value: Any) -> "TensorT":
        """``self`` with the slices ``index`` names along ``dim`` set to ``value`` (a number or 0-d tensor,
        which gets the gradient of every filled element).

        Example: ``ft.ones(2, 3).index_fill(1, ft.tensor([0, 2]), -1.0)``.
        """
        pos, _ = _index_positions(self, dim, index, "index_fill")
        name = "IndexFillBackward1" if is_tensor(value) else "IndexFillBackward0"
        value = operand(self, value)
        if value.dim():
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        return named_result(name, lambda target: fnp.indexing.at(target)[pos].set(value.to(target.dtype)))(self)

    @recorded_as("IndexReduceBackward0")
    def index_reduce(self: TensorT, dim: builtins.int, index: Any, source: Any, reduce: str, *,
                     include_self: builtins.bool = True) -> "TensorT":
        """``self`` with ``source``'s slices reduced (``"prod"``, ``"mean"``, ``"amax"``, ``"amin"``) into the
        slices ``index`` names along ``dim``.

        Example: ``ft.ones(3).index_reduce(0, ft.tensor([0, 0]), ft.tensor([2., 3.]), "prod")`` is ``[6, 1, 1]``.
        """
        if reduce not in ("prod", "mean", "amax", "amin"):
            raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
                               f"{reduce}.")
        pos, d = _index_positions(self, dim, index, "index_reduce")
        source = _index_source(self, source, pos, d, _raw(index).size, "index_reduce")
        return _reduce_at(self, pos, source, reduce, include_self, "index_reduce")

    @recorded_as("IndexPutBackward0")
    def index_put(self: TensorT, indices: Any, values: Any, accumulate: builtins.bool = False) -> "TensorT":
        """``self`` with ``values`` written (or with ``accumulate=True`` added) at ``self[indices]``;
        ``indices`` is a tuple of index tensors (integer or boolean), one per leading dimension.

        Example: ``ft.zeros(3).index_put((ft.tensor([0, 2]),), ft.tensor([1., 2.]))`` is ``[1., 0., 2.]``.
        """
        if not isinstance(indices, (tuple, list)):
            raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not "
                            f"{type(indices).__name__}")
        if len(indices) > max(self.dim(), 1):
            raise IndexError(f"too many indices for tensor of dimension {self.dim()} (got {len(indices)})")
        pos = tuple(slice(None) if i is None else _raw(i) for i in indices)
        values = operand(self, values)
        if values.dtype != self.dtype:
            raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                               f"{self.dtype} for the destination and {values.dtype} for the source.")
        at = fnp.indexing.at(self)[pos]
        return at.add(values) if accumulate else at.set(values)

    @recorded_as("MaskedScatterBackward0")
    def masked_scatter(self: TensorT, mask: Any, source: Any) -> "TensorT":
        """``self`` with the positions where ``mask`` (broadcast to ``self``) is True filled, in order, by
        consecutive elements of ``source``.

        Example: ``ft.zeros(4).masked_scatter(ft.tensor([True, False, True, False]), ft.tensor([1., 2.]))``
        is ``[1., 0., 2., 0.]``.
        """
        m = _raw(mask)
        if not is_tensor(mask) or m.dtype.kind != "b":
            raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                               f"{getattr(mask, 'dtype', type(mask).__name__)}")
        source = operand(self, source)
        if source.dtype != self.dtype:
            raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                               f"{self.dtype} and {source.dtype}")
        xp = namespace_of(m)
        m = xp.broadcast_to(m, tuple(self.shape))
        flat = xp.reshape(m, (-1,))
        if builtins.int(xp.sum(flat)) > source.numel():  # one count crosses to the host
            raise RuntimeError("masked_scatter: expected source to have at least as many elements as the ones in "
                               "mask")
        if not source.numel():
            return self.clone()
        order = xp.clip(xp.cumsum(flat) - 1, 0, source.numel() - 1)
        picked = source.reshape(-1)[order].reshape(tuple(self.shape))
        return fnp.where(m, picked, self)

    @recorded_as("PutBackward0")
    def put(self: TensorT, index: Any, source: Any, accumulate: builtins.bool = False) -> "TensorT":
        """``self`` with ``source``'s elements written (or added) at the flat positions ``index`` of ``self``
        (row-major, as if ``self`` were 1-D; negative positions count from the end).

        Example: ``ft.zeros(2, 2).put(ft.tensor([3, 0]), ft.tensor([1., 2.]))`` is ``[[2, 0], [0, 1]]``.
        """
        idx = index_array(index, "put")
        source = operand(self, source)
        if idx.size != source.numel():
            raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                               f"source.numel() = {source.numel()}, index.numel() = {idx.size}")
        _check_bounds(idx, self.numel(), 0, "put")
        xp = namespace_of(idx)
        at = fnp.indexing.at(self.reshape(-1))[(xp.reshape(idx, (-1,)),)]
        values = source.reshape(-1).to(self.dtype)
        return (at.add(values) if accumulate else at.set(values)).reshape(tuple(self.shape))

    def take_along_dim(self: TensorT, indices: Any, dim: builtins.int | None = None) -> "TensorT":
        """The elements at ``indices`` along ``dim`` (``self`` and ``indices`` broadcast in the other
        dimensions); with ``dim=None``, at the flat positions of both flattened.

        Example: ``x.take_along_dim(x.argmax(1, keepdim=True), 1)`` is each row's maximum.
        """
        idx = index_array(indices, "take_along_dim", "indices")
        if dim is None:
            return self.reshape(-1).gather(0, new_tensor(namespace_of(idx).reshape(idx, (-1,))))
        d = _wrap_dim(dim, self.dim())
        if idx.ndim != self.dim():
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                               f"dimensions, but got {self.dim()} dimensions for input, and {idx.ndim} dimensions "
                               f"for indices")
        xs, ys = list(self.shape), list(idx.shape)
        xs[d] = ys[d] = 1
        common = [builtins.max(a, b) if 1 in (a, b) or a == b else -1 for a, b in zip(xs, ys)]
        if -1 in common:
            raise RuntimeError(f"shape mismatch: input {list(self.shape)} and indices {list(idx.shape)} cannot be "
                               f"broadcast apart from dimension {d}")
        x_shape, i_shape = list(common), list(common)
        x_shape[d], i_shape[d] = self.shape[d], idx.shape[d]
        x = self.expand(*x_shape) if tuple(x_shape) != tuple(self.shape) else self
        return x.gather(d, new_tensor(namespace_of(idx).broadcast_to(idx, tuple(i_shape))))

    # ------------------------------------------------------------------ *_scatter: embed into a copy
    @recorded_as("SelectScatterBackward0")
    def select_scatter(self: TensorT, src: Any, dim: builtins.int, index: builtins.int) -> "TensorT":
        """``self`` with ``self.select(dim, index)`` replaced by ``src``.

        Example: ``ft.zeros(2, 2).select_scatter(ft.ones(2), 0, 0)`` is ``[[1, 1], [0, 0]]``.
        """
        d = _wrap_dim(dim, self.dim())
        n = self.shape[d]
        if not -n <= index < n:
            raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at "
                             f"dimension {d}")
        return self._embed((slice(None),) * d + (builtins.int(index),), src, "select_scatter")

    @recorded_as("SliceScatterBackward0")
    def slice_scatter(self: TensorT, src: Any, dim: builtins.int = 0, start: builtins.int | None = None,
                      end: builtins.int | None = None, step: builtins.int = 1) -> "TensorT":
        """``self`` with ``self[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``.

        Example: ``ft.zeros(4).slice_scatter(ft.ones(2), start=2)`` is ``[0, 0, 1, 1]``.
        """
        d = _wrap_dim(dim, self.dim())
        return self._embed((slice(None),) * d + (slice(start, end, step),), src, "slice_scatter")

    @recorded_as("DiagonalScatterBackward0")
    def diagonal_scatter(self: TensorT, src: Any, offset: builtins.int = 0, dim1: builtins.int = 0,
                         dim2: builtins.int = 1) -> "TensorT":
        """``self`` with ``self.diagonal(offset, dim1, dim2)`` replaced by ``src``.

        Example: ``ft.zeros(2, 2).diagonal_scatter(ft.ones(2))`` is the identity.
        """
        d1, d2 = _wrap_dim(dim1, self.dim()), _wrap_dim(dim2, self.dim())
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        moved = fnp.moveaxis(self, (d1, d2), (-2, -1))
        rows, cols = self.shape[d1], self.shape[d2]
        length = builtins.max(0, builtins.min(rows + builtins.min(offset, 0), cols - builtins.max(offset, 0)))
        xp = namespace_of(self._value)
        r = xp.arange(length) + builtins.max(-offset, 0)
        c = xp.arange(length) + builtins.max(offset, 0)
        out = moved._embed((Ellipsis, r, c), src, "diagonal_scatter")
        return fnp.moveaxis(out, (-2, -1), (d1, d2))

    @recorded_as("AsStridedScatterBackward0")
    def as_strided_scatter(self: TensorT, src: Any, size: Any, stride: Any,
                           storage_offset: builtins.int | None = None) -> "TensorT":
        """``self`` with the elements ``self.as_strided(size, stride, storage_offset)`` reads replaced by ``src``
        (strides count elements of ``self`` in row-major order).

        Example: ``ft.zeros(4).as_strided_scatter(ft.ones(2), (2,), (2,))`` is ``[1, 0, 1, 0]``.
        """
        flat = self._strided_positions(size, stride, storage_offset or 0)
        src = operand(self, src)
        if tuple(src.shape) != tuple(flat.shape):
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                               f"{list(src.shape)}, slice size = {list(flat.shape)}")
        xp = namespace_of(self._value)
        out = fnp.indexing.at(self.reshape(-1))[(xp.reshape(flat, (-1,)),)].set(src.reshape(-1).to(self.dtype))
        return out.reshape(tuple(self.shape))

    def _embed(self: TensorT, pos: tuple[Any, ...], src: Any, op: str) -> "TensorT":
        """``self`` with ``self[pos]`` replaced by ``src`` of exactly that shape."""
        src = operand(self, src)
        want = tuple(fnp.indexing.getitem(self._value, pos).shape)
        if tuple(src.shape) != want:
            raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. src size = "
                               f"{list(src.shape)}, slice size = {list(want)}")
        return fnp.indexing.at(self)[pos].set(src.to(self.dtype))

    def _strided_positions(self: TensorT, size: Any, stride: Any, storage_offset: builtins.int) -> Any:
        """The flat (row-major) positions in ``self`` that a strided view of ``size``/``stride`` reads."""
        size, stride = int_list(size), int_list(stride)
        if len(size) != len(stride):
            raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} strides for {len(size)} "
                               f"sizes")
        if builtins.any(s < 0 for s in stride):
            raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                               f"{stride}")
        xp = namespace_of(self._value)
        flat = xp.full(tuple(size), storage_offset, dtype="int64")
        for k, (n, s) in enumerate(zip(size, stride)):
            flat = flat + xp.reshape(xp.arange(n, dtype="int64") * s, (1,) * k + (n,) + (1,) * (len(size) - k - 1))
        need = storage_offset + 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
        if need > self.numel():
            raise RuntimeError(f"setStorage: sizes {size}, strides {stride}, storage offset {storage_offset}, and "
                               f"itemsize {self.element_size()} requiring a storage size of "
                               f"{need * self.element_size()} are out of bounds for storage of size "
                               f"{self.numel() * self.element_size()}")
        return flat

    def argwhere(self: TensorT) -> "TensorT":
        """The indices of the non-zero elements, one row each (``nonzero()``).

        Example: ``ft.tensor([0, 3, 0, 4]).argwhere()`` is ``[[1], [3]]``.
        """
        return self.nonzero()

    def nonzero_static(self: TensorT, *, size: builtins.int, fill_value: builtins.int = -1) -> "TensorT":
        """``nonzero()`` with exactly ``size`` rows: truncated, or padded with ``fill_value``.

        Example: ``ft.tensor([0, 3]).nonzero_static(size=3)`` is ``[[1], [-1], [-1]]``.
        """
        if size < 0:
            raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got {size}")
        nz = self.nonzero()
        xp = namespace_of(self._value)
        rows = nz._value[:size]
        pad = xp.full((size - rows.shape[0], max(self.dim(), rows.shape[1])), fill_value, dtype=rows.dtype)
        return new_tensor(xp.concatenate([xp.reshape(rows, (rows.shape[0], pad.shape[1])), pad], axis=0))

    scatter_ = inplace_variant("scatter")
    scatter_reduce_ = inplace_variant("scatter_reduce")
    index_add_ = inplace_variant("index_add")
    index_copy_ = inplace_variant("index_copy")
    index_fill_ = inplace_variant("index_fill")
    index_reduce_ = inplace_variant("index_reduce")
    index_put_ = inplace_variant("index_put")
    masked_scatter_ = inplace_variant("masked_scatter")
    put_ = inplace_variant("put")
