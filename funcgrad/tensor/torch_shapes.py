"""The ``torch`` namespace's shape, indexing, linear-algebra and creation functions of the breadth work
(issue 29, part B): most are ``input.<name>(...)``; the rest (stacking, ``block_diag``,
``cartesian_prod``, ``combinations``, index grids, the ``*_copy`` forms, ``asarray``,
``frombuffer``, ``binomial``, ``poisson``, ...) are written here once, from recorded Tensor operations
(differentiable where PyTorch's are).

Example::

    ft.block_diag(ft.ones(2, 2), ft.tensor([[3.0]]))
    ft.cartesian_prod(ft.tensor([1, 2]), ft.tensor([3, 4]))     # [[1, 3], [1, 4], [2, 3], [2, 4]]
    ft.index_add(x, 0, ft.tensor([0, 0]), src)
"""

from __future__ import annotations

import builtins
import itertools
import math
import warnings
from typing import Any, Sequence, cast

import numpy as np

from .. import backend as _backend
from . import creation as _creation
from . import dtypes as _dt
from ._tensor_linalg import lu_unpack, removed
from .creation import Generator
from .size_device import Size
from .ops import _method_fn, cat, stack
from .tensor import Tensor
from .tensor import _as_tensor
from .tensor_helpers import named_result

__all__ = [
    "fliplr", "flipud", "rot90", "tensor_split", "hsplit", "vsplit", "dsplit", "diag_embed", "diagflat", "kron",
    "narrow_copy", "take_along_dim", "index_add", "index_copy", "index_fill", "index_put", "index_put_",
    "index_reduce", "masked_scatter", "put", "scatter", "scatter_reduce", "diagonal_scatter", "select_scatter",
    "slice_scatter", "as_strided", "as_strided_scatter", "argwhere", "nonzero_static", "det", "cholesky",
    "cholesky_inverse", "cholesky_solve", "inverse", "logdet", "slogdet", "matrix_exp", "matrix_power", "pinverse",
    "qr", "svd", "lu_solve", "vdot", "is_conj", "is_neg", "is_same_size", "is_signed", "isreal", "isposinf",
    "isneginf", "resolve_neg", "fill_", "zero_", "ravel", "unsafe_chunk", "unsafe_split", "split_with_sizes",
    "unsafe_split_with_sizes", "get_device", "addmv_", "geqrf", "orgqr", "ormqr", "detach_", "resize_as_",
    "unique_consecutive",
]
(
    fliplr, flipud, rot90, tensor_split, hsplit, vsplit, dsplit, diag_embed, diagflat, kron, narrow_copy,
    take_along_dim, index_add, index_copy, index_fill, index_put, index_put_, index_reduce, masked_scatter, put,
    scatter, scatter_reduce, diagonal_scatter, select_scatter, slice_scatter, as_strided, as_strided_scatter,
    argwhere, nonzero_static, det, cholesky, cholesky_inverse, cholesky_solve, inverse, logdet, slogdet, matrix_exp,
    matrix_power, pinverse, qr, svd, lu_solve, vdot, is_conj, is_neg, is_same_size, is_signed, isreal, isposinf,
    isneginf, resolve_neg, fill_, zero_, ravel, unsafe_chunk, unsafe_split, split_with_sizes, unsafe_split_with_sizes,
    get_device, addmv_, geqrf, orgqr, ormqr, detach_, resize_as_, unique_consecutive,
) = map(_method_fn, __all__)

# the ``*_copy`` forms: the view op's result as a new tensor (``torch.<op>_copy``)
_COPIES = ["alias", "detach", "diagonal", "expand", "permute", "select", "slice", "split", "split_with_sizes",
           "squeeze", "t", "transpose", "unbind", "unfold", "unsqueeze", "view", "view_as_real", "view_as_complex",
           "as_strided"]
__all__ += [f"{name}_copy" for name in _COPIES]
__all__ += [
    "dstack", "column_stack", "row_stack", "atleast_2d", "atleast_3d", "block_diag", "cartesian_prod",
    "combinations", "broadcast_shapes", "tril_indices", "triu_indices", "unravel_index", "asarray",
    "empty_strided", "frombuffer", "fill", "binomial", "poisson", "lu", "lu_unpack", "triangular_solve", "range",
    "solve", "lstsq", "eig", "symeig", "matrix_rank", "searchsorted", "bucketize", "empty_permuted", "from_dlpack",
    "to_dlpack",
]

solve, lstsq, eig, symeig, matrix_rank = (removed(n) for n in ("solve", "lstsq", "eig", "symeig", "matrix_rank"))


def _copy_of(name: str) -> Any:
    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        t = _as_tensor(input)
        if name == "alias":
            out: Any = t.view(t.shape)
        elif name == "slice":
            dim, start, end, step = (list(args) + [0, None, None, 1][len(args):])[:4]
            dim = kwargs.get("dim", dim)
            out = t[(builtins.slice(None),) * (dim % builtins.max(t.dim(), 1)) +
                    (builtins.slice(kwargs.get("start", start), kwargs.get("end", end), kwargs.get("step", step)),)]
        elif name in ("view_as_real", "view_as_complex"):
            from . import ops

            out = getattr(ops, name)(t)
        else:
            out = getattr(t, name)(*args, **kwargs)
        if isinstance(out, tuple):
            return tuple(o.clone() for o in out)
        return out.clone()

    fn.__name__ = fn.__qualname__ = f"{name}_copy"
    fn.__doc__ = f"``ft.{name}_copy(input, ...)``: the result of ``{name}`` as a new tensor (``torch.{name}_copy``)."
    return fn


(
    alias_copy, detach_copy, diagonal_copy, expand_copy, permute_copy, select_copy, slice_copy, split_copy,
    split_with_sizes_copy, squeeze_copy, t_copy, transpose_copy, unbind_copy, unfold_copy, unsqueeze_copy, view_copy,
    view_as_real_copy, view_as_complex_copy, as_strided_copy,
) = map(_copy_of, _COPIES)


def _tensors(tensors: Any) -> list[Tensor]:
    if isinstance(tensors, Tensor):
        raise TypeError("expected a sequence of Tensors, not a Tensor")
    return [_as_tensor(t) for t in tensors]


# ---------------------------------------------------------------------- stacking
def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least 2 dimensions (a vector as a row). Example: ``ft.atleast_2d(ft.tensor(1.))``."""
    ts = _tensors(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else _tensors(tensors)
    out = tuple(t.reshape(1, 1) if t.dim() == 0 else t.unsqueeze(0) if t.dim() == 1 else t for t in ts)
    return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else out


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least 3 dimensions (``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` -> ``(m, n, 1)``).

    Example: ``ft.atleast_3d(ft.ones(2)).shape`` is ``(1, 2, 1)``.
    """
    ts = _tensors(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else _tensors(tensors)
    out = tuple(t.reshape(1, 1, 1) if t.dim() == 0 else t.reshape(1, -1, 1) if t.dim() == 1 else
                t.unsqueeze(-1) if t.dim() == 2 else t for t in ts)
    return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else out


def dstack(tensors: Sequence[Any]) -> Tensor:
    """Concatenate along the third dimension (after ``atleast_3d``). Example: ``ft.dstack([a, b])``."""
    return cat(list(atleast_3d(*_tensors(tensors))), 2)


def column_stack(tensors: Sequence[Any]) -> Tensor:
    """Stack as columns (vectors become columns, matrices are concatenated). Example: ``ft.column_stack([a, b])``."""
    ts = [t.reshape(-1, 1) if t.dim() <= 1 else t for t in _tensors(tensors)]
    return cat(ts, 1)


def row_stack(tensors: Sequence[Any]) -> Tensor:
    """``vstack``: stack as rows. Example: ``ft.row_stack([ft.ones(2), ft.zeros(2)])``."""
    return cat(list(atleast_2d(*_tensors(tensors))), 0)


def block_diag(*tensors: Any) -> Tensor:
    """The block-diagonal matrix of the given blocks (0-d: 1x1, 1-D: one row). Differentiable in every block.

    Example: ``ft.block_diag(ft.ones(2, 2), ft.tensor(3.))`` is 3x3.
    """
    ts = _tensors(tensors)
    if not ts:
        return _creation.zeros(1, 0)
    for i, t in enumerate(ts):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
    blocks = [t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t for t in ts]
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = _dt.promote_types(dtype, b.dtype)
    cols = builtins.sum(b.shape[1] for b in blocks)
    rows = []
    left = 0
    for b in blocks:
        r, c = b.shape
        parts = [_creation.zeros(r, left, dtype=dtype, device=b.device), b.to(dtype),
                 _creation.zeros(r, cols - left - c, dtype=dtype, device=b.device)]
        rows.append(cat(parts, 1))
        left += c
    return cast(Tensor, named_result("BlockDiagBackward0", cat)(rows, 0))


def cartesian_prod(*tensors: Any) -> Tensor:
    """Every combination of one element from each 1-D tensor, one row each (a single tensor: itself).

    Example: ``ft.cartesian_prod(ft.tensor([1, 2]), ft.tensor([3, 4]))``.
    """
    ts = _tensors(tensors)
    if builtins.any(t.dim() != 1 for t in ts):
        raise RuntimeError("Expect a 1D vector, but got shape " + str([list(t.shape) for t in ts if t.dim() != 1][0]))
    if len(ts) == 1:
        return ts[0]
    from .ops import meshgrid

    grids = meshgrid(*ts, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """The length-``r`` combinations of a 1-D tensor's elements, one row each (in ``itertools`` order).

    Example: ``ft.combinations(ft.tensor([1, 2, 3]))`` is ``[[1, 2], [1, 3], [2, 3]]``.
    """
    t = _as_tensor(input)
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _creation.empty(0, dtype=t.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.asarray(list(pick(builtins.range(t.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    return t[_backend.device_constant(t._value, rows)]


def broadcast_shapes(*shapes: Any) -> Any:
    """The shape the given shapes broadcast to (PyTorch's error when they do not).

    Example: ``ft.broadcast_shapes((2, 1), (3,))`` is ``ft.Size([2, 3])``.
    """
    norm = [(s,) if isinstance(s, (builtins.int, np.integer)) else tuple(s) for s in shapes]
    try:
        return Size(np.broadcast_shapes(*norm))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: {norm}") from None


# ---------------------------------------------------------------------- index grids
def _tri_indices(row: int, col: int, offset: int, upper: bool, dtype: Any, device: Any) -> Tensor:
    r, c = np.triu_indices(row, offset, col) if upper else np.tril_indices(row, offset, col)
    return _creation.tensor(np.stack([r, c]).astype(np.int64), dtype=dtype or _dt.int64, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """The ``(2, N)`` coordinates of the lower triangle (from the ``offset`` diagonal down) of a
    ``row x col`` matrix. Example: ``ft.tril_indices(3, 3)``."""
    return _tri_indices(row, col, offset, False, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """The ``(2, N)`` coordinates of the upper triangle (from the ``offset`` diagonal up). Example:
    ``ft.triu_indices(3, 4, 1)``."""
    return _tri_indices(row, col, offset, True, dtype, device)


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """The coordinates of flat ``indices`` in an array of ``shape`` (row-major), one tensor per dimension.

    Example: ``ft.unravel_index(ft.tensor([4, 5]), (2, 3))`` is ``(tensor([1, 1]), tensor([1, 2]))``.
    """
    t = _as_tensor(indices)
    if t.is_floating_point() or t.is_complex() or t.dtype == _dt.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {t.dtype}")
    dims = (shape,) if isinstance(shape, (builtins.int, np.integer)) else tuple(shape)
    if builtins.any(d < 0 for d in dims):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(dims)))
    total = math.prod(dims)
    v = t._value
    xp = _backend.namespace_of(v)
    if v.size and builtins.bool(xp.any((v < -total) | (v >= total))):
        raise RuntimeError(f"unravel_index: an index is out of bounds for shape {tuple(dims)}")
    flat = xp.where(v < 0, v + total, v).astype(np.int64)
    out = []
    for k in builtins.range(len(dims)):
        step = math.prod(dims[k + 1:])
        out.append(Tensor._make((flat // step) % dims[k]))
    return tuple(out)


# ---------------------------------------------------------------------- sorted search
def searchsorted(sorted_sequence: Any, input: Any, *, out_int32: bool = False, right: bool = False,  # noqa: A002
                 side: str | None = None, sorter: Any = None) -> Tensor:
    """Where each value of ``input`` would be inserted into ``sorted_sequence`` (its last dimension; leading
    dimensions pair row by row) to keep it sorted: the first such place, or the last with ``right=True``
    (``side="right"``). Example: ``ft.searchsorted(ft.tensor([1, 3, 5]), ft.tensor([3, 6]))`` is ``[1, 3]``.
    """
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = _as_tensor(sorted_sequence)
    scalar = not isinstance(input, Tensor)
    vals = _as_tensor(input)
    s, v = seq._value, vals._value
    xp = _backend.namespace_of(s)
    if sorter is not None:
        s = xp.take_along_axis(s, _as_tensor(sorter)._value, axis=-1)
    if s.ndim > 1 and (v.ndim != s.ndim or v.shape[:-1] != s.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(vals.shape)}")
    side_name = "right" if right else "left"
    if s.ndim <= 1:
        pos = xp.searchsorted(s, v, side=side_name)
    else:  # row by row, as one comparison count (stays on the device)
        cmp = (s[..., None, :] <= v[..., :, None]) if right else (s[..., None, :] < v[..., :, None])
        pos = cmp.sum(axis=-1)
    out = Tensor._make(xp.asarray(pos).astype(np.int32 if out_int32 else np.int64))
    return out.reshape(()) if scalar else out


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False, right: bool = False) -> Tensor:  # noqa: A002
    """The bucket of each value of ``input`` among the sorted 1-D ``boundaries``: ``i`` with
    ``boundaries[i-1] < x <= boundaries[i]`` (``right=True``: ``boundaries[i-1] <= x < boundaries[i]``).

    Example: ``ft.bucketize(ft.tensor([3, 6]), ft.tensor([1, 3, 5]))`` is ``[1, 3]``.
    """
    b = _as_tensor(boundaries)
    if b.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.dim()})")
    return searchsorted(b, input, out_int32=out_int32, right=right)


# ---------------------------------------------------------------------- creation
def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """A tensor of ``obj`` sharing memory when it can (a tensor or a NumPy array of the same dtype and
    device) unless ``copy=True``; ``copy=False`` refuses when a copy is needed.

    Example: ``ft.asarray(np.arange(3.))`` shares the array's memory.
    """
    if isinstance(obj, Tensor):
        out = obj
        if dtype is not None or device is not None:
            out = obj.to(device=device, dtype=dtype) if device is not None else obj.to(dtype)
        shares = out is obj
    elif isinstance(obj, np.ndarray) and (dtype is None or np.dtype(_creation._np_dtype(dtype)) == obj.dtype) \
            and obj.dtype in _dt._BY_NP and device is None:
        out, shares = _creation.from_numpy(obj), True
    else:
        out, shares = _creation.tensor(obj, dtype=dtype, device=device), False
    if copy is False and not shares:
        raise ValueError("can't alias the object: a copy is needed (its dtype, device or type differ), but "
                         "copy=False")
    if copy and shares:
        out = out.clone()
    if requires_grad:
        out = out.detach().requires_grad_() if out.requires_grad is False or shares else out
    return out


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
                  **_: Any) -> Tensor:
    """An uninitialised tensor of ``size`` (laid out row-major here; ``stride`` is accepted as PyTorch's).

    Example: ``ft.empty_strided((2, 3), (3, 1))``.
    """
    if len(tuple(size)) != len(tuple(stride)):
        raise RuntimeError("mismatch in length of strides and shape")
    return _creation.empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)


def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False, **_: Any) -> Tensor:
    """An uninitialised tensor of ``size`` (row-major here; ``physical_layout``, a permutation, is checked and
    accepted). Example: ``ft.empty_permuted((2, 3), (1, 0))``."""
    if sorted(physical_layout) != list(builtins.range(len(tuple(size)))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"or physical_layout is not a permutation: {list(physical_layout)}")
    return _creation.empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing the memory of any DLPack producer (a NumPy or CuPy array, a PyTorch or JAX tensor).

    Example: ``ft.from_dlpack(np.arange(3.))``.
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    device_type = ext_tensor.__dlpack_device__()[0] if hasattr(ext_tensor, "__dlpack_device__") else 1
    if device_type == 1:  # kDLCPU
        return _creation.from_numpy(np.from_dlpack(ext_tensor))
    import cupy  # a device producer: CuPy reads it where it lives

    return Tensor._make(cupy.from_dlpack(ext_tensor))


def to_dlpack(tensor: Any) -> Any:
    """The DLPack capsule of a tensor's memory (for ``from_dlpack`` of another library).

    Example: ``torch.utils.dlpack.from_dlpack(ft.to_dlpack(t))``.
    """
    return _as_tensor(tensor).detach()._value.__dlpack__()


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over the memory of an object exposing the buffer protocol (shared, not copied).

    Example: ``ft.frombuffer(bytearray(8), dtype=ft.int32)`` is ``[0, 0]``.
    """
    np_dtype = np.dtype(_creation._np_dtype(dtype))
    nbytes = len(memoryview(buffer).cast("B"))
    if offset < 0 or offset > nbytes:
        raise ValueError(f"both buffer length ({nbytes}) and offset ({offset}) must be positive and offset must "
                         f"be less than buffer length")
    if count == -1 and (nbytes - offset) % np_dtype.itemsize:
        raise ValueError(f"buffer length ({nbytes - offset} after offset) must be a multiple of element size "
                         f"({np_dtype.itemsize})")
    if count == 0 or nbytes == offset:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    arr = np.frombuffer(buffer, dtype=np_dtype, count=count, offset=offset)
    out = _creation.from_numpy(arr)
    return out.requires_grad_() if requires_grad else out


def fill(input: Any, value: Any) -> Tensor:  # noqa: A002
    """A tensor of ``input``'s shape and dtype filled with ``value`` (differentiable in a 0-d tensor ``value``).

    Example: ``ft.fill(ft.ones(2), 3.0)`` is ``[3., 3.]``.
    """
    t = _as_tensor(input)
    name = "FillBackward1" if isinstance(value, Tensor) else "FillBackward0"
    v = value if isinstance(value, Tensor) else _creation.tensor(value, dtype=t.dtype, device=t.device)
    if v.dim():
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {v.dim()} dimensions.")
    return cast(Tensor, named_result(name, _overwrite)(t, v.to(t.dtype)))


def _overwrite(t: Tensor, v: Any) -> Tensor:
    """``v`` broadcast to ``t``'s shape, recorded as replacing ``t`` (``t`` gets a zero gradient, as in PyTorch;
    its NaNs do not reach the result)."""
    import funcgrad.numpy as fnp

    everywhere = _backend.namespace_of(t._value).ones((), dtype=bool)
    return _as_tensor(fnp.where(everywhere, fnp.broadcast_to(v, tuple(t.shape)), t))


def range(start: Any = 0, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,  # noqa: A001
          requires_grad: bool = False) -> Tensor:
    """``[start, start + step, ..., end]`` including ``end`` (deprecated in PyTorch for ``arange``), in the
    default float dtype. Example: ``ft.range(0, 3)`` is ``[0., 1., 2., 3.]``."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    n = builtins.int(math.floor((end - start) / step)) + 1
    values = start + step * np.arange(builtins.max(n, 0), dtype=np.float64)
    return _creation.tensor(values, dtype=dtype or _dt.get_default_dtype(), device=device,
                            requires_grad=requires_grad)


# ---------------------------------------------------------------------- linear algebra (legacy forms)
def lu(A: Any, pivot: bool = True, get_infos: bool = False, out: Any = None) -> Any:
    """``(LU, pivots)`` (and ``infos``): ``A.lu(...)``. Example: ``LU, pivots = ft.lu(A)``."""
    return _as_tensor(A).lu(pivot, get_infos)


def triangular_solve(b: Any, A: Any, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> Any:
    """``b.triangular_solve(A, ...)``: ``(solution, cloned_coefficient)``. Example: ``X, _ = ft.triangular_solve(b, R)``."""
    return _as_tensor(b).triangular_solve(A, upper, transpose, unitriangular)


# ---------------------------------------------------------------------- random draws
def binomial(count: Any, prob: Any, generator: Generator | None = None) -> Tensor:
    """Binomial draws: successes in ``count`` trials of probability ``prob`` (elementwise), in ``count``'s dtype.

    Example: ``ft.binomial(ft.tensor([10.]), ft.tensor([0.5]))``.
    """
    c, p = _as_tensor(count), _as_tensor(prob)
    if not c.is_floating_point():
        raise RuntimeError(f"\"binomial_cpu\" not implemented for '{_dt.SCALAR_NAMES[c.dtype]}'")
    cn = np.asarray(c.detach().cpu()._value, dtype=np.float64)
    pn = np.asarray(p.detach().cpu()._value, dtype=np.float64)
    if np.any((pn < 0) | (pn > 1)) or np.any(cn < 0):
        raise RuntimeError("binomial: expected count >= 0 and 0 <= prob <= 1")
    draws = _creation._rng(generator).binomial(cn.astype(np.int64), pn)
    return Tensor._make(np.asarray(draws).astype(c._value.dtype)).to(c.device)


def poisson(input: Any, generator: Generator | None = None) -> Tensor:  # noqa: A002
    """Poisson draws with the rates ``input`` (elementwise), in ``input``'s dtype. Example: ``ft.poisson(ft.tensor([2.]))``."""
    r = _as_tensor(input)
    rates = np.asarray(r.detach().cpu()._value, dtype=np.float64)
    if np.any(rates < 0) or np.any(np.isnan(rates)):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    draws = _creation._rng(generator).poisson(rates)
    return Tensor._make(np.asarray(draws).astype(r._value.dtype)).to(r.device)
