"""Views: which primitives' results share their argument's memory (``VIEW_PRIMITIVES``), how a
result is marked as a view of its base (``mark_view``), views returned together
(``multi_output_views``), and ``CopySlices``, the base's new history after an in-place change
through a view.

Example::

    v = x[0]                         # a view: v._base is x, v._view_fns replays it on x
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..core import Primitive, get_primitive
from ..numpy import indexing as _indexing
from .complex_views import view_as_complex_array, view_as_real_array
from .boxes import GraphBox, NumpyBox, replay_view
from .dual_trace import primal_value
from .grad_mode import state as _mode
from .nodes import Node
from .torch_names import named

__all__ = ["VIEW_PRIMITIVES", "CopySlices", "multi_output_views", "mark_multi_output", "mark_view"]


# the primitives whose result is a view of their first argument (tests/tensor/test_tensor_inplace_views.py
# checks that each result shares its argument's memory)
VIEW_PRIMITIVES = frozenset(get_primitive(fn) for fn in (
    fnp.reshape, fnp.transpose, fnp.swapaxes, fnp.moveaxis, fnp.expand_dims, fnp.squeeze, fnp.diagonal, fnp.real,
    fnp.imag, _indexing._getitem, view_as_real_array, view_as_complex_array))


def mark_view(out: GraphBox, src: GraphBox, prim: Primitive, args: list[Any], kwargs: dict[Any, Any]) -> None:
    a, o = primal_value(src._value), primal_value(out._value)  # dual tensors view their primal's memory
    ob = getattr(o, "base", None)
    if ob is None or o is a or not (ob is a or ob is getattr(a, "base", None)):
        return
    root = src._base if src._base is not None else src
    out._base = root
    out._version_counter = src._version_counter
    out._view_fns = (src._view_fns or ()) + ((prim, tuple(args[1:]), dict(kwargs)),)
    out._view_version = src._version_counter[0]
    kind = src._view_kind if src._base is not None else None  # a view of a view inherits (PyTorch)
    if kind is None and not _mode.enabled:
        kind = "inference" if _mode.inference else "no_grad"
    if kind is not None and type(out) is not NumpyBox:
        out.__dict__["_view_kind"] = kind  # (Tensors have a __dict__; GraphBox's class default is None)


def multi_output_views(make: Callable[[], tuple[Any, ...]], name: str) -> tuple[Any, ...]:
    """The views ``make()`` returns together (``split``, ``chunk``, ``unbind``, pieces indexed out of
    one tensor): their nodes are PyTorch's ``name``, and in-place changes of them are refused when
    autograd is involved (PyTorch's rule for multi-output views)."""
    return mark_multi_output(named(name, make, _indexing._getitem)())


def mark_multi_output(views: tuple[Any, ...]) -> tuple[Any, ...]:
    """``views`` (pieces of one tensor, their nodes already of their op's name) marked as views returned
    together: in-place changes of them are refused when autograd is involved."""
    for k, v in enumerate(views):
        if v._base is None:
            continue
        if v._view_kind is None:
            v._view_kind = "multi_output"
        v._multi_index = k  # "Output k of Split" in the messages (each piece has a node of its own here)
    return views


class CopySlices(Node):
    """The new history of a base after an in-place change through one of its views.

    Gradient to the old base: the incoming gradient with the view's region
    zeroed; gradient to the new values of the region: the view of the gradient.
    """

    _name = "torch::autograd::CopySlices"  # what PyTorch's name() returns
    _short = "CopySlices"

    def __init__(self, base_edge: tuple[Any, ...] | None, out_edge: tuple[Any, ...] | None, view_fns: tuple[Any, ...],
                 meta: tuple[Any, ...]):
        super().__init__((0, 1), (base_edge, out_edge))
        self.ans = ()
        self._view_fns = view_fns
        self._out_meta = (meta,)

    def apply(self, grads: list[Any], create_graph: bool) -> list[Any]:
        g = grads[0]
        out: list[Any] = []
        for i in self.argnums:  # 0: the base before the change; 1: the values written through the view
            if i == 0:
                m = _overwritten(self._out_meta[0], self._view_fns)  # made here: the graph keeps no mask
                if m.dtype.kind == "c":  # a complex base: per component (a view may be its .real or .imag)
                    out.append(fnp.real(g) * (1 - m.real) + 1j * (fnp.imag(g) * (1 - m.imag)))
                else:
                    out.append(fnp.where(m, 0, g))
            else:
                out.append(replay_view(g, self._view_fns, raw=not create_graph, cotangent=True))
        return out


def _overwritten(meta: tuple[Any, ...], view_fns: tuple[Any, ...]) -> Any:
    """Where a base of ``meta`` (shape, dtype, namespace) is overwritten through the view
    ``view_fns``: a bool mask, or for a complex base a complex one (1 in each overwritten
    component, as ``.real``/``.imag`` views overwrite one)."""
    shape, dtype, ns = meta
    complex_base = np.dtype(dtype).kind == "c"
    # a real base read as complex numbers needs a mask of its own dtype (a bool one cannot be viewed so)
    reread = not complex_base and any(prim is _AS_COMPLEX for prim, _, _ in view_fns)
    mask = ns.zeros(shape, dtype=dtype if complex_base or reread else bool)
    region = replay_view(mask, view_fns, raw=True)
    if type(region) is np.ndarray and not region.flags.writeable:
        region.flags.writeable = True  # NumPy's diagonal: read-only by convention only
    region[...] = (1 + 1j if region.dtype.kind == "c" else 1) if complex_base or reread else True
    return mask != 0 if reread else mask


_AS_COMPLEX = get_primitive(view_as_complex_array)
