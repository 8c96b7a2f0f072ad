"""The Tensor view methods' short way: a view of one Tensor recorded in one frame.

``reshape``/``view``/``flatten``, ``transpose``/``permute``, ``unsqueeze``, ``squeeze``, basic indexing
(``x[i]``, ``x[a:b]``, ``x[:, None]``) and the pieces of ``split``/``chunk``/``unbind`` call
:func:`record_view` with a :class:`ViewOp` (the view primitive, its node class when the result is a view
and when it is a copy, and the general call). The general call of a view method is the primitive
wrapper, ``TensorTrace``'s recording path and ``views.mark_view``: about 900 bytecodes, against ~400 for
a ``tanh``, because it reads a view's facts through the generic steps. :func:`record_view` makes the same
objects directly: the same node class, parents, arguments and saved entries (none: no view primitive's
derivative reads its input's values or its result), the same ``_base``, shared version counter,
``_view_fns`` and ``_view_kind``; ``tests/test_recording_path.py`` compares the two. Where it cannot be
sure of that (grad mode off, inference mode, an op naming the node, profiling, anomaly mode,
``fg.debug_nans``, an ``ft.func`` frame, a stale view, an array of another backend, an index or shape
NumPy refuses), it makes the general call, which records or raises as before.

Example::

    v = x.transpose(0, 1)        # TransposeBackward0, v._base is x, one version counter
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core import Primitive, get_primitive
from ..core import trace as _core_trace
from ..core.reverse import _MIN_DROP_BYTES, ArraySpec, _save_everything
from .boxes import get_accumulator
from .debug_modes import anomaly, profiling
from .grad_mode import state as _mode
from .nodes import _METAS, _next_seq, _out_meta, target
from .prim_node import _SAVED_KEYS, PrimNode, _expose_saved
from .tensor_class import _PARAM, _TENSOR_CLS
from . import tensor_trace as _trace
from .torch_names import NAMING, named, named_node_class
from .views import VIEW_PRIMITIVES

__all__ = ["ViewOp", "record_view"]

_new = object.__new__
_TensorTrace = _trace.TensorTrace


class ViewOp:
    """One view method's recording: ``fn`` (a function of funcgrad.numpy calling a view primitive of
    ``views.VIEW_PRIMITIVES``: ``named_prim``, default ``fn``'s own), ``raw(value, *rest, **kwargs)`` its
    result on a NumPy array (a view where NumPy makes one), and ``name``: PyTorch's node class, or a pair
    (the class when the result is a view, when it is a copy), as ``torch_names.named`` takes it;
    ``general`` is the call through the primitive wrapper that ``named`` makes.

    Example::

        TRANSPOSE = ViewOp(fnp.swapaxes, np.ndarray.swapaxes, "TransposeBackward0")
        record_view(x, TRANSPOSE, (0, 1))
    """

    __slots__ = ("prim", "raw", "view_cls", "copy_cls", "general")

    def __init__(self, fn: Callable[..., Any], raw: Callable[..., Any], name: str | tuple[str, str],
                 named_prim: Any = None) -> None:
        prim = named_prim if isinstance(named_prim, Primitive) else get_primitive(
            fn if named_prim is None else named_prim)
        reads = (prim.reads or {}).get(0)
        if prim not in VIEW_PRIMITIVES or prim.multiple_results or reads is None or 0 in reads or "ans" in reads:
            raise ValueError(f"ViewOp: {prim.name} is not a view primitive whose derivative reads only its "
                             "arguments after the first")
        self.prim = prim
        self.raw = raw
        view_name, copy_name = (name, name) if isinstance(name, str) else name
        self.view_cls = named_node_class(PrimNode, view_name)
        self.copy_cls = named_node_class(PrimNode, copy_name)
        self.general = named(name, fn, named_prim)


def record_view(b: Any, op: ViewOp, rest: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> Any:
    """The view ``op`` of Tensor ``b`` (``rest``, ``kwargs``: the primitive's other arguments), recorded as
    the general call records it (see the module's docstring); any case it does not cover: the general
    call."""
    st = _mode
    v = b._value
    kind = b.__class__
    if type(v) is not np.ndarray or not st.enabled or st.inference or NAMING[0] or b._inference \
            or profiling.active or anomaly.enabled or _save_everything.on or _core_trace.result_hook is not None \
            or _trace.TRACE.__class__ is not _TensorTrace \
            or b._base is not None and b._view_version != b._version_counter[0]:
        return op.general(b, *rest, **kwargs) if kwargs else op.general(b, *rest)
    if kind is not _TENSOR_CLS[0]:
        if kind is not _PARAM[0]:
            return op.general(b, *rest, **kwargs) if kwargs else op.general(b, *rest)
        kind = _TENSOR_CLS[0]  # (a Parameter's view is a Tensor)
    try:
        ans = op.raw(v, *rest, **kwargs) if kwargs else op.raw(v, *rest)
    except Exception:  # (what NumPy refuses: the general call raises PyTorch's error)
        return op.general(b, *rest, **kwargs) if kwargs else op.general(b, *rest)
    out = _new(kind)  # (GraphBox._make, inline)
    out._value = ans
    out._trace = _trace.TRACE
    out._output_nr = 0
    out._view_fns = None
    out._view_version = 0
    out._inference = False
    ob = ans.base  # (views.mark_view: a result sharing the argument's memory is its view)
    if ob is not None and ans is not v and (ob is v or ob is v.base):
        cls = op.view_cls
        root = b._base
        if root is None:
            out._base = b
            out._view_fns = ((op.prim, rest, dict(kwargs) if kwargs else {}),)
        else:
            out._base = root
            out._view_fns = (b._view_fns or ()) + ((op.prim, rest, dict(kwargs) if kwargs else {}),)
            view_kind = b._view_kind  # a view of a view inherits how its base was made (PyTorch)
            if view_kind is not None:
                out.__dict__["_view_kind"] = view_kind
        vc = out._version_counter = b._version_counter
        out._view_version = vc[0]
    else:  # a copy (reshape of a tensor whose strides do not allow a view)
        cls = op.copy_cls
        out._base = None
        out._version_counter = [0]
    if not b._requires_grad:
        out._node = None
        out._requires_grad = False
        return out
    parent = b._node  # (link)
    if parent is None:
        parent = get_accumulator(b)
    elif parent._n_outputs != 1:
        parent = target(parent, b._output_nr)
    node: Any = _new(cls)
    node.prim = op.prim
    node.parents = [parent]
    node.argnums = node._inputs = [0]
    if kwargs:
        node.kwargs = kwargs
        if not _SAVED_KEYS.issuperset(kwargs):
            _expose_saved(kwargs)
    else:
        node.kwargs = _trace.NO_KWARGS
    node.out_index = node.versions = None
    node._seq = _next_seq()
    node._released = False
    # the arguments, the one input (unread by the derivative) as its spec when big enough to matter
    node.args = [ArraySpec(v) if v.nbytes >= _MIN_DROP_BYTES else v, *rest]
    node.ans = [ArraySpec(ans) if ans.nbytes >= _MIN_DROP_BYTES else ans]
    node._saved = ()
    meta = _METAS.get(ans.shape)  # (nodes._out_meta's common case, inline)
    node._out_meta = meta if meta is not None and meta[0][1] is ans.dtype else _out_meta(ans)
    out._node = node
    out._requires_grad = True
    return out
