"""``ft.where``: the elements of one tensor where a condition holds, of another elsewhere (below
``tensor.py``: ``Tensor.where`` and ``logdet`` use it too).

Example::

    ft.where(x > 0, x, 0.0)
"""

from __future__ import annotations

from typing import Any

import funcgrad.numpy as fnp

from . import dtypes as _dt
from .tensor_helpers import _as_tensor, _cond, _promote, _raw, _rename, _seq_mark

__all__ = ["where"]


def where(condition: Any, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (``torch.where``)."""
    if input is None and other is None:
        return _as_tensor(condition).nonzero(as_tuple=True)
    c = _raw(condition)
    if getattr(c, "dtype", None) is not None and c.dtype.kind != "b":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dt.from_numpy_dtype(c.dtype).name}")
    a, b = _promote(input, other)
    mark = _seq_mark()
    out = fnp.where(_cond(c), a, b)
    return _rename(_as_tensor(out), "WhereBackward0", mark)
