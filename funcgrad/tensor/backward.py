"""The backward pass over the tensor graph: ``backward`` and ``autograd.grad``.

One call is one run of the engine's walk, ``core.reverse.backward_pass``, over the
nodes reachable from the outputs (each runs once every consumer of its outputs has
given its gradient; gradients are summed where a value fans out), with this layer's
:class:`_Visitor` doing PyTorch's work at each node (hooks, ``retain_grad``,
``.grad``). Gradients travel as raw arrays (fast path) or, with
``create_graph=True``, as recorded boxes so the pass is itself differentiable.

Complex numbers: the primitives' rules follow JAX's (linear) convention; the
gradients users see follow PyTorch's (conjugate Wirtinger). The two differ by
a conjugation at the boundary, so seeds are conjugated on the way in, and
gradients on the way out (``.grad``, ``autograd.grad``, hooks, custom
Functions); nothing changes for real dtypes.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from functools import partial
from sys import getrefcount
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from . import boxes as _boxes
from .debug_modes import anomaly, profiling
from .quiet import fp_quiet, fp_restore
from .saved_hooks import _hook_state
from ..core.reverse import DECLINE, VJPNode, Visitor, backward_pass, carry_thread_state
from .boxes import as_numpy_box, as_tensor_box, edge_of, GraphBox, NumpyBox
from .nodes import AccumulateGrad, Node, _zeros, public_edge, register_node_call, target
from .prim_node import PrimNode
from .saved_tensors import _RELEASED
from .creation import zeros_like
from .dual_trace import _local as _fwad_local
from .grad_mode import no_grad, state as _mode
from .tensor import Tensor, _grad_lock, register_backward
from .tensor_helpers import _as_tensor

__all__ = ["backward", "grad"]


def _conj(g: Any) -> Any:
    """PyTorch's convention <-> the rules' convention (complex only)."""
    if g is None:
        return None
    v = g._value if isinstance(g, GraphBox) else g
    if getattr(v, "dtype", None) is not None and v.dtype.kind == "c":
        return fnp.conj(g)
    return g


def _to_user(g: Any, create_graph: bool) -> Any:
    """An internal gradient as the Tensor a hook or Function sees (PyTorch convention)."""
    if g is None:
        return None
    g = _conj(g)
    if isinstance(g, GraphBox):
        return as_tensor_box(g)
    return Tensor._make(_boxes._as_array(g))


def _from_user(t: Any, create_graph: bool) -> Any:
    if t is None:
        return None
    if not isinstance(t, GraphBox):
        t = _as_tensor(t)
    t = _conj(t)
    if create_graph:
        return as_numpy_box(t) if isinstance(t, GraphBox) else t
    return t._value if isinstance(t, GraphBox) else t


def _match(g: Any, meta: tuple[Any, ...]) -> Any:
    """Gradients keep the dtype and shape of the value they belong to."""
    shape, dtype, _ = meta
    v = g._value if isinstance(g, GraphBox) else g
    vd = getattr(v, "dtype", None)
    if vd is None:
        v = np.asarray(v)
        vd = v.dtype
        g = v
    if vd != dtype:
        if vd.kind == "c" and dtype.kind != "c":
            g = fnp.real(g)
        g = fnp.astype(g, dtype)
    if getattr(g, "shape", None) is not None and (g._value.shape if isinstance(g, GraphBox) else g.shape) != shape:
        g = fnp.broadcast_to(g, shape)
    return g


def _run_hooks(hooks: dict[Any, Any] | None, g: Any, create_graph: bool) -> Any:
    if not hooks:
        return g
    t = _to_user(g, create_graph)
    for fn in list(hooks.values()):
        r = fn(t)
        if r is not None:
            if not isinstance(r, Tensor):
                raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")  # PyTorch's words
            checks = (("size", r.shape == t.shape, f": expected {list(t.shape)} but got {list(r.shape)}"),
                      ("type", r.dtype == t.dtype, f" (was {t.type()} got {r.type()})"),
                      ("device", r.device == t.device, f" (was {t.device} got {r.device})"))
            for what, same, detail in checks:
                if not same:
                    raise RuntimeError(f"hook '{getattr(fn, '__name__', 'hook')}' has changed the {what} of "
                                       f"value{detail}")
            t = r
    return _from_user(t, create_graph)


def _nan_check(node: Node, outs: list[Any]) -> None:
    for k, g in enumerate(outs):
        if g is None:
            continue
        v = g._value if isinstance(g, GraphBox) else g
        if namespace_of(v).isnan(v).any():
            _anomaly_report(node)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {k}th output.")


def _anomaly_report(node: Node) -> None:
    """Warn where ``node``, whose backward failed in anomaly mode, was made (PyTorch's "Error
    detected in ..." warnings, and "No forward pass information" for a node made outside anomaly
    mode); the caller then raises the error unchanged, as PyTorch does."""
    stack = node._stack
    if not stack:
        _anomaly_warn(f"Error detected in {node.name()}. No forward pass information available. Enable detect "
                      "anomaly during forward pass for more information.")
        return
    trace = "".join(stack)
    _anomaly_warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{trace}")
    parent = getattr(stack, "parent", None)
    while parent is not None and parent._stack:  # double backward: where each creator came from
        induced = (f"Previous calculation was induced by {parent.name()}. Traceback of forward call that "
                   f"induced the previous calculation:\n{''.join(parent._stack)}")
        _anomaly_warn(f"\n\n{induced}")
        parent = getattr(parent._stack, "parent", None)


def _anomaly_warn(message: str) -> None:
    """Warn; a warning escalated to an error (``warnings.simplefilter("error")``) is printed to
    stderr instead, so that the error being reported is the one raised, as in PyTorch."""
    try:
        warnings.warn(message, UserWarning, stacklevel=4)
    except Warning as escalated:
        print(f"{type(escalated).__name__}: {escalated}", file=sys.stderr)


class BackwardPass:
    """One running backward pass (``backward`` or ``autograd.grad`` call), as :func:`current_pass` gives it.

    Callbacks queued on it run in order once its walk has finished (PyTorch's
    ``Variable._execution_engine.queue_callback``; a callback may queue more). The object
    itself tells passes apart (PyTorch's graph task id): keep per-pass state keyed by it.
    """

    __slots__ = ("callbacks", "__weakref__")

    def __init__(self) -> None:
        self.callbacks: list[Callable[[], Any]] = []

    def queue_callback(self, callback: Callable[[], Any]) -> None:
        self.callbacks.append(callback)


_passes = threading.local()  # .stack: the passes running in this thread, innermost last


def current_pass() -> BackwardPass | None:
    """The backward pass now running in this thread (the innermost, when a hook runs backward again),
    or None outside one. Used by ``ft.autograd.graph.register_multi_grad_hook``.

    Example::

        from funcgrad.tensor.backward import current_pass

        x.register_hook(lambda g: current_pass().queue_callback(lambda: print("pass done")))
    """
    stack = getattr(_passes, "stack", None)
    return stack[-1] if stack else None


def run_backward(roots: list[Any], keep_graph: bool, create_graph: bool, captures: list[Any] | None = None,
                 accumulate: bool = True) -> dict[Any, Any]:
    """Propagate ``roots`` [(edge, internal grad)] through the graph with ``core.reverse.backward_pass``.

    With ``captures`` [edges], gradients arriving at those edges are returned
    ({edge: grad}) and only nodes leading to them run; leaves are then not
    accumulated into unless ``accumulate``. NumPy's floating-point warnings are
    silenced, forward-AD tangents paused, and grad mode is ``create_graph``.
    """
    visitor = _Visitor(keep_graph, create_graph, captures, accumulate)
    seeds = [(target(node, nr), g) for (node, nr), g in roots]
    token = fp_quiet()
    bp = BackwardPass()
    stack = _passes.__dict__.setdefault("stack", [])
    stack.append(bp)
    try:
        prev_mode = _mode.enabled
        _mode.enabled = create_graph
        try:
            _fwad_local.paused += 1  # (dual_trace.paused, inline) gradients of primals only: no tangents in backward
            try:
                backward_pass(seeds, visitor=visitor, targets=visitor.walk_to or None)
            finally:
                _fwad_local.paused -= 1
        finally:
            _mode.enabled = prev_mode
        for callback in bp.callbacks:  # then the callbacks queued on the pass, in order (and those they queue)
            callback()
    finally:
        stack.pop()
        fp_restore(token)
    return {public_edge(t): g for t, g in visitor.captured.items()}


# a backward pass nested deep in another (reentrant) goes on on a fresh thread with this layer's modes
carry_thread_state(_mode, _hook_state, _fwad_local, _passes)


class _Probe(Visitor):
    """Measures the reference count a visitor sees for a cotangent that only the walk holds."""

    refs = 0

    def visit(self, node: Any, g: Any, live: bool) -> Any:
        if node.parents:
            return [np.zeros(1), None]  # x gets a fresh array; the last one distributed is not it
        if node is self.x:
            self.refs = getrefcount(g)
        return None

    def __init__(self) -> None:
        self.x, y = VJPNode(None, (), (), None, None, None), VJPNode(None, (), (), None, None, None)
        backward_pass([(VJPNode(None, (self.x, y), (0, 1), None, None, None), np.ones(1))], visitor=self)


_SOLE_REFS_AT_VISIT = _Probe().refs


class _Visitor(Visitor):
    """The Tensor layer's work at each node of the one backward walk: tensor hooks,
    ``retain_grad``, capture of ``inputs=``, node pre/post hooks, running the node
    (anomaly checks, profiler events), ``.grad`` accumulation at leaves, and freeing
    saved values unless ``retain_graph``."""

    def __init__(self, keep_graph: bool, create_graph: bool, captures: list[Any] | None, accumulate: bool):
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.accumulate = accumulate or captures is None
        self.capture_at = {target(node, nr) for node, nr in captures} if captures else set()
        self.captured: dict[Any, Any] = {}
        # a captured output of a multi-output node with tensor hooks: the walk reaches that node too, so
        # that its other outputs' hooks run (with None where no gradient reached them), as in PyTorch
        self.walk_to: set[Any] = self.capture_at | {
            t.parents[0] for t in self.capture_at
            if t.out_index is not None and getattr(t.parents[0], "_tensor_prehooks", None)}
        self.prof = profiling.active
        # nothing but the rules to run at plain nodes: no graph to record, no capture, no checks
        self.plain = not create_graph and not self.capture_at and not self.prof and not anomaly.enabled
        if self.plain:  # (functions, not bound methods: no reference cycle through the visitor)
            self.step = _step if not keep_graph else partial(_step, release=False)

    def visit(self, node: Any, g: Any, live: bool) -> Any:
        if self.plain and g is not None:
            if node._short_step:  # a primitive's node of one output, no hooks, nothing to check
                cts = _run_plain(node, g, not self.keep_graph)
                return cts if cts is not None else _conformed(node, node.vjp(g, g, False, not self.keep_graph))
            if isinstance(node, PrimNode) and node._n_outputs != 1 \
                    and not (node._tensor_prehooks or node._prehooks or node._hooks):
                cts = _run_plain_many(node, g, not self.keep_graph)
                if cts is not None:
                    return cts
            elif type(node) is AccumulateGrad:
                # a leaf with no hooks and no .grad yet, a real host gradient of its dtype and shape: .grad is
                # the gradient as it is when only this pass holds it (no copy), laid out as the leaf (_leaf's
                # steps, in fewer bytecodes); else _leaf
                var = node._variable()
                if var is not None and var._grad is None and type(g) is np.ndarray and not (
                        var._hooks or var._post_hooks or node._prehooks or node._hooks):
                    value = var._value
                    if type(value) is np.ndarray and g.dtype is value.dtype and g.shape == value.shape \
                            and g.dtype.kind != "c":
                        steal = getrefcount(g) <= _SOLE_REFS_AT_VISIT and g.base is None and g.flags.writeable
                        with _grad_lock:
                            if var._grad is None:
                                var._grad = Tensor._make(_fresh_grad(g, value, steal))
                                return None
        out_index = node.out_index
        if out_index is not None:  # one output of a node with several
            if node.parents[0]._tensor_prehooks and node not in self.capture_at:
                return g  # its tensor hooks run with the node's, in output order (PyTorch)
            return self._arrive(node.parents[0], out_index, node, g)
        if type(node) is AccumulateGrad:
            # a gradient only this pass holds may become the leaf's .grad as it is (no copy)
            owned = type(g) is np.ndarray and getrefcount(g) <= _SOLE_REFS_AT_VISIT
            self._leaf(node, g, owned)
            return None
        n_out = node._n_outputs
        if n_out == 1:
            buf = [self._arrive(node, 0, node, g)]
        else:
            buf = g if g is not None else [None] * n_out
            hooks = node._tensor_prehooks
            if hooks:  # in output order; those of the outputs no gradient reached run with None (PyTorch)
                buf = list(buf)
                for k in range(n_out):
                    if buf[k] is not None:
                        tape_node = target(node, k)
                        if tape_node not in self.capture_at:  # (a captured one ran its hooks on arrival)
                            buf[k] = self._arrive(node, k, tape_node, buf[k])
                    elif hooks.get(k):
                        for fn in list(hooks[k].values()):
                            fn(None)
        if not live:  # a captured non-leaf with nothing needed behind it
            if node._prehooks and self.accumulate and any(b is not None for b in buf):
                self._node_hooks(node._prehooks, buf)
            return None
        return self._run(node, buf)

    def _arrive(self, node: Any, nr: int, tape_node: Any, g: Any) -> Any:
        """A gradient arriving for output ``nr`` of ``node``: tensor hooks, retain_grad, capture."""
        if g is None:
            return None
        hooks = node._tensor_prehooks
        if hooks:
            g = _run_hooks(hooks.get(nr), g, self.create_graph)
        retain = node._retain
        if retain:
            ref = retain.get(nr)
            t = ref() if ref is not None else None
            if t is not None:
                _retain(t, g, self.create_graph)
        if tape_node in self.capture_at:
            self.captured[tape_node] = g
        return g

    def _node_hooks(self, hooks: dict[Any, Any], grads: list[Any], outputs: list[Any] | None = None) -> list[Any]:
        """Run a node's pre hooks ``fn(grad_outputs)`` or, given the ``outputs`` gradients, its post
        hooks ``fn(grad_inputs, grad_outputs)``; a hook's non-None result replaces ``grads``."""
        cg = self.create_graph
        user = tuple(_to_user(g, cg) for g in grads)
        extra = () if outputs is None else (tuple(_to_user(g, cg) for g in outputs),)
        for fn in list(hooks.values()):
            r = fn(user, *extra)
            if r is not None:  # PyTorch's checks: a tuple of as many gradients
                if not isinstance(r, tuple):
                    raise TypeError(f"expected tuple, but hook returned '{type(r).__name__}'")
                if len(r) != len(user):
                    raise RuntimeError(f"hook '{getattr(fn, '__name__', 'hook')}' has returned an incorrect number "
                                       f"of values (got {len(r)}, but expected {len(user)})")
                user = r
        return [_from_user(g, cg) for g in user]

    def _leaf(self, node: AccumulateGrad, g: Any, owned: bool) -> None:
        var = node.variable
        if var is None or g is None:  # the leaf is gone: nobody can read its gradient
            return
        cg = self.create_graph
        if var._hooks:
            g = _run_hooks(var._hooks, g, cg)
            owned = False  # a hook may keep what it was given
        if node in self.capture_at:
            self.captured[node] = g
            owned = False
            if not self.accumulate:
                return  # autograd.grad: hooks on the leaf's tensor run, its node does not
        if node._prehooks:
            g = self._node_hooks(node._prehooks, [g])[0]
            owned = False
        if g is not None:
            _accumulate(var, g, cg, owned and not node._hooks)  # (post hooks see the gradient too)
        if node._hooks:
            self._node_hooks(node._hooks, [], [g])

    def _run(self, node: Any, buf: list[Any]) -> Any:
        cg = self.create_graph
        if node._prehooks:
            buf = self._node_hooks(node._prehooks, buf)
        if not node._runs_on_undefined and all(g is None for g in buf):
            outs: list[Any] = [None] * len(node.parents)
        else:
            prof = self.prof
            t0 = time.perf_counter() if prof else 0.0
            anomaly_prev = anomaly.running
            if anomaly.enabled:
                anomaly.running = node
            try:
                outs = node.apply(buf, cg)
                if len(outs) != len(node.parents):  # one per input (None where no edge): keep those with one
                    outs = [outs[node._inputs.index(i)] for i in node.argnums]
            except Exception:  # noqa: BLE001 - re-raised after the anomaly report
                if anomaly.enabled:
                    _anomaly_report(node)
                raise
            finally:
                anomaly.running = anomaly_prev
            if prof:
                from .profiler import record_event

                record_event(node.name(), time.perf_counter() - t0)
            if anomaly.enabled and anomaly.check_nan:
                _nan_check(node, outs)
        if node._hooks:
            outs = self._node_hooks(node._hooks, outs, buf)
        if not self.keep_graph:
            node.release()
        return _conformed(node, outs)


def _step(node: Any, g: Any, release: bool = True) -> Any:
    """The walk's short way for a node of one parent (see ``Visitor.step``): a primitive's
    node of one output, no hooks, its saved values as they were saved (else ``visit``, whose
    ``node.vjp`` raises the SavedTensors' errors); the gradient in the dtype and shape of
    its input, the saved values dropped unless ``retain_graph``."""
    if not node._short_step or node._released:
        return DECLINE
    saved = node._saved
    for _, _, vc, version, check in saved:
        if vc[0] != version or (check is not None and not check._requires_grad):
            return DECLINE
    prim = node.prim
    if prim.vjp_all is not None:
        return DECLINE
    args = node.args
    pos = node.argnums[0]
    rule = prim.vjps.get(pos)
    if rule is None:
        raise prim.missing_rule("VJP", pos)
    kwargs = node.kwargs
    if len(args) == 1 and not kwargs:  # (a direct call costs a third of one that unpacks)
        ct = rule(g, node.ans[0], args[0])
    else:
        ct = rule(g, node.ans[0], *args, **kwargs)
    if ct is not None:  # (_conformed, inline; _match takes an equal dtype that is another object)
        p = node.parents[0]
        meta = p._out_meta[0] if p.out_index is None else p.parents[0]._out_meta[p.out_index]
        if type(ct) is not np.ndarray or ct.dtype is not meta[1] or ct.shape != meta[0]:
            ct = _match(ct, meta)
    if release:
        _release(node, saved, args)
    return ct


def _release(node: Any, saved: Any, args: list[Any]) -> None:
    """``PrimNode.release`` for the short ways, which already hold the node's saved entries and arguments:
    the node is marked released and the values it saved are dropped."""
    node._released = True
    if saved:
        node._saved = _RELEASED
        for k, _, _, _, _ in saved:
            if k >= 0:
                args[k] = None
            else:
                node.ans[~k] = None


def _run_plain_many(node: Any, g: list[Any], release: bool) -> list[Any] | None:
    """:func:`_run_plain` for a primitive's node of several outputs and no hooks (``g``: one gradient per
    output, None where none arrived: zeros for the per-argument rules, as ``PrimNode.apply``); None when
    no gradient arrived (the general path passes None on) or the node needs ``node.vjp``'s checks."""
    g_all = tuple(g)
    for gk in g_all:
        if gk is not None:
            break
    else:
        return None
    if node.prim.vjp_all is not None:
        return _run_plain(node, g_all, release, g_all)
    filled = tuple(gk if gk is not None else _zeros(m) for gk, m in zip(g_all, node._out_meta))
    return _run_plain(node, filled, release, g_all)


def _run_plain(node: Any, g: Any, release: bool, g_all: Any = None) -> list[Any] | None:
    """``visit``'s short way for a primitive's node of one output and no hooks (``node._short_step``), in a
    plain pass: ``node.vjp`` (the rules on the values as saved), ``_conformed`` and, with ``release``,
    ``node.release`` in one frame; None when the node needs ``node.vjp``'s checks (released, a saved value
    changed in place or detached since), whose errors it raises. (``g_all``: a node of several outputs,
    from :func:`_run_plain_many`.)"""
    saved = node._saved
    if node._released or saved is None:  # (None: SavedTensors to unpack)
        return None
    for _, _, vc, version, check in saved:  # (saved_tensors.intact, inline)
        if vc[0] != version or (check is not None and not check._requires_grad):
            return None
    args, kwargs = node.args, node.kwargs
    if g_all is None:
        ans = node.ans[0]
        g_all = g
    else:
        ans = tuple(node.ans)
    cts: list[Any] = node.run_rules(g, g_all, ans, args, kwargs)
    if release:
        _release(node, saved, args)
    k = 0
    for p in node.parents:  # (_conformed, inline)
        ct = cts[k]
        if ct is not None:
            meta = p._out_meta[0] if p.out_index is None else p.parents[0]._out_meta[p.out_index]
            if type(ct) is not np.ndarray or ct.dtype is not meta[1] or ct.shape != meta[0]:
                cts[k] = _match(ct, meta)
        k += 1
    return cts


def _conformed(node: Any, cts: list[Any]) -> list[Any]:
    """Each gradient in the dtype and shape of the value of ``node.parents`` it belongs to."""
    for k, p in enumerate(node.parents):
        ct = cts[k]
        if ct is not None:
            meta = p._out_meta[0] if p.out_index is None else p.parents[0]._out_meta[p.out_index]
            if type(ct) is not np.ndarray or ct.shape != meta[0] or ct.dtype != meta[1]:
                cts[k] = _match(ct, meta)
    return cts


def _retain(t: Tensor, g: Any, create_graph: bool) -> None:
    gu = _to_user(g, create_graph)
    with _grad_lock:
        if t._grad is None:
            t._grad = gu if create_graph else Tensor._make(_copy(gu._value))
        else:
            t._grad = t._grad + gu


def _copy(v: Any) -> Any:
    return namespace_of(v).array(v, copy=True)


def _fresh_grad(g: Any, value: Any, steal: bool) -> Any:
    """A leaf's first ``.grad`` from gradient ``g`` (``steal``: ``g`` itself may be kept), laid out as
    PyTorch's gradient layout contract says: with the strides of the leaf's ``value`` where that is
    dense (a column-major weight gets a column-major gradient), in C order otherwise."""
    if g.strides == value.strides:
        return g if steal else _copy(g)
    xp = namespace_of(value)
    if value.flags.c_contiguous or value.flags.f_contiguous:
        out = xp.empty_like(value)  # (order "K": value's layout)
        out[...] = g
        return out
    return xp.ascontiguousarray(g) if steal else xp.array(g, order="C", copy=True)


def _accumulate(var: Tensor, g: Any, create_graph: bool, owned: bool = False) -> None:
    """Add a gradient into a leaf's ``.grad``: in place normally, out of place with create_graph.
    An ``owned`` gradient (no one else holds it) that owns its memory becomes ``.grad`` as it is."""
    value = var._value
    if not create_graph and type(g) is np.ndarray and type(value) is np.ndarray and g.dtype == value.dtype \
            and g.shape == value.shape and g.dtype.kind != "c":
        # the common case: a real host array of the leaf's dtype and shape (the steps below, without wrapping it)
        with _grad_lock:
            cur = var._grad
            if cur is None:
                var._grad = Tensor._make(_fresh_grad(g, value, owned and g.base is None and g.flags.writeable))
            elif cur._requires_grad:
                var._grad = cur + Tensor._make(g)
            else:
                cv = cur._value
                if type(cv) is np.ndarray and cv.flags.writeable:
                    np.add(cv, g, out=cv)
                else:
                    cur._value = cv + g
                cur._version_counter[0] += 1
        if var._post_hooks:
            for fn in list(var._post_hooks.values()):
                fn(var)
        return
    g0 = g
    g = _match(g, (value.shape, value.dtype, None))
    gu = _to_user(g, create_graph)
    with _grad_lock:
        cur = var._grad
        if cur is None:
            if create_graph:
                var._grad = gu
            else:
                v = gu._value
                var._grad = Tensor._make(_fresh_grad(v, value, owned and v is g0 and v.base is None and v.flags.writeable))
        elif create_graph or cur._requires_grad:
            var._grad = cur + gu
        else:
            cv = cur._value
            if namespace_of(cv) is np and cv.flags.writeable:
                np.add(cv, gu._value, out=cv)
            else:
                cur._value = cv + gu._value
            cur._version_counter[0] += 1
    if var._post_hooks:
        for fn in list(var._post_hooks.values()):
            fn(var)


# --------------------------------------------------------------------------
# the user-facing entry points


def _as_list(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _input_edges(ins: list[Any], fn: str) -> list[Any]:
    """The graph edges of the tensors to differentiate with respect to (``inputs`` of ``fn()``)."""
    for t in ins:
        if not isinstance(t, Tensor):
            raise TypeError(f"inputs to {fn}() must be Tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    return [edge_of(t) for t in ins]


def _make_seeds(outputs: list[Any], grad_outputs: list[Any], create_graph: bool) -> list[Any]:
    if len(grad_outputs) != len(outputs):
        raise RuntimeError("grad can be implicitly created only for scalar outputs" if not grad_outputs else
                           f"Mismatch in number of gradients: got {len(grad_outputs)} but expected {len(outputs)}")
    roots = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, Tensor):
            raise TypeError(f"outputs must be Tensors, got {type(out).__name__} at position {i}")
        if not out.requires_grad:  # (the property: a view whose base changed in place is refreshed)
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if out._value.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._value.dtype.kind != "f":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
            g_int = namespace_of(out._value).ones(out._value.shape, dtype=out._value.dtype)
        else:
            gt = _as_tensor(g)
            if tuple(gt.shape) != tuple(out.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {gt.shape.torch_repr()} and output[{i}] "
                    f"has a shape of {out.shape.torch_repr()}."
                )
            if gt.is_complex() != out.is_complex():
                raise RuntimeError(
                    f"For complex Tensors, both grad_output and output are required to have the same dtype. "
                    f"Mismatch in dtype: grad_output[{i}] has a dtype of {gt.dtype} and output[{i}] has a dtype "
                    f"of {out.dtype}."
                )
            if gt.dtype != out.dtype:
                gt = gt.to(out.dtype)
            g_int = _from_user(gt, create_graph)
        if create_graph and not isinstance(g_int, GraphBox):
            g_int = NumpyBox._make(g_int)
        roots.append((edge_of(out), g_int))
    return roots


# PyTorch's warning, given once per process as there (_CREATE_GRAPH_WARNED)
_CREATE_GRAPH_CYCLE = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
    "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid "
    "this. If you have to use this function, make sure to reset the .grad fields of your parameters to None "
    "after use to break the cycle and avoid the leak."
)
_CREATE_GRAPH_WARNED: list[bool] = []


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
             grad_variables: Any = None, inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves (``torch.autograd.backward``).

    ``grad_tensors`` are needed for non-scalar outputs; the graph's buffers
    are freed afterwards unless ``retain_graph``; ``create_graph=True`` records
    the backward pass (higher derivatives; ``.grad`` then holds a graph and
    is replaced rather than updated in place). ``inputs`` limits the leaves
    (or non-leaves) that are accumulated into.

    Example::

        y = (x ** 2).sum()
        ft.autograd.backward(y)        # same as y.backward()
    """
    if grad_variables is not None:
        grad_tensors = grad_variables
    outputs = _as_list(tensors)
    grads = _as_list(grad_tensors) if grad_tensors is not None else [None] * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _make_seeds(outputs, grads, create_graph)
    if create_graph and not _CREATE_GRAPH_WARNED:
        _CREATE_GRAPH_WARNED.append(True)
        warnings.warn(_CREATE_GRAPH_CYCLE, UserWarning, stacklevel=2)
    if inputs is not None:
        ins = _as_list(inputs)
        if not ins:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        edges = _input_edges(ins, "backward")
        captured = run_backward(roots, retain_graph, create_graph, captures=edges, accumulate=True)
        for t, e in zip(ins, edges):
            g = captured.get(e)
            # a non-leaf input gets its gradient in .grad, once: retain_grad() has put it there already
            if g is not None and not isinstance(e[0], AccumulateGrad) and not getattr(t, "_retains_grad", False):
                _accumulate(t, g, create_graph)
        return
    run_backward(roots, retain_graph, create_graph)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple[Any, ...]:
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned rather than accumulated (``torch.autograd.grad``).

    Example::

        x = ft.tensor([1., 2.], requires_grad=True)
        (g,) = ft.autograd.grad((x ** 3).sum(), x, create_graph=True)   # 3 x^2, differentiable again
        (h,) = ft.autograd.grad(g.sum(), x)                              # 6 x
    """
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    gouts = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outs)
    if retain_graph is None:
        retain_graph = create_graph
    edges = _input_edges(ins, "grad")
    if is_grads_batched:
        return _batched_grad(outs, ins, gouts, retain_graph, create_graph, allow_unused, materialize_grads)
    roots = _make_seeds(outs, gouts, create_graph)
    captured = run_backward(roots, retain_graph, create_graph, captures=edges, accumulate=False)
    result: list[Any] = []
    for i, (t, e) in enumerate(zip(ins, edges)):
        g = captured.get(e)
        if g is None and not allow_unused:
            raise RuntimeError(
                f"The differentiated Tensor at index {i} appears to not have been used in the graph. Set "
                "allow_unused=True if this is the desired behavior."
            )
        if g is None:
            # materialized zeros are differentiable again under create_graph, as PyTorch's
            result.append(zeros_like(t).requires_grad_(create_graph) if materialize_grads else None)
        else:
            gu = _to_user(_match(g, (t._value.shape, t._value.dtype, None)), create_graph)
            result.append(gu if create_graph else Tensor._make(gu._value))
    return tuple(result)


def _batched_grad(outs: list[Any], ins: list[Any], gouts: list[Any], retain_graph: bool, create_graph: bool,
                  allow_unused: bool, materialize: bool) -> tuple[Any, ...]:
    from .ops import stack

    sizes = [g.shape[0] for g in gouts if g is not None]
    if not sizes:
        raise RuntimeError("is_grads_batched=True requires grad_outputs with a leading batch dimension")
    n = sizes[-1]
    rows = [grad(outs, ins, [g[b] if g is not None else None for g in gouts],
                 retain_graph=True if b < n - 1 else retain_graph, create_graph=create_graph,
                 allow_unused=allow_unused, materialize_grads=materialize) for b in range(n)]
    per = [[res[k] for res in rows] for k in range(len(ins))]
    return tuple(None if any(r is None for r in rs) else stack(rs) for rs in per)


def call_node(node: Node, grads: tuple[Any, ...]) -> Any:
    """``grad_fn(*grads)``: run one node on given output gradients (no accumulation)."""
    internal = [_from_user(g, False) for g in grads]
    with no_grad():
        outs = node.apply(internal, False)
    res = tuple(_to_user(g, False) if g is not None else None for g in outs)
    return res[0] if len(res) == 1 else res


register_node_call(call_node)
register_backward(backward)
