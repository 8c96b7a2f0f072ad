"""PyTorch's view of what a node saved (``grad_fn._saved_<name>``) where funcgrad records the
operation otherwise.

funcgrad's nodes keep their primitive's arguments: a Python number stays a number, an index or
mask stays a raw array, ``x ** 2`` is the ``square`` primitive, add/sub's ``alpha`` is folded
into the other operand. PyTorch wraps a number operand of ``mul``/``div`` in a 0-d tensor (int64
for an int, float64 for a float, bool, complex128: its "wrapped number" dtypes), always defines
``_saved_self``/``_saved_other`` on those nodes (None for the operand it did not save, since the
other one needs no gradient), names the tensor operand ``self`` even for ``2 * x``, keeps a
power's number exponent as ``_saved_exponent`` and add/sub's ``alpha`` as ``_saved_alpha``, and
returns every saved array as a tensor. :func:`torch_saved_value` gives those values; ``PrimNode``
asks it first for the nodes named in :data:`TORCH_SAVED_NODES`.

Example::

    y = x * 2
    y.grad_fn._saved_other      # tensor(2), int64, as PyTorch's
    y.grad_fn._saved_self       # None: x is not saved, 2 needs no gradient
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .saved_tensors import SavedTensor
from .tensor_class import is_tensor, new_tensor

__all__ = ["TORCH_SAVED_NODES", "TORCH_ONLY_KEYS", "torch_saved_value", "as_saved_value"]

# node name -> the saved names PyTorch defines on it (present, possibly None, on every such node)
TORCH_SAVED_NODES: dict[str, tuple[str, ...]] = {
    "MulBackward0": ("self", "other"),
    "DivBackward0": ("self", "other"),
    "PowBackward0": ("self", "exponent"),
    "AddBackward0": ("alpha",), "SubBackward0": ("alpha",), "RsubBackward1": ("alpha",),
}
# saved names no funcgrad primitive argument carries (exposed as attributes all the same)
TORCH_ONLY_KEYS = ("exponent", "alpha")

# PyTorch's dtype of a Python number wrapped in a tensor (checked against torch 2.13)
_WRAPPED_DTYPES = ((bool, np.bool_), (int, np.int64), (float, np.float64), (complex, np.complex128))


def _wrapped_number(value: Any) -> Any:
    for kind, dtype in _WRAPPED_DTYPES:
        if isinstance(value, kind):
            return new_tensor(np.asarray(value, dtype=dtype))
    return value


def as_saved_value(entry: Any) -> Any:
    """A non-tensor saved argument as PyTorch shows it: an array (an index, a mask) as a tensor
    without history; numbers and other constants as they are."""
    if isinstance(entry, np.generic) or is_tensor(entry):
        return entry
    if getattr(entry, "ndim", None) is not None and getattr(entry, "dtype", None) is not None:
        return new_tensor(entry)
    return entry


def torch_saved_value(node: Any, key: str) -> tuple[bool, Any]:
    """``(found, value)`` of PyTorch's ``node._saved_<key>`` for a node named in
    :data:`TORCH_SAVED_NODES` (``found`` False: no such attribute on PyTorch's node either)."""
    name = node._name
    if key not in TORCH_SAVED_NODES[name]:
        return False, None
    if key == "alpha":  # folded into the other operand when recorded; add/sub keep a number other than 1
        return True, node.__dict__.get("_alpha", 1)
    node._materialize()
    args = node.args
    if name == "PowBackward0":
        if key == "exponent":
            if getattr(node.prim, "name", None) == "square":
                return True, 2
            exponent = args[1] if len(args) > 1 and 1 not in node._inputs else None
            return exponent is not None, exponent  # (a tensor exponent is PowBackward1's)
        return True, _unpacked(node, node._lookup_saved(key))
    number_at = [i for i, a in enumerate(args[:2]) if i not in node._inputs and isinstance(a, (bool, int, float, complex))]
    if number_at:  # ``x * 2``, ``2 * x``, ``x / 2``: the tensor operand is ``self``, never saved here
        return True, (_wrapped_number(args[number_at[0]]) if key == "other" else None)
    return True, _unpacked(node, node._lookup_saved(key))


def _unpacked(node: Any, entry: Any) -> Any:
    if type(entry) is SavedTensor:
        return entry.unpack(node, numpy_box=False)
    return None if entry is None else as_saved_value(entry)
