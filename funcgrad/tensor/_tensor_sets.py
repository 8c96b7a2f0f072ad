"""Set methods of ``Tensor``: ``unique`` (sorted distinct values or slices) and ``unique_consecutive``
(runs of equal values or slices collapsed), each with optional inverse indices and counts. Their results
are indices and values read from the data, so no gradient flows (as in PyTorch).

Example::

    ft.tensor([3, 1, 3]).unique(return_counts=True)           # (tensor([1, 3]), tensor([1, 2]))
    ft.tensor([1, 1, 2, 1]).unique_consecutive()              # tensor([1, 2, 1])
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..backend import namespace_of
from .tensor_helpers import _wrap_dim
from .tensor_class import new_tensor
from .tensor_type import TensorBase, TensorT


def _results(values: Any, inverse: Any, counts: Any, return_inverse: builtins.bool,
             return_counts: builtins.bool) -> Any:
    out: list[Any] = [new_tensor(values)]
    if return_inverse:
        out.append(new_tensor(inverse.astype(np.int64)))
    if return_counts:
        out.append(new_tensor(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


class _SetsMixin(TensorBase[TensorT]):
    __slots__ = ()

    def unique(self: TensorT, sorted: builtins.bool = True, return_inverse: builtins.bool = False,  # noqa: A002
               return_counts: builtins.bool = False, dim: builtins.int | None = None) -> Any:
        """The distinct values (sorted; with ``dim``, the distinct slices along it), optionally with the
        inverse indices (where each element or slice went) and the counts.

        Example: ``ft.tensor([[1, 2], [1, 2], [0, 5]]).unique(dim=0)`` is ``[[0, 5], [1, 2]]``.
        """
        v = self.detach()._value
        xp = namespace_of(v)
        if dim is None:
            vals, inv, cnt = xp.unique(v, return_inverse=True, return_counts=True)
            return _results(vals, xp.reshape(inv, v.shape), cnt, return_inverse, return_counts)
        d = _wrap_dim(dim, v.ndim)
        vals, inv, cnt = xp.unique(v, return_inverse=True, return_counts=True, axis=d)
        return _results(vals, xp.reshape(inv, (-1,)), cnt, return_inverse, return_counts)

    def unique_consecutive(self: TensorT, return_inverse: builtins.bool = False,
                           return_counts: builtins.bool = False, dim: builtins.int | None = None) -> Any:
        """Each run of equal consecutive values (with ``dim``: slices along it) collapsed to one, optionally
        with the inverse indices and the run lengths; computed where the data lives.

        Example: ``ft.tensor([1, 1, 2, 2, 3, 1]).unique_consecutive(return_counts=True)`` is
        ``(tensor([1, 2, 3, 1]), tensor([2, 2, 1, 1]))``.
        """
        v = self.detach()._value
        xp = namespace_of(v)
        if dim is None:
            v, d = xp.reshape(v, (-1,)), 0
        else:
            d = _wrap_dim(dim, v.ndim)
        moved = xp.moveaxis(v, d, 0)
        n = moved.shape[0]
        if n == 0:
            return _results(v, xp.zeros((0,), dtype=np.int64), xp.zeros((0,), dtype=np.int64), return_inverse,
                            return_counts)
        differs = xp.reshape(moved[1:] != moved[:-1], (n - 1, -1)).any(axis=1)
        starts = xp.concatenate([xp.ones((1,), dtype=bool), differs])
        keep = xp.nonzero(starts)[0]
        values = xp.moveaxis(moved[keep], 0, d)
        inverse = xp.cumsum(starts) - 1
        counts = xp.diff(xp.concatenate([keep, xp.asarray([n])]))
        return _results(values, inverse, counts, return_inverse, return_counts)
