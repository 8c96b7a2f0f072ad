"""In-place operations on Tensors: the new value written into the tensor's memory, its version
counter bumped, and the graph rebased (:func:`apply_inplace`): the tensor takes the new node, a
view's base gets a ``CopySlices`` node, and nodes that saved the old value keep a copy of it.

Example::

    y = x * 1
    y.add_(1)                        # apply_inplace(y, y + 1, ...): y's grad_fn is AddBackward0 now
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from .boxes import _follow_base, edge_of, fresh_view, move_retain, replay_view
from .debug_modes import anomaly, user_stack
from .dual_trace import conform_dual, is_dual, primal_value
from .grad_mode import state as _mode
from .nodes import _out_meta, target
from .prim_node import PrimNode
from .saved_tensors import SavedTensor
from .torch_names import view_rebase_error
from .views import CopySlices

__all__ = ["apply_inplace", "check_stale_view", "rebase_view"]


def apply_inplace(t: Any, out: Any, start_seq: int) -> Any:
    """Write ``out`` (computed out of place from ``t``) into ``t``'s memory and rebase the graph.

    ``start_seq`` is the node counter before ``out`` was computed: nodes made
    since then that saved ``t``'s old value keep a private copy of it (PyTorch
    saves the original for these too), and the result saved by ``out``'s node
    now refers to ``t``.
    """
    st = _mode
    if t._inference and not st.inference:
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone "
            "to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 "
            "for more details."
        )
    root = t._base
    req = out._requires_grad or t._requires_grad or (root is not None and root._requires_grad)
    if st.enabled:
        if root is None:
            if t._node is None and t._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        elif req:
            if t._view_kind is not None:
                raise RuntimeError(view_rebase_error(t, indirect=False))
            if root._node is None and (root._requires_grad or (t._node is None and t._requires_grad)):
                raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                                   "operation.")
    v = t._value
    if not getattr(getattr(v, "flags", None), "writeable", True):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation."
        )
    # keep originals that nodes of this op saved
    if out._requires_grad and st.enabled:
        _protect_saved(out, t, start_seq)
    ov = out._value
    if is_dual(v) or is_dual(ov):  # forward AD: primal into memory, the tangent rebound
        v, ov = _dual_inplace_write(t, ov)  # the raw memory and the new primal
    if getattr(ov, "shape", ()) != v.shape:
        ov = namespace_of(v).broadcast_to(ov, v.shape)
    if namespace_of(v) is np:
        np.copyto(v, ov, casting="unsafe")
    else:
        if isinstance(ov, np.ndarray) and ov.ndim:  # CuPy refuses a host array here: upload it
            ov = namespace_of(v).asarray(ov)
        v[...] = ov
    t._vc[0] += 1
    if not st.enabled or not req:
        return t
    node, nr = out._node, out._output_nr
    if isinstance(node, PrimNode) and node._seq >= start_seq and nr < len(node.ans):
        node._materialize()
        s = node.ans[nr]  # a saved result is now t's memory (a later change of it is detected)
        if type(s) is SavedTensor and s._unpack is None:
            s._data, s._vc, s._version = v, t._vc, t._vc[0]
    if root is None:
        old = t._node, t._output_nr
        t._node, t._output_nr, t._requires_grad = node, nr, out._requires_grad
        move_retain(t, *old)
    else:
        if t._node is not None and out._requires_grad and _hooks_on_view_chain(t):
            _bypass_view_node(out, start_seq, t)  # (without such hooks, the same gradients either way)
        rebase_view(t, edge_of(out))
    return t


def check_stale_view(t: Any) -> None:
    """Before an in-place op on ``t`` computes anything: if ``t`` is a view that may not be rebased
    and its base changed since, the error is that of this change (PyTorch checks before it would
    refresh the view, whose own error names the earlier change)."""
    if t._view_kind is not None and t._base is not None and t._view_version != t._vc[0] and _mode.enabled \
            and (t._node is not None or t._base._requires_grad):
        raise RuntimeError(view_rebase_error(t, indirect=False))


def rebase_view(t: Any, out_edge: tuple[Any, ...] | None) -> None:
    """``t``, a view, was overwritten by a value whose gradient goes to ``out_edge``: its base's
    history becomes a ``CopySlices`` node, and ``t`` gets its new history at once, as a view of
    the new base (``AsStridedBackward0``, as in PyTorch). ``retain_grad()`` of both follows."""
    root = t._base
    cs = CopySlices(edge_of(root), out_edge, t._view_fns, _out_meta(root._value)[0])
    if anomaly.enabled:
        cs._stack = user_stack()
    old = root._node, root._output_nr
    root._node, root._output_nr, root._requires_grad = cs, 0, True
    move_retain(root, *old)
    _follow_base(t)


def _hooks_on_view_chain(t: Any) -> bool:
    """Whether a node between the view ``t`` and its base (one per view operation) has hooks."""
    node = t._node
    for _ in t._view_fns:
        if node is None:
            return False
        if node._prehooks or node._hooks or node._tensor_prehooks:
            return True
        edges = node._edges
        node = edges[0][0] if edges and edges[0] is not None else None
    return False


def _bypass_view_node(out: Any, start_seq: int, t: Any) -> None:
    """PyTorch's CopySlices hands the in-place op's gradient for the view straight to the base,
    so the view's old node (and the hooks registered on it) is not on that path. Re-point the
    op's own nodes (made since ``start_seq``) from the view's old node to a fresh view of the
    base's history before the change (same gradient, no hooks)."""
    old_node, old_nr = t._node, t._output_nr
    new_edge: tuple[Any, ...] | None = None
    for node in _nodes_since(out._node, start_seq):
        for k, e in enumerate(node._edges):
            if e is not None and e[0] is old_node and e[1] == old_nr:
                if new_edge is None:
                    w = fresh_view(t._base, t._view_fns)
                    new_edge = (w._node, w._output_nr)
                _repoint_edge(node, k, new_edge)
        for a in node.args or ():
            if type(a) is SavedTensor and a._edge is not None and a._edge[0] is old_node and new_edge is not None:
                a._edge = new_edge


def _repoint_edge(node: Any, k: int, edge: tuple[Any, ...]) -> None:
    """Send the gradient of ``node``'s k-th tensor input to ``edge`` (node, output_nr) instead."""
    parents = list(node.parents)
    parents[node.argnums.index(node._inputs[k])] = target(*edge)
    node.parents = parents


def _protect_saved(out: Any, t: Any, start_seq: int) -> None:
    """Nodes of the in-place op (made since ``start_seq``) that saved ``t`` as it is now keep a copy."""
    vc = t._vc
    for node in _nodes_since(out._node, start_seq):
        if isinstance(node, PrimNode):
            node._materialize()
            for a in node.args:
                if type(a) is SavedTensor and a._vc is vc and a._version == vc[0]:
                    a._detach_copy()


def _nodes_since(node: Any, start_seq: int) -> Iterator[Any]:
    """Each node made since ``start_seq`` that ``node`` reaches through such nodes, once; a node's
    edges are followed after the caller has seen it (and perhaps re-pointed them)."""
    seen = set()
    stack = [node]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or node._seq < start_seq:
            continue
        seen.add(id(node))
        yield node
        stack.extend(e[0] for e in node._edges if e is not None)


def _dual_inplace_write(t: Any, new: Any) -> tuple[Any, ...]:
    """An in-place write of the raw value ``new`` into tensor ``t`` where either is dual: ``t``'s
    tangents become ``new``'s (broadcast to ``t``'s shape and dtype); for a view, its base's tangents
    change in the viewed region. Returns ``t``'s raw memory and ``new``'s primal, for the caller to copy."""
    from ..transforms import vjp

    mem = primal_value(t._value)
    shape, dtype = mem.shape, mem.dtype
    if t._base is not None:
        root, fns = t._base, t._view_fns
        rmem = primal_value(root._value)
        ns = namespace_of(rmem)
        mask = ns.zeros(rmem.shape, dtype=bool)
        replay_view(mask, fns, raw=True)[...] = True
        bottom = ns.broadcast_to(ns.asarray(primal_value(new), dtype=dtype), shape)
        w = conform_dual(new, shape, dtype, bottom)
        # the view chain is linear: its transpose scatters the written values into a base-shaped array
        _, pull = vjp(lambda r: replay_view(r, fns, raw=False), ns.zeros(rmem.shape, dtype=rmem.dtype))
        (scattered,) = pull(w)
        root._value = conform_dual(fnp.where(mask, scattered, root._value), rmem.shape, rmem.dtype, rmem)
    t._value = conform_dual(new, shape, dtype, mem)
    return mem, primal_value(new)
