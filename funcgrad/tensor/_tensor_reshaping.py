"""More shape methods of ``Tensor``: flips and rotations, ``tensor_split`` and ``hsplit``/``vsplit``/``dsplit``,
``diag_embed``/``diagflat``, ``kron``/``cross``/``inner``, ``unfold``, ``as_strided``, ``narrow_copy``,
``sum_to_size``, ``fill_diagonal_``, the in-place ``squeeze_``/``unsqueeze_``/``tril_``/``triu_``, and the
layout queries ``stride``, ``storage_offset`` and ``dim_order``.

Each is written with ``funcgrad.numpy`` on ``self`` or ``self``'s own methods, so each is recorded and
differentiable. ``unfold`` and ``as_strided`` return copies that read the same elements as PyTorch's views
(gradients agree, overlapping windows included), but writing into them does not reach ``self``; strides
count the elements of ``self`` laid out in row-major order.

Example::

    ft.arange(6.).reshape(2, 3).fliplr()           # columns reversed
    ft.arange(5.).unfold(0, 2, 1)                   # sliding windows [[0, 1], [1, 2], [2, 3], [3, 4]]
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
import itertools
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from .views import multi_output_views
from .inplace_variant import inplace_variant
from .method_args import int_list, operand, promoted, recorded_as
from .tensor_helpers import _wrap_dim
from .tensor_class import is_tensor, new_tensor
from .tensor_type import TensorBase, TensorT


def _split_sizes(n: int, sections_or_indices: Any) -> list[int]:
    """The piece sizes ``tensor_split`` cuts a dimension of size ``n`` into: ``k`` near-equal sections
    (the first ``n % k`` one longer), or the pieces between the given indices."""
    if is_tensor(sections_or_indices) and sections_or_indices.dim() == 0:
        sections_or_indices = builtins.int(sections_or_indices.item())
    if isinstance(sections_or_indices, (builtins.int, np.integer)):
        k = builtins.int(sections_or_indices)
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        return [n // k + (1 if i < n % k else 0) for i in range(k)]
    cuts = [builtins.min(builtins.max(c + n if c < 0 else c, 0), n) for c in int_list(sections_or_indices)]
    bounds = [0, *cuts, n]
    return [builtins.max(b - a, 0) for a, b in zip(bounds, bounds[1:])]


class _ReshapingMixin(TensorBase[TensorT]):
    __slots__ = ()

    # ------------------------------------------------------------------ flips and rotations
    def fliplr(self: TensorT) -> "TensorT":
        """Columns in reverse order (``flip(1)``; at least 2-D). Example: ``ft.eye(2).fliplr()``."""
        if self.dim() < 2:
            raise RuntimeError("Input must be >= 2-d.")
        return self.flip(1)

    def flipud(self: TensorT) -> "TensorT":
        """Rows in reverse order (``flip(0)``; at least 1-D). Example: ``ft.arange(3.).flipud()``."""
        if self.dim() < 1:
            raise RuntimeError("Input must be >= 1-d.")
        return self.flip(0)

    @recorded_as("Rot90Backward0")
    def rot90(self: TensorT, k: builtins.int = 1, dims: Any = (0, 1)) -> "TensorT":
        """Rotated by 90 degrees ``k`` times, from the first of ``dims`` towards the second.

        Example: ``ft.tensor([[1, 2], [3, 4]]).rot90()`` is ``[[2, 4], [1, 3]]``.
        """
        dims = int_list(dims)
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        if self.dim() < 2:
            raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.dim()}")
        d0, d1 = _wrap_dim(dims[0], self.dim()), _wrap_dim(dims[1], self.dim())
        if d0 == d1:
            raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
        k %= 4
        if k == 1:
            return self.flip(d1).transpose(d0, d1)
        if k == 2:
            return self.flip(d0, d1)
        if k == 3:
            return self.flip(d0).transpose(d0, d1)
        return self.clone()

    # ------------------------------------------------------------------ splits
    def tensor_split(self: TensorT, indices_or_sections: Any, dim: builtins.int = 0) -> tuple[Any, ...]:
        """Views of ``self`` cut along ``dim`` into ``k`` near-equal sections (an int) or at the given indices.

        Example: ``ft.arange(5.).tensor_split(2)`` is ``(tensor([0., 1., 2.]), tensor([3., 4.]))``.
        """
        if self.dim() == 0:
            raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 "
                               "dims")
        d = _wrap_dim(dim, self.dim())
        sizes = _split_sizes(self.shape[d], indices_or_sections)
        starts = itertools.accumulate([0, *sizes])
        return multi_output_views(lambda: tuple(self.narrow(d, s, n) for s, n in zip(starts, sizes)),
                                  "SplitWithSizesBackward0")

    def _split_along(self: TensorT, dim: builtins.int, sections: Any, name: str) -> Any:
        """``hsplit``/``vsplit``/``dsplit``: ``tensor_split`` whose integer sections must divide evenly."""
        if isinstance(sections, (builtins.int, np.integer)) and (sections <= 0 or self.shape[dim] % sections):
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {self.shape[dim]} is not divisible by the split_size {sections}!")
        return self.tensor_split(sections, dim)

    def hsplit(self: TensorT, sections: Any) -> Any:
        """Split along columns (dimension 1; dimension 0 of a 1-D tensor). Example: ``x.hsplit(2)``."""
        if self.dim() < 1:
            raise RuntimeError("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with "
                               "0 dimensions!")
        return self._split_along(1 if self.dim() > 1 else 0, sections, "hsplit")

    def vsplit(self: TensorT, sections: Any) -> Any:
        """Split along rows (dimension 0; at least 2-D). Example: ``x.vsplit([1])``."""
        if self.dim() < 2:
            raise RuntimeError(f"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with "
                               f"{self.dim()} dimensions!")
        return self._split_along(0, sections, "vsplit")

    def dsplit(self: TensorT, sections: Any) -> Any:
        """Split along depth (dimension 2; at least 3-D). Example: ``x.dsplit(2)``."""
        if self.dim() < 3:
            raise RuntimeError(f"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with "
                               f"{self.dim()} dimensions!")
        return self._split_along(2, sections, "dsplit")

    # ------------------------------------------------------------------ diagonals
    @recorded_as("DiagEmbedBackward0")
    def diag_embed(self: TensorT, offset: builtins.int = 0, dim1: builtins.int = -2,
                   dim2: builtins.int = -1) -> "TensorT":
        """A tensor whose diagonals (``offset``, in the planes ``dim1``/``dim2`` of the result) hold the last
        dimension of ``self``; zero elsewhere.

        Example: ``ft.tensor([1., 2.]).diag_embed()`` is ``[[1, 0], [0, 2]]``.
        """
        nd = self.dim() + 1
        d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        n = self.shape[-1] if self.dim() else 1
        m = n + builtins.abs(offset)
        xp = namespace_of(self._value)
        lead = tuple(self.shape[:-1])
        base = new_tensor(xp.zeros(lead + (m, m), dtype=self._value.dtype))
        r = xp.arange(n) + builtins.max(-offset, 0)
        c = xp.arange(n) + builtins.max(offset, 0)
        filled = fnp.indexing.at(base)[(Ellipsis, r, c)].set(self if self.dim() else self.reshape(1))
        # the two new dimensions sit last; move them to dim1 < dim2 (PyTorch orders rows before columns)
        lo, hi = builtins.min(d1, d2), builtins.max(d1, d2)
        out = fnp.moveaxis(filled, (-2, -1), (lo, hi))
        return out if d1 < d2 else out.transpose(lo, hi)

    def diagflat(self: TensorT, offset: builtins.int = 0) -> "TensorT":
        """The flattened ``self`` on the ``offset`` diagonal of a square matrix. Example: ``ft.ones(2, 1).diagflat()``."""
        return self.reshape(-1).diag_embed(offset)

    def fill_diagonal_(self: TensorT, fill_value: Any, wrap: builtins.bool = False) -> "TensorT":
        """Write ``fill_value`` on the main diagonal, in place (all dimensions equal beyond 2-D; ``wrap``
        restarts the diagonal below a tall matrix's square part every ``ncols + 1`` rows).

        Example: ``ft.zeros(3, 3).fill_diagonal_(1.0)`` is the identity.
        """
        if self.dim() < 2:
            raise RuntimeError("dimensions must larger than 1")
        shape = tuple(self.shape)
        if self.dim() > 2 and len(set(shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        if self.dim() == 2:
            rows, cols = shape
            end = rows * cols if wrap and rows > cols + 1 else builtins.min(rows, cols) * cols
            step = cols + 1
        else:
            step = builtins.sum(shape[0] ** k for k in range(self.dim()))
            end = self.numel()
        xp = namespace_of(self._value)
        positions = (xp.arange(0, end, step),)
        value = operand(self, fill_value)

        def fill(t: Any) -> Any:
            return fnp.indexing.at(t.reshape(-1))[positions].set(value.to(t.dtype)).reshape(shape)

        return self._inplace(fill)

    # ------------------------------------------------------------------ products of shapes
    def kron(self: TensorT, other: Any) -> "TensorT":
        """The Kronecker product. Example: ``ft.eye(2).kron(ft.ones(2, 2))`` is block diagonal."""
        a, b = promoted(self, operand(self, other))
        return fnp.kron(a, b)

    @recorded_as("LinalgCrossBackward0")
    def cross(self: TensorT, other: Any, dim: builtins.int | None = None) -> "TensorT":
        """The cross product of 3-vectors along ``dim`` (default: the first dimension of size 3).

        Example: ``ft.tensor([1., 0, 0]).cross(ft.tensor([0., 1, 0]))`` is ``[0, 0, 1]``.
        """
        a, b = promoted(self, operand(self, other))
        if tuple(a.shape) != tuple(b.shape):
            shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
            a, b = a.expand(*shape), b.expand(*shape)
        if dim is None:
            dim = next((i for i, n in enumerate(a.shape) if n == 3), None)
            if dim is None:
                raise RuntimeError("no dimension of size 3 in input")
        d = _wrap_dim(dim, a.dim())
        if a.shape[d] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got {a.shape[d]} and "
                               f"{b.shape[d]}")
        return fnp.cross(a, b, axis=d)

    def inner(self: TensorT, other: Any) -> "TensorT":
        """The inner product over the last dimensions (a product with a scalar). Example: ``x.inner(y)``."""
        a, b = promoted(self, operand(self, other))
        if a.dim() and b.dim() and a.shape[-1] != b.shape[-1]:
            raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                               f"{list(a.shape)} and {list(b.shape)}")
        return fnp.inner(a, b) if a.dim() and b.dim() else a * b

    # ------------------------------------------------------------------ windows and strided reads
    @recorded_as("UnfoldBackward0")
    def unfold(self: TensorT, dimension: builtins.int, size: builtins.int, step: builtins.int) -> "TensorT":
        """Every window of ``size`` elements along ``dimension``, ``step`` apart: that dimension becomes the
        window count and a last dimension of ``size`` is added (a copy of PyTorch's view).

        Example: ``ft.arange(5.).unfold(0, 2, 2)`` is ``[[0, 1], [2, 3]]``.
        """
        d = _wrap_dim(dimension, self.dim())
        n = self.shape[d] if self.dim() else 1
        if size > n:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        xp = namespace_of(self._value)
        count = (n - size) // step + 1
        windows = xp.arange(count)[:, None] * step + xp.arange(size)[None, :]
        x = self if self.dim() else self.reshape(1)
        return fnp.moveaxis(fnp.take(x, windows, axis=d), d + 1, -1)

    @recorded_as("AsStridedBackward0")
    def as_strided(self: TensorT, size: Any, stride: Any, storage_offset: builtins.int | None = None) -> "TensorT":
        """The elements a strided view of ``size``/``stride`` (in elements of ``self`` in row-major order,
        from ``storage_offset``) reads, as a copy; overlapping reads add up in the gradient.

        Example: ``ft.arange(4.).as_strided((3, 2), (1, 1))`` is ``[[0, 1], [1, 2], [2, 3]]``.
        """
        flat = self._strided_positions(size, stride, storage_offset or 0)
        return fnp.take(self.reshape(-1), flat)

    @recorded_as("NarrowCopyBackward0")
    def narrow_copy(self: TensorT, dim: builtins.int, start: builtins.int, length: builtins.int) -> "TensorT":
        """``narrow`` as a new tensor. Example: ``ft.arange(5.).narrow_copy(0, 1, 2)`` is ``[1, 2]``."""
        return self.narrow(dim, start, length).clone()

    def sum_to_size(self: TensorT, *size: Any) -> "TensorT":
        """Summed down to ``size`` (which must broadcast to ``self``'s shape): the adjoint of ``expand``.

        Example: ``ft.ones(2, 3).sum_to_size(1, 3)`` is ``[[2, 2, 2]]``.
        """
        want = int_list(size[0] if len(size) == 1 else list(size))
        shape = list(self.shape)
        lead = len(shape) - len(want)
        if lead < 0 or builtins.any(w not in (1, s) for w, s in zip(want, shape[lead:])):
            raise RuntimeError(f"size {{[{', '.join(map(str, want))}]}} is not expandable to size "
                               f"{{[{', '.join(map(str, shape))}]}}.")
        out = self.sum(tuple(range(lead))) if lead else self
        keep = tuple(i for i, (w, s) in enumerate(zip(want, shape[lead:])) if w == 1 and s != 1)
        return out.sum(keep, keepdim=True) if keep else out

    # ------------------------------------------------------------------ layout
    def stride(self: TensorT, dim: builtins.int | None = None) -> Any:
        """The step in elements between neighbours along each dimension (of the array as stored here).

        Example: ``ft.zeros(2, 3).stride()`` is ``(3, 1)``.
        """
        v = self._value
        item = v.dtype.itemsize
        strides = tuple(builtins.int(s) // item for s in getattr(v, "strides", ()) or ())
        if len(strides) != v.ndim:  # an array without strides: its row-major layout
            strides = tuple(builtins.int(np.prod(v.shape[i + 1:])) for i in range(v.ndim))
        return strides if dim is None else strides[_wrap_dim(dim, v.ndim)]

    def storage_offset(self: TensorT) -> builtins.int:
        """How many elements into its memory block this tensor starts (0 unless it is a view).

        Example: ``ft.arange(4.)[2:].storage_offset()`` is ``2``.
        """
        v = self._value
        base = getattr(v, "base", None)
        if type(v) is not np.ndarray or base is None or type(base) is not np.ndarray:
            return 0
        start = v.__array_interface__["data"][0]
        low = np.byte_bounds(base)[0] if hasattr(np, "byte_bounds") else np.lib.array_utils.byte_bounds(base)[0]
        return builtins.int(start - low) // builtins.int(v.dtype.itemsize)

    def dim_order(self: TensorT, *, ambiguity_check: Any = False) -> tuple[builtins.int, ...]:
        """The dimensions from outermost to innermost in memory (``(0, 1, ..., n-1)`` when contiguous).

        Example: ``ft.zeros(2, 3).t().dim_order()`` is ``(1, 0)``.
        """
        strides = self.stride()
        return tuple(sorted(range(self.dim()), key=lambda i: (-builtins.abs(strides[i]), i)))

    def new_empty_strided(self: TensorT, size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                          requires_grad: builtins.bool = False) -> "TensorT":
        """An uninitialised tensor of ``size`` (row-major here; ``stride`` is accepted). Example:
        ``x.new_empty_strided((2, 3), (3, 1))``."""
        return self.new_empty(tuple(int_list(size)), dtype=dtype, requires_grad=requires_grad)

    # ------------------------------------------------------------------ in place
    def squeeze_(self: TensorT, dim: Any = None) -> "TensorT":
        """In-place ``squeeze`` (of a tensor that does not require grad). Example: ``ft.zeros(1, 2).squeeze_()``."""
        self._check_meta_inplace("squeeze_()")
        return self._set_value_inplace(self.squeeze(dim)._value if dim is not None else self.squeeze()._value)

    def unsqueeze_(self: TensorT, dim: builtins.int) -> "TensorT":
        """In-place ``unsqueeze`` (of a tensor that does not require grad). Example: ``ft.zeros(2).unsqueeze_(0)``."""
        self._check_meta_inplace("unsqueeze_()")
        return self._set_value_inplace(self.unsqueeze(dim)._value)

    tril_ = inplace_variant("tril")
    triu_ = inplace_variant("triu")
