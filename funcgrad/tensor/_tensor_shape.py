"""Shape, view and indexing methods of ``Tensor``.

A mixin of :class:`funcgrad.tensor.tensor.Tensor` (its only subclass). It takes the helpers it shares from
``tensor_helpers`` and ``size_device`` and never imports ``tensor.py``: it is generic in the Tensor class
(``TensorT``, see ``tensor_type.py``).
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
import itertools
import math
from typing import Any, Iterator, Sequence, cast

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..numpy import indexing as _indexing
from ..numpy import shape_ops as _shape_ops
from . import dtypes as _dt
from .torch_names import named
from .views import mark_multi_output, multi_output_views
from .view_recorder import ViewOp, record_view
from .nodes import join_outputs
from .tensor_class import is_tensor, new_tensor
from .size_device import Size, SizeArg, DimArg
from .tensor_helpers import (
    _pyint, _pybool, _binary, _dims, _wrap_dim, _to_raw_index, _is_basic, _raw, _shares, _shape_arg, _as_tensor, _zero_like_scalar,
)
from .tensor_type import TensorBase, TensorT


class _ShapeMixin(TensorBase[TensorT]):
    __slots__ = ()

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self: TensorT) -> Size:
        return Size(self._value.shape)

    def size(self: TensorT, dim: int | None = None) -> Any:
        return Size(self._value.shape) if dim is None else self._value.shape[_wrap_dim(dim, self._value.ndim)]

    def dim(self: TensorT) -> int:
        return cast("int", self._value.ndim)

    ndimension = dim

    def _is_view(self: TensorT) -> bool:
        """Whether this tensor is a view of another (``self._base``), as PyTorch's ``_is_view()``."""
        return self._base is not None

    @property
    def ndim(self: TensorT) -> int:
        return cast("int", self._value.ndim)

    def numel(self: TensorT) -> int:
        return _pyint(self._value.size)

    nelement = numel

    def is_contiguous(self: TensorT, memory_format: Any = None) -> bool:
        flags = getattr(self._value, "flags", None)
        return True if flags is None else _pybool(flags.c_contiguous)

    def contiguous(self: TensorT, memory_format: Any = None) -> "TensorT":
        return self if self.is_contiguous() else self.clone()

    def __len__(self: TensorT) -> int:
        if self._value.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return cast("int", self._value.shape[0])

    def __iter__(self: TensorT) -> Iterator["TensorT"]:
        if self._value.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._value.shape[0]))

    # ------------------------------------------------------------------ shapes
    def reshape(self: TensorT, *shape: SizeArg) -> "TensorT":
        return record_view(self, _RESHAPE, (_shape_arg(shape),))

    def view(self: TensorT, *shape: Any) -> "TensorT":
        if len(shape) == 1 and isinstance(shape[0], (_dt.dtype, np.dtype)):
            raise NotImplementedError("view(dtype) is not supported; use .to(dtype)")
        out = record_view(self, _RESHAPE, (_shape_arg(shape),))
        if out._value.size and out._base is None and self._value.size > 1 and not _shares(out._value, self._value):
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                "across two contiguous subspaces). Use .reshape(...) instead."
            )
        return out

    def view_as(self: TensorT, other: "TensorT") -> "TensorT":
        return self.view(other.shape)

    def reshape_as(self: TensorT, other: "TensorT") -> "TensorT":
        return self.reshape(other.shape)

    def flatten(self: TensorT, start_dim: builtins.int = 0, end_dim: builtins.int = -1) -> "TensorT":
        shp = tuple(self._value.shape)
        nd = len(shp)
        if nd == 0:
            return self.reshape(1)
        s, e = _wrap_dim(start_dim, nd), _wrap_dim(end_dim, nd)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        return record_view(self, _RESHAPE, (shp[:s] + (math.prod(shp[s:e + 1]),) + shp[e + 1:],))

    def unflatten(self: TensorT, dim: builtins.int, sizes: Sequence[builtins.int]) -> "TensorT":
        d = _wrap_dim(dim, self.dim())
        shp = tuple(self.shape)
        sizes = list(sizes)
        if -1 in sizes:
            sizes[sizes.index(-1)] = shp[d] // math.prod(s for s in sizes if s != -1)
        return self.reshape(shp[:d] + tuple(sizes) + shp[d + 1:])

    def squeeze(self: TensorT, dim: DimArg = None) -> "TensorT":
        shape = self._value.shape
        if dim is None:
            axes = tuple(i for i, s in enumerate(shape) if s == 1)
            name = "SqueezeBackward0"
        else:
            axes = tuple(d for d in (_dims(dim, len(shape)) or ()) if shape[d] == 1)
            name = "SqueezeBackward1" if not isinstance(dim, (tuple, list)) else "SqueezeBackward2"
        if not axes:  # an alias
            return record_view(self, _SQUEEZE_ALIAS[name], (tuple(shape),))
        return record_view(self, _SQUEEZE[name], (), {"axis": axes})

    def unsqueeze(self: TensorT, dim: builtins.int) -> "TensorT":
        return record_view(self, _UNSQUEEZE, (_wrap_dim(dim, self._value.ndim + 1),))

    def transpose(self: TensorT, dim0: builtins.int, dim1: builtins.int) -> "TensorT":
        nd = self._value.ndim
        if nd == 0:
            return self
        return record_view(self, _TRANSPOSE, (_wrap_dim(dim0, nd), _wrap_dim(dim1, nd)))

    swapaxes = swapdims = transpose

    def t(self: TensorT) -> "TensorT":
        if self.dim() > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        if self.dim() < 2:
            return self
        return record_view(self, _T, ())

    @property
    def T(self: TensorT) -> "TensorT":
        return self if self.dim() < 2 else self.permute(*reversed(range(self.dim())))

    @property
    def mT(self: TensorT) -> "TensorT":
        if self.dim() < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self: TensorT) -> "TensorT":
        return self.T.conj()

    @property
    def mH(self: TensorT) -> "TensorT":
        return self.mT.conj()

    def adjoint(self: TensorT) -> "TensorT":
        return self.mH

    def permute(self: TensorT, *dims: Any) -> "TensorT":
        dims = _shape_arg(dims)
        nd = self.dim()
        if len(dims) != nd:
            raise RuntimeError(
                f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
                f"desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {len(dims)}"
            )
        perm = dims
        for d in dims:
            if not 0 <= d < nd:
                perm = tuple(_wrap_dim(d, nd) for d in dims)
                break
        if len(set(perm)) != nd:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        return record_view(self, _PERMUTE, (perm,))

    def movedim(self: TensorT, source: Any, destination: Any) -> "TensorT":
        return fnp.moveaxis(self, source, destination)

    moveaxis = movedim

    def expand(self: TensorT, *sizes: Any) -> "TensorT":
        sizes = _shape_arg(sizes)
        shp = tuple(self.shape)
        if len(sizes) < len(shp):
            raise RuntimeError(
                f"expand(ft.{_dt.TYPE_NAMES[self.dtype]}{{[{', '.join(map(str, shp))}]}}, size=[{', '.join(map(str, sizes))}]): "
                f"the number of sizes provided ({len(sizes)}) must be greater or equal to the number of dimensions "
                f"in the tensor ({len(shp)})"
            )
        lead = len(sizes) - len(shp)
        if -1 in sizes[:lead]:
            raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
        target = tuple(shp[i - lead] if s == -1 else s for i, s in enumerate(sizes))  # -1: the size kept
        for i in range(lead, len(sizes)):
            if shp[i - lead] not in (1, target[i]):
                raise RuntimeError(
                    f"The expanded size of the tensor ({target[i]}) must match the existing size ({shp[i - lead]}) at "
                    f"non-singleton dimension {i}.  Target sizes: [{', '.join(map(str, sizes))}].  Tensor sizes: "
                    f"[{', '.join(map(str, shp))}]"
                )
        if target == shp:
            return named("ExpandBackward0", fnp.reshape)(self, shp)
        return named("ExpandBackward0", fnp.broadcast_to, _shape_ops._broadcast_to)(self, target)

    def expand_as(self: TensorT, other: "TensorT") -> "TensorT":
        return self.expand(other.shape)

    def broadcast_to(self: TensorT, size: Any) -> "TensorT":
        return self.expand(*size)

    def repeat(self: TensorT, *sizes: Any) -> "TensorT":
        sizes = _shape_arg(sizes)
        if len(sizes) < self.dim():
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
        x = self.reshape((1,) * (len(sizes) - self.dim()) + tuple(self.shape))
        return named("RepeatBackward0", fnp.tile)(x, sizes)

    def tile(self: TensorT, *dims: Any) -> "TensorT":
        dims = _shape_arg(dims)
        if len(dims) < self.dim():
            dims = (1,) * (self.dim() - len(dims)) + tuple(dims)
        return self.repeat(*dims)

    def repeat_interleave(self: TensorT, repeats: Any, dim: Any = None) -> "TensorT":
        r = _raw(repeats)
        if dim is None:
            return fnp.repeat(self.reshape(-1), r, axis=0)
        return fnp.repeat(self, r, axis=_wrap_dim(dim, self.dim()))

    def flip(self: TensorT, *positional_dims: Any, dims: Any = None) -> "TensorT":
        """Reverse the order along ``dims``, given positionally or by keyword (PyTorch accepts both).

        Example: ``x.flip(0, 1)``, ``x.flip((0, 1))`` and ``x.flip(dims=(0, 1))`` are the same.
        """
        if dims is not None and positional_dims:
            raise TypeError("flip() received dims both positionally and as a keyword")
        if dims is None and not positional_dims:
            raise TypeError('flip() missing 1 required positional arguments: "dims"')
        axes = _shape_arg(positional_dims if dims is None else (dims,))
        return fnp.flip(self, axis=tuple(_wrap_dim(d, self.dim()) for d in axes))

    def roll(self: TensorT, shifts: Any, dims: Any = None) -> "TensorT":
        return fnp.roll(self, shifts, axis=dims)

    def narrow(self: TensorT, dim: builtins.int, start: builtins.int, length: builtins.int) -> "TensorT":
        d = _wrap_dim(dim, self.dim())
        start, length, n = _pyint(start), _pyint(length), self.shape[d]
        if not -n <= start <= n:
            raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
        if start < 0:
            start += n
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if start + length > n:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
        idx = (slice(None),) * d + (slice(start, start + length),)
        return self[idx]

    def select(self: TensorT, dim: builtins.int, index: builtins.int) -> "TensorT":
        d = _wrap_dim(dim, self.dim())
        return self[(slice(None),) * d + (_pyint(index),)]

    def unbind(self: TensorT, dim: builtins.int = 0) -> tuple[Any, ...]:
        """Views of the slices along ``dim``; like every op that returns several views, they refuse
        in-place changes when autograd is involved (PyTorch's rule; ``unsafe_split`` does not).

        Example::

            a, b = ft.tensor([[1., 2.], [3., 4.]]).unbind()   # tensor([1., 2.]), tensor([3., 4.])
        """
        if self.dim() == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        d = _wrap_dim(dim, self.dim())
        lead = (slice(None),) * d
        piece = _PIECES["UnbindBackward0"]
        return mark_multi_output(join_outputs(  # one node, as PyTorch's: its hooks see every piece
            tuple(record_view(self, piece, (lead + (i, Ellipsis),)) for i in range(self._value.shape[d])),
            "UnbindBackward0"))

    def split(self: TensorT, split_size: Any, dim: builtins.int = 0) -> tuple[Any, ...]:
        """Views of consecutive pieces along ``dim`` (refusing in-place changes with autograd, as
        ``unbind``).

        Example::

            ft.arange(5.).split(2)        # (tensor([0., 1.]), tensor([2., 3.]), tensor([4.]))
            ft.arange(5.).split([1, 4])   # sizes
        """
        name = "SplitWithSizesBackward0" if isinstance(split_size, (list, tuple)) else "SplitBackward0"
        d, sizes = _split_sizes(self, split_size, dim)
        lead = (slice(None),) * d
        piece = _PIECES[name]
        return mark_multi_output(join_outputs(tuple(
            record_view(self, piece, (lead + (slice(start, start + s), Ellipsis),))
            for start, s in zip(itertools.accumulate([0, *sizes]), sizes)), name))

    def unsafe_split(self: TensorT, split_size: Any, dim: builtins.int = 0) -> tuple[Any, ...]:
        """``split`` whose pieces may be modified in place (the caller vouches that is sound).

        Example::

            s1, s2 = (x * 2).unsafe_split(1)
            s1.mul_(s2)                    # allowed, and recorded
        """
        d, sizes = _split_sizes(self, split_size, dim)
        return tuple(self.narrow(d, start, s) for start, s in zip(itertools.accumulate([0, *sizes]), sizes))

    def chunk(self: TensorT, chunks: builtins.int, dim: builtins.int = 0) -> tuple[Any, ...]:
        d = _wrap_dim(dim, self.dim())
        n = self.shape[d]
        if not n:  # PyTorch: ``chunks`` empty pieces
            return multi_output_views(lambda: tuple(self.narrow(d, 0, 0) for _ in range(chunks)), "SplitBackward0")
        return self.split(-(-n // chunks), d)

    def unsafe_chunk(self: TensorT, chunks: builtins.int, dim: builtins.int = 0) -> tuple[Any, ...]:
        """``chunk`` whose pieces may be modified in place (see ``unsafe_split``)."""
        d = _wrap_dim(dim, self.dim())
        n = self.shape[d]
        return self.unsafe_split(-(-n // chunks), d) if n else (self,)

    split_with_sizes = split
    unsafe_split_with_sizes = unsafe_split

    def diagonal(self: TensorT, offset: builtins.int = 0, dim1: builtins.int = 0, dim2: builtins.int = 1) -> "TensorT":
        out = fnp.diagonal(self, offset, _wrap_dim(dim1, self.dim()), _wrap_dim(dim2, self.dim()))
        _writable_like(out._value, self._value)
        return out

    def diag(self: TensorT, diagonal: builtins.int = 0) -> "TensorT":
        return _as_tensor(fnp.diag(self, diagonal)) if self.dim() == 1 else self.diagonal(diagonal)

    def trace(self: TensorT) -> "TensorT":
        return self.diagonal().sum()

    def tril(self: TensorT, diagonal: builtins.int = 0) -> "TensorT":
        mask = namespace_of(self._value).tri(*self.shape[-2:], k=diagonal, dtype=bool)
        return fnp.where(mask, self, _zero_like_scalar(self))

    def triu(self: TensorT, diagonal: builtins.int = 0) -> "TensorT":
        mask = ~namespace_of(self._value).tri(*self.shape[-2:], k=diagonal - 1, dtype=bool)
        return fnp.where(mask, self, _zero_like_scalar(self))

    # ------------------------------------------------------------------ indexing
    def __getitem__(self: TensorT, idx: Any) -> "TensorT":
        kind = type(idx)  # (the commonest indices first: a Python int, a slice, a tuple of these, None, ...)
        if kind is int:
            return record_view(self, _INDEX["SelectBackward0"], ((idx, Ellipsis),))
        if kind is slice:
            return record_view(self, _INDEX["SliceBackward0"], ((idx, Ellipsis),))
        if kind is tuple:
            op = _basic_index_op(idx)
            if op is not None:
                return record_view(self, op, (idx if Ellipsis in idx else idx + (Ellipsis,),))
        elif idx is None:
            return record_view(self, _INDEX["UnsqueezeBackward0"], ((None, Ellipsis),))
        elif idx is Ellipsis:
            return record_view(self, _INDEX["AliasBackward0"], ((Ellipsis,),))
        idx = _to_raw_index(idx)
        tup = idx if isinstance(idx, tuple) else (idx,)
        if _is_basic(tup):
            if Ellipsis not in tup:
                tup = tup + (Ellipsis,)  # NumPy then returns a 0-d view rather than a scalar copy
            name = ("SliceBackward0" if any(isinstance(i, slice) for i in tup) else
                    "SelectBackward0" if any(isinstance(i, (_pyint, np.integer)) for i in tup) else
                    "UnsqueezeBackward0" if any(i is None for i in tup) else "AliasBackward0")
            return named(name, fnp.indexing.getitem, _indexing._getitem)(self, tup)
        return named("IndexBackward0", fnp.indexing.getitem, _indexing._getitem)(self, idx)

    def gather(self: TensorT, dim: builtins.int, index: "TensorT") -> "TensorT":
        gather = named("GatherBackward0", fnp.take_along_axis, _indexing._getitem)
        return gather(self, _raw(index), axis=_wrap_dim(dim, self.dim()))

    def scatter_add(self: TensorT, dim: builtins.int, index: "TensorT", src: "TensorT") -> "TensorT":
        """``self`` plus ``src`` summed into the positions ``index`` names along ``dim`` (PyTorch's scatter_add).

        For a 2-D tensor and ``dim=0``: ``out[index[i][j]][j] += src[i][j]``. ``index`` may be smaller than
        ``src`` (only its leading part is used); repeated indices accumulate. Differentiable in ``self``
        and ``src``. Example: ``ft.zeros(3).scatter_add(0, ft.tensor([0, 0, 2]), ft.ones(3))`` is
        ``[2., 0., 1.]``.
        """
        src = _as_tensor(src)
        idx = _scatter_index(self, dim, index, src, "scatter_add")
        d = _wrap_dim(dim, self.dim()) if self.dim() else 0
        if src.dtype != self.dtype:
            raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype, but got "
                               f"self.dtype {self.dtype} and src.dtype {src.dtype}")
        if idx.size == 0:
            return _binary(named("ScatterAddBackward0", fnp.add), self, 0 * src.sum())
        xp = namespace_of(idx)
        positions = tuple(idx if axis == d else xp.reshape(xp.arange(n), (1,) * axis + (n,) + (1,) * (idx.ndim - axis - 1))
                          for axis, n in enumerate(idx.shape))
        part = src[tuple(slice(0, n) for n in idx.shape)] if src.dim() else src
        add = named("ScatterAddBackward0", fnp.indexing.at(self)[positions].add, _indexing._index_add)
        return add(part.reshape(idx.shape))

    def index_select(self: TensorT, dim: builtins.int, index: "TensorT") -> "TensorT":
        d = _wrap_dim(dim, self.dim())
        idx = (slice(None),) * d + (_raw(index),)
        return named("IndexSelectBackward0", fnp.indexing.getitem, _indexing._getitem)(self, idx)

    def masked_select(self: TensorT, mask: "TensorT") -> "TensorT":
        m = _raw(mask)
        shape = np.broadcast_shapes(tuple(self.shape), m.shape)
        return self.expand(*shape)[namespace_of(m).broadcast_to(m, shape)]  # (a device mask stays there)

    def take(self: TensorT, index: "TensorT") -> "TensorT":
        return self.reshape(-1)[_raw(index)]

    def nonzero(self: TensorT, as_tuple: builtins.bool = False) -> Any:
        raw = self._value
        nz = namespace_of(raw).nonzero(raw)
        if as_tuple:
            return tuple(new_tensor(i.astype(np.int64)) for i in nz)
        return new_tensor(namespace_of(raw).stack(nz, axis=-1).astype(np.int64) if nz else namespace_of(raw).zeros((0, 0), np.int64))


def _scatter_index(self: TensorT, dim: Any, index: Any, src: TensorT, name: str) -> Any:
    """The raw int64 ``index`` of a scatter, checked against ``self`` and ``src`` as PyTorch checks it."""
    if not is_tensor(index):
        raise TypeError(f"{name}(): argument 'index' (position 2) must be Tensor, not {type(index).__name__}")
    idx = _raw(index)
    if idx.dtype not in (np.int32, np.int64):
        raise RuntimeError(f"scatter(): Expected dtype int32/int64 for index, got {index.dtype}")
    nd = max(self.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    if not (max(idx.ndim, 1) == nd and max(src.dim(), 1) == nd):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor"
                           if max(idx.ndim, 1) != nd else
                           "Index tensor must have the same number of dimensions as src tensor")
    if self.dim() == 0:
        idx = idx.reshape(())
    d = dim % nd
    shape, src_shape = tuple(self.shape), tuple(src.shape)
    if any(idx.shape[a] > src_shape[a] or (a != d and idx.shape[a] > shape[a]) for a in range(idx.ndim)):
        raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self {list(shape)} apart from "
                           f"dimension {d} and to be no larger size than src {list(src_shape)}")
    if idx.size and self.dim():
        xp, n = namespace_of(idx), shape[d]
        if bool(xp.any((idx < 0) | (idx >= n))):  # one flag crosses to the host, the indices only on error
            low, high = int(xp.min(idx)), int(xp.max(idx))
            raise RuntimeError(f"index {high if high >= n else low} is out of bounds for dimension {d} with size {n}")
    return idx


def _writable_like(view: Any, base: Any) -> None:
    """NumPy's diagonal is read-only by convention only; PyTorch's may be written (in place)."""
    if type(view) is np.ndarray and not view.flags.writeable and getattr(base, "flags", None) is not None \
            and base.flags.writeable:
        view.flags.writeable = True


def _split_sizes(self: Any, split_size: Any, dim: Any) -> tuple[int, list[Any]]:
    """``split``'s dimension and the sizes of its pieces, checked as PyTorch checks them."""
    if self.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, self.dim())
    n = self.shape[d]
    if isinstance(split_size, (list, tuple)):
        if builtins.sum(split_size) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension "
                f"{d}), but got split_sizes={list(split_size)}"
            )
        if any(s < 0 for s in split_size):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={list(split_size)}")
        return d, list(split_size)
    return d, [split_size] * (n // split_size) + ([n % split_size] if n % split_size else []) or [0]


def _basic_index_op(idx: tuple[Any, ...]) -> ViewOp | None:
    """The view op of a basic index of Python ints, slices, None and ``...`` (None for any other index):
    its node class as ``__getitem__``'s general way names it."""
    kinds = 0
    for i in idx:
        kind = type(i)
        if kind is slice:
            kinds |= 1
        elif kind is int:
            kinds |= 2
        elif i is None:
            kinds |= 4
        elif i is not Ellipsis:
            return None
    return _INDEX["SliceBackward0" if kinds & 1 else "SelectBackward0" if kinds & 2 else
                  "UnsqueezeBackward0" if kinds & 4 else "AliasBackward0"]


def _unsqueezed(value: Any, d: int) -> Any:
    """``value`` with a new axis of size 1 at ``d``: NumPy's expand_dims (a reshape), without its checks."""
    shape = value.shape
    return value.reshape(shape[:d] + (1,) + shape[d:])


# the view methods' recordings (view_recorder.py): the primitive, NumPy's method, PyTorch's node class
_RESHAPE = ViewOp(fnp.reshape, np.ndarray.reshape, ("ViewBackward0", "UnsafeViewBackward0"))
_TRANSPOSE = ViewOp(fnp.swapaxes, np.ndarray.swapaxes, "TransposeBackward0")
_PERMUTE = ViewOp(fnp.transpose, np.ndarray.transpose, "PermuteBackward0")
_T = ViewOp(fnp.transpose, np.ndarray.transpose, "TBackward0")
_SQUEEZE_ALIAS = {name: ViewOp(fnp.reshape, np.ndarray.reshape, name)
                  for name in ("SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2")}
_UNSQUEEZE = ViewOp(fnp.expand_dims, _unsqueezed, "UnsqueezeBackward0")
_SQUEEZE = {name: ViewOp(fnp.squeeze, np.ndarray.squeeze, name)
            for name in ("SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2")}
_INDEX = {name: ViewOp(fnp.indexing.getitem, np.ndarray.__getitem__, name, _indexing._getitem)
          for name in ("SliceBackward0", "SelectBackward0", "UnsqueezeBackward0", "AliasBackward0")}
_PIECES = {name: ViewOp(fnp.indexing.getitem, np.ndarray.__getitem__, name, _indexing._getitem)
           for name in ("SplitBackward0", "SplitWithSizesBackward0", "UnbindBackward0")}
